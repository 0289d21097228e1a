//! Report steps (`report` nodes): the study's tables, claims with their verdicts, the noisy
//! points and the provenance of every figure, built as one document
//! ([`cairn_report::document`]) and rendered once each as `report.md`
//! ([`cairn_report::markdown`]) and as one self-contained page, `report.html`
//! ([`cairn_report::html`], charts inline); the data behind it as `data.csv` (one row per
//! trial: its facts, every parameter and figure; [`crate::data_csv`]) with its
//! `data-dictionary.md`, and `data.json`, each chart of its `plot`/`scaling`
//! analyses as `plot-<name>.svg` and `.png`, and the trials' per-second samples as
//! `series.csv` ([`crate::series_csv`]) and, a chart per matrix point, as throughput over
//! time (`plot-series-<block>-<point>.svg` and `.png`, [`crate::series_plot`]).
//!
//! Deterministic and cached like an analysis: the step reads its analyses' and claims'
//! outputs and the study's trial records, so it re-renders exactly when one of them
//! changes, and renders the same bytes every time. Names come from the inputs' mounts (an
//! analysis's name, a claim's text), the title from the report's definition.
//! `cairn report` copies the outputs to `results/<study>/`, the report rendered again with
//! the plan it was made from in its provenance ([`exported`]): the step's key leaves the
//! plan's text out on purpose, so what the step stores goes without it.

use std::collections::{BTreeMap, BTreeSet};

use cairn_defs::ReportDef;
use cairn_graph::Step;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use crate::analysis_step::TABLE_JSON;
use crate::claim_step::CLAIM_JSON;
use crate::data_csv::{self, DATA_DICTIONARY_MD};
use crate::plot_analysis::{PLOT_PNG, PLOT_SVG, SCALING_JSON};
use crate::series_csv::{self, Samples};
use crate::series_plot::{self, SeriesPlot};
use crate::trial_points::{self, display_value, TrialPoint};
use cairn_engine::error::{failed, StepError};
use cairn_engine::execute::{read_json, Built, Done};
use cairn_engine::Env;
use cairn_report::claim::ClaimResult;
use cairn_report::document::{Block, Figure, Inline, Item, Report, Section};
use cairn_report::scaling::Scaling;
use cairn_report::table::Table;
use cairn_report::{html as report_html, markdown};
use cairn_store::{BlobRef, Store};

/// Outputs of a report.
pub const REPORT_MD: &str = "report.md";
pub const DATA_CSV: &str = "data.csv";
pub const DATA_JSON: &str = "data.json";
pub const REPORT_HTML: &str = "report.html";
pub const SERIES_CSV: &str = "series.csv";

/// What `data.json` holds.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ReportData {
    pub title: String,
    /// Every trial the study has, in the graph's order.
    pub trials: Vec<TrialPoint>,
    /// Each table analysis by name.
    pub tables: BTreeMap<String, Table>,
    /// Each claim by its text.
    pub claims: BTreeMap<String, ClaimResult>,
}

/// The plan a report was made from, for its provenance: the plan's root file and the
/// blake3 over its files.
pub struct PlanSource {
    pub root: String,
    pub digest: String,
}

/// The report's inputs, read: tables by analysis name, claims by text (declaration order).
struct Inputs {
    tables: Vec<(String, Table)>,
    /// The charts of plot and scaling analyses, in the tables' order.
    figures: Vec<Figure>,
    /// The charts' files as the report writes them beside itself: file name → blob.
    figure_files: BTreeMap<String, BlobRef>,
    /// The efficiencies of scaling analyses, by analysis name.
    scalings: Vec<(String, Scaling)>,
    claims: Vec<(String, ClaimResult)>,
    trials: Vec<TrialPoint>,
    /// The trials' per-interval samples, by record key (`series.csv`).
    samples: Samples,
    /// Throughput over time, a chart per point ([`series_plot`]), each with its SVG.
    series_plots: Vec<(SeriesPlot, Figure)>,
}

