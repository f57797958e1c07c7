//! DirectProbe (Zhou & Srikumar 2021; METHODS.md 4): a classifier-free probe. The
//! training points are clustered bottom-up, merging only points of one label, and only
//! while every cluster stays linearly separable from every cluster of another label. The
//! number of clusters left says how the labels are laid out (= number of labels: each
//! label is one convex region, linearly separable from the others; more: some label needs
//! several regions). A test point gets the label of the cluster whose convex hull is
//! nearest.
//!
//! Algorithm (as the paper's reference implementation):
//! - start with one cluster per training point; the candidate merges are all pairs of
//!   same-label clusters, taken closest first by the Euclidean distance between their
//!   centroids;
//! - a merge `M = A ∪ B` is accepted iff the convex hull of `M` is disjoint from the hull
//!   of every active cluster of another label ([`separable`]); a rejected pair is dropped
//!   for good (other clusters only grow, so it could never pass later);
//! - until no candidate is left.
//!
//! The separability test concludes only with a certificate checked on every point. Its
//! exact step is Wolfe's nearest-point algorithm on `conv(A) - conv(B)` ([`mnp`]: a
//! separator with a margin above the tolerance [`mnp::TOL`], or two hull points within
//! it); if that gives no certificate within its step budget, the LP `w·x + b ≥ 1` on one
//! side, `≤ -1` on the other (feasible iff the hulls are disjoint) with `microlp`'s
//! simplex, in the affine span of the LP's points (an orthonormal basis, not a projection
//! that loses anything: directions below `1e-9` of the points' spread are the only ones
//! dropped), whose separator counts only if it holds on every point. If neither certifies
//! (typically hulls within rounding of each other; counted as `lp_unverified` in
//! [`Stats`] and logged), the pair counts as not separable with the whole sets as
//! witness: the run does not abort, and the error is on the conservative side (it can
//! only leave more clusters). Cheap steps come first; all but that last resort conclude
//! with a certificate:
//! - bounding balls (centroid, max radius) that do not meet → disjoint hulls;
//! - a stored separator of `A` or `B` against the other cluster, or the hyperplane along
//!   the centroid difference, checked on every point → separable;
//! - a stored overlap witness (two point subsets whose LP was infeasible) contained in
//!   `M` and the other cluster → overlap;
//! - nearest points, then (if undecided) the LP by cutting planes: solve on a working
//!   set of points, check the separator on all points, add the violators, repeat. An
//!   infeasible working set proves overlap (a subset that overlaps makes the whole
//!   overlap); a separator that holds on every point proves separability.
//!
//! Distances to a convex hull (prediction) are the minimum of `||p - Σ λ_i x_i||` over the
//! simplex, solved by pairwise Frank-Wolfe on the cluster's Gram matrix to a duality gap
//! of [`HULL_GAP`] (relative) or [`HULL_ITERS`] steps.
//!
//! Features are standardised with the training sample's mean and standard deviation (an
//! invertible affine map: separability is unchanged). No dimension reduction. To bound
//! the cost, at most [`TrainOptions::dp_max_train`](super::TrainOptions) training and
//! `dp_max_test` test points are used per task and layer (uniform sample, seeded); with
//! fewer points than dimensions + 1 any labelling is separable, so the sample should be
//! well above the width for the cluster count to mean anything.

mod mnp;

use std::cmp::Ordering;
use std::collections::{BinaryHeap, HashMap};

use candle_core::{Device, Tensor};

use super::train::Split;
use super::Rng;
use crate::error::{Error, Result};

/// Default cap on training points per task and layer.
pub const DEFAULT_MAX_TRAIN: usize = 600;
/// Default cap on test points per task and layer.
pub const DEFAULT_MAX_TEST: usize = 500;
/// Relative duality gap at which a point-to-hull distance is accepted.
pub const HULL_GAP: f64 = 1e-6;
/// Most Frank-Wolfe steps per point-to-hull distance.
pub const HULL_ITERS: usize = 2000;
/// Working-set size per side of the first cutting-plane LP (smaller sets go in whole).
const WORKING: usize = 48;
/// Violators added per side and cutting-plane round.
const ADD: usize = 48;

/// Rows of a dense row-major f64 matrix.
#[derive(Debug, Clone, Copy)]
pub struct Points<'a> {
    pub x: &'a [f64],
    pub dim: usize,
}

