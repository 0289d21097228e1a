//! Claim steps (`claim` nodes): a published finding stated as a check against the trials —
//! `expect "jemalloc > system" by="5%"` at one matrix point (`where threads=4`) — with a
//! verdict of holds / fails / inconclusive, the ratio of medians and its CI, and the passes
//! the observed noise would need. Writes `claim.json`.
//!
//! # What an expectation means
//!
//! With `r` = median(left) / median(right) of the claim's figure (right is the baseline):
//!
//! | expectation | holds when the whole 95% CI of `r` shows | cairn-analysis claim |
//! |---|---|---|
//! | `a > b by="x"` | `r ≥ 1 + x` (a is higher by at least x; `by` defaults to 0) | a shift of at least x, significant |
//! | `a < b by="x"` | `r ≤ 1 − x` | a shift of at least x, significant |
//! | `a >= b within="x"` | `r ≥ 1 − x` (a is not lower than b by more than x; default 0) | the opposite claim `a < b by x` fails |
//! | `a <= b within="x"` | `r ≤ 1 + x` | the opposite claim `a > b by x` fails |
//! | `a > b about="x" tolerance="t"` | `1 + x − t ≤ r ≤ 1 + x + t` (a band: "about x higher") | a band, inside it, significant; fails wholly outside |
//! | `a < b about="x" tolerance="t"` | `1 − x − t ≤ r ≤ 1 − x + t` | as above |
//!
//! `>`/`<` compare the figure's numbers (for a time, `a < b` means a takes less time); they
//! are turned into the figure's better direction for `cairn_analysis::check_claim`. The
//! strict forms claim a difference and need the rank test to confirm it; the non-strict
//! forms claim the absence of a difference beyond a tolerance, and hold when the CI rules
//! it out. Both are inconclusive when the passes are too few for the rank test, or fewer
//! than the observed noise needs to resolve the size — unless the rank test of the samples
//! against the claimed size's edges decides it (a speed-up far outside the claim): noisy
//! data never holds (nor fails) by its CI alone.
//!
//! Because `>` and `<` read the numbers, on a time "faster" is `<` (less time): the result
//! carries the claim's [`meaning`] in words — "its latency_p95_ms at least 5% below system's:
//! jemalloc takes less time (faster)" — so a reader never has to work out the direction.

use cairn_engine::CheckError;
use std::collections::BTreeMap;

use cairn_analysis::{
    check_claim_on, compare, BootstrapSettings, ClaimDirection, ClaimVerdict, Criteria, Samples,
    TrendDirection,
};
use cairn_defs::figures::{Direction, Figure};
use cairn_defs::ClaimDef;
use cairn_graph::{Step, StepGraph};
use serde_json::Value;

use crate::analysis_step::{figure_named, samples_seed};
use crate::trial_points::{self, display_value, Dimensions, TrialPoint};
use cairn_engine::error::{failed, StepError};
use cairn_engine::execute::{Built, Done};
use cairn_engine::Env;
use cairn_report::claim::{summary_line, ClaimResult, Expectation, Operator};

/// The output of a claim step.
pub const CLAIM_JSON: &str = "claim.json";

/// Parse `"a >= b"`; the sides are cells ([`parse_cell`]): server names, with parameters
/// (`a[engine=InnoDB]`) or a trials block (`rw:a`).
pub fn parse_expectation(text: &str) -> Result<Expectation, String> {
    let Some([left, op, right]) = cairn_defs::claim::expectation_words(text) else {
        return Err(format!(
            "`{text}` is not an expectation: write two servers around one of >=, <=, >, <, ==, e.g. \"jemalloc >= system\""
        ));
    };
    let operator = match op {
        ">" => Operator::Greater,
        "<" => Operator::Less,
        ">=" => Operator::AtLeast,
        "<=" => Operator::AtMost,
        "==" => Operator::Same,
        other => {
            return Err(format!(
                "`{other}` is not an operator of an expectation; use one of >=, <=, >, <, =="
            ))
        }
    };
    if left == right {
        return Err(format!("both sides of `{text}` are `{left}`"));
    }
    Ok(Expectation {
        left: left.to_string(),
        operator,
        right: right.to_string(),
    })
}

