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
    /// The plan parameters' values the run was given (`--set`): the nodes read the plan
    /// with them.
    pub params: std::collections::BTreeMap<String, String>,
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
            params: std::collections::BTreeMap::new(),
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

    /// Write the block's job into `dir` and submit it, away from the nodes in `exclude`.
    fn submit(
        &self,
        env: &Env<'_>,
        graph: &StepGraph,
        block: &[BlockStep],
        dir: PathBuf,
        exclude: &[String],
    ) -> Result<Submitted, StepError> {
        let t_write = Instant::now();
        let written = {
            let _one_at_a_time = self.shipping.lock().expect("shipping");
            let shipped = self.spool.join(job::SHIPPED);
            job::write_job(
                env,
                graph,
                (&self.plan, &self.params),
                &shipped,
                &dir,
                block,
            )
        };
        let script = written
            .and_then(|()| self.write_script(&dir))
            .map_err(|e| StepError::permanent(format!("writing the job: {e}")))?;
        let write_ms = t_write.elapsed().as_secs_f64() * 1e3;
        let submitted_at = SystemTime::now();
        let output = dir.join("slurm.out");
        let t_sbatch = Instant::now();
        let id = self
            .slurm
            .submit(&JobSpec {
                name: &format!("cairn-{}", graph.study),
                run_id: env.run_id,
                script: &script,
                output: &output,
                exclude,
            })
            .map_err(|e| StepError::transient(format!("submitting to Slurm: {e}")))?;
        let sbatch_ms = t_sbatch.elapsed().as_secs_f64() * 1e3;
        Ok(Submitted {
            id,
            dir,
            output,
            write_ms,
            submitted_at,
            sbatch_ms,
        })
    }

    /// Gather the results of a block whose job is done (seen so at `seen_done`) into the
    /// store, and note what the block cost.
    fn gather(
        &self,
        env: &Env<'_>,
        graph: &StepGraph,
        block: &[BlockStep],
        submitted: &Submitted,
        seen_done: Instant,
        losses: &Losses,
    ) -> Vec<BlockResult> {
        let started: Option<Started> = job::read(&submitted.dir.join(job::STARTED)).ok();
        let mut more = Map::new();
        if let Some(attempts) = losses.attempts(block) {
            more.insert("attempts".into(), attempts);
        }
        more.insert(
            "fleet".into(),
            json!({"executor": "slurm", "job": submitted.id, "submit_to_start_ms": submitted.to_start_ms(started.as_ref())}),
        );
        let t_gather = Instant::now();
        let gathered = job::gather(env, graph, &submitted.dir, block, &more);
        let gather_ms = t_gather.elapsed().as_secs_f64() * 1e3;
        match gathered {
            Ok(Gathered::Complete(results)) => {
                let cost = submitted.cost(
                    block.len(),
                    started.as_ref(),
                    &results,
                    seen_done,
                    gather_ms,
                );
                self.costs.lock().expect("costs").push(cost);
                // the job directory served its purpose; the results are in the store
                if results.iter().all(|r| r.result.is_ok()) {
                    let _ = std::fs::remove_dir_all(&submitted.dir);
                }
                results
            }
            Ok(Gathered::Lost) => all(
                block,
                StepError::transient("the block's results vanished from the spool"),
            ),
            Err(e) => all(
                block,
                StepError::permanent(format!("gathering the block: {e}")),
            ),
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
        let mut losses = Losses::default();
        for attempt in 0..=self.node_retries {
            let dir = self.job_dir(env, n, attempt);
            let submitted = match self.submit(env, graph, block, dir, &losses.exclude) {
                Ok(s) => s,
                Err(e) => return all(block, e),
            };
            tracing::info!(
                "slurm: block {n} ({} steps) is job {}",
                block.len(),
                submitted.id
            );
            match self.wait(env, submitted.id, &submitted.dir) {
                Err(e) => return all(block, e),
                Ok(Ok(seen_done)) => {
                    return self.gather(env, graph, block, &submitted, seen_done, &losses)
                }
                Ok(Err((node, why))) => {
                    tracing::warn!(
                        "slurm: block {n} lost ({why}); {} tries left",
                        self.node_retries - attempt
                    );
                    losses.note(&submitted, node, &why);
                    if losses.exclude.len() >= self.nodes {
                        break;
                    }
                }
            }
        }
        all(block, losses.exhausted())
    }
}

