//! What a reproduction found (`cairn reproduce`): whether the published study's *effects*
//! hold here — each table's variants against their baseline, and each claim's two cells
//! where no table compares them (a server along a factor), published vs reproduced, by
//! `cairn_analysis::replicate` — then the claims' verdicts on both sides, then the absolute
//! cells as context (absolute figures differ between machines as a matter of course), with
//! a summary line first; as Markdown and as JSON in the same order.

use std::collections::BTreeMap;

use cairn_analysis::{
    replicate, Agreement, BootstrapSettings, Comparison as CellComparison, Criteria, Effect,
    Replication,
};
use cairn_graph::{StepGraph, StepKind};
use cairn_kinds::analysis_step::{samples_seed, TABLE_JSON};
use cairn_kinds::trial_points::point_of_record;
use cairn_report::table::{Cell as TableCell, Table};
use cairn_store::{Record, Store};
use serde::Serialize;
use serde_json::Value;

use crate::comparison::{by_definition, ClaimEstimate, ClaimRow, Comparison, SideClasses};

/// One side's effect as its report computed it: the ratio to the baseline with its CI.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SideEffect {
    pub ratio: f64,
    pub ci: (f64, f64),
    /// The CI's coverage as its report computed it: 0.95, or under a sequential design
    /// 1 − the look's α.
    pub level: f64,
    /// The passes behind it: the baseline's and the variant's (or the pairs, twice).
    pub passes: (usize, usize),
    /// The report's verdict on the variant against the baseline.
    pub verdict: String,
}

/// One variant's effect at one point, published vs reproduced.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EffectRow {
    /// The analysis (table) it comes from, and its figure.
    pub analysis: String,
    pub metric: String,
    pub variant: String,
    pub baseline: String,
    /// The cell's other coordinate: `threads = 4`.
    pub at: String,
    pub published: Option<SideEffect>,
    pub reproduced: Option<SideEffect>,
    /// reproduced effect / published effect with its 95% CI from both campaigns' passes.
    pub ratio: Option<f64>,
    pub ratio_ci: Option<(f64, f64)>,
    pub verdict: Agreement,
    /// For `differs`: whether the variant's ratio to its baseline is `higher` or `lower` here.
    pub direction: Option<String>,
    pub reason: String,
}

impl EffectRow {
    /// A row of the published side only, undecided until [`Self::replicated`]; `names` are
    /// the analysis, metric, variant, baseline and place.
    fn published(names: [&str; 5], published: SideEffect) -> EffectRow {
        let [analysis, metric, variant, baseline, at] = names.map(String::from);
        EffectRow {
            analysis,
            metric,
            variant,
            baseline,
            at,
            published: Some(published),
            reproduced: None,
            ratio: None,
            ratio_ci: None,
            verdict: Agreement::Undecided,
            direction: None,
            reason: String::new(),
        }
    }

    /// Takes what `replicate` found (or why it could not compare) into the row.
    fn replicated(&mut self, replicated: Result<Replication, String>) {
        match replicated {
            Ok(r) => {
                self.ratio = Some(r.ratio.ratio);
                self.ratio_ci = Some((r.ratio.ci.low, r.ratio.ci.high));
                self.verdict = r.agreement;
                if r.agreement == Agreement::Differs {
                    let higher = r.ratio.ci.low > 1.0;
                    self.direction = Some(if higher { "higher" } else { "lower" }.into());
                }
                self.reason = r.reason.to_string();
            }
            Err(e) => self.reason = format!("cannot compare: {e}"),
        }
    }
}

/// How many effects and claims agree: the summary line's numbers.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Summary {
    pub line: String,
    pub effects: usize,
    pub consistent: usize,
    pub differ: usize,
    pub undecided: usize,
    pub claims: usize,
    /// Claims with a decided verdict here equal to the published one.
    pub claims_same: usize,
    /// Claims decided here the other way (or decided here where the published was not).
    pub claims_other: usize,
    pub claims_undecided: usize,
}

/// The absolute cells, as context.
#[derive(Debug, Clone, Serialize)]
pub struct Absolute {
    pub note: String,
    #[serde(flatten)]
    pub comparison: Comparison,
}

