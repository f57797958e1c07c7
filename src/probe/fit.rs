//! The fitting helpers the probes share: early stopping on a validation loss, column
//! standardisation, and Spearman's rank correlation (the structural probe's and
//! AST-Probe's distance score).

use crate::error::Result;

/// Early stopping on a validation loss, shared by the probes' training loops: an epoch
/// counts as an improvement when its loss beats the best by more than `1e-4`; after
/// `patience` epochs in a row without one, stop. Keeps the best epoch's snapshot.
pub struct EarlyStop<T> {
    best_loss: f64,
    best: T,
    stale: usize,
    patience: usize,
}

impl<T> EarlyStop<T> {
    /// Start from `initial` (the weights before training: what a run with no
    /// improvement at all restores).
    pub fn new(patience: usize, initial: T) -> Self {
        EarlyStop {
            best_loss: f64::INFINITY,
            best: initial,
            stale: 0,
            patience,
        }
    }

    /// Record an epoch's validation loss (`snapshot` is taken only when it improves);
    /// true when training should stop.
    pub fn stop_after(&mut self, loss: f64, snapshot: impl FnOnce() -> Result<T>) -> Result<bool> {
        if loss < self.best_loss - 1e-4 {
            self.best_loss = loss;
            self.best = snapshot()?;
            self.stale = 0;
            Ok(false)
        } else {
            self.stale += 1;
            Ok(self.stale >= self.patience)
        }
    }

    /// The best epoch's snapshot.
    pub fn best(&self) -> &T {
        &self.best
    }
}

/// Column means and standard deviations (std floored at 1e-6) of `x`.
pub fn standardizer(x: &[f32], width: usize) -> (Vec<f32>, Vec<f32>) {
    let n = (x.len() / width.max(1)).max(1) as f64;
    let mut mean = vec![0f64; width];
    let mut sq = vec![0f64; width];
    for row in x.chunks_exact(width) {
        for (j, &v) in row.iter().enumerate() {
            mean[j] += v as f64;
            sq[j] += (v as f64) * (v as f64);
        }
    }
    let m: Vec<f32> = mean.iter().map(|s| (s / n) as f32).collect();
    let s: Vec<f32> = sq
        .iter()
        .zip(&mean)
        .map(|(q, s)| ((q / n - (s / n).powi(2)).max(0.0).sqrt().max(1e-6)) as f32)
        .collect();
    (m, s)
}

/// `x` standardised column by column with `mean` and `std`.
pub fn standardize(x: &[f32], width: usize, mean: &[f32], std: &[f32]) -> Vec<f32> {
    let mut out = x.to_vec();
    for row in out.chunks_exact_mut(width) {
        for ((v, m), s) in row.iter_mut().zip(mean).zip(std) {
            *v = (*v - m) / s;
        }
    }
    out
}

/// Average ranks (1-based), ties sharing their mean rank.
fn ranks(v: &[f64]) -> Vec<f64> {
    let mut idx: Vec<usize> = (0..v.len()).collect();
    idx.sort_by(|&a, &b| v[a].total_cmp(&v[b]));
    let mut r = vec![0.0; v.len()];
    let mut i = 0;
    while i < idx.len() {
        let mut j = i;
        while j + 1 < idx.len() && v[idx[j + 1]] == v[idx[i]] {
            j += 1;
        }
        let avg = (i + j) as f64 / 2.0 + 1.0;
        for &k in &idx[i..=j] {
            r[k] = avg;
        }
        i = j + 1;
    }
    r
}

/// Spearman's rank correlation (Pearson on average ranks); `None` if either side is
/// constant.
pub fn spearman(a: &[f64], b: &[f64]) -> Option<f64> {
    let (ra, rb) = (ranks(a), ranks(b));
    let n = ra.len() as f64;
    let (ma, mb) = (ra.iter().sum::<f64>() / n, rb.iter().sum::<f64>() / n);
    let (mut sab, mut saa, mut sbb) = (0.0, 0.0, 0.0);
    for (x, y) in ra.iter().zip(&rb) {
        sab += (x - ma) * (y - mb);
        saa += (x - ma) * (x - ma);
        sbb += (y - mb) * (y - mb);
    }
    (saa > 0.0 && sbb > 0.0).then(|| sab / (saa * sbb).sqrt())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spearman_and_ranks() {
        assert_eq!(ranks(&[3.0, 1.0, 3.0, 2.0]), vec![3.5, 1.0, 3.5, 2.0]);
        let r = spearman(&[1.0, 2.0, 3.0, 4.0], &[10.0, 20.0, 25.0, 100.0]).unwrap();
        assert!((r - 1.0).abs() < 1e-12);
        let r = spearman(&[1.0, 2.0, 3.0], &[3.0, 2.0, 1.0]).unwrap();
        assert!((r + 1.0).abs() < 1e-12);
        assert!(spearman(&[1.0, 1.0], &[1.0, 2.0]).is_none());
    }
}
