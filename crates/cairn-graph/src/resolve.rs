//! Plan → [`StepGraph`]: expands matrices and passes into steps, builds each step's
//! resolved definition (the part of its key that comes from the plan) and wires inputs.

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;

use cairn_defs::image::{
    SourceBuild, SourceOrigin, DEFAULT_BUILD_TYPE, DEFAULT_COMPILER, DEFAULT_LINK, DEFAULT_PREFIX,
};
use cairn_defs::{
    driver_code_version, profiled_code, trial_code, AnalysisDef, ClaimDef, DatasetDef,
    DatasetStepDef, Debian, ImageDef, LayerDef, ParamValue, PassRule, Props, ReportDef, ServerDef,
    TrialStepDef, WorkloadDef,
};
use cairn_plan::{BuildSource, Layer, Plan, Server, Sp, Value, Workload};
use petgraph::graph::{DiGraph, NodeIndex};
use serde::Serialize;
use serde_json::json;

use crate::expand;
use crate::step::{AdaptivePasses, CommandSpec, Input, InputFile, Step, StepId, StepKind};

#[derive(Debug, thiserror::Error)]
pub enum ResolveError {
    #[error("cannot read input file {path} of step `{step}`: {source}")]
    InputFile {
        step: String,
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("step `{step}` may not read {path}: {why}")]
    HostFile {
        step: String,
        path: PathBuf,
        why: cairn_plan::limits::HostFileError,
    },
    #[error("step `{step}` is of kind `{kind}`, which no registry holds for plans' steps")]
    UnknownKind { step: String, kind: String },
    #[error("dependency cycle through step `{0}`")]
    Cycle(String),
    #[error("the plan expands to {0} steps, more than the limit of {max}", max = cairn_plan::limits::MAX_STEPS)]
    TooManySteps(usize),
}

/// The resolved study: steps in a DAG. Node index `i` of `graph` is `steps[i]`;
/// an edge `a → b` means `b` reads `a`'s outputs.
#[derive(Debug)]
pub struct StepGraph {
    pub study: String,
    pub steps: Vec<Step>,
    pub graph: DiGraph<StepId, ()>,
    /// A topological order of all steps.
    pub order: Vec<StepId>,
    /// The plan's lock file (`PLAN.lock`), when one is beside it: the package versions its
    /// images must have. A constraint on image outputs, never in a key; the resolver leaves
    /// it empty and whoever reads the plan's folder fills it.
    pub lock: Option<cairn_defs::Lock>,
}

impl StepGraph {
    pub fn dependents(&self, id: StepId) -> impl Iterator<Item = StepId> + '_ {
        self.graph
            .neighbors_directed(NodeIndex::new(id), petgraph::Direction::Outgoing)
            .map(|n| n.index())
    }

    pub fn count(&self, kind: StepKind) -> usize {
        self.steps.iter().filter(|s| s.kind == kind).count()
    }
}

/// The key-relevant definition of a command step. Borrowed from the plan.
#[derive(Serialize)]
struct CommandDef<'a> {
    run: &'a str,
    env: BTreeMap<&'a str, &'a str>,
    /// relative path → content digest
    inputs: BTreeMap<&'a str, &'a str>,
    outputs: Vec<&'a str>,
    params: &'a BTreeMap<String, Value>,
    timeout_ms: Option<u64>,
    measure: bool,
}

/// A plan value as it appears in definitions: the same JSON scalar (plan values serialise
/// untagged), so the key text does not change.
fn json_value(v: &Value) -> serde_json::Value {
    serde_json::to_value(v).expect("a plan value serialises")
}

fn server_def(s: &Server) -> ServerDef {
    ServerDef {
        options: s
            .options
            .iter()
            .map(|(k, v)| (k.clone(), json_value(&v.value)))
            .collect(),
        env: s
            .env
            .iter()
            .map(|(k, v)| (k.clone(), v.value.clone()))
            .collect(),
        allocator: s.allocator.as_ref().map(|v| v.value.clone()),
        connect: s.connect.as_ref().map(|v| v.value.clone()),
        cpus: s.cpus.as_ref().map(|v| v.value.clone()),
        memory: s.memory.as_ref().map(|m| m.value),
        executor: s.executor.as_ref().map(|v| v.value.clone()),
        system: s.system.as_ref().map(|v| v.value.clone()),
        client: s.client.as_ref().map(|v| v.value.clone()),
        link: s.link.as_ref().map(|l| cairn_defs::LinkDef {
            rate: l.value.rate.as_ref().map(|v| v.value.clone()),
            delay: l.value.delay.as_ref().map(|v| v.value.clone()),
        }),
        profile: s.profile.as_ref().map(|v| v.value.clone()),
    }
}

