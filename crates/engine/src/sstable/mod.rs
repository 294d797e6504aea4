//! SSTables: sorted, immutable files of entries with a key filter.
//!
//! A table is written once by a [`TableBuilder`] in one pass over entries
//! sorted by internal key, then read by a [`Table`]: its properties and key
//! filter (or the directory of its partitions) are read at open, its index
//! and filter partitions at first use as pieces that a budget keeps or
//! drops on their own (`piece`), its data blocks on demand through the
//! shared [`BlockCache`]. The file, front to back:
//!
//! ```text
//! data block 0 | ... | data block n-1      entries, prefix-compressed (block.rs)
//! filter block, or filter partitions + partition index   (filters/key/)
//! value filter blocks, one per index        (filters/value/)
//! scan filters: prefix and range filter    (filters/scan/)
//! index block, or index partitions + top level   last key of each data
//!                                          block -> handle (table_index.rs)
//! properties block                         counts, key range, filter facts,
//!                                          value filter directory
//! footer (64 bytes)                        handles, format version, magic
//! ```
//!
//! Every block is followed by a 5-byte trailer (compression byte, checksum).
//! `docs/format-sstable.md` describes every byte. Decoders of file bytes
//! never panic: damage is [`Error::Corruption`](crate::Error::Corruption)
//! naming the file and offset, except in the key filter, whose damage only
//! turns it into "may contain" for every key (a filter may cost a read,
//! never lose a key).

mod block;
mod block_builder;
mod builder;
mod cache;
pub(crate) mod filters;
mod footer;
pub(crate) mod index;
mod inspect;
mod iter;
mod open_files;
pub(crate) mod piece;
mod properties;
mod table;
mod table_index;
mod trailer;

#[cfg(test)]
mod tests;

pub(crate) use builder::TableBuilder;
pub(crate) use cache::BlockCache;
pub(crate) use filters::scan::ScanProbe;
pub(crate) use filters::value::{BlockFilters, ValueLeaf};
pub use inspect::{TableFile, TableSummary, ValueFilterSummary};
pub(crate) use iter::{SharedBounds, TableIter};
pub(crate) use open_files::OpenFiles;
#[allow(
    unused_imports,
    reason = "the stub named it here; the db layer reaches it through `Table::properties`"
)]
pub(crate) use properties::Properties;
pub(crate) use table::Table;
pub(crate) use table_index::INDEX_PARTITION_BYTES;
pub(crate) use trailer::{BlockHandle, read_block};

use std::sync::Arc;

use crate::filter_policy::{FilterChoice, ScanFilterChoice};
use crate::options::Compression;
use crate::value_def::IndexRecord;

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
    /// Tables with more distinct keys than this get a partitioned filter
    /// and a two-level index.
    pub partition_keys: u64,
    /// About how large each partition of a two-level index is written.
    pub index_partition_bytes: usize,
    /// The value indexes whose leaves the table gets (none: no extraction).
    pub value_indexes: Arc<[IndexRecord]>,
    /// Prefix and range filters.
    pub scan: ScanFilterChoice,
}
