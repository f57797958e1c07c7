//! `probe --protocol study` against the study's own dataset scripts.
//!
//! `tests/fixtures/study_dp_datasets.json` was made once by a Python script kept outside
//! the repository: it executes the study's `get_entries_dist` / `get_entries_sib` /
//! `get_enteries_df` (attention/create_dp_dataset.py, and create_dp_id_dataset.py for the
//! `_id` tasks) from their source, fed in memory with the inputs the study's pipeline
//! gives them for six short functions of `assets/` (code tokens after its comment and
//! docstring removal; tree distances and token types by save_word_embedding.py's code;
//! AST motif and data flow by its graph code from its repository), with `random.sample`
//! replaced by "the first k, in population order" (the study's own calls are unseeded),
//! and records every sampling call. `shuffle_split` is scikit-learn's
//! `ShuffleSplit(n_splits=1, test_size=0.2, random_state=0)`.
//!
//! Checked: (1) codescope's port of the recipe, on the study's own inputs, gives the
//! study's entries pair for pair, with the same per-row samples (population size and k)
//! and class sizes; (2) codescope's study view of the same snippets (its parser, paper
//! mode, graphs) equals those inputs, so on them the whole chain matches; (3) the split
//! (MT19937 and numpy's legacy permutation ported) equals scikit-learn's.

use std::collections::HashMap;

use codescope::probe::study::{self, RowCandidates, StudySnippet};
use codescope::probe::Task;
use codescope::syntax::{parse, Language};
use serde::Deserialize;

#[derive(Deserialize)]
struct Fixture {
    snippets: Vec<String>,
    study_tokens: Vec<Vec<String>>,
    tree_dist_rows: Vec<HashMap<String, Vec<usize>>>,
    types: Vec<Vec<String>>,
    ast_motif: Vec<Vec<(usize, usize)>>,
    dfg: Vec<Vec<(usize, usize, i64)>>,
    tasks: HashMap<String, TaskFixture>,
    shuffle_split: HashMap<String, SplitFixture>,
}

#[derive(Deserialize)]
struct TaskFixture {
    entries: Vec<(usize, usize, usize, i64)>,
    row_samples: Vec<(usize, usize)>,
    class_sizes: Vec<usize>,
}

#[derive(Deserialize)]
struct SplitFixture {
    train: Vec<usize>,
    test: Vec<usize>,
    n_train: usize,
    n_test: usize,
    train_sum_sq: u64,
    test_sum_sq: u64,
}

fn fixture() -> Fixture {
    serde_json::from_str(include_str!("../fixtures/study_dp_datasets.json")).unwrap()
}

const TASKS: [Task; 5] = [
    Task::Distance,
    Task::DistanceId,
    Task::Siblings,
    Task::SiblingsId,
    Task::Dfg,
];

/// The study's view of snippet `i` from the fixture (rows of unlisted types, never read,
/// are left at 0).
fn study_view(f: &Fixture, i: usize) -> StudySnippet {
    let n = f.types[i].len();
    let mut dist = vec![0; n * n];
    for (r, row) in &f.tree_dist_rows[i] {
        let r: usize = r.parse().unwrap();
        dist[r * n..(r + 1) * n].copy_from_slice(row);
    }
    StudySnippet {
        types: f.types[i].clone(),
        dist,
        motif: f.ast_motif[i].clone(),
        dfg: f.dfg[i].clone(),
        dfg_ok: true,
    }
}

/// The rows where the study calls `random.sample`: (population size, k).
fn row_samples(rows: &[RowCandidates]) -> Vec<(usize, usize)> {
    rows.iter()
        .filter(|r| r.take < r.pool.len())
        .map(|r| (r.pool.len(), r.take))
        .collect()
}

