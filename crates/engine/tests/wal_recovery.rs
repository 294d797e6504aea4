//! The two WAL recovery modes on damaged and missing WALs: point-in-time
//! (the default) opens as of the last batch before the damage and says what
//! it dropped; absolute consistency refuses to open.

#![expect(
    clippy::unwrap_used,
    reason = "test helpers fail the test on any error, like the #[test] fns clippy already exempts"
)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use siftdb::fs::{FaultInjectionFs, FileSystem};
use siftdb::{Db, Error, WalRecovery, WriteBatch};

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

const DIR: &str = "/db";

fn open(fs: &FaultInjectionFs, mode: WalRecovery) -> Result<Db, Error> {
    Db::builder(DIR)
        .file_system(Arc::new(fs.clone()))
        .memtable_bytes(4096)
        .max_immutable_memtables(4)
        .wal_recovery(mode)
        .background_threads(false)
        .open()
}

/// Writes batches of 4 keys until the database holds `wals` WALs (frozen
/// memtables keep theirs), then 4 more batches into the newest; returns the
/// state after each batch.
fn written(fs: &FaultInjectionFs, wals: usize) -> Vec<Model> {
    let db = open(fs, WalRecovery::PointInTime).unwrap();
    let mut model = Model::new();
    let mut states = vec![model.clone()];
    let mut more = 4;
    for round in 0u32.. {
        let mut batch = WriteBatch::new();
        for i in 0..4u32 {
            let key = format!("key{:03}", (round * 4 + i) % 150).into_bytes();
            let value = format!("round {round} ").repeat(8).into_bytes();
            batch.insert(&key, &value);
            model.insert(key, value);
        }
        db.write(&batch).unwrap();
        states.push(model.clone());
        if wal_files(fs).len() >= wals {
            if more == 0 {
                break;
            }
            more -= 1;
        }
    }
    drop(db);
    states
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

/// Flips a byte a third of the way into `path`: inside a middle record.
fn damage_middle(fs: &FaultInjectionFs, path: &Path) {
    let mut bytes = fs.contents(path).unwrap();
    let at = bytes.len() / 3;
    bytes[at] ^= 0x5a;
    fs.set_contents(path, bytes).unwrap();
}

#[test]
fn damage_inside_the_newest_wal() {
    let fs = FaultInjectionFs::new();
    let states = written(&fs, 2);
    let wal = wal_files(&fs).pop().unwrap();
    damage_middle(&fs, &wal);

    match open(&fs.crash(), WalRecovery::AbsoluteConsistency).err() {
        Some(Error::Corruption { path, .. }) => assert_eq!(path, wal),
        other => panic!("{other:?}"),
    }
    let db = open(&fs, WalRecovery::PointInTime).unwrap();
    let got = contents(&db);
    let kept = states.iter().position(|s| *s == got).unwrap();
    // The newest WAL holds the last 5 batches: those before the damage
    // are kept.
    let before_newest = states.len() - 1 - 5;
    assert!(
        before_newest < kept && kept < states.len() - 1,
        "kept {kept} batches"
    );
    let note = db.stats().wal_recovery.unwrap();
    assert!(note.contains("replay stopped"), "{note}");
    // The dropped records are gone for good: the next open is clean.
    drop(db);
    let db = open(&fs, WalRecovery::AbsoluteConsistency).unwrap();
    assert_eq!(contents(&db), states[kept]);
    assert_eq!(db.stats().wal_recovery, None);
}

#[test]
fn damage_in_an_older_wal_drops_every_later_one() {
    let fs = FaultInjectionFs::new();
    let states = written(&fs, 3);
    let wals = wal_files(&fs);
    damage_middle(&fs, &wals[0]);

    assert!(matches!(
        open(&fs.crash(), WalRecovery::AbsoluteConsistency),
        Err(Error::Corruption { .. })
    ));
    let db = open(&fs, WalRecovery::PointInTime).unwrap();
    let got = contents(&db);
    let kept = states.iter().position(|s| *s == got).unwrap();
    assert!(kept < states.len() / 3, "kept {kept} of {}", states.len());
    let note = db.stats().wal_recovery.unwrap();
    assert!(note.contains("2 later WALs ignored"), "{note}");
}

#[test]
fn a_missing_wal_is_a_gap_in_sequence_numbers() {
    let fs = FaultInjectionFs::new();
    let states = written(&fs, 3);
    let wals = wal_files(&fs);
    fs.remove(&wals[1]).unwrap();
    fs.sync_dir(Path::new(DIR)).unwrap();

    match open(&fs.crash(), WalRecovery::AbsoluteConsistency).err() {
        Some(Error::Corruption { path, detail, .. }) => {
            assert_eq!(path, wals[2]);
            assert!(detail.contains("missing"), "{detail}");
        }
        other => panic!("{other:?}"),
    }
    // `verify` reports the gap as recovery sees it.
    let report = siftdb::verify_in(&fs, Path::new(DIR), &mut |_| {}).unwrap();
    assert_eq!(report.problems.len(), 1, "{:?}", report.problems);
    assert_eq!(report.problems[0].path, wals[2]);
    // Point-in-time keeps the first WAL's batches and nothing after the
    // gap: the third WAL's writes would otherwise appear without the
    // second's.
    let db = open(&fs, WalRecovery::PointInTime).unwrap();
    let got = contents(&db);
    let kept = states.iter().position(|s| *s == got);
    assert!(
        kept.is_some(),
        "not the state after any prefix of the writes"
    );
}

#[test]
fn a_torn_tail_of_the_newest_wal_opens_in_both_modes() {
    let fs = FaultInjectionFs::new();
    let states = written(&fs, 2);
    let wal = wal_files(&fs).pop().unwrap();
    let bytes = fs.contents(&wal).unwrap();
    fs.set_contents(&wal, bytes[..bytes.len() - 3].to_vec())
        .unwrap();
    for mode in [WalRecovery::AbsoluteConsistency, WalRecovery::PointInTime] {
        let db = open(&fs.crash(), mode).unwrap();
        assert_eq!(contents(&db), states[states.len() - 2], "{mode:?}");
        assert_eq!(db.stats().wal_recovery, None);
    }
}
