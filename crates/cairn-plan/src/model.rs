//! Typed plan values: what a study declares, each piece keeping where it came from in the plan text.
//!
//! These types are the contract between the parser (`parse`) and everything downstream
//! (`cairn-graph` resolves them into steps and keys). Fields that are part of a step's
//! meaning are plain data; `Loc`/`Sp` only serve diagnostics and never enter a key.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use miette::SourceSpan;
use serde::{Deserialize, Serialize};

/// Index into [`Plan::sources`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct SourceId(pub usize);

/// A place in one plan file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Loc {
    pub source: SourceId,
    #[serde(with = "span_serde")]
    pub span: SourceSpan,
}

/// A value with the place it was written: for an argument its whole entry (`"name"`, quotes
/// included), for a property the whole `key=value`, for a node its name.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Sp<T> {
    pub value: T,
    pub loc: Loc,
}

impl<T> Sp<T> {
    pub fn new(value: T, loc: Loc) -> Self {
        Sp { value, loc }
    }
}

impl<T> std::ops::Deref for Sp<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.value
    }
}

/// One plan file that was read (the root or an import).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Source {
    /// Path as given (root) or resolved relative to the importing file; lexically normalised.
    pub path: PathBuf,
    /// Directory the file lives in: relative `input`/`file` paths resolve against it.
    pub dir: PathBuf,
    /// Not cached: re-read (and re-hashed) from disk whenever the plan is loaded.
    #[serde(skip)]
    pub text: Arc<str>,
}

/// A scalar written in a plan. Serialises untagged so keys stay readable.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Value {
    Bool(bool),
    Int(i64),
    Float(f64),
    String(String),
}

impl std::fmt::Display for Value {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Value::Bool(b) => write!(f, "{b}"),
            Value::Int(i) => write!(f, "{i}"),
            Value::Float(x) => write!(f, "{x}"),
            Value::String(s) => write!(f, "{s}"),
        }
    }
}

/// One axis of a parameter matrix: `threads 1 2 4` → name "threads", three values.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Param {
    pub name: Sp<String>,
    pub values: Vec<Sp<Value>>,
}

/// A whole study: the root file plus everything it imports, merged.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Plan {
    pub sources: Vec<Source>,
    pub study: Study,
    pub images: Vec<Image>,
    pub servers: Vec<Server>,
    pub datasets: Vec<Dataset>,
    pub workloads: Vec<Workload>,
    pub trials: Vec<Trials>,
    pub analyses: Vec<Analysis>,
    pub claims: Vec<Claim>,
    pub reports: Vec<Report>,
    pub steps: Vec<CommandStep>,
    /// `param` declarations with the value each was read with (its default or `--set`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub params: Vec<PlanParam>,
    /// What is worth saying but does not stop the plan (a parameter never used); the CLI
    /// prints them. Not kept by the parse cache: a cached plan was warned about when read.
    #[serde(skip)]
    pub warnings: Vec<crate::Problem>,
}

/// `param "scale" default="tiny" { values "tiny" "published" }`: a value the plan's other
/// values use as `${scale}`, set per run with `--set scale=published`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PlanParam {
    pub name: Sp<String>,
    /// The default's text (`4`, `tiny`, `true`).
    pub default: Sp<String>,
    /// The default's type, which a `--set` value must have.
    pub ty: ParamType,
    /// `values …`: the only values it may take (empty: any of its type).
    pub values: Vec<Sp<String>>,
    /// The value this plan was read with.
    pub value: String,
    /// True when `--set` gave the value.
    pub set: bool,
    /// True when some value says `${name}`.
    pub used: bool,
}

/// The type of a parameter's default.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum ParamType {
    Text,
    /// Numbers, one or several separated by spaces.
    Number,
    Bool,
    /// Words separated by spaces, each one argument where `"${name}"` stands (`list=#true`:
    /// `servers "${servers}"` with `deb32 deb64` is `servers "deb32" "deb64"`); `values`
    /// lists the words it may hold.
    List,
}

impl Plan {
    /// Each parameter's value and default, by name (empty without `param`).
    pub fn param_values(&self) -> BTreeMap<String, (String, String)> {
        self.params
            .iter()
            .map(|p| {
                (
                    p.name.value.clone(),
                    (p.value.clone(), p.default.value.clone()),
                )
            })
            .collect()
    }

