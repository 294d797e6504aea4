//! The in-memory table every write lands in first: a lock-free skip list
//! (crossbeam-skiplist) of internal keys, so readers never block writers.

use std::borrow::Borrow;
use std::cmp::Ordering as KeyOrder;
use std::ops::Bound;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use crossbeam_skiplist::SkipMap;

use crate::batch::WriteBatch;
use crate::error::Result;
use crate::key::{Entry, InternalKey, SeqNo, ValueKind};

/// Per-entry bookkeeping charged on top of key and value bytes: the skip
/// list node (tower pointers, refcount) and the entry's header (buffer
/// pointer, lengths, sequence number), about 80 bytes on 64-bit targets. Keeps small-entry memtables from growing far
/// past their budget.
const ENTRY_OVERHEAD_BYTES: usize = 80;

/// A memtable and the WAL file that holds its writes.
#[derive(Debug)]
pub(crate) struct Memtable {
    map: SkipMap<Stored, ()>,
    approximate_bytes: AtomicUsize,
    max_seq: AtomicU64,
    wal_number: u64,
}

impl Memtable {
    /// An empty memtable whose writes are logged in WAL file `wal_number`.
    pub(crate) fn new(wal_number: u64) -> Self {
        Self {
            map: SkipMap::new(),
            approximate_bytes: AtomicUsize::new(0),
            max_seq: AtomicU64::new(0),
            wal_number,
        }
    }

    /// The WAL file holding this memtable's writes.
    pub(crate) fn wal_number(&self) -> u64 {
        self.wal_number
    }

    /// Adds one version. Callers give every version a distinct sequence
    /// number, so nothing is overwritten.
    pub(crate) fn insert(&self, user_key: &[u8], seq: SeqNo, kind: ValueKind, value: &[u8]) {
        let bytes = user_key.len() + value.len() + ENTRY_OVERHEAD_BYTES;
        self.approximate_bytes.fetch_add(bytes, Ordering::Relaxed);
        self.max_seq.fetch_max(seq, Ordering::Relaxed);
        self.map.insert(Stored::new(user_key, seq, kind, value), ());
    }

    /// Adds every operation of `batch`, operation i at `first_seq + i`.
    /// Several threads may insert batches at once.
    pub(crate) fn insert_batch(&self, batch: &WriteBatch, first_seq: SeqNo) {
        for (seq, (kind, key, value)) in (first_seq..).zip(batch.iter()) {
            self.insert(key, seq, kind, value);
        }
    }

    /// The newest version of `user_key` with sequence number `<= seq`
    /// (tombstones included), if this memtable has one.
    #[cfg_attr(not(test), expect(dead_code, reason = "the read path uses `lookup`"))]
    pub(crate) fn get(&self, user_key: &[u8], seq: SeqNo) -> Option<Entry> {
        Some(self.find(user_key, seq)?.key().entry())
    }

    /// [`Memtable::get`] without copying the key: `Some(None)` for a
    /// tombstone, `Some(Some(value))` for a value.
    pub(crate) fn lookup(&self, user_key: &[u8], seq: SeqNo) -> Option<Option<Vec<u8>>> {
        let found = self.find(user_key, seq)?;
        Some(match found.key().kind {
            ValueKind::Value => Some(found.key().value().to_vec()),
            ValueKind::Delete => None,
        })
    }

    /// The skip-list entry of [`Memtable::get`], searched for with a
    /// borrowed key: no allocation.
    fn find(
        &self,
        user_key: &[u8],
        seq: SeqNo,
    ) -> Option<crossbeam_skiplist::map::Entry<'_, Stored, ()>> {
        // An empty memtable (the usual one right after a flush) answers
        // without pinning an epoch and searching. Every write visible at
        // `seq` was counted before `seq` was published, so none is missed.
        if self.is_empty() {
            return None;
        }
        let search = Probe {
            user_key,
            seq,
            kind: ValueKind::MAX,
        };
        let found = self
            .map
            .lower_bound(Bound::Included(&search as &dyn KeyView))?;
        (found.key().user_key() == user_key).then_some(found)
    }

    /// Memory charged to this memtable, in bytes.
    pub(crate) fn approximate_bytes(&self) -> usize {
        self.approximate_bytes.load(Ordering::Relaxed)
    }

    /// Number of versions held.
    pub(crate) fn len(&self) -> usize {
        self.map.len()
    }

    /// True when nothing was written.
    pub(crate) fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// Largest sequence number written (0 when empty).
    pub(crate) fn max_seq(&self) -> SeqNo {
        self.max_seq.load(Ordering::Relaxed)
    }

    /// Every version in internal-key order, front to back, walking the skip
    /// list's links (no search per step, unlike [`Memtable::iter`]): what a
    /// flush reads.
    pub(crate) fn entries(&self) -> impl Iterator<Item = Result<Entry>> + '_ {
        self.map.iter().map(|found| Ok(found.key().entry()))
    }

    /// Every version whose user key lies within `bounds`, in internal-key
    /// order, from both ends.
    pub(crate) fn iter(self: &Arc<Self>, bounds: (Bound<Vec<u8>>, Bound<Vec<u8>>)) -> MemtableIter {
        // The first version of the lower user key sorts before every other
        // version of it; the last version of the upper key after every other.
        let front = match bounds.0 {
            Bound::Included(key) => {
                Bound::Included(InternalKey::new(key, SeqNo::MAX, ValueKind::MAX))
            }
            Bound::Excluded(key) => Bound::Excluded(InternalKey::new(key, 0, ValueKind::Delete)),
            Bound::Unbounded => Bound::Unbounded,
        };
        let back = match bounds.1 {
            Bound::Included(key) => Bound::Included(InternalKey::new(key, 0, ValueKind::Delete)),
            Bound::Excluded(key) => {
                Bound::Excluded(InternalKey::new(key, SeqNo::MAX, ValueKind::MAX))
            }
            Bound::Unbounded => Bound::Unbounded,
        };
        MemtableIter {
            table: Arc::clone(self),
            front,
            back,
        }
    }
}

