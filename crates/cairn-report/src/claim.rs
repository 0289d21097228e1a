//! A checked claim — `expect "jemalloc > system" by="5%"` at one point, its verdict, the
//! ratio of medians with its CI and the passes the noise would need — as `claim.json` holds
//! it, and its lines for a person.

use std::collections::BTreeMap;

use cairn_analysis::{ClaimCheck, ClaimVerdict, Interval, PassesNeeded};
use serde::{Deserialize, Serialize};

use crate::document::Inline;
use crate::markdown;

/// The comparison operator of an expectation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Operator {
    #[serde(rename = ">")]
    Greater,
    #[serde(rename = "<")]
    Less,
    #[serde(rename = ">=")]
    AtLeast,
    #[serde(rename = "<=")]
    AtMost,
    /// The same within a tolerance: `a == b` within="5%".
    #[serde(rename = "==")]
    Same,
}

impl Operator {
    pub fn symbol(self) -> &'static str {
        match self {
            Operator::Greater => ">",
            Operator::Less => "<",
            Operator::AtLeast => ">=",
            Operator::AtMost => "<=",
            Operator::Same => "==",
        }
    }
}

/// `"jemalloc >= system"` read: the two sides and the operator.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Expectation {
    pub left: String,
    pub operator: Operator,
    pub right: String,
}

/// What `claim.json` holds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClaimResult {
    pub metric: String,
    pub expect: Expectation,
    /// `by`, `within` or a band's `about`, as a fraction.
    pub size: f64,
    /// A band's half-width (`tolerance`), as a fraction; absent for other claims.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tolerance: Option<f64>,
    /// What the claim says in words that settle the direction ("its latency_p95_ms at
    /// least 5% below system's, so jemalloc is faster (takes less time)").
    #[serde(default)]
    pub meaning: String,
    /// The point the claim is checked at (`where`).
    pub point: BTreeMap<String, String>,
    pub verdict: ClaimVerdict,
    /// Why, for a person.
    pub reason: String,
    /// median(left) / median(right) and its 95% bootstrap CI; for a trend, the change of the
    /// gain (its ratio at `to` over its ratio at `from`); absent over operations (each has
    /// its own, in `operations`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ratio: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ratio_ci: Option<Interval>,
    /// The passes per side, and how many the observed noise would need for the claim's size
    /// (absent for a trend and over operations).
    pub passes: usize,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub passes_needed: Option<PassesNeeded>,
    /// The check as cairn-analysis made it (in the figure's better direction); for `>=` and
    /// `<=` it is the opposite claim's, whose verdict this one turns around. Absent for a
    /// trend and over operations.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub check: Option<ClaimCheck>,
    pub opposite_checked: bool,
    /// The trial records behind each side.
    pub left_trials: Vec<String>,
    pub right_trials: Vec<String>,
    /// A claim over a suite's operations (`operations`, `for=`), or at each value of a
    /// parameter (`over=`, `for=`): each one's verdict and the count.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub operations: Option<OperationsResult>,
    /// A trend claim (`trend=`, `x=`): the gain at both points and its change.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trend: Option<TrendResult>,
}

/// A claim over operations, or over the values of a parameter (`over`): how many it must
/// hold on, and each one's verdict.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OperationsResult {
    /// `most` (more than half) or `all`.
    pub quantifier: String,
    /// The tests whose operations were read (empty: every test, or a claim `over` values).
    pub tests: Vec<String>,
    /// The parameter whose values the claim was checked at (`io-scheduler`); each member's
    /// `operation` is then a value of it. Absent over operations.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub over: Option<String>,
    /// The correction for checking many at once, in words.
    pub correction: String,
    pub holds: usize,
    pub fails: usize,
    pub inconclusive: usize,
    pub each: Vec<OperationVerdict>,
}

/// One operation's (or value's) check at its corrected level.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OperationVerdict {
    /// The figure, e.g. `select_key_s`; over a parameter, its value, e.g. `mq-deadline`.
    pub operation: String,
    pub verdict: ClaimVerdict,
    /// median(left) / median(right) and its CI at the operation's level.
    pub ratio: f64,
    pub ratio_ci: Interval,
    /// The rank test's p-value and the Holm level it was checked at.
    pub p_value: f64,
    pub alpha: f64,
    pub reason: String,
}

