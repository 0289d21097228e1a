//! The plan language's shape as one table: for every node, the children, properties and
//! values the parser accepts. The parser checks against these lists and nothing else, and
//! `docs/plan-language.md` is tested against [`grammar`], so the reference cannot drift.

use std::sync::LazyLock;

/// A plan file's top-level nodes.
pub(crate) const TOP_LEVEL: &[&str] = &[
    "study", "import", "build", "image", "server", "dataset", "workload", "trials", "analysis",
    "claim", "report", "step", "param", "when",
];

pub(crate) const PARAM_CHILDREN: &[&str] = &["values", "when"];
pub(crate) const PARAM_SINGLE: &[&str] = &["values"];
pub(crate) const PARAM_PROPS: &[&str] = &["default", "list"];

pub(crate) const STUDY_CHILDREN: &[&str] = &["title", "host-path"];
pub(crate) const STUDY_SINGLE: &[&str] = &["title"];

pub(crate) const IMAGE_CHILDREN: &[&str] = &[
    "extends", "debian", "packages", "file", "run", "env", "build",
];
pub(crate) const IMAGE_SINGLE: &[&str] = &["extends"];
pub(crate) const DEBIAN_PROPS: &[&str] = &["suite", "arch", "variant"];

pub(crate) const BUILD_CHILDREN: &[&str] = &[
    "compiler",
    "cflags",
    "cxxflags",
    "ldflags",
    "type",
    "configure",
    "cmake",
    "link",
    "strip",
    "deps",
    "prefix",
    "cflags-remove",
    "cxxflags-remove",
    "ldflags-remove",
    "configure-remove",
    "cmake-remove",
    "deps-remove",
];
pub(crate) const BUILD_SINGLE: &[&str] = &["compiler", "type", "link", "strip", "prefix"];
/// An image's `build` or a named one: `build extends="o2" { … }`.
pub(crate) const BUILD_PROPS: &[&str] = &["extends"];
/// A top-level `build "name" { … }`: a build's children and its `source`, which an image's
/// build gives as its argument.
pub(crate) const NAMED_BUILD_CHILDREN: &[&str] = &[
    "source",
    "compiler",
    "cflags",
    "cxxflags",
    "ldflags",
    "type",
    "configure",
    "cmake",
    "link",
    "strip",
    "deps",
    "prefix",
    "cflags-remove",
    "cxxflags-remove",
    "ldflags-remove",
    "configure-remove",
    "cmake-remove",
    "deps-remove",
];
pub(crate) const NAMED_BUILD_SINGLE: &[&str] =
    &["source", "compiler", "type", "link", "strip", "prefix"];
pub(crate) const BUILD_COMPILERS: &[&str] = &["gcc", "clang"];
pub(crate) const BUILD_TYPES: &[&str] = &["release", "debug"];
pub(crate) const BUILD_LINKS: &[&str] = &["dynamic", "static"];
/// `link "static" programs="mariadbd"`: only these programs are linked statically.
pub(crate) const BUILD_LINK_PROPS: &[&str] = &["programs"];

pub(crate) const SERVER_CHILDREN: &[&str] = &[
    "extends",
    "image",
    "option",
    "env",
    "allocator",
    "connect",
    "cpus",
    "memory",
    "executor",
    "system",
    "client",
    "link",
    "profile",
];
pub(crate) const SERVER_SINGLE: &[&str] = &[
    "extends",
    "image",
    "allocator",
    "connect",
    "cpus",
    "memory",
    "executor",
    "system",
    "client",
    "link",
    "profile",
];
pub(crate) const LINK_PROPS: &[&str] = &["rate", "delay"];

pub(crate) const TRIALS_CHILDREN: &[&str] = &[
    "servers",
    "dataset",
    "workload",
    "passes",
    "seed",
    "measured-by",
    "settle",
    "runs",
    "io-scheduler",
    "transparent-hugepages",
    "sysctl",
    "sysfs",
    "cpus",
    "tie",
    "profile",
];
pub(crate) const TRIALS_SINGLE: &[&str] = &[
    "dataset",
    "workload",
    "passes",
    "seed",
    "measured-by",
    "settle",
    "runs",
    "io-scheduler",
    "transparent-hugepages",
    "cpus",
    "profile",
];
/// The properties of a trials block's `sysctl` and `sysfs` (`as="name"`: their axis's name).
pub(crate) const HOST_SETTING_PROPS: &[&str] = &["as"];
/// The properties of a trials block's `tie` (`to="cpus"`: the axis it follows; `times=2`).
pub(crate) const TIE_PROPS: &[&str] = &["to", "times"];
pub(crate) const PASSES_PROPS: &[&str] = &["min", "max", "until-ci", "until", "metric"];
/// What `until=` may say.
pub(crate) const PASSES_UNTIL: &[&str] = &["decided"];

