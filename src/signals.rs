//! Termination signals (SIGTERM, SIGINT, SIGHUP, SIGQUIT): clean up, then exit with
//! `128 + n`.
//!
//! [`install`] starts one thread that waits for a signal. When one arrives it removes
//! every path registered with [`remove_on_signal`] (the download temp directories in the
//! cache, so an interrupted fetch leaves nothing half-written) and exits the process
//! with the conventional status `128 + n`. While the explorer runs it calls
//! [`defer_exit`]: it must restore the terminal and save its session first, so the
//! thread only records the signal and the explorer's own loop ends; `main` then calls
//! [`finish`] (the removal) and exits with [`exit_status`]. (The
//! explorer also handles job control, SIGTSTP and SIGCONT: `tui::terminal`.)
//! `kill -9` cannot be caught: the next run removes what it left (see
//! `model::source::tempdir`).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::Mutex;

static RECEIVED: AtomicI32 = AtomicI32::new(0);
static DEFER: AtomicBool = AtomicBool::new(false);
static TO_REMOVE: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

/// Watch for SIGTERM, SIGINT, SIGHUP and SIGQUIT (call once, from `main`). If the
/// handler cannot be installed the default actions stay, which only loses the clean-up.
pub fn install() {
    use signal_hook::consts::{SIGHUP, SIGINT, SIGQUIT, SIGTERM};
    let Ok(mut signals) = signal_hook::iterator::Signals::new([SIGTERM, SIGINT, SIGHUP, SIGQUIT])
    else {
        tracing::warn!("cannot install signal handlers");
        return;
    };
    let spawned = std::thread::Builder::new()
        .name("codescope-exit".into())
        .spawn(move || {
            if let Some(sig) = signals.forever().next() {
                RECEIVED.store(sig, Ordering::SeqCst);
                tracing::info!(sig, "signal received");
                // A deferred exit removes nothing here: the explorer is still saving its
                // session through a registered temporary, which this would delete under
                // it; `main` calls [`finish`] once the explorer has returned.
                if !DEFER.load(Ordering::SeqCst) {
                    remove_registered();
                    std::process::exit(128 + sig);
                }
            }
        });
    if spawned.is_err() {
        tracing::warn!("cannot start the signal thread");
    }
}

/// The explorer owns the terminal: on a signal, only record it (the explorer quits and
/// restores the screen; `main` exits with [`exit_status`] afterwards).
pub fn defer_exit() {
    DEFER.store(true, Ordering::SeqCst);
}

/// Record signal `sig` as received (the explorer's own signal thread saw it first): the
/// exit status is then `128 + sig` whichever thread woke first.
pub fn record(sig: i32) {
    RECEIVED.store(sig, Ordering::SeqCst);
}

/// The signal received so far, if any.
pub fn received() -> Option<i32> {
    match RECEIVED.load(Ordering::SeqCst) {
        0 => None,
        s => Some(s),
    }
}

/// The status to exit with after a signal: `128 + n`.
pub fn exit_status() -> Option<i32> {
    received().map(|s| 128 + s)
}

/// Remove `path` (a directory tree) if a signal ends the process before
/// [`forget`] is called for it.
pub fn remove_on_signal(path: &Path) {
    if let Ok(mut v) = TO_REMOVE.lock() {
        v.push(path.to_path_buf());
    }
}

/// On the way out after a deferred signal: remove what is still registered (a download
/// the worker left half-done). Does nothing when no signal was received.
pub fn finish() {
    if received().is_some() {
        remove_registered();
    }
}

/// `path` was cleaned up (or kept on purpose): a signal no longer removes it.
pub fn forget(path: &Path) {
    if let Ok(mut v) = TO_REMOVE.lock() {
        v.retain(|p| p != path);
    }
}

fn remove_registered() {
    let paths = match TO_REMOVE.lock() {
        Ok(mut v) => std::mem::take(&mut *v),
        Err(_) => return,
    };
    for p in paths {
        if std::fs::remove_dir_all(&p).is_err() {
            let _ = std::fs::remove_file(&p);
        }
    }
}
