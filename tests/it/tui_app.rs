//! The explorer's update logic without a terminal: keys and worker reports in, state and
//! effects out. Also the worker thread (latest wins) and the exporters.

use crate::tui_common;

use std::sync::{mpsc, Arc};
use std::time::Duration;

use codescope::analysis::{AnalyzeOptions, Graph, Mode};
use codescope::probe::Task;
use codescope::syntax::Language;
use codescope::tui::app::{Direction, Focus, Level, Overlay, PanelTask};
use codescope::tui::data::Metric;
use codescope::tui::msg::{AnalyseJob, Effect, Msg, ProbeJob, WorkerMsg};
use codescope::tui::theme::ColorMode;
use codescope::tui::worker::Worker;
use crossterm::event::KeyCode;
use tui_common::*;

fn analyses(fx: &[Effect]) -> Vec<&AnalyseJob> {
    fx.iter()
        .filter_map(|e| match e {
            Effect::Analyse(j) => Some(j),
            _ => None,
        })
        .collect()
}

#[test]
fn start_loads_the_model_then_analyses() {
    let (mut app, fx) = fresh(SAMPLE, 120, 40, theme(ColorMode::TrueColor));
    assert!(matches!(fx[0], Effect::LoadModel(Some(ref s), None, _) if s == "tiny"));
    // The parse runs off the UI thread; its result asks for the analysis.
    assert!(matches!(fx[1], Effect::Parse(_)));
    let fx = parsed(&mut app, fx);
    let jobs = analyses(&fx);
    assert_eq!(jobs.len(), 1);
    assert_eq!(jobs[0].req, app.shown.doc_req);
    assert_eq!(jobs[0].opts.mode, Mode::Source);
    assert!(app.status.busy.is_some());
    assert!(app.prepared().is_none());
}

#[test]
fn arrows_change_layer_and_head_within_bounds() {
    let mut app = ready(SAMPLE, 120, 40);
    assert_eq!((app.view.layer, app.view.head), (0, 0));
    press(&mut app, &[KeyCode::Right, KeyCode::Down]);
    assert_eq!((app.view.layer, app.view.head), (1, 1));
    press(&mut app, &[KeyCode::Right; 10]);
    assert_eq!(app.view.layer, 2, "clamped to 3 layers");
    press(&mut app, &[KeyCode::Down; 10]);
    assert_eq!(app.view.head, 3, "clamped to 4 heads");
    press(&mut app, &[KeyCode::Left; 10]);
    press(&mut app, &[KeyCode::Up; 10]);
    assert_eq!((app.view.layer, app.view.head), (0, 0));
    let s = screen(&app);
    assert!(s.contains("layer 1/3") && s.contains("head 1/4"), "{s}");
}

#[test]
fn mean_over_heads_and_back() {
    let mut app = ready(SAMPLE, 120, 40);
    typed(&mut app, "a");
    assert!(app.view.mean);
    assert!(screen(&app).contains("head mean/4"));
    let m = app.matrix().unwrap();
    let p = app.prepared().unwrap();
    let ta = &p.token_attention;
    let want: f32 = (0..4).map(|h| ta.get(0, h, 0, 1)).sum::<f32>() / 4.0;
    assert!((m[1] - want).abs() < 1e-6);
    press(&mut app, &[KeyCode::Down]);
    assert!(!app.view.mean, "choosing a head leaves the mean");
}

#[test]
fn threshold_steps_rescore_without_a_forward_pass() {
    let mut app = ready(SAMPLE, 120, 40);
    assert!((app.threshold() - 0.05).abs() < 1e-6);
    let before = app.shown.scores[&Graph::AstMotif].scores[0][0];
    let fx = typed(&mut app, "TTT");
    assert!(fx.is_empty());
    assert!((app.threshold() - 0.20).abs() < 1e-6);
    assert!((app.shown.scores[&Graph::AstMotif].threshold - 0.20).abs() < 1e-6);
    let after = app.shown.scores[&Graph::AstMotif].scores[0][0];
    assert!(after.predicted <= before.predicted);
    typed(&mut app, "TTTTTTTT");
    assert!((app.threshold() - 0.40).abs() < 1e-6, "capped at 0.40");
    typed(&mut app, "tttttttttt");
    assert_eq!(app.threshold(), 0.0, "floored at 0");
    assert!(screen(&app).contains("t 0.00"));
}

#[test]
fn token_cursor_keys() {
    let mut app = ready(SAMPLE, 120, 40);
    let syn = app.doc.syntax.clone().unwrap();
    let text = |app: &codescope::tui::app::App| syn.tokens[app.view.cursor].text.clone();
    assert_eq!(text(&app), "import");
    typed(&mut app, "l");
    assert_eq!(text(&app), "re");
    typed(&mut app, "h");
    assert_eq!(text(&app), "import");
    typed(&mut app, "j");
    assert_eq!(text(&app), "from", "next line with tokens");
    typed(&mut app, "j");
    assert_eq!(text(&app), "def", "blank lines are skipped");
    typed(&mut app, "k");
    assert_eq!(text(&app), "from");
    typed(&mut app, "w");
    assert_eq!(text(&app), "collections", "next identifier");
    typed(&mut app, "w");
    assert_eq!(text(&app), "Counter");
    typed(&mut app, "b");
    assert_eq!(text(&app), "collections");
    press(&mut app, &[KeyCode::End]);
    assert_eq!(app.view.cursor, syn.tokens.len() - 1);
    press(&mut app, &[KeyCode::Home]);
    assert_eq!(app.view.cursor, 0);
    // Search.
    typed(&mut app, "/");
    typed(&mut app, "handle");
    press(&mut app, &[KeyCode::Enter]);
    assert_eq!(text(&app), "handle");
    let first = app.view.cursor;
    typed(&mut app, "n");
    assert_eq!(text(&app), "handle");
    assert!(app.view.cursor > first);
    typed(&mut app, "N");
    assert_eq!(app.view.cursor, first);
}

#[test]
fn direction_gold_dfg_zoom_and_metric_toggles() {
    let mut app = ready(SAMPLE, 120, 40);
    screen(&app); // let the heatmap record its fit zoom
    typed(&mut app, "f");
    assert_eq!(app.view.direction, Direction::To);
    let w = app.token_weights().unwrap();
    let p = app.prepared().unwrap().clone();
    let ta = &p.token_attention;
    let j = 5;
    let (sel, kj) = (p.pos[app.view.cursor].unwrap(), p.pos[j].unwrap());
    assert!(
        (w[j].unwrap() - ta.get(0, 0, kj, sel)).abs() < 1e-7,
        "column of the cursor"
    );
    typed(&mut app, "gd");
    assert!(app.view.gold && app.view.dfg);
    let fit = app.view.effective_zoom();
    assert!(fit > 1);
    typed(&mut app, "+");
    assert_eq!(app.view.zoom, (fit / 2).max(1));
    typed(&mut app, "0");
    assert_eq!(app.view.zoom, 0);
    typed(&mut app, "s");
    assert_eq!(app.view.metric, Metric::F1Dfg);
    typed(&mut app, "5");
    assert_eq!(app.view.metric, Metric::Entropy);
}

