//! The gold relation graphs of a snippet by name ([`Graph`]) and as data ([`Graphs`]),
//! and [`build_graphs`], which computes all of them (METHODS.md 2).
//!
//! Invariants: every edge list is sorted and deduplicated, has no self edge and indexes
//! the token list; graph size is bounded by [`MAX_GRAPH_EDGES`].

use serde::{Deserialize, Serialize};

use super::arena::{Arena, TreeInfo};
use super::dfg::{data_flow_graph, DfgKind};
use super::lang::Language;
use super::motif::motif_graph;
use super::token::{Coarse, CodeToken};
use super::SyntaxError;

/// Upper bound on the number of motif edges of one snippet; beyond it [`parse()`] fails
/// with [`SyntaxError::TooManyEdges`] instead of allocating gigabytes (a flat list
/// literal with n elements has ~4n² motif edges).
///
/// [`parse()`]: super::parse()
pub const MAX_GRAPH_EDGES: usize = 4_000_000;

/// The gold graphs of one snippet. Indices are into [`super::Syntax::tokens`]; every list
/// is sorted and deduplicated.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Graphs {
    /// AST motif graph G (directed, not symmetric).
    pub ast_motif: Vec<(usize, usize)>,
    /// Edges of G between two non-identifier tokens.
    pub syntactic: Vec<(usize, usize)>,
    /// Edges of G with exactly one identifier end.
    pub syntactic_identifier: Vec<(usize, usize)>,
    /// Data-flow edges between identifier tokens.
    pub dfg: Vec<(usize, usize, DfgKind)>,
}

/// The gold graphs by name (METHODS.md 2). `ALL` is the report order; `name()` is the
/// key used in every JSON, CSV and table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Graph {
    /// AST motif graph G.
    AstMotif,
    /// Edges of G between two non-identifier tokens.
    Syntactic,
    /// Edges of G with exactly one identifier end.
    SyntacticIdentifier,
    /// Data-flow graph.
    Dfg,
}

impl Graph {
    /// Every graph, in report order.
    pub const ALL: [Graph; 4] = [
        Graph::AstMotif,
        Graph::Syntactic,
        Graph::SyntacticIdentifier,
        Graph::Dfg,
    ];

    /// The key used in JSON, CSV and tables (`ast_motif`, `dfg`, ...).
    pub fn name(self) -> &'static str {
        match self {
            Graph::AstMotif => "ast_motif",
            Graph::Syntactic => "syntactic",
            Graph::SyntacticIdentifier => "syntactic_identifier",
            Graph::Dfg => "dfg",
        }
    }

    /// A label for people (panel titles, figure captions).
    pub fn label(self) -> &'static str {
        match self {
            Graph::AstMotif => "AST motif",
            Graph::Syntactic => "syntactic",
            Graph::SyntacticIdentifier => "syntactic-identifier",
            Graph::Dfg => "data flow",
        }
    }

    /// The graph called `name` (as [`Graph::name`] spells it).
    pub fn from_name(name: &str) -> Option<Graph> {
        Graph::ALL.into_iter().find(|g| g.name() == name)
    }
}

impl std::fmt::Display for Graph {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl Graphs {
    /// Edges of graph `g` as `(i, j)` pairs (data-flow kinds dropped).
    pub fn edges(&self, g: Graph) -> Vec<(usize, usize)> {
        match g {
            Graph::AstMotif => self.ast_motif.clone(),
            Graph::Syntactic => self.syntactic.clone(),
            Graph::SyntacticIdentifier => self.syntactic_identifier.clone(),
            Graph::Dfg => self.dfg.iter().map(|&(i, j, _)| (i, j)).collect(),
        }
    }

    /// DFG edges without their kind, deduplicated (for P/R/F1 against attention).
    pub fn dfg_pairs(&self) -> Vec<(usize, usize)> {
        let mut v: Vec<_> = self.dfg.iter().map(|&(i, j, _)| (i, j)).collect();
        v.dedup();
        v
    }
}

/// Build all graphs. `root` is the node the analysis starts from (the tree root, or
/// the wrapper's body for wrapped Java).
pub(crate) fn build_graphs(
    arena: &Arena,
    tokens: &[CodeToken],
    tree: &TreeInfo,
    lang: Language,
    root: u32,
) -> Result<Graphs, SyntaxError> {
    let ast_motif = motif_graph(arena, &tree.token_node)?;
    let is_id = |i: usize| tokens[i].coarse == Coarse::Identifier;
    let syntactic = ast_motif
        .iter()
        .copied()
        .filter(|&(i, j)| !is_id(i) && !is_id(j))
        .collect();
    let syntactic_identifier = ast_motif
        .iter()
        .copied()
        .filter(|&(i, j)| is_id(i) != is_id(j))
        .collect();
    let dfg = data_flow_graph(arena, tokens, lang, root);
    Ok(Graphs {
        ast_motif,
        syntactic,
        syntactic_identifier,
        dfg,
    })
}

#[cfg(test)]
mod tests {
    use super::super::{parse, Language};
    use super::*;

    #[test]
    fn huge_flat_list_is_refused() {
        let src = format!("x = [{}]\n", "1, ".repeat(1500));
        let err = parse(&src, Language::Python).unwrap_err();
        assert!(matches!(err, SyntaxError::TooManyEdges { .. }), "{err}");
    }
}
