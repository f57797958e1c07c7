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
//! Invariants: one unpadded sequence at a time (no batch, no attention mask needed). The
//! weights are copied to host `Vec<f32>`s at load and the forward runs on row-major host
//! buffers (`[tokens, hidden]`) with [`kernels`] (`linear` = `gemm` with the bias and
//! residual folded in, LayerNorm, GELU, attention): no candle tensor per step, no copy of
//! activations or attention between candle and the capture. Checkpoint
//! names are those of the HF checkpoints, with or without the `bert.` / `roberta.` prefix.

use candle_core::Tensor;
use candle_nn::VarBuilder;
use serde::Deserialize;

use super::{kernels, Backbone, Capture, ForwardOptions, LogitsSink};
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
    fn apply(self, xs: &mut [f32]) {
        match self {
            // candle's gelu_erf calls scalar libm erf; see kernels.rs.
            Act::GeluErf => kernels::gelu_erf_inplace(xs),
            Act::GeluTanh => kernels::gelu_tanh_inplace(xs),
            Act::Relu => xs.iter_mut().for_each(|x| *x = x.max(0.0)),
        }
    }
}

/// A host copy of a tensor's values (row-major).
fn host(t: &Tensor) -> candle_core::Result<Vec<f32>> {
    t.flatten_all()?.to_vec1::<f32>()
}

/// LayerNorm weights on the host.
struct Norm {
    w: Vec<f32>,
    b: Vec<f32>,
    eps: f32,
}

impl Norm {
    fn apply(&self, xs: &mut [f32]) {
        kernels::layer_norm_inplace(xs, self.w.len(), &self.w, &self.b, self.eps);
    }
}

/// A dense layer on the host: `w_kn` the checkpoint's `[out, in]` weight transposed to
/// `[in, out]` (`kernels::linear_kn`'s layout), bias `[out]`.
struct Dense {
    w_kn: Vec<f32>,
    b: Vec<f32>,
    inp: usize,
    out: usize,
}

impl Dense {
    /// The checkpoint's `weight` `[out, in]` and `bias` `[out]` under `vb`.
    fn raw(inp: usize, out: usize, vb: VarBuilder) -> candle_core::Result<(Vec<f32>, Vec<f32>)> {
        Ok((
            host(&vb.get((out, inp), "weight")?)?,
            host(&vb.get(out, "bias")?)?,
        ))
    }
    /// A layer from its checkpoint weight `w` `[out, in]` and bias.
    fn new(w: &[f32], b: Vec<f32>, inp: usize, out: usize) -> Self {
        Dense {
            w_kn: kernels::transpose_to_kn(w, out, inp),
            b,
            inp,
            out,
        }
    }
    fn load(inp: usize, out: usize, vb: VarBuilder) -> candle_core::Result<Self> {
        let (w, b) = Dense::raw(inp, out, vb)?;
        Ok(Dense::new(&w, b, inp, out))
    }
    /// `x · wᵀ + b (+ residual)` for the `n` rows of `x`.
    fn apply(&self, x: &[f32], n: usize, residual: Option<&[f32]>) -> Vec<f32> {
        kernels::linear_kn_new(
            x,
            n,
            self.inp,
            &self.w_kn,
            self.out,
            Some(&self.b),
            residual,
        )
    }
}

/// LayerNorm under either naming (`weight`/`bias`, or the TF-era `gamma`/`beta`).
fn layer_norm(size: usize, eps: f64, vb: VarBuilder) -> candle_core::Result<Norm> {
    let (w, b) = if vb.contains_tensor("gamma") && !vb.contains_tensor("weight") {
        (vb.get(size, "gamma")?, vb.get(size, "beta")?)
    } else {
        (vb.get(size, "weight")?, vb.get(size, "bias")?)
    };
    Ok(Norm {
        w: host(&w)?,
        b: host(&b)?,
        eps: eps as f32,
    })
}

struct Layer {
    /// Fused Q|K|V: `[3 * hidden, hidden]` weights and `[3 * hidden]` bias.
    qkv: Dense,
    attn_out: Dense,
    attn_norm: Norm,
    inter: Dense,
    out: Dense,
    out_norm: Norm,
}

impl Layer {
    fn load(cfg: &BertConfig, vb: VarBuilder) -> candle_core::Result<Self> {
        let h = cfg.hidden_size;
        let att = vb.pp("attention");
        let sa = att.pp("self");
        let (q, k, v) = (
            Dense::raw(h, h, sa.pp("query"))?,
            Dense::raw(h, h, sa.pp("key"))?,
            Dense::raw(h, h, sa.pp("value"))?,
        );
        Ok(Layer {
            qkv: Dense::new(
                &[q.0, k.0, v.0].concat(),
                [q.1, k.1, v.1].concat(),
                h,
                3 * h,
            ),
            attn_out: Dense::load(h, h, att.pp("output").pp("dense"))?,
            attn_norm: layer_norm(h, cfg.layer_norm_eps, att.pp("output").pp("LayerNorm"))?,
            inter: Dense::load(h, cfg.intermediate_size, vb.pp("intermediate").pp("dense"))?,
            out: Dense::load(cfg.intermediate_size, h, vb.pp("output").pp("dense"))?,
            out_norm: layer_norm(h, cfg.layer_norm_eps, vb.pp("output").pp("LayerNorm"))?,
        })
    }
}