impl Points<'_> {
    pub fn row(&self, i: usize) -> &[f64] {
        &self.x[i * self.dim..(i + 1) * self.dim]
    }
    pub fn len(&self) -> usize {
        self.x.len() / self.dim.max(1)
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// The outcome of a separability test between point sets `A` and `B`.
#[derive(Debug, Clone, PartialEq)]
pub enum Separation {
    /// `w·x + b > 0` on every point of `A` and `< 0` on every point of `B`.
    Separable { w: Vec<f64>, b: f64 },
    /// The hulls of these subsets of `A` and `B` intersect (their LP is infeasible).
    Overlap { a: Vec<usize>, b: Vec<usize> },
}

fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// Does `(w, b)` put every point of `a` on the positive and every point of `b` on the
/// negative side (strictly)?
pub fn separates(p: Points, a: &[usize], b: &[usize], w: &[f64], bias: f64) -> bool {
    a.iter().all(|&i| dot(p.row(i), w) + bias > 0.0)
        && b.iter().all(|&i| dot(p.row(i), w) + bias < 0.0)
}

fn centroid(p: Points, ids: &[usize]) -> Vec<f64> {
    let mut c = vec![0.0; p.dim];
    for &i in ids {
        for (s, v) in c.iter_mut().zip(p.row(i)) {
            *s += v;
        }
    }
    let n = ids.len().max(1) as f64;
    c.iter_mut().for_each(|s| *s /= n);
    c
}

/// The hyperplane normal to the centroid difference, placed midway between the two
/// sets' extreme projections, if it separates them.
fn centroid_separator(p: Points, a: &[usize], b: &[usize]) -> Option<(Vec<f64>, f64)> {
    let (ca, cb) = (centroid(p, a), centroid(p, b));
    let w: Vec<f64> = ca.iter().zip(&cb).map(|(x, y)| x - y).collect();
    let lo_a = a
        .iter()
        .map(|&i| dot(p.row(i), &w))
        .fold(f64::INFINITY, f64::min);
    let hi_b = b
        .iter()
        .map(|&i| dot(p.row(i), &w))
        .fold(f64::NEG_INFINITY, f64::max);
    let bias = -(lo_a + hi_b) / 2.0;
    (lo_a > hi_b && separates(p, a, b, &w, bias)).then_some((w, bias))
}

/// Orthonormal basis (rows, `dim` wide) of the span of `rows[i] - rows[0]`, by modified
/// Gram-Schmidt (twice, for stability); directions shorter than `1e-9` of the longest
/// difference are dropped.
fn span_basis(rows: &[&[f64]], dim: usize) -> Vec<Vec<f64>> {
    let o = rows[0];
    let diffs: Vec<Vec<f64>> = rows[1..]
        .iter()
        .map(|r| r.iter().zip(o).map(|(a, b)| a - b).collect())
        .collect();
    let longest = diffs.iter().map(|v| dot(v, v).sqrt()).fold(0.0, f64::max);
    let mut basis: Vec<Vec<f64>> = Vec::new();
    for v in diffs {
        let mut v = v;
        for _ in 0..2 {
            for q in &basis {
                let c = dot(&v, q);
                v.iter_mut().zip(q).for_each(|(x, y)| *x -= c * y);
            }
        }
        let n = dot(&v, &v).sqrt();
        if n > 1e-9 * longest && n > 0.0 {
            v.iter_mut().for_each(|x| *x /= n);
            basis.push(v);
        }
        if basis.len() == dim {
            break;
        }
    }
    basis
}

/// The LP `w·x + b ≥ 1` (x in `a`), `≤ -1` (x in `b`), free `w`, `b`: a solution, or
/// `None` if infeasible. Solved in the affine span of the points (an orthonormal basis
/// from [`span_basis`]; separability within the span is separability in full space, and
/// the solution is lifted back), so a working set of `k` points costs an LP of at most
/// `k` variables whatever the width.
fn lp(p: Points, a: &[usize], b: &[usize]) -> Result<Option<(Vec<f64>, f64)>> {
    use microlp::{ComparisonOp, OptimizationDirection, Problem};
    let rows: Vec<&[f64]> = a.iter().chain(b).map(|&i| p.row(i)).collect();
    let basis = span_basis(&rows, p.dim);
    let o = rows[0];
    let coords = |r: &[f64]| -> Vec<f64> {
        let v: Vec<f64> = r.iter().zip(o).map(|(x, y)| x - y).collect();
        basis.iter().map(|q| dot(q, &v)).collect()
    };
    let solve = || -> std::result::Result<Option<(Vec<f64>, f64)>, String> {
        let mut prob = Problem::new(OptimizationDirection::Minimize);
        let u: Vec<_> = (0..basis.len())
            .map(|_| prob.add_var(0.0, (f64::NEG_INFINITY, f64::INFINITY)))
            .collect();
        let bias = prob.add_var(0.0, (f64::NEG_INFINITY, f64::INFINITY));
        for (ids, op, rhs) in [(a, ComparisonOp::Ge, 1.0), (b, ComparisonOp::Le, -1.0)] {
            for &i in ids {
                let z = coords(p.row(i));
                let mut terms: Vec<(microlp::Variable, f64)> = u
                    .iter()
                    .zip(&z)
                    .filter(|(_, &v)| v != 0.0)
                    .map(|(&var, &v)| (var, v))
                    .collect();
                terms.push((bias, 1.0));
                prob.add_constraint(terms.as_slice(), op, rhs);
            }
        }
        match prob.solve() {
            Ok(microlp::SolveOutcome::Solution(s)) => Ok(Some((
                u.iter().map(|&v| s.var_value(v)).collect(),
                s.var_value(bias),
            ))),
            Ok(microlp::SolveOutcome::Interrupted(_)) => Err("LP interrupted".into()),
            Err(microlp::Error::Infeasible) => Ok(None),
            Err(e) => Err(e.to_string()),
        }
    };
    // microlp may panic on numerically hard problems: turn that into an error.
    let r = match std::panic::catch_unwind(std::panic::AssertUnwindSafe(solve)) {
        Ok(Ok(r)) => r,
        Ok(Err(e)) => return Err(Error::Compute(format!("separability LP: {e}"))),
        Err(_) => return Err(Error::Compute("separability LP: solver panicked".into())),
    };
    Ok(r.map(|(u, c)| {
        // w = Σ u_k q_k; w·(x - o) + c = w·x + (c - w·o).
        let mut w = vec![0.0; p.dim];
        for (uk, q) in u.iter().zip(&basis) {
            w.iter_mut().zip(q).for_each(|(x, y)| *x += uk * y);
        }
        let bias = c - dot(&w, o);
        (w, bias)
    }))
}

/// Exact linear separability of the point sets `a` and `b` (indices into `p`): are their
/// convex hulls disjoint? Cheap certificates first (the centroid direction), then the LP
/// by cutting planes (see the module doc). Empty sets are separable from anything.
pub fn separable(p: Points, a: &[usize], b: &[usize]) -> Result<Separation> {
    if a.is_empty() || b.is_empty() {
        return Ok(Separation::Separable {
            w: vec![0.0; p.dim],
            b: if a.is_empty() { -1.0 } else { 1.0 },
        });
    }
    if let Some((w, b)) = centroid_separator(p, a, b) {
        return Ok(Separation::Separable { w, b });
    }
    Ok(decide(p, a, b, &mut Stats::default()))
}

/// Counters of the exact tests (for the benchmark and the debug log).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Stats {
    /// Merge attempts, accepted merges, and (merged cluster, other-label cluster) pairs
    /// whose bounding balls met.
    pub attempts: usize,
    pub merges: usize,
    pub pairs: usize,
    /// Pairs settled by a stored separator or the centroid direction, and attempts
    /// rejected by a stored overlap witness.
    pub reused: usize,
    pub witnessed: usize,
    /// Nearest-point (Wolfe) runs, and how many ended with a certificate.
    pub mnp: usize,
    pub mnp_decided: usize,
    /// Cutting-plane LPs run (after an undecided nearest-point run), and how many of
    /// their answers did not verify.
    pub lp: usize,
    pub lp_unverified: usize,
    /// Seconds in the nearest-point runs and in the LPs.
    pub mnp_seconds: f64,
    pub lp_seconds: f64,
}

