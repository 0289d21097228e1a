//! Two result sets of one plan side by side (`cairn reproduce`, `cairn compare`): each
//! trial of the plan is found in each store by its *definition key* (the same step on any
//! machine, whatever its images' ids), grouped into table cells (a point × a figure the
//! plan's analyses read), and compared — B's median against A's as a ratio with its seeded
//! bootstrap CI and the verdict of `cairn_analysis::compare` (A is the baseline); each
//! claim's verdict on both sides and whether it holds on B too. The two sides were never
//! measured together: every cell mixes campaigns (and machines, when the fingerprints
//! differ), so a cell's difference may be the machine's or the moment's, and the output
//! says so.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use cairn_analysis::{Criteria, Verdict};
use cairn_graph::{StepGraph, StepId, StepKind};
use cairn_kinds::trial_points::point_of;
use cairn_store::{Record, Store};
use serde::Serialize;
use serde_json::Value;

/// One table cell on both sides.
#[derive(Debug, Clone, Serialize)]
pub struct Cell {
    /// The trial point: `trial/<trials>/<server>[params]`.
    pub point: String,
    pub metric: String,
    pub a: Vec<f64>,
    pub b: Vec<f64>,
    pub median_a: Option<f64>,
    pub median_b: Option<f64>,
    /// median(B) / median(A) and its 95% bootstrap CI.
    pub ratio: Option<f64>,
    pub ratio_ci: Option<(f64, f64)>,
    /// `reproduced` (no difference beyond ±5%), `higher`/`lower` (significantly), or
    /// `inconclusive` — with the reason when it cannot be compared.
    pub verdict: String,
}

/// One claim on both sides.
#[derive(Debug, Clone, Serialize)]
pub struct ClaimRow {
    pub claim: String,
    pub a: Option<String>,
    pub b: Option<String>,
    /// Whether it holds on side B (the reproduction) too; `None` without B's verdict or when
    /// B's verdict is inconclusive (neither holds nor fails).
    pub holds_on_b: Option<bool>,
    /// The estimate each side's verdict rests on, as its claim computed it: a verdict is
    /// never shown without the ratio and uncertainty behind it.
    pub estimate_a: Option<ClaimEstimate>,
    pub estimate_b: Option<ClaimEstimate>,
    /// Each side's `claim.json`, as read (`reproduce`'s findings read its trials from it).
    #[serde(skip)]
    pub json_a: Option<Value>,
    #[serde(skip)]
    pub json_b: Option<Value>,
}

/// A claim's ratio of medians (left / right) with its CI, as `claim.json` holds it; absent
/// for a trend or a claim over operations, whose claim.json has no single ratio.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ClaimEstimate {
    pub ratio: f64,
    pub ci: (f64, f64),
    /// The CI's coverage (0.95, or 1 − the look's α under a sequential design).
    pub level: f64,
    /// The passes per side.
    pub passes: u64,
}

impl ClaimEstimate {
    /// Reads the estimate from a claim's `claim.json`.
    pub(crate) fn of(claim: &Value) -> Option<ClaimEstimate> {
        let ci = claim.get("ratio_ci")?;
        Some(ClaimEstimate {
            ratio: claim.get("ratio")?.as_f64()?,
            ci: (ci.get("low")?.as_f64()?, ci.get("high")?.as_f64()?),
            level: ci.get("level")?.as_f64()?,
            passes: claim.get("passes")?.as_u64()?,
        })
    }

