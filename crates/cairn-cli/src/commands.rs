//! One function per subcommand, each a thin call into the library crates.

use std::collections::HashSet;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use cairn_engine::{Reason, RunOptions, Status, StepStatus};
use cairn_graph::{StepGraph, StepKind};
use serde_json::json;

use crate::args::{Cli, Command, GraphFormat};
use crate::context::{self, Exit};
use crate::{report, BAD_INPUT, FAILED, INTERRUPTED, OK};

pub fn dispatch(cli: Cli) -> i32 {
    let r = match &cli.command {
        Command::Check { plan } => check(plan),
        Command::Plan { plan, fresh } => plan_cmd(&cli, plan, fresh),
        Command::Explain { plan, step } => explain(&cli, plan, step),
        Command::Run {
            plan,
            only,
            fresh,
            jobs,
            keep_going,
            seed,
            mirror,
        } => run(
            &cli,
            plan,
            RunArgs {
                only,
                fresh,
                jobs: *jobs,
                keep_going: *keep_going,
                seed: *seed,
                mirror: mirror.clone(),
            },
        ),
        Command::Results { plan, csv } => crate::results::results(&cli, plan, *csv),
        Command::Graph { plan, format } => graph(plan, *format),
        Command::Cat { plan, step, output } => cat(&cli, plan, step, output.as_deref()),
        Command::Fmt { plans, check } => fmt(plans, *check),
        Command::Verify => verify(&cli),
        Command::Clean => clean(&cli),
        Command::Gc { plans, apply } => gc(&cli, plans, *apply),
        Command::Bench { steps, jobs } => crate::bench::bench(&cli, steps, *jobs),
    };
    match r {
        Ok(code) => code,
        Err(Exit(code)) => code,
    }
}

fn check(path: &Path) -> Result<i32, Exit> {
    let (plan, graph) = context::load_graph(path)?;
    crate::preflight::check(&plan, &graph)?;
    println!(
        "{}: study `{}` is valid — {} steps",
        path.display(),
        plan.study.name,
        graph.steps.len()
    );
    for kind in [
        StepKind::Image,
        StepKind::Dataset,
        StepKind::Trial,
        StepKind::Analysis,
        StepKind::Claim,
        StepKind::Report,
        StepKind::Command,
    ] {
        let n = graph.count(kind);
        if n > 0 {
            println!("  {:<9} {n}", kind.as_str());
        }
    }
    Ok(OK)
}

fn short(key: &Option<String>) -> &str {
    key.as_deref().map_or("-", |k| &k[..12])
}

fn value(v: &Option<serde_json::Value>) -> String {
    match v {
        None => "(absent)".into(),
        Some(serde_json::Value::String(s)) => format!("{s:?}"),
        Some(v) => v.to_string(),
    }
}

fn digest(d: &Option<String>) -> &str {
    d.as_deref().map_or("(none)", |d| &d[..12.min(d.len())])
}

pub fn describe(r: &Reason) -> String {
    match r {
        Reason::New => "new: never run before".into(),
        Reason::Fresh => "--fresh: re-running on purpose".into(),
        Reason::BlobMissing { digest } => {
            format!(
                "a recorded output blob is missing or damaged ({})",
                &digest[..12]
            )
        }
        Reason::CorruptRecord { error } => format!("its record is damaged: {error}"),
        Reason::Changed { path, old, new } => {
            format!("{path} changed: {} → {}", value(old), value(new))
        }
        Reason::InputChanged {
            mount,
            from,
            old,
            new,
        } => format!(
            "input `{mount}` (from {from}) changed: {} → {}",
            digest(old),
            &new[..12]
        ),
        Reason::InputPending { mount, from } => {
            format!("waits on input `{mount}`: {from} runs first")
        }
        Reason::InputBlocked { from, .. } => format!("input {from} is blocked"),
        Reason::PreviousGone { key } => {
            format!(
                "its previous record ({}) is gone, e.g. removed by gc",
                &key[..12]
            )
        }
        Reason::NotExecutable { kind } => format!(
            "`{kind}` steps have no executor yet (containers, workloads and analyses come later)"
        ),
        Reason::ImageMissing { why } => format!("its image must be rebuilt: {why}"),
        Reason::SnapshotMissing { why } => format!("its snapshot must be made again: {why}"),
        Reason::DockerUnavailable { error } => format!("blocked: {error}"),
        Reason::PackagesChanged { changes } => package_changes(changes),
    }
}

