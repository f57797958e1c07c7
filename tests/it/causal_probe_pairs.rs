//! `knockout FILE --probe PAIRTASK` (distance, siblings, dfg, ...): a pair probe trained as
//! `codescope probe --task PAIRTASK` trains it, read on the snippet's labelled token pairs
//! with and without the knockout and under the matched control.
//! - its predictions are those of the same probe (trained again here, in-process) applied
//!   to the pair features built here from the hidden states of the model's own traced
//!   passes: unmodified through `analysis::hidden::hidden_states`, knocked out through a
//!   trace with the blocked subword pairs built here from the tokenizer's alignment (both
//!   tokens' knocked states in the knocked pair's features);
//! - an edge set empty on the snippet gives exactly the unmodified accuracy;
//! - its training is `probe --task PAIRTASK --json`'s (the same test accuracy);
//! - a corpus run averages what the one-file command reads, its shards merge into the
//!   one-process tables, and shards of another task or pair combination are refused;
//! - a tree probe, a bad task, pair features with a token task, and a stack that cannot
//!   run the probe are one-line errors.

use codescope::analysis;
use codescope::model::{self, ForwardOptions, Intervention, Knockout, LoadedModel};
use codescope::probe::{self, PairFeatures, Task};
use codescope::syntax::{self, Coarse, Graph, Language};
use serde_json::Value;

use crate::cli_sources::{fails, fixture, ok, Env};

/// Keywords, no identifier: `not-id-id` blocks every pair of code tokens, `id-id` none.
const KEYWORDS: &str = "if True:\n    pass\nelif 1 < 2:\n    assert not False\nelse:\n    raise\n";
/// Identifiers with data flow (the `dfg` task's edges).
const FLOW: &str = "def area(w, h):\n    total = w * h\n    if total > 3:\n        total = total - w\n    return total\n";
const LIMIT: usize = 10;

/// `knockout --json` on `file` with the probe of `task` at layer 1 on the bundled corpus's
/// first `LIMIT` snippets, `extra` after it.
fn knockout(env: &Env, file: &std::path::Path, edges: &str, task: &str, extra: &[&str]) -> Value {
    let o = env
        .cmd()
        .args([
            "--model",
            &fixture("tiny_bart"),
            "knockout",
            "--edges",
            edges,
        ])
        .args(["--control", "3", "--probe", task, "--probe-layer", "1"])
        .args(["--probe-limit", &LIMIT.to_string(), "--json"])
        .args(extra)
        .arg(file)
        .output()
        .unwrap();
    serde_json::from_str(&ok(&o)).unwrap()
}

/// The probe the binary trains (bundled corpus, first `LIMIT` snippets, layer 1).
fn train(
    m: &LoadedModel,
    task: Task,
    pf: PairFeatures,
) -> std::sync::Arc<probe::train::Classifier> {
    let mut snippets = probe::bundled::snippets(None);
    snippets.truncate(LIMIT);
    let spec = probe::RunSpec {
        tasks: vec![task],
        layers: Some(vec![1]),
        pair_features: pf,
        ..probe::RunSpec::new(m, &snippets, "bundled probe corpus".into())
    };
    let r = probe::run(&spec, &mut |_| {}).unwrap();
    r.probes[0].classifier.clone()
}

/// Per scored pair (code-token indices): gold label and the probe's prediction on the
/// pair features of `h` at layer 1, combined here by hand.
type Reads = Vec<((usize, usize), usize, usize)>;