/// A node's properties as definitions hold them.
fn plan_props(props: &BTreeMap<String, Sp<Value>>) -> Props {
    props
        .iter()
        .map(|(k, v)| (k.clone(), json_value(&v.value)))
        .collect()
}

fn workload_def(w: &Workload, point: &BTreeMap<String, Value>) -> WorkloadDef {
    WorkloadDef {
        driver: w.driver.value.clone(),
        test: w.test.value.clone(),
        driver_props: plan_props(&w.driver_props),
        params: point
            .iter()
            .map(|(k, v)| (k.clone(), json_value(v)))
            .collect(),
    }
}

/// The JSON of a typed definition, as it goes into the step's key.
fn definition_json<T: Serialize>(def: &T) -> serde_json::Value {
    serde_json::to_value(def).expect("a definition serialises")
}

/// The digest of a file the plan reads from the host, `rel` as written in the plan file
/// whose directory is `dir`. The plan reader checked that it is a regular file the plan may
/// read; checked again here, since a cached plan skips that and the file may have changed
/// (a symlink turned towards /etc, a FIFO that never ends).
fn hash_file(
    step: &str,
    plan: &Plan,
    dir: &std::path::Path,
    rel: &str,
) -> Result<String, ResolveError> {
    let host_paths: Vec<PathBuf> = plan
        .study
        .host_paths
        .iter()
        .map(|p| p.value.clone())
        .collect();
    let path = cairn_plan::limits::host_file(dir, rel, &host_paths).map_err(|why| {
        ResolveError::HostFile {
            step: step.to_string(),
            path: dir.join(rel),
            why,
        }
    })?;
    let bytes = std::fs::read(&path).map_err(|source| ResolveError::InputFile {
        step: step.to_string(),
        path: path.to_path_buf(),
        source,
    })?;
    Ok(blake3::hash(&bytes).to_hex().to_string())
}

struct Builder {
    steps: Vec<Step>,
    /// declared name of a `step`/`analysis`/… → its expansions
    by_name: HashMap<(StepKind, String), Vec<StepId>>,
    /// image name → the last step of its chain (what servers and datasets use)
    image_last: HashMap<String, StepId>,
    /// canonical JSON of (kind, definition, inputs) → the step that has them (image chains)
    shared: HashMap<String, StepId>,
}

impl Builder {
    fn push(&mut self, mut step: Step) -> StepId {
        let id = self.steps.len();
        step.id = id;
        self.by_name
            .entry((step.kind, step.name.clone()))
            .or_default()
            .push(id);
        self.steps.push(step);
        id
    }

    /// Push `step` unless a step with the same kind, definition and inputs exists; either
    /// way return the id of the step that has them.
    fn push_shared(&mut self, step: Step) -> StepId {
        let inputs: Vec<(&str, StepId)> = step
            .inputs
            .iter()
            .map(|i| (i.mount.as_str(), i.from))
            .collect();
        let canon = serde_json::to_string(&json!({
            "kind": step.kind.as_str(),
            "definition": &step.definition,
            "inputs": inputs,
        }))
        .expect("serialises");
        if let Some(&id) = self.shared.get(&canon) {
            return id;
        }
        let id = self.push(step);
        self.shared.insert(canon, id);
        id
    }

    fn ids(&self, kind: StepKind, name: &str) -> &[StepId] {
        self.by_name
            .get(&(kind, name.to_string()))
            .map(Vec::as_slice)
            .unwrap_or(&[])
    }
}

/// Directory name for one expansion of a needed step: `[threads=2]#3` → `threads=2#3`.
fn expansion_dir(step: &Step) -> String {
    step.address[step.name.len()..]
        .replace(['[', ']'], "")
        .replace('/', "_")
}

/// Resolve `plan` with the drivers' code versions of [`cairn_defs::driver_code_version`].
pub fn resolve(plan: &Plan) -> Result<StepGraph, ResolveError> {
    resolve_all(plan, &driver_code_version, &[])
}

/// Resolve `plan` whose `step "…" kind="…"` steps are of `kinds` (the registry's
/// `cairn_engine::Registry::plan_step_kinds`, with their code versions).
pub fn resolve_with_kinds(plan: &Plan, kinds: &[StepKind]) -> Result<StepGraph, ResolveError> {
    resolve_all(plan, &driver_code_version, kinds)
}

/// Resolve `plan`, taking each driver's code version from `driver_version` (trial keys carry
/// it once it is above 1). [`resolve`] uses the real table; tests pass another to see what a
/// bump would change.
pub fn resolve_with_driver_versions(
    plan: &Plan,
    driver_version: &dyn Fn(&str) -> u32,
) -> Result<StepGraph, ResolveError> {
    resolve_all(plan, driver_version, &[])
}

