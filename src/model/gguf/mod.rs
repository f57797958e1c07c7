//! Quantized GGUF checkpoints (llama.cpp's format) for the Llama (and Mistral), Qwen2, Qwen3,
//! Phi-3, Granite, StarCoder2, Gemma 1, Gemma 2 and Gemma 3 families.
//!
//! A GGUF file carries its own configuration (`{arch}.*` metadata), tokenizer
//! (`tokenizer.ggml.*`, rebuilt by [`super::gguf_tokenizer`]) and tensors in llama.cpp's
//! names and block-quantized types. Loading:
//! 1. the header is read and validated by codescope's own bounded [`reader`] (candle's
//!    cannot be made safe from outside; see there), the file memory-mapped;
//! 2. an HF-style `config.json` value is built from the metadata, so the architectures
//!    are configured exactly as from a hub checkpoint;
//! 3. the tensors are renamed to the HF checkpoint names, undoing llama.cpp's conversion
//!    edits: Gemma's (1, 2 and 3) RMSNorm weights are stored as `1 + w`, Llama's and
//!    Granite's Q/K rows (and biases) are permuted for llama.cpp's interleaved rope
//!    (transformers' `reverse_permute_weights`). With `--weights f32` every tensor is
//!    dequantized to f32 (in parallel, from the mapped bytes; [`GgufFile::hf_tensors`]); by
//!    default the projections, MLP, embedding and LM head stay quantized
//!    ([`GgufFile::hf_tensors_native`], [`crate::model::quant`]: Llama's Q/K rows
//!    permuted as whole rows of blocks) and only the norms and biases are dequantized.
//!
//! Candle's quantized matmuls run Q5_0 (most of Gemma 3 270M, whose 640-wide rows are not a
//! multiple of the 256-element k-quant block) without SIMD and were ~10x slower than f32
//! gemm on the dequantized weights: the default mode therefore dequantizes each quantized
//! matrix for its product instead (f32 gemm's speed and values at the quantized file's
//! memory; docs/performance.md).

pub mod cache;
pub mod reader;

use std::collections::{BTreeSet, HashMap};
use std::fs::File;
use std::path::{Path, PathBuf};

use std::sync::Arc;

use candle_core::quantized::QTensor;
use candle_core::{DType, Device, Tensor};
use rayon::prelude::*;

use crate::model::quant::QuantStore;

use crate::model::limits::MAX_LAYERS;
pub use reader::{Array, Header, Metadata, TensorEntry, Value};

use crate::error::{Error, Result};

/// GGUF `general.architecture` values codescope can run.
pub const GGUF_ARCHITECTURES: &[&str] = &[
    "gemma",
    "gemma2",
    "gemma3",
    "granite",
    "llama",
    "phi3",
    "qwen2",
    "qwen3",
    "starcoder2",
];

/// An opened GGUF file: the validated header and the file's bytes, memory-mapped (no
/// tensor dequantized yet).
pub struct GgufFile {
    pub path: PathBuf,
    pub header: Header,
    map: memmap2::Mmap,
}

impl GgufFile {
    /// Map the file and read and validate its header.
    pub fn open(path: &Path) -> Result<Self> {
        let f = File::open(path).map_err(|e| Error::io(path, e))?;
        let len = f.metadata().map_err(|e| Error::io(path, e))?.len();
        // SAFETY: mapped read-only; codescope never writes model files, and a concurrent
        // truncation by another process is outside what we can guard (as for safetensors).
        let map = unsafe { memmap2::Mmap::map(&f) }.map_err(|e| Error::io(path, e))?;
        let cap = crate::model::limits::max_gguf_metadata_bytes()?;
        let header = reader::read_header(&map[..], len, cap).map_err(|reason| {
            let what = if reason.contains("magic") || reason.contains("version") {
                "not a GGUF file"
            } else {
                "invalid GGUF"
            };
            Error::CorruptWeights {
                path: path.into(),
                reason: format!("{what}: {reason}"),
            }
        })?;
        Ok(GgufFile {
            path: path.into(),
            header,
            map,
        })
    }

    /// Bytes the tensors take once dequantized to f32.
    pub fn f32_bytes(&self) -> u64 {
        self.header
            .tensors
            .iter()
            .map(|t| t.dims.iter().map(|&d| d as u64).product::<u64>() * 4)
            .sum()
    }

    /// The metadata.
    pub fn metadata(&self) -> &Metadata {
        &self.header.metadata
    }

    /// The raw bytes of a tensor's data (in bounds: checked when the header was read).
    fn raw(&self, t: &TensorEntry) -> &[u8] {
        let start = (self.header.data_offset + t.offset) as usize;
        &self.map[start..start + t.bytes as usize]
    }

    /// Drop the mapped pages of `t`'s bytes from this process's memory once they are
    /// copied (a 7B Q4_K_M file's 4 GB would otherwise stay resident beside their copies
    /// until the file is closed: the peak of the load twice the weights). Only the
    /// resident pages go: a later read maps them again from the file.
    fn release(&self, t: &TensorEntry) {
        let start = (self.header.data_offset + t.offset) as usize;
        // SAFETY: a read-only shared mapping of a file codescope never writes: MADV_DONTNEED
        // discards nothing but cached pages, which the kernel reads back on access, and no
        // Rust reference sees different bytes. A failure only leaves the pages resident.
        let _ = unsafe {
            self.map.unchecked_advise_range(
                memmap2::UncheckedAdvice::DontNeed,
                start,
                t.bytes as usize,
            )
        };
    }