fn check_recipe(f: &Fixture, views: &[StudySnippet], what: &str) {
    let ids: Vec<(usize, &StudySnippet)> = views.iter().enumerate().collect();
    for task in TASKS {
        let want = &f.tasks[task.name()];
        let samples: Vec<(usize, usize)> = views
            .iter()
            .flat_map(|v| row_samples(&study::candidates(task, v)))
            .collect();
        assert_eq!(
            samples,
            want.row_samples,
            "{what} {}: per-row samples",
            task.name()
        );
        let got = study::entries_with(task, &ids, &mut |_, k| (0..k).collect());
        let got: Vec<(usize, usize, usize, i64)> =
            got.into_iter().map(|(s, (r, c), l)| (s, r, c, l)).collect();
        assert_eq!(got, want.entries, "{what} {}: entries", task.name());
        let sizes: Vec<usize> = study::class_values(task)
            .iter()
            .map(|&v| got.iter().filter(|e| e.3 == v).count())
            .collect();
        assert_eq!(
            sizes,
            want.class_sizes,
            "{what} {}: class sizes",
            task.name()
        );
    }
}

#[test]
fn study_recipe_matches_the_scripts_on_their_own_inputs() {
    let f = fixture();
    let views: Vec<StudySnippet> = (0..f.snippets.len()).map(|i| study_view(&f, i)).collect();
    assert!(f.tasks.values().all(|t| !t.entries.is_empty()));
    check_recipe(&f, &views, "study inputs");
}

#[test]
fn codescope_study_view_matches_the_study_inputs() {
    let f = fixture();
    let mut views = Vec::new();
    for (i, code) in f.snippets.iter().enumerate() {
        let syn = parse(code, Language::Python).unwrap();
        let (view, orig) = StudySnippet::from_syntax(&syn).expect("the study's cleaning applies");
        let texts: Vec<&str> = orig.iter().map(|&t| syn.tokens[t].text.as_str()).collect();
        assert_eq!(texts, f.study_tokens[i], "snippet {i}: study tokens");
        assert_eq!(view.types, f.types[i], "snippet {i}: token types");
        let n = view.types.len();
        for (r, row) in &f.tree_dist_rows[i] {
            let r: usize = r.parse().unwrap();
            assert_eq!(
                &view.dist[r * n..(r + 1) * n],
                &row[..],
                "snippet {i}: tree distances of row {r}"
            );
        }
        let mut motif = view.motif.clone();
        motif.sort_unstable();
        motif.dedup();
        assert_eq!(motif, f.ast_motif[i], "snippet {i}: AST motif");
        let mut adj = vec![0i64; n * n];
        for &(r, c, v) in &view.dfg {
            adj[r * n + c] = v;
        }
        let dfg: Vec<(usize, usize, i64)> = (0..n * n)
            .filter(|&k| adj[k] != 0)
            .map(|k| (k / n, k % n, adj[k]))
            .collect();
        assert_eq!(dfg, f.dfg[i], "snippet {i}: data flow");
        assert!(view.dfg_ok);
        views.push(view);
    }
    check_recipe(&f, &views, "codescope inputs");
}

#[test]
fn shuffle_split_is_scikit_learns() {
    let f = fixture();
    for (n, want) in &f.shuffle_split {
        let n: usize = n.parse().unwrap();
        let (train, test) = study::shuffle_split(n);
        assert_eq!(
            (train.len(), test.len()),
            (want.n_train, want.n_test),
            "n = {n}"
        );
        assert_eq!(
            &train[..want.train.len()],
            &want.train[..],
            "n = {n}: train"
        );
        assert_eq!(&test[..want.test.len()], &want.test[..], "n = {n}: test");
        let sum = |v: &[usize]| {
            v.iter()
                .enumerate()
                .map(|(i, &x)| (i * x) as u64)
                .sum::<u64>()
        };
        assert_eq!(
            (sum(&train), sum(&test)),
            (want.train_sum_sq, want.test_sum_sq),
            "n = {n}"
        );
    }
}

#[test]
fn keyword_list_keeps_the_missing_comma() {
    assert!(study::KEYWORD_TYPES.contains(&"trueor"));
    assert!(!study::KEYWORD_TYPES.contains(&"true"));
    assert!(!study::KEYWORD_TYPES.contains(&"or"));
    assert_eq!(study::KEYWORD_TYPES.len(), 21);
}
