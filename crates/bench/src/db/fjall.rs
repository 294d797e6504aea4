//! fjall (crates.io) as a contender, configured like Sift: Bloom filters at
//! the same bits/key on every level and pinned in memory, no compression,
//! the same memtable, table and cache sizes, leveled compaction. fjall has
//! no prefix or range filters: every store gets the same configuration, and
//! its scans are bounded by its own `range` and `prefix`.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use fjall::compaction::Leveled;
use fjall::config::{
    BloomConstructionPolicy, CompressionPolicy, FilterPolicy, FilterPolicyEntry, PinningPolicy,
};
use fjall::{Database, Keyspace, KeyspaceCreateOptions, PersistMode};

use super::engine::{Engine, FilterCounters, Settings, Shape, Visit};

/// How long `settle` waits for fjall's flushes and compactions to end.
const SETTLE_PATIENCE: Duration = Duration::from_secs(900);

/// A fjall database with one keyspace.
pub struct Fjall {
    db: Database,
    keyspace: Keyspace,
}

impl Fjall {
    /// Opens (creates) the database in `dir`.
    pub fn open(dir: &Path, settings: &Settings) -> anyhow::Result<Self> {
        let db = Database::builder(dir)
            .cache_size(settings.cache_bytes)
            .open()?;
        let bits = settings.bits_per_key as f32;
        let table_bytes = settings.table_bytes;
        let memtable_bytes = settings.memtable_bytes;
        let keyspace = db.keyspace("bench", move || {
            KeyspaceCreateOptions::default()
                .max_memtable_size(memtable_bytes)
                .data_block_compression_policy(CompressionPolicy::disabled())
                .index_block_compression_policy(CompressionPolicy::disabled())
                .filter_policy(FilterPolicy::all(FilterPolicyEntry::Bloom(
                    BloomConstructionPolicy::BitsPerKey(bits),
                )))
                .filter_block_pinning_policy(PinningPolicy::all(true))
                .index_block_pinning_policy(PinningPolicy::all(true))
                .compaction_strategy(Arc::new(
                    Leveled::default().with_table_target_size(table_bytes),
                ))
        })?;
        Ok(Self { db, keyspace })
    }
}

impl Engine for Fjall {
    fn name(&self) -> &'static str {
        "fjall"
    }

    fn put(&self, key: &[u8], value: &[u8]) -> anyhow::Result<()> {
        Ok(self.keyspace.insert(key, value)?)
    }

    /// A one-entry batch with durability [`PersistMode::SyncData`]: the
    /// journal is written and `fdatasync`ed under its lock before `commit`
    /// returns, so every put is its own synced write (`SyncData`, not
    /// `SyncAll`'s `fsync`: Sift and RocksDB sync their logs with
    /// `fdatasync`). fjall counts no write stalls: its backpressure (a
    /// spin, then sleeps, at 20 and 30 level-0 runs or 4 sealed memtables)
    /// is not timed, so [`Engine::write_stall`] stays `None`.
    fn put_synced(&self, key: &[u8], value: &[u8]) -> anyhow::Result<()> {
        let mut batch = self.db.batch().durability(Some(PersistMode::SyncData));
        batch.insert(&self.keyspace, key, value);
        Ok(batch.commit()?)
    }

    fn get(&self, key: &[u8]) -> anyhow::Result<Option<usize>> {
        Ok(self.keyspace.get(key)?.map(|v| v.len()))
    }

    fn seek(&self, key: &[u8]) -> anyhow::Result<Option<usize>> {
        match self.keyspace.range(key..).next() {
            Some(guard) => Ok(Some(guard.value()?.len())),
            None => Ok(None),
        }
    }

    fn scan(
        &self,
        lower: &[u8],
        upper: &[u8],
        limit: usize,
        visit: Visit<'_>,
    ) -> anyhow::Result<usize> {
        visit_all(self.keyspace.range(lower..upper), limit, visit)
    }

    fn prefix(&self, prefix: &[u8], visit: Visit<'_>) -> anyhow::Result<usize> {
        visit_all(self.keyspace.prefix(prefix), usize::MAX, visit)
    }

    fn settle(&self) -> anyhow::Result<()> {
        self.keyspace.rotate_memtable_and_wait()?;
        // fjall has no "wait for compactions": poll until nothing runs or
        // waits twice in a row. A 10M-key load once never came to rest
        // (the machine idle for 9 minutes): give up with what was pending
        // rather than hang the whole comparison.
        let deadline = Instant::now() + SETTLE_PATIENCE;
        let mut quiet = 0;
        while quiet < 2 {
            std::thread::sleep(Duration::from_millis(50));
            let (flushes, compactions) =
                (self.db.outstanding_flushes(), self.db.active_compactions());
            quiet = if flushes + compactions > 0 {
                0
            } else {
                quiet + 1
            };
            anyhow::ensure!(
                Instant::now() < deadline,
                "fjall did not come to rest within {SETTLE_PATIENCE:?}: \
                 {flushes} flushes outstanding, {compactions} compactions running"
            );
        }
        Ok(())
    }

    fn compact(&self) -> anyhow::Result<()> {
        self.keyspace.rotate_memtable_and_wait()?;
        Ok(self.keyspace.major_compact()?)
    }

    fn filter_counters(&self) -> FilterCounters {
        let metrics = self.keyspace.metrics();
        FilterCounters {
            probes: metrics.filter_queries() as u64,
            negatives: metrics.io_skipped_by_filter() as u64,
            false_positives: None,
        }
    }

    fn shape(&self) -> Shape {
        Shape {
            tables: self.keyspace.table_count() as u64,
            filter_bits_per_key: None,
            scan_filter_bits_per_key: None,
        }
    }
}

/// Hands `visit` the entries of `iter`, at most `limit`; returns how many.
fn visit_all(
    iter: impl Iterator<Item = fjall::Guard>,
    limit: usize,
    visit: Visit<'_>,
) -> anyhow::Result<usize> {
    let mut count = 0;
    for guard in iter.take(limit) {
        let (key, value) = guard.into_inner()?;
        visit(&key, value.len())?;
        count += 1;
    }
    Ok(count)
}
