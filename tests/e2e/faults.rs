//! End-to-end fault injection: `cairn run` of a short real Docker study (the shared MariaDB
//! image, a tiny dataset, three one-second trials and a command step) is killed again and
//! again at random points — SIGKILL, SIGTERM and SIGINT mixed. After every cycle the store
//! verifies clean, no step is recorded twice, half or again, and nothing of the killed run
//! (container, network, server socket directory) is left — at once after SIGTERM/SIGINT,
//! after the round's next undisturbed run after SIGKILL. Every few kills an undisturbed run must
//! complete the study; then the next round starts from an empty store, so kills land in the
//! image and dataset phases again.
//!
//! The kill points are random but replayable: the test prints its seed, and each cycle's
//! signal and kill point; `CAIRN_FAULT_SEED=<seed>` replays a failing sequence. A kill point
//! is "once the n-th step still to run started, plus d ms", so kills land in every phase
//! (start-up, image check, dataset load and snapshot, trial start, workload, recording)
//! whatever the machine's speed.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::mpsc::RecvTimeoutError;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::support::{engine_shared, unique_marker, Invocation, Live, Sandbox};
use crate::trials::{containers_of, images, networks_of};

/// Rounds of kill cycles, each from an empty store and completed by an undisturbed run;
/// each round sends SIGKILL, SIGTERM and SIGINT once: 4 × 3 = 12 kills (the issue asks for
/// at least 10).
const ROUNDS: usize = 4;

/// A hang guard for one invocation (never a timing claim).
const GUARD: Duration = Duration::from_secs(300);

/// Every step of the study.
const STEPS: [&str; 6] = [
    "image/mariadb-bookworm",
    "note",
    "dataset/sb@s",
    "trial/t/s#1",
    "trial/t/s#2",
    "trial/t/s#3",
];

/// A small, seeded random number generator (splitmix64): the same seed gives the same kills.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n`.
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

fn seed() -> u64 {
    match std::env::var("CAIRN_FAULT_SEED") {
        Ok(s) => s
            .parse()
            .unwrap_or_else(|_| panic!("CAIRN_FAULT_SEED={s} is not a number")),
        Err(_) => std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(1),
    }
}

fn plan(study: &str) -> String {
    format!(
        r#"study "{study}"
import "{}"
server "s" {{ image "mariadb-bookworm"; option innodb_buffer_pool_size="64M" }}
dataset "sb" {{ sysbench tables=1 rows=100 }}
workload "ps" {{ sysbench "oltp_point_select"; threads 1; duration "1s" }}
trials "t" {{ servers "s"; dataset "sb"; workload "ps"; passes 3 }}
step "note" {{ run "sleep 0.5; echo noted > n.txt"; output "n.txt" }}
"#,
        images()
    )
}

/// The server socket directories of process `pid`'s run in `tmp` (cairn's TMPDIR here).
fn socket_dirs_of(tmp: &Path, pid: u32) -> Vec<PathBuf> {
    let prefix = format!("cairn-run-{pid}-");
    std::fs::read_dir(tmp)
        .map(|rd| {
            rd.flatten()
                .filter(|e| e.file_name().to_string_lossy().starts_with(&prefix))
                .map(|e| e.path())
                .collect()
        })
        .unwrap_or_default()
}

/// What a run of process `pid` left: containers, networks, socket directories.
fn leftovers_of(tmp: &Path, pid: u32) -> Vec<String> {
    let mut left = containers_of(pid);
    left.extend(networks_of(pid));
    left.extend(
        socket_dirs_of(tmp, pid)
            .into_iter()
            .map(|p| p.display().to_string()),
    );
    left
}

/// address → record file text, for every record in the store (each must parse).
fn recorded(sb: &Sandbox) -> BTreeMap<String, Vec<String>> {
    let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for p in sb.record_files() {
        let text = std::fs::read_to_string(&p).expect("read record");
        let v: Value = serde_json::from_str(&text)
            .unwrap_or_else(|e| panic!("record {} does not parse ({e}): {text:?}", p.display()));
        let address = v["address"].as_str().unwrap_or_default().to_string();
        out.entry(address).or_default().push(text);
    }
    out
}

/// One cycle's kill point: once `started` steps have started running (0: right after
/// cairn started), `delay_ms` later.
#[derive(Debug, Clone, Copy)]
struct KillPoint {
    signal: i32,
    started: usize,
    delay_ms: u64,
}