/// A claim's definition, checked: what it compares, where, and how.
#[derive(Debug, Clone, PartialEq)]
pub struct ClaimSpec {
    pub metric: &'static Figure,
    pub filter: BTreeMap<String, String>,
    pub expectation: Expectation,
    /// `by` (strict operators), `within` (non-strict) or a band's `about`, as a fraction; 0
    /// when absent.
    pub size: f64,
    /// A band's half-width (`tolerance`), a fraction; `None` unless `about` is written.
    pub tolerance: Option<f64>,
    /// The two sides (left, right) as cells: a server, and the parameters it pins beyond
    /// the claim's `where`.
    pub cells: [Cell; 2],
    /// One figure at one point, over a suite's operations, at each value of a parameter, or
    /// a trend.
    pub form: Form,
}

/// What a claim checks beyond one figure at one point.
#[derive(Debug, Clone, PartialEq)]
pub enum Form {
    /// `metric` at the claim's point.
    One,
    /// Each per-operation seconds figure of `tests` (empty: every test), `all` of them or
    /// most (more than half): [`crate::claim_forms::check_operations`].
    Operations { tests: Vec<String>, all: bool },
    /// The claim at each of `values` of the parameter `x`, `all` of them or most:
    /// [`crate::claim_forms::check_over`].
    Over {
        x: String,
        values: Vec<String>,
        all: bool,
    },
    /// The gain along the parameter `x` from its value `from` to `to`:
    /// [`crate::claim_forms::check_trend`].
    Trend {
        x: String,
        from: String,
        to: String,
        direction: TrendDirection,
    },
}

/// One side of an expectation: `system`, `system[engine=InnoDB]` (a server at other
/// parameter values than the claim's `where`) or `rw:system` (in the trials block `rw`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cell {
    pub server: String,
    pub point: BTreeMap<String, String>,
}

/// Read a side: `[block:]server[k=v,…]`.
pub fn parse_cell(text: &str) -> Result<Cell, String> {
    let mut point = BTreeMap::new();
    let (block, server, pins) = cairn_defs::claim::side_parts(text);
    if let Some(block) = block {
        point.insert("trials".to_string(), block.to_string());
    }
    let pins = pins
        .map(|p| {
            p.strip_suffix(']')
                .ok_or_else(|| format!("`{text}`: a side's parameters end with `]`"))
        })
        .transpose()?;
    for pin in pins.into_iter().flat_map(|p| p.split(',')) {
        let Some((k, v)) = pin.split_once('=') else {
            return Err(format!(
                "`{text}`: write a side's parameters as `server[key=value,…]`, not `{pin}`"
            ));
        };
        point.insert(k.trim().to_string(), v.trim().to_string());
    }
    if server.is_empty() || block == Some("") {
        return Err(format!("`{text}` names no server"));
    }
    Ok(Cell {
        server: server.to_string(),
        point,
    })
}

/// A parameter a claim pins (in `where` or on a side), checked against the trials'.
fn check_pin(
    k: &str,
    v: &str,
    params: &BTreeMap<String, Vec<String>>,
    at: &str,
) -> Result<(), CheckError> {
    match params.get(k) {
        // runs of one server start are not independent samples: a claim's unit is the start
        None if k == cairn_defs::lifecycle::RUN => Err(CheckError::new(
            "claim",
            at,
            "a claim compares server starts (each the median of its runs), not the runs of one start: `run` is for tables and plots; drop it from the claim",
        )),
        None => Err(CheckError::new(
            "claim",
            at,
            format!(
                "the trials have no parameter `{k}`; they have {}",
                params.keys().cloned().collect::<Vec<_>>().join(", ")
            ),
        )),
        Some(values) if !values.iter().any(|x| x == v) => Err(CheckError::new(
            "claim",
            at,
            format!(
                "no trial has {k} = {v}; the trials have {}",
                values.join(", ")
            ),
        )),
        Some(_) => Ok(()),
    }
}