/// `packages changed since the previous build (…): +a 1, -b 2, c 1 → 2` (at most 12 listed).
fn package_changes(c: &cairn_engine::image_step::PackageChanges) -> String {
    let mut items: Vec<String> = Vec::new();
    items.extend(
        c.added
            .iter()
            .map(|p| format!("+{} {}", p.package, p.version)),
    );
    items.extend(
        c.removed
            .iter()
            .map(|p| format!("-{} {}", p.package, p.version)),
    );
    items.extend(
        c.changed
            .iter()
            .map(|p| format!("{} {} → {}", p.package, p.old, p.new)),
    );
    let more = items.len().saturating_sub(12);
    items.truncate(12);
    let mut s = format!(
        "packages changed since the previous build ({}): {}",
        &c.previous_key[..12.min(c.previous_key.len())],
        items.join(", ")
    );
    if more > 0 {
        s.push_str(&format!(" … and {more} more"));
    }
    s
}

fn status_word(s: Status) -> &'static str {
    match s {
        Status::Cached => "cached",
        Status::Run => "run",
        Status::Pending => "pending",
        Status::Blocked => "blocked",
    }
}

fn print_status(s: &StepStatus, indent: usize, verbose: u8) {
    let pad = "  ".repeat(indent);
    println!(
        "{pad}{:<8} {:<40} {}",
        status_word(s.status),
        s.address,
        short(&s.key)
    );
    for r in &s.reasons {
        println!("{pad}         · {}", describe(r));
    }
    if verbose >= 2 {
        if let Some(k) = &s.key_json {
            println!("{pad}         key {}", k);
        }
    }
}

fn plan_cmd(cli: &Cli, path: &Path, fresh: &[String]) -> Result<i32, Exit> {
    let cache = context::cache_dir(cli.cache.as_deref());
    let (plan, graph) = context::load_graph_cached(path, Some(&cache))?;
    crate::preflight::check(&plan, &graph)?;
    let fresh = context::matching_selectors(&graph, path, fresh)?;
    let store = context::open_store(&cli.results)?;
    let all = cairn_engine::statuses(
        &graph,
        &store,
        &cache,
        &context::fingerprint(&graph),
        &fresh,
        cli.verbose >= 2,
    );
    if cli.json {
        for s in &all {
            println!("{}", serde_json::to_string(s).expect("serialises"));
        }
        return Ok(OK);
    }
    let mut counts = [0usize; 4];
    for &id in &graph.order {
        let s = &all[id];
        counts[s.status as usize] += 1;
        if s.status != Status::Cached || cli.verbose > 0 {
            print_status(s, 0, cli.verbose);
        }
    }
    println!(
        "{} steps: {} cached, {} will run, {} pending, {} blocked",
        all.len(),
        counts[0],
        counts[1],
        counts[2],
        counts[3]
    );
    Ok(OK)
}

fn explain(cli: &Cli, path: &Path, step: &str) -> Result<i32, Exit> {
    let (_plan, graph) = context::load_graph(path)?;
    let sel = context::matching_selectors(&graph, path, &[step.to_string()])?.remove(0);
    let store = context::open_store(&cli.results)?;
    let cache = context::cache_dir(cli.cache.as_deref());
    let all = cairn_engine::statuses(
        &graph,
        &store,
        &cache,
        &context::fingerprint(&graph),
        &[],
        true,
    );
    for (depth, id) in cairn_engine::explain(&graph, &all, &sel) {
        if cli.json {
            println!("{}", json!({"depth": depth, "status": &all[id]}));
        } else {
            print_status(&all[id], depth, cli.verbose);
        }
    }
    Ok(OK)
}

/// The options of `cairn run`.
struct RunArgs<'a> {
    only: &'a [String],
    fresh: &'a [String],
    jobs: usize,
    keep_going: bool,
    seed: Option<u64>,
    mirror: Option<String>,
}

fn run(cli: &Cli, path: &Path, a: RunArgs<'_>) -> Result<i32, Exit> {
    let cache = context::cache_dir(cli.cache.as_deref());
    let (plan, graph) = context::load_graph_cached(path, Some(&cache))?;
    crate::preflight::check(&plan, &graph)?;
    let opts = RunOptions {
        jobs: a.jobs,
        keep_going: a.keep_going,
        only: context::matching_selectors(&graph, path, a.only)?,
        fresh: context::matching_selectors(&graph, path, a.fresh)?,
        work_root: cache.join("work"),
        cache_root: cache.clone(),
        mirror: a.mirror,
        seed: a.seed,
    };
    let store = context::open_store(&cli.results)?;
    let _lock = context::lock_store(&store)?;
    context::clean_stale_containers(&graph);
    if let Err(e) = cairn_exec::process::prepare_work_root(&opts.work_root) {
        eprintln!("error: cannot create {}: {e}", opts.work_root.display());
        return Err(Exit(BAD_INPUT));
    }
    // Ctrl-C: end children, let the engine stop cleanly; nothing half-done is recorded.
    let _ = ctrlc::set_handler(|| {
        cairn_exec::cancel::cancel_all(Duration::from_secs(5));
    });
    let mut reporter = report::pick(cli.json, cli.verbose);
    let summary = cairn_engine::run(
        &graph,
        &store,
        &context::fingerprint(&graph),
        &opts,
        reporter.as_mut(),
    );
    Ok(if summary.cancelled {
        INTERRUPTED
    } else if summary.failed > 0 {
        FAILED
    } else {
        OK
    })
}