    /// A tensor dequantized to f32 (shape outermost first).
    pub fn dequantize(&self, t: &TensorEntry) -> Result<Tensor> {
        let corrupt = |e: candle_core::Error| Error::CorruptWeights {
            path: self.path.clone(),
            reason: format!("tensor {}: {}", t.name, crate::error::candle_message(&e)),
        };
        let raw = self.raw(t);
        // candle reinterprets the bytes as blocks: hand it an 8-byte-aligned copy when
        // the mapped bytes are not (llama.cpp's alignment may be as small as 1).
        let aligned: Vec<u64>;
        let raw = if (raw.as_ptr() as usize).is_multiple_of(8) {
            raw
        } else {
            let mut v = vec![0u64; raw.len().div_ceil(8)];
            // SAFETY: v holds at least raw.len() bytes; u64 has no invalid bit patterns.
            let bytes =
                unsafe { std::slice::from_raw_parts_mut(v.as_mut_ptr() as *mut u8, raw.len()) };
            bytes.copy_from_slice(raw);
            aligned = v;
            // SAFETY: reading back the bytes just written.
            unsafe { std::slice::from_raw_parts(aligned.as_ptr() as *const u8, raw.len()) }
        };
        let n: usize = t.dims.iter().product();
        if let Some(values) = dequantize_blocks(t.dtype, raw, n) {
            return Tensor::from_vec(values, t.dims.clone(), &Device::Cpu).map_err(corrupt);
        }
        let q = candle_core::quantized::ggml_file::qtensor_from_ggml(
            t.dtype,
            raw,
            t.dims.clone(),
            &Device::Cpu,
        )
        .map_err(corrupt)?;
        q.dequantize(&Device::Cpu)
            .and_then(|t| t.to_dtype(DType::F32))
            .map_err(corrupt)
    }

    fn meta(&self, key: &str) -> Option<&Value> {
        self.header.metadata.get(key)
    }

    /// A numeric metadata value as f64 (any integer or float type).
    pub fn num(&self, key: &str) -> Option<f64> {
        Some(match self.meta(key)? {
            Value::U8(v) => *v as f64,
            Value::I8(v) => *v as f64,
            Value::U16(v) => *v as f64,
            Value::I16(v) => *v as f64,
            Value::U32(v) => *v as f64,
            Value::I32(v) => *v as f64,
            Value::U64(v) => *v as f64,
            Value::I64(v) => *v as f64,
            Value::F32(v) => *v as f64,
            Value::F64(v) => *v,
            _ => return None,
        })
    }

    /// A string metadata value.
    pub fn string(&self, key: &str) -> Option<&str> {
        match self.meta(key)? {
            Value::String(s) => Some(s),
            _ => None,
        }
    }

    /// `general.architecture`.
    pub fn architecture(&self) -> Result<String> {
        self.string("general.architecture")
            .map(str::to_string)
            .ok_or_else(|| Error::CorruptWeights {
                path: self.path.clone(),
                reason: "GGUF metadata has no general.architecture".into(),
            })
    }

    /// `{arch}.block_count`, checked against the tensors before anything is sized by it:
    /// between 1 and [`MAX_LAYERS`], and every layer `0..n` must have tensors (`blk.i.*`)
    /// while no tensor names a layer past the end.
    fn block_count(&self, arch: &str) -> Result<usize> {
        let bad = |reason: String| Error::BadConfig {
            path: self.path.clone(),
            reason,
        };
        let key = format!("{arch}.block_count");
        let v = self.need(&key)?;
        if !(v >= 1.0 && v.fract() == 0.0) {
            return Err(bad(format!(
                "{key} is {v}: a model needs at least one layer"
            )));
        }
        if v > MAX_LAYERS as f64 {
            return Err(bad(format!(
                "{key} is {v}, more than the {MAX_LAYERS} layers codescope accepts"
            )));
        }
        let n = v as usize;
        let present: BTreeSet<usize> = self
            .header
            .tensors
            .iter()
            .filter_map(|t| t.name.strip_prefix("blk.")?.split('.').next()?.parse().ok())
            .collect();
        if let Some(missing) = (0..n).find(|i| !present.contains(i)) {
            return Err(bad(format!(
                "{key} is {n} but the file holds no tensors for layer {missing}"
            )));
        }
        if let Some(&extra) = present.range(n..).next() {
            return Err(bad(format!(
                "{key} is {n} but the file holds tensors for layer {extra}"
            )));
        }
        Ok(n)
    }

    fn need(&self, key: &str) -> Result<f64> {
        self.num(key).ok_or_else(|| Error::BadConfig {
            path: self.path.clone(),
            reason: format!("GGUF metadata lacks {key}"),
        })
    }

    /// The vocabulary size: `{arch}.vocab_size`, else the token list's length, else the
    /// embedding's rows.
    fn vocab_size(&self, arch: &str) -> Option<usize> {
        if let Some(v) = self.num(&format!("{arch}.vocab_size")) {
            return Some(v as usize);
        }
        if let Some(Value::Array(a)) = self.meta("tokenizer.ggml.tokens") {
            return Some(a.len());
        }
        self.header
            .tensor("token_embd.weight")
            .and_then(|t| t.dims.first().copied())
    }

