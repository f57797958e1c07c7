//! Hugging Face hub models: the HF cache first, then the hub.

use std::net::{TcpStream, ToSocketAddrs};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::download::{copy_capped, download};
use super::files::{shard_names, ModelFiles};
use super::progress::progress;
use super::tempdir::TempDir;
use crate::error::{Error, Result};
use crate::paths::{hf_cache_dir, is_safe_component};

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
    let commit = if revision.len() == 40 && is_hex_id(revision) {
        revision.to_string()
    } else {
        crate::fsio::read_to_string_bounded(&base.join("refs").join(revision), 4096, "a hub ref")
            .ok()?
            .trim()
            .to_string()
    };
    // A ref file names a commit; anything else is not followed as a path.
    if !(commit.len() == 40 && is_hex_id(&commit)) {
        return None;
    }
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

/// Whether `s` is a git object id as the hub names commits and blobs (40 hex digits) or
/// an LFS sha256 (64).
fn is_hex_id(s: &str) -> bool {
    matches!(s.len(), 40 | 64) && s.chars().all(|c| c.is_ascii_hexdigit())
}

/// `HF_TOKEN`, else the token `huggingface-cli login` saved, for gated repositories.
fn hub_token() -> Option<String> {
    if let Some(t) = std::env::var("HF_TOKEN")
        .ok()
        .filter(|t| !t.trim().is_empty())
    {
        return Some(t.trim().to_string());
    }
    let home = std::env::var_os("HF_HOME")
        .filter(|p| !p.is_empty())
        .map(PathBuf::from)
        .or_else(|| hf_cache_dir().parent().map(Path::to_path_buf))?;
    let t = crate::fsio::read_to_string_bounded(&home.join("token"), 4096, "the hub token").ok()?;
    Some(t.trim().to_string()).filter(|t| !t.is_empty())
}

/// A GET to the hub itself (with the token, redirects not followed: the hub's own
/// headers name the blob and commit before a CDN takes over).
fn hub_get(
    url: &str,
    timeout: Duration,
) -> std::result::Result<ureq::http::Response<ureq::Body>, String> {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .tls_config(
            ureq::tls::TlsConfig::builder()
                .root_certs(ureq::tls::RootCerts::PlatformVerifier)
                .build(),
        )
        .timeout_connect(Some(Duration::from_secs(10)))
        .timeout_global(Some(timeout))
        .max_redirects(0)
        .build()
        .into();
    let mut req = agent.get(url);
    if let Some(t) = hub_token() {
        req = req.header("Authorization", format!("Bearer {t}"));
    }
    req.call().map_err(|e| e.to_string())
}

fn header(r: &ureq::http::Response<ureq::Body>, name: &str) -> Option<String> {
    r.headers()
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map(|v| {
            v.trim()
                .trim_start_matches("W/")
                .trim_matches('"')
                .to_string()
        })
}