/// The masked-LM head of a `BertForMaskedLM` / `RobertaForMaskedLM` checkpoint:
/// transform dense, activation, LayerNorm, then the decoder (the checkpoint's
/// `decoder.weight`, else the word embeddings it is tied to) plus its bias. BERT's is
/// `cls.predictions.*` with the config's `hidden_act`; RoBERTa's is `lm_head.*` with
/// GELU (erf), as transformers' `RobertaLMHead` has.
struct MlmHead {
    dense: Dense,
    act: Act,
    norm: Norm,
    decoder: Dense,
}

/// Rows of logits per block handed to the sink (`rows * vocab` floats at a time).
const MLM_ROWS: usize = 64;

impl MlmHead {
    /// The head under the checkpoint's root `vb`, if it has one.
    fn load(cfg: &BertConfig, act: Act, word: &[f32], vb: &VarBuilder) -> Result<Option<Self>> {
        let (h, v) = (cfg.hidden_size, cfg.vocab_size);
        let (head, dense, norm, act) =
            if vb.contains_tensor("cls.predictions.transform.dense.weight") {
                let p = vb.pp("cls").pp("predictions");
                (
                    p.clone(),
                    p.pp("transform").pp("dense"),
                    p.pp("transform").pp("LayerNorm"),
                    act,
                )
            } else if vb.contains_tensor("lm_head.dense.weight") {
                let p = vb.pp("lm_head");
                (p.clone(), p.pp("dense"), p.pp("layer_norm"), Act::GeluErf)
            } else {
                return Ok(None);
            };
        let load = || -> candle_core::Result<MlmHead> {
            let dec = head.pp("decoder");
            let w = if dec.contains_tensor("weight") {
                host(&dec.get((v, h), "weight")?)?
            } else {
                word.to_vec()
            };
            let b = if head.contains_tensor("bias") {
                host(&head.get(v, "bias")?)?
            } else if dec.contains_tensor("bias") {
                host(&dec.get(v, "bias")?)?
            } else {
                vec![0.0; v]
            };
            Ok(MlmHead {
                dense: Dense::load(h, h, dense)?,
                act,
                norm: layer_norm(h, cfg.layer_norm_eps, norm)?,
                decoder: Dense::new(&w, b, h, v),
            })
        };
        Ok(Some(load()?))
    }

    /// Logits of the `n` rows of the last hidden state `x`, in blocks of [`MLM_ROWS`].
    fn apply(&self, x: &[f32], n: usize, sink: &mut LogitsSink) -> Result<()> {
        let h = self.dense.inp;
        for start in (0..n).step_by(MLM_ROWS) {
            let rows = MLM_ROWS.min(n - start);
            let mut t = self
                .dense
                .apply(&x[start * h..(start + rows) * h], rows, None);
            self.act.apply(&mut t);
            self.norm.apply(&mut t);
            sink(start, &self.decoder.apply(&t, rows, None))?;
        }
        Ok(())
    }
}

