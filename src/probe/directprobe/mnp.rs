//! The separability test as a nearest-point problem: Wolfe's minimum-norm-point
//! algorithm (Wolfe 1976) on the Minkowski difference `conv(A) - conv(B)`.
//!
//! The hulls of `A` and `B` are disjoint iff the point of `P = conv{a - b}` nearest the
//! origin is not the origin; that point `z = p_A - p_B` joins the two nearest points of
//! the hulls, and the hyperplane normal to `z` halfway between them is the hard-margin
//! SVM. Wolfe's algorithm keeps a *corral* (affinely independent vertices `a_i - b_j`
//! with convex weights) whose affine minimum-norm point is inside its hull; each major
//! step adds the vertex the linear oracle returns (`argmin_a z·a`, `argmax_b z·b`: one
//! pass over the points) and the minor steps drop vertices until the weights are positive
//! again. It ends in finitely many steps in exact arithmetic.
//!
//! Certificates, checked at every major step against every point (never trusted from the
//! iteration alone), with the caller's tolerance `tol` (a distance; the clustering's is
//! [`TOL`](super::TOL) times the data's radius):
//! - **separable**: `min_a z·a - max_b z·b > tol · ||z||`, i.e. the hyperplane normal to
//!   `z` leaves a slab wider than `tol` between the sets;
//! - **overlap**: `||z|| <= tol`, a point of `conv(A)` and one of `conv(B)` (the corral's
//!   weights) that close: hulls nearer than that count as touching, which is not strict
//!   separability. The corral's points are the witness subsets.
//!
//! - **touching at the tolerance**: when the next vertex is within rounding of the
//!   corral's affine hull (Gram-based factors resolve distances down to ~`1e-7 · R`, so
//!   this happens only with `||z||` just above `tol`) even after refactoring, hull
//!   points within `2 · tol` also count as touching.
//!
//! At the exact nearest point `min_a z·a - max_b z·b = ||z||²`, so one of the two always
//! holds there; when neither comes within the step budget, or `||z||²` stops falling
//! (by [`PROGRESS`] over [`PROGRESS_WINDOW`] steps: every exact major step lowers it,
//! so a flat window is rounding going round in circles), or the corral becomes
//! numerically dependent, the answer is [`Mnp::Undecided`] with the reason and the
//! caller falls back to the LP.

use super::Points;

/// The outcome of [`min_norm`].
#[derive(Debug, Clone, PartialEq)]
pub enum Mnp {
    /// `w·x + bias > 0` on `A`, `< 0` on `B`, with a slab wider than the tolerance;
    /// `corral`: the final corral's vertices `(point of A, point of B, weight)`, a warm
    /// start for a later run on supersets.
    Separated {
        w: Vec<f64>,
        bias: f64,
        corral: Vec<(usize, usize, f64)>,
    },
    /// Convex combinations of these points of `A` and of `B` are within the tolerance.
    Overlap { a: Vec<usize>, b: Vec<usize> },
    /// No certificate: why Wolfe's iteration stopped.
    Undecided(GaveUp),
}

/// Why a nearest-point run ended without a certificate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GaveUp {
    /// The step budget ran out.
    Budget,
    /// Optimal within rounding (`||z||² ≈ min_a z·a - max_b z·b`) but neither margin nor
    /// distance beyond the tolerance.
    Stalled,
    /// The oracle returned a vertex already in the corral.
    Repeat,
    /// The new vertex is numerically affinely dependent on the corral.
    Dependent,
    /// The corral's affine minimum could not be computed.
    Singular,
    /// `||z||²` did not go down measurably over a whole window of major steps
    /// ([`PROGRESS_WINDOW`]): the iteration is cycling in rounding, not converging.
    NoProgress,
}

/// Major steps over which `||z||²` must fall by at least [`PROGRESS`] (relative).
pub const PROGRESS_WINDOW: usize = 64;
/// Smallest relative decrease of `||z||²` over [`PROGRESS_WINDOW`] steps that counts as
/// progress. Each exact major step decreases `||z||` strictly (Wolfe 1976), so only a
/// run stuck in rounding falls under it: on the hardest real pairs (MiniLM layer 0,
/// 380–1,170 points) the slowest window still fell by 7e-4.
pub const PROGRESS: f64 = 1e-12;

fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// Radius of the point set `ids` around its centroid.
pub fn radius(p: Points, ids: &[usize]) -> f64 {
    let mut c = vec![0.0; p.dim];
    for &i in ids {
        c.iter_mut().zip(p.row(i)).for_each(|(s, v)| *s += v);
    }
    let n = ids.len().max(1) as f64;
    c.iter_mut().for_each(|s| *s /= n);
    ids.iter()
        .map(|&i| {
            p.row(i)
                .iter()
                .zip(&c)
                .map(|(x, y)| (x - y) * (x - y))
                .sum::<f64>()
        })
        .fold(0.0, f64::max)
        .sqrt()
}

/// The corral: vertices `x[ia[k]] - x[ib[k]]`, their convex weights, and the Cholesky
/// factor `l` (lower triangular, row `i` holds columns `0..=i`) of `M = G + rho·11ᵀ`
/// (`G`: the vertices' Gram matrix). `M` is positive definite iff the vertices are
/// affinely independent, for any `rho > 0`; `rho` is fixed per run at the scale of the
/// squared vertex norms. The factor is updated in `O(k²)` per added vertex (one forward
/// substitution) and per removed vertex (Givens rotations), not refactored.
struct Corral {
    ia: Vec<usize>,
    ib: Vec<usize>,
    vecs: Vec<Vec<f64>>,
    w: Vec<f64>,
    l: Vec<Vec<f64>>,
    rho: f64,
}

impl Corral {
    fn new(rho: f64) -> Self {
        Corral {
            ia: Vec::new(),
            ib: Vec::new(),
            vecs: Vec::new(),
            w: Vec::new(),
            l: Vec::new(),
            rho,
        }
    }

    /// Add the vertex `x[i] - x[j]`; `false` (corral unchanged) if it is numerically
    /// affinely dependent on the corral.
    fn push(&mut self, p: Points, i: usize, j: usize) -> bool {
        let v: Vec<f64> = p.row(i).iter().zip(p.row(j)).map(|(a, b)| a - b).collect();
        let k = self.vecs.len();
        // New row of M, then L's new row by forward substitution.
        let m: Vec<f64> = self.vecs.iter().map(|u| dot(u, &v) + self.rho).collect();
        let mkk = dot(&v, &v) + self.rho;
        let mut row = vec![0.0; k + 1];
        for t in 0..k {
            let s: f64 = (0..t).map(|q| self.l[t][q] * row[q]).sum();
            row[t] = (m[t] - s) / self.l[t][t];
        }
        let d2 = mkk - row[..k].iter().map(|x| x * x).sum::<f64>();
        // NaN (a non-finite vertex) also counts as dependent.
        if d2.is_nan() || d2 <= mkk * 1e-13 {
            return false;
        }
        row[k] = d2.sqrt();
        self.l.push(row);
        self.vecs.push(v);
        self.ia.push(i);
        self.ib.push(j);
        self.w.push(0.0);
        true
    }

    /// Drop vertex `q`: delete row `q` of the factor, then rotate columns `(t, t + 1)`
    /// for `t >= q` to make it lower triangular again (`L Lᵀ` is unchanged by the
    /// rotations, so it is the factor of `M` without row and column `q`).
    fn remove(&mut self, q: usize) {
        self.ia.remove(q);
        self.ib.remove(q);
        self.vecs.remove(q);
        self.w.remove(q);
        self.l.remove(q);
        let k = self.l.len();
        for t in q..k {
            let (a, b) = (self.l[t][t], self.l[t][t + 1]);
            let r = a.hypot(b);
            let (c, s) = if r > 0.0 { (a / r, b / r) } else { (1.0, 0.0) };
            for row in &mut self.l[t..] {
                let (x, y) = (row[t], row[t + 1]);
                row[t] = c * x + s * y;
                row[t + 1] = -s * x + c * y;
            }
        }
        for (t, row) in self.l.iter_mut().enumerate() {
            row.truncate(t + 1);
        }
    }

