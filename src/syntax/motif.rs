//! The AST motif graph (docs/METHODS.md 2.1), stored compactly and expanded on demand.
//!
//! The study's `traverse_node` (`attention/graph_utils.py`, stg-tud/code-LLM-critical-
//! evaluation) gives token t with parent P the edges `t -> u` for every u that is another
//! leaf child of P, or a leaf child of a non-leaf sibling S of t whose kind is not
//! `block`. So all tokens with the same parent P share one target set `C_P` (the leaf
//! children of P and the leaf grandchildren under P's non-leaf, non-`block` children), and
//! the graph is a union of bicliques `rows(P) x C_P` minus the diagonal. That is what
//! [`Motif`] stores: O(tokens) memory, whatever the graph's size (a flat list of n
//! elements has about 4n^2 edges; its window of 512 tokens at most 512^2).
//!
//! The tree is the study's view of today's tree ([`super::arena::Arena::view_parent`]):
//! `is not` / `not in` are two keyword children of the comparison, `list[int]` is a
//! subscript. Python strings follow the study's grammar, in which a string had quote
//! children: the string is not a leaf (its siblings do not see it as one), its opening
//! quote is (so the siblings of the string see the string token one level down), and the
//! string token's own targets are the other pieces of the string, none of which is a token
//! after the study merged them (`get_ast_tokens_and_prog_graphs`): incoming edges only.
//! A triple-quoted string's opening `"""` is dropped by the study's `exclude_token` (its
//! pipeline then fails on the snippet, which the study skipped); codescope keeps it like
//! any other string. Java strings were single leaves in the grammar of the time and are
//! leaves here. Comments and zero-width MISSING leaves are not tokens, so they take part
//! in no edge.
//!
//! Invariants: every token has at most one row group and at most two column groups
//! (its parent's, and its grandparent's when the parent is not a `block`); column lists
//! are sorted; expanded edge lists are sorted, deduplicated and have no self edge.

use std::collections::HashMap;

use super::arena::{Arena, NONE};
use super::lang::Language;

/// Which edges of the motif graph to list (the full graph or one of its two derived
/// graphs, docs/METHODS.md 2.2 and 2.4).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum MotifPart {
    /// Every edge.
    All,
    /// Edges between two non-identifier tokens.
    Syntactic,
    /// Edges with exactly one identifier end.
    SyntacticIdentifier,
}

impl MotifPart {
    fn keeps(self, id_i: bool, id_j: bool) -> bool {
        match self {
            MotifPart::All => true,
            MotifPart::Syntactic => !id_i && !id_j,
            MotifPart::SyntacticIdentifier => id_i != id_j,
        }
    }
}

/// The motif graph as bicliques: token i's targets are `cols(row_group[i])` minus i.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Motif {
    /// Row group of each token, or [`NONE`] (a token with no parent).
    row_group: Vec<u32>,
    /// Column groups of each token ([`NONE`] when absent).
    col_groups: Vec<[u32; 2]>,
    /// Token lists of every group's columns, sorted: `cols[col_start[g]..col_start[g+1]]`.
    col_start: Vec<u32>,
    cols: Vec<u32>,
    /// Identifier tokens (for the syntactic / syntactic-identifier parts).
    is_id: Vec<bool>,
}

impl Motif {
    /// Build from the arena: `token_node[i]` is token i's node (leaf or collapsed string).
    pub fn new(a: &Arena, token_node: &[u32], is_id: Vec<bool>, lang: Language) -> Self {
        let quoted_strings = lang.study_string_has_quotes();
        let n = token_node.len();
        // Node -> group index (or NONE), assigned in order of first use to nodes that are
        // some token's row parent. Indexed by node: the arena's ids are dense.
        let mut group_of = vec![NONE; a.nodes.len()];
        let mut groups = 0u32;
        let mut row_group = vec![NONE; n];
        // (row node, column node-level): for each token, the node whose "leaf children"
        // it is (level 0) and the node it is a grandchild leaf of (level 1).
        let mut col_nodes = vec![[NONE; 2]; n];
        for (i, &x) in token_node.iter().enumerate() {
            let string = quoted_strings && a.kind(x) == "string";
            // A Python string plays its own opening quote: a leaf child of the string.
            let leaf_parent = if string { Some(x) } else { a.view_parent(x) };
            let Some(p) = leaf_parent else { continue };
            let g = &mut group_of[p as usize];
            if *g == NONE {
                *g = groups;
                groups += 1;
            }
            row_group[i] = *g;
            col_nodes[i][0] = p;
            if a.kind(p) != "block" {
                if let Some(gp) = a.view_parent(p) {
                    col_nodes[i][1] = gp;
                }
            }
        }
        // Column memberships only matter for groups that have rows.
        let groups = groups as usize;
        let mut col_groups = vec![[NONE; 2]; n];
        let mut count = vec![0u32; groups + 1];
        for i in 0..n {
            for (k, &node) in col_nodes[i].iter().enumerate() {
                if node == NONE {
                    continue;
                }
                let g = group_of[node as usize];
                if g != NONE {
                    col_groups[i][k] = g;
                    count[g as usize] += 1;
                }
            }
        }
        let mut col_start = vec![0u32; groups + 1];
        for g in 0..groups {
            col_start[g + 1] = col_start[g] + count[g];
        }
        let mut fill = col_start.clone();
        let mut cols = vec![0u32; col_start[groups] as usize];
        // Tokens in index order: every column list comes out sorted.
        for (i, gs) in col_groups.iter().enumerate() {
            for &g in gs {
                if g != NONE {
                    cols[fill[g as usize] as usize] = i as u32;
                    fill[g as usize] += 1;
                }
            }
        }
        Motif {
            row_group,
            col_groups,
            col_start,
            cols,
            is_id,
        }
    }

