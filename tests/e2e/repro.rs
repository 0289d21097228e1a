//! End-to-end: reproduction workflows. A tiny real study (two MariaDB servers in Docker,
//! rows=500, 1 s runs, 2 passes) is bundled, verified, altered in every way a bundle can
//! be (a flipped byte in a blob, a deleted record, a foreign file — each named with what it
//! breaks, and reproduce refuses), and reproduced under a second, simulated fingerprint:
//! every trial re-runs and the comparison reports the effect (jemalloc against system),
//! the claim's verdict on both sides and the absolute cells, in that order. Hostile archives
//! (`../`, links, a decompression bomb) are refused; a host `step` does not run without
//! the flag; `gc` keeps another machine's trials; an image rebuilt with the same packages
//! changes no record and re-runs nothing downstream; a reproduction stopped by a signal to
//! it alone stops its run first.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::support::{engine_shared, Sandbox};

/// A hang guard for invocations that start servers or build images (never a timing).
const GUARD: Duration = Duration::from_secs(900);

const SIMULATED: &str = r#"{"cpu_model":"Simulated CPU for reproduction"}"#;

fn study_plan() -> String {
    // the bundle holds only files under the plan's directory: the recipe is copied beside it
    r#"study "e2e-repro"
import "mariadb.kdl"
server "system" {
    image "mariadb-bookworm"
    option innodb_buffer_pool_size="64M" max_connections=50 skip-name-resolve=#true
    connect "tcp"
}
server "jemalloc" { extends "system"; allocator "jemalloc" }
dataset "sb" { sysbench tables=1 rows=500 }
workload "ps" {
    sysbench "oltp_point_select"
    threads 2
    duration "1s"
}
workload "ps1" {
    sysbench "oltp_point_select"
    threads 1
    duration "1s"
}
trials "r" { servers "system" "jemalloc"; dataset "sb"; workload "ps"; passes 2 }
trials "one" { servers "system"; dataset "sb"; workload "ps1"; passes 2 }
analysis "tps" { trials "r"; table metric="tps" rows="server" columns="threads" baseline="system" }
claim "jemalloc is not slower by more than 50%" {
    trials "r"
    metric "tps"
    expect "jemalloc >= system" within="50%"
}
// an effect no table compares: one server along a factor
claim "a second client thread is not slower" {
    metric "tps"
    expect "r:system[threads=2] >= one:system[threads=1]" within="50%"
}
report "summary" { analyses "tps" }
"#
    .to_string()
}

fn write_study(sb: &Sandbox) {
    let images = Path::new(env!("CARGO_MANIFEST_DIR")).join("images/mariadb.kdl");
    sb.write("plan.kdl", &study_plan());
    sb.write("mariadb.kdl", &std::fs::read_to_string(images).unwrap());
}

/// Every `(path, bytes)` under `dir`, sorted.
fn snapshot_files(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out: Vec<(PathBuf, Vec<u8>)> = crate::support::files_under(dir)
        .into_iter()
        .map(|p| {
            let b = std::fs::read(&p).unwrap();
            (p, b)
        })
        .collect();
    out.sort();
    out
}

/// Unpacks a `.tar.zst` (trusted here: one this test made) into `dest`.
fn unpack(archive: &Path, dest: &Path) {
    let f = std::fs::File::open(archive).unwrap();
    let dec = ruzstd::decoding::StreamingDecoder::new(std::io::BufReader::new(f)).unwrap();
    tar::Archive::new(dec).unpack(dest).unwrap();
}

/// Writes `tar` compressed as zstd to `archive`.
fn write_zst(archive: &Path, tar: &[u8]) {
    let zst = ruzstd::encoding::compress_to_vec(tar, ruzstd::encoding::CompressionLevel::Fastest);
    std::fs::write(archive, zst).unwrap();
}

/// Packs `dir` into a `.tar.zst`, `bundle.json` first (as cairn writes it).
fn repack(dir: &Path, archive: &Path) {
    let mut t = tar::Builder::new(Vec::new());
    t.append_path_with_name(dir.join("bundle.json"), "bundle.json")
        .unwrap();
    for p in crate::support::files_under(dir) {
        let rel = p.strip_prefix(dir).unwrap();
        if rel != Path::new("bundle.json") {
            t.append_path_with_name(&p, rel).unwrap();
        }
    }
    write_zst(archive, &t.into_inner().unwrap());
}

/// An archive whose entries are written raw: `(name, kind, data)`; names are not checked,
/// so `../` and links can be made.
/// One raw archive entry: name, type, content, link target.
type RawEntry<'a> = (&'a str, tar::EntryType, &'a [u8], Option<&'a str>);

