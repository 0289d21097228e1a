//! Shared helpers of the end-to-end tests: a sandbox (tempdir with its own results and
//! cache), running the real `cairn` binary in it, parsing its JSON lines, counting store
//! files, and looking for leftover processes by a unique marker.

#![allow(dead_code)]

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde_json::Value;

pub const CAIRN: &str = env!("CARGO_BIN_EXE_cairn");

/// Upper bound for any single cairn invocation: a hang guard, never a timing assertion.
pub const HANG_GUARD: Duration = Duration::from_secs(60);

/// The directory of fixture plans shipped with the tests.
pub fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/plans/e2e")
        .join(name)
}

/// A string unique to this test process and call, to find our own child processes.
pub fn unique_marker(tag: &str) -> String {
    static N: AtomicUsize = AtomicUsize::new(0);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    format!(
        "e2e{tag}{}x{}x{}",
        std::process::id(),
        N.fetch_add(1, Ordering::SeqCst),
        nanos
    )
}

/// One invocation's outcome.
#[derive(Debug)]
pub struct Ran {
    pub code: Option<i32>,
    /// The process id it had (to find what it labelled with its run id).
    pub pid: Option<u32>,
    pub stdout: String,
    pub stderr: String,
}

impl Ran {
    fn from_output(o: Output) -> Ran {
        Ran {
            code: o.status.code(),
            pid: None,
            stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
        }
    }

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

    /// stdout parsed as JSON lines.
    pub fn json_lines(&self) -> Vec<Value> {
        parse_json_lines(&self.stdout)
    }

    pub fn events(&self) -> Events {
        Events(self.json_lines())
    }
}

pub fn parse_json_lines(s: &str) -> Vec<Value> {
    s.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not a JSON line ({e}): {l:?}")))
        .collect()
}

/// The event stream of one `cairn --json run`.
#[derive(Debug, Clone)]
pub struct Events(pub Vec<Value>);

impl Events {
    /// Addresses of every event of this kind (`step_finished`, `step_cached`, …).
    pub fn addresses(&self, event: &str) -> BTreeSet<String> {
        self.0
            .iter()
            .filter(|e| e["event"] == event)
            .map(|e| e["step"].as_str().expect("event has a step").to_string())
            .collect()
    }

    pub fn finished(&self) -> BTreeSet<String> {
        self.addresses("step_finished")
    }

    pub fn cached(&self) -> BTreeSet<String> {
        self.addresses("step_cached")
    }

    pub fn failed(&self) -> BTreeSet<String> {
        self.addresses("step_failed")
    }

    pub fn skipped(&self) -> BTreeSet<String> {
        self.addresses("step_skipped")
    }

    pub fn of(&self, event: &str) -> Vec<&Value> {
        self.0.iter().filter(|e| e["event"] == event).collect()
    }

    /// The `summary` object of the final `run_finished` event.
    #[track_caller]
    pub fn summary(&self) -> &Value {
        let last = self.0.last().expect("at least one event");
        assert_eq!(last["event"], "run_finished", "last event: {last}");
        &last["summary"]
    }

    #[track_caller]
    pub fn count(&self, field: &str) -> u64 {
        self.summary()[field]
            .as_u64()
            .unwrap_or_else(|| panic!("summary.{field} is a number: {}", self.summary()))
    }
}

/// Collect a set of addresses from string literals.
pub fn set<const N: usize>(items: [&str; N]) -> BTreeSet<String> {
    items.iter().map(|s| s.to_string()).collect()
}

/// A fresh directory with its own `results/` and `cache/`, where plans are written and
/// cairn runs.
pub struct Sandbox {
    pub dir: tempfile::TempDir,
}

impl Default for Sandbox {
    fn default() -> Self {
        Self::new()
    }
}

