//! The scheduler with a fake step kind, no Docker: dependency order, the build lane beside
//! the exclusive measurement lane, keep-going, cancellation, transient retries, caching, and
//! that a failed step is never recorded.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use cairn_engine::execute::{Built, Done};
use cairn_engine::{
    Env, Event, Kind, Registry, Reporter, RetryPolicy, RunOptions, RunSummary, StepError, Unusable,
};
use cairn_graph::{Fingerprint, Step, StepGraph, StepKind};
use cairn_store::{Record, Store};

/// What the fake does when asked to perform a step (by the step's name).
#[derive(Clone, Copy, PartialEq)]
enum Act {
    Succeed,
    Fail,
    /// Fail transiently this many times, then succeed.
    FlakyTimes(u32),
    /// Cancel the run, then report the cancellation (as a step interrupted by Ctrl-C does).
    Cancel,
    /// Wait until another step with this act is running too (bounded: a hang guard).
    Meet,
    /// Panic (as a bug in a kind or a driver would).
    Panic,
}

#[derive(Default)]
struct Log {
    /// `start <address>` / `end <address>`, in order.
    lines: Vec<String>,
    running: BTreeSet<String>,
    /// Steps that were running when an exclusive step was (never allowed).
    overlaps: Vec<String>,
    tries: HashMap<String, u32>,
    met: usize,
}

struct Fake {
    acts: HashMap<String, Act>,
    log: Arc<(Mutex<Log>, Condvar)>,
    /// Steps whose records the kind refuses (as a lock that refuses an image's packages).
    refused: BTreeSet<String>,
    /// Steps whose records serve but whose product is gone (as an image removed from the
    /// engine): asked only when a step that reads them runs.
    absent: BTreeSet<String>,
    /// Every presence question asked, by address.
    asked: Arc<Mutex<Vec<String>>>,
    /// The campaign its measurements are made in now (recorded in their `extra`); `None`:
    /// it keeps no campaigns.
    campaign: Option<String>,
}

impl Fake {
    fn new(acts: &[(&str, Act)]) -> (Fake, Arc<(Mutex<Log>, Condvar)>) {
        let log = Arc::new((Mutex::new(Log::default()), Condvar::new()));
        (
            Fake {
                acts: acts.iter().map(|(n, a)| (n.to_string(), *a)).collect(),
                log: log.clone(),
                refused: BTreeSet::new(),
                absent: BTreeSet::new(),
                asked: Arc::default(),
                campaign: None,
            },
            log,
        )
    }
}

impl Kind for Fake {
    fn campaign(&self, record: &Record) -> Option<String> {
        self.campaign.as_ref()?;
        record.extra.get("campaign")?.as_str().map(String::from)
    }

    fn campaign_now(&self, _env: &Env<'_>) -> Option<String> {
        self.campaign.clone()
    }

    fn accepts(&self, _env: &Env<'_>, record: &Record) -> Result<(), Unusable> {
        if self.refused.contains(&record.address) {
            return Err(Unusable {
                what: "refused",
                why: "the fake refuses it".into(),
            });
        }
        Ok(())
    }

    fn present(&self, _env: &Env<'_>, record: &Record) -> Result<(), Unusable> {
        self.asked.lock().unwrap().push(record.address.clone());
        if self.absent.contains(&record.address) {
            return Err(Unusable {
                what: "gone",
                why: "the fake's product is gone".into(),
            });
        }
        Ok(())
    }

