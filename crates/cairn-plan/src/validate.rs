//! Whole-plan checks once every file is read: duplicate names, dangling references,
//! `extends`/`needs` cycles, figure names no driver reports; then `extends` is resolved by
//! merging parents into children.

use std::collections::{BTreeMap, BTreeSet, HashSet};

use crate::builds::Written;
use crate::diagnostics::{did_you_mean, problem, Reporter};
use crate::model::*;
use crate::parse::Declared;

pub(crate) fn validate(
    plan: &mut Plan,
    declared: &Declared,
    builds: &Written,
    r: &mut Reporter,
    on_disk: bool,
) {
    duplicates(declared, r);
    references(plan, declared, r);
    build_references(builds, declared, r);
    let build_edges: Vec<(String, Option<Sp<String>>)> = builds
        .named
        .iter()
        .map(|(n, b)| (n.value.clone(), b.extends.clone()))
        .collect();
    let bad_builds = extends_cycles("build", &build_edges, r);
    crate::builds::resolve(plan, builds, &bad_builds, r);
    if on_disk {
        host_files(plan, r);
    }
    figure_names(plan, r);
    crate::host_factors::check_axis_names(plan, r);
    crate::analysis_subset::check(plan, r);
    let image_edges: Vec<(String, Option<Sp<String>>)> = plan
        .images
        .iter()
        .map(|i| (i.name.value.clone(), i.extends.clone()))
        .collect();
    let server_edges: Vec<(String, Option<Sp<String>>)> = plan
        .servers
        .iter()
        .map(|s| (s.name.value.clone(), s.extends.clone()))
        .collect();
    let bad_images = extends_cycles("image", &image_edges, r);
    let bad_servers = extends_cycles("server", &server_edges, r);
    needs_cycles(plan, r);
    expansion_limits(plan, r);
    crate::builds::warn_stacked(&plan.images, &bad_images, r);
    resolve_images(plan, &bad_images);
    resolve_servers(plan, &bad_servers);
    crate::trial_cpus::check(plan, r);
    crate::trial_ties::check(plan, r);
}

/// Every figure the plan names — an analysis's `metric`, a claim's `metric`, the `metric` an
/// adaptive `passes` watches — against the figure vocabulary (`cairn_defs::figures`: the
/// shared names, old names, and family members such as sql-bench's `<test>_s`), so a typo is
/// refused here rather than read as a figure no trial has.
fn figure_names(plan: &Plan, r: &mut Reporter) {
    let mut suggestions: Option<Vec<String>> = None;
    let mut check = |name: &str, loc: Loc, what: &str, r: &mut Reporter| {
        if cairn_defs::figures::lookup(name).is_some() {
            return;
        }
        let known = suggestions.get_or_insert_with(cairn_defs::figures::suggestions);
        r.push(
            problem("bad_value", format!("no figure named `{name}`"))
                .label(loc, format!("not a figure cairn knows ({what})"))
                .help_opt(did_you_mean(name, known.iter().map(String::as_str)))
                .help(format!(
                    "a figure is a name drivers report (`tps`, `qps`, `latency_p95_ms`, `errors`, …) or sql-bench's per-test `<test>_s` or per-group `<test>_<group>_s`, <test> one of {}",
                    cairn_defs::figures::OPERATION_SECONDS.stems.join(", ")
                )),
        );
    };
    for a in &plan.analyses {
        if let Some(Sp {
            value: Value::String(name),
            loc,
        }) = a.props.get("metric")
        {
            check(name, *loc, "analysis metric", r);
        }
    }
    // a claim over operations reads the suite's per-operation seconds, not a named figure
    for c in plan.claims.iter().filter(|c| c.operations.is_none()) {
        check(&c.metric.value, c.metric.loc, "claim metric", r);
    }
    for t in &plan.trials {
        let passes = &t.passes;
        if passes.value.metric != Passes::DEFAULT_METRIC {
            check(
                &passes.value.metric,
                passes.loc,
                "the metric `passes` watches",
                r,
            );
        }
    }
}

