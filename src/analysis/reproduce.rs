//! Corpus mode (`codescope reproduce`): the study's tables over many snippets.
//!
//! For every snippet, every gold graph, threshold of the grid, layer and head, the
//! snippet's precision, recall, F1 and GED per node are added to running sums; the
//! tables are their macro-averages over snippets (docs/METHODS.md section 3). Snippets whose
//! gold graph is empty still count (recall 0), as the formula says; how many there were
//! is reported per graph.
//!
//! With `--rewrite`, every snippet's renamed twin is scored too (`reproduce_twins.rs`:
//! per-layer best-head F1 of original and twin with a paired bootstrap interval, the
//! rename sensitivity of causal models); shards keep their pair records, which a merge
//! concatenates.
//!
//! Resumable: the running sums and the index of the next snippet are checkpointed to
//! `OUT/state.json` (written to a temporary file, then renamed) every few snippets; a
//! new run of the same run continues from there.
//!
//! What makes "the same run" is recorded in every checkpoint and compared field by field
//! on resume and by [`merge`] (a mismatch is refused with one line naming the field and
//! both values, digests shortened to [`SHORT_DIGEST`] hex digits): the checkpoint format
//! ([`CHECKPOINT_FORMAT`]), the model's name and the sha256 of its files' bytes
//! (configuration, tokenizer, weights: [`LoadedModel::digest`], read once per run), the
//! corpus's name and the sha256 of its snippets' text in order ([`crate::corpus::digest`]),
//! `--limit`, `--mode`, `--seed`, `--rewrite`, the threshold of a `--rewrite` run (its pair
//! records hold F1 at it), the model's windows, the threshold grid, the model's shape and
//! the corpus size. Every number read back is checked before use ([`Aggregate::check`]):
//! the shard in range, the sums' count matching graphs x grid x layers x heads x metrics,
//! `next` within the run, `scored + failed == next`, every sum within what `scored`
//! snippets can add up to; a checkpoint over [`MAX_STATE_BYTES`] is not read.
//!
//! Sharded (`--shard K/N`): shard K of N scores the snippets whose index `i` has
//! `i % N == K - 1`, and [`merge`] adds the shards' sums into the aggregate one process
//! would have produced. The sums are exact (fixed point, [`FIXED_ONE`] units per 1.0, in
//! `i128`), so addition is associative and the merged tables are byte-identical to a
//! single run's, whatever the order snippets were scored in.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::Instant;

use serde::{Deserialize, Serialize};

use super::ged::{Skipped, StudyGed};
use super::relations::{threshold_grid, HeadScores};
use super::reproduce_twins::{self, TwinRecord};
use super::{AnalyzeOptions, Graph, Mode};
use crate::corpus::Snippet;
use crate::error::{Error, Result};
use crate::model::LoadedModel;
use crate::syntax::rewrite::Rewrite;

const METRICS: [&str; 4] = ["precision", "recall", "f1", "ged_per_node"];

/// Version of the checkpoint format (`state.json`) this codescope writes and reads; a
/// checkpoint of another version is refused. 1: before the digests were recorded.
pub const CHECKPOINT_FORMAT: u32 = 2;

/// Largest `state.json` read, resumed or merged: a checkpoint of an 80-layer, 64-head
/// model is about 20 MB.
pub const MAX_STATE_BYTES: u64 = 64 << 20;

/// Most shards a corpus may be split into (`--shard K/N` with `N` above it is refused).
pub const MAX_SHARDS: usize = 65_536;

/// Hex digits of a digest shown in a message.
pub const SHORT_DIGEST: usize = 12;

/// The largest value of each metric for one snippet, in [`FIXED_ONE`] units: 1 for
/// precision, recall and F1; for GED per node `|P xor G| / n <= n^2 / n = n`, and a
/// snippet has at most [`crate::syntax::MAX_SOURCE_BYTES`] code tokens (parsing refuses
/// longer sources; a token is at least one byte).
fn metric_max(m: usize) -> i128 {
    let one = FIXED_ONE as i128;
    if m == 3 {
        one * crate::syntax::MAX_SOURCE_BYTES as i128
    } else {
        one
    }
}

/// Fixed-point unit of the running sums: a score `v` is added as `round(v * 2^52)`. Every
/// score is at most a few hundred (GED per node), so a million snippets stay far inside
/// `i128`; the rounding (below 1e-16 of a score) is invisible at the 6 printed decimals.
pub const FIXED_ONE: f64 = (1u64 << 52) as f64;

/// One of `count` shards of a corpus (1-based `index`): the snippets `i` with
/// `i % count == index - 1`. Parsed (`K/N`) and read back from files only with
/// `1 <= index <= count <=` [`MAX_SHARDS`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "RawShard")]
pub struct Shard {
    pub index: usize,
    pub count: usize,
}

/// A shard as written in a file, before its range is checked.
#[derive(Deserialize)]
struct RawShard {
    index: usize,
    count: usize,
}

impl TryFrom<RawShard> for Shard {
    type Error = String;
    fn try_from(r: RawShard) -> std::result::Result<Self, String> {
        Shard::new(r.index, r.count)
    }
}

impl Shard {
    /// Shard `index` of `count`, if `1 <= index <= count <=` [`MAX_SHARDS`].
    pub fn new(index: usize, count: usize) -> std::result::Result<Self, String> {
        if index == 0 || index > count || count > MAX_SHARDS {
            return Err(format!(
                "shard {index}/{count} is not K/N with 1 <= K <= N <= {MAX_SHARDS}"
            ));
        }
        Ok(Shard { index, count })
    }

    /// Whether snippet `i` of the corpus belongs to this shard.
    pub fn owns(self, i: usize) -> bool {
        i % self.count == self.index - 1
    }

    /// How many of a corpus's `total` snippets belong to this shard.
    pub fn size_of(self, total: usize) -> usize {
        total / self.count + usize::from(self.index - 1 < total % self.count)
    }
}

impl std::str::FromStr for Shard {
    type Err = String;
    /// `K/N` with `1 <= K <= N <=` [`MAX_SHARDS`].
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        let bad = || format!("'{s}' is not a shard K/N with 1 <= K <= N <= {MAX_SHARDS}");
        let (k, n) = s.split_once('/').ok_or_else(bad)?;
        let (index, count): (usize, usize) = (
            k.trim().parse().map_err(|_| bad())?,
            n.trim().parse().map_err(|_| bad())?,
        );
        Shard::new(index, count).map_err(|_| bad())
    }
}

impl std::fmt::Display for Shard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

