//! Processes: waiting for cairn under a hang guard, a running cairn whose JSON lines are read
//! as they come (to signal it mid-run), and finding or reaping leftover processes by a marker.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::Ran;

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
        root: None,
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
            root: None,
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
