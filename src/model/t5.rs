//! T5 (CodeT5, CodeT5+ 220M / 770M; T5 v1.0 and v1.1): the encoder's self-attention
//! captured, the stack the study analysed ([`super::encdec::ENCODER`]), or with
//! `--stack decoder|cross` the decoder's self- or cross-attention, the snippet
//! teacher-forced ([`super::encdec`]).
//!
//! Mirrors Hugging Face transformers' `modeling_t5.py` (`T5Stack` with `is_decoder =
//! False`, eager attention) in f32:
//! - embeddings: `shared` (`encoder.embed_tokens` is tied to it), no scaling, no
//!   positions;
//! - per block, pre-norm: `x += o(attention(T5LayerNorm(x)))`, then
//!   `x += wo(act(wi(T5LayerNorm(x))))` (`feed_forward_proj` `relu`, v1.0) or
//!   `x += wo(act(wi_0(·)) * wi_1(·))` (`gated-gelu` with `gelu_new`, v1.1 and CodeT5+);
//! - attention scores `Q Kᵀ + B` with NO `1/sqrt(d)` scaling, `B` the relative position
//!   bias: block 0's `relative_attention_bias` `[num_buckets, heads]` looked up by the
//!   bidirectional bucket of `key - query` (`_relative_position_bucket`), computed once
//!   and shared by every block;
//! - `T5LayerNorm`: `w * x / sqrt(mean(x²) + eps)` (no mean subtraction, no bias);
//! - hidden states as transformers returns them: the embeddings, each block's output,
//!   and for the last block its output after `final_layer_norm` (`[layer+1][pos][dim]`;
//!   index `l < layers` is the residual stream entering block `l`, as partial passes
//!   need).
//!
//! Heads have `d_kv` features, which need not be `d_model / num_heads`. T5's positions
//! are relative, so no table bounds the input: the window is the config's `n_positions`
//! (512 for CodeT5, the length the study used), 512 when absent. Checkpoint names are
//! those of `T5ForConditionalGeneration` / `T5EncoderModel` (`shared.weight`,
//! `encoder.block.N.layer.{0,1}...`); the encoder stack ignores the decoder and LM-head
//! weights.
//!
//! The decoder (`T5Stack` with `is_decoder = True`): the same embeddings (`shared`), per
//! block `x += o(causal self-attention(norm(x)))`, `x += o(cross-attention(norm(x),
//! encoder output))`, `x += ff(norm(x))` (`layer.0`, `layer.1.EncDecAttention`,
//! `layer.2`); the self-attention's bias is decoder block 0's `relative_attention_bias`
//! looked up by the ONE-directional bucket of `key - query` (`bidirectional=False`:
//! all buckets for keys at or before the query, [`causal_bucket`]) plus the causal mask;
//! the cross-attention has no position bias; `decoder.final_layer_norm` after the last
//! block. The LM head is `lm_head.weight` when the checkpoint has one, else `shared`
//! (tied), applied to the last hidden state times `d_model ** -0.5` when the config says
//! so (`scale_decoder_outputs`, written by transformers 5; else `tie_word_embeddings`,
//! default true: T5 v1.0 and CodeT5 scale, v1.1 and CodeT5+ do not).

use candle_nn::VarBuilder;
use serde::Deserialize;

use super::encdec::{
    find_prefix, forward_stack, fuse_rows, host, shift_right, Act, Linear, Seq2Seq, Stack,
};
use super::intervene::Intervention;
use super::{kernels, Backbone, Capture, ForwardOptions, LogitsSink};
use crate::error::{Error, Result};