fn hostile(archive: &Path, entries: &[RawEntry<'_>]) {
    let mut enc: Vec<u8> = Vec::new();
    for (name, kind, data, link) in entries {
        let mut h = tar::Header::new_gnu();
        {
            let gnu = h.as_gnu_mut().unwrap();
            gnu.name[..name.len()].copy_from_slice(name.as_bytes());
            if let Some(l) = link {
                gnu.linkname[..l.len()].copy_from_slice(l.as_bytes());
            }
        }
        h.set_entry_type(*kind);
        h.set_size(data.len() as u64);
        h.set_mode(0o644);
        h.set_cksum();
        enc.write_all(h.as_bytes()).unwrap();
        enc.write_all(data).unwrap();
        let pad = (512 - data.len() % 512) % 512;
        enc.write_all(&vec![0u8; pad]).unwrap();
    }
    enc.write_all(&[0u8; 1024]).unwrap();
    write_zst(archive, &enc);
}

fn minimal_manifest(total_bytes: u64) -> Vec<u8> {
    serde_json::to_vec(&serde_json::json!({
        "format": "cairn-bundle/1", "study": "x", "plan": "plan/x.kdl", "cairn_version": "0",
        "created": "", "files": {}, "steps": [], "host_steps": [], "total_bytes": total_bytes
    }))
    .unwrap()
}

#[test]
fn bundle_verify_alter_and_reproduce_on_a_simulated_second_machine() {
    let _engine = engine_shared();
    cairn_testkit::mariadb_image();
    let sb = Sandbox::new();
    write_study(&sb);
    sb.cairn(["run", "plan.kdl"]).guard(GUARD).success();

    // bundle and verify: clean
    let t = Instant::now();
    sb.cairn(["bundle", "plan.kdl", "-o", "study.tar.zst"])
        .guard(GUARD)
        .success();
    eprintln!("TIMING bundle: {:.2?}", t.elapsed());
    let t = Instant::now();
    let v = sb.cairn(["verify", "study.tar.zst"]).guard(GUARD).success();
    eprintln!("TIMING verify: {:.2?}", t.elapsed());
    assert!(v.stdout.contains("bundle is intact"), "{}", v.stdout);

    // altered: a flipped byte in a blob, a deleted record, a foreign file
    let dir = sb.path().join("unpacked");
    unpack(&sb.path().join("study.tar.zst"), &dir);
    let manifest: Value =
        serde_json::from_slice(&std::fs::read(dir.join("bundle.json")).unwrap()).unwrap();
    let step_key = |address: &str| -> String {
        manifest["steps"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["address"] == address)
            .unwrap()["key"]
            .as_str()
            .unwrap()
            .to_string()
    };
    let trial = step_key("trial/r/system#1");
    let trial_rec: Value = serde_json::from_slice(
        &std::fs::read(dir.join(format!("store/records/{trial}.json"))).unwrap(),
    )
    .unwrap();
    let figures = trial_rec["outputs"]["figures.json"]["digest"]
        .as_str()
        .unwrap()
        .to_string();
    let blob = dir.join(format!("store/blobs/{}/{figures}", &figures[..2]));
    let mut bytes = std::fs::read(&blob).unwrap();
    bytes[0] ^= 1;
    std::fs::write(&blob, bytes).unwrap();
    let claim = step_key("claim/jemalloc is not slower by more than 50%");
    std::fs::remove_file(dir.join(format!("store/records/{claim}.json"))).unwrap();
    std::fs::write(dir.join("notes.txt"), "not part of the study").unwrap();
    let r = sb
        .cairn(["verify", dir.to_str().unwrap()])
        .guard(GUARD)
        .code(1);
    let out = &r.stdout;
    assert!(
        out.contains(&format!(
            "altered file store/blobs/{}/{figures}",
            &figures[..2]
        )),
        "{out}"
    );
    assert!(
        out.contains("trial/r/system#1"),
        "what the blob breaks: {out}"
    );
    assert!(
        out.contains(&format!("missing file store/records/{claim}.json")),
        "{out}"
    );
    assert!(out.contains("extra file notes.txt"), "{out}");
    assert!(out.contains("bundle is damaged"), "{out}");
    // reproduce refuses an altered bundle, and runs nothing
    repack(&dir, &sb.path().join("altered.tar.zst"));
    let r = sb
        .cairn(["reproduce", "altered.tar.zst", "--into", "altered-repro"])
        .guard(GUARD)
        .code(1);
    assert!(
        r.stderr.contains("does not verify; nothing was run"),
        "{}",
        r.stderr
    );
    assert!(!sb.path().join("altered-repro/reproduced").exists());

    // reproduce on a second machine (a simulated fingerprint): every trial re-runs
    let t = Instant::now();
    let r = sb
        .cairn(["reproduce", "study.tar.zst", "--into", "repro"])
        .env("CAIRN_SIMULATED_MACHINE", SIMULATED)
        .guard(GUARD)
        .success();
    eprintln!("TIMING reproduce: {:.2?}", t.elapsed());
    let repro = sb.path().join("repro");
    let cmp: Value =
        serde_json::from_slice(&std::fs::read(repro.join("comparison.json")).unwrap()).unwrap();
    let md = std::fs::read_to_string(repro.join("comparison.md")).unwrap();
    // the findings first: a summary line, the effects, the claims, then the absolute cells
    let sections = [
        "effects consistent,",
        "## Effects: each variant's ratio to its baseline",
        "## Claims: the published verdict vs here",
        "## Absolute cells, as context",
    ];
    let at: Vec<usize> = sections
        .iter()
        .map(|s| md.find(s).unwrap_or_else(|| panic!("{s:?} in:\n{md}")))
        .collect();
    assert!(at.windows(2).all(|w| w[0] < w[1]), "in order:\n{md}");
    assert!(r.stdout.contains(&md), "printed too: {}", r.stdout);
    assert!(
        md.contains("differs between machines as a matter of course")
            && md.contains("each cell mixes machines and campaigns"),
        "{md}"
    );
    // the JSON in the same order, structured (read as written: a `Value` sorts its keys)
    let text = std::fs::read_to_string(repro.join("comparison.json")).unwrap();
    let top_level: Vec<&str> = text
        .lines()
        .filter_map(|l| l.strip_prefix("  \""))
        .filter_map(|l| l.split('"').next())
        .collect();
    assert_eq!(
        top_level,
        ["study", "summary", "effects", "claims", "absolute"],
        "{text}"
    );
    assert_eq!(cmp["summary"]["effects"], 2, "{cmp}");
    assert!(cmp["summary"]["line"]
        .as_str()
        .unwrap()
        .starts_with("0 of 2 effects consistent, 0 differ, 2 undecided; claims: "));
    let effects = cmp["effects"].as_array().unwrap();
    // the table's effect; the first claim compares the same cells, so only the second
    // claim's effect (along threads) is added
    assert_eq!(effects.len(), 2, "jemalloc against system, threads: {cmp}");
    let along = &effects[1];
    assert_eq!(
        along["analysis"], "claim \"a second client thread is not slower\"",
        "{along}"
    );
    assert_eq!(
        (&along["variant"], &along["baseline"]),
        (
            &"r:system[threads=2]".into(),
            &"one:system[threads=1]".into()
        )
    );
    for side in ["published", "reproduced"] {
        assert_eq!(along[side]["passes"], serde_json::json!([2, 2]), "{along}");
    }
    assert!(along["ratio_ci"].is_array(), "{along}");
    assert_eq!(along["verdict"], "undecided", "{along}");
    let e = &effects[0];
    assert_eq!(
        (&e["variant"], &e["baseline"]),
        (&"jemalloc".into(), &"system".into())
    );
    for side in ["published", "reproduced"] {
        assert!(e[side]["ratio"].as_f64().is_some_and(|r| r > 0.0), "{e}");
        assert_eq!(e[side]["passes"], serde_json::json!([2, 2]), "{e}");
    }
    assert!(e["ratio_ci"].is_array(), "{e}");
    // two passes a side can never tell
    assert_eq!(e["verdict"], "undecided", "{e}");
    assert!(
        e["reason"].as_str().unwrap().starts_with("too few passes"),
        "{e}"
    );
    // a reproduction in parts: one block first, its comparison saying so
    let part = sb
        .cairn([
            "reproduce",
            "study.tar.zst",
            "--into",
            "repro-json",
            "--only",
            "trial/one/*",
        ])
        .env("CAIRN_SIMULATED_MACHINE", SIMULATED)
        .guard(GUARD)
        .success();
    let part_md = std::fs::read_to_string(sb.path().join("repro-json/comparison.md")).unwrap();
    assert!(
        part_md.starts_with("**A reproduction in parts**: this part ran only `trial/one/*`"),
        "{part_md}"
    );
    assert!(part.stdout.contains(&part_md), "{}", part.stdout);
    let part_cmp: Value = serde_json::from_slice(
        &std::fs::read(sb.path().join("repro-json/comparison.json")).unwrap(),
    )
    .unwrap();
    assert!(
        part_cmp["effects"]
            .as_array()
            .unwrap()
            .iter()
            .all(|e| e["reason"].as_str().unwrap().starts_with("not reproduced")),
        "{part_cmp}"
    );
    let reproduced_trials = || {
        crate::support::files_under(&sb.path().join("repro-json/reproduced/store/records"))
            .into_iter()
            .map(|p| serde_json::from_slice::<Value>(&std::fs::read(p).unwrap()).unwrap())
            .filter(|r| r["kind"] == "trial")
            .count()
    };
    assert_eq!(reproduced_trials(), 2, "only block `one`");
    // a folder holding anything but a reproduction of this bundle is refused
    sb.write("elsewhere/notes.txt", "mine");
    let other = sb
        .cairn(["reproduce", "study.tar.zst", "--into", "elsewhere"])
        .guard(GUARD)
        .run();
    assert_eq!(other.code, Some(2), "{}", other.stderr);
    assert!(
        other.stderr.contains("is not a reproduction of"),
        "{}",
        other.stderr
    );
    // the rest, continued into the same folder, with --json: stdout holds JSON lines only
    // (the bundle's check, then the findings); block `one` is served, not measured again
    let j = sb
        .cairn([
            "--json",
            "reproduce",
            "study.tar.zst",
            "--into",
            "repro-json",
        ])
        .env("CAIRN_SIMULATED_MACHINE", SIMULATED)
        .guard(GUARD)
        .success();
    assert_eq!(
        reproduced_trials(),
        6,
        "block `one` served from the first part"
    );
    assert!(sb
        .path()
        .join("repro-json/reproduced/e2e-repro/report.md")
        .is_file());
    let lines: Vec<Value> = j
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l:?}")))
        .collect();
    let found = lines.last().unwrap();
    assert_eq!(found["summary"], cmp["summary"], "{found}");
    assert_eq!(found["effects"][0]["variant"], "jemalloc", "{found}");
    let cmp = &cmp["absolute"];
    assert_eq!(cmp["mixes"], "machines and campaigns");
    let cells = cmp["cells"].as_array().unwrap();
    assert_eq!(cells.len(), 3, "one tps cell per server and block: {cmp}");
    for c in cells {
        assert_eq!(c["a"].as_array().unwrap().len(), 2, "{c}");
        assert_eq!(c["b"].as_array().unwrap().len(), 2, "{c}");
        assert!(c["verdict"].as_str().is_some_and(|v| !v.is_empty()));
    }
    let claims = cmp["claims"].as_array().unwrap();
    assert_eq!(claims.len(), 2);
    for c in claims {
        assert!(
            c["a"].is_string() && c["b"].is_string(),
            "a verdict each: {c}"
        );
        // an inconclusive claim neither holds nor fails on the reproduction
        let decided = c["b"] == "holds" || c["b"] == "fails";
        assert_eq!(c["holds_on_b"].is_boolean(), decided, "{c}");
    }
    assert_eq!(
        cmp["fingerprints_b"][0]["cpu_model"],
        "Simulated CPU for reproduction"
    );
    // nothing published was reused: the reproduced store has every trial, measured here
    let reproduced = repro.join("reproduced");
    let trials: Vec<Value> = crate::support::files_under(&reproduced.join("store/records"))
        .into_iter()
        .map(|p| serde_json::from_slice::<Value>(&std::fs::read(p).unwrap()).unwrap())
        .filter(|r| r["kind"] == "trial")
        .collect();
    assert_eq!(trials.len(), 6);
    assert!(trials.iter().all(|t| t["fingerprint"]["cpu_model"]
        == "Simulated CPU for reproduction"
        && t["extra"]["machine"]["simulated"].is_object()));

    // gc (on this machine, not the simulated one) keeps the other machine's trials: the
    // reproduction's records join this machine's store
    for sub in ["records", "blobs"] {
        let from = reproduced.join("store").join(sub);
        for p in crate::support::files_under(&from) {
            let to = sb.store().join(sub).join(p.strip_prefix(&from).unwrap());
            if !to.exists() {
                std::fs::create_dir_all(to.parent().unwrap()).unwrap();
                std::fs::copy(&p, &to).unwrap();
            }
        }
    }
    let simulated_trials = || {
        sb.record_files()
            .into_iter()
            .map(|p| serde_json::from_slice::<Value>(&std::fs::read(p).unwrap()).unwrap())
            .filter(|r| {
                r["kind"] == "trial"
                    && r["fingerprint"]["cpu_model"] == "Simulated CPU for reproduction"
            })
            .count()
    };
    assert_eq!(simulated_trials(), 6);
    let g = sb
        .cairn(["gc", "plan.kdl", "--apply"])
        .guard(GUARD)
        .success();
    assert!(
        g.stdout
            .contains("keeping 6 measurements made on other machines"),
        "{}",
        g.stdout
    );
    assert_eq!(simulated_trials(), 6);
    sb.cairn(["gc", "plan.kdl", "--apply", "--other-machines"])
        .guard(GUARD)
        .success();
    assert_eq!(
        simulated_trials(),
        0,
        "asked: the other machine's trials go"
    );
    // this machine's study is whole: its report renders from the records, nothing runs
    let report = sb.cairn(["report", "plan.kdl"]).guard(GUARD).run();
    if report.code != Some(0) {
        // say why a measurement has no result (CI saw two jemalloc trials go missing here)
        let plan = sb.cairn(["-v", "plan", "plan.kdl"]).guard(GUARD).run();
        let gc = sb.cairn(["gc", "plan.kdl"]).guard(GUARD).run();
        panic!(
            "report after gc: {}\n--- plan -v:\n{}{}\n--- gc (dry run):\n{}{}",
            report.stderr, plan.stdout, plan.stderr, gc.stdout, gc.stderr
        );
    }
    // history: this machine's results of each cell (one result set so far), with the rule
    let h = sb.cairn(["history", "plan.kdl"]).guard(GUARD).success();
    assert!(h.stdout.contains("trial/r/system (tps):"), "{}", h.stdout);
    assert!(h.stdout.contains("trial/r/jemalloc (tps):"), "{}", h.stdout);
    assert!(h.stdout.contains("of 2"), "{}", h.stdout);
    assert!(h.stdout.contains("the tables' rule"), "{}", h.stdout);
}