/// The repository as the hub describes it at `revision`: its commit and file names.
fn repo_info(repo: &str, revision: &str, source: &str) -> Result<(String, Vec<String>)> {
    let net = |e: String| Error::Network(format!("{source}: {e}"));
    let url = format!("{}/api/models/{repo}/revision/{revision}", hub_endpoint());
    let mut r = hub_get(&url, Duration::from_secs(30)).map_err(net)?;
    if !r.status().is_success() {
        return Err(net(format!("{url} answered {}", r.status())));
    }
    let v: serde_json::Value = r
        .body_mut()
        .read_json()
        .map_err(|e| net(format!("bad repository info: {e}")))?;
    let commit = v["sha"].as_str().unwrap_or_default().to_string();
    if !(commit.len() == 40 && is_hex_id(&commit)) {
        return Err(net(format!(
            "the hub answered commit {commit:?}, which is not a commit id"
        )));
    }
    let files = v["siblings"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|s| s["rfilename"].as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default();
    Ok((commit, files))
}

/// Fetch `file` of `repo` at `commit` into the HF cache as the hub's own client lays it
/// out (`blobs/{etag}`, `snapshots/{commit}/{file}` → the blob), unless the blob is
/// there already. The file name, the etag and the commit the hub answers are validated
/// before they become paths; the download is capped by its declared size and, when the
/// etag is an LFS sha256, checked against it. Returns the snapshot path and the digests.
fn fetch_file(
    repo: &str,
    commit: &str,
    file: &str,
    source: &str,
) -> Result<(PathBuf, crate::model::integrity::Digests)> {
    let net = |e: String| Error::Network(format!("{source}/{file}: {e}"));
    if !is_safe_component(file) {
        return Err(net("not a plain file name; refusing to write it".into()));
    }
    let base = hf_cache_dir().join(format!("models--{}", repo.replace('/', "--")));
    let url = format!("{}/{repo}/resolve/{commit}/{file}", hub_endpoint());
    let mut first = hub_get(&url, Duration::from_secs(3600)).map_err(net)?;
    let status = first.status();
    if !(status.is_success() || status.is_redirection()) {
        return Err(net(format!("the hub answered {status}")));
    }
    let etag = header(&first, "x-linked-etag")
        .or_else(|| header(&first, "etag"))
        .unwrap_or_default()
        .to_ascii_lowercase();
    if !is_hex_id(&etag) {
        return Err(net(format!(
            "the hub answered etag {etag:?}, which is not a blob id"
        )));
    }
    if let Some(c) = header(&first, "x-repo-commit").filter(|c| c != commit) {
        return Err(net(format!(
            "the hub answered commit {c:?} for a file of commit {commit}"
        )));
    }
    let declared = header(&first, "x-linked-size")
        .and_then(|v| v.parse().ok())
        .or_else(|| {
            first
                .body()
                .content_length()
                .filter(|_| status.is_success())
        });
    let blobs = base.join("blobs");
    let blob = blobs.join(&etag);
    let digests = if blob.is_file() {
        crate::model::integrity::digest_file(&blob).map_err(|e| Error::io(&blob, e))?
    } else {
        let tmp = TempDir::new(&blobs)?;
        let part = tmp.path.join("blob");
        if progress() {
            crate::logging::notice(format_args!("fetching {source}/{file}"));
        }
        tracing::info!(source, file, "fetching from the hub");
        let w = if status.is_redirection() {
            let loc = header(&first, "location")
                .ok_or_else(|| net("a redirect without a location".into()))?;
            let loc = if loc.starts_with('/') {
                format!("{}{loc}", hub_endpoint().trim_end_matches('/'))
            } else {
                loc
            };
            download(&loc, &part, declared, file)?
        } else {
            let limit = match declared {
                Some(d) => d,
                None => crate::model::limits::max_download_bytes()?,
            };
            let mut r = first.body_mut().with_config().limit(u64::MAX).reader();
            let w = copy_capped(
                &mut r,
                &part,
                limit,
                |_| {},
                || net(format!("sends more than {limit} bytes")),
                |e| net(format!("download failed: {e}")),
            )?;
            if declared.is_some_and(|d| d != w.bytes) {
                return Err(net(format!(
                    "sent {} bytes, {limit} were declared",
                    w.bytes
                )));
            }
            w
        };
        if etag.len() == 64 && w.sha256 != etag {
            return Err(net(format!(
                "downloaded sha256 {} differs from the hub's {etag}",
                w.sha256
            )));
        }
        std::fs::rename(&part, &blob).map_err(|e| Error::io(&blob, e))?;
        w.digests
    };
    let snap = base.join("snapshots").join(commit);
    std::fs::create_dir_all(&snap).map_err(|e| Error::io(&snap, e))?;
    let link = snap.join(file);
    let _ = std::fs::remove_file(&link);
    std::os::unix::fs::symlink(Path::new("../../blobs").join(&etag), &link)
        .map_err(|e| Error::io(&link, e))?;
    Ok((link, digests))
}

/// Download what codescope needs of a hub repository (config, tokenizer, weights) into
/// the HF cache, then record their digests (see `model::integrity`).
fn download_hub(repo: &str, revision: &str, source: &str) -> Result<ModelFiles> {
    let (commit, files) = repo_info(repo, revision, source)?;
    let has = |f: &str| files.iter().any(|x| x == f);
    let mut wanted: Vec<String> = vec!["config.json".into()];
    if has("tokenizer.json") {
        wanted.push("tokenizer.json".into());
    } else if has("vocab.json") && has("merges.txt") {
        wanted.extend(["vocab.json".into(), "merges.txt".into()]);
    } else if has("vocab.txt") {
        wanted.push("vocab.txt".into());
    } else if has("sentencepiece.bpe.model") {
        // PLBART's hub repos: its SentencePiece BPE model (`model::sentencepiece`).
        wanted.push("sentencepiece.bpe.model".into());
    } else if let Some(spm) = ["spiece.model"].into_iter().find(|f| has(f)) {
        // Refused before the weights are downloaded (some T5s).
        return Err(Error::ModelNotFound {
            spec: source.into(),
            reason: format!(
                "the hub repo has no tokenizer.json, only the SentencePiece model {spm}, which \
                 codescope cannot read; write a tokenizer.json with transformers \
                 (AutoTokenizer.from_pretrained(REPO).save_pretrained(DIR)) and use --model DIR"
            ),
        });
    }
    if has("tokenizer_config.json") {
        wanted.push("tokenizer_config.json".into());
    }
    let mut digests = Vec::new();
    if has("model.safetensors") {
        wanted.push("model.safetensors".into());
    } else if has("model.safetensors.index.json") {
        let name = "model.safetensors.index.json";
        let (idx, sha) = fetch_file(repo, &commit, name, source)?;
        digests.push((name.to_string(), sha));
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
    for f in &wanted {
        let (_, sha) = fetch_file(repo, &commit, f, source)?;
        digests.push((f.clone(), sha));
    }
    // The revision's ref, so the next run finds the snapshot offline.
    let base = hf_cache_dir().join(format!("models--{}", repo.replace('/', "--")));
    if revision != commit {
        let r = base.join("refs").join(revision);
        if let Some(parent) = r.parent() {
            std::fs::create_dir_all(parent).map_err(|e| Error::io(parent, e))?;
        }
        crate::fsio::write_atomic(&r, commit.as_bytes())?;
    }
    let dir = base.join("snapshots").join(&commit);
    crate::model::integrity::record(&dir, source, &digests)?;
    ModelFiles::from_dir(&dir, source.into())
}
