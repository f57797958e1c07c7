//! `knockout FILE --probe TASK --probe-layer L`: a token probe trained as `codescope probe`
//! trains it (no intervention), read on the file's code tokens with and without the
//! knockout and under the matched control.
//! - its predictions are those of the same probe (trained again here, in-process) applied
//!   to the hidden states of the model's own traced passes: unmodified through
//!   `analysis::hidden::hidden_states` (the probe's feature path), knocked out through a
//!   trace with the blocked subword pairs built here from the tokenizer's alignment;
//! - an edge set empty on the snippet gives exactly the unmodified accuracy;
//! - the packaged MiniLM (no masked-LM head) runs it through the binary;
//! - pair tasks, paper mode, models measured in bits and a layer out of range are one-line
//!   errors.

use codescope::analysis;
use codescope::model::{self, ForwardOptions, Intervention, Knockout, LoadedModel};
use codescope::probe::{self, Task};
use codescope::syntax::{self, Language};
use serde_json::Value;

use crate::cli_sources::{fails, fixture, ok, Env, BIN};

/// No identifier: `not-id-id` blocks every pair of code tokens, `id-id` none.
const NO_IDS: &str = "1 + 2 * (3 - 4) // 5\n";
const LIMIT: usize = 10;

fn knockout(env: &Env, model: &str, file: &std::path::Path, edges: &str) -> Value {
    let o = env
        .cmd()
        .args([
            "--model",
            model,
            "knockout",
            "--edges",
            edges,
            "--control",
            "3",
        ])
        .args(["--probe", "category", "--probe-layer", "1"])
        .args(["--probe-limit", &LIMIT.to_string(), "--json"])
        .arg(file)
        .output()
        .unwrap();
    serde_json::from_str(&ok(&o)).unwrap()
}

/// The same probe as the binary trains (bundled corpus, first `LIMIT` snippets).
fn train(m: &LoadedModel) -> std::sync::Arc<probe::train::Classifier> {
    let mut snippets = probe::bundled::snippets(None);
    snippets.truncate(LIMIT);
    let spec = probe::RunSpec {
        tasks: vec![Task::Category],
        layers: Some(vec![1]),
        ..probe::RunSpec::new(m, &snippets, "bundled probe corpus".into())
    };
    let r = probe::run(&spec, &mut |_| {}).unwrap();
    r.probes[0].classifier.clone()
}

fn predictions(
    clf: &probe::train::Classifier,
    syn: &syntax::Syntax,
    h: &analysis::hidden::SnippetHidden,
) -> Vec<Option<(usize, usize)>> {
    let labels = probe::dataset::label_snippet(
        Task::Category,
        syn,
        &h.tokens,
        0,
        0,
        &mut probe::Rng::new(0),
    );
    let dim = h.layers[1].len() / h.tokens.len();
    let mut out = vec![None; syn.tokens.len()];
    for e in labels {
        let x = &h.layers[1][e.a * dim..(e.a + 1) * dim];
        out[h.tokens[e.a]] = Some((e.label, clf.predict(x).unwrap()));
    }
    out
}

