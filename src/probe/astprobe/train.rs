//! Training AST-Probe's parser probe (martin-wey/ast-probe `src/probe/probe.py`,
//! `loss.py`, `run_probing.py`), forward and backward pass written out on host buffers.
//!
//! Model: a projection `P` (`dim x rank`) and label vectors `V_c` (`rank x |c|`),
//! `V_u` (`rank x |u|`), all initialised uniform in ±0.05. For a snippet's token vectors
//! `h_k`, `t_k = P^T h_k`, `δ_i = t_{i+1} - t_i`:
//! `d̂_i = ||δ_i||²`, scores of `c_i` = `δ_i V_c`, scores of `u_k` = `t_k V_u`.
//!
//! Loss (the reference's `ParserLoss(loss='rank')` plus its orthogonality term):
//! - `d`: pairwise hinge over the batch, `Σ relu(1 - (d̂_i - d̂_j)) / #pairs` over the
//!   pairs of one snippet with `d_i > d_j` (`rankloss`);
//! - `c`, `u`: cross-entropy, averaged over the batch's positions;
//! - `5 · ||PᵀP - I||²_F` (`orthogonal_reg`).
//!
//! Optimiser and schedule as `run_probing_train`: Adam (lr 1e-3), batches of 32
//! snippets, except that an epoch has at least [`FitOptions::min_steps`] batches (several
//! passes over a small corpus; codescope's choice, the reference trained on 20,000
//! snippets: with its one-pass epochs a corpus of ~150 snippets gets ~30 steps before
//! early stopping and learns nothing, F1 .05 against .21 with 100-step epochs for MiniLM
//! layer 3 on the bundled Python functions); after every epoch the validation loss (c + d + u, mean over validation
//! batches); the learning rate is divided by 10 when it does not improve by 1e-4
//! (relative) on the best (`ReduceLROnPlateau(factor=0.1, patience=0)`); at most 20
//! epochs, stopping after 5 without a new best; the best epoch's weights are kept.
//!
//! Why by hand: the probe is three small matrices, and an autograd graph spent most of a
//! step around the two products that matter (`X·P` and `Xᵀ·∂T`): it also formed the
//! gradient of the constant features (a third product of the same size), materialised
//! every rank pair of the batch as index tensors (O(n²) per snippet, rebuilt every step)
//! and allocated a tensor per operation. Here a step is those two `gemm` calls plus
//! linear-size work and the O(n²) pair loop in plain arithmetic. The gradients are
//! checked against candle's autograd of the same loss (the former implementation) in
//! the tests; Adam is candle's `AdamW` (weight decay 0) step for step. Results match the
//! autograd version up to float summation order (see the README's AST-Probe figures).

// The loops over every row and every token pair, compiled optimised in every profile.
// `cross_entropy` is candle's (log-softmax, then the mean negative log-likelihood).
use super::super::Rng;
use crate::error::Result;
use codescope_kernels::probe::{
    adam_update, consecutive_deltas, cross_entropy, delta_gradients, rank_hinge,
};

/// One training snippet: standardised token vectors and integer labels.
#[derive(Debug, Clone)]
pub struct Sample {
    /// `[n, dim]` row-major, standardised.
    pub x: Vec<f32>,
    pub n: usize,
    /// `n - 1` gold d values (only their order is used).
    pub d: Vec<f32>,
    /// `n - 1` c label ids.
    pub c: Vec<u32>,
    /// `n` u label ids.
    pub u: Vec<u32>,
}

/// Hyper-parameters (defaults: the reference's).
#[derive(Debug, Clone, Copy)]
pub struct FitOptions {
    pub rank: usize,
    pub lr: f64,
    pub max_epochs: usize,
    pub patience: usize,
    /// Snippets per optimiser step.
    pub batch: usize,
    /// Weight of `||PᵀP - I||²_F`.
    pub orthogonal: f64,
    /// Fewest optimiser steps per epoch: an epoch is as many shuffled passes over the
    /// training snippets as it takes (the reference's epoch, one pass over 20,000
    /// snippets, is 625 steps; one pass over a few hundred snippets would be a handful).
    pub min_steps: usize,
    pub seed: u64,
}

