//! THE analysis pipeline: every front end (the CLI's `analyze`, the explorer's worker,
//! `reproduce`, the probes' features, comparisons) runs a snippet through here.
//!
//! `source text -> parse (syntax) -> model input for the mode -> trace (model) -> align
//! subwords to code tokens -> code-token attention -> category attention, gold masks and
//! head scores per graph, entropy, code-token surprisal, code-token hidden states`
//! ([`analyze`] = [`parse`] + [`run`]; [`from_trace`] is everything after the forward).
//! Where each number is computed:
//! - code-token attention and hidden states: [`attention`] (docs/METHODS.md 1);
//! - gold masks, P/R/F1/GED per head, threshold sweeps: [`relations`] (docs/METHODS.md 3);
//! - the study's graph edit distance (networkx's first candidate, opt-in): [`ged`];
//! - category attention (2x2, 5x5): [`categories`];
//! - attention entropy: [`entropy`];
//! - code-token surprisal and perplexity: [`surprisal`] (docs/METHODS.md 5);
//! - code-token hidden states for probes: [`hidden`];
//! - a snippet against its counterfactual twin (renamed or edited): [`compare`];
//! - per-head thumbnails of the model overview: [`overview`];
//! - output forms (JSON, CSV, text): [`report`]; corpus tables: [`reproduce`].
//!
//! Layer by layer: [`run`] hands the forward pass a per-layer sink, so each layer's
//! subword attention is turned into its code-token attention and every per-head result
//! (scores, sweeps, categories, entropy) while it exists, then dropped (`stream.rs`); at
//! most one layer's subword attention exists at a time. Which code-token matrices are
//! kept is [`RunOptions::matrices`]: every layer's, the input fitted to
//! [`crate::model::ModelInfo::window`] (the attention budget over every layer), or —
//! inputs up to [`crate::model::ModelInfo::stream_window`] — every layer's when they fit
//! the budget (`CODESCOPE_ATTENTION_BUDGET_MB`), else none, optionally with the hidden
//! state entering each layer so that the viewer recomputes the layer it shows
//! ([`SnippetAnalysis::layer_matrices`]). [`from_trace`] feeds a finished trace's layers
//! through the same code: all give identical numbers. Each layer's results also go to
//! [`RunOptions::on_layer`] as soon as they exist (the explorer shows them while the pass
//! runs), and causal models can keep the final norm's output ([`RunOptions::keep_final`])
//! for the LM head to run on alone later ([`SnippetAnalysis::with_lm_head`]).
//!
//! This is where `syntax` and `model` meet, through byte spans only. Nothing here holds a
//! tensor: inputs are a [`Syntax`] and a [`Trace`], outputs plain data. The subword
//! attention and hidden states of the trace are dropped once the code-token data is
//! derived (nothing downstream reads them; they are the bulk of a trace's memory).

pub mod attention;
pub mod categories;
pub mod causal;
pub mod causal_shard;
pub mod compare;
pub mod entropy;
pub mod finding;
pub mod ged;
pub mod hidden;
pub mod overview;
pub mod patch;
pub mod relations;
pub mod report;
pub mod reproduce;
pub mod reproduce_twins;
mod stream;
pub mod surprisal;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::error::{Error, Result};
use crate::model::{limits, ForwardOptions, LoadedModel, Subword, Trace};
pub use crate::syntax::Graph;
use crate::syntax::{self, align, Alignment, CodeToken, Language, SubwordSpan, Syntax};
pub use attention::TokenAttention;
pub use categories::CategoryMatrix;
pub use hidden::SnippetHidden;
pub use relations::{GoldMask, HeadScores, Score};
pub use surprisal::TokenSurprisal;

/// What text the model is fed (docs/METHODS.md section 1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// The source as written (default).
    Source,
    /// The study's input: code tokens joined by single spaces.
    Paper,
}

impl Mode {
    pub fn name(self) -> &'static str {
        match self {
            Mode::Source => "source",
            Mode::Paper => "paper",
        }
    }
}