/// The fields of a T5 `config.json` the encoder needs.
#[derive(Debug, Clone, Deserialize)]
pub struct T5Config {
    pub vocab_size: usize,
    pub d_model: usize,
    pub d_kv: usize,
    pub d_ff: usize,
    pub num_layers: usize,
    pub num_heads: usize,
    #[serde(default = "default_buckets")]
    pub relative_attention_num_buckets: usize,
    #[serde(default = "default_max_distance")]
    pub relative_attention_max_distance: usize,
    #[serde(default = "default_eps")]
    pub layer_norm_epsilon: f64,
    #[serde(default = "default_ff")]
    pub feed_forward_proj: String,
    #[serde(default)]
    pub n_positions: Option<usize>,
    /// Decoder blocks (absent: `num_layers`, transformers' symmetry).
    #[serde(default)]
    pub num_decoder_layers: Option<usize>,
    /// The decoder's first input token (absent: `pad_token_id`, else 0).
    #[serde(default)]
    pub decoder_start_token_id: Option<u32>,
    #[serde(default)]
    pub pad_token_id: Option<u32>,
    /// transformers 4.x: whether the LM head is tied to `shared`, which also decides the
    /// `d_model ** -0.5` rescale of the decoder output (absent: true).
    #[serde(default)]
    pub tie_word_embeddings: Option<bool>,
    /// transformers 5.x writes the rescale out (it forces `tie_word_embeddings` true);
    /// when present it decides.
    #[serde(default)]
    pub scale_decoder_outputs: Option<bool>,
}

fn default_buckets() -> usize {
    32
}
fn default_max_distance() -> usize {
    128
}
fn default_eps() -> f64 {
    1e-6
}
fn default_ff() -> String {
    "relu".into()
}

/// The window when the config declares no `n_positions`.
const DEFAULT_WINDOW: usize = 512;

impl T5Config {
    /// Refuse values that cannot give a working model (as a one-line reason).
    pub fn validate(&self) -> std::result::Result<(), String> {
        super::check_eps("layer_norm_epsilon", self.layer_norm_epsilon)?;
        if self.num_heads == 0 || self.d_kv == 0 {
            return Err(format!(
                "num_heads {} x d_kv {} gives no attention features",
                self.num_heads, self.d_kv
            ));
        }
        // Bidirectional buckets: half per direction, half of those exact.
        let max_exact = self.relative_attention_num_buckets / 4;
        if max_exact == 0 || self.relative_attention_max_distance <= max_exact {
            return Err(format!(
                "relative_attention_num_buckets {} and relative_attention_max_distance {} \
                 give no bucket layout (need at least 4 buckets and a distance above a \
                 quarter of them)",
                self.relative_attention_num_buckets, self.relative_attention_max_distance
            ));
        }
        self.feed_forward().map(|_| ())
    }

    /// `(gated, activation)` from `feed_forward_proj` as `T5Config` reads it:
    /// `[gated-]ACT`, with `gated-gelu` meaning `gelu_new`.
    fn feed_forward(&self) -> std::result::Result<(bool, Act), String> {
        let s = self.feed_forward_proj.as_str();
        let (gated, act) = match s.split_once('-') {
            Some(("gated", act)) => (true, act),
            None => (false, s),
            Some(_) => {
                return Err(format!(
                    "feed_forward_proj '{s}' is not 'ACT' or 'gated-ACT'"
                ))
            }
        };
        let act = if s == "gated-gelu" { "gelu_new" } else { act };
        Act::parse(act)
            .map(|a| (gated, a))
            .map_err(|e| format!("feed_forward_proj '{s}': {e}"))
    }

    /// Refuse a config whose decoder cannot run (the decoder stacks): its one-directional
    /// buckets put half of them in the exact range and need a larger maximum distance.
    pub fn validate_decoder(&self) -> std::result::Result<(), String> {
        let max_exact = self.relative_attention_num_buckets / 2;
        if self.relative_attention_max_distance <= max_exact {
            return Err(format!(
                "relative_attention_num_buckets {} and relative_attention_max_distance {} \
                 give the decoder no bucket layout (need a distance above half the buckets)",
                self.relative_attention_num_buckets, self.relative_attention_max_distance
            ));
        }
        Ok(())
    }

    /// The decoder's blocks.
    pub fn decoder_layers(&self) -> usize {
        self.num_decoder_layers.unwrap_or(self.num_layers)
    }

    /// Whether the decoder output is scaled by `d_model ** -0.5` before the LM head.
    fn scales_decoder_output(&self) -> bool {
        self.scale_decoder_outputs
            .unwrap_or(self.tie_word_embeddings.unwrap_or(true))
    }

    /// Number of tokens (special ones included) the model takes.
    pub fn window(&self) -> usize {
        self.n_positions.unwrap_or(DEFAULT_WINDOW)
    }
}

