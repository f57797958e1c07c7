//! DirectProbe (Zhou & Srikumar 2021; docs/METHODS.md 4): a classifier-free probe. The
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
//!   centroids (a centroid counts repeated points, as the paper's);
//! - a merge `M = A ∪ B` is accepted iff the convex hull of `M` is disjoint from the hull
//!   of every active cluster of another label ([`separable`]); a rejected pair is dropped
//!   for good (other clusters only grow, so it could never pass later);
//! - until no candidate is left.
//!
//! Repeated points (embedding-layer features repeat: one token text, one vector) are
//! settled before any test ([`starting_clusters`]): identical rows of one label start
//! as one cluster (the distance-0 merge would come first and always pass), and the
//! tests see each distinct row once (a repeated row is a repeated vertex, which makes
//! Wolfe's corral singular). A point within the tolerance of a point of another label
//! (identical or nearly) is a certificate of overlap for any two clusters holding them,
//! so it never merges: it stays a single-point cluster and no test is spent on it
//! (`conflicted` in [`Stats`]).
//!
//! The separability test concludes only with a certificate checked on every point, at
//! the tolerance [`TOL`] times the training sample's radius: hulls nearer than that
//! count as touching (the f32 features cannot tell them from touching). Cheap steps
//! first:
//! - label pairs whose whole training sets are separable (checked once, before merging)
//!   are never tested cluster by cluster: subsets of disjoint hulls are disjoint;
//! - bounding balls (centroid, max radius) further apart than the tolerance →
//!   disjoint hulls;
//! - a stored separator of `A` or `B` against the other cluster (its extreme projections
//!   are stored too, so only the newcomers are projected), or the hyperplane along the
//!   centroid difference, leaving a slab wider than the tolerance → separable;
//! - a stored overlap witness (two point subsets whose hulls meet) contained in `M` and
//!   the other cluster → overlap;
//! - the exact tests, the pair with the deepest-overlapping bounding balls first (one
//!   overlap rejects the merge):
//!   - at most `dim + 1` points: the rank certificate ([`affine`]: affinely independent
//!     points are split by the hyperplane interpolating `±1`);
//!   - Wolfe's nearest-point algorithm on `conv(A) - conv(B)` ([`mnp`]: a separator
//!     with a slab wider than the tolerance, or two hull points within it), started
//!     from the corral that separated `A` or `B` from the other cluster before, so
//!     adding a few points to a cluster costs a few steps. It runs while it makes
//!     progress (`||z||²` falls over every window of steps), up to `32 (n + dim + 1)`
//!     major steps ([`mnp_budget`]; the hardest real pairs needed under `7 (n + dim + 1)`);
//!   - if that gives no certificate, the cutting-plane LP ([`lp`], working sets of at
//!     most 256 points), whose separator counts only if it leaves the slab. If nothing
//!     certifies (counted as `lp_unverified` in [`Stats`] and logged), the pair counts as
//!     not separable with the whole sets as witness: the run does not abort, and the
//!     error is on the conservative side (it can only leave more clusters).
//!
//! Every loop ends: a merge attempt either merges (at most `n - 1` times) or drops its
//! candidate; a nearest-point run stops at a certificate, at its budget or when
//! `||z||` stops falling; the cutting-plane LP adds a new point to its working set each
//! round, up to its cap. Every stop without a certificate is counted in [`Stats`].
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

mod affine;
mod lp;
mod mnp;

use std::cmp::Ordering;
use std::collections::{BinaryHeap, HashMap, HashSet};

use candle_core::{Device, Tensor};

use super::train::Labelled;
use super::Rng;
use crate::error::{Error, Result};
use lp::lp_separable;

