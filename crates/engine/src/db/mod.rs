//! The database handle and the state its threads share.

mod background;
mod builder;
mod checkpoint;
mod compact;
mod counters;
mod flush;
mod open;
mod read;
mod run_iter;
mod snapshot;
mod stats;
mod txn;
mod value;
mod verify_open;
mod wakeup;
mod wal_replay;
mod write;
mod write_group;

use std::collections::BTreeMap;
use std::ops::RangeBounds;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{
    Arc, Condvar, Mutex, MutexGuard, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard,
    TryLockError,
};

use arc_swap::ArcSwap;
use arc_swap::Guard;
use std::thread::JoinHandle;

pub use builder::DbBuilder;
pub use checkpoint::copy_database;
pub use read::DbIter;
pub use snapshot::Snapshot;
pub use stats::{LevelStats, Stats};
pub use txn::{Transaction, TxnIter};
pub use value::{Find, FindKeys, FindStats, IndexInfo, IndexStats};

use crate::batch::WriteBatch;
use crate::error::{Error, Result};
use crate::fs::LockGuard;
use crate::key::SeqNo;
use crate::log::LogWriter;
use crate::manifest::VersionEdit;
use crate::memtable::Memtable;
use crate::options::{PersistMode, WriteOptions};
use crate::read_tier::InMemory;
use crate::value_def::IndexRecord;
use crate::version::SharedTables;
use crate::version::{LiveTable, Version, VersionSet};
use builder::Options;
use counters::Counters;
use flush::{FilterSizing, TableJob, projected_entries};
use sift_value_index::Method;

/// An open database. Cheap to share between threads (`Db: Send + Sync`;
/// wrap it in an `Arc`). Dropping it stops the background threads and
/// syncs the WAL.
///
/// ```no_run
/// # fn main() -> siftdb::Result<()> {
/// let db = siftdb::Db::builder("/tmp/sift-example").open()?;
/// db.insert(b"user:1", b"ada")?;
/// assert_eq!(db.get(b"user:1")?.as_deref(), Some(&b"ada"[..]));
/// for item in db.prefix(b"user:") {
///     let (key, value) = item?;
///     println!("{key:?} = {value:?}");
/// }
/// # Ok(())
/// # }
/// ```
#[derive(Debug)]
pub struct Db {
    inner: Arc<Inner>,
    threads: Vec<JoinHandle<()>>,
}

// The hub. Only `db/` sees these types and their fields: a feature that
// needs them lives under `db/` (`db/txn/`, `db/value/`), and the layers
// below (`sstable/`, `version/`, `manifest/`, `log/`) never import `db/`.
// Each field says what guards it.

/// What readers see: the memtables and the version of one moment.
/// Immutable once installed in [`Inner::current`].
#[derive(Debug)]
struct SuperVersion {
    /// Takes new writes.
    active: Arc<Memtable>,
    /// Frozen, waiting to be flushed; newest first.
    immutables: Vec<Arc<Memtable>>,
    /// The tables.
    version: Arc<Version>,
}

/// The WAL and sequence numbers, guarded by [`Inner::writer`]: held by
/// the leader of a write group while it writes the group (see
/// `write_group.rs`), by a transaction as it begins, and by a rotation.
#[derive(Debug)]
struct Writer {
    wal: LogWriter,
    /// Sequence number of the last write logged (readers see up to
    /// [`Inner::visible_seq`], published after the memtable insert).
    last_seq: SeqNo,
    /// Bytes written since the last delay while compaction is behind.
    delay_debt: u64,
    /// Active transactions and the write sets committed since the oldest
    /// one began: validated and updated under this lock with every write.
    txns: crate::txn::CommitLog,
}

/// Structure changes (flush, compaction, memtable rotation), guarded by
/// [`Inner::state`]; [`Inner::current`] is replaced only while holding it.
#[derive(Debug)]
struct State {
    /// The manifest, file numbers and the log number.
    versions: VersionSet,
    /// Set when a background flush or compaction fails.
    background_error: Option<String>,
    shutting_down: bool,
    /// Planner compactions under way, each on its own levels (see
    /// `compaction::plan_beside`).
    compactions: Vec<crate::compaction::CompactionTask>,
    /// Compactions and table rewrites under way: idle at zero.
    jobs: usize,
}

