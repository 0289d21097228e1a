//! Named builds: a top-level `build "name" { … }` that images' builds extend, flattened by the
//! parser into the build the chain means — the same value as the build written out inline —
//! and what is refused or warned about.

use cairn_plan::{parse_str, render, Build, Layer, Plan};

fn parse(text: &str) -> Plan {
    parse_str("b.kdl", text).unwrap_or_else(|e| panic!("{}", render(&e)))
}

/// Every problem of a plan that must be refused, rendered.
fn refused(text: &str) -> String {
    match parse_str("b.kdl", text) {
        Ok(_) => panic!("should be refused:\n{text}"),
        Err(e) => render(&e),
    }
}

/// The build layers of image `name`, in order.
fn builds(plan: &Plan, name: &str) -> Vec<Build> {
    let image = plan
        .images
        .iter()
        .find(|i| i.name.value == name)
        .unwrap_or_else(|| panic!("no image {name}"));
    image
        .layers
        .iter()
        .filter_map(|l| match &l.value {
            Layer::Build(b) => Some((**b).clone()),
            _ => None,
        })
        .collect()
}

const NAMED: &str = r#"
build "o2" {
    source "debian:mariadb"
    cflags "-O2" "-fno-omit-frame-pointer" "-pipe"
    cmake "-DWITH_WSREP=OFF" "-DPLUGIN_TOKUDB=NO" "-DPLUGIN_S3=NO"
    deps "libssl-dev"
    prefix "/usr"
    strip #true
}
build "o3" extends="o2" {
    cflags "-O3" "-march=native"
}
build "o3-static" extends="o3" {
    link "static"
    cmake "-DPLUGIN_TOKUDB=YES"
    cmake-remove "-DPLUGIN_S3"
}
image "a" { build extends="o2" }
image "b" { build extends="o3-static" }
image "c" {
    build "debian:mariadb-11" extends="o2" {
        cflags "-fomit-frame-pointer"
        cflags-remove "-pipe"
        strip #false
        type "debug"
    }
}
"#;

const INLINE: &str = r#"
image "a" {
    build "debian:mariadb" {
        cflags "-O2" "-fno-omit-frame-pointer" "-pipe"
        cmake "-DWITH_WSREP=OFF" "-DPLUGIN_TOKUDB=NO" "-DPLUGIN_S3=NO"
        deps "libssl-dev"
        prefix "/usr"
        strip #true
    }
}
image "b" {
    build "debian:mariadb" {
        cflags "-O3" "-fno-omit-frame-pointer" "-pipe" "-march=native"
        cmake "-DWITH_WSREP=OFF" "-DPLUGIN_TOKUDB=YES"
        deps "libssl-dev"
        prefix "/usr"
        strip #true
        link "static"
    }
}
image "c" {
    build "debian:mariadb-11" {
        cflags "-O2" "-fomit-frame-pointer"
        cmake "-DWITH_WSREP=OFF" "-DPLUGIN_TOKUDB=NO" "-DPLUGIN_S3=NO"
        deps "libssl-dev"
        prefix "/usr"
        strip #false
        type "debug"
    }
}
"#;

#[test]
fn a_build_that_extends_a_named_build_is_the_build_written_out() {
    let named = parse(NAMED);
    let inline = parse(INLINE);
    for image in ["a", "b", "c"] {
        assert_eq!(
            builds(&named, image),
            builds(&inline, image),
            "image {image}"
        );
    }
    assert!(named.warnings.is_empty());
}

