//! Client CPU time: `getrusage` of the calling thread (`RUSAGE_THREAD`) or of the whole process.

use serde::{Deserialize, Serialize};

/// User and system CPU seconds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct CpuTime {
    pub user_s: f64,
    pub system_s: f64,
}

impl CpuTime {
    /// The calling thread's CPU time so far.
    pub fn thread() -> Self {
        rusage(libc::RUSAGE_THREAD)
    }

    /// The whole process's CPU time so far.
    pub fn process() -> Self {
        rusage(libc::RUSAGE_SELF)
    }

    pub fn total_s(&self) -> f64 {
        self.user_s + self.system_s
    }

    /// `self - earlier`.
    pub fn since(&self, earlier: &CpuTime) -> CpuTime {
        CpuTime {
            user_s: self.user_s - earlier.user_s,
            system_s: self.system_s - earlier.system_s,
        }
    }

    pub fn add(&mut self, other: &CpuTime) {
        self.user_s += other.user_s;
        self.system_s += other.system_s;
    }
}

fn rusage(who: libc::c_int) -> CpuTime {
    // SAFETY: getrusage writes a complete `rusage` into the zeroed struct we own.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    let rc = unsafe { libc::getrusage(who, &mut ru) };
    if rc != 0 {
        return CpuTime::default();
    }
    let secs = |tv: libc::timeval| tv.tv_sec as f64 + tv.tv_usec as f64 / 1e6;
    CpuTime {
        user_s: secs(ru.ru_utime),
        system_s: secs(ru.ru_stime),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thread_cpu_grows_with_work() {
        let before = CpuTime::thread();
        let mut x = 0u64;
        let t = std::time::Instant::now();
        while t.elapsed().as_millis() < 50 {
            x = x.wrapping_mul(31).wrapping_add(std::hint::black_box(7));
        }
        std::hint::black_box(x);
        let used = CpuTime::thread().since(&before);
        assert!(used.total_s() > 0.0, "{used:?}");
        assert!(CpuTime::process().total_s() >= used.total_s());
    }
}
