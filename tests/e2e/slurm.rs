//! End-to-end: measurements on Slurm (`cairn run --on slurm`) against the real cluster that
//! `scripts/slurm-setup.sh` starts on this machine (munge, slurmctld, slurmd nodes `cairn1`
//! and `cairn2`; partition `solo` holds `cairn1` alone, `own` holds `cairn2`, whose jobs use
//! a Docker Engine of its own). Quickstart-like trials (real MariaDB in Docker) run through
//! one node and are recorded in a local run's form, a cached re-run submits no job and the
//! store verifies clean; on `cairn2` the image arrives as an archive the worker loads into
//! the node's empty engine (and an archive that does not load, or loads as another image,
//! fails the block naming it); blocks spread over two nodes, and one node
//! killed mid-trial loses nothing (its block re-runs whole on the other node, recorded once,
//! the loss in `extra.attempts`); Ctrl-C cancels the run's job, and `cairn clean` cancels
//! the job of a SIGKILLed run.
//!
//! The tests take one lock: one of them kills a node, which no other may be using.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::process::Command;
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::support::{engine_exclusive, engine_shared, Invocation, Live, Sandbox};

/// A hang guard for invocations that start servers (never a timing).
const GUARD: Duration = Duration::from_secs(600);

/// The cluster to this module's tests alone, once both nodes take jobs again: a node the
/// fault test killed may still be coming back, or finishing its last job (`comp`).
///
/// A node slurmctld cannot reach (its state ends in `*`) is healed step by step, each step
/// said on stderr with the daemons' log tails: a slurmd that is gone is started again at
/// once; one still unreachable after 30 s is restarted; after 60 s slurmctld is restarted.
/// The tests are about cairn, and one lost daemon must not fail all of them (CI once saw
/// `cairn1` stay `idle*` through every Slurm test). A node still unreachable after 180 s
/// fails the test with what its slurmd logged.
fn slurm_lock() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    let lock = LOCK.lock().unwrap_or_else(|p| p.into_inner());
    let until = Instant::now() + Duration::from_secs(180);
    for node in ["cairn1", "cairn2"] {
        let mut unreachable_since: Option<Instant> = None;
        let mut healed = 0;
        loop {
            // one line per partition the node is in (cairn1 is in two)
            let states = sh(&format!("sinfo -h -n {node} -o %t"));
            let state = states.lines().next().unwrap_or_default().trim().to_string();
            if !states.trim().is_empty() && states.lines().all(|l| l.trim() == "idle") {
                break;
            }
            if state.ends_with('*') {
                let since = *unreachable_since.get_or_insert_with(Instant::now);
                let step = match since.elapsed().as_secs() {
                    _ if healed == 0 && !slurmd_alive(node) => 1,
                    30.. if healed < 2 => 2,
                    60.. if healed < 3 => 3,
                    _ => 0,
                };
                if step > 0 {
                    heal(node, &state, step);
                    healed = step;
                }
            } else {
                unreachable_since = None;
            }
            if state.starts_with("down") || state.starts_with("drain") {
                sh(&format!("scontrol update nodename={node} state=resume"));
            }
            assert!(
                Instant::now() < until,
                "node {node} is not idle but {state} (slurmd alive: {}):\n{}\nits log ends:\n{}",
                slurmd_alive(node),
                sh("sinfo -N; squeue"),
                slurmd_log_tail(node)
            );
            std::thread::sleep(Duration::from_millis(500));
        }
    }
    lock
}

