//! AST-Probe (Hernández López et al. 2022; docs/METHODS.md 4): can a layer's code-token
//! vectors rebuild the snippet's syntax tree?
//!
//! Per snippet, the syntax tree over its code tokens is written as `(d, c, u)`
//! ([`tree`]): for consecutive tokens the height `d` and label `c` of their lowest common
//! ancestor in the binarised tree, and for each token the unary chain `u` above it. A
//! rank-128 projection of the layer's token vectors is trained to predict them
//! ([`train`]: the reference's losses, optimiser and schedule); at test time the tree is
//! rebuilt from the predicted `(d, c, u)` by splitting at the largest `d`, and scored
//! against the gold tree by constituent precision / recall / F1, macro-averaged over the
//! test snippets as the reference does, beside `d` Spearman (per snippet, averaged over
//! snippets whose `d` is not constant), and `c` / `u` accuracy (over all test
//! positions).
//!
//! Data (codescope's choices where the reference differs):
//! - the code tokens are codescope's (docs/METHODS.md 1, source mode, docstrings kept);
//!   with [`AstOptions::paper`] (`--protocol paper`) the text, the model input and the
//!   trees are the paper's instead ([`paper_syntaxes`], [`paper_gold_encoding`]);
//!   vectors are the layer's mean over each token's subwords, each coordinate divided
//!   by its root mean square over the training tokens (Gemma's residual stream has
//!   coordinates in the hundreds; the reference fed raw vectors). Not centred: the
//!   probe has no bias term, and the vectors' mean is what lets `t_k V_u` predict the
//!   common `<empty>` unary label everywhere (centred features leave a linear map
//!   without bias right on only about half the tokens);
//! - snippets with parse errors are left out (the reference's dataset filter), and so
//!   are snippets with fewer than two covered tokens; a snippet longer than
//!   [`AstOptions::max_tokens`] covered tokens keeps its first ones (the tree restricted
//!   to them);
//! - the split is by snippet, the one the structural probe uses (same seed, same test
//!   snippets); 10% of the training snippets are held out for early stopping and the
//!   learning-rate schedule (the reference had a separate validation set);
//! - label sets are every `c` / `u` label of the corpus (the reference's
//!   `get_non_terminals_labels` over all splits).
//!
//! Two baselines make the F1 readable:
//! - **control task** (Hewitt & Liang, as for the other probes): every consecutive pair
//!   of token strings gets a fixed random `d` and `c`, every token string a fixed random
//!   `u`, each drawn (keyed by a hash of the strings and the seed) from the gold labels'
//!   corpus distribution; the same probe is trained on these control trees and scored
//!   against them. A probe that reads structure should do much better on the real trees
//!   than on the control ones, which only a memorising probe can fit; chosen over a
//!   random-projection baseline because it controls for what the probe's own capacity
//!   can memorise from token identity, which is the confound of a learned projection.
//!   `selectivity = F1 - control F1`.
//! - **majority**: the tree predicted without features (all `d` equal, so every range
//!   splits after its first token, a right-branching tree; the commonest `c` and `u`
//!   everywhere), scored against the gold trees: what any F1 must beat.

pub mod train;
pub mod tree;
pub mod view;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

use serde::Serialize;

pub use tree::{Constituent, Encoding, Tree};

use super::dataset::Features;
use super::{hash_str, mix, Rng};
use crate::error::Result;
use crate::syntax::Syntax;

/// Longest snippet (covered tokens) used whole; longer ones keep their first tokens.
pub const MAX_TOKENS: usize = 512;

/// Options of the AST-Probe run.
#[derive(Debug, Clone, Copy)]
pub struct AstOptions {
    /// Training hyper-parameters (rank, learning rate, epochs, ...).
    pub fit: train::FitOptions,
    pub max_tokens: usize,
    /// Share of the training snippets held out for early stopping.
    pub val_fraction: f64,
    /// The paper's gold trees (`--protocol paper`): [`paper_gold_encoding`] instead of
    /// [`gold_encoding`]; the snippets' syntaxes must be those of the paper's
    /// preprocessed text ([`paper_syntaxes`]).
    pub paper: bool,
}

