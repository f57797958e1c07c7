//! `reproduce --rewrite`: every snippet of the corpus against its renamed twin.
//!
//! Per snippet (a [`TwinRecord`], appended to `OUT/twins.jsonl` in snippet order so a
//! resumed run continues where the checkpoint says): the F1 of every graph, layer and
//! head at the table threshold for the original (A) and the twin (B), and for causal
//! models the rename sensitivity (`compare.rs`). A twin that fails its structural check
//! is recorded with the reason and left out of the pair statistics, never compared.
//!
//! Tables (`twins_layers.csv`, `twins.csv`, `twins_summary.json`, and the printed table):
//! - per graph and layer: the best head by macro-averaged F1 in A and in B (each picked on
//!   its own, as the study picks the best head) and the difference of their F1, with a
//!   paired bootstrap 95% interval: snippets are resampled with replacement (the same
//!   resample for A and B, so the pairing is kept), the best heads picked anew in each
//!   resample, and the 2.5th and 97.5th percentiles of the difference taken over
//!   [`BOOTSTRAP`] resamples (seeded);
//! - causal models: the distribution of the rename sensitivity (mean, quartiles) and the
//!   snippets ranked by it, the ones most surprised by their own renamed twin first (the
//!   ones that look memorised).

use std::fmt::Write as _;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::{AnalyzeOptions, Graph, RunOptions};
use crate::corpus::Snippet;
use crate::error::{Error, Result};
use crate::model::LoadedModel;
use crate::rng::Rng;
use crate::syntax::rewrite::{self, Rewrite};

/// Bootstrap resamples of the interval.
pub const BOOTSTRAP: usize = 1000;

/// The pair records' file in a run's output directory.
pub const RECORDS: &str = "twins.jsonl";

/// How a run names its rewrite (checkpoints, tables): `rename:neutral`,
/// `rename:shuffle (seed N)`.
pub fn rewrite_label(rw: Rewrite) -> String {
    match rw {
        Rewrite::Shuffle { seed } => format!("{} (seed {seed})", rw.name()),
        Rewrite::Neutral => rw.name().to_string(),
    }
}

/// One snippet's pair scores.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TwinRecord {
    /// Index of the snippet in the corpus.
    pub index: usize,
    pub origin: String,
    /// Why the pair was not scored (the twin failed its check), if it was not.
    pub error: Option<String>,
    /// Code tokens whose text changed.
    pub renamed_tokens: usize,
    /// `[graph][layer][head]` F1 at the table threshold, [`Graph::ALL`] order.
    pub f1_a: Vec<Vec<Vec<f32>>>,
    pub f1_b: Vec<Vec<Vec<f32>>>,
    pub unchanged_tokens: usize,
    pub unchanged_bits_a: Option<f64>,
    pub unchanged_bits_b: Option<f64>,
    pub rename_sensitivity: Option<f64>,
}

impl TwinRecord {
    fn failed(index: usize, s: &Snippet, e: String) -> Self {
        TwinRecord {
            index,
            origin: s.origin.clone(),
            error: Some(e),
            renamed_tokens: 0,
            f1_a: Vec::new(),
            f1_b: Vec::new(),
            unchanged_tokens: 0,
            unchanged_bits_a: None,
            unchanged_bits_b: None,
            rename_sensitivity: None,
        }
    }
}

