//! Random-weight baselines (`--random-weights SEED`): the model's config, architecture and
//! tokenizer as usual, its weights replaced by a seeded random initialisation that follows
//! the family's own init rules as transformers applies them for `Model(config)`
//! (`PreTrainedModel._init_weights`, read from transformers 4.46.3 and, for Gemma 3,
//! 4.50.0; for Qwen3, Mistral, StarCoder2, Gemma 1 and 2, Granite and Phi-3 from 5.24.0),
//! the study's `random=True` control (`AutoModel.from_config(config)`).
//!
//! Per tensor, by its Hugging Face name and shape:
//! - biases (`*.bias`, BERT's legacy `beta`): 0;
//! - norm weights (every 1-D `weight`/`gamma`): 1 — LayerNorm (BERT, RoBERTa, GPT-2,
//!   CodeGen, GPTBigCode, StarCoder2) and the RMSNorms of Llama, Qwen2, Qwen3 (its q/k
//!   norms too), Mistral, Granite and Phi-3; Gemma 1, 2 and 3 store RMSNorm weights as
//!   `w` in `(1 + w)` (their RMSNorms start from zeros), so the stored value is 0 and
//!   the effective scale 1;
//! - every matrix (Linear, GPT-2's Conv1D, Embedding, an untied LM head):
//!   normal(0, `initializer_range`); GPT-2 and GPTBigCode scale `c_proj` (attention and
//!   MLP output) to `initializer_range / sqrt(2 * n_layer)`;
//! - the padding row of an Embedding built with `padding_idx` is zero: BERT's and
//!   RoBERTa's `word_embeddings`, RoBERTa's `position_embeddings`, the `embed_tokens` of
//!   every Llama- and Gemma-family decoder (`pad_token_id`, with the config class's
//!   default when the file has none: BERT 0, RoBERTa 1, Gemma 1/2/3 0, Phi-3 32000, the
//!   others none; a row outside the vocabulary is none);
//! - `initializer_range` when the config has none: 0.02, StarCoder2's 0.018042;
//! - T5 (`T5PreTrainedModel._init_weights`, `factor` = `initializer_factor`, default 1):
//!   T5LayerNorm weights `factor`; `shared` / `embed_tokens` / an untied `lm_head`
//!   normal(0, `factor`); attention `q` normal(0, `factor / sqrt(d_model * d_kv)`), `k`
//!   and `v` `factor / sqrt(d_model)`, `o` `factor / sqrt(num_heads * d_kv)`,
//!   `relative_attention_bias` `factor / sqrt(d_model)`; feed-forward `wi` (`wi_0`,
//!   `wi_1`) `factor / sqrt(d_model)`, `wo` `factor / sqrt(d_ff)`; no padding row;
//! - BART and PLBART: every Linear and Embedding normal(0, `init_std`, default 0.02),
//!   LayerNorms 1 and 0, the token embedding's `pad_token_id` row (default 1) zero; the
//!   learned positions have none.
//!
//! GGUF files carry no `initializer_range`: 0.02 (every family's default) is used.
//!
//! Determinism: every tensor is drawn from its own stream seeded by (SEED, tensor name), in
//! fixed chunks each seeded by its index, so the values depend on neither the order the
//! architecture takes its tensors in nor the thread count: the same seed gives
//! bit-identical weights on any run. Values are not torch's (another generator); their
//! distribution is.

use candle_core::{DType, Device, Shape, Tensor};
use candle_nn::var_builder::SimpleBackend;
use rayon::prelude::*;

use super::Family;
use crate::rng::{mix, Rng};

/// Values per independently seeded chunk of a tensor.
const CHUNK: usize = 1 << 16;

/// The init rules of one model, read from its config.
#[derive(Debug, Clone, PartialEq)]
pub struct InitRules {
    pub family: Family,
    /// `initializer_range` (0.02 when the config has none, as for GGUF).
    pub std: f64,
    /// The std of GPT-2's and GPTBigCode's `c_proj` weights.
    pub proj_std: f64,
    /// The row zeroed in the padding embeddings.
    pub pad: Option<usize>,
    /// The value of every norm weight (1-D tensors that are not biases).
    pub norm: f32,
    /// Matrices with a std of their own, by name suffix (T5's init), checked in order.
    pub named: Vec<(&'static str, f64)>,
}

/// What one tensor is initialised to.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Init {
    Const(f32),
    /// normal(0, std), with row `pad` (of a 2-D tensor) zero when given.
    Normal {
        std: f64,
        pad: Option<usize>,
    },
}

