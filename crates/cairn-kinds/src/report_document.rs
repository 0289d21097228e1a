//! A report's text, built from what its step read: the findings first — a list of each
//! claim's verdict and each comparison with its ratio and CI, each scaling, then on how many
//! trials and which machine they rest — then the design (what was compared and how it
//! differs, the workload, dataset, driver and where its clients ran, every server option,
//! the pass rule and the passes it chose, when it was measured), the plots, tables and
//! scaling, the claims, the data's quality (noisy points once, drift, outliers, campaigns)
//! and the provenance. Every number in the text is formatted from the tables, claims and
//! trials the report shows (a test holds the headline to `data.json`).

use std::collections::{BTreeMap, BTreeSet};

use cairn_analysis::Verdict;
use cairn_defs::{DatasetDef, ParamValue, PassRule, ReportDef, ServerDef};
use cairn_report::document::{Block, Inline, Item, Report, Section};
use cairn_report::scaling::Scaling;
use cairn_report::table::{ci_text, flags_markdown, number_format, Table};
use cairn_store::Store;
use serde_json::Value;

use crate::data_csv::DATA_DICTIONARY_MD;
use crate::report_step::{Inputs, PlanSource, DATA_CSV, DATA_JSON, SERIES_CSV};
use crate::trial_points::{self, display_value, TrialPoint};

/// What one trials block measured and how, from its trials.
#[derive(Debug, Clone, Default)]
pub struct TrialsDesign {
    pub name: String,
    /// The first trial's definition: the workload (its point's parameters among the rest).
    pub workload: cairn_defs::WorkloadDef,
    /// Where the first trial's clients ran (`extra.client`: driver, place).
    pub client: Value,
    /// Each server's settings, in first-seen order.
    pub servers: Vec<(String, ServerDef)>,
    /// Each server's image as built: its Debian suite and architecture and the versions of
    /// the packages its definition names (from the image's manifest), by server.
    pub images: BTreeMap<String, String>,
    /// The first trial's start and the last one's end (UTC, as records hold them).
    pub started: String,
    pub finished: String,
}

/// The design of each trials block of `trials` (as the report read them), in first-seen
/// order; `store` only for each server's image record.
pub fn design_of(store: &Store, trials: &[TrialPoint]) -> Vec<TrialsDesign> {
    let mut blocks: Vec<TrialsDesign> = Vec::new();
    for t in trials {
        let i = match blocks.iter().position(|b| b.name == t.trials) {
            Some(i) => i,
            None => {
                blocks.push(TrialsDesign {
                    name: t.trials.clone(),
                    workload: t.workload.clone(),
                    client: t.client.clone(),
                    servers: Vec::new(),
                    images: BTreeMap::new(),
                    started: t.measured.started.clone(),
                    finished: t.measured.finished.clone(),
                });
                blocks.len() - 1
            }
        };
        let b = &mut blocks[i];
        // servers whose clients ran in different places (socket, loopback, bridge): the
        // block's place is then each server's, said by its `client` setting
        let place = |c: &Value| c.get("place").cloned();
        if place(&b.client).is_some() && place(&b.client) != place(&t.client) {
            if let Some(c) = b.client.as_object_mut() {
                c.insert(
                    "place".into(),
                    Value::from("each server's own (its `client` setting, below)"),
                );
            }
        }
        if !b.servers.iter().any(|(s, _)| *s == t.server) {
            // the image's tag is its step's key
            let image_key = t
                .image
                .get("reference")
                .and_then(Value::as_str)
                .and_then(|r| r.rsplit_once(':'))
                .map(|(_, tag)| tag);
            if let Some(image) = image_key.and_then(|k| image_words(store, k)) {
                b.images.insert(t.server.clone(), image);
            }
            let settings = t.settings.clone().unwrap_or_default();
            b.servers.push((t.server.clone(), settings));
        }
        // RFC 3339 in UTC: the text's order is the time's
        if t.measured.started < b.started {
            b.started = t.measured.started.clone();
        }
        if t.measured.finished > b.finished {
            b.finished = t.measured.finished.clone();
        }
    }
    blocks
}

/// An image step's record (key `key`) in words: `Debian bookworm amd64: mariadb-server
/// 1:10.11.14-0+deb12u2, sysbench 1.0.20+ds-1` — the packages its definition names, at the
/// versions its manifest found installed. `None` where the record or manifest is gone.
fn image_words(store: &Store, key: &str) -> Option<String> {
    let record = store.get_record(key).ok().flatten()?;
    let blob = record.outputs.get(crate::image_step::MANIFEST)?;
    let manifest: crate::image_step::ImageOutput =
        serde_json::from_slice(&store.read_blob(blob).ok()?).ok()?;
    let debian = record.definition.get("debian");
    let field = |k: &str| {
        debian
            .and_then(|d| d.get(k))
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string()
    };
    let named: Vec<String> = record
        .definition
        .get("packages")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(String::from)
                .collect()
        })
        .unwrap_or_default();
    let versions: Vec<String> = named
        .iter()
        .map(|p| {
            let version = manifest.manifest.version_of(p).unwrap_or("not installed");
            format!("{p} {version}")
        })
        .collect();
    let base = match (field("suite"), field("arch")) {
        (suite, arch) if !suite.is_empty() => format!("Debian {suite} {arch}"),
        _ => format!("a layer ({})", manifest.manifest.dpkg_architecture),
    };
    Some(if versions.is_empty() {
        base
    } else {
        format!("{base}: {}", versions.join(", "))
    })
}