fn predictions(
    clf: &probe::train::Classifier,
    task: Task,
    pf: PairFeatures,
    syn: &syntax::Syntax,
    h: &analysis::hidden::SnippetHidden,
) -> Reads {
    // Every pair the task labels on the snippet (no cap), the draws from the task's
    // stream of a first snippet under seed 0 (METHODS 4b).
    let labels = probe::dataset::label_snippet_with(
        task,
        syn,
        &h.tokens,
        0,
        usize::MAX,
        Graph::Dfg,
        &mut probe::dataset::task_rng(task, 0, 0),
    );
    let dim = h.layers[1].len() / h.tokens.len();
    let v = |k: usize| &h.layers[1][k * dim..(k + 1) * dim];
    labels
        .into_iter()
        .map(|e| {
            let b = e.b.unwrap();
            let x: Vec<f32> = match pf {
                PairFeatures::Diff => v(e.a).iter().zip(v(b)).map(|(x, y)| x - y).collect(),
                PairFeatures::Concat => [v(e.a), v(b)].concat(),
            };
            (
                (h.tokens[e.a], h.tokens[b]),
                e.label,
                clf.predict(&x).unwrap(),
            )
        })
        .collect()
}

/// The knockout rows of every subword pair of two different code tokens `(q, k)` with
/// `pick(q, k)`, specials aside (encoders: every direction).
fn rows(
    m: &LoadedModel,
    code: &str,
    syn: &syntax::Syntax,
    pick: &dyn Fn(usize, usize) -> bool,
) -> Vec<Vec<u32>> {
    let enc = m.encode(code, m.info.window).unwrap();
    let al = analysis::align_subwords(&enc.tokens, &syn.tokens);
    let subs = &al.token_to_subwords;
    let mut rows = vec![Vec::new(); enc.ids.len()];
    for (q, sq) in subs.iter().enumerate() {
        for (k, sk) in subs.iter().enumerate() {
            if q == k || !pick(q, k) {
                continue;
            }
            for &i in sq {
                for &j in sk {
                    if i != j && !enc.tokens[i].special && !enc.tokens[j].special {
                        rows[i].push(j as u32);
                    }
                }
            }
        }
    }
    for r in &mut rows {
        r.sort_unstable();
        r.dedup();
    }
    rows
}

/// Checks the binary's `v` against the in-process probe on the unmodified and the
/// knocked-out traces of `code` (the knockout `rows`).
fn check_against_traces(v: &Value, code: &str, task: Task, pf: PairFeatures, rows: Vec<Vec<u32>>) {
    let m = LoadedModel::load(&model::source::resolve(&fixture("tiny_bart")).unwrap()).unwrap();
    let clf = train(&m, task, pf);
    let syn = syntax::parse(code, Language::Python).unwrap();
    let h0 = analysis::hidden::hidden_states(&m, &syn).unwrap();
    let base = predictions(&clf, task, pf, &syn, &h0);
    assert_eq!(
        rows.iter().map(Vec::len).sum::<usize>() as u64,
        v["blocked"]["subword_pairs"].as_u64().unwrap()
    );
    let iv = Intervention {
        knockout: Some(Knockout {
            layers: vec![true; m.info.layers],
            heads: vec![true; m.info.heads],
            rows,
        }),
        ablate: Vec::new(),
    };
    let discard = |_: usize, _: Vec<f32>| Ok(());
    let t = m
        .trace(
            code,
            &ForwardOptions {
                hidden: true,
                on_attention: Some(&discard),
                intervention: Some(&iv),
                ..Default::default()
            },
        )
        .unwrap();
    let h1 = analysis::hidden::token_hidden(&t, &syn.tokens).unwrap();
    // The knockout changes the hidden states the pairs are read from.
    let moved = h0.layers[1]
        .iter()
        .zip(&h1.layers[1])
        .map(|(a, b)| (a - b).abs())
        .fold(0f32, f32::max);
    assert!(
        moved > 1e-4,
        "the knockout left layer 1 unchanged ({moved})"
    );
    let knocked = predictions(&clf, task, pf, &syn, &h1);
    let p = &v["probe"];
    assert_eq!(p["task"], task.name());
    assert_eq!(p["pair_features"], pf.name());
    let classes = task.classes();
    let pairs = p["pairs"].as_array().unwrap();
    assert!(!pairs.is_empty(), "{p}");
    assert_eq!(pairs.len(), base.len());
    for ((pair, (ab, g, b)), (ab2, g2, k)) in pairs.iter().zip(&base).zip(&knocked) {
        assert_eq!((ab, g), (ab2, g2));
        assert_eq!(pair["index"], serde_json::json!([ab.0, ab.1]), "{pair}");
        assert_eq!(pair["probe_gold"], classes[*g].as_str(), "{pair}");
        assert_eq!(pair["probe_predicted"], classes[*b].as_str(), "{pair}");
        assert_eq!(
            pair["probe_predicted_knocked"],
            classes[*k].as_str(),
            "{pair}"
        );
    }
    // The accuracies are the predictions' hit rates, overall and per gold class.
    let rows = p["classes"].as_array().unwrap();
    assert_eq!(rows.len(), classes.len() + 1);
    assert_eq!(rows[0]["class"], "all");
    for (r, row) in rows.iter().enumerate() {
        let of = |reads: &Reads| {
            let hits: Vec<bool> = reads
                .iter()
                .filter(|x| r == 0 || x.1 == r - 1)
                .map(|x| x.1 == x.2)
                .collect();
            (hits.len(), hits.iter().filter(|&&h| h).count())
        };
        let ((n, hb), (_, hk)) = (of(&base), of(&knocked));
        assert_eq!(row["examples"].as_u64(), Some(n as u64), "{row}");
        if n == 0 {
            assert!(row["accuracy"].is_null(), "{row}");
            continue;
        }
        let close =
            |x: &Value, want: usize| (x.as_f64().unwrap() - want as f64 / n as f64).abs() < 1e-6;
        assert!(close(&row["accuracy"], hb), "{row}");
        assert!(close(&row["accuracy_knocked"], hk), "{row}");
    }
    // The token rows carry no per-token probe fields for a pair task.
    assert!(v["tokens"][0].get("probe_gold").is_none());
}

