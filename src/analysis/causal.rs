//! Causal tests of what attention between token classes is for (docs/METHODS.md 8):
//! attention knockout by token class or gold graph with a matched random control
//! ([`knockout`]), one-head-at-a-time ablation ([`ablate`]), and the logit lens
//! ([`lens`]).
//!
//! Everything is measured on code tokens. For a causal model with an LM head the effect
//! on a token is its surprisal change in bits (`bits_knocked - bits`, the token's bits
//! being the sum over its subwords, as everywhere: [`super::surprisal`]); for an encoder
//! it is `1 - cos` between the token's last hidden state with and without the
//! intervention (its subwords' mean). The subword pairs of two code tokens are the pairs
//! of their subwords (alignment as everywhere else, [`super::align_subwords`]); a pair of
//! one subword with itself (a subword covering both tokens) is never blocked, nor is any
//! special token. On an encoder–decoder's cross stack the interventions go to the
//! decoder's cross-attention (queries the decoder positions reading the query token's
//! subwords, keys the encoder's positions of the key token's; a subword with itself is two
//! positions there, blocked) and the effect is the decoder's surprisal, as on its decoder
//! stack.

use std::collections::BTreeSet;
use std::sync::Mutex;

use serde_json::{json, Value};

use super::{align_subwords, model_input, Mode};
use crate::error::{Error, Result};
use crate::model::{
    AblationMode, Encoded, ForwardOptions, HeadAblation, Intervention, Knockout, LoadedModel,
    Partial, Trace,
};
use crate::syntax::{self, Alignment, Coarse, CodeToken, Graph, Language, Syntax};

/// Which (query, key) code-token pairs a knockout blocks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EdgeSet {
    /// Queries of class `q`, keys of class `k` (`syn-id`: syntactic queries, identifier
    /// keys).
    Classes(Coarse, Coarse),
    /// Both directions of every edge of a gold graph.
    Graph(Graph),
    /// Every other pair.
    Not(Box<EdgeSet>),
}

/// The names `--edges` takes (a `not-` prefix takes the complement).
pub const EDGE_SET_NAMES: &str =
    "syn-id, id-syn, syn-syn, id-id, ast_motif, syntactic, syntactic_identifier, dfg, \
     dfg_refined, or any of them prefixed with not- (the complement)";

impl EdgeSet {
    /// Parse `syn-id`, `dfg`, `not-syn-id`, ...
    pub fn parse(s: &str) -> std::result::Result<EdgeSet, String> {
        let t = s.trim();
        if let Some(rest) = t.strip_prefix("not-").or_else(|| t.strip_prefix('!')) {
            return Ok(EdgeSet::Not(Box::new(EdgeSet::parse(rest)?)));
        }
        let class = |c: &str| match c {
            "syn" => Some(Coarse::Syntactic),
            "id" => Some(Coarse::Identifier),
            _ => None,
        };
        if let Some((a, b)) = t.split_once('-') {
            if let (Some(q), Some(k)) = (class(a), class(b)) {
                return Ok(EdgeSet::Classes(q, k));
            }
        }
        match Graph::from_name(&t.replace('-', "_")) {
            Some(g) => Ok(EdgeSet::Graph(g)),
            None => Err(format!("unknown edge set {t:?} (one of: {EDGE_SET_NAMES})")),
        }
    }

    /// The name it is parsed from.
    pub fn name(&self) -> String {
        let class = |c: &Coarse| match c {
            Coarse::Syntactic => "syn",
            Coarse::Identifier => "id",
        };
        match self {
            EdgeSet::Classes(q, k) => format!("{}-{}", class(q), class(k)),
            EdgeSet::Graph(g) => g.name().to_string(),
            EdgeSet::Not(e) => format!("not-{}", e.name()),
        }
    }

    /// The set's (query, key) pairs among `pairs` (the candidate pairs of the snippet).
    fn select(
        &self,
        tokens: &[CodeToken],
        gold: &dyn syntax::GoldSource,
        pairs: &[(usize, usize)],
    ) -> BTreeSet<(usize, usize)> {
        match self {
            EdgeSet::Classes(q, k) => pairs
                .iter()
                .copied()
                .filter(|&(a, b)| tokens[a].coarse == *q && tokens[b].coarse == *k)
                .collect(),
            EdgeSet::Graph(g) => {
                let all: Vec<usize> = (0..tokens.len()).collect();
                let edges: BTreeSet<(usize, usize)> = gold
                    .edges_within(*g, &all)
                    .into_iter()
                    .flat_map(|(a, b)| [(a, b), (b, a)])
                    .collect();
                pairs
                    .iter()
                    .copied()
                    .filter(|p| edges.contains(p))
                    .collect()
            }
            EdgeSet::Not(e) => {
                let inner = e.select(tokens, gold, pairs);
                pairs
                    .iter()
                    .copied()
                    .filter(|p| !inner.contains(p))
                    .collect()
            }
        }
    }
}

/// Most random draws of the matched control: each is one more forward pass, so
/// `--control 18446744073709551615` would never finish.
pub const MAX_CONTROL_DRAWS: usize = 10_000;

/// Options of [`knockout`].
#[derive(Debug, Clone)]
pub struct KnockoutOptions {
    pub edges: EdgeSet,
    /// 0-based layers (`None`: all).
    pub layers: Option<Vec<usize>>,
    /// 0-based heads (`None`: all).
    pub heads: Option<Vec<usize>>,
    /// Random draws of the matched control (0: none; at most [`MAX_CONTROL_DRAWS`]).
    pub control: usize,
    pub seed: u64,
    pub mode: Mode,
    /// A trained token or pair probe to read before and after the knockout (encoders
    /// measured by `1 - cos`, source mode).
    pub probe: Option<std::sync::Arc<ProbeUse>>,
}

/// One labelled example of a snippet: `(a, b, label)`, `a` a row of `covered`
/// (syntax-token indices with hidden states) and `b` the pair's second row (`None` for a
/// token task).
pub type ProbeExample = (usize, Option<usize>, usize);

/// Gold labels of a snippet's covered code tokens (token tasks) or pairs of them (pair
/// tasks), rows as in [`ProbeExample`].
pub type ProbeLabeller = dyn Fn(&Syntax, &[usize]) -> Vec<ProbeExample> + Send + Sync;

/// A trained classifier's label for one example from its hidden-state vectors: token
/// `a`'s, and for a pair task `b`'s too (the predictor combines them as the probe was
/// trained; `None`: wrong width).
pub type ProbePredictor = dyn Fn(&[f32], Option<&[f32]>) -> Option<usize> + Send + Sync;

/// A token or pair probe trained without any intervention (`codescope probe`'s machinery,
/// which stands above this module: the command hands its labeller and classifier in), to
/// apply to a snippet's hidden states with and without a knockout.
pub struct ProbeUse {
    /// The task's name and class names (indexed by label).
    pub task: String,
    pub classes: Vec<String>,
    /// Hidden layer (0 = embeddings).
    pub layer: usize,
    /// A pair task's combination of its two vectors (`diff`, `concat`); `None` for a
    /// token task.
    pub pair_features: Option<String>,
    pub label: Box<ProbeLabeller>,
    pub predict: Box<ProbePredictor>,
    /// What it was trained on: the corpus's name, its snippets, and the probe's
    /// accuracy on its held-out test split there.
    pub corpus: String,
    pub snippets: usize,
    pub test_accuracy: f64,
}

impl ProbeUse {
    /// What a corpus run's tables print of the probe.
    pub fn info(&self) -> ProbeInfo {
        ProbeInfo {
            task: self.task.clone(),
            layer: self.layer,
            pair_features: self.pair_features.clone(),
            corpus: self.corpus.clone(),
            snippets: self.snippets,
            test_accuracy: self.test_accuracy,
            rows: std::iter::once("all".to_string())
                .chain(self.classes.iter().cloned())
                .collect(),
        }
    }
}

/// A trained probe as the corpus tables name it: its task, hidden layer, a pair task's
/// feature combination, training corpus (name, snippets), held-out test accuracy there,
/// and its rows (`all`, then the task's classes).
#[derive(Debug, Clone, PartialEq)]
pub struct ProbeInfo {
    pub task: String,
    pub layer: usize,
    pub pair_features: Option<String>,
    pub corpus: String,
    pub snippets: usize,
    pub test_accuracy: f64,
    pub rows: Vec<String>,
}

impl std::fmt::Debug for ProbeUse {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ProbeUse({} at layer {})", self.task, self.layer)
    }
}

/// The probe's accuracy on one snippet: per row (`all`, then each class of the task by
/// gold label) the examples, the accuracy unmodified, with the knockout, and the matched
/// control's draws summarised.
#[derive(Debug, Clone)]
pub struct ProbeAccuracy {
    pub task: String,
    pub layer: usize,
    pub pair_features: Option<String>,
    pub corpus: String,
    pub snippets: usize,
    pub test_accuracy: f64,
    /// `all`, then the task's classes.
    pub rows: Vec<String>,
    pub examples: Vec<usize>,
    pub base: Vec<Option<f64>>,
    pub knocked: Vec<Option<f64>>,
    pub control: Vec<Option<Interval>>,
    /// Every example read, in the labeller's order.
    pub reads: Vec<ProbeRead>,
}

/// One example of a snippet read by the probe: its code token `a` (and `b`, a pair
/// task's second token; code-token indices), its gold label, and the prediction
/// unmodified and with the knockout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProbeRead {
    pub a: usize,
    pub b: Option<usize>,
    pub gold: usize,
    pub predicted: usize,
    pub knocked: usize,
}

/// Per example: its code token(s), its gold label and the probe's prediction.
type Predictions = Vec<(usize, Option<usize>, usize, usize)>;

/// Per row (`all`, then each class): examples and accuracy.
fn probe_rows(pred: &Predictions, classes: usize) -> Vec<(usize, Option<f64>)> {
    (0..=classes)
        .map(|r| {
            let v: Vec<bool> = pred
                .iter()
                .filter(|x| r == 0 || x.2 == r - 1)
                .map(|x| x.2 == x.3)
                .collect();
            let acc =
                (!v.is_empty()).then(|| v.iter().filter(|&&b| b).count() as f64 / v.len() as f64);
            (v.len(), acc)
        })
        .collect()
}

impl ProbeAccuracy {
    /// The name of class `c` of the task.
    fn class(&self, c: usize) -> Option<&str> {
        self.rows.get(c + 1).map(String::as_str)
    }

    /// A token task's read of code token `i` (`None` where the task labels no token).
    fn token_read(&self, i: usize) -> Option<&ProbeRead> {
        self.reads.iter().find(|r| r.a == i && r.b.is_none())
    }

    /// `,gold,predicted,predicted_knocked` for the CSV.
    fn csv_names(&self, r: &ProbeRead) -> String {
        let name = |c: usize| self.class(c).map(csv_field).unwrap_or_default();
        format!(
            ",{},{},{}",
            name(r.gold),
            name(r.predicted),
            name(r.knocked)
        )
    }
}

