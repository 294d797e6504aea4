//! The block cache: decoded data blocks shared by every table of a
//! database; the metadata of tables that the budget of resident metadata
//! did not keep (`version::residency`), so that memory left over by the
//! data blocks serves lookups in those tables too; and every table's
//! prefix and range filters, which only scans read.

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

/// Block size assumed to size the cache's hash table (the default
/// `block_bytes`); the weight limit, not this, bounds the memory.
const TYPICAL_BLOCK: u64 = 4096;

/// The offsets that key a table's metadata, its scan filters and its value
/// filters: no block starts there.
const METADATA: u64 = u64::MAX;
const SCAN_FILTERS: u64 = u64::MAX - 1;

/// Cache key: (table id, block offset, or [`METADATA`]).
type Key = (u64, u64);

/// What the cache holds.
#[derive(Clone, Debug)]
enum Cached {
    Block(Arc<Block>),
    /// A table's metadata, weighed by what the budget would charge it.
    Table(Arc<Table>),
    /// A table's prefix and range filters, and their stored bytes.
    Scan(Arc<ScanFilters>, u64),
}

/// Weighs an item by the bytes it holds.
#[derive(Clone, Copy, Debug)]
struct CachedWeighter;

impl Weighter<Key, Cached> for CachedWeighter {
    fn weight(&self, _key: &Key, item: &Cached) -> u64 {
        ENTRY_OVERHEAD
            + match item {
                Cached::Block(block) => block.size_bytes() as u64,
                Cached::Table(table) => table.resident_bytes(),
                Cached::Scan(_, bytes) => *bytes,
            }
    }
}

/// Cache of decoded data blocks (and of the metadata of tables not
/// resident) shared by every table of a database, keyed by (table id,
/// block offset), weighted by bytes (CLOCK-Pro eviction, from
/// `quick_cache`).
pub(crate) struct BlockCache {
    cache: Cache<Key, Cached, CachedWeighter>,
}

impl std::fmt::Debug for BlockCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BlockCache")
            .field("capacity", &self.cache.capacity())
            .field("weight", &self.cache.weight())
            .finish()
    }
}

impl BlockCache {
    /// A cache holding about `capacity_bytes` of blocks. 0 caches nothing.
    pub(crate) fn new(capacity_bytes: u64) -> Self {
        let items = (capacity_bytes / TYPICAL_BLOCK).clamp(1, 1 << 20) as usize;
        Self {
            cache: Cache::with_weighter(items, capacity_bytes, CachedWeighter),
        }
    }

    /// The block of table `table` at `offset`, if cached.
    pub(crate) fn get(&self, table: u64, offset: u64) -> Option<Arc<Block>> {
        match self.cache.get(&(table, offset))? {
            Cached::Block(block) => Some(block),
            _ => None,
        }
    }

    /// Caches a block.
    pub(crate) fn insert(&self, table: u64, offset: u64, block: Arc<Block>) {
        self.cache.insert((table, offset), Cached::Block(block));
    }

    /// The metadata of table `id`, if cached.
    pub(crate) fn table(&self, id: u64) -> Option<Arc<Table>> {
        match self.cache.get(&(id, METADATA))? {
            Cached::Table(table) => Some(table),
            _ => None,
        }
    }

    /// Caches the metadata of table `id`.
    pub(crate) fn insert_table(&self, id: u64, table: Arc<Table>) {
        self.cache.insert((id, METADATA), Cached::Table(table));
    }

    /// Drops the metadata and filters of table `id` (it left the
    /// database).
    pub(crate) fn forget_table(&self, id: u64) {
        for part in [METADATA, SCAN_FILTERS] {
            self.cache.remove(&(id, part));
        }
    }

    /// The scan filters of table `id`, from the cache or `load` (cached
    /// when it succeeds, with its stored bytes as the weight).
    pub(crate) fn scan_filters(
        &self,
        id: u64,
        load: impl FnOnce() -> Result<(ScanFilters, u64)>,
    ) -> Result<Arc<ScanFilters>> {
        if let Some(Cached::Scan(filters, _)) = self.cache.get(&(id, SCAN_FILTERS)) {
            return Ok(filters);
        }
        let (filters, bytes) = load()?;
        let filters = Arc::new(filters);
        let item = Cached::Scan(Arc::clone(&filters), bytes);
        self.cache.insert((id, SCAN_FILTERS), item);
        Ok(filters)
    }
}
