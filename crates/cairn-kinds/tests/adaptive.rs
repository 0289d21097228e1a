//! Adaptive passes in the scheduler, with a fake trial kind (no Docker) whose figures are
//! noisy or quiet on purpose, and the real table analysis reading what was measured: a noisy
//! point runs to `max`, a quiet one stops at `min`, every decision is recorded with its CI,
//! a raised `max` runs only the new passes, and the order interleaves variants pass by pass.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use cairn_engine::execute::{Built, Done};
use cairn_engine::{Env, Event, Kind, Registry, Reporter, RetryPolicy, RunOptions, StepError};
use cairn_exec::cancel::CancelToken;
use cairn_graph::{Fingerprint, Step, StepGraph, StepKind};
use cairn_store::Store;
use serde_json::json;

/// A trial that "measures" `tps`: around 1000, with a ±30% swing from pass to pass on the
/// servers named noisy, ±0.01% on the others. (The two servers differ in a setting: names
/// never reach a key, so identical servers would share their trials.)
struct FakeTrial {
    noisy: Vec<String>,
    /// Servers whose throughput is 1.5× the others'.
    faster: Vec<String>,
    ran: Arc<Mutex<Vec<String>>>,
}

impl Kind for FakeTrial {
    fn perform(
        &self,
        env: &Env<'_>,
        step: &Step,
        _key: &str,
        _inputs: &[&Done],
    ) -> Result<Built, StepError> {
        self.ran.lock().unwrap().push(step.address.clone());
        let noisy = self
            .noisy
            .iter()
            .any(|n| step.address.contains(&format!("/{n}[")));
        let sign = if step.pass.is_multiple_of(2) {
            1.0
        } else {
            -1.0
        };
        let swing = if noisy { 0.3 } else { 0.0001 };
        let faster = self
            .faster
            .iter()
            .any(|n| step.address.contains(&format!("/{n}[")));
        let level = if faster { 1500.0 } else { 1000.0 };
        let tps = level * (1.0 + sign * swing * (1.0 + step.pass as f64 / 10.0));
        let blob = env
            .store
            .put_blob(format!("{} {tps}", step.address).as_bytes())
            .map_err(|e| StepError::permanent(e.to_string()))?;
        let mut extra = serde_json::Map::new();
        extra.insert("figures".into(), json!({ "tps": tps }));
        extra.insert("params".into(), json!(step.params));
        Ok(Built {
            outputs: BTreeMap::from([("trial.json".to_string(), blob)]),
            extra,
            ..Default::default()
        })
    }
}

/// Decisions and measurement starts, in order.
#[derive(Default)]
struct Recorder {
    started: Vec<String>,
    decisions: Vec<cairn_engine::adaptive::Decision>,
    failed: Vec<String>,
}

impl Reporter for Recorder {
    fn event(&mut self, e: &Event<'_>) {
        match e {
            Event::StepStarted { step, .. } => self.started.push(step.address.clone()),
            Event::PassDecided { decision, .. } => self.decisions.push((*decision).clone()),
            Event::StepFailed { step, error, .. } => {
                self.failed.push(format!("{}: {error}", step.address))
            }
            _ => {}
        }
    }
}

fn plan(passes: &str) -> String {
    format!(
        r#"
study "adaptive"
server "quiet" {{ option max_connections=100 }}
server "noisy" {{ option max_connections=200 }}
workload "w" {{ sysbench "oltp_read_only"; threads 1 2; duration "1s" }}
trials "t" {{ servers "quiet" "noisy"; workload "w"; {passes} }}
analysis "tps" {{ table metric="tps" rows="server" columns="threads" baseline="quiet" }}
"#
    )
}

fn graph(text: &str) -> StepGraph {
    let plan = cairn_plan::parse_str("adaptive.kdl", text)
        .unwrap_or_else(|e| panic!("{}", cairn_plan::render(&e)));
    cairn_graph::resolve(&plan).expect("resolves")
}

struct Sandbox {
    /// The store's and the host's directory, removed when the sandbox goes.
    _dir: tempfile::TempDir,
    store: Store,
    fp: Fingerprint,
    host: cairn_kinds::Host,
}