fn resolve_all(
    plan: &Plan,
    driver_version: &dyn Fn(&str) -> u32,
    kinds: &[StepKind],
) -> Result<StepGraph, ResolveError> {
    let mut b = Builder {
        steps: Vec::new(),
        by_name: HashMap::new(),
        image_last: HashMap::new(),
        shared: HashMap::new(),
    };

    resolve_images(plan, &mut b)?;
    resolve_trials(plan, &mut b, driver_version);
    resolve_analyses(plan, &mut b);
    resolve_commands(plan, &mut b, kinds)?;
    // the plan's validation bounds each declaration before expansion; this bounds what any
    // kind expanded to, so a kind that validation does not count still cannot exceed it
    if b.steps.len() as u128 > cairn_plan::limits::MAX_STEPS {
        return Err(ResolveError::TooManySteps(b.steps.len()));
    }

    let mut graph = DiGraph::with_capacity(b.steps.len(), b.steps.len());
    for s in &b.steps {
        graph.add_node(s.id);
    }
    for s in &b.steps {
        for i in &s.inputs {
            graph.add_edge(NodeIndex::new(i.from), NodeIndex::new(s.id), ());
        }
    }
    let order =
        stable_order(&graph).map_err(|id| ResolveError::Cycle(b.steps[id].address.clone()))?;
    crate::key::fill_definition_keys(&mut b.steps, &order);
    Ok(StepGraph {
        study: plan.study.name.clone(),
        steps: b.steps,
        graph,
        order,
        lock: None,
    })
}

/// A topological order that is also declaration order wherever dependencies allow
/// (Kahn's algorithm, lowest id first), so `plan` and `graph` list steps as written.
/// `Err(id)` names a step on a cycle.
fn stable_order(graph: &DiGraph<StepId, ()>) -> Result<Vec<StepId>, StepId> {
    let n = graph.node_count();
    let mut indegree: Vec<usize> = (0..n)
        .map(|i| {
            graph
                .neighbors_directed(NodeIndex::new(i), petgraph::Direction::Incoming)
                .count()
        })
        .collect();
    let mut ready: std::collections::BinaryHeap<std::cmp::Reverse<StepId>> = (0..n)
        .filter(|&i| indegree[i] == 0)
        .map(std::cmp::Reverse)
        .collect();
    let mut order = Vec::with_capacity(n);
    while let Some(std::cmp::Reverse(id)) = ready.pop() {
        order.push(id);
        for next in graph.neighbors_directed(NodeIndex::new(id), petgraph::Direction::Outgoing) {
            let j = next.index();
            indegree[j] -= 1;
            if indegree[j] == 0 {
                ready.push(std::cmp::Reverse(j));
            }
        }
    }
    if order.len() < n {
        return Err((0..n).find(|&i| indegree[i] > 0).unwrap_or(0));
    }
    Ok(order)
}

fn base_step(kind: StepKind, name: &str, address: String, loc: cairn_plan::Loc) -> Step {
    Step {
        id: 0,
        kind,
        name: name.to_string(),
        address,
        measure: false,
        pass: 1,
        params: BTreeMap::new(),
        definition: serde_json::Value::Null,
        code: kind.code_version().to_string(),
        inputs: Vec::new(),
        command: None,
        adaptive: None,
        together: None,
        definition_key: String::new(),
        loc,
    }
}

// The defaults live with the image definition; re-exported for callers that name them here.
pub use cairn_defs::image::{DEFAULT_ARCH, DEFAULT_SUITE, DEFAULT_VARIANT};

