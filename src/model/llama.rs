//! Llama-family decoders: Llama (deepseek-coder, CodeLlama), Qwen2 (Qwen2.5-Coder),
//! Qwen3, Mistral (Codestral), Granite, Phi-3 and StarCoder2 — one forward with the
//! families' differences as settings ([`Flavor`]).
//!
//! The computation mirrors Hugging Face transformers' `modeling_llama.py` /
//! `modeling_qwen2.py` / `modeling_qwen3.py` / `modeling_mistral.py` /
//! `modeling_granite.py` / `modeling_phi3.py` / `modeling_starcoder2.py` with eager
//! attention, in f32: token embedding, then per layer `x += o_proj(attn(rope(q),
//! rope(k), v))` on the normed input and `x += mlp(h)` on the normed result; a final
//! norm; an LM head (tied to the embedding when `tie_word_embeddings`).
//!
//! - Rotary embeddings are HF's "rotate half" form (not the interleaved one):
//!   `inv_freq[i] = 1 / theta^(2i/d)` computed in f32 as HF does, divided by `factor` for
//!   `rope_type: linear` (deepseek-coder); other scalings (llama3, yarn, dynamic, Phi-3's
//!   longrope / su) are refused at load rather than silently computed wrong. `rope_theta`
//!   is read from the top level (transformers 4) or `rope_parameters` (transformers 5).
//!   Phi-3's `partial_rotary_factor` rotates only the first `d * factor` features of
//!   each head (`inv_freq` over that many), the rest pass through.
//! - Grouped-query attention: K/V heads are repeated so query head `h` reads KV head
//!   `h / (heads / kv_heads)` (HF `repeat_kv`); captured attention is per query head.
//! - Biases are loaded wherever the checkpoint has them (Qwen2: q/k/v; Llama and Granite
//!   with `attention_bias` / `mlp_bias`; StarCoder2 with `use_bias`: every projection).
//! - Qwen3: per-head RMS norms `q_norm` / `k_norm` (over `head_dim`, weight `w`) on
//!   queries and keys before the rotary embedding; `head_dim` from the config (128 when
//!   absent, Qwen3's default), independent of `hidden / heads`.
//! - Sliding windows: Mistral, StarCoder2 and Phi-3 limit every layer to the last
//!   `sliding_window` keys when the config sets one (Mistral's default 4096 when the key
//!   is absent, none when it is `null`): query `i` sees keys `j` with `i - j < window`
//!   (HF `create_sliding_window_causal_mask`). Qwen2 / Qwen3 with `use_sliding_window`
//!   cap the input at `sliding_window` instead (inside it sliding attention is full
//!   causal).
//! - Granite: the embedding is multiplied by `embedding_multiplier`, attention scores are
//!   scaled by `attention_multiplier` (instead of `head_dim^-1/2`), each residual branch
//!   by `residual_multiplier`, and the logits divided by `logits_scaling`.
//! - Phi-3: fused `qkv_proj` (`[Q | K | V]` rows) and `gate_up_proj` (`[gate | up]`).
//! - StarCoder2: LayerNorms with bias (`norm_epsilon`), a plain MLP `c_proj(gelu_tanh(
//!   c_fc(h)))`, tied head by default.
//! - Hidden states follow HF `output_hidden_states` exactly: `[0]` is the embedding
//!   output (Granite: times its multiplier), `[l]` the output of layer `l` for
//!   `l < layers`, and the LAST entry is the output of the final layer *after the final
//!   norm* (HF replaces it by `last_hidden_state`). Checked against transformers 5.24 by
//!   `tools/reference/tiny_decoder_reference.py` and
//!   `tools/reference/tiny_llm_families_reference.py`.
//! - Window: `max_position_embeddings`, or Qwen2's / Qwen3's `sliding_window` when
//!   `use_sliding_window` is set.
//!
//! Invariants: one unpadded sequence at a time, causal mask, positions `0..n`.

use candle_core::{Device, Module, Tensor};
use candle_nn::{LayerNorm, VarBuilder};
use serde::Deserialize;

use std::sync::Arc;