impl Default for FitOptions {
    fn default() -> Self {
        FitOptions {
            rank: 128,
            lr: 1e-3,
            max_epochs: 20,
            patience: 5,
            batch: 32,
            orthogonal: 5.0,
            min_steps: 100,
            seed: 0,
        }
    }
}

/// The fitted parameters, row-major: `proj` `[dim, rank]`, `vc` `[rank, nc]`,
/// `vu` `[rank, nu]`.
#[derive(Debug, Clone, PartialEq)]
pub struct ProbeWeights {
    pub dim: usize,
    pub rank: usize,
    pub nc: usize,
    pub nu: usize,
    pub proj: Vec<f32>,
    pub vc: Vec<f32>,
    pub vu: Vec<f32>,
}

/// What the probe predicts for one snippet.
#[derive(Debug, Clone, PartialEq)]
pub struct TreePrediction {
    /// `n - 1` squared distances `d̂`.
    pub d: Vec<f32>,
    /// `n - 1` argmax c ids.
    pub c: Vec<u32>,
    /// `n` argmax u ids.
    pub u: Vec<u32>,
}

/// A batch on host buffers: the snippets' rows stacked, their labels concatenated.
struct Batch {
    /// `[n_tok, dim]`.
    x: Vec<f32>,
    n_tok: usize,
    /// Per snippet: first token row, number of tokens, first `d` index.
    spans: Vec<(usize, usize, usize)>,
    d: Vec<f32>,
    c: Vec<u32>,
    u: Vec<u32>,
}

fn batch(samples: &[&Sample], dim: usize) -> Batch {
    let n_tok: usize = samples.iter().map(|s| s.n).sum();
    let mut b = Batch {
        x: Vec::with_capacity(n_tok * dim),
        n_tok,
        spans: Vec::with_capacity(samples.len()),
        d: Vec::new(),
        c: Vec::new(),
        u: Vec::new(),
    };
    for s in samples {
        b.spans.push((b.u.len(), s.n, b.d.len()));
        b.x.extend_from_slice(&s.x[..s.n * dim]);
        b.d.extend_from_slice(&s.d);
        b.c.extend_from_slice(&s.c);
        b.u.extend_from_slice(&s.u);
    }
    b
}

/// A row-major operand of [`matmul`]: `rs` / `cs` are its row and column strides, so a
/// transpose is the same buffer with the strides swapped.
#[derive(Clone, Copy)]
struct Op<'a> {
    p: &'a [f32],
    rs: usize,
    cs: usize,
}

fn op(p: &[f32], cols: usize) -> Op<'_> {
    Op { p, rs: cols, cs: 1 }
}

/// The transpose of a row-major matrix with `cols` columns.
fn op_t(p: &[f32], cols: usize) -> Op<'_> {
    Op { p, rs: 1, cs: cols }
}

/// `out (m x n, row-major) = scale · a (m x k) · b (k x n)`, or `+=` with `acc`.
#[allow(clippy::too_many_arguments)]
fn matmul(m: usize, n: usize, k: usize, a: Op, b: Op, out: &mut [f32], scale: f32, acc: bool) {
    assert!(out.len() >= m * n);
    if m == 0 || n == 0 {
        return;
    }
    if k == 0 {
        if !acc {
            out[..m * n].fill(0.0);
        }
        return;
    }
    let last = |o: &Op, rows: usize, cols: usize| (rows - 1) * o.rs + (cols - 1) * o.cs;
    assert!(last(&a, m, k) < a.p.len() && last(&b, k, n) < b.p.len());
    // Small products (the label scores) are not worth waking threads for.
    let par = match rayon::current_num_threads() {
        t if t > 1 && m * n * k >= 1 << 21 => gemm::Parallelism::Rayon(t),
        _ => gemm::Parallelism::None,
    };
    // SAFETY: every address `gemm` reads is `row * rs + col * cs` within the bounds
    // asserted above for `a` and `b`; `out` is m x n row-major inside its asserted
    // length and does not alias the inputs (a `&mut` borrow).
    unsafe {
        gemm::gemm(
            m,
            n,
            k,
            out.as_mut_ptr(),
            1,
            n as isize,
            acc,
            a.p.as_ptr(),
            a.cs as isize,
            a.rs as isize,
            b.p.as_ptr(),
            b.cs as isize,
            b.rs as isize,
            1.0,
            scale,
            false,
            false,
            false,
            par,
        );
    }
}

