//! Probing split over machines: the expensive part of a probe run is tracing the corpus,
//! so `probe --shard K/N --out DIR` traces only shard K's snippets (those `i` with
//! `i % N == K - 1`, as `reproduce` splits) and writes their code-token hidden states to
//! `DIR` in the feature-cache format with a manifest (`shard.json`); `codescope merge`
//! puts the N shards back in corpus order into the feature cache under the key of the
//! whole corpus, where the next `codescope probe` over the same corpus and model finds
//! them and only trains — the same fits on the same features, so the same tables as one
//! process (on machines whose forward passes agree bit for bit: same build and thread
//! count).
//!
//! A manifest records the sha256 of the model's files ([`crate::model::LoadedModel::digest`])
//! besides the cache key (which covers the model's name and shape and the corpus's
//! contents); shards that differ in either are refused with one line naming what
//! differs. Manifests are read at most [`MAX_MANIFEST_BYTES`] and their numbers checked
//! (shard in range, at most [`crate::analysis::reproduce::MAX_SHARDS`]; layers, width).

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::dataset::{Features, SnippetHidden};
use super::{cache, dataset, Progress, RunSpec};
use crate::analysis::reproduce::Shard;
use crate::error::{Error, Result};

/// v2: with the model files' digest.
const FORMAT: &str = "codescope-probe-shard-v2";

/// Largest `shard.json` read.
pub const MAX_MANIFEST_BYTES: u64 = 1 << 20;

/// What a shard directory holds.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Manifest {
    pub format: String,
    /// Feature-cache key of the whole corpus with this model.
    pub key: String,
    pub model: String,
    /// sha256 of the model's files.
    pub model_digest: String,
    pub corpus: String,
    pub shard: Shard,
    /// Snippets in the whole corpus.
    pub snippets: usize,
    /// Hidden layers (embeddings included) and width.
    pub layers: usize,
    pub dim: usize,
}

/// Trace shard `shard` of `spec`'s corpus and write its features and manifest to `out`.
/// Returns how many snippets it traced.
pub fn write_shard(
    spec: &RunSpec,
    shard: Shard,
    out: &Path,
    progress: &mut dyn FnMut(Progress),
) -> Result<usize> {
    let info = &spec.model.info;
    let layers = info.layers + 1;
    let own: Vec<usize> = (0..spec.snippets.len())
        .filter(|&i| shard.owns(i))
        .collect();
    let syntaxes = dataset::parse_all(spec.snippets);
    let mut snippets = Vec::with_capacity(own.len());
    for (done, &i) in own.iter().enumerate() {
        spec.check_cancel()?;
        let h = match &syntaxes[i] {
            Some(syn) => dataset::snippet_hidden(spec.model, syn).unwrap_or_else(|e| {
                tracing::warn!(snippet = i, error = %e, "probe shard: snippet skipped");
                super::empty(layers)
            }),
            None => super::empty(layers),
        };
        snippets.push(h);
        progress(Progress::Traced {
            done: done + 1,
            total: own.len(),
        });
    }
    let feats = Features {
        dim: info.hidden_size,
        layers,
        snippets,
    };
    cache::save(&out.join("features"), &feats)?;
    let manifest = Manifest {
        format: FORMAT.into(),
        key: cache::key(info, spec.snippets),
        model: info.source.clone(),
        model_digest: spec.model.digest()?,
        corpus: spec.corpus_name.clone(),
        shard,
        snippets: spec.snippets.len(),
        layers,
        dim: info.hidden_size,
    };
    let path = out.join("shard.json");
    let text = serde_json::to_string_pretty(&manifest)
        .map_err(|e| Error::io(&path, std::io::Error::other(e)))?;
    crate::fsio::write_atomic(&path, text.as_bytes())?;
    Ok(own.len())
}

/// Whether `dir` holds a probe shard.
pub fn is_shard(dir: &Path) -> bool {
    dir.join("shard.json").is_file()
}