    fn perform(
        &self,
        env: &Env<'_>,
        step: &Step,
        _key: &str,
        _inputs: &[&Done],
    ) -> Result<Built, StepError> {
        let (lock, cv) = &*self.log;
        let act = self.acts.get(&step.name).copied().unwrap_or(Act::Succeed);
        {
            let mut log = lock.lock().unwrap();
            log.lines.push(format!("start {}", step.address));
            let exclusive = step.measure;
            let others: Vec<String> = log.running.iter().cloned().collect();
            let exclusive_running = others.iter().any(|a| a.contains("measure"));
            if (exclusive && !others.is_empty()) || exclusive_running {
                log.overlaps
                    .push(format!("{} beside {others:?}", step.address));
            }
            log.running.insert(step.address.clone());
            *log.tries.entry(step.address.clone()).or_default() += 1;
        }
        let result = match act {
            Act::Succeed => Ok(()),
            Act::Fail => Err(StepError::permanent("the fake fails").context("fake step")),
            Act::FlakyTimes(n) => {
                let tries = lock.lock().unwrap().tries[&step.address];
                if tries <= n {
                    Err(StepError::transient("the engine hiccuped"))
                } else {
                    Ok(())
                }
            }
            Act::Panic => panic!("the fake panics"),
            Act::Cancel => {
                env.host
                    .as_any()
                    .downcast_ref::<FakeHost>()
                    .expect("the fake host")
                    .cancel();
                Err(StepError::cancelled())
            }
            Act::Meet => {
                let mut log = lock.lock().unwrap();
                log.met += 1;
                cv.notify_all();
                let (log, timeout) = cv
                    .wait_timeout_while(log, Duration::from_secs(20), |l| l.met < 2)
                    .unwrap();
                drop(log);
                if timeout.timed_out() {
                    Err(StepError::permanent("no other build ran beside this one"))
                } else {
                    Ok(())
                }
            }
        };
        let mut log = lock.lock().unwrap();
        log.running.remove(&step.address);
        log.lines.push(format!("end {}", step.address));
        drop(log);
        result?;
        // a measurement made in a campaign differs from one made in another
        let made = match &self.campaign {
            Some(c) if step.measure => format!("{} in {c}", step.address),
            _ => step.address.clone(),
        };
        let blob = env
            .store
            .put_blob(made.as_bytes())
            .map_err(|e| StepError::permanent(e.to_string()))?;
        let mut extra = serde_json::Map::new();
        if let Some(c) = self.campaign.as_ref().filter(|_| step.measure) {
            extra.insert("campaign".into(), c.clone().into());
        }
        Ok(Built {
            outputs: BTreeMap::from([("out".to_string(), blob)]),
            extra,
            ..Default::default()
        })
    }
}

/// Events as (event, address) pairs, and the keys of failed steps.
#[derive(Default)]
struct Recorder {
    events: Vec<(String, String)>,
    failed: Vec<(String, StepError)>,
}

impl Reporter for Recorder {
    fn event(&mut self, e: &Event<'_>) {
        let (name, step) = match e {
            Event::StepCached { step, .. } => ("cached", step),
            Event::StepStarted { step, .. } => ("started", step),
            Event::StepUnserved { step, .. } => ("unserved", step),
            Event::MeasuredAnew { step, .. } => ("anew", step),
            Event::StepFinished { step, .. } => ("finished", step),
            Event::StepFailed { step, key, error } => {
                self.failed.push((key.to_string(), (*error).clone()));
                ("failed", step)
            }
            Event::StepRetrying { step, .. } => ("retrying", step),
            Event::StepSkipped { step, .. } => ("skipped", step),
            _ => return,
        };
        self.events.push((name.to_string(), step.address.clone()));
    }
}

impl Recorder {
    fn with(&self, event: &str) -> BTreeSet<String> {
        self.events
            .iter()
            .filter(|(e, _)| e == event)
            .map(|(_, a)| a.clone())
            .collect()
    }
}

fn graph(text: &str) -> StepGraph {
    let plan = cairn_plan::parse_str("fake.kdl", text)
        .unwrap_or_else(|e| panic!("{}", cairn_plan::render(&e)));
    cairn_graph::resolve(&plan).expect("resolves")
}

fn fingerprint() -> Fingerprint {
    Fingerprint {
        cpu_model: "Fake CPU".into(),
        cores: 2,
        threads: 2,
        memory_gib: 1,
        kernel: "test".into(),
        runtime: "host".into(),
    }
}

struct Sandbox {
    /// The store's directory, removed when the sandbox goes.
    _dir: tempfile::TempDir,
    store: Store,
    fp: Fingerprint,
    /// No container engine, no runtime: the fake kind needs none.
    host: FakeHost,
}

/// A machine that only knows whether the run was cancelled.
#[derive(Default)]
struct FakeHost {
    cancelled: std::sync::atomic::AtomicBool,
}

impl FakeHost {
    fn cancel(&self) {
        self.cancelled
            .store(true, std::sync::atomic::Ordering::SeqCst);
    }
}

impl cairn_engine::Host for FakeHost {
    fn is_cancelled(&self) -> bool {
        self.cancelled.load(std::sync::atomic::Ordering::SeqCst)
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

impl Sandbox {
    fn new() -> Sandbox {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("results")).unwrap();
        Sandbox {
            _dir: dir,
            store,
            fp: fingerprint(),
            host: FakeHost::default(),
        }
    }

    fn run(&self, g: &StepGraph, fake: Fake, opts: &RunOptions) -> (RunSummary, Recorder) {
        let kinds = Registry::empty().with(StepKind::COMMAND, fake);
        let mut rec = Recorder::default();
        let summary = cairn_engine::run(g, &self.env(g, &kinds), opts, &mut rec);
        (summary, rec)
    }

    /// What `cairn plan` says of each step, with `fake` as the kind.
    fn statuses(
        &self,
        g: &StepGraph,
        fake: Fake,
        opts: &RunOptions,
    ) -> Vec<cairn_engine::StepStatus> {
        let kinds = Registry::empty().with(StepKind::COMMAND, fake);
        cairn_engine::statuses(g, &self.env(g, &kinds), &opts.fresh, false)
    }

    fn env<'a>(&'a self, g: &'a StepGraph, kinds: &'a Registry) -> Env<'a> {
        Env {
            study: &g.study,
            store: &self.store,
            fingerprint: &self.fp,
            read_classes: None,
            machine: &serde_json::Value::Null,
            kinds,
            lock: None,
            run_id: "fake-run",
            host: &self.host,
        }
    }
}

