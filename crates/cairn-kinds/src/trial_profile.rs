//! A trial's profiles (the trials block's `profile "cpu" "waits"`): the server's on-CPU
//! stacks over each run's measured window, merged over the runs of the trial, kept as the blob
//! `profile.folded`, and described in the record (`extra.profile`: what sampled them and how
//! many samples, or why there are none — a trial asked for a profile never lacks one
//! silently); and what its sessions waited on, summed over the runs, kept as `waits.folded`
//! (`event µs` lines) and described in `extra.waits`.

use std::collections::BTreeMap;

use cairn_analysis::profile::Profile;
use cairn_engine::error::{failed, StepError};
use cairn_engine::Env;
use cairn_store::BlobRef;
use serde_json::{json, Map, Value};

/// The output holding the folded stacks.
pub const PROFILE: &str = "profile.folded";

/// The output holding the waits: `event µs` lines, the shape of folded stacks.
pub const WAITS: &str = "waits.folded";

/// The runs' waits summed: µs per event (as a [`Profile`] of one-frame stacks),
/// where they came from, and how many samples they rest on (0: a cumulative source).
pub struct MergedWaits {
    pub micros: Profile,
    pub source: &'static str,
    pub samples: u64,
}

/// The profiles asked by a trial's definition: its block's `profile`, else its server's.
pub fn asked(definition: &Value) -> cairn_defs::ProfilesAsked {
    cairn_defs::ProfilesAsked::of(
        [&definition["profile"], &definition["server"]["profile"]]
            .into_iter()
            .find_map(Value::as_str),
    )
}

/// Every run's window reading, or the first run's reason if a run has none (a profile of
/// some runs only would pass for all of them); `what` is what a window gives (`profile`).
fn every_run<T>(runs: Vec<Option<Result<T, String>>>, what: &str) -> Result<Vec<T>, String> {
    runs.into_iter()
        .enumerate()
        .map(|(i, run)| match run {
            Some(run) => run,
            None => Err(format!(
                "run {} ended before its warmup did: no measured window to {what}",
                i + 1
            )),
        })
        .collect()
}

/// The runs' waits summed; the first run's reason if a run has none.
pub fn merge_waits(
    runs: Vec<Option<Result<cairn_workload::waits::Waits, String>>>,
) -> Result<MergedWaits, String> {
    let mut merged = MergedWaits {
        micros: Profile::default(),
        source: "",
        samples: 0,
    };
    for waits in every_run(runs, "read")? {
        let folded = Profile::parse_folded(&waits.to_folded()).map_err(|e| e.to_string())?;
        merged.micros.merge(&folded);
        merged.source = waits.source;
        merged.samples += waits.samples;
    }
    Ok(merged)
}

/// Keeps the summed waits as a blob and says in `extra.waits` what they are (the source,
/// the µs waited in all, the five events waited on longest), or why the trial has none.
pub fn record_waits(
    ctx: &Env<'_>,
    merged: Result<MergedWaits, String>,
    extra: &mut Map<String, Value>,
    outputs: &mut BTreeMap<String, BlobRef>,
) -> Result<(), StepError> {
    let described = match merged {
        Ok(waits) => {
            let blob = ctx
                .store
                .put_blob(waits.micros.to_folded().as_bytes())
                .map_err(|e| failed(format!("storing {WAITS}: {e}")))?;
            outputs.insert(WAITS.to_string(), blob);
            let top: Vec<Value> = waits
                .micros
                .top(5)
                .into_iter()
                .map(|(event, s)| json!({"event": event, "us": s.own}))
                .collect();
            let mut d = json!({
                "source": waits.source,
                "unit": "µs of session time",
                "total_us": waits.micros.samples(),
                "events": waits.micros.stacks.len(),
                "top": top,
            });
            if waits.samples > 0 {
                d["samples"] = json!(waits.samples);
            }
            d
        }
        Err(why) => json!({"absent": format!("no waits: {why}")}),
    };
    extra.insert("waits".into(), described);
    Ok(())
}

/// What one run's window gave: folded stacks, why not, or nothing (the workload ended
/// before its warmup did, so it had no window to profile).
pub type RunProfile = Option<Result<String, String>>;

/// The runs' profiles merged: the stacks of every run summed; the first run's reason if a
/// run has none (a profile of some runs only would pass for all of them).
pub fn merge(runs: Vec<RunProfile>) -> Result<Profile, String> {
    let mut merged = Profile::default();
    for folded in every_run(runs, "profile")? {
        let profile = Profile::parse_folded(&folded).map_err(|e| e.to_string())?;
        merged.merge(&profile);
    }
    Ok(merged)
}

/// Keeps the merged profile as a blob and says in `extra.profile` what it is, or why the
/// trial has none.
pub fn record(
    ctx: &Env<'_>,
    merged: Result<Profile, String>,
    extra: &mut Map<String, Value>,
    outputs: &mut BTreeMap<String, BlobRef>,
) -> Result<(), StepError> {
    let described = match merged {
        Ok(profile) => {
            let blob = ctx
                .store
                .put_blob(profile.to_folded().as_bytes())
                .map_err(|e| failed(format!("storing {PROFILE}: {e}")))?;
            outputs.insert(PROFILE.to_string(), blob);
            json!({
                "kind": "cpu",
                "sampler": "perf record",
                "event": cairn_exec::profiler::EVENT,
                "frequency_hz": cairn_exec::profiler::FREQUENCY_HZ,
                "scope": "every CPU, the server's process kept",
                "window": "measured (after the warmup)",
                "samples": profile.samples(),
                "stacks": profile.stacks.len(),
            })
        }
        Err(why) => json!({"kind": "cpu", "absent": format!("not profiled: {why}")}),
    };
    extra.insert("profile".into(), described);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_merge_and_a_run_without_a_profile_says_why() {
        let merged = merge(vec![
            Some(Ok("m;a 2\n".into())),
            Some(Ok("m;a 1\nm;b 4\n".into())),
        ])
        .unwrap();
        assert_eq!(merged.to_folded(), "m;a 3\nm;b 4\n");
        let e = merge(vec![Some(Ok("m;a 2\n".into())), None]).unwrap_err();
        assert!(e.contains("run 2 ended before its warmup"), "{e}");
        let e = merge(vec![Some(Err("perf: not permitted".into()))]).unwrap_err();
        assert_eq!(e, "perf: not permitted");
    }
}
