//! The validated settings of one run: the raw command line ([`crate::cli::Cli`], what clap
//! parsed) checked once and resolved into plain values (ripgrep's raw args -> `HiArgs`
//! step). The subcommands and the explorer (and its worker) read these, never the raw
//! arguments or the environment again.

use std::path::PathBuf;

use crate::cli::Cli;
use crate::error::{Error, Result};
use crate::model::source;
use crate::syntax::Language;

/// Global settings, validated.
#[derive(Debug, Clone)]
pub struct Settings {
    /// `--model` / `CODESCOPE_MODEL` (`None`: the default model).
    pub model: Option<String>,
    /// `--random-weights SEED`: the model's weights replaced by a seeded random init.
    pub random_weights: Option<u64>,
    /// `--lang` (`None`: from the file name or content).
    pub lang: Option<Language>,
    /// The explorer's light theme (`--theme light`).
    pub light: bool,
    /// codescope's cache directory (models, probe features, logs).
    pub cache_dir: PathBuf,
}

impl Settings {
    /// Check and resolve the global options of `cli`.
    pub fn from_cli(cli: &Cli) -> Result<Self> {
        let lang = cli
            .lang
            .as_deref()
            .map(|l| Language::from_name(l).map_err(|e| Error::Syntax(e.to_string())))
            .transpose()?;
        Ok(Settings {
            model: cli.model.clone(),
            random_weights: cli.random_weights,
            lang,
            light: cli.theme == crate::cli::Theme::Light,
            cache_dir: source::cache_dir(),
        })
    }

    /// The language of an input named `file`: `--lang`, else its extension, else the
    /// look of its `text` ([`Language::from_text`]: a Java file named `.txt` is Java).
    pub fn language_for(&self, file: &str, text: &str) -> Language {
        self.lang
            .or_else(|| Language::from_path(std::path::Path::new(file)))
            .unwrap_or_else(|| Language::from_text(text))
    }
}
