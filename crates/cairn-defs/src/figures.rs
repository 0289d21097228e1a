//! The shared vocabulary of figures: every number a driver reports has a name, a unit and a direction here, so tables, analyses and claims read figures by meaning, never by a driver's private key.
//!
//! - [`Figure`]s are `const`s. Most are shared by every driver (`tps`, `qps`,
//!   `latency_p95_ms`, `errors`, …); a driver's extras (e.g. super-smack's connect times)
//!   are declared here too, with their unit and direction, and say which driver emits them.
//! - A [`Family`] covers figures named after what was measured, e.g. sql-bench's per-test
//!   times `<test>_s` and `<test>_<group>_s`.
//! - Records written before the names were shared use the drivers' old names (`mean_ms`,
//!   `avg_ms`, `p95_ms`, …): [`canonical`] and [`normalize`] read them under the shared ones.
//! - [`Figures`] is the map an outcome carries: it takes only figures of the vocabulary,
//!   and reading it (deserialising) normalises old names.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Deserializer, Serialize};

/// What a figure's number counts or measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Unit {
    /// Events (transactions, queries) per second.
    PerSecond,
    Milliseconds,
    Seconds,
    /// A number of things (events, queries, errors, clients, …).
    Count,
    /// Milliseconds of client CPU per 1000 queries.
    MillisecondsPer1kQueries,
    /// Microseconds (of CPU time) per query.
    MicrosecondsPerQuery,
    /// A count of things (context switches, …) per query.
    PerQuery,
    /// A share of a whole, in percent.
    Percent,
}

impl Unit {
    /// The unit's symbol as people read it (empty for counts).
    pub fn symbol(self) -> &'static str {
        match self {
            Unit::PerSecond => "1/s",
            Unit::Milliseconds => "ms",
            Unit::Seconds => "s",
            Unit::Count => "",
            Unit::MillisecondsPer1kQueries => "ms/1k queries",
            Unit::MicrosecondsPerQuery => "µs/query",
            Unit::PerQuery => "/query",
            Unit::Percent => "%",
        }
    }

    /// Decimals shown to people: enough to compare runs, not the measurement's noise.
    fn decimals(self) -> usize {
        match self {
            Unit::PerSecond => 1,
            Unit::Milliseconds => 2,
            Unit::Seconds => 2,
            Unit::Count => 0,
            Unit::MillisecondsPer1kQueries => 2,
            Unit::MicrosecondsPerQuery => 1,
            Unit::PerQuery => 2,
            Unit::Percent => 1,
        }
    }
}

/// Which way a figure gets better.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Direction {
    HigherIsBetter,
    LowerIsBetter,
    /// A setting or a size (`rate`, `clients`, `events`): neither better nor worse.
    Neither,
}

/// What kind of figure it is; tables order their columns by it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Group {
    Throughput,
    Latency,
    /// Wall-clock durations.
    Time,
    Errors,
    /// Amounts of work done (events, queries, rows, …).
    Volume,
    /// CPU time and scheduling cost: the client's, the server's.
    Cpu,
    /// What the run was asked to do (clients, rounds, target rate).
    Setting,
}

/// One named figure.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub struct Figure {
    /// The shared name, as figures maps and records key it.
    pub name: &'static str,
    pub unit: Unit,
    pub direction: Direction,
    pub group: Group,
    /// `None`: every driver that can measure it reports it under this name; else the one
    /// driver (`sysbench`, `smack`, `sqlbench`) whose extra it is.
    pub driver: Option<&'static str>,
    /// One line for people.
    pub summary: &'static str,
}

impl fmt::Display for Figure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name)
    }
}

const fn shared(
    name: &'static str,
    unit: Unit,
    direction: Direction,
    group: Group,
    summary: &'static str,
) -> Figure {
    Figure {
        name,
        unit,
        direction,
        group,
        driver: None,
        summary,
    }
}

const fn extra(
    driver: &'static str,
    name: &'static str,
    unit: Unit,
    direction: Direction,
    group: Group,
    summary: &'static str,
) -> Figure {
    Figure {
        name,
        unit,
        direction,
        group,
        driver: Some(driver),
        summary,
    }
}

