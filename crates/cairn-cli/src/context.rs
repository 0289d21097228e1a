//! Shared set-up for commands: load and resolve a plan (errors → exit 2 with a
//! diagnostic), open the store, probe the machine, find the cache directory.

use std::path::{Path, PathBuf};

use cairn_graph::{Fingerprint, Selector, StepGraph};
use cairn_store::Store;

use crate::BAD_INPUT;

/// An error already reported to the user, carrying the exit code to use.
#[derive(Debug)]
pub struct Exit(pub i32);

/// For `map_err`: print `error: …` and exit with `code`.
pub fn fail<E: std::fmt::Display>(code: i32) -> impl FnOnce(E) -> Exit {
    move |e| {
        eprintln!("error: {e}");
        Exit(code)
    }
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
        eprint!("{}", cairn_plan::render(&e));
        Exit(BAD_INPUT)
    };
    let (plan, from_cache) = match cache {
        Some(dir) => cairn_plan::load_cached(path, dir).map_err(report)?,
        None => (cairn_plan::load(path).map_err(report)?, false),
    };
    match cairn_graph::resolve(&plan) {
        Ok(graph) => Ok((plan, graph)),
        // a cached plan skipped the checks against other files: parse again so the
        // error points at the plan text
        Err(_) if from_cache => load_graph(path),
        Err(e) => {
            eprintln!("error: {e}");
            Err(Exit(BAD_INPUT))
        }
    }
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

/// This machine's fingerprint for `graph`'s measurements: the host's facts, and as the
/// runtime the Docker Engine's version when a measurement runs in a container.
pub fn fingerprint(graph: &StepGraph) -> Fingerprint {
    let h = cairn_exec::machine::probe();
    let in_docker = graph
        .steps
        .iter()
        .any(|s| s.measure && cairn_engine::status::needs_docker(s));
    let runtime = if in_docker {
        match cairn_engine::image_step::docker() {
            Ok(d) => d
                .engine_version()
                .unwrap_or_else(|e| format!("Docker Engine (version unknown: {e})")),
            Err(_) => "Docker Engine (unreachable)".into(),
        }
    } else {
        "host".into()
    };
    Fingerprint {
        cpu_model: h.cpu_model,
        cores: h.cores,
        threads: h.threads,
        memory_bytes: h.memory_bytes,
        kernel: h.kernel,
        runtime,
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

/// Before a run that uses the Docker Engine: remove the containers and networks that killed
/// runs left (their process is gone), and say so. Live runs are not touched.
pub fn clean_stale_containers(graph: &StepGraph) {
    if !graph.steps.iter().any(cairn_engine::status::needs_docker) {
        return;
    }
    // without an engine the steps that need it fail with the message on how to start one
    let Ok(d) = cairn_engine::image_step::docker() else {
        return;
    };
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
}
