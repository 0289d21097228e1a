//! A key's record is never overwritten with another output: `Store::record` leaves an
//! equal result as it was, keeps a different one beside it, and gc keeps or drops both.

mod common;

use std::collections::HashSet;
use std::fs;

use cairn_store::Recorded;
use common::{key, record, store};

#[test]
fn the_same_output_again_leaves_the_record_byte_for_byte() {
    let (_dir, s) = store();
    let out = s.put_blob(b"out").unwrap();
    let log = s.put_blob(b"log").unwrap();
    let k = key(1);
    let mut first = record(&k, &[("out.txt", &out)], &log);
    first.definition_key = key(100);
    assert_eq!(s.record(&mut first).unwrap(), Recorded::Written);
    let before = fs::read(s.record_path(&k)).unwrap();

    // a rebuild: same output, other times and machine-local details
    let mut again = record(&k, &[("out.txt", &out)], &log);
    again.started = "2030-01-01T00:00:00.000Z".into();
    again.extra.insert("image_id".into(), "sha256:other".into());
    assert_eq!(s.record(&mut again).unwrap(), Recorded::Unchanged);
    assert_eq!(fs::read(s.record_path(&k)).unwrap(), before);
    assert!(s.alternates(&k).unwrap().is_empty());
    let read = s.get_record(&k).unwrap().unwrap();
    assert_eq!(read.definition_key, key(100));
}

#[test]
fn another_output_is_kept_beside_and_said() {
    let (_dir, s) = store();
    let (a, b) = (s.put_blob(b"a").unwrap(), s.put_blob(b"b").unwrap());
    let log = s.put_blob(b"log").unwrap();
    let k = key(2);
    let mut first = record(&k, &[("out.txt", &a)], &log);
    s.record(&mut first).unwrap();
    let before = fs::read(s.record_path(&k)).unwrap();

    let mut other = record(&k, &[("out.txt", &b)], &log);
    other.finished = "2024-05-02T00:00:00.000Z".into();
    let got = s.record(&mut other).unwrap();
    let Recorded::KeptBeside {
        existing_output,
        path,
    } = got
    else {
        panic!("expected KeptBeside, got {got:?}");
    };
    assert_eq!(existing_output, first.output_digest);
    assert!(path.ends_with(format!("{}.json", other.output_digest)));
    assert_eq!(
        fs::read(s.record_path(&k)).unwrap(),
        before,
        "the first stays"
    );
    let alts = s.alternates(&k).unwrap();
    assert_eq!(alts.len(), 1);
    assert_eq!(alts[0].output_digest, other.output_digest);
    // the newer is the current record; the same output again changes nothing
    assert_eq!(
        s.get_record(&k).unwrap().unwrap().output_digest,
        other.output_digest
    );
    let mut again = record(&k, &[("out.txt", &b)], &log);
    again.finished = "2024-05-03T00:00:00.000Z".into();
    assert_eq!(s.record(&mut again).unwrap(), Recorded::Unchanged);
    assert_eq!(s.alternates(&k).unwrap().len(), 1);
    // back to the first output: current again (a newer copy beside), the first file untouched
    let mut back = record(&k, &[("out.txt", &a)], &log);
    back.finished = "2024-05-04T00:00:00.000Z".into();
    assert!(matches!(
        s.record(&mut back).unwrap(),
        Recorded::KeptBeside { .. }
    ));
    assert_eq!(
        s.get_record(&k).unwrap().unwrap().output_digest,
        first.output_digest
    );
    assert_eq!(fs::read(s.record_path(&k)).unwrap(), before);
    assert_eq!(s.alternates(&k).unwrap().len(), 2);

    // gc keeps a kept key's records beside it and their blobs …
    let keep: HashSet<String> = [k.clone()].into();
    let rep = s.gc(&keep, true).unwrap();
    assert!(rep.blobs_removed.is_empty(), "{rep:?}");
    assert!(s.has_blob(&b));
    // … and drops them with the key
    let rep = s.gc(&HashSet::new(), true).unwrap();
    assert_eq!(rep.alternates_removed, 2);
    assert!(!s.alternates_dir(&k).exists());
    assert!(!s.has_blob(&b));
}

#[test]
fn a_damaged_record_is_replaced() {
    let (_dir, s) = store();
    let out = s.put_blob(b"out").unwrap();
    let log = s.put_blob(b"log").unwrap();
    let k = key(3);
    let mut first = record(&k, &[("out.txt", &out)], &log);
    s.record(&mut first).unwrap();
    fs::write(s.record_path(&k), b"{\"garbage\":1}\n").unwrap();
    let mut again = record(&k, &[("out.txt", &out)], &log);
    assert_eq!(s.record(&mut again).unwrap(), Recorded::Written);
    assert!(s.get_record(&k).unwrap().is_some());
}

/// The first record of a key stays beside a newer current one (another plan's build under
/// another name) and still serves the plan keyed from it: gc keeps its blobs, and
/// `record_made_at` finds the record made under an address.
#[test]
fn gc_keeps_the_first_records_blobs_beside_a_newer_current_one() {
    let (_dir, s) = store();
    let (a, b) = (
        s.put_blob(b"first").unwrap(),
        s.put_blob(b"second").unwrap(),
    );
    let log = s.put_blob(b"log").unwrap();
    let k = key(7);
    let mut first = record(&k, &[("out.txt", &a)], &log);
    first.address = "image/first-name".into();
    s.record(&mut first).unwrap();
    let mut other = record(&k, &[("out.txt", &b)], &log);
    other.address = "image/other-name".into();
    other.finished = "2024-05-02T00:00:00.000Z".into();
    s.record(&mut other).unwrap();
    assert_eq!(
        s.get_record(&k).unwrap().unwrap().address,
        "image/other-name"
    );
    let made = s.record_made_at(&k, "image/first-name").unwrap().unwrap();
    assert_eq!(made.output_digest, first.output_digest);
    assert!(s.record_made_at(&k, "image/nobody").unwrap().is_none());

    let keep: HashSet<String> = [k.clone()].into();
    let rep = s.gc(&keep, true).unwrap();
    assert!(rep.blobs_removed.is_empty(), "{rep:?}");
    assert!(s.has_blob(&a) && s.has_blob(&b));
}