/// An image becomes a chain of steps: the base (`image/<name>`: debootstrap of
/// [`ImageDef::Base`], `{"stage":"base","debian":{suite,arch,variant},"packages":[sorted]}`;
/// missing Debian fields take [`DEFAULT_SUITE`]/[`DEFAULT_ARCH`]/[`DEFAULT_VARIANT`], written
/// into the definition so explicit and defaulted values give the same key), then one step per
/// layer (`image/<name>/<n>`, 1-based: [`ImageDef::Layer`], `{"stage":"layer","layer":…}`, its
/// parent mounted as `parent`). A file layer's definition holds the file's content digest and
/// destination, not its path; the path travels in `step.command.files` (the executor reads it
/// from there).
/// The Debian mirror is machine-local configuration and is in no key.
///
/// Images declared in the root plan file are always built; an image from an imported file
/// only when a server uses it.
///
/// Steps with identical (definition, inputs) are one step: an image that `extends` another
/// shares the parent's base and leading layers (named after the image that declared them
/// first). Dependents use the chain's last step ([`Builder::image_last`]).
fn resolve_images(plan: &Plan, b: &mut Builder) -> Result<(), ResolveError> {
    // A recipe file can offer many images (amd64 and i386, several suites): an imported
    // image is built only if a server uses it; the plan's own images always are.
    let used: std::collections::HashSet<&str> = plan
        .servers
        .iter()
        .filter_map(|s| s.image.as_deref().map(String::as_str))
        .collect();
    for img in &plan.images {
        let in_root = img.name.loc.source == cairn_plan::SourceId(0);
        if !in_root && !used.contains(img.name.as_str()) {
            continue;
        }
        let deb = img.debian.as_ref();
        let field = |f: Option<&Option<String>>, default: &str| {
            f.and_then(|v| v.clone())
                .unwrap_or_else(|| default.to_string())
        };
        let mut packages: Vec<String> = img.packages.iter().map(|p| p.value.clone()).collect();
        packages.sort_unstable();
        packages.dedup();
        let definition = ImageDef::Base {
            debian: Debian {
                suite: field(deb.map(|d| &d.suite), DEFAULT_SUITE),
                arch: field(deb.map(|d| &d.arch), DEFAULT_ARCH),
                variant: field(deb.map(|d| &d.variant), DEFAULT_VARIANT),
            },
            packages,
        };
        let mut s = base_step(
            StepKind::IMAGE,
            &img.name,
            format!("image/{}", img.name.value),
            img.name.loc,
        );
        s.definition = definition_json(&definition);
        let mut last = b.push_shared(s);
        for (n, l) in img.layers.iter().enumerate() {
            let mut s = base_step(
                StepKind::IMAGE,
                &img.name,
                format!("image/{}/{}", img.name.value, n + 1),
                l.loc,
            );
            let layer = match &l.value {
                Layer::File { src, dest } => {
                    // relative to the file that declared the layer (a parent image may
                    // live in another file)
                    let dir = &plan.sources[l.loc.source.0].dir;
                    let abs = dir.join(src);
                    let digest = hash_file(&s.address, plan, dir, src)?;
                    s.command = Some(CommandSpec {
                        run: String::new(),
                        env: BTreeMap::new(),
                        files: vec![InputFile {
                            rel: src.clone(),
                            abs,
                            digest: digest.clone(),
                        }],
                        outputs: Vec::new(),
                        timeout: None,
                        params: BTreeMap::new(),
                    });
                    LayerDef::File {
                        digest,
                        dest: dest.clone(),
                    }
                }
                Layer::Run { command } => LayerDef::Run {
                    command: command.clone(),
                },
                Layer::Env { vars } => LayerDef::Env { vars: vars.clone() },
                Layer::Build(b) => {
                    let source = match &b.source {
                        BuildSource::Debian { package } => SourceOrigin::Debian {
                            package: package.clone(),
                        },
                        BuildSource::Tarball { path } => {
                            // found like a file layer's file, relative to the file that
                            // names it (a named build's may be another); the key holds its
                            // content
                            let at = b.source_at.unwrap_or(l.loc);
                            let dir = &plan.sources[at.source.0].dir;
                            let digest = hash_file(&s.address, plan, dir, path)?;
                            s.command = Some(CommandSpec {
                                run: String::new(),
                                env: BTreeMap::new(),
                                files: vec![InputFile {
                                    rel: path.clone(),
                                    abs: dir.join(path),
                                    digest: digest.clone(),
                                }],
                                outputs: Vec::new(),
                                timeout: None,
                                params: BTreeMap::new(),
                            });
                            let name = std::path::Path::new(path)
                                .file_name()
                                .map(|n| n.to_string_lossy().into_owned())
                                .unwrap_or_default();
                            SourceOrigin::Tarball { digest, name }
                        }
                    };
                    let mut deps = b.deps.clone();
                    deps.sort_unstable();
                    deps.dedup();
                    let or = |v: &Option<String>, d: &str| v.clone().unwrap_or_else(|| d.into());
                    LayerDef::Build {
                        build: Box::new(SourceBuild {
                            source,
                            compiler: or(&b.compiler, DEFAULT_COMPILER),
                            cflags: b.cflags.clone(),
                            cxxflags: b.cxxflags.clone(),
                            ldflags: b.ldflags.clone(),
                            build_type: or(&b.build_type, DEFAULT_BUILD_TYPE),
                            configure: b.configure.clone(),
                            cmake: b.cmake.clone(),
                            link: or(&b.link, DEFAULT_LINK),
                            static_programs: b.link_programs.clone(),
                            strip: b.strip.unwrap_or(false),
                            deps,
                            prefix: or(&b.prefix, DEFAULT_PREFIX),
                        }),
                    }
                }
            };
            s.definition = definition_json(&ImageDef::Layer { layer });
            s.inputs.push(Input {
                from: last,
                mount: "parent".into(),
            });
            last = b.push_shared(s);
        }
        b.image_last.insert(img.name.value.clone(), last);
    }
    Ok(())
}

