//! Search by value against a `BTreeMap` model: random inserts, updates,
//! deletes, flushes, compactions and reopens, with every search method,
//! snapshots, an index added to a loaded database (backfill), and a
//! damaged leaf.

#![expect(
    clippy::unwrap_used,
    reason = "test helpers fail the test on any error, like the #[test] fns clippy already exempts"
)]

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use proptest::prelude::*;
use siftdb::fs::FaultInjectionFs;
use siftdb::{CompactionStyle, Db, Extractor, IndexDef, Method};

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

const METHODS: [Method; 4] = [
    Method::Scan,
    Method::BloomScan,
    Method::Hierarchy,
    Method::Flat,
];

/// How the test index sizes its leaves.
#[derive(Clone, Copy, Debug)]
enum Leaves {
    /// Per table, at the default 1% (the default).
    PerTable,
    /// One fixed shape for every leaf.
    Fixed,
}

fn open(fs: &FaultInjectionFs, indexed: bool) -> Db {
    open_with(fs, indexed.then_some(Leaves::PerTable))
}

fn open_with(fs: &FaultInjectionFs, leaves: Option<Leaves>) -> Db {
    let mut builder = Db::builder(Path::new("/db"))
        .file_system(Arc::new(fs.clone()))
        .memtable_bytes(4096)
        .table_target_bytes(4096)
        .block_bytes(512)
        .compaction_style(CompactionStyle::Leveled {
            l0_trigger: 2,
            size_ratio: 3,
            l1_bytes: 16 << 10,
        })
        .value_index_order(3)
        .background_threads(false);
    let color = IndexDef::new("color", Extractor::delimited(1, b','));
    match leaves {
        None => {}
        Some(Leaves::PerTable) => builder = builder.value_index(color),
        Some(Leaves::Fixed) => builder = builder.value_index(color.leaf_bits(2048)),
    }
    builder.open().unwrap()
}

/// Value `i % colors` in column 1 of a small CSV record.
fn record(i: u32, colors: u32) -> Vec<u8> {
    format!("item{i},c{},{}", i % colors, "x".repeat((i % 7) as usize)).into_bytes()
}

/// What the model says `find("color", c)` returns.
fn expected(model: &Model, color: &str) -> Vec<Vec<u8>> {
    model
        .iter()
        .filter(|(_, v)| v.split(|&b| b == b',').nth(1) == Some(color.as_bytes()))
        .map(|(k, _)| k.clone())
        .collect()
}

fn check_all(db: &Db, model: &Model, colors: u32) {
    for c in 0..colors + 1 {
        let color = format!("c{c}");
        let want = expected(model, &color);
        for method in METHODS {
            let mut found = db.find_with("color", &color, method).unwrap();
            let got: Vec<Vec<u8>> = found.by_ref().map(|r| r.unwrap().0).collect();
            let stats = *found.stats();
            assert_eq!(got, want, "{color} by {method:?}: {stats:?}");
            assert_eq!(stats.results as usize, want.len());
            assert!(stats.tables_matched <= stats.tables_scanned);
            assert!(stats.blocks_matched <= stats.blocks_read, "{stats:?}");
            if method != Method::Scan {
                assert!(stats.blocks_read <= stats.blocks_positive, "{stats:?}");
            }
        }
        let planned: Vec<Vec<u8>> = db
            .find_keys("color", &color)
            .unwrap()
            .map(Result::unwrap)
            .collect();
        assert_eq!(planned, want);
        // From a key in the middle (one past a result's key, so that an
        // exact match and a key between results are both tried).
        for from in want.get(want.len() / 2).into_iter().flat_map(|key| {
            let mut after = key.clone();
            after.push(0);
            [key.clone(), after]
        }) {
            let tail: Vec<Vec<u8>> = db
                .find_from("color", &color, &from)
                .unwrap()
                .map(|r| r.unwrap().0)
                .collect();
            let expected: Vec<Vec<u8>> = want.iter().filter(|k| **k >= from).cloned().collect();
            assert_eq!(tail, expected, "{color} from {from:?}");
        }
    }
}