    fn cols_of(&self, g: u32) -> &[u32] {
        let g = g as usize;
        &self.cols[self.col_start[g] as usize..self.col_start[g + 1] as usize]
    }

    /// Is `i -> j` an edge of `part`?
    pub fn contains(&self, part: MotifPart, i: usize, j: usize) -> bool {
        if i == j || i >= self.row_group.len() || j >= self.row_group.len() {
            return false;
        }
        let g = self.row_group[i];
        g != NONE && self.col_groups[j].contains(&g) && part.keeps(self.is_id[i], self.is_id[j])
    }

    /// Number of edges of `part`, without listing them (O(tokens)).
    pub fn edge_count(&self, part: MotifPart) -> usize {
        let groups = self.col_start.len().saturating_sub(1);
        // Per group: columns by category; rows by category; rows that are own columns.
        let mut col_id = vec![0usize; groups];
        let mut col_syn = vec![0usize; groups];
        for g in 0..groups {
            for &j in self.cols_of(g as u32) {
                if self.is_id[j as usize] {
                    col_id[g] += 1;
                } else {
                    col_syn[g] += 1;
                }
            }
        }
        let mut total = 0usize;
        for (i, &g) in self.row_group.iter().enumerate() {
            if g == NONE {
                continue;
            }
            let g = g as usize;
            let own = self.col_groups[i].contains(&(g as u32));
            let id = self.is_id[i];
            let (same, other) = if id {
                (col_id[g], col_syn[g])
            } else {
                (col_syn[g], col_id[g])
            };
            let same = same - usize::from(own);
            total += match part {
                MotifPart::All => same + other,
                MotifPart::Syntactic if !id => same,
                MotifPart::Syntactic => 0,
                MotifPart::SyntacticIdentifier => other,
            };
        }
        total
    }

    /// Every edge of `part`, sorted. Its length is [`Motif::edge_count`]: check that
    /// first for untrusted input.
    pub fn edges(&self, part: MotifPart) -> Vec<(usize, usize)> {
        // NONE is u32::MAX, the kernel's "no group".
        const _: () = assert!(NONE == u32::MAX);
        let keep = [(false, false), (false, true), (true, false), (true, true)]
            .map(|(id_i, id_j)| part.keeps(id_i, id_j));
        codescope_kernels::graph::biclique_edges(
            &self.row_group,
            &self.col_start,
            &self.cols,
            &self.is_id,
            keep,
        )
    }

    /// The edges of `part` with both ends in `tokens` (token indices, any order), sorted.
    /// Costs O(tokens of the snippet + edges returned), so a small window of a huge flat
    /// list is cheap.
    pub fn edges_within(&self, part: MotifPart, tokens: &[usize]) -> Vec<(usize, usize)> {
        let n = self.row_group.len();
        let mut inside = vec![false; n];
        for &t in tokens {
            if t < n {
                inside[t] = true;
            }
        }
        // Each group's columns filtered to the window, once.
        let mut filtered: HashMap<u32, Vec<usize>> = HashMap::new();
        let mut out = Vec::new();
        for i in (0..n).filter(|&i| inside[i]) {
            let g = self.row_group[i];
            if g == NONE {
                continue;
            }
            let cols = filtered.entry(g).or_insert_with(|| {
                self.cols_of(g)
                    .iter()
                    .map(|&j| j as usize)
                    .filter(|&j| inside[j])
                    .collect()
            });
            for &j in cols.iter() {
                if j != i && part.keeps(self.is_id[i], self.is_id[j]) {
                    out.push((i, j));
                }
            }
        }
        out
    }
}