use candle_core::quantized::QTensor;

use super::decoder::{head_rms, repeat_kv, Pass};
use super::gpt_bigcode::{layer_norm, Gelu};
use super::quant::{Embed, Head, QLinears, QuantStore};
use super::rope::{self, Rope};
use super::{Backbone, Capture, Family, ForwardOptions, LogitsSink};
use crate::error::{Error, Result};

/// The fields of an HF Llama/Qwen2 `config.json` that codescope needs.
#[derive(Debug, Clone, Deserialize)]
pub struct LlamaConfig {
    pub vocab_size: usize,
    pub hidden_size: usize,
    pub intermediate_size: usize,
    pub num_hidden_layers: usize,
    pub num_attention_heads: usize,
    #[serde(default)]
    pub num_key_value_heads: Option<usize>,
    #[serde(default)]
    pub head_dim: Option<usize>,
    pub max_position_embeddings: usize,
    #[serde(default = "default_eps")]
    pub rms_norm_eps: f64,
    #[serde(default)]
    pub rope_theta: Option<f64>,
    #[serde(default)]
    pub rope_scaling: Option<serde_json::Value>,
    #[serde(default)]
    pub rope_parameters: Option<serde_json::Value>,
    #[serde(default)]
    pub tie_word_embeddings: bool,
    #[serde(default = "default_act")]
    pub hidden_act: String,
    #[serde(default)]
    pub use_sliding_window: bool,
    #[serde(default)]
    pub sliding_window: Option<usize>,
    /// Phi-3 (older configs; transformers 5 keeps it in `rope_parameters`).
    #[serde(default)]
    pub partial_rotary_factor: Option<f64>,
    /// StarCoder2's LayerNorm epsilon.
    #[serde(default)]
    pub norm_epsilon: Option<f64>,
    /// Granite's multipliers (1 when absent).
    #[serde(default)]
    pub embedding_multiplier: Option<f64>,
    #[serde(default)]
    pub attention_multiplier: Option<f64>,
    #[serde(default)]
    pub residual_multiplier: Option<f64>,
    #[serde(default)]
    pub logits_scaling: Option<f64>,
}

/// How a family of this module differs from Llama (read from its `model_type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flavor {
    /// Llama and Qwen2: the plain layout.
    Llama,
    /// Qwen3: per-head q/k norms.
    Qwen3,
    /// Mistral: a sliding window on every layer.
    Mistral,
    /// Granite: embedding, attention, residual and logit multipliers.
    Granite,
    /// Phi-3: fused projections, partial rotary, a sliding window.
    Phi3,
    /// StarCoder2: LayerNorms with bias, plain GELU MLP, a sliding window.
    Starcoder2,
}

impl Flavor {
    /// The flavor of a family this module builds (`None`: another module's).
    pub fn of(family: Family) -> Option<Flavor> {
        Some(match family {
            Family::Llama | Family::Qwen2 => Flavor::Llama,
            Family::Qwen3 => Flavor::Qwen3,
            Family::Mistral => Flavor::Mistral,
            Family::Granite => Flavor::Granite,
            Family::Phi3 => Flavor::Phi3,
            Family::Starcoder2 => Flavor::Starcoder2,
            _ => return None,
        })
    }

    /// Whether `sliding_window` (when set) limits every layer's keys.
    fn slides(self) -> bool {
        matches!(self, Flavor::Mistral | Flavor::Phi3 | Flavor::Starcoder2)
    }
}

