//! Dequantized GGUF weights cached on disk, so a GGUF model opens in a fraction of the
//! time the first open takes (issue #18).
//!
//! Layout: `{cache}/gguf-f32/{sha256 of the GGUF}/weights.safetensors` holds every
//! tensor as the architectures take it (f32, HF checkpoint names, llama.cpp's
//! conversion edits undone; the parts of fused projections back to back), beside
//! `source.json` naming the GGUF it came from (path, size, mtime, the digests of its first
//! and last MiB) and, for Gemma-style tokenizers, `tokenizer-merges.bin` (the merge table
//! codescope's own encoder derives from the metadata). Entries are content-addressed: two
//! copies of one GGUF share one entry.
//!
//! - First open: the GGUF is hashed on its own thread while its tensors are dequantized
//!   (the hash costs no extra wall time on an idle core); the entry is then written on a
//!   background thread ([`finish`] waits for it before the process exits) into a
//!   temporary directory renamed into place, and recorded in `model::integrity`.
//! - Later opens: the entry is found from the GGUF's path, size, mtime and its first
//!   and last MiB (no full hash), checked with `integrity::check_on_open` (size and
//!   mtime now, full digest in the background) and memory-mapped: the tensors are views
//!   of the mapping ([`crate::model::mapped`], in the binary) or, without codescope's
//!   allocator, read into buffers in parallel.
//! - [`CacheMode`]: on by default in the binary for models up to [`AUTO_MAX_BYTES`] of f32.
//! - `codescope cache clean` removes every entry; `codescope models` lists them.

use std::collections::HashMap;
use std::io::{Read, Seek, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::thread::JoinHandle;

use candle_core::{Device, Tensor};
use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::error::{Error, Result};
use crate::model::{integrity, weights};
use crate::paths::gguf_cache_dir;

/// Bump when the stored form changes (names, edits, dtype): older entries are ignored.
const FORMAT: u32 = 2;
const WEIGHTS: &str = "weights.safetensors";
/// The tokenizer's merge table ([`crate::model::CodeTokenizer::stored_form`]), when
/// codescope's own encoder covers the file.
const TOKENIZER: &str = "tokenizer-merges.bin";

/// The tokenizer state saved in an entry, if any.
pub fn tokenizer_state(dir: &Path) -> Option<Vec<u8>> {
    let p = dir.join(TOKENIZER);
    if !p.is_file() {
        return None;
    }
    crate::fsio::read_bounded(
        &p,
        crate::model::limits::MAX_TOKENIZER_BYTES,
        "the merge table",
    )
    .map_err(|e| tracing::warn!("not using the cached merge table: {e}"))
    .ok()
}
const SOURCE: &str = "source.json";

/// What an entry was made from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Source {
    pub format: u32,
    /// The GGUF, canonical path.
    pub path: PathBuf,
    pub size: u64,
    pub mtime_ns: u128,
    /// sha256 of the GGUF's first and last MiB (a cheap guard beside size and mtime).
    pub ends_sha256: String,
    /// sha256 of the whole GGUF (the entry's name).
    pub sha256: String,
}

/// One cache entry, for listings.
#[derive(Debug, Clone)]
pub struct Entry {
    pub dir: PathBuf,
    pub source: Option<Source>,
    pub bytes: u64,
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn mtime_ns(meta: &std::fs::Metadata) -> u128 {
    meta.modified()
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_nanos())
}

/// sha256 of the first and last MiB of `path` (with its size).
fn ends_sha256(path: &Path, size: u64) -> std::io::Result<String> {
    const MIB: u64 = 1 << 20;
    let mut f = std::fs::File::open(path)?;
    let mut h = Sha256::new();
    h.update(size.to_le_bytes());
    let mut buf = vec![0u8; MIB.min(size) as usize];
    f.read_exact(&mut buf)?;
    h.update(&buf);
    if size > MIB {
        let tail = MIB.min(size - MIB);
        f.seek(std::io::SeekFrom::Start(size - tail))?;
        buf.resize(tail as usize, 0);
        f.read_exact(&mut buf)?;
        h.update(&buf);
    }
    Ok(hex(&h.finalize()))
}