fn read_inputs(store: &Store, step: &Step, inputs: &[&Done]) -> Result<Inputs, StepError> {
    let mut tables = Vec::new();
    let mut claims = Vec::new();
    let mut figures = Vec::new();
    let mut figure_files = BTreeMap::new();
    let mut scalings = Vec::new();
    for (input, done) in step.inputs.iter().zip(inputs) {
        if let Some(text) = input.mount.strip_prefix("claim/") {
            let c: ClaimResult = read_json(store, &done.outputs, CLAIM_JSON)
                .map_err(|e| failed(format!("reading claim `{text}`: {e}")))?;
            claims.push((text.to_string(), c));
        } else if !input.mount.starts_with("trial/") {
            let t: Table = read_json(store, &done.outputs, TABLE_JSON)
                .map_err(|e| failed(format!("reading analysis `{}`: {e}", input.mount)))?;
            tables.push((input.mount.clone(), t));
            if done.outputs.contains_key(PLOT_SVG) {
                figures.push(read_figure(
                    store,
                    &input.mount,
                    &done.outputs,
                    &mut figure_files,
                )?);
            }
            if done.outputs.contains_key(SCALING_JSON) {
                let sc: Scaling = read_json(store, &done.outputs, SCALING_JSON)
                    .map_err(|e| failed(format!("reading analysis `{}`: {e}", input.mount)))?;
                scalings.push((input.mount.clone(), sc));
            }
        }
    }
    let trials = trial_points::read(store, step, inputs)?;
    let samples = series_csv::read(store, step, inputs);
    let series_plots = series_plot::plots(&trials, &samples)
        .into_iter()
        .map(|plot| {
            let svg = cairn_report::time_chart::svg(&plot.chart)
                .map_err(|e| failed(format!("drawing {}: {e}", plot.stem)))?;
            let figure = Figure {
                name: plot.caption.clone(),
                svg,
                files: vec![format!("{}.svg", plot.stem), format!("{}.png", plot.stem)],
            };
            Ok((plot, figure))
        })
        .collect::<Result<_, StepError>>()?;
    Ok(Inputs {
        tables,
        figures,
        figure_files,
        scalings,
        claims,
        trials,
        samples,
        series_plots,
    })
}

