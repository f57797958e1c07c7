//! Activation patching from the renamed twin (docs/METHODS.md 4b): how much of the rename
//! sensitivity (compare mode's surprisal change on the unchanged tokens) each layer's
//! residual stream at the renamed tokens carries.
//!
//! A is the snippet, B its twin (a checked renaming or a user's copy,
//! [`super::compare::make_twin`]). The patched positions P are the subwords of A's changed
//! tokens. For each hidden state `l` (0 = the embeddings, `l` = the residual stream leaving
//! layer `l`, the last one the final norm's output: `output_hidden_states` numbering), A is
//! run from A's hidden state `l` with the rows P replaced by B's
//! ([`crate::model::intervene::patch_rows`]) through the layers after it, the final norm
//! and the LM head (a partial pass, [`crate::model::Partial`]), and the unchanged tokens'
//! surprisal is read. Patching needs the two subword sequences to align position by
//! position: [`aligned_positions`] refuses, naming the token, where they do not.

use std::fmt::Write as _;

use serde_json::{json, Value};

use super::align_subwords;
use super::compare::TwinSpec;
use crate::error::{Error, Result};
use crate::model::{intervene, lm, ForwardOptions, LoadedModel, Partial};
use crate::syntax::rewrite::{self, Rewrite, Twin};
use crate::syntax::{Alignment, Coarse, CodeToken, Language};

/// The smallest rename effect (bits, summed over a class's tokens, or one token's) a
/// fraction is reported for: below it the ratio divides rounding noise (the reference
/// agreement is 1e-3 bits per token).
pub const MIN_EFFECT_BITS: f64 = 0.01;

/// Per subword position: the bits of A's ids in A, in B, and patched at each hidden state.
#[derive(Debug, Clone)]
pub struct PatchBits {
    pub a: Vec<Option<f32>>,
    pub b: Vec<Option<f32>>,
    /// `[hidden state 0..=layers][position]`.
    pub patched: Vec<Vec<Option<f32>>>,
}

fn refuse(model: &LoadedModel) -> Result<()> {
    let reason = if model.info.stack.is_some() {
        "patching runs one sequence through a decoder-only model; an encoder–decoder's \
         decoder also reads its encoder, which differs between the twins"
    } else if !model.info.causal {
        "patching measures a causal model's surprisal; this model is an encoder"
    } else {
        return Ok(());
    };
    Err(Error::Input {
        name: "--model".into(),
        reason: reason.into(),
    })
}

/// Subword surprisal of `ids` from a (possibly partial) pass with `opts`.
fn bits_of(model: &LoadedModel, ids: &[u32], opts: &ForwardOptions) -> Result<Vec<Option<f32>>> {
    let mut scorer = lm::Scorer::new(ids, model.vocab_size(), 0);
    model.forward_lm_ids(ids, opts, &mut |start, block| {
        scorer.feed(start, block);
        Ok(())
    })?;
    Ok(scorer.finish(|_| None).bits)
}

/// A pass's hidden states (`[0..=layers][n * hidden]`) and subword bits.
type Base = (Vec<Vec<f32>>, Vec<Option<f32>>);

/// One full pass over `ids` keeping its hidden states and subword bits.
fn base(model: &LoadedModel, ids: &[u32]) -> Result<Base> {
    let discard = |_: usize, _: Vec<f32>| Ok(());
    let opts = ForwardOptions {
        hidden: true,
        on_attention: Some(&discard),
        ..Default::default()
    };
    let mut scorer = lm::Scorer::new(ids, model.vocab_size(), 0);
    let cap = model.forward_lm_ids(ids, &opts, &mut |start, block| {
        scorer.feed(start, block);
        Ok(())
    })?;
    let hidden = cap
        .hidden
        .map(|h| h.layers)
        .filter(|h| h.len() == model.info.layers + 1)
        .ok_or_else(|| Error::Compute("the model returned no hidden states".into()))?;
    Ok((hidden, scorer.finish(|_| None).bits))
}

