//! sysbench 1.0's text report of an OLTP `run`, parsed into a [`Report`]: nothing is checked against a spec or turned into figures here (that is [`super::sysbench`]).
//!
//! What the text holds, in order: the banner (`sysbench 1.0.20 (using …)`), the options
//! it ran with (`Number of threads: N`, `Target transaction rate: N/sec`, `Report
//! intermediate results every N second(s)`, `Report checkpoint(s) at A, B seconds`),
//! interval lines (`[ 2s ] thds: … tps: … qps: … (r/w/o: …) lat (ms,95%): … err/s: …
//! reconn/s: …`, followed by `[ 2s ] queue length: N, concurrency: M` with `--rate`), one
//! `[ Ns ] Checkpoint report:` summary per checkpoint, the final summary (`SQL statistics:`,
//! `General statistics:`, `Latency (ms):`, `Threads fairness:`), and with `--histogram=on`
//! the `Latency histogram` rows (`value |*** count`). Narration (`Threads started!`) is
//! skipped; `WARNING:` lines are kept.

use std::collections::BTreeMap;

use serde::Serialize;

/// What sysbench 1.0 printed, parsed.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Report {
    /// e.g. `1.0.20`
    pub version: String,
    /// `Number of threads: N`
    pub threads: Option<u32>,
    /// `Target transaction rate: N/sec`
    pub rate: Option<u64>,
    /// `Report intermediate results every N second(s)`
    pub report_interval_s: Option<u64>,
    /// `Report checkpoint(s) at A, B seconds`
    pub checkpoints_s: Vec<u64>,
    /// The `[ Ns ] thds: …` lines (with `queue length` of a rate-limited run).
    pub intervals: Vec<IntervalLine>,
    /// The summaries printed at the checkpoints (counters reset after each).
    pub checkpoints: Vec<Summary>,
    /// The final summary (since the last checkpoint).
    pub summary: Summary,
    /// `Latency histogram`: (bucket value in ms, count). Not serialised: the outcome keeps
    /// it as the measured phase's `histogram_us`, and the raw text beside it.
    #[serde(skip_serializing)]
    pub histogram_ms: Vec<(f64, u64)>,
    /// `WARNING:` lines.
    pub warnings: Vec<String>,
}

/// One `[ Ns ] thds: … tps: … qps: … (r/w/o: …) lat (ms,95%): … err/s: … reconn/s: …` line.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct IntervalLine {
    /// Seconds since the start, at the end of the interval.
    pub end_s: f64,
    pub threads: u32,
    pub tps: f64,
    pub qps: f64,
    pub reads_ps: f64,
    pub writes_ps: f64,
    pub other_ps: f64,
    pub latency_percentile: u32,
    pub latency_ms: f64,
    pub errors_ps: f64,
    pub reconnects_ps: f64,
    /// `[ Ns ] queue length: N, concurrency: M` (with `--rate`).
    pub queue_length: Option<u64>,
    pub concurrency: Option<u64>,
}

/// A final or checkpoint report: `SQL statistics`, `General statistics`, `Latency (ms)`,
/// `Threads fairness`.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Summary {
    pub read: u64,
    pub write: u64,
    pub other: u64,
    pub total: u64,
    pub transactions: u64,
    /// transactions per second, as printed
    pub tps: f64,
    pub queries: u64,
    pub qps: f64,
    pub ignored_errors: u64,
    pub reconnects: u64,
    /// `total time`: since the start of the run, also after a checkpoint.
    pub total_time_s: f64,
    pub events: u64,
    pub latency: ReportLatency,
    pub fairness: Option<Fairness>,
}

/// `Latency (ms):`
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ReportLatency {
    pub min_ms: f64,
    pub avg_ms: f64,
    pub max_ms: f64,
    /// `Nth percentile`
    pub percentile: Option<u32>,
    pub percentile_ms: Option<f64>,
    pub sum_ms: Option<f64>,
}

/// `Threads fairness:`
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Fairness {
    pub events_avg: f64,
    pub events_stddev: f64,
    pub execution_time_avg_s: f64,
    pub execution_time_stddev_s: f64,
}

fn num<T: std::str::FromStr>(s: &str, what: &str) -> Result<T, String> {
    s.trim()
        .parse()
        .map_err(|_| format!("`{what}` is not a number: {s:?}"))
}

/// An interval (`[ 2s ] thds: …`) or queue (`[ 2s ] queue length: …`) line.
fn is_interval_line(line: &str) -> bool {
    line.starts_with('[')
        && bracket(line)
            .is_ok_and(|(_, rest)| rest.starts_with("thds:") || rest.starts_with("queue length:"))
}

