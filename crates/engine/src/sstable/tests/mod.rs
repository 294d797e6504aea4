//! Whole-table tests: round trips against a `BTreeMap` model, filters,
//! compression, and damage at every offset.

use std::collections::BTreeMap;
use std::ops::Bound;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use proptest::prelude::*;
use sift_filter::KeyHash;

use super::*;
use crate::error::Error;
use crate::filter_policy::{FilterChoice, FilterKindChoice, ScanFilterChoice};

mod damage;
mod scan;
mod two_level;
mod values;
use crate::fs::{FaultInjectionFs, FileSystem};
use crate::key::{Entry, InternalKey, MAX_SEQNO, SeqNo, ValueKind};

const DIR: &str = "/db";

fn options(
    block_bytes: usize,
    restart_interval: usize,
    compression: Compression,
    filter: FilterChoice,
    partition_keys: u64,
) -> TableOptions {
    TableOptions {
        block_bytes,
        restart_interval,
        compression,
        filter,
        partition_keys,
        // Index partitions of a few blocks, where the filter is partitioned.
        index_partition_bytes: 64,
        value_indexes: Arc::from(Vec::new()),
        scan: ScanFilterChoice::NONE,
    }
}

fn bloom(bits_per_key: f64) -> FilterChoice {
    FilterChoice {
        kind: FilterKindChoice::BlockedBloom,
        bits_per_key,
    }
}

fn default_options() -> TableOptions {
    options(4096, 16, Compression::None, bloom(10.0), 1_000_000)
}

/// Writes `entries` (sorted) to `/db/<id>.sst` and returns the path.
fn write(
    fs: &FaultInjectionFs,
    id: u64,
    entries: &[Entry],
    options: TableOptions,
) -> (PathBuf, Properties) {
    fs.create_dir_all(Path::new(DIR)).unwrap();
    let path = Path::new(DIR).join(format!("{id:06}.sst"));
    let file = fs.create(&path).unwrap();
    let mut builder = TableBuilder::new(file, path.clone(), options);
    for entry in entries {
        builder
            .add(&entry.key, KeyHash::of(&entry.key.user_key), &entry.value)
            .unwrap();
    }
    let props = builder.finish().unwrap();
    (path, props)
}

fn open(fs: &FaultInjectionFs, path: &Path) -> crate::error::Result<Arc<Table>> {
    Table::open(
        fs,
        path.to_path_buf(),
        7,
        Arc::new(BlockCache::new(1 << 20)),
    )
    .map(Arc::new)
}

/// The index entries of `table`, each with its block's own last internal
/// key (what an index of internal keys holds).
fn index_entries(table: &Table) -> Vec<index::IndexEntry> {
    (0..table.data_blocks())
        .map(|at| {
            let block = table.read_data_block(at).unwrap();
            let (last_key, _) = block.entries().last().unwrap().unwrap();
            index::IndexEntry {
                last_key: last_key.into(),
                handle: table.index_part(at).unwrap().handle(at).unwrap(),
            }
        })
        .collect()
}

/// Rewrites the table at `path` with `index` as its index block (and
/// `properties` as its properties block, if given), its footer saying
/// `version`. The index must come before the properties.
fn rewrite_index(
    fs: &FaultInjectionFs,
    path: &Path,
    index: &[u8],
    properties: Option<&[u8]>,
    version: u32,
) {
    let bytes = fs.contents(path).unwrap();
    let mut footer = footer::Footer::decode(&bytes[bytes.len() - footer::FOOTER_LEN..]).unwrap();
    assert!(footer.index.offset < footer.properties.offset);
    let at = footer.properties.offset as usize;
    let stored_properties = bytes[at..at + footer.properties.size as usize].to_vec();
    let mut out = bytes[..footer.index.offset as usize].to_vec();
    let none = Compression::None;
    footer.index.size = trailer::seal_block(index, none, &mut out) as u64;
    footer.properties.offset = out.len() as u64;
    let properties = properties.unwrap_or(&stored_properties);
    footer.properties.size = trailer::seal_block(properties, none, &mut out) as u64;
    footer.version = version;
    out.extend_from_slice(&footer.encode());
    fs.set_contents(path, out).unwrap();
}

