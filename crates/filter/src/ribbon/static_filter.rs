//! [`StaticFilter`]: the static key filter of a table, whichever kind.

use super::Ribbon;
use crate::codec::{self, FilterKind};
use crate::error::DecodeError;
use crate::filter::delegate_filter;
use crate::fuse::peek_width;
use crate::{BinaryFuse8, BinaryFuse16, BlockedBloom, SplitBlockBloom};

/// A static key filter, as a table holds it: Ribbon (when it is built and
/// smaller, see [`RibbonBuilder`](super::RibbonBuilder)), Binary Fuse,
/// split-block Bloom, or blocked Bloom (by choice, or as Ribbon's or
/// Binary Fuse's fallback). Either way no
/// false negatives; every [`Filter`] method delegates to the filter held,
/// and [`encode`](Filter::encode) writes that filter's own encoding.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum StaticFilter {
    /// A Ribbon filter.
    Ribbon(Ribbon),
    /// A blocked Bloom filter.
    Bloom(BlockedBloom),
    /// A Binary Fuse filter of 8-bit fingerprints.
    BinaryFuse8(BinaryFuse8),
    /// A Binary Fuse filter of 16-bit fingerprints.
    BinaryFuse16(BinaryFuse16),
    /// A split-block Bloom filter.
    SplitBlock(SplitBlockBloom),
}

impl StaticFilter {
    /// Decodes a Ribbon, blocked Bloom, Binary Fuse or split-block Bloom
    /// encoding, as its header says; `WrongKind` for any other kind.
    pub fn decode(bytes: &[u8]) -> Result<Self, DecodeError> {
        match codec::peek_kind(bytes)? {
            FilterKind::Ribbon => Ribbon::decode(bytes).map(Self::Ribbon),
            FilterKind::BlockedBloom => BlockedBloom::decode(bytes).map(Self::Bloom),
            FilterKind::BinaryFuse => match peek_width(bytes)? {
                8 => BinaryFuse8::decode(bytes).map(Self::BinaryFuse8),
                16 => BinaryFuse16::decode(bytes).map(Self::BinaryFuse16),
                _ => Err(DecodeError::Invalid("fingerprint width is not 8 or 16")),
            },
            FilterKind::SplitBlockBloom => SplitBlockBloom::decode(bytes).map(Self::SplitBlock),
            found => Err(DecodeError::WrongKind {
                expected: FilterKind::Ribbon,
                found,
            }),
        }
    }

    /// The kind held.
    #[must_use]
    pub fn kind(&self) -> FilterKind {
        match self {
            Self::Ribbon(_) => FilterKind::Ribbon,
            Self::Bloom(_) => FilterKind::BlockedBloom,
            Self::BinaryFuse8(_) | Self::BinaryFuse16(_) => FilterKind::BinaryFuse,
            Self::SplitBlock(_) => FilterKind::SplitBlockBloom,
        }
    }
}

delegate_filter!(StaticFilter {
    Ribbon,
    Bloom,
    BinaryFuse8,
    BinaryFuse16,
    SplitBlock
});
