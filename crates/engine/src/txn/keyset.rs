//! A transaction's own key sets: an exact ordered map fronted by a
//! scalable Bloom filter, both fed by the one [`KeyHash`] of each key.

use std::collections::BTreeMap;
use std::collections::btree_map::Entry;

use sift_filter::{Filter, KeyHash, ScalableBloom};

/// First stage of a transaction's filter: 1,024 keys (about 1.8 KB at
/// 1%). A non-member is tested against every stage, so stages cost look-up
/// time: measured (`sift-bench txn`, 10,000 keys), 256 keys growing by 2
/// (six stages) made a look-up 91 ns, 4,096 growing by 4 (two) 36 ns.
const INITIAL_CAPACITY: u64 = 1024;

/// Target false-positive rate of the pre-check: 1% of the look-ups of keys
/// not in the set pay for an exact look-up as well, for about 10 bits a key.
/// Each stage holds four times the keys of the one before (the paper's
/// "fast" growth): 100,000 keys take five stages instead of seven at 2.
const GROWTH: f64 = 4.0;

const TARGET_FPR: f64 = 0.01;

/// What one look-up cost: counted by the set, summed into
/// [`TxnStats`](crate::TxnStats) when the transaction ends.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct LookupCounts {
    /// Look-ups the filter answered "not here": the exact map was skipped.
    pub rejections: u64,
    /// Look-ups that went to the exact map.
    pub exact: u64,
}

/// An exact, ordered map from key to `V` whose look-ups are pre-checked by
/// a [`ScalableBloom`] on the key's [`KeyHash`] (when enabled). The map
/// keeps each key's hash, so validation can probe other filters without
/// hashing again.
#[derive(Debug)]
pub(crate) struct FilteredMap<V> {
    map: BTreeMap<Vec<u8>, (KeyHash, V)>,
    /// `None` when the pre-check is off: every look-up is exact.
    filter: Option<ScalableBloom>,
    pub counts: LookupCounts,
}

impl<V> FilteredMap<V> {
    /// An empty map, with the Bloom pre-check when `precheck`.
    pub fn new(precheck: bool) -> Self {
        Self {
            map: BTreeMap::new(),
            // The parameters are constants within the filter's ranges, so
            // this cannot fail; a failure would only mean no pre-check.
            filter: precheck
                .then(|| {
                    ScalableBloom::with_growth(
                        INITIAL_CAPACITY,
                        TARGET_FPR,
                        GROWTH,
                        ScalableBloom::DEFAULT_TIGHTENING,
                    )
                    .ok()
                })
                .flatten(),
            counts: LookupCounts::default(),
        }
    }

    /// The entry of `key` (whose hash is `hash`), if present.
    #[inline]
    pub fn get(&mut self, key: &[u8], hash: KeyHash) -> Option<&V> {
        if let Some(filter) = &self.filter
            && !filter.may_contain(hash)
        {
            self.counts.rejections += 1;
            return None;
        }
        self.counts.exact += 1;
        self.map.get(key).map(|(_, value)| value)
    }

    /// Whether the filter (or, without one, nothing) rules `hash` out.
    pub fn rules_out(&self, hash: KeyHash) -> bool {
        self.filter
            .as_ref()
            .is_some_and(|filter| !filter.may_contain(hash))
    }

    /// Whether `key` is present in the exact map (no filter).
    pub fn contains_exact(&self, key: &[u8]) -> bool {
        self.map.contains_key(key)
    }

    /// Sets `key` to `value`; returns the value it replaces. A key the
    /// filter has never seen goes straight in: the filter's insert is also
    /// its query.
    pub fn insert(&mut self, key: &[u8], hash: KeyHash, value: V) -> Option<V> {
        let maybe_present = self.filter.as_mut().is_none_or(|f| f.insert(hash));
        if maybe_present {
            self.counts.exact += 1;
        } else {
            self.counts.rejections += 1;
        }
        // The map is searched either way (a B-tree insert is a search);
        // what the pre-check saves is the separate look-up before it.
        match self.map.entry(key.to_vec()) {
            Entry::Occupied(mut slot) => Some(std::mem::replace(&mut slot.get_mut().1, value)),
            Entry::Vacant(slot) => {
                slot.insert((hash, value));
                None
            }
        }
    }

    /// Number of keys.
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// Whether the map is empty.
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// Keys with their hashes and values, in key order.
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = (&Vec<u8>, &KeyHash, &V)> {
        self.map
            .iter()
            .map(|(key, (hash, value))| (key, hash, value))
    }

    /// The entries within `bounds`, in key order (empty for bounds that
    /// cross).
    pub fn range<'a>(
        &'a self,
        bounds: &crate::iter::UserBounds,
    ) -> Box<dyn DoubleEndedIterator<Item = (&'a Vec<u8>, &'a V)> + 'a> {
        use std::ops::Bound::{Excluded, Included};
        // `BTreeMap::range` panics on crossed bounds; they select nothing.
        let crossed = match (&bounds.0, &bounds.1) {
            (Included(a), Included(b)) => a > b,
            (Included(a) | Excluded(a), Excluded(b)) | (Excluded(a), Included(b)) => a >= b,
            _ => false,
        };
        if crossed {
            return Box::new(std::iter::empty());
        }
        Box::new(
            self.map
                .range::<[u8], _>((as_slice(&bounds.0), as_slice(&bounds.1)))
                .map(|(key, (_, value))| (key, value)),
        )
    }
}