impl Default for AstOptions {
    fn default() -> Self {
        AstOptions {
            fit: train::FitOptions::default(),
            max_tokens: MAX_TOKENS,
            val_fraction: 0.1,
            paper: false,
        }
    }
}

/// Scores of one probe (task or control) on the test snippets.
#[derive(Debug, Clone, Copy, Default, Serialize, PartialEq)]
pub struct AstScores {
    /// Constituent precision, macro-averaged over snippets.
    pub precision: f64,
    pub recall: f64,
    pub f1: f64,
    /// Spearman correlation of predicted and gold `d`, averaged over snippets.
    pub d_spearman: f64,
    /// Share of test positions whose `c` / `u` label is right.
    pub c_accuracy: f64,
    pub u_accuracy: f64,
}

/// AST-Probe at one layer.
#[derive(Debug, Clone, Serialize)]
pub struct AstResult {
    /// Hidden layer; 0 = embeddings.
    pub layer: usize,
    pub rank: usize,
    #[serde(flatten)]
    pub scores: AstScores,
    /// The same probe trained and scored on the control trees.
    pub control: AstScores,
    /// F1 of the featureless right-branching tree with the commonest labels.
    pub majority_f1: f64,
    pub train_snippets: usize,
    pub test_snippets: usize,
    /// Epochs the task probe ran (early stopping).
    pub epochs: usize,
    pub seconds: f64,
    /// The fitted task probe (for rebuilding new snippets' trees). Not serialized.
    #[serde(skip)]
    pub probe: Option<Arc<AstProbe>>,
}

/// A fitted AST-Probe: standardisation, weights and label names.
#[derive(Debug, Clone, PartialEq)]
pub struct AstProbe {
    pub layer: usize,
    /// Longest snippet (leaves) the probe was trained on; longer ones keep their first.
    pub max_tokens: usize,
    /// Per-coordinate root mean square of the training tokens (the divisor).
    rms: Vec<f32>,
    weights: train::ProbeWeights,
    c_labels: Arc<Vec<String>>,
    u_labels: Arc<Vec<String>>,
}

impl AstProbe {
    /// The predicted encoding of a snippet from its raw token vectors at the probe's
    /// layer (`[n, dim]` row-major, `n >= 2`).
    pub fn predict(&self, x: &[f32]) -> Result<Encoding> {
        let z = scale(x, &self.rms);
        let p = self.weights.predict(&z)?;
        let name = |labels: &[String], i: u32| labels.get(i as usize).cloned().unwrap_or_default();
        Ok(Encoding {
            d: p.d.iter().map(|&v| v as f64).collect(),
            c: p.c.iter().map(|&i| name(&self.c_labels, i)).collect(),
            u: p.u.iter().map(|&i| name(&self.u_labels, i)).collect(),
        })
    }

    /// Width of the vectors the probe reads.
    pub fn dim(&self) -> usize {
        self.rms.len()
    }
}

/// Divide every coordinate by its root mean square.
fn scale(x: &[f32], rms: &[f32]) -> Vec<f32> {
    let mut out = x.to_vec();
    for row in out.chunks_exact_mut(rms.len().max(1)) {
        row.iter_mut().zip(rms).for_each(|(v, r)| *v /= r);
    }
    out
}

/// Per-coordinate root mean square of `x` (`[n, dim]`), floored at 1e-6.
fn rms(x: &[f32], dim: usize) -> Vec<f32> {
    let mut sq = vec![0f64; dim];
    let mut n = 0usize;
    for row in x.chunks_exact(dim.max(1)) {
        sq.iter_mut()
            .zip(row)
            .for_each(|(s, &v)| *s += v as f64 * v as f64);
        n += 1;
    }
    sq.iter()
        .map(|s| ((s / n.max(1) as f64).sqrt().max(1e-6)) as f32)
        .collect()
}

