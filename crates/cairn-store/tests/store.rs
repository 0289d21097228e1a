//! Integration tests of blobs, records, verify, gc and names logs on real temp dirs.

mod common;

use std::collections::HashSet;
use std::fs;

use cairn_store::{hash_bytes, BlobRef, Store, StoreError};
use common::{count_files, key, record, store};

#[test]
fn blob_round_trip() {
    let (dir, s) = store();
    let b = s.put_blob(b"hello world").unwrap();
    assert_eq!(b.digest, hash_bytes(b"hello world"));
    assert_eq!(b.size, 11);
    assert!(s.has_blob(&b));
    assert_eq!(s.read_blob(&b).unwrap(), b"hello world");
    let p = s.blob_path(&b.digest);
    assert_eq!(
        p,
        dir.path()
            .join("store/blobs")
            .join(&b.digest[..2])
            .join(&b.digest)
    );

    // From a file: same digest, copy out verifies.
    let src = dir.path().join("src.bin");
    let big: Vec<u8> = (0..300_000u32).map(|i| (i * 7 % 251) as u8).collect();
    fs::write(&src, &big).unwrap();
    let fb = s.put_blob_file(&src).unwrap();
    assert_eq!(fb.digest, hash_bytes(&big));
    assert_eq!(fb.size, big.len() as u64);
    let dest = dir.path().join("copy.bin");
    s.copy_blob_to(&fb, &dest).unwrap();
    assert_eq!(fs::read(&dest).unwrap(), big);
    assert!(src.exists(), "put_blob_file leaves the source alone");

    // The empty blob is a normal blob.
    let e = s.put_blob(b"").unwrap();
    assert_eq!(e.size, 0);
    assert!(s.has_blob(&e));
    assert_eq!(s.read_blob(&e).unwrap(), b"");

    // A blob that was never stored.
    let absent = BlobRef {
        digest: hash_bytes(b"absent"),
        size: 6,
    };
    assert!(!s.has_blob(&absent));
    assert!(matches!(
        s.read_blob(&absent),
        Err(StoreError::MissingBlob { .. })
    ));
    assert_eq!(count_files(&dir.path().join("store/tmp")), 0);
}

#[test]
fn idempotent_put() {
    let (dir, s) = store();
    let a = s.put_blob(b"same").unwrap();
    let path = s.blob_path(&a.digest);
    let before = fs::metadata(&path).unwrap().modified().unwrap();
    let b = s.put_blob(b"same").unwrap();
    assert_eq!(a, b);
    let src = dir.path().join("same.txt");
    fs::write(&src, b"same").unwrap();
    assert_eq!(s.put_blob_file(&src).unwrap(), a);
    assert_eq!(fs::metadata(&path).unwrap().modified().unwrap(), before);
    assert_eq!(count_files(&dir.path().join("store/blobs")), 1);
    assert_eq!(count_files(&dir.path().join("store/tmp")), 0);
}

#[test]
fn record_round_trip_and_keys() {
    let (_dir, s) = store();
    let out = s.put_blob(b"42 tps").unwrap();
    let log = s.put_blob(b"").unwrap();
    let k = key(1);
    let mut rec = record(&k, &[("out.txt", &out)], &log);
    s.put_record(&mut rec).unwrap();
    assert_eq!(rec.checksum.len(), 64);
    let back = s.get_record(&k).unwrap().unwrap();
    assert_eq!(back, rec);
    assert_eq!(back.blobs().count(), 2);
    assert!(s.has_record(&k));
    assert!(s.get_record(&key(2)).unwrap().is_none());
    assert_eq!(s.record_keys().unwrap(), vec![k.clone()]);
    assert!(matches!(
        s.get_record("../etc/passwd"),
        Err(StoreError::InvalidKey { .. })
    ));
    // Rewriting the same record is fine and stable.
    let first = fs::read(s.record_path(&k)).unwrap();
    s.put_record(&mut rec).unwrap();
    assert_eq!(fs::read(s.record_path(&k)).unwrap(), first);
}

