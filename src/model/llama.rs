//! Llama-family decoders: Llama (deepseek-coder, CodeLlama) and Qwen2 (Qwen2.5-Coder).
//!
//! The computation mirrors Hugging Face transformers' `modeling_llama.py` /
//! `modeling_qwen2.py` with eager attention, in f32: token embedding, then per layer
//! `x += o_proj(attn(rope(q), rope(k), v))` on the RMS-normed input and
//! `x += down(silu(gate(h)) * up(h))` on the RMS-normed result; a final RMSNorm; an LM
//! head (tied to the embedding when `tie_word_embeddings`).
//!
//! - Rotary embeddings are HF's "rotate half" form (not the interleaved one):
//!   `inv_freq[i] = 1 / theta^(2i/d)` computed in f32 as HF does, divided by `factor` for
//!   `rope_type: linear` (deepseek-coder); other scalings (llama3, yarn, dynamic) are
//!   refused at load rather than silently computed wrong. `rope_theta` is read from the
//!   top level (transformers 4) or `rope_parameters` (transformers 5).
//! - Grouped-query attention: K/V heads are repeated so query head `h` reads KV head
//!   `h / (heads / kv_heads)` (HF `repeat_kv`); captured attention is per query head.
//! - Biases are loaded wherever the checkpoint has them (Qwen2: q/k/v; Llama with
//!   `attention_bias` / `mlp_bias`).
//! - Hidden states follow HF `output_hidden_states` exactly: `[0]` is the embedding
//!   output, `[l]` the output of layer `l` for `l < layers`, and the LAST entry is the
//!   output of the final layer *after the final RMSNorm* (HF replaces it by
//!   `last_hidden_state`). Checked against transformers 5.24 by
//!   `tools/reference/tiny_decoder_reference.py`.
//! - Window: `max_position_embeddings`, or Qwen2's `sliding_window` when
//!   `use_sliding_window` is set (inside that window sliding attention is full causal).
//!
//! Invariants: one unpadded sequence at a time, causal mask, positions `0..n`.

use candle_core::{Device, Module, Tensor};
use candle_nn::{Embedding, VarBuilder};
use serde::Deserialize;

use super::decoder::{lm_head, repeat_kv, Pass};
use super::rope::{self, Rope};
use super::{Backbone, Capture, ForwardOptions, LogitsSink};
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
    /// Tokens per input, special tokens included.
    pub fn window(&self) -> usize {
        match (self.use_sliding_window, self.sliding_window) {
            (true, Some(w)) => w.min(self.max_position_embeddings),
            _ => self.max_position_embeddings,
        }
    }
    /// Refuse what codescope does not implement (as a one-line reason).
    pub fn validate(&self) -> std::result::Result<(), String> {
        super::check_eps("rms_norm_eps", self.rms_norm_eps)?;
        if self.hidden_act != "silu" {
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
        self.rope().map(|_| ())
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
    w: Tensor,
    b: Option<Tensor>,
}

impl Proj {
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
            w: crate::model::mapped::cat_rows(&ws)?.t()?,
            b: if any_bias {
                Some(crate::model::mapped::cat_rows(&bs)?)
            } else {
                None
            },
        })
    }
    pub(crate) fn forward(&self, x: &Tensor) -> candle_core::Result<Tensor> {
        let y = x.matmul(&self.w)?;
        match &self.b {
            Some(b) => y.broadcast_add(b),
            None => Ok(y),
        }
    }
}

struct Layer {
    in_norm: Tensor,
    qkv: Proj,
    o: Proj,
    post_norm: Tensor,
    gate_up: Proj,
    down: Proj,
}

/// A loaded Llama/Qwen2 decoder with its LM head.
pub struct Llama {
    cfg: LlamaConfig,
    arch: &'static str,
    embed: Embedding,
    layers: Vec<Layer>,
    norm: Tensor,
    /// `[vocab, hidden]` (the embedding matrix when tied).
    lm_head: Tensor,
    inv_freq: Vec<f32>,
    device: Device,
}

