//! Support of the end-to-end tests: a sandbox per test, a fluent harness that runs the real
//! `cairn` binary in it and checks what it printed, the JSON events, snapshots of the human
//! output, live processes and the Docker Engine lock shared by the Docker modules.

#![allow(dead_code)]

mod engine;
mod events;
mod harness;
mod normalize;
mod process;
mod sandbox;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

pub use engine::{engine_exclusive, engine_shared, EngineProxy};
pub use events::{parse_json_lines, Events};
pub use harness::{assert_snapshot, contains, lacks, snapshot, Invocation, Ran, Test};
pub use normalize::normalize;
pub use process::{leftovers_after, processes_with, reap, wait_status, wait_with_guard, Live};
pub use sandbox::{files_under, Sandbox};

pub const CAIRN: &str = env!("CARGO_BIN_EXE_cairn");

/// Upper bound for any single cairn invocation: a hang guard, never a timing assertion.
pub const HANG_GUARD: Duration = Duration::from_secs(60);

/// A fixture plan shipped with the tests (`tests/plans/e2e/<name>`).
pub fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/plans/e2e")
        .join(name)
}

/// The repository root (for read-only fixtures such as the committed `results/` store).
pub fn repo_root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// A sandbox holding the committed quickstart's store, images and plans (no container
/// runs: every trial is recorded), and the class those trials were measured on, as JSON:
/// run with it as `CAIRN_SIMULATED_MACHINE`, this machine is that class.
pub fn committed_quickstart() -> (Sandbox, String) {
    let sb = Sandbox::new();
    let root = repo_root();
    sb.copy_tree(&root.join("results/store"), "results/store");
    sb.copy_tree(&root.join("images"), "images");
    sb.write(
        "plans/quickstart.kdl",
        &std::fs::read_to_string(root.join("plans/quickstart.kdl")).unwrap(),
    );
    let class = files_under(&sb.store().join("records"))
        .into_iter()
        .filter_map(|p| {
            let r: serde_json::Value =
                serde_json::from_str(&std::fs::read_to_string(p).ok()?).ok()?;
            // the quickstart's class: the committed store holds other studies' trials too
            (r["kind"] == "trial" && r["study"] == "quickstart")
                .then(|| r["fingerprint"].to_string())
        })
        .next()
        .expect("the committed store holds trials");
    (sb, class)
}

/// A string unique to this test process and call, to find our own child processes.
pub fn unique_marker(tag: &str) -> String {
    static N: AtomicUsize = AtomicUsize::new(0);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    format!(
        "e2e{tag}{}x{}x{}",
        std::process::id(),
        N.fetch_add(1, Ordering::SeqCst),
        nanos
    )
}

/// Collect a set of addresses from string literals.
pub fn set<const N: usize>(items: [&str; N]) -> BTreeSet<String> {
    items.iter().map(|s| s.to_string()).collect()
}
