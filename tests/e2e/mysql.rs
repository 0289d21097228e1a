//! End-to-end: MySQL (Debian sid's `mysql-server`, `images/mysql.kdl`) as a server system
//! through the real `cairn` binary and real containers — a dataset loaded once and snapshot,
//! trials started from the snapshot running point_select and read_only natively and with the
//! image's own sysbench (`tool="external"`) over TCP, the socket and TLS, sysbench's counts
//! checked against the server's own statement counters, the variant checks (version, word
//! size, the allocator read from the memory map), and MySQL beside MariaDB in one trials node,
//! side by side in `cairn results`; super-smack and sql-bench on MySQL; a host `mysqld` that
//! is not MySQL's refused for the process executor; and the client's declared network path
//! (loopback, bridge, host, an emulated link), taken by native and external drivers alike.

use std::path::Path;
use std::sync::RwLockReadGuard;
use std::time::Duration;

use serde_json::Value;

use crate::support::{engine_shared, Ran, Sandbox};
use crate::trials::{containers_of, networks_of};

/// A hang guard for invocations that start servers (never a timing).
const GUARD: Duration = Duration::from_secs(900);

fn recipe(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("images")
        .join(name)
        .display()
        .to_string()
}

/// Both shared images exist before the test's cairn needs them.
fn images_ready() -> RwLockReadGuard<'static, ()> {
    let engine = engine_shared();
    cairn_testkit::mariadb_image();
    cairn_testkit::mysql_image();
    engine
}

fn cairn(sb: &Sandbox, args: &[&str]) -> Ran {
    sb.cairn(args.iter().copied()).guard(GUARD).run()
}

/// A JSON output of a step.
fn cat(sb: &Sandbox, step: &str, file: &str) -> Value {
    let out = cairn(sb, &["cat", "plan.kdl", step, file]);
    out.expect_code(0);
    serde_json::from_str(&out.stdout).unwrap_or_else(|e| panic!("{step} {file}: {e}"))
}

fn plan() -> String {
    format!(
        r#"study "e2e-mysql"
import "{mariadb}"
import "{mysql}"
server "mysql" {{
    image "mysql-sid"
    system "mysql"
    // the smallest redo log keeps the snapshot small
    option innodb_buffer_pool_size="64M" max_connections=50 innodb_redo_log_capacity="8M"
}}
server "mysql-sock" {{ extends "mysql"; connect "socket"; allocator "jemalloc" }}
server "mysql-tls" {{ extends "mysql"; connect "tls" }}
server "mariadb" {{ image "mariadb-bookworm"; option innodb_buffer_pool_size="64M" }}
dataset "sb" {{ sysbench tables=1 rows=1000 }}
workload "ps" {{ sysbench "oltp_point_select"; threads 2; duration "2s" }}
workload "ro" {{ sysbench "oltp_read_only"; threads 2; duration "2s" }}
workload "ps-ext" {{ sysbench "oltp_point_select" tool="external"; threads 2; duration "2s" }}
workload "ro-ext" {{ sysbench "oltp_read_only" tool="external"; threads 2; duration "2s" }}
trials "ps" {{ servers "mysql" "mariadb"; dataset "sb"; workload "ps" }}
trials "ro" {{ servers "mysql" "mysql-sock" "mysql-tls"; dataset "sb"; workload "ro" }}
trials "ps-ext" {{ servers "mysql"; dataset "sb"; workload "ps-ext" }}
trials "ro-ext" {{ servers "mysql" "mysql-sock" "mysql-tls"; dataset "sb"; workload "ro-ext" }}
"#,
        mariadb = recipe("mariadb.kdl"),
        mysql = recipe("mysql.kdl"),
    )
}

