//! Tables whose index is in two levels: every key found, scans from both
//! ends, one partition read per lookup, damage named at first use.

use std::ops::Bound;

use super::{bloom, numbered, open, options, write};
use crate::error::Error;
use crate::fs::FaultInjectionFs;
use crate::options::Compression;
use crate::sstable::{TableFile, TableOptions};

/// Blocks of a few entries, the filter partitioned, index partitions of
/// a handful of blocks.
fn two_level_options() -> TableOptions {
    TableOptions {
        index_partition_bytes: 256,
        ..options(96, 4, Compression::None, bloom(10.0), 10)
    }
}

#[test]
fn a_two_level_index_finds_every_key_reading_one_partition_per_lookup() {
    let fs = FaultInjectionFs::new();
    let entries = numbered(2000);
    let (path, props) = write(&fs, 1, &entries, two_level_options());
    let table = open(&fs, &path).unwrap();
    let parts = table.index_parts();
    assert!(
        parts > 8,
        "{parts} index partitions of {} blocks",
        props.data_blocks
    );
    assert_eq!(
        table.resident_index_parts(),
        0,
        "partitions are read at first use"
    );

    let last = &entries[entries.len() - 2];
    let found = table.get(&last.key.user_key, last.key.seq, &mut 0).unwrap();
    assert_eq!(found.as_ref(), Some(last));
    assert_eq!(table.resident_index_parts(), 1, "one lookup, one partition");

    for e in &entries {
        let found = table.get(&e.key.user_key, e.key.seq, &mut 0).unwrap();
        assert_eq!(found.as_ref(), Some(e));
    }
    for absent in [&b"key000000a"[..], b"a", b"key999999", b"key001500x"] {
        assert_eq!(
            table.get(absent, u64::MAX, &mut 0).unwrap(),
            None,
            "{absent:?}"
        );
    }
    assert_eq!(table.resident_index_parts(), parts);

    let keys = |items: Vec<crate::error::Result<crate::key::Entry>>| -> Vec<(Vec<u8>, u64)> {
        items
            .into_iter()
            .map(|e| e.unwrap())
            .map(|e| (e.key.user_key, e.key.seq))
            .collect()
    };
    let want = |lower: &[u8], upper: &[u8]| -> Vec<(Vec<u8>, u64)> {
        let within = |e: &&crate::key::Entry| {
            e.key.user_key.as_slice() >= lower && e.key.user_key.as_slice() < upper
        };
        entries
            .iter()
            .filter(within)
            .map(|e| (e.key.user_key.clone(), e.key.seq))
            .collect()
    };
    for (lower, upper) in [
        (&b"key000000"[..], &b"key002000"[..]),
        (b"key000377", b"key001234"),
        (b"key001999", b"key002000"),
        (b"key000500x", b"key000501x"),
    ] {
        let bounds = || {
            (
                Bound::Included(lower.to_vec()),
                Bound::Excluded(upper.to_vec()),
            )
        };
        let (l, u) = bounds();
        let forward = keys(table.iter(l, u).collect());
        assert_eq!(forward, want(lower, upper), "{lower:?}..{upper:?}");
        let (l, u) = bounds();
        let mut backward = keys(table.iter(l, u).rev().collect());
        backward.reverse();
        assert_eq!(backward, forward);
        // Both ends at once, meeting in the middle.
        let (l, u) = bounds();
        let mut iter = table.iter(l, u);
        let (mut front, mut back) = (Vec::new(), Vec::new());
        while let Some(f) = iter.next() {
            front.push(f);
            let Some(b) = iter.next_back() else { break };
            back.push(b);
        }
        back.reverse();
        front.extend(back);
        assert_eq!(keys(front), forward);
    }
    TableFile::open_in(&fs, &path).unwrap().verify().unwrap();
}

#[test]
fn a_damaged_index_partition_is_named_with_its_offset_at_first_use() {
    let fs = FaultInjectionFs::new();
    let entries = numbered(2000);
    let (path, _) = write(&fs, 1, &entries, two_level_options());
    let table = open(&fs, &path).unwrap();
    let parts = table.index_parts();
    let damaged = parts / 2;
    let (offset, first_block) = table.index_part_location(damaged);
    let block = table.read_data_block(first_block).unwrap();
    let (key, _) = block.entries().next().unwrap().unwrap();
    let in_damaged = crate::key::ParsedKey::parse(&key)
        .unwrap()
        .user_key
        .to_vec();
    let mut bytes = fs.contents(&path).unwrap();
    bytes[offset as usize + 1] ^= 0x40;
    fs.set_contents(&path, bytes).unwrap();

    let table = open(&fs, &path).expect("a partition is read at first use, not at open");
    let err = table.get(&in_damaged, u64::MAX, &mut 0).unwrap_err();
    assert!(
        matches!(&err, Error::Corruption { path: p, offset: o, .. } if *p == path && *o == offset),
        "{err}"
    );
    // The partitions around it answer.
    let first = &entries[0];
    let found = table
        .get(&first.key.user_key, first.key.seq, &mut 0)
        .unwrap();
    assert_eq!(found.as_ref(), Some(first));
    let err = TableFile::open_in(&fs, &path)
        .unwrap()
        .verify()
        .unwrap_err();
    assert!(
        matches!(&err, Error::Corruption { offset: o, .. } if *o == offset),
        "{err}"
    );
}
