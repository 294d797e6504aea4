//! Value postings: per value index, which keys of a memtable were written
//! with each value, kept as the values are written.
//!
//! Tables answer "which blocks may hold this value?" through their value
//! filters; a memtable has no blocks, so it answers "which keys?" instead.
//! Each value an index extracts from a `Value` write is hashed once
//! ([`KeyHash`], as the table filters hash it) and recorded as one posting:
//! the hash's low 64 bits, big-endian, followed by the user key. Postings
//! sort by hash, then key, so a search reads one value's keys in key order
//! from one ordered range of a lock-free skip list that every writer thread
//! inserts into at once.
//!
//! A posting says "some version of this key in this memtable held a value
//! with this hash": a search looks the key up and checks the newest
//! visible version's value, so hash collisions and overwritten values cost
//! a lookup, never a wrong answer. The postings are dropped with their
//! memtable. An index defined after the memtable was created has none: a
//! search reads that memtable whole.

use std::ops::Bound;
use std::panic::{self, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, Ordering};

use crossbeam_skiplist::SkipSet;
use crossbeam_skiplist::set::Entry;
use sift_filter::KeyHash;

use crate::value_def::{Extractor, IndexRecord};

/// Memory charged per posting beyond its bytes: the skip-list node (tower
/// pointers, refcount) and the buffer's header and allocation, about.
const POSTING_OVERHEAD_BYTES: usize = 64;

/// Bytes of the hash prefix of a posting.
const HASH_BYTES: usize = 8;

/// The postings of one index.
#[derive(Debug)]
struct IndexPostings {
    index_id: u64,
    extractor: Extractor,
    /// `hash (8 bytes, big-endian) | user key`.
    set: SkipSet<Box<[u8]>>,
    /// Cleared for good if the extractor panicked on a write: the postings
    /// may then miss keys, and searches read the memtable whole.
    complete: AtomicBool,
}

/// The value postings of one memtable, for the indexes live when it was
/// created.
#[derive(Debug, Default)]
pub(crate) struct ValuePostings {
    /// Ids ascending.
    indexes: Vec<IndexPostings>,
}

impl ValuePostings {
    /// Empty postings for `indexes`.
    pub(crate) fn new(indexes: &[IndexRecord]) -> Self {
        let mut indexes: Vec<IndexPostings> = indexes
            .iter()
            .map(|index| IndexPostings {
                index_id: index.id,
                extractor: index.extractor.clone(),
                set: SkipSet::new(),
                complete: AtomicBool::new(true),
            })
            .collect();
        indexes.sort_by_key(|p| p.index_id);
        Self { indexes }
    }

    /// Records every value each index extracts from `value`, written under
    /// `user_key`; returns the bytes the new postings take.
    ///
    /// A user's extractor runs here, on the writer's thread, where the
    /// write is already logged: a panic in it must not unwind through the
    /// write. It is caught and the index's postings are given up (the
    /// flush meets the same panic and fails the database, as before).
    pub(crate) fn add(&self, user_key: &[u8], value: &[u8]) -> usize {
        let mut charged = 0;
        let mut posting = Vec::with_capacity(HASH_BYTES + user_key.len());
        for index in &self.indexes {
            if !index.complete.load(Ordering::Relaxed) {
                continue;
            }
            let extracted = panic::catch_unwind(AssertUnwindSafe(|| {
                index.extractor.extract(value, &mut |v| {
                    posting.clear();
                    posting.extend_from_slice(&KeyHash::of(v).lo().to_be_bytes());
                    posting.extend_from_slice(user_key);
                    // A key rewritten with the same value keeps its posting.
                    if !index.set.contains(posting.as_slice()) {
                        charged += posting.len() + POSTING_OVERHEAD_BYTES;
                        index.set.insert(posting.as_slice().into());
                    }
                });
            }));
            if extracted.is_err() {
                index.complete.store(false, Ordering::Relaxed);
            }
        }
        charged
    }

