//! The trials an analysis, a claim or a report reads: each input trial's record, turned into
//! the figures, parameters, server and pass behind it — read from records only, never from a
//! server.
//!
//! A trial's record carries everything needed in its `extra` (figures under the shared
//! names, the matrix point, the verified variant, the image) and its definition (the
//! server's settings), so analyses never read a driver's private output.

use std::collections::BTreeMap;

use cairn_defs::figures::Figures;
use cairn_defs::ServerDef;
use cairn_graph::{Step, StepKind};
use cairn_store::Store;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use cairn_engine::error::{failed, StepError};
use cairn_engine::execute::Done;

/// One measured trial as analyses see it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TrialPoint {
    /// The key of the trial's record: what a table cell names as its evidence.
    pub key: String,
    /// `trial/<trials>/<server>[threads=4]#2`.
    pub address: String,
    /// The `trials` block it belongs to.
    pub trials: String,
    /// The server (variant) measured.
    pub server: String,
    /// 1-based pass index.
    pub pass: u32,
    /// The matrix point (every parameter of the workload point), as the plan wrote them.
    pub params: BTreeMap<String, Value>,
    /// Figures under the shared names (old names read through the aliases).
    pub figures: Figures,
    /// The server's settings as they went into the trial's key.
    #[serde(default)]
    pub settings: Option<ServerDef>,
    /// The verified variant (`extra.variant`: version, word size, allocator), if recorded.
    #[serde(default)]
    pub variant: Value,
    /// The image the server ran from (`reference`, `image_id`), if any.
    #[serde(default)]
    pub image: Value,
    /// The machine fingerprint the trial was measured on (a fleet's trial: its node's).
    #[serde(default)]
    pub fingerprint: Value,
    /// The fleet node it ran on (`extra.node.name`); `None` for a trial measured here.
    #[serde(default)]
    pub node: Option<String>,
    /// The campaign it was measured in: the study, the run that measured it, and the machine
    /// instance's boot (`extra.machine.boot_id`) or, for a record made before boots were
    /// recorded, the day it started. Comparisons decide only between passes of one campaign.
    #[serde(default)]
    pub campaign: String,
    /// When and by whom it was measured, as its record says.
    #[serde(default)]
    pub measured: Measured,
    /// The workload as the trial's definition holds it, and where its clients ran
    /// (`extra.client`): the report's design reads them; data.json does not repeat them.
    #[serde(skip)]
    pub workload: cairn_defs::WorkloadDef,
    #[serde(skip)]
    pub client: Value,
    /// Each run's figures, for a trial of several runs on one server start (`runs N` of
    /// its block; [`Self::figures`] are then their medians); empty for a trial of one run.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub runs: Vec<Figures>,
    /// Its block's `settle` and `runs` as its definition holds them, and what its settle
    /// window saw (`extra.settle`): the report's design reads them.
    #[serde(skip)]
    pub lifecycle: Option<cairn_defs::LifecycleDef>,
    #[serde(skip)]
    pub settle: Value,
    /// What it profiled over its window (its block's `profile`, else its server's): the
    /// report's design says so.
    #[serde(skip)]
    pub profiles: cairn_defs::ProfilesAsked,
    /// Where the trials' `cpus` factor put the server and its clients, read back
    /// (`extra.cpus`: count, server cpuset and affinity, clients); null without the factor.
    #[serde(default)]
    pub cpus: Value,
}

/// When and by whom a trial was measured (its record's study, times and place in the run's
/// seeded order), for the data files.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Measured {
    /// The study that measured it: this study, or the one a `measured-by` block names.
    pub study: String,
    /// The trial's start and end (UTC, RFC 3339), server start to stop.
    pub started: String,
    pub finished: String,
    /// Its place in its run's seeded order (1 ran first); `None` for a record made before
    /// the order was recorded.
    pub run_order: Option<u64>,
}

