//! Tiny random-weight decoders (Llama with GQA + linear rope scaling + untied head + BOS;
//! Qwen2 with one KV head + QKV biases + tied head + no BOS; GPT-2 with
//! `scale_attn_by_inverse_layer_idx` + tied head) against Hugging Face
//! transformers 5.24 (eager attention), through the real loading path. Fixtures made by
//! `tools/reference/tiny_decoder_reference.py`.

use codescope::model::source::{ModelFiles, Weights};
use codescope::model::{ForwardOptions, LoadedModel, Trace};
use serde_json::Value;

fn load(name: &str) -> (LoadedModel, Value) {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name);
    let files = ModelFiles::from_dir(&dir, name.into()).unwrap();
    assert!(matches!(files.weights, Weights::Safetensors(_)));
    let m = LoadedModel::load(&files).unwrap();
    let r: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("reference.json")).unwrap())
            .unwrap();
    (m, r)
}

fn hidden_opts() -> ForwardOptions<'static> {
    ForwardOptions {
        hidden: true,
        cancel: None,
    }
}

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap()
}

/// Compare one fixture; returns the worst (attention, hidden, logits, surprisal) diffs.
fn check(name: &str, arch: &str, bos: bool) -> [f64; 4] {
    let (m, r) = load(name);
    assert_eq!(m.info.architecture, arch);
    assert!(m.info.causal);
    assert_eq!(m.info.window, 64);
    let layers = r["attention"].as_array().unwrap().len();
    assert_eq!(
        (m.info.layers, m.info.heads, m.info.hidden_size),
        (layers, 4, 32)
    );
    let text = r["text"].as_str().unwrap();
    let t = m.trace_lm(text, &hidden_opts()).unwrap();
    let ids: Vec<u32> = t.tokens.iter().map(|s| s.id).collect();
    let want: Vec<u32> = r["ids"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_u64().unwrap() as u32)
        .collect();
    assert_eq!(ids, want);
    assert_eq!(t.tokens[0].special, bos, "BOS per post-processor");
    for (i, o) in r["offsets"].as_array().unwrap().iter().enumerate() {
        let s = &t.tokens[i];
        assert_eq!(s.special, r["special"][i].as_u64().unwrap() == 1);
        if !s.special {
            let (a, b) = (
                o[0].as_u64().unwrap() as usize,
                o[1].as_u64().unwrap() as usize,
            );
            assert_eq!((s.start, s.end), (a, b), "offset {i}");
        }
    }
    let n = ids.len();
    let mut worst = [0.0f64; 4];
    for l in 0..layers {
        for h in 0..4 {
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
    for l in 0..=layers {
        for p in 0..n {
            for (j, &v) in hs.vector(l, p).iter().enumerate() {
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

#[test]
fn tiny_llama_matches_transformers() {
    let w = check("tiny_llama", "llama", true);
    eprintln!("tiny_llama worst diffs (attention, hidden, logits, surprisal bits): {w:?}");
}

/// Gemma 3 from safetensors: sliding (window 8) / global (linear rope scaling) /
/// sliding layers, qk-norm, `query_pre_attn_scalar` != head_dim, soft-capped logits.
#[test]
fn tiny_gemma3_matches_transformers() {
    let w = check("tiny_gemma3", "gemma3", true);
    eprintln!("tiny_gemma3 worst diffs (attention, hidden, logits, surprisal bits): {w:?}");
}

#[test]
fn tiny_gpt2_matches_transformers() {
    let w = check("tiny_gpt2", "gpt2", false);
    eprintln!("tiny_gpt2 worst diffs (attention, hidden, logits, surprisal bits): {w:?}");
}

#[test]
fn tiny_qwen2_matches_transformers() {
    let w = check("tiny_qwen2", "qwen2", false);
    eprintln!("tiny_qwen2 worst diffs (attention, hidden, logits, surprisal bits): {w:?}");
}

fn causal_invariants(t: &Trace) {
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

#[test]
fn causal_rows_sum_to_one_and_deterministic() {
    for name in ["tiny_llama", "tiny_qwen2", "tiny_gpt2", "tiny_gemma3"] {
        let (m, _) = load(name);
        let text = "for x in items:\n    total += x.price\n";
        let a = m.trace_lm(text, &hidden_opts()).unwrap();
        causal_invariants(&a);
        let b = m.trace_lm(text, &hidden_opts()).unwrap();
        assert_eq!(a.attention.layers, b.attention.layers);
        assert_eq!(
            a.hidden.as_ref().unwrap().layers,
            b.hidden.as_ref().unwrap().layers
        );
        assert_eq!(a.surprisal, b.surprisal);
        // The plain trace computes the same attention without the LM head.
        let c = m.trace(text, &ForwardOptions::default()).unwrap();
        assert_eq!(a.attention.layers, c.attention.layers);
        assert!(c.surprisal.is_none() && c.hidden.is_none());
        // A causal model's prefix does not see what follows.
        let ids: Vec<u32> = a.tokens.iter().map(|s| s.id).collect();
        let k = ids.len() / 2;
        let p = m
            .forward_ids(&ids[..k], &ForwardOptions::default())
            .unwrap();
        for l in 0..2 {
            for h in 0..4 {
                for q in 0..k {
                    for j in 0..k {
                        let d = (p.attention.get(l, h, q, j) - a.attention.get(l, h, q, j)).abs();
                        assert!(d < 1e-5, "{name} prefix attention differs");
                    }
                }
            }
        }
    }
}

#[test]
fn window_truncation_keeps_bos() {
    let (m, _) = load("tiny_llama");
    let text = "def add(a, b):\n    return a + b\n".repeat(20);
    let t = m.trace_lm(&text, &ForwardOptions::default()).unwrap();
    assert_eq!(t.tokens.len(), 64);
    assert!(t.truncated > 0);
    assert!(t.tokens[0].special && t.tokens[1..].iter().all(|s| !s.special));
    causal_invariants(&t);
    let s = t.surprisal.unwrap();
    assert_eq!(s.bits.len(), 64);
    assert!(s.bits[1..]
        .iter()
        .all(|b| b.is_some_and(|v| v.is_finite() && v >= 0.0)));
    let (q, _) = load("tiny_qwen2");
    let t = q.trace(&text, &ForwardOptions::default()).unwrap();
    assert_eq!(t.tokens.len(), 64);
    assert!(t.tokens.iter().all(|s| !s.special));
}

#[test]
fn trace_json_has_surprisal_fields() {
    let (m, _) = load("tiny_qwen2");
    let t = m.trace_lm("x = 1\n", &ForwardOptions::default()).unwrap();
    let v = serde_json::to_value(t.json()).unwrap();
    let s = v["surprisal"].as_array().unwrap();
    assert_eq!(s.len(), t.tokens.len());
    assert!(s[0].is_null() && s[1].is_f64());
    let top = v["top_next"].as_array().unwrap();
    assert_eq!(top.len(), t.tokens.len());
    assert_eq!(top[0].as_array().unwrap().len(), 5);
    assert!(top[0][0]["id"].is_u64() && top[0][0]["token"].is_string() && top[0][0]["p"].is_f64());
    let plain = m.trace("x = 1\n", &ForwardOptions::default()).unwrap();
    let v = serde_json::to_value(plain.json()).unwrap();
    assert!(v.get("surprisal").is_none());
}
