//! `codescope trace --surprisal` end to end on the tiny decoder fixtures, plus the
//! decoder paths the reference test does not reach (cancellation, encoders refusing
//! surprisal).

use std::path::PathBuf;

use codescope::model::source::ModelFiles;
use codescope::model::{ForwardOptions, LoadedModel};

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

fn run(args: &[&str]) -> (bool, String, String) {
    let root = tempfile::tempdir().unwrap();
    let tmp = root.path();
    let input = tmp.join("snippet.py");
    std::fs::write(&input, "def add(a, b):\n    return a + b\n").unwrap();
    let out = crate::cli_sources::sandboxed(tmp)
        .env("HF_HUB_OFFLINE", "1")
        .args(args)
        .arg(&input)
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn trace_surprisal_json_and_summary() {
    let dir = fixture("tiny_llama");
    let dir = dir.to_str().unwrap();
    let (ok, out, err) = run(&["trace", "--model", dir, "--surprisal", "--json"]);
    assert!(ok, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let n = v["tokens"].as_array().unwrap().len();
    assert_eq!(v["tokens"][0]["special"], true, "BOS");
    let s = v["surprisal"].as_array().unwrap();
    assert_eq!(s.len(), n);
    assert!(s[0].is_null() && s[1..].iter().all(|b| b.as_f64().unwrap() >= 0.0));
    let top = v["top_next"].as_array().unwrap();
    assert_eq!(top.len(), n);
    for row in top {
        let row = row.as_array().unwrap();
        assert_eq!(row.len(), 5);
        let ps: Vec<f64> = row.iter().map(|p| p["p"].as_f64().unwrap()).collect();
        assert!(ps.windows(2).all(|w| w[0] >= w[1]), "best first");
    }
    // Without the flag: no LM fields.
    let (ok, out, _) = run(&["trace", "--model", dir, "--json"]);
    assert!(ok);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert!(v.get("surprisal").is_none() && v.get("top_next").is_none());
    // Human summary: perplexity and the most surprising tokens.
    let (ok, out, err) = run(&["trace", "--model", dir, "--surprisal"]);
    assert!(ok, "{err}");
    assert!(out.contains("(llama, 2 layers x 4 heads"), "{out}");
    assert!(out.contains("perplexity "), "{out}");
    assert!(out.contains("most surprising tokens"), "{out}");
}

#[test]
fn encoders_refuse_surprisal() {
    let dir = fixture("tiny_roberta");
    let (ok, _, err) = run(&["trace", "--model", dir.to_str().unwrap(), "--surprisal"]);
    assert!(!ok);
    assert!(err.contains("no language-model head"), "{err}");
}

#[test]
fn decoder_cancel_stops_between_layers() {
    let files = ModelFiles::from_dir(&fixture("tiny_qwen2"), "tiny_qwen2".into()).unwrap();
    let m = LoadedModel::load(&files).unwrap();
    let cancel = |layer: usize| layer >= 1;
    let err = m
        .trace_lm(
            "x = 1\n",
            &ForwardOptions {
                hidden: false,
                cancel: Some(&cancel),
                ..Default::default()
            },
        )
        .expect_err("cancelled");
    assert!(matches!(err, codescope::Error::Cancelled), "{err}");
}

/// A copy of the tiny Llama with its `config.json` edited by `f`.
fn llama_with_config(f: impl Fn(&mut serde_json::Value)) -> (tempfile::TempDir, PathBuf) {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("m");
    std::fs::create_dir_all(&dir).unwrap();
    for name in ["model.safetensors", "tokenizer.json"] {
        std::fs::copy(fixture("tiny_llama").join(name), dir.join(name)).unwrap();
    }
    let mut cfg: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(fixture("tiny_llama").join("config.json")).unwrap(),
    )
    .unwrap();
    f(&mut cfg);
    std::fs::write(dir.join("config.json"), cfg.to_string()).unwrap();
    (root, dir)
}

#[test]
fn transformers4_rope_layout_loads_the_same() {
    // deepseek-coder's config.json: `rope_theta` at the top, `rope_scaling.type`.
    let (_root, dir) = llama_with_config(|c| {
        let o = c.as_object_mut().unwrap();
        o.remove("rope_parameters");
        o.insert("rope_theta".into(), 10000.0.into());
        o.insert(
            "rope_scaling".into(),
            serde_json::json!({"type": "linear", "factor": 2.0}),
        );
    });
    let old = LoadedModel::load(&ModelFiles::from_dir(&dir, "old".into()).unwrap()).unwrap();
    let new =
        LoadedModel::load(&ModelFiles::from_dir(&fixture("tiny_llama"), "new".into()).unwrap())
            .unwrap();
    let text = "def add(a, b):\n    return a + b\n";
    let a = old.trace(text, &ForwardOptions::default()).unwrap();
    let b = new.trace(text, &ForwardOptions::default()).unwrap();
    assert_eq!(a.attention.layers, b.attention.layers);
    // And the scaling matters: without it the attention differs.
    let (_root2, dir2) = llama_with_config(|c| {
        c.as_object_mut().unwrap().remove("rope_parameters");
    });
    let plain = LoadedModel::load(&ModelFiles::from_dir(&dir2, "plain".into()).unwrap()).unwrap();
    let c = plain.trace(text, &ForwardOptions::default()).unwrap();
    assert_ne!(c.attention.layers, b.attention.layers);
}

#[test]
fn unsupported_rope_scaling_is_a_config_error() {
    let (_root, dir) = llama_with_config(|c| {
        c["rope_parameters"] =
            serde_json::json!({"rope_type": "llama3", "factor": 8.0, "rope_theta": 500000.0});
    });
    let err = LoadedModel::load(&ModelFiles::from_dir(&dir, "x".into()).unwrap())
        .err()
        .expect("refused");
    let msg = err.to_string();
    assert!(
        msg.contains("bad model config") && msg.contains("'llama3'"),
        "{msg}"
    );
}
