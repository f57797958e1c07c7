//! THE analysis pipeline: every front end (the CLI's `analyze`, the explorer's worker,
//! `reproduce`, the probes' features, comparisons) runs a snippet through here.
//!
//! `source text -> parse (syntax) -> model input for the mode -> trace (model) -> align
//! subwords to code tokens -> code-token attention -> category attention, gold masks and
//! head scores per graph, entropy, code-token surprisal, code-token hidden states`
//! ([`analyze`] = [`parse`] + [`run`]; [`from_trace`] is everything after the forward).
//! Where each number is computed:
//! - code-token attention and hidden states: [`attention`] (METHODS.md 1);
//! - gold masks, P/R/F1/GED per head, threshold sweeps: [`relations`] (METHODS.md 3);
//! - category attention (2x2, 5x5): [`categories`];
//! - attention entropy: [`entropy`];
//! - code-token surprisal and perplexity: [`surprisal`] (METHODS.md 5);
//! - code-token hidden states for probes: [`hidden`];
//! - a snippet against its counterfactual twin (renamed or edited): [`compare`];
//! - per-head thumbnails of the model overview: [`overview`];
//! - output forms (JSON, CSV, text): [`report`]; corpus tables: [`reproduce`].
//!
//! Layer by layer: [`run`] hands the forward pass a per-layer sink, so each layer's
//! subword attention is turned into its code-token attention and every per-head result
//! (scores, sweeps, categories, entropy) while it exists, then dropped (`stream.rs`); at
//! most one layer's subword attention exists at a time. The code-token matrices of every
//! layer are kept when they fit the attention budget (`CODESCOPE_ATTENTION_BUDGET_MB`) or
//! when the caller reads them (the explorer, compare, figures: then the input is fitted
//! to [`crate::model::ModelInfo::window`], the budget over every layer); with
//! [`RunOptions::scores_only`] an input up to
//! [`crate::model::ModelInfo::stream_window`] is analysed whole and matrices that do
//! not fit are dropped after their layer's results. [`from_trace`] feeds a finished
//! trace's layers through the same code: both give identical numbers.
//!
//! This is where `syntax` and `model` meet, through byte spans only. Nothing here holds a
//! tensor: inputs are a [`Syntax`] and a [`Trace`], outputs plain data. The subword
//! attention and hidden states of the trace are dropped once the code-token data is
//! derived (nothing downstream reads them; they are the bulk of a trace's memory).

pub mod attention;
pub mod categories;
pub mod compare;
pub mod entropy;
pub mod hidden;
pub mod overview;
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

/// What text the model is fed (METHODS.md section 1).
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
    /// Per graph: scores at every threshold of [`relations::threshold_grid`].
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
    /// Wall time of the pipeline (the parse when it parsed, forward, analyses).
    pub elapsed: Duration,
}

impl SnippetAnalysis {
    /// Head scores of every gold graph at threshold `t` (no forward pass). Needs the
    /// code-token matrices ([`TokenAttention::resident`]; the explorer's analyses always
    /// hold them): without them only the analysis threshold's scores exist, and those
    /// are returned (with a warning in the log).
    pub fn scores_at(&self, t: f32) -> BTreeMap<Graph, HeadScores> {
        if !self.token_attention.resident() {
            tracing::warn!(t, "scores at another threshold need the attention matrices");
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
    /// Whether the analysed position `k` is an identifier.
    pub fn is_ident(&self, k: usize) -> bool {
        let t = self.token_attention.tokens[k];
        self.tokens[t].coarse == syntax::Coarse::Identifier
    }
}

/// Options of [`analyze`].
#[derive(Debug, Clone, Copy)]
pub struct Options {
    pub mode: Mode,
    pub threshold: f32,
    pub sweep: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            mode: Mode::Source,
            threshold: 0.05,
            sweep: false,
        }
    }
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
    /// The caller reads only the per-head results (scores, sweeps, categories, entropy,
    /// surprisal, hidden states), not the code-token attention matrices: the input may
    /// then be as long as the model's streaming window
    /// ([`crate::model::ModelInfo::stream_window`]: one layer's attention within the
    /// budget), and when every layer's code-token matrices together exceed the attention
    /// budget they are dropped after each layer's results
    /// ([`TokenAttention::resident`] is then false).
    pub scores_only: bool,
}

/// Parse a snippet; the syntax layer's refusals become [`Error::Syntax`].
pub fn parse(source: &str, lang: Language) -> Result<Syntax> {
    Ok(syntax::parse(source, lang)?)
}

