//! `cairn plan` / `cairn explain`: for every step, cached / will run / pending / blocked,
//! and why — which part of its definition or which input changed, old → new.

use std::collections::{BTreeMap, HashMap, HashSet};

use cairn_graph::diff::diff;
use cairn_graph::{step_key, Selector, Step, StepGraph, StepId};
use cairn_store::Store;
use serde_json::Value;

use crate::cache::{usable_record, Lookup, Presence};
use crate::context::Env;
use crate::kind::Kind;

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// Its record is in the store: nothing to do.
    Cached,
    /// Its key is known and has no usable record: it will run.
    Run,
    /// An input will run first; its key is known only once that input's output is.
    Pending,
    /// It cannot run (no executor for its kind yet, or an input is blocked).
    Blocked,
    /// A conditional pass the adaptive rule does not need, from the recorded passes of its
    /// point: it will not run, and its dependents read the passes that exist.
    NotNeeded,
}

#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[serde(tag = "reason", rename_all = "snake_case")]
pub enum Reason {
    /// No earlier run of this step is remembered.
    New,
    /// `--fresh` selected it.
    Fresh,
    /// Its record exists but a blob it names is missing or was quarantined.
    BlobMissing {
        digest: String,
    },
    CorruptRecord {
        error: String,
    },
    /// A field of its key changed (definition, code version, fingerprint, pass).
    Changed {
        path: String,
        old: Option<Value>,
        new: Option<Value>,
    },
    /// An input's output changed.
    InputChanged {
        mount: String,
        from: String,
        old: Option<String>,
        new: String,
    },
    /// An input will run first.
    InputPending {
        mount: String,
        from: String,
    },
    InputBlocked {
        mount: String,
        from: String,
    },
    /// A remembered earlier key whose record is gone (e.g. removed by `gc`).
    PreviousGone {
        key: String,
    },
    NotExecutable {
        kind: String,
    },
    /// Its record exists but its kind cannot use it on this machine (e.g. `image_missing`: the
    /// image is gone from the engine; `snapshot_missing`: the snapshot is not in the cache;
    /// `stalled_measurement`: a trial whose window overran its duration, recorded before
    /// the watchdog's rule).
    Unusable {
        what: String,
        why: String,
    },
    /// It cannot run here: something it requires is missing (e.g. no Docker Engine answers).
    Unavailable {
        error: String,
    },
    /// A pass beyond its block's `min`: it runs only if, at its turn, the adaptive rule
    /// finds its point's CI half-width of `metric` above `until_ci`.
    Conditional {
        min: u32,
        max: u32,
        until_ci: Option<f64>,
        /// `until="decided"`: it runs only if a question at its matrix point is undecided.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        until_decided: bool,
        metric: String,
    },
    /// Its record serves, but those it is compared with are measured in this run, or come
    /// from other campaigns: it is measured anew beside them ([`crate::together`]).
    MeasuredAnew {
        why: String,
    },
    /// The adaptive rule's decision on a conditional pass from its point's recorded passes.
    Decided {
        decision: crate::adaptive::Decision,
    },
    /// A note of the step's kind (an image's package changes, a source build coming): the
    /// engine carries it, the kind and the CLI read it.
    #[serde(untagged)]
    Note(crate::kind::Note),
}

#[derive(Debug, Clone, serde::Serialize)]
pub struct StepStatus {
    pub id: StepId,
    pub address: String,
    pub kind: &'static str,
    pub status: Status,
    pub key: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub key_json: Option<Value>,
    pub reasons: Vec<Reason>,
}

