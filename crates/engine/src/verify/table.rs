//! One table: its own checks ([`TableFile::verify`]), its agreement with
//! the manifest's record of it, and its value index leaves against the
//! values its entries hold.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::ops::Bound;
use std::path::Path;
use std::sync::Arc;

use sift_filter::{Filter, KeyHash, StandardBloom};

use super::Findings;
use crate::key::{ValueKind, user_key_of};
use crate::manifest::TableMeta;
use crate::sstable::{Table, TableFile, ValueLeaf};
use crate::value::{Extractor, IndexRecord};

/// Longest part of a key or value quoted in a problem: enough to find it,
/// short enough for one line.
const QUOTE_BYTES: usize = 48;

/// The value indexes whose leaves can be checked, and what could not be.
#[derive(Debug)]
pub(super) struct LeafCheck<'a> {
    /// Indexes with a built-in extractor.
    checkable: Vec<&'a IndexRecord>,
    /// Indexes with a custom extractor (its function is not stored).
    custom: Vec<&'a IndexRecord>,
    /// Per index name, tables with no leaf yet (written before the index).
    missing: BTreeMap<&'a str, u64>,
}

impl<'a> LeafCheck<'a> {
    /// Sorts `indexes` into those that can be checked and those that cannot.
    pub(super) fn new(indexes: &'a [IndexRecord]) -> Self {
        let (custom, checkable) = indexes
            .iter()
            .partition(|i| matches!(i.extractor, Extractor::Custom { .. }));
        Self {
            checkable,
            custom,
            missing: BTreeMap::new(),
        }
    }

    /// Notes what was not checked.
    pub(super) fn finish(self, out: &mut Findings) {
        for index in self.custom {
            out.note(format!(
                "index {:?} uses the {} extractor, whose function is not stored: its leaves \
                 were checked for damage but not against the values",
                index.name,
                index.extractor.description()
            ));
        }
        for (name, tables) in self.missing {
            out.note(format!(
                "{tables} table(s) have no leaf of index {name:?} yet (written before it; the \
                 backfill adds it; searches scan them meanwhile)"
            ));
        }
    }
}

/// Checks the table at `path`, reporting into `out`: one problem if it
/// cannot be opened, else any disagreement with `meta` (the manifest's
/// record, if known), the first problem [`TableFile::verify`] finds, and
/// each value index leaf that misses a value of the table's entries.
pub(super) fn check(
    fs: &dyn crate::fs::FileSystem,
    path: &Path,
    meta: Option<&TableMeta>,
    leaves: &mut LeafCheck<'_>,
    out: &mut Findings,
) {
    let file = match TableFile::open_in(fs, path) {
        Ok(file) => file,
        Err(err) => return out.error(err, path),
    };
    let table = file.table();
    if let Some(meta) = meta {
        check_meta(table, meta, out);
    }
    if let Err(err) = file.verify() {
        // The leaves are read from the same blocks: checking them would
        // meet the same damage again.
        return out.error(err, path);
    }
    check_leaves(table, leaves, out);
}

/// Reports where the table's properties disagree with the manifest.
fn check_meta(table: &Table, meta: &TableMeta, out: &mut Findings) {
    let p = table.properties();
    let mut differences = Vec::new();
    if p.file_size != meta.file_size {
        differences.push(format!(
            "{} bytes, the manifest says {}",
            p.file_size, meta.file_size
        ));
    }
    if p.entries != meta.entries {
        differences.push(format!(
            "{} entries, the manifest says {}",
            p.entries, meta.entries
        ));
    }
    if p.smallest != meta.smallest || p.largest != meta.largest {
        differences.push(format!(
            "keys {}..={}, the manifest says {}..={}",
            quote(user_key_of(&p.smallest)),
            quote(user_key_of(&p.largest)),
            quote(user_key_of(&meta.smallest)),
            quote(user_key_of(&meta.largest)),
        ));
    }
    if (p.min_seq, p.max_seq) != (meta.min_seq, meta.max_seq) {
        differences.push(format!(
            "sequence numbers {}..={}, the manifest says {}..={}",
            p.min_seq, p.max_seq, meta.min_seq, meta.max_seq
        ));
    }
    if !differences.is_empty() {
        out.problem(
            table.path(),
            Some(table.properties_offset()),
            format!("disagrees with the manifest: {}", differences.join("; ")),
        );
    }
}

/// One leaf being checked.
struct Leaf<'a> {
    index: &'a IndexRecord,
    filter: Arc<StandardBloom>,
    /// Offset of the leaf's block.
    offset: Option<u64>,
    /// Values the leaf answered "no" for.
    misses: u64,
    /// The first of them: key and value.
    first_miss: Option<(Vec<u8>, Vec<u8>)>,
}

/// Asks every present leaf of a checkable index for every value extracted
/// from the table's `Value` entries (each was added when the table was
/// written, so a "no" is a lost value), and reports each leaf that misses
/// one, and one whose shape is not its index's.
fn check_leaves(table: &Arc<Table>, check: &mut LeafCheck<'_>, out: &mut Findings) {
    let path = table.path();
    let directory = &table.properties().value_filters;
    let offset_of = |id: u64| {
        directory
            .iter()
            .find(|e| e.index_id == id)
            .map(|e| e.handle.offset)
    };
    let mut present = Vec::new();
    for &index in &check.checkable {
        match table.value_filter(index.id) {
            ValueLeaf::Present(filter) if filter.shape() != index.shape => out.problem(
                path,
                offset_of(index.id),
                format!(
                    "the leaf of index {:?} has {} bits and {} probes, the index {} and {}",
                    index.name,
                    filter.shape().bits,
                    filter.shape().probes,
                    index.shape.bits,
                    index.shape.probes
                ),
            ),
            ValueLeaf::Present(filter) => present.push(Leaf {
                index,
                filter,
                offset: offset_of(index.id),
                misses: 0,
                first_miss: None,
            }),
            ValueLeaf::Missing => *check.missing.entry(&index.name).or_default() += 1,
            // `TableFile::verify` reported it.
            ValueLeaf::Unreadable => {}
        }
    }
    if present.is_empty() {
        return;
    }
    for item in table.iter(Bound::Unbounded, Bound::Unbounded) {
        let entry = match item {
            Ok(entry) => entry,
            Err(err) => return out.error(err, path),
        };
        if entry.key.kind != ValueKind::Value {
            continue;
        }
        for leaf in &mut present {
            let Leaf {
                index,
                filter,
                misses,
                first_miss,
                ..
            } = leaf;
            index.extractor.extract(&entry.value, &mut |value| {
                if !filter.may_contain(KeyHash::of(value)) {
                    *misses += 1;
                    first_miss.get_or_insert_with(|| (entry.key.user_key.clone(), value.to_vec()));
                }
            });
        }
    }
    for leaf in present {
        if let Some((key, value)) = leaf.first_miss {
            out.problem(
                path,
                leaf.offset,
                format!(
                    "the leaf of index {:?} misses {} value(s) the table holds (a search would \
                     not find them), first {} of key {}",
                    leaf.index.name,
                    leaf.misses,
                    quote(&value),
                    quote(&key)
                ),
            );
        }
    }
}

/// `bytes` for a message: quoted, escaped, cut at [`QUOTE_BYTES`].
fn quote(bytes: &[u8]) -> String {
    let shown = bytes.get(..QUOTE_BYTES).unwrap_or(bytes);
    let mut text = format!("{:?}", String::from_utf8_lossy(shown));
    if shown.len() < bytes.len() {
        let _ = write!(text, "... ({} bytes)", bytes.len());
    }
    text
}
