//! Snapshots of cairn's human output: what varies between runs and machines (the sandbox's
//! path, elapsed-time stamps, durations) is replaced by placeholders before comparing, so a
//! snapshot changes only when the output's content or layout does.

use std::path::Path;

/// `text` with the sandbox path as `[SANDBOX]`, log-line stamps (`[   0.07s]`) as `[T]` and
/// durations (`(12 ms)`, `(1.5 s)`, `in 72 ms`) as `<dur>`.
pub fn normalize(text: &str, sandbox: Option<&Path>) -> String {
    let mut text = text.to_string();
    if let Some(root) = sandbox {
        // the canonical form first: it may be longer than the path as given (a symlinked tmp)
        if let Ok(canonical) = root.canonicalize() {
            text = text.replace(&*canonical.to_string_lossy(), "[SANDBOX]");
        }
        text = text.replace(&*root.to_string_lossy(), "[SANDBOX]");
    }
    text.lines()
        .map(|l| redact_durations(&redact_stamp(l)))
        .collect::<Vec<_>>()
        .join("\n")
}

/// `[   0.07s] rest` → `[T] rest`: the time since the run started, on every log line.
fn redact_stamp(line: &str) -> String {
    if let Some(rest) = line.strip_prefix('[') {
        if let Some((stamp, after)) = rest.split_once("s]") {
            let is_stamp = !stamp.trim().is_empty()
                && stamp
                    .chars()
                    .all(|c| c == ' ' || c == '.' || c.is_ascii_digit());
            if is_stamp {
                return format!("[T]{after}");
            }
        }
    }
    line.to_string()
}

/// A number followed by ` ms` or ` s`, right after `(` or `in `, becomes `<dur>`.
fn redact_durations(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut rest = line;
    while let Some(start) = rest.find(|c: char| c.is_ascii_digit()) {
        let before = &rest[..start];
        let number_len = rest[start..]
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len() - start);
        let after = &rest[start + number_len..];
        let unit = [" ms", " s"]
            .into_iter()
            .find(|u| after.starts_with(u) && !after[u.len()..].starts_with(char::is_alphanumeric));
        let led_in = before.ends_with('(') || before.ends_with("in ");
        out.push_str(before);
        match unit {
            Some(u) if led_in => {
                out.push_str("<dur>");
                rest = &after[u.len()..];
            }
            _ => {
                out.push_str(&rest[start..start + number_len]);
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stamps_and_durations_are_redacted() {
        let text = "[   0.07s] done    gen[n=1] (11 ms)\n[  12.50s] 4 steps: 4 ran in 1.5 s\n";
        assert_eq!(
            normalize(text, None),
            "[T] done    gen[n=1] (<dur>)\n[T] 4 steps: 4 ran in <dur>"
        );
    }

    #[test]
    fn other_numbers_stay() {
        let line = "gen[n=2] 21703968ad8f 4 steps: 0 cached, 3 will run (2 s";
        assert_eq!(redact_durations(line), line.replace("(2 s", "(<dur>"));
        assert_eq!(redact_durations("step 3 ms-x"), "step 3 ms-x");
    }
}
