//! A trial's profile (the trials block's `profile "cpu"`): the server's on-CPU stacks over
//! each run's measured window, merged over the runs of the trial, kept as the blob
//! `profile.folded`, and described in the record (`extra.profile`: what sampled them and how
//! many samples, or why there are none — a trial asked for a profile never lacks one
//! silently).

use std::collections::BTreeMap;

use cairn_analysis::profile::Profile;
use cairn_engine::error::{failed, StepError};
use cairn_engine::Env;
use cairn_store::BlobRef;
use serde_json::{json, Map, Value};

/// The output holding the folded stacks.
pub const PROFILE: &str = "profile.folded";

/// What one run's window gave: folded stacks, why not, or nothing (the workload ended
/// before its warmup did, so it had no window to profile).
pub type RunProfile = Option<Result<String, String>>;

/// The runs' profiles merged: the stacks of every run summed; the first run's reason if a
/// run has none (a profile of some runs only would pass for all of them).
pub fn merge(runs: Vec<RunProfile>) -> Result<Profile, String> {
    let mut merged = Profile::default();
    for (i, run) in runs.into_iter().enumerate() {
        let folded = match run {
            Some(Ok(folded)) => folded,
            Some(Err(why)) => return Err(why),
            None => {
                return Err(format!(
                    "run {} ended before its warmup did: no measured window to profile",
                    i + 1
                ))
            }
        };
        let profile = Profile::parse_folded(&folded).map_err(|e| e.to_string())?;
        merged.merge(&profile);
    }
    Ok(merged)
}

/// Keeps the merged profile as a blob and says in `extra.profile` what it is, or why the
/// trial has none.
pub fn record(
    ctx: &Env<'_>,
    kind: &str,
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
                "kind": kind,
                "sampler": "perf record",
                "event": cairn_exec::profiler::EVENT,
                "frequency_hz": cairn_exec::profiler::FREQUENCY_HZ,
                "scope": "every CPU, the server's process kept",
                "window": "measured (after the warmup)",
                "samples": profile.samples(),
                "stacks": profile.stacks.len(),
            })
        }
        Err(why) => json!({"kind": kind, "absent": format!("not profiled: {why}")}),
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