#[test]
fn tab_cycles_focus_and_grid_cursor_jumps() {
    let mut app = ready(SAMPLE, 80, 24);
    press(&mut app, &[KeyCode::Tab]);
    assert_eq!(
        (app.view.focus, app.view.side),
        (Focus::Heatmap, Focus::Heatmap)
    );
    press(&mut app, &[KeyCode::Tab]);
    assert_eq!(app.view.focus, Focus::Heads);
    press(&mut app, &[KeyCode::Right, KeyCode::Down, KeyCode::Down]);
    assert_eq!(
        (app.view.layer, app.view.head),
        (0, 0),
        "grid arrows do not move the current head"
    );
    assert_eq!(app.view.grid, (1, 2));
    press(&mut app, &[KeyCode::Enter]);
    assert_eq!((app.view.layer, app.view.head), (1, 2));
    press(&mut app, &[KeyCode::BackTab, KeyCode::BackTab]);
    assert_eq!(app.view.focus, Focus::Code);
    press(&mut app, &[KeyCode::Right]);
    assert_eq!(app.view.layer, 2);
}

#[test]
fn mode_switch_reanalyses_and_superseded_results_are_dropped() {
    let mut app = ready(SAMPLE, 120, 40);
    let fx = app.update(key(KeyCode::Char('m')));
    let jobs = analyses(&fx);
    assert_eq!(jobs.len(), 1);
    assert_eq!(jobs[0].opts.mode, Mode::Paper);
    let old = jobs[0].clone();
    // Switch back before the first result: the first request is superseded.
    let fx2 = app.update(key(KeyCode::Char('m')));
    let new = analyses(&fx2)[0].clone();
    assert!(new.req > old.req);
    let a = codescope::analysis::run(model(), old.syntax.clone(), &old.opts, &Default::default())
        .unwrap();
    app.update(Msg::Worker(WorkerMsg::Analysed {
        req: old.req,
        data: Arc::new(a),
    }));
    assert_eq!(
        app.prepared().unwrap().mode,
        Mode::Source,
        "stale result ignored"
    );
    assert!(app.stale());
    serve(&mut app, fx2);
    assert!(!app.stale());
}

#[test]
fn editing_and_opening_files() {
    let mut app = ready(ONE_LINE, 120, 40);
    typed(&mut app, "e");
    assert!(app.editor.is_some());
    press(&mut app, &[KeyCode::End]);
    let fx = app.type_keys(" + 1");
    assert!(fx.is_empty(), "typing in the editor does nothing else");
    let fx = app.update(key(KeyCode::Esc));
    assert!(app.editor.is_none());
    let fx = parsed(&mut app, fx);
    let jobs = analyses(&fx);
    assert_eq!(jobs[0].syntax.source, "total = price * (1 + rate) + 1\n");
    assert!(app.doc.name.ends_with("(edited)"));
    serve(&mut app, fx);
    assert_eq!(app.prepared().unwrap().syntax.source, app.doc.text);
    // Ctrl-D discards.
    typed(&mut app, "e");
    app.type_keys("zzz");
    app.update(ctrl('d'));
    assert!(app.editor.is_none());
    assert_eq!(app.doc.text, "total = price * (1 + rate) + 1\n");

    // Open a file through the prompt.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("B.java");
    std::fs::write(&path, "class B { int f(int x) { return x + 1; } }\n").unwrap();
    // The snippet is edited: the first o says so, the second opens the prompt.
    typed(&mut app, "oo");
    let fx = app.type_keys(&path.display().to_string());
    assert!(fx.is_empty());
    let fx = app.update(key(KeyCode::Enter));
    // The file is read and parsed off the UI thread.
    let fx = parsed(&mut app, fx);
    assert_eq!(app.doc.lang, Language::Java);
    assert_eq!(analyses(&fx).len(), 1);
    assert!(
        app.prepared().is_none(),
        "old analysis is not shown for the new file"
    );
    serve(&mut app, fx);
    assert!(screen(&app).contains("class B"));
    // A missing file: an error message, nothing else changes.
    typed(&mut app, "o");
    app.type_keys("/no/such/file.py");
    let fx = app.update(key(KeyCode::Enter));
    let fx = parsed(&mut app, fx);
    assert!(fx.is_empty());
    assert!(matches!(app.status.message, Some((Level::Error, _))));
    assert_eq!(app.doc.lang, Language::Java);
}

#[test]
fn model_picker_loads_in_the_background() {
    let mut app = ready(SAMPLE, 120, 40);
    typed(&mut app, "M");
    assert!(matches!(app.overlay, Overlay::Models(_)));
    let fx = app.update(key(KeyCode::Down));
    assert!(fx.is_empty());
    let fx = app.update(key(KeyCode::Enter));
    assert!(matches!(&fx[0], Effect::LoadModel(Some(s), None, _) if s == "graphcodebert"));
    assert_eq!(analyses(&fx).len(), 1);
    assert!(app
        .status
        .busy
        .as_deref()
        .unwrap()
        .contains("graphcodebert"));
    // Navigation keeps working while it loads.
    press(&mut app, &[KeyCode::Right]);
    assert_eq!(app.view.layer, 1);
    // A failed load leaves the old model and says why.
    app.update(Msg::Worker(WorkerMsg::ModelFailed {
        label: "graphcodebert".into(),
        error: "hub unreachable".into(),
    }));
    assert!(
        matches!(&app.status.message, Some((Level::Error, m)) if m.contains("hub unreachable"))
    );
    assert_eq!(app.model.loaded.as_ref().unwrap().0, "tiny");
    // A typed spec.
    typed(&mut app, "M");
    let fx = app.type_keys("pypi:some-model");
    assert!(fx.is_empty());
    let fx = app.update(key(KeyCode::Enter));
    assert!(matches!(&fx[0], Effect::LoadModel(Some(s), None, _) if s == "pypi:some-model"));
}

#[test]
fn quitting_and_overlays() {
    let mut app = ready(SAMPLE, 120, 40);
    typed(&mut app, "?");
    assert!(matches!(app.overlay, Overlay::Help));
    let fx = app.update(key(KeyCode::Esc));
    assert!(fx.is_empty(), "Esc closes the help, does not quit");
    assert!(matches!(app.overlay, Overlay::None));
    use codescope::export::figure::Kind;
    use codescope::tui::app::ExportWhat;
    let fx = app.update(key(KeyCode::Char('x')));
    assert!(fx.is_empty() && matches!(app.overlay, Overlay::ExportMenu(Kind::Heatmap)));
    let fx = app.update(key(KeyCode::Char('1')));
    assert!(matches!(
        fx[..],
        [Effect::Export(ExportWhat::View(Kind::Heatmap))]
    ));
    app.update(Msg::Exported(Ok(vec!["a.svg".into(), "a.json".into()])));
    assert!(screen(&app).contains("exported a.svg, a.json"));
    assert!(matches!(
        app.update(key(KeyCode::Char('q')))[..],
        [Effect::Quit]
    ));
    let mut app = ready(SAMPLE, 120, 40);
    assert!(matches!(app.update(ctrl('c'))[..], [Effect::Quit]));
    assert!(matches!(app.update(Msg::Terminate)[..], [Effect::Quit]));
    let (mut app, _) = fresh(SAMPLE, 120, 40, theme(ColorMode::TrueColor));
    assert!(
        app.update(key(KeyCode::Char('x'))).is_empty(),
        "nothing to export yet"
    );
}

