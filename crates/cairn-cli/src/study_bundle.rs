//! `cairn bundle`, `cairn verify BUNDLE` and `cairn reproduce`: pack a study, check a
//! bundle (a `.tar.zst` or an unpacked folder), re-run a verified bundle on this machine
//! and compare what it finds with what was published (`crate::bundle::findings`).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::Arc;
use std::time::Instant;

use cairn_graph::StepKind;
use serde_json::json;

use crate::args::Cli;
use crate::bundle::check::{verify_dir, Verified};
use crate::bundle::format::Manifest;
use crate::bundle::unpack::{manifest_of, unpack, Refused};
use crate::context::{self, Exit};
use crate::{BAD_INPUT, FAILED, INTERRUPTED, OK};

/// `cairn bundle PLAN -o OUT`.
pub fn bundle(cli: &Cli, path: &Path, out: &Path, measured_on: Option<&str>) -> Result<i32, Exit> {
    let t0 = Instant::now();
    let cache = context::cache_dir(cli.cache.as_deref());
    let (plan, graph) = context::load_graph_cached(path, Some(&cache))?;
    let store = context::open_store(&cli.results)?;
    let _lock = context::lock_store(&store)?;
    let machine = context::Machine::new(cache);
    let reading = crate::measured_on::reading_classes(&machine, &graph, &store, measured_on)?;
    let report_dir = cli.results.join(&graph.study);
    let packed = crate::bundle::pack::pack(path, &plan, &graph, &store, &reading, &report_dir, out)
        .map_err(context::fail(FAILED))?;
    let m = &packed.manifest;
    if cli.json {
        println!(
            "{}",
            json!({"bundle": out, "files": m.files.len(), "bytes": m.total_bytes,
                   "archive_bytes": packed.archive_bytes, "host_steps": m.host_steps,
                   "seconds": t0.elapsed().as_secs_f64()})
        );
    } else {
        println!(
            "wrote {}: {} files ({} bytes, {} compressed), {} steps, in {:.1} s",
            out.display(),
            m.files.len(),
            m.total_bytes,
            packed.archive_bytes,
            m.steps.len(),
            t0.elapsed().as_secs_f64()
        );
        if !m.host_steps.is_empty() {
            println!(
                "host steps (a reproducer runs them only with --allow-host-steps): {}",
                m.host_steps.join(", ")
            );
        }
    }
    Ok(OK)
}

/// Opens a bundle for checking: an unpacked folder as it is, an archive unpacked into
/// `scratch` first. Refusals are bad input.
fn open(target: &Path, scratch: &Path) -> Result<PathBuf, Exit> {
    if target.is_dir() {
        return Ok(target.to_path_buf());
    }
    unpack(target, scratch).map_err(|e| refusal(target, e))?;
    Ok(scratch.to_path_buf())
}

fn refusal(target: &Path, e: Refused) -> Exit {
    eprintln!("error: {}: {e}", target.display());
    Exit(match e {
        Refused::Unsafe(_) => BAD_INPUT,
        Refused::Io(_) => FAILED,
    })
}

fn check(target: &Path, dir: &Path) -> Result<Verified, Exit> {
    verify_dir(dir).map_err(|e| refusal(target, e))
}

fn print_verified(json: bool, target: &Path, v: &Verified) {
    if json {
        println!(
            "{}",
            json!({"bundle": target, "clean": v.is_clean(), "files_checked": v.files_checked,
                   "records_checked": v.records_checked,
                   "problems": v.problems.iter().map(|p| json!({"problem": p.what, "breaks": p.breaks})).collect::<Vec<_>>(),
                   "older_code": v.older_code.iter().map(|o| json!({"step": o.address, "made_by": o.made_by, "now": o.now})).collect::<Vec<_>>(),
                   "host_steps": v.host_steps})
        );
        return;
    }
    println!(
        "checked {} files and {} records of study {:?}",
        v.files_checked, v.records_checked, v.manifest.study
    );
    for p in &v.problems {
        println!("{}\n    breaks: {}", p.what, p.breaks);
    }
    if !v.older_code.is_empty() {
        // not damage: what another cairn (an earlier one, mostly) made, which a reproduction
        // makes again
        let steps: Vec<String> = v
            .older_code
            .iter()
            .map(|o| format!("{} ({}; this cairn has {})", o.address, o.made_by, o.now))
            .collect();
        println!(
            "made by another version of cairn's code, and chaining to the plan with it ({}): {}; `cairn reproduce` makes them with this version",
            steps.len(),
            steps.join(", ")
        );
    }
    if !v.host_steps.is_empty() {
        println!(
            "host steps (run on the host only with --allow-host-steps): {}",
            v.host_steps.join(", ")
        );
    }
    if v.is_clean() {
        println!("bundle is intact: every file matches, every record chains to the plan");
    } else {
        println!("bundle is damaged: {} problems", v.problems.len());
    }
}

