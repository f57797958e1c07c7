//! The explorer's logit lens (`Y`, docs/METHODS.md 8): every layer's residual stream read
//! through the final norm and the LM head, as `codescope lens` does, for the snippet on
//! screen (causal models only; for others one status line says why). The worker
//! computes it when the view opens and again for a new snippet or model
//! ([`Effect::Lens`]; latest wins). The view is an overlay of layers (rows, 0 = the
//! embeddings) by code tokens (columns): each cell the top-1 guess at that layer for the
//! token's first subword, shaded by the probability of the actual one; the selected
//! token's layer-by-layer top-1, probability and rank; the layer where each identifier
//! is first the top guess.

use std::sync::Arc;

use crossterm::event::{KeyCode, KeyEvent};

use super::ablation::AnalysisKey;
use super::{App, Overlay};
use crate::tui::msg::{Effect, LensData, LensJob, WorkerMsg};

/// The lens view's state.
#[derive(Default)]
pub struct LensView {
    /// The newest request.
    pub req: u64,
    /// What the newest request is for.
    pub key: Option<AnalysisKey>,
    /// Its result, or why there is none.
    pub result: Option<Result<Arc<LensData>, String>>,
    /// The selected code token (an index into the lens's tokens).
    pub token: usize,
    /// The selected layer (0 = the embeddings).
    pub layer: usize,
}

/// Why a model has no logit lens (`None`: it has one). An encoder–decoder's cross stack
/// has the decoder stack's (the same residual stream through the same head).
fn unavailable(info: &crate::model::ModelInfo) -> Option<String> {
    let cross = info.stack == Some(crate::model::Stack::Cross.name());
    (!info.causal && !cross).then(|| {
        format!(
            "logit lens: {} is an encoder; the lens reads a causal model's LM head",
            info.source
        )
    })
}

/// The code tokens the lens has a prediction for (the columns of the view).
pub fn columns(d: &LensData) -> Vec<usize> {
    let last = d.lens.cells.len().saturating_sub(1);
    (0..d.lens.tokens.len())
        .filter(|&t| d.lens.token_cell(last, t).is_some())
        .collect()
}

impl App {
    /// `Y`: open the logit lens (causal models).
    pub(super) fn open_lens(&mut self) -> Vec<Effect> {
        if let Some(why) = self.model.loaded.as_ref().and_then(|(_, i)| unavailable(i)) {
            self.status.warn(why);
            return Vec::new();
        }
        self.overlay = Overlay::Lens;
        self.lens_follow_cursor();
        Vec::new()
    }

    /// While the lens is open: ask for the lens of the analysis on screen unless it is
    /// there or under way; close it (with the reason) for a model without one.
    pub(super) fn settle_lens(&mut self, fx: &mut Vec<Effect>) {
        if !matches!(self.overlay, Overlay::Lens) {
            return;
        }
        if let Some(why) = self.model.loaded.as_ref().and_then(|(_, i)| unavailable(i)) {
            self.overlay = Overlay::None;
            self.status.warn(why);
            return;
        }
        let Some(key) = self.analysis_key() else {
            return;
        };
        if self.lens.key.as_ref() == Some(&key) {
            return;
        }
        let Some(p) = self.prepared().cloned() else {
            return;
        };
        self.lens.req += 1;
        self.lens.key = Some(key);
        self.lens.result = None;
        self.status
            .info("logit lens: reading every layer through the LM head…");
        fx.push(Effect::Lens(LensJob {
            req: self.lens.req,
            syntax: p.syntax.clone(),
            mode: p.mode,
        }));
    }

    /// Take the worker's lens; `true` when `w` was one.
    pub(super) fn lens_worker(&mut self, w: &WorkerMsg) -> bool {
        let WorkerMsg::Lensed { req, result } = w else {
            return false;
        };
        if *req != self.lens.req {
            return true;
        }
        match result {
            Ok(d) => {
                self.lens.result = Some(Ok(d.clone()));
                self.lens.layer = d.lens.cells.len().saturating_sub(1);
                self.lens_follow_cursor();
                self.status.info(self.lens_summary());
            }
            Err(e) => {
                self.status.error(format!("logit lens: {e}"));
                self.lens.result = Some(Err(e.clone()));
            }
        }
        true
    }

