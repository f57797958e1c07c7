//! The explorer's state and its update function: `App::update(Msg) -> Vec<Effect>`.
//!
//! Pure with respect to the terminal: keys, worker reports and resizes come in as
//! [`Msg`]s, and what needs the outside world (model work, exports, quitting) goes out
//! as [`Effect`]s for the runtime (`tui::run`) to carry out. Tests drive it directly and
//! render it to a `TestBackend` (gitui / ratatui demo2 style).
//!
//! Focus: arrows always change layer (←→) and head (↑↓) except in the head grid, where
//! they move the grid's own cursor (Enter jumps there). The token cursor has its own keys
//! (hjkl, w/b, PgUp/PgDn, Home/End, `/`), so both work from any panel.

use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use super::data::{Doc, Metric, Prepared, TokenSurprisal};
use super::editor::{EditOutcome, Editor, LineInput};
use super::msg::{AnalyseJob, Effect, Msg, ProbeJob, WorkerMsg};
use super::theme::Theme;
use crate::analysis::{HeadScores, Mode, Options};
use crate::model::{source, ModelInfo};
use crate::probe::{ProbeReport, ProbeResult, Task};
use crate::syntax::{Coarse, Language};

/// Shown while the analysis with the LM head is computed (cleared when it arrives).
const SURPRISAL_PENDING: &str = "surprisal shows once the analysis is ready";

/// Threshold step and range (METHODS.md 3: the grid 0, 0.05, ..., 0.40).
pub const T_STEP: f32 = 0.05;
pub const T_MAX_STEPS: u8 = 8;

/// Panels that can have the focus (and, on small terminals, be the one shown).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Focus {
    Code,
    Heatmap,
    Heads,
    Categories,
    Probes,
}

impl Focus {
    pub const ALL: [Focus; 5] = [
        Focus::Code,
        Focus::Heatmap,
        Focus::Heads,
        Focus::Categories,
        Focus::Probes,
    ];
    pub fn name(self) -> &'static str {
        match self {
            Focus::Code => "code",
            Focus::Heatmap => "heatmap",
            Focus::Heads => "heads",
            Focus::Categories => "categories",
            Focus::Probes => "probes",
        }
    }
    fn step(self, d: isize) -> Focus {
        let i = Focus::ALL.iter().position(|&f| f == self).unwrap_or(0) as isize;
        let n = Focus::ALL.len() as isize;
        Focus::ALL[((i + d).rem_euclid(n)) as usize]
    }
}

/// Attention from the selected token (its row) or to it (its column).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    From,
    To,
}

/// What a one-line prompt is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PromptKind {
    Open,
    Search,
}

/// One entry of the model picker.
#[derive(Debug, Clone)]
pub struct PickerItem {
    pub name: String,
    pub spec: String,
    pub description: String,
    /// On local disk (`None`: not checked).
    pub local: Option<bool>,
}

/// The model picker: presets plus a typed spec.
#[derive(Debug, Clone)]
pub struct Picker {
    pub items: Vec<PickerItem>,
    /// Selected row; `items.len()` is the typed-spec row.
    pub sel: usize,
    pub input: LineInput,
}

/// What is drawn over the panels.
#[derive(Debug, Clone)]
pub enum Overlay {
    None,
    Help,
    Prompt(PromptKind, LineInput),
    Models(Picker),
}

/// Severity of the status-bar message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    Info,
    Warn,
    Error,
}

/// What the probe panel says about the token under the cursor.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TokenProbe {
    /// The probe's label for the token at hidden layer `layer` (0 = embeddings) and
    /// the gold label.
    Label {
        token: String,
        layer: usize,
        predicted: String,
        gold: String,
    },
    /// Pair tasks label token pairs; there is no single-token prediction.
    PairTask,
    /// The analysis shown has no token features (paper mode, or not analysed yet).
    NoFeatures,
    /// The token has no hidden state (beyond a truncated window).
    NotCovered { token: String },
    /// No fitted probe for this layer.
    NoProbe,
}

/// What probe results are for: (model source, corpus language, task).
pub type ProbeKey = (String, Language, Task);