fn resolve_trials(plan: &Plan, b: &mut Builder, driver_version: &dyn Fn(&str) -> u32) {
    let servers: HashMap<&str, &Server> =
        plan.servers.iter().map(|s| (s.name.as_str(), s)).collect();
    let workloads: HashMap<&str, &Workload> = plan
        .workloads
        .iter()
        .map(|w| (w.name.as_str(), w))
        .collect();
    let datasets: HashMap<&str, &cairn_plan::Dataset> =
        plan.datasets.iter().map(|d| (d.name.as_str(), d)).collect();
    // one dataset step per (dataset, server): the snapshot depends on the server's build and options
    let mut dataset_steps: HashMap<(String, String), StepId> = HashMap::new();

    for t in &plan.trials {
        let Some(w) = workloads.get(t.workload.as_str()) else {
            continue; // validated by cairn-plan
        };
        let shown = crate::trial_factors::shown_axes(t, w);
        let axes: Vec<&str> = shown.iter().map(String::as_str).collect();
        let points = crate::trial_factors::trial_points(t, w);
        let replicas = replicas(t, &servers);
        for sname in &t.servers {
            let Some(server) = servers.get(sname.as_str()) else {
                continue;
            };
            let sdef = server_def(server);
            let image_input = server
                .image
                .as_ref()
                .and_then(|i| b.image_last.get(i.as_str()).copied())
                .map(|from| Input {
                    from,
                    mount: "image".into(),
                });
            let dataset_input = t.dataset.as_ref().and_then(|d| {
                let ds = datasets.get(d.as_str())?;
                let k = (d.value.clone(), sname.value.clone());
                let id = *dataset_steps.entry(k).or_insert_with(|| {
                    let mut s = base_step(
                        StepKind::DATASET,
                        &ds.name,
                        format!("dataset/{}@{}", ds.name.value, sname.value),
                        ds.name.loc,
                    );
                    s.definition = definition_json(&DatasetStepDef {
                        dataset: DatasetDef {
                            generator: ds.generator.value.clone(),
                            props: plan_props(&ds.props),
                        },
                        // where the trial's clients run does not change the data
                        server: ServerDef {
                            client: None,
                            link: None,
                            ..sdef.clone()
                        },
                    });
                    s.inputs.extend(image_input.clone());
                    b.push(s)
                });
                Some(Input {
                    from: id,
                    mount: "dataset".into(),
                })
            });
            let passes = &t.passes.value;
            for point in &points {
                let base = format!("trial/{}/{}", t.name.value, sname.value);
                let adaptive = passes.is_adaptive().then(|| AdaptivePasses {
                    min: passes.min,
                    max: passes.max,
                    until_ci: passes.until_ci,
                    until_decided: passes.until_decided,
                    metric: passes.metric.clone(),
                    point: expand::address(&base, point, &axes, 1, 1),
                });
                // every server's passes at this point are compared with each other
                let together =
                    expand::address(&format!("trial/{}", t.name.value), point, &axes, 1, 1);
                for pass in 1..=passes.max {
                    let address = expand::address(&base, point, &axes, pass, passes.max);
                    let mut s = base_step(StepKind::TRIAL, &t.name, address, t.name.loc);
                    s.measure = true;
                    s.pass = pass;
                    s.adaptive = adaptive.clone();
                    s.together = Some(together.clone());
                    s.params = point.clone();
                    s.definition = definition_json(&TrialStepDef {
                        server: sdef.clone(),
                        // the block's factors are not the workload's: its driver never sees them
                        workload: workload_def(w, &crate::trial_factors::workload_point(w, point)),
                        // declared reuse: the measurements another study made
                        study: t
                            .measured_by
                            .as_ref()
                            .map_or_else(|| plan.study.name.clone(), |m| m.value.clone()),
                        replica: replicas
                            .contains(sname.as_str())
                            .then(|| sname.value.clone()),
                        lifecycle: crate::lifecycle::lifecycle_def(t),
                        host: crate::trial_factors::host_settings(t, point),
                        cpus: crate::trial_factors::cpu_count(t, point),
                        cpuset: crate::trial_factors::cpu_set(t, point),
                        clients_with_server: cairn_plan::trial_cpus::clients_with_server(t),
                        profile: t.profile.as_ref().map(|p| p.value.clone()),
                    });
                    s.code = trial_code(
                        StepKind::TRIAL.code_version(),
                        &w.driver.value,
                        driver_version(&w.driver.value),
                    );
                    // how a profile is sampled is the trial's code too, for profiled trials
                    // only: a record made by an earlier profiler does not serve
                    // (the block's profile, else the server's, as the trial reads them)
                    if let Some(p) = t
                        .profile
                        .as_ref()
                        .map(|p| &p.value)
                        .or(sdef.profile.as_ref())
                    {
                        s.code = profiled_code(&s.code, p);
                    }
                    s.inputs.extend(image_input.clone());
                    s.inputs.extend(dataset_input.clone());
                    b.push(s);
                }
            }
        }
    }
}