    /// The lens of the analysis on screen.
    pub fn lens_shown(&self) -> Option<&Arc<LensData>> {
        let key = self.analysis_key()?;
        if self.lens.key.as_ref() != Some(&key) {
            return None;
        }
        self.lens.result.as_ref()?.as_ref().ok()
    }

    /// The lens's selected token: the explorer's cursor token, or the nearest column
    /// after it.
    fn lens_follow_cursor(&mut self) {
        let Some(d) = self.lens_shown().cloned() else {
            return;
        };
        let start = self
            .doc
            .syntax
            .as_ref()
            .and_then(|s| s.tokens.get(self.view.cursor))
            .map_or(0, |t| t.start);
        let cols = columns(&d);
        self.lens.token = cols
            .iter()
            .copied()
            .find(|&t| d.lens.tokens[t].start >= start)
            .or_else(|| cols.last().copied())
            .unwrap_or(0);
    }

    /// Select lens token `t` and put the explorer's cursor on the same token.
    fn lens_select(&mut self, d: &LensData, t: usize) {
        self.lens.token = t;
        let Some(ct) = d.lens.tokens.get(t) else {
            return;
        };
        if let Some(i) = self.doc.syntax.as_ref().and_then(|s| {
            s.tokens
                .iter()
                .position(|x| x.start == ct.start && x.end == ct.end)
        }) {
            self.view.cursor = i;
        }
    }

    /// A key in the lens view.
    pub(super) fn lens_key(&mut self, k: KeyEvent) -> Vec<Effect> {
        if matches!(k.code, KeyCode::Esc | KeyCode::Char('q' | 'Y')) {
            return Vec::new();
        }
        if k.code == KeyCode::Char('x') {
            self.overlay = Overlay::ExportMenu(crate::export::figure::Kind::Lens);
            return Vec::new();
        }
        self.overlay = Overlay::Lens;
        let Some(d) = self.lens_shown().cloned() else {
            return Vec::new();
        };
        let cols = columns(&d);
        let at = cols.iter().position(|&t| t == self.lens.token);
        let last_layer = d.lens.cells.len().saturating_sub(1);
        let ident = |t: usize| d.lens.tokens[t].coarse == crate::syntax::Coarse::Identifier;
        let pick = match (k.code, at) {
            (KeyCode::Left | KeyCode::Char('h'), Some(i)) => cols.get(i.saturating_sub(1)),
            (KeyCode::Right | KeyCode::Char('l'), Some(i)) => cols.get(i + 1),
            (KeyCode::Home, _) => cols.first(),
            (KeyCode::End, _) => cols.last(),
            (KeyCode::Char('w'), Some(i)) => cols[i + 1..].iter().find(|&&t| ident(t)),
            (KeyCode::Char('b'), Some(i)) => cols[..i].iter().rev().find(|&&t| ident(t)),
            (KeyCode::Up | KeyCode::Char('k'), _) => {
                self.lens.layer = self.lens.layer.saturating_sub(1);
                None
            }
            (KeyCode::Down | KeyCode::Char('j'), _) => {
                self.lens.layer = (self.lens.layer + 1).min(last_layer);
                None
            }
            (KeyCode::PageUp, _) => {
                self.lens.layer = 0;
                None
            }
            (KeyCode::PageDown, _) => {
                self.lens.layer = last_layer;
                None
            }
            _ => None,
        };
        if let Some(&t) = pick {
            self.lens_select(&d, t);
        }
        Vec::new()
    }

    /// The status line of a lens: how many identifiers the output guesses, and the
    /// selected token's layer.
    fn lens_summary(&self) -> String {
        let Some(d) = self.lens_shown() else {
            return String::new();
        };
        let l = &d.lens;
        let ids: Vec<usize> = columns(d)
            .into_iter()
            .filter(|&t| l.tokens[t].coarse == crate::syntax::Coarse::Identifier)
            .collect();
        let decided: Vec<usize> = ids.iter().filter_map(|&t| l.decided_at(t)).collect();
        let mean = (!decided.is_empty())
            .then(|| decided.iter().sum::<usize>() as f64 / decided.len() as f64);
        format!(
            "logit lens: {} layers; {} of {} identifiers become the top guess{}",
            l.cells.len(),
            decided.len(),
            ids.len(),
            mean.map_or(String::new(), |m| format!(", on average at layer {m:.1}"))
        )
    }
}