#[test]
fn worker_reports_reach_the_status_bar() {
    let (mut app, _) = fresh(SAMPLE, 120, 40, theme(ColorMode::TrueColor));
    app.update(Msg::Worker(WorkerMsg::Progress {
        req: 0,
        text: "loading model tiny…".into(),
    }));
    assert!(screen(&app).contains("loading model tiny…"));
    app.update(Msg::Worker(WorkerMsg::ModelLoaded {
        info: model().info.clone(),
        label: "tiny".into(),
        notice: Some("fell back to minilm: codebert failed".into()),
    }));
    let s = screen(&app);
    assert!(
        s.contains("tiny (bert)") && s.contains("fell back to minilm"),
        "{s}"
    );
    let req = app.shown.doc_req;
    app.update(Msg::Worker(WorkerMsg::AnalyseFailed {
        req,
        error: "the input has no code tokens".into(),
    }));
    assert!(screen(&app).contains("the input has no code tokens"));
}

#[test]
fn every_key_in_the_keymap_does_something() {
    use codescope::tui::keymap::{Command, KEYMAP};
    use crossterm::event::{KeyEvent, KeyModifiers};
    let mut n = 0;
    for (k, c) in KEYMAP.iter().flat_map(|s| s.rows).flat_map(|b| b.bind) {
        let mut app = ready(SAMPLE, 120, 40);
        // Mid-way everywhere, so every motion has somewhere to go.
        typed(&mut app, "jl");
        press(&mut app, &[KeyCode::Right, KeyCode::Down]);
        match c {
            Command::SearchNext | Command::SearchPrev => app.view.search = Some("import".into()),
            // fit is the default: leave it first
            Command::ZoomFit => drop(typed(&mut app, "+")),
            // the first score is the default
            Command::Metric(0) => drop(typed(&mut app, "2")),
            Command::GridJump => {
                app.view.focus = Focus::Heads;
                press(&mut app, &[KeyCode::Right]);
            }
            _ => {}
        }
        let mods = if k.ctrl {
            KeyModifiers::CONTROL
        } else {
            KeyModifiers::NONE
        };
        // What is on screen, or the view's state (focus moves only restyle borders).
        let state = |app: &codescope::tui::app::App| (screen(app), format!("{:?}", app.view));
        let before = state(&app);
        let fx = app.update(Msg::Key(KeyEvent::new(k.code, mods)));
        let after = state(&app);
        assert!(
            !fx.is_empty() || before != after || app.quit,
            "{k:?} ({c:?}) changed nothing"
        );
        n += 1;
    }
    assert!(n > 50, "only {n} bindings");
}

#[test]
fn worker_thread_latest_wins() {
    let dir = tempfile::tempdir().unwrap();
    codescope::model::testutil::write_tiny_model(
        dir.path(),
        &codescope::model::testutil::Tiny::default(),
    )
    .unwrap();
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
    let job = |req: u64, text: &str| AnalyseJob {
        req,
        syntax: Arc::new(codescope::analysis::parse(text, Language::Python).unwrap()),
        opts: AnalyzeOptions::default(),
        surprisal: false,
        base: None,
    };
    w.analyse(job(1, "a = 1\n"));
    w.analyse(job(2, "b = 2\n"));
    let mut analysed = Vec::new();
    let mut loaded = false;
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while analysed.is_empty() && std::time::Instant::now() < deadline {
        match rx
            .recv_timeout(Duration::from_secs(60))
            .expect("worker answers")
        {
            WorkerMsg::ModelLoaded { info, .. } => {
                loaded = true;
                assert_eq!(info.layers, 2);
            }
            WorkerMsg::Analysed { req, data } => analysed.push((req, data)),
            WorkerMsg::ModelFailed { error, .. } | WorkerMsg::AnalyseFailed { error, .. } => {
                panic!("{error}")
            }
            _ => {}
        }
    }
    assert!(loaded);
    assert_eq!(analysed.len(), 1);
    assert_eq!(analysed[0].0, 2, "only the latest request is answered");
    assert_eq!(analysed[0].1.syntax.source, "b = 2\n");
    w.join();
}

#[test]
fn analysis_without_a_model_fails_cleanly() {
    let (tx, rx) = mpsc::channel();
    let cache = tempfile::tempdir().unwrap();
    let w = Worker::spawn(cache.path().into(), move |m| {
        let _ = tx.send(m);
    });
    w.analyse(AnalyseJob {
        req: 7,
        syntax: Arc::new(codescope::analysis::parse("x = 1\n", Language::Python).unwrap()),
        opts: AnalyzeOptions::default(),
        surprisal: false,
        base: None,
    });
    match rx.recv_timeout(Duration::from_secs(30)).unwrap() {
        WorkerMsg::AnalyseFailed { req, error } => {
            assert_eq!(req, 7);
            assert!(error.contains("no model"), "{error}");
        }
        other => panic!("unexpected {other:?}"),
    }
    w.join();
}

#[test]
fn export_writes_svg_and_json_of_the_view() {
    let mut app = ready(SAMPLE, 120, 40);
    typed(&mut app, "lg");
    press(&mut app, &[KeyCode::Right]);
    let view = codescope::tui::figure_data(&app).unwrap();
    assert_eq!((view.layer, view.head), (2, Some(1)));
    assert_eq!(view.matrix.len(), view.matrix_tokens.len());
    assert_eq!(view.tokens[view.selected.unwrap()].text, "re");
    use codescope::export::figure::{self, palette, Kind};
    let dir = tempfile::tempdir().unwrap();
    let kinds = [Kind::Heatmap];
    let fig = figure::render(Kind::Heatmap, &view, &figure::FigureOptions::default()).unwrap();
    let paths = codescope::export::write_figures(
        dir.path(),
        "codescope-test",
        &[(Kind::Heatmap, fig)],
        Some(&view),
    )
    .unwrap();
    let svg = std::fs::read_to_string(&paths[0]).unwrap();
    assert!(paths[1].extension().is_some_and(|e| e == "png"));
    assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
    assert!(svg.contains("<rect") && svg.contains(">word_counts</text>"));
    assert!(svg.contains(&palette::hex(
        palette::Palette::new(false).token("keyword", None)
    )));
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&paths[2]).unwrap()).unwrap();
    assert_eq!(v["layer"], 2);
    assert_eq!(v["head"], 1);
    assert_eq!(
        v["matrix"].as_array().unwrap().len(),
        view.matrix_tokens.len()
    );
    assert!(v["scores"]["ast_motif"]["f1"].is_number());
    assert_eq!(v["head_grid"]["metric"], "f1_ast_motif");
    // A second export with the same stem does not overwrite.
    let suffixes = codescope::export::suffixes(&kinds, true);
    let stem = codescope::export::free_stem(dir.path(), "codescope-test", &suffixes);
    assert_eq!(stem, "codescope-test-1");
}

