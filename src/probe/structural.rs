//! Structural probe (Hewitt & Manning 2019): learn `B` (`dim x rank`) so that
//! `||B(h_i - h_j)||²` fits the tree distance `d(i, j)` between code tokens of a snippet.
//!
//! Training follows the paper: L1 loss `sum_{i,j} |pred_ij - d_ij| / n²` per snippet,
//! averaged over a batch of snippets, Adam(W), `B` initialised uniform in ±0.05 (seeded),
//! early stopping on the loss of a validation share of the training snippets.
//! codescope's choices: features standardised with the training tokens' mean / std;
//! snippets longer than [`MAX_TOKENS`] covered tokens keep their first `MAX_TOKENS`.
//!
//! Metrics on the test snippets:
//! - **Spearman**: per snippet, the rank correlation of predicted and gold distances over
//!   all pairs `i < j` (ties get average ranks), averaged over snippets with ≥ 5 tokens
//!   (the paper correlates per word and buckets by sentence length; this is simpler).
//! - **UUAS**: undirected edges shared by the minimum spanning tree of the predicted
//!   distances and the gold tree among leaves, over `n - 1`, micro-averaged. Leaves have
//!   no tree edges between them, so the gold "tree" is the minimum spanning tree of the
//!   gold distances, ties broken towards tokens closer in source order (so a run of
//!   siblings becomes a chain) — codescope's definition.

use std::time::Instant;

use candle_core::{Device, Tensor, Var};
use candle_nn::{AdamW, Optimizer, ParamsAdamW};
use serde::Serialize;

use super::dataset::Features;
use super::fit::{spearman, EarlyStop};
use super::Rng;
use crate::error::Result;
use crate::syntax::Syntax;

/// Longest snippet (in covered tokens) used as is.
pub const MAX_TOKENS: usize = 128;

/// Hyper-parameters of [`train_eval`].
#[derive(Debug, Clone, Copy)]
pub struct StructuralOptions {
    pub rank: usize,
    pub lr: f64,
    pub max_epochs: usize,
    pub patience: usize,
    /// Snippets per optimiser step.
    pub batch: usize,
    pub val_fraction: f64,
    pub seed: u64,
}

impl Default for StructuralOptions {
    fn default() -> Self {
        StructuralOptions {
            rank: 64,
            lr: 1e-3,
            max_epochs: 40,
            patience: 3,
            batch: 8,
            val_fraction: 0.1,
            seed: 0,
        }
    }
}

/// One layer's structural-probe result.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct StructuralResult {
    /// Hidden layer; 0 = embeddings.
    pub layer: usize,
    pub rank: usize,
    pub spearman: f64,
    pub uuas: f64,
    pub train_snippets: usize,
    pub test_snippets: usize,
    pub seconds: f64,
}

/// One snippet's token features `[n, dim]` and gold distances `[n, n]`.
pub struct Sample {
    pub x: Vec<f32>,
    pub n: usize,
    pub dist: Vec<f32>,
}

/// The samples of `snippets` (indices into `syntaxes` / `features`) at `layer`;
/// snippets with fewer than 2 covered tokens are skipped.
pub fn samples(
    syntaxes: &[Option<Syntax>],
    features: &Features,
    snippets: &[usize],
    layer: usize,
) -> Vec<Sample> {
    let d = features.dim;
    let mut out = Vec::new();
    for &s in snippets {
        let Some(syn) = &syntaxes[s] else { continue };
        let toks = &features.snippets[s].tokens;
        let n = toks.len().min(MAX_TOKENS);
        if n < 2 {
            continue;
        }
        let x = features.snippets[s].layers[layer][..n * d].to_vec();
        let mut dist = vec![0f32; n * n];
        for i in 0..n {
            for j in 0..n {
                dist[i * n + j] = syn.tree_distance(toks[i], toks[j]) as f32;
            }
        }
        out.push(Sample { x, n, dist });
    }
    out
}

fn pred_distances(x: &Tensor, b: &Tensor) -> candle_core::Result<Tensor> {
    let p = x.matmul(b)?;
    let sq = p.sqr()?.sum_keepdim(1)?;
    let gram = p.matmul(&p.t()?)?;
    sq.broadcast_add(&sq.t()?)?.sub(&(gram * 2.0)?)
}

