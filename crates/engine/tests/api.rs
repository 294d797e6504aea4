//! The public API's contracts and its error paths: limits, the lock file,
//! option checks, a clean reopen on the real file system, snapshots and
//! the statistics a user reads.

use std::sync::Arc;

use siftdb::fs::FaultInjectionFs;
use siftdb::{
    CompactionStyle, Db, Error, FilterPolicy, MAX_KEY_LEN, MAX_VALUE_LEN, PersistMode, WriteBatch,
    WriteOptions,
};

fn in_memory(fs: &FaultInjectionFs) -> siftdb::DbBuilder {
    Db::builder("/db")
        .file_system(Arc::new(fs.clone()))
        .memtable_bytes(16 << 10)
        .table_target_bytes(16 << 10)
        .background_threads(false)
}

fn is_invalid<T: std::fmt::Debug>(result: siftdb::Result<T>) -> bool {
    matches!(result, Err(Error::InvalidArgument(_)))
}

#[test]
fn a_second_open_of_the_same_directory_is_locked() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path()).unwrap();
    match Db::open(dir.path()) {
        Err(Error::Locked { path }) => assert_eq!(path, dir.path()),
        other => panic!("expected Locked, got {other:?}"),
    }
    drop(db);
    // The lock goes with the handle.
    Db::open(dir.path()).unwrap();
}

#[test]
fn keys_and_values_over_their_limits_are_refused_and_nothing_is_written() {
    let fs = FaultInjectionFs::new();
    let db = in_memory(&fs).open().unwrap();
    let long_key = vec![b'k'; MAX_KEY_LEN + 1];
    let long_value = vec![b'v'; MAX_VALUE_LEN + 1];
    assert!(is_invalid(db.insert(&long_key, b"v")));
    assert!(is_invalid(db.insert(b"k", &long_value)));
    assert!(is_invalid(db.remove(&long_key)));
    assert!(is_invalid(db.get(&long_key)));
    assert!(is_invalid(
        db.multi_get(&[b"fine".to_vec(), long_key.clone()])
    ));
    let mut batch = WriteBatch::new();
    batch.insert(b"fine", b"v");
    batch.insert(b"k", &long_value);
    assert!(is_invalid(db.write(&batch)));
    // The batch is atomic: its valid half was not applied either.
    assert_eq!(db.get(b"fine").unwrap(), None);
    // At the limits exactly, both are accepted.
    let key = vec![b'k'; MAX_KEY_LEN];
    db.insert(&key, b"v").unwrap();
    assert_eq!(db.get(&key).unwrap().as_deref(), Some(&b"v"[..]));
    let err = db.insert(b"k", &long_value).unwrap_err().to_string();
    assert!(
        err.contains("value"),
        "the message names what is too large: {err}"
    );
}

#[test]
fn options_out_of_range_are_refused() {
    let fs = FaultInjectionFs::new();
    assert!(is_invalid(in_memory(&fs).memtable_bytes(10).open()));
    assert!(is_invalid(in_memory(&fs).block_bytes(1).open()));
    assert!(is_invalid(in_memory(&fs).l0_stall_runs(5, 5).open()));
    assert!(is_invalid(
        in_memory(&fs)
            .filter_policy(FilterPolicy::blocked_bloom(f64::NAN))
            .open()
    ));
    assert!(is_invalid(
        in_memory(&fs)
            .compaction_style(CompactionStyle::Tiered { runs_per_level: 1 })
            .open()
    ));
    // Level 0 would fill to the stop threshold before its compaction is
    // due: writers would wait forever (or spin without background threads).
    assert!(is_invalid(
        in_memory(&fs)
            .l0_stall_runs(4, 6)
            .compaction_style(CompactionStyle::Tiered { runs_per_level: 6 })
            .open()
    ));
    // Nothing was created by the refused opens.
    assert!(fs.contents(std::path::Path::new("/db/CURRENT")).is_none());
}

/// A power cut at any sync point while a new database is created leaves
/// a directory that opens (as the empty database) and takes writes: the
/// first manifest is written before CURRENT names it.
#[test]
fn a_creation_cut_short_by_a_power_cut_opens_as_a_new_database() {
    let fs = FaultInjectionFs::new();
    let images = Arc::new(std::sync::Mutex::new(Vec::new()));
    {
        let images = Arc::clone(&images);
        fs.on_sync(Arc::new(move |fs: &FaultInjectionFs, _| {
            let mut images = images.lock().unwrap();
            for seed in 0..4 {
                images.push(fs.crash_image(seed));
            }
        }));
    }
    drop(in_memory(&fs).open().unwrap());
    let images = std::mem::take(&mut *images.lock().unwrap());
    assert!(images.len() >= 8, "only {} crash states", images.len());
    for (i, image) in images.iter().enumerate() {
        let db = in_memory(image)
            .open()
            .unwrap_or_else(|e| panic!("crash state {i}: {e}"));
        assert_eq!(db.range::<&[u8], _>(..).count(), 0);
        db.insert(b"k", b"v").unwrap();
        drop(db);
        let db = in_memory(image).open().unwrap();
        assert_eq!(db.get(b"k").unwrap().as_deref(), Some(&b"v"[..]));
    }
}

