//! The study protocol (`probe --protocol study`, docs/METHODS.md 4): the DirectProbe
//! datasets of "A Critical Study of What Code-LLMs (Do Not) Learn" as its scripts build
//! them (stg-tud/code-LLM-critical-evaluation, `attention/create_dp_dataset.py` for
//! `distance`, `siblings`, `dfg`; `attention/create_dp_id_dataset.py` for `distance_id`,
//! `siblings_id`; the inputs from `attention/save_word_embedding.py`).
//!
//! Per snippet the study works on its code tokens: the snippet after its comment and
//! docstring removal, less the tokens starting with `#`, `"""` or `'''`, in order (paper
//! mode, [`crate::syntax::paper_input`]; hidden states of the space-joined text, mean over
//! subwords, layer 0 = embeddings). On those tokens, deterministically:
//! - `distance` (`_id`): every ordered pair `(row, col)`, `row != col`, whose row's
//!   tree-sitter type is in [`KEYWORD_TYPES`] (`_id`: and whose col's type is
//!   `identifier`), with tree distance 2..6, in row-major order. The study measured a
//!   string from its first quote leaf (row: the minimum over the string's leaves), one
//!   level below the `string` node: [`StudySnippet::from_syntax`] adds 1 per string end,
//!   and gives a string that leaf's type, `"`.
//! - `siblings` (`_id`): per row of a listed type, its AST-motif columns (label 1) and a
//!   `random.sample` of as many non-edge columns (label 0; all of them when there are not
//!   more); `_id` keeps, of both, the identifier columns (after the sampling, as the study).
//! - `dfg`: per row of any type, its `comesFrom` columns (1), `computedFrom` columns
//!   (-1; on a pair with both, the edge listed last wins, as `dfg_adj[row, col] = rel`)
//!   and a sample of `ceil(max(#comesFrom, #computedFrom) / 2)` other columns (0).
//!
//! Then per class a `random.sample` of 1,300 (distance) or 1,500 (siblings, dfg) entries,
//! each class sorted, the classes concatenated and stably sorted by snippet; the split is
//! `ShuffleSplit(n_splits=1, test_size=0.2, random_state=0)`: numpy's legacy
//! `RandomState(0).permutation(n)` ([`shuffle_split`], MT19937 ported), the first
//! `ceil(0.2 n)` indices for testing. Before all that, the study draws 160 / 450 / 100 /
//! 300 / 130 snippets ([`snippet_count`]).
//!
//! What is not the study's: its `random` calls are unseeded (Python's `random` module,
//! seeded from the OS at start-up), so no run of the study can be repeated; codescope
//! draws the same samples from the same candidate sets with its seeded stream
//! ([`super::Rng`]). Where a class has fewer candidates than the count (the study's
//! `random.sample` would raise), all of them are kept; likewise for the snippet draw.

use super::dataset::{Example, Features, PairFeatures, Task, TaskData};
use super::Rng;
use crate::syntax::{paper_input, DfgKind, Graph, Syntax};

/// The study's `selected_token_types`, kept with its quirk: the missing comma after
/// `'true'` makes Python join the adjacent literals into `'trueor'`, so neither `True`
/// nor `or` counts.
pub const KEYWORD_TYPES: [&str; 21] = [
    "def", "for", "if", "none", "else", "false", "trueor", "and", "return", "not", "elif", "with",
    "try", "raise", "except", "break", "while", "assert", "print", "continue", "class",
];

/// Entries per class the study samples.
pub fn per_class(task: Task) -> usize {
    match task {
        Task::Distance | Task::DistanceId => 1300,
        _ => 1500,
    }
}

/// Snippets the study draws before building the task's pairs.
pub fn snippet_count(task: Task) -> usize {
    match task {
        Task::Distance => 160,
        Task::DistanceId => 450,
        Task::Siblings => 100,
        Task::SiblingsId => 300,
        _ => 130,
    }
}

