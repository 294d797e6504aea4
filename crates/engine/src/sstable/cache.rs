//! The block cache: decoded data blocks shared by every table of a database.

use std::sync::Arc;

use quick_cache::Weighter;
use quick_cache::sync::Cache;

use super::block::Block;

/// Bytes charged per cached block on top of its data: the `Arc`, the
/// `Block` struct and the cache's own entry, about 100 bytes.
const ENTRY_OVERHEAD: u64 = 100;

/// Block size assumed to size the cache's hash table (the default
/// `block_bytes`); the weight limit, not this, bounds the memory.
const TYPICAL_BLOCK: u64 = 4096;

/// Cache key: (table id, block offset).
type Key = (u64, u64);

/// Weighs a block by the bytes it holds.
#[derive(Clone, Copy, Debug)]
struct BlockWeighter;

impl Weighter<Key, Arc<Block>> for BlockWeighter {
    fn weight(&self, _key: &Key, block: &Arc<Block>) -> u64 {
        block.size_bytes() as u64 + ENTRY_OVERHEAD
    }
}

/// Cache of decoded data blocks shared by every table of a database, keyed
/// by (table id, block offset), weighted by block bytes (CLOCK-Pro
/// eviction, from `quick_cache`).
pub(crate) struct BlockCache {
    cache: Cache<Key, Arc<Block>, BlockWeighter>,
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
            cache: Cache::with_weighter(items, capacity_bytes, BlockWeighter),
        }
    }

    /// The block of table `table` at `offset`, if cached.
    pub(crate) fn get(&self, table: u64, offset: u64) -> Option<Arc<Block>> {
        self.cache.get(&(table, offset))
    }

    /// Caches a block.
    pub(crate) fn insert(&self, table: u64, offset: u64, block: Arc<Block>) {
        self.cache.insert((table, offset), block);
    }
}