    /// Weights of the affine minimum-norm point of the corral (they sum to 1): with
    /// `M u = 1`, `G u = (1 - rho·Σu)·1`, so `u / Σu` solves `min wᵀGw, Σw = 1`.
    fn affine_min(&self) -> Option<Vec<f64>> {
        let k = self.l.len();
        let mut y = vec![0.0; k];
        for i in 0..k {
            let s: f64 = (0..i).map(|t| self.l[i][t] * y[t]).sum();
            y[i] = (1.0 - s) / self.l[i][i];
        }
        let mut u = vec![0.0; k];
        for i in (0..k).rev() {
            let s: f64 = (i + 1..k).map(|t| self.l[t][i] * u[t]).sum();
            u[i] = (y[i] - s) / self.l[i][i];
        }
        let s: f64 = u.iter().sum();
        (s.is_finite() && s != 0.0).then(|| u.iter().map(|x| x / s).collect())
    }

    /// The same corral with its factor computed afresh from the vertices (vertices that
    /// are now numerically dependent are dropped), weights renormalised.
    fn refactored(&self, p: Points) -> Corral {
        let mut c = Corral::new(self.rho);
        let mut w = Vec::new();
        for k in 0..self.ia.len() {
            if c.push(p, self.ia[k], self.ib[k]) {
                w.push(self.w[k]);
            }
        }
        let s: f64 = w.iter().sum();
        c.w = w.iter().map(|x| x / s).collect();
        c
    }

    /// Wolfe's minor cycle from the current weights (convex, all positive): move towards
    /// the corral's affine minimum until a weight reaches zero, drop that vertex, repeat
    /// until the affine minimum is inside the corral's hull; then it is the new point.
    /// `false` if the affine minimum cannot be computed (a singular corral).
    fn minor_cycle(&mut self) -> bool {
        loop {
            let Some(beta) = self.affine_min() else {
                return false;
            };
            if beta.iter().all(|&x| x > 1e-14) {
                self.w = beta;
                return true;
            }
            let mut theta = 1.0f64;
            for (&w, &bt) in self.w.iter().zip(&beta) {
                if bt <= 1e-14 && w - bt > 0.0 {
                    theta = theta.min(w / (w - bt));
                }
            }
            for (w, &bt) in self.w.iter_mut().zip(&beta) {
                *w = (1.0 - theta) * *w + theta * bt;
            }
            // Drop the vertices whose weight reached zero (at least the smallest).
            let min_k = (0..self.w.len())
                .min_by(|&x, &y| self.w[x].total_cmp(&self.w[y]))
                .unwrap_or(0);
            let mut k = self.w.len();
            while k > 0 {
                k -= 1;
                if self.w[k] <= 1e-14 || k == min_k {
                    self.remove(k);
                }
            }
            if self.w.is_empty() {
                return false;
            }
            let s: f64 = self.w.iter().sum();
            self.w.iter_mut().for_each(|w| *w /= s);
            if self.w.len() == 1 {
                return true;
            }
        }
    }

    fn point(&self, dim: usize) -> Vec<f64> {
        let mut z = vec![0.0; dim];
        for (v, &w) in self.vecs.iter().zip(&self.w) {
            z.iter_mut().zip(v).for_each(|(s, x)| *s += w * x);
        }
        z
    }
}

