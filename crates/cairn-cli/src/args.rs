//! Command-line arguments (clap).

use std::path::PathBuf;

use clap::{CommandFactory, Parser, Subcommand, ValueEnum};

#[derive(Debug, Parser)]
#[command(
    name = "cairn",
    version,
    about = "Benchmark studies as code: plan, run, explain, verify",
    after_help = "Examples:\n  cairn plan plans/quickstart.kdl      what would run, and why\n  cairn run plans/quickstart.kdl       run it; the report lands in results/<study>/\n  cairn results plans/quickstart.kdl   every trial and its figures"
)]
pub struct Cli {
    /// More output: -v lists cached steps too, -vv shows each key's JSON beside its hash.
    #[arg(short, long, action = clap::ArgAction::Count, global = true)]
    pub verbose: u8,
    /// Results directory holding the store (`<results>/store`); default: the nearest
    /// `results/` in this directory or above it.
    #[arg(long, global = true, env = "CAIRN_RESULTS", default_value = "results")]
    pub results: PathBuf,
    /// Machine-local cache directory (working directories, image tarballs, snapshots).
    #[arg(long, global = true, env = "CAIRN_CACHE")]
    pub cache: Option<PathBuf>,
    /// Print events / results as JSON lines on stdout.
    #[arg(long, global = true)]
    pub json: bool,
    /// A plan parameter's value: `--set scale=published` (repeatable), for a `param` the plan
    /// declares; the others keep their defaults.
    #[arg(long = "set", global = true, value_name = "NAME=VALUE", value_parser = parse_setting)]
    pub set: Vec<(String, String)>,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Validate a plan and print its step counts (`--json`: the verdict and any diagnostic
    /// as JSON on stdout).
    #[command(
        after_help = "Examples:\n  cairn check plans/quickstart.kdl\n  cairn check --json plans/quickstart.kdl   {\"valid\": …, \"diagnostic\": …}"
    )]
    Check {
        /// The plan file (`.kdl`).
        plan: PathBuf,
    },
    /// Show every step that is not cached (will run / pending / blocked) and why; `-v` lists
    /// the cached steps and every input a pending analysis waits on too.
    #[command(
        after_help = "Examples:\n  cairn plan plans/quickstart.kdl\n  cairn plan -v --fresh 'kind:trial' plans/quickstart.kdl"
    )]
    Plan {
        /// The plan file (`.kdl`).
        plan: PathBuf,
        /// Treat these steps as stale (name, address, kind:<kind>, or a * pattern).
        #[arg(long)]
        fresh: Vec<String>,
        #[command(flatten)]
        on: OnArgs,
    },
    /// Why a step would run: which input changed, old → new, back to the first change.
    #[command(
        after_help = "Examples:\n  cairn explain plans/quickstart.kdl 'trial/load/pg[clients=8]#1'\n  cairn explain plans/quickstart.kdl a1c1b85482bb   (a key, as a report prints it)"
    )]
    Explain {
        /// The plan file (`.kdl`).
        plan: PathBuf,
        /// The step: its address, name or pattern, or its key (at least 8 hex of it, as a
        /// report prints it).
        step: String,
    },
    /// Run every stale step.
    #[command(
        after_help = "Examples:\n  cairn run plans/quickstart.kdl\n  cairn run --only 'kind:image' -j 2 plans/quickstart.kdl\n  cairn run --fresh 'trial/*' plans/quickstart.kdl   measure again on purpose"
    )]
    Run {
        /// The plan file (`.kdl`).
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
    #[command(
        after_help = "Examples:\n  cairn results plans/quickstart.kdl\n  cairn results --csv plans/quickstart.kdl > trials.csv"
    )]
    Results {
        /// The plan file (`.kdl`).
        plan: PathBuf,
        /// The trials measured for this definition here as CSV, in the layout of a report's
        /// data.csv (its columns: data-dictionary.md); `--json` gives JSON lines.
        #[arg(long)]
        csv: bool,
    },
    /// Render the study's report from recorded trials (never measuring) into
    /// `<results>/<study>/`: report.md, report.html, the plots (plot-*.svg, plot-*.png),
    /// data.csv (one row per trial), series.csv (the time series within trials) and
    /// data.json (everything, typed).
    #[command(
        after_help = "Examples:\n  cairn report plans/quickstart.kdl\n  cairn report --measured-on 3f9a1c2b7d4e plans/quickstart.kdl   another machine class's results"
    )]
    Report {
        /// The plan file (`.kdl`).
        plan: PathBuf,
        /// Read the measurements of another machine class held in the store: its id (as
        /// `cairn machine` prints it) or its JSON. Without it: this machine's, or, when this
        /// machine has not measured the study, the one class whose results are complete.
        #[arg(long, value_name = "CLASS")]
        measured_on: Option<String>,
    },
    /// Print a finished step's output file (or its stdout/stderr) from the store.
    #[command(
        after_help = "Examples:\n  cairn cat plans/quickstart.kdl 'trial/load/pg[clients=8]#1' @stdout\n  cairn cat plans/quickstart.kdl a1c1b85482bb   (a trial key, as a report prints it)"
    )]
    Cat {
        /// The plan file (`.kdl`).
        plan: PathBuf,
        /// The step: its address or name, or its key (at least 8 hex of it, as a report
        /// prints it; an earlier record of the step too).
        step: String,
        /// Which output (default: the step's only output); `@stdout` / `@stderr` for its logs.
        output: Option<String>,
    },
    /// Print the top functions of a profiled cell (a trials block with `profile "cpu"`):
    /// the server's on-CPU samples merged over the cell's passes, each function's share and
    /// its CPU time per transaction.
    #[command(
        after_help = "Examples:\n  cairn profile plans/malloc.kdl 'trial/ro/mariadb-system[threads=8]'\n  cairn profile plans/malloc.kdl 'trial/ro/mariadb-system[threads=8]#2' --top 40"
    )]
    Profile {
        /// The plan file (`.kdl`).
        plan: PathBuf,
        /// The cell: a trial's address (its passes merged), or one pass (`…#2`).
        cell: String,
        /// How many functions to print.
        #[arg(long, default_value_t = 25)]
        top: usize,
        /// The wait events instead (a block with `profile "waits"`): µs waited per event.
        #[arg(long)]
        waits: bool,
    },
    /// Print what changed between two profiled cells: the functions whose share of the
    /// server's CPU samples changed most from A (the baseline) to B, with the CPU time per
    /// transaction each spends on either side.
    #[command(
        name = "diff-profile",
        after_help = "Examples:\n  cairn diff-profile plans/malloc.kdl 'trial/ro/mariadb-system[threads=8]' 'trial/ro/mariadb-tcmalloc[threads=8]'"
    )]
    DiffProfile {
        /// The plan file (`.kdl`).
        plan: PathBuf,
        /// The baseline cell.
        a: String,
        /// The cell compared with it.
        b: String,
        /// How many functions to print.
        #[arg(long, default_value_t = 25)]
        top: usize,
        /// The wait events instead (a block with `profile "waits"`): their share of the time
        /// waited and µs waited per transaction.
        #[arg(long)]
        waits: bool,
    },
    /// Print the step graph.
    #[command(
        after_help = "Examples:\n  cairn graph plans/quickstart.kdl | dot -Tsvg > graph.svg\n  cairn graph --format mermaid plans/quickstart.kdl"
    )]
    Graph {
        /// The plan file (`.kdl`).
        plan: PathBuf,
        /// The graph language: Graphviz `dot` or `mermaid`.
        #[arg(long, value_enum, default_value_t = GraphFormat::Dot)]
        format: GraphFormat,
    },
    /// Rewrite plan files in canonical formatting.
    #[command(
        after_help = "Examples:\n  cairn fmt plans/*.kdl\n  cairn fmt --check plans/*.kdl   in CI: exit 1 if any is not formatted"
    )]
    Fmt {
        /// The plan files to format.
        #[arg(required = true)]
        plans: Vec<PathBuf>,
        /// Only report files that are not formatted (exit 1 if any).
        #[arg(long)]
        check: bool,
    },
    /// Pack a study into one archive: plan files, lock, every record and blob its report
    /// depends on, the rendered report, and a manifest of every file's blake3.
    #[command(
        after_help = "Examples:\n  cairn bundle plans/quickstart.kdl -o quickstart.tar.zst\n  cairn verify quickstart.tar.zst && cairn reproduce quickstart.tar.zst"
    )]
    Bundle {
        /// The plan file (`.kdl`).
        plan: PathBuf,
        /// The archive to write (`.tar.zst`).
        #[arg(short, long)]
        output: PathBuf,
        /// Pack the measurements of another machine class held in the store (its id or
        /// JSON, as for `report`).
        #[arg(long, value_name = "CLASS")]
        measured_on: Option<String>,
    },
    /// Verify a bundle (a `.tar.zst` or an unpacked folder), re-run every trial of it on
    /// this machine into a fresh store, and compare: `<into>/comparison.md` and `.json`.
    #[command(
        after_help = "Examples:\n  cairn reproduce quickstart.tar.zst\n  cairn reproduce --into /tmp/again quickstart.tar.zst\n  cairn reproduce --into bl --only 'trial/flags/*' build-and-link.tar.zst   one part now, the rest later into the same folder"
    )]
    Reproduce {
        /// The bundle (`.tar.zst` or an unpacked folder).
        bundle: PathBuf,
        /// Where to unpack and reproduce (default `<bundle name>-reproduced`; must be empty).
        #[arg(long)]
        into: Option<PathBuf>,
        /// Run the plan's `step`s, commands on this host; refused without it.
        #[arg(long)]
        allow_host_steps: bool,
        /// Reproduce only these steps and what they need (as `cairn run --only`), to
        /// reproduce a long study in parts: a later `cairn reproduce` of the same bundle
        /// `--into` the same folder continues it, and the report is rendered once a run
        /// without `--only` has every step.
        #[arg(long, value_name = "STEP")]
        only: Vec<String>,
    },
    /// Compare two result sets of one plan cell by cell: each a bundle (archive or folder)
    /// or a results directory (with --plan); or, with --measured-on-a/-b, two machine
    /// classes in one results directory.
    #[command(
        after_help = "Examples:\n  cairn compare published.tar.zst reproduced/\n  cairn compare results --plan plans/quickstart.kdl --measured-on-a 3f9a1c2b7d4e --measured-on-b 77c0e1d2a9b4"
    )]
    Compare {
        /// Side A, the baseline: a bundle (`.tar.zst` or folder) or a results directory.
        a: PathBuf,
        /// Side B: a bundle or a results directory (default: A again, for two machine
        /// classes of one store).
        b: Option<PathBuf>,
        /// The plan of results directories (a bundle brings its own).
        #[arg(long)]
        plan: Option<PathBuf>,
        /// Only A's measurements made on this machine class: its id (as `cairn machine`
        /// prints it) or its JSON.
        #[arg(long, value_name = "CLASS", alias = "fingerprint-a")]
        measured_on_a: Option<String>,
        /// Only B's measurements made on this machine class (id or JSON).
        #[arg(long, value_name = "CLASS", alias = "fingerprint-b")]
        measured_on_b: Option<String>,
    },
    /// Re-hash every blob and record in the store and report damage; with a BUNDLE, check
    /// that bundle instead (every file, and every record chaining back to its plan).
    #[command(after_help = "Examples:\n  cairn verify\n  cairn verify quickstart.tar.zst")]
    Verify {
        /// A bundle (`.tar.zst` or an unpacked folder) to check instead of the store.
        bundle: Option<PathBuf>,
        /// Also move damaged records (unreadable, or naming a missing blob) to the store's
        /// quarantine, so the store verifies clean; their steps run again at the next run.
        #[arg(long)]
        repair: bool,
    },
    /// Remove records and blobs that no plan references (dry run unless --apply).
    #[command(
        after_help = "Examples:\n  cairn gc                  what would go (the plans in plans/ are kept)\n  cairn gc --apply plans/quickstart.kdl"
    )]
    Gc {
        /// Plans whose steps to keep (default: plans/*.kdl beside the results directory).
        plans: Vec<PathBuf>,
        /// Remove them (without it: only say what would be removed).
        #[arg(long)]
        apply: bool,
        /// Also remove measurements made on other machines (another fingerprint class),
        /// which gc otherwise always keeps: this machine cannot make them again.
        #[arg(long)]
        other_machines: bool,
    },
    /// Every earlier result of each table cell on this machine's class, with its date and
    /// server version; changes beyond the noise flagged.
    #[command(
        after_help = "Examples:\n  cairn history plans/release.kdl\n  cairn history --metric latency_p95_ms --fail-on slower plans/release.kdl   in CI"
    )]
    History {
        /// The plan file (`.kdl`).
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
    #[command(
        after_help = "Examples:\n  cairn lock plans/quickstart.kdl   writes plans/quickstart.kdl.lock"
    )]
    Lock {
        /// The plan file (`.kdl`).
        plan: PathBuf,
        /// The Debian mirror for base images that must be built first.
        #[arg(long)]
        mirror: Option<String>,
    },
    /// Print this machine's fingerprint: the class in measurement keys (and its short id,
    /// which `--measured-on` takes) and the exact facts.
    #[command(after_help = "Examples:\n  cairn machine\n  cairn machine --json | jq .id")]
    Machine {
        /// The fingerprint of measurements on the host (the process runtime) instead of in
        /// containers (the default: it asks the Docker Engine for its version).
        #[arg(long)]
        host: bool,
    },
    /// Remove what ended (killed) runs left: their containers and networks in the Docker
    /// Engine (images are kept), server socket directories, host settings and Slurm jobs. Runs
    /// still going are left alone.
    #[command(
        after_help = "Examples:\n  cairn clean         after a run was killed\n  cairn clean --all   also stop the containers of runs still going"
    )]
    Clean {
        /// Also remove the containers and networks of runs still going (their runs then fail).
        #[arg(long)]
        all: bool,
    },
    /// Measure cairn's own overhead on synthetic plans.
    #[command(
        after_help = "Examples:\n  cairn bench\n  cairn bench --study plans/quickstart.kdl\n  cairn bench --sequential --studies 200"
    )]
    Bench {
        /// Sizes of the independent fan-in plans to measure.
        #[arg(long, default_values_t = [200usize, 10_000])]
        steps: Vec<usize>,
        /// Steps run in parallel (as `run -j`).
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
    /// Graphviz.
    Dot,
    /// Mermaid (renders in GitHub Markdown).
    Mermaid,
}

