//! Temporary directories inside the cache, removed when dropped.

use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// A temporary directory removed on drop (so failures leave nothing behind).
pub(super) struct TempDir {
    pub path: PathBuf,
}

impl TempDir {
    pub fn new(parent: &Path) -> Result<Self> {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0);
        let path = parent.join(format!(".tmp-{}-{nanos}", std::process::id()));
        std::fs::create_dir_all(&path).map_err(|e| Error::io(&path, e))?;
        Ok(TempDir { path })
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
    }
}
