//! CodeGen decoders (`model_type: codegen`; Salesforce/codegen-*-mono, -multi, -nl).
//!
//! Mirrors Hugging Face transformers' `modeling_codegen.py` with eager attention, in f32:
//! `x = wte(ids)` (no learned positions), then per block, with ONE layer norm feeding
//! attention and MLP in parallel (GPT-J style):
//! `h = ln_1(x); x = (out_proj(attn(h)) + fc_out(gelu_new(fc_in(h)))) + x`;
//! a final `ln_f`; an untied LM head with bias (`lm_head.weight`, `lm_head.bias`).
//!
//! - `qkv_proj` (no bias) is laid out for `mp_num = 4` model-parallel shards: its output
//!   is 4 blocks of `[q | v | k]`, each `hidden / 4` wide (note: V before K). HF reshapes
//!   each of q, v, k back to `[heads, head_dim]` across the blocks, so flat feature `i` of
//!   Q is output `(i / L) * 3L + i % L` with `L = hidden / 4` (V at `+ L`, K at `+ 2L`).
//!   The weight's rows are permuted at load so one matmul yields the `Q | K | V` layout
//!   the attention kernel takes.
//! - Rotary embeddings on the first `rotary_dim` features of each query and key head,
//!   GPT-J style: interleaved pairs `(2i, 2i + 1)` rotated by angle `p * inv_freq[i]`
//!   (`rotate_every_two`), `inv_freq[i] = 1 / 10000^(2i / rotary_dim)`, tables built in
//!   f32 as HF's `create_sinusoidal_positions`; the remaining features pass unrotated.
//! - Attention scores in f32 scaled by `1/sqrt(head_dim)`, causal; out_proj has no bias.
//! - Hidden states follow HF `output_hidden_states`: `[0]` = `wte(ids)`, `[l]` = block
//!   `l`'s output for `l < layers`, and the LAST entry is after `ln_f`. Checked against
//!   transformers 5.24 by `tools/reference/tiny_codegen_bigcode_reference.py`.
//! - Window: `n_positions` (HF's sinusoid table has that many rows; `n_ctx` is unused).
//!
//! Invariants: one unpadded sequence at a time, causal mask, positions `0..n`.

use candle_core::{Device, Module, Tensor};
use candle_nn::{Embedding, LayerNorm, VarBuilder};
use serde::Deserialize;

use super::decoder::{lm_head, Pass};
use super::gpt_bigcode::{layer_norm, Gelu, Lin};
use super::{Capture, ForwardOptions, LogitsSink};
use crate::error::{Error, Result};

/// HF's fixed number of model-parallel shards in `qkv_proj`.
const MP_NUM: usize = 4;

/// The fields of an HF CodeGen `config.json` that codescope needs.
#[derive(Debug, Clone, Deserialize)]
pub struct CodeGenConfig {
    pub vocab_size: usize,
    pub n_embd: usize,
    pub n_layer: usize,
    pub n_head: usize,
    pub n_positions: usize,
    #[serde(default)]
    pub rotary_dim: Option<usize>,
    #[serde(default)]
    pub n_inner: Option<usize>,
    #[serde(default = "default_act")]
    pub activation_function: String,
    #[serde(default = "default_eps")]
    pub layer_norm_epsilon: f64,
    #[serde(default)]
    pub tie_word_embeddings: bool,
}

fn default_act() -> String {
    "gelu_new".into()
}
fn default_eps() -> f64 {
    1e-5
}

impl CodeGenConfig {
    fn head_dim(&self) -> usize {
        self.n_embd / self.n_head.max(1)
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
        if !self.n_embd.is_multiple_of(MP_NUM) {
            return Err(format!(
                "n_embd {} is not a multiple of CodeGen's {MP_NUM} qkv shards",
                self.n_embd
            ));
        }
        let d = self.head_dim();
        match self.rotary_dim {
            Some(r) if r % 2 == 0 && r <= d => Ok(()),
            // HF builds its sin/cos tables `hidden_size` wide without rotary_dim, which
            // only fits a single head; no checkpoint does that.
            None => Err("rotary_dim is not set".into()),
            Some(r) => Err(format!(
                "rotary_dim {r} must be even and at most head_dim {d}"
            )),
        }
    }

    fn rotary(&self) -> usize {
        self.rotary_dim.unwrap_or(0)
    }
}

/// Row order taking `qkv_proj`'s `mp_num` blocks of `[q | v | k]` to `Q | K | V`.
fn qkv_rows(hidden: usize) -> Vec<u32> {
    let l = hidden / MP_NUM;
    let mut rows = Vec::with_capacity(3 * hidden);
    // Offset of q, k, v inside a block.
    for part in [0, 2, 1] {
        rows.extend((0..hidden).map(|i| ((i / l) * 3 * l + part * l + i % l) as u32));
    }
    rows
}

struct Block {
    ln_1: LayerNorm,
    /// Rows permuted to `Q | K | V`.
    qkv: Lin,
    out_proj: Lin,
    fc_in: Lin,
    fc_out: Lin,
}

/// A loaded CodeGen with its LM head.
pub struct CodeGen {
    cfg: CodeGenConfig,
    act: Gelu,
    wte: Embedding,
    blocks: Vec<Block>,
    ln_f: LayerNorm,
    /// `[vocab, hidden]` and its bias.
    lm_head: Tensor,
    lm_bias: Option<Tensor>,
    inv_freq: Vec<f32>,
    device: Device,
}

