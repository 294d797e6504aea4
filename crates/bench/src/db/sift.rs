//! Sift (`siftdb`) as a contender.

use std::path::Path;
use std::time::Duration;

use siftdb::{
    BitsPerKey, Compression, Db, FilterPolicy, PrefixExtractor, RangeFilterPolicy, WriteBatch,
    WriteOptions,
};

use super::engine::{Engine, FilterCounters, Settings, Shape, Visit};
use super::stores::{PREFIX_LEN, Store};
use crate::filters::keys::Key;

/// A Sift database with the comparison's settings: blocked Bloom at the
/// given bits/key on every level, no compression, leveled compaction. The
/// range filters are Sift's default (on); on the [`Store::Prefixed`] store
/// the tables also get prefix filters ([`PrefixExtractor::Fixed`] of
/// [`PREFIX_LEN`] bytes), the key filters kept.
///
/// `sift-noscan` is the same store without scan filters (no range filters,
/// no prefix extractor): Sift as it read scans before them, run side by
/// side to measure what they gain and cost. `sift-fuse` is the same store
/// with Binary Fuse key filters ([`FilterPolicy::binary_fuse`]) within
/// the same bits per key, `sift-split` with split-block Bloom key filters
/// ([`FilterPolicy::split_block_bloom`]) at them.
pub struct Sift {
    db: Db,
    scan_filters: bool,
}

/// Which of Sift's configurations runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flavor {
    /// `sift`: blocked Bloom key filters, scan filters on.
    Bloom,
    /// `sift-noscan`: blocked Bloom key filters, no scan filters.
    NoScan,
    /// `sift-fuse`: Binary Fuse key filters, scan filters on.
    Fuse,
    /// `sift-split`: split-block Bloom key filters, scan filters on.
    Split,
}

impl Sift {
    /// Opens (creates) the database in `dir`, configured for `store`, as
    /// `flavor` says.
    pub fn open(
        dir: &Path,
        settings: &Settings,
        store: Store,
        flavor: Flavor,
    ) -> anyhow::Result<Self> {
        let scan_filters = flavor != Flavor::NoScan;
        let mut policy = match flavor {
            Flavor::Fuse => FilterPolicy::binary_fuse(settings.bits_per_key),
            Flavor::Split => FilterPolicy::split_block_bloom(settings.bits_per_key),
            Flavor::Bloom | Flavor::NoScan => FilterPolicy::blocked_bloom(settings.bits_per_key),
        };
        policy.range_filter = scan_filters.then(|| RangeFilterPolicy {
            bits_per_key: BitsPerKey::Monkey {
                average: settings.range_bits_per_key,
            },
            ..RangeFilterPolicy::default()
        });
        if scan_filters && store == Store::Prefixed {
            policy.prefix_extractor = Some(PrefixExtractor::Fixed(PREFIX_LEN));
        }
        let db = Db::builder(dir)
            .memtable_bytes(usize::try_from(settings.memtable_bytes)?)
            .table_target_bytes(settings.table_bytes)
            .block_cache_bytes(settings.cache_bytes)
            .compression(Compression::None)
            .filter_policy(policy)
            .open()?;
        Ok(Self { db, scan_filters })
    }
}

/// Hands `visit` the entries of `iter`, at most `limit`; returns how many.
fn visit_all(
    iter: impl Iterator<Item = siftdb::Result<(Vec<u8>, Vec<u8>)>>,
    limit: usize,
    visit: Visit<'_>,
) -> anyhow::Result<usize> {
    let mut count = 0;
    for entry in iter.take(limit) {
        let (key, value) = entry?;
        visit(&key, value.len())?;
        count += 1;
    }
    Ok(count)
}

impl Engine for Sift {
    fn name(&self) -> &'static str {
        if self.scan_filters {
            "sift"
        } else {
            "sift-noscan"
        }
    }

    fn put(&self, key: &[u8], value: &[u8]) -> anyhow::Result<()> {
        Ok(self.db.insert(key, value)?)
    }

    /// A one-entry batch written with [`WriteOptions::sync`]: `Db::insert`
    /// takes no options.
    fn put_synced(&self, key: &[u8], value: &[u8]) -> anyhow::Result<()> {
        let mut batch = WriteBatch::with_capacity(key.len() + value.len() + 16);
        batch.insert(key, value);
        Ok(self.db.write_with(&batch, WriteOptions::sync())?)
    }

    fn write_stall(&self) -> Option<Duration> {
        Some(Duration::from_micros(self.db.stats().write_stall_micros))
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

    fn scan(
        &self,
        lower: &[u8],
        upper: &[u8],
        limit: usize,
        visit: Visit<'_>,
    ) -> anyhow::Result<usize> {
        visit_all(self.db.range(lower..upper), limit, visit)
    }

    fn prefix(&self, prefix: &[u8], visit: Visit<'_>) -> anyhow::Result<usize> {
        visit_all(self.db.prefix(prefix), usize::MAX, visit)
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

    /// Summed over the levels (deeper levels that share a counter report
    /// it once).
    fn scan_filter_counters(&self) -> FilterCounters {
        let levels = self.db.stats().levels;
        let sum = |f: fn(&siftdb::LevelStats) -> u64| levels.iter().map(f).sum();
        FilterCounters {
            probes: sum(|l| l.scan_filter_probes),
            negatives: sum(|l| l.scan_filter_empty),
            false_positives: Some(sum(|l| l.scan_filter_false_positives)),
        }
    }

    fn shape(&self) -> Shape {
        let levels = self.db.stats().levels;
        let keys: u64 = levels.iter().map(|l| l.distinct_keys).sum();
        let per_key = |bytes: u64| (keys > 0).then(|| (bytes * 8) as f64 / keys as f64);
        Shape {
            tables: levels.iter().map(|l| l.tables as u64).sum(),
            filter_bits_per_key: per_key(levels.iter().map(|l| l.filter_bytes).sum()),
            scan_filter_bits_per_key: per_key(levels.iter().map(|l| l.scan_filter_bytes).sum()),
        }
    }
}