    /// `×1.245 [1.044, 1.623] (99.3% CI, 6 passes per side)`.
    pub fn text(&self) -> String {
        format!(
            "×{:.3} [{:.3}, {:.3}] ({} CI, {} passes per side)",
            self.ratio,
            self.ci.0,
            self.ci.1,
            cairn_report::table::level_text(self.level),
            self.passes
        )
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct Comparison {
    pub study: String,
    pub fingerprints_a: Vec<Value>,
    pub fingerprints_b: Vec<Value>,
    /// What the cells mix: `campaigns`, or `machines and campaigns` when the sides'
    /// fingerprints differ (A and B are never one campaign).
    pub mixes: String,
    pub cells: Vec<Cell>,
    pub claims: Vec<ClaimRow>,
}

/// Every record of `store` by definition key, the latest first (records without one are
/// older than it and cannot be matched).
pub(crate) fn by_definition(store: &Store) -> BTreeMap<String, Vec<Record>> {
    let keys = store.record_keys().unwrap_or_default();
    let mut out: BTreeMap<String, Vec<Record>> = BTreeMap::new();
    for r in store.get_records(&keys).into_iter().flatten().flatten() {
        if r.definition_key.is_empty() {
            continue;
        }
        out.entry(r.definition_key.clone()).or_default().push(r);
    }
    // the latest first
    for v in out.values_mut() {
        v.sort_by(|x, y| y.finished.cmp(&x.finished));
    }
    out
}

/// The figures the plan's analyses read (`metric=`), else `tps`.
fn metrics(graph: &StepGraph) -> Vec<String> {
    fn walk(v: &Value, out: &mut BTreeSet<String>) {
        match v {
            Value::Object(m) => {
                for (k, x) in m {
                    if k == "metric" {
                        if let Some(s) = x.as_str() {
                            out.insert(s.to_string());
                        }
                    }
                    walk(x, out);
                }
            }
            Value::Array(a) => a.iter().for_each(|x| walk(x, out)),
            _ => {}
        }
    }
    let mut out = BTreeSet::new();
    for s in graph
        .steps
        .iter()
        .filter(|s| matches!(s.kind, StepKind::ANALYSIS | StepKind::CLAIM))
    {
        walk(&s.definition, &mut out);
    }
    if out.is_empty() {
        out.insert("tps".into());
    }
    out.into_iter().collect()
}

fn figure(r: &Record, name: &str) -> Option<f64> {
    let figs = r.extra.get("figures")?.as_object()?;
    figs.get(name)
        .or_else(|| {
            cairn_defs::figures::ALIASES
                .iter()
                .find(|(_, f)| f.name == name)
                .and_then(|(old, _)| figs.get(*old))
        })
        .and_then(Value::as_f64)
}

fn median(v: &[f64]) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let n = s.len();
    Some(if n % 2 == 1 {
        s[n / 2]
    } else {
        (s[n / 2 - 1] + s[n / 2]) / 2.0
    })
}

/// Which machine class's records a side of a comparison reads, by trial step.
#[derive(Debug, Clone, Default)]
pub enum SideClasses {
    /// The latest record of each trial, whatever machine made it.
    #[default]
    Latest,
    /// Only records made on this class (`--measured-on-a`/`-b`, as `cairn machine --json`
    /// prints a class).
    One(Value),
    /// Each measured step's record from its own class: a study measured in parts, each block
    /// read from the machine that measured it whole (`measured_on::published_classes`).
    /// Steps it does not name read the latest record.
    Each(HashMap<StepId, Value>),
}

impl SideClasses {
    /// The class step `id`'s record is read from, if one is asked.
    fn of(&self, id: StepId) -> Option<&Value> {
        match self {
            SideClasses::Latest => None,
            SideClasses::One(fp) => Some(fp),
            SideClasses::Each(by_step) => by_step.get(&id),
        }
    }

