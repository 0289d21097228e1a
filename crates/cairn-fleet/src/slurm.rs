//! The Slurm fleet (`cairn run --on slurm`): each block is one batch job on one exclusive
//! node (`sbatch --exclusive`), whose script runs `cairn worker <job dir>` on the node; the
//! job directory lives in a spool on a filesystem the nodes share ([`crate::job`]),
//! beside the spool's `shipped/` directory of image archives and dataset snapshots. The job
//! inherits the submitting environment (Slurm's default), with what the node's TaskProlog
//! sets on top: a node with its own container engine gets its `DOCKER_HOST` there.
//! This cairn polls the job until its block is done, then gathers the results into its store.
//!
//! Faults: a job that ends without its block done (its node died or was lost, the job was
//! killed) lost the whole block; it is submitted again with the nodes lost so far excluded,
//! at most `node_retries` times, each loss noted in the steps' `extra.attempts`. The block is
//! re-run whole rather than resumed on another node, so its variants still share one node.
//! A cancelled run cancels its jobs (`scancel`) before it returns; jobs carry the run id in
//! their comment, so `cairn clean` finds the jobs of a killed run.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant, SystemTime};

use cairn_exec::slurm::{JobSpec, Slurm};
use cairn_graph::StepGraph;
use serde_json::{json, Map, Value};

use crate::job::{self, Gathered, Started};
use cairn_engine::error::StepError;
use cairn_engine::fleet::{BlockResult, BlockStep, Fleet};
use cairn_engine::Env;

/// How often the job directory is looked at for the block's end while its job is out.
const POLL: Duration = Duration::from_millis(20);
/// Every how many looks Slurm is asked for the job's state (a lost job, a dead node).
const ASK_SLURM_EVERY: u32 = 10;

/// What one block cost beyond its trials: the numbers behind the per-trial overhead, in
/// the order they happen. Together with the trials they cover the block from the moment it
/// was handed over to the moment its results were recorded.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct BlockCost {
    pub trials: usize,
    /// Writing the job directory (job file, the inputs' blobs, shipped images/snapshots).
    pub write_ms: f64,
    /// The `sbatch` call.
    pub sbatch_ms: f64,
    /// From `sbatch`'s return until the worker's process began on its node: Slurm
    /// scheduling the job and launching it (its TaskProlog, the job script).
    pub slurm_start_ms: f64,
    /// The worker's own start: reading the plan, opening the job's store, probing the node.
    pub worker_start_ms: f64,
    /// From calling `sbatch` until the worker was ready (`sbatch` + Slurm + worker start).
    pub submit_to_start_ms: f64,
    /// The block's steps on the node (each step's own time, summed).
    pub node_ms: f64,
    /// From the worker being ready to the end of its block, beyond its steps (checking the
    /// node's images, writing outcomes).
    pub worker_between_ms: f64,
    /// From the end of the block until this cairn saw it done.
    pub notice_ms: f64,
    /// Copying the results into the store and recording them.
    pub gather_ms: f64,
}

/// A Slurm partition as a fleet.
pub struct SlurmFleet {
    pub slurm: Slurm,
    /// The `cairn` binary the nodes run (on the shared filesystem).
    pub cairn: PathBuf,
    /// The plan, by absolute path (the nodes read it).
    pub plan: PathBuf,
    /// Where job directories go: a directory every node sees.
    pub spool: PathBuf,
    /// Usable nodes when the run started: how many blocks go out at once.
    pub nodes: usize,
    /// How often a lost block is submitted again (on another node).
    pub node_retries: u32,
    next: AtomicUsize,
    costs: Mutex<Vec<BlockCost>>,
    /// Held while a block's job is written: blocks go out side by side, and an image they
    /// share is saved into the spool once.
    shipping: Mutex<()>,
}

impl SlurmFleet {
    /// A fleet on `slurm`'s partition; fails when Slurm does not answer or has no usable node.
    pub fn new(
        slurm: Slurm,
        cairn: PathBuf,
        plan: PathBuf,
        spool: PathBuf,
        node_retries: u32,
    ) -> Result<SlurmFleet, String> {
        let nodes = slurm.available()?.iter().filter(|n| n.usable()).count();
        Ok(SlurmFleet {
            slurm,
            cairn,
            plan,
            spool,
            nodes,
            node_retries,
            next: AtomicUsize::new(0),
            costs: Mutex::new(Vec::new()),
            shipping: Mutex::new(()),
        })
    }

    /// What each block out so far cost beyond its trials.
    pub fn costs(&self) -> Vec<BlockCost> {
        self.costs.lock().expect("costs").clone()
    }

    /// After the run: its spool directory goes if nothing is left in it (the job
    /// directories of lost tries stay, for a person to read).
    pub fn tidy(&self, run_id: &str) {
        let _ = std::fs::remove_dir(self.spool.join(run_id));
    }

