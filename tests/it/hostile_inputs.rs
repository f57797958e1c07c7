//! Issue #16, the input and process items, against the real binary: endless inputs
//! (`/dev/zero`, `/dev/urandom`, a FIFO fed forever) are refused after reading at most
//! the input limit, with the peak memory of the process measured; closed stdout/stderr
//! pipes do not panic; signals exit with 128 + n; `RUST_BACKTRACE=1` keeps load errors
//! on one line; invalid settings and thresholds are refused by name; a corpus that is
//! not a file says so.

use std::io::Write;
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use codescope::model::testutil::{write_tiny_model, Tiny};

use crate::cli_sources::{fails, ok, Env};

/// Run `cmd` (an `Env` command, logging to `log`) to completion: its output and its
/// peak resident memory in MiB, as the binary logs it when it finishes (`VmHWM`: the
/// child's own; `wait4`'s figure would include the test process it was forked from).
pub(crate) fn run_measured(mut cmd: Command, log: &std::path::Path) -> (Output, u64) {
    let before = std::fs::read_to_string(log).map_or(0, |l| l.len());
    let o = cmd.stdin(Stdio::null()).output().unwrap();
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let mib = text
        .get(before..)
        .unwrap_or("")
        .lines()
        .rev()
        .find_map(|l| l.split("peak_rss_mib=").nth(1))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or_else(|| panic!("no peak_rss_mib in the log:\n{text}"));
    (o, mib)
}

#[test]
fn endless_inputs_are_refused_at_the_limit() {
    let env = Env::new();
    for dev in ["/dev/zero", "/dev/urandom"] {
        let mut c = env.cmd();
        c.args(["syntax", dev]);
        let (o, mib) = run_measured(c, &env.root.join("log.txt"));
        eprintln!("peak RSS {mib} MiB");
        let line = fails(&o);
        assert!(line.contains("1000000-byte limit"), "{dev}: {line}");
        assert!(mib < 64, "{dev}: peak RSS {mib} MiB");
    }
    // A FIFO whose writer never stops.
    let fifo = env.root.join("endless.py");
    let c_path = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: mkfifo on a NUL-terminated path we own.
    assert_eq!(unsafe { libc::mkfifo(c_path.as_ptr(), 0o600) }, 0);
    let f2 = fifo.clone();
    let writer = std::thread::spawn(move || {
        let mut w = std::fs::OpenOptions::new().write(true).open(&f2).unwrap();
        let chunk = "x = 1\n".repeat(10_000);
        // Until the reader goes away (EPIPE).
        while w.write_all(chunk.as_bytes()).is_ok() {}
    });
    let mut c = env.cmd();
    c.arg("syntax").arg(&fifo);
    let (o, mib) = run_measured(c, &env.root.join("log.txt"));
    eprintln!("peak RSS {mib} MiB");
    let line = fails(&o);
    assert!(line.contains("1000000-byte limit"), "fifo: {line}");
    assert!(mib < 64, "fifo: peak RSS {mib} MiB");
    writer.join().unwrap();
}

/// A pipe whose read end is already closed: writes to it fail with EPIPE.
fn closed_pipe() -> std::fs::File {
    let mut fds = [0; 2];
    // SAFETY: pipe() fills two fds we then own.
    assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
    unsafe {
        libc::close(fds[0]);
        <std::fs::File as std::os::fd::FromRawFd>::from_raw_fd(fds[1])
    }
}

#[test]
fn closed_output_pipes_do_not_panic() {
    let env = Env::new();
    // Output to a closed stdout and stderr (`codescope syntax f 2>&1 | head -c 0`): the
    // reader stopped reading; codescope ends quietly.
    let out = closed_pipe();
    let st = env
        .cmd()
        .args(["syntax", "--json"])
        .arg(env.sample())
        .stdout(out.try_clone().unwrap())
        .stderr(out)
        .status()
        .unwrap();
    assert_eq!(st.code(), Some(0), "{st:?}");
    // An error with stderr closed: still exit 1, not a panic (101).
    let st = env
        .cmd()
        .args(["syntax", "/no/such.py"])
        .stdout(Stdio::null())
        .stderr(closed_pipe())
        .status()
        .unwrap();
    assert_eq!(st.code(), Some(1), "{st:?}");
}

