//! GPT-2 decoders (`model_type: gpt2`; e.g. CodeGPT, CodeParrot).
//!
//! Mirrors Hugging Face transformers' `modeling_gpt2.py` with eager attention, in f32:
//! `x = wte(ids) + wpe(pos)`, then per block `x += c_proj(attn(c_attn(ln_1(x))))` and
//! `x += mlp.c_proj(gelu_new(c_fc(ln_2(x))))`; a final `ln_f`; the LM head is tied to
//! `wte`. GPT-2's `Conv1D` stores weights as `[in, out]`, so they are used as they are,
//! and `c_attn` already is the fused Q|K|V projection the attention kernel takes.
//! Attention scale: `1/sqrt(d)` when `scale_attn_weights`, further divided by
//! `layer + 1` when `scale_attn_by_inverse_layer_idx` (HF `GPT2Attention.scaling`).
//!
//! Hidden states follow HF `output_hidden_states`: `[0]` = `wte + wpe`, `[l]` = block
//! `l`'s output for `l < layers`, and the LAST entry is after `ln_f`. Window:
//! `n_positions`. Checkpoint names with or without the `transformer.` prefix.

use candle_core::{Device, Module, Tensor};
use candle_nn::{Embedding, LayerNorm, VarBuilder};
use serde::Deserialize;

use super::decoder::{embed_with_positions, Pass};
use super::{Capture, ForwardOptions, LogitsSink};
use crate::error::{Error, Result};

/// The fields of an HF GPT-2 `config.json` that codescope needs.
#[derive(Debug, Clone, Deserialize)]
pub struct Gpt2Config {
    pub vocab_size: usize,
    pub n_embd: usize,
    pub n_layer: usize,
    pub n_head: usize,
    pub n_positions: usize,
    #[serde(default)]
    pub n_inner: Option<usize>,
    #[serde(default = "default_act")]
    pub activation_function: String,
    #[serde(default = "default_eps")]
    pub layer_norm_epsilon: f64,
    #[serde(default = "yes")]
    pub scale_attn_weights: bool,
    #[serde(default)]
    pub scale_attn_by_inverse_layer_idx: bool,
}

impl Gpt2Config {
    /// Refuse what codescope does not implement (as a one-line reason).
    pub fn validate(&self) -> std::result::Result<(), String> {
        super::check_eps("layer_norm_epsilon", self.layer_norm_epsilon)?;
        if !matches!(
            self.activation_function.as_str(),
            "gelu_new" | "gelu_pytorch_tanh" | "gelu_fast"
        ) {
            return Err(format!(
                "unsupported activation_function '{}' (only gelu_new)",
                self.activation_function
            ));
        }
        if self.n_head == 0 || !self.n_embd.is_multiple_of(self.n_head) {
            return Err(format!(
                "n_embd {} is not a multiple of n_head {}",
                self.n_embd, self.n_head
            ));
        }
        Ok(())
    }
}

fn default_act() -> String {
    "gelu_new".into()
}
fn default_eps() -> f64 {
    1e-5
}
fn yes() -> bool {
    true
}

/// `[in, out]` weight (Conv1D layout) + bias.
struct Conv1D {
    w: Tensor,
    b: Tensor,
}

impl Conv1D {
    fn load(inp: usize, out: usize, vb: VarBuilder) -> candle_core::Result<Self> {
        Ok(Conv1D {
            w: vb.get((inp, out), "weight")?,
            b: vb.get(out, "bias")?,
        })
    }
    fn forward(&self, x: &Tensor) -> candle_core::Result<Tensor> {
        x.matmul(&self.w)?.broadcast_add(&self.b)
    }
}

struct Block {
    ln_1: LayerNorm,
    c_attn: Conv1D,
    c_proj: Conv1D,
    ln_2: LayerNorm,
    c_fc: Conv1D,
    mlp_proj: Conv1D,
}

fn layer_norm(size: usize, eps: f64, vb: VarBuilder) -> candle_core::Result<LayerNorm> {
    Ok(LayerNorm::new(
        vb.get(size, "weight")?,
        vb.get(size, "bias")?,
        eps,
    ))
}

