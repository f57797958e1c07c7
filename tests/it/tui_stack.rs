//! The explorer's stack key (`E`) on an encoder–decoder (tiny T5): encoder → decoder →
//! cross → encoder, each a reload of the model for that stack and a new analysis; the
//! status bar names the stack; on the cross stack the head grid and the finding say why
//! they show no scores, and every key and panel copes with the cross-attention map; a
//! one-stack model says so in one line. The real worker loads the stack it is asked for.
//! Sessions and tour steps keep the stack; `render --tour` draws each step's.

use std::collections::HashMap;
use std::sync::{mpsc, Arc, Mutex, OnceLock};
use std::time::Duration;

use codescope::model::source::ModelFiles;
use codescope::model::{LoadOptions, LoadedModel, Stack};
use codescope::syntax::Language;
use codescope::tui::app::{App, Focus, CROSS_NO_SCORES};
use codescope::tui::msg::{AnalyseJob, Effect, Msg, WorkerMsg};
use codescope::tui::theme::ColorMode;
use codescope::tui::worker::Worker;
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use crate::tui_common::{fresh, screen, serve_with, theme, SHORT};

/// tiny_t5 loaded with `stack` (once per stack).
fn t5(stack: Stack) -> &'static LoadedModel {
    static M: OnceLock<Mutex<HashMap<&'static str, &'static LoadedModel>>> = OnceLock::new();
    let mut m = M
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    m.entry(stack.name()).or_insert_with(|| {
        let dir = std::path::PathBuf::from(crate::cli_sources::fixture("tiny_t5"));
        let files = ModelFiles::from_dir(&dir, "tiny_t5".into()).unwrap();
        let lo = LoadOptions {
            random_weights: None,
            stack,
        };
        Box::leak(Box::new(LoadedModel::load_opts(&files, &lo).unwrap()))
    })
}

/// Serve effects as the runtime would, a load answered by tiny_t5 with the stack it asks
/// for (the rest with the stack loaded last).
fn serve_t5(app: &mut App, fx: Vec<Effect>) -> Vec<Effect> {
    let mut left = Vec::new();
    for e in fx {
        let stack = match &e {
            Effect::LoadModel(_, _, s) => *s,
            _ => app.model.stack,
        };
        left.extend(serve_with(app, vec![e], t5(stack), "tiny_t5"));
    }
    left
}

fn press(app: &mut App, c: char) -> Vec<Effect> {
    let fx = app.update(Msg::Key(KeyEvent::new(
        KeyCode::Char(c),
        KeyModifiers::NONE,
    )));
    serve_t5(app, fx)
}

fn t5_app() -> App {
    let (mut app, fx) = fresh(SHORT, 120, 40, theme(ColorMode::TrueColor));
    serve_t5(&mut app, fx);
    app
}

fn shown_stack(app: &App) -> Option<&'static str> {
    app.prepared().and_then(|p| p.trace.model.stack)
}

#[test]
fn the_stack_key_cycles_an_encoder_decoders_stacks() {
    let mut app = t5_app();
    assert_eq!(shown_stack(&app), Some("encoder"));
    assert!(screen(&app).contains("t5, encoder stack"));

    // Decoder: a reload for that stack and its analysis (causal attention, surprisal).
    let fx = app.update(Msg::Key(KeyEvent::new(
        KeyCode::Char('E'),
        KeyModifiers::NONE,
    )));
    assert!(
        matches!(&fx[0], Effect::LoadModel(Some(l), None, Stack::Decoder) if l == "tiny_t5"),
        "{fx:?}"
    );
    serve_t5(&mut app, fx);
    assert_eq!(shown_stack(&app), Some("decoder"));
    assert!(!app.stale());
    let s = screen(&app);
    assert!(s.contains("t5, decoder stack"), "{s}");
    assert!(!s.contains("no head scores"), "{s}");
    let a = app.prepared().unwrap().clone();
    assert!(a.trace.model.causal);
    press(&mut app, 'S');
    assert!(app.view.surprisal);
    assert!(app.prepared().unwrap().surprisal.is_some());
    // The knockout (K) runs on the decoder's self-attention.
    press(&mut app, 'K');
    let (_, k) = app
        .knockout
        .result
        .clone()
        .expect("a knockout on the decoder stack");
    assert_eq!((k.edges.as_str(), k.measure.name()), ("syn-id", "bits"));
    press(&mut app, 'K');
    app.knockout = Default::default();

    // Cross: the heat map and categories, no head scores (and the line saying why).
    press(&mut app, 'E');
    assert_eq!(shown_stack(&app), Some("cross"));
    assert!(!app.view.surprisal, "the cross stack has no LM head");
    let s = screen(&app);
    assert!(s.contains("t5, cross stack"), "{s}");
    assert!(s.contains("no head scores on the cross"), "{s}");
    assert!(!s.contains("waiting for the analysis"), "{s}");
    press(&mut app, 'F');
    assert!(app.view.finding);
    let s = screen(&app);
    assert!(
        s.contains("Finding") && s.contains("no head scores on the cross"),
        "{s}"
    );
    press(&mut app, 'F');
    // The overview: every head's cross-attention thumbnail, no scores under them.
    press(&mut app, 'O');
    let s = screen(&app);
    assert!(
        s.contains("Overview") && s.contains("no head scores on the cross"),
        "{s}"
    );
    let fig = codescope::tui::figures::figure_data_with(&app, true).unwrap();
    let o = fig.overview.expect("the overview's thumbnails");
    assert!(o
        .heads
        .iter()
        .flatten()
        .all(|t| t.score.is_none() && t.max > 0.0));
    let fx = app.update(Msg::Key(KeyEvent::new(KeyCode::Esc, KeyModifiers::NONE)));
    serve_t5(&mut app, fx);

    // Back to the encoder: scores again.
    press(&mut app, 'E');
    assert_eq!(shown_stack(&app), Some("encoder"));
    let s = screen(&app);
    assert!(
        s.contains("t5, encoder stack") && !s.contains("no head scores"),
        "{s}"
    );
    assert!(CROSS_NO_SCORES.contains("within one sequence"));
}

