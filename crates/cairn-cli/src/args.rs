//! Command-line arguments (clap).

use std::path::PathBuf;

use clap::{Parser, Subcommand, ValueEnum};

#[derive(Debug, Parser)]
#[command(
    name = "cairn",
    version,
    about = "Benchmark studies as code: plan, run, explain, verify"
)]
pub struct Cli {
    /// More output: -v lists cached steps too, -vv shows each key's JSON beside its hash.
    #[arg(short, long, action = clap::ArgAction::Count, global = true)]
    pub verbose: u8,
    /// Results directory holding the store (`<results>/store`).
    #[arg(long, global = true, env = "CAIRN_RESULTS", default_value = "results")]
    pub results: PathBuf,
    /// Machine-local cache directory (working directories, image tarballs, snapshots).
    #[arg(long, global = true, env = "CAIRN_CACHE")]
    pub cache: Option<PathBuf>,
    /// Print events / results as JSON lines on stdout.
    #[arg(long, global = true)]
    pub json: bool,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Validate a plan and print its step counts.
    Check { plan: PathBuf },
    /// Show every step: cached / will run / pending / blocked, and why.
    Plan {
        plan: PathBuf,
        /// Treat these steps as stale.
        #[arg(long)]
        fresh: Vec<String>,
    },
    /// Why a step would run: which input changed, old → new, back to the first change.
    Explain { plan: PathBuf, step: String },
    /// Run every stale step.
    Run {
        plan: PathBuf,
        /// Run only these steps and what they need (name, address, kind:<kind>, or a * pattern).
        #[arg(long)]
        only: Vec<String>,
        /// Re-run these steps even if cached (re-measure on purpose).
        #[arg(long)]
        fresh: Vec<String>,
        /// Build steps run in parallel (measurements always run alone).
        #[arg(short, long, default_value_t = default_jobs())]
        jobs: usize,
        /// After a failure, keep running everything not downstream of it.
        #[arg(long)]
        keep_going: bool,
        /// Seed of the interleaved measurement order (default: derived from the study name).
        #[arg(long)]
        seed: Option<u64>,
        /// Debian mirror for base images (default: $CAIRN_DEBIAN_MIRROR, else the host's apt sources).
        #[arg(long)]
        mirror: Option<String>,
    },
    /// Every trial of a plan with its parameters and headline figures (cached results only).
    Results {
        plan: PathBuf,
        /// Comma-separated values with every figure (for scripts); `--json` gives JSON lines.
        #[arg(long)]
        csv: bool,
    },
    /// Print a finished step's output file (or its stdout/stderr) from the store.
    Cat {
        plan: PathBuf,
        step: String,
        /// Which output (default: the step's only output); `@stdout` / `@stderr` for its logs.
        output: Option<String>,
    },
    /// Print the step graph.
    Graph {
        plan: PathBuf,
        #[arg(long, value_enum, default_value_t = GraphFormat::Dot)]
        format: GraphFormat,
    },
    /// Rewrite plan files in canonical formatting.
    Fmt {
        #[arg(required = true)]
        plans: Vec<PathBuf>,
        /// Only report files that are not formatted (exit 1 if any).
        #[arg(long)]
        check: bool,
    },
    /// Re-hash every blob and record in the store and report damage.
    Verify,
    /// Remove records and blobs that no plan references (dry run unless --apply).
    Gc {
        /// Plans whose steps to keep (default: plans/*.kdl).
        plans: Vec<PathBuf>,
        #[arg(long)]
        apply: bool,
    },
    /// Remove every container and network cairn left in the Docker Engine (images are kept).
    Clean,
    /// Measure cairn's own overhead on synthetic plans.
    Bench {
        /// Sizes of the independent fan-in plans to measure.
        #[arg(long, default_values_t = [200usize, 10_000])]
        steps: Vec<usize>,
        #[arg(short, long, default_value_t = default_jobs())]
        jobs: usize,
    },
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum GraphFormat {
    Dot,
    Mermaid,
}

fn default_jobs() -> usize {
    std::thread::available_parallelism().map_or(2, |n| n.get())
}