impl KnockoutOptions {
    /// The number of control draws within its limit, before any work.
    fn check(&self) -> Result<()> {
        if self.control > MAX_CONTROL_DRAWS {
            return Err(Error::Input {
                name: "--control".into(),
                reason: format!(
                    "{} random draws are more than the limit of {MAX_CONTROL_DRAWS}",
                    self.control
                ),
            });
        }
        Ok(())
    }
}

/// What an effect is measured in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Measure {
    /// Surprisal change in bits (causal models).
    Bits,
    /// Masked-LM pseudo-log-likelihood change in bits (encoders with a masked-LM
    /// head): each code token's subwords all masked at once, their bits summed.
    PllBits,
    /// `1 - cos` of the last hidden state (encoders).
    Cosine,
}

impl Measure {
    pub fn name(self) -> &'static str {
        match self {
            Measure::Bits => "bits",
            Measure::PllBits => "pll_bits",
            Measure::Cosine => "one_minus_cos",
        }
    }

    /// The measure [`Measure::name`] gives `name`.
    pub fn from_name(name: &str) -> Option<Measure> {
        [Measure::Bits, Measure::PllBits, Measure::Cosine]
            .into_iter()
            .find(|m| m.name() == name)
    }

    /// Whether the effect is a change in bits (surprisal or PLL).
    pub fn is_bits(self) -> bool {
        self != Measure::Cosine
    }

    /// The unit of a change, for the text tables.
    pub fn delta_unit(self) -> &'static str {
        match self {
            Measure::Bits => "Δ bits",
            Measure::PllBits => "Δ PLL bits",
            Measure::Cosine => "1 - cos",
        }
    }

    /// The measure of `model`'s effects: bits for a causal model, PLL bits for an
    /// encoder with a masked-LM head, else `1 - cos`.
    pub fn of(model: &LoadedModel) -> Measure {
        if model.info.causal || on_cross(model) {
            Measure::Bits
        } else if model.masked_lm().is_some() {
            Measure::PllBits
        } else {
            Measure::Cosine
        }
    }
}

/// A mean with the 2.5th and 97.5th percentiles of the draws it is the mean of.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Interval {
    pub mean: f64,
    pub lo: f64,
    pub hi: f64,
}

impl Interval {
    /// Of the finite values `v` (`None` when there is none). The percentiles are
    /// interpolated linearly between order statistics (numpy's default).
    pub fn of(v: &[f64]) -> Option<Interval> {
        let mut s: Vec<f64> = v.iter().copied().filter(|x| x.is_finite()).collect();
        if s.is_empty() {
            return None;
        }
        s.sort_by(f64::total_cmp);
        let q = |p: f64| {
            let x = p * (s.len() - 1) as f64;
            let (i, f) = (x.floor() as usize, x - x.floor());
            s[i] + (s[(i + 1).min(s.len() - 1)] - s[i]) * f
        };
        Some(Interval {
            mean: s.iter().sum::<f64>() / s.len() as f64,
            lo: q(0.025),
            hi: q(0.975),
        })
    }

    fn json(&self) -> Value {
        json!({"mean": self.mean, "lo": self.lo, "hi": self.hi})
    }
}

/// The token classes a summary is given for: the coarse split, then the fine categories.
pub const CLASSES: [&str; 7] = [
    "identifier",
    "syntactic",
    "keyword",
    "operator",
    "delimiter",
    "literal",
    "all",
];

fn in_class(t: &CodeToken, class: &str) -> bool {
    match class {
        "identifier" => t.coarse == Coarse::Identifier,
        "syntactic" => t.coarse == Coarse::Syntactic,
        "all" => true,
        c => t.category.name() == c,
    }
}

/// Mean effect per class of [`CLASSES`] over the tokens with an effect: `(class, tokens,
/// mean)`; `None` for a class without tokens.
fn class_means(tokens: &[CodeToken], delta: &[Option<f64>]) -> Vec<(usize, Option<f64>)> {
    CLASSES
        .iter()
        .map(|c| {
            let v: Vec<f64> = tokens
                .iter()
                .zip(delta)
                .filter(|(t, _)| in_class(t, c))
                .filter_map(|(_, d)| *d)
                .collect();
            let mean = (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64);
            (v.len(), mean)
        })
        .collect()
}

/// The LM head's rows a decoder's per-code-token bits read: the position before each
/// subword of a code token (increasing, each once).
fn head_rows(al: &Alignment) -> Vec<usize> {
    let mut rows: Vec<usize> = al
        .token_to_subwords
        .iter()
        .flatten()
        .filter_map(|&p| p.checked_sub(1))
        .collect();
    rows.sort_unstable();
    rows.dedup();
    rows
}

/// One snippet ready for interventions: its tokens, encoding, alignment and the
/// unmodified pass's per-token measure.
pub struct Prepared {
    pub syntax: Syntax,
    pub tokens: Vec<CodeToken>,
    pub text: String,
    pub enc: Encoded,
    pub alignment: Alignment,
    pub measure: Measure,
    base: Readout,
    /// The base pass's hidden states (the residual stream entering each layer), kept
    /// for partial passes.
    hidden: Option<Vec<Vec<f32>>>,
    paper: Option<syntax::PaperInput>,
    model_layers: usize,
    /// The mask token's id ([`Measure::PllBits`]).
    mask: Option<u32>,
    /// Bits of a decoder: the positions whose next subword is part of a code token, the
    /// only rows of the LM head a pass needs ([`ForwardOptions::logit_rows`]).
    rows: Option<Vec<usize>>,
}

/// What one pass gives per code token.
#[derive(Clone)]
enum Readout {
    Bits(Vec<Option<f32>>),
    /// The last hidden state per code token (`None` when uncovered), `dim` wide.
    Hidden(Vec<Option<Vec<f32>>>),
}

impl Prepared {
    /// Parse `source`, feed it as `mode` says, and run the model once without changes
    /// (keeping the hidden states when `keep_hidden`: the ablation's partial passes start
    /// from them).
    pub fn new(
        model: &LoadedModel,
        source: &str,
        lang: Language,
        mode: Mode,
        keep_hidden: bool,
    ) -> Result<Prepared> {
        Self::new_with(model, source, lang, mode, keep_hidden, None)
    }

    /// [`Prepared::new`] that `cancel` can stop between layers (the explorer's worker).
    pub fn new_with(
        model: &LoadedModel,
        source: &str,
        lang: Language,
        mode: Mode,
        keep_hidden: bool,
        cancel: Option<&(dyn Fn(usize) -> bool + Sync)>,
    ) -> Result<Prepared> {
        let syn = syntax::parse(source, lang)?;
        let input = model_input(&syn, mode)?;
        let enc = model.encode_code(&input.text, model.info.window, Some(lang))?;
        let alignment = align_subwords(&enc.tokens, &input.tokens);
        let measure = Measure::of(model);
        let mut p = Prepared {
            syntax: syn,
            tokens: input.tokens,
            text: input.text,
            enc,
            alignment,
            measure,
            base: Readout::Bits(Vec::new()),
            hidden: None,
            paper: input.paper,
            model_layers: model.info.layers,
            mask: model.masked_lm(),
            rows: None,
        };
        if measure == Measure::Bits && model.info.causal && model.info.stack.is_none() {
            let rows = head_rows(&p.alignment);
            tracing::info!(
                rows = rows.len(),
                positions = p.enc.ids.len(),
                "LM head rows the passes read"
            );
            p.rows = Some(rows);
        }
        let discard = |_: usize, _: Vec<f32>| Ok(());
        let opts = ForwardOptions {
            hidden: keep_hidden || measure == Measure::Cosine,
            on_attention: Some(&discard),
            cancel,
            cross_lm: true,
            ..Default::default()
        };
        if measure == Measure::PllBits {
            p.base = p.pll(model, None, cancel)?;
            return Ok(p);
        }
        let mut trace = p.run(model, &opts)?;
        p.base = p.readout(&trace)?;
        if keep_hidden {
            p.hidden = trace.hidden.take().map(|h| h.layers);
        }
        Ok(p)
    }

    fn gold(&self) -> &dyn syntax::GoldSource {
        match &self.paper {
            Some(p) if p.cleaned() => p,
            _ => &self.syntax,
        }
    }

    fn run(&self, model: &LoadedModel, opts: &ForwardOptions) -> Result<Trace> {
        let opts = ForwardOptions {
            logit_rows: self.rows.as_deref(),
            ..*opts
        };
        model.trace_encoded(
            &self.text,
            self.enc.clone(),
            &opts,
            self.measure == Measure::Bits,
        )
    }

    /// One pass's read-out with `intervention` (a full pass; for the PLL one masked
    /// pass per code token).
    fn pass(
        &self,
        model: &LoadedModel,
        intervention: Option<&Intervention>,
        cancel: Option<&(dyn Fn(usize) -> bool + Sync)>,
    ) -> Result<Readout> {
        if self.measure == Measure::PllBits {
            return self.pll(model, intervention, cancel);
        }
        let discard = |_: usize, _: Vec<f32>| Ok(());
        let opts = ForwardOptions {
            hidden: self.measure == Measure::Cosine,
            on_attention: Some(&discard),
            intervention,
            cancel,
            cross_lm: true,
            ..Default::default()
        };
        self.readout(&self.run(model, &opts)?)
    }

    /// [`Prepared::pass`] that also applies `probe` to the same pass's hidden states
    /// (the `1 - cos` measure only; source mode).
    fn pass_probe(
        &self,
        model: &LoadedModel,
        intervention: Option<&Intervention>,
        probe: &ProbeUse,
        cancel: Option<&(dyn Fn(usize) -> bool + Sync)>,
    ) -> Result<(Readout, Predictions)> {
        if self.measure != Measure::Cosine {
            return Err(Error::Input {
                name: "--probe".into(),
                reason: format!(
                    "reads encoders measured by 1 - cos (this model's effects are {})",
                    self.measure.name()
                ),
            });
        }
        let discard = |_: usize, _: Vec<f32>| Ok(());
        let opts = ForwardOptions {
            hidden: true,
            on_attention: Some(&discard),
            intervention,
            cancel,
            cross_lm: true,
            ..Default::default()
        };
        let t = self.run(model, &opts)?;
        let h = super::hidden::token_hidden(&t, &self.tokens)?;
        let labels = (probe.label)(&self.syntax, &h.tokens);
        let layer = h
            .layers
            .get(probe.layer)
            .ok_or_else(|| Error::Compute(format!("no hidden states at layer {}", probe.layer)))?;
        let dim = layer.len() / h.tokens.len().max(1);
        let row = |k: usize| {
            layer
                .get(k * dim..(k + 1) * dim)
                .ok_or_else(|| Error::Compute("a probe label past the hidden states".into()))
        };
        let mut pred = Vec::with_capacity(labels.len());
        for &(a, b, label) in &labels {
            let xb = b.map(row).transpose()?;
            let y = (probe.predict)(row(a)?, xb).ok_or_else(|| {
                Error::Compute("the probe does not fit this model's width".into())
            })?;
            pred.push((h.tokens[a], b.map(|b| h.tokens[b]), label, y));
        }
        Ok((self.readout(&t)?, pred))
    }

