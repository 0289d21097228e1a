//! On-CPU profiles as folded stacks, and what changed between two of them: the functions
//! whose share of the samples moved most, with the change in samples per unit of work.
//!
//! A profile is a multiset of call stacks, each written root first and joined by `;`
//! (`mysqld;do_command;dispatch_command;…;ut_delay`), with the number of samples that caught
//! the CPU in it: the "folded" format flame graphs are drawn from. A function's **total**
//! samples are those with it anywhere on the stack (counted once per stack, so recursion does
//! not count twice); its **self** samples those with it at the leaf.
//!
//! Two profiles are compared by *share*: a function's samples over the profile's samples, so
//! profiles of different lengths compare (the established normalisation of differential flame
//! graphs). A share alone hides that the variant may do more work per second or less: the
//! change in samples *per unit of work* (per transaction) says whether the function costs more
//! for the same work, which is what "B is 12% slower because …" needs.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

/// Folded stacks: `root;…;leaf` → samples.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Profile {
    pub stacks: BTreeMap<String, u64>,
}

/// A line of folded text that is not `stack count`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("folded stacks, line {line}: {why}")]
pub struct FoldedError {
    pub line: usize,
    pub why: String,
}

/// One function's samples in a profile.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FunctionSamples {
    /// Samples with the function anywhere on the stack.
    pub total: u64,
    /// Samples with the function at the leaf: the CPU was in its own code.
    pub own: u64,
}

impl Profile {
    /// Reads folded text: one `stack count` per line; blank lines are skipped, a stack seen
    /// twice adds up.
    pub fn parse_folded(text: &str) -> Result<Profile, FoldedError> {
        let mut profile = Profile::default();
        for (i, line) in text.lines().enumerate() {
            let line = line.trim_end();
            if line.trim().is_empty() {
                continue;
            }
            let err = |why: &str| FoldedError {
                line: i + 1,
                why: why.to_string(),
            };
            let (stack, count) = line
                .rsplit_once(' ')
                .ok_or_else(|| err("no sample count after the stack"))?;
            let count: u64 = count
                .parse()
                .map_err(|_| err(&format!("`{count}` is not a sample count")))?;
            if stack.is_empty() {
                return Err(err("an empty stack"));
            }
            profile.add(stack, count);
        }
        Ok(profile)
    }

    /// Adds `count` samples of one stack (root first, frames joined by `;`).
    pub fn add(&mut self, stack: &str, count: u64) {
        if count > 0 {
            *self.stacks.entry(stack.to_string()).or_default() += count;
        }
    }

    /// Adds every stack of `other`: passes of one variant merged into one profile.
    pub fn merge(&mut self, other: &Profile) {
        for (stack, count) in &other.stacks {
            self.add(stack, *count);
        }
    }

    /// The folded text: one `stack count` per line, stacks in byte order.
    pub fn to_folded(&self) -> String {
        let mut out = String::new();
        for (stack, count) in &self.stacks {
            out.push_str(stack);
            out.push(' ');
            out.push_str(&count.to_string());
            out.push('\n');
        }
        out
    }

    pub fn samples(&self) -> u64 {
        self.stacks.values().sum()
    }

    /// Every function's total and own samples.
    pub fn functions(&self) -> BTreeMap<&str, FunctionSamples> {
        let mut out: BTreeMap<&str, FunctionSamples> = BTreeMap::new();
        let mut seen = BTreeSet::new();
        for (stack, &count) in &self.stacks {
            seen.clear();
            let frames: Vec<&str> = stack.split(';').collect();
            for frame in &frames {
                // recursion: a function deep in its own stack is on the stack once
                if seen.insert(*frame) {
                    out.entry(frame).or_default().total += count;
                }
            }
            if let Some(leaf) = frames.last() {
                out.entry(leaf).or_default().own += count;
            }
        }
        out
    }

    /// The `n` functions with the most own samples, most first (ties by name).
    pub fn top(&self, n: usize) -> Vec<(String, FunctionSamples)> {
        let mut all: Vec<(String, FunctionSamples)> = self
            .functions()
            .into_iter()
            .map(|(name, s)| (name.to_string(), s))
            .collect();
        all.sort_by(|a, b| b.1.own.cmp(&a.1.own).then_with(|| a.0.cmp(&b.0)));
        all.truncate(n);
        all
    }
}

/// One side of a comparison: its merged profile and the work done while it was sampled (the
/// transactions of its measured windows, summed over the same passes).
#[derive(Debug, Clone, Copy)]
pub struct Side<'a> {
    pub profile: &'a Profile,
    pub work: f64,
}

