//! The `select_index` query barrel of `select-key.smack`, driven natively: N clients × R rounds of `select * from http_auth where username = '$word'`, each client on its own thread and connection.
//!
//! As super-smack 1.x does:
//! - each client connects on its own (connect time measured per client), then runs its
//!   rounds at once — no barrier between clients;
//! - a round fires the barrel: `queries_per_round` (the smack file's `query_barrel "2
//!   select_by_username"`) text queries, each with a fresh `$word` from the dictionary,
//!   reading the whole result;
//! - `rand` dictionaries pick a uniform word per query (each client its own generator);
//!   `seq` dictionaries walk the words in order, every client from the first word (super-smack
//!   forks the clients after loading the dictionary, so each copy starts at the beginning);
//! - the clock runs from before the first connection until every client has finished, so
//!   `q_per_s` = queries / that wall time, connections included;
//! - any failed query or connection ends the run (super-smack aborts on the first error); it is
//!   reported with its cause and never retried.
//!
//! Each query is one event of the crate's [`Recorder`]: HDR latency histogram, per-interval
//! series and client CPU come from [`crate::metrics`].

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use mysql::prelude::Queryable;
use serde::{Deserialize, Serialize};

use super::dataset::{SmackDataset, TABLE};
use crate::cpu::CpuTime;
use crate::metrics::{merge, ErrorKind, Metrics, QueryCounts, Recorder};
use crate::oltp::{classify, StopCheck};
use crate::rand::Rng;
use crate::{Error, Target};

/// The query type super-smack groups the statistics under (`type "select_index"`).
pub const QUERY_TYPE: &str = "select_index";
/// The client's name in `select-key.smack` (it appears in the report's first line).
pub const CLIENT_NAME: &str = "smacker1";

/// How `$word` is drawn (the dictionary's `type`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DictionaryOrder {
    /// `type "rand"`: a uniformly random word per query (select-key.smack's choice).
    #[default]
    Rand,
    /// `type "seq"`: the words in order, wrapping around.
    Seq,
}

impl DictionaryOrder {
    pub fn name(self) -> &'static str {
        match self {
            DictionaryOrder::Rand => "rand",
            DictionaryOrder::Seq => "seq",
        }
    }
}

/// A `select_index` run: `super-smack select-key.smack <clients> <rounds>`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SmackSpec {
    /// The table and dictionary the queries use.
    pub dataset: SmackDataset,
    /// First command-line argument: client processes (here threads), one connection each.
    pub clients: u32,
    /// Second command-line argument: rounds per client.
    pub rounds: u64,
    /// Queries per round (`query_barrel "2 select_by_username"`).
    pub queries_per_round: u32,
    pub dictionary: DictionaryOrder,
    /// Width of the series' intervals.
    pub report_interval: Duration,
    /// Seed of the clients' word choices (client `i` uses stream `i + 1`).
    pub seed: u64,
}

impl SmackSpec {
    /// `super-smack select-key.smack clients rounds` against `dataset`.
    pub fn new(dataset: SmackDataset, clients: u32, rounds: u64) -> Self {
        SmackSpec {
            dataset,
            clients,
            rounds,
            queries_per_round: 2,
            dictionary: DictionaryOrder::Rand,
            report_interval: Duration::from_secs(1),
            seed: 0,
        }
    }

    /// Queries the run sends: clients × rounds × queries per round.
    pub fn total_queries(&self) -> u64 {
        self.clients as u64 * self.rounds * self.queries_per_round as u64
    }

    pub(crate) fn validate(&self) -> Result<(), Error> {
        self.dataset.validate()?;
        if self.clients == 0 || self.queries_per_round == 0 {
            return Err(Error::Invalid(
                "smack clients and queries-per-round must be at least 1".into(),
            ));
        }
        if self.report_interval.is_zero() {
            return Err(Error::Invalid("report_interval must be positive".into()));
        }
        Ok(())
    }
}

/// The query text with `$word` substituted (super-smack escapes `'`, `"` and `\`).
pub fn select_sql(word: &str) -> String {
    let mut s = String::with_capacity(60 + word.len());
    s.push_str("select * from ");
    s.push_str(TABLE);
    s.push_str(" where username = '");
    for c in word.chars() {
        if matches!(c, '\'' | '"' | '\\') {
            s.push('\\');
        }
        s.push(c);
    }
    s.push('\'');
    s
}

