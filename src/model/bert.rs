//! BERT and RoBERTa encoders (CodeBERT, GraphCodeBERT, UniXcoder in encoder mode, MiniLM).
//!
//! codescope owns this code instead of using candle-transformers' BERT because that one
//! drops the attention probabilities. The computation mirrors Hugging Face transformers'
//! `modeling_bert.py` / `modeling_roberta.py` with eager attention, in f32:
//! embeddings (word + position + token type 0, LayerNorm), then per layer
//! `softmax(QK^T / sqrt(d))` → context → dense + residual + LayerNorm → GELU MLP +
//! residual + LayerNorm. RoBERTa differs only in its position ids, which start at `pad_token_id + 1`
//! (`create_position_ids_from_input_ids` in transformers), so its usable window is
//! `max_position_embeddings - pad_token_id - 1` (512 for CodeBERT).
//!
//! Invariants: one unpadded sequence at a time (no batch, no attention mask needed), so
//! every tensor is 2-D `[tokens, hidden]` or 3-D `[heads, tokens, head_dim]`. Checkpoint
//! names are those of the HF checkpoints, with or without the `bert.` / `roberta.` prefix.

use candle_core::{DType, Device, Module, Tensor};
use candle_nn::{Embedding, LayerNorm, Linear, VarBuilder};
use serde::Deserialize;

use super::{kernels, Backbone, Capture, ForwardOptions};
use crate::error::{Error, Result};

/// Which encoder flavour: they differ in position ids only.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flavor {
    Bert,
    Roberta,
}

/// The fields of an HF `config.json` that BERT/RoBERTa need.
#[derive(Debug, Clone, Deserialize)]
pub struct BertConfig {
    pub vocab_size: usize,
    pub hidden_size: usize,
    pub num_hidden_layers: usize,
    pub num_attention_heads: usize,
    pub intermediate_size: usize,
    #[serde(default = "default_act")]
    pub hidden_act: String,
    pub max_position_embeddings: usize,
    #[serde(default = "default_type_vocab")]
    pub type_vocab_size: usize,
    #[serde(default = "default_eps")]
    pub layer_norm_eps: f64,
    #[serde(default)]
    pub pad_token_id: Option<usize>,
    #[serde(default)]
    pub position_embedding_type: Option<String>,
}

fn default_act() -> String {
    "gelu".into()
}
fn default_type_vocab() -> usize {
    2
}
fn default_eps() -> f64 {
    1e-12
}

impl BertConfig {
    /// Refuse values that cannot give a working model (as a one-line reason).
    pub fn validate(&self) -> std::result::Result<(), String> {
        super::check_eps("layer_norm_eps", self.layer_norm_eps)
    }

    /// Number of tokens (special ones included) the model can take.
    pub fn window(&self, flavor: Flavor) -> usize {
        match flavor {
            Flavor::Bert => self.max_position_embeddings,
            Flavor::Roberta => self
                .max_position_embeddings
                .saturating_sub(self.pad_token_id.unwrap_or(1) + 1),
        }
    }
}

#[derive(Debug, Clone, Copy)]
enum Act {
    GeluErf,
    GeluTanh,
    Relu,
}

impl Act {
    fn parse(s: &str) -> Result<Self> {
        match s {
            "gelu" => Ok(Act::GeluErf),
            "gelu_new" | "gelu_pytorch_tanh" | "gelu_fast" => Ok(Act::GeluTanh),
            "relu" => Ok(Act::Relu),
            other => Err(Error::Compute(format!(
                "unsupported hidden_act '{other}' (supported: gelu, gelu_new, gelu_pytorch_tanh, relu)"
            ))),
        }
    }
    fn apply(self, xs: &Tensor) -> candle_core::Result<Tensor> {
        match self {
            Act::GeluErf => {
                // candle's gelu_erf calls scalar libm erf; see kernels.rs.
                let mut v = xs.flatten_all()?.to_vec1::<f32>()?;
                kernels::gelu_erf_inplace(&mut v);
                Tensor::from_vec(v, xs.shape(), xs.device())
            }
            Act::GeluTanh => xs.gelu(),
            Act::Relu => xs.relu(),
        }
    }
}

