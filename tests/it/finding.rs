//! The study's finding where a user reads it: `analyze` (text and `--json`) and
//! `reproduce` (the printed table and `summary.json`) put syn–syn, id–id (data flow) and
//! syn–id F1 side by side per layer, from the same numbers as the per-graph tables.

use std::path::PathBuf;

use serde_json::Value;

use crate::cli_sources::{ok, sandboxed};

use crate::cli_sources::fixture;

#[test]
fn analyze_and_reproduce_show_the_finding() {
    let d = tempfile::tempdir().unwrap();
    let root = d.path();
    let src = root.join("a.py");
    std::fs::write(
        &src,
        "def scale(values, factor=2):\n    total = 0\n    for v in values:\n        total += v * factor\n    return total / len(values)\n",
    )
    .unwrap();
    let s = src.to_str().unwrap();
    let m = fixture("tiny_llama");
    let run = |args: &[&str]| ok(&sandboxed(root).args(args).output().unwrap());
    let v: Value = serde_json::from_str(&run(&["analyze", "--model", &m, "--json", s])).unwrap();
    let f = &v["finding"];
    let layers = f["layers"].as_array().unwrap();
    assert_eq!(
        layers.len(),
        v["relations"]["syntactic"]["f1"].as_array().unwrap().len()
    );
    for (l, row) in layers.iter().enumerate() {
        assert_eq!(row["layer"], l + 1);
        for g in ["syntactic", "dfg", "syntactic_identifier", "dfg_refined"] {
            let best = &v["relations"][g]["best_head"][l];
            assert_eq!(row[g]["best_f1"], best["f1"], "{g} layer {}", l + 1);
            assert_eq!(row[g]["best_head"], best["head"], "{g} layer {}", l + 1);
            let f1s: Vec<f64> = v["relations"][g]["f1"][l]
                .as_array()
                .unwrap()
                .iter()
                .map(|x| x.as_f64().unwrap())
                .collect();
            let mean = f1s.iter().sum::<f64>() / f1s.len() as f64;
            assert!((row[g]["mean_f1"].as_f64().unwrap() - mean).abs() < 1e-12);
        }
        let sh = &row["shares"];
        let (si, ss) = (
            sh["syn->id"].as_f64().unwrap(),
            sh["syn->syn"].as_f64().unwrap(),
        );
        assert!((si + ss - 1.0).abs() < 1e-9, "shares of a row add up to 1");
    }
    assert!(f["reading"].as_str().unwrap().contains("syn–id"));
    let text = run(&["analyze", "--model", &m, s]);
    assert!(
        text.contains("finding") && text.contains("reading:"),
        "{text}"
    );
    // The corpus version.
    let corpus = root.join("corpus");
    std::fs::create_dir(&corpus).unwrap();
    std::fs::copy(&src, corpus.join("a.py")).unwrap();
    let out = root.join("rep");
    let table = run(&[
        "--model",
        &m,
        "reproduce",
        "--data",
        corpus.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(
        table.contains("finding") && table.contains("syn–id"),
        "{table}"
    );
    let summary: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    let sf = &summary["finding"]["layers"];
    // One snippet: the corpus macro-average is that snippet's score.
    for l in 0..layers.len() {
        let a = layers[l]["syntactic_identifier"]["best_f1"]
            .as_f64()
            .unwrap();
        let b = sf[l]["syntactic_identifier"]["best_f1"].as_f64().unwrap();
        assert!((a - b).abs() < 1e-6, "layer {}: {a} vs {b}", l + 1);
    }
}

/// `render --view finding` draws the finding as a figure (SVG that parses, PNG), with the
/// same numbers `analyze --json` reports.
#[test]
fn render_view_finding_draws_the_same_numbers() {
    let d = tempfile::tempdir().unwrap();
    let root = d.path();
    let src = root.join("a.py");
    std::fs::write(&src, "def f(a, b):\n    c = a + b\n    return c * a\n").unwrap();
    let s = src.to_str().unwrap();
    let m = fixture("tiny_roberta");
    let run = |args: &[&str]| ok(&sandboxed(root).args(args).output().unwrap());
    let v: Value = serde_json::from_str(&run(&["analyze", "--model", &m, "--json", s])).unwrap();
    let svg_path = root.join("f.svg");
    run(&[
        "render",
        "--model",
        &m,
        s,
        "--view",
        "finding",
        "--out",
        svg_path.to_str().unwrap(),
    ]);
    let svg = std::fs::read_to_string(&svg_path).unwrap();
    resvg::usvg::Tree::from_str(&svg, &resvg::usvg::Options::default()).unwrap();
    assert!(svg.contains("the finding"));
    for l in v["finding"]["layers"].as_array().unwrap() {
        for g in ["syntactic", "dfg", "syntactic_identifier"] {
            let want = format!(
                "{:.3} h{}",
                l[g]["best_f1"].as_f64().unwrap(),
                l[g]["best_head"].as_u64().unwrap()
            );
            assert!(svg.contains(&want), "{g}: no `{want}` in the figure");
        }
    }
    let png = root.join("f.png");
    run(&[
        "render",
        "--model",
        &m,
        s,
        "--view",
        "finding",
        "--out",
        png.to_str().unwrap(),
    ]);
    assert_eq!(&std::fs::read(&png).unwrap()[..4], b"\x89PNG");
}

/// The README's reading of the finding for MiniLM on the bundled `word_count.py`: syn–id
/// is matched better than both other relations in every layer (the study's pattern does
/// not show there).
#[test]
fn minilm_on_the_bundled_sample_reads_as_the_readme_says() {
    let d = tempfile::tempdir().unwrap();
    let sample =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("assets/samples/python/word_count.py");
    let o = std::process::Command::new(crate::cli_sources::BIN)
        .env("HF_HUB_OFFLINE", "1")
        .env("CODESCOPE_LOG_FILE", d.path().join("log"))
        .args(["analyze", "--model", "minilm", "--json"])
        .arg(&sample)
        .output()
        .unwrap();
    let v: Value = serde_json::from_str(&ok(&o))
        .unwrap_or_else(|e| panic!("the packaged MiniLM is needed (run .ci/run): {e}"));
    let f = &v["finding"];
    assert_eq!(f["pattern_layers"].as_array().unwrap().len(), 0, "{f}");
    for l in f["layers"].as_array().unwrap() {
        let si = l["syntactic_identifier"]["best_f1"].as_f64().unwrap();
        assert!(
            si > l["syntactic"]["best_f1"].as_f64().unwrap()
                && si > l["dfg"]["best_f1"].as_f64().unwrap(),
            "{l}"
        );
    }
}

/// The surprisal colours stay readable: the scale stops at the 95th percentile of the
/// code tokens' bits, so one long token (the bundled sample's docstring, 60 bits with the
/// packaged Gemma 3) does not wash out the rest, and the legend says where the scale stops
/// and what the maximum is.
#[test]
fn surprisal_scale_is_capped_at_the_95th_percentile() {
    let d = tempfile::tempdir().unwrap();
    let sample =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("assets/samples/python/word_count.py");
    let out = d.path().join("s.svg");
    let o = std::process::Command::new(crate::cli_sources::BIN)
        .env("HF_HUB_OFFLINE", "1")
        .env("CODESCOPE_LOG_FILE", d.path().join("log"))
        .args(["render", "--model", "gemma3-270m"])
        .arg(&sample)
        .args(["--view", "surprisal", "--out"])
        .arg(&out)
        .output()
        .unwrap();
    ok(&o);
    let svg = std::fs::read_to_string(&out).unwrap();
    let i = svg
        .find("capped at p95 = ")
        .expect("the legend says the scale is capped");
    let rest = &svg[i + "capped at p95 = ".len()..];
    let p95: f64 = rest[..rest.find(';').unwrap()].parse().unwrap();
    let max: f64 = rest[rest.find("max ").unwrap() + 4..rest.find(')').unwrap()]
        .parse()
        .unwrap();
    assert!(
        p95 < max / 2.0,
        "{p95} vs {max}: the long docstring no longer sets the scale"
    );
}
