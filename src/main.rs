//! The `codescope` binary: parse arguments, start file logging and the signal watcher,
//! run, report errors as one line on stderr with a non-zero exit.

use clap::Parser;

fn main() {
    // candle attaches a backtrace to its errors when RUST_BACKTRACE is set, which would
    // turn a one-line error into a hundred; panics keep theirs. Set before any thread.
    if std::env::var_os("RUST_LIB_BACKTRACE").is_none() {
        std::env::set_var("RUST_LIB_BACKTRACE", "0");
    }
    codescope::model::kernels::tame_candle_spin();
    let cli = codescope::cli::Cli::parse();
    codescope::logging::init(cli.log_file.clone());
    codescope::signals::install();
    tracing::info!(version = env!("CARGO_PKG_VERSION"), "started");
    let result = codescope::commands::run(cli);
    let peak = codescope::logging::peak_rss_mib().unwrap_or(0);
    tracing::info!(ok = result.is_ok(), peak_rss_mib = peak, "finished");
    if let Some(status) = codescope::signals::exit_status() {
        std::process::exit(status);
    }
    match result {
        Ok(()) => {}
        // `codescope ... | head`: the reader stopped reading; nothing to report.
        Err(e) if e.is_broken_stdout() => {}
        Err(e) => {
            let line = codescope::error::one_line(&e.to_string());
            tracing::error!("{line}");
            // A closed stderr must not turn the error into a panic.
            codescope::logging::notice(format_args!("error: {line}"));
            std::process::exit(1);
        }
    }
}
