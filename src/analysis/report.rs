//! Output forms of `analyze`: the JSON document, a long-format CSV and a readable summary.
//!
//! Conventions: JSON arrays are positional (`[layer][head]`, index 0 = first attention
//! layer); CSV and text number layers and heads from 1, as the explorer's status bar does.

use std::fmt::Write as _;

use serde_json::{json, Map, Value};

use super::categories::{CategoryMatrix, COARSE, FINE};
use super::relations::HeadScores;
use super::{Graph, SnippetAnalysis};

fn matrix_json(rows: &[Vec<CategoryMatrix>], names: &[&str], share: bool) -> Value {
    Value::Array(
        rows.iter()
            .map(|r| {
                Value::Array(
                    r.iter()
                        .map(|m| Value::Object(m.named(names, share)))
                        .collect(),
                )
            })
            .collect(),
    )
}

fn layer_json(rows: &[CategoryMatrix], names: &[&str], share: bool) -> Value {
    Value::Array(
        rows.iter()
            .map(|m| Value::Object(m.named(names, share)))
            .collect(),
    )
}

/// A threshold (an `f32` of the grid) as the short decimal it stands for in JSON: `0.05`,
/// not `0.05000000074505806` (README "JSON shapes").
pub fn short_threshold(t: f32) -> f64 {
    (f64::from(t) * 1e6).round() / 1e6
}

fn scores_json(hs: &HeadScores) -> Value {
    let best: Vec<Value> = hs
        .best_per_layer()
        .into_iter()
        .enumerate()
        .map(|(l, (h, s))| {
            json!({"layer": l + 1, "head": h + 1, "precision": s.precision, "recall": s.recall, "f1": s.f1, "ged_per_node": s.ged_per_node})
        })
        .collect();
    json!({
        "edges": hs.edges,
        "threshold": short_threshold(hs.threshold),
        "precision": hs.metric(|s| s.precision),
        "recall": hs.metric(|s| s.recall),
        "f1": hs.metric(|s| s.f1),
        "ged_per_node": hs.metric(|s| s.ged_per_node),
        "best_head": best,
    })
}

/// The `category_attention` object of `analyze --json` (also `compare --json`'s `a`/`b`).
pub fn category_json(a: &SnippetAnalysis) -> Value {
    json!({
        "coarse": matrix_json(&a.coarse, &COARSE, false),
        "fine": matrix_json(&a.fine, &FINE, false),
        "coarse_share": matrix_json(&a.coarse, &COARSE, true),
        "fine_share": matrix_json(&a.fine, &FINE, true),
        "coarse_layer_mean": layer_json(&a.coarse_layer, &COARSE, false),
        "fine_layer_mean": layer_json(&a.fine_layer, &FINE, false),
        "coarse_all": Value::Object(a.coarse_all.named(&COARSE, false)),
        "fine_all": Value::Object(a.fine_all.named(&FINE, false)),
    })
}

/// The `analyze --json` document.
pub fn to_json(a: &SnippetAnalysis) -> Value {
    let mut relations = Map::new();
    for g in Graph::ALL {
        relations.insert(g.name().into(), scores_json(&a.relations[&g]));
    }
    let mut doc = json!({
        "model": a.trace.model,
        "mode": a.mode.name(),
        "threshold": short_threshold(a.threshold),
        "language": a.syntax.language.name(),
        "text": a.trace.text,
        "tokens": a.syntax.tokens,
        "analysed_tokens": a.token_attention.tokens,
        "truncated": a.trace.truncated,
        "parse_errors": a.syntax.errors.len(),
        "relations": relations,
        "category_attention": category_json(a),
    });
    if let Some(note) = &a.input_note {
        doc["paper_note"] = note.as_str().into();
    }
    doc["finding"] = super::finding::Finding::of(a).to_json();
    if let Some(sw) = &a.sweep {
        let mut m = Map::new();
        for g in Graph::ALL {
            m.insert(
                g.name().into(),
                Value::Array(sw[&g].iter().map(scores_json).collect()),
            );
        }
        doc["sweep"] = Value::Object(m);
    }
    doc
}

fn fmt_opt(v: Option<f64>) -> String {
    v.map(|x| format!("{x:.6}")).unwrap_or_default()
}