/// One usable snippet: its gold and control encodings over its first covered tokens.
#[derive(Debug, Clone)]
pub struct SnippetTree {
    pub snippet: usize,
    /// Number of leading covered tokens used (rows of the features).
    pub n: usize,
    pub gold: Encoding,
    pub control: Encoding,
}

/// The corpus side of an AST-Probe run (layer-independent): usable snippets, label
/// sets and the split.
#[derive(Debug, Clone)]
pub struct Prepared {
    pub trees: Vec<SnippetTree>,
    pub c_labels: Arc<Vec<String>>,
    pub u_labels: Arc<Vec<String>>,
    /// Indices into `trees`.
    pub train: Vec<usize>,
    pub val: Vec<usize>,
    pub test: Vec<usize>,
}

/// The gold encoding of snippet `syn` over its first `max_tokens` covered tokens
/// (`covered`: syntax-token index of each feature row); `None` for snippets with parse
/// errors or fewer than two tokens.
pub fn gold_encoding(syn: &Syntax, covered: &[usize], max_tokens: usize) -> Option<Encoding> {
    if !syn.errors.is_empty() {
        return None;
    }
    tree::encode(syn, &covered[..covered.len().min(max_tokens)])
}

/// The paper's preprocessing of every snippet (`--protocol paper`): its comment and
/// docstring removal ([`crate::syntax::remove_comments_and_docstrings_astprobe`]), then
/// codescope's parse of the text left, whose code tokens the model reads (joined by
/// single spaces, [`crate::analysis::hidden::hidden_states_joined`]). `None` where the
/// removal fails (Python's `tokenize` raises: the paper's dataset filter drops such
/// snippets) or nothing parses.
pub fn paper_syntaxes(snippets: &[crate::corpus::Snippet]) -> Vec<Option<Syntax>> {
    snippets
        .iter()
        .enumerate()
        .map(|(i, s)| {
            match crate::syntax::remove_comments_and_docstrings_astprobe(&s.code, s.language) {
                Ok(text) => crate::syntax::parse(&text, s.language)
                    .ok()
                    .filter(|x| !x.tokens.is_empty()),
                Err(e) => {
                    tracing::debug!(snippet = i, error = %e, "AST-Probe paper protocol: snippet dropped");
                    None
                }
            }
        })
        .collect()
}

/// The paper's gold encoding of a snippet (`--protocol paper`): AST-Probe's own tree of
/// the preprocessed text `syn.source` ([`crate::syntax::astprobe_tree`]: the 2022
/// grammars' shapes, Java rooted at the method) over its first `max_tokens` covered
/// tokens. `None` for snippets with parse errors, fewer than two tokens, or whose leaves
/// are not exactly codescope's tokens (a comment the preprocessing left, a string piece
/// outside a string).
pub fn paper_gold_encoding(syn: &Syntax, covered: &[usize], max_tokens: usize) -> Option<Encoding> {
    if !syn.errors.is_empty() {
        return None;
    }
    let tree = crate::syntax::astprobe_tree(&syn.source, syn.language).ok()??;
    let same = tree.leaves.len() == syn.tokens.len()
        && tree
            .leaves
            .iter()
            .zip(&syn.tokens)
            .all(|(&(s, e), t)| s == t.start && e == t.end);
    if !same {
        tracing::debug!(
            leaves = tree.leaves.len(),
            tokens = syn.tokens.len(),
            "AST-Probe paper protocol: the paper's leaves are not the code tokens, snippet dropped"
        );
        return None;
    }
    // Leaf k is token k.
    tree::encode_astprobe(&tree, &covered[..covered.len().min(max_tokens)])
}

