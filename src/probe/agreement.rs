//! A trained probe on a snippet and its renamed twin: per layer, the predictions on the
//! aligned tokens of both and how often they agree (`compare --probe TASK`; the
//! comparison itself is `analysis::compare`'s).

use crate::analysis::compare::{Comparison, ProbeAgreement};
use crate::probe::{ProbeReport, Task};

/// A trained probe's per-layer predictions on both twins (token tasks only; both
/// analyses need hidden states).
pub fn twin_agreement(
    report: &ProbeReport,
    task: Task,
    c: &Comparison,
) -> Option<Vec<ProbeAgreement>> {
    if task.is_pair() {
        return None;
    }
    let (fa, fb) = (c.a.features.as_ref()?, c.b.features.as_ref()?);
    let classes = task.classes();
    let mut out = Vec::new();
    for p in report.probes.iter().filter(|p| p.task == task) {
        let l = p.layer;
        let (Some(xa), Some(xb)) = (fa.layers.get(l), fb.layers.get(l)) else {
            continue;
        };
        let dim_a = xa.len() / fa.tokens.len().max(1);
        let dim_b = xb.len() / fb.tokens.len().max(1);
        let mut labels = Vec::new();
        for &(i, j) in &c.twin.pairs {
            let (Some(ka), Some(kb)) = (
                fa.tokens.iter().position(|&t| t == i),
                fb.tokens.iter().position(|&t| t == j),
            ) else {
                continue;
            };
            let pa = p.classifier.predict(&xa[ka * dim_a..(ka + 1) * dim_a]);
            let pb = p.classifier.predict(&xb[kb * dim_b..(kb + 1) * dim_b]);
            if let (Some(pa), Some(pb)) = (pa, pb) {
                let name = |k: usize| classes.get(k).cloned().unwrap_or_else(|| k.to_string());
                labels.push((i, j, name(pa), name(pb)));
            }
        }
        let agree = labels.iter().filter(|(_, _, x, y)| x == y).count();
        out.push(ProbeAgreement {
            layer: l,
            agreement: if labels.is_empty() {
                0.0
            } else {
                agree as f64 / labels.len() as f64
            },
            labels,
        });
    }
    Some(out)
}