/// Hulls nearer than `TOL · R` count as touching (not separable), where `R` is the
/// radius of the whole point matrix around its centroid: the features are f32, whose
/// rounding (~6e-8 relative per value, more after the pair features' differences) puts
/// hulls that meet exactly in the model's arithmetic (e.g. `h_a - h_b`, `h_c - h_d`
/// against `h_a - h_d`, `h_c - h_b`, whose midpoints coincide) a few `1e-8 · R` apart; a
/// "separation" that narrow is rounding, not geometry. Every separability certificate
/// must leave a slab wider than that between the sets.
pub const TOL: f64 = 1e-6;
/// Default cap on training points per task and layer.
pub const DEFAULT_MAX_TRAIN: usize = 600;
/// Default cap on test points per task and layer.
pub const DEFAULT_MAX_TEST: usize = 500;
/// Relative duality gap at which a point-to-hull distance is accepted.
pub const HULL_GAP: f64 = 1e-6;
/// Most Frank-Wolfe steps per point-to-hull distance.
pub const HULL_ITERS: usize = 2000;

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
/// negative side (strictly)? (The certificates ask more: [`slab`].)
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

/// The separability certificate of a direction `w`: if every point of `a` projects
/// above every point of `b` with a gap wider than `tol` (in distance: `(min_a w·x -
/// max_b w·x) / ||w|| > tol`), the bias that puts the hyperplane midway. Checked on
/// every point.
fn slab(p: Points, a: &[usize], b: &[usize], w: &[f64], tol: f64) -> Option<f64> {
    let lo = a
        .iter()
        .map(|&i| dot(p.row(i), w))
        .fold(f64::INFINITY, f64::min);
    let hi = b
        .iter()
        .map(|&i| dot(p.row(i), w))
        .fold(f64::NEG_INFINITY, f64::max);
    (lo - hi > tol * dot(w, w).sqrt()).then_some(-(lo + hi) / 2.0)
}

/// The hyperplane normal to the centroid difference, midway between the two sets'
/// extreme projections, if it leaves a slab wider than `tol` ([`slab`]).
fn centroid_separator(p: Points, a: &[usize], b: &[usize], tol: f64) -> Option<(Vec<f64>, f64)> {
    let (ca, cb) = (centroid(p, a), centroid(p, b));
    let w: Vec<f64> = ca.iter().zip(&cb).map(|(x, y)| x - y).collect();
    slab(p, a, b, &w, tol).map(|bias| (w, bias))
}

/// The absolute tolerance of the tests on the point matrix `p`: [`TOL`] times its
/// radius around its centroid.
fn tolerance(p: Points) -> f64 {
    let all: Vec<usize> = (0..p.len()).collect();
    TOL * mnp::radius(p, &all)
}

/// Exact linear separability of the point sets `a` and `b` (indices into `p`): are their
/// convex hulls disjoint, more than [`TOL`] times the radius of all of `p` apart? Cheap
/// certificates first (the centroid direction), then [`decide`] (see the module doc).
/// Empty sets are separable from anything.
pub fn separable(p: Points, a: &[usize], b: &[usize]) -> Result<Separation> {
    if a.is_empty() || b.is_empty() {
        return Ok(Separation::Separable {
            w: vec![0.0; p.dim],
            b: if a.is_empty() { -1.0 } else { 1.0 },
        });
    }
    let tol = tolerance(p);
    if let Some((w, b)) = centroid_separator(p, a, b, tol) {
        return Ok(Separation::Separable { w, b });
    }
    let (a, b) = (distinct(p, a), distinct(p, b));
    Ok(decide(p, &a, &b, tol, &[], &mut Stats::default()).0)
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
    /// Exact tests run by the clustering (after the cheap certificates).
    pub exact: usize,
    /// Pairs with at most `dim + 1` points settled by the rank certificate
    /// ([`affine`]), and seconds spent trying it.
    pub rank: usize,
    pub rank_seconds: f64,
    /// Label pairs whose whole training sets are separable (their clusters are never
    /// tested against each other).
    pub label_pairs_separable: usize,
    /// Nearest-point (Wolfe) runs, and how many ended with a certificate.
    pub mnp: usize,
    pub mnp_decided: usize,
    /// Nearest-point runs warm-started from a stored corral.
    pub mnp_warm: usize,
    /// Major steps of all nearest-point runs.
    pub mnp_steps: usize,
    /// Undecided nearest-point runs by reason: step budget, stalled at the tolerance,
    /// repeated vertex, dependent vertex, singular corral, no progress over a window
    /// ([`mnp::GaveUp`]).
    pub gave_up: [usize; 6],
    /// Cutting-plane LPs run (after an undecided nearest-point run), and how many of
    /// their answers did not verify.
    pub lp: usize,
    pub lp_unverified: usize,
    /// Seconds in the nearest-point runs and in the LPs.
    pub mnp_seconds: f64,
    pub lp_seconds: f64,
    /// Training points identical to an earlier point of the same label (they start in
    /// that point's cluster and are left out of every test: the hull is the same).
    pub duplicates: usize,
    /// Training points within the tolerance of a point of another label: no cluster
    /// holding one can be separated from the cluster holding the other, so they stay
    /// single-point clusters without a test ([`cluster_stats`]).
    pub conflicted: usize,
}

