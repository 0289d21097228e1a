//! On-CPU stacks of a running server, sampled by Linux `perf` over a measured window and
//! folded into the `root;…;leaf count` text flame graphs are drawn from.
//!
//! `perf record -e cpu-clock -g -a` samples every CPU at a fixed frequency of CPU time (a
//! software event: it needs no hardware counters, so it works in virtual machines without a
//! PMU), and `perf script --pid` keeps the server's samples. Sampling per CPU, not per thread
//! of the server (`-p PID`), is what keeps the cost small: a per-thread event is switched out
//! and in with its thread, and a server answering sysbench switches tens of thousands of
//! times a second. Measured here with 4 client threads on 2 cores, attaching to the server's
//! threads cost half its throughput (and so did `-F 99`, or no call graphs); sampling every
//! CPU cost nothing the passes could tell. perf resolves the symbols of a containerised
//! server in the container's own mount namespace, so the binary it names is the one that
//! ran. Stopping is SIGINT, after which perf writes its file; `perf script` then prints every
//! sample with its frames, leaf first, which [`fold_perf_script`] turns root first and
//! counts.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// The sampling event: CPU time, available on every Linux.
pub const EVENT: &str = "cpu-clock";

/// Samples per second of CPU time on each CPU: enough for a 10 s window on a few CPUs to
/// give thousands of samples, few enough that the server barely notices.
pub const FREQUENCY_HZ: u32 = 199;

/// perf's build-id cache, inside the recording's own directory, so `perf script` never reads
/// (or writes) the shared default (`~/.debug`), which grew by every server binary profiled and
/// which two recordings at once wrote while a third read it.
///
/// The recording itself keeps no build-ids (`--no-buildid`): perf's header lists the build-id
/// of each binary *path* sampled, and two different binaries at one path — the container's
/// `/usr/sbin/mariadbd` and another MariaDB's, on the host or in another container, busy
/// while the window is sampled on every CPU — become one entry there, whose last build-id
/// names the symbols of both. One server's stacks then read another build's functions (seen
/// in CI: `Relay_log_info::init` where `handle_one_connection` ran). Without build-ids each
/// mapping keeps its own file (device and inode), and `perf script` reads it in the mount
/// namespace of the process that mapped it, which is why it runs while the server is still
/// up.
const BUILD_IDS: &str = "build-ids";

/// The perf program: `perf` on the PATH, or the one `CAIRN_PERF` names (a machine whose perf
/// lives elsewhere; the tests name one that does not exist, to see a trial say why it has no
/// profile).
fn perf() -> std::ffi::OsString {
    std::env::var_os("CAIRN_PERF").unwrap_or_else(|| "perf".into())
}

/// A `perf record` of every CPU, kept to one process, writing into a directory of its own.
pub struct Recording {
    child: Child,
    pid: u32,
    interrupted: bool,
    data: PathBuf,
    dir: tempfile::TempDir,
}

