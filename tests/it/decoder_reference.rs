//! Tiny random-weight decoders (Llama with GQA + linear rope scaling + untied head + BOS;
//! Qwen2 with one KV head + QKV biases + tied head + no BOS; GPT-2 with
//! `scale_attn_by_inverse_layer_idx` + tied head) against Hugging Face
//! transformers 5.24 (eager attention), through the real loading path. Fixtures made by
//! `tools/reference/tiny_decoder_reference.py`.

use crate::decoder_common;

use codescope::model::ForwardOptions;
use decoder_common::{causal_invariants, load, reference};

/// Compare one fixture; returns the worst (attention, hidden, logits, surprisal) diffs.
fn check(name: &str, arch: &str, bos: bool) -> [f64; 4] {
    let (m, r) = (load(name), reference(name));
    assert_eq!(m.info.architecture, arch);
    assert!(m.info.causal);
    assert_eq!(m.info.window, 64);
    let layers = r["attention"].as_array().unwrap().len();
    assert_eq!(
        (m.info.layers, m.info.heads, m.info.hidden_size),
        (layers, 4, 32)
    );
    let t = m
        .trace(r["text"].as_str().unwrap(), &ForwardOptions::default())
        .unwrap();
    assert_eq!(t.tokens[0].special, bos, "BOS per post-processor");
    decoder_common::check(&m, &r, name)
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

#[test]
fn window_truncation_keeps_bos() {
    let m = load("tiny_llama");
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
    let q = load("tiny_qwen2");
    let t = q.trace(&text, &ForwardOptions::default()).unwrap();
    assert_eq!(t.tokens.len(), 64);
    assert!(t.tokens.iter().all(|s| !s.special));
}

#[test]
fn trace_json_has_surprisal_fields() {
    let m = load("tiny_qwen2");
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