/// Parse the `config.json` value of `family` with that family's transformers defaults
/// for the keys it lacks (so a config that leaves them out loads as transformers loads
/// it): Qwen3's `head_dim` 128, Mistral's `sliding_window` 4096, StarCoder2's tied head,
/// `gelu_pytorch_tanh` and `norm_epsilon` 1e-5, Phi-3's `rms_norm_eps` 1e-5.
pub fn parse_config(
    family: Family,
    cfg: &serde_json::Value,
) -> std::result::Result<LlamaConfig, String> {
    let mut cfg = cfg.clone();
    let defaults: &[(&str, serde_json::Value)] = match family {
        Family::Qwen3 => &[("head_dim", serde_json::json!(128))],
        Family::Mistral => &[("sliding_window", serde_json::json!(4096))],
        Family::Starcoder2 => &[
            ("tie_word_embeddings", serde_json::json!(true)),
            ("hidden_act", serde_json::json!("gelu_pytorch_tanh")),
            ("norm_epsilon", serde_json::json!(1e-5)),
        ],
        Family::Phi3 => &[("rms_norm_eps", serde_json::json!(1e-5))],
        _ => &[],
    };
    if let Some(o) = cfg.as_object_mut() {
        for (k, v) in defaults {
            o.entry(k.to_string()).or_insert_with(|| v.clone());
        }
    }
    serde_json::from_value(cfg).map_err(|e| e.to_string())
}

fn default_eps() -> f64 {
    1e-6
}
fn default_act() -> String {
    "silu".into()
}

impl LlamaConfig {
    fn kv_heads(&self) -> usize {
        self.num_key_value_heads.unwrap_or(self.num_attention_heads)
    }
    fn head_dim(&self) -> usize {
        self.head_dim
            .unwrap_or(self.hidden_size / self.num_attention_heads.max(1))
    }
    /// Tokens per input, special tokens included (Qwen2's and Qwen3's
    /// `use_sliding_window` caps it; the other families' windows slide inside it).
    pub fn window(&self) -> usize {
        match (self.use_sliding_window, self.sliding_window) {
            (true, Some(w)) => w.min(self.max_position_embeddings),
            _ => self.max_position_embeddings,
        }
    }
    /// Refuse what codescope does not implement for `flavor` (as a one-line reason).
    pub fn validate_for(&self, flavor: Flavor) -> std::result::Result<(), String> {
        super::check_eps("rms_norm_eps", self.rms_norm_eps)?;
        if let Some(e) = self.norm_epsilon {
            super::check_eps("norm_epsilon", e)?;
        }
        if flavor == Flavor::Starcoder2 {
            Gelu::parse(&self.hidden_act)?;
        } else if self.hidden_act != "silu" {
            return Err(format!(
                "unsupported hidden_act '{}' (only silu)",
                self.hidden_act
            ));
        }
        let (heads, kv, d) = (self.num_attention_heads, self.kv_heads(), self.head_dim());
        if heads == 0 || kv == 0 || heads % kv != 0 || d == 0 || d % 2 != 0 {
            return Err(format!(
                "inconsistent heads: {heads} query heads, {kv} KV heads, head_dim {d}"
            ));
        }
        for (name, v) in [
            ("embedding_multiplier", self.embedding_multiplier),
            ("attention_multiplier", self.attention_multiplier),
            ("residual_multiplier", self.residual_multiplier),
            ("logits_scaling", self.logits_scaling),
        ] {
            if let Some(v) = v.filter(|v| !(v.is_finite() && *v > 0.0)) {
                return Err(format!("{name} is {v}; it must be a positive number"));
            }
        }
        if self.sliding_window == Some(0) && flavor.slides() {
            return Err("sliding_window is 0; it must be at least 1".into());
        }
        let rot = self.rotary_dim();
        if rot == 0 || !rot.is_multiple_of(2) || rot > d {
            return Err(format!(
                "partial_rotary_factor {} gives {rot} rotary features of a {d}-wide head",
                self.rotary_factor()
            ));
        }
        self.rope().map(|_| ())
    }

    /// [`LlamaConfig::validate_for`] of a Llama / Qwen2 config.
    pub fn validate(&self) -> std::result::Result<(), String> {
        self.validate_for(Flavor::Llama)
    }

    fn rotary_factor(&self) -> f64 {
        self.rope_parameters
            .as_ref()
            .and_then(|p| p.get("partial_rotary_factor"))
            .and_then(|v| v.as_f64())
            .or(self.partial_rotary_factor)
            .unwrap_or(1.0)
    }

    /// The features of each head the rotary embedding turns (HF
    /// `int(head_dim * partial_rotary_factor)`).
    fn rotary_dim(&self) -> usize {
        let f = self.rotary_factor();
        if !(f.is_finite() && f > 0.0 && f <= 1.0) {
            return 0;
        }
        (self.head_dim() as f64 * f) as usize
    }

