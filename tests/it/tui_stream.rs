//! The explorer shows work as it arrives: the layers of an analysis in progress on the
//! heat map and the head grid before the finished analysis (which replaces them), a
//! superseded request's layers ignored; and `S` running the LM head alone over the
//! final hidden state the analysis kept, with the bits of a whole pass with the head.

use std::sync::{mpsc, Arc, Mutex};
use std::time::Duration;

use codescope::analysis::{self, AnalyzeOptions, RunOptions};
use codescope::model::LoadedModel;
use codescope::syntax::Language;
use codescope::tui::msg::{AnalyseJob, Effect, Msg, PartialFrame, PartialLayer, WorkerMsg};
use codescope::tui::worker::Worker;
use crossterm::event::KeyCode;

use crate::tui_common::*;

/// The app's pending analysis job among `fx` (after serving the model load and parse).
fn analyse_job(app: &mut codescope::tui::app::App, fx: Vec<Effect>) -> AnalyseJob {
    let left = serve_until_analysis(app, fx);
    left.into_iter()
        .find_map(|e| match e {
            Effect::Analyse(j) => Some(j),
            _ => None,
        })
        .expect("an analysis job")
}

/// Serve loads and parses only; return the rest.
fn serve_until_analysis(app: &mut codescope::tui::app::App, fx: Vec<Effect>) -> Vec<Effect> {
    let mut out = Vec::new();
    let mut queue = fx;
    while !queue.is_empty() {
        let mut next = Vec::new();
        for e in queue {
            match e {
                Effect::LoadModel(..) => {
                    next.extend(app.update(Msg::Worker(WorkerMsg::ModelLoaded {
                        info: model().info.clone(),
                        label: "tiny".into(),
                        notice: None,
                    })))
                }
                Effect::Parse(job) => next.extend(app.update(codescope::tui::io::parse(&job))),
                other => out.push(other),
            }
        }
        queue = next;
    }
    out
}

/// Run `job` as the worker does, collecting the layer messages it sends before its
/// finished analysis.
fn run_streaming(m: &LoadedModel, job: &AnalyseJob) -> (Vec<WorkerMsg>, WorkerMsg) {
    let frame: Mutex<Option<Arc<PartialFrame>>> = Mutex::new(None);
    let out = Mutex::new(Vec::new());
    let on_layer = |d: analysis::LayerDone<'_>| {
        let frame = frame
            .lock()
            .unwrap()
            .get_or_insert_with(|| Arc::new(PartialFrame::of(&d)))
            .clone();
        out.lock().unwrap().push(WorkerMsg::AnalysedLayer {
            req: job.req,
            frame,
            layer: Arc::new(PartialLayer::of(&d)),
        });
    };
    let a = analysis::run(
        m,
        job.syntax.clone(),
        &job.opts,
        &RunOptions {
            on_layer: Some(&on_layer),
            ..codescope::tui::worker::run_options(job, None)
        },
    )
    .unwrap();
    let done = WorkerMsg::Analysed {
        req: job.req,
        data: Arc::new(a),
    };
    (out.into_inner().unwrap(), done)
}

#[test]
fn layers_show_as_they_arrive_and_the_final_result_replaces_them() {
    let (mut app, fx) = fresh(
        SAMPLE,
        120,
        40,
        theme(codescope::tui::theme::ColorMode::TrueColor),
    );
    let job = analyse_job(&mut app, fx);
    let (layers, done) = run_streaming(model(), &job);
    assert_eq!(layers.len(), 3, "one message per layer of the tiny model");
    let s = screen(&app);
    assert!(s.contains("Heatmap"), "{s}");
    assert!(!s.contains("layers so far"), "{s}");
    let mut layers = layers.into_iter();
    app.update(Msg::Worker(layers.next().unwrap()));
    // Layer 1 is on screen before the finished analysis.
    assert!(app.prepared().is_none());
    let pt = app.partial().expect("the layers in");
    assert_eq!(pt.have(), 1);
    let s = screen(&app);
    assert!(s.contains("1 of 3 layers so far"), "{s}");
    assert!(
        s.contains("tokens · rows query, cols key"),
        "the matrix is drawn: {s}"
    );
    assert!(s.contains("layer 1/3 (1 in)"), "{s}");
    assert!(app.with_partial_matrix(|a, n| a.len() == n * n).unwrap());
    // The head grid shows layer 1's scores, the other layers `·`.
    assert!(s.contains("L1 H1: F1 "), "{s}");
    // A key towards a layer not in yet says it is coming; the view stays.
    app.update(key(KeyCode::Right));
    assert_eq!(app.view.layer, 0);
    let (_, msg) = app.status.message.clone().unwrap();
    assert!(
        msg.contains("layer 2 is coming (1 of 3 layers so far)"),
        "{msg}"
    );
    // The head mean of a partial layer.
    typed(&mut app, "a");
    assert!(app.view.mean);
    assert!(app.with_partial_matrix(|_, _| ()).is_some());
    typed(&mut app, "a");
    // Layer 2 arrives: → goes there.
    app.update(Msg::Worker(layers.next().unwrap()));
    app.update(key(KeyCode::Right));
    assert_eq!(app.view.layer, 1);
    assert!(screen(&app).contains("2 of 3 layers so far"));
    // The partial layer's numbers are the finished analysis's.
    let partial_l2 = app.partial_head(1, 2).unwrap().to_vec();
    app.update(Msg::Worker(layers.next().unwrap()));
    app.update(Msg::Worker(done));
    assert!(
        app.partial().is_none(),
        "the final result replaces the layers"
    );
    let p = app.prepared().unwrap().clone();
    assert_eq!(p.token_attention.head(1, 2), &partial_l2[..]);
    let s = screen(&app);
    assert!(!s.contains("layers so far") && !s.contains(" in)"), "{s}");
    app.update(key(KeyCode::Right));
    assert_eq!(app.view.layer, 2);
}

