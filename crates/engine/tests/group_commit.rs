//! Many writers at once: group commit and parallel memtable inserts.
//!
//! - Writers of puts, deletes and batches, with readers running: every
//!   reader's snapshot holds, for each writer, exactly the state after
//!   some prefix of that writer's operations (so a batch is whole or
//!   absent, and a reader that sees a write sees every earlier write of
//!   the same writer), and every acknowledged write is there at the end
//!   and after a reopen.
//! - Synced writers on a lying disk, with power cuts drawn at every sync
//!   point: each writer's writes survive as a prefix, and every write
//!   acknowledged before the cut is in it.
//! - A group whose sync fails fails every writer in it and the database.

#![expect(
    clippy::unwrap_used,
    reason = "test helpers fail the test on any error, like the #[test] fns clippy already exempts"
)]

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicUsize, Ordering};
use std::sync::{Arc, Barrier, Mutex};
use std::time::Duration;

use siftdb::fs::{FaultInjectionFs, FaultOp, SyncPoint};
use siftdb::{Db, Error, WriteBatch, WriteOptions};

const DIR: &str = "/db";

/// A database on `fs` whose writes are all synced.
fn synced(fs: &FaultInjectionFs) -> siftdb::DbBuilder {
    Db::builder(DIR)
        .file_system(Arc::new(fs.clone()))
        .sync_writes(true)
}

/// Keys a writer's puts and deletes cycle through.
const KEYS_PER_WRITER: u32 = 16;

/// Keys each batch writes, all with the step's value.
const BATCH_KEYS: u32 = 32;

/// Writer `writer`'s step `step` (from 1): what it writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    Put(u32),
    Delete(u32),
    /// Every batch key gets the step's value.
    Batch,
}

fn op(step: u32) -> Op {
    if step.is_multiple_of(5) {
        Op::Batch
    } else if step.is_multiple_of(7) {
        Op::Delete(step % KEYS_PER_WRITER)
    } else {
        Op::Put(step % KEYS_PER_WRITER)
    }
}

fn key(writer: usize, name: &str) -> Vec<u8> {
    format!("w{writer:02}/{name}").into_bytes()
}

fn plain_key(writer: usize, k: u32) -> Vec<u8> {
    key(writer, &format!("k{k:02}"))
}

fn batch_key(writer: usize, b: u32) -> Vec<u8> {
    key(writer, &format!("b{b}"))
}

/// One writer's keys and values after its first `steps` operations.
type State = BTreeMap<Vec<u8>, Vec<u8>>;

/// The value step `step` writes: its number, padded for a batch so that
/// a group holding a batch is large enough for its members to insert
/// their own batches in parallel.
fn value(step: u32) -> Vec<u8> {
    match op(step) {
        Op::Batch => format!("{step:<2048}").into_bytes(),
        _ => step.to_string().into_bytes(),
    }
}

fn apply(state: &mut State, writer: usize, step: u32) {
    let value = value(step);
    match op(step) {
        Op::Put(k) => {
            state.insert(plain_key(writer, k), value);
        }
        Op::Delete(k) => {
            state.remove(&plain_key(writer, k));
        }
        Op::Batch => {
            for b in 0..BATCH_KEYS {
                state.insert(batch_key(writer, b), value.clone());
            }
        }
    }
}

fn state_after(writer: usize, steps: u32) -> State {
    let mut state = State::new();
    for step in 1..=steps {
        apply(&mut state, writer, step);
    }
    state
}

fn perform(db: &Db, writer: usize, step: u32, options: WriteOptions) -> siftdb::Result<()> {
    let value = value(step);
    match op(step) {
        Op::Put(k) => db.insert_with(plain_key(writer, k), &value, options),
        Op::Delete(k) => db.remove_with(plain_key(writer, k), options),
        Op::Batch => {
            let mut batch = WriteBatch::new();
            for b in 0..BATCH_KEYS {
                batch.insert(batch_key(writer, b), &value);
            }
            db.write_with(&batch, options)
        }
    }
}

