//! End-to-end: a tiny real study (two MariaDB servers in Docker, one thread count, three
//! passes of a second) with a table, a claim and a report — `cairn run` ends with the table
//! and the verdict, `cairn report` writes `results/<study>/report.md`, `data.csv` (the
//! same bytes as `cairn results --csv`) with its dictionary, throughput over time and
//! `data.json` (report.md pinned by a snapshot with numbers, keys and noise redacted), and
//! re-measuring one trial re-runs its analysis, claim and report and nothing else.
//! `report.html` carries its plot inline, and headless Chromium (installed by
//! `scripts/setup.sh`; never skipped) renders it: a screenshot, decoded, shows the chart's
//! series colours.
//!
//! Three passes per side keep the verdicts fixed (a rank test cannot decide 3 vs 3, so
//! every comparison and the claim are inconclusive whatever the machine measures): the
//! snapshot pins the report's layout and reasoning, not this machine's speed.

use std::path::Path;
use std::time::Duration;

use crate::support::{assert_snapshot, engine_shared, normalize, set, Sandbox};

/// A hang guard for invocations that start servers (never a timing).
const GUARD: Duration = Duration::from_secs(900);

fn plan() -> String {
    let images = Path::new(env!("CARGO_MANIFEST_DIR")).join("images/mariadb.kdl");
    format!(
        r#"study "e2e-report" {{ title "System malloc vs jemalloc (e2e)" }}
import "{}"
server "system" {{
    image "mariadb-bookworm"
    option innodb_buffer_pool_size="64M" max_connections=50 skip-name-resolve=#true
    connect "tcp"
}}
server "jemalloc" {{ extends "system"; allocator "jemalloc" }}
dataset "sb" {{ sysbench tables=1 rows=500 }}
workload "ps" {{
    sysbench "oltp_point_select"
    threads 2
    duration "1s"
}}
trials "r" {{ servers "system" "jemalloc"; dataset "sb"; workload "ps"; passes 3 }}
analysis "tps" {{ table metric="tps" rows="server" columns="threads" baseline="system" }}
claim "jemalloc is faster by at least 5%" {{
    metric "tps"
    expect "jemalloc > system" by="5%"
}}
analysis "lat" {{ plot metric="latency_p95_ms" x="threads" style="bar" }}
report "summary" {{ analyses "tps" "lat" }}
"#,
        images.display()
    )
}

/// `report.md` with what varies between runs and machines redacted: numbers, keys and
/// digests, the machine (in the headline and the provenance), and the data quality (which
/// cells happened to be noisy).
fn redact(text: &str) -> String {
    let mut out = Vec::new();
    let mut in_noisy = false;
    for line in text.lines() {
        if line.starts_with("## ") {
            in_noisy = line == "## Data quality";
            out.push(line.to_string());
            if in_noisy {
                out.push(String::new());
                out.push("[which cells were noisy]".into());
                out.push(String::new());
            }
            continue;
        }
        // the headline names the machine it rests on
        let line = match line.split_once(" on one machine (") {
            Some((head, _)) => format!("{head} on one machine ([MACHINE])."),
            None => line.to_string(),
        };
        if in_noisy || line.starts_with("⚠ noisy") {
            continue;
        }
        if line.starts_with("- machine: ") {
            out.push("- machine: [MACHINE]".into());
            continue;
        }
        out.push(redact_numbers(&line.replace(" ⚠", "")));
    }
    // which way and how far the noise tipped the ratio, and whether the passes needed are
    // countable, are this machine's: the sentences stay
    for line in &mut out {
        *line = line
            .replace("(+N%)", "(±N%)")
            .replace("(-N%)", "(±N%)")
            .replace(
                "more than N passes per variant would be needed to resolve",
                "about N passes per variant would resolve",
            )
            .replace(
                "more than N passes per variant would be needed to decide it",
                "about N passes per variant would decide it",
            );
    }
    // a dropped line may leave two blank lines in a row
    out.dedup_by(|a, b| a.is_empty() && b.is_empty());
    out.join("\n")
}

