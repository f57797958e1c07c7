//! BART and PLBART: the encoder's self-attention captured, the stack the study analysed
//! ([`super::encdec::ENCODER`]), or with `--stack decoder|cross` the decoder's self- or
//! cross-attention, the snippet teacher-forced ([`super::encdec`]).
//!
//! Mirrors Hugging Face transformers' `BartEncoder` (`modeling_bart.py`) and
//! `PLBartEncoder` (`modeling_plbart.py`, the same computation) with eager attention, in
//! f32:
//! - embeddings: `embed_tokens(ids) * embed_scale` (`sqrt(d_model)` when
//!   `scale_embedding`, else 1) plus the learned positions, whose table has two extra
//!   rows: position `p` reads row `p + 2` (`*LearnedPositionalEmbedding`'s offset); then
//!   `layernorm_embedding`;
//! - per layer, post-norm: `x = LN(x + out_proj(attention(x)))`, then
//!   `x = LN(x + fc2(act(fc1(x))))` (`activation_function`, GELU by default), every
//!   projection with a bias;
//! - attention `softmax(Q Kᵀ / sqrt(head_dim))`;
//! - hidden states as transformers returns them: after `layernorm_embedding`, then each
//!   layer's output (no final norm: BART's encoder has none).
//!
//! LayerNorm epsilon is torch's default, 1e-5 (the configs carry none). The window is
//! `max_position_embeddings` (1024 for BART and PLBART base). Checkpoint names are those of
//! `*ForConditionalGeneration` (`model.shared.weight`, `model.encoder.*`) or of the bare
//! model (`shared.weight`, `encoder.*`); the encoder stack ignores the decoder and LM-head
//! weights.
//!
//! The decoder (`BartDecoder`, `PLBartDecoder`): the same embeddings (tied to `shared`,
//! scaled alike) plus `decoder.embed_positions` (offset 2), `decoder.layernorm_embedding`;
//! per layer, post-norm: `x = LN(x + self_attn(x))` causal, `x = LN(x +
//! encoder_attn(x, encoder output))`, `x = LN(x + fc2(act(fc1(x))))`; no final norm. The
//! LM head is `lm_head.weight` when the checkpoint has one, else `shared` (tied), plus
//! `final_logits_bias` (zero when absent). The decoder input starts with
//! `decoder_start_token_id` (BART; 2 when absent) or, for PLBART, the last token of the
//! input (its language code), as `shift_tokens_right` of each builds it.

use candle_nn::VarBuilder;
use serde::Deserialize;

use super::encdec::{
    find_prefix, forward_stack, fuse_rows, host, shift_right, Act, LayerNorm, Linear, Seq2Seq,
    Stack,
};
use super::{kernels, Backbone, Capture, ForwardOptions, LogitsSink};
use crate::error::{Error, Result};

/// torch's `nn.LayerNorm` default epsilon, which BART's layers use.
const LN_EPS: f64 = 1e-5;

/// The fields of a BART / PLBART `config.json` the encoder needs.
#[derive(Debug, Clone, Deserialize)]
pub struct BartConfig {
    pub vocab_size: usize,
    pub d_model: usize,
    pub encoder_layers: usize,
    pub encoder_attention_heads: usize,
    pub encoder_ffn_dim: usize,
    pub max_position_embeddings: usize,
    #[serde(default = "default_act")]
    pub activation_function: String,
    /// Absent: the config class's default (BART false, PLBART true).
    #[serde(default)]
    pub scale_embedding: Option<bool>,
    /// The decoder's layers, heads and feed-forward width (absent: the encoder's).
    #[serde(default)]
    pub decoder_layers: Option<usize>,
    #[serde(default)]
    pub decoder_attention_heads: Option<usize>,
    #[serde(default)]
    pub decoder_ffn_dim: Option<usize>,
    /// BART's first decoder input (absent: 2, `BartConfig`'s default); PLBART has none.
    #[serde(default)]
    pub decoder_start_token_id: Option<u32>,
}

fn default_act() -> String {
    "gelu".into()
}

impl BartConfig {
    /// Refuse values that cannot give a working model (as a one-line reason).
    pub fn validate(&self) -> std::result::Result<(), String> {
        if self.encoder_attention_heads == 0
            || !self.d_model.is_multiple_of(self.encoder_attention_heads)
        {
            return Err(format!(
                "d_model {} is not a multiple of encoder_attention_heads {}",
                self.d_model, self.encoder_attention_heads
            ));
        }
        Act::parse(&self.activation_function)
            .map(|_| ())
            .map_err(|e| e.to_string())
    }

    /// Refuse a decoder that cannot run (the decoder stacks).
    pub fn validate_decoder(&self) -> std::result::Result<(), String> {
        let heads = self.decoder_heads();
        if heads == 0 || !self.d_model.is_multiple_of(heads) {
            return Err(format!(
                "d_model {} is not a multiple of decoder_attention_heads {heads}",
                self.d_model
            ));
        }
        Ok(())
    }

