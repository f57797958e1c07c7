//! Probing hidden representations (docs/METHODS.md 4): which syntactic facts can a small
//! classifier read off a layer's code-token hidden states?
//!
//! Flow ([`run`]): snippets → [`dataset::parse_all`] + [`features`] (trace in source
//! mode, mean over subwords, cached on disk by [`cache`]) → per task
//! [`dataset::build_task`] → train/test split ([`Split`], by snippet by default) → per
//! layer a probe ([`train::train_eval`]) on the task and on its control task → one
//! [`ProbeResult`] per (task, layer). With [`Protocol::Study`] the features are those of
//! the paper-mode text (cached apart) and [`study::build_task`] replaces the dataset and
//! the split: the study's DirectProbe datasets, its pair features, its `ShuffleSplit`.
//! With [`Protocol::Paper`] (AST-Probe only) the snippets are first preprocessed as the
//! AST-Probe paper's code does ([`astprobe::paper_syntaxes`]), the model reads their code
//! tokens joined by spaces (cached apart) and the gold trees are the paper's.
//!
//! Control task (Hewitt & Liang 2019): every distinct key string (token text; for pairs
//! the two texts) gets a fixed label drawn from the task's empirical label distribution
//! with a hash of (seed, task, string) — the same string always gets the same control
//! label, whatever the order of examples. Same probe, same split; `selectivity =
//! accuracy - control_accuracy`.
//!
//! AST-Probe (`ProbeKind::Ast`, [`astprobe`]) replaces the task loop: one tree probe
//! and its control per layer, a [`ProbeResult`] row each (`task` = `probe` = `"ast"`,
//! `accuracy` = constituent F1) plus the full [`astprobe::AstResult`] in
//! [`ProbeReport::ast`].
//!
//! Nothing here but `train`, `astprobe` and `cache` touches a tensor; [`ProbeReport`] is plain data
//! for the CLI, the exporters and the TUI.

pub mod agreement;
pub mod astprobe;
pub mod baseline;
pub mod bundled;
pub mod cache;
pub mod dataset;
pub mod directprobe;
pub mod fit;
pub mod label;
pub mod shard;
pub mod structural;
pub mod study;
pub mod train;

use std::time::Instant;

use serde::Serialize;

use crate::corpus::Snippet;
use crate::error::Result;
use crate::model::{LoadedModel, ModelInfo};
pub use agreement::twin_agreement;
pub use dataset::{Example, Features, PairFeatures, Task, TaskData};
pub use train::{ProbeKind, TrainOptions};

use crate::rng::mix;
/// Seeded SplitMix64 stream (sampling, splits, control labels, weight init).
pub use crate::rng::Rng;

/// FNV-1a of a string, for keyed control labels.
fn hash_str(s: &str) -> u64 {
    s.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ b as u64).wrapping_mul(0x0100_0000_01b3)
    })
}

/// Control labels (Hewitt & Liang): for each example, the label of its key string,
/// drawn once per string from `examples`' label distribution (over `classes` labels).
pub fn control_labels(examples: &[Example], classes: usize, seed: u64) -> Vec<usize> {
    let mut counts = vec![0usize; classes.max(1)];
    for e in examples {
        counts[e.label.min(classes.saturating_sub(1))] += 1;
    }
    let total = counts.iter().sum::<usize>().max(1) as f64;
    let cdf: Vec<f64> = counts
        .iter()
        .scan(0.0, |acc, &c| {
            *acc += c as f64 / total;
            Some(*acc)
        })
        .collect();
    examples
        .iter()
        .map(|e| {
            let u = (mix(hash_str(&e.key) ^ mix(seed ^ 0x0C04_7801)) >> 11) as f64
                / (1u64 << 53) as f64;
            cdf.iter()
                .position(|&c| u < c)
                .unwrap_or(classes.saturating_sub(1))
        })
        .collect()
}

/// Whose recipe builds the pair datasets (docs/METHODS.md 4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Protocol {
    /// codescope's (default): source-mode features, pairs sampled per snippet, split by
    /// snippet.
    #[default]
    Codescope,
    /// The study's DirectProbe datasets ([`study`]): paper-mode features, its candidate
    /// pairs, class counts, pair features and `ShuffleSplit` by pair. `--split`,
    /// `--pair-features`, `--max-pairs` and `--graph` do not apply. Not with
    /// [`ProbeKind::Ast`].
    Study,
    /// AST-Probe's paper pipeline ([`ProbeKind::Ast`] only): the model reads each
    /// snippet's code tokens after the paper's comment and docstring removal, joined by
    /// single spaces, and the gold trees are the paper's (2022 grammars' shapes, Java
    /// rooted at the method; [`astprobe::paper_syntaxes`],
    /// [`astprobe::paper_gold_encoding`]). Features are cached apart.
    Paper,
}

