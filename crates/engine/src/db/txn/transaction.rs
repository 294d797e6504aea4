//! The transaction handle. A [`Transaction`] reads at the snapshot where it began, sees its own
//! writes, and buffers them until [`Transaction::commit`], which validates
//! what it read (keys and scanned ranges) and wrote against the write sets
//! committed since its snapshot, then applies its writes as one
//! [`WriteBatch`] (one WAL record), all under the writer lock.

use std::ops::RangeBounds;
use std::sync::Arc;

use sift_filter::KeyHash;

use super::TxnIter;
use crate::batch::{MAX_KEY_LEN, MAX_VALUE_LEN, WriteBatch};
use crate::db::{Inner, Snapshot};
use crate::error::{Error, Result};
use crate::iter::UserBounds;
use crate::key::SeqNo;
use crate::txn::{FilteredMap, Footprint, Outcome, ValidationCounts};

/// Bytes charged per key a transaction holds, on top of the key and value:
/// the B-tree slot, the key's `Vec` header and its hash, rounded up.
const ENTRY_OVERHEAD: usize = 64;

/// A transaction: reads at its snapshot, buffers its writes, and commits
/// them atomically or not at all. Not shared between threads (`&mut self`
/// everywhere); start one per thread with
/// [`Db::transaction`](crate::Db::transaction).
///
/// Dropping it without [`commit`](Self::commit) rolls it back.
///
/// ```no_run
/// # fn main() -> siftdb::Result<()> {
/// let db = siftdb::Db::open("/tmp/sift-txn-doc")?;
/// let mut txn = db.transaction();
/// let balance = txn.get("alice")?.unwrap_or_default();
/// txn.insert("alice", [balance, b"+1".to_vec()].concat())?;
/// match txn.commit() {
///     Ok(_) => {}
///     Err(siftdb::Error::Conflict { .. }) => { /* run it again */ }
///     Err(other) => return Err(other),
/// }
/// # Ok(())
/// # }
/// ```
#[derive(Debug)]
pub struct Transaction {
    inner: Arc<Inner>,
    snapshot: Snapshot,
    reads: FilteredMap<()>,
    writes: FilteredMap<Option<Vec<u8>>>,
    /// Ranges scanned, as requested (a scan stopped early still claims
    /// its whole range: validation is conservative, never unsound).
    ranges: Vec<UserBounds>,
    /// What the sets hold, charged as keys, values and [`ENTRY_OVERHEAD`].
    bytes: usize,
    limit: usize,
    /// Whether the commit log still counts this transaction as active.
    active: bool,
}

impl Transaction {
    /// A transaction reading at `snapshot`, already registered as active.
    pub(super) fn new(inner: Arc<Inner>, snapshot: Snapshot, precheck: bool, limit: usize) -> Self {
        Self {
            inner,
            snapshot,
            reads: FilteredMap::new(precheck),
            writes: FilteredMap::new(precheck),
            ranges: Vec::new(),
            bytes: 0,
            limit,
            active: true,
        }
    }

    /// The sequence number the transaction reads at.
    #[must_use]
    pub fn snapshot_seq(&self) -> SeqNo {
        self.snapshot.seq()
    }

    /// The value of `key`: the transaction's own write if it made one,
    /// else the value at its snapshot (and the key joins the read set).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a key over
    /// [`MAX_KEY_LEN`](crate::MAX_KEY_LEN), or when recording the read
    /// would take the transaction over its size limit (nothing is recorded
    /// then, and the transaction stays usable); [`Error::Io`] or
    /// [`Error::Corruption`] from reading a table.
    pub fn get(&mut self, key: impl AsRef<[u8]>) -> Result<Option<Vec<u8>>> {
        let key = key.as_ref();
        check_key(key)?;
        // Hashed once: the write set's filter, the read set's filter and
        // the tables' filters all take this value.
        let hash = KeyHash::of(key);
        if let Some(own) = self.writes.get(key, hash) {
            return Ok(own.clone());
        }
        self.note_read(key, hash)?;
        self.inner.get_hashed(key, hash, self.snapshot.seq())
    }