    /// The rope setting from either config layout (`rope_parameters` of transformers 5,
    /// else top-level `rope_theta` + `rope_scaling`).
    fn rope(&self) -> std::result::Result<Rope, String> {
        let params = self.rope_parameters.as_ref().or(self.rope_scaling.as_ref());
        let theta = self
            .rope_parameters
            .as_ref()
            .and_then(|p| p.get("rope_theta"))
            .and_then(|v| v.as_f64())
            .or(self.rope_theta)
            .unwrap_or(10_000.0);
        Rope::scaled(params, theta)
    }
}

/// A weight used as `[in, out]` — a transposed *view* of the checkpoint's `[out, in]`
/// rows (gemm reads either layout at the same speed; copying the transpose at load cost
/// ~20% of a GGUF load) — with optional bias.
pub(crate) struct Proj {
    w: Lin,
    b: Option<Tensor>,
}

/// A projection's weight: the f32 `[in, out]` view, or quantized parts
/// ([`super::quant`]).
enum Lin {
    F32(Tensor),
    Quant(QLinears),
}

impl Proj {
    /// [`Proj::fused`], with the weights `q` holds quantized kept so (every part's
    /// weight of one type or another; biases f32).
    pub(crate) fn load(
        q: &QuantStore,
        vbs: &[VarBuilder],
        inp: usize,
        outs: &[usize],
    ) -> candle_core::Result<Self> {
        let names: Vec<String> = vbs
            .iter()
            .map(|vb| format!("{}.weight", vb.prefix()))
            .collect();
        if q.is_empty() || !names.iter().any(|n| q.get(n).is_some()) {
            return Self::fused(vbs, inp, outs);
        }
        let mut parts = Vec::new();
        for ((vb, name), &out) in vbs.iter().zip(&names).zip(outs) {
            let w = match q.get(name) {
                Some(w) => w,
                // A part the file holds unquantized (f32 or f16): an f32 QTensor.
                None => Arc::new(QTensor::quantize(
                    &vb.get((out, inp), "weight")?,
                    candle_core::quantized::GgmlDType::F32,
                )?),
            };
            parts.push((w, name.clone()));
        }
        let b = if vbs.iter().any(|vb| vb.contains_tensor("bias")) {
            let mut bs = Vec::new();
            for (vb, &out) in vbs.iter().zip(outs) {
                bs.push(if vb.contains_tensor("bias") {
                    vb.get(out, "bias")?
                } else {
                    Tensor::zeros(out, candle_core::DType::F32, vb.device())?
                });
            }
            Some(crate::model::mapped::cat_rows(&bs)?)
        } else {
            None
        };
        Ok(Proj {
            w: Lin::Quant(QLinears::new(parts, inp, outs, q.kernels(), q.packs())?),
            b,
        })
    }

    /// Fuse several checkpoint linears (same input) into one `[in, sum(out)]` matmul.
    pub(crate) fn fused(
        vbs: &[VarBuilder],
        inp: usize,
        outs: &[usize],
    ) -> candle_core::Result<Self> {
        let mut ws = Vec::new();
        let mut bs = Vec::new();
        for (vb, &out) in vbs.iter().zip(outs) {
            ws.push(vb.get((out, inp), "weight")?);
            if vb.contains_tensor("bias") {
                bs.push(vb.get(out, "bias")?);
            } else {
                bs.push(Tensor::zeros(out, candle_core::DType::F32, vb.device())?);
            }
        }
        let any_bias = vbs.iter().any(|vb| vb.contains_tensor("bias"));
        Ok(Proj {
            w: Lin::F32(crate::model::mapped::cat_rows(&ws)?.t()?),
            b: if any_bias {
                Some(crate::model::mapped::cat_rows(&bs)?)
            } else {
                None
            },
        })
    }
    pub(crate) fn forward(&self, x: &Tensor) -> candle_core::Result<Tensor> {
        let y = match &self.w {
            Lin::F32(w) => x.matmul(w)?,
            Lin::Quant(q) => q.forward(x)?,
        };
        match &self.b {
            Some(b) => y.broadcast_add(b),
            None => Ok(y),
        }
    }
}