/// Every key of the keymap on the cross stack's map (decoder rows over encoder columns),
/// in every panel, at two sizes: no panic, and a frame drawn after each.
#[test]
fn every_key_and_panel_copes_with_the_cross_stack() {
    use codescope::tui::keymap::{Command, KEYMAP};
    for (w, h) in [(120, 40), (80, 24)] {
        let (mut app, fx) = fresh(SHORT, w, h, theme(ColorMode::TrueColor));
        serve_t5(&mut app, fx);
        press(&mut app, 'E');
        press(&mut app, 'E');
        assert_eq!(shown_stack(&app), Some("cross"));
        for focus in Focus::ALL {
            app.view.focus = focus;
            for (k, c) in KEYMAP.iter().flat_map(|s| s.rows).flat_map(|b| b.bind) {
                if matches!(
                    c,
                    Command::Quit | Command::QuitNow | Command::Suspend | Command::Stack
                ) {
                    continue;
                }
                let mods = if k.ctrl {
                    KeyModifiers::CONTROL
                } else {
                    KeyModifiers::NONE
                };
                let fx = app.update(Msg::Key(KeyEvent::new(k.code, mods)));
                serve_t5(&mut app, fx);
                let _ = screen(&app);
                // Close whatever the key opened (prompts, overlays, the editor).
                let fx = app.update(Msg::Key(KeyEvent::new(KeyCode::Esc, KeyModifiers::NONE)));
                serve_t5(&mut app, fx);
                if app.editor.is_some() {
                    let fx = app.update(Msg::Key(KeyEvent::new(
                        KeyCode::Char('d'),
                        KeyModifiers::CONTROL,
                    )));
                    serve_t5(&mut app, fx);
                }
                app.quit = false;
                let _ = screen(&app);
            }
        }
        // Clicks and the wheel everywhere on the screen (heat-map cells, head-grid cells).
        use crossterm::event::{MouseButton, MouseEvent, MouseEventKind};
        for row in (0..h).step_by(2) {
            for column in (0..w).step_by(3) {
                for kind in [
                    MouseEventKind::Down(MouseButton::Left),
                    MouseEventKind::ScrollDown,
                ] {
                    let fx = app.update(Msg::Mouse(MouseEvent {
                        kind,
                        column,
                        row,
                        modifiers: KeyModifiers::NONE,
                    }));
                    serve_t5(&mut app, fx);
                }
            }
            let _ = screen(&app);
        }
        assert_eq!(app.model.stack, Stack::Cross);
    }
}

#[test]
fn a_one_stack_model_says_why_the_stack_key_does_nothing() {
    let mut app = crate::tui_common::ready(SHORT, 120, 40);
    let fx = app.update(Msg::Key(KeyEvent::new(
        KeyCode::Char('E'),
        KeyModifiers::NONE,
    )));
    assert!(fx.is_empty(), "{fx:?}");
    let (_, line) = app.status.message.clone().unwrap();
    assert!(
        line.contains("has one stack") && line.contains("t5, bart, plbart"),
        "{line}"
    );
    assert!(screen(&app).contains("has one stack"));
}