use Direction::{HigherIsBetter as Higher, LowerIsBetter as Lower, Neither};
use Group::{Cpu, Errors, Latency, Setting, Throughput, Time, Volume};
use Unit::{Count, Milliseconds as Ms, PerSecond, Seconds};

// -- throughput
pub const TPS: Figure = shared(
    "tps",
    PerSecond,
    Higher,
    Throughput,
    "transactions (events) per second",
);
pub const QPS: Figure = shared("qps", PerSecond, Higher, Throughput, "queries per second");

// -- latency of one event (an OLTP transaction, a super-smack query)
pub const LATENCY_MEAN_MS: Figure = shared(
    "latency_mean_ms",
    Ms,
    Lower,
    Latency,
    "mean latency of an event",
);
pub const LATENCY_MIN_MS: Figure = shared(
    "latency_min_ms",
    Ms,
    Lower,
    Latency,
    "shortest latency of an event",
);
pub const LATENCY_P50_MS: Figure = shared(
    "latency_p50_ms",
    Ms,
    Lower,
    Latency,
    "median latency of an event",
);
pub const LATENCY_P95_MS: Figure = shared(
    "latency_p95_ms",
    Ms,
    Lower,
    Latency,
    "95th percentile latency of an event",
);
pub const LATENCY_P99_MS: Figure = shared(
    "latency_p99_ms",
    Ms,
    Lower,
    Latency,
    "99th percentile latency of an event",
);
pub const LATENCY_P999_MS: Figure = shared(
    "latency_p999_ms",
    Ms,
    Lower,
    Latency,
    "99.9th percentile latency of an event",
);
pub const LATENCY_MAX_MS: Figure = shared(
    "latency_max_ms",
    Ms,
    Lower,
    Latency,
    "longest latency of an event",
);

// -- time
pub const SECONDS: Figure = shared(
    "seconds",
    Seconds,
    Neither,
    Time,
    "wall-clock seconds of the measured window",
);
pub const TOTAL_S: Figure = shared(
    "total_s",
    Seconds,
    Lower,
    Time,
    "wall-clock seconds of a whole suite (all sql-bench tests)",
);

// -- errors
pub const ERRORS: Figure = shared(
    "errors",
    Count,
    Lower,
    Errors,
    "failed statements or wrong results",
);
pub const DEADLOCKS: Figure = shared(
    "deadlocks",
    Count,
    Lower,
    Errors,
    "deadlock errors (part of `errors`)",
);
pub const RETRIES: Figure = shared(
    "retries",
    Count,
    Lower,
    Errors,
    "events restarted after an error",
);
pub const RECONNECTS: Figure = shared(
    "reconnects",
    Count,
    Lower,
    Errors,
    "connections lost and made again",
);

// -- volume
pub const EVENTS: Figure = shared(
    "events",
    Count,
    Neither,
    Volume,
    "events (transactions) completed",
);
pub const QUERIES: Figure = shared("queries", Count, Neither, Volume, "queries sent");
pub const READS: Figure = shared("reads", Count, Neither, Volume, "read queries sent");
pub const WRITES: Figure = shared("writes", Count, Neither, Volume, "write queries sent");
pub const OTHER_QUERIES: Figure = shared(
    "other_queries",
    Count,
    Neither,
    Volume,
    "queries neither reads nor writes (BEGIN, COMMIT, …)",
);

// -- client CPU
pub const CLIENT_CPU_S: Figure = shared(
    "client_cpu_s",
    Seconds,
    Lower,
    Cpu,
    "CPU seconds (user + system) the client used in the measured window",
);
pub const CLIENT_CPU_MS_PER_1K_QUERIES: Figure = shared(
    "client_cpu_ms_per_1k_queries",
    Unit::MillisecondsPer1kQueries,
    Lower,
    Cpu,
    "client CPU per 1000 queries",
);

