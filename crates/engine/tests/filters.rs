//! The filters do their job, proven with the counters: lookups of missing
//! keys inside the key range read (almost) no data blocks, and a lookup
//! hashes its key once however many filters it meets.

#![expect(
    clippy::unwrap_used,
    reason = "test helpers fail the test on any error, like the #[test] fns clippy already exempts"
)]

use std::path::Path;
use std::sync::Arc;

use siftdb::fs::FaultInjectionFs;
use siftdb::{CompactionStyle, Db, FilterPolicy};

const TABLES: u64 = 24;
const KEYS_PER_TABLE: u64 = 2_000;

/// `TABLES` level-0 runs, each spanning the whole key range (keys are
/// interleaved across tables), so every lookup meets every table.
fn overlapping_tables(policy: FilterPolicy) -> Db {
    let fs = FaultInjectionFs::new();
    let db = Db::builder(Path::new("/db"))
        .file_system(Arc::new(fs))
        .memtable_bytes(64 << 20)
        .compaction_style(CompactionStyle::Tiered {
            runs_per_level: 1000,
        })
        .l0_stall_runs(2000, 2001)
        .filter_policy(policy)
        .background_threads(false)
        .open()
        .unwrap();
    for table in 0..TABLES {
        for i in 0..KEYS_PER_TABLE {
            // Even numbers are present; table t holds those = 2t mod 2*TABLES.
            let n = 2 * (i * TABLES + table);
            db.insert(n.to_be_bytes(), b"value").unwrap();
        }
        db.flush().unwrap();
    }
    assert_eq!(db.stats().levels[0].tables as u64, TABLES);
    db
}

/// The `i`-th missing key: an odd number between the smallest and the
/// largest key of every table, so no key-range check can reject it and
/// only a filter can.
fn missing(i: u64) -> [u8; 8] {
    let inner = (KEYS_PER_TABLE - 2) * TABLES;
    (2 * (TABLES + i * 37 % inner) + 1).to_be_bytes()
}

#[test]
fn missing_keys_read_almost_no_blocks_and_hash_once() {
    let db = overlapping_tables(FilterPolicy::blocked_bloom(10.0));
    let before = db.stats();
    let lookups = 5_000u64;
    for i in 0..lookups {
        assert_eq!(db.get(missing(i)).unwrap(), None);
    }
    let after = db.stats();
    let gets = after.gets - before.gets;
    let probes = after.filter_probes - before.filter_probes;
    let blocks = after.data_blocks_read - before.data_blocks_read;
    let false_positives = after.filter_false_positives - before.filter_false_positives;
    assert_eq!(gets, lookups);
    assert_eq!(
        after.key_hashes - before.key_hashes,
        lookups,
        "one hash per lookup"
    );
    assert_eq!(probes, lookups * TABLES, "every table's filter is probed");
    // At 10 bits/key the blocked Bloom FPR is about 1%; a false positive
    // costs one block. Expected blocks = probes * p with p ~ 0.0097; the
    // bound is 5 standard deviations above p = 0.012.
    let p = 0.012;
    let bound = probes as f64 * p + 5.0 * (probes as f64 * p * (1.0 - p)).sqrt();
    assert!(
        (blocks as f64) < bound,
        "{blocks} blocks read for {lookups} missing keys ({probes} probes)"
    );
    assert_eq!(
        blocks, false_positives,
        "each false positive reads one block, nothing else does"
    );
}

/// Looks up every 97th present key (each must be found), then 5,000
/// missing ones; returns the filter probes and the data blocks they read.
fn probe_missing(db: &Db) -> (f64, f64) {
    for i in (0..TABLES * KEYS_PER_TABLE).step_by(97) {
        assert!(db.contains_key((2 * i).to_be_bytes()).unwrap(), "key {i}");
    }
    let before = db.stats();
    for i in 0..5_000u64 {
        assert_eq!(db.get(missing(i)).unwrap(), None);
    }
    let after = db.stats();
    let probes = (after.filter_probes - before.filter_probes) as f64;
    assert_eq!(probes, 5_000.0 * TABLES as f64);
    (
        probes,
        (after.data_blocks_read - before.data_blocks_read) as f64,
    )
}

/// Whether `blocks` false positives in `probes` are within 5 standard
/// deviations (plus one) above an FPR of `fpr`.
fn within_fpr(probes: f64, blocks: f64, fpr: f64) -> bool {
    blocks < probes * fpr + 5.0 * (probes * fpr * (1.0 - fpr)).sqrt() + 1.0
}

/// Binary Fuse tables: every present key found, missing keys rejected at
/// the fingerprint's FPR (`2^-8` at 12 bits per key, `2^-16` at 24), and
/// only the bits the fingerprints need are spent.
#[test]
fn binary_fuse_tables_reject_missing_keys_at_their_fingerprints_fpr() {
    for (bits_per_key, fpr) in [(12.0, 1.0 / 256.0), (24.0, 1.0 / 65_536.0)] {
        let db = overlapping_tables(FilterPolicy::binary_fuse(bits_per_key));
        let level = &db.stats().levels[0];
        assert_eq!(level.filter_kind, "binary_fuse", "{level:?}");
        // 2,000 keys a table take about 1.33 slots a key (math::binary_fuse_size_factor).
        assert!(
            level.filter_bits_per_key < bits_per_key - 0.5,
            "{bits_per_key}: {level:?}"
        );
        let (probes, blocks) = probe_missing(&db);
        assert!(
            within_fpr(probes, blocks, fpr),
            "{bits_per_key}: {blocks} blocks for {probes} probes"
        );
    }
}

