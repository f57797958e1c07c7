//! The explorer's one event enum and the effects `App::update` asks the runtime for
//! (bottom's `event.rs` shape: plain threads send [`Msg`]s over one channel).
//!
//! Everything that touches the disk, the parser or the model is an [`Effect`]: reading a
//! file, parsing a text (off the UI thread), listing which presets are on disk, loading a
//! model, analysing, training probes, labelling a token with a trained probe, rebuilding
//! the snippet's tree with a trained AST-Probe, exporting.
//! Their results come back as [`Msg`]s. `App::update` itself only computes.

use std::collections::BTreeMap;
use std::sync::Arc;

use crossterm::event::{KeyEvent, MouseEvent};

use crate::analysis::compare::Comparison;
use crate::analysis::{AnalyzeOptions, CategoryMatrix, Graph, Score, SnippetAnalysis};
use crate::input::Input;
use crate::model::ModelInfo;
use crate::probe::astprobe::view::{SnippetTrees, TreeJob};
use crate::probe::label::{LabelJob, TokenProbe};
use crate::probe::{ProbeReport, ProbeResult, Task};
use crate::syntax::rewrite::{Rewrite, Twin};
use crate::syntax::{Language, Syntax};
use crate::tui::app::PanelTask;

/// What appending a tour step gives: the tour file, the step as written and its snippet.
pub type StepResult = Result<
    (
        std::path::PathBuf,
        crate::present::tour::Step,
        crate::present::tour::Snippet,
    ),
    String,
>;

/// Everything that can happen to the app.
#[derive(Debug)]
pub enum Msg {
    /// A key press (from the input thread).
    Key(KeyEvent),
    /// A mouse click or wheel turn (from the input thread; moves and drags are dropped).
    Mouse(MouseEvent),
    /// Text pasted into the terminal (bracketed paste, from the input thread): one edit in
    /// the editor or a prompt, never keystrokes.
    Paste(String),
    /// Tab completions of the open prompt's `typed` path ([`Effect::Complete`]).
    Completions {
        typed: String,
        candidates: Vec<String>,
    },
    /// The terminal was resized.
    Resize { width: u16, height: u16 },
    /// The model worker reports.
    Worker(WorkerMsg),
    /// Parse request `req` done: the syntax, or why the parser refused the text.
    Parsed {
        req: u64,
        result: Result<Arc<Syntax>, String>,
    },
    /// A file asked for with [`Effect::ReadFile`]: its contents, or the error.
    FileRead {
        path: String,
        result: Result<Input, String>,
    },
    /// Which presets of the open model picker are on local disk (in picker order).
    PresetsChecked(Vec<bool>),
    /// The probe label of [`Effect::LabelToken`] (`key` says what it was asked for).
    TokenLabel {
        key: LabelKey,
        label: Option<TokenProbe>,
    },
    /// The trees of [`Effect::AstTree`] (`key` says what they were asked for), or why
    /// there are none.
    AstTree {
        key: TreeKey,
        result: Result<Arc<SnippetTrees>, String>,
    },
    /// A tour step was appended ([`Effect::AppendStep`]): the tour file, the step as
    /// written and its snippet, or an error.
    StepAppended(Box<StepResult>),
    /// An export finished: the paths written, or an error.
    Exported(Result<Vec<String>, String>),
    /// SIGTERM / SIGINT / SIGHUP / SIGQUIT: quit now.
    Terminate,
    /// SIGTSTP (e.g. `kill -TSTP`): give the terminal back and stop, like Ctrl-Z.
    Suspend,
    /// SIGCONT: the process was continued (`fg`) after a stop the explorer did not make
    /// itself; the terminal's modes must be set again.
    Continued,
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
    Analysed {
        req: u64,
        data: Arc<SnippetAnalysis>,
    },
    /// Analysis of request `req` is under way: one more layer's results (layers come in
    /// order, each once, all before [`WorkerMsg::Analysed`]), with what every layer of
    /// the request shares.
    AnalysedLayer {
        req: u64,
        frame: Arc<PartialFrame>,
        layer: Arc<PartialLayer>,
    },
    /// Analysis of request `req` failed.
    AnalyseFailed { req: u64, error: String },
    /// One layer's code-token attention recomputed ([`Effect::Layer`]), or why not.
    Layer {
        key: LayerKey,
        result: Result<Arc<Vec<f32>>, String>,
    },
    /// Probe request `req` is under way: what it is doing, and the latest finished
    /// (task, layer) fit if this report is about one.
    ProbeProgress {
        req: u64,
        text: String,
        result: Option<ProbeResult>,
    },
    /// Knockout request `req` done (or failed).
    Knocked {
        req: u64,
        result: std::result::Result<Arc<crate::analysis::causal::KnockoutResult>, String>,
    },
    /// Ablation request `req` is under way: head `head` of layer `layer` (0-based) is
    /// done, `done` of `total` heads so far (heads come in order, each once).
    AblatedHead {
        req: u64,
        layer: usize,
        head: usize,
        effect: crate::analysis::causal::HeadEffect,
        measure: crate::analysis::causal::Measure,
        done: usize,
        total: usize,
    },
    /// Ablation request `req` failed (its heads so far stay).
    AblationFailed { req: u64, error: String },
    /// Logit-lens request `req` done (or failed).
    Lensed {
        req: u64,
        result: std::result::Result<Arc<LensData>, String>,
    },
    /// Patch request `req` done (or failed: why the twin cannot be patched).
    Patched {
        req: u64,
        result: std::result::Result<Arc<crate::analysis::patch::PatchResult>, String>,
    },
    /// Probe request `req` done.
    Probed { req: u64, report: Arc<ProbeReport> },
    /// Probe request `req` failed (or was dropped).
    ProbeFailed { req: u64, error: String },
    /// Compare request `req`: the twin (or why it could not be made), before its
    /// analysis.
    TwinMade {
        req: u64,
        result: Result<Arc<Twin>, String>,
    },
    /// Compare request `req` done.
    Compared { req: u64, data: Arc<Comparison> },
    /// Compare request `req` failed.
    CompareFailed { req: u64, error: String },
}

