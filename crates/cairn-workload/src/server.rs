//! What the server says about itself around a run: `SHOW GLOBAL STATUS` before and after (their numeric deltas) and `SHOW GLOBAL VARIABLES`.

use std::collections::BTreeMap;

use mysql::prelude::Queryable;

use crate::{Error, Target};

/// `SHOW GLOBAL STATUS`, name → value as the server printed it.
pub fn global_status(target: &Target) -> Result<BTreeMap<String, String>, Error> {
    show(target, "SHOW GLOBAL STATUS")
}

/// `SHOW GLOBAL VARIABLES`, name → value.
pub fn global_variables(target: &Target) -> Result<BTreeMap<String, String>, Error> {
    show(target, "SHOW GLOBAL VARIABLES")
}

fn show(target: &Target, sql: &str) -> Result<BTreeMap<String, String>, Error> {
    let mut c = target.connect_no_db()?;
    let rows: Vec<(String, Option<String>)> = c.query(sql).map_err(|e| Error::sql(sql, e))?;
    Ok(rows
        .into_iter()
        .map(|(k, v)| (k, v.unwrap_or_default()))
        .collect())
}

/// `after - before` for every counter that is a number in both and changed.
pub fn status_deltas(
    before: &BTreeMap<String, String>,
    after: &BTreeMap<String, String>,
) -> BTreeMap<String, f64> {
    after
        .iter()
        .filter_map(|(k, a)| {
            let a: f64 = a.parse().ok()?;
            let b: f64 = before.get(k)?.parse().ok()?;
            (a != b).then(|| (k.clone(), a - b))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deltas_of_numbers_that_changed() {
        let m = |v: &[(&str, &str)]| -> BTreeMap<String, String> {
            v.iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect()
        };
        let before = m(&[
            ("Com_select", "10"),
            ("Uptime", "5"),
            ("Ssl_cipher", ""),
            ("X", "1"),
        ]);
        let after = m(&[
            ("Com_select", "25"),
            ("Uptime", "7"),
            ("Ssl_cipher", "AES"),
            ("X", "1"),
        ]);
        let d = status_deltas(&before, &after);
        assert_eq!(d.get("Com_select"), Some(&15.0));
        assert_eq!(d.get("Uptime"), Some(&2.0));
        assert!(!d.contains_key("Ssl_cipher") && !d.contains_key("X"));
    }
}