/// The whole report, in its reading order.
#[derive(Debug, Clone, Serialize)]
pub struct Findings {
    pub study: String,
    pub summary: Summary,
    pub effects: Vec<EffectRow>,
    pub claims: Vec<ClaimRow>,
    pub absolute: Absolute,
}

/// Each analysis's table in `store` (the latest record of its definition), by name.
fn tables(
    graph: &StepGraph,
    store: &Store,
    records: &BTreeMap<String, Vec<Record>>,
) -> BTreeMap<String, Table> {
    let mut out = BTreeMap::new();
    for step in graph.steps.iter().filter(|s| s.kind == StepKind::ANALYSIS) {
        if let Some(t) =
            crate::comparison::latest_output::<Table>(graph, step, store, records, TABLE_JSON)
        {
            // a faceted table's findings are each facet's: cells of one place per facet
            for (facet, part) in t.faceted() {
                let name = match facet {
                    Some(f) => format!("{}, {f}", step.name),
                    None => step.name.clone(),
                };
                out.insert(name, part);
            }
        }
    }
    out
}

/// The baseline's cell at `cell`'s place in `table`.
fn baseline_cell<'t>(table: &'t Table, baseline: &str, cell: &TableCell) -> Option<&'t TableCell> {
    if table.rows.name == "server" {
        table.cell(baseline, &cell.column)
    } else {
        table.cell(&cell.row, baseline)
    }
}

/// `threads = 4`: the cell's coordinate other than the server.
fn place(table: &Table, cell: &TableCell) -> String {
    if table.rows.name == "server" {
        format!("{} = {}", table.columns.name, cell.column)
    } else {
        format!("{} = {}", table.rows.name, cell.row)
    }
}

fn side_effect(cmp: &CellComparison) -> SideEffect {
    SideEffect {
        ratio: cmp.ratio.ratio,
        ci: (cmp.ratio.ci.low, cmp.ratio.ci.high),
        level: cmp.ratio.ci.level,
        passes: (cmp.baseline.n, cmp.variant.n),
        verdict: cmp.verdict.to_string(),
    }
}

/// A cell's effect as `replicate` reads it: the baseline's and the variant's passes, or,
/// for a paired table, the pairs (both cells' passes in pass order, so position is block).
fn effect_samples(
    cmp: &CellComparison,
    base: &TableCell,
    cell: &TableCell,
) -> Result<EffectSamples, String> {
    if cmp.paired.is_none() {
        return Ok(EffectSamples::Unpaired(
            base.values.clone(),
            cell.values.clone(),
        ));
    }
    if base.values.len() != cell.values.len() {
        return Err(format!(
            "a paired cell whose sides have different passes ({} and {}) cannot be re-paired from the table",
            base.values.len(),
            cell.values.len()
        ));
    }
    Ok(EffectSamples::Paired(
        base.values
            .iter()
            .copied()
            .zip(cell.values.iter().copied())
            .collect(),
    ))
}

enum EffectSamples {
    Unpaired(Vec<f64>, Vec<f64>),
    Paired(Vec<(f64, f64)>),
}

impl EffectSamples {
    fn effect(&self) -> Effect<'_> {
        match self {
            EffectSamples::Unpaired(baseline, variant) => Effect::Unpaired { baseline, variant },
            EffectSamples::Paired(pairs) => Effect::Paired(pairs),
        }
    }
}

