//! `--random-weights SEED`: the random-weight baseline follows each family's transformers
//! init rules (per parameter group, on the tiny fixtures' real tensor names and shapes), is
//! deterministic per seed, and shows through the CLI.

use std::path::{Path, PathBuf};
use std::process::Command;

use codescope::model::random::{generate, InitRules};
use codescope::model::{LoadedModel, ModelFiles, MODEL_TYPES};

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

/// The checkpoint's tensor names and shapes.
fn tensors(dir: &Path) -> Vec<(String, Vec<usize>)> {
    let st = dir.join("model.safetensors");
    let mut v: Vec<(String, Vec<usize>)> = if st.exists() {
        candle_core::safetensors::load(&st, &candle_core::Device::Cpu)
            .unwrap()
            .into_iter()
            .map(|(n, t)| (n, t.dims().to_vec()))
            .collect()
    } else {
        candle_core::pickle::read_all(dir.join("pytorch_model.bin"))
            .unwrap()
            .into_iter()
            .map(|(n, t)| (n, t.dims().to_vec()))
            .collect()
    };
    v.sort();
    v
}

fn config(dir: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(dir.join("config.json")).unwrap()).unwrap()
}

/// The parameter group of a tensor, by its name (the test's own reading of the names,
/// independent of `model::random`).
fn group(name: &str, rank: usize) -> &'static str {
    let ends = |s: &[&str]| s.iter().any(|e| name.ends_with(e));
    if ends(&[".bias", ".beta"]) {
        "biases"
    } else if rank == 1 {
        "norms"
    } else if ends(&[
        "c_proj.weight",
        "o_proj.weight",
        "out_proj.weight",
        "down_proj.weight",
        "fc_out.weight",
        "output.dense.weight",
    ]) {
        "output projections"
    } else if ends(&[
        "q_proj.weight",
        "k_proj.weight",
        "v_proj.weight",
        "c_attn.weight",
        "qkv_proj.weight",
        "query.weight",
        "key.weight",
        "value.weight",
    ]) {
        "attention projections"
    } else if ends(&[
        "gate_proj.weight",
        "up_proj.weight",
        "gate_up_proj.weight",
        "c_fc.weight",
        "fc_in.weight",
        "intermediate.dense.weight",
    ]) {
        "MLP projections"
    } else if name.contains("lm_head.") || name.contains("pooler.") {
        // Heads the checkpoint has beside the backbone (RoBERTa's MLM head): Linear.
        "heads"
    } else if name.contains("embed") || ends(&["wte.weight", "wpe.weight", "lm_head.weight"]) {
        "embeddings"
    } else {
        panic!("no group for {name}")
    }
}

/// transformers' std of a group of matrices after `Model(config)`: normal(0,
/// initializer_range), GPT-2's and GPTBigCode's `c_proj` divided by sqrt(2 * n_layer).
fn expected_std(model_type: &str, cfg: &serde_json::Value, group: &str) -> f64 {
    let r = cfg["initializer_range"].as_f64().unwrap();
    match (model_type, group) {
        ("gpt2" | "gpt_bigcode", "output projections") => {
            r / (2.0 * cfg["n_layer"].as_f64().unwrap()).sqrt()
        }
        _ => r,
    }
}