impl Recording {
    /// Starts sampling for `pid` (a host PID): its samples are the ones [`Recording::stop`]
    /// keeps. The error says why this machine cannot (no perf, or not permitted).
    pub fn start(pid: u32) -> Result<Recording, String> {
        let dir = tempfile::Builder::new()
            .prefix("cairn-profile-")
            .tempdir()
            .map_err(|e| format!("a directory for perf's samples: {e}"))?;
        let data = dir.path().join("perf.data");
        let build_ids = dir.path().join(BUILD_IDS);
        let mut command = Command::new(perf());
        // the window's timer thread that starts perf may run real-time (so its reading is on
        // time, `usage::prefer_realtime`), and a child inherits its policy: perf at real-time
        // priority took a CPU from the server and cost it 60% of its throughput here. It runs
        // at the normal policy, as any other process
        // SAFETY: sched_setscheduler is async-signal-safe and touches only the child
        unsafe {
            std::os::unix::process::CommandExt::pre_exec(&mut command, || {
                let normal = libc::sched_param { sched_priority: 0 };
                libc::sched_setscheduler(0, libc::SCHED_OTHER, &normal);
                Ok(())
            });
        }
        let child = command
            .arg("--buildid-dir")
            .arg(&build_ids)
            .args(["record", "--no-buildid", "--quiet", "-e", EVENT, "-F"])
            .arg(FREQUENCY_HZ.to_string())
            .args(["-g", "--all-cpus", "-o"])
            .arg(&data)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("cannot start `perf record`: {e} (is linux-perf installed?)"))?;
        Ok(Recording {
            child,
            pid,
            interrupted: false,
            data,
            dir,
        })
    }

    /// Stops sampling now and returns at once: perf writes its file after SIGINT, and
    /// [`Recording::stop`] waits for it and folds the stacks. The window's end is read
    /// between the two, because perf's writing (and `perf script`'s reading) of every CPU's
    /// samples can take seconds.
    pub fn interrupt(&mut self) {
        if !self.interrupted {
            self.interrupted = true;
            // SAFETY: kill(2) on our own child's pid, which has not been reaped yet
            unsafe {
                libc::kill(self.child.id() as libc::pid_t, libc::SIGINT);
            }
        }
    }

    /// Stops sampling (if [`Recording::interrupt`] has not) and returns the folded stacks.
    pub fn stop(mut self) -> Result<String, String> {
        self.interrupt();
        let status = wait_timeout::ChildExt::wait_timeout(&mut self.child, Duration::from_secs(60))
            .map_err(|e| format!("waiting for `perf record`: {e}"))?;
        let Some(status) = status else {
            let _ = self.child.kill();
            let _ = self.child.wait();
            return Err("`perf record` did not stop within 60 s of SIGINT".into());
        };
        let mut stderr = String::new();
        if let Some(mut err) = self.child.stderr.take() {
            use std::io::Read;
            let _ = err.read_to_string(&mut stderr);
        }
        // perf exits with SIGINT's status when interrupted; its file is what tells
        if !self.data.exists() {
            return Err(format!(
                "`perf record` wrote no samples ({status}): {}",
                last_line(&stderr)
            ));
        }
        let out = Command::new(perf())
            .arg("--buildid-dir")
            .arg(self.dir.path().join(BUILD_IDS))
            .args(["script", "--no-inline", "-F", "comm,ip,sym,dso", "--pid"])
            .arg(self.pid.to_string())
            .arg("-i")
            .arg(&self.data)
            .stdin(Stdio::null())
            .stderr(Stdio::piped())
            .output()
            .map_err(|e| format!("cannot start `perf script`: {e}"))?;
        if !out.status.success() {
            return Err(format!(
                "`perf script` failed ({}): {}",
                out.status,
                last_line(&String::from_utf8_lossy(&out.stderr))
            ));
        }
        Ok(fold_perf_script(&String::from_utf8_lossy(&out.stdout)))
    }
}