#[test]
fn mysql_runs_native_and_external_sysbench_from_a_snapshot_beside_mariadb() {
    let _engine = images_ready();
    let sb = Sandbox::new();
    sb.write("plan.kdl", &plan());
    let r = cairn(&sb, &["--json", "run", "plan.kdl"]);
    r.expect_code(0);
    let ev = r.events();
    let finished = ev.finished();
    for step in [
        "dataset/sb@mysql",
        "trial/ps/mysql",
        "trial/ps/mariadb",
        "trial/ro/mysql",
        "trial/ro/mysql-sock",
        "trial/ro/mysql-tls",
        "trial/ps-ext/mysql",
        "trial/ro-ext/mysql",
        "trial/ro-ext/mysql-sock",
        "trial/ro-ext/mysql-tls",
    ] {
        assert!(finished.contains(step), "{step} ran: {finished:?}");
    }

    // every MySQL trial ran on the MySQL server it claims, started from the dataset's snapshot
    for (step, preloaded) in [
        ("trial/ro/mysql", None),
        ("trial/ro/mysql-sock", Some("libjemalloc")),
        ("trial/ro-ext/mysql-tls", None),
    ] {
        let rec = sb.record(step);
        let v = &rec["extra"]["variant"]["checks"];
        let version = v["version"].as_str().unwrap();
        assert!(
            version.starts_with(|c: char| c.is_ascii_digit()) && !version.contains("MariaDB"),
            "{step}: {v}"
        );
        assert_eq!(v["process_name"], "mysqld", "{v}");
        assert_eq!(v["word_size"], 64, "{v}");
        assert_eq!(v["compile_machine"], "x86_64", "{v}");
        // MySQL has no @@version_malloc_library: the allocator comes from the memory map.
        // Debian's mysqld links tcmalloc itself: its "system" allocator
        let malloc = v["malloc_library"].as_str().unwrap();
        assert!(
            malloc.starts_with("libtcmalloc (linked)") && malloc.ends_with("(from the memory map)"),
            "{step}: {v}"
        );
        match preloaded {
            Some(lib) => assert!(malloc.contains(&format!("{lib} (loaded)")), "{v}"),
            None => assert!(!malloc.contains("loaded"), "{v}"),
        }
    }
    let maria = sb.record("trial/ps/mariadb");
    assert!(maria["extra"]["variant"]["checks"]["version"]
        .as_str()
        .unwrap()
        .contains("MariaDB"));

    // sysbench's counts are what the server executed: native and external, every connect mode
    for (step, selects_per_query) in [
        ("trial/ps/mysql", 1.0),
        ("trial/ps-ext/mysql", 1.0),
        ("trial/ro/mysql", 14.0 / 16.0),
        ("trial/ro/mysql-sock", 14.0 / 16.0),
        ("trial/ro/mysql-tls", 14.0 / 16.0),
        ("trial/ro-ext/mysql", 14.0 / 16.0),
        ("trial/ro-ext/mysql-sock", 14.0 / 16.0),
        ("trial/ro-ext/mysql-tls", 14.0 / 16.0),
    ] {
        let f = &sb.record(step)["extra"]["figures"];
        let queries = f["queries"].as_f64().unwrap();
        assert!(
            queries > 0.0 && f["tps"].as_f64().unwrap() > 0.0,
            "{step}: {f}"
        );
        assert_eq!(f["errors"], 0.0, "{step}: {f}");
        let server = cat(&sb, step, "server.json");
        let deltas = &server["status_deltas"];
        let selects = deltas["Com_select"].as_f64().unwrap();
        assert!(
            selects >= queries * selects_per_query,
            "{step}: the server counted {selects} SELECTs for sysbench's {queries} queries: {deltas}"
        );
        if step.ends_with("-tls") {
            let accepts = deltas["Ssl_accepts"].as_f64().unwrap_or(0.0);
            assert!(accepts >= 2.0, "{step}: Ssl_accepts {accepts}: {deltas}");
            // the server's view of a connection of cairn's native client
            let version = server["tls"]["Ssl_version"].as_str().unwrap_or("");
            assert!(version.starts_with("TLSv1."), "{step}: {server}");
        } else {
            assert!(server.get("tls").is_none(), "{step}: {server}");
        }
    }
    // the external tool reached the server the way each server's `connect` says
    for (step, want) in [
        ("trial/ro-ext/mysql", "--mysql-host="),
        (
            "trial/ro-ext/mysql-sock",
            "--mysql-socket=/run/cairn/mysqld.sock",
        ),
        ("trial/ro-ext/mysql-tls", "--mysql-ssl=on"),
    ] {
        let m = cat(&sb, step, "metrics.json");
        let argv = m["tool"]["argv"].as_array().unwrap();
        assert!(
            argv.iter().any(|a| a.as_str().unwrap().starts_with(want)),
            "{step}: {argv:?}"
        );
    }

    // MySQL and MariaDB side by side
    let table = cairn(&sb, &["results", "plan.kdl"]);
    table.expect_code(0);
    let ps_rows: Vec<&str> = table
        .stdout
        .lines()
        .filter(|l| l.contains("ps") && !l.contains("ps-ext"))
        .collect();
    assert!(
        ps_rows.iter().any(|l| l.contains("mysql"))
            && ps_rows.iter().any(|l| l.contains("mariadb")),
        "{}",
        table.stdout
    );
    let json = sb
        .cairn(["--json", "results", "plan.kdl"])
        .guard(GUARD)
        .run();
    let rows = json.json_lines();
    assert_eq!(rows.len(), 9, "{}", json.stdout);
    eprintln!("{}", table.stdout);

    let pid = r.pid.unwrap();
    assert!(containers_of(pid).is_empty(), "{:?}", containers_of(pid));
    assert!(networks_of(pid).is_empty(), "{:?}", networks_of(pid));
}