impl TrialPoint {
    /// The block a paired comparison pairs within: the node it ran on (`local` for this
    /// machine) and its pass, as `local/3`.
    pub fn block(&self) -> String {
        format!("{}/{}", self.node.as_deref().unwrap_or("local"), self.pass)
    }
}

impl TrialPoint {
    /// The value of a table dimension: `server`, `trials`, `pass`, `node` (the fleet node it
    /// ran on, `local` for a trial measured here), or a parameter's name; `None` when the
    /// trial has no such parameter.
    pub fn dimension(&self, name: &str) -> Option<String> {
        match name {
            "server" => Some(self.server.clone()),
            "trials" => Some(self.trials.clone()),
            "pass" => Some(self.pass.to_string()),
            "node" => Some(self.node.clone().unwrap_or_else(|| "local".into())),
            _ => self.params.get(name).map(display_value),
        }
    }
}

/// A parameter value as people write it: strings bare, numbers and booleans as JSON.
pub fn display_value(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// The trial point of an address: `trial/<trials>/<server>[a=1]#2` → `trial/<trials>/<server>[a=1]`
/// (the address without its pass; one-pass studies' addresses have none).
pub fn point_of(address: &str) -> &str {
    address.rsplit_once('#').map_or(address, |(p, _)| p)
}

/// `trial/<trials>/<server>[a=1]#2` → (`<trials>`, `<server>`, 2); the pass is 1 when the
/// address has none (a study of one pass).
pub fn parse_address(address: &str) -> (String, String, u32) {
    let rest = address.strip_prefix("trial/").unwrap_or(address);
    let (trials, rest) = rest.split_once('/').unwrap_or(("", rest));
    let server = rest.split(['[', '#']).next().unwrap_or(rest).to_string();
    let pass = rest
        .rsplit_once('#')
        .and_then(|(_, p)| p.parse().ok())
        .unwrap_or(1);
    (trials.to_string(), server, pass)
}

/// The campaign a trial's record was measured in (see [`TrialPoint::campaign`]): the study,
/// the run that measured it and the machine instance's boot — or, for a record made before
/// runs were recorded, the study and the boot, and before boots were, the day.
pub fn campaign_of(record: &cairn_store::Record) -> String {
    let boot = record
        .extra
        .get("machine")
        .and_then(|m| m.get("boot_id"))
        .and_then(Value::as_str);
    let run = record
        .extra
        .get("order")
        .and_then(|o| o.get("run"))
        .and_then(Value::as_str);
    campaign(
        &record.study,
        run,
        boot,
        record.started.get(..10).unwrap_or("?"),
    )
}

/// The campaign a trial of `study` measured by this run (`run`) belongs to.
pub fn campaign_now(study: &str, run: &str) -> String {
    // the machine's boot does not change while this process lives: read it once
    static BOOT: std::sync::OnceLock<Option<String>> = std::sync::OnceLock::new();
    let boot = BOOT.get_or_init(cairn_exec::machine::boot_id);
    // the day stands for the boot only where the boot cannot be read
    let today = match boot {
        Some(_) => String::new(),
        None => humantime::format_rfc3339(std::time::SystemTime::now()).to_string(),
    };
    campaign(
        study,
        Some(run),
        boot.as_deref(),
        today.get(..10).unwrap_or("?"),
    )
}

fn campaign(study: &str, run: Option<&str>, boot: Option<&str>, day: &str) -> String {
    let run = run.map(|r| format!(", {r}")).unwrap_or_default();
    match boot {
        Some(b) => format!("{study}{run} on boot {}", &b[..8.min(b.len())]),
        None => format!("{study}{run}, measured {day}"),
    }
}

/// How many classes of machine (fingerprints) `points` were measured on.
pub fn machine_classes<'p>(points: impl IntoIterator<Item = &'p TrialPoint>) -> usize {
    distinct(points, |p| p.fingerprint.to_string())
}

