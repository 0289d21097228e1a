//! Server logs in error messages: the last lines, with the early `[ERROR]` lines that would
//! otherwise be cut off.

/// The last `n` lines of a server log, preceded by up to 10 earlier `[ERROR]` lines that
/// would otherwise be cut off.
pub fn log_excerpt(log: &str, n: usize) -> String {
    let lines: Vec<&str> = log.lines().collect();
    let cut = lines.len().saturating_sub(n);
    let errors: Vec<&str> = lines[..cut]
        .iter()
        .copied()
        .filter(|l| l.contains("[ERROR]"))
        .take(10)
        .collect();
    let mut out = String::new();
    if !errors.is_empty() {
        out.push_str(&errors.join("\n"));
        out.push_str("\n[…]\n");
    }
    out.push_str(&lines[cut..].join("\n"));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn excerpt_keeps_early_errors() {
        let mut log = String::from("x [ERROR] first\n");
        for i in 0..40 {
            log.push_str(&format!("line {i}\n"));
        }
        let e = log_excerpt(&log, 30);
        assert!(e.starts_with("x [ERROR] first\n[…]\nline 10\n"), "{e}");
        assert!(e.ends_with("line 39"));
        assert_eq!(log_excerpt("a\nb", 30), "a\nb");
    }
}