#[test]
fn colour_modes_and_themes() {
    use ratatui::style::Color;
    // Find a heatmap half-block cell and check its colours per mode.
    let cell_colors = |mode: ColorMode, light: bool| {
        let app = ready_with(
            SAMPLE,
            120,
            40,
            codescope::tui::theme::Theme::new(mode, light),
        );
        let t = render(&app);
        let buf = t.backend().buffer().clone();
        let area = buf.area;
        let mut found = None;
        for y in 0..area.height {
            for x in 0..area.width {
                let c = &buf[(x, y)];
                if c.symbol() == "▀" && found.is_none() {
                    found = Some((c.fg, c.bg));
                }
            }
        }
        (found, buf)
    };
    let (tc, _) = cell_colors(ColorMode::TrueColor, false);
    assert!(
        matches!(tc, Some((Color::Rgb(..), Color::Rgb(..)))),
        "{tc:?}"
    );
    let (ix, _) = cell_colors(ColorMode::Ansi256, false);
    assert!(
        matches!(ix, Some((Color::Indexed(_), Color::Indexed(_)))),
        "{ix:?}"
    );
    let (none, buf) = cell_colors(ColorMode::None, false);
    assert!(none.is_none(), "no half blocks without colour");
    let shades = buf
        .content()
        .iter()
        .filter(|c| ["░", "▒", "▓", "█"].contains(&c.symbol()))
        .count();
    assert!(shades > 50, "intensity drawn with shade glyphs");
    assert!(buf
        .content()
        .iter()
        .all(|c| c.fg == Color::Reset || c.fg == Color::default()));
    let (_, dark) = cell_colors(ColorMode::TrueColor, false);
    let (_, light) = cell_colors(ColorMode::TrueColor, true);
    assert_ne!(dark[(1, 1)].bg, light[(1, 1)].bg, "light theme background");
}

fn probe_msg(w: WorkerMsg) -> Msg {
    Msg::Worker(w)
}

/// Apply a message and serve the effects it leads to (e.g. the probe label).
fn deliver(app: &mut codescope::tui::app::App, m: Msg) -> Vec<Effect> {
    let fx = app.update(m);
    serve(app, fx)
}

#[test]
fn p_requests_probes_for_the_model_language_and_task() {
    let mut app = ready(SAMPLE, 80, 24);
    assert!(screen(&app).contains("Tab: next panel"));
    let fx = app.update(key(KeyCode::Char('p')));
    let job = probe_job(&fx).expect("a probe job");
    assert_eq!(job.task, Task::Category);
    assert_eq!(job.lang, Language::Python);
    assert_eq!(job.model, app.model.loaded.as_ref().unwrap().1.source);
    assert_eq!(
        app.view.side,
        Focus::Probes,
        "the probe panel comes into view"
    );
    assert_eq!(app.probe.run.as_ref().unwrap().req, job.req);
    // Asking again while it runs does not start another job.
    assert!(probe_job(&app.update(key(KeyCode::Char('p')))).is_none());
    // Navigation still works and asks nothing of the worker.
    let fx = app.update(key(KeyCode::Right));
    assert!(fx.is_empty());
    assert_eq!(app.view.layer, 1);
}

#[test]
fn probe_progress_and_results_are_shown_and_cached() {
    let mut app = ready(SAMPLE, 120, 40);
    assert!(screen(&app).contains("p: train linear probes"));
    let job = probe_job(&app.update(key(KeyCode::Char('p')))).unwrap();
    deliver(
        &mut app,
        probe_msg(WorkerMsg::ProbeProgress {
            req: job.req,
            text: "tracing 120/311".into(),
            result: None,
        }),
    );
    assert_eq!(app.probe.run.as_ref().unwrap().progress, "tracing 120/311");
    assert!(screen(&app).contains("tracing 120/311"));
    // Progress of an older request is ignored.
    deliver(
        &mut app,
        probe_msg(WorkerMsg::ProbeProgress {
            req: job.req - 1,
            text: "stale".into(),
            result: None,
        }),
    );
    assert!(!screen(&app).contains("stale"));
    // A finished fit shows its bar before the whole report is in.
    let report = synthetic_report(3, "category");
    deliver(
        &mut app,
        probe_msg(WorkerMsg::ProbeProgress {
            req: job.req,
            text: "fitting layer 2/4".into(),
            result: Some(report.results[0].clone()),
        }),
    );
    let s = screen(&app);
    assert!(s.contains("fitting layer 2/4") && s.contains("emb"), "{s}");
    deliver(
        &mut app,
        probe_msg(WorkerMsg::Probed {
            req: job.req,
            report: Arc::new(report),
        }),
    );
    assert!(app.probe.run.is_none());
    assert!(app.probe_report().is_some());
    let s = screen(&app);
    assert!(s.contains("maj .31") && s.contains("control"), "{s}");
    // Cached: asking again is free.
    assert!(probe_job(&app.update(key(KeyCode::Char('p')))).is_none());
}

#[test]
fn p_cycles_tasks_and_cached_tasks_come_back_at_once() {
    let mut app = ready(SAMPLE, 120, 40);
    // Before any probe request, P only changes the task.
    assert!(probe_job(&app.update(key(KeyCode::Char('P')))).is_none());
    assert_eq!(app.probe.task, Task::Depth);
    assert!(screen(&app).contains("Probes depth"));
    let job = probe_job(&app.update(key(KeyCode::Char('p')))).unwrap();
    assert_eq!(job.task, Task::Depth);
    deliver(
        &mut app,
        probe_msg(WorkerMsg::Probed {
            req: job.req,
            report: Arc::new(synthetic_report(3, "depth")),
        }),
    );
    // Now P asks for each next task (superseding the previous request).
    let mut reqs = Vec::new();
    // After the seven tasks comes AST-Probe, then category again.
    for want in [
        PanelTask::Task(Task::Distance),
        PanelTask::Task(Task::DistanceId),
        PanelTask::Task(Task::Siblings),
        PanelTask::Task(Task::SiblingsId),
        PanelTask::Task(Task::Dfg),
        PanelTask::Ast,
        PanelTask::Task(Task::Category),
    ] {
        let j = probe_job(&app.update(key(KeyCode::Char('P')))).expect("a job");
        assert_eq!((app.probe.task, j.task), (want, want));
        reqs.push(j.req);
    }
    // A superseded report is dropped; the latest one is kept.
    deliver(
        &mut app,
        probe_msg(WorkerMsg::Probed {
            req: reqs[0],
            report: Arc::new(synthetic_report(3, "distance")),
        }),
    );
    assert_eq!(app.probe.results.len(), 1);
    deliver(
        &mut app,
        probe_msg(WorkerMsg::Probed {
            req: *reqs.last().unwrap(),
            report: Arc::new(synthetic_report(3, "category")),
        }),
    );
    assert_eq!(app.probe.results.len(), 2);
    // Back to depth: cached, no job.
    assert!(probe_job(&app.update(key(KeyCode::Char('P')))).is_none());
    assert_eq!(app.probe.task, Task::Depth);
    assert!(app.probe_report().is_some());
    assert!(screen(&app).contains("maj .31"));
}

