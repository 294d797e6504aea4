//! [`DbBuilder`]: where a database is and how it is tuned.

use std::path::PathBuf;
use std::sync::Arc;

use crate::error::{Error, Result};
use crate::filter_policy::FilterPolicy;
use crate::fs::{FileSystem, StdFs};
use crate::options::{CompactionStyle, Compression, WalRecovery};
use crate::value_def::IndexDef;

use super::Db;

/// Default [`DbBuilder::txn_max_bytes`]: 64 MiB, two default memtables
/// worth; a transaction larger than that is better split into batches.
const DEFAULT_TXN_MAX_BYTES: usize = 64 << 20;

/// Default [`DbBuilder::txn_history_bytes`]: 64 MiB of committed keys
/// (64 bytes of overhead each, so 0.5 to 1 million short keys).
const DEFAULT_TXN_HISTORY_BYTES: usize = 64 << 20;

/// Default [`DbBuilder::max_open_files`]: well under the usual soft limit
/// of 1,024 descriptors per process, leaving room for the application.
const DEFAULT_MAX_OPEN_FILES: usize = 500;

/// Default [`DbBuilder::filter_memory_bytes`].
const DEFAULT_FILTER_MEMORY_BYTES: u64 = 256 << 20;

/// Every setting of an open database (the builder's result).
#[derive(Debug, Clone)]
pub(super) struct Options {
    pub path: PathBuf,
    pub fs: Arc<dyn FileSystem>,
    pub memtable_bytes: usize,
    pub max_immutable_memtables: usize,
    pub table_target_bytes: u64,
    pub block_bytes: usize,
    pub restart_interval: usize,
    pub block_cache_bytes: u64,
    pub filter_memory_bytes: u64,
    pub max_open_files: usize,
    pub direct_reads: bool,
    pub compression: Compression,
    pub compaction: CompactionStyle,
    pub filter_policy: FilterPolicy,
    pub l0_slowdown_runs: usize,
    pub l0_stop_runs: usize,
    pub sync_writes: bool,
    pub wal_recovery: WalRecovery,
    pub background_threads: bool,
    /// Opened through a [`ReadOnlyFs`](crate::fs::ReadOnlyFs), refusing changes.
    pub read_only: bool,
    /// Compactions that run at once, and the pieces one large compaction
    /// is split into.
    pub compaction_threads: usize,
    /// Value indexes declared for this open.
    pub value_indexes: Vec<IndexDef>,
    pub value_index_order: usize,
    /// Whether transactions front their key sets with Bloom filters.
    pub txn_precheck: bool,
    /// Size limit of one transaction's sets, in bytes.
    pub txn_max_bytes: usize,
    /// Bound on the committed write sets kept for validation, in bytes.
    pub txn_history_bytes: usize,
}

/// Configures and opens a [`Db`]. Every setting has a default chosen for a
/// general-purpose store; see each method.
#[derive(Debug, Clone)]
#[must_use]
pub struct DbBuilder {
    options: Options,
}

impl DbBuilder {
    pub(super) fn new(path: PathBuf) -> Self {
        Self {
            options: Options {
                path,
                fs: Arc::new(StdFs),
                memtable_bytes: 32 << 20,
                max_immutable_memtables: 2,
                table_target_bytes: 64 << 20,
                block_bytes: 4096,
                restart_interval: 16,
                block_cache_bytes: 64 << 20,
                filter_memory_bytes: DEFAULT_FILTER_MEMORY_BYTES,
                max_open_files: DEFAULT_MAX_OPEN_FILES,
                direct_reads: false,
                compression: Compression::None,
                compaction: CompactionStyle::default(),
                filter_policy: FilterPolicy::default(),
                l0_slowdown_runs: 20,
                l0_stop_runs: 36,
                sync_writes: false,
                wal_recovery: WalRecovery::default(),
                background_threads: true,
                read_only: false,
                compaction_threads: default_compaction_threads(),
                value_indexes: Vec::new(),
                value_index_order: crate::db::value::DEFAULT_ORDER,
                txn_precheck: true,
                txn_max_bytes: DEFAULT_TXN_MAX_BYTES,
                txn_history_bytes: DEFAULT_TXN_HISTORY_BYTES,
            },
        }
    }

