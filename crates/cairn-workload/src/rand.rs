//! sysbench-compatible pseudo-random numbers: xoroshiro128+, its `[0, 1)` doubles, and the `uniform`, `gaussian`, `special`, `pareto` and `zipfian` distributions with sysbench's formulas and defaults.
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
            out.push(self.template_char(ch));
        }
    }

    /// [`Rng::fill_template`] into `out`, which must be as long as `template` (e.g. a
    /// buffer on the stack).
    pub fn fill_template_into(&mut self, template: &[u8], out: &mut [u8]) {
        assert_eq!(template.len(), out.len(), "template and buffer lengths");
        for (o, &ch) in out.iter_mut().zip(template) {
            *o = self.template_char(ch);
        }
    }

    #[inline]
    fn template_char(&mut self, ch: u8) -> u8 {
        match ch {
            b'#' => self.uniform(b'0' as u32, b'9' as u32) as u8,
            b'@' => self.uniform(b'a' as u32, b'z' as u32) as u8,
            other => other,
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

/// `--rand-pareto-h`'s default.
pub const PARETO_H: f64 = 0.2;
/// `--rand-zipfian-exp`'s default (sysbench 1.1).
pub const ZIPFIAN_EXP: f64 = 0.8;

/// The distribution of generated ids and keys (`--rand-type`).
///
/// sysbench 1.0 defaults to `special`; sysbench 1.1 changed the default to `uniform`.
/// cairn's [`Default`] is `uniform`: pass `--rand-type=uniform` to sysbench 1.0 to compare.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "type")]
pub enum Distribution {
    #[default]
    Uniform,
    /// The mean of `iter` uniform draws (`--rand-spec-iter`, default 12).
    Gaussian {
        iter: u32,
    },
    Special(SpecialParams),
    /// `a + (b - a + 1) · u^(ln h / ln(1 - h))`: with `h` = 0.2 (`--rand-pareto-h`), 80% of
    /// the values fall into the lowest 20% of the range. `0 < h < 1`; 0.5 is uniform.
    Pareto {
        h: f64,
    },
    /// Zipf over `[a, b]`: value `a + k - 1` has weight `1 / k^exp` (sysbench 1.1's
    /// `--rand-zipfian-exp`, default 0.8; 0 is uniform), drawn by rejection-inversion.
    Zipfian {
        exp: f64,
    },
}

// The float parameters are checked finite by `validate` (and JSON cannot carry NaN), so
// equality is reflexive; `Eq` lets specs holding a distribution stay `Eq`.
impl Eq for Distribution {}

impl Distribution {
    /// sysbench 1.0's default, `--rand-type=special` with the default parameters.
    pub fn sysbench_1_0_default() -> Self {
        Distribution::Special(SpecialParams::default())
    }

    /// `--rand-type=pareto` with sysbench's default `--rand-pareto-h=0.2`.
    pub fn pareto() -> Self {
        Distribution::Pareto { h: PARETO_H }
    }

    /// `--rand-type=zipfian` with sysbench 1.1's default `--rand-zipfian-exp=0.8`.
    pub fn zipfian() -> Self {
        Distribution::Zipfian { exp: ZIPFIAN_EXP }
    }

    /// Rejects parameters the formulas cannot use (sysbench checks only the Zipf exponent;
    /// a Pareto `h` outside `(0, 1)` would give values outside `[a, b]`).
    pub fn validate(&self) -> Result<(), String> {
        match *self {
            Distribution::Uniform => Ok(()),
            Distribution::Gaussian { iter: 0 } => {
                Err("gaussian iterations must be at least 1".into())
            }
            Distribution::Gaussian { .. } => Ok(()),
            Distribution::Special(p) if p.iter == 0 || p.res >= 100 || p.pct > 100 => Err(format!(
                "special needs iter ≥ 1, res < 100 and pct ≤ 100, not {p:?}"
            )),
            Distribution::Special(_) => Ok(()),
            Distribution::Pareto { h } if !(h > 0.0 && h < 1.0) => Err(format!(
                "pareto h must be between 0 and 1 (exclusive), not {h}"
            )),
            Distribution::Pareto { .. } => Ok(()),
            Distribution::Zipfian { exp } if !(exp >= 0.0 && exp.is_finite()) => Err(format!(
                "zipfian exponent must be a finite number ≥ 0, not {exp}"
            )),
            Distribution::Zipfian { .. } => Ok(()),
        }
    }

    /// The distribution with its constants computed once, for drawing many values.
    pub fn sampler(&self) -> Sampler {
        Sampler(match *self {
            Distribution::Uniform => Kind::Uniform,
            Distribution::Gaussian { iter } => Kind::Gaussian(iter.max(1)),
            Distribution::Special(p) => Kind::Special(p),
            Distribution::Pareto { h } => Kind::Pareto {
                power: h.ln() / (1.0 - h).ln(),
            },
            Distribution::Zipfian { exp } => Kind::Zipfian(Zipf::new(exp)),
        })
    }

    /// A value in `[a, b]` (computes the constants each time: use [`Distribution::sampler`]
    /// in loops).
    #[inline]
    pub fn sample(&self, rng: &mut Rng, a: u32, b: u32) -> u32 {
        self.sampler().sample(rng, a, b)
    }
}

/// A [`Distribution`] ready to draw from: the constants sysbench precomputes at start-up
/// (Pareto's power, the Zipf sampler's `s` and `H(1.5) - 1`) are computed once here.
#[derive(Debug, Clone, Copy)]
pub struct Sampler(Kind);

#[derive(Debug, Clone, Copy)]
enum Kind {
    Uniform,
    Gaussian(u32),
    Special(SpecialParams),
    Pareto { power: f64 },
    Zipfian(Zipf),
}

impl Sampler {
    /// A value in `[a, b]`.
    #[inline]
    pub fn sample(&self, rng: &mut Rng, a: u32, b: u32) -> u32 {
        match self.0 {
            Kind::Uniform => rng.uniform(a, b),
            Kind::Gaussian(iter) => rng.gaussian(a, b, iter),
            Kind::Special(p) => rng.special(a, b, p),
            Kind::Pareto { power } => {
                // sb_rand_pareto: the width is u32 arithmetic, the product truncated
                let width = b.wrapping_sub(a).wrapping_add(1) as f64;
                a.wrapping_add((width * rng.next_f64().powf(power)) as u32)
            }
            Kind::Zipfian(z) => {
                let n = b.wrapping_sub(a).wrapping_add(1);
                a.wrapping_add(z.sample(rng, n)).wrapping_sub(1)
            }
        }
    }
}

/// A bounded Zipf distribution over `[1, n]`, `P(k) ∝ k^-e`, sampled by rejection-inversion
/// (Hörmann & Derflinger, "Rejection-inversion to generate variates from monotone discrete
/// distributions", 1996), in the variant that works for every `e ≥ 0` — the method sysbench
/// 1.1's `sb_rand_zipfian` uses, with the same acceptance test, so the same values follow
/// from the same uniform draws.
#[derive(Debug, Clone, Copy)]
struct Zipf {
    e: f64,
    /// `2 - H⁻¹(H(2.5) - h(2))`: below this distance the candidate is accepted at once.
    s: f64,
    /// `H(1.5) - 1`, the lower end of the integral's range.
    h_x1: f64,
}

impl Zipf {
    fn new(e: f64) -> Self {
        Zipf {
            e,
            s: 2.0 - h_integral_inv(h_integral(2.5, e) - hat(2.0, e), e),
            h_x1: h_integral(1.5, e) - 1.0,
        }
    }

    /// A value in `[1, n]`.
    fn sample(&self, rng: &mut Rng, n: u32) -> u32 {
        let e = self.e;
        let h_n = h_integral(n as f64 + 0.5, e);
        loop {
            // uniform over (H(1.5) - 1, H(n + 0.5)]
            let u = h_n + rng.next_f64() * (self.h_x1 - h_n);
            let x = h_integral_inv(u, e);
            // rounding errors may put the candidate just outside [1, n]
            let k = ((x + 0.5) as u32).clamp(1, n.max(1));
            let kf = k as f64;
            if kf - x <= self.s || u >= h_integral(kf + 0.5, e) - hat(kf, e) {
                return k;
            }
        }
    }
}

/// `h(x) = x^-e`, the (unnormalised) weight of `x`.
fn hat(x: f64, e: f64) -> f64 {
    (-e * x.ln()).exp()
}

/// `H(x)`, an antiderivative of `h`: `(x^(1-e) - 1) / (1 - e)`, or `ln x` when `e = 1`.
fn h_integral(x: f64, e: f64) -> f64 {
    let ln_x = x.ln();
    expm1_over_x((1.0 - e) * ln_x) * ln_x
}

/// `H⁻¹(x)`.
fn h_integral_inv(x: f64, e: f64) -> f64 {
    // rounding can push the argument of ln(1 + t) below its domain
    let t = (x * (1.0 - e)).max(-1.0);
    (ln1p_over_x(t) * x).exp()
}

/// `ln(1 + x) / x`, by its Taylor series near 0 where the quotient loses precision.
fn ln1p_over_x(x: f64) -> f64 {
    if x.abs() > 1e-8 {
        x.ln_1p() / x
    } else {
        1.0 - x * (0.5 - x * (1.0 / 3.0 - 0.25 * x))
    }
}

/// `(e^x - 1) / x`, by its Taylor series near 0.
fn expm1_over_x(x: f64) -> f64 {
    if x.abs() > 1e-8 {
        x.exp_m1() / x
    } else {
        1.0 + x * 0.5 * (1.0 + x / 3.0 * (1.0 + 0.25 * x))
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

    /// Shares of `n` draws from `d` over `[1, size]` falling into each of `size` values.
    fn frequencies(d: Distribution, size: u32, n: u32, seed: u64) -> Vec<f64> {
        let mut r = Rng::seeded(seed);
        let s = d.sampler();
        let mut seen = vec![0u32; size as usize];
        for _ in 0..n {
            let v = s.sample(&mut r, 1, size);
            assert!((1..=size).contains(&v), "{v} outside [1, {size}]");
            seen[(v - 1) as usize] += 1;
        }
        seen.iter().map(|&c| c as f64 / n as f64).collect()
    }

    #[test]
    fn pareto_puts_80_percent_into_the_lowest_20() {
        let n = 200_000;
        let mut r = Rng::seeded(11);
        let s = Distribution::pareto().sampler();
        let (a, b) = (1, 100_000);
        let mut low = 0;
        let mut deciles = [0u32; 10];
        for _ in 0..n {
            let v = s.sample(&mut r, a, b);
            assert!((a..=b).contains(&v), "{v}");
            if v <= 20_000 {
                low += 1;
            }
            deciles[((v - 1) / 10_000) as usize] += 1;
        }
        // P(u^p < 0.2) with p = ln 0.2 / ln 0.8 is exactly 0.8
        let share = low as f64 / n as f64;
        assert!((share - 0.8).abs() < 0.01, "{share}");
        // the density falls all the way along the range
        assert!(deciles.windows(2).all(|w| w[0] > w[1]), "{deciles:?}");
        // h = 0.5 gives power 1: uniform
        let f = frequencies(Distribution::Pareto { h: 0.5 }, 10, 100_000, 12);
        assert!(f.iter().all(|&x| (x - 0.1).abs() < 0.006), "{f:?}");
    }

    #[test]
    fn zipfian_follows_the_power_law() {
        let size = 10;
        let e = ZIPFIAN_EXP;
        let f = frequencies(Distribution::zipfian(), size, 400_000, 13);
        let weights: Vec<f64> = (1..=size).map(|k| (k as f64).powf(-e)).collect();
        let total: f64 = weights.iter().sum();
        for (k, (&got, w)) in f.iter().zip(&weights).enumerate() {
            let want = w / total;
            // 400k draws: the standard error of a share is below 0.001
            assert!(
                (got - want).abs() < 0.004,
                "k={} got {got} want {want}",
                k + 1
            );
        }
        // the head of a large range: P(1) / P(2) = 2^e
        let f = frequencies(Distribution::zipfian(), 1_000_000, 400_000, 14);
        let ratio = f[0] / f[1];
        assert!((ratio - 2f64.powf(e)).abs() < 0.1, "{ratio}");
        // exponent 0: uniform; exponent 1 (the ln branch) still a power law
        let u = frequencies(Distribution::Zipfian { exp: 0.0 }, 10, 100_000, 15);
        assert!(u.iter().all(|&x| (x - 0.1).abs() < 0.006), "{u:?}");
        let one = frequencies(Distribution::Zipfian { exp: 1.0 }, 4, 200_000, 16);
        let h4 = 1.0 + 0.5 + 1.0 / 3.0 + 0.25;
        assert!((one[0] - 1.0 / h4).abs() < 0.005, "{one:?}");
        assert!((one[3] - 0.25 / h4).abs() < 0.005, "{one:?}");
    }

    #[test]
    fn zipfian_and_pareto_respect_offsets_and_single_values() {
        let mut r = Rng::seeded(17);
        for d in [Distribution::pareto(), Distribution::zipfian()] {
            let s = d.sampler();
            for _ in 0..10_000 {
                let v = s.sample(&mut r, 500, 600);
                assert!((500..=600).contains(&v), "{d:?} {v}");
                assert_eq!(s.sample(&mut r, 7, 7), 7);
            }
            // the sampler and the one-off path draw the same values
            let (mut x, mut y) = (Rng::seeded(3), Rng::seeded(3));
            for _ in 0..100 {
                assert_eq!(s.sample(&mut x, 1, 1000), d.sample(&mut y, 1, 1000));
            }
        }
        // zipfian's most frequent value is the range's start
        let f = frequencies(Distribution::zipfian(), 100, 50_000, 18);
        assert!(f[0] > f[1] && f[1] > f[50], "{:?}", &f[..3]);
    }

    #[test]
    fn parameters_are_validated_and_serialised() {
        assert!(Distribution::pareto().validate().is_ok());
        assert!(Distribution::Pareto { h: 1.0 }.validate().is_err());
        assert!(Distribution::Pareto { h: 0.0 }.validate().is_err());
        assert!(Distribution::Zipfian { exp: -0.1 }.validate().is_err());
        assert!(Distribution::Zipfian { exp: f64::NAN }.validate().is_err());
        assert!(Distribution::Gaussian { iter: 0 }.validate().is_err());
        assert!(Distribution::sysbench_1_0_default().validate().is_ok());
        let j = serde_json::to_string(&Distribution::zipfian()).unwrap();
        assert_eq!(j, r#"{"type":"zipfian","exp":0.8}"#);
        let back: Distribution = serde_json::from_str(r#"{"type":"pareto","h":0.2}"#).unwrap();
        assert_eq!(back, Distribution::pareto());
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
        let mut fixed = [0u8; 5];
        Rng::seeded(9).fill_template_into(b"##-@@", &mut fixed);
        assert_eq!(&fixed[..], &out[..], "both ways draw the same");
    }
}
