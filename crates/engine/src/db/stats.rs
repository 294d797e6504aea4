//! Statistics: always on; counted per thread (`counters.rs`), summed here.

use super::counters::{COUNTED_LEVELS, Counter, Counters, Shard};
use crate::version::{Residency, Version};

/// What [`Db::stats`](crate::Db::stats) reports: counters since open, and
/// the shape of the current version.
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct Stats {
    /// Point lookups (`get`, `contains_key`, and each key of a `multi_get`).
    pub gets: u64,
    /// Keys hashed for filter probes: one per point lookup, however many
    /// filters it meets.
    pub key_hashes: u64,
    /// Key filters consulted.
    pub filter_probes: u64,
    /// Filter answers "not in this table": table reads avoided.
    pub filter_negatives: u64,
    /// Filter answers "maybe" for a table that did not hold the key.
    pub filter_false_positives: u64,
    /// Data blocks fetched by point lookups (cache hits included).
    pub data_blocks_read: u64,
    /// Point lookups answered by a memtable.
    pub memtable_hits: u64,
    /// Write batches applied.
    pub writes: u64,
    /// WAL writes of groups of batches: `writes / write_groups` is how
    /// many batches concurrent writers shared each WAL write with.
    pub write_groups: u64,
    /// WAL fsyncs made for synced writes (one per group that asked).
    pub wal_syncs: u64,
    /// Time writers spent delayed or stopped by compaction debt.
    pub write_stall_micros: u64,
    /// Memtables flushed to tables.
    pub flushes: u64,
    /// Compactions completed.
    pub compactions: u64,
    /// Bytes of tables written by compactions, counted as each table is
    /// finished (so a long compaction's progress shows, and a compaction
    /// that fails counts what it wrote).
    pub compaction_bytes_written: u64,
    /// One entry per level, L0 first.
    pub levels: Vec<LevelStats>,
    /// Bytes of table metadata (indexes and filters) resident now, never
    /// over [`Stats::filter_memory_budget`].
    pub filter_memory_resident: u64,
    /// The budget of resident metadata
    /// ([`DbBuilder::filter_memory_bytes`](crate::DbBuilder::filter_memory_bytes)).
    pub filter_memory_budget: u64,
    /// One entry per value index, in the order they were defined.
    pub indexes: Vec<crate::db::value::IndexStats>,
    /// Where [`WalRecovery::PointInTime`](crate::WalRecovery::PointInTime)
    /// stopped replaying at open, and why, when it dropped records that
    /// followed damage (a torn tail of the newest WAL is not reported: it
    /// was never acknowledged as synced).
    pub wal_recovery: Option<String>,
}

/// The tables and filters of one level.
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct LevelStats {
    /// Sorted runs (several in L0 and in tiered levels, else one).
    pub runs: usize,
    /// Tables.
    pub tables: usize,
    /// Bytes of table files.
    pub bytes: u64,
    /// Entries (versions, tombstones included).
    pub entries: u64,
    /// Tables whose metadata has not been read since open (metadata is
    /// read at first use): the figures from `distinct_keys` to
    /// `scan_filter_bytes` leave them out.
    pub tables_unread: usize,
    /// Distinct user keys summed over the level's tables: what its filters
    /// hold.
    pub distinct_keys: u64,
    /// Bytes of key filters.
    pub filter_bytes: u64,
    /// Filter bits per distinct key of the level.
    pub filter_bits_per_key: f64,
    /// The key filter kinds of the level's tables (`blocked_bloom`,
    /// `ribbon`, `none`, ...), each named once, comma-separated.
    pub filter_kind: String,
    /// Filter probes at this level since open (levels from 7 down share one
    /// counter).
    pub filter_probes: u64,
    /// "No" answers among them.
    pub filter_negatives: u64,
    /// "Maybe" answers for tables without the key.
    pub filter_false_positives: u64,
    /// Bytes of scan filters (prefix and range filters), as stored.
    pub scan_filter_bytes: u64,
    /// Bytes of the level's table metadata (indexes, filters, properties)
    /// resident now.
    pub resident_bytes: u64,
    /// Bytes the metadata of the level's tables takes with all of it
    /// resident (each table with its index and every filter partition):
    /// what `filter_memory_bytes` must hold to keep the level whole. Tables
    /// not read since open are left out (`tables_unread`).
    pub metadata_bytes: u64,
    /// Reads of a table's metadata since open: first uses, and uses after
    /// it was evicted.
    pub metadata_loads: u64,
    /// Tables whose metadata was evicted to stay within the budget.
    pub metadata_evictions: u64,
    /// Loads not kept: a table colder than the resident ones it was
    /// weighed against, read for one use (then kept in the block cache) or
    /// for a compaction.
    pub transient_loads: u64,
    /// Uses of a table not resident served by the block cache, which holds
    /// the metadata the budget did not keep beside the data blocks.
    pub metadata_cache_hits: u64,
    /// Scan filter probes at this level since open: one per table a
    /// bounded or prefix scan reached whose prefix or range filter applied.
    pub scan_filter_probes: u64,
    /// "Holds nothing" answers among them: tables the scans skipped.
    pub scan_filter_empty: u64,
    /// "May hold" answers for tables that held nothing within the scan's
    /// bounds (counted when the scan reached the table's end).
    pub scan_filter_false_positives: u64,
    /// Table bytes written into this level since open, by flushes (L0) or
    /// compactions (deeper levels). Summed over the levels and divided by
    /// the bytes put, it is the write amplification, less the WAL.
    pub bytes_written: u64,
    /// Table bytes of this level read by compactions since open.
    pub compaction_bytes_read: u64,
}

