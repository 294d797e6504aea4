//! Plans that read the newest runs whole, at every split, against a model:
//! the planner picks a split only when it is cheapest, so the splits it
//! seldom picks are forced here.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use proptest::prelude::*;

use crate::fs::FaultInjectionFs;
use crate::{CompactionStyle, Db, Extractor, IndexDef};

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

fn open(fs: &FaultInjectionFs) -> Db {
    Db::builder(Path::new("/db"))
        .file_system(Arc::new(fs.clone()))
        .memtable_bytes(4096)
        .table_target_bytes(4096)
        .block_bytes(256)
        .compaction_style(CompactionStyle::Leveled {
            l0_trigger: 4,
            size_ratio: 3,
            l1_bytes: 8 << 10,
        })
        .background_threads(false)
        .value_index(IndexDef::new("color", Extractor::delimited(1, b',')))
        .open()
        .unwrap()
}

fn record(v: u32, colors: u32) -> Vec<u8> {
    format!("item{v},c{},{}", v % colors, "x".repeat((v % 5) as usize)).into_bytes()
}

fn runs(db: &Db) -> usize {
    let current = db.inner.current();
    current.version.levels.iter().map(|l| l.runs.len()).sum()
}

/// Every split, from the memtables alone to every run, answers as the
/// model, with the runs read whole counted.
fn check(db: &Db, model: &Model, colors: u32) {
    let total = runs(db);
    for c in 0..=colors {
        let color = format!("c{c}");
        let want: Vec<&Vec<u8>> = model
            .iter()
            .filter(|(_, v)| v.split(|&b| b == b',').nth(1) == Some(color.as_bytes()))
            .map(|(k, _)| k)
            .collect();
        for split in 0..=total {
            let mut found = db
                .inner
                .find_reading_whole("color", color.as_bytes(), split)
                .unwrap();
            let got: Vec<Vec<u8>> = found.by_ref().map(|r| r.unwrap().0).collect();
            let stats = *found.stats();
            assert_eq!(
                got.iter().collect::<Vec<_>>(),
                want,
                "{color}, {split} of {total} runs whole"
            );
            assert!(stats.read_whole);
            assert_eq!(stats.runs_read_whole, split as u64);
            assert_eq!(stats.results as usize, want.len());
        }
    }
}

#[derive(Debug, Clone)]
enum Op {
    Put(u8, u32),
    Delete(u8),
    Flush,
    Compact,
    Check,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        20 => (0u8..50, 0u32..1000).prop_map(|(k, v)| Op::Put(k, v)),
        5 => (0u8..50).prop_map(Op::Delete),
        3 => Just(Op::Flush),
        1 => Just(Op::Compact),
        2 => Just(Op::Check),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn every_split_matches_the_model(
        ops in proptest::collection::vec(op(), 1..200),
        colors in prop_oneof![Just(2u32), Just(7)],
    ) {
        let fs = FaultInjectionFs::new();
        let db = open(&fs);
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
                Op::Check => check(&db, &model, colors),
            }
        }
        check(&db, &model, colors);
    }
}

#[test]
fn a_newer_version_read_whole_hides_an_older_hit_without_a_lookup() {
    let fs = FaultInjectionFs::new();
    let db = open(&fs);
    db.insert(b"a", b"1,red").unwrap();
    db.insert(b"b", b"2,red").unwrap();
    db.flush().unwrap();
    db.insert(b"a", b"1,blue").unwrap();
    db.remove(b"b").unwrap();
    db.flush().unwrap();
    db.insert(b"c", b"3,red").unwrap();
    assert_eq!(runs(&db), 2);
    // The newer run and the memtable read whole, the older one by blocks:
    // its two hits are hidden by the versions met in the merged pass.
    let mut found = db.inner.find_reading_whole("color", b"red", 1).unwrap();
    let keys: Vec<Vec<u8>> = found.by_ref().map(|r| r.unwrap().0).collect();
    assert_eq!(keys, [b"c".to_vec()]);
    let stats = *found.stats();
    assert_eq!(stats.entries_validated, 0, "{stats:?}");
    assert_eq!(stats.runs_read_whole, 1);
}

#[test]
fn an_empty_key_in_a_run_read_by_blocks_is_not_taken_for_a_decided_one() {
    let fs = FaultInjectionFs::new();
    let db = open(&fs);
    db.insert(b"", b"0,red").unwrap();
    db.flush().unwrap();
    db.insert(b"b", b"1,blue").unwrap();
    db.flush().unwrap();
    // The pass over the newer run and the memtables has decided no key
    // when the older run's hit under the empty key comes out.
    let found = db.inner.find_reading_whole("color", b"red", 1).unwrap();
    let keys: Vec<Vec<u8>> = found.map(|r| r.unwrap().0).collect();
    assert_eq!(keys, [Vec::<u8>::new()]);
}

/// A search plans to read a memtable's postings; an extractor that then
/// panics on another write gives the postings up. The search once read
/// the missing postings as "no keys" and lost every match of the memtable.
#[test]
fn postings_given_up_after_planning_are_replaced_by_reading_the_memtable() {
    let extractor = Extractor::custom("color-or-panic", |value, out| {
        assert!(value != b"boom", "the extractor refuses this value");
        out(value);
    });
    let db = Db::builder(Path::new("/db"))
        .file_system(Arc::new(FaultInjectionFs::new()))
        .background_threads(false)
        .value_index(IndexDef::new("color", extractor))
        .open()
        .unwrap();
    // One key in five is red: few enough for its postings to be read.
    for i in 0..500u32 {
        let color: &[u8] = if i % 5 == 0 { b"red" } else { b"blue" };
        db.insert(format!("k{i:03}").as_bytes(), color).unwrap();
    }
    let inner = &db.inner;
    let current = inner.current();
    let index = inner.index_named("color").unwrap();
    let hash = sift_filter::KeyHash::of(b"red");
    let seq = inner.visible_seq();
    let query = super::read::Query::new(&current, index, b"red", hash, seq, b"");
    assert!(query.posted[0].is_some(), "the plan does not read postings");
    db.insert(b"z", b"boom").unwrap();
    let mut stats = super::FindStats::default();
    let hits = super::read::memtables(&current, &query, &mut stats).unwrap();
    assert_eq!(hits[0].len(), 100, "matches of the memtable were lost");
    assert_eq!(stats.memtable_entries_scanned, 501);
}
