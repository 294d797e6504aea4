//! Replay of a WAL larger than a memory limit: recovery streams each WAL (no
//! read of a WAL is larger than the reader's window) into a memtable that it
//! writes out as a level-0 table each time it fills, so one WAL several
//! memtables long comes out as several tables. Every write survives, also a
//! crash anywhere in the middle of that recovery, and damage in the WAL
//! behind tables already written keeps each mode's behaviour.

#![expect(
    clippy::unwrap_used,
    reason = "test helpers fail the test on any error, like the #[test] fns clippy already exempts"
)]

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use common::ObservedFs;
use siftdb::fs::{FaultInjectionFs, FileSystem, SyncPoint};
use siftdb::{Db, DbBuilder, Error, WalRecovery};

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

const DIR: &str = "/db";

/// The memtable recovery runs with: the WALs below are many times larger.
const SMALL_MEMTABLE: usize = 64 << 10;

/// The streaming reader's window (`log/stream.rs`); its records are small.
const WINDOW: usize = 256 << 10;

fn builder(fs: Arc<dyn FileSystem>, memtable_bytes: usize) -> DbBuilder {
    Db::builder(DIR)
        .file_system(fs)
        .memtable_bytes(memtable_bytes)
        .background_threads(false)
}

/// Writes `count` single inserts, a fifth of them overwriting earlier keys,
/// into one WAL: the memtable holds them all and the handle is dropped
/// without a flush (dropping syncs the WAL). Returns the WAL and what the
/// database holds.
fn one_big_wal(fs: &FaultInjectionFs, count: u32) -> (PathBuf, Model) {
    let db = builder(Arc::new(fs.clone()), 64 << 20).open().unwrap();
    let mut model = Model::new();
    for i in 0..count {
        let key = format!("key{:06}", i % (count - count / 5)).into_bytes();
        let value = format!("value {i:06} ").repeat(16).into_bytes();
        db.insert(&key, &value).unwrap();
        model.insert(key, value);
    }
    drop(db);
    let wals = wal_files(fs);
    assert_eq!(wals.len(), 1, "{wals:?}");
    (wals[0].clone(), model)
}

fn wal_files(fs: &FaultInjectionFs) -> Vec<PathBuf> {
    let mut names: Vec<PathBuf> = fs
        .list(Path::new(DIR))
        .unwrap()
        .into_iter()
        .filter(|n| n.ends_with(".wal"))
        .map(|n| Path::new(DIR).join(n))
        .collect();
    names.sort();
    names
}

fn contents(db: &Db) -> Model {
    db.range::<Vec<u8>, _>(..).map(Result::unwrap).collect()
}

fn level0_tables(db: &Db) -> usize {
    db.stats().levels.first().map_or(0, |level| level.tables)
}

#[test]
fn a_wal_many_memtables_long_replays_through_a_bounded_window() {
    let fs = FaultInjectionFs::new();
    let (wal, model) = one_big_wal(&fs, 6000);
    let wal_bytes = fs.contents(&wal).unwrap().len();
    assert!(wal_bytes > 4 * WINDOW, "a WAL of {wal_bytes} bytes");

    let largest = Arc::new(AtomicUsize::new(0));
    let observed = Arc::clone(&largest);
    let watched = ObservedFs::new(
        fs.clone(),
        "wal",
        Arc::new(move |len| {
            observed.fetch_max(len, Ordering::Relaxed);
        }),
    );
    let db = builder(Arc::new(watched), SMALL_MEMTABLE).open().unwrap();
    let largest = largest.load(Ordering::Relaxed);
    assert!(
        largest <= WINDOW,
        "a read of {largest} bytes from a WAL of {wal_bytes}"
    );
    // Flushed a memtable at a time: several tables, none of the WAL's size.
    let tables = level0_tables(&db);
    let memtables = wal_bytes / SMALL_MEMTABLE;
    assert!(tables >= memtables, "{tables} level-0 tables");
    assert_eq!(db.stats().wal_recovery, None);
    for (key, value) in &model {
        assert_eq!(db.get(key).unwrap().as_ref(), Some(value), "{key:?}");
    }
    assert_eq!(contents(&db), model);
    assert!(
        !wal_files(&fs).contains(&wal),
        "the replayed WAL is retired"
    );

    // Reopened: the tables, nothing replayed twice. The clean close
    // compacted level 0 (it was over its trigger), so a replay would be
    // the only source of level-0 tables.
    drop(db);
    let db = builder(Arc::new(fs.clone()), SMALL_MEMTABLE)
        .open()
        .unwrap();
    assert_eq!(level0_tables(&db), 0);
    assert_eq!(contents(&db), model);
}

