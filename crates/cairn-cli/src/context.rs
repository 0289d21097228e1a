//! Shared set-up for commands: load and resolve a plan (errors → exit 2 with a
//! diagnostic), open the store, probe the machine, find the cache directory.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

use cairn_engine::{Env, Registry};
use cairn_exec::cancel::CancelToken;
use cairn_graph::{Fingerprint, Selector, StepGraph};
use cairn_store::Store;

use crate::BAD_INPUT;

pub use crate::exit::{fail, Exit};

/// Whether plan diagnostics are printed as JSON on stdout (`cairn check --json`) instead of
/// rendered for people on stderr. Set once, before the plan is read.
static DIAGNOSTICS_AS_JSON: AtomicBool = AtomicBool::new(false);

/// From now on, plan diagnostics are JSON lines on stdout (see [`print_diagnostic`]).
pub fn diagnostics_as_json() {
    DIAGNOSTICS_AS_JSON.store(true, Ordering::Relaxed);
}

/// A bad plan's diagnostic: rendered with its source on stderr, or, after
/// [`diagnostics_as_json`], one JSON object on stdout (`{"valid": false, "diagnostic": …}`,
/// the diagnostic as miette's JSON: message, severity, file name, labelled byte spans).
pub fn print_diagnostic(e: &dyn miette::Diagnostic) {
    if DIAGNOSTICS_AS_JSON.load(Ordering::Relaxed) {
        let mut text = String::new();
        let _ = miette::JSONReportHandler::new().render_report(&mut text, e);
        let diagnostic: serde_json::Value = serde_json::from_str(&text)
            .unwrap_or_else(|_| serde_json::json!({"message": e.to_string()}));
        println!(
            "{}",
            serde_json::json!({"valid": false, "diagnostic": diagnostic})
        );
    } else {
        eprint!("{}", cairn_plan::render(e));
    }
}

/// A bad plan's error that carries no source span, printed as [`print_diagnostic`] would.
pub fn print_error(message: &str) {
    if DIAGNOSTICS_AS_JSON.load(Ordering::Relaxed) {
        println!(
            "{}",
            serde_json::json!({"valid": false, "diagnostic": {"message": message, "severity": "error"}})
        );
    } else {
        eprintln!("error: {message}");
    }
}

/// The plan parameters' values given with `--set` (set before any plan is read; a fleet's
/// worker sets its job's instead).
static PLAN_SETTINGS: std::sync::Mutex<cairn_plan::Settings> =
    std::sync::Mutex::new(cairn_plan::Settings::new());

/// From now on, every plan is read with these parameter values (`--set`, or a fleet job's);
/// a command that reads a bundle adds the values it was made with ([`plan_settings`]).
pub fn set_plan_settings(settings: cairn_plan::Settings) {
    *PLAN_SETTINGS.lock().unwrap_or_else(|e| e.into_inner()) = settings;
}

/// The parameter values plans are read with (empty: every parameter at its default).
pub fn plan_settings() -> cairn_plan::Settings {
    PLAN_SETTINGS
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .clone()
}

/// `parameters: scale = published (--set), threads = 1 4 (default)` for a plan that declares
/// parameters: what `cairn check`, `plan` and `run` show before anything else.
pub fn parameters_line(plan: &cairn_plan::Plan) -> Option<String> {
    if plan.params.is_empty() {
        return None;
    }
    let each: Vec<String> = plan
        .params
        .iter()
        .map(|p| {
            let how = if p.set { "--set" } else { "default" };
            format!("{} = {} ({how})", p.name.value, p.value)
        })
        .collect();
    Some(format!("parameters: {}", each.join(", ")))
}

pub fn load_graph(path: &Path) -> Result<(cairn_plan::Plan, StepGraph), Exit> {
    load_graph_cached(path, None)
}