    fn decoder_heads(&self) -> usize {
        self.decoder_attention_heads
            .unwrap_or(self.encoder_attention_heads)
    }
}

struct Layer {
    /// Fused Q|K|V `[3 * d_model, d_model]` with its bias.
    qkv: Linear,
    out_proj: Linear,
    attn_norm: LayerNorm,
    fc1: Linear,
    fc2: Linear,
    final_norm: LayerNorm,
}

impl Layer {
    /// An encoder layer, or a decoder layer's self-attention and feed-forward (`ffn` wide).
    fn load(cfg: &BartConfig, ffn: usize, vb: VarBuilder) -> candle_core::Result<Self> {
        let d = cfg.d_model;
        let sa = vb.pp("self_attn");
        Ok(Layer {
            qkv: Linear::fuse(vec![
                Linear::load(d, d, true, sa.pp("q_proj"))?,
                Linear::load(d, d, true, sa.pp("k_proj"))?,
                Linear::load(d, d, true, sa.pp("v_proj"))?,
            ]),
            out_proj: Linear::load(d, d, true, sa.pp("out_proj"))?,
            attn_norm: LayerNorm::load(d, LN_EPS, vb.pp("self_attn_layer_norm"))?,
            fc1: Linear::load(d, ffn, true, vb.pp("fc1"))?,
            fc2: Linear::load(ffn, d, true, vb.pp("fc2"))?,
            final_norm: LayerNorm::load(d, LN_EPS, vb.pp("final_layer_norm"))?,
        })
    }
}

/// A decoder layer's cross-attention (`encoder_attn`) and its norm.
struct CrossAttention {
    q: Linear,
    /// Fused K|V `[2 * d_model, d_model]` over the encoder output.
    kv: Linear,
    out_proj: Linear,
    norm: LayerNorm,
}

impl CrossAttention {
    fn load(d: usize, vb: VarBuilder) -> candle_core::Result<Self> {
        let ea = vb.pp("encoder_attn");
        Ok(CrossAttention {
            q: Linear::load(d, d, true, ea.pp("q_proj"))?,
            kv: Linear::fuse(vec![
                Linear::load(d, d, true, ea.pp("k_proj"))?,
                Linear::load(d, d, true, ea.pp("v_proj"))?,
            ]),
            out_proj: Linear::load(d, d, true, ea.pp("out_proj"))?,
            norm: LayerNorm::load(d, LN_EPS, vb.pp("encoder_attn_layer_norm"))?,
        })
    }
}

/// The decoder (`--stack decoder|cross`) and the LM head.
struct Decoder {
    layers: Vec<(Layer, CrossAttention)>,
    heads: usize,
    positions: Vec<f32>,
    emb_norm: LayerNorm,
    /// `lm_head` `[vocab, d_model]` (or `shared`'s copy when tied) with
    /// `final_logits_bias`.
    lm_head: Linear,
    /// BART's start token; `None` for PLBART (the input's last token).
    start: Option<u32>,
}

/// A loaded BART / PLBART: its encoder, and with the decoder stacks its decoder.
pub struct Bart {
    cfg: BartConfig,
    act: Act,
    /// `[vocab, d_model]` and `[max_position_embeddings + 2, d_model]` on the host.
    embed: Vec<f32>,
    positions: Vec<f32>,
    embed_scale: f32,
    emb_norm: LayerNorm,
    layers: Vec<Layer>,
    stack: Stack,
    decoder: Option<Decoder>,
}

/// The row offset of BART's learned positions.
const POSITION_OFFSET: usize = 2;

impl Bart {
    /// Build from a `VarBuilder` with the checkpoint's names (with or without `model.`);
    /// `plbart` picks PLBART's config defaults.
    pub fn load(cfg: BartConfig, plbart: bool, stack: Stack, root: VarBuilder) -> Result<Self> {
        let act = Act::parse(&cfg.activation_function)?;
        let vb = find_prefix(&root, &["model", ""], "encoder.embed_positions.weight").ok_or_else(
            || {
                Error::Compute(
                    "no tensor 'encoder.embed_positions.weight' (with or without a model. \
                     prefix): not a BART/PLBART checkpoint"
                        .into(),
                )
            },
        )?;
        let d = cfg.d_model;
        // `encoder.embed_tokens` is tied to `shared`; exports keep one or both.
        let embed_name = ["encoder.embed_tokens.weight", "shared.weight"]
            .into_iter()
            .find(|n| vb.contains_tensor(n))
            .ok_or_else(|| {
                Error::Compute("no tensor 'shared.weight' or 'encoder.embed_tokens.weight'".into())
            })?;
        let embed = host(&vb.get((cfg.vocab_size, d), embed_name)?)?;
        let enc = vb.pp("encoder");
        let positions = host(
            &enc.pp("embed_positions")
                .get((cfg.max_position_embeddings + POSITION_OFFSET, d), "weight")?,
        )?;
        let emb_norm = LayerNorm::load(d, LN_EPS, enc.pp("layernorm_embedding"))?;
        let layers = (0..cfg.encoder_layers)
            .map(|i| Layer::load(&cfg, cfg.encoder_ffn_dim, enc.pp("layers").pp(i)))
            .collect::<candle_core::Result<Vec<_>>>()?;
        let embed_scale = if cfg.scale_embedding.unwrap_or(plbart) {
            (d as f64).sqrt() as f32
        } else {
            1.0
        };
        let decoder = if stack == Stack::Encoder {
            None
        } else {
            Some(Self::load_decoder(&cfg, plbart, &root, &vb, &embed)?)
        };
        Ok(Bart {
            cfg,
            act,
            embed,
            positions,
            embed_scale,
            emb_norm,
            layers,
            stack,
            decoder,
        })
    }

