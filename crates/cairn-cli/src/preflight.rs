//! Checks that need the drivers and database systems, before anything runs: every dataset's generator properties, every trial's workload parameters and every server's options as its configuration file must hold them. A mistake becomes a plan diagnostic pointing at the parameter (exit 2), not a failed trial half-way through a study.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use cairn_engine::CheckError as Error;
use cairn_graph::{Step, StepGraph, StepKind};
use cairn_plan::{problem_at, Loc, Plan, PlanError, Problem, SourceId, Value};

use crate::exit::{Exit, BAD_INPUT};

/// A plan value as it is in a step's definition (JSON), to tell which server a step's
/// option came from.
fn json_of(v: &Value) -> serde_json::Value {
    match v {
        Value::Bool(b) => serde_json::json!(b),
        Value::Int(i) => serde_json::json!(i),
        Value::Float(x) => serde_json::json!(x),
        Value::String(s) => serde_json::json!(s),
    }
}

/// Where the server option, environment variable or field `name` (`what`: `option`, `env`
/// or `server`) of
/// `step`'s server is written: the servers of the trials blocks the step belongs to (for a
/// dataset step: that load it), the one whose entry is what the step's definition holds.
fn server_entry(plan: &Plan, step: &Step, what: &str, name: &str) -> Option<Loc> {
    let used: BTreeSet<&str> = plan
        .trials
        .iter()
        .filter(|t| match step.kind {
            StepKind::DATASET => t.dataset.as_ref().is_some_and(|d| d.value == step.name),
            _ => t.name.value == step.name,
        })
        .flat_map(|t| t.servers.iter().map(|s| s.value.as_str()))
        .collect();
    let def = step.server_def().ok().flatten();
    let servers = || {
        plan.servers
            .iter()
            .filter(|s| used.contains(s.name.value.as_str()))
    };
    match what {
        "server" => servers().find_map(|s| match name {
            "cpus" => s.cpus.as_ref().map(|v| v.loc),
            "memory" => s.memory.as_ref().map(|v| v.loc),
            "connect" => s.connect.as_ref().map(|v| v.loc),
            "executor" => s.executor.as_ref().map(|v| v.loc),
            "system" => s.system.as_ref().map(|v| v.loc),
            "client" => s.client.as_ref().map(|v| v.loc),
            "link" => s.link.as_ref().map(|v| v.loc),
            "rate" => s
                .link
                .as_ref()
                .and_then(|l| l.value.rate.as_ref())
                .map(|v| v.loc),
            "delay" => s
                .link
                .as_ref()
                .and_then(|l| l.value.delay.as_ref())
                .map(|v| v.loc),
            _ => None,
        }),
        "option" => {
            let wanted = def.as_ref().and_then(|d| d.options.get(name));
            let mut found = servers().filter_map(|s| s.options.get(name));
            let first = found.clone().next();
            found
                .find(|v| Some(&json_of(&v.value)) == wanted)
                .or(first)
                .map(|v| v.loc)
        }
        _ => {
            let wanted = def.as_ref().and_then(|d| d.env.get(name));
            let mut found = servers().filter_map(|s| s.env.get(name));
            let first = found.clone().next();
            found
                .find(|v| Some(&v.value) == wanted)
                .or(first)
                .map(|v| v.loc)
        }
    }
}