#[test]
fn record_refuses_missing_blobs() {
    let (dir, s) = store();
    let present = s.put_blob(b"present").unwrap();
    let missing = BlobRef {
        digest: hash_bytes(b"never stored"),
        size: 12,
    };
    let k = key(3);
    let mut rec = record(&k, &[("a", &present), ("b", &missing)], &present);
    let err = s.put_record(&mut rec).unwrap_err();
    match &err {
        StoreError::RecordMissingBlobs { key, digests } => {
            assert_eq!(key, &k);
            assert_eq!(digests, &vec![missing.digest.clone()]);
        }
        other => panic!("unexpected {other:?}"),
    }
    assert!(err.to_string().contains(&missing.digest));
    assert!(s.get_record(&k).unwrap().is_none());
    assert_eq!(count_files(&dir.path().join("store/records")), 0);

    // A blob present with the wrong size counts as missing too.
    let wrong = BlobRef {
        size: 99,
        ..present.clone()
    };
    let mut rec = record(&k, &[("a", &wrong)], &present);
    assert!(matches!(
        s.put_record(&mut rec),
        Err(StoreError::RecordMissingBlobs { .. })
    ));
}

#[test]
fn record_checksum_detects_edit() {
    let (_dir, s) = store();
    let b = s.put_blob(b"x").unwrap();
    let k = key(4);
    let mut rec = record(&k, &[("out", &b)], &b);
    s.put_record(&mut rec).unwrap();
    let path = s.record_path(&k);
    let original = fs::read_to_string(&path).unwrap();

    // A semantic edit.
    let edited = original.replace("\"exit_status\":0", "\"exit_status\":1");
    assert_ne!(edited, original);
    fs::write(&path, &edited).unwrap();
    let err = s.get_record(&k).unwrap_err();
    assert!(matches!(err, StoreError::CorruptRecord { .. }), "{err:?}");
    assert!(err.to_string().contains(&k), "{err}");
    assert!(err.to_string().contains("checksum"), "{err}");

    // A formatting-only edit (same values).
    let v: serde_json::Value = serde_json::from_str(&original).unwrap();
    fs::write(&path, serde_json::to_string_pretty(&v).unwrap()).unwrap();
    assert!(matches!(
        s.get_record(&k),
        Err(StoreError::CorruptRecord { .. })
    ));

    // Garbage.
    fs::write(&path, "{not json").unwrap();
    assert!(matches!(
        s.get_record(&k),
        Err(StoreError::CorruptRecord { .. })
    ));

    // A record copied under another key.
    fs::write(&path, &original).unwrap();
    assert!(s.get_record(&k).unwrap().is_some());
    let other = key(5);
    fs::write(s.record_path(&other), &original).unwrap();
    assert!(matches!(
        s.get_record(&other),
        Err(StoreError::CorruptRecord { .. })
    ));
}

#[test]
fn verify_flipped_byte_quarantines() {
    let (dir, s) = store();
    let good = s.put_blob(b"good blob").unwrap();
    let bad = s.put_blob(b"this blob will rot").unwrap();
    let k = key(6);
    let mut rec = record(&k, &[("out", &bad)], &good);
    s.put_record(&mut rec).unwrap();
    assert!(s.verify().unwrap().is_clean());

    let path = s.blob_path(&bad.digest);
    let mut bytes = fs::read(&path).unwrap();
    bytes[3] ^= 0x01;
    fs::write(&path, &bytes).unwrap();
    assert!(s.has_blob(&bad), "has_blob is only a stat: same size");
    match s.read_blob(&bad) {
        Err(StoreError::Corrupt { digest, .. }) => assert_eq!(digest, bad.digest),
        other => panic!("unexpected {other:?}"),
    }
    let dest = dir.path().join("out");
    assert!(matches!(
        s.copy_blob_to(&bad, &dest),
        Err(StoreError::Corrupt { .. })
    ));
    assert!(!dest.exists(), "no corrupt copy left behind");

    let report = s.verify().unwrap();
    assert!(!report.is_clean());
    assert_eq!(report.blobs_checked, 2);
    assert_eq!(report.records_checked, 1);
    assert_eq!(report.corrupt_blobs.len(), 1);
    let cb = &report.corrupt_blobs[0];
    assert_eq!(cb.digest, bad.digest);
    assert_eq!(cb.actual, hash_bytes(&bytes));
    assert!(cb.quarantined_to.starts_with(s.quarantine_dir()));
    assert_eq!(fs::read(&cb.quarantined_to).unwrap(), bytes, "data kept");
    assert!(!s.has_blob(&bad));
    assert!(s.has_blob(&good));
    assert_eq!(report.missing_blobs.len(), 1);
    assert_eq!(report.missing_blobs[0].key, k);
    assert_eq!(report.missing_blobs[0].digest, bad.digest);
    assert!(report.corrupt_records.is_empty());

    // Re-storing the real content heals the store.
    s.put_blob(b"this blob will rot").unwrap();
    let again = s.verify().unwrap();
    assert!(again.is_clean(), "{again:?}");
}