#[test]
fn a_pair_probe_under_a_knockout_is_the_probe_on_the_traced_pairs() {
    let env = Env::new();
    let f = env.root.join("k.py");
    std::fs::write(&f, KEYWORDS).unwrap();
    // Every pair of code tokens blocked, read by the siblings probe (h_a - h_b).
    let v = knockout(&env, &f, "not-id-id", "siblings", &[]);
    let mut shape = v.clone();
    shape.as_object_mut().unwrap().remove("model");
    let missing = crate::json_convention::undocumented(&shape, "`knockout --json`:");
    assert!(
        missing.is_empty(),
        "pair-probe fields not in the README: {missing:?}"
    );
    let m = LoadedModel::load(&model::source::resolve(&fixture("tiny_bart")).unwrap()).unwrap();
    let syn = syntax::parse(KEYWORDS, Language::Python).unwrap();
    assert!(syn.tokens.iter().all(|t| t.coarse != Coarse::Identifier));
    let all = rows(&m, KEYWORDS, &syn, &|_, _| true);
    check_against_traces(
        &v,
        KEYWORDS,
        Task::Siblings,
        PairFeatures::Diff,
        all.clone(),
    );
    // Every pair blocked: no pair left for a control draw.
    assert!(v["probe"]["classes"][0]["control"].is_null());
    // The distance probe on [h_a; h_b].
    let v = knockout(
        &env,
        &f,
        "not-id-id",
        "distance",
        &["--probe-pair-features", "concat"],
    );
    check_against_traces(&v, KEYWORDS, Task::Distance, PairFeatures::Concat, all);

    // The dfg probe with syn-id knocked out (syntactic queries, identifier keys), the
    // pairs built here from the token classes.
    let g = env.root.join("f.py");
    std::fs::write(&g, FLOW).unwrap();
    let v = knockout(&env, &g, "syn-id", "dfg", &[]);
    let syn = syntax::parse(FLOW, Language::Python).unwrap();
    let t = &syn.tokens;
    let syn_id = rows(&m, FLOW, &syn, &|q, k| {
        t[q].coarse == Coarse::Syntactic && t[k].coarse == Coarse::Identifier
    });
    check_against_traces(&v, FLOW, Task::Dfg, PairFeatures::Diff, syn_id);
    let ctl = &v["probe"]["classes"][0]["control"];
    assert!(
        ctl["lo"].as_f64().unwrap() <= ctl["hi"].as_f64().unwrap(),
        "{ctl}"
    );

    // An empty edge set: the knocked accuracy is the unmodified one, exactly.
    let v = knockout(&env, &f, "id-id", "siblings", &[]);
    assert_eq!(v["blocked"]["token_pairs"], 0);
    for row in v["probe"]["classes"].as_array().unwrap() {
        assert_eq!(row["accuracy"], row["accuracy_knocked"], "{row}");
    }
    let pairs = v["probe"]["pairs"].as_array().unwrap();
    assert!(!pairs.is_empty());
    for p in pairs {
        assert_eq!(p["probe_predicted_knocked"], p["probe_predicted"], "{p}");
    }

    // CSV: the token rows, then one row per pair, `a:b`; the text names the combination.
    let o = env
        .cmd()
        .args([
            "--model",
            &fixture("tiny_bart"),
            "knockout",
            "--edges",
            "id-id",
        ])
        .args([
            "--control",
            "1",
            "--probe",
            "siblings",
            "--probe-layer",
            "1",
        ])
        .args(["--probe-limit", "10", "--csv"])
        .arg(&f)
        .output()
        .unwrap();
    let csv = ok(&o);
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(
        lines[0],
        "index,text,category,coarse,start,end,bits,bits_knocked,delta,probe_gold,probe_predicted,probe_predicted_knocked"
    );
    assert!(
        lines[1].starts_with("0,if,keyword,") && lines[1].ends_with(",,,"),
        "{csv}"
    );
    let pair_rows: Vec<&&str> = lines
        .iter()
        .filter(|l| l.split(',').next().is_some_and(|i| i.contains(':')))
        .collect();
    assert_eq!(pair_rows.len(), pairs.len(), "{csv}");
    for (l, p) in pair_rows.iter().zip(pairs) {
        let want = format!(
            "{}:{},,,,,,,,,{},{},{}",
            p["index"][0],
            p["index"][1],
            p["probe_gold"].as_str().unwrap(),
            p["probe_predicted"].as_str().unwrap(),
            p["probe_predicted_knocked"].as_str().unwrap()
        );
        assert_eq!(**l, want);
    }
    let o = env
        .cmd()
        .args([
            "--model",
            &fixture("tiny_bart"),
            "knockout",
            "--edges",
            "id-id",
        ])
        .args([
            "--control",
            "1",
            "--probe",
            "siblings",
            "--probe-layer",
            "1",
        ])
        .args(["--probe-limit", "10"])
        .arg(&f)
        .output()
        .unwrap();
    let text = ok(&o);
    assert!(
        text.contains("probe siblings (diff pair features) at layer 1 (trained on 10 snippets"),
        "{text}"
    );
}