// -- server efficiency (read from the server's process or container around the measured
// window by the trial, not by a driver: every driver gets them where the runtime can read them)
pub const SERVER_CPU_S: Figure = shared(
    "server_cpu_s",
    Seconds,
    Lower,
    Cpu,
    "CPU seconds (user + system) the server used in the measured window",
);
pub const SERVER_CPU_US_PER_QUERY: Figure = shared(
    "server_cpu_us_per_query",
    Unit::MicrosecondsPerQuery,
    Lower,
    Cpu,
    "server CPU per query (the server's Questions in the same window)",
);
pub const INSTRUCTIONS_PER_QUERY: Figure = shared(
    "instructions_per_query",
    Unit::PerQuery,
    Lower,
    Cpu,
    "instructions the server's threads retired per query (hardware counters, where the machine has them)",
);
pub const CTX_SWITCHES_PER_QUERY: Figure = shared(
    "ctx_switches_per_query",
    Unit::PerQuery,
    Lower,
    Cpu,
    "server context switches (voluntary + involuntary, all threads) per query",
);

// -- the machine around the trial (read by the trial from `/proc/stat`, for every driver)
pub const OTHER_CPU_PCT: Figure = shared(
    "other_cpu_pct",
    Unit::Percent,
    Lower,
    Cpu,
    "share of the machine's CPU time (all CPUs, the measured window) busy with work other than the trial's server and client",
);

// -- rate-limited runs (arrivals on a schedule)
pub const RATE: Figure = shared(
    "rate",
    PerSecond,
    Neither,
    Setting,
    "target arrival rate of events",
);
pub const QUEUE_P99_MS: Figure = shared(
    "queue_p99_ms",
    Ms,
    Lower,
    Latency,
    "99th percentile of an arrival's wait before it starts",
);
pub const QUEUE_MAX_MS: Figure = shared(
    "queue_max_ms",
    Ms,
    Lower,
    Latency,
    "longest wait of an arrival before it starts",
);
pub const UNSTARTED: Figure = shared(
    "unstarted",
    Count,
    Lower,
    Errors,
    "arrivals that never started before the end",
);
pub const BACKLOG_MAX: Figure = shared(
    "backlog_max",
    Count,
    Lower,
    Volume,
    "most arrivals waiting at the end of an interval",
);

// -- super-smack's extras
pub const CLIENTS: Figure = extra(
    "smack",
    "clients",
    Count,
    Neither,
    Setting,
    "client connections",
);
pub const ROUNDS: Figure = extra(
    "smack",
    "rounds",
    Count,
    Neither,
    Setting,
    "rounds each client ran",
);
pub const ROWS: Figure = extra(
    "smack",
    "rows",
    Count,
    Neither,
    Volume,
    "rows the queries returned",
);
pub const MISSES: Figure = extra(
    "smack",
    "misses",
    Count,
    Neither,
    Volume,
    "queries that found no row",
);
pub const WORDS: Figure = extra(
    "smack",
    "words",
    Count,
    Neither,
    Setting,
    "words in the dictionary the queries draw from",
);
pub const CONNECT_MIN_MS: Figure = extra(
    "smack",
    "connect_min_ms",
    Ms,
    Lower,
    Latency,
    "shortest time a client took to connect",
);
pub const CONNECT_MEAN_MS: Figure = extra(
    "smack",
    "connect_mean_ms",
    Ms,
    Lower,
    Latency,
    "mean time a client took to connect",
);
pub const CONNECT_MAX_MS: Figure = extra(
    "smack",
    "connect_max_ms",
    Ms,
    Lower,
    Latency,
    "longest time a client took to connect",
);

