//! Shared by the decoder tests (`decoder_reference.rs`, `codegen_bigcode_reference.rs`,
//! `decoder_invariants.rs`, `stream.rs`): fixture loading and the comparison of one tiny model
//! with its transformers reference (ids, offsets, attention, hidden states, logits,
//! surprisal, top-5 predictions).

use std::path::{Path, PathBuf};

use codescope::model::source::{ModelFiles, Weights};
use codescope::model::{ForwardOptions, LoadedModel, Trace};
use serde_json::Value;

/// Every tiny decoder fixture in `tests/fixtures`, one per family and attention layout.
pub const DECODERS: [&str; 14] = [
    "tiny_llama",
    "tiny_qwen2",
    "tiny_gpt2",
    "tiny_gemma3",
    "tiny_codegen",
    "tiny_starcoder",
    "tiny_bigcode_mha",
    "tiny_qwen3",
    "tiny_mistral",
    "tiny_starcoder2",
    "tiny_gemma",
    "tiny_gemma2",
    "tiny_granite",
    "tiny_phi3",
];

/// The fixtures of the newer code-model families (`families_reference`).
pub const FAMILIES: [&str; 7] = [
    "tiny_qwen3",
    "tiny_mistral",
    "tiny_starcoder2",
    "tiny_gemma",
    "tiny_gemma2",
    "tiny_granite",
    "tiny_phi3",
];

pub fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

pub fn reference(name: &str) -> Value {
    serde_json::from_str(&std::fs::read_to_string(fixture(name).join("reference.json")).unwrap())
        .unwrap()
}

pub fn load(name: &str) -> LoadedModel {
    let files = ModelFiles::from_dir(&fixture(name), name.into()).unwrap();
    assert!(matches!(files.weights, Weights::Safetensors(_)));
    LoadedModel::load(&files).unwrap()
}

pub fn hidden_opts() -> ForwardOptions<'static> {
    ForwardOptions {
        hidden: true,
        cancel: None,
        ..Default::default()
    }
}

pub fn f(v: &Value) -> f64 {
    v.as_f64().unwrap()
}

/// Compare one model with its reference; returns the worst (attention, hidden, logits,
/// surprisal) diffs.
pub fn check(m: &LoadedModel, r: &Value, name: &str) -> [f64; 4] {
    let (layers, heads) = (m.info.layers, m.info.heads);
    let text = r["text"].as_str().unwrap();
    let t = m.trace_lm(text, &hidden_opts()).unwrap();
    let ids: Vec<u32> = t.tokens.iter().map(|s| s.id).collect();
    let want: Vec<u32> = r["ids"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_u64().unwrap() as u32)
        .collect();
    assert_eq!(ids, want, "{name} ids");
    for (i, o) in r["offsets"].as_array().unwrap().iter().enumerate() {
        let s = &t.tokens[i];
        assert_eq!(s.special, r["special"][i].as_u64().unwrap() == 1);
        if s.special {
            continue; // specials carry no span
        }
        let (a, b) = (
            o[0].as_u64().unwrap() as usize,
            o[1].as_u64().unwrap() as usize,
        );
        assert_eq!((s.start, s.end), (a, b), "{name} offset {i}");
    }
    let n = ids.len();
    let mut worst = [0.0f64; 4];
    assert_eq!(r["attention"].as_array().unwrap().len(), layers);
    assert_eq!(r["attention"][0].as_array().unwrap().len(), heads);
    for l in 0..layers {
        for h in 0..heads {
            for q in 0..n {
                for k in 0..n {
                    let d =
                        (t.attention.get(l, h, q, k) as f64 - f(&r["attention"][l][h][q][k])).abs();
                    worst[0] = worst[0].max(d);
                    assert!(d < 1e-4, "{name} attention {l} {h} {q} {k}: {d}");
                }
            }
        }
    }
    let hs = t.hidden.as_ref().unwrap();
    assert_eq!(hs.layers.len(), layers + 1);
    assert_eq!(r["hidden_states"].as_array().unwrap().len(), layers + 1);
    for l in 0..=layers {
        for p in 0..n {
            let v = hs.vector(l, p);
            assert_eq!(v.len(), m.info.hidden_size);
            for (j, &v) in v.iter().enumerate() {
                let d = (v as f64 - f(&r["hidden_states"][l][p][j])).abs();
                worst[1] = worst[1].max(d);
                assert!(d < 1e-3, "{name} hidden {l} {p} {j}: {d}");
            }
        }
    }
    let logits = m.logits_ids(&ids).unwrap();
    let vocab = logits.len() / n;
    assert_eq!(vocab, r["logits"][0].as_array().unwrap().len());
    for p in 0..n {
        for j in 0..vocab {
            let d = (logits[p * vocab + j] as f64 - f(&r["logits"][p][j])).abs();
            worst[2] = worst[2].max(d);
            assert!(d < 1e-3, "{name} logits {p} {j}: {d}");
        }
    }
    let s = t.surprisal.as_ref().unwrap();
    assert_eq!(s.bits[0], None);
    assert!(r["surprisal"][0].is_null());
    for i in 1..n {
        let d = (s.bits[i].unwrap() as f64 - f(&r["surprisal"][i])).abs();
        worst[3] = worst[3].max(d);
        assert!(d < 1e-3, "{name} surprisal {i}: {d}");
    }
    for i in 0..n {
        assert_eq!(s.top_next[i].len(), 5);
        for (k, pred) in s.top_next[i].iter().enumerate() {
            let w = &r["top_next"][i][k];
            let dp = (pred.p as f64 - f(&w["p"])).abs();
            assert!(dp < 1e-4, "{name} top_next {i} {k}: {dp}");
            // Near-ties may swap order; the id must match whenever probabilities differ.
            let next_gap = r["top_next"][i]
                .as_array()
                .unwrap()
                .iter()
                .filter(|o| o["id"] != w["id"])
                .map(|o| (f(&o["p"]) - f(&w["p"])).abs())
                .fold(f64::INFINITY, f64::min);
            if next_gap > 1e-4 {
                assert_eq!(pred.id as u64, w["id"].as_u64().unwrap(), "{name} {i} {k}");
                assert_eq!(pred.token.as_deref(), w["token"].as_str());
            }
        }
    }
    worst
}

pub fn causal_invariants(t: &Trace) {
    let n = t.tokens.len();
    for l in 0..t.attention.num_layers() {
        for h in 0..t.attention.heads {
            for q in 0..n {
                let row = t.attention.row(l, h, q);
                let sum: f32 = row.iter().sum();
                assert!((sum - 1.0).abs() < 1e-5, "row {l} {h} {q} sums to {sum}");
                assert!(row[q + 1..].iter().all(|&v| v == 0.0), "above diagonal");
            }
        }
    }
}