fn read_manifest(dir: &Path) -> Result<Manifest> {
    let path = dir.join("shard.json");
    let bad = |reason: String| Error::Input {
        name: path.display().to_string(),
        reason,
    };
    let bytes = crate::fsio::read_bounded(&path, MAX_MANIFEST_BYTES, "the shard manifest")?;
    // The format first, so that a shard of another version is named as such.
    let format = serde_json::from_slice::<serde_json::Value>(&bytes)
        .ok()
        .and_then(|v| v.get("format")?.as_str().map(str::to_string));
    if let Some(f) = format.filter(|f| f != FORMAT) {
        return Err(bad(format!(
            "shard format {f} (this codescope reads {FORMAT})"
        )));
    }
    let m: Manifest = serde_json::from_slice(&bytes)
        .map_err(|e| bad(format!("not a codescope probe shard ({e})")))?;
    if m.format != FORMAT {
        return Err(bad(format!(
            "shard format {} (this codescope reads {FORMAT})",
            m.format
        )));
    }
    let max_layers = crate::model::limits::MAX_LAYERS + 1;
    if m.layers == 0 || m.layers > max_layers {
        return Err(bad(format!(
            "{} hidden layers (from 1 to {max_layers} expected)",
            m.layers
        )));
    }
    if m.dim == 0 {
        return Err(bad("hidden width 0".into()));
    }
    Ok(m)
}

/// Put the shards in `dirs` back in corpus order and store them in the feature cache
/// under `cache_root`; returns the cache directory and the manifest of the first shard.
pub fn merge_shards(dirs: &[PathBuf], cache_root: &Path) -> Result<(PathBuf, Manifest)> {
    let err = |d: &Path, reason: String| Error::Input {
        name: d.display().to_string(),
        reason,
    };
    let mut parts: Vec<(Manifest, &PathBuf)> = Vec::new();
    for d in dirs {
        parts.push((read_manifest(d)?, d));
    }
    let Some((first, _)) = parts.first().cloned() else {
        return Err(Error::Input {
            name: "merge".into(),
            reason: "no shard directories given".into(),
        });
    };
    let n = first.shard.count;
    let mut slots: Vec<Option<Vec<SnippetHidden>>> = vec![None; n];
    let short = |d: &str| {
        d.chars()
            .take(crate::analysis::reproduce::SHORT_DIGEST)
            .collect()
    };
    for (m, d) in &parts {
        let fields = |m: &Manifest| -> [(&'static str, String); 6] {
            [
                ("model", m.model.clone()),
                ("model files digest", short(&m.model_digest)),
                ("corpus", m.corpus.clone()),
                ("cache key (model and corpus contents)", short(&m.key)),
                ("corpus size", format!("{} snippets", m.snippets)),
                ("hidden states", format!("{} layers x {}", m.layers, m.dim)),
            ]
        };
        if let Some((a, b)) = fields(m)
            .into_iter()
            .zip(fields(&first))
            .find(|(a, b)| a.1 != b.1)
        {
            return Err(err(
                d,
                format!(
                    "is not of the same run as {} ({}: {} here, {} there)",
                    parts[0].1.display(),
                    a.0,
                    a.1,
                    b.1
                ),
            ));
        }
        if m.shard.count != n {
            return Err(err(d, format!("is not one of {n} shards")));
        }
        let own = m.shard.size_of(m.snippets);
        let f = cache::load(&d.join("features"), m.layers, own, m.dim)
            .ok_or_else(|| err(d, "its features are missing or damaged".into()))?;
        let slot = &mut slots[m.shard.index - 1];
        if slot.is_some() {
            return Err(err(d, format!("repeats shard {}", m.shard)));
        }
        *slot = Some(f.snippets);
    }
    let mut per_shard: Vec<std::vec::IntoIter<SnippetHidden>> = Vec::with_capacity(n);
    for (k, s) in slots.into_iter().enumerate() {
        match s {
            Some(v) => per_shard.push(v.into_iter()),
            None => {
                return Err(Error::Input {
                    name: "merge".into(),
                    reason: format!("shard {}/{n} is missing", k + 1),
                })
            }
        }
    }
    let mut snippets = Vec::with_capacity(first.snippets);
    for i in 0..first.snippets {
        let h = per_shard[i % n].next().ok_or_else(|| Error::Input {
            name: "merge".into(),
            reason: format!("shard {}/{n} holds too few snippets", i % n + 1),
        })?;
        snippets.push(h);
    }
    let feats = Features {
        dim: first.dim,
        layers: first.layers,
        snippets,
    };
    let dir = cache::dir(cache_root, &first.key);
    cache::save(&dir, &feats)?;
    Ok((dir, first))
}