/// A loaded BERT/RoBERTa encoder.
pub struct Bert {
    cfg: BertConfig,
    flavor: Flavor,
    act: Act,
    /// Embedding tables `[rows, hidden]` on the host.
    word: Vec<f32>,
    position: Vec<f32>,
    /// Token type 0's row.
    token_type0: Vec<f32>,
    emb_norm: Norm,
    layers: Vec<Layer>,
    /// The masked-LM head, when the checkpoint has one.
    mlm: Option<MlmHead>,
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
        if cfg.num_attention_heads == 0 || !cfg.hidden_size.is_multiple_of(cfg.num_attention_heads)
        {
            return Err(Error::Compute(format!(
                "hidden_size {} is not a multiple of num_attention_heads {}",
                cfg.hidden_size, cfg.num_attention_heads
            )));
        }
        let act = Act::parse(&cfg.hidden_act)?;
        let root = vb.clone();
        let vb = ["", "bert", "roberta", "model"]
            .iter()
            .map(|p| if p.is_empty() { vb.clone() } else { vb.pp(p) })
            .find(|v| v.contains_tensor("embeddings.word_embeddings.weight"))
            .ok_or_else(|| {
                Error::Compute(
                    "no tensor 'embeddings.word_embeddings.weight' (with or without a bert./roberta. prefix): not a BERT/RoBERTa checkpoint".into(),
                )
            })?;
        let h = cfg.hidden_size;
        let emb = vb.pp("embeddings");
        let word = host(
            &emb.pp("word_embeddings")
                .get((cfg.vocab_size, h), "weight")?,
        )?;
        let position = host(
            &emb.pp("position_embeddings")
                .get((cfg.max_position_embeddings, h), "weight")?,
        )?;
        let token_type = host(
            &emb.pp("token_type_embeddings")
                .get((cfg.type_vocab_size, h), "weight")?,
        )?;
        let emb_norm = layer_norm(h, cfg.layer_norm_eps, emb.pp("LayerNorm"))?;
        let layers = (0..cfg.num_hidden_layers)
            .map(|i| Layer::load(&cfg, vb.pp("encoder").pp("layer").pp(i)))
            .collect::<candle_core::Result<Vec<_>>>()?;
        let mlm = MlmHead::load(&cfg, act, &word, &root)?;
        Ok(Bert {
            cfg,
            flavor,
            act,
            word,
            position,
            token_type0: if token_type.len() >= h {
                token_type[..h].to_vec()
            } else {
                vec![0.0; h]
            },
            emb_norm,
            layers,
            mlm,
        })
    }

    /// Word + position + token type 0 embeddings, LayerNorm'd: `[n, hidden]`.
    fn embed(&self, ids: &[u32]) -> Vec<f32> {
        let h = self.cfg.hidden_size;
        let offset = match self.flavor {
            Flavor::Bert => 0,
            Flavor::Roberta => self.cfg.pad_token_id.unwrap_or(1) + 1,
        };
        let mut x = vec![0.0f32; ids.len() * h];
        for (p, (row, &id)) in x.chunks_exact_mut(h).zip(ids).enumerate() {
            let w = &self.word[id as usize * h..(id as usize + 1) * h];
            let pos = &self.position[(p + offset) * h..(p + offset + 1) * h];
            for (((o, &a), &b), &c) in row.iter_mut().zip(w).zip(pos).zip(&self.token_type0) {
                *o = a + b + c;
            }
        }
        self.emb_norm.apply(&mut x);
        x
    }

    /// Layer `li`'s attention probabilities `[heads, n, n]` and context `[n, hidden]` for
    /// its input `x` (`[n, hidden]`).
    /// An intervention ([`super::intervene`]) knocks keys out or ablates heads.
    fn attention(
        &self,
        li: usize,
        x: &[f32],
        n: usize,
        iv: Option<&super::Intervention>,
    ) -> (Vec<f32>, Vec<f32>) {
        let heads = self.cfg.num_attention_heads;
        let h = self.cfg.hidden_size;
        let d = h / heads;
        let scale = (1.0 / (d as f64).sqrt()) as f32;
        let qkv = self.layers[li].qkv.apply(x, n, None);
        let mut ctx = vec![0.0f32; n * h];
        let probs = super::intervene::attend(
            iv, li, &qkv, n, heads, d, scale, false, None, None, &mut ctx,
        );
        (probs, ctx)
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
        Ok(self.run(ids, opts)?.0)
    }

    fn masked_lm(&self) -> bool {
        self.mlm.is_some()
    }

    /// The masked-LM head's logits over the last layer's output (a partial pass that
    /// stops before the last layer gives none).
    fn forward_lm(
        &self,
        ids: &[u32],
        opts: &ForwardOptions,
        sink: &mut LogitsSink,
    ) -> Result<Capture> {
        let head = self.mlm.as_ref().ok_or_else(|| {
            Error::Compute("this encoder's checkpoint has no masked-LM head".into())
        })?;
        let (cap, x) = self.run(ids, opts)?;
        if opts.span(self.layers.len()).1 == self.layers.len() {
            head.apply(&x, ids.len(), sink)?;
        }
        Ok(cap)
    }
}

impl Bert {
    /// The forward pass: the capture and the last layer's output `[n, hidden]`.
    fn run(&self, ids: &[u32], opts: &ForwardOptions) -> Result<(Capture, Vec<f32>)> {
        super::check_ids(ids, self.window(), self.cfg.vocab_size)?;
        let heads = self.cfg.num_attention_heads;
        let n = ids.len();
        let (mut capture, mut x, (first, end)) =
            opts.begin(n, self.layers.len(), heads, self.cfg.hidden_size, || {
                self.embed(ids)
            })?;
        for (li, layer) in self.layers.iter().enumerate().take(end).skip(first) {
            if opts.cancelled(li) {
                return Err(Error::Cancelled);
            }
            let (probs, ctx) = self.attention(li, &x, n, opts.intervention);
            capture.keep_attention(opts, li, probs)?;
            let mut a = layer.attn_out.apply(&ctx, n, Some(&x));
            layer.attn_norm.apply(&mut a);
            let mut inter = layer.inter.apply(&a, n, None);
            self.act.apply(&mut inter);
            x = layer.out.apply(&inter, n, Some(&a));
            layer.out_norm.apply(&mut x);
            super::check_layer_host(&x, li)?;
            if opts.hidden {
                capture.push_hidden_host(&x);
            }
        }
        Ok((capture, x))
    }
}