#[test]
fn the_probe_under_a_knockout_is_the_probe_on_the_traced_passes() {
    let env = Env::new();
    let f = env.root.join("s.py");
    std::fs::write(&f, NO_IDS).unwrap();
    let v = knockout(&env, &fixture("tiny_bart"), &f, "not-id-id");
    assert_eq!(v["measure"], "one_minus_cos");
    // The model object has its shape of its own (every command's).
    let mut shape = v.clone();
    shape.as_object_mut().unwrap().remove("model");
    let missing = crate::json_convention::undocumented(&shape, "`knockout --json`:");
    assert!(
        missing.is_empty(),
        "knockout --probe fields not in the README: {missing:?}"
    );
    let p = &v["probe"];
    assert_eq!(
        (p["task"].as_str(), p["layer"].as_u64()),
        (Some("category"), Some(1))
    );
    assert_eq!(p["snippets"].as_u64(), Some(LIMIT as u64));
    assert!(p["test_accuracy"].as_f64().is_some(), "{p}");

    // In-process: the same probe on the traced passes.
    let m = LoadedModel::load(&model::source::resolve(&fixture("tiny_bart")).unwrap()).unwrap();
    let clf = train(&m);
    let syn = syntax::parse(NO_IDS, Language::Python).unwrap();
    let base = predictions(
        &clf,
        &syn,
        &analysis::hidden::hidden_states(&m, &syn).unwrap(),
    );
    // Every subword pair of two different code tokens, specials aside.
    let enc = m.encode(NO_IDS, m.info.window).unwrap();
    let al = analysis::align_subwords(&enc.tokens, &syn.tokens);
    let subs = &al.token_to_subwords;
    let mut rows = vec![Vec::new(); enc.ids.len()];
    for (q, sq) in subs.iter().enumerate() {
        for (k, sk) in subs.iter().enumerate() {
            for &i in sq.iter().filter(|_| q != k) {
                for &j in sk {
                    if i != j && !enc.tokens[i].special && !enc.tokens[j].special {
                        rows[i].push(j as u32);
                    }
                }
            }
        }
    }
    for r in &mut rows {
        r.sort_unstable();
        r.dedup();
    }
    assert_eq!(
        rows.iter().map(Vec::len).sum::<usize>() as u64,
        v["blocked"]["subword_pairs"].as_u64().unwrap()
    );
    let iv = Intervention {
        knockout: Some(Knockout {
            layers: vec![true; m.info.layers],
            heads: vec![true; m.info.heads],
            rows,
        }),
        ablate: Vec::new(),
    };
    let discard = |_: usize, _: Vec<f32>| Ok(());
    let t = m
        .trace(
            NO_IDS,
            &ForwardOptions {
                hidden: true,
                on_attention: Some(&discard),
                intervention: Some(&iv),
                ..Default::default()
            },
        )
        .unwrap();
    let knocked = predictions(
        &clf,
        &syn,
        &analysis::hidden::token_hidden(&t, &syn.tokens).unwrap(),
    );
    let classes = Task::Category.classes();
    let tokens = v["tokens"].as_array().unwrap();
    for (i, t) in tokens.iter().enumerate() {
        let (g, b) = base[i].unwrap();
        let (g2, k) = knocked[i].unwrap();
        assert_eq!(g, g2);
        assert_eq!(t["probe_gold"], classes[g].as_str(), "{t}");
        assert_eq!(t["probe_predicted"], classes[b].as_str(), "{t}");
        assert_eq!(t["probe_predicted_knocked"], classes[k].as_str(), "{t}");
    }
    // The accuracies are the predictions' hit rates, overall and per gold class.
    let rows = p["classes"].as_array().unwrap();
    assert_eq!(rows[0]["class"], "all");
    assert_eq!(rows.len(), classes.len() + 1);
    for (r, row) in rows.iter().enumerate() {
        let of = |pred: &[Option<(usize, usize)>]| {
            let hits: Vec<bool> = pred
                .iter()
                .flatten()
                .filter(|(g, _)| r == 0 || *g == r - 1)
                .map(|(g, p)| g == p)
                .collect();
            (hits.len(), hits.iter().filter(|&&h| h).count())
        };
        let ((n, hb), (_, hk)) = (of(&base), of(&knocked));
        assert_eq!(row["examples"].as_u64(), Some(n as u64), "{row}");
        if n == 0 {
            assert!(
                row["accuracy"].is_null() && row["control"].is_null(),
                "{row}"
            );
            continue;
        }
        let close =
            |x: &Value, want: usize| (x.as_f64().unwrap() - want as f64 / n as f64).abs() < 1e-6;
        assert!(close(&row["accuracy"], hb), "{row}");
        assert!(close(&row["accuracy_knocked"], hk), "{row}");
    }
    // Every pair is blocked and no pair is left for a control draw.
    assert!(rows[0]["control"].is_null(), "{}", rows[0]);

    // An empty edge set: the knocked accuracy is the unmodified one, exactly.
    let v = knockout(&env, &fixture("tiny_bart"), &f, "id-id");
    assert_eq!(v["blocked"]["token_pairs"], 0);
    for row in v["probe"]["classes"].as_array().unwrap() {
        assert_eq!(row["accuracy"], row["accuracy_knocked"], "{row}");
    }
    for (a, b) in v["tokens"].as_array().unwrap().iter().zip(tokens) {
        assert_eq!(a["probe_predicted_knocked"], b["probe_predicted"]);
    }

    // CSV and text carry it too.
    let o = env
        .cmd()
        .args([
            "--model",
            &fixture("tiny_bart"),
            "knockout",
            "--edges",
            "syn-syn",
        ])
        .args([
            "--probe",
            "category",
            "--probe-layer",
            "1",
            "--probe-limit",
            "10",
            "--control",
            "2",
            "--csv",
        ])
        .arg(&f)
        .output()
        .unwrap();
    let csv = ok(&o);
    assert!(
        csv.starts_with(
            "index,text,category,coarse,start,end,bits,bits_knocked,delta,probe_gold,probe_predicted,probe_predicted_knocked\n"
        ),
        "{csv}"
    );
    let o = env
        .cmd()
        .args([
            "--model",
            &fixture("tiny_bart"),
            "knockout",
            "--edges",
            "syn-syn",
        ])
        .args([
            "--probe",
            "category",
            "--probe-layer",
            "1",
            "--probe-limit",
            "10",
            "--control",
            "2",
        ])
        .arg(&f)
        .output()
        .unwrap();
    let text = ok(&o);
    assert!(
        text.contains("probe category at layer 1 (trained on 10 snippets"),
        "{text}"
    );
}

