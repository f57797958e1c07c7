//! The memory plan: before a model is loaded, the peak it will need — its weights as they
//! will be held (quantized, half precision or f32, [`super::quant`]), one layer's working attention and
//! the attention every layer keeps at the input's length, the hidden states, one layer's
//! activations and the LM head's buffers — against the memory available (the cgroup's
//! limit, v2 `memory.max` or v1 `memory.limit_in_bytes`, and `/proc/meminfo`'s
//! `MemAvailable`, whichever is less; `CODESCOPE_MEMORY_LIMIT_MB` overrides both). A plan
//! that does not fit is refused in one line naming what it needs, what is available and
//! what would fit, before a byte of weights is read.
//!
//! The input's length is not known before the tokenizer is loaded: the plan takes half
//! the bytes of the input ([`set_input_bytes`], set when FILE is read; code averages 3 to
//! 4 bytes a token) or, without one, the model's window, both capped by the window the
//! attention budget allows ([`super::budget_window`]). It is an estimate (upper bounds
//! throughout, plus [`RUNTIME_BYTES`] for the process itself); the figures measured
//! against it are in docs/performance.md.

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};

use super::quant::{self, WeightsMode};
use super::source::ModelFiles;
use super::Weights;
use crate::error::{Error, Result};

/// What the process takes besides the model: code, tokenizer tables, allocator slack.
pub const RUNTIME_BYTES: u64 = 256 << 20;

static INPUT_BYTES: AtomicUsize = AtomicUsize::new(0);

/// The input the next load is for is `bytes` long (0: unknown).
pub fn set_input_bytes(bytes: usize) {
    INPUT_BYTES.store(bytes, Ordering::Relaxed);
}

/// The shape of a model, as far as the plan needs it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Dims {
    pub layers: usize,
    pub heads: usize,
    pub hidden: usize,
    pub intermediate: usize,
    pub vocab: usize,
    pub window: usize,
    /// Whether the model has an LM head (causal).
    pub causal: bool,
}

/// A model's weights as the plan counts them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WeightBytes {
    /// As held with `--weights native`: quantized (GGUF) or half-precision matrices at
    /// their size, everything else f32.
    pub native: u64,
    /// As held with `--weights f32`.
    pub f32: u64,
    /// Native only: the largest f32 matrix dequantized for one product (types without a
    /// quantized kernel, [`quant::has_kernel`]).
    pub transient: u64,
    /// Whether `--weights` changes how they are held (a GGUF file, or half-precision
    /// matrices of a family that keeps them).
    pub modes: bool,
    /// Native only: the layers' quantized (or half) matrices as f32, the copy the causal
    /// commands pack when it is at most [`quant::PACK_LIMIT`] ([`quant::set_packing`]).
    pub layers_f32: u64,
}

impl WeightBytes {
    fn held(&self, mode: WeightsMode) -> u64 {
        match mode {
            WeightsMode::Native if self.modes && quant::packs(self.layers_f32) => {
                self.native + self.transient + self.layers_f32
            }
            WeightsMode::Native | WeightsMode::Kernels if self.modes => {
                self.native + self.transient
            }
            _ => self.f32,
        }
    }
}

/// The peak a run is planned to need, by part (bytes).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Need {
    pub weights: u64,
    pub attention: u64,
    pub hidden: u64,
    pub activations: u64,
    pub head: u64,
    pub tokens: usize,
}

impl Need {
    /// Everything, the process's own [`RUNTIME_BYTES`] included.
    pub fn total(&self) -> u64 {
        self.weights + self.attention + self.hidden + self.activations + self.head + RUNTIME_BYTES
    }
}

