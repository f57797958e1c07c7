//! Models: find them ([`source`]), load them (one file per architecture family) and run
//! them with capture ([`LoadedModel::trace`]).
//!
//! Every architecture implements [`Backbone`]: a forward pass over one unpadded sequence
//! of ids that returns attention probabilities for every layer and, on request, hidden
//! states. Decoder families (causal mask, rotary embeddings, grouped-query heads, GGUF
//! weights) implement the same trait; the rest of codescope sees only [`Trace`].
//! `model` knows nothing of tree-sitter (ARCHITECTURE.md).

pub mod bert;
pub mod gguf_tokenizer;
pub mod gpt2;
pub mod kernels;
pub mod llama;
pub mod lm;
pub mod source;
#[doc(hidden)]
pub mod testutil;
pub mod tokenizer;
pub mod trace;

use std::path::Path;
use std::time::Instant;

use candle_core::{DType, Device, Tensor};
use candle_nn::VarBuilder;

use crate::error::{Error, Result};
pub use lm::{Prediction, Surprisal};
pub use source::{ModelFiles, Weights};
pub use tokenizer::{CodeTokenizer, Encoded};
pub use trace::{Attention, Hidden, ModelInfo, Subword, Trace};

/// Architectures codescope implements, as named in `config.json` `model_type`.
pub const SUPPORTED_ARCHITECTURES: &[&str] =
    &["bert", "roberta", "xlm-roberta", "gpt2", "llama", "qwen2"];

/// Receives LM-head logits in row blocks: `(first row, rows * vocab floats)`.
pub type LogitsSink<'a> = dyn FnMut(usize, &[f32]) -> Result<()> + 'a;

/// How many next-token predictions [`LoadedModel::trace_lm`] keeps per position.
pub const TOP_NEXT: usize = 5;

/// What a forward pass should capture besides attention.
#[derive(Default)]
pub struct ForwardOptions<'a> {
    /// Also return hidden states (`[layer+1][pos][dim]`).
    pub hidden: bool,
    /// Called before each layer with its index; returning `true` cancels the pass
    /// (the TUI's latest-wins worker uses it).
    pub cancel: Option<&'a (dyn Fn(usize) -> bool + Sync)>,
}

impl ForwardOptions<'_> {
    fn cancelled(&self, layer: usize) -> bool {
        self.cancel.is_some_and(|f| f(layer))
    }
}

/// Raw per-layer outputs of a forward pass, already in host memory.
pub struct Capture {
    pub attention: Attention,
    pub hidden: Option<Hidden>,
}

impl Capture {
    fn new(len: usize, heads: usize, dim: usize) -> Self {
        Capture {
            attention: Attention {
                heads,
                len,
                layers: Vec::new(),
            },
            hidden: Some(Hidden {
                len,
                dim,
                layers: Vec::new(),
            }),
        }
    }

    /// Append one hidden state `[n, dim]`.
    fn push_hidden(&mut self, x: &Tensor) -> candle_core::Result<()> {
        if let Some(h) = self.hidden.as_mut() {
            h.layers.push(x.flatten_all()?.to_vec1::<f32>()?);
        }
        Ok(())
    }

    fn finish(mut self, want_hidden: bool) -> Self {
        if !want_hidden {
            self.hidden = None;
        }
        self
    }
}

/// Refuse ids a forward pass cannot take: none, more than the window, or outside the
/// vocabulary (one message for every architecture).
pub(crate) fn check_ids(ids: &[u32], window: usize, vocab: usize) -> Result<()> {
    if ids.is_empty() {
        return Err(Error::Compute("no tokens to run".into()));
    }
    if ids.len() > window {
        return Err(Error::Compute(format!(
            "{} tokens exceed the model window of {window}",
            ids.len()
        )));
    }
    if let Some(&bad) = ids.iter().find(|&&i| i as usize >= vocab) {
        return Err(Error::Compute(format!(
            "token id {bad} outside the vocabulary ({vocab})"
        )));
    }
    Ok(())
}

