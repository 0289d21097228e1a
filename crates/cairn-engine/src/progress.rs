//! Progress inside a running step (e.g. a source build's phase: fetch, configure, build,
//! install), passed from the worker thread that performs the step to the scheduler, which
//! turns it into an [`crate::events::Event::StepPhase`] for the reporters.
//!
//! The scheduler gives each step's worker a sink for the duration of `perform` only
//! ([`with_sink`]); a kind calls [`phase`] without knowing whether anybody listens (in a
//! status report, a unit test or a benchmark nobody does, and the call does nothing). The sink
//! is per thread and per step, so two runs in one process never see each other's phases.

use std::cell::RefCell;

type Sink = Box<dyn Fn(&str)>;

thread_local! {
    static SINK: RefCell<Option<Sink>> = const { RefCell::new(None) };
}

/// Run `f` with `sink` receiving the phases this thread reports; the previous sink (if any)
/// is back afterwards, also if `f` panics.
pub fn with_sink<R>(sink: impl Fn(&str) + 'static, f: impl FnOnce() -> R) -> R {
    struct Restore(Option<Sink>);
    impl Drop for Restore {
        fn drop(&mut self) {
            let prev = self.0.take();
            SINK.with(|s| *s.borrow_mut() = prev);
        }
    }
    let prev = SINK.with(|s| s.borrow_mut().replace(Box::new(sink)));
    let _restore = Restore(prev);
    f()
}

/// Report that the step this thread performs entered `phase`.
pub fn phase(phase: &str) {
    SINK.with(|s| {
        if let Some(sink) = s.borrow().as_ref() {
            sink(phase);
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};

    #[test]
    fn phases_reach_the_sink_of_this_thread_only_while_it_is_set() {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let s2 = seen.clone();
        phase("before");
        with_sink(
            move |p| s2.lock().unwrap().push(p.to_string()),
            || {
                phase("configure");
                std::thread::spawn(|| phase("elsewhere")).join().unwrap();
                phase("build");
            },
        );
        phase("after");
        assert_eq!(*seen.lock().unwrap(), ["configure", "build"]);
    }
}