/// Load through the parse cache under `cache` (when given), then resolve.
pub fn load_graph_cached(
    path: &Path,
    cache: Option<&Path>,
) -> Result<(cairn_plan::Plan, StepGraph), Exit> {
    let report = |e: cairn_plan::PlanError| {
        print_diagnostic(&e);
        Exit(BAD_INPUT)
    };
    let settings = plan_settings();
    let (mut plan, from_cache) = match cache {
        Some(dir) => cairn_plan::load_cached_with(path, dir, &settings).map_err(report)?,
        None => (
            cairn_plan::load_with(path, &settings).map_err(report)?,
            false,
        ),
    };
    // on stderr even with --json: stdout's JSON says whether the plan is valid, and it is
    for warning in &plan.warnings {
        eprint!("{}", cairn_plan::render(warning));
    }
    crate::preflight::set_defaults(&mut plan);
    crate::preflight::names(&plan).map_err(report)?;
    match cairn_graph::resolve_with_kinds(&plan, &cairn_kinds::plan_step_kinds()) {
        Ok(mut graph) => {
            graph.lock = read_lock(path)?;
            Ok((plan, graph))
        }
        // a cached plan skipped the checks against other files: parse again so the
        // error points at the plan text
        Err(_) if from_cache => load_graph(path),
        Err(e) => {
            print_error(&e.to_string());
            Err(Exit(BAD_INPUT))
        }
    }
}

/// The lock file that belongs to a plan file: `<plan>.lock` beside it (`cairn lock`).
pub fn lock_path(plan: &Path) -> PathBuf {
    let mut name = plan.file_name().unwrap_or_default().to_os_string();
    name.push(".lock");
    plan.with_file_name(name)
}

/// The plan's lock, if it has one; a lock that cannot be read is bad input.
pub fn read_lock(plan: &Path) -> Result<Option<cairn_defs::Lock>, Exit> {
    let path = lock_path(plan);
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => {
            eprintln!("error: cannot read the lock {}: {e}", path.display());
            return Err(Exit(BAD_INPUT));
        }
    };
    cairn_defs::Lock::parse(&text).map(Some).map_err(|e| {
        eprintln!(
            "error: {} is not a lock cairn can read: {e}; write it again with `cairn lock {}`",
            path.display(),
            plan.display()
        );
        Exit(BAD_INPUT)
    })
}

/// The results directory a command uses: `results` as given — unless it is the default,
/// relative `results` and the current directory holds no `results/store`: then the nearest
/// ancestor's that does (as git finds its repository), so `cd plans && cairn plan x.kdl`
/// reads the project's store instead of making a new one beside the plans.
pub fn discover_results(results: &Path) -> std::path::PathBuf {
    if results != Path::new("results") || results.join("store").is_dir() {
        return results.to_path_buf();
    }
    let Ok(here) = std::env::current_dir() else {
        return results.to_path_buf();
    };
    here.ancestors()
        .skip(1)
        .map(|dir| dir.join("results"))
        .find(|r| r.join("store").is_dir())
        .unwrap_or_else(|| results.to_path_buf())
}

pub fn open_store(results: &Path) -> Result<Store, Exit> {
    Store::open(results).map_err(|e| {
        eprintln!(
            "error: cannot open the store under {}: {e}",
            results.display()
        );
        Exit(BAD_INPUT)
    })
}

/// Take the store's lock, waiting (and saying so) while another cairn holds it.
pub fn lock_store(store: &Store) -> Result<cairn_store::StoreLock, Exit> {
    store
        .lock(|holder| eprintln!("waiting for another cairn to finish with this store ({holder})…"))
        .map_err(fail(BAD_INPUT))
}

pub fn selectors(raw: &[String]) -> Result<Vec<Selector>, Exit> {
    raw.iter()
        .map(|s| Selector::parse(s))
        .collect::<Result<_, _>>()
        .map_err(fail(BAD_INPUT))
}

/// Selectors that must each match at least one step: a typo is bad input, not an empty run.
pub fn matching_selectors(
    graph: &StepGraph,
    plan: &Path,
    raw: &[String],
) -> Result<Vec<Selector>, Exit> {
    let sels = selectors(raw)?;
    for (text, sel) in raw.iter().zip(&sels) {
        if !graph.steps.iter().any(|s| sel.matches(s)) {
            eprintln!(
                "error: no step of {} matches `{text}` (see `cairn plan -v {}` for the addresses)",
                plan.display(),
                plan.display()
            );
            return Err(Exit(BAD_INPUT));
        }
    }
    Ok(sels)
}

