//! Analysis steps (`analysis` nodes) of kind `table`: one figure of the trials pivoted rows ×
//! columns (e.g. servers × threads, like the sysbench tables people print), each cell the
//! summary of its passes and, against the baseline server, the ratio of medians with its
//! bootstrap CI and a verdict. Kind `compare` is the same table for a suite's per-operation
//! seconds (sql-bench's `<test>_s` figures): operations × servers, each server's time against
//! the baseline's with the % difference, like the per-test comparisons people print.
//!
//! Deterministic and cached like a build: the step reads only the records of the trials it
//! depends on, so its key changes exactly when one of them does (the engine keys a step by
//! its inputs' output digests). The bootstrap of each cell is seeded from the analysis's
//! definition and the cell's place, never the clock: a re-render is byte-identical.
//!
//! Outputs: `table.json` (every cell: summary, ratio + CI, verdict, the trial keys behind
//! it, a noisy flag) and `table.md` (absolute medians, then ratios with CI and verdicts).
//! `plot` and `scaling` analyses are charts of the same pivot: [`crate::plot_analysis`].

use crate::trial_points::push_unique;
use cairn_engine::CheckError;
use std::collections::BTreeMap;

use cairn_analysis::sequential::{self, Design, Look};
use cairn_analysis::{compare, compare_paired, summarize, BootstrapSettings, Comparison, Criteria};
use cairn_defs::figures::{self, Figure, Figures};
use cairn_defs::AnalysisDef;
use cairn_graph::{Step, StepGraph};
use serde::Serialize;
use serde_json::Value;

use crate::plot_analysis;
use crate::trial_points::{self, Dimensions, TrialPoint};
use cairn_engine::error::{failed, StepError};
use cairn_engine::execute::{Built, Done};
use cairn_engine::Env;
use cairn_report::table::{render_markdown, Cell, Dimension, Follower, Table, NOISY_CV};

/// Outputs of a table analysis.
pub const TABLE_JSON: &str = "table.json";
pub const TABLE_MD: &str = "table.md";

/// The properties a `table` accepts.
const TABLE_PROPS: &[&str] = &["metric", "rows", "columns", "baseline", "paired", "facet"];
/// The properties a `compare` accepts.
const COMPARE_PROPS: &[&str] = &["baseline", "rows"];
/// The rows of a `compare` by default: the operation of a per-operation figure (`insert` of
/// `insert_s`, `insert_insert_key` of `insert_insert_key_s`): each test and each of its
/// operation groups.
pub const OPERATION: &str = "operation";
/// The rows of a `compare rows="test"`: each test's total alone (`insert`, `select`), one
/// row per test as the seeds' tables print them.
pub const TEST: &str = "test";

/// What a `table` analysis asks for, read from its definition.
#[derive(Debug, Clone, PartialEq)]
pub struct TableSpec {
    pub metric: &'static Figure,
    /// The figure's name as the plan wrote it, resolved to the shared name (`tps`).
    pub metric_name: String,
    pub rows: String,
    pub columns: String,
    pub baseline: Option<String>,
    /// A `compare`: every per-operation seconds figure (`<test>_s`) becomes a row.
    pub per_operation: bool,
    /// `paired=#true`: each variant's trial is compared with the baseline's of the same
    /// block (the same pass on the same node), see `cairn_analysis::compare_paired`.
    pub paired: bool,
    /// `facet="cpus"`: one table per value of this parameter.
    pub facet: Option<String>,
    /// Each parameter that varies in the trials but follows one the table shows (a tied
    /// axis: `threads` following `cpus`), with that leader: shown beside the table.
    pub followers: Vec<(String, String)>,
}

/// What a block of a paired table is, in the record's words.
const BLOCKS: &str = "node and pass";

/// The figure `name` names, with a did-you-mean style list when it names none.
pub fn figure_named(
    what: &'static str,
    prop: &str,
    name: &str,
) -> Result<&'static Figure, CheckError> {
    figures::lookup(name).ok_or_else(|| {
        let known: Vec<&str> = figures::TABLE.iter().map(|f| f.name).collect();
        CheckError::new(
            what,
            prop,
            format!(
                "`{name}` is not a figure cairn knows; figures of a table include {}",
                known.join(", ")
            ),
        )
    })
}