/// One step of healing an unreachable node (see [`slurm_lock`]): 1 starts its missing
/// slurmd, 2 restarts its slurmd, 3 restarts slurmctld.
fn heal(node: &str, state: &str, step: u32) {
    let what = match step {
        1 => "its slurmd is gone: starting it again",
        2 => "still unreachable after 30 s: restarting its slurmd",
        _ => "still unreachable after 60 s: restarting slurmctld",
    };
    eprintln!(
        "node {node} is {state}, {what}; its slurmd log ended:\n{}\nslurmctld's:\n{}",
        slurmd_log_tail(node),
        sh("tail -n 15 /var/log/slurm/slurmctld.log")
    );
    match step {
        1 => {}
        2 => kill_pidfile(&format!("/run/slurmd-{node}.pid")),
        _ => kill_pidfile("/run/slurmctld.pid"),
    }
    if step == 3 {
        let _ = Command::new("/usr/sbin/slurmctld").status();
    } else {
        let _ = Command::new("/usr/sbin/slurmd").args(["-N", node]).status();
    }
}

/// SIGKILL the process of a daemon's pid file and wait (up to 10 s) until it is gone.
fn kill_pidfile(pidfile: &str) {
    let Some(pid) = std::fs::read_to_string(pidfile)
        .ok()
        .and_then(|p| p.trim().parse::<i32>().ok())
    else {
        return;
    };
    // SAFETY: kill(2) on the pid a test-cluster daemon wrote; no memory is involved.
    unsafe { libc::kill(pid, libc::SIGKILL) };
    let until = Instant::now() + Duration::from_secs(10);
    // SAFETY: signal 0 only asks whether the process exists.
    while unsafe { libc::kill(pid, 0) } == 0 && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Whether node `name`'s slurmd (the pid in its pid file) is a live process.
fn slurmd_alive(name: &str) -> bool {
    std::fs::read_to_string(format!("/run/slurmd-{name}.pid"))
        .ok()
        .and_then(|p| p.trim().parse::<i32>().ok())
        // SAFETY: signal 0 only asks whether the process exists.
        .is_some_and(|pid| unsafe { libc::kill(pid, 0) } == 0)
}

fn slurmd_log_tail(name: &str) -> String {
    sh(&format!("tail -n 15 /var/log/slurm/slurmd-{name}.log"))
}

fn sh(cmd: &str) -> String {
    let out = Command::new("sh").arg("-c").arg(cmd).output().expect("sh");
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// Ids of the jobs Slurm still knows (queued, running or recently ended) named `name`.
fn jobs_named(name: &str) -> BTreeSet<u64> {
    sh("scontrol show job -o 2>/dev/null")
        .lines()
        .filter(|l| l.contains(&format!(" JobName={name} ")))
        .filter_map(|l| {
            l.strip_prefix("JobId=")?
                .split_whitespace()
                .next()?
                .parse()
                .ok()
        })
        .collect()
}

/// Ids of the queued or running jobs named `name`.
fn live_jobs_named(name: &str) -> BTreeSet<u64> {
    sh(&format!("squeue -h -n {name} -o %i"))
        .lines()
        .filter_map(|l| l.trim().parse().ok())
        .collect()
}

/// Wait (hang guard) until `pred` holds.
#[track_caller]
fn wait_until(what: &str, guard: Duration, mut pred: impl FnMut() -> bool) {
    let until = Instant::now() + guard;
    while !pred() {
        assert!(Instant::now() < until, "not within {guard:?}: {what}");
        std::thread::sleep(Duration::from_millis(200));
    }
}

fn trial_records(sb: &Sandbox) -> Vec<Value> {
    sb.record_files()
        .into_iter()
        .filter_map(|p| serde_json::from_str::<Value>(&std::fs::read_to_string(p).ok()?).ok())
        .filter(|v| v["kind"] == "trial")
        .collect()
}

fn keys(v: &Value) -> BTreeSet<String> {
    v.as_object()
        .map(|o| o.keys().cloned().collect())
        .unwrap_or_default()
}

/// Quickstart's study in small: system malloc vs jemalloc, sysbench oltp_read_only at two
/// thread counts, on the shared MariaDB image.
fn quickstart_small(study: &str) -> String {
    format!(
        r#"study "{study}"
import "{images}"
server "system" {{
    image "mariadb-bookworm"
    option innodb_buffer_pool_size="64M" max_connections=64 skip-name-resolve=#true
    connect "tcp"
}}
server "jemalloc" {{
    extends "system"
    allocator "jemalloc"
}}
dataset "sbtest" {{ sysbench tables=1 rows=500 engine="InnoDB" }}
workload "read-only" {{
    sysbench "oltp_read_only"
    threads 1 2
    duration "1s"
}}
trials "ro" {{
    servers "system" "jemalloc"
    dataset "sbtest"
    workload "read-only"
}}
"#,
        images = crate::trials::images()
    )
}

#[test]
fn quickstart_trials_through_one_slurm_node_are_recorded_as_a_local_run_records_them() {
    let _slurm = slurm_lock();
    let _engine = engine_shared();
    cairn_testkit::mariadb_image();
    let study = format!("e2e-slurm-qs-{}", std::process::id());
    let sb = Sandbox::new();
    sb.write("plan.kdl", &quickstart_small(&study));

    // where the work would go, before any of it runs
    let plan = sb
        .cairn(["plan", "plan.kdl", "--on", "slurm", "--partition", "solo"])
        .guard(GUARD)
        .run();
    plan.expect_code(0);
    assert!(
        plan.stdout
            .contains("on Slurm partition `solo`: 1 usable node(s): cairn1"),
        "{}",
        plan.stdout
    );
    assert!(
        plan.stdout.contains("pass 1: 2 block(s), 4 trial(s)"),
        "{}",
        plan.stdout
    );

    let before = jobs_named(&format!("cairn-{study}"));
    let r = run_on_slurm(&sb, "solo", false).run();
    r.expect_code(0);
    assert!(r.stderr.contains("overhead per trial"), "{}", r.stderr);
    let submitted: BTreeSet<u64> = &jobs_named(&format!("cairn-{study}")) - &before;
    assert_eq!(
        submitted.len(),
        2,
        "one job per block: {submitted:?}\n{}",
        r.stderr
    );

    let trials = trial_records(&sb);
    assert_eq!(trials.len(), 4, "{}", r.stderr);
    for t in &trials {
        let node = &t["extra"]["node"];
        assert_eq!(node["name"], "cairn1", "{node}");
        assert!(node["fingerprint"]["cpu_model"].is_string(), "{node}");
        assert!(
            node["class"].as_str().is_some_and(|c| c.len() == 12),
            "{node}"
        );
        assert_eq!(t["extra"]["fleet"]["executor"], "slurm");
        assert!(t["extra"]["figures"]["tps"].as_f64().unwrap() > 0.0);
        assert_eq!(
            t["extra"]["variant"]["executor"], "docker",
            "{}",
            t["extra"]["variant"]
        );
    }
    // the variants of a point went to one job, and the jobs ran them in the seeded order
    let mut by_job: std::collections::BTreeMap<u64, Vec<&Value>> = Default::default();
    for t in &trials {
        by_job
            .entry(t["extra"]["fleet"]["job"].as_u64().unwrap())
            .or_default()
            .push(t);
    }
    for (job, ts) in &by_job {
        let threads: BTreeSet<String> = ts
            .iter()
            .map(|t| t["extra"]["params"]["threads"].to_string())
            .collect();
        assert_eq!(ts.len(), 2, "job {job}");
        assert_eq!(threads.len(), 1, "job {job} holds one matrix point");
    }

    // the same trial run locally is recorded in the same form (a Slurm run adds where it ran)
    let local = Sandbox::new();
    local.write("plan.kdl", &quickstart_small(&study));
    let addr = "trial/ro/jemalloc[threads=2]";
    local
        .cairn(["run", "plan.kdl", "--only", addr])
        .guard(GUARD)
        .run()
        .expect_code(0);
    let l = local.record(addr);
    let s = sb.record(addr);
    assert_eq!(keys(&l), keys(&s));
    assert_eq!(keys(&l["outputs"]), keys(&s["outputs"]));
    assert_eq!(
        l["key"], s["key"],
        "same machine, same key: interchangeable results"
    );
    let mut slurm_extra = keys(&s["extra"]);
    slurm_extra.remove("node");
    slurm_extra.remove("fleet");
    assert_eq!(keys(&l["extra"]), slurm_extra);
    assert_eq!(l["fingerprint"], s["fingerprint"]);

    // a cached re-run submits nothing
    cached_rerun_submits_nothing(&sb, &study, "solo");
    sb.verify().expect_code(0);
    let clean = sb.verify();
    assert!(clean.stdout.contains("store is clean"), "{}", clean.stdout);
}

/// The two-point, two-variant plan of the node tests: host servers (the process executor),
/// so a node's trial is a process tree that can be killed with its node.
fn two_points(study: &str, duration: &str) -> String {
    format!(
        r#"study "{study}"
server "a" {{
    executor "process"
    option innodb_buffer_pool_size="64M" innodb_log_file_size="16M"
    connect "socket"
}}
server "b" {{
    extends "a"
    option innodb_buffer_pool_size="32M"
}}
dataset "sb" {{ sysbench tables=1 rows=500 }}
workload "ps" {{ sysbench "oltp_point_select"; threads 1 2; duration "{duration}" }}
trials "t" {{ servers "a" "b"; dataset "sb"; workload "ps" }}
"#
    )
}

/// `cairn [--json] run plan.kdl --on slurm --partition <partition>` in `sb`, under the
/// tests' hang guard; the caller runs or spawns it.
fn run_on_slurm<'a>(sb: &'a Sandbox, partition: &str, json: bool) -> Invocation<'a> {
    let mut args = vec!["run", "plan.kdl", "--on", "slurm", "--partition", partition];
    if json {
        args.insert(0, "--json");
    }
    sb.cairn(args).guard(GUARD)
}

