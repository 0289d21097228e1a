//! Shared helpers for the integration tests.
#![allow(dead_code)]

use cairn_store::{hash_bytes, BlobRef, Record, Store};
use std::collections::BTreeMap;

pub fn key(n: u64) -> String {
    hash_bytes(&n.to_le_bytes())
}

pub fn store() -> (tempfile::TempDir, Store) {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    (dir, store)
}

/// A realistic record for `key` naming the given output and log blobs.
pub fn record(key: &str, outputs: &[(&str, &BlobRef)], stdout: &BlobRef) -> Record {
    let mut rec = Record::new(key, "command", "quickstart", "load[threads=2]#1");
    rec.key_json =
        serde_json::json!({"schema": 1, "kind": "command", "run": "echo hi", "inputs": {}});
    rec.definition = serde_json::json!({"run": "echo hi", "output": ["out.txt"]});
    rec.inputs.insert("data".into(), hash_bytes(b"input"));
    let outputs: BTreeMap<String, BlobRef> = outputs
        .iter()
        .map(|(p, b)| (p.to_string(), (*b).clone()))
        .collect();
    rec.output_digest = Record::compute_output_digest(&outputs);
    rec.outputs = outputs;
    rec.logs.insert("stdout".into(), stdout.clone());
    rec.started = "2024-05-01T12:34:56.000Z".into();
    rec.finished = "2024-05-01T12:34:57.250Z".into();
    rec.duration_ms = 1250.5;
    rec.cairn_version = "0.1.0".into();
    rec.extra.insert(
        "server_version".into(),
        serde_json::json!("10.11.6-MariaDB"),
    );
    rec
}

pub fn count_files(dir: &std::path::Path) -> usize {
    let mut n = 0;
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            n += count_files(&p);
        } else {
            n += 1;
        }
    }
    n
}
