//! GPTBigCode decoders (`model_type: gpt_bigcode`): the StarCoder family, e.g.
//! bigcode/tiny_starcoder_py, starcoderbase-1b, SantaCoder's successors.
//!
//! Mirrors Hugging Face transformers' `modeling_gpt_bigcode.py` with eager attention, in
//! f32: `x = wte(ids) + wpe(pos)` (learned absolute positions), then per block
//! `x += c_proj(attn(c_attn(ln_1(x))))` and `x += mlp.c_proj(act(c_fc(ln_2(x))))`; a final
//! `ln_f`; the LM head is `wte` (tied) unless `tie_word_embeddings` is false and the
//! checkpoint has `lm_head.weight`. Unlike GPT-2, every projection is an `nn.Linear`
//! (`[out, in]`).
//!
//! - Multi-query attention (`multi_query`, the default): `c_attn` is
//!   `[q: hidden | k: head_dim | v: head_dim]`, one K/V head shared by all query heads;
//!   it is expanded per query head (HF `repeat_kv`), so captured attention is
//!   `[layer][query head][q][k]` like every other architecture.
//! - Without `multi_query`, `c_attn` is per head interleaved (`[q_h | k_h | v_h]` for each
//!   head `h`, HF's `view(.., heads, 3 * head_dim).split`): its rows are permuted at load
//!   into the `Q | K | V` layout the attention kernel takes.
//! - Scale `1/sqrt(head_dim)` when `scale_attn_weights`, else 1. Activation per
//!   `activation_function`: `gelu_pytorch_tanh` (StarCoder), `gelu_new`, `gelu_fast`
//!   (tanh form) or `gelu` (exact erf).
//! - Hidden states follow HF `output_hidden_states`: `[0]` = `wte + wpe`, `[l]` = block
//!   `l`'s output for `l < layers`, and the LAST entry is after `ln_f`. Checked against
//!   transformers 5.24 by `tools/reference/tiny_codegen_bigcode_reference.py`.
//! - Window: `n_positions` (`wpe` has that many rows).
//!
//! Invariants: one unpadded sequence at a time, causal mask, positions `0..n`.

use candle_core::{Device, Module, Tensor};
use candle_nn::{Embedding, LayerNorm, VarBuilder};
use serde::Deserialize;

use super::decoder::{embed_with_positions, lm_head, repeat_kv, Pass};
use super::{kernels, Capture, ForwardOptions, LogitsSink};
use crate::error::{Error, Result};

/// The fields of an HF GPTBigCode `config.json` that codescope needs.
#[derive(Debug, Clone, Deserialize)]
pub struct GptBigCodeConfig {
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
    #[serde(default = "yes")]
    pub multi_query: bool,
    #[serde(default = "yes")]
    pub tie_word_embeddings: bool,
}

fn default_act() -> String {
    "gelu_pytorch_tanh".into()
}
fn default_eps() -> f64 {
    1e-5
}
fn yes() -> bool {
    true
}

impl GptBigCodeConfig {
    fn kv_heads(&self) -> usize {
        if self.multi_query {
            1
        } else {
            self.n_head
        }
    }

    /// Refuse what codescope does not implement (as a one-line reason).
    pub fn validate(&self) -> std::result::Result<(), String> {
        super::check_eps("layer_norm_epsilon", self.layer_norm_epsilon)?;
        Gelu::parse(&self.activation_function)?;
        if self.n_head == 0 || !self.n_embd.is_multiple_of(self.n_head) {
            return Err(format!(
                "n_embd {} is not a multiple of n_head {}",
                self.n_embd, self.n_head
            ));
        }
        Ok(())
    }
}

/// The GELU variants HF's `ACT2FN` names for these decoders.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Gelu {
    /// `gelu_new`, `gelu_pytorch_tanh`, `gelu_fast`: the tanh approximation.
    Tanh,
    /// `gelu`: exact, with erf.
    Erf,
}

