//! The in-memory table every write lands in first: a lock-free skip list
//! (crossbeam-skiplist) of internal keys, so readers never block writers,
//! with the value postings of the live value indexes (`postings.rs`).

mod postings;

use std::borrow::Borrow;
use std::cmp::Ordering as KeyOrder;
use std::ops::Bound;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use crossbeam_skiplist::SkipMap;

use crate::batch::WriteBatch;
use crate::error::Result;
use crate::key::{Entry, InternalKey, SeqNo, ValueKind};
use crate::value_def::IndexRecord;
pub(crate) use postings::ValuePostings;

/// Inserts that panic, for tests of the write path's unwinding.
#[cfg(test)]
pub(crate) mod testing {
    use std::cell::Cell;

    thread_local! {
        static PANIC_ON_INSERT: Cell<bool> = const { Cell::new(false) };
    }

    /// Makes every memtable insert on this thread panic from now on.
    pub(crate) fn panic_on_insert() {
        PANIC_ON_INSERT.set(true);
    }

    pub(super) fn panic_if_asked() {
        assert!(!PANIC_ON_INSERT.get(), "injected memtable insert panic");
    }
}

/// Per-entry bookkeeping charged on top of key and value bytes: the skip
/// list node (tower pointers, refcount) and the entry's header (buffer
/// pointer, the key's head, lengths, sequence number), about 96 bytes on
/// 64-bit targets. Keeps small-entry memtables from growing far past their
/// budget.
const ENTRY_OVERHEAD_BYTES: usize = 96;

/// Bytes of a user key kept in the skip-list node itself ([`Head`]).
const HEAD_BYTES: usize = 16;

/// A memtable and the WAL file that holds its writes.
#[derive(Debug)]
pub(crate) struct Memtable {
    map: SkipMap<Stored, ()>,
    approximate_bytes: AtomicUsize,
    max_seq: AtomicU64,
    wal_number: u64,
    postings: ValuePostings,
}

impl Memtable {
    /// An empty memtable whose writes are logged in WAL file `wal_number`,
    /// without value postings (one only flushed, never searched).
    pub(crate) fn new(wal_number: u64) -> Self {
        Self::with_postings(wal_number, &[])
    }

    /// [`Memtable::new`], keeping value postings for `indexes`.
    pub(crate) fn with_postings(wal_number: u64, indexes: &[IndexRecord]) -> Self {
        Self {
            map: SkipMap::new(),
            approximate_bytes: AtomicUsize::new(0),
            max_seq: AtomicU64::new(0),
            wal_number,
            postings: ValuePostings::new(indexes),
        }
    }

    /// The value postings of the indexes live when this memtable was
    /// created.
    pub(crate) fn postings(&self) -> &ValuePostings {
        &self.postings
    }

    /// The WAL file holding this memtable's writes.
    pub(crate) fn wal_number(&self) -> u64 {
        self.wal_number
    }