/// The last step after which `seen` (one writer's keys in a snapshot) is
/// that writer's state, if it is the state after any step of `0..=max_step`
/// (a delete of an absent key leaves the state as it was, so several steps
/// can match).
fn matching_step(writer: usize, seen: &State, max_step: u32) -> Option<u32> {
    // The newest value seen names the last step that wrote; only deletes
    // (which leave no value) can follow it unseen.
    let newest = seen
        .values()
        .map(|v| {
            std::str::from_utf8(v)
                .unwrap()
                .trim_end()
                .parse::<u32>()
                .unwrap()
        })
        .max()
        .unwrap_or(0);
    let mut state = state_after(writer, newest);
    let mut step = newest;
    let mut matched = None;
    loop {
        if &state == seen {
            matched = Some(step);
        }
        step += 1;
        if step > max_step || !matches!(op(step), Op::Delete(_)) {
            return matched;
        }
        apply(&mut state, writer, step);
    }
}

/// `state` as text, for a failure message.
fn show(state: &State) -> String {
    let pairs: Vec<String> = state
        .iter()
        .map(|(k, v)| {
            format!(
                "{}={}",
                String::from_utf8_lossy(k),
                String::from_utf8_lossy(v)
            )
        })
        .collect();
    pairs.join(" ")
}

fn writer_state(items: impl Iterator<Item = siftdb::Result<(Vec<u8>, Vec<u8>)>>) -> State {
    items.map(Result::unwrap).collect()
}

#[test]
fn concurrent_writers_are_seen_as_prefixes_of_each_writers_history() {
    const WRITERS: usize = 8;
    const READERS: usize = 2;
    const STEPS: u32 = 500;
    let dir = tempfile::tempdir().unwrap();
    let open = || {
        Db::builder(dir.path())
            .memtable_bytes(64 << 10)
            .table_target_bytes(32 << 10)
            .open()
            .unwrap()
    };
    let db = Arc::new(open());
    let done = Arc::new(AtomicBool::new(false));
    // Steps each writer has had acknowledged.
    let acked: Arc<Vec<AtomicU32>> = Arc::new((0..WRITERS).map(|_| AtomicU32::new(0)).collect());
    let checks = Arc::new(AtomicUsize::new(0));
    let readers: Vec<_> = (0..READERS)
        .map(|_| {
            let (db, done, acked, checks) = (
                Arc::clone(&db),
                Arc::clone(&done),
                Arc::clone(&acked),
                Arc::clone(&checks),
            );
            std::thread::spawn(move || {
                while !done.load(Ordering::Acquire) {
                    let floor: Vec<u32> = acked.iter().map(|a| a.load(Ordering::Acquire)).collect();
                    let snapshot = db.snapshot();
                    for (writer, &floor) in floor.iter().enumerate() {
                        let seen = writer_state(snapshot.prefix(key(writer, "")));
                        let Some(step) = matching_step(writer, &seen, STEPS) else {
                            panic!("writer {writer}'s keys are no prefix of its history: {}", show(&seen));
                        };
                        assert!(
                            step >= floor,
                            "writer {writer}: step {floor} was acknowledged, the snapshot holds {step}"
                        );
                    }
                    checks.fetch_add(1, Ordering::Relaxed);
                }
            })
        })
        .collect();
    // Cheaper checks, many more of them: one batch's keys in a snapshot
    // all hold the same step (a batch partly visible would not).
    let batch_readers: Vec<_> = (0..READERS)
        .map(|_| {
            let (db, done) = (Arc::clone(&db), Arc::clone(&done));
            std::thread::spawn(move || {
                while !done.load(Ordering::Acquire) {
                    let snapshot = db.snapshot();
                    for writer in 0..WRITERS {
                        let seen = writer_state(snapshot.prefix(key(writer, "b")));
                        let mut values = seen.values();
                        let first = values.next();
                        assert!(
                            values.all(|v| Some(v) == first)
                                && (seen.is_empty() || seen.len() == BATCH_KEYS as usize),
                            "writer {writer}'s batch is partly visible: {}",
                            show(&seen)
                        );
                    }
                }
            })
        })
        .collect();
    let writers: Vec<_> = (0..WRITERS)
        .map(|writer| {
            let (db, acked) = (Arc::clone(&db), Arc::clone(&acked));
            std::thread::spawn(move || {
                for step in 1..=STEPS {
                    // Some synced writes: writers pile up behind their
                    // fsyncs and form large groups.
                    let options = if step.is_multiple_of(8) {
                        WriteOptions::sync()
                    } else {
                        WriteOptions::no_sync()
                    };
                    perform(&db, writer, step, options).unwrap();
                    acked[writer].store(step, Ordering::Release);
                }
            })
        })
        .collect();
    for writer in writers {
        writer.join().unwrap();
    }
    done.store(true, Ordering::Release);
    for reader in readers.into_iter().chain(batch_readers) {
        reader.join().unwrap();
    }
    assert!(checks.load(Ordering::Relaxed) > 0, "no reader ran");
    let stats = db.stats();
    assert_eq!(stats.writes, WRITERS as u64 * u64::from(STEPS));
    assert!(stats.write_groups <= stats.writes);
    let check = |db: &Db| {
        for writer in 0..WRITERS {
            assert_eq!(
                writer_state(db.prefix(key(writer, ""))),
                state_after(writer, STEPS),
                "writer {writer}"
            );
        }
    };
    check(&db);
    drop(Arc::into_inner(db).unwrap());
    check(&open());
}