/// Running sums over snippets; the on-disk checkpoint.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Aggregate {
    /// [`CHECKPOINT_FORMAT`] (1 when absent: a checkpoint of an older codescope).
    #[serde(default = "format_one")]
    pub format: u32,
    pub model: String,
    /// sha256 of the model's files ([`LoadedModel::digest`]).
    #[serde(default)]
    pub model_digest: String,
    pub corpus: String,
    /// sha256 of the corpus's snippets ([`crate::corpus::digest`]).
    #[serde(default)]
    pub corpus_digest: String,
    /// `--limit` of the run.
    #[serde(default)]
    pub limit: Option<usize>,
    pub mode: String,
    /// The model's windows when the run started (tokens analysed with every layer's
    /// attention kept, and layer by layer): an attention budget changes them.
    #[serde(default)]
    pub window: usize,
    #[serde(default)]
    pub stream_window: usize,
    pub layers: usize,
    pub heads: usize,
    pub grid: Vec<f32>,
    /// Snippets in the whole corpus.
    pub total: usize,
    /// The shard this run covers (`None`: the whole corpus).
    pub shard: Option<Shard>,
    /// Position of the next snippet to process among the run's own snippets (all of
    /// them, or the shard's).
    pub next: usize,
    /// Snippets scored.
    pub scored: usize,
    /// Snippets that failed (parse refusal, tokenizer error) and were skipped.
    pub failed: usize,
    /// Per graph: snippets whose gold graph had no edge (in the analysed window).
    pub empty_gold: Vec<usize>,
    /// `[graph][threshold][layer][head][metric]`, flattened; fixed point ([`FIXED_ONE`]).
    pub sums: Vec<i128>,
    /// Seconds spent so far (across resumed runs).
    pub seconds: f64,
    /// `--rewrite`: the rewrite whose twins are scored too (`reproduce_twins.rs`).
    #[serde(default)]
    pub rewrite: Option<String>,
    /// `--seed` of a `--rewrite` run (the bootstrap's).
    #[serde(default)]
    pub twins_seed: u64,
    /// `--threshold` of a `--rewrite` run: its pair records hold F1 at it.
    #[serde(default)]
    pub twins_threshold: Option<f32>,
    /// `--random-weights SEED` of a random-weight baseline (`None`: trained weights).
    #[serde(default)]
    pub random_weights: Option<u64>,
    /// The twins' printed table, when `--rewrite` was given (not checkpointed).
    #[serde(skip)]
    pub twins_table: Option<String>,
    /// `--ged study`: the study's graph edit distance's sums (absent otherwise, so a
    /// run without it writes the checkpoint it always wrote).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ged_study: Option<GedStudySums>,
}

/// The running sums of `reproduce --ged study` at the run's `--threshold`
/// (docs/METHODS.md section 3): per node, in [`FIXED_ONE`] units, over the snippets the
/// study's GED was computed for (`scored`; longer ones are `skipped`, see
/// [`super::ged::MAX_TOKENS`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GedStudySums {
    pub threshold: f32,
    /// The token limit ([`super::ged::max_tokens`]) of the run.
    pub max_tokens: usize,
    pub scored: usize,
    pub skipped: usize,
    /// `[graph][layer][head]`: the study's GED per node.
    pub heads: Vec<i128>,
    /// `[graph][layer]`: the study's per-layer value, the minimum over heads.
    pub layer_min: Vec<i128>,
    /// `[graph][layer]`: codescope's identity GED per node, minimum over heads (same
    /// threshold, same snippets), beside it.
    pub identity_layer_min: Vec<i128>,
}

impl GedStudySums {
    fn new(threshold: f32, max_tokens: usize, layers: usize, heads: usize) -> Self {
        let g = Graph::ALL.len();
        GedStudySums {
            threshold,
            max_tokens,
            scored: 0,
            skipped: 0,
            heads: vec![0; g * layers * heads],
            layer_min: vec![0; g * layers],
            identity_layer_min: vec![0; g * layers],
        }
    }

    /// Add one snippet's study GED and identity scores (at the same threshold); `None` if
    /// a sum would overflow.
    fn add(&mut self, sg: &super::ged::StudyGed, identity: &[&HeadScores]) -> Option<()> {
        let fixed = |v: f64| (v * FIXED_ONE).round() as i128;
        let mut k = 0;
        for (gi, g) in Graph::ALL.iter().enumerate() {
            let rows = &sg.distances[g];
            let layers = rows.len();
            for row in rows {
                for &d in row {
                    self.heads[k] = self.heads[k].checked_add(fixed(sg.per_node(d)))?;
                    k += 1;
                }
            }
            for (l, (_, d)) in sg.layer_min(*g).into_iter().enumerate() {
                let i = gi * layers + l;
                self.layer_min[i] = self.layer_min[i].checked_add(fixed(sg.per_node(d)))?;
                let id = identity[gi].scores[l]
                    .iter()
                    .map(|s| s.ged_per_node)
                    .fold(f64::INFINITY, f64::min);
                self.identity_layer_min[i] = self.identity_layer_min[i].checked_add(fixed(id))?;
            }
        }
        self.scored += 1;
        Some(())
    }

    fn mean(&self, sums: &[i128], i: usize) -> f64 {
        if self.scored == 0 {
            0.0
        } else {
            sums[i] as f64 / FIXED_ONE / self.scored as f64
        }
    }

    /// Whether the shapes and sums are ones a run of `layers x heads` over `scored`
    /// snippets can produce (the reason when not).
    fn check(&self, layers: usize, heads: usize, scored: usize) -> std::result::Result<(), String> {
        let g = Graph::ALL.len();
        if !(0.0..=1.0).contains(&self.threshold) {
            return Err(format!("study GED threshold {}", self.threshold));
        }
        if self.max_tokens == 0 || self.max_tokens > crate::syntax::MAX_SOURCE_BYTES {
            return Err(format!("study GED token limit {}", self.max_tokens));
        }
        if self.heads.len() != g * layers * heads
            || self.layer_min.len() != g * layers
            || self.identity_layer_min.len() != g * layers
        {
            return Err("study GED sums of another shape".into());
        }
        if self.scored.checked_add(self.skipped) != Some(scored) {
            return Err(format!(
                "{} study GED snippets and {} skipped do not add up to the {scored} scored",
                self.scored, self.skipped
            ));
        }
        // Per node at most 1 + 2n for n <= max_tokens nodes (every node substituted, every
        // possible edge of both graphs deleted or inserted); identity at most n.
        let per = FIXED_ONE as i128 * (2 * self.max_tokens as i128 + 1);
        let bound = i128::try_from(self.scored)
            .ok()
            .and_then(|n| n.checked_mul(per))
            .unwrap_or(i128::MAX);
        let all = self
            .heads
            .iter()
            .chain(&self.layer_min)
            .chain(&self.identity_layer_min);
        if all.into_iter().any(|v| !(0..=bound).contains(v)) {
            return Err(format!(
                "a study GED sum outside 0 to {bound} for {} snippets",
                self.scored
            ));
        }
        Ok(())
    }

    fn merge(&mut self, other: &GedStudySums) -> Option<()> {
        self.scored = self.scored.checked_add(other.scored)?;
        self.skipped = self.skipped.checked_add(other.skipped)?;
        for (a, b) in [
            (&mut self.heads, &other.heads),
            (&mut self.layer_min, &other.layer_min),
            (&mut self.identity_layer_min, &other.identity_layer_min),
        ] {
            for (x, y) in a.iter_mut().zip(b) {
                *x = x.checked_add(*y)?;
            }
        }
        Some(())
    }

