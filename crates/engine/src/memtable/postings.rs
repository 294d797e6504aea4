//! Value postings: per value index, which keys of a memtable were written
//! with each value, kept as the values are written.
//!
//! Tables answer "which blocks may hold this value?" through their value
//! filters; a memtable has no blocks, so it answers "which keys?" instead.
//! Each value an index extracts from a `Value` write is hashed once
//! ([`KeyHash`], as the table filters hash it) and recorded as one posting:
//! the hash's low 64 bits and the user key. Postings sort by hash, then
//! key, so a search reads one value's keys in key order from one ordered
//! range of a lock-free skip list that every writer thread inserts into at
//! once. A node holds the hash and the key's first 8 bytes beside the key's
//! buffer, so the comparisons of an insert's descent rarely read the
//! buffer (a cache miss each).
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

/// Memory charged per posting beyond its key: the skip-list node (tower
/// pointers, refcount), hash, head, the key's pointer and length, and its
/// allocation, about.
const POSTING_OVERHEAD_BYTES: usize = 80;

/// One posting: a value's hash and a key written with it.
#[derive(Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Posting {
    hash: u64,
    /// The key's first 8 bytes, zero-padded, big-endian: heads order as
    /// their keys do, and equal heads fall back to the keys themselves
    /// (the next field), so the derived order is `(hash, key)`.
    head: u64,
    key: Box<[u8]>,
}

impl Posting {
    fn new(hash: u64, key: &[u8]) -> Self {
        let mut head = [0u8; 8];
        let n = key.len().min(head.len());
        head[..n].copy_from_slice(&key[..n]);
        Self {
            hash,
            head: u64::from_be_bytes(head),
            key: key.into(),
        }
    }
}

/// The postings of one index.
#[derive(Debug)]
struct IndexPostings {
    index_id: u64,
    extractor: Extractor,
    set: SkipSet<Posting>,
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
        for index in &self.indexes {
            if !index.complete.load(Ordering::Relaxed) {
                continue;
            }
            let extracted = panic::catch_unwind(AssertUnwindSafe(|| {
                index.extractor.extract(value, &mut |v| {
                    let posting = Posting::new(KeyHash::of(v).lo(), user_key);
                    let ours = posting.key.as_ptr();
                    // A key rewritten with the same value keeps its posting
                    // (one search either way), and only a new one is charged.
                    if index.set.get_or_insert(posting).key.as_ptr() == ours {
                        charged += user_key.len() + POSTING_OVERHEAD_BYTES;
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
        Some(postings.map(|p| p.key.to_vec()))
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
    ) -> Option<impl Iterator<Item = Entry<'a, Posting>> + 'a> {
        let index = self.of(index_id)?;
        if !index.complete.load(Ordering::Relaxed) {
            return None;
        }
        let hash = hash.lo();
        let start = Posting::new(hash, from);
        let range = index
            .set
            .range::<Posting, _>((Bound::Included(start), Bound::Unbounded));
        Some(range.take_while(move |p| p.hash == hash))
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
    fn postings_order_by_hash_then_key_bytes() {
        let keys: [&[u8]; 7] = [
            b"",
            b"\0",
            b"a",
            b"a\0",
            b"a\0\x01",
            b"abcdefgh",
            b"abcdefgh\0",
        ];
        for pair in keys.windows(2) {
            assert!(
                Posting::new(1, pair[0]) < Posting::new(1, pair[1]),
                "{pair:?}"
            );
        }
        assert!(Posting::new(1, b"z") < Posting::new(2, b""));
    }

    #[test]
    fn a_rewrite_with_the_same_value_is_charged_once() {
        let p = postings();
        let first = p.add(b"key", b"red,big");
        assert_eq!(first, 2 * (3 + POSTING_OVERHEAD_BYTES));
        assert_eq!(p.add(b"key", b"red,big"), 0);
        assert_eq!(p.add(b"key", b"red,small"), 3 + POSTING_OVERHEAD_BYTES);
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