/// `_relative_position_bucket(relative_position, bidirectional=True, ...)` of
/// transformers for one offset `rel = key - query`, in f32 as torch computes it.
pub fn relative_bucket(rel: i64, num_buckets: usize, max_distance: usize) -> usize {
    let half = num_buckets / 2;
    let base = if rel > 0 { half } else { 0 };
    let rp = rel.unsigned_abs() as usize;
    let max_exact = half / 2;
    if rp < max_exact {
        return base + rp;
    }
    let log_ratio = ((max_distance as f64) / (max_exact as f64)).ln() as f32;
    let scaled = (rp as f32 / max_exact as f32).ln() / log_ratio * (half - max_exact) as f32;
    base + (max_exact + scaled as usize).min(half - 1)
}

/// `_relative_position_bucket(relative_position, bidirectional=False, ...)` of
/// transformers (the decoder's self-attention) for one offset `rel = key - query`: keys
/// after the query share bucket 0 (the causal mask hides them).
pub fn causal_bucket(rel: i64, num_buckets: usize, max_distance: usize) -> usize {
    let rp = (-rel).max(0) as usize;
    let max_exact = num_buckets / 2;
    if rp < max_exact {
        return rp;
    }
    let log_ratio = ((max_distance as f64) / (max_exact as f64)).ln() as f32;
    let scaled = (rp as f32 / max_exact as f32).ln() / log_ratio * (num_buckets - max_exact) as f32;
    (max_exact + scaled as usize).min(num_buckets - 1)
}

/// T5's RMS-style norm in place: `w * x / sqrt(mean(x²) + eps)`.
struct RmsNorm {
    w: Vec<f32>,
    eps: f32,
}

impl RmsNorm {
    fn load(size: usize, eps: f64, vb: VarBuilder) -> candle_core::Result<Self> {
        Ok(RmsNorm {
            w: host(&vb.get(size, "weight")?)?,
            eps: eps as f32,
        })
    }

    /// The normed copy of `x` (`[n, d_model]`).
    fn apply(&self, x: &[f32]) -> Vec<f32> {
        let mut out = vec![0.0f32; x.len()];
        kernels::t5_rms_norm(x, self.w.len(), &self.w, self.eps, &mut out);
        out
    }
}

/// The feed-forward of one block: `wi` (or `wi_0`, `wi_1` gated) and `wo`.
enum FeedForward {
    Plain {
        wi: Linear,
        wo: Linear,
    },
    Gated {
        wi: Linear,
        wo: Linear,
        inter: usize,
    },
}

struct Block {
    attn_norm: RmsNorm,
    /// Fused Q|K|V `[3 * heads * d_kv, d_model]`, no bias.
    qkv: Linear,
    o: Linear,
    ff_norm: RmsNorm,
    ff: FeedForward,
}

/// A decoder block's cross-attention (`layer.1.EncDecAttention`, no position bias).
struct CrossAttention {
    norm: RmsNorm,
    q: Linear,
    /// Fused K|V `[2 * heads * d_kv, d_model]` over the encoder output.
    kv: Linear,
    o: Linear,
}

impl CrossAttention {
    fn load(cfg: &T5Config, vb: VarBuilder) -> candle_core::Result<Self> {
        let (d, inner) = (cfg.d_model, cfg.num_heads * cfg.d_kv);
        let att = vb.pp("EncDecAttention");
        Ok(CrossAttention {
            norm: RmsNorm::load(d, cfg.layer_norm_epsilon, vb.pp("layer_norm"))?,
            q: Linear::load(d, inner, false, att.pp("q"))?,
            kv: Linear::fuse(vec![
                Linear::load(d, inner, false, att.pp("k"))?,
                Linear::load(d, inner, false, att.pp("v"))?,
            ]),
            o: Linear::load(inner, d, false, att.pp("o"))?,
        })
    }
}

impl FeedForward {
    fn load(cfg: &T5Config, gated: bool, dense: VarBuilder) -> candle_core::Result<Self> {
        let d = cfg.d_model;
        Ok(if gated {
            FeedForward::Gated {
                wi: Linear::fuse(vec![
                    Linear::load(d, cfg.d_ff, false, dense.pp("wi_0"))?,
                    Linear::load(d, cfg.d_ff, false, dense.pp("wi_1"))?,
                ]),
                wo: Linear::load(cfg.d_ff, d, false, dense.pp("wo"))?,
                inter: cfg.d_ff,
            }
        } else {
            FeedForward::Plain {
                wi: Linear::load(d, cfg.d_ff, false, dense.pp("wi"))?,
                wo: Linear::load(cfg.d_ff, d, false, dense.pp("wo"))?,
            }
        })
    }

