//! Head attention versus gold relation graphs (docs/METHODS.md section 3).
//!
//! For layer l, head h and threshold t the predicted graph is `P = [A_tok[l,h] > t]`,
//! diagonal included (as in the study). Against a gold graph G over the same tokens:
//! `TP = |P ∧ G|`, `precision = TP/|P|`, `recall = TP/|G|` (0 when the denominator is 0),
//! `F1 = 2PR/(P+R)` (0 when P+R = 0), and the identity graph-edit distance per node
//! `|E_P xor E_G| / n` (the study used a networkx heuristic; identity matching is exact
//! and so can only be ≥ their values' lower bound — expect close, not equal).

use serde::Serialize;

use super::attention::TokenAttention;

/// Step of the study's threshold grid (docs/METHODS.md 3).
pub const THRESHOLD_STEP: f32 = 0.05;
/// Number of steps to the grid's top: `THRESHOLD_STEPS * THRESHOLD_STEP` = 0.40.
pub const THRESHOLD_STEPS: u8 = 8;

/// The threshold grid of the study: 0, 0.05, ..., 0.40.
pub fn threshold_grid() -> Vec<f32> {
    (0..=THRESHOLD_STEPS)
        .map(|i| i as f32 * THRESHOLD_STEP)
        .collect()
}

/// Scores of one predicted graph against one gold graph.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Score {
    pub precision: f64,
    pub recall: f64,
    pub f1: f64,
    /// `|E_P xor E_G| / n`.
    pub ged_per_node: f64,
    pub predicted: usize,
    pub true_positives: usize,
}

/// Scores from counts: `predicted = |P|`, `tp = |P ∧ G|`, `gold_edges = |G|`.
pub fn score_counts(predicted: usize, tp: usize, gold_edges: usize, n: usize) -> Score {
    let precision = if predicted == 0 {
        0.0
    } else {
        tp as f64 / predicted as f64
    };
    let recall = if gold_edges == 0 {
        0.0
    } else {
        tp as f64 / gold_edges as f64
    };
    let f1 = if precision + recall == 0.0 {
        0.0
    } else {
        2.0 * precision * recall / (precision + recall)
    };
    let xor = (predicted - tp) + (gold_edges - tp);
    Score {
        precision,
        recall,
        f1,
        ged_per_node: if n == 0 { 0.0 } else { xor as f64 / n as f64 },
        predicted,
        true_positives: tp,
    }
}

/// Score an attention matrix `a` (`n x n`, row-major) thresholded at `t` against the
/// gold edge set `gold` (a dense `n x n` 0/1 mask).
pub fn score(a: &[f32], gold: &[bool], n: usize, gold_edges: usize, t: f32) -> Score {
    // Branch-free counts (vectorise): this runs for every head and graph.
    let mut predicted = 0usize;
    let mut tp = 0usize;
    for (x, &g) in a.iter().zip(gold) {
        let p = usize::from(*x > t);
        predicted += p;
        tp += p & usize::from(g);
    }
    score_counts(predicted, tp, gold_edges, n)
}

/// Number of entries of `a` above `t` (vectorised, in `codescope-kernels`).
pub use codescope_kernels::analysis::count_above;

/// Scores of one head (`n x n` matrix `a`) against one gold graph at every threshold of
/// `ts`, given the head's predicted-edge counts `predicted[k] = |a > ts[k]|` (shared by
/// all graphs): the true positives are counted over the gold edges only.
pub fn score_sparse(a: &[f32], gold: &GoldMask, ts: &[f32], predicted: &[usize]) -> Vec<Score> {
    ts.iter()
        .zip(predicted)
        .map(|(&t, &p)| {
            let tp = gold
                .edge_list
                .iter()
                .filter(|&&e| a[e as usize] > t)
                .count();
            score_counts(p, tp, gold.edges, gold.n)
        })
        .collect()
}

/// Scores of one head (`n x n` matrix `a`) against each of `golds` at each threshold of
/// `ts`, `[gold][threshold]`: its predicted-edge counts (vectorised, one pass per
/// threshold) are shared by all graphs, and true positives are counted over each graph's
/// edges only.
pub fn head_scores(a: &[f32], golds: &[&GoldMask], ts: &[f32]) -> Vec<Vec<Score>> {
    let predicted: Vec<usize> = ts.iter().map(|&t| count_above(a, t)).collect();
    golds
        .iter()
        .map(|g| score_sparse(a, g, ts, &predicted))
        .collect()
}

