//! The budget of resident table metadata (`DbBuilder::filter_memory_bytes`):
//! an open reads no table, a lookup reads the metadata of the tables it
//! meets, resident bytes never exceed the budget while readers and
//! compactions run, and evicted metadata never costs a right answer.

#![expect(
    clippy::unwrap_used,
    reason = "test helpers fail the test on any error, like the #[test] fns clippy already exempts"
)]

mod common;

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use common::ObservedFs;
use siftdb::fs::{FaultInjectionFs, FileSystem};
use siftdb::{CompactionStyle, Db, DbBuilder, Error, FilterPolicy, Stats};

const DIR: &str = "/db";
const KEYS: u32 = 20_000;

fn key(i: u32) -> Vec<u8> {
    format!("key{i:08}").into_bytes()
}

fn value(i: u32) -> Vec<u8> {
    format!("value-{i}-{}", "v".repeat((i % 40) as usize)).into_bytes()
}

/// Small tables, so that a store of `KEYS` keys has a few hundred, with
/// partitioned key filters, so that their partitions are read, kept and
/// evicted on their own.
fn builder(fs: Arc<dyn FileSystem>, budget: u64) -> DbBuilder {
    let partitioned = FilterPolicy {
        partition_keys: 64,
        ..FilterPolicy::default()
    };
    Db::builder(Path::new(DIR))
        .filter_policy(partitioned)
        .file_system(fs)
        .memtable_bytes(64 << 10)
        .table_target_bytes(16 << 10)
        .block_bytes(1024)
        .block_cache_bytes(256 << 10)
        .compaction_style(CompactionStyle::Leveled {
            l0_trigger: 4,
            size_ratio: 4,
            l1_bytes: 128 << 10,
        })
        .filter_memory_bytes(budget)
}

/// A store of `KEYS` keys (written shuffled, settled), closed. Flushes and
/// compactions run on the writer's thread, so the store has the same
/// tables in every run: with background threads, a loaded machine settles
/// into other shapes, and which tables the budget keeps depends on them.
fn store() -> FaultInjectionFs {
    let fs = FaultInjectionFs::new();
    let db = builder(Arc::new(fs.clone()), u64::MAX)
        .background_threads(false)
        .open()
        .unwrap();
    for i in 0..KEYS {
        let i = i.wrapping_mul(7919) % KEYS;
        db.insert(key(i), value(i)).unwrap();
    }
    db.flush().unwrap();
    db.wait_for_compactions().unwrap();
    drop(db);
    fs
}

fn tables(stats: &Stats) -> usize {
    stats.levels.iter().map(|l| l.tables).sum()
}

fn sum(stats: &Stats, field: impl Fn(&siftdb::LevelStats) -> u64) -> u64 {
    stats.levels.iter().map(field).sum()
}

/// The bytes of every table's metadata: what an unlimited budget holds
/// once every table has been used.
fn full_metadata(fs: &FaultInjectionFs) -> u64 {
    let db = builder(Arc::new(fs.clone()), u64::MAX).open().unwrap();
    for i in 0..KEYS {
        db.get(key(i)).unwrap();
    }
    let stats = db.stats();
    assert_eq!(sum(&stats, |l| l.metadata_evictions), 0);
    assert_eq!(
        stats.levels.iter().map(|l| l.tables_unread).sum::<usize>(),
        0
    );
    stats.filter_memory_resident
}

