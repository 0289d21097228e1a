//! Cleanup of what a killed run leaves: its containers and networks in the engine (by label),
//! throwaway build containers, its server socket directories (`cairn run` and `cairn clean`),
//! and everything cairn made at once, live runs' too (`cairn clean --all`).

use std::collections::HashMap;

use bollard::query_parameters::{ListContainersOptionsBuilder, ListNetworksOptionsBuilder};

use super::{is_not_found, remove_container_quiet, Docker, DockerError, Result, LABEL_RUN};

/// What a cleanup removed (container and network names).
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct CleanupReport {
    pub containers: Vec<String>,
    pub networks: Vec<String>,
}

impl CleanupReport {
    pub fn is_empty(&self) -> bool {
        self.containers.is_empty() && self.networks.is_empty()
    }
}

impl Docker {
    /// Remove all containers (running or not) and networks carrying `label` — `key` or
    /// `key=value`, and the key must start with `cairn.` — e.g. `cairn.run=<id>` of a killed run.
    pub fn cleanup_stale(&self, label: &str) -> Result<CleanupReport> {
        if !label.starts_with("cairn.") {
            return Err(DockerError::Invalid(format!(
                "refusing to clean up by non-cairn label `{label}`"
            )));
        }
        let report = remove_labelled(self, label, |_| true)?;
        if !report.is_empty() {
            tracing::info!("cleaned up {label}: {report:?}");
        }
        Ok(report)
    }

    /// Remove throwaway `cairn-build-…` containers left by a killed process.
    pub fn cleanup_build_containers(&self) -> Result<Vec<String>> {
        remove_build_containers(self, |_| true)
    }
}

/// Remove the `cairn-build-…` containers whose name `select` accepts; returns their names.
fn remove_build_containers(docker: &Docker, select: impl Fn(&str) -> bool) -> Result<Vec<String>> {
    let api = docker.api();
    docker.block_on(async {
        let mut filters = HashMap::new();
        filters.insert("name", vec!["cairn-build-"]);
        let list = api
            .list_containers(Some(
                ListContainersOptionsBuilder::new()
                    .all(true)
                    .filters(&filters)
                    .build(),
            ))
            .await
            .map_err(DockerError::api("list containers"))?;
        let mut removed = Vec::new();
        for c in list {
            let name = display_name(c.names.as_deref(), "");
            // the name filter matches substrings
            if let (Some(id), true) = (c.id, name.starts_with("cairn-build-") && select(&name)) {
                remove_container_quiet(api, &id).await?;
                removed.push(name);
            }
        }
        Ok(removed)
    })
}

/// Remove every container and network of a cairn run (a non-empty [`LABEL_RUN`], whatever the
/// run, live or not), and every throwaway `cairn-build-…` container: `cairn clean --all`. Running
/// containers are killed. Images are kept, and so are containers someone made from a cairn
/// image (they inherit its empty run label).
pub fn clean_all(docker: &Docker) -> Result<CleanupReport> {
    clean_runs(docker, |run| !run.is_empty(), true)
}

/// Remove the containers and networks of the runs for which `select(run_id)` is true, and if
/// `build_containers`, every `cairn-build-…` container too (those of cairn versions that did
/// not label them with their run).
pub fn clean_runs(
    docker: &Docker,
    select: impl Fn(&str) -> bool,
    build_containers: bool,
) -> Result<CleanupReport> {
    let mut report = remove_labelled(docker, LABEL_RUN, select)?;
    if build_containers {
        report.containers.extend(docker.cleanup_build_containers()?);
    }
    if !report.is_empty() {
        tracing::info!("cleaned up: {report:?}");
    }
    Ok(report)
}