/// Nearest point of `conv(A) - conv(B)` to the origin, by Wolfe's algorithm, until a
/// certificate at tolerance `tol` (see the module doc) or `max_steps` major steps
/// (counted into `steps`).
///
/// `start`: a corral of an earlier run on subsets of `A` and `B` (the clustering's
/// sets only grow), its vertices `(i in A, j in B, weight)`. Any convex combination of
/// vertices is a valid starting point for Wolfe's minor cycle, so the run starts where
/// the earlier one ended instead of from one vertex: merging a few points into a
/// cluster costs a few steps, not the whole path again. Without it (or if none of its
/// vertices can be taken) the first vertex is the oracle's answer along the centroid
/// difference.
pub fn min_norm(
    p: Points,
    a: &[usize],
    b: &[usize],
    tol: f64,
    start: &[(usize, usize, f64)],
    max_steps: usize,
    steps: &mut usize,
) -> Mnp {
    if a.is_empty() || b.is_empty() {
        return Mnp::Undecided(GaveUp::Singular);
    }
    let all: Vec<usize> = a.iter().chain(b).copied().collect();
    let r = radius(p, &all).max(f64::MIN_POSITIVE);
    let oracle = |z: &[f64]| -> (usize, f64, usize, f64) {
        let (mut ia, mut lo) = (a[0], f64::INFINITY);
        for &i in a {
            let v = dot(p.row(i), z);
            if v < lo {
                lo = v;
                ia = i;
            }
        }
        let (mut ib, mut hi) = (b[0], f64::NEG_INFINITY);
        for &j in b {
            let v = dot(p.row(j), z);
            if v > hi {
                hi = v;
                ib = j;
            }
        }
        (ia, lo, ib, hi)
    };
    let mean = |ids: &[usize]| -> Vec<f64> {
        let mut c = vec![0.0; p.dim];
        for &i in ids {
            c.iter_mut().zip(p.row(i)).for_each(|(s, v)| *s += v);
        }
        c.iter().map(|s| s / ids.len() as f64).collect()
    };
    // Vertex norms are at most the diameter 2R of A ∪ B.
    let mut c = Corral::new(4.0 * r * r);
    let mut weights = Vec::new();
    for &(i, j, w) in start {
        if w > 0.0 && c.push(p, i, j) {
            weights.push(w);
        }
    }
    if c.vecs.is_empty() {
        let (ca, cb) = (mean(a), mean(b));
        let dir: Vec<f64> = ca.iter().zip(&cb).map(|(x, y)| x - y).collect();
        let (i0, _, j0, _) = oracle(&dir);
        if !c.push(p, i0, j0) {
            // The first vertex is the origin: a point of A equals a point of B.
            return Mnp::Overlap {
                a: vec![i0],
                b: vec![j0],
            };
        }
        weights.push(1.0);
    }
    let total: f64 = weights.iter().sum();
    c.w = weights.iter().map(|w| w / total).collect();
    if !c.minor_cycle() {
        return Mnp::Undecided(GaveUp::Singular);
    }
    let mut z = c.point(p.dim);
    let mut refactored = false;
    let mut stuck = false;
    // `||z||²` at the start of the current progress window.
    let mut window = (0usize, dot(&z, &z));
    for step in 0..max_steps {
        *steps += 1;
        let nz2 = dot(&z, &z);
        let nz = nz2.sqrt();
        if step >= window.0 + PROGRESS_WINDOW {
            if nz2 > window.1 * (1.0 - PROGRESS) {
                return Mnp::Undecided(GaveUp::NoProgress);
            }
            window = (step, nz2);
        }
        if nz <= tol || (stuck && nz <= 2.0 * tol) {
            let mut sa: Vec<usize> = c.ia.clone();
            let mut sb: Vec<usize> = c.ib.clone();
            sa.sort_unstable();
            sa.dedup();
            sb.sort_unstable();
            sb.dedup();
            return Mnp::Overlap { a: sa, b: sb };
        }
        let (ia, lo, ib, hi) = oracle(&z);
        if lo - hi > tol * nz {
            let corral = (0..c.w.len()).map(|k| (c.ia[k], c.ib[k], c.w[k])).collect();
            return Mnp::Separated {
                bias: -(lo + hi) / 2.0,
                w: z,
                corral,
            };
        }
        // Optimal within rounding without a certificate: the distance sits at the
        // tolerance; let the caller decide.
        if nz * nz - (lo - hi) <= 1e-13 * nz * nz {
            return Mnp::Undecided(GaveUp::Stalled);
        }
        // A repeated or dependent vertex that still improves means `z` is not the
        // corral's affine minimum to working precision (the updated factor drifted):
        // refactor from the vertices once and retry; twice in a row, give up.
        let repeat = c.ia.iter().zip(&c.ib).any(|(&x, &y)| x == ia && y == ib);
        if repeat || !c.push(p, ia, ib) {
            if refactored {
                if nz <= 2.0 * tol {
                    // Stuck at the tolerance (the next vertex is within rounding of the
                    // corral's affine hull): hull points within twice the tolerance
                    // count as touching.
                    stuck = true;
                    continue;
                }
                return Mnp::Undecided(if repeat {
                    GaveUp::Repeat
                } else {
                    GaveUp::Dependent
                });
            }
            refactored = true;
            c = c.refactored(p);
            if c.vecs.is_empty() || !c.minor_cycle() {
                return Mnp::Undecided(GaveUp::Singular);
            }
            z = c.point(p.dim);
            continue;
        }
        refactored = false;
        if !c.minor_cycle() {
            return Mnp::Undecided(GaveUp::Singular);
        }
        z = c.point(p.dim);
    }
    Mnp::Undecided(GaveUp::Budget)
}

