//! Measurements compared with each other are measured together. A trials block's passes at
//! one matrix point (`Step::together`: every server, every pass) are compared across
//! servers. Served from records of different campaigns (the study on another boot of the
//! machine, another day), or served while others of them are measured now, they would be
//! compared as if made together when they were not. So a run holds a group's served
//! measurements until every member is keyed; then it serves them if none of the group is
//! measured now and all are of one campaign, and otherwise measures anew, in this run's
//! campaign, each one whose record is of another ([`Kind::campaign`]). `cairn plan` says
//! the same from the records ([`anew`]).

use std::collections::{BTreeSet, HashMap, HashSet};

use cairn_graph::{StepGraph, StepId};

use crate::context::Env;
use crate::execute::Done;

/// A member served from its record, held until its group is settled.
pub struct Held {
    pub id: StepId,
    pub done: Done,
    /// The campaign of its record (`None`: its kind keeps none).
    pub campaign: Option<String>,
}

/// What settling a group does with one held member.
pub enum Settled {
    Serve(Held),
    /// Measure it anew, for the reason given.
    Anew(Held, String),
}

#[derive(Default)]
struct Group {
    members: usize,
    keyed: usize,
    held: Vec<Held>,
    /// A member is measured in this run (a miss, `--fresh`, an unusable record); a
    /// conditional pass without a record is not counted: whether it runs is decided later.
    measured_now: bool,
    settled: bool,
    /// Members served from records of another campaign than this run's (all of one
    /// campaign): measured anew if a rule adds a pass to the point after all.
    elsewhere: Vec<StepId>,
}

/// The run's groups of measurements compared together.
pub struct Together {
    groups: Vec<Group>,
    of: Vec<Option<usize>>,
    /// Members to be measured anew: when one is keyed again (after waiting for an input
    /// that had to run again), its record must not serve it.
    anew: HashSet<StepId>,
}

impl Together {
    /// The groups of the selected steps of `graph`.
    pub fn new(graph: &StepGraph, selected: &[bool]) -> Together {
        let mut index: HashMap<&str, usize> = HashMap::new();
        let mut groups: Vec<Group> = Vec::new();
        let mut of = vec![None; graph.steps.len()];
        for step in &graph.steps {
            let Some(name) = step.together.as_deref().filter(|_| selected[step.id]) else {
                continue;
            };
            let g = *index.entry(name).or_insert_with(|| {
                groups.push(Group::default());
                groups.len() - 1
            });
            groups[g].members += 1;
            of[step.id] = Some(g);
        }
        Together {
            groups,
            of,
            anew: HashSet::new(),
        }
    }

    /// Whether step `id` belongs to a group not yet settled (its cache hit is held).
    pub fn holds(&self, id: StepId) -> bool {
        self.of[id].is_some_and(|g| !self.groups[g].settled)
    }

    /// Member `held.id` was found in the store: held until its group settles.
    pub fn hold(&mut self, held: Held) {
        let g = self.of[held.id].expect("a member");
        self.groups[g].keyed += 1;
        self.groups[g].held.push(held);
    }

    /// Member `id`, held, reads an input that runs again after all: it is keyed again when
    /// that input is done, so it is no longer held (or it would be served twice).
    pub fn unhold(&mut self, id: StepId) {
        let Some(g) = self.of[id] else { return };
        let group = &mut self.groups[g];
        if group.settled {
            return;
        }
        let before = group.held.len();
        group.held.retain(|h| h.id != id);
        group.keyed -= before - group.held.len();
    }

    /// Member `id` was keyed and goes to its lane (`counts`: it will be measured now).
    pub fn keyed_to_run(&mut self, id: StepId, counts: bool) {
        if let Some(g) = self.of[id] {
            self.groups[g].keyed += 1;
            self.groups[g].measured_now |= counts;
        }
    }

    /// Settle every group whose members are all keyed (`all`: every group, keyed or not —
    /// when nothing but measurements is left, a member not keyed by then never will be).
    pub fn settle(&mut self, all: bool, now: &dyn Fn(StepId) -> Option<String>) -> Vec<Settled> {
        let mut out = Vec::new();
        for group in self.groups.iter_mut() {
            if group.settled || !(all || group.keyed == group.members) {
                continue;
            }
            group.settled = true;
            let held = std::mem::take(&mut group.held);
            let campaigns: BTreeSet<&str> =
                held.iter().filter_map(|h| h.campaign.as_deref()).collect();
            let why = if group.measured_now {
                Some("others at its point are measured in this run".to_string())
            } else if campaigns.len() > 1 {
                Some(format!(
                    "its point's records come from {} campaigns ({})",
                    campaigns.len(),
                    campaigns.iter().copied().collect::<Vec<_>>().join("; ")
                ))
            } else {
                None
            };
            let now = held.first().and_then(|h| now(h.id));
            for h in held {
                match (&why, &h.campaign) {
                    (Some(why), Some(c)) if now.as_ref() != Some(c) => {
                        let why = format!(
                            "{why}, and its record is of another campaign ({c}): a comparison uses measurements made together"
                        );
                        self.anew.insert(h.id);
                        out.push(Settled::Anew(h, why));
                    }
                    _ => {
                        if h.campaign.is_some() && h.campaign != now {
                            group.elsewhere.push(h.id);
                        }
                        out.push(Settled::Serve(h))
                    }
                }
            }
        }
        out
    }

    /// The members of `id`'s group served from an earlier campaign (once: they are then
    /// measured anew), when a pass is to be measured at the point after all.
    pub fn served_elsewhere(&mut self, id: StepId) -> Vec<StepId> {
        let again =
            self.of[id].map_or_else(Vec::new, |g| std::mem::take(&mut self.groups[g].elsewhere));
        self.anew.extend(again.iter().copied());
        again
    }

    /// Whether member `id` is to be measured anew in this run (its record never serves it).
    pub fn must_run(&self, id: StepId) -> bool {
        self.anew.contains(&id)
    }
}

/// This run's campaign for step `id`, from its kind (see [`crate::Kind::campaign_now`]).
pub fn campaign_now(env: &Env<'_>, graph: &StepGraph, id: StepId) -> Option<String> {
    env.kinds.get(&graph.steps[id])?.campaign_now(env)
}

/// For `cairn plan`: the members of groups (see the module) that a run would measure anew,
/// given each step's status (`measured_now`: it will be measured, and is no conditional
/// pass without a record; `campaign`: the campaign of the record that serves it), with why.
pub fn anew(
    env: &Env<'_>,
    graph: &StepGraph,
    measured_now: &[bool],
    campaign: &[Option<String>],
) -> Vec<(StepId, String)> {
    let selected = vec![true; graph.steps.len()];
    let mut together = Together::new(graph, &selected);
    for step in &graph.steps {
        if together.of[step.id].is_none() {
            continue;
        }
        if campaign[step.id].is_some() && !measured_now[step.id] {
            together.hold(Held {
                id: step.id,
                done: Done::not_needed(),
                campaign: campaign[step.id].clone(),
            });
        } else {
            together.keyed_to_run(step.id, measured_now[step.id]);
        }
    }
    together
        .settle(true, &|id| campaign_now(env, graph, id))
        .into_iter()
        .filter_map(|s| match s {
            Settled::Anew(h, why) => Some((h.id, why)),
            Settled::Serve(_) => None,
        })
        .collect()
}
