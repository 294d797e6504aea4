//! STUB — to be replaced. SSTables: sorted, immutable files of entries with a key filter.

use std::ops::Bound;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use sift_filter::KeyHash;

use crate::error::Result;
use crate::fs::{FileSystem, WritableFile};
use crate::key::{Entry, InternalKey, SeqNo};
use crate::options::Compression;

/// Cache of decoded data blocks shared by every table of a database.
#[derive(Debug)]
pub(crate) struct BlockCache {}

impl BlockCache {
    /// A cache holding about `capacity_bytes` of blocks.
    pub(crate) fn new(capacity_bytes: u64) -> Self {
        todo!()
    }
}

/// Which key filter a new table gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FilterKindChoice {
    /// No filter: every probe answers "maybe".
    None,
    /// Cache-line blocked Bloom.
    BlockedBloom,
    /// Ribbon (falls back to blocked Bloom when not smaller).
    Ribbon,
}

/// A filter kind and its bits per key.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct FilterChoice {
    /// Kind.
    pub kind: FilterKindChoice,
    /// Bits per key.
    pub bits_per_key: f64,
}

/// How a table is written.
#[derive(Debug, Clone)]
pub(crate) struct TableOptions {
    /// Target uncompressed data block size.
    pub block_bytes: usize,
    /// Keys between restart points.
    pub restart_interval: usize,
    /// Block compression.
    pub compression: Compression,
    /// Key filter.
    pub filter: FilterChoice,
    /// Tables with more keys than this get a partitioned filter.
    pub partition_keys: u64,
}

/// What a finished table holds (also stored in its properties block).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Properties {
    /// Entries.
    pub entries: u64,
    /// Distinct user keys (what the filter holds).
    pub distinct_keys: u64,
    /// File size.
    pub file_size: u64,
    /// Smallest internal key, encoded.
    pub smallest: Vec<u8>,
    /// Largest internal key, encoded.
    pub largest: Vec<u8>,
    /// Smallest sequence number.
    pub min_seq: SeqNo,
    /// Largest sequence number.
    pub max_seq: SeqNo,
    /// Bytes of key filter data.
    pub filter_bytes: u64,
}

/// Writes one table.
pub(crate) struct TableBuilder {}

impl TableBuilder {
    /// Starts a table in `file` (at `path`, for error messages).
    pub(crate) fn new(file: Box<dyn WritableFile>, path: PathBuf, options: TableOptions) -> Self {
        todo!()
    }
    /// Adds the next entry (strictly ascending internal keys); `hash` is the KeyHash of its user key.
    pub(crate) fn add(&mut self, key: &InternalKey, hash: KeyHash, value: &[u8]) -> Result<()> {
        todo!()
    }
    /// Bytes the file will have if finished now (about).
    pub(crate) fn estimated_size(&self) -> u64 {
        todo!()
    }
    /// Writes filter, index, properties and footer; syncs the file.
    pub(crate) fn finish(self) -> Result<Properties> {
        todo!()
    }
}

/// An open table: index and filter pinned in memory, data blocks read through the cache.
#[derive(Debug)]
pub(crate) struct Table {}

impl Table {
    /// Opens `path`, reading and checking footer, index, filter and properties.
    pub(crate) fn open(
        fs: &dyn FileSystem,
        path: PathBuf,
        id: u64,
        cache: Arc<BlockCache>,
    ) -> Result<Self> {
        todo!()
    }
    /// `false` only if the table certainly holds no version of `user_key`.
    pub(crate) fn may_contain(&self, user_key: &[u8], hash: KeyHash) -> bool {
        todo!()
    }
    /// Newest version of `user_key` at or below `seq`; adds data blocks read to `blocks_read`.
    pub(crate) fn get(
        &self,
        user_key: &[u8],
        seq: SeqNo,
        blocks_read: &mut u64,
    ) -> Result<Option<Entry>> {
        todo!()
    }
    /// Entries with user keys within the bounds, double-ended, owning an `Arc` of the table.
    pub(crate) fn iter(
        self: &Arc<Self>,
        lower: Bound<Vec<u8>>,
        upper: Bound<Vec<u8>>,
    ) -> TableIter {
        todo!()
    }
    /// The file.
    pub(crate) fn path(&self) -> &Path {
        todo!()
    }
    /// Properties.
    pub(crate) fn properties(&self) -> &Properties {
        todo!()
    }
}

/// Iterator over a table's entries.
pub(crate) struct TableIter {}

impl Iterator for TableIter {
    type Item = Result<Entry>;
    fn next(&mut self) -> Option<Self::Item> {
        todo!()
    }
}

impl DoubleEndedIterator for TableIter {
    fn next_back(&mut self) -> Option<Self::Item> {
        todo!()
    }
}

/// A table opened on its own for inspection (`sift dump-sst`, `sift verify`).
#[derive(Debug)]
pub struct TableFile {}

/// What [`TableFile::properties`] reports.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct TableSummary {}

impl TableFile {
    /// Opens a table file through the given file layer.
    ///
    /// # Errors
    /// [`Error::Io`](crate::Error::Io), [`Error::Corruption`](crate::Error::Corruption).
    pub fn open_in(fs: &dyn FileSystem, path: &Path) -> Result<Self> {
        todo!()
    }
    /// Summary of the table.
    #[must_use]
    pub fn properties(&self) -> TableSummary {
        todo!()
    }
    /// Every entry: (user key, sequence number, value or `None` for a tombstone).
    pub fn entries(&self) -> impl Iterator<Item = Result<(Vec<u8>, SeqNo, Option<Vec<u8>>)>> + '_ {
        std::iter::empty()
    }
    /// Reads every block and checks checksums and the filter against every key.
    ///
    /// # Errors
    /// The first problem found.
    pub fn verify(&self) -> Result<()> {
        todo!()
    }
}
