//! Run networks: every run's servers and clients share a bridge network `cairn-<run>`,
//! created on first use and leased by each server of this process, so the last server to stop
//! removes it — and never while another step's container is created but not yet started.

use std::collections::HashMap;

use bollard::models::NetworkCreateRequest;
use bollard::query_parameters::ListNetworksOptionsBuilder;

use crate::docker::{is_not_found, labels, sanitize_name, Docker, DockerError, Result, LABEL_RUN};

/// The network name of a run.
pub fn network_name(run_id: &str) -> String {
    format!("cairn-{}", sanitize_name(run_id))
}

impl Docker {
    /// The run's network `cairn-<run>`, created (bridge, labelled) if missing. It is not
    /// leased: servers lease it through [`Docker::start_server`], which is what keeps it alive.
    pub fn ensure_network(&self, run_id: &str) -> Result<String> {
        let _leases = self.network_leases();
        self.create_network_if_missing(run_id)
    }

    /// [`Docker::ensure_network`], and count one more server of this process on it; every
    /// lease ends with [`Docker::release_network`].
    pub fn lease_network(&self, run_id: &str) -> Result<String> {
        let mut leases = self.network_leases();
        let name = self.create_network_if_missing(run_id)?;
        *leases.entry(name.clone()).or_insert(0) += 1;
        Ok(name)
    }

    /// End one lease of `network`; the last one removes the network if no container is
    /// attached (a missing network is fine). Returns whether it was removed.
    pub fn release_network(&self, network: &str) -> Result<bool> {
        let mut leases = self.network_leases();
        if let Some(n) = leases.get_mut(network) {
            *n = n.saturating_sub(1);
            if *n > 0 {
                return Ok(false);
            }
            leases.remove(network);
        }
        let api = &self.inner.api;
        self.block_on(async {
            match api.inspect_network(network, None).await {
                Ok(n) if n.containers.as_ref().is_none_or(|c| c.is_empty()) => {
                    match api.remove_network(network).await {
                        Ok(()) => Ok(true),
                        Err(e) if is_not_found(&e) => Ok(false),
                        Err(e) => Err(DockerError::api(format!("remove network {network}"))(e)),
                    }
                }
                Ok(_) => Ok(false),
                Err(e) if is_not_found(&e) => Ok(false),
                Err(e) => Err(DockerError::api(format!("inspect network {network}"))(e)),
            }
        })
    }

    fn network_leases(&self) -> std::sync::MutexGuard<'_, HashMap<String, usize>> {
        self.inner
            .network_leases
            .lock()
            .unwrap_or_else(|p| p.into_inner())
    }

    /// Callers hold the lease lock, so two steps never both create the network.
    fn create_network_if_missing(&self, run_id: &str) -> Result<String> {
        let name = network_name(run_id);
        let api = &self.inner.api;
        self.block_on(async {
            let mut filters = HashMap::new();
            filters.insert("name", vec![name.as_str()]);
            let existing = api
                .list_networks(Some(
                    ListNetworksOptionsBuilder::new().filters(&filters).build(),
                ))
                .await
                .map_err(DockerError::api("list networks"))?;
            // the name filter matches substrings
            if existing
                .iter()
                .any(|n| n.name.as_deref() == Some(name.as_str()))
            {
                return Ok(());
            }
            let req = NetworkCreateRequest {
                name: name.clone(),
                driver: Some("bridge".into()),
                labels: Some(labels([(LABEL_RUN, run_id)])),
                ..Default::default()
            };
            api.create_network(req)
                .await
                .map_err(DockerError::api(format!("create network {name}")))?;
            Ok(())
        })?;
        Ok(name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        assert_eq!(network_name("R 1"), "cairn-r-1");
    }
}
