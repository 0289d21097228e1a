//! Host settings around a trial — the I/O scheduler of the disk holding the server's data,
//! transparent huge pages, a sysctl, a sysfs file: where each is on this machine, whether
//! this machine can set a value (`cairn check`), and a guard that sets them, reads each back,
//! and restores the previous values when dropped — after the trial, on its failure, and on
//! Ctrl-C (a cancelled trial returns and drops it). A SIGKILL drops nothing, so before the
//! first write the guard leaves a journal of the previous values (`/run/cairn/host-settings/
//! <run id>.json`) that the next trial on the machine and `cairn clean` restore once its run
//! is gone. The caller holds the machine's measurement lock while the settings are in place,
//! so two trials never run with different host settings at once.

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use cairn_defs::{HostKnob, HostSettingDef};
use serde::{Deserialize, Serialize};

/// Where a host setting is on this machine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SettingFile {
    pub path: PathBuf,
    /// The disk whose scheduler it is (`vda`), for the I/O scheduler.
    pub disk: Option<String>,
}

/// A setting's file read: its current value and, for a choice list (`a [b] c`), the choices.
struct Reading {
    current: String,
    offered: Option<Vec<String>>,
}

fn read_setting(path: &Path) -> Result<Reading, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let words: Vec<&str> = text.split_whitespace().collect();
    let selected = words
        .iter()
        .find_map(|w| w.strip_prefix('[').and_then(|w| w.strip_suffix(']')));
    Ok(match selected {
        Some(s) => Reading {
            current: s.to_string(),
            offered: Some(
                words
                    .iter()
                    .map(|w| w.trim_start_matches('[').trim_end_matches(']').to_string())
                    .collect(),
            ),
        },
        None => Reading {
            current: words.join(" "),
            offered: None,
        },
    })
}

/// The disk holding `dir`: its name and its `queue/scheduler` file (a partition's is its
/// disk's).
pub fn disk_of(dir: &Path) -> Result<(String, PathBuf), String> {
    let dev = std::fs::metadata(dir)
        .map_err(|e| format!("cannot read {}: {e}", dir.display()))?
        .dev();
    let (major, minor) = (libc::major(dev), libc::minor(dev));
    let sys = Path::new("/sys/dev/block").join(format!("{major}:{minor}"));
    let sys = std::fs::canonicalize(&sys).map_err(|_| {
        format!(
            "{} is on no block device (device {major}:{minor}: a virtual or network filesystem), so it has no I/O scheduler",
            dir.display()
        )
    })?;
    for d in [sys.as_path(), sys.parent().unwrap_or(&sys)] {
        let file = d.join("queue/scheduler");
        if file.exists() {
            let name = d
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            return Ok((name, file));
        }
    }
    Err(format!(
        "the block device of {} ({major}:{minor}) has no I/O scheduler (no queue/scheduler)",
        dir.display()
    ))
}

/// Where `knob` is set on this machine; `data` is the directory holding the server's data,
/// whose disk's I/O scheduler `io-scheduler` sets.
pub fn locate(knob: &HostKnob, data: &Path) -> Result<SettingFile, String> {
    Ok(match knob {
        HostKnob::IoScheduler => {
            let (disk, path) = disk_of(data)?;
            SettingFile {
                path,
                disk: Some(disk),
            }
        }
        HostKnob::TransparentHugepages => SettingFile {
            path: "/sys/kernel/mm/transparent_hugepage/enabled".into(),
            disk: None,
        },
        HostKnob::Sysctl(name) => SettingFile {
            path: Path::new("/proc/sys").join(name.replace('.', "/")),
            disk: None,
        },
        HostKnob::Sysfs(path) => SettingFile {
            path: path.into(),
            disk: None,
        },
    })
}

/// Whether the filesystem holding `path` is mounted read-only.
fn read_only_mount(path: &Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let Ok(c) = std::ffi::CString::new(path.as_os_str().as_bytes()) else {
        return false;
    };
    // SAFETY: statvfs writes into the zeroed struct it is given; `c` is a valid C string.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    let r = unsafe { libc::statvfs(c.as_ptr(), &mut st) };
    r == 0 && st.f_flag & libc::ST_RDONLY != 0
}

