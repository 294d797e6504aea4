//! The range filter's hash: keys are cut into blocks of `L` consecutive
//! values; a block keeps its order and moves, as a whole, to a random
//! place of a cyclic hash space `[0, r)`.
//!
//! `h(x) = (q(x >> log2 L) + (x mod L)) mod r`, `q(z) = fastrange64(mix64(z ^ seed), r)`,
//! `L` the largest power of two `≤ r`.
//!
//! As `L ≤ r`, `h` is one-to-one on a block, so a range inside one block
//! maps to an arc of as many hash values and no other key of that block
//! lands on it. `mix64` is a bijection, so distinct blocks get distinct
//! inputs to `fastrange64`; the FPR bound (`math/range.rs`) models the
//! shifts of distinct blocks as independent and uniform, which the
//! statistical tests (`tests/range.rs`) check on random and clustered keys.

use crate::hash::{fastrange64, mix64};

/// `h` for one hash space and seed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct RangeHash {
    space: u64,
    shift: u32,
    seed: u64,
}

/// A hashed range: one arc `[a, b]` of the hash space, or, past `r - 1`,
/// the two arcs `[a, r - 1]` and `[0, b]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Arc {
    /// `a ≤ b`.
    Within(u64, u64),
    /// `[a, r - 1] ∪ [0, b]`, `a > b`.
    Wrapped(u64, u64),
}

impl RangeHash {
    /// The hash of space `space` (`1..=2^62`) and `seed`.
    pub(super) fn new(space: u64, seed: u64) -> Self {
        debug_assert!((1..=crate::math::RANGE_FILTER_MAX_HASH_SPACE).contains(&space));
        Self {
            space,
            shift: space.max(1).ilog2(),
            seed,
        }
    }

    /// `r`.
    pub(super) fn space(&self) -> u64 {
        self.space
    }

    /// `log2 L`.
    pub(super) fn block_shift(&self) -> u32 {
        self.shift
    }

    /// `L`.
    pub(super) fn block_len(&self) -> u64 {
        1 << self.shift
    }

    pub(super) fn seed(&self) -> u64 {
        self.seed
    }

    /// The block of `x`.
    #[inline]
    pub(super) fn block(&self, x: u64) -> u64 {
        x >> self.shift
    }

    /// `q(z)`: where block `z` starts in the hash space.
    #[inline]
    pub(super) fn block_start(&self, block: u64) -> u64 {
        fastrange64(mix64(block ^ self.seed), self.space)
    }

    /// `h(x)`.
    #[inline]
    pub(super) fn of(&self, x: u64) -> u64 {
        self.place(self.block_start(self.block(x)), x)
    }

    /// The hash values of `[a, b]`, both in one block.
    #[inline]
    pub(super) fn arc(&self, a: u64, b: u64) -> Arc {
        debug_assert!(a <= b && self.block(a) == self.block(b));
        let start = self.block_start(self.block(a));
        match (self.place(start, a), self.place(start, b)) {
            (ha, hb) if ha <= hb => Arc::Within(ha, hb),
            (ha, hb) => Arc::Wrapped(ha, hb),
        }
    }

    /// `(start + x mod L) mod r`. Both terms are below `r ≤ 2^62`, so the
    /// sum does not overflow and one subtraction reduces it.
    #[inline]
    fn place(&self, start: u64, x: u64) -> u64 {
        let sum = start + (x & (self.block_len() - 1));
        if sum >= self.space {
            sum - self.space
        } else {
            sum
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_are_powers_of_two_no_larger_than_the_space() {
        for (space, len) in [(1u64, 1u64), (2, 2), (3, 2), (768, 512), (1 << 62, 1 << 62)] {
            assert_eq!(RangeHash::new(space, 0).block_len(), len, "{space}");
        }
    }

    #[test]
    fn a_block_keeps_its_order_up_to_one_wrap() {
        let hash = RangeHash::new(1_000, 42);
        let len = hash.block_len();
        assert_eq!(len, 512);
        for block in 0..200u64 {
            let base = block * len;
            let start = hash.block_start(block);
            assert!(start < 1_000);
            let hashes: Vec<u64> = (base..base + len).map(|x| hash.of(x)).collect();
            // Consecutive keys, consecutive values mod r: one-to-one.
            for pair in hashes.windows(2) {
                assert_eq!((pair[0] + 1) % 1_000, pair[1]);
            }
            assert_eq!(hashes[0], start);
            let whole = hash.arc(base, base + len - 1);
            let wraps = start + len > 1_000;
            assert_eq!(matches!(whole, Arc::Wrapped(..)), wraps, "{whole:?}");
        }
    }

    #[test]
    fn the_seed_moves_blocks() {
        let (a, b) = (RangeHash::new(1 << 40, 1), RangeHash::new(1 << 40, 2));
        let moved = (0..100u64)
            .filter(|&z| a.block_start(z) != b.block_start(z))
            .count();
        assert_eq!(moved, 100);
        assert_eq!(a.of(5) - a.of(3), 2);
    }
}