    /// Whether `key` is present (as [`get`](Self::get)).
    ///
    /// # Errors
    /// As [`get`](Self::get).
    pub fn contains_key(&mut self, key: impl AsRef<[u8]>) -> Result<bool> {
        Ok(self.get(key)?.is_some())
    }

    /// Sets `key` to `value` when the transaction commits.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a key or value over its limit, or
    /// when the write would take the transaction over its size limit
    /// ([`DbBuilder::txn_max_bytes`](crate::DbBuilder::txn_max_bytes)):
    /// nothing is recorded, and the transaction stays usable.
    pub fn insert(&mut self, key: impl AsRef<[u8]>, value: impl AsRef<[u8]>) -> Result<()> {
        let value = value.as_ref();
        if value.len() > MAX_VALUE_LEN {
            return Err(Error::InvalidArgument(format!(
                "a value of {} bytes exceeds the limit MAX_VALUE_LEN = {MAX_VALUE_LEN} bytes",
                value.len()
            )));
        }
        self.write(key.as_ref(), Some(value))
    }

    /// Removes `key` when the transaction commits.
    ///
    /// # Errors
    /// As [`insert`](Self::insert).
    pub fn remove(&mut self, key: impl AsRef<[u8]>) -> Result<()> {
        self.write(key.as_ref(), None)
    }

    fn write(&mut self, key: &[u8], value: Option<&[u8]>) -> Result<()> {
        check_key(key)?;
        let hash = KeyHash::of(key);
        let new_len = value.map_or(0, <[u8]>::len);
        // Charged as if the key were new: a rewrite of a held key is
        // rarely near the limit, and this spares a look-up.
        self.charge(key.len() + new_len + ENTRY_OVERHEAD)?;
        let old = self.writes.insert(key, hash, value.map(<[u8]>::to_vec));
        if let Some(old) = old {
            let old_len = old.map_or(0, |v| v.len());
            self.bytes -= key.len() + old_len + ENTRY_OVERHEAD;
        }
        Ok(())
    }

