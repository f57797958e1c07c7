//! The explorer's state and its update function: `App::update(Msg) -> Vec<Effect>`.
//!
//! Pure: keys, worker reports, parse results, file contents and resizes come in as
//! [`Msg`]s; everything that touches the disk, the parser or the model goes out as
//! [`Effect`]s for the runtime (`tui::run`) to carry out (reading a file, parsing,
//! checking which presets are on disk, loading, analysing, training probes, labelling a
//! token with a probe, rebuilding the snippet's tree with AST-Probe, exporting). Drawing
//! reads `&App` and writes nothing: scroll positions and "fit" zoom are settled at the end
//! of every update from the pure layout ([`super::layout`]). Tests drive it directly and render it to a `TestBackend`
//! (gitui / ratatui demo2 style).
//!
//! State is grouped into parts with their own update functions: [`View`] (what is looked
//! at and where the cursor is), [`ProbePanel`], [`Status`], [`ModelState`] and the
//! analysis shown ([`Shown`]).
//!
//! Pasted text ([`Msg::Paste`], the terminal's bracketed paste) is one insertion into the
//! editor or the open prompt, never a string of keys; Ctrl-Z (a key in raw mode) asks the
//! runtime to suspend ([`Effect::Suspend`]).
//!
//! Focus: arrows always change layer (←→) and head (↑↓) except in the head grid, where
//! they move the grid's own cursor (Enter jumps there). The token cursor has its own keys
//! (hjkl, w/b, PgUp/PgDn, Home/End, `/`), so both work from any panel.

pub mod ablation;
mod compare;
pub mod knockout;
pub mod lens;
mod model;
mod mouse;
mod partial;
pub mod patch;
mod presenting;
mod probe;
mod prompt;
mod status;
mod view;

use std::collections::BTreeMap;
use std::sync::Arc;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

pub use self::compare::{CompareMode, HeatSide, TwinChoice};
pub use self::model::{ModelState, Picker, PickerItem};
pub use self::partial::Partial;
pub use self::presenting::{
    overview_area, overview_geom, ExportWhat, OverviewCursor, OverviewGeom, Pending, Present,
    Thumbs, TourState,
};
pub use self::probe::{PanelTask, ProbeKey, ProbePanel, ProbeRun};
pub use self::status::{Level, Status};
pub use self::view::{follow_axis, Direction, Focus, View};
use super::data::{Doc, Metric};
use super::editor::{EditOutcome, Editor, LineInput};
use super::keymap::{self, Command};
use super::layout;
use super::msg::{AnalyseJob, Effect, LabelKey, LayerKey, Msg, ParseJob, TreeKey, WorkerMsg};
use super::theme::Theme;
use crate::analysis::relations::THRESHOLD_STEPS;
use crate::analysis::{AnalyzeOptions, Graph, HeadScores, Mode, SnippetAnalysis, TokenSurprisal};
use crate::input::Input;
use crate::probe::astprobe::view::{SnippetTrees, TreeJob};
use crate::probe::label::LabelJob;
pub use crate::probe::label::TokenProbe;
use crate::probe::ProbeReport;
use crate::syntax::{Language, Syntax};

/// Worker-line text while the I/O thread parses the document.
const PARSING: &str = "parsing…";
/// The most a paste may add to a one-line prompt (a path, a search, a model spec).
const MAX_LINE_PASTE: usize = 4096;

/// Shown while the analysis with the LM head is computed (cleared when it arrives).
const SURPRISAL_PENDING: &str = "surprisal shows once the analysis is ready";

/// What a one-line prompt is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PromptKind {
    Open,
    Search,
    /// Compare mode's twin file.
    Twin,
    /// The caption of the tour step `B` adds.
    Caption,
    /// The lines to analyse (`r`): `A-B`, empty for the whole file.
    Region,
}

/// The whole file while only some of its lines are analysed (`r`, `--lines`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Region {
    /// The whole file's name and text.
    pub name: String,
    pub text: String,
    /// The lines analysed (1-based, inclusive).
    pub lines: (usize, usize),
}

/// What is drawn over the panels.
#[derive(Debug, Clone)]
pub enum Overlay {
    None,
    Help,
    Prompt(PromptKind, LineInput),
    Models(Picker),
    /// The `x` menu: what to export (opened on this view).
    ExportMenu(crate::export::figure::Kind),
    /// The model overview: every head as a thumbnail (`O`).
    Overview(OverviewCursor),
    /// The logit lens: layers by code tokens (`Y`).
    Lens,
}

/// Settings the explorer starts with.
#[derive(Debug, Clone)]
pub struct Config {
    pub theme: Theme,
    /// `--model` (None: the default model).
    pub model_spec: Option<String>,
}

/// The analysis shown and the requests in flight for the document.
#[derive(Clone, Default)]
pub struct Shown {
    /// Request id of the parse that matches `doc` (pending or done).
    pub parse_req: u64,
    /// Request id of the analysis that matches `doc` (pending or shown).
    pub doc_req: u64,
    /// The analysis shown, with the request id it answered.
    pub data: Option<(u64, Arc<SnippetAnalysis>)>,
    /// Head scores at the current threshold.
    pub scores: BTreeMap<Graph, HeadScores>,
    /// The head mean of one layer of the analysis shown: (request id, layer, matrix).
    pub mean: Option<(u64, usize, Arc<Vec<f32>>)>,
    /// One layer's code-token attention recomputed for an analysis shown without its
    /// matrices (a long input): (request id, layer, `[head][i][j]`).
    pub layer: Option<(u64, usize, Arc<Vec<f32>>)>,
    /// The layer last asked for ([`Effect::Layer`]), so it is asked once.
    pub layer_asked: Option<LayerKey>,
    /// The layers of an analysis in progress received so far ([`App::partial`]).
    pub partial: Option<Partial>,
}

/// The explorer's whole state.
pub struct App {
    pub theme: Theme,
    pub doc: Doc,
    pub view: View,
    pub shown: Shown,
    pub model: ModelState,
    pub probe: ProbePanel,
    pub status: Status,
    /// First line of the help overlay shown (it scrolls when it does not fit).
    pub help_scroll: u16,
    pub overlay: Overlay,
    pub editor: Option<Editor>,
    /// Compare mode (`c`): the snippet against its twin.
    pub compare: CompareMode,
    /// The knockout mode (`K`).
    pub knockout: knockout::KnockoutMode,
    /// The head grid's ablation scores (`7`, `8`).
    pub ablation: ablation::Ablation,
    /// The logit lens view (`Y`).
    pub lens: lens::LensView,
    /// The patch view (`A`): activation patching from compare mode's twin.
    pub patch: patch::PatchView,
    /// Exports, the overview, the pinned head, tours and sessions.
    pub present: Present,
    /// Only some lines of the file are analysed: the whole file and which lines.
    pub region: Option<Region>,
    /// Last terminal size seen.
    pub size: (u16, u16),
    pub quit: bool,
    /// A key that would lose an edited snippet (q/Esc, o) was pressed once: the same key
    /// again goes ahead.
    armed: Option<Command>,
    next_req: u64,
}

