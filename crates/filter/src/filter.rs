//! The two traits every filter kind implements.

use crate::hash::KeyHash;

/// A membership filter: answers "may this key be in the set?".
///
/// **Contract: no false negatives.** For every hash added before the filter
/// was finished (or inserted and not removed, for the deletable kinds),
/// `may_contain` returns `true`. It may also return `true` for hashes never
/// added: that is the false-positive rate, which [`estimated_fpr`]
/// predicts. A caller that cannot read a filter must behave as if it had
/// answered `true`.
///
/// [`estimated_fpr`]: Filter::estimated_fpr
pub trait Filter {
    /// `false` only if `hash` was certainly never added.
    fn may_contain(&self, hash: KeyHash) -> bool;

    /// Starts loading the memory a [`may_contain`](Self::may_contain) of
    /// `hash` will read, so that a batch of queries can overlap their cache
    /// misses: prefetch every filter, then query. A hint; by default none.
    fn prefetch(&self, hash: KeyHash) {
        let _ = hash;
    }

    /// Bytes of filter data held in memory (bit arrays, slots, solutions),
    /// excluding the fixed-size struct and the encoding envelope.
    fn size_bytes(&self) -> usize;

    /// Measured occupancy in `[0, 1]`: the fraction of set bits for the
    /// Bloom kinds, of non-zero counters for counting Bloom, of used slots
    /// for cuckoo, of keys per slot for Ribbon.
    fn fill_ratio(&self) -> f64;

    /// The false-positive rate expected for a hash that was never added,
    /// computed from the filter's measured state (not from its target).
    fn estimated_fpr(&self) -> f64;

    /// An estimate of the number of distinct hashes added, where the
    /// structure allows one (from the fill ratio for the Bloom kinds).
    fn estimated_count(&self) -> Option<f64>;

    /// The self-describing, versioned, checksummed encoding (see
    /// `docs/format.md`). Each kind's `decode` reads it back into a filter
    /// that answers every query identically.
    fn encode(&self) -> Vec<u8>;
}

/// Builds a static filter from a stream of hashes.
///
/// Call order: `new`-style constructor, then [`add`](Self::add) any number
/// of times (duplicates are allowed and counted once where the kind can
/// tell), then [`finish`](Self::finish) once.
pub trait FilterBuilder {
    /// The filter this builder produces.
    type Output: Filter;

    /// Adds one key's hash.
    fn add(&mut self, hash: KeyHash);

    /// Number of hashes added so far (duplicates included).
    fn len(&self) -> usize;

    /// Whether nothing was added yet.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Builds the filter.
    fn finish(self) -> Self::Output;
}

/// Implements [`Filter`] for an enum whose every variant holds one filter:
/// each method is answered by the filter held (a direct call per variant,
/// no virtual call), and `encode` writes that filter's own encoding.
///
/// `delegate_filter!(Enum { A, B })`, or with one type parameter
/// `delegate_filter!(Enum<T: Bound> { A, B })`.
macro_rules! delegate_filter {
    ($name:ident $(<$param:ident: $bound:path>)? { $($variant:ident),+ $(,)? }) => {
        impl $(<$param: $bound>)? $crate::filter::Filter for $name $(<$param>)? {
            #[inline]
            fn may_contain(&self, hash: $crate::hash::KeyHash) -> bool {
                match self { $(Self::$variant(f) => f.may_contain(hash),)+ }
            }

            #[inline]
            fn prefetch(&self, hash: $crate::hash::KeyHash) {
                match self { $(Self::$variant(f) => f.prefetch(hash),)+ }
            }

            fn size_bytes(&self) -> usize {
                match self { $(Self::$variant(f) => f.size_bytes(),)+ }
            }

            fn fill_ratio(&self) -> f64 {
                match self { $(Self::$variant(f) => f.fill_ratio(),)+ }
            }

            fn estimated_fpr(&self) -> f64 {
                match self { $(Self::$variant(f) => f.estimated_fpr(),)+ }
            }

            fn estimated_count(&self) -> Option<f64> {
                match self { $(Self::$variant(f) => f.estimated_count(),)+ }
            }

            fn encode(&self) -> Vec<u8> {
                match self { $(Self::$variant(f) => f.encode(),)+ }
            }
        }
    };
}
pub(crate) use delegate_filter;