/// Read and check a claim's definition against the servers and parameters of the trials.
pub fn claim_spec(definition: &ClaimDef, dims: &Dimensions) -> Result<ClaimSpec, CheckError> {
    let (servers, params) = (&dims.servers, &dims.params);
    let metric = match definition.operations {
        // its figures are the suite's per-operation seconds, each read by its name
        Some(_) => &cairn_defs::figures::OPERATION_SECONDS.figure,
        None => figure_named("claim", "metric", &definition.metric)?,
    };
    if metric.direction == Direction::Neither {
        return Err(CheckError::new("claim", 
            "metric",
            format!(
                "`{}` is neither better higher nor lower (it is a setting), so a claim about it cannot be checked",
                metric.name
            ),
        ));
    }
    let expectation =
        parse_expectation(&definition.expect).map_err(|m| CheckError::new("claim", "expect", m))?;
    let mut cells = Vec::new();
    for side in [&expectation.left, &expectation.right] {
        let cell = parse_cell(side).map_err(|m| CheckError::new("claim", "expect", m))?;
        if !servers.contains(&cell.server) {
            return Err(CheckError::new(
                "claim",
                "expect",
                format!(
                    "`{}` is not a server of the study's trials; they measure {}",
                    cell.server,
                    servers.join(", ")
                ),
            ));
        }
        for (k, v) in &cell.point {
            check_pin(k, v, params, "expect")?;
        }
        cells.push(cell);
    }
    let cells: [Cell; 2] = cells.try_into().expect("two sides");
    let form = crate::claim_forms::form_of(definition, expectation.operator, params, &cells)?;
    // the parameter a trend runs along, or whose values a claim is checked at, is pinned
    // by the form (its two points, each value)
    let along = match &form {
        Form::Trend { x, .. } | Form::Over { x, .. } => Some(x.as_str()),
        _ => None,
    };
    let (by, within) = (definition.by, definition.within);
    if let Some(band) = band_of(definition, expectation.operator)? {
        return Ok(ClaimSpec {
            metric,
            filter: claim_point(definition, dims, &cells, along)?,
            expectation,
            size: band.0,
            tolerance: Some(band.1),
            cells,
            form,
        });
    }
    let size = match expectation.operator {
        Operator::Greater | Operator::Less => {
            if within.is_some() {
                return Err(CheckError::new("claim", 
                    "expect",
                    format!(
                        "`within` is the tolerance of >= and <=; for `{}` write by=\"5%\" (at least that much)",
                        expectation.operator.symbol()
                    ),
                ));
            }
            by.unwrap_or(0.0)
        }
        Operator::AtLeast | Operator::AtMost | Operator::Same => {
            if by.is_some() {
                return Err(CheckError::new(
                    "claim",
                    "expect",
                    format!(
                        "`by` is the size of > and <; for `{}` write within=\"5%\" (the tolerance)",
                        expectation.operator.symbol()
                    ),
                ));
            }
            match within {
                Some(w) if w > 0.0 => w,
                _ if expectation.operator == Operator::Same => {
                    return Err(CheckError::new(
                        "claim",
                        "expect",
                        "`==` claims the same within a tolerance: add within=\"5%\" (how close counts as the same)"
                            .to_string(),
                    ))
                }
                _ => within.unwrap_or(0.0),
            }
        }
    };
    if !(0.0..1.0).contains(&size) {
        return Err(CheckError::new(
            "claim",
            "expect",
            format!(
                "a size of {}% cannot be checked; use one below 100%",
                size * 100.0
            ),
        ));
    }
    Ok(ClaimSpec {
        metric,
        filter: claim_point(definition, dims, &cells, along)?,
        expectation,
        size,
        tolerance: None,
        cells,
        form,
    })
}

/// A claim's band `(about, tolerance)`, checked: both written, beside `>` or `<` alone, the
/// tolerance at most its centre (a band may start at no difference: "up to 4%") and (for
/// `<`) the band above zero. `None` without `about`.
fn band_of(definition: &ClaimDef, op: Operator) -> Result<Option<(f64, f64)>, CheckError> {
    use cairn_defs::claim::{band_problems, BandSide};
    let side = match op {
        Operator::Greater => BandSide::Above,
        Operator::Less => BandSide::Below,
        Operator::AtLeast | Operator::AtMost | Operator::Same => BandSide::NoDifference,
    };
    let (about, tolerance) = (definition.about, definition.tolerance);
    let second_size = definition.by.is_some() || definition.within.is_some();
    if let Some(problem) = band_problems(about, tolerance, second_size, side).first() {
        let message = problem.message(about.unwrap_or(0.0), tolerance.unwrap_or(0.0));
        let message = format!("{message}: {}", problem.remedy());
        return Err(CheckError::new("claim", "expect", message));
    }
    Ok(about.zip(tolerance))
}