/// One snippet's gold tree as `probe --gold FILE` writes it.
#[derive(Debug, Clone, Serialize)]
pub struct GoldTree {
    /// Index of the snippet in the corpus.
    pub snippet: usize,
    /// Where it comes from (`path:line`).
    pub origin: String,
    pub language: crate::syntax::Language,
    /// The text the tree is of: the snippet (default protocol, which the model reads as
    /// it is), or the paper's preprocessed text (`--protocol paper`; the model reads
    /// `tokens` joined by single spaces).
    pub text: String,
    /// The leaves: the code tokens, in source order.
    pub tokens: Vec<String>,
    /// Height of the lowest common ancestor of leaves `i` and `i + 1`.
    pub d: Vec<u32>,
    /// Its label (`<sep>` joins a fused unary chain, `<empty>` a binarisation node).
    pub c: Vec<String>,
    /// The unary chain above each leaf (`<empty>` for none).
    pub u: Vec<String>,
}

/// The gold trees of a prepared corpus, for `probe --gold FILE`.
pub fn gold_trees(
    prep: &Prepared,
    syntaxes: &[Option<Syntax>],
    features: &Features,
    snippets: &[crate::corpus::Snippet],
) -> Vec<GoldTree> {
    prep.trees
        .iter()
        .filter_map(|t| {
            let syn = syntaxes[t.snippet].as_ref()?;
            let covered = &features.snippets[t.snippet].tokens[..t.n];
            Some(GoldTree {
                snippet: t.snippet,
                origin: snippets
                    .get(t.snippet)
                    .map(|s| s.origin.clone())
                    .unwrap_or_default(),
                language: syn.language,
                text: syn.source.clone(),
                tokens: covered
                    .iter()
                    .map(|&k| syn.tokens[k].text.clone())
                    .collect(),
                d: t.gold.d.iter().map(|&v| v as u32).collect(),
                c: t.gold.c.clone(),
                u: t.gold.u.clone(),
            })
        })
        .collect()
}

/// Draw from `values` (with repeats, i.e. the empirical distribution) keyed by `key`.
fn keyed<'a, T>(values: &'a [T], key: &str, seed: u64) -> &'a T {
    let h = mix(hash_str(key) ^ mix(seed ^ 0xA57_C0DE));
    &values[(h % values.len() as u64) as usize]
}

