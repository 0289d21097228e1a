//! End-to-end: the store under damage and sharing. A flipped blob byte or an edited
//! record is found by `verify` and healed by the next `run`; a damaged record no step uses
//! is moved aside by `verify --repair` or removed by `gc`; `gc` is a dry run unless asked;
//! two runs on one store take turns.

use std::time::Duration;

use serde_json::Value;

use crate::support::{contains, set, Sandbox};

const PLAN: &str = r#"study "st"
step "gen" { run "echo value-$CAIRN_PARAM_N > out.txt"; output "out.txt"; matrix { n 1 2 } }
step "sum" { needs "gen"; run "cat gen/*/out.txt > all.txt"; output "all.txt" }
step "lone" { run "echo lonely > lone.txt"; output "lone.txt" }
"#;

/// The digest of `output` in the single record of `address`.
fn output_digest(sb: &Sandbox, address: &str, output: &str) -> String {
    let mut recs = sb.records_of(address);
    assert_eq!(recs.len(), 1, "one record of {address}");
    let (_, rec) = recs.pop().expect("record");
    rec["outputs"][output]["digest"]
        .as_str()
        .unwrap_or_else(|| panic!("outputs.{output}.digest in {rec}"))
        .to_string()
}

/// How many records name this blob (as an output or a log).
fn referencing_records(sb: &Sandbox, digest: &str) -> usize {
    sb.record_files()
        .iter()
        .filter(|p| std::fs::read_to_string(p).is_ok_and(|t| t.contains(digest)))
        .count()
}

#[test]
fn a_flipped_blob_byte_is_found_and_the_step_reruns() {
    let sb = Sandbox::new();
    sb.write("p.kdl", PLAN);
    sb.run_ok("p.kdl", &[]);
    sb.verify().expect_code(0);

    let digest = output_digest(&sb, "gen[n=1]", "out.txt");
    assert_eq!(referencing_records(&sb, &digest), 1, "a blob of one step");
    let blob = sb.blob_path(&digest);
    let mut bytes = std::fs::read(&blob).expect("blob");
    bytes[0] ^= 0x01;
    std::fs::write(&blob, &bytes).expect("write blob");

    sb.cairn(["verify"]).output(contains(&digest)).failure();

    // only the damaged step runs again; it produces the same content, so sum stays cached
    let ev = sb.run_ok("p.kdl", &[]);
    assert_eq!(ev.finished(), set(["gen[n=1]"]));
    assert_eq!(ev.cached(), set(["gen[n=2]", "sum", "lone"]));
    sb.verify().expect_code(0);
    assert_eq!(sb.output_text("gen[n=1]", "out.txt"), "value-1\n");
}

#[test]
fn a_flipped_blob_byte_is_healed_by_run_without_verify_first() {
    let sb = Sandbox::new();
    sb.write("p.kdl", PLAN);
    sb.run_ok("p.kdl", &[]);

    let digest = output_digest(&sb, "lone", "lone.txt");
    let blob = sb.blob_path(&digest);
    let mut bytes = std::fs::read(&blob).expect("blob");
    bytes[0] ^= 0x01;
    std::fs::write(&blob, &bytes).expect("write blob");

    // whether `run` re-hashes blobs or not, after run + verify the store must be whole:
    // either run healed the blob, or verify reports it (and the next run heals it)
    sb.run_ok("p.kdl", &[]);
    let v = sb.verify();
    if v.code != Some(0) {
        v.stdout(contains(&digest));
        let ev = sb.run_ok("p.kdl", &[]);
        assert_eq!(ev.finished(), set(["lone"]));
        sb.verify().expect_code(0);
    }
}

#[test]
fn an_edited_record_is_reported_and_the_step_reruns() {
    let sb = Sandbox::new();
    sb.write("p.kdl", PLAN);
    sb.run_ok("p.kdl", &[]);
    let records_before = sb.record_count();

    let (path, rec) = sb.records_of("lone").pop().expect("lone record");
    let key = rec["key"].as_str().expect("key").to_string();
    let text = std::fs::read_to_string(&path).expect("record");
    // one character of the recorded command changes
    let edited = text.replacen("echo lonely", "echo lonelY", 1);
    assert_ne!(edited, text);
    std::fs::write(&path, edited).expect("write record");

    sb.cairn(["verify"]).stdout(contains(&key)).failure();

    let plan = sb.plan_json("p.kdl");
    let lone = plan
        .iter()
        .find(|s| s["address"] == "lone")
        .expect("lone in plan");
    assert_eq!(lone["status"], "run", "{lone}");

    let ev = sb.run_ok("p.kdl", &[]);
    assert_eq!(ev.finished(), set(["lone"]));
    assert_eq!(sb.record_count(), records_before);
    sb.verify().expect_code(0);
}

