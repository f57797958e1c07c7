//! File reads and writes that the standards ask for everywhere: writes that cannot
//! half-happen, reads that cannot grow without bound.
//!
//! - [`write_atomic`]: the bytes go to a fresh temporary in the same directory (created
//!   with `O_EXCL` and `O_NOFOLLOW`, so a planted file or symbolic link is never written
//!   through), are flushed to disk, then renamed over the target; a failure (a full disk,
//!   a signal) leaves the old file as it was and no temporary behind.
//! - [`read_bounded`] / [`read_to_string_bounded`]: at most `max` bytes are read; a longer
//!   file (or `/dev/zero`, a FIFO that never ends) is an error that names the limit.
//!
//! Uses nothing of the crate but [`crate::error`] and [`crate::signals`].

use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// Replace `path` with `bytes` atomically (see the module docs).
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    write_atomic_io(path, bytes).map_err(|e| Error::io(path, e))
}

/// [`write_atomic`] with the plain `io::Error`.
pub fn write_atomic_io(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let tmp = temp_beside(path)?;
    crate::signals::remove_on_signal(&tmp);
    let written = (|| {
        let mut f = open_new(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        drop(f);
        std::fs::rename(&tmp, path)
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    crate::signals::forget(&tmp);
    written?;
    // The rename itself survives a crash once the directory is synced (best effort).
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        if let Ok(d) = std::fs::File::open(dir) {
            let _ = d.sync_all();
        }
    }
    Ok(())
}

/// A temporary name in `path`'s directory that no one else uses: `.NAME.PID.NANOS.tmp`.
fn temp_beside(path: &Path) -> std::io::Result<PathBuf> {
    let name = path
        .file_name()
        .ok_or_else(|| std::io::Error::new(std::io::ErrorKind::InvalidInput, "not a file path"))?;
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let mut tmp_name = std::ffi::OsString::from(".");
    tmp_name.push(name);
    tmp_name.push(format!(".{}.{nanos}.tmp", std::process::id()));
    Ok(path.with_file_name(tmp_name))
}

/// Create `p`, refusing an existing file and never following a symbolic link.
fn open_new(p: &Path) -> std::io::Result<std::fs::File> {
    let mut o = std::fs::OpenOptions::new();
    o.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        o.custom_flags(libc::O_NOFOLLOW).mode(0o644);
    }
    o.open(p)
}

/// At most `max` bytes of `path`; more is an error naming `what` and the limit.
pub fn read_bounded(path: &Path, max: u64, what: &str) -> Result<Vec<u8>> {
    let f = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
    let mut buf = Vec::new();
    f.take(max.saturating_add(1))
        .read_to_end(&mut buf)
        .map_err(|e| Error::io(path, e))?;
    if buf.len() as u64 > max {
        return Err(Error::Input {
            name: path.display().to_string(),
            reason: format!("{what} is larger than the limit of {}", human(max)),
        });
    }
    Ok(buf)
}

/// [`read_bounded`] as UTF-8 text.
pub fn read_to_string_bounded(path: &Path, max: u64, what: &str) -> Result<String> {
    let bytes = read_bounded(path, max, what)?;
    String::from_utf8(bytes).map_err(|e| Error::Input {
        name: path.display().to_string(),
        reason: format!(
            "{what} is not UTF-8 (invalid byte at offset {})",
            e.utf8_error().valid_up_to()
        ),
    })
}

/// `n` bytes as a short figure (`16 MiB`).
pub fn human(n: u64) -> String {
    const MIB: u64 = 1 << 20;
    if n >= MIB && n.is_multiple_of(MIB) {
        format!("{} MiB", n / MIB)
    } else if n >= 1024 && n.is_multiple_of(1024) {
        format!("{} KiB", n / 1024)
    } else {
        format!("{n} bytes")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn atomic_write_replaces_whole_and_leaves_no_temporary() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("f.json");
        std::fs::write(&p, b"old").unwrap();
        write_atomic(&p, b"new contents").unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"new contents");
        let names: Vec<_> = std::fs::read_dir(d.path()).unwrap().collect();
        assert_eq!(names.len(), 1);
    }

    #[cfg(unix)]
    #[test]
    fn a_failed_write_keeps_the_old_file() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("fig.svg");
        std::fs::write(&p, b"good").unwrap();
        // A target that cannot be renamed over (a non-empty directory in the way): the
        // write fails after the temporary was written; the old state and no temporary stay.
        let blocked = d.path().join("dir");
        std::fs::create_dir(&blocked).unwrap();
        std::fs::write(blocked.join("x"), b"x").unwrap();
        assert!(write_atomic(&blocked, b"data").is_err());
        assert_eq!(std::fs::read(&p).unwrap(), b"good");
        let mut names: Vec<_> = std::fs::read_dir(d.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        names.sort();
        assert_eq!(names, ["dir", "fig.svg"]);
    }

    #[cfg(unix)]
    #[test]
    fn a_planted_symlink_is_never_written_through() {
        let d = tempfile::tempdir().unwrap();
        let victim = d.path().join("victim");
        std::fs::write(&victim, b"precious").unwrap();
        let p = d.path().join("session.json");
        // Whatever temporary name an attacker plants, the write opens its own with O_EXCL
        // and O_NOFOLLOW; the target link itself is replaced, not followed.
        std::os::unix::fs::symlink(&victim, &p).unwrap();
        write_atomic(&p, b"{}").unwrap();
        assert_eq!(std::fs::read(&victim).unwrap(), b"precious");
        assert_eq!(std::fs::read(&p).unwrap(), b"{}");
        assert!(!std::fs::symlink_metadata(&p)
            .unwrap()
            .file_type()
            .is_symlink());
        let planted = d.path().join("planted");
        std::os::unix::fs::symlink(&victim, &planted).unwrap();
        assert!(open_new(&planted).is_err());
        assert_eq!(std::fs::read(&victim).unwrap(), b"precious");
    }

    #[cfg(unix)]
    #[test]
    fn bounded_reads_stop_at_the_limit() {
        let e = read_bounded(Path::new("/dev/zero"), 1 << 20, "a tour").unwrap_err();
        let m = e.to_string();
        assert!(
            m.contains("a tour is larger than the limit of 1 MiB"),
            "{m}"
        );
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("t");
        std::fs::write(&p, b"abc").unwrap();
        assert_eq!(read_bounded(&p, 3, "x").unwrap(), b"abc");
        assert!(read_bounded(&p, 2, "x").is_err());
        std::fs::write(&p, b"\xff").unwrap();
        assert!(read_to_string_bounded(&p, 9, "a config")
            .unwrap_err()
            .to_string()
            .contains("not UTF-8"));
    }
}
