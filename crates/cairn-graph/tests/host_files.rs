//! Files a plan reads from the host, as resolution hashes them: relative to the file that
//! declared them, and checked again (a cached plan skipped the reader's checks).

use std::path::Path;

use cairn_graph::ResolveError;

fn write(dir: &Path, name: &str, text: &str) {
    let path = dir.join(name);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

#[test]
fn an_inherited_file_layer_is_read_beside_the_image_that_declared_it() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    write(d, "lib/x.cnf", "[mysqld]\n");
    write(
        d,
        "lib/images.kdl",
        "image \"parent\" { debian; file \"x.cnf\" \"/etc/x.cnf\" }\n",
    );
    write(
        d,
        "p.kdl",
        "import \"lib/images.kdl\"\nimage \"child\" { extends \"parent\"; run \"true\" }\n",
    );
    let plan = cairn_plan::load(&d.join("p.kdl")).unwrap();
    // the parent's layer was looked for beside p.kdl before
    let graph = cairn_graph::resolve(&plan).expect("x.cnf is found in lib/");
    let layer = graph
        .steps
        .iter()
        .find_map(|s| s.command.as_ref().and_then(|c| c.files.first()))
        .unwrap();
    assert_eq!(layer.abs, d.join("lib/x.cnf"));
}

#[test]
fn an_input_changed_after_the_plan_was_read_is_checked_again() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    write(d, "data.txt", "x\n");
    write(
        d,
        "p.kdl",
        "step \"s\" { run \"true\"; input \"data.txt\" }\n",
    );
    let plan = cairn_plan::load(&d.join("p.kdl")).unwrap();
    assert!(cairn_graph::resolve(&plan).is_ok());

    // as a cached plan would be: the text is unchanged, the file is now a link out
    std::fs::remove_file(d.join("data.txt")).unwrap();
    std::os::unix::fs::symlink("/etc/passwd", d.join("data.txt")).unwrap();
    match cairn_graph::resolve(&plan) {
        Err(ResolveError::HostFile { why, .. }) => {
            assert!(why.to_string().contains("outside the plan's directory"))
        }
        other => panic!("{other:?}"),
    }

    // or a FIFO, whose read would never end
    std::fs::remove_file(d.join("data.txt")).unwrap();
    assert!(std::process::Command::new("mkfifo")
        .arg(d.join("data.txt"))
        .status()
        .unwrap()
        .success());
    match cairn_graph::resolve(&plan) {
        Err(ResolveError::HostFile { why, .. }) => {
            assert_eq!(why.to_string(), "it is not a regular file")
        }
        other => panic!("{other:?}"),
    }
}