/// At every sync point of a recovery that writes several tables, the
/// states a power cut could leave there all open, in absolute-consistency
/// mode, with every write.
#[test]
fn a_crash_in_the_middle_of_recovery_loses_nothing() {
    let fs = FaultInjectionFs::new();
    let (_, model) = one_big_wal(&fs, 1500);
    let model = Arc::new(model);
    let table_syncs = Arc::new(AtomicUsize::new(0));
    let states = Arc::new(AtomicUsize::new(0));
    let failures = Arc::new(Mutex::new(Vec::new()));
    {
        let (model, table_syncs, states, failures) = (
            Arc::clone(&model),
            Arc::clone(&table_syncs),
            Arc::clone(&states),
            Arc::clone(&failures),
        );
        fs.on_sync(Arc::new(move |fs: &FaultInjectionFs, point| {
            if let SyncPoint::File(path) = point
                && path.extension().is_some_and(|ext| ext == "sst")
            {
                table_syncs.fetch_add(1, Ordering::Relaxed);
            }
            for seed in 0..3 {
                states.fetch_add(1, Ordering::Relaxed);
                if let Err(problem) = check_crash_state(&fs.crash_image(seed), &model) {
                    let mut failures = failures.lock().unwrap();
                    failures.push(format!("at {point:?}, seed {seed}: {problem}"));
                }
            }
        }));
    }
    let db = builder(Arc::new(fs.clone()), SMALL_MEMTABLE)
        .wal_recovery(WalRecovery::AbsoluteConsistency)
        .open()
        .unwrap();
    fs.on_sync(Arc::new(|_: &FaultInjectionFs, _: SyncPoint<'_>| {}));
    assert_eq!(contents(&db), *model);
    let failures = failures.lock().unwrap();
    assert!(failures.is_empty(), "{failures:#?}");
    let table_syncs = table_syncs.load(Ordering::Relaxed);
    assert!(table_syncs >= 4, "recovery wrote {table_syncs} tables");
    let states = states.load(Ordering::Relaxed);
    assert!(states > 3 * table_syncs, "{states} crash states checked");
}

/// Opens a crash state twice; both times it must hold exactly `model`.
fn check_crash_state(image: &FaultInjectionFs, model: &Model) -> Result<(), String> {
    for _ in 0..2 {
        let db = builder(Arc::new(image.clone()), SMALL_MEMTABLE)
            .wal_recovery(WalRecovery::AbsoluteConsistency)
            .open()
            .map_err(|e| format!("does not open: {e}"))?;
        let got = contents(&db);
        if got != *model {
            return Err(format!("{} keys of {}", got.len(), model.len()));
        }
    }
    Ok(())
}

/// Damage three quarters into a WAL: absolute consistency refuses, each
/// time at the same offset, though tables of the records before it were
/// written; point-in-time keeps exactly those records.
#[test]
fn damage_behind_flushed_tables_keeps_each_mode() {
    let fs = FaultInjectionFs::new();
    let count = 4000;
    let db = builder(Arc::new(fs.clone()), 64 << 20).open().unwrap();
    let value = |i: u32| format!("value {i:06} ").repeat(16).into_bytes();
    for i in 0..count {
        db.insert(format!("key{i:06}"), value(i)).unwrap();
    }
    drop(db);
    let wal = wal_files(&fs).pop().unwrap();
    let mut bytes = fs.contents(&wal).unwrap();
    let at = bytes.len() * 3 / 4;
    bytes[at] ^= 0x5a;
    fs.set_contents(&wal, bytes).unwrap();

    let strict = || {
        builder(Arc::new(fs.clone()), SMALL_MEMTABLE)
            .wal_recovery(WalRecovery::AbsoluteConsistency)
            .open()
    };
    let offsets: Vec<u64> = (0..2)
        .map(|_| match strict() {
            Err(Error::Corruption { path, offset, .. }) => {
                assert_eq!(path, wal);
                offset
            }
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(offsets[0], offsets[1]);
    assert!(offsets[0] <= at as u64 && at as u64 - offsets[0] < 300);

    let db = builder(Arc::new(fs.clone()), SMALL_MEMTABLE)
        .open()
        .unwrap();
    let note = db.stats().wal_recovery.unwrap();
    assert!(note.contains("replay stopped"), "{note}");
    let got = contents(&db);
    let kept = got.len() as u32;
    assert!(kept > count / 2 && kept < count, "kept {kept}");
    let prefix: Model = (0..kept)
        .map(|i| (format!("key{i:06}").into_bytes(), value(i)))
        .collect();
    assert_eq!(got, prefix);
    drop(db);
    let db = strict().unwrap();
    assert_eq!(contents(&db), prefix);
    assert_eq!(db.stats().wal_recovery, None);
}