fn as_slice(bound: &std::ops::Bound<Vec<u8>>) -> std::ops::Bound<&[u8]> {
    bound.as_ref().map(Vec::as_slice)
}

/// A set of keys with the Bloom pre-check a transaction puts in front of
/// its read and write sets: the structure [`Transaction`](crate::Transaction)
/// uses, exposed so that its look-up cost can be measured on its own
/// (`sift-bench txn`).
///
/// ```
/// use siftdb::txn::KeySet;
/// use sift_filter::KeyHash;
/// let mut set = KeySet::new(true);
/// set.insert(b"a", KeyHash::of(b"a"));
/// assert!(set.contains(b"a", KeyHash::of(b"a")));
/// assert!(!set.contains(b"b", KeyHash::of(b"b")));
/// ```
#[derive(Debug)]
pub struct KeySet {
    inner: FilteredMap<()>,
}

impl KeySet {
    /// An empty set; `precheck` puts the scalable Bloom filter in front of
    /// the exact set (as [`DbBuilder::txn_precheck`](crate::DbBuilder::txn_precheck)).
    #[must_use]
    pub fn new(precheck: bool) -> Self {
        Self {
            inner: FilteredMap::new(precheck),
        }
    }

    /// Adds `key`, whose hash is `hash` (`KeyHash::of(key)`); returns
    /// whether it was new.
    pub fn insert(&mut self, key: &[u8], hash: KeyHash) -> bool {
        self.inner.insert(key, hash, ()).is_none()
    }

    /// Whether `key` (hash `hash`) is in the set: one filter probe, and an
    /// exact look-up only when the filter says "maybe".
    pub fn contains(&mut self, key: &[u8], hash: KeyHash) -> bool {
        self.inner.get(key, hash).is_some()
    }

    /// Number of keys.
    #[must_use]
    pub fn len(&self) -> usize {
        self.inner.len()
    }

    /// Whether the set is empty.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.inner.is_empty()
    }

    /// Look-ups (and inserts) the filter answered alone, and those that
    /// went to the exact set.
    #[must_use]
    pub fn lookup_counts(&self) -> (u64, u64) {
        (self.inner.counts.rejections, self.inner.counts.exact)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h(key: &[u8]) -> KeyHash {
        KeyHash::of(key)
    }

    #[test]
    fn precheck_skips_the_exact_map_for_absent_keys() {
        for precheck in [true, false] {
            let mut set = FilteredMap::new(precheck);
            for i in 0..1000u32 {
                let key = i.to_be_bytes();
                assert_eq!(set.insert(&key, h(&key), i), None);
            }
            assert_eq!(set.insert(b"\0\0\0\x07", h(b"\0\0\0\x07"), 70), Some(7));
            set.counts = LookupCounts::default();
            for i in 0..1000u32 {
                let key = i.to_be_bytes();
                let want = if i == 7 { 70 } else { i };
                assert_eq!(set.get(&key, h(&key)), Some(&want));
            }
            for i in 1000..11_000u32 {
                let key = i.to_be_bytes();
                assert_eq!(set.get(&key, h(&key)), None);
            }
            let LookupCounts { rejections, exact } = set.counts;
            assert_eq!(rejections + exact, 11_000);
            if precheck {
                // Members always reach the map; at most ~1% of the 10,000
                // absent keys do (3% leaves room for the binomial spread).
                assert!((1000..1300).contains(&exact), "{exact}");
            } else {
                assert_eq!(rejections, 0);
            }
        }
    }

    #[test]
    fn range_handles_crossed_and_equal_bounds() {
        use std::ops::Bound::{Excluded, Included, Unbounded};
        let mut set = FilteredMap::new(true);
        for key in [&b"a"[..], b"b", b"c"] {
            set.insert(key, h(key), ());
        }
        let keys = |bounds: crate::iter::UserBounds| -> Vec<Vec<u8>> {
            set.range(&bounds).map(|(k, ())| k.clone()).collect()
        };
        assert_eq!(keys((Included(b"b".to_vec()), Unbounded)).len(), 2);
        assert!(keys((Excluded(b"b".to_vec()), Excluded(b"b".to_vec()))).is_empty());
        assert!(keys((Included(b"c".to_vec()), Included(b"a".to_vec()))).is_empty());
        assert_eq!(
            keys((Included(b"b".to_vec()), Included(b"b".to_vec()))),
            vec![b"b".to_vec()]
        );
        let back: Vec<_> = set
            .range(&(Unbounded, Unbounded))
            .rev()
            .map(|(k, ())| k[0])
            .collect();
        assert_eq!(back, b"cba");
    }

    #[test]
    fn key_set_reports_membership_and_counts() {
        let mut set = KeySet::new(true);
        assert!(set.insert(b"x", h(b"x")));
        assert!(!set.insert(b"x", h(b"x")));
        assert!(set.contains(b"x", h(b"x")));
        assert_eq!(set.len(), 1);
        let (_, exact) = set.lookup_counts();
        assert!(exact >= 2, "the duplicate insert and the hit are exact");
    }
}
