//! End-to-end: the trials' `cpus` factor on real containers — one dataset snapshot for every
//! count, each count's server pinned to that many CPUs and its affinity read back from the
//! running server's process, the clients on the CPUs left over (or shared, or on the
//! server's own with `clients="with-server"`), and all of it in the record, `server.json` and
//! `cairn results`.

use std::time::Duration;

use serde_json::{json, Value};

use crate::support::Sandbox;
use crate::trials::images;

/// A hang guard for invocations that start servers (never a timing).
const GUARD: Duration = Duration::from_secs(600);

/// The CPUs this test's cairn may hand out (its own affinity, as cairn reads it).
fn usable() -> Vec<u32> {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    let list = status
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
        .expect("Cpus_allowed_list");
    let mut cpus = Vec::new();
    for part in list.trim().split(',') {
        let (a, b) = part.split_once('-').unwrap_or((part, part));
        cpus.extend(a.parse::<u32>().unwrap()..=b.parse::<u32>().unwrap());
    }
    cpus
}

/// `[0, 1, 3]` → `0-1,3`, as the kernel and the records spell a CPU list.
fn fmt(cpus: &[u32]) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut i = 0;
    while i < cpus.len() {
        let start = cpus[i];
        while i + 1 < cpus.len() && cpus[i + 1] == cpus[i] + 1 {
            i += 1;
        }
        parts.push(if cpus[i] == start {
            start.to_string()
        } else {
            format!("{start}-{}", cpus[i])
        });
        i += 1;
    }
    parts.join(",")
}