    /// An HF `config.json` value for this file (`model_type` set), built from metadata.
    pub fn hf_config(&self) -> Result<serde_json::Value> {
        use serde_json::json;
        let arch = self.architecture()?;
        // Before any `{arch}.*` key is looked for: an architecture codescope does not run
        // is named as such, not as a missing key.
        if !GGUF_ARCHITECTURES.contains(&arch.as_str()) {
            return Err(unsupported_gguf(&arch));
        }
        let a = |k: &str| format!("{arch}.{k}");
        let hidden = self.need(&a("embedding_length"))? as usize;
        let heads = self.need(&a("attention.head_count"))? as usize;
        let kv = self
            .num(&a("attention.head_count_kv"))
            .map(|v| v as usize)
            .unwrap_or(heads);
        let head_dim = self
            .num(&a("attention.key_length"))
            .map(|v| v as usize)
            .unwrap_or(hidden / heads.max(1));
        let vocab = self.vocab_size(&arch).ok_or_else(|| Error::BadConfig {
            path: self.path.clone(),
            reason: "cannot tell the vocabulary size".into(),
        })?;
        let mut cfg = json!({
            "vocab_size": vocab,
            "hidden_size": hidden,
            "intermediate_size": self.need(&a("feed_forward_length"))? as usize,
            "num_hidden_layers": self.block_count(&arch)?,
            "num_attention_heads": heads,
            "num_key_value_heads": kv,
            "head_dim": head_dim,
            "max_position_embeddings": self.need(&a("context_length"))? as usize,
            "tie_word_embeddings": self.header.tensor("output.weight").is_none(),
        });
        if arch == "starcoder2" {
            // LayerNorms: llama.cpp's `attention.layer_norm_epsilon` (HF `norm_epsilon`).
            cfg["norm_epsilon"] = json!(self.need(&a("attention.layer_norm_epsilon"))?);
        } else {
            cfg["rms_norm_eps"] = json!(self.need(&a("attention.layer_norm_rms_epsilon"))?);
        }
        let theta = self.num(&a("rope.freq_base"));
        match arch.as_str() {
            "gemma3" => {
                cfg["model_type"] = json!("gemma3_text");
                cfg["hidden_activation"] = json!("gelu_pytorch_tanh");
                cfg["query_pre_attn_scalar"] = json!(head_dim);
                let layers = cfg["num_hidden_layers"].as_u64().unwrap_or(0) as usize;
                // llama.cpp (and transformers' GGUF loader): every 6th layer is global.
                let types: Vec<&str> = (0..layers)
                    .map(|i| {
                        if (i + 1) % 6 == 0 {
                            "full_attention"
                        } else {
                            "sliding_attention"
                        }
                    })
                    .collect();
                cfg["layer_types"] = json!(types);
                cfg["sliding_window"] = json!(self.need(&a("attention.sliding_window"))? as usize);
                let mut global =
                    json!({"rope_theta": theta.unwrap_or(1_000_000.0), "rope_type": "default"});
                if let Some(f) = self.num(&a("rope.scaling.factor")) {
                    if self.string(&a("rope.scaling.type")) == Some("linear") && f != 1.0 {
                        global = json!({"rope_theta": theta.unwrap_or(1_000_000.0), "rope_type": "linear", "factor": f});
                    }
                }
                cfg["rope_parameters"] = json!({
                    "full_attention": global,
                    "sliding_attention": {"rope_theta": 10_000.0, "rope_type": "default"},
                });
            }
            "gemma" => {
                // llama.cpp's Gemma 1: no rope base in the metadata (its default 10 000),
                // every layer global, scale head_dim^-1/2.
                cfg["model_type"] = json!("gemma");
                cfg["hidden_act"] = json!("gelu_pytorch_tanh");
                cfg["rope_theta"] = json!(theta.unwrap_or(10_000.0));
            }
            "phi3" => {
                // Phi3MiniModel: rope.dimension_count = head_dim * partial_rotary_factor,
                // sliding_window 0 for none; longrope files carry rope_factors_long/short.
                cfg["model_type"] = json!("phi3");
                cfg["hidden_act"] = json!("silu");
                let rot = self
                    .num(&a("rope.dimension_count"))
                    .unwrap_or(head_dim as f64);
                let longrope = self.header.tensor("rope_factors_long.weight").is_some()
                    || self.header.tensor("rope_factors_short.weight").is_some();
                cfg["rope_parameters"] = json!({
                    "rope_type": if longrope { "longrope" } else { "default" },
                    "rope_theta": theta.unwrap_or(10_000.0),
                    "partial_rotary_factor": rot / head_dim.max(1) as f64,
                });
                cfg["sliding_window"] = match self.num(&a("attention.sliding_window")) {
                    Some(w) if w > 0.0 => json!(w as usize),
                    _ => serde_json::Value::Null,
                };
            }
            "gemma2" => {
                // llama.cpp's Gemma 2: no rope base (10 000), every second layer global
                // (the first sliding), the soft-capping values in the metadata (absent:
                // llama.cpp's and transformers' 50 and 30). The query scale is not in the
                // file: llama.cpp takes head_dim^-1/2, but (hidden / heads)^-1/2 for the
                // 46-layer 27B, whose query_pre_attn_scalar is hidden / heads; so here.
                cfg["model_type"] = json!("gemma2");
                cfg["hidden_activation"] = json!("gelu_pytorch_tanh");
                cfg["rope_theta"] = json!(theta.unwrap_or(10_000.0));
                let layers = cfg["num_hidden_layers"].as_u64().unwrap_or(0) as usize;
                cfg["query_pre_attn_scalar"] =
                    json!(gemma2_query_scalar(layers, hidden, heads, head_dim));
                if let Some(w) = self.num(&a("attention.sliding_window")) {
                    cfg["sliding_window"] = json!(w as usize);
                }
                for (key, hf) in [
                    ("attn_logit_softcapping", "attn_logit_softcapping"),
                    ("final_logit_softcapping", "final_logit_softcapping"),
                ] {
                    if let Some(v) = self.num(&a(key)) {
                        cfg[hf] = json!(v);
                    }
                }
            }
            "starcoder2" => {
                // llama.cpp's StarCoder2: LayerNorms with biases, a GELU MLP; its sliding
                // window is not in the file (llama.cpp attends to every earlier token).
                cfg["model_type"] = json!("starcoder2");
                cfg["hidden_act"] = json!("gelu_pytorch_tanh");
                cfg["rope_theta"] = json!(theta.unwrap_or(10_000.0));
                cfg["sliding_window"] = serde_json::Value::Null;
            }
            "llama" | "qwen2" | "qwen3" | "granite" => {
                // A `llama` file with a sliding window (a Mistral written with one) runs as
                // Mistral: every layer limited to the window.
                let window = self
                    .num(&a("attention.sliding_window"))
                    .filter(|&w| w > 0.0 && arch == "llama");
                cfg["model_type"] = json!(if window.is_some() {
                    "mistral"
                } else {
                    arch.as_str()
                });
                if let Some(w) = window {
                    cfg["sliding_window"] = json!(w as usize);
                }
                if arch == "granite" {
                    // llama.cpp's names for Granite's multipliers.
                    for (key, hf) in [
                        ("embedding_scale", "embedding_multiplier"),
                        ("residual_scale", "residual_multiplier"),
                        ("attention.scale", "attention_multiplier"),
                        ("logit_scale", "logits_scaling"),
                    ] {
                        if let Some(v) = self.num(&a(key)) {
                            cfg[hf] = json!(v);
                        }
                    }
                }
                cfg["hidden_act"] = json!("silu");
                cfg["rope_theta"] = json!(theta.unwrap_or(10_000.0));
                if let Some(kind) = self.string(&a("rope.scaling.type")) {
                    if kind != "none" {
                        let f = self.num(&a("rope.scaling.factor")).unwrap_or(1.0);
                        cfg["rope_scaling"] = json!({"rope_type": kind, "factor": f});
                    }
                }
            }
            other => return Err(unsupported_gguf(other)),
        }
        Ok(cfg)
    }