    /// Sets the `min` of every trials block that wrote none (`passes max=12
    /// until="decided"`, [`Passes::default_min`]) to `fewest(max)`: the fewest passes per
    /// side that could decide a comparison at the design's first look, which the caller
    /// computes (`cairn_analysis::sequential::fewest_passes_that_could_decide`). A block that
    /// gave `min` keeps it; setting it twice changes nothing.
    pub fn set_default_passes(&mut self, fewest: impl Fn(u32) -> u32) {
        for t in &mut self.trials {
            let p = &mut t.passes.value;
            if p.default_min {
                p.min = fewest(p.max).clamp(1, p.max);
            }
        }
    }
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Study {
    /// `study "name"`; defaults to the root file's stem.
    pub name: String,
    pub title: Option<String>,
    pub loc: Option<Loc>,
    /// `host-path "/srv/dumps" …`: directories outside the plan's own from which `input`s
    /// and image `file`s may be read (canonical when the plan was loaded from disk).
    #[serde(default)]
    pub host_paths: Vec<Sp<PathBuf>>,
}

/// `image "name" { … }`: how a server's root filesystem is built.
///
/// `extends` is already resolved by the parser: `debian` is merged field-wise (child wins),
/// `packages` are the parent's then the child's (without repeats), `layers` the parent's then the child's.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Image {
    pub name: Sp<String>,
    /// The parent as written (kept for display; its fields are already merged in).
    pub extends: Option<Sp<String>>,
    /// `debian suite="bookworm" arch="amd64" variant="minbase"`
    pub debian: Option<Debian>,
    /// `packages "a" "b=1.2"`: installed at bootstrap.
    pub packages: Vec<Sp<String>>,
    /// `file`, `run`, `env`, `build` children in order: each becomes its own layer step.
    pub layers: Vec<Sp<Layer>>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Debian {
    pub suite: Option<String>,
    pub arch: Option<String>,
    pub variant: Option<String>,
    /// Where `arch=` was written (a check that this host runs it points there).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arch_loc: Option<Loc>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Layer {
    /// `file "local/path" "/in/image"`
    File { src: String, dest: String },
    /// `run "shell command"`
    Run { command: String },
    /// `env KEY="value" …`
    Env { vars: BTreeMap<String, String> },
    /// `build "debian:hello" { cflags "-O2"; strip #true; … }`: a program built from source
    /// in a container and installed into the image.
    Build(Box<Build>),
}

/// Where a source build's code comes from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BuildSource {
    /// `debian:<source package>`: fetched with `apt-get source` from the image's own mirror.
    Debian { package: String },
    /// `tarball:<path>`: an archive in the plan's directory (relative to the declaring file).
    Tarball { path: String },
}

/// A `build` layer with the named build it `extends` (if any) flattened in (`builds.rs`);
/// defaults are filled in later (`cairn-graph`), so a plan that spells a default out and one
/// that leaves it have the same key, and so do a build that extends a named build and the
/// same build written out inline.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Build {
    pub source: BuildSource,
    /// Where the source was written when that is another plan file than the layer's (the
    /// build inherited it from a named `build` declared there): a tarball's path is relative
    /// to the directory of the file that names it. `None`: the layer's own file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_at: Option<Loc>,
    /// `compiler "gcc"` | `"clang"`
    pub compiler: Option<String>,
    /// One flag per string, in order.
    pub cflags: Vec<String>,
    pub cxxflags: Vec<String>,
    pub ldflags: Vec<String>,
    /// `type "release"` | `"debug"`
    pub build_type: Option<String>,
    /// Options for `./configure`.
    pub configure: Vec<String>,
    /// Options for `cmake` (given: the build uses cmake).
    pub cmake: Vec<String>,
    /// `link "dynamic"` | `"static"`
    pub link: Option<String>,
    /// `link "static" programs="mariadbd"`: the programs the build's own options link
    /// statically (every other one is dynamic); empty: `link` applies to every program.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub link_programs: Vec<String>,
    /// `strip #true`
    pub strip: Option<bool>,
    /// Extra Debian packages the build needs (beyond the compiler and, for a Debian source
    /// package, its build dependencies).
    pub deps: Vec<String>,
    /// Installation prefix (`/usr/local` if not given).
    pub prefix: Option<String>,
}