#[test]
fn an_open_reads_no_table_and_a_lookup_reads_the_tables_it_meets() {
    let fs = store();
    let reads = Arc::new(AtomicU64::new(0));
    let counting = ObservedFs::counting_table_reads(fs.crash(), &reads);
    let db = builder(Arc::new(counting), u64::MAX).open().unwrap();
    assert_eq!(reads.load(Ordering::Relaxed), 0, "the open read tables");
    let stats = db.stats();
    let count = tables(&stats);
    assert!(count > 50, "only {count} tables");
    let unread: usize = stats.levels.iter().map(|l| l.tables_unread).sum();
    assert_eq!(unread, count);
    assert_eq!(stats.filter_memory_resident, 0);

    assert_eq!(db.get(key(4321)).unwrap(), Some(value(4321)));
    let levels = stats.levels.iter().filter(|l| l.tables > 0).count() as u64;
    let stats = db.stats();
    // At most one table per level, the filter partition the key falls in
    // for each, and the index of the table that holds the key.
    let loads = sum(&stats, |l| l.metadata_loads);
    assert!(
        (1..=2 * levels + 1).contains(&loads),
        "{loads} tables and pieces read for one lookup in {levels} levels"
    );
    // Footer, properties and partition index of a table, one block for a
    // piece, and one data block.
    let read = reads.load(Ordering::Relaxed);
    assert!(read <= 3 * loads + 1, "{read} reads for {loads} loads");
    assert!(stats.filter_memory_resident > 0);
}

#[test]
fn resident_metadata_stays_within_the_budget_under_readers_and_compactions() {
    let fs = store();
    let full = full_metadata(&fs);
    let budget = full / 4;
    let db = Arc::new(builder(Arc::new(fs), budget).open().unwrap());
    let done = Arc::new(AtomicBool::new(false));
    let worst = Arc::new(AtomicU64::new(0));
    std::thread::scope(|s| {
        for t in 0..3u32 {
            let db = Arc::clone(&db);
            s.spawn(move || {
                let mut x = 0x9e37_79b9_u32.wrapping_mul(t + 1);
                for _ in 0..6_000 {
                    x ^= x << 13;
                    x ^= x >> 17;
                    x ^= x << 5;
                    // Skewed toward the first keys, half of them missing.
                    let i = (x % KEYS) >> (x % 4);
                    if x.is_multiple_of(2) {
                        assert_eq!(db.get(key(i)).unwrap(), Some(value(i)), "key {i}");
                    } else {
                        let missing = format!("key{i:08}-missing").into_bytes();
                        assert_eq!(db.get(&missing).unwrap(), None);
                    }
                }
            });
        }
        // New keys after the old ones: flushes and compactions beside the
        // readers.
        let writer = {
            let db = Arc::clone(&db);
            s.spawn(move || {
                for i in KEYS..KEYS + 8_000 {
                    db.insert(key(i), value(i)).unwrap();
                }
            })
        };
        let watcher = {
            let (db, done, worst) = (Arc::clone(&db), Arc::clone(&done), Arc::clone(&worst));
            s.spawn(move || {
                while !done.load(Ordering::Relaxed) {
                    // The total is read under the budget's lock; the
                    // per-level figures are not one snapshot while tables
                    // come and go (checked below, at rest).
                    let resident = db.stats().filter_memory_resident;
                    worst.fetch_max(resident, Ordering::Relaxed);
                    std::thread::yield_now();
                }
            })
        };
        writer.join().unwrap();
        db.wait_for_compactions().unwrap();
        done.store(true, Ordering::Relaxed);
        watcher.join().unwrap();
    });
    let worst = worst.load(Ordering::Relaxed);
    assert!(
        worst > 0 && worst <= budget,
        "{worst} resident, budget {budget}"
    );
    let stats = db.stats();
    assert!(sum(&stats, |l| l.metadata_evictions) > 0, "nothing evicted");
    assert_eq!(
        sum(&stats, |l| l.resident_bytes),
        stats.filter_memory_resident
    );
    for i in (0..KEYS + 8_000).step_by(7) {
        assert_eq!(db.get(key(i)).unwrap(), Some(value(i)), "key {i}");
    }
}