/// Patch B's residual stream into A's at `positions`, one hidden state at a time: the bits
/// of `ids_a` per position with hidden state `l`'s rows `positions` taken from the pass
/// over `ids_b` (as long as `ids_a`), for `l` in `0..=layers`. No position reproduces A's
/// bits bit for bit; every position at hidden state 0 gives B's pass.
pub fn patch_ids(
    model: &LoadedModel,
    ids_a: &[u32],
    ids_b: &[u32],
    positions: &[usize],
) -> Result<PatchBits> {
    refuse(model)?;
    let n = ids_a.len();
    if ids_b.len() != n || positions.iter().any(|&p| p >= n) {
        return Err(Error::Compute(format!(
            "patching {} positions between sequences of {n} and {} subwords",
            positions.len(),
            ids_b.len()
        )));
    }
    let dim = model.info.hidden_size;
    let (ha, a) = base(model, ids_a)?;
    let (hb, b) = base(model, ids_b)?;
    let layers = model.info.layers;
    let discard = |_: usize, _: Vec<f32>| Ok(());
    let mut patched = Vec::with_capacity(layers + 1);
    for l in 0..=layers {
        let input = intervene::patch_rows(&ha[l], &hb[l], dim, positions);
        let opts = ForwardOptions {
            on_attention: Some(&discard),
            partial: Some(Partial {
                first: l,
                end: layers,
                input: &input,
                logits: true,
            }),
            ..Default::default()
        };
        patched.push(bits_of(model, ids_a, &opts)?);
    }
    Ok(PatchBits { a, b, patched })
}

/// A code token's bits: the sum of its subwords' (`None` when one is unscored or it has
/// none), as `analysis::surprisal` sums them.
fn token_bits(subs: &[usize], bits: &[Option<f32>]) -> Option<f32> {
    if subs.is_empty() {
        return None;
    }
    subs.iter()
        .map(|&k| bits.get(k).copied().flatten())
        .sum::<Option<f32>>()
}

/// The subword positions to patch (the subwords of A's changed tokens), after checking
/// that A's and B's subword sequences align position by position: every token aligned,
/// each changed token as many subwords in B as in A, and the same subwords everywhere
/// else. A refusal names the first token (or subword) that differs.
pub fn aligned_positions(
    twin: &Twin,
    a_tokens: &[CodeToken],
    (ids_a, al_a): (&[u32], &Alignment),
    (ids_b, al_b): (&[u32], &Alignment),
    subword_text: &dyn Fn(bool, usize) -> String,
) -> std::result::Result<Vec<usize>, String> {
    let show = |s: &str| crate::error::printable(s, false).into_owned();
    let b_tokens = &twin.b.tokens;
    let a_to_b = twin.a_to_b(a_tokens.len());
    if let Some(i) = a_to_b.iter().position(Option::is_none) {
        return Err(format!(
            "token {} `{}` of the original has no counterpart in the twin; patching needs \
             every token aligned one to one",
            i + 1,
            show(&a_tokens[i].text)
        ));
    }
    if twin.pairs.len() != b_tokens.len() {
        let b_to_a = twin.b_to_a();
        let j = b_to_a.iter().position(Option::is_none).unwrap_or(0);
        return Err(format!(
            "token {} `{}` of the twin has no counterpart in the original; patching needs \
             every token aligned one to one",
            j + 1,
            show(&b_tokens[j].text)
        ));
    }
    let mut positions = std::collections::BTreeSet::new();
    for (&(i, j), &c) in twin.pairs.iter().zip(&twin.changed) {
        if !c {
            continue;
        }
        let (sa, sb) = (&al_a.token_to_subwords[i], &al_b.token_to_subwords[j]);
        if sa.len() != sb.len() {
            return Err(format!(
                "`{}` → `{}` is {} subword{} in the original and {} in the twin; patching \
                 needs names that tokenize alike (give a TWIN file with such names)",
                show(&a_tokens[i].text),
                show(&b_tokens[j].text),
                sa.len(),
                if sa.len() == 1 { "" } else { "s" },
                sb.len()
            ));
        }
        if sa != sb {
            return Err(format!(
                "`{}` → `{}` sits at subwords {:?} in the original and {:?} in the twin: the \
                 sequences do not align position by position before it",
                show(&a_tokens[i].text),
                show(&b_tokens[j].text),
                sa.iter().map(|p| p + 1).collect::<Vec<_>>(),
                sb.iter().map(|p| p + 1).collect::<Vec<_>>()
            ));
        }
        positions.extend(sa.iter().copied());
    }
    if positions.is_empty() {
        return Err("the twin renames nothing: there is no position to patch".into());
    }
    if ids_a.len() != ids_b.len() {
        return Err(format!(
            "the original is {} subwords and the twin {}; patching needs sequences that \
             align position by position",
            ids_a.len(),
            ids_b.len()
        ));
    }
    if let Some(p) = (0..ids_a.len()).find(|&p| !positions.contains(&p) && ids_a[p] != ids_b[p]) {
        return Err(format!(
            "subword {} differs outside the renamed tokens (`{}` in the original, `{}` in the \
             twin); patching needs the same subwords everywhere else",
            p + 1,
            show(&subword_text(false, p)),
            show(&subword_text(true, p))
        ));
    }
    Ok(positions.into_iter().collect())
}