    /// The pseudo-log-likelihood per code token: all its subwords (special tokens
    /// aside) replaced by the mask token at once, one pass, the bits of the original
    /// subwords at those positions summed (`None` for a token without subwords).
    fn pll(
        &self,
        model: &LoadedModel,
        intervention: Option<&Intervention>,
        cancel: Option<&(dyn Fn(usize) -> bool + Sync)>,
    ) -> Result<Readout> {
        let mask = self
            .mask
            .ok_or_else(|| Error::Compute("the model has no mask token".into()))?;
        let vocab = model.vocab_size();
        let bits = self
            .alignment
            .token_to_subwords
            .iter()
            .map(|subs| {
                let subs: Vec<usize> = subs
                    .iter()
                    .copied()
                    .filter(|&p| !self.enc.tokens[p].special)
                    .collect();
                if subs.is_empty() {
                    return Ok(None);
                }
                pll_bits(
                    model,
                    &self.enc.ids,
                    &subs,
                    mask,
                    vocab,
                    intervention,
                    cancel,
                )
                .map(|b| Some(b as f32))
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Readout::Bits(bits))
    }

    fn readout(&self, t: &Trace) -> Result<Readout> {
        match self.measure {
            Measure::PllBits => Err(Error::Compute(
                "the PLL is read from masked passes, not one trace".into(),
            )),
            Measure::Bits => {
                let s =
                    super::surprisal::TokenSurprisal::new(t, &self.alignment).ok_or_else(|| {
                        Error::Compute("the causal model returned no surprisal".into())
                    })?;
                Ok(Readout::Bits(s.bits))
            }
            Measure::Cosine => {
                let h = t
                    .hidden
                    .as_ref()
                    .and_then(|h| h.layers.last().map(|l| (h.dim, l)))
                    .ok_or_else(|| Error::Compute("the model returned no hidden states".into()))?;
                let (dim, last) = h;
                let v = self
                    .alignment
                    .token_to_subwords
                    .iter()
                    .map(|subs| {
                        let subs: Vec<usize> = subs
                            .iter()
                            .copied()
                            .filter(|&p| (p + 1) * dim <= last.len())
                            .collect();
                        (!subs.is_empty()).then(|| {
                            let mut m = vec![0.0f32; dim];
                            for &p in &subs {
                                for (o, &x) in m.iter_mut().zip(&last[p * dim..(p + 1) * dim]) {
                                    *o += x / subs.len() as f32;
                                }
                            }
                            m
                        })
                    })
                    .collect();
                Ok(Readout::Hidden(v))
            }
        }
    }

    /// Per code token: the measure of the pass `t` against the unmodified one.
    fn delta(&self, t: &Readout) -> Vec<Option<f64>> {
        match (&self.base, t) {
            (Readout::Bits(a), Readout::Bits(b)) => a
                .iter()
                .zip(b)
                .map(|(x, y)| Some(f64::from((*y)?) - f64::from((*x)?)))
                .collect(),
            (Readout::Hidden(a), Readout::Hidden(b)) => a
                .iter()
                .zip(b)
                .map(|(x, y)| Some(1.0 - cosine(x.as_ref()?, y.as_ref()?)))
                .collect(),
            _ => vec![None; self.tokens.len()],
        }
    }

    fn base_bits(&self) -> Option<&[Option<f32>]> {
        match &self.base {
            Readout::Bits(b) => Some(b),
            Readout::Hidden(_) => None,
        }
    }

    /// Every (query, key) code-token pair with at least one subword pair attention can
    /// use (not a subword with itself, no special token; the key not after the query in
    /// a causal model), with those subword pairs.
    ///
    /// On an encoder–decoder's cross stack (`cross`) the query subword `i` is the decoder
    /// position reading `s_i` (read order) and the key `j` the encoder position of `s_j`:
    /// every key is visible, and `i == j` is a pair of two positions (blocked too).
    fn candidate_pairs(&self, causal: bool, cross: bool) -> Vec<Candidate> {
        let special: Vec<bool> = self.enc.tokens.iter().map(|s| s.special).collect();
        let subs = &self.alignment.token_to_subwords;
        let mut out = Vec::new();
        for q in 0..subs.len() {
            for k in 0..subs.len() {
                if q == k {
                    continue;
                }
                let mut sp = Vec::new();
                for &i in &subs[q] {
                    for &j in &subs[k] {
                        if (cross || i != j) && !special[i] && !special[j] && (!causal || j < i) {
                            sp.push((i as u32, j as u32));
                        }
                    }
                }
                if !sp.is_empty() {
                    out.push(((q, k), sp));
                }
            }
        }
        out
    }
}

/// A (query, key) code-token pair and its subword pairs (query position, key position).
type Candidate = ((usize, usize), Vec<(u32, u32)>);

/// The masked-LM bits of `ids` at `positions` with every one of them replaced by
/// `mask` in one pass: `sum -log2 p(ids[p])` over the positions (an encoder with a
/// masked-LM head; `intervention` applies inside the pass).
pub fn pll_bits(
    model: &LoadedModel,
    ids: &[u32],
    positions: &[usize],
    mask: u32,
    vocab: usize,
    intervention: Option<&Intervention>,
    cancel: Option<&(dyn Fn(usize) -> bool + Sync)>,
) -> Result<f64> {
    let mut masked = ids.to_vec();
    for &p in positions {
        masked[p] = mask;
    }
    let discard = |_: usize, _: Vec<f32>| Ok(());
    let opts = ForwardOptions {
        on_attention: Some(&discard),
        intervention,
        cancel,
        cross_lm: true,
        ..Default::default()
    };
    let mut total = 0.0f64;
    model.forward_lm_ids(&masked, &opts, &mut |start, block| {
        for (r, row) in block.chunks_exact(vocab).enumerate() {
            let p = start + r;
            if !positions.contains(&p) {
                continue;
            }
            let max = row.iter().copied().fold(f32::NEG_INFINITY, f32::max);
            let lse = f64::from(max)
                + row
                    .iter()
                    .map(|&z| f64::from(z - max).exp())
                    .sum::<f64>()
                    .ln();
            total += (lse - f64::from(row[ids[p] as usize])) / std::f64::consts::LN_2;
        }
        Ok(())
    })?;
    Ok(total)
}

/// Cosine similarity in f64: exactly 1 for identical vectors (an unchanged token's
/// `1 - cos` is 0, not rounding noise), clamped to [-1, 1].
fn cosine(a: &[f32], b: &[f32]) -> f64 {
    if a == b {
        return 1.0;
    }
    let (mut ab, mut aa, mut bb) = (0.0f64, 0.0f64, 0.0f64);
    for (&x, &y) in a.iter().zip(b) {
        let (x, y) = (f64::from(x), f64::from(y));
        ab += x * y;
        aa += x * x;
        bb += y * y;
    }
    if aa == 0.0 || bb == 0.0 {
        return if aa == bb { 1.0 } else { 0.0 };
    }
    (ab / (aa.sqrt() * bb.sqrt())).clamp(-1.0, 1.0)
}

/// A knockout's result on one snippet.
#[derive(Debug, Clone)]
pub struct KnockoutResult {
    pub edges: String,
    pub measure: Measure,
    /// 0-based layers and heads knocked out.
    pub layers: Vec<usize>,
    pub heads: Vec<usize>,
    pub tokens: Vec<CodeToken>,
    pub base_bits: Option<Vec<Option<f32>>>,
    /// Per code token: bits with the knockout (causal models).
    pub knocked_bits: Option<Vec<Option<f32>>>,
    /// Per code token: the effect (bits_knocked - bits, or 1 - cos).
    pub delta: Vec<Option<f64>>,
    /// Code-token pairs and subword pairs blocked.
    pub token_pairs: usize,
    pub subword_pairs: usize,
    /// Per class of [`CLASSES`]: tokens measured and mean effect.
    pub summary: Vec<(usize, Option<f64>)>,
    /// The matched control: per class, the draws' mean effects summarised.
    pub control: Vec<Option<Interval>>,
    pub control_draws: usize,
    /// Code-token pairs per control draw (fewer than `token_pairs` only when the
    /// snippet has fewer pairs outside the set).
    pub control_pairs: usize,
    pub seed: u64,
    /// A trained probe's accuracy with and without the knockout (`--probe`).
    pub probe: Option<ProbeAccuracy>,
}

/// Rows of blocked keys per query position from subword pairs.
fn rows_of(n: usize, pairs: &[&Vec<(u32, u32)>]) -> (Vec<Vec<u32>>, usize) {
    let mut rows = vec![Vec::new(); n];
    let mut count = 0;
    for sp in pairs {
        for &(i, j) in sp.iter() {
            rows[i as usize].push(j);
        }
    }
    for r in &mut rows {
        r.sort_unstable();
        r.dedup();
        count += r.len();
    }
    (rows, count)
}

fn mask_of(chosen: &Option<Vec<usize>>, n: usize, what: &str) -> Result<Vec<bool>> {
    let mut m = vec![chosen.is_none(); n];
    for &i in chosen.iter().flatten() {
        if i >= n {
            return Err(Error::Input {
                name: format!("--{what}s"),
                reason: format!("{what} {} does not exist (the model has {n})", i + 1),
            });
        }
        m[i] = true;
    }
    Ok(m)
}

/// Knock the edge set out and measure what changes, with the matched control.
pub fn knockout(
    model: &LoadedModel,
    source: &str,
    lang: Language,
    o: &KnockoutOptions,
) -> Result<KnockoutResult> {
    knockout_with(model, source, lang, o, None)
}

/// [`knockout`] that `cancel` can stop between layers of any of its passes.
pub fn knockout_with(
    model: &LoadedModel,
    source: &str,
    lang: Language,
    o: &KnockoutOptions,
    cancel: Option<&(dyn Fn(usize) -> bool + Sync)>,
) -> Result<KnockoutResult> {
    o.check()?;
    let p = Prepared::new_with(model, source, lang, o.mode, false, cancel)?;
    knockout_prepared_with(model, &p, o, cancel)
}

/// [`knockout`] on a prepared snippet (its unmodified pass already run).
pub fn knockout_prepared(
    model: &LoadedModel,
    p: &Prepared,
    o: &KnockoutOptions,
) -> Result<KnockoutResult> {
    knockout_prepared_with(model, p, o, None)
}

fn knockout_prepared_with(
    model: &LoadedModel,
    p: &Prepared,
    o: &KnockoutOptions,
    cancel: Option<&(dyn Fn(usize) -> bool + Sync)>,
) -> Result<KnockoutResult> {
    o.check()?;
    let info = &model.info;
    let layers = mask_of(&o.layers, info.layers, "layer")?;
    let heads = mask_of(&o.heads, info.heads, "head")?;
    let candidates = p.candidate_pairs(info.causal, on_cross(model));
    let pairs: Vec<(usize, usize)> = candidates.iter().map(|(q, _)| *q).collect();
    let chosen = o.edges.select(&p.tokens, p.gold(), &pairs);
    let n = p.enc.ids.len();
    let run = |rows: Vec<Vec<u32>>| -> Result<Readout> {
        let iv = Intervention {
            knockout: Some(Knockout {
                layers: layers.clone(),
                heads: heads.clone(),
                rows,
            }),
            ablate: Vec::new(),
        };
        p.pass(model, Some(&iv), cancel)
    };
    let inside: Vec<&Vec<(u32, u32)>> = candidates
        .iter()
        .filter(|(q, _)| chosen.contains(q))
        .map(|(_, sp)| sp)
        .collect();
    let (rows, subword_pairs) = rows_of(n, &inside);
    let knock = |rows: Vec<Vec<u32>>, probe: &ProbeUse| -> Result<(Readout, Predictions)> {
        let iv = Intervention {
            knockout: Some(Knockout {
                layers: layers.clone(),
                heads: heads.clone(),
                rows,
            }),
            ablate: Vec::new(),
        };
        p.pass_probe(model, Some(&iv), probe, cancel)
    };
    // With a probe: its predictions unmodified (one more pass) and with the knockout.
    let mut probed: Option<(Predictions, Predictions)> = None;
    let knocked = match o.probe.as_deref() {
        Some(pu) => {
            let (_, base) = p.pass_probe(model, None, pu, cancel)?;
            let (r, k) = knock(rows, pu)?;
            probed = Some((base, k));
            r
        }
        None => run(rows)?,
    };
    let delta = p.delta(&knocked);
    let summary = class_means(&p.tokens, &delta);
    // The control: as many pairs drawn from the candidates outside the set.
    let outside: Vec<&Vec<(u32, u32)>> = candidates
        .iter()
        .filter(|(q, _)| !chosen.contains(q))
        .map(|(_, sp)| sp)
        .collect();
    let k = chosen.len().min(outside.len());
    let mut draws: Vec<Vec<(usize, Option<f64>)>> = Vec::new();
    let mut probe_draws: Vec<Vec<(usize, Option<f64>)>> = Vec::new();
    if k > 0 {
        for r in 0..o.control {
            let mut rng =
                crate::rng::Rng::new(crate::rng::mix(o.seed ^ crate::rng::mix(r as u64 + 1)));
            let mut idx: Vec<usize> = (0..outside.len()).collect();
            // A partial Fisher–Yates shuffle: the first k are a uniform sample.
            for i in 0..k {
                let j = i + rng.below(idx.len() - i);
                idx.swap(i, j);
            }
            let pick: Vec<&Vec<(u32, u32)>> = idx[..k].iter().map(|&i| outside[i]).collect();
            let (rows, _) = rows_of(n, &pick);
            match o.probe.as_deref() {
                Some(pu) => {
                    let (r, pred) = knock(rows, pu)?;
                    draws.push(class_means(&p.tokens, &p.delta(&r)));
                    probe_draws.push(probe_rows(&pred, pu.classes.len()));
                }
                None => draws.push(class_means(&p.tokens, &p.delta(&run(rows)?))),
            }
        }
    }
    let probe = match (o.probe.as_deref(), probed) {
        (Some(pu), Some((base, k))) => {
            let classes = pu.classes.clone();
            let (b, kn) = (
                probe_rows(&base, classes.len()),
                probe_rows(&k, classes.len()),
            );
            if base.len() != k.len() {
                return Err(Error::Compute(
                    "the probe labelled another set of examples with the knockout".into(),
                ));
            }
            Some(ProbeAccuracy {
                task: pu.task.clone(),
                layer: pu.layer,
                pair_features: pu.pair_features.clone(),
                corpus: pu.corpus.clone(),
                snippets: pu.snippets,
                test_accuracy: pu.test_accuracy,
                rows: std::iter::once("all".to_string()).chain(classes).collect(),
                examples: b.iter().map(|x| x.0).collect(),
                base: b.iter().map(|x| x.1).collect(),
                knocked: kn.iter().map(|x| x.1).collect(),
                control: (0..b.len())
                    .map(|r| {
                        let v: Vec<f64> = probe_draws.iter().filter_map(|d| d[r].1).collect();
                        Interval::of(&v)
                    })
                    .collect(),
                reads: base
                    .iter()
                    .zip(&k)
                    .map(|(x, y)| ProbeRead {
                        a: x.0,
                        b: x.1,
                        gold: x.2,
                        predicted: x.3,
                        knocked: y.3,
                    })
                    .collect(),
            })
        }
        _ => None,
    };
    let control = (0..CLASSES.len())
        .map(|c| {
            let v: Vec<f64> = draws.iter().filter_map(|d| d[c].1).collect();
            Interval::of(&v)
        })
        .collect();
    let on = |m: &[bool]| {
        m.iter()
            .enumerate()
            .filter(|(_, &b)| b)
            .map(|(i, _)| i)
            .collect()
    };
    Ok(KnockoutResult {
        edges: o.edges.name(),
        measure: p.measure,
        layers: on(&layers),
        heads: on(&heads),
        tokens: p.tokens.clone(),
        base_bits: p.base_bits().map(<[_]>::to_vec),
        knocked_bits: match knocked {
            Readout::Bits(b) => Some(b),
            Readout::Hidden(_) => None,
        },
        delta,
        token_pairs: chosen.len(),
        subword_pairs,
        summary,
        control,
        control_draws: draws.len(),
        control_pairs: if draws.is_empty() { 0 } else { k },
        seed: o.seed,
        probe,
    })
}

/// Resamples of the corpus knockout's paired bootstrap.
pub const BOOTSTRAP: usize = 1000;

/// One edge set and token class over a corpus.
#[derive(Debug, Clone, PartialEq)]
pub struct CorpusRow {
    pub edges: String,
    pub class: &'static str,
    /// Snippets with a measured token of the class and a control.
    pub snippets: usize,
    /// Mean over snippets of the snippet's mean effect with the knockout.
    pub knocked: f64,
    /// The same with the matched control (each snippet's mean over its draws).
    pub control: f64,
    /// `knocked - control`, with its paired bootstrap 95% interval over snippets.
    pub diff: f64,
    pub lo: f64,
    pub hi: f64,
}

/// A knockout over a corpus: per edge set, the identifier and syntactic-token rows.
pub struct CorpusKnockout {
    pub rows: Vec<CorpusRow>,
    pub measure: Measure,
    pub snippets: usize,
    /// Snippets that could not be run (their first error is logged).
    pub failed: usize,
    pub draws: usize,
    pub seed: u64,
    /// The probe's table (`--probe`).
    pub probe: Option<CorpusProbe>,
}

/// One snippet's reading of the probe under one edge set, for one row (`all`, then each
/// class of the task): the accuracy unmodified, with the knockout, and the mean over the
/// control's draws (`None` without a draw); `None` for a row without examples.
pub type ProbeReading = Option<(f64, f64, Option<f64>)>;

/// One snippet of a corpus knockout.
#[derive(Debug, Clone, PartialEq)]
pub struct SnippetKnockout {
    /// Per edge set, per class (identifier, then syntactic), the snippet's mean effect
    /// with the knockout and its control's mean (`None` where the snippet has no measured
    /// token of the class or no control).
    pub classes: Vec<[Option<(f64, f64)>; 2]>,
    /// With a probe (`--probe`): per edge set, per probe row, its reading; else empty.
    pub probe: Vec<Vec<ProbeReading>>,
}

/// One snippet of a corpus knockout; `None` for a snippet that could not be run.
pub type KnockoutPairs = Option<SnippetKnockout>;

/// One edge set and probe row over a corpus: means over snippets of each snippet's
/// accuracy (pooled over its code tokens, as the one-file table gives it).
#[derive(Debug, Clone, PartialEq)]
pub struct CorpusProbeRow {
    pub edges: String,
    /// `all`, or a class of the task.
    pub class: String,
    /// Snippets with an example of the row.
    pub snippets: usize,
    pub unmodified: f64,
    pub knocked: f64,
    /// `knocked - unmodified`, with its paired bootstrap 95% interval over those snippets.
    pub diff: f64,
    pub lo: f64,
    pub hi: f64,
    /// Of those, the snippets with a control draw; over them, the control's accuracy
    /// (each snippet's mean over its draws) and `control - unmodified` with its paired
    /// bootstrap 95% interval.
    pub control_snippets: usize,
    pub control: f64,
    pub control_diff: f64,
    pub control_lo: f64,
    pub control_hi: f64,
}

/// A probe read over a corpus under each edge set.
#[derive(Debug, Clone, PartialEq)]
pub struct CorpusProbe {
    pub info: ProbeInfo,
    pub rows: Vec<CorpusProbeRow>,
}

/// Knock each of `sets` out on every snippet (the unmodified pass once per snippet) and
/// aggregate the identifier and syntactic-token effects against the matched control.
/// `progress(done, total)` after each snippet.
pub fn knockout_corpus(
    model: &LoadedModel,
    snippets: &[crate::corpus::Snippet],
    sets: &[EdgeSet],
    o: &KnockoutOptions,
    progress: &mut dyn FnMut(usize, usize),
) -> Result<CorpusKnockout> {
    let per = knockout_snippets(model, snippets, &|_| true, sets, o, progress)?;
    let per: Vec<KnockoutPairs> = per.into_iter().map(|(_, p)| p).collect();
    let names: Vec<String> = sets.iter().map(EdgeSet::name).collect();
    let probe = o.probe.as_deref().map(ProbeUse::info);
    Ok(knockout_aggregate(
        &per,
        &names,
        Measure::of(model),
        o.control,
        o.seed,
        probe.as_ref(),
    ))
}

/// The per-snippet half of [`knockout_corpus`]: the paired values of every snippet `i`
/// with `owns(i)`, in corpus order, with its index (a shard's share, [`super::reproduce::Shard`]).
/// A snippet that fails is logged and recorded as `None`.
pub fn knockout_snippets(
    model: &LoadedModel,
    snippets: &[crate::corpus::Snippet],
    owns: &dyn Fn(usize) -> bool,
    sets: &[EdgeSet],
    o: &KnockoutOptions,
    progress: &mut dyn FnMut(usize, usize),
) -> Result<Vec<(usize, KnockoutPairs)>> {
    o.check()?;
    let own: Vec<usize> = (0..snippets.len()).filter(|&i| owns(i)).collect();
    let mut out = Vec::with_capacity(own.len());
    for (done, &i) in own.iter().enumerate() {
        let sn = &snippets[i];
        let one = || -> Result<Vec<KnockoutResult>> {
            let p = Prepared::new(model, &sn.code, sn.language, o.mode, false)?;
            sets.iter()
                .map(|e| {
                    let oe = KnockoutOptions {
                        edges: e.clone(),
                        ..o.clone()
                    };
                    knockout_prepared(model, &p, &oe)
                })
                .collect()
        };
        match one() {
            Ok(results) => {
                let classes = results
                    .iter()
                    .map(|r| {
                        let at = |c: usize| match (r.summary[c].1, r.control[c]) {
                            (Some(k), Some(ctl)) => Some((k, ctl.mean)),
                            _ => None,
                        };
                        [at(0), at(1)]
                    })
                    .collect();
                let probe = results
                    .iter()
                    .filter_map(|r| r.probe.as_ref())
                    .map(|pa| {
                        (0..pa.rows.len())
                            .map(|r| {
                                let (b, k) = (pa.base[r]?, pa.knocked[r]?);
                                Some((b, k, pa.control[r].map(|c| c.mean)))
                            })
                            .collect()
                    })
                    .collect();
                out.push((i, Some(SnippetKnockout { classes, probe })));
            }
            Err(Error::Cancelled) => return Err(Error::Cancelled),
            Err(e) => {
                tracing::warn!(snippet = %sn.origin, "knockout failed: {e}");
                out.push((i, None));
            }
        }
        progress(done + 1, own.len());
    }
    Ok(out)
}

/// The paired bootstrap 95% interval over snippets of the mean of `a - b` over the pairs
/// `v`, from the random stream `stream` ([`BOOTSTRAP`] resamples; NaN for no pair).
fn paired_bootstrap(v: &[(f64, f64)], stream: u64) -> (f64, f64) {
    let n = v.len();
    let mut rng = crate::rng::Rng::new(crate::rng::mix(stream));
    let boots: Vec<f64> = if n == 0 {
        Vec::new()
    } else {
        (0..BOOTSTRAP)
            .map(|_| {
                (0..n)
                    .map(|_| {
                        let p = v[rng.below(n)];
                        p.0 - p.1
                    })
                    .sum::<f64>()
                    / n as f64
            })
            .collect()
    };
    let iv = Interval::of(&boots);
    (iv.map_or(f64::NAN, |i| i.lo), iv.map_or(f64::NAN, |i| i.hi))
}

/// The mean of `v` (NaN when empty: JSON null).
fn mean_of(v: &[f64]) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    v.iter().sum::<f64>() / v.len() as f64
}

