//! A study's lock file (`PLAN.lock`, written by `cairn lock`): the package versions every
//! image of the plan was resolved to, and the digest of every plan file, so a later run —
//! here after a release, or on a peer's machine — builds exactly those versions or says
//! which one it cannot.
//!
//! A lock is a constraint on what an image step may produce, never part of a key: a
//! build whose packages match the lock is the same output whether a lock existed or not.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// The lock file format this code writes and reads.
pub const LOCK_FORMAT: u32 = 1;

/// The contents of a `PLAN.lock`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Lock {
    /// [`LOCK_FORMAT`].
    pub lock: u32,
    pub study: String,
    /// Each plan file (relative to the lock's folder, `/`-separated) → blake3 of its bytes.
    pub plan_files: BTreeMap<String, String>,
    /// Each image step's address (`image/<name>`, `image/<name>/<n>` for a layer) → what
    /// it was resolved to.
    pub images: BTreeMap<String, LockedImage>,
}

/// The packages of one image step as they were when the lock was written.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LockedImage {
    /// The Debian suite and architecture of its base (`bookworm`, `amd64`).
    pub suite: String,
    pub arch: String,
    /// Whether this step is the debootstrap base (its packages all come from the suite's
    /// index) or a layer on it.
    pub base: bool,
    /// Package → version, as `dpkg-query` reported them in the built image.
    pub packages: BTreeMap<String, String>,
}

/// One package whose version differs from the lock.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VersionMismatch {
    pub package: String,
    pub locked: String,
    /// What was found instead (`None`: the package is not there at all).
    pub found: Option<String>,
}

impl std::fmt::Display for VersionMismatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.found {
            Some(v) => write!(f, "{} locked {}, found {v}", self.package, self.locked),
            None => write!(f, "{} locked {}, not found", self.package, self.locked),
        }
    }
}

impl LockedImage {
    /// The locked packages whose version `found` (package → versions on offer, or the one
    /// installed) does not hold.
    pub fn mismatches<'a, V>(&self, found: impl Fn(&str) -> Option<V>) -> Vec<VersionMismatch>
    where
        V: IntoIterator<Item = &'a str>,
    {
        self.packages
            .iter()
            .filter_map(|(package, locked)| {
                let versions: Vec<&str> = found(package)
                    .map(|v| v.into_iter().collect())
                    .unwrap_or_default();
                (!versions.contains(&locked.as_str())).then(|| VersionMismatch {
                    package: package.clone(),
                    locked: locked.clone(),
                    found: (!versions.is_empty()).then(|| versions.join(" | ")),
                })
            })
            .collect()
    }
}

impl LockedImage {
    /// The locked packages whose version `offered` (package → the versions an archive
    /// serves) does not list.
    pub fn not_offered(&self, offered: &BTreeMap<String, Vec<String>>) -> Vec<VersionMismatch> {
        self.mismatches(|p| offered.get(p).map(|v| v.iter().map(String::as_str)))
    }
}

/// Mismatches for a person: the first eight, then how many more.
pub fn describe(wrong: &[VersionMismatch]) -> String {
    const SHOWN: usize = 8;
    let mut s: Vec<String> = wrong.iter().take(SHOWN).map(|m| m.to_string()).collect();
    if wrong.len() > SHOWN {
        s.push(format!("and {} more", wrong.len() - SHOWN));
    }
    s.join("; ")
}

impl Lock {
    /// Parse a lock file's text; the error says what is wrong with it.
    pub fn parse(text: &str) -> Result<Lock, String> {
        let lock: Lock = serde_json::from_str(text).map_err(|e| e.to_string())?;
        if lock.lock != LOCK_FORMAT {
            return Err(format!(
                "lock format {} is not the {LOCK_FORMAT} this cairn reads",
                lock.lock
            ));
        }
        Ok(lock)
    }

    /// The text of the lock file: pretty JSON, keys sorted, one trailing newline.
    pub fn to_text(&self) -> String {
        let mut s = serde_json::to_string_pretty(self).expect("serialises");
        s.push('\n');
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn image(packages: &[(&str, &str)]) -> LockedImage {
        LockedImage {
            suite: "bookworm".into(),
            arch: "amd64".into(),
            base: true,
            packages: packages
                .iter()
                .map(|(p, v)| (p.to_string(), v.to_string()))
                .collect(),
        }
    }

    #[test]
    fn mismatches_name_the_package_its_locked_and_found_versions() {
        let locked = image(&[
            ("less", "590-2"),
            ("mariadb-server", "1:10.11.6"),
            ("gone", "1"),
        ]);
        let installed: BTreeMap<&str, &str> =
            [("less", "590-2"), ("mariadb-server", "1:10.11.14")].into();
        let m = locked.mismatches(|p| installed.get(p).map(|v| [*v]));
        assert_eq!(m.len(), 2);
        assert_eq!(m[0].to_string(), "gone locked 1, not found");
        assert_eq!(
            m[1].to_string(),
            "mariadb-server locked 1:10.11.6, found 1:10.11.14"
        );
        // an archive offering several versions holds the lock if one of them is locked
        let offered: BTreeMap<&str, Vec<&str>> = [
            ("less", vec!["590-1", "590-2"]),
            ("mariadb-server", vec!["1:10.11.6"]),
            ("gone", vec!["1"]),
        ]
        .into();
        assert!(locked
            .mismatches(|p| offered.get(p).map(|v| v.iter().copied()))
            .is_empty());
        let owned: BTreeMap<String, Vec<String>> = offered
            .iter()
            .map(|(p, v)| (p.to_string(), v.iter().map(|x| x.to_string()).collect()))
            .collect();
        assert!(locked.not_offered(&owned).is_empty());
        let many: Vec<VersionMismatch> = (0..10)
            .map(|i| VersionMismatch {
                package: format!("p{i}"),
                locked: "1".into(),
                found: None,
            })
            .collect();
        assert!(describe(&many).ends_with("p7 locked 1, not found; and 2 more"));
    }

    #[test]
    fn a_lock_round_trips_and_refuses_unknown_formats_and_fields() {
        let lock = Lock {
            lock: LOCK_FORMAT,
            study: "s".into(),
            plan_files: [("plan.kdl".to_string(), "ab".to_string())].into(),
            images: [("image/x".to_string(), image(&[("less", "590-2")]))].into(),
        };
        assert_eq!(Lock::parse(&lock.to_text()).unwrap(), lock);
        let other = lock.to_text().replace("\"lock\": 1", "\"lock\": 9");
        assert!(Lock::parse(&other).unwrap_err().contains("lock format 9"));
        let extra = lock.to_text().replacen('{', "{\"surprise\": 1,", 1);
        assert!(Lock::parse(&extra).unwrap_err().contains("surprise"));
    }
}
