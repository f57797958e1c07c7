//! Counterfactual twins end to end: the rewrites on the bundled corpus, `compare --json`
//! against two separate `analyze` / `trace --surprisal` runs, `rewrite`, and
//! `reproduce --rewrite` (tables, resume) on the tiny fixtures.

use std::path::{Path, PathBuf};

use codescope::syntax::rewrite::{self, Rewrite};
use codescope::syntax::{self, Language};
use serde_json::Value;

fn fixture(name: &str) -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
        .display()
        .to_string()
}

/// Run the binary in a sandbox (no network, private caches); `(ok, stdout, stderr)`.
fn run(tmp: &Path, args: &[&str]) -> (bool, String, String) {
    let out = crate::cli_sources::sandboxed(tmp)
        .env("HF_HUB_OFFLINE", "1")
        .args(args)
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn json(tmp: &Path, args: &[&str]) -> Value {
    let (ok, out, err) = run(tmp, args);
    assert!(ok, "{args:?}: {err}");
    serde_json::from_str(&out).unwrap()
}

const SNIPPET: &str = "def scale(values, factor=2):\n    total = 0\n    for v in values:\n        total += v * factor\n    return total / len(values)\n";

#[test]
fn bundled_corpus_twins_keep_shape_and_data_flow() {
    let mut snippets = codescope::probe::bundled::snippets(None);
    for dir in ["assets/samples/python", "assets/samples/java"] {
        let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(dir);
        for e in std::fs::read_dir(p).unwrap() {
            let path = e.unwrap().path();
            let lang = Language::from_path(&path).unwrap();
            snippets.push(codescope::corpus::Snippet {
                origin: path.display().to_string(),
                language: lang,
                code: std::fs::read_to_string(&path).unwrap(),
                code_tokens: None,
            });
        }
    }
    assert!(snippets.len() > 300);
    for rw in [Rewrite::Neutral, Rewrite::Shuffle { seed: 3 }] {
        let mut renamed = 0;
        for s in &snippets {
            let a = syntax::parse(&s.code, s.language).unwrap();
            match rewrite::rename(&a, rw) {
                Ok(t) => renamed += t.changed.iter().filter(|c| **c).count(),
                Err(e) => panic!("{} {}: {e}", rw.name(), s.origin),
            }
        }
        assert!(renamed > 1500, "{}: {renamed} tokens renamed", rw.name());
    }
}

/// Code-token bits from a `trace --surprisal --json`: the sum (f32, in subword order)
/// of the bits of the subwords overlapping each token's span, as the pipeline defines it.
fn token_bits(trace: &Value, tokens: &Value) -> Vec<Option<f32>> {
    let subs = trace["tokens"].as_array().unwrap();
    let bits = trace["surprisal"].as_array().unwrap();
    tokens
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            let (s, e) = (t["start"].as_u64().unwrap(), t["end"].as_u64().unwrap());
            let mut acc: Option<f32> = None;
            let mut any = false;
            for (k, sw) in subs.iter().enumerate() {
                if sw["special"].as_bool().unwrap() {
                    continue;
                }
                let (a, b) = (sw["start"].as_u64().unwrap(), sw["end"].as_u64().unwrap());
                if a < e && s < b {
                    let x = bits[k].as_f64().map(|x| x as f32);
                    acc = if any {
                        acc.zip(x).map(|(p, q)| p + q)
                    } else {
                        x
                    };
                    any = true;
                }
            }
            if any {
                acc
            } else {
                None
            }
        })
        .collect()
}

