//! The whole machine's CPU time (`/proc/stat`) and cairn's own (`/proc/self/stat`), read at a measured window's two ends, so a trial can say how much of the machine other work used beside its server and client.
//!
//! A measurement is an observation of one machine at one moment: a compile, a backup or a
//! neighbour's job running beside a trial slows it without any input changing. The server's
//! CPU time barely moves then, but its wall-clock figures do. The machine's busy time over
//! the window, less what the trial's own server and client used, is the other work's share.
//! It also holds what the kernel spends on the trial's behalf outside the server's cgroup
//! (network softirqs, a proxy on the connection's path): the record keeps every part.
//!
//! `/proc/stat`'s `cpu` line sums every CPU: user, nice, system, idle, iowait, irq, softirq,
//! steal (guest time is already inside user). Its idle time is exact (a tickless kernel
//! measures each idle period), but user and system are sampled at the timer tick: under a
//! server that sleeps and wakes thousands of times a second they fall short — here 6% of the
//! machine over a 46 s window, more than the other work itself, while the server's cgroup
//! counts its own CPU exactly. So the machine's busy time is the wall-clock window on every
//! CPU less its idle, iowait and steal time, not the sum of the sampled fields. Steal, the
//! time a hypervisor gave to other machines, is kept apart: it is neither this machine's work
//! nor idle.

use std::path::Path;
use std::time::Instant;

use crate::usage::{clock_ticks_per_second, parse_proc_stat_times};

/// One reading of the machine's CPU counters and this process's.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct HostCpuReading {
    /// When it was read.
    pub at: Instant,
    /// Idle and iowait seconds summed over every CPU since boot (exact).
    pub idle_s: f64,
    /// Seconds a hypervisor ran something else while this machine's CPUs wanted to run.
    pub steal_s: f64,
    /// Busy seconds as the tick sampled them (user, nice, system, irq, softirq): for the
    /// record, they fall short under many short sleeps.
    pub sampled_busy_s: f64,
    /// CPUs the `cpu<N>` lines list (online ones).
    pub cpus: usize,
    /// CPU seconds of this process (all its threads, exited ones too): cairn, and the
    /// native drivers' threads in it.
    pub own_s: f64,
}

/// What the machine did between two readings.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct HostCpuDelta {
    /// The wall-clock seconds between the readings.
    pub wall_s: f64,
    pub cpus: usize,
    /// Idle and iowait seconds over every CPU.
    pub idle_s: f64,
    pub steal_s: f64,
    /// The tick's busy seconds, for the record.
    pub sampled_busy_s: f64,
    pub own_s: f64,
}

impl HostCpuReading {
    /// The machine's counters now, and this process's.
    pub fn read() -> Result<HostCpuReading, String> {
        Self::read_from(Path::new("/proc/stat"), Path::new("/proc/self/stat"))
    }

    fn read_from(machine: &Path, own: &Path) -> Result<HostCpuReading, String> {
        let read = |p: &Path| {
            std::fs::read_to_string(p).map_err(|e| format!("reading {}: {e}", p.display()))
        };
        let hz = clock_ticks_per_second();
        let ticks = parse_machine_stat(&read(machine)?)
            .ok_or_else(|| format!("no `cpu` line in {}", machine.display()))?;
        let (utime, stime) = parse_proc_stat_times(&read(own)?)
            .ok_or_else(|| format!("no utime/stime in {}", own.display()))?;
        Ok(HostCpuReading {
            at: Instant::now(),
            idle_s: ticks.idle as f64 / hz,
            steal_s: ticks.steal as f64 / hz,
            sampled_busy_s: ticks.busy as f64 / hz,
            cpus: ticks.cpus,
            own_s: (utime + stime) as f64 / hz,
        })
    }

    /// What the machine did from `before` to this reading (counters never go back).
    pub fn since(&self, before: &HostCpuReading) -> HostCpuDelta {
        HostCpuDelta {
            wall_s: self.at.saturating_duration_since(before.at).as_secs_f64(),
            cpus: self.cpus,
            idle_s: (self.idle_s - before.idle_s).max(0.0),
            steal_s: (self.steal_s - before.steal_s).max(0.0),
            sampled_busy_s: (self.sampled_busy_s - before.sampled_busy_s).max(0.0),
            own_s: (self.own_s - before.own_s).max(0.0),
        }
    }
}

impl HostCpuDelta {
    /// The machine's CPU seconds over the window: the wall clock on every CPU.
    pub fn capacity_s(&self) -> f64 {
        self.wall_s * self.cpus as f64
    }

