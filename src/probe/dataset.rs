//! Probing datasets (docs/METHODS.md 4): code-token hidden states per layer and labelled
//! examples per task.
//!
//! Per snippet: `syntax::parse` → the analysis pipeline's hidden states (source mode) →
//! subword alignment → `H_tok[l,i]` = mean over the subwords of code token `i`
//! ([`crate::analysis::hidden`]). Code tokens with no subword (beyond a truncated window) are
//! dropped, and so are examples touching them.
//!
//! Label definitions (codescope's choices where docs/METHODS.md leaves them open):
//! - `category`: token → keyword / operator / delimiter / literal / identifier.
//! - `depth`: token → leaf depth, classes `1 .. 9` and `10+` (depth ≥ 10 pooled; a leaf
//!   is never at depth 0).
//! - `distance` / `distance_id`: pair (a = keyword, b = any other token / an identifier)
//!   → tree distance `d(a,b)` as class `2..6`. Distinct leaves are never at distance < 2
//!   (a leaf has no leaf child); pairs with `d > 6` are DROPPED, not pooled, as in the
//!   study's 2..6 classes.
//! - `siblings` / `siblings_id`: pair (a = keyword, b = any other token / identifier)
//!   → 1 if `a -> b` is an AST-motif edge, else 0. Per snippet, as many negatives as
//!   positives are sampled from the non-edges (balanced).
//! - `dfg`: ordered identifier pair `(i, j)` → `comesFrom` / `computedFrom` (a DFG edge
//!   `i -> j`) or `none`; per snippet as many `none` pairs as edges are sampled.
//!
//! Pairs are sampled with a seeded RNG, at most [`DatasetOptions::max_pairs`] per snippet
//! and task. Pair features are `h_a - h_b` (docs/METHODS.md 4), [`PairFeatures::Concat`]
//! gives `[h_a; h_b]`.

use std::collections::HashMap;

use serde::Serialize;

use super::Rng;
use crate::error::Result;
use crate::model::LoadedModel;
use crate::syntax::{self, Category, Coarse, DfgKind, Graph, Syntax};

/// A probing task (docs/METHODS.md 4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, clap::ValueEnum)]
#[serde(rename_all = "snake_case")]
#[value(rename_all = "snake_case")]
pub enum Task {
    Category,
    Depth,
    Distance,
    /// `distance_id` (also accepted: `distance-id`).
    #[value(alias = "distance-id")]
    DistanceId,
    Siblings,
    /// `siblings_id` (also accepted: `siblings-id`).
    #[value(alias = "siblings-id")]
    SiblingsId,
    Dfg,
}

impl Task {
    /// Every task, in report order.
    pub const ALL: [Task; 7] = [
        Task::Category,
        Task::Depth,
        Task::Distance,
        Task::DistanceId,
        Task::Siblings,
        Task::SiblingsId,
        Task::Dfg,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Task::Category => "category",
            Task::Depth => "depth",
            Task::Distance => "distance",
            Task::DistanceId => "distance_id",
            Task::Siblings => "siblings",
            Task::SiblingsId => "siblings_id",
            Task::Dfg => "dfg",
        }
    }

    /// True for tasks over token pairs.
    pub fn is_pair(self) -> bool {
        !matches!(self, Task::Category | Task::Depth)
    }

    /// Class names, indexed by label.
    pub fn classes(self) -> Vec<String> {
        let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect();
        match self {
            Task::Category => s(&["keyword", "operator", "delimiter", "literal", "identifier"]),
            Task::Depth => (0..=MAX_DEPTH_CLASS)
                .map(|d| {
                    if d == MAX_DEPTH_CLASS {
                        format!("{d}+")
                    } else {
                        d.to_string()
                    }
                })
                .collect(),
            Task::Distance | Task::DistanceId => (MIN_DISTANCE..=MAX_DISTANCE)
                .map(|d| d.to_string())
                .collect(),
            Task::Siblings | Task::SiblingsId => s(&["0", "1"]),
            Task::Dfg => s(&["none", "comesFrom", "computedFrom"]),
        }
    }
}