/// An unchanged code token measured by the patch.
#[derive(Debug, Clone)]
pub struct Measured {
    /// Its index in A and in B.
    pub index: usize,
    pub index_b: usize,
    pub bits_a: f32,
    pub bits_b: f32,
    /// Per hidden state `0..=layers`: its bits with that state patched (`None` where the
    /// patched pass leaves it unscored, which does not happen for a scored token).
    pub patched: Vec<Option<f32>>,
}

/// The patch of one snippet from its twin.
pub struct PatchResult {
    pub twin: Twin,
    pub tokens: Vec<CodeToken>,
    /// Model layers (hidden states `0..=layers`).
    pub layers: usize,
    /// Patched subword positions (0-based).
    pub positions: Vec<usize>,
    /// A's tokens whose subwords are patched (the renamed ones).
    pub patched_tokens: Vec<usize>,
    pub measured: Vec<Measured>,
}

/// Sums over a class of measured tokens at one hidden state.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ClassPatch {
    pub tokens: usize,
    /// `Σ bits_b − bits_a`: the rename effect.
    pub rename_bits: f64,
    /// `Σ bits_patched − bits_a`.
    pub delta_bits: f64,
    /// `delta_bits / rename_bits`, or `None` when `|rename_bits| <` [`MIN_EFFECT_BITS`].
    pub fraction: Option<f64>,
}

/// The fraction of a rename effect `rename` a patched change `delta` carries.
pub fn fraction(delta: f64, rename: f64) -> Option<f64> {
    (rename.abs() >= MIN_EFFECT_BITS).then(|| delta / rename)
}

/// The classes a patch reports: identifiers, syntactic tokens, all.
pub const PATCH_CLASSES: [&str; 3] = ["identifier", "syntactic", "all"];

