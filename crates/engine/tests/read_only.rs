//! A read-only open (`DbBuilder::read_only`): it sees what a writable open
//! would, WAL records included, changes nothing in the directory, opens a
//! database another handle holds, and refuses every change. And a
//! writable open that drops a damaged WAL's records keeps the WAL aside.

#![expect(
    clippy::unwrap_used,
    reason = "test helpers fail the test on any error, like the #[test] fns clippy already exempts"
)]

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use siftdb::fs::{FaultInjectionFs, FileSystem};
use siftdb::{Db, Error, IndexDef, WalRecovery, WriteBatch};

const DIR: &str = "/db";

/// Every file of the directory and its bytes.
fn files(fs: &FaultInjectionFs) -> BTreeMap<String, Vec<u8>> {
    fs.list(Path::new(DIR))
        .unwrap()
        .into_iter()
        .map(|name| {
            let bytes = fs.contents(&Path::new(DIR).join(&name)).unwrap_or_default();
            (name, bytes)
        })
        .collect()
}

fn builder(fs: &FaultInjectionFs) -> siftdb::DbBuilder {
    Db::builder(DIR)
        .file_system(Arc::new(fs.clone()))
        .memtable_bytes(4096)
}

/// A store with tables and, after them, writes only in its WAL. No
/// background threads: nothing of the writer's changes the directory while
/// the read-only open is compared with it (a table a compaction replaced
/// is deleted when its last reader lets go).
fn written(fs: &FaultInjectionFs) -> Db {
    let db = builder(fs).background_threads(false).open().unwrap();
    for i in 0..500u32 {
        db.insert(format!("table{i:03}"), b"flushed").unwrap();
    }
    db.flush().unwrap();
    for i in 0..10u32 {
        db.insert(format!("wal{i}"), b"logged").unwrap();
    }
    db.persist(siftdb::PersistMode::Buffer).unwrap();
    db
}

#[test]
fn a_read_only_open_sees_everything_changes_nothing_and_refuses_changes() {
    let fs = FaultInjectionFs::new();
    // The writer stays open: it holds the lock.
    let writer = written(&fs);
    let before = files(&fs);
    let db = builder(&fs).read_only(true).open().unwrap();
    assert_eq!(db.get(b"table042").unwrap(), Some(b"flushed".to_vec()));
    assert_eq!(db.get(b"wal7").unwrap(), Some(b"logged".to_vec()));
    assert_eq!(db.range::<&[u8], _>(..).count(), 510);
    let refused = [
        db.insert(b"k", b"v"),
        db.remove(b"k"),
        db.write(&WriteBatch::new()),
        db.flush(),
        db.compact(),
        db.add_index(IndexDef::new("i", siftdb::Extractor::WholeValue)),
        db.checkpoint("/elsewhere"),
    ];
    for outcome in refused {
        assert!(
            matches!(outcome, Err(Error::ReadOnly { .. })),
            "{outcome:?}"
        );
    }
    let report = db.verify().unwrap();
    assert!(report.is_clean() && report.tables > 0, "{report:?}");
    let mut txn = db.transaction();
    txn.insert(b"k", b"v").unwrap();
    assert!(matches!(txn.commit(), Err(Error::ReadOnly { .. })));
    drop(db);
    let after = files(&fs);
    let changed: Vec<&String> = before
        .keys()
        .chain(after.keys())
        .filter(|name| before.get(*name) != after.get(*name))
        .collect();
    assert!(changed.is_empty(), "a read-only open changed {changed:?}");
    drop(writer);
}

#[test]
fn a_read_only_open_of_no_database_is_refused_and_creates_nothing() {
    let fs = FaultInjectionFs::new();
    let opened = builder(&fs).read_only(true).open();
    assert!(
        matches!(opened, Err(Error::InvalidArgument(_))),
        "{opened:?}"
    );
    assert!(
        fs.list(Path::new(DIR)).is_err(),
        "the directory was created"
    );
}

/// The WAL with four bytes flipped in its middle.
fn damage_the_wal(fs: &FaultInjectionFs) -> String {
    let wal = files(fs)
        .into_iter()
        .filter(|(name, bytes)| name.ends_with(".wal") && !bytes.is_empty())
        .map(|(name, _)| name)
        .next_back()
        .unwrap();
    let path = Path::new(DIR).join(&wal);
    let mut bytes = fs.contents(&path).unwrap();
    let middle = bytes.len() / 2;
    for b in &mut bytes[middle..middle + 4] {
        *b ^= 0xff;
    }
    fs.set_contents(&path, bytes).unwrap();
    wal
}

/// A point-in-time recovery that stops at damage once retired the damaged
/// WAL, and the valid records after the damage were gone for good: from
/// a read command's open too.
#[test]
fn a_damaged_wal_is_left_alone_read_only_and_kept_aside_by_a_writable_open() {
    let fs = FaultInjectionFs::new();
    let db = builder(&fs).memtable_bytes(1 << 20).open().unwrap();
    for i in 0..200u32 {
        db.insert(format!("k{i:03}"), format!("value {i}").repeat(4))
            .unwrap();
    }
    drop(db);
    let wal = damage_the_wal(&fs);
    let damaged = files(&fs);

    let read_only = builder(&fs)
        .wal_recovery(WalRecovery::PointInTime)
        .read_only(true)
        .open()
        .unwrap();
    assert!(
        read_only.stats().wal_recovery.is_some(),
        "the damage went unreported"
    );
    drop(read_only);
    assert!(
        files(&fs) == damaged,
        "a read-only open changed the directory"
    );

    drop(builder(&fs).open().unwrap());
    let after = files(&fs);
    assert!(
        !after.contains_key(&wal),
        "the damaged WAL is still replayed"
    );
    assert_eq!(
        after.get(&format!("{wal}.damaged")),
        damaged.get(&wal),
        "the damaged WAL was not kept aside"
    );
    // Kept aside, it is never replayed or removed again.
    drop(builder(&fs).open().unwrap());
    assert!(files(&fs).contains_key(&format!("{wal}.damaged")));
}
