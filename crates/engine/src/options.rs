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
