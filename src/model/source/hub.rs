//! Hugging Face hub models: the HF cache first, then the hub.

use std::net::{TcpStream, ToSocketAddrs};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::files::{shard_names, ModelFiles};
use super::paths::hf_cache_dir;
use super::progress::progress;
use crate::error::{Error, Result};

/// `HF_HUB_OFFLINE` set to a truthy value.
pub fn hub_offline() -> bool {
    std::env::var("HF_HUB_OFFLINE")
        .map(|v| {
            matches!(
                v.trim().to_ascii_lowercase().as_str(),
                "1" | "true" | "yes" | "on"
            )
        })
        .unwrap_or(false)
}

fn hub_endpoint() -> String {
    std::env::var("HF_ENDPOINT")
        .ok()
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "https://huggingface.co".into())
}

/// The snapshot directory of `repo@revision` in the HF cache, if one exists.
/// `revision` is a branch/tag (resolved through `refs/`) or a commit hash.
pub fn hf_cached_snapshot(repo: &str, revision: &str) -> Option<PathBuf> {
    let base = hf_cache_dir().join(format!("models--{}", repo.replace('/', "--")));
    let commit = if revision.len() == 40 && revision.chars().all(|c| c.is_ascii_hexdigit()) {
        revision.to_string()
    } else {
        std::fs::read_to_string(base.join("refs").join(revision))
            .ok()?
            .trim()
            .to_string()
    };
    let snap = base.join("snapshots").join(commit);
    snap.is_dir().then_some(snap)
}

/// A cached hub model that has everything codescope needs.
pub(super) fn hf_cached_model(repo: &str, revision: &str, source: &str) -> Option<ModelFiles> {
    let snap = hf_cached_snapshot(repo, revision)?;
    ModelFiles::from_dir(&snap, source.into()).ok()
}

/// Whether the hub answers a TCP connection within `budget` (DNS included).
pub fn hub_reachable(budget: Duration) -> std::result::Result<(), String> {
    let endpoint = hub_endpoint();
    let hostport = endpoint
        .split("://")
        .nth(1)
        .unwrap_or(&endpoint)
        .split('/')
        .next()
        .unwrap_or("")
        .to_string();
    let hostport = if hostport.contains(':') {
        hostport
    } else if endpoint.starts_with("http://") {
        format!("{hostport}:80")
    } else {
        format!("{hostport}:443")
    };
    let start = Instant::now();
    let (tx, rx) = std::sync::mpsc::channel();
    let hp = hostport.clone();
    // DNS resolution has no timeout of its own: run it on a thread we can abandon.
    std::thread::spawn(move || {
        let _ = tx.send(hp.to_socket_addrs().map(|a| a.collect::<Vec<_>>()));
    });
    let addrs = match rx.recv_timeout(budget) {
        Ok(Ok(a)) if !a.is_empty() => a,
        Ok(Ok(_)) => return Err(format!("{hostport} has no address")),
        Ok(Err(e)) => return Err(format!("cannot resolve {hostport}: {e}")),
        Err(_) => return Err(format!("resolving {hostport} timed out")),
    };
    let left = budget.saturating_sub(start.elapsed());
    if left.is_zero() {
        return Err(format!("{hostport}: timed out"));
    }
    TcpStream::connect_timeout(&addrs[0], left)
        .map(|_| ())
        .map_err(|e| format!("cannot connect to {hostport}: {e}"))
}

fn hub_source(repo: &str, revision: &str) -> String {
    if revision == "main" {
        repo.to_string()
    } else {
        format!("{repo}@{revision}")
    }
}

/// Whether a hub model is complete in the HF cache.
pub fn hub_is_cached(repo: &str, revision: &str) -> bool {
    hf_cached_model(repo, revision, repo).is_some()
}

pub(super) fn resolve_hub(repo: &str, revision: &str) -> Result<ModelFiles> {
    let source = hub_source(repo, revision);
    if let Some(m) = hf_cached_model(repo, revision, &source) {
        tracing::info!(repo, revision, dir = %m.dir.display(), "hub model found in cache");
        return Ok(m);
    }
    if hub_offline() {
        return Err(Error::ModelNotFound {
            spec: source,
            reason: format!(
                "not in the Hugging Face cache at {} and HF_HUB_OFFLINE is set",
                hf_cache_dir().display()
            ),
        });
    }
    hub_reachable(Duration::from_secs(2)).map_err(|why| {
        Error::Network(format!(
            "{source} is not cached at {} and the hub is unreachable ({why})",
            hf_cache_dir().display()
        ))
    })?;
    download_hub(repo, revision, &source)
}

fn download_hub(repo: &str, revision: &str, source: &str) -> Result<ModelFiles> {
    use hf_hub::api::sync::ApiBuilder;
    use hf_hub::{Cache, Repo, RepoType};
    let net = |e: &dyn std::fmt::Display| Error::Network(format!("{source}: {e}"));
    let api = ApiBuilder::from_cache(Cache::new(hf_cache_dir()))
        .with_endpoint(hub_endpoint())
        .with_progress(progress())
        .build()
        .map_err(|e| net(&e))?;
    let r = api.repo(Repo::with_revision(
        repo.to_string(),
        RepoType::Model,
        revision.to_string(),
    ));
    let info = r.info().map_err(|e| net(&e))?;
    let files: Vec<String> = info.siblings.iter().map(|s| s.rfilename.clone()).collect();
    let has = |f: &str| files.iter().any(|x| x == f);
    let mut wanted: Vec<String> = vec!["config.json".into()];
    if has("tokenizer.json") {
        wanted.push("tokenizer.json".into());
    } else if has("vocab.json") && has("merges.txt") {
        wanted.extend(["vocab.json".into(), "merges.txt".into()]);
    } else if has("vocab.txt") {
        wanted.push("vocab.txt".into());
    }
    if has("tokenizer_config.json") {
        wanted.push("tokenizer_config.json".into());
    }
    if has("model.safetensors") {
        wanted.push("model.safetensors".into());
    } else if has("model.safetensors.index.json") {
        let idx = r.get("model.safetensors.index.json").map_err(|e| net(&e))?;
        wanted.extend(shard_names(&idx)?);
    } else if has("pytorch_model.bin") {
        wanted.push("pytorch_model.bin".into());
    } else {
        return Err(Error::ModelNotFound {
            spec: source.into(),
            reason:
                "the hub repo has no model.safetensors, sharded safetensors or pytorch_model.bin"
                    .into(),
        });
    }
    let mut dir = None;
    for f in &wanted {
        if progress() {
            crate::logging::notice(format_args!("fetching {source}/{f}"));
        }
        tracing::info!(source, file = %f, "fetching from the hub");
        let p = r.get(f).map_err(|e| net(&e))?;
        dir = p.parent().map(Path::to_path_buf);
    }
    let dir = dir.ok_or_else(|| net(&"nothing downloaded"))?;
    ModelFiles::from_dir(&dir, source.into())
}
