//! codescope: a terminal explorer for what code language models learn.
//!
//! Data flow for one snippet (see `shared/ARCHITECTURE.md`): source text →
//! `model` (tokenizer + forward with capture → [`model::Trace`]) → views. The syntax
//! layer, analyses and the TUI build on these plain-data types.

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