    /// The latest of `records` (of one definition, latest first) this side reads for step
    /// `id`.
    fn pick(&self, id: StepId, records: Option<&Vec<Record>>) -> Option<Record> {
        let records = records?;
        match self.of(id) {
            None => records.first(),
            Some(want) => records
                .iter()
                .find(|r| r.fingerprint.as_ref() == Some(want)),
        }
        .cloned()
    }
}

/// Compares store `a` (the baseline: published) with store `b` for `graph`'s study, each
/// side's trials read from the classes it names.
pub fn compare(
    graph: &StepGraph,
    a: &Store,
    b: &Store,
    classes_a: &SideClasses,
    classes_b: &SideClasses,
) -> Comparison {
    let ra = by_definition(a);
    let rb = by_definition(b);
    let mut samples: BTreeMap<(String, String), (Vec<f64>, Vec<f64>)> = BTreeMap::new();
    let mut fps_a = BTreeSet::new();
    let mut fps_b = BTreeSet::new();
    let metrics = metrics(graph);
    for step in graph.steps.iter().filter(|s| s.kind == StepKind::TRIAL) {
        let point = point_of(&step.address).to_string();
        let x = classes_a.pick(step.id, ra.get(&step.definition_key));
        let y = classes_b.pick(step.id, rb.get(&step.definition_key));
        for (r, fps) in [(&x, &mut fps_a), (&y, &mut fps_b)] {
            if let Some(fp) = r.as_ref().and_then(|r| r.fingerprint.as_ref()) {
                fps.insert(fp.to_string());
            }
        }
        for m in &metrics {
            let e = samples.entry((point.clone(), m.clone())).or_default();
            if let Some(v) = x.as_ref().and_then(|r| figure(r, m)) {
                e.0.push(v);
            }
            if let Some(v) = y.as_ref().and_then(|r| figure(r, m)) {
                e.1.push(v);
            }
        }
    }
    let mut cells = Vec::new();
    for ((point, metric), (sa, sb)) in samples {
        if sa.is_empty() && sb.is_empty() {
            continue;
        }
        let direction = cairn_defs::figures::lookup(&metric)
            .map_or(cairn_defs::figures::Direction::Neither, |f| f.direction);
        let (ratio, ratio_ci, verdict) =
            match cairn_analysis::compare(&sa, &sb, direction, &Criteria::default()) {
                Ok(c) => {
                    let v = match c.verdict {
                        Verdict::NoSignificantDifference => "the same within ±5%".to_string(),
                        Verdict::Inconclusive => {
                            format!("inconclusive ({})", reason_text(&c.reason))
                        }
                        Verdict::Faster => "better on B".into(),
                        Verdict::Slower => "worse on B".into(),
                        Verdict::Higher => "higher on B".into(),
                        Verdict::Lower => "lower on B".into(),
                    };
                    (
                        Some(c.ratio.ratio),
                        Some((c.ratio.ci.low, c.ratio.ci.high)),
                        v,
                    )
                }
                Err(e) => (None, None, format!("cannot compare: {e}")),
            };
        cells.push(Cell {
            point,
            metric,
            median_a: median(&sa),
            median_b: median(&sb),
            a: sa,
            b: sb,
            ratio,
            ratio_ci,
            verdict,
        });
    }
    let mut claims = Vec::new();
    for step in graph.steps.iter().filter(|s| s.kind == StepKind::CLAIM) {
        let claim_json = |m: &BTreeMap<String, Vec<Record>>, store: &Store| {
            latest_output::<Value>(graph, step, store, m, cairn_kinds::claim_step::CLAIM_JSON)
        };
        let (ja, jb) = (claim_json(&ra, a), claim_json(&rb, b));
        let verdict = |j: &Option<Value>| j.as_ref()?.get("verdict")?.as_str().map(String::from);
        let (va, vb) = (verdict(&ja), verdict(&jb));
        claims.push(ClaimRow {
            claim: step.name.clone(),
            // an inconclusive claim neither holds nor fails: it has no answer here
            holds_on_b: match vb.as_deref() {
                Some("holds") => Some(true),
                Some("fails") => Some(false),
                _ => None,
            },
            a: va,
            b: vb,
            estimate_a: ja.as_ref().and_then(ClaimEstimate::of),
            estimate_b: jb.as_ref().and_then(ClaimEstimate::of),
            json_a: ja,
            json_b: jb,
        });
    }
    let mixes = if fps_a == fps_b {
        "campaigns"
    } else {
        "machines and campaigns"
    };
    Comparison {
        study: graph.study.clone(),
        mixes: mixes.to_string(),
        fingerprints_a: fps_a
            .into_iter()
            .filter_map(|s| serde_json::from_str(&s).ok())
            .collect(),
        fingerprints_b: fps_b
            .into_iter()
            .filter_map(|s| serde_json::from_str(&s).ok())
            .collect(),
        cells,
        claims,
    }
}

fn reason_text(r: &cairn_analysis::Reason) -> String {
    serde_json::to_value(r)
        .ok()
        .and_then(|v| {
            v.get("reason")
                .and_then(Value::as_str)
                .map(|s| s.replace('_', " "))
        })
        .unwrap_or_else(|| "see comparison.json".into())
}

/// The machines of each side, then the cells' table: the point, the figure, each side's
/// median and passes (sides labelled `a` and `b`), the ratio b/a with its CI under
/// `ratio_heading`, and the verdict as `verdict` words it.
pub(crate) fn cells_markdown(
    c: &Comparison,
    a: &str,
    b: &str,
    ratio_heading: &str,
    verdict: &dyn Fn(&str) -> String,
) -> String {
    let num = |v: Option<f64>| v.map_or("–".to_string(), |x| format!("{x:.2}"));
    let mut s = String::new();
    for (label, fps) in [(a, &c.fingerprints_a), (b, &c.fingerprints_b)] {
        for f in fps {
            s += &format!("- {label} on: {}\n", cairn_report::machine::machine_line(f));
        }
    }
    s += &format!(
        "\n| point | figure | {a} (median, n) | {b} (median, n) | {ratio_heading} | verdict |\n|---|---|---|---|---|---|\n"
    );
    for cell in &c.cells {
        let ratio = match (cell.ratio, cell.ratio_ci) {
            (Some(r), Some((lo, hi))) => format!("{r:.3} [{lo:.3}, {hi:.3}]"),
            _ => "–".into(),
        };
        s += &format!(
            "| {} | {} | {} ({}) | {} ({}) | {} | {} |\n",
            cell.point,
            cell.metric,
            num(cell.median_a),
            cell.a.len(),
            num(cell.median_b),
            cell.b.len(),
            ratio,
            verdict(&cell.verdict)
        );
    }
    s
}

/// The JSON output `name` of the latest record of `step`'s definition in `store`
/// (`records`: the store's records by definition key).
pub(crate) fn latest_output<T: serde::de::DeserializeOwned>(
    graph: &StepGraph,
    step: &cairn_graph::Step,
    store: &Store,
    records: &BTreeMap<String, Vec<Record>>,
    name: &str,
) -> Option<T> {
    let record = latest_record(graph, step, records)?;
    let bytes = store.read_blob(record.outputs.get(name)?).ok()?;
    serde_json::from_slice(&bytes).ok()
}

/// The latest record of `step`'s definition: under this cairn's definition key, or else the
/// latest one another version of its kind's code made of the same definition and inputs (a
/// study published by an earlier cairn: its claims are claim/10 where this cairn's are
/// claim/11) — its definition key must be the step's with that code, so it is the same step.
fn latest_record<'r>(
    graph: &StepGraph,
    step: &cairn_graph::Step,
    records: &'r BTreeMap<String, Vec<Record>>,
) -> Option<&'r Record> {
    if let Some(r) = records.get(&step.definition_key).and_then(|v| v.first()) {
        return Some(r);
    }
    records
        .values()
        .flatten()
        .filter(|r| r.address == step.address && r.kind == step.kind.as_str())
        .filter(|r| {
            crate::bundle::chain::another_version_of(r, &step.code)
                .is_some_and(|code| definition_key_with_code(graph, step, code) == r.definition_key)
        })
        .max_by(|x, y| x.finished.cmp(&y.finished))
}

