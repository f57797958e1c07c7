//! Trained and random weights side by side (`probe --random-baseline SEED`): the same
//! probes, tasks, layers, splits and seeds on the model's trained weights and on a seeded
//! random initialisation of its architecture (docs/METHODS.md 4), matched row by row.
//!
//! A row is one measured number at one hidden layer: a task's accuracy (with its control
//! task's), AST-Probe's constituent F1 (with its control trees'), the structural probe's
//! Spearman and UUAS (no control). The two reports must hold the same rows; they do when
//! both come from one [`super::RunSpec`] on one corpus.

use std::fmt::Write as _;

use serde_json::{json, Value};

use super::{ProbeKind, ProbeReport};

/// One measured number of both runs.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    /// The task (`dfg`, ...), `ast` or `structural`.
    pub task: String,
    /// The probe (`linear`, `mlp`, `directprobe`, `ast`, `structural`).
    pub probe: String,
    /// What is measured: `accuracy`, `f1`, `spearman`, `uuas`.
    pub metric: &'static str,
    /// Hidden layer; 0 = embeddings.
    pub layer: usize,
    pub trained: f64,
    pub random: f64,
    /// The control task's number, where there is one.
    pub trained_control: Option<f64>,
    pub random_control: Option<f64>,
}

/// (task, probe, metric, layer, value, control) of one measured number.
type Measured = (String, String, &'static str, usize, f64, Option<f64>);

fn rows_of(r: &ProbeReport) -> Vec<Measured> {
    let mut out = Vec::new();
    for x in r
        .results
        .iter()
        .filter(|x| x.probe != ProbeKind::Ast.name())
    {
        out.push((
            x.task.clone(),
            x.probe.clone(),
            "accuracy",
            x.layer,
            x.accuracy,
            Some(x.control_accuracy),
        ));
    }
    for a in &r.ast {
        out.push((
            "ast".into(),
            "ast".into(),
            "f1",
            a.layer,
            a.scores.f1,
            Some(a.control.f1),
        ));
    }
    for metric in ["spearman", "uuas"] {
        for s in &r.structural {
            let v = if metric == "spearman" {
                s.spearman
            } else {
                s.uuas
            };
            out.push((
                "structural".into(),
                "structural".into(),
                metric,
                s.layer,
                v,
                None,
            ));
        }
    }
    out
}

/// The rows of both reports, matched; `None` when they do not hold the same rows.
pub fn rows(trained: &ProbeReport, random: &ProbeReport) -> Option<Vec<Row>> {
    let (a, b) = (rows_of(trained), rows_of(random));
    if a.len() != b.len() {
        return None;
    }
    a.into_iter()
        .zip(b)
        .map(|(a, b)| {
            ((&a.0, &a.1, a.2, a.3) == (&b.0, &b.1, b.2, b.3)).then_some(Row {
                task: a.0,
                probe: a.1,
                metric: a.2,
                layer: a.3,
                trained: a.4,
                random: b.4,
                trained_control: a.5,
                random_control: b.5,
            })
        })
        .collect()
}

/// The printed side-by-side table.
pub fn table(seed: u64, rows: &[Row]) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "\ntrained against random weights (seed {seed}): the same probes, splits and seeds"
    );
    let mut last = (String::new(), String::new(), "");
    let cell = |v: Option<f64>| v.map_or("      ·".to_string(), |v| format!("{v:>7.3}"));
    for r in rows {
        if (r.task.as_str(), r.probe.as_str(), r.metric)
            != (last.0.as_str(), last.1.as_str(), last.2)
        {
            let _ = writeln!(
                s,
                "\n{} ({} probe, {})\nlayer  trained   random  trained - random  control: trained   random",
                r.task, r.probe, r.metric
            );
            last = (r.task.clone(), r.probe.clone(), r.metric);
        }
        let _ = writeln!(
            s,
            "{:>5}  {:>7.3}  {:>7.3}  {:>+16.3}           {}  {}",
            r.layer,
            r.trained,
            r.random,
            r.trained - r.random,
            cell(r.trained_control),
            cell(r.random_control)
        );
    }
    s
}

/// CSV: one row per measured number.
pub fn csv(rows: &[Row]) -> String {
    let mut s = String::from(
        "task,probe,metric,layer,trained,random,difference,trained_control,random_control\n",
    );
    let cell = |v: Option<f64>| v.map_or(String::new(), |v| format!("{v:.6}"));
    for r in rows {
        let _ = writeln!(
            s,
            "{},{},{},{},{:.6},{:.6},{:.6},{},{}",
            r.task,
            r.probe,
            r.metric,
            r.layer,
            r.trained,
            r.random,
            r.trained - r.random,
            cell(r.trained_control),
            cell(r.random_control)
        );
    }
    s
}

/// The `probe --random-baseline --json` document: both reports whole, and the matched
/// rows.
pub fn json(trained: Value, random: Value, rows: &[Row]) -> Value {
    let rows: Vec<Value> = rows
        .iter()
        .map(|r| {
            json!({
                "task": r.task, "probe": r.probe, "metric": r.metric, "layer": r.layer,
                "trained": r.trained, "random": r.random, "difference": r.trained - r.random,
                "trained_control": r.trained_control, "random_control": r.random_control,
            })
        })
        .collect();
    json!({"trained": trained, "random": random, "side_by_side": rows})
}