    /// Size at which the memtable is frozen and flushed to a table
    /// (default 32 MiB). Memory use is bounded by about
    /// `(1 + max_immutable_memtables) * memtable_bytes`.
    pub fn memtable_bytes(mut self, bytes: usize) -> Self {
        self.options.memtable_bytes = bytes;
        self
    }

    /// Frozen memtables allowed to wait for their flush before writes stop
    /// (default 2).
    pub fn max_immutable_memtables(mut self, count: usize) -> Self {
        self.options.max_immutable_memtables = count;
        self
    }

    /// Size at which compaction cuts its output into a new table
    /// (default 64 MiB, as fjall).
    pub fn table_target_bytes(mut self, bytes: u64) -> Self {
        self.options.table_target_bytes = bytes;
        self
    }

    /// Uncompressed size of a data block (default 4 KiB, one page).
    pub fn block_bytes(mut self, bytes: usize) -> Self {
        self.options.block_bytes = bytes;
        self
    }

    /// Capacity of the cache of data blocks (default 64 MiB). Filters and
    /// indexes are held apart, under [`DbBuilder::filter_memory_bytes`].
    pub fn block_cache_bytes(mut self, bytes: u64) -> Self {
        self.options.block_cache_bytes = bytes;
        self
    }

    /// Budget of the tables' metadata held in memory: indexes, key,
    /// prefix, range and value filters, and properties (default 256 MiB,
    /// which holds every filter of a store of about 150M keys at 10 bits
    /// per key). A table's metadata is read at its first use, not at open,
    /// and kept while it fits; past the budget the tables used least per
    /// byte are dropped, and one used less than all of them is read for
    /// each use and not kept. Resident bytes never exceed it.
    pub fn filter_memory_bytes(mut self, bytes: u64) -> Self {
        self.options.filter_memory_bytes = bytes;
        self
    }

    /// Most table files held open at once (default 500; at least 16).
    /// Tables beyond it keep their metadata in memory (within
    /// [`DbBuilder::filter_memory_bytes`]) and reopen their file when a
    /// data block must be read, so a database may hold far more tables
    /// than the process may open files (`ulimit -n`).
    pub fn max_open_files(mut self, files: usize) -> Self {
        self.options.max_open_files = files;
        self
    }

    /// Read table files around the operating system's page cache
    /// (`O_DIRECT`, RocksDB's `use_direct_reads`; default `false`): the
    /// block cache and the metadata budget are then all the memory reads
    /// get, as in a store larger than memory. On a file system that cannot
    /// read so (tmpfs) the open fails with an error that says so. The WAL
    /// and the manifest are read as usual.
    pub fn direct_reads(mut self, direct: bool) -> Self {
        self.options.direct_reads = direct;
        self
    }

    /// Block compression (default none).
    pub fn compression(mut self, compression: Compression) -> Self {
        self.options.compression = compression;
        self
    }

    /// Leveled (default) or tiered compaction. Fixed when the database is
    /// created: opening it later with the other style is an error.
    pub fn compaction_style(mut self, style: CompactionStyle) -> Self {
        self.options.compaction = style;
        self
    }

    /// Which key filters tables get (default: Monkey allocation of 10
    /// bits/key on average, Ribbon from level 2).
    pub fn filter_policy(mut self, policy: FilterPolicy) -> Self {
        self.options.filter_policy = policy;
        self
    }

    /// Level-0 runs at which each write is delayed by 1 ms per 16 KiB
    /// (default 20), and at which writes wait for compaction (default 36):
    /// how memory and read cost stay bounded when compaction falls behind.
    /// The defaults are RocksDB's. With LevelDB's 8 and 12, one writer
    /// loading 10M keys on 2 cores was delayed for 6 s of its 82 s; each
    /// L0 run costs a lookup one more filter probe.
    pub fn l0_stall_runs(mut self, slowdown: usize, stop: usize) -> Self {
        self.options.l0_slowdown_runs = slowdown;
        self.options.l0_stop_runs = stop;
        self
    }

