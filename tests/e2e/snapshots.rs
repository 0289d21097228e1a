//! Snapshots of the human output of `cairn run`, `cairn plan` and `cairn results`, with what
//! varies between runs and machines redacted (see `support::normalize`). A changed layout or
//! wording fails here: review the `.snap.new` beside the snapshot and accept it if intended.
//!
//! Runs use `-j 1` so the order of the log lines is the scheduler's, not a race's. The step
//! keys shown are content hashes of host steps (no machine fingerprint), so they stay: a
//! changed key here means existing plans' keys changed.

use crate::support::{assert_snapshot, contains, normalize, snapshot, Sandbox};

/// Host steps only: a two-point matrix with an env value, a fan-in, an unrelated step.
const PLAN: &str = r#"study "snap"
step "gen" { run "echo v=$CAIRN_PARAM_N > out.txt"; output "out.txt"; matrix { n 1 2 }; env GREETING="hello" }
step "sum" { needs "gen"; run "cat gen/*/out.txt > all.txt"; output "all.txt" }
step "lone" { run "echo lone > lone.txt"; output "lone.txt" }
"#;

/// [`PLAN`] plus a step that fails with a stderr tail, and its dependent.
const FAILING: &str = r#"step "bad" { run "echo partial; echo oops-tail >&2; exit 3"; output "b.txt" }
step "after_bad" { needs "bad"; run "cp bad/b.txt a.txt"; output "a.txt" }
"#;

#[test]
fn run_prints_a_log_line_per_step_and_a_summary() {
    let sb = Sandbox::new();
    sb.write("p.kdl", PLAN);
    sb.cairn(["run", "-j", "1", "p.kdl"])
        .stderr(snapshot("run_first"))
        .success();

    // one env value changes: gen runs again, sum and lone are cached (listed with -v)
    sb.write("p.kdl", &PLAN.replace(r#""hello""#, r#""bye""#));
    sb.cairn(["-v", "run", "-j", "1", "p.kdl"])
        .stderr(snapshot("run_after_edit_verbose"))
        .success();
}

#[test]
fn run_prints_failures_with_their_stderr_tail_and_what_was_skipped() {
    let sb = Sandbox::new();
    sb.write("p.kdl", &format!("{PLAN}{FAILING}"));
    sb.cairn(["run", "-j", "1", "p.kdl"])
        .stderr(snapshot("run_fail_fast"))
        .failure();
    sb.cairn(["run", "-j", "1", "--keep-going", "p.kdl"])
        .stderr(snapshot("run_keep_going"))
        .failure();
}

#[test]
fn plan_prints_each_steps_status_key_and_reasons() {
    let sb = Sandbox::new();
    sb.write("p.kdl", PLAN);
    sb.cairn(["plan", "p.kdl"])
        .stdout(snapshot("plan_fresh"))
        .success();

    sb.cairn(["run", "p.kdl"]).success();
    sb.write("p.kdl", &PLAN.replace(r#""hello""#, r#""bye""#));
    sb.cairn(["-v", "plan", "p.kdl"])
        .stdout(snapshot("plan_after_edit_verbose"))
        .success();
}

/// The machine-dependent parts of a `cairn results` table: whether a trial's record was
/// measured on this machine (`cached`) or elsewhere (`other machine`) depends on where the
/// test runs, and so do the column widths that follow from it, the count of trials
/// measured here and this machine's class id. Columns are joined by one space, the state becomes `<state>`.
fn machine_neutral(table: &str) -> String {
    table
        .lines()
        // the legend explaining `other machine` appears only where that state does
        .filter(|l| !l.starts_with("`other machine`"))
        .map(|l| {
            let line = l.split_whitespace().collect::<Vec<_>>().join(" ");
            let line = ["other machine", "outdated", "cached"]
                .into_iter()
                .find_map(|state| line.strip_suffix(state).map(|s| format!("{s}<state>")))
                .unwrap_or(line);
            match line.split_once(" of ") {
                Some((n, rest)) if n.chars().all(|c| c.is_ascii_digit()) => {
                    // and this machine's class, by its id
                    let rest = match rest.split_once("(class ") {
                        Some((head, _)) => format!("{head}(class <id>)"),
                        None => rest.to_string(),
                    };
                    format!("<n> of {rest}")
                }
                _ => line,
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn results_shows_the_committed_quickstart_trials() {
    // the committed store and the plan that made it, copied: the repository is never written;
    // run as the class its trials were measured on, so the table is the same on any machine
    let (sb, class) = crate::support::committed_quickstart();
    let r = sb
        .cairn(["results", "plans/quickstart.kdl"])
        .env("CAIRN_SIMULATED_MACHINE", &class)
        .stdout(contains("trials measured"))
        .success();
    assert_snapshot(
        "results_quickstart",
        &machine_neutral(&normalize(&r.stdout, r.root.as_deref())),
    );
}
