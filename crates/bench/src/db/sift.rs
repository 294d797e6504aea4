//! Sift (`siftdb`) as a contender.

use std::path::Path;

use siftdb::{Compression, Db, FilterPolicy};

use super::engine::{Engine, FilterCounters, Settings, Shape};
use crate::filters::keys::Key;

/// A Sift database with the comparison's settings: blocked Bloom at the
/// given bits/key on every level, no compression, leveled compaction.
pub struct Sift {
    db: Db,
}

impl Sift {
    /// Opens (creates) the database in `dir`.
    pub fn open(dir: &Path, settings: &Settings) -> anyhow::Result<Self> {
        let db = Db::builder(dir)
            .memtable_bytes(usize::try_from(settings.memtable_bytes)?)
            .table_target_bytes(settings.table_bytes)
            .block_cache_bytes(settings.cache_bytes)
            .compression(Compression::None)
            .filter_policy(FilterPolicy::blocked_bloom(settings.bits_per_key))
            .open()?;
        Ok(Self { db })
    }
}

impl Engine for Sift {
    fn name(&self) -> &'static str {
        "sift"
    }

    fn put(&self, key: &[u8], value: &[u8]) -> anyhow::Result<()> {
        Ok(self.db.insert(key, value)?)
    }

    fn get(&self, key: &[u8]) -> anyhow::Result<Option<usize>> {
        Ok(self.db.get(key)?.map(|v| v.len()))
    }

    fn multi_get(&self, keys: &[Key]) -> anyhow::Result<Vec<Option<usize>>> {
        let values = self.db.multi_get(keys)?;
        Ok(values.iter().map(|v| v.as_ref().map(Vec::len)).collect())
    }

    fn seek(&self, key: &[u8]) -> anyhow::Result<Option<usize>> {
        Ok(self
            .db
            .range(key..)
            .next()
            .transpose()?
            .map(|(_, v)| v.len()))
    }

    fn settle(&self) -> anyhow::Result<()> {
        self.db.flush()?;
        Ok(self.db.wait_for_compactions()?)
    }

    fn compact(&self) -> anyhow::Result<()> {
        Ok(self.db.compact()?)
    }

    fn filter_counters(&self) -> FilterCounters {
        let stats = self.db.stats();
        FilterCounters {
            probes: stats.filter_probes,
            negatives: stats.filter_negatives,
            false_positives: Some(stats.filter_false_positives),
        }
    }

    fn shape(&self) -> Shape {
        let levels = self.db.stats().levels;
        let keys: u64 = levels.iter().map(|l| l.distinct_keys).sum();
        let filter_bits: u64 = levels.iter().map(|l| l.filter_bytes * 8).sum();
        Shape {
            tables: levels.iter().map(|l| l.tables as u64).sum(),
            filter_bits_per_key: (keys > 0).then(|| filter_bits as f64 / keys as f64),
        }
    }
}