/// Read and check a table's definition: the metric is a figure, rows and columns are
/// dimensions of the trials (`server`, `trials` or a parameter), and the baseline is one of
/// the servers. `dims` are what the trials it reads have (from the graph before a run, from
/// their records after).
pub fn table_spec(definition: &AnalysisDef, dims: &Dimensions) -> Result<TableSpec, CheckError> {
    match definition.kind.as_str() {
        "table" => plain_table_spec(definition, dims),
        "compare" => compare_spec(definition, &dims.servers, &dims.params),
        kind => Err(CheckError::new(
            "analysis",
            "kind",
            format!("`{kind}` is not an analysis cairn has (table, compare, plot, scaling)"),
        )),
    }
}

/// Refuses a property an analysis of kind `what` does not take, naming the ones it does
/// (`note`: anything more to say, appended).
pub(crate) fn refuse_unknown_props(
    definition: &AnalysisDef,
    allowed: &[&str],
    what: &str,
    note: &str,
) -> Result<(), CheckError> {
    match definition.unaccepted_prop(allowed) {
        None => Ok(()),
        Some(unknown) => Err(CheckError::new(
            "analysis",
            unknown,
            format!(
                "a {what} has no property `{unknown}`; it takes {}{note}",
                allowed.join(", ")
            ),
        )),
    }
}

/// A `table`: the figure its `metric` names, pivoted `rows` × `columns`, against `baseline`
/// (paired by block with `paired`).
fn plain_table_spec(definition: &AnalysisDef, dims: &Dimensions) -> Result<TableSpec, CheckError> {
    refuse_unknown_props(definition, TABLE_PROPS, "table", "")?;
    let Some(metric_name) = definition.metric() else {
        return Err(CheckError::new(
            "analysis",
            "kind",
            "a table needs the figure it shows: add metric=\"tps\"",
        ));
    };
    let metric = figure_named("analysis", "metric", metric_name)?;
    let facet = facet_of(definition.facet(), &dims.params)?;
    // (columns left out are chosen among the parameters but the facet)
    let shown = [
        Some(definition.rows().unwrap_or("server")),
        definition.columns(),
    ];
    if let Some(f) = facet.as_ref().filter(|f| shown.contains(&Some(f.as_str()))) {
        return Err(CheckError::new(
            "analysis",
            "facet",
            format!("`{f}` is already the table's rows or columns; facet by a third parameter"),
        ));
    }
    let Pivot {
        rows,
        columns,
        followers,
    } = pivot(
        definition.rows(),
        definition.columns(),
        facet.as_deref(),
        dims,
    )?;
    let baseline = table_baseline(definition.baseline(), &rows, &columns, &dims.servers)?;
    let paired = definition.paired().map_err(|other| {
        CheckError::new(
            "analysis",
            "paired",
            format!("paired is #true or #false, not {other}"),
        )
    })?;
    if paired && baseline.is_none() {
        return Err(CheckError::new(
            "analysis",
            "paired",
            "a paired table compares with a baseline: add baseline=\"<server>\"",
        ));
    }
    Ok(TableSpec {
        metric,
        metric_name: metric.name.to_string(),
        rows,
        columns,
        baseline,
        per_operation: false,
        paired,
        facet,
        followers,
    })
}

/// A table's `facet`, if it names one: a parameter of the trials (a table per value).
fn facet_of(
    facet: Option<&str>,
    params: &BTreeMap<String, Vec<String>>,
) -> Result<Option<String>, CheckError> {
    let Some(f) = facet else {
        return Ok(None);
    };
    if !params.contains_key(f) || f == "trials" {
        let known: Vec<&str> = params
            .keys()
            .map(String::as_str)
            .filter(|k| *k != "trials")
            .collect();
        return Err(CheckError::new(
            "analysis",
            "facet",
            format!(
                "`{f}` is not a parameter of these trials; a facet is one of {}",
                known.join(", ")
            ),
        ));
    }
    Ok(Some(f.to_string()))
}

/// The rows and columns of a table, and the parameters that follow one it shows.
pub(crate) struct Pivot {
    pub rows: String,
    pub columns: String,
    /// `(follower, leader)`: see [`TableSpec::followers`].
    pub followers: Vec<(String, String)>,
}