#[test]
fn probe_failure_is_shown_and_p_retries() {
    let mut app = ready(SAMPLE, 120, 40);
    let job = probe_job(&app.update(key(KeyCode::Char('p')))).unwrap();
    deliver(
        &mut app,
        probe_msg(WorkerMsg::ProbeFailed {
            req: job.req,
            error: "boom".into(),
        }),
    );
    assert!(app.probe.run.is_none());
    assert!(screen(&app).contains("probe failed: boom"));
    let again = probe_job(&app.update(key(KeyCode::Char('p')))).expect("retry");
    assert!(again.req > job.req);
    assert!(!screen(&app).contains("boom"));
}

#[test]
fn p_before_the_model_is_loaded_warns() {
    let (mut app, _) = fresh(SAMPLE, 120, 40, theme(ColorMode::TrueColor));
    assert!(probe_job(&app.update(key(KeyCode::Char('p')))).is_none());
    assert!(matches!(app.status.message, Some((Level::Warn, _))));
}

#[test]
fn worker_thread_trains_probes_latest_wins() {
    // Features are cached in a directory of this test's own.
    let cache = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    codescope::model::testutil::write_tiny_model(
        dir.path(),
        &codescope::model::testutil::Tiny::default(),
    )
    .unwrap();
    let (tx, rx) = mpsc::channel();
    let w = Worker::spawn(cache.path().into(), move |m| {
        let _ = tx.send(m);
    });
    w.load(
        Some(dir.path().display().to_string()),
        None,
        codescope::model::Stack::Encoder,
    );
    let source = loop {
        match rx.recv_timeout(Duration::from_secs(60)).expect("loaded") {
            WorkerMsg::ModelLoaded { info, .. } => break info.source,
            WorkerMsg::ModelFailed { error, .. } => panic!("{error}"),
            _ => {}
        }
    };
    let job = |req, task: Task| ProbeJob {
        req,
        model: source.clone(),
        lang: Language::Python,
        task: task.into(),
    };
    w.probe(job(1, Task::Category));
    w.probe(job(2, Task::Depth));
    let mut progress = Vec::new();
    let report = loop {
        match rx.recv_timeout(Duration::from_secs(120)).expect("probed") {
            WorkerMsg::ProbeProgress { req, text, .. } => progress.push((req, text)),
            WorkerMsg::Probed { req, report } => break (req, report),
            WorkerMsg::ProbeFailed { req, error } => panic!("{req}: {error}"),
            _ => {}
        }
    };
    assert_eq!(report.0, 2, "only the latest request is answered");
    assert!(report.1.results.iter().all(|r| r.task == "depth"));
    assert_eq!(report.1.results.len(), 3, "embeddings + 2 layers");
    // The fitted probes come along, one per result, ready to label new tokens.
    assert_eq!(report.1.probes.len(), 3);
    for (p, r) in report.1.probes.iter().zip(&report.1.results) {
        assert_eq!((p.task.name(), p.layer), (r.task.as_str(), r.layer));
        assert_eq!(p.classifier.classes, Task::Depth.classes().len());
        assert_eq!(p.classifier.width, 32);
    }
    assert!(progress.iter().all(|(r, _)| *r == 2));
    assert!(
        progress.iter().any(|(_, t)| t.starts_with("tracing ")),
        "{progress:?}"
    );
    assert!(progress
        .iter()
        .any(|(_, t)| t.starts_with("fitting layer ")));
    // An analysis arriving while a probe runs goes first; the probe then resumes.
    w.probe(job(4, Task::Category));
    w.analyse(AnalyseJob {
        req: 5,
        syntax: Arc::new(codescope::analysis::parse("x = 1\n", Language::Python).unwrap()),
        opts: AnalyzeOptions::default(),
        surprisal: false,
        base: None,
    });
    let mut order = Vec::new();
    while order.len() < 2 {
        match rx.recv_timeout(Duration::from_secs(120)).expect("answers") {
            WorkerMsg::Analysed { req, .. } => order.push(req),
            WorkerMsg::Probed { req, .. } => order.push(req),
            WorkerMsg::ProbeFailed { error, .. } | WorkerMsg::AnalyseFailed { error, .. } => {
                panic!("{error}")
            }
            _ => {}
        }
    }
    assert_eq!(order, vec![5, 4]);
    // A job for another model is refused.
    w.probe(ProbeJob {
        req: 3,
        model: "other".into(),
        lang: Language::Python,
        task: Task::Depth.into(),
    });
    match rx.recv_timeout(Duration::from_secs(30)).unwrap() {
        WorkerMsg::ProbeFailed { req, error } => {
            assert_eq!(req, 3);
            assert!(error.contains("model changed"), "{error}");
        }
        other => panic!("unexpected {other:?}"),
    }
    w.join();
}

// ---- Surprisal view (causal models) ----

