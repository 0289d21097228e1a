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
}

impl Operator {
    pub fn symbol(self) -> &'static str {
        match self {
            Operator::Greater => ">",
            Operator::Less => "<",
            Operator::AtLeast => ">=",
            Operator::AtMost => "<=",
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
    /// median(left) / median(right) and its 95% bootstrap CI.
    pub ratio: f64,
    pub ratio_ci: Interval,
    /// The passes per side, and how many the observed noise would need for the claim's size.
    pub passes: usize,
    pub passes_needed: PassesNeeded,
    /// The check as cairn-analysis made it (in the figure's better direction); for `>=` and
    /// `<=` it is the opposite claim's, whose verdict this one turns around.
    pub check: ClaimCheck,
    pub opposite_checked: bool,
    /// The trial records behind each side.
    pub left_trials: Vec<String>,
    pub right_trials: Vec<String>,
}

/// One line for a person: `holds: ratio 1.103 [1.071, 1.140] with 3 passes per side; the
/// whole CI …`.
pub fn summary_line(r: &ClaimResult) -> String {
    format!(
        "{}: ratio {:.3} [{:.3}, {:.3}] with {}; {}",
        r.verdict,
        r.ratio,
        r.ratio_ci.low,
        r.ratio_ci.high,
        passes_words(r),
        r.reason
    )
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
    let size = if let Some(t) = c.tolerance {
        format!(" about {}% ± {}%", c.size * 100.0, t * 100.0)
    } else if c.size > 0.0 {
        let word = match c.expect.operator {
            Operator::Greater | Operator::Less => "by",
            _ => "within",
        };
        format!(" {word} {}%", c.size * 100.0)
    } else {
        String::new()
    };
    let point: Vec<String> = c.point.iter().map(|(k, v)| format!("{k}={v}")).collect();
    let at = if point.is_empty() {
        String::new()
    } else {
        format!(" at {}", point.join(", "))
    };
    Inline::plain(format!("\"{text}\" ("))
        .code(format!(
            "{} {} {}",
            c.expect.left,
            c.expect.operator.symbol(),
            c.expect.right
        ))
        .text(format!("{size}, {}{at}{}): ", c.metric, meaning_tail(c)))
        .strong(c.verdict.to_string())
        .text(format!(
            " — ratio {:.3} {}, {}; {}{}",
            c.ratio,
            crate::table::ci_text(&c.ratio_ci),
            passes_words(c),
            c.reason,
            passes_needed_tail(c)
        ))
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
/// many passes the noise needs (too noisy), so a number is never given twice.
fn passes_needed_tail(c: &ClaimResult) -> String {
    match c.check.reason {
        cairn_analysis::ClaimReason::TooNoisy {
            needed: Some(_), ..
        } => String::new(),
        _ => format!("; {}", c.passes_needed),
    }
}

/// `claim`: one line per claim for a person (Markdown), e.g. in the terminal after
/// `cairn run`.
pub fn claim_line(text: &str, c: &ClaimResult) -> String {
    markdown::inline(&claim_text(text, c))
}
