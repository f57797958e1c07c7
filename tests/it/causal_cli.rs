//! `codescope knockout`, `ablate` and `lens` end to end on the tiny fixtures (the numbers
//! themselves are checked against transformers in `causal_reference`):
//! - an edge set that is empty on the snippet reproduces the unmodified surprisal bit for
//!   bit, and that surprisal is the explorer's (`analysis::run` with the LM head);
//! - knocking out every key but the position itself makes each position's prediction
//!   depend on its own token only (a hand-checkable case: two inputs that share a token
//!   get the same logits there, and the attention recorded is the identity);
//! - the JSON shapes (per token text, category, span, bits, bits_knocked; the summary
//!   with the control's mean and interval; 1-based layers and heads), the control's seed,
//!   CSV headers, the text tables; bad `--edges`, `--layers`, and the lens on an encoder
//!   are one-line errors.

use std::sync::Arc;

use codescope::analysis::{self, causal};
use codescope::model::{self, ForwardOptions, Intervention, Knockout, LoadedModel};
use codescope::syntax::Language;
use serde_json::Value;

use crate::cli_sources::{fails, fixture, ok, Env};

const CODE: &str = "def area(w, h):\n    total = w * h\n    return total\n";

fn run_json(env: &Env, model: &str, file: &std::path::Path, args: &[&str]) -> Value {
    let o = env
        .cmd()
        .args(["--model", &fixture(model)])
        .args(args)
        .arg(file)
        .arg("--json")
        .output()
        .unwrap();
    serde_json::from_str(&ok(&o)).unwrap()
}

fn write(env: &Env, text: &str) -> std::path::PathBuf {
    let p = env.root.join("snippet.py");
    std::fs::write(&p, text).unwrap();
    p
}

#[test]
fn knockout_json_has_tokens_summary_and_a_seeded_control() {
    let env = Env::new();
    let f = write(&env, CODE);
    let v = run_json(
        &env,
        "tiny_llama",
        &f,
        &[
            "knockout",
            "--edges",
            "syn-id",
            "--control",
            "6",
            "--seed",
            "3",
        ],
    );
    assert_eq!(v["command"], "knockout");
    assert_eq!(v["edges"], "syn-id");
    assert_eq!(v["measure"], "bits");
    assert_eq!(v["layers"], serde_json::json!([1, 2]));
    assert_eq!(v["heads"], serde_json::json!([1, 2, 3, 4]));
    assert!(v["blocked"]["token_pairs"].as_u64().unwrap() > 0);
    assert_eq!(v["control"]["draws"], 6);
    assert_eq!(v["control"]["token_pairs"], v["blocked"]["token_pairs"]);
    let tokens = v["tokens"].as_array().unwrap();
    let area = tokens.iter().find(|t| t["text"] == "area").unwrap();
    assert_eq!(area["category"], "identifier");
    assert_eq!(area["coarse"], "identifier");
    assert_eq!(area["span"], serde_json::json!([4, 8]));
    let (b, k, d) = (
        area["bits"].as_f64().unwrap(),
        area["bits_knocked"].as_f64().unwrap(),
        area["delta_bits"].as_f64().unwrap(),
    );
    assert!((k - b - d).abs() < 1e-5, "{area}");
    let summary = v["summary"].as_array().unwrap();
    let classes: Vec<&str> = summary
        .iter()
        .map(|s| s["class"].as_str().unwrap())
        .collect();
    assert_eq!(classes, causal::CLASSES);
    let id = &summary[0];
    let mean: Vec<f64> = tokens
        .iter()
        .filter(|t| t["coarse"] == "identifier")
        .filter_map(|t| t["delta_bits"].as_f64())
        .collect();
    assert_eq!(id["tokens"].as_u64().unwrap() as usize, mean.len());
    let want = mean.iter().sum::<f64>() / mean.len() as f64;
    assert!((id["mean_delta"].as_f64().unwrap() - want).abs() < 1e-5);
    let c = &id["control"];
    let (lo, m, hi) = (
        c["lo"].as_f64().unwrap(),
        c["mean"].as_f64().unwrap(),
        c["hi"].as_f64().unwrap(),
    );
    assert!(lo <= m && m <= hi, "{c}");
    // The same seed gives the same control; another seed other draws.
    let again = run_json(
        &env,
        "tiny_llama",
        &f,
        &[
            "knockout",
            "--edges",
            "syn-id",
            "--control",
            "6",
            "--seed",
            "3",
        ],
    );
    assert_eq!(again, v);
    let other = run_json(
        &env,
        "tiny_llama",
        &f,
        &[
            "knockout",
            "--edges",
            "syn-id",
            "--control",
            "6",
            "--seed",
            "4",
        ],
    );
    assert_ne!(other["summary"], v["summary"]);
    assert_eq!(
        other["tokens"], v["tokens"],
        "the knockout itself does not depend on the seed"
    );
}

