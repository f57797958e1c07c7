//! Code-token hidden states (docs/METHODS.md 1: `H_tok[l,i] = mean_{p in S_i} h[l,p]`), the
//! features every probe reads and the explorer's per-token probe label uses.

use super::attention::aggregate_hidden;
use super::{align_trace, model_input, Mode, ModelInput};
use crate::error::{Error, Result};
use crate::model::{ForwardOptions, Hidden, LoadedModel, Trace};
use crate::syntax::{Alignment, CodeToken, Syntax};

/// Code-token hidden states of one snippet.
#[derive(Debug, Clone)]
pub struct SnippetHidden {
    /// Syntax-token index of each covered code token (tokens with ≥ 1 subword).
    pub tokens: Vec<usize>,
    /// `[layer+1][k * dim + d]` for the k-th covered token; layer 0 = embeddings.
    pub layers: Vec<Vec<f32>>,
}

/// Trace one parsed snippet (source mode, hidden states only) and aggregate its hidden
/// states to code tokens: what the probes train on.
pub fn hidden_states(model: &LoadedModel, syn: &Syntax) -> Result<SnippetHidden> {
    hidden_states_in(model, syn, Mode::Source)
}

/// [`hidden_states`] of the text `mode` feeds (paper mode: the study's space-joined
/// tokens; tokens it does not feed get no hidden states).
pub fn hidden_states_in(model: &LoadedModel, syn: &Syntax, mode: Mode) -> Result<SnippetHidden> {
    let ModelInput { text, tokens, .. } = model_input(syn, mode)?;
    // Probes read no attention: each layer's is dropped as soon as it is computed.
    let discard = |_: usize, _: Vec<f32>| Ok(());
    // PLBART: the encoder input ends with the snippet's own language code.
    let enc = model.encode_code(&text, model.info.window, Some(syn.language))?;
    let trace = model.trace_encoded(
        &text,
        enc,
        &ForwardOptions {
            hidden: true,
            on_attention: Some(&discard),
            ..Default::default()
        },
        false,
    )?;
    token_hidden(&trace, &tokens)
}

/// [`hidden_states`] of the snippet's code tokens joined by single spaces: the input of
/// AST-Probe's model (its `match_tokenized_to_untokenized_roberta` tokenizes each code
/// token, all but the first with a leading space; `probe --probe ast --protocol paper`).
pub fn hidden_states_joined(model: &LoadedModel, syn: &Syntax) -> Result<SnippetHidden> {
    let (text, tokens) = joined_tokens(&syn.tokens);
    let discard = |_: usize, _: Vec<f32>| Ok(());
    // PLBART: the encoder input ends with the snippet's own language code.
    let enc = model.encode_code(&text, model.info.window, Some(syn.language))?;
    let trace = model.trace_encoded(
        &text,
        enc,
        &ForwardOptions {
            hidden: true,
            on_attention: Some(&discard),
            ..Default::default()
        },
        false,
    )?;
    token_hidden(&trace, &tokens)
}

/// The tokens' texts joined by single spaces, and the tokens with their spans in it.
pub fn joined_tokens(tokens: &[CodeToken]) -> (String, Vec<CodeToken>) {
    let mut text = String::new();
    let mut out = tokens.to_vec();
    for (k, t) in out.iter_mut().enumerate() {
        if k > 0 {
            text.push(' ');
        }
        t.start = text.len();
        text.push_str(&tokens[k].text);
        t.end = text.len();
    }
    (text, out)
}

/// Aggregate a trace's hidden states (traced with `hidden: true`) to the code tokens
/// `tokens` (spans in the trace's text), as [`hidden_states`] does.
pub fn token_hidden(trace: &Trace, tokens: &[CodeToken]) -> Result<SnippetHidden> {
    let hidden = trace
        .hidden
        .as_ref()
        .ok_or_else(|| Error::Compute("the model returned no hidden states".into()))?;
    Ok(aligned_hidden(hidden, &align_trace(trace, tokens)))
}

/// Code-token hidden states from subword hidden states and their alignment.
pub fn aligned_hidden(hidden: &Hidden, alignment: &Alignment) -> SnippetHidden {
    let covered: Vec<usize> = (0..alignment.token_to_subwords.len())
        .filter(|&t| {
            alignment.token_to_subwords[t]
                .iter()
                .any(|&p| p < hidden.len)
        })
        .collect();
    let layers = aggregate_hidden(hidden, alignment, &covered);
    SnippetHidden {
        tokens: covered,
        layers,
    }
}
