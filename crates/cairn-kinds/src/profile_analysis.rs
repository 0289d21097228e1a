//! The `profile` analysis: where each server's CPU time went, and what changed against a
//! baseline. It reads the on-CPU profiles its trials recorded (a trials block with
//! `profile "cpu"`, [`crate::trial_profile`]), merges each server's over every trial it reads
//! (its passes, at the points its `where` keeps), and writes per server a flame graph
//! (`flame-<server>.svg`), per variant a differential flame graph against the baseline
//! (`flame-diff-<server>.svg`: red where the variant spends a larger share, blue a smaller
//! one) and, in `profile.json`, each server's top functions and each variant's functions
//! whose share of the samples changed most, with the CPU time per transaction on either side.
//!
//! ```kdl
//! analysis "where-time-went" {
//!     trials "ro"
//!     where threads=8
//!     profile baseline="mariadb-system" top=12
//! }
//! ```
//!
//! Trials that record their waits (`profile "waits"`) add, per variant, the wait events whose
//! share of the sessions' waiting changed most, with the µs waited per transaction on either
//! side (`ProfileFindings::waits`); trials with waits only have that and no flame graphs.
//!
//! A share is normalised by its own side's samples; the CPU time per transaction is the
//! function's samples ÷ the sampling frequency ÷ the transactions of the profiled windows
//! (sysbench's events, else the queries), so "B spends +9 points of its CPU in `malloc`" comes
//! with whether `malloc` costs more per transaction. Profiles are samples of one run each, not
//! a statistic with a CI: the report says how many samples each rests on.

use std::collections::BTreeMap;

use cairn_analysis::profile::{differences, FunctionChange, FunctionSamples, Profile, Side};
use cairn_defs::figures;
use cairn_defs::AnalysisDef;
use cairn_engine::error::{failed, StepError};
use cairn_engine::execute::{Built, Done};
use cairn_engine::{CheckError, Env};
use cairn_graph::{Step, StepGraph, StepKind};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::trial_points::{parse_address, point_of_record};
use crate::trial_profile::{PROFILE, WAITS};

/// The analysis's findings.
pub const PROFILE_JSON: &str = "profile.json";

const PROPS: &[&str] = &["baseline", "top"];
/// Functions listed per server and per variant unless `top` says otherwise.
const DEFAULT_TOP: usize = 12;

/// Whether an analysis kind is this one.
pub fn is_profile(kind: &str) -> bool {
    kind == "profile"
}

/// One server's merged profile.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ServerProfile {
    pub server: String,
    /// The trials merged (passes × points).
    pub trials: usize,
    pub samples: u64,
    /// Transactions over the profiled windows (sysbench's events, else queries).
    pub work: f64,
    /// Samples per second of CPU time.
    pub frequency_hz: f64,
    /// The functions with the most own samples, most first.
    pub top: Vec<(String, FunctionSamples)>,
    /// Its flame graph, as the analysis writes it.
    pub flame: String,
}

impl ServerProfile {
    /// CPU µs per transaction that `samples_per_work` samples per transaction stand for.
    pub fn us_per_work(&self, samples_per_work: Option<f64>) -> Option<f64> {
        samples_per_work.map(|s| s / self.frequency_hz * 1e6)
    }
}

/// A variant's functions whose share changed most against the baseline.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VariantChanges {
    pub variant: String,
    pub changes: Vec<FunctionChange>,
    /// Its differential flame graph against the baseline.
    pub flame: String,
}

/// What a `profile` analysis found.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProfileFindings {
    pub baseline: String,
    /// The points its trials were at, as `threads=8` (empty: every point merged, or none).
    pub points: Vec<String>,
    /// On-CPU profiles (empty when the trials record none).
    pub servers: Vec<ServerProfile>,
    pub variants: Vec<VariantChanges>,
    /// Wait statistics, when the trials record them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub waits: Option<WaitFindings>,
}

