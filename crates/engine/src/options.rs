//! Tuning knobs, each with a documented default.

/// One value per level, the last repeated for every deeper level.
///
/// `PerLevel::new(vec![12.0, 10.0])` means 12 at L0, 10 at L1 and below.
#[derive(Clone, Debug, PartialEq)]
pub struct PerLevel<T> {
    values: Vec<T>,
}

impl<T: Clone> PerLevel<T> {
    /// Values for L0, L1, ...; the last one applies to all deeper levels.
    /// An empty list is not allowed: use [`PerLevel::uniform`].
    #[must_use]
    pub fn new(values: Vec<T>) -> Option<Self> {
        (!values.is_empty()).then_some(Self { values })
    }

    /// The same value at every level.
    #[must_use]
    pub fn uniform(value: T) -> Self {
        Self {
            values: vec![value],
        }
    }

    /// The values as given: L0 first, the last one for every deeper level.
    #[must_use]
    pub fn values(&self) -> &[T] {
        &self.values
    }

    /// The value for `level`.
    #[must_use]
    pub fn get(&self, level: usize) -> &T {
        // `values` is never empty (both constructors ensure it).
        &self.values[level.min(self.values.len() - 1)]
    }
}

/// Block compression.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Compression {
    /// Blocks are stored as they are (default: the filters, not compression,
    /// are what Sift is about, and uncompressed blocks are read in place).
    #[default]
    None,
    /// LZ4 block compression (`lz4_flex`), kept only when it saves at least
    /// 1/8 of the block.
    Lz4,
}

/// How tables are arranged into levels and merged.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum CompactionStyle {
    /// One sorted run per level below L0, each level `size_ratio` times the
    /// one above: low space and read amplification (the default).
    Leveled {
        /// Number of L0 tables that triggers an L0 -> L1 compaction (4, as
        /// in LevelDB and RocksDB).
        l0_trigger: usize,
        /// Target size of each level over the one above it (10).
        size_ratio: u64,
        /// Target size of L1 in bytes (256 MiB, RocksDB's
        /// `max_bytes_for_level_base`).
        l1_bytes: u64,
    },
    /// Up to `runs_per_level` sorted runs per level, merged all at once into
    /// one run of the next level: lower write amplification, more runs to
    /// probe (each behind its filter).
    Tiered {
        /// Runs a level collects before they are merged down (4).
        runs_per_level: usize,
    },
}

impl CompactionStyle {
    /// Leveled compaction with its default parameters.
    #[must_use]
    pub const fn leveled() -> Self {
        Self::Leveled {
            l0_trigger: 4,
            size_ratio: 10,
            l1_bytes: 256 << 20,
        }
    }

    /// Tiered compaction with its default parameters.
    #[must_use]
    pub const fn tiered() -> Self {
        Self::Tiered { runs_per_level: 4 }
    }
}

impl Default for CompactionStyle {
    fn default() -> Self {
        Self::leveled()
    }
}

/// How many filter bits each key gets, per level.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum BitsPerKey {
    /// Fixed bits/key per level (0 means no filter at that level).
    PerLevel(PerLevel<f64>),
    /// Monkey's allocation (Dayan, Athanassoulis, Idreos, SIGMOD 2017): the
    /// memory of `average` bits/key over all keys, spread so that the sum
    /// of the levels' false-positive rates is smallest, which gives deeper,
    /// larger levels fewer bits per key. The default, with 10 bits/key.
    Monkey {
        /// Average bits per key over the whole database.
        average: f64,
    },
}

/// Which key filters tables get.
#[derive(Clone, Debug, PartialEq)]
pub struct FilterPolicy {
    /// Bits per key at each level (default: Monkey at 10 bits/key).
    pub bits_per_key: BitsPerKey,
    /// Levels at or below this one get Ribbon filters (about 30% smaller
    /// at the same FPR, slower to build), levels above get blocked Bloom.
    /// `None` means blocked Bloom everywhere. Default: `Some(2)`, so the
    /// short-lived L0 and L1 tables keep the fast-to-build filter.
    pub ribbon_from_level: Option<usize>,
    /// Drops the filter of the last level (RocksDB's
    /// `optimize_filters_for_hits`): right when lookups are nearly always
    /// for present keys, which the last level holds anyway. Default `false`.
    pub optimize_filters_for_hits: bool,
    /// Tables with more keys than this get a partitioned filter (one filter
    /// per range of data blocks, found through a small index) instead of a
    /// single one. Default 1,000,000 keys.
    pub partition_keys: u64,
}

impl FilterPolicy {
    /// Blocked Bloom at `bits_per_key` on every level: the fixed policy the
    /// comparisons with other engines use.
    #[must_use]
    pub fn blocked_bloom(bits_per_key: f64) -> Self {
        Self {
            bits_per_key: BitsPerKey::PerLevel(PerLevel::uniform(bits_per_key)),
            ribbon_from_level: None,
            ..Self::default()
        }
    }
}

impl Default for FilterPolicy {
    fn default() -> Self {
        Self {
            bits_per_key: BitsPerKey::Monkey { average: 10.0 },
            ribbon_from_level: Some(2),
            optimize_filters_for_hits: false,
            partition_keys: 1_000_000,
        }
    }
}

/// Durability of one write.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct WriteOptions {
    /// `fsync` the WAL before the write returns, so it survives a power
    /// cut. Without it a write survives a process crash but can be lost
    /// with the page cache. Default: the database's
    /// [`DbBuilder::sync_writes`](crate::DbBuilder::sync_writes).
    pub sync: Option<bool>,
}

impl WriteOptions {
    /// A write that is durable when it returns.
    #[must_use]
    pub const fn sync() -> Self {
        Self { sync: Some(true) }
    }

    /// A write that is buffered in the operating system.
    #[must_use]
    pub const fn no_sync() -> Self {
        Self { sync: Some(false) }
    }
}

/// What [`Db::persist`](crate::Db::persist) guarantees when it returns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PersistMode {
    /// Every acknowledged write is on stable storage (`fsync`).
    SyncAll,
    /// Every acknowledged write is in the operating system's page cache: it
    /// survives a process crash, not a power cut.
    Buffer,
}

/// What opening a database does with a WAL that a crash or damage left
/// bad. Either way a torn last record of the newest WAL, the write a crash
/// interrupted, is dropped: it was never acknowledged as synced.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum WalRecovery {
    /// Replay up to the first bad record of any WAL (damaged, or cut or
    /// garbled by a power cut) or the first gap in sequence numbers, and
    /// drop everything after it, in that WAL and in later ones: the
    /// database opens as it was at one moment before the damage. The
    /// default, as in RocksDB. What was dropped is in
    /// [`Stats::wal_recovery`](crate::Stats::wal_recovery).
    #[default]
    PointInTime,
    /// Refuse to open, with [`Error::Corruption`](crate::Error::Corruption),
    /// on any damage but that torn last record. After a power cut that
    /// kept part of an unsynced write out of order, this may refuse a
    /// database point-in-time recovery would open.
    AbsoluteConsistency,
}
