//! Performs one stale step through its kind and records it: blobs first, record last, then
//! the address → key hint for `explain`. A step that fails or is cancelled is never recorded.

use std::collections::BTreeMap;
use std::time::{Duration, Instant, SystemTime};

use cairn_graph::{Step, StepKey};
use cairn_store::{BlobRef, Record, Recorded, Store};

use crate::context::Env;
use crate::error::{failed, StepError};

/// What a finished step hands to its dependents (also shipped to a fleet's node as a
/// trial's input).
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct Done {
    /// The key of the record it was served from or written to (analyses name the trials
    /// behind each figure by it, and read the record's `extra`).
    pub key: String,
    pub output_digest: String,
    pub outputs: BTreeMap<String, BlobRef>,
    /// One line for a person (a trial's figures, a dataset's size), if the step has one.
    pub headline: Option<String>,
}

impl Done {
    /// A conditional pass the adaptive rule found not needed: no record, no outputs.
    pub fn not_needed() -> Done {
        Done {
            key: String::new(),
            output_digest: crate::adaptive::NOT_NEEDED_DIGEST.to_string(),
            outputs: BTreeMap::new(),
            headline: None,
        }
    }

    /// Whether this is a pass that was not needed (see [`Done::not_needed`]).
    pub fn is_not_needed(&self) -> bool {
        self.key.is_empty() && self.output_digest == crate::adaptive::NOT_NEEDED_DIGEST
    }

    pub fn from_record(r: &Record) -> Done {
        Done {
            key: r.key.clone(),
            output_digest: r.output_digest.clone(),
            outputs: r.outputs.clone(),
            headline: headline(r),
        }
    }
}

/// The `headline` a record's `extra` carries, if any.
pub fn headline(r: &Record) -> Option<String> {
    r.extra
        .get("headline")
        .and_then(serde_json::Value::as_str)
        .map(String::from)
}

/// Read and parse the JSON output `name` of a finished step (`outputs` of its record).
pub fn read_json<T: serde::de::DeserializeOwned>(
    store: &Store,
    outputs: &BTreeMap<String, cairn_store::BlobRef>,
    name: &str,
) -> Result<T, String> {
    let blob = outputs
        .get(name)
        .ok_or_else(|| format!("no {name} among its outputs"))?;
    let bytes = store.read_blob(blob).map_err(|e| e.to_string())?;
    serde_json::from_slice(&bytes).map_err(|e| format!("{name}: {e}"))
}

/// What a kind hands back to be recorded: its outputs (already in the store), its logs, the
/// record's `extra`, how long its own command took, if it ran one, and how long it measured.
#[derive(Debug, Default)]
pub struct Built {
    pub outputs: BTreeMap<String, BlobRef>,
    pub logs: BTreeMap<String, BlobRef>,
    pub extra: serde_json::Map<String, serde_json::Value>,
    pub command_time: Option<Duration>,
    /// How long it measured (a trial's warmup and measured window), if it measures.
    pub measuring_time: Option<Duration>,
}

/// Times a performed step reports beside its record, for the run's summary.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct StepTimes {
    /// Its own command's (child process) time, if it ran one.
    pub command: Option<Duration>,
    /// Its time measuring (warmup and measured window), if it is a measurement.
    pub measuring: Option<Duration>,
}

/// When a step's work ran: where it was performed (here, or on a node) is where it was timed.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct Timing {
    /// RFC 3339 with milliseconds.
    pub started: String,
    pub finished: String,
    pub duration_ms: f64,
}

impl Timing {
    /// From `started_at` (wall clock) and `started` (monotonic) until now.
    pub fn since(started_at: SystemTime, started: Instant) -> Timing {
        Timing {
            started: humantime::format_rfc3339_millis(started_at).to_string(),
            finished: humantime::format_rfc3339_millis(SystemTime::now()).to_string(),
            duration_ms: started.elapsed().as_secs_f64() * 1e3,
        }
    }
}

