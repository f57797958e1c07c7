//! The library's error type.
//!
//! Every failure a user can cause (bad model spec, missing or corrupt weights, bad input
//! file, no network) maps to one variant whose `Display` is a single, actionable line.
//! `main` prints that line and exits non-zero; nothing in the library panics on bad input.

use std::path::PathBuf;

/// Result alias used across the library.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong in codescope, as one-line messages.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The `--model` spec names nothing codescope can find or fetch.
    #[error("model '{spec}' not found: {reason}")]
    ModelNotFound { spec: String, reason: String },

    /// A model directory lacks a file codescope needs.
    #[error("model at {dir} has no {what}")]
    MissingFile { dir: PathBuf, what: String },

    /// Weights exist but cannot be read (truncated, wrong format, wrong shapes).
    #[error("cannot load weights from {path}: {reason}")]
    CorruptWeights { path: PathBuf, reason: String },

    /// `config.json` names an architecture codescope does not implement.
    #[error("unsupported architecture '{found}' (supported: {supported})")]
    UnsupportedArchitecture { found: String, supported: String },

    /// `config.json` is unreadable or inconsistent.
    #[error("bad model config {path}: {reason}")]
    BadConfig { path: PathBuf, reason: String },

    /// The tokenizer could not be built or failed on the input.
    #[error("tokenizer: {0}")]
    Tokenizer(String),

    /// The network was needed and is not there (or refused).
    #[error("network: {0}")]
    Network(String),

    /// A PyPI package does not hold what we need.
    #[error("PyPI package '{package}': {reason}")]
    Package { package: String, reason: String },

    /// The user's input file cannot be used.
    #[error("input {name}: {reason}")]
    Input { name: String, reason: String },

    /// The work was stopped on request (a newer request superseded it).
    #[error("cancelled")]
    Cancelled,
    /// An environment setting (`CODESCOPE_*`) holds a value codescope cannot use.
    #[error("setting {name}: {reason}")]
    Setting { name: String, reason: String },

    /// Numeric failure inside the model code.
    #[error("model computation failed: {0}")]
    Compute(String),

    /// The memory plan refused a load (what it needs, what is available, what would
    /// fit: `model::plan`).
    #[error("{0}")]
    Memory(String),

    /// The syntax layer refused or failed on the input.
    #[error("syntax: {0}")]
    Syntax(String),

    /// Plain I/O, with the path involved.
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

impl From<candle_core::Error> for Error {
    fn from(e: candle_core::Error) -> Self {
        Error::Compute(candle_message(&e))
    }
}

impl From<crate::syntax::SyntaxError> for Error {
    fn from(e: crate::syntax::SyntaxError) -> Self {
        Error::Syntax(e.to_string())
    }
}

/// A candle error as one line: the backtrace candle attaches when `RUST_BACKTRACE` is
/// set (a hundred lines) is dropped, context is kept.
pub fn candle_message(e: &candle_core::Error) -> String {
    use candle_core::Error as E;
    match e {
        E::WithBacktrace { inner, .. } => candle_message(inner),
        E::Context { inner, context } => format!("{context}: {}", candle_message(inner)),
        other => one_line(&other.to_string()),
    }
}

/// `text` made safe to write to a terminal: every control character (C0 but `keep_newlines`'
/// line breaks, DEL, C1), bidirectional-text override and non-character is replaced by a
/// visible escape (`\u{1b}`, `\n`, `\r`, `\t`), so text from a file, a model, a tour, a
/// session, a shard or a path can never move the cursor, set the window title, write the
/// clipboard (OSC 52) or overwrite a line. Borrowed when nothing needs escaping.
pub fn printable(text: &str, keep_newlines: bool) -> std::borrow::Cow<'_, str> {
    let bad = |c: char| unprintable(c) && !(keep_newlines && c == '\n');
    if !text.chars().any(bad) {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if bad(c) {
            push_escaped(&mut out, c);
        } else {
            out.push(c);
        }
    }
    std::borrow::Cow::Owned(out)
}

/// The characters [`printable`] escapes: controls (C0, DEL, C1), bidirectional-text
/// overrides and isolates, non-characters.
fn unprintable(c: char) -> bool {
    c.is_control()
        || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
        || matches!(c, '\u{fdd0}'..='\u{fdef}')
        || (c as u32 & 0xfffe) == 0xfffe
}