/// Status of every step, in graph order (indexed by step id).
pub fn statuses(
    graph: &StepGraph,
    env: &Env<'_>,
    fresh: &[Selector],
    with_key_json: bool,
) -> Vec<StepStatus> {
    let remembered = env.store.names(&graph.study).unwrap_or_default();
    let mut survey = Survey::walk(
        graph,
        env,
        fresh,
        with_key_json,
        &remembered,
        HashMap::new(),
    );
    // measurements compared together whose records are of another campaign than the rest
    // are measured anew, as the run will: then their readers' statuses follow from that. A
    // conditional pass counts once its rule, from the records, needs it (as the run then
    // measures its point anew).
    let measured_now: Vec<bool> = graph
        .steps
        .iter()
        .map(|s| {
            let Some(st) = survey.out[s.id].as_ref() else {
                return false;
            };
            let needed = st
                .reasons
                .iter()
                .any(|r| matches!(r, Reason::Decided { decision } if decision.needed));
            matches!(st.status, Status::Run | Status::Pending) && (!s.is_conditional() || needed)
        })
        .collect();
    let anew: HashMap<StepId, String> =
        crate::together::anew(env, graph, &measured_now, &survey.campaigns)
            .into_iter()
            .collect();
    if !anew.is_empty() {
        survey = Survey::walk(graph, env, fresh, with_key_json, &remembered, anew);
    }
    let mut out: Vec<StepStatus> = survey
        .out
        .into_iter()
        .map(|s| s.expect("every step"))
        .collect();
    unserve_absent_inputs(graph, env, &mut out);
    block_unavailable(graph, env, &mut out);
    out
}

/// The walk over the steps in graph order: a step's status follows from its inputs',
/// found before it.
struct Survey<'a, 'e> {
    graph: &'a StepGraph,
    env: &'a Env<'e>,
    fresh: &'a [Selector],
    with_key_json: bool,
    /// The study's remembered key of each address, to say why a key is new.
    remembered: &'a BTreeMap<String, String>,
    /// Measurements whose record serves but that are measured anew, and why.
    anew: HashMap<StepId, String>,
    /// The campaign of the record serving each measurement compared with others.
    campaigns: Vec<Option<String>>,
    /// The output digest of each step found so far that will not run (cached, or not
    /// needed): its dependents' keys are known.
    digests: Vec<Option<String>>,
    out: Vec<Option<StepStatus>>,
}

/// What a step's inputs say of it: whether one will run first or is blocked, and which.
struct InputsState {
    reasons: Vec<Reason>,
    waiting: bool,
    blocked: bool,
}

impl<'a, 'e> Survey<'a, 'e> {
    /// Every step's status, in graph order.
    fn walk(
        graph: &'a StepGraph,
        env: &'a Env<'e>,
        fresh: &'a [Selector],
        with_key_json: bool,
        remembered: &'a BTreeMap<String, String>,
        anew: HashMap<StepId, String>,
    ) -> Survey<'a, 'e> {
        let n = graph.steps.len();
        let mut survey = Survey {
            graph,
            env,
            fresh,
            with_key_json,
            remembered,
            anew,
            campaigns: vec![None; n],
            digests: vec![None; n],
            out: vec![None; n],
        };
        for &id in &graph.order {
            let st = survey.status_of(id);
            survey.out[id] = Some(st);
        }
        survey
    }

    /// The status of step `id`, whose inputs have theirs.
    fn status_of(&mut self, id: StepId) -> StepStatus {
        let step = &self.graph.steps[id];
        let InputsState {
            mut reasons,
            waiting,
            blocked,
        } = self.inputs_state(step);
        let kind = self.env.kinds.get(step);
        if kind.is_none() {
            reasons.insert(
                0,
                Reason::NotExecutable {
                    kind: step.kind.as_str().into(),
                },
            );
        }
        let status = if kind.is_none() || blocked {
            Status::Blocked
        } else if waiting {
            Status::Pending
        } else {
            Status::Run // refined below once the key is known
        };
        let mut st = StepStatus {
            id,
            address: step.address.clone(),
            kind: step.kind.as_str(),
            status,
            key: None,
            key_json: None,
            reasons,
        };
        if !waiting && !blocked {
            self.look_up(id, kind, &mut st);
        }
        if st.status == Status::Run && step.is_conditional() {
            self.decide_pass(id, &mut st);
        }
        if st.status != Status::Cached && step.is_conditional() {
            if let Some(a) = &step.adaptive {
                st.reasons.insert(
                    0,
                    Reason::Conditional {
                        min: a.min,
                        max: a.max,
                        until_ci: a.until_ci,
                        until_decided: a.until_decided,
                        metric: a.metric.clone(),
                    },
                );
            }
        }
        if matches!(st.status, Status::Run | Status::Pending) {
            if let Some(kind) = kind {
                st.reasons
                    .extend(kind.coming(self.env, step).into_iter().map(Reason::Note));
            }
        }
        st
    }