/// The report: the headline, then the design, the plots, the tables, the scaling analyses,
/// the claims (each section only if there is something in it), the data's quality and the
/// provenance (`plan` first, if known).
pub fn build(title: &str, inputs: &Inputs, plan: Option<&PlanSource>, def: &ReportDef) -> Report {
    let section = |heading: &str, blocks: Vec<Block>| Section {
        heading: heading.to_string(),
        anchor: None,
        blocks,
    };
    let mut sections = Vec::new();
    let design = design(inputs, def);
    if !design.is_empty() {
        sections.push(section("Design", vec![Block::List(design)]));
    }
    if !inputs.figures.is_empty() {
        let figures = inputs.figures.iter().cloned().map(Block::Figure).collect();
        sections.push(section("Plots", figures));
    }
    if !inputs.series_plots.is_empty() {
        let figures = inputs
            .series_plots
            .iter()
            .map(|(_, f)| Block::Figure(f.clone()));
        sections.push(section("Throughput over time", figures.collect()));
    }
    let scaled: BTreeSet<&str> = inputs.scalings.iter().map(|(n, _)| n.as_str()).collect();
    // a scaling analysis's medians are its own table's: shown once, under Scaling
    let tables: Vec<Block> = inputs
        .tables
        .iter()
        .filter(|(name, _)| !scaled.contains(name.as_str()))
        .map(|(name, table)| Block::Table {
            name: name.clone(),
            table: Box::new(table.clone()),
        })
        .collect();
    if !tables.is_empty() {
        sections.push(section("Tables", tables));
    }
    if !inputs.scalings.is_empty() {
        let scalings = inputs
            .scalings
            .iter()
            .map(|(name, scaling)| Block::Scaling {
                name: name.clone(),
                scaling: scaling.clone(),
            });
        sections.push(section("Scaling", scalings.collect()));
    }
    if !inputs.profiles.is_empty() {
        let blocks = inputs.profiles.iter().flat_map(profile_blocks).collect();
        sections.push(section("Where the time went", blocks));
    }
    if !inputs.claims.is_empty() {
        sections.push(section(
            "Claims",
            vec![Block::Claims(inputs.claims.clone())],
        ));
    }
    sections.push(section("Data quality", data_quality(inputs, &def.reused)));
    sections.push(Section {
        heading: "Provenance".into(),
        anchor: Some("provenance".into()),
        blocks: vec![
            Block::List(provenance(&inputs.trials, &inputs.design, plan)),
            Block::Paragraph(
                Inline::plain("The data: ")
                    .code(DATA_CSV)
                    .text(" (one row per trial: every parameter and figure; its columns in ")
                    .code(DATA_DICTIONARY_MD)
                    .text("), ")
                    .code(SERIES_CSV)
                    .text(" (per-second samples, long format) and ")
                    .code(DATA_JSON)
                    .text("."),
            ),
        ],
    });
    Report {
        title: title.to_string(),
        summary: headline(inputs),
        sections,
    }
}

/// A `profile` analysis for a reader: what was sampled and how much, per variant the
/// functions whose share of the server's CPU samples changed most against the baseline
/// (shares and CPU µs per transaction on either side), then the flame graphs.
fn profile_blocks(p: &crate::report_step::ProfileShown) -> Vec<Block> {
    let f = &p.findings;
    let hz = f.servers.first().map_or(0.0, |s| s.frequency_hz);
    let sides: Vec<String> = f
        .servers
        .iter()
        .map(|s| {
            format!(
                "{} {} samples from {} trial{}",
                s.server,
                s.samples,
                s.trials,
                if s.trials == 1 { "" } else { "s" }
            )
        })
        .collect();
    let at = if f.points.is_empty() {
        String::new()
    } else {
        format!(" at {}", f.points.join(", "))
    };
    let mut blocks = Vec::new();
    if !f.servers.is_empty() {
        blocks.push(Block::Paragraph(
        Inline::plain("")
            .code(&p.name)
            .text(format!(
                ": the server's on-CPU stacks over each trial's measured window (perf, cpu-clock at {hz} Hz), merged per server{at}: {}. A function's share is its own samples over its side's; its CPU time per transaction is its samples ÷ {hz} Hz ÷ the side's transactions. Samples of one run each, not a statistic with a CI: a share of a few samples is noise.",
                sides.join(", ")
            )),
        ));
    }
    let base = f.server(&f.baseline);
    for v in &f.variants {
        let variant = f.server(&v.variant);
        let us = |side: Option<&crate::profile_analysis::ServerProfile>, per: Option<f64>| {
            side.and_then(|s| s.us_per_work(per))
                .map_or("-".to_string(), |u| format!("{u:.1}"))
        };
        let rows = v
            .changes
            .iter()
            .map(|c| {
                vec![
                    c.function.clone(),
                    format!("{:.2}", 100.0 * c.baseline_share),
                    format!("{:.2}", 100.0 * c.variant_share),
                    format!("{:+.2}", 100.0 * c.share_change()),
                    us(base, c.baseline_per_work),
                    us(variant, c.variant_per_work),
                ]
            })
            .collect();
        blocks.push(Block::Grid {
            caption: Inline::plain("")
                .code(&v.variant)
                .text(" against ")
                .code(&f.baseline)
                .text(": the functions whose share of the CPU samples changed most"),
            header: vec![
                "function".into(),
                format!("{} self %", f.baseline),
                format!("{} self %", v.variant),
                "Δ points".into(),
                format!("{} µs/tx", f.baseline),
                format!("{} µs/tx", v.variant),
            ],
            rows,
        });
    }
    if let Some(w) = &f.waits {
        blocks.extend(wait_blocks(&p.name, w, &f.baseline, &at));
    }
    blocks.extend(p.figures.iter().cloned().map(Block::Figure));
    blocks
}

/// What the sessions waited on: a paragraph on the source and each server's total, then per
/// variant the events whose share of the waiting changed most, with µs per transaction.
fn wait_blocks(
    name: &str,
    w: &crate::profile_analysis::WaitFindings,
    baseline: &str,
    at: &str,
) -> Vec<Block> {
    let per_tx = |us: u64, work: f64| {
        if work > 0.0 {
            format!("{:.1} µs per transaction", us as f64 / work)
        } else {
            "no transactions".to_string()
        }
    };
    let sides: Vec<String> = w
        .servers
        .iter()
        .map(|s| {
            format!(
                "{} waited {} over {} trial{}",
                s.server,
                per_tx(s.total_us, s.work),
                s.trials,
                if s.trials == 1 { "" } else { "s" }
            )
        })
        .collect();
    let mut blocks = vec![Block::Paragraph(
        Inline::plain("")
            .code(name)
            .text(format!(
                ": what the server's sessions waited on over each trial's measured window ({}), summed per server{at}: {}. An event's share is its time over its side's time waited. Not a statistic with a CI.",
                w.source,
                sides.join(", ")
            )),
    )];
    for v in &w.variants {
        let us = |per: Option<f64>| per.map_or("-".to_string(), |u| format!("{u:.1}"));
        let rows = v
            .changes
            .iter()
            .map(|c| {
                vec![
                    c.function.clone(),
                    us(c.baseline_per_work),
                    us(c.variant_per_work),
                    format!("{:.2}", 100.0 * c.baseline_share),
                    format!("{:.2}", 100.0 * c.variant_share),
                    format!("{:+.2}", 100.0 * c.share_change()),
                ]
            })
            .collect();
        blocks.push(Block::Grid {
            caption: Inline::plain("")
                .code(&v.variant)
                .text(" against ")
                .code(baseline)
                .text(": the wait events whose share of the waiting changed most"),
            header: vec![
                "wait event".into(),
                format!("{baseline} µs/tx"),
                format!("{} µs/tx", v.variant),
                format!("{baseline} share %"),
                format!("{} share %", v.variant),
                "Δ points".into(),
            ],
            rows,
        });
    }
    blocks
}

