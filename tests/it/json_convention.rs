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
/// `hidden`: hidden-state outputs (probes, patch), whose layer 0 is the embeddings and
/// layer 1 the first transformer layer, as everywhere else.
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
    violations(
        v,
        "",
        what.starts_with("probe") || what == "patch",
        &mut bad,
    );
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
    // patch: its layers are hidden states (0 = the embeddings), as the probes' are.
    let twins = root.join("area.py");
    std::fs::write(
        &twins,
        "def area(w, h):\n    total = w * h\n    return total\n",
    )
    .unwrap();
    let patch = json(&[
        "--model",
        &dec,
        "patch",
        twins.to_str().unwrap(),
        "--rewrite",
        "rename:shuffle",
        "--json",
    ]);
    check("patch", &patch);
    let mut fields = patch.clone();
    // `renamed` is a map keyed by the snippet's names (README: `{old: new}`).
    fields["renamed"] = Value::Null;
    let missing = undocumented(&fields, "`patch --json`");
    assert!(missing.is_empty(), "README's patch shape lacks {missing:?}");
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
    // probe --random-baseline: both reports and the matched rows.
    let both = run(
        root,
        &[
            "--model",
            &enc,
            "probe",
            "--task",
            "dfg",
            "--limit",
            "8",
            "--no-cache",
            "--random-baseline",
            "2",
            "--json",
        ],
    );
    check(
        "probe --random-baseline",
        &serde_json::from_str(&both).unwrap(),
    );
}

/// Every field name in `v` (object keys, recursively).
fn keys(v: &Value, out: &mut std::collections::BTreeSet<String>) {
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                out.insert(k.clone());
                // The finding has its own shape (README, The finding).
                if k != "finding" {
                    keys(x, out);
                }
            }
        }
        Value::Array(a) => a.iter().for_each(|x| keys(x, out)),
        _ => {}
    }
}

/// The quoted names in the README's shape of one output: from the paragraph starting
/// with `start` to the next line starting with a backquote.
fn documented(start: &str) -> std::collections::BTreeSet<String> {
    let readme =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md")).unwrap();
    let at = readme
        .find(&format!("\n{start}"))
        .unwrap_or_else(|| panic!("the README has no shape starting {start}"));
    let rest = &readme[at + 1..];
    // Up to the next command's shape (a line starting with `trace `, `probe `, ...).
    const COMMANDS: [&str; 11] = [
        "trace",
        "syntax",
        "analyze",
        "compare",
        "knockout",
        "ablate",
        "lens",
        "patch",
        "probe",
        "reproduce",
        "render",
    ];
    let end = rest
        .match_indices("\n`")
        .map(|(i, _)| i)
        .find(|&i| {
            i > 0
                && COMMANDS
                    .iter()
                    .any(|c| rest[i + 2..].starts_with(&format!("{c} ")))
        })
        .unwrap_or(rest.len());
    rest[..end]
        .split('"')
        .skip(1)
        .step_by(2)
        .map(str::to_string)
        .collect()
}

pub(crate) fn undocumented(v: &Value, start: &str) -> Vec<String> {
    let mut k = std::collections::BTreeSet::new();
    keys(v, &mut k);
    let doc = documented(start);
    k.into_iter()
        .filter(|x| {
            let graph = codescope::syntax::Graph::ALL.iter().any(|g| g.name() == x);
            !doc.contains(x) && !graph && !x.contains("->")
        })
        .collect()
}

/// The README's shapes of `probe --json` and of the explorer's export name every field
/// these outputs carry (category pairs such as `"syn->id"` and the graph names are the
/// keys of maps the shapes describe as such; the finding has a shape of its own).
#[test]
fn the_readme_documents_every_field_of_probe_and_export_json() {
    let d = tempfile::tempdir().unwrap();
    let root = d.path();
    let enc = fixture("tiny_roberta");
    let probe = run(
        root,
        &[
            "--model",
            &enc,
            "probe",
            "--task",
            "dfg",
            "--limit",
            "8",
            "--no-cache",
            "--structural",
            "--json",
            "--timings",
        ],
    );
    let v: Value = serde_json::from_str(&probe).unwrap();
    assert!(v["structural"].as_array().is_some_and(|a| !a.is_empty()));
    let missing = undocumented(&v, "`probe --json`:");
    assert!(
        missing.is_empty(),
        "probe --json fields not in the README: {missing:?}"
    );
    // The explorer's export, with the surprisal view, a pinned head and compare mode on.
    use crate::tui_common::{ready_decoder, theme, typed, SHORT};
    use codescope::tui::theme::ColorMode;
    let mut app = ready_decoder("tiny_qwen2", SHORT, 120, 40, theme(ColorMode::TrueColor));
    typed(&mut app, "lS*");
    let view = codescope::tui::figure_data(&app).unwrap();
    assert!(view.surprisal.is_some() && view.pinned.is_some());
    let v: Value = serde_json::from_str(&codescope::export::json::render(&view).unwrap()).unwrap();
    let missing = undocumented(&v, "The explorer's export (`x`");
    assert!(
        missing.is_empty(),
        "export fields not in the README: {missing:?}"
    );
}