#[test]
fn a_pair_probe_is_trained_as_probe_trains_it() {
    let env = Env::new();
    let f = env.root.join("f.py");
    std::fs::write(&f, FLOW).unwrap();
    for (task, pf) in [
        ("dfg", "diff"),
        ("siblings_id", "concat"),
        ("distance_id", "diff"),
    ] {
        let v = knockout(&env, &f, "syn-id", task, &["--probe-pair-features", pf]);
        let o = env
            .cmd()
            .args(["--model", &fixture("tiny_bart"), "probe", "--task", task])
            .args(["--layer", "1", "--limit", &LIMIT.to_string()])
            .args(["--pair-features", pf, "--json"])
            .output()
            .unwrap();
        let p: Value = serde_json::from_str(&ok(&o)).unwrap();
        let r = &p["results"][0];
        assert_eq!(
            (r["task"].as_str(), r["layer"].as_u64()),
            (Some(task), Some(1))
        );
        let (a, b) = (
            v["probe"]["test_accuracy"].as_f64().unwrap(),
            r["accuracy"].as_f64().unwrap(),
        );
        assert!(
            (a - b).abs() < 1e-6,
            "{task} {pf}: knockout's {a} vs probe's {b}"
        );
        assert_eq!(v["probe"]["pair_features"], pf);
        assert_eq!(v["probe"]["snippets"].as_u64(), Some(LIMIT as u64));
    }
}