/// How many campaigns (see [`TrialPoint::campaign`]) `points` were measured in.
pub fn campaigns<'p>(points: impl IntoIterator<Item = &'p TrialPoint>) -> usize {
    distinct(points, |p| p.campaign.clone())
}

fn distinct<'p>(
    points: impl IntoIterator<Item = &'p TrialPoint>,
    of: fn(&TrialPoint) -> String,
) -> usize {
    points
        .into_iter()
        .map(of)
        .collect::<std::collections::BTreeSet<_>>()
        .len()
}

/// The trials among `step`'s inputs, read from their records (in the inputs' order, which
/// is the graph's declaration order).
pub fn read(store: &Store, step: &Step, inputs: &[&Done]) -> Result<Vec<TrialPoint>, StepError> {
    let mut out = Vec::new();
    for (input, done) in step.inputs.iter().zip(inputs) {
        // a conditional pass the adaptive rule did not need: nothing was measured
        if !input.mount.starts_with("trial/") || done.is_not_needed() {
            continue;
        }
        let record = store
            .get_record(&done.key)
            .map_err(|e| failed(format!("reading the record of {}: {e}", input.mount)))?
            .ok_or_else(|| {
                failed(format!(
                    "the record of {} ({}) is gone from the store; run again",
                    input.mount,
                    &done.key[..12.min(done.key.len())]
                ))
            })?;
        if record.kind != StepKind::TRIAL.as_str() {
            continue;
        }
        out.push(point_of_record(&record, &input.mount));
    }
    Ok(out)
}

/// The trial point of a trial's `record`, read at `mount` (`trial/<trials>/<server>[…]#2`):
/// this study's address of the trial, not the record's — a record adopted from another study
/// that shares its key carries that study's `trials` name.
pub fn point_of_record(record: &cairn_store::Record, mount: &str) -> TrialPoint {
    let (trials, server, pass) = parse_address(mount);
    let params: BTreeMap<String, Value> = record
        .extra
        .get("params")
        .and_then(|p| serde_json::from_value(p.clone()).ok())
        .unwrap_or_default();
    let mut figures: Figures = record
        .extra
        .get("figures")
        .and_then(|f| serde_json::from_value(f.clone()).ok())
        .unwrap_or_default();
    // a share the machine's first reader recorded too low is re-read from its parts
    if figures.contains(&cairn_defs::figures::OTHER_CPU_PCT) {
        if let Some(pct) = record
            .extra
            .get("efficiency")
            .and_then(crate::trial_efficiency::other_cpu_pct_of_first_reader)
        {
            figures.set(&cairn_defs::figures::OTHER_CPU_PCT, pct);
        }
    }
    let settings = record
        .definition
        .get("server")
        .and_then(|s| serde_json::from_value(s.clone()).ok());
    let workload = record
        .definition
        .get("workload")
        .and_then(|w| serde_json::from_value(w.clone()).ok())
        .unwrap_or_default();
    TrialPoint {
        key: record.key.clone(),
        address: record.address.clone(),
        trials,
        server,
        pass,
        params,
        figures,
        settings,
        variant: record.extra.get("variant").cloned().unwrap_or(Value::Null),
        image: record.extra.get("image").cloned().unwrap_or(Value::Null),
        // where it was measured: the node's own fingerprint for a trial a fleet ran (so
        // a report lists each kind of node and warns when they differ), else this machine's
        fingerprint: record
            .extra
            .get("node")
            .and_then(|n| n.get("fingerprint"))
            .cloned()
            .or_else(|| record.fingerprint.clone())
            .unwrap_or(Value::Null),
        node: record
            .extra
            .get("node")
            .and_then(|n| n.get("name"))
            .and_then(Value::as_str)
            .map(String::from),
        campaign: campaign_of(record),
        measured: Measured {
            study: record.study.clone(),
            started: record.started.clone(),
            finished: record.finished.clone(),
            run_order: record
                .extra
                .get("order")
                .and_then(|o| o.get("position"))
                .and_then(Value::as_u64)
                // the record counts from 0; people count from 1
                .map(|position| position + 1),
        },
        workload,
        client: record.extra.get("client").cloned().unwrap_or(Value::Null),
        runs: crate::trial_runs::recorded_runs(&record.extra),
        lifecycle: record
            .definition
            .get("lifecycle")
            .and_then(|l| serde_json::from_value(l.clone()).ok()),
        settle: record.extra.get("settle").cloned().unwrap_or(Value::Null),
        cpus: record.extra.get("cpus").cloned().unwrap_or(Value::Null),
        profiles: crate::trial_profile::asked(&record.definition),
    }
}

