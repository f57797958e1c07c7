//! One snippet's tree as a fitted AST-Probe rebuilds it, beside its gold tree: what the
//! explorer's probe panel and its figure show for the selected layer.
//!
//! Both trees are flattened into rows of indented text (pre-order, a node before its
//! children, leaves as code tokens). Every node row carries a [`Mark`] saying whether
//! the *other* tree has the same constituent (label and leaf range, the unit of the
//! constituent F1): on the rebuilt side a mark is a wrong constituent, on the gold side
//! one the probe missed. A constituent whose leaf range the other tree has under another
//! label is told apart ([`Mark::Relabelled`]) from one whose range it lacks.
//!
//! The snippet's leaves are exactly the ones the corpus run uses ([`super::gold_encoding`]:
//! covered code tokens, at most [`super::AstOptions::max_tokens`], none for a snippet
//! with parse errors), and the features are the analysis's own code-token vectors at the
//! layer (mean over subwords, as in training).

use std::sync::Arc;

use super::tree::{self, Constituent, Encoding, Tree, TreeItem};
use super::AstProbe;
use crate::analysis::SnippetAnalysis;
use crate::probe::ProbeReport;

/// Glyph of a constituent the other tree lacks (wrong on the rebuilt side, missed on
/// the gold side).
pub const GLYPH_ABSENT: char = '✗';
/// Glyph of a constituent whose leaf range the other tree has under another label.
pub const GLYPH_RELABELLED: char = '≈';

/// How a node compares with the other tree.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mark {
    /// The other tree has the same label over the same leaves.
    Same,
    /// The other tree has these leaves as a constituent, under another label.
    Relabelled,
    /// The other tree has no constituent over these leaves.
    Absent,
}

impl Mark {
    /// The glyph shown before the node (a space for [`Mark::Same`]).
    pub fn glyph(self) -> char {
        match self {
            Mark::Same => ' ',
            Mark::Relabelled => GLYPH_RELABELLED,
            Mark::Absent => GLYPH_ABSENT,
        }
    }
}

/// What a row shows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RowKind {
    /// A constituent: its label over leaves `lo ..= hi`.
    Node {
        label: String,
        lo: usize,
        hi: usize,
        mark: Mark,
    },
    /// Leaf (code token) `k` of the snippet's leaves.
    Leaf(usize),
}

/// One row of a tree as indented text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row {
    /// Nesting depth (the root is 0).
    pub depth: usize,
    pub kind: RowKind,
}

/// The rows of `tree` in pre-order, each node marked against the constituents `other`.
pub fn rows(tree: &Tree, other: &[Constituent]) -> Vec<Row> {
    use std::collections::HashSet;
    let same: HashSet<(&str, usize, usize)> =
        other.iter().map(|(l, a, b)| (l.as_str(), *a, *b)).collect();
    let spans: HashSet<(usize, usize)> = other.iter().map(|(_, a, b)| (*a, *b)).collect();
    let mut out = Vec::new();
    if tree.nodes.is_empty() {
        return out;
    }
    // Explicit stack: a long right spine would otherwise recurse deeply.
    let mut stack = vec![(TreeItem::Node(0), 0usize)];
    while let Some((item, depth)) = stack.pop() {
        match item {
            TreeItem::Leaf(k) => out.push(Row {
                depth,
                kind: RowKind::Leaf(k),
            }),
            TreeItem::Node(i) => {
                let n = &tree.nodes[i];
                let mark = if same.contains(&(n.label.as_str(), n.lo, n.hi)) {
                    Mark::Same
                } else if spans.contains(&(n.lo, n.hi)) {
                    Mark::Relabelled
                } else {
                    Mark::Absent
                };
                out.push(Row {
                    depth,
                    kind: RowKind::Node {
                        label: n.label.clone(),
                        lo: n.lo,
                        hi: n.hi,
                        mark,
                    },
                });
                for c in n.children.iter().rev() {
                    stack.push((*c, depth + 1));
                }
            }
        }
    }
    out
}

/// Rows as plain indented text (two spaces a level after the mark's glyph; leaves as
/// `leaf(k)`): the form the tests and logs read.
pub fn text(rows: &[Row], leaf: &dyn Fn(usize) -> String) -> Vec<String> {
    rows.iter()
        .map(|r| {
            let pad = "  ".repeat(r.depth);
            match &r.kind {
                RowKind::Node { label, mark, .. } => format!("{} {pad}{label}", mark.glyph()),
                RowKind::Leaf(k) => format!("  {pad}{}", leaf(*k)),
            }
        })
        .collect()
}

/// Count of node rows with each mark: `(same, relabelled, absent)`.
pub fn counts(rows: &[Row]) -> (usize, usize, usize) {
    let mut c = (0, 0, 0);
    for r in rows {
        if let RowKind::Node { mark, .. } = &r.kind {
            match mark {
                Mark::Same => c.0 += 1,
                Mark::Relabelled => c.1 += 1,
                Mark::Absent => c.2 += 1,
            }
        }
    }
    c
}

