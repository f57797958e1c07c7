//! Gemma decoders: Gemma 3 text (`model_type: gemma3_text`, e.g. Gemma 3 270M), from HF
//! safetensors or — through [`super::gguf`] — from a quantized GGUF file; Gemma 1
//! (`gemma`: Gemma, CodeGemma) and Gemma 2 (`gemma2`), the same computation with fewer
//! parts ([`Generation`]).
//!
//! The computation mirrors transformers' `modeling_gemma3.py` (`modeling_gemma.py`,
//! `modeling_gemma2.py`) with eager attention, in f32:
//! - the token embedding is scaled by `sqrt(hidden_size)`;
//! - every RMSNorm multiplies by `(1 + w)` (Gemma's convention; the checkpoint stores
//!   `w`). Gemma 2 and 3 have four per layer: `input_layernorm` → attention →
//!   `post_attention_layernorm` → residual; `pre_feedforward_layernorm` → MLP →
//!   `post_feedforward_layernorm` → residual. Gemma 1 has two, as Llama:
//!   `input_layernorm` before attention, `post_attention_layernorm` before the MLP;
//! - Gemma 3 only: queries and keys are RMS-normed per head (`q_norm`, `k_norm`, over
//!   `head_dim`) before the rotary embedding ("rotate half" form);
//! - attention scores are scaled by `query_pre_attn_scalar^-1/2` (Gemma 2 and 3; not
//!   `head_dim`), by `head_dim^-1/2` in Gemma 1; Gemma 2 soft-caps them,
//!   `tanh(s / c) * c` with `c = attn_logit_softcapping`, before the mask;
//! - Gemma 2 and 3 layers are `sliding_attention` (local: query `i` sees keys `j` with
//!   `i - j < sliding_window`) or `full_attention` (global) — from `layer_types`, else
//!   Gemma 3's every `sliding_window_pattern`-th layer (6) global, Gemma 2's every
//!   second. Gemma 3's local layers have their own rope base (`rope_local_base_freq`,
//!   10 000; global `rope_theta`, 1e6, with optional linear scaling); Gemma 1 and 2 have
//!   one rope (`rope_theta`, 10 000);
//! - the MLP is `down(gelu_tanh(gate(h)) * up(h))` (Gemma 1's legacy `hidden_act: gelu`
//!   means the tanh form, as transformers reads it);
//! - the LM head is tied to the (unscaled) embedding, with optional final logit
//!   soft-capping `tanh(z / c) * c`.
//!
//! Config keys a Gemma 1 or 2 `config.json` leaves out take transformers' defaults
//! ([`parse_config`]). Grouped-query attention is expanded to per-query-head attention
//! for capture, as in [`super::llama`]. Hidden states follow HF `output_hidden_states`
//! (`[0]` = scaled embedding, last = after the final norm). Rope tables are built only
//! for the positions of the current input (the 32 768-position window is never
//! tabulated).

use candle_core::{Device, Tensor};
use candle_nn::VarBuilder;
use serde::Deserialize;

use super::decoder::{head_rms, repeat_kv, Pass};
use super::llama::Proj;
use super::quant::{Embed, Head, QuantStore};
use super::rope::{self, Rope};
use super::{kernels, Backbone, Capture, Family, ForwardOptions, LogitsSink};
use crate::error::{Error, Result};

