//! The claim forms beyond one figure at one point: a claim over a suite's operations
//! (`operations "select"`, `expect "debug < release" by="20%" for="most"`), at each value of
//! a parameter (`expect "tuned > debian" over="io-scheduler" for="all"`) and a trend along an
//! ordered parameter (`expect "jemalloc > system" trend="grows" x="threads"`).
//!
//! # Over operations, or over a parameter's values
//!
//! Each per-operation seconds figure (sql-bench's `<test>_s`, `<test>_<group>_s`) of the
//! named tests — or the claim's figure at each value of the parameter `over` (the rest of the
//! point as `where` pins it) — gets the claim's own check (ratio of medians, bootstrap CI,
//! rank test: [`crate::claim_step::check_one`]), at its Holm level: in increasing order of
//! the rank test's p, the m members are checked at α/m, α/(m−1), …, α, and once one misses
//! its level no later one can hold (Holm's step-down, `cairn_analysis::multiple::holm`), so
//! the chance of any false "holds" among the m stays at α. A member fails only when the
//! claim fails for it at α/m too (Bonferroni): a failure of any one fails the claim (or
//! counts against it), and Holm's order, from the claim's own p, would check the member that
//! most contradicts it at the loosest level, so m failures told at up to α each could add
//! up to several times α.
//! - `for="all"` **holds** when every member holds, **fails** when any fails, else is
//!   inconclusive;
//! - `for="most"` **holds** when more than half hold, **fails** when more than half cannot
//!   hold any more (the holds and the undecided together are at most half), else is
//!   inconclusive.
//!
//! # A trend
//!
//! The gain — left / right for `>`, right / left for `<` (the figure's numbers, as `>` and
//! `<` read them) — at `x = from` and at `x = to`, each measured together within its
//! point, and its change `to / from` with a bootstrap CI: `cairn_analysis::check_trend`
//! (holds when the whole CI is on the claimed side of 1, fails when on the other, else
//! inconclusive; never from fewer passes than the rank test needs).

use std::collections::{BTreeMap, BTreeSet};

use cairn_analysis::multiple::holm;
use cairn_analysis::{BootstrapSettings, ClaimVerdict, Criteria, Effect, TrendDirection};
use cairn_defs::figures::{self, Figures};
use cairn_defs::ClaimDef;
use cairn_engine::CheckError;
use cairn_report::claim::{ClaimResult, OperationVerdict, OperationsResult, Operator, TrendResult};

use crate::analysis_step::{samples_seed, sequential_criteria};
use crate::claim_step::{check_one, meaning, side_values, Cell, ClaimSpec, Form};
use crate::trial_points::{self, TrialPoint};