/// Everything the handle and its background threads share. Lock order:
/// `writer`, then `flush_lock` or `compaction_lock` (without background
/// threads a writer flushes and compacts itself), then `state`;
/// `snapshots` and the locks inside `value_leaves` are taken last: nothing
/// else is locked while one is held.
#[derive(Debug)]
struct Inner {
    // Fixed at open.
    options: Options,
    /// What point-in-time WAL recovery dropped at open, if anything.
    wal_recovery: Option<String>,
    _lock: Box<dyn LockGuard>,

    // What readers load without a lock.
    /// Swapped atomically (under `state`), so a reader's load takes no
    /// lock and (through [`Inner::pin`]) bumps no shared reference count.
    current: ArcSwap<SuperVersion>,
    /// Sequence number of the newest write readers may see.
    visible_seq: AtomicU64,
    /// The live value indexes; replaced under `state`.
    indexes: ArcSwap<Vec<IndexRecord>>,
    /// The block cache, the table files held open (under
    /// `max_open_files`) and the resident tables' metadata (under
    /// `filter_memory_bytes`).
    tables: Arc<SharedTables>,

    // Locks.
    /// Writers waiting for their group; its lock is never held while
    /// another is taken.
    write_queue: write_group::WriteQueue,
    writer: Mutex<Writer>,
    state: Mutex<State>,
    /// Shared by planner compactions, which run side by side on disjoint
    /// levels; held alone by a range compaction or a table rewrite, which
    /// plan on their own.
    compaction_lock: RwLock<()>,
    /// Held while a memtable is flushed, so no memtable is flushed twice.
    flush_lock: Mutex<()>,
    /// Live snapshots: sequence number -> how many handles.
    snapshots: Mutex<BTreeMap<SeqNo, usize>>,

    // Signals between the handle and the background threads.
    /// Signalled whenever `state` or `current` changes.
    changed: Condvar,
    /// Counts installs of `current` and ends of compactions, so sleeping
    /// background threads can tell a change happened.
    generation: AtomicU64,
    /// Set with `State::background_error`; lets writers check it without
    /// taking the state lock.
    failed: AtomicBool,

    // Search by value.
    /// Search structures over the value indexes' leaves, locked per index.
    value_leaves: crate::db::value::IndexLeaves,

    // Statistics, always on.
    counters: Counters,
    txn_counters: crate::txn::TxnCounters,
}

/// Locks a mutex; a thread that panicked while holding it cannot have left
/// the guarded state half-updated in a way readers rely on (every update is
/// a single assignment), so the poison is ignored.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Shares a read-write lock; poison is ignored as in [`lock`].
fn read<T>(lock: &RwLock<T>) -> RwLockReadGuard<'_, T> {
    lock.read().unwrap_or_else(PoisonError::into_inner)
}

/// Holds a read-write lock alone; poison is ignored as in [`lock`].
fn write<T>(lock: &RwLock<T>) -> RwLockWriteGuard<'_, T> {
    lock.write().unwrap_or_else(PoisonError::into_inner)
}

/// [`write`] if nobody holds the lock now, without waiting (a waiting
/// writer would make new readers wait behind it).
fn try_write<T>(lock: &RwLock<T>) -> Option<RwLockWriteGuard<'_, T>> {
    match lock.try_write() {
        Ok(guard) => Some(guard),
        Err(TryLockError::Poisoned(poisoned)) => Some(poisoned.into_inner()),
        Err(TryLockError::WouldBlock) => None,
    }
}

impl Inner {
    /// The memtables and version readers should use now.
    fn current(&self) -> Arc<SuperVersion> {
        self.current.load_full()
    }

