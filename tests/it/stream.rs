//! The layer-by-layer analysis against the in-memory one (issue #18, "Long inputs"):
//! `analysis::run` feeds each layer's attention to the analysis as the forward pass
//! computes it; `analysis::from_trace` gets a finished trace holding every layer. On the
//! bundled samples, with every tiny architecture (BERT, RoBERTa, Llama, Qwen2, GPT-2,
//! Gemma 3, CodeGen, GPTBigCode multi-query and per-head, Qwen3, Mistral, StarCoder2,
//! Gemma 1, Gemma 2, Granite, Phi-3) and the packaged MiniLM, every
//! number must be identical — bit for bit, not within a tolerance: the same kernels run
//! on the same inputs and the sums add in the same order. Also: a layer's attention
//! recomputed from the hidden state entering it equals the full pass's, exactly.

use std::path::Path;
use std::sync::Arc;

use codescope::analysis::{self, AnalyzeOptions, Mode, RunOptions, SnippetAnalysis};
use codescope::model::source::{self, ModelFiles};
use codescope::model::testutil::{write_tiny_model, Tiny};
use codescope::model::{ForwardOptions, LoadedModel};
use codescope::syntax::Language;

use crate::decoder_common::{fixture, DECODERS};

fn fixture_model(name: &str) -> LoadedModel {
    LoadedModel::load(&ModelFiles::from_dir(&fixture(name), name.into()).unwrap()).unwrap()
}

/// Every tiny model, named.
fn tiny_models(dir: &Path) -> Vec<(String, LoadedModel)> {
    write_tiny_model(dir, &Tiny::default()).unwrap();
    let bert = LoadedModel::load(&ModelFiles::from_dir(dir, "tiny".into()).unwrap()).unwrap();
    let mut out = vec![
        ("tiny_bert".to_string(), bert),
        ("tiny_roberta".to_string(), fixture_model("tiny_roberta")),
    ];
    for name in DECODERS {
        out.push((name.to_string(), fixture_model(name)));
    }
    out
}

fn samples() -> Vec<(String, String, Language)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("assets/samples");
    let mut out = Vec::new();
    for (sub, lang) in [("python", Language::Python), ("java", Language::Java)] {
        let mut files: Vec<_> = std::fs::read_dir(root.join(sub))
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        files.sort();
        for f in files {
            let text = std::fs::read_to_string(&f).unwrap();
            out.push((f.file_name().unwrap().to_string_lossy().into(), text, lang));
        }
    }
    assert!(out.len() >= 7, "the bundled samples are there");
    out
}

/// Every number both analyses derive from attention, compared exactly.
fn assert_same(a: &SnippetAnalysis, b: &SnippetAnalysis, ctx: &str) {
    assert_eq!(a.token_attention.tokens, b.token_attention.tokens, "{ctx}");
    assert_eq!(a.trace.truncated, b.trace.truncated, "{ctx}");
    let (ja, jb) = (
        analysis::report::to_json(a).to_string(),
        analysis::report::to_json(b).to_string(),
    );
    assert!(ja == jb, "{ctx}: the analyze JSON differs");
    for g in analysis::Graph::ALL {
        assert_eq!(
            a.relations[&g].scores, b.relations[&g].scores,
            "{ctx} {g:?}"
        );
        let (sa, sb) = (a.sweep.as_ref(), b.sweep.as_ref());
        let (sa, sb) = (&sa.unwrap()[&g], &sb.unwrap()[&g]);
        assert_eq!(sa.len(), sb.len(), "{ctx}");
        for (x, y) in sa.iter().zip(sb) {
            assert_eq!(x.scores, y.scores, "{ctx} {g:?} sweep {}", x.threshold);
        }
    }
    assert_eq!(a.fine, b.fine, "{ctx}");
    assert_eq!(a.coarse, b.coarse, "{ctx}");
    assert_eq!(a.fine_layer, b.fine_layer, "{ctx}");
    assert_eq!(a.fine_all, b.fine_all, "{ctx}");
    assert_eq!(a.entropy, b.entropy, "{ctx}");
    assert_eq!(a.gold_any, b.gold_any, "{ctx}");
}

