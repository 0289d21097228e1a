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
    let folded = recording.and_then(|r| {
        std::thread::sleep(Duration::from_secs(1));
        r.stop()
    });
    let _ = busy.kill();
    let _ = busy.wait();
    let folded = folded.expect("perf records a child of ours (linux-perf is a test dependency)");
    let samples: u64 = folded
        .lines()
        .map(|l| l.rsplit_once(' ').unwrap().1.parse::<u64>().unwrap())
        .sum();
    // 199 Hz for one second of one busy CPU: well over a hundred samples
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