/// A power cut: the steps each writer had acknowledged when it was drawn,
/// and the disk it left.
type Cut = (Vec<u32>, FaultInjectionFs);

/// Synced writers on a lying disk. At sync points a power cut is drawn;
/// afterwards each image is opened: for every writer it must hold the
/// state after a prefix of that writer's steps, at least as long as what
/// was acknowledged when the cut was drawn.
#[test]
fn a_power_cut_keeps_a_prefix_of_every_writer_and_every_acknowledged_write() {
    const WRITERS: usize = 6;
    const STEPS: u32 = 80;
    /// Every how many sync points a cut is drawn.
    const CUT_EVERY: usize = 7;
    let fs = FaultInjectionFs::new();
    let builder = |fs: &FaultInjectionFs| {
        Db::builder(DIR)
            .file_system(Arc::new(fs.clone()))
            .memtable_bytes(4096)
            .table_target_bytes(4096)
            .sync_writes(true)
    };
    let db = Arc::new(builder(&fs).open().unwrap());
    let acked: Arc<Vec<AtomicU32>> = Arc::new((0..WRITERS).map(|_| AtomicU32::new(0)).collect());
    let cuts: Arc<Mutex<Vec<Cut>>> = Arc::default();
    let sync_points = Arc::new(AtomicUsize::new(0));
    {
        let (acked, cuts, sync_points) = (
            Arc::clone(&acked),
            Arc::clone(&cuts),
            Arc::clone(&sync_points),
        );
        fs.on_sync(Arc::new(move |fs: &FaultInjectionFs, _: SyncPoint<'_>| {
            let n = sync_points.fetch_add(1, Ordering::Relaxed);
            if n % CUT_EVERY != 0 {
                return;
            }
            // Read before the image: a write acknowledged after this read
            // may or may not be in it.
            let floor = acked.iter().map(|a| a.load(Ordering::Acquire)).collect();
            let image = fs.crash_image(n as u64);
            cuts.lock().unwrap().push((floor, image));
        }));
    }
    let writers: Vec<_> = (0..WRITERS)
        .map(|writer| {
            let (db, acked) = (Arc::clone(&db), Arc::clone(&acked));
            std::thread::spawn(move || {
                for step in 1..=STEPS {
                    perform(&db, writer, step, WriteOptions::sync()).unwrap();
                    acked[writer].store(step, Ordering::Release);
                }
            })
        })
        .collect();
    for writer in writers {
        writer.join().unwrap();
    }
    fs.on_sync(Arc::new(|_: &FaultInjectionFs, _: SyncPoint<'_>| {}));
    let cuts = std::mem::take(&mut *cuts.lock().unwrap());
    assert!(cuts.len() >= 10, "only {} cuts drawn", cuts.len());
    for (i, (floor, image)) in cuts.iter().enumerate() {
        let reopened = builder(image).open().unwrap();
        for (writer, &floor) in floor.iter().enumerate() {
            let seen = writer_state(reopened.prefix(key(writer, "")));
            let Some(step) = matching_step(writer, &seen, STEPS) else {
                panic!(
                    "cut {i}: writer {writer}'s keys are no prefix of its history: {}",
                    show(&seen)
                );
            };
            assert!(
                step >= floor,
                "cut {i}: writer {writer} had step {floor} acknowledged as synced, the image holds {step}"
            );
        }
    }
}

/// Writers that wait in line while a sync is under way form the next
/// group; that group's sync fails. Every one of them gets an error, the
/// database refuses writes from then on, and what was acknowledged before
/// is there after a reopen.
#[test]
fn a_failed_group_sync_fails_every_writer_in_it_and_the_database() {
    const WAITING: usize = 6;
    let fs = FaultInjectionFs::new();
    let builder = synced;
    let db = Arc::new(builder(&fs).open().unwrap());
    db.insert(b"before", b"acknowledged").unwrap();
    // The next WAL sync waits until the writers have started and had time
    // to join the line, then arms a failure for the sync after it: the
    // waiting writers' group.
    let started = Arc::new(Barrier::new(WAITING + 1));
    {
        let started = Arc::clone(&started);
        let wal_syncs = AtomicUsize::new(0);
        fs.on_sync(Arc::new(
            move |fs: &FaultInjectionFs, point: SyncPoint<'_>| {
                let SyncPoint::File(path) = point else { return };
                if !path.to_string_lossy().ends_with(".wal") {
                    return;
                }
                match wal_syncs.fetch_add(1, Ordering::Relaxed) {
                    0 => {
                        started.wait();
                        std::thread::sleep(Duration::from_millis(200));
                    }
                    // The hook runs before the sync's own fault check.
                    1 => fs.inject(FaultOp::Sync, ".wal", 1),
                    _ => {}
                }
            },
        ));
    }
    let leader = {
        let db = Arc::clone(&db);
        std::thread::spawn(move || db.insert(b"leader", b"synced"))
    };
    let waiting: Vec<_> = (0..WAITING)
        .map(|i| {
            let (db, started) = (Arc::clone(&db), Arc::clone(&started));
            std::thread::spawn(move || {
                started.wait();
                db.insert(format!("waiting{i}"), b"refused")
            })
        })
        .collect();
    leader.join().unwrap().unwrap();
    let mut io_errors = 0;
    for writer in waiting {
        match writer.join().unwrap() {
            Err(Error::Io { .. }) => io_errors += 1,
            Err(Error::Background(_)) => {}
            other => panic!("a writer behind a failed sync got {other:?}"),
        }
    }
    // The writers that waited out the first sync form one group: with
    // 200 ms to join the line, at least two of them do.
    assert!(
        io_errors >= 2,
        "{io_errors} writers saw the failed group sync"
    );
    assert!(matches!(
        db.insert(b"after", b"x"),
        Err(Error::Background(_))
    ));
    fs.heal();
    drop(Arc::into_inner(db).unwrap());
    let reopened = builder(&fs).open().unwrap();
    assert_eq!(
        reopened.get(b"before").unwrap().as_deref(),
        Some(&b"acknowledged"[..])
    );
    assert_eq!(
        reopened.get(b"leader").unwrap().as_deref(),
        Some(&b"synced"[..])
    );
}

