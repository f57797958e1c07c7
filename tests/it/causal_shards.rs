//! `knockout --data` and `ablate --data` with `--shard K/N --out DIR`, joined by
//! `codescope merge`: the merged JSON, CSV and text are the one-process run's byte for
//! byte (bootstrap intervals included: the shards keep each snippet's values and the
//! bootstrap runs at merge time); shards of another run (seed, control draws, edge sets,
//! model, command), a missing and a repeated shard are refused in one line.

use std::path::{Path, PathBuf};

use crate::cli_sources::{fails, fixture, ok, Env};

const SNIPPETS: [&str; 5] = [
    "def area(w, h):\n    total = w * h\n    return total\n",
    "def scale(v, k):\n    out = v * k\n    return out\n",
    "def twice(x):\n    y = x + x\n    return y\n",
    "def pick(a, b):\n    if a > b:\n        return a\n    return b\n",
    "def count(xs):\n    n = 0\n    for x in xs:\n        n = n + 1\n    return n\n",
];

fn corpus(env: &Env) -> PathBuf {
    let dir = env.root.join("corpus");
    std::fs::create_dir_all(&dir).unwrap();
    for (i, s) in SNIPPETS.iter().enumerate() {
        std::fs::write(dir.join(format!("s{i}.py")), s).unwrap();
    }
    dir
}

/// `codescope --model MODEL ARGS... --data DIR EXTRA...`.
fn run(env: &Env, model: &str, args: &[&str], data: &Path, extra: &[&str]) -> std::process::Output {
    env.cmd()
        .args(["--model", &fixture(model)])
        .args(args)
        .arg("--data")
        .arg(data)
        .args(extra)
        .output()
        .unwrap()
}

fn merge(env: &Env, dirs: &[&Path], extra: &[&str]) -> std::process::Output {
    env.cmd()
        .arg("merge")
        .args(dirs)
        .args(extra)
        .output()
        .unwrap()
}

/// Run `args` whole and in `n` shards; the merge (shards given in reverse order) prints
/// what the whole run prints, in all three forms. Returns the shard directories.
fn shards_equal_one_run(env: &Env, args: &[&str], n: usize, tag: &str) -> Vec<PathBuf> {
    let data = corpus(env);
    let dirs: Vec<PathBuf> = (1..=n)
        .map(|k| {
            let d = env.root.join(format!("{tag}{k}"));
            let sh = format!("{k}/{n}");
            let o = run(
                env,
                "tiny_llama",
                args,
                &data,
                &["--shard", &sh, "--out", d.to_str().unwrap()],
            );
            assert!(o.stdout.is_empty(), "a shard prints nothing on stdout");
            let said = String::from_utf8_lossy(&o.stderr).into_owned();
            assert!(o.status.success(), "{said}");
            assert!(said.contains(&format!("shard {sh}")), "{said}");
            assert!(d.join("causal_shard.json").is_file());
            d
        })
        .collect();
    let rev: Vec<&Path> = dirs.iter().rev().map(PathBuf::as_path).collect();
    for form in [&["--json"][..], &["--csv"], &[]] {
        let whole = ok(&run(env, "tiny_llama", args, &data, form));
        let merged = ok(&merge(env, &rev, form));
        assert!(!whole.is_empty());
        assert_eq!(
            whole, merged,
            "{args:?} {form:?}: merged shards differ from one run"
        );
    }
    dirs
}

