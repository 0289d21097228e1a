//! A claim's `trials "block"`: its step reads that block's trials alone (and, under a
//! sequential design, at that block's looks); without it, every block, as before; a band
//! (`about`, `tolerance`) reaches its definition, other claims' definitions are unchanged.

use cairn_defs::ClaimDef;
use cairn_graph::resolve;

const PLAN: &str = r#"
study "claim-trials"
server "a" { option innodb_buffer_pool_size="64M" }
server "b" { option innodb_buffer_pool_size="64M"; allocator "jemalloc" }
workload "ro" { sysbench "oltp_read_only"; threads 4 }
workload "rw" { sysbench "oltp_read_write"; threads 4 }
trials "ro" { servers "a" "b"; workload "ro"; passes 2 }
trials "rw" { servers "a" "b"; workload "rw"; passes 3 }
claim "b is about 20% faster at rw" {
    trials "rw"
    metric "tps"
    expect "b > a" about="20%" tolerance="5%"
}
claim "b is faster" {
    metric "tps"
    expect "b > a" by="5%"
}
"#;

#[test]
fn a_claim_reads_the_trials_block_it_names_and_its_band() {
    let plan = cairn_plan::parse_str("claims.kdl", PLAN)
        .unwrap_or_else(|e| panic!("{}", cairn_plan::render(&e)));
    let g = resolve(&plan).expect("resolves");
    let step = |a: &str| g.steps.iter().find(|s| s.address == a).expect(a);
    let read = |a: &str| -> Vec<String> {
        step(a)
            .inputs
            .iter()
            .map(|i| g.steps[i.from].address.clone())
            .collect()
    };
    let named = read("claim/b is about 20% faster at rw");
    assert_eq!(named.len(), 2 * 3, "{named:?}");
    assert!(
        named.iter().all(|a| a.starts_with("trial/rw/")),
        "{named:?}"
    );
    let every = read("claim/b is faster");
    assert_eq!(every.len(), 2 * 2 + 2 * 3, "{every:?}");

    let band: ClaimDef = step("claim/b is about 20% faster at rw").def().unwrap();
    assert_eq!((band.about, band.tolerance), (Some(0.2), Some(0.05)));
    // a claim without a band writes neither: its key is what it was
    let plain = serde_json::to_string(&step("claim/b is faster").definition).unwrap();
    assert!(
        !plain.contains("about") && !plain.contains("tolerance"),
        "{plain}"
    );
}