/// The fields of an HF `Gemma3TextConfig` that codescope needs (transformers 4 and 5
/// layouts).
#[derive(Debug, Clone, Deserialize)]
pub struct Gemma3Config {
    pub vocab_size: usize,
    pub hidden_size: usize,
    pub intermediate_size: usize,
    pub num_hidden_layers: usize,
    pub num_attention_heads: usize,
    #[serde(default)]
    pub num_key_value_heads: Option<usize>,
    #[serde(default)]
    pub head_dim: Option<usize>,
    #[serde(default = "default_positions")]
    pub max_position_embeddings: usize,
    #[serde(default = "default_eps")]
    pub rms_norm_eps: f64,
    #[serde(default)]
    pub query_pre_attn_scalar: Option<f64>,
    #[serde(default)]
    pub sliding_window: Option<usize>,
    #[serde(default)]
    pub layer_types: Option<Vec<String>>,
    #[serde(default)]
    pub sliding_window_pattern: Option<usize>,
    #[serde(default)]
    pub rope_theta: Option<f64>,
    #[serde(default)]
    pub rope_local_base_freq: Option<f64>,
    #[serde(default)]
    pub rope_scaling: Option<serde_json::Value>,
    #[serde(default)]
    pub rope_parameters: Option<serde_json::Value>,
    #[serde(default = "default_act")]
    pub hidden_activation: String,
    /// Gemma 1's activation key (transformers 5 reads this one for Gemma 1).
    #[serde(default)]
    pub hidden_act: Option<String>,
    #[serde(default)]
    pub final_logit_softcapping: Option<f64>,
    #[serde(default)]
    pub attn_logit_softcapping: Option<f64>,
    #[serde(default)]
    pub use_bidirectional_attention: Option<bool>,
}

/// Which Gemma: what of Gemma 3's computation a model has.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Generation {
    /// Gemma 1 / CodeGemma: two norms per layer, every layer global, no soft-capping.
    Gemma1,
    /// Gemma 2: four norms, alternating sliding / global layers, soft-capping.
    Gemma2,
    /// Gemma 3: Gemma 2 plus q/k norms and a rope per layer type.
    Gemma3,
}

impl Generation {
    /// The generation of a Gemma family (`None`: not one).
    pub fn of(family: Family) -> Option<Generation> {
        match family {
            Family::Gemma => Some(Generation::Gemma1),
            Family::Gemma2 => Some(Generation::Gemma2),
            Family::Gemma3 => Some(Generation::Gemma3),
            _ => None,
        }
    }
}

/// Parse a Gemma `config.json` value (a multimodal Gemma 3's `text_config`) with the
/// generation's transformers defaults for the keys it lacks: Gemma 1 and 2 have 8192
/// positions; Gemma 2 `query_pre_attn_scalar` 256, `sliding_window` 4096,
/// `attn_logit_softcapping` 50 and `final_logit_softcapping` 30 (a key set to `null`
/// stays off).
pub fn parse_config(
    generation: Generation,
    cfg: &serde_json::Value,
) -> std::result::Result<Gemma3Config, String> {
    let mut cfg = cfg.clone();
    let defaults: &[(&str, serde_json::Value)] = match generation {
        Generation::Gemma1 => &[("max_position_embeddings", serde_json::json!(8192))],
        Generation::Gemma2 => &[
            ("max_position_embeddings", serde_json::json!(8192)),
            ("query_pre_attn_scalar", serde_json::json!(256)),
            ("sliding_window", serde_json::json!(4096)),
            ("attn_logit_softcapping", serde_json::json!(50.0)),
            ("final_logit_softcapping", serde_json::json!(30.0)),
        ],
        Generation::Gemma3 => &[],
    };
    if let Some(o) = cfg.as_object_mut() {
        for (k, v) in defaults {
            o.entry(k.to_string()).or_insert_with(|| v.clone());
        }
    }
    serde_json::from_value(cfg).map_err(|e| e.to_string())
}

fn default_positions() -> usize {
    32_768
}
fn default_eps() -> f64 {
    1e-6
}
fn default_act() -> String {
    "gelu_pytorch_tanh".into()
}

impl Gemma3Config {
    fn kv_heads(&self) -> usize {
        self.num_key_value_heads.unwrap_or(self.num_attention_heads)
    }
    fn head_dim(&self) -> usize {
        self.head_dim.unwrap_or(256)
    }
    /// Whether layer `i` is a sliding-window (local) layer (of Gemma 3).
    pub fn is_sliding(&self, i: usize) -> bool {
        self.is_sliding_in(Generation::Gemma3, i)
    }

