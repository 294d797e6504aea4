//! Prefix and range filters: scans answer as a `BTreeMap` model does with
//! the filters on, off, at a high false-positive rate, and across reopens
//! that change the prefix extractor; the filters skip tables; statistics
//! count what they did.

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
use siftdb::{BitsPerKey, Db, FilterPolicy, PrefixExtractor, RangeFilterPolicy};

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

/// The filter settings a database is opened with.
#[derive(Debug, Clone, Copy)]
enum Filters {
    /// No prefix or range filters.
    Off,
    /// The defaults: range filters, no prefix extractor.
    Default,
    /// A fixed 3-byte prefix (`u07` of `u07:3`, `010` of `010:2`) and range
    /// filters.
    FixedPrefix,
    /// Prefixes up to `:`, no key filters, range filters at 3 bits/key (a
    /// false-positive rate near 1 for longer ranges: the "maybe" path).
    DelimitedLossy,
}

impl Filters {
    fn policy(self) -> FilterPolicy {
        let lossy = RangeFilterPolicy {
            bits_per_key: BitsPerKey::Monkey { average: 3.0 },
            range_len: 16,
        };
        let mut policy = FilterPolicy::default();
        match self {
            Self::Off => policy.range_filter = None,
            Self::Default => {}
            Self::FixedPrefix => policy.prefix_extractor = Some(PrefixExtractor::Fixed(3)),
            Self::DelimitedLossy => {
                policy.prefix_extractor = Some(PrefixExtractor::Delimited(b':'));
                policy.whole_key_filtering = false;
                policy.range_filter = Some(lossy);
            }
        }
        policy
    }
}

#[derive(Debug, Clone)]
enum Op {
    Insert(Vec<u8>, Vec<u8>),
    Remove(Vec<u8>),
    Range(Bound<Vec<u8>>, Bound<Vec<u8>>, bool),
    Prefix(Vec<u8>, bool),
    Flush,
    Compact,
    Reopen(Filters),
}

/// Keys `uNN:M` (40 prefixes of a few keys each, so prefixes are often
/// empty in some tables and not in others), integer keys `i` + a
/// big-endian `u64` (short ranges the range filters can rule out), and
/// a few arbitrary bytes.
fn key() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        5 => (0u8..40, 0u8..6).prop_map(|(p, i)| format!("u{p:02}:{i}").into_bytes()),
        4 => (0u64..400).prop_map(int_key),
        1 => proptest::collection::vec(any::<u8>(), 0..5),
    ]
}

/// `i` followed by `n` as 8 big-endian bytes.
fn int_key(n: u64) -> Vec<u8> {
    [b"i".as_slice(), &n.to_be_bytes()].concat()
}

fn bound() -> impl Strategy<Value = Bound<Vec<u8>>> {
    prop_oneof![
        4 => key().prop_map(Bound::Included),
        4 => key().prop_map(Bound::Excluded),
        1 => Just(Bound::Unbounded),
    ]
}

fn filters() -> impl Strategy<Value = Filters> {
    prop_oneof![
        Just(Filters::Off),
        Just(Filters::Default),
        Just(Filters::FixedPrefix),
        Just(Filters::DelimitedLossy),
    ]
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        30 => (key(), proptest::collection::vec(any::<u8>(), 0..20)).prop_map(|(k, v)| Op::Insert(k, v)),
        10 => key().prop_map(Op::Remove),
        8 => (bound(), bound(), any::<bool>()).prop_map(|(lo, hi, rev)| Op::Range(lo, hi, rev)),
        8 => (key(), 0usize..6, any::<bool>()).prop_map(|(k, len, rev)| {
            let len = len.min(k.len());
            Op::Prefix(k[..len].to_vec(), rev)
        }),
        4 => Just(Op::Flush),
        1 => Just(Op::Compact),
        2 => filters().prop_map(Op::Reopen),
    ]
}