impl Llama {
    /// Build from a `VarBuilder` whose names mirror the HF checkpoint (`model.layers.N...`,
    /// `lm_head.weight`). `arch` is the family name reported in `ModelInfo`.
    pub fn load(cfg: LlamaConfig, arch: &'static str, vb: VarBuilder) -> Result<Self> {
        cfg.validate().map_err(Error::Compute)?;
        let (heads, kv, d) = (cfg.num_attention_heads, cfg.kv_heads(), cfg.head_dim());
        let inv_freq = cfg.rope().map_err(Error::Compute)?.inv_freq(d);
        let device = vb.device().clone();
        let h = cfg.hidden_size;
        let m = if vb.contains_tensor("model.embed_tokens.weight") {
            vb.pp("model")
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
                    in_norm: l.pp("input_layernorm").get(h, "weight")?,
                    qkv: Proj::fused(
                        &[a.pp("q_proj"), a.pp("k_proj"), a.pp("v_proj")],
                        h,
                        &[heads * d, kv * d, kv * d],
                    )?,
                    o: Proj::fused(&[a.pp("o_proj")], heads * d, &[h])?,
                    post_norm: l.pp("post_attention_layernorm").get(h, "weight")?,
                    gate_up: Proj::fused(
                        &[mlp.pp("gate_proj"), mlp.pp("up_proj")],
                        h,
                        &[inter, inter],
                    )?,
                    down: Proj::fused(&[mlp.pp("down_proj")], inter, &[h])?,
                })
            })
            .collect::<candle_core::Result<Vec<_>>>()?;
        let norm = m.pp("norm").get(h, "weight")?;
        let lm_head = lm_head(&vb, cfg.tie_word_embeddings, cfg.vocab_size, h, &embed)?;
        Ok(Llama {
            cfg,
            arch,
            embed,
            layers,
            norm,
            lm_head,
            inv_freq,
            device,
        })
    }

    /// The family name given at load (`llama`, `qwen2`).
    pub fn arch(&self) -> &'static str {
        self.arch
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
        let scale = 1.0 / (d as f32).sqrt();
        let (cos, sin) = rope::tables(&self.inv_freq, n);
        let (mut pass, mut x) = Pass::start(
            opts,
            self.layers.len(),
            heads,
            n,
            self.cfg.hidden_size,
            &self.device,
            || Ok(self.embed.forward(&Tensor::new(ids, &self.device)?)?),
        )?;
        let rotate = |v: &mut [f32], p: usize| rope::rotate_half(v, &cos, &sin, p);
        let mut fused = vec![0.0f32; n * 3 * heads * d];
        for (li, layer) in pass.span(&self.layers) {
            pass.layer(li)?;
            let h = self.rms(&x, &layer.in_norm)?;
            let qkv = layer.qkv.forward(&h)?.flatten_all()?.to_vec1::<f32>()?;
            repeat_kv(&qkv, n, heads, kv, d, &mut fused, rotate, rotate);
            let ctx = pass.attend(&fused, d, scale, None)?;
            x = (x + layer.o.forward(&ctx)?)?;
            let h = self.rms(&x, &layer.post_norm)?;
            let gu = layer.gate_up.forward(&h)?;
            let inter = self.cfg.intermediate_size;
            let act =
                (candle_nn::ops::silu(&gu.narrow(1, 0, inter)?)? * gu.narrow(1, inter, inter)?)?;
            x = (x + layer.down.forward(&act)?)?;
            pass.layer_done(&x, li)?;
        }
        pass.finish(
            &x,
            |x| Ok(self.rms(x, &self.norm)?),
            sink,
            |last, sink| super::lm::stream_logits(last, &self.lm_head.t()?, sink),
        )
    }
}

decoder_backbone!(Llama, |s|
    layers: s.cfg.num_hidden_layers,
    heads: s.cfg.num_attention_heads,
    hidden: s.cfg.hidden_size,
    window: s.cfg.window(),
    vocab: s.cfg.vocab_size);