fn plain(c: char) -> KeyEvent {
    KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE)
}

/// What the head grid and the finding say on the cross stack instead of scores.
pub const CROSS_NO_SCORES: &str = "no head scores on the cross stack: the gold graphs \
    relate tokens within one sequence, cross-attention relates the decoder's tokens to the \
    encoder's (E: next stack)";

impl App {
    /// A new explorer on `doc`; call [`App::start`] for the first effects.
    pub fn new(cfg: Config, doc: Doc) -> Self {
        App {
            theme: cfg.theme,
            doc,
            view: View::default(),
            shown: Shown::default(),
            model: ModelState {
                spec: cfg.model_spec,
                ..ModelState::default()
            },
            probe: ProbePanel::default(),
            status: Status::default(),
            help_scroll: 0,
            overlay: Overlay::None,
            editor: None,
            compare: CompareMode::default(),
            knockout: knockout::KnockoutMode::default(),
            ablation: ablation::Ablation::default(),
            lens: lens::LensView::default(),
            patch: patch::PatchView::default(),
            present: Present {
                export_dir: crate::export::export_dir(None),
                ..Present::default()
            },
            region: None,
            size: (120, 40),
            quit: false,
            armed: None,
            next_req: 0,
        }
    }

    /// `R`: reload the model with random weights (seed [`ModelState::random_seed`]) or,
    /// when they are on, with its own weights.
    fn toggle_random_weights(&mut self) -> Vec<Effect> {
        let m = &mut self.model;
        m.random_weights = match m.random_weights {
            Some(_) => None,
            None => Some(m.random_seed),
        };
        let label = m
            .loaded
            .as_ref()
            .map(|(l, _)| l.clone())
            .or_else(|| m.spec.clone())
            .unwrap_or_else(|| "the model".into());
        let busy = match m.random_weights {
            Some(seed) => format!("loading {label} with random weights (seed {seed})…"),
            None => format!("loading {label} with its trained weights…"),
        };
        // The loaded model's label: the default model's name once it is chosen.
        let spec = m.loaded.as_ref().map(|(l, _)| l.clone()).or(m.spec.clone());
        let mut fx = vec![Effect::LoadModel(spec, m.random_weights, m.stack)];
        fx.extend(self.request_parse_or_analysis());
        self.status.busy = Some(busy);
        fx
    }

    /// `E`: reload an encoder–decoder with its next stack (encoder → decoder → cross →
    /// encoder) and re-analyse; a model with one stack gets a line saying so.
    fn next_stack(&mut self) -> Vec<Effect> {
        use crate::model::Stack;
        let Some((label, info)) = self.model.loaded.clone() else {
            self.status.warn("no model is loaded yet");
            return Vec::new();
        };
        if info.stack.is_none() {
            self.status.warn(format!(
                "{label} ({}) has one stack: E switches the encoder, decoder and \
                 cross-attention of an encoder–decoder (t5, bart, plbart, codet5p)",
                info.architecture
            ));
            return Vec::new();
        }
        let m = &mut self.model;
        m.stack = match m.stack {
            Stack::Encoder => Stack::Decoder,
            Stack::Decoder => Stack::Cross,
            Stack::Cross => Stack::Encoder,
        };
        // Only the decoder stack has an LM head.
        if m.stack != Stack::Decoder {
            self.view.surprisal = false;
        }
        let stack = m.stack;
        let mut fx = vec![Effect::LoadModel(
            Some(label.clone()),
            m.random_weights,
            stack,
        )];
        fx.extend(self.request_parse_or_analysis());
        self.status.busy = Some(format!("loading {label} with its {} stack…", stack.name()));
        fx
    }

    /// First effects: load the model and parse (then analyse) the document.
    pub fn start(&mut self) -> Vec<Effect> {
        self.status.busy = Some("loading model…".into());
        let mut fx = vec![Effect::LoadModel(
            self.model.spec.clone(),
            self.model.random_weights,
            self.model.stack,
        )];
        fx.extend(self.request_parse_or_analysis());
        self.settle(&mut fx);
        fx
    }

    /// The current threshold.
    pub fn threshold(&self) -> f32 {
        self.view.threshold()
    }

    /// Whether the attention shown is an encoder–decoder's cross-attention (the analysis
    /// shown, else the model loaded): the head grid and the finding then show
    /// [`CROSS_NO_SCORES`] instead of scores.
    pub fn cross_stack_shown(&self) -> bool {
        let stack = match self.prepared() {
            Some(p) => p.trace.model.stack,
            None => self.model.info().and_then(|i| i.stack),
        };
        stack == Some(crate::model::Stack::Cross.name())
    }

    /// The analysis shown, if any.
    pub fn prepared(&self) -> Option<&Arc<SnippetAnalysis>> {
        self.shown.data.as_ref().map(|(_, p)| p)
    }

    /// Whether the analysis shown is for an older request than the document's.
    pub fn stale(&self) -> bool {
        self.shown
            .data
            .as_ref()
            .is_none_or(|(r, _)| *r != self.shown.doc_req)
    }

    /// Layers and heads of the analysis (or the model), 0 when unknown.
    pub fn dims(&self) -> (usize, usize) {
        if let Some(p) = self.prepared() {
            (p.layers(), p.heads())
        } else if let Some(i) = self.model.info() {
            (i.layers, i.heads)
        } else {
            (0, 0)
        }
    }

    /// The current code-token attention matrix (one head or the head mean), `n x n`.
    pub fn matrix(&self) -> Option<Arc<Vec<f32>>> {
        if self.view.mean {
            let (r, l, m) = self.shown.mean.as_ref()?;
            let (req, p) = self.shown.data.as_ref()?;
            (r == req && *l == self.view.layer.min(p.layers().saturating_sub(1))).then(|| m.clone())
        } else {
            self.with_matrix(|m, _| Arc::new(m.to_vec()))
        }
    }

    /// The current matrix as a slice callback, without copying a single head (in compare
    /// mode, the heat side's: B or B − A on A's tokens).
    pub fn with_matrix<R>(&self, f: impl FnOnce(&[f32], usize) -> R) -> Option<R> {
        let (req, p) = self.shown.data.as_ref()?;
        if let Some((m, _)) = self.compare_matrix() {
            return Some(f(&m, p.n()));
        }
        let ta = &p.token_attention;
        let n = ta.n();
        let l = self.view.layer.min(ta.layers.saturating_sub(1));
        if self.view.mean {
            let (r, ml, m) = self.shown.mean.as_ref()?;
            (r == req && *ml == l).then(|| f(m, n))
        } else {
            let h = self.view.head.min(ta.heads.saturating_sub(1));
            self.head_matrix(l, h).map(|m| f(m, n))
        }
    }

