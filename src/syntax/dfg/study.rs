//! The engine of the study's data-flow graph: GraphCodeBERT's `DFG_python` / `DFG_java`
//! (`attention/dfg/DFG.py` in the study's repository, unchanged from GraphCodeBERT) as the
//! study's `get_dfg_adj` (`attention/dfg_comp.py`) turns them into an adjacency matrix,
//! ported edge for edge. The per-language rules are in `python.rs` and `java.rs`
//! (`impl Study`); this file holds what both share.
//!
//! What the Python code does, and how it is kept here:
//! - tokens are `tree_to_token_index` leaves (a string node is one leaf); a leaf whose
//!   node type equals its text (`def`, `(`, `=`) takes no part; any other leaf reads the
//!   current definitions of its text (`comesFrom` each), and an `identifier` leaf with
//!   none becomes its text's definition. Literals, attribute names and keyword-argument
//!   names are leaves like any other (`x = 0` gives `x <- 0`);
//! - a leaf's text is what `index_to_code_token` slices out of the source's lines: byte
//!   columns used as character indices, line breaks of a multi-line token dropped. On
//!   ASCII lines that is the token's text; after a non-ASCII character on the same line
//!   it is not, and the study's graph follows the shifted text, so this port does too
//!   (`Lines::study_text`);
//! - `states` (text -> definition tokens) is threaded through the walk and copied at
//!   every branch; here it is one map with an undo log (`state.rs`): a branch is run,
//!   its changes are taken as a diff and undone, and the branches' diffs are merged the
//!   way `DFG_python` merges its state copies (per text, the union of the branch ends).
//!   A walk costs the size of the tree and of the changes, not of the state;
//! - loop bodies are walked twice (`for i in range(2)`); the study's code does that
//!   recursively, so k nested loops walk their innermost body 2^k times. A visit budget
//!   ([`VISIT_BUDGET_PER_NODE`] times the nodes) bounds hostile nesting: past it, loops
//!   are walked once (no real code comes near it);
//! - the adjacency matrix has an edge `i -> j` for every `(i, ..., [j, ...])` entry of
//!   the DFG list, self edges included (a use in a loop body walked twice can come from
//!   itself). Each edge keeps its relation; a pair can have both.
//!
//! Deviations, only where the study's code has no answer: it recurses once per tree
//! level (Python stops at about 1,000), here subtrees deeper than [`MAX_DEPTH`] add no
//! edges; a missing field that would make it raise (broken code) is skipped.

use std::borrow::Cow;
use std::collections::HashMap;

use super::super::arena::{Arena, NONE};
use super::super::graph::MAX_GRAPH_EDGES;
use super::super::lang::Language;
use super::super::token::CodeToken;
use super::super::SyntaxError;
use super::state::States;
use super::{DfgKind, DfgRules};

/// Deepest tree level the walk follows.
pub(super) const MAX_DEPTH: usize = 1500;
/// Loops are walked twice while the walk has made fewer visits than this many per node.
pub(super) const VISIT_BUDGET_PER_NODE: usize = 64;

/// The walk's state.
pub(super) struct Study<'a> {
    pub a: &'a Arena,
    /// The language's rules (its walk, its leaf types).
    rules: &'static DfgRules,
    /// Per token: the symbol of its study text.
    sym: Vec<u32>,
    /// Per token: its node type equals its text (keywords, punctuation): no part.
    skip: Vec<bool>,
    /// Per token: node type `identifier` (the only type that defines on first use).
    ident: Vec<bool>,
    /// Per node: the token range of its subtree (tokens are in preorder).
    tok_range: Vec<(u32, u32)>,
    pub states: States,
    edges: Vec<(usize, usize, DfgKind)>,
    depth: usize,
    visits: usize,
    budget: usize,
    pub too_many: Option<usize>,
}

/// The source's lines, for slicing tokens the way `index_to_code_token` does.
struct Lines<'s> {
    source: &'s str,
    /// Byte offset of each line start.
    starts: Vec<usize>,
    ascii: Vec<bool>,
    /// Byte offset of every character of a non-ASCII line (and its end), built on demand.
    chars: HashMap<usize, Vec<usize>>,
}

impl<'s> Lines<'s> {
    fn new(source: &'s str) -> Self {
        let starts: Vec<usize> = std::iter::once(0)
            .chain(source.match_indices('\n').map(|(i, _)| i + 1))
            .collect();
        let mut l = Lines {
            source,
            ascii: Vec::with_capacity(starts.len()),
            starts,
            chars: HashMap::new(),
        };
        for r in 0..l.starts.len() {
            let ascii = l.line(r).is_ascii();
            l.ascii.push(ascii);
        }
        l
    }

