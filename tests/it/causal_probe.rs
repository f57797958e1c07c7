//! `knockout FILE --probe TASK --probe-layer L`: a token probe trained as `codescope probe`
//! trains it (no intervention), read on the file's code tokens with and without the
//! knockout and under the matched control.
//! - its predictions are those of the same probe (trained again here, in-process) applied
//!   to the hidden states of the model's own traced passes: unmodified through
//!   `analysis::hidden::hidden_states` (the probe's feature path), knocked out through a
//!   trace with the blocked subword pairs built here from the tokenizer's alignment;
//! - an edge set empty on the snippet gives exactly the unmodified accuracy;
//! - the packaged MiniLM (no masked-LM head) runs it through the binary;
//! - a tree probe, paper mode, models measured in bits and a layer out of range are
//!   one-line errors (pair tasks: `causal_probe_pairs`).

use codescope::analysis;
use codescope::model::{self, ForwardOptions, Intervention, Knockout, LoadedModel};
use codescope::probe::{self, Task};
use codescope::syntax::{self, Language};
use serde_json::Value;

use crate::cli_sources::{fails, fixture, ok, Env, BIN};

/// No identifier: `not-id-id` blocks every pair of code tokens, `id-id` none.
const NO_IDS: &str = "1 + 2 * (3 - 4) // 5\n";
const LIMIT: usize = 10;

fn knockout(env: &Env, model: &str, file: &std::path::Path, edges: &str) -> Value {
    let o = env
        .cmd()
        .args([
            "--model",
            model,
            "knockout",
            "--edges",
            edges,
            "--control",
            "3",
        ])
        .args(["--probe", "category", "--probe-layer", "1"])
        .args(["--probe-limit", &LIMIT.to_string(), "--json"])
        .arg(file)
        .output()
        .unwrap();
    serde_json::from_str(&ok(&o)).unwrap()
}

/// The same probe as the binary trains (bundled corpus, first `LIMIT` snippets).
fn train(m: &LoadedModel) -> std::sync::Arc<probe::train::Classifier> {
    let mut snippets = probe::bundled::snippets(None);
    snippets.truncate(LIMIT);
    let spec = probe::RunSpec {
        tasks: vec![Task::Category],
        layers: Some(vec![1]),
        ..probe::RunSpec::new(m, &snippets, "bundled probe corpus".into())
    };
    let r = probe::run(&spec, &mut |_| {}).unwrap();
    r.probes[0].classifier.clone()
}

fn predictions(
    clf: &probe::train::Classifier,
    syn: &syntax::Syntax,
    h: &analysis::hidden::SnippetHidden,
) -> Vec<Option<(usize, usize)>> {
    let labels = probe::dataset::label_snippet(
        Task::Category,
        syn,
        &h.tokens,
        0,
        0,
        &mut probe::Rng::new(0),
    );
    let dim = h.layers[1].len() / h.tokens.len();
    let mut out = vec![None; syn.tokens.len()];
    for e in labels {
        let x = &h.layers[1][e.a * dim..(e.a + 1) * dim];
        out[h.tokens[e.a]] = Some((e.label, clf.predict(x).unwrap()));
    }
    out
}

