//! Names logs: `names/<study>.log`, append-only `address\tkey[\tduration_ms]` lines mapping
//! step addresses to their last key (a hint for `explain`) and how long that run took (the
//! time budget's estimate, without reading every record). Lines written before the duration
//! column have two fields.

use std::collections::{BTreeMap, HashSet};
use std::fs::{self, OpenOptions};
use std::io::{self, Write};
use std::path::PathBuf;

use crate::error::{Result, StoreError};
use crate::record::check_key;
use crate::{atomic, is_hex64, Store};

fn check_study(study: &str) -> Result<()> {
    let bad = |reason| {
        Err(StoreError::InvalidName {
            what: "study name",
            name: study.to_string(),
            reason,
        })
    };
    if study.is_empty() {
        return bad("it is empty");
    }
    if study.starts_with('.') {
        return bad("it may not start with '.'");
    }
    if study.contains(['/', '\\', '\0', '\n', '\t']) {
        return bad("it may not contain '/', '\\', tabs, newlines or NUL");
    }
    Ok(())
}

fn check_address(address: &str) -> Result<()> {
    if address.is_empty() || address.contains(['\t', '\n', '\r']) {
        return Err(StoreError::InvalidName {
            what: "step address",
            name: address.to_string(),
            reason: "it must be non-empty and contain no tabs or newlines",
        });
    }
    Ok(())
}

/// One step's last remembered run: its key, and its duration where the log has it.
#[derive(Debug, Clone, PartialEq)]
pub struct Remembered {
    pub key: String,
    pub duration_ms: Option<f64>,
}

/// Parses a names log: complete, valid lines only (a torn last line is ignored); later lines win.
fn parse_log(text: &[u8]) -> BTreeMap<String, Remembered> {
    let mut map = BTreeMap::new();
    let complete = match text.iter().rposition(|&b| b == b'\n') {
        Some(i) => &text[..=i],
        None => return map,
    };
    for line in complete.split(|&b| b == b'\n') {
        let Ok(line) = std::str::from_utf8(line) else {
            continue;
        };
        let mut fields = line.split('\t');
        let (Some(address), Some(key)) = (fields.next(), fields.next()) else {
            continue;
        };
        let duration_ms = fields
            .next()
            .and_then(|d| d.parse::<f64>().ok())
            .filter(|d| d.is_finite() && *d >= 0.0);
        if !address.is_empty() && is_hex64(key) {
            map.insert(
                address.to_string(),
                Remembered {
                    key: key.to_string(),
                    duration_ms,
                },
            );
        }
    }
    map
}

fn log_line(address: &str, r: &Remembered) -> String {
    match r.duration_ms {
        Some(ms) => format!("{address}\t{}\t{ms:.1}\n", r.key),
        None => format!("{address}\t{}\n", r.key),
    }
}

impl Store {
    fn names_path(&self, study: &str) -> PathBuf {
        self.names.join(format!("{study}.log"))
    }

    /// Appends `address\tkey[\tduration_ms]` to `names/<study>.log` (one `O_APPEND` write,
    /// no fsync): the step's last key, and how long its run took if known.
    pub fn remember(
        &self,
        study: &str,
        address: &str,
        key: &str,
        duration_ms: Option<f64>,
    ) -> Result<()> {
        check_study(study)?;
        check_address(address)?;
        check_key(key)?;
        let path = self.names_path(study);
        let line = log_line(
            address,
            &Remembered {
                key: key.to_string(),
                duration_ms: duration_ms.filter(|d| d.is_finite() && *d >= 0.0),
            },
        );
        OpenOptions::new()
            .append(true)
            .create(true)
            .open(&path)
            .and_then(|mut f| f.write_all(line.as_bytes()))
            .map_err(|e| StoreError::io("append to names log", path, e))
    }

    /// Address → last remembered key for `study` (empty if the study has no log).
    pub fn names(&self, study: &str) -> Result<BTreeMap<String, String>> {
        Ok(self
            .remembered(study)?
            .into_iter()
            .map(|(a, r)| (a, r.key))
            .collect())
    }

    /// Address → last remembered run (key and duration) for `study`.
    pub fn remembered(&self, study: &str) -> Result<BTreeMap<String, Remembered>> {
        check_study(study)?;
        let path = self.names_path(study);
        match fs::read(&path) {
            Ok(bytes) => Ok(parse_log(&bytes)),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(BTreeMap::new()),
            Err(e) => Err(StoreError::io("read names log", path, e)),
        }
    }

    /// Rewrites every names log keeping only entries whose key is in `keep`
    /// (last entry per address). Returns how many lines were dropped.
    pub(crate) fn compact_names(&self, keep: &HashSet<String>) -> Result<usize> {
        let rd = fs::read_dir(&self.names).map_err(|e| StoreError::io("list", &self.names, e))?;
        let mut dropped = 0;
        for ent in rd {
            let ent = ent.map_err(|e| StoreError::io("list", &self.names, e))?;
            let path = ent.path();
            if path.extension().and_then(|e| e.to_str()) != Some("log") {
                continue;
            }
            let bytes = fs::read(&path).map_err(|e| StoreError::io("read names log", &path, e))?;
            let lines = bytes.iter().filter(|&&b| b == b'\n').count();
            let mut out = String::new();
            let mut kept = 0;
            for (address, r) in parse_log(&bytes) {
                if keep.contains(&r.key) {
                    out.push_str(&log_line(&address, &r));
                    kept += 1;
                }
            }
            if kept == lines {
                continue; // already compact
            }
            dropped += lines.saturating_sub(kept);
            atomic::write_atomic(&self.tmp, &path, out.as_bytes(), None)?;
        }
        Ok(dropped)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn torn_and_invalid_lines_ignored() {
        let k1 = "a".repeat(64);
        let k2 = "b".repeat(64);
        let text = format!("x\t{k1}\ny\t{k1}\nbad line\nx\t{k2}\ny\t{}", &k2[..10]);
        let m = parse_log(text.as_bytes());
        assert_eq!(m.len(), 2);
        assert_eq!(m["x"].key, k2);
        assert_eq!(m["y"].key, k1);
    }

    #[test]
    fn durations_read_where_written_and_old_lines_have_none() {
        let k = "a".repeat(64);
        let text = format!("old\t{k}\nnew\t{k}\t1234.5\nbad\t{k}\tNaN\n");
        let m = parse_log(text.as_bytes());
        assert_eq!(m["old"].duration_ms, None);
        assert_eq!(m["new"].duration_ms, Some(1234.5));
        assert_eq!(m["bad"].duration_ms, None);
        assert_eq!(log_line("new", &m["new"]), format!("new\t{k}\t1234.5\n"));
    }

    #[test]
    fn study_names_checked() {
        assert!(check_study("quickstart").is_ok());
        assert!(check_study("../etc").is_err());
        assert!(check_study("").is_err());
        assert!(check_study(".hidden").is_err());
    }
}