impl Protocol {
    /// Why `self` does not go with probe `kind` (a one-line message naming the right
    /// protocol), if it does not.
    pub fn mismatch(self, kind: ProbeKind) -> Option<&'static str> {
        match (self, kind) {
            (Protocol::Paper, k) if k != ProbeKind::Ast => Some(
                "`paper` is AST-Probe's paper pipeline and needs --probe ast (the study's \
                 DirectProbe datasets are --protocol study)",
            ),
            (Protocol::Study, ProbeKind::Ast) => Some(
                "`study` is the study's DirectProbe datasets, not AST-Probe; for the AST-Probe \
                 paper's preprocessing and trees use --protocol paper",
            ),
            _ => None,
        }
    }
}

fn is_codescope(p: &Protocol) -> bool {
    *p == Protocol::Codescope
}

/// How examples are split into train and test.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Split {
    /// Whole snippets go to train or test (default; no leakage between pairs of one
    /// snippet).
    #[default]
    Snippet,
    /// Examples are shuffled individually, as the study did (leaky: a snippet's tokens
    /// are on both sides).
    Pair,
}

/// Indices of the train and test examples: `test_fraction` of the snippets (or of the
/// examples for [`Split::Pair`]), chosen with `seed`.
pub fn split(
    examples: &[Example],
    how: Split,
    test_fraction: f64,
    seed: u64,
) -> (Vec<usize>, Vec<usize>) {
    let mut rng = Rng::new(seed ^ 0x5_9117);
    match how {
        Split::Pair => {
            let mut idx: Vec<usize> = (0..examples.len()).collect();
            rng.shuffle(&mut idx);
            let n_test = (examples.len() as f64 * test_fraction).round() as usize;
            let (te, tr) = idx.split_at(n_test);
            let (mut tr, mut te) = (tr.to_vec(), te.to_vec());
            tr.sort_unstable();
            te.sort_unstable();
            (tr, te)
        }
        Split::Snippet => {
            let mut snips: Vec<usize> = examples.iter().map(|e| e.snippet).collect();
            snips.sort_unstable();
            snips.dedup();
            rng.shuffle(&mut snips);
            let n_test = ((snips.len() as f64 * test_fraction).round() as usize)
                .min(snips.len().saturating_sub(1));
            let test: std::collections::HashSet<usize> = snips[..n_test].iter().copied().collect();
            (0..examples.len()).partition(|&i| !test.contains(&examples[i].snippet))
        }
    }
}

/// One (task, probe, layer) measurement. `clusters` is DirectProbe's number of clusters
/// on the task (`None` for the other probes); for DirectProbe, `train_size` / `test_size`
/// are the sampled points actually used.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct ProbeResult {
    pub task: String,
    pub probe: String,
    /// Hidden layer; 0 = embeddings.
    pub layer: usize,
    pub accuracy: f64,
    pub control_accuracy: f64,
    pub selectivity: f64,
    pub clusters: Option<usize>,
    pub train_size: usize,
    pub test_size: usize,
    /// Wall time of both fits (task + control).
    pub seconds: f64,
    /// Share of the test set's majority class (chance level of a constant guess).
    pub majority: f64,
}

/// Where the corpus came from.
#[derive(Debug, Clone, Serialize)]
pub struct CorpusInfo {
    pub source: String,
    pub snippets: usize,
}

/// The `probe --json` document.
#[derive(Debug, Clone, Serialize)]
pub struct ProbeReport {
    pub model: ModelInfo,
    pub corpus: CorpusInfo,
    pub split: Split,
    pub pair_features: PairFeatures,
    /// Whose datasets (omitted from the JSON for codescope's).
    #[serde(skip_serializing_if = "is_codescope")]
    pub protocol: Protocol,
    pub results: Vec<ProbeResult>,
    /// Structural-probe results per layer (empty unless requested).
    pub structural: Vec<structural::StructuralResult>,
    /// AST-Probe results per layer (`--probe ast`; omitted from the JSON when empty).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub ast: Vec<astprobe::AstResult>,
    /// AST-Probe's gold tree of every usable snippet (`--probe ast`), for
    /// `probe --gold FILE`. Not serialized in the report.
    #[serde(skip)]
    pub ast_gold: Vec<astprobe::GoldTree>,
    /// The fitted task probes (not the control ones), one per result, for labelling
    /// new snippets (the explorer's per-token prediction). Not serialized.
    #[serde(skip)]
    pub probes: Vec<LayerProbe>,
}

