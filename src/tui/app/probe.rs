//! The probe panel's state machine: which task it shows (a linear-probe task or
//! AST-Probe), the reports trained this session, the job under way, the last failure,
//! the cursor token's label and, for AST-Probe, the snippet's rebuilt and gold trees.

use std::collections::HashMap;
use std::sync::Arc;

use crate::probe::astprobe::view::SnippetTrees;
use crate::probe::label::TokenProbe;
use crate::probe::{ProbeReport, ProbeResult, Task};
use crate::syntax::Language;
use crate::tui::msg::{LabelKey, ProbeJob, TreeKey, WorkerMsg};

/// What the probe panel shows: a linear probe of one task, or AST-Probe (which rebuilds
/// the whole tree and has no task). `P` cycles through [`PanelTask::ALL`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PanelTask {
    Task(Task),
    Ast,
}

impl PanelTask {
    /// Every choice in `P` order: the tasks in report order, then AST-Probe.
    pub const ALL: [PanelTask; 8] = [
        PanelTask::Task(Task::Category),
        PanelTask::Task(Task::Depth),
        PanelTask::Task(Task::Distance),
        PanelTask::Task(Task::DistanceId),
        PanelTask::Task(Task::Siblings),
        PanelTask::Task(Task::SiblingsId),
        PanelTask::Task(Task::Dfg),
        PanelTask::Ast,
    ];

    /// The task's name, `ast` for AST-Probe (the `task` of its report rows).
    pub fn name(self) -> &'static str {
        match self {
            PanelTask::Task(t) => t.name(),
            PanelTask::Ast => "ast",
        }
    }

    /// The linear-probe task, if this is one.
    pub fn task(self) -> Option<Task> {
        match self {
            PanelTask::Task(t) => Some(t),
            PanelTask::Ast => None,
        }
    }

    /// The choice named `name` (a task name or `ast`).
    pub fn from_name(name: &str) -> Option<PanelTask> {
        PanelTask::ALL.into_iter().find(|t| t.name() == name)
    }
}

impl From<Task> for PanelTask {
    fn from(t: Task) -> Self {
        PanelTask::Task(t)
    }
}

impl PartialEq<Task> for PanelTask {
    fn eq(&self, other: &Task) -> bool {
        *self == PanelTask::Task(*other)
    }
}

/// What probe results are for: (model source, corpus language, task).
pub type ProbeKey = (String, Language, PanelTask);

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

/// The probe panel.
#[derive(Debug, Clone)]
pub struct ProbePanel {
    /// The probe task the panel shows (`P` cycles).
    pub task: PanelTask,
    /// Finished probe reports (`p` asks for one; kept for the session).
    pub results: HashMap<ProbeKey, Arc<ProbeReport>>,
    /// The probe job under way.
    pub run: Option<ProbeRun>,
    /// The last probe failure, for the key it was for.
    pub error: Option<(ProbeKey, String)>,
    /// The cursor token's label, for the key it was asked for (`None` inside: nothing
    /// to show).
    pub label: Option<(LabelKey, Option<TokenProbe>)>,
    /// AST-Probe: the snippet's rebuilt and gold trees at a layer, for the key they were
    /// asked for (`Err`: why there are none).
    pub tree: Option<(TreeKey, Result<Arc<SnippetTrees>, String>)>,
}

impl Default for ProbePanel {
    fn default() -> Self {
        ProbePanel {
            task: PanelTask::Task(Task::Category),
            results: HashMap::new(),
            run: None,
            error: None,
            label: None,
            tree: None,
        }
    }
}

impl ProbePanel {
    /// A probe job for `key` unless its results are cached or being computed.
    pub(super) fn request(&mut self, key: ProbeKey, req: impl FnOnce() -> u64) -> Option<ProbeJob> {
        if self.results.contains_key(&key) || self.run.as_ref().is_some_and(|r| r.key == key) {
            return None;
        }
        let req = req();
        self.error = None;
        self.run = Some(ProbeRun {
            req,
            key: key.clone(),
            progress: "queued…".into(),
            partial: Vec::new(),
        });
        Some(ProbeJob {
            req,
            model: key.0,
            lang: key.1,
            task: key.2,
        })
    }

    /// Switch to the next task; whether probes were asked for on `was`'s model and
    /// language (so the new task's should be requested too).
    pub(super) fn cycle(&mut self, was: Option<ProbeKey>) -> bool {
        let all = PanelTask::ALL;
        let i = all.iter().position(|&t| t == self.task).unwrap_or(0);
        self.task = all[(i + 1) % all.len()];
        was.is_some_and(|(m, l, _)| {
            self.run
                .as_ref()
                .is_some_and(|r| r.key.0 == m && r.key.1 == l)
                || self.results.keys().any(|k| k.0 == m && k.1 == l)
        })
    }

    /// Apply a probe report from the worker (`false`: not a probe message).
    pub(super) fn worker(&mut self, w: &WorkerMsg) -> bool {
        match w {
            WorkerMsg::ProbeProgress { req, text, result } => {
                if let Some(run) = self.run.as_mut().filter(|r| r.req == *req) {
                    run.progress = text.clone();
                    run.partial.extend(result.clone());
                }
            }
            WorkerMsg::Probed { req, report } => {
                if let Some(run) = self.run.take_if(|r| r.req == *req) {
                    self.results.insert(run.key, report.clone());
                }
            }
            WorkerMsg::ProbeFailed { req, error } => {
                if let Some(run) = self.run.take_if(|r| r.req == *req) {
                    self.error = Some((run.key, error.clone()));
                }
            }
            _ => return false,
        }
        true
    }
}