/// How the GGUF at `path` is now (for lookups and for new entries).
fn describe(path: &Path, sha256: String) -> Result<Source> {
    let meta = std::fs::metadata(path).map_err(|e| Error::io(path, e))?;
    Ok(Source {
        format: FORMAT,
        path: path.canonicalize().unwrap_or_else(|_| path.to_path_buf()),
        size: meta.len(),
        mtime_ns: mtime_ns(&meta),
        ends_sha256: ends_sha256(path, meta.len()).map_err(|e| Error::io(path, e))?,
        sha256,
    })
}

fn read_source(dir: &Path) -> Option<Source> {
    let p = dir.join(SOURCE);
    if !p.is_file() {
        return None;
    }
    let text = crate::fsio::read_to_string_bounded(
        &p,
        crate::model::limits::MAX_CONFIG_BYTES,
        "the cache entry's source record",
    )
    .map_err(|e| tracing::warn!("ignoring a dequantized-weight cache entry: {e}"))
    .ok()?;
    serde_json::from_str(&text)
        .map_err(|e| {
            tracing::warn!(
                "ignoring a dequantized-weight cache entry {}: {e}",
                p.display()
            )
        })
        .ok()
}

/// The entry made from the GGUF at `path` as it is now, if there is one (path, size,
/// mtime and end digests must all match, and the format be this codescope's) and it
/// passes its integrity check (one that fails is discarded).
pub fn lookup(path: &Path) -> Result<Option<PathBuf>> {
    let root = gguf_cache_dir();
    if !root.is_dir() {
        return Ok(None);
    }
    let now = describe(path, String::new())?;
    for e in std::fs::read_dir(&root).into_iter().flatten().flatten() {
        let dir = e.path();
        let Some(src) = read_source(&dir) else {
            continue;
        };
        if src.format == FORMAT
            && src.path == now.path
            && src.size == now.size
            && src.mtime_ns == now.mtime_ns
            && src.ends_sha256 == now.ends_sha256
            && dir.join(WEIGHTS).is_file()
        {
            // Checked once, before anything in it is read (the weights here, the
            // tokenizer's merge table on another thread): quick now, full in the
            // background.
            if let Err(e) = integrity::check_on_open(&dir) {
                tracing::warn!("discarding the dequantized-weight cache entry: {e}");
                discard(&dir);
                return Ok(None);
            }
            return Ok(Some(dir));
        }
    }
    Ok(None)
}

/// How [`load`] served an entry's tensors.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Served {
    /// Straight from the memory-mapped file (no copy: [`crate::model::mapped`]).
    Mapped,
    /// Read into owned buffers (the binary's allocator is not installed).
    Read,
}

/// One tensor of a validated safetensors header: name, shape, data byte range.
type Slice = (String, Vec<usize>, u64, u64);

/// The tensors listed in a safetensors header (validated against the file by
/// `check_safetensors`), all F32.
fn slices(header: &[u8], corrupt: &dyn Fn(String) -> Error) -> Result<Vec<Slice>> {
    let header: serde_json::Map<String, serde_json::Value> =
        serde_json::from_slice(header).map_err(|e| corrupt(e.to_string()))?;
    header
        .into_iter()
        .filter(|(k, _)| k.as_str() != "__metadata__")
        .map(|(name, t)| {
            if t["dtype"] != "F32" {
                return Err(corrupt(format!("tensor {name} is not F32")));
            }
            let shape: Vec<usize> = t["shape"]
                .as_array()
                .map(|a| {
                    a.iter()
                        .filter_map(|d| d.as_u64())
                        .map(|d| d as usize)
                        .collect()
                })
                .unwrap_or_default();
            let b = t["data_offsets"][0].as_u64().unwrap_or(0);
            let e = t["data_offsets"][1].as_u64().unwrap_or(0);
            Ok((name, shape, b, e))
        })
        .collect()
}

