//! Slurm through its command-line clients (`sbatch`, `scontrol`, `squeue`, `scancel`,
//! `sinfo`): submit a batch job to one exclusive node, read its state and node, cancel it,
//! list the nodes of a partition and the jobs cairn runs left. cairn schedules nothing of its
//! own on a cluster: Slurm decides where a job goes; this module only asks and tells it.
//!
//! Every job cairn submits is named `cairn-<study>` and commented `cairn.run=<run id>`, so
//! `cairn clean` can find (and cancel) the jobs of a run whose process is gone.

use std::path::Path;
use std::process::Command;

/// The comment prefix that marks a job as cairn's, followed by the submitting run's id.
pub const COMMENT_PREFIX: &str = "cairn.run=";

/// A Slurm cluster as the clients on this machine see it, optionally one partition of it.
#[derive(Debug, Clone, Default)]
pub struct Slurm {
    /// The partition jobs go to (`--partition`); `None`: the cluster's default.
    pub partition: Option<String>,
}

/// One node of the partition and whether it can take a job now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Node {
    pub name: String,
    /// Slurm's short state (`idle`, `alloc`, `down*`, `drain`, …).
    pub state: String,
}

impl Node {
    /// Whether Slurm can start a job on it (now or once its current job ends).
    pub fn usable(&self) -> bool {
        // `*`: the node does not answer; other suffixes are flags that do not stop a job
        if self.state.ends_with('*') {
            return false;
        }
        let s = self
            .state
            .trim_end_matches(['~', '#', '$', '@', '!', '%', '-', '^']);
        matches!(
            s,
            "idle" | "alloc" | "mix" | "comp" | "completing" | "allocated"
        )
    }
}

/// What a submitted job is doing, from `scontrol show job`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobInfo {
    /// `PENDING`, `RUNNING`, `COMPLETED`, `FAILED`, `NODE_FAIL`, `CANCELLED`, …
    pub state: String,
    /// The node it runs (or ran) on, once it has one.
    pub node: Option<String>,
    /// Slurm's reason, for a person.
    pub reason: String,
}

impl JobInfo {
    /// Whether the job has ended, one way or another.
    pub fn ended(&self) -> bool {
        !matches!(
            self.state.as_str(),
            "PENDING"
                | "RUNNING"
                | "CONFIGURING"
                | "COMPLETING"
                | "SUSPENDED"
                | "REQUEUED"
                | "RESIZING"
                | "SIGNALING"
                | "STAGE_OUT"
        )
    }
}

/// A batch job to submit.
#[derive(Debug, Clone)]
pub struct JobSpec<'a> {
    /// `--job-name`.
    pub name: &'a str,
    /// The submitting run's id (the job's comment carries it).
    pub run_id: &'a str,
    /// The batch script (its first line names the interpreter).
    pub script: &'a Path,
    /// Where the job's stdout and stderr go.
    pub output: &'a Path,
    /// Nodes the job must not go to (e.g. nodes that were lost under an earlier try).
    pub exclude: &'a [String],
}