#[test]
fn random_inits_match_transformers_init_statistics_per_parameter_group() {
    for name in [
        "tiny_roberta",
        "tiny_gpt2",
        "tiny_llama",
        "tiny_qwen2",
        "tiny_gemma3",
        "tiny_codegen",
        "tiny_bigcode_mha",
        "tiny_starcoder",
    ]
    .into_iter()
    .chain(crate::decoder_common::FAMILIES)
    {
        let dir = fixture(name);
        let cfg = config(&dir);
        let model_type = cfg["model_type"].as_str().unwrap().to_string();
        let family = MODEL_TYPES
            .iter()
            .find(|(t, _)| *t == model_type)
            .unwrap()
            .1;
        let rules = InitRules::from_config(family, &cfg);
        // Gemma 1, 2 and 3 keep w of (1 + w).
        let gemma = model_type.starts_with("gemma");
        let mut groups: std::collections::BTreeMap<&str, Vec<f64>> = Default::default();
        for (t, dims) in tensors(&dir) {
            let v = generate(&rules, 7, &t, &dims);
            let g = group(&t, dims.len());
            match g {
                "biases" => assert!(v.iter().all(|&x| x == 0.0), "{name} {t}: bias not 0"),
                // Gemma keeps w of (1 + w): the effective scale is 1 + stored.
                "norms" => {
                    let eff = if gemma { 1.0 } else { 0.0 };
                    assert!(v.iter().all(|&x| x + eff == 1.0), "{name} {t}: norm not 1")
                }
                _ => {}
            }
            // Embeddings built with padding_idx have that row zero, the others none.
            let pad = cfg["pad_token_id"].as_u64().map(|p| p as usize);
            let padded = match model_type.as_str() {
                "roberta" => {
                    t.ends_with("word_embeddings.weight")
                        || t.ends_with("position_embeddings.weight")
                }
                "bert" => t.ends_with("word_embeddings.weight"),
                "llama" | "qwen2" | "gemma3_text" | "qwen3" | "mistral" | "starcoder2"
                | "gemma" | "gemma2" | "granite" | "phi3" => t.ends_with("embed_tokens.weight"),
                _ => false,
            };
            if dims.len() == 2 {
                let cols = dims[1];
                let row0 = |p: usize| v[p * cols..(p + 1) * cols].iter().all(|&x| x == 0.0);
                match (padded, pad) {
                    (true, Some(p)) => assert!(row0(p), "{name} {t}: padding row {p} not zero"),
                    _ => assert!(!(0..dims[0]).any(row0), "{name} {t}: a zero row"),
                }
            }
            groups
                .entry(g)
                .or_default()
                .extend(v.iter().map(|&x| x as f64));
        }
        for (g, v) in &groups {
            if matches!(*g, "biases" | "norms") {
                continue;
            }
            let n = v.len() as f64;
            let mean = v.iter().sum::<f64>() / n;
            let sd = (v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n).sqrt();
            let want = expected_std(&model_type, &cfg, g);
            if v.len() >= 1000 {
                assert!(
                    (sd / want - 1.0).abs() < 0.10,
                    "{name} {g}: std {sd}, transformers' init gives {want}"
                );
                assert!(mean.abs() < 0.2 * want, "{name} {g}: mean {mean}");
            }
        }
        for g in [
            "embeddings",
            "attention projections",
            "MLP projections",
            "output projections",
            "norms",
        ] {
            assert!(groups.contains_key(g), "{name}: no {g}");
        }
    }
}

fn load(name: &str, seed: Option<u64>) -> LoadedModel {
    let files = ModelFiles::from_dir(&fixture(name), name.into()).unwrap();
    LoadedModel::load_with(&files, seed).unwrap()
}

