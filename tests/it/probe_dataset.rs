//! Probe datasets: hand-checked labels, control-task machinery, splits.

use std::collections::HashMap;

use codescope::probe::dataset::{label_snippet, Task};
use codescope::probe::{control_labels, split, Example, Rng, Split};
use codescope::syntax::{parse, Language};

const ADD: &str = "def add(a, b=1):\n  x = a + b\n  return x";

fn labels(task: Task, max_pairs: usize) -> Vec<Example> {
    let syn = parse(ADD, Language::Python).unwrap();
    let covered: Vec<usize> = (0..syn.tokens.len()).collect();
    label_snippet(task, &syn, &covered, 0, max_pairs, &mut Rng::new(1))
}

#[test]
fn categories_and_depths_of_add() {
    let cat = labels(Task::Category, 100);
    let names = Task::Category.classes();
    let got: Vec<(&str, &str)> = cat
        .iter()
        .map(|e| (e.key.as_str(), names[e.label].as_str()))
        .collect();
    assert_eq!(got.len(), 17);
    assert_eq!(got[0], ("def", "keyword"));
    assert_eq!(got[1], ("add", "identifier"));
    assert_eq!(got[2], ("(", "delimiter"));
    assert_eq!(got[6], ("=", "operator"));
    assert_eq!(got[7], ("1", "literal"));
    assert_eq!(got[15], ("return", "keyword"));
    let depth: Vec<usize> = labels(Task::Depth, 100).iter().map(|e| e.label).collect();
    assert_eq!(depth, [2, 2, 3, 3, 3, 4, 4, 4, 3, 2, 5, 5, 6, 6, 6, 4, 4]);
}

#[test]
fn tree_distances_of_add() {
    // Token indices: def=0 add=1 (=2 a=3 b=5 x=10 a=12 return=15 x=16.
    let d: HashMap<(usize, usize), usize> = labels(Task::Distance, 1000)
        .iter()
        .map(|e| ((e.a, e.b.unwrap()), e.label + 2))
        .collect();
    assert_eq!(d[&(0, 1)], 2); // def - add: siblings under function_definition
    assert_eq!(d[&(0, 2)], 3); // def - ( inside parameters
    assert_eq!(d[&(0, 5)], 4); // def - b inside default_parameter
    assert_eq!(d[&(0, 10)], 5); // def - x of the assignment
    assert_eq!(d[&(0, 12)], 6); // def - a of a + b
    assert_eq!(d[&(15, 16)], 2); // return - x
    assert_eq!(d[&(15, 12)], 6); // return - a (LCA = block)
                                 // Only keywords are `a`; b ranges over every other token; d in 2..=6 kept.
    assert!(d.keys().all(|&(a, b)| (a == 0 || a == 15) && a != b));
    assert_eq!(d.len(), 32, "{d:?}"); // 2 keywords x 16 others, all within 2..6
    let ids: Vec<_> = labels(Task::DistanceId, 1000);
    assert!(ids
        .iter()
        .all(|e| [1, 3, 5, 10, 12, 14, 16].contains(&e.b.unwrap())));
    assert_eq!(ids.len(), 14);
}

#[test]
fn dfg_pairs_of_add() {
    let ex = labels(Task::Dfg, 1000);
    let names = Task::Dfg.classes();
    let by: HashMap<(usize, usize), &str> = ex
        .iter()
        .map(|e| ((e.a, e.b.unwrap()), names[e.label].as_str()))
        .collect();
    assert_eq!(by[&(10, 12)], "computedFrom");
    assert_eq!(by[&(10, 14)], "computedFrom");
    assert_eq!(by[&(12, 3)], "comesFrom");
    assert_eq!(by[&(14, 5)], "comesFrom");
    assert_eq!(by[&(16, 10)], "comesFrom");
    // 5 edges + 5 sampled `none` pairs.
    assert_eq!(ex.len(), 10);
    assert_eq!(by.values().filter(|&&v| v == "none").count(), 5);
    let e = ex.iter().find(|e| (e.a, e.b) == (10, Some(12))).unwrap();
    assert_eq!(e.key, "x\u{1f}a");
}

#[test]
fn siblings_are_balanced_and_match_the_motif_graph() {
    let ex = labels(Task::Siblings, 1000);
    let pos: Vec<_> = ex.iter().filter(|e| e.label == 1).collect();
    let neg = ex.len() - pos.len();
    assert_eq!(pos.len(), neg);
    // def -> {add, (, a, ",", ), :}; return -> {x}: 7 positives.
    assert_eq!(pos.len(), 7);
    assert!(pos.iter().any(|e| e.a == 15 && e.b == Some(16)));
    let ids = labels(Task::SiblingsId, 1000);
    // def -> add, def -> a (parameters' leaf child: motif rule b), return -> x.
    assert!(ids.iter().filter(|e| e.label == 1).count() >= 2);
    assert!(labels(Task::Siblings, 4).len() <= 4);
}