/// The findings under the title, each with its numbers, as a list — each claim's verdict
/// with its ratio and CI, each table's comparisons per variant (the decided ones each with
/// its numbers), each scaling's end points — then what they rest on (trials, passes per
/// cell, machines).
fn headline(inputs: &Inputs) -> Vec<Block> {
    let mut findings = Vec::new();
    for (claim, c) in &inputs.claims {
        let point = point_words(&c.point);
        let text = Inline::plain(format!("Claim \"{claim}\": ")).strong(c.verdict.to_string());
        findings.push(match (c.ratio, &c.ratio_ci) {
            // over operations, a trend: the count, or the gain at both points
            _ if c.operations.is_some() || c.trend.is_some() => {
                text.text(format!(" — {}{point}.", cairn_report::claim::form_words(c)))
            }
            (Some(ratio), Some(ci)) => text.text(format!(
                " — {} / {} {} ×{:.3} {}{point}, {}.",
                c.expect.left,
                c.expect.right,
                c.metric,
                ratio,
                ci_text(ci),
                cairn_report::claim::passes_words(c)
            )),
            _ => text.text(format!("{point}.")),
        });
    }
    for (name, table) in &inputs.tables {
        findings.extend(table_findings(name, table));
    }
    for (_, s) in &inputs.scalings {
        findings.extend(scaling_finding(s));
    }
    let classes = trial_points::machine_classes(&inputs.trials);
    let machine = match classes {
        0 => String::new(),
        1 => format!(
            " on one machine ({})",
            cairn_report::machine::machine_line(&inputs.trials[0].fingerprint)
        ),
        n => format!(" on {n} classes of machine"),
    };
    let rests_on = Inline::plain(format!(
        "{} trials{}{machine}.",
        inputs.trials.len(),
        passes_per_cell(&inputs.trials),
    ));
    let mut blocks = Vec::new();
    if !findings.is_empty() {
        blocks.push(Block::List(findings.into_iter().map(Item::new).collect()));
    }
    blocks.push(Block::Paragraph(rests_on));
    blocks
}

/// ` at threads = 4` (empty for no point).
fn point_words(point: &BTreeMap<String, String>) -> String {
    if point.is_empty() {
        return String::new();
    }
    let parts: Vec<String> = point.iter().map(|(k, v)| format!("{k} = {v}")).collect();
    format!(" at {}", parts.join(", "))
}

/// A table's comparisons among the findings, one per variant: the decided ones with their
/// ratio and CI, the undecided ones counted (listed while they are few).
/// Decided comparisons a finding lists one by one; beyond, it counts them per verdict.
const MAX_LISTED: usize = 6;

fn table_findings(name: &str, table: &Table) -> Vec<Inline> {
    let mut findings = Vec::new();
    let Some(baseline) = &table.baseline else {
        return findings;
    };
    let mut variants: Vec<&str> = Vec::new();
    for c in table.cells.iter().filter(|c| c.comparison.is_some()) {
        if !variants.contains(&c.server.as_str()) {
            variants.push(&c.server);
        }
    }
    for variant in variants {
        let cells: Vec<_> = table
            .cells
            .iter()
            .filter(|c| c.server == variant)
            .filter_map(|c| Some((c, c.comparison.as_ref()?)))
            .collect();
        let where_ = |c: &cairn_report::table::Cell| {
            if table.rows.name == "server" {
                format!("{} = {}", table.columns.name, c.column)
            } else {
                format!("{} = {}", table.rows.name, c.row)
            }
        };
        let (decided, undecided): (Vec<_>, Vec<_>) = cells
            .iter()
            .partition(|(_, cmp)| cmp.verdict != Verdict::Inconclusive);
        let mut text = Inline::plain("Table ").code(name).text(format!(
            ", {variant} / {baseline} {}, {} of {} comparison{} decided: ",
            table.metric,
            decided.len(),
            cells.len(),
            if cells.len() == 1 { "" } else { "s" }
        ));
        let mut parts = Vec::new();
        let at = |c: &cairn_report::table::Cell, cmp: &cairn_analysis::Comparison| {
            format!(
                "×{:.3} {} at {}",
                cmp.ratio.ratio,
                ci_text(&cmp.ratio.ci),
                where_(c)
            )
        };
        if decided.len() <= MAX_LISTED {
            for (c, cmp) in &decided {
                parts.push(
                    Inline::default()
                        .strong(cmp.verdict.to_string())
                        .text(format!(
                            " at {}, ×{:.3} {}",
                            where_(c),
                            cmp.ratio.ratio,
                            ci_text(&cmp.ratio.ci)
                        )),
                );
            }
        } else {
            // a suite's hundred operations: per verdict, how many and the two extremes
            let mut verdicts: Vec<Verdict> = Vec::new();
            for (_, cmp) in &decided {
                if !verdicts.contains(&cmp.verdict) {
                    verdicts.push(cmp.verdict);
                }
            }
            for verdict in verdicts {
                let mut same: Vec<_> = decided
                    .iter()
                    .filter(|(_, cmp)| cmp.verdict == verdict)
                    .collect();
                same.sort_by(|a, b| a.1.ratio.ratio.total_cmp(&b.1.ratio.ratio));
                let (lo, hi) = (same[0], same[same.len() - 1]);
                let range = if same.len() == 1 {
                    format!(", {}", at(lo.0, lo.1))
                } else {
                    format!(", from {} to {}", at(lo.0, lo.1), at(hi.0, hi.1))
                };
                parts.push(
                    Inline::default()
                        .strong(verdict.to_string())
                        .text(format!(" at {} points{range}", same.len())),
                );
            }
        }
        if !undecided.is_empty() {
            let mut part = Inline::default().strong(Verdict::Inconclusive.to_string());
            if undecided.len() <= 3 {
                let each: Vec<String> = undecided
                    .iter()
                    .map(|(c, cmp)| {
                        format!(
                            "at {}, ×{:.3} {}",
                            where_(c),
                            cmp.ratio.ratio,
                            ci_text(&cmp.ratio.ci)
                        )
                    })
                    .collect();
                part = part.text(format!(" {}", each.join(", and ")));
            } else {
                part = part.text(format!(" at {} points", undecided.len()));
            }
            parts.push(part);
        }
        for (i, part) in parts.into_iter().enumerate() {
            if i > 0 {
                text = text.text("; ");
            }
            text.0.extend(part.0);
        }
        findings.push(text.text("."));
    }
    findings
}

