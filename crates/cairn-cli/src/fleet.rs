//! The CLI's side of fleet execution (`--on slurm`): the Slurm fleet a run hands its
//! measurements to, `cairn worker` (what a job runs on its node), the overhead line after a
//! run, what `cairn plan --on slurm` adds, and the jobs `cairn clean` cancels.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use cairn_engine::budget::{estimate, human, recorded_durations};
use cairn_engine::fleet::block_key;
use cairn_engine::{Status, StepStatus};
use cairn_exec::slurm::Slurm;
use cairn_fleet::job::{self as fleet_job, JobFile, NodeFacts};
use cairn_fleet::slurm::{BlockCost, SlurmFleet};
use cairn_graph::StepGraph;
use cairn_store::Store;

use crate::args::{Cli, OnArgs};
use crate::context::{self, Exit};
use crate::{BAD_INPUT, FAILED, INTERRUPTED, OK};

/// A block's key ([`block_key`]): declaring node, pass, matrix point.
type BlockKey = (String, u32, String);

/// The Slurm fleet for `cairn run PLAN --on slurm`: refused (exit 2) when Slurm does not
/// answer or the partition has no usable node.
pub fn slurm_fleet(
    cli: &Cli,
    plan: &Path,
    on: &OnArgs,
    spool: Option<&Path>,
    node_retries: u32,
) -> Result<SlurmFleet, Exit> {
    let abs = |p: &Path| std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf());
    let spool = spool.map_or_else(|| cli.results.join("slurm-spool"), Path::to_path_buf);
    std::fs::create_dir_all(&spool).map_err(|e| {
        eprintln!("error: cannot create the spool {}: {e}", spool.display());
        Exit(BAD_INPUT)
    })?;
    let cairn = std::env::current_exe().map_err(context::fail(BAD_INPUT))?;
    let mut fleet = SlurmFleet::new(
        Slurm::new(on.partition.clone()),
        cairn,
        abs(plan),
        abs(&spool),
        node_retries,
    )
    .map_err(|e| {
        eprintln!("error: cannot run on Slurm: {e}");
        Exit(BAD_INPUT)
    })?;
    fleet.params = context::plan_settings();
    Ok(fleet)
}

/// One part of a block's cost: its JSON name, words for a person, and its field.
pub(crate) type CostPart = (&'static str, &'static str, fn(&BlockCost) -> f64);

/// The parts of a block's cost beyond its trials, in the order they happen; the last is
/// the sum of the first four.
pub(crate) const COST_PARTS: [CostPart; 8] = [
    ("write", "writing the job", |c| c.write_ms),
    ("sbatch", "sbatch", |c| c.sbatch_ms),
    ("slurm_start", "Slurm starting the job", |c| {
        c.slurm_start_ms
    }),
    ("worker_start", "the worker's start", |c| c.worker_start_ms),
    ("worker_between", "the worker between trials", |c| {
        c.worker_between_ms
    }),
    ("notice", "noticing the end", |c| c.notice_ms),
    ("gather", "gathering", |c| c.gather_ms),
    ("submit_to_start", "(sbatch to ready)", |c| {
        c.submit_to_start_ms
    }),
];

/// After a run on Slurm: what the engine cost per trial beyond the trials themselves.
pub fn print_costs(cli: &Cli, fleet: &SlurmFleet) {
    let costs = fleet.costs();
    if costs.is_empty() {
        return;
    }
    let trials: usize = costs.iter().map(|c| c.trials).sum();
    let per_trial = |f: fn(&BlockCost) -> f64| {
        costs.iter().map(f).filter(|x| x.is_finite()).sum::<f64>() / trials.max(1) as f64
    };
    let node = per_trial(|c| c.node_ms);
    if cli.json {
        let parts: serde_json::Map<String, serde_json::Value> = COST_PARTS
            .iter()
            .map(|(name, _, f)| (name.to_string(), serde_json::json!(per_trial(*f))))
            .collect();
        println!(
            "{}",
            serde_json::json!({"slurm_overhead": {
                "blocks": costs.len(), "trials": trials,
                "per_trial_ms": parts,
                "node_ms_per_trial": node, "blocks_detail": costs,
            }})
        );
    } else {
        let parts: Vec<String> = COST_PARTS
            .iter()
            .take(COST_PARTS.len() - 1)
            .map(|(_, words, f)| format!("{words} {:.0} ms", per_trial(*f)))
            .collect();
        eprintln!(
            "slurm: {} block(s), {trials} trial(s); overhead per trial: {} (the trials themselves: {node:.0} ms each on their node)",
            costs.len(),
            parts.join(", "),
        );
    }
}