/// The plan for `tokens` tokens of a model of `dims` whose weights are `w`, held as `mode`.
pub fn need(dims: &Dims, w: &WeightBytes, mode: WeightsMode, tokens: usize) -> Need {
    let n = tokens as u64;
    let (l, h, d) = (dims.layers as u64, dims.heads as u64, dims.hidden as u64);
    let f = 4u64;
    // One layer's scores and probabilities being computed, and every layer's kept.
    let attention = h * n * n * f * (l + 2);
    let hidden = (l + 1) * n * d * f;
    // One layer's fused Q|K|V (heads repeated), MLP input and output, residual copies.
    let activations = n * (3 * d + 3 * dims.intermediate.max(dims.hidden) as u64 + 4 * d) * f;
    let head = if dims.causal {
        // One block of logits (read in place by the scorer), and the head's packed copy
        // (the head's product on AVX2 and wider: `lm::packed_logits`; none for
        // `--weights kernels`, whose head runs quantized).
        let rows = (dims.tokens_block() as u64).min(n.max(1));
        let packed = if mode == WeightsMode::Kernels && w.modes {
            0
        } else {
            super::lm::packed_head_bytes(dims.vocab, dims.hidden)
        };
        rows * dims.vocab as u64 * f + packed
    } else {
        0
    };
    Need {
        weights: w.held(mode),
        attention,
        hidden,
        activations,
        head,
        tokens,
    }
}

impl Dims {
    fn tokens_block(&self) -> usize {
        super::lm::logit_block_rows(self.vocab)
    }
}

/// The memory available to this process and where the figure comes from.
pub fn available() -> Result<Option<(u64, &'static str)>> {
    if let Ok(v) = std::env::var("CODESCOPE_MEMORY_LIMIT_MB") {
        let mb: u64 = v.trim().parse().map_err(|_| Error::Setting {
            name: "CODESCOPE_MEMORY_LIMIT_MB".into(),
            reason: format!("'{v}' is not a whole number of MiB"),
        })?;
        return Ok(Some((mb << 20, "CODESCOPE_MEMORY_LIMIT_MB")));
    }
    let meminfo = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|s| mem_available(&s));
    let cgroup = cgroup_limit();
    Ok(match (cgroup, meminfo) {
        (Some(c), Some(m)) if c < m => Some((c, "the cgroup's memory limit")),
        (_, Some(m)) => Some((m, "MemAvailable")),
        (Some(c), None) => Some((c, "the cgroup's memory limit")),
        (None, None) => None,
    })
}

/// `MemAvailable` of a `/proc/meminfo` text, in bytes.
fn mem_available(meminfo: &str) -> Option<u64> {
    let line = meminfo.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb << 10)
}

/// The cgroup's memory limit less what it already uses: v2 `memory.max` (not `max`) or
/// v1 `memory.limit_in_bytes` (not the "unlimited" page-rounded maximum).
fn cgroup_limit() -> Option<u64> {
    let read = |p: &str| std::fs::read_to_string(p).ok();
    let num = |s: Option<String>| s.and_then(|s| s.trim().parse::<u64>().ok());
    let (limit, used) = if let Some(max) = read("/sys/fs/cgroup/memory.max") {
        (
            num(Some(max))?,
            num(read("/sys/fs/cgroup/memory.current")).unwrap_or(0),
        )
    } else {
        (
            num(read("/sys/fs/cgroup/memory/memory.limit_in_bytes"))?,
            num(read("/sys/fs/cgroup/memory/memory.usage_in_bytes")).unwrap_or(0),
        )
    };
    if limit >= 1 << 60 {
        return None;
    }
    Some(limit.saturating_sub(used))
}

/// The plan's figures for the model `files`: its shape and its weights.
pub fn model_figures(files: &ModelFiles) -> Result<(Dims, WeightBytes)> {
    match &files.weights {
        Weights::Gguf(p) => gguf_figures(p),
        Weights::Safetensors(paths) => {
            let holds = super::read_config(&files.config)
                .ok()
                .and_then(|(_, t)| super::family_of(&t))
                .is_some_and(super::Family::holds_matrices);
            let mut entries = Vec::new();
            for p in paths {
                entries.extend(super::weights::safetensors_entries(p)?);
            }
            Ok((
                config_dims(&files.config),
                safetensors_bytes(&entries, holds),
            ))
        }
        Weights::Pth(p) => {
            // A pickle's tensors are read to f32; its size is the closest figure.
            let b = std::fs::metadata(p).map_err(|e| Error::io(p, e))?.len();
            Ok((
                config_dims(&files.config),
                WeightBytes {
                    native: b,
                    f32: b,
                    transient: 0,
                    modes: false,
                    layers_f32: 0,
                },
            ))
        }
    }
}