/// Encodings, control encodings, label sets and split of a corpus.
pub fn prepare(
    syntaxes: &[Option<Syntax>],
    features: &Features,
    test_fraction: f64,
    seed: u64,
    opts: &AstOptions,
) -> Prepared {
    let mut trees = Vec::new();
    let mut keys: Vec<Vec<String>> = Vec::new();
    for (s, syn) in syntaxes.iter().enumerate() {
        let Some(syn) = syn else { continue };
        let covered = &features.snippets[s].tokens;
        let gold = if opts.paper {
            paper_gold_encoding(syn, covered, opts.max_tokens)
        } else {
            gold_encoding(syn, covered, opts.max_tokens)
        };
        let Some(gold) = gold else {
            continue;
        };
        let n = gold.len();
        keys.push(
            covered[..n]
                .iter()
                .map(|&t| syn.tokens[t].text.clone())
                .collect(),
        );
        trees.push(SnippetTree {
            snippet: s,
            n,
            control: gold.clone(),
            gold,
        });
    }
    // Control labels: empirical distributions of the gold labels (sorted, so the draw
    // does not depend on corpus order beyond the multiset).
    let mut all_d: Vec<f64> = trees.iter().flat_map(|t| t.gold.d.clone()).collect();
    let mut all_c: Vec<String> = trees.iter().flat_map(|t| t.gold.c.clone()).collect();
    let mut all_u: Vec<String> = trees.iter().flat_map(|t| t.gold.u.clone()).collect();
    all_d.sort_by(f64::total_cmp);
    all_c.sort();
    all_u.sort();
    if !all_d.is_empty() {
        for (t, k) in trees.iter_mut().zip(&keys) {
            for i in 0..t.n - 1 {
                let pair = format!("{}\u{1f}{}", k[i], k[i + 1]);
                t.control.d[i] = *keyed(&all_d, &pair, seed);
                t.control.c[i] = keyed(&all_c, &pair, seed ^ 1).clone();
            }
            for (i, key) in k.iter().enumerate() {
                t.control.u[i] = keyed(&all_u, key, seed ^ 2).clone();
            }
        }
    }
    let labels = |f: &dyn Fn(&SnippetTree) -> Vec<&String>| -> Vec<String> {
        let mut v: Vec<String> = trees.iter().flat_map(f).cloned().collect();
        v.sort();
        v.dedup();
        v
    };
    let c_labels = labels(&|t| t.gold.c.iter().chain(&t.control.c).collect());
    let u_labels = labels(&|t| t.gold.u.iter().chain(&t.control.u).collect());
    // The structural probe's split: same shuffle of the usable snippets.
    let mut order: Vec<usize> = (0..trees.len()).collect();
    Rng::new(seed ^ 0x5_9117).shuffle(&mut order);
    let n_test =
        ((order.len() as f64 * test_fraction).round() as usize).min(order.len().saturating_sub(1));
    let (test, rest) = order.split_at(n_test);
    let mut rest = rest.to_vec();
    Rng::new(seed ^ 0x5_72C7A).shuffle(&mut rest);
    let n_val = if rest.len() >= 10 {
        ((rest.len() as f64 * opts.val_fraction).round() as usize).max(1)
    } else {
        0
    };
    let (val, train) = rest.split_at(n_val);
    Prepared {
        trees,
        c_labels: Arc::new(c_labels),
        u_labels: Arc::new(u_labels),
        train: train.to_vec(),
        val: val.to_vec(),
        test: test.to_vec(),
    }
}

/// Scores of predicted encodings against gold ones (parallel slices).
pub fn score(gold: &[&Encoding], pred: &[Encoding]) -> AstScores {
    let mut s = AstScores::default();
    let (mut rho_n, mut c_hit, mut c_n, mut u_hit, mut u_n) = (0usize, 0, 0, 0, 0);
    for (g, p) in gold.iter().zip(pred) {
        let (Some(gt), Some(pt)) = (tree::rebuild(g), tree::rebuild(p)) else {
            continue;
        };
        let (pr, re, f1) = tree::prf(&gt.constituents(), &pt.constituents());
        s.precision += pr;
        s.recall += re;
        s.f1 += f1;
        if let Some(r) = super::fit::spearman(&p.d, &g.d) {
            s.d_spearman += r;
            rho_n += 1;
        }
        c_hit += g.c.iter().zip(&p.c).filter(|(a, b)| a == b).count();
        c_n += g.c.len();
        u_hit += g.u.iter().zip(&p.u).filter(|(a, b)| a == b).count();
        u_n += g.u.len();
    }
    let n = gold.len().max(1) as f64;
    s.precision /= n;
    s.recall /= n;
    s.f1 /= n;
    s.d_spearman /= rho_n.max(1) as f64;
    s.c_accuracy = c_hit as f64 / c_n.max(1) as f64;
    s.u_accuracy = u_hit as f64 / u_n.max(1) as f64;
    s
}

/// The featureless prediction for `n` leaves (see the module doc).
fn majority_encoding(n: usize, c: &str, u: &str) -> Encoding {
    Encoding {
        d: vec![0.0; n.saturating_sub(1)],
        c: vec![c.to_string(); n.saturating_sub(1)],
        u: vec![u.to_string(); n],
    }
}

fn most_common<'a>(it: impl Iterator<Item = &'a String>) -> String {
    let mut counts: HashMap<&String, usize> = HashMap::new();
    for s in it {
        *counts.entry(s).or_default() += 1;
    }
    let mut v: Vec<_> = counts.into_iter().collect();
    // Most frequent, ties by name (deterministic).
    v.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(b.0)));
    v.first().map(|x| x.0.clone()).unwrap_or_default()
}