    /// Line `r` without its `\n`.
    fn line(&self, r: usize) -> &'s str {
        let a = self.starts[r];
        let b = self.starts.get(r + 1).map_or(self.source.len(), |&x| x - 1);
        &self.source[a..b]
    }

    fn row(&self, byte: usize) -> usize {
        self.starts.partition_point(|&x| x <= byte) - 1
    }

    /// Python's `line[from:to]` with character indices (clamped), `to = None` for the end.
    fn slice(&mut self, r: usize, from: usize, to: Option<usize>) -> &'s str {
        let l = self.line(r);
        if self.ascii[r] {
            let to = to.unwrap_or(l.len()).min(l.len());
            return l.get(from.min(to)..to).unwrap_or("");
        }
        let offs = self.chars.entry(r).or_insert_with(|| {
            l.char_indices()
                .map(|(i, _)| i)
                .chain(std::iter::once(l.len()))
                .collect()
        });
        let n = offs.len() - 1;
        let to = to.unwrap_or(n).min(n);
        let from = from.min(to);
        &l[offs[from]..offs[to]]
    }

    /// `index_to_code_token` of the study for the token at bytes `s..e`: its lines sliced
    /// with its byte columns used as character indices; line breaks inside dropped.
    fn study_text(&mut self, s: usize, e: usize) -> Cow<'s, str> {
        let (sr, er) = (self.row(s), self.row(e));
        let (sc, ec) = (s - self.starts[sr], e - self.starts[er]);
        if sr == er {
            return Cow::Borrowed(self.slice(sr, sc, Some(ec)));
        }
        let mut out = self.slice(sr, sc, None).to_string();
        for r in sr + 1..er {
            out.push_str(self.line(r));
        }
        out.push_str(self.slice(er, 0, Some(ec)));
        Cow::Owned(out)
    }
}

impl<'a> Study<'a> {
    pub fn new(a: &'a Arena, source: &str, tokens: &[CodeToken], lang: Language) -> Self {
        let mut lines = Lines::new(source);
        let mut syms: HashMap<Cow<'_, str>, u32> = HashMap::new();
        let mut sym = Vec::with_capacity(tokens.len());
        let mut skip = Vec::with_capacity(tokens.len());
        let mut ident = Vec::with_capacity(tokens.len());
        let mut node_of = vec![NONE; tokens.len()];
        for (n, node) in a.nodes.iter().enumerate() {
            if node.token != NONE {
                node_of[node.token as usize] = n as u32;
            }
        }
        let rules = lang.rules().dfg;
        let leaf_types = (rules.study_leaf_types)(a);
        for (t, tok) in tokens.iter().enumerate() {
            let text = lines.study_text(tok.start, tok.end);
            let kind = match node_of[t] {
                NONE => tok.kind.as_str(),
                n => leaf_types
                    .get(n as usize)
                    .copied()
                    .flatten()
                    .unwrap_or(a.kind(n)),
            };
            skip.push(kind == text);
            ident.push(kind == "identifier");
            let next = syms.len() as u32;
            sym.push(*syms.entry(text).or_insert(next));
        }
        // Token ranges of every subtree: preorder, so a subtree is a contiguous range.
        let n = a.nodes.len();
        let mut tok_range = vec![(u32::MAX, 0u32); n];
        for i in (0..n).rev() {
            let node = &a.nodes[i];
            let (mut lo, mut hi) = tok_range[i];
            if node.token != NONE {
                lo = lo.min(node.token);
                hi = hi.max(node.token + 1);
            }
            tok_range[i] = (lo, hi);
            if node.parent != NONE {
                let p = &mut tok_range[node.parent as usize];
                p.0 = p.0.min(lo);
                p.1 = p.1.max(hi);
            }
        }
        Study {
            a,
            rules,
            sym,
            skip,
            ident,
            tok_range,
            states: States::default(),
            edges: Vec::new(),
            depth: 0,
            visits: 0,
            budget: VISIT_BUDGET_PER_NODE.saturating_mul(n).max(100_000),
            too_many: None,
        }
    }

    /// Run the walk from `root`; the sorted, deduplicated edges.
    pub fn run(mut self, root: u32) -> Result<Vec<(usize, usize, DfgKind)>, SyntaxError> {
        self.visit(root);
        if let Some(edges) = self.too_many {
            return Err(SyntaxError::TooManyEdges {
                edges,
                max: MAX_GRAPH_EDGES,
            });
        }
        self.edges.sort_unstable();
        self.edges.dedup();
        Ok(self.edges)
    }