/// Everything the pipeline derives from one snippet.
#[derive(Clone)]
pub struct SnippetAnalysis {
    pub mode: Mode,
    pub threshold: f32,
    pub syntax: Arc<Syntax>,
    /// The code tokens with spans in the text the model saw (= `syntax.tokens` in
    /// source mode, re-spanned into the space-joined text in paper mode).
    pub tokens: Vec<CodeToken>,
    /// The trace without its subword attention and hidden states (dropped once the
    /// code-token data below is derived): model, text, subwords, surprisal, truncation.
    pub trace: Trace,
    pub alignment: Alignment,
    pub token_attention: TokenAttention,
    /// Per graph: the gold graph restricted to the analysed tokens.
    pub golds: BTreeMap<Graph, GoldMask>,
    /// `n x n` mask over analysed positions: an AST motif or data-flow edge `i -> j`
    /// (the explorer's gold overlay).
    pub gold_any: Vec<bool>,
    /// Per graph: scores of every head at `threshold`.
    pub relations: BTreeMap<Graph, HeadScores>,
    /// Per graph: scores at every threshold of [`relations::threshold_grid`] (with
    /// [`AnalyzeOptions::sweep`], and when the matrices were dropped for recomputing on demand:
    /// then [`SnippetAnalysis::scores_at`] reads them).
    pub sweep: Option<BTreeMap<Graph, Vec<HeadScores>>>,
    /// `[layer][head]` coarse (2x2) and fine (5x5) category matrices.
    pub coarse: Vec<Vec<CategoryMatrix>>,
    pub fine: Vec<Vec<CategoryMatrix>>,
    /// Per layer, over the head-averaged attention.
    pub coarse_layer: Vec<CategoryMatrix>,
    pub fine_layer: Vec<CategoryMatrix>,
    /// Over all layers and heads.
    pub coarse_all: CategoryMatrix,
    pub fine_all: CategoryMatrix,
    /// `[layer][head]` mean row entropy (bits) of the code-token attention, each row
    /// normalised to the mass that stays on code tokens.
    pub entropy: Vec<Vec<f64>>,
    /// Syntax token index → analysed position (row/column of the matrices).
    pub pos: Vec<Option<usize>>,
    /// Per-code-token surprisal (causal models traced with the LM head).
    pub surprisal: Option<TokenSurprisal>,
    /// Code-token hidden states at every layer (when traced with hidden states).
    pub features: Option<SnippetHidden>,
    /// What recomputes a layer's matrices when they were not kept
    /// ([`Matrices::OnDemand`] on a long input).
    pub layer_inputs: Option<Arc<LayerInputs>>,
    /// Causal models analysed without the LM head ([`RunOptions::keep_final`]): the
    /// final norm's output, over which the head alone gives the surprisal later
    /// ([`SnippetAnalysis::with_lm_head`]).
    pub final_hidden: Option<Arc<FinalHidden>>,
    /// Paper mode: why the study's comment and docstring removal could not be applied
    /// (the study dropped such snippets; the analysis kept the text as written).
    pub input_note: Option<String>,
    /// Wall time of the pipeline (the parse when it parsed, forward, analyses).
    pub elapsed: Duration,
}

impl std::fmt::Debug for SnippetAnalysis {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SnippetAnalysis")
            .field("mode", &self.mode)
            .field("layers", &self.layers())
            .field("heads", &self.heads())
            .field("n", &self.n())
            .field("resident", &self.token_attention.resident())
            .finish_non_exhaustive()
    }
}

/// Why an analysis shows no head scores on an encoder–decoder's cross stack (`analyze`'s
/// text, CSV notice and JSON `head_scores_withheld`; `reproduce` refuses the stack with it).
pub const CROSS_STACK_NO_SCORES: &str = "no head scores on the cross stack: the gold \
    graphs relate tokens within one sequence, cross-attention relates the decoder's tokens \
    to the encoder's";

/// [`CROSS_STACK_NO_SCORES`] when `info` is an encoder–decoder loaded on its cross stack.
pub fn head_scores_withheld(info: &crate::model::ModelInfo) -> Option<&'static str> {
    (info.stack == Some(crate::model::Stack::Cross.name())).then_some(CROSS_STACK_NO_SCORES)
}