/// Score snippet `index` and its twin: the original's analysis (with the threshold sweep
/// `reproduce` needs) and the pair record. Errors of the original are the caller's;
/// a failed twin is a record with `error`.
pub fn score_pair(
    model: &LoadedModel,
    index: usize,
    s: &Snippet,
    opts: &AnalyzeOptions,
    rw: Rewrite,
) -> Result<(super::SnippetAnalysis, TwinRecord)> {
    let syn = std::sync::Arc::new(super::parse(&s.code, s.language)?);
    let ro = RunOptions {
        lm: model.info.causal,
        ..Default::default()
    };
    let a = super::run(
        model,
        syn.clone(),
        &AnalyzeOptions {
            sweep: true,
            ..*opts
        },
        &ro,
    )?;
    let twin = match rewrite::rename(&syn, rw) {
        Ok(t) => t,
        Err(e) => return Ok((a, TwinRecord::failed(index, s, e.to_string()))),
    };
    let twin = std::sync::Arc::new(twin);
    let b = match super::run(model, std::sync::Arc::new(twin.b.clone()), opts, &ro) {
        Ok(b) => b,
        Err(e @ Error::Cancelled) => return Err(e),
        Err(e) => return Ok((a, TwinRecord::failed(index, s, format!("twin: {e}")))),
    };
    let f1 = |x: &super::SnippetAnalysis| -> Vec<Vec<Vec<f32>>> {
        Graph::ALL
            .iter()
            .map(|g| {
                x.relations[g]
                    .scores
                    .iter()
                    .map(|r| r.iter().map(|s| s.f1 as f32).collect())
                    .collect()
            })
            .collect()
    };
    let (f1_a, f1_b) = (f1(&a), f1(&b));
    let renamed_tokens = twin.changed.iter().filter(|c| **c).count();
    let sd = super::compare::surprisal_delta(&a, &b, &twin);
    Ok((
        a,
        TwinRecord {
            index,
            origin: s.origin.clone(),
            error: None,
            renamed_tokens,
            f1_a,
            f1_b,
            unchanged_tokens: sd
                .as_ref()
                .map_or(0, |d| d.unchanged.iter().filter(|u| **u).count()),
            unchanged_bits_a: sd.as_ref().and_then(|d| d.unchanged_bits_a),
            unchanged_bits_b: sd.as_ref().and_then(|d| d.unchanged_bits_b),
            rename_sensitivity: sd.as_ref().and_then(|d| d.rename_sensitivity),
        },
    ))
}

/// Largest pair-record file (`twins.jsonl`) read, resumed or merged: a record of a
/// 12-layer, 12-head model is about 15 KB, so 2 GiB holds some 140,000 of them.
pub const MAX_RECORDS_BYTES: u64 = 2 << 30;

/// The text of a pair-record file, at most [`MAX_RECORDS_BYTES`]; `None` when absent.
fn read_text(path: &Path) -> Result<Option<String>> {
    match std::fs::symlink_metadata(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(Error::io(path, e)),
        Ok(_) => crate::fsio::read_to_string_bounded(path, MAX_RECORDS_BYTES, "the pair records")
            .map(Some),
    }
}

/// Why record `r` cannot be one of a run over `total` snippets of a model with `layers`
/// layers and `heads` heads (a tampered file would otherwise index past its arrays).
fn check_record(
    r: &TwinRecord,
    total: usize,
    layers: usize,
    heads: usize,
) -> std::result::Result<(), String> {
    if r.index >= total {
        return Err(format!(
            "snippet {} is past the corpus's {total} snippets",
            r.index
        ));
    }
    if r.error.is_some() {
        return Ok(());
    }
    for f1 in [&r.f1_a, &r.f1_b] {
        let shaped = f1.len() == Graph::ALL.len()
            && f1
                .iter()
                .all(|g| g.len() == layers && g.iter().all(|l| l.len() == heads));
        if !shaped {
            return Err(format!(
                "snippet {}: F1 not {} graphs x {layers} layers x {heads} heads",
                r.index,
                Graph::ALL.len()
            ));
        }
        if f1
            .iter()
            .flatten()
            .flatten()
            .any(|v| !(0.0..=1.0).contains(v))
        {
            return Err(format!("snippet {}: an F1 outside 0 to 1", r.index));
        }
    }
    Ok(())
}

/// The records of an earlier run of `agg` for corpus snippets before `upto`, to resume
/// (a torn last line, as a crash leaves it, is dropped; a record that cannot be of this
/// run is an error).
pub fn read_records(
    path: &Path,
    upto: usize,
    agg: &super::reproduce::Aggregate,
) -> Result<Vec<TwinRecord>> {
    let Some(text) = read_text(path)? else {
        return Ok(Vec::new());
    };
    let mut out = Vec::new();
    for r in text
        .lines()
        .filter_map(|l| serde_json::from_str::<TwinRecord>(l).ok())
        .filter(|r| r.index < upto)
    {
        check_record(&r, agg.total, agg.layers, agg.heads).map_err(|reason| Error::Input {
            name: path.display().to_string(),
            reason: format!("{reason}; delete the run's directory to start over"),
        })?;
        out.push(r);
    }
    Ok(out)
}