/// The servers of trials block `t` that another of its servers equals (the same definition
/// and image): their trials carry their names ([`TrialStepDef::replica`]).
fn replicas<'p>(
    t: &'p cairn_plan::Trials,
    servers: &HashMap<&str, &Server>,
) -> std::collections::BTreeSet<&'p str> {
    let identity = |name: &str| {
        servers
            .get(name)
            .map(|s| (server_def(s), s.image.as_ref().map(|i| i.value.clone())))
    };
    let ids: Vec<(&str, _)> = t
        .servers
        .iter()
        .map(|n| (n.as_str(), identity(n.as_str())))
        .collect();
    ids.iter()
        .filter(|(n, id)| id.is_some() && ids.iter().any(|(m, other)| m != n && other == id))
        .map(|(n, _)| *n)
        .collect()
}

fn trial_inputs(b: &Builder, names: &[String]) -> Vec<Input> {
    let mut out = Vec::new();
    for n in names {
        for &id in b.ids(StepKind::TRIAL, n) {
            out.push(Input {
                from: id,
                mount: b.steps[id].address.clone(),
            });
        }
    }
    out
}

/// The server of a trial's address `trial/<trials>/<server>[threads=8]#2` (names hold no
/// `/`, `[` or `#`).
fn server_of_trial(address: &str) -> &str {
    let rest = address.strip_prefix("trial/").unwrap_or(address);
    let rest = rest.split_once('/').map_or(rest, |(_, r)| r);
    rest.split(['[', '#']).next().unwrap_or(rest)
}

/// The trials block of a trial's address `trial/<trials>/<server>…`.
fn block_of_trial(address: &str) -> &str {
    let rest = address.strip_prefix("trial/").unwrap_or(address);
    rest.split_once('/').map_or(rest, |(b, _)| b)
}

/// The cells a claim's `expect "a OP b"` names, each `(block, server)`, read as the claim
/// step reads them (`cairn_defs::claim::{expectation_words, side_parts}`). `None` when it
/// cannot be read so (the claim step refuses it, with the reason).
fn claim_sides(expect: &str) -> Option<Vec<(Option<&str>, &str)>> {
    let [left, _, right] = cairn_defs::claim::expectation_words(expect)?;
    [left, right]
        .into_iter()
        .map(|side| {
            let (block, server, _) = cairn_defs::claim::side_parts(side);
            (!server.is_empty()).then_some((block, server))
        })
        .collect()
}

/// The sequential design of the first of the trials blocks `names` whose passes stop when
/// decided, if any: the analyses and claims reading them decide at its looks' levels.
fn sequential_of(plan: &Plan, names: &[String]) -> Option<cairn_defs::Sequential> {
    plan.trials
        .iter()
        .filter(|t| names.contains(&t.name.value))
        .map(|t| &t.passes.value)
        .find(|p| p.until_decided && p.max > p.min)
        .map(|p| cairn_defs::Sequential {
            min: p.min,
            max: p.max,
        })
}