/// A snippet's rebuilt tree beside its gold tree at one layer.
#[derive(Debug, Clone, PartialEq)]
pub struct SnippetTrees {
    /// Hidden layer (0 = embeddings).
    pub layer: usize,
    /// Syntax-token index of each leaf.
    pub tokens: Vec<usize>,
    /// Text of each leaf.
    pub leaves: Vec<String>,
    /// The tree rebuilt from the probe's `(d, c, u)`, marked against the gold one.
    pub predicted: Vec<Row>,
    /// The gold tree, marked against the rebuilt one.
    pub gold: Vec<Row>,
    /// Constituent precision, recall and F1 of this snippet.
    pub precision: f64,
    pub recall: f64,
    pub f1: f64,
    /// Code tokens with hidden states past the probe's length limit (not in the trees).
    pub left_out: usize,
}

impl SnippetTrees {
    /// The leaf of syntax token `token`, or else the first leaf after it (the last leaf
    /// past the end): where a view following the token cursor goes.
    pub fn leaf_near(&self, token: usize) -> usize {
        self.tokens
            .iter()
            .position(|&t| t >= token)
            .unwrap_or(self.tokens.len().saturating_sub(1))
    }

    /// The row of leaf `k` in `rows`.
    pub fn leaf_row(rows: &[Row], k: usize) -> Option<usize> {
        rows.iter().position(|r| r.kind == RowKind::Leaf(k))
    }
}

/// Rebuild the tree of a snippet with `probe`: `syntax`'s tokens `covered` (syntax-token
/// index of each feature row, in source order) and their vectors at the probe's layer
/// `x` (`[covered.len(), dim]`), over at most the probe's `max_tokens` leaves. `Err`
/// says why there is no tree (parse errors, too few tokens, mismatched widths).
pub fn snippet_trees(
    probe: &AstProbe,
    syntax: &crate::syntax::Syntax,
    covered: &[usize],
    x: &[f32],
) -> Result<SnippetTrees, String> {
    if !syntax.errors.is_empty() {
        return Err("the snippet has parse errors (AST-Probe needs a clean tree)".into());
    }
    let gold = super::gold_encoding(syntax, covered, probe.max_tokens)
        .ok_or("fewer than two code tokens: no tree")?;
    let n = gold.len();
    let dim = probe.dim();
    let rows_x = x
        .get(..n * dim)
        .ok_or_else(|| format!("features narrower than the probe's {dim}"))?;
    let pred = probe.predict(rows_x).map_err(|e| e.to_string())?;
    compare(probe.layer, syntax, covered, &gold, &pred)
}

/// The trees of `gold` and `pred` (encodings over the first `gold.len()` tokens of
/// `covered`, tokens of `syntax`) side by side, marked, with their scores.
pub fn compare(
    layer: usize,
    syntax: &crate::syntax::Syntax,
    covered: &[usize],
    gold: &Encoding,
    pred: &Encoding,
) -> Result<SnippetTrees, String> {
    let n = gold.len();
    if pred.len() != n || covered.len() < n {
        return Err("the encodings do not cover the same tokens".into());
    }
    let (Some(gt), Some(pt)) = (tree::rebuild(gold), tree::rebuild(pred)) else {
        return Err("the tree could not be rebuilt".into());
    };
    let (gc, pc) = (gt.constituents(), pt.constituents());
    let (precision, recall, f1) = tree::prf(&gc, &pc);
    Ok(SnippetTrees {
        layer,
        tokens: covered[..n].to_vec(),
        leaves: covered[..n]
            .iter()
            .map(|&t| syntax.tokens[t].text.clone())
            .collect(),
        predicted: rows(&pt, &gc),
        gold: rows(&gt, &pc),
        precision,
        recall,
        f1,
        left_out: covered.len() - n,
    })
}

/// What a tree is asked for: the AST-Probe report, the analysis shown and the hidden
/// layer (0 = embeddings).
#[derive(Clone)]
pub struct TreeJob {
    pub report: Arc<ProbeReport>,
    pub analysis: Arc<SnippetAnalysis>,
    pub layer: usize,
}

impl std::fmt::Debug for TreeJob {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "TreeJob(layer {})", self.layer)
    }
}

