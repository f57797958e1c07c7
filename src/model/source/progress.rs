//! Download progress on stderr, switchable (the explorer owns the screen and turns it
//! off).

use std::sync::atomic::{AtomicBool, Ordering};

static PROGRESS: AtomicBool = AtomicBool::new(true);

/// Turn download progress bars (and "fetching" lines) on stderr on or off. The TUI turns
/// them off: it owns the screen and shows progress itself.
pub fn set_progress(on: bool) {
    PROGRESS.store(on, Ordering::Relaxed);
}

pub(super) fn progress() -> bool {
    PROGRESS.load(Ordering::Relaxed)
}

pub(super) fn progress_target() -> indicatif::ProgressDrawTarget {
    if progress() {
        indicatif::ProgressDrawTarget::stderr()
    } else {
        indicatif::ProgressDrawTarget::hidden()
    }
}