pub(crate) const ANALYSIS_KINDS: &[&str] = &["table", "compare", "plot", "scaling", "profile"];
pub(crate) const ANALYSIS_CHILDREN: &[&str] = &[
    "trials", "servers", "where", "exclude", "table", "compare", "plot", "scaling", "profile",
];

pub(crate) const CLAIM_CHILDREN: &[&str] = &["trials", "metric", "operations", "where", "expect"];
pub(crate) const CLAIM_SINGLE: &[&str] = &["trials", "metric", "operations", "expect"];
pub(crate) const EXPECT_PROPS: &[&str] = &[
    "within",
    "by",
    "about",
    "tolerance",
    "for",
    "over",
    "trend",
    "x",
    "from",
    "to",
];
/// What a claim over operations, or over a parameter's values, may say of them (`for=`).
pub(crate) const CLAIM_QUANTIFIERS: &[&str] = &["most", "all"];
/// Which way a trend claim says the gain moves (`trend=`).
pub(crate) const CLAIM_TRENDS: &[&str] = &["grows", "shrinks"];

pub(crate) const REPORT_CHILDREN: &[&str] = &["analyses", "format"];
pub(crate) const REPORT_SINGLE: &[&str] = &["format"];
pub(crate) const REPORT_FORMATS: &[&str] = &["markdown", "html"];

pub(crate) const STEP_CHILDREN: &[&str] = &[
    "run", "needs", "input", "output", "env", "matrix", "passes", "timeout", "measure",
];
pub(crate) const STEP_SINGLE: &[&str] = &["run", "passes", "timeout", "measure"];
/// The one property of a plain `step`; with it, the step is of a registered kind.
pub(crate) const STEP_PROPS: &[&str] = &["kind"];
pub(crate) const KIND_STEP_CHILDREN: &[&str] = &["needs", "matrix", "passes"];
pub(crate) const KIND_STEP_SINGLE: &[&str] = &["passes"];
pub(crate) const NEEDS_PROPS: &[&str] = &["as"];

pub(crate) const DISTRIBUTIONS: &[&str] = &["uniform", "gaussian", "special", "pareto", "zipfian"];

/// The workload drivers' node names, from their one list in cairn-defs.
pub(crate) static DRIVERS: LazyLock<Vec<&'static str>> = LazyLock::new(cairn_defs::driver_names);
/// How clients connect and where they run: the names of cairn-defs' `Connect` and `ClientPath`.
pub(crate) static CONNECTS: LazyLock<Vec<&'static str>> =
    LazyLock::new(cairn_defs::server::Connect::names);
pub(crate) static CLIENT_PATHS: LazyLock<Vec<&'static str>> =
    LazyLock::new(cairn_defs::server::ClientPath::names);

/// How a workload parameter's values are checked and normalised.
#[derive(Clone, Copy)]
pub(crate) enum ParamKind {
    /// integer >= 1
    Positive,
    /// integer >= 0
    Count,
    /// duration string → seconds as `Value::Float`; `true` = must be > 0
    Duration(bool),
    Choice(&'static [&'static str]),
    /// a number >= 0 (integer or decimal), as `Value::Float`
    Number,
    /// `#true` / `#false`
    Flag,
    /// a string or an integer >= 1 (e.g. sql-bench's `scale "small"` or `scale 10`)
    NameOrCount,
    /// any string
    Text,
}

