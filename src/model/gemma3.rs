//! Gemma 3 text decoders (`model_type: gemma3_text`, e.g. Gemma 3 270M), from HF
//! safetensors or — through [`super::gguf`] — from a quantized GGUF file.
//!
//! The computation mirrors transformers' `modeling_gemma3.py` with eager attention, in
//! f32:
//! - the token embedding is scaled by `sqrt(hidden_size)`;
//! - every RMSNorm multiplies by `(1 + w)` (Gemma's convention; the checkpoint stores
//!   `w`), and there are four per layer: `input_layernorm` → attention →
//!   `post_attention_layernorm` → residual; `pre_feedforward_layernorm` → MLP →
//!   `post_feedforward_layernorm` → residual;
//! - queries and keys are RMS-normed per head (`q_norm`, `k_norm`, over `head_dim`)
//!   before the rotary embedding ("rotate half" form);
//! - attention scores are scaled by `query_pre_attn_scalar^-1/2` (not `head_dim`);
//! - layers are `sliding_attention` (local: query `i` sees keys `j` with `i - j <
//!   sliding_window`, rope base `rope_local_base_freq`, 10 000) or `full_attention`
//!   (global, rope base `rope_theta`, 1e6, with optional linear scaling) — from
//!   `layer_types`, else every `sliding_window_pattern`-th layer (6) is global;
//! - the MLP is `down(gelu_tanh(gate(h)) * up(h))`;
//! - the LM head is tied to the (unscaled) embedding, with optional final logit
//!   soft-capping `tanh(z / c) * c`.
//!
//! Grouped-query attention is expanded to per-query-head attention for capture, as in
//! [`super::llama`]. Hidden states follow HF `output_hidden_states` (`[0]` = scaled
//! embedding, last = after the final norm). Rope tables are built only for the
//! positions of the current input (the 32 768-position window is never tabulated).

use candle_core::{Device, Module, Tensor};
use candle_nn::{Embedding, VarBuilder};
use serde::Deserialize;

