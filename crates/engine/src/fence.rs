//! Key fences: an 8-byte integer per key of a sorted list, ordered as the
//! keys are, held in one array.
//!
//! A binary search over keys kept in separate heap allocations costs a
//! cache miss and a `memcmp` call per step. Over the fences it touches a
//! few cache lines and compares integers; full keys are compared only
//! among the keys whose fence ties with the target's. A table's index and
//! a run's list of tables both search this way.
//!
//! A fence is the 8 bytes that follow the prefix every key of the list
//! shares, so keys that share a long head (`user:000…`) still differ in
//! their fences.
#![deny(clippy::indexing_slicing)]

use std::ops::Range;

/// Fences of a sorted list of keys.
#[derive(Debug, Default, Clone)]
pub(crate) struct Fences {
    /// The prefix every fenced key begins with (possibly none).
    prefix: Box<[u8]>,
    /// One per key, ascending.
    values: Vec<u64>,
}

impl Fences {
    /// Fences of `keys` (ascending), read past the prefix that `low` and
    /// `high` share: the least and greatest keys of the list, between
    /// which every key lies and so shares that prefix too.
    pub(crate) fn new<'a>(
        low: &[u8],
        high: &[u8],
        keys: impl IntoIterator<Item = &'a [u8]>,
    ) -> Self {
        let shared = low.iter().zip(high).take_while(|(a, b)| a == b).count();
        let prefix: Box<[u8]> = low.get(..shared).unwrap_or_default().into();
        let values = keys.into_iter().map(|key| fence(&prefix, key)).collect();
        Self { prefix, values }
    }

    /// The fence of any `key`, fenced or not: `a <= b` implies
    /// `of(a) <= of(b)`, and unequal fences order their keys.
    pub(crate) fn of(&self, key: &[u8]) -> u64 {
        fence(&self.prefix, key)
    }

    /// The positions whose fence equals `fence`: every key before them is
    /// smaller than any key with that fence, every key after them larger.
    pub(crate) fn ties(&self, fence: u64) -> Range<usize> {
        ties_in(&self.values, |&f| f, fence)
    }

    /// The prefix the fences read past.
    pub(crate) fn prefix(&self) -> &[u8] {
        &self.prefix
    }

    /// One fence per key, ascending.
    pub(crate) fn values(&self) -> &[u64] {
        &self.values
    }
}

/// [`Fences::ties`] over fences held in any form (a table's index keeps
/// them as stored bytes): `value` reads one, and they ascend.
pub(crate) fn ties_in<T>(fences: &[T], value: impl Fn(&T) -> u64, fence: u64) -> Range<usize> {
    let below = fences.partition_point(|f| value(f) < fence);
    // Ties are rare: look past the first one only when there is one.
    let ties = match fences.get(below) {
        Some(f) if value(f) == fence => fences
            .get(below..)
            .unwrap_or_default()
            .partition_point(|f| value(f) == fence),
        _ => 0,
    };
    below..below + ties
}

/// The 8 bytes of `key` after `prefix`, big-endian and zero-padded (a key
/// that ends early is a prefix of the longer one, hence smaller). Keys that
/// do not begin with `prefix` sort before or after every key that does,
/// and map to 0 or `u64::MAX`, where fenced keys may tie with them.
pub(crate) fn fence(prefix: &[u8], key: &[u8]) -> u64 {
    let Some(rest) = key.strip_prefix(prefix) else {
        return if key < prefix { 0 } else { u64::MAX };
    };
    let mut bytes = [0u8; 8];
    for (to, &from) in bytes.iter_mut().zip(rest) {
        *to = from;
    }
    u64::from_be_bytes(bytes)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Keys over a 2-letter alphabet, some behind a common 8-byte head, so
    /// that many tie on their fence, and short keys that pad with zeros.
    pub(crate) fn tying_key() -> impl Strategy<Value = Vec<u8>> {
        let letters = || proptest::collection::vec(prop_oneof![Just(0u8), Just(b'a')], 0..4);
        prop_oneof![
            letters(),
            letters().prop_map(|tail| [b"aaaaaaaa".as_slice(), &tail].concat()),
            proptest::collection::vec(any::<u8>(), 0..12),
        ]
    }

    proptest! {
        #[test]
        fn fences_keep_key_order(
            keys in proptest::collection::btree_set(tying_key(), 1..24),
            probes in proptest::collection::vec(tying_key(), 1..24),
        ) {
            let keys: Vec<&[u8]> = keys.iter().map(Vec::as_slice).collect();
            let (low, high) = (keys[0], keys[keys.len() - 1]);
            let fences = Fences::new(low, high, keys.iter().copied());
            for probe in keys.iter().copied().chain(probes.iter().map(Vec::as_slice)) {
                let ties = fences.ties(fences.of(probe));
                for (i, &key) in keys.iter().enumerate() {
                    if i < ties.start {
                        prop_assert!(key < probe, "{key:?} before {probe:?}");
                    } else if i >= ties.end {
                        prop_assert!(key > probe, "{key:?} after {probe:?}");
                    }
                }
            }
        }
    }

    #[test]
    fn fences_read_past_the_shared_prefix() {
        let fences = Fences::new(b"user:1", b"user:9", []);
        assert!(fences.of(b"user:12345678a") < fences.of(b"user:12345679"));
        assert_eq!(fences.of(b"user"), 0, "before every key with the prefix");
        assert_eq!(fences.of(b"usera"), u64::MAX, "after every key with it");
        assert_eq!(fences.of(b"user:"), 0);
        let bare = Fences::new(b"", b"", []);
        assert_eq!(bare.of(b"a"), bare.of(b"a\0"));
        assert_eq!(bare.of(&[0xff; 9]), u64::MAX);
    }
}
