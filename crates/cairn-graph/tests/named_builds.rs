//! Keys of builds that extend a named build: the flattening happens before keys, so such a
//! build has the definition and key of the same build written out inline; a change to the
//! named build moves the keys of every build that extends it, an image's own override only its
//! own; and the shipped MariaDB plan, written with named builds, keeps the keys it had inline.

use std::collections::BTreeMap;
use std::path::Path;

use cairn_graph::{definition_key, resolve, step_key, Fingerprint, StepGraph};

fn fingerprint() -> Fingerprint {
    Fingerprint {
        cpu_model: "Test CPU".into(),
        cores: 2,
        threads: 2,
        memory_gib: 1,
        kernel: "6.1.0-test".into(),
        runtime: "host".into(),
    }
}

/// Keys, definition keys and definitions of the image steps, by address; an image step's
/// "output digest" is blake3 of its own key, so keys chain like in a run.
fn image_keys(g: &StepGraph) -> BTreeMap<String, (String, String, String)> {
    let fp = fingerprint();
    let mut out_digest: Vec<String> = vec![String::new(); g.steps.len()];
    let mut def_keys: Vec<String> = vec![String::new(); g.steps.len()];
    let mut keys = BTreeMap::new();
    for &id in &g.order {
        let s = &g.steps[id];
        let ds: Vec<&str> = s
            .inputs
            .iter()
            .map(|i| out_digest[i.from].as_str())
            .collect();
        let k = step_key(s, &ds, Some(&fp)).hash();
        out_digest[id] = blake3::hash(k.as_bytes()).to_hex().to_string();
        let dk: Vec<&str> = s.inputs.iter().map(|i| def_keys[i.from].as_str()).collect();
        def_keys[id] = definition_key(s, &dk);
        if s.address.starts_with("image/") {
            keys.insert(
                s.address.clone(),
                (k, def_keys[id].clone(), s.definition.to_string()),
            );
        }
    }
    keys
}

fn parse(text: &str) -> StepGraph {
    let plan = cairn_plan::parse_str("b.kdl", text)
        .unwrap_or_else(|e| panic!("{}", cairn_plan::render(&e)));
    resolve(&plan).expect("resolves")
}

const NAMED: &str = r#"
study "b"
build "o2" {
    source "debian:hello"
    cflags "-O2" "-fno-omit-frame-pointer"
    configure "--disable-nls" "--with-x=/usr"
    strip #true
}
build "o3" extends="o2" { cflags "-O3" }
image "o2" { build extends="o2" }
image "o3" { build extends="o3" }
image "omit" { build extends="o2" { cflags "-fomit-frame-pointer"; configure-remove "--with-x"; link "static" } }
"#;