impl std::fmt::Debug for WorkerMsg {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            WorkerMsg::Progress { req, text } => write!(f, "Progress({req}, {text:?})"),
            WorkerMsg::ModelLoaded { label, .. } => write!(f, "ModelLoaded({label})"),
            WorkerMsg::ModelFailed { label, error } => write!(f, "ModelFailed({label}: {error})"),
            WorkerMsg::Analysed { req, .. } => write!(f, "Analysed({req})"),
            WorkerMsg::AnalysedLayer { req, layer, .. } => {
                write!(f, "AnalysedLayer({req}, {})", layer.layer)
            }
            WorkerMsg::AnalyseFailed { req, error } => write!(f, "AnalyseFailed({req}: {error})"),
            WorkerMsg::Layer { key, result } => write!(
                f,
                "Layer({key:?}, {})",
                if result.is_ok() { "ok" } else { "failed" }
            ),
            WorkerMsg::ProbeProgress { req, text, .. } => {
                write!(f, "ProbeProgress({req}, {text:?})")
            }
            WorkerMsg::Probed { req, .. } => write!(f, "Probed({req})"),
            WorkerMsg::Knocked { req, result } => write!(
                f,
                "Knocked({req}, {})",
                if result.is_ok() { "ok" } else { "failed" }
            ),
            WorkerMsg::AblatedHead {
                req, layer, head, ..
            } => write!(f, "AblatedHead({req}, L{} H{})", layer + 1, head + 1),
            WorkerMsg::AblationFailed { req, error } => {
                write!(f, "AblationFailed({req}: {error})")
            }
            WorkerMsg::Lensed { req, result } => write!(
                f,
                "Lensed({req}, {})",
                if result.is_ok() { "ok" } else { "failed" }
            ),
            WorkerMsg::Patched { req, result } => write!(
                f,
                "Patched({req}, {})",
                if result.is_ok() { "ok" } else { "failed" }
            ),
            WorkerMsg::ProbeFailed { req, error } => write!(f, "ProbeFailed({req}: {error})"),
            WorkerMsg::TwinMade { req, result } => {
                write!(
                    f,
                    "TwinMade({req}, {})",
                    if result.is_ok() { "ok" } else { "failed" }
                )
            }
            WorkerMsg::Compared { req, .. } => write!(f, "Compared({req})"),
            WorkerMsg::CompareFailed { req, error } => write!(f, "CompareFailed({req}: {error})"),
        }
    }
}

/// What the layers of an analysis in progress share: its analysed code tokens (fixed
/// before the first layer), the gold overlay, the model's dimensions.
#[derive(Debug, Clone)]
pub struct PartialFrame {
    pub layers: usize,
    pub heads: usize,
    /// The analysed tokens' text (row and column labels of the heat map).
    pub labels: Vec<String>,
    /// Syntax token index → analysed position.
    pub pos: Vec<Option<usize>>,
    /// `n x n`: an AST motif or data-flow edge `i -> j` (the gold overlay).
    pub gold_any: Vec<bool>,
    /// The analysis keeps every layer's matrices; when not (a long input) only the
    /// latest layer's are sent.
    pub resident: bool,
    /// The threshold of the head scores.
    pub threshold: f32,
}

