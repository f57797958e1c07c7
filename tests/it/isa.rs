//! The vector instruction set through the binary: `CODESCOPE_ISA` runs every kernel and
//! matrix product of the process at the level it names (the kernels' own variants are
//! compared level by level in codescope's unit tests, `model::kernels`). Each level this
//! CPU runs gives the packaged MiniLM's attention and hidden states within 1e-5 of the
//! widest level's, and not the same bits (a narrower level's products are other gemm
//! kernels: the variable reaches them); an unknown name or a
//! level the CPU lacks is refused in one line before anything runs.

use std::process::Command;

use codescope::model::kernels::isa::{self, Isa};

use serde_json::Value;

use crate::cli_sources::{ok, BIN};

/// `trace --json --hidden` of a small Python function at level `isa` (None: unset).
fn trace(root: &std::path::Path, level: Option<&str>) -> Value {
    let src = root.join("a.py");
    std::fs::write(
        &src,
        "def scale(values, factor=2):\n    total = 0\n    for v in values:\n        total += v * factor\n    return total / len(values)\n",
    )
    .unwrap();
    let mut c = Command::new(BIN);
    c.env("HF_HUB_OFFLINE", "1")
        .env("CODESCOPE_LOG_FILE", root.join("log.txt"))
        .env_remove("CODESCOPE_ISA")
        .args(["trace", "--model", "minilm", "--json", "--hidden"])
        .arg(&src);
    if let Some(l) = level {
        c.env("CODESCOPE_ISA", l);
    }
    serde_json::from_str(&ok(&c.output().unwrap())).unwrap()
}

/// Every number under `v`, in order.
fn numbers(v: &Value, out: &mut Vec<f64>) {
    match v {
        Value::Number(n) => out.push(n.as_f64().unwrap()),
        Value::Array(a) => a.iter().for_each(|x| numbers(x, out)),
        Value::Object(o) => o.values().for_each(|x| numbers(x, out)),
        _ => {}
    }
}

fn values(v: &Value) -> Vec<f64> {
    let mut out = Vec::new();
    numbers(&v["attention"], &mut out);
    numbers(&v["hidden_states"], &mut out);
    out
}

#[test]
fn every_level_the_cpu_runs_gives_the_same_trace() {
    let d = tempfile::tempdir().unwrap();
    let widest = values(&trace(d.path(), None));
    assert!(widest.len() > 10_000, "{} values", widest.len());
    for level in isa::available() {
        let got = values(&trace(d.path(), Some(level.name())));
        assert_eq!(got.len(), widest.len());
        let worst = got
            .iter()
            .zip(&widest)
            .map(|(a, b)| (a - b).abs())
            .fold(0.0, f64::max);
        assert!(worst < 1e-5, "{level}: max difference {worst}");
        if level == isa::detected() || (level == Isa::Avx512 && isa::detected() == Isa::Amx) {
            // AMX differs from AVX-512 only in LM heads, which MiniLM has none of.
            assert_eq!(worst, 0.0, "{level}: unset is the widest level");
        } else {
            // A narrower level's products are other gemm kernels (AVX2's 8-lane ones, the
            // scalar ones): they round differently somewhere in six layers.
            assert!(worst > 0.0, "{level}: the same bits as the widest level");
        }
    }
}

#[test]
fn an_unknown_or_unavailable_level_is_refused_in_one_line() {
    let d = tempfile::tempdir().unwrap();
    let src = d.path().join("a.py");
    std::fs::write(&src, "x = 1\n").unwrap();
    let run = |level: &str| {
        Command::new(BIN)
            .env("HF_HUB_OFFLINE", "1")
            .env("CODESCOPE_LOG_FILE", d.path().join("log.txt"))
            .env("CODESCOPE_ISA", level)
            .args(["syntax", "--json"])
            .arg(&src)
            .output()
            .unwrap()
    };
    // Exit status 2 (as for the other environment settings), one line on stderr.
    let fails = |o: std::process::Output| {
        let err = String::from_utf8_lossy(&o.stderr).to_string();
        assert_eq!(o.status.code(), Some(2), "{err}");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.starts_with("codescope: error: "), "{err}");
        err
    };
    let line = fails(run("sse9\u{1b}[2J"));
    assert!(
        line.contains("CODESCOPE_ISA=sse9?[2J: not an instruction set"),
        "{line}"
    );
    assert!(line.contains("avx512, avx2, portable or auto"), "{line}");
    if isa::detected() < Isa::Avx512 {
        let line = fails(run("avx512"));
        assert!(line.contains("this CPU does not run it"), "{line}");
    }
    // `auto` is the widest level, as unset.
    assert!(run("auto").status.success());
}