/// A study measured in parts on two machines (its `r` block here, its `one` block on a
/// simulated second machine, as two sittings on two machines would): no one class holds it
/// all, so `report` and `bundle` read each block from the machine that measured it and say
/// so; the claim comparing across the blocks is inconclusive (mixed machines); the bundle
/// verifies.
#[test]
fn a_study_measured_in_parts_on_two_machines_reports_and_bundles() {
    let _engine = engine_shared();
    cairn_testkit::mariadb_image();
    let sb = Sandbox::new();
    write_study(&sb);
    // a block whose trials are defined as block `r`'s `system` ones: measured on the other
    // machine, the same definition has a record of each class (its third pass, which `r`
    // has not, keeps this machine from holding the block whole)
    let mut plan = study_plan();
    plan.push_str(
        "trials \"again\" { servers \"system\"; dataset \"sb\"; workload \"ps\"; passes 3 }\n",
    );
    sb.write("plan.kdl", &plan);
    sb.cairn(["run", "plan.kdl", "--only", "trial/r/*"])
        .guard(GUARD)
        .success();
    sb.cairn([
        "run",
        "plan.kdl",
        "--only",
        "trial/one/*",
        "--only",
        "trial/again/*",
    ])
    .env("CAIRN_SIMULATED_MACHINE", SIMULATED)
    .guard(GUARD)
    .success();
    let r = sb.cairn(["report", "plan.kdl"]).guard(GUARD).success();
    assert!(
        r.stderr
            .contains("e2e-repro was measured in parts, on 2 machine classes"),
        "{}",
        r.stderr
    );
    let line = r
        .stderr
        .lines()
        .find(|l| l.trim_start().starts_with("again, one: "))
        .unwrap_or_else(|| panic!("a line for blocks `again` and `one`: {}", r.stderr));
    assert!(line.contains("Simulated CPU for reproduction"), "{line}");
    let data: Value =
        serde_json::from_slice(&std::fs::read(sb.results().join("e2e-repro/data.json")).unwrap())
            .unwrap();
    let text = data.to_string();
    assert!(
        text.contains("Simulated CPU for reproduction"),
        "both machines' trials"
    );
    let md = std::fs::read_to_string(sb.results().join("e2e-repro/report.md")).unwrap();
    let across = md
        .lines()
        .find(|l| l.contains("a second client thread is not slower") && l.contains("**"))
        .unwrap_or_else(|| panic!("the claim across the blocks in:\n{md}"));
    assert!(across.contains("**inconclusive**"), "{across}");
    sb.cairn(["bundle", "plan.kdl", "-o", "parts.tar.zst"])
        .guard(GUARD)
        .success();
    let v = sb.cairn(["verify", "parts.tar.zst"]).guard(GUARD).success();
    assert!(v.stdout.contains("bundle is intact"), "{}", v.stdout);

    // a reproduction compares each block's published cells as measured where it was: the
    // same definition's `again` cells from the other machine, `r`'s from this one
    sb.cairn([
        "reproduce",
        "parts.tar.zst",
        "--into",
        "repro",
        "--only",
        "trial/again/*",
    ])
    .guard(GUARD)
    .success();
    let found: Value =
        serde_json::from_slice(&std::fs::read(sb.path().join("repro/comparison.json")).unwrap())
            .unwrap();
    let published = |point: &str| {
        found["absolute"]["cells"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["point"] == point && c["metric"] == "tps")
            .map(|c| c["a"].clone())
            .unwrap_or_else(|| panic!("a cell of {point}: {found}"))
    };
    let (again, r) = (published("trial/again/system"), published("trial/r/system"));
    assert_eq!(again.as_array().map(Vec::len), Some(3), "{again}");
    assert_eq!(r.as_array().map(Vec::len), Some(2), "{r}");
    assert_ne!(again[0], r[0], "each block's own measurements");
    assert_ne!(again[1], r[1], "each block's own measurements");
}

