//! Counterfactual twins compared (docs/METHODS.md 5): a snippet A and its twin B (a checked
//! identifier renaming, or a user's edited copy; `syntax::rewrite`) each go through THE
//! pipeline ([`super::run`]), and the two analyses are compared on aligned code tokens
//! (subword counts differ between twins; the code-token level is where they meet).
//!
//! What is compared:
//! - per head and gold graph: F1 in A and in B (each against its own gold graph, at the
//!   same threshold) and the difference B − A;
//! - per head: the syn→id and id→syn attention shares in A and B (the coarse category
//!   matrices of `categories.rs`);
//! - per head, how far the attention moved: the mean total-variation distance between
//!   the rows of aligned tokens. Each row is normalised to the mass it puts on code
//!   tokens (as the entropy and the shares are), and the two rows are laid on the union
//!   of both snippets' tokens (aligned tokens share a column; a token without a partner
//!   is a column of its own, zero on the other side): `TV = ½ Σ |a − b|`, in [0, 1];
//! - causal models: per-token surprisal (bits) in A and in B and the difference, and the
//!   **rename sensitivity** — the mean bits per token in B minus in A over the tokens
//!   whose text did not change (aligned, scored in both, and sharing no subword with a
//!   changed token, so a merged `(x` does not count the renamed `x`'s bits). A model that
//!   recalls the original verbatim is more surprised by the unchanged tokens once the
//!   names change;
//! - with a trained token-level probe: its prediction per aligned token and layer in A and
//!   B, and the agreement.
//!
//! Output forms: [`to_json`] (documented in the README), [`to_csv`], [`summary`].

use std::fmt::Write as _;
use std::sync::Arc;

use serde_json::{json, Map, Value};

use super::{AnalyzeOptions, Graph, RunOptions, SnippetAnalysis};
use crate::error::{Error, Result};
use crate::model::LoadedModel;
use crate::syntax::rewrite::{self, Rewrite, Twin};
use crate::syntax::Syntax;

/// Which twin to make.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TwinSpec {
    /// A checked renaming.
    Rename(Rewrite),
    /// The user's text (a second file or the explorer's edited snippet), with a label.
    Text {
        /// Where it came from (file name, "edited").
        label: String,
        /// The twin's source.
        text: String,
    },
}

impl TwinSpec {
    /// `rename:neutral`, `rename:shuffle` or `twin:<label>`.
    pub fn label(&self) -> String {
        match self {
            TwinSpec::Rename(r) => r.name().to_string(),
            TwinSpec::Text { label, .. } => format!("twin:{label}"),
        }
    }
}

/// Make the twin of `a`; a renaming that fails its check is an error naming what changed.
pub fn make_twin(a: &Syntax, spec: &TwinSpec) -> Result<Twin> {
    let r = match spec {
        TwinSpec::Rename(rw) => rewrite::rename(a, *rw),
        TwinSpec::Text { label, text } => {
            let b = super::parse(text, a.language)?;
            rewrite::user_twin(a, b, label)
        }
    };
    r.map_err(|e| Error::Syntax(format!("{}: {e}", spec.label())))
}

/// Surprisal of both twins on aligned tokens.
#[derive(Debug, Clone)]
pub struct SurprisalDelta {
    /// Per aligned pair scored in both: `(i in A, j in B, bits A, bits B)`.
    pub pairs: Vec<(usize, usize, f32, f32)>,
    /// Per pair of `pairs`: the token's text is unchanged (and no subword reaches into a
    /// changed token): counted in the rename sensitivity.
    pub unchanged: Vec<bool>,
    /// Mean bits per unchanged token in A and in B.
    pub unchanged_bits_a: Option<f64>,
    pub unchanged_bits_b: Option<f64>,
    /// `unchanged_bits_b - unchanged_bits_a`.
    pub rename_sensitivity: Option<f64>,
}