/// A fitted probe of one task at one hidden layer.
#[derive(Debug, Clone)]
pub struct LayerProbe {
    pub task: Task,
    pub layer: usize,
    pub classifier: std::sync::Arc<train::Classifier>,
}

/// Everything [`run`] needs.
pub struct RunSpec<'a> {
    pub model: &'a LoadedModel,
    pub snippets: &'a [Snippet],
    pub corpus_name: String,
    pub tasks: Vec<Task>,
    pub kind: ProbeKind,
    /// Whose datasets (codescope's by default; [`Protocol::Study`]: the study's).
    pub protocol: Protocol,
    pub split: Split,
    pub pair_features: PairFeatures,
    pub seed: u64,
    pub max_pairs: usize,
    /// The data-flow graph of the `dfg` task's labels (`Graph::Dfg` by default).
    pub dfg_graph: crate::syntax::Graph,
    pub test_fraction: f64,
    /// Hidden layers to probe (0 = embeddings); `None` = all.
    pub layers: Option<Vec<usize>>,
    /// Root of the feature cache (`None`: no cache).
    pub cache_root: Option<std::path::PathBuf>,
    pub train: TrainOptions,
    /// Also run the structural probe (Hewitt & Manning) at every probed layer.
    pub structural: Option<structural::StructuralOptions>,
    /// Polled between snippets and between fits; returning `true` stops the run with
    /// `Error::Cancelled` (the explorer's latest-wins worker).
    pub cancel: Option<&'a (dyn Fn() -> bool + Sync)>,
}

/// Seed of pair sampling, splits, control labels and probe initialisation by default.
pub const DEFAULT_SEED: u64 = 0;
/// At most this many pairs per snippet and pair task by default.
pub const DEFAULT_MAX_PAIRS: usize = 40;
/// Share of snippets (or examples) held out for testing.
pub const DEFAULT_TEST_FRACTION: f64 = 0.2;

impl<'a> RunSpec<'a> {
    /// A run of every task with the defaults the CLI documents (linear probes, split by
    /// snippet, `h_a - h_b` pair features, every layer, no cache, no structural probe);
    /// callers change the fields they set.
    pub fn new(model: &'a LoadedModel, snippets: &'a [Snippet], corpus_name: String) -> Self {
        RunSpec {
            model,
            snippets,
            corpus_name,
            tasks: Task::ALL.to_vec(),
            kind: ProbeKind::Linear,
            protocol: Protocol::Codescope,
            split: Split::Snippet,
            pair_features: PairFeatures::Diff,
            seed: DEFAULT_SEED,
            max_pairs: DEFAULT_MAX_PAIRS,
            dfg_graph: crate::syntax::Graph::Dfg,
            test_fraction: DEFAULT_TEST_FRACTION,
            layers: None,
            cache_root: None,
            train: TrainOptions::default(),
            structural: None,
            cancel: None,
        }
    }
}

impl RunSpec<'_> {
    fn check_cancel(&self) -> Result<()> {
        if self.cancel.is_some_and(|f| f()) {
            return Err(crate::error::Error::Cancelled);
        }
        Ok(())
    }
}

/// Progress events of [`run`] (for a progress bar or the TUI's channel).
#[derive(Debug, Clone)]
pub enum Progress {
    /// Features loaded from the cache.
    Cached,
    /// `done` of `total` snippets traced.
    Traced { done: usize, total: usize },
    /// `done` of `total` probe fits finished; the latest result.
    Fitted {
        done: usize,
        total: usize,
        result: ProbeResult,
    },
    /// The structural probe finished one layer.
    Structural(structural::StructuralResult),
}