fn signal_name(signal: i32) -> &'static str {
    match signal {
        libc::SIGKILL => "SIGKILL",
        libc::SIGTERM => "SIGTERM",
        libc::SIGINT => "SIGINT",
        _ => "other",
    }
}

/// Read the run's lines into `live.seen` until `n` steps started running or it exited.
fn until_started(live: &mut Live, n: usize) {
    let deadline = Instant::now() + GUARD;
    let started = |seen: &[String]| {
        seen.iter()
            .filter(|l| {
                serde_json::from_str::<Value>(l).is_ok_and(|v| v["event"] == "step_started")
            })
            .count()
    };
    while started(&live.seen) < n {
        match live.lines.recv_timeout(Duration::from_millis(50)) {
            Ok(line) => live.seen.push(line),
            Err(RecvTimeoutError::Disconnected) => return,
            Err(RecvTimeoutError::Timeout) => {
                if live.child.try_wait().ok().flatten().is_some() {
                    return;
                }
                assert!(Instant::now() < deadline, "hang guard: {:?}", live.seen);
            }
        }
    }
}

/// The state of the whole test: the sandbox, cairn's temp directory and what the cycles saw.
struct Campaign {
    sb: Sandbox,
    tmp: PathBuf,
    rng: Rng,
    /// address → record text of what this round recorded: each step is recorded once.
    kept: BTreeMap<String, String>,
    /// SIGKILLed runs whose leftovers the next run that got going must have removed.
    killed: Vec<u32>,
    /// Every run's pid: nothing of any may be left at the end.
    pids: Vec<u32>,
    cycles: usize,
    killed_mid_run: usize,
}