/// A `.jsonl` corpus of `codes`.
fn jsonl(env: &Env, name: &str, codes: &[&str]) -> std::path::PathBuf {
    let p = env.root.join(name);
    let lines: Vec<String> = codes
        .iter()
        .map(|c| serde_json::json!({"code": c, "language": "python"}).to_string())
        .collect();
    std::fs::write(&p, lines.join("\n") + "\n").unwrap();
    p
}

const CORPUS: [&str; 3] = [
    FLOW,
    "def scale(v, k):\n    out = v * k\n    return out\n",
    "def pick(a, b):\n    if a > b:\n        return a\n    return b\n",
];

fn corpus_cmd(
    env: &Env,
    data: &std::path::Path,
    task: &str,
    extra: &[&str],
) -> std::process::Command {
    let mut c = env.cmd();
    c.args([
        "--model",
        &fixture("tiny_bart"),
        "knockout",
        "--edges",
        "syn-id,id-id",
    ])
    .args(["--control", "3", "--seed", "7", "--probe", task])
    .args(["--probe-layer", "1", "--probe-limit", &LIMIT.to_string()])
    .args(extra)
    .arg("--data")
    .arg(data);
    c
}

#[test]
fn a_corpus_pair_probe_averages_the_one_file_reads_and_its_shards_merge() {
    let env = Env::new();
    let data = jsonl(&env, "c.jsonl", &CORPUS);
    let v: Value = serde_json::from_str(&ok(&corpus_cmd(&env, &data, "dfg", &["--json"])
        .output()
        .unwrap()))
    .unwrap();
    let mut shape = v.clone();
    shape.as_object_mut().unwrap().remove("model");
    let missing = crate::json_convention::undocumented(&shape, "`knockout --json`:");
    assert!(
        missing.is_empty(),
        "corpus pair-probe fields not in the README: {missing:?}"
    );
    assert_eq!(
        (
            v["probe"]["task"].as_str(),
            v["probe"]["pair_features"].as_str()
        ),
        (Some("dfg"), Some("diff"))
    );
    // Each snippet through the one-file command, same probe, seed and draws.
    let one: Vec<Value> = CORPUS
        .iter()
        .enumerate()
        .map(|(i, code)| {
            let f = env.root.join(format!("s{i}.py"));
            std::fs::write(&f, code).unwrap();
            knockout(&env, &f, "syn-id", "dfg", &["--seed", "7"])["probe"]["classes"].clone()
        })
        .collect();
    let rows = v["probe"]["rows"].as_array().unwrap();
    let syn_id: Vec<&Value> = rows.iter().filter(|r| r["edges"] == "syn-id").collect();
    assert_eq!(syn_id.len(), Task::Dfg.classes().len() + 1);
    let close = |a: f64, b: f64| (a - b).abs() < 1e-6;
    for (r, row) in syn_id.iter().enumerate() {
        let with: Vec<&Value> = one
            .iter()
            .map(|c| &c[r])
            .filter(|c| c["examples"].as_u64() > Some(0))
            .collect();
        assert_eq!(row["snippets"].as_u64(), Some(with.len() as u64), "{row}");
        if with.is_empty() {
            continue;
        }
        let mean =
            |k: &str| with.iter().map(|c| c[k].as_f64().unwrap()).sum::<f64>() / with.len() as f64;
        assert!(
            close(row["accuracy"].as_f64().unwrap(), mean("accuracy")),
            "{row}"
        );
        assert!(
            close(
                row["accuracy_knocked"].as_f64().unwrap(),
                mean("accuracy_knocked")
            ),
            "{row}"
        );
    }
    // Both edge sets read the same unmodified pass.
    let id_id: Vec<&Value> = rows.iter().filter(|r| r["edges"] == "id-id").collect();
    for (a, b) in syn_id.iter().zip(&id_id) {
        assert_eq!(a["accuracy"], b["accuracy"]);
    }

    // Shards merge into the one-process tables, in every form.
    let shard = |name: &str, k: usize, task: &str, extra: &[&str]| {
        let d = env.root.join(name);
        let sh = format!("{k}/3");
        let mut a = vec!["--shard", &sh, "--out", d.to_str().unwrap()];
        a.extend_from_slice(extra);
        let o = corpus_cmd(&env, &data, task, &a).output().unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        d
    };
    let dirs: Vec<_> = (1..=3)
        .map(|k| shard(&format!("s{k}"), k, "dfg", &[]))
        .collect();
    for form in [&["--json"][..], &["--csv"], &[]] {
        let whole = ok(&corpus_cmd(&env, &data, "dfg", form).output().unwrap());
        let merged = ok(&env
            .cmd()
            .arg("merge")
            .args(dirs.iter().rev())
            .args(form)
            .output()
            .unwrap());
        assert!(whole.contains("probe"), "{whole}");
        assert_eq!(whole, merged, "{form:?}: merged shards differ from one run");
    }
    // Shard 3 of another task, or of the other pair combination: refused in one line.
    let other = |name: &str, task: &str, extra: &[&str]| {
        let d = shard(name, 3, task, extra);
        fails(
            &env.cmd()
                .arg("merge")
                .args([&dirs[0], &dirs[1], &d])
                .output()
                .unwrap(),
        )
    };
    let line = other("task", "siblings_id", &[]);
    assert!(
        line.contains("--probe: siblings_id here, dfg there"),
        "{line}"
    );
    let line = other("concat", "dfg", &["--probe-pair-features", "concat"]);
    assert!(
        line.contains("--probe-pair-features: concat here, diff there"),
        "{line}"
    );
}