/// LayerNorm under either naming (`weight`/`bias`, or the TF-era `gamma`/`beta`).
fn layer_norm(size: usize, eps: f64, vb: VarBuilder) -> candle_core::Result<LayerNorm> {
    let (w, b) = if vb.contains_tensor("gamma") && !vb.contains_tensor("weight") {
        (vb.get(size, "gamma")?, vb.get(size, "beta")?)
    } else {
        (vb.get(size, "weight")?, vb.get(size, "bias")?)
    };
    Ok(LayerNorm::new(w, b, eps))
}

fn linear(inp: usize, out: usize, vb: VarBuilder) -> candle_core::Result<Linear> {
    candle_nn::linear(inp, out, vb)
}

struct Layer {
    /// Fused, transposed Q|K|V weights `[hidden, 3 * hidden]` and bias `[3 * hidden]`.
    qkv_w: Tensor,
    qkv_b: Tensor,
    attn_out: Linear,
    attn_norm: LayerNorm,
    inter: Linear,
    out: Linear,
    out_norm: LayerNorm,
}

impl Layer {
    fn load(cfg: &BertConfig, vb: VarBuilder) -> candle_core::Result<Self> {
        let h = cfg.hidden_size;
        let att = vb.pp("attention");
        let sa = att.pp("self");
        let (q, k, v) = (
            linear(h, h, sa.pp("query"))?,
            linear(h, h, sa.pp("key"))?,
            linear(h, h, sa.pp("value"))?,
        );
        let bias = |l: &Linear| {
            l.bias()
                .cloned()
                .ok_or_else(|| candle_core::Error::Msg("attention projection without bias".into()))
        };
        Ok(Layer {
            qkv_w: Tensor::cat(&[q.weight(), k.weight(), v.weight()], 0)?
                .t()?
                .contiguous()?,
            qkv_b: Tensor::cat(&[bias(&q)?, bias(&k)?, bias(&v)?], 0)?,
            attn_out: linear(h, h, att.pp("output").pp("dense"))?,
            attn_norm: layer_norm(h, cfg.layer_norm_eps, att.pp("output").pp("LayerNorm"))?,
            inter: linear(h, cfg.intermediate_size, vb.pp("intermediate").pp("dense"))?,
            out: linear(cfg.intermediate_size, h, vb.pp("output").pp("dense"))?,
            out_norm: layer_norm(h, cfg.layer_norm_eps, vb.pp("output").pp("LayerNorm"))?,
        })
    }
}

/// A loaded BERT/RoBERTa encoder.
pub struct Bert {
    cfg: BertConfig,
    flavor: Flavor,
    act: Act,
    word: Embedding,
    position: Embedding,
    token_type: Embedding,
    emb_norm: LayerNorm,
    layers: Vec<Layer>,
    device: Device,
}

impl Bert {
    /// Build from a `VarBuilder` whose names mirror the HF checkpoint. The `bert.` /
    /// `roberta.` prefix of task-head checkpoints is detected and stripped.
    pub fn load(cfg: BertConfig, flavor: Flavor, vb: VarBuilder) -> Result<Self> {
        if let Some(p) = cfg.position_embedding_type.as_deref() {
            if p != "absolute" {
                return Err(Error::Compute(format!(
                    "position_embedding_type '{p}' is not supported (only 'absolute')"
                )));
            }
        }
        if cfg.num_attention_heads == 0 || cfg.hidden_size % cfg.num_attention_heads != 0 {
            return Err(Error::Compute(format!(
                "hidden_size {} is not a multiple of num_attention_heads {}",
                cfg.hidden_size, cfg.num_attention_heads
            )));
        }
        let act = Act::parse(&cfg.hidden_act)?;
        let vb = ["", "bert", "roberta", "model"]
            .iter()
            .map(|p| if p.is_empty() { vb.clone() } else { vb.pp(p) })
            .find(|v| v.contains_tensor("embeddings.word_embeddings.weight"))
            .ok_or_else(|| {
                Error::Compute(
                    "no tensor 'embeddings.word_embeddings.weight' (with or without a bert./roberta. prefix): not a BERT/RoBERTa checkpoint".into(),
                )
            })?;
        let device = vb.device().clone();
        let h = cfg.hidden_size;
        let emb = vb.pp("embeddings");
        let word = candle_nn::embedding(cfg.vocab_size, h, emb.pp("word_embeddings"))?;
        let position = candle_nn::embedding(
            cfg.max_position_embeddings,
            h,
            emb.pp("position_embeddings"),
        )?;
        let token_type =
            candle_nn::embedding(cfg.type_vocab_size, h, emb.pp("token_type_embeddings"))?;
        let emb_norm = layer_norm(h, cfg.layer_norm_eps, emb.pp("LayerNorm"))?;
        let layers = (0..cfg.num_hidden_layers)
            .map(|i| Layer::load(&cfg, vb.pp("encoder").pp("layer").pp(i)))
            .collect::<candle_core::Result<Vec<_>>>()?;
        Ok(Bert {
            cfg,
            flavor,
            act,
            word,
            position,
            token_type,
            emb_norm,
            layers,
            device,
        })
    }