/// The pair records of finished shards, in corpus order (for `codescope merge`): each
/// shard's records must be of its own snippets, one per snippet it scored.
pub fn merge_records(
    shards: &[(std::path::PathBuf, super::reproduce::Aggregate)],
) -> Result<Vec<TwinRecord>> {
    let mut all = Vec::new();
    for (d, agg) in shards {
        let path = d.join(RECORDS);
        let bad = |reason: String| Error::Input {
            name: path.display().to_string(),
            reason,
        };
        let text = read_text(&path)?
            .ok_or_else(|| Error::io(&path, std::io::Error::from(std::io::ErrorKind::NotFound)))?;
        let mut count = 0usize;
        for (k, line) in text.lines().enumerate() {
            let r: TwinRecord = serde_json::from_str(line)
                .map_err(|e| bad(format!("line {}: not a pair record ({e})", k + 1)))?;
            check_record(&r, agg.total, agg.layers, agg.heads)
                .map_err(|reason| bad(format!("line {}: {reason}", k + 1)))?;
            if let Some(sh) = agg.shard.filter(|sh| !sh.owns(r.index)) {
                return Err(bad(format!(
                    "line {}: snippet {} is not of shard {sh}",
                    k + 1,
                    r.index
                )));
            }
            count += 1;
            all.push(r);
        }
        if count != agg.scored {
            return Err(bad(format!(
                "{count} pair records for the {} snippets its shard scored",
                agg.scored
            )));
        }
    }
    all.sort_by_key(|r| r.index);
    if let Some(w) = all.windows(2).find(|w| w[0].index == w[1].index) {
        return Err(Error::Input {
            name: "merge".into(),
            reason: format!("snippet {} has pair records in two shards", w[0].index),
        });
    }
    Ok(all)
}

/// Rewrite `path` with `records` (after a resume drops the lines past the checkpoint).
pub fn write_records(path: &Path, records: &[TwinRecord]) -> Result<()> {
    let mut s = String::new();
    for r in records {
        s.push_str(&serde_json::to_string(r).unwrap_or_default());
        s.push('\n');
    }
    crate::fsio::write_atomic(path, s.as_bytes())
}

/// Append one record.
pub fn append_record(path: &Path, r: &TwinRecord) -> Result<()> {
    use std::io::Write;
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .map_err(|e| Error::io(path, e))?;
    writeln!(f, "{}", serde_json::to_string(r).unwrap_or_default()).map_err(|e| Error::io(path, e))
}

/// Per graph and layer: best head and F1 in A and B, their difference and its interval.
#[derive(Debug, Clone, Serialize)]
pub struct LayerPair {
    pub graph: &'static str,
    /// 1-based.
    pub layer: usize,
    pub head_a: usize,
    pub f1_a: f64,
    pub head_b: usize,
    pub f1_b: f64,
    pub diff: f64,
    pub ci_low: f64,
    pub ci_high: f64,
}

/// Best head per layer of mean F1 over the records `idx` (with multiplicity).
fn best_heads(recs: &[&TwinRecord], idx: &[usize], g: usize, b_side: bool) -> Vec<(usize, f64)> {
    let first = &recs[idx[0]];
    fn f(r: &TwinRecord, b_side: bool) -> &Vec<Vec<Vec<f32>>> {
        if b_side {
            &r.f1_b
        } else {
            &r.f1_a
        }
    }
    let m0 = &f(first, b_side)[g];
    let (layers, heads) = (m0.len(), m0.first().map_or(0, |r| r.len()));
    let mut sums = vec![0.0f64; layers * heads];
    for &i in idx {
        let m = &f(recs[i], b_side)[g];
        for (l, row) in m.iter().enumerate() {
            for (h, v) in row.iter().enumerate() {
                sums[l * heads + h] += *v as f64;
            }
        }
    }
    let n = idx.len() as f64;
    (0..layers)
        .map(|l| {
            let row = &sums[l * heads..(l + 1) * heads];
            let mut best = 0;
            for h in 1..heads {
                if row[h] > row[best] {
                    best = h;
                }
            }
            (best, row.get(best).copied().unwrap_or(0.0) / n)
        })
        .collect()
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let k = ((sorted.len() - 1) as f64 * p).round() as usize;
    sorted[k.min(sorted.len() - 1)]
}

