//! `cairn bench`: cairn's own overhead on synthetic plans — N independent trivial steps
//! plus one step that needs all of them. Every figure comes with a reference measured in
//! the same run on the same machine (a bare process start, a bare `sh` step). With
//! `--slurm PLAN`: the per-trial cost of running PLAN's trials on Slurm beside a local run
//! of the same trials. With `--study PLAN`: the share of a whole run of PLAN spent measuring.

use std::fmt::Write as _;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::args::Cli;
use crate::context::Exit;
use crate::{FAILED, OK};

/// The synthetic plan: `n` independent steps and a fan-in step over all of them.
pub fn fan_in_plan(n: usize) -> String {
    let mut s = format!("study \"bench-{n}\"\n");
    for i in 0..n {
        let _ = writeln!(
            s,
            "step \"s{i:05}\" {{\n    run \"echo {i} > out\"\n    output \"out\"\n}}"
        );
    }
    s.push_str("step \"all\" {\n    run \"cat */out | wc -l > count\"\n");
    for i in 0..n {
        let _ = writeln!(s, "    needs \"s{i:05}\"");
    }
    s.push_str("    output \"count\"\n}\n");
    s
}

struct Timed {
    wall: Duration,
    summary: serde_json::Value,
}

fn cairn_run(exe: &Path, dir: &Path, jobs: usize) -> Result<Timed, String> {
    let t = Instant::now();
    let out = Command::new(exe)
        .current_dir(dir)
        .args([
            "--results",
            "results",
            "--cache",
            "cache",
            "--json",
            "run",
            "plan.kdl",
        ])
        .arg("--jobs")
        .arg(jobs.to_string())
        .stderr(Stdio::inherit())
        .output()
        .map_err(|e| format!("starting {}: {e}", exe.display()))?;
    let wall = t.elapsed();
    if !out.status.success() {
        return Err(format!("cairn run failed with {}", out.status));
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let summary = text
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .find(|v| v["event"] == "run_finished")
        .map(|v| v["summary"].clone())
        .ok_or("no run_finished event")?;
    Ok(Timed { wall, summary })
}

fn checked(r: Result<Timed, String>) -> Result<Timed, Exit> {
    r.map_err(crate::context::fail(FAILED))
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// Median time of one durable small-file write as the store makes it — create a file in a
/// fresh directory, write 100 bytes, fsync, rename it beside — over `runs` writes. A first
/// run's per-step overhead is mostly such writes (a record, a blob, their directories), and
/// their cost on a virtual disk moves several-fold from minute to minute; this is the
/// yardstick measured in the same run.
fn durable_write_floor(runs: usize) -> Option<Duration> {
    use std::io::Write as _;
    let dir = tempfile::tempdir().ok()?;
    let mut v = Vec::new();
    for i in 0..runs {
        let t = Instant::now();
        let sub = dir.path().join(format!("d{i}"));
        std::fs::create_dir(&sub).ok()?;
        let tmp = sub.join("tmp");
        let mut f = std::fs::File::create(&tmp).ok()?;
        f.write_all(&[b'x'; 100]).ok()?;
        f.sync_all().ok()?;
        drop(f);
        std::fs::rename(&tmp, sub.join("record")).ok()?;
        v.push(t.elapsed());
    }
    Some(median(v))
}

/// Time of `runs` bare process starts of `cmd` (the floor under any CLI).
fn process_floor(cmd: &Path, args: &[&str], runs: usize) -> Duration {
    let mut v = Vec::new();
    for _ in 0..runs {
        let t = Instant::now();
        let _ = Command::new(cmd)
            .args(args)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
        v.push(t.elapsed());
    }
    median(v)
}

pub fn bench(cli: &Cli, sizes: &[usize], jobs: usize, cached: &Path) -> Result<i32, Exit> {
    let exe = std::env::current_exe().map_err(|e| {
        eprintln!("error: cannot find the cairn binary: {e}");
        Exit(FAILED)
    })?;
    let floor_cairn = process_floor(&exe, &["--version"], 20);
    let floor_sh = process_floor(Path::new("sh"), &["-c", "echo 1 > /dev/null"], 50);
    let floor_write = durable_write_floor(50);
    println!(
        "reference, same run: `cairn --version` {:.2} ms; `sh -c 'echo 1'` {:.2} ms; a durable small-file write (mkdir, create, write, fsync, rename) {}",
        ms(floor_cairn),
        ms(floor_sh),
        floor_write.map_or("not measured".to_string(), |d| format!("{:.2} ms", ms(d)))
    );

    // every scratch store lives until the end: removing one makes the filesystem slower to
    // allocate inodes for a while (ext4 without a journal skips recently deleted inodes one by
    // one), which would bill the next repetition for the benchmark's own cleanup
    let mut scratch = Vec::new();
    for &n in sizes {
        let steps = n + 1;
        // fsync latency here varies run to run: repeat small first runs, each on a fresh store
        let reps = if n <= 1000 { 5 } else { 1 };
        let mut overheads = Vec::new();
        // the disk's speed drifts between repetitions: each is set against writes timed just before it
        let mut in_writes = Vec::new();
        let mut first_walls = Vec::new();
        let mut last_dir = None;
        for _ in 0..reps {
            let dir = tempfile::tempdir().map_err(|e| {
                eprintln!("error: temp dir: {e}");
                Exit(FAILED)
            })?;
            std::fs::write(dir.path().join("plan.kdl"), fan_in_plan(n)).map_err(|e| {
                eprintln!("error: writing plan: {e}");
                Exit(FAILED)
            })?;
            let write_now = durable_write_floor(20);
            // first run with one job: wall − Σ command time = cairn's own work
            let first = checked(cairn_run(&exe, dir.path(), 1))?;
            let command_ms = first.summary["command_ms"].as_f64().unwrap_or(0.0);
            let overhead = (ms(first.wall) - command_ms) / steps as f64;
            overheads.push(overhead);
            if let Some(w) = write_now {
                in_writes.push(overhead / ms(w));
            }
            first_walls.push(first.wall);
            if let Some(d) = last_dir.replace(dir) {
                scratch.push(d);
            }
        }
        let dir = last_dir.expect("at least one repetition");
        let mut cached = Vec::new();
        for _ in 0..5 {
            let r = checked(cairn_run(&exe, dir.path(), jobs))?;
            if r.summary["ran"].as_u64() != Some(0) {
                eprintln!("error: the re-run was not fully cached: {}", r.summary);
                return Err(Exit(FAILED));
            }
            cached.push(r.wall);
        }
        overheads.sort_by(f64::total_cmp);
        let overhead = overheads[overheads.len() / 2];
        let cached_med = median(cached.clone());
        let cached_min = *cached.iter().min().expect("five runs");
        println!("{steps} steps ({n} independent + 1 fan-in):");
        println!(
            "  first run (--jobs 1, {reps}× on fresh stores): median wall {:.0} ms; cairn's overhead excluding the commands' own time: median {:.3} ms/step (range {:.3}..{:.3}; {:.2}× a bare `sh` start{})",
            ms(median(first_walls)),
            overhead,
            overheads[0],
            overheads[overheads.len() - 1],
            overhead / ms(floor_sh),
            if in_writes.len() == reps {
                in_writes.sort_by(f64::total_cmp);
                format!(
                    "; {:.1}× a durable file write timed just before it",
                    in_writes[in_writes.len() / 2]
                )
            } else {
                String::new()
            }
        );
        println!(
            "  fully cached re-run (--jobs {jobs}, whole process): median {:.1} ms, min {:.1} ms over 5 ({:.1}× a bare `cairn --version`)",
            ms(cached_med),
            ms(cached_min),
            ms(cached_med) / ms(floor_cairn)
        );
        scratch.push(dir);
    }
    drop(scratch);
    cached_commands(cli, &exe, cached);
    Ok(OK)
}

/// Median, min and max of `runs` whole-process runs of `exe` with `args`, if every run
/// succeeded.
fn timed_runs(exe: &Path, args: &[std::ffi::OsString], runs: usize) -> Option<(f64, f64, f64)> {
    let mut v = Vec::new();
    for _ in 0..runs {
        let t = Instant::now();
        let ok = Command::new(exe)
            .args(args)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if !ok {
            return None;
        }
        v.push(ms(t.elapsed()));
    }
    v.sort_by(f64::total_cmp);
    Some((v[v.len() / 2], v[0], v[v.len() - 1]))
}

/// What a person waits for when nothing needs doing: `cairn run PLAN` whose every step is
/// served from the store (only when `cairn plan` says so: nothing is measured here), and
/// `cairn machine`.
fn cached_commands(cli: &Cli, exe: &Path, plan: &Path) {
    let global: Vec<&std::ffi::OsStr> = vec![
        "--results".as_ref(),
        cli.results.as_os_str(),
        "--cache".as_ref(),
    ];
    let cache = crate::context::cache_dir(cli.cache.as_deref());
    let with = |more: &[&'static str]| -> Vec<std::ffi::OsString> {
        let mut a: Vec<std::ffi::OsString> = global.iter().map(|s| s.to_os_string()).collect();
        a.push(cache.clone().into_os_string());
        a.extend(more.iter().map(std::ffi::OsString::from));
        a
    };
    if let Some((med, min, max)) = timed_runs(exe, &with(&["machine"]), 10) {
        println!("`cairn machine`: median {med:.1} ms, min {min:.1}, max {max:.1} over 10");
    }
    if !plan.is_file() {
        return;
    }
    let with_plan = |more: &[&'static str]| {
        let mut a = with(more);
        a.push(plan.as_os_str().to_os_string());
        a
    };
    let statuses = Command::new(exe)
        .args(with_plan(&["--json", "plan"]))
        .stderr(Stdio::null())
        .output();
    let pending = statuses.ok().filter(|o| o.status.success()).map(|o| {
        String::from_utf8_lossy(&o.stdout)
            .lines()
            .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
            .filter(|s| !matches!(s["status"].as_str(), Some("cached" | "not_needed")))
            .count()
    });
    match pending {
        Some(0) => {
            if let Some((med, min, max)) = timed_runs(exe, &with_plan(&["run"]), 10) {
                println!(
                    "`cairn run {}`, every step served from the store (whole process): median {med:.1} ms, min {min:.1}, max {max:.1} over 10",
                    plan.display()
                );
            }
        }
        Some(n) => println!(
            "`cairn run {}` not timed: {n} of its steps would run (run it once first)",
            plan.display()
        ),
        None => println!(
            "`cairn run {}` not timed: `cairn plan` failed",
            plan.display()
        ),
    }
}

/// One `cairn run` of `plan` in `dir` (scratch results and cache there) with `args`: its
/// wall time, its summary, and the Slurm overhead line when there is one.
fn run_plan(
    exe: &Path,
    dir: &Path,
    plan: &Path,
    args: &[&str],
) -> Result<(Duration, serde_json::Value, Option<serde_json::Value>), String> {
    let t = Instant::now();
    let out = Command::new(exe)
        .current_dir(dir)
        .args(["--results", "results", "--cache", "cache", "--json", "run"])
        .arg(plan)
        .args(args)
        .stderr(Stdio::inherit())
        .output()
        .map_err(|e| format!("starting {}: {e}", exe.display()))?;
    let wall = t.elapsed();
    if !out.status.success() {
        return Err(format!("cairn run {args:?} failed with {}", out.status));
    }
    let lines: Vec<serde_json::Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let summary = lines
        .iter()
        .find(|v| v["event"] == "run_finished")
        .map(|v| v["summary"].clone())
        .ok_or("no run_finished event")?;
    let slurm = lines
        .iter()
        .find(|v| v.get("slurm_overhead").is_some())
        .map(|v| v["slurm_overhead"].clone());
    Ok((wall, summary, slurm))
}

/// `cairn bench --study PLAN`: PLAN run whole in a scratch store and cache (its images
/// are reused from the engine, its datasets loaded and its trials measured afresh), then the
/// share of the run's wall time spent measuring — warmup and measured windows — with what
/// a trial's setup cost around its measurement (medians over the trials: restoring the
/// datadir, starting the server until it answers, stopping it, all setup).
pub fn bench_study(plan: &Path) -> Result<i32, Exit> {
    let exe = std::env::current_exe().map_err(crate::context::fail(FAILED))?;
    let plan = std::path::absolute(plan).map_err(crate::context::fail(FAILED))?;
    let dir = tempfile::tempdir().map_err(crate::context::fail(FAILED))?;
    let (wall, summary, _) =
        run_plan(&exe, dir.path(), &plan, &[]).map_err(crate::context::fail(FAILED))?;
    let measuring = summary["measuring_ms"].as_f64().unwrap_or(0.0);
    if measuring <= 0.0 {
        eprintln!("error: {} measured nothing", plan.display());
        return Ok(FAILED);
    }
    println!(
        "study {}: {}",
        plan.display(),
        crate::event_output::efficiency_line(measuring, ms(wall))
    );
    let trials = trial_timings(&dir.path().join("results").join("store").join("records"));
    if !trials.is_empty() {
        let med = |f: &dyn Fn(&serde_json::Value) -> Option<f64>| {
            let mut v: Vec<f64> = trials.iter().filter_map(f).collect();
            v.sort_by(f64::total_cmp);
            if v.is_empty() {
                f64::NAN
            } else {
                v[v.len() / 2]
            }
        };
        println!(
            "  per trial (median of {}): setup {:.0} ms around {:.0} ms measuring — restore {:.0} ms, restore and start until it answers {:.0} ms, stop {:.0} ms",
            trials.len(),
            med(&|t| t["setup_ms"].as_f64()),
            med(&|t| t["measuring_ms"].as_f64()),
            med(&|t| t["restore"]["ms"].as_f64()),
            med(&|t| t["start_ms"].as_f64()),
            med(&|t| t["stop_ms"].as_f64()),
        );
    }
    Ok(OK)
}

/// The `timings` of every trial record in a store's `records` directory.
fn trial_timings(records: &Path) -> Vec<serde_json::Value> {
    let Ok(dir) = std::fs::read_dir(records) else {
        return Vec::new();
    };
    dir.filter_map(|e| {
        let text = std::fs::read_to_string(e.ok()?.path()).ok()?;
        let r: serde_json::Value = serde_json::from_str(&text).ok()?;
        (r["kind"] == "trial").then(|| r["extra"]["timings"].clone())
    })
    .collect()
}

/// `cairn bench --slurm PLAN`: build PLAN's images and datasets once (scratch store), then
/// measure every trial here (`--fresh kind:trial`) and again on Slurm, and print the wall
/// time per trial of each with the Slurm path's overhead split into submission → start,
/// noticing the end and gathering.
pub fn bench_slurm(plan: &Path, partition: Option<&str>) -> Result<i32, Exit> {
    let exe = std::env::current_exe().map_err(crate::context::fail(FAILED))?;
    let plan = std::path::absolute(plan).map_err(crate::context::fail(FAILED))?;
    let dir = tempfile::tempdir().map_err(crate::context::fail(FAILED))?;
    let go = |args: &[&str]| {
        run_plan(&exe, dir.path(), &plan, args).map_err(crate::context::fail(FAILED))
    };
    go(&["--only", "kind:dataset"])?;
    let (local_wall, local, _) = go(&["--fresh", "kind:trial"])?;
    let mut args = vec!["--fresh", "kind:trial", "--on", "slurm"];
    if let Some(p) = partition {
        args.extend(["--partition", p]);
    }
    let (slurm_wall, slurm, overhead) = go(&args)?;
    let trials = local["ran"].as_u64().unwrap_or(0).max(1) as f64;
    let per = |w: Duration| ms(w) / trials;
    println!(
        "{} trial(s) of {}: local run {:.0} ms wall ({:.0} ms per trial); on Slurm{} {:.0} ms wall ({:.0} ms per trial): {:+.0} ms per trial",
        trials,
        plan.display(),
        ms(local_wall),
        per(local_wall),
        partition.map_or(String::new(), |p| format!(" partition `{p}`")),
        ms(slurm_wall),
        per(slurm_wall),
        per(slurm_wall) - per(local_wall)
    );
    if slurm["ran"] != local["ran"] {
        eprintln!("warning: the runs measured different counts: {local} / {slurm}");
    }
    if let Some(o) = overhead {
        let p = &o["per_trial_ms"];
        let ms = |name: &str| p[name].as_f64().unwrap_or(f64::NAN);
        let parts = &crate::fleet::COST_PARTS[..crate::fleet::COST_PARTS.len() - 1];
        let explained: f64 = parts.iter().map(|(name, _, _)| ms(name)).sum();
        let node = o["node_ms_per_trial"].as_f64().unwrap_or(f64::NAN);
        let words: Vec<String> = parts
            .iter()
            .map(|(name, words, _)| format!("{words} {:.0} ms", ms(name)))
            .collect();
        println!(
            "  Slurm path per trial ({} block(s)): {}; the rest {:+.0} ms (the trials themselves {node:.0} ms each on their node against {:.0} ms per trial here, and the scheduler between blocks)",
            o["blocks"],
            words.join(", "),
            per(slurm_wall) - per(local_wall) - explained,
            per(local_wall),
        );
    }
    Ok(OK)
}
