//! Timing print (not an assertion) for a 10,000-step run: write and fully-cached load. Run with
//! `cargo test -p cairn-store --release --test timing -- --ignored --nocapture`.

mod common;

use std::time::{Duration, Instant};

use cairn_store::Record;

#[test]
#[ignore]
fn ten_thousand_steps() {
    let n_steps: u64 = std::env::var("CAIRN_STORE_TIMING_N")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(10_000);
    #[allow(non_snake_case)]
    let N = n_steps;
    let (_dir, s) = common::store();
    let t = Instant::now();
    for i in 0..N {
        let out = s.put_blob(format!("result {i}\n").as_bytes()).unwrap();
        let stdout = s.put_blob(format!("stdout of {i}\n").as_bytes()).unwrap();
        let stderr = s.put_blob(b"").unwrap();
        let k = common::key(i);
        let mut rec = common::record(&k, &[("out.txt", &out)], &stdout);
        rec.logs.insert("stderr".into(), stderr);
        s.put_record(&mut rec).unwrap();
        s.remember("timing", &format!("step[{i}]"), &k, None)
            .unwrap();
    }
    let write = t.elapsed();

    // A fully cached re-run: load and check every record and stat its blobs. Best of 3.
    let all: Vec<String> = (0..N).map(common::key).collect();
    let mut blobs = 0;
    let (mut load, mut batch) = (Duration::MAX, Duration::MAX);
    for _ in 0..3 {
        let t = Instant::now();
        blobs = 0;
        for k in &all {
            let rec = s.get_record(k).unwrap().unwrap();
            for b in rec.blobs() {
                assert!(s.has_blob(b));
                blobs += 1;
            }
        }
        load = load.min(t.elapsed());
        let t = Instant::now();
        let loaded = s.get_records(&all);
        for r in loaded {
            for b in r.unwrap().unwrap().blobs() {
                assert!(s.has_blob(b));
            }
        }
        batch = batch.min(t.elapsed());
    }

    let t = Instant::now();
    let names = s.names("timing").unwrap();
    let names_t = t.elapsed();
    assert_eq!(names.len(), N as usize);
    let t = Instant::now();
    let keys = s.record_keys().unwrap();
    let keys_t = t.elapsed();
    let t = Instant::now();
    let report = s.verify().unwrap();
    let verify = t.elapsed();
    assert!(report.is_clean());

    let per_step = write.as_secs_f64() * 1e3 / N as f64;
    println!("write: {N} steps (3 blobs + record + names line each) in {write:?} = {per_step:.3} ms/step");
    println!("load:  {N} get_record + {blobs} has_blob in {load:?}; with get_records (threads): {batch:?}");
    println!(
        "names: {names_t:?}; record_keys ({}): {keys_t:?}; verify: {verify:?}",
        keys.len()
    );
    let _ = Record::compute_output_digest(&Default::default());
}