    /// Head `h` of layer `l` of the analysis shown: from its matrices, or from the
    /// recomputed layer when the analysis kept none (`None` until it arrives).
    pub fn head_matrix(&self, l: usize, h: usize) -> Option<&[f32]> {
        let (req, p) = self.shown.data.as_ref()?;
        let ta = &p.token_attention;
        if l >= ta.layers || h >= ta.heads {
            return None;
        }
        if ta.resident() {
            return Some(ta.head(l, h));
        }
        let (r, ml, m) = self.shown.layer.as_ref()?;
        let sz = ta.n() * ta.n();
        (r == req && *ml == l).then(|| &m[h * sz..(h + 1) * sz])
    }

    /// The layer whose matrices the view needs and the analysis shown lacks: asked of
    /// the worker once ([`Effect::Layer`]).
    fn layer_request(&self) -> Option<(LayerKey, Arc<SnippetAnalysis>)> {
        let (req, p) = self.shown.data.as_ref()?;
        if p.token_attention.resident() || p.layer_inputs.is_none() {
            return None;
        }
        let l = self.view.layer.min(p.layers().saturating_sub(1));
        let have = matches!(&self.shown.layer, Some((r, ml, _)) if r == req && *ml == l);
        let key = (*req, l);
        (!have && self.shown.layer_asked != Some(key)).then(|| (key, p.clone()))
    }

    /// Per syntax token: the attention from (or to) the cursor token in the current
    /// matrix, `None` for tokens outside the analysed set.
    pub fn token_weights(&self) -> Option<Vec<Option<f32>>> {
        let p = self.prepared()?;
        let sel = (*p.pos.get(self.view.cursor)?)?;
        let dir = self.view.direction;
        self.with_matrix(|a, n| {
            p.pos
                .iter()
                .map(|k| {
                    k.map(|j| match dir {
                        Direction::From => a[sel * n + j],
                        Direction::To => a[j * n + sel],
                    })
                })
                .collect::<Vec<_>>()
        })
    }

    /// The probe results the panel is about: the loaded model, the snippet's language
    /// and the current task (`None` before a model is loaded).
    pub fn probe_key(&self) -> Option<ProbeKey> {
        let info = self.model.info()?;
        Some((info.run_key(), self.doc.lang, self.probe.task))
    }

    /// The cached report for [`App::probe_key`].
    pub fn probe_report(&self) -> Option<&Arc<ProbeReport>> {
        self.probe.results.get(&self.probe_key()?)
    }

    /// The running probe job if it is for [`App::probe_key`].
    pub fn probe_running(&self) -> Option<&ProbeRun> {
        let key = self.probe_key()?;
        self.probe.run.as_ref().filter(|r| r.key == key)
    }

    /// The probe failure for [`App::probe_key`].
    pub fn probe_failure(&self) -> Option<&str> {
        let key = self.probe_key()?;
        self.probe
            .error
            .as_ref()
            .filter(|(k, _)| *k == key)
            .map(|(_, e)| e.as_str())
    }

    /// The surprisal to draw: the view is on and the analysis shown has it. (An analysis
    /// shown is always of the document's own parse: a new document clears it.)
    pub fn surprisal_shown(&self) -> Option<&TokenSurprisal> {
        if !self.view.surprisal {
            return None;
        }
        self.prepared()?.surprisal.as_ref()
    }

    /// What the label for the cursor token would be asked for, when a probe report is
    /// cached for [`App::probe_key`] and an analysis is shown.
    fn label_request(&self) -> Option<(LabelKey, LabelJob)> {
        let task = self.probe.task.task()?;
        let report = self.probe_report()?.clone();
        let (req, analysis) = self.shown.data.as_ref()?;
        let layer = self.view.layer + 1;
        let key = (*req, self.view.cursor, layer, task);
        let job = LabelJob {
            report,
            analysis: analysis.clone(),
            token: self.view.cursor,
            layer,
            task,
        };
        Some((key, job))
    }

    /// What the AST-Probe trees of the snippet would be asked for: the panel shows
    /// AST-Probe, its report is cached and an analysis is shown. The layer is the
    /// current layer's output, as for the token label.
    fn tree_request(&self) -> Option<(TreeKey, TreeJob)> {
        if self.probe.task != PanelTask::Ast {
            return None;
        }
        let report = self.probe_report()?.clone();
        let (req, analysis) = self.shown.data.as_ref()?;
        let layer = self.view.layer + 1;
        let job = TreeJob {
            report,
            analysis: analysis.clone(),
            layer,
        };
        Some(((*req, layer), job))
    }

    /// The AST-Probe trees of the snippet at the current layer's output, or why there
    /// are none (`None`: not AST-Probe, no report, or not arrived yet).
    pub fn ast_trees(&self) -> Option<Result<&Arc<SnippetTrees>, &str>> {
        let (key, _) = self.tree_request()?;
        match &self.probe.tree {
            Some((k, r)) if *k == key => Some(r.as_ref().map_err(|e| e.as_str())),
            _ => None,
        }
    }

    /// The cached probe's label for the cursor token at the current layer's output
    /// (`None` when no report is cached for [`App::probe_key`] or the label has not
    /// arrived yet; always for AST-Probe, which labels no single token).
    pub fn token_probe(&self) -> Option<TokenProbe> {
        self.probe.task.task()?;
        self.probe_report()?;
        if self.prepared().is_none() {
            return Some(TokenProbe::NoFeatures);
        }
        let (key, _) = self.label_request()?;
        match &self.probe.label {
            Some((k, label)) if *k == key => label.clone(),
            _ => None,
        }
    }

    /// Toggle the surprisal view; encoders get a notice instead. The LM head runs only
    /// while the view is on: turning it on re-analyses when the shown analysis lacks it.
    fn toggle_surprisal(&mut self) -> Vec<Effect> {
        if self.view.surprisal {
            self.view.surprisal = false;
            return Vec::new();
        }
        match &self.model.loaded {
            None => self.status.warn("no model is loaded yet"),
            Some((label, info)) if !info.causal => {
                let text = if info.stack.is_some() {
                    format!(
                        "surprisal needs a causal model or an encoder–decoder's --stack \
                         decoder; {label} ({}) has no LM head here (M: switch model)",
                        info.architecture_note()
                    )
                } else {
                    format!(
                        "surprisal needs a causal model; {label} ({}) is an encoder (M: switch model)",
                        info.architecture
                    )
                };
                self.status.warn(text);
            }
            Some(_) => {
                self.view.surprisal = true;
                if self.prepared().is_some_and(|p| p.surprisal.is_none()) {
                    self.status.info(SURPRISAL_PENDING);
                    // The analysis shown, when it is the document's: the LM head can run
                    // over the final hidden state it kept instead of a whole pass.
                    let base = self
                        .prepared()
                        .filter(|p| p.final_hidden.is_some())
                        .filter(|_| !self.stale())
                        .cloned();
                    let mut fx = self.request_analysis();
                    for e in &mut fx {
                        if let Effect::Analyse(job) = e {
                            job.base = base.clone();
                        }
                    }
                    return fx;
                }
            }
        }
        Vec::new()
    }