/// The trial steps among `step`'s inputs in `graph`, in input order.
fn trial_inputs<'g>(
    graph: &'g cairn_graph::StepGraph,
    step: &'g Step,
) -> impl Iterator<Item = &'g Step> + 'g {
    step.inputs
        .iter()
        .map(|i| &graph.steps[i.from])
        .filter(|from| from.kind == StepKind::TRIAL)
}

/// The servers (variants) of the trials among `step`'s inputs in `graph`, from their
/// addresses, in first-seen order (for checks before anything ran).
pub fn servers_of_inputs(graph: &cairn_graph::StepGraph, step: &Step) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for from in trial_inputs(graph, step) {
        let (_, server, _) = parse_address(&from.address);
        if !out.contains(&server) {
            out.push(server);
        }
    }
    out
}

/// The dimensions of the trials among `step`'s inputs in `graph` (for checks before anything
/// ran): their servers, their parameters with values in first-seen order, and which
/// parameters follow another.
pub fn dimensions_of_inputs(graph: &cairn_graph::StepGraph, step: &Step) -> Dimensions {
    let mut coordinates = Vec::new();
    for from in trial_inputs(graph, step) {
        let (trials, server, _) = parse_address(&from.address);
        let mut at =
            Coordinates::from([(SERVER.to_string(), server), (TRIALS.to_string(), trials)]);
        for (k, v) in &from.params {
            // as the record will hold it (JSON), so checks and runs read values alike
            let v = serde_json::to_value(v).map_or_else(|_| v.to_string(), |j| display_value(&j));
            at.insert(k.clone(), v);
        }
        coordinates.push(at);
    }
    Dimensions::of_coordinates(&coordinates)
}

/// The most passes any server among `step`'s input trials can have, for the server with
/// the fewest (its conditional passes counted): what a comparison of two of them can rest on
/// at most.
pub fn fewest_passes_of_inputs(graph: &cairn_graph::StepGraph, step: &Step) -> usize {
    let mut most: BTreeMap<String, u32> = BTreeMap::new();
    for from in trial_inputs(graph, step) {
        let (_, server, _) = parse_address(&from.address);
        let pass = most.entry(server).or_default();
        *pass = (*pass).max(from.pass);
    }
    most.values().min().copied().unwrap_or(0) as usize
}

/// The pseudo-parameter naming a point's `trials` block.
const TRIALS: &str = "trials";

/// `trials` counts as a parameter only when the points come from more than one block (a
/// cell or a claim must not mix two blocks' measurements).
fn drop_single_trials(params: &mut BTreeMap<String, Vec<String>>) {
    if params.get(TRIALS).is_some_and(|v| v.len() < 2) {
        params.remove(TRIALS);
    }
}

/// Append `v` unless `values` holds it already (values stay in first-seen order).
pub(crate) fn push_unique(values: &mut Vec<String>, v: String) {
    if !values.contains(&v) {
        values.push(v);
    }
}

