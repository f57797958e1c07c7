//! Attention between token categories: the coarse 2x2 (syntactic / identifier) and the
//! fine 5x5 (keyword, operator, delimiter, literal, identifier) matrices.
//!
//! For a code-token attention matrix `A` and query class `c1`, key class `c2`:
//! - `mean[c1][c2]`: the mean of `A[i][j]` over pairs `i != j` with `class(i) = c1`,
//!   `class(j) = c2` (self-pairs excluded; `None` when there is no such pair);
//! - `share[c1][c2]`: the fraction of the attention mass of `c1` rows (self excluded)
//!   that goes to `c2` keys: `sum_{i in c1, j in c2, j != i} A[i][j] / sum_{i in c1,
//!   j != i} A[i][j]`. Rows need not sum to 1 (special positions were dropped), so
//!   shares are normalised by the mass that stays on code tokens.
//!
//! Averages over heads or layers are the same statistics of the head- (or layer-)
//! averaged matrix: identical to averaging `mean` (it is linear in `A` over a fixed pair
//! set) and the mass-weighted average of `share`.

use serde::Serialize;

use crate::syntax::{Category, Coarse, CodeToken};

/// Names of the coarse classes, in index order.
pub const COARSE: [&str; 2] = ["syn", "id"];
/// Names of the fine classes, in index order.
pub const FINE: [&str; 5] = ["keyword", "operator", "delimiter", "literal", "identifier"];

/// Coarse class index of a token (0 = syntactic, 1 = identifier).
pub fn coarse_class(t: &CodeToken) -> usize {
    match t.coarse {
        Coarse::Syntactic => 0,
        Coarse::Identifier => 1,
    }
}

/// Fine class index of a token, in [`FINE`] order.
pub fn fine_class(t: &CodeToken) -> usize {
    match t.category {
        Category::Keyword => 0,
        Category::Operator => 1,
        Category::Delimiter => 2,
        Category::Literal => 3,
        Category::Identifier => 4,
    }
}

/// A `k x k` category matrix (row = query class, column = key class).
#[derive(Debug, Clone, PartialEq)]
pub struct CategoryMatrix {
    pub k: usize,
    pub mean: Vec<Option<f64>>,
    pub share: Vec<Option<f64>>,
    /// Summed attention and pair counts per cell (self pairs excluded), kept so that
    /// coarser matrices can be derived without another pass over `A`.
    sum: Vec<f64>,
    count: Vec<usize>,
}

impl CategoryMatrix {
    /// Compute from an `n x n` attention matrix and per-token classes.
    pub fn compute(a: &[f32], n: usize, classes: &[usize], k: usize) -> Self {
        // Columns grouped by class once; each row then sums per class without scattered
        // writes, and the self pair is taken out afterwards.
        let mut members: Vec<Vec<usize>> = vec![Vec::new(); k];
        for (j, &c) in classes.iter().enumerate().take(n) {
            members[c].push(j);
        }
        let mut sum = vec![0.0f64; k * k];
        let mut count = vec![0usize; k * k];
        for c1 in 0..k {
            for c2 in 0..k {
                let m = members[c2].len();
                count[c1 * k + c2] =
                    members[c1].len() * m - if c1 == c2 { members[c1].len() } else { 0 };
            }
        }
        let mut row_sums = vec![0.0f32; n * k];
        codescope_kernels::analysis::class_row_sums(&a[..n * n], n, &members, &mut row_sums);
        for i in 0..n {
            let ci = classes[i];
            for (c2, &s) in row_sums[i * k..(i + 1) * k].iter().enumerate() {
                let s = if c2 == ci { s - a[i * n + i] } else { s };
                sum[ci * k + c2] += s as f64;
            }
        }
        Self::from_sums(k, sum, count)
    }

    /// The coarse (syntactic / identifier) matrix of a fine one: the first four fine
    /// classes are syntactic, the fifth is identifier ([`FINE`] order).
    pub fn coarse_of_fine(fine: &CategoryMatrix) -> Self {
        assert_eq!(fine.k, FINE.len());
        let cls = |c: usize| usize::from(c == 4);
        let mut sum = vec![0.0; 4];
        let mut count = vec![0; 4];
        for q in 0..fine.k {
            for k in 0..fine.k {
                let c = cls(q) * 2 + cls(k);
                sum[c] += fine.sum[q * fine.k + k];
                count[c] += fine.count[q * fine.k + k];
            }
        }
        Self::from_sums(2, sum, count)
    }

    fn from_sums(k: usize, sum: Vec<f64>, count: Vec<usize>) -> Self {
        let mean = sum
            .iter()
            .zip(&count)
            .map(|(&s, &c)| (c > 0).then(|| s / c as f64))
            .collect();
        let mut share = vec![None; k * k];
        for c1 in 0..k {
            let row_mass: f64 = (0..k).map(|c2| sum[c1 * k + c2]).sum();
            let row_pairs: usize = (0..k).map(|c2| count[c1 * k + c2]).sum();
            if row_pairs > 0 && row_mass > 0.0 {
                for c2 in 0..k {
                    share[c1 * k + c2] = Some(sum[c1 * k + c2] / row_mass);
                }
            }
        }
        CategoryMatrix {
            k,
            mean,
            share,
            sum,
            count,
        }
    }

    pub fn mean_at(&self, q: usize, k: usize) -> Option<f64> {
        self.mean[q * self.k + k]
    }
    pub fn share_at(&self, q: usize, k: usize) -> Option<f64> {
        self.share[q * self.k + k]
    }

    /// The mean weight of cell `(q, k)` relative to uniform attention over `n` tokens
    /// (`mean / (1/n)`): 1 where a query class attends to a key class's tokens as much as
    /// an even spread would, so long snippets (where every mean is about `1/n`) stay
    /// comparable with short ones.
    pub fn ratio_to_uniform_at(&self, q: usize, k: usize, n: usize) -> Option<f64> {
        self.mean_at(q, k).map(|m| m * n as f64)
    }