#[test]
fn truncated_blob_detected() {
    let (_dir, s) = store();
    let b = s.put_blob(b"0123456789").unwrap();
    let path = s.blob_path(&b.digest);
    fs::write(&path, b"01234").unwrap();
    assert!(!s.has_blob(&b));
    match s.read_blob(&b) {
        Err(e @ StoreError::Corrupt { .. }) => assert!(e.to_string().contains("size"), "{e}"),
        other => panic!("unexpected {other:?}"),
    }
    let report = s.verify().unwrap();
    assert_eq!(report.corrupt_blobs.len(), 1);
    assert_eq!(report.corrupt_blobs[0].digest, b.digest);
}

#[test]
fn verify_lists_corrupt_records_without_deleting() {
    let (_dir, s) = store();
    let b = s.put_blob(b"b").unwrap();
    let k = key(7);
    let mut rec = record(&k, &[("o", &b)], &b);
    s.put_record(&mut rec).unwrap();
    let path = s.record_path(&k);
    let text = fs::read_to_string(&path).unwrap();
    fs::write(&path, text.replace("quickstart", "quickstarT")).unwrap();
    let report = s.verify().unwrap();
    assert_eq!(report.corrupt_records.len(), 1);
    assert_eq!(report.corrupt_records[0].key, k);
    assert!(path.exists());
}

#[test]
fn stray_tmp_files_removed_at_open() {
    let dir = tempfile::tempdir().unwrap();
    let s = Store::open(dir.path()).unwrap();
    let tmp = dir.path().join("store/tmp");
    fs::write(tmp.join("garbage"), b"x").unwrap();
    fs::write(tmp.join("999999999-3.blob"), b"x").unwrap(); // no such pid
    fs::write(tmp.join("1-3.blob"), b"x").unwrap(); // pid 1 is alive: someone's write in flight
    let report = s.verify().unwrap();
    assert_eq!(report.stray_tmp_files.len(), 2, "{report:?}");
    assert!(!report.is_clean());
    drop(s);
    let s = Store::open(dir.path()).unwrap();
    assert!(!tmp.join("garbage").exists());
    assert!(!tmp.join("999999999-3.blob").exists());
    assert!(tmp.join("1-3.blob").exists());
    assert!(s.verify().unwrap().is_clean());
}