#[test]
fn hostile_archives_are_refused() {
    let sb = Sandbox::new();
    let outside = sb.path().join("evil");
    let m = minimal_manifest(10);
    let cases: Vec<(&str, Vec<RawEntry<'_>>, &str)> = vec![
        (
            "dotdot.tar.zst",
            vec![
                ("bundle.json", tar::EntryType::Regular, &m, None),
                ("../evil", tar::EntryType::Regular, b"x", None),
            ],
            "climbs out with `..`",
        ),
        (
            "absolute.tar.zst",
            vec![
                ("bundle.json", tar::EntryType::Regular, &m, None),
                ("/tmp/cairn-e2e-evil", tar::EntryType::Regular, b"x", None),
            ],
            "is an absolute path",
        ),
        (
            "link.tar.zst",
            vec![
                ("bundle.json", tar::EntryType::Regular, &m, None),
                ("store", tar::EntryType::Symlink, b"", Some("/etc")),
            ],
            "symbolic link",
        ),
    ];
    for (name, entries, why) in &cases {
        hostile(&sb.path().join(name), entries);
        for cmd in ["verify", "reproduce"] {
            let r = sb.cairn([cmd, name]).guard(GUARD).code(2);
            assert!(r.stderr.contains(why), "{cmd} {name}: {}", r.stderr);
        }
    }
    // a bomb: the manifest declares 10 bytes, an entry unpacks to 64 MiB of zeros
    let zeros = vec![0u8; 64 << 20];
    hostile(
        &sb.path().join("bomb.tar.zst"),
        &[
            ("bundle.json", tar::EntryType::Regular, &m, None),
            ("store/blobs/00/big", tar::EntryType::Regular, &zeros, None),
        ],
    );
    let size = std::fs::metadata(sb.path().join("bomb.tar.zst"))
        .unwrap()
        .len();
    assert!(size < 1 << 20, "the bomb is small packed: {size}");
    let r = sb.cairn(["verify", "bomb.tar.zst"]).guard(GUARD).code(2);
    assert!(r.stderr.contains("decompression bomb"), "{}", r.stderr);
    assert!(!outside.exists());
    assert!(!Path::new("/tmp/cairn-e2e-evil").exists());
}