impl Gelu {
    pub(crate) fn parse(s: &str) -> std::result::Result<Self, String> {
        match s {
            "gelu_new" | "gelu_pytorch_tanh" | "gelu_fast" => Ok(Gelu::Tanh),
            "gelu" => Ok(Gelu::Erf),
            other => Err(format!(
                "unsupported activation_function '{other}' (supported: gelu, gelu_new, gelu_pytorch_tanh, gelu_fast)"
            )),
        }
    }

    pub(crate) fn apply(self, xs: &Tensor) -> candle_core::Result<Tensor> {
        match self {
            Gelu::Tanh => xs.gelu(),
            Gelu::Erf => {
                // candle's gelu_erf calls scalar libm erf; see kernels.rs.
                let mut v = xs.flatten_all()?.to_vec1::<f32>()?;
                kernels::gelu_erf_inplace(&mut v);
                Tensor::from_vec(v, xs.shape(), xs.device())
            }
        }
    }
}

/// An `nn.Linear` stored transposed (`[in, out]`, contiguous) with optional bias.
pub(crate) struct Lin {
    w: Tensor,
    b: Option<Tensor>,
}

impl Lin {
    /// Load `weight` `[out, in]` (+ `bias` if the checkpoint has it), optionally taking
    /// the output rows in the order `rows` (a permutation of `0..out`).
    pub(crate) fn load(
        inp: usize,
        out: usize,
        rows: Option<&[u32]>,
        vb: VarBuilder,
    ) -> candle_core::Result<Self> {
        let mut w = vb.get((out, inp), "weight")?;
        let mut b = if vb.contains_tensor("bias") {
            Some(vb.get(out, "bias")?)
        } else {
            None
        };
        if let Some(rows) = rows {
            let idx = Tensor::new(rows, vb.device())?;
            w = w.index_select(&idx, 0)?;
            b = b.map(|b| b.index_select(&idx, 0)).transpose()?;
        }
        Ok(Lin {
            w: w.t()?.contiguous()?,
            b,
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

pub(crate) fn layer_norm(size: usize, eps: f64, vb: VarBuilder) -> candle_core::Result<LayerNorm> {
    Ok(LayerNorm::new(
        vb.get(size, "weight")?,
        vb.get(size, "bias")?,
        eps,
    ))
}

/// Row order taking a per-head interleaved `[q_h | k_h | v_h]*` projection to
/// `Q | K | V` (each head's `d` rows contiguous inside its block).
fn deinterleave_rows(heads: usize, d: usize) -> Vec<u32> {
    let mut rows = Vec::with_capacity(3 * heads * d);
    for part in 0..3 {
        for h in 0..heads {
            rows.extend((0..d).map(|j| (h * 3 * d + part * d + j) as u32));
        }
    }
    rows
}

struct Block {
    ln_1: LayerNorm,
    c_attn: Lin,
    c_proj: Lin,
    ln_2: LayerNorm,
    c_fc: Lin,
    mlp_proj: Lin,
}

/// A loaded GPTBigCode with its LM head.
pub struct GptBigCode {
    cfg: GptBigCodeConfig,
    act: Gelu,
    wte: Embedding,
    wpe: Embedding,
    blocks: Vec<Block>,
    ln_f: LayerNorm,
    /// `[vocab, hidden]` (the token embedding when tied).
    lm_head: Tensor,
    device: Device,
}

impl GptBigCode {
    /// Build from a `VarBuilder` whose names mirror the HF checkpoint
    /// (`transformer.h.N...`, optionally `lm_head.weight`).
    pub fn load(cfg: GptBigCodeConfig, vb: VarBuilder) -> Result<Self> {
        cfg.validate().map_err(Error::Compute)?;
        let act = Gelu::parse(&cfg.activation_function).map_err(Error::Compute)?;
        let t = if vb.contains_tensor("transformer.wte.weight") {
            vb.pp("transformer")
        } else {
            vb.clone()
        };
        let (h, eps, heads) = (cfg.n_embd, cfg.layer_norm_epsilon, cfg.n_head);
        let d = h / heads;
        let kv_dim = cfg.kv_heads() * d;
        let inner = cfg.n_inner.unwrap_or(4 * h);
        let rows = (!cfg.multi_query).then(|| deinterleave_rows(heads, d));
        let device = vb.device().clone();
        let wte = candle_nn::embedding(cfg.vocab_size, h, t.pp("wte"))?;
        let wpe = candle_nn::embedding(cfg.n_positions, h, t.pp("wpe"))?;
        let blocks = (0..cfg.n_layer)
            .map(|i| {
                let b = t.pp("h").pp(i);
                Ok(Block {
                    ln_1: layer_norm(h, eps, b.pp("ln_1"))?,
                    c_attn: Lin::load(
                        h,
                        h + 2 * kv_dim,
                        rows.as_deref(),
                        b.pp("attn").pp("c_attn"),
                    )?,
                    c_proj: Lin::load(h, h, None, b.pp("attn").pp("c_proj"))?,
                    ln_2: layer_norm(h, eps, b.pp("ln_2"))?,
                    c_fc: Lin::load(h, inner, None, b.pp("mlp").pp("c_fc"))?,
                    mlp_proj: Lin::load(inner, h, None, b.pp("mlp").pp("c_proj"))?,
                })
            })
            .collect::<candle_core::Result<Vec<_>>>()?;
        let ln_f = layer_norm(h, eps, t.pp("ln_f"))?;
        let lm_head = lm_head(&vb, cfg.tie_word_embeddings, cfg.vocab_size, h, &wte)?;
        Ok(GptBigCode {
            cfg,
            act,
            wte,
            wpe,
            blocks,
            ln_f,
            lm_head,
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
        let n = ids.len();
        let (heads, h) = (self.cfg.n_head, self.cfg.n_embd);
        let d = h / heads;
        let kv = self.cfg.kv_heads();
        let scale = if self.cfg.scale_attn_weights {
            1.0 / (d as f32).sqrt()
        } else {
            1.0
        };
        let (mut pass, mut x) =
            Pass::start(opts, self.blocks.len(), heads, n, h, &self.device, || {
                embed_with_positions(&self.wte, &self.wpe, ids, &self.device)
            })?;
        let mut fused = if kv == heads {
            Vec::new()
        } else {
            vec![0.0f32; n * 3 * h]
        };
        for (li, b) in pass.span(&self.blocks) {
            pass.layer(li)?;
            let qkv = b.c_attn.forward(&b.ln_1.forward(&x)?)?;
            let qkv = qkv.flatten_all()?.to_vec1::<f32>()?;
            let input: &[f32] = if kv == heads {
                &qkv
            } else {
                // Multi-query: the shared K/V head repeated for every query head.
                repeat_kv(&qkv, n, heads, kv, d, &mut fused, |_, _| (), |_, _| ());
                &fused
            };
            let ctx = pass.attend(input, d, scale, None)?;
            x = (x + b.c_proj.forward(&ctx)?)?;
            let m = self.act.apply(&b.c_fc.forward(&b.ln_2.forward(&x)?)?)?;
            x = (x + b.mlp_proj.forward(&m)?)?;
            pass.layer_done(&x, li)?;
        }
        pass.finish(
            &x,
            |x| Ok(self.ln_f.forward(x)?),
            sink,
            self.cfg.vocab_size,
            |last, sink| super::lm::stream_logits(last, &self.lm_head.t()?, sink),
        )
    }
}

decoder_backbone!(GptBigCode, |s|
    layers: s.cfg.n_layer,
    heads: s.cfg.n_head,
    hidden: s.cfg.n_embd,
    window: s.cfg.n_positions,
    vocab: s.cfg.vocab_size);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deinterleave_takes_per_head_qkv_to_blocks() {
        // 2 heads of d = 2: source rows [q0 q0 k0 k0 v0 v0 q1 q1 k1 k1 v1 v1].
        assert_eq!(
            deinterleave_rows(2, 2),
            vec![0, 1, 6, 7, 2, 3, 8, 9, 4, 5, 10, 11]
        );
    }

    #[test]
    fn activations_parse() {
        assert_eq!(Gelu::parse("gelu_pytorch_tanh"), Ok(Gelu::Tanh));
        assert_eq!(Gelu::parse("gelu"), Ok(Gelu::Erf));
        assert!(Gelu::parse("relu").unwrap_err().contains("relu"));
    }
}
