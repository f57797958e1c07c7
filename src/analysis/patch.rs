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
//!
//! On an encoder–decoder's decoder stack the hidden states are the decoder's, in read
//! order (`model::encdec`): B's decoder stream at the decoder positions reading the
//! renamed subwords goes into A's pass, whose decoder keeps reading A's encoder output
//! (each partial pass re-runs A's encoder), and every subword is scored, the first too.

use std::fmt::Write as _;

use serde_json::{json, Value};

use super::align_subwords;
use super::compare::TwinSpec;
use crate::error::{Error, Result};
use crate::model::{intervene, lm, ForwardOptions, LoadedModel, Partial, Stack};
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

/// Why a model cannot be patched (`None`: it can): the one line `patch` and the
/// explorer's patch view give.
pub fn unavailable(info: &crate::model::ModelInfo) -> Option<&'static str> {
    if info.stack.is_some_and(|s| s != Stack::Decoder.name()) {
        Some(
            "patching an encoder–decoder runs on its decoder stack (the decoder's residual \
             stream, read by the LM head): use --stack decoder",
        )
    } else if !info.causal {
        Some("patching measures a causal model's surprisal; this model is an encoder")
    } else {
        None
    }
}

fn refuse(model: &LoadedModel) -> Result<()> {
    let Some(reason) = unavailable(&model.info) else {
        return Ok(());
    };
    Err(Error::Input {
        name: "--model".into(),
        reason: reason.into(),
    })
}

/// The scorer of `ids`' subword surprisal: on an encoder–decoder's decoder stack the
/// last row (the decoder's first position) predicts the first subword, as in its trace.
fn scorer(model: &LoadedModel, ids: &[u32]) -> lm::Scorer {
    let s = lm::Scorer::new(ids, model.vocab_size(), 0);
    if model.info.stack == Some(Stack::Decoder.name()) {
        s.wrap_first()
    } else {
        s
    }
}

