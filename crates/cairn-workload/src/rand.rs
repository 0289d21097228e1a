//! sysbench-compatible pseudo-random numbers: xoroshiro128+, its `[0, 1)` doubles, and the `uniform`, `gaussian` and `special` distributions with sysbench's formulas and defaults.
//!
//! sysbench (sb_rand.c) draws every value from a per-thread xoroshiro128+ generator that it
//! seeds from libc `random()`; here the generator is seeded from a `u64` through splitmix64,
//! so a dataset or a run is reproducible from its seed. The distributions repeat sysbench's
//! arithmetic, including its truncations from `f64` to `u32`.

use serde::{Deserialize, Serialize};

/// xoroshiro128+ (the 2016 constants 55/14/36, as in sysbench 1.0's `xoroshiro128plus.h`).
#[derive(Debug, Clone)]
pub struct Rng {
    s: [u64; 2],
}

impl Rng {
    /// A generator whose state is expanded from `seed` with splitmix64 (never all-zero).
    pub fn seeded(seed: u64) -> Self {
        let mut x = seed;
        let mut next = || {
            x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = x;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^ (z >> 31)
        };
        let s = [next(), next()];
        Rng {
            s: if s == [0, 0] { [1, 0] } else { s },
        }
    }

    /// A generator for stream `stream` of `seed` (e.g. one per table or per thread).
    pub fn for_stream(seed: u64, stream: u64) -> Self {
        Rng::seeded(seed ^ stream.wrapping_mul(0xD1B5_4A32_D192_ED03))
    }

    /// The next 64 uniformly distributed bits.
    #[inline]
    pub fn next_u64(&mut self) -> u64 {
        let s0 = self.s[0];
        let mut s1 = self.s[1];
        let result = s0.wrapping_add(s1);
        s1 ^= s0;
        self.s[0] = s0.rotate_left(55) ^ s1 ^ (s1 << 14);
        self.s[1] = s1.rotate_left(36);
        result
    }

    /// A double in `[0, 1)` built like sysbench's `sb_rand_uniform_double` (52 mantissa bits).
    #[inline]
    pub fn next_f64(&mut self) -> f64 {
        let x = self.next_u64();
        f64::from_bits((0x3FF_u64 << 52) | (x >> 12)) - 1.0
    }

    /// `sb_rand_uniform(a, b)`: uniform in `[a, b]`.
    #[inline]
    pub fn uniform(&mut self, a: u32, b: u32) -> u32 {
        let width = b.wrapping_sub(a).wrapping_add(1);
        (a as f64 + self.next_f64() * width as f64) as u32
    }

    /// `sb_rand_gaussian(a, b)`: the mean of `iter` uniform draws over `[a, b]`.
    pub fn gaussian(&mut self, a: u32, b: u32, iter: u32) -> u32 {
        let t = b.wrapping_sub(a).wrapping_add(1) as f64;
        let mut sum = 0.0;
        for _ in 0..iter {
            sum += self.next_f64() * t;
        }
        a.wrapping_add((sum * (1.0 / iter as f64)) as u32)
    }

    /// `sb_rand_special(a, b)`: `res`% of the values fall uniformly into the middle `pct`% of
    /// `[a, b]`, the rest follow the gaussian-like mean of `iter` draws over the whole range.
    pub fn special(&mut self, a: u32, b: u32, p: SpecialParams) -> u32 {
        let t = b.wrapping_sub(a) as f64;
        let range_size = t * (100.0 / (100.0 - p.res as f64));
        let rnd = self.next_f64();
        if rnd * range_size < t {
            let mut sum = 0.0;
            for _ in 0..p.iter {
                sum += self.next_f64();
            }
            return (a as f64 + sum * t * (1.0 / p.iter as f64)) as u32;
        }
        let d = t * (p.pct as f64 / 100.0);
        let mut res = rnd * (d + 1.0);
        res += t / 2.0 - t * (p.pct as f64 / 200.0);
        a.wrapping_add(res as u32)
    }

    /// `sb_rand_str`: every `#` becomes a uniform digit, every `@` a uniform lowercase letter.
    pub fn fill_template(&mut self, template: &[u8], out: &mut Vec<u8>) {
        for &ch in template {
            out.push(match ch {
                b'#' => self.uniform(b'0' as u32, b'9' as u32) as u8,
                b'@' => self.uniform(b'a' as u32, b'z' as u32) as u8,
                other => other,
            });
        }
    }
}