#[test]
fn each_cpu_count_runs_its_server_on_that_many_cpus_read_back() {
    let _engine = crate::support::engine_shared();
    cairn_testkit::mariadb_image();
    let cpus = usable();
    // 1 and every CPU there is (on a 1-CPU machine: only 1)
    let counts: Vec<usize> = if cpus.len() > 1 {
        vec![1, cpus.len()]
    } else {
        vec![1]
    };
    let mut counts_text: Vec<String> = counts.iter().map(usize::to_string).collect();
    // and a named set: the last CPU alone (the clients then run on the others)
    let last = *cpus.last().unwrap();
    if cpus.len() > 1 {
        counts_text.push(format!("last=\"{last}\""));
    }
    let sb = Sandbox::new();
    sb.write(
        "plan.kdl",
        &format!(
            r#"study "e2e-cpus"
import "{}"
server "s" {{ image "mariadb-bookworm"; option innodb_buffer_pool_size="64M" }}
dataset "sb" {{ sysbench tables=1 rows=200 }}
workload "native" {{ sysbench "oltp_point_select"; threads 1; duration "1s" }}
workload "external" {{ sysbench "oltp_point_select" tool="external"; threads 1; duration "1s" }}
trials "native" {{ servers "s"; dataset "sb"; workload "native"; cpus {} }}
trials "external" {{ servers "s"; dataset "sb"; workload "external"; cpus 1 }}
trials "together" {{ servers "s"; dataset "sb"; workload "native"; cpus 1 clients="with-server" }}
trials "together-external" {{ servers "s"; dataset "sb"; workload "external"; cpus 1 clients="with-server" }}
analysis "by-cpus" {{ trials "native"; table metric="tps" rows="server" columns="cpus" }}
{}"#,
            images(),
            counts_text.join(" "),
            // a scaling curve needs two counts
            if counts.len() > 1 {
                r#"analysis "scaling" { trials "native"; exclude cpus="last"; scaling metric="tps" x="cpus" }"#
            } else {
                ""
            }
        ),
    );
    let r = sb.cairn(["--json", "run", "plan.kdl"]).guard(GUARD).run();
    r.expect_code(0);
    // one snapshot for every count and both blocks
    let datasets: Vec<String> = r
        .events()
        .finished()
        .into_iter()
        .filter(|a| a.starts_with("dataset/"))
        .collect();
    assert_eq!(datasets, ["dataset/sb@s"], "{}", r.stderr);

    let native = |n: usize| {
        if counts.len() > 1 {
            format!("trial/native/s[cpus={n}]")
        } else {
            "trial/native/s".to_string()
        }
    };
    for &n in &counts {
        let address = native(n);
        let rec = sb.record(&address);
        let placed = &rec["extra"]["cpus"];
        eprintln!("{address}: {placed}");
        assert_eq!(rec["extra"]["params"]["cpus"], n, "{rec}");
        assert_eq!(rec["definition"]["cpus"], n, "{rec}");
        // the driver's parameters hold no `cpus`
        assert!(rec["definition"]["workload"]["params"]
            .get("cpus")
            .is_none());
        assert_eq!(placed["count"], n, "{placed}");
        // the server runs on the first n CPUs, as its process's affinity says
        let server = fmt(&cpus[..n]);
        assert_eq!(placed["server"], server.as_str(), "{placed}");
        assert_eq!(placed["server_affinity"], server.as_str(), "{placed}");
        // the clients (cairn's threads) on the rest, read back; shared when none are left
        let clients = if n < cpus.len() {
            fmt(&cpus[n..])
        } else {
            "shared".to_string()
        };
        assert_eq!(placed["clients"], clients.as_str(), "{placed}");
        assert_eq!(placed["clients_driver"], "cairn's threads", "{placed}");
        // server.json says the same
        let server_json: Value =
            serde_json::from_str(&sb.output_text(&address, "server.json")).expect("server.json");
        assert_eq!(&server_json["cpus"], placed, "{server_json}");
    }
    // the named set: the server on exactly its CPUs, the clients on the others
    if cpus.len() > 1 {
        let rec = sb.record("trial/native/s[cpus=last]");
        let placed = &rec["extra"]["cpus"];
        assert_eq!(rec["extra"]["params"]["cpus"], "last", "{rec}");
        assert_eq!(
            rec["definition"]["cpuset"],
            last.to_string().as_str(),
            "{rec}"
        );
        assert_eq!(
            placed["server_affinity"],
            last.to_string().as_str(),
            "{placed}"
        );
        assert_eq!(
            placed["clients"],
            fmt(&cpus[..cpus.len() - 1]).as_str(),
            "{placed}"
        );
    }
    // the external tool's container is pinned to the CPUs left over
    let rec = sb.record("trial/external/s");
    let placed = &rec["extra"]["cpus"];
    assert_eq!(
        placed["server_affinity"],
        fmt(&cpus[..1]).as_str(),
        "{placed}"
    );
    assert_eq!(
        placed["clients_driver"], "a container of the tool",
        "{placed}"
    );
    if cpus.len() > 1 {
        assert_eq!(placed["clients"], fmt(&cpus[1..]).as_str(), "{placed}");
    }

    // `clients="with-server"`: the clients pinned to the server's own CPU, both drivers
    let first = fmt(&cpus[..1]);
    for (address, driver) in [
        ("trial/together/s", "cairn's threads"),
        ("trial/together-external/s", "a container of the tool"),
    ] {
        let rec = sb.record(address);
        let placed = &rec["extra"]["cpus"];
        assert_eq!(rec["definition"]["clients_with_server"], true, "{rec}");
        assert_eq!(placed["server_affinity"], first.as_str(), "{placed}");
        assert_eq!(placed["clients"], first.as_str(), "{placed}");
        assert_eq!(placed["clients_driver"], driver, "{placed}");
    }

    // `cairn results` shows where each trial ran, read back, and the count as a column
    let table = sb.cairn(["results", "plan.kdl"]).guard(GUARD).run();
    table.expect_code(0);
    eprintln!("{}", table.stdout);
    assert!(table.stdout.contains("ran on cpus"), "{}", table.stdout);
    if cpus.len() > 1 {
        assert!(table.stdout.contains("cpus"), "{}", table.stdout);
        assert!(
            table
                .stdout
                .contains(&format!("{first} (clients {})", fmt(&cpus[1..]))),
            "{}",
            table.stdout
        );
        assert!(
            table
                .stdout
                .contains(&format!("{} (clients shared)", fmt(&cpus))),
            "{}",
            table.stdout
        );
    }
    let json = sb
        .cairn(["--json", "results", "plan.kdl"])
        .guard(GUARD)
        .run();
    json.expect_code(0);
    assert!(
        json.json_lines()
            .iter()
            .all(|l| l["cpus"]["server_affinity"].as_str().is_some()),
        "{}",
        json.stdout
    );
    // the count is a column of a table
    let t = sb
        .cairn(["cat", "plan.kdl", "analysis/by-cpus", "table.json"])
        .guard(GUARD)
        .run();
    t.expect_code(0);
    assert!(t.stdout.contains("cpus"), "{}", t.stdout);
    // a scaling curve over the count was drawn
    if counts.len() > 1 {
        assert!(
            r.events().finished().contains("analysis/scaling"),
            "{}",
            r.stderr
        );
    }
}