/// A gold graph restricted to the analysed tokens, as a dense mask and an edge list.
#[derive(Debug, Clone)]
pub struct GoldMask {
    pub n: usize,
    pub mask: Vec<bool>,
    pub edges: usize,
    /// The edges as flat indices `i * n + j`, ascending.
    pub edge_list: Vec<u32>,
}

impl GoldMask {
    /// Map edges over syntax-token indices onto the analysed subset `tokens` (edges with
    /// an end outside the subset, e.g. beyond a truncated window, are dropped).
    pub fn new(
        edges: impl IntoIterator<Item = (usize, usize)>,
        tokens: &[usize],
        n_all: usize,
    ) -> Self {
        let mut pos = vec![usize::MAX; n_all];
        for (k, &t) in tokens.iter().enumerate() {
            if t < n_all {
                pos[t] = k;
            }
        }
        let n = tokens.len();
        let mut mask = vec![false; n * n];
        let mut count = 0;
        for (i, j) in edges {
            let (Some(&a), Some(&b)) = (pos.get(i), pos.get(j)) else {
                continue;
            };
            if a == usize::MAX || b == usize::MAX {
                continue;
            }
            if !mask[a * n + b] {
                mask[a * n + b] = true;
                count += 1;
            }
        }
        let edge_list = mask
            .iter()
            .enumerate()
            .filter(|(_, &b)| b)
            .map(|(k, _)| k as u32)
            .collect();
        GoldMask {
            n,
            mask,
            edges: count,
            edge_list,
        }
    }
}

/// Scores of every layer and head against one gold graph at one threshold.
#[derive(Debug, Clone, Default, Serialize)]
pub struct HeadScores {
    pub edges: usize,
    pub threshold: f32,
    /// `[layer][head]`.
    pub scores: Vec<Vec<Score>>,
}

impl HeadScores {
    /// Scores of every layer and head at threshold `t`.
    pub fn compute(ta: &TokenAttention, gold: &GoldMask, t: f32) -> Self {
        Self::at(ta, &[gold], &[t]).remove(0).remove(0)
    }

    /// Scores at every threshold of `grid` (one [`HeadScores`] per threshold).
    pub fn sweep(ta: &TokenAttention, gold: &GoldMask, grid: &[f32]) -> Vec<HeadScores> {
        Self::at(ta, &[gold], grid).remove(0)
    }

    /// Scores of every layer and head against each of `golds` at each threshold of `ts`,
    /// `[gold][threshold]`, in one visit of each head: its predicted-edge counts
    /// (vectorised, one pass per threshold) are shared by all graphs, and true positives
    /// are counted over each graph's edges only.
    pub fn at(ta: &TokenAttention, golds: &[&GoldMask], ts: &[f32]) -> Vec<Vec<HeadScores>> {
        use rayon::prelude::*;
        let per_layer: Vec<Vec<Vec<Vec<Score>>>> = (0..ta.layers)
            .into_par_iter()
            .map(|l| {
                (0..ta.heads)
                    .map(|h| head_scores(ta.head(l, h), golds, ts))
                    .collect()
            })
            .collect();
        Self::assemble(&per_layer, golds, ts)
    }

    /// `[gold][threshold]` tables from per-head scores `[layer][head][gold][threshold]`
    /// (each from [`head_scores`]).
    pub fn assemble(
        per_layer: &[Vec<Vec<Vec<Score>>>],
        golds: &[&GoldMask],
        ts: &[f32],
    ) -> Vec<Vec<HeadScores>> {
        golds
            .iter()
            .enumerate()
            .map(|(gi, g)| {
                ts.iter()
                    .enumerate()
                    .map(|(ti, &t)| HeadScores {
                        edges: g.edges,
                        threshold: t,
                        scores: per_layer
                            .iter()
                            .map(|heads| heads.iter().map(|s| s[gi][ti]).collect())
                            .collect(),
                    })
                    .collect()
            })
            .collect()
    }