/// Hidden states of every snippet, from the cache or by tracing. Snippets that do not
/// parse (or fail to trace) get no tokens.
pub fn features(
    spec: &RunSpec,
    syntaxes: &[Option<crate::syntax::Syntax>],
    progress: &mut dyn FnMut(Progress),
) -> Result<Features> {
    let info = &spec.model.info;
    let layers = info.layers + 1;
    let (mode, suffix) = match spec.protocol {
        Protocol::Codescope => (crate::analysis::Mode::Source, ""),
        Protocol::Study => (crate::analysis::Mode::Paper, "-paper"),
        // Unused: the model reads the preprocessed text's tokens joined by spaces.
        Protocol::Paper => (crate::analysis::Mode::Source, "-astpaper"),
    };
    let dir = spec
        .cache_root
        .as_ref()
        .map(|r| cache::dir(r, &(cache::key(info, spec.snippets) + suffix)));
    if let Some(d) = &dir {
        if let Some(f) = cache::load(d, layers, spec.snippets.len(), info.hidden_size) {
            progress(Progress::Cached);
            return Ok(f);
        }
    }
    let mut snippets = Vec::with_capacity(syntaxes.len());
    for (i, syn) in syntaxes.iter().enumerate() {
        spec.check_cancel()?;
        let h = match syn {
            Some(syn) => match paper_or(spec, syn, mode) {
                Ok(h) => h,
                Err(e) => {
                    tracing::warn!(snippet = i, error = %e, "probe: snippet skipped");
                    empty(layers)
                }
            },
            None => empty(layers),
        };
        snippets.push(h);
        progress(Progress::Traced {
            done: i + 1,
            total: syntaxes.len(),
        });
    }
    let f = Features {
        dim: info.hidden_size,
        layers,
        snippets,
    };
    if let Some(d) = &dir {
        if let Err(e) = cache::save(d, &f) {
            tracing::warn!(error = %e, "probe: feature cache not written");
        }
    }
    Ok(f)
}

/// A snippet's features: under [`Protocol::Paper`] of its code tokens joined by single
/// spaces (AST-Probe's model input), else of the text `mode` feeds.
fn paper_or(
    spec: &RunSpec,
    syn: &crate::syntax::Syntax,
    mode: crate::analysis::Mode,
) -> Result<dataset::SnippetHidden> {
    match spec.protocol {
        Protocol::Paper => crate::analysis::hidden::hidden_states_joined(spec.model, syn),
        _ => crate::analysis::hidden::hidden_states_in(spec.model, syn, mode),
    }
}

fn empty(layers: usize) -> dataset::SnippetHidden {
    dataset::SnippetHidden {
        tokens: Vec::new(),
        layers: vec![Vec::new(); layers],
    }
}