impl InitRules {
    /// The rules for `family` from its `config.json` value (a multimodal Gemma 3 config's
    /// `text_config` when it has one).
    pub fn from_config(family: Family, cfg: &serde_json::Value) -> Self {
        let cfg = match family {
            Family::Gemma3 => cfg.get("text_config").unwrap_or(cfg),
            // Both sub-configs name the same `initializer_range` in the releases.
            Family::CodeT5p => cfg.get("decoder").unwrap_or(cfg),
            _ => cfg,
        };
        // The config class's default when the file has none (StarCoder2's is its own).
        let default_std = if family == Family::Starcoder2 {
            0.018042
        } else {
            0.02
        };
        let std = cfg
            .get("initializer_range")
            .or_else(|| cfg.get("init_std"))
            .and_then(|v| v.as_f64())
            .filter(|v| v.is_finite() && *v >= 0.0)
            .unwrap_or(default_std);
        let layers = ["n_layer", "num_hidden_layers"]
            .iter()
            .find_map(|k| cfg.get(*k).and_then(|v| v.as_u64()))
            .unwrap_or(1)
            .max(1);
        let proj_std = match family {
            Family::Gpt2 | Family::GptBigCode => std / (2.0 * layers as f64).sqrt(),
            _ => std,
        };
        let default_pad = match family {
            Family::Bert | Family::Gemma | Family::Gemma2 | Family::Gemma3 => Some(0),
            Family::Roberta | Family::Bart | Family::PlBart => Some(1),
            Family::Phi3 => Some(32000),
            _ => None,
        };
        let pad = match cfg.get("pad_token_id") {
            Some(serde_json::Value::Null) => None,
            Some(v) => v.as_u64().map(|p| p as usize),
            None => default_pad,
        };
        let (norm, named) = match family {
            Family::T5 => t5_rules(cfg),
            Family::Gemma | Family::Gemma2 | Family::Gemma3 => (0.0, Vec::new()),
            _ => (1.0, Vec::new()),
        };
        InitRules {
            family,
            std,
            proj_std,
            pad,
            norm,
            named,
        }
    }

    /// The init of the tensor `name` of `rank` dimensions.
    pub fn init_for(&self, name: &str, rank: usize) -> Init {
        let last = name.rsplit('.').next().unwrap_or(name);
        if last == "bias" || last == "beta" {
            return Init::Const(0.0);
        }
        if rank <= 1 {
            // A norm's scale: Gemma 3 keeps `w` of `(1 + w)`, T5 starts from its factor.
            return Init::Const(self.norm);
        }
        if let Some(&(_, std)) = self.named.iter().find(|(s, _)| name.ends_with(s)) {
            return Init::Normal { std, pad: None };
        }
        let scaled = matches!(self.family, Family::Gpt2 | Family::GptBigCode)
            && name.ends_with("c_proj.weight");
        let padded = match self.family {
            Family::Bert => name.ends_with("word_embeddings.weight"),
            Family::Roberta => {
                name.ends_with("word_embeddings.weight")
                    || name.ends_with("position_embeddings.weight")
            }
            Family::Llama
            | Family::Qwen2
            | Family::Qwen3
            | Family::Mistral
            | Family::Starcoder2
            | Family::Gemma
            | Family::Gemma2
            | Family::Gemma3
            | Family::Granite
            | Family::Phi3 => name.ends_with("embed_tokens.weight"),
            Family::Bart | Family::PlBart => {
                name.ends_with("embed_tokens.weight") || name.ends_with("shared.weight")
            }
            _ => false,
        };
        Init::Normal {
            std: if scaled { self.proj_std } else { self.std },
            pad: if padded { self.pad } else { None },
        }
    }
}