/// A scaling among the findings: each server's speedup from its lowest x to its highest,
/// with the CI (none when no server has two points).
fn scaling_finding(s: &Scaling) -> Option<Inline> {
    let mut servers: Vec<&str> = Vec::new();
    for p in &s.points {
        if !servers.contains(&p.server.as_str()) {
            servers.push(&p.server);
        }
    }
    let mut parts = Vec::new();
    let mut range = None;
    for server in servers {
        let points: Vec<_> = s.points.iter().filter(|p| p.server == server).collect();
        let (Some(first), Some(last)) = (points.first(), points.last()) else {
            continue;
        };
        if points.len() < 2 {
            continue;
        }
        range = Some((first.x.clone(), last.x.clone()));
        let ci = last
            .speedup_ci
            .as_ref()
            .map_or(" (no CI: too few passes)".to_string(), |i| {
                // as the scaling table writes it
                format!(" [{:.2}, {:.2}]", i.low, i.high)
            });
        parts.push(format!("{server} ×{:.2}{ci}", last.speedup));
    }
    let (from, to) = range?;
    Some(Inline::plain(format!(
        "Scaling of {} from {} = {from} to {to}: {}.",
        s.metric,
        s.x,
        parts.join(", ")
    )))
}

/// `, 4 to 9 passes per cell`: the fewest and most passes of a server at one point, from
/// the trials themselves (empty when there are none).
fn passes_per_cell(trials: &[TrialPoint]) -> String {
    let counts = cell_passes(trials);
    let (Some(lo), Some(hi)) = (counts.values().min(), counts.values().max()) else {
        return String::new();
    };
    let plural = |n: usize| if n == 1 { "" } else { "es" };
    if lo == hi {
        format!(", {lo} pass{} per cell", plural(*lo))
    } else {
        format!(", {lo} to {hi} passes per cell")
    }
}

/// The passes of each cell (block, server, point).
fn cell_passes(trials: &[TrialPoint]) -> BTreeMap<(String, String, String), usize> {
    let mut cells = BTreeMap::new();
    for t in trials {
        let point = serde_json::to_string(&t.params).unwrap_or_default();
        *cells
            .entry((t.trials.clone(), t.server.clone(), point))
            .or_default() += 1;
    }
    cells
}

/// The fewest passes per side at which the rank test's smallest p (no ties) is below `alpha`.
fn fewest_passes_for(alpha: f64) -> usize {
    (1..100)
        .find(|&n| cairn_analysis::rank_test::min_p_without_ties(n, n) < alpha)
        .unwrap_or(100)
}

/// What the study compared and how: the servers and what differs between them, then per
/// trials block the workload, the load's driver and place, the dataset, the pass rule with
/// the passes it chose and when it was measured; every server option; how to read the
/// figures.
fn design(inputs: &Inputs, def: &ReportDef) -> Vec<Item> {
    let mut items = Vec::new();
    if inputs.trials.is_empty() {
        return items;
    }
    let mut servers: Vec<&str> = Vec::new();
    for t in &inputs.trials {
        if !servers.contains(&t.server.as_str()) {
            servers.push(&t.server);
        }
    }
    let mut compared = Item::new(Inline::plain(format!(
        "Compared: {} server{}: ",
        servers.len(),
        if servers.len() == 1 { "" } else { "s" }
    )));
    for (i, s) in servers.iter().enumerate() {
        if i > 0 {
            compared.text = compared.text.text(", ");
        }
        compared.text = compared.text.code(*s);
    }
    let differing = differing_settings(&inputs.trials);
    if differing.is_empty() {
        compared.text = compared.text.text(", with the same settings.");
    } else {
        compared.text = compared.text.text(", differing in:");
        for (name, values) in &differing {
            let mut text = Inline::plain(format!("{name}: "));
            for (i, (server, value)) in values.iter().enumerate() {
                let separator = if i == 0 { "" } else { ", " };
                text = text.text(format!("{separator}{server} = ")).code(value);
            }
            compared.sub_items.push(text);
        }
    }
    items.push(compared);
    for block in &inputs.design {
        items.push(block_design(
            inputs,
            block,
            def.passes.get(&block.name),
            def.datasets.get(&block.name),
        ));
    }
    items.push(options_item(&inputs.design));
    if let Some(item) = parameters_item(&def.params) {
        items.push(item);
    }
    items.push(Item::new(Inline::plain(format!(
        "How to read it: each cell is the median of its passes; a ratio is variant / baseline with a bootstrap CI of the medians; a verdict needs a rank test and the CI to agree (the rank test needs at least {} passes per side to reach p < 0.05); a cell is noisy when its passes' coefficient of variation is above 5%.",
        fewest_passes_for(0.05)
    ))));
    items
}

/// `Parameters: scale = tiny (default), threads = 1 2 4 8`: the values the plan's `param`s
/// had in this run, so a reader knows which scale the numbers are from.
fn parameters_item(params: &BTreeMap<String, ParamValue>) -> Option<Item> {
    if params.is_empty() {
        return None;
    }
    let mut text = Inline::plain("Parameters: ");
    for (i, (name, p)) in params.iter().enumerate() {
        if i > 0 {
            text = text.text(", ");
        }
        text = text.text(format!("{name} = ")).code(&p.value);
        if p.value == p.default {
            text = text.text(" (default)");
        } else {
            text = text.text(" (default ").code(&p.default).text(")");
        }
    }
    Some(Item::new(text))
}

/// The block's factors at one value that are not its workload's parameters (a host
/// setting: `io-scheduler = none`): settings of the design all the same, which the workload's
/// definition does not hold.
fn fixed_factors(matrix: &BTreeMap<&str, Vec<String>>, w: &cairn_defs::WorkloadDef) -> Vec<String> {
    matrix
        .iter()
        .filter(|(k, v)| v.len() == 1 && !w.params.contains_key(**k))
        .map(|(k, v)| format!("{k} = {}", v[0]))
        .collect()
}

