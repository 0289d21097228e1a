//! The machine fingerprint that measurement keys carry, so results from different
//! machines are never mixed silently. Probing lives in `cairn-exec`; this is the value.
//!
//! It is the machine's *class*: the facts that decide whether a measurement can be reused
//! and compared — CPU model, physical cores, hardware threads (so SMT on/off), memory
//! rounded to the nearest GiB, the kernel's version without its build tag, and the runtime
//! (the container engine's major.minor version, or `host`). Two instances of one machine
//! type differ in `MemTotal` by some KiB and in the kernel's build tag; they are one class,
//! so they share results. The exact facts (MemTotal to the byte, the full kernel release
//! and build, governor, turbo, mitigations, huge pages, I/O schedulers, cgroup limits) are
//! recorded beside each measurement (`extra.machine`), never keyed.
//!
//! Changing what is in this struct changes every measurement key (see the golden tests).

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Fingerprint {
    pub cpu_model: String,
    pub cores: u32,
    pub threads: u32,
    /// `MemTotal` rounded to the nearest GiB ([`memory_class`]).
    pub memory_gib: u64,
    /// The kernel's version without its build tag ([`kernel_class`]), e.g. `6.1.0`.
    pub kernel: String,
    /// e.g. "host" for the process executor, "docker 20.10" for containers ([`runtime_class`]).
    pub runtime: String,
}

/// A class's short stable name: the first 12 hex of blake3 over its JSON (the fields in
/// their declared order, as keys hold it), e.g. `3f9a1c2b7d4e`. Every machine of one class
/// has the same id, on every run; people pass it where a command asks for a class
/// (`--measured-on`) instead of the class's JSON.
pub fn class_id(class: &Fingerprint) -> String {
    let json = serde_json::to_vec(class).expect("a class serialises");
    blake3::hash(&json).to_hex()[..CLASS_ID_LEN].to_string()
}

/// Hex digits in a [`class_id`].
pub const CLASS_ID_LEN: usize = 12;

/// `MemTotal` in bytes → GiB, rounded to the nearest: the kernel reserves a machine- and
/// boot-dependent few MiB, so the exact number differs between instances of one type.
pub fn memory_class(memory_bytes: u64) -> u64 {
    (memory_bytes + (1 << 29)) >> 30
}

/// A kernel release → its version: the leading `digits.digits…`, without the build tag
/// (`6.1.0-13-cloud-amd64` → `6.1.0`, `6.18.44-fc-v1252` → `6.18.44`).
pub fn kernel_class(release: &str) -> String {
    let end = release
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(release.len());
    let v = release[..end].trim_end_matches('.');
    if v.is_empty() {
        release.to_string()
    } else {
        v.to_string()
    }
}

/// A runtime's description → its class: `Docker Engine 20.10.24+dfsg1 (linux/amd64)` →
/// `docker 20.10` (patch releases and distribution suffixes do not change how it runs a
/// server); anything else is kept as it is.
pub fn runtime_class(runtime: &str) -> String {
    let Some(rest) = runtime.strip_prefix("Docker Engine ") else {
        return runtime.to_string();
    };
    let version = rest.split_whitespace().next().unwrap_or("");
    let mut parts = version.split(['.', '+', '-', '~']);
    match (parts.next(), parts.next()) {
        (Some(a), Some(b))
            if a.chars().all(|c| c.is_ascii_digit()) && b.chars().all(|c| c.is_ascii_digit()) =>
        {
            format!("docker {a}.{b}")
        }
        _ => runtime.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Fingerprint {
        Fingerprint {
            cpu_model: "AMD EPYC".into(),
            cores: 2,
            threads: 2,
            memory_gib: 24,
            kernel: "6.18.44".into(),
            runtime: "docker 20.10".into(),
        }
    }

    #[test]
    fn a_class_id_is_twelve_hex_and_follows_the_class_only() {
        let id = class_id(&sample());
        assert_eq!(id.len(), CLASS_ID_LEN);
        assert!(id.chars().all(|c| c.is_ascii_hexdigit()));
        // pinned: an id printed yesterday names the same class today, on any machine
        assert_eq!(id, "356d3065fc2c");
        let round_trip: Fingerprint =
            serde_json::from_value(serde_json::to_value(sample()).unwrap()).unwrap();
        assert_eq!(class_id(&round_trip), id);
        let other = Fingerprint {
            threads: 4,
            ..sample()
        };
        assert_ne!(class_id(&other), id);
    }

    #[test]
    fn two_instances_of_one_type_are_one_class() {
        // MemTotal of two instances here, 128 KiB apart
        assert_eq!(memory_class(24683792 * 1024), 24);
        assert_eq!(memory_class(24683664 * 1024), 24);
        assert_eq!(
            kernel_class("6.18.44-fc-v1252"),
            kernel_class("6.18.44-fc-v1253")
        );
        assert_eq!(kernel_class("6.1.0-13-cloud-amd64"), "6.1.0");
        assert_eq!(kernel_class("weird"), "weird");
    }

    #[test]
    fn runtime_classes() {
        assert_eq!(
            runtime_class("Docker Engine 20.10.24+dfsg1 (linux/amd64)"),
            "docker 20.10"
        );
        assert_eq!(runtime_class("host"), "host");
        assert_eq!(
            runtime_class("Docker Engine (unreachable)"),
            "Docker Engine (unreachable)"
        );
    }
}