/// How one function's part of the CPU differs between a baseline and a variant.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FunctionChange {
    pub function: String,
    /// Own samples over all samples, on each side (0 where the function was not seen).
    pub baseline_share: f64,
    pub variant_share: f64,
    /// Total (inclusive) samples over all samples, on each side.
    pub baseline_total_share: f64,
    pub variant_total_share: f64,
    /// Own samples per unit of work on each side; `None` where a side did no work.
    pub baseline_per_work: Option<f64>,
    pub variant_per_work: Option<f64>,
}

impl FunctionChange {
    /// The change in own share, variant − baseline (0.09 = nine points more of the CPU).
    pub fn share_change(&self) -> f64 {
        self.variant_share - self.baseline_share
    }
}

/// The functions whose own share of the samples changed most between `baseline` and
/// `variant`, largest change (either way) first, at most `n`. Empty when either side has no
/// samples: a share of nothing is not a share.
pub fn differences(baseline: Side, variant: Side, n: usize) -> Vec<FunctionChange> {
    let (base_n, var_n) = (baseline.profile.samples(), variant.profile.samples());
    if base_n == 0 || var_n == 0 {
        return Vec::new();
    }
    let base = baseline.profile.functions();
    let var = variant.profile.functions();
    let names: BTreeSet<&str> = base.keys().chain(var.keys()).copied().collect();
    let per_work = |samples: u64, work: f64| (work > 0.0).then(|| samples as f64 / work);
    let mut changes: Vec<FunctionChange> = names
        .into_iter()
        .map(|name| {
            let b = base.get(name).copied().unwrap_or_default();
            let v = var.get(name).copied().unwrap_or_default();
            FunctionChange {
                function: name.to_string(),
                baseline_share: b.own as f64 / base_n as f64,
                variant_share: v.own as f64 / var_n as f64,
                baseline_total_share: b.total as f64 / base_n as f64,
                variant_total_share: v.total as f64 / var_n as f64,
                baseline_per_work: per_work(b.own, baseline.work),
                variant_per_work: per_work(v.own, variant.work),
            }
        })
        .filter(|c| c.baseline_share > 0.0 || c.variant_share > 0.0)
        .collect();
    changes.sort_by(|a, b| {
        b.share_change()
            .abs()
            .total_cmp(&a.share_change().abs())
            .then_with(|| a.function.cmp(&b.function))
    });
    changes.truncate(n);
    changes
}

#[cfg(test)]
mod tests {
    use super::*;

    const FOLDED: &str = "\
main;idle 10
main;run;malloc 30
main;run;work 50
main;run;work;work 10
";

    #[test]
    fn folded_text_reads_and_writes_back() {
        let p = Profile::parse_folded(FOLDED).unwrap();
        assert_eq!(p.samples(), 100);
        assert_eq!(p.to_folded(), FOLDED);
        let twice = Profile::parse_folded("a;b 1\na;b 2\n\n").unwrap();
        assert_eq!(twice.stacks["a;b"], 3);
    }

    #[test]
    fn a_bad_line_is_named() {
        let e = Profile::parse_folded("a;b 1\na;b x\n").unwrap_err();
        assert_eq!(e.line, 2);
        assert!(e.to_string().contains("`x` is not a sample count"), "{e}");
        assert_eq!(Profile::parse_folded("a;b\n").unwrap_err().line, 1);
    }

    #[test]
    fn recursion_counts_once_in_a_functions_total() {
        let p = Profile::parse_folded(FOLDED).unwrap();
        let f = p.functions();
        assert_eq!(f["main"], FunctionSamples { total: 100, own: 0 });
        assert_eq!(f["work"], FunctionSamples { total: 60, own: 60 });
        assert_eq!(f["malloc"], FunctionSamples { total: 30, own: 30 });
        assert_eq!(p.top(2)[0].0, "work");
        assert_eq!(p.top(2)[1].0, "malloc");
    }

    #[test]
    fn the_largest_change_in_share_comes_first_with_its_cost_per_work() {
        let base = Profile::parse_folded(FOLDED).unwrap();
        // the variant spends far less of its CPU in malloc, a little more in work
        let variant =
            Profile::parse_folded("main;run;malloc 5\nmain;run;work 80\nmain;idle 15\n").unwrap();
        let d = differences(
            Side {
                profile: &base,
                work: 1000.0,
            },
            Side {
                profile: &variant,
                work: 1250.0,
            },
            2,
        );
        assert_eq!(d.len(), 2);
        assert_eq!(d[0].function, "malloc");
        assert!((d[0].share_change() - (0.05 - 0.30)).abs() < 1e-12);
        assert_eq!(d[0].baseline_per_work, Some(0.03));
        assert_eq!(d[0].variant_per_work, Some(0.004));
        assert_eq!(d[1].function, "work");
        // no samples on a side: nothing to compare
        let empty = Profile::default();
        let none = differences(
            Side {
                profile: &base,
                work: 1.0,
            },
            Side {
                profile: &empty,
                work: 1.0,
            },
            5,
        );
        assert!(none.is_empty());
    }
}