/// Patch the twin `spec` of `source` into it (causal decoder-only models; source mode).
pub fn patch(
    model: &LoadedModel,
    source: &str,
    lang: Language,
    spec: &TwinSpec,
) -> Result<PatchResult> {
    refuse(model)?;
    let a = super::parse(source, lang)?;
    let twin = super::compare::make_twin(&a, spec)?;
    let window = model.info.window;
    let enc_a = model.encode(&a.source, window)?;
    let enc_b = model.encode(&twin.b.source, window)?;
    let al_a = align_subwords(&enc_a.tokens, &a.tokens);
    let al_b = align_subwords(&enc_b.tokens, &twin.b.tokens);
    let text = |b: bool, p: usize| {
        let e = if b { &enc_b } else { &enc_a };
        e.tokens.get(p).map(|t| t.text.clone()).unwrap_or_default()
    };
    let positions = aligned_positions(
        &twin,
        &a.tokens,
        (&enc_a.ids, &al_a),
        (&enc_b.ids, &al_b),
        &text,
    )
    .map_err(|reason| Error::Input {
        name: spec.label(),
        reason,
    })?;
    let bits = patch_ids(model, &enc_a.ids, &enc_b.ids, &positions)?;
    let in_p = |subs: &[usize]| subs.iter().any(|p| positions.binary_search(p).is_ok());
    let mut patched_tokens = Vec::new();
    let mut measured = Vec::new();
    for (&(i, j), &c) in twin.pairs.iter().zip(&twin.changed) {
        let subs = &al_a.token_to_subwords[i];
        if c {
            patched_tokens.push(i);
            continue;
        }
        // Unchanged and sharing no subword with a changed token (compare's rule).
        if in_p(subs) {
            continue;
        }
        let (Some(x), Some(y)) = (
            token_bits(subs, &bits.a),
            token_bits(&al_b.token_to_subwords[j], &bits.b),
        ) else {
            continue;
        };
        measured.push(Measured {
            index: i,
            index_b: j,
            bits_a: x,
            bits_b: y,
            patched: bits.patched.iter().map(|l| token_bits(subs, l)).collect(),
        });
    }
    Ok(PatchResult {
        twin,
        tokens: a.tokens,
        layers: model.info.layers,
        positions,
        patched_tokens,
        measured,
    })
}

fn coarse_name(c: Coarse) -> &'static str {
    match c {
        Coarse::Syntactic => "syntactic",
        Coarse::Identifier => "identifier",
    }
}

fn r6(x: f64) -> f64 {
    (x * 1e6).round() / 1e6
}

fn r6o(x: Option<f64>) -> Option<f64> {
    x.map(r6)
}

impl PatchResult {
    /// Hidden states patched: `layers + 1`.
    pub fn states(&self) -> usize {
        self.layers + 1
    }

    /// Sums over class `class` of [`PATCH_CLASSES`] at hidden state `l`.
    pub fn class(&self, l: usize, class: &str) -> ClassPatch {
        let (mut tokens, mut rename, mut delta) = (0usize, 0.0f64, 0.0f64);
        for m in &self.measured {
            let t = &self.tokens[m.index];
            let keep = match class {
                "identifier" => t.coarse == Coarse::Identifier,
                "syntactic" => t.coarse == Coarse::Syntactic,
                _ => true,
            };
            let Some(p) = m.patched.get(l).copied().flatten() else {
                continue;
            };
            if keep {
                tokens += 1;
                rename += f64::from(m.bits_b) - f64::from(m.bits_a);
                delta += f64::from(p) - f64::from(m.bits_a);
            }
        }
        ClassPatch {
            tokens,
            rename_bits: rename,
            delta_bits: delta,
            fraction: fraction(delta, rename),
        }
    }

    fn seed(&self) -> Option<u64> {
        match &self.twin.kind {
            rewrite::TwinKind::Rename(Rewrite::Shuffle { seed }) => Some(*seed),
            _ => None,
        }
    }

    /// `patch --json` (README, JSON shapes).
    pub fn to_json(&self, model: &crate::model::ModelInfo) -> Value {
        let per_layer: Vec<Value> = (0..self.states())
            .map(|l| {
                let classes: Vec<Value> = PATCH_CLASSES
                    .iter()
                    .map(|c| {
                        let s = self.class(l, c);
                        json!({
                            "class": c,
                            "tokens": s.tokens,
                            "rename_bits": r6(s.rename_bits),
                            "delta_bits": r6(s.delta_bits),
                            "fraction": r6o(s.fraction),
                        })
                    })
                    .collect();
                let all = self.class(l, "all");
                json!({
                    "layer": l,
                    "delta_bits": r6(all.delta_bits),
                    "fraction": r6o(all.fraction),
                    "classes": classes,
                })
            })
            .collect();
        let tokens: Vec<Value> = self
            .measured
            .iter()
            .map(|m| {
                let t = &self.tokens[m.index];
                let rename = f64::from(m.bits_b) - f64::from(m.bits_a);
                json!({
                    "index": m.index,
                    "index_b": m.index_b,
                    "text": t.text,
                    "category": t.category.name(),
                    "coarse": coarse_name(t.coarse),
                    "span": [t.start, t.end],
                    "bits_a": r6(f64::from(m.bits_a)),
                    "bits_b": r6(f64::from(m.bits_b)),
                    "rename_bits": r6(rename),
                    "patched_bits": m.patched.iter().map(|p| p.map(|x| r6(f64::from(x)))).collect::<Vec<_>>(),
                    "fraction": m.patched.iter().map(|p| r6o(p.and_then(|x| fraction(f64::from(x) - f64::from(m.bits_a), rename)))).collect::<Vec<_>>(),
                })
            })
            .collect();
        let all = self.class(0, "all");
        json!({
            "command": "patch",
            "model": model,
            "twin": self.twin.kind.label(),
            "seed": self.seed(),
            "renamed": self.twin.renamed,
            "layers": self.states(),
            "layer_0": "embeddings",
            "positions": self.positions,
            "patched_tokens": self.patched_tokens,
            "unchanged_tokens": self.measured.len(),
            "rename_bits": r6(all.rename_bits),
            "min_effect_bits": MIN_EFFECT_BITS,
            "per_layer": per_layer,
            "tokens": tokens,
        })
    }