/// `server "name" { … }`: a configured database server.
///
/// `extends` is already resolved by the parser: unset fields come from the parent chain,
/// `options` and `env` are merged key-wise (child wins).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Server {
    pub name: Sp<String>,
    /// The parent as written (kept for display; its fields are already merged in).
    pub extends: Option<Sp<String>>,
    pub image: Option<Sp<String>>,
    /// `option key=value …` (may repeat); later wins.
    pub options: BTreeMap<String, Sp<Value>>,
    pub env: BTreeMap<String, Sp<String>>,
    /// "system" | "tcmalloc" | "jemalloc"
    pub allocator: Option<Sp<String>>,
    /// "socket" | "tcp" | "tls"
    pub connect: Option<Sp<String>>,
    pub cpus: Option<Sp<String>>,
    /// bytes, from a size like "4G"
    pub memory: Option<Sp<u64>>,
    /// The server runtime that starts it, e.g. "docker" | "process": a name of cairn-exec's
    /// runtime registry, checked by [`crate::check_vocabulary`].
    pub executor: Option<Sp<String>>,
    /// The database system the image's server is, e.g. "mariadb" (the default), "mysql":
    /// a name of cairn-exec's system registry, checked by [`crate::check_vocabulary`].
    #[serde(default)]
    pub system: Option<Sp<String>>,
    /// Where a trial's clients run relative to the server: "loopback" | "bridge" | "host".
    #[serde(default)]
    pub client: Option<Sp<String>>,
    /// `link rate="100mbit" delay="2ms"`: an emulated link on the server's network interface.
    #[serde(default)]
    pub link: Option<Sp<Link>>,
    /// `profile "cpu"`: every trial of this server also records its on-CPU profile (as a
    /// trials block's `profile` does for all its servers), so one block can compare a server
    /// profiled and unprofiled: what profiling costs.
    #[serde(default)]
    pub profile: Option<Sp<String>>,
}

/// `link rate=… delay=…` of a server: what the server's replies cross (tc netem).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Link {
    /// e.g. "100mbit"
    pub rate: Option<Sp<String>>,
    /// e.g. "2ms"
    pub delay: Option<Sp<String>>,
}

/// `dataset "name" { sysbench tables=4 rows=10000 engine="InnoDB" }`
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Dataset {
    pub name: Sp<String>,
    /// The generator node's name: "sysbench" | "smack" | "sqlbench".
    pub generator: Sp<String>,
    /// The generator node's properties.
    pub props: BTreeMap<String, Sp<Value>>,
}

/// `workload "name" { sysbench "oltp_read_only"; threads 2 8; duration "10s" }`
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Workload {
    pub name: Sp<String>,
    /// "sysbench" | "smack" | "sqlbench"
    pub driver: Sp<String>,
    /// The driver node's argument, e.g. "oltp_read_only".
    pub test: Sp<String>,
    /// Driver node properties, e.g. `sysbench "oltp_read_only" tool="external"`.
    pub driver_props: BTreeMap<String, Sp<Value>>,
    /// Every setting with more than one value is an axis of the trial matrix;
    /// single-valued settings are parameters too (an axis of length one).
    /// Durations are normalised to seconds (`Value::Float`) for keys.
    pub params: Vec<Param>,
}

/// `trials "name" { servers "a" "b"; dataset "d"; workload "w"; passes 3 }`
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Trials {
    pub name: Sp<String>,
    pub servers: Vec<Sp<String>>,
    pub dataset: Option<Sp<String>>,
    pub workload: Sp<String>,
    /// `passes N` (>= 1) or `passes min=3 max=12 until-ci="2%"`; defaults to 1, then
    /// located at the trials' name.
    pub passes: Sp<Passes>,
    /// Seed for the interleaved trial order; recorded.
    pub seed: Option<Sp<u64>>,
    /// `measured-by "study"`: this block's measurements are those another study made (its
    /// trials keyed with that study's name): declared reuse, shown in the report. This study
    /// measures none of them; a trial that study has not measured here fails, naming it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub measured_by: Option<Sp<String>>,
    /// `settle "60s"`, `runs 3`: what happens on each server start.
    #[serde(
        default,
        skip_serializing_if = "crate::lifecycle::Lifecycle::is_default"
    )]
    pub lifecycle: crate::lifecycle::Lifecycle,
    /// Host settings as factors (`io-scheduler "none" "mq-deadline"`, `sysctl …`): each an
    /// axis multiplying the workload's matrix points ([`crate::host_factors`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub host: Vec<crate::host_factors::HostFactor>,
    /// `cpus 1 2 cores="0,2"`: a factor of the block — every point is measured with the
    /// server given each of these numbers of CPUs (a cpuset of that many, chosen on the
    /// machine that measures; see `cairn_exec::cpu_sets`) and each named set of CPUs.
    /// Empty: the server's own `cpus`, if any.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cpus: Vec<Sp<crate::trial_cpus::CpuChoice>>,
    /// `cpus 1 2 clients="with-server"`: where the clients run under the factor
    /// ([`crate::trial_cpus::ClientCpus`]); absent: on the CPUs the server does not get.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpus_clients: Option<Sp<crate::trial_cpus::ClientCpus>>,
    /// `tie "threads" to="cpus" times=2`: only the points where one axis is a multiple of
    /// another are measured ([`crate::trial_ties`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ties: Vec<crate::trial_ties::Tie>,
    /// `profile "cpu"`: what each trial profiles over its measured window (one of
    /// `cairn_defs::workload::PROFILES`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile: Option<Sp<String>>,
}

