//! The gold relation graphs of a snippet by name ([`Graph`]) and as data ([`Graphs`]),
//! and [`build_graphs`], which computes all of them (docs/METHODS.md 2).
//!
//! The motif graph and its two derived graphs are kept compactly (`motif.rs`) and listed
//! on demand, whole ([`Graphs::edges`]) or within a window of tokens
//! ([`Graphs::edges_within`]), so a huge flat list whose analysed window is small costs
//! nothing. The data-flow graphs are lists; they are linear in the snippet's size on
//! real code, and [`MAX_GRAPH_EDGES`] bounds them on hostile input.
//!
//! Invariants: every edge list is sorted and deduplicated and indexes the token list;
//! only `dfg` may have self edges (the study's walks loop bodies twice, so an occurrence
//! can take its value from itself, docs/METHODS.md 2.3).

use serde::{Serialize, Serializer};

use super::arena::{Arena, TreeInfo};
use super::dfg::{self, DfgKind};
use super::lang::Language;
use super::motif::{Motif, MotifPart};
use super::token::{Coarse, CodeToken};
use super::SyntaxError;

/// Upper bound on the number of edges codescope lists for one graph: a data-flow graph
/// beyond it makes [`parse()`] fail with [`SyntaxError::TooManyEdges`] instead of
/// allocating gigabytes, and [`super::Syntax::to_json`] refuses to list a larger motif
/// graph (windows of it stay available through [`Graphs::edges_within`]).
///
/// [`parse()`]: super::parse()
pub const MAX_GRAPH_EDGES: usize = 4_000_000;

/// The gold graphs of one snippet. Indices are into [`super::Syntax::tokens`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Graphs {
    /// The AST motif graph, compact (see `motif.rs`).
    motif: Motif,
    /// The study's data-flow graph (`DFG_python` / `DFG_java` as the study ran them):
    /// sorted, deduplicated; a pair may appear with both kinds; self edges possible.
    pub dfg: Vec<(usize, usize, DfgKind)>,
    /// codescope's refined data flow (identifiers only, scopes, branches, fields; rules in
    /// `dfg/refined.rs`): sorted, deduplicated, no self edges.
    pub dfg_refined: Vec<(usize, usize, DfgKind)>,
}

/// The gold graphs by name (docs/METHODS.md 2). `ALL` is the report order; `name()` is the
/// key used in every JSON, CSV and table.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum Graph {
    /// AST motif graph G.
    AstMotif,
    /// Edges of G between two non-identifier tokens.
    Syntactic,
    /// Edges of G with exactly one identifier end.
    SyntacticIdentifier,
    /// The study's data-flow graph (GraphCodeBERT's `DFG_python` / `DFG_java`).
    Dfg,
    /// codescope's refined data-flow graph.
    DfgRefined,
}

impl Graph {
    /// Every graph, in report order.
    pub const ALL: [Graph; 5] = [
        Graph::AstMotif,
        Graph::Syntactic,
        Graph::SyntacticIdentifier,
        Graph::Dfg,
        Graph::DfgRefined,
    ];

    /// The key used in JSON, CSV and tables (`ast_motif`, `dfg`, ...).
    pub fn name(self) -> &'static str {
        match self {
            Graph::AstMotif => "ast_motif",
            Graph::Syntactic => "syntactic",
            Graph::SyntacticIdentifier => "syntactic_identifier",
            Graph::Dfg => "dfg",
            Graph::DfgRefined => "dfg_refined",
        }
    }

    /// A label for people (panel titles, figure captions).
    pub fn label(self) -> &'static str {
        match self {
            Graph::AstMotif => "AST motif",
            Graph::Syntactic => "syntactic",
            Graph::SyntacticIdentifier => "syntactic-identifier",
            Graph::Dfg => "data flow",
            Graph::DfgRefined => "data flow (refined)",
        }
    }

    /// The graph called `name` (as [`Graph::name`] spells it).
    pub fn from_name(name: &str) -> Option<Graph> {
        Graph::ALL.into_iter().find(|g| g.name() == name)
    }

    fn motif_part(self) -> Option<MotifPart> {
        match self {
            Graph::AstMotif => Some(MotifPart::All),
            Graph::Syntactic => Some(MotifPart::Syntactic),
            Graph::SyntacticIdentifier => Some(MotifPart::SyntacticIdentifier),
            Graph::Dfg | Graph::DfgRefined => None,
        }
    }
}

impl std::fmt::Display for Graph {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// `(i, j)` pairs of a data-flow edge list, kinds dropped, deduplicated.
fn pairs(v: &[(usize, usize, DfgKind)]) -> Vec<(usize, usize)> {
    let mut out: Vec<_> = v.iter().map(|&(i, j, _)| (i, j)).collect();
    out.dedup();
    out
}

impl Graphs {
    /// Every edge of graph `g` as sorted, deduplicated `(i, j)` pairs (data-flow kinds
    /// dropped). The motif graphs can be quadratic in the snippet's size: check
    /// [`Graphs::edge_count`] first on untrusted input, or use [`Graphs::edges_within`].
    pub fn edges(&self, g: Graph) -> Vec<(usize, usize)> {
        match g.motif_part() {
            Some(part) => self.motif.edges(part),
            None => pairs(self.dfg_of(g)),
        }
    }

    /// The edges of `g` with both ends among `tokens` (token indices), sorted; costs
    /// O(snippet tokens + edges returned).
    pub fn edges_within(&self, g: Graph, tokens: &[usize]) -> Vec<(usize, usize)> {
        match g.motif_part() {
            Some(part) => self.motif.edges_within(part, tokens),
            None => {
                let n = tokens.iter().max().map_or(0, |&m| m + 1);
                let mut inside = vec![false; n];
                for &t in tokens {
                    inside[t] = true;
                }
                let keep = |i: usize| inside.get(i).copied().unwrap_or(false);
                pairs(self.dfg_of(g))
                    .into_iter()
                    .filter(|&(i, j)| keep(i) && keep(j))
                    .collect()
            }
        }
    }