#[test]
fn a_host_step_of_a_bundle_runs_only_with_the_flag() {
    let sb = Sandbox::new();
    let marker = sb.path().join("marker");
    sb.write(
        "plan.kdl",
        &format!(
            "study \"hosty\"\nstep \"touch\" {{\n    run \"touch {} && echo done > out\"\n    output \"out\"\n}}\n",
            marker.display()
        ),
    );
    sb.cairn(["run", "plan.kdl"]).guard(GUARD).success();
    assert!(marker.exists());
    std::fs::remove_file(&marker).unwrap();
    let b = sb
        .cairn(["bundle", "plan.kdl", "-o", "hosty.tar.zst"])
        .guard(GUARD)
        .success();
    assert!(b.stdout.contains("host steps"), "{}", b.stdout);
    let v = sb.cairn(["verify", "hosty.tar.zst"]).guard(GUARD).success();
    assert!(
        v.stdout
            .contains("host steps (run on the host only with --allow-host-steps): touch"),
        "{}",
        v.stdout
    );
    let r = sb
        .cairn(["reproduce", "hosty.tar.zst", "--into", "r1"])
        .guard(GUARD)
        .code(2);
    assert!(r.stderr.contains("--allow-host-steps"), "{}", r.stderr);
    assert!(!marker.exists(), "the host step did not run");
    sb.cairn([
        "reproduce",
        "hosty.tar.zst",
        "--into",
        "r2",
        "--allow-host-steps",
    ])
    .guard(GUARD)
    .success();
    assert!(marker.exists(), "with the flag it ran");
}