/// Most major steps of one nearest-point run before the LP takes over.
fn mnp_budget(dim: usize) -> usize {
    (4 * (dim + 1)).clamp(200, 4000)
}

/// The exact test behind [`separable`] and the clustering, with certificates only:
/// Wolfe's nearest points ([`mnp::min_norm`]); if that is
/// undecided, the cutting-plane LP, whose answer counts only if it verifies (a separator
/// checked on every point; an infeasible subset); if neither certifies anything, the
/// hulls are within numerical reach of each other and count as not separable (the
/// whole sets are the witness). Never fails.
fn decide(p: Points, a: &[usize], b: &[usize], st: &mut Stats) -> Separation {
    let t0 = std::time::Instant::now();
    st.mnp += 1;
    let r = mnp::min_norm(p, a, b, mnp_budget(p.dim));
    st.mnp_seconds += t0.elapsed().as_secs_f64();
    match r {
        mnp::Mnp::Separated { w, bias } => {
            st.mnp_decided += 1;
            return Separation::Separable { w, b: bias };
        }
        mnp::Mnp::Overlap { a, b } => {
            st.mnp_decided += 1;
            return Separation::Overlap { a, b };
        }
        mnp::Mnp::Undecided => {}
    }
    let t0 = std::time::Instant::now();
    st.lp += 1;
    let r = lp_separable(p, a, b);
    st.lp_seconds += t0.elapsed().as_secs_f64();
    match r {
        Ok(Some(s)) => s,
        Ok(None) | Err(_) => {
            st.lp_unverified += 1;
            let why = match &r {
                Err(e) => e.to_string(),
                _ => "separator did not verify".into(),
            };
            tracing::warn!(a = a.len(), b = b.len(), %why, "directprobe: no certificate, counted as overlap");
            Separation::Overlap {
                a: a.to_vec(),
                b: b.to_vec(),
            }
        }
    }
}

