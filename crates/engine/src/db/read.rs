//! The read path: point lookups that hash the key once and share the hash
//! with every filter, and range iterators over memtables and runs.

use std::collections::VecDeque;
use std::ops::{Bound, RangeBounds};
use std::sync::Arc;

use sift_filter::KeyHash;

use crate::batch::MAX_KEY_LEN;
use crate::error::{Error, Result};
use crate::iter::{BoxedSource, MergeIter, VisibleIter};
use crate::key::{Entry, SeqNo, ValueKind};
use crate::sstable::{Table, TableIter};
use crate::version::Run;

use super::stats::{add, bump};
use super::{Inner, SuperVersion};

/// User-key bounds owned by an iterator.
pub(crate) type Bounds = (Bound<Vec<u8>>, Bound<Vec<u8>>);

/// Copies the caller's range into owned bounds.
pub(crate) fn owned_bounds<K: AsRef<[u8]>, R: RangeBounds<K>>(range: &R) -> Bounds {
    let own = |bound: Bound<&K>| match bound {
        Bound::Included(key) => Bound::Included(key.as_ref().to_vec()),
        Bound::Excluded(key) => Bound::Excluded(key.as_ref().to_vec()),
        Bound::Unbounded => Bound::Unbounded,
    };
    (own(range.start_bound()), own(range.end_bound()))
}

impl Inner {
    /// The value of `key` as of sequence number `seq`.
    ///
    /// The key is hashed once, here; the same [`KeyHash`] is handed to the
    /// filter of every table the lookup meets.
    pub(crate) fn get_at(&self, key: &[u8], seq: SeqNo) -> Result<Option<Vec<u8>>> {
        if key.len() > MAX_KEY_LEN {
            return Err(Error::InvalidArgument(format!(
                "key of {} bytes is over the limit of {MAX_KEY_LEN}",
                key.len()
            )));
        }
        bump(&self.counters.gets);
        let current = self.current();
        for memtable in std::iter::once(&current.active).chain(&current.immutables) {
            if let Some(entry) = memtable.get(key, seq) {
                bump(&self.counters.memtable_hits);
                return Ok(value_of(entry));
            }
        }
        let hash = KeyHash::of(key);
        bump(&self.counters.key_hashes);
        let mut blocks_read = 0;
        let found = self.get_from_tables(&current, key, hash, seq, &mut blocks_read);
        add(&self.counters.data_blocks_read, blocks_read);
        Ok(found?.and_then(value_of))
    }

    fn get_from_tables(
        &self,
        current: &SuperVersion,
        key: &[u8],
        hash: KeyHash,
        seq: SeqNo,
        blocks_read: &mut u64,
    ) -> Result<Option<Entry>> {
        for (level, tables) in current.version.levels.iter().enumerate() {
            let counters = self.counters.level(level);
            for run in &tables.runs {
                let Some(table) = run.table_for(key) else {
                    continue;
                };
                if table.meta.min_seq > seq {
                    continue;
                }
                let may_contain = table.table.may_contain(key, hash);
                counters.probe(may_contain);
                if !may_contain {
                    continue;
                }
                match table.table.get(key, seq, blocks_read)? {
                    Some(entry) => return Ok(Some(entry)),
                    None => counters.false_positive(),
                }
            }
        }
        Ok(None)
    }

    /// An iterator over the user keys within `bounds` as of `seq`.
    pub(crate) fn iter(&self, bounds: Bounds, seq: SeqNo) -> DbIter {
        let current = self.current();
        let mut sources: Vec<BoxedSource<'static>> = Vec::new();
        for memtable in std::iter::once(&current.active).chain(&current.immutables) {
            sources.push(Box::new(memtable.iter(bounds.clone())));
        }
        for level in &current.version.levels {
            for run in &level.runs {
                if let Some(iter) = RunIter::new(run, &bounds) {
                    sources.push(Box::new(iter));
                }
            }
        }
        DbIter {
            inner: VisibleIter::new(MergeIter::new(sources), seq, bounds),
        }
    }
}

/// The value an entry stands for: `None` for a tombstone.
fn value_of(entry: Entry) -> Option<Vec<u8>> {
    match entry.key.kind {
        ValueKind::Value => Some(entry.value),
        ValueKind::Delete => None,
    }
}

/// Keys and values in a range, as of one sequence number, ascending (or
/// descending with `.rev()`). Yields `Err` if a table cannot be read, then
/// ends. Holds the tables it reads open until dropped.
pub struct DbIter {
    inner: VisibleIter<'static>,
}

impl std::fmt::Debug for DbIter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DbIter").finish_non_exhaustive()
    }
}

impl Iterator for DbIter {
    type Item = Result<(Vec<u8>, Vec<u8>)>;

    fn next(&mut self) -> Option<Self::Item> {
        self.inner.next()
    }
}

impl DoubleEndedIterator for DbIter {
    fn next_back(&mut self) -> Option<Self::Item> {
        self.inner.next_back()
    }
}

/// The entries of one sorted run within bounds, opening each table only
/// when the iteration reaches it: a seek costs one table, not the run.
struct RunIter {
    /// Tables no end has opened yet, in key order.
    pending: VecDeque<Arc<Table>>,
    bounds: Bounds,
    front: Option<TableIter>,
    back: Option<TableIter>,
}

impl RunIter {
    /// `None` when no table of the run overlaps `bounds`.
    fn new(run: &Run, bounds: &Bounds) -> Option<Self> {
        let pending: VecDeque<Arc<Table>> = run
            .tables
            .iter()
            .filter(|t| {
                below_upper(t.smallest_user_key(), &bounds.1)
                    && above_lower(t.largest_user_key(), &bounds.0)
            })
            .map(|t| Arc::clone(&t.table))
            .collect();
        (!pending.is_empty()).then(|| Self {
            pending,
            bounds: bounds.clone(),
            front: None,
            back: None,
        })
    }
}

fn below_upper(key: &[u8], upper: &Bound<Vec<u8>>) -> bool {
    match upper {
        Bound::Included(bound) => key <= bound.as_slice(),
        Bound::Excluded(bound) => key < bound.as_slice(),
        Bound::Unbounded => true,
    }
}

fn above_lower(key: &[u8], lower: &Bound<Vec<u8>>) -> bool {
    match lower {
        Bound::Included(bound) => key >= bound.as_slice(),
        Bound::Excluded(bound) => key > bound.as_slice(),
        Bound::Unbounded => true,
    }
}

impl Iterator for RunIter {
    type Item = Result<Entry>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some(item) = self.front.as_mut().and_then(Iterator::next) {
                return Some(item);
            }
            match self.pending.pop_front() {
                Some(table) => {
                    self.front = Some(table.iter(self.bounds.0.clone(), self.bounds.1.clone()))
                }
                // Every table is open: the rest is in the back end's table,
                // which is double-ended and never repeats an entry.
                None => return self.back.as_mut().and_then(Iterator::next),
            }
        }
    }
}

impl DoubleEndedIterator for RunIter {
    fn next_back(&mut self) -> Option<Self::Item> {
        loop {
            if let Some(item) = self.back.as_mut().and_then(DoubleEndedIterator::next_back) {
                return Some(item);
            }
            match self.pending.pop_back() {
                Some(table) => {
                    self.back = Some(table.iter(self.bounds.0.clone(), self.bounds.1.clone()))
                }
                None => return self.front.as_mut().and_then(DoubleEndedIterator::next_back),
            }
        }
    }
}
