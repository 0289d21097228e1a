//! `passes min max until="decided"`: a conditional pass runs while a question the plan asks
//! at its matrix point is undecided — every comparison of a table that reads the block, every
//! claim — evaluated on the passes measured so far by the same code the analysis and claim
//! steps run, at the level of this look of the sequential design
//! (`cairn_analysis::sequential`).
//!
//! Every variant at one matrix point gets the same answer (the questions are those of the
//! point, not of one variant), so the passes of a comparison's two sides stay balanced, and
//! the analyses that read them later decide at the same look with the same data.

use std::collections::{BTreeSet, HashMap};
use std::sync::Mutex;

use cairn_analysis::adaptive::Action;
use cairn_analysis::sequential::{self, Design, Question};
use cairn_analysis::Criteria;
use cairn_defs::{AnalysisDef, ClaimDef};
use cairn_engine::adaptive::Decision;
use cairn_engine::execute::Done;
use cairn_engine::Env;
use cairn_graph::{Step, StepGraph, StepId, StepKind};
use cairn_store::Store;

use crate::analysis_step::table_of;
use crate::claim_step::{check, claim_spec_of_points};
use crate::{plot_analysis, trial_points};

/// The rule, with what it already decided: every variant at a matrix point asks the same
/// question of the same passes, so the tables and claims are built once per point and pass
/// in a process; and a fully cached run re-decides every pass that was not needed (such a
/// pass leaves no record), so answers are also kept in the machine's cache under a hash of
/// all they were computed from (`decisions/<blake3>.json`), never in the store.
#[derive(Default)]
pub struct DecidedRule {
    /// That hash → whether another pass is needed, and why.
    known: Mutex<HashMap<String, (bool, String)>>,
}

/// Code version of the answers kept: raise it when the rule would answer differently.
const ANSWERS: &str = "decided/2";

impl DecidedRule {
    /// The answer under `id`: this process's, else the machine cache's.
    fn recall(&self, env: &Env<'_>, id: &str) -> Option<(bool, String)> {
        if let Some(a) = self.known.lock().unwrap_or_else(|e| e.into_inner()).get(id) {
            return Some(a.clone());
        }
        let path = answers_dir(env)?.join(format!("{id}.json"));
        let answer: (bool, String) = serde_json::from_slice(&std::fs::read(path).ok()?).ok()?;
        Some(answer)
    }

    /// Keeps `answer` under `id`, here and in the machine cache (best effort: a cache).
    fn keep(&self, env: &Env<'_>, id: String, answer: &(bool, String)) {
        if let Some(dir) = answers_dir(env) {
            let json = serde_json::to_vec(answer).expect("serialises");
            let tmp = dir.join(format!(".{id}.{}", std::process::id()));
            if std::fs::create_dir_all(&dir).is_ok() && std::fs::write(&tmp, json).is_ok() {
                let _ = std::fs::rename(&tmp, dir.join(format!("{id}.json")));
            }
        }
        self.known
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(id, answer.clone());
    }

    /// The decision on conditional pass `step` of a block whose passes stop when decided.
    pub fn decide(
        &self,
        env: &Env<'_>,
        graph: &StepGraph,
        step: &Step,
        record_key: &dyn Fn(StepId) -> Option<String>,
    ) -> Decision {
        let rule = step
            .adaptive
            .as_ref()
            .expect("the engine asks only about conditional passes");
        let passes = step.pass.saturating_sub(1) as usize;
        let decision = |needed: bool, look: Option<String>, why: String| Decision {
            step: step.address.clone(),
            point: rule.point.clone(),
            pass: step.pass,
            metric: rule.metric.clone(),
            passes,
            ci_half_width: None,
            until_ci: None,
            look,
            needed,
            why,
        };
        let design = match Design::new(
            rule.min as usize,
            rule.max as usize,
            Criteria::default().alpha,
        ) {
            Ok(d) => d,
            Err(e) => return decision(true, None, format!("no decision possible ({e})")),
        };
        let look = design.look_for(passes);
        // a point that stopped at an earlier look stays stopped: its previous pass was not run
        let stopped = step.pass > rule.min + 1
            && graph.steps.iter().any(|s| {
                s.kind == StepKind::TRIAL
                    && s.adaptive.as_ref().map(|a| &a.point) == Some(&rule.point)
                    && s.pass == step.pass - 1
                    && record_key(s.id).is_none()
            });
        if stopped {
            return decision(
                false,
                Some(look.to_string()),
                "its matrix point stopped at an earlier look".to_string(),
            );
        }
        // the point's trials so far, every variant: the group whose passes stop together
        let group: Vec<StepId> = graph
            .steps
            .iter()
            .filter(|s| earlier(s, step) && s.name == step.name && s.params == step.params)
            .map(|s| s.id)
            .collect();
        let group_keys: BTreeSet<String> = group.iter().filter_map(|&id| record_key(id)).collect();
        // everything the answer is computed from: the point and pass, the design, the
        // readers' definitions (what they ask) with their code, and every earlier record
        // they read — by its output, not only its key: a reproduction, or a campaign
        // measured anew, has records of the same keys with other figures, and an answer
        // kept for the first must not stand for the second
        let readers_of: Vec<&Step> = readers(graph, &group).collect();
        // each record once, however many readers read it
        let read: BTreeSet<String> = readers_of
            .iter()
            .flat_map(|r| r.inputs.iter().map(|i| &graph.steps[i.from]))
            .filter(|s| earlier(s, step))
            .filter_map(|s| record_key(s.id))
            .collect();
        let measured: Vec<(String, String)> = read
            .into_iter()
            .map(|key| {
                let digest = env
                    .store
                    .get_record(&key)
                    .ok()
                    .flatten()
                    .map(|r| r.output_digest)
                    .unwrap_or_default();
                (key, digest)
            })
            .collect();
        let readers: Vec<(&str, &serde_json::Value, &str)> = readers_of
            .iter()
            .map(|r| (r.address.as_str(), &r.definition, r.code.as_str()))
            .collect();
        let memo_key = blake3::hash(
            serde_json::to_string(&serde_json::json!([
                ANSWERS,
                step.name,
                step.params,
                step.pass,
                [rule.min, rule.max],
                measured,
                readers,
            ]))
            .unwrap_or_default()
            .as_bytes(),
        )
        .to_hex()
        .to_string();
        let (needed, why) = self.recall(env, &memo_key).unwrap_or_else(|| {
            let answer = match questions(
                env.store,
                graph,
                step,
                record_key,
                look.final_alpha,
                &group,
                &group_keys,
            ) {
                Ok(questions) => {
                    let (action, why) = sequential::next(&design, passes, &questions);
                    let decided = questions.iter().filter(|q| q.decided).count();
                    (
                        action == Action::AnotherPass,
                        format!("{why} ({decided} of {} decided)", questions.len()),
                    )
                }
                // measure rather than guess, and ask again next time: an error is no answer
                Err(e) => return (true, format!("no decision possible ({e})")),
            };
            self.keep(env, memo_key, &answer);
            answer
        });
        decision(needed, Some(look.to_string()), why)
    }
}

