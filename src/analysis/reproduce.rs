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
//! new run with the same model, corpus and mode continues from there.
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

use super::relations::{threshold_grid, HeadScores};
use super::reproduce_twins::{self, TwinRecord};
use super::{Graph, Mode, Options};
use crate::corpus::Snippet;
use crate::error::{Error, Result};
use crate::model::LoadedModel;
use crate::syntax::rewrite::Rewrite;

const METRICS: [&str; 4] = ["precision", "recall", "f1", "ged_per_node"];

/// Fixed-point unit of the running sums: a score `v` is added as `round(v * 2^52)`. Every
/// score is at most a few hundred (GED per node), so a million snippets stay far inside
/// `i128`; the rounding (below 1e-16 of a score) is invisible at the 6 printed decimals.
pub const FIXED_ONE: f64 = (1u64 << 52) as f64;

/// One of `count` shards of a corpus (1-based `index`): the snippets `i` with
/// `i % count == index - 1`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Shard {
    pub index: usize,
    pub count: usize,
}

impl Shard {
    /// Whether snippet `i` of the corpus belongs to this shard.
    pub fn owns(self, i: usize) -> bool {
        i % self.count == self.index - 1
    }
}

impl std::str::FromStr for Shard {
    type Err = String;
    /// `K/N` with `1 <= K <= N`.
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        let bad = || format!("'{s}' is not a shard K/N with 1 <= K <= N");
        let (k, n) = s.split_once('/').ok_or_else(bad)?;
        let (index, count): (usize, usize) = (
            k.trim().parse().map_err(|_| bad())?,
            n.trim().parse().map_err(|_| bad())?,
        );
        if index == 0 || count == 0 || index > count {
            return Err(bad());
        }
        Ok(Shard { index, count })
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
    pub model: String,
    pub corpus: String,
    pub mode: String,
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
    /// `--random-weights SEED` of a random-weight baseline (`None`: trained weights).
    #[serde(default)]
    pub random_weights: Option<u64>,
    /// The twins' printed table, when `--rewrite` was given (not checkpointed).
    #[serde(skip)]
    pub twins_table: Option<String>,
}

