//! The probes' training loops that run over every pair or every row of a batch:
//! AST-Probe's rank hinge over the token pairs of a snippet, and softmax cross-entropy
//! with its gradient. The arithmetic and its order are codescope's
//! (`probe::astprobe::train`, whose tests check them against candle's autograd).

/// AST-Probe's rank loss over one snippet: for every ordered pair `(i, j)` with
/// `d[i] > d[j]`, the hinge `max(0, 1 - (dh[i] - dh[j]))`, added to `hinge` in `(i, j)`
/// order (so a batch's snippets accumulate in one running f64 sum). Returns the number of
/// such pairs; for each active pair (hinge argument >= 0: relu' = 1 at 0, as candle's)
/// `count[i] -= 1` and `count[j] += 1`.
pub fn rank_hinge(d: &[f32], dh: &[f32], count: &mut [f32], hinge: &mut f64) -> usize {
    assert_eq!(d.len(), dh.len());
    assert_eq!(d.len(), count.len());
    let mut pairs = 0usize;
    for i in 0..d.len() {
        for j in 0..d.len() {
            if d[i] > d[j] {
                pairs += 1;
                let v = 1.0 - (dh[i] - dh[j]);
                if v >= 0.0 {
                    *hinge += v as f64;
                    count[i] -= 1.0;
                    count[j] += 1.0;
                }
            }
        }
    }
    pairs
}

/// Mean softmax cross-entropy of the rows of `z` (`[target.len(), k]`) against `target`.
/// With `grad`, `z` is overwritten with the gradient of the mean loss
/// (`softmax / rows`, minus `1 / rows` at the target); otherwise with the row's
/// exponentials.
pub fn cross_entropy(z: &mut [f32], k: usize, target: &[u32], grad: bool) -> f64 {
    let rows = target.len();
    let mut loss = 0f64;
    let inv = 1.0 / rows.max(1) as f32;
    for (row, &t) in z.chunks_exact_mut(k).zip(target) {
        let max = row.iter().copied().fold(f32::NEG_INFINITY, f32::max);
        let zt = row[t as usize] - max;
        // Each exponential once, kept for the gradient.
        for v in row.iter_mut() {
            *v = (*v - max).exp();
        }
        let sum: f32 = row.iter().sum();
        loss -= (zt - sum.ln()) as f64;
        if grad {
            for v in row.iter_mut() {
                *v = *v / sum * inv;
            }
            row[t as usize] -= inv;
        }
    }
    loss / rows.max(1) as f64
}