#[test]
fn the_probe_under_a_knockout_is_the_probe_on_the_traced_passes() {
    let env = Env::new();
    let f = env.root.join("s.py");
    std::fs::write(&f, NO_IDS).unwrap();
    let v = knockout(&env, &fixture("tiny_bart"), &f, "not-id-id");
    assert_eq!(v["measure"], "one_minus_cos");
    // The model object has its shape of its own (every command's).
    let mut shape = v.clone();
    shape.as_object_mut().unwrap().remove("model");
    let missing = crate::json_convention::undocumented(&shape, "`knockout --json`:");
    assert!(
        missing.is_empty(),
        "knockout --probe fields not in the README: {missing:?}"
    );
    let p = &v["probe"];
    assert_eq!(
        (p["task"].as_str(), p["layer"].as_u64()),
        (Some("category"), Some(1))
    );
    assert_eq!(p["snippets"].as_u64(), Some(LIMIT as u64));
    assert!(p["test_accuracy"].as_f64().is_some(), "{p}");

    // In-process: the same probe on the traced passes.
    let m = LoadedModel::load(&model::source::resolve(&fixture("tiny_bart")).unwrap()).unwrap();
    let clf = train(&m);
    let syn = syntax::parse(NO_IDS, Language::Python).unwrap();
    let base = predictions(
        &clf,
        &syn,
        &analysis::hidden::hidden_states(&m, &syn).unwrap(),
    );
    // Every subword pair of two different code tokens, specials aside.
    let enc = m.encode(NO_IDS, m.info.window).unwrap();
    let al = analysis::align_subwords(&enc.tokens, &syn.tokens);
    let subs = &al.token_to_subwords;
    let mut rows = vec![Vec::new(); enc.ids.len()];
    for (q, sq) in subs.iter().enumerate() {
        for (k, sk) in subs.iter().enumerate() {
            for &i in sq.iter().filter(|_| q != k) {
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
            NO_IDS,
            &ForwardOptions {
                hidden: true,
                on_attention: Some(&discard),
                intervention: Some(&iv),
                ..Default::default()
            },
        )
        .unwrap();
    let knocked = predictions(
        &clf,
        &syn,
        &analysis::hidden::token_hidden(&t, &syn.tokens).unwrap(),
    );
    let classes = Task::Category.classes();
    let tokens = v["tokens"].as_array().unwrap();
    for (i, t) in tokens.iter().enumerate() {
        let (g, b) = base[i].unwrap();
        let (g2, k) = knocked[i].unwrap();
        assert_eq!(g, g2);
        assert_eq!(t["probe_gold"], classes[g].as_str(), "{t}");
        assert_eq!(t["probe_predicted"], classes[b].as_str(), "{t}");
        assert_eq!(t["probe_predicted_knocked"], classes[k].as_str(), "{t}");
    }
    // The accuracies are the predictions' hit rates, overall and per gold class.
    let rows = p["classes"].as_array().unwrap();
    assert_eq!(rows[0]["class"], "all");
    assert_eq!(rows.len(), classes.len() + 1);
    for (r, row) in rows.iter().enumerate() {
        let of = |pred: &[Option<(usize, usize)>]| {
            let hits: Vec<bool> = pred
                .iter()
                .flatten()
                .filter(|(g, _)| r == 0 || *g == r - 1)
                .map(|(g, p)| g == p)
                .collect();
            (hits.len(), hits.iter().filter(|&&h| h).count())
        };
        let ((n, hb), (_, hk)) = (of(&base), of(&knocked));
        assert_eq!(row["examples"].as_u64(), Some(n as u64), "{row}");
        if n == 0 {
            assert!(
                row["accuracy"].is_null() && row["control"].is_null(),
                "{row}"
            );
            continue;
        }
        let close =
            |x: &Value, want: usize| (x.as_f64().unwrap() - want as f64 / n as f64).abs() < 1e-6;
        assert!(close(&row["accuracy"], hb), "{row}");
        assert!(close(&row["accuracy_knocked"], hk), "{row}");
    }
    // Every pair is blocked and no pair is left for a control draw.
    assert!(rows[0]["control"].is_null(), "{}", rows[0]);

    // An empty edge set: the knocked accuracy is the unmodified one, exactly.
    let v = knockout(&env, &fixture("tiny_bart"), &f, "id-id");
    assert_eq!(v["blocked"]["token_pairs"], 0);
    for row in v["probe"]["classes"].as_array().unwrap() {
        assert_eq!(row["accuracy"], row["accuracy_knocked"], "{row}");
    }
    for (a, b) in v["tokens"].as_array().unwrap().iter().zip(tokens) {
        assert_eq!(a["probe_predicted_knocked"], b["probe_predicted"]);
    }

    // CSV and text carry it too.
    let o = env
        .cmd()
        .args([
            "--model",
            &fixture("tiny_bart"),
            "knockout",
            "--edges",
            "syn-syn",
        ])
        .args([
            "--probe",
            "category",
            "--probe-layer",
            "1",
            "--probe-limit",
            "10",
            "--control",
            "2",
            "--csv",
        ])
        .arg(&f)
        .output()
        .unwrap();
    let csv = ok(&o);
    assert!(
        csv.starts_with(
            "index,text,category,coarse,start,end,bits,bits_knocked,delta,probe_gold,probe_predicted,probe_predicted_knocked\n"
        ),
        "{csv}"
    );
    let o = env
        .cmd()
        .args([
            "--model",
            &fixture("tiny_bart"),
            "knockout",
            "--edges",
            "syn-syn",
        ])
        .args([
            "--probe",
            "category",
            "--probe-layer",
            "1",
            "--probe-limit",
            "10",
            "--control",
            "2",
        ])
        .arg(&f)
        .output()
        .unwrap();
    let text = ok(&o);
    assert!(
        text.contains("probe category at layer 1 (trained on 10 snippets"),
        "{text}"
    );
}

#[test]
fn the_packaged_minilm_reads_a_probe_under_a_knockout() {
    let d = tempfile::tempdir().unwrap();
    let f = d.path().join("s.py");
    std::fs::write(&f, "def area(w, h):\n    total = w * h\n    return total\n").unwrap();
    let o = std::process::Command::new(BIN)
        .env("HF_HUB_OFFLINE", "1")
        .env("CODESCOPE_LOG_FILE", d.path().join("log"))
        .args([
            "--model",
            "minilm",
            "knockout",
            "--edges",
            "syn-id",
            "--control",
            "2",
        ])
        .args([
            "--probe",
            "category",
            "--probe-layer",
            "3",
            "--probe-limit",
            "6",
            "--json",
        ])
        .arg(&f)
        .output()
        .unwrap();
    let v: Value = serde_json::from_str(&ok(&o))
        .unwrap_or_else(|e| panic!("the packaged MiniLM is needed (run .ci/run): {e}"));
    assert_eq!(v["measure"], "one_minus_cos");
    let all = &v["probe"]["classes"][0];
    assert_eq!(all["class"], "all");
    assert!(all["examples"].as_u64().unwrap() > 10, "{all}");
    for k in ["accuracy", "accuracy_knocked"] {
        let a = all[k].as_f64().unwrap();
        assert!((0.0..=1.0).contains(&a), "{all}");
    }
    let c = &all["control"];
    assert!(
        c["lo"].as_f64().unwrap() <= c["mean"].as_f64().unwrap(),
        "{all}"
    );
}

#[test]
fn probe_misuses_are_one_line_errors() {
    let env = Env::new();
    let f = env.root.join("s.py");
    std::fs::write(&f, NO_IDS).unwrap();
    let run = |model: &str, extra: &[&str]| {
        env.cmd()
            .args([
                "--model",
                &fixture(model),
                "knockout",
                "--edges",
                "syn-id",
                "--control",
                "1",
            ])
            .args(extra)
            .arg(&f)
            .output()
            .unwrap()
    };
    let line = fails(&run("tiny_bart", &["--probe", "ast"]));
    assert!(line.contains("neither a token nor a pair task"), "{line}");
    let line = fails(&run("tiny_bart", &["--probe", "depth", "--mode", "paper"]));
    assert!(line.contains("drop --mode paper"), "{line}");
    let line = fails(&run("tiny_llama", &["--probe", "category"]));
    assert!(line.contains("1 - cos"), "{line}");
    let line = fails(&run(
        "tiny_bart",
        &["--probe", "category", "--probe-layer", "99"],
    ));
    assert!(line.contains("layer 99 does not exist"), "{line}");
    // --probe-layer needs --probe.
    assert_eq!(
        run("tiny_bart", &["--probe-layer", "1"]).status.code(),
        Some(2)
    );
}

/// `codescope --model tiny_bart knockout --data DATA --edges EDGES --probe category` with
/// the probe of the one-file tests (layer 1, the bundled corpus's first `LIMIT`), `extra`
/// after it.
fn corpus_run(
    env: &Env,
    data: &std::path::Path,
    edges: &str,
    extra: &[&str],
) -> std::process::Output {
    env.cmd()
        .args([
            "--model",
            &fixture("tiny_bart"),
            "knockout",
            "--edges",
            edges,
        ])
        .args(["--control", "3", "--seed", "7"])
        .args(["--probe", "category", "--probe-layer", "1"])
        .args(["--probe-limit", &LIMIT.to_string(), "--data"])
        .arg(data)
        .args(extra)
        .output()
        .unwrap()
}

/// A `.jsonl` corpus of `codes` (each record's code exactly as given).
fn jsonl(env: &Env, name: &str, codes: &[&str]) -> std::path::PathBuf {
    let p = env.root.join(name);
    let lines: Vec<String> = codes
        .iter()
        .map(|c| serde_json::json!({"code": c, "language": "python"}).to_string())
        .collect();
    std::fs::write(&p, lines.join("\n") + "\n").unwrap();
    p
}

const WITH_IDS: [&str; 3] = [
    "def area(w, h):\n    total = w * h\n    return total\n",
    "def scale(v, k):\n    out = v * k\n    return out\n",
    "def pick(a, b):\n    if a > b:\n        return a\n    return b\n",
];

const WITHOUT_IDS: [&str; 3] = [
    "1 + 2 * (3 - 4) // 5\n",
    "[1, 2, 3][0] + 4\n",
    "(5 - 6) * 7 ** 2 > 8\n",
];

/// The probe rows of a corpus run's JSON, keyed by (edges, class).
fn probe_rows(v: &Value) -> Vec<Value> {
    v["probe"]["rows"].as_array().unwrap().clone()
}

#[test]
fn a_corpus_probe_run_averages_what_the_one_file_command_reads_on_each_snippet() {
    let env = Env::new();
    let data = jsonl(&env, "c.jsonl", &WITH_IDS);
    let v: Value =
        serde_json::from_str(&ok(&corpus_run(&env, &data, "syn-id", &["--json"]))).unwrap();
    let mut shape = v.clone();
    shape.as_object_mut().unwrap().remove("model");
    let missing = crate::json_convention::undocumented(&shape, "`knockout --json`:");
    assert!(
        missing.is_empty(),
        "corpus --probe fields not in the README: {missing:?}"
    );
    let p = &v["probe"];
    assert_eq!(
        (
            p["task"].as_str(),
            p["layer"].as_u64(),
            p["snippets"].as_u64()
        ),
        (Some("category"), Some(1), Some(LIMIT as u64))
    );
    // Each snippet alone, through the one-file command (same probe, seed and draws).
    let one: Vec<Value> = WITH_IDS
        .iter()
        .enumerate()
        .map(|(i, code)| {
            let f = env.root.join(format!("s{i}.py"));
            std::fs::write(&f, code).unwrap();
            let o = env
                .cmd()
                .args([
                    "--model",
                    &fixture("tiny_bart"),
                    "knockout",
                    "--edges",
                    "syn-id",
                ])
                .args(["--control", "3", "--seed", "7"])
                .args(["--probe", "category", "--probe-layer", "1"])
                .args(["--probe-limit", &LIMIT.to_string(), "--json"])
                .arg(&f)
                .output()
                .unwrap();
            let v: Value = serde_json::from_str(&ok(&o)).unwrap();
            v["probe"]["classes"].clone()
        })
        .collect();
    let rows = probe_rows(&v);
    let classes = Task::Category.classes();
    assert_eq!(rows.len(), classes.len() + 1);
    let close = |a: f64, b: f64| (a - b).abs() < 1e-6;
    for (r, row) in rows.iter().enumerate() {
        assert_eq!(row["edges"], "syn-id");
        assert_eq!(row["class"], one[0][r]["class"], "{row}");
        // The snippets with an example of the row, and their one-file values.
        let with: Vec<&Value> = one
            .iter()
            .map(|c| &c[r])
            .filter(|c| c["examples"].as_u64() > Some(0))
            .collect();
        assert_eq!(row["snippets"].as_u64(), Some(with.len() as u64), "{row}");
        if with.is_empty() {
            assert!(row["accuracy"].is_null() && row["diff"].is_null(), "{row}");
            continue;
        }
        let mean =
            |k: &str| with.iter().map(|c| c[k].as_f64().unwrap()).sum::<f64>() / with.len() as f64;
        let (u, k) = (mean("accuracy"), mean("accuracy_knocked"));
        assert!(close(row["accuracy"].as_f64().unwrap(), u), "{row} vs {u}");
        assert!(
            close(row["accuracy_knocked"].as_f64().unwrap(), k),
            "{row} vs {k}"
        );
        assert!(close(row["diff"].as_f64().unwrap(), k - u), "{row}");
        let (lo, hi) = (
            row["diff_lo"].as_f64().unwrap(),
            row["diff_hi"].as_f64().unwrap(),
        );
        assert!(lo <= k - u + 1e-9 && k - u <= hi + 1e-9, "{row}");
        // The control: over the snippets with a draw, each snippet's mean over its draws.
        let ctl: Vec<(f64, f64)> = with
            .iter()
            .filter(|c| !c["control"].is_null())
            .map(|c| {
                (
                    c["control"]["mean"].as_f64().unwrap(),
                    c["accuracy"].as_f64().unwrap(),
                )
            })
            .collect();
        assert_eq!(
            row["control_snippets"].as_u64(),
            Some(ctl.len() as u64),
            "{row}"
        );
        let n = ctl.len() as f64;
        let (c, b) = (
            ctl.iter().map(|x| x.0).sum::<f64>() / n,
            ctl.iter().map(|x| x.1).sum::<f64>() / n,
        );
        assert!(
            close(row["accuracy_control"].as_f64().unwrap(), c),
            "{row} vs {c}"
        );
        assert!(close(row["control_diff"].as_f64().unwrap(), c - b), "{row}");
    }
    // Snippet by snippet: a corpus of that snippet alone reads what the one-file command
    // reads on it, row by row.
    for (i, code) in WITH_IDS.iter().enumerate() {
        let data = jsonl(&env, &format!("one{i}.jsonl"), &[code]);
        let v: Value =
            serde_json::from_str(&ok(&corpus_run(&env, &data, "syn-id", &["--json"]))).unwrap();
        for (row, c) in probe_rows(&v).iter().zip(one[i].as_array().unwrap()) {
            let same = |a: &Value, b: &Value| match (a.as_f64(), b.as_f64()) {
                (Some(x), Some(y)) => close(x, y),
                _ => a.is_null() && b.is_null(),
            };
            assert!(
                same(&row["accuracy"], &c["accuracy"]),
                "snippet {i}: {row} vs {c}"
            );
            assert!(
                same(&row["accuracy_knocked"], &c["accuracy_knocked"]),
                "snippet {i}: {row} vs {c}"
            );
            assert!(
                same(&row["accuracy_control"], &c["control"]["mean"]),
                "snippet {i}: {row} vs {c}"
            );
        }
    }
    // An edge set empty on every snippet: the knocked accuracy is the unmodified one, Δ
    // exactly 0 with a zero-width interval, and no control.
    let data = jsonl(&env, "no_ids.jsonl", &WITHOUT_IDS);
    let v: Value =
        serde_json::from_str(&ok(&corpus_run(&env, &data, "id-id,syn-syn", &["--json"]))).unwrap();
    let rows = probe_rows(&v);
    let empty: Vec<&Value> = rows.iter().filter(|r| r["edges"] == "id-id").collect();
    assert_eq!(empty[0]["class"], "all");
    assert_eq!(empty[0]["snippets"].as_u64(), Some(3));
    for r in empty.iter().filter(|r| r["snippets"].as_u64() > Some(0)) {
        assert_eq!(r["accuracy"], r["accuracy_knocked"], "{r}");
        for k in ["diff", "diff_lo", "diff_hi"] {
            assert_eq!(r[k].as_f64(), Some(0.0), "{r}");
        }
        assert_eq!(r["control_snippets"].as_u64(), Some(0), "{r}");
        assert!(r["accuracy_control"].is_null(), "{r}");
    }
    // syn-syn blocks every pair on these snippets: its unmodified accuracy is the same.
    let full: Vec<&Value> = rows.iter().filter(|r| r["edges"] == "syn-syn").collect();
    for (a, b) in empty.iter().zip(&full) {
        assert_eq!(a["accuracy"], b["accuracy"]);
    }
    // CSV and text carry it too.
    let csv = ok(&corpus_run(&env, &data, "id-id", &["--csv"]));
    let mut lines = csv.lines();
    assert_eq!(
        lines.next(),
        Some("edges,class,snippets,knocked,control,diff,diff_lo,diff_hi,unmodified,control_snippets,control_diff,control_diff_lo,control_diff_hi")
    );
    assert!(
        csv.lines().any(|l| l.starts_with("id-id,probe:all,3,")),
        "{csv}"
    );
    assert!(
        csv.lines()
            .any(|l| l.starts_with("id-id,identifier,0,") && l.ends_with(",,,,,")),
        "{csv}"
    );
    let text = ok(&corpus_run(&env, &data, "id-id", &[]));
    assert!(
        text.contains("probe category at layer 1 (trained on 10 snippets of bundled probe corpus")
            && text.contains("mean accuracy per snippet, diffs from unchanged"),
        "{text}"
    );
}

#[test]
fn corpus_probe_shards_merge_into_the_one_process_tables_and_refuse_another_probe() {
    let env = Env::new();
    let data = jsonl(&env, "c.jsonl", &WITH_IDS);
    let shard = |name: &str, k: usize, task: &str, extra: &[&str]| {
        let d = env.root.join(name);
        let sh = format!("{k}/3");
        let mut a = vec!["--shard", &sh, "--out", d.to_str().unwrap()];
        a.extend_from_slice(extra);
        let o = env
            .cmd()
            .args([
                "--model",
                &fixture("tiny_bart"),
                "knockout",
                "--edges",
                "syn-id,id-id",
            ])
            .args(["--control", "3", "--seed", "7"])
            .args(["--probe", task])
            .args(a)
            .arg("--data")
            .arg(&data)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        d
    };
    let probe = ["--probe-layer", "1", "--probe-limit", "10"];
    let dirs: Vec<_> = (1..=3)
        .map(|k| shard(&format!("s{k}"), k, "category", &probe))
        .collect();
    for form in [&["--json"][..], &["--csv"], &[]] {
        let whole = ok(&corpus_run(&env, &data, "syn-id,id-id", form));
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
    // Shard 3 of a run with another probe: refused, naming what differs.
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
    let line = other(
        "layer",
        "category",
        &["--probe-layer", "2", "--probe-limit", "10"],
    );
    assert!(line.contains("--probe-layer: 2 here, 1 there"), "{line}");
    let line = other(
        "limit",
        "category",
        &["--probe-layer", "1", "--probe-limit", "8"],
    );
    assert!(line.contains("--probe-limit"), "{line}");
    let bundled = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("assets/probe/python");
    let line = other(
        "corpus",
        "category",
        &[
            "--probe-layer",
            "1",
            "--probe-limit",
            "10",
            "--probe-corpus",
            bundled.to_str().unwrap(),
        ],
    );
    assert!(line.contains("(--probe-corpus: "), "{line}");
    let line = other("task", "depth", &probe);
    assert!(
        line.contains("--probe: depth here, category there"),
        "{line}"
    );
}

#[test]
fn a_corpus_probe_warns_when_it_reads_the_snippets_it_was_trained_on() {
    let env = Env::new();
    // The bundled probe corpus's own files: the probe was trained on them.
    let bundled = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("assets/probe/python");
    let o = corpus_run(&env, &bundled, "syn-id", &["--limit", "2", "--json"]);
    ok(&o);
    let said = String::from_utf8_lossy(&o.stderr);
    assert!(
        said.contains("warning: the probe was trained on 2 of the 2 snippets it is read on"),
        "{said}"
    );
    let o = corpus_run(
        &env,
        &jsonl(&env, "c.jsonl", &WITH_IDS[..1]),
        "syn-id",
        &["--json"],
    );
    ok(&o);
    assert!(!String::from_utf8_lossy(&o.stderr).contains("warning"));
    // A tree probe and models measured in bits stay one-line errors with --data.
    let data = jsonl(&env, "d.jsonl", &WITH_IDS[..1]);
    let run = |model: &str, task: &str| {
        let o = env
            .cmd()
            .args(["--model", &fixture(model), "knockout", "--edges", "syn-id"])
            .args(["--probe", task, "--data"])
            .arg(&data)
            .output()
            .unwrap();
        fails(&o)
    };
    let line = run("tiny_bart", "ast");
    assert!(line.contains("neither a token nor a pair task"), "{line}");
    let line = run("tiny_llama", "category");
    assert!(line.contains("1 - cos"), "{line}");
}

#[test]
fn the_packaged_minilm_reads_a_probe_over_a_corpus() {
    let env = Env::new();
    let data = jsonl(&env, "c.jsonl", &WITH_IDS[..2]);
    let o = std::process::Command::new(BIN)
        .env("HF_HUB_OFFLINE", "1")
        .env("CODESCOPE_LOG_FILE", env.root.join("log"))
        .args([
            "--model",
            "minilm",
            "knockout",
            "--edges",
            "syn-id",
            "--control",
            "2",
        ])
        .args([
            "--probe",
            "depth",
            "--probe-layer",
            "3",
            "--probe-limit",
            "6",
            "--json",
        ])
        .arg("--data")
        .arg(&data)
        .output()
        .unwrap();
    let v: Value = serde_json::from_str(&ok(&o))
        .unwrap_or_else(|e| panic!("the packaged MiniLM is needed (run .ci/run): {e}"));
    let all = &v["probe"]["rows"][0];
    assert_eq!(
        (all["class"].as_str(), all["snippets"].as_u64()),
        (Some("all"), Some(2))
    );
    for k in ["accuracy", "accuracy_knocked", "accuracy_control"] {
        let a = all[k].as_f64().unwrap();
        assert!((0.0..=1.0).contains(&a), "{all}");
    }
}