#[test]
fn control_labels_are_per_string_and_follow_the_label_distribution() {
    let mut rng = Rng::new(5);
    let mut ex = Vec::new();
    for i in 0..20000 {
        let key = format!("w{}", rng.below(4000));
        let u = rng.f64();
        let label = if u < 0.6 {
            0
        } else if u < 0.9 {
            1
        } else {
            2
        };
        ex.push(Example {
            snippet: i / 50,
            a: 0,
            b: None,
            label,
            key,
        });
    }
    let c = control_labels(&ex, 3, 11);
    let mut by_key: HashMap<&str, usize> = HashMap::new();
    for (e, &l) in ex.iter().zip(&c) {
        assert_eq!(
            *by_key.entry(&e.key).or_insert(l),
            l,
            "same string, same label"
        );
    }
    // Distribution over distinct strings matches the task's.
    let n = by_key.len() as f64;
    let share = |k| by_key.values().filter(|&&l| l == k).count() as f64 / n;
    let task_share = |k| ex.iter().filter(|e| e.label == k).count() as f64 / ex.len() as f64;
    for k in 0..3 {
        assert!((share(k) - task_share(k)).abs() < 0.04, "class {k}");
    }
    // Order-independent and seed-dependent.
    let mut rev = ex.clone();
    rev.reverse();
    let mut c2 = control_labels(&rev, 3, 11);
    c2.reverse();
    assert_eq!(c, c2);
    assert_ne!(c, control_labels(&ex, 3, 12));
}

#[test]
fn snippet_split_keeps_snippets_whole_and_pair_split_does_not() {
    let ex: Vec<Example> = (0..1000)
        .map(|i| Example {
            snippet: i / 10,
            a: i % 10,
            b: None,
            label: 0,
            key: String::new(),
        })
        .collect();
    let (tr, te) = split(&ex, Split::Snippet, 0.2, 3);
    assert_eq!(tr.len() + te.len(), 1000);
    assert_eq!(te.len(), 200);
    let test_snips: std::collections::HashSet<_> = te.iter().map(|&i| ex[i].snippet).collect();
    assert!(tr.iter().all(|&i| !test_snips.contains(&ex[i].snippet)));
    let (tr, te) = split(&ex, Split::Pair, 0.2, 3);
    assert_eq!((tr.len(), te.len()), (800, 200));
    let test_snips: std::collections::HashSet<_> = te.iter().map(|&i| ex[i].snippet).collect();
    assert!(tr.iter().any(|&i| test_snips.contains(&ex[i].snippet)));
}

#[test]
fn dfg_labels_follow_the_chosen_graph() {
    use codescope::probe::dataset::label_snippet_with;
    use codescope::syntax::Graph;
    // `y = o.attr`: the study's graph has y <- attr (attribute names are values), the
    // refined one does not (an attribute of an arbitrary object is no variable).
    let syn = parse(
        "def f(o):\n    y = o.attr\n    return y\n",
        Language::Python,
    )
    .unwrap();
    let covered: Vec<usize> = (0..syn.tokens.len()).collect();
    let (y, attr) = (6, 10);
    assert_eq!(
        (syn.tokens[y].text.as_str(), syn.tokens[attr].text.as_str()),
        ("y", "attr")
    );
    let names = Task::Dfg.classes();
    let label = |g: Graph| {
        label_snippet_with(Task::Dfg, &syn, &covered, 0, 1000, g, &mut Rng::new(1))
            .into_iter()
            .find(|e| (e.a, e.b) == (y, Some(attr)))
            .map(|e| names[e.label].clone())
    };
    assert_eq!(label(Graph::Dfg).as_deref(), Some("computedFrom"));
    // In the refined graph the pair is no edge: at most a sampled `none`.
    assert_ne!(label(Graph::DfgRefined).as_deref(), Some("computedFrom"));
    // The default is the study's graph.
    let default = label_snippet(Task::Dfg, &syn, &covered, 0, 1000, &mut Rng::new(1));
    let with = label_snippet_with(
        Task::Dfg,
        &syn,
        &covered,
        0,
        1000,
        Graph::Dfg,
        &mut Rng::new(1),
    );
    assert_eq!(
        default
            .iter()
            .map(|e| (e.a, e.b, e.label))
            .collect::<Vec<_>>(),
        with.iter().map(|e| (e.a, e.b, e.label)).collect::<Vec<_>>()
    );
}