/// `cairn verify BUNDLE`.
pub fn verify(cli: &Cli, target: &Path) -> Result<i32, Exit> {
    let scratch = tempfile::tempdir().map_err(context::fail(FAILED))?;
    let dir = open(target, scratch.path())?;
    let v = check(target, &dir)?;
    print_verified(cli.json, target, &v);
    Ok(if v.is_clean() { OK } else { FAILED })
}

/// `cairn reproduce BUNDLE [--into DIR] [--allow-host-steps] [--only STEP…]`: verify,
/// unpack, run every step here into `DIR/reproduced` (nothing published is reused: a fresh
/// store), render the report, and write what it found against what was published (effects,
/// claims, absolute cells: [`crate::bundle::findings`]) to `DIR/comparison.md` and `.json`.
/// With `--only`, only those steps run and the report waits; a `DIR` that already holds a
/// reproduction of this same bundle is continued, so a long study is reproduced in parts.
pub fn reproduce(
    cli: &Cli,
    target: &Path,
    into: Option<&Path>,
    allow_host_steps: bool,
    only: &[String],
) -> Result<i32, Exit> {
    let t0 = Instant::now();
    let dir = match into {
        Some(d) => d.to_path_buf(),
        None => {
            let stem = target
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_else(|| "study".into());
            let stem = stem.trim_end_matches(".zst").trim_end_matches(".tar");
            PathBuf::from(format!("{stem}-reproduced"))
        }
    };
    if target.is_dir() {
        eprintln!("error: reproduce takes a bundle archive (an unpacked folder is checked with `cairn verify`)");
        return Err(Exit(BAD_INPUT));
    }
    let published = dir.join("published");
    let continued = dir.exists()
        && std::fs::read_dir(&dir)
            .map(|mut d| d.next().is_some())
            .unwrap_or(true);
    if continued {
        earlier_reproduction_of(target, &dir)?;
        // stdout carries only JSON lines under --json
        let line = format!("continuing the reproduction in {}", dir.display());
        if cli.json {
            eprintln!("{line}");
        } else {
            println!("{line}");
        }
    } else {
        unpack(target, &published).map_err(|e| refusal(target, e))?;
    }
    // a continued reproduction's published folder is checked again: it may have changed
    let v = check(target, &published)?;
    print_verified(cli.json, target, &v);
    if !v.is_clean() {
        eprintln!("error: the bundle does not verify; nothing was run");
        return Ok(FAILED);
    }
    if !v.host_steps.is_empty() && !allow_host_steps {
        eprintln!(
            "error: the study has steps that run commands on this host: {}; read them in {} and pass --allow-host-steps to run them",
            v.host_steps.join(", "),
            v.plan.display()
        );
        return Err(Exit(BAD_INPUT));
    }
    let t_verified = t0.elapsed();
    let results = dir.join("reproduced");
    // the scale the study was published at, unless `--set` asks for another
    let mut settings = v.manifest.params.clone();
    settings.extend(context::plan_settings());
    let graph = crate::bundle::check::load_bundled_plan(&v.plan, &settings)
        .map_err(context::fail(FAILED))?;
    let exe = std::env::current_exe().map_err(context::fail(FAILED))?;
    let stop = StopPassedOn::install();
    let mut commands = vec!["run"];
    // the report needs every step: a reproduction in parts renders it at its last part
    if graph.count(StepKind::REPORT) > 0 && only.is_empty() {
        commands.push("report");
    }
    for command in commands {
        if stop.requested() {
            return Ok(INTERRUPTED);
        }
        let args = [command];
        let mut cmd = Command::new(&exe);
        cmd.arg("--results").arg(&results);
        if let Some(c) = &cli.cache {
            cmd.arg("--cache").arg(c);
        }
        cmd.args(args).arg(&v.plan);
        if command == "run" {
            for pattern in only {
                cmd.arg("--only").arg(pattern);
            }
        }
        for (name, value) in &settings {
            cmd.arg("--set").arg(format!("{name}={value}"));
        }
        if cli.json {
            // stdout carries only JSON lines: the run's and the report's progress go to stderr
            cmd.stdout(std::io::stderr());
        }
        let status = stop.wait_for(cmd).map_err(context::fail(FAILED))?;
        if stop.requested() {
            // the run stopped cleanly (130) or had just finished: nothing more is started
            return Ok(INTERRUPTED);
        }
        if !status.success() {
            eprintln!(
                "error: `cairn {}` of the bundled plan failed ({status})",
                args[0]
            );
            return Ok(status.code().unwrap_or(FAILED));
        }
    }
    let a = context::open_store(&published)?;
    let b = context::open_store(&results)?;
    let found = crate::bundle::findings::findings(&graph, &a, &b);
    let mut md = crate::bundle::findings::markdown(&found);
    if !only.is_empty() {
        md = format!("{}\n\n{md}", partial_line(only, &dir));
    }
    std::fs::write(dir.join("comparison.md"), &md).map_err(context::fail(FAILED))?;
    let json = serde_json::to_vec_pretty(&found).expect("serialises");
    std::fs::write(dir.join("comparison.json"), &json).map_err(context::fail(FAILED))?;
    if cli.json {
        println!("{}", serde_json::to_string(&found).expect("serialises"));
        return Ok(OK);
    }
    println!("{md}");
    println!(
        "wrote {} and comparison.json (verified in {:.1} s, reproduced and compared in {:.1} s)",
        dir.join("comparison.md").display(),
        t_verified.as_secs_f64(),
        (t0.elapsed() - t_verified).as_secs_f64()
    );
    Ok(OK)
}