    /// Whether writes without an explicit [`WriteOptions`](crate::WriteOptions)
    /// sync the WAL before returning (default `false`: a write survives a
    /// process crash at once, a power cut after the next sync or
    /// [`Db::persist`]).
    pub fn sync_writes(mut self, sync: bool) -> Self {
        self.options.sync_writes = sync;
        self
    }

    /// What opening does with a damaged WAL (default
    /// [`WalRecovery::PointInTime`]).
    pub fn wal_recovery(mut self, mode: WalRecovery) -> Self {
        self.options.wal_recovery = mode;
        self
    }

    /// The file layer (default: the operating system's). The crate's own
    /// tests pass a fault-injecting one to simulate power cuts.
    pub fn file_system(mut self, fs: Arc<dyn FileSystem>) -> Self {
        self.options.fs = fs;
        self
    }

    /// Whether flushes and compactions run on background threads (default
    /// `true`). With `false` they run only when asked ([`Db::flush`],
    /// [`Db::compact`]) or when a write would otherwise stall: deterministic
    /// behaviour for tests.
    pub fn background_threads(mut self, enabled: bool) -> Self {
        self.options.background_threads = enabled;
        self
    }

    /// Opens the database without changing it (default `false`), as
    /// RocksDB's `OpenForReadOnly`: nothing in its directory is written,
    /// renamed or removed, and its lock is not taken, so a database another
    /// handle or process holds opens too, as of its files now. The WALs are
    /// replayed into memory, as far as [`DbBuilder::wal_recovery`] allows,
    /// and never replaced. Writes, flushes, compactions, index changes and
    /// checkpoints return [`Error::ReadOnly`](crate::Error::ReadOnly); a
    /// directory without a database is an [`Error::InvalidArgument`](crate::Error::InvalidArgument).
    pub fn read_only(mut self, read_only: bool) -> Self {
        self.options.read_only = read_only;
        self
    }

    /// Compactions that may run at once on disjoint levels, and the
    /// key-range pieces a large compaction is split into, each merged on
    /// its own thread (default: half the cores, at least 2 and at most 8;
    /// RocksDB's `max_background_jobs` and `max_subcompactions`). Flushes
    /// have their own thread and never wait behind a compaction. Values
    /// below 1 count as 1.
    pub fn compaction_threads(mut self, threads: usize) -> Self {
        self.options.compaction_threads = threads.max(1);
        self
    }

    /// Declares a value index. A new database, or one without an index of
    /// that name, gets it at open (tables already stored get their leaves
    /// from the background backfill). An index the database already has
    /// must be declared with the same extractor (and leaf shape, if one is
    /// given). An index with a [`Custom`](crate::Extractor::Custom)
    /// extractor must be declared at every open: its function cannot be
    /// stored.
    pub fn value_index(mut self, def: IndexDef) -> Self {
        self.options.value_indexes.push(def);
        self
    }

    /// Fan-out of the Bloom-filter hierarchy over each value index's leaves
    /// (default 8; at least 2). Searches by value pick the hierarchy, the
    /// flat bit-sliced layout or a scan by estimated cost; the order only
    /// matters when the hierarchy is picked.
    pub fn value_index_order(mut self, order: usize) -> Self {
        self.options.value_index_order = order;
        self
    }

    /// Whether transactions put a scalable Bloom filter in front of their
    /// read and write sets, and committed write sets keep a partitioned
    /// Bloom filter for validation (default `true`). With `false` every
    /// look-up goes to the exact sets: the same answers, for comparing the
    /// cost (`sift-bench txn`).
    pub fn txn_precheck(mut self, enabled: bool) -> Self {
        self.options.txn_precheck = enabled;
        self
    }

    /// Most bytes one transaction may hold in its read and write sets
    /// (keys, values, and 64 bytes of overhead per entry; default 64 MiB).
    /// An operation that would go over it fails with
    /// [`Error::InvalidArgument`] and records nothing; the transaction
    /// stays usable. At least 4 KiB, at most 1 GiB (a commit is one WAL
    /// record).
    pub fn txn_max_bytes(mut self, bytes: usize) -> Self {
        self.options.txn_max_bytes = bytes;
        self
    }

