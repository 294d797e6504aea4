//! Damaged files: every flipped or cut byte gives `Error::Corruption`
//! naming the damaged file, or (WAL tail, filter block) a clean recovery
//! with correct data. Never a panic, never a wrong answer. Under
//! point-in-time WAL recovery (the default) a damaged WAL opens as of the
//! batches before the damage.

#![expect(
    clippy::unwrap_used,
    reason = "test helpers fail the test on any error, like the #[test] fns clippy already exempts"
)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use siftdb::fs::{FaultInjectionFs, FileSystem};
use siftdb::{CompactionStyle, Db, Error, WalRecovery, WriteBatch};

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

const DIR: &str = "/db";

fn builder(fs: &FaultInjectionFs) -> siftdb::DbBuilder {
    builder_with(fs, WalRecovery::AbsoluteConsistency)
}

/// Damage is reported under absolute consistency; point-in-time recovery
/// is checked on its own for WALs.
fn builder_with(fs: &FaultInjectionFs, mode: WalRecovery) -> siftdb::DbBuilder {
    Db::builder(DIR)
        .wal_recovery(mode)
        .file_system(Arc::new(fs.clone()))
        .memtable_bytes(8 << 10)
        .table_target_bytes(8 << 10)
        .block_bytes(512)
        .compaction_style(CompactionStyle::Leveled {
            l0_trigger: 2,
            size_ratio: 3,
            l1_bytes: 16 << 10,
        })
        .background_threads(false)
}

/// A database with tables in two levels, a manifest and a WAL of three
/// unflushed batches. Returns the file system, the model after the
/// flushed part, and the models after each WAL batch.
fn build() -> (FaultInjectionFs, Vec<Model>) {
    let fs = FaultInjectionFs::new();
    let db = builder(&fs).open().unwrap();
    let mut model = Model::new();
    for i in 0..600u32 {
        let key = format!("key{:04}", (i * 7) % 500).into_bytes();
        let value = format!("value-{i}-").repeat(3).into_bytes();
        db.insert(&key, &value).unwrap();
        model.insert(key, value);
    }
    db.compact().unwrap();
    for i in 0..200u32 {
        let key = format!("key{:04}", i * 3).into_bytes();
        db.insert(&key, b"second").unwrap();
        model.insert(key, b"second".to_vec());
    }
    db.flush().unwrap();
    let mut states = vec![model.clone()];
    for round in 0..3u32 {
        let mut batch = WriteBatch::new();
        for i in 0..5u32 {
            let key = format!("wal{round}-{i}").into_bytes();
            batch.insert(&key, b"in the wal");
            model.insert(key, b"in the wal".to_vec());
        }
        batch.remove(b"key0000");
        model.remove(b"key0000".as_slice());
        db.write(&batch).unwrap();
        states.push(model.clone());
    }
    let stats = db.stats();
    assert!(
        stats.levels.iter().filter(|l| l.tables > 0).count() >= 2,
        "{stats:?}"
    );
    drop(db);
    (fs, states)
}

