//! Subword attention → code-token attention (docs/METHODS.md section 1, the study's
//! `attention/utils.py`).
//!
//! `A_tok[l,h,i,j] = mean_{p in S_i} mean_{q in S_j} a[l,h,p,q]`: rows are queries,
//! columns keys, `S_i` the subwords aligned to code token `i`. Special positions are
//! simply never in any `S_i` — they are dropped after the softmax and the rows are NOT
//! renormalised, as in the study. Hidden states: `H_tok[l,i] = mean_{p in S_i} h[l,p]`.
//!
//! Code tokens with no subword (beyond a truncated window, or empty) are not part of the
//! analysed set: [`TokenAttention::tokens`] lists the code-token indices that are, and all
//! matrices are over that set, in that order.

use crate::model::{Attention, Hidden};
use crate::syntax::Alignment;

/// Code-token attention for every layer and head, over the covered code tokens.
#[derive(Debug, Clone)]
pub struct TokenAttention {
    pub layers: usize,
    pub heads: usize,
    /// Indices into the syntax's token list of the tokens analysed (those with subwords).
    pub tokens: Vec<usize>,
    /// `data[((l * heads + h) * n + i) * n + j]`, `n = tokens.len()`.
    pub data: Vec<f32>,
}

impl TokenAttention {
    /// Number of analysed code tokens.
    pub fn n(&self) -> usize {
        self.tokens.len()
    }
    /// Whether the matrices are held. They always are, except in an analysis that asked
    /// for results only and whose matrices exceeded the attention budget
    /// ([`super::Matrices`]): then `data` is empty and the per-head
    /// results were computed layer by layer while each layer existed.
    pub fn resident(&self) -> bool {
        self.data.len() == self.layers * self.heads * self.n() * self.n()
    }
    /// The `[i][j]` matrix of one head, row-major (the matrices must be
    /// [`TokenAttention::resident`]).
    pub fn head(&self, l: usize, h: usize) -> &[f32] {
        let sz = self.n() * self.n();
        let start = (l * self.heads + h) * sz;
        &self.data[start..start + sz]
    }
    pub fn get(&self, l: usize, h: usize, i: usize, j: usize) -> f32 {
        let n = self.n();
        self.data[((l * self.heads + h) * n + i) * n + j]
    }
    /// Mean over heads of one layer, `[i][j]`.
    pub fn head_mean(&self, l: usize) -> Vec<f32> {
        let sz = self.n() * self.n();
        head_mean_of(
            &self.data[l * self.heads * sz..(l + 1) * self.heads * sz],
            self.heads,
            self.n(),
        )
    }
    /// Mean over all layers and heads, `[i][j]`.
    pub fn overall_mean(&self) -> Vec<f32> {
        let sz = self.n() * self.n();
        let mut out = vec![0.0f32; sz];
        for chunk in self.data.chunks_exact(sz.max(1)) {
            for (o, &a) in out.iter_mut().zip(chunk) {
                *o += a;
            }
        }
        let k = 1.0 / (self.layers * self.heads).max(1) as f32;
        out.iter_mut().for_each(|o| *o *= k);
        out
    }
}

/// Mean over the heads of one layer's code-token attention `layer` (`[head][i][j]`,
/// `heads * n * n`), `[i][j]`: the heads added in order, then scaled (the analysis's
/// layer means add in the same order).
pub fn head_mean_of(layer: &[f32], heads: usize, n: usize) -> Vec<f32> {
    let sz = n * n;
    let mut out = vec![0.0f32; sz];
    for h in 0..heads {
        for (o, &a) in out.iter_mut().zip(&layer[h * sz..(h + 1) * sz]) {
            *o += a;
        }
    }
    let k = 1.0 / heads.max(1) as f32;
    out.iter_mut().for_each(|o| *o *= k);
    out
}

/// Subword attention of one layer at a time -> code-token attention: the analysed
/// tokens and their subword groups, fixed once per input (before its forward pass).
#[derive(Debug, Clone)]
pub struct Aggregator {
    /// Indices into the syntax's token list of the analysed tokens (those with subwords).
    pub tokens: Vec<usize>,
    /// The subwords (below `len`) of each analysed token.
    groups: Vec<Vec<usize>>,
    /// A group that is one contiguous run of subwords: `(first, end)`.
    runs: Vec<Option<(usize, usize)>>,
    /// Number of subwords (rows and columns of the subword attention).
    len: usize,
}

