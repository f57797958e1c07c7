//! A trained probe's label for one code token of the snippet on screen (the explorer's
//! probe panel): the classifier kept from a `p` run, applied to the snippet's own
//! code-token hidden state at one layer (mean over subwords, exactly as in training),
//! beside the gold label from the same labelling code the corpus uses.

use std::sync::Arc;

use super::{ProbeReport, Task};
use crate::analysis::SnippetAnalysis;

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

/// What to label: token `token` (syntax index) of `analysis` at hidden layer `layer`
/// (0 = embeddings) with the `task` probe of `report`.
#[derive(Clone)]
pub struct LabelJob {
    pub report: Arc<ProbeReport>,
    pub analysis: Arc<SnippetAnalysis>,
    pub token: usize,
    pub layer: usize,
    pub task: Task,
}

impl std::fmt::Debug for LabelJob {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "LabelJob(token {}, layer {}, {})",
            self.token,
            self.layer,
            self.task.name()
        )
    }
}

/// The probe's label for the job's token, or why there is none (`None`: nothing to say,
/// e.g. the token index is out of range).
pub fn label_token(job: &LabelJob) -> Option<TokenProbe> {
    if job.task.is_pair() {
        return Some(TokenProbe::PairTask);
    }
    let a = &job.analysis;
    let Some(feat) = a.features.as_ref() else {
        return Some(TokenProbe::NoFeatures);
    };
    let syn = &a.syntax;
    let token = syn.tokens.get(job.token)?.text.clone();
    let Some(k) = feat.tokens.iter().position(|&t| t == job.token) else {
        return Some(TokenProbe::NotCovered { token });
    };
    let Some(probe) = job
        .report
        .probes
        .iter()
        .find(|p| p.task == job.task && p.layer == job.layer)
    else {
        return Some(TokenProbe::NoProbe);
    };
    let dim = feat
        .layers
        .get(job.layer)
        .map_or(0, |l| l.len() / feat.tokens.len().max(1));
    let x = feat.layers.get(job.layer)?.get(k * dim..(k + 1) * dim)?;
    let classes = job.task.classes();
    let gold =
        super::dataset::label_snippet(job.task, syn, &feat.tokens, 0, 0, &mut super::Rng::new(0))
            .into_iter()
            .find(|e| e.a == k)?
            .label;
    let predicted = probe.classifier.predict(x)?;
    Some(TokenProbe::Label {
        token,
        layer: job.layer,
        predicted: classes.get(predicted)?.clone(),
        gold: classes.get(gold)?.clone(),
    })
}