#[test]
fn the_compaction_style_is_fixed_at_creation() {
    let fs = FaultInjectionFs::new();
    drop(in_memory(&fs).open().unwrap());
    let tiered = in_memory(&fs).compaction_style(CompactionStyle::tiered());
    assert!(is_invalid(tiered.open()));
    in_memory(&fs).open().unwrap();
}

#[test]
fn compact_range_with_reversed_bounds_is_refused() {
    let fs = FaultInjectionFs::new();
    let db = in_memory(&fs).open().unwrap();
    assert!(is_invalid(db.compact_range(b"z", b"a")));
    db.compact_range(b"a", b"z").unwrap();
}

#[test]
fn a_clean_reopen_on_the_real_file_system_keeps_everything() {
    let dir = tempfile::tempdir().unwrap();
    let build = || {
        Db::builder(dir.path())
            .memtable_bytes(64 << 10)
            .table_target_bytes(64 << 10)
    };
    {
        let db = build().open().unwrap();
        for i in 0..5_000u32 {
            db.insert(format!("key{i:05}"), format!("value{i}"))
                .unwrap();
        }
        for i in (0..5_000u32).step_by(3) {
            db.remove(format!("key{i:05}")).unwrap();
        }
        db.write_with(&WriteBatch::new(), WriteOptions::sync())
            .unwrap();
        db.persist(PersistMode::Buffer).unwrap();
    }
    let db = build().open().unwrap();
    let all: Vec<(Vec<u8>, Vec<u8>)> = db.range::<&[u8], _>(..).map(Result::unwrap).collect();
    let expected: Vec<(Vec<u8>, Vec<u8>)> = (0..5_000u32)
        .filter(|i| i % 3 != 0)
        .map(|i| {
            (
                format!("key{i:05}").into_bytes(),
                format!("value{i}").into_bytes(),
            )
        })
        .collect();
    assert_eq!(all, expected);
    assert!(db.stats().levels.iter().any(|l| l.tables > 0));
}

#[test]
fn a_snapshot_reads_as_of_its_moment_through_flush_and_compaction() {
    let fs = FaultInjectionFs::new();
    let db = in_memory(&fs).open().unwrap();
    db.insert(b"a", b"1").unwrap();
    db.insert(b"b", b"1").unwrap();
    let snapshot = db.snapshot();
    db.insert(b"a", b"2").unwrap();
    db.remove(b"b").unwrap();
    db.insert(b"c", b"2").unwrap();
    db.compact().unwrap();
    assert_eq!(snapshot.get(b"a").unwrap().as_deref(), Some(&b"1"[..]));
    assert_eq!(snapshot.get(b"b").unwrap().as_deref(), Some(&b"1"[..]));
    assert!(!snapshot.contains_key(b"c").unwrap());
    let keys: Vec<Vec<u8>> = snapshot.prefix(b"").rev().map(|e| e.unwrap().0).collect();
    assert_eq!(keys, [b"b".to_vec(), b"a".to_vec()]);
    assert_eq!(db.get(b"a").unwrap().as_deref(), Some(&b"2"[..]));
    assert!(!db.contains_key(b"b").unwrap());
}

#[test]
fn stats_describe_levels_and_filters() {
    let fs = FaultInjectionFs::new();
    let db = in_memory(&fs)
        .filter_policy(FilterPolicy::blocked_bloom(12.0))
        .open()
        .unwrap();
    for i in 0..3_000u32 {
        db.insert((2 * i).to_be_bytes(), b"value").unwrap();
    }
    db.compact().unwrap();
    let stats = db.stats();
    let level = stats.levels.iter().find(|l| l.tables > 0).unwrap();
    assert_eq!(level.distinct_keys, 3_000);
    assert_eq!(level.filter_kind, "blocked_bloom");
    assert!(
        (11.5..13.0).contains(&level.filter_bits_per_key),
        "{level:?}"
    );
    assert!(stats.compactions >= 1 && stats.flushes >= 1, "{stats:?}");
    // Odd keys fall inside the tables' key ranges: only filters reject them.
    for i in 0..1_000u32 {
        assert_eq!(db.get((2 * i + 1).to_be_bytes()).unwrap(), None);
    }
    let after = db.stats();
    assert_eq!(after.gets, 1_000);
    assert!(after.filter_negatives > 900, "{after:?}");
}