/// The tensors of an entry [`lookup`] returned (its integrity checked there), its header
/// validated. With codescope's allocator installed (the binary) they are views of the
/// memory-mapped file — no copy, pages read as the model touches them; otherwise every
/// tensor is read into its own buffer, in parallel.
pub fn load(dir: &Path) -> Result<(HashMap<String, Tensor>, Served)> {
    let path = dir.join(WEIGHTS);
    weights::check_safetensors(&path)?;
    let corrupt = |reason: String| Error::CorruptWeights {
        path: path.clone(),
        reason,
    };
    if cfg!(target_endian = "little") && crate::model::mapped::available() {
        let map = crate::model::mapped::Mapping::open(&path)?;
        let bytes = map.bytes();
        let hlen = bytes
            .get(..8)
            .and_then(|b| b.try_into().ok())
            .map_or(usize::MAX, |b| u64::from_le_bytes(b) as usize);
        let data = hlen.saturating_add(8);
        // Checked above, but the file could have changed since: never slice past it.
        let header = bytes
            .get(8..data)
            .ok_or_else(|| corrupt("header longer than the file".into()))?;
        let tensors = slices(header, &corrupt)?
            .into_iter()
            .map(|(name, shape, b, e)| {
                let t = map
                    .tensor(data + b as usize, ((e - b) / 4) as usize, shape)
                    .map_err(|err| corrupt(format!("tensor {name}: {err}")))?;
                Ok((name, t))
            })
            .collect::<Result<_>>()?;
        return Ok((tensors, Served::Mapped));
    }
    use std::os::unix::fs::FileExt;
    let mut f = std::fs::File::open(&path).map_err(|e| Error::io(&path, e))?;
    let mut n = [0u8; 8];
    f.read_exact(&mut n).map_err(|e| Error::io(&path, e))?;
    let hlen = u64::from_le_bytes(n);
    let mut h = vec![0u8; hlen as usize];
    f.read_exact(&mut h).map_err(|e| Error::io(&path, e))?;
    let data = 8 + hlen;
    let tensors = slices(&h, &corrupt)?
        .into_par_iter()
        .map(|(name, shape, b, e)| {
            // Ranges and sizes were validated against the file by check_safetensors.
            let mut v = buffer(((e - b) / 4) as usize);
            // SAFETY: the byte view covers exactly v's initialised f32s; any bytes read
            // into it form valid f32s.
            let bytes =
                unsafe { std::slice::from_raw_parts_mut(v.as_mut_ptr() as *mut u8, v.len() * 4) };
            f.read_exact_at(bytes, data + b)
                .map_err(|err| Error::io(&path, err))?;
            if cfg!(target_endian = "big") {
                for x in v.iter_mut() {
                    *x = f32::from_bits(x.to_bits().swap_bytes());
                }
            }
            let t = Tensor::from_vec(v, shape, &Device::Cpu).map_err(|err| {
                corrupt(format!(
                    "tensor {name}: {}",
                    crate::error::candle_message(&err)
                ))
            })?;
            Ok((name, t))
        })
        .collect::<Result<_>>()?;
    Ok((tensors, Served::Read))
}

/// A zeroed f32 buffer whose pages the kernel may back with huge pages: ~1 GB read into
/// fresh memory otherwise costs a page fault per 4 KiB (a fifth of a cached open's CPU
/// time in the profile). Untouched until read into (calloc'd memory is mapped lazily).
pub(crate) fn buffer(n: usize) -> Vec<f32> {
    let v = vec![0f32; n];
    #[cfg(target_os = "linux")]
    if n * 4 >= 4 << 20 {
        const HUGE: usize = 2 << 20;
        let start = (v.as_ptr() as usize).div_ceil(HUGE) * HUGE;
        let end = (v.as_ptr() as usize + n * 4) / HUGE * HUGE;
        if end > start {
            // SAFETY: advice on whole pages inside our own allocation; failure is harmless.
            unsafe {
                libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_HUGEPAGE);
            }
        }
    }
    v
}