fn gguf_figures(p: &Path) -> Result<(Dims, WeightBytes)> {
    let file = super::gguf::GgufFile::open(p)?;
    let cfg = file.hf_config()?;
    let dims = dims_of(&cfg, true);
    Ok((
        dims,
        WeightBytes {
            native: file.native_bytes(),
            f32: file.f32_bytes(),
            transient: file.transient_bytes(),
            modes: true,
            layers_f32: file.layer_f32_bytes(),
        },
    ))
}

/// The shape from a `config.json` (the key names of the families codescope loads);
/// zeros where a key is missing (the plan then counts the weights only).
fn config_dims(config: &Path) -> Dims {
    let v: serde_json::Value =
        crate::fsio::read_to_string_bounded(config, super::limits::MAX_CONFIG_BYTES, "config.json")
            .ok()
            .and_then(|t| serde_json::from_str(&t).ok())
            .unwrap_or_default();
    // A `codet5p` config nests its stacks' shapes: the decoder's is the larger.
    let nested = match v.get("model_type").and_then(|m| m.as_str()) {
        Some("codet5p") => "decoder",
        _ => "text_config",
    };
    let v = v.get(nested).cloned().unwrap_or(v);
    let causal = !matches!(
        v.get("model_type").and_then(|m| m.as_str()),
        Some("bert" | "roberta" | "t5" | "bart" | "plbart")
    );
    dims_of(&v, causal)
}

fn dims_of(v: &serde_json::Value, causal: bool) -> Dims {
    let get = |keys: &[&str]| {
        keys.iter()
            .find_map(|k| v.get(*k).and_then(|x| x.as_u64()))
            .unwrap_or(0) as usize
    };
    let hidden = get(&["hidden_size", "n_embd", "d_model"]);
    Dims {
        layers: get(&["num_hidden_layers", "n_layer", "num_layers"]),
        heads: get(&["num_attention_heads", "n_head", "num_heads"]),
        hidden,
        intermediate: get(&["intermediate_size", "n_inner", "d_ff"]).max(4 * hidden),
        vocab: get(&["vocab_size"]),
        window: get(&["max_position_embeddings", "n_positions", "n_ctx"]),
        causal,
    }
}

/// The plan's weight figures of safetensors tensors `entries`: f32 throughout with
/// `--weights f32` (and for a family that reads every tensor as f32, `holds` false); else
/// the half-precision matrices at 2 bytes a value ([`super::weights::kept_half`]), the
/// rest at 4, and the two largest layer matrices and the LM head's slice converted for
/// one product.
fn safetensors_bytes(entries: &[super::weights::StEntry], holds: bool) -> WeightBytes {
    let f32_bytes: u64 = entries.iter().map(|e| e.elements() * 4).sum();
    let half: Vec<&super::weights::StEntry> = entries
        .iter()
        .filter(|e| holds && super::weights::kept_half(e))
        .collect();
    if half.is_empty() {
        return WeightBytes {
            native: f32_bytes,
            f32: f32_bytes,
            transient: 0,
            modes: false,
            layers_f32: 0,
        };
    }
    let half_bytes: u64 = half.iter().map(|e| e.elements() * 2).sum();
    let mut layer: Vec<u64> = half
        .iter()
        .filter(|e| e.name.starts_with("model.layers."))
        .map(|e| e.elements() * 4)
        .collect();
    layer.sort_unstable_by(|a, b| b.cmp(a));
    // The LM head (its own or the tied embedding) is converted a slice of rows at a time.
    let head = half
        .iter()
        .filter(|e| e.name == "lm_head.weight" || e.name == "model.embed_tokens.weight")
        .map(|e| (e.elements() * 4).min(quant::HEAD_SLICE_BYTES))
        .max()
        .unwrap_or(0);
    WeightBytes {
        // Each half matrix counted at 2 bytes a value instead of 4.
        native: f32_bytes - half_bytes,
        f32: f32_bytes,
        transient: layer.iter().take(2).sum::<u64>().max(head),
        modes: true,
        layers_f32: layer.iter().sum(),
    }
}

/// Bytes per token the plan assumes: code takes 3 to 4 bytes per token in the tokenizers
/// codescope runs (the bundled samples: 2.5 to 3.6 with Gemma 3's), so half its bytes
/// leaves a margin.
const BYTES_PER_TOKEN: usize = 2;