/// Per graph and layer pair statistics with the paired bootstrap interval.
pub fn layer_pairs(records: &[TwinRecord], seed: u64) -> Vec<LayerPair> {
    let recs: Vec<&TwinRecord> = records
        .iter()
        .filter(|r| r.error.is_none() && !r.f1_a.is_empty())
        .collect();
    if recs.is_empty() {
        return Vec::new();
    }
    let n = recs.len();
    let all: Vec<usize> = (0..n).collect();
    let mut out = Vec::new();
    for (g, graph) in Graph::ALL.iter().enumerate() {
        let a = best_heads(&recs, &all, g, false);
        let b = best_heads(&recs, &all, g, true);
        let layers = a.len();
        let mut diffs: Vec<Vec<f64>> = vec![Vec::with_capacity(BOOTSTRAP); layers];
        let mut rng = Rng::new(seed ^ (g as u64).wrapping_mul(0x9E37_79B9));
        let mut idx = vec![0usize; n];
        for _ in 0..BOOTSTRAP {
            for x in idx.iter_mut() {
                *x = rng.below(n);
            }
            let ba = best_heads(&recs, &idx, g, false);
            let bb = best_heads(&recs, &idx, g, true);
            for l in 0..layers {
                diffs[l].push(bb[l].1 - ba[l].1);
            }
        }
        for (l, d) in diffs.iter_mut().enumerate() {
            d.sort_by(f64::total_cmp);
            out.push(LayerPair {
                graph: graph.name(),
                layer: l + 1,
                head_a: a[l].0 + 1,
                f1_a: a[l].1,
                head_b: b[l].0 + 1,
                f1_b: b[l].1,
                diff: b[l].1 - a[l].1,
                ci_low: percentile(d, 0.025),
                ci_high: percentile(d, 0.975),
            });
        }
    }
    out
}

/// Mean, quartiles and extremes of the rename sensitivity over scored pairs.
fn distribution(v: &[f64]) -> serde_json::Value {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let mean = if s.is_empty() {
        f64::NAN
    } else {
        s.iter().sum::<f64>() / s.len() as f64
    };
    serde_json::json!({
        "snippets": s.len(),
        "mean": mean,
        "min": s.first(),
        "q1": percentile(&s, 0.25),
        "median": percentile(&s, 0.5),
        "q3": percentile(&s, 0.75),
        "max": s.last(),
        "positive_share": if s.is_empty() { f64::NAN } else { s.iter().filter(|x| **x > 0.0).count() as f64 / s.len() as f64 },
    })
}

fn write(path: &Path, text: &str) -> Result<()> {
    crate::fsio::write_atomic(path, text.as_bytes())
}