#[test]
fn compare_json_agrees_with_separate_analyze_and_trace_runs() {
    let root = tempfile::tempdir().unwrap();
    let tmp = root.path();
    let a_path = tmp.join("a.py");
    std::fs::write(&a_path, SNIPPET).unwrap();
    let a = a_path.to_str().unwrap();
    let model = fixture("tiny_llama");
    let c = json(tmp, &["compare", "--model", &model, a, "--json"]);
    assert_eq!(c["rewrite"], "rename:neutral");
    assert_eq!(c["renamed"]["scale"], "f1");
    assert_eq!(c["renamed"]["values"], "p1");
    let b_text = c["b"]["text"].as_str().unwrap();
    assert_eq!(
        b_text,
        "def f1(p1, p2=2):\n    v1 = 0\n    for v2 in p1:\n        v1 += v2 * p2\n    return v1 / len(p1)\n"
    );
    let b_path = tmp.join("b.py");
    std::fs::write(&b_path, b_text).unwrap();
    let b = b_path.to_str().unwrap();
    let an_a = json(tmp, &["analyze", "--model", &model, a, "--json"]);
    let an_b = json(tmp, &["analyze", "--model", &model, b, "--json"]);
    for (side, an) in [("a", &an_a), ("b", &an_b)] {
        assert_eq!(c[side]["tokens"], an["tokens"]);
        assert_eq!(c[side]["analysed_tokens"], an["analysed_tokens"]);
        assert_eq!(
            c["category_attention"][side], an["category_attention"],
            "{side}"
        );
        for (g, rel) in an["relations"].as_object().unwrap() {
            assert_eq!(
                c["relations"][g][format!("f1_{side}")],
                rel["f1"],
                "{g} {side}"
            );
            assert_eq!(c["relations"][g][format!("edges_{side}")], rel["edges"]);
        }
    }
    // Shares are the coarse category matrices' syn->id and id->syn cells.
    let sh = &an_a["category_attention"]["coarse_share"][1][2];
    assert_eq!(c["shares"]["a"]["syn_to_id"][1][2], sh["syn->id"]);
    assert_eq!(c["shares"]["a"]["id_to_syn"][1][2], sh["id->syn"]);
    // Surprisal: exactly the code-token sums of two `trace --surprisal` runs.
    let tr_a = json(
        tmp,
        &["trace", "--model", &model, "--surprisal", "--json", a],
    );
    let tr_b = json(
        tmp,
        &["trace", "--model", &model, "--surprisal", "--json", b],
    );
    let bits_a = token_bits(&tr_a, &c["a"]["tokens"]);
    let bits_b = token_bits(&tr_b, &c["b"]["tokens"]);
    let as_f32 = |v: &Value| -> Vec<Option<f32>> {
        v.as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_f64().map(|x| x as f32))
            .collect()
    };
    let s = &c["surprisal"];
    assert_eq!(as_f32(&s["a"]), bits_a);
    assert_eq!(as_f32(&s["b"]), bits_b);
    // The rename sensitivity is the mean over the listed unchanged pairs.
    let unchanged = s["unchanged"].as_array().unwrap();
    assert!(!unchanged.is_empty());
    let mean = |bits: &[Option<f32>], k: usize| {
        unchanged
            .iter()
            .map(|p| bits[p[k].as_u64().unwrap() as usize].unwrap() as f64)
            .sum::<f64>()
            / unchanged.len() as f64
    };
    let (ua, ub) = (mean(&bits_a, 0), mean(&bits_b, 1));
    assert!((s["unchanged_bits_a"].as_f64().unwrap() - ua).abs() < 1e-9);
    assert!((s["unchanged_bits_b"].as_f64().unwrap() - ub).abs() < 1e-9);
    assert!((s["rename_sensitivity"].as_f64().unwrap() - (ub - ua)).abs() < 1e-9);
    // Every unchanged pair has the same text on both sides; renamed ones do not.
    for p in unchanged {
        let (i, j) = (
            p[0].as_u64().unwrap() as usize,
            p[1].as_u64().unwrap() as usize,
        );
        assert_eq!(c["a"]["tokens"][i]["text"], c["b"]["tokens"][j]["text"]);
    }
    for p in c["changed"].as_array().unwrap() {
        let (i, j) = (
            p[0].as_u64().unwrap() as usize,
            p[1].as_u64().unwrap() as usize,
        );
        assert_ne!(c["a"]["tokens"][i]["text"], c["b"]["tokens"][j]["text"]);
    }
    // Attention shift: [layer][head] in [0, 1], and not all zero for a real rename.
    let shift: Vec<f64> = c["attention_shift"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|r| r.as_array().unwrap().iter().map(|x| x.as_f64().unwrap()))
        .collect();
    assert_eq!(shift.len(), 2 * 4);
    assert!(shift.iter().all(|x| (0.0..=1.0).contains(x)));
    assert!(shift.iter().any(|x| *x > 0.0));

    // A twin compared with itself: nothing moved, nothing changed.
    let same = json(tmp, &["compare", "--model", &model, a, a, "--json"]);
    assert_eq!(same["rewrite"].as_str().unwrap(), format!("twin:{a}"));
    let shift = same["attention_shift"].to_string();
    assert!(
        same["attention_shift"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|r| r.as_array().unwrap())
            .all(|x| x.as_f64().unwrap() == 0.0),
        "{shift}"
    );
    assert_eq!(same["surprisal"]["rename_sensitivity"].as_f64(), Some(0.0));
}

