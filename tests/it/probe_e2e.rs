//! End-to-end probe runs with a tiny random model on bundled functions: shapes, sizes,
//! JSON fields and the feature cache (not accuracy).

use codescope::model::testutil::{write_tiny_model, Tiny};
use codescope::model::{source, LoadedModel};
use codescope::probe::{self, bundled, PairFeatures, ProbeKind, RunSpec, Split, Task};

fn tiny() -> (tempfile::TempDir, LoadedModel) {
    let dir = tempfile::tempdir().unwrap();
    write_tiny_model(dir.path(), &Tiny::default()).unwrap();
    let files = source::resolve(dir.path().to_str().unwrap()).unwrap();
    (dir, LoadedModel::load(&files).unwrap())
}

fn spec<'a>(
    m: &'a LoadedModel,
    snippets: &'a [codescope::corpus::Snippet],
    cache: Option<std::path::PathBuf>,
) -> RunSpec<'a> {
    RunSpec {
        model: m,
        snippets,
        corpus_name: "bundled (test)".into(),
        tasks: Task::ALL.to_vec(),
        kind: ProbeKind::Linear,
        protocol: Default::default(),
        split: Split::Snippet,
        pair_features: PairFeatures::Diff,
        seed: 3,
        max_pairs: 20,
        dfg_graph: codescope::syntax::Graph::Dfg,
        test_fraction: 0.25,
        layers: None,
        cache_root: cache,
        train: probe::TrainOptions {
            max_epochs: 5,
            ..Default::default()
        },
        structural: None,
        cancel: None,
    }
}

#[test]
fn probe_run_on_bundled_functions_with_a_tiny_model() {
    let (_d, m) = tiny();
    let mut snippets = bundled::snippets(Some(codescope::syntax::Language::Python));
    snippets.truncate(10);
    let java = bundled::snippets(Some(codescope::syntax::Language::Java));
    snippets.extend(java.into_iter().take(4));
    let cache = tempfile::tempdir().unwrap();
    let mut traced = 0;
    let mut fitted = 0;
    let r = probe::run(
        &spec(&m, &snippets, Some(cache.path().into())),
        &mut |p| match p {
            probe::Progress::Traced { .. } => traced += 1,
            probe::Progress::Fitted { .. } => fitted += 1,
            probe::Progress::Cached => panic!("cold cache"),
            probe::Progress::Structural(_) => panic!("not requested"),
        },
    )
    .unwrap();
    assert_eq!(traced, snippets.len());
    let layers = m.info.layers + 1;
    assert_eq!(
        r.results.len(),
        Task::ALL.len() * layers,
        "every task at every layer"
    );
    assert_eq!(fitted, r.results.len());
    for x in &r.results {
        assert!(x.layer < layers);
        assert!(x.train_size > 0 && x.test_size > 0, "{x:?}");
        assert!((0.0..=1.0).contains(&x.accuracy) && (0.0..=1.0).contains(&x.control_accuracy));
        assert!((x.selectivity - (x.accuracy - x.control_accuracy)).abs() < 1e-12);
        assert!(x.clusters.is_none());
    }
    // Same task, same sizes at every layer.
    let cat: Vec<_> = r.results.iter().filter(|x| x.task == "category").collect();
    assert!(cat.windows(2).all(|w| w[0].train_size == w[1].train_size));
    let v = serde_json::to_value(&r).unwrap();
    assert_eq!(v["corpus"]["snippets"], snippets.len());
    assert_eq!(v["model"]["layers"], m.info.layers);
    let first = &v["results"][0];
    for key in [
        "task",
        "probe",
        "layer",
        "accuracy",
        "control_accuracy",
        "selectivity",
        "clusters",
        "train_size",
        "test_size",
        "seconds",
    ] {
        assert!(first.get(key).is_some(), "missing {key}");
    }
    assert!(first["clusters"].is_null());
    assert_eq!(first["layer"], 0);
    assert!(probe::table(&r).contains("category"));
    assert!(r.structural.is_empty());
    assert_eq!(probe::csv(&r).lines().count(), r.results.len() + 1);

    // Warm cache: same features, same results (up to timing).
    let mut cached = false;
    let r2 = probe::run(&spec(&m, &snippets, Some(cache.path().into())), &mut |p| {
        if let probe::Progress::Cached = p {
            cached = true;
        }
    })
    .unwrap();
    assert!(cached);
    for (a, b) in r.results.iter().zip(&r2.results) {
        assert_eq!(
            (a.accuracy, a.control_accuracy),
            (b.accuracy, b.control_accuracy)
        );
    }
    // A changed corpus misses the cache.
    snippets[0].code.push_str("\n# changed");
    let mut cached = false;
    probe::run(
        &RunSpec {
            tasks: vec![Task::Category],
            layers: Some(vec![0]),
            ..spec(&m, &snippets, Some(cache.path().into()))
        },
        &mut |p| {
            if let probe::Progress::Cached = p {
                cached = true;
            }
        },
    )
    .unwrap();
    assert!(!cached);
}

#[test]
fn features_drop_tokens_beyond_the_window() {
    let (_d, m) = tiny();
    let long = format!(
        "def f():\n{}",
        (0..200)
            .map(|i| format!("    x{i} = {i}\n"))
            .collect::<String>()
    );
    let syn = codescope::syntax::parse(&long, codescope::syntax::Language::Python).unwrap();
    let h = probe::dataset::snippet_hidden(&m, &syn).unwrap();
    assert!(!h.tokens.is_empty() && h.tokens.len() < syn.tokens.len());
    assert_eq!(h.layers.len(), m.info.layers + 1);
    assert_eq!(h.layers[0].len(), h.tokens.len() * m.info.hidden_size);
    assert!(h.tokens.windows(2).all(|w| w[0] < w[1]));
}