fn duplicates(declared: &Declared, r: &mut Reporter) {
    for (kind, names) in &declared.by_kind {
        let mut first: BTreeMap<&str, &Sp<String>> = BTreeMap::new();
        for name in names {
            match first.get(name.as_str()) {
                Some(prev) => {
                    let p = problem(
                        "duplicate",
                        format!("{kind} `{}` is defined twice", name.value),
                    )
                    .label(name.loc, "defined again here")
                    .label(prev.loc, "first defined here")
                    .help(format!("every {kind} needs its own name"));
                    r.push(p);
                }
                None => {
                    first.insert(name.as_str(), name);
                }
            }
        }
    }
}

fn names<'a>(declared: &'a Declared, kind: &str) -> Vec<&'a str> {
    declared
        .by_kind
        .get(kind)
        .map(|v| v.iter().map(|s| s.as_str()).collect())
        .unwrap_or_default()
}

/// (kind, name) of every declaration, so each reference is one lookup: a scan per
/// reference made a 10,000-step plan with a 10,000-way fan-in quadratic.
type Index<'a> = HashSet<(&'a str, &'a str)>;

fn index(declared: &Declared) -> Index<'_> {
    declared
        .by_kind
        .iter()
        .flat_map(|(k, v)| v.iter().map(move |n| (*k, n.as_str())))
        .collect()
}

fn check_ref(
    declared: &Declared,
    ix: &Index<'_>,
    r: &mut Reporter,
    kinds: &[&str],
    reference: &Sp<String>,
) {
    if kinds.iter().any(|k| ix.contains(&(*k, reference.as_str()))) {
        return;
    }
    let known: Vec<&str> = kinds.iter().flat_map(|k| names(declared, k)).collect();
    let what = kinds.join(" or ");
    let mut p = problem("dangling", format!("no {what} named `{}`", reference.value))
        .label(reference.loc, format!("unknown {what}"))
        .help_opt(did_you_mean(reference, known.iter().copied()));
    if known.is_empty() {
        p = p.help(format!("the plan declares no {what}"));
    } else if known.len() <= 12 {
        let list: Vec<String> = known.iter().map(|k| format!("`{k}`")).collect();
        p = p.help(format!("known: {}", list.join(", ")));
    }
    r.push(p);
}

/// Every `build … extends="name"` (of an image or a named build) names a named build.
fn build_references(builds: &Written, d: &Declared, r: &mut Reporter) {
    let ix = index(d);
    let extends = builds
        .named
        .iter()
        .filter_map(|(_, b)| b.extends.as_ref())
        .chain(builds.layers.iter().filter_map(|l| l.spec.extends.as_ref()));
    for e in extends {
        // an image's name is the likely slip: say what `extends=` of a build names
        if !ix.contains(&("build", e.as_str())) && ix.contains(&("image", e.as_str())) {
            let p = problem("dangling", format!("no build named `{}`", e.value))
                .label(e.loc, "an image, not a build")
                .help(format!(
                    "a build extends a top-level `build \"name\" {{ … }}`; to start from image \
                     `{}`, write `extends \"{}\"` in the image",
                    e.value, e.value
                ));
            r.push(p);
            continue;
        }
        check_ref(d, &ix, r, &["build"], e);
    }
}

fn references(plan: &Plan, d: &Declared, r: &mut Reporter) {
    let ix = index(d);
    for i in &plan.images {
        if let Some(e) = &i.extends {
            check_ref(d, &ix, r, &["image"], e);
        }
    }
    for s in &plan.servers {
        if let Some(e) = &s.extends {
            check_ref(d, &ix, r, &["server"], e);
        }
        if let Some(i) = &s.image {
            check_ref(d, &ix, r, &["image"], i);
        }
    }
    for t in &plan.trials {
        for s in &t.servers {
            check_ref(d, &ix, r, &["server"], s);
        }
        if let Some(ds) = &t.dataset {
            check_ref(d, &ix, r, &["dataset"], ds);
        }
        check_ref(d, &ix, r, &["workload"], &t.workload);
    }
    for a in &plan.analyses {
        for t in &a.trials {
            check_ref(d, &ix, r, &["trials"], t);
        }
    }
    for c in &plan.claims {
        // without `trials` a claim reads every block, as it always has (its key is kept); its
        // kind's check refuses sides that two blocks measure, asking which one
        if let Some(t) = &c.trials {
            check_ref(d, &ix, r, &["trials"], t);
        }
    }
    for rep in &plan.reports {
        for a in &rep.analyses {
            check_ref(d, &ix, r, &["analysis"], a);
        }
    }
    for s in &plan.steps {
        for n in &s.needs {
            check_ref(d, &ix, r, &["step", "analysis"], &n.step);
        }
    }
}