/// The cutting-plane LP alone (no shortcut): `None` when its solution does not verify
/// (a working-set point on the wrong side: the simplex's tolerance was not met).
fn lp_separable(p: Points, a: &[usize], b: &[usize]) -> Result<Option<Separation>> {
    let (ca, cb) = (centroid(p, a), centroid(p, b));
    let dir: Vec<f64> = ca.iter().zip(&cb).map(|(x, y)| x - y).collect();
    // Working set: the points of each side furthest towards the other along `dir`.
    let pick = |ids: &[usize], sign: f64| -> Vec<usize> {
        if ids.len() <= WORKING {
            return ids.to_vec();
        }
        let mut s: Vec<(f64, usize)> = ids
            .iter()
            .map(|&i| (sign * dot(p.row(i), &dir), i))
            .collect();
        s.sort_by(|x, y| x.0.total_cmp(&y.0));
        s.iter().take(WORKING).map(|&(_, i)| i).collect()
    };
    let (mut wa, mut wb) = if a.len() + b.len() <= 2 * WORKING {
        (a.to_vec(), b.to_vec())
    } else {
        (pick(a, 1.0), pick(b, -1.0))
    };
    loop {
        let Some((w, bias)) = lp(p, &wa, &wb)? else {
            wa.sort_unstable();
            wb.sort_unstable();
            return Ok(Some(Separation::Overlap { a: wa, b: wb }));
        };
        // Violators, worst first.
        let viol = |ids: &[usize], have: &[usize], sign: f64| -> Vec<usize> {
            let mut v: Vec<(f64, usize)> = ids
                .iter()
                .map(|&i| (sign * (dot(p.row(i), &w) + bias), i))
                .filter(|&(m, i)| m <= 0.0 && !have.contains(&i))
                .collect();
            v.sort_by(|x, y| x.0.total_cmp(&y.0));
            v.iter().take(ADD).map(|&(_, i)| i).collect()
        };
        let (va, vb) = (viol(a, &wa, 1.0), viol(b, &wb, -1.0));
        if va.is_empty() && vb.is_empty() {
            if separates(p, a, b, &w, bias) {
                return Ok(Some(Separation::Separable { w, b: bias }));
            }
            return Ok(None);
        }
        wa.extend(va);
        wb.extend(vb);
    }
}

/// What [`fit_eval`] measured.
#[derive(Debug, Clone, PartialEq)]
pub struct DirectFit {
    /// Nearest-cluster accuracy on the (sampled) test points.
    pub accuracy: f64,
    /// Clusters left after merging.
    pub clusters: usize,
    /// Training / test points used (after sampling).
    pub train_points: usize,
    pub test_points: usize,
    /// Label of each final cluster.
    pub cluster_labels: Vec<u32>,
    /// Exact separability tests run (nearest points, with the LP as fallback).
    pub lps: usize,
    /// Counters of the clustering's tests.
    pub stats: Stats,
}

/// Options of [`fit_eval`].
#[derive(Debug, Clone, Copy)]
pub struct DirectOptions {
    pub max_train: usize,
    pub max_test: usize,
    pub seed: u64,
}

impl Default for DirectOptions {
    fn default() -> Self {
        DirectOptions {
            max_train: DEFAULT_MAX_TRAIN,
            max_test: DEFAULT_MAX_TEST,
            seed: 0,
        }
    }
}

/// At most `max` indices of `0..n`, uniformly (seeded), sorted.
fn sample(n: usize, max: usize, rng: &mut Rng) -> Vec<usize> {
    let mut idx: Vec<usize> = (0..n).collect();
    if n > max {
        rng.shuffle(&mut idx);
        idx.truncate(max);
        idx.sort_unstable();
    }
    idx
}