/// The matrix point a claim is at (`where`), checked against the trials' parameters: every
/// parameter that varies must be pinned, but `along` (a trend's two points pin it, a claim
/// over a parameter's values each value) and a parameter that follows one pinned for both
/// sides (a tied axis: `where cpus=2` pins the `threads` tied to it).
fn claim_point(
    definition: &ClaimDef,
    dims: &Dimensions,
    cells: &[Cell; 2],
    along: Option<&str>,
) -> Result<BTreeMap<String, String>, CheckError> {
    let params = &dims.params;
    let mut filter = BTreeMap::new();
    for (k, v) in &definition.filter {
        let v = display_value(v);
        check_pin(k, &v, params, k)?;
        filter.insert(k.clone(), v);
    }
    // a parameter both sides pin is pinned: `a[engine=InnoDB] > a[engine=MyISAM]`; one
    // that follows a parameter pinned alike for both sides is pinned with it (not one a
    // side pins alone: the sides would differ in it unsaid)
    let mut shared: Vec<&str> = filter.keys().map(String::as_str).collect();
    shared.extend(along);
    let pinned = |k: &String| {
        filter.contains_key(k)
            || cells.iter().all(|c| c.point.contains_key(k))
            || along == Some(k.as_str())
            || dims.follows_one_of(k, &shared).is_some()
    };
    if let Some((k, values)) = params.iter().find(|(k, v)| v.len() > 1 && !pinned(k)) {
        // several blocks: the claim names the one it reads (its inputs are then that block's)
        let how = if k == "trials" {
            format!("name the block it reads, e.g. `trials \"{}\"`", values[0])
        } else {
            format!(
                "say at which point the claim is, e.g. `where {k}={}`",
                values[0]
            )
        };
        return Err(CheckError::new(
            "claim",
            "expect",
            format!("the trials vary in `{k}` ({}): {how}", values.join(", ")),
        ));
    }
    Ok(filter)
}

/// The claim `definition` over the trials measured (`points`), its point written in full:
/// what a claim step checks once its trials ran.
pub fn claim_spec_of_points(
    definition: &ClaimDef,
    points: &[TrialPoint],
) -> Result<ClaimSpec, CheckError> {
    let dims = trial_points::dimensions(points);
    let mut spec = claim_spec(definition, &dims)?;
    pin_followers(&mut spec, &dims, points);
    Ok(spec)
}

/// Writes into the claim's point the value of each parameter that follows one it pins (a
/// tied axis: `where cpus=2` is at `threads=2` too), so its result says where it was checked;
/// the trials it reads are the same.
fn pin_followers(spec: &mut ClaimSpec, dims: &Dimensions, points: &[TrialPoint]) {
    let pinned: Vec<&str> = spec.filter.keys().map(String::as_str).collect();
    let followers: Vec<&String> = dims
        .leaders
        .keys()
        .filter(|k| !spec.filter.contains_key(*k))
        .filter(|k| dims.follows_one_of(k, &pinned).is_some())
        .collect();
    let Some(at) = points.iter().find(|p| {
        spec.filter
            .iter()
            .all(|(k, v)| p.dimension(k).as_ref() == Some(v))
    }) else {
        return;
    };
    let values: Vec<(String, String)> = followers
        .into_iter()
        .filter_map(|k| Some((k.clone(), at.dimension(k)?)))
        .collect();
    spec.filter.extend(values);
}