    fn job_dir(&self, env: &Env<'_>, block: usize, attempt: u32) -> PathBuf {
        self.spool
            .join(env.run_id)
            .join(format!("block-{block}-try-{attempt}"))
    }

    fn write_script(&self, dir: &Path) -> Result<PathBuf, String> {
        let script = dir.join("job.sh");
        let quote = |p: &Path| format!("'{}'", p.display().to_string().replace('\'', r"'\''"));
        let text = format!(
            "#!/bin/sh\n# a block of cairn measurements: performed by `cairn worker` on this node\nexec {} worker {}\n",
            quote(&self.cairn),
            quote(dir)
        );
        std::fs::write(&script, text).map_err(|e| format!("writing {}: {e}", script.display()))?;
        Ok(script)
    }

    /// Wait for job `id` whose block is in `dir`: `Ok(true)` when the block is done,
    /// `Ok(false)` when the job ended without it (with the node it was on and Slurm's word),
    /// `Err` when the run was cancelled (the job is cancelled too).
    fn wait(
        &self,
        env: &Env<'_>,
        id: u64,
        dir: &Path,
    ) -> Result<Result<Instant, (Option<String>, String)>, StepError> {
        let mut node: Option<String> = None;
        let mut looks = 0u32;
        loop {
            if env.is_cancelled() {
                let _ = self.slurm.cancel(id);
                // give the worker its grace (it stops its server and exits), bounded
                let until = Instant::now() + Duration::from_secs(30);
                while Instant::now() < until {
                    match self.slurm.job(id) {
                        Ok(Some(j)) if !j.ended() => std::thread::sleep(POLL),
                        _ => break,
                    }
                }
                // nothing of a cancelled block is gathered: its directory goes
                let _ = std::fs::remove_dir_all(dir);
                return Err(StepError::cancelled());
            }
            if dir.join(job::DONE).exists() {
                return Ok(Ok(Instant::now()));
            }
            looks += 1;
            if looks % ASK_SLURM_EVERY != 1 {
                std::thread::sleep(POLL);
                continue;
            }
            match self.slurm.job(id) {
                Ok(Some(j)) => {
                    if j.node.is_some() {
                        node = j.node.clone();
                    }
                    if j.ended() {
                        // the worker may have finished between the two looks
                        if dir.join(job::DONE).exists() {
                            return Ok(Ok(Instant::now()));
                        }
                        return Ok(Err((
                            node,
                            format!("job {id} ended {} ({})", j.state, j.reason),
                        )));
                    }
                }
                Ok(None) => {
                    if dir.join(job::DONE).exists() {
                        return Ok(Ok(Instant::now()));
                    }
                    return Ok(Err((node, format!("job {id} is gone from Slurm"))));
                }
                // slurmctld hiccups: look again
                Err(e) => tracing::warn!("slurm: reading job {id}: {e}"),
            }
            std::thread::sleep(POLL);
        }
    }
}

fn all(block: &[BlockStep], e: StepError) -> Vec<BlockResult> {
    block
        .iter()
        .map(|_| BlockResult {
            result: Err(e.clone()),
            elapsed: Duration::ZERO,
        })
        .collect()
}

impl Fleet for SlurmFleet {
    fn describe(&self) -> String {
        format!(
            "Slurm{}: {} usable node(s)",
            self.slurm
                .partition
                .as_deref()
                .map_or(String::new(), |p| format!(" partition `{p}`")),
            self.nodes
        )
    }

    fn capacity(&self) -> usize {
        self.nodes.max(1)
    }