    /// `x + wo(ff(h))` for the normed rows `h` of the residual `x`.
    fn apply(&self, h: &[f32], x: &[f32], n: usize, act: Act) -> Vec<f32> {
        match self {
            FeedForward::Plain { wi, wo } => {
                let mut a = wi.apply(h, n, None);
                act.apply(&mut a);
                wo.apply(&a, n, Some(x))
            }
            FeedForward::Gated { wi, wo, inter } => {
                let gu = wi.apply(h, n, None);
                let a = gated(&gu, n, *inter, act);
                wo.apply(&a, n, Some(x))
            }
        }
    }
}

impl Block {
    /// Block `vb` (`layer.0` self-attention; the feed-forward in `layer.{ff}`: 1 in the
    /// encoder, 2 in the decoder, after its cross-attention).
    fn load(cfg: &T5Config, gated: bool, ff: usize, vb: VarBuilder) -> candle_core::Result<Self> {
        let (d, inner) = (cfg.d_model, cfg.num_heads * cfg.d_kv);
        let sa = vb.pp("layer").pp(0);
        let att = sa.pp("SelfAttention");
        let qkv = Linear::fuse(vec![
            Linear::load(d, inner, false, att.pp("q"))?,
            Linear::load(d, inner, false, att.pp("k"))?,
            Linear::load(d, inner, false, att.pp("v"))?,
        ]);
        let ffl = vb.pp("layer").pp(ff);
        Ok(Block {
            attn_norm: RmsNorm::load(d, cfg.layer_norm_epsilon, sa.pp("layer_norm"))?,
            qkv,
            o: Linear::load(inner, d, false, att.pp("o"))?,
            ff_norm: RmsNorm::load(d, cfg.layer_norm_epsilon, ffl.pp("layer_norm"))?,
            ff: FeedForward::load(cfg, gated, ffl.pp("DenseReluDense"))?,
        })
    }
}

/// The decoder (`--stack decoder|cross`): blocks with their cross-attention, block 0's
/// one-directional position bias shared by all, the final norm and the LM head.
struct Decoder {
    blocks: Vec<(Block, CrossAttention)>,
    /// `decoder.block.0...relative_attention_bias` `[num_buckets, heads]`.
    rel_bias: Vec<f32>,
    final_norm: RmsNorm,
    /// `lm_head.weight` `[vocab, d_model]` when the checkpoint has one; else `shared`.
    lm_head: Option<Vec<f32>>,
    start: u32,
}

/// A loaded T5: its encoder, and with the decoder stacks its decoder.
pub struct T5 {
    cfg: T5Config,
    act: Act,
    /// `shared` `[vocab, d_model]` on the host.
    embed: Vec<f32>,
    /// Block 0's `relative_attention_bias` `[num_buckets, heads]`.
    rel_bias: Vec<f32>,
    blocks: Vec<Block>,
    final_norm: RmsNorm,
    stack: Stack,
    decoder: Option<Decoder>,
}

impl T5 {
    /// Build from a `VarBuilder` with the checkpoint's names (`shared.weight`,
    /// `encoder.*`, and for the decoder stacks `decoder.*` and `lm_head.weight` when the
    /// head is not tied; the `transformer.` prefix of some exports is accepted too).
    pub fn load(cfg: T5Config, stack: Stack, vb: VarBuilder) -> Result<Self> {
        let (gated, act) = cfg.feed_forward().map_err(Error::Compute)?;
        let missing = || {
            Error::Compute(
                "no tensor 'encoder.block.0.layer.0.SelfAttention.q.weight': not a T5 checkpoint"
                    .into(),
            )
        };
        let vb = find_prefix(
            &vb,
            &["", "transformer", "model"],
            "encoder.block.0.layer.0.SelfAttention.q.weight",
        )
        .ok_or_else(missing)?;
        let d = cfg.d_model;
        // `encoder.embed_tokens` is tied to `shared`; safetensors exports keep one of them.
        let embed_name = ["shared.weight", "encoder.embed_tokens.weight"]
            .into_iter()
            .find(|n| vb.contains_tensor(n))
            .ok_or_else(|| {
                Error::Compute("no tensor 'shared.weight' or 'encoder.embed_tokens.weight'".into())
            })?;
        let embed = host(&vb.get((cfg.vocab_size, d), embed_name)?)?;
        let enc = vb.pp("encoder");
        let rel_bias = host(
            &enc.pp("block")
                .pp(0)
                .pp("layer")
                .pp(0)
                .pp("SelfAttention")
                .pp("relative_attention_bias")
                .get(
                    (cfg.relative_attention_num_buckets, cfg.num_heads),
                    "weight",
                )?,
        )?;
        let blocks = (0..cfg.num_layers)
            .map(|i| Block::load(&cfg, gated, 1, enc.pp("block").pp(i)))
            .collect::<candle_core::Result<Vec<_>>>()?;
        let final_norm = RmsNorm::load(d, cfg.layer_norm_epsilon, enc.pp("final_layer_norm"))?;
        let decoder = if stack == Stack::Encoder {
            None
        } else {
            Some(Self::load_decoder(&cfg, gated, &vb)?)
        };
        Ok(T5 {
            cfg,
            act,
            embed,
            rel_bias,
            blocks,
            final_norm,
            stack,
            decoder,
        })
    }