/// Where the block's `cpus` factor put the server and its clients, each count once, as the
/// trials read them back: "CPUs: at cpus = 1 the server on CPU 0, the clients on CPU 1; at
/// cpus = 2 the server on CPUs 0-1, the clients sharing them". A reader of a scaling curve
/// over `cpus` needs it: on a small machine the clients move too.
fn cpu_placement_words(trials: &[&TrialPoint]) -> Option<Inline> {
    let on = |set: &str| {
        if set.contains(['-', ',']) {
            format!("CPUs {set}")
        } else {
            format!("CPU {set}")
        }
    };
    let mut by_count: BTreeMap<u64, String> = BTreeMap::new();
    for t in trials {
        let Some(count) = t.cpus.get("count").and_then(Value::as_u64) else {
            continue;
        };
        let text = |k: &str| t.cpus.get(k).and_then(Value::as_str).unwrap_or("?");
        let clients = match text("clients") {
            "shared" => "the clients sharing them (no CPU left over)".to_string(),
            // `clients="with-server"`: the whole benchmark on the server's CPUs
            set if set == text("server_affinity") => format!("the clients with it on {}", on(set)),
            set => format!("the clients on {}", on(set)),
        };
        by_count.entry(count).or_insert_with(|| {
            format!(
                "at cpus = {count} the server on {}, {clients}",
                on(text("server_affinity"))
            )
        });
    }
    if by_count.is_empty() {
        return None;
    }
    let words: Vec<String> = by_count.into_values().collect();
    Some(Inline::plain(format!("CPUs: {}.", words.join("; "))))
}

/// One trials block: its workload at its matrix, the driver and where it ran, the dataset,
/// the passes and when.
fn block_design(
    inputs: &Inputs,
    block: &TrialsDesign,
    rule: Option<&PassRule>,
    dataset: Option<&DatasetDef>,
) -> Item {
    let w = &block.workload;
    let trials: Vec<&TrialPoint> = inputs
        .trials
        .iter()
        .filter(|t| t.trials == block.name)
        .collect();
    // the matrix: the parameters whose values differ between the block's trials
    let mut matrix: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    for t in &trials {
        for (k, v) in &t.params {
            let values = matrix.entry(k.as_str()).or_default();
            trial_points::push_unique(values, display_value(v));
        }
    }
    let fixed_factors = fixed_factors(&matrix, w);
    matrix.retain(|_, v| v.len() > 1);
    let mut head = Inline::plain("Trials ")
        .code(&block.name)
        .text(": ")
        .code(format!("{} {}", w.driver, w.test));
    let at: Vec<String> = matrix
        .iter()
        .map(|(k, v)| format!("{k} = {}", v.join(", ")))
        .collect();
    if !at.is_empty() {
        head = head.text(format!(" at {}", at.join("; ")));
    }
    let seconds = |k: &str| w.params.get(k).and_then(|v| v.as_f64());
    let mut settings = Vec::new();
    match (seconds("duration"), seconds("warmup")) {
        (Some(d), Some(wu)) if wu > 0.0 => {
            settings.push(format!("{d} s measured after {wu} s of warm-up"))
        }
        (Some(d), _) => settings.push(format!("{d} s measured, no warm-up")),
        _ => {}
    }
    for (k, v) in w.params.iter() {
        if matrix.contains_key(k.as_str()) || k == "duration" || k == "warmup" {
            continue;
        }
        settings.push(format!("{k} = {}", shown(v)));
    }
    for (k, v) in w.driver_props.iter() {
        settings.push(format!("{k} = {}", shown(v)));
    }
    settings.extend(fixed_factors);
    if !settings.is_empty() {
        head = head.text(format!("; {}", settings.join(", ")));
    }
    let mut item = Item::new(head.text("."));
    let driver = match block.client.get("driver").and_then(Value::as_str) {
        Some("external") => Inline::plain("Load: the ")
            .code(&w.driver)
            .text(" program itself (an external tool)"),
        Some(_) => Inline::plain("Load: cairn's native ")
            .code(&w.driver)
            .text(" driver (the ")
            .code(&w.test)
            .text(format!(
                " queries of {}, issued by cairn-workload), not the ",
                w.driver
            ))
            .code(&w.driver)
            .text(" program"),
        None => Inline::plain("Load: ").code(&w.driver),
    };
    let mut load = driver;
    if let Some(place) = block.client.get("place").and_then(Value::as_str) {
        // the place names plan words in backticks
        load = load.text("; clients: ");
        load.0.extend(Inline::ticked(place).0);
    }
    item.sub_items.push(load.text("."));
    if let Some(d) = dataset {
        let props: Vec<String> = d
            .props
            .iter()
            .map(|(k, v)| format!("{k} = {}", shown(v)))
            .collect();
        item.sub_items
            .push(Inline::plain("Dataset: ").code(&d.generator).text(format!(
            " {}; loaded once per server configuration, and every trial starts from that snapshot.",
            props.join(", ")
        )));
    }
    if let Some(cpus) = cpu_placement_words(&trials) {
        item.sub_items.push(cpus);
    }
    if let Some(lifecycle) = crate::report_lifecycle::lifecycle_words(&trials) {
        item.sub_items.push(lifecycle);
    }
    if let Some(profiled) = profile_words(&trials) {
        item.sub_items.push(profiled);
    }
    let chosen = cell_passes(&inputs.trials);
    let chosen: Vec<usize> = chosen
        .iter()
        .filter(|((b, _, _), _)| *b == block.name)
        .map(|(_, n)| *n)
        .collect();
    let ran = match (chosen.iter().min(), chosen.iter().max()) {
        (Some(lo), Some(hi)) if lo == hi => format!("; it ran {lo} per cell"),
        (Some(lo), Some(hi)) => format!("; it ran {lo} to {hi} per cell"),
        _ => String::new(),
    };
    if let Some(rule) = rule {
        item.sub_items
            .push(Inline::plain(format!("Passes: {}{ran}.", rule.describe())));
    } else if !ran.is_empty() {
        item.sub_items
            .push(Inline::plain(format!("Passes: {}.", &ran[2..])));
    }
    let campaigns = trial_points::campaigns(trials.iter().copied());
    let (from, to) = (utc_minute(&block.started), utc_minute(&block.finished));
    // the end's day only when it is another than the start's
    let to = match (from.split_once(' '), to.split_once(' ')) {
        (Some((d1, _)), Some((d2, time))) if d1 == d2 => time.to_string(),
        _ => to,
    };
    item.sub_items.push(Inline::plain(format!(
        "Measured {from} to {to} (UTC), {} pass{} in {} campaign{}{}.",
        trials.len(),
        if trials.len() == 1 { "" } else { "es" },
        campaigns,
        if campaigns == 1 { "" } else { "s" },
        if block.servers.len() > 1 {
            ", the servers' passes interleaved"
        } else {
            ""
        }
    )));
    item
}

