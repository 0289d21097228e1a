//! End-to-end: a real trial records what its server spent per query in the measured window — server CPU and context switches read through the runtime (a container's cgroup, a host process's `/proc`) — beside the driver's client CPU per query and the machine's other work, for the native driver, the external sysbench tool and the process executor; `cairn results` shows the figures and a `table` analysis reads them.

use std::time::Duration;

use serde_json::Value;

use crate::support::{engine_shared, Sandbox};
use crate::trials::images;

/// A hang guard for invocations that start servers (never a timing).
const GUARD: Duration = Duration::from_secs(600);

/// Whether `address`'s window began late because this (loaded) machine ran the warmup timer
/// late: then its record says so and has no figures, which is the honest outcome.
fn read_late(sb: &Sandbox, address: &str) -> bool {
    let rec = sb.record(address);
    let e = &rec["extra"]["efficiency"];
    let late = e["absent"]
        .as_str()
        .is_some_and(|a| a.contains("did not run its timer in time"));
    if late {
        assert!(
            rec["extra"]["figures"].get("server_cpu_s").is_none(),
            "{rec}"
        );
        eprintln!("{address}: the machine ran the window's timer late: {e}");
    }
    late
}

/// The efficiency figures of `address`'s record are there and positive; its record's
/// `efficiency` (returned) says where they came from.
fn efficient(sb: &Sandbox, address: &str) -> Value {
    let rec = sb.record(address);
    let f = &rec["extra"]["figures"];
    for name in [
        "server_cpu_s",
        "server_cpu_us_per_query",
        "ctx_switches_per_query",
        "client_cpu_ms_per_1k_queries",
    ] {
        let v = f[name].as_f64().unwrap_or(0.0);
        assert!(
            v > 0.0,
            "{address} {name}: {f} {}",
            rec["extra"]["efficiency"]
        );
    }
    let e = rec["extra"]["efficiency"].clone();
    eprintln!("{address} efficiency: {e}");
    // the machine beside the server: its CPUs read, the other work's share a percentage
    let other = f["other_cpu_pct"].as_f64().unwrap_or(-1.0);
    assert!((0.0..=100.0).contains(&other), "{address}: {f} {e}");
    assert!(e["machine"]["cpus"].as_u64().unwrap_or(0) >= 1, "{e}");
    assert!(e["machine"]["busy_s"].as_f64().unwrap() > 0.0, "{e}");
    assert_eq!(e["queries_from"], "Questions", "{address}: {e}");
    assert!(e["queries"].as_f64().unwrap() > 0.0, "{e}");
    // no hardware counters are read: the record says why
    assert!(
        e["instructions_per_query"]["absent"].as_str().is_some(),
        "{e}"
    );
    e
}

#[test]
fn trials_record_server_and_client_cpu_and_switches_per_query() {
    let _engine = engine_shared();
    cairn_testkit::mariadb_image();
    let sb = Sandbox::new();
    sb.write(
        "plan.kdl",
        &format!(
            r#"study "e2e-efficiency"
import "{}"
server "s" {{ image "mariadb-bookworm"; option innodb_buffer_pool_size="64M" }}
dataset "sb" {{ sysbench tables=1 rows=500 }}
workload "native" {{ sysbench "oltp_read_only"; threads 2; duration "2s"; warmup "1s" }}
workload "external" {{ sysbench "oltp_read_only" tool="external"; threads 2; duration "2s"; warmup "1s" }}
trials "native" {{ servers "s"; dataset "sb"; workload "native" }}
trials "external" {{ servers "s"; dataset "sb"; workload "external" }}
analysis "cpu" {{ table metric="server_cpu_us_per_query" rows="server" columns="trials" baseline="s" }}
"#,
            images()
        ),
    );
    let r = sb.cairn(["run", "plan.kdl"]).guard(GUARD).run();
    let addresses = ["trial/native/s", "trial/external/s"];
    // a reading the machine let come late is said, not measured (its timer runs real-time
    // where it may, so this is rare); the table then refuses the cell it lacks
    let late = addresses.iter().filter(|a| read_late(&sb, a)).count();
    assert!(late < addresses.len(), "both windows began late");
    if late > 0 {
        r.expect_code(1);
        assert!(
            r.stderr.contains("recorded no `server_cpu_us_per_query`"),
            "{}",
            r.stderr
        );
        return;
    }
    r.expect_code(0);
    for address in addresses {
        if read_late(&sb, address) {
            continue;
        }
        let e = efficient(&sb, address);
        // a container's CPU is its cgroup's where this host lets us read it
        let from = e["server"]["cpu_from"].as_str().unwrap();
        assert!(from == "cgroup" || from == "proc", "{e}");
        assert_eq!(e["window"]["from"], "warmup end (by the clock)", "{e}");
        // root may run the window's timer real-time (the tests run as root here)
        assert!(e["window"]["timer"].as_str().is_some(), "{e}");
        // an external tool's CPU is the client's, not other work; a native driver's is cairn's
        let tool = &e["machine"]["external_client_s"];
        if address.contains("external") {
            assert!(tool.as_f64().unwrap() > 0.0, "{e}");
        } else {
            assert!(tool.is_null(), "{e}");
        }
    }
    let table = sb.cairn(["results", "plan.kdl"]).guard(GUARD).run();
    table.expect_code(0);
    assert!(
        table.stdout.contains("server_cpu_us_per_query")
            && table.stdout.contains("ctx_switches_per_query"),
        "{}",
        table.stdout
    );
    let t = sb
        .cairn(["cat", "plan.kdl", "analysis/cpu", "table.json"])
        .guard(GUARD)
        .run();
    t.expect_code(0);
    assert!(t.stdout.contains("server_cpu_us_per_query"), "{}", t.stdout);
}

#[test]
fn the_process_executor_reads_its_host_servers_proc() {
    let sb = Sandbox::new();
    sb.write(
        "plan.kdl",
        r#"study "e2e-efficiency-process"
server "host" {
    executor "process"
    option innodb_buffer_pool_size="64M" innodb_log_file_size="16M"
    connect "socket"
}
dataset "sb" { sysbench tables=1 rows=300 }
workload "ps" { sysbench "oltp_point_select"; threads 2; duration "1s" }
trials "t" { servers "host"; dataset "sb"; workload "ps" }
"#,
    );
    let r = sb.cairn(["run", "plan.kdl"]).guard(GUARD).run();
    r.expect_code(0);
    let e = efficient(&sb, "trial/t/host");
    assert_eq!(e["server"]["cpu_from"], "proc", "{e}");
    assert_eq!(e["window"]["from"], "workload start", "{e}");
}
