//! The interactive explorer: `codescope [--model SPEC] [--lang L] [--theme T] [FILE]`.
//!
//! Architecture (docs/ARCHITECTURE.md; shapes of ratatui demo2, gitui and bottom):
//! - [`app::App`] holds all state; `App::update(Msg) -> Vec<Effect>` is the only place
//!   it changes, and drawing ([`widgets::draw`]) reads `&App`. Both run without a
//!   terminal, which is how the tests drive them.
//! - Plain threads and one event enum ([`msg::Msg`]): an input thread (crossterm key,
//!   mouse click / wheel, paste and resize events, every one forwarded as soon as it is
//!   read: [`terminal::spawn_input`]), a signal thread (SIGTERM/SIGINT/SIGHUP/SIGQUIT,
//!   and SIGTSTP/SIGCONT for job control, via signal-hook), the I/O thread
//!   ([`io::IoThread`]: parsing, file reads, path completion, preset checks) and the
//!   model [`worker::Worker`] all send into one channel. The UI thread blocks on it,
//!   drains whatever else is queued, applies the batch, carries out the effects and
//!   redraws once.
//! - From a key press to a frame: input thread -> `Msg::Key` -> `App::update` (state
//!   changes, then `settle` brings scroll positions and derived state up to date) ->
//!   effects (e.g. `Effect::Parse` to the I/O thread, then `Msg::Parsed` ->
//!   `Effect::Analyse` to the worker -> `analysis::run` -> `WorkerMsg::Analysed`) ->
//!   `widgets::draw(&App)` with the pure layout of [`layout`].
//! - One worker thread owns the model and tokenizer; model loads, analyses and probe
//!   training (the probe panel, `p`) are latest-wins jobs, cancelled between layers
//!   (probes: between snippets and fits) when superseded; probes yield to the others.
//! - The terminal (raw mode, alternate screen, mouse reports, bracketed paste:
//!   [`terminal`]) is restored on every exit path: normal return and errors (a drop
//!   guard), panics on the UI thread (a panic hook), and signals (they arrive as a
//!   message and end the loop); Ctrl-Z and SIGTSTP restore it, stop, and set it up again
//!   when continued. Logs go to the log file only.

pub mod app;
pub mod data;
pub mod editor;
pub mod figures;
pub mod headless;
pub mod io;
pub mod keymap;
pub mod layout;
pub mod msg;
pub mod terminal;
pub mod theme;
pub mod widgets;
pub mod worker;

use std::io::IsTerminal;
use std::panic::PanicHookInfo;
use std::sync::{mpsc, Arc};

use ratatui::backend::CrosstermBackend;
use ratatui::Terminal;

pub use self::figures::figure_data;
use crate::error::{Error, Result};
use crate::model::source;
use crate::syntax::Language;
use app::{App, Config};
use data::Doc;
use msg::{Effect, Msg};
use theme::{ColorMode, Theme};
use worker::Worker;

/// What the explorer starts with (from the command line).
#[derive(Debug, Clone)]
pub struct ExplorerOptions {
    /// Snippet name and text.
    pub name: String,
    pub text: String,
    pub lang: Language,
    /// The validated command line (model, theme, cache directory).
    pub settings: crate::settings::Settings,
    /// Export directory, tour, session to resume.
    pub start: Start,
}

/// How the explorer starts beyond its snippet: where exports go, the tour, a session
/// to resume.
#[derive(Debug, Clone, Default)]
pub struct Start {
    pub export_dir: std::path::PathBuf,
    pub tour: Option<app::TourState>,
    /// Start on this step of the tour (its snippet and model are the explorer's).
    pub step: Option<usize>,
    pub session: Option<crate::present::session::Session>,
    /// `--lines`: only these lines of the file are the snippet (the whole file kept).
    pub region: Option<app::Region>,
}

/// A tour file read with its snippets (a missing file is a new, empty tour).
pub fn tour_state(path: &std::path::Path) -> Result<app::TourState> {
    let tour = if path.exists() {
        crate::present::tour::Tour::load(path)?
    } else {
        crate::present::tour::Tour {
            base: path
                .parent()
                .map(std::path::PathBuf::from)
                .unwrap_or_else(|| std::path::PathBuf::from(".")),
            ..Default::default()
        }
    };
    let snippets = tour
        .steps
        .iter()
        .map(|s| s.snippet(&tour.base).map_err(|e| e.to_string()))
        .collect();
    Ok(app::TourState {
        path: path.to_path_buf(),
        tour,
        snippets,
        at: None,
    })
}

