//! Step keys: blake3 over the canonical JSON of a borrowed [`StepKey`].
//!
//! Canonical means: struct fields in declaration order, every map sorted (serde_json's
//! `Map` is a `BTreeMap` here — the `preserve_order` feature must stay off), inputs sorted
//! by mount name. Names, comments and formatting of the plan never reach a key.

use serde::Serialize;

use crate::fingerprint::Fingerprint;
use crate::step::Step;

/// Version of the key layout itself. Bumping it changes every key.
pub const KEY_SCHEMA: u32 = 1;

/// One input of a key: where the input is mounted and the input's *output digest*.
#[derive(Debug, Clone, Serialize, PartialEq, Eq, PartialOrd, Ord)]
pub struct KeyInput<'a> {
    pub mount: &'a str,
    pub digest: &'a str,
}

/// Everything a step's result depends on.
#[derive(Debug, Serialize)]
pub struct StepKey<'a> {
    pub schema: u32,
    pub kind: &'a str,
    pub definition: &'a serde_json::Value,
    pub inputs: Vec<KeyInput<'a>>,
    pub code: &'a str,
    /// Measurements only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fingerprint: Option<&'a Fingerprint>,
    pub pass: u32,
}

impl StepKey<'_> {
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::to_value(self).expect("key serialises")
    }

    pub fn hash(&self) -> String {
        let bytes = serde_json::to_vec(self).expect("key serialises");
        blake3::hash(&bytes).to_hex().to_string()
    }
}

/// Build the key of `step` given its inputs' output digests (same order as `step.inputs`).
pub fn step_key<'a>(
    step: &'a Step,
    input_digests: &[&'a str],
    fingerprint: Option<&'a Fingerprint>,
) -> StepKey<'a> {
    assert_eq!(
        input_digests.len(),
        step.inputs.len(),
        "one digest per input"
    );
    let mut inputs: Vec<KeyInput<'a>> = step
        .inputs
        .iter()
        .zip(input_digests)
        .map(|(i, d)| KeyInput {
            mount: &i.mount,
            digest: d,
        })
        .collect();
    inputs.sort();
    StepKey {
        schema: KEY_SCHEMA,
        kind: step.kind.as_str(),
        definition: &step.definition,
        inputs,
        code: step.kind.code_version(),
        fingerprint: if step.measure { fingerprint } else { None },
        pass: step.pass,
    }
}