impl SnippetAnalysis {
    /// Why this analysis's head scores (and the finding built on them) are not shown:
    /// see [`head_scores_withheld`]; `None` when they are meaningful.
    pub fn head_scores_withheld(&self) -> Option<&'static str> {
        head_scores_withheld(&self.trace.model)
    }

    /// Head scores of every gold graph at threshold `t` (no forward pass). Without the
    /// code-token matrices ([`TokenAttention::resident`]) they come from the sweep's grid
    /// (the explorer's thresholds are on it); a threshold off the grid then gets the
    /// analysis threshold's scores, with a warning in the log.
    pub fn scores_at(&self, t: f32) -> BTreeMap<Graph, HeadScores> {
        if !self.token_attention.resident() {
            if let Some(sw) = &self.sweep {
                let grid = relations::threshold_grid();
                if let Some(i) = grid.iter().position(|&g| (g - t).abs() < 1e-6) {
                    return sw.iter().map(|(g, s)| (*g, s[i].clone())).collect();
                }
            }
            tracing::warn!(
                t,
                "scores off the threshold grid need the attention matrices"
            );
            return self.relations.clone();
        }
        self.golds
            .iter()
            .map(|(g, m)| (*g, HeadScores::compute(&self.token_attention, m, t)))
            .collect()
    }

    pub fn layers(&self) -> usize {
        self.token_attention.layers
    }
    pub fn heads(&self) -> usize {
        self.token_attention.heads
    }
    /// Number of analysed tokens (matrix size).
    pub fn n(&self) -> usize {
        self.token_attention.n()
    }
    /// Layer `l`'s code-token attention `[head][i][j]`: the kept matrices' copy, or
    /// recomputed with `model` (the one that made this analysis) from the hidden state
    /// entering the layer — the same numbers either way. An error when neither exists
    /// (results-only analyses of long inputs).
    pub fn layer_matrices(&self, model: &LoadedModel, l: usize) -> Result<Vec<f32>> {
        let ta = &self.token_attention;
        if l >= ta.layers {
            return Err(Error::Compute(format!("layer {} does not exist", l + 1)));
        }
        if ta.resident() {
            let per = ta.heads * ta.n() * ta.n();
            return Ok(ta.data[l * per..(l + 1) * per].to_vec());
        }
        let inp = self.layer_inputs.as_ref().ok_or_else(|| {
            Error::Compute("this analysis kept neither the matrices nor the layer inputs".into())
        })?;
        let att = model.layer_attention(&inp.ids, l, &inp.hidden[l])?;
        let mut out = vec![0.0f32; ta.heads * ta.n() * ta.n()];
        inp.agg.layer_into(&att, ta.heads, &mut out);
        Ok(out)
    }

    /// This analysis with its surprisal and next-token predictions from the LM head of
    /// `model` (the one that made it), run over the kept final hidden state alone
    /// ([`LoadedModel::surprisal_from_final`]): no layer runs again, and the bits are
    /// those a pass with the head gives. An error when the analysis kept no final
    /// hidden state (an encoder, or it was made with the head or by another front end).
    pub fn with_lm_head(
        &self,
        model: &LoadedModel,
        cancel: Option<&(dyn Fn(usize) -> bool + Sync)>,
    ) -> Result<SnippetAnalysis> {
        let start = Instant::now();
        let fh = self
            .final_hidden
            .as_ref()
            .ok_or_else(|| Error::Compute("this analysis kept no final hidden state".into()))?;
        let s = model.surprisal_from_final(&fh.ids, &fh.hidden, cancel)?;
        let mut a = self.clone();
        a.trace.surprisal = Some(s);
        a.surprisal = TokenSurprisal::new(&a.trace, &a.alignment);
        a.elapsed = start.elapsed();
        Ok(a)
    }

    /// Whether the analysed position `k` is an identifier.
    pub fn is_ident(&self, k: usize) -> bool {
        let t = self.token_attention.tokens[k];
        self.tokens[t].coarse == syntax::Coarse::Identifier
    }
}

/// Options of [`analyze`].
#[derive(Debug, Clone, Copy)]
pub struct AnalyzeOptions {
    pub mode: Mode,
    pub threshold: f32,
    pub sweep: bool,
}

impl Default for AnalyzeOptions {
    fn default() -> Self {
        AnalyzeOptions {
            mode: Mode::Source,
            threshold: 0.05,
            sweep: false,
        }
    }
}