#[test]
fn an_unknown_system_is_refused_at_check_at_its_place() {
    let sb = Sandbox::new();
    sb.write(
        "plan.kdl",
        &format!(
            r#"study "e2e-mysql-bad"
import "{}"
server "s" {{ image "mysql-sid"; system "oracle" }}
dataset "sb" {{ sysbench tables=1 rows=10 }}
workload "ps" {{ sysbench "oltp_point_select"; duration "1s" }}
trials "t" {{ servers "s"; dataset "sb"; workload "ps" }}
"#,
            recipe("mysql.kdl")
        ),
    );
    let r = cairn(&sb, &["check", "plan.kdl"]);
    r.expect_code(2);
    assert!(
        r.stderr.contains("invalid system `oracle`")
            && r.stderr.contains("allowed values: `mariadb`, `mysql`"),
        "{}",
        r.stderr
    );
    assert!(
        r.stderr.contains("system \"oracle\"") && r.stderr.contains("not a known system"),
        "the span: {}",
        r.stderr
    );
}

/// The client's network path, declared per server: native and external sysbench take the
/// same one — loopback in the server's network namespace, another container on the bridge,
/// the host, an emulated link — and each trial records it; `cairn results` shows it. A
/// loopback client reaches the server at 127.0.0.1, which only the server's own network
/// namespace answers (nothing listens there on the host or in another container), so a
/// loopback trial that measured is one that ran there.
#[test]
fn native_and_external_clients_take_the_declared_network_path() {
    let _engine = engine_shared();
    cairn_testkit::mariadb_image();
    let sb = Sandbox::new();
    sb.write(
        "plan.kdl",
        &format!(
            r#"study "e2e-netpath"
import "{}"
server "loop" {{ image "mariadb-bookworm"; option innodb_buffer_pool_size="64M"; client "loopback" }}
server "bridge" {{ extends "loop"; client "bridge" }}
server "host" {{ extends "loop"; client "host" }}
server "link" {{ extends "loop"; client "bridge"; link rate="100mbit" }}
dataset "sb" {{ sysbench tables=1 rows=1000 }}
workload "native" {{ sysbench "oltp_point_select"; threads 2; duration "1s" }}
workload "external" {{ sysbench "oltp_point_select" tool="external"; threads 2; duration "1s" }}
trials "native" {{ servers "loop" "bridge" "host" "link"; dataset "sb"; workload "native" }}
trials "external" {{ servers "loop" "bridge" "link"; dataset "sb"; workload "external" }}
"#,
            recipe("mariadb.kdl")
        ),
    );
    let r = cairn(&sb, &["--json", "run", "plan.kdl"]);
    r.expect_code(0);
    // where a client runs does not change the data: one dataset for the four servers
    let loads = r
        .events()
        .of("step_finished")
        .into_iter()
        .filter(|e| e["kind"] == "dataset")
        .count();
    assert!(loads >= 1, "{}", r.stdout);
    for (server, path, native, external) in [
        (
            "loop",
            "loopback",
            "cairn's threads in the server container's network namespace, over TCP to 127.0.0.1",
            Some("a container sharing the server container's network namespace, over TCP to 127.0.0.1"),
        ),
        (
            "bridge",
            "bridge",
            "cairn's threads in another container's network namespace on cairn-",
            Some("another container on cairn-"),
        ),
        (
            "host",
            "host",
            "cairn's threads on the host, over TCP to the container's address",
            None,
        ),
        (
            "link",
            "bridge",
            "cairn's threads in another container's network namespace on cairn-",
            Some("another container on cairn-"),
        ),
    ] {
        let rec = sb.record(&format!("trial/native/{server}"));
        let c = &rec["extra"]["client"];
        assert_eq!(c["path"], path, "{c}");
        assert_eq!(c["driver"], "native", "{c}");
        assert!(c["place"].as_str().unwrap().starts_with(native), "{c}");
        assert!(rec["extra"]["figures"]["queries"].as_f64().unwrap() > 0.0);
        if let Some(external) = external {
            let step = format!("trial/external/{server}");
            let rec = sb.record(&step);
            let c = &rec["extra"]["client"];
            assert_eq!((c["path"].as_str(), c["driver"].as_str()), (Some(path), Some("external")), "{c}");
            assert!(c["place"].as_str().unwrap().starts_with(external), "{c}");
            let argv = cat(&sb, &step, "metrics.json")["tool"]["argv"].clone();
            let host = argv
                .as_array()
                .unwrap()
                .iter()
                .filter_map(|a| a.as_str()?.strip_prefix("--mysql-host="))
                .next()
                .unwrap()
                .to_string();
            assert_eq!(host == "127.0.0.1", path == "loopback", "{step}: {argv}");
        }
        if server == "link" {
            assert_eq!(c["link"]["rate"], "100mbit", "{c}");
        }
    }
    let table = cairn(&sb, &["results", "plan.kdl"]);
    table.expect_code(0);
    let header = table.stdout.lines().next().unwrap();
    assert!(
        header.split_whitespace().nth(2) == Some("client"),
        "{}",
        table.stdout
    );
    assert!(table.stdout.contains("bridge 100mbit"), "{}", table.stdout);
    let pid = r.pid.unwrap();
    assert!(
        containers_of(pid).is_empty(),
        "netns holders removed too: {:?}",
        containers_of(pid)
    );
    assert!(networks_of(pid).is_empty(), "{:?}", networks_of(pid));
}