/// Split-block Bloom tables: every present key found, and missing keys
/// rejected at the kind's formula, 1.06% at 10 bits per key (each table's
/// 2,000 keys fill 79 blocks, 10.1 bits a key; the bound takes 1.2%).
#[test]
fn split_block_tables_reject_missing_keys_at_their_formula() {
    let db = overlapping_tables(FilterPolicy::split_block_bloom(10.0));
    let level = &db.stats().levels[0];
    assert_eq!(level.filter_kind, "split_block_bloom", "{level:?}");
    let (probes, blocks) = probe_missing(&db);
    assert!(
        within_fpr(probes, blocks, 0.012),
        "{blocks} blocks for {probes} probes"
    );
}

#[test]
fn without_filters_every_table_is_read() {
    let db = overlapping_tables(FilterPolicy::blocked_bloom(0.0));
    let before = db.stats();
    for i in 0..200u64 {
        assert_eq!(db.get(missing(i)).unwrap(), None);
    }
    let after = db.stats();
    // The contrast that shows what the filters save.
    assert!(after.data_blocks_read - before.data_blocks_read >= 200 * TABLES);
}

#[test]
fn present_keys_are_found_through_the_filters() {
    let db = overlapping_tables(FilterPolicy::default());
    for i in (0..TABLES * KEYS_PER_TABLE).step_by(97) {
        assert_eq!(
            db.get((2 * i).to_be_bytes()).unwrap().as_deref(),
            Some(&b"value"[..])
        );
    }
    let stats = db.stats();
    assert_eq!(stats.key_hashes, stats.gets);
    let level = &stats.levels[0];
    assert!(level.filter_bits_per_key > 8.0, "{level:?}");
}

/// Keys written to the deep database: enough for four levels.
const DEEP_KEYS: u64 = 60_000;

/// The `i`-th key of the deep database, in a scattered order.
fn deep_key(i: u64) -> [u8; 8] {
    (i * 7_919 % 1_000_003).to_be_bytes()
}

/// A database with at least three levels under leveled compaction, grown
/// the way a live one is: compactions run after every flush, so each
/// level's tables were written under the shape the tree has then.
fn deep(policy: FilterPolicy) -> Db {
    let db = Db::builder(Path::new("/db"))
        .file_system(Arc::new(FaultInjectionFs::new()))
        .memtable_bytes(32 << 10)
        .table_target_bytes(64 << 10)
        .compaction_style(CompactionStyle::Leveled {
            l0_trigger: 2,
            size_ratio: 3,
            l1_bytes: 64 << 10,
        })
        .filter_policy(policy)
        .background_threads(false)
        .open()
        .unwrap();
    for i in 0..DEEP_KEYS {
        db.insert(deep_key(i), [7u8; 24]).unwrap();
        if i % 2_000 == 1_999 {
            db.flush().unwrap();
            db.wait_for_compactions().unwrap();
        }
    }
    db
}

#[test]
fn monkey_gives_deeper_levels_fewer_bits_and_ribbon_below_level_two() {
    let db = deep(FilterPolicy::default());
    let levels = db.stats().levels;
    let filled: Vec<_> = levels
        .iter()
        .enumerate()
        .filter(|(_, l)| l.tables > 0)
        .collect();
    assert!(filled.len() >= 3, "{levels:?}");
    let (first, last) = (filled[0], filled[filled.len() - 1]);
    assert!(
        first.1.filter_bits_per_key > last.1.filter_bits_per_key + 1.0,
        "shallow {first:?} vs deep {last:?}"
    );
    for (level, stats) in &filled {
        let ribbon = stats.filter_kind.contains("ribbon");
        assert_eq!(ribbon, *level >= 2, "level {level}: {stats:?}");
    }
    // Every key is still found through the smaller deep filters.
    for i in (0..30_000u64).step_by(101) {
        assert!(
            db.contains_key((i * 7_919 % 1_000_003).to_be_bytes())
                .unwrap()
        );
    }
}

#[test]
fn optimize_filters_for_hits_drops_only_the_last_level_filter() {
    let policy = FilterPolicy {
        optimize_filters_for_hits: true,
        ..FilterPolicy::blocked_bloom(10.0)
    };
    let db = deep(policy);
    let levels = db.stats().levels;
    let last = levels.iter().rposition(|l| l.tables > 0).unwrap();
    // What is written into the deepest level has no filter. Tables written
    // while a shallower level was the deepest keep theirs dropped until
    // compaction rewrites them, so only the last level is all filterless.
    assert_eq!(levels[last].filter_bytes, 0, "{levels:?}");
    let with_filters = deep(FilterPolicy::blocked_bloom(10.0)).stats().levels;
    let total = |levels: &[siftdb::LevelStats]| levels.iter().map(|l| l.filter_bytes).sum::<u64>();
    assert!(total(&levels) * 2 < total(&with_filters), "{levels:?}");
    for i in (0..30_000u64).step_by(97) {
        assert!(
            db.contains_key((i * 7_919 % 1_000_003).to_be_bytes())
                .unwrap()
        );
    }
}