/// Subword surprisal of `ids` from a (possibly partial) pass with `opts`.
fn bits_of(model: &LoadedModel, ids: &[u32], opts: &ForwardOptions) -> Result<Vec<Option<f32>>> {
    let mut scorer = scorer(model, ids);
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
    let mut scorer = scorer(model, ids);
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

/// A snippet with its twin, encoded and aligned position by position, ready to patch.
struct Ready {
    a: crate::syntax::Syntax,
    twin: Twin,
    ids_a: Vec<u32>,
    ids_b: Vec<u32>,
    al_a: Alignment,
    al_b: Alignment,
    positions: Vec<usize>,
}

/// Parse `source`, make its twin `spec` and align the two: the outer error is the
/// snippet's own (it does not parse, the model fails), the inner one says why its twin
/// cannot be patched (the renaming fails its check, the subwords do not align position
/// by position, nothing is renamed), as the single-file command reports it.
fn prepare(
    model: &LoadedModel,
    source: &str,
    lang: Language,
    spec: &TwinSpec,
) -> Result<std::result::Result<Ready, Error>> {
    refuse(model)?;
    let a = super::parse(source, lang)?;
    let twin = match super::compare::make_twin(&a, spec) {
        Ok(t) => t,
        Err(e @ Error::Syntax(_)) if matches!(spec, TwinSpec::Rename(_)) => return Ok(Err(e)),
        Err(e) => return Err(e),
    };
    let window = model.info.window;
    // PLBART's input ends with the snippet's language code (other tokenizers: the same
    // as `encode`).
    let enc_a = model.encode_code(&a.source, window, Some(lang))?;
    let enc_b = model.encode_code(&twin.b.source, window, Some(lang))?;
    let al_a = align_subwords(&enc_a.tokens, &a.tokens);
    let al_b = align_subwords(&enc_b.tokens, &twin.b.tokens);
    let text = |b: bool, p: usize| {
        let e = if b { &enc_b } else { &enc_a };
        e.tokens.get(p).map(|t| t.text.clone()).unwrap_or_default()
    };
    let positions = match aligned_positions(
        &twin,
        &a.tokens,
        (&enc_a.ids, &al_a),
        (&enc_b.ids, &al_b),
        &text,
    ) {
        Ok(p) => p,
        Err(reason) => {
            return Ok(Err(Error::Input {
                name: spec.label(),
                reason,
            }))
        }
    };
    Ok(Ok(Ready {
        a,
        twin,
        ids_a: enc_a.ids,
        ids_b: enc_b.ids,
        al_a,
        al_b,
        positions,
    }))
}

/// Patch the twin `spec` of `source` into it (causal models and an encoder–decoder's
/// decoder stack; source mode).
pub fn patch(
    model: &LoadedModel,
    source: &str,
    lang: Language,
    spec: &TwinSpec,
) -> Result<PatchResult> {
    run(model, prepare(model, source, lang, spec)??)
}

/// The patch of a prepared snippet at every hidden state, read on its unchanged tokens.
fn run(model: &LoadedModel, r: Ready) -> Result<PatchResult> {
    let Ready {
        a,
        twin,
        ids_a,
        ids_b,
        al_a,
        al_b,
        positions,
    } = r;
    let bits = patch_ids(model, &ids_a, &ids_b, &positions)?;
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

    /// Per code token of A: its change at hidden state `l`, `bits_patched − bits_a`
    /// (`None` for a renamed token or one not measured).
    pub fn token_delta(&self, l: usize) -> Vec<Option<f64>> {
        let mut out = vec![None; self.tokens.len()];
        for m in &self.measured {
            if let (Some(slot), Some(p)) =
                (out.get_mut(m.index), m.patched.get(l).copied().flatten())
            {
                *slot = Some(f64::from(p) - f64::from(m.bits_a));
            }
        }
        out
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

    /// The seed of a `rename:shuffle` twin.
    pub fn seed(&self) -> Option<u64> {
        match &self.twin.kind {
            rewrite::TwinKind::Rename(Rewrite::Shuffle { seed }) => Some(*seed),
            _ => None,
        }
    }

    /// `patch --json`'s `per_layer`: per hidden state the Δ bits and fraction of all
    /// unchanged tokens and per class of [`PATCH_CLASSES`].
    pub fn per_layer_json(&self) -> Vec<Value> {
        (0..self.states())
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
            .collect()
    }

    /// `patch --json` (README, JSON shapes).
    pub fn to_json(&self, model: &crate::model::ModelInfo) -> Value {
        let per_layer = self.per_layer_json();
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

/// Values per hidden state and class of a snippet's patch: `tokens`, `rename_bits`,
/// `delta_bits`, `fraction` (the single-file JSON's `per_layer[l].classes[c]`).
pub const VALUES_PER_CLASS: usize = 4;

/// How one snippet of a corpus patch went.
#[derive(Debug, Clone, PartialEq)]
pub enum SnippetOutcome {
    /// Per hidden state `0..=layers`, per class of [`PATCH_CLASSES`]: the
    /// [`VALUES_PER_CLASS`] values (`None`: no fraction).
    Patched(Vec<Option<f64>>),
    /// Its twin cannot be patched (the one-line reason the single-file command gives).
    Skipped(String),
    /// The snippet itself could not be run (logged).
    Failed,
}

/// One snippet of a corpus patch: its corpus index, origin and outcome.
#[derive(Debug, Clone, PartialEq)]
pub struct PatchSnippet {
    pub index: usize,
    pub origin: String,
    pub outcome: SnippetOutcome,
}

impl PatchResult {
    /// The snippet's values for a corpus run ([`SnippetOutcome::Patched`]).
    pub fn values(&self) -> Vec<Option<f64>> {
        (0..self.states())
            .flat_map(|l| PATCH_CLASSES.iter().map(move |c| (l, c)))
            .flat_map(|(l, c)| {
                let x = self.class(l, c);
                [
                    Some(x.tokens as f64),
                    Some(x.rename_bits),
                    Some(x.delta_bits),
                    x.fraction,
                ]
            })
            .collect()
    }
}

/// The per-snippet half of [`patch_corpus`]: every snippet `i` with `owns(i)`, in corpus
/// order, patched from its twin `spec`. A twin that cannot be patched is skipped with its
/// reason (logged, one line); a snippet that fails otherwise is logged and recorded as
/// failed. Encoders and an encoder–decoder's encoder and cross stacks are refused before
/// any snippet runs.
pub fn patch_snippets(
    model: &LoadedModel,
    snippets: &[crate::corpus::Snippet],
    owns: &dyn Fn(usize) -> bool,
    spec: &TwinSpec,
    progress: &mut dyn FnMut(usize, usize),
) -> Result<Vec<PatchSnippet>> {
    refuse(model)?;
    let own: Vec<usize> = (0..snippets.len()).filter(|&i| owns(i)).collect();
    let mut out = Vec::with_capacity(own.len());
    for (done, &i) in own.iter().enumerate() {
        let sn = &snippets[i];
        let one = || -> Result<SnippetOutcome> {
            match prepare(model, &sn.code, sn.language, spec)? {
                Ok(ready) => Ok(SnippetOutcome::Patched(run(model, ready)?.values())),
                Err(e) => Ok(SnippetOutcome::Skipped(e.to_string())),
            }
        };
        let outcome = match one() {
            Ok(o) => o,
            Err(Error::Cancelled) => return Err(Error::Cancelled),
            Err(e) => {
                tracing::warn!(snippet = %sn.origin, "patch failed: {e}");
                SnippetOutcome::Failed
            }
        };
        if let SnippetOutcome::Skipped(reason) = &outcome {
            tracing::warn!(snippet = %sn.origin, "patch skipped: {reason}");
        }
        out.push(PatchSnippet {
            index: i,
            origin: sn.origin.clone(),
            outcome,
        });
        progress(done + 1, own.len());
    }
    Ok(out)
}

/// One hidden state and class over a corpus.
#[derive(Debug, Clone, PartialEq)]
pub struct CorpusPatchRow {
    pub layer: usize,
    pub class: &'static str,
    /// Snippets with a measured token of the class, and the mean over them of each
    /// snippet's rename effect and patched change (Σ over its tokens of the class), the
    /// latter with its bootstrap 95% interval.
    pub snippets: usize,
    pub rename_bits: f64,
    pub delta: super::causal::Interval,
    /// Snippets with a fraction (`|Σ r| >=` [`MIN_EFFECT_BITS`]) and the mean of their
    /// fractions with its bootstrap 95% interval.
    pub fraction_snippets: usize,
    pub fraction: super::causal::Interval,
}

/// A patch over a corpus: per hidden state and class, the mean over snippets.
pub struct CorpusPatch {
    /// The rewrite every twin was made by, and `--seed` (the shuffle's and the bootstrap's).
    pub twin: String,
    pub seed: u64,
    /// Model layers (hidden states `0..=layers`).
    pub layers: usize,
    /// `[hidden state][class]`, row-major.
    pub rows: Vec<CorpusPatchRow>,
    pub per: Vec<PatchSnippet>,
}

/// [`patch_snippets`] on every snippet, then [`patch_aggregate`].
pub fn patch_corpus(
    model: &LoadedModel,
    snippets: &[crate::corpus::Snippet],
    rewrite: Rewrite,
    seed: u64,
    progress: &mut dyn FnMut(usize, usize),
) -> Result<CorpusPatch> {
    let spec = TwinSpec::Rename(rewrite);
    let per = patch_snippets(model, snippets, &|_| true, &spec, progress)?;
    Ok(patch_aggregate(per, model.info.layers, &spec.label(), seed))
}

/// The aggregate half of [`patch_corpus`], from the snippets in corpus order: per hidden
/// state and class the means over snippets and their bootstrap intervals
/// ([`super::causal::bootstrap_mean`], seeded by `seed`, state, class and quantity).
pub fn patch_aggregate(
    per: Vec<PatchSnippet>,
    layers: usize,
    twin: &str,
    seed: u64,
) -> CorpusPatch {
    let mut rows = Vec::with_capacity((layers + 1) * PATCH_CLASSES.len());
    for l in 0..=layers {
        for (c, class) in PATCH_CLASSES.iter().enumerate() {
            let k = (l * PATCH_CLASSES.len() + c) * VALUES_PER_CLASS;
            let at = |v: &[Option<f64>], j: usize| v.get(k + j).copied().flatten();
            let (mut rename, mut delta, mut frac) = (Vec::new(), Vec::new(), Vec::new());
            for p in &per {
                let SnippetOutcome::Patched(v) = &p.outcome else {
                    continue;
                };
                if at(v, 0).is_some_and(|t| t > 0.0) {
                    rename.extend(at(v, 1));
                    delta.extend(at(v, 2));
                }
                frac.extend(at(v, 3).filter(|f| f.is_finite()));
            }
            let key = seed ^ ((l * PATCH_CLASSES.len() + c) * 2) as u64;
            rows.push(CorpusPatchRow {
                layer: l,
                class,
                snippets: delta.len(),
                rename_bits: if rename.is_empty() {
                    f64::NAN
                } else {
                    rename.iter().sum::<f64>() / rename.len() as f64
                },
                delta: super::causal::bootstrap_mean(&delta, key),
                fraction_snippets: frac.len(),
                fraction: super::causal::bootstrap_mean(&frac, key + 1),
            });
        }
    }
    CorpusPatch {
        twin: twin.into(),
        seed,
        layers,
        rows,
        per,
    }
}

fn count(per: &[PatchSnippet], f: impl Fn(&SnippetOutcome) -> bool) -> usize {
    per.iter().filter(|p| f(&p.outcome)).count()
}

/// A value for the tables: NaN (no snippet) as null.
fn finite(x: f64) -> Option<f64> {
    x.is_finite().then(|| r6(x))
}

impl CorpusPatch {
    pub fn patched(&self) -> usize {
        count(&self.per, |o| matches!(o, SnippetOutcome::Patched(_)))
    }

    pub fn skipped(&self) -> usize {
        count(&self.per, |o| matches!(o, SnippetOutcome::Skipped(_)))
    }

    pub fn failed(&self) -> usize {
        count(&self.per, |o| matches!(o, SnippetOutcome::Failed))
    }

    fn row(&self, l: usize, class: &str) -> &CorpusPatchRow {
        let c = PATCH_CLASSES.iter().position(|x| *x == class).unwrap_or(2);
        &self.rows[l * PATCH_CLASSES.len() + c]
    }

    /// `patch --data ... --json` (README, JSON shapes; `model`: the
    /// [`crate::model::ModelInfo`], or its JSON as a shard recorded it).
    pub fn to_json(&self, model: &impl serde::Serialize, corpus: &str) -> Value {
        let per_layer: Vec<Value> = (0..=self.layers)
            .map(|l| {
                let classes: Vec<Value> = PATCH_CLASSES
                    .iter()
                    .map(|c| {
                        let r = self.row(l, c);
                        json!({
                            "class": c,
                            "snippets": r.snippets,
                            "rename_bits": finite(r.rename_bits),
                            "delta_bits": finite(r.delta.mean),
                            "delta_lo": finite(r.delta.lo),
                            "delta_hi": finite(r.delta.hi),
                            "fraction_snippets": r.fraction_snippets,
                            "fraction": finite(r.fraction.mean),
                            "fraction_lo": finite(r.fraction.lo),
                            "fraction_hi": finite(r.fraction.hi),
                        })
                    })
                    .collect();
                json!({"layer": l, "classes": classes})
            })
            .collect();
        let per_snippet: Vec<Value> = self
            .per
            .iter()
            .map(|p| {
                let (status, reason, layers) = match &p.outcome {
                    SnippetOutcome::Patched(v) => {
                        let layers: Vec<Value> = (0..=self.layers)
                            .map(|l| {
                                let classes: Vec<Value> = PATCH_CLASSES
                                    .iter()
                                    .enumerate()
                                    .map(|(c, name)| {
                                        let k = (l * PATCH_CLASSES.len() + c) * VALUES_PER_CLASS;
                                        let at = |j: usize| v.get(k + j).copied().flatten();
                                        json!({
                                            "class": name,
                                            "tokens": at(0).map_or(0, |t| t as usize),
                                            "rename_bits": at(1).map(r6),
                                            "delta_bits": at(2).map(r6),
                                            "fraction": r6o(at(3)),
                                        })
                                    })
                                    .collect();
                                json!({"layer": l, "classes": classes})
                            })
                            .collect();
                        ("patched", None, Some(layers))
                    }
                    SnippetOutcome::Skipped(r) => ("skipped", Some(r.as_str()), None),
                    SnippetOutcome::Failed => ("failed", None, None),
                };
                json!({
                    "index": p.index,
                    "origin": p.origin,
                    "status": status,
                    "reason": reason,
                    "per_layer": layers,
                })
            })
            .collect();
        json!({
            "command": "patch",
            "model": model,
            "corpus": corpus,
            "twin": self.twin,
            "seed": self.seed,
            "snippets": self.patched(),
            "skipped": self.skipped(),
            "failed": self.failed(),
            "bootstrap_resamples": super::causal::BOOTSTRAP,
            "layers": self.layers + 1,
            "layer_0": "embeddings",
            "min_effect_bits": MIN_EFFECT_BITS,
            "per_layer": per_layer,
            "per_snippet": per_snippet,
        })
    }

    /// `patch --data ... --csv`: `layer,class,snippets,rename_bits,delta_bits,delta_lo,
    /// delta_hi,fraction_snippets,fraction,fraction_lo,fraction_hi` (empty where no
    /// snippet has a value).
    pub fn to_csv(&self) -> String {
        let mut s = String::from(
            "layer,class,snippets,rename_bits,delta_bits,delta_lo,delta_hi,fraction_snippets,fraction,fraction_lo,fraction_hi\n",
        );
        let v = |x: f64| {
            if x.is_finite() {
                format!("{x:.6}")
            } else {
                String::new()
            }
        };
        for r in &self.rows {
            let _ = writeln!(
                s,
                "{},{},{},{},{},{},{},{},{},{},{}",
                r.layer,
                r.class,
                r.snippets,
                v(r.rename_bits),
                v(r.delta.mean),
                v(r.delta.lo),
                v(r.delta.hi),
                r.fraction_snippets,
                v(r.fraction.mean),
                v(r.fraction.lo),
                v(r.fraction.hi)
            );
        }
        s
    }

    /// Text: per hidden state the mean Δ bits and fraction carried with their intervals,
    /// and the identifier and syntactic-token fractions.
    pub fn summary_text(&self, corpus: &str) -> String {
        let mut s = String::new();
        let _ = writeln!(
            s,
            "{corpus}: {} snippets patched from {} ({} skipped: their twin cannot be patched, {} \
             failed); mean over snippets, 95% CI by bootstrap over snippets",
            self.patched(),
            self.twin,
            self.skipped(),
            self.failed()
        );
        let all = self.row(0, "all");
        let _ = writeln!(
            s,
            "rename effect on the unchanged tokens: {:+.3} bits per snippet (B − A); L0 = \
             embeddings, L{} = output",
            all.rename_bits, self.layers
        );
        let _ = writeln!(
            s,
            "{:<6} {:>9} {:>19}  {:>8} {:>19}  {:>8} {:>8}",
            "layer", "Δ bits", "95% CI", "fraction", "95% CI", "id frac", "syn frac"
        );
        let ci = |i: &super::causal::Interval| {
            if i.lo.is_finite() {
                format!("[{:+.3}, {:+.3}]", i.lo, i.hi)
            } else {
                "-".into()
            }
        };
        let num = |x: f64| {
            if x.is_finite() {
                format!("{x:+.3}")
            } else {
                "-".into()
            }
        };
        for l in 0..=self.layers {
            let (a, i, y) = (
                self.row(l, "all"),
                self.row(l, "identifier"),
                self.row(l, "syntactic"),
            );
            let _ = writeln!(
                s,
                "{:<6} {:>9} {:>19}  {:>8} {:>19}  {:>8} {:>8}",
                format!("L{l}"),
                num(a.delta.mean),
                ci(&a.delta),
                num(a.fraction.mean),
                ci(&a.fraction),
                num(i.fraction.mean),
                num(y.fraction.mean)
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
