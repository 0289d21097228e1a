//! One measurement at a time on this machine, whichever process makes it: a trial holds an
//! exclusive `flock` on a machine-wide file from its server's start to its stop. Within a
//! run the scheduler already measures one trial at a time; this keeps two runs (two studies
//! started side by side, tests in parallel) from measuring over each other, which would
//! make both measurements of a busier machine than either says. The lock goes with the
//! process: a killed run holds nothing.

use std::fs::{File, OpenOptions};
use std::os::unix::io::AsRawFd;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use crate::cancel::CancelToken;

/// How often a waiting trial looks whether the machine is free (and whether it was
/// cancelled).
const POLL: Duration = Duration::from_millis(20);

/// The machine's measurement lock file: `/run/lock/cairn-measure.lock` where that directory
/// is writable (every user of the machine shares it), else one in the temp directory.
pub fn lock_path() -> PathBuf {
    let run_lock = PathBuf::from("/run/lock");
    let writable = std::fs::metadata(&run_lock).is_ok_and(|m| m.is_dir())
        && OpenOptions::new()
            .create(true)
            .append(true)
            .open(run_lock.join("cairn-measure.lock"))
            .is_ok();
    if writable {
        run_lock.join("cairn-measure.lock")
    } else {
        std::env::temp_dir().join("cairn-measure.lock")
    }
}

/// This machine's measurement slot, held until dropped.
#[derive(Debug)]
pub struct MeasureLock {
    _file: File,
    /// How long it waited for another process's measurement.
    pub waited: Duration,
}

impl MeasureLock {
    /// Wait for the machine's measurement slot; `Err` when the run is cancelled while
    /// waiting, or the lock file cannot be opened.
    pub fn acquire(cancel: &CancelToken) -> Result<MeasureLock, String> {
        let path = lock_path();
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .map_err(|e| format!("opening the measurement lock {}: {e}", path.display()))?;
        let t = Instant::now();
        loop {
            // SAFETY: flock on a file descriptor this function owns; no memory involved.
            let r = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
            if r == 0 {
                return Ok(MeasureLock {
                    _file: file,
                    waited: t.elapsed(),
                });
            }
            let e = std::io::Error::last_os_error();
            if e.raw_os_error() != Some(libc::EWOULDBLOCK) {
                return Err(format!("locking {}: {e}", path.display()));
            }
            if cancel.is_cancelled() {
                return Err(
                    "cancelled while waiting for another measurement on this machine".into(),
                );
            }
            std::thread::sleep(POLL);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_holder_waits_for_the_first() {
        let cancel = CancelToken::new();
        let first = MeasureLock::acquire(&cancel).unwrap();
        let waiter = std::thread::spawn(move || {
            let c = CancelToken::new();
            MeasureLock::acquire(&c).unwrap().waited
        });
        std::thread::sleep(Duration::from_millis(200));
        drop(first);
        let waited = waiter.join().unwrap();
        assert!(waited >= Duration::from_millis(100), "{waited:?}");
    }
}
