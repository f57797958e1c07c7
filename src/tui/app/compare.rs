//! Compare mode (issue #13): the snippet shown (A) against its counterfactual twin (B),
//! a checked identifier renaming or a file the user names.
//!
//! Keys: `c` turns the mode on and off; `C` cycles the twin (`rename:neutral`,
//! `rename:shuffle`, then a prompt for a twin file); `v` cycles what the heatmap shows
//! (A, B mapped onto A's tokens, B − A on a diverging scale).
//!
//! The state here is derived, like the rest of the app: [`App::compare_settle`] (run by
//! `settle` after every update) asks the worker for a comparison whenever the mode is on
//! and the analysis shown (A) has none for the current twin choice, probe and options
//! ([`Effect::Compare`]; latest wins). The worker makes the twin (reported first, so
//! the twin panel fills at once), analyses it with A's options and compares them
//! (`analysis::compare`); nothing analytical happens here beyond picking numbers out.

use crate::tui::keymap::Command;
use std::collections::BTreeMap;
use std::sync::Arc;

use super::{App, Overlay, PromptKind};
use crate::analysis::compare::Comparison;
use crate::analysis::{Graph, HeadScores};
use crate::syntax::rewrite::{Rewrite, Twin};
use crate::tui::editor::LineInput;
use crate::tui::msg::{CompareJob, Effect, TwinSource, WorkerMsg};

/// The twin compare mode asks for (`C` cycles).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum TwinChoice {
    #[default]
    Neutral,
    Shuffle,
    /// A twin read from this file.
    File(String),
}

impl TwinChoice {
    /// As the status bar says it: `rename:neutral`, `rename:shuffle`, `twin:FILE`.
    pub fn label(&self) -> String {
        match self {
            TwinChoice::Neutral => "rename:neutral".into(),
            TwinChoice::Shuffle => "rename:shuffle".into(),
            TwinChoice::File(p) => format!("twin:{p}"),
        }
    }

    /// A tour step's `rewrite`: `rename:neutral`, `rename:shuffle`, or a twin file
    /// (`twin:FILE` or just FILE), relative to `base` (the tour's directory).
    pub fn from_spec(spec: &str, base: &std::path::Path) -> TwinChoice {
        match spec.trim() {
            "rename:neutral" => TwinChoice::Neutral,
            "rename:shuffle" => TwinChoice::Shuffle,
            other => {
                let f = other.strip_prefix("twin:").unwrap_or(other);
                TwinChoice::File(base.join(f).display().to_string())
            }
        }
    }

    pub(super) fn source(&self, seed: u64) -> TwinSource {
        match self {
            TwinChoice::Neutral => TwinSource::Rewrite(Rewrite::Neutral),
            TwinChoice::Shuffle => TwinSource::Rewrite(Rewrite::Shuffle { seed }),
            TwinChoice::File(p) => TwinSource::File(p.clone()),
        }
    }
}

/// What the heatmap shows in compare mode (`v` cycles).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum HeatSide {
    /// The original's attention.
    #[default]
    A,
    /// The twin's, on the original's aligned tokens.
    B,
    /// B − A on aligned tokens (diverging scale).
    Diff,
}

impl HeatSide {
    pub fn label(self) -> &'static str {
        match self {
            HeatSide::A => "A",
            HeatSide::B => "B",
            HeatSide::Diff => "B−A",
        }
    }
}

/// What a comparison was asked for: A's analysis request, the twin, the probe report
/// (by address) and task.
type CompareKey = (u64, TwinSource, Option<usize>);

/// What a heatmap matrix was derived for: (comparison request, layer, head or `None` for
/// the mean, side).
type MatrixKey = (u64, usize, Option<usize>, HeatSide);

/// The state of compare mode.
#[derive(Default)]
pub struct CompareMode {
    pub on: bool,
    pub choice: TwinChoice,
    /// Seed of `rename:shuffle`.
    pub seed: u64,
    pub heat: HeatSide,
    /// The request in flight or answered, and what it was for.
    pub req: u64,
    key: Option<CompareKey>,
    /// The twin of the request (or why it could not be made).
    pub twin: Option<Result<Arc<Twin>, String>>,
    /// The comparison of the request.
    pub data: Option<Arc<Comparison>>,
    /// The twin's head scores at the current threshold: (threshold, scores).
    pub scores_b: Option<(f32, BTreeMap<Graph, HeadScores>)>,
    /// The heatmap matrix for the heat side: (request, layer, head or `None` for the
    /// mean, side) and the `n x n` matrix over A's analysed positions.
    pub matrix: Option<(MatrixKey, Arc<Vec<f32>>)>,
    /// The twin file last asked for (the prompt's default).
    last_file: String,
}

