//! The study's finding, side by side: per layer, how well attention matches the
//! syntactic–syntactic edges, the identifier–identifier data flow and the
//! syntactic–identifier edges (best head and head mean, F1), with how attention is shared
//! between the two coarse categories.
//!
//! The study's headline ("models encode relations among syntactic tokens and among
//! identifiers, but not between syntactic tokens and identifiers") compares exactly these
//! columns: `syntactic` (docs/METHODS.md 2.2), `dfg` (2.3, the study's data flow; the
//! identifier-only `dfg_refined` is reported beside it in JSON) and
//! `syntactic_identifier` (2.4). F1 depends on how dense a graph is, so the columns are
//! read against each other layer by layer, and against a random-weight baseline where
//! one is run, not as absolute grades.
//!
//! Built from one snippet's analysis ([`Finding::of`]) or from a corpus run's
//! macro-averages ([`Finding::of_corpus`], without category shares: the corpus tables do
//! not aggregate them).

use std::fmt::Write as _;

use serde_json::{json, Value};

use super::{categories::CategoryMatrix, Graph, SnippetAnalysis};

/// The three relations the finding compares, in display order, with their labels.
pub const RELATIONS: [(Graph, &str); 3] = [
    (Graph::Syntactic, "syn–syn"),
    (Graph::Dfg, "id–id (data flow)"),
    (Graph::SyntacticIdentifier, "syn–id"),
];

/// One relation in one layer.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Rel {
    /// F1 of the layer's best head.
    pub best_f1: f64,
    /// That head (0-based here; 1-based in every output).
    pub best_head: usize,
    /// Mean F1 over the layer's heads.
    pub mean_f1: f64,
}

/// One layer of the finding.
#[derive(Debug, Clone, PartialEq)]
pub struct Layer {
    /// Per relation of [`RELATIONS`].
    pub rels: [Rel; 3],
    /// `dfg_refined` (identifier-only data flow), for reference.
    pub refined: Rel,
    /// Share of each coarse query class's attention (over code tokens, head mean, self
    /// pairs excluded) that goes to each class: `[syn→syn, syn→id, id→syn, id→id]`.
    pub shares: Option<[Option<f64>; 4]>,
}

/// The finding of one snippet or one corpus.
#[derive(Debug, Clone, PartialEq)]
pub struct Finding {
    /// Per layer (index 0 = layer 1).
    pub layers: Vec<Layer>,
    /// The threshold the F1 scores are at.
    pub threshold: f32,
}

fn rel_of(scores: &[Vec<f64>]) -> Vec<Rel> {
    scores
        .iter()
        .map(|row| {
            let mut r = Rel::default();
            for (h, &f) in row.iter().enumerate() {
                if h == 0 || f > r.best_f1 {
                    r.best_f1 = f;
                    r.best_head = h;
                }
            }
            r.mean_f1 = row.iter().sum::<f64>() / row.len().max(1) as f64;
            r
        })
        .collect()
}

fn shares_of(m: &CategoryMatrix) -> [Option<f64>; 4] {
    // Coarse classes: 0 = syntactic, 1 = identifier.
    [
        m.share_at(0, 0),
        m.share_at(0, 1),
        m.share_at(1, 0),
        m.share_at(1, 1),
    ]
}

impl Finding {
    /// From one snippet's analysis at its threshold.
    pub fn of(a: &SnippetAnalysis) -> Finding {
        let per = |g: Graph| -> Vec<Rel> {
            let hs = &a.relations[&g];
            rel_of(&hs.metric(|s| s.f1))
        };
        let cols: Vec<Vec<Rel>> = RELATIONS.iter().map(|(g, _)| per(*g)).collect();
        let refined = per(Graph::DfgRefined);
        let layers = (0..a.layers())
            .map(|l| Layer {
                rels: [cols[0][l], cols[1][l], cols[2][l]],
                refined: refined[l],
                shares: a.coarse_layer.get(l).map(shares_of),
            })
            .collect();
        Finding {
            layers,
            threshold: a.threshold,
        }
    }

