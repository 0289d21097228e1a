//! Verifying an unpacked bundle: every file against the manifest (altered, missing, extra),
//! every blob against its name, every record's checksum and output digest, and every
//! record's key against the plan — recomputed from the bundled plan, the records of its
//! inputs and the fingerprint it was measured on. Each problem names what it breaks.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use cairn_graph::{Fingerprint, StepGraph, StepKind};
use cairn_store::{Record, Store};

use super::chain::{self, Link};
use super::format::{Manifest, FORMAT, MANIFEST};
use super::pack::hash_file;
use super::unpack::{list_files, Refused};

/// One thing wrong with a bundle, and what it breaks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    pub what: String,
    pub breaks: String,
}

/// What verifying a bundle found.
#[derive(Debug)]
pub struct Verified {
    pub manifest: Manifest,
    /// The root plan file inside the bundle.
    pub plan: PathBuf,
    pub files_checked: usize,
    pub records_checked: usize,
    pub problems: Vec<Problem>,
    /// Records made by another version of their kind's code than this cairn's (an earlier
    /// cairn's bundle): each chains to the plan with the code it recorded, and is no problem.
    pub older_code: Vec<OlderCode>,
    /// Addresses of the plan's host `step`s (run only with an explicit flag).
    pub host_steps: Vec<String>,
}

/// A step whose record an earlier version of its kind's code made.
#[derive(Debug, Clone)]
pub struct OlderCode {
    pub address: String,
    /// The code version the record says made it, e.g. `claim/10`.
    pub made_by: String,
    /// This cairn's, e.g. `claim/11`.
    pub now: String,
}

impl Verified {
    pub fn is_clean(&self) -> bool {
        self.problems.is_empty()
    }
}