/// What the servers' sessions waited on, merged per server, and what changed per variant.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WaitFindings {
    /// Where the waits come from (the first trial's source).
    pub source: String,
    pub servers: Vec<ServerWaits>,
    /// Per variant, the wait events whose share changed most (their "samples" are µs).
    pub variants: Vec<WaitChanges>,
}

/// One server's waits, summed over its trials.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ServerWaits {
    pub server: String,
    pub trials: usize,
    /// µs of session time waited, every event.
    pub total_us: u64,
    /// Transactions over the windows (sysbench's events, else queries).
    pub work: f64,
    /// The events waited on longest, µs.
    pub top: Vec<(String, u64)>,
}

/// A variant's wait events whose share changed most against the baseline.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WaitChanges {
    pub variant: String,
    pub changes: Vec<FunctionChange>,
}

impl ProfileFindings {
    pub fn server(&self, name: &str) -> Option<&ServerProfile> {
        self.servers.iter().find(|s| s.server == name)
    }
}

/// Checks the analysis's properties against the trials it reads: a `baseline` among its
/// servers, a `top` from 1 to 100, and trials that record a profile.
pub fn check(graph: &StepGraph, step: &Step, def: &AnalysisDef) -> Result<(), CheckError> {
    crate::analysis_step::refuse_unknown_props(def, PROPS, "profile", "")?;
    top_of(def)?;
    let servers = crate::trial_points::servers_of_inputs(graph, step);
    baseline_of(def, &servers)?;
    for input in &step.inputs {
        let from = &graph.steps[input.from];
        if from.kind == StepKind::TRIAL && !crate::trial_profile::asked(&from.definition).any() {
            let (trials, server, _) = parse_address(&from.address);
            return Err(CheckError::new(
                "analysis",
                "kind",
                format!(
                    "a profile reads the trials' profiles, and trials `{trials}` records none for server `{server}`: add `profile \"cpu\"` (or `\"waits\"`) to the block (or to the server), or read only profiled servers with `servers`"
                ),
            ));
        }
    }
    Ok(())
}

fn top_of(def: &AnalysisDef) -> Result<usize, CheckError> {
    match def.props.get("top") {
        None => Ok(DEFAULT_TOP),
        Some(v) => match v.as_u64() {
            Some(n @ 1..=100) => Ok(n as usize),
            _ => Err(CheckError::new(
                "analysis",
                "top",
                format!("`top` is how many functions to list, 1 to 100, not {v}"),
            )),
        },
    }
}

/// The baseline: the one named, or the first server; a name not among the servers is
/// refused with the servers it could be.
fn baseline_of(def: &AnalysisDef, servers: &[String]) -> Result<String, CheckError> {
    match def.baseline() {
        Some(b) if servers.iter().any(|s| s == b) => Ok(b.to_string()),
        Some(b) => Err(CheckError::new(
            "analysis",
            "baseline",
            format!(
                "baseline `{b}` is not among the servers it reads ({})",
                servers.join(", ")
            ),
        )),
        None => servers.first().cloned().ok_or_else(|| {
            CheckError::new("analysis", "kind", "a profile reads no trials".to_string())
        }),
    }
}

/// One server's profiles while they are being merged.
struct Merging {
    profile: Profile,
    waits: Profile,
    trials: usize,
    work: f64,
    frequency_hz: f64,
}

/// A trial's folded output `name`, or why it has none: the reason its record gives
/// (`extra.<what>.absent`), else that its block asks for none.
fn folded_output(
    env: &Env<'_>,
    mount: &str,
    done: &Done,
    name: &str,
    described: &Value,
) -> Result<Profile, StepError> {
    let Some(blob) = done.outputs.get(name) else {
        let why = described["absent"]
            .as_str()
            .unwrap_or("its trials block records none");
        return Err(failed(format!("{mount} has no {name}: {why}")));
    };
    let text = env
        .store
        .read_blob(blob)
        .map_err(|e| failed(format!("reading {name} of {mount}: {e}")))?;
    Profile::parse_folded(&String::from_utf8_lossy(&text))
        .map_err(|e| failed(format!("{name} of {mount}: {e}")))
}