#[test]
fn pair_probe_misuses_are_one_line_errors() {
    let env = Env::new();
    let f = env.root.join("f.py");
    std::fs::write(&f, FLOW).unwrap();
    let data = jsonl(&env, "d.jsonl", &CORPUS[..1]);
    let run = |global: &[&str], extra: &[&str], corpus: bool| {
        let mut c = env.cmd();
        c.args(global)
            .args(["knockout", "--edges", "syn-id", "--control", "1"])
            .args(extra);
        if corpus {
            c.arg("--data").arg(&data);
        } else {
            c.arg(&f);
        }
        fails(&c.output().unwrap())
    };
    let (bart_dir, llama_dir) = (fixture("tiny_bart"), fixture("tiny_llama"));
    let bart = vec!["--model", bart_dir.as_str()];
    let llama = vec!["--model", llama_dir.as_str()];
    for corpus in [false, true] {
        let line = run(&bart, &["--probe", "ast"], corpus);
        assert!(line.contains("neither a token nor a pair task"), "{line}");
        let line = run(&bart, &["--probe", "structural"], corpus);
        assert!(line.contains("neither a token nor a pair task"), "{line}");
        let line = run(&bart, &["--probe", "nonsense"], corpus);
        assert!(
            line.contains("unknown task") && line.contains("pair tasks: distance"),
            "{line}"
        );
        let line = run(
            &bart,
            &["--probe", "category", "--probe-pair-features", "concat"],
            corpus,
        );
        assert!(line.contains("category is a token task"), "{line}");
        let line = run(&bart, &["--probe", "dfg", "--mode", "paper"], corpus);
        assert!(line.contains("drop --mode paper"), "{line}");
        // A decoder measured in bits, the encoder–decoder's decoder stack, its cross stack.
        let line = run(&llama, &["--probe", "dfg"], corpus);
        assert!(line.contains("1 - cos"), "{line}");
        let mut dec = bart.clone();
        dec.extend(["--stack", "decoder"]);
        let line = run(&dec, &["--probe", "siblings"], corpus);
        assert!(line.contains("1 - cos"), "{line}");
        let mut cross = bart.clone();
        cross.extend(["--stack", "cross"]);
        let line = run(&cross, &["--probe", "distance"], corpus);
        assert!(line.contains("cross stack"), "{line}");
    }
}

