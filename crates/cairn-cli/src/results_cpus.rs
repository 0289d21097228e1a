//! Where a trial of the `cpus` factor ran, as `cairn results` shows it: the server's CPUs
//! as the trial read them back from the running server, and the clients' (or `shared`).

use serde_json::Value;

/// `0 (clients 1)`, `0-1 (clients shared)` from a trial record's `extra.cpus`; `None` for a
/// trial without the factor.
pub(crate) fn placed(extra_cpus: Option<&Value>) -> Option<String> {
    let cpus = extra_cpus?;
    let server = cpus["server_affinity"].as_str()?;
    let clients = cpus["clients"].as_str().unwrap_or("-");
    Some(format!("{server} (clients {clients})"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_affinity_read_back_and_the_clients() {
        let cpus =
            serde_json::json!({"count": 1, "server": "0", "server_affinity": "0", "clients": "1"});
        assert_eq!(placed(Some(&cpus)).as_deref(), Some("0 (clients 1)"));
        let shared = serde_json::json!({"count": 2, "server": "0-1", "server_affinity": "0-1", "clients": "shared"});
        assert_eq!(
            placed(Some(&shared)).as_deref(),
            Some("0-1 (clients shared)")
        );
        assert_eq!(placed(None), None);
    }
}
