//! A fresh directory per test with its own `results/` and `cache/`, where plans are written
//! and cairn runs; and look-ups into the store it leaves there (records, blobs).

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::harness::Invocation;
use super::{fixture, Ran};

/// A fresh directory with its own `results/` and `cache/`, removed when dropped.
pub struct Sandbox {
    pub dir: tempfile::TempDir,
}

impl Default for Sandbox {
    fn default() -> Self {
        Self::new()
    }
}

impl Sandbox {
    pub fn new() -> Sandbox {
        Sandbox {
            dir: tempfile::Builder::new()
                .prefix("cairn-e2e-")
                .tempdir()
                .expect("tempdir"),
        }
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    pub fn results(&self) -> PathBuf {
        self.path().join("results")
    }

    pub fn cache(&self) -> PathBuf {
        self.path().join("cache")
    }

    pub fn store(&self) -> PathBuf {
        self.results().join("store")
    }

    /// Write (or overwrite) a file relative to the sandbox; returns its path.
    pub fn write(&self, name: &str, text: &str) -> PathBuf {
        let p = self.path().join(name);
        if let Some(parent) = p.parent() {
            std::fs::create_dir_all(parent).expect("mkdir");
        }
        std::fs::write(&p, text).expect("write file");
        p
    }

    /// Read a file relative to the sandbox.
    #[track_caller]
    pub fn read(&self, name: &str) -> String {
        let p = self.path().join(name);
        std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("read {}: {e}", p.display()))
    }

    /// Copy the fixture plan `fixture_name` into the sandbox as `name`; returns `name`.
    pub fn fixture<'n>(&self, fixture_name: &str, name: &'n str) -> &'n str {
        let text = std::fs::read_to_string(fixture(fixture_name)).expect("fixture");
        self.write(name, &text);
        name
    }

    /// Copy a directory tree into the sandbox under `name` (e.g. a read-only store fixture).
    pub fn copy_tree(&self, from: &Path, name: &str) {
        let to = self.path().join(name);
        for file in files_under(from) {
            let rel = file.strip_prefix(from).expect("below the source");
            let dest = to.join(rel);
            std::fs::create_dir_all(dest.parent().expect("has a parent")).expect("mkdir");
            std::fs::copy(&file, &dest).expect("copy file");
        }
    }

    /// `cairn <args…>` with this sandbox's `--results`/`--cache`, run in the sandbox.
    /// Global flags (`--json`, `-vv`) may go anywhere among `args`.
    pub fn cairn<I, S>(&self, args: I) -> Invocation<'_>
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        Invocation::new(self).args(args)
    }

    /// `cairn --json run <plan>`; add options with [`Invocation::args`].
    pub fn run(&self, plan: &str) -> Invocation<'_> {
        self.cairn(["--json", "run", plan])
    }

    /// `cairn --json run <plan> <extra…>`, asserting exit 0; its events.
    #[track_caller]
    pub fn run_ok(&self, plan: &str, extra: &[&str]) -> super::Events {
        self.run(plan)
            .args(extra.iter().copied())
            .success()
            .events()
    }

    /// `cairn --json plan <plan>`: one object per step.
    #[track_caller]
    pub fn plan_json(&self, plan: &str) -> Vec<Value> {
        self.plan_json_with(plan, &[])
    }

    /// `cairn --json plan PLAN ARGS…` (it must succeed), one value per step.
    pub fn plan_json_with(&self, plan: &str, args: &[&str]) -> Vec<Value> {
        self.cairn(
            ["--json", "plan", plan]
                .into_iter()
                .chain(args.iter().copied()),
        )
        .success()
        .json_lines()
    }

    /// `cairn verify`, whatever its exit code.
    pub fn verify(&self) -> Ran {
        self.cairn(["verify"]).run()
    }

    pub fn records_dir(&self) -> PathBuf {
        self.store().join("records")
    }

    /// Paths of every record file.
    pub fn record_files(&self) -> Vec<PathBuf> {
        files_under(&self.records_dir())
            .into_iter()
            .filter(|p| p.extension().is_some_and(|e| e == "json"))
            .collect()
    }

    pub fn record_count(&self) -> usize {
        self.record_files().len()
    }

    pub fn blob_files(&self) -> Vec<PathBuf> {
        files_under(&self.store().join("blobs"))
    }

    /// Every file under the store (records, blobs, names, lock, …).
    pub fn store_file_count(&self) -> usize {
        files_under(&self.store()).len()
    }

    /// Parsed records whose `address` is `address`.
    pub fn records_of(&self, address: &str) -> Vec<(PathBuf, Value)> {
        self.record_files()
            .into_iter()
            .filter_map(|p| {
                let text = std::fs::read_to_string(&p).ok()?;
                let v: Value = serde_json::from_str(&text).ok()?;
                (v["address"] == address).then_some((p, v))
            })
            .collect()
    }

    /// The only record of `address`.
    #[track_caller]
    pub fn record(&self, address: &str) -> Value {
        let mut recs = self.records_of(address);
        assert_eq!(recs.len(), 1, "one record of {address}");
        recs.pop().expect("one record").1
    }

    /// The path of the blob with this digest.
    pub fn blob_path(&self, digest: &str) -> PathBuf {
        self.store().join("blobs").join(&digest[..2]).join(digest)
    }

    /// The text of output `output` in the only record of `address`.
    #[track_caller]
    pub fn output_text(&self, address: &str, output: &str) -> String {
        let rec = self.record(address);
        let digest = rec["outputs"][output]["digest"]
            .as_str()
            .unwrap_or_else(|| panic!("outputs.{output}.digest in {rec}"));
        std::fs::read_to_string(self.blob_path(digest)).expect("blob")
    }
}

/// Every regular file below `dir` (empty when it does not exist), sorted.
pub fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in rd.flatten() {
            let p = e.path();
            match e.file_type() {
                Ok(t) if t.is_dir() => stack.push(p),
                Ok(t) if t.is_file() => out.push(p),
                _ => {}
            }
        }
    }
    out.sort();
    out
}