/// What the engine uses of this machine for one command: the step kinds and the machine
/// they run on (its server runtimes, the container engine, the local directories, the run's
/// cancellation), made once and lent to the engine as an [`Env`].
pub struct Machine {
    pub kinds: Registry,
    pub host: cairn_kinds::Host,
    /// The exact facts behind the fingerprint, once probed.
    details: std::sync::OnceLock<serde_json::Value>,
}

/// The environment variable that makes this machine pretend to be another: a JSON object
/// of fingerprint fields to replace (`{"cpu_model":"Simulated CPU"}`). For tests of
/// reproduction on "another machine"; the override is recorded in the exact facts.
pub const SIMULATED_MACHINE_ENV: &str = "CAIRN_SIMULATED_MACHINE";

fn simulated_machine() -> Option<serde_json::Value> {
    let text = std::env::var(SIMULATED_MACHINE_ENV).ok()?;
    match serde_json::from_str::<serde_json::Value>(&text) {
        Ok(v) if v.is_object() => Some(v),
        _ => {
            eprintln!("warning: ${SIMULATED_MACHINE_ENV} is not a JSON object; ignored");
            None
        }
    }
}

fn apply_simulation(fp: &mut Fingerprint, o: &serde_json::Value) {
    let mut v = serde_json::to_value(&*fp).expect("serialises");
    if let (Some(m), Some(o)) = (v.as_object_mut(), o.as_object()) {
        for (k, val) in o {
            if m.contains_key(k) {
                m.insert(k.clone(), val.clone());
            }
        }
    }
    if let Ok(new) = serde_json::from_value(v) {
        *fp = new;
    }
}

/// The results directory of this invocation (for its disk's I/O scheduler).
fn results_dir() -> PathBuf {
    std::env::var_os("CAIRN_RESULTS").map_or_else(|| PathBuf::from("results"), PathBuf::from)
}

impl Machine {
    pub fn new(cache: PathBuf) -> Machine {
        Machine::with_cancel(cache, CancelToken::new())
    }

    /// A machine whose runs stop when `cancel` is tripped (by the stop-signal handler).
    pub fn with_cancel(cache: PathBuf, cancel: CancelToken) -> Machine {
        Machine {
            kinds: cairn_kinds::standard_registry(),
            host: cairn_kinds::Host::new(cache, cancel),
            details: std::sync::OnceLock::new(),
        }
    }

    /// The machine-local cache directory.
    pub fn cache(&self) -> &Path {
        &self.host.cache_root
    }