/// The definition key `step` has in `graph` when its kind's code is `code` (its inputs'
/// keys as they are).
fn definition_key_with_code(graph: &StepGraph, step: &cairn_graph::Step, code: &str) -> String {
    let inputs: Vec<&str> = step
        .inputs
        .iter()
        .map(|i| graph.steps[i.from].definition_key.as_str())
        .collect();
    let mut with_code = step.clone();
    with_code.code = code.to_string();
    cairn_graph::definition_key(&with_code, &inputs)
}

/// One line per claim: each side's verdict with the estimate it rests on, then whether it
/// holds on side `b` in `on_b`'s words (`holds on B too`, `holds here too`).
pub(crate) fn claims_markdown(
    claims: &[ClaimRow],
    a: &str,
    b: &str,
    on_b: &dyn Fn(&str) -> String,
) -> String {
    let side = |verdict: &Option<String>, estimate: &Option<ClaimEstimate>| {
        let verdict = verdict.as_deref().unwrap_or("(no verdict)");
        match estimate {
            Some(e) => format!("**{verdict}**, {}", e.text()),
            None => format!("**{verdict}**"),
        }
    };
    let mut s = String::new();
    for cl in claims {
        let outcome = match cl.holds_on_b {
            Some(true) => on_b("holds") + " too",
            Some(false) => on_b("does not hold"),
            None if cl.b.is_some() => on_b("undecided") + ": neither holds nor fails",
            None => on_b("no verdict"),
        };
        s += &format!(
            "- \"{}\": {a} {}; {b} {} — {outcome}\n",
            cl.claim,
            side(&cl.a, &cl.estimate_a),
            side(&cl.b, &cl.estimate_b)
        );
    }
    s
}