fn opts(jobs: usize) -> RunOptions {
    RunOptions {
        jobs,
        keep_going: false,
        only: Vec::new(),
        fresh: Vec::new(),
        seed: Some(7),
        retries: RetryPolicy::default(),
    }
}

const CHAIN: &str = r#"
study "fake"
step "a" { run "x"; output "o" }
step "b" { run "x"; output "o"; needs "a" }
step "c" { run "x"; output "o"; needs "b"; needs "d" }
step "d" { run "x"; output "o"; matrix { n 1 2 3 } }
"#;

#[test]
fn every_step_starts_after_its_inputs_finished() {
    let g = graph(CHAIN);
    let sb = Sandbox::new();
    let (fake, log) = Fake::new(&[]);
    let (summary, _) = sb.run(&g, fake, &opts(4));
    assert!(summary.ok(), "{summary:?}");
    assert_eq!(summary.ran, g.steps.len());
    let lines = log.0.lock().unwrap().lines.clone();
    let at = |l: String| lines.iter().position(|x| *x == l).expect("logged");
    for s in &g.steps {
        for i in &s.inputs {
            let input = &g.steps[i.from].address;
            assert!(
                at(format!("end {input}")) < at(format!("start {}", s.address)),
                "{} started before its input {input} ended: {lines:?}",
                s.address
            );
        }
    }
}

#[test]
fn builds_run_side_by_side_up_to_jobs() {
    let g = graph(
        r#"
study "fake"
step "x" { run "x"; output "o" }
step "y" { run "x"; output "o" }
"#,
    );
    let sb = Sandbox::new();
    let (fake, log) = Fake::new(&[("x", Act::Meet), ("y", Act::Meet)]);
    let (summary, rec) = sb.run(&g, fake, &opts(2));
    assert!(summary.ok(), "{:?}", rec.failed);
    assert_eq!(log.0.lock().unwrap().met, 2);
}

#[test]
fn measurements_run_alone_in_the_seeded_order() {
    let g = graph(
        r#"
study "fake"
step "build" { run "x"; output "o"; matrix { n 1 2 3 4 } }
step "measure" { run "x"; output "o"; measure #true; passes 3; matrix { v 1 2 } }
step "after" { run "x"; output "o"; needs "measure"; matrix { n 1 2 } }
"#,
    );
    let sb = Sandbox::new();
    let (fake, log) = Fake::new(&[]);
    let (summary, _) = sb.run(&g, fake, &opts(4));
    assert!(summary.ok());
    let log = log.0.lock().unwrap();
    assert!(log.overlaps.is_empty(), "{:?}", log.overlaps);
    assert_eq!(summary.measurement_order.len(), 6);
    // pass by pass: every pass-1 measurement before any pass-2 one
    let passes: Vec<char> = summary
        .measurement_order
        .iter()
        .map(|a| a.chars().last().unwrap())
        .collect();
    assert_eq!(passes, ['1', '1', '2', '2', '3', '3']);
    // the same seed gives the same order
    let sb2 = Sandbox::new();
    let (fake, _) = Fake::new(&[]);
    let (again, _) = sb2.run(&g, fake, &opts(4));
    assert_eq!(again.measurement_order, summary.measurement_order);
}

#[test]
fn a_failure_stops_the_run_and_is_never_recorded() {
    let g = graph(CHAIN);
    let sb = Sandbox::new();
    let (fake, _) = Fake::new(&[("b", Act::Fail)]);
    let (summary, rec) = sb.run(&g, fake, &opts(1));
    assert_eq!(summary.failed, 1);
    assert!(!summary.ok());
    let (key, err) = &rec.failed[0];
    assert_eq!(err.chain, ["fake step", "the fake fails"]);
    assert!(
        sb.store.get_record(key).unwrap().is_none(),
        "a failure was recorded"
    );
    assert!(rec.with("skipped").contains("c"), "{:?}", rec.events);
}

/// A kind that panics fails its step like any failure: before, the scheduler waited forever
/// for the step's report (the run hung with, e.g., the trial's server still running).
#[test]
fn a_panicking_step_fails_and_the_run_ends() {
    let (done, finished) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let g = graph(CHAIN);
        let sb = Sandbox::new();
        let (fake, _) = Fake::new(&[("b", Act::Panic)]);
        let (summary, rec) = sb.run(&g, fake, &opts(2));
        let failed: Vec<(String, Vec<String>)> = rec
            .failed
            .iter()
            .map(|(k, e)| (k.clone(), e.chain.clone()))
            .collect();
        let recorded = failed
            .iter()
            .any(|(k, _)| sb.store.get_record(k).unwrap().is_some());
        let _ = done.send((summary.failed, failed, recorded));
    });
    // a hang guard, not a timing assertion
    let (n_failed, failed, recorded) = finished
        .recv_timeout(Duration::from_secs(120))
        .expect("the run ended");
    assert_eq!(n_failed, 1);
    assert_eq!(failed[0].1, ["the step panicked: the fake panics"]);
    assert!(!recorded, "a panicked step was recorded");
}

