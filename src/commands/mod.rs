//! The front ends: each subcommand's body (one file each: glue between the validated
//! settings and the library, and what it prints), the explorer's start ([`explore`]) and
//! `render` with its decks ([`render`]); the one model resolution they share
//! ([`load_labelled`], over `model::source::choose`) and their output helpers.

mod analyze;
mod causal;
mod compare;
pub mod explore;
mod models;
mod probe;
pub mod render;
mod reproduce;
mod trace;

use std::io::Write;

use crate::analysis;
use crate::cli::{
    AnalyzeArgs, Cli, Command, CompareArgs, MergeArgs, ProbeArgs, ReproduceArgs, RewriteArgs,
    SyntaxArgs, TraceArgs,
};
use crate::error::{Error, Result};
use crate::input;
use crate::model::{self, source, ForwardOptions, LoadedModel, Trace};
use crate::settings::Settings;
use crate::syntax;

/// The bundled sample shown when no file is given.
pub const DEFAULT_SAMPLE: (&str, &str) = (
    "assets/samples/python/word_count.py",
    include_str!("../../assets/samples/python/word_count.py"),
);

/// Run the parsed command line.
pub fn run(cli: Cli) -> Result<()> {
    let settings = cli.settings()?;
    crate::model::quant::set_mode(cli.weights.unwrap_or_default());
    // The commands that run the same weights pass after pass pack the layer matrices.
    crate::model::quant::set_packing(matches!(
        cli.command,
        Some(Command::Knockout(_) | Command::Ablate(_) | Command::Patch(_))
    ));
    let s = &settings;
    match &cli.command {
        Some(Command::Models) => models::models(),
        Some(Command::Cache { action }) => models::cache_cmd(*action),
        Some(Command::Merge(args)) => reproduce::merge_cmd(s, args),
        Some(Command::Syntax(args)) => analyze::syntax_cmd(s, args),
        Some(Command::Analyze(args)) => analyze::analyze_cmd(s, args),
        Some(Command::Reproduce(args)) => reproduce::reproduce_cmd(s, args),
        Some(Command::Compare(args)) => compare::compare_cmd(s, args),
        Some(Command::Rewrite(args)) => compare::rewrite_cmd(s, args),
        Some(Command::Trace(args)) => trace::trace_cmd(s, args),
        Some(Command::Probe(args)) => probe::probe_cmd(s, args),
        Some(Command::Knockout(args)) => causal::knockout_cmd(s, args),
        Some(Command::Ablate(args)) => causal::ablate_cmd(s, args),
        Some(Command::Lens(args)) => causal::lens_cmd(s, args),
        Some(Command::Patch(args)) => causal::patch_cmd(s, args),
        Some(Command::Render(args)) => render::run(s, args),
        Some(Command::Fetch { spec }) => models::fetch_cmd(spec.as_deref().or(s.model.as_deref())),
        None => explore::explore(&cli, s),
    }
}

/// Resolve and load the model, saying on stderr which one and why (the default model is
/// announced with the reason it was chosen). `lo`: random weights (`--random-weights`)
/// and the stack (`--stack`), from [`Settings::load_options`].
pub fn load_model(spec: Option<&str>, lo: model::LoadOptions) -> Result<LoadedModel> {
    load_labelled(spec, lo).map(|(m, _)| m)
}

/// [`load_model`], with the name the model goes by in titles.
pub fn load_labelled(spec: Option<&str>, lo: model::LoadOptions) -> Result<(LoadedModel, String)> {
    let choice = announced(spec);
    Ok((source::open(&choice, &lo)?, choice.spec))
}

/// The model to use ([`source::choose`]), the default one announced on stderr with the
/// reason it was chosen.
fn announced(spec: Option<&str>) -> source::Choice {
    let choice = source::choose(spec);
    if let Some(why) = &choice.default_why {
        crate::logging::notice(format_args!(
            "using model '{}' ({why}); choose another with --model",
            choice.spec
        ));
    }
    choice
}

/// Remove every `key` field, at any depth, from `v`.
fn strip_key(v: &mut serde_json::Value, key: &str) {
    match v {
        serde_json::Value::Object(m) => {
            m.remove(key);
            m.values_mut().for_each(|x| strip_key(x, key));
        }
        serde_json::Value::Array(a) => a.iter_mut().for_each(|x| strip_key(x, key)),
        _ => {}
    }
}

fn stdout_err(e: std::io::Error) -> Error {
    Error::io("<stdout>", e)
}

/// Write `text` to stdout. To a terminal, text from files (code, names, model fields) is
/// made printable first, codescope's own colours kept; to a pipe or a file it is data and
/// goes out as it is (JSON is escaped by its writer either way).
fn print(text: &str) -> Result<()> {
    use std::io::IsTerminal;
    let mut out = std::io::stdout().lock();
    let text = if std::io::stdout().is_terminal() {
        crate::error::printable_for_terminal(text, color_stdout())
    } else {
        std::borrow::Cow::Borrowed(text)
    };
    out.write_all(text.as_bytes()).map_err(stdout_err)?;
    out.flush().map_err(stdout_err)
}

fn color_stdout() -> bool {
    use std::io::IsTerminal;
    std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
}

/// Print a causal command's result as its output options say.
fn print_out(
    out: &crate::cli::OutputArgs,
    json: impl FnOnce() -> serde_json::Value,
    csv: impl FnOnce() -> String,
    text: impl FnOnce() -> String,
) -> Result<()> {
    if out.json {
        print(&format!("{}\n", json()))
    } else if out.csv {
        print(&csv())
    } else {
        print(&text())
    }
}

/// The directory of this machine's Python standard library, if `python3` is there.
fn python_stdlib() -> Result<std::path::PathBuf> {
    let out = std::process::Command::new("python3")
        .args([
            "-c",
            "import sysconfig; print(sysconfig.get_paths()['stdlib'])",
        ])
        .output()
        .map_err(|e| Error::Input {
            name: "stdlib".into(),
            reason: format!("cannot run python3 to locate the standard library: {e}"),
        })?;
    let p = String::from_utf8_lossy(&out.stdout).trim().to_string();
    if !out.status.success() || p.is_empty() {
        return Err(Error::Input {
            name: "stdlib".into(),
            reason: "python3 did not report a standard library path".into(),
        });
    }
    Ok(p.into())
}

/// `--rewrite NAME` with `--seed`.
fn rewrite_of(name: &str, seed: u64) -> Result<syntax::rewrite::Rewrite> {
    syntax::rewrite::Rewrite::from_name(name, seed).ok_or_else(|| Error::Input {
        name: "--rewrite".into(),
        reason: format!("unknown rewrite `{name}` (rename:neutral, rename:shuffle)"),
    })
}