fn run(cmd: &mut Command) -> Result<String, String> {
    let what = format!("{cmd:?}");
    let out = cmd.output().map_err(|e| {
        format!("cannot run {what}: {e} (is Slurm installed? `bash scripts/slurm-setup.sh` sets one up on this machine)")
    })?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        Err(format!(
            "{what} failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

impl Slurm {
    pub fn new(partition: Option<String>) -> Slurm {
        Slurm { partition }
    }

    fn partition_args(&self, cmd: &mut Command) {
        if let Some(p) = &self.partition {
            cmd.arg(format!("--partition={p}"));
        }
    }

    /// The partition's nodes (`sinfo`); an error says why Slurm cannot be asked.
    pub fn nodes(&self) -> Result<Vec<Node>, String> {
        let mut cmd = Command::new("sinfo");
        cmd.args(["-h", "-N", "-o", "%N %t"]);
        self.partition_args(&mut cmd);
        let out = run(&mut cmd)?;
        let mut nodes: Vec<Node> = out
            .lines()
            .filter_map(|l| {
                let mut w = l.split_whitespace();
                Some(Node {
                    name: w.next()?.to_string(),
                    state: w.next()?.to_string(),
                })
            })
            .collect();
        nodes.sort_by(|a, b| a.name.cmp(&b.name));
        nodes.dedup_by(|a, b| a.name == b.name);
        Ok(nodes)
    }

    /// Whether jobs can run: Slurm answers and the partition has a usable node.
    pub fn available(&self) -> Result<Vec<Node>, String> {
        let nodes = self.nodes()?;
        if !nodes.iter().any(Node::usable) {
            return Err(format!(
                "no usable Slurm node{}: {}",
                self.partition
                    .as_deref()
                    .map_or(String::new(), |p| format!(" in partition `{p}`")),
                if nodes.is_empty() {
                    "sinfo lists none".to_string()
                } else {
                    nodes
                        .iter()
                        .map(|n| format!("{} {}", n.name, n.state))
                        .collect::<Vec<_>>()
                        .join(", ")
                }
            ));
        }
        Ok(nodes)
    }

    /// Submit `job` to one whole node (`--exclusive`, never requeued by Slurm: cairn decides
    /// what a lost job means); the job's id.
    pub fn submit(&self, job: &JobSpec<'_>) -> Result<u64, String> {
        let mut cmd = Command::new("sbatch");
        cmd.args(["--parsable", "--exclusive", "--nodes=1", "--no-requeue"])
            .arg(format!("--job-name={}", job.name))
            .arg(format!("--comment={COMMENT_PREFIX}{}", job.run_id))
            .arg(format!("--output={}", job.output.display()));
        self.partition_args(&mut cmd);
        if !job.exclude.is_empty() {
            cmd.arg(format!("--exclude={}", job.exclude.join(",")));
        }
        cmd.arg(job.script);
        let out = run(&mut cmd)?;
        // `--parsable` prints `<id>` or `<id>;<cluster>`
        let id = out.trim().split(';').next().unwrap_or_default();
        id.parse()
            .map_err(|_| format!("sbatch printed no job id: {:?}", out.trim()))
    }

    /// The state of job `id`; `Ok(None)` once Slurm no longer knows it.
    pub fn job(&self, id: u64) -> Result<Option<JobInfo>, String> {
        let out = Command::new("scontrol")
            .args(["show", "job", "-o", &id.to_string()])
            .output()
            .map_err(|e| format!("cannot run scontrol: {e}"))?;
        let text = String::from_utf8_lossy(&out.stdout);
        if !out.status.success() {
            let err = String::from_utf8_lossy(&out.stderr);
            if err.contains("Invalid job id") {
                return Ok(None);
            }
            return Err(format!("scontrol show job {id}: {}", err.trim()));
        }
        Ok(Some(parse_job(&text)))
    }

    /// Cancel job `id` (its processes get SIGTERM, then SIGKILL after Slurm's KillWait).
    pub fn cancel(&self, id: u64) -> Result<(), String> {
        run(Command::new("scancel").arg(id.to_string())).map(|_| ())
    }

    /// Every queued or running cairn job: its id and the run id of the run that submitted it.
    pub fn cairn_jobs(&self) -> Result<Vec<(u64, String)>, String> {
        let out = run(Command::new("squeue").args(["-h", "-o", "%i|%k"]))?;
        Ok(out
            .lines()
            .filter_map(|l| {
                let (id, comment) = l.split_once('|')?;
                let run = comment.trim().strip_prefix(COMMENT_PREFIX)?;
                Some((id.trim().parse().ok()?, run.to_string()))
            })
            .collect())
    }
}

/// `JobState=…`, the node (`BatchHost`, else `NodeList`) and `Reason` of one
/// `scontrol show job -o` line.
fn parse_job(text: &str) -> JobInfo {
    let field = |name: &str| {
        text.split_whitespace()
            .find_map(|w| w.strip_prefix(name).map(str::to_string))
    };
    let node = field("BatchHost=")
        .or_else(|| field("NodeList="))
        .filter(|n| !n.is_empty() && n != "(null)");
    JobInfo {
        state: field("JobState=").unwrap_or_else(|| "UNKNOWN".into()),
        node,
        reason: field("Reason=").unwrap_or_default(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_job_line_gives_its_state_and_node() {
        let j = parse_job(
            "JobId=7 JobName=cairn-q JobState=RUNNING Reason=None NodeList=cairn2 BatchHost=cairn2",
        );
        assert_eq!(j.state, "RUNNING");
        assert_eq!(j.node.as_deref(), Some("cairn2"));
        assert!(!j.ended());
        let p = parse_job("JobId=8 JobState=PENDING Reason=Resources NodeList=(null)");
        assert_eq!(p.node, None);
        assert!(parse_job("JobId=9 JobState=NODE_FAIL NodeList=cairn1").ended());
    }

    #[test]
    fn down_and_drained_nodes_take_no_job() {
        let n = |s: &str| Node {
            name: "n".into(),
            state: s.into(),
        };
        assert!(n("idle").usable());
        assert!(n("alloc").usable());
        assert!(!n("down*").usable());
        assert!(!n("drain").usable());
        assert!(!n("idle*").usable());
    }
}