/// Train on `train`, evaluate on `test`; returns `(spearman, uuas)`.
pub fn train_eval(
    train: &[Sample],
    test: &[Sample],
    dim: usize,
    opts: &StructuralOptions,
) -> Result<(f64, f64)> {
    let dev = Device::Cpu;
    // Standardise with the training tokens' statistics.
    let all: Vec<f32> = train.iter().flat_map(|s| s.x.iter().copied()).collect();
    let (mean, std) = super::fit::standardizer(&all, dim);
    let tensors = |v: &[Sample]| -> Result<Vec<(Tensor, Tensor)>> {
        v.iter()
            .map(|s| {
                let mut x = s.x.clone();
                for row in x.chunks_exact_mut(dim) {
                    for ((v, m), sd) in row.iter_mut().zip(&mean).zip(&std) {
                        *v = (*v - m) / sd;
                    }
                }
                Ok((
                    Tensor::from_vec(x, (s.n, dim), &dev)?,
                    Tensor::from_vec(s.dist.clone(), (s.n, s.n), &dev)?,
                ))
            })
            .collect()
    };
    let mut rng = Rng::new(opts.seed ^ 0x57_2C7A);
    let mut order: Vec<usize> = (0..train.len()).collect();
    rng.shuffle(&mut order);
    let n_val = if train.len() >= 10 {
        ((train.len() as f64 * opts.val_fraction).round() as usize).max(1)
    } else {
        0
    };
    let all_t = tensors(train)?;
    let val: Vec<&(Tensor, Tensor)> = order[..n_val].iter().map(|&i| &all_t[i]).collect();
    let mut fit: Vec<&(Tensor, Tensor)> = order[n_val..].iter().map(|&i| &all_t[i]).collect();
    let init: Vec<f32> = (0..dim * opts.rank)
        .map(|_| ((rng.f64() * 2.0 - 1.0) * 0.05) as f32)
        .collect();
    let b = Var::from_tensor(&Tensor::from_vec(init, (dim, opts.rank), &dev)?)?;
    let mut opt = AdamW::new(
        vec![b.clone()],
        ParamsAdamW {
            lr: opts.lr,
            weight_decay: 0.0,
            ..Default::default()
        },
    )?;
    let loss_of = |batch: &[&(Tensor, Tensor)]| -> candle_core::Result<Tensor> {
        let mut total: Option<Tensor> = None;
        for (x, d) in batch {
            let l = (pred_distances(x, b.as_tensor())? - d)?.abs()?.mean_all()?;
            total = Some(match total {
                None => l,
                Some(t) => (t + l)?,
            });
        }
        let t = total.unwrap_or(Tensor::new(0f32, &dev)?);
        t / batch.len().max(1) as f64
    };
    let mut stop = EarlyStop::new(opts.patience, b.as_tensor().copy()?);
    for _ in 0..opts.max_epochs {
        rng.shuffle(&mut fit);
        for chunk in fit.chunks(opts.batch.max(1)) {
            opt.backward_step(&loss_of(chunk)?)?;
        }
        if n_val == 0 {
            continue;
        }
        let v = loss_of(&val)?.to_scalar::<f32>()? as f64;
        if stop.stop_after(v, || Ok(b.as_tensor().copy()?))? {
            break;
        }
    }
    if n_val > 0 {
        b.set(stop.best())?;
    }
    let (mut rho_sum, mut rho_n, mut hit, mut edges) = (0.0, 0usize, 0usize, 0usize);
    for (s, (x, _)) in test.iter().zip(tensors(test)?) {
        let pred: Vec<f32> = pred_distances(&x, b.as_tensor())?
            .flatten_all()?
            .to_vec1()?;
        let n = s.n;
        if n >= 5 {
            let (mut p, mut g) = (Vec::new(), Vec::new());
            for i in 0..n {
                for j in i + 1..n {
                    p.push(pred[i * n + j] as f64);
                    g.push(s.dist[i * n + j] as f64);
                }
            }
            if let Some(r) = spearman(&p, &g) {
                rho_sum += r;
                rho_n += 1;
            }
        }
        let gold = mst(n, |i, j| s.dist[i * n + j] as f64);
        let predicted = mst(n, |i, j| pred[i * n + j] as f64);
        hit += predicted.iter().filter(|e| gold.contains(e)).count();
        edges += n - 1;
    }
    Ok((
        if rho_n > 0 {
            rho_sum / rho_n as f64
        } else {
            0.0
        },
        hit as f64 / edges.max(1) as f64,
    ))
}

