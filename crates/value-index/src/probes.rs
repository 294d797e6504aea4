//! A query resolved against a shape, and the word-level helpers the
//! structures share.

use sift_filter::{BloomShape, KeyHash};

/// The `k` bit positions of one searched value, computed once per search
/// (by [`BloomShape::probe_positions`], so they are the positions a
/// [`sift_filter::StandardBloom`] of the shape uses) and tested against
/// every node a search visits.
#[derive(Clone, Debug)]
pub(crate) struct Probes {
    /// `(word index, bit mask)` per probe, in probe order.
    words: Vec<(usize, u64)>,
    /// The raw positions, for the bit-sliced layout's row numbers.
    positions: Vec<u64>,
}

impl Probes {
    /// The probes of `hash` under `shape`.
    pub(crate) fn new(shape: BloomShape, hash: KeyHash) -> Self {
        let positions: Vec<u64> = shape.probe_positions(hash).collect();
        let words = positions
            .iter()
            .map(|&i| ((i >> 6) as usize, 1u64 << (i & 63)))
            .collect();
        Self { words, positions }
    }

    /// The probe positions, each in `[0, m)`.
    pub(crate) fn positions(&self) -> &[u64] {
        &self.positions
    }

    /// Whether every probe bit is set in `bits` (a bit array of the
    /// shape): the Bloom filter answer "maybe". A word past the end of
    /// `bits` reads as zero, so a malformed array answers "no" instead of
    /// panicking; arrays of the right shape never hit that.
    pub(crate) fn matches(&self, bits: &[u64]) -> bool {
        self.words
            .iter()
            .all(|&(w, mask)| bits.get(w).is_some_and(|word| word & mask != 0))
    }
}

/// ORs `src` into `dst` word by word (equal lengths within one shape).
pub(crate) fn or_into(dst: &mut [u64], src: &[u64]) {
    for (a, b) in dst.iter_mut().zip(src) {
        *a |= b;
    }
}

/// Number of set bits.
pub(crate) fn count_ones(bits: &[u64]) -> u64 {
    bits.iter().map(|w| u64::from(w.count_ones())).sum()
}

/// Bits set in `new` that are not set in `old`: how much OR-ing `new`
/// into `old` would saturate it.
pub(crate) fn added_bits(old: &[u64], new: &[u64]) -> u64 {
    old.iter()
        .zip(new)
        .map(|(o, n)| u64::from((n & !o).count_ones()))
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;
    use sift_filter::{Filter, StandardBloom};

    #[test]
    fn matches_agrees_with_the_filter() {
        let shape = BloomShape {
            bits: 500,
            probes: 4,
        };
        let mut f = StandardBloom::new(shape).unwrap();
        for i in 0..40u64 {
            f.insert(KeyHash::of(&i.to_le_bytes()));
        }
        for i in 0..2_000u64 {
            let h = KeyHash::of(&i.to_le_bytes());
            let p = Probes::new(shape, h);
            assert_eq!(p.matches(f.words()), f.may_contain(h), "value {i}");
            assert_eq!(p.positions().len(), 4);
            assert!(p.positions().iter().all(|&x| x < 500));
        }
    }

    #[test]
    fn short_arrays_read_as_zero() {
        let shape = BloomShape {
            bits: 640,
            probes: 2,
        };
        let p = Probes::new(shape, KeyHash::of(b"x"));
        assert!(!p.matches(&[]));
        assert!(p.matches(&[u64::MAX; 10]));
    }

    #[test]
    fn word_helpers() {
        let mut a = [0b1010u64, 0];
        or_into(&mut a, &[0b0110, 1]);
        assert_eq!(a, [0b1110, 1]);
        assert_eq!(count_ones(&a), 4);
        assert_eq!(added_bits(&[0b1100, 0], &[0b1011, 3]), 4);
    }
}