#[test]
fn an_empty_edge_set_reproduces_the_explorers_surprisal_bit_for_bit() {
    // No identifier: id-id blocks nothing.
    let env = Env::new();
    let text = "1 + 2 * (3 - 4)\n";
    let f = write(&env, text);
    let v = run_json(
        &env,
        "tiny_llama",
        &f,
        &["knockout", "--edges", "id-id", "--control", "3"],
    );
    assert_eq!(v["blocked"]["token_pairs"], 0);
    assert_eq!(v["control"]["draws"], 0, "nothing to match");
    let m = LoadedModel::load(&model::source::resolve(&fixture("tiny_llama")).unwrap()).unwrap();
    let syn = Arc::new(analysis::parse(text, Language::Python).unwrap());
    let a = analysis::run(
        &m,
        syn,
        &analysis::AnalyzeOptions {
            mode: analysis::Mode::Source,
            threshold: 0.05,
            sweep: false,
        },
        &analysis::RunOptions {
            lm: true,
            ..Default::default()
        },
    )
    .unwrap();
    let s = a.surprisal.unwrap();
    for (t, tok) in v["tokens"].as_array().unwrap().iter().enumerate() {
        let want = s.bits[t];
        assert_eq!(tok["bits"].as_f64().map(|x| x as f32), want, "token {t}");
        if want.is_some() {
            assert_eq!(tok["delta_bits"].as_f64(), Some(0.0), "token {t}: {tok}");
            assert_eq!(tok["bits_knocked"], tok["bits"]);
        }
    }
}

#[test]
fn only_the_position_itself_makes_each_prediction_its_own_tokens() {
    let m = LoadedModel::load(&model::source::resolve(&fixture("tiny_llama")).unwrap()).unwrap();
    let n = 8;
    let all_but_self: Vec<Vec<u32>> = (0..n as u32)
        .map(|i| (0..n as u32).filter(|&j| j != i).collect())
        .collect();
    let iv = Intervention {
        knockout: Some(Knockout {
            layers: vec![true; m.info.layers],
            heads: vec![true; m.info.heads],
            rows: all_but_self,
        }),
        ablate: Vec::new(),
    };
    let logits = |ids: &[u32]| {
        let mut out = Vec::new();
        let att = std::sync::Mutex::new(Vec::new());
        let sink = |_: usize, p: Vec<f32>| {
            att.lock().unwrap().push(p);
            Ok(())
        };
        m.forward_lm_ids(
            ids,
            &ForwardOptions {
                intervention: Some(&iv),
                on_attention: Some(&sink),
                ..Default::default()
            },
            &mut |_, b| {
                out.extend_from_slice(b);
                Ok(())
            },
        )
        .unwrap();
        (out, att.into_inner().unwrap())
    };
    let a: Vec<u32> = vec![1, 20, 21, 22, 23, 24, 25, 26];
    let b: Vec<u32> = vec![1, 40, 41, 42, 43, 44, 45, 26];
    let ((la, att), (lb, _)) = (logits(&a), logits(&b));
    let v = m.vocab_size();
    // Position 0 and 7 hold the same token in both inputs: the same logits there.
    for p in [0, 7] {
        for (x, y) in la[p * v..(p + 1) * v].iter().zip(&lb[p * v..(p + 1) * v]) {
            assert!((x - y).abs() < 1e-5, "position {p}: {x} vs {y}");
        }
    }
    assert!(la[3 * v..4 * v]
        .iter()
        .zip(&lb[3 * v..4 * v])
        .any(|(x, y)| (x - y).abs() > 1e-3));
    // Every head of every layer attends to the position itself only.
    for layer in &att {
        for (k, &p) in layer.iter().enumerate() {
            let (i, j) = ((k / n) % n, k % n);
            assert_eq!(p, if i == j { 1.0 } else { 0.0 }, "{i},{j}");
        }
    }
}

