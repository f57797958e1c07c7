//! Paper mode as a user reaches it: `analyze --mode paper` feeds exactly the text the
//! study's pipeline fed (its comment and docstring removal, its `#`/`"""`/`'''` token
//! filter, single spaces), checked against a fixture made with the study's own code on
//! raw standard-library functions (`tests/fixtures/study_paper_text.json`); `reproduce
//! --mode paper` drops the snippets the study's cleaning refuses, as the study did, and
//! reads the study's own `exp_data` records (their `code_tokens`) as a corpus.

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

/// The study's `exp_data/*.jsonl` records carry the code and the tokens it fed
/// (`code_tokens`, comments removed and `*` `*` merged). `reproduce --mode paper` on them
/// scores exactly what it scores on the same code without `code_tokens` (the same tables,
/// byte for byte), prepares raw CodeSearchNet-style `code_tokens` the study's way, and
/// skips (and counts) a record whose tokens are not its code's, as the study did.
#[test]
fn reproduce_paper_mode_reads_the_studys_exp_data_records() {
    let root = tempfile::tempdir().unwrap();
    let tmp = root.path();
    let model = fixture("tiny_roberta").display().to_string();
    let cases: Vec<Value> = cases().into_iter().take(6).collect();
    let line = |v: Value| format!("{v}\n");
    // The study's exp_data records: code plus the tokens it fed.
    let mut exp = String::new();
    // The same code, no tokens: codescope builds the study's input from the code.
    let mut plain = String::new();
    for c in &cases {
        exp.push_str(&line(serde_json::json!({
            "code": c["source"], "code_tokens": c["tokens"], "language": "python",
            "sha": "0", "func_name": c["name"],
        })));
        plain.push_str(&line(
            serde_json::json!({"code": c["source"], "language": "python"}),
        ));
    }
    // A raw CodeSearchNet-style record: a comment token, a docstring token and `*` `*`,
    // which the study's create_csn_exp_data.py removes and merges.
    let raw_code =
        "def g(*args, **kw):\n    \"\"\"Doc.\"\"\"\n    # note\n    return f(*args, **kw)\n";
    let raw_tokens = [
        "def",
        "g",
        "(",
        "*",
        "args",
        ",",
        "*",
        "*",
        "kw",
        ")",
        ":",
        "\"\"\"Doc.\"\"\"",
        "# note",
        "return",
        "f",
        "(",
        "*",
        "args",
        ",",
        "*",
        "*",
        "kw",
        ")",
    ];
    exp.push_str(&line(
        serde_json::json!({"code": raw_code, "code_tokens": raw_tokens}),
    ));
    plain.push_str(&line(serde_json::json!({"code": raw_code})));
    // A record whose tokens are not its code's (the study's alignment fails): skipped.
    exp.push_str(&line(serde_json::json!({
        "code": "def h(x):\n    return x\n",
        "code_tokens": ["def", "h", "(", "x", ")", ":", "return", "y"],
    })));
    std::fs::write(tmp.join("exp_0.jsonl"), exp).unwrap();
    std::fs::write(tmp.join("plain.jsonl"), plain).unwrap();
    let run = |data: &str, mode: &str| -> PathBuf {
        let out = tmp.join(format!("out-{data}-{mode}"));
        let o = crate::cli_sources::sandboxed(tmp)
            .env("HF_HUB_OFFLINE", "1")
            .args(["--model", &model, "reproduce", "--mode", mode, "--data"])
            .arg(tmp.join(data))
            .arg("--out")
            .arg(&out)
            .output()
            .unwrap();
        crate::cli_sources::ok(&o);
        out
    };
    let summary = |out: &PathBuf| -> Value {
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap()
    };
    let exp_out = run("exp_0.jsonl", "paper");
    let plain_out = run("plain.jsonl", "paper");
    let s = summary(&exp_out);
    assert_eq!(
        (s["scored"].as_u64(), s["failed"].as_u64()),
        (Some(cases.len() as u64 + 1), Some(1)),
        "{s}"
    );
    // The scored records are the plain corpus's snippets: the same tables, byte for byte.
    let p = summary(&plain_out);
    assert_eq!(p["scored"].as_u64(), Some(cases.len() as u64 + 1), "{p}");
    for f in ["scores.csv", "best_heads.csv"] {
        assert_eq!(
            std::fs::read(exp_out.join(f)).unwrap(),
            std::fs::read(plain_out.join(f)).unwrap(),
            "{f}"
        );
    }
    // Source mode reads the code as written and ignores code_tokens.
    let src = summary(&run("exp_0.jsonl", "source"));
    assert_eq!(
        (src["scored"].as_u64(), src["failed"].as_u64()),
        (Some(cases.len() as u64 + 2), Some(0)),
        "{src}"
    );
}
