//! Temporary directories inside the cache: `.tmp-{pid}-{nanos}` siblings of what they
//! will become, removed on every exit path.
//!
//! - dropped (success, error, panic unwinding): removed;
//! - SIGTERM / SIGINT / SIGHUP: registered with [`crate::signals`], which removes them
//!   before exiting;
//! - `kill -9` or a power cut: the next [`TempDir::new`] in the same directory removes
//!   every stale one ([`remove_stale`]).
//!
//! Staleness is judged by a lock, not by a process id: each temporary has a sibling
//! `.tmp-{pid}-{nanos}.lock` on which its owner holds an exclusive advisory lock
//! (`flock`) for as long as it works. A lock that can be taken means the owner is gone,
//! whoever and wherever it was: a process id says nothing about a fetch in another PID
//! namespace (a container on a shared volume) or on another host sharing an NFS home, and
//! such a live download used to be deleted. Temporaries without a lock file (left by
//! older versions) are judged by their process id as before.

use std::fs::File;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// A temporary directory removed on drop (so failures leave nothing behind).
pub(super) struct TempDir {
    pub path: PathBuf,
    _lock: Owner,
}

const PREFIX: &str = ".tmp-";
const LOCK: &str = ".lock";

/// The lock that says a temporary is in use: held while this value lives; dropping it
/// removes the lock file.
pub struct Owner {
    file: Option<File>,
    path: PathBuf,
}

impl Drop for Owner {
    fn drop(&mut self) {
        // Remove the file while still holding the lock, then release it.
        let _ = std::fs::remove_file(&self.path);
        crate::signals::forget(&self.path);
        self.file.take();
    }
}

fn lock_path(p: &Path) -> PathBuf {
    let mut s = p.as_os_str().to_owned();
    s.push(LOCK);
    PathBuf::from(s)
}

/// Take `f`'s exclusive lock without waiting: `Ok(false)` when someone else holds it.
fn try_lock(f: &File) -> std::io::Result<bool> {
    use std::os::fd::AsRawFd;
    // SAFETY: flock on a descriptor we own.
    let r = unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
    if r == 0 {
        return Ok(true);
    }
    let e = std::io::Error::last_os_error();
    if e.raw_os_error() == Some(libc::EWOULDBLOCK) {
        Ok(false)
    } else {
        Err(e)
    }
}

/// A fresh, locked temporary name in `parent`: `(path, owner)`; nothing is created at
/// `path` itself. Stale temporaries of `parent` are removed first.
pub(crate) fn fresh(parent: &Path) -> Result<(PathBuf, Owner)> {
    std::fs::create_dir_all(parent).map_err(|e| Error::io(parent, e))?;
    remove_stale(parent);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    let path = parent.join(format!("{PREFIX}{}-{nanos}", std::process::id()));
    let lp = lock_path(&path);
    let f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&lp)
        .map_err(|e| Error::io(&lp, e))?;
    crate::signals::remove_on_signal(&lp);
    let owner = Owner {
        file: Some(f),
        path: lp.clone(),
    };
    match owner.file.as_ref().map(try_lock) {
        Some(Ok(true)) => Ok((path, owner)),
        Some(Err(e)) => Err(Error::io(&lp, e)),
        _ => Err(Error::io(
            &lp,
            std::io::Error::other("the lock of a fresh temporary is held by someone else"),
        )),
    }
}

impl TempDir {
    /// A fresh temporary directory in `parent` (created if needed), after removing the
    /// stale ones there.
    pub fn new(parent: &Path) -> Result<Self> {
        let (path, owner) = fresh(parent)?;
        std::fs::create_dir_all(&path).map_err(|e| Error::io(&path, e))?;
        crate::signals::remove_on_signal(&path);
        Ok(TempDir { path, _lock: owner })
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
        crate::signals::forget(&self.path);
    }
}

/// Whether process `pid` exists (signal 0 probes without sending anything; EPERM means
/// it exists under another user). Only for temporaries without a lock file.
fn alive(pid: i32) -> bool {
    if pid <= 0 {
        return false;
    }
    // SAFETY: kill with signal 0 only checks for the process.
    let r = unsafe { libc::kill(pid, 0) };
    r == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}

/// Whether the owner of the lock file `lp` is gone (its lock can be taken). The lock, if
/// taken, is kept on the returned file so the entry can be removed before anyone reuses it.
fn abandoned(lp: &Path) -> Option<File> {
    let f = File::open(lp).ok()?;
    matches!(try_lock(&f), Ok(true)).then_some(f)
}

fn remove_entry(p: &Path) -> bool {
    let gone = if p.is_dir() {
        std::fs::remove_dir_all(p)
    } else {
        std::fs::remove_file(p)
    };
    gone.is_ok() || !p.exists()
}

/// Remove the stale temporaries of `dir` (see the module docs). Returns how many were
/// removed. Entries whose owner holds their lock (another fetch running now, in any
/// process namespace or on any host sharing the directory) are kept.
pub(crate) fn remove_stale(dir: &Path) -> usize {
    let mut removed = 0;
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(rest) = name.strip_prefix(PREFIX) else {
            continue;
        };
        let p = e.path();
        if let Some(stem) = name.strip_suffix(LOCK) {
            // A lock whose temporary is gone: remove it once nobody holds it.
            if !dir.join(stem).exists() {
                if let Some(_held) = abandoned(&p) {
                    let _ = std::fs::remove_file(&p);
                }
            }
            continue;
        }
        let lp = lock_path(&p);
        let stale = if lp.exists() {
            match abandoned(&lp) {
                Some(held) => {
                    let ok = remove_entry(&p);
                    let _ = std::fs::remove_file(&lp);
                    drop(held);
                    ok
                }
                None => false,
            }
        } else {
            let Some(pid) = rest.split('-').next().and_then(|p| p.parse::<i32>().ok()) else {
                continue;
            };
            !(pid == std::process::id() as i32 || alive(pid)) && remove_entry(&p)
        };
        if stale {
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
        // By lock: an entry whose process id means nothing here (another PID namespace,
        // another host) but whose owner holds its lock stays; once released, it goes.
        let foreign = d.path().join(".tmp-99999997-4");
        std::fs::create_dir_all(&foreign).unwrap();
        let lp = lock_path(&foreign);
        let held = std::fs::File::create(&lp).unwrap();
        assert!(try_lock(&held).unwrap());
        assert_eq!(remove_stale(d.path()), 0);
        assert!(foreign.exists() && lp.exists());
        drop(held);
        assert_eq!(remove_stale(d.path()), 1);
        assert!(!foreign.exists() && !lp.exists());
        // A live entry of this very process id with a released lock is stale too (a lock
        // says more than a pid that may have been reused).
        let reused = d.path().join(format!(".tmp-{}-5", std::process::id()));
        std::fs::create_dir_all(&reused).unwrap();
        std::fs::File::create(lock_path(&reused)).unwrap();
        assert_eq!(remove_stale(d.path()), 1);
        assert!(!reused.exists());
        // A TempDir holds its lock while it lives (a clean-up keeps it) and removes
        // itself and its lock on drop.
        let t = TempDir::new(d.path()).unwrap();
        let p = t.path.clone();
        assert!(p.is_dir() && lock_path(&p).is_file());
        assert_eq!(remove_stale(d.path()), 0);
        assert!(p.is_dir());
        drop(t);
        assert!(!p.exists() && !lock_path(&p).exists());
    }
}