#[test]
fn ablate_and_lens_print_their_grids() {
    let env = Env::new();
    let f = write(&env, CODE);
    let v = run_json(&env, "tiny_llama", &f, &["ablate"]);
    assert_eq!(
        (v["command"].as_str(), v["mode"].as_str()),
        (Some("ablate"), Some("zero"))
    );
    let heads = v["heads"].as_array().unwrap();
    assert_eq!(heads.len(), 2 * 4);
    assert_eq!(
        (heads[0]["layer"].as_u64(), heads[0]["head"].as_u64()),
        (Some(1), Some(1))
    );
    assert!(heads
        .iter()
        .all(|h| h["identifier"].is_f64() && h["syntactic"].is_f64()));
    let mean = run_json(&env, "tiny_llama", &f, &["ablate", "--ablation", "mean"]);
    assert_eq!(mean["mode"], "mean");
    assert_ne!(mean["heads"], v["heads"]);
    let o = env
        .cmd()
        .args(["--model", &fixture("tiny_llama"), "ablate"])
        .arg(&f)
        .arg("--csv")
        .output()
        .unwrap();
    let csv = ok(&o);
    assert_eq!(
        csv.lines().next(),
        Some("layer,head,identifier,syntactic,all")
    );
    assert_eq!(csv.lines().count(), 1 + 8);

    let l = run_json(&env, "tiny_llama", &f, &["lens"]);
    assert_eq!(l["layers"], 3, "embeddings, 2 layers' outputs");
    let total = l["tokens"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["text"] == "total")
        .unwrap();
    let layers = total["layers"].as_array().unwrap();
    assert_eq!(layers.len(), 3);
    let p: f64 = layers[2]["prob"].as_f64().unwrap();
    assert!(p > 0.0 && p <= 1.0);
    if let Some(d) = total["decided_at"].as_u64() {
        assert_eq!(layers[d as usize]["rank"], 1);
    }
    let o = env
        .cmd()
        .args(["--model", &fixture("tiny_llama"), "lens"])
        .arg(&f)
        .output()
        .unwrap();
    let text = ok(&o);
    assert!(
        text.contains("logit lens") && text.contains("decided"),
        "{text}"
    );
    let o = env
        .cmd()
        .args([
            "--model",
            &fixture("tiny_llama"),
            "knockout",
            "--edges",
            "dfg",
            "--control",
            "2",
        ])
        .arg(&f)
        .output()
        .unwrap();
    let text = ok(&o);
    assert!(
        text.contains("knockout dfg")
            && text.contains("identifier")
            && text.contains("control (2 draws"),
        "{text}"
    );
}

#[test]
fn encoders_measure_the_last_hidden_state_and_have_no_lens() {
    let env = Env::new();
    let f = write(&env, CODE);
    // The encoder stacks of T5 (its biased attention knocked out after the softmax) and
    // BART: no masked-LM head (RoBERTa's is measured in PLL bits, `mlm_reference`).
    let g = env.root.join("no_ids.py");
    std::fs::write(&g, "1 + 2 * (3 - 4)\n").unwrap();
    for m in ["tiny_t5", "tiny_t5_v11", "tiny_bart"] {
        let v = run_json(
            &env,
            m,
            &f,
            &["knockout", "--edges", "not-id-id", "--control", "2"],
        );
        assert_eq!(v["measure"], "one_minus_cos");
        let tokens = v["tokens"].as_array().unwrap();
        assert!(tokens.iter().all(|t| t.get("bits").is_none()));
        let changes: Vec<f64> = tokens
            .iter()
            .filter_map(|t| t["one_minus_cos"].as_f64())
            .collect();
        assert_eq!(changes.len(), tokens.len(), "{m}");
        assert!(changes.iter().any(|&c| c > 1e-7), "{m}: {changes:?}");
        // Nothing to block (no identifier in the snippet): no change at all.
        let v = run_json(
            &env,
            m,
            &g,
            &["knockout", "--edges", "id-id", "--control", "0"],
        );
        let toks = v["tokens"].as_array().unwrap();
        assert!(
            toks.iter()
                .all(|t| t["one_minus_cos"].as_f64() == Some(0.0)),
            "{m}: {v}"
        );
    }
    let v = run_json(&env, "tiny_t5", &f, &["ablate"]);
    let heads = v["heads"].as_array().unwrap();
    assert!(
        heads.iter().any(|h| h["all"].as_f64().unwrap() > 1e-7),
        "{v}"
    );
    let e = fails(
        &env.cmd()
            .args(["--model", &fixture("tiny_roberta"), "lens"])
            .arg(&f)
            .output()
            .unwrap(),
    );
    assert!(e.contains("causal model"), "{e}");
}

