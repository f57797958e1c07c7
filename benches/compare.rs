//! `compare` against one analysis (target: a comparison costs at most 2.2x one analysis).
//! Input: the first functions of the CPython `shlex` class from the test fixtures, cut at
//! a line so that the packaged MiniLM sees about 256 subwords; both sides run the whole
//! pipeline (forward pass included):
//! - `analysis_256`: parse + `analysis::run`;
//! - `compare_256`: parse + `rename:neutral` (scope analysis, twin parse, structural
//!   check) + `analysis::run` on both twins + the comparison (`from_analyses`).
//!
//! With `CODESCOPE_BENCH_MODEL=gemma3-270m` the packaged Gemma 3 runs instead (both sides
//! with the LM head, as `compare` runs causal models).
//!
//!     cargo bench --bench compare

use std::sync::Arc;

use codescope::analysis::{self, compare, AnalyzeOptions, RunOptions};
use codescope::model::{source, ForwardOptions, LoadedModel};
use codescope::syntax::rewrite::Rewrite;
use codescope::syntax::{self, Language};
use criterion::{criterion_group, criterion_main, Criterion};

/// The longest prefix (whole lines) of `text` with at most `max` subwords.
fn cut(m: &LoadedModel, text: &str, max: usize) -> String {
    let mut out = String::new();
    let mut best = String::new();
    for line in text.lines() {
        out.push_str(line);
        out.push('\n');
        let n = m
            .trace(&out, &ForwardOptions::default())
            .map(|t| t.tokens.len())
            .unwrap_or(usize::MAX);
        if n > max {
            break;
        }
        if syntax::parse(&out, Language::Python).is_ok_and(|s| s.errors.is_empty()) {
            best = out.clone();
        }
    }
    best
}

fn bench(c: &mut Criterion) {
    let spec = std::env::var("CODESCOPE_BENCH_MODEL").unwrap_or_else(|_| "minilm".into());
    let files = source::resolve(&spec).expect("a packaged model (run `codescope fetch minilm`)");
    let m = LoadedModel::load(&files).expect("load");
    let full = include_str!("../tests/fixtures/snippets/py_shlex_class_long.py");
    let text = cut(&m, full, 256);
    let subwords = m
        .trace(&text, &ForwardOptions::default())
        .expect("trace")
        .tokens
        .len();
    eprintln!(
        "{spec}: {} lines, {subwords} subwords",
        text.lines().count()
    );
    let opts = AnalyzeOptions::default();
    let ro = RunOptions {
        lm: m.info.causal,
        ..Default::default()
    };
    let mut g = c.benchmark_group(format!("compare_{spec}"));
    g.sample_size(10);
    g.bench_function("analysis_256", |b| {
        b.iter(|| {
            let syn = Arc::new(analysis::parse(&text, Language::Python).unwrap());
            analysis::run(&m, syn, &opts, &ro).unwrap()
        })
    });
    g.bench_function("compare_256", |b| {
        b.iter(|| {
            let syn = Arc::new(analysis::parse(&text, Language::Python).unwrap());
            let twin =
                compare::make_twin(&syn, &compare::TwinSpec::Rename(Rewrite::Neutral)).unwrap();
            compare::compare(&m, syn, Arc::new(twin), &opts, &ro).unwrap()
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
