//! The syntax layer: source text -> code tokens, gold relation graphs, alignment.
//!
//! Role: everything codescope knows about code *structure*, independent of any model
//! (docs/ARCHITECTURE.md: `syntax` knows nothing of models; it meets the model code in
//! `analysis` through byte spans). It implements docs/METHODS.md sections 1 (code tokens,
//! categories, subword alignment, paper mode) and 2 (AST motif graph, syntactic-only and
//! syntactic-identifier graphs, data-flow graph), plus the tree distance of section 4.
//!
//! Pipeline ([`parse()`]): tree-sitter parse (with a byte limit and a timeout) -> for Java
//! snippets without a class, an internal wrapper (see [`Syntax::wrapped`]) -> code tokens
//! with fine category, coarse category, role and depth (`parse/`) -> graphs
//! (`graph.rs`). [`align()`] maps tokenizer subwords onto the tokens; [`paper_text`]
//! builds the study's input (cleaned, space-joined).
//!
//! Rooms (a third language is one new config in `lang/` and one new file in each of
//! `parse/`, `roles/`, `dfg/`, `clean/` and `rewrite/`, plus its [`Language`] variant):
//! - `lang/`: languages and their rules: one `LanguageRules` per
//!   language (`lang/python.rs`, `lang/java.rs`) with the data the engines read (names,
//!   extensions, grammar, the node kinds each treats specially) and the hooks to the
//!   language's file of each engine; the engines never match on the language;
//! - `token.rs`: the code token, categories and the category rules, role types;
//! - `parse/`: limits, tree-sitter runs, wrappers (each language's in its file), errors
//!   -> [`Syntax`];
//! - `arena.rs`: the flattened tree and the LCA / tree-distance queries;
//! - `roles/{python,java}.rs`: identifier roles per language;
//! - `graph.rs`: the [`Graph`] names and the [`Graphs`] of a snippet;
//! - `motif.rs`: the AST motif graph;
//! - `dfg/`: the data-flow graphs (`study.rs`, `refined.rs`: the engines; `python.rs`,
//!   `java.rs`: each language's rules, a `DfgRules`);
//! - `align.rs`: subword <-> code token alignment; `paper.rs`: paper mode (the study's
//!   cleaned, space-joined input and its gold graphs on the original tokens);
//! - `clean/`: the study's comment and docstring removal (paper mode, `reproduce`), and
//!   AST-Probe's (`probe --probe ast --protocol paper`), one file per language;
//! - `astprobe_tree.rs`: AST-Probe's tree of a text as the paper's pipeline builds it, in
//!   the 2022 grammars' shapes;
//! - `rewrite/`: renamed twins (each language's scope analysis in its file).
//!
//! Invariants (checked by the tests in `tests.rs`):
//! - every offset is a BYTE offset into [`Syntax::source`] (the text the caller passed,
//!   never the wrapped text), and `&source[t.start..t.end] == t.text` for every token;
//! - tokens are in source order, non-overlapping, non-empty; comments are never tokens;
//! - every graph is sorted and deduplicated, with indices into `tokens`; none has self
//!   edges but the study's `dfg` (its loop bodies are walked twice);
//! - the whole layer is linear in the input on any shape (no per-token climb of the tree;
//!   branch states cost their changes; the motif graph is stored as bicliques and listed
//!   per window), within the documented caps (walk depth, loop visit budget, edge limit);
//! - parsing never panics, whatever the input: broken code yields `errors` plus the best
//!   tokens and graphs tree-sitter's error recovery allows.
//!
//! Self-contained on purpose: no `crate::` item outside `crate::syntax` is used, so the
//! module can be mounted in a scratch crate for testing.

mod align;
mod arena;
mod astprobe_tree;
mod clean;
mod dfg;
mod graph;
mod lang;
mod motif;
mod paper;
mod parse;
pub mod rewrite;
mod roles;
mod token;

#[cfg(test)]
mod tests;

use std::fmt::Write as _;