/// Finds cycles in a graph given as adjacency lists of (target, place of the edge).
/// Each cycle is returned once, as its edges in order.
fn find_cycles(edges: &[Vec<(usize, Loc)>]) -> Vec<Vec<(usize, usize, Loc)>> {
    #[derive(Clone, Copy, PartialEq)]
    enum State {
        New,
        Open,
        Done,
    }
    fn dfs(
        u: usize,
        edges: &[Vec<(usize, Loc)>],
        state: &mut [State],
        stack: &mut Vec<(usize, usize, Loc)>,
        out: &mut Vec<Vec<(usize, usize, Loc)>>,
        seen: &mut BTreeSet<Vec<usize>>,
    ) {
        state[u] = State::Open;
        for &(v, loc) in &edges[u] {
            match state[v] {
                State::New => {
                    stack.push((u, v, loc));
                    dfs(v, edges, state, stack, out, seen);
                    stack.pop();
                }
                State::Open => {
                    let start = stack
                        .iter()
                        .position(|(from, _, _)| *from == v)
                        .unwrap_or(stack.len());
                    let mut cycle: Vec<(usize, usize, Loc)> = stack[start..].to_vec();
                    cycle.push((u, v, loc));
                    let mut key: Vec<usize> = cycle.iter().map(|(f, _, _)| *f).collect();
                    key.sort_unstable();
                    if seen.insert(key) {
                        out.push(cycle);
                    }
                }
                State::Done => {}
            }
        }
        state[u] = State::Done;
    }
    let mut state = vec![State::New; edges.len()];
    let mut out = Vec::new();
    let mut seen = BTreeSet::new();
    for u in 0..edges.len() {
        if state[u] == State::New {
            dfs(u, edges, &mut state, &mut Vec::new(), &mut out, &mut seen);
        }
    }
    out
}

fn report_cycle(
    r: &mut Reporter,
    what: &str,
    names: &[&str],
    cycle: &[(usize, usize, Loc)],
    edge_label: &str,
) {
    let mut chain: Vec<&str> = cycle.iter().map(|(f, _, _)| names[*f]).collect();
    chain.push(names[cycle[0].0]);
    let chain = chain
        .iter()
        .map(|n| format!("`{n}`"))
        .collect::<Vec<_>>()
        .join(" → ");
    let mut p = problem("cycle", format!("{what} cycle: {chain}"));
    for (f, t, loc) in cycle {
        p = p.label(
            *loc,
            format!("`{}` {edge_label} `{}`", names[*f], names[*t]),
        );
    }
    r.push(p.help("break the cycle by removing one of these references"));
}

/// Reports `extends` cycles; returns the names that are part of one (left unresolved).
fn extends_cycles(
    kind: &str,
    decls: &[(String, Option<Sp<String>>)],
    r: &mut Reporter,
) -> BTreeSet<String> {
    let index: BTreeMap<&str, usize> = decls
        .iter()
        .enumerate()
        .rev()
        .map(|(i, (n, _))| (n.as_str(), i))
        .collect();
    let edges: Vec<Vec<(usize, Loc)>> = decls
        .iter()
        .map(|(_, e)| {
            e.as_ref()
                .and_then(|e| index.get(e.as_str()).map(|&t| vec![(t, e.loc)]))
                .unwrap_or_default()
        })
        .collect();
    let names: Vec<&str> = decls.iter().map(|(n, _)| n.as_str()).collect();
    let mut bad = BTreeSet::new();
    for cycle in find_cycles(&edges) {
        report_cycle(r, &format!("{kind} `extends`"), &names, &cycle, "extends");
        bad.extend(cycle.iter().map(|(f, _, _)| names[*f].to_string()));
    }
    bad
}