    /// The memtables and version readers should use now, for a short
    /// borrow: cheaper than [`Inner::current`], and it keeps them alive
    /// just the same while held (hold it briefly: `arc_swap` keeps a few
    /// such loads per thread without touching the reference count).
    fn pin(&self) -> Guard<Arc<SuperVersion>> {
        self.current.load()
    }

    /// Replaces what readers see. Callers hold `state`, which orders
    /// installs and lets background threads wait for them without missing one.
    fn install(&self, next: SuperVersion) {
        self.current.store(Arc::new(next));
        self.generation.fetch_add(1, Ordering::Release);
        self.changed.notify_all();
    }

    /// How many times `current` has been replaced.
    fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }

    /// The newest sequence number readers may see.
    fn visible_seq(&self) -> SeqNo {
        self.visible_seq.load(Ordering::Acquire)
    }

    /// Path of a file of this database.
    fn file(&self, name: &str) -> PathBuf {
        self.options.path.join(name)
    }

    /// Logs `edit` through the version set and returns the version it
    /// produces; the caller installs it. Every version change goes through
    /// here: nothing is logged after a failure, and a failed manifest write
    /// fails the database.
    fn log_and_apply(
        &self,
        state: &mut State,
        edit: VersionEdit,
        opened: &BTreeMap<u64, Arc<LiveTable>>,
    ) -> Result<Arc<Version>> {
        Self::check_background_error(state)?;
        let base = Arc::clone(&self.current().version);
        let indexes = self.indexes.load();
        let logged = state.versions.log_and_apply(&base, edit, opened, &indexes);
        match logged {
            Ok(version) => Ok(Arc::new(version)),
            Err(err) => {
                if state.versions.poisoned().is_some() {
                    self.fail_locked(state, &err);
                }
                Err(err)
            }
        }
    }

    /// Refuses a change to a database opened read-only.
    fn writable(&self) -> Result<()> {
        if self.options.read_only {
            return Err(Error::ReadOnly {
                path: self.options.path.clone(),
            });
        }
        Ok(())
    }

    /// Fails if background work has failed (writes are refused after that)
    /// or the database was closed.
    fn check_background_error(state: &State) -> Result<()> {
        if state.shutting_down {
            return Err(Error::Closed);
        }
        match &state.background_error {
            Some(detail) => Err(Error::Background(detail.clone())),
            None => Ok(()),
        }
    }
}

impl Db {
    /// Starts configuring the database in directory `path`.
    pub fn builder(path: impl AsRef<Path>) -> DbBuilder {
        DbBuilder::new(path.as_ref().to_path_buf())
    }

    /// Opens (or creates) the database in `path` with default settings.
    ///
    /// # Errors
    /// As [`DbBuilder::open`].
    pub fn open(path: impl AsRef<Path>) -> Result<Self> {
        Self::builder(path).open()
    }

    /// The value of `key`, if present.
    ///
    /// # Errors
    /// [`Error::Io`] or [`Error::Corruption`] from reading a table;
    /// [`Error::InvalidArgument`] for a key longer than [`MAX_KEY_LEN`](crate::MAX_KEY_LEN).
    pub fn get(&self, key: impl AsRef<[u8]>) -> Result<Option<Vec<u8>>> {
        self.inner.get_latest(key.as_ref())
    }

    /// [`Db::get`] without blocking on the disk, as RocksDB's read tier
    /// `kBlockCacheTier`: the answer from memtables, resident table
    /// metadata and the block cache, or [`InMemory::NeedsRead`] where it
    /// would need a file read. A missing key whose filters are resident
    /// and a key whose block is cached are answered; so is every key in a
    /// memtable. For a caller that must not wait while it holds something
    /// (the Python package tries this while holding the interpreter lock,
    /// and releases the lock only for the reads it needs).
    ///
    /// # Errors
    /// As [`Db::get`], for what it read in memory.
    pub fn get_in_memory(&self, key: impl AsRef<[u8]>) -> Result<InMemory<Option<Vec<u8>>>> {
        InMemory::of(self.inner.get_in_memory(key.as_ref(), None))
    }