    fn load_decoder(cfg: &T5Config, gated: bool, vb: &VarBuilder) -> Result<Decoder> {
        let dec = vb.pp("decoder");
        if !dec.contains_tensor("block.0.layer.0.SelfAttention.q.weight") {
            return Err(Error::Compute(
                "no tensor 'decoder.block.0.layer.0.SelfAttention.q.weight': the checkpoint \
                 has no decoder (an encoder-only export); use --stack encoder"
                    .into(),
            ));
        }
        let rel_bias = host(
            &dec.pp("block")
                .pp(0)
                .pp("layer")
                .pp(0)
                .pp("SelfAttention")
                .pp("relative_attention_bias")
                .get(
                    (cfg.relative_attention_num_buckets, cfg.num_heads),
                    "weight",
                )?,
        )?;
        let blocks = (0..cfg.decoder_layers())
            .map(|i| {
                let b = dec.pp("block").pp(i);
                Ok((
                    Block::load(cfg, gated, 2, b.clone())?,
                    CrossAttention::load(cfg, b.pp("layer").pp(1))?,
                ))
            })
            .collect::<candle_core::Result<Vec<_>>>()?;
        let final_norm = RmsNorm::load(
            cfg.d_model,
            cfg.layer_norm_epsilon,
            dec.pp("final_layer_norm"),
        )?;
        let lm_head = if vb.contains_tensor("lm_head.weight") {
            Some(host(
                &vb.get((cfg.vocab_size, cfg.d_model), "lm_head.weight")?,
            )?)
        } else {
            None
        };
        Ok(Decoder {
            blocks,
            rel_bias,
            final_norm,
            lm_head,
            start: cfg.decoder_start_token_id.or(cfg.pad_token_id).unwrap_or(0),
        })
    }

    /// The decoder's position bias in Toeplitz form `[heads, 2n - 1]` (see
    /// [`T5::position_bias`]), keys after the query masked with minus infinity.
    fn decoder_position_bias(&self, rel_bias: &[f32], n: usize) -> Vec<f32> {
        let heads = self.cfg.num_heads;
        let span = (2 * n).saturating_sub(1);
        let mut out = vec![0.0f32; heads * span];
        for t in 0..span {
            let rel = t as i64 - (n as i64 - 1);
            let b = causal_bucket(
                rel,
                self.cfg.relative_attention_num_buckets,
                self.cfg.relative_attention_max_distance,
            );
            for h in 0..heads {
                out[h * span + t] = if rel > 0 {
                    f32::NEG_INFINITY
                } else {
                    rel_bias[b * heads + h]
                };
            }
        }
        out
    }

    /// The position bias of every head in Toeplitz form `[heads, 2n - 1]`: entry
    /// `n - 1 + (key - query)` (see [`kernels::attention_probs_rel_bias`]).
    pub fn position_bias(&self, n: usize) -> Vec<f32> {
        let heads = self.cfg.num_heads;
        let span = (2 * n).saturating_sub(1);
        let mut out = vec![0.0f32; heads * span];
        for t in 0..span {
            let rel = t as i64 - (n as i64 - 1);
            let b = relative_bucket(
                rel,
                self.cfg.relative_attention_num_buckets,
                self.cfg.relative_attention_max_distance,
            );
            for h in 0..heads {
                out[h * span + t] = self.rel_bias[b * heads + h];
            }
        }
        out
    }