/// Most major steps of one nearest-point run (on `n` points in `dim` dimensions) before
/// the LP takes over. Wolfe's iteration is finite but has no useful polynomial bound;
/// on real features (MiniLM layer 0, 380–1,170 points, nearly all of them support
/// vectors) the hardest pairs needed up to `6.7 (n + dim + 1)` steps, so this leaves a
/// wide margin; a run that stops making progress ends sooner ([`mnp::GaveUp::NoProgress`]).
fn mnp_budget(dim: usize, n: usize) -> usize {
    32 * (n + dim + 1)
}

/// The exact test behind [`separable`] and the clustering, with certificates only:
/// Wolfe's nearest points ([`mnp::min_norm`]); if that is
/// undecided, the cutting-plane LP, whose answer counts only if it verifies (a separator
/// checked on every point; an infeasible subset); if neither certifies anything, the
/// hulls are within numerical reach of each other and count as not separable (the
/// whole sets are the witness). Never fails.
fn decide(
    p: Points,
    a: &[usize],
    b: &[usize],
    tol: f64,
    warm: &[(usize, usize, f64)],
    st: &mut Stats,
) -> (Separation, Warm) {
    if let Some(s) = certify(p, a, b, tol, warm, st) {
        return s;
    }
    (fallback(p, a, b, tol, st), Vec::new())
}

/// The certificates short of the LP: Wolfe's nearest points within the step budget,
/// warm-started from `warm` if given; the rank certificate ([`affine`]) for at most
/// `dim + 1` points, before a cold nearest-point run (cheaper) or after a warm one that
/// found nothing. With the answer, the nearest-point corral that found a separator.
fn certify(
    p: Points,
    a: &[usize],
    b: &[usize],
    tol: f64,
    warm: &[(usize, usize, f64)],
    st: &mut Stats,
) -> Option<(Separation, Warm)> {
    let small = a.len() + b.len() <= p.dim + 1;
    let rank = |st: &mut Stats| -> Option<(Separation, Warm)> {
        let t0 = std::time::Instant::now();
        let r = affine::interpolating_separator(p, a, b)
            .and_then(|(w, _)| slab(p, a, b, &w, tol).map(|bias| (w, bias)));
        st.rank_seconds += t0.elapsed().as_secs_f64();
        let (w, b) = r?;
        st.rank += 1;
        Some((Separation::Separable { w, b }, Vec::new()))
    };
    if small && warm.is_empty() {
        if let Some(r) = rank(st) {
            return Some(r);
        }
    }
    let t0 = std::time::Instant::now();
    st.mnp += 1;
    if !warm.is_empty() {
        st.mnp_warm += 1;
    }
    let s0 = st.mnp_steps;
    let r = mnp::min_norm(
        p,
        a,
        b,
        tol,
        warm,
        mnp_budget(p.dim, a.len() + b.len()),
        &mut st.mnp_steps,
    );
    st.mnp_seconds += t0.elapsed().as_secs_f64();
    let outcome = match &r {
        mnp::Mnp::Separated { .. } => "separated".to_string(),
        mnp::Mnp::Overlap { a, b } => format!("overlap {}+{}", a.len(), b.len()),
        mnp::Mnp::Undecided(why) => format!("{why:?}"),
    };
    tracing::trace!(
        a = a.len(),
        b = b.len(),
        warm = warm.len(),
        steps = st.mnp_steps - s0,
        seconds = t0.elapsed().as_secs_f64(),
        %outcome,
        "directprobe: nearest points"
    );
    match r {
        mnp::Mnp::Separated { w, bias, corral } => {
            st.mnp_decided += 1;
            Some((Separation::Separable { w, b: bias }, corral))
        }
        mnp::Mnp::Overlap { a, b } => {
            st.mnp_decided += 1;
            Some((Separation::Overlap { a, b }, Vec::new()))
        }
        mnp::Mnp::Undecided(why) => {
            st.gave_up[why as usize] += 1;
            if small && !warm.is_empty() {
                rank(st)
            } else {
                None
            }
        }
    }
}

