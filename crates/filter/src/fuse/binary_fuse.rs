//! [`BinaryFuseFilter`]: three consecutive segments (Graf & Lemire 2022).

use super::XorFamily;
use super::build;
use super::fingerprint::Fingerprint;
use super::layout::{Layout, Segments};
use super::table::{Table, filter_over_table};
use crate::codec::FilterKind;
use crate::error::{DecodeError, Result};
use crate::filter::Filter;
use crate::hash::KeyHash;

/// A 3-wise binary fuse filter (Graf & Lemire 2022, "Binary Fuse Filters:
/// Fast and Smaller Than Xor Filters"): a static set of key hashes in
/// about `1.125·n` fingerprints of `F` from a million keys on (9.04
/// bits/key for [`BinaryFuse8`] at 1M keys, 18.1 for [`BinaryFuse16`]),
/// FPR `2^-bits`; small sets take more per key (see
/// [`math::binary_fuse_bits_per_key`](crate::math::binary_fuse_bits_per_key)).
///
/// The array is cut into segments of a power-of-two length; a key owns one
/// slot in each of three consecutive segments, and the three XOR to its
/// fingerprint. A query reads the three and compares: no false negatives,
/// and a non-member passes with probability exactly `2^-bits`.
///
/// Built by [`from_hashes`](Self::from_hashes) or a
/// [`BinaryFuseBuilder`](super::BinaryFuseBuilder). An empty key set gives
/// a filter with no slots that rejects everything.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BinaryFuseFilter<F: Fingerprint> {
    table: Table<F, Segments>,
}

/// A [`BinaryFuseFilter`] of 8-bit fingerprints: FPR `2^-8` (0.39%), about
/// 9 bits/key.
pub type BinaryFuse8 = BinaryFuseFilter<u8>;
/// A [`BinaryFuseFilter`] of 16-bit fingerprints: FPR `2^-16` (0.0015%),
/// about 18 bits/key.
pub type BinaryFuse16 = BinaryFuseFilter<u16>;

impl<F: Fingerprint> BinaryFuseFilter<F> {
    /// Builds a filter holding `hashes` (duplicates allowed). Fails with
    /// `Error::ConstructionFailed` if peeling failed under every seed
    /// (vanishingly rare for distinct hashes; build a Bloom filter
    /// instead), or `Error::InvalidParameter` past the largest encodable
    /// filter (about 3.8 billion keys at 8 bits, half that at 16).
    pub fn from_hashes(hashes: &[KeyHash]) -> Result<Self> {
        Self::build(&mut hashes.to_vec())
    }

    /// Reads an encoding made by [`Filter::encode`] of this width. Every
    /// field is checked against the others and the payload length.
    pub fn decode(bytes: &[u8]) -> Result<Self, DecodeError> {
        Table::decode(bytes).map(|table| Self { table })
    }

    /// Distinct keys the filter was built from.
    #[must_use]
    pub fn num_keys(&self) -> u64 {
        self.table.num_keys()
    }

    /// Slots per segment (a power of two; 1 for the empty filter).
    #[must_use]
    pub fn segment_length(&self) -> u64 {
        1 << self.table.layout().log2_len()
    }

    /// Segments a key's first slot may be in; the array has
    /// `segment_count() + 2` segments (none when empty).
    #[must_use]
    pub fn segment_count(&self) -> u64 {
        self.table.layout().count()
    }

    /// The seed number that peeled (`0..32`).
    #[must_use]
    pub fn seed(&self) -> u32 {
        self.table.seed()
    }
}

filter_over_table!(BinaryFuseFilter, Segments);