const INLINE: &str = r#"
study "b"
image "o2" { build "debian:hello" { cflags "-O2" "-fno-omit-frame-pointer"; configure "--disable-nls" "--with-x=/usr"; strip #true } }
image "o3" { build "debian:hello" { cflags "-O3" "-fno-omit-frame-pointer"; configure "--disable-nls" "--with-x=/usr"; strip #true } }
image "omit" { build "debian:hello" { cflags "-O2" "-fomit-frame-pointer"; configure "--disable-nls"; strip #true; link "static" } }
"#;

#[test]
fn a_build_extending_a_named_build_has_the_key_of_the_build_written_out() {
    let named = image_keys(&parse(NAMED));
    let inline = image_keys(&parse(INLINE));
    assert_eq!(named.len(), 4, "one base, three builds: {named:?}");
    assert_eq!(named, inline);
}

#[test]
fn a_named_build_moves_the_keys_of_its_builds_and_an_override_only_its_own() {
    let base = image_keys(&parse(NAMED));
    // the named build's configure changes: every build that extends it (also through `o3`)
    let changed = image_keys(&parse(&NAMED.replace(
        r#""--disable-nls" "--with-x=/usr""#,
        r#""--enable-nls" "--with-x=/usr""#,
    )));
    assert_eq!(
        changed["image/o2"], base["image/o2"],
        "the base image is not a build"
    );
    for build in ["image/o2/1", "image/o3/1", "image/omit/1"] {
        assert_ne!(changed[build].0, base[build].0, "{build}");
    }
    // one image's own override: only its build
    let own = image_keys(&parse(
        &NAMED.replace(r#"link "static""#, r#"link "dynamic""#),
    ));
    assert_ne!(own["image/omit/1"].0, base["image/omit/1"].0);
    assert_eq!(own["image/o2/1"], base["image/o2/1"]);
    assert_eq!(own["image/o3/1"], base["image/o3/1"]);
    // an override that writes the inherited value changes nothing
    let same = image_keys(&parse(&NAMED.replace(
        r#"image "o2" { build extends="o2" }"#,
        r#"image "o2" { build extends="o2" { strip #true; cflags "-O2" } }"#,
    )));
    assert_eq!(same, base);
}

/// A tarball named by a named build in an imported file is found beside that file, and the
/// build is the one an image of that file writing it out has.
#[test]
fn a_named_builds_tarball_is_relative_to_its_own_file() {
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, text: &str| {
        let p = dir.path().join(name);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    };
    write("lib/src/hello.tar.gz", "not really a tarball");
    write(
        "lib/builds.kdl",
        r#"build "hello" { source "tarball:src/hello.tar.gz"; cflags "-O2" }
image "inline" { build "tarball:src/hello.tar.gz" { cflags "-O2" } }"#,
    );
    write(
        "plan.kdl",
        r#"study "t"
import "lib/builds.kdl"
image "named" { build extends="hello" }
server "s" { image "inline" }
"#,
    );
    let plan = cairn_plan::load(&dir.path().join("plan.kdl"))
        .unwrap_or_else(|e| panic!("{}", cairn_plan::render(&e)));
    let keys = image_keys(&resolve(&plan).expect("resolves"));
    // one definition on one base: the two images share the step (named after the first)
    assert_eq!(
        keys.keys().collect::<Vec<_>>(),
        ["image/named", "image/named/1"],
        "{keys:?}"
    );
    assert!(keys["image/named/1"].2.contains("hello.tar.gz"), "{keys:?}");
}

/// `plans/mariadb-source.kdl` wrote its two builds out in full before named builds; written
/// with a named build now, both have the definitions (and so the keys) they had.
#[test]
fn the_shipped_mariadb_plan_keeps_its_keys() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let plan = cairn_plan::load(&repo.join("plans/mariadb-source.kdl"))
        .unwrap_or_else(|e| panic!("{}", cairn_plan::render(&e)));
    let shipped = image_keys(&resolve(&plan).expect("resolves"));
    const PACKAGES: &str = r#"packages "sysbench" "procps" "libssl3" "libpcre2-8-0" "zlib1g" "libaio1" "liburing2" "libncurses6" "libstdc++6" "libcrypt1" "libsystemd0" "libzstd1" "liblz4-1" "libsnappy1v5" "liblzma5" "libbz2-1.0" "libnuma1" "libedit2" "liblzo2-2" "libcrack2""#;
    const CMAKE: &str = r#"cmake "-DINSTALL_LAYOUT=DEB" "-DWITH_SSL=system" "-DWITH_WSREP=OFF" "-DWITH_UNIT_TESTS=OFF" "-DWITH_EMBEDDED_SERVER=OFF" "-DWITH_MARIABACKUP=OFF" "-DPLUGIN_ROCKSDB=NO" "-DPLUGIN_MROONGA=NO" "-DPLUGIN_SPIDER=NO" "-DPLUGIN_CONNECT=NO" "-DPLUGIN_OQGRAPH=NO" "-DPLUGIN_COLUMNSTORE=NO" "-DPLUGIN_S3=NO" "-DPLUGIN_AUTH_PAM=NO" "-DPLUGIN_AUTH_PAM_V1=NO" "-DPLUGIN_AUTH_GSSAPI=NO" "-DPLUGIN_HASHICORP_KEY_MANAGEMENT=NO""#;
    let run = r#"run "groupadd --system mysql && useradd --system --gid mysql --no-create-home --home-dir /nonexistent mysql""#;
    let inline = format!(
        r#"study "mariadb-source"
image "mariadb-src-o2" {{
    debian suite="bookworm" arch="amd64"
    {PACKAGES}
    build "debian:mariadb" {{
        cflags "-O2"
        cxxflags "-O2"
        {CMAKE}
        prefix "/usr"
        strip #true
    }}
    {run}
}}
image "mariadb-src-native" {{
    debian suite="bookworm" arch="amd64"
    {PACKAGES}
    build "debian:mariadb" {{
        cflags "-O3" "-march=native"
        cxxflags "-O3" "-march=native"
        {CMAKE}
        prefix "/usr"
        strip #true
    }}
    {run}
}}
"#
    );
    let inline = image_keys(&parse(&inline));
    for (address, keys) in &inline {
        assert_eq!(shipped.get(address), Some(keys), "{address}");
    }
    assert_eq!(
        inline.len(),
        5,
        "one base, two builds, two runs: {inline:?}"
    );
}