/// The claim's form from its definition, checked against the trials' parameters: a
/// quantifier over operations, or a trend's `x` (a parameter the claim does not pin, with
/// at least two values, ordered — numbers — unless `from` and `to` name the points).
pub fn form_of(
    definition: &ClaimDef,
    operator: Operator,
    params: &BTreeMap<String, Vec<String>>,
    cells: &[Cell; 2],
) -> Result<Form, CheckError> {
    let refuse = |at: &str, m: String| Err(CheckError::new("claim", at, m));
    if let Some(x) = &definition.over {
        return over_form(definition, x, params, cells);
    }
    if let Some(tests) = &definition.operations {
        return match definition.quantifier.as_deref() {
            Some(q @ ("most" | "all")) => Ok(Form::Operations {
                tests: tests.clone(),
                all: q == "all",
            }),
            _ => refuse(
                "expect",
                "a claim over operations says on how many it holds: for=\"most\" or for=\"all\""
                    .into(),
            ),
        };
    }
    let Some(trend) = definition.trend.as_deref() else {
        return Ok(Form::One);
    };
    let direction = match trend {
        "grows" => TrendDirection::Grows,
        "shrinks" => TrendDirection::Shrinks,
        other => {
            return refuse(
                "expect",
                format!("`{other}` is not a trend: grows or shrinks"),
            )
        }
    };
    if !matches!(operator, Operator::Greater | Operator::Less) {
        return refuse(
            "expect",
            "a trend is of a gain: it goes with `>` or `<`".into(),
        );
    }
    let Some(x) = definition.x.clone() else {
        return refuse(
            "expect",
            "a trend runs along a parameter: add x=\"threads\"".into(),
        );
    };
    let Some(values) = params.get(&x) else {
        return refuse(
            "x",
            format!(
                "`{x}` is not a parameter of the claim's trials; they have {}",
                params.keys().cloned().collect::<Vec<_>>().join(", ")
            ),
        );
    };
    if definition.filter.contains_key(&x) || cells.iter().any(|c| c.point.contains_key(&x)) {
        return refuse(
            "x",
            format!("the claim pins `{x}`, so there is no trend along it: drop it from `where` and the sides"),
        );
    }
    if values.len() < 2 {
        return refuse(
            "x",
            format!(
                "the trials have one value of `{x}` ({}): a trend needs two points",
                values[0]
            ),
        );
    }
    let (from, to) = match (&definition.from, &definition.to) {
        (Some(from), Some(to)) => {
            for (prop, v) in [("from", from), ("to", to)] {
                if !values.contains(v) {
                    return refuse(
                        prop,
                        format!(
                            "no trial has {x} = {v}; the trials have {}",
                            values.join(", ")
                        ),
                    );
                }
            }
            (from.clone(), to.clone())
        }
        _ => {
            let numbers: Option<Vec<(f64, &String)>> = values
                .iter()
                .map(|v| v.parse::<f64>().ok().map(|n| (n, v)))
                .collect();
            let Some(mut numbers) = numbers else {
                return refuse(
                    "x",
                    format!(
                        "`{x}` is not an ordered factor: its values ({}) are not numbers; say which points with from=\"…\" to=\"…\"",
                        values.join(", ")
                    ),
                );
            };
            numbers.sort_by(|a, b| a.0.total_cmp(&b.0));
            (numbers[0].1.clone(), numbers[numbers.len() - 1].1.clone())
        }
    };
    Ok(Form::Trend {
        x,
        from,
        to,
        direction,
    })
}

/// A claim at each value of `x`: a quantifier, a parameter of the trials with two values or
/// more that `where` does not pin, nor both sides (one side may: `tuned[io-scheduler=
/// mq-deadline] > mysql` is tuned under mq-deadline against MySQL under each scheduler), and
/// no other form beside it.
fn over_form(
    definition: &ClaimDef,
    x: &str,
    params: &BTreeMap<String, Vec<String>>,
    cells: &[Cell; 2],
) -> Result<Form, CheckError> {
    let refuse = |m: String| Err(CheckError::new("claim", "over", m));
    let all = match definition.quantifier.as_deref() {
        Some(q @ ("most" | "all")) => q == "all",
        _ => {
            return refuse(format!(
                "a claim over the values of `{x}` says at how many it holds: for=\"all\" or for=\"most\""
            ))
        }
    };
    if definition.operations.is_some() || definition.trend.is_some() {
        return refuse(
            "a claim over a parameter's values is of one figure at each value: not over operations, nor a trend"
                .into(),
        );
    }
    let Some(values) = params.get(x) else {
        return refuse(format!(
            "`{x}` is not a parameter of the claim's trials; they have {}",
            params.keys().cloned().collect::<Vec<_>>().join(", ")
        ));
    };
    if definition.filter.contains_key(x) || cells.iter().all(|c| c.point.contains_key(x)) {
        return refuse(format!(
            "the claim pins `{x}`, so it is at one value of it: drop `{x}` from `where` (or from one side), or drop `over`"
        ));
    }
    if values.len() < 2 {
        return refuse(format!(
            "the trials have one value of `{x}` ({}): a claim at each of its values is the claim at that point; drop `over`",
            values[0]
        ));
    }
    Ok(Form::Over {
        x: x.to_string(),
        values: values.clone(),
        all,
    })
}

