//! Gemma 3 270M from the packaged Q4_K_M GGUF: model load (header, dequantize every
//! tensor to f32, build; and the full `LoadedModel::load` with the GGUF tokenizer) and a
//! 128-token forward pass with attention capture, with and without the LM head (all
//! positions' logits). Input ids: the first 128 ids of the 900-token case of
//! `tests/fixtures/gemma3_reference.json` (transformers' tokenizer, BOS first), the same
//! ids `tools/reference/bench_gemma3_torch.py` feeds torch.
//!
//!     cargo run --release -- fetch gemma3-270m
//!     RAYON_NUM_THREADS=2 cargo bench --bench gemma3

use criterion::{criterion_group, criterion_main, Criterion};

use codescope::model::{self, source, ForwardOptions, LoadedModel};

fn ids() -> Vec<u32> {
    let r: serde_json::Value =
        serde_json::from_str(include_str!("../tests/fixtures/gemma3_reference.json"))
            .expect("fixture");
    let case = r["cases"]
        .as_array()
        .expect("cases")
        .iter()
        .find(|c| c["ids"].as_array().is_some_and(|a| a.len() >= 128))
        .expect("a case of 128+ tokens");
    case["ids"].as_array().expect("ids")[..128]
        .iter()
        .map(|v| v.as_u64().expect("id") as u32)
        .collect()
}

fn bench(c: &mut Criterion) {
    if std::env::var_os("CODESCOPE_BENCH_SPIN_DEFAULT").is_none() {
        model::kernels::tame_candle_spin();
    }
    // As the binary does at start-up; CODESCOPE_BENCH_MALLOC_DEFAULT measures without.
    if std::env::var_os("CODESCOPE_BENCH_MALLOC_DEFAULT").is_none() {
        model::kernels::reuse_freed_memory();
    }
    let files = source::resolve("gemma3-270m").expect("run `codescope fetch gemma3-270m`");
    let source::Weights::Gguf(path) = files.weights.clone() else {
        panic!("gemma3-270m is not a GGUF")
    };
    let mut g = c.benchmark_group("gemma3_load");
    g.sample_size(10);
    g.bench_function("backbone", |b| {
        b.iter(|| model::load_gguf_backbone(&path).expect("load"))
    });
    g.bench_function("with_tokenizer", |b| {
        b.iter(|| LoadedModel::load(&files).expect("load"))
    });
    g.finish();

    let (m, _, _) = model::load_gguf_backbone(&path).expect("load");
    let ids = ids();
    let mut g = c.benchmark_group("gemma3_forward_128");
    g.sample_size(10);
    g.bench_function("capture", |b| {
        b.iter(|| {
            m.forward(&ids, &ForwardOptions::default())
                .expect("forward")
        })
    });
    g.bench_function("capture_lm_head", |b| {
        b.iter(|| {
            let mut sum = 0.0f32;
            m.forward_lm(&ids, &ForwardOptions::default(), &mut |_, block| {
                sum += block[0];
                Ok(())
            })
            .expect("forward");
            sum
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