/// Depth class that pools every deeper leaf (`10+`).
pub const MAX_DEPTH_CLASS: usize = 10;
/// Tree-distance classes `MIN_DISTANCE ..= MAX_DISTANCE`.
pub const MIN_DISTANCE: usize = 2;
pub const MAX_DISTANCE: usize = 6;

/// How a pair `(a, b)` becomes one feature vector.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum PairFeatures {
    /// `h_a - h_b` (default).
    #[default]
    Diff,
    /// `[h_a; h_b]`.
    Concat,
}

impl PairFeatures {
    /// The name `--pair-features` takes.
    pub fn name(self) -> &'static str {
        match self {
            PairFeatures::Diff => "diff",
            PairFeatures::Concat => "concat",
        }
    }
}

pub use crate::analysis::hidden::{token_hidden, SnippetHidden};

/// Hidden states of a whole corpus, per snippet.
#[derive(Debug, Clone)]
pub struct Features {
    pub dim: usize,
    /// Hidden layers including the embeddings (= model layers + 1).
    pub layers: usize,
    pub snippets: Vec<SnippetHidden>,
}

impl Features {
    /// The hidden state of the `pos`-th covered token of snippet `s` at `layer`.
    pub fn vector(&self, s: usize, layer: usize, pos: usize) -> &[f32] {
        &self.snippets[s].layers[layer][pos * self.dim..(pos + 1) * self.dim]
    }
}

/// Parse every snippet; snippets that fail to parse or have no code token are `None`
/// (they are skipped by everything downstream).
pub fn parse_all(snippets: &[crate::corpus::Snippet]) -> Vec<Option<Syntax>> {
    snippets
        .iter()
        .map(|s| {
            syntax::parse(&s.code, s.language)
                .ok()
                .filter(|x| !x.tokens.is_empty())
        })
        .collect()
}

/// Trace one parsed snippet (source mode) and aggregate its hidden states to code tokens
/// (the analysis pipeline's [`crate::analysis::hidden::hidden_states`]).
pub fn snippet_hidden(model: &LoadedModel, syn: &Syntax) -> Result<SnippetHidden> {
    crate::analysis::hidden::hidden_states(model, syn)
}

/// One labelled example: a token (`b == None`) or an ordered pair, by position in
/// [`SnippetHidden::tokens`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Example {
    pub snippet: usize,
    pub a: usize,
    pub b: Option<usize>,
    pub label: usize,
    /// The string the control task keys on: the token text, or `"a\u{1f}b"` for pairs.
    pub key: String,
}

/// The examples of one task over a corpus.
#[derive(Debug, Clone)]
pub struct TaskData {
    pub task: Task,
    pub classes: Vec<String>,
    pub examples: Vec<Example>,
}

/// Options of [`build_task`].
#[derive(Debug, Clone, Copy)]
pub struct DatasetOptions {
    /// At most this many pairs per snippet and pair task.
    pub max_pairs: usize,
    pub seed: u64,
    /// The data-flow graph the `dfg` task's labels come from (`Graph::Dfg`, the study's,
    /// or `Graph::DfgRefined`).
    pub dfg_graph: Graph,
}

impl Default for DatasetOptions {
    fn default() -> Self {
        DatasetOptions {
            max_pairs: 40,
            seed: 0,
            dfg_graph: Graph::Dfg,
        }
    }
}

/// Label the tokens / pairs of one snippet for `task`. `covered` are the syntax-token
/// indices that have hidden states (position k in `covered` = row k of the features);
/// returned examples use those positions. The `dfg` task's labels come from the study's
/// data-flow graph ([`label_snippet_with`] picks another).
pub fn label_snippet(
    task: Task,
    syn: &Syntax,
    covered: &[usize],
    snippet: usize,
    max_pairs: usize,
    rng: &mut Rng,
) -> Vec<Example> {
    label_snippet_with(task, syn, covered, snippet, max_pairs, Graph::Dfg, rng)
}

