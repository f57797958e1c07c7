//! A tiny random RoBERTa laid out like `microsoft/codebert-base` on the hub — `vocab.json` +
//! `merges.txt` (no tokenizer.json), `pytorch_model.bin` (no safetensors), weights under
//! `roberta.` — against Hugging Face transformers (eager attention). Covers what the
//! MiniLM check cannot: the RoBERTa position offset, the PyTorch-pickle loader and the
//! byte-level BPE fallback with multi-byte characters. Fixture made by
//! `tools/reference/tiny_roberta_reference.py`.

use codescope::model::source::{ModelFiles, Weights};
use codescope::model::{ForwardOptions, LoadedModel};

#[test]
fn tiny_roberta_matches_transformers() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/tiny_roberta");
    let files = ModelFiles::from_dir(&dir, "tiny_roberta".into()).unwrap();
    assert!(matches!(files.weights, Weights::Pth(_)));
    let m = LoadedModel::load(&files).unwrap();
    assert_eq!(m.info.architecture, "roberta");
    assert_eq!(m.info.window, 128);
    let r: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("reference.json")).unwrap())
            .unwrap();
    let text = r["text"].as_str().unwrap();
    let t = m
        .trace(
            text,
            &ForwardOptions {
                hidden: true,
                cancel: None,
                ..Default::default()
            },
        )
        .unwrap();
    let ids: Vec<u64> = t.tokens.iter().map(|s| s.id as u64).collect();
    let want: Vec<u64> = r["ids"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_u64().unwrap())
        .collect();
    assert_eq!(ids, want);
    for (i, o) in r["offsets"].as_array().unwrap().iter().enumerate() {
        let (a, b) = (
            o[0].as_u64().unwrap() as usize,
            o[1].as_u64().unwrap() as usize,
        );
        assert_eq!((t.tokens[i].start, t.tokens[i].end), (a, b), "offset {i}");
    }
    let n = ids.len();
    let mut worst = (0.0f64, 0.0f64);
    for l in 0..2 {
        for h in 0..4 {
            for q in 0..n {
                for k in 0..n {
                    let w = r["attention"][l][h][q][k].as_f64().unwrap();
                    let d = (t.attention.get(l, h, q, k) as f64 - w).abs();
                    worst.0 = worst.0.max(d);
                    assert!(d < 1e-4, "attention {l} {h} {q} {k}");
                }
            }
        }
    }
    let hid = t.hidden.as_ref().unwrap();
    for l in 0..3 {
        for p in 0..n {
            for (d, &x) in hid.vector(l, p).iter().enumerate() {
                let w = r["hidden_states"][l][p][d].as_f64().unwrap();
                let diff = (x as f64 - w).abs();
                worst.1 = worst.1.max(diff);
                assert!(diff < 1e-3, "hidden {l} {p} {d}: {x} vs {w}");
            }
        }
    }
    eprintln!(
        "max |attention diff| {:.2e}, max |hidden diff| {:.2e}",
        worst.0, worst.1
    );
}