/// Every workload parameter a driver understands, with how its values are checked here;
/// the driver checks the rest (which parameter belongs to which driver, ranges) before a run.
pub(crate) const PARAMS: &[(&str, ParamKind)] = &[
    // every driver
    ("threads", ParamKind::Positive),
    ("duration", ParamKind::Duration(true)),
    ("warmup", ParamKind::Duration(false)),
    ("events", ParamKind::Count),
    ("report-interval", ParamKind::Duration(true)),
    // sysbench OLTP
    ("rate", ParamKind::Count),
    ("range-size", ParamKind::Positive),
    ("distribution", ParamKind::Choice(DISTRIBUTIONS)),
    ("pareto-h", ParamKind::Number),
    ("zipfian-exp", ParamKind::Number),
    ("point-selects", ParamKind::Count),
    ("simple-ranges", ParamKind::Count),
    ("sum-ranges", ParamKind::Count),
    ("order-ranges", ParamKind::Count),
    ("distinct-ranges", ParamKind::Count),
    ("index-updates", ParamKind::Count),
    ("non-index-updates", ParamKind::Count),
    ("delete-inserts", ParamKind::Count),
    ("range-selects", ParamKind::Flag),
    ("skip-trx", ParamKind::Flag),
    ("max-retries", ParamKind::Count),
    // super-smack
    ("clients", ParamKind::Positive),
    ("rounds", ParamKind::Positive),
    // sql-bench
    ("scale", ParamKind::NameOrCount),
    ("engine", ParamKind::Text),
    ("fast-insert", ParamKind::Flag),
    ("tcpip", ParamKind::Flag),
    ("seed", ParamKind::Count),
    ("statement-timeout", ParamKind::Duration(true)),
    ("tables", ParamKind::Positive),
    // every driver: bounds the whole run, a run still going after it is stopped (the
    // trial's watchdog)
    ("timeout", ParamKind::Duration(true)),
];

/// Whether the workload parameter `name` is a duration, which the plan writes as `"2m"` and
/// a trial records in seconds (for the unit a data file gives it).
pub fn is_duration_param(name: &str) -> bool {
    PARAMS
        .iter()
        .any(|(p, kind)| *p == name && matches!(kind, ParamKind::Duration(_)))
}

/// What one node of the plan language may hold.
#[derive(Debug, Clone, Default)]
pub struct NodeSpec {
    /// Where the node stands: `plan` is a file's top level, `image/build` the `build` of an
    /// `image`, `step[kind]` a `step` with a `kind=` property.
    pub path: String,
    /// The child nodes it accepts.
    pub children: Vec<&'static str>,
    /// Those of them it takes at most once.
    pub single: Vec<&'static str>,
    /// True when any child name is accepted (a `matrix`'s axes).
    pub any_children: bool,
    /// The `key=value` properties it accepts.
    pub props: Vec<&'static str>,
    /// True when any property is accepted (what reads them checks them: a driver, an
    /// analysis, a step kind, the server's configuration).
    pub any_props: bool,
    /// The values its argument may take, when they are a fixed list.
    pub values: Vec<&'static str>,
    /// The values a property may take, when they are a fixed list.
    pub prop_values: Vec<(&'static str, Vec<&'static str>)>,
}

fn spec(path: impl Into<String>) -> NodeSpec {
    NodeSpec {
        path: path.into(),
        ..NodeSpec::default()
    }
}