#[test]
fn a_link_where_clients_cross_no_network_is_refused_at_check() {
    let sb = Sandbox::new();
    sb.write(
        "plan.kdl",
        &format!(
            r#"study "e2e-netpath-bad"
import "{}"
server "s" {{ image "mariadb-bookworm"; client "loopback"; link rate="10mbit" }}
dataset "sb" {{ sysbench tables=1 rows=10 }}
workload "ps" {{ sysbench "oltp_point_select"; duration "1s" }}
trials "t" {{ servers "s"; dataset "sb"; workload "ps" }}
"#,
            recipe("mariadb.kdl")
        ),
    );
    let r = cairn(&sb, &["check", "plan.kdl"]);
    r.expect_code(2);
    assert!(
        r.stderr
            .contains("loopback clients do not cross the server's network interface"),
        "{}",
        r.stderr
    );
    assert!(r.stderr.contains("link rate="), "the span: {}", r.stderr);
    sb.write(
        "plan.kdl",
        &sb.read("plan.kdl").replace(
            "client \"loopback\"; link rate=\"10mbit\"",
            "link rate=\"fast\"",
        ),
    );
    let r = cairn(&sb, &["check", "plan.kdl"]);
    r.expect_code(2);
    assert!(r.stderr.contains("is not a rate"), "{}", r.stderr);
}