/// Hex runs of 12 or more (keys, digests) → `HEX`; other digit runs (with `.`) → `N`.
fn redact_numbers(line: &str) -> String {
    let mut out = String::new();
    let chars: Vec<char> = line.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let hex_len = chars[i..]
            .iter()
            .take_while(|c| c.is_ascii_hexdigit())
            .count();
        let starts_word = i == 0 || !chars[i - 1].is_ascii_alphanumeric();
        if starts_word && hex_len >= 12 {
            out.push_str("HEX");
            i += hex_len;
        } else if chars[i].is_ascii_digit() {
            let len = chars[i..]
                .iter()
                .take_while(|c| c.is_ascii_digit() || **c == '.')
                .count();
            out.push('N');
            i += len;
        } else {
            out.push(chars[i]);
            i += 1;
        }
    }
    out
}

#[test]
fn a_study_ends_with_its_table_and_verdict_and_reports_from_records() {
    let _engine = engine_shared();
    cairn_testkit::mariadb_image();
    let sb = Sandbox::new();
    sb.write("plan.kdl", &plan());

    // the run ends with the main table and the claim's verdict, and writes the report
    let run = sb.cairn(["run", "plan.kdl"]).guard(GUARD).run();
    run.expect_code(0);
    for part in [
        "### tps: `tps` (1/s), median of the passes",
        "| system |",
        "| jemalloc |",
        "**inconclusive**",
        "### Claims",
        "\"jemalloc is faster by at least 5%\"",
    ] {
        assert!(run.stdout.contains(part), "{part:?} in\n{}", run.stdout);
    }
    let dir = sb.results().join("e2e-report");
    assert!(dir.join("report.md").exists());

    // `cairn report`: from the records only; nothing measured, nothing re-rendered
    let rep = sb
        .cairn(["--json", "report", "plan.kdl"])
        .guard(GUARD)
        .run();
    rep.expect_code(0);
    let ev = rep.events();
    assert!(ev.finished().is_empty(), "{:?}", ev.finished());
    let md = std::fs::read_to_string(dir.join("report.md")).unwrap();
    assert!(md.contains("- plan: `plan.kdl`, blake3 "), "{md}");
    // Data quality says how much other work the machine did beside the trials (quiet or
    // not, which this run cannot choose)
    assert!(
        md.contains("- the machine was otherwise quiet: ")
            || md.contains("- ⚠ other work on the machine: "),
        "{md}"
    );
    assert!(md.contains("(`other_cpu_pct`"), "{md}");
    assert_snapshot("report_md", &redact(&normalize(&md, Some(sb.path()))));
    // its headline (the findings under the title and what they rest on) states only numbers
    // data.json holds
    let data_json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("data.json")).unwrap()).unwrap();
    let headline = cairn_report::markdown::headline(&md);
    assert!(headline.starts_with("- Claim \""), "{headline}");
    let unbacked = cairn_report::numbers::unbacked(headline, &data_json);
    assert!(
        unbacked.is_empty(),
        "{unbacked:?} not in data.json: {headline}"
    );

    // data.csv: one row per trial with its parameters and figures
    let csv = std::fs::read_to_string(dir.join("data.csv")).unwrap();
    let mut lines = csv.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    for col in [
        "address",
        "server",
        "pass",
        "key",
        "threads",
        "tps",
        "other_cpu_pct",
    ] {
        assert!(header.contains(&col), "{col} in {header:?}");
    }
    assert_eq!(lines.count(), 6);
    for col in [
        "study",
        "block",
        "run_order",
        "started",
        "server_version",
        "allocator",
    ] {
        assert!(header.contains(&col), "{col} in {header:?}");
    }
    // `cairn results --csv` writes the same layout from the same records: the same bytes
    let results = sb.cairn(["results", "plan.kdl", "--csv"]).run();
    results.expect_code(0);
    assert_eq!(
        results.stdout, csv,
        "`cairn results --csv` differs from data.csv"
    );
    // the data dictionary beside it names every column
    let dictionary = std::fs::read_to_string(dir.join("data-dictionary.md")).unwrap();
    for col in &header {
        assert!(
            dictionary.contains(&format!("| `{col}` |")),
            "`{col}` not in data-dictionary.md:\n{dictionary}"
        );
    }
    let data: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("data.json")).unwrap()).unwrap();
    assert_eq!(data["trials"].as_array().unwrap().len(), 6);
    assert_eq!(
        data["tables"]["tps"]["cells"][1]["trials"]
            .as_array()
            .unwrap()
            .len(),
        3
    );
    assert_eq!(
        data["claims"]["jemalloc is faster by at least 5%"]["verdict"],
        "inconclusive"
    );

    // the plot: files beside the report, inline in report.html, rendered by a browser
    for file in [
        "plot-lat.svg",
        "plot-lat.png",
        "plot-series-r.svg",
        "plot-series-r.png",
        "report.html",
        "series.csv",
    ] {
        assert!(dir.join(file).exists(), "{file} in {}", dir.display());
    }
    let html = std::fs::read_to_string(dir.join("report.html")).unwrap();
    assert!(html.contains("<svg"), "no inline SVG in report.html");
    assert!(
        html.contains("latency_p95_ms (ms)"),
        "no y axis label with its unit"
    );
    assert!(html.contains("- plan: ") || html.contains("<li>plan: <code>plan.kdl</code>"));
    assert_chromium_renders_the_plot(&dir.join("report.html"), sb.path());

    // series.csv: per-second samples of every trial in long format
    let series = std::fs::read_to_string(dir.join("series.csv")).unwrap();
    let mut lines = series.lines();
    let header = lines.next().unwrap();
    assert!(
        header.starts_with("key,address,trials,server,pass,")
            && header.contains(",threads,")
            && header.ends_with(",second,in_warmup,figure,value"),
        "{header}"
    );
    let tps_rows = lines.filter(|l| l.contains(",tps,")).count();
    assert!(
        tps_rows >= 6,
        "{tps_rows} tps samples for 6 trials:\n{series}"
    );

    // one trial measured again: the other passes of its point, from the earlier run, are
    // measured anew beside it (a comparison uses measurements made together); its analyses,
    // claim and report follow, nothing else runs
    let again = sb
        .cairn(["--json", "run", "plan.kdl", "--fresh", "trial/r/jemalloc#2"])
        .guard(GUARD)
        .run();
    again.expect_code(0);
    assert_eq!(
        again.events().finished(),
        set([
            "trial/r/system#1",
            "trial/r/system#2",
            "trial/r/system#3",
            "trial/r/jemalloc#1",
            "trial/r/jemalloc#2",
            "trial/r/jemalloc#3",
            "analysis/tps",
            "analysis/lat",
            "claim/jemalloc is faster by at least 5%",
            "report/summary",
        ])
    );
    assert_eq!(again.events().count("measured_anew"), 5);
    // and a plain second run is served from the cache
    let cached = sb.cairn(["--json", "run", "plan.kdl"]).guard(GUARD).run();
    cached.expect_code(0);
    assert!(cached.events().finished().is_empty());
}

