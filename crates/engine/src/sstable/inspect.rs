//! The public inspection API: a table opened on its own, for `sift
//! dump-sst`, `sift verify` and the `open_table` fuzz target.

use std::cmp::Ordering;
use std::ops::Bound;
use std::path::Path;
use std::sync::Arc;

use sift_filter::KeyHash;

use super::cache::BlockCache;
use super::table::Table;
use crate::error::{Error, Result};
use crate::fs::{FileSystem, StdFs};
use crate::key::{ParsedKey, SeqNo, ValueKind, cmp_internal};
use crate::options::Compression;

/// Block cache of a table opened for inspection: a few blocks, since
/// `entries` and `verify` read each block once, in order.
const INSPECT_CACHE_BYTES: u64 = 1 << 20;

/// A table opened on its own for inspection (`sift dump-sst`, `sift verify`).
#[derive(Debug)]
pub struct TableFile {
    table: Arc<Table>,
}

/// What [`TableFile::properties`] reports.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct TableSummary {
    /// Entries (every version and tombstone).
    pub entries: u64,
    /// Distinct user keys.
    pub distinct_keys: u64,
    /// Data blocks.
    pub data_blocks: u64,
    /// File size in bytes.
    pub file_size: u64,
    /// Smallest user key (empty for an empty table).
    pub smallest_user_key: Vec<u8>,
    /// Largest user key (empty for an empty table).
    pub largest_user_key: Vec<u8>,
    /// Smallest sequence number.
    pub min_seq: SeqNo,
    /// Largest sequence number.
    pub max_seq: SeqNo,
    /// Key filter kind: `none`, `blocked_bloom`, `ribbon`, `binary_fuse`,
    /// or `mixed` (filters of more than one kind: Ribbon or Binary Fuse
    /// partitions with blocked Bloom fallbacks, say).
    pub filter_kind: String,
    /// Filter partitions (0: none or one whole-table filter).
    pub filter_partitions: u64,
    /// Bytes of key filter data (without encoding envelopes).
    pub filter_bytes: u64,
    /// Filter bits per distinct key, measured: `8 · filter_bytes / distinct_keys`.
    pub filter_bits_per_key: f64,
    /// Filter bits per key the table was built for.
    pub filter_target_bits_per_key: f64,
    /// Whether every part of the key filter could be read (if not, the
    /// table answers "may contain" where it could not).
    pub filter_readable: bool,
    /// Block compression the table was written with.
    pub compression: Compression,
    /// Data bytes before compression.
    pub raw_data_bytes: u64,
    /// Data bytes as stored, block trailers included.
    pub stored_data_bytes: u64,
    /// Table format version.
    pub format_version: u32,
    /// The value index leaves, by index id ascending.
    pub value_filters: Vec<ValueFilterSummary>,
}

/// One value index's filters in a table, as [`TableSummary`] reports them.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ValueFilterSummary {
    /// The index's id ([`IndexInfo::id`](crate::IndexInfo::id)).
    pub index_id: u64,
    /// Distinct values the table holds: counted when the table was written
    /// (format 3), estimated from the leaf's fill before.
    pub distinct_values: u64,
    /// Values extracted, repeats included (0 before format 3).
    pub values: u64,
    /// Whether the leaf could be read (if not, searches read the table).
    pub readable: bool,
    /// Offset of the leaf's block in the file.
    pub offset: u64,
    /// Size of the leaf's block, trailer excluded.
    pub size: u64,
    /// The block filters' block (offset, size), if the table has them.
    pub block_filters: Option<(u64, u64)>,
    /// Whether the block filters could be read (true when there are none:
    /// a table of format 2 reads every block by design).
    pub block_filters_readable: bool,
}

impl TableFile {
    /// Opens a table file through the given file layer.
    ///
    /// # Errors
    /// [`Error::Io`](crate::Error::Io), [`Error::Corruption`](crate::Error::Corruption).
    pub fn open_in(fs: &dyn FileSystem, path: &Path) -> Result<Self> {
        let cache = Arc::new(BlockCache::new(INSPECT_CACHE_BYTES));
        let table = Table::open(fs, path.to_path_buf(), 0, cache)?;
        Ok(Self {
            table: Arc::new(table),
        })
    }

    /// Opens a table file on the operating system's file system.
    ///
    /// # Errors
    /// As [`open_in`](Self::open_in).
    pub fn open(path: &Path) -> Result<Self> {
        Self::open_in(&StdFs, path)
    }

    /// The open table, for checks that need its internals (`verify`'s
    /// value filter check).
    pub(crate) fn table(&self) -> &Arc<Table> {
        &self.table
    }