/// The view's code-token surprisal is the sum of its subwords' bits, i.e. the joint
/// `-log2 p` of the subwords given the prefix, checked against log-softmax of the raw
/// LM-head logits.
#[test]
fn code_token_surprisal_sums_subword_bits_from_the_logits() {
    for name in ["tiny_llama", "tiny_qwen2", "tiny_gpt2"]
        .into_iter()
        .chain(crate::decoder_common::FAMILIES)
    {
        let mut app = ready_decoder(name, SHORT, 120, 40, theme(ColorMode::TrueColor));
        typed(&mut app, "S");
        let p = app.prepared().unwrap();
        let sp = p
            .surprisal
            .as_ref()
            .expect("a causal model gives surprisal");
        let tr = &p.trace;
        let ids: Vec<u32> = tr.tokens.iter().map(|t| t.id).collect();
        let m = fixture(name);
        let logits = m.logits_ids(&ids).unwrap();
        let vocab = logits.len() / ids.len();
        let bits_at = |k: usize| -> f64 {
            let row = &logits[(k - 1) * vocab..k * vocab];
            let max = row.iter().copied().fold(f32::NEG_INFINITY, f32::max) as f64;
            let lse = max
                + row
                    .iter()
                    .map(|&v| (v as f64 - max).exp())
                    .sum::<f64>()
                    .ln();
            -(row[ids[k] as usize] as f64 - lse) / std::f64::consts::LN_2
        };
        assert_eq!(sp.bits.len(), app.doc.n_tokens());
        let mut multi = 0;
        for (t, subs) in sp.subwords.iter().enumerate() {
            let want: Option<f64> = subs
                .iter()
                .map(|&k| (k > 0).then(|| bits_at(k)))
                .sum::<Option<f64>>()
                .filter(|_| !subs.is_empty());
            match (sp.bits[t], want) {
                (Some(got), Some(w)) => assert!((got as f64 - w).abs() < 1e-3, "{name} {t}"),
                (None, None) => {}
                other => panic!("{name} token {t}: {other:?}"),
            }
            multi += (subs.len() > 1) as usize;
        }
        assert!(multi > 0, "{name}: some token spans several subwords");
        // Perplexity over subwords; the scale tops at the largest token.
        let scored: Vec<f64> = (1..ids.len())
            .filter(|&k| !tr.tokens[k].special)
            .map(bits_at)
            .collect();
        let ppl = (scored.iter().sum::<f64>() / scored.len() as f64).exp2();
        assert!((sp.perplexity.unwrap() - ppl).abs() / ppl < 1e-4, "{name}");
        let max = sp.bits.iter().flatten().fold(0f32, |a, &b| a.max(b));
        assert_eq!(sp.max_bits, max);
        let above = sp
            .bits
            .iter()
            .flatten()
            .filter(|&&b| b >= sp.top_decile)
            .count();
        let scored_tokens = sp.bits.iter().flatten().count();
        // (A subword spanning two code tokens gives both its bits: on the tiny Gemma 2
        // the two tokens sharing subword 11 tie at the decile's edge.)
        assert!(
            above >= 1 && (above * 10 <= scored_tokens + 9 || name == "tiny_gemma2"),
            "{name}: top decile"
        );
        // What the model expected where a token starts: the previous position's top 5.
        let t = app
            .doc
            .syntax
            .as_ref()
            .unwrap()
            .tokens
            .iter()
            .position(|x| x.text == "return")
            .unwrap();
        let first = sp.subwords[t][0];
        assert_eq!(
            sp.expected(t).unwrap(),
            &tr.surprisal.as_ref().unwrap().top_next[first - 1][..]
        );
        assert_eq!(sp.expected(t).unwrap().len(), 5);
    }
}

#[test]
fn s_toggles_the_surprisal_view_on_a_decoder() {
    let mut app = ready_decoder("tiny_llama", SHORT, 120, 40, theme(ColorMode::TrueColor));
    assert!(
        screen(&app).contains("S surprisal"),
        "the key is advertised"
    );
    // The LM head runs only for the view: turning it on asks for one re-analysis with
    // it, turning it off and on again does not.
    assert!(app.prepared().unwrap().surprisal.is_none());
    let fx = app.update(key(KeyCode::Char('S')));
    assert!(
        matches!(&fx[..], [Effect::Analyse(job)] if job.surprisal),
        "{fx:?}"
    );
    assert!(app.view.surprisal);
    serve(&mut app, fx);
    assert!(app.prepared().unwrap().surprisal.is_some());
    assert!(app.update(key(KeyCode::Char('S'))).is_empty());
    assert!(
        app.update(key(KeyCode::Char('S'))).is_empty(),
        "no forward pass"
    );
    assert!(app.view.surprisal);
    let s = screen(&app);
    assert!(
        s.contains("│ ppl ") && s.contains("Code · surprisal"),
        "{s}"
    );
    assert!(s.contains("Expected at «def»"), "{s}");
    assert!(s.contains("bits/subword"), "{s}");
    // The box follows the cursor.
    typed(&mut app, "l");
    assert!(screen(&app).contains("Expected at «area»"));
    // The code backgrounds change from attention to the surprisal ramp.
    let buf_on = render(&app).backend().buffer().clone();
    typed(&mut app, "S");
    assert!(!app.view.surprisal);
    let buf_off = render(&app).backend().buffer().clone();
    assert_ne!(buf_on, buf_off);
    assert!(!screen(&app).contains("Expected at"));
}

#[test]
fn s_on_an_encoder_says_why_nothing_happens() {
    let mut app = ready(SAMPLE, 120, 40);
    assert!(!screen(&app).contains("S surprisal"));
    typed(&mut app, "S");
    assert!(!app.view.surprisal);
    let (lvl, msg) = app.status.message.clone().unwrap();
    assert_eq!(lvl, Level::Warn);
    assert!(msg.contains("surprisal needs a causal model"), "{msg}");
    assert!(screen(&app).contains("surprisal needs a causal model"));
    // Switching from a decoder to an encoder turns the view off.
    let mut app = ready_decoder("tiny_gpt2", SHORT, 120, 40, theme(ColorMode::TrueColor));
    typed(&mut app, "S");
    assert!(app.view.surprisal);
    app.update(Msg::Worker(WorkerMsg::ModelLoaded {
        info: model().info.clone(),
        label: "tiny".into(),
        notice: None,
    }));
    assert!(!app.view.surprisal);
}

#[test]
fn first_token_without_bos_is_unscored_and_said_so() {
    // GPT-2's tokenizer adds no BOS: nothing predicts the first subword.
    let mut app = ready_decoder("tiny_gpt2", SHORT, 120, 40, theme(ColorMode::TrueColor));
    typed(&mut app, "S");
    let sp = app.prepared().unwrap().surprisal.clone().unwrap();
    assert_eq!(sp.subwords[0][0], 0, "no BOS");
    assert_eq!(sp.bits[0], None);
    assert!(sp.expected(0).is_none());
    assert!(screen(&app).contains("not scored"));
}

#[test]
fn export_carries_surprisal_only_when_shown() {
    let mut app = ready_decoder("tiny_qwen2", SHORT, 120, 40, theme(ColorMode::TrueColor));
    typed(&mut app, "l");
    let off = codescope::tui::figure_data(&app).unwrap();
    assert!(off.surprisal.is_none());
    let json = codescope::export::json::render(&off).unwrap();
    assert!(!json.contains("surprisal"));
    typed(&mut app, "S");
    let on = codescope::tui::figure_data(&app).unwrap();
    let sv = on.surprisal.as_ref().unwrap();
    assert_eq!(sv.selected_expected.len(), 5);
    let sp = app.prepared().unwrap().surprisal.as_ref().unwrap();
    assert_eq!(on.tokens[1].surprisal, Some(sp.bits[1]));
    let v: serde_json::Value =
        serde_json::from_str(&codescope::export::json::render(&on).unwrap()).unwrap();
    assert!(v["surprisal"]["perplexity"].as_f64().unwrap() > 1.0);
    assert!(v["tokens"][1]["surprisal"].is_number());
    let svg = codescope::export::figure::render(
        codescope::export::figure::Kind::Surprisal,
        &on,
        &codescope::export::figure::FigureOptions::default(),
    )
    .unwrap()
    .svg;
    assert!(svg.contains("surprisal view") && svg.contains(" bits</title>"));
    assert!(svg.contains("expected at the selected token"));
}