/// The probe's parameters (row-major: `proj` `[dim, rank]`, `vc` `[rank, nc]`, `vu`
/// `[rank, nu]`) or gradients of the same shapes.
#[derive(Debug, Clone, PartialEq)]
struct Params {
    proj: Vec<f32>,
    vc: Vec<f32>,
    vu: Vec<f32>,
}

impl Params {
    fn zeros_like(&self) -> Params {
        Params {
            proj: vec![0.0; self.proj.len()],
            vc: vec![0.0; self.vc.len()],
            vu: vec![0.0; self.vu.len()],
        }
    }

    fn parts_mut(&mut self) -> [&mut Vec<f32>; 3] {
        [&mut self.proj, &mut self.vc, &mut self.vu]
    }
}

/// Shapes of the problem.
#[derive(Debug, Clone, Copy)]
struct Dims {
    dim: usize,
    rank: usize,
    nc: usize,
    nu: usize,
}

/// The batch loss `c + d + u` (without the orthogonality term); with `grad`, the
/// gradient of `loss + orthogonal · ||PᵀP - I||²_F` is written there.
fn loss(p: &Params, sh: Dims, bt: &Batch, orthogonal: f32, grad: Option<&mut Params>) -> f64 {
    let Dims {
        dim,
        rank: r,
        nc,
        nu,
    } = sh;
    let n = bt.n_tok;
    // t = X P
    let mut t = vec![0f32; n * r];
    matmul(
        n,
        r,
        dim,
        op(&bt.x, dim),
        op(&p.proj, r),
        &mut t,
        1.0,
        false,
    );
    // δ_e = t_{i+1} - t_i for consecutive tokens of one snippet; e indexes bt.d.
    let m = bt.d.len();
    let mut rows_a = Vec::with_capacity(m);
    for &(t0, len, _) in &bt.spans {
        rows_a.extend(t0..t0 + len.saturating_sub(1));
    }
    let mut delta = vec![0f32; m * r];
    let mut dhat = vec![0f32; m];
    consecutive_deltas(&t, r, &rows_a, &mut delta, &mut dhat);
    let mut zc = vec![0f32; m * nc];
    matmul(m, nc, r, op(&delta, r), op(&p.vc, nc), &mut zc, 1.0, false);
    let mut zu = vec![0f32; n * nu];
    matmul(n, nu, r, op(&t, r), op(&p.vu, nu), &mut zu, 1.0, false);
    let want = grad.is_some();
    let lc = cross_entropy(&mut zc, nc, &bt.c, want);
    let lu = cross_entropy(&mut zu, nu, &bt.u, want);
    // Rank loss: every pair of one snippet with d_i > d_j; the hinge's gradient counts
    // +1 / -1 per active pair (relu' = 1 at 0, as candle's), scaled by 1/#pairs after.
    let mut pairs = 0usize;
    let mut hinge = 0f64;
    let mut count = vec![0f32; m];
    for &(_, len, d0) in &bt.spans {
        let e = d0..d0 + len.saturating_sub(1);
        pairs += rank_hinge(
            &bt.d[e.clone()],
            &dhat[e.clone()],
            &mut count[e],
            &mut hinge,
        );
    }
    let np = pairs as f64 + 1e-9;
    let ld = if pairs > 0 { hinge / np } else { 0.0 };
    let Some(g) = grad else {
        return lc + lu + ld;
    };
    // ∂V_c = δᵀ ∂z_c, ∂δ = ∂z_c V_cᵀ; ∂V_u = tᵀ ∂z_u, ∂t = ∂z_u V_uᵀ.
    matmul(
        r,
        nc,
        m,
        op_t(&delta, r),
        op(&zc, nc),
        &mut g.vc,
        1.0,
        false,
    );
    let mut gdelta = vec![0f32; m * r];
    matmul(
        m,
        r,
        nc,
        op(&zc, nc),
        op_t(&p.vc, nc),
        &mut gdelta,
        1.0,
        false,
    );
    matmul(r, nu, n, op_t(&t, r), op(&zu, nu), &mut g.vu, 1.0, false);
    let mut gt = vec![0f32; n * r];
    matmul(n, r, nu, op(&zu, nu), op_t(&p.vu, nu), &mut gt, 1.0, false);
    // ∂δ += 2 δ ∂d̂; t_{i+1} gets +∂δ, t_i gets -∂δ.
    let inv = if pairs > 0 { (1.0 / np) as f32 } else { 0.0 };
    delta_gradients(&rows_a, &count, inv, r, &delta, &mut gdelta, &mut gt);
    // ∂P = Xᵀ ∂t + orthogonal · 4 P (PᵀP - I).
    matmul(
        dim,
        r,
        n,
        op_t(&bt.x, dim),
        op(&gt, r),
        &mut g.proj,
        1.0,
        false,
    );
    if orthogonal != 0.0 {
        let mut a = vec![0f32; r * r];
        matmul(
            r,
            r,
            dim,
            op_t(&p.proj, r),
            op(&p.proj, r),
            &mut a,
            1.0,
            false,
        );
        for k in 0..r {
            a[k * r + k] -= 1.0;
        }
        matmul(
            dim,
            r,
            r,
            op(&p.proj, r),
            op(&a, r),
            &mut g.proj,
            4.0 * orthogonal,
            true,
        );
    }
    lc + lu + ld
}