#[test]
fn layers_of_a_superseded_request_are_ignored() {
    let (mut app, fx) = fresh(
        SAMPLE,
        120,
        40,
        theme(codescope::tui::theme::ColorMode::TrueColor),
    );
    let old = analyse_job(&mut app, fx);
    let (old_layers, old_done) = run_streaming(model(), &old);
    let mut old_layers = old_layers.into_iter();
    app.update(Msg::Worker(old_layers.next().unwrap()));
    assert!(app.partial().is_some());
    // An edit mid-pass (here: the input mode) asks for a new analysis.
    let fx = app.update(key(KeyCode::Char('m')));
    let new = analyse_job(&mut app, fx);
    assert!(new.req > old.req);
    assert!(
        app.partial().is_none(),
        "the old request's layers are no longer shown"
    );
    app.update(Msg::Worker(old_layers.next().unwrap()));
    app.update(Msg::Worker(old_done));
    assert!(app.partial().is_none() && app.prepared().is_none());
    assert!(!screen(&app).contains("layers so far"));
    let (new_layers, new_done) = run_streaming(model(), &new);
    let mut new_layers = new_layers.into_iter();
    app.update(Msg::Worker(new_layers.next().unwrap()));
    assert_eq!(app.partial().map(|p| (p.req, p.have())), Some((new.req, 1)));
    assert!(screen(&app).contains("1 of 3 layers so far"));
    // A stray old layer after the new one's arrived changes nothing.
    let (again, _) = run_streaming(model(), &old);
    app.update(Msg::Worker(again.into_iter().nth(1).unwrap()));
    assert_eq!(app.partial().map(|p| (p.req, p.have())), Some((new.req, 1)));
    app.update(Msg::Worker(new_done));
    assert!(app.partial().is_none());
    assert_eq!(app.prepared().unwrap().mode, analysis::Mode::Paper);
}

/// The real worker thread sends every layer, in order, before the finished analysis.
#[test]
fn the_worker_sends_each_layer_before_the_result() {
    let dir = tempfile::tempdir().unwrap();
    let tiny = codescope::model::testutil::Tiny {
        layers: 3,
        ..Default::default()
    };
    codescope::model::testutil::write_tiny_model(dir.path(), &tiny).unwrap();
    let (tx, rx) = mpsc::channel();
    let cache = tempfile::tempdir().unwrap();
    let w = Worker::spawn(cache.path().into(), move |m| {
        let _ = tx.send(m);
    });
    w.load(
        Some(dir.path().display().to_string()),
        None,
        codescope::model::Stack::Encoder,
    );
    w.analyse(AnalyseJob {
        req: 5,
        syntax: Arc::new(analysis::parse(SAMPLE, Language::Python).unwrap()),
        opts: AnalyzeOptions::default(),
        surprisal: false,
        base: None,
    });
    let mut seen = Vec::new();
    let data = loop {
        match rx
            .recv_timeout(Duration::from_secs(120))
            .expect("worker answers")
        {
            WorkerMsg::AnalysedLayer { req, frame, layer } => {
                assert_eq!(req, 5);
                assert_eq!(frame.layers, 3);
                seen.push(layer);
            }
            WorkerMsg::Analysed { req, data } => {
                assert_eq!(req, 5);
                break data;
            }
            WorkerMsg::ModelFailed { error, .. } | WorkerMsg::AnalyseFailed { error, .. } => {
                panic!("{error}")
            }
            _ => {}
        }
    };
    assert_eq!(
        seen.iter().map(|l| l.layer).collect::<Vec<_>>(),
        vec![0, 1, 2],
        "every layer, in order, before the result"
    );
    let ta = &data.token_attention;
    for l in &seen {
        let a = l.attention.as_ref().unwrap();
        assert_eq!(&a[..], &ta.data[l.layer * a.len()..(l.layer + 1) * a.len()]);
        for (g, s) in &l.scores {
            let want: Vec<_> = data.relations[g].scores[l.layer].clone();
            assert_eq!(s, &want, "{g:?} scores of layer {}", l.layer + 1);
        }
    }
    w.join();
}