    /// [`GgufFile::hf_tensors`] and the sha256 of the whole file, hashed on its own
    /// thread while the tensors are dequantized (the first open of a GGUF pays no extra
    /// wall time for the key of its dequantized-weight cache).
    pub fn hf_tensors_and_digest(
        &self,
        cfg: &serde_json::Value,
    ) -> Result<(HashMap<String, Tensor>, String)> {
        use sha2::{Digest, Sha256};
        std::thread::scope(|s| {
            let hasher = s.spawn(|| {
                let mut h = Sha256::new();
                for chunk in self.map.chunks(1 << 22) {
                    h.update(chunk);
                }
                h.finalize()
                    .iter()
                    .map(|b| format!("{b:02x}"))
                    .collect::<String>()
            });
            let tensors = self.hf_tensors(cfg);
            let digest = hasher
                .join()
                .map_err(|_| Error::Compute("hashing the GGUF panicked".into()))?;
            Ok((tensors?, digest))
        })
    }

    /// Every tensor dequantized to f32 under its HF checkpoint name.
    pub fn hf_tensors(&self, cfg: &serde_json::Value) -> Result<HashMap<String, Tensor>> {
        Ok(self.hf_tensors_held(cfg, false, false)?.0)
    }

    /// The tensors as `--weights native` holds them ([`crate::model::quant`]): each
    /// layer's projection and MLP weights, the token embedding and the LM head kept in
    /// their block-quantized type (checked for non-finite values through their blocks'
    /// scales, without dequantizing them); the rest (norms, biases, and any tensor stored as
    /// f32 / f16 or whose rows are not whole blocks) dequantized to f32 as
    /// [`GgufFile::hf_tensors`] does.
    pub fn hf_tensors_native(
        &self,
        cfg: &serde_json::Value,
        kernels: bool,
    ) -> Result<(HashMap<String, Tensor>, QuantStore)> {
        self.hf_tensors_held(cfg, true, kernels)
    }

    /// Bytes the tensors take as `--weights native` holds them (see
    /// [`GgufFile::hf_tensors_native`]): quantized bytes for those kept quantized, f32
    /// for the rest.
    pub fn native_bytes(&self) -> u64 {
        let arch = self.architecture().unwrap_or_default();
        self.header
            .tensors
            .iter()
            .map(|t| {
                let f32_bytes = t.dims.iter().map(|&d| d as u64).product::<u64>() * 4;
                match hf_name(&arch, &t.name) {
                    Some(hf) if kept_quantized(&hf, t) => t.bytes,
                    Some(_) => f32_bytes,
                    None => 0,
                }
            })
            .sum()
    }

    /// The largest f32 matrices `--weights native` dequantizes for one product: the two
    /// largest layer tensors kept quantized (a fused product dequantizes its parts side
    /// by side), or the LM head's slice when that is larger (an upper bound for
    /// `--weights kernels` too).
    pub fn transient_bytes(&self) -> u64 {
        let mut sizes = self.layer_f32_sizes();
        sizes.sort_unstable_by(|a, b| b.cmp(a));
        let layer: u64 = sizes.iter().take(2).sum();
        layer.max(crate::model::quant::HEAD_SLICE_BYTES)
    }

    /// The layer matrices `--weights native` keeps quantized, at f32 size: what the causal
    /// commands' packed copy of them takes ([`crate::model::quant::set_packing`]).
    pub fn layer_f32_bytes(&self) -> u64 {
        self.layer_f32_sizes().iter().sum()
    }

    /// The f32 size of each layer tensor `--weights native` keeps quantized.
    fn layer_f32_sizes(&self) -> Vec<u64> {
        let arch = self.architecture().unwrap_or_default();
        self.header
            .tensors
            .iter()
            .filter(|t| {
                hf_name(&arch, &t.name)
                    .is_some_and(|hf| kept_quantized(&hf, t) && hf.starts_with("model.layers."))
            })
            .map(|t| t.dims.iter().map(|&d| d as u64).product::<u64>() * 4)
            .collect()
    }