#[test]
fn bad_analyses_and_claims_are_refused_at_check_pointing_at_the_value() {
    let sb = Sandbox::new();
    let text = plan()
        .replace(
            r#"expect "jemalloc > system" by="5%""#,
            r#"expect "tcmalloc > system" by="5%""#,
        )
        .replace(r#"baseline="system""#, r#"baseline="sytem""#)
        .replace(r#"style="bar""#, r#"style="pie""#);
    sb.write("plan.kdl", &text);
    let r = sb.cairn(["check", "plan.kdl"]).run();
    r.expect_code(2);
    for part in [
        "`tcmalloc` is not a server of the study's trials",
        r#"expect "tcmalloc > system" by="5%""#,
        "the baseline `sytem` is not a server of these trials",
        "╰── `expect`",
        r#"baseline="sytem""#,
        "`pie` is not a chart style; use \"line\" or \"bar\"",
    ] {
        assert!(r.stderr.contains(part), "{part:?} in\n{}", r.stderr);
    }
    // nothing was recorded
    assert_eq!(sb.record_count(), 0);
}

/// Opens `html` in headless Chromium, screenshots it and checks the top of the page (the
/// headline, the design and the plots under them) shows the charts' colours (series and legend) — saturated pixels the page's
/// text, tables and verdict shading never have. A missing Chromium fails the test: setup installs it.
fn assert_chromium_renders_the_plot(html: &Path, work: &Path) {
    let shot = work.join("report.png");
    let profile = work.join("chromium-profile");
    let out = std::process::Command::new("chromium")
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
            // tall enough for the headline and the design above the plots
            "--window-size=1200,2400",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg(format!("--screenshot={}", shot.display()))
        .arg(format!("file://{}", html.display()))
        .output()
        .expect("chromium runs (scripts/setup.sh installs Debian's `chromium`)");
    assert!(
        shot.exists(),
        "chromium wrote no screenshot: {}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    // kept for a person to look at when the check fails
    let _ = std::fs::copy(
        &shot,
        Path::new(env!("CARGO_TARGET_TMPDIR")).join("e2e-report-screenshot.png"),
    );
    let decoder = png::Decoder::new(std::io::BufReader::new(std::fs::File::open(&shot).unwrap()));
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size().unwrap()];
    let info = reader.next_frame(&mut buf).unwrap();
    let channels = info.color_type.samples();
    let pixels = &buf[..info.buffer_size()];
    let mut ink = 0;
    let mut saturated = 0;
    for p in pixels.chunks(channels) {
        let (r, g, b) = (p[0], p[1], p[2]);
        if (r, g, b) != (255, 255, 255) {
            ink += 1;
        }
        if r.max(g).max(b) - r.min(g).min(b) > 100 {
            saturated += 1;
        }
    }
    assert!(
        ink > 10_000,
        "the screenshot is (nearly) blank: {ink} non-white pixels"
    );
    // the legend's swatches alone are ~1,000 such pixels: a chart whose series a wild pass
    // squashed onto the axis (seen on a loaded machine: a p95 of 2.3 s) still has them, a
    // missing image (a grey placeholder) has none
    assert!(
        saturated > 800,
        "no chart in the screenshot: {saturated} saturated pixels of {ink} non-white"
    );
}

#[test]
fn report_never_measures_it_refuses_while_trials_have_no_result() {
    let sb = Sandbox::new();
    sb.write("plan.kdl", &plan());
    let r = sb.cairn(["report", "plan.kdl"]).run();
    r.expect_code(1);
    assert!(
        r.stderr
            .contains("6 of the study's measurements have no result for their current definition on this machine"),
        "{}",
        r.stderr
    );
    assert!(
        r.stderr.contains("run `cairn run plan.kdl` first"),
        "{}",
        r.stderr
    );
    assert_eq!(sb.record_count(), 0, "nothing ran");
    assert!(!sb.results().join("e2e-report").exists());

    // a plan without a report is bad input
    sb.write("bare.kdl", "study \"bare\"\nstep \"a\" { run \"true\" }\n");
    let r = sb.cairn(["report", "bare.kdl"]).run();
    r.expect_code(2);
    assert!(r.stderr.contains("declares no report"), "{}", r.stderr);
}

/// An A/A study — two servers with one definition, the standard way to calibrate a
/// machine's noise — measures each cell on its own (their trials have keys of their own, so
/// nothing is "recorded twice under one key"), and the run's closing summary says of the
/// claim what the claim step decided.
#[test]
fn an_aa_study_measures_each_server_and_its_summary_agrees_with_its_claim() {
    let _engine = engine_shared();
    cairn_testkit::mariadb_image();
    let sb = Sandbox::new();
    let images = Path::new(env!("CARGO_MANIFEST_DIR")).join("images/mariadb.kdl");
    sb.write(
        "plan.kdl",
        &format!(
            r#"study "e2e-aa"
import "{}"
server "a" {{ image "mariadb-bookworm"; option innodb_buffer_pool_size="64M" }}
server "b" {{ extends "a" }}
dataset "sb" {{ sysbench tables=1 rows=500 }}
workload "ps" {{ sysbench "oltp_point_select"; threads 1; duration "1s" }}
trials "aa" {{ servers "a" "b"; dataset "sb"; workload "ps"; passes 4 }}
analysis "tps" {{ table metric="tps" rows="server" columns="threads" baseline="a" }}
claim "b keeps up with a" {{ metric "tps"; expect "b >= a" within="20%" }}
report "summary" {{ analyses "tps" }}
"#,
            images.display()
        ),
    );
    let run = sb.cairn(["run", "plan.kdl"]).guard(GUARD).run();
    run.expect_code(0);
    for wrong in ["differs from the recorded", "not checked", "both kept"] {
        assert!(
            !run.stdout.contains(wrong) && !run.stderr.contains(wrong),
            "{wrong:?} in\n{}\n{}",
            run.stdout,
            run.stderr
        );
    }
    let dir = sb.results().join("e2e-aa");
    let data: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("data.json")).unwrap()).unwrap();
    // eight trials, eight keys: each server's four passes measured on their own
    let trials = data["trials"].as_array().unwrap();
    assert_eq!(trials.len(), 8);
    let keys: std::collections::BTreeSet<&str> =
        trials.iter().filter_map(|t| t["key"].as_str()).collect();
    assert_eq!(keys.len(), 8, "{keys:?}");
    // the claim step's verdict is the one the run's summary prints
    let verdict = data["claims"]["b keeps up with a"]["verdict"]
        .as_str()
        .unwrap()
        .to_string();
    assert_ne!(verdict, "fails", "an A/A pair within 20% of itself");
    let line = run
        .stdout
        .lines()
        .find(|l| l.contains("\"b keeps up with a\""))
        .unwrap_or_else(|| panic!("the claim in the summary:\n{}", run.stdout));
    assert!(
        line.contains(&format!("**{verdict}**")),
        "{line} vs {verdict}"
    );
}