pub use align::{align, Alignment, SubwordSpan};
pub use astprobe_tree::{astprobe_tree, AstProbeTree, ASTPROBE_JAVA_WRAP};
pub use clean::{
    remove_comments_and_docstrings, remove_comments_and_docstrings_astprobe, CleanError,
};
pub use dfg::DfgKind;
pub use graph::{Graph, Graphs, MAX_GRAPH_EDGES};
pub use lang::Language;
pub use paper::{
    paper_input, paper_text, paper_text_of, study_drops, GoldSource, PaperInput, PaperText,
};
pub use parse::{parse, parse_with, Limits, MAX_SOURCE_BYTES};
pub use token::{Binding, Category, Coarse, CodeToken, IdentRole, ParseIssue, Role};

/// Errors of the syntax layer. Broken code is NOT an error (see [`Syntax::errors`]).
#[derive(Debug, thiserror::Error)]
pub enum SyntaxError {
    /// A language name that codescope does not support.
    #[error("unknown language `{0}` (supported: python, java)")]
    UnknownLanguage(String),
    /// The source is larger than [`Limits::max_bytes`].
    #[error("source is {size} bytes, over the limit of {max} bytes")]
    TooLarge {
        /// Size of the source in bytes.
        size: usize,
        /// The limit in force.
        max: usize,
    },
    /// tree-sitter did not finish within [`Limits::timeout`].
    #[error("parsing did not finish within {0:?}")]
    Timeout(std::time::Duration),
    /// A graph has more than [`MAX_GRAPH_EDGES`] edges: a data-flow graph (refused at
    /// parse time), or a motif graph asked to be listed whole (a huge flat literal: the
    /// motif graph is quadratic in the number of siblings; windows of it stay available).
    #[error("a relation graph would have {edges} edges, over the limit of {max}")]
    TooManyEdges {
        /// Number of edges the graph would have (lower bound).
        edges: usize,
        /// The limit in force.
        max: usize,
    },
    /// The grammar could not be loaded (tree-sitter ABI mismatch); a build problem.
    #[error("tree-sitter grammar error: {0}")]
    Grammar(String),
}

/// A parsed snippet: code tokens, gold graphs and parse problems.
///
/// Built by [`parse()`] / [`parse_with`]. All offsets are byte offsets into `source`.
#[derive(Debug, Clone)]
pub struct Syntax {
    /// The snippet's language.
    pub language: Language,
    /// The source text exactly as given.
    pub source: String,
    /// Code tokens in source order (docs/METHODS.md 1).
    pub tokens: Vec<CodeToken>,
    /// Gold relation graphs over `tokens` (docs/METHODS.md 2).
    pub graphs: Graphs,
    /// ERROR and MISSING nodes found by tree-sitter, in source order. Tokens inside an
    /// ERROR node are still tokens.
    pub errors: Vec<ParseIssue>,
    /// Byte spans of comments (excluded from tokens).
    pub comments: Vec<(usize, usize)>,
    /// True when the snippet was parsed inside a synthetic wrapper. Java without any
    /// top-level type declaration (or package/import) is tried as `class __W { <source> }`
    /// (methods, fields, constructors) and as `class __W { void __m() { <source> } }`
    /// (statements); Python made only of `def`s taking `self`/`cls` first (methods
    /// pasted out of a class) is tried as `class __W:` + source. The candidate with the
    /// fewest parse errors wins (ties: class, method, then unwrapped). Wrapper tokens are
    /// dropped, spans map back to `source`, and depths count from the wrapper's body
    /// node (class body or method block), which plays the root (depth 0), so a wrapped
    /// method has the depths it would have at the top of a file.
    pub wrapped: bool,
    /// Parent links and depths of the (rebased) syntax tree, for LCA queries.
    tree: arena::TreeInfo,
}

/// The lowest common ancestor of two code tokens.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Lca {
    /// Depth of the ancestor (root = 0).
    pub depth: usize,
    /// Its tree-sitter node kind (e.g. `binary_operator`), or the kind of the token
    /// itself when both tokens are the same.
    pub kind: &'static str,
}

impl Syntax {
    /// Tree distance between code tokens `i` and `j`:
    /// `depth(i) + depth(j) - 2 * depth(LCA(i, j))` (docs/METHODS.md 4). `0` when `i == j`.
    ///
    /// # Panics
    /// If `i` or `j` is not a token index.
    pub fn tree_distance(&self, i: usize, j: usize) -> usize {
        let lca = self.tree.lca(i, j);
        self.tokens[i].depth + self.tokens[j].depth - 2 * lca.depth
    }