/// Parse sysbench 1.0's stdout of an OLTP `run` (see the module doc for what it holds).
/// An error says which line or field is not what sysbench 1.0 prints.
pub fn parse_report(stdout: &str) -> Result<Report, String> {
    let lines: Vec<&str> = stdout.lines().map(str::trim_end).collect();
    let mut r = Report::default();
    let banner = lines
        .iter()
        .find(|l| !l.trim().is_empty())
        .ok_or("sysbench printed nothing")?;
    r.version = banner
        .strip_prefix("sysbench ")
        .and_then(|v| v.split_whitespace().next())
        .ok_or_else(|| format!("the output does not start with `sysbench <version>`: {banner:?}"))?
        .to_string();
    // sysbench's reporting thread prints interval lines whenever they are due, also between
    // the lines of a checkpoint report: take them out first, so a report reads whole
    for line in lines.iter().filter(|l| is_interval_line(l)) {
        let (at, rest) = bracket(line)?;
        if rest.starts_with("thds:") {
            r.intervals.push(interval_line(at, rest)?);
        } else if let Some(q) = rest.strip_prefix("queue length:") {
            let last = r
                .intervals
                .last_mut()
                .filter(|iv| iv.end_s == at)
                .ok_or_else(|| format!("a queue line without its interval line: {line:?}"))?;
            let (len, conc) = q
                .split_once(", concurrency:")
                .ok_or_else(|| format!("unexpected queue line {line:?}"))?;
            last.queue_length = Some(num(len, "queue length")?);
            last.concurrency = Some(num(conc, "concurrency")?);
        }
    }
    let lines: Vec<&str> = lines.into_iter().filter(|l| !is_interval_line(l)).collect();
    let mut summary = None;
    let mut pending_checkpoint: Option<f64> = None;
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        i += 1;
        if let Some(v) = line.strip_prefix("Number of threads: ") {
            r.threads = Some(num(v, "Number of threads")?);
        } else if let Some(v) = line.strip_prefix("Target transaction rate: ") {
            r.rate = Some(num(v.trim_end_matches("/sec"), "Target transaction rate")?);
        } else if let Some(v) = line.strip_prefix("Report intermediate results every ") {
            r.report_interval_s = Some(num(
                v.trim_end_matches(" second(s)"),
                "Report intermediate results every",
            )?);
        } else if let Some(v) = line.strip_prefix("Report checkpoint(s) at ") {
            r.checkpoints_s = v
                .trim_end_matches(" seconds")
                .split(',')
                .map(|c| num(c, "Report checkpoint(s) at"))
                .collect::<Result<_, _>>()?;
        } else if line.starts_with('[') {
            // interval and queue lines were taken out above: only a checkpoint is left
            let (at, rest) = bracket(line)?;
            if rest != "Checkpoint report:" {
                return Err(format!("unexpected line {line:?}"));
            }
            pending_checkpoint = Some(at);
        } else if line == "SQL statistics:" {
            let end = lines[i..]
                .iter()
                .position(|l| {
                    l.starts_with('[')
                        || l.starts_with("Latency histogram")
                        || *l == "SQL statistics:"
                })
                .map_or(lines.len(), |p| i + p);
            let s = parse_summary(&lines[i..end])?;
            i = end;
            if pending_checkpoint.take().is_some() {
                r.checkpoints.push(s);
            } else if summary.replace(s).is_some() {
                return Err("two final reports".into());
            }
        } else if line.starts_with("Latency histogram") {
            // a header line, then `value |*** count` rows until a blank line
            while i < lines.len() && !lines[i].contains('|') && lines[i].contains("distribution") {
                i += 1;
            }
            while i < lines.len() && lines[i].contains('|') {
                let (value, rest) = lines[i].split_once('|').expect("has |");
                let count = rest
                    .split_whitespace()
                    .last()
                    .ok_or_else(|| format!("a histogram row without a count: {:?}", lines[i]))?;
                r.histogram_ms.push((
                    num(value, "histogram value")?,
                    num(count, "histogram count")?,
                ));
                i += 1;
            }
        } else if let Some(w) = line.strip_prefix("WARNING:") {
            r.warnings.push(w.trim().to_string());
        }
        // anything else is narration (`Initializing worker threads...`, `Threads started!`)
    }
    r.summary = summary.ok_or(
        "no final report (`SQL statistics:` … `Latency (ms):`): sysbench ended before its run did",
    )?;
    Ok(r)
}

/// `[ 12s ] rest` → (12.0, "rest").
fn bracket(line: &str) -> Result<(f64, &str), String> {
    let bad = || format!("unexpected line {line:?}");
    let (at, rest) = line
        .strip_prefix('[')
        .and_then(|l| l.split_once(']'))
        .ok_or_else(bad)?;
    let at = at.trim().strip_suffix('s').ok_or_else(bad)?;
    Ok((num(at, "interval time")?, rest.trim()))
}