/// Run every task at every layer. Tasks without examples on both sides of the split are
/// skipped (and absent from the report).
pub fn run(spec: &RunSpec, progress: &mut dyn FnMut(Progress)) -> Result<ProbeReport> {
    check_protocol(spec)?;
    let syntaxes = syntaxes(spec);
    let feats = features(spec, &syntaxes, progress)?;
    let layers: Vec<usize> = match &spec.layers {
        Some(v) => v.iter().copied().filter(|&l| l < feats.layers).collect(),
        None => (0..feats.layers).collect(),
    };
    let dopts = dataset::DatasetOptions {
        max_pairs: spec.max_pairs,
        seed: spec.seed,
        dfg_graph: spec.dfg_graph,
    };
    let mut prepared = Vec::new();
    let tasks: &[Task] = if spec.kind == ProbeKind::Ast {
        &[]
    } else {
        &spec.tasks
    };
    for &task in tasks {
        let (data, tr, te, pair) = match spec.protocol {
            Protocol::Codescope => {
                let data = dataset::build_task(task, &syntaxes, &feats, &dopts);
                let (tr, te) = split(&data.examples, spec.split, spec.test_fraction, spec.seed);
                (data, tr, te, spec.pair_features)
            }
            // AST-Probe only (`check_protocol`), which has no tasks.
            Protocol::Paper => continue,
            Protocol::Study => {
                let Some(t) = study::build_task(task, &syntaxes, &feats, spec.seed) else {
                    tracing::warn!(
                        task = task.name(),
                        "probe: the study protocol has no such task, skipped"
                    );
                    continue;
                };
                (t.data, t.train, t.test, study::pair_features(task))
            }
        };
        if tr.is_empty() || te.is_empty() {
            tracing::warn!(task = task.name(), "probe: too few examples, task skipped");
            continue;
        }
        let control = control_labels(&data.examples, data.classes.len(), spec.seed ^ task as u64);
        prepared.push((data, tr, te, control, pair));
    }
    let mut results = Vec::new();
    let mut probes = Vec::new();
    let mut ast = Vec::new();
    let mut ast_gold = Vec::new();
    if spec.kind == ProbeKind::Ast {
        ast_gold = run_ast(
            spec,
            &syntaxes,
            &feats,
            &layers,
            &mut results,
            &mut ast,
            progress,
        )?;
    }
    let total = prepared.len() * layers.len();
    for (data, tr, te, control, pair) in &prepared {
        let pick = |ids: &[usize]| -> Vec<Example> {
            ids.iter().map(|&i| data.examples[i].clone()).collect()
        };
        let (ex_tr, ex_te) = (pick(tr), pick(te));
        let labels = |ids: &[usize], ctl: bool| -> Vec<u32> {
            ids.iter()
                .map(|&i| {
                    if ctl {
                        control[i] as u32
                    } else {
                        data.examples[i].label as u32
                    }
                })
                .collect()
        };
        let (y_tr, y_te) = (labels(tr, false), labels(te, false));
        let (c_tr, c_te) = (labels(tr, true), labels(te, true));
        let k = data.classes.len();
        let mut counts = vec![0usize; k];
        y_te.iter().for_each(|&y| counts[y as usize] += 1);
        let majority = *counts.iter().max().unwrap_or(&0) as f64 / y_te.len().max(1) as f64;
        for &l in &layers {
            spec.check_cancel()?;
            let start = Instant::now();
            let (x_tr, w) = dataset::feature_matrix(&feats, &ex_tr, l, *pair);
            let (x_te, _) = dataset::feature_matrix(&feats, &ex_te, l, *pair);
            let opts = TrainOptions {
                seed: spec.seed ^ (l as u64) << 8,
                ..spec.train
            };
            // (accuracy, clusters, train points, test points, the fitted classifier)
            type Fitted = (f64, Option<usize>, usize, usize, Option<train::Classifier>);
            let fit = |ytr: &[u32], yte: &[u32]| -> Result<Fitted> {
                let (tr_s, te_s) = (
                    train::Labelled { x: &x_tr, y: ytr },
                    train::Labelled { x: &x_te, y: yte },
                );
                if spec.kind == ProbeKind::DirectProbe {
                    let f = directprobe::fit_eval(
                        tr_s,
                        te_s,
                        w,
                        &directprobe::DirectOptions {
                            max_train: opts.dp_max_train,
                            max_test: opts.dp_max_test,
                            seed: opts.seed,
                        },
                    )?;
                    return Ok((
                        f.accuracy,
                        Some(f.clusters),
                        f.train_points,
                        f.test_points,
                        None,
                    ));
                }
                let (f, classifier) = train::train_eval_keep(tr_s, te_s, w, k, &opts)?;
                Ok((f.accuracy, None, ytr.len(), yte.len(), Some(classifier)))
            };
            let (acc, clusters, train_size, test_size, classifier) = fit(&y_tr, &y_te)?;
            let ctl = fit(&c_tr, &c_te)?.0;
            if let Some(classifier) = classifier {
                probes.push(LayerProbe {
                    task: data.task,
                    layer: l,
                    classifier: std::sync::Arc::new(classifier),
                });
            }
            let r = ProbeResult {
                task: data.task.name().into(),
                probe: spec.kind.name().into(),
                layer: l,
                accuracy: acc,
                control_accuracy: ctl,
                selectivity: acc - ctl,
                clusters,
                train_size,
                test_size,
                seconds: start.elapsed().as_secs_f64(),
                majority,
            };
            results.push(r.clone());
            progress(Progress::Fitted {
                done: results.len(),
                total,
                result: r,
            });
        }
    }
    let mut structural_results = Vec::new();
    if let Some(sopts) = &spec.structural {
        let mut snips: Vec<usize> = (0..syntaxes.len())
            .filter(|&s| syntaxes[s].is_some() && feats.snippets[s].tokens.len() >= 2)
            .collect();
        Rng::new(spec.seed ^ 0x5_9117).shuffle(&mut snips);
        let n_test = ((snips.len() as f64 * spec.test_fraction).round() as usize)
            .min(snips.len().saturating_sub(1));
        let (te, tr) = snips.split_at(n_test);
        if !te.is_empty() {
            for &l in &layers {
                spec.check_cancel()?;
                let r = structural::run_layer(
                    &syntaxes,
                    &feats,
                    tr,
                    te,
                    l,
                    &structural::StructuralOptions {
                        seed: spec.seed ^ (l as u64) << 8,
                        ..*sopts
                    },
                )?;
                progress(Progress::Structural(r.clone()));
                structural_results.push(r);
            }
        }
    }
    Ok(ProbeReport {
        model: spec.model.info.clone(),
        corpus: CorpusInfo {
            source: spec.corpus_name.clone(),
            snippets: spec.snippets.len(),
        },
        split: spec.split,
        pair_features: spec.pair_features,
        protocol: spec.protocol,
        results,
        structural: structural_results,
        ast,
        ast_gold,
        probes,
    })
}

