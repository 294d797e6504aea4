//! [`XorOrBloom`]: what an [`XorFamilyBuilder`](super::XorFamilyBuilder)
//! finishes with.

use super::XorFamily;
use crate::BlockedBloom;
use crate::codec::{self, FilterKind};
use crate::error::DecodeError;
use crate::filter::Filter;
use crate::hash::KeyHash;

/// An XOR-family filter `T`, or the blocked Bloom filter its builder fell
/// back to when construction failed. Either way no false negatives; every
/// [`Filter`] method delegates to the filter held, and
/// [`encode`](Filter::encode) writes that filter's own encoding.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum XorOrBloom<T> {
    /// The XOR or binary fuse filter.
    Xor(T),
    /// The blocked Bloom fallback.
    Bloom(BlockedBloom),
}

impl<T: XorFamily> XorOrBloom<T> {
    /// Decodes a `T` or a blocked Bloom encoding, as its header says;
    /// `WrongKind` for any other kind.
    pub fn decode(bytes: &[u8]) -> Result<Self, DecodeError> {
        match codec::peek_kind(bytes)? {
            kind if kind == T::KIND => T::decode(bytes).map(Self::Xor),
            FilterKind::BlockedBloom => BlockedBloom::decode(bytes).map(Self::Bloom),
            found => Err(DecodeError::WrongKind {
                expected: T::KIND,
                found,
            }),
        }
    }
}

impl<T: Filter> XorOrBloom<T> {
    fn inner(&self) -> &dyn Filter {
        match self {
            Self::Xor(f) => f,
            Self::Bloom(f) => f,
        }
    }
}

impl<T: Filter> Filter for XorOrBloom<T> {
    #[inline]
    fn may_contain(&self, hash: KeyHash) -> bool {
        match self {
            Self::Xor(f) => f.may_contain(hash),
            Self::Bloom(f) => f.may_contain(hash),
        }
    }

    #[inline]
    fn prefetch(&self, hash: KeyHash) {
        match self {
            Self::Xor(f) => f.prefetch(hash),
            Self::Bloom(f) => f.prefetch(hash),
        }
    }

    fn size_bytes(&self) -> usize {
        self.inner().size_bytes()
    }

    fn fill_ratio(&self) -> f64 {
        self.inner().fill_ratio()
    }

    fn estimated_fpr(&self) -> f64 {
        self.inner().estimated_fpr()
    }

    fn estimated_count(&self) -> Option<f64> {
        self.inner().estimated_count()
    }

    fn encode(&self) -> Vec<u8> {
        self.inner().encode()
    }
}
