//! A machine class (a record's `fingerprint`) as one line for a reader, the same in reports,
//! comparisons and messages: `AMD EPYC, 2 cores / 2 threads, 24.0 GiB, kernel 6.18.44,
//! docker 20.10`.

use serde_json::Value;

/// The class `fingerprint` (as recorded) as one line; a field it lacks shows as `?`.
pub fn machine_line(fingerprint: &Value) -> String {
    let text = |k: &str| match fingerprint.get(k) {
        Some(Value::String(s)) => s.clone(),
        Some(v) if !v.is_null() => v.to_string(),
        _ => "?".to_string(),
    };
    let count = |k: &str| fingerprint.get(k).and_then(Value::as_u64).unwrap_or(0);
    // records made before the class had the exact bytes
    let gib = fingerprint
        .get("memory_gib")
        .and_then(Value::as_u64)
        .map_or(count("memory_bytes") as f64 / (1u64 << 30) as f64, |g| {
            g as f64
        });
    format!(
        "{}, {} cores / {} threads, {gib:.1} GiB, kernel {}, {}",
        text("cpu_model"),
        count("cores"),
        count("threads"),
        text("kernel"),
        text("runtime")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_class_and_an_old_record_s_exact_bytes() {
        let class = serde_json::json!({"cpu_model": "AMD EPYC", "cores": 2, "threads": 2,
            "memory_gib": 24, "kernel": "6.18.44", "runtime": "docker 20.10"});
        assert_eq!(
            machine_line(&class),
            "AMD EPYC, 2 cores / 2 threads, 24.0 GiB, kernel 6.18.44, docker 20.10"
        );
        let old = serde_json::json!({"cpu_model": "x", "cores": 1, "threads": 2,
            "memory_bytes": 3u64 << 29, "kernel": "6.1", "runtime": "process"});
        assert!(machine_line(&old).contains("1.5 GiB"));
    }
}