    fn zeroed(&self) -> Self {
        GedStudySums {
            threshold: self.threshold,
            max_tokens: self.max_tokens,
            scored: 0,
            skipped: 0,
            heads: vec![0; self.heads.len()],
            layer_min: vec![0; self.layer_min.len()],
            identity_layer_min: vec![0; self.identity_layer_min.len()],
        }
    }
}

fn format_one() -> u32 {
    1
}

fn short(digest: &str) -> String {
    digest.chars().take(SHORT_DIGEST).collect()
}

impl Aggregate {
    fn new(r: &Run, model_digest: String) -> Self {
        let grid = threshold_grid();
        let info = &r.model.info;
        let (layers, heads) = (info.layers, info.heads);
        Aggregate {
            format: CHECKPOINT_FORMAT,
            model: info.source.clone(),
            model_digest,
            random_weights: info.random_weights,
            corpus: r.corpus_name.clone(),
            corpus_digest: crate::corpus::digest(r.snippets),
            limit: r.limit,
            mode: r.mode.name().into(),
            window: info.window,
            stream_window: info.stream_window,
            layers,
            heads,
            sums: vec![0; Graph::ALL.len() * grid.len() * layers * heads * METRICS.len()],
            grid,
            total: r.snippets.len(),
            shard: r.shard,
            next: 0,
            scored: 0,
            failed: 0,
            empty_gold: vec![0; Graph::ALL.len()],
            seconds: 0.0,
            rewrite: r.rewrite.map(reproduce_twins::rewrite_label),
            twins_seed: r.seed,
            twins_threshold: r.rewrite.map(|_| r.threshold),
            twins_table: None,
            ged_study: r
                .ged_study
                .map(|max| GedStudySums::new(r.threshold, max, layers, heads)),
        }
    }

    fn idx(&self, g: usize, t: usize, l: usize, h: usize, m: usize) -> usize {
        (((g * self.grid.len() + t) * self.layers + l) * self.heads + h) * METRICS.len() + m
    }

    /// Macro-average of metric `m` for graph `g`, threshold index `t`, layer, head.
    pub fn mean(&self, g: usize, t: usize, l: usize, h: usize, m: usize) -> f64 {
        if self.scored == 0 {
            return 0.0;
        }
        self.sums[self.idx(g, t, l, h, m)] as f64 / FIXED_ONE / self.scored as f64
    }

    /// The first recorded field in which `other` is not a checkpoint of the same run
    /// (shards aside): its name, and `self`'s and `other`'s values (digests shortened).
    /// `None` when they are of one run. Both must have passed [`Aggregate::check`], so
    /// equal shapes mean equal sums and per-graph counts.
    pub fn difference(&self, other: &Aggregate) -> Option<(&'static str, String, String)> {
        let opt = |v: Option<String>| v.unwrap_or_else(|| "none".into());
        let fields = |a: &Aggregate| -> [(&'static str, String); 17] {
            [
                ("checkpoint format", a.format.to_string()),
                ("model", a.model.clone()),
                ("model files digest", short(&a.model_digest)),
                (
                    "--random-weights",
                    opt(a.random_weights.map(|s| s.to_string())),
                ),
                ("corpus", a.corpus.clone()),
                ("corpus digest", short(&a.corpus_digest)),
                ("corpus size", format!("{} snippets", a.total)),
                ("--limit", opt(a.limit.map(|n| n.to_string()))),
                ("--mode", a.mode.clone()),
                ("--seed", a.twins_seed.to_string()),
                ("twins' --rewrite", opt(a.rewrite.clone())),
                (
                    "twins' --threshold",
                    opt(a.twins_threshold.map(|t| t.to_string())),
                ),
                (
                    "model windows",
                    format!("{}/{} tokens", a.window, a.stream_window),
                ),
                ("threshold grid", format!("{:?}", a.grid)),
                ("layers", a.layers.to_string()),
                ("heads", a.heads.to_string()),
                (
                    "--ged study (threshold, token limit)",
                    opt(a
                        .ged_study
                        .as_ref()
                        .map(|s| format!("{}, {} tokens", s.threshold, s.max_tokens))),
                ),
            ]
        };
        fields(self)
            .into_iter()
            .zip(fields(other))
            .find(|(a, b)| a.1 != b.1)
            .map(|(a, b)| (a.0, a.1, b.1))
    }

    /// Whether every number of a checkpoint read from a file is one a run can produce:
    /// the format, the shapes (`sums` holds graphs x grid x layers x heads x metrics
    /// entries, `empty_gold` one per graph), `next` within the run's snippets, `scored +
    /// failed == next`, per-graph empty counts at most `scored`, and every sum between 0
    /// and `scored` times its metric's largest value. The reason when not.
    pub fn check(&self) -> std::result::Result<(), String> {
        if self.format != CHECKPOINT_FORMAT {
            return Err(format!(
                "checkpoint format {} (this codescope reads format {CHECKPOINT_FORMAT})",
                self.format
            ));
        }
        let max_layers = crate::model::limits::MAX_LAYERS;
        if self.layers == 0 || self.layers > max_layers {
            return Err(format!(
                "{} layers (from 1 to {max_layers} expected)",
                self.layers
            ));
        }
        if self.heads == 0 {
            return Err("0 heads".into());
        }
        if self.grid.is_empty()
            || self.grid.len() > 256
            || self.grid.iter().any(|t| !(0.0..=1.0).contains(t))
        {
            return Err(format!(
                "threshold grid of {} values, not 1 to 256 values between 0 and 1",
                self.grid.len()
            ));
        }
        let graphs = Graph::ALL.len();
        let want = [self.grid.len(), self.layers, self.heads, METRICS.len()]
            .into_iter()
            .try_fold(graphs, usize::checked_mul);
        if want != Some(self.sums.len()) {
            return Err(format!(
                "{} sums, not {graphs} graphs x {} thresholds x {} layers x {} heads x {} metrics",
                self.sums.len(),
                self.grid.len(),
                self.layers,
                self.heads,
                METRICS.len()
            ));
        }
        if self.empty_gold.len() != graphs {
            return Err(format!(
                "{} empty-gold counts, not one per graph ({graphs})",
                self.empty_gold.len()
            ));
        }
        if self.next > self.size() {
            return Err(format!(
                "next snippet {} is past the run's {} snippets",
                self.next,
                self.size()
            ));
        }
        if self.scored.checked_add(self.failed) != Some(self.next) {
            return Err(format!(
                "{} scored and {} failed snippets do not add up to next snippet {}",
                self.scored, self.failed, self.next
            ));
        }
        if let Some((g, n)) = self
            .empty_gold
            .iter()
            .enumerate()
            .find(|(_, n)| **n > self.scored)
        {
            return Err(format!(
                "{n} snippets with an empty {} gold graph, more than the {} scored",
                Graph::ALL[g].name(),
                self.scored
            ));
        }
        if !self.seconds.is_finite() || self.seconds < 0.0 {
            return Err(format!("{} seconds", self.seconds));
        }
        if let Some(sg) = &self.ged_study {
            sg.check(self.layers, self.heads, self.scored)?;
        }
        let bounds: Vec<i128> = (0..METRICS.len())
            .map(|m| {
                i128::try_from(self.scored)
                    .ok()
                    .and_then(|n| n.checked_mul(metric_max(m)))
                    .unwrap_or(i128::MAX)
            })
            .collect();
        let per_graph = self.grid.len() * self.layers * self.heads * METRICS.len();
        for (i, &v) in self.sums.iter().enumerate() {
            let m = i % METRICS.len();
            if !(0..=bounds[m]).contains(&v) {
                let (g, rest) = (i / per_graph, i % per_graph);
                let per_t = self.layers * self.heads * METRICS.len();
                let (t, rest) = (rest / per_t, rest % per_t);
                let per_l = self.heads * METRICS.len();
                let (l, h) = (rest / per_l, rest % per_l / METRICS.len());
                return Err(format!(
                    "the {} sum of {} at threshold {}, layer {}, head {} is {v}, outside \
                     0 to {} for {} scored snippets",
                    METRICS[m],
                    Graph::ALL[g].name(),
                    self.grid[t],
                    l + 1,
                    h + 1,
                    bounds[m],
                    self.scored
                ));
            }
        }
        Ok(())
    }

    /// How many snippets this run covers (the shard's share of the corpus, or all).
    pub fn size(&self) -> usize {
        match self.shard {
            None => self.total,
            Some(sh) => sh.size_of(self.total),
        }
    }

    /// Add one snippet's scores for graph `g` at threshold `t`; `None` if a sum would
    /// overflow.
    fn add(&mut self, g: usize, t: usize, hs: &HeadScores) -> Option<()> {
        for (l, row) in hs.scores.iter().enumerate() {
            for (h, s) in row.iter().enumerate() {
                for (m, v) in [s.precision, s.recall, s.f1, s.ged_per_node]
                    .into_iter()
                    .enumerate()
                {
                    let i = self.idx(g, t, l, h, m);
                    let x = (v * FIXED_ONE).round() as i128;
                    self.sums[i] = self.sums[i].checked_add(x)?;
                }
            }
        }
        Some(())
    }

    /// `(head, [p, r, f1, ged])` of the best head by mean F1 in each layer.
    pub fn best_per_layer(&self, g: usize, t: usize) -> Vec<(usize, [f64; 4])> {
        (0..self.layers)
            .map(|l| {
                let mut best = 0;
                for h in 1..self.heads {
                    if self.mean(g, t, l, h, 2) > self.mean(g, t, l, best, 2) {
                        best = h;
                    }
                }
                (best, [0, 1, 2, 3].map(|m| self.mean(g, t, l, best, m)))
            })
            .collect()
    }
}

/// Settings of a `reproduce` run.
pub struct Run<'a> {
    pub model: &'a LoadedModel,
    pub snippets: &'a [Snippet],
    pub corpus_name: String,
    pub out: PathBuf,
    pub mode: Mode,
    /// Threshold of the printed table (the CSV has the whole grid).
    pub threshold: f32,
    /// Snippets analysed concurrently (each forward single-threaded).
    pub workers: usize,
    /// Score only this shard of the corpus.
    pub shard: Option<Shard>,
    /// Also score each snippet's twin made by this rewrite.
    pub rewrite: Option<Rewrite>,
    /// Seed of the bootstrap (and of `rename:shuffle`, through `rewrite`).
    pub seed: u64,
    /// `--limit`: the corpus is its first this many snippets (recorded, compared).
    pub limit: Option<usize>,
    /// `--ged study`: also the study's graph edit distance at `threshold`, for snippets
    /// of at most this many analysed tokens.
    pub ged_study: Option<usize>,
}