impl App {
    /// `c`, `C`, `v`.
    pub(super) fn compare_command(&mut self, c: Command) -> Vec<Effect> {
        match c {
            Command::Compare => {
                self.compare.on = !self.compare.on;
                if self.compare.on {
                    self.status.info(format!(
                        "compare {} (C: twin · v: heatmap A/B/B−A)",
                        self.compare.choice.label()
                    ));
                } else {
                    self.status.info("compare off");
                    self.patch_off("compare off; the patch view closes with it");
                }
            }
            Command::CompareTwin => {
                let next = match self.compare.choice {
                    TwinChoice::Neutral => Some(TwinChoice::Shuffle),
                    TwinChoice::Shuffle => None,
                    TwinChoice::File(_) => Some(TwinChoice::Neutral),
                };
                match next {
                    Some(ch) => {
                        self.compare.choice = ch;
                        self.compare.on = true;
                        self.status
                            .info(format!("compare {}", self.compare.choice.label()));
                    }
                    None => {
                        self.overlay = Overlay::Prompt(
                            PromptKind::Twin,
                            LineInput::new(&self.compare.last_file),
                        );
                    }
                }
            }
            Command::CompareHeat => {
                if !self.compare.on {
                    self.status
                        .warn("v switches the heatmap in compare mode (c)");
                } else {
                    self.compare.heat = match self.compare.heat {
                        HeatSide::A => HeatSide::B,
                        HeatSide::B => HeatSide::Diff,
                        HeatSide::Diff => HeatSide::A,
                    };
                }
            }
            _ => {}
        }
        Vec::new()
    }

    /// The twin-file prompt was answered.
    pub(super) fn compare_file(&mut self, path: String) {
        if path.is_empty() {
            return;
        }
        self.compare.last_file = path.clone();
        self.compare.choice = TwinChoice::File(path);
        self.compare.on = true;
        self.status
            .info(format!("compare {}", self.compare.choice.label()));
    }

    /// Worker reports about comparisons; `true` when `w` was one.
    pub(super) fn compare_worker(&mut self, w: &WorkerMsg) -> bool {
        match w {
            WorkerMsg::TwinMade { req, result } => {
                if *req == self.compare.req {
                    self.compare.twin = Some(result.clone());
                    if let Err(e) = result {
                        self.status.error(format!("compare: {e}"));
                    }
                }
                true
            }
            WorkerMsg::Compared { req, data } => {
                if *req == self.compare.req {
                    self.compare.data = Some(data.clone());
                    self.compare.scores_b = None;
                    self.compare.matrix = None;
                    self.status.busy = None;
                }
                true
            }
            WorkerMsg::CompareFailed { req, error } => {
                if *req == self.compare.req {
                    self.status.busy = None;
                    self.status.error(format!("compare: {error}"));
                }
                true
            }
            _ => false,
        }
    }

    /// Ask for the comparison the mode needs, and refresh what is derived from it (the
    /// twin's scores at the current threshold, the heatmap matrix of the heat side).
    pub(super) fn compare_settle(&mut self, fx: &mut Vec<Effect>) {
        if !self.compare.on {
            return;
        }
        let Some((a_req, a)) = self.shown.data.clone() else {
            return;
        };
        if self.stale() {
            return;
        }
        // A linear probe's report labels both twins; AST-Probe labels no single token.
        let probe = self
            .probe
            .task
            .task()
            .and_then(|t| Some((self.probe_report()?.clone(), t)));
        let key: CompareKey = (
            a_req,
            self.compare.choice.source(self.compare.seed),
            probe.as_ref().map(|(r, _)| Arc::as_ptr(r) as usize),
        );
        if self.compare.key.as_ref() != Some(&key) {
            self.next_req += 1;
            let req = self.next_req;
            self.compare.req = req;
            self.compare.key = Some(key.clone());
            self.compare.twin = None;
            self.compare.data = None;
            self.compare.scores_b = None;
            self.compare.matrix = None;
            if self.model.loaded.is_some() {
                self.status.busy = Some("comparing with the twin…".into());
            }
            fx.push(Effect::Compare(CompareJob {
                req,
                a,
                twin: key.1,
                opts: crate::analysis::AnalyzeOptions {
                    mode: self.view.mode,
                    threshold: self.threshold(),
                    sweep: false,
                },
                surprisal: self.view.surprisal,
                probe,
            }));
            return;
        }
        let Some(c) = self.compare.data.clone() else {
            return;
        };
        let t = self.threshold();
        if self.compare.scores_b.as_ref().is_none_or(|(x, _)| *x != t) {
            let s = if (c.b.threshold - t).abs() < 1e-6 {
                c.b.relations.clone()
            } else {
                c.b.scores_at(t)
            };
            self.compare.scores_b = Some((t, s));
        }
        let side = self.compare.heat;
        if side == HeatSide::A {
            return;
        }
        let l = self.view.layer.min(c.a.layers().saturating_sub(1));
        let h = (!self.view.mean).then(|| self.view.head.min(c.a.heads().saturating_sub(1)));
        let mkey: MatrixKey = (self.compare.req, l, h, side);
        if self
            .compare
            .matrix
            .as_ref()
            .is_some_and(|(k, _)| *k == mkey)
        {
            return;
        }
        let m = Arc::new(side_matrix(&c, l, h, side));
        self.compare.matrix = Some((mkey, m));
    }

