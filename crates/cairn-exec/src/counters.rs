//! Hardware event counts of a running server — instructions retired — through Linux's
//! `perf_event_open`, so a trial can state instructions per query where the machine has the
//! counters, and say exactly why not where it does not.
//!
//! The server is counted per thread: one counter for every thread alive when counting starts,
//! each with `inherit`, so threads those threads create later (a server's connection threads)
//! are counted too — the kernel adds a live child's count into its parent's when the parent
//! is read, and an exited one's when it exits. Threads that exist but were not there when the
//! counters opened cannot appear, which is why counting starts before the measured window
//! and is read at both its ends. A cgroup-wide counter would be simpler, but needs the
//! `perf_event` cgroup controller, which many hosts (this one) do not mount.
//!
//! Counts are scaled by `time_enabled / time_running` when the kernel multiplexed the
//! hardware between more events than it has counters.

use std::path::Path;

use perf_event::events::{Hardware, Software};
use perf_event::{Builder, Counter};

/// What to count.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CountedEvent {
    /// Instructions retired (a hardware counter: needs a CPU PMU).
    Instructions,
    /// CPU time in ns (a software event every kernel has: how the counting is tested on
    /// machines without a PMU).
    TaskClockNs,
}

impl CountedEvent {
    fn name(self) -> &'static str {
        match self {
            CountedEvent::Instructions => "instructions",
            CountedEvent::TaskClockNs => "task-clock",
        }
    }
}

/// Open counters over one process's threads.
pub struct ProcessCounters {
    event: CountedEvent,
    counters: Vec<Counter>,
}

impl ProcessCounters {
    /// Start counting `event` over every thread of `pid` (a host PID) and the threads they
    /// create from now on. The error says why the machine cannot count it.
    pub fn open(pid: u32, event: CountedEvent) -> Result<ProcessCounters, String> {
        let tasks = Path::new("/proc").join(pid.to_string()).join("task");
        let entries =
            std::fs::read_dir(&tasks).map_err(|e| format!("reading {}: {e}", tasks.display()))?;
        let mut counters = Vec::new();
        for entry in entries.flatten() {
            let Some(tid) = entry
                .file_name()
                .to_str()
                .and_then(|t| t.parse::<i32>().ok())
            else {
                continue;
            };
            let mut b = match event {
                CountedEvent::Instructions => Builder::new(Hardware::INSTRUCTIONS),
                CountedEvent::TaskClockNs => Builder::new(Software::TASK_CLOCK),
            };
            b.observe_pid(tid).any_cpu().inherit(true).include_kernel();
            match b.build() {
                Ok(mut c) => {
                    c.enable().map_err(|e| why(event, &e))?;
                    counters.push(c);
                }
                // the thread ended between the listing and the open
                Err(e) if e.raw_os_error() == Some(libc::ESRCH) => continue,
                Err(e) => return Err(why(event, &e)),
            }
        }
        if counters.is_empty() {
            return Err(format!("no thread of process {pid} to count"));
        }
        Ok(ProcessCounters { event, counters })
    }

    /// The count since [`ProcessCounters::open`], scaled for multiplexing.
    pub fn read(&mut self) -> Result<u64, String> {
        let event = self.event;
        let mut total = 0f64;
        for c in &mut self.counters {
            let d = c.read_full().map_err(|e| why(event, &e))?;
            let count = d.count() as f64;
            total += match (d.time_enabled(), d.time_running()) {
                (Some(en), Some(run)) if !run.is_zero() && run < en => {
                    count * en.as_secs_f64() / run.as_secs_f64()
                }
                _ => count,
            };
        }
        Ok(total.round() as u64)
    }
}

/// Why `perf_event_open` refused `event`, in words.
fn why(event: CountedEvent, e: &std::io::Error) -> String {
    let name = event.name();
    match e.raw_os_error() {
        Some(libc::ENOENT) | Some(libc::EOPNOTSUPP) => format!(
            "this machine cannot count `{name}`: perf_event_open says the event does not exist here ({e}); {}",
            pmu_hint()
        ),
        Some(libc::EACCES) | Some(libc::EPERM) => format!(
            "counting `{name}` is not permitted ({e}): run as root or lower /proc/sys/kernel/perf_event_paranoid (now {})",
            paranoid()
        ),
        _ => format!("perf_event_open for `{name}`: {e}"),
    }
}

fn pmu_hint() -> &'static str {
    let pmu = Path::new("/sys/bus/event_source/devices");
    if !pmu.join("cpu").exists() && !pmu.join("cpu_core").exists() {
        "there is no CPU PMU under /sys/bus/event_source/devices (e.g. a VM without a virtual PMU)"
    } else {
        "the CPU's PMU does not offer it"
    }
}

fn paranoid() -> String {
    std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid")
        .map(|t| t.trim().to_string())
        .unwrap_or_else(|_| "unknown".into())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::{Command, Stdio};

    /// A child that waits for a line on stdin, then does a fixed amount of work in two
    /// threads (the second created then, after the counters opened), prints `done` and
    /// sleeps until killed — so its CPU time can be read while it is still there.
    fn busy_child() -> std::process::Child {
        let script = "import sys,threading,time\n\
             sys.stdin.readline()\n\
             def burn():\n  x=0\n  for i in range(3000000): x+=i\n\
             th=threading.Thread(target=burn); th.start(); burn(); th.join()\n\
             print('done', flush=True)\n\
             time.sleep(600)";
        Command::new("python3")
            .args(["-c", script])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("python3 runs")
    }

    /// Let the child work, and wait until it says it is done.
    fn work(child: &mut std::process::Child) {
        use std::io::{BufRead, Write};
        child.stdin.as_mut().unwrap().write_all(b"go\n").unwrap();
        let mut line = String::new();
        std::io::BufReader::new(child.stdout.as_mut().unwrap())
            .read_line(&mut line)
            .unwrap();
        assert_eq!(line.trim(), "done");
    }

    fn proc_cpu_s(pid: u32) -> f64 {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
        let (u, s) = crate::usage::parse_proc_stat_times(&stat).unwrap();
        (u + s) as f64 / 100.0
    }

    #[test]
    fn per_thread_counters_follow_threads_created_later() {
        // task-clock is a software event: every kernel counts it, PMU or not, so this checks
        // the counting itself against the kernel's own CPU time for the process
        let mut child = busy_child();
        let pid = child.id();
        let mut counters = ProcessCounters::open(pid, CountedEvent::TaskClockNs)
            .expect("software counters open as root");
        let before = counters.read().unwrap();
        let cpu_before = proc_cpu_s(pid);
        work(&mut child);
        let counted_s = (counters.read().unwrap() - before) as f64 / 1e9;
        let cpu_s = proc_cpu_s(pid) - cpu_before;
        child.kill().ok();
        child.wait().ok();
        // /proc counts in 10 ms ticks: allow two per thread beside a quarter
        assert!(cpu_s > 0.1, "the child burned {cpu_s} s");
        assert!(
            (counted_s - cpu_s).abs() < 0.25 * cpu_s + 0.04,
            "counted {counted_s} s, the kernel says {cpu_s} s"
        );
    }

    #[test]
    fn instructions_are_counted_or_the_reason_is_said() {
        let mut child = busy_child();
        match ProcessCounters::open(child.id(), CountedEvent::Instructions) {
            Ok(mut c) => {
                work(&mut child);
                assert!(c.read().unwrap() > 1_000_000);
            }
            Err(e) => assert!(
                e.contains("cannot count `instructions`") || e.contains("not permitted"),
                "{e}"
            ),
        }
        child.kill().ok();
        child.wait().ok();
    }
}
