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
        #[command(flatten)]
        on: OnArgs,
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
        /// Tries after a transient failure (engine hiccup, lost node) of a build step.
        #[arg(long, default_value_t = 2)]
        retries: u32,
        /// Tries after a transient failure of a measurement (off by default: a retried
        /// measurement ran under other conditions; the retry is recorded with it).
        #[arg(long, default_value_t = 0)]
        retry_measurements: u32,
        #[command(flatten)]
        on: OnArgs,
        /// With `--on slurm`: the spool for job directories, on a filesystem every node
        /// shares (default: `<results>/slurm-spool`).
        #[arg(long)]
        spool: Option<PathBuf>,
        /// With `--on slurm`: how often a block lost with its node (or its job) is submitted
        /// again, on another node.
        #[arg(long, default_value_t = 2)]
        node_retries: u32,
    },
    /// Perform one fleet block on this node (what a Slurm job runs; not for people).
    #[command(hide = true)]
    Worker {
        /// The block's job directory in the spool.
        dir: PathBuf,
    },
    /// Every trial of a plan with its parameters and headline figures (cached results only).
    Results {
        plan: PathBuf,
        /// The trials measured for this definition here as CSV, in the layout of a report's
        /// data.csv (its columns: data-dictionary.md); `--json` gives JSON lines.
        #[arg(long)]
        csv: bool,
    },
    /// Render the study's report from recorded trials (never measuring) into
    /// `<results>/<study>/`: report.md, data.csv, data.json.
    Report {
        plan: PathBuf,
        /// Read the measurements of another machine class held in the store (JSON, as
        /// `cairn machine --json` prints its class). Without it: this machine's, or, when
        /// this machine has not measured the study, the one class whose results are complete.
        #[arg(long)]
        measured_on: Option<String>,
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
    /// Pack a study into one archive: plan files, lock, every record and blob its report
    /// depends on, the rendered report, and a manifest of every file's blake3.
    Bundle {
        plan: PathBuf,
        /// The archive to write (`.tar.zst`).
        #[arg(short, long)]
        output: PathBuf,
        /// Pack the measurements of another machine class held in the store (as for `report`).
        #[arg(long)]
        measured_on: Option<String>,
    },
    /// Verify a bundle (a `.tar.zst` or an unpacked folder), re-run every trial of it on
    /// this machine into a fresh store, and compare: `<into>/comparison.md` and `.json`.
    Reproduce {
        bundle: PathBuf,
        /// Where to unpack and reproduce (default `<bundle name>-reproduced`; must be empty).
        #[arg(long)]
        into: Option<PathBuf>,
        /// Run the plan's `step`s, commands on this host; refused without it.
        #[arg(long)]
        allow_host_steps: bool,
    },
    /// Compare two result sets of one plan cell by cell: each a bundle (archive or folder)
    /// or a results directory (with --plan); or, with --fingerprint-a/-b, two machines in
    /// one results directory.
    Compare {
        a: PathBuf,
        b: Option<PathBuf>,
        /// The plan of results directories (a bundle brings its own).
        #[arg(long)]
        plan: Option<PathBuf>,
        /// Only A's measurements on this fingerprint (JSON, as `cairn machine --json` prints its class).
        #[arg(long)]
        fingerprint_a: Option<String>,
        /// Only B's measurements on this fingerprint.
        #[arg(long)]
        fingerprint_b: Option<String>,
    },
    /// Re-hash every blob and record in the store and report damage; with a BUNDLE, check
    /// that bundle instead (every file, and every record chaining back to its plan).
    Verify {
        /// A bundle (`.tar.zst` or an unpacked folder) to check instead of the store.
        bundle: Option<PathBuf>,
        /// Also move damaged records (unreadable, or naming a missing blob) to the store's
        /// quarantine, so the store verifies clean; their steps run again at the next run.
        #[arg(long)]
        repair: bool,
    },
    /// Remove records and blobs that no plan references (dry run unless --apply).
    Gc {
        /// Plans whose steps to keep (default: plans/*.kdl).
        plans: Vec<PathBuf>,
        #[arg(long)]
        apply: bool,
        /// Also remove measurements made on other machines (another fingerprint class),
        /// which gc otherwise always keeps: this machine cannot make them again.
        #[arg(long)]
        other_machines: bool,
    },
    /// Every earlier result of each table cell on this machine's class, with its date and
    /// server version; changes beyond the noise flagged.
    History {
        plan: PathBuf,
        /// The figure to follow.
        #[arg(long, default_value = "tps")]
        metric: String,
        /// Exit 1 when the newest result set of any cell is flagged (by the tables' rule)
        /// in this way against the one before it: a regression check for CI pipelines.
        #[arg(long, value_enum, value_name = "CHANGE")]
        fail_on: Option<FailOn>,
    },
    /// Write `PLAN.lock` beside the plan: the package versions of every image (built here
    /// first if need be) and the digest of every plan file. Later runs build exactly those
    /// versions or say which one the archive no longer serves; `cairn plan` compares.
    Lock {
        plan: PathBuf,
        /// The Debian mirror for base images that must be built first.
        #[arg(long)]
        mirror: Option<String>,
    },
    /// Print this machine's fingerprint: the class in measurement keys and the exact facts.
    Machine {
        /// The fingerprint of measurements on the host (the process runtime) instead of in
        /// containers (the default: it asks the Docker Engine for its version).
        #[arg(long)]
        host: bool,
    },
    /// Remove every container and network cairn left in the Docker Engine (images are kept),
    /// and the server socket directories of ended runs.
    Clean,
    /// Measure cairn's own overhead on synthetic plans.
    Bench {
        /// Sizes of the independent fan-in plans to measure.
        #[arg(long, default_values_t = [200usize, 10_000])]
        steps: Vec<usize>,
        #[arg(short, long, default_value_t = default_jobs())]
        jobs: usize,
        /// Also time `cairn run` of this plan when every step of it is served from the store
        /// (the results and cache directories given to `cairn`), and `cairn machine`.
        #[arg(long, value_name = "PLAN", default_value = "plans/quickstart.kdl")]
        cached: PathBuf,
        /// Instead: the per-trial overhead of Slurm — PLAN's trials measured here, then the
        /// same trials on Slurm (`--partition`, one node recommended), in a scratch store.
        #[arg(long, value_name = "PLAN")]
        slurm: Option<PathBuf>,
        /// With `--slurm`: the partition.
        #[arg(long)]
        partition: Option<String>,
        /// Instead: run PLAN whole in a scratch store and print the share of its wall time
        /// spent measuring (warmup and measured windows) and each trial's setup around it.
        #[arg(long, value_name = "PLAN", conflicts_with = "slurm")]
        study: Option<PathBuf>,
        /// Instead: simulate studies through the sequential design of `until="decided"`
        /// (its stopping and verdict code) and print its false-positive rate, power and
        /// passes used against a fixed design and against testing after every pass.
        #[arg(long, conflicts_with_all = ["slurm", "study"])]
        sequential: bool,
        /// With `--sequential`: simulated studies per scenario (A/A scenarios; A/B get a
        /// third as many).
        #[arg(long, default_value_t = 1000, requires = "sequential")]
        studies: usize,
    },
}

/// Where measurements run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Fleet {
    /// On this machine, one at a time.
    Local,
    /// As Slurm batch jobs, a block per exclusive node.
    Slurm,
}

/// The changes `cairn history --fail-on` fails on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum FailOn {
    /// Flagged slower (or, for a figure without a better direction, lower).
    Slower,
    /// Flagged faster (or higher).
    Faster,
    /// Flagged either way.
    Change,
}

/// `--on` and `--partition`, for `run` and `plan`.
#[derive(Debug, Clone, clap::Args)]
pub struct OnArgs {
    /// Where measurements run: here, or on a Slurm cluster's nodes (a block — one pass of
    /// every variant of a matrix point — per exclusive node).
    #[arg(long, value_enum, default_value_t = Fleet::Local)]
    pub on: Fleet,
    /// With `--on slurm`: the partition (default: the cluster's default partition).
    #[arg(long)]
    pub partition: Option<String>,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum GraphFormat {
    Dot,
    Mermaid,
}

pub fn default_jobs() -> usize {
    std::thread::available_parallelism().map_or(2, |n| n.get())
}
