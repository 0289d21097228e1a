//! Report steps (`report` nodes): the study's tables, claims with their verdicts, the noisy
//! points and the provenance of every figure, as `report.md`, plus the data behind it as
//! `data.csv` (one row per trial: every parameter and figure) and `data.json`; the same as one
//! self-contained page, `report.html` ([`cairn_report::html`], charts inline), each chart of
//! its `plot`/`scaling` analyses as `plot-<name>.svg` and `.png`, and the trials' per-second
//! samples as `series.csv` ([`crate::series_csv`]).
//!
//! Deterministic and cached like an analysis: the step reads its analyses' and claims'
//! outputs and the study's trial records, so it re-renders exactly when one of them
//! changes, and renders the same bytes every time. Names come from the inputs' mounts (an
//! analysis's name, a claim's text), the title from the report's definition.
//! `cairn report` copies the outputs to `results/<study>/`.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use cairn_defs::ReportDef;
use cairn_graph::Step;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use crate::analysis_step::TABLE_JSON;
use crate::claim_step::CLAIM_JSON;
use crate::plot_analysis::{PLOT_PNG, PLOT_SVG, SCALING_JSON};
use crate::series_csv;
use crate::trial_points::{self, display_value, TrialPoint};
use cairn_engine::error::{failed, StepError};
use cairn_engine::execute::{read_json, Built, Done};
use cairn_engine::Env;
use cairn_report::claim::{claim_line, ClaimResult};
use cairn_report::html as report_html;
use cairn_report::scaling::{scaling_markdown, Scaling};
use cairn_report::table::{render_markdown, Table};

/// Outputs of a report.
pub const REPORT_MD: &str = "report.md";
pub const DATA_CSV: &str = "data.csv";
pub const DATA_JSON: &str = "data.json";
pub const REPORT_HTML: &str = "report.html";
pub const SERIES_CSV: &str = "series.csv";

pub use cairn_report::PROVENANCE_HEADING;

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

/// The report's inputs, read: tables by analysis name, claims by text (declaration order).
struct Inputs {
    tables: Vec<(String, Table)>,
    /// The charts of plot and scaling analyses: (analysis name, its outputs).
    plots: Vec<(String, BTreeMap<String, cairn_store::BlobRef>)>,
    /// The efficiencies of scaling analyses, by analysis name.
    scalings: Vec<(String, Scaling)>,
    claims: Vec<(String, ClaimResult)>,
    trials: Vec<TrialPoint>,
}

fn read_inputs(env: &Env<'_>, step: &Step, inputs: &[&Done]) -> Result<Inputs, StepError> {
    let mut tables = Vec::new();
    let mut claims = Vec::new();
    let mut plots = Vec::new();
    let mut scalings = Vec::new();
    for (input, done) in step.inputs.iter().zip(inputs) {
        if let Some(text) = input.mount.strip_prefix("claim/") {
            let c: ClaimResult = read_json(env.store, &done.outputs, CLAIM_JSON)
                .map_err(|e| failed(format!("reading claim `{text}`: {e}")))?;
            claims.push((text.to_string(), c));
        } else if !input.mount.starts_with("trial/") {
            let t: Table = read_json(env.store, &done.outputs, TABLE_JSON)
                .map_err(|e| failed(format!("reading analysis `{}`: {e}", input.mount)))?;
            tables.push((input.mount.clone(), t));
            if done.outputs.contains_key(PLOT_SVG) {
                plots.push((input.mount.clone(), done.outputs.clone()));
            }
            if done.outputs.contains_key(SCALING_JSON) {
                let sc: Scaling = read_json(env.store, &done.outputs, SCALING_JSON)
                    .map_err(|e| failed(format!("reading analysis `{}`: {e}", input.mount)))?;
                scalings.push((input.mount.clone(), sc));
            }
        }
    }
    let trials = trial_points::read(env.store, step, inputs)?;
    Ok(Inputs {
        tables,
        plots,
        scalings,
        claims,
        trials,
    })
}

