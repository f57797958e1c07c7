//! Shared by the `tui_*` tests: a tiny random-weight model (written once per test binary
//! to a temp dir and loaded through the real path), and an `App` driven to a ready state
//! without a terminal or a worker thread: effects are served synchronously.

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use codescope::model::source::ModelFiles;
use codescope::model::testutil::{write_tiny_model, Tiny};
use codescope::model::LoadedModel;
use codescope::syntax::Language;
use codescope::tui::app::{App, Config};
use codescope::tui::data::Doc;
use codescope::tui::msg::{Effect, Msg, WorkerMsg};
use codescope::tui::theme::{ColorMode, Theme};
use codescope::tui::widgets::draw;
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::backend::TestBackend;
use ratatui::Terminal;

pub const SAMPLE: &str = codescope::commands::DEFAULT_SAMPLE.1;
pub const ONE_LINE: &str = "total = price * (1 + rate)\n";

struct Shared {
    _dir: tempfile::TempDir,
    model: LoadedModel,
}

/// The tiny model (3 layers x 4 heads, 512-position window), loaded once.
pub fn model() -> &'static LoadedModel {
    static M: OnceLock<Shared> = OnceLock::new();
    &M.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        write_tiny_model(
            dir.path(),
            &Tiny {
                layers: 3,
                heads: 4,
                max_positions: 512,
                seed: 11,
                ..Tiny::default()
            },
        )
        .unwrap();
        let files = ModelFiles::from_dir(dir.path(), "tiny".into()).unwrap();
        let model = LoadedModel::load(&files).unwrap();
        Shared { _dir: dir, model }
    })
    .model
}

/// A tiny decoder fixture from `tests/fixtures/` (`tiny_llama`, `tiny_qwen2`,
/// `tiny_gpt2`: 2 layers x 4 heads, 64-position window, 300-token vocabulary), loaded
/// once per test binary.
pub fn fixture(name: &str) -> &'static LoadedModel {
    use std::collections::HashMap;
    use std::sync::Mutex;
    static M: OnceLock<Mutex<HashMap<String, &'static LoadedModel>>> = OnceLock::new();
    let mut m = M.get_or_init(Default::default).lock().unwrap();
    m.entry(name.to_string()).or_insert_with(|| {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures")
            .join(name);
        let files = ModelFiles::from_dir(&dir, name.into()).unwrap();
        Box::leak(Box::new(LoadedModel::load(&files).unwrap()))
    })
}

/// A short function that fits the decoder fixtures' 64-position window.
pub const SHORT: &str = "def area(w, h):\n    return w * h\n";

/// A deterministic snippet of about 600 code tokens (longer than the tiny model's
/// window, so it exercises truncation).
pub fn long_snippet() -> String {
    let mut s = String::new();
    for i in 0..40 {
        s.push_str(&format!(
            "def step_{i}(values, scale={i}):\n    total = 0\n    for v in values:\n        total += v * scale\n    return total\n\n"
        ));
    }
    s
}

pub fn theme(mode: ColorMode) -> Theme {
    Theme::new(mode, false)
}

/// A new app on `text` (not analysed yet), sized `w x h`.
pub fn fresh(text: &str, w: u16, h: u16, theme: Theme) -> (App, Vec<Effect>) {
    let doc = Doc::new("snippet.py", text, Language::Python);
    let mut app = App::new(
        Config {
            theme,
            model_spec: Some("tiny".into()),
        },
        doc,
    );
    app.update(Msg::Resize {
        width: w,
        height: h,
    });
    let fx = app.start();
    (app, fx)
}

/// Serve effects like the runtime would, synchronously: parses, file reads and path
/// completions run right away (the I/O thread's functions), model loads succeed with the tiny model, analyses
/// run through the pipeline with the worker's options, probe labels and AST-Probe trees
/// are computed.
/// Preset checks are dropped (the picker shows no availability, independent of the
/// machine's cache). Returns the effects it did not serve (Quit, Export, Probe).
/// A decoder fixture loaded by [`ready_decoder`] keeps serving its app's analyses.
pub fn serve(app: &mut App, fx: Vec<Effect>) -> Vec<Effect> {
    match app.model.loaded.as_ref().map(|(l, _)| l.clone()) {
        Some(l) if l.starts_with("tiny_") => serve_with(app, fx, fixture(&l), &l),
        _ => serve_with(app, fx, model(), "tiny"),
    }
}