fn bytes(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

#[test]
fn random_weights_are_deterministic_per_seed() {
    let ids = [1u32, 5, 9, 2, 7, 3];
    for name in ["tiny_gpt2", "tiny_llama", "tiny_gemma3"] {
        let a = load(name, Some(7));
        assert_eq!(a.info.random_weights, Some(7));
        let la = bytes(&a.logits_ids(&ids).unwrap());
        let lb = bytes(&load(name, Some(7)).logits_ids(&ids).unwrap());
        assert_eq!(la, lb, "{name}: two loads with seed 7 differ");
        let l8 = bytes(&load(name, Some(8)).logits_ids(&ids).unwrap());
        assert_ne!(la, l8, "{name}: seeds 7 and 8 give the same model");
        let trained = load(name, None);
        assert_eq!(trained.info.random_weights, None);
        assert_ne!(
            la,
            bytes(&trained.logits_ids(&ids).unwrap()),
            "{name}: seed 7 is the trained model"
        );
    }
    // An encoder too: its attention.
    let att = |m: &LoadedModel| {
        let c = m
            .forward_ids(&[0, 5, 9, 7, 2], &Default::default())
            .unwrap();
        bytes(&c.attention.layers.concat())
    };
    let r = att(&load("tiny_roberta", Some(7)));
    assert_eq!(r, att(&load("tiny_roberta", Some(7))));
    assert_ne!(r, att(&load("tiny_roberta", Some(8))));
    assert_ne!(r, att(&load("tiny_roberta", None)));
}

fn analyze(env: &Path, model: &Path, seed: Option<u64>) -> serde_json::Value {
    let file = env.join("snippet.py");
    std::fs::write(
        &file,
        "def add(a, b):\n    total = a + b\n    return total\n",
    )
    .unwrap();
    let mut c = Command::new(env!("CARGO_BIN_EXE_codescope"));
    c.env("CODESCOPE_LOG_FILE", env.join("log.txt"))
        .env("CODESCOPE_CACHE", env.join("cache"))
        .args(["analyze", "--json", "--model"])
        .arg(model)
        .arg(&file);
    if let Some(s) = seed {
        c.args(["--random-weights", &s.to_string()]);
    }
    let o = c.output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    serde_json::from_slice(&o.stdout).unwrap()
}

#[test]
fn analyze_with_random_weights_reports_the_seed_and_differs_from_the_trained_run() {
    let env = tempfile::tempdir().unwrap();
    let model = fixture("tiny_gpt2");
    let a = analyze(env.path(), &model, Some(7));
    let b = analyze(env.path(), &model, Some(7));
    let trained = analyze(env.path(), &model, None);
    assert_eq!(a["model"]["random_weights"], 7);
    assert_eq!(trained["model"]["random_weights"], serde_json::Value::Null);
    assert_eq!(a, b, "two runs with seed 7 differ");
    for key in ["relations", "category_attention"] {
        assert!(a.get(key).is_some(), "no {key}");
        assert_ne!(a[key], trained[key], "{key}: random and trained runs agree");
    }
    assert_eq!(
        a["tokens"], trained["tokens"],
        "the tokenizer is the model's"
    );
    // The text summary says so.
    let o = Command::new(env!("CARGO_BIN_EXE_codescope"))
        .env("CODESCOPE_LOG_FILE", env.path().join("log.txt"))
        .env("CODESCOPE_CACHE", env.path().join("cache"))
        .args(["analyze", "--random-weights", "7", "--model"])
        .arg(&model)
        .arg(env.path().join("snippet.py"))
        .output()
        .unwrap();
    assert!(o.status.success());
    assert!(String::from_utf8_lossy(&o.stdout).contains("random weights (seed 7)"));
}

#[test]
fn the_explorer_key_r_toggles_random_weights_and_the_status_bar_says_so() {
    use crate::tui_common::*;
    use codescope::tui::msg::{Effect, Msg, WorkerMsg};
    use crossterm::event::KeyCode;
    let mut app = ready("def f(x):\n    return x + 1\n", 120, 40);
    assert!(!screen(&app).contains("random weights"));
    let fx = app.update(key(KeyCode::Char('R')));
    assert!(
        matches!(&fx[0], Effect::LoadModel(Some(s), Some(0), _) if s == "tiny"),
        "R reloads the model with random weights"
    );
    assert!(app
        .status
        .busy
        .as_deref()
        .unwrap_or("")
        .contains("random weights (seed 0)"));
    // The worker answers with the random model: the status bar names the seed.
    let random = load("tiny_gpt2", Some(0));
    let fx = app.update(Msg::Worker(WorkerMsg::ModelLoaded {
        info: random.info.clone(),
        label: "tiny".into(),
        notice: None,
    }));
    serve_with(&mut app, fx, &random, "tiny");
    assert!(
        screen(&app).contains("random weights (seed 0)"),
        "{}",
        screen(&app)
    );
    // R again: back to the trained weights.
    let fx = app.update(key(KeyCode::Char('R')));
    assert!(matches!(&fx[0], Effect::LoadModel(Some(s), None, _) if s == "tiny"));
}

#[test]
fn reproduce_records_the_seed_and_never_resumes_a_trained_run_with_random_weights() {
    use crate::cli_sources::{fails, ok, Env};
    let env = Env::new();
    let model = fixture("tiny_gpt2").display().to_string();
    let data = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("assets/samples")
        .display()
        .to_string();
    let out = env.root.join("random");
    let run = |seed: Option<&str>| {
        let mut c = env.cmd();
        c.args([
            "--model",
            &model,
            "reproduce",
            "--limit",
            "2",
            "--data",
            &data,
            "--out",
        ])
        .arg(&out);
        if let Some(s) = seed {
            c.args(["--random-weights", s]);
        }
        c.output().unwrap()
    };
    ok(&run(Some("7")));
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    assert_eq!(summary["random_weights"], 7);
    // The same --out with the trained weights, or another seed, is another run.
    for seed in [None, Some("8")] {
        let line = fails(&run(seed));
        assert!(
            line.contains("holds another run (--random-weights: 7 in its checkpoint"),
            "{line}"
        );
    }
    ok(&run(Some("7")));
}

#[test]
fn a_gguf_model_takes_random_weights_too() {
    // GGUF files carry no initializer_range: 0.02 (model::random).
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(
        fixture("tiny_gguf/qwen2.gguf"),
        dir.path().join("qwen2.gguf"),
    )
    .unwrap();
    std::fs::copy(
        fixture("tiny_qwen2/tokenizer.json"),
        dir.path().join("tokenizer.json"),
    )
    .unwrap();
    let files = ModelFiles::from_path(&dir.path().join("qwen2.gguf"), "m".into()).unwrap();
    let ids = [1u32, 5, 9, 2];
    let logits = |seed| {
        let m = LoadedModel::load_with(&files, seed).unwrap();
        assert_eq!(m.info.random_weights, seed);
        bytes(&m.logits_ids(&ids).unwrap())
    };
    let r = logits(Some(7));
    assert_eq!(r, logits(Some(7)));
    assert_ne!(r, logits(Some(8)));
    assert_ne!(r, logits(None));
}

/// `reproduce --random-baseline SEED`: the trained run in OUT, the random-weight run in
/// OUT/random-SEED, and both side by side in the printed table and OUT/baseline.csv, whose
/// F1 columns are each run's own best-head tables.
#[test]
fn reproduce_puts_trained_and_random_weights_side_by_side() {
    use crate::cli_sources::{fails, ok};
    // The packaged MiniLM (a tiny random model's attention is too flat to score above
    // zero at the study's thresholds, trained or not).
    let root = tempfile::tempdir().unwrap();
    let data = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("assets/samples/python")
        .display()
        .to_string();
    let out = root.path().join("side");
    let cmd = |extra: &[&str]| {
        let mut c = std::process::Command::new(crate::cli_sources::BIN);
        c.env("HF_HUB_OFFLINE", "1")
            .env("CODESCOPE_LOG_FILE", root.path().join("log"))
            .args(["--model", "minilm"])
            .args(extra)
            .args(["reproduce", "--limit", "2", "--data", &data, "--out"])
            .arg(&out)
            .args(["--random-baseline", "5"]);
        c.output().unwrap()
    };
    let text = ok(&cmd(&[]));
    assert!(
        text.contains("trained against random weights (seed 5)"),
        "{text}"
    );
    assert!(text.contains("finding, trained / random"), "{text}");
    // MiniLM's random weights attend flatly: nothing passes t = 0.05, and the reading
    // says so rather than claiming the pattern is absent.
    assert!(
        text.contains("  random:  no head's attention reaches the threshold"),
        "{text}"
    );
    let json = |p: &Path| -> serde_json::Value {
        serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
    };
    assert_eq!(
        json(&out.join("summary.json"))["random_weights"],
        serde_json::Value::Null
    );
    assert_eq!(
        json(&out.join("random-5/summary.json"))["random_weights"],
        5
    );
    // best_heads.csv: graph,threshold,layer,best_head,precision,recall,f1,ged_per_node
    let best = |p: &Path| -> Vec<(String, String, String, String)> {
        std::fs::read_to_string(p)
            .unwrap()
            .lines()
            .skip(1)
            .map(|l| {
                let c: Vec<&str> = l.split(',').collect();
                (
                    c[0].into(),
                    c[1].into(),
                    c[2].into(),
                    format!("{},{}", c[3], c[6]),
                )
            })
            .collect()
    };
    let (trained, random) = (
        best(&out.join("best_heads.csv")),
        best(&out.join("random-5/best_heads.csv")),
    );
    let side = std::fs::read_to_string(out.join("baseline.csv")).unwrap();
    let mut lines = side.lines();
    assert_eq!(
        lines.next(),
        Some("graph,threshold,layer,trained_best_head,trained_f1,random_best_head,random_f1,difference")
    );
    let rows: Vec<&str> = lines.collect();
    assert_eq!(rows.len(), trained.len());
    let mut differ = 0;
    for ((row, a), b) in rows.iter().zip(&trained).zip(&random) {
        let c: Vec<&str> = row.split(',').collect();
        assert_eq!(
            (c[0], c[1], c[2]),
            (a.0.as_str(), a.1.as_str(), a.2.as_str()),
            "{row}"
        );
        assert_eq!(format!("{},{}", c[3], c[4]), a.3, "{row}");
        assert_eq!(format!("{},{}", c[5], c[6]), b.3, "{row}");
        let d: f64 = c[7].parse().unwrap();
        let (fa, fb): (f64, f64) = (c[4].parse().unwrap(), c[6].parse().unwrap());
        assert!((d - (fa - fb)).abs() < 2e-6, "{row}");
        differ += (fa != fb) as usize;
    }
    assert!(
        differ > 0,
        "trained and random weights scored the same everywhere"
    );
    // Rerun: both runs resume from their checkpoints and compare the same.
    let side_by_side = |t: &str| t[t.find("trained against random").unwrap()..].to_string();
    assert_eq!(side_by_side(&ok(&cmd(&[]))), side_by_side(&text));
    // With --random-weights there is nothing to compare.
    let line = fails(&cmd(&["--random-weights", "1"]));
    assert!(line.contains("drop --random-weights"), "{line}");
}

/// `probe --random-baseline SEED`: the same probes on trained and seeded random weights,
/// matched row by row; the trained side is exactly a plain run's, the random side exactly
/// a `--random-weights SEED` run's, in the table, the JSON and the CSV.
#[test]
fn probe_puts_trained_and_random_weights_side_by_side() {
    use crate::cli_sources::{fails, ok, Env};
    let env = Env::new();
    let model = fixture("tiny_roberta").display().to_string();
    let run = |pre: &[&str], post: &[&str]| {
        let mut c = env.cmd();
        c.args(["--model", &model])
            .args(pre)
            .args([
                "probe",
                "--limit",
                "8",
                "--task",
                "dfg",
                "--task",
                "depth",
                "--layer",
                "0",
                "--layer",
                "2",
                "--structural",
                "--no-cache",
            ])
            .args(post);
        c.output().unwrap()
    };
    let json =
        |o: &std::process::Output| -> serde_json::Value { serde_json::from_str(&ok(o)).unwrap() };
    let plain = json(&run(&[], &["--json"]));
    let random = json(&run(&["--random-weights", "4"], &["--json"]));
    let both = json(&run(&[], &["--json", "--random-baseline", "4"]));
    assert_eq!(both["trained"], plain);
    assert_eq!(both["random"], random);
    assert_eq!(both["random"]["model"]["random_weights"], 4);
    let rows = both["side_by_side"].as_array().unwrap();
    // dfg and depth at layers 0 and 2, the structural probe's spearman and uuas at both.
    assert_eq!(rows.len(), 8, "{rows:?}");
    let results = |r: &serde_json::Value| r["results"].as_array().unwrap().clone();
    for (row, (a, b)) in rows
        .iter()
        .zip(results(&plain).iter().zip(results(&random).iter()))
    {
        assert_eq!((&row["task"], &row["layer"]), (&a["task"], &a["layer"]));
        assert_eq!(row["metric"], "accuracy");
        assert_eq!(row["trained"], a["accuracy"]);
        assert_eq!(row["random"], b["accuracy"]);
        assert_eq!(row["trained_control"], a["control_accuracy"]);
        assert_eq!(row["random_control"], b["control_accuracy"]);
    }
    let structural: Vec<_> = rows.iter().filter(|r| r["task"] == "structural").collect();
    assert_eq!(structural.len(), 4);
    assert_eq!(structural[0]["trained"], plain["structural"][0]["spearman"]);
    // Per metric, layer by layer: spearman at layers 0 and 2, then uuas.
    assert_eq!(structural[1]["trained"], plain["structural"][1]["spearman"]);
    assert_eq!(structural[2]["random"], random["structural"][0]["uuas"]);
    assert_eq!(structural[3]["metric"], "uuas");
    assert!(structural[0]["trained_control"].is_null());
    // The table: the plain report, then the side by side.
    let text = ok(&run(&[], &["--random-baseline", "4"]));
    assert!(
        text.contains("trained against random weights (seed 4)"),
        "{text}"
    );
    assert!(text.contains("dfg (linear probe, accuracy)"), "{text}");
    assert!(
        text.contains("structural (structural probe, uuas)"),
        "{text}"
    );
    let csv = ok(&run(&[], &["--csv", "--random-baseline", "4"]));
    let mut lines = csv.lines();
    assert_eq!(
        lines.next(),
        Some("task,probe,metric,layer,trained,random,difference,trained_control,random_control")
    );
    assert_eq!(lines.count(), 8);
    let line = fails(&run(
        &["--random-weights", "1"],
        &["--random-baseline", "4"],
    ));
    assert!(line.contains("drop --random-weights"), "{line}");
}