fn cat(cli: &Cli, path: &Path, step: &str, output: Option<&str>) -> Result<i32, Exit> {
    let (_plan, graph) = context::load_graph(path)?;
    let sel = context::selectors(&[step.to_string()])?.remove(0);
    let matching: Vec<_> = graph.steps.iter().filter(|s| sel.matches(s)).collect();
    let [target] = matching.as_slice() else {
        eprintln!(
            "error: `{step}` matches {} steps; name one address (see `cairn plan -v {}`)",
            matching.len(),
            path.display()
        );
        return Err(Exit(BAD_INPUT));
    };
    let store = context::open_store(&cli.results)?;
    let cache = context::cache_dir(cli.cache.as_deref());
    let all = cairn_engine::statuses(
        &graph,
        &store,
        &cache,
        &context::fingerprint(&graph),
        &[],
        false,
    );
    let st = &all[target.id];
    let record = match (&st.status, &st.key) {
        (Status::Cached, Some(k)) => store.get_record(k).ok().flatten(),
        _ => None,
    };
    let Some(record) = record else {
        eprintln!(
            "error: {} has no result for its current definition yet (status: {}); run `cairn run {}`",
            target.address,
            status_word(st.status),
            path.display()
        );
        return Err(Exit(FAILED));
    };
    let blob = match output {
        Some(log) if log.starts_with('@') => record.logs.get(&log[1..]),
        Some(o) => record.outputs.get(o),
        None if record.outputs.len() == 1 => record.outputs.values().next(),
        None => None,
    };
    let Some(blob) = blob else {
        let names: Vec<&str> = record.outputs.keys().map(String::as_str).collect();
        eprintln!(
            "error: name one output of {}: {} (or @stdout, @stderr)",
            target.address,
            names.join(", ")
        );
        return Err(Exit(BAD_INPUT));
    };
    let bytes = store.read_blob(blob).map_err(context::fail(FAILED))?;
    let _ = std::io::stdout().write_all(&bytes);
    Ok(OK)
}

fn graph(path: &Path, format: GraphFormat) -> Result<i32, Exit> {
    let (_plan, graph) = context::load_graph(path)?;
    let text = match format {
        GraphFormat::Dot => cairn_graph::render::dot(&graph),
        GraphFormat::Mermaid => cairn_graph::render::mermaid(&graph),
    };
    print!("{text}");
    Ok(OK)
}

fn fmt(paths: &[PathBuf], check: bool) -> Result<i32, Exit> {
    let mut unformatted = 0;
    for p in paths {
        let text = std::fs::read_to_string(p).map_err(|e| {
            eprintln!("error: cannot read {}: {e}", p.display());
            Exit(BAD_INPUT)
        })?;
        let formatted = cairn_plan::format_text(&text).map_err(|e| {
            eprint!("{}", cairn_plan::render(&e));
            Exit(BAD_INPUT)
        })?;
        if formatted == text {
            continue;
        }
        unformatted += 1;
        if check {
            println!("{} is not formatted", p.display());
        } else {
            let tmp = p.with_extension("kdl.cairn-fmt");
            std::fs::write(&tmp, &formatted)
                .and_then(|_| std::fs::rename(&tmp, p))
                .map_err(|e| {
                    eprintln!("error: cannot write {}: {e}", p.display());
                    Exit(FAILED)
                })?;
            println!("formatted {}", p.display());
        }
    }
    Ok(if check && unformatted > 0 { FAILED } else { OK })
}

fn clean(cli: &Cli) -> Result<i32, Exit> {
    let docker = cairn_exec::docker::Docker::connect().map_err(context::fail(FAILED))?;
    let rep = cairn_exec::docker::cleanup::clean_all(&docker).map_err(context::fail(FAILED))?;
    if cli.json {
        println!(
            "{}",
            json!({"containers": rep.containers, "networks": rep.networks})
        );
    } else if rep.is_empty() {
        println!("nothing to clean: no cairn containers or networks");
    } else {
        for c in &rep.containers {
            println!("removed container {c}");
        }
        for n in &rep.networks {
            println!("removed network {n}");
        }
    }
    Ok(OK)
}

