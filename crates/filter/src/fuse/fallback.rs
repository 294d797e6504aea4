//! [`XorOrBloom`]: what an [`XorFamilyBuilder`](super::XorFamilyBuilder)
//! finishes with.

use super::XorFamily;
use crate::BlockedBloom;
use crate::codec::{self, FilterKind};
use crate::error::DecodeError;
use crate::filter::{Filter, delegate_filter};

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

delegate_filter!(XorOrBloom<T: Filter> { Xor, Bloom });