impl Sandbox {
    pub fn new() -> Sandbox {
        Sandbox {
            dir: tempfile::Builder::new()
                .prefix("cairn-e2e-")
                .tempdir()
                .expect("tempdir"),
        }
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    pub fn results(&self) -> PathBuf {
        self.path().join("results")
    }

    pub fn cache(&self) -> PathBuf {
        self.path().join("cache")
    }

    pub fn store(&self) -> PathBuf {
        self.results().join("store")
    }

    /// Write (or overwrite) a file relative to the sandbox; returns its path.
    pub fn write(&self, name: &str, text: &str) -> PathBuf {
        let p = self.path().join(name);
        if let Some(parent) = p.parent() {
            std::fs::create_dir_all(parent).expect("mkdir");
        }
        std::fs::write(&p, text).expect("write file");
        p
    }

    /// A `cairn` command with this sandbox's `--results`/`--cache`, run in the sandbox.
    /// `global` go before the subcommand (e.g. `--json`, `-vv`).
    pub fn command(&self, global: &[&str], args: &[&str]) -> Command {
        let mut c = Command::new(CAIRN);
        c.current_dir(self.path())
            .env_remove("CAIRN_RESULTS")
            .env_remove("CAIRN_CACHE")
            .env_remove("RUST_LOG")
            .arg("--results")
            .arg(self.results())
            .arg("--cache")
            .arg(self.cache())
            .args(global)
            .args(args)
            .stdin(Stdio::null());
        c
    }

    /// Run cairn to completion (with a hang guard).
    pub fn cairn(&self, global: &[&str], args: &[&str]) -> Ran {
        let mut c = self.command(global, args);
        c.stdout(Stdio::piped()).stderr(Stdio::piped());
        let child = c.spawn().expect("spawn cairn");
        wait_with_guard(child, HANG_GUARD, &format!("cairn {global:?} {args:?}"))
    }

    /// `cairn --json run <plan> <extra…>`.
    pub fn run(&self, plan: &str, extra: &[&str]) -> (Ran, Events) {
        let mut args = vec!["run", plan];
        args.extend_from_slice(extra);
        let r = self.cairn(&["--json"], &args);
        let ev = r.events();
        (r, ev)
    }

    /// `cairn --json run`, asserting exit 0.
    #[track_caller]
    pub fn run_ok(&self, plan: &str, extra: &[&str]) -> Events {
        let (r, ev) = self.run(plan, extra);
        r.expect_code(0);
        ev
    }

    /// `cairn --json plan <plan>`: one object per step.
    #[track_caller]
    pub fn plan_json(&self, plan: &str) -> Vec<Value> {
        let r = self.cairn(&["--json"], &["plan", plan]);
        r.expect_code(0);
        r.json_lines()
    }

    pub fn verify(&self) -> Ran {
        self.cairn(&[], &["verify"])
    }

    pub fn records_dir(&self) -> PathBuf {
        self.store().join("records")
    }

    /// Paths of every record file.
    pub fn record_files(&self) -> Vec<PathBuf> {
        files_under(&self.records_dir())
            .into_iter()
            .filter(|p| p.extension().is_some_and(|e| e == "json"))
            .collect()
    }

    pub fn record_count(&self) -> usize {
        self.record_files().len()
    }

    pub fn blob_files(&self) -> Vec<PathBuf> {
        files_under(&self.store().join("blobs"))
    }

    /// Every file under the store (records, blobs, names, lock, …).
    pub fn store_file_count(&self) -> usize {
        files_under(&self.store()).len()
    }

    /// Parsed records whose `address` is `address`.
    pub fn records_of(&self, address: &str) -> Vec<(PathBuf, Value)> {
        self.record_files()
            .into_iter()
            .filter_map(|p| {
                let text = std::fs::read_to_string(&p).ok()?;
                let v: Value = serde_json::from_str(&text).ok()?;
                (v["address"] == address).then_some((p, v))
            })
            .collect()
    }

    /// The path of the blob with this digest.
    pub fn blob_path(&self, digest: &str) -> PathBuf {
        self.store().join("blobs").join(&digest[..2]).join(digest)
    }
}

/// Every regular file below `dir` (empty when it does not exist).
pub fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in rd.flatten() {
            let p = e.path();
            match e.file_type() {
                Ok(t) if t.is_dir() => stack.push(p),
                Ok(t) if t.is_file() => out.push(p),
                _ => {}
            }
        }
    }
    out.sort();
    out
}

/// Wait for a child, killing it and panicking if it outlives `guard`.
pub fn wait_with_guard(mut child: Child, guard: Duration, what: &str) -> Ran {
    let pid = Some(child.id());
    let stdout = child.stdout.take();
    let stderr = child.stderr.take();
    let out_t = thread::spawn(move || read_all(stdout));
    let err_t = thread::spawn(move || read_all(stderr));
    let status = wait_status(&mut child, guard)
        .unwrap_or_else(|| panic!("{what} did not finish within {guard:?} (hang guard)"));
    Ran {
        code: status.code(),
        pid,
        stdout: out_t.join().expect("stdout reader"),
        stderr: err_t.join().expect("stderr reader"),
    }
}

fn read_all<R: std::io::Read>(r: Option<R>) -> String {
    let mut s = Vec::new();
    if let Some(mut r) = r {
        let _ = r.read_to_end(&mut s);
    }
    String::from_utf8_lossy(&s).into_owned()
}

/// Poll for the child's exit; on timeout kill it and return `None`.
pub fn wait_status(child: &mut Child, guard: Duration) -> Option<ExitStatus> {
    let deadline = Instant::now() + guard;
    loop {
        if let Some(st) = child.try_wait().expect("try_wait") {
            return Some(st);
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            return None;
        }
        thread::sleep(Duration::from_millis(10));
    }
}