/// The per-operation seconds figures among `points` that belong to `tests` (every test when
/// empty), in name order: each group's (`select_key_s`), a test's total (`select_s`) only
/// for a test without groups.
fn operations_of(points: &[TrialPoint], tests: &[String]) -> Vec<String> {
    let family = &figures::OPERATION_SECONDS;
    let mut out = BTreeSet::new();
    for p in points {
        for (name, _) in p.figures.iter() {
            // a figure of its own (`total_s`) looks like a member but is not one
            if figures::lookup(name).map(|f| f.name) != Some(family.figure.name) {
                continue;
            }
            let stem = name.strip_suffix(family.suffix).unwrap_or(name);
            let of_test = |t: &String| {
                stem.strip_prefix(t.as_str())
                    .is_some_and(|rest| rest.is_empty() || rest.starts_with('_'))
            };
            if tests.is_empty() || tests.iter().any(of_test) {
                out.insert(name.to_string());
            }
        }
    }
    // a test's own `<test>_s` is the sum of its groups' times: counted only when the test
    // has no groups, else it would count its operations twice
    let grouped = |test_total: &String| {
        let stem = test_total.strip_suffix(family.suffix).unwrap_or(test_total);
        family.stems.contains(&stem)
            && out.iter().any(|n| {
                n.starts_with(stem)
                    && n.as_bytes().get(stem.len()) == Some(&b'_')
                    && n != test_total
            })
    };
    let totals: Vec<String> = out.iter().filter(|n| grouped(n)).cloned().collect();
    for t in totals {
        out.remove(&t);
    }
    out.into_iter().collect()
}

/// `points` with `operation`'s seconds as the family's figure (the one a spec over
/// operations reads); trials without it are left out.
pub(crate) fn at_operation(points: &[TrialPoint], operation: &str) -> Vec<TrialPoint> {
    let name = figures::OPERATION_SECONDS.figure.name;
    points
        .iter()
        .filter_map(|p| {
            let v = p.figures.get_named(operation)?;
            let mut q = p.clone();
            q.figures = Figures::from_map(BTreeMap::from([(name.to_string(), v)]));
            Some(q)
        })
        .collect()
}

/// A claim over a suite's operations (see the module docs for the rule).
pub fn check_operations(
    spec: &ClaimSpec,
    definition: &ClaimDef,
    points: &[TrialPoint],
) -> Result<ClaimResult, String> {
    let Form::Operations { tests, all } = &spec.form else {
        unreachable!("a claim over operations");
    };
    let operations = operations_of(points, tests);
    if operations.is_empty() {
        return Err(format!(
            "none of the {} trials recorded per-operation seconds{} (`<test>_s` figures, as sql-bench does)",
            points.len(),
            if tests.is_empty() { String::new() } else { format!(" of {}", tests.join(", ")) }
        ));
    }
    let each_points: Vec<Vec<TrialPoint>> =
        operations.iter().map(|o| at_operation(points, o)).collect();
    let members: Vec<Member<'_>> = operations
        .iter()
        .zip(&each_points)
        .map(|(operation, ps)| Member {
            label: operation.clone(),
            spec: spec.clone(),
            points: ps,
        })
        .collect();
    let found = check_each(definition, &members, &Members::Operations)?;
    let verdict = quantified(*all, &found, &Members::Operations);
    let quantifier = if *all { "all" } else { "most" };
    // each operation's seconds: "jemalloc's time below system's, so jemalloc is faster"
    let words = format!(
        "on {quantifier} operations, {}",
        meaning(spec).replace(spec.metric.name, "time")
    );
    Ok(found.result(spec, verdict, words, quantifier, tests.clone(), None))
}

/// A claim at each value of a parameter (see the module docs for the rule).
pub fn check_over(
    spec: &ClaimSpec,
    definition: &ClaimDef,
    points: &[TrialPoint],
) -> Result<ClaimResult, String> {
    let Form::Over { x, values, all } = &spec.form else {
        unreachable!("a claim over a parameter's values");
    };
    let members: Vec<Member<'_>> = values
        .iter()
        .map(|v| {
            let mut at = spec.clone();
            at.filter.insert(x.clone(), v.clone());
            at.form = Form::One;
            Member {
                label: v.clone(),
                spec: at,
                points,
            }
        })
        .collect();
    let noun = Members::Values(x.clone());
    let found = check_each(definition, &members, &noun)?;
    let verdict = quantified(*all, &found, &noun);
    let (every, quantifier) = if *all {
        ("at every value", "all")
    } else {
        ("at more than half the values", "most")
    };
    let words = format!("{every} of {x}, {}", meaning(spec));
    Ok(found.result(
        spec,
        verdict,
        words,
        quantifier,
        Vec::new(),
        Some(x.clone()),
    ))
}

/// One of the claims a claim over many is made of: an operation's figure, or the claim at one
/// value of a parameter.
struct Member<'p> {
    /// The operation's figure (`select_key_s`) or the parameter's value (`mq-deadline`).
    label: String,
    /// The claim there: the claim's own, or its own with the value pinned.
    spec: ClaimSpec,
    points: &'p [TrialPoint],
}