/// The fields of an interval line after its `[ Ns ]`.
fn interval_line(end_s: f64, rest: &str) -> Result<IntervalLine, String> {
    let t: Vec<&str> = rest.split_whitespace().collect();
    let after = |label: &str| -> Result<&str, String> {
        t.iter()
            .position(|w| *w == label)
            .and_then(|p| t.get(p + 1).copied())
            .ok_or_else(|| format!("no `{label}` in the interval line {rest:?}"))
    };
    let rwo: Vec<&str> = after("(r/w/o:")?.trim_end_matches(')').split('/').collect();
    let [r, w, o] = rwo[..] else {
        return Err(format!("unexpected r/w/o in the interval line {rest:?}"));
    };
    // `lat (ms,95%): 1.23`
    let pct_at = t
        .iter()
        .position(|w| w.starts_with("(ms,") && w.ends_with("%):"))
        .ok_or_else(|| format!("no `lat (ms,N%):` in the interval line {rest:?}"))?;
    let pct = t[pct_at].trim_start_matches("(ms,").trim_end_matches("%):");
    let lat = t
        .get(pct_at + 1)
        .ok_or_else(|| format!("no latency in the interval line {rest:?}"))?;
    Ok(IntervalLine {
        end_s,
        threads: num(after("thds:")?, "thds")?,
        tps: num(after("tps:")?, "tps")?,
        qps: num(after("qps:")?, "qps")?,
        reads_ps: num(r, "r/s")?,
        writes_ps: num(w, "w/s")?,
        other_ps: num(o, "o/s")?,
        latency_percentile: num(pct, "latency percentile")?,
        latency_ms: num(lat, "latency")?,
        errors_ps: num(after("err/s:")?, "err/s")?,
        reconnects_ps: num(after("reconn/s:")?, "reconn/s")?,
        queue_length: None,
        concurrency: None,
    })
}