/// candle's `AdamW` (weight decay 0), same arithmetic per element.
struct Adam {
    lr: f64,
    step: i32,
    m: Params,
    v: Params,
}

impl Adam {
    const BETA1: f64 = 0.9;
    const BETA2: f64 = 0.999;
    const EPS: f64 = 1e-8;

    fn step(&mut self, p: &mut Params, g: &mut Params) {
        self.step += 1;
        // The scalars as candle rounds them (computed in f64, applied as f32).
        let (b1, b2) = (Self::BETA1 as f32, Self::BETA2 as f32);
        let (c1, c2) = ((1.0 - Self::BETA1) as f32, (1.0 - Self::BETA2) as f32);
        let scale_m = (1.0 / (1.0 - Self::BETA1.powi(self.step))) as f32;
        let scale_v = (1.0 / (1.0 - Self::BETA2.powi(self.step))) as f32;
        let (lr, eps) = (self.lr as f32, Self::EPS as f32);
        for (((theta, g), m), v) in p
            .parts_mut()
            .into_iter()
            .zip(g.parts_mut())
            .zip(self.m.parts_mut())
            .zip(self.v.parts_mut())
        {
            adam_update(
                theta,
                g,
                m,
                v,
                (b1, b2),
                (c1, c2),
                (scale_m, scale_v),
                lr,
                eps,
            );
        }
    }
}

