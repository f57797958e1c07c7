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

/// `--protocol paper` with `--probe ast`: the model reads the text with comments and
/// docstrings removed as AST-Probe's code removes them, the report says so, the features
/// are cached apart, and `--gold FILE` writes each usable snippet's leaves and (d, c, u)
/// on that text. `paper` without `--probe ast`, `study` with it, and `--gold` without it
/// are one-line errors.
#[test]
fn ast_paper_protocol_through_the_binary() {
    use crate::cli_sources::{fails, ok};
    let root = tempfile::tempdir().unwrap();
    let model = root.path().join("tiny");
    write_tiny_model(&model, &Tiny::default()).unwrap();
    let model = model.to_str().unwrap();
    let corpus = root.path().join("corpus");
    std::fs::create_dir(&corpus).unwrap();
    let mut py = String::new();
    for k in 0..12 {
        py.push_str(&format!(
            "def f{k}(a, b):\n    \"\"\"Doc of f{k}.\"\"\"\n    # add them\n    x = a + b * {k}  # times\n    return x is not None\n\n\n"
        ));
    }
    std::fs::write(corpus.join("m.py"), &py).unwrap();
    let corpus = corpus.to_str().unwrap();
    let gold = root.path().join("gold.json");
    let run = |protocol: &str, gold: &std::path::Path| {
        ok(&cmd(root.path())
            .args([
                "--model", model, "probe", "--corpus", corpus, "--probe", "ast",
            ])
            .args(["--ast-rank", "4", "--layer", "1", "--protocol", protocol])
            .args(["--json", "--gold", gold.to_str().unwrap()])
            .output()
            .unwrap())
    };
    let v: serde_json::Value = serde_json::from_str(&run("paper", &gold)).unwrap();
    assert_eq!(v["protocol"], "paper");
    assert_eq!(v["ast"].as_array().unwrap().len(), 1);
    assert_eq!(v["ast"][0]["layer"], 1);
    let g: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&gold).unwrap()).unwrap();
    assert_eq!(g["protocol"], "paper");
    let snippets = g["snippets"].as_array().unwrap();
    assert_eq!(snippets.len(), 12);
    let code = |k: usize| -> String { py.split("\n\n\n").nth(k).unwrap().to_string() + "\n\n\n" };
    for (k, s) in snippets.iter().enumerate() {
        let text = s["text"].as_str().unwrap();
        let want = codescope::syntax::remove_comments_and_docstrings_astprobe(
            &code(s["snippet"].as_u64().unwrap() as usize),
            codescope::syntax::Language::Python,
        )
        .unwrap();
        assert_eq!(text, want, "snippet {k}");
        assert!(!text.contains('#') && !text.contains("Doc"), "{text}");
        let n = s["tokens"].as_array().unwrap().len();
        assert_eq!(s["d"].as_array().unwrap().len(), n - 1);
        assert_eq!(s["c"].as_array().unwrap().len(), n - 1);
        assert_eq!(s["u"].as_array().unwrap().len(), n);
        assert_eq!(s["language"], "python");
        assert!(s["origin"].as_str().unwrap().contains("m.py"));
        // The 2022 grammar: `is` and `not` are children of the comparison itself, so
        // their lowest common ancestor is a binarisation node, not today's `is not`.
        let is = position(s, "is");
        assert_eq!(s["c"][is - 1], "comparison_operator", "{:?}", s["c"]);
        assert_eq!(s["c"][is], "<empty>", "{:?}", s["c"]);
    }
    // The paper protocol's features are cached apart.
    let names: Vec<String> = std::fs::read_dir(root.path().join("cache/features"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(
        names.len() == 1 && names[0].ends_with("-astpaper"),
        "{names:?}"
    );
    // The default protocol: the text as written, no `protocol` key.
    let plain = root.path().join("gold-default.json");
    let v: serde_json::Value = serde_json::from_str(&run("codescope", &plain)).unwrap();
    assert!(v.get("protocol").is_none());
    let g: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&plain).unwrap()).unwrap();
    assert_eq!(g["protocol"], "codescope");
    assert!(g["snippets"][0]["text"]
        .as_str()
        .unwrap()
        .contains("Doc of"));
    assert_eq!(
        std::fs::read_dir(root.path().join("cache/features"))
            .unwrap()
            .count(),
        2
    );

    let err = |args: &[&str]| {
        fails(
            &cmd(root.path())
                .args(["--model", model, "probe", "--limit", "4"])
                .args(args)
                .output()
                .unwrap(),
        )
    };
    let e = err(&["--protocol", "paper"]);
    assert!(e.contains("--probe ast"), "{e}");
    let e = err(&["--protocol", "study", "--probe", "ast"]);
    assert!(e.contains("--protocol paper"), "{e}");
    let e = err(&["--gold", "g.json"]);
    assert!(e.contains("--probe ast"), "{e}");
}

/// Index of the first leaf `text` of a `--gold` snippet.
fn position(snippet: &serde_json::Value, text: &str) -> usize {
    snippet["tokens"]
        .as_array()
        .unwrap()
        .iter()
        .position(|t| t == text)
        .unwrap()
}
