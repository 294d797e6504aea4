//! The keys placed under one seed, in the order of their first slot.
//!
//! Peeling touches each key's three slots a few times. In hash order those
//! touches are random over the whole array (9 MB of peeling state for a
//! million keys), and each misses the cache. Ordered by first slot, a binary
//! fuse filter's keys walk the array from one end to the other: a key's
//! slots lie in three consecutive segments, so the state in use at any time
//! is a few segments wide. (An XOR filter gains less: only its first block
//! is walked in order.) The order comes from a counting sort on the high
//! bits of `x`, which the first slot grows with (`fastrange`), in `O(n)`.
#![deny(clippy::indexing_slicing)]

use super::fingerprint::Fingerprint;
use super::hashing::SlotHasher;
use super::layout::Layout;
use crate::hash::{KeyHash, fastrange64};

/// Slots per bucket of the counting sort: small enough that a bucket's
/// slots stay in cache, large enough that the buckets' write cursors do.
const SLOTS_PER_BUCKET: u64 = 4_096;

/// Placing hashes and fingerprints of every key, key `i` at index `i` of
/// both, keys ordered by their first slot (up to the bucket size).
pub(super) struct Placed<F> {
    pub(super) xs: Vec<u64>,
    pub(super) fingerprints: Vec<F>,
}

impl<F: Fingerprint> Placed<F> {
    /// Places `hashes` with `hasher` and orders them by first slot.
    pub(super) fn new<L: Layout>(layout: &L, hashes: &[KeyHash], hasher: SlotHasher) -> Self {
        let buckets = (layout.slots() / SLOTS_PER_BUCKET).max(1);
        // `x` is computed twice (a mix and an XOR) rather than stored
        // between the passes: cheaper than writing and reading 8 bytes per
        // key.
        let bucket = |h: KeyHash| fastrange64(hasher.place(h), buckets) as usize;
        // Where each bucket starts in the output: counts, then a running sum.
        let mut starts = vec![0usize; buckets as usize];
        for &h in hashes {
            if let Some(count) = starts.get_mut(bucket(h)) {
                *count += 1;
            }
        }
        let mut sum = 0;
        for start in &mut starts {
            (*start, sum) = (sum, sum + *start);
        }
        let mut placed = Self {
            xs: vec![0; hashes.len()],
            fingerprints: vec![F::default(); hashes.len()],
        };
        for &h in hashes {
            let x = hasher.place(h);
            let Some(cursor) = starts.get_mut(fastrange64(x, buckets) as usize) else {
                continue;
            };
            if let (Some(to_x), Some(to_fp)) = (
                placed.xs.get_mut(*cursor),
                placed.fingerprints.get_mut(*cursor),
            ) {
                *to_x = x;
                *to_fp = F::of(h.hi());
            }
            *cursor += 1;
        }
        placed
    }
}

#[cfg(test)]
mod tests {
    use super::super::layout::Segments;
    use super::*;
    use crate::hash::mix64;

    #[test]
    fn keys_are_ordered_by_bucket_and_none_is_lost() {
        let hashes: Vec<KeyHash> = (0..50_000u64)
            .map(|i| KeyHash::from_parts(mix64(i), mix64(!i)))
            .collect();
        let layout = Segments::for_keys(50_000).unwrap();
        let hasher = SlotHasher::new(3);
        let placed: Placed<u16> = Placed::new(&layout, &hashes, hasher);
        let buckets = layout.slots() / SLOTS_PER_BUCKET;
        assert!(buckets > 4);
        assert!(
            placed
                .xs
                .windows(2)
                .all(|w| fastrange64(w[0], buckets) <= fastrange64(w[1], buckets))
        );
        let mut expected: Vec<(u64, u16)> = hashes
            .iter()
            .map(|&h| (hasher.place(h), u16::of(h.hi())))
            .collect();
        let mut got: Vec<(u64, u16)> = placed.xs.into_iter().zip(placed.fingerprints).collect();
        expected.sort_unstable();
        got.sort_unstable();
        assert_eq!(got, expected);
    }
}
