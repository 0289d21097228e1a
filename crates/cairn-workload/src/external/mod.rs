//! Adapters for real external tools (`tool="external"`): run the image's own program through a [`ToolRunner`](crate::workload::ToolRunner) and read its report into the native drivers' metrics and figures.
//!
//! An adapter never guesses: a tool that fails, prints an error, or reports something other
//! than what was asked (another test, thread count, rate, …) is an [`ExternalError`] carrying
//! the tail of the tool's own output; what the tool cannot tell (e.g. errors by kind) is left
//! out of the figures and listed in the outcome's detail instead of being made up.

pub mod sysbench;
pub mod sysbench_report;

pub use sysbench::ExternalSysbench;

/// Lines of a tool's output kept in an error message.
const TAIL_LINES: usize = 25;
/// Characters of a tool's output kept in an error message.
const TAIL_CHARS: usize = 4000;

/// Why an external tool's run gave no measurement.
#[derive(Debug, thiserror::Error)]
pub enum ExternalError {
    /// The executor offers no way to run the tool next to this server.
    #[error(
        "`tool=\"external\"` runs the image's `{tool}` in a client container on the server's network; \
         this server has none (servers of the process executor run no containers): \
         use tool=\"native\" or a Docker server"
    )]
    NoRunner { tool: &'static str },
    /// The runner could not start or wait for the tool.
    #[error("could not run `{tool}`: {message}")]
    Run { tool: &'static str, message: String },
    /// The tool exited with a non-zero code.
    #[error("`{tool}` exited with code {code}; its output ends with:\n{tail}")]
    Failed {
        tool: &'static str,
        code: i64,
        tail: String,
    },
    /// The tool printed an error (e.g. sysbench's `FATAL:`), whatever its exit code.
    #[error("`{tool}` reported an error: {line}\nits output ends with:\n{tail}")]
    Reported {
        tool: &'static str,
        line: String,
        tail: String,
    },
    /// The output is not the report the adapter reads.
    #[error("cannot read `{tool}`'s report: {what}\nits output ends with:\n{tail}")]
    Unparsable {
        tool: &'static str,
        what: String,
        tail: String,
    },
    /// The report is readable but is not of the run that was asked for.
    #[error(
        "`{tool}`'s report does not match what was asked: {what}\nits output ends with:\n{tail}"
    )]
    Mismatch {
        tool: &'static str,
        what: String,
        tail: String,
    },
}

/// The last lines of a tool's stdout and stderr (stderr last), at most [`TAIL_LINES`]
/// lines and [`TAIL_CHARS`] characters, for error messages.
pub fn output_tail(stdout: &str, stderr: &str) -> String {
    let mut all = String::with_capacity(stdout.len() + stderr.len() + 1);
    all.push_str(stdout.trim_end());
    if !stderr.trim().is_empty() {
        if !all.is_empty() {
            all.push('\n');
        }
        all.push_str(stderr.trim_end());
    }
    let lines: Vec<&str> = all.lines().collect();
    let tail = lines[lines.len().saturating_sub(TAIL_LINES)..].join("\n");
    if tail.chars().count() <= TAIL_CHARS {
        return if tail.is_empty() {
            "(no output)".into()
        } else {
            tail
        };
    }
    let skip = tail.chars().count() - TAIL_CHARS;
    format!("…{}", tail.chars().skip(skip).collect::<String>())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tails_keep_the_end_of_both_streams() {
        let out: String = (0..40).map(|i| format!("line {i}\n")).collect();
        let t = output_tail(&out, "invalid option: --x\n");
        assert!(t.starts_with("line 16\n"), "{t}");
        assert!(t.ends_with("line 39\ninvalid option: --x"), "{t}");
        assert_eq!(output_tail("", "  \n"), "(no output)");
        let long = "x".repeat(10_000);
        let t = output_tail(&long, "");
        assert_eq!(t.chars().count(), TAIL_CHARS + 1);
        assert!(t.starts_with('…'));
    }
}
