//! cairn-cli: the command-line surface. Each subcommand is a thin call into the library
//! crates; this crate owns argument parsing, output and exit codes
//! (0 = done, 1 = a step failed or verification found damage, 2 = bad input, 130 = interrupted
//! by Ctrl-C, SIGTERM or SIGHUP).

mod args;
mod bench;
mod bench_sequential;
mod budget_line;
mod bundle;
mod commands;
mod comparison;
mod context;
mod event_output;
mod exit;
mod fleet;
mod history;
mod lock_cmd;
mod machine_cmd;
mod measured_on;
pub mod preflight;
mod profile_cmd;
mod report_command;
mod results;
mod results_cpus;
mod step_by_key;
mod study_bundle;
mod wording;

use clap::FromArgMatches;

pub use args::Cli;

pub use exit::{BAD_INPUT, FAILED, INTERRUPTED, OK};

pub fn main() -> i32 {
    let mut cli =
        Cli::from_arg_matches(&args::command().get_matches()).unwrap_or_else(|e| e.exit());
    cli.results = context::discover_results(&cli.results);
    init_logging(cli.verbose);
    commands::dispatch(cli)
}

/// Library diagnostics (image builds, server starts) go to stderr through `tracing`:
/// warnings by default, progress notes with `-v`, everything `RUST_LOG` asks for.
fn init_logging(verbose: u8) {
    let default = if verbose > 0 { "info" } else { "warn" };
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_target(false)
        .without_time()
        .try_init();
}
