//! Logging to a file, never to the terminal (the TUI owns the screen).

use std::path::PathBuf;
use std::sync::Mutex;

use tracing_subscriber::EnvFilter;

/// Send tracing output to `path` (default `codescope.log` in the cache directory).
/// Level from `CODESCOPE_LOG` (default `info`). If the file cannot be opened, logging
/// is off: a log problem must never stop the tool or reach the screen.
/// When logging started (the first thing the binary does after reading its arguments):
/// the origin of start-up timings such as the explorer's first full screen.
pub fn started() -> std::time::Instant {
    static START: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();
    *START.get_or_init(std::time::Instant::now)
}

pub fn init(path: Option<PathBuf>) {
    started();
    let path = path.unwrap_or_else(crate::paths::default_log_file);
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
        .with_writer(Mutex::new(Quiet(file)))
        .try_init();
}

/// The log file, whose write errors (a full disk, a file-size limit) cost the log line and
/// nothing else: tracing-subscriber reports a failed write on stderr, which in the
/// explorer is the screen.
struct Quiet(std::fs::File);

impl std::io::Write for Quiet {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let _ = self.0.write_all(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        let _ = self.0.flush();
        Ok(())
    }
}

/// Write `codescope: {msg}` as one line on stderr (notices and the final error of the
/// command-line forms). A closed or broken stderr is ignored: `eprintln!` would panic.
pub fn notice(msg: impl std::fmt::Display) {
    use std::io::Write;
    // Notices quote file names, model fields and tour values: never raw control text.
    let text = msg.to_string();
    let line = crate::error::printable(&text, false);
    let _ = writeln!(std::io::stderr().lock(), "codescope: {line}");
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

thread_local! {
    static CONTAINED: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Install a panic hook that stays silent (a debug log line) for panics that
/// [`contain_panics`] turns into errors, and otherwise defers to the previous hook. A
/// dependency that panics on bad input (tokenizers does on some malformed
/// `tokenizer.json` files) must give one error line, not a panic report.
pub fn install_panic_hook() {
    let prev = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        if CONTAINED.with(|c| c.get()) {
            tracing::debug!("contained panic: {info}");
        } else {
            prev(info)
        }
    }));
}

/// Run `f`; a panic inside it becomes `err(the panic's message)`.
pub fn contain_panics<T>(
    f: impl FnOnce() -> crate::Result<T>,
    err: impl FnOnce(String) -> crate::Error,
) -> crate::Result<T> {
    let was = CONTAINED.with(|c| c.replace(true));
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
    CONTAINED.with(|c| c.set(was));
    r.unwrap_or_else(|p| {
        let msg = p
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_else(|| "unknown panic".into());
        Err(err(crate::error::one_line(&msg)))
    })
}
