//! How a command ends: cairn's exit codes, and an error already reported to the user
//! ([`Exit`]) that carries the code.

/// Exit codes.
pub const OK: i32 = 0;
pub const FAILED: i32 = 1;
pub const BAD_INPUT: i32 = 2;
/// Stopped by Ctrl-C, SIGTERM or SIGHUP (see `commands::run` for why one code for all).
pub const INTERRUPTED: i32 = 130;

/// An error already reported to the user, carrying the exit code to use.
#[derive(Debug)]
pub struct Exit(pub i32);

/// For `map_err`: print `error: …` and exit with `code`.
pub fn fail<E: std::fmt::Display>(code: i32) -> impl FnOnce(E) -> Exit {
    move |e| {
        eprintln!("error: {e}");
        Exit(code)
    }
}