fn resolve_analyses(plan: &Plan, b: &mut Builder) {
    let all_trials: Vec<String> = plan.trials.iter().map(|t| t.name.value.clone()).collect();
    for a in &plan.analyses {
        let names: Vec<String> = if a.trials.is_empty() {
            all_trials.clone()
        } else {
            a.trials.iter().map(|t| t.value.clone()).collect()
        };
        let mut s = base_step(
            StepKind::ANALYSIS,
            &a.name,
            format!("analysis/{}", a.name.value),
            a.name.loc,
        );
        s.definition = definition_json(&AnalysisDef {
            kind: a.kind.value.clone(),
            props: plan_props(&a.props),
            sequential: sequential_of(plan, &names),
            servers: a.servers.iter().map(|s| s.value.clone()).collect(),
            filter: plan_props(&a.filter),
            exclude: a.exclude.iter().map(plan_props).collect(),
        });
        // only the trials it reads: re-measuring another re-runs nothing of it
        s.inputs = trial_inputs(b, &names);
        s.inputs.retain(|i| {
            let trial = &b.steps[i.from];
            a.reads(server_of_trial(&trial.address), &trial.params)
        });
        b.push(s);
    }
    for c in &plan.claims {
        // its one block, or every block (as before `trials` could be said)
        let names: Vec<String> = match &c.trials {
            Some(t) => vec![t.value.clone()],
            None => all_trials.clone(),
        };
        let mut s = base_step(
            StepKind::CLAIM,
            &c.name,
            format!("claim/{}", c.name.value),
            c.name.loc,
        );
        s.definition = definition_json(&ClaimDef {
            metric: c.metric.value.clone(),
            filter: plan_props(&c.filter),
            expect: c.expect.value.clone(),
            within: c.within.as_ref().map(|w| w.value),
            by: c.by.as_ref().map(|b| b.value),
            about: c.about.as_ref().map(|a| a.value),
            tolerance: c.tolerance.as_ref().map(|t| t.value),
            sequential: sequential_of(plan, &names),
            operations: c.operations.as_ref().map(|o| o.value.clone()),
            quantifier: c.quantifier.as_ref().map(|q| q.value.clone()),
            over: c.over.as_ref().map(|o| o.value.clone()),
            trend: c.trend.as_ref().map(|t| t.value.clone()),
            x: c.x.as_ref().map(|x| x.value.clone()),
            from: c.from.as_ref().map(|f| f.value.clone()),
            to: c.to.as_ref().map(|t| t.value.clone()),
        });
        // only the trials of the cells it compares: re-measuring another server re-runs
        // nothing of it (and `--only` a claim needs only its own servers' measurements)
        s.inputs = trial_inputs(b, &names);
        if let Some(sides) = claim_sides(&c.expect.value) {
            s.inputs.retain(|i| {
                let address = &b.steps[i.from].address;
                let server = server_of_trial(address);
                let block = block_of_trial(address);
                sides
                    .iter()
                    .any(|(b, srv)| *srv == server && b.is_none_or(|b| b == block))
            });
        }
        b.push(s);
    }
    for r in &plan.reports {
        let mut s = base_step(
            StepKind::REPORT,
            &r.name,
            format!("report/{}", r.name.value),
            r.name.loc,
        );
        // the title is the report's content: retitling re-renders the report, nothing else
        let title = plan.study.title.as_deref().unwrap_or(&plan.study.name);
        s.definition = definition_json(&ReportDef {
            format: r.format.as_ref().map(|f| f.value.clone()),
            title: title.to_string(),
            reused: plan
                .trials
                .iter()
                .filter_map(|t| Some((t.name.value.clone(), t.measured_by.as_ref()?.value.clone())))
                .collect(),
            passes: plan
                .trials
                .iter()
                .map(|t| {
                    let p = &t.passes.value;
                    let rule = PassRule {
                        min: p.min,
                        max: p.max,
                        until_ci: p.until_ci,
                        until_decided: p.until_decided,
                        metric: p.metric.clone(),
                    };
                    (t.name.value.clone(), rule)
                })
                .collect(),
            datasets: plan
                .trials
                .iter()
                .filter_map(|t| {
                    let name = t.dataset.as_ref()?;
                    let ds = plan.datasets.iter().find(|d| d.name.value == name.value)?;
                    let def = DatasetDef {
                        generator: ds.generator.value.clone(),
                        props: plan_props(&ds.props),
                    };
                    Some((t.name.value.clone(), def))
                })
                .collect(),
            params: plan
                .param_values()
                .into_iter()
                .map(|(name, (value, default))| (name, ParamValue { value, default }))
                .collect(),
        });
        for a in &r.analyses {
            for &id in b.ids(StepKind::ANALYSIS, a) {
                s.inputs.push(Input {
                    from: id,
                    mount: a.value.clone(),
                });
            }
        }
        let claims: Vec<StepId> = b
            .steps
            .iter()
            .filter(|s| s.kind == StepKind::CLAIM)
            .map(|s| s.id)
            .collect();
        for id in claims {
            s.inputs.push(Input {
                from: id,
                mount: b.steps[id].address.clone(),
            });
        }
        // every trial: the report's data.csv has one row per trial, and its provenance
        // section reads their records
        s.inputs.extend(trial_inputs(b, &all_trials));
        b.push(s);
    }
}