impl Sandbox {
    fn new() -> Sandbox {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("results")).unwrap();
        Sandbox {
            store,
            fp: Fingerprint {
                cpu_model: "Fake CPU".into(),
                cores: 2,
                threads: 2,
                memory_gib: 1,
                kernel: "test".into(),
                runtime: "host".into(),
            },
            host: cairn_kinds::Host::new(dir.path().join("cache"), CancelToken::new()),
            _dir: dir,
        }
    }

    /// Runs `g`; returns the summary, the events and the trials the fake measured.
    fn run(&self, g: &StepGraph) -> (cairn_engine::RunSummary, Recorder, Vec<String>) {
        self.run_with(g, &["noisy"], &[])
    }

    /// Runs `g` with the servers `noisy` swinging ±30% and `faster` at 1.5×.
    fn run_with(
        &self,
        g: &StepGraph,
        noisy: &[&str],
        faster: &[&str],
    ) -> (cairn_engine::RunSummary, Recorder, Vec<String>) {
        let ran = Arc::new(Mutex::new(Vec::new()));
        let names = |v: &[&str]| v.iter().map(|s| s.to_string()).collect();
        let kinds = Registry::empty()
            .with(
                StepKind::TRIAL,
                FakeTrial {
                    noisy: names(noisy),
                    faster: names(faster),
                    ran: ran.clone(),
                },
            )
            .with(StepKind::ANALYSIS, cairn_kinds::analysis_step::AnalysisKind)
            .with(StepKind::CLAIM, cairn_kinds::claim_step::ClaimKind)
            .with_pass_rule(cairn_kinds::adaptive::PassRules::default());
        let env = Env {
            study: &g.study,
            store: &self.store,
            fingerprint: &self.fp,
            read_classes: None,
            machine: &serde_json::Value::Null,
            kinds: &kinds,
            lock: None,
            run_id: "fake-run",
            host: &self.host,
        };
        let opts = RunOptions {
            jobs: 1,
            keep_going: false,
            only: Vec::new(),
            fresh: Vec::new(),
            seed: Some(7),
            retries: RetryPolicy::default(),
        };
        let mut rec = Recorder::default();
        let summary = cairn_engine::run(g, &env, &opts, &mut rec);
        let ran = ran.lock().unwrap().clone();
        (summary, rec, ran)
    }
}

fn passes_of(ran: &[String], server: &str) -> usize {
    ran.iter()
        .filter(|a| a.starts_with(&format!("trial/t/{server}[")))
        .count()
}

