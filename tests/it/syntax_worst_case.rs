//! The syntax layer on hostile shapes of about 1 MB (issue #16): deep attribute chains,
//! long binary expressions, nested brackets, long flat lists, in Python and Java. Each is
//! parsed to completion (tokens, roles, every graph) in a child process that must exit
//! cleanly under an address-space cap and within a generous time limit: a panic, an
//! allocation beyond the cap or a hang fails the test. How fast and how small is measured
//! by `tools/syntax_worst_case.sh` (release build), not here.
//!
//! The child is this test binary itself, running the ignored test [`worst_case_child`]
//! with the shape's name in `CODESCOPE_WORST_CASE`.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use codescope::syntax::{parse_with, Graph, Language, Limits};

/// Bytes of every generated input (the CLI's input limit is 1,000,000).
const SIZE: usize = 990_000;

/// Address space the child may map, in KiB (`ulimit -v`). It counts the debug binary's
/// mapping (about 300 MB), thread stacks and allocator arenas besides the heap, so it is
/// looser than the 1 GB resident target the benchmark script checks.
const ADDRESS_SPACE_KIB: u64 = 3_000_000;

/// Generous: the debug build on a loaded machine; a quadratic walk would take hours.
const TIME_LIMIT: Duration = Duration::from_secs(600);

/// Every shape: (name, language, source).
fn shapes() -> Vec<(&'static str, Language, String)> {
    let rep = |unit: &str, head: &str, tail: &str| {
        let n = (SIZE - head.len() - tail.len()) / unit.len();
        format!("{head}{}{tail}", unit.repeat(n))
    };
    let nest = |open: &str, inner: &str, close: &str, head: &str, tail: &str| {
        let n = (SIZE - head.len() - tail.len() - inner.len()) / (open.len() + close.len());
        format!("{head}{}{inner}{}{tail}", open.repeat(n), close.repeat(n))
    };
    let (jh, jt) = ("class A { void f() { ", "; } }\n");
    vec![
        (
            "py_attribute_chain",
            Language::Python,
            rep(".b", "x = a", "\n"),
        ),
        (
            "py_binary_operators",
            Language::Python,
            rep(" + a", "x = a", "\n"),
        ),
        (
            "py_nested_parens",
            Language::Python,
            nest("(", "1", ")", "x = ", "\n"),
        ),
        (
            "py_nested_lists",
            Language::Python,
            nest("[", "", "]", "x = ", "\n"),
        ),
        (
            "py_nested_calls",
            Language::Python,
            nest("f(", "1", ")", "x = ", "\n"),
        ),
        ("py_flat_list", Language::Python, rep("1, ", "x = [", "]\n")),
        (
            "java_field_chain",
            Language::Java,
            rep(".b", &format!("{jh}x = a"), jt),
        ),
        (
            "java_binary_operators",
            Language::Java,
            rep(" + a", &format!("{jh}x = a"), jt),
        ),
        (
            "java_nested_parens",
            Language::Java,
            nest("(", "1", ")", &format!("{jh}x = "), jt),
        ),
        (
            "py_many_ifs",
            Language::Python,
            rep("if c:\n    x = 1\n", "", "y = x\n"),
        ),
        (
            "py_long_elif",
            Language::Python,
            rep(
                "elif c:\n    x = 1\n",
                "if c:\n    x = 0\n",
                "else:\n    x = 2\ny = x\n",
            ),
        ),
        (
            "java_flat_array",
            Language::Java,
            rep("1, ", "class A { int[] x = {", "}; }\n"),
        ),
    ]
}

/// Parse one shape with a long parse timeout and walk every graph.
fn run_shape(name: &str) {
    let (_, lang, src) = shapes()
        .into_iter()
        .find(|s| s.0 == name)
        .unwrap_or_else(|| panic!("no shape {name}"));
    assert!(src.len() <= 1_000_000, "{name}: {} bytes", src.len());
    let limits = Limits {
        max_bytes: 1_000_000,
        timeout: TIME_LIMIT,
    };
    let s = parse_with(&src, lang, &limits).unwrap_or_else(|e| panic!("{name}: {e}"));
    assert!(
        s.tokens.len() > 100_000,
        "{name}: {} tokens",
        s.tokens.len()
    );
    // Every graph is available: counted whole, listed within a 512-token window.
    let window: Vec<usize> = (0..512.min(s.tokens.len())).collect();
    for g in Graph::ALL {
        let count = s.graphs.edge_count(g);
        let within = s.graphs.edges_within(g, &window);
        assert!(within.len() <= count, "{name} {g}");
    }
    println!(
        "{name}: {} bytes, {} tokens, {} motif edges, {} dfg / {} dfg_refined edges",
        src.len(),
        s.tokens.len(),
        s.graphs.edge_count(Graph::AstMotif),
        s.graphs.dfg.len(),
        s.graphs.dfg_refined.len()
    );
}