#[derive(Debug, Clone, Copy, PartialEq)]
struct Candidate {
    dist: f64,
    i: usize,
    j: usize,
}

impl Eq for Candidate {}
impl Ord for Candidate {
    // Reversed: BinaryHeap pops the closest pair first (ties: lowest ids).
    fn cmp(&self, o: &Self) -> Ordering {
        o.dist
            .total_cmp(&self.dist)
            .then_with(|| (o.i, o.j).cmp(&(self.i, self.j)))
    }
}
impl PartialOrd for Candidate {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}

struct Cluster {
    label: u32,
    points: Vec<usize>,
    center: Vec<f64>,
    radius: f64,
    active: bool,
}

fn make_cluster(p: Points, label: u32, points: Vec<usize>) -> Cluster {
    let center = centroid(p, &points);
    let radius = points
        .iter()
        .map(|&i| dist2(p.row(i), &center))
        .fold(0.0, f64::max)
        .sqrt();
    Cluster {
        label,
        points,
        center,
        radius,
        active: true,
    }
}

fn dist2(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| (x - y) * (x - y)).sum()
}

/// The clustering state: clusters (ids never reused), owners, stored separators and
/// overlap witnesses.
struct Clustering<'a> {
    p: Points<'a>,
    clusters: Vec<Cluster>,
    /// Active cluster of each point.
    owner: Vec<usize>,
    /// Separator of clusters `(x, y)`, `x < y`, positive on `x`.
    seps: HashMap<(usize, usize), (Vec<f64>, f64)>,
    /// Point subsets whose hulls intersect (LP infeasible), with the label of each side.
    witnesses: Vec<(u32, Vec<usize>, Vec<usize>)>,
    lps: usize,
    lp_seconds: f64,
    stats: Stats,
    rejected: usize,
    checks: usize,
}

impl Clustering<'_> {
    fn sep(&self, x: usize, y: usize) -> Option<(Vec<f64>, f64)> {
        if x < y {
            self.seps.get(&(x, y)).cloned()
        } else {
            self.seps
                .get(&(y, x))
                .map(|(w, b)| (w.iter().map(|v| -v).collect(), -b))
        }
    }

    fn store_sep(&mut self, x: usize, y: usize, w: Vec<f64>, b: f64) {
        if x < y {
            self.seps.insert((x, y), (w, b));
        } else {
            self.seps
                .insert((y, x), (w.iter().map(|v| -v).collect(), -b));
        }
    }

    /// Is a stored witness contained in (merge of `i`, `j`) against cluster `d`?
    fn witnessed(&self, label: u32, i: usize, j: usize, d: usize) -> bool {
        let in_m = |q: &usize| self.owner[*q] == i || self.owner[*q] == j;
        let in_d = |q: &usize| self.owner[*q] == d;
        self.witnesses.iter().any(|(la, wa, wb)| {
            let (mine, theirs) = if *la == label { (wa, wb) } else { (wb, wa) };
            theirs.first().is_some_and(in_d) && theirs.iter().all(in_d) && mine.iter().all(in_m)
        })
    }

    /// Try merging clusters `i` and `j`: `true` (and merged) if the union stays separable
    /// from every other-label cluster.
    fn try_merge(&mut self, i: usize, j: usize) -> Result<bool> {
        let label = self.clusters[i].label;
        let mut points = self.clusters[i].points.clone();
        points.extend_from_slice(&self.clusters[j].points);
        let m = make_cluster(self.p, label, points);
        let new_id = self.clusters.len();
        // Other-label clusters whose bounding balls meet M's.
        let near: Vec<usize> = (0..self.clusters.len())
            .filter(|&d| {
                let c = &self.clusters[d];
                c.active
                    && c.label != label
                    && dist2(&c.center, &m.center).sqrt() <= (c.radius + m.radius) * (1.0 + 1e-9)
            })
            .collect();
        self.checks += near.len();
        self.stats.attempts += 1;
        self.stats.pairs += near.len();
        if near.iter().any(|&d| self.witnessed(label, i, j, d)) {
            self.rejected += 1;
            self.stats.witnessed += 1;
            return Ok(false);
        }
        let mut found = Vec::with_capacity(near.len());
        for &d in &near {
            let dp = &self.clusters[d].points;
            let reuse = [self.sep(i, d), self.sep(j, d)]
                .into_iter()
                .flatten()
                .find(|(w, b)| separates(self.p, &m.points, dp, w, *b))
                .or_else(|| centroid_separator(self.p, &m.points, dp));
            let (w, b) = match reuse {
                Some(s) => {
                    self.stats.reused += 1;
                    s
                }
                None => {
                    self.lps += 1;
                    let t0 = std::time::Instant::now();
                    let r = decide(self.p, &m.points, dp, &mut self.stats);
                    self.lp_seconds += t0.elapsed().as_secs_f64();
                    match r {
                        Separation::Separable { w, b } => (w, b),
                        Separation::Overlap { a, b } => {
                            self.witnesses.push((label, a, b));
                            self.rejected += 1;
                            return Ok(false);
                        }
                    }
                }
            };
            found.push((d, w, b));
        }
        for (d, w, b) in found {
            self.store_sep(new_id, d, w, b);
        }
        self.seps
            .retain(|&(x, y), _| x != i && y != i && x != j && y != j);
        for &q in &m.points {
            self.owner[q] = new_id;
        }
        self.clusters[i].active = false;
        self.clusters[j].active = false;
        self.clusters.push(m);
        self.stats.merges += 1;
        Ok(true)
    }
}