/// A running cairn whose stdout lines arrive on a channel as they are printed.
pub struct Live {
    pub child: Child,
    pub lines: mpsc::Receiver<String>,
    /// Every line received so far.
    pub seen: Vec<String>,
    stderr: Option<thread::JoinHandle<String>>,
}

impl Live {
    pub fn spawn(mut cmd: Command) -> Live {
        cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
        let mut child = cmd.spawn().expect("spawn cairn");
        let stdout = child.stdout.take().expect("stdout");
        let stderr = child.stderr.take();
        let (tx, rx) = mpsc::channel();
        thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let stderr = Some(thread::spawn(move || read_all(stderr)));
        Live {
            child,
            lines: rx,
            seen: Vec::new(),
            stderr,
        }
    }

    pub fn pid(&self) -> i32 {
        self.child.id() as i32
    }

    /// Read lines until `n` of them satisfy `pred`; panics after `guard`.
    #[track_caller]
    pub fn wait_for(&mut self, n: usize, guard: Duration, pred: impl Fn(&Value) -> bool) {
        let deadline = Instant::now() + guard;
        let mut hits = self
            .seen
            .iter()
            .filter(|l| serde_json::from_str::<Value>(l).is_ok_and(|v| pred(&v)))
            .count();
        while hits < n {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) => {
                    if serde_json::from_str::<Value>(&line).is_ok_and(|v| pred(&v)) {
                        hits += 1;
                    }
                    self.seen.push(line);
                }
                Err(_) => {
                    let _ = self.child.kill();
                    panic!(
                        "saw {hits} of {n} expected lines within {guard:?}; lines so far:\n{}",
                        self.seen.join("\n")
                    );
                }
            }
        }
    }

    pub fn signal(&self, sig: i32) {
        // SAFETY: kill(2) on our own child's pid; no memory is touched.
        let rc = unsafe { libc::kill(self.pid(), sig) };
        assert_eq!(rc, 0, "kill({}, {sig})", self.pid());
    }

    /// Wait for exit (hang guard), drain the remaining stdout lines; returns the outcome.
    #[track_caller]
    pub fn finish(mut self, guard: Duration) -> Ran {
        let status = wait_status(&mut self.child, guard)
            .unwrap_or_else(|| panic!("cairn did not exit within {guard:?} (hang guard)"));
        // the reader thread ends at EOF once every writer (cairn and any leftover child)
        // closed the pipe; do not wait forever for stray children holding it
        let deadline = Instant::now() + Duration::from_secs(10);
        while let Ok(line) = self
            .lines
            .recv_timeout(deadline.saturating_duration_since(Instant::now()))
        {
            self.seen.push(line);
        }
        let stderr = self
            .stderr
            .take()
            .map(|h| h.join().unwrap_or_default())
            .unwrap_or_default();
        Ran {
            code: status.code(),
            pid: Some(self.child.id()),
            stdout: self.seen.join("\n"),
            stderr,
        }
    }
}

/// Pids of live processes (not zombies) whose command line or environment contains
/// `marker`.
pub fn processes_with(marker: &str) -> Vec<(i32, String)> {
    let me = std::process::id() as i32;
    let mut out = Vec::new();
    let Ok(rd) = std::fs::read_dir("/proc") else {
        return out;
    };
    for e in rd.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<i32>().ok()) else {
            continue;
        };
        if pid == me {
            continue;
        }
        let base = e.path();
        // zombies have exited already: they hold no resources beyond a pid
        if let Ok(stat) = std::fs::read_to_string(base.join("stat")) {
            if let Some(after) = stat.rsplit_once(')') {
                if after.1.trim_start().starts_with('Z') {
                    continue;
                }
            }
        }
        let cmdline = std::fs::read(base.join("cmdline")).unwrap_or_default();
        let environ = std::fs::read(base.join("environ")).unwrap_or_default();
        let hit = |b: &[u8]| b.windows(marker.len()).any(|w| w == marker.as_bytes());
        if hit(&cmdline) || hit(&environ) {
            let cmd = String::from_utf8_lossy(&cmdline).replace('\0', " ");
            out.push((pid, cmd));
        }
    }
    out
}

/// Wait (up to `guard`) until no process carries `marker`; returns the leftovers.
pub fn leftovers_after(marker: &str, guard: Duration) -> Vec<(i32, String)> {
    let deadline = Instant::now() + guard;
    loop {
        let procs = processes_with(marker);
        if procs.is_empty() || Instant::now() >= deadline {
            return procs;
        }
        thread::sleep(Duration::from_millis(50));
    }
}

/// Kill leftover marked processes so a failing test does not leak them.
pub fn reap(marker: &str) {
    for (pid, _) in processes_with(marker) {
        // SAFETY: kill(2) with SIGKILL on a pid we found carrying our own marker.
        unsafe {
            libc::kill(pid, libc::SIGKILL);
        }
    }
}
