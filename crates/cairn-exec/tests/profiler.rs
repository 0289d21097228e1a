//! `perf record` against a real process: a busy shell loop sampled for a second gives folded
//! stacks rooted at its thread name, with the shell's own frames resolved; and two different
//! binaries busy at one path (as a containerised MariaDB beside another one) each keep their
//! own symbols.

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

/// Two programs with different symbols, each run at the same path in a mount namespace of its
/// own (as the container's `/usr/sbin/mariadbd` beside another build's, on the host or in
/// another container), sampled together on every CPU: each recording reads its process's
/// functions from the binary that process ran. perf's build-id table once merged the two by
/// path, and one of them read the other's symbols.
#[test]
fn two_binaries_at_one_path_each_keep_their_own_symbols() {
    let dir = tempfile::tempdir().expect("tempdir");
    // the same code but for the busy function's name and where it lies: a padding function
    // before it in one, so an address of one falls elsewhere in the other's symbols
    let program = |name: &str, padding: usize| {
        let source = dir.path().join(format!("{name}.c"));
        let pad: String = (0..padding)
            .map(|i| format!("s = s * 31 + {i}; "))
            .collect();
        std::fs::write(
            &source,
            format!(
                "volatile unsigned long s;\n\
                 __attribute__((noinline)) void padding_{name}(void) {{ {pad} }}\n\
                 __attribute__((noinline)) void busy_in_{name}(void) {{ for (;;) s++; }}\n\
                 int main(void) {{ padding_{name}(); busy_in_{name}(); return 0; }}\n"
            ),
        )
        .expect("write source");
        let binary = dir.path().join(name);
        let cc = Command::new("cc")
            .args(["-O1", "-fno-omit-frame-pointer", "-o"])
            .arg(&binary)
            .arg(&source)
            .status()
            .expect("cc (the Rust toolchain's linker)");
        assert!(cc.success(), "cc {}", source.display());
        binary
    };
    let alpha = program("alpha", 1);
    let beta = program("beta", 4000);
    // one path: alpha's copy here, beta mounted over it in a namespace of its own
    let shared = dir.path().join("server");
    std::fs::copy(&alpha, &shared).expect("copy");
    let mut first = Command::new(&shared).spawn().expect("alpha at the path");
    let mut second = Command::new("unshare")
        .args(["--mount", "--propagation", "private", "sh", "-c"])
        .arg(format!(
            "mount --bind {} {} && exec {}",
            beta.display(),
            shared.display(),
            shared.display()
        ))
        .spawn()
        .expect("unshare (util-linux; the tests run as root)");
    // both busy before sampling starts, so both binaries are mapped and sampled
    wait_for_cpu_seconds(first.id(), 0.2);
    wait_for_cpu_seconds(second.id(), 0.2);
    let recordings =
        Recording::start(first.id()).and_then(|a| Ok((a, Recording::start(second.id())?)));
    let folded = recordings.and_then(|(a, b)| {
        let (from_first, from_second) = (cpu_seconds(first.id()), cpu_seconds(second.id()));
        wait_for_cpu_seconds(first.id(), from_first.unwrap_or(0.0) + 1.0);
        wait_for_cpu_seconds(second.id(), from_second.unwrap_or(0.0) + 1.0);
        Ok((a.stop()?, b.stop()?))
    });
    for child in [&mut first, &mut second] {
        let _ = child.kill();
        let _ = child.wait();
    }
    let (first, second) = folded.expect("perf records children of ours");
    assert!(first.contains("busy_in_alpha"), "alpha's stacks:\n{first}");
    assert!(!first.contains("_beta"), "alpha's stacks:\n{first}");
    assert!(second.contains("busy_in_beta"), "beta's stacks:\n{second}");
    assert!(!second.contains("_alpha"), "beta's stacks:\n{second}");
}

/// Wait until process `pid` has run for `seconds` of CPU time, or ten minutes of the clock
/// have passed.
fn wait_for_cpu_seconds(pid: u32, seconds: f64) {
    let give_up = std::time::Instant::now() + Duration::from_secs(600);
    while cpu_seconds(pid).is_some_and(|s| s < seconds) && std::time::Instant::now() < give_up {
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The CPU time process `pid` has run, user and system, from `/proc/<pid>/stat`.
fn cpu_seconds(pid: u32) -> Option<f64> {
    // SAFETY: sysconf only reads a constant of the system
    let ticks_per_second = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let fields: Vec<&str> = stat[stat.rfind(')')? + 2..].split_whitespace().collect();
    // utime and stime are fields 14 and 15 of stat, 12 and 13 after the command name
    let ticks: f64 = fields.get(11)?.parse::<f64>().ok()? + fields.get(12)?.parse::<f64>().ok()?;
    Some(ticks / ticks_per_second)
}