/// One architecture's forward pass with capture.
pub trait Backbone: Send + Sync {
    fn layers(&self) -> usize;
    fn heads(&self) -> usize;
    fn hidden_size(&self) -> usize;
    /// Maximum tokens per input, special tokens included.
    fn window(&self) -> usize;
    fn vocab_size(&self) -> usize;
    /// Run `ids` (special tokens included) and capture attention (+ hidden states).
    fn forward(&self, ids: &[u32], opts: &ForwardOptions) -> Result<Capture>;
    /// Causal (decoder) models attend only to earlier positions.
    fn causal(&self) -> bool {
        false
    }
    /// [`Backbone::forward`] plus the LM head's logits `[pos][vocab]`, handed to `sink` in
    /// row blocks. Only causal models with an LM head implement it.
    fn forward_lm(
        &self,
        _ids: &[u32],
        _opts: &ForwardOptions,
        _sink: &mut LogitsSink,
    ) -> Result<Capture> {
        Err(Error::Compute(
            "this model has no language-model head (surprisal needs a causal model)".into(),
        ))
    }
}

/// A model ready to trace text: tokenizer + backbone + description.
pub struct LoadedModel {
    pub info: ModelInfo,
    pub tokenizer: CodeTokenizer,
    backbone: Box<dyn Backbone>,
}

/// `model_type` and the first `architectures` entry of a `config.json`.
fn read_config(path: &Path) -> Result<(serde_json::Value, String)> {
    let text = std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
    let v: serde_json::Value = serde_json::from_str(&text).map_err(|e| Error::BadConfig {
        path: path.into(),
        reason: e.to_string(),
    })?;
    let model_type = v
        .get("model_type")
        .and_then(|m| m.as_str())
        .map(str::to_string)
        .or_else(|| {
            // Older configs: infer from the class name.
            let arch = v
                .get("architectures")?
                .get(0)?
                .as_str()?
                .to_ascii_lowercase();
            if arch.starts_with("roberta") {
                Some("roberta".into())
            } else if arch.starts_with("bert") {
                Some("bert".into())
            } else {
                Some(arch)
            }
        })
        .ok_or_else(|| Error::BadConfig {
            path: path.into(),
            reason: "neither model_type nor architectures is set".into(),
        })?;
    Ok((v, model_type))
}

fn var_builder(weights: &Weights) -> Result<VarBuilder<'static>> {
    let dev = Device::Cpu;
    match weights {
        Weights::Safetensors(paths) => {
            for p in paths {
                check_safetensors(p)?;
            }
            // SAFETY: the files are memory-mapped read-only; codescope never writes them,
            // and a concurrent truncation by another process is outside what we can guard.
            unsafe { VarBuilder::from_mmaped_safetensors(paths, DType::F32, &dev) }.map_err(|e| {
                Error::CorruptWeights {
                    path: paths[0].clone(),
                    reason: e.to_string(),
                }
            })
        }
        Weights::Pth(p) => {
            VarBuilder::from_pth(p, DType::F32, &dev).map_err(|e| Error::CorruptWeights {
                path: p.clone(),
                reason: e.to_string(),
            })
        }
    }
}