/// The comparison as a Markdown report.
pub fn markdown(c: &Comparison, a: &str, b: &str) -> String {
    let mut s = format!("# {}: {a} vs {b}\n\n", c.study);
    s += &cells_markdown(c, a, b, &format!("ratio {b}/{a} [95% CI]"), &|v| {
        v.to_string()
    });
    if !c.claims.is_empty() {
        s += "\n## Claims\n\n";
        s += &claims_markdown(&c.claims, a, b, &|words| format!("{words} on {b}"));
    }
    s += &format!(
        "\n{a} and {b} were not measured together: each cell mixes {}, so a difference may be the machine's or the moment's, not the variants'. A cell is *the same within ±5%* when the whole 95% CI of the ratio of medians lies within ±5%; with few passes the rank test cannot decide and the cell is inconclusive (the rules of cairn-analysis).\n",
        c.mixes
    );
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A record of `step` as cairn with `code` for its kind made it, `finished` then.
    fn made_with(
        graph: &StepGraph,
        step: &cairn_graph::Step,
        code: &str,
        finished: &str,
    ) -> Record {
        let mut r = Record::new(
            format!("{code}{finished}"),
            "claim",
            "older-code",
            &step.address,
        );
        r.key_json = serde_json::json!({ "code": code });
        r.definition_key = definition_key_with_code(graph, step, code);
        r.finished = finished.to_string();
        r
    }

    #[test]
    fn a_published_record_of_another_version_of_its_kinds_code_is_read_as_that_step() {
        let (graph, step) = crate::bundle::chain::tests::plan_and_claim();
        let by_key = |records: Vec<Record>| {
            let mut out: BTreeMap<String, Vec<Record>> = BTreeMap::new();
            for r in records {
                out.entry(r.definition_key.clone()).or_default().push(r);
            }
            out
        };
        // an earlier claim code made it: found, the latest of two
        let older = by_key(vec![
            made_with(&graph, &step, "claim/1", "2026-01-01"),
            made_with(&graph, &step, "claim/2", "2026-02-01"),
        ]);
        let found = latest_record(&graph, &step, &older).expect("found");
        assert_eq!(found.key_json["code"], "claim/2");
        // this cairn's own record comes first
        let mut both = older.clone();
        both.extend(by_key(vec![made_with(
            &graph,
            &step,
            &step.code,
            "2025-01-01",
        )]));
        let found = latest_record(&graph, &step, &both).expect("found");
        assert_eq!(found.key_json["code"], step.code.as_str());
        // a record whose key is not the step's with its code, or of another kind's code: no
        let mut edited = made_with(&graph, &step, "claim/1", "2026-01-01");
        edited.key_json["code"] = "claim/3".into();
        assert!(latest_record(&graph, &step, &by_key(vec![edited])).is_none());
        let other_kind = by_key(vec![made_with(&graph, &step, "report/1", "2026-01-01")]);
        assert!(latest_record(&graph, &step, &other_kind).is_none());
    }

    #[test]
    fn a_claims_verdict_comes_with_the_estimate_it_rests_on() {
        let published = serde_json::json!({
            "verdict": "inconclusive",
            "ratio": 1.2449,
            "ratio_ci": {"low": 1.0441, "high": 1.6234, "level": 0.993},
            "passes": 6,
        });
        // a trend has no single ratio: its verdict stands alone
        let trend = serde_json::json!({"verdict": "fails", "passes": 4});
        let row = ClaimRow {
            claim: "the second CPU makes it at least 10% faster".into(),
            a: Some("inconclusive".into()),
            b: Some("fails".into()),
            holds_on_b: Some(false),
            estimate_a: ClaimEstimate::of(&published),
            estimate_b: ClaimEstimate::of(&trend),
            json_a: Some(published),
            json_b: Some(trend),
        };
        assert_eq!(
            claims_markdown(&[row], "published", "here", &|w| format!("{w} here")),
            "- \"the second CPU makes it at least 10% faster\": published **inconclusive**, \
             ×1.245 [1.044, 1.623] (99.3% CI, 6 passes per side); here **fails** — does not \
             hold here\n"
        );
    }
}
