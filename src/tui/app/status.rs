//! The status line's state: what the worker is doing and the last message.

/// Severity of the status-bar message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    Info,
    Warn,
    Error,
}

/// Worker activity and the last message, shown on the status bar's second line.
#[derive(Debug, Clone, Default)]
pub struct Status {
    /// Worker activity ("loading model…", "analysing: layer 3/6").
    pub busy: Option<String>,
    pub message: Option<(Level, String)>,
}

impl Status {
    pub fn info(&mut self, text: impl Into<String>) {
        self.message = Some((Level::Info, text.into()));
    }
    pub fn warn(&mut self, text: impl Into<String>) {
        self.message = Some((Level::Warn, text.into()));
    }
    pub fn error(&mut self, text: impl Into<String>) {
        self.message = Some((Level::Error, text.into()));
    }
}