/// Which code-token attention matrices an analysis keeps ([`RunOptions::matrices`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Matrices {
    /// Every layer's, always: the input is fitted to
    /// [`crate::model::ModelInfo::window`], the budget over every layer (compare,
    /// twins, anything reading every layer's matrices).
    #[default]
    All,
    /// Only results are read (scores, sweeps, categories, entropy, surprisal, hidden
    /// states): the input may be as long as [`crate::model::ModelInfo::stream_window`]
    /// (one layer's attention within the budget); every layer's matrices are kept when
    /// together they fit the budget, else each is dropped after its layer's results
    /// ([`TokenAttention::resident`] is then false). The headless `analyze` and
    /// `reproduce`.
    IfTheyFit,
    /// As [`Matrices::IfTheyFit`], and when the matrices are dropped the hidden state
    /// entering each layer is kept (and the scores at every grid threshold computed), so
    /// that any layer's matrices can be recomputed ([`SnippetAnalysis::layer_matrices`]):
    /// the explorer.
    OnDemand,
}

/// What recomputes one layer's code-token attention of an analysis whose matrices were
/// not kept: the ids the model ran, the hidden state entering every layer, the
/// subword-to-code-token aggregation.
pub struct LayerInputs {
    pub ids: Vec<u32>,
    /// `[layer][pos * dim + d]`: the hidden state entering each layer (index `l` of the
    /// trace's hidden states, for `l < layers`).
    pub hidden: Vec<Vec<f32>>,
    pub agg: attention::Aggregator,
}

/// The final norm's output of an analysis' forward pass ([`RunOptions::keep_final`]):
/// what the LM head alone turns into surprisal.
pub struct FinalHidden {
    /// The ids the model ran.
    pub ids: Vec<u32>,
    /// `[pos * hidden + d]`.
    pub hidden: Vec<f32>,
}

/// One layer of an analysis in progress, handed to [`RunOptions::on_layer`] as soon as
/// the forward pass has computed it: the same numbers the finished analysis will hold
/// for this layer.
pub struct LayerDone<'a> {
    pub layer: usize,
    pub layers: usize,
    pub heads: usize,
    /// Analysed position → index into `codes` (as [`TokenAttention::tokens`]).
    pub tokens: &'a [usize],
    /// The input's code tokens ([`SnippetAnalysis::tokens`]).
    pub codes: &'a [CodeToken],
    /// This layer's code-token attention `[head][i][j]`.
    pub attention: &'a [f32],
    /// Per graph: the gold graph restricted to the analysed tokens.
    pub golds: &'a BTreeMap<Graph, GoldMask>,
    /// The analysis threshold, that of `scores`.
    pub threshold: f32,
    /// Per graph: every head's score at `threshold`.
    pub scores: BTreeMap<Graph, Vec<Score>>,
    /// Per head: the coarse (2x2) category matrix.
    pub coarse: Vec<CategoryMatrix>,
    /// Per head: mean row entropy (bits).
    pub entropy: &'a [f64],
    /// Every layer's matrices are kept (the finished analysis is
    /// [`TokenAttention::resident`]).
    pub keep: bool,
}

/// What the pipeline computes beyond the attention analyses, and how to stop it.
#[derive(Clone, Copy, Default)]
pub struct RunOptions<'a> {
    /// Causal models: run the LM head (code-token surprisal, next-token predictions).
    pub lm: bool,
    /// Keep code-token hidden states ([`SnippetAnalysis::features`]).
    pub hidden: bool,
    /// Called before each layer of the forward pass (and, with the layer count, before
    /// the LM head); `true` stops it with [`Error::Cancelled`] (the explorer's
    /// latest-wins worker, which also reports progress from it).
    pub cancel: Option<&'a (dyn Fn(usize) -> bool + Sync)>,
    /// Which code-token matrices to keep (and so how long the input may be).
    pub matrices: Matrices,
    /// Causal models analysed without the LM head: keep the final norm's output
    /// ([`SnippetAnalysis::final_hidden`], `n x hidden` floats) so that the head can run
    /// on it alone later (the explorer's `S`).
    pub keep_final: bool,
    /// Called with each layer's results as soon as the forward pass has computed it, in
    /// layer order (the explorer shows layers as they come).
    pub on_layer: Option<&'a (dyn Fn(LayerDone<'_>) + Sync)>,
}

/// Parse a snippet; the syntax layer's refusals become [`Error::Syntax`].
pub fn parse(source: &str, lang: Language) -> Result<Syntax> {
    Ok(syntax::parse(source, lang)?)
}

