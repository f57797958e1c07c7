//! The study's graph edit distance (docs/METHODS.md section 3): the first value that
//! networkx's `optimize_graph_edit_distance` yields, as the study called it.
//!
//! The reference is networkx 3.0's `optimize_edit_paths`
//! (`networkx/algorithms/similarity.py`) with scipy's `linear_sum_assignment`
//! (`scipy/optimize/rectangular_lsap`: the shortest augmenting path of Crouse, "On
//! implementing 2D rectangular assignment algorithms", IEEE TAES 52(4), 2016). This is
//! an independent Rust implementation of the same algorithm, for the study's costs: node
//! substitution 0 for equal names and 1 otherwise, node deletion and insertion 1, edge
//! deletion and insertion 1, edge substitution 0. It is checked against networkx 3.0 to
//! the integer (`tests/it/ged_study.rs`, fixture by `tools/reference/ged_reference.py`).
//!
//! What networkx does up to its first candidate, and so what this computes:
//!
//! 1. The node cost matrix `Cv` is `(m + n)²` for `m` nodes of `G1` and `n` of `G2`:
//!    substitution costs top left, deletions (diagonal; every other entry a large finite
//!    `inf`) top right, insertions bottom left (the same), zeros bottom right. It is solved
//!    once by [`linear_sum_assignment`], ties broken as scipy breaks them, and "fixed up"
//!    so that each substitution `i -> j` pairs with the dummy assignment `m + j -> n + i`.
//! 2. The search takes, at each step, the assignment pair `(k, l)` that is smallest
//!    lexicographically among those that are not dummy-to-dummy (in the reduced matrix's
//!    indices, which keep the original order) and removes it and its dummy partner from
//!    the assignment without solving again (networkx's `reduce_ind`): so `G1`'s nodes are
//!    mapped in their order, each to its assigned node or deleted, then `G2`'s unassigned
//!    nodes are inserted in theirs.
//! 3. With each node mapping `u -> v` (either may be absent), the pending edges that the
//!    step settles are those of `G1` that are `(u, u)` or join `u` (or nothing, for an
//!    insertion) with an already mapped node, or a still pending self loop of one; the
//!    same in `G2` with `v`. None are settled at the very first step (networkx's guard
//!    against deleting the first node's self loop; it is settled at the second). Among
//!    them a local cost matrix allows substituting `g -> h` when they join corresponding
//!    ends in the same direction, or when either of them is a self loop (networkx's
//!    special case: a self loop may stand for any edge); every other substitution gets
//!    `inf`. The local assignment (scipy again) settles every one of them: substituted
//!    for 0, or deleted or inserted for 1.
//! 4. The first complete path is yielded with the sum of those costs. networkx prunes
//!    with `maxcost`, which starts as the sum of every entry of both cost matrices plus
//!    one (the `inf` entries included), above any path's cost: nothing is pruned before
//!    the first candidate, and the first branch of every step is the one taken. The
//!    edge-level assignment over all pending edges that networkx solves again at each
//!    step (`reduce_Ce`) only feeds those bounds, so it is not computed here.
//!
//! The step costs do not depend on how the local assignment breaks its ties (each of the
//! local edges is settled either way, at `a + b - 2ν` for `a` and `b` of them and a
//! largest matching `ν`); the node assignment's ties decide which nodes are matched when
//! names repeat, and are scipy's.
//!
//! Graphs are directed with self loops, nodes `0..n` in order and named; edges in the
//! order networkx's `from_numpy_array` makes them (row-major; [`Digraph::from_mask`]).
//! The search's loops live in `codescope-kernels` (`ged`), optimised in every build
//! profile; this module re-exports them and applies them to an analysis ([`compute`]).
//!
//! Cost: the node assignment is solved once per snippet (the names are the same for every
//! head and graph), each step's local assignment is over the edges it settles: at 80
//! tokens about 0.2 ms a head and graph at t = 0.05, 7 ms at t = 0 (docs/performance.md).
//! [`MAX_TOKENS`] bounds it.

pub use codescope_kernels::ged::{
    first_distance, first_distance_with, linear_sum_assignment, make_nodes_unique, node_steps,
    Digraph, NodeStep,
};

use std::collections::BTreeMap;

use super::{Graph, SnippetAnalysis};

/// Which graph edit distance a command adds beside codescope's identity GED (`--ged`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum GedVariant {
    /// The study's: networkx's first candidate per head and graph, divided by the token
    /// count, and per layer the minimum over heads.
    Study,
}