impl Aggregate {
    fn new(r: &Run, layers: usize, heads: usize) -> Self {
        let grid = threshold_grid();
        Aggregate {
            model: r.model.info.source.clone(),
            random_weights: r.model.info.random_weights,
            corpus: r.corpus_name.clone(),
            mode: r.mode.name().into(),
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
            twins_table: None,
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

    /// Whether `other` is a checkpoint of the same run (model, corpus, mode, shape, grid,
    /// graphs, corpus size).
    fn same_run(&self, other: &Aggregate) -> bool {
        (
            self.model.as_str(),
            self.corpus.as_str(),
            self.mode.as_str(),
            self.layers,
            self.heads,
            self.total,
        ) == (
            other.model.as_str(),
            other.corpus.as_str(),
            other.mode.as_str(),
            other.layers,
            other.heads,
            other.total,
        ) && self.grid == other.grid
            && self.empty_gold.len() == other.empty_gold.len()
            && self.sums.len() == other.sums.len()
            && self.rewrite == other.rewrite
            && self.random_weights == other.random_weights
    }

    /// How many snippets this run covers (the shard's share of the corpus, or all).
    pub fn size(&self) -> usize {
        match self.shard {
            None => self.total,
            Some(sh) => (0..self.total).filter(|&i| sh.owns(i)).count(),
        }
    }

    fn add(&mut self, g: usize, t: usize, hs: &HeadScores) {
        for (l, row) in hs.scores.iter().enumerate() {
            for (h, s) in row.iter().enumerate() {
                for (m, v) in [s.precision, s.recall, s.f1, s.ged_per_node]
                    .into_iter()
                    .enumerate()
                {
                    let i = self.idx(g, t, l, h, m);
                    self.sums[i] += (v * FIXED_ONE).round() as i128;
                }
            }
        }
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
}

fn write_atomic(path: &Path, text: &str) -> Result<()> {
    crate::fsio::write_atomic(path, text.as_bytes())
}

/// Run (or resume) a corpus analysis; returns the aggregate after writing the tables.
pub fn run(r: &Run) -> Result<Aggregate> {
    std::fs::create_dir_all(&r.out).map_err(|e| Error::io(&r.out, e))?;
    let state_path = r.out.join("state.json");
    let info = &r.model.info;
    let fresh = Aggregate::new(r, info.layers, info.heads);
    let mut agg = match std::fs::read_to_string(&state_path) {
        Ok(text) => {
            let a: Aggregate = serde_json::from_str(&text).map_err(|e| Error::Input {
                name: state_path.display().to_string(),
                reason: format!("unreadable checkpoint ({e}); delete it to start over"),
            })?;
            if !a.same_run(&fresh) || a.shard != fresh.shard {
                return Err(Error::Input {
                    name: r.out.display().to_string(),
                    reason: format!(
                        "holds a run of {} on {} ({} mode{}{}); use another --out or delete it",
                        a.model,
                        a.corpus,
                        a.mode,
                        a.shard.map(|s| format!(", shard {s}")).unwrap_or_default(),
                        a.rewrite
                            .as_deref()
                            .map(|r| format!(", {r} twins"))
                            .unwrap_or_default()
                    ),
                });
            }
            crate::logging::notice(format_args!(
                "resuming at snippet {} of {}",
                a.next + 1,
                a.size()
            ));
            a
        }
        Err(_) => fresh,
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
        records = reproduce_twins::read_records(&twins_path, upto);
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
    let opts = Options {
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
                    let run =
                        || score_snippet(r.model, own[i], &r.snippets[own[i]], opts, r.rewrite);
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
                    Ok((per_graph, twin)) => {
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
                                agg.add(g, t, hs);
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
/// over the whole corpus would have produced (every shard complete, each index once).
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
    (out.scored, out.failed, out.next, out.seconds) = (0, 0, 0, 0.0);
    for (path, a) in shards {
        if !a.same_run(first) {
            return Err(err(
                path,
                format!(
                    "is a run of {} on {} ({} mode), not of {} on {} ({} mode)",
                    a.model, a.corpus, a.mode, first.model, first.corpus, first.mode
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
        for (o, x) in out.sums.iter_mut().zip(&a.sums) {
            *o += x;
        }
        for (o, x) in out.empty_gold.iter_mut().zip(&a.empty_gold) {
            *o += x;
        }
        out.scored += a.scored;
        out.failed += a.failed;
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

/// Read the checkpoint `DIR/state.json` of a run or shard.
pub fn load_state(dir: &Path) -> Result<Aggregate> {
    let path = dir.join("state.json");
    let text = std::fs::read_to_string(&path).map_err(|e| Error::io(&path, e))?;
    serde_json::from_str(&text).map_err(|e| Error::Input {
        name: path.display().to_string(),
        reason: format!("not a codescope reproduce checkpoint ({e})"),
    })
}

/// Write a merged aggregate's checkpoint and tables into `out`; for a `--rewrite` run,
/// the shards' pair records (read from `dirs`) and the twins' tables too (returned).
pub fn write_merged(
    agg: &Aggregate,
    dirs: &[PathBuf],
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
    let records = reproduce_twins::merge_records(dirs)?;
    reproduce_twins::write_records(&out.join(reproduce_twins::RECORDS), &records)?;
    reproduce_twins::write_tables(&records, label, agg.twins_seed, thr, out).map(Some)
}

/// Per graph (in [`Graph::ALL`] order): whether the gold graph was empty, and the
/// scores at every threshold of the grid; with a rewrite, the twin's pair record too.
type Scored = (Vec<(bool, Vec<HeadScores>)>, Option<TwinRecord>);

fn score_snippet(
    model: &LoadedModel,
    index: usize,
    s: &Snippet,
    opts: &Options,
    rewrite: Option<Rewrite>,
) -> Result<Scored> {
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
                &Options {
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
    let mut sweep = a.sweep.take().unwrap_or_default();
    let per_graph = Graph::ALL
        .iter()
        .map(|g| (a.golds[g].edges == 0, sweep.remove(g).unwrap_or_default()))
        .collect();
    Ok((per_graph, twin))
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
            per_t.push(serde_json::json!({"threshold": thr, "best_head_per_layer": layers}));
        }
        summary_graphs.insert(
            name.to_string(),
            serde_json::json!({"snippets_with_empty_gold": agg.empty_gold[g], "thresholds": per_t}),
        );
    }
    let summary = serde_json::json!({
        "model": agg.model, "random_weights": agg.random_weights, "corpus": agg.corpus, "mode": agg.mode,
        "snippets": agg.total, "scored": agg.scored, "failed": agg.failed,
        "metrics": "macro-average over snippets of P = |P∧G|/|P|, R = |P∧G|/|G|, F1, GED = |P xor G|/n; P = [A > t], diagonal included",
        "graphs": summary_graphs,
    });
    write_atomic(&out.join("scores.csv"), &scores)?;
    write_atomic(&out.join("best_heads.csv"), &best)?;
    write_atomic(
        &out.join("summary.json"),
        &serde_json::to_string_pretty(&summary).unwrap_or_default(),
    )?;
    Ok(())
}

/// The readable table at threshold `thr`: per graph, the best head per layer and the best
/// layer overall.
pub fn table(agg: &Aggregate, thr: f32) -> String {
    let t = agg
        .grid
        .iter()
        .enumerate()
        .min_by(|a, b| (a.1 - thr).abs().total_cmp(&(b.1 - thr).abs()))
        .map(|(i, _)| i)
        .unwrap_or(0);
    let mut s = String::new();
    let _ = writeln!(
        s,
        "{} on {} ({} mode): {} snippets scored, {} skipped, {:.1} snippets/s; threshold {:.2}",
        agg.model,
        agg.corpus,
        agg.mode,
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
    s
}