/// One version as the skip list holds it: user key and value share one
/// allocation (a write costs one less, a flush frees one less).
#[derive(Debug)]
struct Stored {
    /// The user key, then the value.
    bytes: Box<[u8]>,
    key_len: usize,
    seq: SeqNo,
    kind: ValueKind,
}

impl Stored {
    fn new(user_key: &[u8], seq: SeqNo, kind: ValueKind, value: &[u8]) -> Self {
        Self {
            bytes: [user_key, value].concat().into_boxed_slice(),
            key_len: user_key.len(),
            seq,
            kind,
        }
    }

    fn user_key(&self) -> &[u8] {
        self.bytes.get(..self.key_len).unwrap_or_default()
    }

    fn value(&self) -> &[u8] {
        self.bytes.get(self.key_len..).unwrap_or_default()
    }

    /// An owned copy.
    fn entry(&self) -> Entry {
        Entry {
            key: InternalKey::new(self.user_key(), self.seq, self.kind),
            value: self.value().to_vec(),
        }
    }
}

impl KeyView for Stored {
    fn parts(&self) -> (&[u8], SeqNo, ValueKind) {
        (self.user_key(), self.seq, self.kind)
    }
}

impl<'a> Borrow<dyn KeyView + 'a> for Stored {
    fn borrow(&self) -> &(dyn KeyView + 'a) {
        self
    }
}

impl Ord for Stored {
    fn cmp(&self, other: &Self) -> KeyOrder {
        order(self.parts(), other.parts())
    }
}

impl PartialOrd for Stored {
    fn partial_cmp(&self, other: &Self) -> Option<KeyOrder> {
        Some(self.cmp(other))
    }
}

impl PartialEq for Stored {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == KeyOrder::Equal
    }
}

impl Eq for Stored {}

/// An internal key's parts, borrowed: lets the skip list be searched with
/// a key that borrows the caller's bytes (through `Borrow<dyn KeyView>`).
trait KeyView {
    /// User key, sequence number, kind.
    fn parts(&self) -> (&[u8], SeqNo, ValueKind);
}

/// A search key borrowing its user key.
struct Probe<'a> {
    user_key: &'a [u8],
    seq: SeqNo,
    kind: ValueKind,
}

impl KeyView for Probe<'_> {
    fn parts(&self) -> (&[u8], SeqNo, ValueKind) {
        (self.user_key, self.seq, self.kind)
    }
}

impl KeyView for InternalKey {
    fn parts(&self) -> (&[u8], SeqNo, ValueKind) {
        (&self.user_key, self.seq, self.kind)
    }
}

/// The order of `InternalKey`'s `Ord`, on parts.
fn order(a: (&[u8], SeqNo, ValueKind), b: (&[u8], SeqNo, ValueKind)) -> KeyOrder {
    a.0.cmp(b.0)
        .then_with(|| b.1.cmp(&a.1))
        .then_with(|| b.2.cmp(&a.2))
}

impl Ord for dyn KeyView + '_ {
    fn cmp(&self, other: &Self) -> KeyOrder {
        order(self.parts(), other.parts())
    }
}

impl PartialOrd for dyn KeyView + '_ {
    fn partial_cmp(&self, other: &Self) -> Option<KeyOrder> {
        Some(self.cmp(other))
    }
}

impl PartialEq for dyn KeyView + '_ {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == KeyOrder::Equal
    }
}

impl Eq for dyn KeyView + '_ {}

/// A cursor over a memtable that owns it (through `Arc`), so it can outlive
/// the borrow a skip-list range would need. Each step is one skip-list seek
/// from the last key yielded at that end.
#[derive(Debug)]
pub(crate) struct MemtableIter {
    table: Arc<Memtable>,
    /// Everything before this bound has been yielded (or is out of range).
    front: Bound<InternalKey>,
    /// Everything after this bound has been yielded (or is out of range).
    back: Bound<InternalKey>,
}

