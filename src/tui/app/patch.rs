//! The explorer's patch view (`A`, docs/METHODS.md 4b): while compare mode's twin is a
//! renaming (or a file twin that aligns position by position), the residual stream at
//! the renamed tokens is copied from the twin into the snippet one hidden state at a
//! time, as `codescope patch` does, in the worker ([`Effect::Patch`]; latest wins). The
//! panel under the code (in the twin's place) lists per hidden state (L0 = the
//! embeddings) the Δ bits on the unchanged tokens and the fraction of the rename effect
//! carried, for identifiers and syntactic tokens; the code is coloured by the selected
//! state's change per token on a diverging scale; ← → pick the state. An edit or another
//! twin runs it again; compare mode off (or `A` again) closes it. Encoders and
//! encoder–decoders get `patch`'s one-line reason, a twin that does not align its
//! refusal.

use std::sync::Arc;

use super::ablation::AnalysisKey;
use super::App;
use crate::analysis::patch::{self, PatchResult};
use crate::tui::msg::{Effect, PatchJob, TwinSource, WorkerMsg};

/// What a patch was asked for: the analysis on screen and the twin.
pub type PatchKey = (AnalysisKey, TwinSource);

/// The patch view's state.
#[derive(Default)]
pub struct PatchView {
    /// The view is on (`A`).
    pub on: bool,
    /// The newest request.
    pub req: u64,
    /// What the newest request is for.
    pub key: Option<PatchKey>,
    /// Its result, or why there is none.
    pub result: Option<Result<Arc<PatchResult>, String>>,
    /// The selected hidden state (0 = the embeddings, `layers` = the output).
    pub layer: usize,
}

/// The status line prefix of the view.
fn label(app: &App) -> String {
    format!("patch {}", app.compare.choice.label())
}

impl App {
    /// Why the loaded model has no patch view (`None`: it has one, or none is loaded).
    fn patch_unavailable(&self) -> Option<String> {
        let (_, info) = self.model.loaded.as_ref()?;
        patch::unavailable(info).map(|why| format!("patch: {why}"))
    }

    /// `A`: open the patch view (turning compare mode on), or close it.
    pub(super) fn toggle_patch(&mut self) -> Vec<Effect> {
        if self.patch.on {
            self.patch_off("patch view off");
            return Vec::new();
        }
        if let Some(why) = self.patch_unavailable() {
            self.status.warn(why);
            return Vec::new();
        }
        self.patch.on = true;
        self.compare.on = true;
        Vec::new()
    }

    /// Close the view, dropping a result still on its way.
    pub(super) fn patch_off(&mut self, why: &str) {
        if !self.patch.on {
            return;
        }
        self.patch.on = false;
        self.patch.req += 1;
        self.patch.key = None;
        self.patch.result = None;
        self.status.info(why);
    }

    /// The patch the view needs now: the analysis on screen against the current twin.
    fn patch_key_now(&self) -> Option<PatchKey> {
        Some((
            self.analysis_key()?,
            self.compare.choice.source(self.compare.seed),
        ))
    }

    /// While the view is on: ask for the patch of the analysis on screen against the
    /// current twin unless it is there or under way; close it (with the reason) for a
    /// model without one.
    pub(super) fn settle_patch(&mut self, fx: &mut Vec<Effect>) {
        if !self.patch.on || !self.compare.on {
            return;
        }
        if let Some(why) = self.patch_unavailable() {
            self.patch.on = false;
            self.patch.req += 1;
            self.status.warn(why);
            return;
        }
        let Some(key) = self.patch_key_now() else {
            return;
        };
        if self.patch.key.as_ref() == Some(&key) {
            return;
        }
        let Some(p) = self.prepared().cloned() else {
            return;
        };
        self.patch.req += 1;
        self.patch.result = None;
        self.status.info(format!(
            "{}: copying the twin's residual stream at the renamed tokens, one hidden state at a time…",
            label(self)
        ));
        fx.push(Effect::Patch(PatchJob {
            req: self.patch.req,
            syntax: p.syntax.clone(),
            twin: key.1.clone(),
        }));
        self.patch.key = Some(key);
    }

    /// Take the worker's patch; `true` when `w` was one.
    pub(super) fn patch_worker(&mut self, w: &WorkerMsg) -> bool {
        let WorkerMsg::Patched { req, result } = w else {
            return false;
        };
        if *req != self.patch.req || !self.patch.on {
            return true;
        }
        match result {
            Ok(r) => {
                self.patch.result = Some(Ok(r.clone()));
                self.patch.layer = (self.view.layer + 1).min(r.layers);
                self.status.info(self.patch_summary());
            }
            Err(e) => {
                self.status.error(format!("{}: {e}", label(self)));
                self.patch.result = Some(Err(e.clone()));
            }
        }
        true
    }

    /// The patch of the analysis on screen against the current twin, while the view is
    /// on.
    pub fn patch_shown(&self) -> Option<&Arc<PatchResult>> {
        if !self.patch.on || !self.compare.on {
            return None;
        }
        if self.patch.key.as_ref()? != &self.patch_key_now()? {
            return None;
        }
        self.patch.result.as_ref()?.as_ref().ok()
    }

    /// Why the view shows no patch: the model's reason, or the twin's refusal.
    pub fn patch_problem(&self) -> Option<String> {
        if let Some(why) = self.patch_unavailable() {
            return Some(why);
        }
        match self.patch.result.as_ref()? {
            Err(e) => Some(format!("{}: {e}", label(self))),
            Ok(_) => None,
        }
    }

    /// The selected hidden state of the patch shown.
    pub fn patch_layer(&self) -> Option<usize> {
        self.patch_shown().map(|r| self.patch.layer.min(r.layers))
    }

    /// ← → while a patch is shown: the previous / next hidden state (the heatmap's layer
    /// follows: the layer whose output it is). `false` when not handled.
    pub(super) fn patch_step(&mut self, d: isize) -> bool {
        let Some(r) = self.patch_shown().cloned() else {
            return false;
        };
        let l = self.patch.layer.min(r.layers) as isize + d;
        self.patch.layer = l.clamp(0, r.layers as isize) as usize;
        self.view.layer = self.patch.layer.saturating_sub(1);
        self.status.info(self.patch_summary());
        true
    }

    /// The status line of a patch: the rename effect and the selected state's share.
    fn patch_summary(&self) -> String {
        let Some(r) = self.patch_shown() else {
            return String::new();
        };
        let l = self.patch.layer.min(r.layers);
        let all = r.class(0, "all");
        let frac = |f: Option<f64>| f.map_or("-".to_string(), |f| format!("{f:.3}"));
        let (i, s) = (r.class(l, "identifier"), r.class(l, "syntactic"));
        let state = match l {
            0 => "L0 (embeddings)".to_string(),
            l if l == r.layers => format!("L{l} (output)"),
            l => format!("L{l}"),
        };
        format!(
            "{}: rename effect {:+.3} bits on {} unchanged tokens · {state} carries identifiers {} ({:+.3} bits), syntactic {} ({:+.3} bits) · ← → hidden state",
            label(self),
            all.rename_bits,
            r.measured.len(),
            frac(i.fraction),
            i.delta_bits,
            frac(s.fraction),
            s.delta_bits
        )
    }
}