/// `Profiled over each measured window: on-CPU stacks of every server (…).` — what a
/// block's trials profiled (profiling may cost the server some of its speed, so a reader
/// must know which passes paid for it); `None` when none did.
fn profile_words(trials: &[&TrialPoint]) -> Option<Inline> {
    // what was profiled, with whose passes, in first-seen order
    let mut by_what: Vec<(cairn_defs::ProfilesAsked, Vec<String>)> = Vec::new();
    let mut servers: Vec<String> = Vec::new();
    for t in trials {
        trial_points::push_unique(&mut servers, t.server.clone());
        let what = t.profiles;
        if !what.any() {
            continue;
        }
        let i = match by_what.iter().position(|(w, _)| *w == what) {
            Some(i) => i,
            None => {
                by_what.push((what, Vec::new()));
                by_what.len() - 1
            }
        };
        trial_points::push_unique(&mut by_what[i].1, t.server.clone());
    }
    if by_what.is_empty() {
        return None;
    }
    let parts: Vec<String> = by_what
        .iter()
        .map(|(asked, profiled)| {
            let what = match (asked.cpu, asked.waits) {
                (true, true) => "on-CPU stacks and wait statistics",
                (true, false) => "on-CPU stacks",
                _ => "wait statistics",
            };
            let whose = if profiled.len() == servers.len() {
                "every server".to_string()
            } else {
                let ticked: Vec<String> = profiled.iter().map(|s| format!("`{s}`")).collect();
                ticked.join(", ")
            };
            format!("{what} of {whose}")
        })
        .collect();
    Some(Inline::ticked(&format!(
        "Profiled over each measured window: {} (on-CPU stacks: `perf` on every CPU at 199 Hz, the server's samples kept; profiling may cost the server some of its speed).",
        parts.join("; ")
    )))
}

/// A plan value as the plan wrote it (`2` for `2.0`, strings bare).
fn shown(v: &Value) -> String {
    cairn_defs::value_text(v).unwrap_or_else(|| v.to_string())
}

/// `2026-12-05T09:03:56.805Z` → `2026-12-05 09:03`.
fn utc_minute(stamp: &str) -> String {
    stamp.get(..16).unwrap_or(stamp).replacen('T', " ", 1)
}

/// Every server option, in full: those every server shares once, then each server's own.
fn options_item(blocks: &[TrialsDesign]) -> Item {
    let mut by_server: Vec<(&str, BTreeMap<String, String>)> = Vec::new();
    for b in blocks {
        for (server, def) in &b.servers {
            if by_server.iter().any(|(s, _)| s == server) {
                continue;
            }
            // the options by their own names, beside the allocator, connection and env
            let flat = flat_settings(def)
                .into_iter()
                .filter(|(k, _)| !matches!(k.as_str(), "executor" | "cpus" | "memory"))
                .map(|(k, v)| match k.strip_prefix("option ") {
                    Some(option) => (option.to_string(), v),
                    None => (k, v),
                })
                .collect();
            by_server.push((server, flat));
        }
    }
    let shared: BTreeMap<String, String> = match by_server.first() {
        Some((_, first)) => first
            .iter()
            .filter(|(k, v)| by_server.iter().all(|(_, m)| m.get(*k) == Some(*v)))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect(),
        None => BTreeMap::new(),
    };
    let listed = |m: &BTreeMap<String, String>| {
        let mut text = Inline::default();
        for (i, (k, v)) in m.iter().enumerate() {
            let sep = if i == 0 { "" } else { ", " };
            text = text.text(format!("{sep}{k} = ")).code(v);
        }
        text
    };
    let mut head = Inline::plain("Server settings of every server: ");
    head.0.extend(listed(&shared).0);
    let mut item = Item::new(head);
    for (server, m) in &by_server {
        let own: BTreeMap<String, String> = m
            .iter()
            .filter(|(k, _)| !shared.contains_key(*k))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        if !own.is_empty() {
            let mut text = Inline::default().code(*server).text(": ");
            text.0.extend(listed(&own).0);
            item.sub_items.push(text);
        }
    }
    item
}

/// A server's settings as `setting → value`: `option <name>`, `env <name>`, `allocator`,
/// `connect`, `executor`, and `client`, `link`, `cpus` and `memory` where given.
fn flat_settings(s: &ServerDef) -> BTreeMap<String, String> {
    let mut flat = BTreeMap::new();
    for (k, v) in &s.options {
        flat.insert(format!("option {k}"), display_value(v));
    }
    for (k, v) in &s.env {
        flat.insert(format!("env {k}"), v.clone());
    }
    flat.insert("allocator".into(), s.allocator_or_default().to_string());
    flat.insert("connect".into(), s.connect_or_default().to_string());
    flat.insert("executor".into(), s.executor_or_default().to_string());
    // where the clients run and the emulated link: what tells two TCP servers apart
    if let Some(c) = &s.client {
        flat.insert("client".into(), c.clone());
    }
    if let Some(l) = &s.link {
        let parts: Vec<String> = [("rate", &l.rate), ("delay", &l.delay)]
            .into_iter()
            .filter_map(|(k, v)| v.as_ref().map(|v| format!("{k} {v}")))
            .collect();
        flat.insert("link".into(), parts.join(", "));
    }
    if let Some(c) = &s.cpus {
        flat.insert("cpus".into(), c.clone());
    }
    if let Some(m) = s.memory {
        flat.insert("memory".into(), m.to_string());
    }
    // a server measured with a profiler on differs from the one without in that alone
    if let Some(p) = &s.profile {
        flat.insert("profile".into(), p.clone());
    }
    flat
}