/// Remove the containers, then the networks, that carry `label` (`key` or `key=value`) and
/// whose [`LABEL_RUN`] value (empty when they have none) `select` accepts.
fn remove_labelled(
    docker: &Docker,
    label: &str,
    select: impl Fn(&str) -> bool,
) -> Result<CleanupReport> {
    let api = docker.api();
    let mut report = CleanupReport::default();
    let run_of = |labels: Option<&HashMap<String, String>>| {
        labels
            .and_then(|l| l.get(LABEL_RUN))
            .map_or(String::new(), String::clone)
    };
    docker.block_on(async {
        let mut filters = HashMap::new();
        filters.insert("label", vec![label]);
        let containers = api
            .list_containers(Some(
                ListContainersOptionsBuilder::new()
                    .all(true)
                    .filters(&filters)
                    .build(),
            ))
            .await
            .map_err(DockerError::api("list containers"))?;
        for c in containers {
            let Some(id) = c.id.as_ref() else { continue };
            if !select(&run_of(c.labels.as_ref())) {
                continue;
            }
            remove_container_quiet(api, id).await?;
            report.containers.push(display_name(c.names.as_deref(), id));
        }
        let networks = api
            .list_networks(Some(
                ListNetworksOptionsBuilder::new().filters(&filters).build(),
            ))
            .await
            .map_err(DockerError::api("list networks"))?;
        for n in networks {
            let Some(name) = n.name.as_ref() else {
                continue;
            };
            if !select(&run_of(n.labels.as_ref())) {
                continue;
            }
            match api.remove_network(name).await {
                Ok(()) => report.networks.push(name.clone()),
                Err(e) if is_not_found(&e) => {}
                Err(e) => return Err(DockerError::api(format!("remove network {name}"))(e)),
            }
        }
        Ok::<_, DockerError>(())
    })?;
    Ok(report)
}

fn display_name(names: Option<&[String]>, id: &str) -> String {
    names
        .and_then(|n| n.first())
        .map_or(id, |n| n.as_str())
        .trim_start_matches('/')
        .to_string()
}

/// This process's run id, `run-<pid>-<start ticks>`: containers and networks of a run carry it
/// as their [`LABEL_RUN`], so a later process can tell whether the run that made them is gone.
pub fn this_run_id() -> &'static str {
    static ID: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    ID.get_or_init(|| {
        let pid = std::process::id();
        format!("run-{pid}-{}", process_start_ticks(pid).unwrap_or(0))
    })
}

/// When process `pid` started (clock ticks since boot, field 22 of `/proc/<pid>/stat`):
/// with the pid, it names a process even after the pid is reused.
fn process_start_ticks(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // the command name (field 2) may hold spaces and parentheses: count from the last ')'
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_whitespace().nth(19)?.parse().ok()
}

/// Whether `run_id` is a cairn run id ([`this_run_id`]'s form) whose process has ended.
/// Anything else (a live run, a test's own run ids) is not stale.
pub fn is_stale_run(run_id: &str) -> bool {
    let Some(rest) = run_id.strip_prefix("run-") else {
        return false;
    };
    let Some((pid, ticks)) = rest.split_once('-') else {
        return false;
    };
    let (Ok(pid), Ok(ticks)) = (pid.parse::<u32>(), ticks.parse::<u64>()) else {
        return false;
    };
    // A pid alone could be reused by another process: the start ticks tell them apart. Ticks
    // 0 mean the run could not read them (no /proc), and without /proc here nothing can be
    // told: either way a live run must never be taken for a dead one.
    if ticks == 0 || process_start_ticks(std::process::id()).is_none() {
        return false;
    }
    process_start_ticks(pid) != Some(ticks)
}

/// Whether a throwaway `cairn-build-<pid>-…` container belongs to a process that has ended.
fn is_stale_build_container(name: &str) -> bool {
    let Some(rest) = name.trim_start_matches('/').strip_prefix("cairn-build-") else {
        return false;
    };
    match rest.split('-').next().and_then(|p| p.parse::<u32>().ok()) {
        Some(pid) => !std::path::Path::new(&format!("/proc/{pid}")).exists(),
        None => false,
    }
}

/// What killed runs left: containers and networks of runs whose process has ended
/// ([`is_stale_run`]) and build containers of ended processes. Live runs, including other
/// cairn processes working now, are left alone. `cairn run` calls this before it starts, and
/// `cairn clean` is this.
pub fn clean_stale(docker: &Docker) -> Result<CleanupReport> {
    let mut report = clean_runs(docker, is_stale_run, false)?;
    report
        .containers
        .extend(remove_build_containers(docker, is_stale_build_container)?);
    Ok(report)
}

/// The prefix of a server socket directory made by run `run_id` in the temp directory:
/// `cairn-<run id>-` (the run id's characters other than ASCII letters, digits and `-` become
/// `_`). It names the run so that, once the run's process is gone, [`clean_stale_socket_dirs`]
/// can tell the directory is stale. Short, because sockets have a 108-byte path limit.
pub fn socket_dir_prefix(run_id: &str) -> String {
    let safe: String = run_id
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    format!("cairn-{safe}-")
}