fn needs_cycles(plan: &Plan, r: &mut Reporter) {
    let index: BTreeMap<&str, usize> = plan
        .steps
        .iter()
        .enumerate()
        .rev()
        .map(|(i, s)| (s.name.as_str(), i))
        .collect();
    let edges: Vec<Vec<(usize, Loc)>> = plan
        .steps
        .iter()
        .map(|s| {
            s.needs
                .iter()
                .filter_map(|n| index.get(n.step.as_str()).map(|&t| (t, n.step.loc)))
                .collect()
        })
        .collect();
    let names: Vec<&str> = plan.steps.iter().map(|s| s.name.as_str()).collect();
    for cycle in find_cycles(&edges) {
        report_cycle(r, "step `needs`", &names, &cycle, "needs");
    }
}

/// Every file the plan reads from the host — a step's `input`, an image's `file` — must be a
/// regular file inside the directory of the plan file that names it, or inside a `host-path`
/// of the study: a shared plan cannot quietly copy `/etc/shadow` or `~/.ssh` into the store.
/// (Imports may come from anywhere: plan text is parsed, never stored, and what an imported
/// file may read is bound by this same rule.)
fn host_files(plan: &Plan, r: &mut Reporter) {
    use crate::limits::{host_file, HostFileError};
    let host_paths: Vec<std::path::PathBuf> = plan
        .study
        .host_paths
        .iter()
        .map(|p| p.value.clone())
        .collect();
    let mut check = |dir: &std::path::Path, rel: &str, loc: Loc, what: &str| {
        let why = match host_file(dir, rel, &host_paths) {
            Ok(_) => return,
            // a missing `input` is reported by the parser already
            Err(HostFileError::Missing(_)) if what == "input" => return,
            Err(e) => e,
        };
        let (code, label, help) = match &why {
            HostFileError::Missing(_) => (
                "path",
                "no such file",
                format!(
                    "files are relative to the directory of the plan file that names them, `{}`",
                    dir.display()
                ),
            ),
            HostFileError::NotRegular => (
                "path",
                "not a regular file",
                "only regular files can be copied in and hashed".to_string(),
            ),
            HostFileError::Outside { canonical } => (
                "host_path",
                "outside the plan's directory",
                format!(
                    "to let the plan read it, allow its directory in the study: `study {{ host-path \"{}\" }}`",
                    canonical.parent().unwrap_or(canonical).display()
                ),
            ),
        };
        let p = problem(code, format!("{what} `{rel}` cannot be read: {why}"))
            .label(loc, label)
            .help(help);
        r.push(p);
    };
    for s in &plan.steps {
        for i in &s.inputs {
            check(&s.dir, i, i.loc, "input");
        }
    }
    for img in &plan.images {
        for l in &img.layers {
            let dir = &plan.sources[l.loc.source.0].dir;
            match &l.value {
                Layer::File { src, .. } => check(dir, src, l.loc, "file"),
                Layer::Build(b) => {
                    if let BuildSource::Tarball { path } = &b.source {
                        // relative to the file that names it (a named build's may be another)
                        let at = b.source_at.unwrap_or(l.loc);
                        let dir = &plan.sources[at.source.0].dir;
                        check(dir, path, at, "tarball")
                    }
                }
                _ => {}
            }
        }
    }
}

