//! Waits that must end: a panic on a background thread, `Db::flush` under
//! sustained writes, and a transaction that outlives its database. Each
//! check runs on a thread and fails the test if it does not end in time.

#![expect(
    clippy::panic,
    reason = "the timeout helper fails the test, like the #[test] fns clippy already exempts"
)]

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, mpsc};
use std::time::Duration;

use siftdb::fs::FaultInjectionFs;
use siftdb::{Db, Error, Extractor, IndexDef};

/// Runs `f` on a thread; its result, or a panic naming `what` if it is
/// still running after `seconds`.
fn within<T: Send + 'static>(
    seconds: u64,
    what: &str,
    f: impl FnOnce() -> T + Send + 'static,
) -> T {
    let (done, result) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = done.send(f());
    });
    result
        .recv_timeout(Duration::from_secs(seconds))
        .unwrap_or_else(|_| panic!("{what} did not end within {seconds} s"))
}

fn builder(fs: &FaultInjectionFs) -> siftdb::DbBuilder {
    Db::builder("/db")
        .file_system(Arc::new(fs.clone()))
        .memtable_bytes(4096)
        .max_immutable_memtables(1)
        .table_target_bytes(4096)
}

/// An extractor that panics on one value: the flush thread panics.
#[test]
fn a_panic_on_the_flush_thread_fails_the_database_instead_of_hanging() {
    let fs = FaultInjectionFs::new();
    let extractor = Extractor::custom("fragile", |value, out| {
        assert!(value != b"boom", "the extractor cannot take this value");
        out(value);
    });
    let db = Arc::new(
        builder(&fs)
            .value_index(IndexDef::new("fragile", extractor))
            .open()
            .unwrap(),
    );
    db.insert(b"a", b"fine").unwrap();
    db.insert(b"b", b"boom").unwrap();
    let flushed = {
        let db = Arc::clone(&db);
        within(20, "Db::flush", move || db.flush())
    };
    match flushed {
        Err(Error::Background(detail)) => assert!(detail.contains("panicked"), "{detail}"),
        other => panic!("{other:?}"),
    }
    // Writers get the error at once rather than waiting for the thread.
    let db2 = Arc::clone(&db);
    let written = within(20, "a write", move || {
        (0..1000).try_for_each(|i| db2.insert(format!("k{i}"), [b'x'; 100]))
    });
    assert!(matches!(written, Err(Error::Background(_))));
    let db3 = Arc::clone(&db);
    assert!(
        within(20, "wait_for_compactions", move || db3
            .wait_for_compactions())
        .is_err()
    );
}

/// A slow flush (a slow extractor) and a writer that keeps the queue of
/// frozen memtables full: `Db::flush` waits for the memtables it froze,
/// not for an empty queue, which never comes.
#[test]
fn flush_ends_under_sustained_writes() {
    let fs = FaultInjectionFs::new();
    let slow = Extractor::custom("slow", |value, out| {
        std::thread::sleep(Duration::from_micros(300));
        out(value);
    });
    // Several frozen memtables: a flush leaves the queue shorter, never
    // empty, while the writer refills it.
    let db = Arc::new(
        builder(&fs)
            .max_immutable_memtables(3)
            .value_index(IndexDef::new("slow", slow))
            .open()
            .unwrap(),
    );
    let stop = Arc::new(AtomicBool::new(false));
    let writer = {
        let (db, stop) = (Arc::clone(&db), Arc::clone(&stop));
        std::thread::spawn(move || {
            let mut i = 0u64;
            while !stop.load(Ordering::Relaxed) {
                db.insert(format!("key{i:08}"), [b'v'; 200]).unwrap();
                i += 1;
            }
        })
    };
    std::thread::sleep(Duration::from_millis(300));
    for _ in 0..3 {
        let db = Arc::clone(&db);
        within(30, "Db::flush under sustained writes", move || db.flush()).unwrap();
    }
    stop.store(true, Ordering::Relaxed);
    writer.join().unwrap();
}