/// A normalisation: RMSNorm (weight) or LayerNorm (weight and bias: StarCoder2).
enum Norm {
    Rms(Tensor),
    Layer(LayerNorm),
}

impl Norm {
    fn load(vb: VarBuilder, h: usize, layer: Option<f64>) -> candle_core::Result<Self> {
        Ok(match layer {
            Some(eps) => Norm::Layer(layer_norm(h, eps, vb)?),
            None => Norm::Rms(vb.get(h, "weight")?),
        })
    }
}

/// The MLP: `down(silu(gate(h)) * up(h))` with `gate | up` fused, or StarCoder2's
/// `c_proj(gelu(c_fc(h)))`.
enum Mlp {
    Gated { gate_up: Proj, down: Proj },
    Plain { fc: Proj, proj: Proj, act: Gelu },
}

struct Layer {
    in_norm: Norm,
    qkv: Proj,
    /// Qwen3's per-head `q_norm` / `k_norm` weights.
    qk_norm: Option<(Vec<f32>, Vec<f32>)>,
    o: Proj,
    post_norm: Norm,
    mlp: Mlp,
}

/// A loaded Llama-family decoder with its LM head.
pub struct Llama {
    cfg: LlamaConfig,
    flavor: Flavor,
    arch: &'static str,
    embed: Embed,
    layers: Vec<Layer>,
    norm: Norm,
    /// `[vocab, hidden]` (the embedding matrix when tied).
    lm_head: Head,
    inv_freq: Vec<f32>,
    device: Device,
}

impl Llama {
    /// Build from a `VarBuilder` whose names mirror the HF checkpoint (`model.layers.N...`,
    /// `lm_head.weight`). `family` names the family reported in `ModelInfo` and its
    /// [`Flavor`] (one this module builds). The weights `q` holds stay quantized
    /// ([`super::quant`]; empty for f32 models).
    pub fn load(cfg: LlamaConfig, family: Family, vb: VarBuilder, q: &QuantStore) -> Result<Self> {
        let flavor = Flavor::of(family).ok_or_else(|| {
            Error::Compute(format!("{} is not a Llama-family model", family.name()))
        })?;
        cfg.validate_for(flavor).map_err(Error::Compute)?;
        let (heads, kv, d) = (cfg.num_attention_heads, cfg.kv_heads(), cfg.head_dim());
        let inv_freq = cfg
            .rope()
            .map_err(Error::Compute)?
            .inv_freq(cfg.rotary_dim());
        let device = vb.device().clone();
        let h = cfg.hidden_size;
        let m = if vb.contains_tensor("model.embed_tokens.weight")
            || q.get("model.embed_tokens.weight").is_some()
        {
            vb.pp("model")
        } else {
            vb.clone()
        };
        let embed = Embed::load(q, cfg.vocab_size, h, m.pp("embed_tokens"))?;
        let inter = cfg.intermediate_size;
        let layer_eps = (flavor == Flavor::Starcoder2).then(|| cfg.norm_epsilon.unwrap_or(1e-5));
        let act = Gelu::parse(&cfg.hidden_act).ok();
        let layers = (0..cfg.num_hidden_layers)
            .map(|i| {
                let l = m.pp("layers").pp(i);
                let a = l.pp("self_attn");
                let mlp = l.pp("mlp");
                let qkv_rows = [heads * d, kv * d, kv * d];
                let qkv = if flavor == Flavor::Phi3 {
                    Proj::load(q, &[a.pp("qkv_proj")], h, &[qkv_rows.iter().sum()])?
                } else {
                    Proj::load(
                        q,
                        &[a.pp("q_proj"), a.pp("k_proj"), a.pp("v_proj")],
                        h,
                        &qkv_rows,
                    )?
                };
                let qk_norm = if flavor == Flavor::Qwen3 {
                    Some((
                        a.pp("q_norm").get(d, "weight")?.to_vec1::<f32>()?,
                        a.pp("k_norm").get(d, "weight")?.to_vec1::<f32>()?,
                    ))
                } else {
                    None
                };
                let mlp = match (flavor, act) {
                    (Flavor::Starcoder2, Some(act)) => Mlp::Plain {
                        fc: Proj::load(q, &[mlp.pp("c_fc")], h, &[inter])?,
                        proj: Proj::load(q, &[mlp.pp("c_proj")], inter, &[h])?,
                        act,
                    },
                    (Flavor::Phi3, _) => Mlp::Gated {
                        gate_up: Proj::load(q, &[mlp.pp("gate_up_proj")], h, &[2 * inter])?,
                        down: Proj::load(q, &[mlp.pp("down_proj")], inter, &[h])?,
                    },
                    _ => Mlp::Gated {
                        gate_up: Proj::load(
                            q,
                            &[mlp.pp("gate_proj"), mlp.pp("up_proj")],
                            h,
                            &[inter, inter],
                        )?,
                        down: Proj::load(q, &[mlp.pp("down_proj")], inter, &[h])?,
                    },
                };
                Ok(Layer {
                    in_norm: Norm::load(l.pp("input_layernorm"), h, layer_eps)?,
                    qkv,
                    qk_norm,
                    o: Proj::load(q, &[a.pp("o_proj")], heads * d, &[h])?,
                    post_norm: Norm::load(l.pp("post_attention_layernorm"), h, layer_eps)?,
                    mlp,
                })
            })
            .collect::<candle_core::Result<Vec<_>>>()?;
        let norm = Norm::load(m.pp("norm"), h, layer_eps)?;
        let lm_head = head(&vb, q, cfg.tie_word_embeddings, cfg.vocab_size, h, &embed)?;
        Ok(Llama {
            cfg,
            flavor,
            arch: family.name(),
            embed,
            layers,
            norm,
            lm_head,
            inv_freq,
            device,
        })
    }