/// Every named figure, throughput first, then latency, time, errors, volume, CPU, settings.
pub const ALL: &[&Figure] = &[
    &TPS,
    &QPS,
    &LATENCY_MEAN_MS,
    &LATENCY_MIN_MS,
    &LATENCY_P50_MS,
    &LATENCY_P95_MS,
    &LATENCY_P99_MS,
    &LATENCY_P999_MS,
    &LATENCY_MAX_MS,
    &QUEUE_P99_MS,
    &QUEUE_MAX_MS,
    &CONNECT_MIN_MS,
    &CONNECT_MEAN_MS,
    &CONNECT_MAX_MS,
    &SECONDS,
    &TOTAL_S,
    &ERRORS,
    &DEADLOCKS,
    &RETRIES,
    &RECONNECTS,
    &UNSTARTED,
    &EVENTS,
    &QUERIES,
    &READS,
    &WRITES,
    &OTHER_QUERIES,
    &ROWS,
    &MISSES,
    &BACKLOG_MAX,
    &CLIENT_CPU_S,
    &CLIENT_CPU_MS_PER_1K_QUERIES,
    &SERVER_CPU_S,
    &SERVER_CPU_US_PER_QUERY,
    &CTX_SWITCHES_PER_QUERY,
    &INSTRUCTIONS_PER_QUERY,
    &OTHER_CPU_PCT,
    &RATE,
    &CLIENTS,
    &ROUNDS,
    &WORDS,
];

/// The columns of a results table, in this order (throughput, latency, suite time,
/// errors, server efficiency); a table shows those some trial has.
pub const TABLE: &[&Figure] = &[
    &TPS,
    &QPS,
    &LATENCY_P95_MS,
    &LATENCY_P99_MS,
    &LATENCY_MEAN_MS,
    &LATENCY_MAX_MS,
    &TOTAL_S,
    &ERRORS,
    &SERVER_CPU_US_PER_QUERY,
    &CTX_SWITCHES_PER_QUERY,
    &INSTRUCTIONS_PER_QUERY,
];

/// Figures named after what was measured: `<stem><suffix>`, all alike in unit and
/// direction.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Family {
    /// Ends every member's name, e.g. `_s`.
    pub suffix: &'static str,
    /// What a member's stem is or starts with (then `_`): the things its driver measures
    /// under their own names, e.g. sql-bench's tests (`select`, `alter_table`). A plan's
    /// `metric "selct_s"` is then a typo, not a member.
    pub stems: &'static [&'static str],
    /// What every member is; its `name` is the pattern, e.g. `<test>_s`.
    pub figure: Figure,
}

impl Family {
    /// The member measuring `stem`: `insert` → `insert_s`.
    pub fn name(&self, stem: &str) -> String {
        format!("{stem}{}", self.suffix)
    }

    /// Whether `name` is a member: a stem of lower-case letters, digits and `_` that is one
    /// of [`Family::stems`] or starts with one and `_`, then the suffix.
    pub fn contains(&self, name: &str) -> bool {
        name.strip_suffix(self.suffix).is_some_and(|stem| {
            Self::is_snake(stem)
                && self.stems.iter().any(|s| {
                    stem.strip_prefix(s)
                        .is_some_and(|rest| rest.is_empty() || rest.starts_with('_'))
                })
        })
    }

    /// Whether `stem` may name a member: non-empty, lower-case letters, digits and `_`.
    pub fn is_snake(stem: &str) -> bool {
        !stem.is_empty()
            && stem
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
    }
}

/// sql-bench's per-test (`<test>_s`) and per-operation-group (`<test>_<group>_s`) times.
pub const OPERATION_SECONDS: Family = Family {
    suffix: "_s",
    // sql-bench's tests, as their figures spell them (cairn-workload's `SqlBenchTest`
    // checks that its tests are these)
    stems: &[
        "alter_table",
        "big_tables",
        "connect",
        "create",
        "insert",
        "select",
        "transactions",
        "wisconsin",
    ],
    figure: extra(
        "sqlbench",
        "<test>_s",
        Seconds,
        Lower,
        Time,
        "wall-clock seconds of one sql-bench test (`<test>_s`) or one operation group of a test (`<test>_<group>_s`)",
    ),
};

/// Every family; a name of [`ALL`] is never read as a member.
pub const FAMILIES: &[&Family] = &[&OPERATION_SECONDS];

/// Names drivers wrote before the vocabulary, and the shared names they mean now.
pub const ALIASES: &[(&str, &Figure)] = &[
    // native and external sysbench
    ("mean_ms", &LATENCY_MEAN_MS),
    ("p50_ms", &LATENCY_P50_MS),
    ("p95_ms", &LATENCY_P95_MS),
    ("p99_ms", &LATENCY_P99_MS),
    ("p999_ms", &LATENCY_P999_MS),
    ("max_ms", &LATENCY_MAX_MS),
    // super-smack
    ("avg_ms", &LATENCY_MEAN_MS),
    ("min_ms", &LATENCY_MIN_MS),
    ("connect_avg_ms", &CONNECT_MEAN_MS),
];

