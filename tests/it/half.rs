//! Half-precision safetensors held half (`--weights native`, the default) against the
//! f32 path (`--weights f32`), through the binary:
//!
//! - the tiny Qwen2 (biases, tied head), Llama, Phi-3 (fused projections) and Gemma 3
//!   fixtures converted to bf16 or f16: the same tokens, top-1 next tokens, attention and
//!   surprisal as with every tensor converted to f32 at load, and the log says the
//!   matrices stayed half; `--weights kernels` gives native's output; a GPT-2 in bf16
//!   (a family that reads every tensor as f32) gives the same output in both modes;
//! - a NaN in a half matrix is refused naming the tensor on both paths;
//! - the memory plan counts the half matrices at 2 bytes a value (the refusal's weights
//!   figure), f32 at 4 with `--weights f32`.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use candle_core::{DType, Device, Tensor};

use crate::cli_sources::{fails, ok, BIN};
use crate::quant::pearson;

/// `tensors` saved as `model.safetensors` in `dir` with `from`'s config and tokenizer.
fn save(tensors: &HashMap<String, Tensor>, from: &Path, dir: &Path) -> PathBuf {
    std::fs::create_dir_all(dir).unwrap();
    for f in ["config.json", "tokenizer.json"] {
        std::fs::copy(from.join(f), dir.join(f)).unwrap();
    }
    candle_core::safetensors::save(tensors, dir.join("model.safetensors")).unwrap();
    dir.to_path_buf()
}

