//! [`StaticFilter`]: the static key filter of a table, either kind.

use super::Ribbon;
use crate::BlockedBloom;
use crate::codec::{self, FilterKind};
use crate::error::DecodeError;
use crate::filter::Filter;
use crate::hash::KeyHash;

/// A static key filter: Ribbon when it is built and smaller, else the
/// blocked Bloom fallback (see [`RibbonBuilder`](super::RibbonBuilder)).
/// Either way no false negatives; every [`Filter`] method delegates to the
/// filter held, and [`encode`](Filter::encode) writes that filter's own
/// encoding.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StaticFilter {
    /// A Ribbon filter.
    Ribbon(Ribbon),
    /// The blocked Bloom fallback.
    Bloom(BlockedBloom),
}

impl StaticFilter {
    /// Decodes a Ribbon or a blocked Bloom encoding, as its header says;
    /// `WrongKind` for any other kind.
    pub fn decode(bytes: &[u8]) -> Result<Self, DecodeError> {
        match codec::peek_kind(bytes)? {
            FilterKind::Ribbon => Ribbon::decode(bytes).map(Self::Ribbon),
            FilterKind::BlockedBloom => BlockedBloom::decode(bytes).map(Self::Bloom),
            found => Err(DecodeError::WrongKind {
                expected: FilterKind::Ribbon,
                found,
            }),
        }
    }

    fn inner(&self) -> &dyn Filter {
        match self {
            Self::Ribbon(f) => f,
            Self::Bloom(f) => f,
        }
    }
}

impl Filter for StaticFilter {
    #[inline]
    fn may_contain(&self, hash: KeyHash) -> bool {
        match self {
            Self::Ribbon(f) => f.may_contain(hash),
            Self::Bloom(f) => f.may_contain(hash),
        }
    }

    #[inline]
    fn prefetch(&self, hash: KeyHash) {
        match self {
            Self::Ribbon(f) => f.prefetch(hash),
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