/// The names a plan may use for a figure, for a did-you-mean: every shared name, and each
/// family's member per stem (`select_s`; a stem's longer members, `select_<group>_s`, are
/// too many to list).
pub fn suggestions() -> Vec<String> {
    let shared = ALL.iter().map(|f| f.name.to_string());
    let members = FAMILIES
        .iter()
        .flat_map(|fam| fam.stems.iter().map(|s| fam.name(s)));
    shared.chain(members).collect()
}

/// The shared name of `name`: itself, or what an old name ([`ALIASES`]) means now.
pub fn canonical(name: &str) -> &str {
    ALIASES
        .iter()
        .find(|(old, _)| *old == name)
        .map_or(name, |(_, f)| f.name)
}

/// The figure `name` (a shared name, an old name, or a family member) is; `None` for a
/// name outside the vocabulary. A family member gives its family's figure.
pub fn lookup(name: &str) -> Option<&'static Figure> {
    let name = canonical(name);
    ALL.iter().copied().find(|f| f.name == name).or_else(|| {
        FAMILIES
            .iter()
            .find(|fam| fam.contains(name))
            .map(|fam| &fam.figure)
    })
}

/// `figures` under the shared names (old names renamed; a shared name already present
/// wins over an old one). Names outside the vocabulary are kept as they are.
pub fn normalize(figures: BTreeMap<String, f64>) -> BTreeMap<String, f64> {
    let mut out = BTreeMap::new();
    let mut renamed = Vec::new();
    for (name, v) in figures {
        let shared = canonical(&name);
        if shared == name {
            out.insert(name, v);
        } else {
            renamed.push((shared.to_string(), v));
        }
    }
    for (name, v) in renamed {
        out.entry(name).or_insert(v);
    }
    out
}

/// `v` as a number for a table cell, with the decimals its unit deserves.
pub fn format_number(fig: &Figure, v: f64) -> String {
    if !v.is_finite() {
        return v.to_string();
    }
    // small durations would print as 0.00: keep two significant digits instead
    let decimals = match fig.unit {
        Ms | Seconds if v != 0.0 && v.abs() < 0.01 => 4,
        u => u.decimals(),
    };
    format!("{v:.decimals$}")
}

/// `v` with its unit, for people: `1234.5 1/s`, `3.21 ms`; counts bare (`12`).
pub fn format_value(fig: &Figure, v: f64) -> String {
    let n = format_number(fig, v);
    match fig.unit.symbol() {
        "" => n,
        s => format!("{n} {s}"),
    }
}

/// A run's figures, keyed by shared names; serialises as a flat `{name: number}` map.
///
/// Drivers add only figures of the vocabulary ([`Figures::set`], [`Figures::set_member`]),
/// so nothing without a unit gets in; deserialising (a record's figures) normalises old
/// names through [`ALIASES`].
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(transparent)]
pub struct Figures(BTreeMap<String, f64>);

impl Figures {
    pub fn new() -> Self {
        Figures::default()
    }

    /// Old names renamed to shared ones ([`normalize`]).
    pub fn from_map(map: BTreeMap<String, f64>) -> Self {
        Figures(normalize(map))
    }

    pub fn set(&mut self, fig: &Figure, v: f64) {
        self.0.insert(fig.name.to_string(), v);
    }

    /// Sets `family`'s member measuring `stem` (`insert` → `insert_s`).
    ///
    /// # Panics
    /// If `stem` makes no member name (upper case, punctuation): the driver must snake-case
    /// it first.
    pub fn set_member(&mut self, family: &Family, stem: &str, v: f64) {
        let name = family.name(stem);
        assert!(
            family.contains(&name),
            "`{name}` is not a name of the family `{}`",
            family.figure.name
        );
        self.0.insert(name, v);
    }