/// super-smack and sql-bench, cairn's native ports, against MySQL 9 (tiny sizes): both
/// drivers log in with `caching_sha2_password`, and sql-bench's SQL is MySQL's dialect too;
/// each trial's figures are its own (super-smack's queries are clients × rounds × its two
/// statements; sql-bench's seconds per test).
#[test]
fn smack_and_sqlbench_trials_run_on_mysql() {
    let _engine = images_ready();
    let sb = Sandbox::new();
    sb.write(
        "plan.kdl",
        &format!(
            r#"study "e2e-mysql-drivers"
import "{}"
server "mysql" {{
    image "mysql-sid"
    system "mysql"
    option innodb_buffer_pool_size="64M" innodb_redo_log_capacity="8M"
}}
dataset "auth" {{ smack rows=500 }}
workload "select-index" {{ smack "select_index"; clients 2; rounds 50 }}
workload "suite" {{ sqlbench "all"; scale "small" }}
trials "smack" {{ servers "mysql"; dataset "auth"; workload "select-index" }}
trials "sqlbench" {{ servers "mysql"; workload "suite" }}
"#,
            recipe("mysql.kdl")
        ),
    );
    let r = cairn(&sb, &["--json", "run", "plan.kdl"]);
    r.expect_code(0);
    let finished = r.events().finished();
    for step in ["trial/smack/mysql", "trial/sqlbench/mysql"] {
        assert!(
            finished.contains(step),
            "{step} ran: {finished:?}\n{}",
            r.stderr
        );
        let v = &sb.record(step)["extra"]["variant"]["checks"];
        assert_eq!(v["process_name"], "mysqld", "{step}: {v}");
    }
    let f = &sb.record("trial/smack/mysql")["extra"]["figures"];
    assert_eq!(
        f["queries"], 200.0,
        "2 clients × 50 rounds × 2 queries: {f}"
    );
    assert!(f["qps"].as_f64().unwrap() > 0.0, "{f}");
    let f = &sb.record("trial/sqlbench/mysql")["extra"]["figures"];
    for t in ["insert_s", "select_s", "wisconsin_s", "total_s"] {
        assert!(f[t].as_f64().is_some_and(|s| s > 0.0), "{t}: {f}");
    }
    let pid = r.pid.unwrap();
    assert!(containers_of(pid).is_empty(), "{:?}", containers_of(pid));
}

/// `executor "process"` with `system "mysql"` needs MySQL's `mysqld` on the host. Debian 12
/// ships no MySQL, and sid's `mysql-server-core` conflicts with the `mariadb-server-core`
/// that scripts/setup.sh installs for the host MariaDB test — whose `/usr/sbin/mysqld` is a
/// link to `mariadbd`. So on such a host `cairn check` and `cairn run` refuse the plan
/// (exit 2) naming the binary and what it is, at the server's `executor`, before anything
/// starts; a host without any `mysqld` is told what to install.
#[test]
fn a_host_mysql_that_is_not_there_is_refused_at_check_naming_the_binary() {
    // where cairn looks: PATH, then the sbin directories
    let path = std::env::var_os("PATH").unwrap_or_default();
    let mysqld = std::env::split_paths(&path)
        .chain(["/usr/sbin", "/usr/local/sbin", "/sbin"].map(std::path::PathBuf::from))
        .map(|d| d.join("mysqld"))
        .find(|p| p.is_file());
    let version = mysqld.as_ref().map(|p| {
        let out = std::process::Command::new(p)
            .arg("--version")
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    });
    let want = match (&mysqld, &version) {
        (None, _) => "no `mysqld` on this host: install Debian's mysql-server-core".to_string(),
        (Some(p), Some(v)) if v.contains("MariaDB") => {
            format!("`{}`", p.display())
        }
        _ => {
            eprintln!("this host has MySQL's mysqld: nothing to refuse");
            return;
        }
    };
    let sb = Sandbox::new();
    sb.write(
        "plan.kdl",
        r#"study "e2e-host-mysql"
server "host" {
    executor "process"
    system "mysql"
    connect "socket"
}
dataset "sb" { sysbench tables=1 rows=10 }
workload "ps" { sysbench "oltp_point_select"; duration "1s" }
trials "t" { servers "host"; dataset "sb"; workload "ps" }
"#,
    );
    for cmd in ["check", "run"] {
        let r = cairn(&sb, &[cmd, "plan.kdl"]);
        r.expect_code(2);
        // the message as one line (the report wraps it)
        let text = r
            .stderr
            .lines()
            .map(|l| l.trim().trim_start_matches('│').trim())
            .collect::<Vec<_>>()
            .join(" ");
        assert!(text.contains(&want), "{cmd}: {}", r.stderr);
        if mysqld.is_some() {
            assert!(
                text.contains("is MariaDB's server") && text.contains("not MySQL's"),
                "{cmd}: {}",
                r.stderr
            );
        }
        assert!(
            r.stderr.contains("executor \"process\""),
            "the span: {}",
            r.stderr
        );
    }
    assert!(sb.records_of("trial/t/host").is_empty());
    assert!(sb.records_of("dataset/sb@host").is_empty());
}