/// The claim for cairn-analysis and whether its verdict is to be turned around (`>=`, `<=`).
fn analysis_claim(spec: &ClaimSpec) -> (cairn_analysis::Claim, bool) {
    let (op, size) = (spec.expectation.operator, spec.size);
    let higher_better = spec.metric.direction == Direction::HigherIsBetter;
    if op == Operator::Same {
        // the ratio r of the numbers within [1 − x, 1 + x]; for a time the speed-up 1/r
        // lies within [1/(1 + x), 1/(1 − x)]
        let claim = if higher_better {
            cairn_analysis::Claim::same(size, size)
        } else {
            cairn_analysis::Claim::same(1.0 - 1.0 / (1.0 + size), 1.0 / (1.0 - size) - 1.0)
        };
        return (claim, false);
    }
    // the strict form whose verdict decides: `>=` within x is "not (< by x)"
    let (strict_greater, negated) = match op {
        Operator::Greater => (true, false),
        Operator::Less => (false, false),
        Operator::AtLeast => (false, true),
        Operator::AtMost => (true, true),
        Operator::Same => unreachable!("the same is its own claim, above"),
    };
    // what it says of the ratio r of the numbers: greater → r ≥ 1 + x, less → r ≤ 1 − x;
    // a band bounds the far side too
    let far = spec.tolerance.map(|t| size + t);
    let near = size - spec.tolerance.unwrap_or(0.0);
    let claim = match (strict_greater, higher_better) {
        (true, true) => cairn_analysis::Claim {
            direction: ClaimDirection::Faster,
            at_least: near,
            at_most: far,
        },
        (false, true) => cairn_analysis::Claim {
            direction: ClaimDirection::Slower,
            at_least: near,
            at_most: far,
        },
        // a time: r ≥ 1 + x is a speed-up s = 1/r ≤ 1/(1 + x)
        (true, false) => cairn_analysis::Claim {
            direction: ClaimDirection::Slower,
            at_least: 1.0 - 1.0 / (1.0 + near),
            at_most: far.map(|f| 1.0 - 1.0 / (1.0 + f)),
        },
        // r ≤ 1 − x is s ≥ 1/(1 − x)
        (false, false) => cairn_analysis::Claim {
            direction: ClaimDirection::Faster,
            at_least: 1.0 / (1.0 - near) - 1.0,
            at_most: far.map(|f| 1.0 / (1.0 - f) - 1.0),
        },
    };
    (claim, negated)
}

/// What a claim says, in words that settle the direction: `>`/`<` compare the figure's
/// numbers, so on a time (lower is better) `a < b` is "a takes less time", i.e. faster.
pub fn meaning(spec: &ClaimSpec) -> String {
    let Expectation {
        left,
        operator,
        right,
    } = &spec.expectation;
    let figure = spec.metric.name;
    let time = spec.metric.direction == Direction::LowerIsBetter;
    let pct = cairn_defs::claim::percent_as_written;
    let higher = matches!(operator, Operator::Greater | Operator::AtMost);
    let (above, better) = match (higher, time) {
        (true, false) => ("above", "faster"),
        (false, false) => ("below", "slower"),
        (true, true) => ("above", "slower (takes more time)"),
        (false, true) => ("below", "faster (takes less time)"),
    };
    match (operator, spec.tolerance) {
        (Operator::Greater | Operator::Less, Some(t)) => {
            // on a time the size is of the time, not of a speed: "takes about 9% less time"
            let about = match (time, higher) {
                (false, _) => format!("is about {} {better}", pct(spec.size)),
                (true, true) => format!("takes about {} more time (slower)", pct(spec.size)),
                (true, false) => format!("takes about {} less time (faster)", pct(spec.size)),
            };
            format!(
                "{left}'s {figure} {} to {} {above} {right}'s, so {left} {about}",
                pct(spec.size - t),
                pct(spec.size + t),
            )
        }
        (Operator::Greater | Operator::Less, None) if spec.size > 0.0 => format!(
            "{left}'s {figure} at least {} {above} {right}'s, so {left} is {better}",
            pct(spec.size)
        ),
        (Operator::Greater | Operator::Less, None) => {
            format!("{left}'s {figure} {above} {right}'s, so {left} is {better}")
        }
        // `a >= b` within x: a not below b by more than x; `a <= b`: not above
        (Operator::AtLeast, _) => format!(
            "{left}'s {figure} at most {} below {right}'s, so {left} is not {} by more than that",
            pct(spec.size),
            if time { "faster" } else { "slower" }
        ),
        (Operator::AtMost, _) => format!(
            "{left}'s {figure} at most {} above {right}'s, so {left} is not {} by more than that",
            pct(spec.size),
            if time { "slower" } else { "faster" }
        ),
        (Operator::Same, _) => format!(
            "{left}'s {figure} within {} of {right}'s either way, so {left} and {right} are about the same",
            pct(spec.size)
        ),
    }
}

/// Check `spec` against `points` (the study's trials). `definition` seeds the bootstrap.
pub fn check(
    spec: &ClaimSpec,
    definition: &ClaimDef,
    points: &[TrialPoint],
) -> Result<ClaimResult, String> {
    // one member of a family (sql-bench's `select_s`): the spec's figure is the family's
    // (`<test>_s`), so its points carry the member's value under the family's name, as a
    // claim over operations reads each one, and the result names the member
    let member_of_family = !matches!(spec.form, Form::Operations { .. })
        && definition.metric != spec.metric.name
        && cairn_defs::figures::FAMILIES
            .iter()
            .any(|f| f.figure.name == spec.metric.name);
    if member_of_family {
        let member = crate::claim_forms::at_operation(points, &definition.metric);
        let mut result = check_form(spec, definition, &member)?;
        result.meaning = result.meaning.replace(spec.metric.name, &definition.metric);
        result.metric = definition.metric.clone();
        return Ok(result);
    }
    check_form(spec, definition, points)
}