    /// Busy seconds over every CPU: the window on every CPU less idle, iowait and steal.
    pub fn busy_s(&self) -> f64 {
        (self.capacity_s() - self.idle_s - self.steal_s).max(0.0)
    }

    /// The share of the machine's CPU time over the window (every CPU's) that was busy with
    /// work other than `trial_s` (the seconds the trial's server and client used), in
    /// percent, never below zero: counters read a few milliseconds apart can overlap.
    pub fn other_pct(&self, trial_s: f64) -> Option<f64> {
        let capacity = self.capacity_s();
        (capacity > 0.0).then(|| (100.0 * (self.busy_s() - trial_s) / capacity).max(0.0))
    }
}

/// Clock ticks of `/proc/stat`'s summed `cpu` line, and the number of `cpu<N>` lines.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct MachineTicks {
    /// user + nice + system + irq + softirq, as the tick sampled them.
    busy: u64,
    /// idle + iowait.
    idle: u64,
    steal: u64,
    cpus: usize,
}

/// The `cpu` line's fields (user nice system idle iowait irq softirq steal …; kernels
/// before 2.6.11 have no steal, which counts as none).
fn parse_machine_stat(text: &str) -> Option<MachineTicks> {
    let line = text.lines().find(|l| l.starts_with("cpu "))?;
    let f: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .map(|v| v.parse().ok())
        .collect::<Option<_>>()?;
    let at = |i: usize| f.get(i).copied().unwrap_or(0);
    if f.len() < 4 {
        return None;
    }
    let (user, nice, system, idle, iowait, irq, softirq, steal) =
        (at(0), at(1), at(2), at(3), at(4), at(5), at(6), at(7));
    let busy = user + nice + system + irq + softirq;
    let cpus = text
        .lines()
        .filter(|l| {
            l.strip_prefix("cpu")
                .is_some_and(|r| r.starts_with(|c: char| c.is_ascii_digit()))
        })
        .count();
    Some(MachineTicks {
        busy,
        idle: idle + iowait,
        steal,
        cpus,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const STAT: &str = "cpu  1000 20 300 8000 100 5 15 60 0 0\n\
        cpu0 500 10 150 4000 50 3 7 30 0 0\n\
        cpu1 500 10 150 4000 50 2 8 30 0 0\n\
        intr 12345\nctxt 999\n";

    #[test]
    fn busy_is_the_work_steal_and_waiting_are_apart() {
        let t = parse_machine_stat(STAT).unwrap();
        assert_eq!(t.busy, 1000 + 20 + 300 + 5 + 15);
        assert_eq!(t.idle, 8000 + 100);
        assert_eq!(t.steal, 60);
        assert_eq!(t.cpus, 2);
    }

    #[test]
    fn an_old_kernels_line_without_steal_reads_as_none() {
        let t = parse_machine_stat("cpu 10 0 5 100\ncpu0 10 0 5 100\n").unwrap();
        assert_eq!((t.busy, t.idle, t.steal, t.cpus), (15, 100, 0, 1));
        assert!(parse_machine_stat("intr 1\n").is_none());
        assert!(parse_machine_stat("cpu 1 x 2 3\n").is_none());
    }

    fn reading(at: Instant, idle_s: f64, sampled_busy_s: f64) -> HostCpuReading {
        HostCpuReading {
            at,
            idle_s,
            steal_s: 0.0,
            sampled_busy_s,
            cpus: 2,
            own_s: 0.0,
        }
    }

    #[test]
    fn the_busy_time_is_the_window_less_the_exact_idle_not_the_ticks_sample() {
        let t0 = Instant::now();
        let before = reading(t0, 500.0, 100.0);
        // a 10 s window on 2 CPUs: 20 CPU-seconds, 8 of them idle, so 12 busy — although
        // the tick sampled only 9 busy ones
        let after = reading(t0 + std::time::Duration::from_secs(10), 508.0, 109.0);
        let d = after.since(&before);
        assert_eq!((d.wall_s, d.capacity_s()), (10.0, 20.0));
        assert_eq!((d.busy_s(), d.idle_s, d.sampled_busy_s), (12.0, 8.0, 9.0));
        // the trial's server and client used 9 of the 12: the other work is 3 of 20
        assert_eq!(d.other_pct(9.0), Some(15.0));
        // readings a little apart can count the trial beyond the machine: never below zero
        assert_eq!(d.other_pct(12.5), Some(0.0));
        assert_eq!(before.since(&before).other_pct(0.0), None);
    }

    #[test]
    fn this_machine_reads() {
        let r = HostCpuReading::read().unwrap();
        assert!(r.cpus >= 1 && r.idle_s > 0.0 && r.own_s >= 0.0);
    }
}