#[derive(Debug, Clone)]
enum Op {
    Put(u8, u32),
    Delete(u8),
    Flush,
    Compact,
    Reopen,
    Check,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        20 => (0u8..60, 0u32..1000).prop_map(|(k, v)| Op::Put(k, v)),
        5 => (0u8..60).prop_map(Op::Delete),
        2 => Just(Op::Flush),
        1 => Just(Op::Compact),
        1 => Just(Op::Reopen),
        2 => Just(Op::Check),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn every_method_matches_the_model(
        ops in proptest::collection::vec(op(), 1..200),
        fixed in any::<bool>(),
        // Few colors: memtables are read whole; many: through postings.
        colors in prop_oneof![Just(2u32), Just(5), Just(40)],
    ) {
        let leaves = Some(if fixed { Leaves::Fixed } else { Leaves::PerTable });
        let fs = FaultInjectionFs::new();
        let mut db = open_with(&fs, leaves);
        let mut model = Model::new();
        for op in ops {
            match op {
                Op::Put(k, v) => {
                    let key = format!("key{k:02}").into_bytes();
                    db.insert(&key, record(v, colors)).unwrap();
                    model.insert(key, record(v, colors));
                }
                Op::Delete(k) => {
                    let key = format!("key{k:02}").into_bytes();
                    db.remove(&key).unwrap();
                    model.remove(&key);
                }
                Op::Flush => db.flush().unwrap(),
                Op::Compact => db.compact().unwrap(),
                Op::Reopen => {
                    drop(db);
                    db = open_with(&fs, leaves);
                }
                Op::Check => check_all(&db, &model, colors),
            }
        }
        check_all(&db, &model, colors);
    }
}

#[test]
fn a_snapshot_finds_what_it_saw() {
    let fs = FaultInjectionFs::new();
    let db = open(&fs, true);
    db.insert(b"a", b"1,red").unwrap();
    db.insert(b"b", b"2,red").unwrap();
    db.flush().unwrap();
    let snapshot = db.snapshot();
    db.insert(b"a", b"1,blue").unwrap();
    db.remove(b"b").unwrap();
    db.insert(b"c", b"3,red").unwrap();
    db.compact().unwrap();
    let then: Vec<Vec<u8>> = snapshot
        .find_keys("color", "red")
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(then, [b"a".to_vec(), b"b".to_vec()]);
    let now: Vec<Vec<u8>> = db
        .find_keys("color", "red")
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(now, [b"c".to_vec()]);
    assert!(db.find("no such index", "red").is_err());
}

#[test]
fn absent_values_scan_no_table_and_unique_values_few() {
    let fs = FaultInjectionFs::new();
    let db = open(&fs, true);
    for i in 0..3_000u32 {
        db.insert(format!("key{i:05}"), record(i, 3_000)).unwrap();
    }
    db.compact().unwrap();
    let tables: usize = db.stats().levels.iter().map(|l| l.tables).sum();
    assert!(tables >= 20, "{tables} tables");
    for method in [Method::BloomScan, Method::Hierarchy, Method::Flat] {
        let mut scanned = 0;
        for c in 0..100 {
            let mut found = db.find_with("color", format!("absent{c}"), method).unwrap();
            assert_eq!(found.by_ref().count(), 0);
            scanned += found.stats().tables_scanned;
        }
        // Each (query, table) pair is a leaf's false positive with the
        // leaf's FPR, about 1% at this fill: 2% of the pairs bounds it.
        let pairs = 100 * tables as u64;
        assert!(
            scanned * 50 <= pairs,
            "{method:?}: {scanned} of {pairs} (query, table) pairs scanned"
        );
        let mut found = db.find_with("color", "c1234", method).unwrap();
        assert_eq!(found.by_ref().count(), 1);
        assert_eq!(found.stats().tables_matched, 1);
        assert!(found.stats().tables_scanned <= 3, "{:?}", found.stats());
        // Within its table, the block filters leave the one block that
        // holds it and rarely another.
        assert_eq!(found.stats().blocks_matched, 1);
        assert!(found.stats().blocks_read <= 3, "{:?}", found.stats());
    }
}

#[test]
fn validation_reads_newer_tables_through_the_counted_point_lookup() {
    let fs = FaultInjectionFs::new();
    let db = Db::builder(Path::new("/db"))
        .file_system(Arc::new(fs.clone()))
        .compaction_style(CompactionStyle::Leveled {
            l0_trigger: 8,
            size_ratio: 10,
            l1_bytes: 1 << 20,
        })
        .background_threads(false)
        .value_index(IndexDef::new("color", Extractor::delimited(1, b',')))
        .open()
        .unwrap();
    // Two level-0 tables over one key range: the even keys, then the odd.
    // Every key of color c0 is even, so every hit is in the older table,
    // and the newer one, whose range holds the key, must be asked.
    for parity in [0, 1] {
        for i in (parity..400u32).step_by(2) {
            db.insert(format!("key{i:03}"), record(i, 4)).unwrap();
        }
        db.flush().unwrap();
    }
    assert_eq!(db.stats().levels[0].tables, 2);
    let before = db.stats();
    let mut found = db.find_with("color", "c0", Method::Flat).unwrap();
    assert_eq!(found.by_ref().count(), 100);
    assert_eq!(found.stats().entries_validated, 100, "{:?}", found.stats());
    let after = db.stats();
    // One key filter probe of the newer table per hit whose key lies in
    // its range (all but key000, below its smallest key key001), counted
    // as a get's probe is; a validation is not a get.
    let probes = after.filter_probes - before.filter_probes;
    assert!(probes >= 99, "{probes} probes counted");
    assert_eq!(after.gets, before.gets);
}

