//! Decoding a filter whose kind is known only from its bytes.

use crate::codec::{self, FilterKind};
use crate::error::DecodeError;
use crate::filter::delegate_filter;
use crate::fuse;
use crate::{
    AtomicBloom, BinaryFuse8, BinaryFuse16, BlockedBloom, CountingBloom, CuckooFilter,
    PartitionedBloom, Ribbon, ScalableBloom, SplitBlockBloom, StandardBloom, Xor8, Xor16,
};

/// Any key filter kind, as read from an encoding whose header names the
/// kind (and, for kinds 10 and 11, whose first body byte names the
/// fingerprint width). A [`RangeFilter`](crate::RangeFilter) (kind 9) answers ranges of
/// `u64` keys, not key hashes: it is not one of them, and decoding it here
/// is [`DecodeError::NotAKeyFilter`].
///
/// A reader that gets `Err` from [`decode`](Self::decode) must treat the
/// filter as answering "may contain" for every key: a filter that cannot be
/// read may cost a read, never lose a key.
#[derive(Debug)]
#[non_exhaustive]
pub enum AnyFilter {
    /// Kind 1.
    Standard(StandardBloom),
    /// Kind 2.
    Blocked(BlockedBloom),
    /// Kind 3.
    Ribbon(Ribbon),
    /// Kind 4.
    Counting(CountingBloom),
    /// Kind 5.
    Cuckoo(CuckooFilter),
    /// Kind 6.
    Scalable(ScalableBloom),
    /// Kind 7.
    Partitioned(PartitionedBloom),
    /// Kind 8.
    Atomic(AtomicBloom),
    /// Kind 10, 8-bit fingerprints.
    Xor8(Xor8),
    /// Kind 10, 16-bit fingerprints.
    Xor16(Xor16),
    /// Kind 11, 8-bit fingerprints.
    BinaryFuse8(BinaryFuse8),
    /// Kind 11, 16-bit fingerprints.
    BinaryFuse16(BinaryFuse16),
    /// Kind 12.
    SplitBlock(SplitBlockBloom),
}

impl AnyFilter {
    /// Decodes whichever key filter kind `bytes` holds.
    pub fn decode(bytes: &[u8]) -> Result<Self, DecodeError> {
        Ok(match codec::peek_kind(bytes)? {
            FilterKind::StandardBloom => Self::Standard(StandardBloom::decode(bytes)?),
            FilterKind::BlockedBloom => Self::Blocked(BlockedBloom::decode(bytes)?),
            FilterKind::Ribbon => Self::Ribbon(Ribbon::decode(bytes)?),
            FilterKind::CountingBloom => Self::Counting(CountingBloom::decode(bytes)?),
            FilterKind::Cuckoo => Self::Cuckoo(CuckooFilter::decode(bytes)?),
            FilterKind::ScalableBloom => Self::Scalable(ScalableBloom::decode(bytes)?),
            FilterKind::PartitionedBloom => Self::Partitioned(PartitionedBloom::decode(bytes)?),
            FilterKind::AtomicBloom => Self::Atomic(AtomicBloom::decode(bytes)?),
            kind @ FilterKind::RangeFilter => return Err(DecodeError::NotAKeyFilter(kind)),
            FilterKind::Xor => match fuse::peek_width(bytes)? {
                8 => Self::Xor8(Xor8::decode(bytes)?),
                16 => Self::Xor16(Xor16::decode(bytes)?),
                _ => return Err(DecodeError::Invalid("fingerprint width is not 8 or 16")),
            },
            FilterKind::BinaryFuse => match fuse::peek_width(bytes)? {
                8 => Self::BinaryFuse8(BinaryFuse8::decode(bytes)?),
                16 => Self::BinaryFuse16(BinaryFuse16::decode(bytes)?),
                _ => return Err(DecodeError::Invalid("fingerprint width is not 8 or 16")),
            },
            FilterKind::SplitBlockBloom => Self::SplitBlock(SplitBlockBloom::decode(bytes)?),
        })
    }

    /// The kind held.
    #[must_use]
    pub fn kind(&self) -> FilterKind {
        match self {
            Self::Standard(_) => FilterKind::StandardBloom,
            Self::Blocked(_) => FilterKind::BlockedBloom,
            Self::Ribbon(_) => FilterKind::Ribbon,
            Self::Counting(_) => FilterKind::CountingBloom,
            Self::Cuckoo(_) => FilterKind::Cuckoo,
            Self::Scalable(_) => FilterKind::ScalableBloom,
            Self::Partitioned(_) => FilterKind::PartitionedBloom,
            Self::Atomic(_) => FilterKind::AtomicBloom,
            Self::Xor8(_) | Self::Xor16(_) => FilterKind::Xor,
            Self::BinaryFuse8(_) | Self::BinaryFuse16(_) => FilterKind::BinaryFuse,
            Self::SplitBlock(_) => FilterKind::SplitBlockBloom,
        }
    }
}

delegate_filter!(AnyFilter {
    Standard,
    Blocked,
    Ribbon,
    Counting,
    Cuckoo,
    Scalable,
    Partitioned,
    Atomic,
    Xor8,
    Xor16,
    BinaryFuse8,
    BinaryFuse16,
    SplitBlock,
});