/// Surprisal and predictions from the LM head alone over the kept final hidden state
/// equal, bit for bit, those of a pass with the head.
fn lm_head_alone_is_bit_identical(m: &LoadedModel, text: &str, lang: Language) {
    let syn = Arc::new(analysis::parse(text, lang).unwrap());
    let opts = AnalyzeOptions::default();
    let full = analysis::run(
        m,
        syn.clone(),
        &opts,
        &RunOptions {
            lm: true,
            ..Default::default()
        },
    )
    .unwrap();
    let base = analysis::run(
        m,
        syn,
        &opts,
        &RunOptions {
            keep_final: true,
            ..Default::default()
        },
    )
    .unwrap();
    let fh = base
        .final_hidden
        .as_ref()
        .expect("the final hidden state kept");
    assert_eq!(fh.hidden.len(), fh.ids.len() * m.info.hidden_size);
    assert!(base.surprisal.is_none());
    let head = base.with_lm_head(m, None).unwrap();
    let (a, b) = (
        full.trace.surprisal.as_ref().unwrap(),
        head.trace.surprisal.as_ref().unwrap(),
    );
    let bits = |s: &codescope::model::Surprisal| -> Vec<Option<u32>> {
        s.bits.iter().map(|b| b.map(f32::to_bits)).collect()
    };
    let name = &m.info.source;
    assert_eq!(bits(a), bits(b), "{name}: surprisal bits");
    assert_eq!(a.top_next.len(), b.top_next.len());
    for (x, y) in a.top_next.iter().zip(&b.top_next) {
        let key = |v: &Vec<codescope::model::Prediction>| -> Vec<(u32, u32)> {
            v.iter().map(|p| (p.id, p.p.to_bits())).collect()
        };
        assert_eq!(key(x), key(y), "{name}: top predictions");
    }
    let (ta, tb) = (full.surprisal.unwrap(), head.surprisal.unwrap());
    assert_eq!(
        ta.bits
            .iter()
            .map(|b| b.map(f32::to_bits))
            .collect::<Vec<_>>(),
        tb.bits
            .iter()
            .map(|b| b.map(f32::to_bits))
            .collect::<Vec<_>>(),
        "{name}: code-token surprisal"
    );
    assert_eq!(
        ta.perplexity.map(f64::to_bits),
        tb.perplexity.map(f64::to_bits)
    );
    // Everything else is the base analysis'.
    assert_eq!(head.token_attention.data, base.token_attention.data);
}

#[test]
fn s_runs_the_lm_head_alone_with_the_bits_of_a_full_pass() {
    for name in ["tiny_llama", "tiny_gpt2", "tiny_qwen2", "tiny_gemma3"] {
        lm_head_alone_is_bit_identical(fixture(name), SHORT, Language::Python);
    }
}

#[test]
fn s_runs_the_lm_head_alone_on_the_packaged_gemma3() {
    let files = codescope::model::source::resolve("gemma3-270m")
        .expect("run `codescope fetch gemma3-270m`");
    let m = LoadedModel::load(&files).unwrap();
    lm_head_alone_is_bit_identical(&m, SAMPLE, Language::Python);
}

/// `S` in the explorer: the job carries the analysis shown, served by the LM head alone.
#[test]
fn s_in_the_explorer_reuses_the_analysis_shown() {
    let mut app = ready_decoder(
        "tiny_llama",
        SHORT,
        120,
        40,
        theme(codescope::tui::theme::ColorMode::TrueColor),
    );
    let before = app.prepared().unwrap().clone();
    assert!(before.final_hidden.is_some());
    let fx = app.update(key(KeyCode::Char('S')));
    let job = match &fx[..] {
        [Effect::Analyse(job)] => job.clone(),
        other => panic!("{other:?}"),
    };
    assert!(job.surprisal);
    assert!(Arc::ptr_eq(job.base.as_ref().unwrap(), &before));
    serve(&mut app, fx);
    let after = app.prepared().unwrap();
    assert!(after.surprisal.is_some());
    assert_eq!(after.token_attention.data, before.token_attention.data);
    assert!(screen(&app).contains("│ ppl "));
    // The same bits as the whole pass with the head gives.
    let full = codescope::tui::worker::analyse_job(
        fixture("tiny_llama"),
        &AnalyseJob { base: None, ..job },
    )
    .unwrap();
    assert_eq!(
        full.trace.surprisal.as_ref().unwrap().bits,
        after.trace.surprisal.as_ref().unwrap().bits
    );
}