impl NodeSpec {
    fn children(mut self, children: &[&'static str], single: &[&'static str]) -> Self {
        self.children = children.to_vec();
        self.single = single.to_vec();
        self
    }
    fn props(mut self, props: &[&'static str]) -> Self {
        self.props = props.to_vec();
        self
    }
    fn any_props(mut self) -> Self {
        self.any_props = true;
        self
    }
    fn values(mut self, values: &[&'static str]) -> Self {
        self.values = values.to_vec();
        self
    }
}

static GRAMMAR: LazyLock<Vec<NodeSpec>> = LazyLock::new(|| {
    let mut g = vec![
        spec("plan").children(TOP_LEVEL, &[]),
        spec("study").children(STUDY_CHILDREN, STUDY_SINGLE),
        spec("param")
            .children(PARAM_CHILDREN, PARAM_SINGLE)
            .props(PARAM_PROPS),
        spec("image").children(IMAGE_CHILDREN, IMAGE_SINGLE),
        spec("image/debian").props(DEBIAN_PROPS),
        spec("image/env").any_props(),
        spec("build")
            .children(NAMED_BUILD_CHILDREN, NAMED_BUILD_SINGLE)
            .props(BUILD_PROPS),
        spec("build/compiler").values(BUILD_COMPILERS),
        spec("build/type").values(BUILD_TYPES),
        spec("build/link")
            .values(BUILD_LINKS)
            .props(BUILD_LINK_PROPS),
        spec("image/build")
            .children(BUILD_CHILDREN, BUILD_SINGLE)
            .props(BUILD_PROPS),
        spec("image/build/compiler").values(BUILD_COMPILERS),
        spec("image/build/type").values(BUILD_TYPES),
        spec("image/build/link")
            .values(BUILD_LINKS)
            .props(BUILD_LINK_PROPS),
        spec("server").children(SERVER_CHILDREN, SERVER_SINGLE),
        spec("server/option").any_props(),
        spec("server/env").any_props(),
        spec("server/allocator").values(cairn_defs::server::ALLOCATORS),
        spec("server/connect").values(&CONNECTS),
        spec("server/client").values(&CLIENT_PATHS),
        spec("server/link").props(LINK_PROPS),
        spec("server/profile").values(cairn_defs::workload::PROFILES),
        spec("dataset").children(&DRIVERS, &[]),
    ];
    g.extend(
        DRIVERS
            .iter()
            .map(|d| spec(format!("dataset/{d}")).any_props()),
    );
    let workload_children: Vec<&str> = DRIVERS
        .iter()
        .copied()
        .chain(PARAMS.iter().map(|(p, _)| *p))
        .collect();
    g.push(spec("workload").children(&workload_children, &[]));
    g.extend(
        DRIVERS
            .iter()
            .map(|d| spec(format!("workload/{d}")).any_props()),
    );
    g.extend(PARAMS.iter().filter_map(|(p, kind)| match kind {
        ParamKind::Choice(values) => Some(spec(format!("workload/{p}")).values(values)),
        _ => None,
    }));
    g.extend([
        spec("trials").children(TRIALS_CHILDREN, TRIALS_SINGLE),
        // named sets of CPUs, and `clients=` (where the clients run)
        NodeSpec {
            prop_values: vec![(
                crate::trial_cpus::CLIENTS,
                crate::trial_cpus::ClientCpus::WORDS.to_vec(),
            )],
            ..spec("trials/cpus")
                .any_props()
                .props(&[crate::trial_cpus::CLIENTS])
        },
        NodeSpec {
            prop_values: vec![("until", PASSES_UNTIL.to_vec())],
            ..spec("trials/passes").props(PASSES_PROPS)
        },
        spec("trials/sysctl").props(HOST_SETTING_PROPS),
        spec("trials/sysfs").props(HOST_SETTING_PROPS),
        spec("trials/tie").props(TIE_PROPS),
        spec("analysis").children(ANALYSIS_CHILDREN, &[]),
        spec("analysis/where").any_props(),
        spec("analysis/exclude").any_props(),
    ]);
    g.extend(
        ANALYSIS_KINDS
            .iter()
            .map(|k| spec(format!("analysis/{k}")).any_props()),
    );
    g.extend([
        spec("claim").children(CLAIM_CHILDREN, CLAIM_SINGLE),
        spec("claim/where").any_props(),
        NodeSpec {
            prop_values: vec![
                ("for", CLAIM_QUANTIFIERS.to_vec()),
                ("trend", CLAIM_TRENDS.to_vec()),
            ],
            ..spec("claim/expect").props(EXPECT_PROPS)
        },
        spec("report").children(REPORT_CHILDREN, REPORT_SINGLE),
        spec("report/format").values(REPORT_FORMATS),
        spec("step")
            .children(STEP_CHILDREN, STEP_SINGLE)
            .props(STEP_PROPS),
        spec("step/env").any_props(),
        spec("step/needs").props(NEEDS_PROPS),
        NodeSpec {
            any_children: true,
            ..spec("step/matrix")
        },
        spec("step[kind]")
            .children(KIND_STEP_CHILDREN, KIND_STEP_SINGLE)
            .any_props(),
        spec("step[kind]/needs").props(NEEDS_PROPS),
        NodeSpec {
            any_children: true,
            ..spec("step[kind]/matrix")
        },
    ]);
    g
});

/// Every node of the plan language that holds children, properties or a fixed list of
/// values, as the parser checks them. Nodes that hold only free arguments (a `run`
/// command, a `title`) are listed as their parent's children and have no entry.
pub fn grammar() -> &'static [NodeSpec] {
    &GRAMMAR
}
