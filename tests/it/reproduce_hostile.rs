//! `reproduce` checkpoints and shards that were damaged, tampered with or made by
//! another run, through the real binary: `merge` and resume refuse each with one
//! `codescope: error:` line naming what is wrong (exit 1, never a panic): two models
//! with one name but different weights, one corpus path with other contents, another
//! seed, every number of `state.json` out of range or inconsistent, sums at the i128
//! maximum, absurd shard counts (also at the command line), oversized files; probe
//! shards likewise. A shard's strings reach stdout escaped.

use std::path::{Path, PathBuf};

use codescope::model::testutil::{write_tiny_model, Tiny};
use serde_json::Value;

use crate::cli_sources::{fails, ok, Env};

fn samples() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("assets/samples")
}

/// A tiny model at `dir` (replacing what is there), weights drawn with `seed`.
fn tiny(dir: &Path, seed: u64) {
    let _ = std::fs::remove_dir_all(dir);
    write_tiny_model(
        dir,
        &Tiny {
            seed,
            ..Tiny::default()
        },
    )
    .unwrap();
}

fn reproduce(
    env: &Env,
    model: &Path,
    data: &Path,
    out: &Path,
    extra: &[&str],
) -> std::process::Output {
    let mut c = env.cmd();
    c.arg("--model")
        .arg(model)
        .args(["reproduce", "--data"])
        .arg(data)
        .arg("--out")
        .arg(out)
        .args(extra);
    c.output().unwrap()
}

fn merge(env: &Env, dirs: &[&Path]) -> std::process::Output {
    let mut c = env.cmd();
    c.arg("merge")
        .args(dirs)
        .arg("--out")
        .arg(env.root.join("merged"));
    c.output().unwrap()
}

/// The 12-hex-digit digests in `line`.
fn digests(line: &str) -> Vec<&str> {
    line.split(|c: char| !c.is_ascii_hexdigit())
        .filter(|w| w.len() == 12)
        .collect()
}

#[test]
fn merge_and_resume_refuse_a_model_of_the_same_name_with_other_weights() {
    let env = Env::new();
    let model = env.root.join("tiny");
    let data = samples();
    let (s1, s2) = (env.root.join("s1"), env.root.join("s2"));
    tiny(&model, 7);
    ok(&reproduce(&env, &model, &data, &s1, &["--shard", "1/2"]));
    // Other weights under the same directory name (the same --model).
    tiny(&model, 8);
    ok(&reproduce(&env, &model, &data, &s2, &["--shard", "2/2"]));
    let line = fails(&merge(&env, &[&s1, &s2]));
    assert!(line.contains("model files digest"), "{line}");
    let d = digests(&line);
    assert!(d.len() == 2 && d[0] != d[1], "both digests shown: {line}");
    // Resuming shard 1 with the new weights is refused the same way.
    let line = fails(&reproduce(&env, &model, &data, &s1, &["--shard", "1/2"]));
    assert!(
        line.contains("holds another run (model files digest"),
        "{line}"
    );
    // The weights put back and shard 2 redone: the shards of one model merge.
    tiny(&model, 7);
    std::fs::remove_dir_all(&s2).unwrap();
    ok(&reproduce(&env, &model, &data, &s2, &["--shard", "2/2"]));
    ok(&merge(&env, &[&s1, &s2]));
}

