//! The resource limits of loading and fetching models, in one place, with their
//! environment overrides (README "Trust and limits" lists them). An override that is
//! set but not a positive whole number is an error naming the variable, never silently
//! replaced by the default.

use crate::error::{Error, Result};

/// Default memory budget for the captured attention of one input, in MiB
/// (`CODESCOPE_ATTENTION_BUDGET_MB`).
pub const ATTENTION_BUDGET_MB: usize = 2048;

/// Default ceiling of one download whose size nobody declared, and of everything one
/// wheel may extract to, in MiB (`CODESCOPE_MAX_DOWNLOAD_MB`). The largest preset's
/// weights are 2.7 GB; 32 GiB leaves room for 7B-class checkpoints.
pub const MAX_DOWNLOAD_MB: u64 = 32 * 1024;

/// Default most MiB a GGUF file's metadata (tokenizer vocabularies included) may occupy
/// in memory once read (`CODESCOPE_MAX_METADATA_MB`). Gemma 3's 262k-token vocabulary
/// takes about 15 MB.
pub const MAX_METADATA_MB: u64 = 512;

/// Largest uncompressed/compressed ratio a wheel entry over 1 MiB may have. Model
/// weights barely compress (about 1.1x), tokenizer files about 5x; zip bombs are 1000x.
pub const MAX_ZIP_RATIO: u64 = 100;

/// Most bytes codescope reads of a small JSON or TOML file it did not write itself: a
/// model's `config.json`, `tokenizer_config.json`, a safetensors index, a hub ref, a tour,
/// a session, a corpus run's checkpoint (16 MiB; the largest real ones are under 1 MiB).
pub const MAX_CONFIG_BYTES: u64 = 16 << 20;

/// Most bytes of a tokenizer file (`tokenizer.json`, `vocab.json`, `merges.txt`,
/// `vocab.txt`): the largest released ones (Gemma's 262k vocabulary) are about 35 MB.
pub const MAX_TOKENIZER_BYTES: u64 = 256 << 20;

/// Check that `path` is a regular file of at most `max` bytes before a library reads it
/// whole (the `tokenizers` crate reads by path): a FIFO, a device or a sparse giant is
/// refused with the limit named.
pub fn check_file_size(path: &std::path::Path, max: u64, what: &str) -> Result<()> {
    let m = std::fs::metadata(path).map_err(|e| Error::io(path, e))?;
    if !m.is_file() {
        return Err(Error::Input {
            name: path.display().to_string(),
            reason: format!("{what} is not a regular file"),
        });
    }
    if m.len() > max {
        return Err(Error::Input {
            name: path.display().to_string(),
            reason: format!(
                "{what} is {} bytes, over the limit of {}",
                m.len(),
                crate::fsio::human(max)
            ),
        });
    }
    Ok(())
}

/// Most layers a model may declare (the largest released models have ~130); a header
/// claiming 10^9 layers is refused before anything is allocated for them.
pub const MAX_LAYERS: usize = 1024;

/// A positive whole number from the environment variable `name`; `None` when unset or
/// empty.
pub fn env_positive(name: &str) -> Result<Option<u64>> {
    let Some(raw) = std::env::var_os(name) else {
        return Ok(None);
    };
    let text = raw.to_string_lossy();
    if text.trim().is_empty() {
        return Ok(None);
    }
    match text.trim().parse::<u64>() {
        Ok(v) if v > 0 => Ok(Some(v)),
        _ => Err(Error::Setting {
            name: name.into(),
            reason: format!("'{text}' is not a positive whole number"),
        }),
    }
}

/// The attention budget in MiB.
pub fn attention_budget_mb() -> Result<usize> {
    Ok(env_positive("CODESCOPE_ATTENTION_BUDGET_MB")?
        .map_or(ATTENTION_BUDGET_MB, |v| v.min(usize::MAX as u64) as usize))
}

/// The GGUF metadata memory cap in bytes.
pub fn max_gguf_metadata_bytes() -> Result<u64> {
    Ok(env_positive("CODESCOPE_MAX_METADATA_MB")?
        .unwrap_or(MAX_METADATA_MB)
        .saturating_mul(1 << 20))
}

/// The download / extraction ceiling in bytes.
pub fn max_download_bytes() -> Result<u64> {
    Ok(env_positive("CODESCOPE_MAX_DOWNLOAD_MB")?
        .unwrap_or(MAX_DOWNLOAD_MB)
        .saturating_mul(1 << 20))
}
