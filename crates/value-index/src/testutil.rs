//! Helpers shared by the unit tests: value hashes and leaf filters.

use std::sync::Arc;

use sift_filter::{BloomShape, KeyHash, StandardBloom, mix64};

/// A small shape: 2048 bits, 4 probes.
pub(crate) const SHAPE: BloomShape = BloomShape {
    bits: 2_048,
    probes: 4,
};

/// The hash of value number `i`.
pub(crate) fn value(i: u64) -> KeyHash {
    KeyHash::of(&i.to_le_bytes())
}

/// A leaf of `shape` holding values `values`.
pub(crate) fn leaf(shape: BloomShape, values: impl IntoIterator<Item = u64>) -> Arc<StandardBloom> {
    let mut f = StandardBloom::new(shape).unwrap();
    for v in values {
        f.insert(value(v));
    }
    Arc::new(f)
}

/// Leaf `id`'s filter in the tests' standard workload: 40 values, 35 of
/// them unique to the leaf and 5 drawn from a pool of 20 shared ones.
pub(crate) fn workload_leaf(id: u64) -> Arc<StandardBloom> {
    let unique = (0..35).map(move |j| 1_000_000 + id * 100 + j);
    let shared = (0..5).map(move |j| mix64(id * 7 + j) % 20);
    leaf(SHAPE, unique.chain(shared))
}

/// A deterministic pseudo-random stream (SplitMix64 over a counter).
pub(crate) struct Rng(pub(crate) u64);

impl Rng {
    /// The next value in `[0, n)`.
    pub(crate) fn below(&mut self, n: u64) -> u64 {
        self.0 += 1;
        mix64(self.0.wrapping_mul(0x9e37_79b9_7f4a_7c15)) % n.max(1)
    }
}