    fn embed(&self, ids: &[u32]) -> Vec<f32> {
        let d = self.cfg.d_model;
        let mut x = Vec::with_capacity(ids.len() * d);
        for &id in ids {
            x.extend_from_slice(&self.embed[id as usize * d..(id as usize + 1) * d]);
        }
        x
    }
}

impl Backbone for T5 {
    fn layers(&self) -> usize {
        match self.stack {
            Stack::Encoder => self.cfg.num_layers,
            _ => self.cfg.decoder_layers(),
        }
    }
    fn heads(&self) -> usize {
        self.cfg.num_heads
    }
    fn hidden_size(&self) -> usize {
        self.cfg.d_model
    }
    fn window(&self) -> usize {
        self.cfg.window()
    }
    fn vocab_size(&self) -> usize {
        self.cfg.vocab_size
    }
    fn stack(&self) -> Option<&'static str> {
        Some(self.stack.name())
    }
    fn causal(&self) -> bool {
        self.stack == Stack::Decoder
    }

    fn forward(&self, ids: &[u32], opts: &ForwardOptions) -> Result<Capture> {
        match self.stack {
            Stack::Encoder => self.encoder_forward(ids, opts),
            s => forward_stack(self, s, ids, opts, None),
        }
    }

    fn forward_lm(
        &self,
        ids: &[u32],
        opts: &ForwardOptions,
        sink: &mut LogitsSink,
    ) -> Result<Capture> {
        let stack = super::encdec::lm_stack(self.stack, opts)?;
        forward_stack(self, stack, ids, opts, Some(sink))
    }
}

impl T5 {
    /// The encoder's forward pass with capture (the encoder stack).
    fn encoder_forward(&self, ids: &[u32], opts: &ForwardOptions) -> Result<Capture> {
        super::check_ids(ids, self.cfg.window(), self.cfg.vocab_size)?;
        let (heads, dk) = (self.cfg.num_heads, self.cfg.d_kv);
        let n = ids.len();
        let layers = self.blocks.len();
        let (mut capture, mut x, (first, end)) =
            opts.begin(n, layers, heads, self.cfg.d_model, || self.embed(ids))?;
        let bias = self.position_bias(n);
        for (li, block) in self.blocks.iter().enumerate().take(end).skip(first) {
            if opts.cancelled(li) {
                return Err(Error::Cancelled);
            }
            let h = block.attn_norm.apply(&x);
            let qkv = block.qkv.apply(&h, n, None);
            let mut ctx = vec![0.0f32; n * heads * dk];
            let mut probs =
                kernels::attention_probs_rel_bias(&qkv, n, heads, dk, 1.0, &bias, &mut ctx);
            super::intervene::after_softmax(
                opts.intervention,
                li,
                &mut probs,
                &qkv,
                n,
                heads,
                dk,
                &mut ctx,
            );
            capture.keep_attention(opts, li, probs)?;
            x = block.o.apply(&ctx, n, Some(&x));
            let h = block.ff_norm.apply(&x);
            x = block.ff.apply(&h, &x, n, self.act);
            super::check_layer_host(&x, li)?;
            if opts.hidden {
                if li + 1 == layers {
                    let last = self.final_norm.apply(&x);
                    super::check_layer_host(&last, li)?;
                    capture.push_hidden_host(&last);
                } else {
                    capture.push_hidden_host(&x);
                }
            }
        }
        Ok(capture)
    }
}

impl Seq2Seq for T5 {
    fn decoder_layers(&self) -> usize {
        self.cfg.decoder_layers()
    }
    fn decoder_heads(&self) -> usize {
        self.cfg.num_heads
    }
    fn d_model(&self) -> usize {
        self.cfg.d_model
    }
    fn vocab(&self) -> usize {
        self.cfg.vocab_size
    }
    fn window(&self) -> usize {
        self.cfg.window()
    }

    fn encode(&self, ids: &[u32]) -> Result<Vec<f32>> {
        let drop = |_: usize, _: Vec<f32>| Ok(());
        let opts = ForwardOptions {
            hidden: true,
            on_attention: Some(&drop),
            ..Default::default()
        };
        let cap = self.encoder_forward(ids, &opts)?;
        cap.hidden
            .and_then(|mut h| h.layers.pop())
            .ok_or_else(|| Error::Compute("the encoder returned no output".into()))
    }

