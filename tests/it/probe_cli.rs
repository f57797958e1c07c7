//! `codescope probe` end to end through the binary, with a tiny random model: JSON and
//! CSV shapes, the feature cache under CODESCOPE_CACHE, argument errors.

use std::process::Command;

use codescope::model::testutil::{write_tiny_model, Tiny};

/// The sandboxed binary (`cli_sources::sandboxed`) on two threads.
fn cmd(root: &std::path::Path) -> Command {
    let mut c = crate::cli_sources::sandboxed(root);
    c.env("RAYON_NUM_THREADS", "2");
    c
}

#[test]
fn probe_json_csv_and_cache() {
    let root = tempfile::tempdir().unwrap();
    let model = root.path().join("tiny");
    write_tiny_model(&model, &Tiny::default()).unwrap();
    let model = model.to_str().unwrap();
    let out = cmd(root.path())
        .args([
            "--model", model, "probe", "--limit", "8", "--task", "category",
        ])
        .args(["--task", "dfg", "--json"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["corpus"]["snippets"], 8);
    assert_eq!(v["corpus"]["source"], "bundled probe corpus");
    assert_eq!(v["model"]["layers"], 2);
    let results = v["results"].as_array().unwrap();
    assert_eq!(results.len(), 2 * 3, "2 tasks x (2 layers + embeddings)");
    assert_eq!(results[0]["task"], "category");
    assert_eq!(results[0]["probe"], "linear");
    assert!(results[0]["clusters"].is_null());
    let cached = std::fs::read_dir(root.path().join("cache/features"))
        .unwrap()
        .count();
    assert_eq!(cached, 1, "one feature-cache entry");

    let out = cmd(root.path())
        .args(["--model", model, "probe", "--limit", "8", "--task", "depth"])
        .args(["--layer", "1", "--csv", "--split", "pair"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let csv = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines.len(), 2, "{csv}");
    assert!(lines[0].starts_with("task,probe,layer,accuracy,control_accuracy"));
    assert!(lines[1].starts_with("depth,linear,1,"));

    let out = cmd(root.path())
        .args(["--model", model, "probe", "--task", "nonsense"])
        .output()
        .unwrap();
    assert!(!out.status.success());
}

#[test]
fn directprobe_reports_clusters() {
    let root = tempfile::tempdir().unwrap();
    let model = root.path().join("tiny");
    write_tiny_model(&model, &Tiny::default()).unwrap();
    let model = model.to_str().unwrap();
    let out = cmd(root.path())
        .args([
            "--model", model, "probe", "--limit", "8", "--task", "category",
        ])
        .args([
            "--probe",
            "directprobe",
            "--layer",
            "1",
            "--dp-max-train",
            "120",
        ])
        .args(["--json"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let r = &v["results"][0];
    assert_eq!(r["probe"], "directprobe");
    assert_eq!(r["layer"], 1);
    // At least one cluster per label present in the (sampled) training points.
    assert!(r["clusters"].as_u64().unwrap() >= 2, "{r}");
    assert!(r["train_size"].as_u64().unwrap() <= 120);
    let acc = r["accuracy"].as_f64().unwrap();
    assert!((0.0..=1.0).contains(&acc));
}

#[test]
fn study_protocol_through_the_binary() {
    let root = tempfile::tempdir().unwrap();
    let model = root.path().join("tiny");
    write_tiny_model(&model, &Tiny::default()).unwrap();
    let model = model.to_str().unwrap();
    let out = cmd(root.path())
        .args([
            "--model",
            model,
            "probe",
            "--limit",
            "12",
            "--protocol",
            "study",
        ])
        .args([
            "--task", "category", "--task", "siblings", "--task", "distance",
        ])
        .args(["--layer", "1", "--json"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["protocol"], "study");
    let results = v["results"].as_array().unwrap();
    let tasks: Vec<&str> = results
        .iter()
        .map(|r| r["task"].as_str().unwrap())
        .collect();
    assert_eq!(
        tasks,
        ["siblings", "distance"],
        "the token tasks are not the study's"
    );
    for r in results {
        // ShuffleSplit(test_size=0.2): ceil(0.2 n) test pairs.
        let (tr, te) = (
            r["train_size"].as_u64().unwrap(),
            r["test_size"].as_u64().unwrap(),
        );
        assert_eq!(te, ((tr + te) as f64 * 0.2).ceil() as u64, "{r}");
    }
    // Paper-mode features are cached apart from source-mode ones.
    let names: Vec<String> = std::fs::read_dir(root.path().join("cache/features"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(
        names.len() == 1 && names[0].ends_with("-paper"),
        "{names:?}"
    );
    // The shard and dump writers are codescope's protocol only.
    let out = cmd(root.path())
        .args([
            "--model",
            model,
            "probe",
            "--protocol",
            "study",
            "--dump",
            "x",
        ])
        .output()
        .unwrap();
    assert!(!out.status.success());
}