/// A probe request the worker is running.
#[derive(Debug, Clone)]
pub struct ProbeRun {
    pub req: u64,
    pub key: ProbeKey,
    /// What it is doing ("tracing 120/311", "fitting layer 3/7").
    pub progress: String,
    /// Fits finished so far.
    pub partial: Vec<ProbeResult>,
}

/// Settings the explorer starts with.
#[derive(Debug, Clone)]
pub struct Config {
    pub theme: Theme,
    /// `--model` (None: the default model).
    pub model_spec: Option<String>,
    /// Check which presets are on disk when the model picker opens (off in tests, whose
    /// snapshots must not depend on the machine's cache).
    pub probe_presets: bool,
}

/// The explorer's whole state.
pub struct App {
    pub theme: Theme,
    pub doc: Doc,
    /// Request id of the analysis that matches `doc` (pending or shown).
    pub doc_req: u64,
    /// The analysis shown, with the request id it answered.
    pub data: Option<(u64, Arc<Prepared>)>,
    /// Head scores at the current threshold.
    pub scores: BTreeMap<&'static str, HeadScores>,
    /// Loaded model: label as the user named it, and its description.
    pub model: Option<(String, ModelInfo)>,
    pub model_spec: Option<String>,
    /// Why this model (default choice / fallback).
    pub model_notice: Option<String>,
    pub layer: usize,
    pub head: usize,
    /// Mean over heads instead of one head.
    pub mean: bool,
    /// Threshold in steps of [`T_STEP`].
    pub t_steps: u8,
    pub mode: Mode,
    /// Token cursor: index into the doc's syntax tokens.
    pub cursor: usize,
    pub direction: Direction,
    pub gold: bool,
    pub dfg: bool,
    pub focus: Focus,
    /// Side panel of the compact layout (never `Code`).
    pub side: Focus,
    pub metric: Metric,
    /// Head grid cursor (layer, head).
    pub grid: (usize, usize),
    /// Heatmap zoom: 0 = fit, else code tokens per cell.
    pub zoom: usize,
    pub overlay: Overlay,
    pub editor: Option<Editor>,
    pub search: Option<String>,
    /// Worker activity shown in the status bar.
    pub busy: Option<String>,
    pub message: Option<(Level, String)>,
    /// The probe task the probe panel shows (`P` cycles).
    pub probe_task: Task,
    /// Finished probe reports (`p` asks for one; kept for the session).
    pub probe_results: HashMap<ProbeKey, Arc<ProbeReport>>,
    /// The probe job under way.
    pub probe_run: Option<ProbeRun>,
    /// The last probe failure, for the key it was for.
    pub probe_error: Option<(ProbeKey, String)>,
    /// The surprisal view (`S`; causal models): the code coloured by per-token
    /// surprisal and the cursor token's expected next tokens.
    pub surprisal: bool,
    /// Last terminal size seen.
    pub size: (u16, u16),
    pub quit: bool,
    next_req: u64,
    probe_presets: bool,
    /// Render caches (interior mutability so drawing takes `&App`).
    pub(crate) mean_cache: RefCell<Option<MeanCache>>,
    pub(crate) code_scroll: Cell<(usize, usize)>,
    pub(crate) code_rows: Cell<usize>,
    pub(crate) heat_fit: Cell<usize>,
    pub(crate) heat_origin: Cell<(usize, usize)>,
}

/// The head mean of one layer of one analysis: (request id, layer, matrix).
type MeanCache = (u64, usize, Arc<Vec<f32>>);

fn plain(c: char) -> KeyEvent {
    KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE)
}

impl App {
    /// A new explorer on `doc`; call [`App::start`] for the first effects.
    pub fn new(cfg: Config, doc: Doc) -> Self {
        App {
            theme: cfg.theme,
            doc,
            doc_req: 0,
            data: None,
            scores: BTreeMap::new(),
            model: None,
            model_spec: cfg.model_spec,
            model_notice: None,
            layer: 0,
            head: 0,
            mean: false,
            t_steps: 1,
            mode: Mode::Source,
            cursor: 0,
            direction: Direction::From,
            gold: false,
            dfg: false,
            focus: Focus::Code,
            side: Focus::Heatmap,
            metric: Metric::F1Motif,
            grid: (0, 0),
            zoom: 0,
            overlay: Overlay::None,
            editor: None,
            search: None,
            busy: None,
            message: None,
            probe_task: Task::Category,
            probe_results: HashMap::new(),
            probe_run: None,
            probe_error: None,
            surprisal: false,
            size: (120, 40),
            quit: false,
            next_req: 0,
            probe_presets: cfg.probe_presets,
            mean_cache: RefCell::new(None),
            code_scroll: Cell::new((0, 0)),
            code_rows: Cell::new(20),
            heat_fit: Cell::new(1),
            heat_origin: Cell::new((0, 0)),
        }
    }