    fn decoder_input(&self, ids: &[u32]) -> Vec<u32> {
        let start = self.decoder.as_ref().map_or(0, |d| d.start);
        shift_right(ids, start)
    }

    fn decoder_embed(&self, dec: &[u32]) -> Vec<f32> {
        self.embed(dec)
    }

    fn decoder_layer(
        &self,
        layer: usize,
        x: &mut Vec<f32>,
        enc: &[f32],
        cross: bool,
        iv: Option<&Intervention>,
    ) -> Vec<f32> {
        let dec = self
            .decoder
            .as_ref()
            .expect("the decoder stacks load the decoder");
        let (heads, dk) = (self.cfg.num_heads, self.cfg.d_kv);
        let n = x.len() / self.cfg.d_model;
        let (block, ca) = &dec.blocks[layer];
        // The bias of block 0, shared by every block (recomputed per layer: `2n - 1`
        // values per head).
        let bias = self.decoder_position_bias(&dec.rel_bias, n);
        let h = block.attn_norm.apply(x);
        let qkv = block.qkv.apply(&h, n, None);
        let mut ctx = vec![0.0f32; n * heads * dk];
        let mut self_probs =
            kernels::attention_probs_rel_bias(&qkv, n, heads, dk, 1.0, &bias, &mut ctx);
        // Masked keys got exp(-87) from the kernel's clamped exp: make them exactly 0.
        for (r, row) in self_probs.chunks_exact_mut(n).enumerate() {
            row[r % n + 1..].iter_mut().for_each(|p| *p = 0.0);
        }
        // The intervention goes to the attention of the stack: self or cross.
        let (self_iv, cross_iv) = if cross { (None, iv) } else { (iv, None) };
        super::intervene::after_softmax(
            self_iv,
            layer,
            &mut self_probs,
            &qkv,
            n,
            heads,
            dk,
            &mut ctx,
        );
        *x = block.o.apply(&ctx, n, Some(x));
        let h = ca.norm.apply(x);
        let q = ca.q.apply(&h, n, None);
        let kv = ca.kv.apply(enc, n, None);
        let fused = fuse_rows(&q, &kv, n);
        let mut ctx = vec![0.0f32; n * heads * dk];
        let mut cross_probs =
            kernels::attention_probs(&fused, n, heads, dk, 1.0, false, None, &mut ctx);
        super::intervene::after_softmax_cross(
            cross_iv,
            layer,
            &mut cross_probs,
            &fused,
            n,
            heads,
            dk,
            &mut ctx,
        );
        *x = ca.o.apply(&ctx, n, Some(x));
        let h = block.ff_norm.apply(x);
        *x = block.ff.apply(&h, x, n, self.act);
        if cross {
            cross_probs
        } else {
            self_probs
        }
    }

    fn decoder_final(&self, x: &[f32]) -> Vec<f32> {
        let dec = self
            .decoder
            .as_ref()
            .expect("the decoder stacks load the decoder");
        dec.final_norm.apply(x)
    }

    fn lm_logits(&self, last: &[f32], rows: usize) -> Vec<f32> {
        let dec = self
            .decoder
            .as_ref()
            .expect("the decoder stacks load the decoder");
        let d = self.cfg.d_model;
        let w = dec.lm_head.as_deref().unwrap_or(&self.embed);
        let scaled: Vec<f32>;
        let x = if self.cfg.scales_decoder_output() {
            let s = (d as f64).powf(-0.5) as f32;
            scaled = last.iter().map(|v| v * s).collect();
            &scaled
        } else {
            last
        };
        let mut out = vec![0.0f32; rows * self.cfg.vocab_size];
        kernels::linear(x, rows, d, w, self.cfg.vocab_size, None, None, &mut out);
        out
    }
}

