//! Scan filters in a table: what they hold, what they rule out, and what
//! damage does to them.

use std::ops::Bound;

use sift_filter::KeyHash;

use super::{default_options, entry, open, write};
use crate::filter_policy::ScanFilterChoice;
use crate::fs::FaultInjectionFs;
use crate::iter::{UserBounds, prefix_bounds};
use crate::key::{Entry, ValueKind};
use crate::prefix::PrefixExtractor;
use crate::sstable::{ScanProbe, Table, TableFile, TableOptions};

/// Keys `p<NN>` + a big-endian `u64` `16·i`, `per_prefix` keys per
/// prefix, every third a tombstone.
fn keyed(n: u64, per_prefix: u64) -> Vec<Entry> {
    (0..n)
        .map(|i| {
            let prefix = format!("p{:02}", i / per_prefix);
            let key = [prefix.as_bytes(), &(16 * i).to_be_bytes()].concat();
            let kind = if i % 3 == 2 {
                ValueKind::Delete
            } else {
                ValueKind::Value
            };
            entry(&key, i + 1, kind, b"v")
        })
        .collect()
}

fn scan_options() -> TableOptions {
    TableOptions {
        scan: ScanFilterChoice {
            prefix: Some((PrefixExtractor::Fixed(3), 10.0)),
            range_bits_per_key: 12.0,
        },
        ..default_options()
    }
}

/// A prefix scan's probe and bounds.
fn prefix_probe(prefix: &[u8]) -> (ScanProbe, UserBounds) {
    let probe = ScanProbe {
        prefix: Some((PrefixExtractor::Fixed(3), KeyHash::of(prefix))),
        ranged: true,
    };
    (probe, prefix_bounds(prefix))
}

/// A range scan's probe and bounds, `[lower, upper]`.
fn range_probe(lower: &[u8], upper: &[u8]) -> (ScanProbe, UserBounds) {
    let probe = ScanProbe {
        prefix: None,
        ranged: true,
    };
    (
        probe,
        (
            Bound::Included(lower.to_vec()),
            Bound::Included(upper.to_vec()),
        ),
    )
}

/// What `table` answers to a probe and its bounds.
fn ask(table: &Table, (probe, bounds): (ScanProbe, UserBounds)) -> Option<bool> {
    table.may_hold(&probe, &bounds)
}

#[test]
fn filters_hold_every_key_tombstones_included_and_rule_out_gaps() {
    let fs = FaultInjectionFs::new();
    // One prefix: the range filter maps the integer past it at full
    // resolution (with many prefixes in a table, the 8 bytes after their
    // common `p` would cut the integer's low bytes).
    let entries = keyed(500, 500);
    let (path, props) = write(&fs, 1, &entries, scan_options());
    assert!(props.scan_filters.is_some());
    let table = open(&fs, &path).unwrap();
    for e in &entries {
        let key = &e.key.user_key;
        assert_eq!(ask(&table, range_probe(key, key)), Some(true), "{key:?}");
    }
    // Gaps of 15 integers between keys of one prefix: nearly all ruled out.
    let mut empty = 0;
    for e in &entries {
        let mut lower = e.key.user_key.clone();
        *lower.last_mut().unwrap() += 1;
        let mut upper = e.key.user_key.clone();
        *upper.last_mut().unwrap() += 15;
        empty += u32::from(ask(&table, range_probe(&lower, &upper)) == Some(false));
    }
    assert!(empty > 450, "{empty} of 500 gaps ruled out");
    TableFile::open_in(&fs, &path).unwrap().verify().unwrap();
}

#[test]
fn prefix_filters_hold_every_prefix_and_rule_out_absent_ones() {
    let fs = FaultInjectionFs::new();
    let entries = keyed(500, 10);
    let (path, _) = write(&fs, 1, &entries, scan_options());
    let table = open(&fs, &path).unwrap();
    for e in &entries {
        assert_eq!(ask(&table, prefix_probe(&e.key.user_key[..3])), Some(true));
    }
    // Absent prefixes: nearly all ruled out; a foreign extractor's probe is
    // not asked at all.
    let absent = (50..150)
        .filter(|i| ask(&table, prefix_probe(format!("p{i:02}").as_bytes())) == Some(false))
        .count();
    assert!(absent > 90, "{absent} of 100 absent prefixes ruled out");
    let foreign = ScanProbe {
        prefix: Some((PrefixExtractor::Fixed(4), KeyHash::of(b"p999"))),
        ranged: true,
    };
    let everything = (Bound::Unbounded, Bound::Unbounded);
    assert_eq!(
        table.may_hold(&foreign, &everything),
        Some(true),
        "the range filter alone, over the whole table"
    );
    TableFile::open_in(&fs, &path).unwrap().verify().unwrap();
}

#[test]
fn tables_without_scan_filters_are_never_ruled_out() {
    let fs = FaultInjectionFs::new();
    let (path, props) = write(&fs, 1, &keyed(100, 10), default_options());
    assert_eq!(props.scan_filters, None);
    let table = open(&fs, &path).unwrap();
    assert_eq!(ask(&table, prefix_probe(b"p99")), None);
    assert_eq!(ask(&table, range_probe(b"p00", b"p00")), None);
}

#[test]
fn damaged_scan_filters_answer_maybe_and_verify_reports_them() {
    let fs = FaultInjectionFs::new();
    let entries = keyed(300, 10);
    let (path, props) = write(&fs, 1, &entries, scan_options());
    let handle = props.scan_filters.unwrap();
    let mut bytes = fs.contents(&path).unwrap();
    bytes[handle.offset as usize + 20] ^= 0x01;
    fs.set_contents(&path, bytes).unwrap();
    let table = open(&fs, &path).unwrap();
    assert_eq!(
        ask(&table, prefix_probe(b"p99")),
        None,
        "no filter left to ask"
    );
    for e in &entries {
        let found = table.get(&e.key.user_key, e.key.seq, &mut 0).unwrap();
        assert_eq!(found.as_ref(), Some(e));
    }
    let err = TableFile::open_in(&fs, &path)
        .unwrap()
        .verify()
        .unwrap_err()
        .to_string();
    assert!(err.contains("checksum"), "{err}");
}
