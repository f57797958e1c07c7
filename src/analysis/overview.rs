//! The model overview's data: every head's code-token attention pooled to a small
//! square thumbnail, with the head's score beside it (what BertViz's model view and
//! CircuitsVis head grids show, for one snippet).
//!
//! Pooling keeps the maximum of each block of cells, so a sharp one-token pattern (the
//! previous token, a delimiter every query attends to) survives any reduction; the
//! thumbnail is then divided by its own maximum, so each head shows its pattern at full
//! contrast (absolute levels are in the head grid and the heatmap).

/// Block-max pooling of the `n x n` matrix `a` (row-major, rows = queries) to
/// `side x side` cells, each block covering `ceil`/`floor` bounds of `n / side` rows and
/// columns; `side` is clamped to `1..=n`. Returns the pooled cells and the matrix
/// maximum; cells are divided by that maximum (all 0 for an all-zero matrix).
pub fn thumbnail(a: &[f32], n: usize, side: usize) -> (Vec<f32>, f32) {
    if n == 0 {
        return (Vec::new(), 0.0);
    }
    let side = side.clamp(1, n);
    let bounds: Vec<(usize, usize)> = (0..side)
        .map(|k| (k * n / side, ((k + 1) * n / side).max(k * n / side + 1)))
        .collect();
    let mut out = vec![0.0f32; side * side];
    let mut max = 0.0f32;
    for (r, &(r0, r1)) in bounds.iter().enumerate() {
        for (c, &(c0, c1)) in bounds.iter().enumerate() {
            let mut m = 0.0f32;
            for i in r0..r1 {
                for &v in &a[i * n + c0..i * n + c1] {
                    if v.is_finite() {
                        m = m.max(v);
                    }
                }
            }
            out[r * side + c] = m;
            max = max.max(m);
        }
    }
    if max > 0.0 {
        for v in &mut out {
            *v /= max;
        }
    }
    (out, max)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pools_by_block_maximum() {
        // 4x4 with a single sharp cell per row (previous token).
        let n = 4;
        let mut a = vec![0.0f32; n * n];
        for i in 1..n {
            a[i * n + i - 1] = 0.5;
        }
        a[0] = 1.0;
        let (t, max) = thumbnail(&a, n, 2);
        assert_eq!(max, 1.0);
        assert_eq!(t, vec![1.0, 0.0, 0.5, 0.5]);
        // Identity at full size, side clamped to n.
        let (t, _) = thumbnail(&a, n, 9);
        assert_eq!(t.len(), 16);
        assert_eq!(t[4], 0.5);
        // Uneven blocks cover every row and column once.
        let ones = vec![1.0f32; 25];
        let (t, _) = thumbnail(&ones, 5, 3);
        assert!(t.iter().all(|&v| v == 1.0));
        assert_eq!(thumbnail(&[], 0, 3).0.len(), 0);
        assert_eq!(thumbnail(&[0.0; 4], 2, 2).0, vec![0.0; 4]);
    }
}
