//! Performs one stale step and records it: hands it to its executor (a command to the
//! process executor; images, datasets and trials to their modules), then writes its record
//! (blobs first, record last) and remembers its key.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant, SystemTime};

use cairn_exec::process::{run_command, CommandJob, ExecError};
use cairn_graph::{Fingerprint, Step, StepKey, StepKind};
use cairn_store::{BlobRef, Record, Store};

/// What a finished step hands to its dependents.
#[derive(Debug, Clone)]
pub struct Done {
    pub output_digest: String,
    pub outputs: BTreeMap<String, BlobRef>,
    /// One line for a person (a trial's figures, a dataset's size), if the step has one.
    pub headline: Option<String>,
}

impl Done {
    pub fn from_record(r: &Record) -> Done {
        Done {
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

pub struct StepContext<'a> {
    pub study: &'a str,
    pub store: &'a Store,
    pub work_root: &'a Path,
    /// The machine-local cache directory (dataset snapshots, debootstrap downloads).
    pub cache_root: &'a Path,
    /// This process's run id: containers and networks it starts carry it as a label.
    pub run_id: &'a str,
    /// The Debian mirror for base images, if given (`--mirror`); else the environment or apt.
    pub mirror: Option<&'a str>,
    pub fingerprint: &'a Fingerprint,
}

#[derive(Debug)]
pub enum StepError {
    Cancelled,
    Failed(String),
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

/// A failed step, with why.
pub(crate) fn failed(what: impl std::fmt::Display) -> StepError {
    StepError::Failed(what.to_string())
}

/// What an image, dataset or trial step hands back to be recorded: its outputs and the
/// record's `extra`.
pub struct Built {
    pub outputs: BTreeMap<String, BlobRef>,
    pub extra: serde_json::Map<String, serde_json::Value>,
}

impl From<ExecError> for StepError {
    fn from(e: ExecError) -> Self {
        match e {
            ExecError::Cancelled => StepError::Cancelled,
            other => StepError::Failed(other.to_string()),
        }
    }
}

fn env_name(param: &str) -> String {
    param
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_uppercase()
            } else {
                '_'
            }
        })
        .collect()
}

/// Run `step` whose inputs are `inputs` (same order as `step.inputs`) and record it.
pub fn perform(
    ctx: &StepContext<'_>,
    step: &Step,
    key: &StepKey<'_>,
    key_hash: &str,
    inputs: &[&Done],
    mut extra: serde_json::Map<String, serde_json::Value>,
) -> Result<(Done, Option<Duration>), StepError> {
    let started_at = SystemTime::now();
    let started = Instant::now();
    let (outputs, logs, command_time) = match step.kind {
        StepKind::Command => {
            let spec = step.command.as_ref().expect("command steps carry a spec");
            let mut env: Vec<(String, String)> = spec
                .env
                .iter()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            env.push(("CAIRN_STEP".into(), step.address.clone()));
            env.push(("CAIRN_PASS".into(), step.pass.to_string()));
            env.push(("CAIRN_KEY".into(), key_hash.to_string()));
            for (k, v) in &spec.params {
                env.push((format!("CAIRN_PARAM_{}", env_name(k)), v.to_string()));
            }
            let mut blobs = Vec::new();
            for (input, done) in step.inputs.iter().zip(inputs) {
                for (path, blob) in &done.outputs {
                    blobs.push((blob.clone(), format!("{}/{}", input.mount, path)));
                }
            }
            let job = CommandJob {
                run: &spec.run,
                env,
                files: spec
                    .files
                    .iter()
                    .map(|f| (f.abs.clone(), f.rel.clone()))
                    .collect(),
                blobs,
                outputs: &spec.outputs,
                timeout: spec.timeout,
                work_root: ctx.work_root,
            };
            let out = run_command(&job, ctx.store)?;
            (out.outputs, out.logs, Some(out.child_time))
        }
        StepKind::Image => {
            let built = crate::image_step::perform(ctx, step, key_hash, inputs)?;
            extra.extend(built.extra);
            (built.outputs, BTreeMap::new(), None)
        }
        StepKind::Dataset => {
            let built = crate::dataset_step::perform(ctx, step, key_hash, inputs)?;
            extra.extend(built.extra);
            (built.outputs, BTreeMap::new(), None)
        }
        StepKind::Trial => {
            let built = crate::trial_step::perform(ctx, step, inputs)?;
            extra.extend(built.extra);
            (built.outputs, BTreeMap::new(), None)
        }
        other => {
            return Err(StepError::Failed(format!(
                "`{}` steps are not executable yet: the executor for them (containers, workloads, analyses) is still to be built",
                other.as_str()
            )))
        }
    };
    let output_digest = Record::compute_output_digest(&outputs);
    let mut record = Record {
        schema: 1,
        key: key_hash.to_string(),
        kind: step.kind.as_str().to_string(),
        study: ctx.study.to_string(),
        address: step.address.clone(),
        key_json: key.to_json(),
        definition: step.definition.clone(),
        inputs: step
            .inputs
            .iter()
            .zip(inputs)
            .map(|(i, d)| (i.mount.clone(), d.output_digest.clone()))
            .collect(),
        outputs: outputs.clone(),
        logs,
        output_digest: output_digest.clone(),
        started: humantime::format_rfc3339_millis(started_at).to_string(),
        finished: humantime::format_rfc3339_millis(SystemTime::now()).to_string(),
        duration_ms: started.elapsed().as_secs_f64() * 1e3,
        exit_status: 0,
        fingerprint: step
            .measure
            .then(|| serde_json::to_value(ctx.fingerprint).expect("serialises")),
        cairn_version: env!("CARGO_PKG_VERSION").to_string(),
        extra,
        checksum: String::new(),
    };
    if cairn_exec::cancel::is_cancelled() {
        return Err(StepError::Cancelled);
    }
    ctx.store
        .put_record(&mut record)
        .map_err(|e| StepError::Failed(format!("recording the result: {e}")))?;
    // a hint for `explain`; losing it only loses history, never results
    let _ = ctx.store.remember(ctx.study, &step.address, key_hash);
    Ok((
        Done {
            output_digest,
            outputs,
            headline: headline(&record),
        },
        command_time,
    ))
}
