//! [`TableBuilder`]: writes a table in one pass over sorted entries.

use std::cmp::Ordering;
use std::path::{Path, PathBuf};

use sift_filter::KeyHash;

use super::TableOptions;
use super::block_builder::BlockBuilder;
use super::filters::key::{
    BuiltFilter, FilterLayout, FilterOutput, KeyFilterBuilder, encode_partition_index,
};
use super::filters::scan::ScanFilterBuilder;
use super::filters::value::{ValueFilterBuilder, ValueFilterEntry};
use super::footer::{FOOTER_LEN, FORMAT_VERSION, Footer};
use super::index::{Index, IndexEntry};
use super::properties::{BuiltFilterKind, Properties};
use super::table_index::{IndexLayout, write_two_level};
use super::trailer::{BlockHandle, seal_block};
use crate::error::{Error, Result};
use crate::fs::WritableFile;
use crate::key::{InternalKey, MAX_SEQNO, SeqNo, ValueKind, cmp_internal, user_key_of};
use crate::options::Compression;

/// Largest target block size honoured. A block closes after the entry that
/// reaches the target, so it holds at most this plus one entry (a 64 KiB
/// key and a 64 MiB value): well inside the `u32` restart offsets.
const MAX_BLOCK_BYTES: usize = 64 << 20;

/// Index bytes per data block beyond its key: two varint handles fields and
/// a key length, at most about 20 bytes.
const INDEX_ENTRY_OVERHEAD: u64 = 20;

/// Writes one table. Call order: [`new`](Self::new), [`add`](Self::add) per
/// entry in strictly ascending internal-key order, [`finish`](Self::finish)
/// once. Dropping it unfinished leaves a partial file for the caller to
/// delete.
pub(crate) struct TableBuilder {
    file: Box<dyn WritableFile>,
    path: PathBuf,
    options: TableOptions,
    /// Bytes written to the file so far.
    offset: u64,
    block: BlockBuilder,
    index: Vec<IndexEntry>,
    index_bytes: u64,
    /// Whether a user key's versions continue past a block's end (then
    /// the index needs internal keys to separate the blocks).
    user_key_spans_blocks: bool,
    filter: KeyFilterBuilder,
    /// Leaves of the value indexes (empty: nothing is extracted).
    values: ValueFilterBuilder,
    /// Prefix and range filters (`None` once written).
    scan: Option<ScanFilterBuilder>,
    /// Encoded last key added; `key_buf` is the scratch for the next one.
    last_key: Vec<u8>,
    key_buf: Vec<u8>,
    smallest: Vec<u8>,
    entries: u64,
    min_seq: SeqNo,
    max_seq: SeqNo,
    raw_data_bytes: u64,
    /// Scratch for a sealed block.
    sealed: Vec<u8>,
}

impl std::fmt::Debug for TableBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TableBuilder")
            .field("path", &self.path)
            .field("entries", &self.entries)
            .field("offset", &self.offset)
            .finish_non_exhaustive()
    }
}

impl TableBuilder {
    /// Starts a table in `file` (at `path`, for error messages).
    pub(crate) fn new(file: Box<dyn WritableFile>, path: PathBuf, options: TableOptions) -> Self {
        Self {
            file,
            path,
            block: BlockBuilder::new(options.restart_interval),
            filter: KeyFilterBuilder::new(options.filter, options.partition_keys),
            values: ValueFilterBuilder::new(&options.value_indexes),
            scan: Some(ScanFilterBuilder::new(&options.scan)),
            options,
            offset: 0,
            index: Vec::new(),
            index_bytes: 0,
            user_key_spans_blocks: false,
            last_key: Vec::new(),
            key_buf: Vec::new(),
            smallest: Vec::new(),
            entries: 0,
            min_seq: SeqNo::MAX,
            max_seq: 0,
            raw_data_bytes: 0,
            sealed: Vec::new(),
        }
    }

