//! Cleanup of what cairn leaves in the engine: a killed run's containers and networks (by label), throwaway build containers, and everything at once for `cairn clean`.

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
        let api = &self.inner.api;
        let mut report = CleanupReport::default();
        self.block_on(async {
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
                if let Some(id) = c.id {
                    remove_container_quiet(api, &id).await?;
                    let name = c.names.and_then(|n| n.into_iter().next()).unwrap_or(id);
                    report
                        .containers
                        .push(name.trim_start_matches('/').to_string());
                }
            }
            let networks = api
                .list_networks(Some(
                    ListNetworksOptionsBuilder::new().filters(&filters).build(),
                ))
                .await
                .map_err(DockerError::api("list networks"))?;
            for n in networks {
                let Some(name) = n.name else { continue };
                match api.remove_network(&name).await {
                    Ok(()) => report.networks.push(name),
                    Err(e) if is_not_found(&e) => {}
                    Err(e) => return Err(DockerError::api(format!("remove network {name}"))(e)),
                }
            }
            Ok::<_, DockerError>(())
        })?;
        if !report.is_empty() {
            tracing::info!("cleaned up {label}: {report:?}");
        }
        Ok(report)
    }

    /// Remove throwaway `cairn-build-…` containers left by a killed process.
    pub fn cleanup_build_containers(&self) -> Result<Vec<String>> {
        let api = &self.inner.api;
        self.block_on(async {
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
                let name = c
                    .names
                    .and_then(|n| n.into_iter().next())
                    .unwrap_or_default();
                if let (Some(id), true) = (
                    c.id,
                    name.trim_start_matches('/').starts_with("cairn-build-"),
                ) {
                    remove_container_quiet(api, &id).await?;
                    removed.push(name.trim_start_matches('/').to_string());
                }
            }
            Ok(removed)
        })
    }
}

/// Remove every container and network carrying a [`LABEL_RUN`] label (whatever the run), and
/// every throwaway `cairn-build-…` container: what `cairn clean` does. Running containers are
/// killed. Images are kept.
pub fn clean_all(docker: &Docker) -> Result<CleanupReport> {
    clean_runs(docker, |_| true, true)
}

/// Remove the containers and networks of the runs for which `select(run_id)` is true, and if
/// `build_containers`, the `cairn-build-…` containers too (they carry no run label).
pub fn clean_runs(
    docker: &Docker,
    select: impl Fn(&str) -> bool,
    build_containers: bool,
) -> Result<CleanupReport> {
    let api = docker.api();
    let mut report = CleanupReport::default();
    docker.block_on(async {
        let mut filters = HashMap::new();
        filters.insert("label", vec![LABEL_RUN]);
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
            let run = c.labels.as_ref().and_then(|l| l.get(LABEL_RUN));
            let (Some(id), Some(run)) = (c.id.as_ref(), run) else {
                continue;
            };
            if !select(run) {
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
            let run = n.labels.as_ref().and_then(|l| l.get(LABEL_RUN));
            let (Some(name), Some(run)) = (n.name.as_ref(), run) else {
                continue;
            };
            if !select(run) {
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
    if build_containers {
        report.containers.extend(docker.cleanup_build_containers()?);
    }
    if !report.is_empty() {
        tracing::info!("cleaned up: {report:?}");
    }
    Ok(report)
}

fn display_name(names: Option<&[String]>, id: &str) -> String {
    names
        .and_then(|n| n.first())
        .map_or(id, |n| n.as_str())
        .trim_start_matches('/')
        .to_string()
}
