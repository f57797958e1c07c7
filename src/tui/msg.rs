//! The explorer's one event enum and the effects `App::update` asks the runtime for
//! (bottom's `event.rs` shape: plain threads send [`Msg`]s over one channel).

use std::sync::Arc;

use crossterm::event::KeyEvent;

use super::data::Prepared;
use crate::analysis::Options;
use crate::model::ModelInfo;
use crate::probe::{ProbeReport, ProbeResult, Task};
use crate::syntax::Language;

/// Everything that can happen to the app.
#[derive(Debug)]
pub enum Msg {
    /// A key press (from the input thread).
    Key(KeyEvent),
    /// The terminal was resized.
    Resize { width: u16, height: u16 },
    /// The model worker reports.
    Worker(WorkerMsg),
    /// An export finished: the file names written, or an error.
    Exported(Result<Vec<String>, String>),
    /// SIGTERM / SIGINT / SIGHUP: quit now.
    Terminate,
}

/// What the worker reports.
pub enum WorkerMsg {
    /// Work in progress (`req` 0 for model loads).
    Progress { req: u64, text: String },
    /// A model is loaded. `label` is how to name it (the spec as typed or the preset),
    /// `notice` why it was chosen (default model) or that a fallback was used.
    ModelLoaded {
        info: ModelInfo,
        label: String,
        notice: Option<String>,
    },
    /// Loading failed; the previous model (if any) stays.
    ModelFailed { label: String, error: String },
    /// Analysis of request `req` done.
    Analysed { req: u64, data: Arc<Prepared> },
    /// Analysis of request `req` failed.
    AnalyseFailed { req: u64, error: String },
    /// Probe request `req` is under way: what it is doing, and the latest finished
    /// (task, layer) fit if this report is about one.
    ProbeProgress {
        req: u64,
        text: String,
        result: Option<ProbeResult>,
    },
    /// Probe request `req` done.
    Probed { req: u64, report: Arc<ProbeReport> },
    /// Probe request `req` failed (or was dropped).
    ProbeFailed { req: u64, error: String },
}

impl std::fmt::Debug for WorkerMsg {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            WorkerMsg::Progress { req, text } => write!(f, "Progress({req}, {text:?})"),
            WorkerMsg::ModelLoaded { label, .. } => write!(f, "ModelLoaded({label})"),
            WorkerMsg::ModelFailed { label, error } => write!(f, "ModelFailed({label}: {error})"),
            WorkerMsg::Analysed { req, .. } => write!(f, "Analysed({req})"),
            WorkerMsg::AnalyseFailed { req, error } => write!(f, "AnalyseFailed({req}: {error})"),
            WorkerMsg::ProbeProgress { req, text, .. } => {
                write!(f, "ProbeProgress({req}, {text:?})")
            }
            WorkerMsg::Probed { req, .. } => write!(f, "Probed({req})"),
            WorkerMsg::ProbeFailed { req, error } => write!(f, "ProbeFailed({req}: {error})"),
        }
    }
}

/// An analysis request (latest wins).
#[derive(Debug, Clone)]
pub struct AnalyseJob {
    pub req: u64,
    pub text: String,
    pub lang: Language,
    pub opts: Options,
    /// Run the LM head too (causal models, for the surprisal view).
    pub surprisal: bool,
}

/// A probe request (latest wins; runs after any pending model load or analysis): a
/// linear probe for one task at every layer of the loaded model, on the bundled corpus
/// of one language.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProbeJob {
    pub req: u64,
    /// `ModelInfo::source` of the model it is for (the worker refuses another model).
    pub model: String,
    pub lang: Language,
    pub task: Task,
}

/// What `App::update` asks the runtime to do.
#[derive(Debug, Clone)]
pub enum Effect {
    /// Load a model (`None`: the default model) in the worker.
    LoadModel(Option<String>),
    /// Analyse text in the worker (supersedes any earlier request).
    Analyse(AnalyseJob),
    /// Train probes in the worker (supersedes any earlier probe request).
    Probe(ProbeJob),
    /// Write the current view as SVG + JSON.
    Export,
    /// Leave the explorer.
    Quit,
}