    /// The family name given at load (`llama`, `qwen2`, `mistral`, ...).
    pub fn arch(&self) -> &'static str {
        self.arch
    }

    fn norm(&self, x: &Tensor, w: &Norm) -> candle_core::Result<Tensor> {
        match w {
            Norm::Rms(w) => {
                candle_nn::ops::rms_norm(&x.contiguous()?, w, self.cfg.rms_norm_eps as f32)
            }
            Norm::Layer(ln) => ln.forward(x),
        }
    }

    /// `x * m`, or `x` itself when `m` is 1 (bit-identical to a family without it).
    fn times(x: Tensor, m: Option<f64>) -> candle_core::Result<Tensor> {
        match m {
            Some(m) if m != 1.0 => x.affine(m, 0.0),
            _ => Ok(x),
        }
    }

    fn run(
        &self,
        ids: &[u32],
        opts: &ForwardOptions,
        sink: Option<&mut LogitsSink>,
    ) -> Result<Capture> {
        super::check_ids(ids, self.window(), self.cfg.vocab_size)?;
        let n = ids.len();
        let (heads, kv, d) = (
            self.cfg.num_attention_heads,
            self.cfg.kv_heads(),
            self.cfg.head_dim(),
        );
        let scale = match self.cfg.attention_multiplier {
            Some(m) if self.flavor == Flavor::Granite => m as f32,
            _ => 1.0 / (d as f32).sqrt(),
        };
        let window = if self.flavor.slides() {
            self.cfg.sliding_window
        } else {
            None
        };
        // Granite's multipliers (other families' configs carry none).
        let granite = |m: Option<f64>| m.filter(|_| self.flavor == Flavor::Granite);
        let resid = granite(self.cfg.residual_multiplier);
        let (cos, sin) = rope::tables(&self.inv_freq, n);
        let (mut pass, mut x) = Pass::start(
            opts,
            self.layers.len(),
            heads,
            n,
            self.cfg.hidden_size,
            &self.device,
            || {
                let e = self.embed.forward(&Tensor::new(ids, &self.device)?)?;
                Ok(Self::times(e, granite(self.cfg.embedding_multiplier))?)
            },
        )?;
        let rot = self.cfg.rotary_dim();
        let eps = self.cfg.rms_norm_eps as f32;
        let rotate = |v: &mut [f32], p: usize| rope::rotate_half(&mut v[..rot], &cos, &sin, p);
        let mut fused = vec![0.0f32; n * 3 * heads * d];
        for (li, layer) in pass.span(&self.layers) {
            pass.layer(li)?;
            let h = self.norm(&x, &layer.in_norm)?;
            let qkv = layer.qkv.forward(&h)?.flatten_all()?.to_vec1::<f32>()?;
            match &layer.qk_norm {
                Some((qn, kn)) => {
                    let q = |v: &mut [f32], p: usize| {
                        head_rms(v, qn, eps);
                        rotate(v, p);
                    };
                    let k = |v: &mut [f32], p: usize| {
                        head_rms(v, kn, eps);
                        rotate(v, p);
                    };
                    repeat_kv(&qkv, n, heads, kv, d, &mut fused, q, k);
                }
                None => repeat_kv(&qkv, n, heads, kv, d, &mut fused, rotate, rotate),
            }
            let ctx = pass.attend(&fused, d, scale, window)?;
            x = (x + Self::times(layer.o.forward(&ctx)?, resid)?)?;
            let h = self.norm(&x, &layer.post_norm)?;
            let m = match &layer.mlp {
                Mlp::Gated { gate_up, down } => {
                    let gu = gate_up.forward(&h)?;
                    let inter = self.cfg.intermediate_size;
                    let act = (candle_nn::ops::silu(&gu.narrow(1, 0, inter)?)?
                        * gu.narrow(1, inter, inter)?)?;
                    down.forward(&act)?
                }
                Mlp::Plain { fc, proj, act } => proj.forward(&act.apply(&fc.forward(&h)?)?)?,
            };
            x = (x + Self::times(m, resid)?)?;
            pass.layer_done(&x, li)?;
        }
        pass.finish(
            &x,
            |x| Ok(self.norm(x, &self.norm)?),
            sink,
            self.cfg.vocab_size,
            |last, sink| {
                let head = &self.lm_head;
                match self.cfg.logits_scaling {
                    Some(s) if s != 1.0 && self.flavor == Flavor::Granite => {
                        let s = s as f32;
                        super::lm::stream_head(last, head, &mut |start, block| {
                            let scaled: Vec<f32> = block.iter().map(|z| z / s).collect();
                            sink(start, &scaled)
                        })
                    }
                    _ => super::lm::stream_head(last, head, sink),
                }
            },
        )
    }
}