/// Validate a safetensors header and that the file holds every byte it promises, so a
/// truncated download fails at load with a clear message instead of deep in the forward.
fn check_safetensors(p: &Path) -> Result<()> {
    use std::io::Read;
    let corrupt = |reason: String| Error::CorruptWeights {
        path: p.into(),
        reason,
    };
    let mut f = std::fs::File::open(p).map_err(|e| Error::io(p, e))?;
    let len = f.metadata().map_err(|e| Error::io(p, e))?.len();
    let mut n = [0u8; 8];
    f.read_exact(&mut n)
        .map_err(|_| corrupt("file shorter than a safetensors header".into()))?;
    let hlen = u64::from_le_bytes(n);
    if hlen > 100_000_000 || 8 + hlen > len {
        return Err(corrupt(format!(
            "header length {hlen} does not fit a {len}-byte file"
        )));
    }
    let mut header = vec![0u8; hlen as usize];
    f.read_exact(&mut header)
        .map_err(|e| corrupt(e.to_string()))?;
    let v: serde_json::Value =
        serde_json::from_slice(&header).map_err(|e| corrupt(format!("header is not JSON: {e}")))?;
    let obj = v
        .as_object()
        .ok_or_else(|| corrupt("header is not a JSON object".into()))?;
    let mut end = 0u64;
    for (name, t) in obj {
        if name == "__metadata__" {
            continue;
        }
        let e = t["data_offsets"][1]
            .as_u64()
            .ok_or_else(|| corrupt(format!("tensor {name} has no data_offsets")))?;
        end = end.max(e);
    }
    if 8 + hlen + end > len {
        return Err(corrupt(format!(
            "truncated: tensors need {} bytes, file has {len}",
            8 + hlen + end
        )));
    }
    Ok(())
}

impl LoadedModel {
    /// Load a model from resolved files.
    pub fn load(files: &ModelFiles) -> Result<Self> {
        let start = Instant::now();
        let (cfg, model_type) = read_config(&files.config)?;
        let supported = || SUPPORTED_ARCHITECTURES.join(", ");
        let (backbone, arch): (Box<dyn Backbone>, &str) = match model_type.as_str() {
            "bert" | "roberta" | "xlm-roberta" => {
                let bcfg: bert::BertConfig =
                    serde_json::from_value(cfg.clone()).map_err(|e| Error::BadConfig {
                        path: files.config.clone(),
                        reason: e.to_string(),
                    })?;
                let flavor = if model_type == "bert" {
                    bert::Flavor::Bert
                } else {
                    bert::Flavor::Roberta
                };
                let vb = var_builder(&files.weights)?;
                let m = bert::Bert::load(bcfg, flavor, vb).map_err(|e| match e {
                    Error::Compute(reason) => Error::CorruptWeights {
                        path: weights_path(&files.weights),
                        reason,
                    },
                    e => e,
                })?;
                let name = if model_type == "bert" {
                    "bert"
                } else {
                    "roberta"
                };
                (Box::new(m), name)
            }
            "gpt2" => {
                let gcfg: gpt2::Gpt2Config =
                    serde_json::from_value(cfg.clone()).map_err(|e| Error::BadConfig {
                        path: files.config.clone(),
                        reason: e.to_string(),
                    })?;
                gcfg.validate().map_err(|reason| Error::BadConfig {
                    path: files.config.clone(),
                    reason,
                })?;
                let vb = var_builder(&files.weights)?;
                let m = gpt2::Gpt2::load(gcfg, vb).map_err(|e| match e {
                    Error::Compute(reason) => Error::CorruptWeights {
                        path: weights_path(&files.weights),
                        reason,
                    },
                    e => e,
                })?;
                (Box::new(m), "gpt2")
            }
            "llama" | "qwen2" => {
                let lcfg: llama::LlamaConfig =
                    serde_json::from_value(cfg.clone()).map_err(|e| Error::BadConfig {
                        path: files.config.clone(),
                        reason: e.to_string(),
                    })?;
                lcfg.validate().map_err(|reason| Error::BadConfig {
                    path: files.config.clone(),
                    reason,
                })?;
                let name = if model_type == "llama" {
                    "llama"
                } else {
                    "qwen2"
                };
                let vb = var_builder(&files.weights)?;
                let m = llama::Llama::load(lcfg, name, vb).map_err(|e| match e {
                    Error::Compute(reason) => Error::CorruptWeights {
                        path: weights_path(&files.weights),
                        reason,
                    },
                    e => e,
                })?;
                (Box::new(m), name)
            }
            other => {
                return Err(Error::UnsupportedArchitecture {
                    found: other.to_string(),
                    supported: supported(),
                })
            }
        };
        let tokenizer = CodeTokenizer::load(&files.tokenizer, &files.dir)?;
        if tokenizer.vocab_size() > backbone.vocab_size() {
            tracing::warn!(
                tokenizer = tokenizer.vocab_size(),
                model = backbone.vocab_size(),
                "tokenizer vocabulary is larger than the model's"
            );
        }
        let info = ModelInfo {
            source: files.source.clone(),
            architecture: arch.to_string(),
            layers: backbone.layers(),
            heads: backbone.heads(),
            hidden_size: backbone.hidden_size(),
            window: backbone.window(),
            causal: backbone.causal(),
        };
        tracing::info!(source = %info.source, arch, ms = start.elapsed().as_millis() as u64, "model loaded");
        Ok(LoadedModel {
            info,
            tokenizer,
            backbone,
        })
    }