/// `lens --json` of the tiny Llama at level `level` (the LM head applied once per
/// layer): every probability of the actual next subword, layer by layer.
fn lens_probs(root: &std::path::Path, level: &str) -> Vec<f64> {
    let src = root.join("b.py");
    std::fs::write(&src, "def area(w, h):\n    return w * h\n").unwrap();
    let model = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/tiny_llama");
    let o = Command::new(BIN)
        .env("HF_HUB_OFFLINE", "1")
        .env("CODESCOPE_LOG_FILE", root.join("log.txt"))
        .env("CODESCOPE_ISA", level)
        .args(["lens", "--json", "--model"])
        .arg(&model)
        .arg(&src)
        .output()
        .unwrap();
    let v: Value = serde_json::from_str(&ok(&o)).unwrap();
    fn probs(v: &Value, out: &mut Vec<f64>) {
        match v {
            Value::Array(a) => a.iter().for_each(|x| probs(x, out)),
            Value::Object(o) => {
                for (k, x) in o {
                    match (k.as_str(), x.as_f64()) {
                        ("prob", Some(p)) => out.push(p),
                        _ => probs(x, out),
                    }
                }
            }
            _ => {}
        }
    }
    let mut out = Vec::new();
    probs(&v, &mut out);
    out
}

fn worst(a: &[f64], b: &[f64]) -> f64 {
    assert_eq!(a.len(), b.len());
    a.iter()
        .zip(b)
        .map(|(x, y)| (x - y).abs())
        .fold(0.0, f64::max)
}

/// On a CPU with AMX, `amx` (the widest level) multiplies LM heads on tiles and `avx512`
/// with f32 products from the packed head: the tiny Llama's lens agrees within 1e-5 and
/// is not the same bits (the variable reaches the head).
#[test]
fn amx_reaches_the_lm_head_and_agrees_with_avx512() {
    if isa::detected() != Isa::Amx {
        eprintln!("no AMX on this CPU");
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let (amx, wide) = (lens_probs(d.path(), "amx"), lens_probs(d.path(), "avx512"));
    assert!(amx.len() > 10, "{amx:?}");
    let w = worst(&amx, &wide);
    assert!(w < 1e-5, "max difference {w}");
    assert!(w > 0.0, "amx and avx512 gave the same bits");
    assert_eq!(lens_probs(d.path(), "auto"), amx, "auto is amx here");
}

/// At `avx2` and `avx512` the LM head's product runs from weights packed once
/// (`codescope_kernels::head`; the log says so when it packs); at `portable` it is
/// gemm's: the tiny Llama's lens agrees within 1e-5 between every level the CPU runs.
#[test]
fn the_packed_lm_head_runs_at_avx2_and_wider_and_agrees_with_gemm() {
    let d = tempfile::tempdir().unwrap();
    let log = d.path().join("log.txt");
    let packed = || {
        std::fs::read_to_string(&log)
            .unwrap_or_default()
            .contains("LM head packed")
    };
    let portable = lens_probs(d.path(), "portable");
    assert!(portable.len() > 10, "{portable:?}");
    assert!(!packed(), "the portable level packed the head");
    for level in isa::available() {
        if level == Isa::Portable {
            continue;
        }
        let _ = std::fs::remove_file(&log);
        let got = lens_probs(d.path(), level.name());
        assert!(packed(), "{level}: the head was not packed");
        let w = worst(&got, &portable);
        assert!(w < 1e-5, "{level}: max difference {w}");
    }
}