/// A trend claim: the gain of one side over the other at two values of an ordered parameter.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TrendResult {
    /// The parameter and its two values, low (`from`) then high (`to`).
    pub x: String,
    pub from: String,
    pub to: String,
    /// The gain, as a ratio of the sides: `jemalloc / system`.
    pub gain: String,
    pub check: cairn_analysis::TrendCheck,
}

/// One line for a person: `holds: ratio 1.103 [1.071, 1.140] with 3 passes per side; the
/// whole CI …` (over operations: the count; for a trend: the gain at both points).
pub fn summary_line(r: &ClaimResult) -> String {
    match (&r.ratio, &r.ratio_ci) {
        _ if r.operations.is_some() || r.trend.is_some() => {
            format!("{}: {}; {}", r.verdict, form_words(r), r.reason)
        }
        (Some(ratio), Some(ci)) => format!(
            "{}: ratio {:.3} [{:.3}, {:.3}] with {}; {}",
            r.verdict,
            ratio,
            ci.low,
            ci.high,
            passes_words(r),
            r.reason
        ),
        _ => format!("{}: {}", r.verdict, r.reason),
    }
}

/// What a claim over operations, over a parameter's values or a trend found, in words: `holds
/// on 14 of 18 operations (3 fail, 1 inconclusive)`; `holds at 2 of 3 values of io-scheduler
/// (…): io-scheduler = none holds ×1.120 [..]; …` (each value's, there are few); or `the gain
/// jemalloc / system is ×1.040 [..] at threads = 1 and ×1.210 [..] at threads = 4: it grows
/// ×1.163 [..] (+16.3%)`. Empty for other claims.
pub fn form_words(r: &ClaimResult) -> String {
    if let Some(o) = &r.operations {
        // over a parameter's values (few), with the passes and each value's verdict
        let (members, passes, list) = match &o.over {
            Some(x) => (
                format!("at {} of {} values of {x}", o.holds, o.each.len()),
                // the fewest of any value: a side pinned to one value lists its passes once
                format!(" with {} passes per side", r.passes),
                format!(": {}", operations_list(o)),
            ),
            None => (
                format!("on {} of {} operations", o.holds, o.each.len()),
                String::new(),
                String::new(),
            ),
        };
        return format!(
            "holds {members} ({} fail, {} inconclusive){passes}, each checked at its level by {}{list}",
            o.fails, o.inconclusive, o.correction
        );
    }
    if let Some(t) = &r.trend {
        let c = &t.check;
        let change = c.change.ratio;
        let moves = if change >= 1.0 { "grows" } else { "shrinks" };
        return format!(
            "the gain {} of {} is ×{:.3} {} at {} = {} and ×{:.3} {} at {} = {}: it {moves} ×{:.3} {} ({}%) with {}",
            t.gain,
            r.metric,
            c.from.ratio,
            crate::table::ci_text(&c.from.ci),
            t.x,
            t.from,
            c.to.ratio,
            crate::table::ci_text(&c.to.ci),
            t.x,
            t.to,
            change,
            crate::table::ci_text(&c.change.ci),
            percent_change(change),
            passes_words(r),
        );
    }
    String::new()
}

/// `+16.3` for a change ×1.163, `-9.1` for ×0.909: the change in percent, beside the ratio
/// and its CI (which are in one unit, the ratio's).
fn percent_change(change: f64) -> String {
    format!("{:+.1}", (change - 1.0) * 100.0)
}

/// The passes behind each side: `9 passes per side`, or where the sides differ
/// `jemalloc 4 and system 6 passes`.
pub fn passes_words(c: &ClaimResult) -> String {
    let (left, right) = (c.left_trials.len(), c.right_trials.len());
    if left == right || left == 0 || right == 0 {
        format!("{} passes per side", c.passes)
    } else {
        format!(
            "{} {left} and {} {right} passes",
            c.expect.left, c.expect.right
        )
    }
}

