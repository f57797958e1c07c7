//! Probe training with candle: linear (softmax regression) and MLP (one hidden ReLU
//! layer) classifiers (docs/METHODS.md 4).
//!
//! Recipe (codescope's choice): features standardised with the training set's mean and
//! standard deviation; a validation split carved from the training set (seeded,
//! [`TrainOptions::val_fraction`]); AdamW on minibatches with cross-entropy; after every
//! epoch the validation loss is measured and training stops after
//! [`TrainOptions::patience`] epochs without improvement, restoring the best weights.
//! Weights are initialised from a seeded stream (uniform ±1/√fan_in, like PyTorch's
//! `nn.Linear`), so a run is deterministic for a given seed.
//!
//! Tensors stay inside this module: callers pass and get plain `Vec`s.

use candle_core::{DType, Device, Tensor, Var, D};
use candle_nn::{AdamW, Optimizer, ParamsAdamW};
use serde::Serialize;

use super::fit::{standardize, standardizer, EarlyStop};
use super::Rng;
use crate::error::{Error, Result};

/// Which classifier.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum ProbeKind {
    // The variant docs are `--probe`'s help text: plain words.
    /// Softmax regression
    Linear,
    /// A network with one hidden layer of ReLU units
    Mlp,
    /// No classifier: DirectProbe's separable clusters and nearest-hull accuracy
    #[value(name = "directprobe")]
    DirectProbe,
    /// AST-Probe: rebuild each snippet's syntax tree from a learned projection and score
    /// its constituents (the task list does not apply)
    Ast,
}

impl ProbeKind {
    pub fn name(self) -> &'static str {
        match self {
            ProbeKind::Linear => "linear",
            ProbeKind::Mlp => "mlp",
            ProbeKind::DirectProbe => "directprobe",
            ProbeKind::Ast => "ast",
        }
    }
}

/// Hyper-parameters of [`train_eval`].
#[derive(Debug, Clone, Copy)]
pub struct TrainOptions {
    pub kind: ProbeKind,
    /// Hidden units of the MLP.
    pub hidden: usize,
    pub lr: f64,
    pub weight_decay: f64,
    pub max_epochs: usize,
    pub patience: usize,
    /// Minibatch size; `0` = full batch.
    pub batch: usize,
    /// Share of the training examples held out for early stopping.
    pub val_fraction: f64,
    pub seed: u64,
    /// DirectProbe: at most this many training points per task and layer.
    pub dp_max_train: usize,
    /// DirectProbe: at most this many test points per task and layer.
    pub dp_max_test: usize,
    /// AST-Probe's options (its seed is set per layer from `seed`).
    pub ast: super::astprobe::AstOptions,
}

impl Default for TrainOptions {
    fn default() -> Self {
        TrainOptions {
            kind: ProbeKind::Linear,
            hidden: 128,
            lr: 3e-3,
            weight_decay: 1e-4,
            max_epochs: 60,
            patience: 5,
            batch: 256,
            val_fraction: 0.1,
            seed: 0,
            dp_max_train: super::directprobe::DEFAULT_MAX_TRAIN,
            dp_max_test: super::directprobe::DEFAULT_MAX_TEST,
            ast: super::astprobe::AstOptions::default(),
        }
    }
}

/// A labelled feature matrix: `x` is `[y.len(), width]`, row-major.
#[derive(Debug, Clone, Copy)]
pub struct Labelled<'a> {
    pub x: &'a [f32],
    pub y: &'a [u32],
}

/// What [`train_eval`] measured.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Fit {
    /// Accuracy on the test split.
    pub accuracy: f64,
    /// Accuracy on the training examples actually fitted (validation excluded).
    pub train_accuracy: f64,
    pub epochs: usize,
}

struct Params {
    vars: Vec<Var>,
}

impl Params {
    fn new(width: usize, classes: usize, opts: &TrainOptions, dev: &Device) -> Result<Self> {
        let mut rng = Rng::new(opts.seed ^ 0x5EED_0F91_20BE);
        let mut layer = |fan_in: usize, fan_out: usize| -> Result<[Var; 2]> {
            let s = 1.0 / (fan_in as f64).sqrt();
            let w: Vec<f32> = (0..fan_in * fan_out)
                .map(|_| ((rng.f64() * 2.0 - 1.0) * s) as f32)
                .collect();
            let b: Vec<f32> = (0..fan_out)
                .map(|_| ((rng.f64() * 2.0 - 1.0) * s) as f32)
                .collect();
            Ok([
                Var::from_tensor(&Tensor::from_vec(w, (fan_in, fan_out), dev)?)?,
                Var::from_tensor(&Tensor::from_vec(b, fan_out, dev)?)?,
            ])
        };
        let vars = if opts.kind == ProbeKind::Mlp {
            let mut v = layer(width, opts.hidden)?.to_vec();
            v.extend(layer(opts.hidden, classes)?);
            v
        } else {
            layer(width, classes)?.to_vec()
        };
        Ok(Params { vars })
    }