    /// First effects: load the model and analyse the document.
    pub fn start(&mut self) -> Vec<Effect> {
        self.busy = Some("loading model…".into());
        let mut fx = vec![Effect::LoadModel(self.model_spec.clone())];
        fx.extend(self.request_analysis());
        fx
    }

    /// The current threshold.
    pub fn threshold(&self) -> f32 {
        self.t_steps as f32 * T_STEP
    }

    /// The analysis shown, if any.
    pub fn prepared(&self) -> Option<&Arc<Prepared>> {
        self.data.as_ref().map(|(_, p)| p)
    }

    /// Whether the analysis shown is for an older request than the document's.
    pub fn stale(&self) -> bool {
        self.data.as_ref().is_none_or(|(r, _)| *r != self.doc_req)
    }

    /// Layers and heads of the analysis (or the model), 0 when unknown.
    pub fn dims(&self) -> (usize, usize) {
        if let Some(p) = self.prepared() {
            (p.layers(), p.heads())
        } else if let Some((_, i)) = &self.model {
            (i.layers, i.heads)
        } else {
            (0, 0)
        }
    }

    /// The current code-token attention matrix (one head or the head mean), `n x n`.
    pub fn matrix(&self) -> Option<Arc<Vec<f32>>> {
        let (req, p) = self.data.as_ref()?;
        let ta = &p.analysis.token_attention;
        let l = self.layer.min(ta.layers.saturating_sub(1));
        if self.mean {
            let mut c = self.mean_cache.borrow_mut();
            if let Some((r, cl, m)) = c.as_ref() {
                if *r == *req && *cl == l {
                    return Some(m.clone());
                }
            }
            let m = Arc::new(ta.head_mean(l));
            *c = Some((*req, l, m.clone()));
            Some(m)
        } else {
            let h = self.head.min(ta.heads.saturating_sub(1));
            Some(Arc::new(ta.head(l, h).to_vec()))
        }
    }

    /// The current matrix as a slice callback, without copying a single head.
    pub fn with_matrix<R>(&self, f: impl FnOnce(&[f32], usize) -> R) -> Option<R> {
        let (_, p) = self.data.as_ref()?;
        let ta = &p.analysis.token_attention;
        let n = ta.n();
        if self.mean {
            let m = self.matrix()?;
            Some(f(&m, n))
        } else {
            let l = self.layer.min(ta.layers.saturating_sub(1));
            let h = self.head.min(ta.heads.saturating_sub(1));
            Some(f(ta.head(l, h), n))
        }
    }

    /// Per syntax token: the attention from (or to) the cursor token in the current
    /// matrix, `None` for tokens outside the analysed set.
    pub fn token_weights(&self) -> Option<Vec<Option<f32>>> {
        let (_, p) = self.data.as_ref()?;
        if self.stale() && self.doc.n_tokens() != p.pos.len() {
            return None;
        }
        let sel = (*p.pos.get(self.cursor)?)?;
        let dir = self.direction;
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
        let (_, info) = self.model.as_ref()?;
        Some((info.source.clone(), self.doc.lang, self.probe_task))
    }

    /// The cached report for [`App::probe_key`].
    pub fn probe_report(&self) -> Option<&Arc<ProbeReport>> {
        self.probe_results.get(&self.probe_key()?)
    }

    /// The running probe job if it is for [`App::probe_key`].
    pub fn probe_running(&self) -> Option<&ProbeRun> {
        let key = self.probe_key()?;
        self.probe_run.as_ref().filter(|r| r.key == key)
    }

    /// The probe failure for [`App::probe_key`].
    pub fn probe_failure(&self) -> Option<&str> {
        let key = self.probe_key()?;
        self.probe_error
            .as_ref()
            .filter(|(k, _)| *k == key)
            .map(|(_, e)| e.as_str())
    }