/// The effects of every table with a baseline: each of the published table's compared
/// cells against the same cell of the reproduced table.
fn effects(published: &BTreeMap<String, Table>, here: &BTreeMap<String, Table>) -> Vec<EffectRow> {
    let mut rows = Vec::new();
    for (name, table) in published {
        let Some(baseline) = &table.baseline else {
            continue;
        };
        let there = here.get(name);
        for cell in &table.cells {
            let Some(cmp_a) = &cell.comparison else {
                continue;
            };
            let mut row = EffectRow::published(
                [
                    name,
                    &table.metric,
                    &cell.server,
                    baseline,
                    &place(table, cell),
                ],
                side_effect(cmp_a),
            );
            let cell_b = there.and_then(|t| t.cell(&cell.row, &cell.column));
            let cmp_b = cell_b.and_then(|c| c.comparison.as_ref());
            let (Some(t_b), Some(cell_b), Some(cmp_b)) = (there, cell_b, cmp_b) else {
                row.reason = "not reproduced: the reproduced report has no such comparison".into();
                rows.push(row);
                continue;
            };
            row.reproduced = Some(side_effect(cmp_b));
            let samples = baseline_cell(table, baseline, cell)
                .zip(baseline_cell(t_b, baseline, cell_b))
                .ok_or_else(|| "a baseline cell is missing".to_string())
                .and_then(|(base_a, base_b)| {
                    Ok((
                        effect_samples(cmp_a, base_a, cell)?,
                        effect_samples(cmp_b, base_b, cell_b)?,
                    ))
                });
            // the published cell's seed: the same reproduction compares to the same bits
            let criteria = Criteria {
                bootstrap: cmp_a.criteria.bootstrap,
                ..Criteria::default()
            };
            let replicated = samples.and_then(|(a, b)| {
                replicate(a.effect(), b.effect(), &criteria).map_err(|e| e.to_string())
            });
            row.replicated(replicated);
            rows.push(row);
        }
    }
    rows
}

fn summary(effects: &[EffectRow], claims: &[ClaimRow]) -> Summary {
    let count = |a: Agreement| effects.iter().filter(|e| e.verdict == a).count();
    let decided = |v: &Option<String>| matches!(v.as_deref(), Some("holds" | "fails"));
    let claims_undecided = claims.iter().filter(|c| !decided(&c.b)).count();
    let claims_same = claims
        .iter()
        .filter(|c| decided(&c.b) && c.a == c.b)
        .count();
    let mut s = Summary {
        line: String::new(),
        effects: effects.len(),
        consistent: count(Agreement::Consistent),
        differ: count(Agreement::Differs),
        undecided: count(Agreement::Undecided),
        claims: claims.len(),
        claims_same,
        claims_other: claims.len() - claims_same - claims_undecided,
        claims_undecided,
    };
    s.line = format!(
        "{} of {} effects consistent, {} differ, {} undecided; claims: {} of {} with the published verdict here, {} with another, {} undecided here",
        s.consistent,
        s.effects,
        s.differ,
        s.undecided,
        s.claims_same,
        s.claims,
        s.claims_other,
        s.claims_undecided
    );
    s
}

/// A claim's two sides as `replicate` reads them: the right side's values of its figure
/// (the baseline) and the left side's (the variant), in pass order, from the trials its
/// `claim.json` names. `None` for a claim without one ratio (a trend, operations).
fn claim_samples(store: &Store, claim: &Value) -> Option<(Vec<f64>, Vec<f64>)> {
    let figure = cairn_defs::figures::lookup(claim.get("metric")?.as_str()?)?;
    let side = |name: &str| -> Option<Vec<f64>> {
        claim
            .get(name)?
            .as_array()?
            .iter()
            .map(|key| {
                let record = store.get_record(key.as_str()?).ok()??;
                point_of_record(&record, &record.address)
                    .figures
                    .get(figure)
            })
            .collect()
    };
    let (right, left) = (side("right_trials")?, side("left_trials")?);
    (!right.is_empty() && !left.is_empty()).then_some((right, left))
}

/// The trial keys a claim compares, both sides, sorted: what tells whether a table's
/// comparison already holds its effect.
fn claim_trials(claim: &Value) -> Vec<String> {
    let mut keys: Vec<String> = ["left_trials", "right_trials"]
        .iter()
        .filter_map(|side| claim.get(*side)?.as_array().cloned())
        .flatten()
        .filter_map(|k| k.as_str().map(String::from))
        .collect();
    keys.sort();
    keys
}