/// Minimum spanning tree (Prim from node 0) as sorted undirected edges `(i, j)`,
/// `i < j`; among equal weights the pair closer in index order wins, then the lower
/// index.
pub fn mst(n: usize, w: impl Fn(usize, usize) -> f64) -> Vec<(usize, usize)> {
    if n < 2 {
        return Vec::new();
    }
    let mut in_tree = vec![false; n];
    in_tree[0] = true;
    // best[j] = (weight, span, from)
    let mut best: Vec<(f64, usize, usize)> = (0..n).map(|j| (w(0, j), j, 0)).collect();
    let mut edges = Vec::with_capacity(n - 1);
    for _ in 1..n {
        let mut pick = None;
        for j in 0..n {
            if in_tree[j] {
                continue;
            }
            let key = (best[j].0, best[j].1, j);
            if pick.is_none_or(|(k, _): ((f64, usize, usize), usize)| {
                key.0 < k.0 || (key.0 == k.0 && (key.1, key.2) < (k.1, k.2))
            }) {
                pick = Some((key, j));
            }
        }
        let Some((_, j)) = pick else { break };
        in_tree[j] = true;
        let f = best[j].2;
        edges.push((f.min(j), f.max(j)));
        for k in 0..n {
            if !in_tree[k] {
                let c = (w(j, k), j.abs_diff(k), j);
                let o = best[k];
                if c.0 < o.0 || (c.0 == o.0 && (c.1, c.2) < (o.1, o.2)) {
                    best[k] = c;
                }
            }
        }
    }
    edges.sort_unstable();
    edges
}

/// Train and evaluate the structural probe at `layer`.
pub fn run_layer(
    syntaxes: &[Option<Syntax>],
    features: &Features,
    train_snippets: &[usize],
    test_snippets: &[usize],
    layer: usize,
    opts: &StructuralOptions,
) -> Result<StructuralResult> {
    let start = Instant::now();
    let tr = samples(syntaxes, features, train_snippets, layer);
    let te = samples(syntaxes, features, test_snippets, layer);
    let (spearman, uuas) = train_eval(&tr, &te, features.dim, opts)?;
    Ok(StructuralResult {
        layer,
        rank: opts.rank,
        spearman,
        uuas,
        train_snippets: tr.len(),
        test_snippets: te.len(),
        seconds: start.elapsed().as_secs_f64(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mst_on_a_path_and_with_ties() {
        // Points on a line: the MST is the chain.
        let pos: [f64; 4] = [0.0, 1.0, 3.0, 6.0];
        let e = mst(4, |i, j| (pos[i] - pos[j]).abs());
        assert_eq!(e, vec![(0, 1), (1, 2), (2, 3)]);
        // All equal: ties go to index neighbours, a chain.
        assert_eq!(mst(4, |_, _| 2.0), vec![(0, 1), (1, 2), (2, 3)]);
        assert!(mst(1, |_, _| 0.0).is_empty());
    }

    #[test]
    fn structural_probe_recovers_distances_of_a_planted_metric() {
        // Tokens at random points of a 3-d subspace of a 12-d space: the gold distance is
        // the squared euclidean distance in the subspace, so a rank-3 B fits it exactly.
        let mut rng = Rng::new(4);
        let dim = 12;
        let mut make = |count: usize| -> Vec<Sample> {
            (0..count)
                .map(|_| {
                    let n = 8;
                    let pts: Vec<Vec<f32>> = (0..n)
                        .map(|_| (0..dim).map(|_| rng.f64() as f32 * 2.0 - 1.0).collect())
                        .collect();
                    let mut dist = vec![0f32; n * n];
                    for i in 0..n {
                        for j in 0..n {
                            dist[i * n + j] = (0..3).map(|k| (pts[i][k] - pts[j][k]).powi(2)).sum();
                        }
                    }
                    Sample {
                        x: pts.concat(),
                        n,
                        dist,
                    }
                })
                .collect()
        };
        let train = make(80);
        let test = make(20);
        let (rho, _) = train_eval(
            &train,
            &test,
            dim,
            &StructuralOptions {
                rank: 4,
                lr: 1e-2,
                max_epochs: 60,
                patience: 10,
                ..Default::default()
            },
        )
        .unwrap();
        assert!(rho > 0.9, "spearman {rho}");
    }
}