/// A claim names the trials block it reads (`trials "aa"`): with two blocks measuring the
/// same servers, its sides are that block's passes alone; its band ("b about 50% above a")
/// is checked at the run, never holding on an A/A pair, and the summary and `data.json`
/// carry its meaning in words.
#[test]
fn a_claim_reads_its_named_trials_block_and_checks_a_band() {
    let _engine = engine_shared();
    cairn_testkit::mariadb_image();
    let sb = Sandbox::new();
    let images = Path::new(env!("CARGO_MANIFEST_DIR")).join("images/mariadb.kdl");
    sb.write(
        "plan.kdl",
        &format!(
            r#"study "e2e-claim-trials"
import "{}"
server "a" {{ image "mariadb-bookworm"; option innodb_buffer_pool_size="64M" }}
server "b" {{ extends "a" }}
dataset "sb" {{ sysbench tables=1 rows=500 }}
workload "ps" {{ sysbench "oltp_point_select"; threads 1; duration "1s" }}
trials "aa" {{ servers "a" "b"; dataset "sb"; workload "ps"; passes 4 }}
trials "again" {{ servers "a" "b"; dataset "sb"; workload "ps"; passes 1 }}
claim "b is about 50% faster" {{
    trials "aa"
    metric "tps"
    expect "b > a" about="50%" tolerance="10%"
}}
analysis "tps" {{ trials "aa"; table metric="tps" rows="server" columns="threads" baseline="a" }}
report "summary" {{ analyses "tps" }}
"#,
            images.display()
        ),
    );
    let run = sb.cairn(["run", "plan.kdl"]).guard(GUARD).run();
    run.expect_code(0);
    let dir = sb.results().join("e2e-claim-trials");
    let data: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("data.json")).unwrap()).unwrap();
    let claim = &data["claims"]["b is about 50% faster"];
    assert_ne!(
        claim["verdict"], "holds",
        "an A/A pair is not 50% apart: {claim}"
    );
    // the named block's four passes per side, not the other block's
    let left = claim["left_trials"].as_array().expect("left_trials");
    assert_eq!(left.len(), 4, "{claim}");
    assert_eq!(claim["tolerance"], serde_json::json!(0.1));
    assert_eq!(
        claim["meaning"],
        "b's tps 40% to 60% above a's, so b is about 50% faster"
    );
    let line = run
        .stdout
        .lines()
        .find(|l| l.contains("\"b is about 50% faster\""))
        .unwrap_or_else(|| panic!("the claim in the summary:\n{}", run.stdout));
    assert!(line.contains("about 50% ± 10%"), "{line}");
}