/// `c` as its visible escape.
fn push_escaped(out: &mut String, c: char) {
    match c {
        '\n' => out.push_str("\\n"),
        '\r' => out.push_str("\\r"),
        '\t' => out.push_str("\\t"),
        c => {
            use std::fmt::Write as _;
            let _ = write!(out, "\\u{{{:x}}}", c as u32);
        }
    }
}

/// `text` for a terminal: like [`printable`] with line breaks and tabs kept, and, when
/// `keep_sgr`, codescope's own colour codes (`ESC [ digits ; ... m`, select graphic
/// rendition: colours only) kept too; every other escape sequence is shown escaped.
pub fn printable_for_terminal(text: &str, keep_sgr: bool) -> std::borrow::Cow<'_, str> {
    let bad = |c: char| c != '\n' && c != '\t' && unprintable(c);
    if !text.chars().any(bad) {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    let mut rest = text;
    while let Some(c) = rest.chars().next() {
        if keep_sgr && c == '\u{1b}' {
            let tail = &rest[1..];
            if let Some(body) = tail.strip_prefix('[') {
                let n = body
                    .bytes()
                    .take_while(|b| b.is_ascii_digit() || *b == b';')
                    .count();
                if body.as_bytes().get(n) == Some(&b'm') {
                    let len = 2 + n + 1;
                    out.push_str(&rest[..len]);
                    rest = &rest[len..];
                    continue;
                }
            }
        }
        if bad(c) {
            push_escaped(&mut out, c);
        } else {
            out.push(c);
        }
        rest = &rest[c.len_utf8()..];
    }
    std::borrow::Cow::Owned(out)
}

/// `text` on one line: line breaks (and the indentation after them) become `; `.
pub fn one_line(text: &str) -> String {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join("; ")
}

impl Error {
    /// Whether this is a write to a closed stdout pipe (`codescope ... | head`): the
    /// reader chose to stop, which is not a failure of codescope.
    pub fn is_broken_stdout(&self) -> bool {
        matches!(self, Error::Io { path, source }
            if path.as_os_str() == "<stdout>" && source.kind() == std::io::ErrorKind::BrokenPipe)
    }

    /// Wrap an `io::Error` with the path it concerns.
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::Io {
            path: path.into(),
            source,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn printable_escapes_every_terminal_control() {
        let hostile =
            "\u{1b}]0;owned\u{7}\u{1b}]52;c;aGk=\u{7}\rcodescope: model loaded fine\u{1b}[2J";
        let p = printable(hostile, false);
        assert!(!p.chars().any(|c| c.is_control()), "{p}");
        assert_eq!(
            p,
            "\\u{1b}]0;owned\\u{7}\\u{1b}]52;c;aGk=\\u{7}\\rcodescope: model loaded fine\\u{1b}[2J"
        );
        // C1 controls, DEL, bidi overrides and non-characters too.
        for c in [
            '\u{9b}',
            '\u{7f}',
            '\u{202e}',
            '\u{2067}',
            '\u{fffe}',
            '\u{ffff}',
            '\u{1fffe}',
            '\u{fdd0}',
        ] {
            let s = format!("a{c}b");
            let p = printable(&s, false);
            assert_eq!(p, format!("a\\u{{{:x}}}b", c as u32));
        }
        // Line breaks stay only when asked; tabs never.
        assert_eq!(printable("a\nb\tc", true), "a\nb\\tc");
        assert_eq!(printable("a\nb", false), "a\\nb");
        // For a terminal: line breaks, tabs and (when asked) colour codes stay; any other
        // escape sequence is shown.
        let t = "\u{1b}[1;31mred\u{1b}[0m\tx\n\u{1b}]2;title\u{7}\u{1b}[2J";
        assert_eq!(
            printable_for_terminal(t, true),
            "\u{1b}[1;31mred\u{1b}[0m\tx\n\\u{1b}]2;title\\u{7}\\u{1b}[2J"
        );
        assert_eq!(
            printable_for_terminal(t, false),
            "\\u{1b}[1;31mred\\u{1b}[0m\tx\n\\u{1b}]2;title\\u{7}\\u{1b}[2J"
        );
        // Ordinary text, Unicode included, is borrowed as it is.
        assert!(matches!(
            printable("déf f(x): → ü", false),
            std::borrow::Cow::Borrowed(_)
        ));
    }
}
