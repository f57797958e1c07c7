//! Llama, Qwen2, Qwen3, Phi-3, Gemma 1, Mistral, Granite, StarCoder2 and Gemma 2 from GGUF:
//! the tiny random fixtures written as llama.cpp's converter writes them
//! (`tools/reference/tiny_gguf_reference.py`: llama.cpp tensor names, Llama's and
//! Granite's Q/K rows permuted for interleaved rope, linear rope scaling in the metadata,
//! Gemma's norms as `1 + w`; each file but Gemma's and Granite's, which transformers
//! cannot read, first checked by loading it in transformers). codescope must undo all of
//! it and give the safetensors model's outputs (the fixtures' `reference.json`,
//! transformers 5.24; for StarCoder2 and Gemma 2, whose files cannot carry the fixtures'
//! sliding window and query scale, codescope's safetensors model with the settings the
//! file implies); each quantized to Q8_0 in `tests/it/quant.rs`. Gemma 3 from GGUF is
//! checked on the real packaged model (`tests/gemma3_reference.rs`).

use codescope::model::quant::WeightsMode;
use codescope::model::source::ModelFiles;
use codescope::model::{self, ForwardOptions, LoadedModel};
use serde_json::Value;

use crate::hostile_models::Gguf;
use crate::quant::{max_diff, outputs, outputs_of};

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

/// Attention, hidden states and logits, every layer's concatenated.
type Outputs = (Vec<f32>, Vec<f32>, Vec<f32>);

fn flat(v: &Value) -> Vec<f32> {
    match v {
        Value::Array(a) => a.iter().flat_map(flat).collect(),
        v => vec![v.as_f64().unwrap() as f32],
    }
}

/// A fixture's ids and transformers' outputs (`reference.json`).
fn reference(name: &str) -> (Vec<u32>, Outputs) {
    let r: Value = serde_json::from_str(
        &std::fs::read_to_string(root().join(format!("tiny_{name}/reference.json"))).unwrap(),
    )
    .unwrap();
    let ids = r["ids"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_u64().unwrap() as u32)
        .collect();
    let o = (
        flat(&r["attention"]),
        flat(&r["hidden_states"]),
        flat(&r["logits"]),
    );
    (ids, o)
}

/// codescope's outputs for `ids` on the safetensors fixture `name` with `edit` applied to
/// its config (what the GGUF file implies where it cannot say what the fixture says).
fn safetensors_outputs(name: &str, ids: &[u32], edit: Value) -> Outputs {
    let d = tempfile::tempdir().unwrap();
    let src = root().join(format!("tiny_{name}"));
    for f in ["model.safetensors", "tokenizer.json"] {
        std::fs::copy(src.join(f), d.path().join(f)).unwrap();
    }
    let mut cfg: Value =
        serde_json::from_str(&std::fs::read_to_string(src.join("config.json")).unwrap()).unwrap();
    for (k, v) in edit.as_object().unwrap() {
        cfg[k] = v.clone();
    }
    std::fs::write(d.path().join("config.json"), cfg.to_string()).unwrap();
    let files = ModelFiles::from_dir(d.path(), name.into()).unwrap();
    let m = LoadedModel::load(&files).unwrap();
    outputs_of(|opts, sink| m.forward_lm_ids(ids, opts, sink))
}

/// The GGUF fixture `name` against `want` (attention within 1e-4, hidden states and logits
/// within 1e-3) as `arch` with `layers` layers (quantized to Q8_0: `tests/it/quant.rs`).
fn check_new(name: &str, arch: &str, layers: usize, ids: &[u32], want: &Outputs) {
    let path = root().join("tiny_gguf").join(format!("{name}.gguf"));
    let (m, got_arch, _) = model::load_gguf_backbone_as(&path, WeightsMode::F32).unwrap();
    assert_eq!(got_arch, arch);
    assert_eq!(
        (m.layers(), m.heads(), m.hidden_size(), m.window()),
        (layers, 4, 32, 64)
    );
    let got = outputs(m.as_ref(), ids);
    assert_eq!(
        (got.0.len(), got.1.len(), got.2.len()),
        (want.0.len(), want.1.len(), want.2.len())
    );
    let worst = [
        max_diff(&got.0, &want.0),
        max_diff(&got.1, &want.1),
        max_diff(&got.2, &want.2),
    ];
    eprintln!("{name}.gguf: attention, hidden, logits {worst:?}");
    assert!(
        worst[0] < 1e-4 && worst[1] < 1e-3 && worst[2] < 1e-3,
        "{name}: {worst:?}"
    );
}

/// Mistral as llama.cpp writes it (`llama`, Q/K permuted) with its sliding window (6 of
/// the 32 tokens) in `llama.attention.sliding_window`: it runs as Mistral.
#[test]
fn mistral_gguf_is_llama_with_a_sliding_window() {
    let (ids, want) = reference("mistral");
    check_new("mistral", "mistral", 2, &ids, &want);
}