/// Whether this process may set host settings (they are the machine's: only root may).
pub fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// Whether this machine can set `knob` to `value`: the file exists, the value is one it
/// offers (a choice list's), it is writable, and cairn runs as root. The error says why not.
pub fn check(knob: &HostKnob, value: &str, data: &Path) -> Result<SettingFile, String> {
    let file = locate(knob, data)?;
    let path = &file.path;
    let shown = path.display();
    let meta = std::fs::metadata(path).map_err(|_| match knob {
        HostKnob::Sysctl(n) => format!("this machine has no sysctl `{n}` ({shown} does not exist)"),
        _ => format!("{shown} does not exist on this machine"),
    })?;
    if !meta.is_file() {
        return Err(format!("{shown} is not a setting's file"));
    }
    let reading = read_setting(path)?;
    if let Some(offered) = &reading.offered {
        if !offered.iter().any(|o| o == value) {
            let whose = match &file.disk {
                Some(disk) => format!(
                    "the disk holding the server's data ({disk}, under {}) offers",
                    data.display()
                ),
                None => format!("{shown} offers"),
            };
            return Err(format!(
                "`{value}` is not one of the values {whose}: {}",
                offered.join(", ")
            ));
        }
    }
    if meta.permissions().mode() & 0o222 == 0 {
        return Err(format!(
            "{shown} is read-only: the kernel does not let it be set"
        ));
    }
    if read_only_mount(path) {
        return Err(format!(
            "{shown} is on a read-only mount (a container without a writable /sys or /proc/sys?): this machine cannot set it"
        ));
    }
    if !is_root() {
        return Err(format!(
            "setting {shown} needs root, and cairn runs as uid {}",
            // SAFETY: geteuid has no preconditions.
            unsafe { libc::geteuid() }
        ));
    }
    Ok(file)
}

/// One setting in place, as the trial records it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Applied {
    /// `io-scheduler`, `sysctl vm.swappiness`, …
    pub setting: String,
    pub file: PathBuf,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disk: Option<String>,
    /// The value before the trial, restored after it.
    pub previous: String,
    /// The value set, as read back.
    pub set: String,
}

/// What the journal holds of one setting: enough to put it back.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct JournalEntry {
    file: PathBuf,
    previous: String,
}

/// The directory of the journals of settings in place: `/run/cairn/host-settings`, or one
/// in the temp directory where /run is not writable.
pub fn journal_dir() -> PathBuf {
    let run = Path::new("/run/cairn/host-settings");
    if std::fs::create_dir_all(run).is_ok() {
        return run.to_path_buf();
    }
    std::env::temp_dir().join("cairn-host-settings")
}

/// Write `value` to `file` and read it back.
fn write_verified(file: &Path, value: &str) -> Result<String, String> {
    std::fs::write(file, value)
        .map_err(|e| format!("writing `{value}` to {}: {e}", file.display()))?;
    let now = read_setting(file)?.current;
    if now != value.split_whitespace().collect::<Vec<_>>().join(" ") {
        return Err(format!(
            "wrote `{value}` to {}, but it reads `{now}`",
            file.display()
        ));
    }
    Ok(now)
}

/// Host settings in place for one trial; dropping it restores them (see [`Self::restore`]).
#[derive(Debug)]
pub struct HostSettingsGuard {
    applied: Vec<Applied>,
    journal: Option<PathBuf>,
    /// What earlier trials had left in place and this one restored first (a killed run's).
    pub leftovers: Vec<String>,
}

impl HostSettingsGuard {
    /// Restore the leftovers of earlier trials ([`restore_leftovers`]), then set each of `settings`
    /// (checked, journalled, written, read back). On an error the settings already made are
    /// restored. `data` is the directory holding the server's data; `run_id` names the
    /// journal. Call it holding the machine's measurement lock.
    pub fn apply(
        settings: &[HostSettingDef],
        data: &Path,
        run_id: &str,
    ) -> Result<HostSettingsGuard, String> {
        let mut guard = HostSettingsGuard {
            applied: Vec::new(),
            journal: None,
            leftovers: Vec::new(),
        };
        if settings.is_empty() {
            return Ok(guard);
        }
        // the caller holds the measurement lock: no other trial's settings are in place, so
        // every journal is a leftover (of a killed run, on a fleet node perhaps of a run
        // whose id this machine cannot judge, or one whose restore failed)
        guard.leftovers = restore_leftovers(|_| true);
        let mut planned = Vec::new();
        for s in settings {
            let file = check(&s.knob, &s.value, data)?;
            let previous = read_setting(&file.path)?.current;
            planned.push((s, file, previous));
        }
        let entries: Vec<JournalEntry> = planned
            .iter()
            .map(|(_, f, previous)| JournalEntry {
                file: f.path.clone(),
                previous: previous.clone(),
            })
            .collect();
        let dir = journal_dir();
        let _ = std::fs::create_dir_all(&dir);
        let journal = dir.join(format!("{run_id}.json"));
        std::fs::write(
            &journal,
            serde_json::to_vec(&entries).expect("a journal serialises"),
        )
        .map_err(|e| {
            format!(
                "cannot write the journal of host settings {}: {e}",
                journal.display()
            )
        })?;
        guard.journal = Some(journal);
        for (s, file, previous) in planned {
            let set = write_verified(&file.path, &s.value)?;
            guard.applied.push(Applied {
                setting: s.knob.describe(),
                file: file.path,
                disk: file.disk,
                previous,
                set,
            });
        }
        Ok(guard)
    }