    /// The lowest common ancestor of tokens `i` and `j` (depth and node kind), e.g. for
    /// AST-Probe style targets (docs/METHODS.md 4).
    ///
    /// # Panics
    /// If `i` or `j` is not a token index.
    pub fn lca(&self, i: usize, j: usize) -> Lca {
        self.tree.lca(i, j)
    }

    /// The syntax-tree ancestors of token `i` as (node id, node kind), its parent first
    /// and the root (the wrapper's body node for wrapped snippets) last. Node ids are
    /// stable within this `Syntax` and shared by tokens with a common ancestor, so the
    /// tree over any subset of tokens can be rebuilt from them (AST-Probe,
    /// `probe::astprobe`).
    ///
    /// # Panics
    /// If `i` is not a token index.
    pub fn ancestors(&self, i: usize) -> Vec<(u32, &'static str)> {
        self.tree.ancestors(i)
    }

    /// Index of the token whose span contains byte `offset`, if any.
    pub fn token_at(&self, offset: usize) -> Option<usize> {
        let k = self.tokens.partition_point(|t| t.end <= offset);
        (k < self.tokens.len() && self.tokens[k].start <= offset).then_some(k)
    }

    /// Indices of identifier tokens (coarse category `identifier`).
    pub fn identifier_indices(&self) -> Vec<usize> {
        (0..self.tokens.len())
            .filter(|&i| self.tokens[i].coarse == Coarse::Identifier)
            .collect()
    }

    /// The JSON export, exactly:
    /// `{"language", "tokens": [{text,start,end,kind,category,coarse,role,depth}],
    ///   "graphs": {"ast_motif": [[i,j]], "syntactic": [[i,j]],
    ///   "syntactic_identifier": [[i,j]], "dfg": [[i,j,"comesFrom"|"computedFrom"]],
    ///   "dfg_refined": [[i,j,kind]]}, "errors": [{start,end,message}]}` (keys sorted).
    ///
    /// # Errors
    /// [`SyntaxError::TooManyEdges`] when the motif graph has more than
    /// [`MAX_GRAPH_EDGES`] edges (a huge flat literal): too many to list.
    pub fn to_json(&self) -> Result<serde_json::Value, SyntaxError> {
        self.graphs.check_listable()?;
        Ok(serde_json::json!({
            "language": self.language,
            "tokens": self.tokens,
            "graphs": self.graphs,
            "errors": self.errors,
        }))
    }

    /// A readable token table (index, byte span, depth, category, kind, role, text).
    /// With `color`, the category and text are coloured with ANSI 256-colour codes.
    pub fn render_table(&self, color: bool) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "{:>5}  {:>13}  {:>5}  {:<10}  {:<22}  {:<22}  text",
            "#", "bytes", "depth", "category", "kind", "role"
        );
        for (i, t) in self.tokens.iter().enumerate() {
            let text = display_text(&t.text, 48);
            let cat = t.category.name();
            let (pre, post) = if color {
                (format!("\x1b[38;5;{}m", t.category.ansi256()), "\x1b[0m")
            } else {
                (String::new(), "")
            };
            let _ = writeln!(
                out,
                "{:>5}  {:>13}  {:>5}  {pre}{:<10}{post}  {:<22}  {:<22}  {pre}{}{post}",
                i,
                format!("{}..{}", t.start, t.end),
                t.depth,
                cat,
                clip(&t.kind, 22),
                t.role.as_deref().unwrap_or("-"),
                text,
            );
        }
        for e in &self.errors {
            let _ = writeln!(out, "error {}..{}: {}", e.start, e.end, e.message);
        }
        out
    }
}

/// Escape control characters and clip to `max` chars, for one-line display.
fn display_text(text: &str, max: usize) -> String {
    let escaped: String = text.escape_debug().collect();
    clip(&escaped, max)
}

fn clip(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        s.to_string()
    } else {
        let mut c: String = s.chars().take(max.saturating_sub(1)).collect();
        c.push('…');
        c
    }
}