    /// Entries with keys in `range` as of the snapshot, with the
    /// transaction's own writes over them, in key order (`.rev()` for
    /// descending). The whole range joins the read set: a commit after the
    /// snapshot that writes any key in it makes this transaction conflict.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when recording the range would take the
    /// transaction over its size limit (nothing is recorded then).
    pub fn range<K: AsRef<[u8]>, R: RangeBounds<K>>(&mut self, range: R) -> Result<TxnIter<'_>> {
        let own = |bound: std::ops::Bound<&K>| bound.map(|key| key.as_ref().to_vec());
        self.scan((own(range.start_bound()), own(range.end_bound())))
    }

    /// Entries whose keys start with `prefix`, as [`range`](Self::range).
    ///
    /// # Errors
    /// As [`range`](Self::range).
    pub fn prefix(&mut self, prefix: impl AsRef<[u8]>) -> Result<TxnIter<'_>> {
        self.scan(crate::iter::prefix_bounds(prefix.as_ref()))
    }

    fn scan(&mut self, bounds: UserBounds) -> Result<TxnIter<'_>> {
        let bound_len = |b: &std::ops::Bound<Vec<u8>>| match b {
            std::ops::Bound::Included(k) | std::ops::Bound::Excluded(k) => k.len(),
            std::ops::Bound::Unbounded => 0,
        };
        self.charge(bound_len(&bounds.0) + bound_len(&bounds.1) + ENTRY_OVERHEAD)?;
        let snapshot = self.inner.iter(bounds.clone(), self.snapshot.seq());
        let own = self.writes.range(&bounds);
        self.ranges.push(bounds);
        Ok(TxnIter::new(snapshot, own))
    }

    /// Adds `key` to the read set: one insert, whose filter probe tells
    /// a new key from a repeated read. Only at the size limit does a
    /// separate look-up decide whether the read needs room.
    fn note_read(&mut self, key: &[u8], hash: KeyHash) -> Result<()> {
        let cost = key.len() + ENTRY_OVERHEAD;
        if self.bytes.saturating_add(cost) > self.limit {
            if self.reads.get(key, hash).is_some() {
                return Ok(());
            }
            return self.charge(cost);
        }
        if self.reads.insert(key, hash, ()).is_none() {
            self.bytes += cost;
        }
        Ok(())
    }

    /// Reserves `bytes` of the size limit, or fails without reserving.
    fn charge(&mut self, bytes: usize) -> Result<()> {
        let total = self.bytes.saturating_add(bytes);
        if total > self.limit {
            return Err(Error::InvalidArgument(format!(
                "transaction size limit reached: {} bytes held, {bytes} more asked, \
                 limit {} (DbBuilder::txn_max_bytes); the operation was not recorded, \
                 commit or roll back what the transaction holds",
                self.bytes, self.limit
            )));
        }
        self.bytes = total;
        Ok(())
    }

    /// Keys read, keys written, and ranges scanned so far.
    #[must_use]
    pub fn footprint_len(&self) -> (usize, usize, usize) {
        (self.reads.len(), self.writes.len(), self.ranges.len())
    }

    /// Validates and applies the transaction's writes atomically, as one
    /// WAL record. Returns the sequence number it is serialized at: that of
    /// its last write, or its snapshot's for a transaction that wrote
    /// nothing (it needs no validation: its reads are one consistent
    /// snapshot).
    ///
    /// # Errors
    /// [`Error::Conflict`] naming a key when a commit after the snapshot
    /// wrote a key this transaction read or wrote, or a key within a range
    /// it scanned: nothing was applied. [`Error::Io`] or
    /// [`Error::Background`] as [`Db::write`](crate::Db::write).
    pub fn commit(mut self) -> Result<SeqNo> {
        let mut validation = ValidationCounts::default();
        let result = if self.writes.is_empty() {
            self.inner.end_txn(self.snapshot.seq());
            Ok(self.snapshot.seq())
        } else {
            let mut batch = WriteBatch::new();
            let mut written = Vec::with_capacity(self.writes.len());
            for (key, hash, value) in self.writes.iter() {
                match value {
                    Some(value) => batch.insert(key, value),
                    None => batch.remove(key),
                };
                written.push((key.clone(), *hash));
            }
            let footprint = Footprint {
                snapshot: self.snapshot.seq(),
                reads: &self.reads,
                ranges: &self.ranges,
                writes: &self.writes,
            };
            self.inner
                .commit_txn(&footprint, &batch, written, &mut validation)
        };
        self.active = false;
        let outcome = match &result {
            Ok(_) => Outcome::Committed,
            Err(Error::Conflict { .. }) => Outcome::Conflict,
            Err(_) => Outcome::RolledBack,
        };
        self.finish(outcome, validation);
        result
    }

    /// Discards everything the transaction did (as dropping it does).
    pub fn rollback(self) {}

    /// Adds this transaction's counts to the database's statistics.
    fn finish(&mut self, outcome: Outcome, validation: ValidationCounts) {
        let mut lookups = self.reads.counts;
        lookups.rejections += self.writes.counts.rejections;
        lookups.exact += self.writes.counts.exact;
        self.inner.txn_counters().end(outcome, lookups, validation);
        // Counted once: a later `finish` (from drop) finds zeros.
        self.reads.counts = Default::default();
        self.writes.counts = Default::default();
    }
}

impl Drop for Transaction {
    fn drop(&mut self) {
        if self.active {
            self.active = false;
            self.inner.end_txn(self.snapshot.seq());
            self.finish(Outcome::RolledBack, ValidationCounts::default());
        }
    }
}

fn check_key(key: &[u8]) -> Result<()> {
    if key.len() > MAX_KEY_LEN {
        return Err(Error::InvalidArgument(format!(
            "a key of {} bytes exceeds the limit MAX_KEY_LEN = {MAX_KEY_LEN} bytes",
            key.len()
        )));
    }
    Ok(())
}
