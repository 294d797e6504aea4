//! Snapshots: reads at a fixed sequence number.

use std::ops::RangeBounds;
use std::sync::Arc;

use crate::error::Result;
use sift_value_index::Method;

use crate::db::value::{Find, FindKeys};
use crate::key::SeqNo;
use crate::read_tier::InMemory;

use super::read::{DbIter, owned_bounds};
use super::{Inner, lock};

/// A read-only view of the database as of the moment it was taken.
/// While it lives, compaction keeps every version it can see; drop it
/// promptly.
#[derive(Debug)]
pub struct Snapshot {
    inner: Arc<Inner>,
    seq: SeqNo,
}

impl Snapshot {
    pub(super) fn new(inner: Arc<Inner>) -> Self {
        // Registered under the lock compaction reads the list with, so a
        // compaction either sees this snapshot or started before `seq`.
        let mut snapshots = lock(&inner.snapshots);
        let seq = inner.visible_seq();
        *snapshots.entry(seq).or_insert(0) += 1;
        drop(snapshots);
        Self { inner, seq }
    }

    /// The sequence number this snapshot reads at.
    #[must_use]
    pub fn seq(&self) -> SeqNo {
        self.seq
    }

    /// The value of `key` as of the snapshot.
    ///
    /// # Errors
    /// As [`Db::get`](crate::Db::get).
    pub fn get(&self, key: impl AsRef<[u8]>) -> Result<Option<Vec<u8>>> {
        self.inner.get_at(key.as_ref(), self.seq)
    }

    /// [`Snapshot::get`] without blocking on the disk: see
    /// [`Db::get_in_memory`](crate::Db::get_in_memory).
    ///
    /// # Errors
    /// As [`Db::get`](crate::Db::get), for what it read in memory.
    pub fn get_in_memory(&self, key: impl AsRef<[u8]>) -> Result<InMemory<Option<Vec<u8>>>> {
        InMemory::of(self.inner.get_in_memory(key.as_ref(), Some(self.seq)))
    }

    /// Whether `key` was present as of the snapshot.
    ///
    /// # Errors
    /// As [`Db::get`](crate::Db::get).
    pub fn contains_key(&self, key: impl AsRef<[u8]>) -> Result<bool> {
        Ok(self.get(key)?.is_some())
    }

    /// [`Db::find`](crate::Db::find) as of the snapshot.
    ///
    /// # Errors
    /// As [`Db::find`](crate::Db::find).
    pub fn find(&self, index: &str, value: impl AsRef<[u8]>) -> Result<Find> {
        self.inner
            .find_at(index, value.as_ref(), Some(self.seq), None, &[])
    }

    /// [`Db::find_with`](crate::Db::find_with) as of the snapshot.
    ///
    /// # Errors
    /// As [`Db::find`](crate::Db::find).
    pub fn find_with(&self, index: &str, value: impl AsRef<[u8]>, method: Method) -> Result<Find> {
        self.inner
            .find_at(index, value.as_ref(), Some(self.seq), Some(method), &[])
    }

    /// [`Db::find_keys`](crate::Db::find_keys) as of the snapshot.
    ///
    /// # Errors
    /// As [`Db::find`](crate::Db::find).
    pub fn find_keys(&self, index: &str, value: impl AsRef<[u8]>) -> Result<FindKeys> {
        self.find(index, value).map(FindKeys::new)
    }

    /// Entries in `range` as of the snapshot.
    pub fn range<K: AsRef<[u8]>, R: RangeBounds<K>>(&self, range: R) -> DbIter {
        self.inner.iter(owned_bounds(&range), self.seq)
    }

    /// Entries whose keys start with `prefix`, as of the snapshot.
    pub fn prefix(&self, prefix: impl AsRef<[u8]>) -> DbIter {
        self.inner
            .iter(crate::iter::prefix_bounds(prefix.as_ref()), self.seq)
    }
}

impl Drop for Snapshot {
    fn drop(&mut self) {
        let mut snapshots = lock(&self.inner.snapshots);
        if let Some(count) = snapshots.get_mut(&self.seq) {
            *count -= 1;
            if *count == 0 {
                snapshots.remove(&self.seq);
            }
        }
    }
}

impl Inner {
    /// The oldest sequence number any reader may still ask for: versions
    /// shadowed at or below it by a newer version are garbage.
    pub(super) fn oldest_snapshot(&self) -> SeqNo {
        let snapshots = lock(&self.snapshots);
        snapshots
            .keys()
            .next()
            .copied()
            .unwrap_or_else(|| self.visible_seq())
    }
}