#[test]
fn merge_refuses_the_same_corpus_path_with_other_contents() {
    let env = Env::new();
    let model = env.root.join("tiny");
    tiny(&model, 7);
    let corpus = env.root.join("corpus");
    std::fs::create_dir_all(&corpus).unwrap();
    let src = samples().join("python/binary_search.py");
    let text = std::fs::read_to_string(&src).unwrap();
    std::fs::write(corpus.join("a.py"), &text).unwrap();
    let (s1, s2) = (env.root.join("s1"), env.root.join("s2"));
    ok(&reproduce(&env, &model, &corpus, &s1, &["--shard", "1/2"]));
    // The same functions, one name changed: same path, same size, other contents.
    let edited = text.replacen("def ", "def renamed_", 1);
    assert_ne!(edited, text);
    std::fs::write(corpus.join("a.py"), edited).unwrap();
    ok(&reproduce(&env, &model, &corpus, &s2, &["--shard", "2/2"]));
    let line = fails(&merge(&env, &[&s1, &s2]));
    assert!(line.contains("corpus digest"), "{line}");
    let d = digests(&line);
    assert!(d.len() == 2 && d[0] != d[1], "both digests shown: {line}");
    let line = fails(&reproduce(&env, &model, &corpus, &s1, &["--shard", "1/2"]));
    assert!(line.contains("holds another run (corpus digest"), "{line}");
}

#[test]
fn merge_names_the_seed_that_differs() {
    let env = Env::new();
    let model = env.root.join("tiny");
    tiny(&model, 7);
    let data = samples().join("python");
    let (s1, s2) = (env.root.join("s1"), env.root.join("s2"));
    let args = |k: &'static str, seed: &'static str| {
        ["--shard", k, "--rewrite", "rename:shuffle", "--seed", seed]
    };
    ok(&reproduce(&env, &model, &data, &s1, &args("1/2", "0")));
    ok(&reproduce(&env, &model, &data, &s2, &args("2/2", "1")));
    let line = fails(&merge(&env, &[&s1, &s2]));
    assert!(line.contains("(--seed: 1 here, 0 there)"), "{line}");
}

/// Two finished shards of the bundled samples, and the corpus.
fn two_shards(env: &Env) -> (PathBuf, PathBuf, [PathBuf; 2]) {
    let model = env.root.join("tiny");
    tiny(&model, 7);
    let data = samples();
    let dirs = [env.root.join("good1"), env.root.join("good2")];
    for (k, d) in dirs.iter().enumerate() {
        ok(&reproduce(
            env,
            &model,
            &data,
            d,
            &["--shard", &format!("{}/2", k + 1)],
        ));
    }
    (model, data, dirs)
}

/// A copy of shard directory `from` at `to` whose `state.json` is `edit`ed text.
fn tampered(from: &Path, to: &Path, edit: impl Fn(String) -> String) {
    let _ = std::fs::remove_dir_all(to);
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
    }
    let text = std::fs::read_to_string(to.join("state.json")).unwrap();
    let edited = edit(text.clone());
    assert_ne!(edited, text, "the edit changed nothing");
    std::fs::write(to.join("state.json"), edited).unwrap();
}

/// `text` (a JSON object) with its field `key` set to `value` (JSON text), the rest
/// left as written (a `Value` would round the i128 sums).
fn set(text: &str, key: &str, value: &str) -> String {
    let pat = format!("\"{key}\":");
    let start = text.find(&pat).unwrap_or_else(|| panic!("{pat}")) + pat.len();
    let mut values = serde_json::Deserializer::from_str(&text[start..]).into_iter::<Value>();
    values.next().unwrap().unwrap();
    let end = start + values.byte_offset();
    format!("{}{value}{}", &text[..start], &text[end..])
}

/// `text` with the sums rewritten by `f` (on their text, so i128 survives).
fn sums(text: &str, f: impl Fn(Vec<String>) -> Vec<String>) -> String {
    let start = text.find("\"sums\":[").unwrap() + "\"sums\":[".len();
    let end = start + text[start..].find(']').unwrap();
    let v: Vec<String> = text[start..end].split(',').map(str::to_string).collect();
    format!("{}{}{}", &text[..start], f(v).join(","), &text[end..])
}

/// Index of the largest sum (a non-zero one).
fn largest(v: &[String]) -> usize {
    (0..v.len())
        .max_by_key(|&i| v[i].parse::<i128>().unwrap())
        .unwrap()
}

/// An edit of a checkpoint's text.
type Edit = Box<dyn Fn(String) -> String>;