#[cfg(test)]
mod tests {
    use super::super::{lp_separable, separates, Separation};
    use super::*;

    fn run(x: &[f64], dim: usize, a: &[usize], b: &[usize]) -> Mnp {
        let p = Points { x, dim };
        min_norm(p, a, b, super::super::tolerance(p), &[], 1000, &mut 0)
    }

    #[test]
    fn certificates_on_hand_cases() {
        // Two triangles apart: nearest points (0.5, 0.5) and (3, 3), distance 2.5·√2.
        let x = [0., 0., 1., 0., 0., 1., 3., 3., 4., 3., 3., 4.];
        let p = Points { x: &x, dim: 2 };
        let Mnp::Separated { w, bias, .. } = run(&x, 2, &[0, 1, 2], &[3, 4, 5]) else {
            panic!("separable triangles")
        };
        assert!(separates(p, &[0, 1, 2], &[3, 4, 5], &w, bias));
        // The certificate's margin can never exceed the hulls' distance.
        let nw = dot(&w, &w).sqrt();
        let lo = [0, 1, 2]
            .iter()
            .map(|&i| dot(p.row(i), &w))
            .fold(f64::INFINITY, f64::min);
        let hi = [3, 4, 5]
            .iter()
            .map(|&i| dot(p.row(i), &w))
            .fold(f64::NEG_INFINITY, f64::max);
        assert!((lo - hi) / nw <= 2.5 * 2f64.sqrt() + 1e-9);
        // Crossing diagonals (XOR): the diagonals meet at (0.5, 0.5).
        let x = [0., 0., 1., 1., 1., 0., 0., 1.];
        assert_eq!(
            run(&x, 2, &[0, 1], &[2, 3]),
            Mnp::Overlap {
                a: vec![0, 1],
                b: vec![2, 3]
            }
        );
        // A point inside a triangle: the witness is that point and the triangle.
        let x = [0., 0., 4., 0., 0., 4., 1., 1.];
        assert!(matches!(run(&x, 2, &[0, 1, 2], &[3]), Mnp::Overlap { ref b, .. } if b == &[3]));
        // Identical points.
        let x = [0.5, 0.5, 0.5, 0.5];
        assert!(matches!(run(&x, 2, &[0], &[1]), Mnp::Overlap { .. }));
        // Touching at a vertex: no separator with a margin (overlap or undecided, never
        // separated).
        let x = [0., 0., 1., 0., 1., 0., 2., 0.];
        assert!(!matches!(
            run(&x, 2, &[0, 1], &[2, 3]),
            Mnp::Separated { .. }
        ));
    }