/// The worker loads the stack the explorer asks for and analyses with it.
#[test]
fn the_worker_loads_the_stack_asked_for() {
    let (tx, rx) = mpsc::channel();
    let cache = tempfile::tempdir().unwrap();
    let w = Worker::spawn(cache.path().into(), move |m| {
        let _ = tx.send(m);
    });
    w.load(
        Some(crate::cli_sources::fixture("tiny_t5")),
        None,
        Stack::Cross,
    );
    w.analyse(AnalyseJob {
        req: 1,
        syntax: Arc::new(codescope::analysis::parse(SHORT, Language::Python).unwrap()),
        opts: Default::default(),
        surprisal: false,
        base: None,
    });
    let (mut loaded, mut analysed) = (None, None);
    while analysed.is_none() {
        match rx
            .recv_timeout(Duration::from_secs(60))
            .expect("worker answers")
        {
            WorkerMsg::ModelLoaded { info, .. } => loaded = Some(info),
            WorkerMsg::Analysed { data, .. } => analysed = Some(data),
            WorkerMsg::ModelFailed { error, .. } | WorkerMsg::AnalyseFailed { error, .. } => {
                panic!("{error}")
            }
            _ => {}
        }
    }
    assert_eq!(loaded.unwrap().stack, Some("cross"));
    assert_eq!(analysed.unwrap().trace.model.stack, Some("cross"));
    w.join();
}

/// A session keeps the stack and brings it back; a tour step names one, and the
/// explorer's step loads it.
#[test]
fn sessions_and_tour_steps_keep_the_stack() {
    let mut app = t5_app();
    press(&mut app, 'E');
    let s = app.session();
    assert_eq!(s.stack.as_deref(), Some("decoder"));
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("s.json");
    codescope::present::session::save_to(&s, &p).unwrap();
    let back = codescope::present::session::load_from(&p).unwrap();
    assert_eq!(back.stack.as_deref(), Some("decoder"));
    // A session saved before stacks were kept still loads (no stack: the default).
    let old = std::fs::read_to_string(&p)
        .unwrap()
        .replace("\"stack\": \"decoder\",", "");
    std::fs::write(&p, old).unwrap();
    assert_eq!(
        codescope::present::session::load_from(&p).unwrap().stack,
        None
    );
    // One-stack models keep none.
    assert_eq!(
        crate::tui_common::ready(SHORT, 80, 24).session().stack,
        None
    );

    // B records the stack in the step; stepping to a step with another stack reloads.
    let step = app.step_here().unwrap();
    assert_eq!(step.stack.as_deref(), Some("decoder"));
    let text = codescope::present::tour::step_toml(&step);
    assert!(text.contains("stack = \"decoder\""), "{text}");
    let tour = codescope::present::tour::Tour::parse(&format!(
        "{text}\n[[step]]\ncode = \"x = 1\\n\"\nstack = \"cross\"\n\n[[step]]\ncode = \"y = 2\\n\"\n"
    ))
    .unwrap();
    assert_eq!(
        tour.stacks(Stack::Encoder),
        vec![Stack::Decoder, Stack::Cross, Stack::Cross]
    );
    let bad = codescope::present::tour::Tour::parse("[[step]]\ncode = \"x\"\nstack = \"middle\"\n")
        .unwrap_err();
    assert!(
        bad.contains("step 1") && bad.contains("encoder, decoder, cross"),
        "{bad}"
    );
}

