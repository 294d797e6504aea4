//! Model test: random operation sequences against a `BTreeMap`, with
//! snapshots, flushes, compactions, reopen and simulated power cuts.

#![expect(
    clippy::unwrap_used,
    reason = "test helpers fail the test on any error, like the #[test] fns clippy already exempts"
)]

use std::collections::BTreeMap;
use std::ops::Bound;
use std::path::Path;
use std::sync::Arc;

use proptest::prelude::*;
use siftdb::fs::FaultInjectionFs;
use siftdb::{CompactionStyle, Db, FilterPolicy, Snapshot, WriteBatch};

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

#[derive(Debug, Clone)]
enum Op {
    Insert(Vec<u8>, Vec<u8>),
    Remove(Vec<u8>),
    Batch(Vec<(Vec<u8>, Option<Vec<u8>>)>),
    Get(Vec<u8>),
    MultiGet(Vec<Vec<u8>>),
    Range(Bound<Vec<u8>>, Bound<Vec<u8>>, bool),
    Prefix(Vec<u8>, bool),
    TakeSnapshot,
    ReadSnapshot(usize, Vec<u8>, bool),
    DropSnapshot(usize),
    Flush,
    Compact,
    Reopen,
    PowerCut,
}

/// Keys from a small alphabet so that versions pile up and shadow each
/// other across memtables and tables.
fn key() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        8 => (0u8..40).prop_map(|i| format!("k{i:02}").into_bytes()),
        1 => proptest::collection::vec(any::<u8>(), 0..6),
        1 => Just(vec![0xff, 0xff]),
    ]
}

fn value() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        6 => proptest::collection::vec(any::<u8>(), 0..40),
        1 => proptest::collection::vec(any::<u8>(), 500..1500),
    ]
}

fn bound() -> impl Strategy<Value = Bound<Vec<u8>>> {
    prop_oneof![
        key().prop_map(Bound::Included),
        key().prop_map(Bound::Excluded),
        Just(Bound::Unbounded),
    ]
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        30 => (key(), value()).prop_map(|(k, v)| Op::Insert(k, v)),
        8 => key().prop_map(Op::Remove),
        5 => proptest::collection::vec((key(), proptest::option::of(value())), 0..8).prop_map(Op::Batch),
        10 => key().prop_map(Op::Get),
        4 => proptest::collection::vec(key(), 0..40).prop_map(Op::MultiGet),
        4 => (bound(), bound(), any::<bool>()).prop_map(|(lo, hi, rev)| Op::Range(lo, hi, rev)),
        2 => (proptest::collection::vec(any::<u8>(), 0..2), any::<bool>()).prop_map(|(p, rev)| Op::Prefix(p, rev)),
        2 => Just(Op::TakeSnapshot),
        4 => (any::<usize>(), key(), any::<bool>()).prop_map(|(i, k, scan)| Op::ReadSnapshot(i, k, scan)),
        1 => any::<usize>().prop_map(Op::DropSnapshot),
        3 => Just(Op::Flush),
        1 => Just(Op::Compact),
        1 => Just(Op::Reopen),
        1 => Just(Op::PowerCut),
    ]
}

fn open(fs: &FaultInjectionFs, style: &CompactionStyle, background: bool) -> Db {
    Db::builder(Path::new("/db"))
        .file_system(Arc::new(fs.clone()))
        // Small sizes so that a few hundred operations make many tables.
        .memtable_bytes(4096)
        .table_target_bytes(4096)
        .block_bytes(256)
        .compaction_style(style.clone())
        .filter_policy(FilterPolicy::default())
        .sync_writes(true)
        .background_threads(background)
        .open()
        .unwrap()
}

fn in_range(key: &[u8], lo: &Bound<Vec<u8>>, hi: &Bound<Vec<u8>>) -> bool {
    let above = match lo {
        Bound::Included(b) => key >= b.as_slice(),
        Bound::Excluded(b) => key > b.as_slice(),
        Bound::Unbounded => true,
    };
    let below = match hi {
        Bound::Included(b) => key <= b.as_slice(),
        Bound::Excluded(b) => key < b.as_slice(),
        Bound::Unbounded => true,
    };
    above && below
}

fn expected_range(
    model: &Model,
    lo: &Bound<Vec<u8>>,
    hi: &Bound<Vec<u8>>,
    rev: bool,
) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut out: Vec<_> = model
        .iter()
        .filter(|(k, _)| in_range(k, lo, hi))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    if rev {
        out.reverse();
    }
    out
}