/// Write the pair tables to `out` and return the printed table.
pub fn write_tables(
    records: &[TwinRecord],
    rewrite: &str,
    seed: u64,
    threshold: f32,
    out: &Path,
) -> Result<String> {
    let pairs = layer_pairs(records, seed);
    let mut csv =
        String::from("graph,layer,best_head_a,f1_a,best_head_b,f1_b,diff,ci_low,ci_high\n");
    for p in &pairs {
        let _ = writeln!(
            csv,
            "{},{},{},{:.6},{},{:.6},{:.6},{:.6},{:.6}",
            p.graph, p.layer, p.head_a, p.f1_a, p.head_b, p.f1_b, p.diff, p.ci_low, p.ci_high
        );
    }
    write(&out.join("twins_layers.csv"), &csv)?;
    let mut per = String::from(
        "index,origin,status,renamed_tokens,unchanged_tokens,unchanged_bits_a,unchanged_bits_b,rename_sensitivity,reason\n",
    );
    let opt = |v: Option<f64>| v.map(|x| format!("{x:.6}")).unwrap_or_default();
    for r in records {
        let _ = writeln!(
            per,
            "{},\"{}\",{},{},{},{},{},{},\"{}\"",
            r.index,
            r.origin.replace('"', "'"),
            if r.error.is_none() {
                "ok"
            } else {
                "rewrite_failed"
            },
            r.renamed_tokens,
            r.unchanged_tokens,
            opt(r.unchanged_bits_a),
            opt(r.unchanged_bits_b),
            opt(r.rename_sensitivity),
            r.error.as_deref().unwrap_or("").replace('"', "'")
        );
    }
    write(&out.join("twins.csv"), &per)?;
    let ok: Vec<&TwinRecord> = records.iter().filter(|r| r.error.is_none()).collect();
    let failed: Vec<&TwinRecord> = records.iter().filter(|r| r.error.is_some()).collect();
    let sens: Vec<f64> = ok.iter().filter_map(|r| r.rename_sensitivity).collect();
    let mut ranked: Vec<&TwinRecord> = ok
        .iter()
        .copied()
        .filter(|r| r.rename_sensitivity.is_some())
        .collect();
    ranked.sort_by(|x, y| {
        y.rename_sensitivity
            .unwrap_or(0.0)
            .total_cmp(&x.rename_sensitivity.unwrap_or(0.0))
    });
    let summary = serde_json::json!({
        "rewrite": rewrite,
        "seed": seed,
        "threshold": super::report::short_threshold(threshold),
        "pairs_scored": ok.len(),
        "rewrite_failed": failed.iter().map(|r| serde_json::json!({"origin": r.origin, "reason": r.error})).collect::<Vec<_>>(),
        "bootstrap_resamples": BOOTSTRAP,
        "layers": pairs,
        "rename_sensitivity": distribution(&sens),
        "most_sensitive": ranked.iter().take(20).map(|r| serde_json::json!({
            "origin": r.origin, "rename_sensitivity": r.rename_sensitivity,
            "unchanged_bits_a": r.unchanged_bits_a, "unchanged_bits_b": r.unchanged_bits_b,
        })).collect::<Vec<_>>(),
    });
    write(
        &out.join("twins_summary.json"),
        &serde_json::to_string_pretty(&summary).unwrap_or_default(),
    )?;
    // The printed table (its text from files escaped for the terminal).
    let esc = |t: &str| crate::error::printable(t, false).into_owned();
    let mut s = String::new();
    let _ = writeln!(
        s,
        "\n{} twins: {} pairs scored, {} twins failed their check; threshold {:.2}",
        esc(rewrite),
        ok.len(),
        failed.len(),
        threshold
    );
    for r in failed.iter().take(10) {
        let _ = writeln!(
            s,
            "  failed {}: {}",
            esc(&r.origin),
            esc(r.error.as_deref().unwrap_or(""))
        );
    }
    for g in [Graph::AstMotif, Graph::Dfg] {
        let _ = writeln!(
            s,
            "\n{} best-head F1 per layer, original vs twin (paired bootstrap 95% CI of the difference)\n  layer  head     F1 A  head     F1 B     diff  95% CI",
            g.name()
        );
        for p in pairs.iter().filter(|p| p.graph == g.name()) {
            let _ = writeln!(
                s,
                "  {:>5}  {:>4}  {:>7.3}  {:>4}  {:>7.3}  {:>+7.3}  [{:+.3}, {:+.3}]",
                p.layer, p.head_a, p.f1_a, p.head_b, p.f1_b, p.diff, p.ci_low, p.ci_high
            );
        }
    }
    if !sens.is_empty() {
        let d = distribution(&sens);
        let f = |k: &str| d[k].as_f64().unwrap_or(f64::NAN);
        let _ = writeln!(
            s,
            "\nrename sensitivity (bits/token on unchanged tokens, twin - original) over {} snippets:\n  mean {:+.3}  q1 {:+.3}  median {:+.3}  q3 {:+.3}  max {:+.3}  ({:.0}% positive)",
            sens.len(),
            f("mean"),
            f("q1"),
            f("median"),
            f("q3"),
            f("max"),
            100.0 * f("positive_share")
        );
        let _ = writeln!(s, "most sensitive snippets (the ones that look memorised):");
        for r in ranked.iter().take(10) {
            let _ = writeln!(
                s,
                "  {:+.3}  ({:.2} → {:.2})  {}",
                r.rename_sensitivity.unwrap_or(0.0),
                r.unchanged_bits_a.unwrap_or(0.0),
                r.unchanged_bits_b.unwrap_or(0.0),
                esc(&r.origin)
            );
        }
    }
    Ok(s)
}
