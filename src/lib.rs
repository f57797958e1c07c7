//! codescope: a terminal explorer for what code language models learn.
//!
//! Data flow for one snippet (see `shared/ARCHITECTURE.md`): source text →
//! `model` (tokenizer + forward with capture → [`model::Trace`]) → views. The syntax
//! layer, analyses and the TUI build on these plain-data types.
//!
//! Module map: `syntax` (tree-sitter tokens, roles, gold graphs), `model` (model
//! loading and traces), `analysis` (the one pipeline every front end calls), `probe`
//! (probing hidden states), `corpus` / `input` (reading snippets), `tui` (the
//! explorer), `export` (slide-grade figures as SVG/PNG, JSON), `present` (scenes,
//! `render`, tours, sessions), `cli` / `commands` (the command line).

pub mod analysis;
pub mod cli;
pub mod commands;
pub mod corpus;
pub mod error;
pub mod export;
pub mod input;
pub mod logging;
pub mod model;
pub mod present;
pub mod probe;
pub mod syntax;
pub mod tui;

pub use error::{Error, Result};