impl PartialFrame {
    /// Number of analysed tokens (matrix size).
    pub fn n(&self) -> usize {
        self.labels.len()
    }
}

/// One finished layer of an analysis in progress ([`WorkerMsg::AnalysedLayer`]): the
/// numbers the finished analysis will hold for it.
#[derive(Debug, Clone)]
pub struct PartialLayer {
    pub layer: usize,
    /// Its code-token attention `[head][i][j]` (the explorer drops older layers' when
    /// the analysis does not keep every layer's).
    pub attention: Option<Arc<Vec<f32>>>,
    /// Per graph: every head's score at the frame's threshold.
    pub scores: BTreeMap<Graph, Vec<Score>>,
    /// Per head: the coarse category matrix (syn→id, id→syn).
    pub coarse: Vec<CategoryMatrix>,
    /// Per head: mean entropy (bits).
    pub entropy: Vec<f64>,
}

impl PartialLayer {
    /// From the pipeline's layer report.
    pub fn of(d: &crate::analysis::LayerDone<'_>) -> Self {
        PartialLayer {
            layer: d.layer,
            attention: Some(Arc::new(d.attention.to_vec())),
            scores: d.scores.clone(),
            coarse: d.coarse.clone(),
            entropy: d.entropy.to_vec(),
        }
    }
}

impl PartialFrame {
    /// From the pipeline's (first) layer report.
    pub fn of(d: &crate::analysis::LayerDone<'_>) -> Self {
        let n = d.tokens.len();
        let mut pos = vec![None; d.codes.len()];
        for (k, &t) in d.tokens.iter().enumerate() {
            if let Some(p) = pos.get_mut(t) {
                *p = Some(k);
            }
        }
        PartialFrame {
            layers: d.layers,
            heads: d.heads,
            labels: d
                .tokens
                .iter()
                .map(|&i| crate::tui::widgets::one_line(&d.codes[i].text))
                .collect(),
            pos,
            gold_any: crate::analysis::gold_any(d.golds, n),
            resident: d.keep,
            threshold: d.threshold,
        }
    }
}

/// A parse request (latest wins; runs off the UI thread).
#[derive(Debug, Clone)]
pub struct ParseJob {
    pub req: u64,
    pub text: String,
    pub lang: Language,
}

/// An analysis request (latest wins): the parsed snippet, not its text, so it is parsed
/// once.
#[derive(Debug, Clone)]
pub struct AnalyseJob {
    pub req: u64,
    pub syntax: Arc<Syntax>,
    pub opts: AnalyzeOptions,
    /// Run the LM head too (causal models, for the surprisal view).
    pub surprisal: bool,
    /// With `surprisal`: the analysis shown of this very snippet and model, made without
    /// the head; when it kept its final hidden state the head runs on that alone
    /// ([`SnippetAnalysis::with_lm_head`]) instead of the whole forward pass.
    pub base: Option<Arc<SnippetAnalysis>>,
}

/// A knockout request (the explorer's `K`; latest wins): the edge set knocked out in
/// every layer and head of the analysed text, with a 20-draw matched control.
#[derive(Debug, Clone)]
pub struct KnockoutJob {
    pub req: u64,
    pub syntax: Arc<Syntax>,
    pub mode: crate::analysis::Mode,
    pub edges: crate::analysis::causal::EdgeSet,
}

/// A head-ablation request (the head grid's ablation scores; latest wins): every head
/// of the analysed text zeroed in turn, from the `from`-th head on (0-based, layer by
/// layer), as `codescope ablate` does.
#[derive(Debug, Clone)]
pub struct AblationJob {
    pub req: u64,
    pub syntax: Arc<Syntax>,
    pub mode: crate::analysis::Mode,
    pub from: usize,
}

/// A logit-lens request (the explorer's lens view; latest wins), as `codescope lens`
/// computes it.
#[derive(Debug, Clone)]
pub struct LensJob {
    pub req: u64,
    pub syntax: Arc<Syntax>,
    pub mode: crate::analysis::Mode,
}

/// A patch request (the explorer's patch view; latest wins): the residual stream at the
/// renamed tokens copied from the twin, one hidden state at a time, as `codescope patch`
/// computes it (on the source as written).
#[derive(Debug, Clone)]
pub struct PatchJob {
    pub req: u64,
    pub syntax: Arc<Syntax>,
    pub twin: TwinSource,
}