#[test]
fn the_packaged_minilm_reads_a_pair_probe_under_a_knockout() {
    let env = Env::new();
    let f = env.root.join("f.py");
    std::fs::write(&f, FLOW).unwrap();
    let o = std::process::Command::new(crate::cli_sources::BIN)
        .env("HF_HUB_OFFLINE", "1")
        .env("CODESCOPE_LOG_FILE", env.root.join("log"))
        .args(["--model", "minilm", "knockout", "--edges", "syn-id"])
        .args([
            "--control",
            "2",
            "--probe",
            "siblings",
            "--probe-layer",
            "3",
        ])
        .args(["--probe-limit", "6", "--json"])
        .arg(&f)
        .output()
        .unwrap();
    let v: Value = serde_json::from_str(&ok(&o))
        .unwrap_or_else(|e| panic!("the packaged MiniLM is needed (run .ci/run): {e}"));
    let p = &v["probe"];
    assert_eq!(p["pair_features"], "diff");
    let n = p["pairs"].as_array().unwrap().len() as u64;
    let all = &p["classes"][0];
    assert_eq!(
        (all["class"].as_str(), all["examples"].as_u64()),
        (Some("all"), Some(n))
    );
    assert!(n >= 4, "{p}");
    for k in ["accuracy", "accuracy_knocked"] {
        assert!((0.0..=1.0).contains(&all[k].as_f64().unwrap()), "{all}");
    }
    let c = &all["control"];
    assert!(c["lo"].as_f64() <= c["mean"].as_f64(), "{all}");
}

/// The README's MiniLM example: the `dfg` probe at layer 6 on the bundled
/// `word_count.py` under `syn-id` (66 pairs; 0.530 unchanged, 0.515 knocked out, control
/// 0.458; test accuracy 0.594), each accuracy within one pair of what it says.
#[test]
fn minilm_on_the_bundled_sample_reads_the_dfg_probe_as_the_readme_says() {
    let env = Env::new();
    let sample = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("assets/samples/python/word_count.py");
    let o = std::process::Command::new(crate::cli_sources::BIN)
        .env("HF_HUB_OFFLINE", "1")
        .env("CODESCOPE_LOG_FILE", env.root.join("log"))
        .args(["--model", "minilm", "knockout", "--edges", "syn-id"])
        .args([
            "--control",
            "10",
            "--probe",
            "dfg",
            "--probe-layer",
            "6",
            "--json",
        ])
        .arg(&sample)
        .output()
        .unwrap();
    let v: Value = serde_json::from_str(&ok(&o))
        .unwrap_or_else(|e| panic!("the packaged MiniLM is needed (run .ci/run): {e}"));
    let p = &v["probe"];
    let near = |x: &Value, want: f64, tol: f64| (x.as_f64().unwrap() - want).abs() <= tol;
    assert!(
        near(&p["test_accuracy"], 0.594, 0.01),
        "{}",
        p["test_accuracy"]
    );
    let all = &p["classes"][0];
    assert_eq!(all["examples"].as_u64(), Some(66), "{all}");
    let pair = 1.0 / 66.0 + 5e-4;
    assert!(near(&all["accuracy"], 0.530, pair), "{all}");
    assert!(near(&all["accuracy_knocked"], 0.515, pair), "{all}");
    assert!(near(&all["control"]["mean"], 0.458, pair), "{all}");
}
