//! Statistics: always on, a relaxed atomic add per event.

use std::sync::atomic::{AtomicU64, Ordering};

use crate::version::Version;

/// Levels with their own probe counters; deeper levels share the last slot.
pub(crate) const COUNTED_LEVELS: usize = 8;

/// Filter counters of one level.
#[derive(Debug, Default)]
pub(crate) struct LevelCounters {
    probes: AtomicU64,
    negatives: AtomicU64,
    false_positives: AtomicU64,
}

/// The live counters of a database.
#[derive(Debug, Default)]
pub(crate) struct Counters {
    pub gets: AtomicU64,
    pub key_hashes: AtomicU64,
    pub data_blocks_read: AtomicU64,
    pub memtable_hits: AtomicU64,
    pub writes: AtomicU64,
    pub write_stall_micros: AtomicU64,
    pub flushes: AtomicU64,
    pub compactions: AtomicU64,
    pub compaction_bytes_written: AtomicU64,
    levels: [LevelCounters; COUNTED_LEVELS],
}

/// Adds one to a counter.
pub(crate) fn bump(counter: &AtomicU64) {
    counter.fetch_add(1, Ordering::Relaxed);
}

/// Adds `n` to a counter.
pub(crate) fn add(counter: &AtomicU64, n: u64) {
    counter.fetch_add(n, Ordering::Relaxed);
}

impl Counters {
    /// Counters of `level`.
    pub(crate) fn level(&self, level: usize) -> &LevelCounters {
        &self.levels[level.min(COUNTED_LEVELS - 1)]
    }
}

impl LevelCounters {
    /// Records one filter probe and whether the filter answered "no".
    pub(crate) fn probe(&self, may_contain: bool) {
        bump(&self.probes);
        if !may_contain {
            bump(&self.negatives);
        }
    }

    /// Records a "maybe" for a table that turned out not to hold the key.
    pub(crate) fn false_positive(&self) {
        bump(&self.false_positives);
    }
}

/// What [`Db::stats`](crate::Db::stats) reports: counters since open, and
/// the shape of the current version.
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct Stats {
    /// Point lookups (`get`, `contains_key`).
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
    /// Time writers spent delayed or stopped by compaction debt.
    pub write_stall_micros: u64,
    /// Memtables flushed to tables.
    pub flushes: u64,
    /// Compactions completed.
    pub compactions: u64,
    /// Bytes of tables written by compactions.
    pub compaction_bytes_written: u64,
    /// One entry per level, L0 first.
    pub levels: Vec<LevelStats>,
    /// One entry per value index, in the order they were defined.
    pub indexes: Vec<crate::value::IndexStats>,
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
    /// Distinct user keys summed over the level's tables: what its filters
    /// hold.
    pub distinct_keys: u64,
    /// Bytes of key filters (pinned in memory).
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
pub(crate) fn snapshot(counters: &Counters, version: &Version) -> Stats {
    let load = |c: &AtomicU64| c.load(Ordering::Relaxed);
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
                let props = table.table.properties();
                stats.tables += 1;
                stats.bytes += table.meta.file_size;
                stats.entries += table.meta.entries;
                stats.distinct_keys += props.distinct_keys;
                stats.filter_bytes += props.filter_bytes;
                kinds.insert(props.filter_kind.name());
            }
            stats.filter_kind = kinds.into_iter().collect::<Vec<_>>().join(",");
            stats.filter_bits_per_key = if stats.distinct_keys == 0 {
                0.0
            } else {
                stats.filter_bytes as f64 * 8.0 / stats.distinct_keys as f64
            };
            // Deeper levels share the last counter slot: report it once.
            if index < COUNTED_LEVELS {
                let c = counters.level(index);
                stats.filter_probes = load(&c.probes);
                stats.filter_negatives = load(&c.negatives);
                stats.filter_false_positives = load(&c.false_positives);
            }
            stats
        })
        .collect();
    let total =
        |f: fn(&LevelCounters) -> &AtomicU64| counters.levels.iter().map(|c| load(f(c))).sum();
    Stats {
        gets: load(&counters.gets),
        key_hashes: load(&counters.key_hashes),
        filter_probes: total(|c| &c.probes),
        filter_negatives: total(|c| &c.negatives),
        filter_false_positives: total(|c| &c.false_positives),
        data_blocks_read: load(&counters.data_blocks_read),
        memtable_hits: load(&counters.memtable_hits),
        writes: load(&counters.writes),
        write_stall_micros: load(&counters.write_stall_micros),
        flushes: load(&counters.flushes),
        compactions: load(&counters.compactions),
        compaction_bytes_written: load(&counters.compaction_bytes_written),
        levels,
        indexes: Vec::new(),
        wal_recovery: None,
    }
}