/// Parse, trace and analyse one snippet: results only ([`Matrices::IfTheyFit`], the
/// headless `analyze` and `reproduce`).
pub fn analyze(
    model: &LoadedModel,
    source: &str,
    lang: Language,
    opts: &AnalyzeOptions,
) -> Result<SnippetAnalysis> {
    let start = Instant::now();
    let syn = Arc::new(parse(source, lang)?);
    let ro = RunOptions {
        matrices: Matrices::IfTheyFit,
        ..Default::default()
    };
    let mut a = run(model, syn, opts, &ro)?;
    a.elapsed = start.elapsed();
    Ok(a)
}

/// Trace and analyse a parsed snippet, layer by layer as the forward pass goes.
pub fn run(
    model: &LoadedModel,
    syn: Arc<Syntax>,
    opts: &AnalyzeOptions,
    ro: &RunOptions,
) -> Result<SnippetAnalysis> {
    let start = Instant::now();
    let input = model_input(&syn, opts.mode)?;
    let info = &model.info;
    let window = match ro.matrices {
        Matrices::All => info.window,
        Matrices::IfTheyFit | Matrices::OnDemand => info.stream_window,
    };
    let enc = model.encode_code(&input.text, window, Some(syn.language))?;
    let alignment = align_subwords(&enc.tokens, &input.tokens);
    let len = enc.tokens.len();
    let n = attention::Aggregator::new(len, &alignment).n();
    let budget = (limits::attention_budget_mb()? as u128) << 20;
    let keep = keep_matrices(ro.matrices, info.layers, info.heads, n, len, budget);
    let on_demand = !keep && ro.matrices == Matrices::OnDemand;
    // Recomputing on demand answers other thresholds from the grid.
    let stream_opts = AnalyzeOptions {
        sweep: opts.sweep || on_demand,
        ..*opts
    };
    let st = stream::LayerStream::new(
        input.gold(&syn),
        &input.tokens,
        &alignment,
        len,
        info.layers,
        info.heads,
        &stream_opts,
        keep,
    );
    tracing::info!(
        subwords = len,
        code_tokens = n,
        truncated = enc.truncated,
        window,
        keep,
        "analysing layer by layer"
    );
    let ids = on_demand.then(|| enc.ids.clone());
    let final_ids = (ro.keep_final && info.causal && !ro.lm).then(|| enc.ids.clone());
    let st = std::sync::Mutex::new(st);
    let codes = &input.tokens;
    let sink = |l: usize, att: Vec<f32>| {
        let mut st = st.lock().unwrap_or_else(|e| e.into_inner());
        st.layer(l, &att)?;
        drop(att);
        if let Some(f) = ro.on_layer {
            f(st.done(l, codes));
        }
        Ok(())
    };
    let last = std::sync::Mutex::new(None);
    let keep_last = |h: Vec<f32>| *last.lock().unwrap_or_else(|e| e.into_inner()) = Some(h);
    let fwd = ForwardOptions {
        hidden: ro.hidden || on_demand,
        cancel: ro.cancel,
        on_attention: Some(&sink),
        on_final: final_ids
            .is_some()
            .then_some(&keep_last as &(dyn Fn(Vec<f32>) + Sync)),
        ..Default::default()
    };
    let mut trace = model.trace_encoded(&input.text, enc, &fwd, ro.lm && info.causal)?;
    let final_hidden = match (
        final_ids,
        last.into_inner().unwrap_or_else(|e| e.into_inner()),
    ) {
        (Some(ids), Some(hidden)) => Some(Arc::new(FinalHidden { ids, hidden })),
        _ => None,
    };
    let done = st
        .into_inner()
        .unwrap_or_else(|e| e.into_inner())
        .finish()?;
    // The hidden states move into the layer inputs (no copy); the code-token features,
    // when asked for, are taken from them first.
    let mut features = None;
    let layer_inputs = match ids {
        Some(ids) => {
            let mut h = trace
                .hidden
                .take()
                .ok_or_else(|| Error::Compute("the model returned no hidden states".into()))?;
            if ro.hidden {
                features = Some(hidden::aligned_hidden(&h, &alignment));
            }
            h.layers.truncate(info.layers);
            Some(Arc::new(LayerInputs {
                ids,
                hidden: h.layers,
                agg: attention::Aggregator::new(len, &alignment),
            }))
        }
        None => None,
    };
    let input_note = input.note().map(str::to_owned);
    let mut a = assemble(syn, input.tokens, trace, alignment, done, opts);
    a.input_note = input_note;
    if layer_inputs.is_some() {
        a.features = features;
        a.layer_inputs = layer_inputs;
    }
    a.final_hidden = final_hidden;
    a.elapsed = start.elapsed();
    Ok(a)
}

