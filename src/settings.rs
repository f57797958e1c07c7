//! The validated settings of one run: plain values, checked once (ripgrep's raw args ->
//! `HiArgs` step; the command line builds them in `cli::Cli::settings`). The subcommands
//! and the explorer (and its worker) read these, never the raw arguments or the
//! environment again.

use std::path::PathBuf;

use crate::model::{LoadOptions, Stack};
use crate::syntax::Language;

/// Global settings, validated.
#[derive(Debug, Clone)]
pub struct Settings {
    /// `--model` / `CODESCOPE_MODEL` (`None`: the default model).
    pub model: Option<String>,
    /// `--random-weights SEED`: the model's weights replaced by a seeded random init.
    pub random_weights: Option<u64>,
    /// `--stack`: which attention of an encoder–decoder is analysed (the encoder's by
    /// default).
    pub stack: Stack,
    /// `--lang` (`None`: from the file name or content).
    pub lang: Option<Language>,
    /// The explorer's light theme (`--theme light`).
    pub light: bool,
    /// The explorer draws with ASCII only (`--ascii`, or a locale whose character set is
    /// not UTF-8): no box drawing, no block elements.
    pub ascii: bool,
    /// codescope's cache directory (models, probe features, logs).
    pub cache_dir: PathBuf,
}

impl Settings {
    /// How the run loads its model, with `random_weights` (the run's, or a baseline's).
    pub fn load_options(&self, random_weights: Option<u64>) -> LoadOptions {
        LoadOptions {
            random_weights,
            stack: self.stack,
        }
    }

    /// The language of an input named `file`: `--lang`, else its extension, else the
    /// look of its `text` ([`Language::from_text`]: a Java file named `.txt` is Java).
    pub fn language_for(&self, file: &str, text: &str) -> Language {
        self.lang
            .or_else(|| Language::from_path(std::path::Path::new(file)))
            .unwrap_or_else(|| Language::from_text(text))
    }
}