#[test]
fn a_build_without_extends_is_as_written() {
    // no merging without a base: repeats stay, as they always have (their keys are kept)
    let plan = parse(r#"image "x" { build "debian:hello" { cflags "-O2" "-O2"; cflags "-O3" } }"#);
    assert_eq!(builds(&plan, "x")[0].cflags, ["-O2", "-O2", "-O3"]);
}

/// The example of `docs/plan-language.md`'s `build` section parses, and each image has the
/// build its comments say.
#[test]
fn the_reference_example_means_what_it_says() {
    let doc = include_str!("../../../docs/plan-language.md");
    let section = doc
        .split("### `build`\n")
        .nth(1)
        .expect("a `build` section");
    let example = section
        .split("```kdl\n")
        .nth(1)
        .and_then(|s| s.split("```").next())
        .expect("an example");
    let plan = parse(example);
    let o2 = &builds(&plan, "o2")[0];
    assert_eq!(o2.cflags, ["-O2", "-fno-omit-frame-pointer"]);
    assert_eq!(
        builds(&plan, "o3")[0].cflags,
        ["-O3", "-fno-omit-frame-pointer"]
    );
    assert_eq!(
        builds(&plan, "omit-fp")[0].cxxflags,
        ["-O2", "-fomit-frame-pointer"]
    );
    let sd = &builds(&plan, "static-debug")[0];
    assert_eq!(
        (sd.link.as_deref(), sd.build_type.as_deref()),
        (Some("static"), Some("debug"))
    );
    assert_eq!(
        sd.cmake,
        [
            "-DWITH_WSREP=OFF",
            "-DPLUGIN_ROCKSDB=NO",
            "-DPLUGIN_TOKUDB=YES"
        ]
    );
    assert_eq!(sd.prefix.as_deref(), Some("/usr"));
}

#[test]
fn an_image_extending_a_built_image_and_building_again_is_warned_about_at_both_builds() {
    let plan = parse(
        r#"
image "o2" {
    build "debian:hello" { cflags "-O2" }
}
image "o3" {
    extends "o2"
    build "debian:hello" { cflags "-O3" }
}
image "o2-conf" {
    extends "o2"
    run "echo conf"
}
"#,
    );
    assert_eq!(plan.warnings.len(), 1, "only the image that builds again");
    let w = render(&plan.warnings[0]);
    assert!(plan.warnings[0].is_warning());
    assert!(
        w.contains("image `o3` builds on top of the build it inherits from `o2`"),
        "{w}"
    );
    // both builds and the `extends` between them are shown where they are written
    for line in [
        "build \"debian:hello\" { cflags \"-O2\" }",
        "extends \"o2\"",
        "build \"debian:hello\" { cflags \"-O3\" }",
    ] {
        assert!(w.contains(line), "{line}:\n{w}");
    }
    assert!(w.contains("the first build (of `o2`)"), "{w}");
    assert!(w.contains("a second build, made over the first"), "{w}");
    assert!(w.contains("cairn::plan::stacked_build"), "{w}");
    // both builds still stack: the warning changes nothing
    assert_eq!(builds(&plan, "o3").len(), 2);
}

#[test]
fn a_build_extending_an_unknown_name_or_a_cycle_is_refused() {
    let e = refused(
        r#"image "x" { build extends="o22" }
build "o2" { source "debian:hello" }"#,
    );
    assert!(e.contains("no build named `o22`"), "{e}");
    assert!(e.contains("did you mean `o2`"), "{e}");

    let e = refused(
        r#"build "a" extends="b" { source "debian:hello" }
build "b" extends="a" { cflags "-O2" }
image "x" { build extends="a" }"#,
    );
    assert!(e.contains("build `extends` cycle"), "{e}");
}

#[test]
fn what_the_base_does_not_allow_is_refused_at_its_place() {
    let base = r#"build "o2" { source "debian:hello"; cmake "-DX=1"; strip #true; cflags "-O2" }
"#;
    let e = refused(&format!(
        "{base}image \"x\" {{ build extends=\"o2\" {{ configure \"--disable-nls\" }} }}"
    ));
    assert!(e.contains("either `configure` or `cmake`"), "{e}");
    assert!(e.contains("`cmake`, inherited"), "{e}");

    let e = refused(&format!(
        "{base}image \"x\" {{ build extends=\"o2\" {{ type \"debug\" }} }}"
    ));
    assert!(e.contains("a debug build that is stripped"), "{e}");
    assert!(e.contains("`strip #true`, inherited"), "{e}");

    let e = refused(&format!(
        "{base}image \"x\" {{ build extends=\"o2\" {{ cflags-remove \"-O3\" }} }}"
    ));
    assert!(e.contains("`o2` gives no such cflags"), "{e}");

    let e = refused(r#"image "x" { build "debian:hello" { cflags-remove "-O2" } }"#);
    assert!(e.contains("this build extends none"), "{e}");

    let e = refused(
        r#"build "flags" { cflags "-O2" }
image "x" { build extends="flags" }"#,
    );
    assert!(e.contains("this build names no source"), "{e}");
}

#[test]
fn a_conflict_of_a_named_build_is_refused_once_at_it() {
    let e = refused(
        r#"build "both" { source "debian:hello"; cmake "-DX=1"; configure "--x" }
image "a" { build extends="both" }
image "b" { build extends="both" { cflags "-O2" } }"#,
    );
    assert_eq!(e.matches("either `configure` or `cmake`").count(), 1, "{e}");
}

/// The example of `docs/builds.md` parses, each image with the one change its build says.
#[test]
fn the_builds_guide_example_means_what_it_says() {
    let doc = include_str!("../../../docs/builds.md");
    let example = doc
        .split("## One build, several flag sets")
        .nth(1)
        .and_then(|s| s.split("```kdl\n").nth(1))
        .and_then(|s| s.split("```").next())
        .expect("an example");
    let plan = parse(example);
    let o2 = builds(&plan, "o2").remove(0);
    assert_eq!(o2.cflags, ["-O2", "-fno-omit-frame-pointer"]);
    // each image's build is o2's with the one change it says
    let with = |change: &dyn Fn(&mut Build)| {
        let mut b = o2.clone();
        change(&mut b);
        b
    };
    let flags = |b: &mut Build, f: [&str; 2]| {
        b.cflags = f.map(String::from).to_vec();
        b.cxxflags = b.cflags.clone();
    };
    assert_eq!(
        builds(&plan, "o3")[0],
        with(&|b| flags(b, ["-O3", "-fno-omit-frame-pointer"]))
    );
    assert_eq!(
        builds(&plan, "omit-fp")[0],
        with(&|b| flags(b, ["-O2", "-fomit-frame-pointer"]))
    );
    assert_eq!(
        builds(&plan, "debug")[0],
        with(&|b| b.build_type = Some("debug".into()))
    );
    assert_eq!(
        builds(&plan, "static")[0],
        with(&|b| {
            b.link = Some("static".into());
            b.strip = Some(true);
        })
    );
    assert_eq!(
        builds(&plan, "tokudb")[0],
        with(&|b| b.cmake[0] = "-DPLUGIN_TOKUDB=YES".into())
    );
    assert!(plan.warnings.is_empty());
}

/// A long chain of named builds is flattened without running out of stack.
#[test]
fn a_long_chain_of_named_builds_is_flattened() {
    let n = 5000;
    let mut text = String::from("build \"b0\" { source \"debian:hello\"; cflags \"-O0\" }\n");
    for i in 1..n {
        text.push_str(&format!(
            "build \"b{i}\" extends=\"b{}\" {{ cflags \"-DLEVEL={i}\" }}\n",
            i - 1
        ));
    }
    text.push_str(&format!("image \"x\" {{ build extends=\"b{}\" }}\n", n - 1));
    let plan = parse(&text);
    assert_eq!(
        builds(&plan, "x")[0].cflags,
        ["-O0", &format!("-DLEVEL={}", n - 1)]
    );
}

/// `link "static" programs="…"`: the named programs, inherited with their `link`, replaced
/// by a `link` written later, and refused beside `dynamic` or with a path.
#[test]
fn link_static_may_name_the_programs_it_links() {
    let plan = parse(
        r#"
build "o2" { source "debian:mariadb"; cflags "-O2" }
build "server-static" extends="o2" { link "static" programs="mariadbd mariadb-dump" }
build "all-static" extends="server-static" { link "static" }
image "s" { build extends="server-static" { cflags "-O3" } }
image "a" { build extends="all-static" }
"#,
    );
    let s = &builds(&plan, "s")[0];
    assert_eq!(
        (s.link.as_deref(), s.link_programs.as_slice()),
        (
            Some("static"),
            ["mariadbd", "mariadb-dump"].map(String::from).as_slice()
        )
    );
    assert!(builds(&plan, "a")[0].link_programs.is_empty());
    let e = refused(r#"image "x" { build "debian:hello" { link "dynamic" programs="hello" } }"#);
    assert!(e.contains("it goes with `link \"static\"`"), "{e}");
    let e = refused(
        r#"image "x" { build "debian:hello" { link "static" programs="/usr/bin/hello" } }"#,
    );
    assert!(e.contains("is not a list of program names"), "{e}");
    let e = refused(r#"image "x" { build "debian:hello" { link "static" files="hello" } }"#);
    assert!(e.contains("unknown property `files`"), "{e}");
}