fn write_atomic(path: &Path, text: &str) -> Result<()> {
    crate::fsio::write_atomic(path, text.as_bytes())
}

/// Run (or resume) a corpus analysis; returns the aggregate after writing the tables.
pub fn run(r: &Run) -> Result<Aggregate> {
    std::fs::create_dir_all(&r.out).map_err(|e| Error::io(&r.out, e))?;
    let state_path = r.out.join("state.json");
    let fresh = Aggregate::new(r, r.model.digest()?);
    let mut agg = match read_state(&state_path, "delete it to start over")? {
        Some(a) => {
            let shard = |s: Option<Shard>| s.map_or_else(|| "none".into(), |s| s.to_string());
            let diff = fresh.difference(&a).or_else(|| {
                (a.shard != fresh.shard).then(|| ("shard", shard(fresh.shard), shard(a.shard)))
            });
            if let Some((field, now, then)) = diff {
                return Err(Error::Input {
                    name: r.out.display().to_string(),
                    reason: format!(
                        "holds another run ({field}: {then} in its checkpoint, {now} in this \
                         one); use another --out or delete it"
                    ),
                });
            }
            if a.next < a.size() {
                crate::logging::notice(format_args!(
                    "resuming at snippet {} of {}",
                    a.next + 1,
                    a.size()
                ));
            }
            a
        }
        None => fresh,
    };
    // The run's own snippets: the corpus, or the shard's share of it.
    let own: Vec<usize> = (0..r.snippets.len())
        .filter(|&i| r.shard.is_none_or(|sh| sh.owns(i)))
        .collect();
    // Pair records of an earlier run up to the checkpoint (lines past it are dropped).
    let twins_path = r.out.join(reproduce_twins::RECORDS);
    let mut records = Vec::new();
    if r.rewrite.is_some() {
        let upto = own.get(agg.next).copied().unwrap_or(usize::MAX);
        records = reproduce_twins::read_records(&twins_path, upto, &agg)?;
        reproduce_twins::write_records(&twins_path, &records)?;
    }
    let bar = indicatif::ProgressBar::new(own.len() as u64);
    bar.set_style(
        indicatif::ProgressStyle::with_template(
            "{bar:40} {pos}/{len} snippets {per_sec} eta {eta} {msg}",
        )
        .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
    );
    bar.set_position(agg.next as u64);
    let start = Instant::now();
    let seconds0 = agg.seconds;
    let opts = AnalyzeOptions {
        mode: r.mode,
        threshold: r.threshold,
        sweep: false,
    };
    // Snippets run concurrently, one per worker, each forward on a one-thread rayon
    // pool: on this kind of machine two single-threaded forwards finish more snippets
    // per second than one forward split over two threads. Results are applied in
    // snippet order, so the checkpoint's `next` stays exact.
    let workers = r.workers.max(1);
    let first = agg.next;
    let total = own.len();
    let cursor = std::sync::atomic::AtomicUsize::new(first);
    let (tx, rx) = std::sync::mpsc::channel();
    let mut result: Result<()> = Ok(());
    std::thread::scope(|scope| {
        for _ in 0..workers {
            let tx = tx.clone();
            let (cursor, opts, own) = (&cursor, &opts, &own);
            scope.spawn(move || {
                let pool = rayon::ThreadPoolBuilder::new().num_threads(1).build().ok();
                loop {
                    let i = cursor.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    if i >= total {
                        break;
                    }
                    let run = || {
                        score_snippet(
                            r.model,
                            own[i],
                            &r.snippets[own[i]],
                            opts,
                            r.rewrite,
                            r.ged_study,
                        )
                    };
                    let out = match &pool {
                        Some(p) => p.install(run),
                        None => run(),
                    };
                    if tx.send((i, out)).is_err() {
                        break;
                    }
                }
            });
        }
        drop(tx);
        let mut pending = std::collections::BTreeMap::new();
        for (i, out) in rx {
            pending.insert(i, out);
            while let Some(out) = pending.remove(&agg.next) {
                let s = &r.snippets[own[agg.next]];
                match out {
                    Ok(Scored {
                        per_graph,
                        twin,
                        ged,
                    }) => {
                        if let (Some(sums), Some(g)) = (agg.ged_study.as_mut(), ged) {
                            let added = match g {
                                Ok((sg, identity)) => {
                                    sums.add(&sg, &identity.iter().collect::<Vec<_>>())
                                }
                                Err(why) => {
                                    tracing::info!(origin = %s.origin, "study GED skipped: {why}");
                                    sums.skipped += 1;
                                    Some(())
                                }
                            };
                            if added.is_none() && result.is_ok() {
                                result = Err(Error::Input {
                                    name: state_path.display().to_string(),
                                    reason: "a running study GED sum overflows".into(),
                                });
                            }
                        }
                        if let Some(rec) = twin {
                            if result.is_ok() {
                                result = reproduce_twins::append_record(&twins_path, &rec);
                            }
                            records.push(rec);
                        }
                        for (g, (empty, sweeps)) in per_graph.into_iter().enumerate() {
                            if empty {
                                agg.empty_gold[g] += 1;
                            }
                            for (t, hs) in sweeps.iter().enumerate() {
                                if agg.add(g, t, hs).is_none() && result.is_ok() {
                                    result = Err(Error::Input {
                                        name: state_path.display().to_string(),
                                        reason: "a running sum overflows".into(),
                                    });
                                }
                            }
                        }
                        agg.scored += 1;
                    }
                    Err(e) => {
                        tracing::warn!(origin = %s.origin, "skipped: {e}");
                        agg.failed += 1;
                    }
                }
                agg.next += 1;
                bar.inc(1);
                if agg.next % 25 == 0 && result.is_ok() {
                    agg.seconds = seconds0 + start.elapsed().as_secs_f64();
                    result = write_atomic(
                        &state_path,
                        &serde_json::to_string(&agg).unwrap_or_default(),
                    );
                }
            }
            if result.is_err() {
                // Stop handing out work; the workers finish their current snippet.
                cursor.store(total, std::sync::atomic::Ordering::Relaxed);
            }
        }
    });
    result?;
    bar.finish_and_clear();
    agg.seconds = seconds0 + start.elapsed().as_secs_f64();
    write_atomic(
        &state_path,
        &serde_json::to_string(&agg).unwrap_or_default(),
    )?;
    write_tables(&agg, &r.out)?;
    if let Some(rw) = r.rewrite {
        agg.twins_table = Some(reproduce_twins::write_tables(
            &records,
            &reproduce_twins::rewrite_label(rw),
            r.seed,
            r.threshold,
            &r.out,
        )?);
    }
    Ok(agg)
}

