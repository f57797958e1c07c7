//! The explorer's knockout mode (`K`, docs/METHODS.md 4b): each press knocks the next edge
//! set out — syn-id, id-syn, syn-syn, id-id, the AST motif, the data flow, then off — in
//! every layer and head of the analysed snippet, with a 20-draw matched control, in the
//! worker ([`Effect::Knockout`]; latest wins). While a result for the text on screen is
//! there, the code panel colours each token by its change (Δ bits, or 1 − cos for an
//! encoder) on a diverging scale, its title names the edge set, and the status line gives
//! the identifier and syntactic-token means beside the control's. An edit re-runs it.

use std::sync::Arc;

use super::App;
use crate::analysis::causal::{EdgeSet, KnockoutResult, Measure};
use crate::tui::msg::{Effect, KnockoutJob, WorkerMsg};

/// The edge sets `K` steps through, in order.
pub const CYCLE: [&str; 6] = ["syn-id", "id-syn", "syn-syn", "id-id", "ast_motif", "dfg"];

/// The knockout mode's state.
#[derive(Debug, Default)]
pub struct KnockoutMode {
    /// Index into [`CYCLE`] of the set knocked out; `None`: off.
    pub set: Option<usize>,
    /// The newest request.
    pub req: u64,
    /// The analysis request (`Shown::doc_req`) the newest request was made for.
    pub for_doc: u64,
    /// The result of the newest request, for the text it was run on.
    pub result: Option<(String, Arc<KnockoutResult>)>,
}

impl App {
    /// `K`: knock the next edge set out, or turn the mode off after the last.
    pub(super) fn cycle_knockout(&mut self) -> Vec<Effect> {
        let next = match self.knockout.set {
            None => Some(0),
            Some(i) if i + 1 < CYCLE.len() => Some(i + 1),
            Some(_) => None,
        };
        self.knockout.set = next;
        self.knockout.result = None;
        match next {
            None => {
                self.knockout.req += 1; // drops a result still on its way
                self.status.info("knockout off");
                Vec::new()
            }
            Some(_) => self.request_knockout().into_iter().collect(),
        }
    }

    /// A knockout request for the analysis on screen (none without one).
    pub(super) fn request_knockout(&mut self) -> Option<Effect> {
        let set = CYCLE[self.knockout.set?];
        let Some(p) = self.prepared().cloned() else {
            self.status
                .warn(format!("knockout {set}: waiting for the analysis"));
            return None;
        };
        let edges = EdgeSet::parse(set).ok()?;
        self.knockout.req += 1;
        self.knockout.for_doc = self.shown.doc_req;
        self.status
            .info(format!("knockout {set}: running it and 20 control draws…"));
        Some(Effect::Knockout(KnockoutJob {
            req: self.knockout.req,
            syntax: p.syntax.clone(),
            mode: p.mode,
            edges,
        }))
    }

    /// Take the worker's knockout results; re-run the mode on a new analysis. Returns
    /// the effects to run (after the message itself was applied by the caller).
    pub(super) fn knockout_worker(&mut self, w: &WorkerMsg) -> (bool, bool) {
        match w {
            WorkerMsg::Knocked { req, result } => {
                if *req == self.knockout.req && self.knockout.set.is_some() {
                    match result {
                        Ok(r) => {
                            let text = self
                                .prepared()
                                .map(|p| p.syntax.source.clone())
                                .unwrap_or_default();
                            self.status.info(summary(r));
                            self.knockout.result = Some((text, r.clone()));
                        }
                        Err(e) => self.status.error(format!("knockout: {e}")),
                    }
                }
                (true, false)
            }
            WorkerMsg::Analysed { req, .. } => (
                false,
                self.knockout.set.is_some() && *req == self.shown.doc_req,
            ),
            _ => (false, false),
        }
    }

    /// After a new analysis is shown: knock the same set out of it.
    pub(super) fn knockout_again(&mut self) -> Vec<Effect> {
        self.knockout.result = None;
        self.request_knockout().into_iter().collect()
    }

    /// The knockout to draw: the mode is on and its result is for the text on screen.
    pub fn knockout_shown(&self) -> Option<&KnockoutResult> {
        let (text, r) = self.knockout.result.as_ref()?;
        let p = self.prepared()?;
        (self.knockout.set.is_some()
            && *text == p.syntax.source
            && r.tokens.len() == p.tokens.len())
        .then_some(r.as_ref())
    }
}

/// The status line of a finished knockout.
fn summary(r: &KnockoutResult) -> String {
    let f = |v: Option<f64>| match (v, r.measure) {
        (None, _) => "-".to_string(),
        (Some(v), Measure::Bits | Measure::PllBits) => format!("{v:+.2}"),
        (Some(v), Measure::Cosine) => format!("{v:.1e}"),
    };
    let ctl = |c: usize| r.control[c].map_or("-".to_string(), |i| f(Some(i.mean)));
    let unit = match r.measure {
        Measure::Bits => "bits",
        Measure::PllBits => "PLL bits",
        Measure::Cosine => "1-cos",
    };
    format!(
        "knockout {} ({} pairs): identifiers {} {unit} (control {}), syntactic {} (control {})",
        r.edges,
        r.token_pairs,
        f(r.summary[0].1),
        ctl(0),
        f(r.summary[1].1),
        ctl(1)
    )
}