    /// Adds one version. Callers give every version a distinct sequence
    /// number, so nothing is overwritten.
    pub(crate) fn insert(&self, user_key: &[u8], seq: SeqNo, kind: ValueKind, value: &[u8]) {
        #[cfg(test)]
        testing::panic_if_asked();
        let mut bytes = user_key.len() + value.len() + ENTRY_OVERHEAD_BYTES;
        if kind == ValueKind::Value {
            bytes += self.postings.add(user_key, value);
        }
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
        let search = Probe::new(user_key, seq, ValueKind::MAX);
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

/// The first [`HEAD_BYTES`] of a user key, zero-padded, as big-endian
/// integers, with the key's length. A skip-list search compares keys at
/// every node on its way down; a node holds the head, so with keys of up
/// to 16 bytes no comparison reads the key's own buffer, one cache miss
/// less per node, and with longer ones only ties on the head do.
#[derive(Debug, Clone, Copy)]
struct Head {
    bytes: [u64; 2],
    len: usize,
}

impl Head {
    fn of(key: &[u8]) -> Self {
        let mut padded = [0u8; HEAD_BYTES];
        let n = key.len().min(HEAD_BYTES);
        padded[..n].copy_from_slice(&key[..n]);
        let head = u128::from_be_bytes(padded);
        Self {
            bytes: [(head >> 64) as u64, head as u64],
            len: key.len(),
        }
    }

    /// The order of two user keys, if their heads decide it. Heads that
    /// differ first differ where the keys do, or where the shorter key
    /// ended (its padding, zero, against a byte of the longer key that is
    /// not): either way in the keys' order. Equal heads of two keys that
    /// fit whole mean one key is the other's prefix (the longer one's
    /// bytes past the shorter one are zero, like the padding): the
    /// shorter sorts first.
    fn order(self, other: Self) -> Option<KeyOrder> {
        match self.bytes.cmp(&other.bytes) {
            KeyOrder::Equal if self.len.max(other.len) <= HEAD_BYTES => {
                Some(self.len.cmp(&other.len))
            }
            KeyOrder::Equal => None,
            decided => Some(decided),
        }
    }
}

/// One version as the skip list holds it: user key and value share one
/// allocation (a write costs one less, a flush frees one less), and the
/// key's head is kept beside them for comparisons.
#[derive(Debug)]
struct Stored {
    /// The user key, then the value.
    bytes: Box<[u8]>,
    head: [u64; 2],
    key_len: usize,
    seq: SeqNo,
    kind: ValueKind,
}

impl Stored {
    fn new(user_key: &[u8], seq: SeqNo, kind: ValueKind, value: &[u8]) -> Self {
        Self {
            bytes: [user_key, value].concat().into_boxed_slice(),
            head: Head::of(user_key).bytes,
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
    fn head(&self) -> Head {
        Head {
            bytes: self.head,
            len: self.key_len,
        }
    }

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
        order(self, other)
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
    /// The user key's head.
    fn head(&self) -> Head;
    /// User key, sequence number, kind.
    fn parts(&self) -> (&[u8], SeqNo, ValueKind);
}

/// A search key borrowing its user key.
struct Probe<'a> {
    user_key: &'a [u8],
    head: Head,
    seq: SeqNo,
    kind: ValueKind,
}

impl<'a> Probe<'a> {
    fn new(user_key: &'a [u8], seq: SeqNo, kind: ValueKind) -> Self {
        Self {
            user_key,
            head: Head::of(user_key),
            seq,
            kind,
        }
    }
}

impl KeyView for Probe<'_> {
    fn head(&self) -> Head {
        self.head
    }

    fn parts(&self) -> (&[u8], SeqNo, ValueKind) {
        (self.user_key, self.seq, self.kind)
    }
}

impl KeyView for InternalKey {
    fn head(&self) -> Head {
        Head::of(&self.user_key)
    }

    fn parts(&self) -> (&[u8], SeqNo, ValueKind) {
        (&self.user_key, self.seq, self.kind)
    }
}

/// The order of `InternalKey`'s `Ord`: user key ascending (decided by the
/// heads where they can), then sequence number and kind descending.
fn order<A: KeyView + ?Sized, B: KeyView + ?Sized>(a: &A, b: &B) -> KeyOrder {
    let (a_key, a_seq, a_kind) = a.parts();
    let (b_key, b_seq, b_kind) = b.parts();
    a.head()
        .order(b.head())
        .unwrap_or_else(|| a_key.cmp(b_key))
        .then_with(|| b_seq.cmp(&a_seq))
        .then_with(|| b_kind.cmp(&a_kind))
}

impl Ord for dyn KeyView + '_ {
    fn cmp(&self, other: &Self) -> KeyOrder {
        order(self, other)
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
    use proptest::prelude::*;

    use super::*;

    /// Keys of a few bytes around zero, so that prefixes, padding and
    /// the 16-byte boundary meet often.
    fn key() -> impl Strategy<Value = Vec<u8>> {
        prop::collection::vec(prop::sample::select(vec![0u8, 1, 0xff]), 0..40)
    }

    proptest! {
        #[test]
        fn the_order_with_heads_is_the_internal_key_order(
            a in key(), b in key(), seq_a in 0u64..3, seq_b in 0u64..3, del in any::<bool>()
        ) {
            let kind = if del { ValueKind::Delete } else { ValueKind::Value };
            let (x, y) = (Stored::new(&a, seq_a, kind, b"v"), Stored::new(&b, seq_b, ValueKind::Value, b""));
            let expected = InternalKey::new(a.clone(), seq_a, kind)
                .cmp(&InternalKey::new(b.clone(), seq_b, ValueKind::Value));
            prop_assert_eq!(x.cmp(&y), expected);
            let probe = Probe::new(&b, seq_b, ValueKind::Value);
            prop_assert_eq!(order(&x, &probe), expected);
        }
    }

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