/// Add up the checkpoints of the N shards of one run into the aggregate a single run
/// over the whole corpus would have produced (every shard complete, each index once, all
/// of one run: [`Aggregate::difference`]). The checkpoints must have passed
/// [`Aggregate::check`] ([`load_state`] checks them); the additions are checked, an
/// overflow is an error naming the shard.
pub fn merge(shards: &[(PathBuf, Aggregate)]) -> Result<Aggregate> {
    let err = |name: &Path, reason: String| Error::Input {
        name: name.display().to_string(),
        reason,
    };
    let Some((first_path, first)) = shards.first() else {
        return Err(Error::Input {
            name: "merge".into(),
            reason: "no shard directories given".into(),
        });
    };
    let Some(n) = first.shard.map(|s| s.count) else {
        return Err(err(first_path, "holds a whole run, not a shard".into()));
    };
    let mut seen = vec![false; n];
    let mut out = first.clone();
    out.shard = None;
    out.sums.iter_mut().for_each(|x| *x = 0);
    out.empty_gold.iter_mut().for_each(|x| *x = 0);
    out.ged_study = first.ged_study.as_ref().map(GedStudySums::zeroed);
    (out.scored, out.failed, out.next, out.seconds) = (0, 0, 0, 0.0);
    for (path, a) in shards {
        if let Some((field, theirs, ours)) = a.difference(first) {
            return Err(err(
                path,
                format!(
                    "is not of the same run as {} ({field}: {theirs} here, {ours} there)",
                    first_path.display()
                ),
            ));
        }
        let Some(sh) = a.shard.filter(|s| s.count == n) else {
            return Err(err(path, format!("is not one of {n} shards")));
        };
        if std::mem::replace(&mut seen[sh.index - 1], true) {
            return Err(err(path, format!("repeats shard {sh}")));
        }
        if a.next < a.size() {
            return Err(err(
                path,
                format!(
                    "shard {sh} is unfinished ({} of {} snippets); resume it first",
                    a.next,
                    a.size()
                ),
            ));
        }
        let overflow = || {
            err(
                path,
                "adding its sums to the other shards' overflows".into(),
            )
        };
        if a.sums.len() != out.sums.len() || a.empty_gold.len() != out.empty_gold.len() {
            return Err(err(path, "holds sums of another shape".into()));
        }
        for (o, x) in out.sums.iter_mut().zip(&a.sums) {
            *o = o.checked_add(*x).ok_or_else(overflow)?;
        }
        for (o, x) in out.empty_gold.iter_mut().zip(&a.empty_gold) {
            *o = o.checked_add(*x).ok_or_else(overflow)?;
        }
        if let (Some(o), Some(x)) = (out.ged_study.as_mut(), a.ged_study.as_ref()) {
            if o.heads.len() != x.heads.len() || o.layer_min.len() != x.layer_min.len() {
                return Err(err(path, "holds study GED sums of another shape".into()));
            }
            o.merge(x).ok_or_else(overflow)?;
        }
        out.scored = out.scored.checked_add(a.scored).ok_or_else(overflow)?;
        out.failed = out.failed.checked_add(a.failed).ok_or_else(overflow)?;
        out.seconds += a.seconds;
    }
    if let Some(k) = seen.iter().position(|s| !s) {
        return Err(Error::Input {
            name: "merge".into(),
            reason: format!("shard {}/{n} is missing", k + 1),
        });
    }
    out.next = out.total;
    Ok(out)
}

/// A checkpoint at `path`: `None` when there is no file; read at most
/// [`MAX_STATE_BYTES`], then [`Aggregate::check`]ed. `remedy` ends the error line of a
/// damaged one.
fn read_state(path: &Path, remedy: &str) -> Result<Option<Aggregate>> {
    match std::fs::symlink_metadata(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(Error::io(path, e)),
        Ok(_) => {}
    }
    let bad = |reason: String| Error::Input {
        name: path.display().to_string(),
        reason: format!("{reason}; {remedy}"),
    };
    let bytes = crate::fsio::read_bounded(path, MAX_STATE_BYTES, "the checkpoint")?;
    let a: Aggregate = serde_json::from_slice(&bytes)
        .map_err(|e| bad(format!("not a codescope reproduce checkpoint ({e})")))?;
    a.check()
        .map_err(|r| bad(format!("damaged checkpoint: {r}")))?;
    Ok(Some(a))
}