#[test]
fn tampered_checkpoints_are_refused_by_merge_and_by_resume() {
    let env = Env::new();
    let (model, data, [good1, good2]) = two_shards(&env);
    ok(&merge(&env, &[&good1, &good2]));
    let edits: Vec<(&str, Edit, &str)> = vec![
        ("shard index 0", Box::new(|t| set(&t, "shard", r#"{"index":0,"count":2}"#)), "shard 0/2 is not K/N"),
        ("shard index past the count", Box::new(|t| set(&t, "shard", r#"{"index":3,"count":2}"#)), "shard 3/2 is not K/N"),
        (
            "shard count 2^64-1",
            Box::new(|t| set(&t, "shard", r#"{"index":1,"count":18446744073709551615}"#)),
            "<= 65536",
        ),
        ("layers", Box::new(|t| set(&t, "layers", "3")), "sums, not 5 graphs x 9 thresholds x 3 layers"),
        ("heads", Box::new(|t| set(&t, "heads", "1000000")), "sums, not 5 graphs"),
        ("layers 0", Box::new(|t| set(&t, "layers", "0")), "0 layers"),
        ("grid", Box::new(|t| set(&t, "grid", "[0.0,0.5]")), "sums, not 5 graphs x 2 thresholds"),
        ("sums shorter", Box::new(|t| sums(&t, |mut v| { v.pop(); v })), "sums, not 5 graphs"),
        ("empty_gold", Box::new(|t| set(&t, "empty_gold", "[0,0]")), "2 empty-gold counts"),
        ("empty_gold over scored", Box::new(|t| set(&t, "empty_gold", "[99,0,0,0,0]")), "99 snippets with an empty"),
        (
            "a negated sum",
            Box::new(|t| sums(&t, |mut v| { let i = largest(&v); v[i] = format!("-{}", v[i]); v })),
            "is -",
        ),
        (
            "a sum at the i128 maximum",
            Box::new(|t| sums(&t, |mut v| { v[2] = i128::MAX.to_string(); v })),
            "the f1 sum of ast_motif at threshold 0, layer 1, head 1 is 170141183460469231731687303715884105727, outside 0 to",
        ),
        ("next 1e9", Box::new(|t| set(&t, "next", "1000000000")), "next snippet 1000000000 is past the run's"),
        ("scored + failed", Box::new(|t| set(&t, "failed", "5")), "do not add up to next snippet"),
        ("negative seconds", Box::new(|t| set(&t, "seconds", "-1.0")), "-1 seconds"),
        ("format 1", Box::new(|t| set(&t, "format", "1")), "checkpoint format 1 (this codescope reads format 2)"),
        ("not JSON", Box::new(|t| t[..t.len() / 2].to_string()), "not a codescope reproduce checkpoint"),
    ];
    for (what, edit, expect) in &edits {
        let bad = env.root.join("bad");
        tampered(&good1, &bad, edit);
        let line = fails(&merge(&env, &[&bad, &good2]));
        assert!(line.contains(expect), "{what}: {line}");
        assert!(
            line.contains("bad/state.json"),
            "{what} names the file: {line}"
        );
        // Resuming it (the same run's arguments) is refused the same way.
        let line = fails(&reproduce(&env, &model, &data, &bad, &["--shard", "1/2"]));
        assert!(line.contains(expect), "{what} (resume): {line}");
    }
    // Shards whose GED sums are at the i128 maximum, which 2^63 snippets could reach,
    // pass the check; adding them up overflows: an error naming the shard, not a
    // wrapped F1.
    let (maxed1, maxed2) = (env.root.join("maxed1"), env.root.join("maxed2"));
    let at_max = |t: String| {
        let t = set(&t, "total", "18446744073709551614");
        let t = set(&t, "next", "9223372036854775807");
        let t = set(&t, "scored", "9223372036854775807");
        let t = set(&t, "failed", "0");
        sums(&t, |v| {
            (0..v.len())
                .map(|i| {
                    if i % 4 == 3 {
                        i128::MAX.to_string()
                    } else {
                        "0".into()
                    }
                })
                .collect()
        })
    };
    tampered(&good1, &maxed1, at_max);
    tampered(&good2, &maxed2, at_max);
    let line = fails(&merge(&env, &[&maxed1, &maxed2]));
    assert!(
        line.contains("maxed2: adding its sums to the other shards' overflows"),
        "{line}"
    );
    // A whole run's checkpoint with a sum at the maximum is not resumed into an F1 of
    // -7.6e21.
    let whole = env.root.join("whole");
    ok(&reproduce(&env, &model, &data, &whole, &["--limit", "3"]));
    let t = std::fs::read_to_string(whole.join("state.json")).unwrap();
    let t = set(&t, "next", "2");
    let t = set(&t, "scored", "2");
    let t = set(&t, "failed", "0");
    std::fs::write(
        whole.join("state.json"),
        sums(&t, |mut v| {
            v[2] = i128::MAX.to_string();
            v
        }),
    )
    .unwrap();
    let line = fails(&reproduce(&env, &model, &data, &whole, &["--limit", "3"]));
    assert!(line.contains("outside 0 to"), "{line}");
    // A checkpoint past the size limit is not read.
    let big = env.root.join("big");
    tampered(&good1, &big, |t| format!("{t}{}", " ".repeat(64 << 20)));
    let line = fails(&merge(&env, &[&big, &good2]));
    assert!(line.contains("larger than the limit of 64 MiB"), "{line}");
}

#[test]
fn absurd_shard_counts_are_refused_at_the_command_line() {
    let env = Env::new();
    let model = env.root.join("tiny");
    tiny(&model, 7);
    for shard in ["1/18446744073709551615", "1/65537", "0/4", "5/4", "1/0"] {
        for cmd in [
            &["reproduce", "--data", "x"][..],
            &["probe", "--out", "x"][..],
        ] {
            let mut c = env.cmd();
            c.arg("--model")
                .arg(&model)
                .args(cmd)
                .args(["--shard", shard]);
            let o = c.output().unwrap();
            let err = String::from_utf8_lossy(&o.stderr);
            // A usage error (clap's exit status 2), one line saying what is allowed.
            assert_eq!(o.status.code(), Some(2), "{shard}: {err}");
            assert!(!err.contains("panicked"), "{err}");
            assert_eq!(
                err.lines().filter(|l| l.contains("error:")).count(),
                1,
                "{err}"
            );
            assert!(
                err.contains(&format!(
                    "'{shard}' is not a shard K/N with 1 <= K <= N <= 65536"
                )),
                "{err}"
            );
        }
    }
    // The largest count is accepted (most of its shards are empty).
    let out = env.root.join("last");
    ok(&reproduce(
        &env,
        &model,
        &samples(),
        &out,
        &["--shard", "65536/65536"],
    ));
}

#[test]
fn shard_strings_reach_stdout_escaped() {
    let env = Env::new();
    let (_, _, [good1, good2]) = two_shards(&env);
    let evil = "tiny\u{1b}]0;pwned\u{7}\u{202e}";
    let name = serde_json::to_string(evil).unwrap();
    let (e1, e2) = (env.root.join("e1"), env.root.join("e2"));
    tampered(&good1, &e1, |t| set(&t, "model", &name));
    tampered(&good2, &e2, |t| set(&t, "model", &name));
    let o = merge(&env, &[&e1, &e2]);
    let out = ok(&o);
    assert!(
        out.contains("tiny\\u{1b}]0;pwned\\u{7}\\u{202e} on "),
        "{out}"
    );
    let all = format!("{out}{}", String::from_utf8_lossy(&o.stderr));
    assert!(!all.contains('\u{1b}') && !all.contains('\u{7}') && !all.contains('\u{202e}'));
    // In a refusal too (the error line).
    tampered(&good2, &e2, |t| set(&t, "model", "\"other\""));
    let line = fails(&merge(&env, &[&e1, &e2]));
    assert!(
        !line.contains('\u{1b}') && line.contains("\\u{1b}"),
        "{line}"
    );
}

fn probe_shard(env: &Env, model: &Path, k: &str, out: &Path) -> std::process::Output {
    let mut c = env.cmd();
    c.arg("--model")
        .arg(model)
        .args([
            "probe", "--limit", "6", "--task", "category", "--shard", k, "--out",
        ])
        .arg(out);
    c.output().unwrap()
}

#[test]
fn probe_shards_of_other_weights_or_tampered_are_refused() {
    let env = Env::new();
    let model = env.root.join("tiny");
    let (p1, p2) = (env.root.join("p1"), env.root.join("p2"));
    tiny(&model, 7);
    ok(&probe_shard(&env, &model, "1/2", &p1));
    tiny(&model, 8);
    ok(&probe_shard(&env, &model, "2/2", &p2));
    let merge_probe = |dirs: &[&Path]| {
        let mut c = env.cmd();
        c.arg("merge").args(dirs);
        c.output().unwrap()
    };
    let line = fails(&merge_probe(&[&p1, &p2]));
    assert!(line.contains("model files digest"), "{line}");
    assert_eq!(digests(&line).len(), 2, "{line}");
    // Tampered manifests.
    tiny(&model, 7);
    ok(&probe_shard(&env, &model, "2/2", &p2));
    let manifest = std::fs::read_to_string(p1.join("shard.json")).unwrap();
    let v: Value = serde_json::from_str(&manifest).unwrap();
    let with = |key: &str, value: Value| {
        let mut v = v.clone();
        v[key] = value;
        serde_json::to_string(&v).unwrap()
    };
    let cases = [
        (
            with("shard", serde_json::json!({"index": 0, "count": 2})),
            "shard 0/2 is not K/N",
        ),
        (
            with(
                "shard",
                serde_json::json!({"index": 1, "count": 18446744073709551615u64}),
            ),
            "<= 65536",
        ),
        (
            with("snippets", serde_json::json!(18446744073709551615u64)),
            "corpus size",
        ),
        (
            with("layers", serde_json::json!(18446744073709551615u64)),
            "hidden layers",
        ),
        (
            with("format", serde_json::json!("codescope-probe-shard-v1")),
            "shard format codescope-probe-shard-v1",
        ),
        (" ".repeat((1 << 20) + 1), "larger than the limit of 1 MiB"),
    ];
    for (text, expect) in cases {
        std::fs::write(p1.join("shard.json"), &text).unwrap();
        let line = fails(&merge_probe(&[&p2, &p1]));
        assert!(line.contains(expect), "{expect}: {line}");
    }
    // The same numbers in both shards: the features do not hold them.
    let huge = with("snippets", serde_json::json!(18446744073709551615u64));
    std::fs::write(p1.join("shard.json"), &huge).unwrap();
    let mut v2: Value =
        serde_json::from_str(&std::fs::read_to_string(p2.join("shard.json")).unwrap()).unwrap();
    v2["snippets"] = serde_json::json!(18446744073709551615u64);
    std::fs::write(p2.join("shard.json"), v2.to_string()).unwrap();
    let line = fails(&merge_probe(&[&p1, &p2]));
    assert!(line.contains("missing or damaged"), "{line}");
}

/// A probe shard whose feature file is `/dev/zero` (a link to it) or a FIFO no one
/// writes: `merge` says the features are damaged, at once and in bounded memory,
/// instead of reading forever or waiting on the FIFO.
#[cfg(unix)]
#[test]
fn probe_shard_features_that_are_not_files_are_refused_at_once() {
    use std::time::{Duration, Instant};
    let env = Env::new();
    let model = env.root.join("tiny");
    tiny(&model, 7);
    let (p1, p2) = (env.root.join("p1"), env.root.join("p2"));
    ok(&probe_shard(&env, &model, "1/2", &p1));
    ok(&probe_shard(&env, &model, "2/2", &p2));
    let layer = p1.join("features/layer_0.safetensors");
    assert!(layer.is_file(), "{}", layer.display());
    let c_path = std::ffi::CString::new(layer.to_str().unwrap()).unwrap();
    for what in ["/dev/zero", "a FIFO"] {
        std::fs::remove_file(&layer).unwrap();
        if what == "a FIFO" {
            // SAFETY: mkfifo on a NUL-terminated path we own.
            assert_eq!(unsafe { libc::mkfifo(c_path.as_ptr(), 0o600) }, 0);
        } else {
            std::os::unix::fs::symlink("/dev/zero", &layer).unwrap();
        }
        let mut c = env.cmd();
        c.arg("merge").args([&p1, &p2]);
        // Should it read `/dev/zero` after all, it fails at 8 GiB, not with the machine.
        // SAFETY: setrlimit is async-signal-safe; nothing else runs here.
        unsafe {
            std::os::unix::process::CommandExt::pre_exec(&mut c, || {
                let lim = libc::rlimit {
                    rlim_cur: 8 << 30,
                    rlim_max: 8 << 30,
                };
                libc::setrlimit(libc::RLIMIT_AS, &lim);
                Ok(())
            });
        }
        let mut child = c
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let t0 = Instant::now();
        while child.try_wait().unwrap().is_none() {
            if t0.elapsed() > Duration::from_secs(60) {
                let _ = child.kill();
                let _ = child.wait();
                panic!("{what}: merge did not finish in 60 s");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let line = fails(&child.wait_with_output().unwrap());
        assert!(line.contains("missing or damaged"), "{what}: {line}");
    }
}

/// `reproduce` on a full disk (a file-size limit, SIGXFSZ ignored, so writes fail with
/// EFBIG as they do when the disk is full): a failed checkpoint write is one error line
/// naming the checkpoint, the previous checkpoint stays byte for byte, and nothing is
/// left beside it (no 0-byte temporary, no partial table).
#[cfg(unix)]
#[test]
fn a_checkpoint_write_on_a_full_disk_keeps_the_old_one_and_leaves_nothing() {
    let env = Env::new();
    let model = env.root.join("tiny");
    tiny(&model, 7);
    let data = samples();
    let limited = |out: &Path| {
        let mut c = env.cmd();
        c.arg("--model")
            .arg(&model)
            .args(["reproduce", "--limit", "3", "--data"])
            .arg(&data)
            .arg("--out")
            .arg(out);
        crate::cli_sources::with_file_size_limit(&mut c, 1024);
        c.output().unwrap()
    };
    let names = |d: &Path| -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(d)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        v.sort();
        v
    };
    // A fresh run: the first checkpoint cannot be written.
    let fresh = env.root.join("fresh");
    let line = fails(&limited(&fresh));
    assert!(line.contains("state.json"), "{line}");
    assert!(names(&fresh).is_empty(), "{:?}", names(&fresh));
    // A finished run, rerun on the full disk: its checkpoint is rewritten at the end,
    // which fails; the old one is kept whole.
    let done = env.root.join("done");
    ok(&reproduce(&env, &model, &data, &done, &["--limit", "3"]));
    let before = names(&done);
    let state = std::fs::read(done.join("state.json")).unwrap();
    assert!(
        state.len() > 1024,
        "the checkpoint is {} bytes",
        state.len()
    );
    let line = fails(&limited(&done));
    assert!(line.contains("state.json"), "{line}");
    assert_eq!(std::fs::read(done.join("state.json")).unwrap(), state);
    assert_eq!(names(&done), before);
    // With room again, the run resumes from it.
    ok(&reproduce(&env, &model, &data, &done, &["--limit", "3"]));
}