#[test]
fn structural_probe_reports_every_layer() {
    let (_d, m) = tiny();
    let mut snippets = bundled::snippets(Some(codescope::syntax::Language::Python));
    snippets.truncate(12);
    let r = probe::run(
        &RunSpec {
            tasks: vec![],
            structural: Some(probe::structural::StructuralOptions {
                rank: 8,
                max_epochs: 3,
                ..Default::default()
            }),
            ..spec(&m, &snippets, None)
        },
        &mut |_| {},
    )
    .unwrap();
    assert!(r.results.is_empty());
    assert_eq!(r.structural.len(), m.info.layers + 1);
    for x in &r.structural {
        assert!((-1.0..=1.0).contains(&x.spearman) && (0.0..=1.0).contains(&x.uuas));
        assert_eq!(x.train_snippets + x.test_snippets, 12);
    }
    let v = serde_json::to_value(&r).unwrap();
    assert_eq!(v["structural"][0]["rank"], 8);
}

#[test]
fn a_cancel_hook_stops_the_run() {
    let (_d, m) = tiny();
    let mut snippets = bundled::snippets(None);
    snippets.truncate(3);
    let stop = || true;
    let r = probe::run(
        &RunSpec {
            cancel: Some(&stop),
            ..spec(&m, &snippets, None)
        },
        &mut |_| {},
    );
    assert!(matches!(r, Err(codescope::Error::Cancelled)));
}

#[test]
fn ast_probe_reports_every_layer() {
    let (_d, m) = tiny();
    let mut snippets = bundled::snippets(Some(codescope::syntax::Language::Python));
    snippets.truncate(16);
    let java = bundled::snippets(Some(codescope::syntax::Language::Java));
    snippets.extend(java.into_iter().take(6));
    let mut fitted = 0;
    let base = spec(&m, &snippets, None);
    let r = probe::run(
        &RunSpec {
            kind: ProbeKind::Ast,
            train: probe::TrainOptions {
                ast: probe::astprobe::AstOptions {
                    fit: probe::astprobe::train::FitOptions {
                        rank: 8,
                        max_epochs: 3,
                        min_steps: 4,
                        ..Default::default()
                    },
                    ..Default::default()
                },
                ..base.train
            },
            ..base
        },
        &mut |p| {
            if let probe::Progress::Fitted { result, .. } = p {
                assert_eq!(result.task, "ast");
                fitted += 1;
            }
        },
    )
    .unwrap();
    let layers = m.info.layers + 1;
    assert_eq!(r.ast.len(), layers);
    assert_eq!(r.results.len(), layers, "one row per layer, no task rows");
    assert_eq!(fitted, layers);
    for (x, a) in r.results.iter().zip(&r.ast) {
        assert_eq!((x.task.as_str(), x.probe.as_str()), ("ast", "ast"));
        assert_eq!(x.layer, a.layer);
        assert_eq!(
            (x.accuracy, x.control_accuracy),
            (a.scores.f1, a.control.f1)
        );
        assert_eq!(x.majority, a.majority_f1);
        assert_eq!(a.rank, 8);
        assert_eq!(a.train_snippets + a.test_snippets, 22);
        assert!(a.probe.is_some());
        for s in [&a.scores, &a.control] {
            for v in [s.precision, s.recall, s.f1, s.c_accuracy, s.u_accuracy] {
                assert!((0.0..=1.0).contains(&v), "{s:?}");
            }
            assert!((-1.0..=1.0).contains(&s.d_spearman));
        }
    }
    let v = serde_json::to_value(&r).unwrap();
    let first = &v["ast"][0];
    for key in [
        "layer",
        "rank",
        "precision",
        "recall",
        "f1",
        "d_spearman",
        "c_accuracy",
        "u_accuracy",
        "control",
        "majority_f1",
        "train_snippets",
        "test_snippets",
        "epochs",
        "seconds",
    ] {
        assert!(first.get(key).is_some(), "missing {key}");
    }
    assert!(first["control"].get("f1").is_some());
    assert!(
        first.get("probe").is_none(),
        "the fitted probe is not serialized"
    );
    let csv = probe::csv(&r);
    let header: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
    assert_eq!(header.len(), 21);
    assert_eq!(header[11], "precision");
    assert_eq!(header[20], "control_u_accuracy");
    assert!(csv.lines().skip(1).all(|l| l.split(',').count() == 21));
    assert!(probe::table(&r).contains("AST-Probe (rank 8"));

    // A rebuilt tree from the fitted probe for a new snippet.
    let probe_l0 = r.ast[0].probe.as_ref().unwrap();
    let syn = codescope::syntax::parse(&snippets[0].code, snippets[0].language).unwrap();
    let h = probe::dataset::snippet_hidden(&m, &syn).unwrap();
    let e = probe_l0.predict(&h.layers[0]).unwrap();
    assert_eq!(e.len(), h.tokens.len());
    assert!(probe::astprobe::tree::rebuild(&e).is_some());

    // Other probes' JSON has no `ast` key (unchanged shape).
    let plain = probe::run(
        &RunSpec {
            tasks: vec![Task::Category],
            layers: Some(vec![0]),
            ..spec(&m, &snippets, None)
        },
        &mut |_| {},
    )
    .unwrap();
    assert!(serde_json::to_value(&plain).unwrap().get("ast").is_none());
    assert!(!probe::csv(&plain).contains("precision"));
}