#[test]
fn bad_edges_layers_and_heads_are_one_line_errors() {
    let env = Env::new();
    let f = write(&env, CODE);
    let o = env
        .cmd()
        .args([
            "--model",
            &fixture("tiny_llama"),
            "knockout",
            "--edges",
            "syn-foo",
        ])
        .arg(&f)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        err.contains("unknown edge set") && err.contains("syn-id"),
        "{err}"
    );
    let e = fails(
        &env.cmd()
            .args([
                "--model",
                &fixture("tiny_llama"),
                "knockout",
                "--edges",
                "syn-id",
                "--layers",
                "3",
            ])
            .arg(&f)
            .output()
            .unwrap(),
    );
    assert!(
        e.contains("layer 3 does not exist (the model has 2)"),
        "{e}"
    );
    let o = env
        .cmd()
        .args([
            "--model",
            &fixture("tiny_llama"),
            "knockout",
            "--edges",
            "syn-id",
            "--heads",
            "0",
        ])
        .arg(&f)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("count from 1"));
    // --layers and --heads restrict the knockout.
    let v = run_json(
        &env,
        "tiny_llama",
        &f,
        &[
            "knockout",
            "--edges",
            "syn-id",
            "--layers",
            "2",
            "--heads",
            "1,3-4",
            "--control",
            "0",
        ],
    );
    assert_eq!(v["layers"], serde_json::json!([2]));
    assert_eq!(v["heads"], serde_json::json!([1, 3, 4]));
}

#[test]
fn a_corpus_knockout_aggregates_each_snippets_effect_against_its_control() {
    let env = Env::new();
    let dir = env.root.join("corpus");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("a.py"), CODE).unwrap();
    let one = run_json(
        &env,
        "tiny_llama",
        &dir.join("a.py"),
        &["knockout", "--edges", "syn-id", "--control", "4"],
    );
    let o = env
        .cmd()
        .args([
            "--model",
            &fixture("tiny_llama"),
            "knockout",
            "--edges",
            "syn-id,dfg",
            "--control",
            "4",
            "--json",
            "--data",
        ])
        .arg(&dir)
        .output()
        .unwrap();
    let v: Value = serde_json::from_str(&ok(&o)).unwrap();
    assert_eq!(
        (v["snippets"].as_u64(), v["failed"].as_u64()),
        (Some(1), Some(0))
    );
    let rows = v["rows"].as_array().unwrap();
    let keys: Vec<(String, String)> = rows
        .iter()
        .map(|r| {
            (
                r["edges"].as_str().unwrap().into(),
                r["class"].as_str().unwrap().into(),
            )
        })
        .collect();
    let want: Vec<(String, String)> = [
        ("syn-id", "identifier"),
        ("syn-id", "syntactic"),
        ("dfg", "identifier"),
        ("dfg", "syntactic"),
    ]
    .iter()
    .map(|(a, b)| (a.to_string(), b.to_string()))
    .collect();
    assert_eq!(keys, want);
    // One snippet: the corpus row is that snippet's own summary and control mean.
    let s = &one["summary"][0];
    let close = |a: &Value, b: &Value| (a.as_f64().unwrap() - b.as_f64().unwrap()).abs() < 1e-5;
    assert!(
        close(&rows[0]["knocked"], &s["mean_delta"]),
        "{} vs {s}",
        rows[0]
    );
    assert!(close(&rows[0]["control"], &s["control"]["mean"]));
    let d = rows[0]["diff"].as_f64().unwrap();
    assert!(
        (d - (rows[0]["knocked"].as_f64().unwrap() - rows[0]["control"].as_f64().unwrap())).abs()
            < 1e-5
    );
    // A second snippet: two of them now, each counted.
    std::fs::write(
        dir.join("b.py"),
        "def scale(v, k):\n    out = v * k\n    return out\n",
    )
    .unwrap();
    let o = env
        .cmd()
        .args([
            "--model",
            &fixture("tiny_llama"),
            "knockout",
            "--edges",
            "syn-id",
            "--control",
            "4",
            "--data",
        ])
        .arg(&dir)
        .output()
        .unwrap();
    let text = ok(&o);
    assert!(
        text.contains("2 snippets (0 failed)") && text.contains("paired bootstrap"),
        "{text}"
    );
    // Several edge sets need --data.
    let e = fails(
        &env.cmd()
            .args([
                "--model",
                &fixture("tiny_llama"),
                "knockout",
                "--edges",
                "syn-id,dfg",
            ])
            .arg(dir.join("a.py"))
            .output()
            .unwrap(),
    );
    assert!(e.contains("--data"), "{e}");
}