/// The LM head: `lm_head.weight` (quantized when `q` holds it) unless tied to the
/// embedding (see [`super::decoder::lm_head`]).
pub(crate) fn head(
    vb: &VarBuilder,
    q: &QuantStore,
    tie_word_embeddings: bool,
    vocab: usize,
    hidden: usize,
    embed: &Embed,
) -> candle_core::Result<Head> {
    match embed {
        Embed::F32(e) if q.get("lm_head.weight").is_none() => Ok(Head::F32(
            super::decoder::lm_head(vb, tie_word_embeddings, vocab, hidden, e)?,
        )),
        _ => {
            if !tie_word_embeddings {
                if let Some(w) = q.get("lm_head.weight") {
                    return Head::quant(w, vocab, hidden, q.kernels());
                }
                if vb.contains_tensor("lm_head.weight") {
                    return Ok(Head::F32(vb.pp("lm_head").get((vocab, hidden), "weight")?));
                }
                tracing::warn!("no lm_head.weight: using the tied embedding as LM head");
            }
            Head::tied(embed, vocab, hidden, q.kernels())
        }
    }
}

decoder_backbone!(Llama, |s|
    layers: s.cfg.num_hidden_layers,
    heads: s.cfg.num_attention_heads,
    hidden: s.cfg.hidden_size,
    window: s.cfg.window(),
    vocab: s.cfg.vocab_size);

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(family: Family, extra: serde_json::Value) -> LlamaConfig {
        let mut v = serde_json::json!({
            "vocab_size": 10, "hidden_size": 16, "intermediate_size": 24,
            "num_hidden_layers": 2, "num_attention_heads": 2, "max_position_embeddings": 64
        });
        for (k, x) in extra.as_object().unwrap() {
            v[k] = x.clone();
        }
        parse_config(family, &v).unwrap()
    }

    #[test]
    fn family_defaults_fill_only_absent_keys() {
        // Mistral: absent -> 4096, null -> none, a value kept.
        let m = cfg(Family::Mistral, serde_json::json!({}));
        assert_eq!(m.sliding_window, Some(4096));
        let m = cfg(Family::Mistral, serde_json::json!({"sliding_window": null}));
        assert_eq!(m.sliding_window, None);
        let m = cfg(Family::Mistral, serde_json::json!({"sliding_window": 7}));
        assert_eq!(m.sliding_window, Some(7));
        // A Llama config takes none of them.
        let l = cfg(Family::Llama, serde_json::json!({}));
        assert_eq!(
            (l.sliding_window, l.tie_word_embeddings, l.head_dim()),
            (None, false, 8)
        );
        let q = cfg(Family::Qwen3, serde_json::json!({}));
        assert_eq!(q.head_dim(), 128);
        let s = cfg(Family::Starcoder2, serde_json::json!({}));
        assert!(s.tie_word_embeddings);
        assert_eq!(s.hidden_act, "gelu_pytorch_tanh");
        assert_eq!(s.norm_epsilon, Some(1e-5));
        assert!(s.validate_for(Flavor::Starcoder2).is_ok());
        // StarCoder2's GELU is no Llama activation.
        assert!(s.validate_for(Flavor::Llama).unwrap_err().contains("silu"));
        let s = cfg(
            Family::Starcoder2,
            serde_json::json!({"tie_word_embeddings": false}),
        );
        assert!(!s.tie_word_embeddings);
        assert_eq!(cfg(Family::Phi3, serde_json::json!({})).rms_norm_eps, 1e-5);
    }

    #[test]
    fn partial_rotary_from_either_place() {
        let p = cfg(
            Family::Phi3,
            serde_json::json!({"rope_parameters": {"rope_type": "default",
                "rope_theta": 1e4, "partial_rotary_factor": 0.75}}),
        );
        assert_eq!(p.rotary_dim(), 6);
        let p = cfg(
            Family::Phi3,
            serde_json::json!({"partial_rotary_factor": 0.5}),
        );
        assert_eq!(p.rotary_dim(), 4);
        assert_eq!(cfg(Family::Phi3, serde_json::json!({})).rotary_dim(), 8);
        // 0.3 of 8 is 2 features; 0.1 is none: refused.
        let bad = cfg(
            Family::Phi3,
            serde_json::json!({"partial_rotary_factor": 0.1}),
        );
        assert!(bad
            .validate_for(Flavor::Phi3)
            .unwrap_err()
            .contains("partial_rotary_factor"));
        let longrope = cfg(
            Family::Phi3,
            serde_json::json!({"rope_scaling": {"type": "longrope", "short_factor": [1.0]}}),
        );
        assert!(longrope
            .validate_for(Flavor::Phi3)
            .unwrap_err()
            .contains("'longrope'"));
    }

    #[test]
    fn only_the_sliding_families_slide() {
        assert!(Flavor::Mistral.slides() && Flavor::Phi3.slides() && Flavor::Starcoder2.slides());
        assert!(!Flavor::Llama.slides() && !Flavor::Qwen3.slides() && !Flavor::Granite.slides());
        assert_eq!(Flavor::of(Family::Qwen2), Some(Flavor::Llama));
        assert_eq!(Flavor::of(Family::Gemma2), None);
        let zero = cfg(Family::Mistral, serde_json::json!({"sliding_window": 0}));
        assert!(zero.validate_for(Flavor::Mistral).is_err());
        let granite = cfg(Family::Granite, serde_json::json!({"logits_scaling": -2.0}));
        assert!(granite
            .validate_for(Flavor::Granite)
            .unwrap_err()
            .contains("logits_scaling"));
    }
}