/// A stop signal to `cairn reproduce`, passed on to the `cairn run` (or `report`) it waits
/// for. Ctrl-C reaches both processes, but `timeout`'s SIGTERM, a CI cancellation or a closed
/// terminal's SIGHUP may reach this one alone: without this it would die at once and leave
/// its run measuring, and even under Ctrl-C it would return to the shell while the run still
/// stopped its servers. So the signal is sent on as SIGTERM (which a run treats as Ctrl-C),
/// the run is waited for, and nothing is started after it: the command exits 130 once its run
/// has cleaned up.
struct StopPassedOn {
    /// The running child's pid, 0 between children.
    child: Arc<AtomicI32>,
    requested: Arc<AtomicBool>,
}

impl StopPassedOn {
    fn install() -> StopPassedOn {
        let stop = StopPassedOn {
            child: Arc::new(AtomicI32::new(0)),
            requested: Arc::new(AtomicBool::new(false)),
        };
        let (child, requested) = (stop.child.clone(), stop.requested.clone());
        let _ = ctrlc::set_handler(move || {
            requested.store(true, Ordering::SeqCst);
            signal_child(child.load(Ordering::SeqCst));
        });
        stop
    }

    fn requested(&self) -> bool {
        self.requested.load(Ordering::SeqCst)
    }

    /// Run `cmd` to its end, passing a stop signal on to it meanwhile.
    fn wait_for(&self, mut cmd: Command) -> std::io::Result<std::process::ExitStatus> {
        let mut child = cmd.spawn()?;
        let pid = i32::try_from(child.id()).unwrap_or(0);
        self.child.store(pid, Ordering::SeqCst);
        // a signal that arrived between the check before the spawn and the store above
        if self.requested() {
            signal_child(pid);
        }
        let status = child.wait();
        // forgotten once reaped (a signal in the instant between is sent to a pid no longer
        // ours only if the system reused it at once)
        self.child.store(0, Ordering::SeqCst);
        status
    }
}

fn signal_child(pid: i32) {
    if pid > 0 {
        // SAFETY: kill(2) on our own child's pid; no memory is touched.
        unsafe {
            libc::kill(pid, libc::SIGTERM);
        }
    }
}