/// Read the checkpoint `DIR/state.json` of a run or shard (at most [`MAX_STATE_BYTES`];
/// every number checked, [`Aggregate::check`]).
pub fn load_state(dir: &Path) -> Result<Aggregate> {
    let path = dir.join("state.json");
    read_state(&path, "rerun this shard")?
        .ok_or_else(|| Error::io(&path, std::io::Error::from(std::io::ErrorKind::NotFound)))
}

/// Write a merged aggregate's checkpoint and tables into `out`; for a `--rewrite` run,
/// the shards' pair records (read from their directories, checked against their
/// checkpoints) and the twins' tables too (returned).
pub fn write_merged(
    agg: &Aggregate,
    shards: &[(PathBuf, Aggregate)],
    out: &Path,
    thr: f32,
) -> Result<Option<String>> {
    std::fs::create_dir_all(out).map_err(|e| Error::io(out, e))?;
    write_atomic(
        &out.join("state.json"),
        &serde_json::to_string(agg).unwrap_or_default(),
    )?;
    write_tables(agg, out)?;
    let Some(label) = &agg.rewrite else {
        return Ok(None);
    };
    let records = reproduce_twins::merge_records(shards)?;
    reproduce_twins::write_records(&out.join(reproduce_twins::RECORDS), &records)?;
    // The pair records hold F1 at the shards' threshold, whatever merge's --threshold.
    let thr = agg.twins_threshold.unwrap_or(thr);
    reproduce_twins::write_tables(&records, label, agg.twins_seed, thr, out).map(Some)
}

/// One snippet's results.
struct Scored {
    /// Per graph (in [`Graph::ALL`] order): whether the gold graph was empty, and the
    /// scores at every threshold of the grid.
    per_graph: Vec<(bool, Vec<HeadScores>)>,
    /// With a rewrite, the twin's pair record.
    twin: Option<TwinRecord>,
    /// With `--ged study`: the study's GED and the identity scores per graph at the run's
    /// threshold, or why the snippet has none.
    ged: Option<std::result::Result<(StudyGed, Vec<HeadScores>), Skipped>>,
}

fn score_snippet(
    model: &LoadedModel,
    index: usize,
    s: &Snippet,
    opts: &AnalyzeOptions,
    rewrite: Option<Rewrite>,
    ged_study: Option<usize>,
) -> Result<Scored> {
    if opts.mode == super::Mode::Paper {
        if let Some(given) = &s.code_tokens {
            check_record_tokens(s, given)?;
        }
    }
    let (mut a, twin) = match rewrite {
        Some(rw) => {
            let (a, rec) = reproduce_twins::score_pair(model, index, s, opts, rw)?;
            (a, Some(rec))
        }
        None => (
            super::analyze(
                model,
                &s.code,
                s.language,
                &AnalyzeOptions {
                    sweep: true,
                    ..*opts
                },
            )?,
            None,
        ),
    };
    // The study dropped the snippets its comment removal fails on; so does paper mode.
    if let Some(note) = &a.input_note {
        return Err(Error::Syntax(format!("paper mode: {note}")));
    }
    let ged = ged_study.map(|max| {
        super::ged::compute(&a, opts.threshold, max).map(|sg| {
            let identity = Graph::ALL.iter().map(|g| a.relations[g].clone()).collect();
            (sg, identity)
        })
    });
    let mut sweep = a.sweep.take().unwrap_or_default();
    let per_graph = Graph::ALL
        .iter()
        .map(|g| (a.golds[g].edges == 0, sweep.remove(g).unwrap_or_default()))
        .collect();
    Ok(Scored {
        per_graph,
        twin,
        ged,
    })
}

/// Paper mode on a record that carries its own `code_tokens` (CodeSearchNet's, or the
/// study's `exp_data`): the study fed those tokens, prepared by its
/// [`crate::corpus::study_input_tokens`], and scored them against the graphs of the
/// cleaned `code`, dropping the snippets where the two token lists differ. codescope's
/// paper-mode input is built from the parsed `code`; when its fed tokens equal the
/// record's, the text the model reads is the study's exactly; otherwise the snippet is
/// skipped (and counted) as the study skipped it.
fn check_record_tokens(s: &Snippet, given: &[String]) -> Result<()> {
    let syn = super::parse(&s.code, s.language)?;
    let p = crate::syntax::paper_input(&syn);
    if p.note.is_some() {
        // The study's cleaning fails on this code: the analysis drops it, saying why.
        return Ok(());
    }
    let fed: Vec<&str> = p
        .spans
        .iter()
        .flatten()
        .map(|&(a, b)| &p.text[a..b])
        .collect();
    let want = crate::corpus::study_input_tokens(given);
    if let Some(i) = (0..fed.len().max(want.len()))
        .find(|&i| fed.get(i).copied() != want.get(i).map(String::as_str))
    {
        let show = |t: Option<&str>| t.map_or("(none)".to_string(), |t| format!("{t:?}"));
        return Err(Error::Syntax(format!(
            "paper mode: the record's code_tokens differ from its code's tokens at token {} ({} against {})",
            i + 1,
            show(want.get(i).map(String::as_str)),
            show(fed.get(i).copied()),
        )));
    }
    Ok(())
}