impl Aggregator {
    /// For subword attention over `len` positions and the alignment `align`.
    pub fn new(len: usize, align: &Alignment) -> Self {
        let tokens: Vec<usize> = (0..align.token_to_subwords.len())
            .filter(|&i| align.token_to_subwords[i].iter().any(|&p| p < len))
            .collect();
        let groups: Vec<Vec<usize>> = tokens
            .iter()
            .map(|&i| {
                align.token_to_subwords[i]
                    .iter()
                    .copied()
                    .filter(|&p| p < len)
                    .collect()
            })
            .collect();
        // A token's subwords are usually one contiguous run (often of length 1): then its
        // row is read in place and its column sum is a short slice sum instead of a gather.
        let runs: Vec<Option<(usize, usize)>> = groups
            .iter()
            .map(|g| {
                let (first, last) = (*g.first()?, *g.last()?);
                (last + 1 - first == g.len()).then_some((first, last + 1))
            })
            .collect();
        Aggregator {
            tokens,
            groups,
            runs,
            len,
        }
    }

    /// Number of analysed code tokens.
    pub fn n(&self) -> usize {
        self.tokens.len()
    }

    /// Number of subwords (rows and columns of the subword attention).
    pub fn subwords(&self) -> usize {
        self.len
    }

    /// One layer's code-token attention `[head][i][j]` into `out` (`heads * n * n`) from
    /// its subword attention `att` (`[head][q][k]`, `heads * len * len`).
    pub fn layer_into(&self, att: &[f32], heads: usize, out: &mut [f32]) {
        codescope_kernels::analysis::aggregate_layer(
            att,
            heads,
            self.len,
            &self.groups,
            &self.runs,
            out,
        );
    }
}

/// Aggregate subword attention to code tokens (mean over subword pairs), every layer.
pub fn aggregate(att: &Attention, align: &Alignment) -> TokenAttention {
    let agg = Aggregator::new(att.len, align);
    let n = agg.n();
    let layers = att.num_layers();
    let per_layer = att.heads * n * n;
    let mut data = vec![0.0f32; layers * per_layer];
    for (l, out) in data
        .chunks_exact_mut(per_layer.max(1))
        .enumerate()
        .take(layers)
    {
        agg.layer_into(&att.layers[l], att.heads, out);
    }
    TokenAttention {
        layers,
        heads: att.heads,
        tokens: agg.tokens,
        data,
    }
}

