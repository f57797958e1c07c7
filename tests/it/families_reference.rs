//! The newer code-model families (Qwen3, Mistral, StarCoder2, Gemma 1, Gemma 2, Granite,
//! Phi-3) on tiny random-weight fixtures against Hugging Face transformers 5.24 (eager
//! attention) through the real loading path — attention within 1e-4, hidden states,
//! logits and surprisal within 1e-3 (`decoder_common::check`) — and end to end through
//! the binary: `trace --surprisal --json`, `analyze --json` (trained and with
//! `--random-weights`), `knockout --json`, `probe --json` on each (the explorer:
//! `tui_app`), plus the config settings each family
//! refuses or defaults. Fixtures made by
//! `tools/reference/tiny_llm_families_reference.py`.

use std::path::PathBuf;

use codescope::model::source::ModelFiles;
use codescope::model::{ForwardOptions, LoadedModel};
use serde_json::Value;

use crate::cli_sources::{fails, ok, Env};
use crate::decoder_common::{self, causal_invariants, load, reference, FAMILIES};

/// `(fixture, architecture, layers, heads, BOS)` of every new family's fixture.
const SHAPES: [(&str, &str, usize, usize, bool); 7] = [
    ("tiny_qwen3", "qwen3", 2, 4, false),
    ("tiny_mistral", "mistral", 2, 4, true),
    ("tiny_starcoder2", "starcoder2", 2, 4, false),
    ("tiny_gemma", "gemma", 2, 4, true),
    ("tiny_gemma2", "gemma2", 3, 4, true),
    ("tiny_granite", "granite", 2, 4, true),
    ("tiny_phi3", "phi3", 2, 4, true),
];

/// Compare one fixture with transformers; returns the worst (attention, hidden, logits,
/// surprisal) differences.
fn check(name: &str) -> [f64; 4] {
    let &(_, arch, layers, heads, bos) = SHAPES.iter().find(|s| s.0 == name).unwrap();
    let (m, r) = (load(name), reference(name));
    assert_eq!(m.info.architecture, arch);
    assert!(m.info.causal);
    assert_eq!(m.info.window, 64);
    assert_eq!(
        (m.info.layers, m.info.heads, m.info.hidden_size),
        (layers, heads, 32)
    );
    let t = m
        .trace(r["text"].as_str().unwrap(), &ForwardOptions::default())
        .unwrap();
    assert_eq!(t.tokens[0].special, bos, "{name}: BOS per post-processor");
    causal_invariants(&t);
    let w = decoder_common::check(&m, &r, name);
    eprintln!("{name} worst diffs (attention, hidden, logits, surprisal bits): {w:?}");
    w
}

/// In layer `layer`, every query attends to every earlier key less than `window`
/// positions back and to none further (every head); `None`: to every earlier key. The
/// text is longer than the window, so it bites.
fn assert_window(m: &LoadedModel, text: &str, layer: usize, window: Option<usize>) {
    let t = m.trace(text, &ForwardOptions::default()).unwrap();
    let n = t.tokens.len();
    let window = window.unwrap_or(usize::MAX);
    assert!(
        window == usize::MAX || n > window,
        "{n} tokens, window {window}"
    );
    for h in 0..t.attention.heads {
        for q in 0..n {
            let row = t.attention.row(layer, h, q);
            for (k, &p) in row.iter().enumerate().take(q + 1) {
                if q - k >= window {
                    assert_eq!(p, 0.0, "layer {layer} head {h}: {q} sees {k}");
                } else {
                    assert!(p > 0.0, "layer {layer} head {h}: {q} misses {k}");
                }
            }
        }
    }
}

#[test]
fn tiny_qwen3_matches_transformers() {
    check("tiny_qwen3");
}

#[test]
fn tiny_mistral_matches_transformers() {
    check("tiny_mistral");
    // Sliding window 6 on every layer.
    let (m, r) = (load("tiny_mistral"), reference("tiny_mistral"));
    for l in 0..2 {
        assert_window(&m, r["text"].as_str().unwrap(), l, Some(6));
    }
}

#[test]
fn tiny_starcoder2_matches_transformers() {
    check("tiny_starcoder2");
    let (m, r) = (load("tiny_starcoder2"), reference("tiny_starcoder2"));
    for l in 0..2 {
        assert_window(&m, r["text"].as_str().unwrap(), l, Some(8));
    }
}

#[test]
fn tiny_gemma_matches_transformers() {
    check("tiny_gemma");
}

#[test]
fn tiny_gemma2_matches_transformers() {
    check("tiny_gemma2");
    // Sliding (6) / global / sliding.
    let (m, r) = (load("tiny_gemma2"), reference("tiny_gemma2"));
    let text = r["text"].as_str().unwrap();
    assert_window(&m, text, 0, Some(6));
    assert_window(&m, text, 1, None);
    assert_window(&m, text, 2, Some(6));
}

