//! Paper mode as a user reaches it: `analyze --mode paper` feeds exactly the text the
//! study's pipeline fed (its comment and docstring removal, its `#`/`"""`/`'''` token
//! filter, single spaces), checked against a fixture made with the study's own code on
//! raw standard-library functions (`tests/fixtures/study_paper_text.json`); `reproduce
//! --mode paper` drops the snippets the study's cleaning refuses, as the study did.

use std::path::PathBuf;

use serde_json::Value;

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

fn cases() -> Vec<Value> {
    let f = std::fs::read_to_string(fixture("study_paper_text.json")).unwrap();
    let v: Value = serde_json::from_str(&f).unwrap();
    v["cases"].as_array().unwrap().clone()
}

fn run(tmp: &std::path::Path, args: &[&str]) -> Value {
    let o = crate::cli_sources::sandboxed(tmp)
        .env("HF_HUB_OFFLINE", "1")
        .args(args)
        .output()
        .unwrap();
    serde_json::from_str(&crate::cli_sources::ok(&o)).unwrap()
}

#[test]
fn analyze_paper_mode_feeds_the_studys_text() {
    let root = tempfile::tempdir().unwrap();
    let tmp = root.path();
    let model = fixture("tiny_roberta").display().to_string();
    let cases = cases();
    assert!(cases.len() >= 20);
    let mut with_docstring = 0;
    for (i, c) in cases.iter().enumerate() {
        let name = c["name"].as_str().unwrap();
        let source = c["source"].as_str().unwrap();
        let path = tmp.join(format!("case{i}.py"));
        std::fs::write(&path, source).unwrap();
        let p = path.to_str().unwrap();
        let paper = run(
            tmp,
            &["analyze", "--model", &model, "--mode", "paper", "--json", p],
        );
        assert_eq!(paper["mode"], "paper", "{name}");
        assert_eq!(
            paper["text"].as_str().unwrap(),
            c["text"].as_str().unwrap(),
            "{name}: paper-mode input differs from the study's"
        );
        assert!(
            paper.get("paper_note").is_none(),
            "{name}: {}",
            paper["paper_note"]
        );
        // No analysed token is one the study does not feed (a docstring, a `"""` string).
        let tokens = paper["tokens"].as_array().unwrap();
        for k in paper["analysed_tokens"].as_array().unwrap() {
            let t = tokens[k.as_u64().unwrap() as usize]["text"]
                .as_str()
                .unwrap();
            assert!(
                !t.starts_with("\"\"\"") && !t.starts_with("'''") && !t.starts_with('#'),
                "{name}: `{t}` is analysed in paper mode"
            );
        }
        if source.contains("\"\"\"") || source.contains("'''") {
            with_docstring += 1;
            // Source mode feeds the file as written.
            let src = run(tmp, &["analyze", "--model", &model, "--json", p]);
            assert_eq!(src["text"].as_str().unwrap(), source, "{name}");
        }
    }
    assert!(with_docstring >= 15, "{with_docstring}");
}

#[test]
fn reproduce_paper_mode_skips_what_the_study_cannot_clean() {
    let root = tempfile::tempdir().unwrap();
    let tmp = root.path();
    let model = fixture("tiny_roberta").display().to_string();
    let corpus = tmp.join("corpus");
    std::fs::create_dir(&corpus).unwrap();
    for (i, c) in cases().iter().take(3).enumerate() {
        std::fs::write(
            corpus.join(format!("c{i}.py")),
            c["source"].as_str().unwrap(),
        )
        .unwrap();
    }
    // Python's tokenizer refuses this (end of file inside a bracket): the study's
    // cleaning raises, so the study would not have scored it.
    std::fs::write(
        corpus.join("z_broken.py"),
        "def broken(x):\n    \"\"\"Doc.\"\"\"\n    return g(x,\n",
    )
    .unwrap();
    let summary = |mode: &str| -> Value {
        let out = tmp.join(format!("out-{mode}"));
        let o = crate::cli_sources::sandboxed(tmp)
            .env("HF_HUB_OFFLINE", "1")
            .args(["--model", &model, "reproduce", "--mode", mode, "--data"])
            .arg(&corpus)
            .arg("--out")
            .arg(&out)
            .output()
            .unwrap();
        crate::cli_sources::ok(&o);
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap()
    };
    let paper = summary("paper");
    assert_eq!(paper["mode"], "paper");
    assert_eq!(
        (paper["scored"].as_u64(), paper["failed"].as_u64()),
        (Some(3), Some(1)),
        "{paper}"
    );
    let source = summary("source");
    assert_eq!(
        (source["scored"].as_u64(), source["failed"].as_u64()),
        (Some(4), Some(0)),
        "{source}"
    );
}