/// The job's trees, or why there are none.
pub fn tree_job(job: &TreeJob) -> Result<Arc<SnippetTrees>, String> {
    let a = &job.analysis;
    let feat = a.features.as_ref().ok_or("trees need source input (m)")?;
    let probe = job
        .report
        .ast
        .iter()
        .find(|r| r.layer == job.layer)
        .and_then(|r| r.probe.clone())
        .ok_or("no AST-Probe fitted at this layer")?;
    let x = feat
        .layers
        .get(job.layer)
        .ok_or("no hidden states at this layer")?;
    snippet_trees(&probe, &a.syntax, &feat.tokens, x).map(Arc::new)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::syntax::{parse, Language};

    fn enc(d: &[u32], c: &[&str], u: &[&str]) -> Encoding {
        Encoding {
            d: d.iter().map(|&v| v as f64).collect(),
            c: c.iter().map(|s| s.to_string()).collect(),
            u: u.iter().map(|s| s.to_string()).collect(),
        }
    }

    const E: &str = tree::EMPTY;

    /// `def f():\n  pass`: the gold encoding (worked by hand in
    /// `tests/it/probe_astprobe.rs`) and a left-branching prediction.
    fn gold() -> Encoding {
        enc(
            &[4, 3, 1, 2, 1],
            &["module<sep>function_definition", E, "parameters", E, E],
            &[E, E, E, E, E, "block<sep>pass_statement"],
        )
    }

    #[test]
    fn rows_are_marked_against_the_other_tree() {
        let pred = enc(
            &[1, 2, 3, 4, 5],
            &[
                "parameters",
                "parameters",
                "parameters",
                "parameters",
                "module<sep>function_definition",
            ],
            &[E, E, E, E, E, "block<sep>pass_statement"],
        );
        let syn = parse("def f():\n  pass", Language::Python).unwrap();
        let covered: Vec<usize> = (0..syn.tokens.len()).collect();
        let t = compare(3, &syn, &covered, &gold(), &pred).unwrap();
        let leaf = |k: usize| format!("«{}»", t.leaves[k]);
        assert_eq!(
            text(&t.predicted, &leaf),
            [
                "  module",
                "    function_definition",
                "✗     parameters",
                "✗       parameters",
                "✗         parameters",
                "✗           parameters",
                "              «def»",
                "              «f»",
                "            «(»",
                "          «)»",
                "        «:»",
                "      block",
                "        pass_statement",
                "          «pass»",
            ]
        );
        assert_eq!(
            text(&t.gold, &leaf),
            [
                "  module",
                "    function_definition",
                "      «def»",
                "      «f»",
                "✗     parameters",
                "        «(»",
                "        «)»",
                "      «:»",
                "      block",
                "        pass_statement",
                "          «pass»",
            ]
        );
        // The marks are the F1's counts: 4 of 8 rebuilt constituents are gold ones,
        // 4 of 5 gold ones were found.
        assert_eq!(counts(&t.predicted), (4, 0, 4));
        assert_eq!(counts(&t.gold), (4, 0, 1));
        assert_eq!((t.precision, t.recall), (0.5, 0.8));
        assert_eq!((t.layer, t.left_out), (3, 0));
        // The cursor on `)` (token 3) follows leaf 3, on its row in each tree.
        assert_eq!(t.leaf_near(3), 3);
        assert_eq!(SnippetTrees::leaf_row(&t.predicted, 3), Some(9));
        assert_eq!(SnippetTrees::leaf_row(&t.gold, 3), Some(6));
    }

    #[test]
    fn a_right_span_with_a_wrong_label_is_relabelled_on_both_sides() {
        let mut pred = gold();
        pred.c[2] = "argument_list".into();
        let syn = parse("def f():\n  pass", Language::Python).unwrap();
        let covered: Vec<usize> = (0..syn.tokens.len()).collect();
        let t = compare(0, &syn, &covered, &gold(), &pred).unwrap();
        let label = |rows: &[Row], want: &str| {
            rows.iter()
                .find_map(|r| match &r.kind {
                    RowKind::Node { label, mark, .. } if label == want => Some(*mark),
                    _ => None,
                })
                .unwrap()
        };
        assert_eq!(label(&t.predicted, "argument_list"), Mark::Relabelled);
        assert_eq!(label(&t.gold, "parameters"), Mark::Relabelled);
        assert_eq!(label(&t.gold, "module"), Mark::Same);
        assert_eq!(counts(&t.predicted), (4, 1, 0));
        assert_eq!(Mark::Relabelled.glyph(), GLYPH_RELABELLED);
        // Gold against itself: nothing marked, F1 1.
        let same = compare(0, &syn, &covered, &gold(), &gold()).unwrap();
        assert_eq!(counts(&same.predicted), (5, 0, 0));
        assert_eq!(same.predicted, same.gold);
        assert_eq!(same.f1, 1.0);
    }

    #[test]
    fn leaf_near_skips_tokens_without_a_leaf() {
        let syn = parse("x = 1\ny = 2\nz = 3\n", Language::Python).unwrap();
        assert_eq!(syn.tokens.len(), 9);
        // A token without a hidden state (here `=`, token 1) has no leaf; tokens past
        // the probe's length limit neither.
        let covered: Vec<usize> = (0..9).filter(|&t| t != 1).collect();
        let g = crate::probe::astprobe::gold_encoding(&syn, &covered, 6).unwrap();
        let t = compare(1, &syn, &covered, &g, &g).unwrap();
        assert_eq!(t.tokens, [0, 2, 3, 4, 5, 6]);
        assert_eq!((t.leaves[1].as_str(), t.left_out), ("1", 2));
        // `=` follows the next leaf, `1`; past the last leaf, the last one.
        assert_eq!(t.leaf_near(1), 1);
        assert_eq!(t.leaf_near(8), 5);
        // Encodings of other lengths are refused.
        let short = crate::probe::astprobe::gold_encoding(&syn, &covered, 3).unwrap();
        assert!(compare(1, &syn, &covered, &g, &short).is_err());
    }
}
