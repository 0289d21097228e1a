//! Seeded synthetic samples for the tests: normal noise around a known centre, so every
//! test knows the true answer and gives the same numbers on every run.

use rand_core::Rng;
use rand_pcg::Pcg64;

/// A seeded source of normal noise (Box–Muller over PCG-64).
pub struct Noise(Pcg64);

impl Noise {
    pub fn new(seed: u64) -> Noise {
        Noise(Pcg64::new(u128::from(seed), 0xda3e_39cb_94b9_5bdb))
    }

    /// A uniform value in (0, 1).
    fn uniform(&mut self) -> f64 {
        ((self.0.next_u64() >> 11) as f64 + 0.5) / (1u64 << 53) as f64
    }

    /// One standard normal value.
    pub fn standard(&mut self) -> f64 {
        let (u1, u2) = (self.uniform(), self.uniform());
        (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
    }

    /// `n` values around `centre` with coefficient of variation `cv` (normal noise, so the
    /// median is `centre`).
    pub fn sample(&mut self, n: usize, centre: f64, cv: f64) -> Vec<f64> {
        (0..n)
            .map(|_| centre * (1.0 + cv * self.standard()))
            .collect()
    }
}