/// One try of a block: its job in Slurm and what its submission took.
struct Submitted {
    id: u64,
    /// The try's job directory in the spool.
    dir: PathBuf,
    /// The job's output (`slurm.out`), whose end tells why a lost job ended.
    output: PathBuf,
    write_ms: f64,
    submitted_at: SystemTime,
    sbatch_ms: f64,
}

impl Submitted {
    /// From calling `sbatch` until the worker was ready (NaN without its started file).
    fn to_start_ms(&self, started: Option<&Started>) -> f64 {
        started.map_or(f64::NAN, |s| s.unix_ms - job::unix_ms(self.submitted_at))
    }

    /// What the block of `trials` steps cost beyond them, from its job's timestamps and
    /// this cairn's clocks; `seen_done` is when the block was seen done, `gather_ms` how
    /// long gathering `results` took (just now).
    fn cost(
        &self,
        trials: usize,
        started: Option<&Started>,
        results: &[BlockResult],
        seen_done: Instant,
        gather_ms: f64,
    ) -> BlockCost {
        let node_ms: f64 = results.iter().map(|r| r.elapsed.as_secs_f64() * 1e3).sum();
        // when the block ended on its node: its done file's time
        let ended = std::fs::metadata(self.dir.join(job::DONE))
            .and_then(|m| m.modified())
            .map(job::unix_ms)
            .ok();
        let seen_ms =
            job::unix_ms(SystemTime::now()) - seen_done.elapsed().as_secs_f64() * 1e3 - gather_ms;
        let sbatch_returned = job::unix_ms(self.submitted_at) + self.sbatch_ms;
        let process = started.and_then(|s| s.process_unix_ms);
        BlockCost {
            trials,
            write_ms: self.write_ms,
            sbatch_ms: self.sbatch_ms,
            slurm_start_ms: process.map_or(f64::NAN, |p| p - sbatch_returned),
            worker_start_ms: match (process, started) {
                (Some(p), Some(s)) => s.unix_ms - p,
                _ => f64::NAN,
            },
            submit_to_start_ms: self.to_start_ms(started),
            node_ms,
            worker_between_ms: match (ended, started) {
                (Some(e), Some(s)) => (e - s.unix_ms - node_ms).max(0.0),
                _ => f64::NAN,
            },
            notice_ms: ended.map_or(f64::NAN, |e| (seen_ms - e).max(0.0)),
            gather_ms,
        }
    }
}

/// The tries of a block lost so far.
#[derive(Default)]
struct Losses {
    /// One entry per lost try, for the steps' `extra.attempts`.
    lost: Vec<Value>,
    /// The nodes that lost it: the next try goes elsewhere.
    exclude: Vec<String>,
}

impl Losses {
    /// Note that `submitted`'s job ended without its block, on `node`, for Slurm's reason `why`.
    fn note(&mut self, submitted: &Submitted, node: Option<String>, why: &str) {
        let tail = cairn_exec::command_runner::tail(&submitted.output, 5);
        self.lost.push(json!({
            "class": "transient",
            "error": format!("the block was lost on node {}: {why}{}", node.as_deref().unwrap_or("?"), if tail.trim().is_empty() { String::new() } else { format!("; the job's output ends: {}", tail.trim()) }),
            "node": node,
            "job": submitted.id,
        }));
        if let Some(node) = node {
            if !self.exclude.contains(&node) {
                self.exclude.push(node);
            }
        }
    }

    /// The steps' `extra.attempts` when a try was lost: the scheduler's own attempts (if
    /// any) come first.
    fn attempts(&self, block: &[BlockStep]) -> Option<Value> {
        if self.lost.is_empty() {
            return None;
        }
        let mut attempts: Vec<Value> = block[0]
            .extra
            .get("attempts")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        attempts.extend(self.lost.iter().cloned());
        Some(json!(attempts))
    }

    /// The error of a block every try of which was lost.
    fn exhausted(&self) -> StepError {
        let tries: Vec<String> = self
            .lost
            .iter()
            .filter_map(|l| l["error"].as_str().map(String::from))
            .collect();
        StepError::transient(format!(
            "the block was lost {} time(s), retries exhausted: {}",
            self.lost.len(),
            tries.join("; ")
        ))
    }
}