/// Where in the plan an error of a dataset or trial step belongs.
fn locate(plan: &Plan, step: &Step, e: &Error) -> (Loc, String) {
    let dataset = |name: &str| plan.datasets.iter().find(|d| d.name.value == name);
    let trials = plan.trials.iter().find(|t| t.name.value == step.name);
    let workload = trials.and_then(|t| {
        plan.workloads
            .iter()
            .find(|w| w.name.value == t.workload.value)
    });
    let ds_of_trial = trials
        .and_then(|t| t.dataset.as_ref())
        .and_then(|d| dataset(&d.value));
    let ds = if step.kind == StepKind::DATASET {
        dataset(&step.name)
    } else {
        ds_of_trial
    };
    let (what, name) = (e.what, e.name.as_str());
    match what {
        "analysis" | "claim" => (analysis_loc(plan, step, what, name), format!("`{name}`")),
        "host" => (
            trials
                .and_then(|t| cairn_plan::host_factors::value_loc(t, name))
                .unwrap_or(step.loc),
            "this machine cannot set this".into(),
        ),
        "" => match (step.kind, workload, ds) {
            (StepKind::DATASET, _, Some(d)) => (d.generator.loc, "this generator".into()),
            (_, Some(w), _) => (w.test.loc, "for this workload".into()),
            _ => (step.loc, "here".into()),
        },
        _ => {
            let loc = match what {
                "option" | "env" | "server" => server_entry(plan, step, what, name),
                // the trials block's own factor: at the value this step measures
                "trials" => trials.map(|t| trials_factor_entry(t, step)),
                // a registered kind's step (`step "…" kind="…" name=…`)
                "property" => plan
                    .steps
                    .iter()
                    .find(|s| s.name.value == step.name)
                    .map(|s| s.props.get(name).map_or(s.name.loc, |p| p.loc)),
                "dataset" => ds.map(|d| d.props.get(name).map_or(d.generator.loc, |p| p.loc)),
                "driver" => {
                    workload.map(|w| w.driver_props.get(name).map_or(w.driver.loc, |p| p.loc))
                }
                _ => workload.map(|w| {
                    w.params
                        .iter()
                        .find(|p| p.name.value == *name)
                        .map_or(w.test.loc, |p| p.name.loc)
                }),
            };
            // a bad name may be empty or hold a line break: show it escaped
            let label = if name.is_empty() {
                "this option has no name".to_string()
            } else {
                format!("`{}`", name.escape_debug())
            };
            (loc.unwrap_or(step.loc), label)
        }
    }
}

/// Where trials block `t` writes the `cpus` value `step` measures (the factor's first
/// value when the step carries none; the block's name without the factor).
fn trials_factor_entry(t: &cairn_plan::Trials, step: &Step) -> Loc {
    cairn_plan::trial_cpus::choice_at(t, &step.params)
        .or(t.cpus.first())
        .map_or(t.name.loc, |c| c.loc)
}

/// Where the property `name` of an analysis or claim is written (its `kind` node for an
/// analysis's missing property, the claim's `expect` for its sides and sizes).
fn analysis_loc(plan: &Plan, step: &Step, what: &str, name: &str) -> Loc {
    if what == "analysis" {
        let Some(a) = plan.analyses.iter().find(|a| a.name.value == step.name) else {
            return step.loc;
        };
        return a.props.get(name).map_or(a.kind.loc, |p| p.loc);
    }
    let Some(c) = plan.claims.iter().find(|c| c.name.value == step.name) else {
        return step.loc;
    };
    let at = |v: &Option<cairn_plan::Sp<String>>| v.as_ref().map_or(c.expect.loc, |v| v.loc);
    match name {
        "metric" => c.metric.loc,
        "expect" => c.expect.loc,
        // a trend's parameter and points
        "x" => at(&c.x),
        // the parameter a claim is checked at each value of
        "over" => at(&c.over),
        "from" => at(&c.from),
        "to" => at(&c.to),
        other => c.filter.get(other).map_or(c.name.loc, |p| p.loc),
    }
}

/// The names the plan takes from cairn-exec's registries — its servers' database systems and
/// runtimes — against those registries, at their spans (the parser cannot know them).
pub fn names(plan: &Plan) -> Result<(), PlanError> {
    let systems = cairn_exec::system::names();
    let runtimes = cairn_exec::runtime::Runtimes::registered().names();
    let kinds: Vec<&str> = cairn_kinds::plan_step_kinds()
        .iter()
        .map(|k| k.as_str())
        .collect();
    cairn_plan::check_vocabulary(
        plan,
        &cairn_plan::Vocabulary {
            systems: &systems,
            runtimes: &runtimes,
            kinds: &kinds,
        },
    )
}