/// Entries being written: the writer and the entry's size in bytes.
static PENDING: Mutex<Vec<(JoinHandle<()>, u64)>> = Mutex::new(Vec::new());
/// When entries are read and written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CacheMode {
    /// Never (the library's default: tests and benchmarks write nothing unasked).
    Off,
    /// Read entries; write one for a model whose f32 weights take at most
    /// [`AUTO_MAX_BYTES`] (the binary's default).
    Auto,
    /// Read and write for every GGUF model (`CODESCOPE_GGUF_CACHE=1`).
    Always,
}

/// The largest dequantized model [`CacheMode::Auto`] caches: 4 GiB of f32, about a billion
/// parameters (Gemma 3 270M takes 1.1 GB; a 7B model's 28 GB is left to `Always`).
pub const AUTO_MAX_BYTES: u64 = 4 << 30;

static MODE: std::sync::atomic::AtomicU8 = std::sync::atomic::AtomicU8::new(0);

/// Use the cache as `mode` says from now on.
pub fn set_mode(mode: CacheMode) {
    let v = match mode {
        CacheMode::Off => 0,
        CacheMode::Auto => 1,
        CacheMode::Always => 2,
    };
    MODE.store(v, std::sync::atomic::Ordering::Relaxed);
}

/// The mode in force.
pub fn mode() -> CacheMode {
    match MODE.load(std::sync::atomic::Ordering::Relaxed) {
        0 => CacheMode::Off,
        1 => CacheMode::Auto,
        _ => CacheMode::Always,
    }
}

/// `CODESCOPE_GGUF_CACHE`'s value as a mode: unset or empty → `Auto`, `0` → `Off`, `1` →
/// `Always`; anything else is an error naming the setting.
pub fn mode_from_env(value: Option<&str>) -> std::result::Result<CacheMode, String> {
    match value.map(str::trim) {
        None | Some("") => Ok(CacheMode::Auto),
        Some("0") => Ok(CacheMode::Off),
        Some("1") => Ok(CacheMode::Always),
        Some(v) => Err(format!(
            "CODESCOPE_GGUF_CACHE must be 0 (off) or 1 (every GGUF model), not '{v}'; unset, models up to {} GiB of f32 weights are cached",
            AUTO_MAX_BYTES >> 30
        )),
    }
}

/// Whether entries are looked up.
pub fn enabled() -> bool {
    mode() != CacheMode::Off
}

/// Whether an entry is written for a model whose f32 weights take `bytes`.
pub fn stores(bytes: u64) -> bool {
    match mode() {
        CacheMode::Off => false,
        CacheMode::Auto => bytes <= AUTO_MAX_BYTES,
        CacheMode::Always => true,
    }
}

/// Remove one entry (it failed its integrity check).
pub fn discard(dir: &Path) {
    integrity::forget(dir);
    let _ = std::fs::remove_dir_all(dir);
}

/// Write an entry for the GGUF at `path` (whole-file digest `sha256`) holding
/// `tensors` (and the tokenizer's stored form), on a background
/// thread. Failures are logged, never fatal: the cache is an optimisation.
pub fn store_in_background(
    path: &Path,
    sha256: String,
    tensors: &HashMap<String, Tensor>,
    tokenizer: Option<Vec<u8>>,
) {
    let source = match describe(path, sha256) {
        Ok(s) => s,
        Err(e) => {
            tracing::warn!("not caching the dequantized weights: {e}");
            return;
        }
    };
    // Tensors share their storage: cloning the map copies no weights.
    let tensors = tensors.clone();
    let bytes: u64 = tensors.values().map(|t| t.elem_count() as u64 * 4).sum();
    let spawned = std::thread::Builder::new()
        .name("codescope-gguf-cache".into())
        .spawn(move || {
            let t0 = std::time::Instant::now();
            match store(&source, &tensors, tokenizer.as_deref()) {
                Ok(dir) => {
                    tracing::info!(dir = %dir.display(), ms = t0.elapsed().as_millis() as u64,
                    "dequantized GGUF weights cached")
                }
                Err(e) => tracing::warn!("caching the dequantized weights failed: {e}"),
            }
        });
    match spawned {
        Ok(h) => {
            if let Ok(mut p) = PENDING.lock() {
                p.push((h, bytes));
            }
        }
        Err(e) => tracing::warn!("cannot start the cache writer: {e}"),
    }
}

