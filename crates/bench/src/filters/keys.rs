//! The workload's keys: 16 random bytes each, from a fixed-seed generator.
//!
//! Key `i` of a run is two SplitMix64 outputs (Steele, Lea & Flood 2014):
//! bytes 0..8 are `mix64(seed + (i + 1)·γ)` and bytes 8..16 are
//! `mix64(!seed + (i + 1)·γ)`, little-endian. `mix64` is a bijection and γ is
//! odd, so the first halves of distinct indices differ: members (indices
//! `0..n`) are distinct from each other and disjoint from non-members
//! (indices `n..n + probes`) by construction, not by luck. The same seed
//! gives the same keys on every machine.
//!
//! `sift-bench filters --key-bytes L` uses a [`KeySet`] of `L`-byte keys:
//! the same 16 bytes first, then more SplitMix64 words of the same index,
//! so longer keys stay distinct and disjoint the same way.

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

/// Shortest key of a [`KeySet`]: the 16 bytes that make keys distinct.
pub const MIN_KEY_BYTES: usize = 16;

/// `count` keys of one length, end to end in one buffer: a query loop
/// reads them in order, as it would read an array of fixed-size keys, and
/// each key reaches the hash as a slice of a length known only at run
/// time, as an engine's keys do.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeySet {
    bytes: Vec<u8>,
    key_bytes: usize,
}

impl KeySet {
    /// Keys with indices `start..start + count` of the stream seeded by
    /// `seed`, `key_bytes` (at least [`MIN_KEY_BYTES`]) each.
    pub fn generate(seed: u64, start: u64, count: usize, key_bytes: usize) -> Self {
        assert!(key_bytes >= MIN_KEY_BYTES, "keys shorter than 16 bytes");
        let mut bytes = Vec::with_capacity(count * key_bytes);
        for i in start..start + count as u64 {
            bytes.extend_from_slice(&key(seed, i));
            let step = (i + 1).wrapping_mul(GAMMA);
            for word in 2..key_bytes.div_ceil(8) as u64 {
                let w = mix64((seed ^ word.wrapping_mul(GAMMA).rotate_left(17)).wrapping_add(step));
                let room = key_bytes - 8 * word as usize;
                bytes.extend_from_slice(&w.to_le_bytes()[..room.min(8)]);
            }
        }
        Self { bytes, key_bytes }
    }

    /// Number of keys.
    pub fn len(&self) -> usize {
        self.bytes.len() / self.key_bytes
    }

    /// Whether there are no keys.
    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }

    /// The first `count` keys (all of them if there are fewer).
    pub fn prefix(&self, count: usize) -> Self {
        let end = self.bytes.len().min(count * self.key_bytes);
        Self {
            bytes: self.bytes[..end].to_vec(),
            key_bytes: self.key_bytes,
        }
    }

    /// The keys in order.
    pub fn iter(&self) -> std::slice::ChunksExact<'_, u8> {
        self.bytes.chunks_exact(self.key_bytes)
    }
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
    fn key_sets_extend_the_16_byte_keys() {
        let short = KeySet::generate(3, 10, 100, 16);
        let plain = generate(3, 10, 100);
        assert!(short.iter().eq(plain.iter().map(|k| &k[..])));
        for len in [17, 32, 61, 64] {
            let long = KeySet::generate(3, 10, 100, len);
            assert_eq!(long.len(), 100);
            assert!(long.iter().all(|k| k.len() == len));
            assert!(long.iter().zip(&plain).all(|(l, p)| l[..16] == p[..]));
            assert!(long.prefix(7).iter().eq(long.iter().take(7)));
            assert_eq!(long.prefix(1_000).len(), 100);
            // The tail is not padding: it varies across keys (a one-byte
            // tail has 256 values, so 100 keys share a few).
            let tails: HashSet<&[u8]> = long.iter().map(|k| &k[16..]).collect();
            assert!(tails.len() > 75, "{len}: {} tails", tails.len());
        }
    }

    #[test]
    fn same_seed_same_keys_other_seed_other_keys() {
        assert_eq!(generate(1, 0, 100), generate(1, 0, 100));
        assert_ne!(generate(1, 0, 100), generate(2, 0, 100));
        assert_eq!(generate(1, 0, 100)[40..], generate(1, 40, 60)[..]);
    }
}