/// Check every step of `graph` through its kind; all problems are reported at once, on
/// stderr, and make the exit code 2 (bad input).
pub fn check(plan: &Plan, graph: &StepGraph) -> Result<(), Exit> {
    diagnose(plan, graph).map_err(|e| {
        crate::context::print_diagnostic(&e);
        Exit(BAD_INPUT)
    })?;
    for n in design_notes(plan) {
        eprintln!("note: {n}");
    }
    for w in design_warnings(plan)
        .into_iter()
        .chain(step_warnings(graph))
    {
        eprintln!("warning: {w}");
    }
    Ok(())
}

/// What each step's kind says its design cannot do ([`cairn_engine::Kind::design_warnings`]),
/// in the graph's order.
pub fn step_warnings(graph: &StepGraph) -> Vec<String> {
    let kinds = cairn_kinds::standard_registry();
    graph
        .steps
        .iter()
        .filter_map(|step| kinds.get(step).map(|k| k.design_warnings(graph, step)))
        .flatten()
        .collect()
}

/// `cairn check`'s look at every server's option names against the names its image's server
/// program takes ([`cairn_kinds::option_names`]): an unknown option is a diagnostic at the
/// option (exit 2). Only images the store has built are looked at, and a list kept in the
/// store costs nothing; for an image not built yet a note says the names are checked when it
/// is (the run checks them after the build, before a dataset loads).
pub fn check_option_names(plan: &Plan, graph: &StepGraph, results: &Path) -> Result<(), Exit> {
    let (problems, notes) = option_names(plan, graph, results);
    for n in notes {
        eprintln!("note: {n}");
    }
    if problems.is_empty() {
        return Ok(());
    }
    eprint!("{}", cairn_plan::render(&PlanError::Invalid { problems }));
    Err(Exit(BAD_INPUT))
}

/// What [`check_option_names`] reports: the problems, and the notes of what it could not
/// check.
pub fn option_names(plan: &Plan, graph: &StepGraph, results: &Path) -> (Vec<Problem>, Vec<String>) {
    let store = results
        .join("store")
        .is_dir()
        .then(|| cairn_store::Store::open(results).ok())
        .flatten();
    let mut keys = BTreeMap::new();
    let mut done = BTreeSet::new();
    let (mut problems, mut notes, mut seen) = (Vec::new(), Vec::new(), BTreeSet::new());
    for step in &graph.steps {
        if step.kind != StepKind::DATASET && step.kind != StepKind::TRIAL {
            continue;
        }
        let Some(image) = step.inputs.iter().find(|i| i.mount == "image") else {
            continue;
        };
        let Ok(Some(def)) = step.server_def() else {
            continue;
        };
        if def.options.is_empty()
            || !done.insert((image.from, serde_json::to_string(&def).unwrap_or_default()))
        {
            continue;
        }
        let image_step = &graph.steps[image.from];
        let built = store.as_ref().and_then(|s| {
            let key = image_key(s, graph, image.from, &mut keys)?;
            let record = s.get_record(&key).ok()??;
            let out = cairn_kinds::image_step::read_output(s, &record.outputs).ok()?;
            Some((s, key, out.reference))
        });
        let Some((store, key, reference)) = built else {
            let note = format!(
                "option names not checked: image `{}` not built yet (they are checked when it is)",
                image_step.name
            );
            if !notes.contains(&note) {
                notes.push(note);
            }
            continue;
        };
        let registered = cairn_exec::runtime::Runtimes::registered();
        match cairn_kinds::option_names::names_in_image(store, registered, &def, &reference, &key) {
            Err(e) => {
                let note = format!("option names not checked: {e}");
                if !notes.contains(&note) {
                    notes.push(note);
                }
            }
            Ok(None) => {}
            Ok(Some(names)) => {
                for e in cairn_kinds::option_names::unknown_options(&def, &names, &reference) {
                    if let Some(p) = placed(plan, step, cairn_kinds::check_error(e), &mut seen) {
                        problems.push(p);
                    }
                }
            }
        }
    }
    (problems, notes)
}

