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

/// Holds the first table sync made off the test's own thread until
/// released: a file system so slow that one compaction never ends alone.
#[derive(Default)]
struct Gate {
    state: Mutex<GateState>,
    changed: std::sync::Condvar,
}

#[derive(Default)]
struct GateState {
    holding: bool,
    released: bool,
}

#[expect(
    clippy::unwrap_used,
    reason = "test helpers fail the test on any error, like the #[test] fns clippy already exempts"
)]
impl Gate {
    /// Blocks the calling thread if it is the first to arrive.
    fn hold_first(&self) {
        let mut state = self.state.lock().unwrap();
        if state.holding || state.released {
            return;
        }
        state.holding = true;
        self.changed.notify_all();
        while !state.released {
            state = self.changed.wait(state).unwrap();
        }
    }

    /// Whether a thread is held, after waiting up to `timeout` for one.
    fn wait_holding(&self, timeout: std::time::Duration) -> bool {
        let state = self.state.lock().unwrap();
        let (state, _) = self
            .changed
            .wait_timeout_while(state, timeout, |s| !s.holding)
            .unwrap();
        state.holding && !state.released
    }

    fn release(&self) {
        self.state.lock().unwrap().released = true;
        self.changed.notify_all();
    }
}

/// Releases the gate when dropped: a failing test must not leave the
/// database's drop waiting for the held thread.
struct ReleaseOnDrop(Arc<Gate>);

impl Drop for ReleaseOnDrop {
    fn drop(&mut self) {
        self.0.release();
    }
}

/// Two compaction threads, one held in a merge of deep levels by a stalled
/// table sync: the other must still start and finish the L0 -> L1 that the
/// writes make due. An idle thread once took the compaction lock for
/// itself to look for backfill work, queued behind the long merge, and
/// held every new compaction off until it ended (L0 climbed to its stop).
#[test]
fn an_l0_compaction_runs_beside_a_merge_held_by_a_slow_disk() {
    use std::time::{Duration, Instant};

    let fs = FaultInjectionFs::new();
    let open = |size_ratio| {
        Db::builder("/db")
            .file_system(Arc::new(fs.clone()))
            .memtable_bytes(16 << 10)
            .table_target_bytes(4 << 10)
            .block_bytes(512)
            .compaction_style(CompactionStyle::Leveled {
                l0_trigger: 2,
                size_ratio,
                l1_bytes: 16 << 10,
            })
            .compaction_threads(2)
            .open()
            .unwrap()
    };
    let mut model = BTreeMap::new();
    let db = open(4);
    for i in 0..20_000u32 {
        let value = format!("first:{i}").into_bytes();
        db.insert(key(i), &value).unwrap();
        model.insert(key(i), value);
    }
    db.flush().unwrap();
    db.wait_for_compactions().unwrap();
    drop(db);

    // Reopened with a smaller size ratio, a level below L1 is over its
    // target while L0 and L1 are not: the first compaction is deep.
    let gate = Arc::new(Gate::default());
    let (held, test_thread) = (Arc::clone(&gate), std::thread::current().id());
    fs.on_sync(Arc::new(move |_: &_, point: SyncPoint<'_>| {
        let table =
            matches!(point, SyncPoint::File(p) if p.extension().is_some_and(|e| e == "sst"));
        if table && std::thread::current().id() != test_thread {
            held.hold_first();
        }
    }));
    let db = Arc::new(open(2));
    let release = ReleaseOnDrop(Arc::clone(&gate));
    let levels = db.stats().levels;
    let sizes: Vec<u64> = levels.iter().map(|l| l.bytes).collect();
    assert!(
        levels[0].runs < 2 && sizes[1] < 16 << 10,
        "L0 or L1 is due: {} runs, {sizes:?}",
        levels[0].runs
    );
    assert!(
        gate.wait_holding(Duration::from_secs(30)),
        "no deep compaction started: {sizes:?}"
    );

    // Four flushes make L0 due again and again; the free thread must
    // bring it back under its trigger each time.
    let writer = Arc::clone(&db);
    let overwritten: Vec<(Vec<u8>, Vec<u8>)> = (0..2_000u32)
        .map(|i| (key(i * 10), format!("second:{i}").into_bytes()))
        .collect();
    let written = overwritten.clone();
    let emptied = std::thread::spawn(move || -> bool {
        for quarter in written.chunks(written.len() / 4) {
            for (k, v) in quarter {
                writer.insert(k, v).unwrap();
            }
            writer.flush().unwrap();
        }
        let deadline = Instant::now() + Duration::from_secs(30);
        while writer.stats().levels[0].runs >= 2 {
            if Instant::now() > deadline {
                return false;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        true
    });
    let deadline = Instant::now() + Duration::from_secs(60);
    while !emptied.is_finished() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(
        emptied.is_finished() && emptied.join().unwrap(),
        "L0 was not compacted while a deep merge was held: {} runs",
        db.stats().levels[0].runs
    );
    assert!(
        gate.wait_holding(Duration::ZERO),
        "the deep merge was not held"
    );

    drop(release);
    db.wait_for_compactions().unwrap();
    model.extend(overwritten);
    let stored: BTreeMap<Vec<u8>, Vec<u8>> = db.range::<&[u8], _>(..).map(Result::unwrap).collect();
    assert!(stored == model, "the store and its model differ");
    assert!(db.verify().unwrap().is_clean());
}