#[test]
fn tiny_granite_matches_transformers() {
    check("tiny_granite");
}

#[test]
fn tiny_phi3_matches_transformers() {
    check("tiny_phi3");
    let (m, r) = (load("tiny_phi3"), reference("tiny_phi3"));
    assert_window(&m, r["text"].as_str().unwrap(), 1, Some(7));
}

/// A copy of fixture `name` with its `config.json` edited by `f`.
fn with_config(name: &str, f: impl Fn(&mut Value)) -> (tempfile::TempDir, PathBuf) {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join(name);
    std::fs::create_dir_all(&dir).unwrap();
    let src = decoder_common::fixture(name);
    for file in ["model.safetensors", "tokenizer.json"] {
        std::fs::copy(src.join(file), dir.join(file)).unwrap();
    }
    let mut cfg: Value =
        serde_json::from_str(&std::fs::read_to_string(src.join("config.json")).unwrap()).unwrap();
    f(&mut cfg);
    std::fs::write(dir.join("config.json"), cfg.to_string()).unwrap();
    (root, dir)
}

fn load_dir(dir: &std::path::Path) -> codescope::Result<LoadedModel> {
    LoadedModel::load(&ModelFiles::from_dir(dir, "edited".into()).unwrap())
}

fn attention(m: &LoadedModel) -> Vec<Vec<f32>> {
    let text = "for x in items:\n    total += x.price\n";
    m.trace(text, &ForwardOptions::default())
        .unwrap()
        .attention
        .layers
}

#[test]
fn each_setting_of_the_new_families_changes_what_it_should() {
    // Every setting the fixtures exercise matters: with it edited away, the attention
    // (or the logits) differ from the fixture's, which matches transformers.
    for (name, key) in [
        ("tiny_gemma2", "attn_logit_softcapping"),
        ("tiny_granite", "attention_multiplier"),
        ("tiny_granite", "embedding_multiplier"),
        ("tiny_granite", "residual_multiplier"),
        ("tiny_qwen3", "head_dim"),
    ] {
        let base = attention(&load(name));
        let (_root, dir) = with_config(name, |c| {
            let o = c.as_object_mut().unwrap();
            match key {
                // Qwen3 without head_dim takes 128: the checkpoint's shapes refuse it.
                "head_dim" => {
                    o.remove(key);
                }
                "attn_logit_softcapping" => {
                    o.insert(key.into(), Value::Null);
                }
                _ => {
                    o.insert(key.into(), 1.0.into());
                }
            }
        });
        match load_dir(&dir) {
            Ok(m) => assert_ne!(attention(&m), base, "{name} {key}"),
            Err(e) => {
                assert_eq!(key, "head_dim", "{e}");
                assert!(e.to_string().contains("shape"), "{e}");
            }
        }
    }
    // Granite's logits_scaling divides the logits.
    let m = load("tiny_granite");
    let (_root, dir) = with_config("tiny_granite", |c| c["logits_scaling"] = 1.0.into());
    let plain = load_dir(&dir).unwrap();
    let ids = [0u32, 5, 9, 40];
    let (a, b) = (m.logits_ids(&ids).unwrap(), plain.logits_ids(&ids).unwrap());
    for (x, y) in a.iter().zip(&b) {
        assert!((x * 4.0 - y).abs() < 1e-4, "{x} * 4 != {y}");
    }
    // Gemma 1's legacy `hidden_act: gelu` is the tanh form, as transformers reads it.
    let (_root, dir) = with_config("tiny_gemma", |c| c["hidden_act"] = "gelu".into());
    assert_eq!(
        attention(&load_dir(&dir).unwrap()),
        attention(&load("tiny_gemma"))
    );
    // Mistral without a sliding_window key takes transformers' 4096 (no window on 64
    // tokens), with `null` none either: both differ from the fixture's window of 6.
    let base = attention(&load("tiny_mistral"));
    let (_r1, absent) = with_config("tiny_mistral", |c| {
        c.as_object_mut().unwrap().remove("sliding_window");
    });
    let (_r2, null) = with_config("tiny_mistral", |c| c["sliding_window"] = Value::Null);
    let (a, b) = (
        attention(&load_dir(&absent).unwrap()),
        attention(&load_dir(&null).unwrap()),
    );
    assert_eq!(a, b);
    assert_ne!(a, base);
}

