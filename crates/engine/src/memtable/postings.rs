//! Value postings: per value index, which keys of a memtable were written
//! with each value, kept as the values are written.
//!
//! Tables answer "which blocks may hold this value?" through their value
//! filters; a memtable has no blocks, so it answers "which keys?" instead.
//! Each value an index extracts from a `Value` write is hashed once
//! ([`KeyHash`], as the table filters hash it) and its key appended to the
//! list of that hash: a hash map from the hash's low 64 bits to keys, in
//! [`SHARDS`] shards under their own locks, so an append costs one map
//! probe. A writer thread appends to its own shard, whatever the value:
//! writers that share a common value (three values in a column, say) do
//! not all wait for the one lock of that value, as they would if values
//! chose the shard. A search gathers its value's keys from every shard. (An ordered skip list
//! of `(hash, key)` answered in key order without sorting, but its insert,
//! a descent of cache misses through a node per posting, cost a load with
//! one index 0.53–0.65× the writes/s of no index against 0.79× for the
//! extraction alone.) A search sorts the keys of its one value.
//!
//! A posting says "some version of this key in this memtable held a value
//! with this hash": a search looks the key up and checks the newest
//! visible version's value, so hash collisions, rewrites and overwritten
//! values cost a lookup, never a wrong answer. The postings are dropped
//! with their memtable. An index defined after the memtable was created
//! has none: a search reads that memtable whole.

use std::collections::HashMap;
use std::panic::{self, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};

use sift_filter::KeyHash;

use crate::value_def::{Extractor, IndexRecord};

/// Memory charged per posting beyond its key: the key's allocation and
/// its slot in its list, and the list's share of the map, about.
const POSTING_OVERHEAD_BYTES: usize = 48;

/// Locks per index: one per writer thread, up to this many.
const SHARDS: usize = 16;

/// The shard the current thread appends to: threads take the shards in
/// turn, in the order they first write.
fn writer_shard() -> usize {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    thread_local! {
        static SHARD: usize = NEXT.fetch_add(1, Ordering::Relaxed) % SHARDS;
    }
    SHARD.with(|shard| *shard)
}

/// Keys by value hash, one shard of them.
type Shard = HashMap<u64, Vec<Box<[u8]>>>;

/// The postings of one index.
#[derive(Debug)]
struct IndexPostings {
    index_id: u64,
    extractor: Extractor,
    shards: [Mutex<Shard>; SHARDS],
    /// Cleared for good if the extractor panicked on a write: the postings
    /// may then miss keys, and searches read the memtable whole.
    complete: AtomicBool,
}

impl IndexPostings {
    /// Shard `at`, locked. No code panics while holding it (the extractor
    /// runs outside), so a poisoned lock still holds whole lists.
    fn shard(&self, at: usize) -> MutexGuard<'_, Shard> {
        self.shards[at % SHARDS]
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// The keys posted under `hash`, in every shard.
    fn each_posted(&self, hash: u64, mut f: impl FnMut(&[Box<[u8]>])) {
        for at in 0..SHARDS {
            if let Some(keys) = self.shard(at).get(&hash) {
                f(keys);
            }
        }
    }
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
                shards: std::array::from_fn(|_| Mutex::default()),
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
        let shard = writer_shard();
        for index in &self.indexes {
            if !index.complete.load(Ordering::Relaxed) {
                continue;
            }
            let extracted = panic::catch_unwind(AssertUnwindSafe(|| {
                index.extractor.extract(value, &mut |v| {
                    let hash = KeyHash::of(v).lo();
                    index
                        .shard(shard)
                        .entry(hash)
                        .or_default()
                        .push(user_key.into());
                    charged += user_key.len() + POSTING_OVERHEAD_BYTES;
                });
            }));
            if extracted.is_err() {
                index.complete.store(false, Ordering::Relaxed);
            }
        }
        charged
    }

    /// The keys from `from` on posted under the value hashed to `hash` in
    /// index `index_id`, ascending, each once; `None` if that index has no
    /// postings here.
    pub(crate) fn keys(
        &self,
        index_id: u64,
        hash: KeyHash,
        from: &[u8],
    ) -> Option<impl Iterator<Item = Vec<u8>>> {
        let index = self.complete(index_id)?;
        let hash = hash.lo();
        let mut keys: Vec<Vec<u8>> = Vec::new();
        index.each_posted(hash, |posted| {
            keys.extend(
                posted
                    .iter()
                    .filter(|key| key[..] >= *from)
                    .map(|key| key.to_vec()),
            );
        });
        keys.sort_unstable();
        keys.dedup();
        Some(keys.into_iter())
    }

    /// How many keys are posted under `hash` in index `index_id` (a key
    /// rewritten with the value counts each time), at most `cap`; `None`
    /// if that index has no postings here.
    pub(crate) fn count_up_to(&self, index_id: u64, hash: KeyHash, cap: u64) -> Option<u64> {
        let index = self.complete(index_id)?;
        let hash = hash.lo();
        let mut count = 0;
        index.each_posted(hash, |posted| count += posted.len() as u64);
        Some(count.min(cap))
    }

    /// Index `index_id`'s postings, if kept and complete.
    fn complete(&self, index_id: u64) -> Option<&IndexPostings> {
        self.indexes
            .iter()
            .find(|p| p.index_id == index_id)
            .filter(|p| p.complete.load(Ordering::Relaxed))
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
    fn writers_of_one_value_append_to_shards_of_their_own() {
        let p = postings();
        std::thread::scope(|scope| {
            for writer in 0..4u8 {
                let p = &p;
                scope.spawn(move || {
                    for i in 0..100u8 {
                        p.add(&[writer, i], b"red,big");
                    }
                });
            }
        });
        let all = keys(&p, 0, b"red", b"");
        let expected: Vec<Vec<u8>> = (0..4u8)
            .flat_map(|w| (0..100u8).map(move |i| vec![w, i]))
            .collect();
        assert_eq!(all, expected);
        let hash = KeyHash::of(b"red");
        assert_eq!(p.count_up_to(0, hash, u64::MAX), Some(400));
        let index = p.complete(0).unwrap();
        let used = (0..SHARDS)
            .filter(|&at| index.shard(at).contains_key(&hash.lo()))
            .count();
        assert!(used > 1, "four writers shared {used} shard");
    }

    #[test]
    fn every_posting_is_charged_and_a_rewrite_read_once() {
        let p = postings();
        let first = p.add(b"key", b"red,big");
        assert_eq!(first, 2 * (3 + POSTING_OVERHEAD_BYTES));
        // Each version is charged, as the memtable charges each.
        assert_eq!(p.add(b"key", b"red,big"), first);
        assert_eq!(p.count_up_to(0, KeyHash::of(b"red"), 10), Some(2));
        assert_eq!(keys(&p, 0, b"red", b""), [b"key"]);
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