/// Every trial as CSV: address, trials, server, pass, key, then every parameter and every
/// figure any trial has (in name order); an absent value is empty.
pub fn data_csv(trials: &[TrialPoint]) -> String {
    let params: BTreeSet<&str> = trials
        .iter()
        .flat_map(|t| t.params.keys().map(String::as_str))
        .collect();
    let figures: BTreeSet<&str> = trials.iter().flat_map(|t| t.figures.names()).collect();
    let mut w = csv::Writer::from_writer(Vec::new());
    let mut header: Vec<String> = ["address", "trials", "server", "pass", "key"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    header.extend(params.iter().map(|p| p.to_string()));
    header.extend(figures.iter().map(|f| f.to_string()));
    w.write_record(&header).expect("writes to memory");
    for t in trials {
        let mut line = vec![
            t.address.clone(),
            t.trials.clone(),
            t.server.clone(),
            t.pass.to_string(),
            t.key.clone(),
        ];
        line.extend(
            params
                .iter()
                .map(|p| t.params.get(*p).map_or(String::new(), display_value)),
        );
        line.extend(figures.iter().map(|f| {
            t.figures
                .get_named(f)
                .map_or(String::new(), |v| v.to_string())
        }));
        w.write_record(&line).expect("writes to memory");
    }
    String::from_utf8(w.into_inner().expect("flushes to memory")).expect("UTF-8 fields")
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

/// `report.md`.
pub fn render(
    title: &str,
    tables: &[(String, Table)],
    claims: &[(String, ClaimResult)],
    trials: &[TrialPoint],
) -> String {
    let mut md = String::new();
    let servers: Vec<&str> = {
        let mut s: Vec<&str> = Vec::new();
        for t in trials {
            if !s.contains(&t.server.as_str()) {
                s.push(&t.server);
            }
        }
        s
    };
    let _ = writeln!(md, "# {title}\n");
    let _ = writeln!(
        md,
        "{} trials of {} server{} ({}). Medians of the passes; ratios are variant / baseline with a 95% bootstrap CI; verdicts follow cairn-analysis's rules (a rank test and the CI must agree; with 3 passes per side a rank test cannot decide).\n",
        trials.len(),
        servers.len(),
        if servers.len() == 1 { "" } else { "s" },
        servers.join(", ")
    );
    if !tables.is_empty() {
        md.push_str("## Tables\n\n");
        for (name, table) in tables {
            md.push_str(&render_markdown(name, table));
            md.push('\n');
        }
    }
    if !claims.is_empty() {
        md.push_str("## Claims\n\n");
        for (text, c) in claims {
            let _ = writeln!(md, "- {}", claim_line(text, c));
        }
        md.push('\n');
    }
    md.push_str("## Noisy points\n\n");
    let mut noisy = 0;
    for (name, table) in tables {
        for cell in table.cells.iter().filter(|c| c.noisy) {
            noisy += 1;
            let _ = writeln!(
                md,
                "- {name}: {} = {}, {} = {}: CV {} over {} passes",
                table.rows.name,
                cell.row,
                table.columns.name,
                cell.column,
                cell.summary
                    .cv
                    .map_or("unknown".into(), |cv| format!("{:.1}%", cv * 100.0)),
                cell.summary.n
            );
        }
    }
    if noisy == 0 {
        md.push_str("None: every cell's coefficient of variation is within 5%.\n");
    }
    let _ = writeln!(md, "\n{PROVENANCE_HEADING}\n");
    let _ = writeln!(md, "- cairn {}", env!("CARGO_PKG_VERSION"));
    let fingerprints: BTreeSet<String> = trials
        .iter()
        .filter(|t| !t.fingerprint.is_null())
        .map(|t| fingerprint_line(&t.fingerprint))
        .collect();
    for f in &fingerprints {
        let _ = writeln!(md, "- machine: {f}");
    }
    if fingerprints.len() > 1 {
        md.push_str("- ⚠ the trials were measured on more than one machine\n");
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
        let _ = writeln!(
            md,
            "- server `{}`: image {} ({}), version {}, allocator {}{}",
            t.server,
            image.unwrap_or("-"),
            image_id.unwrap_or("no digest recorded"),
            version.unwrap_or("unknown"),
            allocator.unwrap_or("unknown"),
            malloc.map_or(String::new(), |m| format!(" (server reports `{m}`)"))
        );
    }
    let differing = differing_settings(trials);
    if differing.is_empty() {
        md.push_str("- server settings: the same for every server\n");
    } else {
        md.push_str("- server settings that differ:\n");
        for (name, values) in differing {
            let v: Vec<String> = values.iter().map(|(s, v)| format!("{s} = `{v}`")).collect();
            let _ = writeln!(md, "  - {name}: {}", v.join(", "));
        }
    }
    md.push_str(
        "\nThe data: `data.csv` (one row per trial: every parameter and figure), `series.csv` (per-second samples, long format) and `data.json`.\n",
    );
    md
}

/// report.md with a `## Plots` section before the tables: each chart as an image link to
/// the SVG written beside it (a Markdown viewer shows it).
fn with_plots(md: String, plots: &[report_html::Plot]) -> String {
    if plots.is_empty() {
        return md;
    }
    let mut section = String::from("## Plots\n\n");
    for p in plots {
        let files: Vec<String> = p.files.iter().map(|f| format!("`{f}`")).collect();
        if let Some(svg) = p.files.iter().find(|f| f.ends_with(".svg")) {
            let _ = writeln!(section, "![{}]({svg})\n", p.name);
        }
        let _ = writeln!(section, "{}: {}\n", p.name, files.join(", "));
    }
    match md.find("## Tables") {
        Some(at) => format!("{}{section}{}", &md[..at], &md[at..]),
        None => md + "\n" + &section,
    }
}

/// report.md with a `## Scaling` section after the tables: each scaling analysis's speedup
/// and efficiency against linear scaling, with their CIs.
fn with_scaling(md: String, scalings: &[(String, Scaling)]) -> String {
    if scalings.is_empty() {
        return md;
    }
    let mut section = String::from("## Scaling\n");
    for (name, sc) in scalings {
        let _ = write!(section, "\n{name}:\n{}", scaling_markdown(sc));
    }
    section.push('\n');
    let at = md
        .find("## Claims")
        .or_else(|| md.find("## Noisy points"))
        .unwrap_or(md.len());
    format!("{}{section}{}", &md[..at], &md[at..])
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

fn fingerprint_line(f: &Value) -> String {
    let s = |k: &str| f.get(k).and_then(Value::as_str).unwrap_or("?").to_string();
    let n = |k: &str| f.get(k).and_then(Value::as_u64).unwrap_or(0);
    format!(
        "{}, {} cores / {} threads, {:.1} GiB, kernel {}, {}",
        s("cpu_model"),
        n("cores"),
        n("threads"),
        // records made before the class had the exact bytes
        f.get("memory_gib")
            .and_then(Value::as_u64)
            .map_or(n("memory_bytes") as f64 / (1u64 << 30) as f64, |g| g as f64),
        s("kernel"),
        s("runtime")
    )
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
        let Inputs {
            tables,
            plots,
            scalings,
            claims,
            trials,
        } = read_inputs(env, step, inputs)?;
        let title = step.def::<ReportDef>().map_err(failed)?.title;
        let md = render(&title, &tables, &claims, &trials);
        let csv = data_csv(&trials);
        let series = series_csv::render(&trials, &series_csv::read(env.store, step, inputs));
        // each chart goes beside the report as files, and inline into report.html
        let mut plot_files = BTreeMap::new();
        let mut inline_plots = Vec::new();
        for (name, outputs) in &plots {
            let stem = format!("plot-{}", file_stem(name));
            let mut files = Vec::new();
            for (output, ext) in [(PLOT_SVG, "svg"), (PLOT_PNG, "png")] {
                if let Some(blob) = outputs.get(output) {
                    let file = format!("{stem}.{ext}");
                    plot_files.insert(file.clone(), blob.clone());
                    files.push(file);
                }
            }
            let svg = env
                .store
                .read_blob(&outputs[PLOT_SVG])
                .map_err(|e| failed(format!("reading the chart of `{name}`: {e}")))?;
            inline_plots.push(report_html::Plot {
                name: name.clone(),
                svg: String::from_utf8_lossy(&svg).into_owned(),
                files,
            });
        }
        let md = with_scaling(with_plots(md, &inline_plots), &scalings);
        let html = report_html::render(&title, &md, &tables, &claims, &inline_plots);
        let data = ReportData {
            title,
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
            (SERIES_CSV.to_string(), put(series.as_bytes(), SERIES_CSV)?),
            (DATA_JSON.to_string(), put(&json, DATA_JSON)?),
        ]);
        outputs.extend(plot_files);
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