#[test]
fn what_the_new_families_do_not_implement_is_refused_in_one_line() {
    let env = Env::new();
    for (name, edit, want) in [
        (
            "tiny_phi3",
            serde_json::json!({"rope_parameters": {"rope_type": "longrope", "rope_theta": 10000.0,
                "short_factor": [1.0, 1.0], "long_factor": [1.0, 1.0]}}),
            "rope scaling 'longrope' is not supported",
        ),
        (
            "tiny_phi3",
            serde_json::json!({"rope_scaling": {"type": "su", "short_factor": [1.0, 1.0]},
                "rope_parameters": null}),
            "rope scaling 'su' is not supported",
        ),
        (
            "tiny_starcoder2",
            serde_json::json!({"hidden_act": "relu"}),
            "unsupported activation_function 'relu'",
        ),
        (
            "tiny_gemma2",
            serde_json::json!({"attn_logit_softcapping": -1.0}),
            "attn_logit_softcapping is -1",
        ),
        (
            "tiny_granite",
            serde_json::json!({"residual_multiplier": 0.0}),
            "residual_multiplier is 0",
        ),
        (
            "tiny_qwen3",
            serde_json::json!({"rope_parameters": {"rope_type": "yarn", "factor": 4.0,
                "rope_theta": 1000000.0}}),
            "rope scaling 'yarn' is not supported",
        ),
    ] {
        let (_root, dir) = with_config(name, |c| {
            for (k, v) in edit.as_object().unwrap() {
                c[k] = v.clone();
            }
        });
        let line = fails(
            &env.cmd()
                .args(["trace", "--model", dir.to_str().unwrap()])
                .arg(env.sample())
                .output()
                .unwrap(),
        );
        assert!(
            line.contains("bad model config") && line.contains(want),
            "{name}: {line}"
        );
    }
}

#[test]
fn unsupported_architecture_lists_the_new_families() {
    let (_root, dir) = with_config("tiny_qwen3", |c| c["model_type"] = "mamba".into());
    let e = load_dir(&dir).err().unwrap().to_string();
    for t in [
        "qwen3",
        "mistral",
        "starcoder2",
        "gemma",
        "gemma2",
        "granite",
        "phi3",
    ] {
        assert!(
            e.contains(&format!(" {t},")) || e.contains(&format!(" {t})")),
            "{e}"
        );
    }
}

/// `codescope ARGS --model FIXTURE snippet.py --json`, parsed.
fn run_json(env: &Env, name: &str, args: &[&str]) -> Value {
    let p = env.root.join("snippet.py");
    std::fs::write(&p, "def area(w, h):\n    total = w * h\n    return total\n").unwrap();
    let o = env
        .cmd()
        .args(args)
        .args(["--model", &crate::cli_sources::fixture(name)])
        .arg(&p)
        .arg("--json")
        .output()
        .unwrap();
    serde_json::from_str(&ok(&o)).unwrap()
}

#[test]
fn trace_analyze_and_knockout_run_on_every_new_family() {
    let env = Env::new();
    for (name, arch, layers, heads, bos) in SHAPES {
        let v = run_json(&env, name, &["trace", "--surprisal"]);
        assert_eq!(v["model"]["architecture"], arch, "{name}");
        assert_eq!(v["model"]["layers"], layers, "{name}");
        assert_eq!(v["model"]["heads"], heads, "{name}");
        let n = v["tokens"].as_array().unwrap().len();
        assert_eq!(v["tokens"][0]["special"], bos, "{name}");
        let s = v["surprisal"].as_array().unwrap();
        assert_eq!(s.len(), n);
        assert!(s[0].is_null() && s[1..].iter().all(|b| b.as_f64().unwrap() >= 0.0));
        assert_eq!(v["top_next"].as_array().unwrap().len(), n);

        let a = run_json(&env, name, &["analyze"]);
        assert_eq!(a["model"]["architecture"], arch, "{name}");
        assert!(
            !a["analysed_tokens"].as_array().unwrap().is_empty(),
            "{name}"
        );
        assert!(
            a["relations"]["ast_motif"]["edges"].as_u64().unwrap() > 0,
            "{name}"
        );
        // The random-weight baseline of the same family.
        let r = run_json(&env, name, &["analyze", "--random-weights", "7"]);
        assert_eq!(r["model"]["random_weights"], 7, "{name}");
        assert_eq!(a["model"]["random_weights"], Value::Null, "{name}");
        assert_eq!(
            r["tokens"], a["tokens"],
            "{name}: the tokenizer is the model's"
        );
        assert_ne!(r["relations"], a["relations"], "{name}");

        let k = run_json(
            &env,
            name,
            &[
                "knockout",
                "--edges",
                "syn-id",
                "--control",
                "3",
                "--seed",
                "1",
            ],
        );
        assert_eq!(k["command"], "knockout", "{name}");
        let want_layers: Vec<usize> = (1..=layers).collect();
        assert_eq!(k["layers"], serde_json::json!(want_layers), "{name}");
        assert!(k["blocked"]["token_pairs"].as_u64().unwrap() > 0, "{name}");
        let tokens = k["tokens"].as_array().unwrap();
        // Every token's knocked-out bits are its bits plus the change.
        for t in tokens.iter().filter(|t| t["bits"].is_f64()) {
            let (b, kb, d) = (
                t["bits"].as_f64().unwrap(),
                t["bits_knocked"].as_f64().unwrap(),
                t["delta_bits"].as_f64().unwrap(),
            );
            assert!((kb - b - d).abs() < 1e-5, "{name} {t}");
        }
        // Knocking out identifiers' syntax edges changes some prediction.
        assert!(
            tokens
                .iter()
                .filter_map(|t| t["delta_bits"].as_f64())
                .any(|d| d.abs() > 1e-6),
            "{name}: the knockout changed nothing"
        );
    }
}