    /// Which inputs of `step` will run first or are blocked.
    fn inputs_state(&self, step: &Step) -> InputsState {
        let mut state = InputsState {
            reasons: Vec::new(),
            waiting: false,
            blocked: false,
        };
        for i in &step.inputs {
            let from = &self.graph.steps[i.from];
            let st = self.out[i.from].as_ref().expect("topological order").status;
            match st {
                Status::Cached | Status::NotNeeded => {}
                Status::Blocked => {
                    state.blocked = true;
                    state.reasons.push(Reason::InputBlocked {
                        mount: i.mount.clone(),
                        from: from.address.clone(),
                    })
                }
                _ => {
                    state.waiting = true;
                    state.reasons.push(Reason::InputPending {
                        mount: i.mount.clone(),
                        from: from.address.clone(),
                    })
                }
            }
        }
        state
    }

    /// Key step `id` (every input's output is known) and, if its kind can perform it, look
    /// for a usable record: cached, or why it runs.
    fn look_up(&mut self, id: StepId, kind: Option<&dyn Kind>, st: &mut StepStatus) {
        let step = &self.graph.steps[id];
        let ds: Vec<&str> = step
            .inputs
            .iter()
            .map(|i| self.digests[i.from].as_deref().expect("cached input"))
            .collect();
        let key = step_key(step, &ds, Some(self.env.fingerprint_of(step)));
        let hash = key.hash();
        let key_json = key.to_json();
        if let Some(kind) = kind {
            let is_fresh = cairn_graph::select::any_matches(self.fresh, step);
            let anew = self.anew.get(&id);
            match usable_record(self.env, step, &hash) {
                Lookup::Hit(_) if is_fresh => st.reasons.push(Reason::Fresh),
                Lookup::Hit(_) if anew.is_some() => st.reasons.push(Reason::MeasuredAnew {
                    why: anew.cloned().unwrap_or_default(),
                }),
                Lookup::Hit(r) => {
                    if step.together.is_some() {
                        self.campaigns[id] = kind.campaign(&r);
                    }
                    st.status = Status::Cached;
                    self.digests[id] = Some(r.output_digest.clone());
                    st.reasons
                        .extend(kind.notes(&r).into_iter().map(Reason::Note));
                }
                Lookup::BlobMissing(digest) => st.reasons.push(Reason::BlobMissing { digest }),
                Lookup::Corrupt(error) => st.reasons.push(Reason::CorruptRecord { error }),
                Lookup::Unusable(u) => st.reasons.push(Reason::Unusable {
                    what: u.what.into(),
                    why: u.why,
                }),
                Lookup::Miss => st.reasons.extend(why_new_key(
                    self.env.store,
                    self.graph,
                    self.remembered,
                    id,
                    &hash,
                    &key_json,
                )),
            }
        }
        st.key = Some(hash);
        if self.with_key_json {
            st.key_json = Some(key_json);
        }
    }

