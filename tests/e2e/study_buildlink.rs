//! End-to-end: the build-and-link study (`plans/build-and-link.kdl`, after the MySQL manual's
//! "how compiling and linking affects the speed of MySQL") at its `tiny` scale, in a sandbox:
//! the connection paths only — Unix socket, TCP on loopback, TCP from another container,
//! the same over an emulated 100 Mbit/s link, TLS — on Debian's MariaDB, sql-bench with the
//! same connect counts everywhere, 2 passes each. The scale imports no build, so no source
//! build is planned; the report holds the seed-shaped table (the suite's seconds per path
//! against the socket) and every path claim with an honest verdict: with 2 passes nothing
//! can be decided, and each claim says so and why.

use std::path::Path;
use std::time::Duration;

use crate::support::{engine_shared, Sandbox};

/// A hang guard for the run (never a timing).
const GUARD: Duration = Duration::from_secs(900);

/// The seed's claims `tiny` measures, by the plan's names.
const CLAIMS: [&str; 3] = [
    "TCP/IP is 7.5% slower than the Unix socket on the same computer",
    "TCP/IP from another computer over 100 Mbit/s Ethernet is 8 to 11% slower",
    "encrypted (SSL) connections are 55% slower",
];

/// The shipped plan and the image recipes, laid out as in the repository.
fn sandbox_with_the_study() -> Sandbox {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let sb = Sandbox::new();
    sb.copy_tree(&root.join("images"), "images");
    sb.write(
        "plans/build-and-link.kdl",
        &std::fs::read_to_string(root.join("plans/build-and-link.kdl")).unwrap(),
    );
    sb
}

#[test]
fn the_tiny_scale_plans_no_source_build_and_every_scale_checks() {
    let sb = sandbox_with_the_study();
    for scale in ["tiny", "paths", "published"] {
        sb.cairn(["check", "plans/build-and-link.kdl", "--set"])
            .args([format!("scale={scale}")])
            .success();
    }
    let tiny = sb.plan_json_with("plans/build-and-link.kdl", &["--set", "scale=tiny"]);
    let images: Vec<&str> = tiny
        .iter()
        .filter_map(|s| s["address"].as_str())
        .filter(|a| a.starts_with("image/"))
        .collect();
    assert_eq!(images, ["image/mariadb-bookworm"], "{tiny:?}");
    let published = sb.plan_json_with("plans/build-and-link.kdl", &[]);
    for build in ["o2", "o3", "omit-fp", "debug", "static", "stripped"] {
        // the build is each image's first layer (their Debian base is one shared step)
        let image = format!("image/mariadb-src-{build}/1");
        assert!(
            published
                .iter()
                .any(|s| s["address"].as_str() == Some(image.as_str())),
            "{image}'s build at the published scale"
        );
    }
}

#[test]
fn the_tiny_scale_runs_end_to_end_into_the_seed_shaped_report() {
    let _engine = engine_shared();
    cairn_testkit::mariadb_image();
    let sb = sandbox_with_the_study();
    let run = sb
        .cairn(["run", "plans/build-and-link.kdl", "--set", "scale=tiny"])
        .guard(GUARD)
        .run();
    run.expect_code(0);
    let dir = sb.results().join("build-and-link");
    let md = std::fs::read_to_string(dir.join("report.md")).unwrap();

    // the seed's list for the paths: the suite's seconds per path, each against the socket
    assert!(md.contains("### paths: `total_s` (s)"), "{md}");
    for path in ["tcp", "bridge", "lan100", "tls"] {
        let row = md
            .lines()
            .find(|l| l.starts_with(&format!("| {path} | ×")))
            .unwrap_or_else(|| panic!("{path}'s ratio to the socket in\n{md}"));
        assert!(row.contains("**"), "a verdict in {row}");
    }
    // the design says what tells the TCP paths apart, not only `connect`
    assert!(
        md.contains("link: socket = `(unset)`") && md.contains("lan100 = `rate 100mbit`"),
        "{md}"
    );
    assert!(md.contains("client: socket = `(unset)`, tcp = `loopback`, bridge = `bridge`"));

    // every claim, with a verdict and its reason: 2 passes cannot decide
    let data: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("data.json")).unwrap()).unwrap();
    for claim in CLAIMS {
        let c = &data["claims"][claim];
        assert_eq!(c["verdict"], "inconclusive", "{claim}: {c}");
        assert!(
            c["reason"].as_str().unwrap().contains("too few passes"),
            "{claim}: {c}"
        );
        assert!(
            md.contains(&format!("Claim \"{claim}\": **inconclusive**")),
            "{claim}"
        );
        assert!(run.stdout.contains(claim), "{claim} in\n{}", run.stdout);
    }
    // the band is written as the seed's number, not a float's digits
    assert!(md.contains("about 55% ± 27.5%"), "{md}");
}