/// A final cluster: its label and point indices.
pub type FinalCluster = (u32, Vec<usize>);

/// Cluster the points `p` with labels `y` (see the module doc); returns the final
/// clusters' point lists and labels, and the number of exact tests run.
pub fn cluster(p: Points, y: &[u32]) -> Result<(Vec<FinalCluster>, usize)> {
    cluster_stats(p, y).map(|(c, st)| (c, st.mnp))
}

/// [`cluster`] with the counters of its tests.
pub fn cluster_stats(p: Points, y: &[u32]) -> Result<(Vec<FinalCluster>, Stats)> {
    let n = y.len();
    let mut st = Clustering {
        p,
        clusters: (0..n).map(|i| make_cluster(p, y[i], vec![i])).collect(),
        owner: (0..n).collect(),
        seps: HashMap::new(),
        witnesses: Vec::new(),
        lps: 0,
        lp_seconds: 0.0,
        stats: Stats::default(),
        rejected: 0,
        checks: 0,
    };
    let t0 = std::time::Instant::now();
    // All same-label pairs by centroid distance (squared distances from the Gram matrix).
    let g = gram(p.x, p.x, p.dim)?;
    let mut heap = BinaryHeap::new();
    for i in 0..n {
        for j in i + 1..n {
            if y[i] == y[j] {
                let d2 = g[i * n + i] + g[j * n + j] - 2.0 * g[i * n + j];
                heap.push(Candidate {
                    dist: d2.max(0.0).sqrt(),
                    i,
                    j,
                });
            }
        }
    }
    drop(g);
    while let Some(Candidate { i, j, .. }) = heap.pop() {
        if !st.clusters[i].active || !st.clusters[j].active {
            continue;
        }
        if st.try_merge(i, j)? {
            let new_id = st.clusters.len() - 1;
            let (label, center) = (
                st.clusters[new_id].label,
                st.clusters[new_id].center.clone(),
            );
            for (k, c) in st.clusters.iter().enumerate().take(new_id) {
                if c.active && c.label == label {
                    heap.push(Candidate {
                        dist: dist2(&c.center, &center).sqrt(),
                        i: k,
                        j: new_id,
                    });
                }
            }
        }
    }
    tracing::debug!(
        points = n,
        seconds = t0.elapsed().as_secs_f64(),
        lps = st.lps,
        lp_seconds = st.lp_seconds,
        rejected = st.rejected,
        ball_checks = st.checks,
        stats = ?st.stats,
        "directprobe: clustering done"
    );
    let stats = st.stats;
    let out = st
        .clusters
        .into_iter()
        .filter(|c| c.active)
        .map(|c| (c.label, c.points))
        .collect();
    Ok((out, stats))
}

/// `a · bᵀ` for row-major `a` `[n, dim]` and `b` `[m, dim]` (f64, candle's gemm).
fn gram(a: &[f64], b: &[f64], dim: usize) -> Result<Vec<f64>> {
    let (n, m) = (a.len() / dim.max(1), b.len() / dim.max(1));
    if n == 0 || m == 0 {
        return Ok(Vec::new());
    }
    let dev = Device::Cpu;
    let ta = Tensor::from_slice(a, (n, dim), &dev)?;
    let tb = Tensor::from_slice(b, (m, dim), &dev)?;
    Ok(ta.matmul(&tb.t()?)?.flatten_all()?.to_vec1()?)
}