#[test]
fn render_draws_the_knockout_figure_with_the_commands_numbers() {
    let env = Env::new();
    let f = write(&env, CODE);
    let svg = env.root.join("ko.svg");
    let o = env
        .cmd()
        .args(["--model", &fixture("tiny_llama"), "render"])
        .arg(&f)
        .args(["--view", "knockout", "--edges", "id-syn", "--out"])
        .arg(&svg)
        .output()
        .unwrap();
    ok(&o);
    let text = std::fs::read_to_string(&svg).unwrap();
    assert!(text.contains("knockout id-syn: "), "{text}");
    assert!(text.contains("per token with id-syn knocked out"));
    // The figure's identifier line is the knockout command's summary.
    let v = run_json(&env, "tiny_llama", &f, &["knockout", "--edges", "id-syn"]);
    let id = &v["summary"][0];
    let c = &id["control"];
    let line = format!(
        "identifier ({} tokens): {:+.2} bits · control {:+.2} [{:+.2}, {:+.2}]",
        id["tokens"],
        id["mean_delta"].as_f64().unwrap(),
        c["mean"].as_f64().unwrap(),
        c["lo"].as_f64().unwrap(),
        c["hi"].as_f64().unwrap()
    );
    assert!(text.contains(&line), "{line} not in the figure");
    // The default edge set, and an encoder's 1 − cos (T5's, without a masked-LM head);
    // one with a masked-LM head (RoBERTa's): Δ PLL bits.
    let default_figure = |model: &str| {
        let o = env
            .cmd()
            .args(["--model", &fixture(model), "render"])
            .arg(&f)
            .args(["--view", "knockout", "--out"])
            .arg(&svg)
            .output()
            .unwrap();
        ok(&o);
        std::fs::read_to_string(&svg).unwrap()
    };
    let text = default_figure("tiny_t5");
    assert!(
        text.contains("knockout syn-id: ") && text.contains("1 − cos per token"),
        "{text}"
    );
    let text = default_figure("tiny_roberta");
    assert!(text.contains("Δ PLL bits per token"), "{text}");
    let o = env
        .cmd()
        .args(["--model", &fixture("tiny_llama"), "render"])
        .arg(&f)
        .args(["--view", "knockout", "--edges", "nope", "--out"])
        .arg(&svg)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
}