/// The protocol must suit the probe ([`Protocol::mismatch`]).
fn check_protocol(spec: &RunSpec) -> Result<()> {
    match spec.protocol.mismatch(spec.kind) {
        Some(reason) => Err(crate::error::Error::Input {
            name: "--protocol".into(),
            reason: reason.into(),
        }),
        None => Ok(()),
    }
}

/// The snippets' syntaxes: of their text, or under [`Protocol::Paper`] of the paper's
/// preprocessed text.
fn syntaxes(spec: &RunSpec) -> Vec<Option<crate::syntax::Syntax>> {
    match spec.protocol {
        Protocol::Paper => astprobe::paper_syntaxes(spec.snippets),
        _ => dataset::parse_all(spec.snippets),
    }
}

/// AST-Probe's options for `spec` (the paper's gold trees under [`Protocol::Paper`]).
fn ast_options(spec: &RunSpec) -> astprobe::AstOptions {
    astprobe::AstOptions {
        paper: spec.protocol == Protocol::Paper,
        ..spec.train.ast
    }
}

/// AST-Probe at every layer of `layers` (see [`astprobe`]).
fn run_ast(
    spec: &RunSpec,
    syntaxes: &[Option<crate::syntax::Syntax>],
    feats: &Features,
    layers: &[usize],
    results: &mut Vec<ProbeResult>,
    ast: &mut Vec<astprobe::AstResult>,
    progress: &mut dyn FnMut(Progress),
) -> Result<Vec<astprobe::GoldTree>> {
    let base = ast_options(spec);
    let prep = astprobe::prepare(syntaxes, feats, spec.test_fraction, spec.seed, &base);
    let gold = astprobe::gold_trees(&prep, syntaxes, feats, spec.snippets);
    if prep.train.is_empty() || prep.test.is_empty() {
        tracing::warn!(
            usable = prep.trees.len(),
            "probe: too few parsed snippets for AST-Probe, skipped"
        );
        return Ok(gold);
    }
    let cancel = || spec.cancel.is_some_and(|f| f());
    for &l in layers {
        spec.check_cancel()?;
        let opts = astprobe::AstOptions {
            fit: astprobe::train::FitOptions {
                seed: spec.seed ^ (l as u64) << 8,
                ..base.fit
            },
            ..base
        };
        let r = astprobe::run_layer(&prep, feats, l, &opts, &cancel)?;
        let row = ProbeResult {
            task: "ast".into(),
            probe: ProbeKind::Ast.name().into(),
            layer: l,
            accuracy: r.scores.f1,
            control_accuracy: r.control.f1,
            selectivity: r.scores.f1 - r.control.f1,
            clusters: None,
            train_size: r.train_snippets,
            test_size: r.test_snippets,
            seconds: r.seconds,
            majority: r.majority_f1,
        };
        results.push(row.clone());
        ast.push(r);
        progress(Progress::Fitted {
            done: results.len(),
            total: layers.len(),
            result: row,
        });
    }
    Ok(gold)
}