fn entry(user_key: &[u8], seq: SeqNo, kind: ValueKind, value: &[u8]) -> Entry {
    Entry {
        key: InternalKey::new(user_key, seq, kind),
        value: value.to_vec(),
    }
}

/// `n` keys `key{i:06}` with two versions each (a value, then a tombstone
/// or an older value).
fn numbered(n: u32) -> Vec<Entry> {
    let mut out = Vec::new();
    for i in 0..n {
        let key = format!("key{i:06}").into_bytes();
        out.push(entry(
            &key,
            u64::from(i) * 2 + 1,
            ValueKind::Value,
            format!("value{i}").as_bytes(),
        ));
        let kind = if i % 3 == 0 {
            ValueKind::Delete
        } else {
            ValueKind::Value
        };
        let value = if kind == ValueKind::Value {
            b"old".to_vec()
        } else {
            Vec::new()
        };
        out.push(entry(&key, u64::from(i) * 2, kind, &value));
    }
    out
}

/// The newest version of `user_key` at or below `seq` in a model.
fn model_get(model: &BTreeMap<InternalKey, Vec<u8>>, user_key: &[u8], seq: SeqNo) -> Option<Entry> {
    let search = InternalKey::new(user_key, seq.min(MAX_SEQNO), ValueKind::MAX);
    model
        .range(search..)
        .next()
        .filter(|(k, _)| k.user_key == user_key)
        .map(|(k, v)| Entry {
            key: k.clone(),
            value: v.clone(),
        })
}

fn within(bounds: &(Bound<Vec<u8>>, Bound<Vec<u8>>), key: &[u8]) -> bool {
    let lower = match &bounds.0 {
        Bound::Included(b) => key >= b.as_slice(),
        Bound::Excluded(b) => key > b.as_slice(),
        Bound::Unbounded => true,
    };
    let upper = match &bounds.1 {
        Bound::Included(b) => key <= b.as_slice(),
        Bound::Excluded(b) => key < b.as_slice(),
        Bound::Unbounded => true,
    };
    lower && upper
}

fn user_key() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        6 => prop::collection::vec(prop::sample::select(vec![0x00, 0x01, b'a', b'b', 0xfe, 0xff]), 0..4),
        // Longer than a stack search key (256 bytes), sharing long prefixes.
        1 => (prop::sample::select(vec![b'a', b'z']), 250..300usize).prop_map(|(b, n)| vec![b; n]),
    ]
}

fn bound() -> impl Strategy<Value = Bound<Vec<u8>>> {
    prop_oneof![
        1 => Just(Bound::Unbounded),
        2 => user_key().prop_map(Bound::Included),
        2 => user_key().prop_map(Bound::Excluded),
    ]
}