/// Opens and reads everything: every key of the final model by `get`, and
/// a full scan both ways.
fn read_all(
    fs: &FaultInjectionFs,
    keys: &[Vec<u8>],
    mode: WalRecovery,
) -> Result<(Model, Model), Error> {
    let db = builder_with(fs, mode).open()?;
    let mut got = Model::new();
    for key in keys {
        if let Some(value) = db.get(key)? {
            got.insert(key.clone(), value);
        }
    }
    let scanned: Model = db.range::<Vec<u8>, _>(..).collect::<Result<_, _>>()?;
    let reversed: Model = db.range::<Vec<u8>, _>(..).rev().collect::<Result<_, _>>()?;
    assert_eq!(scanned, reversed);
    Ok((got, scanned))
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Damage {
    Flip(usize),
    Cut(usize),
}

fn damaged(original: &[u8], damage: Damage) -> Vec<u8> {
    let mut bytes = original.to_vec();
    match damage {
        Damage::Flip(at) => bytes[at] ^= 0x5a,
        Damage::Cut(len) => bytes.truncate(len),
    }
    bytes
}

/// About 40 flips and 10 cuts spread over a file, plus its first and last
/// bytes.
fn damages(len: usize) -> Vec<Damage> {
    let step = (len / 40).max(1);
    let mut out: Vec<Damage> = (0..len).step_by(step).map(Damage::Flip).collect();
    out.push(Damage::Flip(len - 1));
    out.extend((0..len).step_by((len / 10).max(1)).map(Damage::Cut));
    out.push(Damage::Cut(len - 1));
    out
}

fn files(fs: &FaultInjectionFs) -> Vec<PathBuf> {
    let mut names = fs.list(Path::new(DIR)).unwrap();
    names.sort();
    names
        .into_iter()
        .filter(|n| n != "LOCK")
        .map(|n| Path::new(DIR).join(n))
        .collect()
}

#[test]
fn every_damaged_file_is_reported_or_recovered_correctly() {
    let (fs, states) = build();
    let model = states.last().unwrap().clone();
    let keys: Vec<Vec<u8>> = states
        .iter()
        .flat_map(|s| s.keys().cloned())
        .chain([b"key0000".to_vec()])
        .collect();
    let files = files(&fs);
    let kinds: Vec<&str> = files
        .iter()
        .filter_map(|p| p.extension().and_then(|e| e.to_str()))
        .collect();
    assert!(
        kinds.contains(&"sst") && kinds.contains(&"wal"),
        "{files:?}"
    );
    let mut outcomes = BTreeMap::<String, (usize, usize)>::new();
    for path in &files {
        let original = fs.contents(path).unwrap();
        let kind = path.extension().map_or("CURRENT/MANIFEST".to_owned(), |e| {
            e.to_string_lossy().into_owned()
        });
        for damage in damages(original.len()) {
            let copy = fs.crash();
            copy.set_contents(path, damaged(&original, damage)).unwrap();
            let tally = outcomes.entry(kind.clone()).or_default();
            if kind == "wal" {
                // Point-in-time recovery opens whatever the damage, as of
                // the batches before it.
                let pit = read_all(&copy.crash(), &keys, WalRecovery::PointInTime);
                let (got, scanned) = pit.unwrap_or_else(|e| {
                    panic!("{damage:?} in {}: point-in-time: {e}", path.display())
                });
                assert!(states.contains(&scanned) && got == scanned, "{damage:?}");
            }
            match read_all(&copy, &keys, WalRecovery::AbsoluteConsistency) {
                Err(Error::Corruption { path: reported, .. }) => {
                    assert_eq!(
                        &reported,
                        path,
                        "{damage:?} in {} reported against another file",
                        path.display()
                    );
                    tally.0 += 1;
                }
                Err(other) => panic!("{damage:?} in {}: unexpected error {other}", path.display()),
                Ok((got, scanned)) => {
                    // A torn WAL tail loses the unsynced batches after the
                    // damage: the result must be the state after a prefix.
                    let is_wal = kind == "wal";
                    let acceptable = |m: &Model| *m == model || (is_wal && states.contains(m));
                    assert!(
                        acceptable(&scanned),
                        "{damage:?} in {}: wrong data from a scan",
                        path.display()
                    );
                    let expected_gets: Model = scanned.clone();
                    assert_eq!(
                        got,
                        expected_gets,
                        "{damage:?} in {}: get disagrees with scan",
                        path.display()
                    );
                    tally.1 += 1;
                }
            }
        }
    }
    // The tally docs/reliability.md quotes (run with --nocapture).
    eprintln!("damaged copies (reported, recovered) per file kind: {outcomes:?}");
    // Damage anywhere but a table's filter block or the WAL tail must be
    // detected: most damaged tables and manifests are reported.
    for (kind, (reported, recovered)) in &outcomes {
        assert!(
            *reported > 0,
            "{kind}: no damage was ever reported ({recovered} clean recoveries)"
        );
    }
}
