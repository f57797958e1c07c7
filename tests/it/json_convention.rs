//! One JSON convention across every command (README "JSON shapes"): named `layer`,
//! `head` and `best_head` fields are 1-based; thresholds are short decimals (`0.05`, not
//! `0.05000000074505806`); no timing in a default JSON, so two identical runs diff clean.
//! Positional arrays stay index 0 = first layer; hidden-state outputs (probes) number
//! layer 0 as the embeddings, so their layer 1 is the first transformer layer too.

use std::path::Path;

use serde_json::Value;

use crate::cli_sources::{ok, sandboxed};

use crate::cli_sources::fixture;

/// Every rule broken in `v`, with its JSON path.
/// `hidden`: hidden-state outputs (probes), whose layer 0 is the embeddings and layer 1
/// the first transformer layer, as everywhere else.
fn violations(v: &Value, path: &str, hidden: bool, out: &mut Vec<String>) {
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                let p = format!("{path}.{k}");
                if matches!(k.as_str(), "layer" | "head" | "best_head" | "best_layer") {
                    if let Some(n) = x.as_i64() {
                        if n < 1 && !(hidden && k == "layer" && n == 0) {
                            out.push(format!("{p} = {n} (named layers and heads are 1-based)"));
                        }
                    }
                }
                if k.contains("threshold") || k == "grid" {
                    short_decimals(x, &p, out);
                }
                let lk = k.to_ascii_lowercase();
                if lk.contains("second")
                    || lk.ends_with("_ms")
                    || lk.contains("elapsed")
                    || lk == "time"
                {
                    out.push(format!("{p}: a timing in the default JSON"));
                }
                violations(x, &p, hidden, out);
            }
        }
        Value::Array(a) => {
            for (i, x) in a.iter().enumerate() {
                violations(x, &format!("{path}[{i}]"), hidden, out);
            }
        }
        _ => {}
    }
}

fn short_decimals(v: &Value, path: &str, out: &mut Vec<String>) {
    match v {
        Value::Number(n) => {
            let s = n.to_string();
            let decimals = s.split_once('.').map_or(0, |(_, d)| d.len());
            if decimals > 4 {
                out.push(format!(
                    "{path} = {s} (a threshold prints as a short decimal)"
                ));
            }
        }
        Value::Array(a) => a.iter().for_each(|x| short_decimals(x, path, out)),
        _ => {}
    }
}

fn check(what: &str, v: &Value) {
    let mut bad = Vec::new();
    violations(v, "", what.starts_with("probe"), &mut bad);
    bad.truncate(12);
    assert!(bad.is_empty(), "{what}:\n{}", bad.join("\n"));
}

fn run(root: &Path, args: &[&str]) -> String {
    ok(&sandboxed(root)
        .env("HF_HUB_OFFLINE", "1")
        .args(args)
        .output()
        .unwrap())
}

#[test]
fn every_command_follows_the_json_convention() {
    let d = tempfile::tempdir().unwrap();
    let root = d.path();
    let src = root.join("a.py");
    std::fs::write(
        &src,
        "def scale(values, factor=2):\n    total = 0\n    for v in values:\n        total += v * factor\n    return total / len(values)\n",
    )
    .unwrap();
    let s = src.to_str().unwrap();
    let enc = fixture("tiny_roberta");
    let dec = fixture("tiny_llama");
    let json = |args: &[&str]| -> Value {
        let out = run(root, args);
        serde_json::from_str(&out).unwrap_or_else(|e| panic!("{args:?}: {e}: {out}"))
    };
    for m in [&enc, &dec] {
        check("trace", &json(&["trace", "--model", m, "--json", s]));
        check("analyze", &json(&["analyze", "--model", m, "--json", s]));
        check(
            "analyze --sweep",
            &json(&["analyze", "--model", m, "--sweep", "--json", s]),
        );
        check("compare", &json(&["compare", "--model", m, "--json", s]));
        check(
            "analyze --ged study",
            &json(&["analyze", "--model", m, "--ged", "study", "--json", s]),
        );
    }
    check("syntax", &json(&["syntax", "--json", s]));
    // reproduce: summary.json.
    let corpus = root.join("corpus");
    std::fs::create_dir(&corpus).unwrap();
    std::fs::copy(&src, corpus.join("a.py")).unwrap();
    let out = root.join("rep");
    run(
        root,
        &[
            "--model",
            &enc,
            "reproduce",
            "--data",
            corpus.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
            "--ged",
            "study",
        ],
    );
    let summary: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    assert!(summary["ged_study"].is_object(), "{summary}");
    check("reproduce --ged study summary.json", &summary);
    // probe: two identical runs give identical JSON.
    let probe = |tag: &str| {
        run(
            root,
            &[
                "--model",
                &enc,
                "probe",
                "--task",
                "distance_id",
                "--task",
                "category",
                "--limit",
                "12",
                "--no-cache",
                "--json",
            ],
        ) + tag
    };
    let (p1, p2) = (probe(""), probe(""));
    assert_eq!(p1, p2, "two identical probe runs differ");
    check("probe", &serde_json::from_str(&p1).unwrap());
}