    /// Ask for the probe results of [`App::probe_key`] unless they are cached or
    /// already being computed.
    fn request_probe(&mut self) -> Vec<Effect> {
        let Some(key) = self.probe_key() else {
            self.status.warn("no model is loaded yet");
            return Vec::new();
        };
        let next = &mut self.next_req;
        self.probe
            .request(key, || {
                *next += 1;
                *next
            })
            .map(Effect::Probe)
            .into_iter()
            .collect()
    }

    /// Next probe task; if probes were asked for on this model and language, the new
    /// task's are requested too (cached ones show at once).
    fn cycle_probe_task(&mut self) -> Vec<Effect> {
        let was = self.probe_key();
        if self.probe.cycle(was) {
            self.request_probe()
        } else {
            Vec::new()
        }
    }

    fn new_req(&mut self) -> u64 {
        self.next_req += 1;
        self.next_req
    }

    /// Ask for the document to be parsed (off the UI thread); the analysis follows
    /// when the syntax arrives.
    fn request_parse(&mut self) -> Vec<Effect> {
        let req = self.new_req();
        self.shown.parse_req = req;
        // A huge file can take the parser a while: say so (unless a model load, which
        // says more, is under way).
        if self.status.busy.is_none() {
            self.status.busy = Some(PARSING.into());
        }
        vec![Effect::Parse(ParseJob {
            req,
            text: self.doc.text.clone(),
            lang: self.doc.lang,
        })]
    }

    /// Parse the document if it has not been, else analyse it.
    fn request_parse_or_analysis(&mut self) -> Vec<Effect> {
        if self.doc.syntax.is_none() && self.doc.parse_error.is_none() {
            self.request_parse()
        } else {
            self.request_analysis()
        }
    }

    /// Ask the worker for an analysis of the document as it is now.
    fn request_analysis(&mut self) -> Vec<Effect> {
        let Some(syntax) = self.doc.syntax.clone() else {
            let why = self
                .doc
                .parse_error
                .clone()
                .unwrap_or_else(|| "the snippet is not parsed yet".into());
            self.status
                .error(format!("the snippet could not be parsed: {why}"));
            return Vec::new();
        };
        let req = self.new_req();
        self.shown.doc_req = req;
        if self.model.loaded.is_some() {
            self.status.busy = Some("analysing…".into());
        }
        vec![Effect::Analyse(AnalyseJob {
            req,
            syntax,
            opts: AnalyzeOptions {
                mode: self.view.mode,
                threshold: self.threshold(),
                sweep: false,
            },
            surprisal: self.view.surprisal,
            base: None,
        })]
    }

    /// Replace the document (edit, open) and parse it (then re-analyse).
    pub fn set_doc(&mut self, doc: Doc) -> Vec<Effect> {
        self.doc = doc;
        self.shown.data = None;
        self.shown.scores.clear();
        self.shown.mean = None;
        self.shown.layer = None;
        self.shown.layer_asked = None;
        self.shown.partial = None;
        self.view.code_scroll = (0, 0);
        self.request_parse_or_analysis()
    }

    /// Apply one message.
    pub fn update(&mut self, msg: Msg) -> Vec<Effect> {
        let mut fx = match msg {
            Msg::Key(k) => self.key(k),
            Msg::Mouse(m) => self.mouse(m),
            Msg::Paste(text) => self.paste(&text),
            Msg::Completions { typed, candidates } => {
                self.completions(typed, candidates);
                Vec::new()
            }
            Msg::Resize { width, height } => {
                self.size = (width, height);
                Vec::new()
            }
            Msg::Worker(w) => {
                let (done, again) = self.knockout_worker(&w);
                if !done {
                    self.worker(w);
                }
                if again {
                    self.knockout_again()
                } else {
                    Vec::new()
                }
            }
            Msg::Parsed { req, result } => self.parsed(req, result),
            Msg::FileRead { path, result } => self.file_read(path, result),
            Msg::PresetsChecked(local) => {
                if let Overlay::Models(p) = &mut self.overlay {
                    for (item, l) in p.items.iter_mut().zip(local) {
                        item.local = Some(l);
                    }
                }
                Vec::new()
            }
            Msg::TokenLabel { key, label } => {
                self.probe.label = Some((key, label));
                Vec::new()
            }
            Msg::AstTree { key, result } => {
                self.probe.tree = Some((key, result));
                Vec::new()
            }
            Msg::Exported(r) => {
                self.exported(r);
                Vec::new()
            }
            Msg::StepAppended(r) => {
                self.step_appended(*r);
                Vec::new()
            }
            Msg::Terminate => {
                self.quit = true;
                vec![Effect::Quit]
            }
            Msg::Suspend => vec![Effect::Suspend],
            Msg::Continued => vec![Effect::Resume],
        };
        self.settle(&mut fx);
        fx
    }