    /// The decoder under `vb` (beside the encoder) and the LM head at the checkpoint's
    /// root (`lm_head.weight`, `final_logits_bias`); `embed` is `shared`.
    fn load_decoder(
        cfg: &BartConfig,
        plbart: bool,
        root: &VarBuilder,
        vb: &VarBuilder,
        embed: &[f32],
    ) -> Result<Decoder> {
        let d = cfg.d_model;
        let dec = vb.pp("decoder");
        if !dec.contains_tensor("embed_positions.weight") {
            return Err(Error::Compute(
                "no tensor 'decoder.embed_positions.weight': the checkpoint has no decoder; \
                 use --stack encoder"
                    .into(),
            ));
        }
        let ffn = cfg.decoder_ffn_dim.unwrap_or(cfg.encoder_ffn_dim);
        let layers = (0..cfg.decoder_layers.unwrap_or(cfg.encoder_layers))
            .map(|i| {
                let l = dec.pp("layers").pp(i);
                Ok((
                    Layer::load(cfg, ffn, l.clone())?,
                    CrossAttention::load(d, l)?,
                ))
            })
            .collect::<candle_core::Result<Vec<_>>>()?;
        let positions = host(
            &dec.pp("embed_positions")
                .get((cfg.max_position_embeddings + POSITION_OFFSET, d), "weight")?,
        )?;
        let emb_norm = LayerNorm::load(d, LN_EPS, dec.pp("layernorm_embedding"))?;
        let w = if root.contains_tensor("lm_head.weight") {
            host(&root.get((cfg.vocab_size, d), "lm_head.weight")?)?
        } else {
            embed.to_vec()
        };
        let b = if root.contains_tensor("final_logits_bias") {
            host(&root.get((1, cfg.vocab_size), "final_logits_bias")?)?
        } else {
            vec![0.0; cfg.vocab_size]
        };
        Ok(Decoder {
            layers,
            heads: cfg.decoder_heads(),
            positions,
            emb_norm,
            lm_head: Linear {
                w_kn: kernels::transpose_to_kn(&w, cfg.vocab_size, d),
                b: Some(b),
                inp: d,
                out: cfg.vocab_size,
            },
            start: (!plbart).then(|| cfg.decoder_start_token_id.unwrap_or(2)),
        })
    }

    fn embed(&self, ids: &[u32]) -> Vec<f32> {
        embed_with(self, ids, &self.positions, &self.emb_norm)
    }
}

/// Token embeddings (scaled) plus learned positions `positions`, then `norm`.
fn embed_with(m: &Bart, ids: &[u32], positions: &[f32], norm: &LayerNorm) -> Vec<f32> {
    let d = m.cfg.d_model;
    let mut x = vec![0.0f32; ids.len() * d];
    for (p, (row, &id)) in x.chunks_exact_mut(d).zip(ids).enumerate() {
        let w = &m.embed[id as usize * d..(id as usize + 1) * d];
        let r = p + POSITION_OFFSET;
        let pos = &positions[r * d..(r + 1) * d];
        for ((o, &a), &b) in row.iter_mut().zip(w).zip(pos) {
            *o = a * m.embed_scale + b;
        }
    }
    norm.apply(&mut x);
    x
}

