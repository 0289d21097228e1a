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
        code: &step.code,
        fingerprint: if step.measure { fingerprint } else { None },
        pass: step.pass,
    }
}

/// Version of the definition-key layout. Bumping it changes every definition key (never a
/// step key).
pub const DEFINITION_KEY_SCHEMA: u32 = 1;

/// What a definition key hashes: like [`StepKey`] without the machine and with the
/// *definition keys* of the inputs in place of their output digests.
#[derive(Serialize)]
struct DefinitionKey<'a> {
    schema: u32,
    kind: &'a str,
    definition: &'a serde_json::Value,
    inputs: Vec<KeyInput<'a>>,
    code: &'a str,
    pass: u32,
}

/// The definition key of `step`, given the definition keys of its inputs (same order as
/// `step.inputs`). Two records with one definition key are the same step of the same
/// recipe, whichever machine made them and whatever its images' ids were: `cairn compare`,
/// `history` and `gc` match results by it.
pub fn definition_key(step: &Step, input_keys: &[&str]) -> String {
    assert_eq!(input_keys.len(), step.inputs.len(), "one key per input");
    let mut inputs: Vec<KeyInput<'_>> = step
        .inputs
        .iter()
        .zip(input_keys)
        .map(|(i, d)| KeyInput {
            mount: &i.mount,
            digest: d,
        })
        .collect();
    inputs.sort();
    let k = DefinitionKey {
        schema: DEFINITION_KEY_SCHEMA,
        kind: step.kind.as_str(),
        definition: &step.definition,
        inputs,
        code: &step.code,
        pass: step.pass,
    };
    blake3::hash(&serde_json::to_vec(&k).expect("key serialises"))
        .to_hex()
        .to_string()
}

/// Fills [`Step::definition_key`] of every step, walking `order` (a topological order).
pub(crate) fn fill_definition_keys(steps: &mut [Step], order: &[usize]) {
    for &id in order {
        let input_keys: Vec<String> = steps[id]
            .inputs
            .iter()
            .map(|i| steps[i.from].definition_key.clone())
            .collect();
        let refs: Vec<&str> = input_keys.iter().map(String::as_str).collect();
        steps[id].definition_key = definition_key(&steps[id], &refs);
    }
}