/// [`check`] by the claim's form, on points that carry its figure.
fn check_form(
    spec: &ClaimSpec,
    definition: &ClaimDef,
    points: &[TrialPoint],
) -> Result<ClaimResult, String> {
    match &spec.form {
        Form::One => check_one(spec, definition, points, 1.0).map(|(result, _)| result),
        Form::Operations { .. } => crate::claim_forms::check_operations(spec, definition, points),
        Form::Over { .. } => crate::claim_forms::check_over(spec, definition, points),
        Form::Trend { .. } => crate::claim_forms::check_trend(spec, definition, points),
    }
}

/// A side's values of the claim's figure and its trials, in pass order.
pub(crate) type Side<'p> = (Vec<f64>, Vec<&'p TrialPoint>);

/// The values of `cell` at the claim's point with `extra` pinned over it (a trend's `x`).
pub(crate) fn side_values<'p>(
    spec: &ClaimSpec,
    points: &'p [TrialPoint],
    cell: &Cell,
    extra: &BTreeMap<String, String>,
) -> Result<Side<'p>, String> {
    let server = &cell.server;
    // the claim's point, with what the side pins over it
    let mut at = spec.filter.clone();
    at.extend(cell.point.clone());
    at.extend(extra.clone());
    let mut chosen: Vec<&TrialPoint> = points
        .iter()
        .filter(|p| &p.server == server)
        .filter(|p| at.iter().all(|(k, v)| p.dimension(k).as_ref() == Some(v)))
        .collect();
    chosen.sort_by_key(|p| p.pass);
    if chosen.is_empty() {
        return Err(format!("no trial of `{server}` at this point"));
    }
    let mut values = Vec::new();
    for p in &chosen {
        values.push(
            p.figures
                .get(spec.metric)
                .ok_or_else(|| format!("{} recorded no `{}`", p.address, spec.metric.name))?,
        );
    }
    Ok((values, chosen))
}

/// The claim of one figure at one point, its comparison at α / `divisor` (Holm's level of
/// one operation among many; 1 alone), and the rank test's p-value.
pub(crate) fn check_one(
    spec: &ClaimSpec,
    definition: &ClaimDef,
    points: &[TrialPoint],
    divisor: f64,
) -> Result<(ClaimResult, f64), String> {
    let none = BTreeMap::new();
    let (left, left_points) = side_values(spec, points, &spec.cells[0], &none)?;
    let (right, right_points) = side_values(spec, points, &spec.cells[1], &none)?;
    // both sides' passes: like a table's comparison, a claim never mixes classes of machine
    // or campaigns silently
    let both = || left_points.iter().chain(&right_points).copied();
    let classes = trial_points::machine_classes(both());
    let campaigns = trial_points::campaigns(both());
    let keys = |points: &[&TrialPoint]| points.iter().map(|p| p.key.clone()).collect();
    let (left_trials, right_trials): (Vec<String>, Vec<String>) =
        (keys(&left_points), keys(&right_points));
    let (claim, negated) = analysis_claim(spec);
    let criteria = Criteria {
        resolve: (claim.at_least > 0.0).then_some(claim.at_least),
        bootstrap: BootstrapSettings {
            // the table's seed for these samples: a claim and its table's cell agree
            seed: samples_seed(&right, &left),
            ..BootstrapSettings::default()
        },
        ..Criteria::default()
    };
    // under a sequential design: at the level of the look the passes stand at
    let (mut criteria, look) = crate::analysis_step::sequential_criteria(
        criteria,
        definition.sequential,
        left.len().min(right.len()),
    );
    criteria.alpha /= divisor;
    let mut comparison =
        compare(&right, &left, spec.metric.direction, &criteria).map_err(|e| e.to_string())?;
    if let Some(look) = look {
        comparison = cairn_analysis::sequential::at_look(comparison, look);
    }
    if classes > 1 {
        comparison = comparison.mixed_machines(classes);
    } else if campaigns > 1 {
        comparison = comparison.mixed_campaigns(campaigns);
    }
    let samples = Samples {
        baseline: &right,
        variant: &left,
    };
    let check = check_claim_on(&comparison, claim, samples).map_err(|e| e.to_string())?;
    let (verdict, reason) = if negated {
        match check.verdict {
            ClaimVerdict::Holds => (
                ClaimVerdict::Fails,
                format!("the data show the opposite ({claim}): {}", check.reason),
            ),
            ClaimVerdict::Fails => (
                ClaimVerdict::Holds,
                format!("the whole CI rules out the opposite ({claim})"),
            ),
            ClaimVerdict::Inconclusive => (ClaimVerdict::Inconclusive, check.reason.to_string()),
        }
    } else {
        (check.verdict, check.reason.to_string())
    };
    // under a sequential design: which look decided it
    let reason = match comparison.look {
        Some(look) => format!(
            "{reason} ({})",
            look.note(verdict == ClaimVerdict::Inconclusive, None)
        ),
        None => reason,
    };
    let p_value = comparison.test.p_value;
    let result = ClaimResult {
        metric: spec.metric.name.to_string(),
        expect: spec.expectation.clone(),
        size: spec.size,
        tolerance: spec.tolerance,
        meaning: meaning(spec),
        point: spec.filter.clone(),
        verdict,
        reason,
        ratio: Some(check.ratio),
        ratio_ci: Some(check.ratio_ci),
        passes: left.len().min(right.len()),
        passes_needed: Some(check.passes_needed),
        check: Some(check),
        opposite_checked: negated,
        left_trials,
        right_trials,
        operations: None,
        trend: None,
    };
    Ok((result, p_value))
}

