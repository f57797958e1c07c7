//! Surprisal of code tokens (docs/METHODS.md 5): the subword surprisal of a causal model's
//! trace (`model::Surprisal`, bits of `-log2 p(subword | prefix)`) summed over each code
//! token's subwords, with the snippet's perplexity and the scale the views colour by.
//! The one place code-token surprisal is computed: the explorer, `compare` and exports
//! read [`TokenSurprisal`] from [`super::SnippetAnalysis::surprisal`].

use crate::model::{Prediction, Surprisal, Trace};
use crate::syntax::Alignment;

/// Surprisal aggregated from subwords to code tokens.
///
/// A code token's surprisal is `-log2 p(all its subwords | the subwords before them)`,
/// the SUM of its subwords' bits (the chain rule). A subword that overlaps two code
/// tokens (a merged `):`, say) counts for both, so summing code tokens would count it
/// twice: the snippet's perplexity is therefore taken over subwords (scored,
/// non-special), as the model sees it. A token is unscored (`None`) when one of its
/// subwords is (the first subword of an input without BOS) or it has none (beyond a
/// truncated window).
#[derive(Debug, Clone)]
pub struct TokenSurprisal {
    /// Per syntax token: bits.
    pub bits: Vec<Option<f32>>,
    /// Per syntax token: its subwords (trace positions, in order).
    pub subwords: Vec<Vec<usize>>,
    /// Per syntax token: one of its subwords also covers another code token.
    pub shared: Vec<bool>,
    /// Per-subword perplexity `2^mean_bits` and mean bits (scored non-special subwords).
    pub perplexity: Option<f64>,
    pub mean_bits: Option<f64>,
    /// Top of the colour scale: the largest code-token surprisal.
    pub max_bits: f32,
    /// The top decile starts here (the 90th percentile of the scored code tokens).
    pub top_decile: f32,
    /// Top of the colour scale: the 95th percentile of the scored code tokens, so one
    /// long token (a 60-bit docstring) does not wash every other token out; tokens
    /// above it take the scale's top colour (the legend says so).
    pub scale_bits: f32,
    /// The subword-level scores (for the predictions).
    pub lm: Surprisal,
    /// Subword texts as the model saw them.
    pub subword_text: Vec<String>,
}

impl TokenSurprisal {
    /// From a trace's surprisal and its subword → code-token alignment (`None` when the
    /// trace has no surprisal: an encoder, or the LM head was not run).
    pub fn new(trace: &Trace, al: &Alignment) -> Option<Self> {
        let s = trace.surprisal.as_ref()?;
        let n = al.token_to_subwords.len();
        let mut bits = vec![None; n];
        let mut shared = vec![false; n];
        for t in 0..n {
            let subs = &al.token_to_subwords[t];
            if subs.is_empty() {
                continue;
            }
            bits[t] = subs
                .iter()
                .map(|&k| s.bits.get(k).copied().flatten())
                .sum::<Option<f32>>();
            shared[t] = subs
                .iter()
                .any(|&k| al.subword_to_tokens.get(k).is_some_and(|v| v.len() > 1));
        }
        let mut scored: Vec<f32> = bits.iter().flatten().copied().collect();
        scored.sort_by(f32::total_cmp);
        let max_bits = scored.last().copied().unwrap_or(0.0);
        let top_decile = if scored.is_empty() {
            f32::INFINITY
        } else {
            scored[((scored.len() as f64 * 0.9).ceil() as usize).clamp(1, scored.len()) - 1]
        };
        let scale_bits = if scored.is_empty() {
            0.0
        } else {
            scored[((scored.len() as f64 * 0.95).ceil() as usize).clamp(1, scored.len()) - 1]
        };
        Some(TokenSurprisal {
            bits,
            subwords: al.token_to_subwords.clone(),
            shared,
            scale_bits,
            perplexity: s.perplexity(&trace.tokens),
            mean_bits: s.mean_bits(&trace.tokens),
            max_bits,
            top_decile,
            lm: s.clone(),
            subword_text: trace.tokens.iter().map(|t| t.text.clone()).collect(),
        })
    }

    /// What the model expected where syntax token `t` starts: the top predictions at
    /// the position before its first subword (`None` for the first position or an
    /// uncovered token).
    pub fn expected(&self, t: usize) -> Option<&[Prediction]> {
        let first = *self.subwords.get(t)?.first()?;
        let prev = first.checked_sub(1)?;
        self.lm.top_next.get(prev).map(|v| v.as_slice())
    }

    /// The first subword of syntax token `t`: its text and probability.
    pub fn first_subword(&self, t: usize) -> Option<(&str, Option<f32>)> {
        let first = *self.subwords.get(t)?.first()?;
        let p = self
            .lm
            .bits
            .get(first)
            .copied()
            .flatten()
            .map(|b| (-b).exp2());
        Some((self.subword_text.get(first)?.as_str(), p))
    }
}
