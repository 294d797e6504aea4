//! Value filters in whole tables: every extracted value is in its leaf,
//! most absent values are not, version-1 tables read as having no leaves,
//! and a damaged leaf leaves the table readable.

use std::sync::Arc;

use sift_filter::{BloomShape, Filter, KeyHash};

use super::{DIR, default_options, entry, index_entries, open, rewrite_index, write};
use crate::fs::{FaultInjectionFs, FileSystem};
use crate::key::{Entry, ValueKind};
use crate::options::Compression;
use crate::sstable::footer::{FOOTER_LEN, FORMAT_VERSION, Footer};
use crate::sstable::index::encode_older;
use crate::sstable::trailer::seal_block;
use crate::sstable::{Properties, TableFile, TableOptions, ValueLeaf};
use crate::value_def::{Extractor, IndexRecord, LeafSizing};

/// City leaves sized per table at 1%; tag leaves of one fixed shape.
fn indexes() -> Vec<IndexRecord> {
    vec![
        IndexRecord {
            id: 3,
            name: "city".into(),
            extractor: Extractor::json_field("/city"),
            sizing: LeafSizing::PerTable { fpr: 0.01 },
        },
        IndexRecord {
            id: 9,
            name: "tags".into(),
            // Two tags per entry: t<n> and u<n> for field n.
            extractor: Extractor::custom("tags", |v, out| {
                let text = String::from_utf8_lossy(v);
                if let Some(n) = text.split("\"n\":").nth(1) {
                    let n = n.trim_end_matches('}');
                    out(format!("t{n}").as_bytes());
                    out(format!("u{n}").as_bytes());
                }
            }),
            sizing: LeafSizing::Fixed(BloomShape::for_fpr(4_000, 0.01)),
        },
    ]
}

fn indexed_options() -> TableOptions {
    TableOptions {
        value_indexes: Arc::from(indexes()),
        ..default_options()
    }
}

