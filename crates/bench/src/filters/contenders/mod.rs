//! The contenders: Sift's filters and the crates.io baselines, behind one
//! pair of traits so the harness times them all the same way.
//!
//! A [`Contender`] builds a [`Built`] filter from key bytes; the harness
//! times `build` and the queries. Both receive raw keys, so each contender
//! pays for hashing them inside the timed region: Sift's filters through
//! `KeyHash::of` (XXH3-128), baselines through XXH3-64 fed to their
//! hash-accepting API (see each module for the exact calls).
//!
//! Where a filter can be asked with a hash computed beforehand, its
//! [`Built::count_prehashed`] times the probe alone: the query time less
//! the hash, for the split of a query's cost.

use super::keys::KeySet;
use sift_filter::KeyHash;

mod fastbloom;
mod lsm_tree;
mod qfilter;
mod sbbf;
mod sift;
mod sift_atomic;
mod sift_blocked;
mod sift_counting;
mod sift_cuckoo;
mod sift_fuse;
mod sift_partitioned;
mod sift_ribbon;
mod sift_scalable;
mod sift_split;
mod sift_standard;
mod xorf;

/// What every contender is built for in one run.
#[derive(Clone, Copy, Debug)]
pub struct Params {
    /// Member keys.
    pub n: usize,
    /// Bits per key for the Bloom kinds (theirs and ours).
    pub bits_per_key: f64,
}

/// One filter implementation under test.
pub trait Contender {
    /// Short unique name, used by `--only` and as the `filter` field.
    fn name(&self) -> &'static str;

    /// Whether this is one of Sift's filters (must show no false negatives).
    fn ours(&self) -> bool;

    /// How it is configured and fed, for the notes under the table.
    fn notes(&self, params: &Params) -> String;

    /// Whether `Params::bits_per_key` sizes it (the Bloom kinds), so that
    /// `--fpr` can size it for a target FPR; other kinds have one FPR.
    fn sized_by_bits(&self) -> bool {
        false
    }

    /// Builds a filter holding `keys`, hashing each key once.
    fn build(&self, keys: &KeySet, params: &Params) -> anyhow::Result<Box<dyn Built>>;
}

/// A filter built by a [`Contender`].
pub trait Built {
    /// Whether `key` may be a member; hashes `key` first.
    fn contains(&self, key: &[u8]) -> bool;

    /// How many of `keys` [`contains`](Self::contains) accepts. This is the
    /// timed query loop; the default is monomorphised per implementation, so
    /// `contains` is called statically and can be inlined.
    fn count_contained(&self, keys: &KeySet) -> u64 {
        let mut hits = 0;
        for key in keys.iter() {
            if self.contains(key) {
                hits += 1;
            }
        }
        hits
    }

    /// How many of `hashes` the filter accepts, each hash computed before
    /// the timed loop: the probe alone. `None` for a filter that takes
    /// only keys. Must agree with [`count_contained`](Self::count_contained)
    /// over the keys hashed.
    fn count_prehashed(&self, hashes: &Prehashed) -> Option<u64> {
        let _ = hashes;
        None
    }

    /// Bytes of memory the filter's data occupies.
    fn size_bytes(&self) -> usize;

    /// The FPR its design predicts for this shape and `n`, where a formula
    /// exists (the Bloom kinds).
    fn expected_fpr(&self) -> Option<f64>;

    /// State worth reporting beside the numbers (fill ratio, load, stages),
    /// read after the timed region; empty if none.
    fn detail(&self) -> String {
        String::new()
    }
}

/// Every contender, Sift's first, in table order.
pub fn all() -> Vec<Box<dyn Contender>> {
    vec![
        Box::new(sift_blocked::SiftBlocked),
        Box::new(sift_blocked::SiftBlockedBuilder),
        Box::new(sift_split::SiftSplit),
        Box::new(sift_ribbon::SiftRibbon::SEVEN_BITS),
        Box::new(sift_ribbon::SiftRibbon::ONE_PERCENT),
        Box::new(sift_standard::SiftStandard),
        Box::new(sift_partitioned::SiftPartitioned),
        Box::new(sift_counting::SiftCounting),
        Box::new(sift_atomic::SiftAtomic),
        Box::new(sift_cuckoo::SiftCuckoo),
        Box::new(sift_scalable::SiftScalable),
        Box::new(sift_fuse::XOR8),
        Box::new(sift_fuse::BINARY_FUSE8),
        Box::new(sift_fuse::BINARY_FUSE16),
        Box::new(fastbloom::FastBloom),
        Box::new(sbbf::Sbbf),
        Box::new(xorf::BinaryFuse8),
        Box::new(xorf::BinaryFuse16),
        Box::new(xorf::Xor8),
        Box::new(qfilter::QFilter),
        Box::new(lsm_tree::LsmTreeBloom),
    ]
}

/// Keys hashed ahead of time, once by each hash a contender may be fed.
pub struct Prehashed {
    /// `KeyHash::of` (XXH3-128) of each key: what Sift's filters take.
    pub sift: Vec<KeyHash>,
    /// XXH3-64 of each key: what the baselines take.
    pub xxh3_64: Vec<u64>,
}

impl Prehashed {
    /// Hashes every key of `keys` both ways.
    pub fn of(keys: &KeySet) -> Self {
        Self {
            sift: keys.iter().map(KeyHash::of).collect(),
            xxh3_64: keys.iter().map(xxh3_64).collect(),
        }
    }
}

/// Counts the `hashes` that `contains` accepts: the shared loop of every
/// [`Built::count_prehashed`].
#[inline]
fn count_hits<H: Copy>(hashes: &[H], contains: impl Fn(H) -> bool) -> u64 {
    let mut hits = 0;
    for &hash in hashes {
        if contains(hash) {
            hits += 1;
        }
    }
    hits
}

/// The XXH3-64 hash the baselines are fed.
#[inline]
fn xxh3_64(key: &[u8]) -> u64 {
    xxhash_rust::xxh3::xxh3_64(key)
}