    /// Number of distinct `(i, j)` edges of `g`, without listing the motif graphs.
    pub fn edge_count(&self, g: Graph) -> usize {
        match g.motif_part() {
            Some(part) => self.motif.edge_count(part),
            None => pairs(self.dfg_of(g)).len(),
        }
    }

    /// Is `i -> j` an edge of `g`?
    pub fn contains(&self, g: Graph, i: usize, j: usize) -> bool {
        match g.motif_part() {
            Some(part) => self.motif.contains(part, i, j),
            // Sorted by (i, j, kind): a binary search.
            None => self
                .dfg_of(g)
                .binary_search_by(|&(a, b, _)| (a, b).cmp(&(i, j)))
                .is_ok(),
        }
    }

    /// The edges of a data-flow graph with their kinds (`None` for the motif graphs).
    pub fn dfg_edges(&self, g: Graph) -> Option<&[(usize, usize, DfgKind)]> {
        match g {
            Graph::Dfg => Some(&self.dfg),
            Graph::DfgRefined => Some(&self.dfg_refined),
            _ => None,
        }
    }

    fn dfg_of(&self, g: Graph) -> &[(usize, usize, DfgKind)] {
        self.dfg_edges(g).unwrap_or(&[])
    }

    /// The AST motif graph, listed (see [`Graphs::edges`]).
    pub fn ast_motif(&self) -> Vec<(usize, usize)> {
        self.edges(Graph::AstMotif)
    }

    /// The syntactic-syntactic graph, listed.
    pub fn syntactic(&self) -> Vec<(usize, usize)> {
        self.edges(Graph::Syntactic)
    }

    /// The syntactic-identifier edges, listed.
    pub fn syntactic_identifier(&self) -> Vec<(usize, usize)> {
        self.edges(Graph::SyntacticIdentifier)
    }

    /// The study's DFG edges without their kind, deduplicated (for P/R/F1 against
    /// attention).
    pub fn dfg_pairs(&self) -> Vec<(usize, usize)> {
        pairs(&self.dfg)
    }

    /// Refuse to list a motif graph over [`MAX_GRAPH_EDGES`] edges.
    pub(crate) fn check_listable(&self) -> Result<(), SyntaxError> {
        let edges = self.motif.edge_count(MotifPart::All);
        if edges > MAX_GRAPH_EDGES {
            return Err(SyntaxError::TooManyEdges {
                edges,
                max: MAX_GRAPH_EDGES,
            });
        }
        Ok(())
    }
}

/// Serializes as `{"ast_motif": [[i,j]], "dfg": [[i,j,kind]], "dfg_refined": [[i,j,kind]],
/// "syntactic": [[i,j]], "syntactic_identifier": [[i,j]]}` (keys sorted), listing every
/// edge: call [`Graphs::check_listable`] first.
impl Serialize for Graphs {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut m = s.serialize_map(Some(5))?;
        m.serialize_entry("ast_motif", &self.ast_motif())?;
        m.serialize_entry("dfg", &self.dfg)?;
        m.serialize_entry("dfg_refined", &self.dfg_refined)?;
        m.serialize_entry("syntactic", &self.syntactic())?;
        m.serialize_entry("syntactic_identifier", &self.syntactic_identifier())?;
        m.end()
    }
}

/// Build all graphs. `root` is the node the analysis starts from (the tree root, or
/// the wrapper's body for wrapped snippets); `source` is the caller's text, into which
/// the tokens' spans point (the study's data flow compares token texts the way its code
/// slices them out of the source's lines).
pub(crate) fn build_graphs(
    arena: &Arena,
    source: &str,
    tokens: &[CodeToken],
    tree: &TreeInfo,
    lang: Language,
    root: u32,
) -> Result<Graphs, SyntaxError> {
    let is_id = tokens
        .iter()
        .map(|t| t.coarse == Coarse::Identifier)
        .collect();
    let motif = Motif::new(arena, &tree.token_node, is_id, lang);
    let dfg = dfg::study_graph(arena, source, tokens, lang, root)?;
    let dfg_refined = dfg::refined_graph(arena, tokens, lang, root);
    Ok(Graphs {
        motif,
        dfg,
        dfg_refined,
    })
}

#[cfg(test)]
mod tests {
    use super::super::{parse, Language};
    use super::*;

    #[test]
    fn huge_flat_list_is_kept_compact_and_windowed() {
        let src = format!("x = [{}]\n", "1, ".repeat(20_000));
        let s = parse(&src, Language::Python).unwrap();
        let n = s.tokens.len();
        // x = [ 1 , 1 , ... , ]: the list's 40,002 children see each other; `x` and `=`
        // see each other and every child of the list.
        let inner = 40_002usize;
        assert_eq!(
            s.graphs.edge_count(Graph::AstMotif),
            inner * (inner - 1) + 2 * (inner + 1)
        );
        assert!(matches!(s.to_json(), Err(SyntaxError::TooManyEdges { .. })));
        let window: Vec<usize> = (0..512).collect();
        let w = s.graphs.edges_within(Graph::AstMotif, &window);
        assert!(w.iter().all(|&(i, j)| i < 512 && j < 512 && i != j));
        // tokens 3..512 are children of the list: each sees the 508 others.
        assert!(w.contains(&(3, 511)) && w.contains(&(511, 3)));
        assert!(s.graphs.contains(Graph::AstMotif, 3, n - 1));
        assert!(!s.graphs.contains(Graph::AstMotif, 3, 3));
    }
}