fn verify(cli: &Cli) -> Result<i32, Exit> {
    let store = context::open_store(&cli.results)?;
    let _lock = context::lock_store(&store)?;
    let rep = store.verify().map_err(context::fail(FAILED))?;
    if cli.json {
        println!("{}", verify_json(&rep));
    } else {
        print!("{}", verify_text(&rep));
    }
    Ok(if rep.is_clean() { OK } else { FAILED })
}

fn gc(cli: &Cli, plans: &[PathBuf], apply: bool) -> Result<i32, Exit> {
    let plans: Vec<PathBuf> = if plans.is_empty() {
        let mut v: Vec<PathBuf> = std::fs::read_dir("plans")
            .map(|d| {
                d.filter_map(|e| e.ok().map(|e| e.path()))
                    .filter(|p| p.extension().is_some_and(|x| x == "kdl"))
                    .collect()
            })
            .unwrap_or_default();
        v.sort();
        v
    } else {
        plans.to_vec()
    };
    let store = context::open_store(&cli.results)?;
    let _lock = context::lock_store(&store)?;
    let cache = context::cache_dir(cli.cache.as_deref());
    let mut keep: HashSet<String> = HashSet::new();
    for p in &plans {
        let (_plan, graph) = context::load_graph(p)?;
        let fp = context::fingerprint(&graph);
        keep.extend(referenced_keys(&graph, &store, &cache, &fp));
    }
    let rep = store.gc(&keep, apply).map_err(context::fail(FAILED))?;
    if cli.json {
        println!(
            "{}",
            json!({"applied": rep.applied, "records_removed": rep.records_removed,
                   "blobs_removed": rep.blobs_removed, "bytes": rep.bytes()})
        );
    } else {
        println!(
            "{} {} records and {} blobs ({} bytes)",
            if apply { "removed" } else { "would remove" },
            rep.records_removed.len(),
            rep.blobs_removed.len(),
            rep.bytes()
        );
        if !apply {
            println!("(dry run: nothing removed; pass --apply to remove)");
        }
    }
    let _ = std::io::stdout().flush();
    Ok(OK)
}

/// Keys a plan references: each step's current key where it is known, plus the last
/// recorded key of every step (so a step whose input is about to change keeps its last
/// result until it has a new one).
fn referenced_keys(
    graph: &StepGraph,
    store: &cairn_store::Store,
    cache: &Path,
    fp: &cairn_graph::Fingerprint,
) -> Vec<String> {
    let mut out: Vec<String> = cairn_engine::statuses(graph, store, cache, fp, &[], false)
        .into_iter()
        .filter_map(|s| s.key)
        .collect();
    let remembered = store.names(&graph.study).unwrap_or_default();
    for s in &graph.steps {
        if let Some(k) = remembered.get(&s.address) {
            out.push(k.clone());
        }
    }
    out
}

fn verify_json(rep: &cairn_store::VerifyReport) -> serde_json::Value {
    json!({
        "clean": rep.is_clean(),
        "blobs_checked": rep.blobs_checked,
        "records_checked": rep.records_checked,
        "corrupt_blobs": rep.corrupt_blobs.iter().map(|b| json!({
            "digest": b.digest, "actual": b.actual, "quarantined_to": b.quarantined_to,
        })).collect::<Vec<_>>(),
        "missing_blobs": rep.missing_blobs.iter().map(|m| json!({"record": m.key, "digest": m.digest})).collect::<Vec<_>>(),
        "corrupt_records": rep.corrupt_records.iter().map(|r| json!({"record": r.key, "reason": r.reason})).collect::<Vec<_>>(),
        "stray_tmp_files": rep.stray_tmp_files,
    })
}

fn verify_text(rep: &cairn_store::VerifyReport) -> String {
    let mut s = format!(
        "checked {} blobs and {} records\n",
        rep.blobs_checked, rep.records_checked
    );
    for b in &rep.corrupt_blobs {
        s += &format!(
            "corrupt blob {}: content hashes to {}; moved to {}\n",
            b.digest,
            b.actual,
            b.quarantined_to.display()
        );
    }
    for m in &rep.missing_blobs {
        s += &format!(
            "record {} names blob {}, which is missing or damaged\n",
            m.key, m.digest
        );
    }
    for r in &rep.corrupt_records {
        s += &format!("record {} is damaged: {}\n", r.key, r.reason);
    }
    for t in &rep.stray_tmp_files {
        s += &format!("stray temp file {} (removed at next open)\n", t.display());
    }
    s += if rep.is_clean() {
        "store is clean\n"
    } else {
        "store has damage: the affected steps re-run at the next `cairn run`\n"
    };
    s
}