/// The logit lens of a snippet with the text of every top guess in it.
pub struct LensData {
    pub lens: crate::analysis::causal::LensResult,
    /// Subword id → its text (the tokenizer's), for every top guess and next subword.
    pub words: BTreeMap<u32, String>,
}

impl LensData {
    /// The text of subword `id` (`<id>` when the tokenizer has none).
    pub fn word(&self, id: u32) -> String {
        self.words
            .get(&id)
            .cloned()
            .unwrap_or_else(|| format!("<{id}>"))
    }
}

/// A probe request (latest wins; runs after any pending model load or analysis): a
/// linear probe for one task (or AST-Probe) at every layer of the loaded model, on the
/// bundled corpus of one language.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProbeJob {
    pub req: u64,
    /// `ModelInfo::source` of the model it is for (the worker refuses another model).
    pub model: String,
    pub lang: Language,
    pub task: PanelTask,
}

/// Where compare mode's twin comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TwinSource {
    /// A checked renaming of the snippet.
    Rewrite(Rewrite),
    /// A file the user named (read by the worker with the input limits).
    File(String),
}

/// A comparison request (latest wins; runs after a pending analysis): make the twin of
/// the analysed snippet `a`, analyse it with the same options, compare the two.
#[derive(Clone)]
pub struct CompareJob {
    pub req: u64,
    pub a: Arc<SnippetAnalysis>,
    pub twin: TwinSource,
    pub opts: AnalyzeOptions,
    /// Run the LM head on the twin too (as A was).
    pub surprisal: bool,
    /// A trained probe to label both twins with (its per-layer agreement).
    pub probe: Option<(Arc<ProbeReport>, Task)>,
}

impl std::fmt::Debug for CompareJob {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "CompareJob({}, {:?})", self.req, self.twin)
    }
}

/// What a token label was asked for: (analysis request, token, hidden layer, task).
pub type LabelKey = (u64, usize, usize, Task);

/// What AST-Probe trees were asked for: (analysis request, hidden layer).
pub type TreeKey = (u64, usize);

/// What a recomputed layer was asked for: (analysis request, attention layer).
pub type LayerKey = (u64, usize);

/// What `App::update` asks the runtime to do.
#[derive(Debug, Clone)]
pub enum Effect {
    /// Parse a text off the UI thread (supersedes any earlier request).
    Parse(ParseJob),
    /// Read a file (the open prompt) with the input limits.
    ReadFile(String),
    /// List the paths that complete a partly typed path (the open prompt's Tab).
    Complete(String),
    /// Check which of these preset names are on local disk.
    CheckPresets(Vec<String>),
    /// Load a model (`None`: the default model) in the worker; with `Some(seed)`, its
    /// random-weight baseline (`--random-weights`); an encoder–decoder with its
    /// [`crate::model::Stack`] (`--stack`, the stack key).
    LoadModel(Option<String>, Option<u64>, crate::model::Stack),
    /// Analyse a parsed snippet in the worker (supersedes any earlier request).
    Analyse(AnalyseJob),
    /// Recompute one layer's code-token attention of an analysis that did not keep its
    /// matrices (a long input), in the worker (supersedes any earlier request).
    Layer(LayerKey, Arc<SnippetAnalysis>),
    /// Train probes in the worker (supersedes any earlier probe request).
    Probe(ProbeJob),
    /// Label a token with a trained probe.
    LabelToken(LabelKey, LabelJob),
    /// Rebuild the snippet's tree with a trained AST-Probe, beside the gold tree.
    AstTree(TreeKey, TreeJob),
    /// Compare the analysis shown with its twin in the worker (supersedes any earlier
    /// comparison request).
    Compare(CompareJob),
    /// Knock an edge set out in the worker (supersedes any earlier knockout request).
    Knockout(KnockoutJob),
    /// Ablate every head in turn in the worker, head by head (supersedes any earlier
    /// ablation request).
    Ablate(AblationJob),
    /// Run the logit lens in the worker (supersedes any earlier lens request).
    Lens(LensJob),
    /// Patch from the twin in the worker (supersedes any earlier patch request).
    Patch(PatchJob),
    /// Write figures (SVG + PNG) and the numbers (JSON) to the export directory.
    Export(super::app::ExportWhat),
    /// Append a step to the tour file at the path.
    AppendStep(std::path::PathBuf, Box<crate::present::tour::Step>),
    /// Give the terminal back to the shell and stop the process group (Ctrl-Z,
    /// SIGTSTP); once continued, set the terminal up again and redraw everything.
    Suspend,
    /// Set the terminal's modes up again and redraw everything (after SIGCONT).
    Resume,
    /// Leave the explorer.
    Quit,
}
