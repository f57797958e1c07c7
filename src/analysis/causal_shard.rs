//! Sharded corpus runs of the causal tests: `knockout --data PATH --shard K/N --out DIR`,
//! `ablate --data PATH --shard K/N --out DIR` and `patch --data PATH --shard K/N --out DIR`
//! (values: [`super::patch::SnippetOutcome`]) run shard K's snippets (those `i` with
//! `i % N == K - 1`, as `reproduce` splits, [`Shard`]) and write each snippet's own
//! values ([`super::causal::KnockoutPairs`], [`super::causal::AblationValues`]) to
//! `DIR/causal_shard.json`; `codescope merge` puts the N shards' snippets back in corpus
//! order and aggregates them as one process does ([`super::causal::knockout_aggregate`],
//! [`super::causal::ablate_aggregate`]): the bootstrap runs at merge time over all
//! snippets with the run's seed, so the merged tables are the one-process tables byte
//! for byte (on machines whose forward passes agree bit for bit: same build and thread
//! count). Values are stored as the bits of their `f64`, so nothing is lost in the file.
//!
//! A shard records what makes its run ([`RunKey`]: command, model name and files'
//! digest, `--random-weights`, corpus name, digest and size, `--limit`, `--mode`, seed,
//! edge sets, layers, heads, control draws, ablation mode, the patch's rewrite; with
//! `--probe`, the probe's task, layer, a pair task's feature combination, training corpus,
//! its digest and limit, and its test accuracy); shards that differ in any of
//! it, a missing or repeated shard, and a file whose snippets are not its shard's are
//! refused in one line. Files are read at most [`MAX_SHARD_BYTES`].

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::causal::{self, AblationValues, CorpusAblation, CorpusKnockout, KnockoutPairs, Measure};
use super::patch::{
    self, CorpusPatch, PatchSnippet, SnippetOutcome, PATCH_CLASSES, VALUES_PER_CLASS,
};
use super::reproduce::Shard;
use crate::error::{Error, Result};
use crate::model::AblationMode;

/// The file a shard directory holds.
pub const FILE: &str = "causal_shard.json";

const FORMAT: &str = "codescope-causal-shard-v1";

/// Largest shard file read.
pub const MAX_SHARD_BYTES: u64 = 256 << 20;

/// What identifies the run a shard belongs to.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct RunKey {
    /// `knockout` or `ablate`.
    pub command: String,
    pub model: String,
    /// sha256 of the model's files ([`crate::model::LoadedModel::digest`]).
    pub model_digest: String,
    pub random_weights: Option<u64>,
    /// The corpus as named on the command line (the tables print it).
    pub corpus: String,
    pub corpus_digest: String,
    /// Snippets in the whole corpus (after `--limit`).
    pub corpus_size: usize,
    pub limit: Option<usize>,
    pub mode: String,
    /// [`Measure::name`].
    pub measure: String,
    pub seed: u64,
    /// Model layers and heads per layer.
    pub layers: usize,
    pub heads: usize,
    /// knockout: the edge sets' names, layers and heads knocked out (0-based; `None`:
    /// all), control draws.
    pub edges: Vec<String>,
    pub knock_layers: Option<Vec<usize>>,
    pub knock_heads: Option<Vec<usize>>,
    pub control: usize,
    /// ablate: `zero` or `mean`.
    pub ablation: Option<String>,
    /// patch: the rewrite every snippet's twin is made by.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rewrite: Option<String>,
    /// knockout `--probe`: the probe read on every snippet.
    #[serde(default)]
    pub probe: Option<ProbeKey>,
}

/// The probe of a knockout run with `--probe` (all of it the tables print, and what it
/// was trained on).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ProbeKey {
    pub task: String,
    /// Hidden layer (0 = embeddings).
    pub layer: usize,
    /// A pair task's feature combination (`diff`, `concat`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pair_features: Option<String>,
    /// The training corpus as the tables print it, its digest, its snippets (after
    /// `--probe-limit`) and that limit.
    pub corpus: String,
    pub corpus_digest: String,
    pub snippets: usize,
    pub limit: Option<usize>,
    /// The held-out test accuracy, as the bits of its `f64`.
    pub test_accuracy: u64,
    /// `all`, then the task's classes.
    pub rows: Vec<String>,
}