    /// The engine's view for `graph`'s study in `store`.
    pub fn env<'a>(
        &'a self,
        graph: &'a StepGraph,
        store: &'a Store,
        fingerprint: &'a Fingerprint,
    ) -> Env<'a> {
        Env {
            study: &graph.study,
            store,
            fingerprint,
            read_classes: None,
            machine: self.details(),
            kinds: &self.kinds,
            lock: graph.lock.as_ref(),
            run_id: cairn_exec::docker::this_run_id(),
            host: &self.host,
        }
    }

    /// This machine's fingerprint for `graph`'s measurements: the class of the host's facts,
    /// and as the runtime the container engine's version when a measurement runs in a
    /// container. The exact facts are kept for [`Machine::details`].
    pub fn fingerprint(&self, graph: &StepGraph) -> Fingerprint {
        let in_container = graph
            .steps
            .iter()
            .any(|s| s.measure && cairn_kinds::uses_container_engine(&self.host.runtimes, s));
        self.fingerprint_for(in_container)
    }

    /// The fingerprint of measurements in a container (`in_container`) or on the host.
    pub fn fingerprint_for(&self, in_container: bool) -> Fingerprint {
        let mut disks: Vec<(&str, PathBuf)> = vec![
            ("store", results_dir()),
            ("cache", self.host.cache_root.clone()),
        ];
        let mut engine_source = None;
        let runtime = if in_container {
            // remembered while the engine's socket is the one that answered: a run that
            // only reads results never waits for the engine, nor needs one running
            let facts = cairn_exec::docker::engine_facts(
                &self.host.cache_root,
                self.host.runtimes.engine_connection(),
            );
            if let Some(root) = facts.root_dir {
                disks.push(("container engine", root));
            }
            engine_source = Some(facts.source);
            facts.version
        } else {
            "host".into()
        };
        let disk_refs: Vec<(&str, &Path)> = disks.iter().map(|(l, p)| (*l, p.as_path())).collect();
        let h = cairn_exec::machine::probe(&disk_refs);
        let mut fp = Fingerprint {
            cpu_model: h.cpu_model.clone(),
            cores: h.cores,
            threads: h.threads,
            memory_gib: cairn_graph::fingerprint::memory_class(h.memory_bytes),
            kernel: cairn_graph::fingerprint::kernel_class(&h.kernel),
            runtime: cairn_graph::fingerprint::runtime_class(&runtime),
        };
        let mut details = serde_json::to_value(&h).expect("serialises");
        details["runtime"] = serde_json::json!(runtime);
        if engine_source == Some(cairn_exec::docker::engine_facts::FactsSource::LastSeen) {
            details["runtime_note"] =
                serde_json::json!("as last seen here: the engine does not answer now");
        }
        if let Some(o) = simulated_machine() {
            apply_simulation(&mut fp, &o);
            details["simulated"] = o;
        }
        let _ = self.details.set(details);
        fp
    }

    /// The exact facts of this machine as [`Machine::fingerprint`] last probed them
    /// (`null` before), recorded beside each measurement.
    pub fn details(&self) -> &serde_json::Value {
        self.details.get().unwrap_or(&serde_json::Value::Null)
    }

    /// For a run: the first time it uses the container engine, remove the containers and
    /// networks that killed runs left (their process is gone), and say so. Live runs are not
    /// touched; a run that never needs the engine never connects to it.
    pub fn sweep_stale_containers_on_connect(&self) {
        self.host
            .runtimes
            .engine_connection()
            .on_connect(sweep_stale_containers);
    }

    /// After a run: if it used the container engine, look once more (a run killed while
    /// its request to create a container or network was in flight leaves the engine to
    /// finish it, possibly after the first sweep).
    pub fn sweep_stale_containers_if_connected(&self) {
        let engine = self.host.runtimes.engine_connection();
        if engine.is_connected() {
            if let Ok(d) = engine.get_ref() {
                sweep_stale_containers(d);
            }
        }
    }
}

/// Remove the containers and networks of runs whose process is gone, then their socket
/// directories, and say so. The directories again: a killed run's server container may
/// still have been writing into its bind-mounted datadir there when the run's start
/// removed them, before the engine was connected.
fn sweep_stale_containers(d: &cairn_exec::docker::Docker) {
    match cairn_exec::docker::clean_stale(d) {
        Ok(r) if !r.is_empty() => eprintln!(
            "removed what an earlier, killed run left: {} container(s) {:?}, {} network(s) {:?}",
            r.containers.len(),
            r.containers,
            r.networks.len(),
            r.networks
        ),
        Ok(_) => {}
        Err(e) => eprintln!("warning: could not clean up after earlier runs: {e}"),
    }
    remove_stale_socket_dirs();
}

/// Remove the server socket directories that earlier, killed runs left in the temp directory
/// (those of live runs stay), saying so on stderr.
pub fn remove_stale_socket_dirs() {
    let removed = cairn_exec::docker::cleanup::clean_stale_socket_dirs(&std::env::temp_dir());
    if !removed.is_empty() {
        eprintln!(
            "removed what an earlier, killed run left: {} socket director{} {:?}",
            removed.len(),
            if removed.len() == 1 { "y" } else { "ies" },
            removed
        );
    }
}

pub fn cache_dir(explicit: Option<&Path>) -> PathBuf {
    if let Some(p) = explicit {
        return p.to_path_buf();
    }
    if let Some(x) = std::env::var_os("XDG_CACHE_HOME") {
        return PathBuf::from(x).join("cairn");
    }
    if let Some(h) = std::env::var_os("HOME") {
        return PathBuf::from(h).join(".cache").join("cairn");
    }
    std::env::temp_dir().join("cairn-cache")
}