    /// Adds the next entry (strictly ascending internal keys); `hash` is the
    /// `KeyHash` of its user key, used once per distinct user key.
    ///
    /// An entry out of order, or with a sequence number past 56 bits, is
    /// [`Error::InvalidArgument`] and is not added.
    pub(crate) fn add(&mut self, key: &InternalKey, hash: KeyHash, value: &[u8]) -> Result<()> {
        if key.seq > MAX_SEQNO {
            return Err(Error::InvalidArgument(format!(
                "sequence number {} does not fit in 56 bits ({})",
                key.seq,
                self.path.display()
            )));
        }
        self.key_buf.clear();
        key.encode_into(&mut self.key_buf);
        let new_user_key =
            self.entries == 0 || user_key_of(&self.last_key) != key.user_key.as_slice();
        if self.entries > 0 && cmp_internal(&self.key_buf, &self.last_key) != Ordering::Greater {
            return Err(Error::InvalidArgument(format!(
                "table {}: key {:?}@{} added after {:?}",
                self.path.display(),
                key.user_key,
                key.seq,
                InternalKey::decode(&self.last_key)
            )));
        }
        if !new_user_key && self.block.is_empty() {
            self.user_key_spans_blocks = true;
        }
        if new_user_key {
            self.filter.add(hash);
            if let Some(scan) = &mut self.scan {
                scan.add(&key.user_key);
            }
        }
        if key.kind == ValueKind::Value && !self.values.is_empty() {
            self.values.add(value);
        }
        if self.entries == 0 {
            self.smallest.clone_from(&self.key_buf);
        }
        self.block.add(&self.key_buf, value);
        std::mem::swap(&mut self.last_key, &mut self.key_buf);
        self.entries += 1;
        self.min_seq = self.min_seq.min(key.seq);
        self.max_seq = self.max_seq.max(key.seq);
        if self.block.estimated_size() >= self.options.block_bytes.min(MAX_BLOCK_BYTES) {
            self.flush_block()?;
        }
        Ok(())
    }

    /// Bytes the file will have if finished now (about).
    pub(crate) fn estimated_size(&self) -> u64 {
        let bits = self.options.filter.bits_per_key;
        self.offset
            + self.block.estimated_size() as u64
            + self.index_bytes
            + self.filter.estimated_bytes(bits)
            + self.values.estimated_bytes()
            + 2 * self.last_key.len() as u64
            + 64
            + FOOTER_LEN as u64
    }

    /// Writes the open data block and indexes it.
    fn flush_block(&mut self) -> Result<()> {
        if self.block.is_empty() {
            return Ok(());
        }
        let raw = self.block.finish();
        self.raw_data_bytes += raw.len() as u64;
        let handle = self.write_block(&raw, self.options.compression)?;
        self.index_bytes += self.last_key.len() as u64 + INDEX_ENTRY_OVERHEAD;
        self.index.push(IndexEntry {
            last_key: self.last_key.as_slice().into(),
            handle,
        });
        self.filter.block_boundary(user_key_of(&self.last_key));
        if !self.values.is_empty() {
            self.values.block_boundary();
        }
        Ok(())
    }

    /// Seals and appends one block.
    fn write_block(&mut self, raw: &[u8], compression: Compression) -> Result<BlockHandle> {
        self.sealed.clear();
        let size = seal_block(raw, compression, &mut self.sealed) as u64;
        self.file
            .append(&self.sealed)
            .map_err(|e| Error::io(&self.path, e))?;
        let handle = BlockHandle {
            offset: self.offset,
            size,
        };
        self.offset += self.sealed.len() as u64;
        Ok(handle)
    }

    /// Writes the filter; returns its layout, handle, kind, data bytes and
    /// partition count.
    fn write_filter(&mut self) -> Result<(FilterLayout, BlockHandle, BuiltFilterKind, u64, u64)> {
        let last_user_key = user_key_of(&self.last_key).to_vec();
        let filter = std::mem::replace(
            &mut self.filter,
            KeyFilterBuilder::new(self.options.filter, 1),
        );
        let kind_of =
            |filters: &[&BuiltFilter]| BuiltFilterKind::of(filters.iter().map(|f| f.kind));
        Ok(match filter.finish(&last_user_key) {
            FilterOutput::None => (
                FilterLayout::None,
                BlockHandle::default(),
                BuiltFilterKind::None,
                0,
                0,
            ),
            FilterOutput::Whole(built) => {
                let handle = self.write_block(&built.encoded, Compression::None)?;
                (
                    FilterLayout::Whole,
                    handle,
                    kind_of(&[&built]),
                    built.data_bytes,
                    0,
                )
            }
            FilterOutput::Partitioned(partitions) => {
                let mut entries = Vec::with_capacity(partitions.len());
                for (built, last_key) in &partitions {
                    let handle = self.write_block(&built.encoded, Compression::None)?;
                    entries.push((last_key.clone(), handle));
                }
                let handle =
                    self.write_block(&encode_partition_index(&entries), Compression::None)?;
                let built: Vec<&BuiltFilter> = partitions.iter().map(|(b, _)| b).collect();
                let bytes = built.iter().map(|b| b.data_bytes).sum();
                (
                    FilterLayout::Partitioned,
                    handle,
                    kind_of(&built),
                    bytes,
                    built.len() as u64,
                )
            }
        })
    }