impl CodeGen {
    /// Build from a `VarBuilder` whose names mirror the HF checkpoint
    /// (`transformer.h.N...`, `lm_head.weight`, `lm_head.bias`).
    pub fn load(cfg: CodeGenConfig, vb: VarBuilder) -> Result<Self> {
        cfg.validate().map_err(Error::Compute)?;
        let act = Gelu::parse(&cfg.activation_function).map_err(Error::Compute)?;
        let t = if vb.contains_tensor("transformer.wte.weight") {
            vb.pp("transformer")
        } else {
            vb.clone()
        };
        let (h, eps) = (cfg.n_embd, cfg.layer_norm_epsilon);
        let inner = cfg.n_inner.unwrap_or(4 * h);
        let rot = cfg.rotary();
        // HF `create_sinusoidal_positions`: `1 / 10000 ** (arange(0, dim, 2) / dim)` in f32.
        let inv_freq = super::rope::Rope {
            theta: 10_000.0,
            factor: 1.0,
        }
        .inv_freq(rot);
        let rows = qkv_rows(h);
        let device = vb.device().clone();
        let wte = candle_nn::embedding(cfg.vocab_size, h, t.pp("wte"))?;
        let blocks = (0..cfg.n_layer)
            .map(|i| {
                let b = t.pp("h").pp(i);
                Ok(Block {
                    ln_1: layer_norm(h, eps, b.pp("ln_1"))?,
                    qkv: Lin::load(h, 3 * h, Some(&rows), b.pp("attn").pp("qkv_proj"))?,
                    out_proj: Lin::load(h, h, None, b.pp("attn").pp("out_proj"))?,
                    fc_in: Lin::load(h, inner, None, b.pp("mlp").pp("fc_in"))?,
                    fc_out: Lin::load(inner, h, None, b.pp("mlp").pp("fc_out"))?,
                })
            })
            .collect::<candle_core::Result<Vec<_>>>()?;
        let ln_f = layer_norm(h, eps, t.pp("ln_f"))?;
        let head = vb.pp("lm_head");
        let lm_head = lm_head(&vb, cfg.tie_word_embeddings, cfg.vocab_size, h, &wte)?;
        let lm_bias = if head.contains_tensor("bias") {
            Some(head.get(cfg.vocab_size, "bias")?)
        } else {
            None
        };
        Ok(CodeGen {
            cfg,
            act,
            wte,
            blocks,
            ln_f,
            lm_head,
            lm_bias,
            inv_freq,
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
        let d = self.cfg.head_dim();
        let half = self.inv_freq.len();
        let scale = 1.0 / (d as f32).sqrt();
        let (cos, sin) = super::rope::tables(&self.inv_freq, n);
        let (mut pass, mut x) =
            Pass::start(opts, self.blocks.len(), heads, n, h, &self.device, || {
                Ok(self.wte.forward(&Tensor::new(ids, &self.device)?)?)
            })?;
        for (li, b) in pass.span(&self.blocks) {
            pass.layer(li)?;
            let hs = b.ln_1.forward(&x)?;
            let mut qkv = b.qkv.forward(&hs)?.flatten_all()?.to_vec1::<f32>()?;
            // GPT-J rotary (HF `apply_rotary_pos_emb` with `rotate_every_two`) on the first
            // `rotary_dim` features of every Q and K head.
            for (p, row) in qkv.chunks_exact_mut(3 * h).enumerate() {
                let (c, s) = (
                    &cos[p * half..(p + 1) * half],
                    &sin[p * half..(p + 1) * half],
                );
                for head in row[..2 * h].chunks_exact_mut(d) {
                    for i in 0..half {
                        let (a, z) = (head[2 * i], head[2 * i + 1]);
                        head[2 * i] = a * c[i] - z * s[i];
                        head[2 * i + 1] = z * c[i] + a * s[i];
                    }
                }
            }
            let ctx = pass.attend(&qkv, d, scale, None)?;
            let attn = b.out_proj.forward(&ctx)?;
            let ff = b.fc_out.forward(&self.act.apply(&b.fc_in.forward(&hs)?)?)?;
            x = ((attn + ff)? + x)?;
            pass.layer_done(&x, li)?;
        }
        pass.finish(
            &x,
            |x| Ok(self.ln_f.forward(x)?),
            sink,
            self.cfg.vocab_size,
            |last, sink| {
                super::lm::stream_logits_biased(
                    last,
                    &self.lm_head.t()?,
                    self.lm_bias.as_ref(),
                    sink,
                )
            },
        )
    }
}

decoder_backbone!(CodeGen, |s|
    layers: s.cfg.n_layer,
    heads: s.cfg.n_head,
    hidden: s.cfg.n_embd,
    window: s.cfg.n_positions,
    vocab: s.cfg.vocab_size);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn qkv_rows_undo_the_mp_shards() {
        // hidden 8: 4 shards of L = 2, each [q q v v k k].
        let rows = qkv_rows(8);
        assert_eq!(&rows[..8], &[0, 1, 6, 7, 12, 13, 18, 19]); // Q
        assert_eq!(&rows[8..16], &[4, 5, 10, 11, 16, 17, 22, 23]); // K
        assert_eq!(&rows[16..], &[2, 3, 8, 9, 14, 15, 20, 21]); // V
    }

    #[test]
    fn config_refuses_what_is_not_implemented() {
        let cfg = |rotary: Option<usize>, act: &str| CodeGenConfig {
            vocab_size: 10,
            n_embd: 16,
            n_layer: 1,
            n_head: 2,
            n_positions: 8,
            rotary_dim: rotary,
            n_inner: None,
            activation_function: act.into(),
            layer_norm_epsilon: 1e-5,
            tie_word_embeddings: false,
        };
        assert!(cfg(Some(4), "gelu_new").validate().is_ok());
        assert!(cfg(None, "gelu_new").validate().is_err());
        assert!(cfg(Some(10), "gelu_new").validate().is_err());
        assert!(cfg(Some(3), "gelu_new").validate().is_err());
        assert!(cfg(Some(4), "swish").validate().is_err());
    }
}