/// Code-token hidden states `[layer+1][i][dim]` (mean over each token's subwords), for
/// the tokens of `ta.tokens`.
pub fn aggregate_hidden(hidden: &Hidden, align: &Alignment, tokens: &[usize]) -> Vec<Vec<f32>> {
    let d = hidden.dim;
    hidden
        .layers
        .iter()
        .enumerate()
        .map(|(l, _)| {
            let mut out = vec![0.0f32; tokens.len() * d];
            for (i, &t) in tokens.iter().enumerate() {
                let g: Vec<usize> = align.token_to_subwords[t]
                    .iter()
                    .copied()
                    .filter(|&p| p < hidden.len)
                    .collect();
                let o = &mut out[i * d..(i + 1) * d];
                for &p in &g {
                    for (x, &v) in o.iter_mut().zip(hidden.vector(l, p)) {
                        *x += v;
                    }
                }
                let k = 1.0 / g.len().max(1) as f32;
                o.iter_mut().for_each(|x| *x *= k);
            }
            out
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mean_over_subword_pairs_without_renormalising() {
        // 5 subwords: [CLS] a1 a2 b [SEP]; token 0 = {1,2}, token 1 = {3}.
        let m = 5;
        #[rustfmt::skip]
        let a: Vec<f32> = vec![
            0.2, 0.2, 0.2, 0.2, 0.2,
            0.1, 0.1, 0.3, 0.4, 0.1,
            0.5, 0.1, 0.1, 0.2, 0.1,
            0.3, 0.2, 0.2, 0.2, 0.1,
            0.2, 0.2, 0.2, 0.2, 0.2,
        ];
        let att = Attention {
            heads: 1,
            len: m,
            layers: vec![a],
        };
        let align = Alignment {
            subword_to_tokens: vec![vec![], vec![0], vec![0], vec![1], vec![]],
            token_to_subwords: vec![vec![1, 2], vec![3]],
        };
        let ta = aggregate(&att, &align);
        assert_eq!(ta.tokens, vec![0, 1]);
        // A[0][0] = mean(a11, a12, a21, a22) = (0.1 + 0.3 + 0.1 + 0.1) / 4 = 0.15
        assert!((ta.get(0, 0, 0, 0) - 0.15).abs() < 1e-6);
        // A[0][1] = mean(a13, a23) = (0.4 + 0.2) / 2 = 0.3
        assert!((ta.get(0, 0, 0, 1) - 0.3).abs() < 1e-6);
        // A[1][0] = mean(a31, a32) = 0.2 ; A[1][1] = a33 = 0.2
        assert!((ta.get(0, 0, 1, 0) - 0.2).abs() < 1e-6);
        assert!((ta.get(0, 0, 1, 1) - 0.2).abs() < 1e-6);
        // Rows are not renormalised: row 1 sums to 0.4, not 1.
        let row1: f32 = ta.head(0, 0)[2..4].iter().sum();
        assert!((row1 - 0.4).abs() < 1e-6);
    }

    #[test]
    fn tokens_beyond_the_window_are_left_out() {
        let att = Attention {
            heads: 1,
            len: 2,
            layers: vec![vec![0.5, 0.5, 0.5, 0.5]],
        };
        let align = Alignment {
            subword_to_tokens: vec![vec![0], vec![1], vec![2]],
            token_to_subwords: vec![vec![0], vec![1], vec![2], vec![]],
        };
        let ta = aggregate(&att, &align);
        assert_eq!(ta.tokens, vec![0, 1]);
        assert_eq!(ta.head(0, 0), &[0.5, 0.5, 0.5, 0.5]);
    }
}

#[cfg(test)]
mod blocked_tests {
    use codescope_kernels::analysis::{aggregate_layer, aggregate_layer_scalar};

    /// Groups as the alignment makes them: runs of 1–4 subwords, some skipped subwords,
    /// and a few non-contiguous groups; values from a fixed LCG.
    fn case(m: usize, heads: usize, seed: u64) -> (Vec<f32>, Vec<Vec<usize>>) {
        let mut x = seed;
        let mut next = move || {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (x >> 33) as usize
        };
        let att: Vec<f32> = (0..heads * m * m)
            .map(|_| (next() % 10_000) as f32 / 7_919.0)
            .collect();
        let mut groups = Vec::new();
        let mut q = 1;
        while q < m {
            let len = 1 + next() % 4;
            let end = (q + len).min(m);
            if next() % 9 == 0 && end + 2 < m {
                groups.push(vec![q, end + 1]);
            } else {
                groups.push((q..end).collect());
            }
            q = end + next() % 2;
        }
        (att, groups)
    }

    #[test]
    fn blocked_aggregation_is_bit_identical_to_the_scalar_one() {
        // Tails and exact multiples of the 8-row blocks and 8-column transposes, in m
        // (subwords) and in n (code tokens, the groups the generator makes).
        for (m, heads, seed) in [
            (1, 1, 1),
            (2, 2, 2),
            (5, 2, 6),
            (8, 1, 7),
            (16, 2, 8),
            (24, 1, 9),
            (37, 3, 3),
            (64, 2, 10),
            (130, 2, 4),
            (257, 4, 5),
        ] {
            let (att, mut groups) = case(m, heads, seed);
            if groups.is_empty() {
                groups.push(vec![0]);
            }
            let runs: Vec<Option<(usize, usize)>> = groups
                .iter()
                .map(|g| {
                    let (f, l) = (g[0], *g.last().unwrap());
                    (l + 1 - f == g.len()).then_some((f, l + 1))
                })
                .collect();
            let n = groups.len();
            let mut fast = vec![0.0f32; heads * n * n];
            let mut slow = vec![1.0f32; heads * n * n];
            aggregate_layer(&att, heads, m, &groups, &runs, &mut fast);
            aggregate_layer_scalar(&att, heads, m, &groups, &runs, &mut slow);
            let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(&fast), bits(&slow), "m {m}, {n} tokens");
        }
    }
}