    /// `(head, score)` with the best F1 in each layer (first head on ties).
    pub fn best_per_layer(&self) -> Vec<(usize, Score)> {
        self.scores
            .iter()
            .map(|row| {
                let mut best = (0, row.first().copied().unwrap_or_default());
                for (h, s) in row.iter().enumerate().skip(1) {
                    if s.f1 > best.1.f1 {
                        best = (h, *s);
                    }
                }
                best
            })
            .collect()
    }

    /// One metric as `[layer][head]`.
    pub fn metric(&self, f: impl Fn(&Score) -> f64) -> Vec<Vec<f64>> {
        self.scores
            .iter()
            .map(|row| row.iter().map(&f).collect())
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hand_worked_precision_recall_f1_ged() {
        // 3 tokens; gold edges 0->1, 1->2, 2->0.
        let gold = GoldMask::new([(0, 1), (1, 2), (2, 0)], &[0, 1, 2], 3);
        assert_eq!(gold.edges, 3);
        #[rustfmt::skip]
        let a = [
            0.50, 0.30, 0.01,   // predicts 0->0 (diag), 0->1 (TP)
            0.02, 0.04, 0.06,   // predicts 1->2 (TP)
            0.05, 0.90, 0.05,   // 0.05 is not > 0.05: predicts 2->1 only (FP)
        ];
        let s = score(&a, &gold.mask, 3, gold.edges, 0.05);
        // P = {00, 01, 12, 21}: TP = 2 -> precision 2/4, recall 2/3, F1 = 4/7.
        assert_eq!((s.predicted, s.true_positives), (4, 2));
        assert!((s.precision - 0.5).abs() < 1e-12);
        assert!((s.recall - 2.0 / 3.0).abs() < 1e-12);
        assert!((s.f1 - 4.0 / 7.0).abs() < 1e-12);
        // xor = 2 FP + 1 FN = 3 over 3 nodes.
        assert!((s.ged_per_node - 1.0).abs() < 1e-12);
        // Threshold 0: everything above 0 is predicted: 9 edges, TP 3.
        let s0 = score(&a, &gold.mask, 3, gold.edges, 0.0);
        assert_eq!((s0.predicted, s0.true_positives), (9, 3));
        assert!((s0.recall - 1.0).abs() < 1e-12);
        // Empty gold: recall 0, F1 0, no division by zero.
        let empty = GoldMask::new([], &[0, 1, 2], 3);
        let se = score(&a, &empty.mask, 3, 0, 0.05);
        assert_eq!((se.recall, se.f1), (0.0, 0.0));
        assert_eq!(threshold_grid().len(), 9);
        assert!((threshold_grid()[8] - 0.40).abs() < 1e-6);
    }

    #[test]
    fn sparse_counts_equal_the_dense_mask() {
        let mut rng = crate::model::testutil::SplitMix::new(11);
        let (layers, heads, n) = (2, 3, 9);
        let data: Vec<f32> = rng
            .vec(layers * heads * n * n, 0.25)
            .into_iter()
            .map(|x| x + 0.2)
            .collect();
        let ta = TokenAttention {
            layers,
            heads,
            tokens: (0..n).collect(),
            data,
        };
        let gold = GoldMask::new(
            (0..n).flat_map(|i| [(i, (i + 1) % n), (i, (i + 3) % n)]),
            &ta.tokens,
            n,
        );
        let grid = threshold_grid();
        let swept = HeadScores::sweep(&ta, &gold, &grid);
        for (i, &t) in grid.iter().enumerate() {
            for l in 0..layers {
                for h in 0..heads {
                    let dense = score(ta.head(l, h), &gold.mask, n, gold.edges, t);
                    assert_eq!(swept[i].scores[l][h], dense, "threshold {t}");
                }
            }
        }
        // Long rows cross the vector chunks and the remainder.
        let a: Vec<f32> = (0..1003).map(|i| (i % 17) as f32 / 17.0).collect();
        assert_eq!(count_above(&a, 0.5), a.iter().filter(|&&x| x > 0.5).count());
    }

    #[test]
    fn gold_mask_maps_onto_the_analysed_subset() {
        // Tokens 0..4, only 1 and 3 analysed.
        let g = GoldMask::new([(1, 3), (0, 1), (3, 1), (3, 1)], &[1, 3], 4);
        assert_eq!(g.edges, 2);
        assert_eq!(g.mask, vec![false, true, true, false]);
    }
}
