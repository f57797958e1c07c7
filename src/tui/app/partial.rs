//! An analysis in progress, shown layer by layer: the worker sends each finished layer
//! of the forward pass ([`WorkerMsg::AnalysedLayer`]: its code-token attention and head
//! scores) before the finished analysis, so a long pass fills the heat map and the head
//! grid as it goes instead of leaving them empty until the last layer.
//!
//! The layers shown are those of the document's own request (`Shown::doc_req`): a
//! superseded request's layers are dropped as they arrive, and the finished analysis of
//! the request replaces them all. While they are shown, the heat map, the head grid and
//! the status bar read them (the other panels keep the analysis shown before, if any);
//! ← → move among the layers that exist, and a key towards a missing one says it is
//! coming.
//!
//! [`WorkerMsg::AnalysedLayer`]: crate::tui::msg::WorkerMsg::AnalysedLayer

use std::sync::Arc;

use super::App;
use crate::tui::data::Metric;
use crate::tui::msg::{PartialFrame, PartialLayer};

/// What the status says of a layer not in yet (cleared when the analysis is done).
pub(super) const COMING: &str = " is coming (";

/// The layers of an analysis in progress received so far.
#[derive(Debug, Clone)]
pub struct Partial {
    /// The request they answer.
    pub req: u64,
    pub frame: Arc<PartialFrame>,
    /// In layer order, from layer 0.
    pub layers: Vec<PartialLayer>,
}

impl Partial {
    /// Layers received so far.
    pub fn have(&self) -> usize {
        self.layers.len()
    }

    /// `[layer][head]` values of the head grid's `metric` over every layer of the model
    /// (`None` for the layers still to come).
    pub fn values(&self, metric: Metric) -> Vec<Vec<Option<f64>>> {
        let heads = self.frame.heads;
        (0..self.frame.layers)
            .map(|l| match self.layers.get(l) {
                None => vec![None; heads],
                Some(pl) => match metric.graph() {
                    Some(g) => match pl.scores.get(&g) {
                        Some(s) => s.iter().map(|x| Some(x.f1)).collect(),
                        None => vec![None; heads],
                    },
                    None => match metric {
                        Metric::SynToId => pl.coarse.iter().map(|m| m.share_at(0, 1)).collect(),
                        Metric::IdToSyn => pl.coarse.iter().map(|m| m.share_at(1, 0)).collect(),
                        // Not part of the analysis: asked for once it is finished.
                        Metric::AblationId | Metric::AblationSyn => vec![None; heads],
                        _ => pl.entropy.iter().map(|&e| Some(e)).collect(),
                    },
                },
            })
            .collect()
    }

    /// `"3 of 18 layers so far"`.
    pub fn so_far(&self) -> String {
        format!("{} of {} layers so far", self.have(), self.frame.layers)
    }
}

impl App {
    /// The layers of the document's analysis in progress, while its finished analysis
    /// has not arrived.
    pub fn partial(&self) -> Option<&Partial> {
        let pt = self.shown.partial.as_ref()?;
        let done = self.shown.data.as_ref().is_some_and(|(r, _)| *r == pt.req);
        (pt.req == self.shown.doc_req && !done).then_some(pt)
    }

    /// One more layer of request `req` arrived.
    pub(super) fn partial_layer(
        &mut self,
        req: u64,
        frame: Arc<PartialFrame>,
        layer: PartialLayer,
    ) {
        if req != self.shown.doc_req || self.shown.data.as_ref().is_some_and(|(r, _)| *r == req) {
            return; // superseded, or already finished
        }
        let pt = match &mut self.shown.partial {
            Some(pt) if pt.req == req => pt,
            slot => slot.insert(Partial {
                req,
                frame,
                layers: Vec::new(),
            }),
        };
        if layer.layer != pt.layers.len() {
            tracing::warn!(
                req,
                layer = layer.layer,
                have = pt.layers.len(),
                "layer out of order"
            );
            return;
        }
        // An input too long to keep every layer's matrices keeps the newest only.
        if !pt.frame.resident {
            for l in &mut pt.layers {
                l.attention = None;
            }
        }
        pt.layers.push(layer);
    }

    /// The heat map's matrix while layers are coming in: the current layer's head (or
    /// head mean), `None` when that layer has not arrived (or its matrices were not
    /// kept).
    pub fn with_partial_matrix<R>(&self, f: impl FnOnce(&[f32], usize) -> R) -> Option<R> {
        let pt = self.partial()?;
        let n = pt.frame.n();
        let l = self.view.layer;
        let a = pt.layers.get(l)?.attention.as_ref()?;
        if self.view.mean {
            let (r, ml, m) = self.shown.mean.as_ref()?;
            (*r == pt.req && *ml == l).then(|| f(m, n))
        } else {
            let h = self.view.head.min(pt.frame.heads.saturating_sub(1));
            let sz = n * n;
            a.get(h * sz..(h + 1) * sz).map(|m| f(m, n))
        }
    }

    /// Head `h` of layer `l` of the layers in, if it has arrived with its matrices.
    pub fn partial_head(&self, l: usize, h: usize) -> Option<&[f32]> {
        let pt = self.partial()?;
        let sz = pt.frame.n() * pt.frame.n();
        pt.layers
            .get(l)?
            .attention
            .as_ref()?
            .get(h * sz..(h + 1) * sz)
    }

    /// While layers are coming in: whether layer `l` is not in yet (then the status says
    /// it is coming and the view stays).
    pub(super) fn layer_coming(&mut self, l: usize) -> bool {
        let Some(pt) = self.partial() else {
            return false;
        };
        if l < pt.have() || l >= pt.frame.layers {
            return false;
        }
        let text = format!("layer {}{COMING}{})", l + 1, pt.so_far());
        self.status.info(text);
        true
    }

    /// The head mean of the current layer while layers are coming in (settled once per
    /// layer).
    pub(super) fn settle_partial_mean(&mut self) {
        if !self.view.mean {
            return;
        }
        let Some(pt) = self.partial() else {
            return;
        };
        let l = self.view.layer;
        if matches!(&self.shown.mean, Some((r, ml, _)) if *r == pt.req && *ml == l) {
            return;
        }
        let Some(a) = pt.layers.get(l).and_then(|pl| pl.attention.as_ref()) else {
            return;
        };
        let mean = crate::analysis::attention::head_mean_of(a, pt.frame.heads, pt.frame.n());
        self.shown.mean = Some((pt.req, l, Arc::new(mean)));
    }
}