/// The tables of an aggregate: `scores.csv`, `best_heads.csv`, `summary.json` (no
/// timings: they are functions of the sums, so a merge of shards writes the same bytes as
/// one run; the run's seconds stay in `state.json`).
fn write_tables(agg: &Aggregate, out: &Path) -> Result<()> {
    let mut scores = String::from("graph,threshold,layer,head,precision,recall,f1,ged_per_node\n");
    let mut best =
        String::from("graph,threshold,layer,best_head,precision,recall,f1,ged_per_node\n");
    let mut summary_graphs = serde_json::Map::new();
    for (g, name) in Graph::ALL.iter().map(|g| g.name()).enumerate() {
        let mut per_t = Vec::new();
        for (t, thr) in agg.grid.iter().enumerate() {
            for l in 0..agg.layers {
                for h in 0..agg.heads {
                    let v = [0, 1, 2, 3].map(|m| agg.mean(g, t, l, h, m));
                    let _ = writeln!(
                        scores,
                        "{name},{thr:.2},{},{},{:.6},{:.6},{:.6},{:.6}",
                        l + 1,
                        h + 1,
                        v[0],
                        v[1],
                        v[2],
                        v[3]
                    );
                }
            }
            let bl = agg.best_per_layer(g, t);
            let layers: Vec<serde_json::Value> = bl
                .iter()
                .enumerate()
                .map(|(l, (h, v))| {
                    let _ = writeln!(
                        best,
                        "{name},{thr:.2},{},{},{:.6},{:.6},{:.6},{:.6}",
                        l + 1,
                        h + 1,
                        v[0],
                        v[1],
                        v[2],
                        v[3]
                    );
                    serde_json::json!({"layer": l + 1, "head": h + 1, "precision": v[0], "recall": v[1], "f1": v[2], "ged_per_node": v[3]})
                })
                .collect();
            per_t.push(serde_json::json!({"threshold": super::report::short_threshold(*thr), "best_head_per_layer": layers}));
        }
        summary_graphs.insert(
            name.to_string(),
            serde_json::json!({"snippets_with_empty_gold": agg.empty_gold[g], "thresholds": per_t}),
        );
    }
    let summary = serde_json::json!({
        "model": agg.model, "random_weights": agg.random_weights, "corpus": agg.corpus, "mode": agg.mode,
        "model_digest": agg.model_digest, "corpus_digest": agg.corpus_digest,
        "snippets": agg.total, "scored": agg.scored, "failed": agg.failed,
        "metrics": "macro-average over snippets of P = |P∧G|/|P|, R = |P∧G|/|G|, F1, GED = |P xor G|/n; P = [A > t], diagonal included",
        "graphs": summary_graphs,
    });
    let mut summary = summary;
    // The finding at the table threshold (t = 0.05, the grid's second entry).
    let t05 = agg
        .grid
        .iter()
        .position(|&t| (t - 0.05).abs() < 1e-6)
        .unwrap_or(0);
    summary["finding"] = super::finding::Finding::of_corpus(agg, t05).to_json();
    if let Some(sg) = &agg.ged_study {
        summary["ged_study"] = write_ged_study(agg, sg, out)?;
    }
    write_atomic(&out.join("scores.csv"), &scores)?;
    write_atomic(&out.join("best_heads.csv"), &best)?;
    write_atomic(
        &out.join("summary.json"),
        &serde_json::to_string_pretty(&summary).unwrap_or_default(),
    )?;
    Ok(())
}

/// `--ged study`'s tables, `ged_study.csv` (every head's mean study GED per node) and
/// `ged_study_layers.csv` (per layer the mean of the minimum over heads, beside
/// codescope's identity GED's), and their summary (`summary.json`'s `ged_study`).
fn write_ged_study(agg: &Aggregate, sg: &GedStudySums, out: &Path) -> Result<serde_json::Value> {
    let thr = sg.threshold;
    let mut heads = String::from("graph,threshold,layer,head,ged_study_per_node\n");
    let mut layers =
        String::from("graph,threshold,layer,snippets,ged_study_layer_min,ged_identity_layer_min\n");
    let mut graphs = serde_json::Map::new();
    for (g, name) in Graph::ALL.iter().map(|g| g.name()).enumerate() {
        for l in 0..agg.layers {
            for h in 0..agg.heads {
                let v = sg.mean(&sg.heads, (g * agg.layers + l) * agg.heads + h);
                let _ = writeln!(heads, "{name},{thr:.2},{},{},{v:.6}", l + 1, h + 1);
            }
        }
        let rows: Vec<serde_json::Value> = (0..agg.layers)
            .map(|l| {
                let i = g * agg.layers + l;
                let (s, id) = (sg.mean(&sg.layer_min, i), sg.mean(&sg.identity_layer_min, i));
                let _ = writeln!(layers, "{name},{thr:.2},{},{},{s:.6},{id:.6}", l + 1, sg.scored);
                serde_json::json!({"layer": l + 1, "ged_study_layer_min": s, "ged_identity_layer_min": id})
            })
            .collect();
        graphs.insert(name.to_string(), rows.into());
    }
    write_atomic(&out.join("ged_study.csv"), &heads)?;
    write_atomic(&out.join("ged_study_layers.csv"), &layers)?;
    Ok(serde_json::json!({
        "threshold": super::report::short_threshold(thr),
        "snippets": sg.scored,
        "skipped": sg.skipped,
        "max_tokens": sg.max_tokens,
        "metric": "macro-average over snippets of networkx's first optimize_graph_edit_distance value / n (the study's), per layer the minimum over heads; beside it the identity GED |P xor G| / n, minimum over heads",
        "graphs": graphs,
    }))
}

/// The readable table at threshold `thr`: per graph, the best head per layer and the best
/// layer overall.
/// Index of the grid threshold nearest `thr`.
fn nearest_threshold(agg: &Aggregate, thr: f32) -> usize {
    agg.grid
        .iter()
        .enumerate()
        .min_by(|a, b| (a.1 - thr).abs().total_cmp(&(b.1 - thr).abs()))
        .map(|(i, _)| i)
        .unwrap_or(0)
}

/// Trained and random weights side by side (`reproduce --random-baseline SEED`): per graph
/// and layer the best head's macro-averaged F1 of each run and their difference, and the
/// study's finding (syn–syn, id–id, syn–id) of each. Writes `baseline.csv` (graph,
/// threshold, layer, then each run's best head and F1: every grid threshold) into `out`
/// and returns the printed table. Both runs must be over the same corpus with the same
/// model architecture.
pub fn baseline(trained: &Aggregate, random: &Aggregate, thr: f32, out: &Path) -> Result<String> {
    if (trained.layers, trained.heads, &trained.grid) != (random.layers, random.heads, &random.grid)
        || trained.corpus_digest != random.corpus_digest
    {
        return Err(Error::Input {
            name: out.display().to_string(),
            reason: "the trained and the random-weight runs are not of one model shape and corpus"
                .into(),
        });
    }
    let mut csv = String::from(
        "graph,threshold,layer,trained_best_head,trained_f1,random_best_head,random_f1,difference\n",
    );
    for (g, name) in Graph::ALL.iter().map(|g| g.name()).enumerate() {
        for (t, th) in trained.grid.iter().enumerate() {
            let (a, b) = (trained.best_per_layer(g, t), random.best_per_layer(g, t));
            for (l, ((ha, va), (hb, vb))) in a.iter().zip(&b).enumerate() {
                let _ = writeln!(
                    csv,
                    "{name},{th:.2},{},{},{:.6},{},{:.6},{:.6}",
                    l + 1,
                    ha + 1,
                    va[2],
                    hb + 1,
                    vb[2],
                    va[2] - vb[2]
                );
            }
        }
    }
    write_atomic(&out.join("baseline.csv"), &csv)?;
    let t = nearest_threshold(trained, thr);
    let mut s = String::new();
    let _ = writeln!(
        s,
        "\ntrained against random weights (seed {}): the best head's F1 per layer, macro-averaged over {} and {} snippets, threshold {:.2}",
        random.random_weights.map_or("?".to_string(), |x| x.to_string()),
        trained.scored,
        random.scored,
        trained.grid[t]
    );
    for (g, name) in Graph::ALL.iter().map(|g| g.name()).enumerate() {
        let _ = writeln!(
            s,
            "\n{name}\n  layer  trained (head)  random (head)  trained - random"
        );
        let (a, b) = (trained.best_per_layer(g, t), random.best_per_layer(g, t));
        for (l, ((ha, va), (hb, vb))) in a.iter().zip(&b).enumerate() {
            let _ = writeln!(
                s,
                "  {:>5}  {:>7.3} ({:>3})  {:>6.3} ({:>3})  {:>+16.3}",
                l + 1,
                va[2],
                ha + 1,
                vb[2],
                hb + 1,
                va[2] - vb[2]
            );
        }
    }
    let (fa, fb) = (
        super::finding::Finding::of_corpus(trained, t),
        super::finding::Finding::of_corpus(random, t),
    );
    let _ = writeln!(
        s,
        "\nfinding, trained / random: the best head's F1 per relation"
    );
    let _ = write!(s, "  layer");
    for (_, name) in super::finding::RELATIONS {
        let _ = write!(s, "  {name:>20}");
    }
    let _ = writeln!(s);
    for (l, (la, lb)) in fa.layers.iter().zip(&fb.layers).enumerate() {
        let _ = write!(s, "  {:>5}", l + 1);
        for (ra, rb) in la.rels.iter().zip(&lb.rels) {
            let cell = format!("{:.3} / {:.3}", ra.best_f1, rb.best_f1);
            let _ = write!(s, "  {cell:>20}");
        }
        let _ = writeln!(s);
    }
    let _ = writeln!(s, "  trained: {}", fa.reading());
    let _ = writeln!(s, "  random:  {}", fb.reading());
    Ok(s)
}

