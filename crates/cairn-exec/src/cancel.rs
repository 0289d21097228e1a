//! Cooperative cancellation: a [`CancelToken`] that Ctrl-C trips. It ends every child process
//! group registered with it, so nothing keeps running and no step is recorded half-done.
//!
//! The token is state passed to whoever starts children (a run context owns one), not a
//! process-wide global: two engines in one process (tests) cancel independently.

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// A cancellation flag and the process groups it ends. Cheap to clone; clones share state.
#[derive(Clone, Default)]
pub struct CancelToken {
    inner: Arc<Inner>,
}

#[derive(Default)]
struct Inner {
    cancelled: AtomicBool,
    /// Process groups of running children (their pids: children are started as group leaders).
    groups: Mutex<HashSet<i32>>,
}

impl CancelToken {
    pub fn new() -> Self {
        Self::default()
    }

    /// Whether [`CancelToken::cancel_all`] was called.
    pub fn is_cancelled(&self) -> bool {
        self.inner.cancelled.load(Ordering::SeqCst)
    }

    /// Register a running child's process group.
    pub fn register(&self, pgid: i32) {
        self.groups().insert(pgid);
    }

    /// Forget a process group (its child has ended).
    pub fn unregister(&self, pgid: i32) {
        self.groups().remove(&pgid);
    }

    /// Mark the token cancelled and end all registered children: SIGTERM, then SIGKILL to the
    /// groups still registered after `grace`.
    pub fn cancel_all(&self, grace: Duration) {
        self.inner.cancelled.store(true, Ordering::SeqCst);
        if self.signal_all(libc::SIGTERM) == 0 {
            return;
        }
        let deadline = Instant::now() + grace;
        while Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
            if self.groups().is_empty() {
                return;
            }
        }
        self.signal_all(libc::SIGKILL);
    }

    fn groups(&self) -> MutexGuard<'_, HashSet<i32>> {
        // a panic elsewhere while holding the lock leaves the set usable
        self.inner.groups.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn signal_all(&self, sig: i32) -> usize {
        let groups: Vec<i32> = self.groups().iter().copied().collect();
        for g in &groups {
            // SAFETY: kill(2) with a negative pid signals a process group; no memory is touched.
            unsafe {
                libc::kill(-g, sig);
            }
        }
        groups.len()
    }
}

impl std::fmt::Debug for CancelToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CancelToken")
            .field("cancelled", &self.is_cancelled())
            .field("groups", &self.groups().len())
            .finish()
    }
}

/// Two tokens are equal when they are clones of one another (they share their state).
impl PartialEq for CancelToken {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }
}

impl Eq for CancelToken {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_independent_and_clones_share() {
        let a = CancelToken::new();
        let b = CancelToken::new();
        let a2 = a.clone();
        assert_eq!(a, a2);
        assert_ne!(a, b);
        a.cancel_all(Duration::from_millis(10));
        assert!(a2.is_cancelled());
        assert!(!b.is_cancelled());
    }

    #[test]
    fn cancel_ends_registered_groups() {
        use std::os::unix::process::CommandExt;
        let token = CancelToken::new();
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .process_group(0)
            .spawn()
            .unwrap();
        token.register(child.id() as i32);
        token.cancel_all(Duration::from_millis(200));
        let status = child.wait().unwrap();
        assert!(!status.success());
    }
}