    /// The values of `keys`, in order, as of one moment: each is what
    /// [`Db::get`] would return, but all are read at the same sequence
    /// number, and the batch shares its work as RocksDB's `MultiGet` does
    /// (one pinned version, the filter lines of all keys loaded together,
    /// each data block read once).
    ///
    /// # Errors
    /// As [`Db::get`], for any of the keys.
    pub fn multi_get<K: AsRef<[u8]>>(&self, keys: &[K]) -> Result<Vec<Option<Vec<u8>>>> {
        let keys: Vec<&[u8]> = keys.iter().map(AsRef::as_ref).collect();
        self.inner.multi_get_latest(&keys)
    }

    /// Whether `key` is present.
    ///
    /// # Errors
    /// As [`Db::get`].
    pub fn contains_key(&self, key: impl AsRef<[u8]>) -> Result<bool> {
        Ok(self.get(key)?.is_some())
    }

    /// Sets `key` to `value`.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] if the key or value is over its limit
    /// ([`MAX_KEY_LEN`](crate::MAX_KEY_LEN), [`MAX_VALUE_LEN`](crate::MAX_VALUE_LEN));
    /// [`Error::Io`] if the WAL cannot be written; [`Error::Background`]
    /// after a failed flush or compaction.
    pub fn insert(&self, key: impl AsRef<[u8]>, value: impl AsRef<[u8]>) -> Result<()> {
        self.insert_with(key, value, WriteOptions::default())
    }

    /// [`Db::insert`] with explicit durability: `WriteOptions::sync()`
    /// returns once the write is on disk.
    ///
    /// # Errors
    /// As [`Db::insert`].
    pub fn insert_with(
        &self,
        key: impl AsRef<[u8]>,
        value: impl AsRef<[u8]>,
        options: WriteOptions,
    ) -> Result<()> {
        self.inner
            .write_one(key.as_ref(), Some(value.as_ref()), options)
    }

    /// Removes `key` (a no-op if absent).
    ///
    /// # Errors
    /// As [`Db::insert`].
    pub fn remove(&self, key: impl AsRef<[u8]>) -> Result<()> {
        self.remove_with(key, WriteOptions::default())
    }

    /// [`Db::remove`] with explicit durability.
    ///
    /// # Errors
    /// As [`Db::insert`].
    pub fn remove_with(&self, key: impl AsRef<[u8]>, options: WriteOptions) -> Result<()> {
        self.inner.write_one(key.as_ref(), None, options)
    }

    /// Applies every operation of `batch` atomically: after a crash either
    /// all of them are present or none.
    ///
    /// # Errors
    /// As [`Db::insert`].
    pub fn write(&self, batch: &WriteBatch) -> Result<()> {
        self.write_with(batch, WriteOptions::default())
    }

    /// [`Db::write`] with explicit durability.
    ///
    /// # Errors
    /// As [`Db::insert`].
    pub fn write_with(&self, batch: &WriteBatch, options: WriteOptions) -> Result<()> {
        self.inner.write(batch, options)
    }

    /// Entries with keys in `range`, in key order (`.rev()` for descending),
    /// as of this call.
    pub fn range<K: AsRef<[u8]>, R: RangeBounds<K>>(&self, range: R) -> DbIter {
        self.inner.iter_latest(read::owned_bounds(&range))
    }

    /// Entries whose keys start with `prefix`, in key order.
    pub fn prefix(&self, prefix: impl AsRef<[u8]>) -> DbIter {
        self.inner
            .iter_latest(crate::iter::prefix_bounds(prefix.as_ref()))
    }

    /// A consistent read view as of now: later writes are invisible to it,
    /// and compaction keeps the versions it can see.
    #[must_use]
    pub fn snapshot(&self) -> Snapshot {
        Snapshot::new(Arc::clone(&self.inner))
    }

    /// Makes every acknowledged write durable as `mode` says.
    ///
    /// # Errors
    /// [`Error::Io`] if the WAL cannot be flushed or synced.
    pub fn persist(&self, mode: PersistMode) -> Result<()> {
        self.inner.persist(mode)
    }

