//! Encoders with a masked-LM head against transformers' `BertForMaskedLM` (tiny_bert:
//! `cls.predictions.*`, decoder tied to the word embeddings) and `RobertaForMaskedLM`
//! (tiny_roberta: `lm_head.*`), from `tools/reference/mlm_reference.py`:
//! - the head's logits on the unmasked input within 1e-3;
//! - `codescope knockout --json` (through the binary) reports `measure: pll_bits` and
//!   each code token's `bits` is transformers' whole-token pseudo-log-likelihood (all its
//!   subwords masked at once, their bits summed) within 1e-3;
//! - `codescope ablate --json`: each head's mean Δ PLL bits on identifiers and on
//!   syntactic tokens within 1e-3 of transformers with that head's output zeroed.
//! - `knockout --data` and `ablate --data` on a one-snippet corpus give the file runs'
//!   numbers in `pll_bits`.
//!
//! And the packaged MiniLM, which has no masked-LM head, keeps `1 - cos`.

use codescope::model::{self, LoadedModel};
use serde_json::Value;

use crate::cli_sources::{fixture, ok, Env};

fn reference() -> Value {
    let p =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/mlm_reference.json");
    serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
}

fn json(env: &Env, model: &str, args: &[&str]) -> Value {
    let f = env.root.join("snippet.py");
    std::fs::write(&f, reference()["text"].as_str().unwrap()).unwrap();
    let o = env
        .cmd()
        .args(["--model", model])
        .args(args)
        .arg(&f)
        .arg("--json")
        .output()
        .unwrap();
    serde_json::from_str(&ok(&o)).unwrap()
}

const CASES: [&str; 2] = ["tiny_bert", "tiny_roberta"];

#[test]
fn the_masked_lm_heads_are_transformers() {
    let r = reference();
    for name in CASES {
        let c = &r["cases"][name];
        let m = LoadedModel::load(&model::source::resolve(&fixture(name)).unwrap()).unwrap();
        let enc = m
            .encode(r["text"].as_str().unwrap(), m.info.window)
            .unwrap();
        let want: Vec<u32> = c["ids"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_u64().unwrap() as u32)
            .collect();
        assert_eq!(enc.ids, want, "{name}");
        assert_eq!(m.masked_lm(), Some(c["mask"].as_u64().unwrap() as u32));
        let got = m.logits_ids(&enc.ids).unwrap();
        let want: Vec<f64> = c["logits"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|row| row.as_array().unwrap().iter().map(|v| v.as_f64().unwrap()))
            .collect();
        assert_eq!(got.len(), want.len(), "{name}");
        let worst = got
            .iter()
            .zip(&want)
            .map(|(&a, &b)| (f64::from(a) - b).abs())
            .fold(0.0, f64::max);
        assert!(worst < 1e-3, "{name}: logits differ by {worst}");
    }
}

#[test]
fn knockout_reports_transformers_pseudo_log_likelihood() {
    let r = reference();
    let env = Env::new();
    for name in CASES {
        let c = &r["cases"][name];
        let v = json(
            &env,
            &fixture(name),
            &["knockout", "--edges", "syn-id", "--control", "2"],
        );
        assert_eq!(v["measure"], "pll_bits", "{name}");
        let got = v["tokens"].as_array().unwrap();
        let want = c["tokens"].as_array().unwrap();
        assert_eq!(got.len(), want.len(), "{name}");
        for (g, w) in got.iter().zip(want) {
            assert_eq!(g["text"], w["text"], "{name}");
            assert_eq!(g["span"], w["span"], "{name}");
            assert_eq!(g["coarse"], w["coarse"], "{name}: {}", w["text"]);
            let (a, b) = (g["bits"].as_f64().unwrap(), w["pll"].as_f64().unwrap());
            assert!((a - b).abs() < 1e-3, "{name} {}: {a} vs {b}", w["text"]);
            // The knockout changes the PLL and the delta is the difference.
            let k = g["bits_knocked"].as_f64().unwrap();
            let d = g["delta_bits"].as_f64().unwrap();
            assert!((k - a - d).abs() < 1e-4, "{name}: {g}");
        }
        assert!(
            got.iter()
                .any(|g| g["delta_bits"].as_f64().unwrap().abs() > 1e-4),
            "{name}: the knockout changed nothing"
        );
        let s = ok(&env
            .cmd()
            .args(["--model", &fixture(name), "knockout", "--edges", "syn-id"])
            .arg(env.root.join("snippet.py"))
            .output()
            .unwrap());
        assert!(s.contains("Δ PLL bits"), "{s}");
    }
}

