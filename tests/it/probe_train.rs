//! Probe training on synthetic data: separable → ~1.0, noise → chance.

use codescope::probe::train::{train_eval, Labelled, ProbeKind, TrainOptions};
use codescope::probe::Rng;

/// `n` points in `dim` dimensions, 3 classes separated by a margin along fixed
/// directions (label = argmax of three linear scores, points near a boundary dropped).
fn separable(n: usize, dim: usize, seed: u64) -> (Vec<f32>, Vec<u32>) {
    let mut rng = Rng::new(seed);
    let w: Vec<Vec<f32>> = (0..3)
        .map(|_| (0..dim).map(|_| rng.gaussian() as f32).collect())
        .collect();
    let (mut x, mut y) = (Vec::new(), Vec::new());
    while y.len() < n {
        let p: Vec<f32> = (0..dim)
            .map(|_| rng.gaussian() as f32 * 3.0 + 5.0)
            .collect();
        let mut s: Vec<(f32, usize)> = w
            .iter()
            .enumerate()
            .map(|(k, wk)| (wk.iter().zip(&p).map(|(a, b)| a * (b - 5.0)).sum(), k))
            .collect();
        s.sort_by(|a, b| b.0.total_cmp(&a.0));
        if s[0].0 - s[1].0 < 3.0 {
            continue;
        }
        x.extend(p);
        y.push(s[0].1 as u32);
    }
    (x, y)
}

#[test]
fn linear_probe_fits_linearly_separable_data() {
    let dim = 16;
    let (x, y) = separable(2000, dim, 1);
    let (xtr, xte) = x.split_at(1500 * dim);
    let (ytr, yte) = y.split_at(1500);
    for kind in [ProbeKind::Linear, ProbeKind::Mlp] {
        let fit = train_eval(
            Labelled { x: xtr, y: ytr },
            Labelled { x: xte, y: yte },
            dim,
            3,
            &TrainOptions {
                kind,
                lr: 1e-2,
                max_epochs: 100,
                patience: 10,
                ..Default::default()
            },
        )
        .unwrap();
        assert!(fit.accuracy >= 0.99, "{kind:?}: {fit:?}");
    }
}

#[test]
fn random_features_and_labels_give_chance_accuracy() {
    let dim = 32;
    let mut rng = Rng::new(9);
    let mut data = |n: usize| -> (Vec<f32>, Vec<u32>) {
        let x = (0..n * dim).map(|_| rng.gaussian() as f32).collect();
        // Labels 0/1 with P(1) = 0.3.
        let y = (0..n).map(|_| u32::from(rng.f64() < 0.3)).collect();
        (x, y)
    };
    let (xtr, ytr) = data(1000);
    let (xte, yte) = data(600);
    let majority = yte.iter().filter(|&&v| v == 0).count() as f64 / yte.len() as f64;
    let fit = train_eval(
        Labelled { x: &xtr, y: &ytr },
        Labelled { x: &xte, y: &yte },
        dim,
        2,
        &TrainOptions::default(),
    )
    .unwrap();
    assert!(
        (fit.accuracy - majority).abs() <= 0.1,
        "accuracy {} vs majority {majority}",
        fit.accuracy
    );
}

#[test]
fn training_is_deterministic_for_a_seed() {
    let dim = 8;
    let (x, y) = separable(400, dim, 3);
    let (xtr, xte) = x.split_at(300 * dim);
    let (ytr, yte) = y.split_at(300);
    let run = || {
        train_eval(
            Labelled { x: xtr, y: ytr },
            Labelled { x: xte, y: yte },
            dim,
            3,
            &TrainOptions {
                kind: ProbeKind::Mlp,
                hidden: 16,
                ..Default::default()
            },
        )
        .unwrap()
    };
    assert_eq!(run(), run());
}