/// What the members of a claim over many are, for its words.
enum Members {
    Operations,
    /// The values of this parameter.
    Values(String),
}

impl Members {
    /// `an operation`, `a value`: one member.
    fn one(&self) -> &'static str {
        match self {
            Members::Operations => "an operation",
            Members::Values(_) => "a value",
        }
    }

    /// `on every operation`, `at every value of io-scheduler`.
    fn every(&self) -> String {
        match self {
            Members::Operations => "on every operation".to_string(),
            Members::Values(x) => format!("at every value of {x}"),
        }
    }

    /// `on at least one operation`, `at one value of io-scheduler or more`.
    fn any(&self) -> String {
        match self {
            Members::Operations => "on at least one operation".to_string(),
            Members::Values(x) => format!("at one value of {x} or more"),
        }
    }

    /// `on`, `at`: where a claim holds.
    fn preposition(&self) -> &'static str {
        match self {
            Members::Operations => "on",
            Members::Values(_) => "at",
        }
    }

    /// `the 18 operations`, `the 3 values of io-scheduler`.
    fn all_of(&self, m: usize) -> String {
        match self {
            Members::Operations => format!("the {m} operations"),
            Members::Values(x) => format!("the {m} values of {x}"),
        }
    }
}

/// Each member's verdict at its Holm level, and what they add up to.
struct Each {
    each: Vec<OperationVerdict>,
    holds: usize,
    fails: usize,
    inconclusive: usize,
    /// The fewest passes per side of any member.
    passes: usize,
    correction: String,
    left_trials: Vec<String>,
    right_trials: Vec<String>,
}

impl Each {
    /// The claim's result: its verdict and why, each member's beside it.
    fn result(
        self,
        spec: &ClaimSpec,
        (verdict, reason): (ClaimVerdict, String),
        meaning: String,
        quantifier: &str,
        tests: Vec<String>,
        over: Option<String>,
    ) -> ClaimResult {
        ClaimResult {
            metric: spec.metric.name.to_string(),
            expect: spec.expectation.clone(),
            size: spec.size,
            tolerance: spec.tolerance,
            meaning,
            point: spec.filter.clone(),
            verdict,
            reason,
            ratio: None,
            ratio_ci: None,
            passes: self.passes,
            passes_needed: None,
            check: None,
            opposite_checked: false,
            left_trials: self.left_trials,
            right_trials: self.right_trials,
            operations: Some(OperationsResult {
                quantifier: quantifier.to_string(),
                tests,
                over,
                correction: self.correction,
                holds: self.holds,
                fails: self.fails,
                inconclusive: self.inconclusive,
                each: self.each,
            }),
            trend: None,
        }
    }
}

/// Why a claim over the `values` values of `over` can never be decided with at most `passes`
/// per side: its first member is checked at α/m (Holm's first level, and every failure's
/// level), below the rank test's smallest p with that many passes, so no member can hold
/// first and none can fail; `None` when it could.
pub fn undecidable_over(address: &str, over: &str, values: usize, passes: usize) -> Option<String> {
    let alpha = Criteria::default().alpha;
    if values < 2 || passes == 0 {
        return None;
    }
    let level = alpha / values as f64;
    let enough = cairn_analysis::rank_test::min_passes_for(level);
    if passes >= enough {
        return None;
    }
    let smallest = cairn_analysis::rank_test::min_exact_p(passes, passes);
    Some(format!(
        "{address} is checked at each of the {values} values of `{over}`, at α/{values} = {} first (and for any failure), but with at most {passes} passes per side the rank test's smallest p is {}: it can neither hold nor fail, whatever the data; {enough} passes per side is the fewest that could",
        cairn_analysis::sequential::alpha_text(level),
        cairn_analysis::sequential::alpha_text(smallest)
    ))
}