/// Parameters of sysbench's `special` distribution (`--rand-spec-*`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct SpecialParams {
    /// `--rand-spec-iter`, default 12.
    pub iter: u32,
    /// `--rand-spec-pct`, default 1.
    pub pct: u32,
    /// `--rand-spec-res`, default 75.
    pub res: u32,
}

impl Default for SpecialParams {
    fn default() -> Self {
        SpecialParams {
            iter: 12,
            pct: 1,
            res: 75,
        }
    }
}

/// The distribution of generated ids and keys (`--rand-type`).
///
/// sysbench 1.0 defaults to `special`; sysbench 1.1 changed the default to `uniform`.
/// cairn's [`Default`] is `uniform`: pass `--rand-type=uniform` to sysbench 1.0 to compare.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "type")]
pub enum Distribution {
    #[default]
    Uniform,
    /// The mean of `iter` uniform draws (`--rand-spec-iter`, default 12).
    Gaussian {
        iter: u32,
    },
    Special(SpecialParams),
}

impl Distribution {
    /// sysbench 1.0's default, `--rand-type=special` with the default parameters.
    pub fn sysbench_1_0_default() -> Self {
        Distribution::Special(SpecialParams::default())
    }

    /// A value in `[a, b]`.
    #[inline]
    pub fn sample(&self, rng: &mut Rng, a: u32, b: u32) -> u32 {
        match *self {
            Distribution::Uniform => rng.uniform(a, b),
            Distribution::Gaussian { iter } => rng.gaussian(a, b, iter.max(1)),
            Distribution::Special(p) => rng.special(a, b, p),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn doubles_are_in_unit_interval_and_seeded() {
        let mut a = Rng::seeded(7);
        let mut b = Rng::seeded(7);
        for _ in 0..10_000 {
            let x = a.next_f64();
            assert!((0.0..1.0).contains(&x));
            assert_eq!(x.to_bits(), b.next_f64().to_bits());
        }
        assert_ne!(Rng::seeded(1).next_u64(), Rng::seeded(2).next_u64());
    }

    #[test]
    fn uniform_covers_the_closed_range() {
        let mut r = Rng::seeded(1);
        let mut seen = [0u32; 10];
        for _ in 0..100_000 {
            let v = r.uniform(1, 10);
            assert!((1..=10).contains(&v));
            seen[(v - 1) as usize] += 1;
        }
        assert!(seen.iter().all(|&n| n > 9_000 && n < 11_000), "{seen:?}");
    }

    #[test]
    fn special_concentrates_on_the_middle_percent() {
        let mut r = Rng::seeded(3);
        let d = Distribution::sysbench_1_0_default();
        let (a, b) = (1, 100_000);
        let n = 200_000;
        let mut hot = 0;
        for _ in 0..n {
            let v = d.sample(&mut r, a, b);
            assert!((a..=b).contains(&v), "{v}");
            // the hot 1% lies in the middle: [t/2 - t/200, t/2 + t/200] + a
            if (49_500..=50_502).contains(&v) {
                hot += 1;
            }
        }
        // 75% of the values are the hot ones, plus the gaussian part's share of the middle
        let share = hot as f64 / n as f64;
        assert!(share > 0.75 && share < 0.85, "{share}");
    }

    #[test]
    fn gaussian_stays_in_range_and_centres() {
        let mut r = Rng::seeded(5);
        let mut sum = 0u64;
        for _ in 0..10_000 {
            let v = r.gaussian(1, 1000, 12);
            assert!((1..=1000).contains(&v));
            sum += v as u64;
        }
        let mean = sum as f64 / 10_000.0;
        assert!((480.0..520.0).contains(&mean), "{mean}");
    }

    #[test]
    fn templates_become_digits_and_letters() {
        let mut r = Rng::seeded(9);
        let mut out = Vec::new();
        r.fill_template(b"##-@@", &mut out);
        assert_eq!(out.len(), 5);
        assert!(out[0].is_ascii_digit() && out[1].is_ascii_digit());
        assert_eq!(out[2], b'-');
        assert!(out[3].is_ascii_lowercase() && out[4].is_ascii_lowercase());
    }
}
