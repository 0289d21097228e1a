//! `perf record` against a real process: a busy shell loop sampled for a second gives folded
//! stacks rooted at its thread name, with the shell's own frames resolved.

use std::process::{Command, Stdio};
use std::time::Duration;

use cairn_exec::profiler::Recording;

#[test]
fn a_busy_process_is_sampled_and_folded() {
    let mut busy = Command::new("sh")
        .args(["-c", "while :; do :; done"])
        .stdout(Stdio::null())
        .spawn()
        .expect("sh");
    let recording = Recording::start(busy.id());
    // a second of the shell's own CPU time, not of the clock: on a loaded machine (a build
    // beside the tests) a second of the clock may give it a few milliseconds of CPU
    let folded = recording.and_then(|r| {
        wait_for_cpu_seconds(busy.id(), 1.0);
        r.stop()
    });
    let _ = busy.kill();
    let _ = busy.wait();
    let folded = folded.expect("perf records a child of ours (linux-perf is a test dependency)");
    let samples: u64 = folded
        .lines()
        .map(|l| l.rsplit_once(' ').unwrap().1.parse::<u64>().unwrap())
        .sum();
    // 199 Hz for one second of the shell on a CPU: well over a hundred samples
    assert!(samples > 50, "{samples} samples:\n{folded}");
    assert!(
        folded
            .lines()
            .all(|l| l.starts_with("sh;") || l.starts_with("sh ")),
        "{folded}"
    );
    // the shell's binary or libc named on some stack, not only [unknown]
    assert!(
        folded.contains("[dash]") || folded.contains("[sh]") || folded.contains("libc"),
        "{folded}"
    );
}

/// Wait until process `pid` has run for `seconds` of CPU time (user and system, from
/// `/proc/<pid>/stat`), or ten minutes of the clock have passed.
fn wait_for_cpu_seconds(pid: u32, seconds: f64) {
    // SAFETY: sysconf only reads a constant of the system
    let ticks_per_second = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
    let cpu_seconds = || -> Option<f64> {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        let fields: Vec<&str> = stat[stat.rfind(')')? + 2..].split_whitespace().collect();
        // utime and stime are fields 14 and 15 of stat, 12 and 13 after the command name
        let ticks: f64 =
            fields.get(11)?.parse::<f64>().ok()? + fields.get(12)?.parse::<f64>().ok()?;
        Some(ticks / ticks_per_second)
    };
    let give_up = std::time::Instant::now() + Duration::from_secs(600);
    while cpu_seconds().is_some_and(|s| s < seconds) && std::time::Instant::now() < give_up {
        std::thread::sleep(Duration::from_millis(50));
    }
}