/// The probe's corpus rows: per edge set and probe row, the means over the snippets with
/// an example and the paired bootstraps of `knocked - unmodified` and of `control -
/// unmodified`, each from its own stream of `seed`.
fn probe_aggregate(
    per: &[KnockoutPairs],
    sets: &[String],
    seed: u64,
    info: &ProbeInfo,
) -> Vec<CorpusProbeRow> {
    let mut rows = Vec::new();
    let width = info.rows.len();
    for (s, set) in sets.iter().enumerate() {
        for (r, class) in info.rows.iter().enumerate() {
            let v: Vec<(f64, f64, Option<f64>)> = per
                .iter()
                .flatten()
                .filter_map(|p| p.probe.get(s).and_then(|x| x.get(r).copied().flatten()))
                .collect();
            let base: Vec<f64> = v.iter().map(|x| x.0).collect();
            let knocked: Vec<f64> = v.iter().map(|x| x.1).collect();
            let ctl: Vec<(f64, f64)> = v.iter().filter_map(|x| Some((x.2?, x.0))).collect();
            let (unmodified, knocked) = (mean_of(&base), mean_of(&knocked));
            let pairs: Vec<(f64, f64)> = v.iter().map(|x| (x.1, x.0)).collect();
            let stream = |which: usize| {
                seed ^ crate::rng::mix(PROBE_STREAMS ^ ((s * width + r) * 2 + which) as u64)
            };
            let (lo, hi) = paired_bootstrap(&pairs, stream(0));
            let (control_lo, control_hi) = paired_bootstrap(&ctl, stream(1));
            let control = mean_of(&ctl.iter().map(|x| x.0).collect::<Vec<_>>());
            let ctl_base = mean_of(&ctl.iter().map(|x| x.1).collect::<Vec<_>>());
            rows.push(CorpusProbeRow {
                edges: set.clone(),
                class: class.clone(),
                snippets: v.len(),
                unmodified,
                knocked,
                diff: knocked - unmodified,
                lo,
                hi,
                control_snippets: ctl.len(),
                control,
                control_diff: control - ctl_base,
                control_lo,
                control_hi,
            });
        }
    }
    rows
}

