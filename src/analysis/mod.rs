//! Analyses of one traced snippet: code-token attention, category attention, and head
//! scores against the gold relation graphs (METHODS.md sections 1 and 3).
//!
//! This is where `syntax` and `model` meet, through byte spans only. Nothing here holds a
//! tensor: inputs are a [`Syntax`] and a [`Trace`], outputs plain data for the CLI, the
//! exporters and the TUI.

pub mod attention;
pub mod categories;
pub mod relations;
pub mod report;
pub mod reproduce;

use std::collections::BTreeMap;

use rayon::prelude::*;
use serde::Serialize;

use crate::error::{Error, Result};
use crate::model::{ForwardOptions, LoadedModel, Trace};
use crate::syntax::{self, align, Alignment, CodeToken, Language, SubwordSpan, Syntax};
pub use attention::TokenAttention;
pub use categories::CategoryMatrix;
pub use relations::{GoldMask, HeadScores, Score};

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

/// The gold graphs scored, in report order.
pub const GRAPHS: [&str; 4] = ["ast_motif", "syntactic", "syntactic_identifier", "dfg"];

/// Edges of one named gold graph over syntax-token indices, between the given tokens
/// (the analysed window: a huge flat list's motif graph is never listed whole).
pub fn graph_edges(syn: &Syntax, name: &str, tokens: &[usize]) -> Vec<(usize, usize)> {
    match syntax::Graph::from_name(name) {
        Some(g) => syn.graphs.edges_within(g, tokens),
        None => Vec::new(),
    }
}

/// Everything `analyze` reports for one snippet.
pub struct SnippetAnalysis {
    pub mode: Mode,
    pub threshold: f32,
    pub syntax: Syntax,
    /// The code tokens with spans in the text the model saw (= `syntax.tokens` in
    /// source mode, re-spanned into the space-joined text in paper mode).
    pub tokens: Vec<CodeToken>,
    pub trace: Trace,
    pub alignment: Alignment,
    pub token_attention: TokenAttention,
    /// Per graph: scores of every head at `threshold`.
    pub relations: BTreeMap<&'static str, HeadScores>,
    /// Per graph: scores at every threshold of [`relations::threshold_grid`].
    pub sweep: Option<BTreeMap<&'static str, Vec<HeadScores>>>,
    /// `[layer][head]` coarse (2x2) and fine (5x5) category matrices.
    pub coarse: Vec<Vec<CategoryMatrix>>,
    pub fine: Vec<Vec<CategoryMatrix>>,
    /// Per layer, over the head-averaged attention.
    pub coarse_layer: Vec<CategoryMatrix>,
    pub fine_layer: Vec<CategoryMatrix>,
    /// Over all layers and heads.
    pub coarse_all: CategoryMatrix,
    pub fine_all: CategoryMatrix,
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

/// Parse, trace and analyse one snippet.
pub fn analyze(
    model: &LoadedModel,
    source: &str,
    lang: Language,
    opts: &Options,
) -> Result<SnippetAnalysis> {
    analyze_with(model, source, lang, opts, &ForwardOptions::default())
}

/// [`analyze`] with forward-pass options (the TUI's worker passes a cancel hook).
pub fn analyze_with(
    model: &LoadedModel,
    source: &str,
    lang: Language,
    opts: &Options,
    forward: &ForwardOptions,
) -> Result<SnippetAnalysis> {
    let syn = syntax::parse(source, lang).map_err(|e| Error::Syntax(e.to_string()))?;
    let (text, tokens) = model_input(&syn, opts.mode)?;
    let trace = model.trace(&text, forward)?;
    Ok(analyze_trace(syn, tokens, trace, opts))
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
    let spans: Vec<SubwordSpan> = trace
        .tokens
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

/// The analyses after the forward pass (the part the 20 ms budget is about).
pub fn analyze_trace(
    syn: Syntax,
    tokens: Vec<CodeToken>,
    trace: Trace,
    opts: &Options,
) -> SnippetAnalysis {
    let alignment = align_trace(&trace, &tokens);
    let ta = attention::aggregate(&trace.attention, &alignment);
    let n_all = tokens.len();
    let golds: Vec<(&'static str, GoldMask)> = GRAPHS
        .iter()
        .map(|&g| {
            (
                g,
                GoldMask::new(graph_edges(&syn, g, &ta.tokens), &ta.tokens, n_all),
            )
        })
        .collect();
    let relations = golds
        .iter()
        .map(|(g, m)| (*g, HeadScores::compute(&ta, m, opts.threshold)))
        .collect();
    let sweep = opts.sweep.then(|| {
        golds
            .iter()
            .map(|(g, m)| (*g, HeadScores::sweep(&ta, m, &relations::threshold_grid())))
            .collect()
    });
    let fine_cls: Vec<usize> = ta
        .tokens
        .iter()
        .map(|&i| categories::fine_class(&tokens[i]))
        .collect();
    let n = ta.n();
    // Fine matrices in one pass per head; coarse ones derived from their sums.
    let fine: Vec<Vec<CategoryMatrix>> = (0..ta.layers)
        .into_par_iter()
        .map(|l| {
            (0..ta.heads)
                .map(|h| CategoryMatrix::compute(ta.head(l, h), n, &fine_cls, 5))
                .collect()
        })
        .collect();
    let coarse_of = |rows: &[CategoryMatrix]| -> Vec<CategoryMatrix> {
        rows.iter().map(CategoryMatrix::coarse_of_fine).collect()
    };
    let coarse: Vec<Vec<CategoryMatrix>> = fine.iter().map(|r| coarse_of(r)).collect();
    let fine_layer: Vec<CategoryMatrix> = (0..ta.layers)
        .map(|l| CategoryMatrix::compute(&ta.head_mean(l), n, &fine_cls, 5))
        .collect();
    let coarse_layer = coarse_of(&fine_layer);
    let fine_all = CategoryMatrix::compute(&ta.overall_mean(), n, &fine_cls, 5);
    SnippetAnalysis {
        mode: opts.mode,
        threshold: opts.threshold,
        coarse,
        fine,
        coarse_layer,
        fine_layer,
        coarse_all: CategoryMatrix::coarse_of_fine(&fine_all),
        fine_all,
        syntax: syn,
        tokens,
        trace,
        alignment,
        token_attention: ta,
        relations,
        sweep,
    }
}