fn fixture_dir(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

/// The tiny fixture `name` with every tensor converted to `dtype`, in `dir`.
fn converted(name: &str, dtype: DType, dir: &Path) -> PathBuf {
    let from = fixture_dir(name);
    let tensors: HashMap<String, Tensor> =
        candle_core::safetensors::load(from.join("model.safetensors"), &Device::Cpu)
            .unwrap()
            .into_iter()
            .map(|(k, t)| (k, t.to_dtype(dtype).unwrap()))
            .collect();
    save(&tensors, &from, dir)
}

fn trace(model: &Path, weights: &str, file: &Path, log: &Path) -> Output {
    Command::new(BIN)
        .env("CODESCOPE_LOG_FILE", log)
        .env("CODESCOPE_CACHE", model.join("cache"))
        .env_remove("CODESCOPE_MEMORY_LIMIT_MB")
        .args(["--weights", weights, "--model"])
        .arg(model)
        .args(["trace", "--json", "--surprisal"])
        .arg(file)
        .output()
        .unwrap()
}

/// Top-1 agreement, attention max abs difference and surprisal Pearson r of two traces.
fn agreement(n: &serde_json::Value, f: &serde_json::Value) -> (f64, f64, f64) {
    let ids = |v: &serde_json::Value| {
        v["tokens"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["id"].as_u64().unwrap())
            .collect::<Vec<_>>()
    };
    assert_eq!(ids(n), ids(f));
    let top = |v: &serde_json::Value| -> Vec<u64> {
        v["top_next"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p[0]["id"].as_u64().unwrap())
            .collect()
    };
    let (tn, tf) = (top(n), top(f));
    assert!(!tf.is_empty());
    let same = tn.iter().zip(&tf).filter(|(a, b)| a == b).count();
    let flat = |v: &serde_json::Value| -> Vec<f64> {
        fn walk(v: &serde_json::Value, out: &mut Vec<f64>) {
            match v {
                serde_json::Value::Array(a) => a.iter().for_each(|x| walk(x, out)),
                x => out.push(x.as_f64().unwrap()),
            }
        }
        let mut out = Vec::new();
        walk(&v["attention"], &mut out);
        out
    };
    let (an, af) = (flat(n), flat(f));
    assert_eq!(an.len(), af.len());
    assert!(!af.is_empty());
    let attn = an
        .iter()
        .zip(&af)
        .map(|(a, b)| (a - b).abs())
        .fold(0.0, f64::max);
    let bits = |v: &serde_json::Value| -> Vec<Option<f64>> {
        v["surprisal"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_f64())
            .collect()
    };
    let (bn, bf): (Vec<f64>, Vec<f64>) = bits(n)
        .into_iter()
        .zip(bits(f))
        .filter_map(|(a, b)| a.zip(b))
        .unzip();
    assert!(bn.len() > 2);
    (same as f64 / tf.len() as f64, attn, pearson(&bn, &bf))
}

#[test]
fn half_checkpoints_held_half_agree_with_the_f32_path() {
    let d = tempfile::tempdir().unwrap();
    let file = d.path().join("snippet.py");
    std::fs::write(
        &file,
        "def add(a, b):\n    total = a + b\n    return total\n\nprint(add(1, 2))\n",
    )
    .unwrap();
    for (name, dtype) in [
        ("tiny_qwen2", DType::BF16),
        ("tiny_llama", DType::F16),
        ("tiny_phi3", DType::BF16),
        ("tiny_gemma3", DType::BF16),
    ] {
        let model = converted(name, dtype, &d.path().join(name));
        let (log_n, log_f) = (model.join("native.log"), model.join("f32.log"));
        let n: serde_json::Value =
            serde_json::from_str(&ok(&trace(&model, "native", &file, &log_n))).unwrap();
        let f: serde_json::Value =
            serde_json::from_str(&ok(&trace(&model, "f32", &file, &log_f))).unwrap();
        let held = "safetensors matrices kept half precision";
        assert!(
            std::fs::read_to_string(&log_n).unwrap().contains(held),
            "{name}: the native run did not keep its matrices half"
        );
        assert!(!std::fs::read_to_string(&log_f).unwrap().contains(held));
        let (top1, attn, r) = agreement(&n, &f);
        eprintln!("{name} {dtype:?} native vs f32: top-1 {top1}, attention {attn:e}, r {r}");
        // Each half value converts to the f32 the load-time conversion gives, and the
        // products are the same gemm's: measured identical.
        assert!(
            top1 == 1.0 && attn <= 1e-6 && r >= 0.999_999,
            "{name}: top-1 {top1}, attention {attn}, r {r}"
        );
        // No quantized kernel for f16 / bf16: `kernels` holds and multiplies as native.
        let k = trace(&model, "kernels", &file, &model.join("kernels.log"));
        assert_eq!(
            ok(&k),
            ok(&trace(&model, "native", &file, &log_n)),
            "{name}"
        );
    }
    // A family that reads every tensor as f32 (GPT-2): the same output in both modes,
    // nothing held half.
    let model = converted("tiny_gpt2", DType::BF16, &d.path().join("gpt2"));
    let log = model.join("native.log");
    let n = ok(&trace(&model, "native", &file, &log));
    assert_eq!(n, ok(&trace(&model, "f32", &file, &model.join("f32.log"))));
    assert!(!std::fs::read_to_string(&log)
        .unwrap()
        .contains("kept half precision"));
}

#[test]
fn a_nan_in_a_half_matrix_is_named_on_both_paths() {
    let d = tempfile::tempdir().unwrap();
    let from = fixture_dir("tiny_qwen2");
    let mut tensors: HashMap<String, Tensor> =
        candle_core::safetensors::load(from.join("model.safetensors"), &Device::Cpu)
            .unwrap()
            .into_iter()
            .map(|(k, t)| (k, t.to_dtype(DType::BF16).unwrap()))
            .collect();
    let name = "model.layers.1.self_attn.q_proj.weight";
    let mut v = tensors[name]
        .flatten_all()
        .unwrap()
        .to_dtype(DType::F32)
        .unwrap()
        .to_vec1::<f32>()
        .unwrap();
    v[5] = f32::NAN;
    tensors.insert(
        name.into(),
        Tensor::from_vec(v, (32, 32), &Device::Cpu)
            .unwrap()
            .to_dtype(DType::BF16)
            .unwrap(),
    );
    let model = save(&tensors, &from, &d.path().join("m"));
    let file = d.path().join("snippet.py");
    std::fs::write(&file, "x = 1\n").unwrap();
    for weights in ["native", "f32"] {
        let line = fails(&trace(&model, weights, &file, &d.path().join("log")));
        assert!(
            line.contains(&format!("{name} holds 1 non-finite values")),
            "{weights}: {line}"
        );
    }
}

#[test]
fn the_memory_plan_counts_half_matrices_at_two_bytes() {
    let d = tempfile::tempdir().unwrap();
    let from = fixture_dir("tiny_qwen2");
    // Qwen2 with 256-wide hidden states, one 64-wide key/value head, a 1024-wide MLP, two
    // layers, the tiny fixture's 300-token vocabulary, tied head: 1,977,344 values in
    // matrices (bf16), 2,048 in norms and biases (bf16 in the file, held f32).
    let (h, kv, inter, vocab) = (256usize, 64usize, 1024usize, 300usize);
    let mut cfg: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(from.join("config.json")).unwrap()).unwrap();
    cfg["hidden_size"] = h.into();
    cfg["intermediate_size"] = inter.into();
    let dir = d.path().join("m");
    let mut tensors = HashMap::new();
    let mut put = |name: String, dims: &[usize]| {
        let t = Tensor::randn(0f32, 0.02, dims, &Device::Cpu)
            .unwrap()
            .to_dtype(DType::BF16)
            .unwrap();
        tensors.insert(name, t);
    };
    put("model.embed_tokens.weight".into(), &[vocab, h]);
    put("model.norm.weight".into(), &[h]);
    for l in 0..2 {
        let p = format!("model.layers.{l}");
        for (m, dims) in [
            ("self_attn.q_proj", [h, h]),
            ("self_attn.k_proj", [kv, h]),
            ("self_attn.v_proj", [kv, h]),
            ("self_attn.o_proj", [h, h]),
            ("mlp.gate_proj", [inter, h]),
            ("mlp.up_proj", [inter, h]),
            ("mlp.down_proj", [h, inter]),
        ] {
            put(format!("{p}.{m}.weight"), &dims);
        }
        for (m, n) in [("q_proj", h), ("k_proj", kv), ("v_proj", kv)] {
            put(format!("{p}.self_attn.{m}.bias"), &[n]);
        }
        put(format!("{p}.input_layernorm.weight"), &[h]);
        put(format!("{p}.post_attention_layernorm.weight"), &[h]);
    }
    save(&tensors, &from, &dir);
    std::fs::write(dir.join("config.json"), cfg.to_string()).unwrap();
    let file = d.path().join("snippet.py");
    std::fs::write(&file, "x = 1\n").unwrap();
    let run = |weights: &str, limit: &str| {
        Command::new(BIN)
            .env("CODESCOPE_LOG_FILE", d.path().join("log"))
            .env("CODESCOPE_MEMORY_LIMIT_MB", limit)
            .args(["--weights", weights, "--model"])
            .arg(&dir)
            .arg("trace")
            .arg(&file)
            .output()
            .unwrap()
    };
    // Native: 1,977,344 x 2 + 2,048 x 4 bytes held, plus gate and up converted for their
    // product (2 x 1024 x 256 x 4): 6,060,032 bytes, 6 MiB rounded up.
    let line = fails(&run("native", "1"));
    assert!(
        line.contains("with native weights") && line.contains("(weights 6 MiB,"),
        "{line}"
    );
    // f32: 1,979,392 x 4 = 7,917,568 bytes, 8 MiB.
    let line = fails(&run("f32", "1"));
    assert!(
        line.contains("with f32 weights") && line.contains("(weights 8 MiB,"),
        "{line}"
    );
    // Within a limit the model runs, held half.
    ok(&run("native", "100000"));
    assert!(std::fs::read_to_string(d.path().join("log"))
        .unwrap()
        .contains("safetensors matrices kept half precision"));
}

#[test]
fn the_help_says_what_weights_does_for_safetensors() {
    let help = ok(&Command::new(BIN).arg("--help").output().unwrap());
    let help = help.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        help.contains("How GGUF and f16/bf16 safetensors weights are held"),
        "{help}"
    );
}
