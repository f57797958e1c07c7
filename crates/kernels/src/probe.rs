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

/// AST-Probe's consecutive-token differences: for each `e`, with `a = rows[e]`,
/// `delta[e] = t[a + 1] - t[a]` (rows of width `r`) and `dhat[e] = |delta[e]|²` (summed
/// in `k` order).
pub fn consecutive_deltas(
    t: &[f32],
    r: usize,
    rows: &[usize],
    delta: &mut [f32],
    dhat: &mut [f32],
) {
    assert_eq!(delta.len(), rows.len() * r);
    assert_eq!(dhat.len(), rows.len());
    for (e, &a) in rows.iter().enumerate() {
        let (ta, tb) = (&t[a * r..(a + 1) * r], &t[(a + 1) * r..(a + 2) * r]);
        let de = &mut delta[e * r..(e + 1) * r];
        let mut s = 0f32;
        for k in 0..r {
            de[k] = tb[k] - ta[k];
            s += de[k] * de[k];
        }
        dhat[e] = s;
    }
}

/// The rank loss's gradient through [`consecutive_deltas`]: `gdelta[e] += 2 count[e] inv
/// delta[e]`, then row `rows[e] + 1` of `gt` gets `+gdelta[e]` and row `rows[e]` gets
/// `-gdelta[e]` (rows of width `r`, in `e` order).
pub fn delta_gradients(
    rows: &[usize],
    count: &[f32],
    inv: f32,
    r: usize,
    delta: &[f32],
    gdelta: &mut [f32],
    gt: &mut [f32],
) {
    for (e, &a) in rows.iter().enumerate() {
        let w = 2.0 * count[e] * inv;
        let (de, ge) = (&delta[e * r..(e + 1) * r], &mut gdelta[e * r..(e + 1) * r]);
        for k in 0..r {
            ge[k] += w * de[k];
        }
        for k in 0..r {
            gt[(a + 1) * r + k] += ge[k];
            gt[a * r + k] -= ge[k];
        }
    }
}

/// One Adam step on one parameter tensor, per element as candle's `AdamW` (weight decay
/// 0) computes it: `m = m b1 + g c1`, `v = v b2 + g² c2`,
/// `theta -= (m scale_m) / (sqrt(v scale_v) + eps) lr`.
#[allow(clippy::too_many_arguments)]
pub fn adam_update(
    theta: &mut [f32],
    g: &[f32],
    m: &mut [f32],
    v: &mut [f32],
    (b1, b2): (f32, f32),
    (c1, c2): (f32, f32),
    (scale_m, scale_v): (f32, f32),
    lr: f32,
    eps: f32,
) {
    assert!(g.len() == theta.len() && m.len() == theta.len() && v.len() == theta.len());
    for k in 0..theta.len() {
        let gk = g[k];
        m[k] = m[k] * b1 + gk * c1;
        v[k] = v[k] * b2 + gk * gk * c2;
        let adjusted = (m[k] * scale_m) / ((v[k] * scale_v).sqrt() + eps);
        theta[k] -= adjusted * lr;
    }
}