/// The run id in a socket directory name made with [`socket_dir_prefix`] from a
/// [`this_run_id`]-form id (`cairn-run-<pid>-<ticks>-<random>`); `None` for anything else.
fn socket_dir_run(name: &str) -> Option<String> {
    let rest = name.strip_prefix("cairn-run-")?;
    let mut parts = rest.splitn(3, '-');
    let pid = parts.next().filter(|p| p.parse::<u32>().is_ok())?;
    let ticks = parts.next().filter(|t| t.parse::<u64>().is_ok())?;
    parts.next().filter(|random| !random.is_empty())?;
    Some(format!("run-{pid}-{ticks}"))
}

/// Remove the server socket directories in `temp` (the system temp directory in cairn) left
/// by runs whose process has ended ([`is_stale_run`]): a SIGKILL gives a run no chance to
/// remove its own. Directories of live runs, and anything not named like one of cairn's, are
/// left alone. Returns the directories removed; one that cannot be removed is logged and kept.
pub fn clean_stale_socket_dirs(temp: &std::path::Path) -> Vec<std::path::PathBuf> {
    let Ok(entries) = std::fs::read_dir(temp) else {
        return Vec::new();
    };
    let mut removed = Vec::new();
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let stale = socket_dir_run(&name).is_some_and(|run| is_stale_run(&run));
        // never follow a symlink someone else put there
        if !stale || !entry.file_type().is_ok_and(|t| t.is_dir()) {
            continue;
        }
        let path = entry.path();
        match std::fs::remove_dir_all(&path) {
            Ok(()) => removed.push(path),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => tracing::warn!(
                "cannot remove stale socket directory {}: {e}",
                path.display()
            ),
        }
    }
    removed.sort();
    removed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_ids_name_live_or_ended_processes() {
        let me = this_run_id();
        assert!(me.starts_with(&format!("run-{}-", std::process::id())));
        assert!(!is_stale_run(me), "this process is alive");
        // pid 1 is alive, but did not start at tick 1 (boot) + never at u64::MAX
        assert!(is_stale_run(&format!("run-1-{}", u64::MAX)));
        // a pid that cannot exist
        assert!(is_stale_run("run-4294967295-5"));
        // not cairn's form: never touched
        assert!(!is_stale_run("t-123-test"));
        assert!(!is_stale_run("run-x-y"));
        // a reused pid: this very pid with other start ticks is another (ended) process
        assert!(is_stale_run(&format!("run-{}-1", std::process::id())));
        // unknown start ticks: cannot be told apart from a live run, so never stale
        assert!(!is_stale_run("run-4294967295-0"));
        assert!(is_stale_build_container("/cairn-build-4294967295-ab-0"));
        assert!(!is_stale_build_container(&format!(
            "cairn-build-{}-ab-0",
            std::process::id()
        )));
        assert!(!is_stale_build_container("cairn-run-x"));
    }

    #[test]
    fn socket_dirs_name_their_run_and_only_dead_runs_are_swept() {
        let me = this_run_id();
        let prefix = socket_dir_prefix(me);
        assert!(prefix.starts_with(&format!("cairn-{me}-")), "{prefix}");
        assert_eq!(socket_dir_prefix("t/1 x"), "cairn-t_1_x-");
        assert_eq!(
            socket_dir_run(&format!("{prefix}AbC123")).as_deref(),
            Some(me)
        );
        assert_eq!(socket_dir_run("cairn-run-12-34"), None, "no random part");
        assert_eq!(
            socket_dir_run("cairn-AbC123"),
            None,
            "the old, run-less form"
        );
        assert_eq!(socket_dir_run("cairn-run-x-34-ab"), None);

        let temp = tempfile::tempdir().expect("temp dir");
        let live = temp.path().join(format!("{prefix}live01"));
        let dead = temp.path().join("cairn-run-4294967295-5-dead01");
        let foreign = temp.path().join("cairn-foreign");
        let dead_file = temp.path().join("cairn-run-4294967295-5-file01");
        for d in [&live, &dead, &foreign] {
            std::fs::create_dir(d).expect("mkdir");
        }
        std::fs::write(dead.join("mysqld.sock"), "").expect("socket stand-in");
        std::fs::write(&dead_file, "").expect("file");

        assert_eq!(clean_stale_socket_dirs(temp.path()), vec![dead.clone()]);
        assert!(!dead.exists());
        assert!(live.exists(), "a live run's directory is kept");
        assert!(foreign.exists(), "not cairn's form: kept");
        assert!(dead_file.exists(), "only directories are swept");
    }
}
