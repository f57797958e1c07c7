//! Probe throughput: labelling the whole bundled corpus for every task (parse excluded),
//! and one linear / MLP probe fit on 4,000 examples x 384 features (MiniLM's width),
//! 3 classes, 20 epochs.
//!
//! Needs `[[bench]] name = "probe" harness = false` in Cargo.toml.

use criterion::{black_box, criterion_group, criterion_main, Criterion};

use codescope::probe::dataset::{label_snippet, parse_all, Task};
use codescope::probe::train::{train_eval, Labelled, ProbeKind, TrainOptions};
use codescope::probe::{bundled, Rng};

fn labels(c: &mut Criterion) {
    let snippets = bundled::snippets(None);
    let syn = parse_all(&snippets);
    let covered: Vec<Vec<usize>> = syn
        .iter()
        .map(|s| {
            s.as_ref()
                .map_or(Vec::new(), |s| (0..s.tokens.len()).collect())
        })
        .collect();
    c.bench_function("probe/label_bundled_all_tasks", |b| {
        b.iter(|| {
            let mut n = 0;
            for task in Task::ALL {
                for (i, s) in syn.iter().enumerate() {
                    if let Some(s) = s {
                        let mut rng = Rng::new(i as u64);
                        n += label_snippet(task, s, &covered[i], i, 40, &mut rng).len();
                    }
                }
            }
            black_box(n)
        })
    });
}

fn fit(c: &mut Criterion) {
    let (n, dim) = (4000, 384);
    let mut rng = Rng::new(1);
    let x: Vec<f32> = (0..n * dim).map(|_| rng.f64() as f32 - 0.5).collect();
    let y: Vec<u32> = (0..n)
        .map(|i| u32::from(x[i * dim] > 0.0) + u32::from(x[i * dim + 1] > 0.2))
        .collect();
    let (xtr, xte) = x.split_at(3000 * dim);
    let (ytr, yte) = y.split_at(3000);
    let mut g = c.benchmark_group("probe");
    g.sample_size(10);
    for kind in [ProbeKind::Linear, ProbeKind::Mlp] {
        g.bench_function(format!("fit_{}_4000x384_20ep", kind.name()), |b| {
            b.iter(|| {
                train_eval(
                    Labelled { x: xtr, y: ytr },
                    Labelled { x: xte, y: yte },
                    dim,
                    3,
                    &TrainOptions {
                        kind,
                        max_epochs: 20,
                        patience: 100,
                        ..Default::default()
                    },
                )
                .unwrap()
            })
        });
    }
    g.finish();
}

criterion_group!(benches, labels, fit);
criterion_main!(benches);