#[test]
fn compare_user_twin_summary_and_csv_on_an_encoder() {
    let root = tempfile::tempdir().unwrap();
    let tmp = root.path();
    let (a, b) = (tmp.join("a.py"), tmp.join("b.py"));
    std::fs::write(&a, SNIPPET).unwrap();
    // A hand edit: one rename and one inserted statement.
    std::fs::write(
        &b,
        SNIPPET
            .replace("total", "acc")
            .replace("    return", "    acc = acc + 0\n    return"),
    )
    .unwrap();
    let (a, b) = (a.to_str().unwrap(), b.to_str().unwrap());
    let model = fixture("tiny_roberta");
    let c = json(tmp, &["compare", "--model", &model, a, b, "--json"]);
    assert!(c.get("surprisal").is_none(), "an encoder has no surprisal");
    let al = c["alignment"].as_array().unwrap();
    let n_a = c["a"]["tokens"].as_array().unwrap().len();
    let n_b = c["b"]["tokens"].as_array().unwrap().len();
    assert_eq!(al.len(), n_a, "every token of A has a partner");
    assert_eq!(n_b - n_a, 5, "acc = acc + 0");
    assert_eq!(c["changed"].as_array().unwrap().len(), 3, "three `total`s");
    let (ok, out, err) = run(tmp, &["compare", "--model", &model, a, b]);
    assert!(ok, "{err}");
    assert!(out.contains("heads whose attention moved most"), "{out}");
    assert!(out.contains("ast_motif F1 at t = 0.05"), "{out}");
    let (ok, out, _) = run(tmp, &["compare", "--model", &model, a, "--csv"]);
    assert!(ok);
    assert!(out.starts_with("table,key,layer,head,metric,value\n"));
    assert!(out.contains("relations,dfg,1,1,f1_diff,"));
    assert!(out.contains("attention_shift,tv,2,4,mean_tv,"));
    // A trained probe on both sides: a twin equal to the original agrees everywhere.
    let same = json(
        tmp,
        &[
            "compare", "--model", &model, a, a, "--probe", "category", "--json",
        ],
    );
    let layers = same["probe"]["layers"].as_array().unwrap();
    assert!(!layers.is_empty());
    for l in layers {
        assert_eq!(l["agreement"], 1.0, "{l}");
        assert_eq!(l["labels"].as_array().unwrap().len(), n_a);
    }
    let (ok, _, err) = run(tmp, &["compare", "--model", &model, a, "--probe", "dfg"]);
    assert!(!ok && err.contains("single tokens"), "{err}");
    // Bad input: one clear line, no panic.
    let (ok, _, err) = run(
        tmp,
        &["compare", "--model", &model, a, "--rewrite", "rename:wild"],
    );
    assert!(!ok && err.contains("rename:wild"), "{err}");
    // A twin that does not parse is compared on what aligns, with a notice.
    let broken = tmp.join("broken.py");
    std::fs::write(&broken, SNIPPET.replace("):", ")")).unwrap();
    let (ok, _, err) = run(
        tmp,
        &["compare", "--model", &model, a, broken.to_str().unwrap()],
    );
    assert!(ok && err.contains("notice: the twin has"), "{err}");
}