/// Wait for cache entries being written by this process. A large entry still being
/// written gets one line on stderr first (the wait can take seconds: Gemma 3 270M's is
/// 1.1 GB), saying where it goes and how to turn the cache off.
pub fn finish() {
    let handles = match PENDING.lock() {
        Ok(mut p) => std::mem::take(&mut *p),
        Err(_) => return,
    };
    for (h, bytes) in handles {
        if !h.is_finished() && bytes >= 256 << 20 {
            crate::logging::notice(format_args!(
                "finishing the dequantized-weight cache ({} MB in {}; later opens take a fraction of a second; CODESCOPE_GGUF_CACHE=0 turns it off)",
                bytes >> 20,
                gguf_cache_dir().display()
            ));
        }
        let _ = h.join();
    }
}

/// Feed the f32 values of `t` to `put` as little-endian bytes, 1 MiB at a time (no
/// copy of the whole tensor: Gemma 3's embedding alone is 671 MB).
fn put_f32(t: &Tensor, put: &mut dyn FnMut(&[u8]) -> Result<()>) -> Result<()> {
    crate::model::weights::with_f32(t, |values| {
        let mut buf = Vec::with_capacity(1 << 20);
        for chunk in values.chunks(1 << 18) {
            buf.clear();
            for x in chunk {
                buf.extend_from_slice(&x.to_le_bytes());
            }
            put(&buf)?;
        }
        Ok(())
    })?
}

/// Where a tensor goes in the file: by name, except that the parts the architectures
/// fuse into one projection (`q_proj`, `k_proj`, `v_proj`; `gate_proj`, `up_proj`) lie
/// back to back in fusing order, weights apart from biases, so that the fused matrix is a
/// view of the mapped file ([`crate::model::mapped::cat_rows`]) rather than a copy.
fn write_order(name: &str) -> String {
    const FUSED: &[(&str, &str)] = &[
        ("q_proj", "~qkv0"),
        ("k_proj", "~qkv1"),
        ("v_proj", "~qkv2"),
        ("gate_proj", "~gu0"),
        ("up_proj", "~gu1"),
    ];
    let mut parts: Vec<&str> = name.split('.').collect();
    if parts.len() >= 2 {
        let n = parts.len();
        if let Some((_, key)) = FUSED.iter().find(|(p, _)| *p == parts[n - 2]) {
            // `….q_proj.weight` sorts as `….weight.~qkv0`.
            parts[n - 2] = parts[n - 1];
            parts[n - 1] = key;
        }
    }
    parts.join(".")
}