    fn hf_tensors_held(
        &self,
        cfg: &serde_json::Value,
        native: bool,
        kernels: bool,
    ) -> Result<(HashMap<String, Tensor>, QuantStore)> {
        let arch = self.architecture()?;
        let heads = cfg["num_attention_heads"].as_u64().unwrap_or(1) as usize;
        let kv = cfg["num_key_value_heads"].as_u64().unwrap_or(1) as usize;
        let corrupt = |name: &str, e: candle_core::Error| Error::CorruptWeights {
            path: self.path.clone(),
            reason: format!("tensor {name}: {}", crate::error::candle_message(&e)),
        };
        // Llama's and Granite's Q/K rows (weights and biases), permuted by llama.cpp: the
        // heads to undo it over.
        let permuted = |name: &str| -> Option<usize> {
            if arch != "llama" && arch != "granite" {
                return None;
            }
            if name.ends_with("attn_q.weight") || name.ends_with("attn_q.bias") {
                Some(heads)
            } else if name.ends_with("attn_k.weight") || name.ends_with("attn_k.bias") {
                Some(kv)
            } else {
                None
            }
        };
        enum Held {
            F32(String, Tensor),
            Quant(String, Arc<QTensor>),
        }
        // Largest first, so the two cores finish together.
        let mut entries: Vec<&TensorEntry> = self.header.tensors.iter().collect();
        entries.sort_by_key(|t| std::cmp::Reverse(t.bytes));
        let out: Vec<Held> = entries
            .par_iter()
            .map(|t| {
                let name = t.name.as_str();
                let Some(hf) = hf_name(&arch, name) else {
                    return Ok(None);
                };
                if native && kept_quantized(&hf, t) {
                    let q = self.quantized(t, &hf, permuted(name))?;
                    self.release(t);
                    return Ok(Some(Held::Quant(hf, Arc::new(q))));
                }
                let w = self.dequantize(t)?;
                self.release(t);
                let edit = || -> candle_core::Result<Tensor> {
                    if arch.starts_with("gemma") && name.ends_with("norm.weight") {
                        // llama.cpp stores Gemma's `1 + w`; HF checkpoints hold `w`.
                        return w.affine(1.0, -1.0);
                    }
                    if let Some(h) = permuted(name) {
                        return reverse_permute(&w, h);
                    }
                    Ok(w.clone())
                };
                let w = edit().map_err(|e| corrupt(name, e))?;
                Ok(Some(Held::F32(hf, w)))
            })
            .filter_map(|r: Result<Option<Held>>| r.transpose())
            .collect::<Result<Vec<_>>>()?;
        let mut f32s = HashMap::new();
        let mut quant = HashMap::new();
        for h in out {
            match h {
                Held::F32(n, t) => {
                    f32s.insert(n, t);
                }
                Held::Quant(n, q) => {
                    quant.insert(n, q);
                }
            }
        }
        Ok((f32s, QuantStore::new(quant, kernels)))
    }

    /// A tensor as a `QTensor` of its own type (Llama's Q/K rows un-permuted over
    /// `permute` heads, moving whole rows of blocks), refused when a value is not finite.
    fn quantized(&self, t: &TensorEntry, hf: &str, permute: Option<usize>) -> Result<QTensor> {
        let corrupt = |reason: String| Error::CorruptWeights {
            path: self.path.clone(),
            reason,
        };
        let raw = aligned(self.raw(t));
        let n: usize = t.dims.iter().product();
        match non_finite_blocks(t.dtype, &raw, n) {
            Some(0) => {}
            Some(bad) => {
                return Err(corrupt(format!(
                    "{hf} holds non-finite values (NaN or infinity) in {bad} blocks"
                )))
            }
            None => return Err(corrupt(format!("tensor {}: bytes do not fit", t.name))),
        }
        let permuted: Vec<u64>;
        let bytes: &[u8] = match permute {
            Some(heads) => {
                let rows = t.dims[0];
                if heads == 0 || !rows.is_multiple_of(2 * heads) {
                    return Err(corrupt(format!(
                        "tensor {}: {rows} rows do not split into {heads} heads",
                        t.name
                    )));
                }
                let row = raw.len() / rows;
                let (d, d2) = (rows / heads, rows / heads / 2);
                let mut v = vec![0u64; raw.len().div_ceil(8)];
                // SAFETY: v holds at least raw.len() bytes; u64 has no invalid bit patterns.
                let out =
                    unsafe { std::slice::from_raw_parts_mut(v.as_mut_ptr() as *mut u8, raw.len()) };
                // New row h·d + j·d2 + i is old row h·d + 2i + j ([`reverse_permute`]).
                for h in 0..heads {
                    for j in 0..2 {
                        for i in 0..d2 {
                            let (new, old) = (h * d + j * d2 + i, h * d + 2 * i + j);
                            out[new * row..(new + 1) * row]
                                .copy_from_slice(&raw[old * row..(old + 1) * row]);
                        }
                    }
                }
                permuted = v;
                // SAFETY: reading back the bytes just written.
                unsafe { std::slice::from_raw_parts(permuted.as_ptr() as *const u8, raw.len()) }
            }
            None => &raw,
        };
        candle_core::quantized::ggml_file::qtensor_from_ggml(
            t.dtype,
            bytes,
            t.dims.clone(),
            &Device::Cpu,
        )
        .map_err(|e| {
            corrupt(format!(
                "tensor {}: {}",
                t.name,
                crate::error::candle_message(&e)
            ))
        })
    }
}

