//! Whether a text's numbers come from its data: each number written in a report's text must
//! be one of the data's numbers (`data.json`) as the text rounds it — itself, as a
//! percentage, as a signed change (`-15.3%` of a ratio 0.847), or a count of its entries.
//! Tests hold the report's headline to this, so the text cannot state what the data does
//! not show.

use serde_json::Value;

/// The numbers written in `text` that no number of `data` explains, each as written.
pub fn unbacked(text: &str, data: &Value) -> Vec<String> {
    let mut values = Vec::new();
    let mut words = Vec::new();
    collect(data, &mut values, &mut words);
    numbers_in(text)
        .into_iter()
        .filter(|written| !words.contains(written) && !backed(written, &values))
        .collect()
}

/// The numbers of `text` as written: `0.847`, `15.3`, `4` (signs and `×` apart).
fn numbers_in(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = String::new();
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        let continues_decimal = c == '.'
            && !current.is_empty()
            && !current.contains('.')
            && chars.peek().is_some_and(char::is_ascii_digit);
        if c.is_ascii_digit() || continues_decimal {
            current.push(c);
        } else if !current.is_empty() {
            out.push(std::mem::take(&mut current));
        }
    }
    if !current.is_empty() {
        out.push(current);
    }
    out
}

fn collect(v: &Value, values: &mut Vec<f64>, words: &mut Vec<String>) {
    match v {
        Value::Number(n) => values.extend(n.as_f64()),
        Value::String(s) => words.extend(numbers_in(s)),
        Value::Array(a) => {
            values.push(a.len() as f64);
            for x in a {
                collect(x, values, words);
            }
        }
        Value::Object(m) => {
            values.push(m.len() as f64);
            for (k, x) in m {
                words.extend(numbers_in(k));
                collect(x, values, words);
            }
        }
        _ => {}
    }
}

/// `written` (with its decimals) is some value rounded, as a percentage, or as a change.
fn backed(written: &str, values: &[f64]) -> bool {
    let Ok(number) = written.parse::<f64>() else {
        return false;
    };
    let decimals = written.split_once('.').map_or(0, |(_, d)| d.len());
    let rounded = |v: f64| format!("{:.*}", decimals, v).parse::<f64>().ok();
    values.iter().any(|&v| {
        [v, v * 100.0, (v - 1.0).abs() * 100.0]
            .into_iter()
            .any(|x| rounded(x) == Some(number))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn numbers_are_backed_rounded_as_percentages_changes_or_counts() {
        let data = json!({"ratio": 0.84671, "level": 0.98477, "cv": 0.2239,
            "trials": [1, 2, 3], "kernel": "6.18.44"});
        assert!(unbacked(
            "×0.847 (-15.3%) [98.5% CI], CV 22.4%, 3 trials, kernel 6.18.44",
            &data
        )
        .is_empty());
        assert_eq!(unbacked("×0.848 and 7 passes", &data), ["0.848", "7"]);
    }
}