/// A re-run of `plan.kdl` on `partition` whose trials are all cached: it runs nothing and
/// submits no job.
#[track_caller]
fn cached_rerun_submits_nothing(sb: &Sandbox, study: &str, partition: &str) {
    let before = jobs_named(&format!("cairn-{study}"));
    let again = run_on_slurm(sb, partition, true).run();
    again.expect_code(0);
    assert!(again.events().finished().is_empty(), "{}", again.stdout);
    assert_eq!(jobs_named(&format!("cairn-{study}")), before);
}

/// Wait (hang guard) until `n` blocks of the run `live` have started on their nodes; a run
/// that ends first, or blocks that never start, fail at once with the run's output and
/// Slurm's queue and nodes.
#[track_caller]
fn wait_for_blocks(sb: &Sandbox, live: Live, n: usize) -> Live {
    let mut live = live;
    let until = Instant::now() + GUARD;
    while started_blocks(sb).len() < n {
        let ended = live.child.try_wait().ok().flatten().is_some();
        if ended || Instant::now() >= until {
            let seen = sh("squeue -h -o '%i %j %T %R'; sinfo; scontrol show node -o");
            if !ended {
                live.signal(libc::SIGINT);
            }
            let r = live.finish(GUARD);
            panic!(
                "{} of {n} blocks started (run ended: {ended}, code {:?}); Slurm:\n{seen}\n--- stdout\n{}\n--- stderr\n{}",
                started_blocks(sb).len(),
                r.code,
                r.stdout,
                r.stderr
            );
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    live
}

/// The `started.json` files of a run's job directories: (job dir, node).
fn started_blocks(sb: &Sandbox) -> Vec<(PathBuf, String)> {
    let spool = sb.results().join("slurm-spool");
    let mut found = Vec::new();
    for run in std::fs::read_dir(&spool).into_iter().flatten().flatten() {
        for job in std::fs::read_dir(run.path())
            .into_iter()
            .flatten()
            .flatten()
        {
            let started = job.path().join("started.json");
            if let Ok(text) = std::fs::read_to_string(&started) {
                if let Ok(v) = serde_json::from_str::<Value>(&text) {
                    found.push((
                        job.path(),
                        v["node"].as_str().unwrap_or_default().to_string(),
                    ));
                }
            }
        }
    }
    found
}

/// Pids of the processes of Slurm job `job`: its slurmstepd and everything that runs with
/// the job's id in its environment (the worker, its server).
fn job_pids(job: u64) -> Vec<i32> {
    let mut pids = Vec::new();
    for e in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let cmdline = std::fs::read(e.path().join("cmdline")).unwrap_or_default();
        let environ = std::fs::read(e.path().join("environ")).unwrap_or_default();
        let cmd = String::from_utf8_lossy(&cmdline);
        let env = String::from_utf8_lossy(&environ);
        if cmd.starts_with(&format!("slurmstepd: [{job}."))
            || env.split('\0').any(|v| v == format!("SLURM_JOB_ID={job}"))
        {
            pids.push(pid);
        }
    }
    pids
}

/// Kills node `name` (its slurmd and the processes of its job) like a power cut; restarts
/// it when dropped, so the cluster is whole again for the next test.
struct KilledNode(String);

impl KilledNode {
    fn kill(name: &str, job: u64) -> KilledNode {
        let pidfile = format!("/run/slurmd-{name}.pid");
        let slurmd: i32 = std::fs::read_to_string(&pidfile)
            .expect("slurmd pid file")
            .trim()
            .parse()
            .expect("pid");
        let mut pids = job_pids(job);
        pids.push(slurmd);
        for pid in pids {
            // SAFETY: kill(2) on pids read just now; no memory is touched.
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
        KilledNode(name.to_string())
    }
}

impl Drop for KilledNode {
    fn drop(&mut self) {
        let _ = Command::new("/usr/sbin/slurmd")
            .args(["-N", &self.0])
            .status();
        let _ = Command::new("scontrol")
            .args(["update", &format!("nodename={}", self.0), "state=resume"])
            .stderr(std::process::Stdio::null())
            .status();
        let name = self.0.clone();
        let until = Instant::now() + Duration::from_secs(60);
        while Instant::now() < until {
            let state = sh(&format!("sinfo -h -n {name} -o %t"));
            if state.trim() == "idle" {
                break;
            }
            std::thread::sleep(Duration::from_millis(500));
        }
    }
}

#[test]
fn blocks_spread_over_two_nodes_and_a_node_killed_mid_trial_loses_nothing() {
    let _slurm = slurm_lock();
    let study = format!("e2e-slurm-nodes-{}", std::process::id());
    let sb = Sandbox::new();
    sb.write("plan.kdl", &two_points(&study, "2s"));
    let live = sb
        .cairn([
            "--json",
            "run",
            "plan.kdl",
            "--on",
            "slurm",
            "--node-retries",
            "2",
        ])
        .guard(GUARD)
        .spawn();
    // both blocks out, one per node; kill the node of the first whose worker started, while
    // its first trial runs
    let live = wait_for_blocks(&sb, live, 2);
    let (dir, victim) = started_blocks(&sb).remove(0);
    std::thread::sleep(Duration::from_millis(1500));
    let job: u64 = sh(&format!("squeue -h -w {victim} -n cairn-{study} -o %i"))
        .trim()
        .parse()
        .expect("the victim's job is running");
    assert!(
        !dir.join("done.json").exists(),
        "the block on {victim} finished before the kill"
    );
    let killed = KilledNode::kill(&victim, job);
    let r = live.finish(GUARD);
    drop(killed);
    r.expect_code(0);

    let trials = trial_records(&sb);
    assert_eq!(trials.len(), 4, "every trial recorded once\n{}", r.stderr);
    let addresses: BTreeSet<&str> = trials
        .iter()
        .map(|t| t["address"].as_str().unwrap())
        .collect();
    assert_eq!(addresses.len(), 4, "nothing recorded twice");
    let nodes: BTreeSet<&str> = trials
        .iter()
        .map(|t| t["extra"]["node"]["name"].as_str().unwrap())
        .collect();
    let survivor = if victim == "cairn1" {
        "cairn2"
    } else {
        "cairn1"
    };
    assert!(nodes.contains(survivor), "{nodes:?}");
    // the lost block re-ran whole on the other node, the loss noted with each of its trials
    let retried: Vec<&Value> = trials
        .iter()
        .filter(|t| t["extra"]["attempts"].is_array())
        .collect();
    assert_eq!(
        retried.len(),
        2,
        "the lost block's two trials\n{}",
        r.stderr
    );
    for t in &retried {
        assert_eq!(t["extra"]["node"]["name"], survivor);
        let a = &t["extra"]["attempts"][0];
        assert_eq!(a["class"], "transient");
        assert_eq!(a["node"], victim.as_str());
        assert_eq!(a["job"], job);
    }
    let params: BTreeSet<String> = retried
        .iter()
        .map(|t| t["extra"]["params"]["threads"].to_string())
        .collect();
    assert_eq!(params.len(), 1, "one block: one matrix point");
    sb.verify().expect_code(0);
}

#[test]
fn ctrl_c_cancels_the_runs_job_and_clean_cancels_the_job_of_a_killed_run() {
    let _slurm = slurm_lock();
    let study = format!("e2e-slurm-cancel-{}", std::process::id());
    let sb = Sandbox::new();
    sb.write("plan.kdl", &two_points(&study, "20s"));
    let name = format!("cairn-{study}");
    let run = |sig: i32| {
        let live = run_on_slurm(&sb, "solo", true).spawn();
        let before = started_blocks(&sb).len();
        let live = wait_for_blocks(&sb, live, before + 1);
        if live_jobs_named(&name).len() != 1 {
            let seen = sh("squeue -h -o '%i %j %T'");
            live.signal(libc::SIGINT);
            let r = live.finish(GUARD);
            panic!("no job of {name} out ({seen}):\n{}\n{}", r.stdout, r.stderr);
        }
        live.signal(sig);
        live.finish(GUARD)
    };

    let r = run(libc::SIGINT);
    r.expect_code(130);
    wait_until("the run's job is gone", Duration::from_secs(60), || {
        live_jobs_named(&name).is_empty()
    });
    assert!(trial_records(&sb).is_empty(), "nothing half-recorded");

    // `cairn clean` removes what every killed run left, other tests' included: none may be
    // looking at theirs. Taken before the kill: waiting for it afterwards (other tests
    // hold the engine for minutes on a loaded machine) let the job end on its own first
    let engine = engine_exclusive();
    let r = run(libc::SIGKILL);
    assert_eq!(r.code, None, "killed");
    let left = live_jobs_named(&name);
    assert_eq!(left.len(), 1, "a killed run leaves its job");
    let clean = sb.cairn(["clean"]).guard(GUARD).run();
    drop(engine);
    clean.expect_code(0);
    let id = left.iter().next().unwrap();
    assert!(
        clean.stdout.contains(&format!("cancelled Slurm job {id}")),
        "{}",
        clean.stdout
    );
    wait_until(
        "the killed run's job is gone",
        Duration::from_secs(60),
        || live_jobs_named(&name).is_empty(),
    );
    assert!(trial_records(&sb).is_empty());
}

/// The socket of node `cairn2`'s own Docker Engine (scripts/node-engine.sh).
const NODE2_ENGINE: &str = "unix:///run/cairn-node2/docker.sock";

/// `docker` against node `cairn2`'s own engine.
fn node2_docker(args: &str) -> String {
    sh(&format!("DOCKER_HOST={NODE2_ENGINE} docker {args}"))
}

/// Node `cairn2`'s engine, emptied of images (it is this module's alone: no other test
/// uses it), so every run ships.
fn empty_node2_engine() {
    let info = node2_docker("info --format '{{.Images}}'");
    assert!(
        info.trim().parse::<u64>().is_ok(),
        "node cairn2's own engine does not answer on {NODE2_ENGINE} (scripts/node-engine.sh starts it): {info}"
    );
    node2_docker("images -q | xargs -r docker -H unix:///run/cairn-node2/docker.sock rmi -f");
    assert_eq!(
        node2_docker("images -q").trim(),
        "",
        "node cairn2's engine kept images"
    );
}

/// The quickstart trials at one point (one block: both servers), for partition `own`.
fn one_point(study: &str) -> String {
    quickstart_small(study).replace("threads 1 2", "threads 1")
}

/// A test of shipping to node cairn2: the cluster and the engine held (`_slurm`,
/// `_engine`), the test image built, cairn2's engine emptied, and a sandbox holding a
/// one-point plan of a study named after `tag`.
struct ShipCase {
    _slurm: MutexGuard<'static, ()>,
    _engine: std::sync::RwLockReadGuard<'static, ()>,
    image: &'static cairn_testkit::TestImage,
    study: String,
    sb: Sandbox,
}

fn ship_case(tag: &str) -> ShipCase {
    let slurm = slurm_lock();
    let engine = engine_shared();
    let image = cairn_testkit::mariadb_image();
    empty_node2_engine();
    let study = format!("e2e-slurm-{tag}-{}", std::process::id());
    let sb = Sandbox::new();
    sb.write("plan.kdl", &one_point(&study));
    ShipCase {
        _slurm: slurm,
        _engine: engine,
        image,
        study,
        sb,
    }
}

#[test]
fn images_and_snapshots_ship_to_a_node_with_its_own_engine() {
    let ShipCase {
        _slurm,
        _engine,
        image,
        study,
        sb,
    } = ship_case("ship");
    let before = jobs_named(&format!("cairn-{study}"));
    let r = run_on_slurm(&sb, "own", false).run();
    r.expect_code(0);
    let submitted: BTreeSet<u64> = &jobs_named(&format!("cairn-{study}")) - &before;
    assert_eq!(submitted.len(), 1, "one block: {submitted:?}\n{}", r.stderr);

    // the node's own engine holds the image now, with this engine's id
    let loaded = node2_docker(&format!(
        "image inspect --format '{{{{.Id}}}}' {}",
        image.reference
    ));
    assert_eq!(loaded.trim(), image.id, "node cairn2's engine: {loaded}");
    let trials = trial_records(&sb);
    assert_eq!(trials.len(), 2, "{}", r.stderr);
    for t in &trials {
        println!("{}: shipped {}", t["address"], t["extra"]["shipped"]);
        assert_eq!(
            t["extra"]["node"]["name"], "cairn2",
            "{}",
            t["extra"]["node"]
        );
        let shipped = &t["extra"]["shipped"];
        assert_eq!(shipped["image"], image.reference.as_str(), "{shipped}");
        assert_eq!(shipped["image_id"], image.id.as_str(), "{shipped}");
        assert!(
            shipped["load_ms"].as_f64().is_some_and(|ms| ms > 0.0),
            "{shipped}"
        );
        assert!(
            shipped["archive_bytes"].as_u64().is_some_and(|b| b > 0),
            "{shipped}"
        );
        assert_eq!(t["extra"]["image"]["image_id"], image.id.as_str());
        assert!(t["extra"]["figures"]["tps"].as_f64().unwrap() > 0.0);
    }
    // what travelled: the image's archive, named by its id, and the dataset's snapshot
    let shipped = sb.results().join("slurm-spool/shipped");
    let archive = shipped.join(format!(
        "images/{}.tar",
        image.id.trim_start_matches("sha256:")
    ));
    assert!(archive.is_file(), "{}", archive.display());
    let snapshots: Vec<_> = std::fs::read_dir(shipped.join("datasets"))
        .expect("shipped snapshots")
        .flatten()
        .collect();
    // one per server: each variant's dataset is loaded by its own server
    assert_eq!(snapshots.len(), 2, "{snapshots:?}");

    // a cached re-run submits nothing
    cached_rerun_submits_nothing(&sb, &study, "own");

    // another image under the tag on the node: the worker loads the archive over it
    // (an image of one empty layer, made in the node's engine)
    let tiny = sh(&format!(
        "tar cf - --files-from /dev/null | DOCKER_HOST={NODE2_ENGINE} docker import - cairn-e2e-tiny:{}",
        std::process::id()
    ));
    let tiny_id = node2_docker(&format!(
        "image inspect --format '{{{{.Id}}}}' cairn-e2e-tiny:{}",
        std::process::id()
    ));
    assert!(tiny_id.trim().starts_with("sha256:"), "{tiny}{tiny_id}");
    node2_docker(&format!(
        "tag cairn-e2e-tiny:{} {}",
        std::process::id(),
        image.reference
    ));
    sb.write(
        "plan.kdl",
        &one_point(&study).replace("duration \"1s\"", "duration \"2s\""),
    );
    run_on_slurm(&sb, "own", false).run().expect_code(0);
    let loaded = node2_docker(&format!(
        "image inspect --format '{{{{.Id}}}}' {}",
        image.reference
    ));
    assert_eq!(loaded.trim(), image.id, "node cairn2's engine: {loaded}");
    let replaced: Vec<Value> = trial_records(&sb)
        .into_iter()
        .filter(|t| t["extra"]["shipped"]["replaced"] == tiny_id.trim())
        .collect();
    assert_eq!(
        replaced.len(),
        2,
        "the new trials loaded over the other image"
    );
    sb.verify().expect_code(0);
    empty_node2_engine();
}

#[test]
fn an_image_archive_that_does_not_load_or_loads_as_another_image_fails_the_block() {
    let ShipCase {
        _slurm,
        _engine,
        image,
        study: _,
        sb,
    } = ship_case("badship");
    // the archive the run would write is there already (written whole, never rewritten):
    // first bytes no engine loads, then a real archive of another image
    let archive = sb.results().join(format!(
        "slurm-spool/shipped/images/{}.tar",
        image.id.trim_start_matches("sha256:")
    ));
    std::fs::create_dir_all(archive.parent().unwrap()).unwrap();
    std::fs::write(&archive, b"not a docker save archive").unwrap();
    // each trial of the block fails as permanent, the image named
    let run = |expected: &str| {
        let r = run_on_slurm(&sb, "own", true).run();
        r.expect_code(1);
        let events = r.events();
        let failed = events.of("step_failed");
        assert_eq!(failed.len(), 2, "{}\n{}", r.stdout, r.stderr);
        for f in failed {
            assert_eq!(f["class"], "permanent", "{f}");
            let error = f["error"].as_str().unwrap_or_default();
            assert!(
                error.contains("on node cairn2") && error.contains(expected),
                "{error}"
            );
        }
        assert!(trial_records(&sb).is_empty(), "nothing recorded");
    };
    run(&format!(
        "image {} could not be loaded into this node's engine",
        image.reference
    ));

    let tiny = format!("cairn-e2e-tiny:{}", std::process::id());
    let made = sh(&format!(
        "tar cf - --files-from /dev/null | docker import - {tiny} && docker save -o {} {tiny}; docker rmi {tiny}",
        archive.display()
    ));
    assert!(archive.metadata().unwrap().len() > 1024, "{made}");
    run(&format!(
        "image {}: the archive {} loaded, but this node's engine has no image for it where {} was shipped",
        image.reference,
        archive.display(),
        image.id
    ));
    empty_node2_engine();
}