fn unsupported_gguf(arch: &str) -> Error {
    Error::UnsupportedArchitecture {
        found: format!("{arch} (GGUF)"),
        supported: GGUF_ARCHITECTURES.join(", "),
    }
}

/// Gemma 2's `query_pre_attn_scalar`, which its GGUF does not carry: llama.cpp scales
/// queries by `head_dim^-1/2`, but by `(hidden / heads)^-1/2` for the 46-layer 27B model
/// (whose `query_pre_attn_scalar` is 144 = 4608 / 32, its head_dim 128).
fn gemma2_query_scalar(layers: usize, hidden: usize, heads: usize, head_dim: usize) -> usize {
    if layers == 46 {
        hidden / heads.max(1)
    } else {
        head_dim
    }
}

/// Whether `--weights native` keeps the tensor `t` (HF name `hf`) quantized: a layer's
/// projection or MLP weight, the token embedding or the LM head, of a block-quantized
/// type, 2-D, its rows whole blocks.
fn kept_quantized(hf: &str, t: &TensorEntry) -> bool {
    use candle_core::quantized::GgmlDType as T;
    let role = hf == "model.embed_tokens.weight"
        || hf == "lm_head.weight"
        || (hf.starts_with("model.layers.")
            && (hf.ends_with("_proj.weight") || hf.ends_with("c_fc.weight")));
    let block = !matches!(t.dtype, T::F32 | T::F16 | T::BF16);
    role && block && t.dims.len() == 2 && t.dims[1].is_multiple_of(t.dtype.block_size())
}

/// The bytes of `raw`, borrowed when 8-byte aligned, else an aligned copy (candle
/// reinterprets the bytes as blocks; llama.cpp's alignment may be as small as 1).
enum Aligned<'a> {
    Borrowed(&'a [u8]),
    Copied(Vec<u64>, usize),
}

fn aligned(raw: &[u8]) -> Aligned<'_> {
    if (raw.as_ptr() as usize).is_multiple_of(8) {
        return Aligned::Borrowed(raw);
    }
    let mut v = vec![0u64; raw.len().div_ceil(8)];
    // SAFETY: v holds at least raw.len() bytes; u64 has no invalid bit patterns.
    let bytes = unsafe { std::slice::from_raw_parts_mut(v.as_mut_ptr() as *mut u8, raw.len()) };
    bytes.copy_from_slice(raw);
    Aligned::Copied(v, raw.len())
}

impl std::ops::Deref for Aligned<'_> {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            Aligned::Borrowed(b) => b,
            // SAFETY: the first `len` bytes of the copy, written by `aligned`.
            Aligned::Copied(v, len) => unsafe {
                std::slice::from_raw_parts(v.as_ptr() as *const u8, *len)
            },
        }
    }
}

/// How many blocks of a block-quantized tensor of `n` values have a non-finite scale;
/// `None` when the bytes do not fit or the type is not block-quantized. A block's values
/// are its small integers times its f16 (Q8_K: f32) scales, plus an f16 minimum in some
/// types: they are all finite exactly when those are, so reading the scales (2 to 4 bytes
/// of every 18 to 292) checks the values without dequantizing them.
fn non_finite_blocks(
    dtype: candle_core::quantized::GgmlDType,
    raw: &[u8],
    n: usize,
) -> Option<usize> {
    use candle_core::quantized::GgmlDType as T;
    // (block size in values, bytes, offsets of the f16 scales); Q8_K's f32 scale apart.
    let (per, size, f16s): (usize, usize, &[usize]) = match dtype {
        T::Q4_0 => (32, 18, &[0]),
        T::Q4_1 => (32, 20, &[0, 2]),
        T::Q5_0 => (32, 22, &[0]),
        T::Q5_1 => (32, 24, &[0, 2]),
        T::Q8_0 => (32, 34, &[0]),
        T::Q8_1 => (32, 36, &[0, 2]),
        T::Q2K => (256, 84, &[80, 82]),
        T::Q3K => (256, 110, &[108]),
        T::Q4K => (256, 144, &[0, 2]),
        T::Q5K => (256, 176, &[0, 2]),
        T::Q6K => (256, 210, &[208]),
        T::Q8K => (256, 292, &[]),
        _ => return None,
    };
    debug_assert_eq!(size, dtype.type_size());
    if n == 0 || !n.is_multiple_of(per) || raw.len() < (n / per).checked_mul(size)? {
        return None;
    }
    let blocks = raw[..n / per * size].par_chunks_exact(size);
    Some(if dtype == T::Q8K {
        blocks
            .filter(|b| !f32::from_le_bytes([b[0], b[1], b[2], b[3]]).is_finite())
            .count()
    } else {
        blocks
            .filter(|b| {
                f16s.iter().any(|&o| {
                    // An f16 is not finite when its exponent bits are all set.
                    u16::from_le_bytes([b[o], b[o + 1]]) & 0x7c00 == 0x7c00
                })
            })
            .count()
    })
}