/// `bound` as the skip list searches with it.
fn view(bound: &Bound<InternalKey>) -> Bound<&dyn KeyView> {
    match bound {
        Bound::Included(key) => Bound::Included(key),
        Bound::Excluded(key) => Bound::Excluded(key),
        Bound::Unbounded => Bound::Unbounded,
    }
}

impl MemtableIter {
    fn within_back(&self, key: &dyn KeyView) -> bool {
        match view(&self.back) {
            Bound::Included(back) => key <= back,
            Bound::Excluded(back) => key < back,
            Bound::Unbounded => true,
        }
    }

    fn within_front(&self, key: &dyn KeyView) -> bool {
        match view(&self.front) {
            Bound::Included(front) => key >= front,
            Bound::Excluded(front) => key > front,
            Bound::Unbounded => true,
        }
    }
}

impl Iterator for MemtableIter {
    type Item = Result<Entry>;

    fn next(&mut self) -> Option<Self::Item> {
        let found = self.table.map.lower_bound(view(&self.front))?;
        if !self.within_back(found.key()) {
            return None;
        }
        let entry = found.key().entry();
        self.front = Bound::Excluded(entry.key.clone());
        Some(Ok(entry))
    }
}

// Reading a memtable costs no I/O: nothing to skip.
impl crate::iter::Source for MemtableIter {}

impl DoubleEndedIterator for MemtableIter {
    fn next_back(&mut self) -> Option<Self::Item> {
        let found = self.table.map.upper_bound(view(&self.back))?;
        if !self.within_front(found.key()) {
            return None;
        }
        let entry = found.key().entry();
        self.back = Bound::Excluded(entry.key.clone());
        Some(Ok(entry))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn filled() -> Arc<Memtable> {
        let table = Arc::new(Memtable::new(1));
        table.insert(b"a", 1, ValueKind::Value, b"a1");
        table.insert(b"b", 2, ValueKind::Value, b"b2");
        table.insert(b"b", 5, ValueKind::Delete, b"");
        table.insert(b"b", 7, ValueKind::Value, b"b7");
        table.insert(b"c", 3, ValueKind::Value, b"c3");
        table
    }

    fn keys(entries: impl Iterator<Item = Result<Entry>>) -> Vec<(Vec<u8>, SeqNo)> {
        entries
            .map(|e| e.unwrap())
            .map(|e| (e.key.user_key, e.key.seq))
            .collect()
    }

    #[test]
    fn get_sees_the_newest_version_at_or_below_the_snapshot() {
        let table = filled();
        assert_eq!(table.get(b"b", 100).unwrap().value, b"b7");
        assert_eq!(table.get(b"b", 6).unwrap().key.kind, ValueKind::Delete);
        assert_eq!(table.get(b"b", 4).unwrap().value, b"b2");
        assert_eq!(table.get(b"b", 1), None);
        assert_eq!(table.get(b"bb", 100), None);
        assert_eq!(table.max_seq(), 7);
        assert_eq!(table.iter((Bound::Unbounded, Bound::Unbounded)).count(), 5);
        let walked: Vec<Entry> = table.entries().map(Result::unwrap).collect();
        let searched: Vec<Entry> = table
            .iter((Bound::Unbounded, Bound::Unbounded))
            .map(Result::unwrap)
            .collect();
        assert_eq!(walked, searched);
    }

    #[test]
    fn iterates_every_version_in_order_from_both_ends_within_bounds() {
        let table = filled();
        let all = keys(table.iter((Bound::Unbounded, Bound::Unbounded)));
        let expected: Vec<(Vec<u8>, SeqNo)> = vec![
            (b"a".to_vec(), 1),
            (b"b".to_vec(), 7),
            (b"b".to_vec(), 5),
            (b"b".to_vec(), 2),
            (b"c".to_vec(), 3),
        ];
        assert_eq!(all, expected);
        let reversed = keys(table.iter((Bound::Unbounded, Bound::Unbounded)).rev());
        assert_eq!(reversed, expected.iter().rev().cloned().collect::<Vec<_>>());
        let inner = keys(table.iter((
            Bound::Excluded(b"a".to_vec()),
            Bound::Included(b"b".to_vec()),
        )));
        assert_eq!(inner, expected[1..4].to_vec());
        let excluded = keys(
            table
                .iter((
                    Bound::Included(b"b".to_vec()),
                    Bound::Excluded(b"c".to_vec()),
                ))
                .rev(),
        );
        assert_eq!(
            excluded,
            expected[1..4].iter().rev().cloned().collect::<Vec<_>>()
        );
    }

    #[test]
    fn interleaved_ends_meet_without_repeating() {
        let table = filled();
        let mut iter = table.iter((Bound::Unbounded, Bound::Unbounded));
        let mut seen = Vec::new();
        for step in 0.. {
            let item = if step % 2 == 0 {
                iter.next()
            } else {
                iter.next_back()
            };
            match item {
                Some(entry) => seen.push(entry.unwrap().key.seq),
                None => break,
            }
        }
        seen.sort_unstable();
        assert_eq!(seen, vec![1, 2, 3, 5, 7]);
        assert!(iter.next().is_none() && iter.next_back().is_none());
    }
}