/// Refuses a non-empty `dir` unless it holds an earlier reproduction of `target`: its
/// `published` folder carries the archive's own manifest. Nothing in `dir` is overwritten.
fn earlier_reproduction_of(target: &Path, dir: &Path) -> Result<(), Exit> {
    let other = || {
        eprintln!(
            "error: {} exists and is not a reproduction of {}; give another folder with --into",
            dir.display(),
            target.display()
        );
        Exit(BAD_INPUT)
    };
    let manifest = dir.join("published").join(crate::bundle::format::MANIFEST);
    let earlier: Manifest = std::fs::read(manifest)
        .ok()
        .and_then(|bytes| serde_json::from_slice(&bytes).ok())
        .ok_or_else(other)?;
    let this = manifest_of(target).map_err(|e| refusal(target, e))?;
    if earlier != this {
        return Err(other());
    }
    Ok(())
}

/// The first line of a partial reproduction's comparison: what ran, and how to go on.
fn partial_line(only: &[String], dir: &Path) -> String {
    let patterns: Vec<String> = only.iter().map(|p| format!("`{p}`")).collect();
    format!(
        "**A reproduction in parts**: this part ran only {} and what they need, beside any \
         earlier part in this folder; effects and claims not run yet read as not reproduced. \
         Another `cairn reproduce --into {}` of the same bundle continues it.",
        patterns.join(", "),
        dir.display()
    )
}

/// One side of `cairn compare`: its store (kept open with its scratch folder) and plan.
struct Side {
    store: cairn_store::Store,
    plan: Option<PathBuf>,
    _scratch: Option<tempfile::TempDir>,
}

fn side(target: &Path) -> Result<Side, Exit> {
    let is_results = target.join("store").join("records").is_dir()
        && !target.join(crate::bundle::format::MANIFEST).is_file();
    if is_results {
        return Ok(Side {
            store: context::open_store(target)?,
            plan: None,
            _scratch: None,
        });
    }
    let scratch = tempfile::tempdir().map_err(context::fail(FAILED))?;
    let dir = open(target, scratch.path())?;
    let v = check(target, &dir)?;
    if !v.is_clean() {
        print_verified(false, target, &v);
        eprintln!("error: {} does not verify", target.display());
        return Err(Exit(FAILED));
    }
    Ok(Side {
        store: context::open_store(&dir)?,
        plan: Some(v.plan),
        _scratch: Some(scratch),
    })
}

/// `cairn compare A [B]`: two bundles or results directories (B defaults to A: two
/// fingerprints in one store).
pub fn compare(
    cli: &Cli,
    a: &Path,
    b: Option<&Path>,
    plan: Option<&Path>,
    fingerprint_a: Option<&str>,
    fingerprint_b: Option<&str>,
) -> Result<i32, Exit> {
    let sa = side(a)?;
    let sb = match b {
        Some(b) => side(b)?,
        None => side(a)?,
    };
    let plan_path = plan
        .map(Path::to_path_buf)
        .or_else(|| sa.plan.clone())
        .or_else(|| sb.plan.clone())
        .ok_or_else(|| {
            eprintln!("error: results directories bring no plan: give one with --plan");
            Exit(BAD_INPUT)
        })?;
    let graph = crate::bundle::check::load_bundled_plan(&plan_path, &context::plan_settings())
        .map_err(context::fail(BAD_INPUT))?;
    use crate::measured_on::side_class;
    let fa = side_class("--measured-on-a", fingerprint_a, &sa.store, "A", &graph)?;
    let fb = side_class("--measured-on-b", fingerprint_b, &sb.store, "B", &graph)?;
    use crate::comparison::SideClasses;
    let classes = |fp: Option<serde_json::Value>| fp.map_or(SideClasses::Latest, SideClasses::One);
    let cmp = crate::comparison::compare(&graph, &sa.store, &sb.store, &classes(fa), &classes(fb));
    if cli.json {
        println!("{}", serde_json::to_string(&cmp).expect("serialises"));
    } else {
        print!("{}", crate::comparison::markdown(&cmp, "A", "B"));
    }
    Ok(OK)
}