/// The study's pair features: `h_a - h_b` for distance, `[h_a; h_b]` otherwise.
pub fn pair_features(task: Task) -> PairFeatures {
    match task {
        Task::Distance | Task::DistanceId => PairFeatures::Diff,
        _ => PairFeatures::Concat,
    }
}

/// The study's label values in its class order (the order its scripts concatenate the
/// sampled classes): distance 2..6; siblings 0, 1; dfg comesFrom 1, computedFrom -1, none 0.
pub fn class_values(task: Task) -> &'static [i64] {
    match task {
        Task::Distance | Task::DistanceId => &[2, 3, 4, 5, 6],
        Task::Siblings | Task::SiblingsId => &[0, 1],
        _ => &[1, -1, 0],
    }
}

/// codescope's class index (into [`Task::classes`]) of a study label.
pub fn class_index(task: Task, value: i64) -> usize {
    match task {
        Task::Distance | Task::DistanceId => (value - 2) as usize,
        Task::Siblings | Task::SiblingsId => value as usize,
        // classes: none, comesFrom, computedFrom
        _ => match value {
            1 => 1,
            -1 => 2,
            _ => 0,
        },
    }
}

/// One snippet as the study's dataset scripts see it, over its code tokens.
#[derive(Debug, Clone, Default)]
pub struct StudySnippet {
    /// The tree-sitter type of each token (`code_token_info[i]['type']`).
    pub types: Vec<String>,
    /// `n x n` tree distances, row-major (`tree_dist`).
    pub dist: Vec<usize>,
    /// AST-motif edges `(row, col)` (`ast_graph == 1`).
    pub motif: Vec<(usize, usize)>,
    /// Data-flow edges `(row, col, value)` (1 comesFrom, -1 computedFrom) in the order the
    /// study assigns them (the last one of a pair wins).
    pub dfg: Vec<(usize, usize, i64)>,
    /// Whether the study's `dfg` task uses the snippet (its data-flow token list has the
    /// code tokens' length).
    pub dfg_ok: bool,
}

impl StudySnippet {
    /// The study's view of a parsed snippet and, per study token, its index in `syn`'s
    /// tokens. `None` when the study's cleaning does not apply (the study dropped such
    /// snippets).
    pub fn from_syntax(syn: &Syntax) -> Option<(StudySnippet, Vec<usize>)> {
        let p = paper_input(syn);
        let c = p.cleaned_syntax()?;
        let orig: Vec<usize> = (0..syn.tokens.len())
            .filter(|&t| p.spans[t].is_some())
            .collect();
        let ci: Vec<usize> = orig
            .iter()
            .map(|&t| p.cleaned_index(t))
            .collect::<Option<_>>()?;
        let n = ci.len();
        let mut study_of = vec![None; c.tokens.len()];
        for (k, &i) in ci.iter().enumerate() {
            study_of[i] = Some(k);
        }
        let is_str: Vec<usize> = ci
            .iter()
            .map(|&i| usize::from(c.tokens[i].kind == "string"))
            .collect();
        let mut dist = vec![0; n * n];
        for a in 0..n {
            for b in 0..n {
                if a != b {
                    dist[a * n + b] = c.tree_distance(ci[a], ci[b]) + is_str[a] + is_str[b];
                }
            }
        }
        let map = |i: usize, j: usize| Some((study_of[i]?, study_of[j]?));
        let motif = c
            .graphs
            .edges(Graph::AstMotif)
            .into_iter()
            .filter_map(|(i, j)| map(i, j))
            .collect();
        let dfg = c
            .graphs
            .dfg_edges(Graph::Dfg)
            .unwrap_or(&[])
            .iter()
            .filter_map(|&(i, j, k)| {
                let (a, b) = map(i, j)?;
                Some((a, b, if k == DfgKind::ComputedFrom { -1 } else { 1 }))
            })
            .collect();
        let snippet = StudySnippet {
            // A string's row is its first leaf, the opening quote, whose type the study's
            // grammar names `"` (whatever the quote character).
            types: ci
                .iter()
                .map(|&i| match c.tokens[i].kind.as_str() {
                    "string" => "\"".to_string(),
                    k => k.to_string(),
                })
                .collect(),
            dist,
            motif,
            dfg,
            dfg_ok: n == c.tokens.len(),
        };
        Some((snippet, orig))
    }