/// Check every member at its Holm level (see the module docs).
fn check_each(
    definition: &ClaimDef,
    members: &[Member<'_>],
    noun: &Members,
) -> Result<Each, String> {
    // first at α, for the p-values Holm orders
    let mut first = Vec::new();
    for m in members {
        first.push(check_one(&m.spec, definition, m.points, 1.0)?);
    }
    let passes = first.iter().map(|(r, _)| r.passes).min().unwrap_or(0);
    let (criteria, _) = sequential_criteria(Criteria::default(), definition.sequential, passes);
    let alpha = criteria.alpha;
    let p_values: Vec<f64> = first.iter().map(|(_, p)| *p).collect();
    let levels = holm(&p_values, alpha);
    let mut each = Vec::new();
    let (mut left_trials, mut right_trials) = (Vec::new(), Vec::new());
    let many = members.len() as f64;
    for (m, (level, significant)) in members.iter().zip(levels) {
        let (r, p_value) = check_one(&m.spec, definition, m.points, alpha / level)?;
        let (verdict, reason) = if r.verdict == ClaimVerdict::Holds && !significant {
            (
                ClaimVerdict::Inconclusive,
                format!(
                    "its CI supports it, but Holm's step-down stopped at {} of smaller p",
                    noun.one()
                ),
            )
        } else if r.verdict == ClaimVerdict::Fails && level > alpha / many {
            // any one member failing fails (or counts against) the claim, so a failure is
            // told at α/m whatever Holm's order of the claim's own p put it at
            let (strict, _) = check_one(&m.spec, definition, m.points, many)?;
            match strict.verdict {
                ClaimVerdict::Fails => (ClaimVerdict::Fails, r.reason.clone()),
                _ => (
                    ClaimVerdict::Inconclusive,
                    format!(
                        "it fails at α = {}, but a failure of any one of {} is told at \
                         α/{} = {}, where its CI is {}: {}",
                        cairn_analysis::sequential::alpha_text(level),
                        noun.all_of(members.len()),
                        members.len(),
                        cairn_analysis::sequential::alpha_text(alpha / many),
                        cairn_report::table::ci_text(
                            &strict.ratio_ci.expect("a one-figure claim has a CI")
                        ),
                        strict.reason
                    ),
                ),
            }
        } else {
            (r.verdict, r.reason.clone())
        };
        for k in &r.left_trials {
            trial_points::push_unique(&mut left_trials, k.clone());
        }
        for k in &r.right_trials {
            trial_points::push_unique(&mut right_trials, k.clone());
        }
        each.push(OperationVerdict {
            operation: m.label.clone(),
            verdict,
            ratio: r.ratio.expect("a one-figure claim has a ratio"),
            ratio_ci: r.ratio_ci.expect("and its CI"),
            p_value,
            alpha: level,
            reason,
        });
    }
    let count = |v: ClaimVerdict| each.iter().filter(|e| e.verdict == v).count();
    Ok(Each {
        holds: count(ClaimVerdict::Holds),
        fails: count(ClaimVerdict::Fails),
        inconclusive: count(ClaimVerdict::Inconclusive),
        passes,
        correction: format!(
            "Holm's step-down over {} (α = {})",
            noun.all_of(members.len()),
            cairn_analysis::sequential::alpha_text(alpha)
        ),
        each,
        left_trials,
        right_trials,
    })
}

/// The verdict of `for="all"` (`all`) or `for="most"` on what the members found.
fn quantified(all: bool, found: &Each, noun: &Members) -> (ClaimVerdict, String) {
    let m = found.each.len();
    let (holds, fails, inconclusive) = (found.holds, found.fails, found.inconclusive);
    let on = noun.preposition();
    if all {
        if holds == m {
            (ClaimVerdict::Holds, format!("it holds {}", noun.every()))
        } else if fails > 0 {
            (ClaimVerdict::Fails, format!("it fails {}", noun.any()))
        } else {
            (
                ClaimVerdict::Inconclusive,
                "none fails, but not every one holds".to_string(),
            )
        }
    } else if 2 * holds > m {
        (ClaimVerdict::Holds, format!("it holds {on} more than half"))
    } else if 2 * (holds + inconclusive) <= m {
        (
            ClaimVerdict::Fails,
            format!("it cannot hold {on} more than half: too many fail"),
        )
    } else {
        (
            ClaimVerdict::Inconclusive,
            "more than half could still hold, but do not yet".to_string(),
        )
    }
}

/// A trend claim (see the module docs for the rule).
pub fn check_trend(
    spec: &ClaimSpec,
    definition: &ClaimDef,
    points: &[TrialPoint],
) -> Result<ClaimResult, String> {
    let Form::Trend {
        x,
        from,
        to,
        direction,
    } = &spec.form
    else {
        unreachable!("a trend claim");
    };
    let at = |v: &String| BTreeMap::from([(x.clone(), v.clone())]);
    let (left_from, left_from_points) = side_values(spec, points, &spec.cells[0], &at(from))?;
    let (right_from, right_from_points) = side_values(spec, points, &spec.cells[1], &at(from))?;
    let (left_to, left_to_points) = side_values(spec, points, &spec.cells[0], &at(to))?;
    let (right_to, right_to_points) = side_values(spec, points, &spec.cells[1], &at(to))?;
    // the gain: the side `>` (or `<`) claims higher (lower) over the other, in numbers
    let left_over_right = spec.expectation.operator == Operator::Greater;
    let effect = |left: &'_ [f64], right: &'_ [f64]| -> (Vec<f64>, Vec<f64>) {
        if left_over_right {
            (right.to_vec(), left.to_vec())
        } else {
            (left.to_vec(), right.to_vec())
        }
    };
    let (base_from, var_from) = effect(&left_from, &right_from);
    let (base_to, var_to) = effect(&left_to, &right_to);
    let gain = if left_over_right {
        format!("{} / {}", spec.expectation.left, spec.expectation.right)
    } else {
        format!("{} / {}", spec.expectation.right, spec.expectation.left)
    };
    let passes = [&left_from, &right_from, &left_to, &right_to]
        .iter()
        .map(|v| v.len())
        .min()
        .unwrap_or(0);
    let all_baseline: Vec<f64> = base_from.iter().chain(&base_to).copied().collect();
    let all_variant: Vec<f64> = var_from.iter().chain(&var_to).copied().collect();
    let criteria = Criteria {
        bootstrap: BootstrapSettings {
            seed: samples_seed(&all_baseline, &all_variant),
            ..BootstrapSettings::default()
        },
        ..Criteria::default()
    };
    let (criteria, _) = sequential_criteria(criteria, definition.sequential, passes);
    let check = cairn_analysis::check_trend(
        Effect::Unpaired {
            baseline: &base_from,
            variant: &var_from,
        },
        Effect::Unpaired {
            baseline: &base_to,
            variant: &var_to,
        },
        *direction,
        &criteria,
    )
    .map_err(|e| e.to_string())?;
    // a gain is measured together within its point; across points the campaigns may
    // differ, but never the class of machine, nor a point's sides
    let every = || {
        left_from_points
            .iter()
            .chain(&right_from_points)
            .chain(&left_to_points)
            .chain(&right_to_points)
            .copied()
    };
    let classes = trial_points::machine_classes(every());
    let apart = [
        (&left_from_points, &right_from_points),
        (&left_to_points, &right_to_points),
    ]
    .iter()
    .map(|(l, r)| trial_points::campaigns(l.iter().chain(r.iter()).copied()))
    .max()
    .unwrap_or(1);
    let (verdict, reason) = if classes > 1 {
        (
            ClaimVerdict::Inconclusive,
            format!("measured on {classes} classes of machine: a change could be the machines'"),
        )
    } else if apart > 1 {
        (
            ClaimVerdict::Inconclusive,
            format!("a point's sides were measured in {apart} campaigns, not together: its gain could be the moment's"),
        )
    } else {
        (check.verdict, check.reason.to_string())
    };
    let keys = |a: &[&TrialPoint], b: &[&TrialPoint]| {
        a.iter().chain(b).map(|p| p.key.clone()).collect::<Vec<_>>()
    };
    let words = format!(
        "the gain {gain} of {} {direction} from {x} = {from} to {x} = {to}",
        spec.metric.name
    );
    Ok(ClaimResult {
        metric: spec.metric.name.to_string(),
        expect: spec.expectation.clone(),
        size: 0.0,
        tolerance: None,
        meaning: words,
        point: spec.filter.clone(),
        verdict,
        reason,
        ratio: Some(check.change.ratio),
        ratio_ci: Some(check.change.ci),
        passes,
        passes_needed: None,
        check: None,
        opposite_checked: false,
        left_trials: keys(&left_from_points, &left_to_points),
        right_trials: keys(&right_from_points, &right_to_points),
        operations: None,
        trend: Some(TrendResult {
            x: x.clone(),
            from: from.clone(),
            to: to.clone(),
            gain,
            check,
        }),
    })
}