/// The rows and columns of a table, checked against the trials: rows are `server` unless
/// written; columns, unless written, the one parameter the trials vary in (`trials` when
/// none does, and not counting one that follows another). Both are dimensions of the
/// trials, two different ones, and between them (with the facet) they show every parameter
/// that varies, or the one it follows, and, when there is more than one server, the server —
/// else a cell would mix trials of different points.
pub(crate) fn pivot(
    rows: Option<&str>,
    columns: Option<&str>,
    facet: Option<&str>,
    dims: &Dimensions,
) -> Result<Pivot, CheckError> {
    let (servers, params) = (&dims.servers, &dims.params);
    // a facet varies by design: each of its values is a table of its own
    let all_varying: Vec<&String> = params
        .iter()
        .filter(|(k, v)| v.len() > 1 && Some(k.as_str()) != facet)
        .map(|(k, _)| k)
        .collect();
    // columns left out: the one that varies on its own (a tied axis goes with its leader)
    let leading: Vec<&String> = all_varying
        .iter()
        .copied()
        .filter(|k| {
            dims.leaders
                .get(*k)
                .is_none_or(|ls| !ls.iter().any(|l| all_varying.contains(&l)))
        })
        .collect();
    let varying = if leading.is_empty() {
        all_varying.clone()
    } else {
        leading
    };
    let rows = rows.unwrap_or("server").to_string();
    let columns = match columns {
        Some(c) => c.to_string(),
        None => match varying.as_slice() {
            [one] => one.to_string(),
            [] => "trials".to_string(),
            _ => {
                return Err(CheckError::new(
                    "analysis",
                    "kind",
                    format!(
                        "the trials vary in {}: name the table's columns, e.g. columns=\"{}\"",
                        names(&varying),
                        varying[0]
                    ),
                ))
            }
        },
    };
    let dimension_ok =
        |d: &str| matches!(d, "server" | "trials" | "node") || params.contains_key(d);
    for (prop, dim) in [("rows", &rows), ("columns", &columns)] {
        if !dimension_ok(dim) {
            let mut known: Vec<&str> = vec!["server", "trials", "node"];
            known.extend(params.keys().map(String::as_str));
            return Err(CheckError::new(
                "analysis",
                prop,
                format!(
                    "`{dim}` is not a dimension of these trials; use one of {}",
                    known.join(", ")
                ),
            ));
        }
    }
    if rows == columns {
        return Err(CheckError::new(
            "analysis",
            "columns",
            format!("rows and columns are both `{rows}`; pivot two different dimensions"),
        ));
    }
    // a parameter that varies but is neither rows nor columns (nor follows one of them or
    // the facet) would mix its points in a cell
    let shown: Vec<&str> = [Some(rows.as_str()), Some(columns.as_str()), facet]
        .into_iter()
        .flatten()
        .collect();
    let mut followers = Vec::new();
    for hidden in all_varying
        .iter()
        .filter(|v| v.as_str() != rows && v.as_str() != columns)
    {
        if let Some(leader) = dims.follows_one_of(hidden, &shown) {
            followers.push((hidden.to_string(), leader.to_string()));
            continue;
        }
        return Err(CheckError::new(
            "analysis",
            "kind",
            format!(
                "the trials vary in `{hidden}` too, which this table does not show: make it its rows or columns or facet, or read trials with one `{hidden}` only"
            ),
        ));
    }
    if servers.len() > 1 && rows != "server" && columns != "server" {
        return Err(CheckError::new(
            "analysis",
            "rows",
            format!(
                "the trials measure {} servers ({}): one of rows and columns must be \"server\"",
                servers.len(),
                servers.join(", ")
            ),
        ));
    }
    Ok(Pivot {
        rows,
        columns,
        followers,
    })
}

/// A table's `baseline`, if it names one: a server of the trials, on the table's rows or
/// columns.
fn table_baseline(
    baseline: Option<&str>,
    rows: &str,
    columns: &str,
    servers: &[String],
) -> Result<Option<String>, CheckError> {
    let Some(b) = baseline else {
        return Ok(None);
    };
    if !servers.iter().any(|s| s == b) {
        return Err(CheckError::new(
            "analysis",
            "baseline",
            format!(
                "the baseline `{b}` is not a server of these trials; they measure {}",
                servers.join(", ")
            ),
        ));
    }
    if rows != "server" && columns != "server" {
        return Err(CheckError::new(
            "analysis",
            "baseline",
            "a baseline is a server: make rows or columns \"server\"",
        ));
    }
    Ok(Some(b.to_string()))
}

