//! Llama, Qwen2, Qwen3, Phi-3 and Gemma 1 from GGUF: the tiny random fixtures written as
//! llama.cpp's converter writes them (`tools/reference/tiny_gguf_reference.py`: llama.cpp
//! tensor names, Llama's Q/K rows permuted for interleaved rope, linear rope scaling in
//! the metadata, Gemma's norms as `1 + w`; each file but Gemma's, which transformers
//! cannot read, first checked by loading it in transformers). codescope must undo all of it and give
//! the safetensors model's outputs (the fixtures' `reference.json`, transformers 5.24).
//! Gemma 3 from GGUF is checked on the real packaged model (`tests/gemma3_reference.rs`).

use codescope::model::{self, ForwardOptions};
use serde_json::Value;

fn root() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

fn check(name: &str, arch: &str) {
    let path = root().join("tiny_gguf").join(format!("{name}.gguf"));
    let (m, got_arch, _) = model::load_gguf_backbone(&path).unwrap();
    assert_eq!(got_arch, arch);
    assert_eq!(
        (m.layers(), m.heads(), m.hidden_size(), m.window()),
        (2, 4, 32, 64)
    );
    let r: Value = serde_json::from_str(
        &std::fs::read_to_string(root().join(format!("tiny_{name}/reference.json"))).unwrap(),
    )
    .unwrap();
    let ids: Vec<u32> = r["ids"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_u64().unwrap() as u32)
        .collect();
    let n = ids.len();
    let vocab = m.vocab_size();
    let mut logits = Vec::new();
    let opts = ForwardOptions {
        hidden: true,
        cancel: None,
        ..Default::default()
    };
    let cap = m
        .forward_lm(&ids, &opts, &mut |_, block| {
            logits.extend_from_slice(block);
            Ok(())
        })
        .unwrap();
    let mut worst = [0.0f64; 3];
    for l in 0..2 {
        for h in 0..4 {
            for q in 0..n {
                for k in 0..n {
                    let want = r["attention"][l][h][q][k].as_f64().unwrap();
                    let got = cap.attention.layers[l][(h * n + q) * n + k] as f64;
                    worst[0] = worst[0].max((got - want).abs());
                }
            }
        }
    }
    let hidden = cap.hidden.unwrap();
    for (l, layer) in r["hidden_states"].as_array().unwrap().iter().enumerate() {
        for (p, row) in layer.as_array().unwrap().iter().enumerate() {
            for (j, v) in row.as_array().unwrap().iter().enumerate() {
                let got = hidden.layers[l][p * 32 + j] as f64;
                worst[1] = worst[1].max((got - v.as_f64().unwrap()).abs());
            }
        }
    }
    for (p, row) in r["logits"].as_array().unwrap().iter().enumerate() {
        for (j, v) in row.as_array().unwrap().iter().enumerate() {
            worst[2] = worst[2].max((logits[p * vocab + j] as f64 - v.as_f64().unwrap()).abs());
        }
    }
    eprintln!(
        "{name}.gguf: attention {:.1e}, hidden {:.1e}, logits {:.1e}",
        worst[0], worst[1], worst[2]
    );
    assert!(
        worst[0] < 1e-4 && worst[1] < 1e-3 && worst[2] < 1e-3,
        "{name}: {worst:?}"
    );
}

#[test]
fn llama_gguf_with_permuted_qk_and_linear_rope() {
    check("llama", "llama");
}

#[test]
fn qwen2_gguf_with_biases_and_tied_head() {
    check("qwen2", "qwen2");
}

/// Qwen3: `attn_q_norm` / `attn_k_norm`, `head_dim` (16) from `attention.key_length`.
#[test]
fn qwen3_gguf_with_qk_norms_and_its_own_head_dim() {
    check("qwen3", "qwen3");
}

/// Phi-3: fused `attn_qkv` and `ffn_up` (`[gate | up]`), rotary on half of each head
/// (`rope.dimension_count` 4 of 8), sliding window 7.
#[test]
fn phi3_gguf_with_fused_projections_and_partial_rotary() {
    check("phi3", "phi3");
}

/// A 128k-context Phi-3 (llama.cpp writes its longrope factors as tensors) is refused in
/// one line, not run with the wrong rope.
#[test]
fn phi3_gguf_with_longrope_factors_is_refused() {
    let path = root().join("tiny_gguf/phi3_longrope.gguf");
    let e = model::load_gguf_backbone(&path).err().unwrap().to_string();
    assert!(
        e.contains("rope scaling 'longrope' is not supported") && !e.contains('\n'),
        "{e}"
    );
}

/// Gemma 1: norms stored as `1 + w`, no rope base (10 000), tied head, one KV head.
#[test]
fn gemma_gguf_with_shifted_norms_and_no_rope_base() {
    check("gemma", "gemma");
}

#[test]
fn gguf_errors_are_one_line() {
    let dir = tempfile::tempdir().unwrap();
    // Not a GGUF at all.
    let p = dir.path().join("junk.gguf");
    std::fs::write(&p, b"definitely not gguf").unwrap();
    let e = model::load_gguf_backbone(&p).err().unwrap().to_string();
    assert!(e.contains("not a GGUF file"), "{e}");
    // A real file cut short: the header parses, the tensors do not fit.
    let full = std::fs::read(root().join("tiny_gguf/llama.gguf")).unwrap();
    let p = dir.path().join("short.gguf");
    std::fs::write(&p, &full[..full.len() - 1000]).unwrap();
    let e = model::load_gguf_backbone(&p).err().unwrap().to_string();
    assert!(e.contains("truncated"), "{e}");
    // A model directory with a GGUF but no tokenizer metadata and no tokenizer.json.
    let d = dir.path().join("m");
    std::fs::create_dir(&d).unwrap();
    std::fs::copy(root().join("tiny_gguf/qwen2.gguf"), d.join("qwen2.gguf")).unwrap();
    let files = model::source::ModelFiles::from_path(&d, "m".into()).unwrap();
    assert!(matches!(files.weights, model::Weights::Gguf(_)));
    let e = model::LoadedModel::load(&files).err().unwrap().to_string();
    assert!(e.contains("tokenizer"), "{e}");
    // With the fixture's tokenizer.json beside it, it loads and traces.
    std::fs::copy(
        root().join("tiny_qwen2/tokenizer.json"),
        d.join("tokenizer.json"),
    )
    .unwrap();
    let files = model::source::ModelFiles::from_path(&d.join("qwen2.gguf"), "m".into()).unwrap();
    let m = model::LoadedModel::load(&files).unwrap();
    let t = m
        .trace_lm("def f(x):\n    return x\n", &ForwardOptions::default())
        .unwrap();
    assert!(t.surprisal.is_some() && t.attention.layers.len() == 2);
}
