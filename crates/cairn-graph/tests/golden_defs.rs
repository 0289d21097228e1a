//! Golden keys of image, dataset, trial, analysis, claim and report steps: literal keys and
//! canonical key (or definition) JSON, pinned so that a refactor of how definitions are built
//! cannot change a user's cache.
//!
//! The literals were computed before the definitions became typed (`cairn-defs`); they must
//! never change by accident. If one fails, every result of such a step is invalidated: bump
//! `KEY_SCHEMA` or a code version on purpose, then update the literals.
//!
//! Also here: per-driver code versions reach only their own trials' keys, and the typed
//! definitions (through `Step`'s accessors) read back what the resolver wrote.

use std::collections::BTreeMap;

use cairn_graph::{resolve, step_key, Fingerprint, StepGraph};

fn fingerprint() -> Fingerprint {
    Fingerprint {
        cpu_model: "Test CPU @ 1.00GHz".into(),
        cores: 2,
        threads: 2,
        memory_gib: 24,
        kernel: "6.1.0".into(),
        runtime: "host".into(),
    }
}

const RECIPE: &str = r#"
image "golden" {
    debian suite="bookworm" arch="amd64"
    packages "procps" "mariadb-server" "libjemalloc2"
    run "echo one > /etc/cairn-one"
    env LANG="C.UTF-8" TZ="UTC"
    file "conf/g.cnf" "/etc/mysql/conf.d/g.cnf"
}
"#;

