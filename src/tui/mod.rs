//! The interactive explorer: `codescope [--model SPEC] [--lang L] [--theme T] [FILE]`.
//!
//! Architecture (ARCHITECTURE.md; shapes of ratatui demo2, gitui and bottom):
//! - [`app::App`] holds all state; `App::update(Msg) -> Vec<Effect>` is the only place
//!   it changes, and drawing ([`widgets::draw`]) reads `&App`. Both run without a
//!   terminal, which is how the tests drive them.
//! - Plain threads and one event enum ([`msg::Msg`]): an input thread (crossterm key,
//!   mouse click / wheel and resize events), a signal thread (SIGTERM/SIGINT/SIGHUP via signal-hook), the I/O
//!   thread ([`io::IoThread`]: parsing, file reads, path completion, preset checks) and the model
//!   [`worker::Worker`] all send into one channel. The UI thread blocks on it, drains
//!   whatever else is queued, applies the batch, carries out the effects and redraws
//!   once.
//! - From a key press to a frame: input thread -> `Msg::Key` -> `App::update` (state
//!   changes, then `settle` brings scroll positions and derived state up to date) ->
//!   effects (e.g. `Effect::Parse` to the I/O thread, then `Msg::Parsed` ->
//!   `Effect::Analyse` to the worker -> `analysis::run` -> `WorkerMsg::Analysed`) ->
//!   `widgets::draw(&App)` with the pure layout of [`layout`].
//! - One worker thread owns the model and tokenizer; model loads, analyses and probe
//!   training (the probe panel, `p`) are latest-wins jobs, cancelled between layers
//!   (probes: between snippets and fits) when superseded; probes yield to the others.
//! - The terminal (raw mode, alternate screen) is restored on every exit path: normal
//!   return and errors (a drop guard), panics on the UI thread (a panic hook), and
//!   signals (they arrive as a message and end the loop). Logs go to the log file only.

pub mod app;
pub mod data;
pub mod editor;
pub mod io;
pub mod keymap;
pub mod layout;
pub mod msg;
pub mod theme;
pub mod widgets;
pub mod worker;

use std::collections::BTreeMap;
use std::io::IsTerminal;
use std::panic::PanicHookInfo;
use std::sync::{mpsc, Arc};

use crossterm::event::{
    self, DisableMouseCapture, EnableMouseCapture, Event, KeyEventKind, MouseEventKind,
};
use crossterm::execute;
use crossterm::terminal::{
    disable_raw_mode, enable_raw_mode, EnterAlternateScreen, LeaveAlternateScreen,
};
use ratatui::backend::CrosstermBackend;
use ratatui::Terminal;

use crate::error::{Error, Result};
use crate::export;
use crate::model::source;
use crate::syntax::Language;
use app::{App, Config, Direction};
use data::Doc;
use msg::{Effect, Msg};
use theme::{ColorMode, Theme};
use worker::Worker;

/// What the explorer starts with (from the command line).
#[derive(Debug, Clone)]
pub struct Options {
    /// Snippet name and text.
    pub name: String,
    pub text: String,
    pub lang: Language,
    /// The validated command line (model, theme, cache directory).
    pub settings: crate::settings::Settings,
}