/// Removes every tag of `cairn/<name>` when dropped.
struct ImageGuard(String);

impl Drop for ImageGuard {
    fn drop(&mut self) {
        let repo = format!("cairn/{}", self.0);
        let out = docker(&["images", "--format", "{{.Repository}}:{{.Tag}}", &repo]);
        for r in String::from_utf8_lossy(&out.stdout).lines().rev() {
            let _ = docker(&["rmi", "-f", r]);
        }
    }
}

fn docker(args: &[&str]) -> std::process::Output {
    Command::new("docker")
        .args(args)
        .output()
        .expect("docker CLI")
}

/// Provenance survives a rebuild, and a lock holds the image to its versions: the same
/// recipe rebuilt with the same packages changes no record; `cairn lock` writes every
/// package version and plan file digest; `cairn plan` compares the lock with the archive;
/// a lock pinned to a version the archive does not serve fails the build before it starts,
/// naming the package and version, and the earlier build no longer serves as cached.
#[test]
fn an_image_rebuilt_with_the_same_packages_changes_no_record_and_a_lock_holds_it() {
    let _engine = engine_shared();
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    let name = format!("e2e-rebuild-{}-{nanos:x}", std::process::id());
    let _guard = ImageGuard(name.clone());
    let sb = Sandbox::new();
    sb.write("conf/x.cnf", "[mysqld]\n");
    sb.write(
        "plan.kdl",
        &format!(
            "study \"rebuild\"\nimage \"{name}\" {{\n    debian suite=\"bookworm\" arch=\"amd64\"\n    packages \"less\"\n    file \"conf/x.cnf\" \"/etc/x.cnf\"\n}}\n"
        ),
    );
    // the debootstrap cache is shared with the image tests (kept between test runs)
    let cache = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("e2e-images-cache");
    let run = || {
        sb.cairn(["--json", "run", "plan.kdl"])
            .cache_dir(cache.clone())
            .guard(GUARD)
            .success()
            .events()
    };
    run();
    let before = snapshot_files(&sb.store().join("records"));
    let names_before = snapshot_files(&sb.store().join("names"));
    let base = format!("image/{name}");
    let (_, rec) = sb.records_of(&base).pop().unwrap();
    let reference = rec["extra"]["reference"].as_str().unwrap().to_string();
    let manifest = sb.output_text(&base, "manifest.json");
    assert!(
        !manifest.contains("image_id"),
        "the engine's id is not output: {manifest}"
    );

    // remove both images from the engine: the layer, what the plan is for, is built
    // again, and so is the base it is built on (while the layer was there, the base's
    // absence asked for nothing)
    let layer = format!("{base}/1");
    let (_, layer_rec) = sb.records_of(&layer).pop().unwrap();
    let layer_reference = layer_rec["extra"]["reference"]
        .as_str()
        .unwrap()
        .to_string();
    let o = docker(&["rmi", &reference]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let ev = run();
    assert!(
        ev.finished().is_empty(),
        "the layer is here: {:?}",
        ev.finished()
    );
    let o = docker(&["rmi", &layer_reference]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let ev = run();
    assert_eq!(
        ev.finished(),
        crate::support::set([base.as_str(), layer.as_str()]),
        "only the removed images are rebuilt"
    );
    assert!(docker(&["image", "inspect", &reference]).status.success());
    assert!(docker(&["image", "inspect", &layer_reference])
        .status
        .success());
    assert_eq!(
        snapshot_files(&sb.store().join("records")),
        before,
        "no record changed"
    );
    assert_eq!(snapshot_files(&sb.store().join("names")), names_before);
    assert!(!sb.store().join("alternates").exists());

    // the lock's commands, on the shared debootstrap cache
    let cairn = |args: &[&str]| {
        sb.cairn(args.iter().copied())
            .cache_dir(cache.clone())
            .guard(GUARD)
    };
    // the lock: every installed package with its version, and the plan file's digest
    let locked = cairn(&["lock", "plan.kdl"]).success();
    assert!(
        locked.stdout.contains("wrote plan.kdl.lock: 2 image(s)"),
        "{}",
        locked.stdout
    );
    let lock_file = sb.path().join("plan.kdl.lock");
    let mut lock: Value =
        serde_json::from_str(&std::fs::read_to_string(&lock_file).unwrap()).unwrap();
    let less = lock["images"][&base]["packages"]["less"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        manifest.contains(&less),
        "the lock holds the built version {less}"
    );
    assert!(lock["plan_files"]["plan.kdl"].is_string(), "{lock}");
    let plan = cairn(&["plan", "plan.kdl"]).success();
    assert!(
        plan.stdout
            .contains(&format!("lock: {base}: the archive serves all")),
        "{}",
        plan.stdout
    );

    // pinned to a version the archive does not serve
    lock["images"][&base]["packages"]["less"] = Value::from("0.0-not-served");
    std::fs::write(&lock_file, serde_json::to_string_pretty(&lock).unwrap()).unwrap();
    let plan = cairn(&["plan", "plan.kdl"]).success();
    assert!(
        plan.stdout.contains(&format!(
            "lock: {base}: the lock and the archive disagree on 1 package(s): less locked 0.0-not-served, found {less}"
        )),
        "{}",
        plan.stdout
    );
    assert!(
        plan.stdout.contains("this build does not hold the lock"),
        "{}",
        plan.stdout
    );
    let r = cairn(&["run", "plan.kdl"]).code(1);
    let said = format!("{}{}", r.stdout, r.stderr);
    assert!(
        said.contains("no longer serves 1 locked version(s): less locked 0.0-not-served"),
        "{said}"
    );
    assert_eq!(
        snapshot_files(&sb.store().join("records")),
        before,
        "nothing recorded"
    );
}

/// The committed quickstart — adaptive passes, two of them not needed — bundles and verifies
/// clean: a conditional pass without a record is one the rule did not need, not a hole. It
/// was measured on another machine than (most of) those that run this test: bundling reads
/// the one machine class whose results are complete, and says so; this one is made another
/// class for certain (a simulated fingerprint), whatever machine CI runs on.
#[test]
fn the_committed_quickstart_bundles_and_verifies_clean() {
    let sb = Sandbox::new();
    sb.copy_tree(
        &crate::support::repo_root().join("results/store"),
        "results/store",
    );
    sb.copy_tree(&crate::support::repo_root().join("images"), "images");
    sb.write(
        "plans/quickstart.kdl",
        &std::fs::read_to_string(crate::support::repo_root().join("plans/quickstart.kdl"))
            .expect("quickstart"),
    );
    let b = sb
        .cairn(["bundle", "plans/quickstart.kdl", "-o", "qs.tar.zst"])
        .env("CAIRN_SIMULATED_MACHINE", SIMULATED)
        .guard(GUARD)
        .success();
    assert!(
        b.stderr
            .contains("has not measured quickstart; reading the results measured on"),
        "{}",
        b.stderr
    );
    let v = sb.cairn(["verify", "qs.tar.zst"]).guard(GUARD).success();
    assert!(v.stdout.contains("bundle is intact"), "{}", v.stdout);
    // a class named that holds no results: nothing to pack, and a class that is no JSON
    let none = r#"{"cpu_model":"none","cores":1,"threads":1,"memory_gib":1,"kernel":"0","runtime":"host"}"#;
    let r = sb
        .cairn([
            "bundle",
            "plans/quickstart.kdl",
            "-o",
            "none.tar.zst",
            "--measured-on",
            none,
        ])
        .guard(GUARD)
        .code(1);
    assert!(r.stderr.contains("have no result"), "{}", r.stderr);
    let r = sb
        .cairn(["report", "plans/quickstart.kdl", "--measured-on", "amd"])
        .guard(GUARD)
        .code(2);
    assert!(r.stderr.contains("--measured-on"), "{}", r.stderr);
    assert!(!sb.path().join("none.tar.zst").exists());
}

/// History follows a cell across a change of its definition (here a server setting; a
/// bumped image is the same case): the study's two result sets of the point are listed in
/// order, each with its date and server version, the later compared with the earlier.
#[test]
fn history_follows_a_cell_across_a_changed_definition() {
    let _engine = engine_shared();
    cairn_testkit::mariadb_image();
    let sb = Sandbox::new();
    let images = Path::new(env!("CARGO_MANIFEST_DIR")).join("images/mariadb.kdl");
    sb.write("mariadb.kdl", &std::fs::read_to_string(images).unwrap());
    let plan = |pool: &str| {
        format!(
            r#"study "e2e-history"
import "mariadb.kdl"
server "s" {{ image "mariadb-bookworm"; option innodb_buffer_pool_size="{pool}" }}
dataset "sb" {{ sysbench tables=1 rows=500 }}
workload "w" {{ sysbench "oltp_point_select"; threads 1; duration "1s" }}
trials "t" {{ servers "s"; dataset "sb"; workload "w"; passes 2 }}
"#
        )
    };
    sb.write("plan.kdl", &plan("64M"));
    sb.cairn(["run", "plan.kdl"]).guard(GUARD).success();
    sb.write("plan.kdl", &plan("32M"));
    sb.cairn(["run", "plan.kdl"]).guard(GUARD).success();
    let h = sb.cairn(["history", "plan.kdl"]).guard(GUARD).success();
    assert!(h.stdout.contains("trial/t/s (tps):"), "{}", h.stdout);
    assert_eq!(h.stdout.matches("of 2").count(), 2, "{}", h.stdout);
    assert_eq!(
        h.stdout.matches("vs the previous").count(),
        1,
        "{}",
        h.stdout
    );
    // with two passes a side the rule cannot flag a change
    assert!(!h.stdout.contains("beyond the noise"), "{}", h.stdout);
}

/// `cairn history --fail-on slower` as a CI regression check: 0 while nothing is flagged
/// slower, 1 once the newest result set is (a real one: the same point measured again with
/// its rate capped far below what the server does), naming the cell on stderr.
#[test]
fn history_fail_on_slower_exits_1_on_a_slower_result_set_and_0_otherwise() {
    let _engine = engine_shared();
    cairn_testkit::mariadb_image();
    let sb = Sandbox::new();
    let images = Path::new(env!("CARGO_MANIFEST_DIR")).join("images/mariadb.kdl");
    sb.write("mariadb.kdl", &std::fs::read_to_string(images).unwrap());
    let plan = |rate: &str| {
        format!(
            r#"study "e2e-history-fail-on"
import "mariadb.kdl"
server "s" {{ image "mariadb-bookworm" }}
dataset "sb" {{ sysbench tables=1 rows=500 }}
workload "w" {{ sysbench "oltp_point_select"; threads 1; duration "1s"; {rate} }}
trials "t" {{ servers "s"; dataset "sb"; workload "w"; passes 4 }}
"#
        )
    };
    sb.write("plan.kdl", &plan(""));
    sb.cairn(["run", "plan.kdl"]).guard(GUARD).success();
    // one result set: nothing to compare, nothing flagged
    sb.cairn(["history", "plan.kdl", "--fail-on", "slower"])
        .guard(GUARD)
        .success();
    // the same point, its rate capped at 20 transactions a second
    sb.write("plan.kdl", &plan("rate 20"));
    sb.cairn(["run", "plan.kdl"]).guard(GUARD).success();
    let h = sb
        .cairn(["history", "plan.kdl", "--fail-on", "slower"])
        .guard(GUARD)
        .code(1);
    assert!(
        h.stdout.contains("slower  ← beyond the noise"),
        "{}",
        h.stdout
    );
    assert!(
        h.stderr
            .contains("the newest result of trial/t/s: slower (tps ratio 0.0"),
        "{}",
        h.stderr
    );
    // faster is not what happened
    sb.cairn(["history", "plan.kdl", "--fail-on", "faster"])
        .guard(GUARD)
        .success();
}

/// The pids of the live children of process `parent` (from `/proc/<pid>/stat`'s ppid).
fn children_of(parent: u32) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            // after the command name, which may hold spaces: state, then ppid
            stat.rfind(')')
                .and_then(|i| stat[i + 1..].split_whitespace().nth(1)?.parse::<u32>().ok())
                == Some(parent)
        })
        .collect()
}