/// A budget of a few tables: the tables a hot key range lives in stay
/// resident while lookups elsewhere pass through them, so the hot tables
/// are read once and each cold lookup reads at most the tables it meets.
/// (Were victims drawn without regard to heat, a cold load would push a
/// hot table out about every other time.)
#[test]
fn hot_tables_stay_resident_while_cold_lookups_pass_through() {
    let fs = store();
    let full = full_metadata(&fs);
    let levels = {
        let db = builder(Arc::new(fs.clone()), u64::MAX).open().unwrap();
        let stats = db.stats();
        let count = tables(&stats) as u64;
        let levels = stats.levels.iter().filter(|l| l.tables > 0).count() as u64;
        // Room for about two tables per level.
        drop(db);
        (levels, 2 * levels * full / count)
    };
    let (levels, budget) = levels;
    let db = builder(Arc::new(fs), budget).open().unwrap();
    let loads = |db: &Db| sum(&db.stats(), |l| l.metadata_loads);
    let mut x = 0x1234_5678_u32;
    let mut hot_loads = Vec::new();
    for _ in 0..300 {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        let cold = 1_000 + x % (KEYS - 1_000);
        assert_eq!(db.get(key(cold)).unwrap(), Some(value(cold)));
        let before = loads(&db);
        for i in 0..20 {
            assert_eq!(db.get(key(i)).unwrap(), Some(value(i)));
        }
        hot_loads.push(loads(&db) - before);
    }
    // The first round reads what the hot keys need: at most a table and a
    // filter partition per level, and the index of the table holding them.
    assert!(
        hot_loads[0] <= 2 * levels + 1,
        "the first hot round read {} tables and pieces",
        hot_loads[0]
    );
    let later: u64 = hot_loads[1..].iter().sum();
    assert_eq!(later, 0, "the hot tables and pieces were read again");
    assert!(db.stats().filter_memory_resident <= budget);
}

/// The budget and the block cache hold different tables and pieces: one
/// evicted from the budget is kept by the cache, one promoted out of the
/// cache leaves it. With a cache that holds every table, sweeps over all
/// keys read each table and each piece at most once, however the budget
/// churns.
#[test]
fn tables_evicted_from_the_budget_are_served_by_the_block_cache() {
    let fs = store();
    let full = full_metadata(&fs);
    let count = tables(
        &builder(Arc::new(fs.clone()), u64::MAX)
            .open()
            .unwrap()
            .stats(),
    ) as u64;
    // Room for a few tables; the cache has room for all of them twice.
    let db = builder(Arc::new(fs.clone()), 4 * full / count)
        .block_cache_bytes(2 * full + (1 << 20))
        .open()
        .unwrap();
    let sweep = |keys: std::ops::Range<u32>| {
        for i in keys.step_by(7) {
            assert_eq!(db.get(key(i)).unwrap(), Some(value(i)));
        }
        sum(&db.stats(), |l| l.metadata_loads)
    };
    let first = sweep(0..KEYS);
    let evicted = sum(&db.stats(), |l| l.metadata_evictions);
    // Lookups in one half, then the other: each half's tables grow hotter
    // than the other's and push them out of the budget.
    for half in [0, 1, 0, 1] {
        for _ in 0..4 {
            sweep(half * KEYS / 2..(half + 1) * KEYS / 2);
        }
    }
    let later = sweep(0..KEYS);
    let stats = db.stats();
    assert!(
        sum(&stats, |l| l.metadata_evictions) > evicted,
        "the budget did not churn"
    );
    // Which partitions a sweep reads depends on what is resident (a
    // partition that rules out few keys at its level is not read when it
    // is not resident), but none is read twice.
    assert!(first > 0 && later >= first);
    let pieces = pieces(&fs);
    assert!(
        later <= pieces,
        "{later} loads of {pieces} tables and pieces"
    );
}

/// Tables, their indexes and their filter partitions, in the files of `fs`.
fn pieces(fs: &FaultInjectionFs) -> u64 {
    let mut pieces = 0;
    for name in fs.list(Path::new(DIR)).unwrap() {
        if name.ends_with(".sst") {
            let path = Path::new(DIR).join(&name);
            let table = siftdb::TableFile::open_in(fs, &path).unwrap().properties();
            pieces += 2 + table.filter_partitions;
        }
    }
    pieces
}

