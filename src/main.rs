//! The `codescope` binary: parse arguments, start file logging, run, report errors as one
//! line on stderr with a non-zero exit.

use clap::Parser;

fn main() {
    codescope::model::kernels::tame_candle_spin();
    let cli = codescope::cli::Cli::parse();
    codescope::logging::init(cli.log_file.clone());
    if let Err(e) = codescope::commands::run(cli) {
        tracing::error!("{e}");
        eprintln!("codescope: error: {e}");
        std::process::exit(1);
    }
}