fn table_options() -> impl Strategy<Value = TableOptions> {
    (
        prop::sample::select(vec![1usize, 64, 300, 4096]),
        prop::sample::select(vec![1usize, 2, 16]),
        prop::bool::ANY,
        prop::sample::select(vec![
            FilterKindChoice::None,
            FilterKindChoice::BlockedBloom,
            FilterKindChoice::Ribbon,
        ]),
        prop::sample::select(vec![0.0, 3.5, 10.0]),
        prop::sample::select(vec![1u64, 4, 1000]),
    )
        .prop_map(|(block, restart, lz4, kind, bits, partition_keys)| {
            let compression = if lz4 {
                Compression::Lz4
            } else {
                Compression::None
            };
            options(
                block,
                restart,
                compression,
                FilterChoice {
                    kind,
                    bits_per_key: bits,
                },
                partition_keys,
            )
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    #[test]
    fn round_trip_against_a_model(
        versions in prop::collection::vec(
            (user_key(), 0..20 as SeqNo, prop::bool::weighted(0.75), prop::collection::vec(any::<u8>(), 0..40)),
            0..150,
        ),
        options in table_options(),
        gets in prop::collection::vec((user_key(), 0..24 as SeqNo), 20),
        scans in prop::collection::vec((bound(), bound(), prop::collection::vec(any::<bool>(), 0..200)), 4),
    ) {
        // One version per (user key, seq), as the engine writes them.
        let mut model = BTreeMap::new();
        let mut seen = std::collections::BTreeSet::new();
        for (key, seq, is_value, value) in versions {
            if !seen.insert((key.clone(), seq)) {
                continue;
            }
            let kind = if is_value { ValueKind::Value } else { ValueKind::Delete };
            let value = if is_value { value } else { Vec::new() };
            model.insert(InternalKey::new(key, seq, kind), value);
        }
        let entries: Vec<Entry> = model.iter().map(|(k, v)| Entry { key: k.clone(), value: v.clone() }).collect();
        let fs = FaultInjectionFs::new();
        let (path, props) = write(&fs, 1, &entries, options);
        prop_assert_eq!(props.entries, entries.len() as u64);
        prop_assert_eq!(props.file_size, fs.contents(&path).unwrap().len() as u64);
        let table = open(&fs, &path).unwrap();
        prop_assert_eq!(table.properties(), &props);

        // Every present key is found at every sequence number that sees it,
        // and the filter never says no to it.
        for e in &entries {
            prop_assert!(table.may_contain(&e.key.user_key, KeyHash::of(&e.key.user_key)));
            let mut blocks = 0;
            prop_assert_eq!(table.get(&e.key.user_key, e.key.seq, &mut blocks).unwrap(), Some(e.clone()));
            prop_assert_eq!(blocks, 1);
        }
        for (key, seq) in gets {
            let mut blocks = 0;
            prop_assert_eq!(table.get(&key, seq, &mut blocks).unwrap(), model_get(&model, &key, seq));
        }

        // Scans with random bounds, the two ends interleaved at random.
        for (lower, upper, steps) in scans {
            let bounds = (lower.clone(), upper.clone());
            let expected: Vec<Entry> = entries.iter().filter(|e| within(&bounds, &e.key.user_key)).cloned().collect();
            let mut iter = table.iter(lower, upper);
            let (mut front, mut back) = (Vec::new(), Vec::new());
            for from_back in steps.into_iter().chain(std::iter::repeat_n(false, expected.len() + 1)) {
                let item = if from_back { iter.next_back() } else { iter.next() };
                match item {
                    Some(e) => if from_back { back.push(e.unwrap()) } else { front.push(e.unwrap()) },
                    None => break,
                }
            }
            prop_assert!(iter.next().is_none() && iter.next_back().is_none());
            back.reverse();
            front.extend(back);
            prop_assert_eq!(front, expected);
        }

        let inspected = TableFile::open_in(&fs, &path).unwrap();
        inspected.verify().unwrap();
        let listed: Vec<_> = inspected.entries().map(Result::unwrap).collect();
        let want: Vec<_> = entries
            .iter()
            .map(|e| (e.key.user_key.clone(), e.key.seq, (e.key.kind == ValueKind::Value).then(|| e.value.clone())))
            .collect();
        prop_assert_eq!(listed, want);
    }
}

/// The index holds user keys unless a user key's versions continue into
/// the next block; either way every version is found, and `verify` refuses
/// an index of user keys over a key that continues.
#[test]
fn the_index_holds_user_keys_unless_a_key_spans_blocks() {
    let fs = FaultInjectionFs::new();
    let single: Vec<Entry> = (0..50u64)
        .map(|i| {
            entry(
                format!("key{i:03}").as_bytes(),
                i + 1,
                ValueKind::Value,
                b"v",
            )
        })
        .collect();
    let spanning = numbered(50);
    let one_per_block = options(1, 1, Compression::None, bloom(10.0), 1_000_000);
    for (id, entries, user_keys) in [(1, &single, true), (2, &spanning, false)] {
        let (path, _) = write(&fs, id, entries, one_per_block.clone());
        let table = open(&fs, &path).unwrap();
        let (index, _) = &table.checked_index().unwrap()[0];
        assert_eq!(index.holds_user_keys(), user_keys);
        for e in entries {
            let found = table.get(&e.key.user_key, e.key.seq, &mut 0).unwrap();
            assert_eq!(found.as_ref(), Some(e));
        }
        TableFile::open_in(&fs, &path).unwrap().verify().unwrap();
    }
    // Blocks [a@1, b@3] and [b@2, c@1]: "b" continues into the second.
    let value = [7u8; 100];
    let continuing = [("a", 1), ("b", 3), ("b", 2), ("c", 1)]
        .map(|(key, seq)| entry(key.as_bytes(), seq, ValueKind::Value, &value));
    let two_per_block = options(150, 1, Compression::None, bloom(10.0), 1_000_000);
    let (path, props) = write(&fs, 3, &continuing, two_per_block);
    assert_eq!(props.data_blocks, 2);
    let entries = index_entries(&open(&fs, &path).unwrap());
    let user_keyed = index::Index::encode(&entries, true).unwrap();
    rewrite_index(&fs, &path, &user_keyed, None, footer::FORMAT_VERSION);
    let err = TableFile::open_in(&fs, &path)
        .unwrap()
        .verify()
        .unwrap_err();
    assert!(
        err.to_string().contains("continues past its block"),
        "{err}"
    );
}

#[test]
fn tiny_blocks_restart_every_entry_and_lz4() {
    let entries = numbered(500);
    for (block_bytes, restart, compression) in [
        (1, 1, Compression::None),
        (4096, 1, Compression::Lz4),
        (16 << 10, 64, Compression::Lz4),
    ] {
        let fs = FaultInjectionFs::new();
        let (path, props) = write(
            &fs,
            1,
            &entries,
            options(block_bytes, restart, compression, bloom(10.0), 1_000_000),
        );
        if block_bytes == 1 {
            assert_eq!(
                props.data_blocks,
                entries.len() as u64,
                "one entry per block"
            );
        }
        if compression == Compression::Lz4 {
            assert!(
                props.stored_data_bytes < props.raw_data_bytes * 3 / 4,
                "{props:?}"
            );
        }
        let table = open(&fs, &path).unwrap();
        for e in &entries {
            let mut blocks = 0;
            assert_eq!(
                table
                    .get(&e.key.user_key, e.key.seq, &mut blocks)
                    .unwrap()
                    .as_ref(),
                Some(e)
            );
        }
        let all: Vec<Entry> = table
            .iter(Bound::Unbounded, Bound::Unbounded)
            .map(Result::unwrap)
            .collect();
        assert_eq!(all, entries);
        TableFile::open_in(&fs, &path).unwrap().verify().unwrap();
    }
}

#[test]
fn partitioned_filters_find_every_key_and_reject_most_absent_ones() {
    let entries = numbered(20_000);
    for kind in [FilterKindChoice::BlockedBloom, FilterKindChoice::Ribbon] {
        let fs = FaultInjectionFs::new();
        let filter = FilterChoice {
            kind,
            bits_per_key: 10.0,
        };
        let (path, props) = write(
            &fs,
            1,
            &entries,
            options(4096, 16, Compression::None, filter, 1000),
        );
        assert!(props.filter_partitions >= 15, "{props:?}");
        assert_eq!(props.distinct_keys, 20_000);
        let bits = props.filter_bytes as f64 * 8.0 / 20_000.0;
        assert!((9.0..12.0).contains(&bits), "{bits} bits/key");
        let table = open(&fs, &path).unwrap();
        for e in entries.iter().step_by(2) {
            assert!(table.may_contain(&e.key.user_key, KeyHash::of(&e.key.user_key)));
        }
        // Absent keys inside the range: between two present keys.
        let absent = (0..20_000).filter(|i| {
            let key = format!("key{i:06}x");
            table.may_contain(key.as_bytes(), KeyHash::of(key.as_bytes()))
        });
        let false_positives = absent.count();
        // About 1% at 10 bits/key; 2.5% is > 10 standard deviations above.
        assert!(
            false_positives < 500,
            "{kind:?}: {false_positives} false positives in 20,000"
        );
        assert!(
            !table.may_contain(b"zzz", KeyHash::of(b"zzz")),
            "past the last partition"
        );
        assert!(
            !table.may_contain(b"a", KeyHash::of(b"a")),
            "before the first key"
        );
        TableFile::open_in(&fs, &path).unwrap().verify().unwrap();
    }
}

#[test]
fn whole_filter_is_used_below_the_partition_threshold() {
    let fs = FaultInjectionFs::new();
    let (_, props) = write(
        &fs,
        1,
        &numbered(999),
        options(4096, 16, Compression::None, bloom(10.0), 1000),
    );
    assert_eq!(props.filter_partitions, 0);
    assert!(props.filter_bytes > 0);
    let (_, props) = write(
        &fs,
        2,
        &numbered(100),
        options(4096, 16, Compression::None, bloom(0.0), 10),
    );
    assert_eq!((props.filter_bytes, props.filter_partitions), (0, 0));
}

#[test]
fn out_of_order_and_duplicate_keys_are_errors() {
    let fs = FaultInjectionFs::new();
    fs.create_dir_all(Path::new(DIR)).unwrap();
    let path = Path::new(DIR).join("1.sst");
    let mut builder = TableBuilder::new(fs.create(&path).unwrap(), path.clone(), default_options());
    let b = InternalKey::new(b"b".to_vec(), 5, ValueKind::Value);
    builder.add(&b, KeyHash::of(b"b"), b"1").unwrap();
    for bad in [
        InternalKey::new(b"a".to_vec(), 9, ValueKind::Value),
        InternalKey::new(b"b".to_vec(), 6, ValueKind::Value),
        b.clone(),
    ] {
        let err = builder
            .add(&bad, KeyHash::of(&bad.user_key), b"x")
            .unwrap_err();
        assert!(matches!(err, Error::InvalidArgument(_)), "{err}");
    }
    let too_new = InternalKey::new(b"c".to_vec(), MAX_SEQNO + 1, ValueKind::Value);
    assert!(builder.add(&too_new, KeyHash::of(b"c"), b"").is_err());
    // The builder is still usable after refusing.
    builder
        .add(
            &InternalKey::new(b"c".to_vec(), 1, ValueKind::Value),
            KeyHash::of(b"c"),
            b"2",
        )
        .unwrap();
    assert_eq!(builder.finish().unwrap().entries, 2);
}

#[test]
fn empty_table_round_trips() {
    let fs = FaultInjectionFs::new();
    let (path, props) = write(&fs, 1, &[], default_options());
    assert_eq!((props.entries, props.data_blocks), (0, 0));
    let table = open(&fs, &path).unwrap();
    assert!(!table.may_contain(b"", KeyHash::of(b"")));
    assert_eq!(table.get(b"", 5, &mut 0).unwrap(), None);
    assert_eq!(table.iter(Bound::Unbounded, Bound::Unbounded).count(), 0);
    TableFile::open_in(&fs, &path).unwrap().verify().unwrap();
}

#[test]
fn the_block_cache_serves_repeated_reads() {
    let fs = FaultInjectionFs::new();
    let entries = numbered(300);
    let (path, _) = write(&fs, 1, &entries, default_options());
    let table = open(&fs, &path).unwrap();
    let mut blocks = 0;
    table.get(b"key000010", 100, &mut blocks).unwrap();
    // Damage the file: a cached block is still served, others are not.
    let mut bytes = fs.contents(&path).unwrap();
    bytes.iter_mut().take(4096 * 3).for_each(|b| *b ^= 0x55);
    fs.set_contents(&path, bytes).unwrap();
    assert!(table.get(b"key000010", 100, &mut blocks).unwrap().is_some());
    assert_eq!(blocks, 2, "a cache hit counts as a block read");
    assert!(table.get(b"key000200", 1000, &mut blocks).is_err());
}

#[test]
fn summary_reports_the_properties() {
    let fs = FaultInjectionFs::new();
    let filter = FilterChoice {
        kind: FilterKindChoice::Ribbon,
        bits_per_key: 7.5,
    };
    let (path, props) = write(
        &fs,
        1,
        &numbered(5000),
        options(4096, 16, Compression::Lz4, filter, 1_000_000),
    );
    let summary = TableFile::open_in(&fs, &path).unwrap().properties();
    assert_eq!(summary.entries, 10_000);
    assert_eq!(summary.distinct_keys, 5000);
    assert_eq!(summary.data_blocks, props.data_blocks);
    assert_eq!(summary.file_size, props.file_size);
    assert_eq!(summary.smallest_user_key, b"key000000");
    assert_eq!(summary.largest_user_key, b"key004999");
    assert_eq!((summary.min_seq, summary.max_seq), (0, 9999));
    assert_eq!(summary.filter_kind, "ribbon");
    assert_eq!(summary.filter_target_bits_per_key, 7.5);
    assert!(
        (7.0..8.5).contains(&summary.filter_bits_per_key),
        "{summary:?}"
    );
    assert!(summary.filter_readable);
    assert_eq!(summary.compression, Compression::Lz4);
    assert_eq!(summary.format_version, footer::FORMAT_VERSION);
}