// ---- Per-token probe label ----

#[test]
fn probe_panel_labels_the_cursor_token_at_the_current_layer() {
    use codescope::tui::app::TokenProbe;
    let mut app = ready(SAMPLE, 120, 40);
    assert_eq!(app.token_probe(), None, "no report, no line");
    let job = probe_job(&app.update(key(KeyCode::Char('p')))).unwrap();
    let mut report = synthetic_report(3, "category");
    report.probes = own_probes(&app, Task::Category);
    deliver(
        &mut app,
        probe_msg(WorkerMsg::Probed {
            req: job.req,
            report: Arc::new(report),
        }),
    );
    // The first token is `import` (a keyword).
    let tp = app.token_probe().unwrap();
    let TokenProbe::Label {
        token,
        layer,
        predicted,
        gold,
    } = &tp
    else {
        panic!("{tp:?}")
    };
    assert_eq!(
        (token.as_str(), *layer, gold.as_str()),
        ("import", 1, "keyword")
    );
    let shown = format!("L1 {predicted} gold keyword");
    assert!(screen(&app).contains(&shown), "{}", screen(&app));
    // The prediction is the fitted probe's on this token's features at that layer.
    let p = app.prepared().unwrap().clone();
    let feat = p.features.as_ref().unwrap();
    let dim = feat.layers[2].len() / feat.tokens.len();
    press(&mut app, &[KeyCode::Right]);
    typed(&mut app, "l");
    let k = feat
        .tokens
        .iter()
        .position(|&t| t == app.view.cursor)
        .unwrap();
    let want = app.probe_report().unwrap().probes[2]
        .classifier
        .predict(&feat.layers[2][k * dim..(k + 1) * dim])
        .unwrap();
    match app.token_probe().unwrap() {
        TokenProbe::Label {
            layer, predicted, ..
        } => {
            assert_eq!(layer, 2);
            assert_eq!(predicted, Task::Category.classes()[want]);
        }
        other => panic!("{other:?}"),
    }
    // Trained on these very tokens, the probe gets most of them right.
    let n = feat.tokens.len();
    let hits = (0..n)
        .filter(|&i| {
            app.view.cursor = feat.tokens[i];
            resettle(&mut app);
            matches!(app.token_probe(), Some(TokenProbe::Label { predicted, gold, .. }) if predicted == gold)
        })
        .count();
    let mut counts = [0usize; 5];
    for &t in &feat.tokens {
        let c = app.doc.syntax.as_ref().unwrap().tokens[t].category;
        counts[codescope::syntax::Category::ALL
            .iter()
            .position(|&x| x == c)
            .unwrap()] += 1;
    }
    let majority = *counts.iter().max().unwrap();
    assert!(
        hits > majority + n / 10,
        "{hits}/{n} (majority class {majority})"
    );
    // Paper mode has no source-mode features.
    typed(&mut app, "m");
    assert_eq!(app.token_probe(), Some(TokenProbe::NoFeatures));
    assert!(screen(&app).contains("labels need source input (m)"));
}

#[test]
fn probe_line_for_pair_tasks_and_uncovered_tokens() {
    use codescope::tui::app::TokenProbe;
    let text = long_snippet();
    let mut app = ready(&text, 120, 40);
    let job = probe_job(&app.update(key(KeyCode::Char('p')))).unwrap();
    let mut report = synthetic_report(3, "category");
    report.probes = own_probes(&app, Task::Category);
    deliver(
        &mut app,
        probe_msg(WorkerMsg::Probed {
            req: job.req,
            report: Arc::new(report),
        }),
    );
    press(&mut app, &[KeyCode::End]);
    assert!(matches!(
        app.token_probe(),
        Some(TokenProbe::NotCovered { .. })
    ));
    assert!(screen(&app).contains("outside the window"));
    // A pair task: no single-token label.
    for _ in 0..2 {
        let fx = app.update(key(KeyCode::Char('P')));
        if let Some(j) = probe_job(&fx) {
            deliver(
                &mut app,
                probe_msg(WorkerMsg::Probed {
                    req: j.req,
                    report: Arc::new(synthetic_report(3, j.task.name())),
                }),
            );
        }
    }
    assert_eq!(app.probe.task, Task::Distance);
    assert_eq!(app.token_probe(), Some(TokenProbe::PairTask));
    let s = screen(&app);
    // (clipped with `…` where the panel is narrow)
    assert!(s.contains("pair task: no single-token"), "{s}");
}

#[test]
fn surprisal_view_and_probe_label_draw_at_any_size() {
    for mode in [ColorMode::TrueColor, ColorMode::Ansi256, ColorMode::None] {
        let mut app = ready_decoder("tiny_qwen2", SHORT, 120, 40, theme(mode));
        typed(&mut app, "Sl");
        let job = probe_job(&app.update(key(KeyCode::Char('p')))).unwrap();
        let mut report = synthetic_report(2, "category");
        report.probes = own_probes(&app, Task::Category);
        deliver(
            &mut app,
            probe_msg(WorkerMsg::Probed {
                req: job.req,
                report: Arc::new(report),
            }),
        );
        assert!(matches!(
            app.token_probe(),
            Some(codescope::tui::app::TokenProbe::Label { .. })
        ));
        for (w, h) in [
            (50, 12),
            (60, 16),
            (61, 17),
            (64, 19),
            (75, 20),
            (76, 25),
            (109, 31),
            (110, 32),
            (200, 60),
        ] {
            app.update(Msg::Resize {
                width: w,
                height: h,
            });
            for focus in 0..5 {
                let s = screen(&app);
                if w < codescope::tui::layout::MIN_W || h < codescope::tui::layout::MIN_H {
                    assert!(s.contains("terminal too small"), "{w}x{h}\n{s}");
                } else {
                    // The focused panel is on screen, and so is the status bar.
                    let title = match app.view.focus {
                        Focus::Code => "┌ Code",
                        Focus::Heatmap => "┌ Heatmap",
                        Focus::Heads => "┌ Heads",
                        Focus::Categories => "┌ Categories",
                        Focus::Probes => "┌ Probes",
                    };
                    assert!(s.contains(title), "{w}x{h} focus {focus}: {title}\n{s}");
                    assert!(s.contains("layer "), "{w}x{h} focus {focus}: status\n{s}");
                }
                press(&mut app, &[KeyCode::Tab]);
            }
        }
    }
}