fn collect(
    iter: impl DoubleEndedIterator<Item = siftdb::Result<(Vec<u8>, Vec<u8>)>>,
    rev: bool,
) -> Vec<(Vec<u8>, Vec<u8>)> {
    if rev {
        iter.rev().map(Result::unwrap).collect()
    } else {
        iter.map(Result::unwrap).collect()
    }
}

fn run(ops: Vec<Op>, style: CompactionStyle, background: bool) {
    let mut fs = FaultInjectionFs::new();
    let mut db = open(&fs, &style, background);
    let mut model = Model::new();
    let mut snapshots: Vec<(Snapshot, Model)> = Vec::new();
    for op in ops {
        match op {
            Op::Insert(k, v) => {
                db.insert(&k, &v).unwrap();
                model.insert(k, v);
            }
            Op::Remove(k) => {
                db.remove(&k).unwrap();
                model.remove(&k);
            }
            Op::Batch(ops) => {
                let mut batch = WriteBatch::new();
                for (k, v) in ops {
                    match v {
                        Some(v) => {
                            batch.insert(&k, &v);
                            model.insert(k, v);
                        }
                        None => {
                            batch.remove(&k);
                            model.remove(&k);
                        }
                    }
                }
                db.write(&batch).unwrap();
            }
            Op::Get(k) => {
                assert_eq!(db.get(&k).unwrap(), model.get(&k).cloned(), "get {k:?}");
                assert_eq!(db.contains_key(&k).unwrap(), model.contains_key(&k));
            }
            Op::MultiGet(keys) => {
                let expected: Vec<_> = keys.iter().map(|k| model.get(k).cloned()).collect();
                assert_eq!(db.multi_get(&keys).unwrap(), expected, "multi_get {keys:?}");
            }
            Op::Range(lo, hi, rev) => {
                let got = collect(db.range::<Vec<u8>, _>((lo.clone(), hi.clone())), rev);
                assert_eq!(
                    got,
                    expected_range(&model, &lo, &hi, rev),
                    "range {lo:?}..{hi:?} rev={rev}"
                );
            }
            Op::Prefix(p, rev) => {
                let got = collect(db.prefix(&p), rev);
                let mut want: Vec<_> = model
                    .iter()
                    .filter(|(k, _)| k.starts_with(&p))
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect();
                if rev {
                    want.reverse();
                }
                assert_eq!(got, want, "prefix {p:?}");
            }
            Op::TakeSnapshot => snapshots.push((db.snapshot(), model.clone())),
            Op::ReadSnapshot(i, k, scan) => {
                if snapshots.is_empty() {
                    continue;
                }
                let (snapshot, seen) = &snapshots[i % snapshots.len()];
                assert_eq!(
                    snapshot.get(&k).unwrap(),
                    seen.get(&k).cloned(),
                    "snapshot get {k:?}"
                );
                if scan {
                    let got = collect(snapshot.range::<Vec<u8>, _>(..), true);
                    assert_eq!(
                        got,
                        expected_range(seen, &Bound::Unbounded, &Bound::Unbounded, true)
                    );
                }
            }
            Op::DropSnapshot(i) => {
                if !snapshots.is_empty() {
                    let at = i % snapshots.len();
                    snapshots.remove(at);
                }
            }
            Op::Flush => db.flush().unwrap(),
            Op::Compact => db.compact().unwrap(),
            Op::Reopen => {
                snapshots.clear();
                drop(db);
                db = open(&fs, &style, background);
            }
            Op::PowerCut => {
                // Every write was synced: all of them must survive.
                snapshots.clear();
                let after = fs.crash();
                drop(db);
                fs = after;
                db = open(&fs, &style, background);
            }
        }
    }
    let all = collect(db.range::<Vec<u8>, _>(..), false);
    assert_eq!(
        all,
        expected_range(&model, &Bound::Unbounded, &Bound::Unbounded, false)
    );
    drop(snapshots);
    drop(db);
    let db = open(&fs, &style, background);
    let all = collect(db.range::<Vec<u8>, _>(..), true);
    assert_eq!(
        all,
        expected_range(&model, &Bound::Unbounded, &Bound::Unbounded, true)
    );
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn leveled_matches_the_model(ops in proptest::collection::vec(op(), 1..300)) {
        run(ops, CompactionStyle::Leveled { l0_trigger: 2, size_ratio: 3, l1_bytes: 8 << 10 }, false);
    }

    #[test]
    fn tiered_matches_the_model(ops in proptest::collection::vec(op(), 1..300)) {
        run(ops, CompactionStyle::tiered(), false);
    }

    #[test]
    fn background_threads_match_the_model(ops in proptest::collection::vec(op(), 1..300)) {
        run(ops, CompactionStyle::Leveled { l0_trigger: 2, size_ratio: 4, l1_bytes: 16 << 10 }, true);
    }
}