    /// Summary of the table.
    #[must_use]
    pub fn properties(&self) -> TableSummary {
        let p = self.table.properties();
        let filter_bits_per_key = if p.distinct_keys == 0 {
            0.0
        } else {
            p.filter_bytes as f64 * 8.0 / p.distinct_keys as f64
        };
        TableSummary {
            entries: p.entries,
            distinct_keys: p.distinct_keys,
            data_blocks: p.data_blocks,
            file_size: p.file_size,
            smallest_user_key: p.smallest_user_key().to_vec(),
            largest_user_key: p.largest_user_key().to_vec(),
            min_seq: p.min_seq,
            max_seq: p.max_seq,
            filter_kind: p.filter_kind.name().to_owned(),
            filter_partitions: p.filter_partitions,
            filter_bytes: p.filter_bytes,
            filter_bits_per_key,
            filter_target_bits_per_key: p.bits_per_key,
            filter_readable: self.table.filter_problem().is_ok_and(|p| p.is_none()),
            compression: p.compression,
            raw_data_bytes: p.raw_data_bytes,
            stored_data_bytes: p.stored_data_bytes,
            format_version: self.table.format_version(),
            value_filters: p
                .value_filters
                .iter()
                .zip(self.table.value_filters().ids())
                .map(
                    |(entry, (_, readable, blocks_readable))| ValueFilterSummary {
                        index_id: entry.index_id,
                        distinct_values: entry.distinct_values,
                        values: entry.values,
                        readable,
                        offset: entry.handle.offset,
                        size: entry.handle.size,
                        block_filters: entry.blocks.map(|h| (h.offset, h.size)),
                        block_filters_readable: blocks_readable,
                    },
                )
                .collect(),
        }
    }

    /// Every entry: (user key, sequence number, value or `None` for a tombstone).
    pub fn entries(&self) -> impl Iterator<Item = Result<(Vec<u8>, SeqNo, Option<Vec<u8>>)>> + '_ {
        self.table
            .iter(Bound::Unbounded, Bound::Unbounded)
            .map(|item| {
                item.map(|entry| {
                    let value = match entry.key.kind {
                        ValueKind::Value => Some(entry.value),
                        ValueKind::Delete => None,
                    };
                    (entry.key.user_key, entry.key.seq, value)
                })
            })
    }

    /// Reads every block and checks checksums and the filter against every key.
    ///
    /// Checks, in order: each data block's checksum and entries, that keys
    /// ascend strictly across the table and each block ends at its index
    /// key (and, where the index holds user keys, that no user key
    /// continues into the next block), that the counts, key range and sequence range match the
    /// properties, that the filter could be read, and that it answers "may
    /// contain" for every user key, that the scan filters could be read and
    /// hold every key (its prefix, its range point), and that every value filter could be
    /// read (a leaf cannot be checked against the values without its
    /// extractor).
    ///
    /// # Errors
    /// The first problem found, as [`Error::Corruption`] (or
    /// [`Error::Io`]).
    pub fn verify(&self) -> Result<()> {
        let table = &self.table;
        let path = table.path();
        let mut previous: Option<Vec<u8>> = None;
        let (mut entries, mut distinct) = (0u64, 0u64);
        let (mut min_seq, mut max_seq) = (SeqNo::MAX, 0);
        let mut smallest = None;
        let parts = table.checked_index()?;
        let user_keys = parts
            .first()
            .is_some_and(|(index, _)| index.holds_user_keys());
        for at in 0..table.data_blocks() {
            let part = table.index_part(at)?;
            let offset = part.handle(at).map_or(0, |h| h.offset);
            let block = table.read_data_block(at)?;
            let mut first_in_block = true;
            for item in block.entries() {
                let (key, _) = item.map_err(|c| c.in_file(path, offset))?;
                let parsed = ParsedKey::parse(&key).ok_or_else(|| {
                    Error::corruption(path, offset, "stored key is not an internal key")
                })?;
                let new_user_key = match &previous {
                    None => true,
                    Some(prev) => {
                        if cmp_internal(prev, &key) != Ordering::Less {
                            return Err(Error::corruption(path, offset, "keys out of order"));
                        }
                        ParsedKey::parse(prev).is_none_or(|p| p.user_key != parsed.user_key)
                    }
                };
                if first_in_block && !new_user_key && user_keys {
                    return Err(Error::corruption(
                        path,
                        offset,
                        "a user key continues past its block, but the index holds user keys",
                    ));
                }
                first_in_block = false;
                if new_user_key {
                    distinct += 1;
                    if !table.may_contain(parsed.user_key, KeyHash::of(parsed.user_key)) {
                        return Err(Error::corruption(
                            path,
                            offset,
                            format!("the key filter misses key {:?}", parsed.user_key),
                        ));
                    }
                    if let Some(filter) = table.scan_filters().misses(parsed.user_key) {
                        return Err(Error::corruption(
                            path,
                            offset,
                            format!("the {filter} misses key {:?}", parsed.user_key),
                        ));
                    }
                }
                entries += 1;
                min_seq = min_seq.min(parsed.seq);
                max_seq = max_seq.max(parsed.seq);
                smallest.get_or_insert_with(|| key.clone());
                previous = Some(key);
            }
            if !previous.as_deref().is_some_and(|key| part.key_is(at, key)) {
                return Err(Error::corruption(
                    path,
                    offset,
                    "block does not end at its index key",
                ));
            }
        }
        let p = table.properties();
        let agrees = entries == p.entries
            && distinct == p.distinct_keys
            && smallest.unwrap_or_default() == p.smallest
            && previous.unwrap_or_default() == p.largest
            && (entries == 0 || (min_seq == p.min_seq && max_seq == p.max_seq));
        if !agrees {
            return Err(Error::corruption(
                path,
                table.properties_offset(),
                "properties disagree with the data blocks",
            ));
        }
        match table
            .filter_problem()?
            .or_else(|| table.value_filters().problem(path))
            .or_else(|| table.scan_filters().problem(path))
        {
            Some(problem) => Err(problem),
            None => Ok(()),
        }
    }
}