/// Whether an analysis keeps every layer's code-token matrices: always with
/// [`Matrices::All`]; otherwise when they (`layers x heads x n^2` f32 for `n` analysed
/// tokens), with the one layer of subword attention that exists while they are made
/// (`heads x len^2`), fit `budget` bytes.
fn keep_matrices(
    m: Matrices,
    layers: usize,
    heads: usize,
    n: usize,
    len: usize,
    budget: u128,
) -> bool {
    let kept = (layers * heads) as u128 * (n as u128 * n as u128) * 4;
    let layer = heads as u128 * (len as u128 * len as u128) * 4;
    m == Matrices::All || kept + layer <= budget
}

/// What the model is fed for one snippet in a [`Mode`].
#[derive(Debug, Clone)]
pub struct ModelInput {
    /// The text the tokenizer sees.
    pub text: String,
    /// The snippet's code tokens with spans in `text` (a token that is not fed, in paper
    /// mode, has an empty span and aligns to no subword).
    pub tokens: Vec<CodeToken>,
    /// Paper mode: the study's input, with the gold graphs of the cleaned snippet.
    pub paper: Option<syntax::PaperInput>,
}

impl ModelInput {
    /// Where the gold graphs come from: the snippet's own in source mode, the cleaned
    /// snippet's in paper mode.
    pub fn gold<'a>(&'a self, syn: &'a Syntax) -> &'a dyn syntax::GoldSource {
        match &self.paper {
            Some(p) if p.cleaned() => p,
            _ => syn,
        }
    }

    /// Why paper mode could not apply the study's cleaning, if it could not.
    pub fn note(&self) -> Option<&str> {
        self.paper.as_ref().and_then(|p| p.note.as_deref())
    }
}

/// The text fed to the model in `mode`, and the code tokens with spans in that text:
/// the source as written, or the study's input ([`syntax::paper_input`]: comments and
/// docstrings removed as the study's code removes them, tokens starting with `#`, `"""`
/// or `'''` dropped, the rest joined by single spaces).
pub fn model_input(syn: &Syntax, mode: Mode) -> Result<ModelInput> {
    let input = match mode {
        Mode::Source => ModelInput {
            text: syn.source.clone(),
            tokens: syn.tokens.clone(),
            paper: None,
        },
        Mode::Paper => {
            let p = syntax::paper_input(syn);
            ModelInput {
                text: p.text.clone(),
                tokens: p.retarget(&syn.tokens),
                paper: Some(p),
            }
        }
    };
    if input.tokens.iter().all(|t| t.end <= t.start) {
        return Err(Error::Syntax("the input has no code tokens".into()));
    }
    Ok(input)
}

/// Subwords of a trace aligned to code tokens by byte overlap (specials to none).
pub fn align_trace(trace: &Trace, tokens: &[CodeToken]) -> Alignment {
    align_subwords(&trace.tokens, tokens)
}

/// Subwords aligned to code tokens by byte overlap (specials to none).
pub fn align_subwords(subwords: &[Subword], tokens: &[CodeToken]) -> Alignment {
    let spans: Vec<SubwordSpan> = subwords
        .iter()
        .map(|s| {
            if s.special {
                SubwordSpan::special()
            } else {
                SubwordSpan::new(s.start, s.end)
            }
        })
        .collect();
    align(&spans, tokens)
}

/// The analyses after the forward pass (the part the 20 ms budget is about), from a
/// finished trace with every layer's attention: its layers go through the same
/// layer-by-layer code as [`run`]'s. `tokens` are [`model_input`]'s for `opts.mode`.
pub fn from_trace(
    syn: Arc<Syntax>,
    tokens: Vec<CodeToken>,
    mut trace: Trace,
    opts: &AnalyzeOptions,
) -> SnippetAnalysis {
    let start = Instant::now();
    let alignment = align_trace(&trace, &tokens);
    let att = std::mem::take(&mut trace.attention.layers);
    let (len, heads) = (trace.attention.len, trace.attention.heads);
    // Paper mode scores against the cleaned snippet's graphs, as `run` does.
    let paper = (opts.mode == Mode::Paper).then(|| syntax::paper_input(&syn));
    let gold: &dyn syntax::GoldSource = match &paper {
        Some(p) if p.cleaned() => p,
        _ => syn.as_ref(),
    };
    let mut st =
        stream::LayerStream::new(gold, &tokens, &alignment, len, att.len(), heads, opts, true);
    for (l, a) in att.iter().enumerate() {
        st.layer(l, a)
            .expect("a trace's layers come in order with their full size");
    }
    drop(att);
    let done = st
        .finish()
        .expect("every layer of the trace was fed to the analysis");
    let mut a = assemble(syn, tokens, trace, alignment, done, opts);
    a.input_note = paper.and_then(|p| p.note);
    a.elapsed = start.elapsed();
    a
}