/// T5's norm value and per-name stds (`T5PreTrainedModel._init_weights`) from its config.
fn t5_rules(cfg: &serde_json::Value) -> (f32, Vec<(&'static str, f64)>) {
    let get = |k: &str, default: f64| {
        cfg.get(k)
            .and_then(|v| v.as_f64())
            .filter(|v| v.is_finite() && *v > 0.0)
            .unwrap_or(default)
    };
    let factor = cfg
        .get("initializer_factor")
        .and_then(|v| v.as_f64())
        .filter(|v| v.is_finite() && *v >= 0.0)
        .unwrap_or(1.0);
    let (d_model, d_kv, d_ff, heads) = (
        get("d_model", 512.0),
        get("d_kv", 64.0),
        get("d_ff", 2048.0),
        get("num_heads", 8.0),
    );
    let named = vec![
        ("shared.weight", factor),
        ("embed_tokens.weight", factor),
        ("lm_head.weight", factor),
        ("relative_attention_bias.weight", factor / d_model.sqrt()),
        (".q.weight", factor / (d_model * d_kv).sqrt()),
        (".k.weight", factor / d_model.sqrt()),
        (".v.weight", factor / d_model.sqrt()),
        (".o.weight", factor / (heads * d_kv).sqrt()),
        (".wi.weight", factor / d_model.sqrt()),
        (".wi_0.weight", factor / d_model.sqrt()),
        (".wi_1.weight", factor / d_model.sqrt()),
        (".wo.weight", factor / d_ff.sqrt()),
    ];
    (factor as f32, named)
}

/// The seed of tensor `name`'s stream under `seed` (FNV-1a of the name, mixed).
fn tensor_seed(seed: u64, name: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in name.bytes() {
        h ^= b as u64;
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    mix(mix(seed) ^ h)
}

/// The values of tensor `name` (row-major, `dims`) under `rules` and `seed`.
pub fn generate(rules: &InitRules, seed: u64, name: &str, dims: &[usize]) -> Vec<f32> {
    let n: usize = dims.iter().product();
    match rules.init_for(name, dims.len()) {
        Init::Const(c) => vec![c; n],
        Init::Normal { std, pad } => {
            let base = tensor_seed(seed, name);
            let mut v = vec![0f32; n];
            v.par_chunks_mut(CHUNK).enumerate().for_each(|(i, chunk)| {
                let mut r = Rng::new(mix(base ^ mix(i as u64 + 1)));
                for x in chunk {
                    *x = (r.gaussian() * std) as f32;
                }
            });
            if let (Some(p), [rows, cols]) = (pad, dims) {
                if p < *rows {
                    v[p * cols..(p + 1) * cols].fill(0.0);
                }
            }
            v
        }
    }
}

/// A backend whose tensors are [`generate`]d: the wrapped checkpoint says which tensors
/// exist (and, for a tensor taken without a shape, its shape); its values are never used.
pub struct RandomInit {
    pub inner: Box<dyn SimpleBackend>,
    pub rules: InitRules,
    pub seed: u64,
}

impl RandomInit {
    fn make(
        &self,
        dims: &[usize],
        name: &str,
        dtype: DType,
        dev: &Device,
    ) -> candle_core::Result<Tensor> {
        let v = generate(&self.rules, self.seed, name, dims);
        Tensor::from_vec(v, dims, dev)?.to_dtype(dtype)
    }
}

impl SimpleBackend for RandomInit {
    fn get(
        &self,
        s: Shape,
        name: &str,
        h: candle_nn::Init,
        dtype: DType,
        dev: &Device,
    ) -> candle_core::Result<Tensor> {
        if !self.inner.contains_tensor(name) {
            // The checkpoint's own error for a missing tensor.
            return self.inner.get(s, name, h, dtype, dev);
        }
        self.make(s.dims(), name, dtype, dev)
    }

    fn get_unchecked(&self, name: &str, dtype: DType, dev: &Device) -> candle_core::Result<Tensor> {
        let dims = self.inner.get_unchecked(name, dtype, dev)?.dims().to_vec();
        self.make(&dims, name, dtype, dev)
    }

    fn contains_tensor(&self, name: &str) -> bool {
        self.inner.contains_tensor(name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules(family: Family, cfg: serde_json::Value) -> InitRules {
        InitRules::from_config(family, &cfg)
    }

    #[test]
    fn rules_follow_the_families() {
        let g = rules(
            Family::Gpt2,
            serde_json::json!({"initializer_range": 0.02, "n_layer": 2}),
        );
        assert_eq!(
            g.init_for("transformer.h.0.attn.c_proj.weight", 2),
            Init::Normal {
                std: 0.01,
                pad: None
            }
        );
        assert_eq!(
            g.init_for("transformer.h.0.attn.c_attn.weight", 2),
            Init::Normal {
                std: 0.02,
                pad: None
            }
        );
        assert_eq!(
            g.init_for("transformer.h.0.ln_1.weight", 1),
            Init::Const(1.0)
        );
        assert_eq!(
            g.init_for("transformer.h.0.attn.c_proj.bias", 1),
            Init::Const(0.0)
        );
        let r = rules(
            Family::Roberta,
            serde_json::json!({"initializer_range": 0.05}),
        );
        assert_eq!(
            r.init_for("roberta.embeddings.position_embeddings.weight", 2),
            Init::Normal {
                std: 0.05,
                pad: Some(1)
            }
        );
        assert_eq!(
            r.init_for("roberta.encoder.layer.0.output.dense.weight", 2),
            Init::Normal {
                std: 0.05,
                pad: None
            }
        );
        let m = rules(
            Family::Gemma3,
            serde_json::json!({"text_config": {"initializer_range": 0.01}}),
        );
        assert_eq!(m.init_for("model.norm.weight", 1), Init::Const(0.0));
        assert_eq!(
            m.init_for("model.embed_tokens.weight", 2),
            Init::Normal {
                std: 0.01,
                pad: Some(0)
            }
        );
        let t = rules(
            Family::T5,
            serde_json::json!({"d_model": 64, "d_kv": 16, "d_ff": 256, "num_heads": 4,
                               "initializer_factor": 2.0}),
        );
        let normal = |std: f64| Init::Normal { std, pad: None };
        assert_eq!(
            t.init_for("encoder.final_layer_norm.weight", 1),
            Init::Const(2.0)
        );
        assert_eq!(t.init_for("shared.weight", 2), normal(2.0));
        assert_eq!(
            t.init_for("encoder.block.0.layer.0.SelfAttention.q.weight", 2),
            normal(2.0 / 32.0)
        );
        assert_eq!(
            t.init_for("encoder.block.0.layer.0.SelfAttention.o.weight", 2),
            normal(2.0 / 8.0)
        );
        assert_eq!(
            t.init_for("encoder.block.1.layer.1.DenseReluDense.wo.weight", 2),
            normal(2.0 / 16.0)
        );
        assert_eq!(
            t.init_for("encoder.block.1.layer.1.DenseReluDense.wi_1.weight", 2),
            normal(2.0 / 8.0)
        );
        let b = rules(Family::PlBart, serde_json::json!({"init_std": 0.05}));
        assert_eq!(
            b.init_for("model.shared.weight", 2),
            Init::Normal {
                std: 0.05,
                pad: Some(1)
            }
        );
        assert_eq!(
            b.init_for("model.encoder.embed_positions.weight", 2),
            normal(0.05)
        );
        assert_eq!(
            b.init_for("model.encoder.layernorm_embedding.weight", 1),
            Init::Const(1.0)
        );
        let l = rules(Family::Llama, serde_json::json!({"pad_token_id": null}));
        assert_eq!(l.std, 0.02);
        assert_eq!(l.init_for("model.norm.weight", 1), Init::Const(1.0));
    }

    #[test]
    fn values_depend_on_seed_and_name_only() {
        let r = rules(Family::Llama, serde_json::json!({"pad_token_id": 3}));
        let dims = [200, 700]; // more than one chunk
        let a = generate(&r, 7, "model.embed_tokens.weight", &dims);
        let b = generate(&r, 7, "model.embed_tokens.weight", &dims);
        assert_eq!(a, b);
        assert!(a[3 * 700..4 * 700].iter().all(|&x| x == 0.0));
        assert_ne!(a, generate(&r, 8, "model.embed_tokens.weight", &dims));
        assert_ne!(
            generate(&r, 7, "model.layers.0.mlp.up_proj.weight", &dims),
            generate(&r, 7, "model.layers.1.mlp.up_proj.weight", &dims)
        );
        // Two chunks are not copies of each other.
        assert_ne!(a[..100], a[CHUNK..CHUNK + 100]);
        let mean = a.iter().map(|&x| x as f64).sum::<f64>() / a.len() as f64;
        let sd =
            (a.iter().map(|&x| (x as f64 - mean).powi(2)).sum::<f64>() / a.len() as f64).sqrt();
        assert!((sd - 0.02).abs() < 0.0005, "std {sd}");
        assert!(mean.abs() < 0.0005, "mean {mean}");
    }
}
