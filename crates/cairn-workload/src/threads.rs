//! Client threads that fail the run instead of the process: spawning and joining the drivers'
//! threads (one per client or loader connection), and a start gate the threads wait at that
//! can be called off.
//!
//! A thread the OS refuses to start (too many threads, no memory for its stack) or a thread
//! that panics becomes an [`Error::Thread`], never a panic of the caller; the threads already
//! running are told to stop first (the caller's `stop`, and the gate is called off so none
//! waits for a thread that never comes), so the run ends and the caller — e.g. a trial with
//! its server — cleans up on its ordinary error path.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Condvar, Mutex};

use crate::Error;

/// Where client threads wait until all of them are ready, then start together (what a
/// `std::sync::Barrier` does), except that the wait can be called off: a barrier waits
/// forever for a thread that was never spawned or that panicked before it arrived.
pub struct StartGate {
    parties: usize,
    state: Mutex<Gate>,
    changed: Condvar,
}

#[derive(Default)]
struct Gate {
    arrived: usize,
    open: bool,
    called_off: bool,
}

impl StartGate {
    /// A gate that opens when `parties` threads wait at it.
    pub fn new(parties: usize) -> Self {
        StartGate {
            parties,
            state: Mutex::new(Gate::default()),
            changed: Condvar::new(),
        }
    }

    /// Wait until every party has arrived (`true`: go) or the start was called off (`false`).
    pub fn wait(&self) -> bool {
        let mut g = self.state.lock().unwrap_or_else(|p| p.into_inner());
        g.arrived += 1;
        if g.arrived >= self.parties {
            g.open = true;
            self.changed.notify_all();
        }
        while !g.open && !g.called_off {
            g = self.changed.wait(g).unwrap_or_else(|p| p.into_inner());
        }
        !g.called_off
    }

    /// Release every waiting thread (and every later one) with `false`. After the gate opened
    /// this changes nothing for the threads already past it.
    pub fn call_off(&self) {
        let mut g = self.state.lock().unwrap_or_else(|p| p.into_inner());
        if !g.open {
            g.called_off = true;
        }
        self.changed.notify_all();
    }
}

/// Run `body(0)` … `body(n - 1)` on `n` scoped threads named `<name>-<i>` and return their
/// results in order once all have ended. If a thread cannot be spawned or panics, `trouble`
/// is called (it must make the other threads end soon: set their stop flag, call off their
/// [`StartGate`]), the remaining threads are joined, and the error says which thread and why.
pub fn run_threads<T, B, S>(n: u32, name: &str, body: B, trouble: S) -> Result<Vec<T>, Error>
where
    T: Send,
    B: Fn(u32) -> T + Sync,
    S: Fn() + Sync,
{
    run_threads_with(n, name, &|_| None, body, trouble)
}

/// [`run_threads`] with the stack size of thread `i` (`None`: the default); a test seam for
/// a thread the OS refuses to start.
pub(crate) fn run_threads_with<T, B, S>(
    n: u32,
    name: &str,
    stack_size: &(dyn Fn(u32) -> Option<usize> + Sync),
    body: B,
    trouble: S,
) -> Result<Vec<T>, Error>
where
    T: Send,
    B: Fn(u32) -> T + Sync,
    S: Fn() + Sync,
{
    let (body, trouble) = (&body, &trouble);
    std::thread::scope(|s| {
        let mut handles = Vec::with_capacity(n as usize);
        let mut first_error = None;
        for i in 0..n {
            let mut builder = std::thread::Builder::new().name(format!("{name}-{i}"));
            if let Some(bytes) = stack_size(i) {
                builder = builder.stack_size(bytes);
            }
            let spawned = builder.spawn_scoped(s, move || {
                catch_unwind(AssertUnwindSafe(|| body(i))).map_err(|panic| {
                    trouble();
                    panic_text(&*panic)
                })
            });
            match spawned {
                Ok(h) => handles.push(h),
                Err(e) => {
                    trouble();
                    first_error = Some(Error::Thread(format!(
                        "could not start {name} thread {i} of {n}: {e}"
                    )));
                    break;
                }
            }
        }
        let mut results = Vec::with_capacity(handles.len());
        for (i, h) in handles.into_iter().enumerate() {
            // the body's panics are caught inside the thread (with their message); a join
            // error would be a panic outside the body
            match h.join() {
                Ok(Ok(v)) => results.push(v),
                Ok(Err(why)) => {
                    first_error
                        .get_or_insert(Error::Thread(format!("{name} thread {i} panicked: {why}")));
                }
                Err(_) => {
                    first_error.get_or_insert(Error::Thread(format!("{name} thread {i} panicked")));
                }
            }
        }
        match first_error {
            Some(e) => Err(e),
            None => Ok(results),
        }
    })
}

/// The message of a panic's payload (a `&str` or `String`), if it has one.
fn panic_text(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "(no message)".into())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};

    #[test]
    fn threads_run_in_order_and_the_gate_opens_for_all() {
        let gate = StartGate::new(4);
        let out = run_threads(4, "t", |i| (gate.wait(), i * 10), || gate.call_off()).unwrap();
        assert_eq!(out, [(true, 0), (true, 10), (true, 20), (true, 30)]);
    }

    /// The OS refuses thread 2 (a stack no machine has): the run fails with an error, the
    /// threads already waiting at the gate are released, nothing hangs or panics.
    #[test]
    fn a_thread_that_cannot_be_spawned_fails_the_run_and_releases_the_others() {
        let gate = StartGate::new(5);
        let released = AtomicU32::new(0);
        let stop = AtomicBool::new(false);
        let e = run_threads_with(
            5,
            "client",
            &|i| (i == 2).then_some(usize::MAX / 2),
            |_| {
                if !gate.wait() {
                    released.fetch_add(1, Ordering::SeqCst);
                }
            },
            || {
                stop.store(true, Ordering::SeqCst);
                gate.call_off();
            },
        )
        .unwrap_err();
        let text = e.to_string();
        assert!(
            text.starts_with("could not start client thread 2 of 5:"),
            "{text}"
        );
        assert!(stop.load(Ordering::SeqCst));
        assert_eq!(released.load(Ordering::SeqCst), 2, "threads 0 and 1");
    }

    /// A thread panics before it reaches the gate: the others are released, the run fails
    /// with the panic's message.
    #[test]
    fn a_panicking_thread_fails_the_run_and_releases_the_others() {
        let gate = StartGate::new(3);
        let e = run_threads(
            3,
            "client",
            |i| {
                if i == 1 {
                    panic!("boom in thread {i}");
                }
                gate.wait()
            },
            || gate.call_off(),
        )
        .unwrap_err();
        assert_eq!(e.to_string(), "client thread 1 panicked: boom in thread 1");
    }

    #[test]
    fn a_called_off_gate_stays_shut_and_an_open_one_open() {
        let gate = StartGate::new(1);
        assert!(gate.wait());
        gate.call_off();
        assert!(gate.wait(), "opened before");
        let gate = StartGate::new(2);
        gate.call_off();
        assert!(!gate.wait());
    }
}
