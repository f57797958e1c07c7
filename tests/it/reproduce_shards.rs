//! `reproduce --shard K/N` + `codescope merge`: four shards of the bundled samples,
//! merged, give byte for byte the tables of one run over the whole corpus; a missing,
//! repeated, unfinished or foreign shard is refused by name.

use std::path::Path;

use codescope::model::testutil::{write_tiny_model, Tiny};

use crate::cli_sources::{fails, ok, Env};

fn samples() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("assets/samples")
        .display()
        .to_string()
}

#[test]
fn four_merged_shards_equal_one_run() {
    let env = Env::new();
    let model = env.root.join("tiny");
    write_tiny_model(&model, &Tiny::default()).unwrap();
    let model = model.display().to_string();
    let data = samples();
    let run = |out: &Path, shard: Option<&str>| {
        let mut c = env.cmd();
        c.args(["--model", &model, "reproduce", "--data", &data, "--out"])
            .arg(out);
        if let Some(s) = shard {
            c.args(["--shard", s]);
        }
        ok(&c.output().unwrap())
    };
    let whole = env.root.join("whole");
    run(&whole, None);
    let shards: Vec<_> = (1..=4)
        .map(|k| {
            let d = env.root.join(format!("shard{k}"));
            run(&d, Some(&format!("{k}/4")));
            d
        })
        .collect();
    let merged = env.root.join("merged");
    // Shards in another order than their numbers: the sums are exact.
    let mut c = env.cmd();
    c.arg("merge")
        .args([&shards[2], &shards[0], &shards[3], &shards[1]])
        .arg("--out")
        .arg(&merged);
    let table = ok(&c.output().unwrap());
    assert!(table.contains("ast_motif"), "{table}");
    for f in ["scores.csv", "best_heads.csv", "summary.json"] {
        let a = std::fs::read(whole.join(f)).unwrap();
        let b = std::fs::read(merged.join(f)).unwrap();
        assert!(a == b, "{f} differs between one run and the merged shards");
    }
    // Every shard scored a quarter of the corpus, no snippet twice.
    let scored: Vec<u64> = shards
        .iter()
        .map(|d| {
            let v: serde_json::Value =
                serde_json::from_slice(&std::fs::read(d.join("state.json")).unwrap()).unwrap();
            v["scored"].as_u64().unwrap() + v["failed"].as_u64().unwrap()
        })
        .collect();
    let v: serde_json::Value =
        serde_json::from_slice(&std::fs::read(whole.join("summary.json")).unwrap()).unwrap();
    assert_eq!(
        scored.iter().sum::<u64>(),
        v["snippets"].as_u64().unwrap(),
        "{scored:?}"
    );

    // Refusals.
    let merge = |dirs: &[&Path]| {
        let mut c = env.cmd();
        c.arg("merge")
            .args(dirs)
            .arg("--out")
            .arg(env.root.join("x"));
        c.output().unwrap()
    };
    let line = fails(&merge(&[&shards[0], &shards[1], &shards[2]]));
    assert!(line.contains("shard 4/4 is missing"), "{line}");
    let line = fails(&merge(&[&shards[0], &shards[0], &shards[2], &shards[3]]));
    assert!(line.contains("repeats shard 1/4"), "{line}");
    let line = fails(&merge(&[&whole, &shards[1]]));
    assert!(line.contains("not a shard"), "{line}");
    let line = fails(&merge(&[&env.root.join("nowhere")]));
    assert!(line.contains("state.json"), "{line}");
    // A shard of another corpus.
    let other = env.root.join("other");
    let mut c = env.cmd();
    c.args(["--model", &model, "reproduce", "--data"])
        .arg(Path::new(&data).join("python"))
        .args(["--shard", "4/4", "--out"])
        .arg(&other);
    ok(&c.output().unwrap());
    let line = fails(&merge(&[&shards[0], &shards[1], &shards[2], &other]));
    assert!(line.contains("not of"), "{line}");
    // A bad --shard.
    let mut c = env.cmd();
    c.args([
        "--model",
        &model,
        "reproduce",
        "--data",
        &data,
        "--shard",
        "5/4",
    ]);
    let o = c.output().unwrap();
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("not a shard K/N"));
}

/// `probe --shard K/N` traces a share of the corpus; `merge` joins the shards into the
/// feature cache; the next `probe` only trains and reports what one process reports.
#[test]
fn probe_shards_merge_into_the_cache() {
    let env = Env::new();
    let model = env.root.join("tiny");
    write_tiny_model(&model, &Tiny::default()).unwrap();
    let model = model.display().to_string();
    let probe = |extra: &[&str]| {
        let mut c = env.cmd();
        c.args([
            "--model", &model, "probe", "--limit", "12", "--task", "category",
        ])
        .args(extra);
        c.output().unwrap()
    };
    let strip = |out: &str| {
        let mut v: serde_json::Value = serde_json::from_str(out).unwrap();
        for r in v["results"].as_array_mut().unwrap() {
            r.as_object_mut().unwrap().remove("seconds");
        }
        v
    };
    let one = strip(&ok(&probe(&["--no-cache", "--json"])));
    let dirs: Vec<_> = (1..=3)
        .map(|k| {
            let d = env.root.join(format!("pshard{k}"));
            let o = probe(&["--shard", &format!("{k}/3"), "--out", d.to_str().unwrap()]);
            ok(&o);
            assert!(d.join("shard.json").is_file());
            d
        })
        .collect();
    let mut c = env.cmd();
    c.arg("merge").args([&dirs[1], &dirs[2], &dirs[0]]);
    let said = ok(&c.output().unwrap());
    assert!(said.contains("3 probe shards"), "{said}");
    let o = probe(&["--json"]);
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("features from the cache"),
        "the merged shards are found in the cache"
    );
    let merged = strip(&ok(&o));
    assert_eq!(
        one, merged,
        "the merged features give the single run's report"
    );
    // A missing shard.
    let mut c = env.cmd();
    c.arg("merge").args([&dirs[0], &dirs[1]]);
    let line = fails(&c.output().unwrap());
    assert!(line.contains("shard 3/3 is missing"), "{line}");
}