/// What the worker sends for a head ablation, in order (one report per head).
pub fn ablation_msgs(
    model: &LoadedModel,
    job: &codescope::tui::msg::AblationJob,
) -> Vec<WorkerMsg> {
    let out = std::sync::Mutex::new(Vec::new());
    codescope::tui::worker::ablation_job(model, job, &|| false, &|w| out.lock().unwrap().push(w));
    out.into_inner().unwrap()
}

/// The tiny Llama explorer at small sizes (down to below the minimum), colourless and
/// `--ascii`, after `keys`: never a panic, and in `--ascii` no drawing glyph (box
/// drawing, blocks, shades, markers). `check` gets each screen with its size.
pub fn on_small_screens(keys: &[KeyCode], check: impl Fn(u16, u16, &str)) {
    for (w, h) in [(80, 24), (60, 16), (20, 5)] {
        for th in [
            Theme::new(ColorMode::None, false),
            Theme {
                ascii: true,
                ..Theme::new(ColorMode::TrueColor, false)
            },
        ] {
            let mut app = ready_decoder("tiny_llama", SHORT, w, h, th);
            press(&mut app, keys);
            let s = screen(&app);
            if th.ascii {
                let bad: String = s
                    .chars()
                    .filter(|c| ('\u{2500}'..='\u{25ff}').contains(c))
                    .collect();
                assert!(bad.is_empty(), "{w}x{h}: {bad:?}\n{s}");
            }
            check(w, h, &s);
        }
    }
}

/// [`serve`] with another model.
pub fn serve_with(app: &mut App, fx: Vec<Effect>, model: &LoadedModel, label: &str) -> Vec<Effect> {
    let mut left = Vec::new();
    let mut queue = fx;
    while !queue.is_empty() {
        let mut next = Vec::new();
        for e in queue {
            match e {
                Effect::LoadModel(..) => {
                    next.extend(app.update(Msg::Worker(WorkerMsg::ModelLoaded {
                        info: model.info.clone(),
                        label: label.into(),
                        notice: None,
                    })))
                }
                Effect::Parse(job) => next.extend(app.update(codescope::tui::io::parse(&job))),
                Effect::ReadFile(path) => {
                    next.extend(app.update(codescope::tui::io::read_file(&path)))
                }
                Effect::Complete(typed) => {
                    next.extend(app.update(codescope::tui::io::complete(&typed)))
                }
                Effect::CheckPresets(_) => {}
                Effect::LabelToken(key, job) => next.extend(app.update(Msg::TokenLabel {
                    key,
                    label: codescope::probe::label::label_token(&job),
                })),
                Effect::AstTree(key, job) => next.extend(app.update(Msg::AstTree {
                    key,
                    result: codescope::probe::astprobe::view::tree_job(&job),
                })),
                Effect::Analyse(job) => {
                    let mut a = codescope::tui::worker::analyse_job(model, &job).unwrap();
                    a.elapsed = Duration::from_millis(42);
                    let data = Arc::new(a);
                    next.extend(
                        app.update(Msg::Worker(WorkerMsg::Analysed { req: job.req, data })),
                    );
                }
                Effect::Layer(key, a) => next.extend(app.update(Msg::Worker(
                    codescope::tui::worker::layer_job(model, key, &a),
                ))),
                Effect::Knockout(job) => next.extend(app.update(Msg::Worker(
                    codescope::tui::worker::knockout_job(model, &job, None),
                ))),
                Effect::Lens(job) => next
                    .extend(app.update(Msg::Worker(codescope::tui::worker::lens_job(model, &job)))),
                Effect::Patch(job) => next.extend(
                    app.update(Msg::Worker(codescope::tui::worker::patch_job(model, &job))),
                ),
                Effect::Ablate(job) => {
                    for w in ablation_msgs(model, &job) {
                        next.extend(app.update(Msg::Worker(w)));
                    }
                }
                Effect::Compare(job) => {
                    let out = std::cell::RefCell::new(Vec::new());
                    codescope::tui::worker::compare(model, &job, None, &|w| {
                        out.borrow_mut().push(w)
                    });
                    for w in out.into_inner() {
                        next.extend(app.update(Msg::Worker(w)));
                    }
                }
                other => left.push(other),
            }
        }
        queue = next;
    }
    left
}