#[test]
fn the_packaged_minilm_reads_a_probe_under_a_knockout() {
    let d = tempfile::tempdir().unwrap();
    let f = d.path().join("s.py");
    std::fs::write(&f, "def area(w, h):\n    total = w * h\n    return total\n").unwrap();
    let o = std::process::Command::new(BIN)
        .env("HF_HUB_OFFLINE", "1")
        .env("CODESCOPE_LOG_FILE", d.path().join("log"))
        .args([
            "--model",
            "minilm",
            "knockout",
            "--edges",
            "syn-id",
            "--control",
            "2",
        ])
        .args([
            "--probe",
            "category",
            "--probe-layer",
            "3",
            "--probe-limit",
            "6",
            "--json",
        ])
        .arg(&f)
        .output()
        .unwrap();
    let v: Value = serde_json::from_str(&ok(&o))
        .unwrap_or_else(|e| panic!("the packaged MiniLM is needed (run .ci/run): {e}"));
    assert_eq!(v["measure"], "one_minus_cos");
    let all = &v["probe"]["classes"][0];
    assert_eq!(all["class"], "all");
    assert!(all["examples"].as_u64().unwrap() > 10, "{all}");
    for k in ["accuracy", "accuracy_knocked"] {
        let a = all[k].as_f64().unwrap();
        assert!((0.0..=1.0).contains(&a), "{all}");
    }
    let c = &all["control"];
    assert!(
        c["lo"].as_f64().unwrap() <= c["mean"].as_f64().unwrap(),
        "{all}"
    );
}

#[test]
fn probe_misuses_are_one_line_errors() {
    let env = Env::new();
    let f = env.root.join("s.py");
    std::fs::write(&f, NO_IDS).unwrap();
    let run = |model: &str, extra: &[&str]| {
        env.cmd()
            .args([
                "--model",
                &fixture(model),
                "knockout",
                "--edges",
                "syn-id",
                "--control",
                "1",
            ])
            .args(extra)
            .arg(&f)
            .output()
            .unwrap()
    };
    let line = fails(&run("tiny_bart", &["--probe", "dfg"]));
    assert!(line.contains("labels token pairs"), "{line}");
    let line = fails(&run("tiny_bart", &["--probe", "depth", "--mode", "paper"]));
    assert!(line.contains("drop --mode paper"), "{line}");
    let line = fails(&run("tiny_llama", &["--probe", "category"]));
    assert!(line.contains("1 - cos"), "{line}");
    let line = fails(&run(
        "tiny_bart",
        &["--probe", "category", "--probe-layer", "99"],
    ));
    assert!(line.contains("layer 99 does not exist"), "{line}");
    // --probe-layer needs --probe.
    assert_eq!(
        run("tiny_bart", &["--probe-layer", "1"]).status.code(),
        Some(2)
    );
}
