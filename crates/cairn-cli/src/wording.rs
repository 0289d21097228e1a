//! Counts and lists in words, as the CLI prints them: `1 claim`, `26 trials`,
//! `2 analyses`, `26 trials and 1 analysis`.

/// `n` and its noun, plural unless `n` is 1 (`analysis` → `analyses`, else `+s`).
pub fn count(n: usize, noun: &str) -> String {
    if n == 1 {
        return format!("1 {noun}");
    }
    match noun.strip_suffix("is") {
        Some(stem) => format!("{n} {stem}es"),
        None => format!("{n} {noun}s"),
    }
}

/// `a`, `a and b`, `a, b and c`.
pub fn and_list(items: &[String]) -> String {
    match items {
        [] => String::new(),
        [one] => one.clone(),
        [init @ .., last] => format!("{} and {last}", init.join(", ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_read_as_english() {
        assert_eq!(count(1, "claim"), "1 claim");
        assert_eq!(count(0, "claim"), "0 claims");
        assert_eq!(count(26, "trial"), "26 trials");
        assert_eq!(count(2, "analysis"), "2 analyses");
        assert_eq!(count(1, "analysis"), "1 analysis");
    }

    #[test]
    fn lists_join_with_and() {
        let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        assert_eq!(and_list(&s(&["a"])), "a");
        assert_eq!(and_list(&s(&["a", "b"])), "a and b");
        assert_eq!(and_list(&s(&["a", "b", "c"])), "a, b and c");
    }
}