/// Train on `train`, early-stop on `val` (no validation: all `max_epochs` run). `nc` /
/// `nu`: number of c / u labels. Returns the weights and the number of epochs run.
/// `cancel` is polled before every step (`Error::Cancelled`).
pub fn fit(
    train: &[&Sample],
    val: &[&Sample],
    dim: usize,
    nc: usize,
    nu: usize,
    opts: &FitOptions,
    cancel: &dyn Fn() -> bool,
) -> Result<(ProbeWeights, usize)> {
    let sh = Dims {
        dim,
        rank: opts.rank,
        nc: nc.max(1),
        nu: nu.max(1),
    };
    let mut rng = Rng::new(opts.seed ^ 0xA57_990B);
    let mut init = |rows: usize, cols: usize| -> Vec<f32> {
        (0..rows * cols)
            .map(|_| ((rng.f64() * 2.0 - 1.0) * 0.05) as f32)
            .collect()
    };
    let mut params = Params {
        proj: init(dim, sh.rank),
        vc: init(sh.rank, sh.nc),
        vu: init(sh.rank, sh.nu),
    };
    let mut grad = params.zeros_like();
    let mut adam = Adam {
        lr: opts.lr,
        step: 0,
        m: params.zeros_like(),
        v: params.zeros_like(),
    };
    let orthogonal = opts.orthogonal as f32;
    let val_batches: Vec<Batch> = val
        .chunks(opts.batch.max(1))
        .map(|c| batch(c, dim))
        .collect();
    let mut order: Vec<&Sample> = train.to_vec();
    let mut best_loss = f64::INFINITY;
    let mut best = params.clone();
    // ReduceLROnPlateau keeps its own best (relative threshold 1e-4).
    let mut plateau_best = f64::INFINITY;
    let (mut stale, mut epochs) = (0usize, 0usize);
    for _ in 0..opts.max_epochs {
        epochs += 1;
        // Whole shuffled passes until the epoch has `min_steps` batches.
        let mut batches: Vec<Vec<&Sample>> = Vec::new();
        loop {
            rng.shuffle(&mut order);
            batches.extend(order.chunks(opts.batch.max(1)).map(|c| c.to_vec()));
            if batches.len() >= opts.min_steps || order.is_empty() {
                break;
            }
        }
        for chunk in &batches {
            if cancel() {
                return Err(crate::error::Error::Cancelled);
            }
            let bt = batch(chunk, dim);
            loss(&params, sh, &bt, orthogonal, Some(&mut grad));
            adam.step(&mut params, &mut grad);
        }
        if val_batches.is_empty() {
            continue;
        }
        let mut v = 0.0;
        for bt in &val_batches {
            // candle returned the batch loss as f32.
            v += loss(&params, sh, bt, orthogonal, None) as f32 as f64;
        }
        v /= val_batches.len() as f64;
        if v < plateau_best * (1.0 - 1e-4) {
            plateau_best = v;
        } else {
            let new_lr = adam.lr * 0.1;
            // torch skips updates smaller than eps = 1e-8.
            if adam.lr - new_lr > 1e-8 {
                adam.lr = new_lr;
            }
        }
        if v < best_loss {
            best_loss = v;
            best = params.clone();
            stale = 0;
        } else {
            stale += 1;
            if stale >= opts.patience {
                break;
            }
        }
    }
    if !val_batches.is_empty() {
        params = best;
    }
    Ok((
        ProbeWeights {
            dim,
            rank: sh.rank,
            nc: sh.nc,
            nu: sh.nu,
            proj: params.proj,
            vc: params.vc,
            vu: params.vu,
        },
        epochs,
    ))
}

/// Index of the first largest value of each `k`-wide row.
fn argmax_rows(z: &[f32], k: usize) -> Vec<u32> {
    z.chunks_exact(k.max(1))
        .map(|row| {
            let mut best = 0;
            for (i, &v) in row.iter().enumerate() {
                if v > row[best] {
                    best = i;
                }
            }
            best as u32
        })
        .collect()
}