/// Sets the probe rows' bootstrap streams apart from the effect rows'.
const PROBE_STREAMS: u64 = 0x7072_6f62_6500_0000;

/// The aggregate half of [`knockout_corpus`]: from the snippets' paired values in corpus
/// order (`sets` the edge sets' names, in order), each row's means over the snippets with
/// a value and the paired bootstrap of the difference, seeded by `seed`, set and class;
/// with `probe`, its rows too ([`CorpusProbeRow`]).
pub fn knockout_aggregate(
    per: &[KnockoutPairs],
    sets: &[String],
    measure: Measure,
    draws: usize,
    seed: u64,
    probe: Option<&ProbeInfo>,
) -> CorpusKnockout {
    let failed = per.iter().filter(|p| p.is_none()).count();
    let mut rows = Vec::new();
    for (s, set) in sets.iter().enumerate() {
        for (c, class) in CLASSES.iter().take(2).enumerate() {
            let v: Vec<(f64, f64)> = per
                .iter()
                .flatten()
                .filter_map(|p| p.classes.get(s).and_then(|x| x[c]))
                .collect();
            let n = v.len();
            let mean =
                |f: &dyn Fn(&(f64, f64)) -> f64| v.iter().map(f).sum::<f64>() / n.max(1) as f64;
            let (knocked, control) = (mean(&|p| p.0), mean(&|p| p.1));
            let (lo, hi) = paired_bootstrap(&v, seed ^ (s * 2 + c) as u64);
            rows.push(CorpusRow {
                edges: set.clone(),
                class,
                snippets: n,
                knocked,
                control,
                diff: knocked - control,
                lo,
                hi,
            });
        }
    }
    CorpusKnockout {
        rows,
        measure,
        snippets: per.len() - failed,
        failed,
        draws,
        seed,
        probe: probe.map(|info| CorpusProbe {
            info: info.clone(),
            rows: probe_aggregate(per, sets, seed, info),
        }),
    }
}

impl CorpusKnockout {
    /// `knockout --data ... --json` (`model`: the [`crate::model::ModelInfo`], or its
    /// JSON as a shard recorded it).
    pub fn to_json(&self, model: &impl serde::Serialize, corpus: &str) -> Value {
        let rows: Vec<Value> = self
            .rows
            .iter()
            .map(|r| {
                json!({
                    "edges": r.edges, "class": r.class, "snippets": r.snippets,
                    "knocked": r6(r.knocked), "control": r6(r.control),
                    "diff": r6(r.diff), "diff_lo": r6(r.lo), "diff_hi": r6(r.hi),
                })
            })
            .collect();
        let mut doc = json!({
            "command": "knockout",
            "model": model,
            "corpus": corpus,
            "measure": self.measure.name(),
            "snippets": self.snippets,
            "failed": self.failed,
            "control": {"draws": self.draws, "seed": self.seed},
            "bootstrap_resamples": BOOTSTRAP,
            "rows": rows,
        });
        if let Some(p) = &self.probe {
            let rows: Vec<Value> = p
                .rows
                .iter()
                .map(|r| {
                    json!({
                        "edges": r.edges, "class": r.class, "snippets": r.snippets,
                        "accuracy": r6(r.unmodified), "accuracy_knocked": r6(r.knocked),
                        "diff": r6(r.diff), "diff_lo": r6(r.lo), "diff_hi": r6(r.hi),
                        "control_snippets": r.control_snippets,
                        "accuracy_control": r6(r.control),
                        "control_diff": r6(r.control_diff),
                        "control_diff_lo": r6(r.control_lo),
                        "control_diff_hi": r6(r.control_hi),
                    })
                })
                .collect();
            let i = &p.info;
            doc["probe"] = json!({
                "task": i.task,
                "layer": i.layer,
                "corpus": i.corpus,
                "snippets": i.snippets,
                "test_accuracy": r6(i.test_accuracy),
                "rows": rows,
            });
            if let Some(pf) = &i.pair_features {
                doc["probe"]["pair_features"] = json!(pf);
            }
        }
        doc
    }

    /// `knockout --data ... --csv` (with a probe, five more columns and its rows after
    /// the effect rows, their class `probe:` and the row's name).
    pub fn to_csv(&self) -> String {
        let mut s = String::from("edges,class,snippets,knocked,control,diff,diff_lo,diff_hi");
        if self.probe.is_some() {
            s.push_str(",unmodified,control_snippets,control_diff,control_diff_lo,control_diff_hi");
        }
        s.push('\n');
        for r in &self.rows {
            s.push_str(&format!(
                "{},{},{},{:.6},{:.6},{:.6},{:.6},{:.6}",
                r.edges, r.class, r.snippets, r.knocked, r.control, r.diff, r.lo, r.hi
            ));
            if self.probe.is_some() {
                s.push_str(",,,,,");
            }
            s.push('\n');
        }
        for r in self.probe.iter().flat_map(|p| &p.rows) {
            s.push_str(&format!(
                "{},probe:{},{},{:.6},{:.6},{:.6},{:.6},{:.6},{:.6},{},{:.6},{:.6},{:.6}\n",
                r.edges,
                csv_field(&r.class),
                r.snippets,
                r.knocked,
                r.control,
                r.diff,
                r.lo,
                r.hi,
                r.unmodified,
                r.control_snippets,
                r.control_diff,
                r.control_lo,
                r.control_hi
            ));
        }
        s
    }

    /// The text table (the README's form).
    pub fn summary_text(&self, corpus: &str) -> String {
        let unit = self.measure.delta_unit();
        let mut s = format!(
            "{corpus}: {} snippets ({} failed), mean {unit} per snippet; control: {} draws of as many pairs\n",
            self.snippets, self.failed, self.draws
        );
        s.push_str(&format!(
            "{:<22} {:<11} {:>9} {:>9} {:>9}  95% CI (paired bootstrap)\n",
            "edges", "class", "knockout", "control", "diff"
        ));
        for r in &self.rows {
            s.push_str(&format!(
                "{:<22} {:<11} {:>+9.4} {:>+9.4} {:>+9.4}  [{:+.4}, {:+.4}]\n",
                r.edges, r.class, r.knocked, r.control, r.diff, r.lo, r.hi
            ));
        }
        if let Some(p) = &self.probe {
            let i = &p.info;
            s.push_str(&format!(
                "\nprobe {} at layer {} (trained on {} snippets of {}, test accuracy {:.3}): mean accuracy per snippet, diffs from unchanged\n",
                probe_name(&i.task, &i.pair_features), i.layer, i.snippets, i.corpus, i.test_accuracy
            ));
            s.push_str(&format!(
                "{:<22} {:<11} {:>8} {:>9} {:>9} {:>7}  {:<17} {:>8} {:>7}  95% CI (paired bootstrap)\n",
                "edges", "class", "snippets", "unchanged", "knocked", "diff", "95% CI", "control", "diff"
            ));
            for r in p.rows.iter().filter(|r| r.snippets > 0) {
                let ci = |lo: f64, hi: f64| format!("[{lo:+.3}, {hi:+.3}]");
                let ctl = if r.control_snippets == 0 {
                    format!("{:>8} {:>7}  -", "-", "-")
                } else {
                    format!(
                        "{:>8.3} {:>+7.3}  {}",
                        r.control,
                        r.control_diff,
                        ci(r.control_lo, r.control_hi)
                    )
                };
                s.push_str(&format!(
                    "{:<22} {:<11} {:>8} {:>9.3} {:>9.3} {:>+7.3}  {:<17} {ctl}\n",
                    r.edges,
                    r.class,
                    r.snippets,
                    r.unmodified,
                    r.knocked,
                    r.diff,
                    ci(r.lo, r.hi)
                ));
            }
        }
        s
    }
}