    pub fn get(&self, fig: &Figure) -> Option<f64> {
        self.0.get(fig.name).copied()
    }

    /// The figure named `name` (shared or old name, or family member).
    pub fn get_named(&self, name: &str) -> Option<f64> {
        self.0.get(canonical(name)).copied()
    }

    pub fn contains(&self, fig: &Figure) -> bool {
        self.0.contains_key(fig.name)
    }

    pub fn contains_named(&self, name: &str) -> bool {
        self.0.contains_key(canonical(name))
    }

    pub fn remove(&mut self, fig: &Figure) -> Option<f64> {
        self.0.remove(fig.name)
    }

    /// Names and values in name order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, f64)> {
        self.0.iter().map(|(k, v)| (k.as_str(), *v))
    }

    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.0.keys().map(String::as_str)
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Names that [`lookup`] does not know (an old record's, or a driver's mistake).
    pub fn outside_vocabulary(&self) -> Vec<&str> {
        self.names().filter(|n| lookup(n).is_none()).collect()
    }

    pub fn as_map(&self) -> &BTreeMap<String, f64> {
        &self.0
    }

    pub fn into_map(self) -> BTreeMap<String, f64> {
        self.0
    }
}

impl std::ops::Index<&Figure> for Figures {
    type Output = f64;

    fn index(&self, fig: &Figure) -> &f64 {
        self.0
            .get(fig.name)
            .unwrap_or_else(|| panic!("no figure `{}` in {:?}", fig.name, self.0))
    }
}

impl std::ops::Index<&str> for Figures {
    type Output = f64;

    fn index(&self, name: &str) -> &f64 {
        self.0
            .get(canonical(name))
            .unwrap_or_else(|| panic!("no figure `{name}` in {:?}", self.0))
    }
}

impl<'de> Deserialize<'de> for Figures {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        BTreeMap::<String, f64>::deserialize(d).map(Figures::from_map)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    #[test]
    fn no_two_figures_share_a_name() {
        let mut seen = BTreeSet::new();
        for f in ALL {
            assert!(seen.insert(f.name), "`{}` twice", f.name);
        }
        for (old, _) in ALIASES {
            assert!(!seen.contains(old), "alias `{old}` is also a figure");
        }
        for fam in FAMILIES {
            assert!(!seen.contains(fam.figure.name));
        }
    }

    #[test]
    fn every_table_column_and_alias_target_is_in_the_vocabulary() {
        for f in TABLE.iter().chain(ALIASES.iter().map(|(_, f)| f)) {
            assert_eq!(lookup(f.name), Some(*f), "{}", f.name);
        }
    }

    #[test]
    fn names_are_snake_case_and_end_in_their_unit() {
        for f in ALL {
            assert!(
                f.name
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_'),
                "{}",
                f.name
            );
            match f.unit {
                Unit::Milliseconds => assert!(f.name.ends_with("_ms"), "{}", f.name),
                Unit::Seconds => {
                    assert!(f.name.ends_with("_s") || f.name == "seconds", "{}", f.name)
                }
                Unit::MicrosecondsPerQuery => {
                    assert!(f.name.ends_with("_us_per_query"), "{}", f.name)
                }
                Unit::PerQuery => assert!(f.name.ends_with("_per_query"), "{}", f.name),
                _ => {}
            }
        }
    }

    #[test]
    fn old_names_map_to_shared_ones() {
        assert_eq!(canonical("mean_ms"), "latency_mean_ms");
        assert_eq!(canonical("avg_ms"), "latency_mean_ms");
        assert_eq!(canonical("p95_ms"), "latency_p95_ms");
        assert_eq!(canonical("p999_ms"), "latency_p999_ms");
        assert_eq!(canonical("min_ms"), "latency_min_ms");
        assert_eq!(canonical("max_ms"), "latency_max_ms");
        assert_eq!(canonical("connect_avg_ms"), "connect_mean_ms");
        assert_eq!(canonical("tps"), "tps");
        assert_eq!(canonical("unheard_of"), "unheard_of");
        assert_eq!(lookup("p95_ms"), Some(&LATENCY_P95_MS));
        assert_eq!(lookup("avg_ms").unwrap().unit, Unit::Milliseconds);
    }