impl LevelStats {
    /// False positives over probes of tables without the key: the measured
    /// false-positive rate (`None` before any such probe).
    #[must_use]
    pub fn observed_fpr(&self) -> Option<f64> {
        let absent = self.filter_negatives + self.filter_false_positives;
        (absent > 0).then(|| self.filter_false_positives as f64 / absent as f64)
    }
}

impl Stats {
    /// Data blocks read per point lookup.
    #[must_use]
    pub fn blocks_per_get(&self) -> f64 {
        if self.gets == 0 {
            0.0
        } else {
            self.data_blocks_read as f64 / self.gets as f64
        }
    }
}

/// Reads the counters and describes `version`.
pub(super) fn snapshot(counters: &Counters, version: &Version, residency: &Residency) -> Stats {
    let levels: Vec<LevelStats> = version
        .levels
        .iter()
        .enumerate()
        .map(|(index, level)| {
            let mut stats = LevelStats {
                runs: level.runs.len(),
                ..LevelStats::default()
            };
            let mut kinds = std::collections::BTreeSet::new();
            for table in level.tables() {
                stats.tables += 1;
                stats.bytes += table.meta.file_size;
                stats.entries += table.meta.entries;
                let Some(summary) = table.summary() else {
                    stats.tables_unread += 1;
                    continue;
                };
                stats.distinct_keys += summary.distinct_keys;
                stats.filter_bytes += summary.filter_bytes;
                stats.scan_filter_bytes += summary.scan_filter_bytes;
                stats.metadata_bytes += summary.metadata_bytes;
                kinds.insert(summary.filter_kind);
            }
            stats.filter_kind = kinds.into_iter().collect::<Vec<_>>().join(",");
            stats.filter_bits_per_key = if stats.distinct_keys == 0 {
                0.0
            } else {
                stats.filter_bytes as f64 * 8.0 / stats.distinct_keys as f64
            };
            // Deeper levels share the last counter slot: report it once.
            if index < COUNTED_LEVELS {
                stats.filter_probes = counters.total(|s| &s.level(index).probes);
                stats.filter_negatives = counters.total(|s| &s.level(index).negatives);
                stats.filter_false_positives = counters.total(|s| &s.level(index).false_positives);
                stats.scan_filter_probes = counters.total(|s| &s.level(index).scan_probes);
                stats.scan_filter_empty = counters.total(|s| &s.level(index).scan_empty);
                stats.scan_filter_false_positives =
                    counters.total(|s| &s.level(index).scan_false_positives);
                stats.bytes_written = counters.total(|s| &s.level(index).bytes_written);
                stats.compaction_bytes_read =
                    counters.total(|s| &s.level(index).compaction_bytes_read);
                let resident = residency.level_figures(index);
                stats.resident_bytes = resident.resident_bytes;
                stats.metadata_loads = resident.loads;
                stats.metadata_evictions = resident.evictions;
                stats.transient_loads = resident.transient_loads;
                stats.metadata_cache_hits = resident.cache_hits;
            }
            stats
        })
        .collect();
    let all_levels = |counter: fn(&Shard, usize) -> &Counter| {
        (0..COUNTED_LEVELS)
            .map(|level| counters.total(|s| counter(s, level)))
            .sum()
    };
    Stats {
        gets: counters.total(|s| &s.gets),
        key_hashes: counters.total(|s| &s.key_hashes),
        filter_probes: all_levels(|s, l| &s.level(l).probes),
        filter_negatives: all_levels(|s, l| &s.level(l).negatives),
        filter_false_positives: all_levels(|s, l| &s.level(l).false_positives),
        data_blocks_read: counters.total(|s| &s.data_blocks_read),
        memtable_hits: counters.total(|s| &s.memtable_hits),
        writes: counters.total(|s| &s.writes),
        write_groups: counters.total(|s| &s.write_groups),
        wal_syncs: counters.total(|s| &s.wal_syncs),
        write_stall_micros: counters.total(|s| &s.write_stall_micros),
        flushes: counters.total(|s| &s.flushes),
        compactions: counters.total(|s| &s.compactions),
        compaction_bytes_written: counters.total(|s| &s.compaction_bytes_written),
        levels,
        filter_memory_resident: residency.used(),
        filter_memory_budget: residency.budget(),
        indexes: Vec::new(),
        wal_recovery: None,
    }
}