    /// Whether layer `i` of a `generation` model is a sliding-window (local) layer:
    /// from `layer_types`, else Gemma 3's pattern (every 6th global), Gemma 2's (every
    /// second); none in Gemma 1.
    pub fn is_sliding_in(&self, generation: Generation, i: usize) -> bool {
        if generation == Generation::Gemma1 {
            return false;
        }
        match &self.layer_types {
            Some(t) => t.get(i).is_some_and(|s| s == "sliding_attention"),
            None => {
                let default = if generation == Generation::Gemma2 {
                    2
                } else {
                    6
                };
                let pattern = self.sliding_window_pattern.unwrap_or(default).max(1);
                !(i + 1).is_multiple_of(pattern)
            }
        }
    }

    /// The MLP's activation: Gemma 1's `hidden_act` (`gelu` read as the tanh form, as
    /// transformers does), else `hidden_activation`.
    fn activation(&self, generation: Generation) -> &str {
        match (&self.hidden_act, generation) {
            (Some(a), Generation::Gemma1) if a == "gelu" => "gelu_pytorch_tanh",
            (Some(a), Generation::Gemma1) => a,
            _ => &self.hidden_activation,
        }
    }
    /// Tokens per input.
    pub fn window(&self) -> usize {
        self.max_position_embeddings
    }

    /// Refuse what codescope does not implement for Gemma 3 (as a one-line reason).
    pub fn validate(&self) -> std::result::Result<(), String> {
        self.validate_for(Generation::Gemma3)
    }

    /// Refuse what codescope does not implement for `generation` (as a one-line reason).
    pub fn validate_for(&self, generation: Generation) -> std::result::Result<(), String> {
        super::check_eps("rms_norm_eps", self.rms_norm_eps)?;
        let act = self.activation(generation);
        if !matches!(act, "gelu_pytorch_tanh" | "gelu_new") {
            let key = if generation == Generation::Gemma1 && self.hidden_act.is_some() {
                "hidden_act"
            } else {
                "hidden_activation"
            };
            return Err(format!(
                "unsupported {key} '{act}' (only gelu_pytorch_tanh)"
            ));
        }
        for (name, v) in [
            ("query_pre_attn_scalar", self.query_pre_attn_scalar),
            ("final_logit_softcapping", self.final_logit_softcapping),
            ("attn_logit_softcapping", self.attn_logit_softcapping),
        ] {
            if let Some(v) = v.filter(|v| !(v.is_finite() && *v > 0.0)) {
                return Err(format!("{name} is {v}; it must be a positive number"));
            }
        }
        if self.sliding_window == Some(0) && generation != Generation::Gemma1 {
            return Err("sliding_window is 0; it must be at least 1".into());
        }
        if self.use_bidirectional_attention == Some(true) {
            return Err("bidirectional Gemma (embedding models) is not supported".into());
        }
        if let Some(t) = &self.layer_types {
            if t.len() != self.num_hidden_layers {
                return Err(format!(
                    "layer_types lists {} layers, the model has {}",
                    t.len(),
                    self.num_hidden_layers
                ));
            }
            if let Some(bad) = t
                .iter()
                .find(|s| *s != "sliding_attention" && *s != "full_attention")
            {
                return Err(format!("unknown layer type '{bad}'"));
            }
        }
        let (heads, kv, d) = (self.num_attention_heads, self.kv_heads(), self.head_dim());
        if heads == 0 || kv == 0 || heads % kv != 0 || d == 0 || d % 2 != 0 {
            return Err(format!(
                "inconsistent heads: {heads} query heads, {kv} KV heads, head_dim {d}"
            ));
        }
        self.ropes_for(generation).map(|_| ())
    }

    /// `(global, local)` rope settings of a `generation` model: Gemma 1 and 2 have one
    /// rope (`rope_parameters` or `rope_theta` + `rope_scaling`, base 10 000), used by
    /// both layer types.
    fn ropes_for(&self, generation: Generation) -> std::result::Result<(Rope, Rope), String> {
        if generation == Generation::Gemma3 {
            return self.ropes();
        }
        let p = self.rope_parameters.as_ref().or(self.rope_scaling.as_ref());
        let theta = p
            .and_then(|p| p.get("rope_theta"))
            .and_then(|v| v.as_f64())
            .or(self.rope_theta)
            .unwrap_or(10_000.0);
        let rope = Rope::scaled(p, theta)?;
        Ok((rope, rope))
    }