/// The encoder–decoders' encoder stack through the other front ends: `compare` against the
/// renamed twin and `probe` on the bundled corpus (what the README says works on them).
#[test]
fn compare_and_probe_run_on_the_encoder_decoders() {
    let env = Env::new();
    let f = write(&env, CODE);
    for m in ["tiny_t5", "tiny_bart"] {
        let o = env
            .cmd()
            .args(["--model", &fixture(m), "compare", "--json"])
            .arg(&f)
            .output()
            .unwrap();
        let v: Value = serde_json::from_str(&ok(&o)).unwrap();
        assert_eq!(v["model"]["stack"], "encoder", "{m}");
        assert!(!v["renamed"].as_object().unwrap().is_empty(), "{m}");
        let o = env
            .cmd()
            .args([
                "--model",
                &fixture(m),
                "--lang",
                "python",
                "probe",
                "--task",
                "depth",
                "--limit",
                "30",
                "--json",
            ])
            .output()
            .unwrap();
        let v: Value = serde_json::from_str(&ok(&o)).unwrap();
        let rows = v["results"].as_array().unwrap();
        assert_eq!(rows.len(), 3, "{m}: embeddings and two layers: {v}");
        assert!(
            rows.iter().all(|r| r["accuracy"].as_f64().unwrap() > 0.0),
            "{m}"
        );
    }
}

