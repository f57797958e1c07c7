//! The explorer's second background thread: parsing, file reads and the disk checks of
//! the model picker, so the UI thread never waits on the parser or the disk (a huge or
//! pathological file keeps this thread busy, not the screen; a newer request supersedes
//! a pending one of the same kind).
//!
//! The job functions ([`parse`], [`read_file`], [`complete`], [`check_presets`]) are plain functions
//! of their inputs returning the [`Msg`] to feed back; the test harness calls them
//! directly to serve effects synchronously.

use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;

use super::msg::{Msg, ParseJob};
use crate::model::source;

/// Parse a job's text.
pub fn parse(job: &ParseJob) -> Msg {
    let result = crate::analysis::parse(&job.text, job.lang)
        .map(Arc::new)
        .map_err(|e| e.to_string());
    Msg::Parsed {
        req: job.req,
        result,
    }
}

/// Read a file with the input limits (size, UTF-8, not binary); a leading `~` is the
/// home directory.
pub fn read_file(path: &str) -> Msg {
    Msg::FileRead {
        path: path.to_string(),
        result: crate::input::read(&expand_tilde(path)).map_err(|e| e.to_string()),
    }
}

/// `~` and `~/rest` with `$HOME` put in (other text unchanged).
pub fn expand_tilde(path: &str) -> String {
    let home = || std::env::var("HOME").ok().filter(|h| !h.is_empty());
    if path == "~" {
        return home().unwrap_or_else(|| path.into());
    }
    match (path.strip_prefix("~/"), home()) {
        (Some(rest), Some(h)) => format!("{}/{rest}", h.trim_end_matches('/')),
        _ => path.to_string(),
    }
}

/// The paths that complete `typed` (as typed: a `~` stays), sorted, directories with a
/// trailing `/`; hidden entries only when the typed name starts with a dot. At most 200.
pub fn complete(typed: &str) -> Msg {
    let (dir, prefix) = match typed.rfind('/') {
        Some(i) => (&typed[..=i], &typed[i + 1..]),
        None if typed == "~" => ("~/", ""),
        None => ("", typed),
    };
    let list_dir = if dir.is_empty() {
        ".".to_string()
    } else {
        expand_tilde(dir)
    };
    let mut candidates: Vec<String> = std::fs::read_dir(&list_dir)
        .map(|rd| {
            rd.filter_map(|e| {
                let e = e.ok()?;
                let name = e.file_name().into_string().ok()?;
                if !name.starts_with(prefix) || (name.starts_with('.') && !prefix.starts_with('.'))
                {
                    return None;
                }
                let is_dir = std::fs::metadata(e.path()).is_ok_and(|m| m.is_dir());
                Some(format!("{dir}{name}{}", if is_dir { "/" } else { "" }))
            })
            .take(200)
            .collect()
        })
        .unwrap_or_default();
    candidates.sort();
    Msg::Completions {
        typed: typed.to_string(),
        candidates,
    }
}

/// Which of the named presets are on local disk.
pub fn check_presets(names: &[String]) -> Msg {
    Msg::PresetsChecked(
        names
            .iter()
            .map(|n| {
                source::PRESETS
                    .iter()
                    .find(|p| p.name == n)
                    .is_some_and(|p| source::preset_available(p).is_some())
            })
            .collect(),
    )
}

#[derive(Default)]
struct Slot {
    parse: Option<ParseJob>,
    read: Option<String>,
    complete: Option<String>,
    presets: Option<Vec<String>>,
    stop: bool,
}

struct Shared {
    slot: Mutex<Slot>,
    cv: Condvar,
}

/// Handle to the I/O thread. Dropping it stops the thread after its current job.
pub struct IoThread {
    shared: Arc<Shared>,
    handle: Option<JoinHandle<()>>,
}

impl IoThread {
    /// Start the thread; `send` receives the results (called from the thread).
    pub fn spawn(send: impl Fn(Msg) + Send + 'static) -> std::io::Result<Self> {
        let shared = Arc::new(Shared {
            slot: Mutex::new(Slot::default()),
            cv: Condvar::new(),
        });
        let sh = shared.clone();
        let handle = std::thread::Builder::new()
            .name("codescope-io".into())
            .spawn(move || loop {
                let job = {
                    let mut s = sh.slot.lock().unwrap_or_else(|e| e.into_inner());
                    loop {
                        if s.stop {
                            return;
                        }
                        if let Some(j) = s.parse.take() {
                            break Job::Parse(j);
                        }
                        if let Some(p) = s.read.take() {
                            break Job::Read(p);
                        }
                        if let Some(p) = s.complete.take() {
                            break Job::Complete(p);
                        }
                        if let Some(n) = s.presets.take() {
                            break Job::Presets(n);
                        }
                        s = sh.cv.wait(s).unwrap_or_else(|e| e.into_inner());
                    }
                };
                let msg = std::panic::catch_unwind(|| match &job {
                    Job::Parse(j) => parse(j),
                    Job::Read(p) => read_file(p),
                    Job::Complete(p) => complete(p),
                    Job::Presets(n) => check_presets(n),
                })
                .unwrap_or_else(|_| match job {
                    Job::Parse(j) => Msg::Parsed {
                        req: j.req,
                        result: Err("internal error in the parser".into()),
                    },
                    Job::Read(p) => Msg::FileRead {
                        path: p,
                        result: Err("internal error while reading".into()),
                    },
                    Job::Complete(typed) => Msg::Completions {
                        typed,
                        candidates: Vec::new(),
                    },
                    Job::Presets(n) => Msg::PresetsChecked(vec![false; n.len()]),
                });
                send(msg);
            })?;
        Ok(IoThread {
            shared,
            handle: Some(handle),
        })
    }

    fn with_slot(&self, f: impl FnOnce(&mut Slot)) {
        let mut s = self.shared.slot.lock().unwrap_or_else(|e| e.into_inner());
        f(&mut s);
        self.shared.cv.notify_one();
    }

    /// Queue a parse (replaces a pending one).
    pub fn parse(&self, job: ParseJob) {
        self.with_slot(|s| s.parse = Some(job));
    }

    /// Queue a file read (replaces a pending one).
    pub fn read(&self, path: String) {
        self.with_slot(|s| s.read = Some(path));
    }

    /// Queue a path completion (replaces a pending one).
    pub fn complete(&self, typed: String) {
        self.with_slot(|s| s.complete = Some(typed));
    }

    /// Queue a check of which presets are on disk.
    pub fn check_presets(&self, names: Vec<String>) {
        self.with_slot(|s| s.presets = Some(names));
    }

    /// Ask the thread to stop; does not wait (a parse under way finishes on its own).
    pub fn stop(&self) {
        self.with_slot(|s| s.stop = true);
    }
}

impl Drop for IoThread {
    fn drop(&mut self) {
        self.stop();
        // Not joined: a pathological parse must not hold up quitting.
        drop(self.handle.take());
    }
}

enum Job {
    Parse(ParseJob),
    Read(String),
    Complete(String),
    Presets(Vec<String>),
}