#[test]
fn check_refuses_a_count_the_machine_cannot_give_at_its_value() {
    let sb = Sandbox::new();
    sb.write(
        "plan.kdl",
        &format!(
            r#"study "e2e-cpus-check"
import "{}"
server "s" {{ image "mariadb-bookworm" }}
dataset "sb" {{ sysbench tables=1 rows=200 }}
workload "w" {{ sysbench "oltp_point_select"; threads 1; duration "1s" }}
trials "t" {{ servers "s"; dataset "sb"; workload "w"; cpus 1 4096 }}
"#,
            images()
        ),
    );
    let r = sb.cairn(["check", "plan.kdl"]).guard(GUARD).run();
    r.expect_code(2);
    assert!(
        r.stderr
            .contains("4096 CPUs are more than this machine gives cairn"),
        "{}",
        r.stderr
    );
    assert!(r.stderr.contains("plan.kdl:6:"), "{}", r.stderr);
}

#[test]
fn clients_tied_to_the_cores_are_tabled_and_claimed_by_the_core_count() {
    let cpus = usable();
    if cpus.len() < 2 {
        eprintln!("skipped: a tie of threads to cpus needs two CPU counts, this machine has one");
        return;
    }
    let _engine = crate::support::engine_shared();
    cairn_testkit::mariadb_image();
    let sb = Sandbox::new();
    sb.write(
        "plan.kdl",
        &format!(
            r#"study "e2e-cpus-tied"
import "{}"
server "small" {{ image "mariadb-bookworm"; option innodb_buffer_pool_size="64M" }}
server "big" {{ image "mariadb-bookworm"; option innodb_buffer_pool_size="96M" }}
dataset "sb" {{ sysbench tables=1 rows=200 }}
workload "w" {{ sysbench "oltp_point_select"; threads 1 2; duration "1s" }}
trials "per-cpu" {{
    servers "small" "big"
    dataset "sb"
    workload "w"
    cpus 1 2
    tie "threads" to="cpus"
}}
analysis "by-cores" {{ trials "per-cpu"; table metric="tps" columns="cpus" baseline="small" }}
claim "the bigger pool is no slower on two cores" {{
    trials "per-cpu"
    metric "tps"
    where cpus=2
    expect "big >= small" within="50%"
}}
report "summary" {{ analyses "by-cores" }}
"#,
            images()
        ),
    );
    let r = sb.cairn(["run", "plan.kdl"]).guard(GUARD).run();
    r.expect_code(0);
    // the tie measured two of the four points per server
    let rec = sb.record("trial/per-cpu/big[cpus=2,threads=2]");
    assert_eq!(rec["extra"]["params"]["threads"], 2, "{rec}");
    // the table is by cores, the client threads shown beside it
    let md = sb.output_text("analysis/by-cores", "table.md");
    assert!(md.contains("| server \\ cpus | 1 | 2 |"), "{md}");
    assert!(
        md.contains("`threads` follows `cpus`: 1 at 1, 2 at 2."),
        "{md}"
    );
    // the claim at two cores reads the trials at two threads, one per server
    let claim: Value = serde_json::from_str(&sb.output_text(
        "claim/the bigger pool is no slower on two cores",
        "claim.json",
    ))
    .expect("claim.json");
    assert_eq!(
        claim["point"],
        json!({"cpus": "2", "threads": "2"}),
        "{claim}"
    );
    for (side, server) in [("left_trials", "big"), ("right_trials", "small")] {
        let tied = sb.record(&format!("trial/per-cpu/{server}[cpus=2,threads=2]"));
        assert_eq!(claim[side], json!([tied["key"]]), "{claim}");
    }
}
