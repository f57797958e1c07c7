//! Training AST-Probe's parser probe with candle (martin-wey/ast-probe
//! `src/probe/probe.py`, `loss.py`, `run_probing.py`).
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

use candle_core::{Device, Tensor, Var, D};
use candle_nn::{AdamW, Optimizer, ParamsAdamW};

use super::super::Rng;
use crate::error::Result;

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
pub struct Weights {
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
pub struct Prediction {
    /// `n - 1` squared distances `d̂`.
    pub d: Vec<f32>,
    /// `n - 1` argmax c ids.
    pub c: Vec<u32>,
    /// `n` argmax u ids.
    pub u: Vec<u32>,
}

struct Batch {
    x: Tensor,
    a: Tensor,
    b: Tensor,
    c: Tensor,
    u: Tensor,
    /// Rank pairs `(p, q)` with gold `d_p > d_q`, indices into the batch's d values.
    p: Tensor,
    q: Tensor,
    pairs: usize,
}

fn batch(samples: &[&Sample], dim: usize, dev: &Device) -> Result<Batch> {
    let n_tok: usize = samples.iter().map(|s| s.n).sum();
    let mut x = Vec::with_capacity(n_tok * dim);
    let (mut a, mut b, mut c, mut u) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let (mut p, mut q) = (Vec::new(), Vec::new());
    let (mut tok0, mut d0) = (0u32, 0u32);
    for s in samples {
        x.extend_from_slice(&s.x);
        for i in 0..s.n.saturating_sub(1) as u32 {
            a.push(tok0 + i);
            b.push(tok0 + i + 1);
        }
        c.extend_from_slice(&s.c);
        u.extend_from_slice(&s.u);
        for (i, di) in s.d.iter().enumerate() {
            for (j, dj) in s.d.iter().enumerate() {
                if di > dj {
                    p.push(d0 + i as u32);
                    q.push(d0 + j as u32);
                }
            }
        }
        tok0 += s.n as u32;
        d0 += s.d.len() as u32;
    }
    let t = |v: Vec<u32>| -> Result<Tensor> {
        let n = v.len();
        Ok(Tensor::from_vec(v, n, dev)?)
    };
    let pairs = p.len();
    Ok(Batch {
        x: Tensor::from_vec(x, (n_tok, dim), dev)?,
        a: t(a)?,
        b: t(b)?,
        c: t(c)?,
        u: t(u)?,
        p: t(p)?,
        q: t(q)?,
        pairs,
    })
}

struct Params {
    proj: Var,
    vc: Var,
    vu: Var,
}

impl Params {
    /// `(c + d + u loss, ||PᵀP - I||²_F)` of a batch.
    fn loss(&self, bt: &Batch) -> candle_core::Result<(Tensor, Tensor)> {
        let t = bt.x.matmul(self.proj.as_tensor())?;
        let delta = (t.index_select(&bt.b, 0)? - t.index_select(&bt.a, 0)?)?;
        let d_hat = delta.sqr()?.sum(1)?;
        let lc = candle_nn::loss::cross_entropy(&delta.matmul(self.vc.as_tensor())?, &bt.c)?;
        let lu = candle_nn::loss::cross_entropy(&t.matmul(self.vu.as_tensor())?, &bt.u)?;
        let mut total = (lc + lu)?;
        if bt.pairs > 0 {
            let margin = (d_hat.index_select(&bt.p, 0)? - d_hat.index_select(&bt.q, 0)?)?;
            let ld = ((1.0 - margin)?.relu()?.sum_all()? / (bt.pairs as f64 + 1e-9))?;
            total = (total + ld)?;
        }
        let p = self.proj.as_tensor();
        let rank = p.dims2()?.1;
        let eye = Tensor::eye(rank, candle_core::DType::F32, p.device())?;
        let reg = (p.t()?.matmul(p)? - eye)?.sqr()?.sum_all()?;
        Ok((total, reg))
    }

    fn snapshot(&self) -> candle_core::Result<[Tensor; 3]> {
        Ok([
            self.proj.as_tensor().copy()?,
            self.vc.as_tensor().copy()?,
            self.vu.as_tensor().copy()?,
        ])
    }