    /// Bring derived state up to date after a change: layer/head inside the model, the
    /// code and heatmap scroll positions and "fit" zoom for the current layout, the head
    /// mean of the current layer, the cursor token's probe label and the AST-Probe
    /// trees (asked for as effects when their inputs changed).
    fn settle(&mut self, fx: &mut Vec<Effect>) {
        let dims = self.dims();
        self.view.clamp(dims);
        self.settle_present(fx);
        let g = layout::geometry(self);
        if let Some(r) = g.code {
            if self.editor.is_some() {
                self.view.code_rows = layout::editor_rows(r);
            } else if let Some(cg) = layout::code_geom(self, r) {
                self.view.follow_code(&self.doc, cg.text_rows, cg.text_w);
            }
        }
        // The heat map's tokens: those of the layers coming in, else the analysis shown.
        let heat = match (self.partial(), self.prepared()) {
            (Some(pt), _) => Some((pt.frame.n(), pt.frame.pos.get(self.view.cursor))),
            (None, Some(p)) => Some((p.n(), p.pos.get(self.view.cursor))),
            _ => None,
        }
        .map(|(n, sel)| (n, sel.copied().flatten()));
        if let (Some(r), Some((n, sel))) = (g.panel(Focus::Heatmap), heat) {
            if let Some(hg) = layout::heat_geom(self, r, n) {
                self.view.heat_fit = hg.fit;
                self.view.follow_heat(n, sel, hg.cols_avail, hg.px_rows);
            }
        }
        if let Some(gg) = g
            .panel(Focus::Heads)
            .and_then(|r| layout::grid_geom(self, r))
        {
            self.view.follow_grid(dims, gg.lvis, gg.hvis);
        }
        if let Some((key, a)) = self.layer_request() {
            self.shown.layer_asked = Some(key);
            fx.push(Effect::Layer(key, a));
        }
        if self.partial().is_some() {
            self.settle_partial_mean();
        } else if self.view.mean {
            if let Some((req, p)) = &self.shown.data {
                let l = self.view.layer.min(p.layers().saturating_sub(1));
                if !matches!(&self.shown.mean, Some((r, ml, _)) if r == req && *ml == l) {
                    let ta = &p.token_attention;
                    let mean = if ta.resident() {
                        Some(ta.head_mean(l))
                    } else {
                        match &self.shown.layer {
                            Some((r, ml, m)) if r == req && *ml == l => Some(
                                crate::analysis::attention::head_mean_of(m, ta.heads, ta.n()),
                            ),
                            _ => None,
                        }
                    };
                    if let Some(mean) = mean {
                        self.shown.mean = Some((*req, l, Arc::new(mean)));
                    }
                }
            }
        }
        self.compare_settle(fx);
        self.settle_ablation(fx);
        self.settle_lens(fx);
        self.settle_patch(fx);
        if let Some((key, job)) = self.label_request() {
            if self.probe.label.as_ref().is_none_or(|(k, _)| *k != key)
                && !fx
                    .iter()
                    .any(|e| matches!(e, Effect::LabelToken(k, _) if *k == key))
            {
                fx.push(Effect::LabelToken(key, job));
            }
        }
        if let Some((key, job)) = self.tree_request() {
            if self.probe.tree.as_ref().is_none_or(|(k, _)| *k != key)
                && !fx
                    .iter()
                    .any(|e| matches!(e, Effect::AstTree(k, _) if *k == key))
            {
                fx.push(Effect::AstTree(key, job));
            }
        }
    }

    fn parsed(&mut self, req: u64, result: Result<Arc<Syntax>, String>) -> Vec<Effect> {
        if req != self.shown.parse_req {
            return Vec::new(); // superseded
        }
        if self.status.busy.as_deref() == Some(PARSING) {
            self.status.busy = None;
        }
        match result {
            Ok(syn) => {
                self.doc.set_syntax(syn);
                self.view.cursor = self.view.cursor.min(self.doc.n_tokens().saturating_sub(1));
                self.request_analysis()
            }
            Err(e) => {
                self.doc.parse_error = Some(e.clone());
                self.status
                    .error(format!("the snippet could not be parsed: {e}"));
                Vec::new()
            }
        }
    }

    fn file_read(&mut self, path: String, result: Result<Input, String>) -> Vec<Effect> {
        match result {
            Ok(inp) => {
                // The extension, else the text's look (a Java file named .txt).
                let lang = Language::from_path(std::path::Path::new(&path))
                    .unwrap_or_else(|| Language::from_text(&inp.text));
                self.view.cursor = 0;
                self.status.info(format!("opened {path}"));
                self.set_doc(Doc::new(inp.name, inp.text, lang))
            }
            Err(e) => {
                self.status.error(e);
                Vec::new()
            }
        }
    }

    fn worker(&mut self, w: WorkerMsg) {
        if self.probe.worker(&w)
            || self.compare_worker(&w)
            || self.ablation_worker(&w)
            || self.lens_worker(&w)
            || self.patch_worker(&w)
        {
            return;
        }
        match w {
            WorkerMsg::Progress { req, text } => {
                if req == 0 || req == self.shown.doc_req {
                    self.status.busy = Some(text);
                }
            }
            WorkerMsg::ModelLoaded {
                info,
                label,
                notice,
            } => {
                if !info.causal {
                    self.view.surprisal = false;
                }
                // An analysis by another model no longer matches what the status bar
                // names (its layer and head counts): the new model's arrives shortly.
                if self
                    .prepared()
                    .is_some_and(|p| p.trace.model.run_key() != info.run_key())
                {
                    self.shown.data = None;
                    self.shown.scores.clear();
                    self.shown.mean = None;
                    self.shown.layer = None;
                    self.shown.layer_asked = None;
                    self.shown.partial = None;
                }
                self.model.loaded = Some((label, info));
                self.model.notice = notice;
                // A model loaded: an earlier load's error no longer holds.
                if let Some(why) = self.model.failed.take() {
                    if self
                        .status
                        .message
                        .as_ref()
                        .is_some_and(|(_, m)| m.starts_with(&why))
                    {
                        self.status.message = None;
                    }
                }
                let pending = self.stale() && self.doc.syntax.is_some();
                self.status.busy = pending.then(|| "analysing…".to_string());
            }
            WorkerMsg::ModelFailed { label, error } => {
                self.status.busy = None;
                let line = format!("model {label}: {error}");
                self.status
                    .error(format!("{line} (M: choose another model)"));
                // A stale "loaded" state would mislead: the worker holds no model now
                // only if none loaded before; keep what loaded, if anything.
                self.model.failed = Some(line);
            }
            WorkerMsg::Analysed { req, data } => {
                if req != self.shown.doc_req {
                    return; // superseded
                }
                self.shown.scores = if (data.threshold - self.threshold()).abs() < 1e-6 {
                    data.relations.clone()
                } else {
                    data.scores_at(self.threshold())
                };
                if data.surprisal.is_some()
                    && self
                        .status
                        .message
                        .as_ref()
                        .is_some_and(|(_, m)| m == SURPRISAL_PENDING)
                {
                    self.status.message = None;
                }
                self.shown.data = Some((req, data));
                self.shown.mean = None;
                self.shown.layer = None;
                self.shown.layer_asked = None;
                // The finished analysis replaces the layers shown while it ran (and
                // every layer is in now).
                self.shown.partial = None;
                if self
                    .status
                    .message
                    .as_ref()
                    .is_some_and(|(_, m)| m.contains(partial::COMING))
                {
                    self.status.message = None;
                }
                self.status.busy = None;
            }
            WorkerMsg::AnalysedLayer { req, frame, layer } => {
                self.partial_layer(req, frame, (*layer).clone());
            }
            WorkerMsg::AnalyseFailed { req, error } => {
                if req == self.shown.doc_req {
                    self.status.busy = None;
                    self.shown.partial = None;
                    // Without a model, say why there is none rather than that there is none.
                    match (&self.model.failed, self.model.loaded.is_none()) {
                        (Some(why), true) => self
                            .status
                            .error(format!("{why} (M: choose another model)")),
                        _ => self.status.error(error),
                    }
                }
            }
            WorkerMsg::Layer { key, result } => {
                if self.shown.data.as_ref().is_none_or(|(r, _)| *r != key.0) {
                    return; // for an analysis no longer shown
                }
                match result {
                    Ok(m) => self.shown.layer = Some((key.0, key.1, m)),
                    Err(e) => self.status.error(format!("layer {}: {e}", key.1 + 1)),
                }
            }
            WorkerMsg::ProbeProgress { .. }
            | WorkerMsg::Probed { .. }
            | WorkerMsg::ProbeFailed { .. }
            | WorkerMsg::TwinMade { .. }
            | WorkerMsg::Compared { .. }
            | WorkerMsg::CompareFailed { .. }
            | WorkerMsg::Knocked { .. }
            | WorkerMsg::AblatedHead { .. }
            | WorkerMsg::AblationFailed { .. }
            | WorkerMsg::Lensed { .. }
            | WorkerMsg::Patched { .. } => {}
        }
    }