/// The record key of image step `id` if the store holds its record and its parents'
/// (`None`: not built here yet), as the run keys it.
fn image_key(
    store: &cairn_store::Store,
    graph: &StepGraph,
    id: usize,
    keys: &mut BTreeMap<usize, Option<(String, String)>>,
) -> Option<String> {
    fn keyed(
        store: &cairn_store::Store,
        graph: &StepGraph,
        id: usize,
        keys: &mut BTreeMap<usize, Option<(String, String)>>,
    ) -> Option<(String, String)> {
        if let Some(k) = keys.get(&id) {
            return k.clone();
        }
        let step = &graph.steps[id];
        let found = (|| {
            if step.kind != StepKind::IMAGE {
                return None;
            }
            let mut digests = Vec::new();
            for i in &step.inputs {
                digests.push(keyed(store, graph, i.from, keys)?.1);
            }
            let refs: Vec<&str> = digests.iter().map(String::as_str).collect();
            let key = cairn_graph::step_key(step, &refs, None).hash();
            let record = store.get_record(&key).ok()??;
            Some((key, record.output_digest))
        })();
        keys.insert(id, found.clone());
        found
    }
    keyed(store, graph, id, keys).map(|(key, _)| key)
}

/// Sets what the plan leaves to cairn's statistics, before it is resolved: the `min` of a
/// trials block whose passes stop when decided and that gave only `max` (`passes max=12
/// until="decided"`): the fewest passes per side that could decide a comparison at the
/// sequential design's first look at the study's α
/// (`cairn_analysis::sequential::fewest_passes_that_could_decide`; it depends on `max`).
pub fn set_defaults(plan: &mut Plan) {
    let alpha = cairn_analysis::Criteria::default().alpha;
    plan.set_default_passes(|max| {
        cairn_analysis::sequential::fewest_passes_that_could_decide(max as usize, alpha) as u32
    });
}

/// What cairn chose where the plan gave nothing, said before anything is measured: the
/// `min` that [`set_defaults`] set, and why.
pub fn design_notes(plan: &Plan) -> Vec<String> {
    use cairn_analysis::sequential::{alpha_text, first_look_alpha};
    let alpha = cairn_analysis::Criteria::default().alpha;
    plan.trials
        .iter()
        .filter(|t| t.passes.value.default_min)
        .map(|t| {
            let p = &t.passes.value;
            let (min, max) = (p.min as usize, p.max as usize);
            let given = format!(
                "trials `{}`: `passes max={max} until=\"decided\"` gives no `min`",
                t.name.value
            );
            if min < max {
                format!(
                    "{given}: min={min}, the fewest passes per side that could decide a comparison at the sequential design's first look (with {min} against {min} the rank test's smallest p is {}, below that look's nominal α {}; with fewer, the first look's level is lower still; it depends on max)",
                    alpha_text(cairn_analysis::rank_test::min_p_without_ties(min, min)),
                    alpha_text(first_look_alpha(alpha, min, max))
                )
            } else {
                format!(
                    "{given}: min={min}, the same as max (one look at α = {alpha}): no fewer passes could decide a comparison at a first look"
                )
            }
        })
        .collect()
}

/// What the plan's design cannot do, said before anything is measured: a trials block whose
/// servers are compared (a claim, or a table with a baseline) but which measures too few
/// passes for the rank test ever to reach α, whatever the data.
pub fn design_warnings(plan: &Plan) -> Vec<String> {
    let compares = !plan.claims.is_empty()
        || plan
            .analyses
            .iter()
            .any(|a| a.kind.value == "compare" || a.props.contains_key("baseline"));
    if !compares {
        return Vec::new();
    }
    // the significance level of the study's comparisons and claims (the tables' rule)
    let alpha = cairn_analysis::Criteria::default().alpha;
    let enough = cairn_analysis::rank_test::min_passes_for(alpha);
    plan.trials
        .iter()
        .filter(|t| t.servers.len() > 1 && (t.passes.value.max as usize) < enough)
        .map(|t| {
            let n = t.passes.value.max as usize;
            format!(
                "trials `{}` measures at most {n} pass{} per server: no comparison or claim over it can be decided at α = {alpha} (the rank test's smallest p with {n} against {n} is {:.3}); {enough} passes is the fewest that could (`passes {enough}`, or `passes min={enough} …`)",
                t.name.value,
                if n == 1 { "" } else { "es" },
                cairn_analysis::rank_test::min_exact_p(n, n)
            )
        })
        .collect()
}