/// A tiny budget: most uses read a table's metadata and drop it again.
/// Every answer matches a model, across writes, deletes, scans and reopens.
#[test]
fn a_tiny_budget_answers_like_a_model_across_reopens() {
    let fs = FaultInjectionFs::new();
    let open = |fs: &FaultInjectionFs| builder(Arc::new(fs.clone()), 4 << 10).open().unwrap();
    let mut db = open(&fs);
    let mut model = BTreeMap::<Vec<u8>, Vec<u8>>::new();
    let mut x = 0x2545_f491_u32;
    for step in 0..30_000u32 {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        let i = x % 3_000;
        match x % 10 {
            0..=4 => {
                db.insert(key(i), value(step)).unwrap();
                model.insert(key(i), value(step));
            }
            5 => {
                db.remove(key(i)).unwrap();
                model.remove(&key(i));
            }
            _ => assert_eq!(db.get(key(i)).unwrap(), model.get(&key(i)).cloned()),
        }
        if step % 7_000 == 6_999 {
            let scanned: BTreeMap<_, _> = db
                .range::<Vec<u8>, _>(..)
                .collect::<Result<_, _>>()
                .unwrap();
            assert_eq!(scanned, model, "scan at step {step}");
            drop(db);
            db = open(&fs);
        }
    }
    let stats = db.stats();
    assert!(stats.filter_memory_resident <= 4 << 10);
    assert!(sum(&stats, |l| l.transient_loads) > 0, "{stats:?}");
    for i in 0..3_000 {
        assert_eq!(db.get(key(i)).unwrap(), model.get(&key(i)).cloned());
    }
}

#[test]
fn a_damaged_table_opens_and_is_reported_with_its_file_at_first_use() {
    let fs = store();
    let mut names = fs.list(Path::new(DIR)).unwrap();
    names.retain(|n| n.ends_with(".sst"));
    names.sort();
    let path = Path::new(DIR).join(&names[names.len() / 2]);
    let mut bytes = fs.contents(&path).unwrap();
    let len = bytes.len();
    // The footer: nothing of the table can be read.
    bytes[len - 3] ^= 0x5a;
    fs.set_contents(&path, bytes).unwrap();

    let db = builder(Arc::new(fs.clone()), u64::MAX).open().unwrap();
    let mut reported = None;
    for i in 0..KEYS {
        match db.get(key(i)) {
            Ok(found) => assert_eq!(found, Some(value(i))),
            Err(Error::Corruption { path, .. }) => {
                reported = Some(path);
                break;
            }
            Err(other) => panic!("key {i}: {other}"),
        }
    }
    assert_eq!(reported.as_deref(), Some(path.as_path()));
    drop(db);
    let report = siftdb::verify_in(&fs, Path::new(DIR), &mut |_| {}).unwrap();
    assert_eq!(report.problems.len(), 1, "{:?}", report.problems);
}

/// The target bits per key of the key filters of the live tables holding
/// keys that start with `prefix`.
fn target_bits(fs: &FaultInjectionFs, prefix: u8) -> Vec<f64> {
    let mut bits = Vec::new();
    for name in fs.list(Path::new(DIR)).unwrap() {
        if !name.ends_with(".sst") {
            continue;
        }
        let path = Path::new(DIR).join(&name);
        let summary = siftdb::TableFile::open_in(fs, &path).unwrap().properties();
        if summary.smallest_user_key.first() == Some(&prefix) {
            bits.push(summary.filter_target_bits_per_key);
        }
    }
    bits
}

