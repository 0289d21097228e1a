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

use std::collections::BTreeMap;

use cairn_defs::ReportDef;
use cairn_graph::Step;
use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::analysis_step::TABLE_JSON;
use crate::claim_step::CLAIM_JSON;
use crate::data_csv::{self, DATA_DICTIONARY_MD};
use crate::plot_analysis::{PLOT_PNG, PLOT_SVG, SCALING_JSON};
use crate::profile_analysis::{ProfileFindings, PROFILE_JSON};
use crate::report_document::{build, TrialsDesign};
use crate::series_csv::{self, Samples};
use crate::series_plot::{self, SeriesPlot};
use crate::trial_points::{self, TrialPoint};
use cairn_engine::error::{failed, StepError};
use cairn_engine::execute::{read_json, Built, Done};
use cairn_engine::Env;
use cairn_report::claim::ClaimResult;
use cairn_report::document::{Figure, Report};
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
    /// Each `profile` analysis by name (absent from the data of a study without one).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub profiles: BTreeMap<String, ProfileFindings>,
}

/// A `profile` analysis as the report shows it: its findings and its flame graphs (each
/// server's, then each variant's against the baseline).
#[derive(Debug, Clone)]
pub struct ProfileShown {
    pub name: String,
    pub findings: ProfileFindings,
    pub figures: Vec<Figure>,
}

/// The plan a report was made from, for its provenance: the plan's root file and the
/// blake3 over its files.
pub struct PlanSource {
    pub root: String,
    pub digest: String,
}

/// The report's inputs, read: tables by analysis name, claims by text (declaration order).
pub struct Inputs {
    pub tables: Vec<(String, Table)>,
    /// The charts of plot and scaling analyses, in the tables' order.
    pub figures: Vec<Figure>,
    /// The charts' files as the report writes them beside itself: file name → blob.
    pub figure_files: BTreeMap<String, BlobRef>,
    /// The efficiencies of scaling analyses, by analysis name.
    pub scalings: Vec<(String, Scaling)>,
    pub claims: Vec<(String, ClaimResult)>,
    pub trials: Vec<TrialPoint>,
    /// How each trials block was measured, for the design section.
    pub design: Vec<TrialsDesign>,
    /// The trials' per-interval samples, by record key (`series.csv`).
    pub samples: Samples,
    /// Throughput over time, a chart per point ([`series_plot`]), each with its SVG.
    pub series_plots: Vec<(SeriesPlot, Figure)>,
    /// The `profile` analyses, in the report's order.
    pub profiles: Vec<ProfileShown>,
}

fn read_inputs(store: &Store, step: &Step, inputs: &[&Done]) -> Result<Inputs, StepError> {
    let mut tables = Vec::new();
    let mut claims = Vec::new();
    let mut figures = Vec::new();
    let mut figure_files = BTreeMap::new();
    let mut scalings = Vec::new();
    let mut profiles = Vec::new();
    for (input, done) in step.inputs.iter().zip(inputs) {
        if let Some(text) = input.mount.strip_prefix("claim/") {
            let c: ClaimResult = read_json(store, &done.outputs, CLAIM_JSON)
                .map_err(|e| failed(format!("reading claim `{text}`: {e}")))?;
            claims.push((text.to_string(), c));
        } else if done.outputs.contains_key(PROFILE_JSON) {
            profiles.push(read_profile(
                store,
                &input.mount,
                &done.outputs,
                &mut figure_files,
            )?);
        } else if !input.mount.starts_with("trial/") {
            let t: Table = read_json(store, &done.outputs, TABLE_JSON)
                .map_err(|e| failed(format!("reading analysis `{}`: {e}", input.mount)))?;
            // a faceted table is shown, headlined and written to data.json per facet
            for (facet, part) in t.faceted() {
                match facet {
                    Some(f) => tables.push((format!("{}, {f}", input.mount), part)),
                    None => tables.push((input.mount.clone(), part)),
                }
            }
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
    let design = crate::report_document::design_of(store, &trials);
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
        profiles,
        design,
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

/// The findings and flame graphs of `profile` analysis `name`; each graph goes beside the
/// report as `profile-<name>-<its file>` (added to `files`).
fn read_profile(
    store: &Store,
    name: &str,
    outputs: &BTreeMap<String, BlobRef>,
    files: &mut BTreeMap<String, BlobRef>,
) -> Result<ProfileShown, StepError> {
    let findings: ProfileFindings = read_json(store, outputs, PROFILE_JSON)
        .map_err(|e| failed(format!("reading analysis `{name}`: {e}")))?;
    let graphs = findings
        .servers
        .iter()
        .map(|s| (format!("{}: where its CPU time went", s.server), &s.flame))
        .chain(findings.variants.iter().map(|v| {
            (
                format!("{} against {}", v.variant, findings.baseline),
                &v.flame,
            )
        }));
    let mut figures = Vec::new();
    for (caption, flame) in graphs {
        let Some(blob) = outputs.get(flame.as_str()) else {
            return Err(failed(format!(
                "analysis `{name}` names its flame graph {flame} but has no such output"
            )));
        };
        let svg = store
            .read_blob(blob)
            .map_err(|e| failed(format!("reading {flame} of `{name}`: {e}")))?;
        let file = format!("profile-{}-{flame}", file_stem(name));
        files.insert(file.clone(), blob.clone());
        figures.push(Figure {
            name: caption,
            svg: String::from_utf8_lossy(&svg).into_owned(),
            files: vec![file],
        });
    }
    Ok(ProfileShown {
        name: name.to_string(),
        findings,
        figures,
    })
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
        design: Vec::new(),
        samples: Samples::new(),
        series_plots: Vec::new(),
        profiles: Vec::new(),
    };
    markdown::render(&build(title, &inputs, None, &ReportDef::default()))
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
    Ok(build(&def.title, &inputs, Some(plan), &def))
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
        let report = build(&def.title, &read, None, &def);
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
            profiles,
            ..
        } = read;
        let data = ReportData {
            title: def.title,
            trials,
            tables: tables.into_iter().collect(),
            claims: claims.into_iter().collect(),
            profiles: profiles.into_iter().map(|p| (p.name, p.findings)).collect(),
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
                "{}, {}, {}",
                count(data.tables.len(), "table"),
                count(data.claims.len(), "claim"),
                count(data.trials.len(), "trial")
            )),
        );
        Ok(Built {
            outputs,
            extra,
            ..Default::default()
        })
    }
}

/// `1 claim`, `2 claims`: a count and its noun (a regular plural).
fn count(n: usize, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}