    /// The surprisal to draw: the view is on and the analysis shown has it (and still
    /// matches the document's tokens).
    pub fn surprisal_shown(&self) -> Option<&TokenSurprisal> {
        if !self.surprisal {
            return None;
        }
        let p = self.prepared()?;
        let s = p.surprisal.as_ref()?;
        (s.bits.len() == self.doc.n_tokens()).then_some(s)
    }

    /// The cached probe's label for the cursor token at the current layer's output
    /// (`None` when no report is cached for [`App::probe_key`]).
    pub fn token_probe(&self) -> Option<TokenProbe> {
        let report = self.probe_report()?;
        if self.probe_task.is_pair() {
            return Some(TokenProbe::PairTask);
        }
        let Some(feat) = self.prepared().and_then(|p| p.features.as_ref()) else {
            return Some(TokenProbe::NoFeatures);
        };
        let syn = self.doc.syntax.as_ref()?;
        if self.stale()
            && self
                .prepared()
                .is_some_and(|p| p.pos.len() != syn.tokens.len())
        {
            return Some(TokenProbe::NoFeatures);
        }
        let tok = syn.tokens.get(self.cursor)?;
        let token = tok.text.clone();
        let Some(k) = feat.tokens.iter().position(|&t| t == self.cursor) else {
            return Some(TokenProbe::NotCovered { token });
        };
        let layer = self.layer + 1;
        let Some(probe) = report
            .probes
            .iter()
            .find(|p| p.task == self.probe_task && p.layer == layer)
        else {
            return Some(TokenProbe::NoProbe);
        };
        let dim = feat
            .layers
            .get(layer)
            .map_or(0, |l| l.len() / feat.tokens.len().max(1));
        let x = feat.layers.get(layer)?.get(k * dim..(k + 1) * dim)?;
        let classes = self.probe_task.classes();
        let predicted = probe.classifier.predict(x)?;
        let gold = crate::probe::dataset::label_snippet(
            self.probe_task,
            syn,
            &feat.tokens,
            0,
            0,
            &mut crate::probe::Rng::new(0),
        )
        .into_iter()
        .find(|e| e.a == k)?
        .label;
        Some(TokenProbe::Label {
            token,
            layer,
            predicted: classes.get(predicted)?.clone(),
            gold: classes.get(gold)?.clone(),
        })
    }

    /// Toggle the surprisal view; encoders get a notice instead. The LM head runs only
    /// while the view is on: turning it on re-analyses when the shown analysis lacks it.
    fn toggle_surprisal(&mut self) -> Vec<Effect> {
        if self.surprisal {
            self.surprisal = false;
            return Vec::new();
        }
        match &self.model {
            None => {
                self.message = Some((Level::Warn, "no model is loaded yet".into()));
            }
            Some((label, info)) if !info.causal => {
                self.message = Some((
                    Level::Warn,
                    format!(
                        "surprisal needs a causal model; {label} ({}) is an encoder (M: switch model)",
                        info.architecture
                    ),
                ));
            }
            Some(_) => {
                self.surprisal = true;
                if self.prepared().is_some_and(|p| p.surprisal.is_none()) {
                    self.message = Some((Level::Info, SURPRISAL_PENDING.into()));
                    return self.request_analysis();
                }
            }
        }
        Vec::new()
    }

    /// Ask for the probe results of [`App::probe_key`] unless they are cached or
    /// already being computed.
    fn request_probe(&mut self) -> Vec<Effect> {
        let Some(key) = self.probe_key() else {
            self.message = Some((Level::Warn, "no model is loaded yet".into()));
            return Vec::new();
        };
        if self.probe_results.contains_key(&key)
            || self.probe_run.as_ref().is_some_and(|r| r.key == key)
        {
            return Vec::new();
        }
        let req = self.new_req();
        self.probe_error = None;
        self.probe_run = Some(ProbeRun {
            req,
            key: key.clone(),
            progress: "queued…".into(),
            partial: Vec::new(),
        });
        vec![Effect::Probe(ProbeJob {
            req,
            model: key.0,
            lang: key.1,
            task: key.2,
        })]
    }