/// The dimensions of `points`: their servers, their parameters with values in first-seen
/// order (`trials` among them when the points come from more than one block), and which
/// parameters follow another.
pub fn dimensions(points: &[TrialPoint]) -> Dimensions {
    let coordinates: Vec<Coordinates> = points
        .iter()
        .map(|p| {
            let mut at = Coordinates::from([
                (SERVER.to_string(), p.server.clone()),
                (TRIALS.to_string(), p.trials.clone()),
            ]);
            for (k, v) in &p.params {
                at.insert(k.clone(), display_value(v));
            }
            at
        })
        .collect();
    Dimensions::of_coordinates(&coordinates)
}

/// One trial's place: its server, its block (`trials`) and each of its parameters' values.
pub type Coordinates = BTreeMap<String, String>;

/// The dimension naming a trial's server.
const SERVER: &str = "server";

/// What tables and claims are checked against: the servers of a set of trials, their
/// parameters with the values each takes, and the parameters that follow another.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Dimensions {
    /// The servers, in first-seen order.
    pub servers: Vec<String>,
    /// Each parameter with its values in first-seen order (`trials` when the trials come
    /// from more than one block).
    pub params: BTreeMap<String, Vec<String>>,
    /// Each parameter that varies but takes one value at each value of another parameter
    /// (its leaders): a `tie`'s axis follows the axis it is tied to, `threads` = 2 × `cpus`.
    /// A table showing a leader, or a claim pinning one, pins its followers with it, so a
    /// cell still holds one point. A server is never a leader: a parameter that differed
    /// between servers would confound their comparison.
    pub leaders: BTreeMap<String, Vec<String>>,
}

impl Dimensions {
    /// Servers and parameters with no parameter following another (as a plan's own
    /// checks and unit tests write them).
    pub fn new(servers: Vec<String>, params: BTreeMap<String, Vec<String>>) -> Self {
        Dimensions {
            servers,
            params,
            leaders: BTreeMap::new(),
        }
    }

    /// The dimensions of trials at `coordinates`.
    fn of_coordinates(coordinates: &[Coordinates]) -> Self {
        let mut servers = Vec::new();
        let mut params: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for at in coordinates {
            for (k, v) in at {
                if k == SERVER {
                    push_unique(&mut servers, v.clone());
                } else {
                    push_unique(params.entry(k.clone()).or_default(), v.clone());
                }
            }
        }
        drop_single_trials(&mut params);
        let mut leaders: BTreeMap<String, Vec<String>> = BTreeMap::new();
        let varying = |k: &&String| params[*k].len() > 1;
        for follower in params.keys().filter(varying) {
            for leader in params.keys().filter(varying).filter(|l| *l != follower) {
                if follows(coordinates, follower, leader) {
                    leaders
                        .entry(follower.clone())
                        .or_default()
                        .push(leader.clone());
                }
            }
        }
        Dimensions {
            servers,
            params,
            leaders,
        }
    }

    /// Whether `k` follows one of `shown` (takes one value at each of its values).
    pub fn follows_one_of(&self, k: &str, shown: &[&str]) -> Option<&str> {
        self.leaders
            .get(k)?
            .iter()
            .map(String::as_str)
            .find(|l| shown.contains(l))
    }
}

/// Whether `follower` takes one value at each value of `leader` across `coordinates` (a
/// trial without one of them counts as its own value, absent).
fn follows(coordinates: &[Coordinates], follower: &str, leader: &str) -> bool {
    let mut seen: BTreeMap<Option<&String>, Option<&String>> = BTreeMap::new();
    coordinates.iter().all(|at| {
        let value = at.get(follower);
        *seen.entry(at.get(leader)).or_insert(value) == value
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_give_trials_server_and_pass() {
        assert_eq!(
            parse_address("trial/ro/system[threads=2]#3"),
            ("ro".into(), "system".into(), 3)
        );
        assert_eq!(
            parse_address("trial/ro/jemalloc#1"),
            ("ro".into(), "jemalloc".into(), 1)
        );
        assert_eq!(
            parse_address("trial/ro/x[threads=4]"),
            ("ro".into(), "x".into(), 1)
        );
    }
}