/// A probe's task as the text tables name it (a pair task with its feature combination).
fn probe_name(task: &str, pair_features: &Option<String>) -> String {
    match pair_features {
        Some(pf) => format!("{task} ({pf} pair features)"),
        None => task.to_string(),
    }
}

fn one_based(v: &[usize]) -> Vec<usize> {
    v.iter().map(|i| i + 1).collect()
}

fn r6(x: f64) -> f64 {
    if x.is_finite() {
        format!("{x:.6e}").parse().unwrap_or(x)
    } else {
        x
    }
}

impl KnockoutResult {
    /// `knockout --json` (README, JSON shapes).
    pub fn to_json(&self, model: &crate::model::ModelInfo) -> Value {
        let tokens: Vec<Value> = self
            .tokens
            .iter()
            .enumerate()
            .map(|(i, t)| {
                let mut v = json!({
                    "index": i,
                    "text": t.text,
                    "category": t.category.name(),
                    "coarse": coarse_name(t.coarse),
                    "span": [t.start, t.end],
                });
                match (&self.base_bits, &self.knocked_bits) {
                    (Some(b), Some(k)) => {
                        v["bits"] = json!(b.get(i).copied().flatten());
                        v["bits_knocked"] = json!(k.get(i).copied().flatten());
                        v["delta_bits"] = json!(self.delta[i].map(r6));
                    }
                    _ => v["one_minus_cos"] = json!(self.delta[i].map(r6)),
                }
                if let Some(pa) = self.probe.as_ref().filter(|p| p.pair_features.is_none()) {
                    let t = pa.token_read(i);
                    v["probe_gold"] = json!(t.and_then(|t| pa.class(t.gold)));
                    v["probe_predicted"] = json!(t.and_then(|t| pa.class(t.predicted)));
                    v["probe_predicted_knocked"] = json!(t.and_then(|t| pa.class(t.knocked)));
                }
                v
            })
            .collect();
        let summary: Vec<Value> = CLASSES
            .iter()
            .enumerate()
            .map(|(c, name)| {
                json!({
                    "class": name,
                    "tokens": self.summary[c].0,
                    "mean_delta": self.summary[c].1.map(r6),
                    "control": self.control[c].map(|i| i.json()),
                })
            })
            .collect();
        let mut doc = json!({
            "command": "knockout",
            "model": model,
            "edges": self.edges,
            "measure": self.measure.name(),
            "layers": one_based(&self.layers),
            "heads": one_based(&self.heads),
            "blocked": {"token_pairs": self.token_pairs, "subword_pairs": self.subword_pairs},
            "control": {"draws": self.control_draws, "token_pairs": self.control_pairs, "seed": self.seed},
            "summary": summary,
            "tokens": tokens,
        });
        if let Some(pa) = &self.probe {
            let rows: Vec<Value> = pa
                .rows
                .iter()
                .enumerate()
                .map(|(r, name)| {
                    json!({
                        "class": name,
                        "examples": pa.examples[r],
                        "accuracy": pa.base[r].map(r6),
                        "accuracy_knocked": pa.knocked[r].map(r6),
                        "control": pa.control[r].map(|i| i.json()),
                    })
                })
                .collect();
            doc["probe"] = json!({
                "task": pa.task,
                "layer": pa.layer,
                "corpus": pa.corpus,
                "snippets": pa.snippets,
                "test_accuracy": r6(pa.test_accuracy),
                "classes": rows,
            });
            if let Some(pf) = &pa.pair_features {
                doc["probe"]["pair_features"] = json!(pf);
                doc["probe"]["pairs"] = pa
                    .reads
                    .iter()
                    .map(|r| {
                        json!({
                            "index": [r.a, r.b],
                            "probe_gold": pa.class(r.gold),
                            "probe_predicted": pa.class(r.predicted),
                            "probe_predicted_knocked": pa.class(r.knocked),
                        })
                    })
                    .collect();
            }
        }
        doc
    }

    /// `knockout --csv`: one row per code token (with a pair task's probe, then one row
    /// per pair it read, `index` `a:b`).
    pub fn to_csv(&self) -> String {
        let mut s = String::from("index,text,category,coarse,start,end,bits,bits_knocked,delta");
        if self.probe.is_some() {
            s.push_str(",probe_gold,probe_predicted,probe_predicted_knocked");
        }
        s.push('\n');
        for (i, t) in self.tokens.iter().enumerate() {
            let bits = self
                .base_bits
                .as_ref()
                .and_then(|b| b.get(i).copied().flatten());
            let knocked = self
                .knocked_bits
                .as_ref()
                .and_then(|b| b.get(i).copied().flatten())
                .map(f64::from);
            let f = |v: Option<f64>| v.map(|x| format!("{x:.6}")).unwrap_or_default();
            s.push_str(&format!(
                "{i},{},{},{},{},{},{},{},{}",
                csv_field(&t.text),
                t.category.name(),
                coarse_name(t.coarse),
                t.start,
                t.end,
                f(bits.map(f64::from)),
                f(knocked),
                f(self.delta[i])
            ));
            if let Some(pa) = &self.probe {
                match pa.token_read(i).filter(|_| pa.pair_features.is_none()) {
                    Some(r) => s.push_str(&pa.csv_names(r)),
                    None => s.push_str(",,,"),
                }
            }
            s.push('\n');
        }
        for pa in self.probe.iter().filter(|p| p.pair_features.is_some()) {
            for r in &pa.reads {
                let b = r.b.map_or(String::new(), |b| b.to_string());
                s.push_str(&format!("{}:{b},,,,,,,,{}\n", r.a, pa.csv_names(r)));
            }
        }
        s
    }

    /// The text form: the blocked set and the per-class table against the control.
    pub fn summary_text(&self, name: &str) -> String {
        let unit = self.measure.delta_unit();
        let mut s = format!(
            "{name}: knockout {} in {} layer(s) x {} head(s): {} token pairs ({} subword pairs) blocked\n",
            self.edges,
            self.layers.len(),
            self.heads.len(),
            self.token_pairs,
            self.subword_pairs
        );
        s.push_str(&format!(
            "{:<12} {:>6} {:>10}   control ({} draws of {} pairs): mean [95% interval]\n",
            "class", "tokens", unit, self.control_draws, self.control_pairs
        ));
        // Bits read well to 4 decimals; 1 - cos of a small model is often 1e-5.
        let f = |v: f64| match self.measure {
            Measure::Bits | Measure::PllBits => format!("{v:+.4}"),
            Measure::Cosine => format!("{v:.3e}"),
        };
        for (c, name) in CLASSES.iter().enumerate() {
            let (n, m) = self.summary[c];
            if n == 0 {
                continue;
            }
            let ctl = match self.control[c] {
                Some(i) => format!("{} [{}, {}]", f(i.mean), f(i.lo), f(i.hi)),
                None => "-".into(),
            };
            let m = m.map_or("-".into(), f);
            s.push_str(&format!("{name:<12} {n:>6} {m:>10}   {ctl}\n"));
        }
        if let Some(pa) = &self.probe {
            s.push_str(&format!(
                "\nprobe {} at layer {} (trained on {} snippets of {}, test accuracy {:.3}): accuracy\n",
                probe_name(&pa.task, &pa.pair_features), pa.layer, pa.snippets, pa.corpus, pa.test_accuracy
            ));
            s.push_str(&format!(
                "{:<12} {:>8} {:>9} {:>9}   control: mean [95% interval]\n",
                "class", "examples", "unchanged", "knocked"
            ));
            let f = |v: Option<f64>| v.map_or("-".into(), |x| format!("{x:.3}"));
            for (r, name) in pa.rows.iter().enumerate() {
                if pa.examples[r] == 0 {
                    continue;
                }
                let ctl = match pa.control[r] {
                    Some(i) => format!("{:.3} [{:.3}, {:.3}]", i.mean, i.lo, i.hi),
                    None => "-".into(),
                };
                s.push_str(&format!(
                    "{name:<12} {:>8} {:>9} {:>9}   {ctl}\n",
                    pa.examples[r],
                    f(pa.base[r]),
                    f(pa.knocked[r])
                ));
            }
        }
        s
    }
}

fn coarse_name(c: Coarse) -> &'static str {
    match c {
        Coarse::Syntactic => "syntactic",
        Coarse::Identifier => "identifier",
    }
}

fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// One head's ablation effect: mean effect on identifiers, syntactic tokens, all.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct HeadEffect {
    pub identifier: Option<f64>,
    pub syntactic: Option<f64>,
    pub all: Option<f64>,
}

/// The ablation grid of one snippet: `[layer][head]`.
pub struct AblationResult {
    pub mode: AblationMode,
    pub measure: Measure,
    pub grid: Vec<Vec<HeadEffect>>,
    pub tokens: usize,
}

/// Ablate each head in turn (its output zeroed or mean-replaced) and measure the effect
/// on identifiers and syntactic tokens. Each head's pass starts at its layer from the
/// unmodified pass's residual stream (the layers before it are not recomputed). `each`
/// is called after every head (`(layer, head)`, 0-based) and may cancel by returning
/// `true`.
pub fn ablate(
    model: &LoadedModel,
    p: &Prepared,
    mode: AblationMode,
    each: &mut dyn FnMut(usize, usize, &HeadEffect) -> bool,
) -> Result<AblationResult> {
    let info = &model.info;
    let mut grid = vec![Vec::with_capacity(info.heads); info.layers];
    for (l, row) in grid.iter_mut().enumerate() {
        for h in 0..info.heads {
            let e = ablate_head(model, p, mode, l, h)?;
            row.push(e);
            if each(l, h, &e) {
                return Err(Error::Cancelled);
            }
        }
    }
    Ok(AblationResult {
        mode,
        measure: p.measure,
        grid,
        tokens: p.tokens.len(),
    })
}

/// One head's ablation effect ([`ablate`] is this for every head in turn): head `h` of
/// layer `l` zeroed or mean-replaced, the pass starting at its layer from the unmodified
/// pass's residual stream.
pub fn ablate_head(
    model: &LoadedModel,
    p: &Prepared,
    mode: AblationMode,
    l: usize,
    h: usize,
) -> Result<HeadEffect> {
    let iv = Intervention {
        knockout: None,
        ablate: vec![HeadAblation {
            layer: l,
            head: h,
            mode,
        }],
    };
    if p.measure == Measure::PllBits {
        // Every masked copy has its own residual stream: full passes.
        let means = class_means(&p.tokens, &p.delta(&p.pass(model, Some(&iv), None)?));
        return Ok(HeadEffect {
            identifier: means[0].1,
            syntactic: means[1].1,
            all: means[CLASSES.len() - 1].1,
        });
    }
    let hidden = p.hidden.as_ref().ok_or_else(|| {
        Error::Compute("the ablation needs the unmodified pass's hidden states".into())
    })?;
    let input = hidden
        .get(l)
        .ok_or_else(|| Error::Compute(format!("no hidden state entering layer {}", l + 1)))?;
    let discard = |_: usize, _: Vec<f32>| Ok(());
    let opts = ForwardOptions {
        hidden: p.measure == Measure::Cosine,
        on_attention: Some(&discard),
        intervention: Some(&iv),
        partial: Some(Partial {
            first: l,
            end: p.model_layers,
            input,
            logits: true,
        }),
        cross_lm: true,
        ..Default::default()
    };
    let t = p.run(model, &opts)?;
    let means = class_means(&p.tokens, &p.delta(&p.readout(&t)?));
    Ok(HeadEffect {
        identifier: means[0].1,
        syntactic: means[1].1,
        all: means[CLASSES.len() - 1].1,
    })
}

