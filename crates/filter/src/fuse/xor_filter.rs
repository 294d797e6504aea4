//! [`XorFilter`]: three blocks (Graf & Lemire 2020).

use super::XorFamily;
use super::build;
use super::fingerprint::Fingerprint;
use super::layout::{Blocks, Layout};
use super::table::{Table, filter_over_table};
use crate::codec::FilterKind;
use crate::error::{DecodeError, Result};
use crate::filter::Filter;
use crate::hash::KeyHash;

/// An XOR filter (Graf & Lemire 2020, "Xor Filters: Faster and Smaller
/// Than Bloom and Cuckoo Filters"): a static set of key hashes in
/// `3 · ⌈(⌈1.23·n⌉ + 32) / 3⌉` fingerprints of `F` (about 9.84 bits/key
/// for [`Xor8`], 19.7 for [`Xor16`]), FPR `2^-bits`.
///
/// A key owns one slot in each of three equal blocks; the three slots XOR
/// to its fingerprint. A query reads the three and compares: no false
/// negatives, and a non-member passes with probability exactly `2^-bits`.
/// A [`BinaryFuseFilter`](super::BinaryFuseFilter) does the same in about
/// 9.0 bits/key with better locality; this kind is here for comparison
/// and for small sets, where it can be the smaller of the two.
///
/// Built by [`from_hashes`](Self::from_hashes) or an
/// [`XorBuilder`](super::XorBuilder). An empty key set gives a filter with
/// no slots that rejects everything.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct XorFilter<F: Fingerprint> {
    table: Table<F, Blocks>,
}

/// An [`XorFilter`] of 8-bit fingerprints: FPR `2^-8` (0.39%).
pub type Xor8 = XorFilter<u8>;
/// An [`XorFilter`] of 16-bit fingerprints: FPR `2^-16` (0.0015%).
pub type Xor16 = XorFilter<u16>;

impl<F: Fingerprint> XorFilter<F> {
    /// Builds a filter holding `hashes` (duplicates allowed). Fails with
    /// `Error::ConstructionFailed` if peeling failed under every seed
    /// (vanishingly rare for distinct hashes; build a Bloom filter
    /// instead), or `Error::InvalidParameter` past the largest encodable
    /// filter (about 3.5 billion keys at 8 bits, half that at 16).
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

    /// Slots per block; the filter has three blocks.
    #[must_use]
    pub fn block_length(&self) -> u64 {
        self.table.layout().block_len()
    }

    /// The seed number that peeled (`0..32`).
    #[must_use]
    pub fn seed(&self) -> u32 {
        self.table.seed()
    }
}

filter_over_table!(XorFilter, Blocks);