#[test]
fn knockout_shards_merge_into_the_one_process_tables() {
    let env = Env::new();
    let args = [
        "knockout",
        "--edges",
        "syn-id,dfg",
        "--control",
        "3",
        "--seed",
        "5",
    ];
    let dirs = shards_equal_one_run(&env, &args, 3, "k");
    // The JSON merged holds rows with bootstrap intervals, not an empty table.
    let v: serde_json::Value = serde_json::from_str(&ok(&merge(
        &env,
        &[&dirs[0], &dirs[1], &dirs[2]],
        &["--json"],
    )))
    .unwrap();
    assert_eq!(v["snippets"].as_u64(), Some(SNIPPETS.len() as u64));
    assert!(v["rows"][0]["diff_lo"].is_f64(), "{v}");

    let data = corpus(&env);
    // The same run but for one option (`args` with `opt`'s value replaced).
    let shard = |name: &str, opt: &str, value: &str| {
        let d = env.root.join(name);
        let mut a: Vec<&str> = args.to_vec();
        let at = a.iter().position(|x| *x == opt).unwrap();
        a[at + 1] = value;
        ok(&run(
            &env,
            "tiny_llama",
            &a,
            &data,
            &["--shard", "3/3", "--out", d.to_str().unwrap()],
        ));
        d
    };
    // Refusals, each in one line naming what differs.
    let line = fails(&merge(&env, &[&dirs[0], &dirs[1]], &[]));
    assert!(line.contains("shard 3/3 is missing"), "{line}");
    let line = fails(&merge(&env, &[&dirs[0], &dirs[0], &dirs[2]], &[]));
    assert!(line.contains("repeats shard 1/3"), "{line}");
    let seed = shard("seed", "--seed", "6");
    let line = fails(&merge(&env, &[&dirs[0], &dirs[1], &seed], &[]));
    assert!(line.contains("--seed: 6 here, 5 there"), "{line}");
    let control = shard("control", "--control", "2");
    let line = fails(&merge(&env, &[&dirs[0], &dirs[1], &control], &[]));
    assert!(line.contains("--control: 2 here, 3 there"), "{line}");
    let d = shard("edges", "--edges", "syn-id");
    let line = fails(&merge(&env, &[&dirs[0], &dirs[1], &d], &[]));
    assert!(
        line.contains("--edges: syn-id here, syn-id,dfg there"),
        "{line}"
    );
    let d = env.root.join("model");
    ok(&run(
        &env,
        "tiny_gpt2",
        &args,
        &data,
        &["--shard", "3/3", "--out", d.to_str().unwrap()],
    ));
    let line = fails(&merge(&env, &[&dirs[0], &dirs[1], &d], &[]));
    assert!(line.contains("is not of the same run"), "{line}");
    let d = env.root.join("four");
    ok(&run(
        &env,
        "tiny_llama",
        &args,
        &data,
        &["--shard", "3/4", "--out", d.to_str().unwrap()],
    ));
    let line = fails(&merge(&env, &[&dirs[0], &dirs[1], &d], &[]));
    assert!(line.contains("is not one of 3 shards"), "{line}");
    // A damaged shard file.
    let d = env.root.join("damaged");
    std::fs::create_dir_all(&d).unwrap();
    std::fs::write(d.join("causal_shard.json"), "{\"format\": 7}").unwrap();
    let line = fails(&merge(&env, &[&dirs[0], &dirs[1], &d], &[]));
    assert!(line.contains("causal_shard.json"), "{line}");
    // --shard needs --data and --out, and prints no table.
    let o = env
        .cmd()
        .args([
            "--model",
            &fixture("tiny_llama"),
            "knockout",
            "--edges",
            "syn-id",
            "--shard",
            "1/2",
        ])
        .arg(data.join("s0.py"))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let o = run(&env, "tiny_llama", &args, &data, &["--shard", "1/2"]);
    assert_eq!(o.status.code(), Some(2));
    let o = run(
        &env,
        "tiny_llama",
        &args,
        &data,
        &["--shard", "1/2", "--out", "x", "--json"],
    );
    assert_eq!(o.status.code(), Some(2));
    let o = run(
        &env,
        "tiny_llama",
        &args,
        &data,
        &["--shard", "3/2", "--out", "x"],
    );
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn ablation_shards_merge_into_the_one_process_tables() {
    let env = Env::new();
    let dirs = shards_equal_one_run(&env, &["ablate", "--seed", "3"], 2, "a");
    let data = corpus(&env);
    // A knockout shard does not join an ablation's.
    let d = env.root.join("knock");
    ok(&run(
        &env,
        "tiny_llama",
        &["knockout", "--edges", "syn-id", "--control", "1"],
        &data,
        &["--shard", "2/2", "--out", d.to_str().unwrap()],
    ));
    let line = fails(&merge(&env, &[&dirs[0], &d], &[]));
    assert!(
        line.contains("command: knockout here, ablate there"),
        "{line}"
    );
    let d = env.root.join("mean");
    ok(&run(
        &env,
        "tiny_llama",
        &["ablate", "--seed", "3", "--ablation", "mean"],
        &data,
        &["--shard", "2/2", "--out", d.to_str().unwrap()],
    ));
    let line = fails(&merge(&env, &[&dirs[0], &d], &[]));
    assert!(line.contains("--ablation: mean here, zero there"), "{line}");
    // --json is for these shards only.
    let o = env
        .cmd()
        .args(["merge", "--json"])
        .arg(env.root.join("nowhere"))
        .output()
        .unwrap();
    let line = fails(&o);
    assert!(line.contains("--json and --csv are for knockout"), "{line}");
}

#[test]
fn patch_shards_merge_into_the_one_process_tables() {
    let env = Env::new();
    let args = ["patch", "--rewrite", "rename:shuffle", "--seed", "2"];
    let dirs = shards_equal_one_run(&env, &args, 3, "p");
    let v: serde_json::Value = serde_json::from_str(&ok(&merge(
        &env,
        &[&dirs[0], &dirs[1], &dirs[2]],
        &["--json"],
    )))
    .unwrap();
    assert_eq!(v["command"], "patch");
    let per = v["per_snippet"].as_array().unwrap();
    assert_eq!(per.len(), SNIPPETS.len(), "every snippet, in corpus order");
    assert!(per.iter().enumerate().all(|(i, p)| p["index"] == i));
    assert!(v["snippets"].as_u64().unwrap() >= 2, "{v}");
    assert!(
        v["per_layer"][1]["classes"][2]["fraction_lo"].is_f64(),
        "{v}"
    );
    let data = corpus(&env);
    let shard = |name: &str, a: &[&str]| {
        let d = env.root.join(name);
        ok(&run(
            &env,
            "tiny_llama",
            a,
            &data,
            &["--shard", "3/3", "--out", d.to_str().unwrap()],
        ));
        d
    };
    let d = shard(
        "neutral",
        &["patch", "--rewrite", "rename:neutral", "--seed", "2"],
    );
    let line = fails(&merge(&env, &[&dirs[0], &dirs[1], &d], &[]));
    assert!(
        line.contains("--rewrite: rename:neutral here, rename:shuffle there"),
        "{line}"
    );
    let d = shard(
        "seed",
        &["patch", "--rewrite", "rename:shuffle", "--seed", "3"],
    );
    let line = fails(&merge(&env, &[&dirs[0], &dirs[1], &d], &[]));
    assert!(line.contains("--seed: 3 here, 2 there"), "{line}");
    let d = shard("ablate", &["ablate", "--seed", "2"]);
    let line = fails(&merge(&env, &[&dirs[0], &dirs[1], &d], &[]));
    assert!(line.contains("command: ablate here, patch there"), "{line}");
    let line = fails(&merge(&env, &[&dirs[0], &dirs[1]], &[]));
    assert!(line.contains("shard 3/3 is missing"), "{line}");
}