/// Long-format CSV: `table,key,layer,head,threshold,metric,value` (layer/head 1-based;
/// head empty for layer means). Tables: `relations` (key = graph; metrics precision,
/// recall, f1, ged_per_node, one row per threshold with `--sweep`), `category_coarse` and
/// `category_fine` (key = `query->key` class pair; metrics mean, share).
pub fn to_csv(a: &SnippetAnalysis) -> String {
    let mut out = String::from("table,key,layer,head,threshold,metric,value\n");
    let rel = |hs: &HeadScores, g: &str, out: &mut String| {
        for (l, row) in hs.scores.iter().enumerate() {
            for (h, s) in row.iter().enumerate() {
                for (m, v) in [
                    ("precision", s.precision),
                    ("recall", s.recall),
                    ("f1", s.f1),
                    ("ged_per_node", s.ged_per_node),
                ] {
                    let _ = writeln!(
                        out,
                        "relations,{g},{},{},{:.2},{m},{v:.6}",
                        l + 1,
                        h + 1,
                        hs.threshold
                    );
                }
            }
        }
    };
    for g in Graph::ALL {
        match &a.sweep {
            Some(sw) => sw[&g].iter().for_each(|hs| rel(hs, g.name(), &mut out)),
            None => rel(&a.relations[&g], g.name(), &mut out),
        }
    }
    let cats = |table: &str,
                per_head: &[Vec<CategoryMatrix>],
                per_layer: &[CategoryMatrix],
                names: &[&str],
                out: &mut String| {
        let emit = |l: usize, h: Option<usize>, m: &CategoryMatrix, out: &mut String| {
            for q in 0..m.k {
                for k in 0..m.k {
                    for (metric, v) in [("mean", m.mean_at(q, k)), ("share", m.share_at(q, k))] {
                        let _ = writeln!(
                            out,
                            "{table},{}->{},{},{},,{metric},{}",
                            names[q],
                            names[k],
                            l + 1,
                            h.map(|h| (h + 1).to_string()).unwrap_or_default(),
                            fmt_opt(v)
                        );
                    }
                }
            }
        };
        for (l, row) in per_head.iter().enumerate() {
            for (h, m) in row.iter().enumerate() {
                emit(l, Some(h), m, out);
            }
            emit(l, None, &per_layer[l], out);
        }
    };
    cats(
        "category_coarse",
        &a.coarse,
        &a.coarse_layer,
        &COARSE,
        &mut out,
    );
    cats("category_fine", &a.fine, &a.fine_layer, &FINE, &mut out);
    out
}

/// The readable summary: notices, best head per layer per graph, and the coarse
/// category matrix per layer (head-averaged).
pub fn summary(name: &str, a: &SnippetAnalysis) -> String {
    let mut s = String::new();
    let m = &a.trace.model;
    let _ = writeln!(
        s,
        "model     {} ({}, {} layers x {} heads{})",
        m.source,
        m.architecture_note(),
        m.layers,
        m.heads,
        m.weights_note()
    );
    let _ = writeln!(
        s,
        "input     {name} ({}, {} mode): {} code tokens, {} analysed, {} subwords",
        a.syntax.language.name(),
        a.mode.name(),
        a.syntax.tokens.len(),
        a.token_attention.n(),
        a.trace.tokens.len()
    );
    if a.trace.truncated > 0 {
        let _ = writeln!(
            s,
            "notice    input truncated to the model's window ({} subwords dropped); tokens beyond it are not analysed",
            a.trace.truncated
        );
    }
    if let Some(note) = &a.input_note {
        let _ = writeln!(s, "notice    paper mode: {note}");
    }
    if !a.syntax.errors.is_empty() {
        let first = &a.syntax.errors[0];
        let _ = writeln!(
            s,
            "notice    {} parse error(s), first at byte {}: {}; the rest is analysed",
            a.syntax.errors.len(),
            first.start,
            first.message
        );
    }
    let _ = writeln!(
        s,
        "threshold {:.2}  (P = [A > t], diagonal included)",
        a.threshold
    );
    for g in Graph::ALL {
        let hs = &a.relations[&g];
        let _ = writeln!(s, "\n{g} ({} gold edges): best head per layer", hs.edges);
        let _ = writeln!(s, "  layer  head  precision  recall     f1   GED/node");
        for (l, (h, sc)) in hs.best_per_layer().into_iter().enumerate() {
            let _ = writeln!(
                s,
                "  {:>5}  {:>4}  {:>9.3}  {:>6.3}  {:>5.3}  {:>9.2}",
                l + 1,
                h + 1,
                sc.precision,
                sc.recall,
                sc.f1,
                sc.ged_per_node
            );
        }
    }
    let n = a.token_attention.n();
    let _ = writeln!(
        s,
        "\ncategory attention, × uniform (mean weight ÷ 1/{n}, head-averaged; share of the row in brackets; raw means in --json)"
    );
    let _ = writeln!(
        s,
        "  layer   syn->syn        syn->id         id->syn         id->id"
    );
    let cell = |m: &CategoryMatrix, q: usize, k: usize| {
        format!(
            "{:.2} ({:>4.0}%)",
            m.ratio_to_uniform_at(q, k, n).unwrap_or(f64::NAN),
            100.0 * m.share_at(q, k).unwrap_or(f64::NAN)
        )
    };
    for (l, m) in a.coarse_layer.iter().enumerate() {
        let _ = writeln!(
            s,
            "  {:>5}   {:<15} {:<15} {:<15} {:<15}",
            l + 1,
            cell(m, 0, 0),
            cell(m, 0, 1),
            cell(m, 1, 0),
            cell(m, 1, 1)
        );
    }
    let _ = writeln!(s);
    s.push_str(&super::finding::Finding::of(a).text());
    s
}
