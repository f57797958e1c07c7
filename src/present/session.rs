//! Sessions: what the explorer showed, saved in the cache when it quits (and on
//! SIGHUP / SIGTERM, e.g. a dropped SSH connection) and after every applied edit, so
//! `codescope --resume` brings back the snippet with its edits (and an open editor's
//! unapplied text), the model (an encoder–decoder's with its stack), the language and
//! the view.
//!
//! The file is JSON at `<cache>/session.json` (or `CODESCOPE_SESSION`), written to a temporary file first and
//! renamed, so a crash while saving leaves the previous session intact.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::Scene;
use crate::error::{Error, Result};

/// Format version; a session from another version is refused with a clear message.
pub const VERSION: u32 = 1;

/// An open editor: its text and cursor.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EditorState {
    pub text: String,
    pub row: usize,
    pub col: usize,
}

/// The explorer's state worth keeping.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Session {
    pub version: u32,
    /// Snippet name (the file it came from, `(edited)` once edited) and text.
    pub name: String,
    pub text: String,
    /// `python` or `java`.
    pub lang: String,
    /// Whether the text has edits not written to a file.
    pub edited: bool,
    /// Model spec as the user gave it (None: the default model).
    pub model: Option<String>,
    /// An encoder–decoder's stack (`encoder`, `decoder`, `cross`; absent for one-stack
    /// models and in sessions saved before stacks were kept).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stack: Option<String>,
    /// The editor, if it was open (its text not applied yet).
    pub editor: Option<EditorState>,
    /// Layer, head, token, threshold, input mode, overlays, metric, pinned head.
    pub scene: Scene,
    /// The focused panel (`code`, `heatmap`, `heads`, `categories`, `probes`).
    pub focus: String,
    /// Heatmap zoom (0 = fit) and the surprisal view.
    pub zoom: usize,
    pub surprisal: bool,
    /// The tour being presented and its current step (0-based).
    pub tour: Option<(PathBuf, usize)>,
}

/// Where the session is kept: `CODESCOPE_SESSION` if set, else `session.json` in the
/// cache directory.
pub fn path() -> PathBuf {
    if let Some(p) = std::env::var_os("CODESCOPE_SESSION").filter(|p| !p.is_empty()) {
        return PathBuf::from(p);
    }
    crate::paths::session_file()
}

/// Write `s` to `p` (through a temporary file in the same directory).
pub fn save_to(s: &Session, p: &Path) -> std::io::Result<()> {
    if let Some(dir) = p.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let text = serde_json::to_string_pretty(s).map_err(std::io::Error::other)?;
    crate::fsio::write_atomic_io(p, text.as_bytes())
}

/// Read the session at `p`.
pub fn load_from(p: &Path) -> Result<Session> {
    if !p.exists() {
        return Err(Error::Input {
            name: "--resume".into(),
            reason: format!("no saved session ({} does not exist)", p.display()),
        });
    }
    let text = crate::fsio::read_to_string_bounded(
        p,
        crate::model::limits::MAX_CONFIG_BYTES,
        "the session",
    )?;
    let s: Session = serde_json::from_str(&text).map_err(|e| Error::Input {
        name: p.display().to_string(),
        reason: format!("not a codescope session: {e}"),
    })?;
    if s.version != VERSION {
        return Err(Error::Input {
            name: p.display().to_string(),
            reason: format!(
                "a session of format {} (this codescope reads {VERSION})",
                s.version
            ),
        });
    }
    Ok(s)
}