use super::decoder::{repeat_kv, Pass};
use super::llama::Proj;
use super::rope::{self, Rope};
use super::{kernels, Backbone, Capture, ForwardOptions, LogitsSink};
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
    #[serde(default)]
    pub final_logit_softcapping: Option<f64>,
    #[serde(default)]
    pub attn_logit_softcapping: Option<f64>,
    #[serde(default)]
    pub use_bidirectional_attention: bool,
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
    /// Whether layer `i` is a sliding-window (local) layer.
    pub fn is_sliding(&self, i: usize) -> bool {
        match &self.layer_types {
            Some(t) => t.get(i).is_some_and(|s| s == "sliding_attention"),
            None => {
                let pattern = self.sliding_window_pattern.unwrap_or(6).max(1);
                (i + 1) % pattern != 0
            }
        }
    }
    /// Tokens per input.
    pub fn window(&self) -> usize {
        self.max_position_embeddings
    }

    /// Refuse what codescope does not implement (as a one-line reason).
    pub fn validate(&self) -> std::result::Result<(), String> {
        super::check_eps("rms_norm_eps", self.rms_norm_eps)?;
        if !matches!(
            self.hidden_activation.as_str(),
            "gelu_pytorch_tanh" | "gelu_new"
        ) {
            return Err(format!(
                "unsupported hidden_activation '{}' (only gelu_pytorch_tanh)",
                self.hidden_activation
            ));
        }
        for (name, v) in [
            ("query_pre_attn_scalar", self.query_pre_attn_scalar),
            ("final_logit_softcapping", self.final_logit_softcapping),
        ] {
            if let Some(v) = v.filter(|v| !(v.is_finite() && *v > 0.0)) {
                return Err(format!("{name} is {v}; it must be a positive number"));
            }
        }
        if self.attn_logit_softcapping.is_some() {
            return Err("attention logit soft-capping is not supported".into());
        }
        if self.use_bidirectional_attention {
            return Err("bidirectional Gemma 3 (embedding models) is not supported".into());
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
        self.ropes().map(|_| ())
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
    q_norm: Tensor,
    k_norm: Tensor,
    o: Proj,
    post_attn_norm: Tensor,
    pre_ff_norm: Tensor,
    gate_up: Proj,
    down: Proj,
    post_ff_norm: Tensor,
    sliding: bool,
}

/// A loaded Gemma 3 text decoder with its (tied) LM head.
pub struct Gemma3 {
    cfg: Gemma3Config,
    embed: Embedding,
    embed_scale: f32,
    layers: Vec<Layer>,
    norm: Tensor,
    /// `[vocab, hidden]`.
    lm_head: Tensor,
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
    /// Build from a `VarBuilder` with HF checkpoint names (`model.layers.N...`).
    pub fn load(cfg: Gemma3Config, vb: VarBuilder) -> Result<Self> {
        cfg.validate().map_err(Error::Compute)?;
        let (heads, kv, d) = (cfg.num_attention_heads, cfg.kv_heads(), cfg.head_dim());
        let (global, local) = cfg.ropes().map_err(Error::Compute)?;
        let device = vb.device().clone();
        let h = cfg.hidden_size;
        let m = if vb.contains_tensor("model.embed_tokens.weight") {
            vb.pp("model")
        } else if vb.contains_tensor("model.language_model.embed_tokens.weight") {
            vb.pp("model").pp("language_model")
        } else {
            vb.clone()
        };
        let embed = candle_nn::embedding(cfg.vocab_size, h, m.pp("embed_tokens"))?;
        let inter = cfg.intermediate_size;
        let layers = (0..cfg.num_hidden_layers)
            .map(|i| {
                let l = m.pp("layers").pp(i);
                let a = l.pp("self_attn");
                let mlp = l.pp("mlp");
                Ok(Layer {
                    in_norm: gemma_norm(&l.pp("input_layernorm"), h)?,
                    qkv: Proj::fused(
                        &[a.pp("q_proj"), a.pp("k_proj"), a.pp("v_proj")],
                        h,
                        &[heads * d, kv * d, kv * d],
                    )?,
                    q_norm: gemma_norm(&a.pp("q_norm"), d)?,
                    k_norm: gemma_norm(&a.pp("k_norm"), d)?,
                    o: Proj::fused(&[a.pp("o_proj")], heads * d, &[h])?,
                    post_attn_norm: gemma_norm(&l.pp("post_attention_layernorm"), h)?,
                    pre_ff_norm: gemma_norm(&l.pp("pre_feedforward_layernorm"), h)?,
                    gate_up: Proj::fused(
                        &[mlp.pp("gate_proj"), mlp.pp("up_proj")],
                        h,
                        &[inter, inter],
                    )?,
                    down: Proj::fused(&[mlp.pp("down_proj")], inter, &[h])?,
                    post_ff_norm: gemma_norm(&l.pp("post_feedforward_layernorm"), h)?,
                    sliding: cfg.is_sliding(i),
                })
            })
            .collect::<candle_core::Result<Vec<_>>>()?;
        let norm = gemma_norm(&m.pp("norm"), h)?;
        let lm_head = if vb.contains_tensor("lm_head.weight") {
            vb.pp("lm_head").get((cfg.vocab_size, h), "weight")?
        } else {
            embed.embeddings().clone()
        };
        // HF keeps `embed_scale` as a tensor in the weights' dtype: sqrt(h) rounded to f32.
        let embed_scale = (h as f64).sqrt() as f32;
        Ok(Gemma3 {
            inv_freq_global: global.inv_freq(d),
            inv_freq_local: local.inv_freq(d),
            cfg,
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
        let scale = self
            .cfg
            .query_pre_attn_scalar
            .unwrap_or(d as f64)
            .powf(-0.5) as f32;
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
            let q_norm = layer.q_norm.to_vec1::<f32>()?;
            let k_norm = layer.k_norm.to_vec1::<f32>()?;
            let h = self.rms(&x, &layer.in_norm)?;
            let qkv = layer.qkv.forward(&h)?.flatten_all()?.to_vec1::<f32>()?;
            // Per-head RMS norm (Q's weights or K's), then rope.
            let norm_rope = |v: &mut [f32], w: &[f32], p: usize| {
                head_rms(v, w, eps);
                rope::rotate_half(v, cos, sin, p);
            };
            let q = |v: &mut [f32], p: usize| norm_rope(v, &q_norm, p);
            let k = |v: &mut [f32], p: usize| norm_rope(v, &k_norm, p);
            repeat_kv(&qkv, n, heads, kv, d, &mut fused, q, k);
            let window = if layer.sliding {
                self.cfg.sliding_window
            } else {
                None
            };
            let ctx = pass.attend(&fused, d, scale, window)?;
            let a = self.rms(&layer.o.forward(&ctx)?, &layer.post_attn_norm)?;
            x = (x + a)?;
            let h = self.rms(&x, &layer.pre_ff_norm)?;
            let gu = layer.gate_up.forward(&h)?;
            let inter = self.cfg.intermediate_size;
            let act = kernels::gelu_tanh_mul(&gu.flatten_all()?.to_vec1::<f32>()?, inter);
            let act = Tensor::from_vec(act, (n, inter), &self.device)?;
            let m = self.rms(&layer.down.forward(&act)?, &layer.post_ff_norm)?;
            x = (x + m)?;
            pass.layer_done(&x, li)?;
        }
        pass.finish(
            &x,
            |x| Ok(self.rms(x, &self.norm)?),
            sink,
            |last, sink| {
                let head = self.lm_head.t()?;
                match self.cfg.final_logit_softcapping {
                    Some(cap) if cap > 0.0 => {
                        let cap = cap as f32;
                        super::lm::stream_logits(last, &head, &mut |start, block| {
                            let capped: Vec<f32> =
                                block.iter().map(|z| (z / cap).tanh() * cap).collect();
                            sink(start, &capped)
                        })
                    }
                    _ => super::lm::stream_logits(last, &head, sink),
                }
            },
        )
    }
}

/// Gemma's per-head RMSNorm in place: `v * rsqrt(mean(v^2) + eps) * m`, `m = 1 + w`.
fn head_rms(v: &mut [f32], m: &[f32], eps: f32) {
    let ms = v.iter().map(|a| a * a).sum::<f32>() / v.len() as f32;
    let r = 1.0 / (ms + eps).sqrt();
    for (a, w) in v.iter_mut().zip(m) {
        *a = *a * r * w;
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