/// Two studies whose trials have identical definitions: the second measures every trial
/// itself (trials are keyed by their study; the images and the dataset are shared), so its
/// comparisons are of measurements made together, its analyses run under its own names, and
/// measuring it leaves the first study's results as they were.
#[test]
fn another_studys_measurements_are_never_compared_with_ours_as_if_made_together() {
    let _engine = engine_shared();
    cairn_testkit::mariadb_image();
    let sb = Sandbox::new();
    let images = Path::new(env!("CARGO_MANIFEST_DIR")).join("images/mariadb.kdl");
    let plan = |study: &str, block: &str, servers: &str| {
        format!(
            r#"study "{study}"
import "{}"
server "system" {{ image "mariadb-bookworm"; option innodb_buffer_pool_size="64M" }}
server "jemalloc" {{ extends "system"; allocator "jemalloc" }}
server "tcmalloc" {{ extends "system"; allocator "tcmalloc" }}
dataset "sb" {{ sysbench tables=1 rows=500 }}
workload "ps" {{ sysbench "oltp_point_select"; threads 1; duration "1s" }}
trials "{block}" {{ servers {servers}; dataset "sb"; workload "ps"; passes 4 }}
analysis "tps" {{ table metric="tps" rows="server" columns="threads" baseline="system" }}
report "summary" {{ analyses "tps" }}
"#,
            images.display()
        )
    };
    sb.write(
        "first.kdl",
        &plan("e2e-first", "m", r#""system" "jemalloc""#),
    );
    sb.cairn(["run", "first.kdl"]).guard(GUARD).success();
    let first_data = || std::fs::read_to_string(sb.results().join("e2e-first/data.json")).unwrap();
    let published = first_data();
    sb.write(
        "second.kdl",
        &plan("e2e-second", "ro", r#""system" "jemalloc" "tcmalloc""#),
    );
    // the second study measures its own trials: none is served from the first's records
    let plan_out = sb.cairn(["plan", "second.kdl"]).guard(GUARD).success();
    let to_measure = plan_out
        .stdout
        .lines()
        .filter(|l| (l.starts_with("run") || l.starts_with("pending")) && l.contains("trial/ro/"))
        .count();
    assert_eq!(to_measure, 12, "{}", plan_out.stdout);
    let run = sb.cairn(["run", "second.kdl"]).guard(GUARD).run();
    run.expect_code(0);
    let data: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(sb.results().join("e2e-second/data.json")).unwrap(),
    )
    .unwrap();
    let trials = data["trials"].as_array().unwrap();
    assert_eq!(
        trials.len(),
        12,
        "3 servers × 4 passes, each measured by this study"
    );
    let campaigns: std::collections::BTreeSet<&str> = trials
        .iter()
        .filter_map(|t| t["campaign"].as_str())
        .collect();
    assert_eq!(campaigns.len(), 1, "{campaigns:?}");
    for t in trials {
        assert_eq!(t["trials"], "ro", "{t}");
        assert!(
            t["campaign"].as_str().unwrap().starts_with("e2e-second"),
            "{t}"
        );
    }
    // its comparisons are of measurements made together: none is marked as mixing campaigns
    for c in data["tables"]["tps"]["cells"].as_array().unwrap() {
        assert_ne!(
            c["comparison"]["reason"]["reason"], "mixed_campaigns",
            "{c}"
        );
    }
    // and measuring it changed nothing of the first study's results
    sb.cairn(["report", "first.kdl"]).guard(GUARD).success();
    assert_eq!(first_data(), published);

    // declared reuse: a study whose block is `measured-by "e2e-first"` is served that
    // study's measurements, measures none, decides on them, and its report says so
    let reusing = |study: &str, servers: &str| {
        plan(study, "m", servers).replace("passes 4 }", r#"passes 4; measured-by "e2e-first" }"#)
    };
    sb.write("third.kdl", &reusing("e2e-third", r#""system" "jemalloc""#));
    let ev = sb.run_ok("third.kdl", &[]);
    let measured: Vec<String> = ev
        .finished()
        .into_iter()
        .filter(|a| a.starts_with("trial/"))
        .collect();
    assert!(measured.is_empty(), "{measured:?}");
    let report = std::fs::read_to_string(sb.results().join("e2e-third/report.md")).unwrap();
    assert!(report.contains("declared reuse"), "{report}");
    assert!(report.contains(r#"measured-by "e2e-first""#), "{report}");
    let third: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(sb.results().join("e2e-third/data.json")).unwrap(),
    )
    .unwrap();
    for c in third["tables"]["tps"]["cells"].as_array().unwrap() {
        assert_ne!(
            c["comparison"]["reason"]["reason"], "mixed_campaigns",
            "{c}"
        );
    }
    // a server the first study never measured cannot be reused: the run fails, naming why,
    // and nothing is measured in the first study's name
    sb.write(
        "fourth.kdl",
        &reusing("e2e-fourth", r#""system" "tcmalloc""#),
    );
    let records = sb.record_count();
    let r = sb.cairn(["run", "fourth.kdl"]).guard(GUARD).run();
    assert_ne!(r.code, Some(0), "{}", r.stderr);
    assert!(r.stderr.contains("measured-by"), "{}", r.stderr);
    let after = sb.record_count();
    // only the tcmalloc server's dataset may have been added
    assert!(after <= records + 1, "{records} → {after}");
}

/// A re-run after a release: one server's definition changes (its "new release"); the other
/// server's passes, recorded by an earlier run, are measured again beside the new ones —
/// `cairn plan` says so first, with why — so the comparison is of measurements made
/// together. A run that changes nothing is served from the store.
#[test]
fn a_rerun_after_a_release_measures_the_previous_release_alongside() {
    let _engine = engine_shared();
    cairn_testkit::mariadb_image();
    let sb = Sandbox::new();
    let images = Path::new(env!("CARGO_MANIFEST_DIR")).join("images/mariadb.kdl");
    let plan = |pool: &str| {
        format!(
            r#"study "e2e-release"
import "{}"
server "old" {{ image "mariadb-bookworm"; option innodb_buffer_pool_size="64M" }}
server "new" {{ extends "old"; option innodb_buffer_pool_size="{pool}" }}
dataset "sb" {{ sysbench tables=1 rows=500 }}
workload "ps" {{ sysbench "oltp_point_select"; threads 1; duration "1s" }}
trials "t" {{ servers "old" "new"; dataset "sb"; workload "ps"; passes 2 }}
analysis "tps" {{ table metric="tps" rows="server" columns="threads" baseline="old" }}
"#,
            images.display()
        )
    };
    sb.write("plan.kdl", &plan("96M"));
    sb.run_ok("plan.kdl", &[]);
    let again = sb.run_ok("plan.kdl", &[]);
    assert_eq!(again.count("measured_anew"), 0);
    assert!(again.finished().is_empty(), "{:?}", again.finished());

    // the new release: only the "new" server's definition changes
    sb.write("plan.kdl", &plan("128M"));
    let old: std::collections::BTreeSet<String> =
        (1..=2).map(|p| format!("trial/t/old#{p}")).collect();
    let planned = sb.cairn(["plan", "plan.kdl"]).guard(GUARD).success();
    for a in &old {
        let line = planned
            .stdout
            .lines()
            .skip_while(|l| !l.contains(a.as_str()))
            .take(2)
            .collect::<Vec<_>>()
            .join("\n");
        assert!(line.starts_with("run"), "{a} will run: {}", planned.stdout);
        assert!(line.contains("measured anew"), "{a}: {}", planned.stdout);
    }
    let ev = sb.run_ok("plan.kdl", &[]);
    assert_eq!(ev.addresses("measured_anew"), old);
    assert_eq!(ev.count("measured_anew"), 2);
    let trials: std::collections::BTreeSet<String> = ev
        .finished()
        .into_iter()
        .filter(|a| a.starts_with("trial/"))
        .collect();
    assert_eq!(
        trials.len(),
        4,
        "both servers' passes measured together: {trials:?}"
    );
    // the old server's image and dataset are served: only measurements are made anew
    assert!(ev.cached().contains("dataset/sb@old"), "{:?}", ev.cached());
}