fn resolve_commands(plan: &Plan, b: &mut Builder, kinds: &[StepKind]) -> Result<(), ResolveError> {
    // the registered kind of each step that names one, looked up once (a fan-in step may
    // need ten thousand others)
    let kind_of: HashMap<&str, StepKind> = plan
        .steps
        .iter()
        .filter_map(|s| {
            let k = s.kind.as_ref()?;
            let kind = kinds.iter().find(|r| r.as_str() == k.value)?;
            Some((s.name.as_str(), *kind))
        })
        .collect();
    // First create every expansion, then wire `needs`, so order in the file does not matter.
    let mut pending: Vec<(StepId, &cairn_plan::CommandStep)> = Vec::new();
    for cs in &plan.steps {
        if let Some(kind) = &cs.kind {
            let Some(&kind) = kind_of.get(cs.name.as_str()) else {
                return Err(ResolveError::UnknownKind {
                    step: cs.name.value.clone(),
                    kind: kind.value.clone(),
                });
            };
            pending.extend(kind_steps(cs, kind, b).into_iter().map(|id| (id, cs)));
            continue;
        }
        let mut files = Vec::new();
        for i in &cs.inputs {
            let abs = cs.dir.join(i.as_str());
            let digest = hash_file(&cs.name, plan, &cs.dir, i)?;
            files.push(InputFile {
                rel: i.value.clone(),
                abs,
                digest,
            });
        }
        let axes = expand::varying_axes(&cs.matrix);
        let env: BTreeMap<String, String> = cs
            .env
            .iter()
            .map(|(k, v)| (k.clone(), v.value.clone()))
            .collect();
        let mut outputs: Vec<String> = cs.outputs.iter().map(|o| o.value.clone()).collect();
        outputs.sort();
        outputs.dedup();
        let timeout = cs.timeout.as_ref().map(|t| t.value);
        for point in expand::points(&cs.matrix) {
            for pass in 1..=cs.passes.value {
                let address = expand::address(&cs.name, &point, &axes, pass, cs.passes.value);
                let def = CommandDef {
                    run: &cs.run,
                    env: env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect(),
                    inputs: files
                        .iter()
                        .map(|f| (f.rel.as_str(), f.digest.as_str()))
                        .collect(),
                    outputs: outputs.iter().map(String::as_str).collect(),
                    params: &point,
                    timeout_ms: timeout.map(|t| t.as_millis() as u64),
                    measure: cs.measure,
                };
                let mut s = base_step(StepKind::COMMAND, &cs.name, address, cs.name.loc);
                s.measure = cs.measure;
                s.pass = pass;
                s.definition = serde_json::to_value(&def).expect("serialises");
                s.command = Some(CommandSpec {
                    run: cs.run.value.clone(),
                    env: env.clone(),
                    files: files.clone(),
                    outputs: outputs.clone(),
                    timeout,
                    params: point.clone(),
                });
                s.params = point.clone();
                let id = b.push(s);
                pending.push((id, cs));
            }
        }
    }
    for (id, cs) in pending {
        let mut inputs = Vec::new();
        for need in &cs.needs {
            let targets = needed(b, &kind_of, &need.step);
            let single = targets.len() == 1;
            for from in targets {
                let mount = if single {
                    need.as_dir.clone()
                } else {
                    format!("{}/{}", need.as_dir, expansion_dir(&b.steps[from]))
                };
                inputs.push(Input { from, mount });
            }
        }
        b.steps[id].inputs = inputs;
    }
    Ok(())
}

/// The expansions of a registered kind's step `cs` (one per matrix point and pass), their
/// definition its properties and the point: `{"props": {…}, "params": {…}}`.
fn kind_steps(cs: &cairn_plan::CommandStep, kind: StepKind, b: &mut Builder) -> Vec<StepId> {
    let axes = expand::varying_axes(&cs.matrix);
    let props: BTreeMap<&str, &Value> = cs
        .props
        .iter()
        .map(|(k, v)| (k.as_str(), &v.value))
        .collect();
    let base = format!("{}/{}", kind.as_str(), cs.name.value);
    let mut ids = Vec::new();
    for point in expand::points(&cs.matrix) {
        for pass in 1..=cs.passes.value {
            let address = expand::address(&base, &point, &axes, pass, cs.passes.value);
            let mut s = base_step(kind, &cs.name, address, cs.name.loc);
            s.pass = pass;
            s.definition = json!({ "props": props, "params": point });
            s.params = point.clone();
            ids.push(b.push(s));
        }
    }
    ids
}

/// The steps a `needs "name"` reads: a command step's expansions, else an analysis, else a
/// registered kind's step of that name (`kind_of`: the plan's steps of registered kinds).
fn needed(b: &Builder, kind_of: &HashMap<&str, StepKind>, name: &str) -> Vec<StepId> {
    [
        Some(StepKind::COMMAND),
        Some(StepKind::ANALYSIS),
        kind_of.get(name).copied(),
    ]
    .into_iter()
    .flatten()
    .map(|k| b.ids(k, name))
    .find(|ids| !ids.is_empty())
    .unwrap_or(&[])
    .to_vec()
}
