//! The head grid's ablation scores (`7`, `8`, docs/METHODS.md 8): each head of the
//! analysed snippet zeroed in turn, as `codescope ablate` does, and its effect on the
//! identifiers (`7`) or the syntactic tokens (`8`): their mean surprisal change in bits
//! (1 − cos of the last hidden state for an encoder). The worker computes the heads one
//! by one once either score is chosen ([`Effect::Ablate`]); the cells fill in as they
//! arrive and the status line counts them. The result is kept for the snippet, input
//! mode and model it was made for: switching scores back and forth does not run it
//! again, a new snippet or model runs it anew (superseding the one under way).

use super::App;
use crate::analysis::causal::{HeadEffect, Measure};
use crate::analysis::Mode;
use crate::tui::data::Metric;
use crate::tui::msg::{AblationJob, Effect, WorkerMsg};

/// What a result is for: the analysed text, its input mode and the model's run key.
pub type AnalysisKey = (String, Mode, String);

/// The ablation scores' state.
#[derive(Debug, Default)]
pub struct Ablation {
    /// The newest request.
    pub req: u64,
    /// What the newest request is for.
    pub key: Option<AnalysisKey>,
    /// `[layer][head]`: the heads done so far.
    pub grid: Vec<Vec<Option<HeadEffect>>>,
    pub measure: Option<Measure>,
    pub done: usize,
    pub total: usize,
    /// Why it stopped short.
    pub error: Option<String>,
}

impl App {
    /// What the analysis on screen is (`None` while it is not the document's).
    pub(super) fn analysis_key(&self) -> Option<AnalysisKey> {
        if self.stale() {
            return None;
        }
        let p = self.prepared()?;
        Some((p.syntax.source.clone(), p.mode, p.trace.model.run_key()))
    }

    /// While an ablation score is shown: ask for the ablation of the analysis on screen
    /// unless it is there or under way.
    pub(super) fn settle_ablation(&mut self, fx: &mut Vec<Effect>) {
        if !self.view.metric.is_ablation() {
            return;
        }
        let Some(key) = self.analysis_key() else {
            return;
        };
        if self.ablation.key.as_ref() == Some(&key) {
            return;
        }
        let Some(p) = self.prepared().cloned() else {
            return;
        };
        let (layers, heads) = (p.layers(), p.heads());
        self.ablation = Ablation {
            req: self.ablation.req + 1,
            key: Some(key),
            grid: vec![vec![None; heads]; layers],
            measure: None,
            done: 0,
            total: layers * heads,
            error: None,
        };
        self.status.info(format!(
            "ablation: zeroing each of {} heads…",
            layers * heads
        ));
        fx.push(Effect::Ablate(AblationJob {
            req: self.ablation.req,
            syntax: p.syntax.clone(),
            mode: p.mode,
            from: 0,
        }));
    }

    /// Take the worker's ablation reports; `true` when `w` was one.
    pub(super) fn ablation_worker(&mut self, w: &WorkerMsg) -> bool {
        match w {
            WorkerMsg::AblatedHead {
                req,
                layer,
                head,
                effect,
                measure,
                done,
                total,
            } => {
                if *req != self.ablation.req {
                    return true;
                }
                let a = &mut self.ablation;
                if let Some(c) = a.grid.get_mut(*layer).and_then(|r| r.get_mut(*head)) {
                    *c = Some(*effect);
                }
                a.measure = Some(*measure);
                a.done = *done;
                a.total = *total;
                if done < total {
                    self.status
                        .info(format!("ablation: {done}/{total} heads zeroed…"));
                } else {
                    self.status.info(summary(a));
                }
                true
            }
            WorkerMsg::AblationFailed { req, error } => {
                if *req == self.ablation.req {
                    self.ablation.error = Some(error.clone());
                    self.status.error(format!("ablation: {error}"));
                }
                true
            }
            _ => false,
        }
    }

    /// The ablation shown: its result is for the analysis on screen.
    pub fn ablation_shown(&self) -> Option<&Ablation> {
        let key = self.analysis_key()?;
        (self.ablation.key.as_ref() == Some(&key)).then_some(&self.ablation)
    }

    /// The head grid's `[layer][head]` values of metric `m` (the ablation's heads done so
    /// far for its scores; `None` without an analysis).
    pub fn grid_values(&self, m: Metric) -> Option<Vec<Vec<Option<f64>>>> {
        let p = self.prepared()?;
        if !m.is_ablation() {
            return Some(m.values(p, &self.shown.scores));
        }
        let Some(a) = self.ablation_shown() else {
            return Some(vec![vec![None; p.heads()]; p.layers()]);
        };
        Some(
            a.grid
                .iter()
                .map(|r| {
                    r.iter()
                        .map(|e| {
                            e.and_then(|e| match m {
                                Metric::AblationSyn => e.syntactic,
                                _ => e.identifier,
                            })
                        })
                        .collect()
                })
                .collect(),
        )
    }
}

/// What an ablation's numbers are in.
pub fn unit(m: Option<Measure>) -> &'static str {
    match m {
        Some(Measure::Cosine) => "1 − cos",
        Some(Measure::PllBits) => "Δ PLL bits",
        _ => "Δ bits",
    }
}

/// The status line of a finished ablation: the head that matters most to each class.
fn summary(a: &Ablation) -> String {
    let best = |f: fn(&HeadEffect) -> Option<f64>| {
        let mut b: Option<(usize, usize, f64)> = None;
        for (l, row) in a.grid.iter().enumerate() {
            for (h, e) in row.iter().enumerate() {
                if let Some(v) = e.as_ref().and_then(f) {
                    if b.is_none_or(|(_, _, bv)| v > bv) {
                        b = Some((l, h, v));
                    }
                }
            }
        }
        match (b, a.measure) {
            (None, _) => "-".to_string(),
            (Some((l, h, v)), Some(Measure::Cosine)) => format!("L{} H{} ({v:.1e})", l + 1, h + 1),
            (Some((l, h, v)), _) => format!("L{} H{} ({v:+.2})", l + 1, h + 1),
        }
    };
    format!(
        "ablation: {} heads zeroed ({}); identifiers suffer most from {}, syntactic tokens from {}",
        a.total,
        unit(a.measure),
        best(|e| e.identifier),
        best(|e| e.syntactic)
    )
}
