//! DirectProbe at the study's sizes: one clustering + nearest-hull prediction, timed
//! once (a single run takes seconds to a minute, too long for criterion's repeats).
//!
//! On real features (what `codescope probe --dump DIR` wrote):
//! ```sh
//! codescope --model minilm probe --corpus stdlib --limit 212 --task dfg --dump /tmp/dp
//! CODESCOPE_DP_DUMP=/tmp/dp cargo bench --bench directprobe -- --task dfg --layer 3 \
//!     --max-train 1500 [--max-test 500] [--control] [--seed S] [--log FILE]
//! ```
//! `--seed` defaults to what `codescope probe --seed 0` uses at that layer, so the sample
//! is the CLI's. Without `CODESCOPE_DP_DUMP`: synthetic data of the same shape (1,500
//! points, 384 dimensions, 3 overlapping Gaussian classes).
//!
//! Needs `[[bench]] name = "directprobe" harness = false` in Cargo.toml.

use std::time::Instant;

use codescope::probe::directprobe::{fit_eval, DirectOptions};
use codescope::probe::train::Labelled;
use codescope::probe::{cache, Rng};

fn arg(args: &[String], name: &str) -> Option<String> {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1).cloned())
}

fn gaussian(rng: &mut Rng) -> f64 {
    let u1 = rng.f64().max(1e-12);
    let u2 = rng.f64();
    (-2.0f64 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
}

/// `(x_train, y_train, x_test, y_test, width)`.
type Data = (Vec<f32>, Vec<u32>, Vec<f32>, Vec<u32>, usize);

fn from_dump(dir: &str, task: &str, layer: usize, control: bool) -> Data {
    let read = |p: &str| -> serde_json::Value {
        let text = std::fs::read_to_string(format!("{dir}/{p}")).expect("dump file");
        serde_json::from_str(&text).expect("dump json")
    };
    let t = read(&format!("tasks/{task}.json"));
    let snippets = read("snippets.json").as_array().unwrap().len();
    let layers = t["layers"].as_u64().unwrap() as usize;
    let dim = t["dim"].as_u64().unwrap() as usize;
    let f = cache::load(
        std::path::Path::new(&format!("{dir}/features")),
        layers,
        snippets,
        dim,
    )
    .expect("features");
    let concat = t["pair_features"] == "concat";
    let rows = |ids: &serde_json::Value| -> (Vec<f32>, Vec<u32>) {
        let mut x = Vec::new();
        let mut y = Vec::new();
        for i in ids.as_array().unwrap() {
            let e = &t["examples"][i.as_u64().unwrap() as usize];
            let (s, a, b) = (
                e[0].as_u64().unwrap() as usize,
                e[1].as_u64().unwrap() as usize,
                e[2].as_i64().unwrap(),
            );
            let ha = f.vector(s, layer, a);
            if b < 0 {
                x.extend_from_slice(ha);
            } else {
                let hb = f.vector(s, layer, b as usize);
                if concat {
                    x.extend_from_slice(ha);
                    x.extend_from_slice(hb);
                } else {
                    x.extend(ha.iter().zip(hb).map(|(p, q)| p - q));
                }
            }
            y.push(e[if control { 4 } else { 3 }].as_u64().unwrap() as u32);
        }
        (x, y)
    };
    let (xtr, ytr) = rows(&t["train"]);
    let (xte, yte) = rows(&t["test"]);
    let width = xtr.len() / ytr.len().max(1);
    (xtr, ytr, xte, yte, width)
}

fn synthetic() -> Data {
    let (n, dim) = (2000, 384);
    let mut rng = Rng::new(7);
    let mut x = Vec::with_capacity(n * dim);
    let mut y = Vec::with_capacity(n);
    for i in 0..n {
        let l = (i % 3) as u32;
        for d in 0..dim {
            let c = if d == l as usize { 1.0 } else { 0.0 };
            x.push((c + gaussian(&mut rng)) as f32);
        }
        y.push(l);
    }
    let (xtr, xte) = x.split_at(1500 * dim);
    let (ytr, yte) = y.split_at(1500);
    (xtr.to_vec(), ytr.to_vec(), xte.to_vec(), yte.to_vec(), dim)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let task = arg(&args, "--task").unwrap_or_else(|| "dfg".into());
    let layer: usize = arg(&args, "--layer").map_or(3, |v| v.parse().unwrap());
    let max_train: usize = arg(&args, "--max-train").map_or(1500, |v| v.parse().unwrap());
    let max_test: usize = arg(&args, "--max-test").map_or(500, |v| v.parse().unwrap());
    let control = args.iter().any(|a| a == "--control");
    // `probe::run`'s per-layer seed for `--seed 0`.
    let seed: u64 = arg(&args, "--seed").map_or((layer as u64) << 8, |v| v.parse().unwrap());
    // `--log FILE`: the tracing log (level from CODESCOPE_LOG, e.g.
    // `codescope::probe::directprobe=trace` for every nearest-point run).
    if let Some(path) = arg(&args, "--log") {
        codescope::logging::init(Some(path.into()));
    }
    let (xtr, ytr, xte, yte, width) = match std::env::var("CODESCOPE_DP_DUMP") {
        Ok(dir) => from_dump(&dir, &task, layer, control),
        Err(_) => synthetic(),
    };
    let t0 = Instant::now();
    let f = fit_eval(
        Labelled { x: &xtr, y: &ytr },
        Labelled { x: &xte, y: &yte },
        width,
        &DirectOptions {
            max_train,
            max_test,
            seed,
        },
    );
    let secs = t0.elapsed().as_secs_f64();
    match f {
        Ok(f) => println!(
            "directprobe task={task} layer={layer} control={control} train={} test={} width={width}: \
             clusters {} accuracy {:.3} in {secs:.1} s (clustering {:.1} s, prediction {:.1} s)\n{:?}",
            f.train_points, f.test_points, f.clusters, f.accuracy, f.cluster_seconds, f.predict_seconds, f.stats
        ),
        Err(e) => println!("directprobe task={task} layer={layer}: error after {secs:.1} s: {e}"),
    }
}