/// The chart of analysis `name` (whose outputs are `outputs`): its SVG, shown inline in
/// report.html, and the files it goes to beside the report (added to `files`).
fn read_figure(
    store: &Store,
    name: &str,
    outputs: &BTreeMap<String, BlobRef>,
    files: &mut BTreeMap<String, BlobRef>,
) -> Result<Figure, StepError> {
    let stem = format!("plot-{}", file_stem(name));
    let mut names = Vec::new();
    for (output, ext) in [(PLOT_SVG, "svg"), (PLOT_PNG, "png")] {
        if let Some(blob) = outputs.get(output) {
            let file = format!("{stem}.{ext}");
            files.insert(file.clone(), blob.clone());
            names.push(file);
        }
    }
    let svg = store
        .read_blob(&outputs[PLOT_SVG])
        .map_err(|e| failed(format!("reading the chart of `{name}`: {e}")))?;
    Ok(Figure {
        name: name.to_string(),
        svg: String::from_utf8_lossy(&svg).into_owned(),
        files: names,
    })
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
        if let Some(c) = &s.cpus {
            flat.insert("cpus".into(), c.clone());
        }
        if let Some(m) = s.memory {
            flat.insert("memory".into(), m.to_string());
        }
        by_server.entry(&t.server).or_insert(flat);
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

/// `report.md` of tables, claims and trials alone (no charts, no scaling analyses), as the
/// step renders it.
pub fn render(
    title: &str,
    tables: &[(String, Table)],
    claims: &[(String, ClaimResult)],
    trials: &[TrialPoint],
) -> String {
    let inputs = Inputs {
        tables: tables.to_vec(),
        figures: Vec::new(),
        figure_files: BTreeMap::new(),
        scalings: Vec::new(),
        claims: claims.to_vec(),
        trials: trials.to_vec(),
        samples: Samples::new(),
        series_plots: Vec::new(),
    };
    markdown::render(&build(title, &inputs, None, &BTreeMap::new()))
}

/// The report of `step` as `cairn report` exports it: built again from its inputs (`inputs`,
/// as the step had them) under the title of its definition, with `plan` first under its
/// provenance.
pub fn exported(
    store: &Store,
    step: &Step,
    inputs: &[&Done],
    plan: &PlanSource,
) -> Result<Report, StepError> {
    let def = step.def::<ReportDef>().map_err(failed)?;
    let inputs = read_inputs(store, step, inputs)?;
    Ok(build(&def.title, &inputs, Some(plan), &def.reused))
}

/// The report: the summary, then the plots, the tables, the scaling analyses, the claims
/// (each section only if there is something in it), the noisy points and the provenance
/// (`plan` first, if known).
fn build(
    title: &str,
    inputs: &Inputs,
    plan: Option<&PlanSource>,
    reused: &BTreeMap<String, String>,
) -> Report {
    let section = |heading: &str, blocks: Vec<Block>| Section {
        heading: heading.to_string(),
        anchor: None,
        blocks,
    };
    let mut sections = Vec::new();
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
    if !inputs.tables.is_empty() {
        let tables = inputs.tables.iter().map(|(name, table)| Block::Table {
            name: name.clone(),
            table: table.clone(),
        });
        sections.push(section("Tables", tables.collect()));
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
    if !inputs.claims.is_empty() {
        sections.push(section(
            "Claims",
            vec![Block::Claims(inputs.claims.clone())],
        ));
    }
    sections.push(section("Noisy points", vec![noisy_points(&inputs.tables)]));
    sections.push(Section {
        heading: "Provenance".into(),
        anchor: Some("provenance".into()),
        blocks: vec![
            Block::List(provenance(&inputs.trials, plan, reused)),
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
        summary: summary(&inputs.trials),
        sections,
    }
}

/// The paragraph under the title: how many trials of which servers, and how to read the
/// figures.
fn summary(trials: &[TrialPoint]) -> Inline {
    let mut servers: Vec<&str> = Vec::new();
    for t in trials {
        if !servers.contains(&t.server.as_str()) {
            servers.push(&t.server);
        }
    }
    Inline::plain(format!(
        "{} trials of {} server{} ({}){}. Medians of the passes; ratios are variant / baseline with a 95% bootstrap CI; verdicts follow cairn-analysis's rules (a rank test and the CI must agree; the rank test needs at least {} passes per side to reach p < 0.05).",
        trials.len(),
        servers.len(),
        if servers.len() == 1 { "" } else { "s" },
        servers.join(", "),
        passes_per_cell(trials),
        fewest_passes_for(0.05),
    ))
}

/// `, 4 to 9 passes per cell`: the fewest and most passes of a server at one point, from
/// the trials themselves (empty when there are none).
fn passes_per_cell(trials: &[TrialPoint]) -> String {
    let mut cells: BTreeMap<(String, String), usize> = BTreeMap::new();
    for t in trials {
        let point = serde_json::to_string(&t.params).unwrap_or_default();
        *cells.entry((t.server.clone(), point)).or_default() += 1;
    }
    let (Some(lo), Some(hi)) = (cells.values().min(), cells.values().max()) else {
        return String::new();
    };
    let plural = |n: usize| if n == 1 { "" } else { "es" };
    if lo == hi {
        format!(", {lo} pass{} per cell", plural(*lo))
    } else {
        format!(", {lo} to {hi} passes per cell")
    }
}

/// The fewest passes per side at which the rank test's smallest p (no ties) is below `alpha`.
fn fewest_passes_for(alpha: f64) -> usize {
    (1..100)
        .find(|&n| cairn_analysis::rank_test::min_p_without_ties(n, n) < alpha)
        .unwrap_or(100)
}

/// Every noisy cell of every table, or a sentence saying there is none.
fn noisy_points(tables: &[(String, Table)]) -> Block {
    let mut items = Vec::new();
    for (name, table) in tables {
        for cell in table.cells.iter().filter(|c| c.noisy) {
            items.push(Item::new(Inline::plain(format!(
                "{name}: {} = {}, {} = {}: CV {} over {} passes",
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
    if items.is_empty() {
        Block::Paragraph(Inline::plain(
            "None: every cell's coefficient of variation is within 5%.",
        ))
    } else {
        Block::List(items)
    }
}

/// Where the figures come from: the plan (if known), cairn's version, the machines, each
/// server's image, version and allocator, and the settings that differ between servers.
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

fn provenance(
    trials: &[TrialPoint],
    plan: Option<&PlanSource>,
    reused: &BTreeMap<String, String>,
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
    let fingerprints: BTreeSet<String> = trials
        .iter()
        .filter(|t| !t.fingerprint.is_null())
        .map(|t| cairn_report::machine::machine_line(&t.fingerprint))
        .collect();
    for f in &fingerprints {
        items.push(Item::new(Inline::plain(format!("machine: {f}"))));
    }
    if fingerprints.len() > 1 {
        items.push(Item::new(Inline::plain(
            "⚠ the trials were measured on more than one machine",
        )));
    }
    items.extend(measured_in(trials, reused));
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
            ": image {} ({}), version {}, allocator {}",
            image.unwrap_or("-"),
            image_id.unwrap_or("no digest recorded"),
            version.unwrap_or("unknown"),
            allocator.unwrap_or("unknown"),
        ));
        if let Some(m) = malloc {
            text = text.text(" (server reports ").code(m).text(")");
        }
        items.push(Item::new(text));
    }
    let differing = differing_settings(trials);
    if differing.is_empty() {
        items.push(Item::new(Inline::plain(
            "server settings: the same for every server",
        )));
    } else {
        let mut item = Item::new(Inline::plain("server settings that differ:"));
        for (name, values) in differing {
            let mut text = Inline::plain(format!("{name}: "));
            for (i, (server, value)) in values.iter().enumerate() {
                let separator = if i == 0 { "" } else { ", " };
                text = text.text(format!("{separator}{server} = ")).code(value);
            }
            item.sub_items.push(text);
        }
        items.push(item);
    }
    items
}

/// An analysis's name as a file name: letters, digits, `-` and `_` kept, the rest `_`.
pub fn file_stem(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// The kind of `report` steps.
pub struct ReportKind;

impl cairn_engine::Kind for ReportKind {
    fn perform(
        &self,
        env: &Env<'_>,
        step: &Step,
        _key: &str,
        inputs: &[&Done],
    ) -> Result<Built, StepError> {
        let read = read_inputs(env.store, step, inputs)?;
        let def = step.def::<ReportDef>().map_err(failed)?;
        let report = build(&def.title, &read, None, &def.reused);
        let md = markdown::render(&report);
        let html = report_html::render(&report);
        let csv = data_csv::data_csv(&read.trials);
        let dictionary = data_csv::data_dictionary(&read.trials);
        let series = series_csv::render(&read.trials, &read.samples);
        let Inputs {
            tables,
            figure_files,
            claims,
            trials,
            series_plots,
            ..
        } = read;
        let data = ReportData {
            title: def.title,
            trials,
            tables: tables.into_iter().collect(),
            claims: claims.into_iter().collect(),
        };
        let json = serde_json::to_vec_pretty(&data).expect("serialises");
        let put = |bytes: &[u8], name: &str| {
            env.store
                .put_blob(bytes)
                .map_err(|e| failed(format!("storing {name}: {e}")))
        };
        let mut outputs = BTreeMap::from([
            (REPORT_MD.to_string(), put(md.as_bytes(), REPORT_MD)?),
            (REPORT_HTML.to_string(), put(html.as_bytes(), REPORT_HTML)?),
            (DATA_CSV.to_string(), put(csv.as_bytes(), DATA_CSV)?),
            (
                DATA_DICTIONARY_MD.to_string(),
                put(dictionary.as_bytes(), DATA_DICTIONARY_MD)?,
            ),
            (SERIES_CSV.to_string(), put(series.as_bytes(), SERIES_CSV)?),
            (DATA_JSON.to_string(), put(&json, DATA_JSON)?),
        ]);
        outputs.extend(figure_files);
        for (plot, figure) in &series_plots {
            let png = cairn_report::time_chart::png(&plot.chart)
                .map_err(|e| failed(format!("drawing {}: {e}", plot.stem)))?;
            for (file, bytes) in figure.files.iter().zip([figure.svg.as_bytes(), &png]) {
                outputs.insert(file.clone(), put(bytes, file)?);
            }
        }
        let mut extra = serde_json::Map::new();
        extra.insert(
            "headline".into(),
            json!(format!(
                "{} tables, {} claims, {} trials",
                data.tables.len(),
                data.claims.len(),
                data.trials.len()
            )),
        );
        Ok(Built {
            outputs,
            extra,
            ..Default::default()
        })
    }
}