/// `n` values of a block-quantized tensor dequantized with candle's own per-block
/// `to_float` (the function `QTensor::dequantize` runs: the same values), but straight from
/// the mapped bytes (no copy of the quantized data), into a buffer the kernel may back with
/// huge pages (a page fault per 2 MiB instead of per 4 KiB), and in parallel chunks of
/// blocks (Gemma 3's embedding is 60% of its weights: one thread used to dequantize it
/// while the other finished the rest). `None` for the types it does not cover (f32, f16,
/// bf16; candle's path then runs) or bytes that do not fit.
pub(crate) fn dequantize_blocks(
    dtype: candle_core::quantized::GgmlDType,
    raw: &[u8],
    n: usize,
) -> Option<Vec<f32>> {
    use candle_core::quantized::k_quants::*;
    use candle_core::quantized::GgmlDType as T;
    match dtype {
        T::Q4_0 => blocks::<BlockQ4_0>(raw, n),
        T::Q4_1 => blocks::<BlockQ4_1>(raw, n),
        T::Q5_0 => blocks::<BlockQ5_0>(raw, n),
        T::Q5_1 => blocks::<BlockQ5_1>(raw, n),
        T::Q8_0 => blocks::<BlockQ8_0>(raw, n),
        T::Q8_1 => blocks::<BlockQ8_1>(raw, n),
        T::Q2K => blocks::<BlockQ2K>(raw, n),
        T::Q3K => blocks::<BlockQ3K>(raw, n),
        T::Q4K => blocks::<BlockQ4K>(raw, n),
        T::Q5K => blocks::<BlockQ5K>(raw, n),
        T::Q6K => blocks::<BlockQ6K>(raw, n),
        T::Q8K => blocks::<BlockQ8K>(raw, n),
        _ => None,
    }
}

/// [`dequantize_blocks`] into `out` (its length the value count); false for the types it
/// does not cover or bytes that do not fit.
pub(crate) fn dequantize_into(
    dtype: candle_core::quantized::GgmlDType,
    raw: &[u8],
    out: &mut [f32],
) -> bool {
    use candle_core::quantized::k_quants::*;
    use candle_core::quantized::GgmlDType as T;
    match dtype {
        T::Q4_0 => blocks_into::<BlockQ4_0>(raw, out),
        T::Q4_1 => blocks_into::<BlockQ4_1>(raw, out),
        T::Q5_0 => blocks_into::<BlockQ5_0>(raw, out),
        T::Q5_1 => blocks_into::<BlockQ5_1>(raw, out),
        T::Q8_0 => blocks_into::<BlockQ8_0>(raw, out),
        T::Q8_1 => blocks_into::<BlockQ8_1>(raw, out),
        T::Q2K => blocks_into::<BlockQ2K>(raw, out),
        T::Q3K => blocks_into::<BlockQ3K>(raw, out),
        T::Q4K => blocks_into::<BlockQ4K>(raw, out),
        T::Q5K => blocks_into::<BlockQ5K>(raw, out),
        T::Q6K => blocks_into::<BlockQ6K>(raw, out),
        T::Q8K => blocks_into::<BlockQ8K>(raw, out),
        T::F16 => blocks_into::<half::f16>(raw, out),
        T::BF16 => blocks_into::<half::bf16>(raw, out),
        _ => false,
    }
}

fn blocks_into<B: candle_core::quantized::k_quants::GgmlType>(raw: &[u8], ys: &mut [f32]) -> bool {
    let (per, n) = (B::BLCK_SIZE, ys.len());
    if per == 0 || n == 0 || n % per != 0 {
        return false;
    }
    let count = n / per;
    let size = std::mem::size_of::<B>();
    if count.checked_mul(size).is_none_or(|b| raw.len() < b)
        || !(raw.as_ptr() as usize).is_multiple_of(std::mem::align_of::<B>())
    {
        return false;
    }
    // SAFETY: `count` blocks of `B` lie in `raw` (checked), aligned for `B` (checked);
    // the block types are plain data (integers and f16 bit patterns), valid for any bytes.
    let xs = unsafe { std::slice::from_raw_parts(raw.as_ptr() as *const B, count) };
    // Blocks a task converts (f16 / bf16 "blocks" are single values: more of them).
    let chunk = if per == 1 { 1 << 16 } else { 4096 };
    ys.par_chunks_mut(chunk * per)
        .zip(xs.par_chunks(chunk))
        .for_each(|(y, x)| B::to_float(x, y));
    true
}

fn blocks<B: candle_core::quantized::k_quants::GgmlType>(raw: &[u8], n: usize) -> Option<Vec<f32>> {
    let per = B::BLCK_SIZE;
    if per == 0 || n == 0 || !n.is_multiple_of(per) {
        return None;
    }
    let count = n / per;
    let size = std::mem::size_of::<B>();
    if raw.len() < count.checked_mul(size)?
        || !(raw.as_ptr() as usize).is_multiple_of(std::mem::align_of::<B>())
    {
        return None;
    }
    // SAFETY: `count` blocks of `B` lie in `raw` (checked), aligned for `B` (checked);
    // the block types are plain data (integers and f16 bit patterns), valid for any bytes.
    let xs = unsafe { std::slice::from_raw_parts(raw.as_ptr() as *const B, count) };
    let mut ys = cache::buffer(n);
    const CHUNK: usize = 4096;
    ys.par_chunks_mut(CHUNK * per)
        .zip(xs.par_chunks(CHUNK))
        .for_each(|(y, x)| B::to_float(x, y));
    Some(ys)
}

/// Undo llama.cpp's `permute` of Llama Q/K rows (`[heads, 2, d/2]` → `[heads, d/2, 2]`
/// reversed): transformers' `reverse_permute_weights`.
/// A bias (1-D) is permuted as a one-column matrix.
fn reverse_permute(w: &Tensor, heads: usize) -> candle_core::Result<Tensor> {
    if w.rank() == 1 {
        let rows = w.dim(0)?;
        return reverse_permute(&w.reshape((rows, 1))?, heads)?.reshape(rows);
    }
    let (rows, cols) = w.dims2()?;
    let d2 = rows / heads / 2;
    w.reshape((heads, d2, 2, cols))?
        .transpose(1, 2)?
        .contiguous()?
        .reshape((rows, cols))
}

