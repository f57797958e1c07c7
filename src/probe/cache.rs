//! On-disk cache of code-token hidden states (safetensors), one file per layer:
//! `cache_dir()/features/<key>/layer_<l>.safetensors`, holding
//! `hidden` f32 `[tokens, dim]` (all snippets' covered tokens, concatenated),
//! `tokens` i64 `[tokens]` (syntax-token index of each row) and `offsets` i64
//! `[snippets + 1]` (row range of each snippet).
//!
//! The key is a SHA-256 over a format version, the model's source string and
//! description (architecture, layers, heads, hidden size, window; the seed of a
//! random-weight baseline; PLBART's per-snippet language code) and every snippet's
//! language and text, so changing the model or one byte of the corpus misses the cache.
//! Writes are atomic ([`crate::fsio::write_atomic`]), so a crash or a full disk never
//! leaves a torn layer; a file that fails to load (or is not a regular file) is treated
//! as a miss.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use candle_core::{Device, Tensor};
use sha2::{Digest, Sha256};

use super::dataset::{Features, SnippetHidden};
use crate::corpus::Snippet;
use crate::error::{Error, Result};
use crate::model::ModelInfo;

const FORMAT: &str = "codescope-probe-features-v1";

/// Hex cache key of (model, corpus).
pub fn key(model: &ModelInfo, snippets: &[Snippet]) -> String {
    let mut h = Sha256::new();
    h.update(FORMAT);
    h.update([0]);
    h.update(model.source.as_bytes());
    h.update([0]);
    h.update(
        format!(
            "{}/{}/{}/{}/{}",
            model.architecture, model.layers, model.heads, model.hidden_size, model.window
        )
        .as_bytes(),
    );
    // A random-weight baseline's features are not the trained model's (keys of trained
    // models unchanged).
    if let Some(seed) = model.random_weights {
        h.update(format!("/random-weights {seed}").as_bytes());
    }
    // PLBART's features end each snippet with its own language's code since this tag
    // (other models' keys unchanged).
    if model.architecture == "plbart" {
        h.update(b"/per-snippet language code");
    }
    for s in snippets {
        h.update([0]);
        h.update(s.language.to_string().as_bytes());
        h.update([0]);
        h.update((s.code.len() as u64).to_le_bytes());
        h.update(s.code.as_bytes());
    }
    h.finalize()
        .iter()
        .take(16)
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The cache directory of one key.
pub fn dir(root: &Path, key: &str) -> PathBuf {
    root.join("features").join(key)
}

fn layer_path(dir: &Path, l: usize) -> PathBuf {
    dir.join(format!("layer_{l}.safetensors"))
}

/// Store every layer of `f` under `dir`.
pub fn save(dir: &Path, f: &Features) -> Result<()> {
    std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
    let dev = Device::Cpu;
    let mut offsets = vec![0i64];
    let mut toks = Vec::new();
    for s in &f.snippets {
        toks.extend(s.tokens.iter().map(|&t| t as i64));
        offsets.push(toks.len() as i64);
    }
    let n = toks.len();
    for l in 0..f.layers {
        let mut h = Vec::with_capacity(n * f.dim);
        for s in &f.snippets {
            h.extend_from_slice(&s.layers[l]);
        }
        let mut m = HashMap::new();
        m.insert("hidden", Tensor::from_vec(h, (n, f.dim), &dev)?);
        m.insert("tokens", Tensor::from_slice(&toks, n, &dev)?);
        m.insert(
            "offsets",
            Tensor::from_slice(&offsets, offsets.len(), &dev)?,
        );
        let path = layer_path(dir, l);
        let bytes = safetensors::tensor::serialize(&m, None)
            .map_err(|e| Error::io(&path, std::io::Error::other(e)))?;
        crate::fsio::write_atomic(&path, &bytes)?;
    }
    Ok(())
}

/// The bytes of layer file `p` if it is a regular file (never a device or a FIFO, which
/// a tampered shard could put there: opening a FIFO would wait forever, `/dev/zero`
/// would never end), read up to the length it has when opened.
fn read_layer(p: &Path) -> Option<Vec<u8>> {
    use std::io::Read;
    if !std::fs::metadata(p).ok()?.is_file() {
        return None;
    }
    let f = std::fs::File::open(p).ok()?;
    let len = f.metadata().ok()?.len();
    let mut buf = Vec::with_capacity(usize::try_from(len).ok()?);
    f.take(len.saturating_add(1)).read_to_end(&mut buf).ok()?;
    (buf.len() as u64 == len).then_some(buf)
}

/// Load `layers` layers for `snippets` snippets, or `None` on any miss or mismatch.
pub fn load(dir: &Path, layers: usize, snippets: usize, dim: usize) -> Option<Features> {
    let dev = Device::Cpu;
    let mut out: Vec<SnippetHidden> = Vec::new();
    for l in 0..layers {
        let m =
            candle_core::safetensors::load_buffer(&read_layer(&layer_path(dir, l))?, &dev).ok()?;
        let h = m.get("hidden")?;
        let (n, d) = h.dims2().ok()?;
        if d != dim {
            return None;
        }
        let h: Vec<f32> = h.flatten_all().ok()?.to_vec1().ok()?;
        let offsets: Vec<i64> = m.get("offsets")?.to_vec1().ok()?;
        if offsets.len().checked_sub(1) != Some(snippets) || *offsets.last()? as usize != n {
            return None;
        }
        // From 0, never decreasing (a damaged or tampered file would slice out of range).
        if offsets.first() != Some(&0) || offsets.windows(2).any(|w| w[1] < w[0]) {
            return None;
        }
        if l == 0 {
            let toks: Vec<i64> = m.get("tokens")?.to_vec1().ok()?;
            if toks.len() != n {
                return None;
            }
            out = offsets
                .windows(2)
                .map(|w| SnippetHidden {
                    tokens: toks[w[0] as usize..w[1] as usize]
                        .iter()
                        .map(|&t| t as usize)
                        .collect(),
                    layers: Vec::with_capacity(layers),
                })
                .collect();
        }
        for (s, w) in out.iter_mut().zip(offsets.windows(2)) {
            if w[1] - w[0] != s.tokens.len() as i64 {
                return None;
            }
            s.layers
                .push(h[w[0] as usize * d..w[1] as usize * d].to_vec());
        }
    }
    Some(Features {
        dim,
        layers,
        snippets: out,
    })
}