    fn len(&self) -> usize {
        self.types.len()
    }
}

/// The candidates of one row before any sampling: `fixed` entries `(col, label)` are all
/// kept; `take` of the `pool` columns are sampled (all of them when `take >= pool.len()`)
/// and labelled `pool_label`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RowCandidates {
    pub row: usize,
    pub fixed: Vec<(usize, i64)>,
    pub pool: Vec<usize>,
    pub take: usize,
    pub pool_label: i64,
}

fn listed(t: &str) -> bool {
    KEYWORD_TYPES.contains(&t)
}

/// The study's deterministic candidates of one snippet for `task` (see the module docs),
/// rows ascending. `dfg` of a snippet with `!dfg_ok` has none.
pub fn candidates(task: Task, s: &StudySnippet) -> Vec<RowCandidates> {
    let n = s.len();
    let is_id = |c: usize| s.types[c] == "identifier";
    let mut out = Vec::new();
    match task {
        Task::Distance | Task::DistanceId => {
            for row in (0..n).filter(|&r| listed(&s.types[r])) {
                let fixed: Vec<(usize, i64)> = (0..n)
                    .filter(|&col| col != row && (task == Task::Distance || is_id(col)))
                    .map(|col| (col, s.dist[row * n + col] as i64))
                    .filter(|&(_, d)| (2..=6).contains(&d))
                    .collect();
                out.push(RowCandidates {
                    row,
                    fixed,
                    pool: Vec::new(),
                    take: 0,
                    pool_label: 0,
                });
            }
        }
        Task::Siblings | Task::SiblingsId => {
            let mut cols = vec![Vec::new(); n];
            let mut motif = s.motif.clone();
            motif.sort_unstable();
            motif.dedup();
            for &(r, c) in &motif {
                cols[r].push(c);
            }
            for row in (0..n).filter(|&r| listed(&s.types[r])) {
                let ones = &cols[row];
                let pool: Vec<usize> = (0..n).filter(|&c| !ones.contains(&c) && c != row).collect();
                out.push(RowCandidates {
                    row,
                    fixed: ones.iter().map(|&c| (c, 1)).collect(),
                    take: ones.len().min(pool.len()),
                    pool,
                    pool_label: 0,
                });
            }
        }
        Task::Dfg => {
            if !s.dfg_ok {
                return out;
            }
            let mut adj = vec![0i64; n * n];
            for &(r, c, v) in &s.dfg {
                adj[r * n + c] = v;
            }
            for row in 0..n {
                let r = &adj[row * n..(row + 1) * n];
                let comes: Vec<usize> = (0..n).filter(|&c| r[c] == 1).collect();
                let comp: Vec<usize> = (0..n).filter(|&c| r[c] == -1).collect();
                let pool: Vec<usize> = (0..n).filter(|&c| r[c] == 0 && c != row).collect();
                let k = comes.len().max(comp.len()).div_ceil(2);
                out.push(RowCandidates {
                    row,
                    fixed: comes
                        .iter()
                        .map(|&c| (c, 1))
                        .chain(comp.iter().map(|&c| (c, -1)))
                        .collect(),
                    take: k.min(pool.len()),
                    pool,
                    pool_label: 0,
                });
            }
        }
        Task::Category | Task::Depth => {}
    }
    out
}

