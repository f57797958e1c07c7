//! The encoder pass of a CodeT5-base-shaped T5 against a RoBERTa-base-shaped encoder
//! (CodeBERT's shape) on the same thread count, both in one run (issue #29's target: the
//! T5 encoder at most 1.2x RoBERTa's at 512 tokens). Random weights with each family's
//! init (`model::random`, every tensor the architecture asks for), a 1,000-entry vocabulary
//! for both (the embedding table's size does not change the forward's cost), random ids.
//! The two models' runs alternate, so a drift of the machine's speed hits both alike; the
//! minimum and median of each and their ratios are printed.
//!
//!     RAYON_NUM_THREADS=1 cargo bench --bench encdec
//!     CODESCOPE_BENCH_RUNS=10 CODESCOPE_BENCH_TOKENS=256,512 cargo bench --bench encdec

use candle_core::{DType, Device, Shape, Tensor};
use candle_nn::var_builder::SimpleBackend;
use candle_nn::VarBuilder;

use codescope::model::random::{InitRules, RandomInit};
use codescope::model::{bert, t5, Backbone, Family, ForwardOptions};

/// A checkpoint that has every tensor asked for (its values are never read: the
/// [`RandomInit`] around it draws them).
struct Everything;

impl SimpleBackend for Everything {
    fn get(
        &self,
        s: Shape,
        _name: &str,
        _h: candle_nn::Init,
        dtype: DType,
        dev: &Device,
    ) -> candle_core::Result<Tensor> {
        Tensor::zeros(s, dtype, dev)
    }
    fn get_unchecked(&self, name: &str, _: DType, _: &Device) -> candle_core::Result<Tensor> {
        candle_core::bail!("no shape for {name}")
    }
    fn contains_tensor(&self, _name: &str) -> bool {
        true
    }
}

fn vb(family: Family, cfg: &serde_json::Value) -> VarBuilder<'static> {
    let init = RandomInit {
        inner: Box::new(Everything),
        rules: InitRules::from_config(family, cfg),
        seed: 1,
    };
    VarBuilder::from_backend(Box::new(init), DType::F32, Device::Cpu)
}

fn main() {
    codescope::model::kernels::tame_candle_spin();
    codescope::model::kernels::reuse_freed_memory();
    let runs: usize = std::env::var("CODESCOPE_BENCH_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(7);
    let sizes: Vec<usize> = std::env::var("CODESCOPE_BENCH_TOKENS")
        .unwrap_or_else(|_| "512".into())
        .split(',')
        .filter_map(|s| s.trim().parse().ok())
        .collect();
    let roberta_cfg = serde_json::json!({
        "model_type": "roberta", "vocab_size": 1000, "hidden_size": 768,
        "num_hidden_layers": 12, "num_attention_heads": 12, "intermediate_size": 3072,
        "hidden_act": "gelu", "max_position_embeddings": 514, "type_vocab_size": 1,
        "layer_norm_eps": 1e-5, "pad_token_id": 1, "initializer_range": 0.02
    });
    let t5_cfg = serde_json::json!({
        "model_type": "t5", "vocab_size": 1000, "d_model": 768, "d_kv": 64, "d_ff": 3072,
        "num_layers": 12, "num_heads": 12, "relative_attention_num_buckets": 32,
        "relative_attention_max_distance": 128, "feed_forward_proj": "relu",
        "layer_norm_epsilon": 1e-6, "n_positions": 512
    });
    let roberta = bert::Bert::load(
        serde_json::from_value(roberta_cfg.clone()).expect("config"),
        bert::Flavor::Roberta,
        vb(Family::Roberta, &roberta_cfg),
    )
    .expect("RoBERTa");
    let codet5 = t5::T5::load(
        serde_json::from_value(t5_cfg.clone()).expect("config"),
        codescope::model::Stack::Encoder,
        vb(Family::T5, &t5_cfg),
    )
    .expect("T5");
    let threads = rayon::current_num_threads();
    eprintln!("threads {threads}, {runs} runs per model and length, alternating");
    let mut rng = codescope::rng::Rng::new(3);
    for n in sizes {
        let ids: Vec<u32> = (0..n).map(|_| 4 + (rng.next_u64() % 990) as u32).collect();
        let models: [(&str, &dyn Backbone); 2] =
            [("roberta-base", &roberta), ("codet5-base", &codet5)];
        let mut times = [Vec::new(), Vec::new()];
        for (_, m) in &models {
            m.forward(&ids, &ForwardOptions::default())
                .expect("forward");
        }
        for _ in 0..runs.max(1) {
            for (i, (_, m)) in models.iter().enumerate() {
                let start = std::time::Instant::now();
                let out = m
                    .forward(&ids, &ForwardOptions::default())
                    .expect("forward");
                times[i].push(start.elapsed().as_secs_f64() * 1e3);
                drop(out);
            }
        }
        let mut stats = Vec::new();
        for (i, (name, _)) in models.iter().enumerate() {
            let t = &mut times[i];
            t.sort_by(f64::total_cmp);
            let (min, med) = (t[0], t[t.len() / 2]);
            eprintln!("encoder/{name}/{n}: min {min:.1} ms, median {med:.1} ms");
            stats.push((min, med));
        }
        eprintln!(
            "encoder/{n}: codet5-base / roberta-base = {:.3}x (min), {:.3}x (median)",
            stats[1].0 / stats[0].0,
            stats[1].1 / stats[0].1
        );
    }
}
