//! Loops over rows of LM-head logits (262,144 entries per position for Gemma 3): the
//! log-sum-exp a surprisal needs and the top-k predictions.

use crate::nn::{exp, max_lanes};

/// `ln sum_j e^row[j]` in f64, computed as `max + ln sum_j e^(row[j] - max)` with the
/// vectorised [`exp`] (relative error ~1e-7 per term) and the sum in f64 lanes. `None`
/// for an empty row or one without a finite maximum.
pub fn log_sum_exp(row: &[f32]) -> Option<f64> {
    log_sum_exp_at(crate::isa::active(), row)
}

crate::simd_kernel! {
    /// [`log_sum_exp`] at level `isa` (its f64 lanes: 8, or 16 with AVX-512).
    pub fn log_sum_exp_at(row: &[f32]) -> Option<f64> = log_sum_exp_body, lanes;
}

#[inline(always)]
fn log_sum_exp_body<const L: usize>(row: &[f32]) -> Option<f64> {
    let max = max_lanes::<L>(row);
    if !max.is_finite() {
        return None;
    }
    let mut acc = [0.0f64; L];
    let chunks = row.chunks_exact(L);
    let rest = chunks.remainder();
    for c in chunks {
        for k in 0..L {
            acc[k] += f64::from(exp(c[k] - max));
        }
    }
    let tail: f64 = rest.iter().map(|&v| f64::from(exp(v - max))).sum();
    let z = acc.iter().sum::<f64>() + tail;
    Some(f64::from(max) + z.ln())
}

/// The `k` largest entries of `row` as `(index, value)`, largest first; among equal
/// values the lower index first (so `top_k(row, 1)` is the first argmax).
pub fn top_k(row: &[f32], k: usize) -> Vec<(u32, f32)> {
    // A small insertion-sorted buffer: k is tiny, and almost every entry is rejected by
    // one comparison with the buffer's last.
    let mut best: Vec<(u32, f32)> = Vec::with_capacity(k + 1);
    if k == 0 {
        return best;
    }
    for (id, &v) in row.iter().enumerate() {
        if best.len() == k && best.last().is_some_and(|b| v <= b.1) {
            continue;
        }
        let pos = best.partition_point(|b| b.1 >= v);
        best.insert(pos, (id as u32, v));
        best.truncate(k);
    }
    best
}