/// `F` turns the Categories panel into the study's finding (per layer the best head's F1
/// for syn–syn, id–id and syn–id edges, the cross-class shares, and the reading), with the
/// same numbers as `analyze`'s finding; `F` again brings the categories back.
#[test]
fn the_finding_view_shows_the_three_relations_per_layer() {
    let mut app = tui_common::ready(tui_common::SAMPLE, 120, 40);
    let before = tui_common::screen(&app);
    assert!(before.contains("Categories"), "{before}");
    tui_common::typed(&mut app, "F");
    let s = tui_common::screen(&app);
    assert!(
        s.contains("Finding")
            && s.contains("syn–syn")
            && s.contains("id–id")
            && s.contains("syn–id"),
        "{s}"
    );
    let a = app.prepared().unwrap();
    let fd = codescope::analysis::finding::Finding::of(a);
    assert_eq!(fd.layers.len(), a.layers());
    let l1 = &fd.layers[0];
    let want = format!(" 1  {:.2}({:.2})", l1.rels[0].best_f1, l1.rels[0].mean_f1);
    assert!(s.contains(&want), "no `{want}` in\n{s}");
    assert!(s.contains(fd.reading().split(' ').next().unwrap()), "{s}");
    tui_common::typed(&mut app, "F");
    assert!(tui_common::screen(&app).contains("Categories"));
}

/// The status line keeps to what holds now: a load error gives way once a model loads,
/// the start-up note gives way to later messages, and the analysis time is labelled.
#[test]
fn status_line_messages_expire_and_fields_are_labelled() {
    let (mut app, _) = fresh(SAMPLE, 120, 40, theme(ColorMode::TrueColor));
    app.update(Msg::Worker(WorkerMsg::ModelFailed {
        label: "foo".into(),
        error: "model 'foo' not found".into(),
    }));
    let s = screen(&app);
    assert!(s.contains("model foo: model 'foo' not found"), "{s}");
    app.update(Msg::Worker(WorkerMsg::ModelLoaded {
        info: model().info.clone(),
        label: "tiny".into(),
        notice: Some("CodeBERT is not cached: using tiny".into()),
    }));
    let s = screen(&app);
    assert!(!s.contains("not found"), "a stale load error stays:\n{s}");
    assert!(s.contains("CodeBERT is not cached"), "{s}");
    // A later message replaces the start-up note.
    let req = app.shown.doc_req;
    app.update(Msg::Worker(WorkerMsg::AnalyseFailed {
        req,
        error: "the input has no code tokens".into(),
    }));
    let s = screen(&app);
    assert!(
        s.contains("the input has no code tokens") && !s.contains("CodeBERT is not cached"),
        "{s}"
    );
    // The analysis time has its label.
    let app = ready(SAMPLE, 160, 40);
    let s = screen(&app);
    assert!(!s.contains("│ 0 ms") || s.contains("analysed in"), "{s}");
}

/// The README's key table is the keymap's (`keymap::readme_table`): a key added, removed or
/// re-described in one place and not the other fails here. To update the README, replace
/// its table with the one this test prints.
#[test]
fn the_readme_key_table_is_the_keymap() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md");
    let readme = std::fs::read_to_string(path).expect("README.md");
    let start = readme
        .find("| key | action |\n")
        .expect("the README's key table");
    let end = readme[start..]
        .find("\n\n")
        .map_or(readme.len(), |e| start + e + 1);
    let want = codescope::tui::keymap::readme_table();
    assert!(
        readme[start..end] == want,
        "the README's key table differs from the keymap; it should be:\n{want}"
    );
}

/// The model picker scrolls when its presets do not fit (80x24): the choice stays in
/// view, what is hidden above and below is counted, and the typed spec's line stays.
#[test]
fn the_model_picker_scrolls_to_its_choice() {
    let mut app = ready(SAMPLE, 80, 24);
    typed(&mut app, "M");
    let s = screen(&app);
    assert!(
        s.contains("▾") && s.contains("more") && s.contains("other:"),
        "{s}"
    );
    let n = codescope::model::source::PRESETS.len();
    let last = codescope::model::source::PRESETS[n - 1].name;
    assert!(!s.contains(last), "{s}");
    press(&mut app, &vec![KeyCode::Down; n - 1]);
    let s = screen(&app);
    assert!(
        s.contains(last) && s.contains("▴") && s.contains("other:"),
        "{s}"
    );
}

/// `r` analyses only some lines of the file: they become the snippet (dedented), the
/// code panel names them, a bad range says why and changes nothing, and an empty answer
/// brings the whole file back.
#[test]
fn r_analyses_a_region_of_the_file_and_empty_brings_the_whole_back() {
    let whole = "import os\n\n\ndef area(w, h):\n    return w * h\n\n\ndef twice(x):\n    y = x + x\n    return y\n";
    let mut app = ready(whole, 120, 40);
    let n_whole = app.prepared().unwrap().tokens.len();
    typed(&mut app, "r");
    assert!(screen(&app).contains("lines A-B:"), "{}", screen(&app));
    typed(&mut app, "8-10");
    press(&mut app, &[KeyCode::Enter]);
    assert_eq!(app.doc.text, "def twice(x):\n    y = x + x\n    return y\n");
    assert!(app.doc.name.ends_with("lines 8-10"), "{}", app.doc.name);
    let a = app.prepared().expect("the region is analysed");
    assert!(a.tokens.len() < n_whole);
    assert!(a.tokens.iter().all(|t| !t.text.contains("area")));
    let s = screen(&app);
    assert!(s.contains("lines 8-10"), "{s}");
    // A method indented in its class parses as a method: dedented.
    let r = app.region.clone().unwrap();
    assert_eq!((r.text.as_str(), r.lines), (whole, (8, 10)));
    // A bad range: a warning, the region stays.
    typed(&mut app, "r");
    press(&mut app, &[KeyCode::Backspace; 8]);
    typed(&mut app, "40-50");
    press(&mut app, &[KeyCode::Enter]);
    assert!(
        screen(&app).contains("the snippet has 10 lines"),
        "{}",
        screen(&app)
    );
    assert!(app.doc.name.ends_with("lines 8-10"));
    // Another range of the whole file (not of the region).
    typed(&mut app, "r");
    press(&mut app, &[KeyCode::Backspace; 8]);
    typed(&mut app, "4-5");
    press(&mut app, &[KeyCode::Enter]);
    assert_eq!(app.doc.text, "def area(w, h):\n    return w * h\n");
    // An edit of the lines shown is not carried into the whole file, and it says so.
    typed(&mut app, "e");
    app.type_keys("# note\n");
    let fx = app.update(key(KeyCode::Esc));
    serve(&mut app, fx);
    assert!(app.doc.edited);
    // Empty: the whole file again, analysed.
    typed(&mut app, "r");
    press(&mut app, &[KeyCode::Backspace; 8]);
    press(&mut app, &[KeyCode::Enter]);
    assert_eq!(app.doc.text, whole);
    assert!(screen(&app).contains("not kept"), "{}", screen(&app));
    assert!(app.region.is_none());
    assert_eq!(app.prepared().unwrap().tokens.len(), n_whole);
}