    /// From a corpus run's macro-averaged scores at threshold index `t`.
    pub fn of_corpus(agg: &super::reproduce::Aggregate, t: usize) -> Finding {
        let per = |g: Graph| -> Vec<Rel> {
            let gi = Graph::ALL.iter().position(|x| *x == g).unwrap_or(0);
            let scores: Vec<Vec<f64>> = (0..agg.layers)
                .map(|l| (0..agg.heads).map(|h| agg.mean(gi, t, l, h, 2)).collect())
                .collect();
            rel_of(&scores)
        };
        let cols: Vec<Vec<Rel>> = RELATIONS.iter().map(|(g, _)| per(*g)).collect();
        let refined = per(Graph::DfgRefined);
        let layers = (0..agg.layers)
            .map(|l| Layer {
                rels: [cols[0][l], cols[1][l], cols[2][l]],
                refined: refined[l],
                shares: None,
            })
            .collect();
        Finding {
            layers,
            threshold: agg.grid.get(t).copied().unwrap_or(0.0),
        }
    }

    /// Layers where syn–id's best-head F1 is below both syn–syn's and id–id's (the
    /// study's pattern), as 1-based numbers.
    pub fn pattern_layers(&self) -> Vec<usize> {
        self.layers
            .iter()
            .enumerate()
            .filter(|(_, l)| {
                let [syn, id, synid] = l.rels;
                synid.best_f1 < syn.best_f1 && synid.best_f1 < id.best_f1
            })
            .map(|(i, _)| i + 1)
            .collect()
    }