/// The effects the claims compare that no table does (a claim between two cells of one
/// server along a factor, `a[cpus=2] > a[cpus=1]`): each claim's ratio of medians,
/// published vs here, by the same rule as the tables' effects. `covered` holds the trial
/// keys (sorted) of every table effect already compared.
fn claim_effects(
    claims: &[ClaimRow],
    published: &Store,
    here: &Store,
    covered: &[Vec<String>],
) -> Vec<EffectRow> {
    let mut rows = Vec::new();
    for claim in claims {
        let Some(json_a) = &claim.json_a else {
            continue;
        };
        let Some((base_a, var_a)) = claim_samples(published, json_a) else {
            continue;
        };
        if covered.contains(&claim_trials(json_a)) {
            continue;
        }
        let name = &claim.claim;
        let text = |key: &str| {
            json_a["expect"][key]
                .as_str()
                .unwrap_or_default()
                .to_string()
        };
        let at: Vec<String> = json_a["point"]
            .as_object()
            .map(|m| {
                m.iter()
                    .map(|(k, v)| {
                        format!("{k} = {}", v.as_str().map_or(v.to_string(), String::from))
                    })
                    .collect()
            })
            .unwrap_or_default();
        // the ratio and CI as the claim computed them (its `ClaimEstimate`), the passes of
        // each side
        let side = |estimate: &Option<ClaimEstimate>,
                    verdict: &Option<String>,
                    base: &[f64],
                    var: &[f64]| {
            estimate.as_ref().map(|e| SideEffect {
                ratio: e.ratio,
                ci: e.ci,
                level: e.level,
                passes: (base.len(), var.len()),
                verdict: format!("claim {}", verdict.as_deref().unwrap_or("?")),
            })
        };
        let Some(published_side) = side(&claim.estimate_a, &claim.a, &base_a, &var_a) else {
            continue;
        };
        let at = if at.is_empty() {
            "–".into()
        } else {
            at.join(", ")
        };
        let mut row = EffectRow::published(
            [
                &format!("claim \"{name}\""),
                json_a["metric"].as_str().unwrap_or_default(),
                &text("left"),
                &text("right"),
                &at,
            ],
            published_side,
        );
        let Some((base_b, var_b)) = claim.json_b.as_ref().and_then(|j| claim_samples(here, j))
        else {
            row.reason = "not reproduced: the reproduction has no such claim".into();
            rows.push(row);
            continue;
        };
        row.reproduced = side(&claim.estimate_b, &claim.b, &base_b, &var_b);
        let criteria = Criteria {
            bootstrap: BootstrapSettings {
                seed: samples_seed(&base_a, &var_a),
                ..BootstrapSettings::default()
            },
            ..Criteria::default()
        };
        let published_effect = Effect::Unpaired {
            baseline: &base_a,
            variant: &var_a,
        };
        let reproduced_effect = Effect::Unpaired {
            baseline: &base_b,
            variant: &var_b,
        };
        row.replicated(
            replicate(published_effect, reproduced_effect, &criteria).map_err(|e| e.to_string()),
        );
        rows.push(row);
    }
    rows
}

/// The trial keys (sorted) of each compared table cell with its baseline's.
fn table_effect_trials(tables: &BTreeMap<String, Table>) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    for table in tables.values() {
        let Some(baseline) = &table.baseline else {
            continue;
        };
        for cell in table.cells.iter().filter(|c| c.comparison.is_some()) {
            if let Some(base) = baseline_cell(table, baseline, cell) {
                let mut keys: Vec<String> =
                    cell.trials.iter().chain(&base.trials).cloned().collect();
                keys.sort();
                out.push(keys);
            }
        }
    }
    out
}

/// Reads both stores for `graph`'s study and compares what they found.
pub fn findings(graph: &StepGraph, published: &Store, here: &Store) -> Findings {
    let ra = by_definition(published);
    let rb = by_definition(here);
    let tables_a = tables(graph, published, &ra);
    let mut effects = effects(&tables_a, &tables(graph, here, &rb));
    // a study published in parts: each block's published cells from the machine that
    // measured it, as its report read them (the same trials may have been measured on two)
    let published_classes = crate::measured_on::published_classes(graph, published)
        .map_or(SideClasses::Latest, SideClasses::Each);
    let comparison = crate::comparison::compare(
        graph,
        published,
        here,
        &published_classes,
        &SideClasses::Latest,
    );
    effects.extend(claim_effects(
        &comparison.claims,
        published,
        here,
        &table_effect_trials(&tables_a),
    ));
    let note = format!(
        "Absolute throughput differs between machines as a matter of course: the published cells and these were measured apart, so each cell mixes {}, and a difference in it may be the machine's or the moment's, no finding about the study.",
        comparison.mixes
    );
    Findings {
        study: graph.study.clone(),
        summary: summary(&effects, &comparison.claims),
        effects,
        claims: comparison.claims.clone(),
        absolute: Absolute { note, comparison },
    }
}

