//! super-smack's `select-key.smack` benchmark driven natively: the `http_auth` table with a seeded dictionary ([`dataset`]), the `select_index` query barrel ([`run`]) and super-smack's report ([`report`]).
//!
//! `super-smack select-key.smack 10 1000` is [`SmackSpec::new`]`(SmackDataset::default(), 10,
//! 1000)`: 10 clients, 1000 rounds each, 2 `select_index` queries per round = 20000 queries.
//! Differences from the C++ tool, all documented where they are: clients are threads (not
//! forked processes), the data and dictionary come from a seed (not `gen-data`/`rand()`),
//! rows are loaded with multi-row INSERTs (not `LOAD DATA INFILE`), and query times are
//! kept exactly (HDR histogram) besides super-smack's whole-millisecond report.

pub mod dataset;
pub mod report;
pub mod run;

pub use dataset::{load_smack, HttpAuthRow, SmackDataset, SmackLoad};
pub use report::{smack_outcome, BarrelReport};
pub use run::{
    run_select_index, run_select_index_until, select_sql, ClientFigures, DictionaryOrder, SmackRun,
    SmackSpec,
};

#[cfg(test)]
mod tests {
    use serde_json::{json, Value};

    use super::*;
    use crate::workload::{Dataset, DatasetDef, Props, Workload, WorkloadDef};

    fn props(v: Value) -> Props {
        v.as_object().unwrap().clone()
    }

    fn dataset(v: Value) -> Result<Dataset, crate::Error> {
        Dataset::from_def(&DatasetDef {
            generator: "smack".into(),
            props: props(v),
        })
    }

    fn workload(
        ds: Option<&Dataset>,
        params: Value,
        driver: Value,
    ) -> Result<Workload, crate::Error> {
        Workload::from_def(
            &WorkloadDef {
                driver: "smack".into(),
                test: "select_index".into(),
                driver_props: props(driver),
                params: props(params),
            },
            ds,
            3,
        )
    }

    #[test]
    fn plan_definitions_become_specs() {
        let ds =
            dataset(json!({"rows": 5000, "words": 1000, "engine": "MyISAM", "seed": 9})).unwrap();
        assert_eq!(ds.database(), "smack");
        let d = ds.spec::<SmackDataset>().expect("a smack dataset");
        assert_eq!(
            (d.rows, d.words, d.engine.as_deref(), d.seed),
            (5000, Some(1000), Some("MyISAM"), 9)
        );

        let w = workload(Some(&ds), json!({}), json!({})).unwrap();
        let s = w.spec::<SmackSpec>().expect("a smack workload");
        // super-smack select-key.smack 10 1000
        assert_eq!((s.clients, s.rounds, s.queries_per_round), (10, 1000, 2));
        assert_eq!((s.dictionary, s.seed), (DictionaryOrder::Rand, 3));
        assert_eq!(&s.dataset, d);

        let w = workload(
            Some(&ds),
            json!({"clients": 4, "rounds": 200, "report-interval": 0.5}),
            json!({"queries-per-round": 1, "dictionary": "seq"}),
        )
        .unwrap();
        let s = w.spec::<SmackSpec>().expect("a smack workload");
        assert_eq!((s.clients, s.rounds, s.queries_per_round), (4, 200, 1));
        assert_eq!(s.dictionary, DictionaryOrder::Seq);
        assert_eq!(s.report_interval, std::time::Duration::from_millis(500));
    }

    #[test]
    fn bad_definitions_are_named() {
        let ds = dataset(json!({"rows": 100})).unwrap();
        let err = |r: Result<Workload, crate::Error>| r.unwrap_err().to_string();
        assert!(err(workload(Some(&ds), json!({"threads": 4}), json!({}))).contains("`threads`"));
        assert!(
            err(workload(Some(&ds), json!({"duration": 4.0}), json!({}))).contains("`duration`")
        );
        assert!(err(workload(
            Some(&ds),
            json!({}),
            json!({"dictionary": "zipf"})
        ))
        .contains(r#"`dictionary` must be one of "rand", "seq", not "zipf""#));
        assert!(err(workload(Some(&ds), json!({}), json!({"barrel": 2}))).contains("`barrel`"));
        assert!(err(workload(None, json!({}), json!({}))).contains("needs a smack dataset"));
        let sb = Dataset::from_def(&DatasetDef {
            generator: "sysbench".into(),
            props: Props::new(),
        })
        .unwrap();
        assert!(err(workload(Some(&sb), json!({}), json!({}))).contains("needs a smack dataset"));
        let e = Workload::from_def(
            &WorkloadDef {
                driver: "smack".into(),
                test: "update_select".into(),
                ..WorkloadDef::default()
            },
            Some(&ds),
            0,
        )
        .unwrap_err();
        assert!(e.to_string().contains("select_index"), "{e}");
        assert!(dataset(json!({"rows": 10, "words": 20}))
            .unwrap_err()
            .to_string()
            .contains("cannot exceed"));
        assert!(dataset(json!({"tables": 2}))
            .unwrap_err()
            .to_string()
            .contains("`tables`"));
    }
}
