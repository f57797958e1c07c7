//! codescope: a terminal explorer for what code language models learn.
//!
//! Data flow for one snippet (see `shared/ARCHITECTURE.md`): source text →
//! `model` (tokenizer + forward with capture → [`model::Trace`]) → views. The syntax
//! layer, analyses and the TUI build on these plain-data types.
//!
//! Process plumbing: [`input`] (every user file read, bounded), [`logging`] (file logs,
//! one-line stderr notices, panics of dependencies contained as errors), [`signals`]
//! (SIGTERM/SIGINT/SIGHUP: temporary downloads removed, exit 128 + n). Untrusted model
//! files, indexes and hubs are handled in [`model`] (`source`, `gguf`, `pickle`,
//! `weights`, `integrity`, `limits`; README "Trust and limits").

pub mod analysis;
pub mod cli;
pub mod commands;
pub mod corpus;
pub mod error;
pub mod export;
pub mod input;
pub mod logging;
pub mod model;
pub mod probe;
pub mod signals;
pub mod syntax;
pub mod tui;

pub use error::{Error, Result};