/// The definition of a claim step, as the resolver wrote it.
fn claim_def(step: &Step) -> Result<ClaimDef, CheckError> {
    step.def().map_err(|e: String| CheckError::new("", "", e))
}

/// The kind of `claim` steps.
pub struct ClaimKind;

impl cairn_engine::Kind for ClaimKind {
    fn check(&self, graph: &StepGraph, step: &Step) -> Result<(), cairn_engine::CheckError> {
        claim_spec(
            &claim_def(step)?,
            &trial_points::dimensions_of_inputs(graph, step),
        )
        .map(|_| ())
    }

    fn design_warnings(&self, graph: &StepGraph, step: &Step) -> Vec<String> {
        let Ok(definition) = claim_def(step) else {
            return Vec::new();
        };
        let Some(over) = &definition.over else {
            return Vec::new();
        };
        let dims = trial_points::dimensions_of_inputs(graph, step);
        let values = dims.params.get(over).map_or(0, Vec::len);
        let passes = trial_points::fewest_passes_of_inputs(graph, step);
        crate::claim_forms::undecidable_over(&step.address, over, values, passes)
            .into_iter()
            .collect()
    }

    fn perform(
        &self,
        env: &Env<'_>,
        step: &Step,
        _key: &str,
        inputs: &[&Done],
    ) -> Result<Built, StepError> {
        let definition = claim_def(step).map_err(failed)?;
        let points = trial_points::read(env.store, step, inputs)?;
        let spec = claim_spec_of_points(&definition, &points).map_err(failed)?;
        let result = check(&spec, &definition, &points).map_err(failed)?;
        let json = serde_json::to_vec_pretty(&result).expect("serialises");
        let blob = env
            .store
            .put_blob(&json)
            .map_err(|e| failed(format!("storing {CLAIM_JSON}: {e}")))?;
        let mut extra = serde_json::Map::new();
        extra.insert("headline".into(), Value::String(summary_line(&result)));
        extra.insert(
            "verdict".into(),
            serde_json::to_value(result.verdict).expect("serialises"),
        );
        Ok(Built {
            outputs: BTreeMap::from([(CLAIM_JSON.to_string(), blob)]),
            extra,
            ..Default::default()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_claim_pinning_a_run_is_told_its_unit_is_the_server_start() {
        let params = BTreeMap::from([("threads".to_string(), vec!["1".to_string()])]);
        let e = check_pin("run", "1", &params, "run").unwrap_err();
        assert!(
            e.message.contains("a claim compares server starts"),
            "{e:?}"
        );
        let e = check_pin("thread", "1", &params, "thread").unwrap_err();
        assert!(e.message.contains("they have threads"), "{e:?}");
    }
}