/// `cairn worker DIR`: perform the block in DIR on this node. Exit 0 when every step's
/// outcome is written (failed steps included), 130 when cancelled, 1 otherwise.
pub fn worker(dir: &Path, process_started: std::time::SystemTime) -> Result<i32, Exit> {
    let cancel = crate::commands::install_stop_handler();
    let job: JobFile =
        fleet_job::read(&dir.join(fleet_job::JOB)).map_err(context::fail(BAD_INPUT))?;
    // the node reads the plan with the values the run was submitted with
    context::set_plan_settings(job.params.clone());
    let (_plan, graph) = context::load_graph(&job.plan)?;
    let store = Store::open(dir).map_err(context::fail(FAILED))?;
    // the shipped snapshots are the worker's cache, at the path this node sees the spool
    let shipped = std::path::absolute(fleet_job::lexical(&dir.join(&job.shipped)))
        .map_err(context::fail(FAILED))?;
    let machine = context::Machine::with_cancel(shipped, cancel.clone());
    let node = NodeFacts {
        name: std::env::var("SLURMD_NODENAME").unwrap_or_else(|_| {
            std::fs::read_to_string("/proc/sys/kernel/hostname")
                .map(|h| h.trim().to_string())
                .unwrap_or_else(|_| "unknown".into())
        }),
        fingerprint: machine.fingerprint(&graph),
        job: std::env::var("SLURM_JOB_ID").ok(),
    };
    let env = machine.env(&graph, &store, &job.fingerprint);
    match fleet_job::work(&env, &graph, dir, &node, process_started) {
        Ok(()) => Ok(OK),
        Err(_) if cancel.is_cancelled() => Ok(INTERRUPTED),
        Err(e) => {
            eprintln!("error: {e}");
            Ok(FAILED)
        }
    }
}

/// What `cairn plan --on slurm` adds: the nodes, the blocks per pass and the wall time with
/// the nodes available (each pass's blocks spread over the nodes, longest first).
pub fn plan_lines(
    graph: &StepGraph,
    statuses: &[StepStatus],
    store: &Store,
    on: &OnArgs,
) -> Result<(), Exit> {
    let slurm = Slurm::new(on.partition.clone());
    let nodes = slurm.nodes().map_err(|e| {
        eprintln!("error: cannot ask Slurm: {e}");
        Exit(BAD_INPUT)
    })?;
    let usable: Vec<&str> = nodes
        .iter()
        .filter(|n| n.usable())
        .map(|n| n.name.as_str())
        .collect();
    let others: Vec<String> = nodes
        .iter()
        .filter(|n| !n.usable())
        .map(|n| format!("{} ({})", n.name, n.state))
        .collect();
    println!(
        "on Slurm{}: {} usable node(s){}{}",
        on.partition
            .as_deref()
            .map_or(String::new(), |p| format!(" partition `{p}`")),
        usable.len(),
        if usable.is_empty() {
            String::new()
        } else {
            format!(": {}", usable.join(", "))
        },
        if others.is_empty() {
            String::new()
        } else {
            format!("; not usable: {}", others.join(", "))
        }
    );
    let will_run: Vec<bool> = statuses
        .iter()
        .zip(&graph.steps)
        .map(|(s, step)| step.measure && matches!(s.status, Status::Run | Status::Pending))
        .collect();
    let recorded = recorded_durations(store, &graph.study);
    let per_step = estimate(graph, &will_run, |s| recorded.get(&s.address).copied()).per_step;
    // blocks by pass: each block's estimate is the sum of its trials'
    let mut passes: BTreeMap<u32, BTreeMap<BlockKey, (usize, Duration)>> = BTreeMap::new();
    for step in graph.steps.iter().filter(|s| will_run[s.id]) {
        let e = passes
            .entry(step.pass)
            .or_default()
            .entry(block_key(step))
            .or_default();
        e.0 += 1;
        e.1 += per_step.get(&step.address).copied().unwrap_or_default();
    }
    let blocks: usize = passes.values().map(BTreeMap::len).sum();
    if blocks == 0 {
        println!("  no measurement will run: nothing is submitted");
        return Ok(());
    }
    let n = usable.len().max(1);
    let mut wall = Duration::ZERO;
    for (pass, bs) in &passes {
        // longest block first onto the least loaded node
        let mut times: Vec<Duration> = bs.values().map(|b| b.1).collect();
        times.sort_by(|a, b| b.cmp(a));
        let mut load = vec![Duration::ZERO; n];
        for t in times {
            let i = (0..n).min_by_key(|&i| load[i]).expect("a node");
            load[i] += t;
        }
        let span = load.into_iter().max().unwrap_or_default();
        wall += span;
        let trials: usize = bs.values().map(|b| b.0).sum();
        println!(
            "  pass {pass}: {} block(s), {trials} trial(s), each block on one exclusive node → ~{} with {n} node(s)",
            bs.len(),
            human(span)
        );
    }
    println!(
        "estimated measurement wall time on Slurm: ~{} for {blocks} block(s) over {n} node(s) (passes run one after another; plus Slurm's submission → start per block, which `cairn run --on slurm` measures and prints)",
        human(wall)
    );
    Ok(())
}

/// Cancel the Slurm jobs of runs whose process is gone; the cancelled jobs with their run
/// ids. Slurm not installed or not answering: nothing to cancel.
pub fn cancel_stale_jobs() -> Vec<(u64, String)> {
    let slurm = Slurm::default();
    let Ok(jobs) = slurm.cairn_jobs() else {
        return Vec::new();
    };
    jobs.into_iter()
        .filter(|(_, run)| cairn_exec::docker::cleanup::is_stale_run(run))
        .filter(|(id, _)| match slurm.cancel(*id) {
            Ok(()) => true,
            Err(e) => {
                eprintln!("warning: could not cancel Slurm job {id}: {e}");
                false
            }
        })
        .collect()
}