/// A writer slowed down by compaction debt and then made to wait for a
/// flush is stalled once, not twice: with one writer, the stall time
/// never exceeds the time spent writing.
#[test]
fn write_stalls_are_counted_once() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::builder(dir.path())
        .memtable_bytes(8 << 10)
        .max_immutable_memtables(1)
        .table_target_bytes(4 << 10)
        .l0_stall_runs(1, 3)
        .compaction_style(siftdb::CompactionStyle::Leveled {
            l0_trigger: 2,
            size_ratio: 4,
            l1_bytes: 16 << 10,
        })
        .compaction_threads(1)
        .open()
        .unwrap();
    let value = [7u8; 200];
    let started = std::time::Instant::now();
    for i in 0..3_000u32 {
        db.insert(i.to_be_bytes(), value).unwrap();
    }
    let elapsed = started.elapsed().as_micros() as u64;
    let stalled = db.stats().write_stall_micros;
    assert!(
        stalled > 0,
        "the load never stalled: the test shows nothing"
    );
    assert!(
        stalled <= elapsed,
        "{stalled} µs of stalls in {elapsed} µs of writing"
    );
}

/// Transfers between accounts by transactions on many threads, committing
/// in groups beside plain writers: every snapshot, and the end, holds the
/// total the accounts started with (a lost update or a half-applied
/// transfer would change it).
#[test]
fn transfers_committed_in_groups_keep_the_total() {
    const ACCOUNTS: u64 = 16;
    const START: u64 = 1_000;
    const THREADS: u64 = 8;
    const TRANSFERS: u64 = 150;
    let dir = tempfile::tempdir().unwrap();
    let db = Arc::new(Db::builder(dir.path()).open().unwrap());
    fn account(i: u64) -> Vec<u8> {
        format!("account{i:02}").into_bytes()
    }
    fn balance(v: Option<Vec<u8>>) -> u64 {
        std::str::from_utf8(&v.unwrap()).unwrap().parse().unwrap()
    }
    fn total(read: &dyn Fn(&[u8]) -> Option<Vec<u8>>) -> u64 {
        (0..ACCOUNTS).map(|i| balance(read(&account(i)))).sum()
    }
    for i in 0..ACCOUNTS {
        db.insert(account(i), START.to_string()).unwrap();
    }
    let done = Arc::new(AtomicBool::new(false));
    let auditor = {
        let (db, done) = (Arc::clone(&db), Arc::clone(&done));
        std::thread::spawn(move || {
            let mut audits = 0u64;
            while !done.load(Ordering::Acquire) {
                let snapshot = db.snapshot();
                assert_eq!(total(&|k| snapshot.get(k).unwrap()), ACCOUNTS * START);
                audits += 1;
            }
            audits
        })
    };
    // Plain writes beside the transactions, so their groups have members.
    let plain = {
        let (db, done) = (Arc::clone(&db), Arc::clone(&done));
        std::thread::spawn(move || {
            let mut i = 0u64;
            while !done.load(Ordering::Acquire) {
                db.insert(format!("other{}", i % 64), i.to_string())
                    .unwrap();
                i += 1;
            }
        })
    };
    let movers: Vec<_> = (0..THREADS)
        .map(|t| {
            let db = Arc::clone(&db);
            std::thread::spawn(move || {
                let mut rng = t * 7919 + 1;
                let mut committed = 0u64;
                while committed < TRANSFERS {
                    rng = rng
                        .wrapping_mul(6364136223846793005)
                        .wrapping_add(1442695040888963407);
                    let (from, to) = ((rng >> 33) % ACCOUNTS, (rng >> 17) % ACCOUNTS);
                    if from == to {
                        continue;
                    }
                    let mut txn = db.transaction();
                    let have = balance(txn.get(account(from)).unwrap());
                    let amount = (rng >> 50) % 50;
                    if have < amount {
                        continue;
                    }
                    let theirs = balance(txn.get(account(to)).unwrap());
                    txn.insert(account(from), (have - amount).to_string())
                        .unwrap();
                    txn.insert(account(to), (theirs + amount).to_string())
                        .unwrap();
                    match txn.commit() {
                        Ok(_) => committed += 1,
                        Err(Error::Conflict { .. }) => {}
                        Err(err) => panic!("a transfer failed: {err}"),
                    }
                }
            })
        })
        .collect();
    for mover in movers {
        mover.join().unwrap();
    }
    done.store(true, Ordering::Release);
    plain.join().unwrap();
    assert!(auditor.join().unwrap() > 0, "no audit ran");
    assert_eq!(total(&|k| db.get(k).unwrap()), ACCOUNTS * START);
    assert_eq!(db.txn_stats().committed, THREADS * TRANSFERS);
}