/// Settings that differ between the servers: `(setting, [(server, value)])`.
fn differing_settings(trials: &[TrialPoint]) -> Vec<(String, Vec<(String, String)>)> {
    let mut by_server: BTreeMap<&str, BTreeMap<String, String>> = BTreeMap::new();
    let mut order: Vec<&str> = Vec::new();
    for t in trials {
        let Some(s) = &t.settings else { continue };
        if !order.contains(&t.server.as_str()) {
            order.push(&t.server);
        }
        by_server
            .entry(&t.server)
            .or_insert_with(|| flat_settings(s));
    }
    let names: BTreeSet<&String> = by_server.values().flat_map(|m| m.keys()).collect();
    let mut out = Vec::new();
    for name in names {
        let values: Vec<(String, String)> = order
            .iter()
            .map(|s| {
                (
                    s.to_string(),
                    by_server[s]
                        .get(name)
                        .cloned()
                        .unwrap_or_else(|| "(unset)".into()),
                )
            })
            .collect();
        let distinct: BTreeSet<&String> = values.iter().map(|(_, v)| v).collect();
        if distinct.len() > 1 {
            out.push((name.clone(), values));
        }
    }
    out
}

/// The data's quality, each fact once: the noisy cells (one line per cell, however many
/// analyses show it), the drift and outlier flags with their numbers, the machines and the
/// campaigns where a comparison mixes them, and the other work the machine did beside the
/// trials.
fn data_quality(inputs: &Inputs, reused: &BTreeMap<String, String>) -> Vec<Block> {
    let mut noisy = Vec::new();
    let mut seen = BTreeSet::new();
    for (_, table) in &inputs.tables {
        for cell in table.cells.iter().filter(|c| c.noisy) {
            // the same passes under two analyses of one figure are one noisy point; the
            // runs of one set of server starts share their trials but not their values
            let values: Vec<u64> = cell.values.iter().map(|v| v.to_bits()).collect();
            if !seen.insert((table.metric.clone(), cell.trials.clone(), values)) {
                continue;
            }
            let facet = match (&table.facet, &cell.facet) {
                (Some(d), Some(v)) => format!(", {} = {v}", d.name),
                _ => String::new(),
            };
            noisy.push(Item::new(Inline::plain(format!(
                "{}: {} = {}, {} = {}{facet}: CV {} over {} passes",
                table.metric,
                table.rows.name,
                cell.row,
                table.columns.name,
                cell.column,
                cell.summary
                    .cv
                    .map_or("unknown".into(), |cv| format!("{:.1}%", cv * 100.0)),
                cell.summary.n
            ))));
        }
    }
    let mut blocks = Vec::new();
    if noisy.is_empty() {
        blocks.push(Block::Paragraph(Inline::plain(
            "Noisy points: none; every cell's coefficient of variation is within 5%.",
        )));
    } else {
        blocks.push(Block::Paragraph(Inline::plain(
            "Noisy points (⚠: the passes' coefficient of variation is above 5%):",
        )));
        blocks.push(Block::List(noisy));
    }
    let mut flags = Vec::new();
    let mut flagged = BTreeSet::new();
    for (_, table) in &inputs.tables {
        let number = number_format(table);
        let key: Vec<_> = table
            .cells
            .iter()
            .filter(|c| c.drift.is_some() || !c.outliers.is_empty())
            .map(|c| c.trials.clone())
            .collect();
        if key.is_empty() || !flagged.insert((table.metric.clone(), key)) {
            continue;
        }
        for line in flags_markdown(table, &number).lines() {
            if !line.is_empty() {
                flags.push(Item::new(Inline::ticked(&format!(
                    "{}: {line}",
                    table.metric
                ))));
            }
        }
    }
    if !flags.is_empty() {
        blocks.push(Block::List(flags));
    }
    let mut facts = measured_in(&inputs.trials, reused);
    facts.extend(crate::report_other_work::other_work(&inputs.trials));
    if trial_points::machine_classes(&inputs.trials) > 1 {
        facts.push(Item::new(Inline::plain(machines_of_blocks(&inputs.trials))));
    }
    if !facts.is_empty() {
        blocks.push(Block::List(facts));
    }
    blocks
}

/// The trials measured on several classes of machine: which blocks each class measured, and
/// whether a block mixes them (a study measured in parts, one sitting per block, mixes
/// none, and its tables and claims within a block each stay on one machine).
fn machines_of_blocks(trials: &[TrialPoint]) -> String {
    let mut by_class: BTreeMap<String, BTreeSet<&str>> = BTreeMap::new();
    let mut classes_of_block: BTreeMap<&str, BTreeSet<String>> = BTreeMap::new();
    for t in trials {
        let fp: Option<cairn_graph::Fingerprint> =
            serde_json::from_value(t.fingerprint.clone()).ok();
        let class = match &fp {
            Some(fp) => format!(
                "{} (`{}`)",
                cairn_report::machine::machine_line(&t.fingerprint),
                cairn_graph::fingerprint::class_id(fp)
            ),
            None => cairn_report::machine::machine_line(&t.fingerprint),
        };
        by_class.entry(class.clone()).or_default().insert(&t.trials);
        classes_of_block.entry(&t.trials).or_default().insert(class);
    }
    let each: Vec<String> = by_class
        .iter()
        .map(|(class, blocks)| {
            let blocks: Vec<&str> = blocks.iter().copied().collect();
            format!("{} on {class}", blocks.join(", "))
        })
        .collect();
    let mixed: Vec<&str> = classes_of_block
        .iter()
        .filter(|(_, c)| c.len() > 1)
        .map(|(b, _)| *b)
        .collect();
    let within = if mixed.is_empty() {
        "each trials block on one: a comparison within a block is of one machine's passes, one across blocks measured on two machines is inconclusive".to_string()
    } else {
        format!(
            "and {} mixed machines: their comparisons are inconclusive",
            mixed.join(", ")
        )
    };
    format!(
        "⚠ the trials were measured on {} classes of machine, {within}: {}",
        by_class.len(),
        each.join("; ")
    )
}

/// Where a trials block's passes were measured — its campaigns (study, run, boot) — for a
/// block declared `measured-by` another study (reuse the plan chose) or measured in more
/// than one campaign (its comparisons say they are not measured together).
fn measured_in(trials: &[TrialPoint], reused: &BTreeMap<String, String>) -> Vec<Item> {
    let mut by_block: BTreeMap<&str, BTreeMap<&str, usize>> = BTreeMap::new();
    for t in trials {
        *by_block
            .entry(t.trials.as_str())
            .or_default()
            .entry(t.campaign.as_str())
            .or_default() += 1;
    }
    by_block
        .into_iter()
        .filter(|(block, campaigns)| reused.contains_key(*block) || campaigns.len() > 1)
        .map(|(block, campaigns)| {
            let mut text = Inline::plain("trials ").code(block);
            if let Some(study) = reused.get(block) {
                text = text
                    .text(": declared reuse (")
                    .code(format!("measured-by \"{study}\""))
                    .text(format!("): study {study}'s measurements, not this study's"));
            }
            let list: Vec<String> = campaigns
                .iter()
                .map(|(c, n)| format!("{n} in {c}"))
                .collect();
            Item::new(text.text(format!("; measured {}", list.join(", "))))
        })
        .collect()
}