impl Campaign {
    fn run(&self) -> Invocation<'_> {
        self.sb
            .run("plan.kdl")
            .env("TMPDIR", &self.tmp.display().to_string())
            .guard(GUARD)
    }

    /// One kill cycle: start a run, signal it at a random point, check the store and what
    /// is left.
    fn kill_cycle(&mut self, signal: i32) {
        self.cycles += 1;
        let cycle = self.cycles;
        // somewhere in the steps still to run (a step takes from 0.3 to ~4 s here)
        let to_run = STEPS.len() - self.kept.len();
        let point = KillPoint {
            signal,
            started: self.rng.below(to_run as u64 + 1) as usize,
            delay_ms: self.rng.below(3000),
        };
        eprintln!(
            "cycle {cycle}: {} once {} of the {to_run} steps to run started, + {} ms",
            signal_name(point.signal),
            point.started,
            point.delay_ms
        );
        let mut live = self.run().spawn();
        let pid = live.pid() as u32;
        self.pids.push(pid);
        until_started(&mut live, point.started);
        std::thread::sleep(Duration::from_millis(point.delay_ms));
        let exited_before = live.child.try_wait().ok().flatten().is_some();
        if !exited_before {
            live.signal(point.signal);
            self.killed_mid_run += 1;
        }
        let r = live.finish(GUARD);
        let events: Vec<Value> = r
            .stdout
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect();
        eprintln!(
            "cycle {cycle}: exit {:?}, {} events{}",
            r.code,
            events.len(),
            if exited_before {
                ", done before the signal"
            } else {
                ""
            }
        );
        // killed, or stopped cleanly with 130, or done before the signal came
        match point.signal {
            libc::SIGKILL => assert!(
                r.code.is_none() || r.code == Some(0),
                "cycle {cycle}: {r:?}"
            ),
            _ => assert!(
                r.code == Some(130) || r.code == Some(0),
                "cycle {cycle}: a stop signal ends a run with 130: {r:?}"
            ),
        }
        self.check_store(&format!("cycle {cycle}"), &events);

        // nothing of this run is left once it stopped on a signal it could handle; a
        // SIGKILLed run's leftovers are removed by a later run: checked after the round's
        // undisturbed run (`complete_round`), since the engine may finish a container or
        // network the killed run had asked for only after the next run's sweep at its start
        // (that run looks again at its end, but it may be killed itself before)
        if point.signal != libc::SIGKILL || exited_before {
            let left = leftovers_of(&self.tmp, pid);
            assert!(left.is_empty(), "cycle {cycle}: left behind: {left:?}");
        }
        if point.signal == libc::SIGKILL && !exited_before {
            self.killed.push(pid);
        }
    }

    /// The next, undisturbed run completes the study; then start over from an empty store,
    /// so the next cycles' kills land in the image and dataset phases too.
    fn complete_round(&mut self, round: usize) {
        let r = self.run().run();
        self.pids.push(r.pid.expect("pid"));
        assert_eq!(
            r.code,
            Some(0),
            "round {round}: the run after the kills\n{}",
            r.stderr
        );
        let events = r.json_lines();
        self.check_store(&format!("round {round}"), &events);
        self.check_killed_runs_cleaned(&format!("round {round}"));
        for step in STEPS {
            assert!(
                self.kept.contains_key(step),
                "round {round}: {step} not recorded"
            );
        }
        for pid in &self.pids {
            let left = leftovers_of(&self.tmp, *pid);
            assert!(left.is_empty(), "round {round}: run {pid} left: {left:?}");
        }
        let dirs: Vec<_> = std::fs::read_dir(&self.tmp)
            .expect("tmp")
            .flatten()
            .map(|e| e.path())
            .collect();
        assert!(
            dirs.is_empty(),
            "round {round}: socket directories left: {dirs:?}"
        );
        eprintln!("round {round}: the next run completed the study");
        std::fs::remove_dir_all(self.sb.results()).expect("remove results");
        std::fs::remove_dir_all(self.sb.cache()).expect("remove cache");
        self.kept.clear();
    }

    /// `verify` is clean; no record is doubled, unexpected or rewritten; every step `events`
    /// reported finished is recorded.
    fn check_store(&mut self, when: &str, events: &[Value]) {
        let v = self.sb.cairn(["verify"]).guard(GUARD).run();
        assert_eq!(v.code, Some(0), "{when}: verify\n{}", v.stdout);
        let now = recorded(&self.sb);
        for (address, texts) in &now {
            assert_eq!(texts.len(), 1, "{when}: {address} recorded twice");
            assert!(
                STEPS.contains(&address.as_str()),
                "{when}: unexpected record {address}"
            );
            // a step recorded by an earlier run was not run (measured) again
            if let Some(before) = self.kept.get(address) {
                assert_eq!(before, &texts[0], "{when}: {address} recorded again");
            }
        }
        for e in events.iter().filter(|e| e["event"] == "step_finished") {
            let address = e["step"].as_str().unwrap_or_default();
            assert!(
                now.contains_key(address),
                "{when}: {address} reported finished but not recorded"
            );
        }
        self.kept
            .extend(now.into_iter().map(|(a, mut t)| (a, t.remove(0))));
    }

    fn check_killed_runs_cleaned(&mut self, when: &str) {
        for k in self.killed.drain(..) {
            let left = leftovers_of(&self.tmp, k);
            assert!(
                left.is_empty(),
                "{when}: the SIGKILLed run {k} left, after the next run: {left:?}"
            );
        }
    }
}

#[test]
fn killed_at_random_points_the_study_always_recovers() {
    let _engine = engine_shared();
    cairn_testkit::mariadb_image();
    let seed = seed();
    eprintln!("fault injection: seed {seed} (replay with CAIRN_FAULT_SEED={seed})");
    let sb = Sandbox::new();
    // cairn's own temp directory: its socket directories are not mixed with other tests'
    let tmp = sb.path().join("tmp");
    std::fs::create_dir_all(&tmp).expect("tmp");
    sb.write("plan.kdl", &plan(&unique_marker("faults")));
    let mut c = Campaign {
        sb,
        tmp,
        rng: Rng(seed),
        kept: BTreeMap::new(),
        killed: Vec::new(),
        pids: Vec::new(),
        cycles: 0,
        killed_mid_run: 0,
    };
    for round in 1..=ROUNDS {
        // each signal once per round, in a random order
        let mut signals = [libc::SIGKILL, libc::SIGTERM, libc::SIGINT];
        for i in (1..signals.len()).rev() {
            signals.swap(i, c.rng.below(i as u64 + 1) as usize);
        }
        for signal in signals {
            c.kill_cycle(signal);
        }
        c.complete_round(round);
    }
    eprintln!(
        "fault injection: seed {seed}: {} cycles tried, {} survived ({} signalled mid-run), \
         {ROUNDS} rounds each completed by the next run",
        c.cycles, c.cycles, c.killed_mid_run
    );
    assert!(c.cycles >= 10);
}