/// Refuses a plan whose matrices and passes would expand to more steps (or dependency edges)
/// than [`crate::limits`] allows, before anything is expanded: counts only, saturating.
fn expansion_limits(plan: &Plan, r: &mut Reporter) {
    use crate::limits::{
        step_expansion, trials_expansion, MAX_EDGES, MAX_STEPS, MAX_STEPS_PER_DECLARATION,
    };
    let help = "each combination of matrix values, servers and passes is a step of its own; \
                split the study, or run fewer combinations";
    // the biggest declarations (by steps, by edges), named when the whole plan is too big
    type Biggest = Option<(u128, Loc, String)>;
    fn note(biggest: &mut Biggest, n: u128, loc: Loc, what: String) {
        if biggest.as_ref().is_none_or(|(b, _, _)| n > *b) {
            *biggest = Some((n, loc, what));
        }
    }
    let (mut most_steps, mut most_edges): (Biggest, Biggest) = (None, None);
    let mut total: u128 = 0;
    let mut edges: u128 = 0;
    // the place to point at: `passes` when it was written, else the declaration's name
    fn place<T>(passes: &Sp<T>, name: &Sp<String>) -> Loc {
        if passes.loc == name.loc {
            name.loc
        } else {
            passes.loc
        }
    }

    let workloads: BTreeMap<&str, &Workload> = plan
        .workloads
        .iter()
        .map(|w| (w.name.as_str(), w))
        .collect();
    let mut trial_steps: BTreeMap<&str, u128> = BTreeMap::new();
    for t in &plan.trials {
        let e = trials_expansion(t, workloads.get(t.workload.as_str()).copied());
        let loc = place(&t.passes, &t.name);
        if e.steps > MAX_STEPS_PER_DECLARATION {
            let p = problem(
                "limit",
                format!(
                    "trials `{}` would expand to {} trials ({}), more than the limit of {MAX_STEPS_PER_DECLARATION}",
                    t.name.value,
                    e.steps,
                    e.breakdown()
                ),
            )
            .label(loc, format!("{} trials", e.steps))
            .help(help);
            r.push(p);
        }
        // a dataset step per server, besides the trials
        let n = e.steps.saturating_add(t.servers.len() as u128);
        total = total.saturating_add(n);
        note(
            &mut most_steps,
            n,
            loc,
            format!("trials `{}`", t.name.value),
        );
        let sum = trial_steps.entry(t.name.as_str()).or_default();
        *sum = sum.saturating_add(e.steps); // two trials of one name are reported elsewhere
    }
    let all_trials: u128 = trial_steps.values().fold(0, |a, n| a.saturating_add(*n));
    for a in &plan.analyses {
        let read = if a.trials.is_empty() {
            all_trials
        } else {
            a.trials
                .iter()
                .map(|t| trial_steps.get(t.as_str()).copied().unwrap_or(0))
                .fold(0, u128::saturating_add)
        };
        total = total.saturating_add(1);
        edges = edges.saturating_add(read);
        note(
            &mut most_edges,
            read,
            a.name.loc,
            format!("analysis `{}`", a.name.value),
        );
    }
    for c in &plan.claims {
        let read = match &c.trials {
            Some(t) => trial_steps.get(t.as_str()).copied().unwrap_or(0),
            None => all_trials,
        };
        total = total.saturating_add(1);
        edges = edges.saturating_add(read);
        note(
            &mut most_edges,
            read,
            c.name.loc,
            format!("claim `{}`", c.name.value),
        );
    }
    for rep in &plan.reports {
        total = total.saturating_add(1);
        edges = edges.saturating_add((rep.analyses.len() + plan.claims.len()) as u128);
    }
    for i in &plan.images {
        total = total.saturating_add(1 + i.layers.len() as u128);
    }

    let step_counts: BTreeMap<&str, u128> = plan
        .steps
        .iter()
        .map(|s| (s.name.as_str(), step_expansion(s).steps))
        .collect();
    for s in &plan.steps {
        let e = step_expansion(s);
        let loc = place(&s.passes, &s.name);
        if e.steps > MAX_STEPS_PER_DECLARATION {
            let p = problem(
                "limit",
                format!(
                    "step `{}` would expand to {} steps ({}), more than the limit of {MAX_STEPS_PER_DECLARATION}",
                    s.name.value,
                    e.steps,
                    e.breakdown()
                ),
            )
            .label(loc, format!("{} steps", e.steps))
            .help(help);
            r.push(p);
        }
        total = total.saturating_add(e.steps);
        note(
            &mut most_steps,
            e.steps,
            loc,
            format!("step `{}`", s.name.value),
        );
        // every expansion reads every expansion of each step it needs (an analysis is one)
        let read = s
            .needs
            .iter()
            .map(|n| step_counts.get(n.step.as_str()).copied().unwrap_or(1))
            .fold(0, u128::saturating_add);
        let read = e.steps.saturating_mul(read);
        edges = edges.saturating_add(read);
        note(
            &mut most_edges,
            read,
            s.name.loc,
            format!("step `{}`", s.name.value),
        );
    }

    if r.problems.iter().any(|p| p.code() == "cairn::plan::limit") {
        return; // a declaration over its limit is reason enough
    }
    let (message, biggest, unit, help) = if total > MAX_STEPS {
        (
            format!("the plan would expand to {total} steps, more than the limit of {MAX_STEPS}"),
            most_steps,
            "steps",
            help,
        )
    } else if edges > MAX_EDGES {
        (
            format!(
                "the plan's steps would read each other's outputs {edges} times, more than the limit of {MAX_EDGES}"
            ),
            most_edges,
            "reads",
            "a `needs` on an expanded step reads every expansion of it, and every analysis \
             and claim reads every trial it covers; split the study, or run fewer combinations",
        )
    } else {
        return;
    };
    if let Some((n, loc, what)) = biggest {
        let p = problem("limit", message)
            .label(loc, format!("the largest part: {what}, {n} {unit}"))
            .help(help);
        r.push(p);
    }
}

