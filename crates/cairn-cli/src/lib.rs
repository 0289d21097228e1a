//! cairn-cli: the command-line surface. Each subcommand is a thin call into the library
//! crates; this crate owns argument parsing, output and exit codes
//! (0 = done, 1 = a step failed or verification found damage, 2 = bad input, 130 = interrupted).

mod args;
mod bench;
mod commands;
mod context;
mod report;

use clap::Parser;

pub use args::Cli;

/// Exit codes.
pub const OK: i32 = 0;
pub const FAILED: i32 = 1;
pub const BAD_INPUT: i32 = 2;
pub const INTERRUPTED: i32 = 130;

pub fn main() -> i32 {
    let cli = Cli::parse();
    commands::dispatch(cli)
}