    /// Decide a conditional pass that would run now if every earlier pass of its point is
    /// settled, as the run will: one the adaptive rule does not need is not needed.
    fn decide_pass(&mut self, id: StepId, st: &mut StepStatus) {
        let (graph, env, out, remembered) = (self.graph, self.env, &self.out, self.remembered);
        let step = &graph.steps[id];
        let mut earlier = crate::adaptive::earlier_passes(graph, step);
        let settled = earlier.all(|s| {
            matches!(
                out[s.id].as_ref().map(|o| o.status),
                Some(Status::Cached | Status::NotNeeded)
            )
        });
        // a rule may read trials whose statuses come later in the graph's order (another
        // variant's passes): for those, the record the study's last run left
        let decision = settled
            .then(|| {
                crate::adaptive::decide_with(env, graph, step, |id| {
                    match out.get(id).and_then(Option::as_ref) {
                        Some(o) if o.status == Status::Cached => o.key.clone(),
                        Some(_) => None,
                        None => remembered
                            .get(&graph.steps[id].address)
                            .filter(|key| env.store.get_record(key).is_ok_and(|r| r.is_some()))
                            .cloned(),
                    }
                })
            })
            .flatten();
        if let Some(decision) = decision {
            if !decision.needed {
                st.status = Status::NotNeeded;
                st.reasons.clear();
                self.digests[id] = Some(crate::adaptive::NOT_NEEDED_DIGEST.to_string());
            }
            st.reasons.insert(0, Reason::Decided { decision });
        }
    }
}

/// As a run does before a step runs: the inputs it reads that were found in the store must
/// still have their product here (an image in the engine, a snapshot in the cache); one
/// whose product is gone will run again first (and the step waits for it). Latest steps
/// first, so an input that will run again has its own inputs asked in turn.
fn unserve_absent_inputs(graph: &StepGraph, env: &Env<'_>, out: &mut [StepStatus]) {
    let mut asked = vec![false; out.len()];
    for &id in graph.order.iter().rev() {
        // a goal (nothing reads it) is what the run is for: its product must be here
        if out[id].status == Status::Cached && graph.dependents(id).next().is_none() {
            asked[id] = true;
            let key = out[id].key.clone().unwrap_or_default();
            if let Presence::Gone(u) = crate::cache::present(env, &graph.steps[id], &key) {
                out[id].status = Status::Run;
                out[id].reasons.push(Reason::Unusable {
                    what: u.what.into(),
                    why: u.why,
                });
            }
        }
        if !matches!(out[id].status, Status::Run | Status::Pending) {
            continue;
        }
        for i in &graph.steps[id].inputs {
            let from = i.from;
            let mut keyed_anew = false;
            if out[from].status == Status::Cached && !std::mem::replace(&mut asked[from], true) {
                let key = out[from].key.clone().unwrap_or_default();
                match crate::cache::present(env, &graph.steps[from], &key) {
                    Presence::Here => {}
                    // another record of its key serves, with another output: this step's
                    // key is known once it is read
                    Presence::Alternate(_) => keyed_anew = true,
                    Presence::Gone(u) => {
                        out[from].status = Status::Run;
                        out[from].reasons.push(Reason::Unusable {
                            what: u.what.into(),
                            why: u.why,
                        });
                    }
                }
            }
            let waits = !matches!(out[from].status, Status::Cached | Status::NotNeeded);
            if (waits || keyed_anew) && out[id].status == Status::Run {
                out[id].status = Status::Pending;
                out[id].reasons.push(Reason::InputPending {
                    mount: i.mount.clone(),
                    from: graph.steps[from].address.clone(),
                });
            }
        }
    }
}

/// A step that will run, or waits to, needs what its kind requires of this machine (the
/// container engine, a server runtime); without it the step is blocked, and so is what
/// waits for it. A step served from the store needs nothing.
fn block_unavailable(graph: &StepGraph, env: &Env<'_>, out: &mut [StepStatus]) {
    for &id in &graph.order {
        let step = &graph.steps[id];
        if !matches!(out[id].status, Status::Run | Status::Pending) {
            continue;
        }
        let unavailable = env.kinds.get(step).and_then(|k| k.unavailable(env, step));
        if let Some(error) = unavailable {
            out[id].status = Status::Blocked;
            out[id].reasons.insert(0, Reason::Unavailable { error });
            continue;
        }
        let blocked_input = step
            .inputs
            .iter()
            .find(|i| out[i.from].status == Status::Blocked);
        if let Some(i) = blocked_input {
            let from = graph.steps[i.from].address.clone();
            out[id].status = Status::Blocked;
            out[id]
                .reasons
                .retain(|r| !matches!(r, Reason::InputPending { from: f, .. } if f == &from));
            out[id].reasons.push(Reason::InputBlocked {
                mount: i.mount.clone(),
                from,
            });
        }
    }
}