/// `act(gate) * up` per row, from the fused `[n, 2 * inter]` rows `gate | up`.
fn gated(gu: &[f32], n: usize, inter: usize, act: Act) -> Vec<f32> {
    if act == Act::GeluTanh {
        // `gated-gelu` (v1.1, CodeT5+): one vectorised pass.
        return kernels::gelu_tanh_mul(gu, inter);
    }
    let mut gate = Vec::with_capacity(n * inter);
    for row in gu.chunks_exact(2 * inter) {
        gate.extend_from_slice(&row[..inter]);
    }
    act.apply(&mut gate);
    for (g, row) in gate.chunks_exact_mut(inter).zip(gu.chunks_exact(2 * inter)) {
        for (a, &u) in g.iter_mut().zip(&row[inter..]) {
            *a *= u;
        }
    }
    gate
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_follow_transformers() {
        // From transformers' _relative_position_bucket(bidirectional=True, 32, 128)
        // (torch 2.x): the exact region, the logarithmic one at its integral points,
        // and the clamp.
        let want = [
            (0, 0),
            (-1, 1),
            (1, 17),
            (-7, 7),
            (7, 23),
            (15, 25),
            (16, 26),
            (17, 26),
            (31, 27),
            (32, 28),
            (33, 28),
            (63, 29),
            (64, 30),
            (65, 30),
            (-16, 10),
            (-32, 12),
            (-64, 14),
            (-1000, 15),
            (1000, 31),
        ];
        for (rel, b) in want {
            assert_eq!(relative_bucket(rel, 32, 128), b, "offset {rel}");
        }
    }

    #[test]
    fn rms_norm_matches_naive() {
        let mut rng = crate::model::testutil::SplitMix::new(2);
        // Rows of 13 (not a multiple of 8 lanes), more than one parallel chunk of 16 rows.
        let (n, dim) = (37, 13);
        let x = rng.vec(n * dim, 3.0);
        let w = rng.vec(dim, 1.0);
        let mut out = vec![f32::NAN; n * dim];
        kernels::t5_rms_norm(&x, dim, &w, 1e-6, &mut out);
        for r in 0..n {
            let row = &x[r * dim..(r + 1) * dim];
            let ms = row.iter().map(|&v| v as f64 * v as f64).sum::<f64>() / dim as f64;
            for j in 0..dim {
                let want = w[j] as f64 * row[j] as f64 / (ms + 1e-6).sqrt();
                assert!((out[r * dim + j] as f64 - want).abs() < 1e-5, "{r} {j}");
            }
        }
    }

    #[test]
    fn biased_attention_matches_naive() {
        let (n, heads, d) = (9, 3, 4);
        let hd = heads * d;
        let mut rng = crate::model::testutil::SplitMix::new(11);
        let qkv = rng.vec(n * 3 * hd, 1.0);
        let rel = rng.vec(heads * (2 * n - 1), 2.0);
        for scale in [1.0f32, 0.5] {
            let mut ctx = vec![f32::NAN; n * hd];
            let probs = kernels::attention_probs_rel_bias(&qkv, n, heads, d, scale, &rel, &mut ctx);
            for h in 0..heads {
                for i in 0..n {
                    let s: Vec<f64> = (0..n)
                        .map(|j| {
                            let dot: f64 = (0..d)
                                .map(|k| {
                                    qkv[i * 3 * hd + h * d + k] as f64
                                        * qkv[j * 3 * hd + hd + h * d + k] as f64
                                })
                                .sum();
                            dot * scale as f64 + rel[h * (2 * n - 1) + n - 1 + j - i] as f64
                        })
                        .collect();
                    let m = s.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
                    let z: f64 = s.iter().map(|v| (v - m).exp()).sum();
                    for j in 0..n {
                        let want = (s[j] - m).exp() / z;
                        let got = probs[(h * n + i) * n + j] as f64;
                        assert!((got - want).abs() < 1e-6, "{h} {i} {j}: {got} vs {want}");
                    }
                    for k in 0..d {
                        let want: f64 = (0..n)
                            .map(|j| {
                                (s[j] - m).exp() / z * qkv[j * 3 * hd + 2 * hd + h * d + k] as f64
                            })
                            .sum();
                        assert!((ctx[i * hd + h * d + k] as f64 - want).abs() < 1e-5);
                    }
                }
            }
        }
        // One token: a 1 x 1 map of probability 1.
        let qkv = rng.vec(3 * hd, 1.0);
        let mut ctx = vec![0.0; hd];
        let p = kernels::attention_probs_rel_bias(&qkv, 1, heads, d, 1.0, &[0.3; 3], &mut ctx);
        assert_eq!(p, vec![1.0; 3]);
    }
}