/// `ablate --data`: per head and class, the mean over snippets of each snippet's own
/// effect (what `ablate FILE` gives for it), with a bootstrap interval that holds the
/// mean (a single value's interval is that value); JSON, CSV and the text table.
#[test]
fn a_corpus_ablation_averages_each_snippets_grid() {
    let env = Env::new();
    let dir = env.root.join("corpus");
    std::fs::create_dir_all(&dir).unwrap();
    let other = "def twice(x):\n    y = x + x\n    return y\n";
    std::fs::write(dir.join("a.py"), CODE).unwrap();
    std::fs::write(dir.join("b.py"), other).unwrap();
    let one = |f: &str| run_json(&env, "tiny_llama", &dir.join(f), &["ablate"]);
    let (a, b) = (one("a.py"), one("b.py"));
    let corpus = |args: &[&str]| {
        let o = env
            .cmd()
            .args(["--model", &fixture("tiny_llama"), "ablate"])
            .args(args)
            .arg("--data")
            .arg(&dir)
            .output()
            .unwrap();
        ok(&o)
    };
    let v: Value = serde_json::from_str(&corpus(&["--json"])).unwrap();
    assert_eq!(
        (v["snippets"].as_u64(), v["failed"].as_u64()),
        (Some(2), Some(0))
    );
    assert_eq!(v["measure"], "bits");
    let heads = v["heads"].as_array().unwrap();
    let per_a = a["heads"].as_array().unwrap();
    assert_eq!(
        heads.len(),
        per_a.len() * 2,
        "identifier and syntactic per head"
    );
    for (k, h) in heads.iter().enumerate() {
        let (ha, hb) = (&per_a[k / 2], &b["heads"][k / 2]);
        assert_eq!((&h["layer"], &h["head"]), (&ha["layer"], &ha["head"]));
        let class = ["identifier", "syntactic"][k % 2];
        assert_eq!(h["class"], class);
        let vals: Vec<f64> = [ha, hb].iter().filter_map(|x| x[class].as_f64()).collect();
        assert_eq!(h["snippets"].as_u64(), Some(vals.len() as u64));
        let want = vals.iter().sum::<f64>() / vals.len() as f64;
        let mean = h["mean"].as_f64().unwrap();
        assert!(
            (mean - want).abs() < 1e-5 * want.abs().max(1.0),
            "{h} vs {want}"
        );
        let (lo, hi) = (h["lo"].as_f64().unwrap(), h["hi"].as_f64().unwrap());
        assert!(lo <= mean + 1e-9 && mean <= hi + 1e-9, "{h}");
        assert!(
            lo >= vals.iter().cloned().fold(f64::MAX, f64::min) - 1e-9,
            "{h}"
        );
    }
    let csv = corpus(&["--csv"]);
    assert!(csv.starts_with("layer,head,class,snippets,mean,lo,hi\n"));
    assert_eq!(csv.lines().count(), heads.len() + 1);
    let text = corpus(&[]);
    assert!(
        text.contains("identifier: the heads that matter most"),
        "{text}"
    );
    assert!(text.contains("2 snippets (0 failed)"), "{text}");
    // One of file and --data is needed.
    let o = env
        .cmd()
        .args(["--model", &fixture("tiny_llama"), "ablate"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
}

/// `render --view ablation` and `--view lens` through the binary: SVG and PNG, each
/// cell's number the `ablate` and `lens` commands' own; an encoder's lens is a one-line
/// error.
#[test]
fn render_draws_the_ablation_and_lens_figures_with_the_commands_numbers() {
    let env = Env::new();
    let f = write(&env, CODE);
    let render = |view: &str, out: &str| {
        let p = env.root.join(out);
        let o = env
            .cmd()
            .args(["--model", &fixture("tiny_llama"), "render"])
            .arg(&f)
            .args(["--view", view, "--out"])
            .arg(&p)
            .output()
            .unwrap();
        ok(&o);
        p
    };
    let svg = std::fs::read_to_string(render("ablation", "ab.svg")).unwrap();
    assert!(
        svg.contains("ablation effect on identifiers")
            && svg.contains("ablation effect on syntactic tokens")
            && svg.contains("each head zeroed in turn, mean surprisal change in bits"),
        "{svg}"
    );
    let v = run_json(&env, "tiny_llama", &f, &["ablate"]);
    let heads = v["heads"].as_array().unwrap();
    // The first grid is the identifiers': its cells, in order, are `ablate`'s.
    let (ids, _) = svg
        .split_once("ablation effect on syntactic tokens")
        .unwrap();
    for h in heads {
        let cell = format!(
            "L{} H{}: {:.4}<",
            h["layer"],
            h["head"],
            h["identifier"].as_f64().unwrap()
        );
        assert!(ids.contains(&cell), "{cell} not in the figure");
    }
    let png = std::fs::read(render("ablation", "ab.png")).unwrap();
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
    // The explorer's screen on an ablation score: the grid filled, the status line's
    // summary.
    let txt = env.root.join("screen.txt");
    let o = env
        .cmd()
        .args(["--model", &fixture("tiny_llama"), "render"])
        .arg(&f)
        .args([
            "--view",
            "screen",
            "--metric",
            "ablation_syntactic",
            "--out",
        ])
        .arg(&txt)
        .output()
        .unwrap();
    ok(&o);
    let screen = std::fs::read_to_string(&txt).unwrap();
    assert!(
        screen.contains("ablation: syn [s]") && screen.contains("identifiers suffer most from"),
        "{screen}"
    );

    let svg = std::fs::read_to_string(render("lens", "lens.svg")).unwrap();
    assert!(svg.contains("logit lens: each layer"), "{svg}");
    let v = run_json(&env, "tiny_llama", &f, &["lens"]);
    let tok = v["tokens"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["coarse"] == "identifier" && !t["layers"][1].is_null())
        .unwrap();
    for c in tok["layers"].as_array().unwrap() {
        let cell = format!(
            "at L{}: top-1 «{}», p(",
            c["layer"],
            c["top"].as_str().unwrap()
        );
        let num = format!(") {:.4}, rank {}<", c["prob"].as_f64().unwrap(), c["rank"]);
        assert!(
            svg.lines().any(|l| l.contains(&cell) && l.contains(&num)),
            "{cell}…{num} not in the figure"
        );
    }
    let png = std::fs::read(render("lens", "lens.png")).unwrap();
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
    // An encoder has no lens: one line naming why.
    let o = env
        .cmd()
        .args(["--model", &fixture("tiny_roberta"), "render"])
        .arg(&f)
        .args(["--view", "lens", "--out"])
        .arg(env.root.join("x.svg"))
        .output()
        .unwrap();
    let e = fails(&o);
    assert!(
        e.contains("--view lens") && e.contains("is an encoder"),
        "{e}"
    );
}

/// On an encoder–decoder's decoder stack the causal tests run on the decoder's
/// self-attention with seq2seq surprisal (the numbers: `causal_reference`), on its cross
/// stack on the cross-attention with the same surprisal (CodeT5+'s: its one
/// cross-attention; its lens refused in one line).
#[test]
fn causal_tests_run_on_the_decoder_and_cross_stacks() {
    let env = Env::new();
    let f = write(&env, CODE);
    for name in ["tiny_t5", "tiny_bart"] {
        let v = run_json(
            &env,
            name,
            &f,
            &[
                "--stack",
                "decoder",
                "knockout",
                "--edges",
                "syn-id",
                "--control",
                "3",
            ],
        );
        assert_eq!(
            (v["command"].as_str(), v["measure"].as_str()),
            (Some("knockout"), Some("bits"))
        );
        assert_eq!(v["model"]["stack"], "decoder");
        assert!(v["blocked"]["token_pairs"].as_u64().unwrap() > 0, "{name}");
        let tokens = v["tokens"].as_array().unwrap();
        // The first code token is scored too (from the decoder's first position).
        assert!(
            tokens[0]["bits"].as_f64().is_some_and(|b| b > 0.0),
            "{name}"
        );
        assert!(
            tokens
                .iter()
                .any(|t| t["delta_bits"].as_f64().is_some_and(|d| d != 0.0)),
            "{name}: the knockout changes the surprisal"
        );
        let a = run_json(&env, name, &f, &["--stack", "decoder", "ablate"]);
        assert_eq!(
            a["heads"].as_array().unwrap().len(),
            4,
            "1 decoder layer x 4 heads"
        );
        assert!(a["heads"]
            .as_array()
            .unwrap()
            .iter()
            .any(|h| h["all"].as_f64().is_some_and(|d| d != 0.0)));
        let o = env
            .cmd()
            .args(["--model", &fixture(name), "lens"])
            .arg(&f)
            .output()
            .unwrap();
        let line = fails(&o);
        assert!(
            line.contains("encoder stack") && line.contains("--stack decoder"),
            "{line}"
        );
        let l = run_json(&env, name, &f, &["lens", "--stack", "decoder"]);
        assert_eq!(
            l["layers"], 2,
            "the decoder's embeddings and its one layer's output"
        );
        // The cross stack: the knockout and the ablation in the cross-attention, the
        // decoder's surprisal measured (the numbers: `t5_bart_reference`); its lens is the
        // decoder stack's (the same residual stream), value for value.
        let k = run_json(
            &env,
            name,
            &f,
            &["--stack", "cross", "knockout", "--edges", "syn-id"],
        );
        assert_eq!(
            (k["measure"].as_str(), k["model"]["stack"].as_str()),
            (Some("bits"), Some("cross"))
        );
        assert!(k["blocked"]["token_pairs"].as_u64().unwrap() > 0, "{name}");
        assert_eq!(
            k["tokens"][0]["bits"], v["tokens"][0]["bits"],
            "{name}: the same unmodified surprisal as the decoder stack's"
        );
        let a = run_json(&env, name, &f, &["--stack", "cross", "ablate"]);
        assert_eq!(a["heads"].as_array().unwrap().len(), 4, "{name}");
        let mut lc = run_json(&env, name, &f, &["lens", "--stack", "cross"]);
        assert_eq!(lc["model"]["stack"], "cross");
        let mut ld = l.clone();
        lc["model"]["stack"] = serde_json::Value::Null;
        ld["model"]["stack"] = serde_json::Value::Null;
        assert_eq!(
            lc, ld,
            "{name}: the cross stack's lens is the decoder stack's"
        );
    }
    // CodeT5+'s cross stack (one cross-attention inside the last decoder block): the
    // knockout and the ablation run there (the numbers: `t5_bart_reference`), the lens is
    // refused in one line.
    let k = run_json(
        &env,
        "tiny_codet5p",
        &f,
        &["--stack", "cross", "knockout", "--edges", "syn-id"],
    );
    assert_eq!(k["layers"], serde_json::json!([1]));
    let a = run_json(&env, "tiny_codet5p", &f, &["--stack", "cross", "ablate"]);
    let heads = a["heads"].as_array().unwrap();
    assert_eq!(heads.len(), 8, "one row: 1 layer x 8 heads");
    assert!(heads.iter().all(|h| h["layer"] == 1));
    let o = env
        .cmd()
        .args([
            "--model",
            &fixture("tiny_codet5p"),
            "--stack",
            "cross",
            "lens",
        ])
        .arg(&f)
        .output()
        .unwrap();
    let line = fails(&o);
    assert!(
        line.contains("CodeT5+'s cross stack") && line.contains("--stack decoder"),
        "{line}"
    );
}