/// Verifies the bundle unpacked in `dir`.
pub fn verify_dir(dir: &Path) -> Result<Verified, Refused> {
    let present = list_files(dir)?;
    let manifest_bytes = std::fs::read(dir.join(MANIFEST))
        .map_err(|e| Refused::Unsafe(format!("no readable {MANIFEST}: {e}")))?;
    let manifest: Manifest = serde_json::from_slice(&manifest_bytes)
        .map_err(|e| Refused::Unsafe(format!("{MANIFEST} does not parse: {e}")))?;
    if manifest.format != FORMAT {
        return Err(Refused::Unsafe(format!(
            "{MANIFEST} is format {:?}; this cairn reads {FORMAT}",
            manifest.format
        )));
    }
    let plan_rel =
        super::unpack::safe_relative(Path::new(&manifest.plan)).map_err(Refused::Unsafe)?;
    let plan_path = dir.join(&plan_rel);
    // the plan, as bundled: a plan that does not load is one problem that breaks everything
    let graph = load_bundled_plan(&plan_path, &manifest.params);
    let mut problems = Vec::new();
    let store = Store::open(dir).map_err(|e| Refused::Io(e.to_string()))?;
    // who depends on what: records by key → step, blobs → steps
    let (by_key, by_address) = match &graph {
        Ok(g) => index(g, &manifest),
        Err(_) => (BTreeMap::new(), BTreeMap::new()),
    };
    let mut blob_users: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    for (key, &id) in &by_key {
        if let Ok(Some(r)) = store.get_record(key) {
            for b in r.blobs() {
                blob_users.entry(b.digest.clone()).or_default().push(id);
            }
        }
    }
    let breaks_of = |path: &str| -> String {
        let Ok(g) = &graph else {
            return "the study (its plan does not load)".into();
        };
        let ids: Vec<usize> = if let Some(key) = path
            .strip_prefix("store/records/")
            .and_then(|p| p.strip_suffix(".json"))
        {
            by_key.get(key).copied().into_iter().collect()
        } else if let Some(d) = path
            .strip_prefix("store/blobs/")
            .and_then(|p| p.split('/').nth(1))
        {
            blob_users.get(d).cloned().unwrap_or_default()
        } else if path.starts_with("plan/") {
            return "the plan: every step's key".into();
        } else if path.starts_with("report/") {
            return "the published report".into();
        } else {
            Vec::new()
        };
        with_dependents(g, &ids)
    };

    // 1. every file against the manifest
    let present_set: BTreeSet<&str> = present.iter().map(String::as_str).collect();
    let mut files_checked = 0;
    for (path, want) in &manifest.files {
        if super::unpack::safe_relative(Path::new(path)).is_err() {
            return Err(Refused::Unsafe(format!(
                "{MANIFEST} names {path}, outside the bundle"
            )));
        }
        if !present_set.contains(path.as_str()) {
            problems.push(Problem {
                what: format!("missing file {path}"),
                breaks: breaks_of(path),
            });
            continue;
        }
        files_checked += 1;
        match hash_file(&dir.join(path)) {
            Ok(got) if &got == want => {}
            Ok(got) => problems.push(Problem {
                what: format!(
                    "altered file {path}: blake3 {} ({} bytes), the manifest says {} ({} bytes)",
                    &got.blake3[..12],
                    got.size,
                    &want.blake3[..12.min(want.blake3.len())],
                    want.size
                ),
                breaks: breaks_of(path),
            }),
            Err(e) => problems.push(Problem {
                what: format!("unreadable file {path}: {e}"),
                breaks: breaks_of(path),
            }),
        }
    }
    for path in &present {
        if path != MANIFEST && !manifest.files.contains_key(path) {
            problems.push(Problem {
                what: format!("extra file {path}: not in the manifest"),
                breaks: "nothing in the study, but the bundle is not what was published".into(),
            });
        }
    }
    // 2. blobs are named by their content (independently of the manifest)
    for path in present.iter().filter(|p| p.starts_with("store/blobs/")) {
        let name = path.rsplit('/').next().unwrap_or("");
        if let Ok(got) = hash_file(&dir.join(path)) {
            if got.blake3 != name
                && manifest
                    .files
                    .get(path)
                    .is_none_or(|w| w.blake3 == got.blake3)
            {
                problems.push(Problem {
                    what: format!("blob {path}: its content hashes to {}", &got.blake3[..12]),
                    breaks: breaks_of(path),
                });
            }
        }
    }
    // 3. every record chains back to the plan
    let mut records_checked = 0;
    let mut older_code = Vec::new();
    let mut host_steps = Vec::new();
    match &graph {
        Err(e) => problems.push(Problem {
            what: format!("the bundled plan {} does not load: {e}", manifest.plan),
            breaks: "every step".into(),
        }),
        Ok(g) => {
            host_steps = g
                .steps
                .iter()
                .filter(|s| s.kind == StepKind::COMMAND)
                .map(|s| s.address.clone())
                .collect();
            if g.study != manifest.study {
                problems.push(Problem {
                    what: format!(
                        "the plan's study is {:?}, the manifest's {:?}",
                        g.study, manifest.study
                    ),
                    breaks: "the study's identity".into(),
                });
            }
            let claimed: Vec<Option<Record>> = g
                .steps
                .iter()
                .map(|s| {
                    by_address
                        .get(s.address.as_str())
                        .and_then(|k| store.get_record(k).ok().flatten())
                })
                .collect();
            let fingerprint_of = |id: usize| -> Option<Fingerprint> {
                claimed[id]
                    .as_ref()
                    .and_then(|r| r.fingerprint.clone())
                    .and_then(|f| serde_json::from_value(f).ok())
            };
            let links = chain::walk_with(g, &store, &fingerprint_of, &|id| claimed[id].clone());
            for &id in &g.order {
                let step = &g.steps[id];
                let listed = by_address.get(step.address.as_str());
                match (&links[id], listed) {
                    (Link::Record(r) | Link::OlderCode { record: r, .. }, _) => {
                        records_checked += 1;
                        if let Link::OlderCode { code, .. } = &links[id] {
                            older_code.push(OlderCode {
                                address: step.address.clone(),
                                made_by: code.clone(),
                                now: step.code.clone(),
                            });
                        }
                        if Record::compute_output_digest(&r.outputs) != r.output_digest {
                            problems.push(Problem {
                                what: format!(
                                    "record of {}: its output digest does not match its outputs",
                                    step.address
                                ),
                                breaks: with_dependents(g, &[id]),
                            });
                        }
                        if listed.map(String::as_str) != Some(r.key.as_str()) {
                            problems.push(Problem {
                                what: format!(
                                    "{} is not listed in the manifest with its record {}",
                                    step.address,
                                    &r.key[..12]
                                ),
                                breaks: with_dependents(g, &[id]),
                            });
                        }
                    }
                    (Link::NotNeeded, _) => {}
                    (Link::Missing { key, why }, listed) => {
                        // a missing file was named above; say only what is new
                        let file_missing = listed.is_some_and(|k| {
                            !present_set.contains(format!("store/records/{k}.json").as_str())
                        });
                        let input_missing = key.is_none() && why.starts_with("an input");
                        if file_missing || input_missing {
                            continue;
                        }
                        let what = match (listed, key) {
                            (Some(l), Some(k)) if l != k => format!(
                                "the record of {} ({}) does not chain to the plan: its definition and inputs give key {}",
                                step.address,
                                &l[..12.min(l.len())],
                                &k[..12]
                            ),
                            _ => format!("{} has no usable record: {why}", step.address),
                        };
                        problems.push(Problem {
                            what,
                            breaks: with_dependents(g, &[id]),
                        });
                    }
                }
            }
            for s in &manifest.steps {
                if !g.steps.iter().any(|st| st.address == s.address) {
                    problems.push(Problem {
                        what: format!(
                            "the manifest lists {}, which the plan does not have",
                            s.address
                        ),
                        breaks: "nothing in the plan".into(),
                    });
                }
            }
        }
    }
    Ok(Verified {
        manifest,
        plan: plan_path,
        files_checked,
        records_checked,
        problems,
        older_code,
        host_steps,
    })
}