/// The most analysed tokens the study's GED is computed for by default; a longer snippet
/// is skipped (with a notice from `analyze`, counted by `reproduce`).
/// `CODESCOPE_GED_MAX_TOKENS` changes it ([`max_tokens`]). At t = 0.05 a head and graph
/// at 256 tokens takes about 1.5 ms; at t = 0 (every edge predicted) about 0.4 s, and the
/// cost grows with the third to fourth power of the token count there (docs/METHODS.md section 3,
/// docs/performance.md).
pub const MAX_TOKENS: usize = 256;

/// The token limit of the study's GED: `CODESCOPE_GED_MAX_TOKENS`, else [`MAX_TOKENS`];
/// an error for a value that is not a positive whole number.
pub fn max_tokens() -> crate::error::Result<usize> {
    Ok(
        crate::model::limits::env_positive("CODESCOPE_GED_MAX_TOKENS")?.map_or(MAX_TOKENS, |v| {
            v.min(crate::syntax::MAX_SOURCE_BYTES as u64) as usize
        }),
    )
}

/// The study's GED of one analysis at one threshold: per graph, every head's distance.
#[derive(Debug, Clone, PartialEq)]
pub struct StudyGed {
    pub threshold: f32,
    /// Analysed tokens (the nodes of both graphs).
    pub n: usize,
    /// The nodes' names: the analysed tokens' text through [`make_nodes_unique`].
    pub names: Vec<String>,
    /// Per graph: `[layer][head]` the first distance networkx yields (node and edge
    /// edits; divide by `n` for the study's per-node value).
    pub distances: BTreeMap<Graph, Vec<Vec<u64>>>,
}

impl StudyGed {
    /// `distance / n` (0 for no tokens), the study's reported value.
    pub fn per_node(&self, d: u64) -> f64 {
        if self.n == 0 {
            0.0
        } else {
            d as f64 / self.n as f64
        }
    }

    /// Per layer, the head with the smallest distance (the first of equals) and it: the
    /// study's per-layer value is its [`StudyGed::per_node`].
    pub fn layer_min(&self, g: Graph) -> Vec<(usize, u64)> {
        self.distances[&g]
            .iter()
            .map(|row| {
                row.iter()
                    .copied()
                    .enumerate()
                    .fold(
                        (0, u64::MAX),
                        |best, (h, d)| if d < best.1 { (h, d) } else { best },
                    )
            })
            .collect()
    }
}

/// Why an analysis has no study GED.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Skipped {
    /// More analysed tokens than the limit ([`max_tokens`]).
    TooLong { n: usize, max: usize },
    /// The analysis did not keep its code-token matrices (a long input, results only).
    NoMatrices,
}

impl std::fmt::Display for Skipped {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Skipped::TooLong { n, max } => write!(
                f,
                "{n} analysed tokens, more than the study GED's limit of {max} \
                 (CODESCOPE_GED_MAX_TOKENS)"
            ),
            Skipped::NoMatrices => write!(f, "the attention matrices were not kept"),
        }
    }
}

/// The nodes' names of an analysis: its analysed tokens' text, made unique as the study
/// made them.
pub fn names(a: &SnippetAnalysis) -> Vec<String> {
    let texts: Vec<&str> = a
        .token_attention
        .tokens
        .iter()
        .map(|&t| a.tokens[t].text.as_str())
        .collect();
    make_nodes_unique(&texts)
}