/// The cutting-plane LP after [`certify`] found nothing; its answer counts only if it
/// verifies, else the pair counts as overlapping (see [`decide`]).
fn fallback(p: Points, a: &[usize], b: &[usize], tol: f64, st: &mut Stats) -> Separation {
    let t0 = std::time::Instant::now();
    st.lp += 1;
    // The LP's separator must also leave the slab of the tolerance.
    let r = lp_separable(p, a, b).map(|r| match r {
        Some(Separation::Separable { w, .. }) => {
            slab(p, a, b, &w, tol).map(|b| Separation::Separable { w, b })
        }
        other => other,
    });
    st.lp_seconds += t0.elapsed().as_secs_f64();
    tracing::trace!(
        a = a.len(),
        b = b.len(),
        seconds = t0.elapsed().as_secs_f64(),
        separable = matches!(r, Ok(Some(Separation::Separable { .. }))),
        "directprobe: LP"
    );
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
    /// Exact separability tests run (pairs no stored separator, centroid direction or
    /// witness settled).
    pub lps: usize,
    /// Counters of the clustering's tests.
    pub stats: Stats,
    /// Seconds spent clustering and predicting.
    pub cluster_seconds: f64,
    pub predict_seconds: f64,
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
    /// Every training point of the cluster (its centroid counts duplicates, as the
    /// paper's).
    points: Vec<usize>,
    /// The distinct rows among `points` (one index per group of identical rows): the
    /// hull's vertices, what every test uses.
    verts: Vec<usize>,
    center: Vec<f64>,
    radius: f64,
    active: bool,
    /// A point within the tolerance of another label's point: never merged.
    frozen: bool,
}

fn make_cluster(p: Points, label: u32, points: Vec<usize>, verts: Vec<usize>) -> Cluster {
    let center = centroid(p, &points);
    let radius = verts
        .iter()
        .map(|&i| dist2(p.row(i), &center))
        .fold(0.0, f64::max)
        .sqrt();
    Cluster {
        label,
        points,
        verts,
        center,
        radius,
        active: true,
        frozen: false,
    }
}

/// A row's bits as a hash key (`-0.0` as `+0.0`, so equal rows have equal keys).
fn row_key(row: &[f64]) -> Vec<u64> {
    row.iter().map(|v| (v + 0.0).to_bits()).collect()
}

/// The indices of `ids` grouped by identical rows (groups in order of their first
/// index, each in the order of `ids`).
fn identical_groups(p: Points, ids: &[usize]) -> Vec<Vec<usize>> {
    let mut at: HashMap<Vec<u64>, usize> = HashMap::with_capacity(ids.len());
    let mut groups: Vec<Vec<usize>> = Vec::new();
    for &i in ids {
        let k = *at.entry(row_key(p.row(i))).or_insert(groups.len());
        if k == groups.len() {
            groups.push(Vec::new());
        }
        groups[k].push(i);
    }
    groups
}

/// The first index of each distinct row among `ids`: duplicates change no hull, and
/// they make Wolfe's corral singular (two vertices `x_i - x_j`, `x_i' - x_j` that are
/// one point).
fn distinct(p: Points, ids: &[usize]) -> Vec<usize> {
    identical_groups(p, ids).into_iter().map(|g| g[0]).collect()
}

fn dist2(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| (x - y) * (x - y)).sum()
}

/// Nearest-point corral `(point of the positive side, point of the negative side,
/// weight)`: a warm start for [`mnp::min_norm`] (empty when the separator came from
/// elsewhere).
type Warm = Vec<(usize, usize, f64)>;