/// `sorted(random.sample(v, k))` with `choose(len, k)` picking the `k` indices (all of
/// `v` when `k >= len`, where the study's `random.sample` would raise or keep all).
fn sample_sorted<T: Ord + Clone>(
    v: &[T],
    k: usize,
    choose: &mut dyn FnMut(usize, usize) -> Vec<usize>,
) -> Vec<T> {
    let mut out: Vec<T> = if k < v.len() {
        choose(v.len(), k)
            .into_iter()
            .map(|i| v[i].clone())
            .collect()
    } else {
        v.to_vec()
    };
    out.sort();
    out
}

/// One entry of a study dataset: snippet (index into the caller's list), study-token
/// row and column, study label value.
pub type Entry = (usize, (usize, usize), i64);

/// The study's entries for `task` over `snippets` (`(snippet id, its study view)`, ids
/// ascending), sampled with `rng` and ordered as the study orders them.
pub fn entries(task: Task, snippets: &[(usize, &StudySnippet)], rng: &mut Rng) -> Vec<Entry> {
    entries_with(task, snippets, &mut |len, k| {
        let mut v: Vec<usize> = (0..len).collect();
        rng.shuffle(&mut v);
        v.truncate(k);
        v
    })
}

/// [`entries`] with every `random.sample(population, k)` of the study answered by
/// `choose(len(population), k)` (indices into the population, in the study's order of
/// calls: per row the sampled columns, then per class the sampled entries).
pub fn entries_with(
    task: Task,
    snippets: &[(usize, &StudySnippet)],
    choose: &mut dyn FnMut(usize, usize) -> Vec<usize>,
) -> Vec<Entry> {
    let values = class_values(task);
    let mut by_class: Vec<Vec<Entry>> = vec![Vec::new(); values.len()];
    let class_of = |v: i64| values.iter().position(|&x| x == v);
    for &(id, s) in snippets {
        for rc in candidates(task, s) {
            let sampled = sample_sorted(&rc.pool, rc.take, choose);
            let keep = |c: usize| task != Task::SiblingsId || s.types[c] == "identifier";
            let mut push = |c: usize, v: i64| {
                if let (true, Some(k)) = (keep(c), class_of(v)) {
                    by_class[k].push((id, (rc.row, c), v));
                }
            };
            rc.fixed.iter().for_each(|&(c, v)| push(c, v));
            sampled.iter().for_each(|&c| push(c, rc.pool_label));
        }
    }
    let mut all: Vec<Entry> = Vec::new();
    for c in &by_class {
        all.extend(sample_sorted(c, per_class(task), choose));
    }
    all.sort_by_key(|e| e.0);
    all
}

/// MT19937 as numpy's legacy `RandomState` seeds and runs it.
pub struct Mt19937 {
    mt: [u32; 624],
    i: usize,
}

impl Mt19937 {
    /// `RandomState(seed)` for an integer seed (`init_genrand`).
    pub fn new(seed: u32) -> Self {
        let mut mt = [0u32; 624];
        mt[0] = seed;
        for i in 1..624 {
            mt[i] = 1_812_433_253u32
                .wrapping_mul(mt[i - 1] ^ (mt[i - 1] >> 30))
                .wrapping_add(i as u32);
        }
        Mt19937 { mt, i: 624 }
    }

    /// `genrand_int32`.
    pub fn next_u32(&mut self) -> u32 {
        if self.i >= 624 {
            for k in 0..624 {
                let y = (self.mt[k] & 0x8000_0000) | (self.mt[(k + 1) % 624] & 0x7fff_ffff);
                let mut v = self.mt[(k + 397) % 624] ^ (y >> 1);
                if y & 1 == 1 {
                    v ^= 0x9908_b0df;
                }
                self.mt[k] = v;
            }
            self.i = 0;
        }
        let mut y = self.mt[self.i];
        self.i += 1;
        y ^= y >> 11;
        y ^= (y << 7) & 0x9d2c_5680;
        y ^= (y << 15) & 0xefc6_0000;
        y ^ (y >> 18)
    }