const PLAN: &str = r#"
study "golden-defs"
import "images.kdl"
server "s" {
    image "golden"
    option innodb_buffer_pool_size="256M" max_connections=512 performance_schema=#false innodb_max_dirty_pages_pct=2.0 innodb_flush_neighbors=0.5
    env MALLOC_ARENA_MAX="2"
    allocator "jemalloc"
    connect "socket"
    cpus "0-1"
    memory "4G"
    executor "docker"
}
dataset "d" { sysbench tables=2 rows=1000 engine="InnoDB" secondary=#false }
workload "w" {
    sysbench "oltp_read_only" tool="native" skip-trx=#true
    threads 2 8
    duration "10s"
    warmup "1s"
}
trials "t" { servers "s"; dataset "d"; workload "w"; passes 2 }
"#;

/// The golden plan, resolved from a temporary directory (the file layer reads a file).
fn golden() -> (tempfile::TempDir, StepGraph) {
    let dir = tempfile::tempdir().unwrap();
    for (name, text) in [
        ("plan.kdl", PLAN),
        ("images.kdl", RECIPE),
        ("conf/g.cnf", "[mysqld]\nskip-log-bin\n"),
    ] {
        let p = dir.path().join(name);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }
    let plan = cairn_plan::load(&dir.path().join("plan.kdl"))
        .unwrap_or_else(|e| panic!("{}", cairn_plan::render(&e)));
    let g = resolve(&plan).expect("resolves");
    (dir, g)
}

/// An input's stand-in output digest: blake3 of the producing step's address.
fn fake_digest(g: &StepGraph, id: usize) -> String {
    blake3::hash(g.steps[id].address.as_bytes())
        .to_hex()
        .to_string()
}

/// Canonical key JSON of every step by address.
fn key_jsons(g: &StepGraph) -> BTreeMap<String, String> {
    let fp = fingerprint();
    g.steps
        .iter()
        .map(|s| {
            let ds: Vec<String> = s.inputs.iter().map(|i| fake_digest(g, i.from)).collect();
            let ds: Vec<&str> = ds.iter().map(String::as_str).collect();
            let json = serde_json::to_string(&step_key(s, &ds, Some(&fp))).expect("json");
            (s.address.clone(), json)
        })
        .collect()
}

/// Key of every step by address.
fn keys(g: &StepGraph) -> BTreeMap<String, String> {
    let fp = fingerprint();
    g.steps
        .iter()
        .map(|s| {
            let ds: Vec<String> = s.inputs.iter().map(|i| fake_digest(g, i.from)).collect();
            let ds: Vec<&str> = ds.iter().map(String::as_str).collect();
            (s.address.clone(), step_key(s, &ds, Some(&fp)).hash())
        })
        .collect()
}

#[test]
fn golden_image_dataset_and_trial_keys() {
    let (_d, g) = golden();
    let got: Vec<String> = keys(&g)
        .into_iter()
        .map(|(a, k)| format!("{a} {k}"))
        .collect();
    let want = [
        // the dataset key changed deliberately with its code version (dataset/2: the loading
        // server runs with load-only settings)
        "dataset/d@s 404de7420e4e21fbef61bc380f931f529dd1bf8cdd4cd6194ba985c7c37f35d5",
        "image/golden cea8ef34bc2be46bd2607d8e3340cf8b8c7578537f912d9a97535bbcf0232926",
        "image/golden/1 80bf5f2a1578252f39c52bf6719234c4a5de8afaddab3552c25db863e65795d2",
        "image/golden/2 e0a5de1058b4230e4a36cac6b0d08a7dec2c8998086f74d8897efa518f214848",
        "image/golden/3 505b58b26874093d6c959227a07f4e80b18b02ee0f8977760d641aa5d7846be2",
        // trial keys changed deliberately when the fingerprint became the machine's class
        // (memory_gib, kernel version without build tag), and again when trials were keyed
        // by their study (a measurement is one study's observation): image and dataset keys
        // did not
        "trial/t/s[threads=2]#1 6cac068ca6c18b0d24aea701c4cd20d28d436c8a98e0103dfb6250d8e5a52109",
        "trial/t/s[threads=2]#2 b7fd8494a9335929938cf6919af0103de5469ea645547ca557e51a0c2a617e2e",
        "trial/t/s[threads=8]#1 fbdfc30cb0917f3d0b967d15a403653141d4346757f9e69f0f178fcd9c1f893d",
        "trial/t/s[threads=8]#2 9439dd4636bea84a8d8918739a150f8c410e07263a3a294d686ea1d3fea8df91",
    ];
    assert_eq!(got, want);
}

/// The server part of the dataset's and the trials' canonical JSON.
const SERVER_JSON: &str = concat!(
    r#""server":{"allocator":"jemalloc","connect":"socket","cpus":"0-1","#,
    r#""env":{"MALLOC_ARENA_MAX":"2"},"executor":"docker","memory":4294967296,"#,
    r#""options":{"innodb_buffer_pool_size":"256M","innodb_flush_neighbors":0.5,"#,
    r#""innodb_max_dirty_pages_pct":2.0,"max_connections":512,"performance_schema":false}}"#
);

/// The stand-in digest of the image chain's last step (`image/golden/3`).
const IMAGE_DIGEST: &str = "35e44f06916190957c42086baa5a8e6a9e4266cefceae3a7ae4bb177727647cc";

#[test]
fn golden_image_key_json() {
    let (_d, g) = golden();
    let j = key_jsons(&g);
    assert_eq!(
        j["image/golden"],
        concat!(
            r#"{"schema":1,"kind":"image","definition":{"debian":{"arch":"amd64","suite":"bookworm","variant":"minbase"},"#,
            r#""packages":["libjemalloc2","mariadb-server","procps"],"stage":"base"},"inputs":[],"code":"image/1","pass":1}"#
        )
    );
    assert_eq!(
        j["image/golden/1"],
        concat!(
            r#"{"schema":1,"kind":"image","definition":{"layer":{"run":{"command":"echo one > /etc/cairn-one"}},"stage":"layer"},"#,
            r#""inputs":[{"mount":"parent","digest":"ea907379ab7ff95573bd18470198f15ee2cd26ae805bd5dd8cb715438b8b0cf2"}],"#,
            r#""code":"image/1","pass":1}"#
        )
    );
    assert_eq!(
        j["image/golden/2"],
        concat!(
            r#"{"schema":1,"kind":"image","definition":{"layer":{"env":{"vars":{"LANG":"C.UTF-8","TZ":"UTC"}}},"stage":"layer"},"#,
            r#""inputs":[{"mount":"parent","digest":"b4cdd07428d9d7f1e138a5911ae9feca21c7090c6a99e67944e62ca1a305fcb7"}],"#,
            r#""code":"image/1","pass":1}"#
        )
    );
    assert_eq!(
        j["image/golden/3"],
        concat!(
            r#"{"schema":1,"kind":"image","definition":{"layer":{"file":{"dest":"/etc/mysql/conf.d/g.cnf","#,
            r#""digest":"2be453dee2644bcc77f8a99d795d19a0126ef52e00d41c1913ee41fd9c2a1a63"}},"stage":"layer"},"#,
            r#""inputs":[{"mount":"parent","digest":"33c535c8fb7e6d4d5c6df154fc303694397a44facd48dd4191637eae4cd18f91"}],"#,
            r#""code":"image/1","pass":1}"#
        )
    );
}

#[test]
fn golden_dataset_key_json() {
    let (_d, g) = golden();
    let want = format!(
        concat!(
            r#"{{"schema":1,"kind":"dataset","definition":{{"generator":"sysbench","#,
            r#""props":{{"engine":"InnoDB","rows":1000,"secondary":false,"tables":2}},{server}}},"#,
            r#""inputs":[{{"mount":"image","digest":"{image}"}}],"code":"dataset/2","pass":1}}"#
        ),
        server = SERVER_JSON,
        image = IMAGE_DIGEST,
    );
    assert_eq!(key_jsons(&g)["dataset/d@s"], want);
}

#[test]
fn golden_trial_key_json() {
    let (_d, g) = golden();
    let want = format!(
        concat!(
            r#"{{"schema":1,"kind":"trial","definition":{{{server},"#,
            // the study measuring it: two studies never share a measurement
            r#""study":"golden-defs","#,
            r#""workload":{{"driver":"sysbench","driver_props":{{"skip-trx":true,"tool":"native"}},"#,
            r#""params":{{"duration":10.0,"threads":2,"warmup":1.0}},"test":"oltp_read_only"}}}},"#,
            r#""inputs":[{{"mount":"dataset","digest":"351c5f14284bffa31794d6f7ddd1df286a58afb637833c2a6586b5cee9e5e9ce"}},"#,
            r#"{{"mount":"image","digest":"{image}"}}],"code":"trial/1+sysbench/2","#,
            // the fingerprint is the machine's class since the reproduction work: memory in
            // whole GiB and the kernel's version without its build tag (exact facts are
            // recorded beside the measurement, not keyed) — every trial key changed with it
            r#""fingerprint":{{"cpu_model":"Test CPU @ 1.00GHz","cores":2,"threads":2,"memory_gib":24,"#,
            r#""kernel":"6.1.0","runtime":"host"}},"pass":1}}"#
        ),
        server = SERVER_JSON,
        image = IMAGE_DIGEST,
    );
    assert_eq!(key_jsons(&g)["trial/t/s[threads=2]#1"], want);
}

/// One trial per driver on one server, with a dataset for two of them.
const DRIVERS_PLAN: &str = r#"
study "drivers"
server "s" { option innodb_buffer_pool_size="64M" }
dataset "sb" { sysbench tables=1 rows=100 }
dataset "auth" { smack rows=100 }
workload "ro" { sysbench "oltp_read_only"; threads 1 2 }
workload "select-index" { smack "select_index"; clients 1 2; rounds 10 }
workload "suite" { sqlbench "all"; scale "small" }
trials "ro" { servers "s"; dataset "sb"; workload "ro"; passes 2 }
trials "smack" { servers "s"; dataset "auth"; workload "select-index" }
trials "sqlbench" { servers "s"; workload "suite" }
"#;

/// Keys and codes of every step of [`DRIVERS_PLAN`] with these driver versions.
fn driver_keys(versions: &dyn Fn(&str) -> u32) -> BTreeMap<String, (String, String)> {
    let plan = cairn_plan::parse_str("drivers.kdl", DRIVERS_PLAN)
        .unwrap_or_else(|e| panic!("{}", cairn_plan::render(&e)));
    let g = cairn_graph::resolve_with_driver_versions(&plan, versions).expect("resolves");
    let fp = fingerprint();
    g.steps
        .iter()
        .map(|s| {
            let ds: Vec<String> = s.inputs.iter().map(|i| fake_digest(&g, i.from)).collect();
            let ds: Vec<&str> = ds.iter().map(String::as_str).collect();
            let key = step_key(s, &ds, Some(&fp)).hash();
            (s.address.clone(), (key, s.code.clone()))
        })
        .collect()
}

#[test]
fn drivers_at_version_one_add_nothing_to_trial_keys() {
    // sysbench is at 2 (the wire read path), sqlbench at 2 (test-select's two GROUP BY
    // groups); smack at 1 adds nothing
    let now = driver_keys(&cairn_defs::driver_code_version);
    let all_one = driver_keys(&|_| 1);
    for (addr, (key, code)) in &now {
        let bumped = [("trial/ro/", "sysbench"), ("trial/sqlbench/", "sqlbench")]
            .into_iter()
            .find(|(prefix, _)| addr.starts_with(prefix));
        if let Some((_, driver)) = bumped {
            assert_eq!(code, &format!("trial/1+{driver}/2"), "{addr}");
            assert_ne!(key, &all_one[addr].0, "{addr}");
        } else {
            assert_eq!((key, code), (&all_one[addr].0, &all_one[addr].1), "{addr}");
            if addr.starts_with("trial/") {
                assert_eq!(code, "trial/1", "{addr}");
            }
        }
    }
}

#[test]
fn bumping_one_driver_changes_only_its_trials_keys() {
    let before = driver_keys(&|_| 1);
    for driver in ["sysbench", "smack", "sqlbench"] {
        let after = driver_keys(&|d| if d == driver { 2 } else { 1 });
        assert_eq!(before.len(), after.len());
        // the sysbench trials are named `ro`, the others after their driver
        let trials = if driver == "sysbench" { "ro" } else { driver };
        let prefix = format!("trial/{trials}/");
        let mut changed = 0;
        for (addr, (key, code)) in &after {
            let (old_key, old_code) = &before[addr];
            if addr.starts_with(&prefix) {
                changed += 1;
                assert_ne!(key, old_key, "{addr} re-runs after a bump of {driver}");
                assert_eq!(code, &format!("trial/1+{driver}/2"), "{addr}");
            } else {
                // datasets, images and the other drivers' trials keep their keys
                assert_eq!(key, old_key, "{addr} is untouched by a bump of {driver}");
                assert_eq!(code, old_code, "{addr}");
            }
        }
        assert!(changed > 0, "{driver} has trials");
    }
}

#[test]
fn typed_accessors_read_back_what_the_resolver_wrote() {
    use cairn_defs::{ImageDef, LayerDef};
    use serde_json::json;

    let (_d, g) = golden();
    let step = |a: &str| g.steps.iter().find(|s| s.address == a).expect(a);

    let ImageDef::Base { debian, packages } = step("image/golden").image_def().unwrap() else {
        panic!("the first step of an image is its base");
    };
    assert_eq!(debian, cairn_defs::Debian::default());
    assert_eq!(packages, ["libjemalloc2", "mariadb-server", "procps"]);
    let layers: Vec<LayerDef> = (1..=3)
        .map(
            |n| match step(&format!("image/golden/{n}")).image_def().unwrap() {
                ImageDef::Layer { layer } => layer,
                base => panic!("layer {n} is {base:?}"),
            },
        )
        .collect();
    assert!(
        matches!(&layers[0], LayerDef::Run { command } if command == "echo one > /etc/cairn-one")
    );
    assert!(matches!(&layers[1], LayerDef::Env { vars } if vars["TZ"] == "UTC"));
    assert!(matches!(&layers[2], LayerDef::File { dest, .. } if dest == "/etc/mysql/conf.d/g.cnf"));

    let ds = step("dataset/d@s").dataset_def().unwrap();
    assert_eq!(ds.dataset.generator, "sysbench");
    assert_eq!(ds.dataset.props["rows"], json!(1000));
    assert_eq!(ds.server.memory, Some(4 << 30));
    assert_eq!(ds.server.options["performance_schema"], json!(false));
    assert_eq!(ds.server.executor_or_default(), "docker");

    let t = step("trial/t/s[threads=8]#2").trial_def().unwrap();
    assert_eq!(
        t.server, ds.server,
        "a dataset and its trials share the server"
    );
    assert_eq!(t.workload.driver, "sysbench");
    assert_eq!(t.workload.params["threads"], json!(8));
    assert_eq!(t.workload.driver_props["tool"], json!("native"));
    assert_eq!(
        step("trial/t/s[threads=8]#2").server_def().unwrap(),
        Some(t.server)
    );

    // asking a step for another kind's definition names both kinds
    let e = step("dataset/d@s").trial_def().unwrap_err();
    assert!(
        e.contains("dataset/d@s is a dataset step, not a trial step"),
        "{e}"
    );
    assert_eq!(step("image/golden").server_def().unwrap(), None);
}

/// The image steps' keys of a plan with two `build` layers on one base.
fn build_keys(o0: &str, o2: &str) -> BTreeMap<String, String> {
    let text = format!(
        "study \"b\"\nimage \"o0\" {{ build \"debian:hello\" {{ {o0} }} }}\nimage \"o2\" {{ build \"debian:hello\" {{ {o2} }} }}\n"
    );
    let plan = cairn_plan::parse_str("b.kdl", &text)
        .unwrap_or_else(|e| panic!("{}", cairn_plan::render(&e)));
    let g = resolve(&plan).expect("resolves");
    keys(&g)
}

#[test]
fn a_build_layer_key_holds_every_flag_and_defaults_are_written_in() {
    use cairn_defs::image::{SourceOrigin, DEFAULT_PREFIX};
    use cairn_defs::{ImageDef, LayerDef};

    let base = build_keys(r#"cflags "-O0""#, r#"cflags "-O2"; strip #true"#);
    // one base (same Debian, no packages), two builds
    assert_eq!(base.len(), 3, "{base:?}");
    // spelling the defaults out changes nothing
    let explicit = build_keys(
        r#"cflags "-O0"; compiler "gcc"; type "release"; link "dynamic"; strip #false; prefix "/usr/local""#,
        r#"cflags "-O2"; strip #true"#,
    );
    assert_eq!(base, explicit);
    // one flag of one build changed: only that build's key moves
    let changed = build_keys(r#"cflags "-O0""#, r#"cflags "-O2"; strip #false"#);
    assert_eq!(changed["image/o0"], base["image/o0"]);
    assert_eq!(changed["image/o0/1"], base["image/o0/1"]);
    assert_ne!(changed["image/o2/1"], base["image/o2/1"]);

    let plan = cairn_plan::parse_str(
        "b.kdl",
        "study \"b\"\nimage \"x\" { build \"debian:hello\" { deps \"b\" \"a\" \"b\" } }\n",
    )
    .unwrap();
    let g = resolve(&plan).unwrap();
    let s = g.steps.iter().find(|s| s.address == "image/x/1").unwrap();
    let ImageDef::Layer {
        layer: LayerDef::Build { build },
    } = s.image_def().unwrap()
    else {
        panic!("a build layer");
    };
    assert_eq!(
        build.source,
        SourceOrigin::Debian {
            package: "hello".into()
        }
    );
    assert_eq!(build.deps, ["a", "b"], "sorted, without repeats");
    assert_eq!(build.prefix, DEFAULT_PREFIX);
    assert_eq!(
        (build.compiler.as_str(), build.link.as_str()),
        ("gcc", "dynamic")
    );
}

/// Analyses (a compare and a scaling), claims (with `within`, with `by`, with neither) and
/// two reports (one naming its format) over two trials blocks on two servers.
const ANALYSES_PLAN: &str = r#"
study "golden-analyses" { title "Allocators, pinned" }
server "a" { option innodb_buffer_pool_size="64M" }
server "b" { option innodb_buffer_pool_size="64M"; allocator "jemalloc" }
workload "ro" { sysbench "oltp_read_only"; threads 1 4 }
workload "suite" { sqlbench "all"; scale "small" }
trials "ro" { servers "a" "b"; workload "ro"; passes 2 }
trials "suite" { servers "a" "b"; workload "suite" }
analysis "per-op" {
    trials "suite"
    compare baseline="a"
}
analysis "scaling" {
    trials "ro"
    scaling metric="tps" x="threads" style="bar"
}
claim "b keeps up" {
    metric "tps"
    where threads=4
    expect "b >= a" within="5%"
}
claim "b is faster" {
    metric "tps"
    where threads=4
    expect "b > a" by="5%"
}
claim "b is not slower at one thread" {
    metric "tps"
    where threads=1
    expect "b >= a"
}
report "full" {
    analyses "per-op" "scaling"
    format "markdown"
}
report "plain" {
    analyses "scaling"
}
"#;

/// [`ANALYSES_PLAN`], resolved.
fn analyses_graph() -> StepGraph {
    let plan = cairn_plan::parse_str("analyses.kdl", ANALYSES_PLAN)
        .unwrap_or_else(|e| panic!("{}", cairn_plan::render(&e)));
    resolve(&plan).expect("resolves")
}

/// The analysis, claim and report steps of `g`: `(address, key, canonical definition)`.
fn analysis_claim_report_keys(g: &StepGraph) -> Vec<(String, String, String)> {
    let keys = keys(g);
    g.steps
        .iter()
        .filter(|s| !s.address.starts_with("trial/"))
        .map(|s| {
            let def = serde_json::to_string(&s.definition).expect("json");
            (s.address.clone(), keys[&s.address].clone(), def)
        })
        .collect()
}

#[test]
fn golden_analysis_claim_and_report_keys_and_definitions() {
    // the keys changed deliberately with the code versions analysis/3, claim/3 and report/4
    // (a campaign is the run that measured a pass; claims check classes of machine), and
    // report/5 (the intro's passes from the trials, passes needed said once), report/6 (a
    // scaling table's reference point); analysis/4, claim/4 (bootstrap seeded from the
    // samples) and report/7 (headline, design: a report's definition holds each block's
    // pass rule and dataset); claim/5 (a claim's meaning in words, bands, cells) and report/8
    // (the claim's meaning, the plan's parameters), report/9 (where the `cpus` factor put
    // the server and clients; a noisy run or facet named in the data's quality), claim/6
    // (a claim of any shift decided as its comparison is), report/10 (the findings under
    // the title as a list, then what they rest on), claim/7 (an undecided claim of any shift
    // gives its comparison's reason), report/11 (a trend's change as a ratio with its CI),
    // report/12 (a server's `profile` among the settings that differ), claim/8 (the rank
    // test against a claim's edges decides it where the passes are too few for the CI),
    // report/13 (a block's design says what its trials profiled), claim/9 (that test's
    // edge said as the ratio of medians), claim/10 (α of a claim over operations with
    // three significant digits; `==` within a tolerance) and claim/11 (a member of a claim
    // over many fails only at α/m)
    let got = analysis_claim_report_keys(&analyses_graph());
    let want = [
        (
            "analysis/per-op",
            "5d2b00b92aa5e31700cf6f4a196fe7be93192575297790bd76eb6fd17a809042",
            r#"{"kind":"compare","props":{"baseline":"a"}}"#,
        ),
        (
            "analysis/scaling",
            "06f777f1f17afe65303bdd8636cef4707c05c02e2e833f6e09f2bbddf48bef9b",
            r#"{"kind":"scaling","props":{"metric":"tps","style":"bar","x":"threads"}}"#,
        ),
        // `within` is written, as null when absent; `by` only when written
        (
            "claim/b keeps up",
            "2b9b0de380f48e470cce1956e64ad674fc683d4b16ab0f072dc24cbf858024d2",
            r#"{"expect":"b >= a","metric":"tps","where":{"threads":4},"within":0.05}"#,
        ),
        (
            "claim/b is faster",
            "b2a6a0fbcc1953505d3d4e1547750ee43157cf96b7a86a5e8f7ea20c98e4fb16",
            r#"{"by":0.05,"expect":"b > a","metric":"tps","where":{"threads":4},"within":null}"#,
        ),
        (
            "claim/b is not slower at one thread",
            "0fe8b11d43464c0a8902a0aab98493411807a3a9e29a40f91a2620e4e797822c",
            r#"{"expect":"b >= a","metric":"tps","where":{"threads":1},"within":null}"#,
        ),
        (
            "report/full",
            "fdbd93b5823262c09bf0e24a9641b439cc86e3a13c9f7c8df58782998e3f7543",
            r#"{"format":"markdown","passes":{"ro":{"max":2,"metric":"tps","min":2},"suite":{"max":1,"metric":"tps","min":1}},"title":"Allocators, pinned"}"#,
        ),
        (
            "report/plain",
            "7f27dbacc5658d7ce0785c5844ba8a54f2144021848f6e512ae2b8f7b3874ae9",
            r#"{"format":null,"passes":{"ro":{"max":2,"metric":"tps","min":2},"suite":{"max":1,"metric":"tps","min":1}},"title":"Allocators, pinned"}"#,
        ),
    ];
    let want: Vec<(String, String, String)> = want
        .iter()
        .map(|&(a, k, d)| (a.to_string(), k.to_string(), d.to_string()))
        .collect();
    assert_eq!(got, want);
}

#[test]
fn golden_analysis_key_json() {
    let g = analyses_graph();
    assert_eq!(
        key_jsons(&g)["analysis/per-op"],
        concat!(
            r#"{"schema":1,"kind":"analysis","definition":{"kind":"compare","props":{"baseline":"a"}},"#,
            r#""inputs":[{"mount":"trial/suite/a","digest":"c266b6011050d0f293322805c691ba664c8acb97c119c32ec2dd9c6fb1130b77"},"#,
            r#"{"mount":"trial/suite/b","digest":"ceb116e7b799dc648f534a0e78126f5bfa3a38d0d18e31ac122bd95100c09d0c"}],"#,
            r#""code":"analysis/4","pass":1}"#
        )
    );
}

#[test]
fn typed_analysis_claim_and_report_definitions_read_back_what_the_resolver_wrote() {
    use cairn_defs::{AnalysisDef, ClaimDef, ReportDef};
    use serde_json::json;

    let g = analyses_graph();
    let step = |a: &str| g.steps.iter().find(|s| s.address == a).expect(a);

    let per_op: AnalysisDef = step("analysis/per-op").def().unwrap();
    assert_eq!(
        (per_op.kind.as_str(), per_op.baseline(), per_op.metric()),
        ("compare", Some("a"), None)
    );
    let scaling: AnalysisDef = step("analysis/scaling").def().unwrap();
    assert_eq!(
        (scaling.metric(), scaling.x(), scaling.style()),
        (Some("tps"), Some("threads"), Some("bar"))
    );
    assert_eq!(scaling.paired(), Ok(false));

    let keeps_up: ClaimDef = step("claim/b keeps up").def().unwrap();
    assert_eq!((keeps_up.within, keeps_up.by), (Some(0.05), None));
    assert_eq!(keeps_up.filter["threads"], json!(4));
    let faster: ClaimDef = step("claim/b is faster").def().unwrap();
    assert_eq!((faster.within, faster.by), (None, Some(0.05)));
    assert_eq!(faster.expect, "b > a");

    let full: ReportDef = step("report/full").def().unwrap();
    assert_eq!(full.format.as_deref(), Some("markdown"));
    assert_eq!(full.title, "Allocators, pinned");
    let plain: ReportDef = step("report/plain").def().unwrap();
    assert_eq!(plain.format, None);

    // read and written again, each is the very JSON of its key: the bootstrap of a table, a
    // scaling or a claim is seeded from that JSON
    for s in g.steps.iter().filter(|s| !s.address.starts_with("trial/")) {
        let again = match s.address.split('/').next() {
            Some("analysis") => serde_json::to_value(s.def::<AnalysisDef>().unwrap()),
            Some("claim") => serde_json::to_value(s.def::<ClaimDef>().unwrap()),
            _ => serde_json::to_value(s.def::<ReportDef>().unwrap()),
        };
        assert_eq!(again.unwrap(), s.definition, "{}", s.address);
    }
}