/// Parse, trace and analyse one snippet: results only ([`RunOptions::scores_only`], the
/// headless `analyze` and `reproduce`).
pub fn analyze(
    model: &LoadedModel,
    source: &str,
    lang: Language,
    opts: &Options,
) -> Result<SnippetAnalysis> {
    let start = Instant::now();
    let syn = Arc::new(parse(source, lang)?);
    let ro = RunOptions {
        scores_only: true,
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
    opts: &Options,
    ro: &RunOptions,
) -> Result<SnippetAnalysis> {
    let start = Instant::now();
    let (text, tokens) = model_input(&syn, opts.mode)?;
    let info = &model.info;
    let window = if ro.scores_only {
        info.stream_window
    } else {
        info.window
    };
    let enc = model.encode(&text, window)?;
    let alignment = align_subwords(&enc.tokens, &tokens);
    let len = enc.tokens.len();
    let mut st = stream::LayerStream::new(
        &syn,
        &tokens,
        &alignment,
        len,
        info.layers,
        info.heads,
        opts,
        true,
    );
    if ro.scores_only {
        // Keep the matrices only when all of them fit the budget.
        let bytes = (info.layers * info.heads) as u128 * (st.n() * st.n()) as u128 * 4;
        let budget = (limits::attention_budget_mb()? as u128) << 20;
        if bytes > budget {
            tracing::info!(
                code_tokens = st.n(),
                mib = (bytes >> 20) as u64,
                "code-token attention matrices exceed the budget: kept per layer only"
            );
            st = stream::LayerStream::new(
                &syn,
                &tokens,
                &alignment,
                len,
                info.layers,
                info.heads,
                opts,
                false,
            );
        }
    }
    tracing::info!(
        subwords = len,
        code_tokens = st.n(),
        truncated = enc.truncated,
        window,
        "analysing layer by layer"
    );
    let st = std::sync::Mutex::new(st);
    let sink =
        |l: usize, att: Vec<f32>| st.lock().unwrap_or_else(|e| e.into_inner()).layer(l, &att);
    let fwd = ForwardOptions {
        hidden: ro.hidden,
        cancel: ro.cancel,
        on_attention: Some(&sink),
        partial: None,
    };
    let trace = model.trace_encoded(&text, enc, &fwd, ro.lm && info.causal)?;
    let done = st
        .into_inner()
        .unwrap_or_else(|e| e.into_inner())
        .finish()?;
    let mut a = assemble(syn, tokens, trace, alignment, done, opts);
    a.elapsed = start.elapsed();
    Ok(a)
}

/// The text fed to the model in `mode`, and the code tokens with spans in that text.
pub fn model_input(syn: &Syntax, mode: Mode) -> Result<(String, Vec<CodeToken>)> {
    let (text, tokens) = match mode {
        Mode::Source => (syn.source.clone(), syn.tokens.clone()),
        Mode::Paper => {
            let p = syntax::paper_text(syn);
            let toks = p.retarget(&syn.tokens);
            (p.text, toks)
        }
    };
    if tokens.is_empty() {
        return Err(Error::Syntax("the input has no code tokens".into()));
    }
    Ok((text, tokens))
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
/// layer-by-layer code as [`run`]'s.
pub fn from_trace(
    syn: Arc<Syntax>,
    tokens: Vec<CodeToken>,
    mut trace: Trace,
    opts: &Options,
) -> SnippetAnalysis {
    let start = Instant::now();
    let alignment = align_trace(&trace, &tokens);
    let att = std::mem::take(&mut trace.attention.layers);
    let (len, heads) = (trace.attention.len, trace.attention.heads);
    let mut st =
        stream::LayerStream::new(&syn, &tokens, &alignment, len, att.len(), heads, opts, true);
    for (l, a) in att.iter().enumerate() {
        st.layer(l, a)
            .expect("a trace's layers come in order with their full size");
    }
    drop(att);
    let done = st
        .finish()
        .expect("every layer of the trace was fed to the analysis");
    let mut a = assemble(syn, tokens, trace, alignment, done, opts);
    a.elapsed = start.elapsed();
    a
}

/// The [`SnippetAnalysis`] from the layer-by-layer results and what the trace adds
/// (surprisal, hidden states); the trace's subword tensors are dropped.
fn assemble(
    syn: Arc<Syntax>,
    tokens: Vec<CodeToken>,
    mut trace: Trace,
    alignment: Alignment,
    done: stream::Streamed,
    opts: &Options,
) -> SnippetAnalysis {
    let ta = done.token_attention;
    let golds = done.golds;
    let mut gold_any = vec![false; ta.n() * ta.n()];
    for g in [Graph::AstMotif, Graph::Dfg] {
        for (o, &b) in gold_any.iter_mut().zip(&golds[&g].mask) {
            *o |= b;
        }
    }
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
        elapsed: Duration::ZERO,
    }
}