    /// `(global, local)` rope settings from either config layout.
    fn ropes(&self) -> std::result::Result<(Rope, Rope), String> {
        // A per-layer-type entry may carry its own base.
        let parse = |p: Option<&serde_json::Value>, theta: f64| {
            let theta = p
                .and_then(|p| p.get("rope_theta"))
                .and_then(|v| v.as_f64())
                .unwrap_or(theta);
            Rope::scaled(p, theta)
        };
        let global_theta = self.rope_theta.unwrap_or(1_000_000.0);
        let local_theta = self.rope_local_base_freq.unwrap_or(10_000.0);
        match &self.rope_parameters {
            // transformers 5: one entry per layer type.
            Some(p)
                if p.get("full_attention").is_some() || p.get("sliding_attention").is_some() =>
            {
                Ok((
                    parse(p.get("full_attention"), global_theta)?,
                    parse(p.get("sliding_attention"), local_theta)?,
                ))
            }
            // transformers 4: `rope_scaling` applies to the global layers only.
            _ => Ok((
                parse(self.rope_scaling.as_ref(), global_theta)?,
                Rope::scaled(None, local_theta)?,
            )),
        }
    }
}

struct Layer {
    in_norm: Tensor,
    qkv: Proj,
    /// Gemma 3's per-head norms (`1 + w`).
    qk_norm: Option<(Vec<f32>, Vec<f32>)>,
    o: Proj,
    /// Gemma 2 and 3: on the attention output; Gemma 1: before the MLP.
    post_attn_norm: Tensor,
    /// Gemma 2 and 3 only (Gemma 1's MLP input is `post_attn_norm`'s).
    ff_norms: Option<(Tensor, Tensor)>,
    gate_up: Proj,
    down: Proj,
    sliding: bool,
}

/// A loaded Gemma 3 text decoder with its (tied) LM head.
pub struct Gemma3 {
    cfg: Gemma3Config,
    generation: Generation,
    embed: Embed,
    embed_scale: f32,
    layers: Vec<Layer>,
    norm: Tensor,
    /// `[vocab, hidden]`.
    lm_head: Head,
    /// `inv_freq` for global and local layers.
    inv_freq_global: Vec<f32>,
    inv_freq_local: Vec<f32>,
    device: Device,
}

/// `1 + w`: Gemma's RMSNorm multiplier, computed once at load.
fn gemma_norm(vb: &VarBuilder, dim: usize) -> candle_core::Result<Tensor> {
    vb.get(dim, "weight")?.affine(1.0, 1.0)
}

