//! The seeded, recorded order of measurements: pass by pass, and within a pass in a
//! pseudo-random order derived from the seed, so drift hits all variants alike.

use cairn_graph::Step;

/// Sort key for a ready measurement: lower runs first.
pub fn rank(seed: u64, step: &Step) -> (u32, u64) {
    let mut h = blake3::Hasher::new();
    h.update(&seed.to_le_bytes());
    h.update(step.address.as_bytes());
    let b = h.finalize();
    let mut x = [0u8; 8];
    x.copy_from_slice(&b.as_bytes()[..8]);
    (step.pass, u64::from_le_bytes(x))
}

/// Default seed of a study: stable across runs, different between studies.
pub fn default_seed(study: &str) -> u64 {
    let b = blake3::hash(study.as_bytes());
    let mut x = [0u8; 8];
    x.copy_from_slice(&b.as_bytes()[..8]);
    u64::from_le_bytes(x)
}