/// The tokens a plan is made for: half the input's bytes (plus the special tokens) when
/// known, else the window, capped by the window the attention budget allows.
fn planned_tokens(dims: &Dims) -> Result<usize> {
    let window = if dims.layers > 0 && dims.heads > 0 && dims.window > 0 {
        super::budget_window(dims.window, dims.layers, dims.heads)?
    } else {
        dims.window.max(1)
    };
    Ok(match INPUT_BYTES.load(Ordering::Relaxed) {
        0 => window,
        b => (b / BYTES_PER_TOKEN + 2).min(window),
    })
}

/// MiB, for messages.
fn mib(b: u64) -> String {
    if b >= 10 << 30 {
        format!("{:.1} GiB", b as f64 / (1u64 << 30) as f64)
    } else {
        format!("{} MiB", b.div_ceil(1 << 20))
    }
}

impl Need {
    /// One line: the total and its parts.
    pub fn describe(&self) -> String {
        format!(
            "{} (weights {}, attention {}, hidden states {}, activations {}, LM head {}, runtime {}) for {} tokens",
            mib(self.total()),
            mib(self.weights),
            mib(self.attention),
            mib(self.hidden),
            mib(self.activations),
            mib(self.head),
            mib(RUNTIME_BYTES),
            self.tokens
        )
    }
}

/// Check the plan for loading `files` with the current weights mode; refuse it in one
/// line when it does not fit the memory available.
pub fn check(files: &ModelFiles, random_weights: Option<u64>) -> Result<()> {
    let Some((avail, from)) = available()? else {
        return Ok(());
    };
    let (dims, w) = model_figures(files)?;
    // Random weights are built in f32.
    let mode = if random_weights.is_some() {
        WeightsMode::F32
    } else {
        quant::mode()
    };
    let tokens = planned_tokens(&dims)?;
    let plan = need(&dims, &w, mode, tokens);
    tracing::info!(
        need = plan.total(),
        available = avail,
        from,
        tokens,
        mode = mode.name(),
        "memory plan"
    );
    if plan.total() <= avail {
        return Ok(());
    }
    let mut fits = Vec::new();
    if w.modes && mode != WeightsMode::Native && random_weights.is_none() {
        let native = need(&dims, &w, WeightsMode::Native, tokens);
        if native.total() <= avail {
            fits.push(format!("--weights native ({})", mib(native.total())));
        }
    }
    let best = [mode, WeightsMode::Native]
        .into_iter()
        .filter(|_| fits.is_empty())
        .filter(|m| *m == mode || (w.modes && random_weights.is_none()))
        .filter_map(|m| {
            // The longest input that fits in mode m.
            if need(&dims, &w, m, 1).total() > avail {
                return None;
            }
            let (mut lo, mut hi) = (1usize, tokens);
            while lo < hi {
                let mid = (lo + hi).div_ceil(2);
                if need(&dims, &w, m, mid).total() <= avail {
                    lo = mid;
                } else {
                    hi = mid - 1;
                }
            }
            Some((m, lo))
        })
        .max_by_key(|(_, n)| *n);
    if let Some((m, n)) = best {
        let with = if m == mode {
            String::new()
        } else {
            format!(" with --weights {}", m.name())
        };
        fits.push(format!(
            "an input of at most {n} tokens{with} (a shorter FILE, or --lines A-B in the explorer)"
        ));
    }
    let fit = if fits.is_empty() {
        let least = [mode, WeightsMode::Native]
            .into_iter()
            .filter(|m| *m == mode || (w.modes && random_weights.is_none()))
            .map(|m| need(&dims, &w, m, 1).total())
            .min()
            .unwrap_or(0);
        format!(
            "nothing: the weights and the runtime alone need {}",
            mib(least)
        )
    } else {
        fits.join(", or ")
    };
    Err(Error::Memory(format!(
        "not enough memory for {} with {} weights: it needs {}, {} available ({from}); would fit: {fit}",
        files.source,
        if w.modes { mode.name() } else { "f32" },
        plan.describe(),
        mib(avail),
    )))
}

/// Tokens [`estimate_line`] plans for.
pub const LISTING_TOKENS: usize = 512;