    fn logits(&self, x: &Tensor) -> candle_core::Result<Tensor> {
        let v = &self.vars;
        let h = x
            .matmul(v[0].as_tensor())?
            .broadcast_add(v[1].as_tensor())?;
        if v.len() == 2 {
            return Ok(h);
        }
        h.relu()?
            .matmul(v[2].as_tensor())?
            .broadcast_add(v[3].as_tensor())
    }

    fn snapshot(&self) -> candle_core::Result<Vec<Tensor>> {
        self.vars.iter().map(|v| v.as_tensor().copy()).collect()
    }

    fn restore(&self, best: &[Tensor]) -> candle_core::Result<()> {
        for (v, t) in self.vars.iter().zip(best) {
            v.set(t)?;
        }
        Ok(())
    }
}

fn accuracy(p: &Params, x: &Tensor, y: &Tensor) -> candle_core::Result<f64> {
    let n = y.dims1()?;
    if n == 0 {
        return Ok(0.0);
    }
    let pred = p.logits(x)?.argmax(D::Minus1)?;
    let hits = pred
        .eq(y)?
        .to_dtype(DType::F32)?
        .sum_all()?
        .to_scalar::<f32>()?;
    Ok(hits as f64 / n as f64)
}

/// A fitted probe outside candle: the training set's standardisation and the weights,
/// to label new feature vectors (the explorer's per-token prediction).
#[derive(Debug, Clone, PartialEq)]
pub struct Classifier {
    pub width: usize,
    pub classes: usize,
    mean: Vec<f32>,
    std: Vec<f32>,
    /// Per layer: weights `[fan_in, fan_out]` row-major, bias, `fan_out`. ReLU between
    /// layers (the MLP).
    layers: Vec<(Vec<f32>, Vec<f32>, usize)>,
}

impl Classifier {
    fn of(params: &Params, mean: Vec<f32>, std: Vec<f32>) -> Result<Self> {
        let mut layers = Vec::new();
        for pair in params.vars.chunks(2) {
            let w = pair[0].as_tensor();
            let fan_out = w.dims2()?.1;
            layers.push((
                w.flatten_all()?.to_vec1::<f32>()?,
                pair[1].as_tensor().to_vec1::<f32>()?,
                fan_out,
            ));
        }
        let classes = layers.last().map_or(0, |l| l.2);
        Ok(Classifier {
            width: mean.len(),
            classes,
            mean,
            std,
            layers,
        })
    }

    /// Logits of one feature vector (`None` when its width is not the probe's).
    pub fn logits(&self, x: &[f32]) -> Option<Vec<f32>> {
        if x.len() != self.width {
            return None;
        }
        let mut h: Vec<f32> = x
            .iter()
            .zip(&self.mean)
            .zip(&self.std)
            .map(|((v, m), s)| (v - m) / s)
            .collect();
        for (k, (w, b, fan_out)) in self.layers.iter().enumerate() {
            let mut out = b.clone();
            for (i, &hi) in h.iter().enumerate() {
                let row = &w[i * fan_out..(i + 1) * fan_out];
                for (o, &wij) in out.iter_mut().zip(row) {
                    *o += hi * wij;
                }
            }
            if k + 1 < self.layers.len() {
                out.iter_mut().for_each(|v| *v = v.max(0.0));
            }
            h = out;
        }
        Some(h)
    }

    /// The predicted label of one feature vector (first of ties, like `argmax`).
    pub fn predict(&self, x: &[f32]) -> Option<usize> {
        let l = self.logits(x)?;
        let mut best = 0;
        for (i, &v) in l.iter().enumerate() {
            if v > l[best] {
                best = i;
            }
        }
        (!l.is_empty()).then_some(best)
    }
}

/// Train a probe of `opts.kind` on `train` and return its accuracy on `test`.
/// `classes` is the number of labels (every `y < classes`). DirectProbe trains nothing:
/// it is run by [`super::directprobe::fit_eval`] (an error here).
pub fn train_eval(
    train: Labelled,
    test: Labelled,
    width: usize,
    classes: usize,
    opts: &TrainOptions,
) -> Result<Fit> {
    train_eval_keep(train, test, width, classes, opts).map(|(f, _)| f)
}