#[test]
fn a_noisy_point_runs_to_max_and_a_quiet_one_stops_at_min() {
    let g = graph(&plan(r#"passes min=2 max=5 until-ci="2%""#));
    let sb = Sandbox::new();
    let (summary, rec, ran) = sb.run(&g);
    assert!(summary.ok(), "{:?}", rec.failed);
    // two thread counts each: quiet 2 passes per point, noisy 5
    assert_eq!(
        passes_of(&ran, "quiet"),
        2 * 2,
        "{ran:?} {:?}",
        rec.decisions
    );
    assert_eq!(passes_of(&ran, "noisy"), 2 * 5, "{ran:?}");
    assert_eq!(summary.not_needed, 2 * 3);
    // every conditional pass was decided, with the CI it was decided on
    assert_eq!(rec.decisions.len(), 2 * 3 + 2 * 3);
    for d in &rec.decisions {
        assert_eq!(d.metric, "tps");
        assert_eq!(d.until_ci, Some(0.02));
        let w = d.ci_half_width.expect("estimable from two passes on");
        if d.point.contains("/noisy") {
            assert!(d.needed && w > 0.02, "{d:?}");
        } else {
            assert!(!d.needed && w <= 0.02, "{d:?}");
        }
    }
    assert_eq!(summary.decisions, rec.decisions);
    // the real table analysis ran on the passes that exist (the not-needed ones are empty
    // inputs, not failures)
    assert!(
        rec.started.iter().any(|a| a.starts_with("analysis")),
        "{:?}",
        rec.started
    );
}

#[test]
fn a_pass_that_ran_records_the_decision_behind_it() {
    let g = graph(&plan(r#"passes min=2 max=3 until-ci="2%""#));
    let sb = Sandbox::new();
    let (summary, rec, _) = sb.run(&g);
    assert!(summary.ok(), "{:?}", rec.failed);
    let third = g
        .steps
        .iter()
        .find(|s| s.address.starts_with("trial/t/noisy[threads=1]#3"))
        .expect("pass 3");
    let names = sb.store.names("adaptive").unwrap();
    let key = &names[&third.address];
    let record = sb.store.get_record(key).unwrap().expect("recorded");
    let adaptive = &record.extra["adaptive"];
    assert_eq!(adaptive["needed"], json!(true));
    assert_eq!(adaptive["passes"], json!(2));
    assert!(adaptive["ci_half_width"].as_f64().unwrap() > 0.02);
    // a pass that was not needed left no record
    let quiet_third = g
        .steps
        .iter()
        .find(|s| s.address.starts_with("trial/t/quiet[threads=1]#3"))
        .unwrap();
    assert!(!names.contains_key(&quiet_third.address));
}

#[test]
fn raising_max_runs_only_the_new_passes() {
    let sb = Sandbox::new();
    let (first, rec, ran) = sb.run(&graph(&plan(r#"passes min=2 max=3 until-ci="2%""#)));
    assert!(first.ok(), "{:?}", rec.failed);
    assert_eq!(passes_of(&ran, "noisy"), 2 * 3);
    let (second, rec, ran) = sb.run(&graph(&plan(r#"passes min=2 max=5 until-ci="2%""#)));
    assert!(second.ok(), "{:?}", rec.failed);
    // passes 1–3 of the noisy points are served from the store; 4 and 5 run
    assert_eq!(passes_of(&ran, "noisy"), 2 * 2, "{ran:?}");
    assert!(
        ran.iter().all(|a| a.ends_with("#4") || a.ends_with("#5")),
        "{ran:?}"
    );
    assert_eq!(passes_of(&ran, "quiet"), 0, "{ran:?}");
    // a fixed `passes 2` is the first two passes of the same keys: all cached
    let (third, _, ran) = sb.run(&graph(&plan("passes 2")));
    assert!(third.ok());
    assert!(ran.is_empty(), "{ran:?}");
}

#[test]
fn variants_and_points_interleave_pass_by_pass() {
    let g = graph(&plan("passes 3"));
    let sb = Sandbox::new();
    let (summary, rec, _) = sb.run(&g);
    assert!(summary.ok(), "{:?}", rec.failed);
    let order = &summary.measurement_order;
    assert_eq!(order.len(), 2 * 2 * 3);
    // block b holds pass b of every variant at every point
    for (b, block) in order.chunks(4).enumerate() {
        let pass = format!("#{}", b + 1);
        assert!(block.iter().all(|a| a.ends_with(&pass)), "{order:?}");
        for server in ["quiet", "noisy"] {
            assert_eq!(
                block
                    .iter()
                    .filter(|a| a.contains(&format!("/{server}[")))
                    .count(),
                2,
                "{order:?}"
            );
        }
    }
    // never all passes of one variant in a row
    let servers: Vec<bool> = order.iter().map(|a| a.contains("/noisy[")).collect();
    assert!(servers
        .windows(4)
        .any(|w| w.iter().any(|&n| n) && w.iter().any(|&n| !n)));
}

/// `plan` with a claim at two threads beside the table.
fn plan_with_claim(passes: &str) -> String {
    format!(
        "{}claim \"noisy is faster\" {{ metric \"tps\"; where threads=2; expect \"noisy > quiet\" by=\"10%\" }}\n",
        plan(passes)
    )
}

/// The table of the run's analysis step, from the store.
fn table_of(sb: &Sandbox, g: &StepGraph) -> serde_json::Value {
    let step = g
        .steps
        .iter()
        .find(|s| s.kind == StepKind::ANALYSIS)
        .unwrap();
    let names = sb.store.names("adaptive").unwrap();
    let record = sb.store.get_record(&names[&step.address]).unwrap().unwrap();
    let blob = &record.outputs["table.json"];
    serde_json::from_slice(&sb.store.read_blob(blob).unwrap()).unwrap()
}

#[test]
fn until_decided_stops_a_point_when_its_questions_are_decided_with_balanced_passes() {
    let g = graph(&plan_with_claim(r#"passes min=4 max=10 until="decided""#));
    let sb = Sandbox::new();
    // `noisy` here is quiet and 1.5× faster: every question is decided after a few looks
    let (summary, rec, ran) = sb.run_with(&g, &[], &["noisy"]);
    assert!(summary.ok(), "{:?}", rec.failed);
    let (quiet, fast) = (passes_of(&ran, "quiet"), passes_of(&ran, "noisy"));
    assert_eq!(quiet, fast, "passes stay balanced: {ran:?}");
    assert!(
        quiet > 2 * 4 && quiet < 2 * 10,
        "{ran:?} {:?}",
        rec.decisions
    );
    for d in &rec.decisions {
        assert!(d.look.is_some(), "{d:?}");
        assert_eq!(d.ci_half_width, None);
    }
    let stop = rec.decisions.iter().find(|d| !d.needed).expect("a stop");
    assert!(
        stop.why.contains("every question on it is decided"),
        "{stop:?}"
    );
    // the table decided at the look its passes stand at, and says so
    let table = table_of(&sb, &g);
    for cell in table["cells"].as_array().unwrap() {
        let Some(c) = cell.get("comparison").filter(|c| !c.is_null()) else {
            continue;
        };
        assert_eq!(c["verdict"], json!("faster"), "{c}");
        let look = &c["look"];
        assert!(look["nominal_alpha"].as_f64().unwrap() < 0.05, "{look}");
        assert_eq!(look["passes"].as_u64().unwrap() as usize, quiet / 2);
    }
}

#[test]
fn until_decided_stops_early_when_max_passes_cannot_decide() {
    let g = graph(&plan(r#"passes min=4 max=8 until="decided""#));
    let sb = Sandbox::new();
    // both servers swing ±30% the same way: a 5% band could never be resolved in 8 passes
    let (summary, rec, ran) = sb.run_with(&g, &["quiet", "noisy"], &[]);
    assert!(summary.ok(), "{:?}", rec.failed);
    assert_eq!(
        passes_of(&ran, "quiet"),
        2 * 4,
        "{ran:?} {:?}",
        rec.decisions
    );
    assert_eq!(passes_of(&ran, "noisy"), 2 * 4, "{ran:?}");
    let first = &rec.decisions[0];
    assert!(
        !first.needed && first.why.contains("cannot decide"),
        "{first:?}"
    );
    // later passes of a stopped point are not needed either, without a new look
    assert!(rec
        .decisions
        .iter()
        .any(|d| d.why.contains("stopped at an earlier look")));
}

/// A trend claim under `until="decided"`: the rule asks it at each look (through the claim's
/// own check). `noisy` is steadily 1.5× faster at both thread counts, so the gain neither
/// grows nor shrinks: the question stays undecided, and having no passes estimate it never
/// stops a point for futility — each point runs to `max`.
#[test]
fn until_decided_asks_a_trend_claim_which_runs_to_max_while_undecided() {
    let text = format!(
        "{}claim \"the gain grows\" {{ metric \"tps\"; expect \"noisy > quiet\" trend=\"grows\" x=\"threads\" }}\n",
        plan(r#"passes min=4 max=6 until="decided""#)
            .replace("analysis \"tps\" { table metric=\"tps\" rows=\"server\" columns=\"threads\" baseline=\"quiet\" }\n", "")
    );
    let g = graph(&text);
    let sb = Sandbox::new();
    let (summary, rec, ran) = sb.run_with(&g, &[], &["noisy"]);
    assert!(summary.ok(), "{:?}", rec.failed);
    assert_eq!(
        passes_of(&ran, "quiet"),
        2 * 6,
        "{ran:?} {:?}",
        rec.decisions
    );
    assert_eq!(passes_of(&ran, "noisy"), 2 * 6, "{ran:?}");
    assert!(
        rec.decisions.iter().all(|d| d.needed),
        "{:?}",
        rec.decisions
    );
}

/// A table of runs (`columns="run"`, as a study printing each run of a server start does)
/// among the readers of a block under `until="decided"`: the rule reads the runs as that
/// table does, so the point still stops once its questions are decided — the table of runs
/// is never an error that keeps every point measuring to `max`.
#[test]
fn until_decided_reads_a_table_of_runs_as_the_table_does() {
    let text = plan_with_claim(r#"passes min=4 max=10 until="decided"; runs 2"#).replace(
        "analysis \"tps\"",
        "analysis \"per run\" { table metric=\"tps\" rows=\"server\" columns=\"run\" facet=\"threads\" }\nanalysis \"tps\"",
    );
    let g = graph(&text);
    let sb = Sandbox::new();
    let (summary, rec, ran) = sb.run_with(&g, &[], &["noisy"]);
    assert!(summary.ok(), "{:?}", rec.failed);
    for d in &rec.decisions {
        assert!(!d.why.contains("no decision possible"), "{d:?}");
    }
    assert!(
        passes_of(&ran, "quiet") < 2 * 10,
        "{ran:?} {:?}",
        rec.decisions
    );
}

/// The rule keeps its answers in the machine's cache. A reproduction measures the same keys
/// again (same definitions, machine class and passes) with other figures: an answer kept for
/// the first campaign's passes must not decide the second's. Here the first campaign is too
/// noisy for 10 passes to decide (it stops at `min`); the second, into a fresh store on the
/// same machine, is quiet with a clear gain and measures past `min` until it is decided.
#[test]
fn an_answer_kept_for_one_campaign_never_decides_another_with_the_same_keys() {
    let g = graph(&plan_with_claim(r#"passes min=4 max=10 until="decided""#));
    let first = Sandbox::new();
    let (summary, _, ran) = first.run_with(&g, &["quiet", "noisy"], &[]);
    assert!(summary.ok());
    assert_eq!(passes_of(&ran, "quiet"), 2 * 4, "{ran:?}");
    let again = Sandbox::new();
    let shared = Sandbox {
        host: cairn_kinds::Host::new(first._dir.path().join("cache"), CancelToken::new()),
        ..again
    };
    let (summary, rec, ran) = shared.run_with(&g, &[], &["noisy"]);
    assert!(summary.ok(), "{:?}", rec.failed);
    assert!(
        passes_of(&ran, "quiet") > 2 * 4,
        "{ran:?} {:?}",
        rec.decisions
    );
}