/// `NAME=VALUE` of `--set`, split at the first `=`.
fn parse_setting(s: &str) -> Result<(String, String), String> {
    match s.split_once('=') {
        Some((name, value)) if !name.trim().is_empty() => {
            Ok((name.trim().to_string(), value.to_string()))
        }
        _ => Err(format!(
            "`{s}` is not NAME=VALUE (e.g. `--set scale=published`)"
        )),
    }
}

/// The global flags a command has no use for: its help does not offer them (they are still
/// accepted, and do nothing, so a flag given before any command never breaks one).
const UNUSED_GLOBALS: &[(&str, &[&str])] = &[
    ("fmt", &["results", "cache", "json", "set"]),
    ("graph", &["results", "cache", "json"]),
    ("check", &["cache"]),
    ("machine", &["results", "set"]),
    ("clean", &["results", "cache", "set"]),
    ("verify", &["set"]),
];

/// The command line's grammar: [`Cli`], with each command's unused global flags hidden.
pub fn command() -> clap::Command {
    let mut cmd = Cli::command();
    let globals: Vec<clap::Arg> = cmd
        .get_arguments()
        .filter(|a| a.is_global_set())
        .cloned()
        .collect();
    for (name, unused) in UNUSED_GLOBALS {
        cmd = cmd.mut_subcommand(*name, |mut sub| {
            // a command's own copy of a global flag is not replaced by the global one
            for a in globals
                .iter()
                .filter(|a| unused.contains(&a.get_id().as_str()))
            {
                sub = sub.arg(a.clone().hide(true));
            }
            sub
        });
    }
    cmd
}