/// The explorer's gold overlay over `n` analysed tokens: an AST motif or data-flow edge
/// `i -> j` ([`SnippetAnalysis::gold_any`]).
pub fn gold_any(golds: &BTreeMap<Graph, GoldMask>, n: usize) -> Vec<bool> {
    let mut any = vec![false; n * n];
    for g in [Graph::AstMotif, Graph::Dfg] {
        for (o, &b) in any.iter_mut().zip(&golds[&g].mask) {
            *o |= b;
        }
    }
    any
}

/// The [`SnippetAnalysis`] from the layer-by-layer results and what the trace adds
/// (surprisal, hidden states); the trace's subword tensors are dropped.
fn assemble(
    syn: Arc<Syntax>,
    tokens: Vec<CodeToken>,
    mut trace: Trace,
    alignment: Alignment,
    done: stream::Streamed,
    opts: &AnalyzeOptions,
) -> SnippetAnalysis {
    let ta = done.token_attention;
    let golds = done.golds;
    let gold_any = gold_any(&golds, ta.n());
    let coarse_of = |rows: &[CategoryMatrix]| -> Vec<CategoryMatrix> {
        rows.iter().map(CategoryMatrix::coarse_of_fine).collect()
    };
    let coarse: Vec<Vec<CategoryMatrix>> = done.fine.iter().map(|r| coarse_of(r)).collect();
    let coarse_layer = coarse_of(&done.fine_layer);
    let n_all = tokens.len();
    let mut pos = vec![None; n_all];
    for (k, &t) in ta.tokens.iter().enumerate() {
        if t < n_all {
            pos[t] = Some(k);
        }
    }
    let surprisal = TokenSurprisal::new(&trace, &alignment);
    let features = trace
        .hidden
        .as_ref()
        .map(|h| hidden::aligned_hidden(h, &alignment));
    // Everything downstream reads the code-token data: free the subword tensors.
    trace.attention.layers = Vec::new();
    trace.hidden = None;
    SnippetAnalysis {
        mode: opts.mode,
        threshold: opts.threshold,
        coarse,
        fine: done.fine,
        coarse_layer,
        fine_layer: done.fine_layer,
        coarse_all: CategoryMatrix::coarse_of_fine(&done.fine_all),
        fine_all: done.fine_all,
        syntax: syn,
        tokens,
        trace,
        alignment,
        token_attention: ta,
        golds,
        gold_any,
        relations: done.relations,
        sweep: done.sweep,
        entropy: done.entropy,
        pos,
        surprisal,
        features,
        layer_inputs: None,
        final_hidden: None,
        input_note: None,
        elapsed: Duration::ZERO,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matrices_are_kept_while_they_and_one_layer_fit_the_budget() {
        let gib = 2u128 << 30;
        // Gemma 3 (18 x 4) on 8,117 subwords with 2,640 code tokens: 1.87 GiB of
        // matrices plus a 0.98 GiB layer exceed 2 GiB; 1,000 code tokens fit.
        assert!(!keep_matrices(Matrices::IfTheyFit, 18, 4, 2640, 8117, gib));
        assert!(!keep_matrices(Matrices::OnDemand, 18, 4, 2640, 8117, gib));
        assert!(keep_matrices(Matrices::All, 18, 4, 2640, 8117, gib));
        assert!(keep_matrices(Matrices::IfTheyFit, 18, 4, 1000, 8117, gib));
        // Exactly at the budget is kept; one byte less is not.
        let exact = (2 * 3 * 10 * 10 + 3 * 20 * 20) * 4;
        assert!(keep_matrices(Matrices::OnDemand, 2, 3, 10, 20, exact));
        assert!(!keep_matrices(Matrices::OnDemand, 2, 3, 10, 20, exact - 1));
    }
}