/// The plan's peak for `files` at [`LISTING_TOKENS`] tokens (capped by the window), in
/// every mode that applies: `native 0.6 GiB, f32 1.4 GiB` for a GGUF or half-precision
/// matrices, `f32 0.5 GiB` otherwise (`codescope models`).
pub fn estimate_line(files: &ModelFiles) -> Result<String> {
    let (dims, w) = model_figures(files)?;
    let tokens = if dims.window > 0 {
        LISTING_TOKENS.min(dims.window)
    } else {
        LISTING_TOKENS
    };
    let gib = |m: WeightsMode| {
        format!(
            "{:.1} GiB",
            need(&dims, &w, m, tokens).total() as f64 / (1u64 << 30) as f64
        )
    };
    Ok(if w.modes {
        format!(
            "native {}, f32 {}",
            gib(WeightsMode::Native),
            gib(WeightsMode::F32)
        )
    } else {
        format!("f32 {}", gib(WeightsMode::F32))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::weights::StEntry;

    fn entry(name: &str, dtype: &str, shape: &[usize]) -> StEntry {
        StEntry {
            name: name.into(),
            dtype: dtype.into(),
            shape: shape.to_vec(),
            start: 0,
        }
    }

    #[test]
    fn half_matrices_count_two_bytes_and_their_largest_products() {
        let entries = [
            entry("model.embed_tokens.weight", "BF16", &[300, 32]),
            entry("model.layers.0.self_attn.q_proj.weight", "BF16", &[32, 32]),
            entry("model.layers.0.mlp.up_proj.weight", "BF16", &[48, 32]),
            entry("model.layers.0.mlp.down_proj.weight", "BF16", &[32, 48]),
            // Norms and biases, and f32 matrices, are held f32.
            entry("model.layers.0.input_layernorm.weight", "BF16", &[32]),
            entry("model.layers.0.self_attn.q_proj.bias", "BF16", &[32]),
            entry("model.layers.0.self_attn.o_proj.weight", "F32", &[32, 32]),
        ];
        let all: u64 = 300 * 32 + 32 * 32 + 2 * 48 * 32 + 2 * 32 + 32 * 32;
        let half: u64 = 300 * 32 + 32 * 32 + 2 * 48 * 32;
        let w = safetensors_bytes(&entries, true);
        assert_eq!(w.f32, all * 4);
        assert_eq!(w.native, half * 2 + (all - half) * 4);
        // The embedding (the tied head, 38,400 bytes of f32) against up + down (24,576).
        assert_eq!(w.transient, 300 * 32 * 4);
        assert!(w.modes);
        let dims = Dims::default();
        assert_eq!(
            need(&dims, &w, WeightsMode::Native, 1).weights,
            w.native + w.transient
        );
        assert_eq!(need(&dims, &w, WeightsMode::F32, 1).weights, all * 4);
        // A family that reads everything as f32, or an f32 checkpoint: the mode is moot.
        for w in [
            safetensors_bytes(&entries, false),
            safetensors_bytes(&[entry("lm_head.weight", "F32", &[300, 32])], true),
        ] {
            assert!(!w.modes && w.native == w.f32 && w.transient == 0);
        }
    }

    #[test]
    fn meminfo_and_plan_parts() {
        let m = "MemTotal: 100 kB\nMemAvailable:   2048 kB\n";
        assert_eq!(mem_available(m), Some(2 << 20));
        let dims = Dims {
            layers: 2,
            heads: 4,
            hidden: 8,
            intermediate: 16,
            vocab: 10,
            window: 64,
            causal: true,
        };
        let w = WeightBytes {
            native: 100,
            f32: 400,
            transient: 10,
            modes: true,
            layers_f32: 300,
        };
        let n = need(&dims, &w, WeightsMode::Native, 3);
        assert_eq!(n.weights, 110);
        assert_eq!(need(&dims, &w, WeightsMode::F32, 3).weights, 400);
        // 4 heads x 9 pairs x 4 bytes x (2 kept + 2 working).
        assert_eq!(n.attention, 4 * 9 * 4 * 4);
        assert_eq!(n.hidden, 3 * 3 * 8 * 4);
        // A block of logits, and the head's packed copy where the CPU packs it.
        assert_eq!(
            n.head,
            3 * 10 * 4 + crate::model::lm::packed_head_bytes(10, 8)
        );
        let kernels = need(&dims, &w, WeightsMode::Kernels, 3);
        assert_eq!(kernels.head, 3 * 10 * 4);
        assert_eq!(
            n.total(),
            n.weights + n.attention + n.hidden + n.activations + n.head + RUNTIME_BYTES
        );
    }
}