/// An analysed app on `text`.
pub fn ready(text: &str, w: u16, h: u16) -> App {
    ready_with(text, w, h, theme(ColorMode::TrueColor))
}

pub fn ready_with(text: &str, w: u16, h: u16, theme: Theme) -> App {
    let (mut app, fx) = fresh(text, w, h, theme);
    serve(&mut app, fx);
    app
}

pub fn key(c: KeyCode) -> Msg {
    Msg::Key(KeyEvent::new(c, KeyModifiers::NONE))
}

pub fn ctrl(c: char) -> Msg {
    Msg::Key(KeyEvent::new(KeyCode::Char(c), KeyModifiers::CONTROL))
}

/// An analysed app on `text` with the decoder fixture `name`.
pub fn ready_decoder(name: &str, text: &str, w: u16, h: u16, theme: Theme) -> App {
    let (mut app, fx) = fresh(text, w, h, theme);
    serve_with(&mut app, fx, fixture(name), name);
    app
}

/// Send keys and serve the effects.
pub fn press(app: &mut App, keys: &[KeyCode]) -> Vec<Effect> {
    let mut left = Vec::new();
    for &k in keys {
        let fx = app.update(key(k));
        left.extend(serve(app, fx));
    }
    left
}

/// Type plain characters and serve the effects.
pub fn typed(app: &mut App, s: &str) -> Vec<Effect> {
    let fx = app.type_keys(s);
    serve(app, fx)
}

/// Render to a test terminal of the app's size.
pub fn render(app: &App) -> Terminal<TestBackend> {
    let (w, h) = app.size;
    let mut t = Terminal::new(TestBackend::new(w, h)).unwrap();
    t.draw(|f| draw(app, f)).unwrap();
    t
}

/// The screen as text.
pub fn screen(app: &App) -> String {
    render(app).backend().to_string()
}

/// A hand-made probe report for `task`: `layers + 1` rows (0 = embeddings) with
/// accuracy rising then falling and a flat-ish control, no training involved.
pub fn synthetic_report(layers: usize, task: &str) -> codescope::probe::ProbeReport {
    use codescope::probe::{CorpusInfo, PairFeatures, ProbeReport, ProbeResult, Split};
    let mut info = model().info.clone();
    info.layers = layers;
    let results = (0..=layers)
        .map(|l| {
            let x = l as f64 / layers.max(1) as f64;
            let accuracy = 0.55 + 0.4 * (1.0 - (2.0 * x - 1.2).powi(2)).max(0.0);
            let control_accuracy = 0.48 + 0.1 * x + if l == 0 { 0.1 } else { 0.0 };
            ProbeResult {
                task: task.into(),
                probe: "linear".into(),
                layer: l,
                accuracy,
                control_accuracy,
                selectivity: accuracy - control_accuracy,
                clusters: None,
                train_size: 4210,
                test_size: 1032,
                seconds: 0.5,
                majority: 0.31,
            }
        })
        .collect();
    ProbeReport {
        model: info,
        corpus: CorpusInfo {
            source: "bundled:python".into(),
            snippets: 311,
        },
        split: Split::Snippet,
        pair_features: PairFeatures::Diff,
        protocol: Default::default(),
        results,
        structural: Vec::new(),
        ast: Vec::new(),
        ast_gold: Vec::new(),
        probes: Vec::new(),
    }
}