    /// The updated factor stays the Cholesky factor of `G + rho·11ᵀ` through pushes and
    /// removals at every position (checked against the matrix built from the vertices).
    #[test]
    fn corral_factor_follows_pushes_and_removals() {
        let mut rng = crate::probe::Rng::new(3);
        let dim = 9;
        let x: Vec<f64> = (0..20 * dim).map(|_| rng.f64() * 2.0 - 1.0).collect();
        let p = Points { x: &x, dim };
        let mut c = Corral::new(2.5);
        let check = |c: &Corral| {
            let k = c.vecs.len();
            for i in 0..k {
                for j in 0..k {
                    let llt: f64 = (0..=i.min(j)).map(|t| c.l[i][t] * c.l[j][t]).sum();
                    let m = dot(&c.vecs[i], &c.vecs[j]) + c.rho;
                    assert!((llt - m).abs() < 1e-10, "({i}, {j}): {llt} vs {m}");
                }
            }
        };
        for (i, j) in [
            (0, 10),
            (1, 11),
            (2, 12),
            (3, 13),
            (4, 14),
            (5, 15),
            (6, 16),
        ] {
            assert!(c.push(p, i, j));
            check(&c);
        }
        for q in [3, 0, 4] {
            c.remove(q);
            check(&c);
        }
        assert!(c.push(p, 7, 17));
        check(&c);
        // Affine weights: G·w is constant on the corral and the weights sum to 1.
        let w = c.affine_min().unwrap();
        assert!((w.iter().sum::<f64>() - 1.0).abs() < 1e-12);
        let z = {
            let mut z = vec![0.0; dim];
            for (v, &wk) in c.vecs.iter().zip(&w) {
                z.iter_mut().zip(v).for_each(|(s, x)| *s += wk * x);
            }
            z
        };
        let g: Vec<f64> = c.vecs.iter().map(|v| dot(v, &z)).collect();
        assert!(g.iter().all(|x| (x - g[0]).abs() < 1e-9), "{g:?}");
        // A vertex already in the corral is affinely dependent: refused, corral unchanged.
        assert!(!c.push(p, 7, 17));
        check(&c);
    }

    /// Random labelled clouds in 3 dimensions around the separability threshold: every
    /// certificate holds on the points and agrees with the LP.
    #[test]
    fn agrees_with_the_lp_on_random_sets() {
        let mut rng = crate::probe::Rng::new(7);
        let dim = 3;
        let (mut sep, mut ovl) = (0, 0);
        for trial in 0..60 {
            let (na, nb) = (4 + trial % 9, 3 + trial % 7);
            let shift = (trial % 6) as f64 * 0.5;
            let mut x = Vec::new();
            for k in 0..na + nb {
                for d in 0..dim {
                    let v = rng.f64() * 2.0 - 1.0;
                    x.push(if k < na && d == 0 { v + shift } else { v });
                }
            }
            let a: Vec<usize> = (0..na).collect();
            let b: Vec<usize> = (na..na + nb).collect();
            let p = Points { x: &x, dim };
            let lp = lp_separable(p, &a, &b).unwrap().unwrap();
            match run(&x, dim, &a, &b) {
                Mnp::Separated { w, bias, .. } => {
                    assert!(separates(p, &a, &b, &w, bias));
                    assert!(matches!(lp, Separation::Separable { .. }), "trial {trial}");
                    sep += 1;
                }
                Mnp::Overlap { a: wa, b: wb } => {
                    // The witness subsets themselves overlap (their LP is infeasible).
                    assert!(wa.iter().all(|i| a.contains(i)) && wb.iter().all(|i| b.contains(i)));
                    let sub = lp_separable(p, &wa, &wb).unwrap().unwrap();
                    assert!(matches!(sub, Separation::Overlap { .. }), "trial {trial}");
                    assert!(matches!(lp, Separation::Overlap { .. }), "trial {trial}");
                    ovl += 1;
                }
                Mnp::Undecided(_) => panic!("trial {trial}: undecided"),
            }
        }
        assert!(
            sep >= 10 && ovl >= 10,
            "both outcomes exercised: {sep} / {ovl}"
        );
    }
}