fn store(
    source: &Source,
    tensors: &HashMap<String, Tensor>,
    tokenizer: Option<&[u8]>,
) -> Result<PathBuf> {
    let root = gguf_cache_dir();
    let final_dir = root.join(&source.sha256);
    std::fs::create_dir_all(&root).map_err(|e| Error::io(&root, e))?;
    let (tmp, _owner) = tempfile_dir(&root)?;
    let result = (|| -> Result<()> {
        let wpath = tmp.join(WEIGHTS);
        let mut names: Vec<&String> = tensors.keys().collect();
        names.sort_by_key(|n| write_order(n));
        let mut header = serde_json::Map::new();
        let mut offset = 0u64;
        for n in &names {
            let t = &tensors[*n];
            let bytes = t.elem_count() as u64 * 4;
            header.insert(
                (*n).clone(),
                serde_json::json!({"dtype": "F32", "shape": t.dims(), "data_offsets": [offset, offset + bytes]}),
            );
            offset += bytes;
        }
        header.insert(
            "__metadata__".into(),
            serde_json::json!({"codescope": "dequantized GGUF", "source_sha256": source.sha256}),
        );
        let mut h =
            serde_json::to_vec(&header).map_err(|e| Error::io(&wpath, std::io::Error::other(e)))?;
        while h.len() % 8 != 0 {
            h.push(b' ');
        }
        let f = std::fs::File::create(&wpath).map_err(|e| Error::io(&wpath, e))?;
        let mut w = std::io::BufWriter::with_capacity(1 << 22, f);
        let mut sha = integrity::FileHasher::default();
        let mut put = |b: &[u8]| -> Result<()> {
            sha.update(b);
            w.write_all(b).map_err(|e| Error::io(&wpath, e))
        };
        put(&(h.len() as u64).to_le_bytes())?;
        put(&h)?;
        for n in &names {
            put_f32(&tensors[*n], &mut put)?;
        }
        w.flush().map_err(|e| Error::io(&wpath, e))?;
        let digest = sha.finish();
        let mut files = vec![(WEIGHTS.to_string(), digest)];
        if let Some(b) = tokenizer {
            let p = tmp.join(TOKENIZER);
            std::fs::write(&p, b).map_err(|e| Error::io(&p, e))?;
            let mut h = integrity::FileHasher::default();
            h.update(b);
            files.push((TOKENIZER.to_string(), h.finish()));
        }
        let src = serde_json::to_string_pretty(source)
            .map_err(|e| Error::io(&tmp, std::io::Error::other(e)))?;
        std::fs::write(tmp.join(SOURCE), src).map_err(|e| Error::io(&tmp, e))?;
        if final_dir.exists() {
            std::fs::remove_dir_all(&final_dir).map_err(|e| Error::io(&final_dir, e))?;
        }
        std::fs::rename(&tmp, &final_dir).map_err(|e| Error::io(&final_dir, e))?;
        integrity::record(
            &final_dir,
            &format!("dequantized {}", source.path.display()),
            &files,
        )
    })();
    if tmp.exists() {
        let _ = std::fs::remove_dir_all(&tmp);
    }
    crate::signals::forget(&tmp);
    result.map(|_| final_dir)
}

/// A fresh `.tmp-{pid}-{nanos}` directory in `root` with its owner's lock (hold it until
/// the directory is renamed or removed), removed by a signal (and, if the process is
/// killed, by the next clean-up of stale temporaries, which sees the lock released).
fn tempfile_dir(root: &Path) -> Result<(PathBuf, crate::model::source::TempOwner)> {
    let (p, owner) = crate::model::source::fresh_temporary(root)?;
    std::fs::create_dir_all(&p).map_err(|e| Error::io(&p, e))?;
    crate::signals::remove_on_signal(&p);
    Ok((p, owner))
}

fn dir_bytes(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.metadata().ok())
        .map(|m| m.len())
        .sum()
}

/// Every entry (for `codescope models`).
pub fn list() -> Vec<Entry> {
    let mut v: Vec<Entry> = std::fs::read_dir(gguf_cache_dir())
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.is_dir()
                && !p
                    .file_name()
                    .is_some_and(|n| n.to_string_lossy().starts_with('.'))
        })
        .map(|dir| Entry {
            source: read_source(&dir),
            bytes: dir_bytes(&dir),
            dir,
        })
        .collect();
    v.sort_by(|a, b| a.dir.cmp(&b.dir));
    v
}

/// What [`clean`] removed.
#[derive(Debug, Default)]
pub struct Cleaned {
    pub caches: usize,
    pub bytes: u64,
    /// Stale temporaries of interrupted downloads and cache writes.
    pub stale: usize,
}

/// Remove every entry (and their integrity records) and the temporaries dead processes
/// left in codescope's cache and in the HF cache's blob directories.
pub fn clean() -> Result<Cleaned> {
    let mut r = Cleaned::default();
    for e in list() {
        integrity::forget(&e.dir);
        std::fs::remove_dir_all(&e.dir).map_err(|err| Error::io(&e.dir, err))?;
        r.caches += 1;
        r.bytes += e.bytes;
    }
    r.stale = crate::model::source::remove_all_stale_temporaries();
    Ok(r)
}