impl ProbeWeights {
    /// Predict `(d̂, c, u)` for the standardised token vectors `x` (`[n, dim]`, `n >= 1`).
    pub fn predict(&self, x: &[f32]) -> Result<TreePrediction> {
        let (dim, r) = (self.dim.max(1), self.rank);
        let n = x.len() / dim;
        if self.proj.len() != dim * r || x.len() != n * dim {
            return Err(crate::error::Error::Compute(format!(
                "AST-Probe: {} values are not rows of width {dim}",
                x.len()
            )));
        }
        let mut t = vec![0f32; n * r];
        matmul(n, r, dim, op(x, dim), op(&self.proj, r), &mut t, 1.0, false);
        let mut zu = vec![0f32; n * self.nu];
        matmul(
            n,
            self.nu,
            r,
            op(&t, r),
            op(&self.vu, self.nu),
            &mut zu,
            1.0,
            false,
        );
        let u = argmax_rows(&zu, self.nu);
        let m = n.saturating_sub(1);
        let mut delta = vec![0f32; m * r];
        for i in 0..m {
            for k in 0..r {
                delta[i * r + k] = t[(i + 1) * r + k] - t[i * r + k];
            }
        }
        let d = delta
            .chunks_exact(r.max(1))
            .map(|row| row.iter().map(|v| v * v).sum())
            .take(m)
            .collect();
        let mut zc = vec![0f32; m * self.nc];
        matmul(
            m,
            self.nc,
            r,
            op(&delta, r),
            op(&self.vc, self.nc),
            &mut zc,
            1.0,
            false,
        );
        Ok(TreePrediction {
            d,
            c: argmax_rows(&zc, self.nc),
            u,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use candle_core::{Device, Tensor, Var};
    use candle_nn::{AdamW, Optimizer, ParamsAdamW};

    /// The former implementation (candle autograd over index tensors), kept as the
    /// reference: `(c + d + u loss, gradient of loss + orthogonal · ||PᵀP - I||²_F)`.
    fn candle_loss(p: &Params, sh: Dims, samples: &[&Sample], orth: f64) -> (f64, Params) {
        let dev = Device::Cpu;
        let var = |v: &[f32], r: usize, c: usize| {
            Var::from_tensor(&Tensor::from_slice(v, (r, c), &dev).unwrap()).unwrap()
        };
        let (proj, vc, vu) = (
            var(&p.proj, sh.dim, sh.rank),
            var(&p.vc, sh.rank, sh.nc),
            var(&p.vu, sh.rank, sh.nu),
        );
        let n_tok: usize = samples.iter().map(|s| s.n).sum();
        let (mut x, mut a, mut b, mut c, mut u) = (vec![], vec![], vec![], vec![], vec![]);
        let (mut pp, mut qq) = (vec![], vec![]);
        let (mut tok0, mut d0) = (0u32, 0u32);
        for s in samples {
            x.extend_from_slice(&s.x);
            for i in 0..s.n as u32 - 1 {
                a.push(tok0 + i);
                b.push(tok0 + i + 1);
            }
            c.extend_from_slice(&s.c);
            u.extend_from_slice(&s.u);
            for (i, di) in s.d.iter().enumerate() {
                for (j, dj) in s.d.iter().enumerate() {
                    if di > dj {
                        pp.push(d0 + i as u32);
                        qq.push(d0 + j as u32);
                    }
                }
            }
            tok0 += s.n as u32;
            d0 += s.d.len() as u32;
        }
        let ids = |v: Vec<u32>| {
            let n = v.len();
            Tensor::from_vec(v, n, &dev).unwrap()
        };
        let pairs = pp.len();
        let x = Tensor::from_vec(x, (n_tok, sh.dim), &dev).unwrap();
        let t = x.matmul(proj.as_tensor()).unwrap();
        let delta =
            (t.index_select(&ids(b), 0).unwrap() - t.index_select(&ids(a), 0).unwrap()).unwrap();
        let d_hat = delta.sqr().unwrap().sum(1).unwrap();
        let lc = candle_nn::loss::cross_entropy(&delta.matmul(vc.as_tensor()).unwrap(), &ids(c))
            .unwrap();
        let lu =
            candle_nn::loss::cross_entropy(&t.matmul(vu.as_tensor()).unwrap(), &ids(u)).unwrap();
        let mut total = (lc + lu).unwrap();
        if pairs > 0 {
            let margin = (d_hat.index_select(&ids(pp), 0).unwrap()
                - d_hat.index_select(&ids(qq), 0).unwrap())
            .unwrap();
            let ld = ((1.0 - margin).unwrap().relu().unwrap().sum_all().unwrap()
                / (pairs as f64 + 1e-9))
                .unwrap();
            total = (total + ld).unwrap();
        }
        let pt = proj.as_tensor();
        let eye = Tensor::eye(sh.rank, candle_core::DType::F32, &dev).unwrap();
        let reg = (pt.t().unwrap().matmul(pt).unwrap() - eye)
            .unwrap()
            .sqr()
            .unwrap()
            .sum_all()
            .unwrap();
        let all = (&total + (reg * orth).unwrap()).unwrap();
        let grads = all.backward().unwrap();
        let g = |v: &Var| -> Vec<f32> {
            grads
                .get(v.as_tensor())
                .unwrap()
                .flatten_all()
                .unwrap()
                .to_vec1()
                .unwrap()
        };
        (
            total.to_scalar::<f32>().unwrap() as f64,
            Params {
                proj: g(&proj),
                vc: g(&vc),
                vu: g(&vu),
            },
        )
    }

    fn problem(seed: u64, sh: Dims, snippets: usize) -> (Params, Vec<Sample>) {
        let mut rng = Rng::new(seed);
        let mut vec = |n: usize, s: f32| -> Vec<f32> { rng.vec(n, s) };
        let p = Params {
            proj: vec(sh.dim * sh.rank, 0.5),
            vc: vec(sh.rank * sh.nc, 0.5),
            vu: vec(sh.rank * sh.nu, 0.5),
        };
        let mut rng = Rng::new(seed ^ 7);
        let samples = (0..snippets)
            .map(|_| {
                let n = 2 + rng.below(12);
                Sample {
                    x: rng.vec(n * sh.dim, 1.0),
                    n,
                    // Small integer heights: ties are common, as in real trees.
                    d: (0..n - 1).map(|_| (1 + rng.below(4)) as f32).collect(),
                    c: (0..n - 1).map(|_| rng.below(sh.nc) as u32).collect(),
                    u: (0..n).map(|_| rng.below(sh.nu) as u32).collect(),
                }
            })
            .collect();
        (p, samples)
    }

    fn close(a: &[f32], b: &[f32], what: &str) {
        assert_eq!(a.len(), b.len());
        let scale = b.iter().fold(0f32, |m, v| m.max(v.abs())).max(1e-3);
        for (i, (x, y)) in a.iter().zip(b).enumerate() {
            assert!((x - y).abs() <= 1e-4 * scale, "{what}[{i}]: {x} vs {y}");
        }
    }

    #[test]
    fn loss_and_gradients_match_candle_autograd() {
        for (seed, orth) in [(1u64, 5.0), (2, 0.0), (3, 5.0)] {
            let sh = Dims {
                dim: 9,
                rank: 6,
                nc: 5,
                nu: 4,
            };
            let (p, samples) = problem(seed, sh, 7);
            let refs: Vec<&Sample> = samples.iter().collect();
            let (want_loss, want) = candle_loss(&p, sh, &refs, orth);
            let mut got = p.zeros_like();
            let bt = batch(&refs, sh.dim);
            let got_loss = loss(&p, sh, &bt, orth as f32, Some(&mut got));
            assert!(
                (got_loss - want_loss).abs() <= 1e-5 * want_loss.abs().max(1.0),
                "{got_loss} vs {want_loss}"
            );
            assert_eq!(loss(&p, sh, &bt, orth as f32, None), got_loss);
            close(&got.proj, &want.proj, "proj");
            close(&got.vc, &want.vc, "vc");
            close(&got.vu, &want.vu, "vu");
        }
    }

    #[test]
    fn adam_steps_match_candle_adamw() {
        let sh = Dims {
            dim: 5,
            rank: 3,
            nc: 2,
            nu: 2,
        };
        let (mut p, samples) = problem(4, sh, 3);
        let dev = Device::Cpu;
        let vars: Vec<Var> = [&p.proj, &p.vc, &p.vu]
            .iter()
            .map(|v| Var::from_tensor(&Tensor::from_slice(v, v.len(), &dev).unwrap()).unwrap())
            .collect();
        let mut theirs = AdamW::new(
            vars.clone(),
            ParamsAdamW {
                lr: 1e-2,
                weight_decay: 0.0,
                ..Default::default()
            },
        )
        .unwrap();
        let mut ours = Adam {
            lr: 1e-2,
            step: 0,
            m: p.zeros_like(),
            v: p.zeros_like(),
        };
        let refs: Vec<&Sample> = samples.iter().collect();
        let bt = batch(&refs, sh.dim);
        for _ in 0..4 {
            let mut g = p.zeros_like();
            loss(&p, sh, &bt, 5.0, Some(&mut g));
            // candle: a loss whose gradient is g (Σ θ·g over the three parameters).
            let mut obj = Tensor::new(0f32, &dev).unwrap();
            for (v, gv) in vars.iter().zip([&g.proj, &g.vc, &g.vu]) {
                let gt = Tensor::from_slice(gv, gv.len(), &dev).unwrap();
                obj = (obj + (v.as_tensor() * gt).unwrap().sum_all().unwrap()).unwrap();
            }
            theirs.backward_step(&obj).unwrap();
            ours.step(&mut p, &mut g);
            for (v, mine) in vars.iter().zip([&p.proj, &p.vc, &p.vu]) {
                // Same weights to float rounding; keep them equal for the next step.
                let t: Vec<f32> = v.as_tensor().to_vec1().unwrap();
                close(mine, &t, "theta");
                v.set(&Tensor::from_slice(mine, mine.len(), &dev).unwrap())
                    .unwrap();
            }
        }
    }
}