    pub fn edge(&mut self, i: usize, j: usize, kind: DfgKind) {
        self.edges.push((i, j, kind));
        if self.edges.len() > 2 * MAX_GRAPH_EDGES {
            self.edges.sort_unstable();
            self.edges.dedup();
            if self.edges.len() > MAX_GRAPH_EDGES {
                self.too_many = Some(self.edges.len());
                self.edges.clear();
            }
        }
    }

    /// Children in the study's grammar (see [`Arena::view_children`]).
    pub fn kids(&self, n: u32) -> Cow<'a, [u32]> {
        let a = self.a;
        let direct = a.children(n);
        if direct.iter().any(|&c| a.nodes[c as usize].transparent) {
            let mut v = Vec::with_capacity(direct.len() + 2);
            a.view_children(n, &mut v);
            Cow::Owned(v)
        } else {
            Cow::Borrowed(direct)
        }
    }

    /// `tree_to_variable_index`: the tokens under `n` whose type is not their text.
    pub fn vars(&self, n: u32) -> Vec<usize> {
        let (lo, hi) = self.tok_range[n as usize];
        (lo..hi.max(lo))
            .map(|t| t as usize)
            .filter(|&t| !self.skip[t])
            .collect()
    }

    /// Whether loops may still be walked twice.
    pub fn twice(&self) -> usize {
        if self.visits < self.budget {
            2
        } else {
            1
        }
    }

    pub fn visit(&mut self, n: u32) {
        if self.depth >= MAX_DEPTH || self.too_many.is_some() {
            return;
        }
        self.visits += 1;
        self.depth += 1;
        if self.a.is_leaf(n) {
            if let Some(t) = self.a.token(n) {
                self.leaf(t);
            }
        } else {
            (self.rules.study_visit)(self, n);
        }
        self.depth -= 1;
    }

    /// The leaf rule shared by both languages.
    fn leaf(&mut self, t: usize) {
        if self.skip[t] {
            return;
        }
        let s = self.sym[t] as u64;
        match self.states.get(s) {
            Some(defs) => {
                let defs = defs.clone();
                for d in defs {
                    self.edge(t, d as usize, DfgKind::ComesFrom);
                }
            }
            None => {
                if self.ident[t] {
                    self.states.set(s, vec![t as u32]);
                }
            }
        }
    }

    /// The generic rule: children in order (`first` kinds before the others, DFG_python's
    /// `do_first_statement`).
    pub fn children(&mut self, n: u32, first: &[&str]) {
        let kids = self.kids(n);
        if !first.is_empty() {
            for &c in kids.iter() {
                if first.contains(&self.a.kind(c)) {
                    self.visit(c);
                }
            }
        }
        for &c in kids.iter() {
            if !first.contains(&self.a.kind(c)) {
                self.visit(c);
            }
        }
    }

    /// Every target token gets `kind` edges to every source token; each target becomes
    /// its text's only definition.
    pub fn assign(&mut self, targets: &[usize], sources: &[usize], kind: DfgKind) {
        if targets.len().saturating_mul(sources.len()) > MAX_GRAPH_EDGES {
            self.too_many = Some(targets.len() * sources.len());
            return;
        }
        for &t in targets {
            for &s in sources {
                self.edge(t, s, kind);
            }
            self.states.set(self.sym[t] as u64, vec![t as u32]);
        }
    }

    /// `variable_declarator` / `default_parameter`: the name's tokens `comesFrom` the
    /// value's; without a value they only become definitions.
    pub fn declarator(&mut self, name: Option<u32>, value: Option<u32>) {
        let Some(name) = name else { return };
        match value {
            None => {
                for t in self.vars(name) {
                    self.states.set(self.sym[t] as u64, vec![t as u32]);
                }
            }
            Some(v) => {
                let targets = self.vars(name);
                let sources = self.vars(v);
                self.visit(v);
                self.assign(&targets, &sources, DfgKind::ComesFrom);
            }
        }
    }

    /// The `if_statement` rule: the if-part on the current state, each of `alternatives`
    /// on the state before the statement, then the union of their ends (plus the state
    /// before when `fall_through`).
    pub fn branches(&mut self, main: &[u32], alternatives: &[u32], fall_through: bool) {
        let m = self.states.open();
        for &c in main {
            self.visit(c);
        }
        let mut diffs = vec![self.states.take_diff(m)];
        for &c in alternatives {
            self.visit(c);
            diffs.push(self.states.take_diff(m));
        }
        let marks = vec![m; diffs.len()];
        self.states.close();
        self.states.merge(&marks, diffs, fall_through);
    }
}