type Hook = Arc<dyn Fn(&PanicHookInfo<'_>) + Sync + Send + 'static>;

/// The terminal's modes ([`terminal::enter`]) for as long as it lives; restores them on
/// drop and, through a panic hook, when the UI thread panics.
struct TerminalGuard {
    prev_hook: Hook,
}

impl TerminalGuard {
    fn enter() -> std::io::Result<Self> {
        let prev_hook: Hook = Arc::from(std::panic::take_hook());
        let prev = prev_hook.clone();
        let ui_thread = std::thread::current().id();
        std::panic::set_hook(Box::new(move |info| {
            if std::thread::current().id() == ui_thread {
                terminal::restore();
                prev(info);
            } else {
                // Worker panics are caught and reported in the UI; the default hook
                // would print over the screen.
                tracing::error!("panic in a background thread: {info}");
            }
        }));
        terminal::enter()?;
        Ok(TerminalGuard { prev_hook })
    }
}

impl Drop for TerminalGuard {
    fn drop(&mut self) {
        terminal::restore();
        let prev = self.prev_hook.clone();
        std::panic::set_hook(Box::new(move |info| prev(info)));
    }
}

/// Run the explorer until the user quits or a signal arrives.
pub fn run(opts: ExplorerOptions) -> Result<()> {
    if !std::io::stdout().is_terminal() || !std::io::stdin().is_terminal() {
        return Err(Error::Input {
            name: opts.name,
            reason: "the explorer needs a terminal; for text output use `codescope trace` or `codescope analyze`".into(),
        });
    }
    if theme::is_dumb_term(std::env::var("TERM").ok().as_deref()) {
        return Err(Error::Input {
            name: "TERM=dumb".into(),
            reason: "this terminal cannot place the cursor, so it cannot draw the explorer; \
                     the headless forms work (`codescope analyze`, `codescope render --view screen --out screen.txt`)"
                .into(),
        });
    }
    // Download progress bars would draw over the screen.
    source::set_progress(false);
    // A signal must let the loop below restore the terminal before the process exits.
    crate::signals::defer_exit();
    let theme =
        Theme::new(ColorMode::detect(), opts.settings.light).with_ascii(opts.settings.ascii);
    let doc = Doc::new(opts.name, opts.text, opts.lang);
    let mut app = App::new(
        Config {
            theme,
            model_spec: opts.settings.model.clone(),
        },
        doc,
    );
    app.model.random_weights = opts.settings.random_weights;
    app.model.random_seed = opts.settings.random_weights.unwrap_or(0);
    app.model.stack = opts.settings.stack;
    app.model.default_stack = opts.settings.stack;
    app.present.export_dir = opts.start.export_dir.clone();
    app.present.tour = opts.start.tour.clone();
    app.region = opts.start.region.clone();
    if let Some(i) = opts.start.step {
        app.start_on_step(i);
    }
    if let Some(sess) = &opts.start.session {
        app.restore(sess);
    }

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
    use signal_hook::consts::{SIGCONT, SIGHUP, SIGINT, SIGQUIT, SIGTERM, SIGTSTP};
    let mut signals =
        signal_hook::iterator::Signals::new([SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGTSTP, SIGCONT])
            .map_err(|e| Error::io("<signals>", e))?;
    let sig_handle = signals.handle();
    let stx = tx.clone();
    std::thread::Builder::new()
        .name("codescope-signals".into())
        .spawn(move || {
            for sig in signals.forever() {
                let m = match sig {
                    SIGTSTP => Msg::Suspend,
                    // Continued from the explorer's own suspend, which sets the
                    // terminal up itself.
                    SIGCONT if self::terminal::suspending() => continue,
                    SIGCONT => Msg::Continued,
                    _ => {
                        tracing::info!(sig, "signal received, leaving");
                        crate::signals::record(sig);
                        let _ = stx.send(Msg::Terminate);
                        break;
                    }
                };
                if stx.send(m).is_err() {
                    break;
                }
            }
        })
        .map_err(|e| Error::io("<thread>", e))?;

    let guard = TerminalGuard::enter().map_err(|e| Error::io("<terminal>", e))?;
    // Create the terminal before the input thread starts: ratatui asks the terminal for
    // the cursor position here, and the input thread would swallow the answer.
    let io = |e: std::io::Error| Error::io("<terminal>", e);
    let mut terminal = Terminal::new(CrosstermBackend::new(std::io::stdout())).map_err(io)?;
    terminal.clear().map_err(io)?;
    terminal::spawn_input(tx).map_err(|e| Error::io("<thread>", e))?;

    let result = event_loop(&mut terminal, &mut app, &rx, &worker, &io_thread);
    // Whatever ended the loop (q, a signal, a lost terminal), keep the state first.
    save_session(&app);
    worker.stop();
    io_thread.stop();
    sig_handle.close();
    drop(guard);
    // Why this model (the default choice, a fallback): the status bar may have cut it,
    // and the README promises it on stderr.
    if let Some(n) = &app.model.notice {
        crate::logging::notice(n);
    }
    // No model ever loaded: the explorer failed at its job, and says why.
    if let (Ok(()), None, Some(why)) = (&result, &app.model.loaded, &app.model.failed) {
        return Err(Error::Input {
            name: "--model".into(),
            reason: format!("no model could be loaded ({why})"),
        });
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
    let mut saved = app.doc.text.clone();
    let mut full_screen_logged = false;
    let mut layer_logged: Option<u64> = None;
    let mut surprisal_logged: Option<u64> = None;
    loop {
        // Carry out effects; exports and labels feed their result back as a message.
        let mut follow = Vec::new();
        for fx in pending.drain(..) {
            match fx {
                Effect::Quit => return Ok(()),
                Effect::Suspend | Effect::Resume => {
                    let r = match fx {
                        Effect::Suspend => {
                            // A stopped job may be killed outright: keep the state first.
                            save_session(app);
                            self::terminal::suspend()
                        }
                        _ => self::terminal::resume(),
                    };
                    r.map_err(io)?;
                    // Whatever is on the screen now, draw all of it; the size may have
                    // changed meanwhile. (Not `Terminal::clear`: it asks the terminal for
                    // the cursor position, whose answer the input thread would take.)
                    let size = terminal.size().map_err(io)?;
                    terminal
                        .resize(ratatui::layout::Rect::new(0, 0, size.width, size.height))
                        .map_err(io)?;
                    follow.push(Msg::Resize {
                        width: size.width,
                        height: size.height,
                    });
                }
                Effect::Parse(job) => io_thread.parse(job),
                Effect::ReadFile(path) => io_thread.read(path),
                Effect::Complete(typed) => io_thread.complete(typed),
                Effect::CheckPresets(names) => io_thread.check_presets(names),
                Effect::LoadModel(spec, random, stack) => worker.load(spec, random, stack),
                Effect::Analyse(job) => {
                    let since_start_ms = crate::logging::started().elapsed().as_millis() as u64;
                    let lm_head_only = job.base.is_some();
                    tracing::info!(
                        req = job.req,
                        lm_head_only,
                        since_start_ms,
                        "analysis asked"
                    );
                    worker.analyse(job)
                }
                Effect::Layer(key, a) => worker.layer(key, a),
                Effect::Compare(job) => worker.compare(job),
                Effect::Probe(job) => worker.probe(job),
                Effect::Knockout(job) => worker.knockout(job),
                Effect::Ablate(job) => worker.ablate(job),
                Effect::Lens(job) => worker.lens(job),
                Effect::Patch(job) => worker.patch(job),
                Effect::LabelToken(key, job) => follow.push(Msg::TokenLabel {
                    key,
                    label: crate::probe::label::label_token(&job),
                }),
                Effect::AstTree(key, job) => follow.push(Msg::AstTree {
                    key,
                    result: crate::probe::astprobe::view::tree_job(&job),
                }),
                Effect::AppendStep(path, step) => follow.push(Msg::StepAppended(Box::new(
                    crate::present::tour::append_here(&path, *step).map(|(s, n)| (path, s, n)),
                ))),
                Effect::Export(what) => follow.push(Msg::Exported(
                    figures::write(app, what)
                        .map(|ps| ps.iter().map(|p| p.display().to_string()).collect())
                        .map_err(|e| e.to_string()),
                )),
            }
        }
        for m in follow {
            pending.extend(app.update(m));
        }
        if !pending.is_empty() {
            continue;
        }
        if app.doc.text != saved {
            // An applied edit: keep it even if the process is killed outright.
            save_session(app);
            saved = app.doc.text.clone();
        }
        terminal.draw(|f| widgets::draw(app, f)).map_err(io)?;
        // The timing of the first layer of each analysis on screen (docs/performance.md).
        if let Some(pt) = app.partial().filter(|pt| layer_logged != Some(pt.req)) {
            layer_logged = Some(pt.req);
            let since_start_ms = crate::logging::started().elapsed().as_millis() as u64;
            tracing::info!(
                req = pt.req,
                layers_in = pt.have(),
                since_start_ms,
                "first analysis layer on screen"
            );
        }
        if let Some(p) = app.shown.data.as_ref().filter(|(r, p)| {
            surprisal_logged != Some(*r) && p.surprisal.is_some() && app.surprisal_shown().is_some()
        }) {
            surprisal_logged = Some(p.0);
            let since_start_ms = crate::logging::started().elapsed().as_millis() as u64;
            tracing::info!(req = p.0, since_start_ms, "surprisal on screen");
        }
        if !full_screen_logged && app.prepared().is_some() && !app.stale() {
            full_screen_logged = true;
            let ms = crate::logging::started().elapsed().as_millis() as u64;
            tracing::info!(ms, "first full screen drawn");
        }
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

/// Save the explorer's state as the session `--resume` brings back (errors are logged:
/// the terminal may be gone).
fn save_session(app: &App) {
    let p = crate::present::session::path();
    match crate::present::session::save_to(&app.session(), &p) {
        Ok(()) => tracing::info!(path = %p.display(), "session saved"),
        Err(e) => tracing::error!(path = %p.display(), "could not save the session: {e}"),
    }
}