/// A tour whose steps name stacks: the explorer's `]` reloads the model with each step's
/// stack (inherited by a step that names none), and `render --tour` draws each step on its
/// stack (the figure's title names it; a cross step's head grid is refused in one line).
#[test]
fn tour_steps_run_on_their_stacks_in_the_explorer_and_the_deck() {
    let root = tempfile::tempdir().unwrap();
    let tmp = root.path();
    std::fs::write(tmp.join("a.py"), SHORT).unwrap();
    let model = crate::cli_sources::fixture("tiny_t5");
    let tour = format!(
        "[[step]]\nfile = \"a.py\"\nmodel = \"{model}\"\nstack = \"decoder\"\n\n[[step]]\nfile = \"a.py\"\nstack = \"cross\"\n\n[[step]]\nfile = \"a.py\"\nview = \"categories\"\n"
    );
    let tour_path = tmp.join("talk.toml");
    std::fs::write(&tour_path, &tour).unwrap();

    let mut app = t5_app();
    app.present.tour = Some(codescope::tui::tour_state(&tour_path).unwrap());
    for want in [Stack::Decoder, Stack::Cross, Stack::Cross] {
        let fx = app.update(Msg::Key(KeyEvent::new(
            KeyCode::Char(']'),
            KeyModifiers::NONE,
        )));
        serve_t5(&mut app, fx);
        assert_eq!(app.model.stack, want);
        assert_eq!(shown_stack(&app), Some(want.name()));
    }
    // And back to the first step's stack.
    for _ in 0..2 {
        let fx = app.update(Msg::Key(KeyEvent::new(
            KeyCode::Char('['),
            KeyModifiers::NONE,
        )));
        serve_t5(&mut app, fx);
    }
    assert_eq!(shown_stack(&app), Some("decoder"));

    let out = tmp.join("deck");
    let o = crate::cli_sources::sandboxed(tmp)
        .args(["render", "--tour"])
        .arg(&tour_path)
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    crate::cli_sources::ok(&o);
    let mut titles = Vec::new();
    for e in std::fs::read_dir(&out).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "svg") {
            let svg = std::fs::read_to_string(&p).unwrap();
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            titles.push((
                name,
                svg.contains("t5, decoder stack"),
                svg.contains("t5, cross stack"),
            ));
        }
    }
    titles.sort();
    let flags: Vec<(bool, bool)> = titles.iter().map(|t| (t.1, t.2)).collect();
    assert_eq!(
        flags,
        [(true, false), (false, true), (false, true)],
        "{titles:?}"
    );

    // The cross stack's head grid as a figure: one line saying why not.
    std::fs::write(
        &tour_path,
        format!(
            "[[step]]\nfile = \"a.py\"\nmodel = \"{model}\"\nstack = \"cross\"\nview = \"heads\"\n"
        ),
    )
    .unwrap();
    let o = crate::cli_sources::sandboxed(tmp)
        .args(["render", "--tour"])
        .arg(&tour_path)
        .arg("--out")
        .arg(tmp.join("deck2"))
        .output()
        .unwrap();
    let line = crate::cli_sources::fails(&o);
    assert!(
        line.contains("step 1") && line.contains("no head scores on the cross stack"),
        "{line}"
    );
}

/// The causal tests in the explorer on the cross stack of tiny_t5: the knockout mode (`K`)
/// blocks pairs in the cross-attention and measures the decoder's bits (the numbers of
/// `codescope knockout --stack cross`), the ablation score (`7`) fills the head grid
/// (the cross stack's note is about the gold-graph scores, not the causal ones), and the
/// logit lens (`Y`) opens on the decoder's residual stream.
#[test]
fn knockout_ablation_and_lens_run_on_the_cross_stack_in_the_explorer() {
    use codescope::analysis::causal;
    let mut app = t5_app();
    press(&mut app, 'E');
    press(&mut app, 'E');
    assert_eq!(shown_stack(&app), Some("cross"));
    press(&mut app, 'K');
    let (_, k) = app
        .knockout
        .result
        .clone()
        .expect("a knockout on the cross stack");
    assert_eq!((k.edges.as_str(), k.measure.name()), ("syn-id", "bits"));
    assert!(k.token_pairs > 0);
    let opts = causal::KnockoutOptions {
        edges: causal::EdgeSet::parse("syn-id").unwrap(),
        layers: None,
        heads: None,
        control: 0,
        seed: 0,
        mode: codescope::analysis::Mode::Source,
        probe: None,
    };
    let want = causal::knockout(t5(Stack::Cross), SHORT, Language::Python, &opts).unwrap();
    assert_eq!(k.delta, want.delta, "the library's cross-stack knockout");
    assert!(k.delta.iter().flatten().any(|d| d.abs() > 0.0));
    app.knockout = Default::default();

    press(&mut app, '7');
    let s = screen(&app);
    assert!(!s.contains("no head scores on the cross"), "{s}");
    assert!(s.contains("heads zeroed (Δ bits)"), "{s}");
    let grid = app
        .grid_values(codescope::tui::data::Metric::AblationId)
        .unwrap_or_default();
    assert_eq!(grid.len(), 1, "one decoder layer");
    assert!(grid[0].iter().all(|v| v.is_some()), "{grid:?}");
    // The scores against the gold graphs still give the note.
    press(&mut app, '1');
    assert!(screen(&app).contains("no head scores on the cross"));

    press(&mut app, 'Y');
    let lens = app.lens.result.clone().expect("a lens on the cross stack");
    assert!(lens.is_ok(), "{:?}", lens.err());
}