#[test]
fn rewrite_command_prints_the_twin_and_checks_a_corpus() {
    let root = tempfile::tempdir().unwrap();
    let tmp = root.path();
    let a = tmp.join("a.py");
    std::fs::write(&a, SNIPPET).unwrap();
    let a = a.to_str().unwrap();
    let (ok, out, err) = run(tmp, &["rewrite", a]);
    assert!(ok, "{err}");
    assert!(out.starts_with("def f1(p1, p2=2):"), "{out}");
    let v = json(
        tmp,
        &["rewrite", a, "--json", "--rewrite", "rename:shuffle"],
    );
    assert_eq!(v["rewrite"], "rename:shuffle");
    assert_eq!(v["renamed"]["values"], "factor");
    let (ok, out, err) = run(tmp, &["rewrite", "--data", "bundled", "--lang", "java"]);
    assert!(ok, "{err}");
    assert!(out.contains("kept: 1"), "{out}");
    assert!(out.contains("(100.0%)"), "{out}");
    let (ok, _, err) = run(tmp, &["rewrite"]);
    assert!(!ok && err.contains("<FILE>"), "{err}");
}

#[test]
fn reproduce_rewrite_writes_pair_tables_and_resumes() {
    let root = tempfile::tempdir().unwrap();
    let tmp = root.path();
    let corpus = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("assets/samples/python");
    let corpus = corpus.to_str().unwrap();
    let out = tmp.join("out");
    let out_s = out.to_str().unwrap();
    let model = fixture("tiny_llama");
    let args = [
        "reproduce",
        "--model",
        &model,
        "--data",
        corpus,
        "--out",
        out_s,
        "--rewrite",
        "rename:neutral",
        "--limit",
        "6",
    ];
    let (ok, printed, err) = run(tmp, &args);
    assert!(ok, "{err}");
    assert!(
        printed.contains("rename:neutral twins: 6 pairs scored"),
        "{printed}"
    );
    assert!(printed.contains("rename sensitivity"), "{printed}");
    let layers = std::fs::read_to_string(out.join("twins_layers.csv")).unwrap();
    let rows: Vec<&str> = layers.lines().skip(1).collect();
    assert_eq!(rows.len(), codescope::analysis::Graph::ALL.len() * 2);
    for r in &rows {
        let f: Vec<f64> = r
            .split(',')
            .skip(3)
            .filter_map(|x| x.parse().ok())
            .collect();
        // f1_a, head_b, f1_b, diff, ci_low, ci_high
        assert!((f[3] - (f[2] - f[0])).abs() < 1e-5, "{r}");
        assert!(f[4] <= f[5], "{r}");
    }
    let per = std::fs::read_to_string(out.join("twins.csv")).unwrap();
    assert_eq!(per.lines().count(), 1 + 6);
    let summary: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("twins_summary.json")).unwrap())
            .unwrap();
    assert_eq!(summary["pairs_scored"], 6);
    assert_eq!(summary["rename_sensitivity"]["snippets"], 6);
    // A second run resumes from the finished checkpoint: same tables.
    let (ok, again, err) = run(tmp, &args);
    assert!(ok, "{err}");
    assert_eq!(
        std::fs::read_to_string(out.join("twins_layers.csv")).unwrap(),
        layers
    );
    assert!(again.contains("6 pairs scored"), "{again}");
    // Two shards merged give the single run's pair tables, byte for byte.
    let mut dirs = Vec::new();
    for k in ["1/2", "2/2"] {
        let d = tmp.join(format!("shard{}", &k[..1]));
        let ds = d.to_str().unwrap().to_string();
        let mut a: Vec<&str> = args.to_vec();
        a[6] = &ds;
        a.extend(["--shard", k]);
        let (ok, _, err) = run(tmp, &a);
        assert!(ok, "{err}");
        dirs.push(ds);
    }
    let merged = tmp.join("merged");
    let (ok, printed, err) = run(
        tmp,
        &[
            "merge",
            &dirs[0],
            &dirs[1],
            "--out",
            merged.to_str().unwrap(),
        ],
    );
    assert!(ok, "{err}");
    assert!(printed.contains("6 pairs scored"), "{printed}");
    for f in ["twins_layers.csv", "twins.csv", "twins.jsonl"] {
        assert_eq!(
            std::fs::read_to_string(merged.join(f)).unwrap(),
            std::fs::read_to_string(out.join(f)).unwrap(),
            "{f}"
        );
    }
    // Another rewrite into the same directory is refused.
    let mut other = args.to_vec();
    other[8] = "rename:shuffle";
    let (ok, _, err) = run(tmp, &other);
    assert!(!ok && err.contains("twins"), "{err}");
}