impl Gemma3 {
    /// Build a `generation` model from a `VarBuilder` with HF checkpoint names
    /// (`model.layers.N...`); the weights `q` holds stay quantized ([`super::quant`]).
    pub fn load(
        cfg: Gemma3Config,
        generation: Generation,
        vb: VarBuilder,
        q: &QuantStore,
    ) -> Result<Self> {
        cfg.validate_for(generation).map_err(Error::Compute)?;
        let (heads, kv, d) = (cfg.num_attention_heads, cfg.kv_heads(), cfg.head_dim());
        let (global, local) = cfg.ropes_for(generation).map_err(Error::Compute)?;
        let device = vb.device().clone();
        let h = cfg.hidden_size;
        let m = if vb.contains_tensor("model.embed_tokens.weight")
            || q.get("model.embed_tokens.weight").is_some()
        {
            vb.pp("model")
        } else if vb.contains_tensor("model.language_model.embed_tokens.weight") {
            vb.pp("model").pp("language_model")
        } else {
            vb.clone()
        };
        let embed = Embed::load(q, cfg.vocab_size, h, m.pp("embed_tokens"))?;
        let inter = cfg.intermediate_size;
        let layers = (0..cfg.num_hidden_layers)
            .map(|i| {
                let l = m.pp("layers").pp(i);
                let a = l.pp("self_attn");
                let mlp = l.pp("mlp");
                Ok(Layer {
                    in_norm: gemma_norm(&l.pp("input_layernorm"), h)?,
                    qkv: Proj::load(
                        q,
                        &[a.pp("q_proj"), a.pp("k_proj"), a.pp("v_proj")],
                        h,
                        &[heads * d, kv * d, kv * d],
                    )?,
                    qk_norm: if generation == Generation::Gemma3 {
                        Some((
                            gemma_norm(&a.pp("q_norm"), d)?.to_vec1::<f32>()?,
                            gemma_norm(&a.pp("k_norm"), d)?.to_vec1::<f32>()?,
                        ))
                    } else {
                        None
                    },
                    o: Proj::load(q, &[a.pp("o_proj")], heads * d, &[h])?,
                    post_attn_norm: gemma_norm(&l.pp("post_attention_layernorm"), h)?,
                    ff_norms: if generation == Generation::Gemma1 {
                        None
                    } else {
                        Some((
                            gemma_norm(&l.pp("pre_feedforward_layernorm"), h)?,
                            gemma_norm(&l.pp("post_feedforward_layernorm"), h)?,
                        ))
                    },
                    gate_up: Proj::load(
                        q,
                        &[mlp.pp("gate_proj"), mlp.pp("up_proj")],
                        h,
                        &[inter, inter],
                    )?,
                    down: Proj::load(q, &[mlp.pp("down_proj")], inter, &[h])?,
                    sliding: cfg.is_sliding_in(generation, i),
                })
            })
            .collect::<candle_core::Result<Vec<_>>>()?;
        let norm = gemma_norm(&m.pp("norm"), h)?;
        let lm_head = if let Some(w) = q.get("lm_head.weight") {
            Head::quant(w, cfg.vocab_size, h, q.kernels())?
        } else if vb.contains_tensor("lm_head.weight") {
            Head::F32(vb.pp("lm_head").get((cfg.vocab_size, h), "weight")?)
        } else {
            Head::tied(&embed, cfg.vocab_size, h, q.kernels())?
        };
        // HF keeps `embed_scale` as a tensor in the weights' dtype: sqrt(h) rounded to f32.
        let embed_scale = (h as f64).sqrt() as f32;
        Ok(Gemma3 {
            inv_freq_global: global.inv_freq(d),
            inv_freq_local: local.inv_freq(d),
            cfg,
            generation,
            embed,
            embed_scale,
            layers,
            norm,
            lm_head,
            device,
        })
    }

    /// The configuration the model was built from.
    pub fn config(&self) -> &Gemma3Config {
        &self.cfg
    }

