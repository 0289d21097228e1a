//! An A/A study — two servers of one trials block with the same definition and image, the
//! standard way to calibrate a machine's noise — measures each as a cell of its own: their
//! trials get different keys (the server's name joins the definition), while every other
//! trial's definition holds no name.

use cairn_graph::{resolve, step_key, StepKind};

fn keys(text: &str) -> Vec<(String, String, serde_json::Value)> {
    let plan = cairn_plan::parse_str("aa.kdl", text)
        .unwrap_or_else(|e| panic!("{}", cairn_plan::render(&e)));
    let g = resolve(&plan).expect("resolves");
    let fake = "00".repeat(32);
    g.steps
        .iter()
        .filter(|s| s.kind == StepKind::TRIAL)
        .map(|s| {
            let inputs: Vec<&str> = s.inputs.iter().map(|_| fake.as_str()).collect();
            (
                s.address.clone(),
                step_key(s, &inputs, None).hash(),
                s.definition.clone(),
            )
        })
        .collect()
}

const PLAN: &str = r#"
image "i" { debian suite="bookworm"; packages "mariadb-server" }
image "j" { debian suite="trixie"; packages "mariadb-server" }
server "a" { image "i"; option max_connections=100 }
server "b" { extends "a" }
server "c" { image "i"; option max_connections=200 }
server "d" { image "j"; option max_connections=100 }
dataset "sb" { sysbench tables=1 rows=100 }
workload "w" { sysbench "oltp_point_select"; threads 1 }
trials "t" { servers "a" "b" "c" "d"; dataset "sb"; workload "w"; passes 2 }
"#;

#[test]
fn identical_servers_are_cells_of_their_own_and_others_carry_no_name() {
    let k = keys(PLAN);
    let of = |addr: &str| k.iter().find(|(a, _, _)| a == addr).unwrap();
    let (a, b) = (of("trial/t/a#1"), of("trial/t/b#1"));
    assert_ne!(a.1, b.1, "an A/A pair shares no key");
    assert_eq!(a.2["replica"], "a");
    assert_eq!(b.2["replica"], "b");
    // another option, or the same options on another image: no name in the definition
    for other in ["trial/t/c#1", "trial/t/d#1"] {
        assert!(of(other).2.get("replica").is_none(), "{other}");
    }
    // each pass its own key as before
    assert_ne!(of("trial/t/a#1").1, of("trial/t/a#2").1);
}
