//! Forward pass with capture on the packaged MiniLM at 64/128/256/512 tokens, and model
//! load time. Mirrors `tools/reference/bench_torch.py` (same input text and ids:
//! `[CLS]` + the first N-2 text tokens of `benches/data/bench_input.py` + `[SEP]`), so the
//! two can be put side by side in the README. Threads: candle uses rayon's pool, set with
//! `RAYON_NUM_THREADS` (1 or 2 here).
//!
//! Criterion's throughput line is the achieved GFLOP/s (one element = one FLOP, an FMA
//! counting 2; the matrix products only: projections, MLP, `QK^T` and `PV`), and the
//! bench prints the instruction set in use (`CODESCOPE_ISA`, else the CPU's widest) and
//! the machine's measured single-core FMA peak at that level first, to compare with; the
//! `CODESCOPE_BENCH_RUNS` lines give each length's achieved fraction of it.
//!
//!     RAYON_NUM_THREADS=1 cargo bench --bench forward
//!     RAYON_NUM_THREADS=2 cargo bench --bench forward
//!     CODESCOPE_BENCH_RUNS=20 cargo bench --bench forward -- none  # min / median of 20 runs only
//!     CODESCOPE_BENCH_RUNS=200 CODESCOPE_BENCH_TOKENS=64 cargo bench --bench forward -- none

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};

use codescope::model::{source, ForwardOptions, LoadedModel};

fn ids_for(m: &LoadedModel, n: usize) -> Vec<u32> {
    let text = include_str!("data/bench_input.py");
    let enc = m.tokenizer.encode(text, usize::MAX).expect("tokenize");
    let body: Vec<u32> = enc
        .tokens
        .iter()
        .filter(|t| !t.special)
        .map(|t| t.id)
        .take(n - 2)
        .collect();
    assert_eq!(body.len(), n - 2, "bench input too short for {n} tokens");
    let mut ids = vec![enc.tokens[0].id];
    ids.extend(body);
    ids.push(enc.tokens.last().expect("sep").id);
    ids
}

/// FLOPs of one MiniLM forward over `n` tokens (matrix products only): per layer the
/// Q|K|V, output, intermediate and output-of-MLP projections, `QK^T` and `PV`.
fn flops(m: &LoadedModel, n: usize) -> u64 {
    // MiniLM-L6-H384's intermediate size (its config.json): 4 x hidden.
    let (h, inter) = (m.info.hidden_size as u64, 4 * m.info.hidden_size as u64);
    let n = n as u64;
    let per_layer = 2 * n * h * (3 * h + h + 2 * inter) + 2 * 2 * n * n * h;
    m.info.layers as u64 * per_layer
}

fn bench(c: &mut Criterion) {
    // The instruction set of every kernel and product (CODESCOPE_ISA, else the widest
    // the CPU runs), chosen before the first product as the binary does.
    let isa = codescope::model::kernels::isa::init().expect("CODESCOPE_ISA");
    eprintln!(
        "instruction set: {isa} (the CPU's widest: {})",
        codescope::model::kernels::isa::detected()
    );
    let peak = codescope::model::kernels::fma_peak_gflops(500);
    match peak {
        Some(p) => eprintln!("single-core FP32 FMA peak at {isa} (measured): {p:.1} GFLOP/s"),
        None => eprintln!("single-core FMA peak: not measured (no FMA at {isa})"),
    }
    if std::env::var_os("CODESCOPE_BENCH_SPIN_DEFAULT").is_none() {
        codescope::model::kernels::tame_candle_spin();
    }
    // As the binary does at start-up; CODESCOPE_BENCH_MALLOC_DEFAULT measures without.
    if std::env::var_os("CODESCOPE_BENCH_MALLOC_DEFAULT").is_none() {
        codescope::model::kernels::reuse_freed_memory();
    }
    let files = source::resolve("minilm").expect("packaged MiniLM (run `codescope fetch minilm`)");
    let mut g = c.benchmark_group("load");
    g.sample_size(10);
    g.bench_function("minilm", |b| {
        b.iter(|| LoadedModel::load(&files).expect("load"))
    });
    g.finish();

    let m = LoadedModel::load(&files).expect("load");
    // On a shared machine whose speed drifts, the fastest of many runs is the steadier
    // figure: CODESCOPE_BENCH_RUNS=N times N runs at each length outside criterion and
    // prints their minimum and median (tools/forward_vs_torch.py --stat min reads them).
    if let Some(runs) = std::env::var("CODESCOPE_BENCH_RUNS")
        .ok()
        .and_then(|v| v.parse::<usize>().ok())
    {
        let threads = rayon::current_num_threads();
        // CODESCOPE_BENCH_TOKENS=64,128 limits the lengths (for a profile of one).
        let sizes: Vec<usize> = std::env::var("CODESCOPE_BENCH_TOKENS")
            .ok()
            .map(|v| v.split(',').filter_map(|x| x.trim().parse().ok()).collect())
            .unwrap_or_else(|| vec![64, 128, 256, 512]);
        for n in sizes {
            let ids = ids_for(&m, n);
            let opts = ForwardOptions::default();
            m.forward_ids(&ids, &opts).expect("forward");
            let mut times: Vec<f64> = (0..runs.max(1))
                .map(|_| {
                    let start = std::time::Instant::now();
                    let out = m.forward_ids(&ids, &opts).expect("forward");
                    let ms = start.elapsed().as_secs_f64() * 1e3;
                    drop(out);
                    ms
                })
                .collect();
            times.sort_by(f64::total_cmp);
            // Achieved GFLOP/s of the fastest run, and its fraction of the peak at the
            // level in use times the threads.
            let gflops = flops(&m, n) as f64 / times[0] / 1e6;
            let of_peak = peak
                .map(|p| format!(", {:.0}% of peak", 100.0 * gflops / (p * threads as f64)))
                .unwrap_or_default();
            eprintln!(
                "forward_capture/attention/{n}: min {:.2} ms, median {:.2} ms over {} runs \
                 ({gflops:.1} GFLOP/s on {threads} thread(s){of_peak}, {isa})",
                times[0],
                times[times.len() / 2],
                times.len()
            );
        }
    }
    let mut g = c.benchmark_group("forward_capture");
    g.sample_size(10);
    for n in [64usize, 128, 256, 512] {
        let ids = ids_for(&m, n);
        g.throughput(Throughput::Elements(flops(&m, n)));
        g.bench_with_input(BenchmarkId::new("attention", n), &ids, |b, ids| {
            b.iter(|| {
                m.forward_ids(ids, &ForwardOptions::default())
                    .expect("forward")
            })
        });
        g.bench_with_input(BenchmarkId::new("attention+hidden", n), &ids, |b, ids| {
            let opts = ForwardOptions {
                hidden: true,
                cancel: None,
                ..Default::default()
            };
            b.iter(|| m.forward_ids(ids, &opts).expect("forward"))
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