/// A `compare`: operations × servers of the per-operation seconds, against `baseline`.
fn compare_spec(
    definition: &AnalysisDef,
    servers: &[String],
    params: &BTreeMap<String, Vec<String>>,
) -> Result<TableSpec, CheckError> {
    refuse_unknown_props(
        definition,
        COMPARE_PROPS,
        "compare",
        " (its figures are the suite's per-operation seconds)",
    )?;
    let Some(baseline) = definition.baseline() else {
        return Err(CheckError::new(
            "analysis",
            "kind",
            "a compare needs the server the others are compared with: add baseline=\"…\"",
        ));
    };
    if !servers.iter().any(|s| s == baseline) {
        return Err(CheckError::new(
            "analysis",
            "baseline",
            format!(
                "the baseline `{baseline}` is not a server of these trials; they measure {}",
                servers.join(", ")
            ),
        ));
    }
    if let Some((k, _)) = params.iter().find(|(_, v)| v.len() > 1) {
        return Err(CheckError::new(
            "analysis",
            "kind",
            format!(
                "the trials vary in `{k}`: a compare shows one point; read trials with one `{k}` only, or use a table"
            ),
        ));
    }
    let rows = match definition.rows() {
        None | Some(OPERATION) => OPERATION,
        Some(TEST) => TEST,
        Some(other) => {
            return Err(CheckError::new(
                "analysis",
                "rows",
                format!(
                    "a compare's rows are \"{OPERATION}\" (each test and its operation groups, the default) or \"{TEST}\" (each test's total), not \"{other}\""
                ),
            ))
        }
    };
    let metric = &figures::OPERATION_SECONDS.figure;
    Ok(TableSpec {
        metric,
        metric_name: metric.name.to_string(),
        rows: rows.to_string(),
        columns: "server".to_string(),
        baseline: Some(baseline.to_string()),
        per_operation: true,
        paired: false,
        facet: None,
        followers: Vec::new(),
    })
}

/// Each trial once per per-operation figure it has (per test's total alone for
/// `rows="test"`): the operation as a parameter named by the rows, the seconds as the
/// spec's metric (in the trials' order, operations in name order).
fn per_operation(spec: &TableSpec, points: &[TrialPoint]) -> Vec<TrialPoint> {
    let family = &figures::OPERATION_SECONDS;
    let mut out = Vec::new();
    for p in points {
        for (name, v) in p.figures.iter() {
            let Some(stem) = name.strip_suffix(family.suffix) else {
                continue;
            };
            // a figure of its own (`total_s`) looks like a member but is not one
            if figures::lookup(name).map(|f| f.name) != Some(family.figure.name) {
                continue;
            }
            if spec.rows == TEST && !family.stems.contains(&stem) {
                continue;
            }
            let mut q = p.clone();
            q.params = BTreeMap::from([(spec.rows.clone(), Value::String(stem.into()))]);
            q.figures = Figures::from_map(BTreeMap::from([(spec.metric_name.clone(), v)]));
            out.push(q);
        }
    }
    out
}

