//! The planner of search by value on the shapes real data takes: small
//! records of high cardinality, values clustered in key order, values
//! spread thinly over every table, and a skewed handful of values. On each
//! it probes before it reads: an absent value reads no block (up to the
//! filters' false positives) and is never answered by a scan, a selective
//! value reads few blocks per table that holds it, and every answer equals
//! the full scan's.

#![expect(
    clippy::unwrap_used,
    reason = "test helpers fail the test on any error, like the #[test] fns clippy already exempts"
)]

use std::path::Path;
use std::sync::Arc;

use siftdb::fs::FaultInjectionFs;
use siftdb::{CompactionStyle, Db, Extractor, FindStats, IndexDef, Method};

/// Records per shape.
const RECORDS: u64 = 6_000;

/// A shape: the indexed value of record `i`.
type Shape = fn(u64) -> String;

/// ~90% distinct codes: every tenth record repeats its neighbour's.
fn small(i: u64) -> String {
    format!("x{}", if i % 10 == 9 { i - 1 } else { i })
}

/// 60 values, each on 100 consecutive keys.
fn clustered(i: u64) -> String {
    format!("c{}", i / 100)
}

/// 60 values, each on every 60th key: in every table.
fn spread(i: u64) -> String {
    format!("t{}", i % 60)
}

/// Three values at about 6:3:2.
fn skewed(i: u64) -> String {
    match i % 11 {
        0..=5 => "a".into(),
        6..=8 => "b".into(),
        _ => "c".into(),
    }
}

const SHAPES: [(&str, Shape); 4] = [
    ("small", small),
    ("clustered", clustered),
    ("spread", spread),
    ("skewed", skewed),
];

/// Key of record `i`, in key order.
fn key(i: u64) -> String {
    format!("k{i:06}")
}

/// A database of one shape: records written in a scrambled order, as a
/// bulk load of unsorted data would, then flushed and compacted into
/// small tables of several blocks.
fn load(shape: Shape) -> Db {
    let fs = FaultInjectionFs::new();
    let db = Db::builder(Path::new("/db"))
        .file_system(Arc::new(fs))
        .memtable_bytes(64 << 10)
        .table_target_bytes(20 << 10)
        .compaction_style(CompactionStyle::Leveled {
            l0_trigger: 2,
            size_ratio: 4,
            l1_bytes: 64 << 10,
        })
        .background_threads(false)
        .value_index(IndexDef::new("v", Extractor::delimited(1, b',')))
        .open()
        .unwrap();
    // 2,654,435,761 is odd, so it permutes 0..RECORDS modulo a power of
    // two above it; indexes past RECORDS are skipped.
    for j in 0..8_192u64 {
        let i = j.wrapping_mul(2_654_435_761) % 8_192;
        if i < RECORDS {
            db.insert(key(i), format!("{i},{},pad", shape(i))).unwrap();
        }
    }
    db.flush().unwrap();
    db.wait_for_compactions().unwrap();
    db
}

fn keys(db: &Db, value: &str, method: Option<Method>) -> (Vec<Vec<u8>>, FindStats) {
    let mut found = match method {
        Some(method) => db.find_with("v", value, method).unwrap(),
        None => db.find("v", value).unwrap(),
    };
    let keys = found.by_ref().map(|r| r.unwrap().0).collect();
    (keys, *found.stats())
}

#[test]
fn absent_values_are_probed_never_scanned() {
    for (name, shape) in SHAPES {
        let db = load(shape);
        let tables: usize = db.stats().levels.iter().map(|l| l.tables).sum();
        assert!(tables >= 8, "{name}: {tables} tables");
        let mut blocks = 0;
        for q in 0..50 {
            let (found, stats) = keys(&db, &format!("absent{q}"), None);
            assert!(found.is_empty());
            assert!(stats.planned);
            assert_ne!(stats.method, Method::Scan, "{name}: {stats:?}");
            blocks += stats.blocks_read;
        }
        // A block is read only if a leaf and then its block filter both
        // say "maybe": about 1% x 1% per table. 50 queries over fewer than
        // 100 tables expect far below one read; 3 bounds it.
        assert!(
            blocks <= 3,
            "{name}: {blocks} blocks read for 50 absent values"
        );
    }
}

#[test]
fn the_planner_answers_as_the_scan_and_reads_few_blocks_for_selective_values() {
    for (name, shape) in SHAPES {
        let db = load(shape);
        for i in (0..RECORDS).step_by(397) {
            let value = shape(i);
            let (want, _) = keys(&db, &value, Some(Method::Scan));
            let (got, stats) = keys(&db, &value, None);
            assert_eq!(got, want, "{name} {value}: {stats:?}");
            assert!(want.contains(&key(i).into_bytes()));
            if want.len() <= 2 {
                // One or two records: their blocks, and rarely another.
                assert_ne!(stats.method, Method::Scan, "{name} {value}: {stats:?}");
                assert!(stats.blocks_read <= 3, "{name} {value}: {stats:?}");
            }
            if stats.method != Method::Scan {
                // Block filters keep a positive table from being read
                // whole: at most its matching blocks plus one in vain,
                // on average, per table read.
                assert!(
                    stats.blocks_read <= stats.blocks_matched + stats.tables_scanned,
                    "{name} {value}: {stats:?}"
                );
            }
        }
    }
}

#[test]
fn a_value_in_most_records_is_answered_correctly_either_way() {
    let db = load(skewed);
    for value in ["a", "b", "c"] {
        let (want, _) = keys(&db, value, Some(Method::Scan));
        let (got, stats) = keys(&db, value, None);
        assert_eq!(got, want, "{value}: {stats:?}");
        assert!(stats.estimated_scan_ns > 0 && stats.estimated_filtered_ns > 0);
        for method in [Method::Flat, Method::Hierarchy, Method::BloomScan] {
            assert_eq!(
                keys(&db, value, Some(method)).0,
                want,
                "{value} by {method:?}"
            );
        }
    }
}

#[test]
fn index_statistics_measure_the_leaves() {
    let db = load(small);
    let stats = db.stats();
    let [index] = stats.indexes.as_slice() else {
        panic!("one index: {:?}", stats.indexes);
    };
    assert_eq!(index.name, "v");
    assert_eq!(index.tables_unindexed, 0);
    assert_eq!(index.values, RECORDS);
    // 90% distinct; a value on two neighbouring keys may sit in two tables.
    assert!(
        (5_400..=5_500).contains(&index.distinct_values),
        "{index:?}"
    );
    assert!(index.leaf_bits_per_value <= 12.0, "{index:?}");
    assert!(index.leaf_bits_per_value >= 9.5, "{index:?}");
    // Each leaf probed with 1,024 absent values: the rate over all leaves
    // is 1% or less, within 4 binomial standard deviations.
    let sigma = (0.01 * 0.99 / index.fpr_probes as f64).sqrt();
    assert!(index.fpr_probes >= 8 * 1_024, "{index:?}");
    assert!(index.measured_leaf_fpr <= 0.01 + 4.0 * sigma, "{index:?}");
    assert!(index.block_filter_bytes > 0 && index.leaf_bytes > 0);
    assert!(index.leaf_classes >= 1 && index.leaf_classes <= index.tables_indexed);
}