#[test]
fn an_index_added_later_answers_completely_before_and_after_backfill() {
    let fs = FaultInjectionFs::new();
    let mut model = Model::new();
    {
        let db = open(&fs, false);
        for i in 0..800u32 {
            let key = format!("key{i:04}").into_bytes();
            db.insert(&key, record(i, 7)).unwrap();
            model.insert(key, record(i, 7));
        }
        db.compact().unwrap();
        db.add_index(IndexDef::new("color", Extractor::delimited(1, b',')))
            .unwrap();
        // Not backfilled yet: the tables have no leaf and are scanned.
        let found = db.find_with("color", "c3", Method::Flat).unwrap();
        assert!(found.stats().tables_unindexed > 0, "{:?}", found.stats());
        check_all(&db, &model, 7);
        db.wait_for_backfill().unwrap();
        let found = db.find_with("color", "absent", Method::Flat).unwrap();
        assert_eq!(found.stats().tables_unindexed, 0, "{:?}", found.stats());
        check_all(&db, &model, 7);
    }
    let db = open(&fs, true);
    check_all(&db, &model, 7);
}

/// A compacted database of 400 records of 4 colors, and its model.
fn four_colors(fs: &FaultInjectionFs) -> Model {
    let mut model = Model::new();
    let db = open(fs, true);
    for i in 0..400u32 {
        let key = format!("key{i:04}").into_bytes();
        db.insert(&key, record(i, 4)).unwrap();
        model.insert(key, record(i, 4));
    }
    db.compact().unwrap();
    model
}

/// Flips a byte in the middle of the block `pick` names (offset, size) in
/// every table, checks that `verify` reports each, and returns how many
/// tables were damaged.
fn damage_every_table(
    fs: &FaultInjectionFs,
    pick: impl Fn(&siftdb::ValueFilterSummary) -> Option<(u64, u64)>,
) -> usize {
    let mut damaged = 0;
    for name in siftdb::fs::FileSystem::list(fs, Path::new("/db")).unwrap() {
        if !name.ends_with(".sst") {
            continue;
        }
        let path = Path::new("/db").join(&name);
        let summary = siftdb::TableFile::open_in(fs, &path).unwrap().properties();
        let Some((offset, size)) = summary.value_filters.first().and_then(&pick) else {
            continue;
        };
        let mut bytes = fs.contents(&path).unwrap();
        bytes[(offset + size / 2) as usize] ^= 0x41;
        fs.set_contents(&path, bytes).unwrap();
        let reopened = siftdb::TableFile::open_in(fs, &path).unwrap();
        assert!(
            reopened.verify().is_err(),
            "verify reports the damage in {name}"
        );
        damaged += 1;
    }
    damaged
}

#[test]
fn a_damaged_leaf_makes_its_table_scanned_not_missed() {
    let fs = FaultInjectionFs::new();
    let model = four_colors(&fs);
    assert!(damage_every_table(&fs, |v| Some((v.offset, v.size))) > 0);
    let db = open(&fs, true);
    for method in METHODS {
        let found = db.find_with("color", "c2", method).unwrap();
        assert!(found.stats().tables_unindexed > 0 || method == Method::Scan);
    }
    check_all(&db, &model, 4);
}

#[test]
fn damaged_block_filters_make_every_block_read_not_missed() {
    let fs = FaultInjectionFs::new();
    let model = four_colors(&fs);
    assert!(damage_every_table(&fs, |v| v.block_filters) > 0);
    let db = open(&fs, true);
    let summaries = siftdb::fs::FileSystem::list(&fs, Path::new("/db")).unwrap();
    for name in summaries.iter().filter(|n| n.ends_with(".sst")) {
        let file = siftdb::TableFile::open_in(&fs, &Path::new("/db").join(name)).unwrap();
        assert!(!file.properties().value_filters[0].block_filters_readable);
    }
    let mut found = db.find_with("color", "c2", Method::Flat).unwrap();
    found.by_ref().for_each(drop);
    // Every block of a positive table is read; nothing is missed.
    assert_eq!(found.stats().blocks_read, found.stats().blocks_positive);
    assert_eq!(found.stats().block_filters_probed, 0);
    check_all(&db, &model, 4);
}