/// Step `step`'s error `e` as a problem at its place in the plan; `None` when `seen` holds one
/// with the same place and message already (steps of one server share its options).
fn placed(
    plan: &Plan,
    step: &Step,
    e: Error,
    seen: &mut BTreeSet<(SourceId, usize, String)>,
) -> Option<Problem> {
    let (loc, label) = locate(plan, step, &e);
    let message = e.to_string();
    seen.insert((loc.source, loc.span.offset(), message.clone()))
        .then(|| {
            problem_at(
                plan,
                loc,
                "bad_value",
                format!("{}: {message}", step.address),
                label,
                None,
            )
        })
}

/// What [`check`] reports: every problem the kinds' checks find, each at its place in the
/// plan (what `cairn check` and `cairn run` refuse before anything runs).
pub fn diagnose(plan: &Plan, graph: &StepGraph) -> Result<(), PlanError> {
    let mut problems: Vec<Problem> = Vec::new();
    let mut seen = BTreeSet::new();
    // each kind checks its own steps (the drivers' parameters of datasets and trials)
    let kinds = cairn_kinds::standard_registry();
    for step in &graph.steps {
        if let Some(Err(e)) = kinds.get(step).map(|k| k.check(graph, step)) {
            problems.extend(placed(plan, step, e, &mut seen));
        }
    }
    problems.extend(unrunnable_architectures(
        plan,
        cairn_exec::docker::image::host_arch::runnable_architectures().as_deref(),
    ));
    if problems.is_empty() {
        return Ok(());
    }
    Err(PlanError::Invalid { problems })
}

/// An image whose `debian arch=` this host cannot run (`runnable`: its architectures, `None`
/// when unknown, then nothing is refused): its base would build, and no container start.
fn unrunnable_architectures(plan: &Plan, runnable: Option<&[&str]>) -> Vec<Problem> {
    let Some(runnable) = runnable else {
        return Vec::new();
    };
    plan.images
        .iter()
        .filter_map(|image| {
            let debian = image.debian.as_ref()?;
            let arch = debian.arch.as_deref()?;
            if runnable.contains(&arch) {
                return None;
            }
            Some(problem_at(
                plan,
                debian.arch_loc.unwrap_or(image.name.loc),
                "bad_value",
                format!(
                    "image `{}` is for {arch}, which this host cannot run",
                    image.name.value
                ),
                "not an architecture of this host",
                Some(format!(
                    "this host runs {}; build the study on a machine of that architecture, or enable an emulator for it (binfmt_misc)",
                    runnable.join(", ")
                )),
            ))
        })
        .collect()
}

#[cfg(test)]
mod design_tests {
    use super::design_warnings;

    fn plan(passes: &str, compared: &str) -> cairn_plan::Plan {
        let text = format!(
            r#"image "i" {{ debian suite="bookworm"; packages "mariadb-server" }}
server "a" {{ image "i" }}
server "b" {{ image "i" }}
dataset "d" {{ sysbench tables=1 rows=100 }}
workload "w" {{ sysbench "oltp_point_select"; threads 1 2 }}
trials "t" {{ servers "a" "b"; dataset "d"; workload "w"; {passes} }}
{compared}
"#
        );
        cairn_plan::parse_str("p.kdl", &text)
            .unwrap_or_else(|e| panic!("{}", cairn_plan::render(&e)))
    }

    const CLAIM: &str = r#"claim "b is faster" { metric "tps"; where threads=1; expect "b > a" }"#;
    const TABLE: &str = r#"analysis "tps" { table metric="tps" baseline="a" }"#;
    const PLOT: &str = r#"analysis "tps" { plot metric="tps" x="threads" }"#;