    /// numpy's `random_interval(max)`: uniform on `0..=max` by masked rejection.
    fn interval(&mut self, max: u64) -> u64 {
        if max == 0 {
            return 0;
        }
        let mut mask = max;
        for s in [1, 2, 4, 8, 16, 32] {
            mask |= mask >> s;
        }
        if max <= 0xffff_ffff {
            loop {
                let v = u64::from(self.next_u32()) & mask;
                if v <= max {
                    return v;
                }
            }
        }
        loop {
            let hi = u64::from(self.next_u32());
            let v = ((hi << 32) | u64::from(self.next_u32())) & mask;
            if v <= max {
                return v;
            }
        }
    }

    /// `RandomState.permutation(n)`: `arange(n)` shuffled by the legacy `shuffle`
    /// (for i from n-1 down to 1, swap i with `random_interval(i)`).
    pub fn permutation(&mut self, n: usize) -> Vec<usize> {
        let mut v: Vec<usize> = (0..n).collect();
        for i in (1..n).rev() {
            let j = self.interval(i as u64) as usize;
            v.swap(i, j);
        }
        v
    }
}

/// scikit-learn's `ShuffleSplit(n_splits=1, test_size=0.2, random_state=0)` on `n`
/// samples: `(train, test)` indices in its order.
pub fn shuffle_split(n: usize) -> (Vec<usize>, Vec<usize>) {
    let n_test = ((0.2 * n as f64).ceil() as usize).min(n);
    let perm = Mt19937::new(0).permutation(n);
    let (test, train) = perm.split_at(n_test);
    (train.to_vec(), test.to_vec())
}

/// A study task over a corpus: its examples (positions into the snippets' covered tokens,
/// as [`TaskData`]) in the study's order and the study's split (indices into them).
pub struct StudyTask {
    pub data: TaskData,
    pub train: Vec<usize>,
    pub test: Vec<usize>,
}

/// Build `task` the study's way over a traced corpus (`None` for the token tasks, which
/// the study's DirectProbe scripts do not have). A snippet is used when the study's
/// cleaning applies and every one of its study tokens has hidden states (the study
/// dropped snippets whose subwords did not add up to its tokens).
pub fn build_task(
    task: Task,
    syntaxes: &[Option<Syntax>],
    features: &Features,
    seed: u64,
) -> Option<StudyTask> {
    if !task.is_pair() {
        return None;
    }
    let mut views = Vec::new();
    for (s, syn) in syntaxes.iter().enumerate() {
        let Some(syn) = syn else { continue };
        let Some((view, orig)) = StudySnippet::from_syntax(syn) else {
            continue;
        };
        let covered = &features.snippets[s].tokens;
        let pos: Option<Vec<usize>> = orig.iter().map(|t| covered.binary_search(t).ok()).collect();
        if let Some(pos) = pos.filter(|p| !p.is_empty()) {
            views.push((s, view, pos, orig, syn));
        }
    }
    let mut rng = Rng::new(seed ^ 0x57ad_u64 ^ (task as u64) << 32);
    // random.sample(idxs, K), sorted
    let mut pick: Vec<usize> = (0..views.len()).collect();
    rng.shuffle(&mut pick);
    pick.truncate(snippet_count(task));
    pick.sort_unstable();
    let chosen: Vec<(usize, &StudySnippet)> = pick.iter().map(|&v| (v, &views[v].1)).collect();
    let examples: Vec<Example> = entries(task, &chosen, &mut rng)
        .into_iter()
        .map(|(v, (r, c), val)| {
            let (s, _, pos, orig, syn) = &views[v];
            let text = |k: usize| syn.tokens[orig[k]].text.as_str();
            Example {
                snippet: *s,
                a: pos[r],
                b: Some(pos[c]),
                label: class_index(task, val),
                key: format!("{}\u{1f}{}", text(r), text(c)),
            }
        })
        .collect();
    let (train, test) = shuffle_split(examples.len());
    Some(StudyTask {
        data: TaskData {
            task,
            classes: task.classes(),
            examples,
        },
        train,
        test,
    })
}
