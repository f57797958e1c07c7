//! The `codescope` binary: parse arguments, start file logging and the signal watcher,
//! run, report errors as one line on stderr with a non-zero exit.

use codescope::{logging, model::integrity, signals};

/// The system allocator, taught to free tensors that are views of a memory-mapped file
/// (cached GGUF weights open without a copy: `model::mapped`).
#[global_allocator]
static ALLOC: codescope::model::mapped::Alloc = codescope::model::mapped::Alloc;

fn main() {
    // candle attaches a backtrace to its errors when RUST_BACKTRACE is set, which would
    // turn a one-line error into a hundred; panics keep theirs. Set before any thread.
    if std::env::var_os("RUST_LIB_BACKTRACE").is_none() {
        std::env::set_var("RUST_LIB_BACKTRACE", "0");
    }
    codescope::model::kernels::tame_candle_spin();
    codescope::model::kernels::reuse_freed_memory();
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    if let Some((typed, cmd)) = codescope::cli::mistyped_command(&args) {
        logging::notice(format_args!(
            "error: `{typed}` is neither a file nor a command; did you mean `codescope {cmd}`?"
        ));
        std::process::exit(2);
    }
    let cli = match codescope::cli::parse(&args) {
        Ok(cli) => cli,
        // A usage error quotes the arguments, file names from a glob among them: made
        // printable like every other message (clap's own colours kept on a terminal).
        Err(e) if e.use_stderr() => {
            use std::io::{IsTerminal, Write};
            let colour = std::io::stderr().is_terminal()
                && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty());
            let text = if colour {
                e.render().ansi().to_string()
            } else {
                e.render().to_string()
            };
            let text = codescope::error::printable_for_terminal(&text, colour);
            let _ = std::io::stderr().lock().write_all(text.as_bytes());
            std::process::exit(e.exit_code());
        }
        // Help and version: to stdout, as clap writes them.
        Err(e) => e.exit(),
    };
    logging::init(cli.log_file.clone());
    logging::install_panic_hook();
    signals::install();
    // Cached GGUF weights are memory-mapped on later opens (Gemma 3 270M: ~0.1 s instead
    // of ~1.5 s; README, Performance); by default only for models up to 4 GiB of f32.
    let setting = std::env::var("CODESCOPE_GGUF_CACHE").ok();
    let mode = match codescope::model::gguf::cache::mode_from_env(setting.as_deref()) {
        Ok(m) => m,
        Err(e) => {
            logging::notice(format_args!("error: {e}"));
            std::process::exit(2);
        }
    };
    codescope::model::gguf::cache::set_mode(mode);
    // The vector instruction set of every kernel and matrix product (CODESCOPE_ISA, else
    // the widest the CPU runs), chosen before the first product.
    let isa = match codescope::model::kernels::isa::init() {
        Ok(isa) => isa,
        Err(e) => {
            logging::notice(format_args!("error: {e}"));
            std::process::exit(2);
        }
    };
    tracing::info!(
        version = env!("CARGO_PKG_VERSION"),
        isa = isa.name(),
        "started"
    );
    let result = codescope::commands::run(cli);
    codescope::model::gguf::cache::finish();
    // Background digests of cached models: a mismatch makes the run a failure.
    let corrupt = integrity::finish();
    corrupt
        .iter()
        .for_each(|c| logging::notice(format_args!("error: {c}")));
    let peak = logging::peak_rss_mib().unwrap_or(0);
    tracing::info!(ok = result.is_ok(), peak_rss_mib = peak, "finished");
    let failed = match result {
        // `codescope ... | head`: the reader stopped reading; nothing to report.
        Err(e) if !e.is_broken_stdout() => {
            let line = codescope::error::one_line(&e.to_string());
            tracing::error!("{line}");
            // Never eprintln!: a closed stderr would turn the error into a panic.
            logging::notice(format_args!("error: {line}"));
            true
        }
        _ => !corrupt.is_empty(),
    };
    signals::finish();
    std::process::exit(signals::exit_status().unwrap_or(i32::from(failed)));
}
