//! The fluent harness: build one `cairn` invocation (args, env, hang guard, expectations on
//! its output), run it with a hang guard, and check the exit code and the expectations.
//!
//! ```ignore
//! Test::new()
//!     .plan("x.kdl", TEXT)
//!     .args(["check", "x.kdl"])
//!     .stdout(contains("4 steps"))
//!     .success();
//! sb.cairn(["run", "--only", "nope", "p.kdl"]).stderr(contains("nope")).code(2);
//! ```

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::Value;

use super::{normalize, parse_json_lines, wait_with_guard, Events, Live, Sandbox, CAIRN};
use super::{repo_root, HANG_GUARD};

/// What one stream (or both) must show.
pub enum Check {
    Contains(String),
    Lacks(String),
    /// The text, normalized ([`normalize`]), equals the stored insta snapshot of this name.
    Snapshot(String),
}

/// The stream must contain `s`.
pub fn contains(s: impl Into<String>) -> Check {
    Check::Contains(s.into())
}

/// The stream must not contain `s`.
pub fn lacks(s: impl Into<String>) -> Check {
    Check::Lacks(s.into())
}

/// The stream, normalized, must match the snapshot `tests/e2e/snapshots/<name>.snap`.
pub fn snapshot(name: impl Into<String>) -> Check {
    Check::Snapshot(name.into())
}

#[derive(Clone, Copy, Debug)]
enum Stream {
    Stdout,
    Stderr,
    /// stdout and stderr one after the other: for text that may go to either.
    Either,
}

/// One invocation's outcome.
#[derive(Debug)]
pub struct Ran {
    pub code: Option<i32>,
    /// The process id it had (to find what it labelled with its run id).
    pub pid: Option<u32>,
    pub stdout: String,
    pub stderr: String,
    /// The sandbox it ran in, redacted from snapshots.
    pub root: Option<PathBuf>,
}

impl Ran {
    /// Panics with both streams unless the exit code is `code`.
    #[track_caller]
    pub fn expect_code(&self, code: i32) -> &Ran {
        assert_eq!(
            self.code,
            Some(code),
            "expected exit code {code}\n--- stdout:\n{}\n--- stderr:\n{}",
            self.stdout,
            self.stderr
        );
        self
    }

    /// Asserts `check` on stdout.
    #[track_caller]
    pub fn stdout(&self, check: Check) -> &Ran {
        self.check(Stream::Stdout, &check);
        self
    }

    /// Asserts `check` on stderr.
    #[track_caller]
    pub fn stderr(&self, check: Check) -> &Ran {
        self.check(Stream::Stderr, &check);
        self
    }

    /// Asserts `check` on stdout and stderr together (text that may go to either).
    #[track_caller]
    pub fn output(&self, check: Check) -> &Ran {
        self.check(Stream::Either, &check);
        self
    }

    /// stdout parsed as JSON lines.
    pub fn json_lines(&self) -> Vec<Value> {
        parse_json_lines(&self.stdout)
    }

    /// stdout as the event stream of `cairn --json run`.
    pub fn events(&self) -> Events {
        Events(self.json_lines())
    }

    #[track_caller]
    fn check(&self, stream: Stream, check: &Check) {
        let text = match stream {
            Stream::Stdout => self.stdout.clone(),
            Stream::Stderr => self.stderr.clone(),
            Stream::Either => format!("{}{}", self.stdout, self.stderr),
        };
        match check {
            Check::Contains(s) => assert!(
                text.contains(s.as_str()),
                "{stream:?} should contain {s:?}\n--- stdout:\n{}\n--- stderr:\n{}",
                self.stdout,
                self.stderr
            ),
            Check::Lacks(s) => assert!(
                !text.contains(s.as_str()),
                "{stream:?} should not contain {s:?}\n--- stdout:\n{}\n--- stderr:\n{}",
                self.stdout,
                self.stderr
            ),
            Check::Snapshot(name) => {
                assert_snapshot(name, &normalize(&text, self.root.as_deref()));
            }
        }
    }
}

/// Asserts that `text` (already normalized) equals the snapshot
/// `tests/e2e/snapshots/<name>.snap`; a new or changed snapshot is written beside it as
/// `.snap.new` for review (insta's usual workflow).
#[track_caller]
pub fn assert_snapshot(name: &str, text: &str) {
    let mut settings = insta::Settings::clone_current();
    settings.set_snapshot_path(repo_root().join("tests/e2e/snapshots"));
    settings.set_prepend_module_to_snapshot(false);
    settings.set_omit_expression(true);
    settings.bind(|| insta::assert_snapshot!(name, text));
}

/// What to run and what to expect of it, before it runs.
#[derive(Default)]
struct Spec {
    args: Vec<String>,
    env: Vec<(String, String)>,
    guard: Option<Duration>,
    cache: Option<PathBuf>,
    checks: Vec<(Stream, Check)>,
}

/// One `cairn` invocation in a sandbox, built up and then run by [`Invocation::success`],
/// [`Invocation::code`], [`Invocation::failure`] or [`Invocation::run`].
pub struct Invocation<'a> {
    sb: &'a Sandbox,
    spec: Spec,
}