impl ProbeKey {
    /// The key of `info`, trained on a corpus of digest `digest` with `--probe-limit`
    /// `limit`.
    pub fn new(info: &causal::ProbeInfo, digest: String, limit: Option<usize>) -> ProbeKey {
        ProbeKey {
            task: info.task.clone(),
            layer: info.layer,
            pair_features: info.pair_features.clone(),
            corpus: info.corpus.clone(),
            corpus_digest: digest,
            snippets: info.snippets,
            limit,
            test_accuracy: info.test_accuracy.to_bits(),
            rows: info.rows.clone(),
        }
    }

    fn info(&self) -> causal::ProbeInfo {
        causal::ProbeInfo {
            task: self.task.clone(),
            layer: self.layer,
            pair_features: self.pair_features.clone(),
            corpus: self.corpus.clone(),
            snippets: self.snippets,
            test_accuracy: f64::from_bits(self.test_accuracy),
            rows: self.rows.clone(),
        }
    }
}

impl RunKey {
    /// The first field in which `self` and `other` differ: its name, both values.
    fn difference(&self, other: &RunKey) -> Option<(&'static str, String, String)> {
        let opt = |v: Option<String>| v.unwrap_or_else(|| "none".into());
        let list = |v: &Option<Vec<usize>>| {
            opt(v.as_ref().map(|v| {
                v.iter()
                    .map(|i| (i + 1).to_string())
                    .collect::<Vec<_>>()
                    .join(",")
            }))
        };
        let short = |d: &str| d.chars().take(super::reproduce::SHORT_DIGEST).collect();
        let probe = |k: &RunKey, f: &dyn Fn(&ProbeKey) -> String| opt(k.probe.as_ref().map(f));
        let fields = |k: &RunKey| -> [(&'static str, String); 25] {
            [
                ("command", k.command.clone()),
                ("model", k.model.clone()),
                ("model files digest", short(&k.model_digest)),
                (
                    "--random-weights",
                    opt(k.random_weights.map(|s| s.to_string())),
                ),
                ("corpus", k.corpus.clone()),
                ("corpus digest", short(&k.corpus_digest)),
                ("corpus size", format!("{} snippets", k.corpus_size)),
                ("--limit", opt(k.limit.map(|n| n.to_string()))),
                ("--mode", k.mode.clone()),
                ("measure", k.measure.clone()),
                ("--seed", k.seed.to_string()),
                (
                    "model shape",
                    format!("{} layers x {} heads", k.layers, k.heads),
                ),
                ("--edges", k.edges.join(",")),
                ("--layers", list(&k.knock_layers)),
                ("--heads", list(&k.knock_heads)),
                ("--control", k.control.to_string()),
                ("--ablation", opt(k.ablation.clone())),
                ("--probe", probe(k, &|p| p.task.clone())),
                ("--probe-layer", probe(k, &|p| p.layer.to_string())),
                (
                    "--probe-pair-features",
                    probe(k, &|p| opt(p.pair_features.clone())),
                ),
                ("--probe-corpus", probe(k, &|p| p.corpus.clone())),
                (
                    "--probe-limit",
                    probe(k, &|p| {
                        format!(
                            "{} ({} snippets)",
                            opt(p.limit.map(|n| n.to_string())),
                            p.snippets
                        )
                    }),
                ),
                (
                    "probe corpus digest",
                    probe(k, &|p| short(&p.corpus_digest)),
                ),
                (
                    "probe test accuracy",
                    probe(k, &|p| {
                        format!("{} ({})", f64::from_bits(p.test_accuracy), p.rows.join(","))
                    }),
                ),
                ("--rewrite", opt(k.rewrite.clone())),
            ]
        };
        fields(self)
            .into_iter()
            .zip(fields(other))
            .find(|(a, b)| a.1 != b.1)
            .map(|(a, b)| (a.0, a.1, b.1))
    }

    /// Values each snippet holds: per edge set and class a (knocked, control) pair, then
    /// with a probe per edge set and probe row an (unmodified, knocked, control) triple;
    /// per head and class one; per hidden state and class a patch's four.
    fn width(&self) -> usize {
        match self.command.as_str() {
            "knockout" => self.edges.len() * 4 + self.probe_width(),
            "patch" => (self.layers + 1) * PATCH_CLASSES.len() * VALUES_PER_CLASS,
            _ => self.layers * self.heads * 2,
        }
    }

    /// The probe's share of [`RunKey::width`].
    fn probe_width(&self) -> usize {
        self.probe
            .as_ref()
            .map_or(0, |p| self.edges.len() * p.rows.len() * 3)
    }
}

/// One snippet: its corpus index and its values as `f64` bits (`None`: failed, or for a
/// patch skipped); a patch's snippet also keeps its origin and why it was skipped.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Record {
    index: usize,
    values: Option<Vec<Option<u64>>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    origin: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    skipped: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct ShardFile {
    format: String,
    run: RunKey,
    /// The model's `ModelInfo` as the tables print it.
    model_info: Value,
    shard: Shard,
    snippets: Vec<Record>,
}

fn bits(v: Option<f64>) -> Option<u64> {
    v.map(f64::to_bits)
}

/// Write shard `shard` of a knockout run: `per` its snippets in corpus order.
pub fn write_knockout(
    dir: &Path,
    run: RunKey,
    model_info: Value,
    shard: Shard,
    per: &[(usize, KnockoutPairs)],
) -> Result<PathBuf> {
    let snippets = per
        .iter()
        .map(|(i, p)| Record {
            index: *i,
            values: p.as_ref().map(|sn| {
                let probe = sn.probe.iter().flatten().flat_map(|r| {
                    [
                        bits(r.map(|x| x.0)),
                        bits(r.map(|x| x.1)),
                        bits(r.and_then(|x| x.2)),
                    ]
                });
                sn.classes
                    .iter()
                    .flat_map(|classes| classes.iter())
                    .flat_map(|kc| [bits(kc.map(|x| x.0)), bits(kc.map(|x| x.1))])
                    .chain(probe)
                    .collect()
            }),
            origin: None,
            skipped: None,
        })
        .collect();
    write(dir, run, model_info, shard, snippets)
}

/// Write shard `shard` of an ablation run: `per` its snippets in corpus order.
pub fn write_ablation(
    dir: &Path,
    run: RunKey,
    model_info: Value,
    shard: Shard,
    per: &[(usize, AblationValues)],
) -> Result<PathBuf> {
    let snippets = per
        .iter()
        .map(|(i, v)| Record {
            index: *i,
            values: v.as_ref().map(|v| v.iter().map(|x| bits(*x)).collect()),
            origin: None,
            skipped: None,
        })
        .collect();
    write(dir, run, model_info, shard, snippets)
}

/// Write shard `shard` of a patch run: `per` its snippets in corpus order.
pub fn write_patch(
    dir: &Path,
    run: RunKey,
    model_info: Value,
    shard: Shard,
    per: &[PatchSnippet],
) -> Result<PathBuf> {
    let snippets = per
        .iter()
        .map(|p| Record {
            index: p.index,
            values: match &p.outcome {
                SnippetOutcome::Patched(v) => Some(v.iter().map(|x| bits(*x)).collect()),
                _ => None,
            },
            origin: Some(p.origin.clone()),
            skipped: match &p.outcome {
                SnippetOutcome::Skipped(r) => Some(r.clone()),
                _ => None,
            },
        })
        .collect();
    write(dir, run, model_info, shard, snippets)
}

fn write(
    dir: &Path,
    run: RunKey,
    model_info: Value,
    shard: Shard,
    snippets: Vec<Record>,
) -> Result<PathBuf> {
    std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
    let f = ShardFile {
        format: FORMAT.into(),
        run,
        model_info,
        shard,
        snippets,
    };
    let path = dir.join(FILE);
    let text = serde_json::to_string(&f)
        .map_err(|e| Error::Compute(format!("cannot write the shard: {e}")))?;
    crate::fsio::write_atomic(&path, text.as_bytes())?;
    Ok(path)
}

/// Whether `dir` holds a knockout, ablation or patch shard.
pub fn is_shard(dir: &Path) -> bool {
    dir.join(FILE).is_file()
}

/// Read and check one shard file: its format, its snippets exactly its shard's share of
/// the corpus, ascending, each with as many values as its run gives.
fn read(dir: &Path) -> Result<ShardFile> {
    let path = dir.join(FILE);
    let bad = |reason: String| Error::Input {
        name: path.display().to_string(),
        reason,
    };
    let bytes = crate::fsio::read_bounded(&path, MAX_SHARD_BYTES, "the shard")?;
    let format = serde_json::from_slice::<Value>(&bytes)
        .ok()
        .and_then(|v| v.get("format")?.as_str().map(str::to_string));
    if let Some(f) = format.filter(|f| f != FORMAT) {
        return Err(bad(format!(
            "shard format {f} (this codescope reads {FORMAT})"
        )));
    }
    let f: ShardFile = serde_json::from_slice(&bytes).map_err(|e| {
        bad(format!(
            "not a codescope knockout, ablation or patch shard ({e})"
        ))
    })?;
    if f.format != FORMAT {
        return Err(bad(format!(
            "shard format {} (this codescope reads {FORMAT})",
            f.format
        )));
    }
    let r = &f.run;
    if !["knockout", "ablate", "patch"].contains(&r.command.as_str()) {
        return Err(bad(format!(
            "a shard of {:?}, not of knockout, ablate or patch",
            r.command
        )));
    }
    if r.command == "patch" && r.rewrite.is_none() {
        return Err(bad("a patch shard without --rewrite".into()));
    }
    if Measure::from_name(&r.measure).is_none() {
        return Err(bad(format!("unknown measure {:?}", r.measure)));
    }
    if r.command == "ablate" && ablation_mode(r).is_none() {
        return Err(bad(
            "an ablation shard without --ablation zero or mean".into()
        ));
    }
    let limits = crate::model::limits::MAX_LAYERS;
    let probe_rows = r.probe.as_ref().map_or(0, |p| p.rows.len());
    if r.layers > limits || r.heads > limits * 64 || r.edges.len() > 64 || probe_rows > 1024 {
        return Err(bad("holds a run of an impossible shape".into()));
    }
    let want = f.shard.size_of(r.corpus_size);
    let owned = f
        .snippets
        .iter()
        .all(|s| s.index < r.corpus_size && f.shard.owns(s.index));
    let ascending = f.snippets.windows(2).all(|w| w[0].index < w[1].index);
    if f.snippets.len() != want || !owned || !ascending {
        return Err(bad(format!(
            "does not hold shard {}'s {want} snippets of {} once each",
            f.shard, r.corpus_size
        )));
    }
    let width = r.width();
    for s in &f.snippets {
        if let Some(v) = &s.values {
            let effects = r.edges.len() * 4;
            let paired = r.command != "knockout"
                || v.len() != width
                || (v[..effects]
                    .chunks(2)
                    .all(|p| p[0].is_some() == p[1].is_some())
                    && v[effects..].chunks(3).all(|t| {
                        t[0].is_some() == t[1].is_some() && (t[0].is_some() || t[2].is_none())
                    }));
            if v.len() != width || !paired {
                return Err(bad(format!(
                    "snippet {} holds values of another shape",
                    s.index
                )));
            }
        }
    }
    Ok(f)
}

fn ablation_mode(r: &RunKey) -> Option<AblationMode> {
    match r.ablation.as_deref() {
        Some("zero") => Some(AblationMode::Zero),
        Some("mean") => Some(AblationMode::Mean),
        _ => None,
    }
}

/// A merged run, ready to print as the one-process run prints.
pub enum Merged {
    Knockout(CorpusKnockout),
    Ablation(CorpusAblation),
    Patch(CorpusPatch),
}

/// The merged run with the model's info and the corpus name its tables print.
pub struct MergedRun {
    pub result: Merged,
    pub model_info: Value,
    pub corpus: String,
    pub shards: usize,
}

impl MergedRun {
    pub fn to_json(&self) -> Value {
        match &self.result {
            Merged::Knockout(r) => r.to_json(&self.model_info, &self.corpus),
            Merged::Ablation(r) => r.to_json(&self.model_info, &self.corpus),
            Merged::Patch(r) => r.to_json(&self.model_info, &self.corpus),
        }
    }