/// Where the figures come from: the plan (if known), cairn's version, the machines, each
/// server's image, version and allocator as verified.
fn provenance(
    trials: &[TrialPoint],
    design: &[TrialsDesign],
    plan: Option<&PlanSource>,
) -> Vec<Item> {
    let mut items = Vec::new();
    if let Some(plan) = plan {
        items.push(Item::new(
            Inline::plain("plan: ")
                .code(&plan.root)
                .text(", blake3 ")
                .code(&plan.digest),
        ));
    }
    items.push(Item::new(Inline::plain(format!(
        "cairn {}",
        env!("CARGO_PKG_VERSION")
    ))));
    let fingerprints: BTreeSet<(String, Option<String>)> = trials
        .iter()
        .filter(|t| !t.fingerprint.is_null())
        .map(|t| {
            // the class's short id, which `--measured-on` takes
            let id = serde_json::from_value(t.fingerprint.clone())
                .ok()
                .map(|f| cairn_graph::fingerprint::class_id(&f));
            (cairn_report::machine::machine_line(&t.fingerprint), id)
        })
        .collect();
    for (line, id) in &fingerprints {
        let mut text = Inline::plain(format!("machine: {line}"));
        if let Some(id) = id {
            text = text.text(", class ").code(id);
        }
        items.push(Item::new(text));
    }
    let mut seen = BTreeSet::new();
    for t in trials {
        if !seen.insert(t.server.clone()) {
            continue;
        }
        let image = t.image.get("reference").and_then(Value::as_str);
        let image_id = t.image.get("image_id").and_then(Value::as_str);
        let version = t.variant.pointer("/checks/version").and_then(Value::as_str);
        let malloc = t
            .variant
            .pointer("/checks/malloc_library")
            .and_then(Value::as_str);
        let allocator = t.variant.get("allocator").and_then(Value::as_str);
        let mut text = Inline::plain("server ").code(&t.server).text(format!(
            ": version {} (as the server reported it), allocator {}",
            version.unwrap_or("unknown"),
            allocator.unwrap_or("unknown"),
        ));
        if let Some(m) = malloc {
            text = text.text(" (server reports ").code(m).text(")");
        }
        let mut item = Item::new(text);
        let short = |id: &str| id.get(..19).unwrap_or(id).to_string();
        item.sub_items.push(
            Inline::plain("image ")
                // the tag is the image step's key: its first 12 hex name it, as keys do
                .code(image.map_or("-".into(), |r| match r.rsplit_once(':') {
                    Some((name, tag)) => format!("{name}:{}", tag.get(..12).unwrap_or(tag)),
                    None => r.to_string(),
                }))
                .text(" (engine id ")
                .code(image_id.map_or("not recorded".into(), short))
                .text(")"),
        );
        if let Some(words) = design.iter().find_map(|b| b.images.get(&t.server)) {
            item.sub_items.push(Inline::plain(words.clone()));
        }
        items.push(item);
    }
    items
}

#[cfg(test)]
mod parameter_tests {
    use super::*;
    use cairn_report::document::Span;

    fn words(item: &Item) -> String {
        item.text
            .0
            .iter()
            .map(|s| match s {
                Span::Text(t) => t.clone(),
                Span::Code(c) => format!("`{c}`"),
                _ => String::new(),
            })
            .collect()
    }

    #[test]
    fn a_host_setting_at_one_value_is_a_setting_of_the_design() {
        let w = cairn_defs::WorkloadDef {
            params: serde_json::json!({"threads": 1})
                .as_object()
                .unwrap()
                .clone(),
            ..Default::default()
        };
        let matrix = BTreeMap::from([
            ("threads", vec!["1".to_string()]),
            ("io-scheduler", vec!["none".to_string()]),
            ("vm.swappiness", vec!["1".to_string(), "60".to_string()]),
        ]);
        assert_eq!(fixed_factors(&matrix, &w), ["io-scheduler = none"]);
    }

    #[test]
    fn the_design_says_where_each_cpu_count_put_the_server_and_its_clients() {
        let point = |count: u32, server: &str, clients: &str| TrialPoint {
            cpus: serde_json::json!({
                "count": count, "server": server, "server_affinity": server, "clients": clients,
            }),
            ..Default::default()
        };
        let (one, two, again) = (
            point(1, "0", "1"),
            point(2, "0-1", "shared"),
            point(1, "0", "1"),
        );
        let item = Item::new(cpu_placement_words(&[&two, &one, &again]).unwrap());
        assert_eq!(
            words(&item),
            "CPUs: at cpus = 1 the server on CPU 0, the clients on CPU 1; at cpus = 2 the server on CPUs 0-1, the clients sharing them (no CPU left over)."
        );
        assert!(cpu_placement_words(&[&TrialPoint::default()]).is_none());
        // `clients="with-server"`: the clients pinned to the server's own CPUs
        let (alone, both) = (point(1, "0", "0"), point(2, "0-1", "0-1"));
        let item = Item::new(cpu_placement_words(&[&alone, &both]).unwrap());
        assert_eq!(
            words(&item),
            "CPUs: at cpus = 1 the server on CPU 0, the clients with it on CPU 0; at cpus = 2 the server on CPUs 0-1, the clients with it on CPUs 0-1."
        );
    }

    #[test]
    fn the_design_names_each_parameter_and_whether_it_was_its_default() {
        assert!(parameters_item(&BTreeMap::new()).is_none());
        let params = BTreeMap::from([
            (
                "scale".to_string(),
                ParamValue {
                    value: "tiny".into(),
                    default: "tiny".into(),
                },
            ),
            (
                "threads".to_string(),
                ParamValue {
                    value: "1 2 4 8".into(),
                    default: "1 4".into(),
                },
            ),
        ]);
        let item = parameters_item(&params).unwrap();
        assert_eq!(
            words(&item),
            "Parameters: scale = `tiny` (default), threads = `1 2 4 8` (default `1 4`)"
        );
    }
}