    /// Writes each value index's leaf and block filters; returns the
    /// directory.
    fn write_value_filters(&mut self) -> Result<Vec<ValueFilterEntry>> {
        let values = std::mem::replace(&mut self.values, ValueFilterBuilder::new(&[]));
        let mut directory = Vec::new();
        for built in values.finish() {
            let handle = self.write_block(&built.leaf, Compression::None)?;
            let blocks = self.write_block(&built.blocks, Compression::None)?;
            directory.push(ValueFilterEntry {
                index_id: built.index_id,
                handle,
                distinct_values: built.distinct_values,
                values: built.values,
                blocks: Some(blocks),
                heavy_hitters: built.heavy_hitters,
            });
        }
        Ok(directory)
    }

    /// Writes the index: whole, or in two levels (partitions of about
    /// `index_partition_bytes`) in a table whose filter is partitioned
    /// (it holds more than `partition_keys` distinct keys). Returns its
    /// handle (the top level's) and layout.
    fn write_index(&mut self, distinct_keys: u64) -> Result<(BlockHandle, IndexLayout)> {
        let user_keys = !self.user_key_spans_blocks;
        let too_long = |path: &Path, blocks| {
            Error::InvalidArgument(format!(
                "{}: the index keys of {blocks} data blocks pass 4 GiB",
                path.display()
            ))
        };
        let whole = Index::encode(&self.index, user_keys)
            .ok_or_else(|| too_long(&self.path, self.index.len()))?;
        let layout = if distinct_keys > self.options.partition_keys {
            let target = self.options.index_partition_bytes;
            IndexLayout::for_index(self.index.len(), whole.len(), target)
        } else {
            IndexLayout::Whole
        };
        let IndexLayout::TwoLevel { per_partition } = layout else {
            return Ok((self.write_block(&whole, Compression::None)?, layout));
        };
        let entries = std::mem::take(&mut self.index);
        let written = write_two_level(&entries, user_keys, per_partition, |block| {
            self.write_block(block, Compression::None)
        });
        self.index = entries;
        let top = written?.ok_or_else(|| too_long(&self.path, self.index.len()))?;
        Ok((top, layout))
    }

    /// Writes filter, value filters, index, properties and footer; syncs
    /// the file.
    pub(crate) fn finish(mut self) -> Result<Properties> {
        self.flush_block()?;
        let stored_data_bytes = self.offset;
        let distinct_keys = self.filter.distinct_keys();
        let (filter_layout, filter, filter_kind, filter_bytes, filter_partitions) =
            self.write_filter()?;
        let value_filters = self.write_value_filters()?;
        let scan_filters = match self.scan.take().and_then(ScanFilterBuilder::finish) {
            Some(block) => Some(self.write_block(&block, Compression::None)?),
            None => None,
        };
        let (index, index_layout) = self.write_index(distinct_keys)?;
        let mut props = Properties {
            entries: self.entries,
            distinct_keys,
            file_size: 0,
            smallest: std::mem::take(&mut self.smallest),
            largest: std::mem::take(&mut self.last_key),
            min_seq: if self.entries == 0 { 0 } else { self.min_seq },
            max_seq: self.max_seq,
            filter_bytes,
            data_blocks: self.index.len() as u64,
            filter_kind,
            filter_partitions,
            bits_per_key: if self.options.filter.enabled() {
                self.options.filter.bits_per_key
            } else {
                0.0
            },
            compression: self.options.compression,
            raw_data_bytes: self.raw_data_bytes,
            stored_data_bytes,
            value_filters,
            scan_filters,
        };
        let properties = self.write_block(&props.encode(), Compression::None)?;
        let footer = Footer {
            index,
            filter,
            properties,
            filter_layout,
            index_layout,
            version: FORMAT_VERSION,
        };
        self.file
            .append(&footer.encode())
            .map_err(|e| Error::io(&self.path, e))?;
        self.offset += FOOTER_LEN as u64;
        self.file.sync().map_err(|e| Error::io(&self.path, e))?;
        props.file_size = self.offset;
        Ok(props)
    }
}