/// Reads every trial's profile, merges them per server, and writes the flame graphs and
/// `profile.json`. A trial without a profile fails the analysis with its record's reason.
pub fn perform(
    env: &Env<'_>,
    step: &Step,
    def: &AnalysisDef,
    inputs: &[&Done],
) -> Result<Built, StepError> {
    let top = top_of(def).map_err(|e| failed(e.message))?;
    let mut merged: Vec<(String, Merging)> = Vec::new();
    let mut points: Vec<String> = Vec::new();
    // what every trial read records: on-CPU stacks, waits, or both (a trial asked for one
    // says so in its record, with the data or why not)
    let mut cpu = true;
    let mut waits = true;
    let mut waits_source = String::new();
    for (input, done) in step.inputs.iter().zip(inputs) {
        if !input.mount.starts_with("trial/") || done.is_not_needed() {
            continue;
        }
        let record = env
            .store
            .get_record(&done.key)
            .map_err(|e| failed(format!("reading the record of {}: {e}", input.mount)))?
            .ok_or_else(|| {
                failed(format!(
                    "the record of {} is gone from the store",
                    input.mount
                ))
            })?;
        let point = point_of_record(&record, &input.mount);
        let described = record.extra.get("profile").unwrap_or(&Value::Null);
        let described_waits = record.extra.get("waits").unwrap_or(&Value::Null);
        cpu &= !described.is_null();
        waits &= !described_waits.is_null();
        if !cpu && !waits {
            return Err(failed(format!(
                "{} has no profile: its trials block records neither on-CPU stacks nor waits the others do",
                input.mount
            )));
        }
        let profile = if cpu {
            folded_output(env, &input.mount, done, PROFILE, described)?
        } else {
            Profile::default()
        };
        let waited = if waits {
            if let Some(s) = described_waits["source"].as_str() {
                waits_source = s.to_string();
            }
            folded_output(env, &input.mount, done, WAITS, described_waits)?
        } else {
            Profile::default()
        };
        let at: Vec<String> = point
            .params
            .iter()
            .map(|(k, v)| format!("{k}={}", crate::trial_points::display_value(v)))
            .collect();
        let at = at.join(" ");
        if !at.is_empty() && !points.contains(&at) {
            points.push(at);
        }
        let i = match merged.iter().position(|(s, _)| *s == point.server) {
            Some(i) => i,
            None => {
                merged.push((
                    point.server.clone(),
                    Merging {
                        profile: Profile::default(),
                        waits: Profile::default(),
                        trials: 0,
                        work: 0.0,
                        frequency_hz: described["frequency_hz"]
                            .as_f64()
                            .unwrap_or(f64::from(cairn_exec::profiler::FREQUENCY_HZ)),
                    },
                ));
                merged.len() - 1
            }
        };
        let m = &mut merged[i].1;
        m.profile.merge(&profile);
        m.waits.merge(&waited);
        m.trials += 1;
        m.work += point
            .figures
            .get(&figures::EVENTS)
            .or_else(|| point.figures.get(&figures::QUERIES))
            .unwrap_or(0.0);
    }
    let servers: Vec<String> = merged.iter().map(|(s, _)| s.clone()).collect();
    let baseline = baseline_of(def, &servers).map_err(|e| failed(e.message))?;
    let mut files: BTreeMap<String, Vec<u8>> = BTreeMap::new();
    let mut findings = ProfileFindings {
        baseline: baseline.clone(),
        points,
        servers: Vec::new(),
        variants: Vec::new(),
        waits: waits.then(|| wait_findings(&merged, &baseline, waits_source, top)),
    };
    for (server, m) in merged.iter().filter(|_| cpu) {
        let flame = format!("flame-{}.svg", crate::report_step::file_stem(server));
        let title = format!(
            "{server}: on-CPU stacks, {} samples over {} trial{}",
            m.profile.samples(),
            m.trials,
            if m.trials == 1 { "" } else { "s" }
        );
        files.insert(
            flame.clone(),
            cairn_report::flame::svg(&m.profile, &title).into_bytes(),
        );
        findings.servers.push(ServerProfile {
            server: server.clone(),
            trials: m.trials,
            samples: m.profile.samples(),
            work: m.work,
            frequency_hz: m.frequency_hz,
            top: m.profile.top(top),
            flame,
        });
    }
    let base = &merged
        .iter()
        .find(|(s, _)| *s == baseline)
        .expect("the baseline is among the servers")
        .1;
    for (server, m) in merged.iter().filter(|(s, _)| cpu && *s != baseline) {
        let changes = differences(
            Side {
                profile: &base.profile,
                work: base.work,
            },
            Side {
                profile: &m.profile,
                work: m.work,
            },
            top,
        );
        let flame = format!("flame-diff-{}.svg", crate::report_step::file_stem(server));
        let title = format!(
            "{server} against {baseline}: red, a larger share of the samples; blue, a smaller one"
        );
        files.insert(
            flame.clone(),
            cairn_report::flame::diff_svg(&base.profile, &m.profile, &title).into_bytes(),
        );
        findings.variants.push(VariantChanges {
            variant: server.clone(),
            changes,
            flame,
        });
    }
    files.insert(
        PROFILE_JSON.to_string(),
        serde_json::to_vec_pretty(&findings).expect("serialises"),
    );
    let mut outputs = BTreeMap::new();
    for (name, bytes) in files {
        let blob = env
            .store
            .put_blob(&bytes)
            .map_err(|e| failed(format!("storing {name}: {e}")))?;
        outputs.insert(name, blob);
    }
    let mut extra = serde_json::Map::new();
    extra.insert("headline".into(), Value::String(headline(&findings)));
    Ok(Built {
        outputs,
        extra,
        ..Default::default()
    })
}