/// Squared distance from a point to the convex hull of a cluster, by pairwise
/// Frank-Wolfe over the simplex of the cluster's points. `g` is the cluster's Gram matrix
/// `[k, k]`, `q[i] = x_i · p`, `pp = p · p`.
pub fn hull_dist2(g: &[f64], q: &[f64], pp: f64) -> f64 {
    let k = q.len();
    if k == 0 {
        return f64::INFINITY;
    }
    // Start at the nearest point.
    let i0 = (0..k)
        .min_by(|&a, &b| (g[a * k + a] - 2.0 * q[a]).total_cmp(&(g[b * k + b] - 2.0 * q[b])))
        .unwrap_or(0);
    let mut lam = vec![0.0; k];
    lam[i0] = 1.0;
    let mut v: Vec<f64> = g[i0 * k..(i0 + 1) * k].to_vec(); // G λ
    let (mut s, mut t) = (g[i0 * k + i0], q[i0]); // λᵀGλ, qᵀλ
    let scale = pp.max(1e-12);
    for _ in 0..HULL_ITERS {
        // Gradient / 2 = v - q.
        let mut fw = 0;
        let mut away = i0;
        let (mut gmin, mut gmax) = (f64::INFINITY, f64::NEG_INFINITY);
        for i in 0..k {
            let gi = v[i] - q[i];
            if gi < gmin {
                gmin = gi;
                fw = i;
            }
            if lam[i] > 0.0 && gi > gmax {
                gmax = gi;
                away = i;
            }
        }
        let gap = 2.0 * ((s - t) - gmin);
        if gap <= HULL_GAP * scale || fw == away {
            break;
        }
        // Direction e_fw - e_away; f(γ) = f + γ·2(gmin - gmax) + γ²·dGd.
        let dgd = g[fw * k + fw] - 2.0 * g[fw * k + away] + g[away * k + away];
        let slope = 2.0 * (gmin - gmax);
        let gamma = if dgd > 0.0 {
            (-slope / (2.0 * dgd)).min(lam[away])
        } else {
            lam[away]
        };
        if gamma <= 0.0 {
            break;
        }
        s += gamma * 2.0 * (v[fw] - v[away]) + gamma * gamma * dgd;
        t += gamma * (q[fw] - q[away]);
        lam[fw] += gamma;
        lam[away] -= gamma;
        if lam[away] < 1e-15 {
            lam[away] = 0.0;
        }
        let (rf, ra) = (&g[fw * k..(fw + 1) * k], &g[away * k..(away + 1) * k]);
        for ((vi, a), b) in v.iter_mut().zip(rf).zip(ra) {
            *vi += gamma * (a - b);
        }
    }
    (s - 2.0 * t + pp).max(0.0)
}

/// Nearest-hull labels of `test` points given the final clusters.
fn predict(train: Points, clusters: &[(u32, Vec<usize>)], test: Points) -> Result<Vec<u32>> {
    let m = test.len();
    let mut best = vec![(f64::INFINITY, 0u32); m];
    let tpp: Vec<f64> = (0..m).map(|t| dot(test.row(t), test.row(t))).collect();
    for (label, pts) in clusters {
        let k = pts.len();
        let xc: Vec<f64> = pts.iter().flat_map(|&i| train.row(i).to_vec()).collect();
        let g = gram(&xc, &xc, train.dim)?;
        let q = gram(test.x, &xc, train.dim)?; // [m, k]
        for t in 0..m {
            let d = hull_dist2(&g, &q[t * k..(t + 1) * k], tpp[t]);
            if d < best[t].0 {
                best[t] = (d, *label);
            }
        }
    }
    Ok(best.into_iter().map(|(_, l)| l).collect())
}

