//! super-smack's "Query Barrel Report" rebuilt from a run's measurements, for comparing with published numbers, and the run's driver-independent [`Outcome`].
//!
//! super-smack 1.x prints, after collecting its clients:
//!
//! ```text
//! Query Barrel Report for client smacker1
//! connect: max=4ms  min=1ms avg= 3ms from 10 clients
//! Query_type  num_queries  max_time  min_time  q_per_s
//! select_index  200000  0  0  20405.86
//! ```
//!
//! (the columns are separated by tabs)
//!
//! Times are whole milliseconds, truncated. Two quirks of its arithmetic are reproduced so
//! the table reads like a published one:
//! - `max_time`/`min_time` are *not* the extreme query times: `Query_type_report::update`
//!   resets both to the current time on every query after a client's first, so each client
//!   reports its last query's time, and the table shows the max and min of those. Sub-ms
//!   queries thus print `0 0`. The true extremes are in the figures (`latency_min_ms`,
//!   `latency_max_ms`).
//! - `q_per_s` is computed in single precision (`(float)num_queries / (float)seconds`).
//!
//! The connect line covers every client here (super-smack's own min/max skip the parent
//! process's connection; its average and count include it).

use cairn_defs::figures::{self as fig, Figures};
use serde::{Deserialize, Serialize};

use super::run::{SmackRun, CLIENT_NAME, QUERY_TYPE};
use crate::workload::Outcome;

/// The numbers of super-smack's report, as it computes them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BarrelReport {
    pub client: String,
    pub connect_max_ms: u64,
    pub connect_min_ms: u64,
    /// Integer mean of the whole-ms connect times.
    pub connect_avg_ms: u64,
    pub clients: u32,
    pub query_type: String,
    pub num_queries: u64,
    /// Max over clients of their last query's time (see the module doc).
    pub max_time: u64,
    /// Min over clients of their last query's time.
    pub min_time: u64,
    /// Wall time of the run (super-smack's clock), seconds.
    pub seconds: f64,
}

impl BarrelReport {
    /// The report of `run`.
    pub fn of(run: &SmackRun) -> Self {
        let connect: Vec<u64> = run
            .per_client
            .iter()
            .map(|c| c.connect_ms.max(0.0) as u64)
            .collect();
        let last = run.per_client.iter().map(|c| c.last_query_ms);
        BarrelReport {
            client: CLIENT_NAME.into(),
            connect_max_ms: connect.iter().copied().max().unwrap_or(0),
            connect_min_ms: connect.iter().copied().min().unwrap_or(0),
            connect_avg_ms: connect.iter().sum::<u64>() / (connect.len().max(1) as u64),
            clients: run.per_client.len() as u32,
            query_type: QUERY_TYPE.into(),
            num_queries: run.queries(),
            max_time: last.clone().max().unwrap_or(0),
            min_time: last.min().unwrap_or(0),
            seconds: run.metrics.measured.seconds,
        }
    }

    /// `q_per_s` as super-smack prints it (`n/a` for a zero-length run).
    pub fn q_per_s(&self) -> String {
        if self.seconds <= 0.0 {
            "n/a".into()
        } else {
            format!("{:.2}", self.num_queries as f32 / self.seconds as f32)
        }
    }

    /// The text super-smack prints (its line breaks and tabs; `connect:` keeps the trailing
    /// space super-smack leaves after `clients`).
    pub fn render(&self) -> String {
        format!(
            "Query Barrel Report for client {}\n\
             connect: max={}ms  min={}ms avg= {}ms from {} clients \n\
             Query_type\tnum_queries\tmax_time\tmin_time\tq_per_s\n\
             {}\t{}\t{}\t{}\t{}\n",
            self.client,
            self.connect_max_ms,
            self.connect_min_ms,
            self.connect_avg_ms,
            self.clients,
            self.query_type,
            self.num_queries,
            self.max_time,
            self.min_time,
            self.q_per_s()
        )
    }
}

impl SmackRun {
    /// super-smack's text report of this run.
    pub fn report(&self) -> String {
        BarrelReport::of(self).render()
    }
}