    /// Writes the memtable (and every frozen one) to level-0 tables and
    /// waits until that is done.
    ///
    /// # Errors
    /// [`Error::Io`] if a table cannot be written; [`Error::Background`].
    pub fn flush(&self) -> Result<()> {
        self.inner.flush_all()
    }

    /// Blocks until no flush or compaction is pending or running.
    ///
    /// # Errors
    /// [`Error::Background`] if background work failed meanwhile.
    pub fn wait_for_compactions(&self) -> Result<()> {
        self.inner.wait_until_idle()
    }

    /// Flushes, then merges every table into the last level: one sorted
    /// run, no shadowed versions or tombstones that no snapshot needs.
    ///
    /// # Errors
    /// [`Error::Io`] or [`Error::Corruption`] met while merging.
    pub fn compact(&self) -> Result<()> {
        self.inner.compact_range(None)
    }

    /// Like [`Db::compact`], limited to the tables overlapping the user keys
    /// `from ..= to`.
    ///
    /// # Errors
    /// As [`Db::compact`]; [`Error::InvalidArgument`] if `from > to`.
    pub fn compact_range(&self, from: impl AsRef<[u8]>, to: impl AsRef<[u8]>) -> Result<()> {
        let (from, to) = (from.as_ref(), to.as_ref());
        if from > to {
            return Err(Error::InvalidArgument(
                "compact_range: from is after to".into(),
            ));
        }
        self.inner.compact_range(Some((from, to)))
    }

    /// Every key whose value, by the value index `index`, is `value`, with
    /// that value, as of this call. Each key once, and only if its newest
    /// version has the value and is not deleted. The planner picks how the
    /// index's leaves are searched; [`Find::stats`] tells what it did.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] if there is no index called `index`;
    /// [`Error::Io`] or [`Error::Corruption`] from reading a table.
    pub fn find(&self, index: &str, value: impl AsRef<[u8]>) -> Result<Find> {
        self.inner.find_at(index, value.as_ref(), None, None, &[])
    }

    /// The results of [`Db::find`] whose keys are `from` or after: a long
    /// answer read in pages, each search starting just past the last key
    /// of the page before. Blocks wholly before `from` are not read.
    ///
    /// # Errors
    /// As [`Db::find`].
    pub fn find_from(
        &self,
        index: &str,
        value: impl AsRef<[u8]>,
        from: impl AsRef<[u8]>,
    ) -> Result<Find> {
        self.inner
            .find_at(index, value.as_ref(), None, None, from.as_ref())
    }

    /// [`Db::find`] with the leaves searched by `method` (for comparisons:
    /// every method returns the same keys).
    ///
    /// # Errors
    /// As [`Db::find`].
    pub fn find_with(&self, index: &str, value: impl AsRef<[u8]>, method: Method) -> Result<Find> {
        self.inner
            .find_at(index, value.as_ref(), None, Some(method), &[])
    }

    /// The keys [`Db::find`] returns, without their values.
    ///
    /// # Errors
    /// As [`Db::find`].
    pub fn find_keys(&self, index: &str, value: impl AsRef<[u8]>) -> Result<FindKeys> {
        self.find(index, value).map(FindKeys::new)
    }

    /// Counters since open, the shape of the tables now, and the filters
    /// of each value index (their sizes and measured false-positive rate).
    #[must_use]
    pub fn stats(&self) -> Stats {
        let version = Arc::clone(&self.inner.current().version);
        let mut stats =
            stats::snapshot(&self.inner.counters, &version, &self.inner.tables.residency);
        stats.indexes = self.inner.index_stats(&version);
        stats.wal_recovery.clone_from(&self.inner.wal_recovery);
        stats
    }

    /// The directory the database lives in.
    #[must_use]
    pub fn path(&self) -> &Path {
        &self.inner.options.path
    }
}

impl Drop for Db {
    fn drop(&mut self) {
        self.inner.shut_down(&mut self.threads);
    }
}