/// A stored separator `w·x + b` of two clusters (positive on the first), with the
/// extreme projections `lo = min w·x` over the first and `hi = max w·x` over the second
/// (clusters never change, so a merged cluster's check needs only the newcomers'
/// projections), `||w||`, and the corral that found it.
struct Sep {
    w: Vec<f64>,
    b: f64,
    lo: f64,
    hi: f64,
    norm: f64,
    warm: Warm,
}

impl Sep {
    /// The separator `w` of the point sets `a` (positive) and `b`, with its projections.
    fn new(p: Points, a: &[usize], b: &[usize], w: Vec<f64>, warm: Warm) -> Sep {
        let lo = a
            .iter()
            .map(|&i| dot(p.row(i), &w))
            .fold(f64::INFINITY, f64::min);
        let hi = b
            .iter()
            .map(|&i| dot(p.row(i), &w))
            .fold(f64::NEG_INFINITY, f64::max);
        Sep {
            norm: dot(&w, &w).sqrt(),
            b: -(lo + hi) / 2.0,
            w,
            lo,
            hi,
            warm,
        }
    }

    /// This separator of `(x, d)` extended to `(x ∪ more, d)`, if it still leaves a
    /// slab wider than `tol` ([`slab`]; only `more` is projected).
    fn extend(&self, p: Points, more: &[usize], tol: f64) -> Option<Sep> {
        let lo = more
            .iter()
            .map(|&i| dot(p.row(i), &self.w))
            .fold(self.lo, f64::min);
        (lo - self.hi > tol * self.norm).then(|| Sep {
            w: self.w.clone(),
            b: -(lo + self.hi) / 2.0,
            lo,
            hi: self.hi,
            norm: self.norm,
            warm: self.warm.clone(),
        })
    }
}

/// The clustering state: clusters (ids never reused), owners, stored separators and
/// overlap witnesses.
struct Clustering<'a> {
    p: Points<'a>,
    clusters: Vec<Cluster>,
    /// Active cluster of each point.
    owner: Vec<usize>,
    /// Separator of clusters `(x, y)`, positive on `x` (stored under both orders).
    seps: HashMap<(usize, usize), Sep>,
    /// Point subsets whose hulls intersect (LP infeasible), with the label of each side.
    witnesses: Vec<(u32, Vec<usize>, Vec<usize>)>,
    /// Label pairs `(low, high)` whose whole training sets are separable.
    apart: LabelPairs,
    /// Absolute tolerance of every test ([`tolerance`]).
    tol: f64,
    stats: Stats,
    rejected: usize,
    checks: usize,
}

