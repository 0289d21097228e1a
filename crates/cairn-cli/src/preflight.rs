//! Checks that need the drivers, before anything runs: every dataset's generator properties and every trial's workload parameters. A mistake becomes a plan diagnostic pointing at the parameter (exit 2), not a failed trial half-way through a study.

use std::collections::BTreeSet;

use cairn_engine::dataset_step::dataset_def;
use cairn_graph::{Step, StepGraph, StepKind};
use cairn_plan::{problem_at, Loc, Plan, PlanError, Problem};
use cairn_workload::{Dataset, Error};

use crate::context::Exit;
use crate::BAD_INPUT;

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
    let ds = if step.kind == StepKind::Dataset {
        dataset(&step.name)
    } else {
        ds_of_trial
    };
    match e {
        Error::Param { what, name, .. } => {
            let loc = match *what {
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
            (loc.unwrap_or(step.loc), format!("`{name}`"))
        }
        _ => match (step.kind, workload, ds) {
            (StepKind::Dataset, _, Some(d)) => (d.generator.loc, "this generator".into()),
            (_, Some(w), _) => (w.test.loc, "for this workload".into()),
            _ => (step.loc, "here".into()),
        },
    }
}

/// Check every dataset and trial of `graph`; all problems are reported at once.
pub fn check(plan: &Plan, graph: &StepGraph) -> Result<(), Exit> {
    let mut problems: Vec<Problem> = Vec::new();
    let mut seen = BTreeSet::new();
    let mut report = |step: &Step, e: Error| {
        let (loc, label) = locate(plan, step, &e);
        let message = e.to_string();
        if seen.insert((loc.source, loc.span.offset(), message.clone())) {
            problems.push(problem_at(
                plan,
                loc,
                "bad_value",
                format!("{}: {message}", step.address),
                label,
                None,
            ));
        }
    };
    for step in &graph.steps {
        match step.kind {
            StepKind::Dataset => {
                if let Err(e) = Dataset::from_def(&dataset_def(step)) {
                    report(step, e);
                }
            }
            StepKind::Trial => {
                let ds = step
                    .inputs
                    .iter()
                    .find(|i| i.mount == "dataset")
                    .map(|i| dataset_def(&graph.steps[i.from]));
                if let Err(e) = cairn_engine::trial_step::check(step, ds.as_ref()) {
                    report(step, e);
                }
            }
            _ => {}
        }
    }
    if problems.is_empty() {
        return Ok(());
    }
    eprint!("{}", cairn_plan::render(&PlanError::Invalid { problems }));
    Err(Exit(BAD_INPUT))
}