impl Backbone for Bart {
    fn layers(&self) -> usize {
        match &self.decoder {
            Some(d) => d.layers.len(),
            None => self.cfg.encoder_layers,
        }
    }
    fn heads(&self) -> usize {
        match &self.decoder {
            Some(d) => d.heads,
            None => self.cfg.encoder_attention_heads,
        }
    }
    fn hidden_size(&self) -> usize {
        self.cfg.d_model
    }
    fn window(&self) -> usize {
        self.cfg.max_position_embeddings
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

impl Bart {
    /// The encoder's forward pass with capture (the encoder stack).
    fn encoder_forward(&self, ids: &[u32], opts: &ForwardOptions) -> Result<Capture> {
        super::check_ids(ids, self.cfg.max_position_embeddings, self.cfg.vocab_size)?;
        let heads = self.cfg.encoder_attention_heads;
        let d = self.cfg.d_model;
        let hd = d / heads;
        let scale = (1.0 / (hd as f64).sqrt()) as f32;
        let n = ids.len();
        let (mut capture, mut x, (first, end)) =
            opts.begin(n, self.layers.len(), heads, d, || self.embed(ids))?;
        for (li, layer) in self.layers.iter().enumerate().take(end).skip(first) {
            if opts.cancelled(li) {
                return Err(Error::Cancelled);
            }
            let qkv = layer.qkv.apply(&x, n, None);
            let mut ctx = vec![0.0f32; n * d];
            let probs = super::intervene::attend(
                opts.intervention,
                li,
                &qkv,
                n,
                heads,
                hd,
                scale,
                false,
                None,
                None,
                &mut ctx,
            );
            capture.keep_attention(opts, li, probs)?;
            let mut a = layer.out_proj.apply(&ctx, n, Some(&x));
            layer.attn_norm.apply(&mut a);
            let mut inter = layer.fc1.apply(&a, n, None);
            self.act.apply(&mut inter);
            x = layer.fc2.apply(&inter, n, Some(&a));
            layer.final_norm.apply(&mut x);
            super::check_layer_host(&x, li)?;
            if opts.hidden {
                capture.push_hidden_host(&x);
            }
        }
        Ok(capture)
    }

    fn dec(&self) -> &Decoder {
        self.decoder
            .as_ref()
            .expect("the decoder stacks load the decoder")
    }
}

impl Seq2Seq for Bart {
    fn decoder_layers(&self) -> usize {
        self.dec().layers.len()
    }
    fn decoder_heads(&self) -> usize {
        self.dec().heads
    }
    fn d_model(&self) -> usize {
        self.cfg.d_model
    }
    fn vocab(&self) -> usize {
        self.cfg.vocab_size
    }
    fn window(&self) -> usize {
        self.cfg.max_position_embeddings
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
        // PLBART wraps the last token (the language code) to the front.
        let start = self
            .dec()
            .start
            .unwrap_or_else(|| ids.last().copied().unwrap_or(0));
        shift_right(ids, start)
    }

    fn decoder_embed(&self, dec: &[u32]) -> Vec<f32> {
        let d = self.dec();
        embed_with(self, dec, &d.positions, &d.emb_norm)
    }

    fn decoder_layer(
        &self,
        layer: usize,
        x: &mut Vec<f32>,
        enc: &[f32],
        cross: bool,
        iv: Option<&super::intervene::Intervention>,
    ) -> Vec<f32> {
        let dec = self.dec();
        let (l, ca) = &dec.layers[layer];
        let d = self.cfg.d_model;
        let heads = dec.heads;
        let hd = d / heads;
        let scale = (1.0 / (hd as f64).sqrt()) as f32;
        let n = x.len() / d;
        let qkv = l.qkv.apply(x, n, None);
        let mut ctx = vec![0.0f32; n * d];
        // The intervention goes to the attention of the stack: self or cross.
        let (self_iv, cross_iv) = if cross { (None, iv) } else { (iv, None) };
        let self_probs = super::intervene::attend(
            self_iv, layer, &qkv, n, heads, hd, scale, true, None, None, &mut ctx,
        );
        let mut a = l.out_proj.apply(&ctx, n, Some(x));
        l.attn_norm.apply(&mut a);
        let q = ca.q.apply(&a, n, None);
        let kv = ca.kv.apply(enc, n, None);
        let fused = fuse_rows(&q, &kv, n);
        let mut ctx = vec![0.0f32; n * d];
        let mut cross_probs =
            kernels::attention_probs(&fused, n, heads, hd, scale, false, None, &mut ctx);
        super::intervene::after_softmax_cross(
            cross_iv,
            layer,
            &mut cross_probs,
            &fused,
            n,
            heads,
            hd,
            &mut ctx,
        );
        let mut b = ca.out_proj.apply(&ctx, n, Some(&a));
        ca.norm.apply(&mut b);
        let mut inter = l.fc1.apply(&b, n, None);
        self.act.apply(&mut inter);
        *x = l.fc2.apply(&inter, n, Some(&b));
        l.final_norm.apply(x);
        if cross {
            cross_probs
        } else {
            self_probs
        }
    }

    fn decoder_final(&self, x: &[f32]) -> Vec<f32> {
        x.to_vec()
    }

    fn lm_logits(&self, last: &[f32], rows: usize) -> Vec<f32> {
        self.dec().lm_head.apply(last, rows, None)
    }
}