    fn restore(&self, s: &[Tensor; 3]) -> candle_core::Result<()> {
        self.proj.set(&s[0])?;
        self.vc.set(&s[1])?;
        self.vu.set(&s[2])
    }
}

/// Train on `train`, early-stop on `val` (no validation: all `max_epochs` run). `nc` /
/// `nu`: number of c / u labels. Returns the weights and the number of epochs run.
pub fn fit(
    train: &[&Sample],
    val: &[&Sample],
    dim: usize,
    nc: usize,
    nu: usize,
    opts: &FitOptions,
    cancel: &dyn Fn() -> bool,
) -> Result<(Weights, usize)> {
    let dev = Device::Cpu;
    let mut rng = Rng::new(opts.seed ^ 0xA57_990B);
    let mut init = |rows: usize, cols: usize| -> Result<Var> {
        let v: Vec<f32> = (0..rows * cols)
            .map(|_| ((rng.f64() * 2.0 - 1.0) * 0.05) as f32)
            .collect();
        Ok(Var::from_tensor(&Tensor::from_vec(v, (rows, cols), &dev)?)?)
    };
    let params = Params {
        proj: init(dim, opts.rank)?,
        vc: init(opts.rank, nc.max(1))?,
        vu: init(opts.rank, nu.max(1))?,
    };
    let mut lr = opts.lr;
    let mut opt = AdamW::new(
        vec![params.proj.clone(), params.vc.clone(), params.vu.clone()],
        ParamsAdamW {
            lr,
            weight_decay: 0.0,
            ..Default::default()
        },
    )?;
    let val_batches: Vec<Batch> = val
        .chunks(opts.batch.max(1))
        .map(|c| batch(c, dim, &dev))
        .collect::<Result<_>>()?;
    let mut order: Vec<&Sample> = train.to_vec();
    let mut best_loss = f64::INFINITY;
    let mut best = params.snapshot()?;
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
                return Err(crate::error::Error::Compute("cancelled".into()));
            }
            let bt = batch(chunk, dim, &dev)?;
            let (l, reg) = params.loss(&bt)?;
            opt.backward_step(&(l + (reg * opts.orthogonal)?)?)?;
        }
        if val_batches.is_empty() {
            continue;
        }
        let mut v = 0.0;
        for bt in &val_batches {
            v += params.loss(bt)?.0.to_scalar::<f32>()? as f64;
        }
        v /= val_batches.len() as f64;
        if v < plateau_best * (1.0 - 1e-4) {
            plateau_best = v;
        } else {
            let new_lr = lr * 0.1;
            // torch skips updates smaller than eps = 1e-8.
            if lr - new_lr > 1e-8 {
                lr = new_lr;
                opt.set_learning_rate(lr);
            }
        }
        if v < best_loss {
            best_loss = v;
            best = params.snapshot()?;
            stale = 0;
        } else {
            stale += 1;
            if stale >= opts.patience {
                break;
            }
        }
    }
    if !val_batches.is_empty() {
        params.restore(&best)?;
    }
    let flat = |v: &Var| -> Result<Vec<f32>> { Ok(v.as_tensor().flatten_all()?.to_vec1()?) };
    Ok((
        Weights {
            dim,
            rank: opts.rank,
            nc: nc.max(1),
            nu: nu.max(1),
            proj: flat(&params.proj)?,
            vc: flat(&params.vc)?,
            vu: flat(&params.vu)?,
        },
        epochs,
    ))
}

impl Weights {
    /// Predict `(d̂, c, u)` for the standardised token vectors `x` (`[n, dim]`, `n >= 1`).
    pub fn predict(&self, x: &[f32]) -> Result<Prediction> {
        let dev = Device::Cpu;
        let n = x.len() / self.dim.max(1);
        let xt = Tensor::from_slice(x, (n, self.dim), &dev)?;
        let proj = Tensor::from_slice(&self.proj, (self.dim, self.rank), &dev)?;
        let vc = Tensor::from_slice(&self.vc, (self.rank, self.nc), &dev)?;
        let vu = Tensor::from_slice(&self.vu, (self.rank, self.nu), &dev)?;
        let t = xt.matmul(&proj)?;
        let u = t.matmul(&vu)?.argmax(D::Minus1)?.to_vec1::<u32>()?;
        if n < 2 {
            return Ok(Prediction {
                d: Vec::new(),
                c: Vec::new(),
                u,
            });
        }
        let delta = (t.narrow(0, 1, n - 1)? - t.narrow(0, 0, n - 1)?)?;
        Ok(Prediction {
            d: delta.sqr()?.sum(1)?.to_vec1()?,
            c: delta.matmul(&vc)?.argmax(D::Minus1)?.to_vec1()?,
            u,
        })
    }
}