/// Two key ranges, `a…` and `b…`, settled in the deepest level; missing
/// keys of `a…` looked up `lookups` times; then both ranges rewritten and
/// compacted on their own. The target bits per key of each range's tables.
fn rewritten_after_lookups(lookups: u32) -> (Vec<f64>, Vec<f64>) {
    const PER_RANGE: u32 = 2_000;
    let fs = FaultInjectionFs::new();
    // Whole filters: a partition of 64 keys leaves Monkey's curve no room
    // to move the bits.
    let db = builder(Arc::new(fs.clone()), u64::MAX)
        .filter_policy(FilterPolicy::default())
        .background_threads(false)
        .open()
        .unwrap();
    let write_all = |round: u32| {
        for range in ["a", "b"] {
            for i in 0..PER_RANGE {
                db.insert(format!("{range}{i:05}"), format!("{round}-{i}"))
                    .unwrap();
            }
            db.flush().unwrap();
        }
    };
    write_all(0);
    db.compact().unwrap();
    for n in 0..lookups {
        // Sorts right after a stored key: only the filter rules it out.
        let missing = format!("a{:05}x", n % PER_RANGE);
        assert_eq!(db.get(missing).unwrap(), None);
    }
    write_all(1);
    db.compact_range("b", "b~").unwrap();
    db.compact_range("a", "a~").unwrap();
    let bits = (target_bits(&fs, b'a'), target_bits(&fs, b'b'));
    drop(db);
    bits
}

/// Filters compacted into a level get more bits per key where lookups go
/// (Mnemosyne's allocation on top of Monkey's by level), fewer where none
/// go.
#[test]
fn compaction_spends_filter_bits_where_lookups_go() {
    let (hot, cold) = rewritten_after_lookups(40_000);
    let (plain_a, plain_b) = rewritten_after_lookups(0);
    assert!(!hot.is_empty() && !cold.is_empty() && !plain_a.is_empty());
    let mean = |bits: &[f64]| bits.iter().sum::<f64>() / bits.len() as f64;
    // Against the same compactions without lookups (the level's share),
    // the looked-up range gains and the other loses.
    assert!(mean(&hot) > mean(&plain_a) + 0.5, "{hot:?} {plain_a:?}");
    assert!(mean(&cold) < mean(&plain_b) - 1.0, "{cold:?} {plain_b:?}");
}

/// With nothing kept in memory, a lookup of a missing key reads the
/// table's footer, properties and partition directory and the one filter
/// partition the key falls in: not the whole filter, and not the index.
#[test]
fn a_lookup_reads_the_filter_partition_it_needs_not_the_whole_filter() {
    let fs = FaultInjectionFs::new();
    let policy = FilterPolicy {
        partition_keys: 256,
        ..FilterPolicy::default()
    };
    let open = |fs: Arc<dyn FileSystem>, budget: u64| {
        builder(fs, budget)
            .table_target_bytes(512 << 10)
            .filter_policy(policy.clone())
            .block_cache_bytes(0)
            .background_threads(false)
            .open()
            .unwrap()
    };
    let db = open(Arc::new(fs.clone()), u64::MAX);
    for i in 0..KEYS {
        db.insert(key(i), value(i)).unwrap();
    }
    db.compact().unwrap();
    drop(db);

    let read = Arc::new(AtomicU64::new(0));
    let counted = Arc::clone(&read);
    let observe = Arc::new(move |len: usize| {
        counted.fetch_add(len as u64, Ordering::Relaxed);
    });
    let db = open(Arc::new(ObservedFs::new(fs.crash(), "sst", observe)), 0);
    for i in (0..KEYS).step_by(101) {
        let missing = format!("key{i:08}-missing").into_bytes();
        assert_eq!(db.get(&missing).unwrap(), None);
    }
    let stats = db.stats();
    let level = stats.levels.iter().find(|l| l.tables > 0).unwrap();
    assert_eq!(stats.levels.iter().filter(|l| l.tables > 0).count(), 1);
    let per_table_filter = level.filter_bytes / level.tables as u64;
    let per_probe = read.load(Ordering::Relaxed) / stats.filter_probes.max(1);
    // Only the filters' false positives read an index and a block.
    assert!(
        stats.filter_negatives > 0 && stats.data_blocks_read * 10 < stats.filter_probes,
        "{stats:?}"
    );
    assert!(
        per_probe < per_table_filter / 2,
        "{per_probe} bytes read per probe; a table's filter is {per_table_filter} bytes"
    );
}