/// Entries `k00000..`: values `{"city":"c<i % 500>","n":<i>}`, every
/// tenth one a tombstone.
fn city_entries(n: u64) -> Vec<Entry> {
    (0..n)
        .map(|i| {
            let key = format!("k{i:05}");
            if i % 10 == 9 {
                entry(key.as_bytes(), i + 1, ValueKind::Delete, b"")
            } else {
                let value = format!(r#"{{"city":"c{}","n":{i}}}"#, i % 500);
                entry(key.as_bytes(), i + 1, ValueKind::Value, value.as_bytes())
            }
        })
        .collect()
}

fn present(leaf: ValueLeaf) -> Arc<sift_filter::StandardBloom> {
    match leaf {
        ValueLeaf::Present(leaf) => leaf,
        other => panic!("expected a leaf, got {other:?}"),
    }
}

#[test]
fn heavy_hitters_are_the_most_frequent_values_counted_exactly() {
    // "big" in every even entry, "mid" in every 14th from 7, each other
    // entry a value of its own; all over many blocks.
    let entries: Vec<Entry> = (0..3_000u64)
        .map(|i| {
            let city = match i {
                _ if i % 2 == 0 => "big".to_owned(),
                _ if i % 14 == 7 => "mid".to_owned(),
                _ => format!("r{i}"),
            };
            let value = format!(r#"{{"city":"{city}"}}"#);
            entry(
                format!("k{i:05}").as_bytes(),
                i + 1,
                ValueKind::Value,
                value.as_bytes(),
            )
        })
        .collect();
    let fs = FaultInjectionFs::new();
    let (path, props) = write(&fs, 1, &entries, indexed_options());
    let city = &props.value_filters[0];
    let count = |v: &str| city.expected_values(KeyHash::of(v.as_bytes()));
    assert_eq!((count("big"), count("mid")), (1_500.0, 214.0));
    // The rest: 1,286 values, one each.
    assert_eq!(count("r1"), 1.0);
    assert_eq!(count("absent"), 1.0);
    // As the table reads them back.
    let table = open(&fs, &path).unwrap();
    let read = table.value_filters().entry(3).unwrap();
    assert_eq!(read, city);
}

#[test]
fn leaves_hold_every_extracted_value_and_few_others() {
    let fs = FaultInjectionFs::new();
    let (path, props) = write(&fs, 1, &city_entries(2_000), indexed_options());
    assert_eq!(props.value_filters.len(), 2);
    let table = open(&fs, &path).unwrap();
    let cities = present(table.value_filter(3));
    let tags = present(table.value_filter(9));
    assert!(indexes()[0].sizing.accepts(cities.shape()));
    assert_eq!(tags.shape(), BloomShape::for_fpr(4_000, 0.01));
    // City c<j> is stored by keys j, j + 500, ...: tombstones when j ends in 9.
    for i in (0..500).filter(|i| i % 10 != 9) {
        assert!(cities.may_contain(KeyHash::of(format!("c{i}").as_bytes())));
    }
    for i in (0..2_000).filter(|i| i % 10 != 9) {
        assert!(tags.may_contain(KeyHash::of(format!("t{i}").as_bytes())));
        assert!(tags.may_contain(KeyHash::of(format!("u{i}").as_bytes())));
    }
    // Tombstones carry no value: t9, t19, ... are absent unless by chance.
    let false_cities = (500..10_500)
        .filter(|i| cities.may_contain(KeyHash::of(format!("c{i}").as_bytes())))
        .count();
    assert!(
        false_cities < 100,
        "{false_cities} false positives in 10,000"
    );
    assert!(matches!(table.value_filter(4), ValueLeaf::Missing));
    // Cities whose number ends in 9 are only in tombstones: 450 distinct
    // cities, counted exactly, in 1,800 values; each tag once.
    let city = &props.value_filters[0];
    assert_eq!((city.distinct_values, city.values), (450, 1_800));
    let tag = &props.value_filters[1];
    assert_eq!((tag.distinct_values, tag.values), (3_600, 3_600));
    // The leaf is sized for 450 values: 7 probes, at most 12 bits each.
    assert_eq!(cities.shape().probes, 7);
    assert!(cities.shape().bits <= 450 * 12, "{:?}", cities.shape());
    let summary = TableFile::open_in(&fs, &path).unwrap().properties();
    assert_eq!(summary.format_version, FORMAT_VERSION);
    assert_eq!(summary.value_filters.len(), 2);
    assert!(summary.value_filters.iter().all(|v| v.readable));
    TableFile::open_in(&fs, &path).unwrap().verify().unwrap();
}

#[test]
fn tables_without_indexes_have_no_leaves() {
    let fs = FaultInjectionFs::new();
    let (path, props) = write(&fs, 1, &city_entries(100), default_options());
    assert!(props.value_filters.is_empty());
    let table = open(&fs, &path).unwrap();
    assert!(matches!(table.value_filter(3), ValueLeaf::Missing));
}

/// Rewrites a table without leaves or scan filters as version 1: the index
/// in the older layout, the properties without their empty scan filter
/// handle and empty directory, the footer saying 1.
fn downgrade(fs: &FaultInjectionFs, path: &std::path::Path) {
    let bytes = fs.contents(path).unwrap();
    let footer = Footer::decode(&bytes[bytes.len() - FOOTER_LEN..]).unwrap();
    let at = footer.properties.offset as usize;
    let mut props = bytes[at..at + footer.properties.size as usize].to_vec();
    assert_eq!(props.split_off(props.len() - 2), [0, 0], "no scan filters");
    assert_eq!(props.pop(), Some(0), "empty directory");
    let entries = index_entries(&open(fs, path).unwrap());
    rewrite_index(fs, path, &encode_older(&entries), Some(&props), 1);
}

#[test]
fn version_1_tables_read_with_every_leaf_missing() {
    let fs = FaultInjectionFs::new();
    let entries = city_entries(300);
    let (path, _) = write(&fs, 1, &entries, default_options());
    downgrade(&fs, &path);
    let table = open(&fs, &path).unwrap();
    assert_eq!(table.format_version(), 1);
    assert!(matches!(table.value_filter(3), ValueLeaf::Missing));
    for e in &entries {
        assert_eq!(
            table
                .get(&e.key.user_key, e.key.seq, &mut 0)
                .unwrap()
                .as_ref(),
            Some(e)
        );
    }
    let file = TableFile::open_in(&fs, &path).unwrap();
    assert_eq!(file.properties().format_version, 1);
    file.verify().unwrap();
}

#[test]
fn a_damaged_leaf_is_unreadable_and_reported() {
    let fs = FaultInjectionFs::new();
    let entries = city_entries(300);
    let (path, props) = write(&fs, 1, &entries, indexed_options());
    let leaf = props.value_filters[1].handle;
    let mut bytes = fs.contents(&path).unwrap();
    bytes[leaf.offset as usize + 40] ^= 0x01;
    fs.set_contents(&path, bytes).unwrap();
    let table = open(&fs, &path).unwrap();
    present(table.value_filter(3));
    assert!(matches!(table.value_filter(9), ValueLeaf::Unreadable));
    for e in &entries {
        assert_eq!(
            table
                .get(&e.key.user_key, e.key.seq, &mut 0)
                .unwrap()
                .as_ref(),
            Some(e)
        );
    }
    let file = TableFile::open_in(&fs, &path).unwrap();
    let readable: Vec<bool> = file
        .properties()
        .value_filters
        .iter()
        .map(|v| v.readable)
        .collect();
    assert_eq!(readable, [true, false]);
    let err = file.verify().unwrap_err().to_string();
    assert!(
        err.contains("value filter") && err.contains("checksum"),
        "{err}"
    );
}

#[test]
fn a_leaf_that_is_not_a_filter_is_unreadable() {
    // A block with a valid trailer whose contents are not a Bloom encoding.
    let mut block = Vec::new();
    seal_block(b"not a filter", Compression::None, &mut block);
    let fs = FaultInjectionFs::new();
    fs.create_dir_all(std::path::Path::new(DIR)).unwrap();
    let path = std::path::Path::new(DIR).join("x");
    let mut out = fs.create(&path).unwrap();
    out.append(&block).unwrap();
    drop(out);
    let file = fs.open(&path).unwrap();
    let handle = crate::sstable::trailer::BlockHandle {
        offset: 0,
        size: 12,
    };
    let entry = crate::sstable::filters::value::ValueFilterEntry {
        index_id: 1,
        handle,
        distinct_values: 0,
        values: 0,
        blocks: Some(handle),
        heavy_hitters: Default::default(),
    };
    let loaded =
        crate::sstable::filters::value::ValueFilters::load(file.as_ref(), &path, &[entry], 1, 17)
            .unwrap();
    assert!(matches!(loaded.leaf(1), ValueLeaf::Unreadable));
    assert!(loaded.blocks(1).is_none());
    let problem = loaded.problem(&path).unwrap().to_string();
    assert!(problem.contains("does not decode"), "{problem}");
    assert!(Properties::decode(&[], 2).is_err());
}

#[test]
fn block_filters_hold_each_block_s_values_and_rule_out_others() {
    let fs = FaultInjectionFs::new();
    let entries = city_entries(2_000);
    let (path, props) = write(&fs, 1, &entries, indexed_options());
    let table = open(&fs, &path).unwrap();
    let blocks = table.block_filters(3).unwrap();
    assert_eq!(blocks.len() as u64, props.data_blocks);
    assert!(props.data_blocks > 10, "{}", props.data_blocks);
    // Every city is in the filter of the block its entry is in.
    let mut positives = 0;
    let mut probes = 0;
    for at in 0..table.data_blocks() {
        let mut held = std::collections::BTreeSet::new();
        table
            .for_each_in_block(at, |key, value| {
                if key.kind == ValueKind::Value {
                    let text = String::from_utf8_lossy(value);
                    let city = text.split('"').nth(3).unwrap().to_owned();
                    assert!(
                        blocks.may_contain(at, KeyHash::of(city.as_bytes())),
                        "{city} in block {at}"
                    );
                    held.insert(city);
                }
            })
            .unwrap();
        // Cities of other blocks: false positives at the block rate.
        for j in 0..500 {
            let city = format!("c{j}");
            if !held.contains(&city) {
                probes += 1;
                positives += usize::from(blocks.may_contain(at, KeyHash::of(city.as_bytes())));
            }
        }
    }
    // Rate min(1%, 0.5 / blocks); with ~20 blocks, 1%. Over ~9,000 probes
    // the binomial standard deviation is 0.1 points: 2% is ten of them.
    let rate = positives as f64 / probes as f64;
    assert!(rate < 0.02, "{rate} over {probes}");
}

#[test]
fn damaged_block_filters_make_every_block_a_candidate_and_are_reported() {
    let fs = FaultInjectionFs::new();
    let entries = city_entries(300);
    let (path, props) = write(&fs, 1, &entries, indexed_options());
    let blocks = props.value_filters[0].blocks.unwrap();
    let mut bytes = fs.contents(&path).unwrap();
    bytes[blocks.offset as usize + 3] ^= 0x01;
    fs.set_contents(&path, bytes).unwrap();
    let table = open(&fs, &path).unwrap();
    present(table.value_filter(3));
    assert!(
        table.block_filters(3).is_none(),
        "damaged: read every block"
    );
    assert!(table.block_filters(9).is_some());
    let file = TableFile::open_in(&fs, &path).unwrap();
    let summary = file.properties();
    assert!(!summary.value_filters[0].block_filters_readable);
    assert!(summary.value_filters[1].block_filters_readable);
    let err = file.verify().unwrap_err().to_string();
    assert!(
        err.contains("value filter") && err.contains("checksum"),
        "{err}"
    );
}