/// Where answers are kept: the machine cache of a run's host (none for a host of another
/// kind, e.g. a test's).
fn answers_dir(env: &Env<'_>) -> Option<std::path::PathBuf> {
    env.host
        .as_any()
        .downcast_ref::<crate::Host>()
        .map(|h| h.cache_root.join("decisions"))
}

/// The tables and claims that read any of `group`.
fn readers<'g>(graph: &'g StepGraph, group: &'g [StepId]) -> impl Iterator<Item = &'g Step> {
    graph.steps.iter().filter(move |c| {
        matches!(c.kind, StepKind::ANALYSIS | StepKind::CLAIM)
            && c.inputs.iter().any(|i| group.contains(&i.from))
    })
}

/// A trial step measured before `step`'s pass.
fn earlier(s: &Step, step: &Step) -> bool {
    s.kind == StepKind::TRIAL && s.pass < step.pass
}

/// The questions at `step`'s matrix point, on the passes before it: each comparison of a
/// table (with a baseline) and each claim that reads the trials of its block there, decided
/// at the look's level; passes to decide them are estimated at `final_alpha` (the last
/// look's). `record_key` names records that exist: the run's finished steps, or those
/// `cairn plan` found (a record gone from the store is `None` there).
fn questions(
    store: &Store,
    graph: &StepGraph,
    step: &Step,
    record_key: &dyn Fn(StepId) -> Option<String>,
    final_alpha: f64,
    group: &[StepId],
    group_keys: &BTreeSet<String>,
) -> Result<Vec<Question>, String> {
    let mut out = Vec::new();
    for reader in readers(graph, group) {
        // its inputs as a run would hand them over, with only the passes measured before
        // this one (the others as not needed: nothing to read)
        let dones: Vec<Done> = reader
            .inputs
            .iter()
            .map(|i| {
                earlier(&graph.steps[i.from], step)
                    .then(|| record_key(i.from))
                    .flatten()
                    .map_or_else(Done::not_needed, |key| Done {
                        key,
                        output_digest: String::new(),
                        outputs: Default::default(),
                        headline: None,
                    })
            })
            .collect();
        let inputs: Vec<&Done> = dones.iter().collect();
        let points = trial_points::read(store, reader, &inputs).map_err(|e| e.to_string())?;
        if points.is_empty() {
            continue;
        }
        let ours = |keys: &[String]| keys.iter().any(|k| group_keys.contains(k));
        if reader.kind == StepKind::ANALYSIS {
            let def: AnalysisDef = reader.def()?;
            if plot_analysis::Flavour::of(&def.kind).is_some()
                || crate::profile_analysis::is_profile(&def.kind)
            {
                continue; // charts and profiles compare nothing
            }
            let table = table_of(&def, points)?;
            for cell in &table.cells {
                if let Some(c) = &cell.comparison {
                    if ours(&cell.trials) {
                        out.push(Question::of_comparison(c, final_alpha));
                    }
                }
            }
        } else {
            let def: ClaimDef = reader.def()?;
            let spec = claim_spec_of_points(&def, &points).map_err(|e| e.to_string())?;
            let result = check(&spec, &def, &points)?;
            if ours(&result.left_trials) || ours(&result.right_trials) {
                let df = (2 * result.passes).saturating_sub(2);
                out.push(Question {
                    decided: result.verdict != cairn_analysis::ClaimVerdict::Inconclusive,
                    // a claim over operations or a trend estimates no passes: decided or
                    // not, its point never stops early for futility on its account
                    passes_to_decide: result
                        .passes_needed
                        .and_then(|n| n.per_variant)
                        .map(|n| sequential::optimistic(n, df)),
                });
            }
        }
    }
    Ok(out)
}