/// Write the probing data of `spec` for outside tools (`tools/reference/probe_sklearn.py`)
/// under `dir`, training nothing: `snippets.json` (language and code of every snippet),
/// `features/layer_<l>.safetensors` (the [`cache`] format:
/// code-token hidden states per layer) and `tasks/<task>.json` with `classes`, `examples`
/// (`[snippet, a, b, label, control_label]`, `a`/`b` = row of the token within its
/// snippet in the features, `b = -1` for token tasks), and the `train` / `test` example
/// indices of [`run`]'s split. With `--probe ast` instead `ast.json`: every usable
/// snippet's gold `(d, c, u)` (`snippet`, `n` leading feature rows), the label sets and the
/// train / validation / test split (indices into `trees`), for
/// `tools/reference/astprobe_reference.py`. Returns the number of tasks written.
pub fn dump(
    spec: &RunSpec,
    dir: &std::path::Path,
    progress: &mut dyn FnMut(Progress),
) -> Result<usize> {
    check_protocol(spec)?;
    let syntaxes = syntaxes(spec);
    let feats = features(spec, &syntaxes, progress)?;
    cache::save(&dir.join("features"), &feats)?;
    let texts: Vec<_> = spec
        .snippets
        .iter()
        .map(|s| serde_json::json!({"language": s.language.to_string(), "code": s.code}))
        .collect();
    let path = dir.join("snippets.json");
    let text = serde_json::to_string(&texts)
        .map_err(|e| crate::error::Error::io(&path, std::io::Error::other(e)))?;
    crate::fsio::write_atomic(&path, text.as_bytes())?;
    let tdir = dir.join("tasks");
    std::fs::create_dir_all(&tdir).map_err(|e| crate::error::Error::io(&tdir, e))?;
    let dopts = dataset::DatasetOptions {
        max_pairs: spec.max_pairs,
        seed: spec.seed,
        dfg_graph: spec.dfg_graph,
    };
    if spec.kind == ProbeKind::Ast {
        let prep = astprobe::prepare(
            &syntaxes,
            &feats,
            spec.test_fraction,
            spec.seed,
            &ast_options(spec),
        );
        let trees: Vec<_> = prep
            .trees
            .iter()
            .map(|t| {
                serde_json::json!({
                    "snippet": t.snippet, "n": t.n,
                    "d": t.gold.d, "c": t.gold.c, "u": t.gold.u,
                })
            })
            .collect();
        let doc = serde_json::json!({
            "layers": feats.layers,
            "dim": feats.dim,
            "c_labels": *prep.c_labels,
            "u_labels": *prep.u_labels,
            "train": prep.train,
            "val": prep.val,
            "test": prep.test,
            "trees": trees,
        });
        let path = dir.join("ast.json");
        let text = serde_json::to_string(&doc)
            .map_err(|e| crate::error::Error::io(&path, std::io::Error::other(e)))?;
        crate::fsio::write_atomic(&path, text.as_bytes())?;
        return Ok(1);
    }
    let mut written = 0;
    for &task in &spec.tasks {
        let data = dataset::build_task(task, &syntaxes, &feats, &dopts);
        let (tr, te) = split(&data.examples, spec.split, spec.test_fraction, spec.seed);
        let control = control_labels(&data.examples, data.classes.len(), spec.seed ^ task as u64);
        let examples: Vec<[i64; 5]> = data
            .examples
            .iter()
            .zip(&control)
            .map(|(e, &c)| {
                [
                    e.snippet as i64,
                    e.a as i64,
                    e.b.map_or(-1, |b| b as i64),
                    e.label as i64,
                    c as i64,
                ]
            })
            .collect();
        let doc = serde_json::json!({
            "task": task.name(),
            "classes": data.classes,
            "pair_features": spec.pair_features,
            "layers": feats.layers,
            "dim": feats.dim,
            "examples": examples,
            "train": tr,
            "test": te,
        });
        let path = tdir.join(format!("{}.json", task.name()));
        let text = serde_json::to_string(&doc)
            .map_err(|e| crate::error::Error::io(&path, std::io::Error::other(e)))?;
        crate::fsio::write_atomic(&path, text.as_bytes())?;
        written += 1;
    }
    Ok(written)
}