/// Granite: Q/K rows of weights and biases permuted, its four multipliers under
/// llama.cpp's names (`embedding_scale`, `residual_scale`, `attention.scale`,
/// `logit_scale`), an untied head.
#[test]
fn granite_gguf_with_its_multipliers_and_permuted_biases() {
    let (ids, want) = reference("granite");
    check_new("granite", "granite", 2, &ids, &want);
}

/// StarCoder2: LayerNorms with biases, the `ffn_up` / `ffn_down` GELU MLP with biases,
/// attention biases, a tied head. llama.cpp writes no sliding window for it (and attends
/// to every earlier token): the fixture's window of 8 is off, and the 31st token sees the
/// first.
#[test]
fn starcoder2_gguf_with_layernorm_biases_and_no_window() {
    let (ids, _) = reference("starcoder2");
    let want = safetensors_outputs(
        "starcoder2",
        &ids,
        serde_json::json!({"sliding_window": null}),
    );
    let n = ids.len();
    assert!(
        want.0[(n - 1) * n] > 0.0,
        "the first key is seen from the last query"
    );
    check_new("starcoder2", "starcoder2", 2, &ids, &want);
}

/// Gemma 2: norms as `1 + w` (the post-attention and post-feed-forward ones too), both
/// soft-capping values and the sliding window (6) from the metadata, layers alternating
/// sliding and global. The query scale is not in the file: as llama.cpp, `head_dim^-1/2`
/// (8; the fixture's `query_pre_attn_scalar` is 12).
#[test]
fn gemma2_gguf_with_soft_capping_and_alternating_windows() {
    let (ids, _) = reference("gemma2");
    let want = safetensors_outputs(
        "gemma2",
        &ids,
        serde_json::json!({"query_pre_attn_scalar": 8}),
    );
    check_new("gemma2", "gemma2", 3, &ids, &want);
}

/// An architecture codescope does not run from GGUF (llama.cpp's `falcon`, its keys and
/// tensors otherwise a Llama's) is refused in one line naming those it runs.
#[test]
fn an_unsupported_gguf_architecture_is_named_with_the_supported_ones() {
    let d = tempfile::tempdir().unwrap();
    let mut g = Gguf::fixture("llama");
    g.set(
        "general.architecture",
        codescope::model::gguf::Value::String("falcon".into()),
    );
    let p = g.save(d.path());
    let e = model::load_gguf_backbone(&p).err().unwrap().to_string();
    assert_eq!(
        e,
        "unsupported architecture 'falcon (GGUF)' (supported: gemma, gemma2, gemma3, \
         granite, llama, phi3, qwen2, qwen3, starcoder2)"
    );
}

/// The new GGUF architectures through the binary, as a user opens one (`--model
/// DIR/NAME.gguf`, the fixture's `tokenizer.json` beside it): `trace --surprisal --json`
/// names the family; Mistral's and Granite's files, which say all their fixtures say,
/// give the safetensors fixtures' surprisal.
#[test]
fn new_gguf_architectures_trace_through_the_binary() {
    let env = crate::cli_sources::Env::new();
    let snippet = env.sample();
    let trace = |model: &std::path::Path| -> Value {
        let o = env
            .cmd()
            .args(["trace", "--surprisal", "--json", "--model"])
            .arg(model)
            .arg(&snippet)
            .output()
            .unwrap();
        serde_json::from_str(&crate::cli_sources::ok(&o)).unwrap()
    };
    for (name, arch, layers) in [
        ("mistral", "mistral", 2),
        ("granite", "granite", 2),
        ("starcoder2", "starcoder2", 2),
        ("gemma2", "gemma2", 3),
    ] {
        let d = env.root.join(name);
        std::fs::create_dir_all(&d).unwrap();
        let gguf = d.join(format!("{name}.gguf"));
        std::fs::copy(root().join(format!("tiny_gguf/{name}.gguf")), &gguf).unwrap();
        std::fs::copy(
            root().join(format!("tiny_{name}/tokenizer.json")),
            d.join("tokenizer.json"),
        )
        .unwrap();
        let v = trace(&gguf);
        assert_eq!(v["model"]["architecture"], arch, "{name}");
        assert_eq!(v["model"]["layers"], layers, "{name}");
        if name == "mistral" || name == "granite" {
            let s = trace(&root().join(format!("tiny_{name}")));
            assert_eq!(v["tokens"], s["tokens"], "{name}");
            let bits = |t: &Value| -> Vec<f64> {
                t["surprisal"].as_array().unwrap()[1..]
                    .iter()
                    .map(|b| b.as_f64().unwrap())
                    .collect()
            };
            let (a, b) = (bits(&v), bits(&s));
            assert!(!a.is_empty());
            let worst = a
                .iter()
                .zip(&b)
                .map(|(x, y)| (x - y).abs())
                .fold(0.0, f64::max);
            assert!(worst < 1e-3, "{name}: surprisal differs by {worst}");
        }
    }
}
