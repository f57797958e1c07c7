//! Tiny random-weight CodeGen (8 heads over the 4 `qkv_proj` shards, partial GPT-J
//! rotary, untied LM head with bias, fp16 weights) and GPTBigCode (multi-query with
//! gelu_pytorch_tanh and tied head; and the non-MQA variant with exact gelu and no
//! attention scaling) against Hugging Face transformers 5.24 (eager attention) on real
//! code, through the real loading path. Fixtures made by
//! `tools/reference/tiny_codegen_bigcode_reference.py`.

use crate::decoder_common;

use codescope::model::source::{ModelFiles, Weights};
use codescope::model::{ForwardOptions, LoadedModel};
use decoder_common::*;

fn check_fixture(name: &str, arch: &str, dims: (usize, usize, usize)) {
    let m = load(name);
    assert_eq!(m.info.architecture, arch);
    assert!(m.info.causal);
    assert_eq!(m.info.window, 64);
    assert_eq!((m.info.layers, m.info.heads, m.info.hidden_size), dims);
    let w = check(&m, &reference(name), name);
    eprintln!("{name} worst diffs (attention, hidden, logits, surprisal bits): {w:?}");
}

#[test]
fn tiny_codegen_matches_transformers() {
    check_fixture("tiny_codegen", "codegen", (2, 8, 48));
}

#[test]
fn tiny_starcoder_matches_transformers() {
    check_fixture("tiny_starcoder", "gpt_bigcode", (2, 4, 32));
}

#[test]
fn tiny_bigcode_mha_matches_transformers() {
    check_fixture("tiny_bigcode_mha", "gpt_bigcode", (2, 4, 32));
}

/// CodeGen's hub checkpoint is a float16 `pytorch_model.bin` with boolean causal-mask
/// buffers: loaded through that path alone, the fixture gives the very same numbers.
#[test]
fn codegen_pytorch_bin_loads_like_safetensors() {
    let dir = tempfile::tempdir().unwrap();
    for f in ["config.json", "tokenizer.json", "pytorch_model.bin"] {
        std::fs::copy(fixture("tiny_codegen").join(f), dir.path().join(f)).unwrap();
    }
    let files = ModelFiles::from_dir(dir.path(), "bin".into()).unwrap();
    assert!(matches!(files.weights, Weights::Pth(_)));
    let bin = LoadedModel::load(&files).unwrap();
    assert_eq!(bin.info.architecture, "codegen");
    let r = reference("tiny_codegen");
    let w = check(&bin, &r, "tiny_codegen (pytorch_model.bin)");
    eprintln!("tiny_codegen from pytorch_model.bin worst diffs: {w:?}");
    let st = load("tiny_codegen");
    let text = r["text"].as_str().unwrap();
    let a = bin.trace_lm(text, &hidden_opts()).unwrap();
    let b = st.trace_lm(text, &hidden_opts()).unwrap();
    assert_eq!(a.attention.layers, b.attention.layers);
    assert_eq!(a.surprisal, b.surprisal);
}

#[test]
fn window_truncation_and_out_of_vocabulary() {
    for name in ["tiny_codegen", "tiny_starcoder", "tiny_bigcode_mha"] {
        let m = load(name);
        let text = "def add(a, b):\n    return a + b\n".repeat(20);
        let t = m.trace_lm(&text, &ForwardOptions::default()).unwrap();
        assert_eq!(t.tokens.len(), 64, "{name}");
        assert!(t.truncated > 0);
        assert!(t.tokens.iter().all(|s| !s.special), "{name}: no BOS");
        causal_invariants(&t);
        let s = t.surprisal.unwrap();
        assert_eq!(s.bits.len(), 64);
        assert!(s.bits[1..]
            .iter()
            .all(|b| b.is_some_and(|v| v.is_finite() && v >= 0.0)));
        // Past the window or the vocabulary: one clear error, no panic.
        let err = m
            .forward_ids(&[1; 65], &ForwardOptions::default())
            .err()
            .unwrap()
            .to_string();
        assert!(err.contains("window of 64"), "{err}");
        let err = m
            .forward_ids(&[1, 100_000], &ForwardOptions::default())
            .err()
            .unwrap()
            .to_string();
        assert!(err.contains("outside the vocabulary"), "{err}");
    }
}