/// One head and token class over a corpus ([`ablate_corpus`]).
#[derive(Debug, Clone, PartialEq)]
pub struct CorpusHeadEffect {
    /// 0-based layer and head.
    pub layer: usize,
    pub head: usize,
    pub class: &'static str,
    /// Snippets with a measured token of the class.
    pub snippets: usize,
    /// Mean over snippets of the snippet's mean effect, with a bootstrap 95% interval
    /// over snippets (each snippet's effect is already ablated minus unablated).
    pub mean: f64,
    pub lo: f64,
    pub hi: f64,
}

/// The ablation grid over a corpus: per head, identifiers and syntactic tokens.
pub struct CorpusAblation {
    pub mode: AblationMode,
    pub measure: Measure,
    /// Row-major `[layer][head][class]`, classes identifier then syntactic.
    pub heads: Vec<CorpusHeadEffect>,
    pub layers: usize,
    pub heads_per_layer: usize,
    pub snippets: usize,
    /// Snippets that could not be run (their first error is logged).
    pub failed: usize,
    pub seed: u64,
}

/// One snippet of a corpus ablation: per (layer, head, class) row-major, classes
/// identifier then syntactic, the snippet's mean effect (`None` where not finite or
/// without a token of the class); `None` for a snippet that could not be run.
pub type AblationValues = Option<Vec<Option<f64>>>;

/// [`ablate`] on every snippet, aggregated per head and class: the mean over snippets of
/// each snippet's mean effect, with a bootstrap interval ([`BOOTSTRAP`] resamples of the
/// snippets, seeded by `seed`, layer, head and class). `progress(done, total)` after each
/// snippet.
pub fn ablate_corpus(
    model: &LoadedModel,
    snippets: &[crate::corpus::Snippet],
    mode: AblationMode,
    input: Mode,
    seed: u64,
    progress: &mut dyn FnMut(usize, usize),
) -> Result<CorpusAblation> {
    let per = ablate_snippets(model, snippets, &|_| true, mode, input, progress)?;
    let per: Vec<AblationValues> = per.into_iter().map(|(_, v)| v).collect();
    Ok(ablate_aggregate(
        &per,
        model.info.layers,
        model.info.heads,
        mode,
        Measure::of(model),
        seed,
    ))
}

/// The per-snippet half of [`ablate_corpus`]: every snippet `i` with `owns(i)`, in
/// corpus order, with its index. A snippet that fails is logged and recorded as `None`.
pub fn ablate_snippets(
    model: &LoadedModel,
    snippets: &[crate::corpus::Snippet],
    owns: &dyn Fn(usize) -> bool,
    mode: AblationMode,
    input: Mode,
    progress: &mut dyn FnMut(usize, usize),
) -> Result<Vec<(usize, AblationValues)>> {
    let own: Vec<usize> = (0..snippets.len()).filter(|&i| owns(i)).collect();
    let mut out = Vec::with_capacity(own.len());
    for (done, &i) in own.iter().enumerate() {
        let sn = &snippets[i];
        let one = || -> Result<AblationResult> {
            let p = Prepared::new(model, &sn.code, sn.language, input, true)?;
            ablate(model, &p, mode, &mut |_, _, _| false)
        };
        match one() {
            Ok(r) => {
                let v = r
                    .grid
                    .iter()
                    .flatten()
                    .flat_map(|e| [e.identifier, e.syntactic])
                    .map(|v| v.filter(|v| v.is_finite()))
                    .collect();
                out.push((i, Some(v)));
            }
            Err(Error::Cancelled) => return Err(Error::Cancelled),
            Err(e) => {
                tracing::warn!(snippet = %sn.origin, "ablation failed: {e}");
                out.push((i, None));
            }
        }
        progress(done + 1, own.len());
    }
    Ok(out)
}

/// The mean of per-snippet values `v` (each already a paired difference, or a paired
/// ratio) with its bootstrap 95% interval over snippets: [`BOOTSTRAP`] resamples of the
/// snippets with replacement, the stream seeded by `mix(key)`; NaN throughout when `v` is
/// empty. The corpus ablation and the corpus patch share it.
pub fn bootstrap_mean(v: &[f64], key: u64) -> Interval {
    let n = v.len();
    if n == 0 {
        return Interval {
            mean: f64::NAN,
            lo: f64::NAN,
            hi: f64::NAN,
        };
    }
    let mean = v.iter().sum::<f64>() / n as f64;
    let mut rng = crate::rng::Rng::new(crate::rng::mix(key));
    let boots: Vec<f64> = (0..BOOTSTRAP)
        .map(|_| (0..n).map(|_| v[rng.below(n)]).sum::<f64>() / n as f64)
        .collect();
    let iv = Interval::of(&boots);
    Interval {
        mean,
        lo: iv.map_or(f64::NAN, |i| i.lo),
        hi: iv.map_or(f64::NAN, |i| i.hi),
    }
}

/// The aggregate half of [`ablate_corpus`], from the snippets' values in corpus order.
pub fn ablate_aggregate(
    per: &[AblationValues],
    layers: usize,
    heads: usize,
    mode: AblationMode,
    measure: Measure,
    seed: u64,
) -> CorpusAblation {
    let failed = per.iter().filter(|p| p.is_none()).count();
    let mut out = Vec::with_capacity(layers * heads * 2);
    for l in 0..layers {
        for h in 0..heads {
            for (c, class) in CLASSES.iter().take(2).enumerate() {
                let k = (l * heads + h) * 2 + c;
                let v: Vec<f64> = per
                    .iter()
                    .flatten()
                    .filter_map(|p| p.get(k).copied().flatten())
                    .collect();
                let b = bootstrap_mean(&v, seed ^ k as u64);
                out.push(CorpusHeadEffect {
                    layer: l,
                    head: h,
                    class,
                    snippets: v.len(),
                    mean: b.mean,
                    lo: b.lo,
                    hi: b.hi,
                });
            }
        }
    }
    CorpusAblation {
        mode,
        measure,
        heads: out,
        layers,
        heads_per_layer: heads,
        snippets: per.len() - failed,
        failed,
        seed,
    }
}

impl CorpusAblation {
    /// `ablate --data ... --json` (`model`: the [`crate::model::ModelInfo`], or its
    /// JSON as a shard recorded it).
    pub fn to_json(&self, model: &impl serde::Serialize, corpus: &str) -> Value {
        let heads: Vec<Value> = self
            .heads
            .iter()
            .map(|e| {
                json!({
                    "layer": e.layer + 1, "head": e.head + 1, "class": e.class,
                    "snippets": e.snippets, "mean": r6(e.mean),
                    "lo": r6(e.lo), "hi": r6(e.hi),
                })
            })
            .collect();
        json!({
            "command": "ablate",
            "model": model,
            "corpus": corpus,
            "mode": self.mode.name(),
            "measure": self.measure.name(),
            "snippets": self.snippets,
            "failed": self.failed,
            "bootstrap_resamples": BOOTSTRAP,
            "seed": self.seed,
            "heads": heads,
        })
    }

    /// `ablate --data ... --csv`: `layer,head,class,snippets,mean,lo,hi` (1-based).
    pub fn to_csv(&self) -> String {
        let mut s = String::from("layer,head,class,snippets,mean,lo,hi\n");
        for e in &self.heads {
            s.push_str(&format!(
                "{},{},{},{},{:.6},{:.6},{:.6}\n",
                e.layer + 1,
                e.head + 1,
                e.class,
                e.snippets,
                e.mean,
                e.lo,
                e.hi
            ));
        }
        s
    }

    /// Text: per class, the ten heads with the largest mean effect and their intervals.
    pub fn summary_text(&self, corpus: &str) -> String {
        let unit = format!("mean {}", self.measure.delta_unit());
        let mut s = format!(
            "{corpus}: {} snippets ({} failed), {} ablation of each of {} x {} heads, {unit} per snippet\n",
            self.snippets,
            self.failed,
            self.mode.name(),
            self.layers,
            self.heads_per_layer
        );
        for class in CLASSES.iter().take(2) {
            let mut v: Vec<&CorpusHeadEffect> = self
                .heads
                .iter()
                .filter(|e| e.class == *class && e.mean.is_finite())
                .collect();
            v.sort_by(|a, b| b.mean.total_cmp(&a.mean));
            s.push_str(&format!(
                "\n{class}: the heads that matter most\n  layer  head  {:>10}  95% CI (bootstrap over snippets)\n",
                "effect"
            ));
            for e in v.iter().take(10) {
                s.push_str(&format!(
                    "  {:>5}  {:>4}  {:>+10.4}  [{:+.4}, {:+.4}]\n",
                    e.layer + 1,
                    e.head + 1,
                    e.mean,
                    e.lo,
                    e.hi
                ));
            }
        }
        s
    }
}

impl AblationResult {
    /// `ablate --json`.
    pub fn to_json(&self, model: &crate::model::ModelInfo) -> Value {
        let heads: Vec<Value> = self
            .grid
            .iter()
            .enumerate()
            .flat_map(|(l, row)| {
                row.iter().enumerate().map(move |(h, e)| {
                    json!({
                        "layer": l + 1, "head": h + 1,
                        "identifier": e.identifier.map(r6),
                        "syntactic": e.syntactic.map(r6),
                        "all": e.all.map(r6),
                    })
                })
            })
            .collect();
        json!({
            "command": "ablate",
            "model": model,
            "mode": self.mode.name(),
            "measure": self.measure.name(),
            "heads": heads,
        })
    }

    /// `ablate --csv`: `layer,head,identifier,syntactic,all` (1-based).
    pub fn to_csv(&self) -> String {
        let f = |v: Option<f64>| v.map(|x| format!("{x:.6}")).unwrap_or_default();
        let mut s = String::from("layer,head,identifier,syntactic,all\n");
        for (l, row) in self.grid.iter().enumerate() {
            for (h, e) in row.iter().enumerate() {
                s.push_str(&format!(
                    "{},{},{},{},{}\n",
                    l + 1,
                    h + 1,
                    f(e.identifier),
                    f(e.syntactic),
                    f(e.all)
                ));
            }
        }
        s
    }

    /// Text: the grid of mean effects on identifiers and on syntactic tokens.
    pub fn summary_text(&self, name: &str) -> String {
        let unit = format!("mean {}", self.measure.delta_unit());
        let mut s = format!(
            "{name}: {} ablation of each head, {unit} (identifiers / syntactic tokens)\n",
            self.mode.name()
        );
        let heads = self.grid.first().map_or(0, Vec::len);
        s.push_str("layer");
        for h in 0..heads {
            s.push_str(&format!(" {:>15}", format!("head {}", h + 1)));
        }
        s.push('\n');
        for (l, row) in self.grid.iter().enumerate() {
            s.push_str(&format!("{:>5}", l + 1));
            for e in row {
                let f = |v: Option<f64>| v.map(|x| format!("{x:+.3}")).unwrap_or("-".into());
                s.push_str(&format!(
                    " {:>15}",
                    format!("{}/{}", f(e.identifier), f(e.syntactic))
                ));
            }
            s.push('\n');
        }
        s
    }
}

