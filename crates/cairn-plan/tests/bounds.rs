//! Bounded plan input (issue 9, items 3 and 6): what a plan file may make cairn read and
//! expand, checked on files in a temporary directory.

use std::path::Path;

use cairn_plan::limits::{MAX_FILE_BYTES, MAX_STEPS_PER_DECLARATION};

fn write(dir: &Path, name: &str, text: &str) {
    let path = dir.join(name);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// The codes and messages of the problems `load` finds in `root`.
fn problems(root: &Path) -> Vec<(String, String)> {
    match cairn_plan::load(root) {
        Ok(_) => Vec::new(),
        Err(e) => e
            .problems()
            .iter()
            .map(|p| (p.code().to_string(), p.message().to_string()))
            .collect(),
    }
}

#[test]
fn inputs_climbing_out_need_a_host_path() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    write(d, "shared/data.csv", "1,2\n");
    write(
        d,
        "plans/p.kdl",
        "step \"s\" { run \"true\"; input \"../shared/data.csv\" }\n",
    );
    let found = problems(&d.join("plans/p.kdl"));
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0].0, "cairn::plan::host_path");
    assert!(
        found[0].1.contains("outside the plan's directory"),
        "{found:?}"
    );

    // a relative host-path is relative to the plan's directory
    write(
        d,
        "plans/p.kdl",
        "study { host-path \"../shared\" }\nstep \"s\" { run \"true\"; input \"../shared/data.csv\" }\n",
    );
    let plan = cairn_plan::load(&d.join("plans/p.kdl")).expect("allowed by host-path");
    assert_eq!(
        plan.study.host_paths[0].value,
        d.join("shared").canonicalize().unwrap()
    );
}

#[test]
fn an_imported_file_reads_files_beside_itself() {
    // a recipe library outside the plan's directory brings its own files: allowed (the
    // import is visible in the plan, and the library reaches only its own directory)
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    write(d, "lib/x.cnf", "[mysqld]\n");
    write(d, "lib/tool.sh", "true\n");
    write(
        d,
        "lib/images.kdl",
        "image \"i\" { debian; file \"x.cnf\" \"/etc/x.cnf\" }\nstep \"t\" { run \"sh tool.sh\"; input \"tool.sh\" }\n",
    );
    write(
        d,
        "plans/p.kdl",
        "import \"../lib/images.kdl\"\nserver \"s\" { image \"i\" }\n",
    );
    assert_eq!(problems(&d.join("plans/p.kdl")), Vec::new());

    // but not files beside the plan that imports it
    write(d, "plans/secret.txt", "x\n");
    write(
        d,
        "lib/images.kdl",
        "image \"i\" { debian }\nstep \"t\" { run \"true\"; input \"../plans/secret.txt\" }\n",
    );
    let found = problems(&d.join("plans/p.kdl"));
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0].0, "cairn::plan::host_path");
}

#[test]
fn imports_must_be_small_regular_files() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    write(
        d,
        "big.kdl",
        &format!("// {}\n", "x".repeat(MAX_FILE_BYTES as usize)),
    );
    write(d, "p.kdl", "import \"big.kdl\"\n");
    let found = problems(&d.join("p.kdl"));
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0].0, "cairn::plan::import");
    assert!(found[0].1.contains("larger than the limit"), "{found:?}");

    // a FIFO would block the read for ever
    let fifo = d.join("pipe.kdl");
    assert!(std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success());
    write(d, "p.kdl", "import \"pipe.kdl\"\n");
    let found = problems(&d.join("p.kdl"));
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(found[0].1.contains("not a regular file"), "{found:?}");
    // the root file, too
    assert!(matches!(
        cairn_plan::load(&fifo),
        Err(cairn_plan::PlanError::Io { .. })
    ));
}

#[test]
fn a_declaration_may_expand_to_the_limit_and_no_further() {
    let at = format!("step \"s\" {{ run \"true\"; passes {MAX_STEPS_PER_DECLARATION} }}\n");
    assert!(cairn_plan::parse_str("p.kdl", &at).is_ok());
    let over = format!(
        "step \"s\" {{ run \"true\"; matrix {{ a 1 2 }}; passes {} }}\n",
        MAX_STEPS_PER_DECLARATION / 2 + 1
    );
    let err = cairn_plan::parse_str("p.kdl", &over).unwrap_err();
    let p = &err.problems()[0];
    assert_eq!(p.code(), "cairn::plan::limit");
    assert_eq!(
        p.message(),
        "step `s` would expand to 100002 steps (2 matrix points × 50001 passes), more than the limit of 100000"
    );
}

#[test]
fn trials_count_servers_workload_points_and_passes() {
    // 2 servers × (4 × 5 points) × 2501 passes = 100,040: just over
    let text = "server \"a\" {}\nserver \"b\" {}\n\
                workload \"w\" { sysbench \"oltp_read_only\"; threads 1 2 3 4; rate 1 2 3 4 5 }\n\
                trials \"t\" { servers \"a\" \"b\"; workload \"w\"; passes 2501 }\n";
    let err = cairn_plan::parse_str("p.kdl", text).unwrap_err();
    let p = &err.problems()[0];
    assert_eq!(
        p.message(),
        "trials `t` would expand to 100040 trials (2 servers × 20 workload points × 2501 passes), more than the limit of 100000"
    );
    // the span is the `passes` value
    let loc = p.loc().unwrap();
    assert_eq!(&text[loc.span.offset()..][..loc.span.len()], "2501");
}

#[test]
fn counts_saturate_instead_of_overflowing() {
    // 2000^8 workload points × passes: far beyond u64, summed over two trials of one name
    let values: Vec<String> = (1..=2000).map(|i| i.to_string()).collect();
    let values = values.join(" ");
    let params: String = [
        "threads",
        "rate",
        "range-size",
        "point-selects",
        "simple-ranges",
        "sum-ranges",
        "order-ranges",
        "distinct-ranges",
    ]
    .iter()
    .map(|p| format!("    {p} {values}\n"))
    .collect();
    let text = format!(
        "server \"a\" {{}}\nworkload \"w\" {{\n    sysbench \"oltp_read_only\"\n{params}}}\n\
         trials \"t\" {{ servers \"a\"; workload \"w\"; passes 4294967295 }}\n\
         trials \"t\" {{ servers \"a\"; workload \"w\"; passes 4294967295 }}\n\
         analysis \"all\" {{ table metric=\"tps\" }}\n"
    );
    let err = cairn_plan::parse_str("p.kdl", &text).unwrap_err();
    let limits = err
        .problems()
        .iter()
        .filter(|p| p.code() == "cairn::plan::limit")
        .count();
    assert_eq!(limits, 2, "{:?}", err.problems());
}