/// The bundled plan, resolved with the parameter values `settings` gives (the manifest's,
/// for checking it); a plan that reads host paths outside the bundle is refused.
pub fn load_bundled_plan(
    path: &Path,
    settings: &cairn_plan::Settings,
) -> Result<StepGraph, String> {
    let mut plan = cairn_plan::load_with(path, settings).map_err(|e| e.to_string())?;
    crate::preflight::set_defaults(&mut plan);
    if let Some(p) = plan.study.host_paths.first() {
        return Err(format!(
            "it declares host-path {}: a bundle's plan may read only files inside the bundle",
            p.value.display()
        ));
    }
    cairn_graph::resolve_with_kinds(&plan, &cairn_kinds::plan_step_kinds())
        .map_err(|e| e.to_string())
}

type Index<'a> = (BTreeMap<String, usize>, BTreeMap<&'a str, String>);

/// Record key → step id, and address → listed key.
fn index<'a>(g: &StepGraph, m: &'a Manifest) -> Index<'a> {
    let ids: BTreeMap<&str, usize> = g.steps.iter().map(|s| (s.address.as_str(), s.id)).collect();
    let mut by_key = BTreeMap::new();
    let mut by_address = BTreeMap::new();
    for s in &m.steps {
        if let Some(k) = &s.key {
            by_address.insert(s.address.as_str(), k.clone());
            if let Some(&id) = ids.get(s.address.as_str()) {
                by_key.insert(k.clone(), id);
            }
        }
    }
    (by_key, by_address)
}

/// `ids` and everything depending on them, as a short list.
fn with_dependents(g: &StepGraph, ids: &[usize]) -> String {
    let mut all: Vec<usize> = ids.to_vec();
    for &i in ids {
        all.extend(chain::dependents_of(g, i));
    }
    let set: BTreeSet<usize> = all.into_iter().collect();
    let ordered: Vec<usize> = g
        .order
        .iter()
        .copied()
        .filter(|i| set.contains(i))
        .collect();
    chain::breaks(g, &ordered)
}