/// The chain of parents of `start` (nearest first), stopping at unknown names and cycles.
fn ancestors<T>(
    items: &[T],
    start: usize,
    name: impl Fn(&T) -> &str,
    parent: impl Fn(&T) -> Option<&str>,
) -> Vec<&T> {
    let mut chain = Vec::new();
    let mut seen = BTreeSet::from([start]);
    let mut cur = start;
    while let Some(p) = parent(&items[cur]) {
        let Some(next) = items.iter().position(|i| name(i) == p) else {
            break;
        };
        if !seen.insert(next) {
            break;
        }
        chain.push(&items[next]);
        cur = next;
    }
    chain
}

fn resolve_images(plan: &mut Plan, bad: &BTreeSet<String>) {
    let original = plan.images.clone();
    for (i, image) in plan.images.iter_mut().enumerate() {
        if bad.contains(image.name.as_str()) || image.extends.is_none() {
            continue;
        }
        let chain = ancestors(
            &original,
            i,
            |x| x.name.as_str(),
            |x| x.extends.as_ref().map(|e| e.as_str()),
        );
        // Apply from the farthest ancestor to the child itself.
        let mut merged_debian: Option<Debian> = None;
        let mut packages: Vec<Sp<String>> = Vec::new();
        let mut layers = Vec::new();
        for level in chain
            .iter()
            .rev()
            .copied()
            .chain(std::iter::once(&original[i]))
        {
            if let Some(d) = &level.debian {
                let m = merged_debian.get_or_insert(Debian {
                    suite: None,
                    arch: None,
                    variant: None,
                    arch_loc: None,
                });
                if d.suite.is_some() {
                    m.suite.clone_from(&d.suite);
                }
                if d.arch.is_some() {
                    m.arch.clone_from(&d.arch);
                    m.arch_loc = d.arch_loc;
                }
                if d.variant.is_some() {
                    m.variant.clone_from(&d.variant);
                }
            }
            for p in &level.packages {
                if !packages.iter().any(|q| q.value == p.value) {
                    packages.push(p.clone());
                }
            }
            layers.extend(level.layers.iter().cloned());
        }
        image.debian = merged_debian;
        image.packages = packages;
        image.layers = layers;
    }
}

fn resolve_servers(plan: &mut Plan, bad: &BTreeSet<String>) {
    let original = plan.servers.clone();
    for (i, server) in plan.servers.iter_mut().enumerate() {
        if bad.contains(server.name.as_str()) || server.extends.is_none() {
            continue;
        }
        let chain = ancestors(
            &original,
            i,
            |x| x.name.as_str(),
            |x| x.extends.as_ref().map(|e| e.as_str()),
        );
        let mut m = original[i].clone();
        for parent in chain {
            m.image = m.image.or_else(|| parent.image.clone());
            m.allocator = m.allocator.or_else(|| parent.allocator.clone());
            m.connect = m.connect.or_else(|| parent.connect.clone());
            m.cpus = m.cpus.or_else(|| parent.cpus.clone());
            m.memory = m.memory.or_else(|| parent.memory.clone());
            m.executor = m.executor.or_else(|| parent.executor.clone());
            m.system = m.system.or_else(|| parent.system.clone());
            m.client = m.client.or_else(|| parent.client.clone());
            m.link = m.link.or_else(|| parent.link.clone());
            m.profile = m.profile.or_else(|| parent.profile.clone());
            for (k, v) in &parent.options {
                m.options.entry(k.clone()).or_insert_with(|| v.clone());
            }
            for (k, v) in &parent.env {
                m.env.entry(k.clone()).or_insert_with(|| v.clone());
            }
        }
        *server = m;
    }
}