    fn key(&mut self, k: KeyEvent) -> Vec<Effect> {
        if k.kind == crossterm::event::KeyEventKind::Release {
            return Vec::new();
        }
        // Ctrl-C and Ctrl-Z work in every mode. In raw mode Ctrl-Z is a key, not SIGTSTP:
        // suspend as the shell would (the editor and any prompt stay as they are).
        match keymap::global(&k) {
            Some(Command::QuitNow) => {
                self.quit = true;
                return vec![Effect::Quit];
            }
            Some(_) => return vec![Effect::Suspend],
            None => {}
        }
        if let Some(ed) = self.editor.as_mut() {
            let page = self.view.code_rows;
            match ed.key(k, page) {
                EditOutcome::Continue => {
                    ed.scroll_to_cursor(page);
                    return Vec::new();
                }
                EditOutcome::Cancel => {
                    self.editor = None;
                    self.status.info("edit discarded");
                    return Vec::new();
                }
                EditOutcome::Submit => {
                    let text = ed.text();
                    self.editor = None;
                    return self.apply_edit(text);
                }
            }
        }
        match std::mem::replace(&mut self.overlay, Overlay::None) {
            Overlay::None => {}
            // The help scrolls with the arrows and pages; any other key closes it.
            Overlay::Help => {
                let step = match k.code {
                    KeyCode::Down | KeyCode::Char('j') => Some(1i32),
                    KeyCode::Up | KeyCode::Char('k') => Some(-1),
                    KeyCode::PageDown => Some(10),
                    KeyCode::PageUp => Some(-10),
                    _ => None,
                };
                if let Some(d) = step {
                    self.help_scroll = (i32::from(self.help_scroll) + d).clamp(0, 200) as u16;
                    self.overlay = Overlay::Help;
                }
                return Vec::new();
            }
            Overlay::Prompt(kind @ (PromptKind::Open | PromptKind::Twin), input)
                if k.code == KeyCode::Tab =>
            {
                let fx = self.request_completion(&input.text);
                self.overlay = Overlay::Prompt(kind, input);
                return fx;
            }
            Overlay::Prompt(kind, mut input) => {
                return match input.key(k) {
                    EditOutcome::Continue => {
                        self.overlay = Overlay::Prompt(kind, input);
                        Vec::new()
                    }
                    EditOutcome::Cancel => Vec::new(),
                    EditOutcome::Submit => self.submit_prompt(kind, input.text),
                };
            }
            Overlay::Models(p) => return self.picker_key(p, k),
            Overlay::ExportMenu(kind) => return self.export_menu_key(kind, k),
            Overlay::Overview(c) => return self.overview_key(c, k),
            Overlay::Lens => return self.lens_key(k),
        }
        self.normal_key(k)
    }

    /// Pasted text (bracketed paste): one insertion into the editor or the open prompt,
    /// cleaned ([`crate::tui::editor::clean_paste`]: LF line breaks, no control characters) and never
    /// auto-indented. A paste that would take the snippet over the input limit is refused
    /// whole (the editor unchanged); outside the editor and prompts it does nothing (it is
    /// not a string of commands).
    fn paste(&mut self, raw: &str) -> Vec<Effect> {
        use crate::input::MAX_INPUT_BYTES;
        let (text, dropped) = crate::tui::editor::clean_paste(raw);
        let dropped = match dropped {
            0 => String::new(),
            1 => " (1 control character dropped)".to_string(),
            n => format!(" ({n} control characters dropped)"),
        };
        if let Some(ed) = self.editor.as_mut() {
            let total = ed.len() + text.len();
            if total > MAX_INPUT_BYTES {
                self.status.warn(format!(
                    "paste refused: {} bytes would make the snippet {total} bytes, over the \
                     {MAX_INPUT_BYTES}-byte input limit; the editor is unchanged",
                    text.len()
                ));
                return Vec::new();
            }
            ed.insert_text(&text);
            ed.scroll_to_cursor(self.view.code_rows);
            let lines = text.matches('\n').count() + usize::from(!text.ends_with('\n'));
            self.status.info(format!(
                "pasted {} bytes, {lines} line{}{dropped}",
                text.len(),
                if lines == 1 { "" } else { "s" }
            ));
            return Vec::new();
        }
        // A one-line input: a trailing line break ends the copied line; others are spaces.
        let line = text.trim_end_matches('\n').replace(['\n', '\t'], " ");
        let input = match &mut self.overlay {
            Overlay::Prompt(_, input) => input,
            Overlay::Models(p) => {
                p.sel = p.items.len();
                &mut p.input
            }
            _ => {
                self.status
                    .info("paste ignored: press e to edit the snippet, then paste");
                return Vec::new();
            }
        };
        if input.text.len() + line.len() > MAX_LINE_PASTE {
            self.status.warn(format!(
                "paste refused: a prompt takes at most {MAX_LINE_PASTE} bytes"
            ));
        } else {
            input.insert_str(&line);
            if !dropped.is_empty() {
                self.status.info(format!("pasted{dropped}"));
            }
        }
        Vec::new()
    }

    fn normal_key(&mut self, k: KeyEvent) -> Vec<Effect> {
        // Inside a transposed head grid (layers as rows) ↑ ↓ move along layers.
        let transposed = self.view.focus == Focus::Heads
            && layout::geometry(self)
                .panel(Focus::Heads)
                .and_then(|r| layout::grid_geom(self, r))
                .is_some_and(|g| g.transposed);
        let k = if transposed {
            let code = match k.code {
                KeyCode::Left => KeyCode::Up,
                KeyCode::Right => KeyCode::Down,
                KeyCode::Up => KeyCode::Left,
                KeyCode::Down => KeyCode::Right,
                c => c,
            };
            KeyEvent::new(code, k.modifiers)
        } else {
            k
        };
        let armed = self.armed.take();
        match keymap::command(&k) {
            Some(c) => self.run_command(c, armed),
            None => Vec::new(),
        }
    }