/// Train the task and control probes at `layer` and score both on the test snippets.
pub fn run_layer(
    prep: &Prepared,
    features: &Features,
    layer: usize,
    opts: &AstOptions,
    cancel: &dyn Fn() -> bool,
) -> Result<AstResult> {
    let start = Instant::now();
    let dim = features.dim;
    let rows =
        |t: &SnippetTree| -> &[f32] { &features.snippets[t.snippet].layers[layer][..t.n * dim] };
    let all: Vec<f32> = prep
        .train
        .iter()
        .chain(&prep.val)
        .flat_map(|&i| rows(&prep.trees[i]).iter().copied())
        .collect();
    let rms = rms(&all, dim);
    drop(all);
    let c_id: HashMap<&str, u32> = prep
        .c_labels
        .iter()
        .enumerate()
        .map(|(i, s)| (s.as_str(), i as u32))
        .collect();
    let u_id: HashMap<&str, u32> = prep
        .u_labels
        .iter()
        .enumerate()
        .map(|(i, s)| (s.as_str(), i as u32))
        .collect();
    let sample = |i: usize, control: bool| -> train::Sample {
        let t = &prep.trees[i];
        let e = if control { &t.control } else { &t.gold };
        train::Sample {
            x: scale(rows(t), &rms),
            n: t.n,
            d: e.d.iter().map(|&v| v as f32).collect(),
            c: e.c.iter().map(|s| c_id[s.as_str()]).collect(),
            u: e.u.iter().map(|s| u_id[s.as_str()]).collect(),
        }
    };
    let mut fitted = Vec::with_capacity(2);
    for control in [false, true] {
        let tr: Vec<train::Sample> = prep.train.iter().map(|&i| sample(i, control)).collect();
        let va: Vec<train::Sample> = prep.val.iter().map(|&i| sample(i, control)).collect();
        let (w, epochs) = train::fit(
            &tr.iter().collect::<Vec<_>>(),
            &va.iter().collect::<Vec<_>>(),
            dim,
            prep.c_labels.len(),
            prep.u_labels.len(),
            &opts.fit,
            cancel,
        )?;
        let probe = AstProbe {
            layer,
            max_tokens: opts.max_tokens,
            rms: rms.clone(),
            weights: w,
            c_labels: prep.c_labels.clone(),
            u_labels: prep.u_labels.clone(),
        };
        let mut pred = Vec::with_capacity(prep.test.len());
        for &i in &prep.test {
            pred.push(probe.predict(rows(&prep.trees[i]))?);
        }
        let gold: Vec<&Encoding> = prep
            .test
            .iter()
            .map(|&i| {
                let t = &prep.trees[i];
                if control {
                    &t.control
                } else {
                    &t.gold
                }
            })
            .collect();
        fitted.push((score(&gold, &pred), probe, epochs));
    }
    let (control, _, _) = fitted.pop().expect("two fits");
    let (scores, probe, epochs) = fitted.pop().expect("two fits");
    let train_trees = prep.train.iter().chain(&prep.val).map(|&i| &prep.trees[i]);
    let c_major = most_common(train_trees.clone().flat_map(|t| &t.gold.c));
    let u_major = most_common(train_trees.flat_map(|t| &t.gold.u));
    let gold: Vec<&Encoding> = prep.test.iter().map(|&i| &prep.trees[i].gold).collect();
    let naive: Vec<Encoding> = gold
        .iter()
        .map(|g| majority_encoding(g.len(), &c_major, &u_major))
        .collect();
    Ok(AstResult {
        layer,
        rank: opts.fit.rank,
        scores,
        control,
        majority_f1: score(&gold, &naive).f1,
        train_snippets: prep.train.len() + prep.val.len(),
        test_snippets: prep.test.len(),
        epochs,
        seconds: start.elapsed().as_secs_f64(),
        probe: Some(Arc::new(probe)),
    })
}