    /// Next probe task; if probes were asked for on this model and language, the new
    /// task's are requested too (cached ones show at once).
    fn cycle_probe_task(&mut self) -> Vec<Effect> {
        let i = Task::ALL
            .iter()
            .position(|&t| t == self.probe_task)
            .unwrap_or(0);
        let was = self.probe_key();
        self.probe_task = Task::ALL[(i + 1) % Task::ALL.len()];
        let active = was.is_some_and(|(m, l, _)| {
            self.probe_run
                .as_ref()
                .is_some_and(|r| r.key.0 == m && r.key.1 == l)
                || self.probe_results.keys().any(|k| k.0 == m && k.1 == l)
        });
        if active {
            self.request_probe()
        } else {
            Vec::new()
        }
    }

    fn new_req(&mut self) -> u64 {
        self.next_req += 1;
        self.next_req
    }

    /// Ask the worker for an analysis of the document as it is now.
    fn request_analysis(&mut self) -> Vec<Effect> {
        if self.doc.syntax.is_none() {
            let why = self.doc.syntax_error.as_deref().unwrap_or("unknown reason");
            self.message = Some((
                Level::Error,
                format!("the snippet could not be parsed: {why}"),
            ));
            return Vec::new();
        }
        let req = self.new_req();
        self.doc_req = req;
        if self.model.is_some() {
            self.busy = Some("analysing…".into());
        }
        vec![Effect::Analyse(AnalyseJob {
            req,
            text: self.doc.text.clone(),
            lang: self.doc.lang,
            opts: Options {
                mode: self.mode,
                threshold: self.threshold(),
                sweep: false,
            },
            surprisal: self.surprisal,
        })]
    }

    /// Replace the document (edit, open) and re-analyse.
    pub fn set_doc(&mut self, doc: Doc) -> Vec<Effect> {
        self.doc = doc;
        self.data = None;
        self.scores.clear();
        self.cursor = self.cursor.min(self.doc.n_tokens().saturating_sub(1));
        self.code_scroll.set((0, 0));
        self.request_analysis()
    }

    fn clamp_layer_head(&mut self) {
        let (l, h) = self.dims();
        self.layer = self.layer.min(l.saturating_sub(1));
        self.head = self.head.min(h.saturating_sub(1));
        self.grid = (
            self.grid.0.min(l.saturating_sub(1)),
            self.grid.1.min(h.saturating_sub(1)),
        );
    }

    /// Apply one message.
    pub fn update(&mut self, msg: Msg) -> Vec<Effect> {
        match msg {
            Msg::Key(k) => self.key(k),
            Msg::Resize { width, height } => {
                self.size = (width, height);
                Vec::new()
            }
            Msg::Worker(w) => {
                self.worker(w);
                Vec::new()
            }
            Msg::Exported(r) => {
                self.message = Some(match r {
                    Ok(names) => (Level::Info, format!("exported {}", names.join(", "))),
                    Err(e) => (Level::Error, format!("export failed: {e}")),
                });
                Vec::new()
            }
            Msg::Terminate => {
                self.quit = true;
                vec![Effect::Quit]
            }
        }
    }