/// What a crash between creating a record file and writing it leaves: an empty record, here
/// under key `key` that no step of the plan has (an orphan), so no run ever overwrites it.
fn plant_empty_orphan(sb: &Sandbox, key: &str) -> std::path::PathBuf {
    let path = sb.records_dir().join(format!("{key}.json"));
    std::fs::write(&path, "").expect("empty record");
    path
}

#[test]
fn an_orphaned_empty_record_is_moved_aside_by_verify_repair() {
    let sb = Sandbox::new();
    sb.write("p.kdl", PLAN);
    sb.run_ok("p.kdl", &[]);
    let records_before = sb.record_count();
    let key = "0f".repeat(32);
    let orphan = plant_empty_orphan(&sb, &key);

    // plain verify names it and says what will (and will not) heal it
    sb.cairn(["verify"])
        .stdout(contains(&key))
        .stdout(contains("cairn verify --repair"))
        .failure();
    // a run does not heal an orphan: no step has its key
    let ev = sb.run_ok("p.kdl", &[]);
    assert_eq!(ev.count("ran"), 0, "{}", ev.summary());
    sb.verify().expect_code(1);

    let r = sb
        .cairn(["verify", "--repair"])
        .stdout(contains(format!("moved damaged record {key}")))
        .stdout(contains("store is clean"))
        .success();
    assert!(!orphan.exists(), "moved out of records/");
    let quarantined = sb.store().join("quarantine").join(format!("{key}.json"));
    assert!(quarantined.exists(), "kept in quarantine: {}", r.stdout);
    assert_eq!(sb.record_count(), records_before, "good records untouched");
    sb.verify().expect_code(0);
    // nothing left to repair: a clean store repairs to itself
    let again = sb.cairn(["--json", "verify", "--repair"]).success();
    let rep: Value = again.json_lines().pop().expect("verify report");
    assert_eq!(rep["repaired"].as_array().map(Vec::len), Some(0), "{rep}");
    assert_eq!(rep["clean_after_repair"], true, "{rep}");
    let ev = sb.run_ok("p.kdl", &[]);
    assert_eq!(ev.count("ran"), 0, "{}", ev.summary());
}

#[test]
fn a_damaged_record_of_a_planned_step_is_repaired_and_the_step_reruns() {
    let sb = Sandbox::new();
    sb.write("p.kdl", PLAN);
    sb.run_ok("p.kdl", &[]);
    let (path, rec) = sb.records_of("lone").pop().expect("lone record");
    let key = rec["key"].as_str().expect("key").to_string();
    std::fs::write(&path, "").expect("truncate the record");

    let r = sb.cairn(["--json", "verify", "--repair"]).success();
    let rep: Value = r.json_lines().pop().expect("verify report");
    assert_eq!(rep["clean"], false, "{rep}");
    assert_eq!(rep["repaired"][0]["record"], key.as_str(), "{rep}");
    assert_eq!(rep["clean_after_repair"], true, "{rep}");
    let ev = sb.run_ok("p.kdl", &[]);
    assert_eq!(ev.finished(), set(["lone"]));
    sb.verify().expect_code(0);
}

#[test]
fn gc_removes_an_orphaned_empty_record() {
    let sb = Sandbox::new();
    sb.write("p.kdl", PLAN);
    sb.run_ok("p.kdl", &[]);
    let key = "1e".repeat(32);
    let orphan = plant_empty_orphan(&sb, &key);
    sb.verify().expect_code(1);

    let dry = sb.cairn(["--json", "gc", "p.kdl"]).success();
    let rep: Value = dry.json_lines().pop().expect("gc report");
    assert_eq!(rep["records_removed"], serde_json::json!([key]), "{rep}");
    sb.cairn(["gc", "--apply", "p.kdl"]).success();
    assert!(!orphan.exists());
    sb.verify().expect_code(0);
}

