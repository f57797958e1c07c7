//! Temporary directories inside the cache: `.tmp-{pid}-{nanos}` siblings of what they
//! will become, removed on every exit path.
//!
//! - dropped (success, error, panic unwinding): removed;
//! - SIGTERM / SIGINT / SIGHUP: registered with [`crate::signals`], which removes them
//!   before exiting;
//! - `kill -9` or a power cut: the next [`TempDir::new`] in the same directory removes
//!   every `.tmp-{pid}-*` whose process is gone ([`remove_stale`]).

use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// A temporary directory removed on drop (so failures leave nothing behind).
pub(super) struct TempDir {
    pub path: PathBuf,
}

const PREFIX: &str = ".tmp-";

impl TempDir {
    /// A fresh temporary directory in `parent` (created if needed), after removing the
    /// stale ones of dead processes there.
    pub fn new(parent: &Path) -> Result<Self> {
        std::fs::create_dir_all(parent).map_err(|e| Error::io(parent, e))?;
        remove_stale(parent);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0);
        let path = parent.join(format!("{PREFIX}{}-{nanos}", std::process::id()));
        std::fs::create_dir_all(&path).map_err(|e| Error::io(&path, e))?;
        crate::signals::remove_on_signal(&path);
        Ok(TempDir { path })
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
        crate::signals::forget(&self.path);
    }
}

/// Whether process `pid` exists (signal 0 probes without sending anything; EPERM means
/// it exists under another user).
fn alive(pid: i32) -> bool {
    if pid <= 0 {
        return false;
    }
    // SAFETY: kill with signal 0 only checks for the process.
    let r = unsafe { libc::kill(pid, 0) };
    r == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}

/// Remove the `.tmp-{pid}-*` entries of `dir` left by processes that no longer exist.
/// Returns how many were removed. Entries of live processes (another fetch running now)
/// are kept.
pub(crate) fn remove_stale(dir: &Path) -> usize {
    let mut removed = 0;
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(pid) = name
            .strip_prefix(PREFIX)
            .and_then(|r| r.split('-').next())
            .and_then(|p| p.parse::<i32>().ok())
        else {
            continue;
        };
        if pid == std::process::id() as i32 || alive(pid) {
            continue;
        }
        let p = e.path();
        let gone = if p.is_dir() {
            std::fs::remove_dir_all(&p)
        } else {
            std::fs::remove_file(&p)
        };
        if gone.is_ok() {
            tracing::info!(path = %p.display(), "removed a stale temporary download");
            removed += 1;
        }
    }
    removed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stale_entries_of_dead_processes_go_live_ones_stay() {
        let d = tempfile::tempdir().unwrap();
        // A pid that cannot exist (above the kernel's pid_max of 2^22) and our own.
        let dead = d.path().join(".tmp-99999999-1");
        std::fs::create_dir_all(dead.join("model")).unwrap();
        std::fs::write(dead.join("model/w.bin"), b"x").unwrap();
        let dead_file = d.path().join(".tmp-99999998-2.part");
        std::fs::write(&dead_file, b"x").unwrap();
        let live = d.path().join(format!(".tmp-{}-3", std::process::id()));
        std::fs::create_dir_all(&live).unwrap();
        let other = d.path().join("tinypkg==1.0");
        std::fs::create_dir_all(&other).unwrap();
        assert_eq!(remove_stale(d.path()), 2);
        assert!(!dead.exists() && !dead_file.exists());
        assert!(live.exists() && other.exists());
        // A TempDir removes itself on drop.
        let t = TempDir::new(d.path()).unwrap();
        let p = t.path.clone();
        assert!(p.is_dir());
        drop(t);
        assert!(!p.exists());
    }
}
