//! From a [`KeyHash`] and a seed to the 64 bits that place a key, and its
//! fingerprint.
//!
//! - `x = mix64(lo ^ s) ^ hi`, with `s` derived from the seed number, places
//!   the key: every position is a function of `x` alone (`layout.rs`).
//! - The fingerprint is the low bits of `hi`.
//!
//! Why this shape:
//!
//! - **One mix per query.** `mix64` is a bijection and `lo` is uniform, so
//!   `mix64(lo ^ s)` is uniform; XOR-ing `hi` keeps it so.
//! - **Fingerprint independent of the positions.** For a key not in the
//!   set, `mix64(lo ^ s)` is uniform and independent of `hi`, so `x` is
//!   independent of `hi`: the fingerprint is uniform whatever the positions,
//!   and a non-member passes with probability exactly `2^-bits`.
//! - **A new seed moves every key.** The seed enters before the mix, so two
//!   keys that collide (same positions) under one seed are unrelated under
//!   the next; a failed construction is retried with fresh positions.
//! - **Distinct hashes never collide for every seed.** Two hashes with the
//!   same `lo` differ in `hi`, hence in `x`, under every seed; with different
//!   `lo`, `x` agrees only by a seed-dependent accident. A key set is
//!   therefore never stuck on one pair (deriving `x` from `lo` alone would
//!   make hashes sharing `lo`, about `n² / 2^65` pairs, fail every seed).

use crate::hash::{KeyHash, mix64};

/// Turns the stored seed number into the value XOR-ed into `lo`. Distinct
/// seeds give unrelated values, and seed 0 is not 0 (the SplitMix64 step
/// keeps `mix64` off its fixed point). The fractional part of the golden
/// ratio, as for Ribbon's seeds.
const SEED_STEP: u64 = 0x9e37_79b9_7f4a_7c15;

/// Derives `x` for one seed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct SlotHasher {
    seed_mix: u64,
}

impl SlotHasher {
    /// The hasher of seed number `seed`.
    pub(super) const fn new(seed: u32) -> Self {
        Self {
            seed_mix: mix64((seed as u64).wrapping_add(1).wrapping_mul(SEED_STEP)),
        }
    }

    /// `x = mix64(lo ^ s) ^ hi`, which places the key.
    #[inline]
    pub(super) const fn place(self, hash: KeyHash) -> u64 {
        mix64(hash.lo() ^ self.seed_mix) ^ hash.hi()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seeds_are_distinct_and_pinned() {
        assert_eq!(SlotHasher::new(0).seed_mix, mix64(SEED_STEP));
        let mixes: Vec<u64> = (0..64).map(|s| SlotHasher::new(s).seed_mix).collect();
        for (i, a) in mixes.iter().enumerate() {
            assert!(mixes.iter().skip(i + 1).all(|b| a != b));
        }
    }

    #[test]
    fn hashes_sharing_lo_are_placed_apart() {
        let (a, b) = (KeyHash::from_parts(7, 1), KeyHash::from_parts(7, 2));
        for seed in 0..32 {
            let h = SlotHasher::new(seed);
            assert_ne!(h.place(a), h.place(b));
        }
    }
}
