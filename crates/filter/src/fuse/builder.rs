//! [`XorFamilyBuilder`]: buffers hashes, builds at the end, and falls back
//! to blocked Bloom when construction fails.

use std::marker::PhantomData;

use super::fallback::XorOrBloom;
use super::{BinaryFuseFilter, XorFamily, XorFilter};
use crate::BlockedBloom;
use crate::error::Result;
use crate::filter::FilterBuilder;
use crate::hash::KeyHash;
use crate::math;

/// Builds an XOR-family filter `T` ([`XorFilter`] or [`BinaryFuseFilter`])
/// from hashes whose count is known only at the end, e.g. while a table is
/// written. Named through [`XorBuilder`] and [`BinaryFuseBuilder`].
///
/// Call order: [`new`](Self::new), then [`add`](FilterBuilder::add) per
/// key (duplicates allowed, kept once), then either
///
/// - [`build`](Self::build), which returns the error of a failed
///   construction and keeps the hashes, so the caller decides what to
///   build instead; or
/// - [`finish`](FilterBuilder::finish), which falls back to a blocked Bloom
///   filter of the same or lower FPR itself.
///
/// The builder buffers the hashes (16 bytes each); building needs about 31
/// more bytes per key for a binary fuse filter, 33 for XOR (`peel.rs`).
#[derive(Clone, Debug)]
pub struct XorFamilyBuilder<T> {
    hashes: Vec<KeyHash>,
    filter: PhantomData<fn() -> T>,
}

/// Builds an [`XorFilter`] of `F` fingerprints.
pub type XorBuilder<F> = XorFamilyBuilder<XorFilter<F>>;
/// Builds a [`BinaryFuseFilter`] of `F` fingerprints.
pub type BinaryFuseBuilder<F> = XorFamilyBuilder<BinaryFuseFilter<F>>;

impl<T: XorFamily> XorFamilyBuilder<T> {
    /// An empty builder.
    #[must_use]
    pub fn new() -> Self {
        Self::with_capacity(0)
    }

    /// An empty builder with room for `keys` hashes.
    #[must_use]
    pub fn with_capacity(keys: usize) -> Self {
        Self {
            hashes: Vec::with_capacity(keys),
            filter: PhantomData,
        }
    }

    /// Builds the filter from the hashes added so far. On failure the
    /// hashes stay in the builder (deduplicated, possibly reordered), so a
    /// caller can build another kind from them:
    /// `Error::ConstructionFailed` when every seed failed,
    /// `Error::InvalidParameter` past the largest encodable filter.
    pub fn build(&mut self) -> Result<T> {
        T::build(&mut self.hashes)
    }

    /// The hashes added (after a failed [`build`](Self::build):
    /// deduplicated and sorted).
    #[must_use]
    pub fn hashes(&self) -> &[KeyHash] {
        &self.hashes
    }

    /// Bits per key of the blocked Bloom fallback: the fewest whose
    /// expected FPR is at most the filter's `2^-bits`.
    #[must_use]
    pub fn fallback_bits_per_key() -> f64 {
        crate::ribbon::bloom_bits_per_key_for(math::xor_family_fpr(u32::from(T::FINGERPRINT_BITS)))
    }

    /// [`finish`](FilterBuilder::finish) given the outcome of a build.
    fn finish_with(self, built: Result<T>) -> XorOrBloom<T> {
        match built {
            Ok(filter) => XorOrBloom::Xor(filter),
            Err(_) => XorOrBloom::Bloom(BlockedBloom::build(
                &self.hashes,
                Self::fallback_bits_per_key(),
            )),
        }
    }
}

impl<T: XorFamily> Default for XorFamilyBuilder<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T: XorFamily> FilterBuilder for XorFamilyBuilder<T> {
    type Output = XorOrBloom<T>;

    fn add(&mut self, hash: KeyHash) {
        self.hashes.push(hash);
    }

    fn len(&self) -> usize {
        self.hashes.len()
    }

    /// `T` if construction succeeds (see [`build`](Self::build)), else a
    /// blocked Bloom filter of [`fallback_bits_per_key`](Self::fallback_bits_per_key)
    /// (capped at the largest encodable size).
    fn finish(mut self) -> XorOrBloom<T> {
        let built = self.build();
        self.finish_with(built)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Error;
    use crate::filter::Filter;
    use crate::{BinaryFuse8, BinaryFuse16, Xor8, codec::FilterKind};

    fn filled<T: XorFamily>(n: u64) -> (XorFamilyBuilder<T>, Vec<KeyHash>) {
        let hashes: Vec<KeyHash> = (0..n).map(|i| KeyHash::of(&i.to_le_bytes())).collect();
        let mut b = XorFamilyBuilder::<T>::new();
        hashes.iter().for_each(|&h| b.add(h));
        (b, hashes)
    }

    #[test]
    fn failed_construction_falls_back_to_bloom() {
        let (b, hashes) = filled::<BinaryFuse8>(1_000);
        let failed = Err(Error::ConstructionFailed {
            kind: FilterKind::BinaryFuse,
            seeds: 32,
        });
        let f = b.finish_with(failed);
        let XorOrBloom::Bloom(bloom) = &f else {
            panic!("expected the fallback");
        };
        assert!(hashes.iter().all(|&h| f.may_contain(h)));
        assert!(bloom.estimated_fpr() < 2.0 / 256.0);
    }

    #[test]
    fn fallback_sizes_match_the_fpr() {
        let b8 = BinaryFuseBuilder::<u8>::fallback_bits_per_key();
        let b16 = BinaryFuseBuilder::<u16>::fallback_bits_per_key();
        assert!((11.0..14.0).contains(&b8), "{b8}");
        assert!((23.0..32.0).contains(&b16), "{b16}");
        assert_eq!(XorBuilder::<u8>::fallback_bits_per_key(), b8);
    }

    #[test]
    fn finish_builds_the_filter() {
        let (b, hashes) = filled::<BinaryFuse16>(2_000);
        assert_eq!((b.len(), b.is_empty()), (2_000, false));
        let XorOrBloom::Xor(f) = b.finish() else {
            panic!("fell back");
        };
        assert!(hashes.iter().all(|&h| f.may_contain(h)));
        let (mut b, _) = filled::<Xor8>(100);
        let f = b.build().unwrap();
        assert_eq!(f.num_keys(), 100);
        assert_eq!(b.hashes().len(), 100);
    }
}