/// Eight synced writers, and the WAL sync of one of their groups panics
/// (a file system call that panics, not one that fails): every writer's
/// call returns (none hangs or panics), from the failure on every write is
/// refused, and after a power cut every acknowledged write is there, each
/// sequence number used once (the reopened store verifies clean).
#[test]
fn a_group_sync_that_panics_fails_the_database_and_loses_no_acknowledged_write() {
    const WRITERS: usize = 8;
    const WRITES: u32 = 200;
    let fs = FaultInjectionFs::new();
    let builder = synced;
    let db = Arc::new(builder(&fs).open().unwrap());
    let wal_syncs = Arc::new(AtomicUsize::new(0));
    {
        let wal_syncs = Arc::clone(&wal_syncs);
        fs.on_sync(Arc::new(
            move |_: &FaultInjectionFs, point: SyncPoint<'_>| {
                let SyncPoint::File(path) = point else { return };
                if path.to_string_lossy().ends_with(".wal")
                    && wal_syncs.fetch_add(1, Ordering::AcqRel) == 100
                {
                    panic!("injected fsync panic");
                }
            },
        ));
    }
    let writers: Vec<_> = (0..WRITERS)
        .map(|w| {
            let db = Arc::clone(&db);
            std::thread::spawn(move || {
                let mut acknowledged = Vec::new();
                let mut refused = false;
                for i in 0..WRITES {
                    let key = format!("w{w}-{i:03}");
                    match db.insert(&key, b"v") {
                        Ok(()) => {
                            assert!(!refused, "{key} acknowledged after a refusal");
                            acknowledged.push(key);
                        }
                        Err(Error::Io { .. } | Error::Background(_)) => refused = true,
                        Err(other) => panic!("{key}: {other:?}"),
                    }
                }
                acknowledged
            })
        })
        .collect();
    let acknowledged: Vec<String> = writers
        .into_iter()
        .flat_map(|writer| writer.join().expect("a writer panicked or hung"))
        .collect();
    assert!(
        wal_syncs.load(Ordering::Acquire) > 100,
        "the panic never came"
    );
    assert!(
        acknowledged.len() < WRITERS * WRITES as usize,
        "no write was refused"
    );
    assert!(matches!(
        db.insert(b"after", b"x"),
        Err(Error::Background(_))
    ));
    let crashed = fs.crash();
    drop(Arc::into_inner(db).unwrap());
    let reopened = builder(&crashed).open().unwrap();
    for key in &acknowledged {
        assert_eq!(
            reopened.get(key).unwrap().as_deref(),
            Some(&b"v"[..]),
            "{key} lost"
        );
    }
    reopened.insert(b"after reopen", b"x").unwrap();
    let report = reopened.verify().unwrap();
    assert!(report.is_clean(), "{report:?}");
}