    /// Carry out a normal-mode command ([`keymap::KEYMAP`] binds the keys to them).
    /// `armed`: the command the last key asked to confirm (a first q/Esc or o after an
    /// edit, which would lose it).
    fn run_command(&mut self, c: Command, armed: Option<Command>) -> Vec<Effect> {
        if let Some(fx) = self.present_command(c) {
            return fx;
        }
        // The patch view's hidden state: ← → outside the head grid.
        if matches!(c, Command::Left | Command::Right)
            && self.view.focus != Focus::Heads
            && self.patch_step(if c == Command::Left { -1 } else { 1 })
        {
            return Vec::new();
        }
        let (layers, heads) = self.dims();
        // Layers of the analysis in progress are coming in.
        let filling = self.partial().is_some();
        let v = &mut self.view;
        let in_grid = v.focus == Focus::Heads;
        match c {
            Command::Quit => {
                if self.doc.edited && armed != Some(Command::Quit) {
                    // Quitting would lose the edit: say so once.
                    self.armed = Some(Command::Quit);
                    self.status.warn(
                        "the edited snippet is not saved (x exports it); press q or Esc again to quit",
                    );
                    return Vec::new();
                }
                self.quit = true;
                return vec![Effect::Quit];
            }
            Command::QuitNow => {
                self.quit = true;
                return vec![Effect::Quit];
            }
            Command::Suspend => return vec![Effect::Suspend],
            Command::Help => {
                self.help_scroll = 0;
                self.overlay = Overlay::Help;
            }
            Command::NextPanel => v.set_focus(v.focus.step(1)),
            Command::PrevPanel => v.set_focus(v.focus.step(-1)),
            Command::Left if in_grid => v.grid.0 = v.grid.0.saturating_sub(1),
            Command::Right if in_grid => v.grid.0 = (v.grid.0 + 1).min(layers.saturating_sub(1)),
            // While layers come in, a layer not in yet is said to be coming.
            Command::GridJump if in_grid && filling => {
                let to = v.grid;
                if !self.layer_coming(to.0) {
                    let v = &mut self.view;
                    (v.layer, v.head) = to;
                    v.mean = false;
                }
            }
            Command::Up if in_grid => v.grid.1 = v.grid.1.saturating_sub(1),
            Command::Down if in_grid => v.grid.1 = (v.grid.1 + 1).min(heads.saturating_sub(1)),
            Command::GridJump if in_grid => {
                (v.layer, v.head) = v.grid;
                v.mean = false;
            }
            Command::GridJump => {}
            Command::Left => v.layer = v.layer.saturating_sub(1),
            Command::Right if filling => {
                let to = (self.view.layer + 1).min(layers.saturating_sub(1));
                if !self.layer_coming(to) {
                    self.view.layer = to;
                }
            }
            Command::Right => v.layer = (v.layer + 1).min(layers.saturating_sub(1)),
            Command::Up => {
                v.mean = false;
                v.head = v.head.saturating_sub(1);
            }
            Command::Down => {
                v.mean = false;
                v.head = (v.head + 1).min(heads.saturating_sub(1));
            }
            Command::MeanHeads => v.mean = !v.mean,
            Command::TokenPrev => v.move_cursor(&self.doc, -1),
            Command::TokenNext => v.move_cursor(&self.doc, 1),
            Command::LineNext => v.move_lines(&self.doc, 1),
            Command::LinePrev => v.move_lines(&self.doc, -1),
            Command::PageDown => {
                let page = v.code_rows.max(2) as isize - 1;
                v.move_lines(&self.doc, page)
            }
            Command::PageUp => {
                let page = 1 - v.code_rows.max(2) as isize;
                v.move_lines(&self.doc, page)
            }
            Command::FirstToken => v.cursor = 0,
            Command::LastToken => v.cursor = self.doc.n_tokens().saturating_sub(1),
            Command::IdentNext => v.move_ident(&self.doc, 1),
            Command::IdentPrev => v.move_ident(&self.doc, -1),
            Command::Direction => {
                v.direction = match v.direction {
                    Direction::From => Direction::To,
                    Direction::To => Direction::From,
                }
            }
            Command::DataFlow => v.dfg = !v.dfg,
            Command::Gold => v.gold = !v.gold,
            Command::Finding => {
                v.finding = !v.finding;
                // Show it: the compact layout has one side panel at a time.
                if v.finding {
                    v.set_focus(Focus::Categories);
                }
            }
            Command::ZoomIn => {
                let cur = v.effective_zoom();
                v.zoom = (cur / 2).max(1);
            }
            Command::ZoomOut => {
                let cur = v.effective_zoom();
                v.zoom = (cur * 2).min(self.doc.n_tokens().max(1));
            }
            Command::ZoomFit => v.zoom = 0,
            Command::NextMetric => v.metric = v.metric.next(),
            Command::Metric(i) => {
                if let Some(m) = Metric::ALL.get(usize::from(i)) {
                    v.metric = *m;
                }
            }
            Command::ThresholdDown => self.set_threshold(self.view.t_steps.saturating_sub(1)),
            Command::ThresholdUp => {
                self.set_threshold((self.view.t_steps + 1).min(THRESHOLD_STEPS))
            }
            Command::InputMode => {
                v.mode = match v.mode {
                    Mode::Source => Mode::Paper,
                    Mode::Paper => Mode::Source,
                };
                return self.request_analysis();
            }
            // A fresh prompt each time: typing must not append to the last pattern
            // (n / N repeat that one).
            Command::Search => {
                self.overlay = Overlay::Prompt(PromptKind::Search, LineInput::default())
            }
            Command::SearchNext => self.search_next(1),
            Command::SearchPrev => self.search_next(-1),
            Command::Edit => {
                let at = self
                    .doc
                    .syntax
                    .as_ref()
                    .and_then(|s| s.tokens.get(v.cursor))
                    .map_or(0, |t| t.start);
                self.editor = Some(Editor::new(&self.doc.text, at));
                v.focus = Focus::Code;
            }
            Command::Open if self.doc.edited && armed != Some(Command::Open) => {
                // Opening another file would lose the edit: say so once.
                self.armed = Some(Command::Open);
                self.status.warn(
                    "the edited snippet is not saved (x exports it); press o again to open another file",
                );
            }
            Command::Region => {
                let current = self
                    .region
                    .as_ref()
                    .map(|r| format!("{}-{}", r.lines.0, r.lines.1))
                    .unwrap_or_default();
                self.overlay = Overlay::Prompt(PromptKind::Region, LineInput::new(&current))
            }
            Command::Open => {
                // The line above the prompt shows its completions from now on.
                self.status.message = None;
                self.overlay = Overlay::Prompt(PromptKind::Open, LineInput::default())
            }
            Command::Compare | Command::CompareTwin | Command::CompareHeat => {
                return self.compare_command(c)
            }
            Command::Models => return self.open_picker(),
            Command::RandomWeights => return self.toggle_random_weights(),
            Command::Stack => return self.next_stack(),
            Command::Language => return self.next_language(),
            Command::Surprisal => return self.toggle_surprisal(),
            Command::Knockout => return self.cycle_knockout(),
            Command::Lens => return self.open_lens(),
            Command::Patch => return self.toggle_patch(),
            Command::ProbeTrain | Command::ProbeTask => {
                if v.focus != Focus::Code {
                    v.focus = Focus::Probes;
                }
                v.side = Focus::Probes;
                return if c == Command::ProbeTrain {
                    self.request_probe()
                } else {
                    self.cycle_probe_task()
                };
            }
            Command::Export => {
                if self.prepared().is_some() {
                    self.overlay = Overlay::ExportMenu(crate::tui::figures::this_view(self));
                    return Vec::new();
                }
                let why = if self.status.busy.is_some() {
                    "nothing to export yet: the analysis is still running"
                } else {
                    "nothing to export: no analysis"
                };
                self.status.warn(why);
            }
            // Handled by `present_command` above.
            Command::Overview
            | Command::Pin
            | Command::AddStep
            | Command::NextStep
            | Command::PrevStep => {}
        }
        Vec::new()
    }

