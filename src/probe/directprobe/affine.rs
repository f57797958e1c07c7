//! The rank certificate: affinely independent points can be split any way by a
//! hyperplane. With `n <= dim + 1` points of `A ∪ B` affinely independent, the affine
//! function with value `+1` on every point of `A` and `-1` on every point of `B` exists
//! and is unique within their affine span: writing `w = Σ_j α_j (x_j - x_0)`, the
//! conditions `w·x_i + b = y_i` become `G α = (y_i - y_0)_i` with `G` the Gram matrix of
//! the differences `x_i - x_0`, positive definite exactly when the points are affinely
//! independent (Cholesky; a pivot below `1e-12` of the largest diagonal counts as
//! dependent).
//!
//! The answer is a certificate only after the check on every point: each value
//! `y_i (w·x_i + b)` at least 1/2 (the computed values sit at `±1` up to rounding; half
//! of it is the slack that rounding of an ill-conditioned system must not eat), and the
//! caller's slab check. Cost: the Gram matrix (one `gemm`) and an `n³/3` factorisation,
//! against hundreds of nearest-point steps when nearly every point is a support vector,
//! which is the rule at these sizes.

use super::{dot, gram, Points};

/// Smallest Cholesky pivot, relative to the largest squared difference norm.
const PIVOT: f64 = 1e-12;

/// The interpolating separator of `a` (`+1`) and `b` (`-1`), if the points are
/// affinely independent and it checks out on every point (see the module doc).
pub fn interpolating_separator(p: Points, a: &[usize], b: &[usize]) -> Option<(Vec<f64>, f64)> {
    let n = a.len() + b.len();
    if a.is_empty() || b.is_empty() || n > p.dim + 1 {
        return None;
    }
    let ids: Vec<usize> = a.iter().chain(b).copied().collect();
    let y = |k: usize| if k < a.len() { 1.0 } else { -1.0 };
    let o = p.row(ids[0]);
    let m = n - 1;
    let mut dif = Vec::with_capacity(m * p.dim);
    for &i in &ids[1..] {
        dif.extend(p.row(i).iter().zip(o).map(|(x, y)| x - y));
    }
    let mut g = gram(&dif, &dif, p.dim).ok()?;
    let scale = (0..m).map(|i| g[i * m + i]).fold(0.0, f64::max);
    if scale.is_nan() || scale <= 0.0 {
        return None;
    }
    // In-place Cholesky, lower triangle of the row-major `g`.
    for j in 0..m {
        let (done, rest) = g.split_at_mut(j * m);
        let row_j = &mut rest[..m];
        for k in 0..j {
            let row_k = &done[k * m..k * m + m];
            let s = dot(&row_j[..k], &row_k[..k]);
            row_j[k] = (row_j[k] - s) / row_k[k];
        }
        let d = row_j[j] - dot(&row_j[..j], &row_j[..j]);
        if d.is_nan() || d <= PIVOT * scale {
            return None;
        }
        row_j[j] = d.sqrt();
    }
    // L Lᵀ α = (y_i - y_0).
    let mut alpha: Vec<f64> = (1..n).map(|k| y(k) - y(0)).collect();
    for i in 0..m {
        let s = dot(&g[i * m..i * m + i], &alpha[..i]);
        alpha[i] = (alpha[i] - s) / g[i * m + i];
    }
    for i in (0..m).rev() {
        let s: f64 = (i + 1..m).map(|t| g[t * m + i] * alpha[t]).sum();
        alpha[i] = (alpha[i] - s) / g[i * m + i];
    }
    let mut w = vec![0.0; p.dim];
    for (al, d) in alpha.iter().zip(dif.chunks_exact(p.dim)) {
        w.iter_mut().zip(d).for_each(|(s, x)| *s += al * x);
    }
    let bias = y(0) - dot(&w, o);
    let ok = ids
        .iter()
        .enumerate()
        .all(|(k, &i)| y(k) * (dot(p.row(i), &w) + bias) >= 0.5);
    ok.then_some((w, bias))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A labelled simplex: any split of its vertices is separable; the separator has
    /// value exactly ±1 at the vertices. A point inside the simplex makes the set
    /// dependent (no certificate); so does a repeated point.
    #[test]
    fn splits_a_simplex_and_refuses_dependent_sets() {
        let dim = 4;
        let mut x = Vec::new();
        for i in 0..=dim {
            for d in 0..dim {
                x.push(if i == d { 2.0 } else { 0.0 } + 0.1 * d as f64);
            }
        }
        // Barycentre of the five vertices.
        let c: Vec<f64> = (0..dim)
            .map(|d| (0..=dim).map(|i| x[i * dim + d]).sum::<f64>() / (dim + 1) as f64)
            .collect();
        x.extend(&c);
        let p = Points { x: &x, dim };
        for (a, b) in [
            (vec![0, 2], vec![1, 3, 4]),
            (vec![4], vec![0, 1, 2, 3]),
            (vec![1, 2, 3], vec![0]),
        ] {
            let (w, bias) = interpolating_separator(p, &a, &b).expect("independent");
            for &i in &a {
                assert!((dot(p.row(i), &w) + bias - 1.0).abs() < 1e-9);
            }
            for &i in &b {
                assert!((dot(p.row(i), &w) + bias + 1.0).abs() < 1e-9);
            }
        }
        // Six points in four dimensions: too many.
        assert!(interpolating_separator(p, &[0, 1, 2], &[3, 4, 5]).is_none());
        // The barycentre is off the affine hull of three vertices: {0, 1, 2, 5} is
        // independent...
        assert!(interpolating_separator(p, &[0, 1], &[5, 2]).is_some());
        // ...but the midpoint of 0 and 1 with 0 and 1 is not.
        let mut y = x.clone();
        y.extend((0..dim).map(|d| (x[d] + x[dim + d]) / 2.0));
        let q = Points { x: &y, dim };
        assert!(interpolating_separator(q, &[0, 1], &[6]).is_none());
        // A repeated point with both labels.
        y.extend_from_slice(&x[..dim]);
        let q = Points { x: &y, dim };
        assert!(interpolating_separator(q, &[0], &[7]).is_none());
    }
}