    /// `patch --csv`: `layer,class,tokens,rename_bits,delta_bits,fraction`.
    pub fn to_csv(&self) -> String {
        let mut s = String::from("layer,class,tokens,rename_bits,delta_bits,fraction\n");
        for l in 0..self.states() {
            for c in PATCH_CLASSES {
                let x = self.class(l, c);
                let _ = writeln!(
                    s,
                    "{l},{c},{},{:.6},{:.6},{}",
                    x.tokens,
                    x.rename_bits,
                    x.delta_bits,
                    x.fraction.map(|f| format!("{f:.6}")).unwrap_or_default()
                );
            }
        }
        s
    }

    /// Text: per hidden state the Δ bits and the fraction carried, per class.
    pub fn summary_text(&self, name: &str) -> String {
        let mut s = String::new();
        let all = self.class(0, "all");
        let _ = writeln!(
            s,
            "{name}: patching from {} ({} renamed tokens, {} subword positions), {} unchanged \
             tokens",
            self.twin.kind.label(),
            self.patched_tokens.len(),
            self.positions.len(),
            self.measured.len()
        );
        let _ = writeln!(
            s,
            "rename effect on the unchanged tokens: {:+.3} bits in total (B − A)",
            all.rename_bits
        );
        let _ = writeln!(
            s,
            "residual stream at the renamed positions copied from the twin, one hidden state \
             at a time (L0 = embeddings, L{} = output)",
            self.layers
        );
        let _ = writeln!(
            s,
            "{:<6} {:>10} {:>9}  {:>10} {:>9}  {:>10} {:>9}",
            "layer", "Δ bits", "fraction", "id Δ", "id frac", "syn Δ", "syn frac"
        );
        let frac = |f: Option<f64>| f.map_or("-".to_string(), |f| format!("{f:.3}"));
        for l in 0..self.states() {
            let (a, i, y) = (
                self.class(l, "all"),
                self.class(l, "identifier"),
                self.class(l, "syntactic"),
            );
            let _ = writeln!(
                s,
                "{:<6} {:>+10.3} {:>9}  {:>+10.3} {:>9}  {:>+10.3} {:>9}",
                format!("L{l}"),
                a.delta_bits,
                frac(a.fraction),
                i.delta_bits,
                frac(i.fraction),
                y.delta_bits,
                frac(y.fraction)
            );
        }
        if all.fraction.is_none() {
            let _ = writeln!(
                s,
                "(no fraction: the rename changes the unchanged tokens by less than {MIN_EFFECT_BITS} bits)"
            );
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fraction_needs_a_rename_effect() {
        assert_eq!(fraction(0.5, 2.0), Some(0.25));
        assert_eq!(fraction(-1.0, -2.0), Some(0.5));
        assert_eq!(fraction(1.0, 0.005), None);
        assert_eq!(fraction(0.0, -MIN_EFFECT_BITS), Some(0.0));
    }
}