/// [`label_snippet`] with the `dfg` task's labels taken from `dfg_graph` (`Graph::Dfg`
/// or `Graph::DfgRefined`; any other graph gives the `dfg` task no edges).
pub fn label_snippet_with(
    task: Task,
    syn: &Syntax,
    covered: &[usize],
    snippet: usize,
    max_pairs: usize,
    dfg_graph: Graph,
    rng: &mut Rng,
) -> Vec<Example> {
    let toks = &syn.tokens;
    let pos: HashMap<usize, usize> = covered.iter().enumerate().map(|(k, &t)| (t, k)).collect();
    let tok_ex = |k: usize, label: usize| Example {
        snippet,
        a: k,
        b: None,
        label,
        key: toks[covered[k]].text.clone(),
    };
    let pair_ex = |i: usize, j: usize, label: usize| Example {
        snippet,
        a: pos[&i],
        b: Some(pos[&j]),
        label,
        key: format!("{}\u{1f}{}", toks[i].text, toks[j].text),
    };
    let is_kw = |i: usize| toks[i].category == Category::Keyword;
    let is_id = |i: usize| toks[i].coarse == Coarse::Identifier;
    match task {
        Task::Category => (0..covered.len())
            .map(|k| {
                let c = toks[covered[k]].category;
                tok_ex(k, Category::ALL.iter().position(|x| *x == c).unwrap_or(0))
            })
            .collect(),
        Task::Depth => (0..covered.len())
            .map(|k| tok_ex(k, toks[covered[k]].depth.min(MAX_DEPTH_CLASS)))
            .collect(),
        Task::Distance | Task::DistanceId => {
            let want_id = task == Task::DistanceId;
            let mut cands = Vec::new();
            for &a in covered.iter().filter(|&&a| is_kw(a)) {
                for &b in covered {
                    if b == a || (want_id && !is_id(b)) {
                        continue;
                    }
                    let d = syn.tree_distance(a, b);
                    if (MIN_DISTANCE..=MAX_DISTANCE).contains(&d) {
                        cands.push((a, b, d - MIN_DISTANCE));
                    }
                }
            }
            rng.shuffle(&mut cands);
            cands.truncate(max_pairs);
            cands.sort();
            cands
                .into_iter()
                .map(|(a, b, l)| pair_ex(a, b, l))
                .collect()
        }
        Task::Siblings | Task::SiblingsId => {
            let want_id = task == Task::SiblingsId;
            let (mut pos_p, mut neg_p) = (Vec::new(), Vec::new());
            for &a in covered.iter().filter(|&&a| is_kw(a)) {
                for &b in covered {
                    if b == a || (want_id && !is_id(b)) {
                        continue;
                    }
                    if syn.graphs.contains(Graph::AstMotif, a, b) {
                        pos_p.push((a, b));
                    } else {
                        neg_p.push((a, b));
                    }
                }
            }
            balanced(pos_p, vec![neg_p], max_pairs, rng)
                .into_iter()
                .map(|(a, b, l)| pair_ex(a, b, l))
                .collect()
        }
        Task::Dfg => {
            let ids: Vec<usize> = covered.iter().copied().filter(|&i| is_id(i)).collect();
            let mut kinds: HashMap<(usize, usize), DfgKind> = HashMap::new();
            for &(i, j, k) in syn.graphs.dfg_edges(dfg_graph).unwrap_or(&[]) {
                kinds.entry((i, j)).or_insert(k);
            }
            let (mut cf, mut cp, mut none) = (Vec::new(), Vec::new(), Vec::new());
            for &i in &ids {
                for &j in &ids {
                    if i == j {
                        continue;
                    }
                    match kinds.get(&(i, j)) {
                        Some(DfgKind::ComesFrom) => cf.push((i, j, 1)),
                        Some(DfgKind::ComputedFrom) => cp.push((i, j, 2)),
                        None => none.push((i, j, 0)),
                    }
                }
            }
            // As many `none` pairs as edges; edges themselves capped at 2/3 of the budget.
            let mut edges: Vec<(usize, usize, usize)> = cf.into_iter().chain(cp).collect();
            rng.shuffle(&mut edges);
            // Two thirds of the budget, never overflowing (any --max-pairs is allowed).
            edges.truncate(max_pairs / 3 * 2 + max_pairs % 3 * 2 / 3);
            rng.shuffle(&mut none);
            none.truncate(edges.len().min(max_pairs - edges.len()));
            let mut all: Vec<_> = edges.into_iter().chain(none).collect();
            all.sort();
            all.into_iter().map(|(a, b, l)| pair_ex(a, b, l)).collect()
        }
    }
}