/// A claim for a person: its text, the expectation, the verdict (emphasised), the ratio with
/// its CI, why, and the passes the noise would need.
pub fn claim_text(text: &str, c: &ClaimResult) -> Inline {
    let pct = cairn_defs::claim::percent_as_written;
    let size = if let Some(t) = c.tolerance {
        format!(" about {} ± {}", pct(c.size), pct(t))
    } else if c.size > 0.0 {
        let word = match c.expect.operator {
            Operator::Greater | Operator::Less => "by",
            _ => "within",
        };
        format!(" {word} {}", pct(c.size))
    } else {
        String::new()
    };
    let form = match (&c.operations, &c.trend) {
        (Some(o), _) => match (&o.over, o.quantifier.as_str()) {
            (Some(x), "all") => format!(" at every value of {x}"),
            (Some(x), _) => format!(" at more than half the values of {x}"),
            (None, q) => format!(" on {q} operations"),
        },
        (_, Some(t)) => format!(
            ", its gain {} from {} = {} to {}",
            t.check.direction, t.x, t.from, t.to
        ),
        _ => String::new(),
    };
    let point: Vec<String> = c.point.iter().map(|(k, v)| format!("{k}={v}")).collect();
    let at = if point.is_empty() {
        String::new()
    } else {
        format!(" at {}", point.join(", "))
    };
    let head = Inline::plain(format!("\"{text}\" ("))
        .code(format!(
            "{} {} {}",
            c.expect.left,
            c.expect.operator.symbol(),
            c.expect.right
        ))
        .text(format!(
            "{size}{form}, {}{at}{}): ",
            c.metric,
            meaning_tail(c)
        ))
        .strong(c.verdict.to_string());
    match (c.ratio, &c.ratio_ci) {
        _ if c.operations.is_some() || c.trend.is_some() => {
            let head = head.text(format!(" — {}; {}", form_words(c), c.reason));
            match &c.operations {
                // over a parameter, form_words lists each value already
                Some(o) if o.over.is_none() => head.text(format!(": {}", operations_list(o))),
                _ => head,
            }
        }
        (Some(ratio), Some(ci)) => head.text(format!(
            " — ratio {:.3} {}, {}; {}{}",
            ratio,
            crate::table::ci_text(ci),
            passes_words(c),
            c.reason,
            passes_needed_tail(c)
        )),
        _ => head.text(format!(" — {}", c.reason)),
    }
}

/// Each operation's verdict with its ratio and CI: `select_key_s holds ×0.71 [0.69, 0.74];
/// …` (over a parameter, whose values are few, each with why: `io-scheduler = none
/// inconclusive ×1.02 [0.91, 1.13] (too few passes …)`).
fn operations_list(o: &OperationsResult) -> String {
    let each: Vec<String> = o
        .each
        .iter()
        .map(|v| {
            let (member, why) = match &o.over {
                Some(x) => (format!("{x} = {}", v.operation), format!(" ({})", v.reason)),
                None => (v.operation.clone(), String::new()),
            };
            format!(
                "{} {} ×{:.3} {}{why}",
                member,
                v.verdict,
                v.ratio,
                crate::table::ci_text(&v.ratio_ci)
            )
        })
        .collect();
    each.join("; ")
}

/// `; meaning jemalloc's tps at least 5% above system's, so jemalloc is faster` (absent from a
/// `claim.json` written before claims said it).
fn meaning_tail(c: &ClaimResult) -> String {
    if c.meaning.is_empty() {
        String::new()
    } else {
        format!("; meaning {}", c.meaning)
    }
}

/// `; about N passes per variant would decide it …`, unless the reason already says how
/// many passes the noise needs (too noisy), so a number is never given twice, or the rank
/// test decided it on fewer passes than the CI alone would need.
fn passes_needed_tail(c: &ClaimResult) -> String {
    use cairn_analysis::ClaimReason::{RanksBeyond, RanksInside, TooNoisy};
    match (&c.check, &c.passes_needed) {
        (
            Some(ClaimCheck {
                reason:
                    TooNoisy {
                        needed: Some(_), ..
                    }
                    | RanksInside { .. }
                    | RanksBeyond { .. },
                ..
            }),
            _,
        )
        | (_, None) => String::new(),
        (_, Some(needed)) => format!("; {needed}"),
    }
}

/// `claim`: one line per claim for a person (Markdown), e.g. in the terminal after
/// `cairn run`.
pub fn claim_line(text: &str, c: &ClaimResult) -> String {
    markdown::inline(&claim_text(text, c))
}