/// Compare the key this step has now with the key its last recorded run had.
fn why_new_key(
    store: &Store,
    graph: &StepGraph,
    remembered: &BTreeMap<String, String>,
    id: StepId,
    _hash: &str,
    key_json: &Value,
) -> Vec<Reason> {
    let step = &graph.steps[id];
    let Some(prev_key) = remembered.get(&step.address) else {
        return vec![Reason::New];
    };
    let prev = match store.get_record(prev_key) {
        Ok(Some(r)) => r,
        _ => {
            return vec![Reason::PreviousGone {
                key: prev_key.clone(),
            }]
        }
    };
    let mut reasons = Vec::new();
    let old_inputs = inputs_by_mount(&prev.key_json);
    let new_inputs = inputs_by_mount(key_json);
    for (mount, new) in &new_inputs {
        let old = old_inputs.get(mount);
        if old != Some(new) {
            let from = step
                .inputs
                .iter()
                .find(|i| &i.mount == mount)
                .map(|i| graph.steps[i.from].address.clone())
                .unwrap_or_default();
            reasons.push(Reason::InputChanged {
                mount: mount.clone(),
                from,
                old: old.cloned(),
                new: new.clone(),
            });
        }
    }
    for mount in old_inputs.keys() {
        if !new_inputs.contains_key(mount) {
            reasons.push(Reason::Changed {
                path: format!("inputs.{mount}"),
                old: old_inputs.get(mount).map(|d| Value::String(d.clone())),
                new: None,
            });
        }
    }
    let strip = |v: &Value| {
        let mut v = v.clone();
        if let Value::Object(m) = &mut v {
            m.remove("inputs");
        }
        v
    };
    for c in diff(&strip(&prev.key_json), &strip(key_json)) {
        reasons.push(Reason::Changed {
            path: c.path,
            old: c.old,
            new: c.new,
        });
    }
    reasons
}

fn inputs_by_mount(key_json: &Value) -> BTreeMap<String, String> {
    key_json
        .get("inputs")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|i| {
                    Some((
                        i.get("mount")?.as_str()?.to_string(),
                        i.get("digest")?.as_str()?.to_string(),
                    ))
                })
                .collect()
        })
        .unwrap_or_default()
}

/// The statuses that explain `selector`: each matching step, then (depth first) every
/// input that made it stale, down to the first step that changed by itself.
pub fn explain(graph: &StepGraph, all: &[StepStatus], selector: &Selector) -> Vec<(usize, StepId)> {
    let mut out = Vec::new();
    let mut seen = HashSet::new();
    for s in graph.steps.iter().filter(|s| selector.matches(s)) {
        walk(graph, all, s.id, 0, &mut seen, &mut out);
    }
    out
}

fn walk(
    graph: &StepGraph,
    all: &[StepStatus],
    id: StepId,
    depth: usize,
    seen: &mut HashSet<StepId>,
    out: &mut Vec<(usize, StepId)>,
) {
    if !seen.insert(id) {
        return;
    }
    out.push((depth, id));
    for r in &all[id].reasons {
        let from = match r {
            Reason::InputChanged { from, .. }
            | Reason::InputPending { from, .. }
            | Reason::InputBlocked { from, .. } => from,
            _ => continue,
        };
        if let Some(i) = graph.steps[id]
            .inputs
            .iter()
            .find(|i| &graph.steps[i.from].address == from)
        {
            walk(graph, all, i.from, depth + 1, seen, out);
        }
    }
}