/// Positives (label 1) and an equal number of sampled negatives (label 0), at most
/// `max` pairs in all, sorted.
fn balanced(
    mut pos: Vec<(usize, usize)>,
    neg: Vec<Vec<(usize, usize)>>,
    max: usize,
    rng: &mut Rng,
) -> Vec<(usize, usize, usize)> {
    let mut neg: Vec<(usize, usize)> = neg.into_iter().flatten().collect();
    rng.shuffle(&mut pos);
    rng.shuffle(&mut neg);
    let n = pos.len().min(neg.len()).min(max / 2);
    let mut out: Vec<_> = pos[..n]
        .iter()
        .map(|&(a, b)| (a, b, 1))
        .chain(neg[..n].iter().map(|&(a, b)| (a, b, 0)))
        .collect();
    out.sort();
    out
}

/// The pair-sampling stream of snippet `s` for `task` under `seed`: one stream per
/// (seed, task, snippet), so adding a task or a snippet does not change the pairs sampled
/// for the others.
pub fn task_rng(task: Task, seed: u64, s: usize) -> Rng {
    Rng::new(seed ^ (task as u64 + 1).wrapping_mul(0x9E37_79B9) ^ (s as u64) << 20)
}

/// Append the feature vector of the pair `(h_a, h_b)` to `out`, as `pair` combines them.
pub fn push_pair(out: &mut Vec<f32>, ha: &[f32], hb: &[f32], pair: PairFeatures) {
    match pair {
        PairFeatures::Diff => out.extend(ha.iter().zip(hb).map(|(x, y)| x - y)),
        PairFeatures::Concat => {
            out.extend_from_slice(ha);
            out.extend_from_slice(hb);
        }
    }
}

/// Label every snippet for `task`. `syntaxes[s]` and `features.snippets[s]` belong to
/// the same snippet; unparsed snippets (`None`) contribute nothing.
pub fn build_task(
    task: Task,
    syntaxes: &[Option<Syntax>],
    features: &Features,
    opts: &DatasetOptions,
) -> TaskData {
    let mut examples = Vec::new();
    for (s, syn) in syntaxes.iter().enumerate() {
        let Some(syn) = syn else { continue };
        let mut rng = task_rng(task, opts.seed, s);
        examples.extend(label_snippet_with(
            task,
            syn,
            &features.snippets[s].tokens,
            s,
            opts.max_pairs,
            opts.dfg_graph,
            &mut rng,
        ));
    }
    TaskData {
        task,
        classes: task.classes(),
        examples,
    }
}

/// The feature matrix `[examples.len(), width]` of `examples` at `layer`, row-major.
pub fn feature_matrix(
    features: &Features,
    examples: &[Example],
    layer: usize,
    pair: PairFeatures,
) -> (Vec<f32>, usize) {
    let d = features.dim;
    let width = match (examples.first().and_then(|e| e.b), pair) {
        (Some(_), PairFeatures::Concat) => 2 * d,
        _ => d,
    };
    let mut out = Vec::with_capacity(examples.len() * width);
    for e in examples {
        let ha = features.vector(e.snippet, layer, e.a);
        match e.b {
            None => out.extend_from_slice(ha),
            Some(b) => push_pair(&mut out, ha, features.vector(e.snippet, layer, b), pair),
        }
    }
    (out, width)
}