    /// `{"q->k": mean}` with the given class names (JSON of `analyze`).
    pub fn named(&self, names: &[&str], share: bool) -> serde_json::Map<String, serde_json::Value> {
        let mut m = serde_json::Map::new();
        for q in 0..self.k {
            for k in 0..self.k {
                let v = if share {
                    self.share_at(q, k)
                } else {
                    self.mean_at(q, k)
                };
                m.insert(
                    format!("{}->{}", names[q], names[k]),
                    v.map(serde_json::Value::from)
                        .unwrap_or(serde_json::Value::Null),
                );
            }
        }
        m
    }
}

impl Serialize for CategoryMatrix {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let names: &[&str] = if self.k == 2 { &COARSE } else { &FINE };
        self.named(names, false).serialize(s)
    }
}

#[cfg(test)]
mod tests {

    use super::*;

    #[test]
    fn blocked_class_sums_are_bit_identical_to_one_row_at_a_time() {
        use codescope_kernels::analysis::{class_row_sums, class_row_sums_scalar};
        let mut rng = crate::model::testutil::SplitMix::new(11);
        for n in [1usize, 3, 8, 9, 17, 64, 218] {
            let a: Vec<f32> = rng.vec(n * n, 1.0).into_iter().map(f32::abs).collect();
            // Five classes, unevenly filled (one empty), members in column order.
            let mut members = vec![Vec::new(); 5];
            for j in 0..n {
                members[(j * 7 + j / 3) % 4].push(j);
            }
            let (mut fast, mut slow) = (vec![0.0f32; n * 5], vec![1.0f32; n * 5]);
            class_row_sums(&a, n, &members, &mut fast);
            class_row_sums_scalar(&a, n, &members, &mut slow);
            let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(&fast), bits(&slow), "n {n}");
        }
    }

    #[test]
    fn coarse_derived_from_fine_equals_direct() {
        let mut rng = crate::model::testutil::SplitMix::new(5);
        let n = 11;
        let a: Vec<f32> = rng.vec(n * n, 0.5).into_iter().map(|x| x + 0.5).collect();
        let fine: Vec<usize> = (0..n).map(|i| (i * 7 + 3) % 5).collect();
        let coarse: Vec<usize> = fine.iter().map(|&c| usize::from(c == 4)).collect();
        let f = CategoryMatrix::compute(&a, n, &fine, 5);
        let direct = CategoryMatrix::compute(&a, n, &coarse, 2);
        let derived = CategoryMatrix::coarse_of_fine(&f);
        for i in 0..4 {
            let (x, y) = (direct.mean[i].unwrap(), derived.mean[i].unwrap());
            assert!((x - y).abs() < 1e-6);
            let (x, y) = (direct.share[i].unwrap(), derived.share[i].unwrap());
            assert!((x - y).abs() < 1e-6);
        }
    }

    #[test]
    fn uniform_attention_is_ratio_one() {
        // Every query spreads evenly over n = 4 tokens: each pair gets 1/4.
        let n = 4;
        let a = vec![0.25f32; n * n];
        let m = CategoryMatrix::compute(&a, n, &[0, 1, 0, 1], 2);
        for q in 0..2 {
            for k in 0..2 {
                let r = m.ratio_to_uniform_at(q, k, n).unwrap();
                assert!((r - 1.0).abs() < 1e-9, "{q}->{k}: {r}");
            }
        }
        // Twice uniform on one pair class.
        let b = [0.5f32, 0.5, 0.0, 0.0].repeat(4);
        let m = CategoryMatrix::compute(&b, n, &[0, 0, 1, 1], 2);
        // id queries (2, 3) -> syn keys (0, 1): every weight 0.5 = 2/n.
        assert!((m.ratio_to_uniform_at(1, 0, n).unwrap() - 2.0).abs() < 1e-9);
    }

    #[test]
    fn hand_worked_means_and_shares() {
        // Tokens: 0 syn, 1 id, 2 syn.
        #[rustfmt::skip]
        let a = [
            0.9, 0.6, 0.2,
            0.1, 0.5, 0.3,
            0.4, 0.4, 0.0,
        ];
        let m = CategoryMatrix::compute(&a, 3, &[0, 1, 0], 2);
        // syn->syn pairs (0,2),(2,0): (0.2 + 0.4) / 2
        assert!((m.mean_at(0, 0).unwrap() - 0.3).abs() < 1e-6);
        // syn->id pairs (0,1),(2,1): (0.6 + 0.4) / 2
        assert!((m.mean_at(0, 1).unwrap() - 0.5).abs() < 1e-6);
        // id->syn pairs (1,0),(1,2): (0.1 + 0.3) / 2
        assert!((m.mean_at(1, 0).unwrap() - 0.2).abs() < 1e-6);
        // id->id: only the self pair, excluded.
        assert_eq!(m.mean_at(1, 1), None);
        // Shares: syn rows put 0.6 on syn and 1.0 on id (self excluded).
        assert!((m.share_at(0, 0).unwrap() - 0.6 / 1.6).abs() < 1e-6);
        assert!((m.share_at(0, 1).unwrap() - 1.0 / 1.6).abs() < 1e-6);
        assert!((m.share_at(1, 0).unwrap() - 1.0).abs() < 1e-6);
        assert!((m.share_at(1, 1).unwrap() - 0.0).abs() < 1e-6);
        let j = serde_json::to_value(&m).unwrap();
        assert!((j["syn->id"].as_f64().unwrap() - 0.5).abs() < 1e-6);
        assert!(j["id->id"].is_null());
    }
}