/// One client's figures besides its [`Recorder`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct ClientFigures {
    /// Time to connect, milliseconds.
    pub connect_ms: f64,
    pub queries: u64,
    /// Rows the queries returned.
    pub rows: u64,
    /// Queries that found no row (a word that is not a key: never, with a loaded dataset).
    pub misses: u64,
    /// The last query's time in whole milliseconds, as super-smack keeps it (see
    /// [`crate::smack::BarrelReport`]).
    pub last_query_ms: u64,
}

/// What a `select_index` run measured.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SmackRun {
    pub clients: u32,
    pub rounds: u64,
    pub queries_per_round: u32,
    pub dictionary: DictionaryOrder,
    /// Dictionary size.
    pub words: u64,
    /// Per client, in client order.
    pub per_client: Vec<ClientFigures>,
    /// Series, latency histogram and totals; one event per query; no warmup; the measured
    /// window is super-smack's clock (first connection to last client done).
    pub metrics: Metrics,
}

impl SmackRun {
    /// Queries sent (all succeeded: a failure ends the run).
    pub fn queries(&self) -> u64 {
        self.metrics.measured.totals.events
    }

    /// Queries per second over super-smack's clock.
    pub fn qps(&self) -> f64 {
        self.metrics.qps
    }

    pub fn rows(&self) -> u64 {
        self.per_client.iter().map(|c| c.rows).sum()
    }

    pub fn misses(&self) -> u64 {
        self.per_client.iter().map(|c| c.misses).sum()
    }

    /// (min, avg, max) connect time over the clients, milliseconds.
    pub fn connect_ms(&self) -> (f64, f64, f64) {
        let c: Vec<f64> = self.per_client.iter().map(|c| c.connect_ms).collect();
        if c.is_empty() {
            return (0.0, 0.0, 0.0);
        }
        let min = c.iter().copied().fold(f64::INFINITY, f64::min);
        let max = c.iter().copied().fold(0.0, f64::max);
        (min, c.iter().sum::<f64>() / c.len() as f64, max)
    }
}

struct Shared<'a> {
    spec: &'a SmackSpec,
    target: &'a Target,
    words: &'a [String],
    cancel: StopCheck<'a>,
    start: Instant,
    /// Set when a client failed or the caller asked to stop: the others end their rounds.
    stop: AtomicBool,
    failure: Mutex<Option<Error>>,
}

impl Shared<'_> {
    fn fail(&self, client: u32, cause: Error) {
        self.stop.store(true, Ordering::SeqCst);
        let mut f = self.failure.lock().unwrap();
        if f.is_none() {
            *f = Some(Error::Worker {
                thread: client,
                cause: Box::new(cause),
            });
        }
    }
}

/// Runs `spec` against `target` (whose `http_auth` table must be loaded from
/// `spec.dataset`) and returns what it measured, or the first client's error.
pub fn run_select_index(target: &Target, spec: &SmackSpec) -> Result<SmackRun, Error> {
    run_select_index_until(target, spec, &|| false)
}

/// As [`run_select_index`], ending early with [`Error::Stopped`] once `cancel()` is true
/// (asked between rounds).
pub fn run_select_index_until(
    target: &Target,
    spec: &SmackSpec,
    cancel: StopCheck<'_>,
) -> Result<SmackRun, Error> {
    spec.validate()?;
    // before the clock: super-smack loads its dictionary before forking the clients
    let words = spec.dataset.dictionary();
    if words.is_empty() {
        return Err(Error::Invalid("the smack dictionary is empty".into()));
    }
    let shared = Shared {
        spec,
        target,
        words: &words,
        cancel,
        start: Instant::now(),
        stop: AtomicBool::new(false),
        failure: Mutex::new(None),
    };
    // a client that cannot start or panics stops the others and fails the run
    let results = crate::threads::run_threads(
        spec.clients,
        "smack",
        |i| client(&shared, i),
        || shared.stop.store(true, Ordering::SeqCst),
    );
    let end = Instant::now();
    if let Some(e) = shared
        .failure
        .into_inner()
        .unwrap_or_else(|p| p.into_inner())
    {
        return Err(e);
    }
    let results = results?;
    if cancel() {
        return Err(Error::Stopped);
    }
    let (recorders, per_client): (Vec<_>, Vec<_>) = results.into_iter().flatten().unzip();
    let start = shared.start;
    Ok(SmackRun {
        clients: spec.clients,
        rounds: spec.rounds,
        queries_per_round: spec.queries_per_round,
        dictionary: spec.dictionary,
        words: words.len() as u64,
        per_client,
        metrics: merge(
            QUERY_TYPE,
            spec.clients,
            spec.report_interval,
            start,
            start,
            end,
            recorders,
        ),
    })
}