/// How many passes a trials block measures: `passes N` is `min = max = N`; with `until-ci`
/// the engine adds passes beyond `min`, up to `max`, while a point's CI half-width (of
/// `metric`) is above the target (the rule is `cairn_analysis::adaptive::next_passes`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Passes {
    pub min: u32,
    pub max: u32,
    /// Target relative CI half-width (0.02 for "2%"); `None`: exactly `min` passes…
    /// unless `max` is above `min`, then the passes beyond `min` are never needed.
    pub until_ci: Option<f64>,
    /// `until="decided"`: passes beyond `min` run while a question the plan's tables and
    /// claims ask of the point is undecided, under the sequential design of
    /// `cairn_analysis::sequential` (its error rates kept over every look).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub until_decided: bool,
    /// The figure whose CI the rule watches (`metric="tps"`, the default).
    pub metric: String,
    /// `passes max=12 until="decided"` wrote no `min`: it is the fewest passes per side that
    /// could decide a comparison at the sequential design's first look, which depends on
    /// `max` and only `cairn_analysis::sequential::fewest_passes_that_could_decide` computes
    /// (this crate does no statistics): whoever resolves the plan sets `min` with
    /// [`Plan::set_default_passes`] (the CLI does, before resolving, and says which min it
    /// chose). Until then `min` is `max`: one look, the fixed test at `max` passes.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub default_min: bool,
}

impl Passes {
    /// The figure the rule watches when the plan names none.
    pub const DEFAULT_METRIC: &'static str = "tps";

    /// `passes N`: a fixed number of passes.
    pub fn fixed(n: u32) -> Passes {
        Passes {
            min: n,
            max: n,
            until_ci: None,
            until_decided: false,
            metric: Passes::DEFAULT_METRIC.to_string(),
            default_min: false,
        }
    }

    /// More passes may run than `min`: the ones beyond it are conditional.
    pub fn is_adaptive(&self) -> bool {
        self.max > self.min
    }
}

/// `analysis "name" { table metric="tps" rows="server" columns="threads" baseline="system" }`
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Analysis {
    pub name: Sp<String>,
    /// Trials it reads; empty = every trials block of the study.
    pub trials: Vec<Sp<String>>,
    /// `servers "a" "b"`: only these servers' trials; empty = every server's.
    #[serde(default)]
    pub servers: Vec<Sp<String>>,
    /// `where threads=8 …`: only the trials at these parameter values.
    #[serde(default)]
    pub filter: BTreeMap<String, Sp<Value>>,
    /// `exclude threads=64 server="pg"` (one map per `exclude`): the cells dropped, each
    /// the trials matching every one of its `key=value` (`server` names a server).
    #[serde(default)]
    pub exclude: Vec<BTreeMap<String, Sp<Value>>>,
    /// "table" | "compare" | "plot" | "scaling"
    pub kind: Sp<String>,
    pub props: BTreeMap<String, Sp<Value>>,
}

