//! The block cache: decoded data blocks shared by every table of a
//! database; the tables and metadata pieces (indexes, filter partitions)
//! that the budget of resident metadata does not hold
//! (`version::residency`), so that memory left over by the data blocks
//! serves lookups in those tables too; and every table's prefix and range
//! filters, which only scans read.
//!
//! Metadata comes first: it is kept apart from the data blocks, which
//! cannot push it out, and may take all the capacity but an eighth, kept
//! for data blocks, which use whatever else it leaves. A table's metadata
//! serves every lookup in the table, a data block only those in the block,
//! and reading metadata costs about ten times reading a block. With both
//! in one CLOCK-Pro cache, `sift-bench scale` (5M keys, a quarter of the
//! metadata in the budget, an 8 MiB cache) read metadata 47,000-49,000
//! times per 300,000 lookups; with metadata first 33,000 (uniform), and
//! 3,500-4,000 instead of 6,600-7,100 (Zipf). Half the capacity for
//! metadata, as RocksDB's high-priority pool gives index and filter blocks
//! by default, read it 126,000 times.

use std::any::Any;
use std::sync::Arc;

use quick_cache::Weighter;
use quick_cache::sync::Cache;

use super::block::Block;
use super::filters::scan::ScanFilters;
use super::table::Table;
use crate::error::Result;

/// Bytes charged per cached item on top of its data: the `Arc`, the
/// `Block` struct and the cache's own entry, about 100 bytes.
const ENTRY_OVERHEAD: u64 = 100;

/// Block size assumed to size the data cache's hash table (the default
/// `block_bytes`); the weight limit, not this, bounds the memory.
const TYPICAL_BLOCK: u64 = 4096;

/// The share of the capacity kept for data blocks: one over this.
const BLOCKS_RESERVE: u64 = 8;

/// A table's metadata size assumed to size the metadata cache's hash
/// table (a 2 MiB table's, rounded down), which also keeps its shards
/// large enough for big tables' metadata.
const TYPICAL_METADATA: u64 = 32 << 10;

/// The offsets that key a table's metadata and its scan filters: no
/// block starts there.
const METADATA: u64 = u64::MAX;
const SCAN_FILTERS: u64 = u64::MAX - 1;

/// A metadata piece of a table (`sstable::piece`), of whatever type.
pub(crate) type AnyPiece = Arc<dyn Any + Send + Sync>;

/// Cache key: (table id, block offset, or [`METADATA`]); a metadata
/// piece's offset is that of its block.
type Key = (u64, u64);

/// What the metadata cache holds.
#[derive(Clone, Debug)]
enum Metadata {
    /// A table's metadata, weighed by what the budget would charge it.
    Table(Arc<Table>),
    /// A table's prefix and range filters, and their stored bytes.
    Scan(Arc<ScanFilters>, u64),
    /// A table's metadata piece, and the bytes the budget charged it.
    Piece(AnyPiece, u64),
}

/// Weighs an item by the bytes it holds.
#[derive(Clone, Copy, Debug)]
struct BytesWeighter;

impl Weighter<Key, Arc<Block>> for BytesWeighter {
    fn weight(&self, _key: &Key, block: &Arc<Block>) -> u64 {
        ENTRY_OVERHEAD + block.size_bytes() as u64
    }
}

impl Weighter<Key, Metadata> for BytesWeighter {
    fn weight(&self, _key: &Key, item: &Metadata) -> u64 {
        ENTRY_OVERHEAD
            + match item {
                Metadata::Table(table) => table.resident_bytes(),
                Metadata::Scan(_, bytes) | Metadata::Piece(_, bytes) => *bytes,
            }
    }
}

/// Cache of decoded data blocks and of tables' metadata, shared by every
/// table of a database, keyed by (table id, block offset), weighted by
/// bytes (CLOCK-Pro eviction, from `quick_cache`).
pub(crate) struct BlockCache {
    capacity: u64,
    blocks: Cache<Key, Arc<Block>, BytesWeighter>,
    /// At most `capacity` less [`BLOCKS_RESERVE`] of it.
    metadata: Cache<Key, Metadata, BytesWeighter>,
}

impl std::fmt::Debug for BlockCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BlockCache")
            .field("capacity", &self.capacity)
            .field("blocks", &self.blocks.weight())
            .field("metadata", &self.metadata.weight())
            .finish()
    }
}

impl BlockCache {
    /// A cache holding about `capacity_bytes`. 0 caches nothing.
    pub(crate) fn new(capacity_bytes: u64) -> Self {
        let metadata = capacity_bytes - capacity_bytes / BLOCKS_RESERVE;
        let items = |bytes: u64, typical: u64| (bytes / typical).clamp(1, 1 << 20) as usize;
        Self {
            capacity: capacity_bytes,
            blocks: Cache::with_weighter(
                items(capacity_bytes, TYPICAL_BLOCK),
                capacity_bytes,
                BytesWeighter,
            ),
            metadata: Cache::with_weighter(
                items(metadata, TYPICAL_METADATA),
                metadata,
                BytesWeighter,
            ),
        }
    }

    /// Gives the data blocks what the metadata leaves of the capacity.
    fn rebalance(&self) {
        let left = self.capacity.saturating_sub(self.metadata.weight());
        self.blocks.set_capacity(left);
    }