/// One position's read-out at one layer.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LensCell {
    /// Probability of the actual next subword.
    pub prob: f32,
    /// Its rank (1 = the top guess).
    pub rank: u32,
    /// The top guess's id.
    pub top: u32,
}

/// Refuse a test that does not run on an encoder–decoder's cross stack (the trained
/// probe under a knockout), in one line saying why.
pub fn refuse_cross(model: &LoadedModel) -> Result<()> {
    if on_cross(model) {
        return Err(Error::Setting {
            name: "--stack cross".into(),
            reason: "the trained probe under a knockout does not run on the cross stack (it \
                     reads one stack's hidden states): use --stack decoder or --stack encoder"
                .into(),
        });
    }
    Ok(())
}

/// Whether the model runs an encoder–decoder's cross stack: the causal tests then
/// intervene in the decoder's cross-attention and measure the decoder's surprisal
/// ([`ForwardOptions::cross_lm`]).
fn on_cross(model: &LoadedModel) -> bool {
    model.info.stack == Some(crate::model::Stack::Cross.name())
}

/// The logit lens of one snippet: `cells[layer][position]` for layers 0 (embeddings) to
/// `layers` (the model's output), positions with a next subword.
pub struct LensResult {
    pub cells: Vec<Vec<Option<LensCell>>>,
    pub ids: Vec<u32>,
    pub subwords: Vec<String>,
    pub tokens: Vec<CodeToken>,
    /// Per code token: its first subword's position.
    pub first_subword: Vec<Option<usize>>,
}

/// Reduce a block of logit rows to lens cells for the next subwords `ids`.
fn lens_cells(
    out: &mut [Option<LensCell>],
    ids: &[u32],
    start: usize,
    block: &[f32],
    vocab: usize,
) {
    for (r, row) in block.chunks_exact(vocab).enumerate() {
        let pos = start + r;
        let Some(&next) = ids.get(pos + 1) else {
            continue;
        };
        let (mut top, mut max) = (0usize, f32::NEG_INFINITY);
        for (i, &z) in row.iter().enumerate() {
            if z > max {
                max = z;
                top = i;
            }
        }
        let sum: f64 = row.iter().map(|&z| f64::from(z - max).exp()).sum();
        let target = row[next as usize];
        let rank = 1 + row.iter().filter(|&&z| z > target).count() as u32;
        if let Some(o) = out.get_mut(pos) {
            *o = Some(LensCell {
                prob: (f64::from(target - max).exp() / sum) as f32,
                rank,
                top: top as u32,
            });
        }
    }
}

/// Read every layer's residual stream through the final norm and the LM head (causal
/// models only).
pub fn lens(model: &LoadedModel, source: &str, lang: Language, mode: Mode) -> Result<LensResult> {
    if !model.info.causal && !on_cross(model) {
        let reason = if model.info.stack.is_some() {
            "the logit lens reads an LM head and the encoder stack has none; use \
             --stack decoder"
        } else {
            "the logit lens reads a causal model's LM head; this model is an encoder"
        };
        return Err(Error::Input {
            name: "--model".into(),
            reason: reason.into(),
        });
    }
    let syn = syntax::parse(source, lang)?;
    let input = model_input(&syn, mode)?;
    let enc = model.encode_code(&input.text, model.info.window, Some(lang))?;
    let alignment = align_subwords(&enc.tokens, &input.tokens);
    let cells = lens_ids(model, &enc.ids)?;
    let ids = enc.ids.clone();
    let first_subword = alignment
        .token_to_subwords
        .iter()
        .map(|s| s.first().copied())
        .collect();
    Ok(LensResult {
        cells,
        subwords: enc.tokens.iter().map(|t| t.text.clone()).collect(),
        ids,
        tokens: input.tokens,
        first_subword,
    })
}

/// The logit lens of pre-tokenized `ids`: `[layer][position]` for layers 0
/// (embeddings) to the model's output.
pub fn lens_ids(model: &LoadedModel, ids: &[u32]) -> Result<Vec<Vec<Option<LensCell>>>> {
    let (n, layers, vocab) = (ids.len(), model.info.layers, model.vocab_size());
    let cells = Mutex::new(vec![vec![None; n]; layers + 1]);
    let sink = |l: usize, start: usize, block: &[f32]| {
        let mut c = cells.lock().unwrap_or_else(|e| e.into_inner());
        lens_cells(&mut c[l], ids, start, block, vocab);
        Ok(())
    };
    let discard = |_: usize, _: Vec<f32>| Ok(());
    let opts = ForwardOptions {
        on_attention: Some(&discard),
        lens: Some(&sink),
        cross_lm: true,
        ..Default::default()
    };
    let mut last = vec![None; n];
    model.forward_lm_ids(ids, &opts, &mut |start, block| {
        lens_cells(&mut last, ids, start, block, vocab);
        Ok(())
    })?;
    let mut cells = cells.into_inner().unwrap_or_else(|e| e.into_inner());
    cells[layers] = last;
    Ok(cells)
}

impl LensResult {
    /// The cell predicting code token `t`'s first subword at layer `l`.
    pub fn token_cell(&self, l: usize, t: usize) -> Option<LensCell> {
        let f = self.first_subword.get(t).copied().flatten()?;
        self.cells.get(l)?.get(f.checked_sub(1)?).copied().flatten()
    }

    /// The first layer at which code token `t`'s first subword is the top guess.
    pub fn decided_at(&self, t: usize) -> Option<usize> {
        (0..self.cells.len()).find(|&l| self.token_cell(l, t).is_some_and(|c| c.rank == 1))
    }

    /// `lens --json`: per code token, per layer probability, rank and top guess of its
    /// first subword, and the layer it is decided at.
    pub fn to_json(&self, model: &crate::model::ModelInfo, tok: &dyn Fn(u32) -> String) -> Value {
        let tokens: Vec<Value> = self
            .tokens
            .iter()
            .enumerate()
            .map(|(t, ct)| {
                let layers: Vec<Value> = (0..self.cells.len())
                    .map(|l| match self.token_cell(l, t) {
                        Some(c) => json!({"layer": l, "prob": r6(f64::from(c.prob)), "rank": c.rank, "top": tok(c.top)}),
                        None => Value::Null,
                    })
                    .collect();
                json!({
                    "index": t,
                    "text": ct.text,
                    "category": ct.category.name(),
                    "coarse": coarse_name(ct.coarse),
                    "span": [ct.start, ct.end],
                    "decided_at": self.decided_at(t),
                    "layers": layers,
                })
            })
            .collect();
        json!({
            "command": "lens",
            "model": model,
            "layers": self.cells.len(),
            "layer_0": "embeddings",
            "tokens": tokens,
        })
    }

    /// `lens --csv`: `index,text,category,layer,prob,rank,top`.
    pub fn to_csv(&self, tok: &dyn Fn(u32) -> String) -> String {
        let mut s = String::from("index,text,category,layer,prob,rank,top\n");
        for (t, ct) in self.tokens.iter().enumerate() {
            for l in 0..self.cells.len() {
                if let Some(c) = self.token_cell(l, t) {
                    s.push_str(&format!(
                        "{t},{},{},{l},{:.6},{},{}\n",
                        csv_field(&ct.text),
                        ct.category.name(),
                        c.prob,
                        c.rank,
                        csv_field(&tok(c.top))
                    ));
                }
            }
        }
        s
    }

    /// Text: per code token the layer it is decided at and its probability by layer.
    pub fn summary_text(&self, name: &str) -> String {
        let layers = self.cells.len();
        let mut s = format!(
            "{name}: logit lens, p(code token's first subword) by layer (0 = embeddings, {} = output)\n",
            layers - 1
        );
        s.push_str(&format!(
            "{:<20} {:<10} {:>7}",
            "token", "category", "decided"
        ));
        for l in 0..layers {
            s.push_str(&format!(" {:>5}", format!("L{l}")));
        }
        s.push('\n');
        for (t, ct) in self.tokens.iter().enumerate() {
            if self.token_cell(layers - 1, t).is_none() {
                continue;
            }
            let text = crate::error::printable(&ct.text, false);
            let text: String = text.chars().take(20).collect();
            let dec = self.decided_at(t).map_or("-".into(), |l| format!("L{l}"));
            s.push_str(&format!("{text:<20} {:<10} {dec:>7}", ct.category.name()));
            for l in 0..layers {
                match self.token_cell(l, t) {
                    Some(c) => s.push_str(&format!(" {:>5.2}", c.prob)),
                    None => s.push_str("     -"),
                }
            }
            s.push('\n');
        }
        s
    }
}

/// Per code-token category the share of tokens with each effect sign: kept for tests.
#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn edge_sets_parse_and_name_round_trip() {
        for s in [
            "syn-id",
            "id-syn",
            "syn-syn",
            "id-id",
            "dfg",
            "ast_motif",
            "not-syn-id",
            "not-dfg_refined",
        ] {
            assert_eq!(EdgeSet::parse(s).unwrap().name(), s);
        }
        assert_eq!(
            EdgeSet::parse("ast-motif").unwrap(),
            EdgeSet::Graph(Graph::AstMotif)
        );
        let e = EdgeSet::parse("syn-foo").unwrap_err();
        assert!(
            e.contains("unknown edge set") && e.contains("syn-id"),
            "{e}"
        );
    }

    #[test]
    fn intervals_are_numpy_percentiles() {
        // numpy.percentile([1, 2, 3, 4], [2.5, 97.5]) = [1.075, 3.925].
        let i = Interval::of(&[4.0, 1.0, 3.0, 2.0]).unwrap();
        assert!((i.mean - 2.5).abs() < 1e-12);
        assert!((i.lo - 1.075).abs() < 1e-12 && (i.hi - 3.925).abs() < 1e-12);
        assert_eq!(Interval::of(&[]), None);
        let one = Interval::of(&[0.5]).unwrap();
        assert_eq!((one.lo, one.hi), (0.5, 0.5));
    }

    #[test]
    fn the_lens_ranks_and_normalises_each_row() {
        // vocab 3, ids [0, 2, 1]: row 0 predicts 2, row 1 predicts 1, row 2 has no next.
        let mut out = vec![None; 3];
        let block = [1.0, 0.0, 2.0, 0.5, 0.1, 3.0, 9.0, 9.0, 9.0];
        lens_cells(&mut out, &[0, 2, 1], 0, &block, 3);
        let z0: f64 = [1.0f64, 0.0, 2.0].iter().map(|z| (z - 2.0f64).exp()).sum();
        let c0 = out[0].unwrap();
        assert_eq!((c0.rank, c0.top), (1, 2));
        assert!((f64::from(c0.prob) - 1.0 / z0).abs() < 1e-6);
        let c1 = out[1].unwrap();
        assert_eq!((c1.rank, c1.top), (3, 2));
        assert_eq!(out[2], None);
    }
}