/// DirectProbe on one labelled train/test split: sample, standardise, cluster, predict.
pub fn fit_eval(
    train: Split,
    test: Split,
    width: usize,
    opts: &DirectOptions,
) -> Result<DirectFit> {
    if train.y.is_empty() || width == 0 {
        return Err(Error::Input {
            name: "probe".into(),
            reason: "no training examples".into(),
        });
    }
    let mut rng = Rng::new(opts.seed ^ 0xD1_4EC7);
    let tr = sample(train.y.len(), opts.max_train.max(1), &mut rng);
    let te = sample(test.y.len(), opts.max_test.max(1), &mut rng);
    let rows = |s: Split, ids: &[usize]| -> Vec<f32> {
        ids.iter()
            .flat_map(|&i| s.x[i * width..(i + 1) * width].iter().copied())
            .collect()
    };
    let (xtr, xte) = (rows(train, &tr), rows(test, &te));
    let (mean, std) = super::train::standardizer(&xtr, width);
    let z = |x: &[f32]| -> Vec<f64> {
        x.chunks_exact(width)
            .flat_map(|r| {
                r.iter()
                    .zip(&mean)
                    .zip(&std)
                    .map(|((v, m), s)| ((v - m) / s) as f64)
            })
            .collect()
    };
    let (ztr, zte) = (z(&xtr), z(&xte));
    let ytr: Vec<u32> = tr.iter().map(|&i| train.y[i]).collect();
    let yte: Vec<u32> = te.iter().map(|&i| test.y[i]).collect();
    let ptr = Points {
        x: &ztr,
        dim: width,
    };
    let (clusters, stats) = cluster_stats(ptr, &ytr)?;
    let t0 = std::time::Instant::now();
    let pred = predict(
        ptr,
        &clusters,
        Points {
            x: &zte,
            dim: width,
        },
    )?;
    tracing::debug!(
        seconds = t0.elapsed().as_secs_f64(),
        "directprobe: nearest-hull prediction done"
    );
    let hits = pred.iter().zip(&yte).filter(|(a, b)| a == b).count();
    Ok(DirectFit {
        accuracy: hits as f64 / yte.len().max(1) as f64,
        clusters: clusters.len(),
        train_points: tr.len(),
        test_points: te.len(),
        cluster_labels: clusters.iter().map(|c| c.0).collect(),
        lps: stats.mnp,
        stats,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pts(v: &[[f64; 2]]) -> Vec<f64> {
        v.iter().flatten().copied().collect()
    }

    fn sep(x: &[f64], a: &[usize], b: &[usize]) -> bool {
        let p = Points { x, dim: 2 };
        let lp_says = matches!(
            lp_separable(p, a, b).unwrap().unwrap(),
            Separation::Separable { .. }
        );
        let full = separable(p, a, b).unwrap();
        assert_eq!(lp_says, matches!(full, Separation::Separable { .. }));
        if let Separation::Separable { w, b: bias } = &full {
            assert!(separates(p, a, b, w, *bias));
        }
        lp_says
    }

    #[test]
    fn separability_hand_cases() {
        // Separable: two squares apart.
        let x = pts(&[[0., 0.], [1., 0.], [0., 1.], [3., 3.], [4., 3.], [3., 4.]]);
        assert!(sep(&x, &[0, 1, 2], &[3, 4, 5]));
        // Touching at a shared vertex: not strictly separable.
        let x = pts(&[[0., 0.], [1., 0.], [1., 0.], [2., 0.]]);
        assert!(!sep(&x, &[0, 1], &[2, 3]));
        // A point of B on A's edge (touching).
        let x = pts(&[[0., 0.], [2., 0.], [1., 0.], [1., 1.]]);
        assert!(!sep(&x, &[0, 1], &[2, 3]));
        // Overlapping: crossing diagonals of a square (XOR).
        let x = pts(&[[0., 0.], [1., 1.], [1., 0.], [0., 1.]]);
        assert!(!sep(&x, &[0, 1], &[2, 3]));
        // A point inside the other's triangle.
        let x = pts(&[[0., 0.], [4., 0.], [0., 4.], [1., 1.]]);
        assert!(!sep(&x, &[0, 1, 2], &[3]));
        // Just outside the triangle's hypotenuse.
        let x = pts(&[[0., 0.], [4., 0.], [0., 4.], [2.01, 2.01]]);
        assert!(sep(&x, &[0, 1, 2], &[3]));
        // Identical points with different labels.
        let x = pts(&[[0.5, 0.5], [0.5, 0.5]]);
        assert!(!sep(&x, &[0], &[1]));
        // Separable, but not along the centroid direction (needs the LP).
        let x = pts(&[[0., 0.], [10., 0.1], [0., 1.], [10., 1.1], [-10., 0.5]]);
        let p = Points { x: &x, dim: 2 };
        assert!(centroid_separator(p, &[0, 1, 4], &[2, 3]).is_none());
        assert!(sep(&x, &[0, 1, 4], &[2, 3]));
    }

    #[test]
    fn hull_distance_of_a_segment() {
        // Segment (0,0)-(2,0); point (1, 1) → distance 1; point (3, 0) → 1; (1, 0) → 0.
        let x = [0.0, 0.0, 2.0, 0.0];
        let g = gram(&x, &x, 2).unwrap();
        for (p, want) in [([1.0, 1.0], 1.0), ([3.0, 0.0], 1.0), ([1.0, 0.0], 0.0)] {
            let q = gram(&p, &x, 2).unwrap();
            let d = hull_dist2(&g, &q, dot(&p, &p));
            assert!((d - want).abs() < 1e-6, "{p:?}: {d}");
        }
    }
}
