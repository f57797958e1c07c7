//! The BART and PLBART encoders, their self-attention captured: the stack the study
//! analysed ([`super::encdec::ENCODER`]).
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
//! model (`shared.weight`, `encoder.*`); decoder and LM-head weights are ignored.

use candle_nn::VarBuilder;
use serde::Deserialize;

use super::encdec::{find_prefix, host, Act, LayerNorm, Linear};
use super::{Backbone, Capture, ForwardOptions};
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
}

fn default_act() -> String {
    "gelu".into()
}

impl BartConfig {
    /// Refuse values that cannot give a working model (as a one-line reason).
    pub fn validate(&self) -> std::result::Result<(), String> {
        if self.encoder_attention_heads == 0 || self.d_model % self.encoder_attention_heads != 0 {
            return Err(format!(
                "d_model {} is not a multiple of encoder_attention_heads {}",
                self.d_model, self.encoder_attention_heads
            ));
        }
        Act::parse(&self.activation_function)
            .map(|_| ())
            .map_err(|e| e.to_string())
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
    fn load(cfg: &BartConfig, vb: VarBuilder) -> candle_core::Result<Self> {
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
            fc1: Linear::load(d, cfg.encoder_ffn_dim, true, vb.pp("fc1"))?,
            fc2: Linear::load(cfg.encoder_ffn_dim, d, true, vb.pp("fc2"))?,
            final_norm: LayerNorm::load(d, LN_EPS, vb.pp("final_layer_norm"))?,
        })
    }
}

/// A loaded BART / PLBART encoder.
pub struct Bart {
    cfg: BartConfig,
    act: Act,
    /// `[vocab, d_model]` and `[max_position_embeddings + 2, d_model]` on the host.
    embed: Vec<f32>,
    positions: Vec<f32>,
    embed_scale: f32,
    emb_norm: LayerNorm,
    layers: Vec<Layer>,
}

/// The row offset of BART's learned positions.
const POSITION_OFFSET: usize = 2;

impl Bart {
    /// Build from a `VarBuilder` with the checkpoint's names (with or without `model.`);
    /// `plbart` picks PLBART's config defaults.
    pub fn load(cfg: BartConfig, plbart: bool, vb: VarBuilder) -> Result<Self> {
        let act = Act::parse(&cfg.activation_function)?;
        let vb = find_prefix(&vb, &["model", ""], "encoder.embed_positions.weight").ok_or_else(
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
            .map(|i| Layer::load(&cfg, enc.pp("layers").pp(i)))
            .collect::<candle_core::Result<Vec<_>>>()?;
        let embed_scale = if cfg.scale_embedding.unwrap_or(plbart) {
            (d as f64).sqrt() as f32
        } else {
            1.0
        };
        Ok(Bart {
            cfg,
            act,
            embed,
            positions,
            embed_scale,
            emb_norm,
            layers,
        })
    }

    fn embed(&self, ids: &[u32]) -> Vec<f32> {
        let d = self.cfg.d_model;
        let mut x = vec![0.0f32; ids.len() * d];
        for (p, (row, &id)) in x.chunks_exact_mut(d).zip(ids).enumerate() {
            let w = &self.embed[id as usize * d..(id as usize + 1) * d];
            let r = p + POSITION_OFFSET;
            let pos = &self.positions[r * d..(r + 1) * d];
            for ((o, &a), &b) in row.iter_mut().zip(w).zip(pos) {
                *o = a * self.embed_scale + b;
            }
        }
        self.emb_norm.apply(&mut x);
        x
    }
}

impl Backbone for Bart {
    fn layers(&self) -> usize {
        self.cfg.encoder_layers
    }
    fn heads(&self) -> usize {
        self.cfg.encoder_attention_heads
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
        Some(super::encdec::ENCODER)
    }

    fn forward(&self, ids: &[u32], opts: &ForwardOptions) -> Result<Capture> {
        super::check_ids(ids, self.window(), self.cfg.vocab_size)?;
        let heads = self.cfg.encoder_attention_heads;
        let d = self.cfg.d_model;
        let hd = d / heads;
        let scale = (1.0 / (hd as f64).sqrt()) as f32;
        let n = ids.len();
        let mut capture = Capture::new(n, heads, d);
        let mut x = match &opts.partial {
            Some(p) => p.input.to_vec(),
            None => self.embed(ids),
        };
        if opts.hidden && opts.partial.is_none() {
            capture.push_hidden_host(&x);
        }
        if let Some(iv) = opts.intervention {
            iv.check(self.layers.len(), heads, n)?;
        }
        let (first, end) = opts.span(self.layers.len());
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
}
