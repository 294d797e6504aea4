//! Value filters in whole tables: every extracted value is in its leaf,
//! most absent values are not, version-1 tables read as having no leaves,
//! and a damaged leaf leaves the table readable.

use std::sync::Arc;

use sift_filter::{BloomShape, Filter, KeyHash};

use super::{DIR, default_options, entry, open, write};
use crate::fs::{FaultInjectionFs, FileSystem};
use crate::key::{Entry, ValueKind};
use crate::options::Compression;
use crate::sstable::footer::{FOOTER_LEN, Footer};
use crate::sstable::trailer::seal_block;
use crate::sstable::{Properties, TableFile, TableOptions, ValueLeaf};
use crate::value::{Extractor, IndexRecord};

fn indexes() -> Vec<IndexRecord> {
    let shape = BloomShape::for_fpr(2_000, 0.01);
    vec![
        IndexRecord {
            id: 3,
            name: "city".into(),
            extractor: Extractor::json_field("/city"),
            shape,
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
            shape,
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
fn leaves_hold_every_extracted_value_and_few_others() {
    let fs = FaultInjectionFs::new();
    let (path, props) = write(&fs, 1, &city_entries(2_000), indexed_options());
    assert_eq!(props.value_filters.len(), 2);
    let table = open(&fs, &path).unwrap();
    let cities = present(table.value_filter(3));
    let tags = present(table.value_filter(9));
    assert_eq!(cities.shape(), indexes()[0].shape);
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
    // The directory's distinct counts come from the fill ratio.
    let city_count = props.value_filters[0].distinct_values;
    assert!((450..=550).contains(&city_count), "{city_count}");
    let summary = TableFile::open_in(&fs, &path).unwrap().properties();
    assert_eq!(summary.format_version, 2);
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

/// Rewrites a version-2 table without leaves as version 1: the properties
/// lose their empty directory, the footer says 1.
fn downgrade(fs: &FaultInjectionFs, path: &std::path::Path) {
    let bytes = fs.contents(path).unwrap();
    let footer_at = bytes.len() - FOOTER_LEN;
    let mut footer = Footer::decode(&bytes[footer_at..]).unwrap();
    let props_at = footer.properties.offset as usize;
    let mut raw = bytes[props_at..props_at + footer.properties.size as usize].to_vec();
    assert_eq!(raw.pop(), Some(0), "empty directory");
    let mut out = bytes[..props_at].to_vec();
    footer.properties.size = seal_block(&raw, Compression::None, &mut out) as u64;
    footer.version = 1;
    out.extend_from_slice(&footer.encode());
    fs.set_contents(path, out).unwrap();
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
    let entry = crate::value::ValueFilterEntry {
        index_id: 1,
        handle: crate::sstable::trailer::BlockHandle {
            offset: 0,
            size: 12,
        },
        distinct_values: 0,
    };
    let loaded = crate::value::ValueFilters::load(file.as_ref(), &path, &[entry], 17).unwrap();
    assert!(matches!(loaded.leaf(1), ValueLeaf::Unreadable));
    let problem = loaded.problem(&path).unwrap().to_string();
    assert!(problem.contains("does not decode"), "{problem}");
    assert!(Properties::decode(&[], 2).is_err());
}