/// A recording dropped before it was stopped (its trial failed) ends with it: a perf of every
/// CPU would otherwise sample on after the server it was kept to is gone.
impl Drop for Recording {
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

fn last_line(text: &str) -> &str {
    text.lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("")
}

/// `perf script` output → folded stacks: each sample's thread name as the root, then its
/// frames from the outermost caller to the leaf, joined by `;`, one line per distinct stack
/// with its count, in byte order. A frame without a symbol is named by its binary
/// (`[libc.so.6]`), or `[unknown]`.
pub fn fold_perf_script(text: &str) -> String {
    let mut stacks: BTreeMap<String, u64> = BTreeMap::new();
    let mut comm: Option<String> = None;
    let mut frames: Vec<String> = Vec::new();
    let mut flush = |comm: &mut Option<String>, frames: &mut Vec<String>| {
        if let Some(c) = comm.take() {
            let mut stack = clean(&c);
            for frame in frames.iter().rev() {
                stack.push(';');
                stack.push_str(frame);
            }
            *stacks.entry(stack).or_default() += 1;
        }
        frames.clear();
    };
    for line in text.lines() {
        if line.trim().is_empty() {
            flush(&mut comm, &mut frames);
        } else if line.starts_with(char::is_whitespace) {
            if comm.is_some() {
                frames.push(frame_name(line.trim()));
            }
        } else {
            // a sample's header: its first field is the thread's name (which may hold
            // spaces; perf pads it), the rest is what -F asked for
            flush(&mut comm, &mut frames);
            comm = Some(header_comm(line));
        }
    }
    flush(&mut comm, &mut frames);
    let mut out = String::new();
    for (stack, count) in stacks {
        out.push_str(&stack);
        out.push(' ');
        out.push_str(&count.to_string());
        out.push('\n');
    }
    out
}

/// The thread name of a header line: everything before the first run of digits that is a
/// whole field (the pid, when printed), or the whole trimmed line.
fn header_comm(line: &str) -> String {
    let fields: Vec<&str> = line.split_whitespace().collect();
    let end = fields
        .iter()
        .position(|f| f.chars().all(|c| c.is_ascii_digit() || c == '/'))
        .unwrap_or(fields.len());
    fields[..end.max(1)].join(" ")
}

/// `ffffffff813aecd3 finish_task_switch.isra.0+0x93 ([kernel.kallsyms])` →
/// `finish_task_switch.isra.0`; `ae77 [unknown] (/usr/bin/dash)` → `[dash]`.
fn frame_name(frame: &str) -> String {
    let rest = frame
        .split_once(char::is_whitespace)
        .map_or("", |(_, rest)| rest.trim());
    let (symbol, dso) = match rest.rfind(" (") {
        Some(at) if rest.ends_with(')') => (&rest[..at], &rest[at + 2..rest.len() - 1]),
        _ => (rest, ""),
    };
    let symbol = match symbol.rfind("+0x") {
        Some(at) => &symbol[..at],
        None => symbol,
    };
    if symbol.is_empty() || symbol == "[unknown]" {
        let binary = dso.rsplit('/').next().unwrap_or("");
        if binary.is_empty() || binary == "[unknown]" {
            "[unknown]".to_string()
        } else {
            format!("[{}]", clean(binary.trim_matches(['[', ']'])))
        }
    } else {
        clean(symbol)
    }
}

/// A name fit for a folded line: no `;` (the separator) and no line breaks.
fn clean(name: &str) -> String {
    name.trim().replace(';', ":").replace(['\n', '\r'], " ")
}

#[cfg(test)]
mod tests {
    use super::*;

    // the shape of `perf script -F comm,ip,sym,dso` (as perf 6.1 prints it)
    const SCRIPT: &str = "\
mariadbd 
\tffffffff813aecd3 finish_task_switch.isra.0+0x93 ([kernel.kallsyms])
\tffffffff82249604 __schedule+0x3e4 ([kernel.kallsyms])
\t           f82ad read+0xd (/usr/lib/x86_64-linux-gnu/libc.so.6)
\t            ae77 do_command(THD*, bool)+0x17 (/usr/sbin/mariadbd)
\t    55b369be28f8 [unknown] ([unknown])

one_connection 
\t            3555 [unknown] (/usr/lib/x86_64-linux-gnu/libc.so.6)
\t            9936 ut_delay(unsigned long)+0x20 (/usr/sbin/mariadbd)

mariadbd 
\t           f82ad read+0xd (/usr/lib/x86_64-linux-gnu/libc.so.6)
\t            ae77 do_command(THD*, bool)+0x17 (/usr/sbin/mariadbd)
\t    55b369be28f8 [unknown] ([unknown])
";

    #[test]
    fn samples_fold_root_first_and_count() {
        let folded = fold_perf_script(SCRIPT);
        assert_eq!(
            folded,
            "\
mariadbd;[unknown];do_command(THD*, bool);read 1
mariadbd;[unknown];do_command(THD*, bool);read;__schedule;finish_task_switch.isra.0 1
one_connection;ut_delay(unsigned long);[libc.so.6] 1
"
        );
    }

    #[test]
    fn a_header_with_a_pid_and_time_keeps_only_the_thread_name() {
        assert_eq!(
            header_comm("sh 29689  1808.683349:    5025125 cpu-clock: "),
            "sh"
        );
        assert_eq!(
            header_comm("my thread 12/13 1.0: 1 cpu-clock:"),
            "my thread"
        );
        assert_eq!(header_comm("mariadbd "), "mariadbd");
    }

    #[test]
    fn frames_lose_offsets_and_separators() {
        assert_eq!(frame_name("7f a;b+0x1 (/lib/x.so)"), "a:b");
        assert_eq!(
            frame_name("7f [unknown] ([kernel.kallsyms])"),
            "[kernel.kallsyms]"
        );
        assert_eq!(frame_name("7f"), "[unknown]");
    }
}
