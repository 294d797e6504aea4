//! I/O errors injected into the file layer: a failed manifest or WAL write
//! or sync fails the database (later writes get the error, never a silent
//! divergence between disk and memory), reads report the error, and a
//! reopen recovers every acknowledged write.

#![expect(
    clippy::unwrap_used,
    reason = "test helpers fail the test on any error, like the #[test] fns clippy already exempts"
)]

use std::sync::Arc;

use siftdb::fs::{FaultEffect, FaultInjectionFs, FaultOp};
use siftdb::{Db, Error, PersistMode, WriteOptions};

fn builder(fs: &FaultInjectionFs) -> siftdb::DbBuilder {
    Db::builder("/db")
        .file_system(Arc::new(fs.clone()))
        .memtable_bytes(4096)
        .table_target_bytes(4096)
        .background_threads(false)
}

fn key(i: u32) -> Vec<u8> {
    format!("key{i:05}").into_bytes()
}

/// Writes keys `from..to`, synced; every one must be acknowledged.
fn write(db: &Db, from: u32, to: u32) {
    for i in from..to {
        db.write_with(
            &{
                let mut batch = siftdb::WriteBatch::new();
                batch.insert(key(i), format!("value {i}").repeat(4));
                batch
            },
            WriteOptions::sync(),
        )
        .unwrap();
    }
}

/// Reopens after the fault is healed: every key `0..acked` is there, and
/// `verify` finds nothing wrong.
fn recovers(fs: &FaultInjectionFs, acked: u32) {
    fs.heal();
    let db = builder(fs).open().unwrap();
    for i in 0..acked {
        assert_eq!(
            db.get(key(i)).unwrap(),
            Some(format!("value {i}").repeat(4).into_bytes()),
            "key {i}"
        );
    }
    drop(db);
    let report = siftdb::verify_in(fs, std::path::Path::new("/db"), &mut |_| {}).unwrap();
    assert!(report.is_clean(), "{:?}", report.problems);
}

fn is_refused<T: std::fmt::Debug>(result: siftdb::Result<T>) -> bool {
    matches!(result, Err(Error::Background(_)))
}

/// A manifest edit whose sync fails may or may not be on disk: nothing may
/// be logged after it, or a later edit could follow a partial record or
/// contradict it.
#[test]
fn a_failed_manifest_sync_fails_the_database() {
    for op in [FaultOp::Sync, FaultOp::Append] {
        let fs = FaultInjectionFs::new();
        let db = builder(&fs).open().unwrap();
        write(&db, 0, 100);
        fs.inject(op, "MANIFEST", 1);
        assert!(db.flush().is_err(), "{op:?}");
        fs.heal();
        // Every path that logs an edit, or writes, now refuses.
        assert!(is_refused(db.insert(b"later", b"refused")), "{op:?}");
        assert!(is_refused(db.flush()), "{op:?}");
        assert!(is_refused(db.compact()), "{op:?}");
        assert!(is_refused(db.add_index(siftdb::IndexDef::new(
            "whole",
            siftdb::Extractor::WholeValue
        ))));
        // Reads still work.
        assert!(db.get(key(7)).unwrap().is_some());
        drop(db);
        recovers(&fs, 100);
    }
}

/// After a failed fsync the kernel may have dropped the dirty pages; a
/// later fsync could then succeed without them. `persist` must fail the
/// database, as a failed synced write does.
#[test]
fn a_failed_wal_sync_in_persist_fails_the_database() {
    let fs = FaultInjectionFs::new();
    let db = builder(&fs).open().unwrap();
    write(&db, 0, 10);
    db.insert(b"unsynced", b"value").unwrap();
    fs.inject(FaultOp::Sync, ".wal", 1);
    assert!(matches!(
        db.persist(PersistMode::SyncAll),
        Err(Error::Io { .. })
    ));
    assert!(is_refused(db.persist(PersistMode::SyncAll)));
    assert!(is_refused(db.insert(b"later", b"refused")));
    drop(db);
    recovers(&fs, 10);
}

/// A memtable rotation syncs the old WAL and the directory; either failing
/// fails the database and the write that needed the rotation.
#[test]
fn a_failed_sync_during_rotation_fails_the_database() {
    for (op, name) in [(FaultOp::Sync, ".wal"), (FaultOp::SyncDir, "db")] {
        let fs = FaultInjectionFs::new();
        let db = builder(&fs).open().unwrap();
        write(&db, 0, 5);
        // Unsynced writes until a rotation, which then fails.
        fs.inject(op, name, 1);
        let mut failed_at = None;
        for i in 5..2000 {
            let value = format!("value {i}").repeat(4);
            if db
                .write_with(
                    &{
                        let mut batch = siftdb::WriteBatch::new();
                        batch.insert(key(i), value);
                        batch
                    },
                    WriteOptions::no_sync(),
                )
                .is_err()
            {
                failed_at = Some(i);
                break;
            }
        }
        let failed_at = failed_at.unwrap_or_else(|| panic!("{op:?}: no write failed"));
        fs.heal();
        assert!(is_refused(db.insert(b"later", b"refused")), "{op:?}");
        drop(db);
        // Acknowledged unsynced writes survive a process crash (the WAL
        // holds them); a clean reopen keeps every one.
        recovers(&fs, failed_at);
    }
}