/// A trained probe's predictions on both twins at one layer.
#[derive(Debug, Clone)]
pub struct ProbeAgreement {
    /// Hidden layer (0 = embeddings).
    pub layer: usize,
    /// Per aligned pair covered in both: `(i, j, label A, label B)`.
    pub labels: Vec<(usize, usize, String, String)>,
    /// Fraction of `labels` where A and B agree.
    pub agreement: f64,
}

/// Two analyses and how they differ.
pub struct Comparison {
    pub twin: Arc<Twin>,
    pub a: Arc<SnippetAnalysis>,
    pub b: Arc<SnippetAnalysis>,
    /// Aligned pairs analysed in both: `(pos in A, pos in B, text changed)`.
    pub positions: Vec<(usize, usize, bool)>,
    /// `[layer][head]` mean total-variation distance of aligned rows.
    pub attention_shift: Vec<Vec<f64>>,
    pub surprisal: Option<SurprisalDelta>,
    /// With a trained token probe (`probe::agreement`): its task's name, per layer.
    pub probe: Option<(&'static str, Vec<ProbeAgreement>)>,
}

/// Analyse A and its twin with the same options and compare them. Causal models run the
/// LM head when `ro.lm` is set (surprisal).
pub fn compare(
    model: &LoadedModel,
    a: Arc<Syntax>,
    twin: Arc<Twin>,
    opts: &AnalyzeOptions,
    ro: &RunOptions,
) -> Result<Comparison> {
    let sa = super::run(model, a, opts, ro)?;
    let sb = super::run(model, Arc::new(twin.b.clone()), opts, ro)?;
    Ok(from_analyses(Arc::new(sa), Arc::new(sb), twin))
}

/// The comparison of two finished analyses of a snippet (`a`) and its twin (`b`).
pub fn from_analyses(
    a: Arc<SnippetAnalysis>,
    b: Arc<SnippetAnalysis>,
    twin: Arc<Twin>,
) -> Comparison {
    let positions: Vec<(usize, usize, bool)> = twin
        .pairs
        .iter()
        .zip(&twin.changed)
        .filter_map(|(&(i, j), &c)| {
            let pa = a.pos.get(i).copied().flatten()?;
            let pb = b.pos.get(j).copied().flatten()?;
            Some((pa, pb, c))
        })
        .collect();
    let attention_shift = attention_shift(&a, &b, &positions);
    let surprisal = surprisal_delta(&a, &b, &twin);
    Comparison {
        twin,
        a,
        b,
        positions,
        attention_shift,
        surprisal,
        probe: None,
    }
}

/// Mean TV distance of aligned rows, per head (see the module doc).
fn attention_shift(
    a: &SnippetAnalysis,
    b: &SnippetAnalysis,
    pos: &[(usize, usize, bool)],
) -> Vec<Vec<f64>> {
    use rayon::prelude::*;
    let (ta, tb) = (&a.token_attention, &b.token_attention);
    let layers = ta.layers.min(tb.layers);
    let heads = ta.heads.min(tb.heads);
    let (na, nb) = (ta.n(), tb.n());
    let mut in_a = vec![false; na];
    let mut in_b = vec![false; nb];
    for &(pa, pb, _) in pos {
        in_a[pa] = true;
        in_b[pb] = true;
    }
    (0..layers)
        .into_par_iter()
        .map(|l| {
            (0..heads)
                .map(|h| {
                    let (ma, mb) = (ta.head(l, h), tb.head(l, h));
                    let mut total = 0.0f64;
                    let mut rows = 0usize;
                    for &(qa, qb, _) in pos {
                        let ra = &ma[qa * na..(qa + 1) * na];
                        let rb = &mb[qb * nb..(qb + 1) * nb];
                        let (sa, sb): (f64, f64) = (
                            ra.iter().map(|&x| x as f64).sum(),
                            rb.iter().map(|&x| x as f64).sum(),
                        );
                        if sa <= 0.0 || sb <= 0.0 {
                            continue;
                        }
                        let mut d = 0.0f64;
                        for &(ka, kb, _) in pos {
                            d += (ra[ka] as f64 / sa - rb[kb] as f64 / sb).abs();
                        }
                        for (k, &x) in ra.iter().enumerate() {
                            if !in_a[k] {
                                d += x as f64 / sa;
                            }
                        }
                        for (k, &x) in rb.iter().enumerate() {
                            if !in_b[k] {
                                d += x as f64 / sb;
                            }
                        }
                        total += 0.5 * d;
                        rows += 1;
                    }
                    if rows == 0 {
                        0.0
                    } else {
                        total / rows as f64
                    }
                })
                .collect()
        })
        .collect()
}

/// Tokens that share a subword with a changed (or unaligned) token of the same snippet.
fn touches_change(
    s: &super::TokenSurprisal,
    al: &crate::syntax::Alignment,
    changed: &[bool],
) -> Vec<bool> {
    let n = s.subwords.len();
    let mut out = vec![false; n];
    for (t, subs) in s.subwords.iter().enumerate() {
        out[t] = subs.iter().any(|&k| {
            al.subword_to_tokens
                .get(k)
                .is_some_and(|ts| ts.iter().any(|&u| changed.get(u).copied().unwrap_or(true)))
        });
    }
    out
}

/// Surprisal of both twins on aligned tokens and the rename sensitivity (causal models
/// traced with the LM head; `None` otherwise).
pub fn surprisal_delta(
    a: &SnippetAnalysis,
    b: &SnippetAnalysis,
    twin: &Twin,
) -> Option<SurprisalDelta> {
    let (sa, sb) = (a.surprisal.as_ref()?, b.surprisal.as_ref()?);
    // "Changed" per token of each side: its text changed, or it has no partner.
    let mut ch_a = vec![true; a.syntax.tokens.len()];
    let mut ch_b = vec![true; b.syntax.tokens.len()];
    for (&(i, j), &c) in twin.pairs.iter().zip(&twin.changed) {
        if i < ch_a.len() {
            ch_a[i] = c;
        }
        if j < ch_b.len() {
            ch_b[j] = c;
        }
    }
    let ta = touches_change(sa, &a.alignment, &ch_a);
    let tb = touches_change(sb, &b.alignment, &ch_b);
    let mut pairs = Vec::new();
    let mut unchanged = Vec::new();
    let (mut ua, mut ub, mut n) = (0.0f64, 0.0f64, 0usize);
    for (&(i, j), &c) in twin.pairs.iter().zip(&twin.changed) {
        let (Some(Some(x)), Some(Some(y))) = (sa.bits.get(i), sb.bits.get(j)) else {
            continue;
        };
        let u = !c && !ta[i] && !tb[j];
        if u {
            ua += *x as f64;
            ub += *y as f64;
            n += 1;
        }
        pairs.push((i, j, *x, *y));
        unchanged.push(u);
    }
    let (ma, mb) = if n > 0 {
        (Some(ua / n as f64), Some(ub / n as f64))
    } else {
        (None, None)
    };
    Some(SurprisalDelta {
        pairs,
        unchanged,
        unchanged_bits_a: ma,
        unchanged_bits_b: mb,
        rename_sensitivity: ma.zip(mb).map(|(x, y)| y - x),
    })
}

/// `[layer][head]` syn→id (`q = 0, k = 1`) or id→syn (`q = 1, k = 0`) shares.
fn shares(a: &SnippetAnalysis, q: usize, k: usize) -> Vec<Vec<Option<f64>>> {
    a.coarse
        .iter()
        .map(|row| row.iter().map(|m| m.share[q * m.k + k]).collect())
        .collect()
}

fn diff(x: &[Vec<f64>], y: &[Vec<f64>]) -> Vec<Vec<f64>> {
    x.iter()
        .zip(y)
        .map(|(a, b)| a.iter().zip(b).map(|(p, q)| q - p).collect())
        .collect()
}

/// F1 per head of graph `g` in A and B.
pub fn f1_pair(c: &Comparison, g: Graph) -> (Vec<Vec<f64>>, Vec<Vec<f64>>) {
    (
        c.a.relations[&g].metric(|s| s.f1),
        c.b.relations[&g].metric(|s| s.f1),
    )
}

fn side_json(a: &SnippetAnalysis) -> Value {
    json!({
        "text": a.trace.text,
        "tokens": a.syntax.tokens,
        "analysed_tokens": a.token_attention.tokens,
        "truncated": a.trace.truncated,
        "parse_errors": a.syntax.errors.len(),
    })
}

/// The `compare --json` document (shape documented in the README).
pub fn to_json(c: &Comparison) -> Value {
    let (a, b, t) = (&c.a, &c.b, &c.twin);
    let withheld = a.head_scores_withheld();
    let mut relations = Map::new();
    for g in Graph::ALL.into_iter().filter(|_| withheld.is_none()) {
        let (fa, fb) = f1_pair(c, g);
        relations.insert(
            g.name().into(),
            json!({
                "edges_a": a.relations[&g].edges,
                "edges_b": b.relations[&g].edges,
                "f1_a": fa,
                "f1_b": fb,
                "f1_diff": diff(&fa, &fb),
            }),
        );
    }
    let seed = match &t.kind {
        rewrite::TwinKind::Rename(Rewrite::Shuffle { seed }) => Some(*seed),
        _ => None,
    };
    let mut doc = json!({
        "model": a.trace.model,
        "rewrite": t.kind.label(),
        "seed": seed,
        "mode": a.mode.name(),
        "threshold": super::report::short_threshold(a.threshold),
        "language": a.syntax.language.name(),
        "a": side_json(a),
        "b": side_json(b),
        "alignment": t.pairs,
        "changed": t.pairs.iter().zip(&t.changed).filter(|(_, c)| **c).map(|(p, _)| *p).collect::<Vec<_>>(),
        "renamed": t.renamed,
        "relations": if withheld.is_some() { Value::Null } else { Value::Object(relations) },
        "head_scores_withheld": withheld,
        "shares": {
            "a": {"syn_to_id": shares(a, 0, 1), "id_to_syn": shares(a, 1, 0)},
            "b": {"syn_to_id": shares(b, 0, 1), "id_to_syn": shares(b, 1, 0)},
        },
        "category_attention": {
            "a": super::report::category_json(a),
            "b": super::report::category_json(b),
        },
        "attention_shift": c.attention_shift,
    });
    if let Some(s) = &c.surprisal {
        let bits = |x: &SnippetAnalysis| {
            x.surprisal
                .as_ref()
                .map(|s| s.bits.clone())
                .unwrap_or_default()
        };
        doc["surprisal"] = json!({
            "a": bits(a),
            "b": bits(b),
            "diff": s.pairs.iter().map(|&(i, j, x, y)| json!([i, j, y - x])).collect::<Vec<_>>(),
            "unchanged": s.pairs.iter().zip(&s.unchanged).filter(|(_, u)| **u).map(|(p, _)| [p.0, p.1]).collect::<Vec<_>>(),
            "unchanged_bits_a": s.unchanged_bits_a,
            "unchanged_bits_b": s.unchanged_bits_b,
            "rename_sensitivity": s.rename_sensitivity,
            "perplexity_a": a.surprisal.as_ref().and_then(|s| s.perplexity),
            "perplexity_b": b.surprisal.as_ref().and_then(|s| s.perplexity),
        });
    }
    if let Some((task, layers)) = &c.probe {
        doc["probe"] = json!({
            "task": task,
            "layers": layers.iter().map(|p| json!({
                "layer": p.layer,
                "agreement": p.agreement,
                "labels": p.labels.iter().map(|(i, j, x, y)| json!([i, j, x, y])).collect::<Vec<_>>(),
            })).collect::<Vec<_>>(),
        });
    }
    doc
}

/// Long-format CSV `table,key,layer,head,metric,value` (layer/head 1-based; tokens keyed
/// `i:j` with an empty layer and head).
pub fn to_csv(c: &Comparison) -> String {
    let mut out = String::from("table,key,layer,head,metric,value\n");
    let grid = |out: &mut String, table: &str, key: &str, metric: &str, v: &[Vec<f64>]| {
        for (l, row) in v.iter().enumerate() {
            for (h, x) in row.iter().enumerate() {
                let _ = writeln!(out, "{table},{key},{},{},{metric},{x:.6}", l + 1, h + 1);
            }
        }
    };
    // The cross stack has no head scores (see [`SnippetAnalysis::head_scores_withheld`]):
    // no `relations` rows.
    let withheld = c.a.head_scores_withheld();
    for g in Graph::ALL.into_iter().filter(|_| withheld.is_none()) {
        let (fa, fb) = f1_pair(c, g);
        grid(&mut out, "relations", g.name(), "f1_a", &fa);
        grid(&mut out, "relations", g.name(), "f1_b", &fb);
        grid(&mut out, "relations", g.name(), "f1_diff", &diff(&fa, &fb));
    }
    for (side, s) in [("a", &c.a), ("b", &c.b)] {
        for (key, q, k) in [("syn_to_id", 0, 1), ("id_to_syn", 1, 0)] {
            let v: Vec<Vec<f64>> = shares(s, q, k)
                .into_iter()
                .map(|r| r.into_iter().map(|x| x.unwrap_or(f64::NAN)).collect())
                .collect();
            grid(&mut out, "shares", key, &format!("share_{side}"), &v);
        }
    }
    grid(
        &mut out,
        "attention_shift",
        "tv",
        "mean_tv",
        &c.attention_shift,
    );
    if let Some(s) = &c.surprisal {
        for &(i, j, x, y) in &s.pairs {
            for (m, v) in [("bits_a", x), ("bits_b", y), ("diff", y - x)] {
                let _ = writeln!(out, "surprisal,{i}:{j},,,{m},{v:.6}");
            }
        }
        for (m, v) in [
            ("unchanged_bits_a", s.unchanged_bits_a),
            ("unchanged_bits_b", s.unchanged_bits_b),
            ("rename_sensitivity", s.rename_sensitivity),
        ] {
            let _ = writeln!(
                out,
                "snippet,{m},,,{m},{}",
                v.map(|x| format!("{x:.6}")).unwrap_or_default()
            );
        }
    }
    out
}

/// The readable summary: what was renamed, the heads that changed most, the tokens whose
/// surprisal changed most, the rename sensitivity.
pub fn summary(name: &str, c: &Comparison) -> String {
    let (a, b, t) = (&c.a, &c.b, &c.twin);
    let mut s = String::new();
    let m = &a.trace.model;
    let _ = writeln!(
        s,
        "model    {} ({} layers x {} heads{})\ninput    {name} ({} code tokens) vs {} ({} code tokens)",
        m.source,
        m.layers,
        m.heads,
        m.weights_note(),
        a.syntax.tokens.len(),
        t.kind.label(),
        t.b.tokens.len()
    );
    let n_changed = t.changed.iter().filter(|c| **c).count();
    let _ = writeln!(
        s,
        "aligned  {} token pairs, {} with a changed text, {} of A and {} of B unaligned",
        t.pairs.len(),
        n_changed,
        a.syntax.tokens.len() - t.pairs.len(),
        t.b.tokens.len() - t.pairs.len()
    );
    if !t.renamed.is_empty() {
        let list: Vec<String> = t.renamed.iter().map(|(k, v)| format!("{k}→{v}")).collect();
        let _ = writeln!(s, "renamed  {}", list.join(", "));
    }
    let (da, db) = (a.syntax.graphs.dfg.len(), t.b.graphs.dfg.len());
    if a.syntax.graphs.dfg != t.b.graphs.dfg {
        let _ = writeln!(
            s,
            "note     the study's dfg links tokens by their text, and the twin's differs ({da} vs {db} edges): its F1 change mixes the edit with a change of gold graph (dfg_refined does not depend on names)"
        );
    }
    let layers = c.attention_shift.len();
    let heads = c.attention_shift.first().map_or(0, |r| r.len());
    let mut cells: Vec<(usize, usize)> = (0..layers)
        .flat_map(|l| (0..heads).map(move |h| (l, h)))
        .collect();
    let _ = writeln!(
        s,
        "\nheads whose attention moved most (mean total-variation distance of aligned rows)"
    );
    cells.sort_by(|x, y| c.attention_shift[y.0][y.1].total_cmp(&c.attention_shift[x.0][x.1]));
    for &(l, h) in cells.iter().take(5) {
        let _ = writeln!(s, "  L{}H{}  {:.3}", l + 1, h + 1, c.attention_shift[l][h]);
    }
    if let Some(why) = a.head_scores_withheld() {
        let _ = writeln!(s, "\nnotice   {why}");
    }
    let scored: &[Graph] = match a.head_scores_withheld() {
        Some(_) => &[],
        None => &[Graph::AstMotif, Graph::Dfg],
    };
    for &g in scored {
        let (fa, fb) = f1_pair(c, g);
        let d = diff(&fa, &fb);
        cells.sort_by(|x, y| d[y.0][y.1].abs().total_cmp(&d[x.0][x.1].abs()));
        let _ = writeln!(
            s,
            "\n{} F1 at t = {:.2}: heads that changed most (A → B)",
            g.name(),
            a.threshold
        );
        for &(l, h) in cells.iter().take(5) {
            let _ = writeln!(
                s,
                "  L{}H{}  {:.3} → {:.3}  ({:+.3})",
                l + 1,
                h + 1,
                fa[l][h],
                fb[l][h],
                d[l][h]
            );
        }
        let best = |v: &[Vec<f64>]| v.iter().flatten().copied().fold(0.0f64, f64::max);
        let _ = writeln!(s, "  best head: {:.3} → {:.3}", best(&fa), best(&fb));
    }
    if let Some(sd) = &c.surprisal {
        let mut order: Vec<usize> = (0..sd.pairs.len()).collect();
        order.sort_by(|&x, &y| {
            let d = |k: usize| (sd.pairs[k].3 - sd.pairs[k].2).abs();
            d(y).total_cmp(&d(x))
        });
        let _ = writeln!(s, "\ntokens whose surprisal changed most (bits A → B)");
        for &k in order.iter().take(8) {
            let (i, j, x, y) = sd.pairs[k];
            let _ = writeln!(
                s,
                "  {:>7.2} → {:>7.2}  ({:+.2})  {:?} → {:?}{}",
                x,
                y,
                y - x,
                a.syntax.tokens[i].text,
                b.syntax.tokens[j].text,
                if sd.unchanged[k] { "" } else { "  (changed)" }
            );
        }
        match (
            sd.unchanged_bits_a,
            sd.unchanged_bits_b,
            sd.rename_sensitivity,
        ) {
            (Some(x), Some(y), Some(r)) => {
                let _ = writeln!(
                    s,
                    "\nrename sensitivity {r:+.3} bits/token ({x:.3} → {y:.3} over {} unchanged tokens)",
                    sd.unchanged.iter().filter(|u| **u).count()
                );
            }
            _ => {
                let _ = writeln!(
                    s,
                    "\nrename sensitivity n/a (no unchanged token scored in both)"
                );
            }
        }
    }
    if let Some((task, layers)) = &c.probe {
        let _ = writeln!(
            s,
            "\nprobe {} agreement per layer (A vs B predictions)",
            task
        );
        for p in layers {
            let _ = writeln!(
                s,
                "  layer {:>2}: {:.3} over {} tokens",
                p.layer,
                p.agreement,
                p.labels.len()
            );
        }
    }
    s
}

/// Outcome of rewriting every snippet of a corpus (no model): how many twins passed the
/// structural check, and why the others failed.
#[derive(Debug, Default)]
pub struct CheckReport {
    pub snippets: usize,
    /// Passed the check.
    pub kept: usize,
    /// Passed, but nothing in them was the snippet's own name.
    pub unchanged: usize,
    /// The original did not parse (refused by the syntax layer).
    pub unparsable: usize,
    /// `(origin, reason)` of every failed check.
    pub failures: Vec<(String, String)>,
    /// Passed, but the study's text-based `dfg` differs between the twins (not part of
    /// the check: see `syntax::rewrite::check`).
    pub study_dfg_changed: usize,
    /// Identifier occurrences renamed in total.
    pub renamed_occurrences: usize,
    pub identifier_tokens: usize,
}

/// Rewrite every snippet and check each twin.
pub fn check_corpus(snippets: &[crate::corpus::Snippet], rw: Rewrite) -> CheckReport {
    use rayon::prelude::*;
    // Per snippet: `None` when the original was refused, else the renamed and identifier
    // token counts or the check's failure.
    type Outcome<'a> = (
        Option<std::result::Result<(usize, usize, bool), String>>,
        &'a str,
    );
    let outcomes: Vec<Outcome> = snippets
        .par_iter()
        .map(|s| {
            let Ok(a) = crate::syntax::parse(&s.code, s.language) else {
                return (None, s.origin.as_str());
            };
            let ids = a.identifier_indices().len();
            let r = rewrite::rename(&a, rw)
                .map(|t| {
                    let dfg_changed = t.b.graphs.dfg != a.graphs.dfg;
                    (t.changed.iter().filter(|c| **c).count(), ids, dfg_changed)
                })
                .map_err(|e| e.to_string());
            (Some(r), s.origin.as_str())
        })
        .collect();
    let mut rep = CheckReport {
        snippets: snippets.len(),
        ..CheckReport::default()
    };
    for (o, origin) in outcomes {
        match o {
            None => rep.unparsable += 1,
            Some(Ok((changed, ids, dfg_changed))) => {
                rep.kept += 1;
                rep.study_dfg_changed += usize::from(dfg_changed);
                rep.renamed_occurrences += changed;
                rep.identifier_tokens += ids;
                if changed == 0 {
                    rep.unchanged += 1;
                }
            }
            Some(Err(e)) => rep.failures.push((origin.to_string(), e)),
        }
    }
    rep
}

/// Readable form of a [`CheckReport`].
pub fn check_table(r: &CheckReport, rw: Rewrite, corpus: &str) -> String {
    let checked = r.snippets - r.unparsable;
    let mut s = format!(
        "{} on {corpus}: {} snippets, {} refused by the parser\n  tree shape, tokens and gold graphs kept: {} of {} ({:.1}%)\n  of those, the study's text-based dfg differs in: {}\n  twins with nothing renamed: {}\n  renamed tokens: {} of {} identifier tokens ({:.1}%)\n",
        rw.name(),
        r.snippets,
        r.unparsable,
        r.kept,
        checked,
        100.0 * r.kept as f64 / checked.max(1) as f64,
        r.study_dfg_changed,
        r.unchanged,
        r.renamed_occurrences,
        r.identifier_tokens,
        100.0 * r.renamed_occurrences as f64 / r.identifier_tokens.max(1) as f64,
    );
    if !r.failures.is_empty() {
        let _ = writeln!(s, "  failures:");
        for (o, e) in &r.failures {
            let _ = writeln!(s, "    {o}: {e}");
        }
    }
    s
}