/// Run `step` whose inputs are `inputs` (same order as `step.inputs`) through its kind and
/// record it. `extra` is what the scheduler records beside the kind's own (measurement
/// order, earlier attempts).
pub fn perform(
    env: &Env<'_>,
    step: &Step,
    key: &StepKey<'_>,
    key_hash: &str,
    inputs: &[&Done],
    extra: serde_json::Map<String, serde_json::Value>,
) -> Result<(Done, StepTimes), StepError> {
    let started_at = SystemTime::now();
    let started = Instant::now();
    let kind = env.kinds.get(step).ok_or_else(|| {
        failed(format!(
            "`{}` steps cannot be performed yet: no executor is registered for them",
            step.kind.as_str()
        ))
    })?;
    let built = kind.perform(env, step, key_hash, inputs)?;
    let timing = Timing::since(started_at, started);
    record(env, step, key, key_hash, inputs, built, timing, extra)
}

/// Record what `step`'s kind built (its outputs already in the store): blobs first, record
/// last. A run performs and records in one go ([`perform`]); a fleet executor records what a
/// node performed, with the node's timing, in the same form.
#[allow(clippy::too_many_arguments)]
pub fn record(
    env: &Env<'_>,
    step: &Step,
    key: &StepKey<'_>,
    key_hash: &str,
    inputs: &[&Done],
    built: Built,
    timing: Timing,
    mut extra: serde_json::Map<String, serde_json::Value>,
) -> Result<(Done, StepTimes), StepError> {
    extra.extend(built.extra);
    if step.measure && !env.machine.is_null() {
        extra.insert("machine".into(), env.machine.clone());
    }
    let output_digest = Record::compute_output_digest(&built.outputs);
    let duration_ms = timing.duration_ms;
    let mut record = Record {
        schema: 1,
        key: key_hash.to_string(),
        kind: step.kind.as_str().to_string(),
        study: env.study.to_string(),
        address: step.address.clone(),
        key_json: key.to_json(),
        definition: step.definition.clone(),
        inputs: step
            .inputs
            .iter()
            .zip(inputs)
            .map(|(i, d)| (i.mount.clone(), d.output_digest.clone()))
            .collect(),
        outputs: built.outputs.clone(),
        logs: built.logs,
        output_digest: output_digest.clone(),
        started: timing.started,
        finished: timing.finished,
        duration_ms: timing.duration_ms,
        exit_status: 0,
        fingerprint: step
            .measure
            .then(|| serde_json::to_value(env.fingerprint).expect("serialises")),
        cairn_version: env!("CARGO_PKG_VERSION").to_string(),
        definition_key: step.definition_key.clone(),
        extra,
        checksum: String::new(),
    };
    if env.is_cancelled() {
        return Err(StepError::cancelled());
    }
    // never overwrites a different result under this key: a rebuild that made the same
    // output leaves the first record as it was; one that made another output is kept
    // beside it, and the step's line says so
    let recorded = env
        .store
        .record(&mut record)
        .map_err(|e| failed(format!("recording the result: {e}")))?;
    let mut line = headline(&record);
    // the names log already has this key unless the address moved away and back
    let unchanged_name = matches!(recorded, Recorded::Unchanged)
        && env
            .store
            .names(env.study)
            .ok()
            .and_then(|n| n.get(&step.address).cloned())
            .as_deref()
            == Some(key_hash);
    match recorded {
        Recorded::Written => {}
        Recorded::Unchanged => line = line.or(Some("same output as its record".into())),
        Recorded::KeptBeside {
            existing_output,
            path,
        } => {
            line = Some(format!(
                "its output {} differs from the recorded {} under the same key: both kept \
                 (this one at {})",
                short(&output_digest),
                short(&existing_output),
                path.display()
            ))
        }
    }
    // a hint for `explain`; losing it only loses history, never results
    if !unchanged_name {
        let _ = env
            .store
            .remember(env.study, &step.address, key_hash, Some(duration_ms));
    }
    Ok((
        Done {
            key: key_hash.to_string(),
            output_digest,
            outputs: built.outputs,
            headline: line,
        },
        StepTimes {
            command: built.command_time,
            measuring: built.measuring_time,
        },
    ))
}

fn short(digest: &str) -> &str {
    &digest[..digest.len().min(12)]
}