    /// The block of table `table` at `offset`, if cached.
    pub(crate) fn get(&self, table: u64, offset: u64) -> Option<Arc<Block>> {
        self.blocks.get(&(table, offset))
    }

    /// Caches a block.
    pub(crate) fn insert(&self, table: u64, offset: u64, block: Arc<Block>) {
        self.blocks.insert((table, offset), block);
    }

    /// The metadata of table `id`, if cached.
    pub(crate) fn table(&self, id: u64) -> Option<Arc<Table>> {
        match self.metadata.get(&(id, METADATA))? {
            Metadata::Table(table) => Some(table),
            Metadata::Scan(..) | Metadata::Piece(..) => None,
        }
    }

    /// The metadata piece of table `table` stored at `offset`, if cached.
    pub(crate) fn piece(&self, table: u64, offset: u64) -> Option<AnyPiece> {
        match self.metadata.get(&(table, offset))? {
            Metadata::Piece(piece, _) => Some(piece),
            Metadata::Table(_) | Metadata::Scan(..) => None,
        }
    }

    /// Caches a metadata piece of table `table` stored at `offset`, `bytes`
    /// large. A table's pieces left behind when it leaves the database
    /// age out, as its data blocks do.
    pub(crate) fn insert_piece(&self, table: u64, offset: u64, piece: AnyPiece, bytes: u64) {
        self.metadata
            .insert((table, offset), Metadata::Piece(piece, bytes));
        self.rebalance();
    }

    /// Drops a cached metadata piece (it became resident).
    pub(crate) fn forget_piece(&self, table: u64, offset: u64) {
        if self.metadata.remove(&(table, offset)).is_some() {
            self.rebalance();
        }
    }

    /// Caches the metadata of table `id`.
    pub(crate) fn insert_table(&self, id: u64, table: Arc<Table>) {
        self.metadata.insert((id, METADATA), Metadata::Table(table));
        self.rebalance();
    }

    /// Drops the metadata of table `id` (it became resident).
    pub(crate) fn forget_metadata(&self, id: u64) {
        if self.metadata.remove(&(id, METADATA)).is_some() {
            self.rebalance();
        }
    }

    /// Drops the metadata and filters of table `id` (it left the
    /// database). Its data blocks age out.
    pub(crate) fn forget_table(&self, id: u64) {
        let removed = [METADATA, SCAN_FILTERS]
            .iter()
            .filter(|&&part| self.metadata.remove(&(id, part)).is_some())
            .count();
        if removed > 0 {
            self.rebalance();
        }
    }

    /// The scan filters of table `id`, from the cache or `load` (cached
    /// when it succeeds, with its stored bytes as the weight).
    pub(crate) fn scan_filters(
        &self,
        id: u64,
        load: impl FnOnce() -> Result<(ScanFilters, u64)>,
    ) -> Result<Arc<ScanFilters>> {
        if let Some(Metadata::Scan(filters, _)) = self.metadata.get(&(id, SCAN_FILTERS)) {
            return Ok(filters);
        }
        let (filters, bytes) = load()?;
        let filters = Arc::new(filters);
        let item = Metadata::Scan(Arc::clone(&filters), bytes);
        self.metadata.insert((id, SCAN_FILTERS), item);
        self.rebalance();
        Ok(filters)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A block of about `bytes` (one entry with a value that long).
    fn block(bytes: usize) -> Arc<Block> {
        let mut builder = super::super::block_builder::BlockBuilder::new(16);
        let mut key = b"k".to_vec();
        key.extend_from_slice(&[0; 8]);
        builder.add(&key, &vec![7; bytes]);
        Arc::new(Block::decode(builder.finish()).unwrap())
    }

    fn cached_scan_filters(cache: &BlockCache, id: u64) -> bool {
        let mut loaded = false;
        let load = || {
            loaded = true;
            Ok((ScanFilters::none(), 40_000))
        };
        cache.scan_filters(id, load).unwrap();
        !loaded
    }

    #[test]
    fn data_blocks_do_not_push_out_metadata_and_use_what_it_leaves() {
        let cache = BlockCache::new(1 << 20);
        // 80,000 bytes of metadata, well under half the capacity.
        for id in 0..2 {
            assert!(!cached_scan_filters(&cache, id));
        }
        // Ten times the capacity in data blocks.
        for offset in 0..2_560 {
            cache.insert(9, offset, block(4_000));
        }
        assert!((0..2).all(|id| cached_scan_filters(&cache, id)));
        let blocks = cache.blocks.weight();
        assert!(
            blocks > (1 << 20) * 3 / 5 && blocks + cache.metadata.weight() <= 1 << 20,
            "{cache:?}"
        );
        // Metadata past its share pushes out older metadata, and leaves
        // the data blocks their reserve.
        for id in 2..60 {
            cached_scan_filters(&cache, id);
        }
        let reserve = (1 << 20) / BLOCKS_RESERVE;
        assert!(cache.metadata.weight() <= (1 << 20) - reserve, "{cache:?}");
        assert!(cache.blocks.weight() + cache.metadata.weight() <= 1 << 20);
        for offset in 0..2_560 {
            cache.insert(9, offset, block(4_000));
        }
        assert!(cache.blocks.weight() >= reserve * 3 / 4, "{cache:?}");
        assert!(cache.blocks.weight() + cache.metadata.weight() <= 1 << 20);
    }
}