type Hook = Arc<dyn Fn(&PanicHookInfo<'_>) + Sync + Send + 'static>;

/// Raw mode + alternate screen for as long as it lives; restores on drop and, through a
/// panic hook, when the UI thread panics.
struct TerminalGuard {
    prev_hook: Hook,
}

fn restore_terminal() {
    let _ = disable_raw_mode();
    let _ = execute!(
        std::io::stdout(),
        DisableMouseCapture,
        LeaveAlternateScreen,
        crossterm::cursor::Show
    );
}

impl TerminalGuard {
    fn enter() -> std::io::Result<Self> {
        let prev_hook: Hook = Arc::from(std::panic::take_hook());
        let prev = prev_hook.clone();
        let ui_thread = std::thread::current().id();
        std::panic::set_hook(Box::new(move |info| {
            if std::thread::current().id() == ui_thread {
                restore_terminal();
                prev(info);
            } else {
                // Worker panics are caught and reported in the UI; the default hook
                // would print over the screen.
                tracing::error!("panic in a background thread: {info}");
            }
        }));
        enable_raw_mode()?;
        // Mouse reports (clicks, wheel) on: the keyboard stays first, the mouse is a
        // shortcut; terminals forward it over SSH too.
        if let Err(e) = execute!(std::io::stdout(), EnterAlternateScreen, EnableMouseCapture) {
            restore_terminal();
            return Err(e);
        }
        Ok(TerminalGuard { prev_hook })
    }
}

impl Drop for TerminalGuard {
    fn drop(&mut self) {
        restore_terminal();
        let prev = self.prev_hook.clone();
        std::panic::set_hook(Box::new(move |info| prev(info)));
    }
}

/// Run the explorer until the user quits or a signal arrives.
pub fn run(opts: Options) -> Result<()> {
    if !std::io::stdout().is_terminal() || !std::io::stdin().is_terminal() {
        return Err(Error::Input {
            name: opts.name,
            reason: "the explorer needs a terminal; for text output use `codescope trace` or `codescope analyze`".into(),
        });
    }
    // Download progress bars would draw over the screen.
    source::set_progress(false);
    // A signal must let the loop below restore the terminal before the process exits.
    crate::signals::defer_exit();
    let theme = Theme::new(ColorMode::detect(), opts.settings.light);
    let doc = Doc::new(opts.name, opts.text, opts.lang);
    let mut app = App::new(
        Config {
            theme,
            model_spec: opts.settings.model.clone(),
        },
        doc,
    );

    let (tx, rx) = mpsc::channel::<Msg>();
    let wtx = tx.clone();
    let worker = Worker::spawn(opts.settings.cache_dir.clone(), move |m| {
        let _ = wtx.send(Msg::Worker(m));
    });
    let iotx = tx.clone();
    let io_thread = io::IoThread::spawn(move |m| {
        let _ = iotx.send(m);
    })
    .map_err(|e| Error::io("<thread>", e))?;
    let mut signals = signal_hook::iterator::Signals::new([
        signal_hook::consts::SIGTERM,
        signal_hook::consts::SIGINT,
        signal_hook::consts::SIGHUP,
    ])
    .map_err(|e| Error::io("<signals>", e))?;
    let sig_handle = signals.handle();
    let stx = tx.clone();
    std::thread::Builder::new()
        .name("codescope-signals".into())
        .spawn(move || {
            if let Some(sig) = signals.forever().next() {
                tracing::info!(sig, "signal received, leaving");
                let _ = stx.send(Msg::Terminate);
            }
        })
        .map_err(|e| Error::io("<thread>", e))?;

    let guard = TerminalGuard::enter().map_err(|e| Error::io("<terminal>", e))?;
    // Create the terminal before the input thread starts: ratatui asks the terminal for
    // the cursor position here, and the input thread would swallow the answer.
    let io = |e: std::io::Error| Error::io("<terminal>", e);
    let mut terminal = Terminal::new(CrosstermBackend::new(std::io::stdout())).map_err(io)?;
    terminal.clear().map_err(io)?;
    let itx = tx;
    std::thread::Builder::new()
        .name("codescope-input".into())
        .spawn(move || loop {
            let m = match event::read() {
                Ok(Event::Key(k)) if k.kind != KeyEventKind::Release => Msg::Key(k),
                Ok(Event::Resize(width, height)) => Msg::Resize { width, height },
                Ok(Event::Mouse(m))
                    if matches!(
                        m.kind,
                        MouseEventKind::Down(_)
                            | MouseEventKind::ScrollUp
                            | MouseEventKind::ScrollDown
                    ) =>
                {
                    Msg::Mouse(m)
                }
                Ok(_) => continue,
                Err(e) => {
                    tracing::error!("terminal input: {e}");
                    Msg::Terminate
                }
            };
            if itx.send(m).is_err() {
                break;
            }
        })
        .map_err(|e| Error::io("<thread>", e))?;

    let result = event_loop(&mut terminal, &mut app, &rx, &worker, &io_thread);
    worker.stop();
    io_thread.stop();
    sig_handle.close();
    drop(guard);
    // Why this model (the default choice, a fallback): the status bar may have cut it,
    // and the README promises it on stderr.
    if let Some(n) = &app.model.notice {
        eprintln!("codescope: {n}");
    }
    result
}

fn event_loop(
    terminal: &mut Terminal<CrosstermBackend<std::io::Stdout>>,
    app: &mut App,
    rx: &mpsc::Receiver<Msg>,
    worker: &Worker,
    io_thread: &io::IoThread,
) -> Result<()> {
    let io = |e: std::io::Error| Error::io("<terminal>", e);
    let size = terminal.size().map_err(io)?;
    app.update(Msg::Resize {
        width: size.width,
        height: size.height,
    });
    let mut pending: Vec<Effect> = app.start();
    loop {
        // Carry out effects; exports and labels feed their result back as a message.
        let mut follow = Vec::new();
        for fx in pending.drain(..) {
            match fx {
                Effect::Quit => return Ok(()),
                Effect::Parse(job) => io_thread.parse(job),
                Effect::ReadFile(path) => io_thread.read(path),
                Effect::Complete(typed) => io_thread.complete(typed),
                Effect::CheckPresets(names) => io_thread.check_presets(names),
                Effect::LoadModel(spec) => worker.load(spec),
                Effect::Analyse(job) => worker.analyse(job),
                Effect::Compare(job) => worker.compare(job),
                Effect::Probe(job) => worker.probe(job),
                Effect::LabelToken(key, job) => follow.push(Msg::TokenLabel {
                    key,
                    label: crate::probe::label::label_token(&job),
                }),
                Effect::Export => follow.push(Msg::Exported(export_current(app))),
            }
        }
        for m in follow {
            pending.extend(app.update(m));
        }
        if !pending.is_empty() {
            continue;
        }
        terminal.draw(|f| widgets::draw(app, f)).map_err(io)?;
        let Ok(first) = rx.recv() else {
            return Ok(());
        };
        pending.extend(app.update(first));
        while let Ok(m) = rx.try_recv() {
            pending.extend(app.update(m));
        }
        if app.quit {
            return Ok(());
        }
    }
}

/// Write the current view to `./codescope-<timestamp>.{svg,json}`.
fn export_current(app: &App) -> std::result::Result<Vec<String>, String> {
    let view = export_view(app).ok_or("nothing to export yet")?;
    let dir = std::env::current_dir().map_err(|e| e.to_string())?;
    let stem = export::stem_now();
    let (svg, json) = export::write_files(&view, &dir, &stem).map_err(|e| e.to_string())?;
    let name = |p: &std::path::Path| {
        p.file_name()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default()
    };
    tracing::info!(svg = %svg.display(), json = %json.display(), "exported");
    let mut names = vec![name(&svg), name(&json)];
    // Compare mode: the comparison too, as `codescope compare --json` writes it.
    if let Some(c) = app.comparison() {
        let path = dir.join(format!("{stem}-compare.json"));
        let doc = crate::analysis::compare::to_json(c).to_string();
        std::fs::write(&path, doc).map_err(|e| format!("{}: {e}", path.display()))?;
        names.push(name(&path));
    }
    Ok(names)
}

/// The explorer's current view as export data (`None` before the first analysis).
pub fn export_view(app: &App) -> Option<export::View> {
    let a = app.prepared()?;
    let p = a;
    let syn = app.doc.syntax.as_ref()?;
    let ta = &a.token_attention;
    let (layers, heads) = (ta.layers, ta.heads);
    let v = &app.view;
    let l = v.layer.min(layers.saturating_sub(1));
    let h = v.head.min(heads.saturating_sub(1));
    let weights = app.token_weights().unwrap_or_default();
    let surp = app.surprisal_shown();
    let tokens = syn
        .tokens
        .iter()
        .enumerate()
        .map(|(i, t)| export::Token {
            index: i,
            text: t.text.clone(),
            start: t.start,
            end: t.end,
            line: app.doc.layout.tok_line[i],
            col: app.doc.layout.tok_col[i],
            category: t.category.name().to_string(),
            role: t.role.clone(),
            weight: weights.get(i).copied().flatten(),
            surprisal: surp.map(|s| s.bits.get(i).copied().flatten()),
        })
        .collect();
    let n = ta.n();
    let matrix = app
        .with_matrix(|m, n| m.chunks(n.max(1)).map(|r| r.to_vec()).collect())
        .unwrap_or_default();
    let gold_edges = (0..n * n)
        .filter(|&k| a.gold_any[k])
        .map(|k| (k / n, k % n))
        .collect();
    let scores = if v.mean {
        BTreeMap::new()
    } else {
        app.shown
            .scores
            .iter()
            .filter_map(|(g, s)| {
                let sc = s.scores.get(l)?.get(h)?;
                Some((
                    g.to_string(),
                    export::GraphScore {
                        precision: sc.precision,
                        recall: sc.recall,
                        f1: sc.f1,
                        gold_edges: s.edges,
                    },
                ))
            })
            .collect()
    };
    let names2 = &crate::analysis::categories::COARSE;
    let names5 = &crate::analysis::categories::FINE;
    let (ch, fh) = if v.mean {
        (&a.coarse_layer[l], &a.fine_layer[l])
    } else {
        (&a.coarse[l][h], &a.fine[l][h])
    };
    let mut categories = BTreeMap::new();
    categories.insert("coarse_head".to_string(), ch.named(names2, false));
    categories.insert(
        "coarse_layer".to_string(),
        a.coarse_layer[l].named(names2, false),
    );
    categories.insert("fine_head".to_string(), fh.named(names5, false));
    categories.insert(
        "fine_layer".to_string(),
        a.fine_layer[l].named(names5, false),
    );
    let (label, info) = app
        .model
        .loaded
        .clone()
        .unwrap_or_else(|| (a.trace.model.source.clone(), a.trace.model.clone()));
    Some(export::View {
        name: app.doc.name.clone(),
        language: app.doc.lang.name().to_string(),
        model: label,
        model_source: info.source.clone(),
        architecture: info.architecture.clone(),
        mode: a.mode.name().to_string(),
        layer: l + 1,
        layers,
        head: (!v.mean).then_some(h + 1),
        heads,
        threshold: app.threshold(),
        direction: match v.direction {
            Direction::From => "from",
            Direction::To => "to",
        }
        .to_string(),
        source: app.doc.text.clone(),
        tokens,
        selected: Some(v.cursor).filter(|&c| c < syn.tokens.len()),
        matrix_tokens: ta.tokens.clone(),
        matrix,
        gold_edges,
        gold_overlay: v.gold,
        scores,
        head_grid: export::HeadGrid {
            metric: v.metric.key().to_string(),
            values: v.metric.values(p, &app.shown.scores),
        },
        categories,
        surprisal: surp.map(|s| export::SurprisalView {
            perplexity: s.perplexity,
            mean_bits: s.mean_bits,
            max_bits: s.max_bits,
            top_decile_bits: s.top_decile.is_finite().then_some(s.top_decile),
            selected_expected: s
                .expected(v.cursor)
                .unwrap_or(&[])
                .iter()
                .map(|p| export::Expected {
                    token: p.token.clone(),
                    p: p.p,
                })
                .collect(),
        }),
    })
}