    /// The keys from `from` on posted under the value hashed to `hash` in
    /// index `index_id`, ascending; `None` if that index has no postings
    /// here.
    pub(crate) fn keys<'a>(
        &'a self,
        index_id: u64,
        hash: KeyHash,
        from: &[u8],
    ) -> Option<impl Iterator<Item = Vec<u8>> + 'a> {
        let postings = self.posted(index_id, hash, from)?;
        Some(postings.map(|p| p.value().get(HASH_BYTES..).unwrap_or_default().to_vec()))
    }

    /// How many keys are posted under `hash` in index `index_id`, counted
    /// up to `cap` (a common value's postings are not walked to the end);
    /// `None` if that index has no postings here.
    pub(crate) fn count_up_to(&self, index_id: u64, hash: KeyHash, cap: u64) -> Option<u64> {
        let postings = self.posted(index_id, hash, &[])?;
        Some(postings.take(cap as usize).count() as u64)
    }

    /// The postings of `hash` from key `from` on.
    fn posted<'a>(
        &'a self,
        index_id: u64,
        hash: KeyHash,
        from: &[u8],
    ) -> Option<impl Iterator<Item = Entry<'a, Box<[u8]>>> + 'a> {
        let index = self.of(index_id)?;
        if !index.complete.load(Ordering::Relaxed) {
            return None;
        }
        let prefix = hash.lo().to_be_bytes();
        let start: Box<[u8]> = [prefix.as_slice(), from].concat().into();
        let range = index
            .set
            .range::<Box<[u8]>, _>((Bound::Included(start), Bound::Unbounded));
        Some(range.take_while(move |p| p.value().starts_with(&prefix)))
    }

    fn of(&self, index_id: u64) -> Option<&IndexPostings> {
        self.indexes.iter().find(|p| p.index_id == index_id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::value_def::LeafSizing;

    fn postings() -> ValuePostings {
        let index = |id| IndexRecord {
            id,
            name: format!("i{id}"),
            extractor: Extractor::delimited(id as usize, b','),
            sizing: LeafSizing::PerTable { fpr: 0.01 },
        };
        ValuePostings::new(&[index(1), index(0)])
    }

    fn keys(p: &ValuePostings, index: u64, value: &[u8], from: &[u8]) -> Vec<Vec<u8>> {
        p.keys(index, KeyHash::of(value), from).unwrap().collect()
    }

    #[test]
    fn a_value_names_its_keys_in_key_order_per_index() {
        let p = postings();
        for key in [&b"m"[..], b"c", b"x", b"a"] {
            p.add(key, b"red,big");
        }
        p.add(b"b", b"blue,big");
        assert_eq!(keys(&p, 0, b"red", b""), [&b"a"[..], b"c", b"m", b"x"]);
        assert_eq!(keys(&p, 0, b"red", b"c\0"), [&b"m"[..], b"x"]);
        assert_eq!(
            keys(&p, 1, b"big", b""),
            [&b"a"[..], b"b", b"c", b"m", b"x"]
        );
        assert!(keys(&p, 0, b"big", b"").is_empty());
        assert!(p.keys(2, KeyHash::of(b"red"), b"").is_none());
    }

    #[test]
    fn a_rewrite_with_the_same_value_is_charged_once() {
        let p = postings();
        let first = p.add(b"key", b"red,big");
        assert_eq!(first, 2 * (HASH_BYTES + 3 + POSTING_OVERHEAD_BYTES));
        assert_eq!(p.add(b"key", b"red,big"), 0);
        assert_eq!(
            p.add(b"key", b"red,small"),
            HASH_BYTES + 3 + POSTING_OVERHEAD_BYTES
        );
    }

    #[test]
    fn an_extractor_that_panics_gives_the_index_up_not_the_write() {
        let fragile = IndexRecord {
            id: 5,
            name: "fragile".into(),
            extractor: Extractor::custom("fragile", |value, out| {
                assert!(value != b"boom", "cannot take this value");
                out(value);
            }),
            sizing: LeafSizing::PerTable { fpr: 0.01 },
        };
        let p = ValuePostings::new(&[fragile]);
        p.add(b"a", b"fine");
        assert_eq!(keys(&p, 5, b"fine", b""), [b"a"]);
        p.add(b"b", b"boom");
        p.add(b"c", b"fine");
        assert!(p.keys(5, KeyHash::of(b"fine"), b"").is_none());
        assert_eq!(p.count_up_to(5, KeyHash::of(b"fine"), 10), None);
    }

    #[test]
    fn counting_stops_at_the_cap() {
        let p = postings();
        for i in 0..50u32 {
            p.add(&i.to_be_bytes(), b"red");
        }
        let red = KeyHash::of(b"red");
        assert_eq!(p.count_up_to(0, red, 1_000), Some(50));
        assert_eq!(p.count_up_to(0, red, 10), Some(10));
        assert_eq!(p.count_up_to(0, KeyHash::of(b"blue"), 10), Some(0));
        assert_eq!(p.count_up_to(7, red, 10), None);
    }
}