/// `timeout`, a CI cancellation or a closed terminal signals `cairn reproduce` alone, not the
/// `cairn run` it started: the reproduction passes the stop on and waits, so it exits 130 only
/// once its run has stopped, and no run, server container or network outlives it.
#[test]
fn a_reproduction_stopped_by_a_signal_to_it_alone_stops_its_run_first() {
    let _engine = engine_shared();
    cairn_testkit::mariadb_image();
    let sb = Sandbox::new();
    let images = Path::new(env!("CARGO_MANIFEST_DIR")).join("images/mariadb.kdl");
    sb.write("mariadb.kdl", &std::fs::read_to_string(images).unwrap());
    sb.write(
        "plan.kdl",
        r#"study "e2e-repro-stop"
param "duration" default="1s"
import "mariadb.kdl"
server "s" { image "mariadb-bookworm"; option innodb_buffer_pool_size="64M" }
dataset "sb" { sysbench tables=1 rows=100 }
workload "long" { sysbench "oltp_point_select"; duration "${duration}" }
trials "t" { servers "s"; dataset "sb"; workload "long" }
"#,
    );
    sb.cairn(["run", "plan.kdl"]).guard(GUARD).success();
    sb.cairn(["bundle", "plan.kdl", "-o", "stop.tar.zst"])
        .guard(GUARD)
        .success();
    // reproduced with a five-minute trial, stopped once its server serves the workload
    let live = sb
        .cairn([
            "--set",
            "duration=5m",
            "reproduce",
            "stop.tar.zst",
            "--into",
            "again",
        ])
        .spawn();
    let parent = live.pid() as u32;
    let deadline = Instant::now() + Duration::from_secs(600);
    // the trial's own containers, not the dataset load's before it: between the two steps the
    // run has none for a moment, and a slow machine can be sampled there
    let in_trial = |steps: &[String]| steps.iter().any(|step| step.starts_with("trial/"));
    let run = loop {
        let running = children_of(parent)
            .into_iter()
            .find(|c| in_trial(&crate::trials::container_steps_of(*c)));
        if let Some(run) = running {
            break run;
        }
        assert!(Instant::now() < deadline, "no trial started");
        std::thread::sleep(Duration::from_millis(200));
    };
    // the trial's server and its workload under way
    std::thread::sleep(Duration::from_secs(15));
    // the steps checked are the steps shown
    let steps = crate::trials::container_steps_of(run);
    if !in_trial(&steps) {
        live.signal(libc::SIGTERM);
        let r = live.finish(Duration::from_secs(120));
        panic!(
            "the trial stopped early (containers of: {steps:?}):\n{}",
            r.stderr
        );
    }

    live.signal(libc::SIGTERM);
    let r = live.finish(Duration::from_secs(120));
    assert_eq!(r.code, Some(130), "{}", r.stderr);
    assert!(
        !Path::new(&format!("/proc/{run}")).exists(),
        "its run {run} outlived it"
    );
    assert!(
        crate::trials::containers_of(run).is_empty(),
        "{:?}",
        crate::trials::containers_of(run)
    );
    assert!(
        crate::trials::networks_of(run).is_empty(),
        "{:?}",
        crate::trials::networks_of(run)
    );
    assert!(
        !sb.path().join("again/comparison.md").exists(),
        "no comparison"
    );
}