    /// Most bytes of committed write sets kept while transactions are
    /// active, for validating them (default 64 MiB). When a long-running
    /// transaction would make the history outgrow it, the oldest sets are
    /// dropped and the transactions that needed them fail at commit with
    /// [`Error::Conflict`] (key `None`). At least 4 KiB.
    pub fn txn_history_bytes(mut self, bytes: usize) -> Self {
        self.options.txn_history_bytes = bytes;
        self
    }

    /// Opens the database, creating it if the directory holds none.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for settings out of range, an invalid or
    /// duplicate index declaration, a declared index whose definition
    /// differs from the stored one, or a stored custom index not declared;
    /// [`Error::Locked`] if another handle has it open, [`Error::Io`] and
    /// [`Error::Corruption`] for what recovery finds.
    pub fn open(self) -> Result<Db> {
        self.validate()?;
        Db::open_with(self.options)
    }

    fn validate(&self) -> Result<()> {
        let o = &self.options;
        let check = |ok: bool, what: &str| {
            if ok {
                Ok(())
            } else {
                Err(Error::InvalidArgument(what.to_owned()))
            }
        };
        check(
            o.memtable_bytes >= 4096,
            "memtable_bytes must be at least 4096",
        )?;
        check(o.max_open_files >= 16, "max_open_files must be at least 16")?;
        check(
            o.max_immutable_memtables >= 1,
            "max_immutable_memtables must be at least 1",
        )?;
        check(
            o.table_target_bytes >= 4096,
            "table_target_bytes must be at least 4096",
        )?;
        check(
            (256..=(16 << 20)).contains(&o.block_bytes),
            "block_bytes must be within 256 B ..= 16 MiB",
        )?;
        check(
            o.l0_slowdown_runs >= 1 && o.l0_stop_runs > o.l0_slowdown_runs,
            "l0 stall runs: need 1 <= slowdown < stop",
        )?;
        match o.compaction {
            CompactionStyle::Leveled {
                l0_trigger,
                size_ratio,
                l1_bytes,
            } => {
                check(
                    l0_trigger >= 1 && l0_trigger < o.l0_stop_runs,
                    "l0_trigger must be within 1 .. l0 stop runs",
                )?;
                check(size_ratio >= 2, "size_ratio must be at least 2")?;
                check(l1_bytes >= 4096, "l1_bytes must be at least 4096")?;
            }
            CompactionStyle::Tiered { runs_per_level } => {
                check(runs_per_level >= 2, "runs_per_level must be at least 2")?;
                // Level 0 is compacted once it holds this many runs; at the
                // stop threshold writers would wait for a compaction that
                // never starts.
                check(
                    runs_per_level < o.l0_stop_runs,
                    "runs_per_level must be below the l0 stop runs",
                )?;
            }
        }
        o.filter_policy.validate()?;
        check(
            o.value_index_order >= 2,
            "value_index_order must be at least 2",
        )?;
        check(
            (4096..=(1 << 30)).contains(&o.txn_max_bytes),
            "txn_max_bytes must be within 4 KiB ..= 1 GiB",
        )?;
        check(
            o.txn_history_bytes >= 4096,
            "txn_history_bytes must be at least 4 KiB",
        )?;
        for (at, def) in o.value_indexes.iter().enumerate() {
            def.validate()?;
            if o.value_indexes[..at].iter().any(|d| d.name() == def.name()) {
                return Err(Error::InvalidArgument(format!(
                    "index {:?} is declared twice",
                    def.name()
                )));
            }
        }
        Ok(())
    }
}

/// Half the cores, at least 2 (so one compaction's I/O overlaps
/// another's work even on 2 cores) and at most 8.
fn default_compaction_threads() -> usize {
    std::thread::available_parallelism()
        .map_or(2, |cores| cores.get() / 2)
        .clamp(2, 8)
}