    pub fn to_csv(&self) -> String {
        match &self.result {
            Merged::Knockout(r) => r.to_csv(),
            Merged::Ablation(r) => r.to_csv(),
            Merged::Patch(r) => r.to_csv(),
        }
    }

    pub fn summary_text(&self) -> String {
        match &self.result {
            Merged::Knockout(r) => r.summary_text(&self.corpus),
            Merged::Ablation(r) => r.summary_text(&self.corpus),
            Merged::Patch(r) => r.summary_text(&self.corpus),
        }
    }
}

/// Merge the N shards in `dirs` (any order) into the run one process gives.
pub fn merge(dirs: &[PathBuf]) -> Result<MergedRun> {
    let err = |d: &Path, reason: String| Error::Input {
        name: d.display().to_string(),
        reason,
    };
    let files = dirs
        .iter()
        .map(|d| Ok((d, read(d)?)))
        .collect::<Result<Vec<_>>>()?;
    let Some((first_dir, first)) = files.first() else {
        return Err(Error::Input {
            name: "merge".into(),
            reason: "no shard directories given".into(),
        });
    };
    let n = first.shard.count;
    let mut seen = vec![false; n];
    let mut records: Vec<&Record> = Vec::new();
    for (d, f) in &files {
        if let Some((field, theirs, ours)) = f.run.difference(&first.run) {
            return Err(err(
                d,
                format!(
                    "is not of the same run as {} ({field}: {theirs} here, {ours} there)",
                    first_dir.display()
                ),
            ));
        }
        if f.model_info != first.model_info {
            return Err(err(
                d,
                format!("is not of the same model as {}", first_dir.display()),
            ));
        }
        if f.shard.count != n {
            return Err(err(d, format!("is not one of {n} shards")));
        }
        if std::mem::replace(&mut seen[f.shard.index - 1], true) {
            return Err(err(d, format!("repeats shard {}", f.shard)));
        }
        records.extend(&f.snippets);
    }
    if let Some(k) = seen.iter().position(|s| !s) {
        return Err(Error::Input {
            name: "merge".into(),
            reason: format!("shard {}/{n} is missing", k + 1),
        });
    }
    records.sort_by_key(|r| r.index);
    let r = &first.run;
    let measure = Measure::from_name(&r.measure)
        .ok_or_else(|| err(first_dir, format!("unknown measure {:?}", r.measure)))?;
    let value = |b: &Option<u64>| b.map(f64::from_bits);
    let result = if r.command == "patch" {
        let per: Vec<PatchSnippet> = records
            .iter()
            .map(|rec| PatchSnippet {
                index: rec.index,
                origin: rec.origin.clone().unwrap_or_default(),
                outcome: match (&rec.values, &rec.skipped) {
                    (Some(v), _) => SnippetOutcome::Patched(v.iter().map(value).collect()),
                    (None, Some(reason)) => SnippetOutcome::Skipped(reason.clone()),
                    (None, None) => SnippetOutcome::Failed,
                },
            })
            .collect();
        Merged::Patch(patch::patch_aggregate(
            per,
            r.layers,
            r.rewrite.as_deref().unwrap_or_default(),
            r.seed,
        ))
    } else if r.command == "knockout" {
        let effects = r.edges.len() * 4;
        let probe_rows = r.probe.as_ref().map_or(1, |p| p.rows.len().max(1));
        let per: Vec<KnockoutPairs> = records
            .iter()
            .map(|rec| {
                rec.values.as_ref().map(|v| causal::SnippetKnockout {
                    classes: v[..effects]
                        .chunks(4)
                        .map(|c| {
                            let pair = |i: usize| value(&c[i]).zip(value(&c[i + 1]));
                            [pair(0), pair(2)]
                        })
                        .collect(),
                    probe: v[effects..]
                        .chunks(probe_rows * 3)
                        .map(|set| {
                            set.chunks(3)
                                .map(|t| Some((value(&t[0])?, value(&t[1])?, value(&t[2]))))
                                .collect()
                        })
                        .collect(),
                })
            })
            .collect();
        let probe = r.probe.as_ref().map(ProbeKey::info);
        Merged::Knockout(causal::knockout_aggregate(
            &per,
            &r.edges,
            measure,
            r.control,
            r.seed,
            probe.as_ref(),
        ))
    } else {
        let mode = ablation_mode(r)
            .ok_or_else(|| err(first_dir, "an ablation shard without a mode".into()))?;
        let per: Vec<AblationValues> = records
            .iter()
            .map(|rec| rec.values.as_ref().map(|v| v.iter().map(value).collect()))
            .collect();
        Merged::Ablation(causal::ablate_aggregate(
            &per, r.layers, r.heads, mode, measure, r.seed,
        ))
    };
    Ok(MergedRun {
        result,
        model_info: first.model_info.clone(),
        corpus: r.corpus.clone(),
        shards: files.len(),
    })
}