/// A loaded GPT-2 with its (tied) LM head.
pub struct Gpt2 {
    cfg: Gpt2Config,
    wte: Embedding,
    wpe: Embedding,
    blocks: Vec<Block>,
    ln_f: LayerNorm,
    device: Device,
}

impl Gpt2 {
    /// Build from a `VarBuilder` whose names mirror the HF checkpoint.
    pub fn load(cfg: Gpt2Config, vb: VarBuilder) -> Result<Self> {
        cfg.validate().map_err(Error::Compute)?;
        let vb = if vb.contains_tensor("transformer.wte.weight") {
            vb.pp("transformer")
        } else {
            vb
        };
        let (h, eps) = (cfg.n_embd, cfg.layer_norm_epsilon);
        let inner = cfg.n_inner.unwrap_or(4 * h);
        let device = vb.device().clone();
        let wte = candle_nn::embedding(cfg.vocab_size, h, vb.pp("wte"))?;
        let wpe = candle_nn::embedding(cfg.n_positions, h, vb.pp("wpe"))?;
        let blocks = (0..cfg.n_layer)
            .map(|i| {
                let b = vb.pp("h").pp(i);
                Ok(Block {
                    ln_1: layer_norm(h, eps, b.pp("ln_1"))?,
                    c_attn: Conv1D::load(h, 3 * h, b.pp("attn").pp("c_attn"))?,
                    c_proj: Conv1D::load(h, h, b.pp("attn").pp("c_proj"))?,
                    ln_2: layer_norm(h, eps, b.pp("ln_2"))?,
                    c_fc: Conv1D::load(h, inner, b.pp("mlp").pp("c_fc"))?,
                    mlp_proj: Conv1D::load(inner, h, b.pp("mlp").pp("c_proj"))?,
                })
            })
            .collect::<candle_core::Result<Vec<_>>>()?;
        let ln_f = layer_norm(h, eps, vb.pp("ln_f"))?;
        Ok(Gpt2 {
            cfg,
            wte,
            wpe,
            blocks,
            ln_f,
            device,
        })
    }

    fn run(
        &self,
        ids: &[u32],
        opts: &ForwardOptions,
        sink: Option<&mut LogitsSink>,
    ) -> Result<Capture> {
        super::check_ids(ids, self.cfg.n_positions, self.cfg.vocab_size)?;
        let (heads, h) = (self.cfg.n_head, self.cfg.n_embd);
        let d = h / heads;
        let (mut pass, mut x) = Pass::start(
            opts,
            self.blocks.len(),
            heads,
            ids.len(),
            h,
            &self.device,
            || embed_with_positions(&self.wte, &self.wpe, ids, &self.device),
        )?;
        for (li, b) in pass.span(&self.blocks) {
            pass.layer(li)?;
            let mut scale = if self.cfg.scale_attn_weights {
                1.0 / (d as f32).sqrt()
            } else {
                1.0
            };
            if self.cfg.scale_attn_by_inverse_layer_idx {
                scale /= (li + 1) as f32;
            }
            let qkv = b.c_attn.forward(&b.ln_1.forward(&x)?)?;
            let qkv = qkv.flatten_all()?.to_vec1::<f32>()?;
            let ctx = pass.attend(&qkv, d, scale, None)?;
            x = (x + b.c_proj.forward(&ctx)?)?;
            let m = b.c_fc.forward(&b.ln_2.forward(&x)?)?.gelu()?;
            x = (x + b.mlp_proj.forward(&m)?)?;
            pass.layer_done(&x, li)?;
        }
        pass.finish(
            &x,
            |x| Ok(self.ln_f.forward(x)?),
            sink,
            self.cfg.vocab_size,
            |last, sink| super::lm::stream_logits(last, &self.wte.embeddings().t()?, sink),
        )
    }
}

decoder_backbone!(Gpt2, |s|
    layers: s.cfg.n_layer,
    heads: s.cfg.n_head,
    hidden: s.cfg.n_embd,
    window: s.cfg.n_positions,
    vocab: s.cfg.vocab_size);