#[test]
fn ablate_reports_transformers_pll_change_per_head() {
    let r = reference();
    let env = Env::new();
    for name in CASES {
        let v = json(&env, &fixture(name), &["ablate"]);
        assert_eq!(v["measure"], "pll_bits", "{name}");
        let got = v["heads"].as_array().unwrap();
        let want = r["cases"][name]["ablation"].as_array().unwrap();
        assert_eq!(got.len(), want.len(), "{name}");
        for (g, w) in got.iter().zip(want) {
            assert_eq!((&g["layer"], &g["head"]), (&w["layer"], &w["head"]));
            for class in ["identifier", "syntactic"] {
                let (a, b) = (g[class].as_f64().unwrap(), w[class].as_f64().unwrap());
                assert!((a - b).abs() < 1e-3, "{name} {g}: {class} {a} vs {b}");
            }
        }
    }
}

/// The packaged MiniLM ships no masked-LM head: its effects stay `1 - cos`.
#[test]
fn minilm_without_a_head_keeps_one_minus_cos() {
    let env = Env::new();
    let f = env.root.join("snippet.py");
    std::fs::write(&f, reference()["text"].as_str().unwrap()).unwrap();
    let o = std::process::Command::new(crate::cli_sources::BIN)
        .env("HF_HUB_OFFLINE", "1")
        .env("CODESCOPE_LOG_FILE", env.root.join("log.txt"))
        .args([
            "--model",
            "minilm",
            "knockout",
            "--edges",
            "syn-id",
            "--control",
            "0",
            "--json",
        ])
        .arg(&f)
        .output()
        .unwrap();
    let v: Value = serde_json::from_str(&ok(&o)).unwrap();
    assert_eq!(v["measure"], "one_minus_cos");
    assert!(v["tokens"][0].get("bits").is_none());
}

/// The corpus runs measure the same: a one-snippet corpus's `knockout --data` row and
/// `ablate --data`'s per-head means are the file runs' (on the snippet as the corpus
/// loader keeps it, without its trailing newline).
#[test]
fn corpus_runs_measure_pll_bits_too() {
    let r = reference();
    let env = Env::new();
    let dir = env.root.join("corpus");
    std::fs::create_dir_all(&dir).unwrap();
    let code = r["text"].as_str().unwrap().trim_end();
    std::fs::write(dir.join("a.py"), code).unwrap();
    let data = dir.display().to_string();
    let file = |args: &[&str]| -> Value {
        let o = env
            .cmd()
            .args(["--model", &fixture("tiny_roberta")])
            .args(args)
            .arg(dir.join("a.py"))
            .arg("--json")
            .output()
            .unwrap();
        serde_json::from_str(&ok(&o)).unwrap()
    };
    let corpus = |args: &[&str]| -> Value {
        let o = env
            .cmd()
            .args(["--model", &fixture("tiny_roberta")])
            .args(args)
            .args(["--json", "--data", &data])
            .output()
            .unwrap();
        serde_json::from_str(&ok(&o)).unwrap()
    };
    let ko = ["knockout", "--edges", "syn-id", "--control", "2"];
    let (one, v) = (file(&ko), corpus(&ko));
    assert_eq!(v["measure"], "pll_bits");
    let (k, s) = (&v["rows"][0], &one["summary"][0]);
    assert_eq!(k["class"], "identifier");
    let close = |a: &Value, b: &Value| (a.as_f64().unwrap() - b.as_f64().unwrap()).abs() < 1e-5;
    assert!(close(&k["knocked"], &s["mean_delta"]), "{k} vs {s}");
    assert!(close(&k["control"], &s["control"]["mean"]), "{k} vs {s}");
    let (one, v) = (file(&["ablate"]), corpus(&["ablate"]));
    assert_eq!(v["measure"], "pll_bits");
    let heads = v["heads"].as_array().unwrap();
    assert_eq!(heads.len(), 2 * one["heads"].as_array().unwrap().len());
    for h in heads {
        let w = one["heads"]
            .as_array()
            .unwrap()
            .iter()
            .find(|w| w["layer"] == h["layer"] && w["head"] == h["head"])
            .unwrap();
        let class = h["class"].as_str().unwrap();
        assert!(close(&h["mean"], &w[class]), "{h} vs {w}");
    }
}
