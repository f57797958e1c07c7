//! Logging to a file, never to the terminal (the TUI owns the screen).

use std::path::PathBuf;
use std::sync::Mutex;

use tracing_subscriber::EnvFilter;

/// Send tracing output to `path` (default `codescope.log` in the cache directory).
/// Level from `CODESCOPE_LOG` (default `info`). If the file cannot be opened, logging
/// is off: a log problem must never stop the tool or reach the screen.
pub fn init(path: Option<PathBuf>) {
    let path = path.unwrap_or_else(|| crate::model::source::cache_dir().join("codescope.log"));
    if let Some(dir) = path.parent() {
        let _ = std::fs::create_dir_all(dir);
    }
    let Ok(file) = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
    else {
        return;
    };
    let filter =
        EnvFilter::try_from_env("CODESCOPE_LOG").unwrap_or_else(|_| EnvFilter::new("info"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(false)
        .with_writer(Mutex::new(file))
        .try_init();
}

/// Write `codescope: {msg}` as one line on stderr (notices and the final error of the
/// command-line forms). A closed or broken stderr is ignored: `eprintln!` would panic.
pub fn notice(msg: impl std::fmt::Display) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr().lock(), "codescope: {msg}");
}

/// This process's peak resident memory in MiB (Linux `VmHWM`; `None` elsewhere). Logged
/// when a command finishes, so memory bounds can be checked from the log.
pub fn peak_rss_mib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let kb: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))?
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()?;
    Some(kb / 1024)
}