#[test]
fn keep_going_runs_what_does_not_depend_on_a_failure() {
    let g = graph(CHAIN);
    let sb = Sandbox::new();
    let (fake, _) = Fake::new(&[("a", Act::Fail)]);
    let mut o = opts(2);
    o.keep_going = true;
    let (summary, rec) = sb.run(&g, fake, &o);
    assert_eq!(rec.with("failed"), BTreeSet::from(["a".to_string()]));
    assert_eq!(
        rec.with("skipped"),
        BTreeSet::from(["b".to_string(), "c".to_string()])
    );
    assert_eq!(
        rec.with("finished"),
        BTreeSet::from(["d[n=1]".into(), "d[n=2]".into(), "d[n=3]".into()])
    );
    assert_eq!((summary.failed, summary.skipped, summary.ran), (1, 2, 3));
}

#[test]
fn cancellation_stops_the_run_and_records_nothing_of_the_step() {
    let g = graph(CHAIN);
    let sb = Sandbox::new();
    let (fake, _) = Fake::new(&[("a", Act::Cancel)]);
    let (summary, rec) = sb.run(&g, fake, &opts(1));
    assert!(summary.cancelled);
    assert_eq!(summary.failed, 0);
    assert!(rec.with("skipped").contains("a"));
    assert!(!rec.with("finished").contains("a"));
    assert!(!rec.with("started").contains("c"));
    let names = sb.store.names("fake").unwrap_or_default();
    assert!(!names.contains_key("a"), "the cancelled step was recorded");
}

#[test]
fn transient_failures_of_builds_are_retried_and_the_retry_recorded() {
    let g = graph(
        r#"
study "fake"
step "flaky" { run "x"; output "o" }
"#,
    );
    let sb = Sandbox::new();
    let (fake, _) = Fake::new(&[("flaky", Act::FlakyTimes(1))]);
    let (summary, rec) = sb.run(&g, fake, &opts(1));
    assert!(summary.ok(), "{:?}", rec.failed);
    assert_eq!(summary.retried, 1);
    assert!(rec.with("retrying").contains("flaky"));
    let key = sb.store.names("fake").unwrap()["flaky"].clone();
    let record = sb.store.get_record(&key).unwrap().unwrap();
    assert_eq!(record.extra["attempts"][0]["class"], "transient");
    assert_eq!(record.extra["attempts"][0]["error"], "the engine hiccuped");

    // bounded: more transient failures than tries fail the step
    let sb = Sandbox::new();
    let (fake, log) = Fake::new(&[("flaky", Act::FlakyTimes(10))]);
    let (summary, _) = sb.run(&g, fake, &opts(1));
    assert_eq!(summary.failed, 1);
    assert_eq!(log.0.lock().unwrap().tries["flaky"], 3, "1 try + 2 retries");
}