    /// A plan whose comparisons can never be decided is told so before it measures; one
    /// that could, or that compares nothing, is not.
    #[test]
    fn passes_too_few_to_decide_are_named_before_measuring() {
        for compared in [CLAIM, TABLE] {
            let w = design_warnings(&plan("passes 3", compared));
            assert_eq!(w.len(), 1, "{w:?}");
            assert!(
                w[0].contains("trials `t` measures at most 3 passes per server"),
                "{}",
                w[0]
            );
            assert!(
                w[0].contains("is 0.100); 4 passes is the fewest"),
                "{}",
                w[0]
            );
            // an adaptive rule whose max could decide is fine
            assert!(
                design_warnings(&plan("passes min=3 max=6 until-ci=\"3%\"", compared)).is_empty()
            );
            assert!(design_warnings(&plan("passes 4", compared)).is_empty());
        }
        assert!(design_warnings(&plan("passes 3", PLOT)).is_empty());
    }

    /// `passes max=N until="decided"` without `min` starts at the fewest passes that could
    /// decide a comparison at the design's first look, and `cairn check`/`plan`/`run` say
    /// so; a plan that gives `min` keeps it and is told nothing.
    #[test]
    fn until_decided_without_min_starts_at_the_fewest_passes_that_could_decide() {
        use super::{design_notes, set_defaults};
        let mut p = plan(r#"passes max=12 until="decided""#, CLAIM);
        assert_eq!(p.trials[0].passes.value.min, 12, "max until resolved");
        set_defaults(&mut p);
        let passes = &p.trials[0].passes.value;
        assert_eq!((passes.min, passes.max), (6, 12));
        let notes = design_notes(&p);
        assert_eq!(notes.len(), 1, "{notes:?}");
        assert!(
            notes[0].starts_with(
                "trials `t`: `passes max=12 until=\"decided\"` gives no `min`: min=6, the fewest passes per side that could decide a comparison at the sequential design's first look (with 6 against 6 the rank test's smallest p is 0.00216, below that look's nominal α 0.00305;"
            ),
            "{}",
            notes[0]
        );
        // the resolved plan has the design of `min=6 max=12`
        let graph = cairn_graph::resolve(&p).unwrap();
        let rule = graph
            .steps
            .iter()
            .find_map(|s| s.adaptive.clone())
            .expect("adaptive passes");
        assert_eq!((rule.min, rule.max, rule.until_decided), (6, 12, true));

        // a max no fewer passes could beat: one look
        let mut p = plan(r#"passes max=5 until="decided""#, CLAIM);
        set_defaults(&mut p);
        assert_eq!(p.trials[0].passes.value.min, 5);
        assert!(design_notes(&p)[0].contains("min=5, the same as max"));

        // a given min keeps its meaning
        let mut p = plan(r#"passes min=4 max=12 until="decided""#, CLAIM);
        set_defaults(&mut p);
        assert_eq!(p.trials[0].passes.value.min, 4);
        assert!(design_notes(&p).is_empty());
    }
}

#[cfg(test)]
mod architecture_tests {
    use super::unrunnable_architectures;

    fn plan(arch: &str) -> cairn_plan::Plan {
        let text = format!(
            r#"image "i" {{ debian suite="bookworm"{arch}; packages "mariadb-server" }}
image "j" {{ extends "i"; packages "sysbench" }}"#
        );
        cairn_plan::parse_str("arch.kdl", &text).expect("parses")
    }

    #[test]
    fn an_image_for_an_architecture_the_host_cannot_run_is_refused() {
        let amd64: &[&str] = &["amd64", "i386"];
        assert!(unrunnable_architectures(&plan(""), Some(amd64)).is_empty());
        assert!(unrunnable_architectures(&plan(r#" arch="i386""#), Some(amd64)).is_empty());
        // the image and the one extending it
        let refused = unrunnable_architectures(&plan(r#" arch="arm64""#), Some(amd64));
        assert_eq!(refused.len(), 2);
        assert!(
            refused[0]
                .message()
                .contains("image `i` is for arm64, which this host cannot run"),
            "{}",
            refused[0].message()
        );
        // a host of an unknown architecture refuses nothing ahead of the build
        assert!(unrunnable_architectures(&plan(r#" arch="arm64""#), None).is_empty());
    }
}