fn names(v: &[&String]) -> String {
    v.iter()
        .map(|s| format!("`{s}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The bootstrap seed of one cell: from the analysis's definition and the cell's place, so
/// the same table renders the same bits, and a cell's CI does not move when another
/// cell's trials change.
pub fn cell_seed(definition: &impl Serialize, row: &str, column: &str) -> u64 {
    // as a `Value`, whose maps are sorted: the definition's JSON as the step's key holds it,
    // whatever order its type declares its fields in
    let json = serde_json::to_value(definition).expect("a definition serialises");
    let mut h = blake3::Hasher::new();
    h.update(serde_json::to_string(&json).expect("serialises").as_bytes());
    for part in [row, column] {
        h.update(&[0]);
        h.update(part.as_bytes());
    }
    let bytes = h.finalize();
    u64::from_le_bytes(bytes.as_bytes()[..8].try_into().expect("8 bytes"))
}

/// The bootstrap seed of a comparison of `baseline` with `variant`: from their values, so a
/// comparison's CI depends only on its samples (and level). A table's cell and a claim that
/// compare the same passes print the same interval, and a cell's CI does not move when
/// another cell's trials change.
pub fn samples_seed(baseline: &[f64], variant: &[f64]) -> u64 {
    let mut h = blake3::Hasher::new();
    for side in [baseline, variant] {
        h.update(&(side.len() as u64).to_le_bytes());
        for v in side {
            h.update(&v.to_bits().to_le_bytes());
        }
    }
    let bytes = h.finalize();
    u64::from_le_bytes(bytes.as_bytes()[..8].try_into().expect("8 bytes"))
}

/// The criteria of one cell's comparison of `baseline` with `variant`: the defaults, seeded
/// from the samples; under a sequential design (`until="decided"`), α is the nominal level of
/// the look its passes per side stand at, and that look is returned too.
fn cell_criteria(
    definition: &AnalysisDef,
    baseline: &[f64],
    variant: &[f64],
) -> (Criteria, Option<Look>) {
    let passes = baseline.len().min(variant.len());
    let criteria = Criteria {
        bootstrap: BootstrapSettings {
            seed: samples_seed(baseline, variant),
            ..BootstrapSettings::default()
        },
        ..Criteria::default()
    };
    sequential_criteria(criteria, definition.sequential, passes)
}

/// `criteria` at the look `passes` per side stand at, under `design` (if any).
pub(crate) fn sequential_criteria(
    criteria: Criteria,
    design: Option<cairn_defs::Sequential>,
    passes: usize,
) -> (Criteria, Option<Look>) {
    let Some(d) = design else {
        return (criteria, None);
    };
    match Design::new(d.min as usize, d.max as usize, criteria.alpha) {
        Ok(design) => {
            let look = design.look_for(passes);
            (sequential::criteria_at(&criteria, &look), Some(look))
        }
        Err(_) => (criteria, None),
    }
}

/// Pivot `points` into the table `spec` asks for. `definition` seeds the bootstrap. A
/// faceted table is one table per value of its facet, in the order the trials show them,
/// its cells each marked with their value.
pub fn build_table(
    spec: &TableSpec,
    definition: &AnalysisDef,
    points: &[TrialPoint],
) -> Result<Table, String> {
    let mut table = build_faceted(spec, definition, points)?;
    table.followers = spec
        .followers
        .iter()
        .map(|(name, leader)| follower(name, leader, points))
        .collect();
    Ok(table)
}

/// `name`'s value at each value of `leader` among `points` (one each: the pivot checked
/// that it follows it), in the order the points first show the leader's values.
fn follower(name: &str, leader: &str, points: &[TrialPoint]) -> Follower {
    let mut values: Vec<(String, String)> = Vec::new();
    for p in points {
        let (Some(l), Some(v)) = (p.dimension(leader), p.dimension(name)) else {
            continue;
        };
        if !values.iter().any(|(seen, _)| *seen == l) {
            values.push((l, v));
        }
    }
    Follower {
        name: name.to_string(),
        leader: leader.to_string(),
        values,
    }
}

/// The table of `points`, one part per value of its facet if it has one.
fn build_faceted(
    spec: &TableSpec,
    definition: &AnalysisDef,
    points: &[TrialPoint],
) -> Result<Table, String> {
    let Some(facet) = &spec.facet else {
        return build_one_table(spec, definition, points);
    };
    let mut values: Vec<String> = Vec::new();
    for p in points {
        let v = p
            .dimension(facet)
            .ok_or_else(|| format!("{} has no `{facet}`", p.address))?;
        push_unique(&mut values, v);
    }
    let one = TableSpec {
        facet: None,
        ..spec.clone()
    };
    let mut whole: Option<Table> = None;
    for value in &values {
        let part: Vec<TrialPoint> = points
            .iter()
            .filter(|p| p.dimension(facet).as_ref() == Some(value))
            .cloned()
            .collect();
        let mut table = build_one_table(&one, definition, &part)?;
        for c in &mut table.cells {
            c.facet = Some(value.clone());
        }
        whole = Some(match whole {
            None => table,
            Some(mut w) => {
                for v in table.rows.values {
                    push_unique(&mut w.rows.values, v);
                }
                for v in table.columns.values {
                    push_unique(&mut w.columns.values, v);
                }
                w.cells.extend(table.cells);
                w
            }
        });
    }
    let mut whole = whole.ok_or_else(|| "no trials to tabulate".to_string())?;
    whole.facet = Some(Dimension {
        name: facet.clone(),
        values,
    });
    Ok(whole)
}

/// One table (no facet) of `points`.
fn build_one_table(
    spec: &TableSpec,
    definition: &AnalysisDef,
    points: &[TrialPoint],
) -> Result<Table, String> {
    let expanded;
    let points = if spec.per_operation {
        expanded = per_operation(spec, points);
        if expanded.is_empty() {
            return Err(format!(
                "none of the {} trials recorded per-operation seconds (`<test>_s` figures, as sql-bench does)",
                points.len()
            ));
        }
        &expanded[..]
    } else {
        points
    };
    let grid = Grid::of(spec, points)?;
    let mut cells = grid.summarize(spec)?;
    if let Some(baseline) = &spec.baseline {
        compare_with_baseline(spec, definition, baseline, &grid.groups, &mut cells)?;
    }
    Ok(Table {
        metric: spec.metric_name.clone(),
        unit: spec.metric.unit.symbol().to_string(),
        direction: spec.metric.direction,
        rows: grid.rows,
        columns: grid.columns,
        baseline: spec.baseline.clone(),
        noisy_cv: NOISY_CV,
        cells,
        facet: None,
        followers: Vec::new(),
    })
}

/// The trials of a table by cell: its rows and columns in the order the trials first show
/// them, and each `(row, column)`'s trials.
struct Grid<'a> {
    rows: Dimension,
    columns: Dimension,
    groups: BTreeMap<(String, String), Vec<&'a TrialPoint>>,
}

impl<'a> Grid<'a> {
    /// `points` placed by the dimensions `spec` pivots; a trial without one is an error.
    fn of(spec: &TableSpec, points: &'a [TrialPoint]) -> Result<Grid<'a>, String> {
        let mut grid = Grid {
            rows: Dimension {
                name: spec.rows.clone(),
                values: Vec::new(),
            },
            columns: Dimension {
                name: spec.columns.clone(),
                values: Vec::new(),
            },
            groups: BTreeMap::new(),
        };
        for p in points {
            let (Some(r), Some(c)) = (p.dimension(&spec.rows), p.dimension(&spec.columns)) else {
                return Err(format!(
                    "{} has no `{}` or `{}`",
                    p.address, spec.rows, spec.columns
                ));
            };
            push_unique(&mut grid.rows.values, r.clone());
            push_unique(&mut grid.columns.values, c.clone());
            grid.groups.entry((r, c)).or_default().push(p);
        }
        Ok(grid)
    }

    /// One cell per `(row, column)` that has trials, row by row, its passes in order.
    fn summarize(&self, spec: &TableSpec) -> Result<Vec<Cell>, String> {
        let mut cells = Vec::new();
        for r in &self.rows.values {
            for c in &self.columns.values {
                let Some(group) = self.groups.get(&(r.clone(), c.clone())) else {
                    continue;
                };
                let mut group = group.clone();
                group.sort_by_key(|p| p.pass);
                cells.push(summarize_cell(spec, r, c, &group)?);
            }
        }
        Ok(cells)
    }
}

/// Compare every cell of another server with the baseline's cell at the same place
/// (paired by block when `spec.paired`). A cell whose place the baseline lacks has no
/// comparison.
fn compare_with_baseline(
    spec: &TableSpec,
    definition: &AnalysisDef,
    baseline: &str,
    groups: &BTreeMap<(String, String), Vec<&TrialPoint>>,
    cells: &mut [Cell],
) -> Result<(), String> {
    let server_is_row = spec.rows == "server";
    let base_values: BTreeMap<(String, String), Vec<f64>> = cells
        .iter()
        .map(|c: &Cell| ((c.row.clone(), c.column.clone()), c.values.clone()))
        .collect();
    for cell in cells.iter_mut() {
        if cell.server == baseline {
            continue;
        }
        let place = (cell.row.clone(), cell.column.clone());
        let base_place = if server_is_row {
            (baseline.to_string(), cell.column.clone())
        } else {
            (cell.row.clone(), baseline.to_string())
        };
        let Some(base) = base_values.get(&base_place) else {
            continue;
        };
        let (dimension, value) = if server_is_row {
            (&spec.columns, &cell.column)
        } else {
            (&spec.rows, &cell.row)
        };
        let at = format!(
            "comparing {} with {baseline} at {dimension} = {value}",
            cell.server
        );
        let (criteria, look) = cell_criteria(definition, base, &cell.values);
        let comparison = if spec.paired {
            let pairs = block_pairs(spec, &groups[&base_place], &groups[&place])?;
            paired_comparison(spec, &pairs, &criteria, &at)?
        } else {
            let cmp = compare(base, &cell.values, spec.metric.direction, &criteria)
                .map_err(|e| format!("{at}: {e}"))?;
            // both sides' passes: a comparison never mixes classes of machine or campaigns
            // silently
            let both = || {
                [&base_place, &place]
                    .into_iter()
                    .filter_map(|at| groups.get(at))
                    .flatten()
                    .copied()
            };
            let classes = trial_points::machine_classes(both());
            let together = trial_points::campaigns(both());
            if classes > 1 {
                cmp.mixed_machines(classes)
            } else if together > 1 {
                cmp.mixed_campaigns(together)
            } else {
                cmp
            }
        };
        cell.comparison = Some(match look {
            Some(look) => sequential::at_look(comparison, look),
            None => comparison,
        });
    }
    Ok(())
}

/// The comparison of a paired cell from its blocks' `(baseline, variant)` values; `at`
/// says which cell for an error.
fn paired_comparison(
    spec: &TableSpec,
    pairs: &[(f64, f64)],
    criteria: &Criteria,
    at: &str,
) -> Result<Comparison, String> {
    if pairs.is_empty() {
        return Err(format!(
            "{at}: no block (node and pass) holds both; a paired table needs the variants measured in the same passes"
        ));
    }
    // each pair is one block on one machine: no mixing of machines to refuse
    compare_paired(pairs, BLOCKS, spec.metric.direction, criteria).map_err(|e| format!("{at}: {e}"))
}

/// The `(baseline, variant)` values of the blocks both cells have a trial in: a block is a
/// pass on a node (`local` for this machine); a pass one side lacks pairs with nothing.
fn block_pairs(
    spec: &TableSpec,
    baseline: &[&TrialPoint],
    variant: &[&TrialPoint],
) -> Result<Vec<(f64, f64)>, String> {
    let value = |p: &TrialPoint| {
        p.figures
            .get_named(&spec.metric_name)
            .ok_or_else(|| format!("{} recorded no `{}`", p.address, spec.metric_name))
    };
    let block = |p: &TrialPoint| (p.pass, p.node.clone().unwrap_or_else(|| "local".into()));
    let base: BTreeMap<(u32, String), f64> = baseline
        .iter()
        .map(|p| Ok((block(p), value(p)?)))
        .collect::<Result<_, String>>()?;
    let mut pairs = Vec::new();
    for p in variant {
        if let Some(b) = base.get(&block(p)) {
            pairs.push((*b, value(p)?));
        }
    }
    Ok(pairs)
}

fn summarize_cell(
    spec: &TableSpec,
    row: &str,
    column: &str,
    group: &[&TrialPoint],
) -> Result<Cell, String> {
    let mut values = Vec::new();
    for p in group {
        let v = p.figures.get_named(&spec.metric_name).ok_or_else(|| {
            let have: Vec<&str> = p.figures.names().collect();
            format!(
                "{} recorded no `{}` (it has {})",
                p.address,
                spec.metric_name,
                if have.is_empty() {
                    "no figures".to_string()
                } else {
                    have.join(", ")
                }
            )
        })?;
        values.push(v);
    }
    let summary = summarize(&values, "cell").map_err(|e| format!("{row} × {column}: {e}"))?;
    let noisy = summary.cv.is_none_or(|cv| cv > NOISY_CV);
    Ok(Cell {
        row: row.to_string(),
        column: column.to_string(),
        server: group[0].server.clone(),
        trials: group.iter().map(|p| p.key.clone()).collect(),
        addresses: group.iter().map(|p| p.address.clone()).collect(),
        summary,
        noisy,
        drift: cairn_analysis::drift::drift(&values, cairn_analysis::drift::DRIFT_ALPHA),
        outliers: cairn_analysis::drift::outliers(&values)
            .into_iter()
            .map(|i| i + 1)
            .collect(),
        values,
        comparison: None,
        facet: None,
    })
}

/// The definition of an analysis step, as the resolver wrote it.
fn analysis_def(step: &Step) -> Result<AnalysisDef, CheckError> {
    step.def().map_err(|e: String| CheckError::new("", "", e))
}

/// A `plot` or `scaling` analysis: its table, its chart and (scaling) its efficiencies.
fn perform_chart(
    env: &Env<'_>,
    definition: &AnalysisDef,
    flavour: plot_analysis::Flavour,
    points: &[TrialPoint],
    dims: &Dimensions,
) -> Result<Built, StepError> {
    let spec = plot_analysis::plot_spec(flavour, definition, dims).map_err(failed)?;
    let (files, headline) = plot_analysis::render(&spec, definition, points).map_err(failed)?;
    let mut outputs = BTreeMap::new();
    for (name, bytes) in files {
        let blob = env
            .store
            .put_blob(&bytes)
            .map_err(|e| failed(format!("storing {name}: {e}")))?;
        outputs.insert(name.to_string(), blob);
    }
    let mut extra = serde_json::Map::new();
    extra.insert("headline".into(), Value::String(headline));
    Ok(Built {
        outputs,
        extra,
        ..Default::default()
    })
}

/// What an analysis reads of its trials' points: each run of a start as a point of its own
/// when it reads runs (`run` among its dimensions), else the points themselves.
fn analysis_points(def: &AnalysisDef, points: Vec<TrialPoint>) -> Vec<TrialPoint> {
    if crate::trial_runs::reads_runs(def) {
        crate::trial_runs::runs_of(&points, def)
    } else {
        points
    }
}

/// The table analysis `def` builds from its trials' points — the step's output, and what
/// the `until="decided"` rule asks of it on the passes so far (one construction for both,
/// so the rule never reads a table other than the one the report will show).
pub(crate) fn table_of(def: &AnalysisDef, points: Vec<TrialPoint>) -> Result<Table, String> {
    let points = analysis_points(def, points);
    let spec = table_spec(def, &trial_points::dimensions(&points)).map_err(|e| e.to_string())?;
    build_table(&spec, def, &points)
}

/// The kind of `analysis` steps.
pub struct AnalysisKind;

impl cairn_engine::Kind for AnalysisKind {
    fn check(&self, graph: &StepGraph, step: &Step) -> Result<(), cairn_engine::CheckError> {
        let definition = analysis_def(step)?;
        let mut dims = trial_points::dimensions_of_inputs(graph, step);
        crate::trial_runs::check_run_dimension(graph, step, &definition, &mut dims.params)?;
        if crate::profile_analysis::is_profile(&definition.kind) {
            return crate::profile_analysis::check(graph, step, &definition);
        }
        match plot_analysis::Flavour::of(&definition.kind) {
            Some(flavour) => plot_analysis::plot_spec(flavour, &definition, &dims).map(|_| ()),
            None => table_spec(&definition, &dims).map(|_| ()),
        }
    }

    fn perform(
        &self,
        env: &Env<'_>,
        step: &Step,
        _key: &str,
        inputs: &[&Done],
    ) -> Result<Built, StepError> {
        let definition = analysis_def(step).map_err(failed)?;
        if crate::profile_analysis::is_profile(&definition.kind) {
            return crate::profile_analysis::perform(env, step, &definition, inputs);
        }
        let points = trial_points::read(env.store, step, inputs)?;
        if let Some(flavour) = plot_analysis::Flavour::of(&definition.kind) {
            let points = analysis_points(&definition, points);
            let dims = trial_points::dimensions(&points);
            return perform_chart(env, &definition, flavour, &points, &dims);
        }
        let table = table_of(&definition, points).map_err(failed)?;
        let json = serde_json::to_vec_pretty(&table).expect("serialises");
        // the analysis's name is not in its key: the report titles the table
        let md = render_markdown("", &table);
        let put = |bytes: &[u8], name: &str| {
            env.store
                .put_blob(bytes)
                .map_err(|e| failed(format!("storing {name}: {e}")))
        };
        let outputs = BTreeMap::from([
            (TABLE_JSON.to_string(), put(&json, TABLE_JSON)?),
            (TABLE_MD.to_string(), put(md.as_bytes(), TABLE_MD)?),
        ]);
        let decided = table
            .cells
            .iter()
            .filter_map(|c| c.comparison.as_ref())
            .filter(|c| c.verdict != cairn_analysis::Verdict::Inconclusive)
            .count();
        let compared = table
            .cells
            .iter()
            .filter(|c| c.comparison.is_some())
            .count();
        let mut extra = serde_json::Map::new();
        extra.insert(
            "headline".into(),
            Value::String(format!(
                "{} × {} of {}: {} cells, {decided} of {compared} comparisons decided",
                table.rows.name,
                table.columns.name,
                table.metric,
                table.cells.len()
            )),
        );
        Ok(Built {
            outputs,
            extra,
            ..Default::default()
        })
    }
}