    /// Build from parts (tests with random weights, programmatic use).
    pub fn from_parts(
        info: ModelInfo,
        tokenizer: CodeTokenizer,
        backbone: Box<dyn Backbone>,
    ) -> Self {
        LoadedModel {
            info,
            tokenizer,
            backbone,
        }
    }

    /// Tokenize `text`, fit it to the window and run the model with capture.
    pub fn trace(&self, text: &str, opts: &ForwardOptions) -> Result<Trace> {
        self.trace_impl(text, opts, false)
    }

    /// [`LoadedModel::trace`] plus surprisal and the top [`TOP_NEXT`] next-token
    /// predictions per token from the LM head (causal models only).
    pub fn trace_lm(&self, text: &str, opts: &ForwardOptions) -> Result<Trace> {
        self.trace_impl(text, opts, true)
    }

    fn trace_impl(&self, text: &str, opts: &ForwardOptions, lm: bool) -> Result<Trace> {
        let enc = self.tokenizer.encode(text, self.info.window)?;
        if enc.truncated > 0 {
            tracing::warn!(
                dropped = enc.truncated,
                window = self.info.window,
                "input truncated"
            );
        }
        let start = Instant::now();
        let (cap, surprisal) = if lm {
            let mut scorer = lm::Scorer::new(&enc.ids, self.backbone.vocab_size(), TOP_NEXT);
            let cap = self
                .backbone
                .forward_lm(&enc.ids, opts, &mut |start, block| {
                    scorer.feed(start, block);
                    Ok(())
                })?;
            let s = scorer.finish(|id| self.tokenizer.id_to_token(id));
            (cap, Some(s))
        } else {
            (self.backbone.forward(&enc.ids, opts)?, None)
        };
        let cap = cap.finish(opts.hidden);
        Ok(Trace {
            model: self.info.clone(),
            text: text.to_string(),
            tokens: enc.tokens,
            attention: cap.attention,
            hidden: cap.hidden,
            surprisal,
            truncated: enc.truncated,
            elapsed: start.elapsed(),
        })
    }

    /// Run pre-tokenized ids (benchmarks, probes).
    pub fn forward_ids(&self, ids: &[u32], opts: &ForwardOptions) -> Result<Capture> {
        Ok(self.backbone.forward(ids, opts)?.finish(opts.hidden))
    }

    /// All LM-head logits `[pos][vocab]` (row-major) for pre-tokenized ids: reference
    /// tests and small inputs only (`n * vocab` floats).
    pub fn logits_ids(&self, ids: &[u32]) -> Result<Vec<f32>> {
        let mut out = Vec::new();
        self.backbone
            .forward_lm(ids, &ForwardOptions::default(), &mut |_, block| {
                out.extend_from_slice(block);
                Ok(())
            })?;
        Ok(out)
    }
}

fn weights_path(w: &Weights) -> std::path::PathBuf {
    match w {
        Weights::Safetensors(p) => p[0].clone(),
        Weights::Pth(p) => p.clone(),
    }
}