    /// The comparison shown, if it belongs to the analysis shown.
    pub fn comparison(&self) -> Option<&Arc<Comparison>> {
        if !self.compare.on {
            return None;
        }
        let (req, _) = self.shown.data.as_ref()?;
        let c = self.compare.data.as_ref()?;
        (self.compare.key.as_ref()?.0 == *req).then_some(c)
    }

    /// The twin of the current request (made before the comparison is ready).
    pub fn compare_twin(&self) -> Option<&Result<Arc<Twin>, String>> {
        if !self.compare.on {
            return None;
        }
        self.compare.twin.as_ref()
    }

    /// The heatmap matrix for compare mode's B or B−A side (`None`: show A as usual).
    pub fn compare_matrix(&self) -> Option<(Arc<Vec<f32>>, HeatSide)> {
        self.comparison()?;
        let (_, m) = self.compare.matrix.as_ref()?;
        let side = self.compare.heat;
        (side != HeatSide::A).then(|| (m.clone(), side))
    }

    /// The head grid's values in compare mode: B − A of `values_a` (the current metric
    /// of A), with B's values computed the same way.
    pub fn compare_grid(&self, values_a: &[Vec<Option<f64>>]) -> Option<Vec<Vec<Option<f64>>>> {
        let c = self.comparison()?;
        if self.view.metric.is_ablation() {
            return None; // the twin is not ablated
        }
        let (_, scores_b) = self.compare.scores_b.as_ref()?;
        let vb = self.view.metric.values(&c.b, scores_b);
        Some(
            values_a
                .iter()
                .zip(&vb)
                .map(|(ra, rb)| {
                    ra.iter()
                        .zip(rb)
                        .map(|(x, y)| x.zip(*y).map(|(x, y)| y - x))
                        .collect()
                })
                .collect(),
        )
    }

    /// The status bar's compare item: `compare rename:neutral`, with the heat side.
    pub fn compare_status(&self) -> Option<String> {
        self.compare.on.then(|| {
            let mut s = format!("compare {}", self.compare.choice.label());
            if self.compare.heat != HeatSide::A {
                s.push_str(&format!(" {}", self.compare.heat.label()));
            }
            s
        })
    }
}

/// The twin's (or the difference's) matrix over A's analysed positions: rows and columns
/// of A tokens whose partner B analysed; zero elsewhere.
fn side_matrix(c: &Comparison, l: usize, h: Option<usize>, side: HeatSide) -> Vec<f32> {
    let na = c.a.n();
    let nb = c.b.n();
    let head = |x: &crate::analysis::SnippetAnalysis| -> Vec<f32> {
        match h {
            Some(h) => x.token_attention.head(l, h).to_vec(),
            None => x.token_attention.head_mean(l),
        }
    };
    let ma = head(&c.a);
    let mb = head(&c.b);
    let mut out = vec![0.0f32; na * na];
    let l_b = l < c.b.layers();
    if !l_b {
        return out;
    }
    for &(qa, qb, _) in &c.positions {
        for &(ka, kb, _) in &c.positions {
            let b = mb[qb * nb + kb];
            out[qa * na + ka] = match side {
                HeatSide::Diff => b - ma[qa * na + ka],
                _ => b,
            };
        }
    }
    out
}