fn open(fs: &FaultInjectionFs, filters: Filters) -> Db {
    Db::builder(Path::new("/db"))
        .file_system(Arc::new(fs.clone()))
        .memtable_bytes(4096)
        .table_target_bytes(4096)
        .block_bytes(256)
        .filter_policy(filters.policy())
        .background_threads(false)
        .open()
        .unwrap()
}

fn in_range(key: &[u8], lo: &Bound<Vec<u8>>, hi: &Bound<Vec<u8>>) -> bool {
    (match lo {
        Bound::Included(b) => key >= b.as_slice(),
        Bound::Excluded(b) => key > b.as_slice(),
        Bound::Unbounded => true,
    }) && (match hi {
        Bound::Included(b) => key <= b.as_slice(),
        Bound::Excluded(b) => key < b.as_slice(),
        Bound::Unbounded => true,
    })
}

fn collect(iter: siftdb::DbIter, rev: bool) -> Vec<(Vec<u8>, Vec<u8>)> {
    if rev {
        iter.rev().map(Result::unwrap).collect()
    } else {
        iter.map(Result::unwrap).collect()
    }
}

fn expect(model: &Model, keep: impl Fn(&[u8]) -> bool, rev: bool) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut out: Vec<_> = model
        .iter()
        .filter(|(k, _)| keep(k))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    if rev {
        out.reverse();
    }
    out
}

fn run(first: Filters, ops: Vec<Op>) {
    let fs = FaultInjectionFs::new();
    let mut db = open(&fs, first);
    let mut model = Model::new();
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
            Op::Range(lo, hi, rev) => {
                let expected = expect(&model, |k| in_range(k, &lo, &hi), rev);
                assert_eq!(
                    collect(db.range((lo.clone(), hi.clone())), rev),
                    expected,
                    "range {lo:?}..{hi:?}"
                );
            }
            Op::Prefix(p, rev) => {
                let expected = expect(&model, |k| k.starts_with(&p), rev);
                assert_eq!(collect(db.prefix(&p), rev), expected, "prefix {p:?}");
            }
            Op::Flush => db.flush().unwrap(),
            Op::Compact => db.compact().unwrap(),
            Op::Reopen(filters) => {
                drop(db);
                db = open(&fs, filters);
            }
        }
    }
    let everything = expect(&model, |_| true, false);
    assert_eq!(collect(db.range::<Vec<u8>, _>(..), false), everything);
    drop(db);
    let report = siftdb::verify_in(&fs, Path::new("/db"), &mut |_| {}).unwrap();
    assert!(report.problems.is_empty(), "{:?}", report.problems);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn scans_match_the_model_whatever_the_filters(
        first in filters(),
        ops in proptest::collection::vec(op(), 1..300),
    ) {
        run(first, ops);
    }
}

/// 400 keys `EEE:j`, `EEE` an even number below 200 (4 keys each), over
/// several flushed tables: odd prefixes are absent, within the tables' key
/// ranges.
fn filled(filters: Filters) -> (FaultInjectionFs, Db) {
    let fs = FaultInjectionFs::new();
    let db = open(&fs, filters);
    for i in 0..400 {
        db.insert(format!("{:03}:{}", 2 * (i / 4), i % 4), b"v")
            .unwrap();
        if i % 50 == 49 {
            db.flush().unwrap();
        }
    }
    db.flush().unwrap();
    (fs, db)
}

/// Scan filter counters summed over the levels: probes, empty answers,
/// false positives.
fn scan_counts(db: &Db) -> (u64, u64, u64) {
    db.stats().levels.iter().fold((0, 0, 0), |(p, e, f), l| {
        (
            p + l.scan_filter_probes,
            e + l.scan_filter_empty,
            f + l.scan_filter_false_positives,
        )
    })
}