/// The figures of a `select_index` run under the shared names: `qps`, `queries`, query
/// times (true min, mean, percentiles, max), `errors`, client CPU; and super-smack's extras:
/// connect times, clients, rounds, rows, misses, words. `detail` holds the whole run, the
/// barrel report's numbers and its text (`report`).
pub fn smack_outcome(run: &SmackRun) -> Outcome {
    let m = &run.metrics.measured;
    let l = &m.latency;
    let (cmin, cavg, cmax) = run.connect_ms();
    let errors = m.totals.errors.total();
    let mut f = Figures::new();
    for (figure, v) in [
        (&fig::QPS, run.qps()),
        (&fig::QUERIES, run.queries() as f64),
        (&fig::SECONDS, m.seconds),
        (&fig::CLIENTS, run.clients as f64),
        (&fig::ROUNDS, run.rounds as f64),
        (&fig::LATENCY_MIN_MS, l.min_ms),
        (&fig::LATENCY_MEAN_MS, l.mean_ms),
        (&fig::LATENCY_P50_MS, l.p50_ms),
        (&fig::LATENCY_P95_MS, l.p95_ms),
        (&fig::LATENCY_P99_MS, l.p99_ms),
        (&fig::LATENCY_P999_MS, l.p999_ms),
        (&fig::LATENCY_MAX_MS, l.max_ms),
        (&fig::ERRORS, errors as f64),
        (&fig::CONNECT_MIN_MS, cmin),
        (&fig::CONNECT_MEAN_MS, cavg),
        (&fig::CONNECT_MAX_MS, cmax),
        (&fig::ROWS, run.rows() as f64),
        (&fig::MISSES, run.misses() as f64),
        (&fig::WORDS, run.words as f64),
        (&fig::CLIENT_CPU_S, m.client_cpu.total_s()),
    ] {
        f.set(figure, v);
    }
    let barrel = BarrelReport::of(run);
    let detail = serde_json::json!({
        "run": run,
        "barrel": barrel,
        "report": barrel.render(),
    });
    Outcome {
        headline: format!(
            "{:.1} q/s ({QUERY_TYPE}, {} clients × {} rounds), avg {:.2} ms, p95 {:.2} ms, max {:.1} ms, {errors} errors",
            run.qps(),
            run.clients,
            run.rounds,
            l.mean_ms,
            l.p95_ms,
            l.max_ms,
        ),
        figures: f,
        detail,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::Metrics;
    use crate::smack::{ClientFigures, DictionaryOrder};

    fn seed_report() -> BarrelReport {
        BarrelReport {
            client: "smacker1".into(),
            connect_max_ms: 4,
            connect_min_ms: 1,
            connect_avg_ms: 3,
            clients: 10,
            query_type: "select_index".into(),
            num_queries: 200_000,
            max_time: 0,
            min_time: 0,
            seconds: 200_000.0 / 20_405.86,
        }
    }

    #[test]
    fn renders_the_published_table() {
        let text = seed_report().render();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "Query Barrel Report for client smacker1");
        assert_eq!(
            lines[1],
            "connect: max=4ms  min=1ms avg= 3ms from 10 clients "
        );
        assert_eq!(
            lines[2],
            "Query_type\tnum_queries\tmax_time\tmin_time\tq_per_s"
        );
        assert_eq!(lines[3], "select_index\t200000\t0\t0\t20405.86");
        assert_eq!(lines.len(), 4);
        let zero = BarrelReport {
            seconds: 0.0,
            ..seed_report()
        };
        assert!(zero.render().ends_with("\tn/a\n"));
    }

    fn run_with(per_client: Vec<ClientFigures>) -> SmackRun {
        let mut metrics = Metrics::default();
        metrics.measured.seconds = 2.0;
        metrics.measured.totals.events = per_client.iter().map(|c| c.queries).sum();
        metrics.qps = metrics.measured.totals.events as f64 / 2.0;
        SmackRun {
            clients: per_client.len() as u32,
            rounds: 100,
            queries_per_round: 2,
            dictionary: DictionaryOrder::Rand,
            words: 10,
            per_client,
            metrics,
        }
    }

    #[test]
    fn barrel_numbers_follow_super_smack_s_arithmetic() {
        let c = |connect_ms, last_query_ms| ClientFigures {
            connect_ms,
            queries: 200,
            rows: 200,
            misses: 0,
            last_query_ms,
        };
        let run = run_with(vec![c(1.9, 0), c(4.2, 3), c(2.7, 1)]);
        let b = BarrelReport::of(&run);
        // whole ms, truncated; the average of the truncated values, truncated
        assert_eq!(
            (b.connect_max_ms, b.connect_min_ms, b.connect_avg_ms),
            (4, 1, 2)
        );
        // the last queries' times, not the extremes
        assert_eq!((b.max_time, b.min_time), (3, 0));
        assert_eq!(b.num_queries, 600);
        assert_eq!(b.q_per_s(), "300.00");
        assert!(run.report().contains("select_index\t600\t3\t0\t300.00\n"));

        let o = smack_outcome(&run);
        assert_eq!(o.figures[&fig::QUERIES], 600.0);
        assert_eq!(o.figures[&fig::QPS], 300.0);
        assert_eq!(o.figures[&fig::ERRORS], 0.0);
        assert!((o.figures[&fig::CONNECT_MEAN_MS] - 8.8 / 3.0).abs() < 1e-9);
        assert_eq!(o.figures[&fig::CONNECT_MAX_MS], 4.2);
        assert_eq!(o.figures[&fig::ROWS], 600.0);
        assert_eq!(o.figures.outside_vocabulary(), Vec::<&str>::new());
        for f in [
            &fig::LATENCY_MIN_MS,
            &fig::LATENCY_MEAN_MS,
            &fig::LATENCY_P95_MS,
            &fig::LATENCY_MAX_MS,
        ] {
            assert!(o.figures.contains(f), "{f}");
        }
        assert!(
            o.headline
                .starts_with("300.0 q/s (select_index, 3 clients × 100 rounds), avg "),
            "{}",
            o.headline
        );
        assert_eq!(
            o.detail["report"].as_str().unwrap(),
            BarrelReport::of(&run).render()
        );
        assert_eq!(o.detail["barrel"]["num_queries"], 600);
    }
}