    fn worker(&mut self, w: WorkerMsg) {
        match w {
            WorkerMsg::Progress { req, text } => {
                if req == 0 || req == self.doc_req {
                    self.busy = Some(text);
                }
            }
            WorkerMsg::ModelLoaded {
                info,
                label,
                notice,
            } => {
                if !info.causal {
                    self.surprisal = false;
                }
                self.model = Some((label, info));
                self.model_notice = notice;
                let pending = self.stale() && self.doc.syntax.is_some();
                self.busy = pending.then(|| "analysing…".to_string());
                self.clamp_layer_head();
            }
            WorkerMsg::ModelFailed { label, error } => {
                self.busy = None;
                self.message = Some((Level::Error, format!("model {label}: {error}")));
            }
            WorkerMsg::Analysed { req, data } => {
                if req != self.doc_req {
                    return; // superseded
                }
                self.scores = if (data.analysis.threshold - self.threshold()).abs() < 1e-6 {
                    data.analysis.relations.clone()
                } else {
                    data.scores_at(self.threshold())
                };
                if data.surprisal.is_some()
                    && self
                        .message
                        .as_ref()
                        .is_some_and(|(_, m)| m == SURPRISAL_PENDING)
                {
                    self.message = None;
                }
                self.data = Some((req, data));
                *self.mean_cache.borrow_mut() = None;
                self.busy = None;
                self.clamp_layer_head();
            }
            WorkerMsg::AnalyseFailed { req, error } => {
                if req == self.doc_req {
                    self.busy = None;
                    self.message = Some((Level::Error, error));
                }
            }
            WorkerMsg::ProbeProgress { req, text, result } => {
                if let Some(run) = self.probe_run.as_mut().filter(|r| r.req == req) {
                    run.progress = text;
                    run.partial.extend(result);
                }
            }
            WorkerMsg::Probed { req, report } => {
                if let Some(run) = self.probe_run.take_if(|r| r.req == req) {
                    self.probe_results.insert(run.key, report);
                }
            }
            WorkerMsg::ProbeFailed { req, error } => {
                if let Some(run) = self.probe_run.take_if(|r| r.req == req) {
                    self.probe_error = Some((run.key, error));
                }
            }
        }
    }