/// A transaction kept after its `Db` is dropped: the drop does not wait
/// for it, and its commit fails with `Error::Closed` instead of waiting
/// for background threads that are gone.
#[test]
fn a_transaction_that_outlives_its_database_gets_closed() {
    let fs = FaultInjectionFs::new();
    let db = builder(&fs).open().unwrap();
    db.insert(b"k", b"before").unwrap();
    let mut txn = db.transaction();
    for i in 0..40 {
        txn.insert(format!("txn{i}"), [b't'; 200]).unwrap();
    }
    within(20, "dropping the Db", move || drop(db));
    let committed = within(20, "a commit after the Db was dropped", move || {
        txn.commit()
    });
    assert!(matches!(committed, Err(Error::Closed)), "{committed:?}");
    // The database reopens (the transaction released the lock with its
    // handle) and holds what was written before.
    let db = builder(&fs).open().unwrap();
    assert_eq!(db.get(b"k").unwrap().as_deref(), Some(&b"before"[..]));
    assert_eq!(db.get(b"txn0").unwrap(), None);
}

/// A commit stalled on compaction debt (level 0 at its stop threshold)
/// when the `Db` is dropped: shutdown abandons the compaction, so the
/// commit must end (with `Error::Closed`) rather than wait for it while
/// holding the lock the drop needs.
#[test]
fn dropping_the_database_ends_a_stalled_commit() {
    let fs = FaultInjectionFs::new();
    let slow = Extractor::custom("slow", |value, out| {
        std::thread::sleep(Duration::from_millis(1));
        out(value);
    });
    let db = builder(&fs)
        .l0_stall_runs(1, 2)
        .compaction_style(siftdb::CompactionStyle::Leveled {
            l0_trigger: 1,
            size_ratio: 4,
            l1_bytes: 1 << 20,
        })
        .value_index(IndexDef::new("slow", slow))
        .open()
        .unwrap();
    // Transactions made up front: they outlive the handle.
    let txns: Vec<_> = (0..2000)
        .map(|i| {
            let mut txn = db.transaction();
            txn.insert(format!("key{i:06}"), [b't'; 200]).unwrap();
            txn
        })
        .collect();
    let writer = std::thread::spawn(move || {
        let mut committed = 0;
        for txn in txns {
            match txn.commit() {
                Ok(_) => committed += 1,
                Err(err) => return (committed, Some(err)),
            }
        }
        (committed, None)
    });
    std::thread::sleep(Duration::from_millis(300));
    within(30, "dropping the Db during a stalled commit", move || {
        drop(db)
    });
    let (committed, err) = within(30, "the stalled writer", move || writer.join().unwrap());
    assert!(committed > 0);
    assert!(matches!(err, Some(Error::Closed)), "{err:?}");
}

/// A range compaction once re-planned until nothing in its range was left
/// outside the last level, so writes flushed into the range while it ran
/// kept it going (holding the compaction lock alone all along). Here every
/// table it writes lets a flush into its range land: it must still end,
/// having compacted what was there when it began.
#[test]
fn a_range_compaction_does_not_chase_flushes_made_while_it_runs() {
    use siftdb::fs::SyncPoint;
    use std::sync::OnceLock;
    use std::sync::atomic::AtomicUsize;

    let fs = FaultInjectionFs::new();
    let db = Arc::new(
        Db::builder("/db")
            .file_system(Arc::new(fs.clone()))
            .open()
            .unwrap(),
    );
    for i in 0..1_000u32 {
        db.insert(format!("k{i:04}"), b"old").unwrap();
    }
    let compactor: Arc<OnceLock<std::thread::ThreadId>> = Arc::default();
    let flushed = Arc::new(AtomicUsize::new(0));
    let (on_compactor, count, weak) = (
        Arc::clone(&compactor),
        Arc::clone(&flushed),
        Arc::downgrade(&db),
    );
    fs.on_sync(Arc::new(move |_, point| {
        let table =
            matches!(point, SyncPoint::File(p) if p.extension().is_some_and(|e| e == "sst"));
        let compacting = on_compactor.get() == Some(&std::thread::current().id());
        if !table || !compacting || count.fetch_add(1, Ordering::AcqRel) >= 50 {
            return;
        }
        let Some(db) = weak.upgrade() else { return };
        std::thread::spawn(move || {
            db.insert(b"k0500", b"new").unwrap();
            db.flush().unwrap();
        })
        .join()
        .unwrap();
    }));
    let db = within(60, "the range compaction", move || {
        compactor.set(std::thread::current().id()).unwrap();
        db.compact().unwrap();
        db
    });
    let flushes = flushed.load(Ordering::Acquire);
    assert!(
        flushes < 10,
        "the compaction chased {flushes} flushes made while it ran"
    );
    assert_eq!(db.get(b"k0500").unwrap(), Some(b"new".to_vec()));
    assert_eq!(db.get(b"k0499").unwrap(), Some(b"old".to_vec()));
}