pub fn default_jobs() -> usize {
    std::thread::available_parallelism().map_or(2, |n| n.get())
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::FromArgMatches;

    #[test]
    fn the_grammar_is_consistent() {
        command().debug_assert();
    }

    /// Every argument a person sees is described, and every command shows an example.
    #[test]
    fn every_argument_has_help_and_every_command_an_example() {
        let mut cmd = command();
        cmd.build();
        for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
            if sub.get_name() == "help" {
                continue;
            }
            assert!(
                sub.get_after_help().is_some(),
                "`cairn {}` has no example",
                sub.get_name()
            );
            for a in sub.get_arguments().filter(|a| !a.is_hide_set()) {
                if ["help", "version"].contains(&a.get_id().as_str()) {
                    continue;
                }
                assert!(
                    a.get_help().is_some(),
                    "`cairn {}`: `{}` has no description",
                    sub.get_name(),
                    a.get_id()
                );
            }
        }
    }

    #[test]
    fn fmt_does_not_offer_the_store_flags_but_accepts_them() {
        let mut cmd = command();
        cmd.build();
        let fmt = cmd.find_subcommand_mut("fmt").unwrap();
        let mut help = Vec::new();
        fmt.write_long_help(&mut help).unwrap();
        let help = String::from_utf8(help).unwrap();
        for flag in ["--results", "--cache", "--json"] {
            assert!(!help.contains(flag), "{flag} in\n{help}");
        }
        let m = command()
            .try_get_matches_from(["cairn", "--results", "r", "fmt", "p.kdl"])
            .unwrap();
        assert!(Cli::from_arg_matches(&m).is_ok());
    }

    #[test]
    fn the_old_class_flags_of_compare_still_work() {
        let m = command()
            .try_get_matches_from(["cairn", "compare", "r", "--fingerprint-a", "abcd1234"])
            .unwrap();
        let Command::Compare { measured_on_a, .. } = Cli::from_arg_matches(&m).unwrap().command
        else {
            panic!("not compare");
        };
        assert_eq!(measured_on_a.as_deref(), Some("abcd1234"));
    }
}