/// Fitted probes for `task` at every hidden layer of the app's analysis, trained on the
/// snippet's own token features (train = test: a deterministic stand-in for the bundled
/// corpus, enough to exercise the per-token label).
pub fn own_probes(app: &App, task: codescope::probe::Task) -> Vec<codescope::probe::LayerProbe> {
    use codescope::probe::train::{train_eval_keep, Labelled, TrainOptions};
    let p = app.prepared().unwrap();
    let feat = p.features.as_ref().expect("source-mode features");
    let syn = app.doc.syntax.as_ref().unwrap();
    let ex = codescope::probe::dataset::label_snippet(
        task,
        syn,
        &feat.tokens,
        0,
        0,
        &mut codescope::probe::Rng::new(0),
    );
    let y: Vec<u32> = ex.iter().map(|e| e.label as u32).collect();
    let classes = task.classes().len();
    (0..feat.layers.len())
        .map(|l| {
            let x = &feat.layers[l];
            let width = x.len() / feat.tokens.len();
            let (_, clf) = train_eval_keep(
                Labelled { x, y: &y },
                Labelled { x, y: &y },
                width,
                classes,
                &TrainOptions::default(),
            )
            .unwrap();
            codescope::probe::LayerProbe {
                task,
                layer: l,
                classifier: Arc::new(clf),
            }
        })
        .collect()
}

/// The probe job among `fx`.
pub fn probe_job(fx: &[Effect]) -> Option<codescope::tui::msg::ProbeJob> {
    fx.iter().find_map(|e| match e {
        Effect::Probe(j) => Some(j.clone()),
        _ => None,
    })
}

/// Serve only the parse and file-read effects among `fx` (what the I/O thread does) and
/// return every other effect, including those the parses led to (the analysis jobs).
pub fn parsed(app: &mut App, fx: Vec<Effect>) -> Vec<Effect> {
    let mut out = Vec::new();
    let mut queue = fx;
    while !queue.is_empty() {
        let mut next = Vec::new();
        for e in queue {
            match e {
                Effect::Parse(job) => next.extend(app.update(codescope::tui::io::parse(&job))),
                Effect::ReadFile(path) => {
                    next.extend(app.update(codescope::tui::io::read_file(&path)))
                }
                other => out.push(other),
            }
        }
        queue = next;
    }
    out
}

/// After a test changed the app's state directly (not through a message), let it settle
/// (a resize to the same size) and serve what that asks for (e.g. the probe label).
pub fn resettle(app: &mut App) {
    let (width, height) = app.size;
    let fx = app.update(Msg::Resize { width, height });
    serve(app, fx);
}

/// The cells of `area` with their styles, for snapshots that must see colour: one line
/// per row, runs of equally styled cells written `[fg/bg/modifiers]text` (colours as the
/// terminal gets them: `#rrggbb`, a 256-colour index, or a named colour; `-` = reset).
pub fn styled(app: &App, area: ratatui::layout::Rect) -> String {
    use ratatui::style::Color;
    let t = render(app);
    let buf = t.backend().buffer();
    let color = |c: Color| match c {
        Color::Reset => "-".to_string(),
        Color::Rgb(r, g, b) => format!("#{r:02x}{g:02x}{b:02x}"),
        Color::Indexed(i) => format!("{i}"),
        other => format!("{other:?}").to_lowercase(),
    };
    let mut out = String::new();
    for y in area.top()..area.bottom() {
        let mut prev: Option<String> = None;
        for x in area.left()..area.right() {
            let cell = &buf[(x, y)];
            let st = format!(
                "[{}/{}{}]",
                color(cell.fg),
                color(cell.bg),
                if cell.modifier.is_empty() {
                    String::new()
                } else {
                    format!("/{:?}", cell.modifier)
                }
            );
            if prev.as_deref() != Some(st.as_str()) {
                out.push_str(&st);
                prev = Some(st);
            }
            out.push_str(cell.symbol());
        }
        out.push('\n');
    }
    out
}