/// llama.cpp tensor name → HF checkpoint name (`None`: not used by codescope, e.g.
/// precomputed rope frequencies).
pub fn hf_name(arch: &str, gguf: &str) -> Option<String> {
    match gguf {
        "token_embd.weight" => return Some("model.embed_tokens.weight".into()),
        "output_norm.weight" => return Some("model.norm.weight".into()),
        // StarCoder2's final LayerNorm.
        "output_norm.bias" => return Some("model.norm.bias".into()),
        "output.weight" => return Some("lm_head.weight".into()),
        _ => {}
    }
    let rest = gguf.strip_prefix("blk.")?;
    let (layer, name) = rest.split_once('.')?;
    let layer: usize = layer.parse().ok()?;
    let (stem, kind) = name.rsplit_once('.')?;
    let ffn_norm = if arch == "gemma3" || arch == "gemma2" {
        "pre_feedforward_layernorm"
    } else {
        "post_attention_layernorm"
    };
    let hf = match stem {
        "attn_q" => "self_attn.q_proj",
        "attn_k" => "self_attn.k_proj",
        "attn_v" => "self_attn.v_proj",
        "attn_output" => "self_attn.o_proj",
        "attn_q_norm" => "self_attn.q_norm",
        "attn_k_norm" => "self_attn.k_norm",
        "attn_norm" => "input_layernorm",
        "post_attention_norm" => "post_attention_layernorm",
        "ffn_norm" => ffn_norm,
        "post_ffw_norm" => "post_feedforward_layernorm",
        "attn_qkv" if arch == "phi3" => "self_attn.qkv_proj",
        "ffn_gate" => "mlp.gate_proj",
        // Phi-3's fused `[gate | up]`.
        "ffn_up" if arch == "phi3" => "mlp.gate_up_proj",
        // StarCoder2's plain MLP.
        "ffn_up" if arch == "starcoder2" => "mlp.c_fc",
        "ffn_down" if arch == "starcoder2" => "mlp.c_proj",
        "ffn_up" => "mlp.up_proj",
        "ffn_down" => "mlp.down_proj",
        _ => return None,
    };
    Some(format!("model.layers.{layer}.{hf}.{kind}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_map_to_hf() {
        assert_eq!(
            hf_name("gemma3", "blk.3.ffn_norm.weight").as_deref(),
            Some("model.layers.3.pre_feedforward_layernorm.weight")
        );
        assert_eq!(
            hf_name("llama", "blk.3.ffn_norm.weight").as_deref(),
            Some("model.layers.3.post_attention_layernorm.weight")
        );
        assert_eq!(
            hf_name("qwen2", "blk.0.attn_q.bias").as_deref(),
            Some("model.layers.0.self_attn.q_proj.bias")
        );
        assert_eq!(hf_name("llama", "rope_freqs.weight"), None);
        assert_eq!(
            hf_name("phi3", "blk.1.ffn_up.weight").as_deref(),
            Some("model.layers.1.mlp.gate_up_proj.weight")
        );
        assert_eq!(
            hf_name("phi3", "blk.0.attn_qkv.weight").as_deref(),
            Some("model.layers.0.self_attn.qkv_proj.weight")
        );
        assert_eq!(hf_name("llama", "blk.0.attn_qkv.weight"), None);
    }

    #[test]
    fn gemma2_query_scale_is_llama_cpp_s() {
        // Gemma 2 2B (26 layers, 2304 / 8 heads, head_dim 256) and 9B (42, 3584 / 16,
        // 256): head_dim; 27B (46, 4608 / 32, 128): hidden / heads.
        assert_eq!(gemma2_query_scalar(26, 2304, 8, 256), 256);
        assert_eq!(gemma2_query_scalar(42, 3584, 16, 256), 256);
        assert_eq!(gemma2_query_scalar(46, 4608, 32, 128), 144);
    }

    #[test]
    fn new_names_map_to_hf() {
        assert_eq!(
            hf_name("starcoder2", "blk.1.ffn_up.bias").as_deref(),
            Some("model.layers.1.mlp.c_fc.bias")
        );
        assert_eq!(
            hf_name("starcoder2", "blk.1.ffn_down.weight").as_deref(),
            Some("model.layers.1.mlp.c_proj.weight")
        );
        assert_eq!(
            hf_name("starcoder2", "output_norm.bias").as_deref(),
            Some("model.norm.bias")
        );
        assert_eq!(
            hf_name("gemma2", "blk.0.ffn_norm.weight").as_deref(),
            Some("model.layers.0.pre_feedforward_layernorm.weight")
        );
        assert_eq!(
            hf_name("granite", "blk.0.ffn_up.weight").as_deref(),
            Some("model.layers.0.mlp.up_proj.weight")
        );
    }

    #[test]
    fn reverse_permute_undoes_llama_cpp_permute() {
        // llama.cpp: w.reshape(heads, 2, d/2, cols).swapaxes(1, 2).reshape(rows, cols)
        let (heads, d, cols) = (2usize, 4usize, 3usize);
        let rows = heads * d;
        let orig: Vec<f32> = (0..rows * cols).map(|v| v as f32).collect();
        let w = Tensor::from_vec(orig.clone(), (rows, cols), &Device::Cpu).unwrap();
        let permuted = w
            .reshape((heads, 2, d / 2, cols))
            .unwrap()
            .transpose(1, 2)
            .unwrap()
            .contiguous()
            .unwrap()
            .reshape((rows, cols))
            .unwrap();
        // Row order after permute, by hand: head 0 rows 0,2,1,3; head 1 rows 4,6,5,7.
        let first: Vec<f32> = permuted.get(1).unwrap().to_vec1().unwrap();
        assert_eq!(first, vec![6.0, 7.0, 8.0]);
        let back = reverse_permute(&permuted, heads).unwrap();
        assert_eq!(back.flatten_all().unwrap().to_vec1::<f32>().unwrap(), orig);
    }
}
