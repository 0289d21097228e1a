//! The store lock: an exclusive `flock` on `store/lock`, whose holder writes its pid and command into it.

use std::fmt;
use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use crate::error::{Result, StoreError};
use crate::Store;

/// Who holds (or last held) the store lock, as written into the lock file by the holder.
/// Fields are `None` when the holder has not written them yet.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LockHolder {
    /// The holder's process id.
    pub pid: Option<u32>,
    /// The holder's command line.
    pub command: Option<String>,
    /// When it took the lock (RFC 3339 UTC).
    pub since: Option<String>,
}

impl fmt::Display for LockHolder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.pid {
            Some(pid) => write!(f, "pid {pid}")?,
            None => write!(f, "another process")?,
        }
        if let Some(cmd) = &self.command {
            write!(f, " ({cmd})")?;
        }
        if let Some(since) = &self.since {
            write!(f, " since {since}")?;
        }
        Ok(())
    }
}

impl LockHolder {
    fn parse(text: &str) -> LockHolder {
        let mut h = LockHolder::default();
        for line in text.lines() {
            match line.split_once('=') {
                Some(("pid", v)) => h.pid = v.trim().parse().ok(),
                Some(("command", v)) => h.command = Some(v.to_string()),
                Some(("since", v)) => h.since = Some(v.to_string()),
                _ => {}
            }
        }
        h
    }

    fn this_process() -> LockHolder {
        let command: Vec<String> = std::env::args().collect();
        LockHolder {
            pid: Some(std::process::id()),
            command: Some(command.join(" ").replace('\n', " ")),
            since: Some(crate::now_rfc3339()),
        }
    }
}

/// The held store lock; released when dropped.
#[derive(Debug)]
pub struct StoreLock {
    file: File,
    path: PathBuf,
}

impl StoreLock {
    /// The lock file.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for StoreLock {
    fn drop(&mut self) {
        // Clear our details so nobody reads them as a live holder; closing releases the flock.
        let _ = self.file.set_len(0);
    }
}

impl Store {
    fn open_lock_file(&self) -> Result<File> {
        OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&self.lock_path)
            .map_err(|e| StoreError::io("open lock file", &self.lock_path, e))
    }

    fn read_holder(&self, mut file: &File) -> LockHolder {
        let mut text = String::new();
        let _ = file
            .seek(SeekFrom::Start(0))
            .and_then(|_| file.read_to_string(&mut text));
        LockHolder::parse(&text)
    }

    fn acquired(&self, mut file: File) -> Result<StoreLock> {
        let h = LockHolder::this_process();
        let mut text = format!("pid={}\n", std::process::id());
        if let Some(c) = &h.command {
            text.push_str(&format!("command={c}\n"));
        }
        if let Some(s) = &h.since {
            text.push_str(&format!("since={s}\n"));
        }
        file.set_len(0)
            .and_then(|_| file.seek(SeekFrom::Start(0)))
            .and_then(|_| file.write_all(text.as_bytes()))
            .map_err(|e| StoreError::io("write lock file", &self.lock_path, e))?;
        Ok(StoreLock {
            file,
            path: self.lock_path.clone(),
        })
    }

    /// Takes the store lock without waiting; `Err(Locked)` naming the holder if it is held.
    /// The lock is per open file: a second `try_lock` conflicts even within one process.
    pub fn try_lock(&self) -> Result<StoreLock> {
        let file = self.open_lock_file()?;
        match fs4::FileExt::try_lock(&file) {
            Ok(()) => self.acquired(file),
            Err(fs4::TryLockError::WouldBlock) => Err(StoreError::Locked {
                path: self.lock_path.clone(),
                holder: self.read_holder(&file),
            }),
            Err(fs4::TryLockError::Error(e)) => Err(StoreError::io("lock", &self.lock_path, e)),
        }
    }

    /// Takes the store lock; if it is held, calls `on_wait` once with the holder's details,
    /// then blocks until it is free.
    pub fn lock(&self, on_wait: impl FnOnce(&LockHolder)) -> Result<StoreLock> {
        let file = self.open_lock_file()?;
        match fs4::FileExt::try_lock(&file) {
            Ok(()) => return self.acquired(file),
            Err(fs4::TryLockError::WouldBlock) => {}
            Err(fs4::TryLockError::Error(e)) => {
                return Err(StoreError::io("lock", &self.lock_path, e))
            }
        }
        on_wait(&self.read_holder(&file));
        fs4::FileExt::lock(&file).map_err(|e| StoreError::io("lock", &self.lock_path, e))?;
        self.acquired(file)
    }
}