/// The lines of one report after `SQL statistics:`.
fn parse_summary(lines: &[&str]) -> Result<Summary, String> {
    let kv: BTreeMap<&str, &str> = lines
        .iter()
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim(), v.trim()))
        .filter(|(_, v)| !v.is_empty())
        .collect();
    let get = |k: &str| {
        kv.get(k)
            .copied()
            .ok_or_else(|| format!("the report has no `{k}:`"))
    };
    let count = |k: &str| -> Result<u64, String> { num(get(k)?, k) };
    // `10666  (3552.28 per sec.)`
    let with_rate = |k: &str| -> Result<(u64, f64), String> {
        let v = get(k)?;
        let (n, rate) = v
            .split_once('(')
            .ok_or_else(|| format!("`{k}` has no rate: {v:?}"))?;
        let rate = rate
            .trim_end_matches(')')
            .trim_end_matches("per sec.")
            .trim();
        Ok((num(n, k)?, num(rate, k)?))
    };
    let ms = |k: &str| -> Result<f64, String> { num(get(k)?, k) };
    let pair = |k: &str| -> Result<Option<(f64, f64)>, String> {
        let Some(v) = kv.get(k) else { return Ok(None) };
        let (a, b) = v
            .split_once('/')
            .ok_or_else(|| format!("`{k}` is not avg/stddev: {v:?}"))?;
        Ok(Some((num(a, k)?, num(b, k)?)))
    };
    let (transactions, tps) = with_rate("transactions")?;
    let (queries, qps) = with_rate("queries")?;
    let percentile = kv
        .iter()
        .find_map(|(k, v)| {
            let n = k.strip_suffix(" percentile")?;
            let n = n.trim_end_matches(|c: char| c.is_ascii_alphabetic());
            Some((n.parse::<u32>().ok()?, *v))
        })
        .map(|(n, v)| Ok::<_, String>((n, num::<f64>(v, "percentile")?)))
        .transpose()?;
    let total_time = get("total time")?;
    let fairness = match (
        pair("events (avg/stddev)")?,
        pair("execution time (avg/stddev)")?,
    ) {
        (Some(e), Some(t)) => Some(Fairness {
            events_avg: e.0,
            events_stddev: e.1,
            execution_time_avg_s: t.0,
            execution_time_stddev_s: t.1,
        }),
        _ => None,
    };
    Ok(Summary {
        read: count("read")?,
        write: count("write")?,
        other: count("other")?,
        total: count("total")?,
        transactions,
        tps,
        queries,
        qps,
        ignored_errors: with_rate("ignored errors")?.0,
        reconnects: with_rate("reconnects")?.0,
        total_time_s: num(total_time.trim_end_matches('s'), "total time")?,
        events: count("total number of events")?,
        latency: ReportLatency {
            min_ms: ms("min")?,
            avg_ms: ms("avg")?,
            max_ms: ms("max")?,
            percentile: percentile.map(|p| p.0),
            percentile_ms: percentile.map(|p| p.1),
            sum_ms: kv.get("sum").map(|v| num(v, "sum")).transpose()?,
        },
        fairness,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    // Real sysbench 1.0.20 output (captured by `tests/external_e2e.rs`; the runs are
    // described in `super::sysbench`'s tests).
    const READ_ONLY_WARMUP: &str = include_str!("testdata/read_only_warmup.txt");
    const READ_WRITE_RATE: &str = include_str!("testdata/read_write_rate.txt");
    const READ_ONLY_P99: &str = include_str!("testdata/read_only_p99.txt");
    const POINT_SELECT_EVENTS: &str = include_str!("testdata/point_select_events.txt");

    #[test]
    fn a_warmup_checkpoint_report_and_the_final_one() {
        let r = parse_report(READ_ONLY_WARMUP).unwrap();
        assert_eq!(r.version, "1.0.20");
        assert_eq!(
            (r.threads, r.rate, r.report_interval_s),
            (Some(2), None, Some(1))
        );
        assert_eq!(r.checkpoints_s, [1]);
        assert_eq!(r.checkpoints.len(), 1);
        let w = &r.checkpoints[0];
        assert_eq!((w.read, w.other, w.transactions), (43219, 6174, 3086));
        assert_eq!(w.total_time_s, 1.0002);
        assert_eq!(r.intervals.len(), 4);
        let iv = &r.intervals[1];
        assert_eq!((iv.end_s, iv.threads, iv.latency_percentile), (2.0, 2, 95));
        assert_eq!((iv.tps, iv.qps, iv.reads_ps), (3679.06, 58873.95, 51515.84));
        assert!(!r.histogram_ms.is_empty());
        let s = &r.summary;
        assert!(
            s.total_time_s > w.total_time_s,
            "since the start of the run"
        );
        assert_eq!(s.latency.percentile, Some(95));
        assert!(s.fairness.is_some());
    }

    #[test]
    fn interval_lines_inside_a_checkpoint_report_are_taken_out() {
        // the reporting thread may print `[ 1s ] thds: …` between the checkpoint report's
        // lines (seen on a loaded machine): the same report, the same figures
        let line = "[ 1s ] thds: 2 tps: 3078.36 qps: 49270.69 (r/w/o: 43111.98/0.00/6158.71) lat (ms,95%): 1.12 err/s: 0.00 reconn/s: 0.00\n";
        let interleaved = READ_ONLY_WARMUP.replacen(line, "", 1).replacen(
            "        write:                           0\n",
            &format!("        write:                           0\n{line}"),
            1,
        );
        assert_ne!(interleaved, READ_ONLY_WARMUP);
        let a = parse_report(READ_ONLY_WARMUP).unwrap();
        let b = parse_report(&interleaved).unwrap();
        assert_eq!(a.checkpoints, b.checkpoints);
        assert_eq!(a.intervals, b.intervals);
        assert_eq!(a.summary, b.summary);
    }

    #[test]
    fn queue_lines_join_their_interval() {
        let r = parse_report(READ_WRITE_RATE).unwrap();
        assert_eq!(r.rate, Some(30));
        assert_eq!(
            r.intervals
                .iter()
                .map(|i| (i.queue_length, i.concurrency))
                .collect::<Vec<_>>(),
            [(Some(0), Some(0)), (Some(0), Some(0)), (Some(0), Some(1))]
        );
        let orphan = "sysbench 1.0.20\n[ 1s ] queue length: 0, concurrency: 0\n";
        let e = parse_report(orphan).unwrap_err();
        assert!(e.contains("without its interval line"), "{e}");
    }

    #[test]
    fn another_percentile_and_no_intervals() {
        let l = parse_report(READ_ONLY_P99).unwrap().summary.latency;
        assert_eq!((l.percentile, l.percentile_ms), (Some(99), Some(0.86)));
        let r = parse_report(POINT_SELECT_EVENTS).unwrap();
        assert!(r.intervals.is_empty());
        assert_eq!(r.summary.events, 300);
    }

    #[test]
    fn what_is_not_a_report_says_why() {
        let e = parse_report("").unwrap_err();
        assert!(e.contains("printed nothing"), "{e}");
        let e = parse_report("hello\nworld\n").unwrap_err();
        assert!(
            e.contains("does not start with `sysbench <version>`"),
            "{e}"
        );
        let e = parse_report("sysbench 1.0.20\n[ 1s ] something else\n").unwrap_err();
        assert!(e.contains("unexpected line"), "{e}");
        let cut = &READ_ONLY_WARMUP[..READ_ONLY_WARMUP.find("Latency histogram").unwrap()];
        assert!(parse_report(cut).unwrap_err().contains("no final report"));
        let broken = READ_ONLY_WARMUP.replacen("total number of events", "events total", 2);
        let e = parse_report(&broken).unwrap_err();
        assert!(e.contains("no `total number of events:`"), "{e}");
    }
}