impl Clustering<'_> {
    /// The stored separator of clusters `x` and `y`, positive on `x`.
    fn sep(&self, x: usize, y: usize) -> Option<&Sep> {
        self.seps.get(&(x, y))
    }

    /// Store the separator of `x` and `y` (positive on `x`) under both orders.
    fn store_sep(&mut self, x: usize, y: usize, s: Sep) {
        let flipped = Sep {
            w: s.w.iter().map(|v| -v).collect(),
            b: -s.b,
            lo: -s.hi,
            hi: -s.lo,
            norm: s.norm,
            warm: s.warm.iter().map(|&(i, j, w)| (j, i, w)).collect(),
        };
        self.seps.insert((y, x), flipped);
        self.seps.insert((x, y), s);
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
        // Clusters of one label never share a row (identical rows start in one
        // cluster), so the union of the vertices is distinct.
        let mut verts = self.clusters[i].verts.clone();
        verts.extend_from_slice(&self.clusters[j].verts);
        let m = make_cluster(self.p, label, points, verts);
        let new_id = self.clusters.len();
        // Other-label clusters whose bounding balls meet M's.
        let near: Vec<usize> = (0..self.clusters.len())
            .filter(|&d| {
                let c = &self.clusters[d];
                c.active
                    && c.label != label
                    && !self
                        .apart
                        .contains(&(label.min(c.label), label.max(c.label)))
                    && dist2(&c.center, &m.center).sqrt()
                        <= (c.radius + m.radius) * (1.0 + 1e-9) + self.tol
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
        // Stored separators and the centroid direction first; the exact tests after, the
        // deepest-overlapping bounding balls first: one overlap rejects the merge, so
        // the likeliest is tried before the separable pairs' (as costly) tests.
        let mut found: Vec<(usize, Sep)> = Vec::with_capacity(near.len());
        let mut hard = Vec::new();
        for &d in &near {
            let dp = &self.clusters[d].verts;
            let stored = [self.sep(i, d), self.sep(j, d)];
            let (pi, pj) = (&self.clusters[i].verts, &self.clusters[j].verts);
            let reuse = stored[0]
                .and_then(|s| s.extend(self.p, pj, self.tol))
                .or_else(|| stored[1].and_then(|s| s.extend(self.p, pi, self.tol)))
                .or_else(|| {
                    centroid_separator(self.p, &m.verts, dp, self.tol)
                        .map(|(w, _)| Sep::new(self.p, &m.verts, dp, w, Vec::new()))
                });
            match reuse {
                Some(s) => {
                    self.stats.reused += 1;
                    found.push((d, s));
                }
                None => {
                    // Warm start: the stored nearest-point corral of `i` or `j` against
                    // `d` whose hulls are nearest (`||w|| = ||z||` is their distance).
                    let warm = stored
                        .iter()
                        .flatten()
                        .filter(|s| !s.warm.is_empty())
                        .min_by(|x, y| dot(&x.w, &x.w).total_cmp(&dot(&y.w, &y.w)))
                        .map(|s| s.warm.clone())
                        .unwrap_or_default();
                    let c = &self.clusters[d];
                    let depth = (c.radius + m.radius - dist2(&c.center, &m.center).sqrt())
                        / (c.radius + m.radius).max(f64::MIN_POSITIVE);
                    hard.push((depth, d, warm));
                }
            }
        }
        hard.sort_by(|x, y| y.0.total_cmp(&x.0).then(x.1.cmp(&y.1)));
        for (_, d, warm) in hard {
            let dp = &self.clusters[d].verts;
            self.stats.exact += 1;
            let (r, warm) = decide(self.p, &m.verts, dp, self.tol, &warm, &mut self.stats);
            match r {
                Separation::Separable { w, .. } => {
                    found.push((d, Sep::new(self.p, &m.verts, dp, w, warm)))
                }
                Separation::Overlap { a, b } => {
                    self.witnesses.push((label, a, b));
                    self.rejected += 1;
                    return Ok(false);
                }
            }
        }
        for (d, s) in found {
            self.store_sep(new_id, d, s);
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

/// Label pairs `(low, high)` whose whole training sets are separable, by a certificate
/// short of the LP ([`certify`]; an undecided pair is just not listed). Every cluster of
/// one label is then separable from every cluster of the other (subsets of disjoint
/// hulls have disjoint hulls), so the clustering never tests them against each other:
/// when every pair is listed, each label ends as one cluster after no other test.
/// `clusters`: the starting clusters (their vertices are the label's distinct rows);
/// `touching`: label pairs with points within the tolerance of each other (not
/// separable, not tested).
fn separable_labels(
    p: Points,
    clusters: &[Cluster],
    touching: &LabelPairs,
    tol: f64,
    st: &mut Stats,
) -> LabelPairs {
    let mut by_label: Vec<(u32, Vec<usize>)> = Vec::new();
    for c in clusters {
        match by_label.iter_mut().find(|(k, _)| *k == c.label) {
            Some((_, v)) => v.extend_from_slice(&c.verts),
            None => by_label.push((c.label, c.verts.clone())),
        }
    }
    // Frozen clusters of one label may repeat a row.
    for (_, v) in &mut by_label {
        *v = distinct(p, v);
    }
    let mut out = HashSet::new();
    for (x, (la, a)) in by_label.iter().enumerate() {
        for (lb, b) in &by_label[x + 1..] {
            let key = ((*la).min(*lb), (*la).max(*lb));
            if touching.contains(&key) {
                continue;
            }
            let sep = centroid_separator(p, a, b, tol).is_some()
                || matches!(
                    certify(p, a, b, tol, &[], st),
                    Some((Separation::Separable { .. }, _))
                );
            if sep {
                st.label_pairs_separable += 1;
                out.insert(key);
            }
        }
    }
    out
}

/// Label pairs `(low, high)`.
type LabelPairs = HashSet<(u32, u32)>;

/// A final cluster: its label and point indices.
pub type FinalCluster = (u32, Vec<usize>);

/// Cluster the points `p` with labels `y` (see the module doc); returns the final
/// clusters' point lists and labels, and the number of exact tests run.
pub fn cluster(p: Points, y: &[u32]) -> Result<(Vec<FinalCluster>, usize)> {
    cluster_stats(p, y).map(|(c, st)| (c, st.mnp))
}

/// The starting clusters of [`cluster_stats`], and the label pairs with points within
/// the tolerance of each other. Identical rows of one label start as one cluster (the
/// merge of points at distance 0 comes first and always passes: the hull does not
/// change). A point within the tolerance of a point of another label (identical or
/// nearly) is *conflicted*: any cluster holding it and any cluster holding the other
/// have hulls within the tolerance, so no merge involving it can pass; it starts, and
/// stays, a single-point cluster (`frozen`), with no test run for it. The pairs are
/// found on the Gram matrix of the distinct rows (with a margin for its rounding) and
/// confirmed on the rows.
fn starting_clusters(
    p: Points,
    y: &[u32],
    tol: f64,
    st: &mut Stats,
) -> Result<(Vec<Cluster>, LabelPairs)> {
    let n = y.len();
    let groups = identical_groups(p, &(0..n).collect::<Vec<_>>());
    let reps: Vec<usize> = groups.iter().map(|g| g[0]).collect();
    let m = reps.len();
    let xr: Vec<f64> = reps.iter().flat_map(|&i| p.row(i).to_vec()).collect();
    let g = gram(&xr, &xr, p.dim)?;
    let mut conflicted = vec![false; n];
    let mut touching = HashSet::new();
    let mut conflict = |a: &[usize], b: &[usize], conflicted: &mut Vec<bool>| {
        for &i in a {
            for &j in b {
                if y[i] != y[j] {
                    conflicted[i] = true;
                    conflicted[j] = true;
                    touching.insert((y[i].min(y[j]), y[i].max(y[j])));
                }
            }
        }
    };
    for (u, gu) in groups.iter().enumerate() {
        conflict(gu, gu, &mut conflicted);
        for v in u + 1..m {
            let (guu, gvv, guv) = (g[u * m + u], g[v * m + v], g[u * m + v]);
            // The Gram entries are off by at most ~dim·ε·|x||y|; 1e-12 covers that
            // for any width below ~10⁴, and the rows decide.
            if guu + gvv - 2.0 * guv <= tol * tol + 1e-12 * (guu + gvv)
                && dist2(p.row(reps[u]), p.row(reps[v])) <= tol * tol
            {
                conflict(gu, &groups[v], &mut conflicted);
            }
        }
    }
    drop(g);
    let mut clusters = Vec::new();
    for gr in &groups {
        let (frozen, free): (Vec<usize>, Vec<usize>) = gr.iter().partition(|&&i| conflicted[i]);
        for i in frozen {
            let mut c = make_cluster(p, y[i], vec![i], vec![i]);
            c.frozen = true;
            clusters.push(c);
        }
        // Not conflicted: every point of the group has the same label.
        if let Some(&first) = free.first() {
            st.duplicates += free.len() - 1;
            clusters.push(make_cluster(p, y[first], free, vec![first]));
        }
    }
    st.conflicted = conflicted.iter().filter(|&&c| c).count();
    Ok((clusters, touching))
}

/// [`cluster`] with the counters of its tests.
pub fn cluster_stats(p: Points, y: &[u32]) -> Result<(Vec<FinalCluster>, Stats)> {
    let n = y.len();
    let tol = tolerance(p);
    let mut stats = Stats::default();
    let t0 = std::time::Instant::now();
    let (clusters, touching) = starting_clusters(p, y, tol, &mut stats)?;
    let mut owner = vec![0; n];
    for (k, c) in clusters.iter().enumerate() {
        c.points.iter().for_each(|&q| owner[q] = k);
    }
    let apart = separable_labels(p, &clusters, &touching, tol, &mut stats);
    let mut st = Clustering {
        p,
        clusters,
        owner,
        seps: HashMap::new(),
        witnesses: Vec::new(),
        apart,
        tol,
        stats,
        rejected: 0,
        checks: 0,
    };
    // All pairs of same-label starting clusters (frozen ones aside) by centroid
    // distance (squared distances from the Gram matrix of their single rows).
    let starts: Vec<usize> = (0..st.clusters.len())
        .filter(|&k| !st.clusters[k].frozen)
        .collect();
    let xs: Vec<f64> = starts
        .iter()
        .flat_map(|&k| st.clusters[k].center.clone())
        .collect();
    let g = gram(&xs, &xs, p.dim)?;
    let s = starts.len();
    let mut heap = BinaryHeap::new();
    for a in 0..s {
        for b in a + 1..s {
            let (i, j) = (starts[a], starts[b]);
            if st.clusters[i].label == st.clusters[j].label {
                let d2 = g[a * s + a] + g[b * s + b] - 2.0 * g[a * s + b];
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
                if c.active && !c.frozen && c.label == label {
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
        // Duplicates change no hull (and only slow Frank-Wolfe down).
        let pts = distinct(train, pts);
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
    train: Labelled,
    test: Labelled,
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
    let rows = |s: Labelled, ids: &[usize]| -> Vec<f32> {
        ids.iter()
            .flat_map(|&i| s.x[i * width..(i + 1) * width].iter().copied())
            .collect()
    };
    let (xtr, xte) = (rows(train, &tr), rows(test, &te));
    let (mean, std) = super::fit::standardizer(&xtr, width);
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
    let t0 = std::time::Instant::now();
    let (clusters, stats) = cluster_stats(ptr, &ytr)?;
    let cluster_seconds = t0.elapsed().as_secs_f64();
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
        lps: stats.exact,
        stats,
        cluster_seconds,
        predict_seconds: t0.elapsed().as_secs_f64(),
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
        assert!(centroid_separator(p, &[0, 1, 4], &[2, 3], tolerance(p)).is_none());
        assert!(sep(&x, &[0, 1, 4], &[2, 3]));
    }

    /// Two sets `2δ` apart (δ = 1e-4, above the tolerance) across a thin slab that
    /// holds every point (`|x_0| ≤ δ + 0.01 |g|`): nearly every point is a support
    /// vector, and Wolfe needs more major steps than the `4 (dim + 1)` that once sent
    /// such pairs to the LP (at the sizes of real features the LP then took minutes and
    /// failed to verify). Settled by nearest points with a checked certificate.
    #[test]
    fn a_thin_slab_is_settled_by_nearest_points() {
        let (dim, n, delta) = (60, 300, 1e-4);
        let mut rng = Rng::new(2);
        let mut x = Vec::new();
        for i in 0..n {
            let side = if i < n / 2 { 1.0 } else { -1.0 };
            x.push(side * (delta + 0.01 * rng.gaussian().abs()));
            x.extend((1..dim).map(|_| rng.gaussian()));
        }
        let p = Points { x: &x, dim };
        let (a, b): (Vec<usize>, Vec<usize>) = (0..n).partition(|&i| i < n / 2);
        let tol = tolerance(p);
        assert!(
            2.0 * delta > 4.0 * tol,
            "the gap is well above the tolerance"
        );
        let mut st = Stats::default();
        let (r, _) = decide(p, &a, &b, tol, &[], &mut st);
        let Separation::Separable { w, b: bias } = r else {
            panic!("separable: {st:?}")
        };
        assert!(separates(p, &a, &b, &w, bias));
        assert!(slab(p, &a, &b, &w, tol).is_some());
        assert_eq!((st.lp, st.mnp_decided), (0, 1), "{st:?}");
        assert!(st.mnp_steps > 4 * (dim + 1), "{st:?}");
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