impl<'a> Invocation<'a> {
    pub(super) fn new(sb: &'a Sandbox) -> Invocation<'a> {
        Invocation {
            sb,
            spec: Spec::default(),
        }
    }

    pub fn arg(mut self, arg: impl Into<String>) -> Self {
        self.spec.args.push(arg.into());
        self
    }

    pub fn args<I, S>(mut self, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.spec.args.extend(args.into_iter().map(Into::into));
        self
    }

    /// An environment variable for cairn (the test process's own environment is untouched).
    pub fn env(mut self, key: &str, value: &str) -> Self {
        self.spec.env.push((key.into(), value.into()));
        self
    }

    /// Another hang guard than [`HANG_GUARD`] (for invocations that build or start servers).
    pub fn guard(mut self, guard: Duration) -> Self {
        self.spec.guard = Some(guard);
        self
    }

    /// Another `--cache` than the sandbox's own (e.g. one kept between test runs).
    pub fn cache_dir(mut self, dir: PathBuf) -> Self {
        self.spec.cache = Some(dir);
        self
    }

    /// Expect `check` of stdout once it ran.
    pub fn stdout(mut self, check: Check) -> Self {
        self.spec.checks.push((Stream::Stdout, check));
        self
    }

    /// Expect `check` of stderr once it ran.
    pub fn stderr(mut self, check: Check) -> Self {
        self.spec.checks.push((Stream::Stderr, check));
        self
    }

    /// Expect `check` of stdout and stderr together once it ran.
    pub fn output(mut self, check: Check) -> Self {
        self.spec.checks.push((Stream::Either, check));
        self
    }

    /// The command, not yet started (stdin null, streams inherited).
    pub fn command(&self) -> Command {
        let mut c = Command::new(CAIRN);
        c.current_dir(self.sb.path())
            .env_remove("CAIRN_RESULTS")
            .env_remove("CAIRN_CACHE")
            .env_remove("RUST_LOG")
            .envs(self.spec.env.iter().map(|(k, v)| (k, v)))
            .arg("--results")
            .arg(self.sb.results())
            .arg("--cache")
            .arg(self.spec.cache.clone().unwrap_or_else(|| self.sb.cache()))
            .args(&self.spec.args)
            .stdin(Stdio::null());
        c
    }

    /// Start it and read its stdout lines as they come.
    pub fn spawn(self) -> Live {
        Live::spawn(self.command())
    }

    /// Run it to the end (hang guard) and check the expectations, whatever the exit code.
    #[track_caller]
    pub fn run(self) -> Ran {
        self.finish(None)
    }

    /// Run it; assert exit 0 and the expectations.
    #[track_caller]
    pub fn success(self) -> Ran {
        self.finish(Some(0))
    }

    /// Run it; assert exit `code` and the expectations.
    #[track_caller]
    pub fn code(self, code: i32) -> Ran {
        self.finish(Some(code))
    }

    /// Run it; assert exit 1 (a failed run or check) and the expectations.
    #[track_caller]
    pub fn failure(self) -> Ran {
        self.finish(Some(1))
    }

    #[track_caller]
    fn finish(self, code: Option<i32>) -> Ran {
        let mut c = self.command();
        c.stdout(Stdio::piped()).stderr(Stdio::piped());
        let what = format!("cairn {:?}", self.spec.args);
        let child = c.spawn().expect("spawn cairn");
        let mut ran = wait_with_guard(child, self.spec.guard.unwrap_or(HANG_GUARD), &what);
        ran.root = Some(self.sb.path().to_path_buf());
        if let Some(code) = code {
            ran.expect_code(code);
        }
        for (stream, check) in &self.spec.checks {
            ran.check(*stream, check);
        }
        ran
    }
}

/// A test with its own sandbox and one invocation in it:
/// `Test::new().plan("x.kdl", TEXT).args(["check", "x.kdl"]).stdout(contains("…")).success()`.
pub struct Test {
    sb: Sandbox,
    spec: Spec,
}

impl Default for Test {
    fn default() -> Self {
        Self::new()
    }
}

impl Test {
    pub fn new() -> Test {
        Test {
            sb: Sandbox::new(),
            spec: Spec::default(),
        }
    }

    /// Write a plan (or any file) into the sandbox.
    pub fn plan(self, name: &str, text: &str) -> Self {
        self.sb.write(name, text);
        self
    }

    /// Copy the fixture plan `tests/plans/e2e/<name>` into the sandbox under the same name.
    pub fn fixture(self, name: &str) -> Self {
        self.sb.fixture(name, name);
        self
    }

    pub fn args<I, S>(mut self, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.spec.args.extend(args.into_iter().map(Into::into));
        self
    }

    pub fn env(mut self, key: &str, value: &str) -> Self {
        self.spec.env.push((key.into(), value.into()));
        self
    }

    pub fn stdout(mut self, check: Check) -> Self {
        self.spec.checks.push((Stream::Stdout, check));
        self
    }

    pub fn stderr(mut self, check: Check) -> Self {
        self.spec.checks.push((Stream::Stderr, check));
        self
    }

    pub fn output(mut self, check: Check) -> Self {
        self.spec.checks.push((Stream::Either, check));
        self
    }

    #[track_caller]
    pub fn run(self) -> Done {
        self.finish(None)
    }

    #[track_caller]
    pub fn success(self) -> Done {
        self.finish(Some(0))
    }

    #[track_caller]
    pub fn code(self, code: i32) -> Done {
        self.finish(Some(code))
    }

    #[track_caller]
    pub fn failure(self) -> Done {
        self.finish(Some(1))
    }

    #[track_caller]
    fn finish(self, code: Option<i32>) -> Done {
        let Test { sb, spec } = self;
        let ran = Invocation { sb: &sb, spec }.finish(code);
        Done { sb, ran }
    }
}

/// A [`Test`] that ran: its outcome, and the sandbox to look into or run more in.
pub struct Done {
    pub sb: Sandbox,
    pub ran: Ran,
}

impl std::ops::Deref for Done {
    type Target = Ran;

    fn deref(&self) -> &Ran {
        &self.ran
    }
}