    /// One sentence on whether the study's pattern shows here.
    pub fn reading(&self) -> String {
        let n = self.layers.len();
        let p = self.pattern_layers();
        let list = |v: &[usize]| {
            v.iter()
                .map(|l| l.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        };
        if n > 0
            && self
                .layers
                .iter()
                .all(|l| l.rels.iter().all(|r| r.best_f1 == 0.0))
        {
            return format!(
                "no head's attention reaches the threshold ({:.2}) on any of these edges: nothing to compare (a flat attention, as random weights give, scores 0 everywhere)",
                self.threshold
            );
        }
        if p.len() == n && n > 0 {
            "in every layer the best head matches syn–id edges worse than both syn–syn and id–id edges: the study's finding".into()
        } else if p.is_empty() {
            "in no layer is syn–id matched worse than both syn–syn and id–id: the study's finding does not show here".into()
        } else {
            format!(
                "syn–id is matched worse than both syn–syn and id–id in layers {} of {n} (the study's finding), not in the others",
                list(&p)
            )
        }
    }

    /// The readable table.
    pub fn text(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(
            s,
            "finding   F1 of the best head (and the mean over heads) per relation, t = {:.2}; shares: where each class's attention goes",
            self.threshold
        );
        let _ = write!(s, "  layer");
        for (_, name) in RELATIONS {
            let _ = write!(s, "  {name:>20}");
        }
        let with_shares = self.layers.iter().any(|l| l.shares.is_some());
        if with_shares {
            let _ = write!(s, "   syn→syn syn→id id→syn id→id");
        }
        let _ = writeln!(s);
        let pct =
            |v: Option<f64>| v.map_or("   ·".to_string(), |v| format!("{:>4.0}%", v * 100.0));
        for (i, l) in self.layers.iter().enumerate() {
            let _ = write!(s, "  {:>5}", i + 1);
            for r in l.rels {
                let cell = format!("{:.3} (h{}, {:.3})", r.best_f1, r.best_head + 1, r.mean_f1);
                let _ = write!(s, "  {cell:>20}");
            }
            if let Some(sh) = l.shares {
                let _ = write!(
                    s,
                    "   {:>7} {:>6} {:>6} {:>5}",
                    pct(sh[0]),
                    pct(sh[1]),
                    pct(sh[2]),
                    pct(sh[3])
                );
            }
            let _ = writeln!(s);
        }
        let _ = writeln!(s, "  reading: {}", self.reading());
        s
    }

    /// The `finding` object of the JSON outputs (layers and heads 1-based).
    pub fn to_json(&self) -> Value {
        let rel = |r: &Rel| json!({"best_f1": r.best_f1, "best_head": r.best_head + 1, "mean_f1": r.mean_f1});
        let layers: Vec<Value> = self
            .layers
            .iter()
            .enumerate()
            .map(|(i, l)| {
                let mut o = json!({
                    "layer": i + 1,
                    "syntactic": rel(&l.rels[0]),
                    "dfg": rel(&l.rels[1]),
                    "syntactic_identifier": rel(&l.rels[2]),
                    "dfg_refined": rel(&l.refined),
                });
                if let Some(sh) = l.shares {
                    o["shares"] = json!({"syn->syn": sh[0], "syn->id": sh[1], "id->syn": sh[2], "id->id": sh[3]});
                }
                o
            })
            .collect();
        json!({
            "threshold": super::report::short_threshold(self.threshold),
            "layers": layers,
            "pattern_layers": self.pattern_layers(),
            "reading": self.reading(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn best_and_mean_per_layer_by_hand() {
        let r = rel_of(&[vec![0.1, 0.4, 0.2], vec![0.0, 0.0, 0.3]]);
        assert_eq!(r[0].best_head, 1);
        assert!((r[0].best_f1 - 0.4).abs() < 1e-12);
        assert!((r[0].mean_f1 - 0.7 / 3.0).abs() < 1e-12);
        assert_eq!(r[1].best_head, 2);
        // Ties keep the first head.
        assert_eq!(rel_of(&[vec![0.2, 0.2]])[0].best_head, 0);
    }

    fn layer(syn: f64, id: f64, synid: f64) -> Layer {
        let r = |f| Rel {
            best_f1: f,
            best_head: 0,
            mean_f1: f,
        };
        Layer {
            rels: [r(syn), r(id), r(synid)],
            refined: r(id),
            shares: None,
        }
    }

    #[test]
    fn the_reading_names_the_layers_with_the_pattern() {
        let f = Finding {
            layers: vec![
                layer(0.3, 0.2, 0.1),
                layer(0.3, 0.05, 0.1),
                layer(0.4, 0.3, 0.2),
            ],
            threshold: 0.05,
        };
        assert_eq!(f.pattern_layers(), [1, 3]);
        assert!(f.reading().contains("layers 1, 3 of 3"), "{}", f.reading());
        let all = Finding {
            layers: vec![layer(0.3, 0.2, 0.1)],
            threshold: 0.05,
        };
        assert!(all.reading().contains("in every layer"));
        let none = Finding {
            layers: vec![layer(0.1, 0.1, 0.3)],
            threshold: 0.05,
        };
        assert!(none.reading().contains("does not show"));
        // Nothing above the threshold anywhere (flat attention): no claim either way.
        let flat = Finding {
            layers: vec![layer(0.0, 0.0, 0.0), layer(0.0, 0.0, 0.0)],
            threshold: 0.05,
        };
        assert_eq!(flat.pattern_layers(), Vec::<usize>::new());
        assert!(
            flat.reading().contains("nothing to compare"),
            "{}",
            flat.reading()
        );
        let one = Finding {
            layers: vec![layer(0.0, 0.0, 0.0), layer(0.1, 0.1, 0.0)],
            threshold: 0.05,
        };
        assert!(one.reading().contains("layers 2 of 2"), "{}", one.reading());
        let j = f.to_json();
        assert_eq!(j["layers"][0]["layer"], 1);
        assert_eq!(j["layers"][0]["syntactic"]["best_head"], 1);
        assert_eq!(j["threshold"], 0.05);
    }
}