#[test]
fn signals_exit_with_128_plus_n() {
    let env = Env::new();
    let sigs = [
        (libc::SIGTERM, "TERM"),
        (libc::SIGHUP, "HUP"),
        (libc::SIGINT, "INT"),
    ];
    for (i, (sig, name)) in sigs.into_iter().enumerate() {
        // `syntax -` waits on a stdin that never ends.
        let mut child = env
            .cmd()
            .args(["syntax", "-"])
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // Signal only once the handler is installed (main logs "started" right after).
        let log = env.root.join("log.txt");
        let t0 = std::time::Instant::now();
        while !std::fs::read_to_string(&log).is_ok_and(|l| l.matches("started").count() > i) {
            assert!(
                t0.elapsed() < Duration::from_secs(30),
                "no start in the log"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        // SAFETY: signalling our own child.
        assert_eq!(unsafe { libc::kill(child.id() as libc::pid_t, sig) }, 0);
        // Keep stdin open while waiting (wait would close it: an empty input, not a signal).
        let stdin = child.stdin.take();
        let o = child.wait_with_output().unwrap();
        drop(stdin);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(128 + sig), "SIG{name}: {err}");
    }
}

#[test]
fn backtrace_setting_keeps_load_errors_on_one_line() {
    let env = Env::new();
    let m = env.root.join("tiny");
    write_tiny_model(&m, &Tiny::default()).unwrap();
    // Weights whose shapes disagree with the config: candle's error, with the backtrace
    // it attaches when RUST_BACKTRACE is set.
    let cfg = m.join("config.json");
    let text = std::fs::read_to_string(&cfg)
        .unwrap()
        .replace("\"intermediate_size\": 64", "\"intermediate_size\": 48");
    assert!(text.contains("48"), "{text}");
    std::fs::write(&cfg, text).unwrap();
    for bt in ["1", "full"] {
        let o = env
            .cmd()
            .env("RUST_BACKTRACE", bt)
            .args(["trace", "--model"])
            .arg(&m)
            .arg(env.sample())
            .output()
            .unwrap();
        let line = fails(&o);
        assert!(line.contains("shape"), "{line}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(err.lines().count(), 1, "RUST_BACKTRACE={bt}:\n{err}");
    }
}

#[test]
fn invalid_settings_and_thresholds_are_refused_by_name() {
    let env = Env::new();
    let m = env.root.join("tiny");
    write_tiny_model(&m, &Tiny::default()).unwrap();
    for bad in ["lots", "-5", "0", "1.5"] {
        let line = fails(
            &env.cmd()
                .env("CODESCOPE_ATTENTION_BUDGET_MB", bad)
                .args(["trace", "--model"])
                .arg(&m)
                .arg(env.sample())
                .output()
                .unwrap(),
        );
        assert!(
            line.contains("CODESCOPE_ATTENTION_BUDGET_MB") && line.contains(bad),
            "{line}"
        );
    }
    // A valid budget still works (64 MiB is plenty for the tiny model).
    ok(&env
        .cmd()
        .env("CODESCOPE_ATTENTION_BUDGET_MB", "64")
        .args(["trace", "--model"])
        .arg(&m)
        .arg(env.sample())
        .output()
        .unwrap());
    for (cmd, t) in [
        ("analyze", "1e308"),
        ("analyze", "-0.1"),
        ("analyze", "nan"),
        ("reproduce", "2"),
    ] {
        let mut c = env.cmd();
        c.args([cmd, &format!("--threshold={t}")]);
        if cmd == "analyze" {
            c.arg(env.sample());
        } else {
            c.args(["--data", "/dev/null"]);
        }
        let o = c.output().unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{cmd} {t}: {err}");
        assert!(err.contains(&format!("{t} is outside [0, 1]")), "{err}");
        assert!(!err.contains("inf is outside"), "{err}");
    }
}

#[test]
fn a_corpus_that_is_not_a_file_says_so() {
    let env = Env::new();
    let line = fails(
        &env.cmd()
            .args(["reproduce", "--data", "/dev/null"])
            .output()
            .unwrap(),
    );
    assert!(
        line.contains("/dev/null") && line.contains("not a regular file"),
        "{line}"
    );
    let line = fails(
        &env.cmd()
            .args(["reproduce", "--data", "/no/such/corpus"])
            .output()
            .unwrap(),
    );
    assert!(line.contains("no such file"), "{line}");
}

/// A full disk (here: a file-size limit, with SIGXFSZ ignored so the write fails with
/// EFBIG as it does on a full disk) never replaces a good figure with a truncated one, and
/// leaves no partial file beside it.
#[cfg(unix)]
#[test]
fn a_failed_figure_write_keeps_the_old_file_and_leaves_nothing() {
    let env = Env::new();
    let model = env.root.join("tiny");
    write_tiny_model(&model, &Tiny::default()).unwrap();
    let out = env.root.join("figs");
    std::fs::create_dir(&out).unwrap();
    for name in ["fig.svg", "fig.png"] {
        let target = out.join(name);
        std::fs::write(&target, b"the good figure").unwrap();
        let mut c = env.cmd();
        c.args(["render", "--model"])
            .arg(&model)
            .arg(env.sample())
            .args(["--view", "heatmap", "--out"])
            .arg(&target);
        crate::cli_sources::with_file_size_limit(&mut c, 2048);
        let line = fails(&c.output().unwrap());
        assert!(line.contains(name), "{line}");
        assert_eq!(
            std::fs::read(&target).unwrap(),
            b"the good figure",
            "{name}"
        );
    }
    let mut names: Vec<String> = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    assert_eq!(names, ["fig.png", "fig.svg"]);
}

/// Files the user did not write are read within a limit: a tour or a session that never
/// ends, giant model configs and tokenizer files are one-line errors naming the limit, in
/// bounded memory; an unparsable `tokenizer_config.json` is an error, not ignored.
#[test]
fn untrusted_files_are_read_within_limits() {
    use codescope::model::testutil::TinyTokenizer;
    let env = Env::new();
    let log = env.root.join("log.txt");
    let measured = |c: Command, what: &str, want: &str| {
        let (o, mib) = run_measured(c, &log);
        let line = fails(&o);
        assert!(line.contains(want), "{what}: {line}");
        assert!(mib < 128, "{what}: peak RSS {mib} MiB");
    };
    let mut c = env.cmd();
    c.args(["render", "--tour", "/dev/zero", "--out"])
        .arg(env.root.join("deck"));
    measured(c, "tour", "the tour is larger than the limit of 16 MiB");
    let mut c = env.cmd();
    c.env("CODESCOPE_SESSION", "/dev/zero").arg("--resume");
    measured(
        c,
        "session",
        "the session is larger than the limit of 16 MiB",
    );
    let sparse = |p: &std::path::Path, mib: u64| {
        let f = std::fs::OpenOptions::new()
            .write(true)
            .truncate(true)
            .create(true)
            .open(p)
            .unwrap();
        f.set_len(mib << 20).unwrap();
    };
    // config.json of 512 MiB (sparse: no disk used).
    let m = env.root.join("cfg");
    write_tiny_model(&m, &Tiny::default()).unwrap();
    sparse(&m.join("config.json"), 512);
    let mut c = env.cmd();
    c.args(["trace", "--model"]).arg(&m).arg(env.sample());
    measured(
        c,
        "config.json",
        "config.json is larger than the limit of 16 MiB",
    );
    // vocab.txt of 512 MiB.
    let m = env.root.join("vocab");
    let tiny = Tiny {
        tokenizer: TinyTokenizer::VocabTxt,
        ..Tiny::default()
    };
    write_tiny_model(&m, &tiny).unwrap();
    let _ = std::fs::remove_file(m.join("tokenizer.json"));
    sparse(&m.join("vocab.txt"), 512);
    let mut c = env.cmd();
    c.args(["trace", "--model"]).arg(&m).arg(env.sample());
    measured(c, "vocab.txt", "over the limit of 256 MiB");
    // A tokenizer_config.json of 512 MiB next to a WordPiece vocabulary: refused at the
    // limit, not read whole and not ignored.
    let m = env.root.join("tkbig");
    write_tiny_model(&m, &tiny).unwrap();
    let _ = std::fs::remove_file(m.join("tokenizer.json"));
    sparse(&m.join("tokenizer_config.json"), 512);
    let mut c = env.cmd();
    c.args(["trace", "--model"]).arg(&m).arg(env.sample());
    measured(
        c,
        "tokenizer_config.json",
        "tokenizer_config.json is larger than the limit of 16 MiB",
    );
    // An unparsable tokenizer_config.json next to a WordPiece vocabulary.
    let m = env.root.join("tkcfg");
    write_tiny_model(&m, &tiny).unwrap();
    let _ = std::fs::remove_file(m.join("tokenizer.json"));
    std::fs::write(m.join("tokenizer_config.json"), b"{ not json").unwrap();
    let line = fails(
        &env.cmd()
            .args(["trace", "--model"])
            .arg(&m)
            .arg(env.sample())
            .output()
            .unwrap(),
    );
    assert!(line.contains("tokenizer_config.json"), "{line}");
}

/// Every CLI number has a range, checked when the arguments are parsed (clap's usage
/// error, exit 2, naming the value and the range) or, where it depends on the model, as
/// one line before any work: no silent default, no panic, no giant allocation.
#[test]
fn cli_numbers_out_of_range_are_refused() {
    let env = Env::new();
    let m = env.root.join("tiny");
    write_tiny_model(&m, &Tiny::default()).unwrap();
    let sample = env.sample();
    let s = sample.to_str().unwrap();
    let out = env.root.join("x.png");
    let o = out.to_str().unwrap();
    let cases: &[(&[&str], &str)] = &[
        (
            &["render", s, "--scale", "0", "--out", o],
            "the scale must be from 0.25 to 4",
        ),
        (
            &["render", s, "--scale", "nan", "--out", o],
            "the scale must be from 0.25 to 4",
        ),
        (
            &["render", s, "--scale", "inf", "--out", o],
            "the scale must be from 0.25 to 4",
        ),
        (
            &["render", s, "--scale", "100", "--out", o],
            "the scale must be from 0.25 to 4",
        ),
        (
            &[
                "render",
                s,
                "--view",
                "screen",
                "--size",
                "65535x65535",
                "--out",
                o,
            ],
            "the size must be 20x10 to 500x300",
        ),
        (
            &[
                "probe",
                "--probe",
                "ast",
                "--ast-rank",
                "18446744073709551615",
            ],
            "the rank must be from 1 to 4096",
        ),
        (
            &["probe", "--structural", "--rank", "100000000"],
            "the rank must be from 1 to 4096",
        ),
        (&["probe", "--rank", "0"], "the rank must be from 1 to 4096"),
    ];
    for (args, want) in cases {
        let out = env
            .cmd()
            .arg("--model")
            .arg(&m)
            .args(*args)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(want), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{err}");
    }
    assert!(!out.exists());
    // Layers and heads that the model does not have: one line, exit 1.
    let line = fails(
        &env.cmd()
            .arg("--model")
            .arg(&m)
            .args(["probe", "--layer", "999"])
            .output()
            .unwrap(),
    );
    assert!(
        line.contains("layer 999 does not exist") && line.contains("0 (embeddings) to 2"),
        "{line}"
    );
    for (flag, v, want) in [
        ("--layer", "99", "layers 1-2"),
        ("--head", "99", "heads 1-4"),
    ] {
        let line = fails(
            &env.cmd()
                .arg("--model")
                .arg(&m)
                .args(["render", s, flag, v, "--out", o])
                .output()
                .unwrap(),
        );
        assert!(line.contains(want), "{line}");
    }
}

/// Code with the code points XML forbids (U+FFFE, U+FFFF) still makes figures: an SVG
/// that parses and a PNG.
#[test]
fn xml_invalid_code_points_make_valid_figures() {
    let env = Env::new();
    let m = env.root.join("tiny");
    write_tiny_model(&m, &Tiny::default()).unwrap();
    let src = env.root.join("odd.py");
    std::fs::write(
        &src,
        "def f(x):\n    s = \"\u{fffe}\u{ffff}\u{fdd0}\u{10ffff}\"\n    return x + s\n",
    )
    .unwrap();
    for view in ["heatmap", "screen"] {
        let svg = env.root.join(format!("{view}.svg"));
        ok(&env
            .cmd()
            .arg("--model")
            .arg(&m)
            .arg("render")
            .arg(&src)
            .args(["--view", view, "--out"])
            .arg(&svg)
            .output()
            .unwrap());
        let text = std::fs::read_to_string(&svg).unwrap();
        for c in ['\u{fffe}', '\u{ffff}', '\u{fdd0}', '\u{10ffff}'] {
            assert!(!text.contains(c), "{view}: {:x} in the SVG", c as u32);
        }
        resvg::usvg::Tree::from_str(&text, &resvg::usvg::Options::default())
            .unwrap_or_else(|e| panic!("{view}: the SVG does not parse: {e}"));
        let png = env.root.join(format!("{view}.png"));
        ok(&env
            .cmd()
            .arg("--model")
            .arg(&m)
            .arg("render")
            .arg(&src)
            .args(["--view", view, "--out"])
            .arg(&png)
            .output()
            .unwrap());
        assert!(std::fs::metadata(&png).unwrap().len() > 100);
    }
}

/// A mistyped command is named, not reported as an unexpected argument: `analyse` is an
/// alias of `analyze`, and a near miss that is no file gets the command it most likely
/// means.
#[test]
fn mistyped_commands_are_suggested() {
    let env = Env::new();
    let m = env.root.join("tiny");
    write_tiny_model(&m, &Tiny::default()).unwrap();
    let out = ok(&env
        .cmd()
        .args(["analyse", "--model"])
        .arg(&m)
        .arg(env.sample())
        .output()
        .unwrap());
    assert!(out.contains("finding"), "{out}");
    let o = env
        .cmd()
        .args(["reproduc", "--data", "x"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("did you mean `codescope reproduce`?"), "{err}");
    // A real file of any name is still a file.
    let f = env.root.join("analyse");
    std::fs::write(&f, "x = 1\n").unwrap();
    let o = env
        .cmd()
        .current_dir(&env.root)
        .args(["syntax", "analyse"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

/// A global option that a subcommand ignores is neither listed in its `--help` nor taken
/// silently: `codescope syntax --model x` is a usage error naming the option and the
/// command (exit 2), wherever on the line it stands; the environment's CODESCOPE_MODEL
/// stays harmless; the commands that use the options still list and take them.
#[test]
fn options_a_command_ignores_are_not_offered_or_taken() {
    let env = Env::new();
    let sample = env.sample();
    let sample = sample.to_str().unwrap();
    let flag = |a: &str| match a {
        "random_weights" => "--random-weights",
        "model" => "--model",
        "stack" => "--stack",
        "weights" => "--weights",
        _ => "--lang",
    };
    let value = |a: &str| match a {
        "random_weights" => "3",
        "model" => "minilm",
        "stack" => "decoder",
        "weights" => "f32",
        _ => "python",
    };
    for (sub, ignored) in codescope::cli::IGNORED_GLOBALS {
        let help = ok(&env.cmd().args([sub, "--help"]).output().unwrap());
        for a in ignored {
            assert!(
                !help.contains(flag(a)),
                "`{sub} --help` lists {}:\n{help}",
                flag(a)
            );
            // After the subcommand, and before it.
            // What the command needs besides (a file, shard directories).
            let rest: &[&str] = match sub {
                "syntax" | "rewrite" => &[sample],
                "merge" => &["a", "b"],
                "cache" => &["verify"],
                _ => &[],
            };
            for mut args in [vec![sub, flag(a), value(a)], vec![flag(a), value(a), sub]] {
                args.extend(rest);
                let o = env.cmd().args(&args).output().unwrap();
                let err = String::from_utf8_lossy(&o.stderr);
                assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
                assert!(
                    err.contains(&format!("{} does nothing for `codescope {sub}`", flag(a))),
                    "{args:?}: {err}"
                );
            }
        }
    }
    // `-m` is `--model` too.
    let o = env
        .cmd()
        .args(["syntax", "-m", "x", sample])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    // The environment's default model does not break a command that ignores it.
    ok(&env
        .cmd()
        .env("CODESCOPE_MODEL", "minilm")
        .args(["syntax", sample])
        .output()
        .unwrap());
    // syntax and rewrite do take --lang; analyze takes all three.
    ok(&env
        .cmd()
        .args(["syntax", "--lang", "python", sample])
        .output()
        .unwrap());
    let help = ok(&env.cmd().args(["analyze", "--help"]).output().unwrap());
    for f in ["--model", "--lang", "--random-weights"] {
        assert!(help.contains(f), "analyze --help lacks {f}");
    }
    let help = ok(&env.cmd().args(["fetch", "--help"]).output().unwrap());
    assert!(
        help.contains("--model") && !help.contains("--lang"),
        "{help}"
    );
}

/// The notices of a run that succeeds quote paths escaped too (the notice path, not only
/// the final error line): a corpus directory and an output directory whose names hold
/// a title change, a clipboard write and a carriage return.
#[test]
fn notices_quote_paths_escaped() {
    let env = Env::new();
    let m = env.root.join("tiny");
    write_tiny_model(&m, &Tiny::default()).unwrap();
    let evil = "x\u{1b}]0;owned\u{7}\u{1b}]52;c;aGk=\u{7}\rok";
    let corpus = env.root.join(format!("corpus{evil}"));
    std::fs::create_dir(&corpus).unwrap();
    std::fs::write(corpus.join("a.py"), "def f(x):\n    return x + 1\n").unwrap();
    let o = env
        .cmd()
        .arg("--model")
        .arg(&m)
        .args(["reproduce", "--data"])
        .arg(&corpus)
        .arg("--out")
        .arg(env.root.join(format!("out{evil}")))
        .output()
        .unwrap();
    ok(&o);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        !err.chars().any(|c| c.is_control() && c != '\n'),
        "raw control text on stderr: {err:?}"
    );
    assert!(
        err.contains("snippets from ") && err.contains("corpusx\\u{1b}]0;owned\\u{7}"),
        "{err}"
    );
    assert!(
        err.contains("tables written to ") && err.contains("\\rok"),
        "{err}"
    );
}

/// A log file that cannot be written (a full disk) costs the log, nothing else: no
/// complaint of the logging library reaches stderr, which in the explorer is the screen
/// (there it overwrote the analysis).
#[cfg(unix)]
#[test]
fn an_unwritable_log_file_stays_off_the_terminal() {
    let env = Env::new();
    let log = env.root.join("log.txt");
    std::fs::write(&log, vec![b'.'; 4096]).unwrap();
    let mut c = env.cmd();
    c.arg("syntax").arg(env.sample());
    crate::cli_sources::with_file_size_limit(&mut c, 1024);
    let o = c.output().unwrap();
    ok(&o);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.is_empty(), "stderr: {err}");
}

/// Numbers that size the work and are not bounded by the model: `knockout --control`
/// (one forward pass per draw; 2^64-1 of them never finished) and `probe --max-pairs`
/// (2^64-1 overflowed computing two thirds of the budget: a panic) are refused when the
/// arguments are parsed (below); the largest budget they allow runs like any other.
#[test]
fn numbers_that_size_the_work_are_bounded() {
    let env = Env::new();
    let m = env.root.join("tiny");
    write_tiny_model(&m, &Tiny::default()).unwrap();
    let out = ok(&env
        .cmd()
        .arg("--model")
        .arg(&m)
        .args(["probe", "--limit", "4", "--max-pairs", "1000000"])
        .output()
        .unwrap());
    assert!(out.contains("layer"), "{out}");
}

/// The same limits as usage errors when the arguments are parsed (exit 2), as for every
/// other CLI number.
#[test]
fn work_sizing_numbers_are_usage_errors() {
    let env = Env::new();
    let sample = env.sample();
    let s = sample.to_str().unwrap();
    // 200 x 100,000 indices today (160 MB); 20,000 of them would be 16 GB.
    let many = vec!["1-100000"; 200].join(",");
    for args in [
        vec!["knockout", "--edges", "syn-id", "--control", "10001", s],
        vec![
            "knockout",
            "--edges",
            "syn-id",
            "--control",
            "18446744073709551615",
            s,
        ],
        vec!["probe", "--max-pairs", "18446744073709551615"],
        vec!["probe", "--dp-max-train", "18446744073709551615"],
        vec!["knockout", "--edges", "syn-id", "--layers", &many, s],
    ] {
        let o = env.cmd().args(&args).output().unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{:?}: {err}", &args[..3]);
        assert!(
            err.contains("must be from") || err.contains("more than 100000"),
            "{:?}: {err}",
            &args[..3]
        );
    }
}