/// One client: connect, fire the barrel `rounds` times. `None` if it failed or was stopped.
fn client(sh: &Shared, i: u32) -> Option<(Recorder, ClientFigures)> {
    let spec = sh.spec;
    let t = Instant::now();
    let mut conn = match sh.target.connect_with_cache(0) {
        Ok(c) => c,
        Err(e) => {
            sh.fail(i, e);
            return None;
        }
    };
    let mut fig = ClientFigures {
        connect_ms: t.elapsed().as_secs_f64() * 1e3,
        ..ClientFigures::default()
    };
    let cpu_mark = CpuTime::thread();
    let mut rec = Recorder::new(sh.start, sh.start, spec.report_interval);
    let mut rng = Rng::for_stream(spec.seed, i as u64 + 1);
    let n = sh.words.len();
    let last = (n - 1) as u32;
    let mut next_seq = 0usize;
    let one = QueryCounts {
        read: 1,
        ..QueryCounts::default()
    };
    for _ in 0..spec.rounds {
        if sh.stop.load(Ordering::Relaxed) {
            return None;
        }
        if (sh.cancel)() {
            sh.stop.store(true, Ordering::SeqCst);
            return None;
        }
        for _ in 0..spec.queries_per_round {
            let w = match spec.dictionary {
                DictionaryOrder::Rand => rng.uniform(0, last) as usize,
                DictionaryOrder::Seq => {
                    let w = next_seq;
                    next_seq = (next_seq + 1) % n;
                    w
                }
            };
            let sql = select_sql(&sh.words[w]);
            let started = Instant::now();
            match fetch_count(&mut conn, &sql) {
                Ok(rows) => {
                    let done = Instant::now();
                    rec.event(started, done, &one);
                    fig.queries += 1;
                    fig.rows += rows;
                    fig.misses += u64::from(rows == 0);
                    fig.last_query_ms = done.duration_since(started).as_millis() as u64;
                }
                Err(e) => {
                    sh.fail(i, query_error(&sql, e));
                    return None;
                }
            }
        }
    }
    rec.add_cpu(true, CpuTime::thread().since(&cpu_mark));
    // disconnect inside the clock, as super-smack's children do before exiting
    drop(conn);
    Some((rec, fig))
}

/// Sends `sql` and reads its whole result (super-smack's `lose_result`); the row count.
fn fetch_count(conn: &mut mysql::Conn, sql: &str) -> mysql::Result<u64> {
    let mut rows = 0;
    for row in conn.query_iter(sql)? {
        row?;
        rows += 1;
    }
    Ok(rows)
}

/// The run's error for a failed query, saying whether the connection was lost.
fn query_error(sql: &str, e: mysql::Error) -> Error {
    let op = match classify(&e) {
        Some(ErrorKind::LostConnection) => {
            format!("{QUERY_TYPE}: lost the connection to the server during `{sql}`")
        }
        _ => format!("{QUERY_TYPE}: `{sql}` failed"),
    };
    Error::sql(op, e)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn query_text_is_select_key_smack_s() {
        assert_eq!(
            select_sql("abcdefghijkl42"),
            "select * from http_auth where username = 'abcdefghijkl42'"
        );
        assert_eq!(
            select_sql(r#"a'b"c\d"#),
            r#"select * from http_auth where username = 'a\'b\"c\\d'"#
        );
    }

    #[test]
    fn defaults_are_select_key_smack_s() {
        let s = SmackSpec::new(SmackDataset::default(), 10, 1000);
        assert_eq!(s.queries_per_round, 2);
        assert_eq!(s.dictionary, DictionaryOrder::Rand);
        assert_eq!(s.total_queries(), 20_000);
        let mut bad = s.clone();
        bad.clients = 0;
        assert!(bad.validate().is_err());
    }

    #[test]
    fn a_server_that_is_not_there_fails_the_run_with_the_cause() {
        // nothing listens on port 1 of the loopback: connecting fails at once
        let target = Target::tcp("127.0.0.1", 1, "nobody");
        let spec = SmackSpec::new(SmackDataset::new(10), 3, 5);
        let e = run_select_index(&target, &spec).unwrap_err().to_string();
        assert!(e.contains("cannot connect"), "{e}");
    }
}
