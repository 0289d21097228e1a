//! Cooperative cancellation: Ctrl-C sets a flag and ends every child process group we
//! started, so nothing keeps running and no step is recorded half-done.

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::Duration;

static CANCELLED: AtomicBool = AtomicBool::new(false);
static GROUPS: Mutex<Option<HashSet<i32>>> = Mutex::new(None);

pub fn is_cancelled() -> bool {
    CANCELLED.load(Ordering::SeqCst)
}

/// Register a running child's process group (its pid: children are started as group leaders).
pub fn register(pgid: i32) {
    GROUPS
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .get_or_insert_with(HashSet::new)
        .insert(pgid);
}

pub fn unregister(pgid: i32) {
    if let Some(set) = GROUPS.lock().unwrap_or_else(|e| e.into_inner()).as_mut() {
        set.remove(&pgid);
    }
}

fn signal_all(sig: i32) -> usize {
    let groups: Vec<i32> = GROUPS
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .as_ref()
        .map(|s| s.iter().copied().collect())
        .unwrap_or_default();
    for g in &groups {
        // SAFETY: kill(2) with a negative pid signals a process group; no memory is touched.
        unsafe {
            libc::kill(-g, sig);
        }
    }
    groups.len()
}

/// Mark the run cancelled and end all children: SIGTERM, then SIGKILL after `grace`.
pub fn cancel_all(grace: Duration) {
    CANCELLED.store(true, Ordering::SeqCst);
    if signal_all(libc::SIGTERM) > 0 {
        let deadline = std::time::Instant::now() + grace;
        while std::time::Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
            let left = GROUPS
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .as_ref()
                .map_or(0, |s| s.len());
            if left == 0 {
                return;
            }
        }
        signal_all(libc::SIGKILL);
    }
}

/// Reset the flag (tests run several engines in one process).
pub fn reset() {
    CANCELLED.store(false, Ordering::SeqCst);
}
