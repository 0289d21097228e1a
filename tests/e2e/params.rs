//! End-to-end: plan parameters. `--set` changes what `check` and `plan` see (step counts,
//! keys), a default and the same value given explicitly are one plan, bad `--set`s exit 2
//! naming the flag, and a bundle records the values it was made with for `verify`.

use crate::support::{contains, Sandbox};

const PLAN: &str = r#"study "scaled"
param "scale" default="tiny" { values "tiny" "published" }
param "n" default="1 2"
step "gen" { run "echo ${scale} > out.txt"; output "out.txt"; matrix { n "${n}" } }
"#;

/// The 12-character key `cairn plan` prints for `address`.
fn key_of(plan_output: &str, address: &str) -> String {
    let line = plan_output
        .lines()
        .find(|l| l.split_whitespace().nth(1) == Some(address))
        .unwrap_or_else(|| panic!("no {address} in\n{plan_output}"));
    line.split_whitespace().nth(2).expect("a key").to_string()
}

#[test]
fn set_changes_the_steps_and_keys_a_plan_resolves_to() {
    let sb = Sandbox::new();
    sb.write("p.kdl", PLAN);
    sb.cairn(["check", "p.kdl"])
        .stdout(contains("2 steps"))
        .stdout(contains(
            "parameters: scale = tiny (default), n = 1 2 (default)",
        ))
        .success();
    sb.cairn([
        "check",
        "p.kdl",
        "--set",
        "n=1 2 4 8",
        "--set",
        "scale=published",
    ])
    .stdout(contains("4 steps"))
    .stdout(contains("scale = published (--set), n = 1 2 4 8 (--set)"))
    .success();

    let default = sb.cairn(["plan", "p.kdl"]).success().stdout;
    let explicit = sb
        .cairn(["plan", "p.kdl", "--set", "scale=tiny"])
        .success()
        .stdout;
    let published = sb
        .cairn(["plan", "p.kdl", "--set", "scale=published"])
        .success()
        .stdout;
    assert_eq!(key_of(&default, "gen[n=1]"), key_of(&explicit, "gen[n=1]"));
    assert_ne!(key_of(&default, "gen[n=1]"), key_of(&published, "gen[n=1]"));
}

#[test]
fn a_bad_set_exits_2_naming_the_flag_and_the_parameters() {
    let sb = Sandbox::new();
    sb.write("p.kdl", PLAN);
    sb.cairn(["check", "p.kdl", "--set", "scael=published"])
        .stderr(contains(
            "`--set scael=published`: the plan declares no parameter `scael`",
        ))
        .stderr(contains("`scale` (`tiny`, `published`)"))
        .code(2);
    sb.cairn(["plan", "p.kdl", "--set", "scale=huge"])
        .stderr(contains(
            "`--set scale=huge`: `huge` is not one of the values",
        ))
        .code(2);
    sb.cairn(["run", "p.kdl", "--set", "scale"])
        .stderr(contains("is not NAME=VALUE"))
        .code(2);
}

#[test]
fn a_bundle_records_the_values_it_was_made_with() {
    let sb = Sandbox::new();
    sb.write("p.kdl", PLAN);
    sb.cairn(["run", "p.kdl", "--set", "scale=published"])
        .stderr(contains("parameters: scale = published (--set)"))
        .success();
    sb.cairn([
        "bundle",
        "p.kdl",
        "-o",
        "s.tar.zst",
        "--set",
        "scale=published",
    ])
    .success();
    // verify reads the plan with the bundle's values: its keys are the published ones
    sb.cairn(["verify", "s.tar.zst"])
        .stdout(contains("bundle is intact"))
        .success();
    let dir = sb.path().join("unpacked");
    std::fs::create_dir_all(&dir).unwrap();
    let file = std::fs::File::open(sb.path().join("s.tar.zst")).unwrap();
    let decoder = ruzstd::decoding::StreamingDecoder::new(std::io::BufReader::new(file)).unwrap();
    tar::Archive::new(decoder).unpack(&dir).unwrap();
    let manifest: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("bundle.json")).unwrap()).unwrap();
    assert_eq!(
        manifest["params"],
        serde_json::json!({"scale": "published", "n": "1 2"})
    );
}