#[test]
fn empty_prefix_scans_skip_tables_by_their_prefix_filters() {
    let (_fs, db) = filled(Filters::FixedPrefix);
    let before = scan_counts(&db);
    for odd in (1..200).step_by(2) {
        assert_eq!(db.prefix(format!("{odd:03}")).count(), 0);
    }
    let (probes, empty, _) = scan_counts(&db);
    // A scan whose prefix lies between the tables of a run asks none.
    assert!(probes - before.0 >= 90, "nearly every scan asked a filter");
    assert!(
        (empty - before.1) * 10 >= (probes - before.0) * 9,
        "{} of {} said empty",
        empty - before.1,
        probes - before.0
    );
    // A prefix that holds keys still finds them all, forward and back.
    assert_eq!(db.prefix("010").count(), 4);
    assert_eq!(db.prefix("010").rev().count(), 4);
}

#[test]
fn empty_short_ranges_skip_tables_by_their_range_filters() {
    let fs = FaultInjectionFs::new();
    let db = open(&fs, Filters::Default);
    for i in 0..400 {
        db.insert(int_key(i * 16), b"v").unwrap();
        if i % 50 == 49 {
            db.flush().unwrap();
        }
    }
    let before = scan_counts(&db);
    // Between keys 16i and 16(i + 1) there is none, in a table that covers
    // both: ranges of 15 integers.
    for i in 0..100 {
        let (lo, hi) = (int_key(i * 16 + 1), int_key(i * 16 + 16));
        assert_eq!(db.range(lo..hi).count(), 0);
    }
    let (probes, empty, false_positives) = scan_counts(&db);
    // A range between two tables of a run, or between two L0 runs'
    // spans, asks none.
    assert!(
        probes - before.0 >= 90,
        "nearly every range asked a filter: {}",
        probes - before.0
    );
    assert!(
        empty - before.1 >= 90,
        "nearly all were found empty: {} of {}",
        empty - before.1,
        probes - before.0
    );
    assert_eq!(
        probes - before.0,
        empty - before.1 + false_positives - before.2,
        "every table the filters let through held nothing: a false positive"
    );
    assert_eq!(db.range(int_key(100 * 16)..int_key(110 * 16)).count(), 10);
}

#[test]
fn without_filters_nothing_is_probed() {
    let (_fs, db) = filled(Filters::Off);
    assert_eq!(db.range("000:5".as_bytes().."002".as_bytes()).count(), 0);
    assert_eq!(db.prefix("001").count(), 0);
    assert_eq!(scan_counts(&db), (0, 0, 0));
}

#[test]
fn seeks_read_nothing_of_runs_that_hold_nothing_up_to_the_next_key() {
    let fs = FaultInjectionFs::new();
    let db = open(&fs, Filters::Default);
    // Four runs over the same key range: run j holds 64i + 16j.
    for j in 0..4 {
        for i in 0..100 {
            db.insert(int_key(i * 64 + 16 * j), b"v").unwrap();
        }
        db.flush().unwrap();
    }
    let before = scan_counts(&db);
    // Just past 64i + 48, the next key is 64(i + 1), in the oldest run,
    // which is read first: the three newer runs hold nothing up to it.
    for i in 0..99 {
        let next = db.range(int_key(i * 64 + 49)..).next().unwrap().unwrap();
        assert_eq!(next.0, int_key((i + 1) * 64));
    }
    let (probes, empty, false_positives) = scan_counts(&db);
    let (probes, empty) = (probes - before.0, empty - before.1);
    // (Not asked: a run whose next table starts above the key.)
    assert!(
        probes >= 3 * 90,
        "nearly every newer run was asked: {probes}"
    );
    assert!(empty * 10 >= probes * 9, "{empty} of {probes} said empty");
    assert_eq!(
        probes,
        empty + false_positives - before.2,
        "every run the filters let through held nothing up to the next key"
    );
    // Longer seeks go on past the floors and read every run, in order.
    let all: Vec<_> = db.range(int_key(49)..).map(|kv| kv.unwrap().0).collect();
    let expected: Vec<_> = (4..400).map(|k| int_key(k * 16)).collect();
    assert_eq!(all, expected);
}