    fn embed(&self, ids: &[u32]) -> candle_core::Result<Tensor> {
        let n = ids.len();
        let offset = match self.flavor {
            Flavor::Bert => 0,
            Flavor::Roberta => self.cfg.pad_token_id.unwrap_or(1) as u32 + 1,
        };
        let ids_t = Tensor::new(ids, &self.device)?;
        let pos: Vec<u32> = (0..n as u32).map(|i| i + offset).collect();
        let pos_t = Tensor::new(pos.as_slice(), &self.device)?;
        let types = Tensor::zeros(n, DType::U32, &self.device)?;
        let x = self
            .word
            .forward(&ids_t)?
            .add(&self.position.forward(&pos_t)?)?
            .add(&self.token_type.forward(&types)?)?;
        self.emb_norm.forward(&x)
    }
}

impl Backbone for Bert {
    fn layers(&self) -> usize {
        self.cfg.num_hidden_layers
    }
    fn heads(&self) -> usize {
        self.cfg.num_attention_heads
    }
    fn hidden_size(&self) -> usize {
        self.cfg.hidden_size
    }
    fn window(&self) -> usize {
        self.cfg.window(self.flavor)
    }
    fn vocab_size(&self) -> usize {
        self.cfg.vocab_size
    }

    fn forward(&self, ids: &[u32], opts: &ForwardOptions) -> Result<Capture> {
        super::check_ids(ids, self.window(), self.cfg.vocab_size)?;
        let heads = self.cfg.num_attention_heads;
        let d = self.cfg.hidden_size / heads;
        let scale = 1.0 / (d as f64).sqrt();
        let n = ids.len();
        let mut capture = Capture::new(n, heads, self.cfg.hidden_size);
        let mut x = self.embed(ids)?;
        if opts.hidden {
            capture.push_hidden(&x)?;
        }
        for (li, layer) in self.layers.iter().enumerate() {
            if opts.cancelled(li) {
                return Err(Error::Cancelled);
            }
            let qkv = x.matmul(&layer.qkv_w)?.broadcast_add(&layer.qkv_b)?;
            let qkv = qkv.flatten_all()?.to_vec1::<f32>()?;
            let mut probs = vec![0.0f32; heads * n * n];
            let mut ctx = vec![0.0f32; n * self.cfg.hidden_size];
            kernels::attention(&qkv, n, heads, d, scale as f32, false, &mut probs, &mut ctx);
            capture.attention.layers.push(probs);
            let ctx = Tensor::from_vec(ctx, (n, self.cfg.hidden_size), &self.device)?;
            let a = layer
                .attn_norm
                .forward(&(layer.attn_out.forward(&ctx)? + &x)?)?;
            let inter = self.act.apply(&layer.inter.forward(&a)?)?;
            x = layer
                .out_norm
                .forward(&(layer.out.forward(&inter)? + &a)?)?;
            super::check_layer(&x, li)?;
            if opts.hidden {
                capture.push_hidden(&x)?;
            }
        }
        Ok(capture)
    }
}