#[test]
fn random_weights_run_on_every_new_family() {
    for name in FAMILIES {
        let files = ModelFiles::from_dir(&decoder_common::fixture(name), name.into()).unwrap();
        let a = LoadedModel::load_with(&files, Some(5)).unwrap();
        let b = LoadedModel::load_with(&files, Some(5)).unwrap();
        let c = LoadedModel::load_with(&files, Some(6)).unwrap();
        let text = "for x in items:\n    total += x.price\n";
        let (ta, tb, tc) = (
            a.trace_lm(text, &ForwardOptions::default()).unwrap(),
            b.trace_lm(text, &ForwardOptions::default()).unwrap(),
            c.trace_lm(text, &ForwardOptions::default()).unwrap(),
        );
        causal_invariants(&ta);
        assert_eq!(ta.attention.layers, tb.attention.layers, "{name}");
        assert_ne!(ta.attention.layers, tc.attention.layers, "{name}");
        // Random weights are not the checkpoint's.
        let trained = load(name).trace(text, &ForwardOptions::default()).unwrap();
        assert_ne!(ta.attention.layers, trained.attention.layers, "{name}");
        assert!(ta.surprisal.unwrap().bits[1..].iter().all(|b| b.is_some()));
    }
}

#[test]
fn the_presets_of_the_new_families_resolve_to_their_hub_ids() {
    let env = Env::new();
    let out = ok(&env.cmd().arg("models").output().unwrap());
    for (preset, repo) in [
        ("qwen3-0.6b", "Qwen/Qwen3-0.6B"),
        ("starcoder2-3b", "bigcode/starcoder2-3b"),
        ("starcoder2-15b", "bigcode/starcoder2-15b"),
        ("codegemma-2b", "google/codegemma-2b"),
        ("gemma2-2b", "google/gemma-2-2b"),
        ("codestral-22b", "mistralai/Codestral-22B-v0.1"),
        ("granite-3.0-2b", "ibm-granite/granite-3.0-2b-base"),
        ("phi-3-mini", "microsoft/Phi-3-mini-4k-instruct"),
    ] {
        let line = out
            .lines()
            .find(|l| l.split_whitespace().next() == Some(preset))
            .unwrap_or_else(|| panic!("{preset} not listed: {out}"));
        let cols: Vec<&str> = line.split_whitespace().collect();
        assert_eq!((cols[1], cols[2]), (repo, "no"), "{line}");
        // Offline, the preset asks for exactly that repository.
        let err = fails(
            &env.cmd()
                .env("HF_HUB_OFFLINE", "1")
                .args(["trace", "--model", preset])
                .arg(env.sample())
                .output()
                .unwrap(),
        );
        assert!(
            err.contains(repo) && err.contains("HF_HUB_OFFLINE"),
            "{err}"
        );
    }
    for t in [
        "qwen3",
        "mistral",
        "starcoder2",
        "gemma2",
        "granite",
        "phi3",
    ] {
        assert!(out.contains(t), "{out}");
    }
}

#[test]
fn probe_runs_on_every_new_family() {
    let env = Env::new();
    for (name, _, layers, _, _) in SHAPES {
        let o = env
            .cmd()
            .args(["--model", &crate::cli_sources::fixture(name)])
            .args([
                "--lang", "python", "probe", "--task", "depth", "--limit", "30",
            ])
            .arg("--json")
            .output()
            .unwrap();
        let v: Value = serde_json::from_str(&ok(&o)).unwrap();
        let rows = v["results"].as_array().unwrap();
        assert_eq!(
            rows.len(),
            layers + 1,
            "{name}: embeddings and every layer: {v}"
        );
        assert!(
            rows.iter().all(|r| r["accuracy"].as_f64().unwrap() > 0.0),
            "{name}"
        );
    }
}