    fn rms(&self, x: &Tensor, w: &Tensor) -> candle_core::Result<Tensor> {
        candle_nn::ops::rms_norm(&x.contiguous()?, w, self.cfg.rms_norm_eps as f32)
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
        let scale = match self.generation {
            Generation::Gemma1 => d as f64,
            _ => self.cfg.query_pre_attn_scalar.unwrap_or(d as f64),
        }
        .powf(-0.5) as f32;
        let softcap = self.cfg.attn_logit_softcapping.map(|c| c as f32);
        let global = rope::tables(&self.inv_freq_global, n);
        let local = rope::tables(&self.inv_freq_local, n);
        let (mut pass, mut x) = Pass::start(
            opts,
            self.layers.len(),
            heads,
            n,
            self.cfg.hidden_size,
            &self.device,
            || {
                Ok(self
                    .embed
                    .forward(&Tensor::new(ids, &self.device)?)?
                    .affine(self.embed_scale as f64, 0.0)?)
            },
        )?;
        let eps = self.cfg.rms_norm_eps as f32;
        let mut fused = vec![0.0f32; n * 3 * heads * d];
        for (li, layer) in pass.span(&self.layers) {
            pass.layer(li)?;
            let (cos, sin) = if layer.sliding { &local } else { &global };
            let h = self.rms(&x, &layer.in_norm)?;
            let qkv = layer.qkv.forward(&h)?.flatten_all()?.to_vec1::<f32>()?;
            let rotate = |v: &mut [f32], p: usize| rope::rotate_half(v, cos, sin, p);
            match &layer.qk_norm {
                // Per-head RMS norm (Q's weights or K's), then rope.
                Some((q_norm, k_norm)) => {
                    let q = |v: &mut [f32], p: usize| {
                        head_rms(v, q_norm, eps);
                        rotate(v, p);
                    };
                    let k = |v: &mut [f32], p: usize| {
                        head_rms(v, k_norm, eps);
                        rotate(v, p);
                    };
                    repeat_kv(&qkv, n, heads, kv, d, &mut fused, q, k);
                }
                None => repeat_kv(&qkv, n, heads, kv, d, &mut fused, rotate, rotate),
            }
            let window = if layer.sliding {
                self.cfg.sliding_window
            } else {
                None
            };
            let ctx = pass.attend_capped(&fused, d, scale, window, softcap)?;
            let a = layer.o.forward(&ctx)?;
            let inter = self.cfg.intermediate_size;
            let mlp = |h: &Tensor| -> Result<Tensor> {
                let gu = layer.gate_up.forward(h)?;
                let act = kernels::gelu_tanh_mul(&gu.flatten_all()?.to_vec1::<f32>()?, inter);
                let act = Tensor::from_vec(act, (n, inter), &self.device)?;
                Ok(layer.down.forward(&act)?)
            };
            match &layer.ff_norms {
                Some((pre, post)) => {
                    x = (x + self.rms(&a, &layer.post_attn_norm)?)?;
                    let m = mlp(&self.rms(&x, pre)?)?;
                    x = (x + self.rms(&m, post)?)?;
                }
                None => {
                    x = (x + a)?;
                    let m = mlp(&self.rms(&x, &layer.post_attn_norm)?)?;
                    x = (x + m)?;
                }
            }
            pass.layer_done(&x, li)?;
        }
        pass.finish(
            &x,
            |x| Ok(self.rms(x, &self.norm)?),
            sink,
            self.cfg.vocab_size,
            |last, sink| {
                let head = &self.lm_head;
                match self.cfg.final_logit_softcapping {
                    Some(cap) if cap > 0.0 => {
                        let cap = cap as f32;
                        super::lm::stream_head(last, head, &mut |start, block| {
                            let capped: Vec<f32> =
                                block.iter().map(|z| (z / cap).tanh() * cap).collect();
                            sink(start, &capped)
                        })
                    }
                    _ => super::lm::stream_head(last, head, sink),
                }
            },
        )
    }
}