    fn key(&mut self, k: KeyEvent) -> Vec<Effect> {
        if k.kind == crossterm::event::KeyEventKind::Release {
            return Vec::new();
        }
        let ctrl = k.modifiers.contains(KeyModifiers::CONTROL);
        if ctrl && k.code == KeyCode::Char('c') {
            self.quit = true;
            return vec![Effect::Quit];
        }
        if let Some(ed) = self.editor.as_mut() {
            let page = self.code_rows.get();
            match ed.key(k, page) {
                EditOutcome::Continue => {
                    ed.scroll_to_cursor(page);
                    return Vec::new();
                }
                EditOutcome::Cancel => {
                    self.editor = None;
                    self.message = Some((Level::Info, "edit discarded".into()));
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
            Overlay::Help => return Vec::new(),
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
        }
        self.normal_key(k)
    }

    fn normal_key(&mut self, k: KeyEvent) -> Vec<Effect> {
        let (layers, heads) = self.dims();
        let in_grid = self.focus == Focus::Heads;
        match k.code {
            KeyCode::Char('q') | KeyCode::Esc => {
                self.quit = true;
                return vec![Effect::Quit];
            }
            KeyCode::Char('?') => self.overlay = Overlay::Help,
            KeyCode::Tab => self.set_focus(self.focus.step(1)),
            KeyCode::BackTab => self.set_focus(self.focus.step(-1)),
            KeyCode::Left if in_grid => self.grid.0 = self.grid.0.saturating_sub(1),
            KeyCode::Right if in_grid => {
                self.grid.0 = (self.grid.0 + 1).min(layers.saturating_sub(1))
            }
            KeyCode::Up if in_grid => self.grid.1 = self.grid.1.saturating_sub(1),
            KeyCode::Down if in_grid => {
                self.grid.1 = (self.grid.1 + 1).min(heads.saturating_sub(1))
            }
            KeyCode::Enter if in_grid => {
                (self.layer, self.head) = self.grid;
                self.mean = false;
            }
            KeyCode::Left => self.layer = self.layer.saturating_sub(1),
            KeyCode::Right => self.layer = (self.layer + 1).min(layers.saturating_sub(1)),
            KeyCode::Up => {
                self.mean = false;
                self.head = self.head.saturating_sub(1);
            }
            KeyCode::Down => {
                self.mean = false;
                self.head = (self.head + 1).min(heads.saturating_sub(1));
            }
            KeyCode::Char('a') => self.mean = !self.mean,
            KeyCode::Char('h') => self.move_cursor(-1),
            KeyCode::Char('l') => self.move_cursor(1),
            KeyCode::Char('j') => self.move_lines(1),
            KeyCode::Char('k') => self.move_lines(-1),
            KeyCode::PageDown => self.move_lines(self.code_rows.get().max(2) as isize - 1),
            KeyCode::PageUp => self.move_lines(1 - self.code_rows.get().max(2) as isize),
            KeyCode::Home => self.cursor = 0,
            KeyCode::End => self.cursor = self.doc.n_tokens().saturating_sub(1),
            KeyCode::Char('w') => self.move_ident(1),
            KeyCode::Char('b') => self.move_ident(-1),
            KeyCode::Char('f') => {
                self.direction = match self.direction {
                    Direction::From => Direction::To,
                    Direction::To => Direction::From,
                }
            }
            KeyCode::Char('d') => self.dfg = !self.dfg,
            KeyCode::Char('g') => self.gold = !self.gold,
            KeyCode::Char('+') | KeyCode::Char('=') => {
                let cur = self.effective_zoom();
                self.zoom = (cur / 2).max(1);
            }
            KeyCode::Char('-') => {
                let cur = self.effective_zoom();
                self.zoom = (cur * 2).min(self.doc.n_tokens().max(1));
            }
            KeyCode::Char('0') => self.zoom = 0,
            KeyCode::Char('s') => self.metric = self.metric.next(),
            KeyCode::Char(c @ '1'..='5') => {
                self.metric = Metric::ALL[c as usize - '1' as usize];
            }
            KeyCode::Char('t') => self.set_threshold(self.t_steps.saturating_sub(1)),
            KeyCode::Char('T') => self.set_threshold((self.t_steps + 1).min(T_MAX_STEPS)),
            KeyCode::Char('m') => {
                self.mode = match self.mode {
                    Mode::Source => Mode::Paper,
                    Mode::Paper => Mode::Source,
                };
                return self.request_analysis();
            }
            KeyCode::Char('/') => {
                self.overlay = Overlay::Prompt(
                    PromptKind::Search,
                    LineInput::new(self.search.as_deref().unwrap_or("")),
                )
            }
            KeyCode::Char('n') => self.search_next(1),
            KeyCode::Char('N') => self.search_next(-1),
            KeyCode::Char('e') => {
                let at = self
                    .doc
                    .syntax
                    .as_ref()
                    .and_then(|s| s.tokens.get(self.cursor))
                    .map_or(0, |t| t.start);
                self.editor = Some(Editor::new(&self.doc.text, at));
                self.focus = Focus::Code;
            }
            KeyCode::Char('o') => {
                self.overlay = Overlay::Prompt(PromptKind::Open, LineInput::default())
            }
            KeyCode::Char('M') => self.open_picker(),
            KeyCode::Char('S') => return self.toggle_surprisal(),
            KeyCode::Char('p') => {
                if self.focus != Focus::Code {
                    self.focus = Focus::Probes;
                }
                self.side = Focus::Probes;
                return self.request_probe();
            }
            KeyCode::Char('P') => {
                if self.focus != Focus::Code {
                    self.focus = Focus::Probes;
                }
                self.side = Focus::Probes;
                return self.cycle_probe_task();
            }
            KeyCode::Char('x') => {
                if self.prepared().is_some() {
                    return vec![Effect::Export];
                }
                let why = if self.busy.is_some() {
                    "nothing to export yet: the analysis is still running"
                } else {
                    "nothing to export: no analysis"
                };
                self.message = Some((Level::Warn, why.into()));
            }
            _ => {}
        }
        Vec::new()
    }

    fn set_focus(&mut self, f: Focus) {
        self.focus = f;
        if f != Focus::Code {
            self.side = f;
        }
        if f == Focus::Heads {
            self.grid = (self.layer, self.head);
        }
    }

    /// The heatmap's tokens-per-cell now (fit resolved with the last drawn size).
    pub fn effective_zoom(&self) -> usize {
        if self.zoom == 0 {
            self.heat_fit.get().max(1)
        } else {
            self.zoom
        }
    }

    fn set_threshold(&mut self, steps: u8) {
        if steps == self.t_steps {
            return;
        }
        self.t_steps = steps;
        if let Some((_, p)) = &self.data {
            self.scores = p.scores_at(self.threshold());
        }
    }

    fn move_cursor(&mut self, d: isize) {
        let n = self.doc.n_tokens();
        if n == 0 {
            return;
        }
        self.cursor = (self.cursor as isize + d).clamp(0, n as isize - 1) as usize;
    }

    /// Move to the token nearest the cursor's column on the line `d` lines away that
    /// has tokens.
    fn move_lines(&mut self, d: isize) {
        let lay = &self.doc.layout;
        let n = self.doc.n_tokens();
        if n == 0 {
            return;
        }
        let cur = self.cursor.min(n - 1);
        let line = lay.tok_line[cur] as isize;
        let col = lay.tok_col[cur];
        let last_line = lay.tok_line[n - 1] as isize;
        let mut target = (line + d).clamp(0, last_line);
        // Skip lines without tokens in the direction of travel.
        loop {
            let first = lay.first_token_from_line(target as usize);
            if first < n && lay.tok_line[first] == target as usize {
                break;
            }
            let next = target + d.signum();
            if next < 0 || next > last_line || d == 0 {
                target = line;
                break;
            }
            target = next;
        }
        let first = lay.first_token_from_line(target as usize);
        let mut best = first;
        let mut i = first;
        while i < n && lay.tok_line[i] == target as usize {
            if lay.tok_col[i] <= col {
                best = i;
            }
            i += 1;
        }
        self.cursor = best;
    }

    fn move_ident(&mut self, d: isize) {
        let Some(syn) = &self.doc.syntax else { return };
        let n = syn.tokens.len() as isize;
        let mut i = self.cursor as isize + d;
        while (0..n).contains(&i) {
            if syn.tokens[i as usize].coarse == Coarse::Identifier {
                self.cursor = i as usize;
                return;
            }
            i += d;
        }
    }

    fn search_next(&mut self, d: isize) {
        let (Some(pat), Some(syn)) = (&self.search, &self.doc.syntax) else {
            return;
        };
        let pat = pat.to_lowercase();
        let n = syn.tokens.len();
        for s in 1..=n {
            let i = (self.cursor as isize + d * s as isize).rem_euclid(n as isize) as usize;
            if syn.tokens[i].text.to_lowercase().contains(&pat) {
                self.cursor = i;
                return;
            }
        }
        self.message = Some((Level::Warn, format!("no token matches '{pat}'")));
    }

    fn submit_prompt(&mut self, kind: PromptKind, text: String) -> Vec<Effect> {
        let text = text.trim().to_string();
        match kind {
            PromptKind::Search => {
                if text.is_empty() {
                    self.search = None;
                } else {
                    self.search = Some(text);
                    // Search from the token before the cursor so a match under it counts.
                    self.search_next(1);
                }
                Vec::new()
            }
            PromptKind::Open => {
                if text.is_empty() {
                    return Vec::new();
                }
                match crate::input::read(&text) {
                    Ok(inp) => {
                        let lang = Language::from_path(std::path::Path::new(&text))
                            .unwrap_or(self.doc.lang);
                        self.cursor = 0;
                        self.message = Some((Level::Info, format!("opened {text}")));
                        self.set_doc(Doc::new(inp.name, inp.text, lang))
                    }
                    Err(e) => {
                        self.message = Some((Level::Error, e.to_string()));
                        Vec::new()
                    }
                }
            }
        }
    }

    fn apply_edit(&mut self, text: String) -> Vec<Effect> {
        if text == self.doc.text {
            return Vec::new();
        }
        if text.trim().is_empty() {
            self.message = Some((Level::Warn, "the snippet is empty; edit discarded".into()));
            return Vec::new();
        }
        let name = self.doc.name.clone();
        let name = if name.ends_with(" (edited)") {
            name
        } else {
            format!("{name} (edited)")
        };
        let doc = Doc::new(name, text, self.doc.lang);
        self.set_doc(doc)
    }

    fn open_picker(&mut self) {
        let items = source::PRESETS
            .iter()
            .map(|p| PickerItem {
                name: p.name.to_string(),
                spec: p.spec.to_string(),
                description: p.description.to_string(),
                local: self
                    .probe_presets
                    .then(|| source::preset_available(p).is_some()),
            })
            .collect::<Vec<_>>();
        let sel = self
            .model
            .as_ref()
            .and_then(|(l, _)| items.iter().position(|i| &i.name == l))
            .unwrap_or(0);
        self.overlay = Overlay::Models(Picker {
            items,
            sel,
            input: LineInput::default(),
        });
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
                self.model_spec = Some(spec.clone());
                let mut fx = vec![Effect::LoadModel(Some(spec.clone()))];
                fx.extend(self.request_analysis());
                self.busy = Some(format!("loading model {spec}…"));
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