    /// The settings in place, for the trial's record.
    pub fn applied(&self) -> &[Applied] {
        &self.applied
    }

    /// Put every setting back to its previous value (last set first), read each back, and
    /// remove the journal once all are back. The errors say which could not be restored
    /// (their journal stays, for `cairn clean`).
    pub fn restore(&mut self) -> Vec<String> {
        let mut errors = Vec::new();
        for a in self.applied.drain(..).rev() {
            if let Err(e) = write_verified(&a.file, &a.previous) {
                errors.push(format!("restoring {}: {e}", a.setting));
            }
        }
        if let Some(j) = self.journal.take() {
            if errors.is_empty() {
                let _ = std::fs::remove_file(j);
            }
        }
        errors
    }
}

impl Drop for HostSettingsGuard {
    fn drop(&mut self) {
        for e in self.restore() {
            eprintln!("cairn: {e}");
        }
    }
}

/// Restore the settings journalled by runs `is_stale` says are gone (killed mid-trial), and
/// remove their journals; returns what was restored (`file: value`) and what could not be.
pub fn restore_leftovers(is_stale: impl Fn(&str) -> bool) -> Vec<String> {
    let mut done = Vec::new();
    let Ok(rd) = std::fs::read_dir(journal_dir()) else {
        return done;
    };
    for e in rd.flatten() {
        let path = e.path();
        let Some(run_id) = path
            .file_name()
            .and_then(|n| n.to_str())
            .and_then(|n| n.strip_suffix(".json"))
        else {
            continue;
        };
        if !is_stale(run_id) {
            continue;
        }
        let entries: Vec<JournalEntry> = std::fs::read(&path)
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok())
            .unwrap_or_default();
        let mut ok = true;
        for j in entries.iter().rev() {
            match write_verified(&j.file, &j.previous) {
                Ok(_) => done.push(format!("{}: {}", j.file.display(), j.previous)),
                Err(e) => {
                    ok = false;
                    done.push(format!("could not restore {e}"));
                }
            }
        }
        if ok {
            let _ = std::fs::remove_file(&path);
        }
    }
    done
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_choice_list_reads_as_its_selected_word_and_its_choices() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("scheduler");
        std::fs::write(&f, "none [mq-deadline] kyber\n").unwrap();
        let r = read_setting(&f).unwrap();
        assert_eq!(r.current, "mq-deadline");
        assert_eq!(r.offered.unwrap(), ["none", "mq-deadline", "kyber"]);
        std::fs::write(&f, "4096\t87380  6291456\n").unwrap();
        let r = read_setting(&f).unwrap();
        assert_eq!(r.current, "4096 87380 6291456");
        assert!(r.offered.is_none());
    }

    #[test]
    fn knobs_are_located_where_the_kernel_keeps_them() {
        let at = |k| locate(&k, Path::new("/")).unwrap().path;
        assert_eq!(
            at(HostKnob::Sysctl("vm.swappiness".into())),
            Path::new("/proc/sys/vm/swappiness")
        );
        assert_eq!(
            at(HostKnob::TransparentHugepages),
            Path::new("/sys/kernel/mm/transparent_hugepage/enabled")
        );
    }

    #[test]
    fn a_missing_sysctl_is_refused_by_name() {
        let e = check(
            &HostKnob::Sysctl("vm.no_such_setting".into()),
            "1",
            Path::new("/"),
        )
        .unwrap_err();
        assert!(e.contains("no sysctl `vm.no_such_setting`"), "{e}");
    }

    /// A guard puts a plain file's value back when dropped, and a killed run's journal is
    /// restored by the next; files stand in for /sys (no root needed).
    #[test]
    fn a_journal_left_by_a_gone_run_is_restored() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("setting");
        std::fs::write(&f, "changed\n").unwrap();
        let jdir = journal_dir();
        let run = format!("test-gone-{}", std::process::id());
        std::fs::write(
            jdir.join(format!("{run}.json")),
            serde_json::to_vec(&[JournalEntry {
                file: f.clone(),
                previous: "original".into(),
            }])
            .unwrap(),
        )
        .unwrap();
        let done = restore_leftovers(|id| id == run);
        assert_eq!(done.len(), 1, "{done:?}");
        assert_eq!(std::fs::read_to_string(&f).unwrap(), "original");
        assert!(!jdir.join(format!("{run}.json")).exists());
    }
}