/// The child process: runs the shape named in `CODESCOPE_WORST_CASE`.
#[test]
#[ignore = "run by worst_case_shapes_finish_within_bounds in a child process"]
fn worst_case_child() {
    let name = std::env::var("CODESCOPE_WORST_CASE")
        .expect("run by worst_case_shapes_finish_within_bounds, which sets CODESCOPE_WORST_CASE");
    run_shape(&name);
}

/// Run one shape in a child process; its report line, or why it failed.
fn run_child(name: &str) -> Result<String, String> {
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let started = Instant::now();
    // `ulimit -v` caps the child's address space: an allocation beyond it fails and the
    // child aborts.
    let mut child = Command::new("sh")
        .arg("-c")
        .arg(format!(
            "ulimit -v {ADDRESS_SPACE_KIB} && exec \"$0\" syntax_worst_case::worst_case_child --exact --ignored --nocapture --test-threads 1"
        ))
        .arg(&exe)
        .env("CODESCOPE_WORST_CASE", name)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| e.to_string())?;
    let status = loop {
        if let Some(st) = child.try_wait().map_err(|e| e.to_string())? {
            break st;
        }
        if started.elapsed() > TIME_LIMIT {
            let _ = child.kill();
            return Err(format!("{name}: still running after {TIME_LIMIT:?}"));
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let out = child.wait_with_output().map_err(|e| e.to_string())?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    if !status.success() {
        return Err(format!(
            "{name}: child failed ({status}):\n{stdout}\n{stderr}"
        ));
    }
    // libtest prints `test ... ` before the child's own line.
    let tag = format!("{name}:");
    let line = stdout
        .lines()
        .find_map(|l| l.find(&tag).map(|k| &l[k..]))
        .ok_or_else(|| format!("{name}: the child did not report:\n{stdout}"))?;
    Ok(format!(
        "{line} ({:.1} s, debug build)",
        started.elapsed().as_secs_f64()
    ))
}

#[test]
fn worst_case_shapes_finish_within_bounds() {
    let names: Vec<&str> = shapes().into_iter().map(|s| s.0).collect();
    // Two children at a time (each under its own cap).
    let results: Vec<Result<String, String>> = std::thread::scope(|sc| {
        let halves: [Vec<&str>; 2] = [
            names.iter().copied().step_by(2).collect(),
            names.iter().copied().skip(1).step_by(2).collect(),
        ];
        let handles: Vec<_> = halves
            .into_iter()
            .map(|half| sc.spawn(move || half.into_iter().map(run_child).collect::<Vec<_>>()))
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap_or_default())
            .collect()
    });
    assert_eq!(results.len(), names.len());
    let mut failures = Vec::new();
    for r in results {
        match r {
            Ok(line) => println!("{line}"),
            Err(e) => failures.push(e),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Issue #16: `analyze` refused a 20,000-element flat list (180 KB) for its 1.6e9 motif
/// edges, though only the model's window of tokens is analysed. Now only the window's
/// edges are listed; `syntax --json`, which would list them all, refuses in one line.
#[test]
fn a_huge_flat_list_is_analysed_within_the_window() {
    use codescope::model::testutil::{write_tiny_model, Tiny};
    let dir = tempfile::tempdir().unwrap();
    let model = dir.path().join("tiny");
    write_tiny_model(&model, &Tiny::default()).unwrap();
    let src = dir.path().join("flat.py");
    std::fs::write(&src, format!("x = [{}]\n", "1, ".repeat(20_000))).unwrap();
    let run = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_codescope"))
            .env("CODESCOPE_CACHE", dir.path().join("cache"))
            .env("CODESCOPE_LOG_FILE", dir.path().join("log.txt"))
            .env("HF_ENDPOINT", "http://127.0.0.1:9")
            .env("CODESCOPE_PYPI_URL", "http://127.0.0.1:9")
            .args(args)
            .arg(&src)
            .output()
            .unwrap()
    };
    let m = model.to_str().unwrap();
    let out = run(&["--model", m, "analyze", "--json"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let analysed = v["analysed_tokens"].as_array().unwrap().len();
    assert!(analysed > 50 && analysed < 200, "{analysed}");
    // Every analysed token of the list sees every other one (the first two, `x =`, and
    // the list's children): the edges of the window, not of the snippet.
    let edges = v["relations"]["ast_motif"]["edges"].as_u64().unwrap() as usize;
    assert!(
        edges > analysed * (analysed - 10) && edges < analysed * analysed,
        "{edges}"
    );
    // syntax --json would list 1.6e9 edges: refused in one line, no panic.
    let out = run(&["syntax", "--json"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("over the limit") && err.lines().count() == 1,
        "{err}"
    );
    // The table (no edges) still works.
    assert!(run(&["syntax"]).status.success());
}
