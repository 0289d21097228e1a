//! Tiny parsers and rules for the plan language's values: the unit-bearing strings (durations, sizes, percentages) and what an environment variable may hold.

use std::time::Duration;

/// `"500ms"`, `"10s"`, `"2m"`, `"1h"`, `"1m30s"` → a [`Duration`]. Units: ms, s, m, h.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    if text.is_empty() {
        return Err("empty duration".into());
    }
    let bytes = text.as_bytes();
    let mut i = 0;
    let mut total_ms: u128 = 0;
    while i < bytes.len() {
        let start = i;
        while i < bytes.len() && bytes[i].is_ascii_digit() {
            i += 1;
        }
        if start == i {
            return Err(format!("expected a number at `{}`", &text[start..]));
        }
        let n: u128 = text[start..i]
            .parse()
            .map_err(|_| "number too large".to_string())?;
        let ustart = i;
        while i < bytes.len() && bytes[i].is_ascii_alphabetic() {
            i += 1;
        }
        let factor = match &text[ustart..i] {
            "ms" => 1,
            "s" => 1_000,
            "m" => 60_000,
            "h" => 3_600_000,
            "" => return Err(format!("`{}` has no unit (ms, s, m or h)", &text[start..i])),
            other => return Err(format!("unknown unit `{other}` (use ms, s, m or h)")),
        };
        total_ms = n
            .checked_mul(factor)
            .and_then(|v| v.checked_add(total_ms))
            .ok_or_else(|| "duration too large".to_string())?;
    }
    let ms = u64::try_from(total_ms).map_err(|_| "duration too large".to_string())?;
    Ok(Duration::from_millis(ms))
}

/// `"256M"`, `"4G"`, `"512K"`, `"1024"` → bytes (binary multiples; an optional trailing `B` or `iB` is accepted).
pub fn parse_size(text: &str) -> Result<u64, String> {
    let text = text.trim();
    let digits_end = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    if digits_end == 0 {
        return Err("a size starts with a number, e.g. \"256M\"".into());
    }
    let n: u64 = text[..digits_end]
        .parse()
        .map_err(|_| "size too large".to_string())?;
    let unit = &text[digits_end..];
    let shift = match unit {
        "" | "B" => 0,
        "K" | "KB" | "KiB" | "k" => 10,
        "M" | "MB" | "MiB" => 20,
        "G" | "GB" | "GiB" => 30,
        "T" | "TB" | "TiB" => 40,
        other => return Err(format!("unknown size unit `{other}` (use K, M, G or T)")),
    };
    n.checked_mul(1u64 << shift)
        .ok_or_else(|| "size too large".to_string())
}

/// `"5%"` → `0.05`.
pub fn parse_percentage(text: &str) -> Result<f64, String> {
    let text = text.trim();
    let Some(number) = text.strip_suffix('%') else {
        return Err("a percentage ends with `%`, e.g. \"5%\"".into());
    };
    let x: f64 = number
        .trim()
        .parse()
        .map_err(|_| format!("`{number}` is not a number"))?;
    if !x.is_finite() || x < 0.0 {
        return Err("a percentage must be a non-negative number".into());
    }
    Ok(x / 100.0)
}

/// Why an environment variable `name=value` cannot be given to a process (the operating
/// system takes no empty name, no `=` in a name, no NUL anywhere), or `None` if it can. The
/// plan parser refuses such a variable where it is written; a server check asks the same.
pub fn env_var_refusal(name: &str, value: &str) -> Option<&'static str> {
    if name.is_empty() {
        Some("an empty name")
    } else if name.contains(['=', '\0']) {
        Some("a name with `=` or NUL")
    } else if value.contains('\0') {
        Some("a value with NUL")
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("10s"), Ok(Duration::from_secs(10)));
        assert_eq!(parse_duration("2m"), Ok(Duration::from_secs(120)));
        assert_eq!(parse_duration("1h"), Ok(Duration::from_secs(3600)));
        assert_eq!(parse_duration("1m30s"), Ok(Duration::from_secs(90)));
        assert!(parse_duration("10").is_err());
        assert!(parse_duration("ten s").is_err());
        assert!(parse_duration("5d").is_err());
        assert!(parse_duration("").is_err());
    }

    #[test]
    fn sizes() {
        assert_eq!(parse_size("1024"), Ok(1024));
        assert_eq!(parse_size("512K"), Ok(512 << 10));
        assert_eq!(parse_size("256M"), Ok(256 << 20));
        assert_eq!(parse_size("4G"), Ok(4 << 30));
        assert!(parse_size("4X").is_err());
        assert!(parse_size("G").is_err());
    }

    #[test]
    fn percentages() {
        assert_eq!(parse_percentage("5%"), Ok(0.05));
        assert_eq!(parse_percentage("12.5%"), Ok(0.125));
        assert!(parse_percentage("5").is_err());
        assert!(parse_percentage("x%").is_err());
    }
}