    fn run_block(&self, env: &Env<'_>, graph: &StepGraph, block: &[BlockStep]) -> Vec<BlockResult> {
        let n = self.next.fetch_add(1, Ordering::SeqCst);
        let mut lost: Vec<Value> = Vec::new();
        let mut exclude: Vec<String> = Vec::new();
        let name = format!("cairn-{}", graph.study);
        for attempt in 0..=self.node_retries {
            let dir = self.job_dir(env, n, attempt);
            let t_write = Instant::now();
            let written = {
                let _one_at_a_time = self.shipping.lock().expect("shipping");
                let shipped = self.spool.join(job::SHIPPED);
                job::write_job(env, graph, &self.plan, &shipped, &dir, block)
            };
            let script = match written.and_then(|()| self.write_script(&dir)) {
                Ok(s) => s,
                Err(e) => return all(block, StepError::permanent(format!("writing the job: {e}"))),
            };
            let write_ms = t_write.elapsed().as_secs_f64() * 1e3;
            let submitted_at = SystemTime::now();
            let output = dir.join("slurm.out");
            let t_sbatch = Instant::now();
            let id = match self.slurm.submit(&JobSpec {
                name: &name,
                run_id: env.run_id,
                script: &script,
                output: &output,
                exclude: &exclude,
            }) {
                Ok(id) => id,
                Err(e) => {
                    return all(
                        block,
                        StepError::transient(format!("submitting to Slurm: {e}")),
                    )
                }
            };
            let sbatch_ms = t_sbatch.elapsed().as_secs_f64() * 1e3;
            tracing::info!("slurm: block {n} ({} steps) is job {id}", block.len());
            let finished = match self.wait(env, id, &dir) {
                Err(e) => return all(block, e),
                Ok(f) => f,
            };
            let seen_done = match finished {
                Ok(at) => at,
                Err((node, why)) => {
                    let tail = cairn_exec::command_runner::tail(&output, 5);
                    lost.push(json!({
                        "class": "transient",
                        "error": format!("the block was lost on node {}: {why}{}", node.as_deref().unwrap_or("?"), if tail.trim().is_empty() { String::new() } else { format!("; the job's output ends: {}", tail.trim()) }),
                        "node": node,
                        "job": id,
                    }));
                    tracing::warn!(
                        "slurm: block {n} lost ({why}); {} tries left",
                        self.node_retries - attempt
                    );
                    if let Some(node) = node {
                        if !exclude.contains(&node) {
                            exclude.push(node);
                        }
                    }
                    if exclude.len() >= self.nodes {
                        break;
                    }
                    continue;
                }
            };
            let started: Option<Started> = job::read(&dir.join(job::STARTED)).ok();
            let submit_to_start_ms = started
                .as_ref()
                .map_or(f64::NAN, |s| s.unix_ms - job::unix_ms(submitted_at));
            let mut more = Map::new();
            if !lost.is_empty() {
                // the scheduler's own attempts (if any) come first
                let mut attempts: Vec<Value> = block[0]
                    .extra
                    .get("attempts")
                    .and_then(Value::as_array)
                    .cloned()
                    .unwrap_or_default();
                attempts.extend(lost.iter().cloned());
                more.insert("attempts".into(), json!(attempts));
            }
            more.insert(
                "fleet".into(),
                json!({"executor": "slurm", "job": id, "submit_to_start_ms": submit_to_start_ms}),
            );
            let t_gather = Instant::now();
            let gathered = job::gather(env, graph, &dir, block, &more);
            let gather_ms = t_gather.elapsed().as_secs_f64() * 1e3;
            match gathered {
                Ok(Gathered::Complete(results)) => {
                    let node_ms: f64 = results.iter().map(|r| r.elapsed.as_secs_f64() * 1e3).sum();
                    // when the block ended on its node: its done file's time
                    let ended = std::fs::metadata(dir.join(job::DONE))
                        .and_then(|m| m.modified())
                        .map(job::unix_ms)
                        .ok();
                    let seen_ms = job::unix_ms(SystemTime::now())
                        - seen_done.elapsed().as_secs_f64() * 1e3
                        - gather_ms;
                    let sbatch_returned = job::unix_ms(submitted_at) + sbatch_ms;
                    let process = started.as_ref().and_then(|s| s.process_unix_ms);
                    self.costs.lock().expect("costs").push(BlockCost {
                        trials: block.len(),
                        write_ms,
                        sbatch_ms,
                        slurm_start_ms: process.map_or(f64::NAN, |p| p - sbatch_returned),
                        worker_start_ms: match (process, &started) {
                            (Some(p), Some(s)) => s.unix_ms - p,
                            _ => f64::NAN,
                        },
                        submit_to_start_ms,
                        node_ms,
                        worker_between_ms: match (ended, &started) {
                            (Some(e), Some(s)) => (e - s.unix_ms - node_ms).max(0.0),
                            _ => f64::NAN,
                        },
                        notice_ms: ended.map_or(f64::NAN, |e| (seen_ms - e).max(0.0)),
                        gather_ms,
                    });
                    // the job directory served its purpose; the results are in the store
                    if results.iter().all(|r| r.result.is_ok()) {
                        let _ = std::fs::remove_dir_all(&dir);
                    }
                    return results;
                }
                Ok(Gathered::Lost) => {
                    return all(
                        block,
                        StepError::transient("the block's results vanished from the spool"),
                    )
                }
                Err(e) => {
                    return all(
                        block,
                        StepError::permanent(format!("gathering the block: {e}")),
                    )
                }
            }
        }
        let tries: Vec<String> = lost
            .iter()
            .filter_map(|l| l["error"].as_str().map(String::from))
            .collect();
        all(
            block,
            StepError::transient(format!(
                "the block was lost {} time(s), retries exhausted: {}",
                lost.len(),
                tries.join("; ")
            )),
        )
    }
}