#[test]
fn gc_dry_run_and_apply() {
    let (_dir, s) = store();
    let shared = s.put_blob(b"shared").unwrap();
    let only_a = s.put_blob(b"only a").unwrap();
    let only_b = s.put_blob(b"only b").unwrap();
    let orphan = s.put_blob(b"orphan").unwrap();
    let (ka, kb) = (key(10), key(11));
    s.put_record(&mut record(&ka, &[("x", &only_a)], &shared))
        .unwrap();
    s.put_record(&mut record(&kb, &[("x", &only_b)], &shared))
        .unwrap();
    s.remember("quickstart", "a", &ka, None).unwrap();
    s.remember("quickstart", "b", &kb, None).unwrap();

    let keep: HashSet<String> = [ka.clone()].into_iter().collect();
    let dry = s.gc(&keep, false).unwrap();
    assert!(!dry.applied);
    assert_eq!(dry.records_removed, vec![kb.clone()]);
    let mut want = vec![only_b.digest.clone(), orphan.digest.clone()];
    want.sort();
    assert_eq!(dry.blobs_removed, want);
    assert_eq!(dry.blob_bytes, only_b.size + orphan.size);
    assert!(dry.record_bytes > 0);
    // Nothing removed.
    assert!(s.has_record(&kb));
    for b in [&shared, &only_a, &only_b, &orphan] {
        assert!(s.has_blob(b));
    }
    assert_eq!(s.names("quickstart").unwrap().len(), 2);

    let done = s.gc(&keep, true).unwrap();
    assert!(done.applied);
    assert_eq!(done.records_removed, dry.records_removed);
    assert_eq!(done.blobs_removed, dry.blobs_removed);
    assert_eq!(done.bytes(), dry.bytes());
    assert!(s.has_record(&ka) && !s.has_record(&kb));
    assert!(s.has_blob(&shared) && s.has_blob(&only_a));
    assert!(!s.has_blob(&only_b) && !s.has_blob(&orphan));
    let names = s.names("quickstart").unwrap();
    assert_eq!(names.len(), 1);
    assert_eq!(names["a"], ka);
    assert_eq!(done.names_dropped, 1);
    assert!(s.verify().unwrap().is_clean());

    // A second gc finds nothing.
    let again = s.gc(&keep, true).unwrap();
    assert!(again.records_removed.is_empty() && again.blobs_removed.is_empty());
}

#[test]
fn gc_refuses_when_a_kept_record_is_corrupt() {
    let (_dir, s) = store();
    let b = s.put_blob(b"b").unwrap();
    let k = key(12);
    s.put_record(&mut record(&k, &[("o", &b)], &b)).unwrap();
    fs::write(s.record_path(&k), "{}").unwrap();
    let keep: HashSet<String> = [k.clone()].into_iter().collect();
    assert!(matches!(
        s.gc(&keep, true),
        Err(StoreError::CorruptRecord { .. })
    ));
    assert!(s.has_blob(&b));
}

#[test]
fn names_log_torn_last_line_ignored() {
    let (dir, s) = store();
    let (k1, k2, k3) = (key(20), key(21), key(22));
    s.remember("study", "load[threads=2]#1", &k1, None).unwrap();
    s.remember("study", "load[threads=8]#1", &k2, None).unwrap();
    s.remember("study", "load[threads=2]#1", &k3, None).unwrap();
    // A crash mid-append leaves a torn line.
    let log = dir.path().join("store/names/study.log");
    let mut text = fs::read_to_string(&log).unwrap();
    text.push_str("load[threads=8]#1\tdeadbe");
    fs::write(&log, text).unwrap();
    let names = s.names("study").unwrap();
    assert_eq!(names.len(), 2);
    assert_eq!(names["load[threads=2]#1"], k3);
    assert_eq!(names["load[threads=8]#1"], k2);
    assert!(s.names("other").unwrap().is_empty());
    assert!(s.remember("study", "bad\taddress", &k1, None).is_err());
    assert!(s.remember("../x", "a", &k1, None).is_err());
}

#[test]
fn lock_conflicts_within_one_process() {
    let (_dir, s) = store();
    let held = s.try_lock().unwrap();
    let err = s.try_lock().unwrap_err();
    match &err {
        StoreError::Locked { holder, .. } => {
            assert_eq!(holder.pid, Some(std::process::id()));
            assert!(holder.command.is_some());
        }
        other => panic!("unexpected {other:?}"),
    }
    assert!(err
        .to_string()
        .contains(&format!("pid {}", std::process::id())));
    drop(held);
    let again = s.try_lock().unwrap();
    drop(again);
}

#[test]
fn get_records_in_order() {
    let (_dir, s) = store();
    let b = s.put_blob(b"b").unwrap();
    let keys: Vec<String> = (100..700).map(key).collect();
    for k in keys.iter().step_by(2) {
        s.put_record(&mut record(k, &[("o", &b)], &b)).unwrap();
    }
    let got = s.get_records(&keys);
    assert_eq!(got.len(), keys.len());
    for (i, (k, r)) in keys.iter().zip(got).enumerate() {
        match r.unwrap() {
            Some(rec) => {
                assert_eq!(i % 2, 0);
                assert_eq!(&rec.key, k);
            }
            None => assert_eq!(i % 2, 1),
        }
    }
}