/// `claim "text" { metric "tps"; where threads=8; expect "a >= b" within="5%" }` (or
/// `expect "a > b" by="5%"`: a at least 5% above b; or `expect "a > b" about="50%"
/// tolerance="10%"`: a between 40% and 60% above b)
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Claim {
    pub name: Sp<String>,
    /// `trials "suite"`: the trials block it reads; `None` = every block of the study.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trials: Option<Sp<String>>,
    pub metric: Sp<String>,
    pub filter: BTreeMap<String, Sp<Value>>,
    pub expect: Sp<String>,
    /// The tolerance of `>=` / `<=`: a fraction, from a percentage like "5%".
    pub within: Option<Sp<f64>>,
    /// The least size of `>` / `<`: a fraction, from a percentage like "5%".
    #[serde(default)]
    pub by: Option<Sp<f64>>,
    /// A band's centre (`about="50%"`) and half-width (`tolerance="10%"`), fractions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub about: Option<Sp<f64>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tolerance: Option<Sp<f64>>,
    /// `operations "select" …` (bare `operations`: every one): the claim is checked on each
    /// of a suite's per-operation seconds (sql-bench's `<test>_s`, `<test>_<group>_s`) of
    /// these tests, and quantified by `for=`. `None`: one figure, `metric`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub operations: Option<Sp<Vec<String>>>,
    /// `for="most"` / `for="all"` on `expect`: how many of the operations (or of the values
    /// of `over`) it must hold on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quantifier: Option<Sp<String>>,
    /// `over="io-scheduler"` on `expect`: the claim is checked at each value of this
    /// parameter of its trials, quantified by `for=`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub over: Option<Sp<String>>,
    /// `trend="grows"` / `"shrinks"` on `expect`: the gain of one side over the other
    /// changes along the ordered parameter `x`, from its point `from` to `to` (default its
    /// lowest and highest value).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trend: Option<Sp<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub x: Option<Sp<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from: Option<Sp<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub to: Option<Sp<String>>,
}

/// `report "name" { analyses "tps" …; format "markdown" }`
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Report {
    pub name: Sp<String>,
    pub analyses: Vec<Sp<String>>,
    pub format: Option<Sp<String>>,
}

/// `step "name" { run "…"; needs "other"; input "f"; output "o"; … }`: a user's own command;
/// or, with `kind=`, `step "name" kind="note" key=value … { needs "other"; matrix …; passes … }`:
/// a step of a kind some crate registers beside the plan language's own nodes (its
/// properties are its definition, which the kind checks; `cairn check` refuses a kind no
/// registry holds, see [`crate::Vocabulary`]).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CommandStep {
    pub name: Sp<String>,
    /// The registered kind (`kind="…"`); `None` for a command.
    #[serde(default)]
    pub kind: Option<Sp<String>>,
    /// A registered kind's definition: the node's other properties.
    #[serde(default)]
    pub props: BTreeMap<String, Sp<Value>>,
    /// Shell command, run with `sh -c` in a fresh working directory (empty for a registered
    /// kind's step).
    pub run: Sp<String>,
    /// Outputs of other steps (or analyses), placed under `./<as>/`.
    pub needs: Vec<Need>,
    /// Files from the plan's directory, copied in and hashed into the key.
    pub inputs: Vec<Sp<String>>,
    /// Files the command must produce, relative to its working directory.
    pub outputs: Vec<Sp<String>>,
    /// Environment: the command sees only these plus PATH, HOME, CAIRN_* and its parameters.
    pub env: BTreeMap<String, Sp<String>>,
    /// `matrix { threads 1 2 4 }`: one step per point.
    pub matrix: Vec<Param>,
    /// `passes 3`: one step per pass index (0-based) per point. Defaults to 1 (located at the name).
    pub passes: Sp<u32>,
    /// `timeout "30s"`; never zero.
    pub timeout: Option<Sp<Duration>>,
    /// `measure #true` (or a bare `measure`): a measurement (exclusive lane, fingerprint + pass in its key).
    pub measure: bool,
    /// Directory of the plan file that declared it (inputs resolve against it).
    pub dir: PathBuf,
}

/// `needs "step"` or `needs "step" as="dir"`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Need {
    pub step: Sp<String>,
    /// Directory name the outputs appear under; defaults to the step's name.
    pub as_dir: String,
}

/// `SourceSpan` as `[offset, len]` (for the parse cache).
mod span_serde {
    use miette::SourceSpan;
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    pub fn serialize<S: Serializer>(s: &SourceSpan, ser: S) -> Result<S::Ok, S::Error> {
        (s.offset(), s.len()).serialize(ser)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(de: D) -> Result<SourceSpan, D::Error> {
        let (o, l) = <(usize, usize)>::deserialize(de)?;
        Ok((o, l).into())
    }
}