/// Streamed (kept and results-only) against in-memory, for one model over the samples.
fn check_model(name: &str, m: &LoadedModel) {
    check_model_in(name, m, Mode::Source);
}

fn check_model_in(name: &str, m: &LoadedModel, mode: Mode) {
    let opts = AnalyzeOptions {
        mode,
        threshold: 0.05,
        sweep: true,
    };
    for (file, text, lang) in samples() {
        let ctx = format!("{name} on {file} ({} mode)", mode.name());
        let syn = Arc::new(analysis::parse(&text, lang).unwrap());
        let streamed = analysis::run(m, syn.clone(), &opts, &RunOptions::default()).unwrap();
        let input = analysis::model_input(&syn, opts.mode).unwrap();
        let (input, tokens) = (input.text, input.tokens);
        let trace = m.trace(&input, &ForwardOptions::default()).unwrap();
        assert_eq!(trace.attention.num_layers(), m.info.layers, "{ctx}");
        let in_memory = analysis::from_trace(syn.clone(), tokens, trace, &opts);
        assert!(streamed.token_attention.resident(), "{ctx}");
        // The matrices themselves, bit for bit.
        assert!(
            streamed.token_attention.data == in_memory.token_attention.data,
            "{ctx}: code-token attention differs"
        );
        assert_same(&streamed, &in_memory, &ctx);
        // Results only (the headless `analyze`): the same numbers.
        let ro = RunOptions {
            matrices: analysis::Matrices::IfTheyFit,
            ..Default::default()
        };
        let results = analysis::run(m, syn, &opts, &ro).unwrap();
        assert_same(&results, &in_memory, &format!("{ctx}, results only"));
    }
}

#[test]
fn streamed_analysis_equals_in_memory_on_every_tiny_architecture() {
    let dir = tempfile::tempdir().unwrap();
    for (name, m) in tiny_models(dir.path()) {
        check_model(&name, &m);
        check_model_in(&name, &m, Mode::Paper);
    }
}

#[test]
fn streamed_analysis_equals_in_memory_with_minilm() {
    let files = source::resolve("minilm").unwrap_or_else(|e| {
        panic!("the packaged MiniLM is needed (run .ci/run or `codescope models`): {e}")
    });
    let m = LoadedModel::load(&files).expect("MiniLM loads");
    check_model("minilm", &m);
}

#[test]
fn a_layer_recomputed_from_its_input_equals_the_full_pass() {
    let dir = tempfile::tempdir().unwrap();
    let text = "def total(items):\n    s = 0\n    for x in items:\n        s += x.price * 2\n    return s\n";
    for (name, m) in tiny_models(dir.path()) {
        let t = m
            .trace(
                text,
                &ForwardOptions {
                    hidden: true,
                    ..Default::default()
                },
            )
            .unwrap();
        let ids: Vec<u32> = t.tokens.iter().map(|s| s.id).collect();
        let hidden = t.hidden.as_ref().unwrap();
        for l in 0..m.info.layers {
            let again = m.layer_attention(&ids, l, &hidden.layers[l]).unwrap();
            assert!(
                again == t.attention.layers[l],
                "{name} layer {l}: recomputed attention differs"
            );
        }
        // Bad requests are refused with a message, not a panic.
        let e = m
            .layer_attention(&ids, m.info.layers, &hidden.layers[0])
            .unwrap_err();
        assert!(e.to_string().contains("does not exist"), "{e}");
        let e = m
            .layer_attention(&ids, 0, &hidden.layers[0][1..])
            .unwrap_err();
        assert!(e.to_string().contains("hidden state"), "{e}");
    }
}