/// A damaged record of a step the plan still has stops `gc` before it removes anything (its
/// blobs cannot be known); the error says how to move it aside, and after that gc works.
#[test]
fn gc_stops_at_a_damaged_kept_record_and_names_the_repair() {
    let sb = Sandbox::new();
    sb.write("p.kdl", PLAN);
    sb.run_ok("p.kdl", &[]);
    let (path, _) = sb.records_of("lone").pop().expect("lone record");
    std::fs::write(&path, "").expect("truncate the record");
    let files_before = sb.store_file_count();
    sb.cairn(["gc", "--apply", "p.kdl"])
        .stderr(contains("cairn verify --repair"))
        .failure();
    assert_eq!(sb.store_file_count(), files_before, "nothing removed");
    sb.cairn(["verify", "--repair"]).success();
    sb.cairn(["gc", "--apply", "p.kdl"]).success();
    sb.verify().expect_code(0);
}

#[test]
fn gc_is_a_dry_run_unless_applied() {
    let sb = Sandbox::new();
    sb.write("p.kdl", PLAN);
    sb.run_ok("p.kdl", &[]);
    let lone_blob = sb.blob_path(&output_digest(&sb, "lone", "lone.txt"));
    assert!(lone_blob.exists());
    let files_before = sb.store_file_count();
    let records_before = sb.record_count();

    // everything is referenced: nothing to remove, even with --apply
    sb.cairn(["gc", "--apply", "p.kdl"]).success();
    assert_eq!(sb.store_file_count(), files_before);

    // `lone` leaves the plan
    let without_lone: String = PLAN
        .lines()
        .filter(|l| !l.contains(r#"step "lone""#))
        .map(|l| format!("{l}\n"))
        .collect();
    sb.write("p.kdl", &without_lone);

    let dry = sb.cairn(["--json", "gc", "p.kdl"]).success();
    let rep: Value = dry.json_lines().pop().expect("gc report");
    assert_eq!(rep["applied"], false, "{rep}");
    assert_eq!(
        rep["records_removed"].as_array().map(Vec::len),
        Some(1),
        "{rep}"
    );
    assert_eq!(
        sb.store_file_count(),
        files_before,
        "a dry run removes nothing"
    );
    assert_eq!(sb.record_count(), records_before);

    sb.cairn(["gc", "p.kdl"]).success();
    assert_eq!(sb.store_file_count(), files_before);

    sb.cairn(["gc", "--apply", "p.kdl"]).success();
    assert_eq!(sb.record_count(), records_before - 1);
    assert!(sb.records_of("lone").is_empty());
    assert!(
        !lone_blob.exists(),
        "lone's output blob is unreferenced now"
    );
    sb.verify().expect_code(0);

    // what the plan still has is untouched
    let ev = sb.run_ok("p.kdl", &[]);
    assert_eq!(ev.count("ran"), 0, "{}", ev.summary());
}

#[test]
fn two_concurrent_runs_take_turns() {
    let sb = Sandbox::new();
    let shared = r#"step "slow" { run "sleep 2; echo slow > s.txt"; output "s.txt" }"#;
    sb.write(
        "a.kdl",
        &format!(
            "study \"a\"\n{shared}\nstep \"a1\" {{ run \"echo a > a.txt\"; output \"a.txt\" }}\n"
        ),
    );
    sb.write(
        "b.kdl",
        &format!("study \"b\"\n{shared}\nstep \"b1\" {{ needs \"slow\"; run \"cp slow/s.txt b.txt\"; output \"b.txt\" }}\n"),
    );

    let mut first = sb.run("a.kdl").spawn();
    first.wait_for(1, Duration::from_secs(30), |v| {
        v["event"] == "step_started" && v["step"] == "slow"
    });
    // `slow` sleeps 2 s: the first run holds the store lock now
    let second = sb.run("b.kdl").spawn();

    let r1 = first.finish(Duration::from_secs(60));
    let r2 = second.finish(Duration::from_secs(60));
    r1.expect_code(0);
    r2.expect_code(0);
    assert!(
        r2.stderr.to_lowercase().contains("waiting"),
        "the second run says it waits: {r2:?}"
    );

    let ev1 = r1.events();
    assert_eq!(ev1.finished(), set(["slow", "a1"]));
    let ev2 = r2.events();
    // it ran after the first: the shared step is reused
    assert_eq!(ev2.cached(), set(["slow"]));
    assert_eq!(ev2.finished(), set(["b1"]));
    assert_eq!(sb.record_count(), 3);
    sb.verify().expect_code(0);
}