#[test]
fn measurements_are_not_retried_unless_asked() {
    let g = graph(
        r#"
study "fake"
step "m" { run "x"; output "o"; measure #true }
"#,
    );
    let sb = Sandbox::new();
    let (fake, _) = Fake::new(&[("m", Act::FlakyTimes(1))]);
    let (summary, _) = sb.run(&g, fake, &opts(1));
    assert_eq!((summary.failed, summary.retried), (1, 0));

    let sb = Sandbox::new();
    let (fake, _) = Fake::new(&[("m", Act::FlakyTimes(1))]);
    let mut o = opts(1);
    o.retries.measurements = 1;
    let (summary, _) = sb.run(&g, fake, &o);
    assert!(summary.ok());
    assert_eq!(summary.retried, 1);
    let key = sb.store.names("fake").unwrap()["m"].clone();
    let record = sb.store.get_record(&key).unwrap().unwrap();
    assert_eq!(record.extra["attempts"].as_array().unwrap().len(), 1);
    assert_eq!(record.extra["order"]["position"], 1, "the second run of m");
}

#[test]
fn a_second_run_is_served_from_the_store_unless_the_kind_refuses_a_record() {
    let g = graph(CHAIN);
    let sb = Sandbox::new();
    let (fake, _) = Fake::new(&[]);
    let (first, _) = sb.run(&g, fake, &opts(2));
    assert!(first.ok());
    let (fake, log) = Fake::new(&[]);
    let (second, _) = sb.run(&g, fake, &opts(2));
    assert_eq!((second.cached, second.ran), (g.steps.len(), 0));
    assert!(log.0.lock().unwrap().lines.is_empty());

    // the kind refuses a's record (as a lock refuses an image's packages): a runs again; its
    // output is the same, so what depends on it stays cached
    let (mut fake, _) = Fake::new(&[]);
    fake.refused.insert("a".into());
    let (third, rec) = sb.run(&g, fake, &opts(2));
    assert_eq!(rec.with("finished"), BTreeSet::from(["a".to_string()]));
    assert_eq!(third.cached, g.steps.len() - 1);
}

#[test]
fn a_run_that_runs_nothing_asks_only_whether_its_goals_are_here() {
    let g = graph(CHAIN);
    let sb = Sandbox::new();
    let (fake, _) = Fake::new(&[]);
    assert!(sb.run(&g, fake, &opts(2)).0.ok());
    // a's product is gone (its image removed), but nothing that reads it runs: every step
    // is served from its record, and nobody asks about a
    let (mut fake, _) = Fake::new(&[]);
    fake.absent.insert("a".into());
    let asked = fake.asked.clone();
    let (second, rec) = sb.run(&g, fake, &opts(2));
    assert_eq!((second.cached, second.ran), (g.steps.len(), 0));
    assert!(rec.with("finished").is_empty());
    // only the run's goal (c: nothing reads it) is asked whether its product is here
    assert_eq!(*asked.lock().unwrap(), ["c"]);

    // a goal whose product is gone runs again (an image a plan only builds, removed)
    let (mut fake, _) = Fake::new(&[]);
    fake.absent.insert("c".into());
    let (third, rec) = sb.run(&g, fake, &opts(2));
    assert!(third.ok());
    assert_eq!(rec.with("finished"), BTreeSet::from(["c".to_string()]));
}

/// A trial's shape: it reads an image and a dataset that reads the image.
const DIAMOND: &str = r#"
study "fake"
step "image" { run "x"; output "o" }
step "dataset" { run "x"; output "o"; needs "image" }
step "trial" { run "x"; output "o"; needs "image"; needs "dataset"; matrix { n 1 2 3 } }
step "other" { run "x"; output "o"; needs "image" }
step "more" { run "x"; output "o"; needs "image"; needs "other"; matrix { n 1 2 3 } }
step "all" { run "x"; output "o"; needs "trial"; needs "more" }
"#;

#[test]
fn inputs_whose_products_are_gone_run_again_in_order_when_one_reads_the_other() {
    let g = graph(DIAMOND);
    let sb = Sandbox::new();
    let (fake, _) = Fake::new(&[]);
    assert!(sb.run(&g, fake, &opts(1)).0.ok());
    // the image and the dataset were served, then found gone when the trial (--fresh) asks:
    // the dataset must wait for the image running again (it once started without it)
    let (mut fake, log) = Fake::new(&[]);
    fake.absent.insert("image".into());
    fake.absent.insert("dataset".into());
    fake.absent.insert("other".into());
    let mut o = opts(1);
    o.fresh = vec![
        cairn_graph::Selector::parse("trial").unwrap(),
        cairn_graph::Selector::parse("more").unwrap(),
    ];
    let (summary, rec) = sb.run(&g, fake, &o);
    assert!(summary.ok(), "{summary:?}");
    assert_eq!(rec.with("finished").len(), 9, "{:?}", rec.with("finished"));
    let lines = log.0.lock().unwrap().lines.clone();
    let pos = |l: &str| lines.iter().position(|x| x.starts_with(l)).unwrap();
    assert!(pos("end image") < pos("start dataset"), "{lines:?}");
    assert!(pos("end dataset") < pos("start trial"), "{lines:?}");
    assert!(pos("end other") < pos("start more"), "{lines:?}");
}

#[test]
fn an_input_whose_product_is_gone_runs_again_before_the_step_that_reads_it() {
    let g = graph(CHAIN);
    let sb = Sandbox::new();
    let (fake, _) = Fake::new(&[]);
    assert!(sb.run(&g, fake, &opts(1)).0.ok());
    // b must run again (--fresh): it reads a, whose product is gone, so a runs first; a's
    // output is the same, so b's key is too, and c stays served
    let (mut fake, log) = Fake::new(&[]);
    fake.absent.insert("a".into());
    let mut o = opts(1);
    o.fresh = vec![cairn_graph::Selector::parse("b").unwrap()];
    let (summary, rec) = sb.run(&g, fake, &o);
    assert!(summary.ok(), "{summary:?}");
    assert_eq!(
        rec.with("finished"),
        BTreeSet::from(["a".to_string(), "b".to_string()])
    );
    assert_eq!(rec.with("unserved"), BTreeSet::from(["a".to_string()]));
    let lines = log.0.lock().unwrap().lines.clone();
    let pos = |l: &str| lines.iter().position(|x| x == l).unwrap();
    assert!(pos("end a") < pos("start b"), "{lines:?}");
    assert_eq!(
        (summary.ran, summary.cached),
        (2, g.steps.len() - 2),
        "a is counted once, as run"
    );
}

/// A point's measurements, compared with each other (two variants, two passes), after a build.
const POINT: &str = r#"
study "fake"
step "build" { run "x"; output "o" }
step "m" { run "x"; output "o"; needs "build"; measure #true; passes 2; matrix { v "a" "b" } }
"#;

/// [`POINT`] with its measurements in one group compared together (as a trials block's
/// servers at one matrix point are).
fn point_graph() -> StepGraph {
    let mut g = graph(POINT);
    for s in &mut g.steps {
        if s.measure {
            s.together = Some("m".into());
        }
    }
    g
}

/// The addresses of `g`'s measurements.
fn measurements(g: &StepGraph) -> BTreeSet<String> {
    g.steps
        .iter()
        .filter(|s| s.measure)
        .map(|s| s.address.clone())
        .collect()
}

fn in_campaign(c: &str) -> Fake {
    let (mut fake, _) = Fake::new(&[]);
    fake.campaign = Some(c.into());
    fake
}

fn fresh(addresses: &str) -> RunOptions {
    RunOptions {
        fresh: vec![cairn_graph::Selector::parse(addresses).expect("a selector")],
        ..opts(1)
    }
}

#[test]
fn measurements_compared_together_are_measured_in_one_campaign() {
    let g = point_graph();
    let measured = measurements(&g);
    let sb = Sandbox::new();
    assert!(sb.run(&g, in_campaign("first"), &opts(1)).0.ok());

    // another campaign (the machine rebooted), nothing changed: the point's records are all
    // of one campaign, so they serve together
    let (again, rec) = sb.run(&g, in_campaign("second"), &opts(1));
    assert_eq!(
        (again.cached, again.ran, again.measured_anew),
        (g.steps.len(), 0, 0)
    );
    assert!(rec.with("anew").is_empty());

    // one variant measured now: the other's records, of the first campaign, are measured
    // anew beside it — and `cairn plan` says so first
    let only_b = fresh("m[v=b]*");
    let plan = sb.statuses(&g, in_campaign("second"), &only_b);
    let anew: BTreeSet<String> = plan
        .iter()
        .filter(|s| {
            s.reasons
                .iter()
                .any(|r| matches!(r, cairn_engine::Reason::MeasuredAnew { .. }))
        })
        .map(|s| s.address.clone())
        .collect();
    let of_a: BTreeSet<String> = measured
        .iter()
        .filter(|a| a.contains("v=a"))
        .cloned()
        .collect();
    assert_eq!(anew, of_a);
    let (third, rec) = sb.run(&g, in_campaign("second"), &only_b);
    assert!(third.ok());
    assert_eq!(rec.with("anew"), of_a);
    assert_eq!(rec.with("finished"), measured);
    assert_eq!(third.measured_anew, of_a.len());
    assert_eq!(third.cached, 1, "only the build is served");

    // the point is now of one campaign again: all served, in the same campaign or another
    for c in ["second", "third"] {
        let (fourth, _) = sb.run(&g, in_campaign(c), &opts(1));
        assert_eq!((fourth.cached, fourth.ran), (g.steps.len(), 0));
    }
}

#[test]
fn a_point_measured_in_several_campaigns_is_measured_again_together() {
    let g = point_graph();
    let sb = Sandbox::new();
    assert!(sb.run(&g, in_campaign("first"), &opts(1)).0.ok());
    // b measured alone (`--only`) in another campaign: the point now mixes two
    let only_b = RunOptions {
        only: fresh("m[v=b]*").fresh.clone(),
        ..fresh("m[v=b]*")
    };
    let (alone, rec) = sb.run(&g, in_campaign("second"), &only_b);
    assert_eq!((alone.ran, alone.measured_anew), (2, 0));
    assert!(rec.with("anew").is_empty());
    // a run in a third campaign measures the whole point anew, together
    let (together, rec) = sb.run(&g, in_campaign("third"), &opts(1));
    assert_eq!((together.ran, together.measured_anew), (4, 4));
    assert_eq!(rec.with("anew").len(), 4);
    let (served, _) = sb.run(&g, in_campaign("third"), &opts(1));
    assert_eq!(served.ran, 0);
}

/// Passes 2 and 3 of a point (the third conditional, decided on `tps`) as a trials block's
/// `passes min=2 max=3 until="decided"` gives them.
fn two_or_three_passes(point: String) -> cairn_graph::AdaptivePasses {
    cairn_graph::AdaptivePasses {
        min: 2,
        max: 3,
        until_ci: None,
        until_decided: true,
        metric: "tps".into(),
        point,
    }
}

/// A rule that needs every conditional pass, or none.
struct Needs(bool);

impl cairn_engine::adaptive::PassRule for Needs {
    fn decide(
        &self,
        _env: &Env<'_>,
        _graph: &StepGraph,
        step: &Step,
        _record_key: &dyn Fn(cairn_graph::StepId) -> Option<String>,
    ) -> cairn_engine::adaptive::Decision {
        cairn_engine::adaptive::Decision {
            step: step.address.clone(),
            point: String::new(),
            pass: step.pass,
            metric: "tps".into(),
            passes: 0,
            ci_half_width: None,
            until_ci: None,
            look: None,
            needed: self.0,
            why: "the fake rule".into(),
        }
    }
}

#[test]
fn a_pass_a_rule_adds_to_a_point_served_from_an_earlier_campaign_measures_the_point_anew() {
    // three passes per variant, the third conditional
    let mut g = graph(&POINT.replace("passes 2", "passes 3"));
    for s in &mut g.steps {
        if s.measure {
            s.together = Some("m".into());
            let point = s.address.split('#').next().unwrap_or_default().to_string();
            s.adaptive = Some(two_or_three_passes(point));
        }
    }
    let sb = Sandbox::new();
    let run = |campaign: &str, needs: bool| {
        let kinds = Registry::empty()
            .with(StepKind::COMMAND, in_campaign(campaign))
            .with_pass_rule(Needs(needs));
        let mut rec = Recorder::default();
        let summary = cairn_engine::run(&g, &sb.env(&g, &kinds), &opts(1), &mut rec);
        (summary, rec)
    };
    let (first, _) = run("first", false);
    assert!(first.ok());
    assert_eq!(
        (first.ran, first.not_needed),
        (5, 2),
        "the build and two passes per variant"
    );

    // in another campaign the rule now needs the third pass: the first two of both variants,
    // served from the first campaign, are measured anew before it — as `cairn plan` says
    let kinds = Registry::empty()
        .with(StepKind::COMMAND, in_campaign("second"))
        .with_pass_rule(Needs(true));
    let planned = cairn_engine::statuses(&g, &sb.env(&g, &kinds), &[], false);
    let anew = planned
        .iter()
        .filter(|s| {
            s.reasons
                .iter()
                .any(|r| matches!(r, cairn_engine::Reason::MeasuredAnew { .. }))
        })
        .count();
    assert_eq!(anew, 4);
    let (second, rec) = run("second", true);
    assert!(second.ok());
    assert_eq!(second.measured_anew, 4);
    let measured = measurements(&g);
    assert_eq!(rec.with("finished"), measured);
    assert_eq!(second.cached, 1, "only the build");
    // the point is of one campaign again
    let (third, _) = run("second", true);
    assert_eq!(third.ran, 0);
}

#[test]
fn a_measurement_to_measure_anew_is_not_served_after_waiting_for_an_input_that_ran_again() {
    let g = point_graph();
    let sb = Sandbox::new();
    assert!(sb.run(&g, in_campaign("first"), &opts(1)).0.ok());
    // the build's product is gone (a snapshot cleared): every measurement waits for it to
    // run again and is keyed again after it, the ones to measure anew included
    let mut fake = in_campaign("second");
    fake.absent.insert("build".into());
    let (run, rec) = sb.run(&g, fake, &fresh("m[v=b]*"));
    assert!(run.ok());
    assert_eq!(run.measured_anew, 2);
    let mut expect = measurements(&g);
    expect.insert("build".into());
    assert_eq!(rec.with("finished"), expect);
}

/// Two plans that name one definition differently share its key, and a step whose output
/// holds its name (an image's reference) records another output under it: the newer record
/// becomes the key's current one. The steps after it in the first plan were keyed from the
/// first record's output, so that plan reads the record made under its own address, not the
/// newest: its later steps stay cached.
#[test]
fn a_step_is_served_by_the_record_made_under_its_own_address() {
    let g = graph(CHAIN);
    let sb = Sandbox::new();
    let (fake, _) = Fake::new(&[]);
    assert!(sb.run(&g, fake, &opts(2)).0.ok());
    let (fake, _) = Fake::new(&[]);
    let before = sb.statuses(&g, fake, &opts(2));
    let a = before.iter().find(|s| s.address == "a").unwrap();
    let key = a.key.clone().unwrap();
    // another plan's build of the same definition, under its name, with its name in the output
    let mut other = sb.store.get_record(&key).unwrap().unwrap();
    other.address = "other-name".into();
    let blob = sb.store.put_blob(b"made under another name").unwrap();
    other.outputs.insert("o".into(), blob);
    other.output_digest = Record::compute_output_digest(&other.outputs);
    other.finished = "2999-01-01T00:00:00Z".into();
    sb.store.record(&mut other).unwrap();
    assert_eq!(
        sb.store.get_record(&key).unwrap().unwrap().address,
        "other-name",
        "the newer record is the key's current one"
    );
    let (fake, _) = Fake::new(&[]);
    let after = sb.statuses(&g, fake, &opts(2));
    for s in &after {
        assert_eq!(
            s.status,
            cairn_engine::Status::Cached,
            "{}: {:?}",
            s.address,
            s.reasons
        );
    }
    let keys = |v: &[cairn_engine::StepStatus]| v.iter().map(|s| s.key.clone()).collect::<Vec<_>>();
    assert_eq!(keys(&before), keys(&after));
}

/// A plan that gains a block of measurements reading a build served from its record whose
/// product is gone (a dataset snapshot not on this machine): the build runs again for the new
/// block, and the old block (compared together, a conditional pass not needed) is served.
#[test]
fn a_new_block_reading_a_gone_input_runs_it_again_and_the_old_block_stays_served() {
    // the new block keyed before the old one and after it (the old one held, then)
    let n = "step \"n\" { run \"y\"; output \"o\"; needs \"build\"; measure #true; passes 2; matrix { v \"a\" \"b\" } }\n";
    let old = POINT.replace("passes 2", "passes 3");
    for with_n in [
        format!("{old}{n}"),
        old.replace("step \"m\"", &format!("{n}step \"m\"")),
    ] {
        new_block_after_gone_input(&with_n);
    }
}

fn new_block_after_gone_input(with_n: &str) {
    let blocks = |text: &str| {
        let mut g = graph(text);
        for s in &mut g.steps {
            if s.measure {
                let point = s.address.split('#').next().unwrap_or_default().to_string();
                s.together = Some(point.split('[').next().unwrap_or_default().to_string());
                if s.address.starts_with('m') {
                    s.adaptive = Some(two_or_three_passes(point));
                }
            }
        }
        g
    };
    let sb = Sandbox::new();
    let run = |g: &StepGraph, fake: Fake| {
        let kinds = Registry::empty()
            .with(StepKind::COMMAND, fake)
            .with_pass_rule(Needs(false));
        let mut rec = Recorder::default();
        let summary = cairn_engine::run(g, &sb.env(g, &kinds), &opts(1), &mut rec);
        (summary, rec)
    };
    let first = blocks(&POINT.replace("passes 2", "passes 3"));
    assert!(run(&first, in_campaign("first")).0.ok());
    let g = blocks(with_n);
    let mut fake = in_campaign("first");
    fake.absent.insert("build".into());
    let (summary, rec) = run(&g, fake);
    assert!(summary.ok(), "{summary:?}");
    let finished = rec.with("finished");
    assert!(finished.contains("build"), "{:?}", rec.events);
    assert!(finished.iter().any(|a| a.starts_with('n')), "{finished:?}");
    // the old block was held when the build was found gone: served once, after it
    let served: Vec<&String> = rec
        .events
        .iter()
        .filter(|(e, a)| e == "cached" && a.starts_with('m'))
        .map(|(_, a)| a)
        .collect();
    let once: BTreeSet<&String> = served.iter().copied().collect();
    assert_eq!(served.len(), once.len(), "{:?}", rec.events);
}