#[test]
fn the_attention_sink_gets_every_layer_in_order_and_the_capture_none() {
    let dir = tempfile::tempdir().unwrap();
    let text = "x = [a + b for a, b in pairs]\n";
    for (name, m) in tiny_models(dir.path()) {
        let full = m.trace(text, &ForwardOptions::default()).unwrap();
        let seen = std::sync::Mutex::new(Vec::new());
        let sink = |l: usize, a: Vec<f32>| {
            seen.lock().unwrap().push((l, a));
            Ok(())
        };
        let t = m
            .trace(
                text,
                &ForwardOptions {
                    on_attention: Some(&sink),
                    ..Default::default()
                },
            )
            .unwrap();
        assert!(t.attention.layers.is_empty(), "{name}");
        let seen = seen.into_inner().unwrap();
        let order: Vec<usize> = seen.iter().map(|(l, _)| *l).collect();
        assert_eq!(order, (0..m.info.layers).collect::<Vec<_>>(), "{name}");
        for (l, a) in seen {
            assert!(a == full.attention.layers[l], "{name} layer {l}");
        }
        // An error from the sink stops the pass with that error.
        let fail = |l: usize, _: Vec<f32>| {
            if l == 0 {
                Err(codescope::Error::Compute("stop here".into()))
            } else {
                Ok(())
            }
        };
        let e = m
            .trace(
                text,
                &ForwardOptions {
                    on_attention: Some(&fail),
                    ..Default::default()
                },
            )
            .unwrap_err();
        assert!(e.to_string().contains("stop here"), "{name}: {e}");
    }
}

/// The explorer on an analysis that kept no matrices (what a long input gives: the hidden
/// state entering each layer instead, scores on the threshold grid) asks the worker for
/// the layer it shows, and then shows exactly the matrices the whole analysis holds.
#[test]
fn the_explorer_recomputes_the_layer_it_shows_when_the_matrices_were_not_kept() {
    use crate::tui_common::{model, ready, resettle, screen, serve, typed, SAMPLE};
    use codescope::tui::msg::{Effect, Msg, WorkerMsg};
    let mut app = ready(SAMPLE, 120, 40);
    let (req, full) = app.shown.data.clone().unwrap();
    assert!(full.token_attention.resident());
    let m = model();
    let opts = AnalyzeOptions {
        mode: full.mode,
        threshold: full.threshold,
        sweep: true,
    };
    let mut a = analysis::run(m, full.syntax.clone(), &opts, &RunOptions::default()).unwrap();
    let input = analysis::model_input(&full.syntax, full.mode).unwrap().text;
    let t = m
        .trace(
            &input,
            &ForwardOptions {
                hidden: true,
                ..Default::default()
            },
        )
        .unwrap();
    let mut hidden = t.hidden.unwrap().layers;
    hidden.truncate(m.info.layers);
    a.layer_inputs = Some(Arc::new(analysis::LayerInputs {
        ids: t.tokens.iter().map(|s| s.id).collect(),
        hidden,
        agg: analysis::attention::Aggregator::new(t.tokens.len(), &a.alignment),
    }));
    a.token_attention.data = Vec::new();
    assert!(!a.token_attention.resident());
    let fx = app.update(Msg::Worker(WorkerMsg::Analysed {
        req,
        data: Arc::new(a),
    }));
    assert!(
        fx.iter()
            .any(|e| matches!(e, Effect::Layer(k, _) if *k == (req, 0))),
        "{fx:?}"
    );
    assert!(
        app.matrix().is_none(),
        "nothing to show before the layer arrives"
    );
    assert!(
        screen(&app).contains("computing layer 1"),
        "{}",
        screen(&app)
    );
    serve(&mut app, fx);
    let (l, h) = (app.view.layer, app.view.head);
    assert_eq!(*app.matrix().unwrap(), full.token_attention.head(l, h));
    // Another layer: asked once, then shown exactly, every head and the mean.
    app.view.layer = 2;
    resettle(&mut app);
    for h in 0..m.info.heads {
        assert_eq!(
            app.head_matrix(2, h).unwrap(),
            full.token_attention.head(2, h)
        );
    }
    typed(&mut app, "a");
    assert!(app.view.mean);
    assert_eq!(*app.matrix().unwrap(), full.token_attention.head_mean(2));
    // Other thresholds come from the grid: the same scores as the whole matrices give.
    let fx = typed(&mut app, "T");
    serve(&mut app, fx);
    let want = full.scores_at(app.threshold());
    for (g, s) in &app.shown.scores {
        assert_eq!(s.scores, want[g].scores, "{g:?}");
        assert!((s.threshold - app.threshold()).abs() < 1e-6);
    }
    // The overview and compare mode say why they cannot, without panicking.
    let fx = typed(&mut app, "o");
    serve(&mut app, fx);
    let _ = screen(&app);
}