/// The same, when the file system panics instead, at each step of a
/// rotation and of a range compaction on the caller's thread: the call
/// fails and so does the database, as an error does (the panic reached the
/// caller, and the database went on with a half-made WAL or edit).
#[test]
fn a_panicking_file_system_call_in_a_rotation_or_range_compaction_fails_the_database() {
    // Each fault, and whether it is met by a flush's rotation or by the
    // range compaction after it.
    let cases = [
        (FaultOp::Sync, ".wal", false),
        (FaultOp::Create, ".wal", false),
        (FaultOp::SyncDir, "db", false),
        (FaultOp::Create, ".sst", true),
        (FaultOp::Append, ".sst", true),
    ];
    for (op, name, compacting) in cases {
        let fs = FaultInjectionFs::new();
        let db = builder(&fs).open().unwrap();
        write(&db, 0, 40);
        if compacting {
            db.flush().unwrap();
        }
        fs.inject_later(op, name, 0, FaultEffect::Panic);
        let flushed = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            db.flush()?;
            db.compact()
        }));
        let Ok(flushed) = flushed else {
            panic!("{op:?} {name}: the panic reached the caller");
        };
        assert!(flushed.is_err(), "{op:?} {name}: the fault did not fire");
        fs.heal();
        assert!(is_refused(db.insert(b"later", b"refused")), "{op:?} {name}");
        drop(db);
        recovers(&fs, 40);
    }
}

/// The last holder of a replaced table deletes its file, wherever that is
/// (here a reader; a writer midway through its write group as well): a
/// panicking removal must not unwind there. The file is left for the next
/// open to delete.
#[test]
fn a_panicking_removal_of_a_replaced_table_stays_in_the_drop() {
    let fs = FaultInjectionFs::new();
    let db = builder(&fs).open().unwrap();
    write(&db, 0, 40);
    db.flush().unwrap();
    let mut reader = db.range::<&[u8], _>(..);
    assert!(reader.next().is_some());
    db.compact().unwrap();
    fs.inject_later(FaultOp::Remove, ".sst", 0, FaultEffect::Panic);
    let dropped = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| drop(reader)));
    assert!(dropped.is_ok(), "the removal's panic left the drop");
    assert!(!fs.armed(), "no removal was tried");
    fs.heal();
    db.insert(b"later", b"works").unwrap();
    drop(db);
    recovers(&fs, 40);
}

/// A failed read is an error for that read only.
#[test]
fn a_failed_read_is_reported_and_the_next_one_works() {
    let fs = FaultInjectionFs::new();
    let db = builder(&fs).block_cache_bytes(0).open().unwrap();
    write(&db, 0, 200);
    db.flush().unwrap();
    fs.inject(FaultOp::Read, ".sst", 1);
    assert!(matches!(db.get(key(3)), Err(Error::Io { .. })));
    assert!(db.get(key(3)).unwrap().is_some());
    fs.inject(FaultOp::Read, ".sst", 1);
    let scanned: Result<Vec<_>, _> = db.range::<Vec<u8>, _>(..).collect();
    assert!(scanned.is_err());
    assert_eq!(db.range::<Vec<u8>, _>(..).count(), 200);
    write(&db, 200, 210);
    drop(db);
    recovers(&fs, 210);
}

/// A table's range filter that cannot be read (it is read at a scan's
/// first use of it) rules nothing out: the scan still finds every key.
#[test]
fn a_scan_filter_that_cannot_be_read_rules_nothing_out() {
    let fs = FaultInjectionFs::new();
    let db = builder(&fs).block_cache_bytes(0).open().unwrap();
    write(&db, 0, 200);
    db.flush().unwrap();
    db.compact().unwrap();
    // Reads the metadata and index of the table holding key 15.
    assert!(db.get(key(15)).unwrap().is_some());
    fs.inject(FaultOp::Read, ".sst", 1);
    let scanned: Vec<_> = db
        .range(key(10)..key(20))
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(scanned.len(), 10);
}

/// A table that cannot be written fails the flush, not the database: the
/// memtable stays, and the flush succeeds once the disk does.
#[test]
fn a_failed_table_write_leaves_the_memtable_for_a_retry() {
    let fs = FaultInjectionFs::new();
    let db = builder(&fs).open().unwrap();
    write(&db, 0, 50);
    fs.inject(FaultOp::Create, ".sst", 1);
    assert!(db.flush().is_err());
    db.flush().unwrap();
    write(&db, 50, 60);
    drop(db);
    recovers(&fs, 60);
}
