//! Compactions side by side on disjoint levels, each cut into key-range
//! pieces merged on their own threads: the store must read as its model
//! does, with a snapshot held across them, after a full compaction and
//! after a reopen, and `verify` must find every table sound.

use std::collections::BTreeMap;

use std::sync::{Arc, Mutex};

use siftdb::fs::{FaultInjectionFs, SyncPoint};
use siftdb::{CompactionStyle, Db, WriteBatch};

fn key(i: u32) -> Vec<u8> {
    format!("key{:06}", (i * 7919) % 20_000).into_bytes()
}

#[test]
fn compactions_in_pieces_and_side_by_side_keep_every_key_and_snapshot() {
    let dir = tempfile::tempdir().unwrap();
    let open = || {
        Db::builder(dir.path())
            .memtable_bytes(32 << 10)
            .table_target_bytes(4 << 10)
            .block_bytes(512)
            .compaction_style(CompactionStyle::Leveled {
                l0_trigger: 2,
                size_ratio: 3,
                l1_bytes: 32 << 10,
            })
            .compaction_threads(4)
            .open()
            .unwrap()
    };
    let db = open();
    let mut model = BTreeMap::new();
    let mut snapshot = None;
    for round in 0..6u32 {
        for i in 0..6_000u32 {
            let k = key(i + round * 1_000);
            if (i + round) % 11 == 0 {
                db.remove(&k).unwrap();
                model.remove(&k);
            } else {
                let value = format!("{round}:{i}").into_bytes();
                let mut batch = WriteBatch::new();
                batch.insert(&k, &value);
                db.write(&batch).unwrap();
                model.insert(k, value);
            }
        }
        if round == 2 {
            snapshot = Some((db.snapshot(), model.clone()));
        }
    }
    let check = |db: &Db, model: &BTreeMap<Vec<u8>, Vec<u8>>| {
        let stored: BTreeMap<Vec<u8>, Vec<u8>> =
            db.range::<&[u8], _>(..).map(Result::unwrap).collect();
        assert!(stored == *model, "the store and its model differ");
    };
    db.wait_for_backfill().unwrap();
    check(&db, &model);
    db.compact().unwrap();
    check(&db, &model);
    let (snapshot, then) = snapshot.unwrap();
    let seen: BTreeMap<Vec<u8>, Vec<u8>> =
        snapshot.range::<&[u8], _>(..).map(Result::unwrap).collect();
    assert!(seen == then, "the snapshot lost versions it sees");
    assert!(
        db.stats().compactions > 10,
        "too little compaction to mean much"
    );
    drop(snapshot);
    drop(db);
    check(&open(), &model);
    let report = siftdb::verify(dir.path(), &mut |_| {}).unwrap();
    assert!(report.is_clean(), "{report:?}");
}

/// `wait_for_compactions` returns only when the planner has nothing left:
/// L0 under its trigger, every deeper level under its target. A thread
/// could once start a job between the wait and the waiter's own look at
/// the planner, which then found nothing beside that job and returned with
/// the job's follow-up work (and sometimes more) still to do.
#[test]
fn waiting_for_compactions_leaves_every_level_under_its_trigger() {
    const L0_TRIGGER: usize = 2;
    const SIZE_RATIO: u64 = 3;
    const L1_BYTES: u64 = 32 << 10;
    let dir = tempfile::tempdir().unwrap();
    let db = Db::builder(dir.path())
        .memtable_bytes(16 << 10)
        .table_target_bytes(4 << 10)
        .block_bytes(512)
        .compaction_style(CompactionStyle::Leveled {
            l0_trigger: L0_TRIGGER,
            size_ratio: SIZE_RATIO,
            l1_bytes: L1_BYTES,
        })
        .compaction_threads(4)
        .open()
        .unwrap();
    for round in 0..20u32 {
        for i in 0..1_500u32 {
            db.insert(key(i * 13 + round), format!("{round}:{i}"))
                .unwrap();
        }
        db.flush().unwrap();
        db.wait_for_compactions().unwrap();
        let levels = db.stats().levels;
        let mut target = L1_BYTES;
        for (depth, level) in levels.iter().enumerate() {
            if depth == 0 {
                assert!(
                    level.runs < L0_TRIGGER,
                    "round {round}: L0 holds {} runs",
                    level.runs
                );
            } else {
                assert!(
                    level.bytes < target,
                    "round {round}: L{depth} holds {} bytes, its target is {target}",
                    level.bytes
                );
                target *= SIZE_RATIO;
            }
        }
    }
}

/// A database of small tables, inline (no background threads), on `fs`.
#[expect(
    clippy::unwrap_used,
    reason = "test helpers fail the test on any error, like the #[test] fns clippy already exempts"
)]
fn small_tables(fs: &FaultInjectionFs) -> Arc<Db> {
    let db = Db::builder("/db")
        .file_system(Arc::new(fs.clone()))
        .memtable_bytes(64 << 10)
        .table_target_bytes(4 << 10)
        .background_threads(false)
        .open()
        .unwrap();
    Arc::new(db)
}

/// What `read` says of `db` at every sync from now on.
#[expect(
    clippy::unwrap_used,
    reason = "test helpers fail the test on any error, like the #[test] fns clippy already exempts"
)]
fn at_each_sync(fs: &FaultInjectionFs, db: &Arc<Db>, read: fn(&Db) -> u64) -> Arc<Mutex<Vec<u64>>> {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let (watched, record) = (Arc::downgrade(db), Arc::clone(&seen));
    fs.on_sync(Arc::new(move |_: &_, _: SyncPoint<'_>| {
        if let Some(db) = watched.upgrade() {
            record.lock().unwrap().push(read(&db));
        }
    }));
    seen
}

/// `sift compact`'s bar reads `compaction_bytes_written` as the compaction
/// runs: it must grow table by table, not only once the whole compaction
/// is installed (the bar stayed at 0 until done).
#[test]
fn a_long_compaction_counts_its_bytes_as_it_writes_each_table() {
    let fs = FaultInjectionFs::new();
    let db = small_tables(&fs);
    for i in 0..8_000u32 {
        db.insert(key(i), [b'v'; 20]).unwrap();
    }
    db.flush().unwrap();
    let before = db.stats().compaction_bytes_written;
    let seen = at_each_sync(&fs, &db, |db| db.stats().compaction_bytes_written);
    db.compact().unwrap();
    let after = db.stats().compaction_bytes_written;
    let seen = seen.lock().unwrap();
    let between = seen.iter().filter(|&&n| before < n && n < after).count();
    assert!(
        between > 1,
        "the counter went from {before} to {after}, seen as {seen:?} mid-compaction"
    );
}

/// `sift index add`'s bar reads `tables_indexed` while the backfill runs:
/// it must grow table by table.
#[test]
fn a_backfill_counts_its_tables_as_it_rewrites_each() {
    let fs = FaultInjectionFs::new();
    let db = small_tables(&fs);
    for i in 0..8_000u32 {
        db.insert(key(i), format!("{},x", i % 7)).unwrap();
    }
    db.compact().unwrap();
    let indexed = |db: &Db| db.indexes().first().map_or(0, |i| i.tables_indexed as u64);
    let seen = at_each_sync(&fs, &db, indexed);
    let def = siftdb::IndexDef::new("n", siftdb::Extractor::delimited(0, b','));
    db.add_index(def).unwrap();
    db.wait_for_backfill().unwrap();
    let total = indexed(&db);
    let seen = seen.lock().unwrap();
    let between = seen.iter().filter(|&&n| 0 < n && n < total).count();
    assert!(between > 1, "{total} tables, seen as {seen:?} mid-backfill");
}