    fn search_next(&mut self, d: isize) {
        match self.view.search_next(&self.doc, d) {
            Err(e) => self.status.warn(e),
            Ok(()) => {
                // A found match replaces an earlier search's "no match".
                if self
                    .status
                    .message
                    .as_ref()
                    .is_some_and(|(_, m)| m.starts_with(view::NO_MATCH))
                {
                    self.status.message = None;
                }
            }
        }
    }

    fn set_threshold(&mut self, steps: u8) {
        if steps == self.view.t_steps {
            return;
        }
        self.view.t_steps = steps;
        if let Some((_, p)) = &self.shown.data {
            self.shown.scores = p.scores_at(self.threshold());
        }
    }

    fn submit_prompt(&mut self, kind: PromptKind, text: String) -> Vec<Effect> {
        let text = text.trim().to_string();
        match kind {
            PromptKind::Search => {
                if text.is_empty() {
                    self.view.search = None;
                } else {
                    self.view.search = Some(text);
                    // Search from the token before the cursor so a match under it counts.
                    self.search_next(1);
                }
                Vec::new()
            }
            PromptKind::Open => {
                if text.is_empty() {
                    return Vec::new();
                }
                vec![Effect::ReadFile(text)]
            }
            PromptKind::Twin => {
                self.compare_file(text);
                Vec::new()
            }
            PromptKind::Caption => self.add_step(text),
            PromptKind::Region => {
                if text.trim().is_empty() {
                    return self.set_region(None);
                }
                match crate::tui::data::parse_lines(&text) {
                    Ok(r) => self.set_region(Some(r)),
                    Err(e) => {
                        self.status.warn(e);
                        Vec::new()
                    }
                }
            }
        }
    }

    /// Analyse only lines `A-B` of the file (`None`: the whole file again). The lines
    /// become the snippet (their common indentation taken off); the whole file is kept, so
    /// another range or the whole can follow.
    pub fn set_region(&mut self, lines: Option<(usize, usize)>) -> Vec<Effect> {
        let (name, text) = match &self.region {
            Some(r) => (r.name.clone(), r.text.clone()),
            None => (self.doc.name.clone(), self.doc.text.clone()),
        };
        let lang = self.doc.lang;
        // An edit of the lines shown is not carried into the whole file.
        let dropped = if self.region.is_some() && self.doc.edited {
            " (the edit of the lines shown is not kept)"
        } else {
            ""
        };
        let Some(range) = lines else {
            if self.region.take().is_none() {
                self.status.info("the whole file is analysed already");
                return Vec::new();
            }
            self.status
                .info(format!("the whole of {name} again{dropped}"));
            return self.set_doc(Doc::new(name, text, lang));
        };
        match crate::tui::data::region(&text, range) {
            Err(e) => {
                self.status.warn(e);
                Vec::new()
            }
            Ok((part, (a, b))) => {
                self.status.info(format!(
                    "analysing lines {a}-{b} of {name} (r: other lines, empty: the whole file){dropped}"
                ));
                self.region = Some(Region {
                    name: name.clone(),
                    text,
                    lines: (a, b),
                });
                self.set_doc(Doc::new(format!("{name} lines {a}-{b}"), part, lang))
            }
        }
    }

    fn apply_edit(&mut self, text: String) -> Vec<Effect> {
        if text == self.doc.text {
            return Vec::new();
        }
        if text.trim().is_empty() {
            self.status.warn("the snippet is empty; edit discarded");
            return Vec::new();
        }
        let name = self.doc.name.clone();
        let name = if name.ends_with(" (edited)") {
            name
        } else {
            format!("{name} (edited)")
        };
        let mut doc = Doc::new(name, text, self.doc.lang);
        doc.edited = true;
        self.set_doc(doc)
    }

    fn open_picker(&mut self) -> Vec<Effect> {
        let p = Picker::new(self.model.loaded.as_ref().map(|(l, _)| l.as_str()));
        let names = p.items.iter().map(|i| i.name.clone()).collect();
        self.overlay = Overlay::Models(p);
        vec![Effect::CheckPresets(names)]
    }

    fn picker_key(&mut self, mut p: Picker, k: KeyEvent) -> Vec<Effect> {
        let n = p.items.len();
        match k.code {
            KeyCode::Esc => return Vec::new(),
            KeyCode::Up => p.sel = p.sel.saturating_sub(1),
            KeyCode::Down => p.sel = (p.sel + 1).min(n),
            KeyCode::Enter => {
                let spec = if p.sel < n {
                    p.items[p.sel].name.clone()
                } else {
                    p.input.text.trim().to_string()
                };
                if spec.is_empty() {
                    self.overlay = Overlay::Models(p);
                    return Vec::new();
                }
                self.model.spec = Some(spec.clone());
                let mut fx = vec![Effect::LoadModel(
                    Some(spec.clone()),
                    self.model.random_weights,
                    self.model.stack,
                )];
                fx.extend(self.request_parse_or_analysis());
                self.status.busy = Some(format!("loading model {spec}…"));
                return fx;
            }
            _ => {
                p.sel = n;
                p.input.key(k);
            }
        }
        self.overlay = Overlay::Models(p);
        Vec::new()
    }

    /// Feed a string of plain characters as key presses (tests, scripted demos).
    pub fn type_keys(&mut self, s: &str) -> Vec<Effect> {
        let mut fx = Vec::new();
        for c in s.chars() {
            fx.extend(self.update(Msg::Key(plain(c))));
        }
        fx
    }
}