/// The study's GED of every head against every gold graph at threshold `t`: `P = [A > t]`
/// (diagonal kept) against the gold graph, both on the analysed tokens with the same
/// names; skipped over `max_tokens` analysed tokens. Heads run in parallel.
pub fn compute(a: &SnippetAnalysis, t: f32, max_tokens: usize) -> Result<StudyGed, Skipped> {
    use rayon::prelude::*;
    let ta = &a.token_attention;
    let n = ta.n();
    if n > max_tokens {
        return Err(Skipped::TooLong { n, max: max_tokens });
    }
    if !ta.resident() {
        return Err(Skipped::NoMatrices);
    }
    let names = names(a);
    let steps = node_steps(&names, &names);
    let golds: Vec<(Graph, Digraph)> = Graph::ALL
        .iter()
        .map(|&g| {
            (
                g,
                Digraph::from_mask(&names, a.golds[&g].mask.iter().copied()),
            )
        })
        .collect();
    let per_head: Vec<Vec<u64>> = (0..ta.layers * ta.heads)
        .into_par_iter()
        .map(|k| {
            let p = Digraph::from_mask(
                &names,
                ta.head(k / ta.heads, k % ta.heads).iter().map(|&x| x > t),
            );
            golds
                .iter()
                .map(|(_, g)| first_distance_with(&steps, &p, g))
                .collect()
        })
        .collect();
    let distances = golds
        .iter()
        .enumerate()
        .map(|(gi, (g, _))| {
            let rows = (0..ta.layers)
                .map(|l| {
                    (0..ta.heads)
                        .map(|h| per_head[l * ta.heads + h][gi])
                        .collect()
                })
                .collect();
            (*g, rows)
        })
        .collect();
    Ok(StudyGed {
        threshold: t,
        n,
        names,
        distances,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn make_nodes_unique_numbers_repeats_and_keeps_the_studys_collision() {
        assert_eq!(
            make_nodes_unique(&["a", "b", "a", "a"]),
            names(&["a", "b", "a_1", "a_2"])
        );
        // "a_1" first, then "a" renamed to "a_1": the study's code leaves the collision.
        assert_eq!(
            make_nodes_unique(&["a_1", "a", "a"]),
            names(&["a_1", "a", "a_1"])
        );
    }

    #[test]
    fn lsap_matches_scipy_on_ties_and_rectangles() {
        // scipy 1.17: linear_sum_assignment(np.ones((3, 3))) is the identity.
        let (r, c) = linear_sum_assignment(&[1.0; 9], 3, 3).unwrap();
        assert_eq!((r, c), (vec![0, 1, 2], vec![0, 1, 2]));
        // [[4, 1, 3], [2, 0, 5], [3, 2, 2]] -> rows 0..3, cols [1, 0, 2], cost 5.
        let (_, c) =
            linear_sum_assignment(&[4.0, 1.0, 3.0, 2.0, 0.0, 5.0, 3.0, 2.0, 2.0], 3, 3).unwrap();
        assert_eq!(c, vec![1, 0, 2]);
        // Tall: [[1, 2], [0, 3], [5, 1]] -> rows [1, 2], cols [0, 1].
        let (r, c) = linear_sum_assignment(&[1.0, 2.0, 0.0, 3.0, 5.0, 1.0], 3, 2).unwrap();
        assert_eq!((r, c), (vec![1, 2], vec![0, 1]));
        assert!(linear_sum_assignment(&[f64::NAN], 1, 1).is_none());
    }

    #[test]
    fn a_self_loop_stands_for_any_edge() {
        // P: 0->0, 0->1, 1->1, 1->2, 2->0; G: 0->1, 1->2 (networkx 3.0: 3.0, the identity
        // matching's too: no gold edge is left for the self loops to stand for).
        let nm = names(&["a", "b", "c"]);
        let p = Digraph {
            names: &nm,
            edges: vec![(0, 0), (0, 1), (1, 1), (1, 2), (2, 0)],
        };
        let g = Digraph {
            names: &nm,
            edges: vec![(0, 1), (1, 2)],
        };
        assert_eq!(first_distance(&p, &g), 3);
        // A self loop against a gold edge settled at the same step (node 2's): substituted
        // for 0 (networkx 3.0: 0.0). Settled at different steps they cannot pair (2.0).
        let p = Digraph {
            names: &nm,
            edges: vec![(2, 2)],
        };
        let g = Digraph {
            names: &nm,
            edges: vec![(0, 2)],
        };
        assert_eq!(first_distance(&p, &g), 0);
        let p = Digraph {
            names: &nm,
            edges: vec![(1, 1)],
        };
        assert_eq!(first_distance(&p, &g), 2);
    }

    #[test]
    fn the_first_nodes_self_loop_waits_for_the_second() {
        // One node: its self loop is never settled, so networkx yields 0.
        let nm = names(&["a"]);
        let p = Digraph {
            names: &nm,
            edges: vec![(0, 0)],
        };
        let g = Digraph {
            names: &nm,
            edges: vec![],
        };
        assert_eq!(first_distance(&p, &g), 0);
        let nm = names(&["a", "b"]);
        let p = Digraph {
            names: &nm,
            edges: vec![(0, 0)],
        };
        let g = Digraph {
            names: &nm,
            edges: vec![],
        };
        assert_eq!(first_distance(&p, &g), 1);
    }

    #[test]
    fn different_names_and_sizes_delete_and_insert() {
        let a = names(&["x", "y"]);
        let b = names(&["y", "z", "w"]);
        let g1 = Digraph {
            names: &a,
            edges: vec![(0, 1)],
        };
        let g2 = Digraph {
            names: &b,
            edges: vec![(0, 1), (1, 2)],
        };
        let steps = node_steps(&a, &b);
        assert_eq!(steps.iter().filter(|s| s.u.is_none()).count(), 1);
        // networkx 3.0: 5.0.
        assert_eq!(first_distance(&g1, &g2), 5);
    }
}