/// [`train_eval`] that also returns the fitted probe.
pub fn train_eval_keep(
    train: Labelled,
    test: Labelled,
    width: usize,
    classes: usize,
    opts: &TrainOptions,
) -> Result<(Fit, Classifier)> {
    if train.y.is_empty() || width == 0 || classes == 0 {
        return Err(Error::Input {
            name: "probe".into(),
            reason: "no training examples".into(),
        });
    }
    if matches!(opts.kind, ProbeKind::DirectProbe | ProbeKind::Ast) {
        return Err(Error::Input {
            name: "probe".into(),
            reason: format!(
                "{} is not a token classifier (use probe::{})",
                opts.kind.name(),
                if opts.kind == ProbeKind::Ast {
                    "astprobe"
                } else {
                    "directprobe"
                }
            ),
        });
    }
    let dev = Device::Cpu;
    let (mean, std) = standardizer(train.x, width);
    // Carve the validation split.
    let mut rng = Rng::new(opts.seed ^ 0xBA1_1DA7E);
    let mut idx: Vec<usize> = (0..train.y.len()).collect();
    rng.shuffle(&mut idx);
    let n_val = if train.y.len() >= 10 {
        ((train.y.len() as f64 * opts.val_fraction).round() as usize).max(1)
    } else {
        0
    };
    let (val_idx, fit_idx) = idx.split_at(n_val);
    let rows = |ids: &[usize]| -> (Vec<f32>, Vec<u32>) {
        let mut x = Vec::with_capacity(ids.len() * width);
        let mut y = Vec::with_capacity(ids.len());
        for &i in ids {
            x.extend_from_slice(&train.x[i * width..(i + 1) * width]);
            y.push(train.y[i]);
        }
        (x, y)
    };
    let to_t = |x: Vec<f32>, y: Vec<u32>| -> Result<(Tensor, Tensor)> {
        let n = y.len();
        let x = standardize(&x, width, &mean, &std);
        Ok((
            Tensor::from_vec(x, (n, width), &dev)?,
            Tensor::from_vec(y, n, &dev)?,
        ))
    };
    let (fx, fy) = rows(fit_idx);
    let (xf, yf) = to_t(fx, fy)?;
    let (vx, vy) = rows(val_idx);
    let (xv, yv) = to_t(vx, vy)?;
    let (xt, yt) = to_t(test.x.to_vec(), test.y.to_vec())?;

    let params = Params::new(width, classes, opts, &dev)?;
    let mut opt = AdamW::new(
        params.vars.clone(),
        ParamsAdamW {
            lr: opts.lr,
            weight_decay: opts.weight_decay,
            ..Default::default()
        },
    )?;
    let n_fit = fit_idx.len();
    let batch = if opts.batch == 0 { n_fit } else { opts.batch };
    let mut order: Vec<u32> = (0..n_fit as u32).collect();
    let mut stop = EarlyStop::new(opts.patience, params.snapshot()?);
    let mut epochs = 0;
    for epoch in 0..opts.max_epochs {
        epochs = epoch + 1;
        rng.shuffle(&mut order);
        for chunk in order.chunks(batch.max(1)) {
            let ids = Tensor::from_slice(chunk, chunk.len(), &dev)?;
            let xb = xf.index_select(&ids, 0)?;
            let yb = yf.index_select(&ids, 0)?;
            let loss = candle_nn::loss::cross_entropy(&params.logits(&xb)?, &yb)?;
            opt.backward_step(&loss)?;
        }
        if n_val == 0 {
            continue;
        }
        let vloss =
            candle_nn::loss::cross_entropy(&params.logits(&xv)?, &yv)?.to_scalar::<f32>()? as f64;
        if stop.stop_after(vloss, || Ok(params.snapshot()?))? {
            break;
        }
    }
    if n_val > 0 {
        params.restore(stop.best())?;
    }
    let fit = Fit {
        accuracy: accuracy(&params, &xt, &yt)?,
        train_accuracy: accuracy(&params, &xf, &yf)?,
        epochs,
    };
    Ok((fit, Classifier::of(&params, mean, std)?))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The plain-Rust classifier labels the test set exactly as candle's argmax did.
    #[test]
    fn classifier_reproduces_the_fitted_accuracy() {
        for kind in [ProbeKind::Linear, ProbeKind::Mlp] {
            let mut rng = Rng::new(3);
            let (width, n) = (6, 300);
            let mut x = Vec::new();
            let mut y = Vec::new();
            for _ in 0..n {
                let row: Vec<f32> = (0..width).map(|_| rng.f64() as f32 * 2.0 - 1.0).collect();
                // Three classes from two noisy directions.
                let s = row[0] + 0.5 * row[1] + 0.3 * (rng.f64() as f32 - 0.5);
                y.push(if s < -0.4 {
                    0
                } else if s < 0.4 {
                    1
                } else {
                    2
                });
                x.extend(row);
            }
            let (tr, te) = (200 * width, 200);
            let opts = TrainOptions {
                kind,
                hidden: 8,
                lr: 0.05,
                max_epochs: 200,
                batch: 32,
                ..TrainOptions::default()
            };
            let (fit, clf) = train_eval_keep(
                Labelled {
                    x: &x[..tr],
                    y: &y[..te],
                },
                Labelled {
                    x: &x[tr..],
                    y: &y[te..],
                },
                width,
                3,
                &opts,
            )
            .unwrap();
            let hits = x[tr..]
                .chunks(width)
                .zip(&y[te..])
                .filter(|(row, &l)| clf.predict(row) == Some(l as usize))
                .count();
            assert_eq!(hits as f64 / 100.0, fit.accuracy, "{kind:?}");
            assert!(fit.accuracy > 0.7, "{kind:?} {}", fit.accuracy);
            assert_eq!(clf.classes, 3);
            assert_eq!(clf.predict(&[0.0; 5]), None, "wrong width");
        }
    }
}