/// The servers' waits and, per variant, the events whose share of the waiting changed most.
fn wait_findings(
    merged: &[(String, Merging)],
    baseline: &str,
    source: String,
    top: usize,
) -> WaitFindings {
    let base = &merged
        .iter()
        .find(|(s, _)| s == baseline)
        .expect("the baseline is among the servers")
        .1;
    WaitFindings {
        source,
        servers: merged
            .iter()
            .map(|(server, m)| ServerWaits {
                server: server.clone(),
                trials: m.trials,
                total_us: m.waits.samples(),
                work: m.work,
                top: m
                    .waits
                    .top(top)
                    .into_iter()
                    .map(|(e, s)| (e, s.own))
                    .collect(),
            })
            .collect(),
        variants: merged
            .iter()
            .filter(|(s, _)| s != baseline)
            .map(|(server, m)| WaitChanges {
                variant: server.clone(),
                changes: differences(
                    Side {
                        profile: &base.waits,
                        work: base.work,
                    },
                    Side {
                        profile: &m.waits,
                        work: m.work,
                    },
                    top,
                ),
            })
            .collect(),
    }
}

/// `mariadb-tcmalloc: +9.3 points in malloc against mariadb-system`: each variant's largest
/// change.
pub fn headline(f: &ProfileFindings) -> String {
    // a variant's largest change, in its CPU or in its waiting
    let largest = |variant: &str, changes: &[FunctionChange], of: &str| {
        changes.first().map(|c| {
            format!(
                "{variant}: {:+.1} points of its {of} in {} against {}",
                100.0 * c.share_change(),
                c.function,
                f.baseline
            )
        })
    };
    let cpu = f
        .variants
        .iter()
        .filter_map(|v| largest(&v.variant, &v.changes, "CPU"));
    let waits = f
        .waits
        .iter()
        .flat_map(|w| &w.variants)
        .filter_map(|v| largest(&v.variant, &v.changes, "waiting"));
    let parts: Vec<String> = cpu.chain(waits).collect();
    if parts.is_empty() {
        format!(
            "profiles of {} server(s)",
            f.servers
                .len()
                .max(f.waits.as_ref().map_or(0, |w| w.servers.len()))
        )
    } else {
        parts.join("; ")
    }
}
