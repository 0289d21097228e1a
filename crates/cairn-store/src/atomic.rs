//! Atomic file writes: temp file in `store/tmp`, fsync, rename into place; and temp-file naming/cleanup.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;

use crate::error::{Result, StoreError};

/// Counter making temp names unique within this process (shared by all `Store`s).
static TMP_COUNTER: AtomicU64 = AtomicU64::new(0);

/// This process's id, asked of the kernel once.
pub(crate) fn pid() -> u32 {
    static PID: OnceLock<u32> = OnceLock::new();
    *PID.get_or_init(std::process::id)
}

/// A fresh temp path in `tmp_dir`: `<pid>-<counter>.<tag>`. The pid prefix lets `Store::open`
/// tell a live writer's temp file from a stale one.
pub(crate) fn tmp_path(tmp_dir: &Path, tag: &str) -> PathBuf {
    let n = TMP_COUNTER.fetch_add(1, Ordering::Relaxed);
    tmp_dir.join(format!("{}-{n}.{tag}", pid()))
}

/// Creates a new temp file (exclusive create) and returns it with its path.
pub(crate) fn create_tmp(tmp_dir: &Path, tag: &str) -> Result<(File, PathBuf)> {
    loop {
        let path = tmp_path(tmp_dir, tag);
        match OpenOptions::new().write(true).create_new(true).open(&path) {
            Ok(f) => return Ok((f, path)),
            // A leftover from an earlier process that had our pid: pick the next number.
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(StoreError::io("create temp file", path, e)),
        }
    }
}

/// Removes a temp file on drop unless disarmed (after a successful rename).
pub(crate) struct TmpGuard(pub(crate) Option<PathBuf>);

impl TmpGuard {
    pub(crate) fn disarm(&mut self) {
        self.0 = None;
    }
}

impl Drop for TmpGuard {
    fn drop(&mut self) {
        if let Some(p) = self.0.take() {
            let _ = fs::remove_file(p);
        }
    }
}

/// Writes `bytes` to `dest` atomically: temp file, fsync, rename; then fsyncs `dir` (the
/// open directory `dest` is in), if given.
pub(crate) fn write_atomic(
    tmp_dir: &Path,
    dest: &Path,
    bytes: &[u8],
    dir: Option<&File>,
) -> Result<()> {
    let (mut f, tmp) = create_tmp(tmp_dir, "w")?;
    let mut guard = TmpGuard(Some(tmp.clone()));
    f.write_all(bytes)
        .map_err(|e| StoreError::io("write temp file", &tmp, e))?;
    f.sync_all()
        .map_err(|e| StoreError::io("fsync temp file", &tmp, e))?;
    drop(f);
    rename(&tmp, dest)?;
    guard.disarm();
    if let Some(dir) = dir {
        let name = dest.parent().unwrap_or(dest);
        dir.sync_all()
            .map_err(|e| StoreError::io("fsync directory", name, e))?;
    }
    Ok(())
}

pub(crate) fn rename(from: &Path, to: &Path) -> Result<()> {
    fs::rename(from, to).map_err(|e| StoreError::io("rename temp file into place at", to, e))
}

/// fsyncs a directory so that renames into it are durable.
pub(crate) fn fsync_dir(dir: &Path) -> Result<()> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| StoreError::io("fsync directory", dir, e))
}

/// Is this temp file stale, i.e. not being written by a live process?
/// Names not of the form `<pid>-…` are always stale.
pub(crate) fn is_stale_tmp(name: &str) -> bool {
    let pid = name
        .split_once('-')
        .and_then(|(p, _)| p.parse::<i32>().ok())
        .filter(|p| *p > 0);
    match pid {
        None => true,
        Some(pid) => !process_alive(pid),
    }
}

fn process_alive(pid: i32) -> bool {
    if pid as u32 == self::pid() {
        return true;
    }
    // SAFETY: kill with signal 0 only checks for existence and permission; it sends nothing.
    let r = unsafe { libc::kill(pid, 0) };
    r == 0 || io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}

/// Lists stale temp files in `tmp_dir`.
pub(crate) fn stale_tmp_files(tmp_dir: &Path) -> Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    let rd = fs::read_dir(tmp_dir).map_err(|e| StoreError::io("list", tmp_dir, e))?;
    for ent in rd {
        let ent = ent.map_err(|e| StoreError::io("list", tmp_dir, e))?;
        let name = ent.file_name();
        if is_stale_tmp(&name.to_string_lossy()) {
            out.push(ent.path());
        }
    }
    out.sort();
    Ok(out)
}

/// Renames any file (no temp involved), naming the destination in errors.
pub(crate) fn rename_any(from: &Path, to: &Path) -> Result<()> {
    fs::rename(from, to).map_err(|e| StoreError::io("move file to", to, e))
}
