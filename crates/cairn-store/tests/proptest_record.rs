//! Property tests: random records round-trip, and any single-byte change to a record file is caught.

mod common;

use std::collections::BTreeMap;

use cairn_store::{Record, Store, StoreError};
use proptest::prelude::*;
use serde_json::Value;

fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(Value::from),
        ".*".prop_map(Value::String),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map(".{0,8}", inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

prop_compose! {
    fn record()(
        n in any::<u64>(),
        kind in "command|image|trial",
        study in "[a-z]{1,8}",
        address in ".{0,20}",
        key_json in json_value(),
        definition in json_value(),
        inputs in prop::collection::btree_map(".{0,6}", "[0-9a-f]{64}", 0..3),
        extra in prop::collection::btree_map(".{0,6}", json_value(), 0..3),
        fingerprint in prop::option::of(json_value()),
        duration_ms in any::<f64>().prop_filter("finite", |f| f.is_finite()),
        exit_status in any::<i32>(),
        started in ".{0,30}",
        version in ".{0,10}",
        blobs in prop::collection::vec(prop::collection::vec(any::<u8>(), 0..40), 0..3),
    ) -> (Record, Vec<Vec<u8>>) {
        let mut rec = Record::new(common::key(n), kind, study, address);
        rec.key_json = key_json;
        rec.definition = definition;
        rec.inputs = inputs;
        rec.extra = extra.into_iter().collect();
        rec.fingerprint = fingerprint;
        rec.duration_ms = duration_ms;
        rec.exit_status = exit_status;
        rec.started = started.clone();
        rec.finished = started;
        rec.cairn_version = version;
        (rec, blobs)
    }
}

fn put(store: &Store, mut rec: Record, blobs: &[Vec<u8>]) -> Record {
    let mut outputs = BTreeMap::new();
    for (i, b) in blobs.iter().enumerate() {
        outputs.insert(format!("out{i}"), store.put_blob(b).unwrap());
    }
    if let Some(first) = outputs.values().next() {
        rec.logs.insert("stdout".into(), first.clone());
    }
    rec.output_digest = Record::compute_output_digest(&outputs);
    rec.outputs = outputs;
    store.put_record(&mut rec).unwrap();
    rec
}

proptest! {
    // PROPTEST_CASES=5000 for a longer run.
    #![proptest_config(ProptestConfig::with_cases(
        std::env::var("PROPTEST_CASES").ok().and_then(|s| s.parse().ok()).unwrap_or(64)
    ))]

    #[test]
    fn records_round_trip((rec, blobs) in record()) {
        let (_dir, store) = common::store();
        let rec = put(&store, rec, &blobs);
        let back = store.get_record(&rec.key).unwrap().unwrap();
        prop_assert_eq!(&back, &rec);
        // Re-putting what was read gives the same bytes.
        let before = std::fs::read(store.record_path(&rec.key)).unwrap();
        let mut again = back;
        store.put_record(&mut again).unwrap();
        prop_assert_eq!(std::fs::read(store.record_path(&rec.key)).unwrap(), before);
    }

    #[test]
    fn any_single_byte_change_is_detected(
        (rec, blobs) in record(),
        pos in any::<prop::sample::Index>(),
        delta in 1u8..=255,
    ) {
        let (_dir, store) = common::store();
        let rec = put(&store, rec, &blobs);
        let path = store.record_path(&rec.key);
        let mut bytes = std::fs::read(&path).unwrap();
        let i = pos.index(bytes.len());
        bytes[i] = bytes[i].wrapping_add(delta);
        std::fs::write(&path, &bytes).unwrap();
        let r = store.get_record(&rec.key);
        prop_assert!(
            matches!(r, Err(StoreError::CorruptRecord { .. })),
            "byte {} changed, got {:?}", i, r
        );
    }
}
