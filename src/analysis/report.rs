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
    let withheld = a.head_scores_withheld();
    let mut relations = Map::new();
    for g in Graph::ALL {
        relations.insert(g.name().into(), scores_json(&a.relations[&g]));
    }
    // The cross stack: no scores against gold graphs that do not apply (`relations`,
    // `finding` null, no `sweep`), and the field saying why.
    let relations = match withheld {
        Some(_) => Value::Null,
        None => Value::Object(relations),
    };
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
    doc["head_scores_withheld"] = withheld.map_or(Value::Null, Value::from);
    doc["finding"] = match withheld {
        Some(_) => Value::Null,
        None => super::finding::Finding::of(a).to_json(),
    };
    if let Some(sw) = a.sweep.as_ref().filter(|_| withheld.is_none()) {
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
/// recall, f1, ged_per_node, one row per threshold with `--sweep`; none on the cross
/// stack), `category_coarse` and
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
    // The cross stack has no `relations` rows ([`SnippetAnalysis::head_scores_withheld`]).
    for g in Graph::ALL
        .into_iter()
        .filter(|_| a.head_scores_withheld().is_none())
    {
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
/// category matrix per layer (head-averaged); on the cross stack one notice line instead
/// of the head scores and the finding.
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
    let withheld = a.head_scores_withheld();
    if let Some(why) = withheld {
        let _ = writeln!(s, "notice    {why}");
    } else {
        let _ = writeln!(
            s,
            "threshold {:.2}  (P = [A > t], diagonal included)",
            a.threshold
        );
    }
    for g in Graph::ALL.into_iter().filter(|_| withheld.is_none()) {
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
    if withheld.is_none() {
        let _ = writeln!(s);
        s.push_str(&super::finding::Finding::of(a).text());
    }
    s
}

/// The `ged_study` object of `analyze --ged study --json`: the threshold, the token count
/// and limit, why it was skipped (`null` when computed), the nodes' names, and per graph
/// `ged_study_per_node` and `ged_study_distance` (`[layer][head]`, positional),
/// `ged_per_node` (codescope's identity GED, the same `[layer][head]`, beside it) and
/// `ged_study_layer_min` (per layer the head with the smallest study GED, 1-based, its
/// value, that head's identity GED and the identity GED's own minimum over heads).
pub fn ged_study_json(
    a: &SnippetAnalysis,
    g: &Result<super::ged::StudyGed, super::ged::Skipped>,
    max_tokens: usize,
) -> Value {
    let mut doc = json!({
        "threshold": short_threshold(a.threshold),
        "tokens": a.token_attention.n(),
        "max_tokens": max_tokens,
        "skipped": Value::Null,
    });
    let sg = match g {
        Ok(sg) => sg,
        Err(why) => {
            doc["skipped"] = why.to_string().into();
            return doc;
        }
    };
    let mut graphs = Map::new();
    for gr in Graph::ALL {
        let d = &sg.distances[&gr];
        let identity = &a.relations[&gr];
        let per_node: Vec<Vec<f64>> = d
            .iter()
            .map(|r| r.iter().map(|&x| sg.per_node(x)).collect())
            .collect();
        let mins: Vec<Value> = sg
            .layer_min(gr)
            .into_iter()
            .enumerate()
            .map(|(l, (h, x))| {
                let row = &identity.scores[l];
                let id_min = row
                    .iter()
                    .map(|s| s.ged_per_node)
                    .fold(f64::INFINITY, f64::min);
                json!({"layer": l + 1, "head": h + 1, "ged_study_per_node": sg.per_node(x),
                       "ged_study_distance": x, "ged_per_node": row[h].ged_per_node,
                       "ged_identity_layer_min": id_min})
            })
            .collect();
        graphs.insert(
            gr.name().into(),
            json!({
                "ged_study_per_node": per_node,
                "ged_study_distance": d,
                "ged_per_node": identity.metric(|s| s.ged_per_node),
                "ged_study_layer_min": mins,
            }),
        );
    }
    doc["names"] = json!(sg.names);
    doc["graphs"] = Value::Object(graphs);
    doc
}

/// `analyze --ged study --csv`'s extra rows (the long format of [`to_csv`]): table
/// `ged_study`, metric `ged_study_per_node` per head and `ged_study_layer_min` per layer
/// (head empty).
pub fn ged_study_csv(a: &SnippetAnalysis, sg: &super::ged::StudyGed) -> String {
    let mut out = String::new();
    for g in Graph::ALL {
        for (l, row) in sg.distances[&g].iter().enumerate() {
            for (h, &d) in row.iter().enumerate() {
                let _ = writeln!(
                    out,
                    "ged_study,{},{},{},{:.2},ged_study_per_node,{:.6}",
                    g.name(),
                    l + 1,
                    h + 1,
                    a.threshold,
                    sg.per_node(d)
                );
            }
        }
        for (l, (_, d)) in sg.layer_min(g).into_iter().enumerate() {
            let _ = writeln!(
                out,
                "ged_study,{},{},,{:.2},ged_study_layer_min,{:.6}",
                g.name(),
                l + 1,
                a.threshold,
                sg.per_node(d)
            );
        }
    }
    out
}

/// `analyze --ged study`'s section of the summary: per graph and layer, the study's GED
/// per node (minimum over heads, and its head) beside codescope's identity GED (minimum
/// over heads); or the one line saying why it was skipped.
pub fn ged_study_text(
    a: &SnippetAnalysis,
    g: &Result<super::ged::StudyGed, super::ged::Skipped>,
) -> String {
    let mut s = String::new();
    let sg = match g {
        Ok(sg) => sg,
        Err(why) => {
            let _ = writeln!(s, "\nstudy GED skipped: {why}");
            return s;
        }
    };
    let _ = writeln!(
        s,
        "\nstudy GED per node at threshold {:.2} (networkx's first optimize_graph_edit_distance value / n, minimum over heads) beside the identity GED |P xor G| / n (minimum over heads)",
        a.threshold
    );
    let _ = writeln!(s, "  graph                  layer  head   study  identity");
    for gr in Graph::ALL {
        let identity = &a.relations[&gr];
        for (l, (h, d)) in sg.layer_min(gr).into_iter().enumerate() {
            let id_min = identity.scores[l]
                .iter()
                .map(|x| x.ged_per_node)
                .fold(f64::INFINITY, f64::min);
            let _ = writeln!(
                s,
                "  {:<21}  {:>5}  {:>4}  {:>6.2}  {:>8.2}",
                gr.name(),
                l + 1,
                h + 1,
                sg.per_node(d),
                id_min
            );
        }
    }
    s
}
