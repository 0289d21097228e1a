//! End-to-end: a trials block's host setting (`io-scheduler`) on a real MariaDB trial — set
//! before the server starts and read back, recorded, and restored after a normal run, after
//! Ctrl-C mid-trial, and (from its journal) by `cairn clean` or the next trial after a
//! SIGKILL. The machine must let cairn set its disk's scheduler (root, a writable /sys) and
//! offer two of them; where it does not, the test says so and passes.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use crate::support::{engine_exclusive, engine_shared, Sandbox};
use crate::trials::{images, trial_running};

/// The tests of this module change one host-wide setting and look at it: one at a time (a
/// trial of one would restore the journal another's killed run left before `cairn clean`).
static HOST: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn host_alone() -> std::sync::MutexGuard<'static, ()> {
    HOST.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The `queue/scheduler` file of the disk holding the container engine's data.
fn scheduler_file() -> Option<PathBuf> {
    let out = Command::new("docker")
        .args(["info", "--format", "{{.DockerRootDir}}"])
        .output()
        .ok()?;
    let root = String::from_utf8_lossy(&out.stdout).trim().to_string();
    let dev = std::fs::metadata(&root).ok()?.dev();
    let sys = std::fs::canonicalize(format!(
        "/sys/dev/block/{}:{}",
        libc::major(dev),
        libc::minor(dev)
    ))
    .ok()?;
    [sys.join("queue/scheduler"), sys.join("../queue/scheduler")]
        .into_iter()
        .find(|f| f.exists())
}

/// The selected scheduler and the others offered.
fn schedulers(file: &Path) -> (String, Vec<String>) {
    let text = std::fs::read_to_string(file).expect("scheduler file");
    let mut selected = String::new();
    let mut others = Vec::new();
    for w in text.split_whitespace() {
        match w.strip_prefix('[').and_then(|w| w.strip_suffix(']')) {
            Some(s) => selected = s.to_string(),
            None => others.push(w.to_string()),
        }
    }
    (selected, others)
}

/// The disk's scheduler file, its scheduler now, and another it offers; `None` where this
/// machine cannot change it.
fn settable() -> Option<(PathBuf, String, String)> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("skipped: setting the I/O scheduler needs root");
        return None;
    }
    let Some(file) = scheduler_file() else {
        eprintln!("skipped: the engine's data is on no disk with an I/O scheduler");
        return None;
    };
    let (now, others) = schedulers(&file);
    let Some(other) = others.into_iter().next() else {
        eprintln!("skipped: the disk offers one I/O scheduler");
        return None;
    };
    Some((file, now, other))
}

fn plan(study: &str, duration: &str, scheduler: &str) -> String {
    format!(
        r#"study "{study}"
import "{}"
server "s" {{ image "mariadb-bookworm"; option innodb_buffer_pool_size="64M" }}
dataset "sb" {{ sysbench tables=1 rows=100 }}
workload "w" {{ sysbench "oltp_point_select"; duration "{duration}" }}
trials "t" {{ servers "s"; dataset "sb"; workload "w"; io-scheduler "{scheduler}" }}
"#,
        images()
    )
}

#[test]
fn the_io_scheduler_is_set_for_the_trial_recorded_and_restored() {
    let _alone = host_alone();
    let Some((file, before, other)) = settable() else {
        return;
    };
    let _engine = engine_shared();
    cairn_testkit::mariadb_image();
    let sb = Sandbox::new();
    sb.write("plan.kdl", &plan("e2e-host-settings", "1s", &other));
    sb.run_ok("plan.kdl", &[]);
    assert_eq!(schedulers(&file).0, before, "restored after the run");
    let rec = sb.record("trial/t/s");
    let set = &rec["extra"]["host_settings"]["settings"][0];
    assert_eq!(set["setting"], "io-scheduler", "{rec}");
    assert_eq!(set["previous"], before.as_str(), "{set}");
    assert_eq!(set["set"], other.as_str(), "{set}");
    assert_eq!(
        set["file"],
        file.canonicalize().unwrap().display().to_string()
    );
}

#[test]
fn ctrl_c_mid_trial_restores_the_io_scheduler() {
    let _alone = host_alone();
    let Some((file, before, other)) = settable() else {
        return;
    };
    let _engine = engine_shared();
    cairn_testkit::mariadb_image();
    let sb = Sandbox::new();
    sb.write("plan.kdl", &plan("e2e-host-settings-int", "5m", &other));
    let (live, _pid) = trial_running(sb.run("plan.kdl").spawn());
    assert_eq!(schedulers(&file).0, other, "set while the trial runs");
    live.signal(libc::SIGINT);
    let r = live.finish(Duration::from_secs(120));
    assert_eq!(r.code, Some(130), "{}", r.stderr);
    assert_eq!(schedulers(&file).0, before, "restored after Ctrl-C");
    assert!(sb.records_of("trial/t/s").is_empty(), "nothing recorded");
}

#[test]
fn cairn_clean_restores_what_a_killed_trial_set() {
    let _alone = host_alone();
    let Some((file, before, other)) = settable() else {
        return;
    };
    // `cairn clean` removes the killed run's containers: no other test's may be in between
    let _engine = engine_exclusive();
    cairn_testkit::mariadb_image();
    let sb = Sandbox::new();
    sb.write("plan.kdl", &plan("e2e-host-settings-kill", "5m", &other));
    let (live, pid) = trial_running(sb.run("plan.kdl").spawn());
    assert_eq!(schedulers(&file).0, other, "set while the trial runs");
    live.signal(libc::SIGKILL);
    let _ = live.finish(Duration::from_secs(60));
    assert_eq!(schedulers(&file).0, other, "a SIGKILL restores nothing");
    let clean = sb.cairn(["clean"]).run();
    clean.expect_code(0);
    assert!(
        clean.stdout.contains("restored host setting"),
        "{}",
        clean.stdout
    );
    assert_eq!(schedulers(&file).0, before, "restored by `cairn clean`");
    assert!(
        !Path::new("/run/cairn/host-settings")
            .read_dir()
            .map(|d| d.flatten().any(|e| e
                .file_name()
                .to_string_lossy()
                .starts_with(&format!("run-{pid}-"))))
            .unwrap_or(false),
        "its journal is gone"
    );
}

#[test]
fn the_next_trial_restores_what_a_killed_trial_set_first() {
    let _alone = host_alone();
    let Some((file, before, other)) = settable() else {
        return;
    };
    // the next run removes the killed run's containers: no other test's may be in between
    let _engine = engine_exclusive();
    cairn_testkit::mariadb_image();
    let sb = Sandbox::new();
    sb.write("plan.kdl", &plan("e2e-host-settings-next", "5m", &other));
    let (live, _pid) = trial_running(sb.run("plan.kdl").spawn());
    live.signal(libc::SIGKILL);
    let _ = live.finish(Duration::from_secs(60));
    assert_eq!(schedulers(&file).0, other, "a SIGKILL restores nothing");
    // the same trial, short: it finds the killed run's journal, restores it, then sets its own
    sb.write("plan.kdl", &plan("e2e-host-settings-next", "1s", &other));
    sb.run_ok("plan.kdl", &[]);
    assert_eq!(schedulers(&file).0, before, "restored after the run");
    let rec = sb.record("trial/t/s");
    let h = &rec["extra"]["host_settings"];
    assert_eq!(h["settings"][0]["previous"], before.as_str(), "{h}");
    assert!(
        h["restored_first"].as_array().is_some_and(|r| r
            .iter()
            .any(|l| l.as_str().is_some_and(|l| l.ends_with(&before)))),
        "{h}"
    );
}