    #[test]
    fn families_take_members_but_not_shared_names() {
        assert_eq!(
            lookup("insert_connect_select_1_row_s"),
            Some(&OPERATION_SECONDS.figure)
        );
        assert_eq!(lookup("alter_table_s"), Some(&OPERATION_SECONDS.figure));
        assert_eq!(lookup("client_cpu_s"), Some(&CLIENT_CPU_S));
        assert_eq!(lookup("total_s"), Some(&TOTAL_S));
        assert_eq!(lookup("_s"), None);
        // a stem that is not one of sql-bench's tests is a typo, not a member
        assert_eq!(lookup("selct_s"), None);
        assert_eq!(lookup("selectx_s"), None);
        assert_eq!(lookup("select_s"), Some(&OPERATION_SECONDS.figure));
        assert_eq!(
            lookup("select_count_distinct_big_s"),
            Some(&OPERATION_SECONDS.figure)
        );
        assert!(suggestions().contains(&"select_s".to_string()));
        assert!(suggestions().contains(&"tps".to_string()));
        assert_eq!(lookup("Insert_s"), None);
        assert_eq!(lookup("p95"), None);
        assert_eq!(OPERATION_SECONDS.name("select"), "select_s");
    }

    #[test]
    fn normalize_renames_old_records_and_keeps_new_names() {
        let old: BTreeMap<String, f64> = [("tps", 10.0), ("p95_ms", 2.0), ("avg_ms", 1.0)]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect();
        let n = normalize(old);
        assert_eq!(
            n.keys().map(String::as_str).collect::<Vec<_>>(),
            ["latency_mean_ms", "latency_p95_ms", "tps"]
        );
        // both spellings: the shared one wins
        let both: BTreeMap<String, f64> = [("p95_ms", 2.0), ("latency_p95_ms", 3.0)]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect();
        assert_eq!(normalize(both)["latency_p95_ms"], 3.0);
    }

    #[test]
    fn figures_read_old_records_under_shared_names() {
        let f: Figures = serde_json::from_str(r#"{"mean_ms": 1.5, "qps": 7}"#).unwrap();
        assert_eq!(f.get(&LATENCY_MEAN_MS), Some(1.5));
        assert_eq!(f["mean_ms"], 1.5);
        assert_eq!(f[&QPS], 7.0);
        assert_eq!(
            serde_json::to_string(&f).unwrap(),
            r#"{"latency_mean_ms":1.5,"qps":7.0}"#
        );
        let mut g = Figures::new();
        g.set(&TPS, 2.0);
        g.set_member(&OPERATION_SECONDS, "insert", 3.0);
        assert_eq!(g.names().collect::<Vec<_>>(), ["insert_s", "tps"]);
        assert_eq!(g.remove(&TPS), Some(2.0));
        assert!(!g.contains(&TPS));
        let odd: Figures = serde_json::from_str(r#"{"zap": 1, "max_ms": 2}"#).unwrap();
        assert_eq!(odd.outside_vocabulary(), ["zap"]);
    }

    #[test]
    #[should_panic(expected = "not a name of the family")]
    fn family_members_must_be_snake_case() {
        Figures::new().set_member(&OPERATION_SECONDS, "connect+select", 1.0);
    }

    #[test]
    fn values_format_by_unit() {
        assert_eq!(format_value(&TPS, 1234.56), "1234.6 1/s");
        assert_eq!(format_value(&LATENCY_P95_MS, 3.2468), "3.25 ms");
        assert_eq!(format_value(&LATENCY_P95_MS, 0.00123), "0.0012 ms");
        assert_eq!(format_value(&ERRORS, 12.0), "12");
        assert_eq!(format_value(&TOTAL_S, 17.4), "17.40 s");
        assert_eq!(format_number(&QPS, 7.0), "7.0");
        assert_eq!(
            format_value(&CLIENT_CPU_MS_PER_1K_QUERIES, 12.345),
            "12.35 ms/1k queries"
        );
    }
}
