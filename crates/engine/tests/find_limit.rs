//! A search by value reads as its results are taken: `find(..).take(n)`
//! on a value held by 40% of the store reads a tiny share of its blocks,
//! by every method, and returns the first `n` keys in order. Reads are
//! counted at the file system, below the (disabled) block cache.

#![expect(
    clippy::unwrap_used,
    reason = "test helpers fail the test on any error, like the #[test] fns clippy already exempts"
)]

mod common;

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use common::ObservedFs;
use siftdb::fs::FaultInjectionFs;
use siftdb::{CompactionStyle, Db, Extractor, IndexDef, Method};

const RECORDS: u32 = 50_000;

/// Column 1 is "hot" for 40% of the records, and "r<i>" for the rest.
fn record(i: u32) -> Vec<u8> {
    let color = if i % 5 < 2 {
        "hot".to_string()
    } else {
        format!("r{i}")
    };
    format!("item{i},{color},pad").into_bytes()
}

/// A store of `RECORDS` records in several sorted runs, its reads counted
/// in `reads`; and about how many data blocks it has.
fn store(reads: &Arc<AtomicU64>) -> (Db, u64) {
    let fs = ObservedFs::counting_table_reads(FaultInjectionFs::new(), reads);
    let db = Db::builder(Path::new("/db"))
        .file_system(Arc::new(fs))
        .memtable_bytes(64 << 10)
        .table_target_bytes(64 << 10)
        .block_bytes(512)
        .block_cache_bytes(0)
        .compaction_style(CompactionStyle::Leveled {
            l0_trigger: 2,
            size_ratio: 4,
            l1_bytes: 256 << 10,
        })
        .value_index(IndexDef::new("color", Extractor::delimited(1, b',')))
        .background_threads(false)
        .open()
        .unwrap();
    // Shuffled, so every run spans the key space; never compacted down to
    // one run.
    for i in 0..RECORDS {
        let i = i.wrapping_mul(7919) % RECORDS;
        db.insert(key(i), record(i)).unwrap();
    }
    db.flush().unwrap();
    let runs: usize = db.stats().levels.iter().map(|l| l.runs).sum();
    // Sorted runs overlap: each is a source the search merges.
    assert!(runs >= 5, "only {runs} sorted runs");
    let blocks: u64 = db.stats().levels.iter().map(|l| l.bytes).sum::<u64>() / 512;
    assert!(blocks > 2_000, "only about {blocks} blocks");
    (db, blocks)
}

fn key(i: u32) -> Vec<u8> {
    format!("key{i:06}").into_bytes()
}

#[test]
fn taking_ten_of_a_common_value_reads_under_one_percent_of_the_blocks() {
    let reads = Arc::new(AtomicU64::new(0));
    let (db, blocks) = store(&reads);
    let hot: Vec<Vec<u8>> = (0..RECORDS)
        .filter(|i| i % 5 < 2)
        .take(10)
        .map(key)
        .collect();
    // The planner measures its costs once per index: not part of a search.
    let _ = db.find("color", "absent").unwrap().count();
    // Tables' indexes are read at their first use; with no block cache, a
    // scan reads each one once and no data block stays.
    let _ = db.range::<&[u8], _>(..).count();
    for method in [None, Some(Method::Scan), Some(Method::Flat)] {
        let before = reads.load(Ordering::Relaxed);
        let found = match method {
            Some(method) => db.find_with("color", "hot", method).unwrap(),
            None => db.find("color", "hot").unwrap(),
        };
        let keys: Vec<Vec<u8>> = found.take(10).map(|r| r.unwrap().0).collect();
        let read = reads.load(Ordering::Relaxed) - before;
        assert_eq!(keys, hot, "{method:?}");
        assert!(
            read * 100 <= blocks,
            "{method:?}: {read} reads for 10 results of about {blocks} blocks"
        );
    }
}

#[test]
fn pages_of_a_common_value_read_each_block_about_once() {
    let reads = Arc::new(AtomicU64::new(0));
    let (db, blocks) = store(&reads);
    let hot: Vec<Vec<u8>> = (0..RECORDS).filter(|i| i % 5 < 2).map(key).collect();
    let _ = db.find("color", "absent").unwrap().count();
    let before = reads.load(Ordering::Relaxed);
    let (mut from, mut paged) = (Vec::new(), Vec::new());
    loop {
        let page: Vec<Vec<u8>> = db
            .find_from("color", "hot", &from)
            .unwrap()
            .take(1000)
            .map(|r| r.unwrap().0)
            .collect();
        let Some(last) = page.last() else { break };
        from.clone_from(last);
        from.push(0);
        paged.extend(page);
    }
    let read = reads.load(Ordering::Relaxed) - before;
    assert_eq!(paged, hot);
    // 20 pages: each rereads at most the block it stopped in, per run.
    assert!(
        read <= blocks * 3 / 2,
        "{read} reads for about {blocks} blocks"
    );
}