decoder_backbone!(Gemma3, |s|
    layers: s.cfg.num_hidden_layers,
    heads: s.cfg.num_attention_heads,
    hidden: s.cfg.hidden_size,
    window: s.cfg.window(),
    vocab: s.cfg.vocab_size);

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(extra: serde_json::Value) -> Gemma3Config {
        let mut v = serde_json::json!({
            "vocab_size": 10, "hidden_size": 8, "intermediate_size": 16,
            "num_hidden_layers": 6, "num_attention_heads": 2, "num_key_value_heads": 1,
            "head_dim": 4
        });
        for (k, x) in extra.as_object().unwrap() {
            v[k] = x.clone();
        }
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn layer_types_from_pattern_and_list() {
        let c = cfg(serde_json::json!({}));
        let sliding: Vec<bool> = (0..6).map(|i| c.is_sliding(i)).collect();
        assert_eq!(sliding, [true, true, true, true, true, false]);
        let c = cfg(serde_json::json!({"layer_types":
            ["full_attention", "sliding_attention", "full_attention",
             "sliding_attention", "sliding_attention", "sliding_attention"]}));
        assert!(!c.is_sliding(0) && c.is_sliding(1) && !c.is_sliding(2));
        assert!(c.validate().is_ok());
        let bad = cfg(serde_json::json!({"layer_types": ["full_attention"]}));
        assert!(bad.validate().unwrap_err().contains("layer_types"));
    }

    #[test]
    fn generations_differ_in_layers_defaults_and_activation() {
        let c = cfg(serde_json::json!({}));
        let gemma2: Vec<bool> = (0..6)
            .map(|i| c.is_sliding_in(Generation::Gemma2, i))
            .collect();
        assert_eq!(gemma2, [true, false, true, false, true, false]);
        assert!((0..6).all(|i| !c.is_sliding_in(Generation::Gemma1, i)));
        // Gemma 2's defaults for absent keys; `null` keeps a soft-cap off.
        let v = serde_json::json!({"vocab_size": 10, "hidden_size": 8, "intermediate_size": 16,
            "num_hidden_layers": 2, "num_attention_heads": 2, "head_dim": 4,
            "final_logit_softcapping": null});
        let g2 = parse_config(Generation::Gemma2, &v).unwrap();
        assert_eq!(
            (
                g2.query_pre_attn_scalar,
                g2.sliding_window,
                g2.attn_logit_softcapping,
                g2.final_logit_softcapping,
                g2.max_position_embeddings
            ),
            (Some(256.0), Some(4096), Some(50.0), None, 8192)
        );
        let g3 = parse_config(Generation::Gemma3, &v).unwrap();
        assert_eq!(
            (g3.attn_logit_softcapping, g3.max_position_embeddings),
            (None, 32_768)
        );
        let g1 = parse_config(Generation::Gemma1, &v).unwrap();
        assert_eq!(g1.max_position_embeddings, 8192);
        // Gemma 1's legacy `gelu` is the tanh form; `relu` is refused by its key.
        let legacy = cfg(serde_json::json!({"hidden_act": "gelu"}));
        assert!(legacy.validate_for(Generation::Gemma1).is_ok());
        let relu = cfg(serde_json::json!({"hidden_act": "relu"}));
        let e = relu.validate_for(Generation::Gemma1).unwrap_err();
        assert!(e.contains("hidden_act 'relu'"), "{e}");
        // Gemma 1 and 2 have one rope for both layer types.
        let one = cfg(serde_json::json!({"rope_theta": 1e4, "rope_local_base_freq": 99.0}));
        let (g, l) = one.ropes_for(Generation::Gemma2).unwrap();
        assert_eq!((g.theta, l.theta), (1e4, 1e4));
    }

    #[test]
    fn ropes_from_both_layouts() {
        let v4 = cfg(
            serde_json::json!({"rope_theta": 1e6, "rope_local_base_freq": 1e4,
            "rope_scaling": {"rope_type": "linear", "factor": 8.0}}),
        );
        let (g, l) = v4.ropes().unwrap();
        assert_eq!((g.theta, g.factor, l.theta, l.factor), (1e6, 8.0, 1e4, 1.0));
        let v5 = cfg(serde_json::json!({"rope_parameters": {
            "full_attention": {"rope_theta": 1e6, "rope_type": "default"},
            "sliding_attention": {"rope_theta": 1e4, "rope_type": "default"}}}));
        let (g, l) = v5.ropes().unwrap();
        assert_eq!((g.theta, g.factor, l.theta, l.factor), (1e6, 1.0, 1e4, 1.0));
        let yarn = cfg(serde_json::json!({"rope_scaling": {"rope_type": "yarn"}}));
        assert!(yarn.validate().unwrap_err().contains("yarn"));
        let act = cfg(serde_json::json!({"hidden_activation": "silu"}));
        assert!(act.validate().unwrap_err().contains("silu"));
    }

    #[test]
    fn head_rms_matches_definition() {
        let mut v = [1.0f32, -2.0, 3.0, 0.5];
        let m = [1.0f32, 2.0, 0.5, 1.5];
        head_rms(&mut v, &m, 0.0);
        let r = (1.0f32 + 4.0 + 9.0 + 0.25) / 4.0;
        let r = 1.0 / r.sqrt();
        for (got, want) in v
            .iter()
            .zip([1.0 * r, -2.0 * r * 2.0, 3.0 * r * 0.5, 0.5 * r * 1.5])
        {
            assert!((got - want).abs() < 1e-6);
        }
    }
}