pub fn table(agg: &Aggregate, thr: f32) -> String {
    let t = nearest_threshold(agg, thr);
    let mut s = String::new();
    let _ = writeln!(
        s,
        "{} on {} ({} mode): {} snippets scored, {} skipped, {:.1} snippets/s; threshold {:.2}",
        crate::error::printable(&agg.model, false),
        crate::error::printable(&agg.corpus, false),
        crate::error::printable(&agg.mode, false),
        agg.scored,
        agg.failed,
        (agg.scored + agg.failed) as f64 / agg.seconds.max(1e-9),
        agg.grid[t]
    );
    for (g, name) in Graph::ALL.iter().map(|g| g.name()).enumerate() {
        let bl = agg.best_per_layer(g, t);
        let (best_l, _) = bl
            .iter()
            .enumerate()
            .max_by(|a, b| a.1 .1[2].total_cmp(&b.1 .1[2]))
            .unwrap_or((0, &(0, [0.0; 4])));
        let _ = writeln!(
            s,
            "\n{name} (macro-averaged; {} snippets had no gold edge)\n  layer  head  precision  recall     f1   GED/node",
            agg.empty_gold[g]
        );
        for (l, (h, v)) in bl.iter().enumerate() {
            let _ = writeln!(
                s,
                "  {:>5}  {:>4}  {:>9.3}  {:>6.3}  {:>5.3}  {:>9.2}{}",
                l + 1,
                h + 1,
                v[0],
                v[1],
                v[2],
                v[3],
                if l == best_l { "  <- best layer" } else { "" }
            );
        }
    }
    // The study's finding over the corpus (no category shares: not aggregated).
    let _ = writeln!(s);
    s.push_str(&super::finding::Finding::of_corpus(agg, t).text());
    if let Some(sg) = &agg.ged_study {
        s.push_str(&ged_study_table(agg, sg));
    }
    s
}

/// The printed table of `--ged study`: per graph and layer, the mean study GED per node
/// (minimum over heads) beside codescope's identity GED (minimum over heads).
fn ged_study_table(agg: &Aggregate, sg: &GedStudySums) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "\nstudy GED per node at threshold {:.2} (networkx's first candidate, minimum over heads; \
         macro-averaged over {} snippets, {} skipped: over {} analysed tokens or matrices not kept)",
        sg.threshold,
        sg.scored,
        sg.skipped,
        sg.max_tokens
    );
    let _ = write!(s, "  layer");
    for g in Graph::ALL {
        let _ = write!(s, "  {:>22}", g.name());
    }
    let _ = writeln!(s);
    let _ = write!(s, "       ");
    for _ in Graph::ALL {
        let _ = write!(s, "  {:>10} {:>11}", "study", "identity");
    }
    let _ = writeln!(s);
    for l in 0..agg.layers {
        let _ = write!(s, "  {:>5}", l + 1);
        for g in 0..Graph::ALL.len() {
            let i = g * agg.layers + l;
            let _ = write!(
                s,
                "  {:>10.2} {:>11.2}",
                sg.mean(&sg.layer_min, i),
                sg.mean(&sg.identity_layer_min, i)
            );
        }
        let _ = writeln!(s);
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shard_sizes_are_the_counts_of_owned_snippets() {
        for count in 1..=7 {
            for index in 1..=count {
                let sh = Shard::new(index, count).unwrap();
                for total in 0..30 {
                    let counted = (0..total).filter(|&i| sh.owns(i)).count();
                    assert_eq!(sh.size_of(total), counted, "{sh} of {total}");
                }
            }
        }
        let last = Shard::new(MAX_SHARDS, MAX_SHARDS).unwrap();
        // usize::MAX = 65536 k + 65535: shard 65536 owns 65535 + 65536 j for j < k.
        assert_eq!(last.size_of(usize::MAX), usize::MAX / MAX_SHARDS);
    }

    #[test]
    fn shards_out_of_range_are_refused_when_parsed_or_read() {
        for s in [
            "0/1",
            "2/1",
            "1/0",
            "1/65537",
            "1/18446744073709551615",
            "x",
            "1/2/3",
        ] {
            assert!(s.parse::<Shard>().is_err(), "{s}");
        }
        assert_eq!("65536/65536".parse::<Shard>(), Shard::new(65536, 65536));
        for j in [
            r#"{"index":0,"count":2}"#,
            r#"{"index":3,"count":2}"#,
            r#"{"index":1,"count":65537}"#,
        ] {
            assert!(serde_json::from_str::<Shard>(j).is_err(), "{j}");
        }
        let ok: Shard = serde_json::from_str(r#"{"index":2,"count":3}"#).unwrap();
        assert_eq!(ok, Shard::new(2, 3).unwrap());
    }

    #[test]
    fn study_ged_sums_out_of_shape_or_range_are_refused_and_merge_adds_up() {
        let mut a = GedStudySums::new(0.05, 256, 2, 3);
        assert_eq!(a.check(2, 3, 0), Ok(()));
        assert!(a.check(2, 4, 0).unwrap_err().contains("another shape"));
        assert!(a.check(2, 3, 1).unwrap_err().contains("do not add up"));
        a.skipped = 1;
        assert_eq!(a.check(2, 3, 1), Ok(()));
        a.heads[0] = -1;
        assert!(a.check(2, 3, 1).unwrap_err().contains("outside"));
        a.heads[0] = 0;
        a.max_tokens = 0;
        assert!(a.check(2, 3, 1).unwrap_err().contains("token limit"));
        a.max_tokens = 256;
        let mut b = a.zeroed();
        b.scored = 2;
        b.layer_min[1] = 7;
        a.merge(&b).unwrap();
        assert_eq!((a.scored, a.skipped, a.layer_min[1]), (2, 1, 7));
        b.layer_min[1] = i128::MAX;
        assert!(a.merge(&b).is_none(), "an overflow is refused");
    }
}
