//! One table: its own checks ([`TableFile::verify`]), its agreement with
//! the manifest's record of it, and its value index leaves against the
//! values its entries hold.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;
use std::sync::Arc;

use sift_filter::{Filter, KeyHash, StandardBloom};

use super::Findings;
use crate::error::Error;
use crate::key::{ValueKind, user_key_of};
use crate::manifest::TableMeta;
use crate::sstable::BlockFilters;
use crate::sstable::{Table, TableFile, ValueLeaf};
use crate::value_def::{Extractor, IndexRecord};

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
        // `verify` stops at the first problem; every other data block that
        // cannot be read is named too, so one run shows all the damage.
        let first = match &err {
            Error::Corruption { offset, .. } => Some(*offset),
            _ => None,
        };
        out.error(err, path);
        // The leaves are read from the same blocks: checking them would
        // meet the same damage again.
        return other_unreadable_blocks(table, first, out);
    }
    check_leaves(table, leaves, out);
}

/// Reports every data block of `table` that cannot be read (its checksum,
/// its decoding), but the one at offset `first`, already reported.
fn other_unreadable_blocks(table: &Table, first: Option<u64>, out: &mut Findings) {
    for at in 0..table.data_blocks() {
        let offset = table.index_part(at).ok().and_then(|part| part.handle(at));
        if offset.map(|h| h.offset) == first {
            continue;
        }
        if let Err(err) = table.read_data_block(at) {
            out.error(err, table.path());
        }
    }
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

/// One index's filters being checked.
struct Leaf<'a> {
    index: &'a IndexRecord,
    filter: Arc<StandardBloom>,
    /// The block filters, if the table has readable ones.
    blocks: Option<Arc<BlockFilters>>,
    /// Offsets of the leaf's and the block filters' blocks.
    offset: Option<u64>,
    blocks_offset: Option<u64>,
    /// Values the leaf (or the block filter of their block) answered "no"
    /// for, with the first of them: key and value.
    misses: Misses,
    block_misses: Misses,
}

/// Values a filter wrongly ruled out.
#[derive(Default)]
struct Misses {
    count: u64,
    first: Option<(Vec<u8>, Vec<u8>)>,
}

impl Misses {
    fn add(&mut self, key: &[u8], value: &[u8]) {
        self.count += 1;
        self.first
            .get_or_insert_with(|| (key.to_vec(), value.to_vec()));
    }

    /// The problem to report, if any value was missed.
    fn report(&self, what: &str, index: &str) -> Option<String> {
        let (key, value) = self.first.as_ref()?;
        Some(format!(
            "the {what} of index {index:?} misses {} value(s) the table holds (a search would \
             not find them), first {} of key {}",
            self.count,
            quote(value),
            quote(key)
        ))
    }
}

/// Asks every present leaf of a checkable index, and the block filter of
/// the entry's block, for every value extracted from the table's `Value`
/// entries (each was added when the table was written, so a "no" is a
/// lost value); reports each filter that misses one, and a leaf whose
/// shape its index's sizing cannot produce.
fn check_leaves(table: &Arc<Table>, check: &mut LeafCheck<'_>, out: &mut Findings) {
    let path = table.path();
    let filters = table.value_filters();
    let mut present = Vec::new();
    for &index in &check.checkable {
        let entry = filters.entry(index.id);
        let offset = entry.map(|e| e.handle.offset);
        match table.value_filter(index.id) {
            ValueLeaf::Present(filter) if !index.sizing.accepts(filter.shape()) => out.problem(
                path,
                offset,
                format!(
                    "the leaf of index {:?} has {} bits and {} probes, which leaves {} do not",
                    index.name,
                    filter.shape().bits,
                    filter.shape().probes,
                    index.sizing.description()
                ),
            ),
            ValueLeaf::Present(filter) => present.push(Leaf {
                index,
                filter,
                blocks: table.block_filters(index.id).cloned(),
                offset,
                blocks_offset: entry.and_then(|e| e.blocks).map(|h| h.offset),
                misses: Misses::default(),
                block_misses: Misses::default(),
            }),
            ValueLeaf::Missing => *check.missing.entry(&index.name).or_default() += 1,
            // `TableFile::verify` reported it.
            ValueLeaf::Unreadable => {}
        }
    }
    if present.is_empty() {
        return;
    }
    for at in 0..table.data_blocks() {
        let walked = table.for_each_in_block(at, |key, value| {
            if key.kind != ValueKind::Value {
                return;
            }
            for leaf in &mut present {
                leaf.index.extractor.extract(value, &mut |v| {
                    let hash = KeyHash::of(v);
                    if !leaf.filter.may_contain(hash) {
                        leaf.misses.add(key.user_key, v);
                    }
                    if leaf
                        .blocks
                        .as_ref()
                        .is_some_and(|b| !b.may_contain(at, hash))
                    {
                        leaf.block_misses.add(key.user_key, v);
                    }
                });
            }
        });
        if let Err(err) = walked {
            return out.error(err, path);
        }
    }
    for leaf in present {
        let name = &leaf.index.name;
        if let Some(problem) = leaf.misses.report("leaf", name) {
            out.problem(path, leaf.offset, problem);
        }
        if let Some(problem) = leaf.block_misses.report("block filters", name) {
            out.problem(path, leaf.blocks_offset, problem);
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