/// The readable per-layer table: one block per task, one row per layer.
pub fn table(r: &ProbeReport) -> String {
    use std::fmt::Write as _;
    let mut out = String::new();
    let (split, pairs) = match r.protocol {
        Protocol::Study => (
            "pair (the study's ShuffleSplit, random_state 0)",
            "the study's (distance h_a-h_b, others [h_a;h_b])",
        ),
        Protocol::Codescope | Protocol::Paper => (
            match r.split {
                Split::Snippet => "snippet",
                Split::Pair => "pair (leaky)",
            },
            match r.pair_features {
                PairFeatures::Diff => "h_a-h_b",
                PairFeatures::Concat => "[h_a;h_b]",
            },
        ),
    };
    let _ = writeln!(
        out,
        "model {} ({} layers, hidden {}{}); corpus {} ({} snippets); split by {split}; pairs {pairs}",
        r.model.source,
        r.model.layers,
        r.model.hidden_size,
        r.model.weights_note(),
        r.corpus.source,
        r.corpus.snippets,
    );
    match r.protocol {
        Protocol::Study => {
            let _ = writeln!(out, "protocol: the study's datasets (paper-mode input)");
        }
        Protocol::Paper => {
            let _ = writeln!(
                out,
                "protocol: the AST-Probe paper's (comments and docstrings removed, 2022 grammar trees)"
            );
        }
        Protocol::Codescope => {}
    }
    let mut last = String::new();
    for x in r
        .results
        .iter()
        .filter(|x| x.probe != ProbeKind::Ast.name())
    {
        if x.task != last {
            let _ = writeln!(
                out,
                "\n{} ({} probe; train {}, test {}, majority {:.3})\nlayer  accuracy  control  selectivity  {}seconds",
                x.task,
                x.probe,
                x.train_size,
                x.test_size,
                x.majority,
                if x.clusters.is_some() { "clusters  " } else { "" }
            );
            last = x.task.clone();
        }
        let clusters = x.clusters.map_or(String::new(), |c| format!("{c:>8}  "));
        let _ = writeln!(
            out,
            "{:>5}  {:>8.3}  {:>7.3}  {:>11.3}  {clusters}{:>7.1}",
            x.layer, x.accuracy, x.control_accuracy, x.selectivity, x.seconds
        );
    }
    if let Some(first) = r.ast.first() {
        let _ = writeln!(
            out,
            "\nAST-Probe (rank {}; train {} snippets, test {}; featureless tree F1 {:.3})\n\
             layer  precision  recall     f1  d_spearman  c_acc  u_acc  control_f1  selectivity  seconds",
            first.rank, first.train_snippets, first.test_snippets, first.majority_f1
        );
        for x in &r.ast {
            let s = &x.scores;
            let _ = writeln!(
                out,
                "{:>5}  {:>9.3}  {:>6.3}  {:>5.3}  {:>10.3}  {:>5.3}  {:>5.3}  {:>10.3}  {:>11.3}  {:>7.1}",
                x.layer,
                s.precision,
                s.recall,
                s.f1,
                s.d_spearman,
                s.c_accuracy,
                s.u_accuracy,
                x.control.f1,
                s.f1 - x.control.f1,
                x.seconds
            );
        }
    }
    if let Some(first) = r.structural.first() {
        let _ = writeln!(
            out,
            "\nstructural probe (rank {}; train {} snippets, test {})\nlayer  spearman   uuas  seconds",
            first.rank, first.train_snippets, first.test_snippets
        );
        for x in &r.structural {
            let _ = writeln!(
                out,
                "{:>5}  {:>8.3}  {:>5.3}  {:>7.1}",
                x.layer, x.spearman, x.uuas, x.seconds
            );
        }
    }
    out
}

/// Long CSV: `task,probe,layer,accuracy,control_accuracy,selectivity,train_size,test_size,seconds,majority,clusters`
/// (`clusters` empty except for DirectProbe). With AST-Probe results, ten more columns:
/// `precision,recall,d_spearman,c_accuracy,u_accuracy` and the same five prefixed
/// `control_`, filled on the `ast` rows (whose `accuracy` is the constituent F1).
pub fn csv(r: &ProbeReport) -> String {
    const AST_COLUMNS: [&str; 5] = [
        "precision",
        "recall",
        "d_spearman",
        "c_accuracy",
        "u_accuracy",
    ];
    let mut out = String::from(
        "task,probe,layer,accuracy,control_accuracy,selectivity,train_size,test_size,seconds,majority,clusters",
    );
    let with_ast = !r.ast.is_empty();
    if with_ast {
        for prefix in ["", "control_"] {
            for c in AST_COLUMNS {
                out.push_str(&format!(",{prefix}{c}"));
            }
        }
    }
    out.push('\n');
    let ast_cells = |s: &astprobe::AstScores| -> String {
        [
            s.precision,
            s.recall,
            s.d_spearman,
            s.c_accuracy,
            s.u_accuracy,
        ]
        .iter()
        .map(|v| format!(",{v:.6}"))
        .collect()
    };
    for x in &r.results {
        out.push_str(&format!(
            "{},{},{},{:.6},{:.6},{:.6},{},{},{:.3},{:.6},{}",
            x.task,
            x.probe,
            x.layer,
            x.accuracy,
            x.control_accuracy,
            x.selectivity,
            x.train_size,
            x.test_size,
            x.seconds,
            x.majority,
            x.clusters.map_or(String::new(), |c| c.to_string())
        ));
        if with_ast {
            let a = (x.probe == ProbeKind::Ast.name())
                .then(|| r.ast.iter().find(|a| a.layer == x.layer))
                .flatten();
            match a {
                Some(a) => {
                    out.push_str(&ast_cells(&a.scores));
                    out.push_str(&ast_cells(&a.control));
                }
                None => out.push_str(&",".repeat(2 * AST_COLUMNS.len())),
            }
        }
        out.push('\n');
    }
    out
}
