//! The AST motif graph (METHODS.md 2.1).
//!
//! Exactly the study's `traverse_node` in `attention/graph_utils.py`
//! (stg-tud/code-LLM-critical-evaluation): for token t with parent P, `t -> u` when u is
//! another leaf child of P, or a leaf child of a non-leaf sibling S of t whose kind is not
//! `block`. A collapsed string counts as a leaf of its parent (METHODS.md 1, documented
//! deviation). Comments and zero-width MISSING leaves are not tokens, so they take part in
//! no edge.

use std::collections::HashMap;

use super::arena::Arena;
use super::graph::MAX_GRAPH_EDGES;
use super::SyntaxError;

/// Number of motif targets a child `c` of a token's parent contributes.
fn motif_contribution(a: &Arena, c: u32) -> usize {
    if a.is_leaf(c) {
        usize::from(a.token(c).is_some())
    } else if a.kind(c) != "block" {
        a.children(c)
            .iter()
            .filter(|&&g| a.is_leaf(g) && a.token(g).is_some())
            .count()
    } else {
        0
    }
}

/// The AST motif graph (graph_utils.py `traverse_node`, `motif_nodes`).
pub(crate) fn motif_graph(
    a: &Arena,
    token_node: &[u32],
) -> Result<Vec<(usize, usize)>, SyntaxError> {
    // Count first (O(nodes)) so that a quadratic blow-up is refused before allocation.
    let mut per_parent: HashMap<u32, usize> = HashMap::new();
    let mut total = 0usize;
    for &t in token_node {
        let Some(p) = a.parent(t) else { continue };
        let c = *per_parent.entry(p).or_insert_with(|| {
            a.children(p)
                .iter()
                .map(|&c| motif_contribution(a, c))
                .sum()
        });
        total += c.saturating_sub(1);
    }
    if total > MAX_GRAPH_EDGES {
        return Err(SyntaxError::TooManyEdges {
            edges: total,
            max: MAX_GRAPH_EDGES,
        });
    }
    let mut edges = Vec::with_capacity(total);
    for (i, &t) in token_node.iter().enumerate() {
        let Some(p) = a.parent(t) else { continue };
        for &c in a.children(p) {
            if c == t {
                continue;
            }
            if a.is_leaf(c) {
                if let Some(j) = a.token(c) {
                    edges.push((i, j));
                }
            } else if a.kind(c) != "block" {
                for &g in a.children(c) {
                    if a.is_leaf(g) {
                        if let Some(j) = a.token(g) {
                            edges.push((i, j));
                        }
                    }
                }
            }
        }
    }
    edges.sort_unstable();
    edges.dedup();
    edges.retain(|&(i, j)| i != j);
    Ok(edges)
}
