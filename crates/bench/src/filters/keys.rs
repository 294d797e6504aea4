//! The workload's keys: 16 random bytes each, from a fixed-seed generator.
//!
//! Key `i` of a run is two SplitMix64 outputs (Steele, Lea & Flood 2014):
//! bytes 0..8 are `mix64(seed + (i + 1)·γ)` and bytes 8..16 are
//! `mix64(!seed + (i + 1)·γ)`, little-endian. `mix64` is a bijection and γ is
//! odd, so the first halves of distinct indices differ: members (indices
//! `0..n`) are distinct from each other and disjoint from non-members
//! (indices `n..n + probes`) by construction, not by luck. The same seed
//! gives the same keys on every machine.

use sift_filter::mix64;

/// One benchmark key.
pub type Key = [u8; 16];

/// SplitMix64's increment, the odd integer closest to 2^64/φ.
const GAMMA: u64 = 0x9e37_79b9_7f4a_7c15;

/// Keys with indices `start..start + count` of the stream seeded by `seed`.
pub fn generate(seed: u64, start: u64, count: usize) -> Vec<Key> {
    (start..start + count as u64)
        .map(|i| key(seed, i))
        .collect()
}

/// Key `i` of the stream seeded by `seed`, computed (a few ns) rather than
/// read from an array: a workload that picks keys at random then measures
/// the store, not a cache miss on its own key list.
pub fn key(seed: u64, i: u64) -> Key {
    let step = (i + 1).wrapping_mul(GAMMA);
    let lo = mix64(seed.wrapping_add(step));
    let hi = mix64((!seed).wrapping_add(step));
    let mut key = [0u8; 16];
    key[..8].copy_from_slice(&lo.to_le_bytes());
    key[8..].copy_from_slice(&hi.to_le_bytes());
    key
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn members_and_probes_are_distinct_and_disjoint() {
        let members = generate(7, 0, 5_000);
        let probes = generate(7, 5_000, 5_000);
        let all: HashSet<Key> = members.iter().chain(&probes).copied().collect();
        assert_eq!(all.len(), 10_000);
    }

    #[test]
    fn same_seed_same_keys_other_seed_other_keys() {
        assert_eq!(generate(1, 0, 100), generate(1, 0, 100));
        assert_ne!(generate(1, 0, 100), generate(2, 0, 100));
        assert_eq!(generate(1, 0, 100)[40..], generate(1, 40, 60)[..]);
    }
}