fn ratio_text(r: f64, ci: (f64, f64)) -> String {
    format!("×{r:.3} [{:.3}, {:.3}]", ci.0, ci.1)
}

fn side_text(s: &Option<SideEffect>) -> String {
    match s {
        Some(s) => format!(
            "×{:.3} {} ({} + {} passes; report: {})",
            s.ratio,
            cairn_report::table::ci_text(&cairn_analysis::Interval {
                low: s.ci.0,
                high: s.ci.1,
                level: s.level,
            }),
            s.passes.0,
            s.passes.1,
            s.verdict
        ),
        None => "–".into(),
    }
}

/// The findings as Markdown: the summary line, the effects, the claims, the absolute cells.
pub fn markdown(f: &Findings) -> String {
    let mut s = format!("# {}: published vs reproduced here\n\n", f.study);
    s += &format!("**{}.**\n\n", f.summary.line);
    s += "## Effects: each variant's ratio to its baseline, published vs here\n\n";
    s += "The tables' comparisons, then the ratio each claim compares where no table does (a server against itself along a factor).\n\n";
    s += "Each side's ratio is measured within one campaign (the variant beside its baseline), so it compares across machines where absolute figures do not. The verdict reads the 95% CI of (ratio here / ratio published), bootstrapped from the passes of both campaigns: *consistent* when it lies within ±5%, *differs* when it excludes 1, *undecided* when the passes are too few for the comparison's test (4 per side, 6 pairs paired) or it holds 1 but reaches beyond ±5% (the rule of `cairn_analysis::replication`).\n\n";
    if f.effects.is_empty() {
        s += "No table of the study compares with a baseline and no claim compares two cells: there are no effects to compare.\n";
    } else {
        s += "| table | variant vs baseline | at | published [CI] | here [CI] | here / published [95% CI] | verdict |\n|---|---|---|---|---|---|---|\n";
        for e in &f.effects {
            let both = match (e.ratio, e.ratio_ci) {
                (Some(r), Some(ci)) => ratio_text(r, ci),
                _ => "–".into(),
            };
            let verdict = match &e.direction {
                Some(d) => format!("**{}**: {d} here — {}", e.verdict, e.reason),
                None => format!("**{}** — {}", e.verdict, e.reason),
            };
            s += &format!(
                "| {} (`{}`) | {} vs {} | {} | {} | {} | {} | {} |\n",
                e.analysis,
                e.metric,
                e.variant,
                e.baseline,
                e.at,
                side_text(&e.published),
                side_text(&e.reproduced),
                both,
                verdict
            );
        }
    }
    if !f.claims.is_empty() {
        s += "\n## Claims: the published verdict vs here\n\n";
        s += "Each verdict with the claim's ratio of medians and its CI, as that side's campaign measured it.\n\n";
        s += &crate::comparison::claims_markdown(&f.claims, "published", "here", &|words| {
            format!("{words} here")
        });
    }
    let c = &f.absolute.comparison;
    s += "\n## Absolute cells, as context\n\n";
    s += &f.absolute.note;
    s += "\n\n";
    // the comparison names the sides A and B; here B is this machine
    s += &crate::comparison::cells_markdown(
        c,
        "published",
        "here",
        "here / published [95% CI]",
        &|v| v.replace(" on B", " here"),
    );
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn claim(a: Option<&str>, b: Option<&str>) -> ClaimRow {
        ClaimRow {
            claim: "c".into(),
            a: a.map(String::from),
            b: b.map(String::from),
            holds_on_b: match b {
                Some("holds") => Some(true),
                Some("fails") => Some(false),
                _ => None,
            },
            estimate_a: None,
            estimate_b: None,
            json_a: None,
            json_b: None,
        }
    }

    fn effect(verdict: Agreement) -> EffectRow {
        EffectRow {
            analysis: "tps".into(),
            metric: "tps".into(),
            variant: "jemalloc".into(),
            baseline: "system".into(),
            at: "threads = 2".into(),
            published: None,
            reproduced: None,
            ratio: None,
            ratio_ci: None,
            verdict,
            direction: None,
            reason: String::new(),
        }
    }

    /// A servers × threads table of `tps`, `system` the baseline, at one thread count.
    fn table(system: &[f64], jemalloc: &[f64]) -> Table {
        let cell = |server: &str, values: &[f64]| TableCell {
            row: server.into(),
            column: "2".into(),
            server: server.into(),
            trials: Vec::new(),
            addresses: Vec::new(),
            values: values.to_vec(),
            summary: cairn_analysis::summarize(values, "tps").unwrap(),
            noisy: false,
            drift: None,
            outliers: Vec::new(),
            comparison: (server != "system").then(|| {
                cairn_analysis::compare(
                    system,
                    values,
                    cairn_defs::figures::Direction::HigherIsBetter,
                    &Criteria::default(),
                )
                .unwrap()
            }),
            facet: None,
        };
        Table {
            metric: "tps".into(),
            unit: String::new(),
            direction: cairn_defs::figures::Direction::HigherIsBetter,
            rows: cairn_report::table::Dimension {
                name: "server".into(),
                values: vec!["system".into(), "jemalloc".into()],
            },
            columns: cairn_report::table::Dimension {
                name: "threads".into(),
                values: vec!["2".into()],
            },
            baseline: Some("system".into()),
            noisy_cv: 0.05,
            cells: vec![cell("system", system), cell("jemalloc", jemalloc)],
            facet: None,
            followers: Vec::new(),
        }
    }

    fn scaled(values: &[f64], by: f64) -> Vec<f64> {
        values.iter().map(|v| v * by).collect()
    }

    #[test]
    fn an_effect_compares_across_machines_where_cells_do_not() {
        let system = [1000.0, 1004.0, 998.0, 1002.0, 1001.0, 999.0];
        let published = table(&system, &scaled(&system, 1.3));
        // a machine 30% slower, the same effect; and one where jemalloc gains nothing
        let slower = table(&scaled(&system, 0.7), &scaled(&system, 0.91));
        let no_gain = table(&scaled(&system, 0.7), &scaled(&system, 0.7));
        let tables = |t: &Table| BTreeMap::from([("tps".to_string(), t.clone())]);
        let rows = effects(&tables(&published), &tables(&slower));
        assert_eq!(rows.len(), 1);
        let e = &rows[0];
        assert_eq!(e.verdict, Agreement::Consistent, "{e:?}");
        assert_eq!(
            (e.variant.as_str(), e.at.as_str()),
            ("jemalloc", "threads = 2")
        );
        assert!((e.published.as_ref().unwrap().ratio - 1.3).abs() < 1e-9);
        assert!((e.reproduced.as_ref().unwrap().ratio - 1.3).abs() < 1e-9);
        let e = &effects(&tables(&published), &tables(&no_gain))[0];
        assert_eq!(e.verdict, Agreement::Differs, "{e:?}");
        assert_eq!(e.direction.as_deref(), Some("lower"));
        let e = &effects(&tables(&published), &BTreeMap::new())[0];
        assert_eq!(e.verdict, Agreement::Undecided);
        assert!(e.reason.starts_with("not reproduced"), "{e:?}");
    }

    #[test]
    fn the_summary_counts_effects_and_claims() {
        let effects = [
            effect(Agreement::Consistent),
            effect(Agreement::Differs),
            effect(Agreement::Undecided),
            effect(Agreement::Consistent),
        ];
        let claims = [
            claim(Some("holds"), Some("holds")),
            claim(Some("holds"), Some("fails")),
            claim(Some("inconclusive"), Some("holds")),
            claim(Some("holds"), Some("inconclusive")),
            claim(Some("holds"), None),
        ];
        let s = summary(&effects, &claims);
        assert_eq!(
            s.line,
            "2 of 4 effects consistent, 1 differ, 1 undecided; claims: 1 of 5 with the published verdict here, 2 with another, 2 undecided here"
        );
    }
}
