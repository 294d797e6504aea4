//! The standard Ribbon filter (Dillinger & Walzer 2021, "Ribbon filter:
//! practically smaller than Bloom and Xor") with 128-bit coefficient rows,
//! for the static key sets of long-lived LSM levels.
//!
//! A Ribbon filter stores a solution `S` (`slots × r` bits) to one linear
//! equation over GF(2) per key: the key's 128 random coefficients, placed
//! at its start slot, select solution rows whose XOR must equal the key's
//! `r` hash-derived result bits. A non-member's XOR matches its own result
//! bits with probability `2^-r`, at about `r · (1 + ε)` bits per key, where
//! Bloom needs `1.44 · r`.
//!
//! Files, in the order a build runs:
//!
//! | file | role |
//! |---|---|
//! | `config.rs` | slot count for `n` keys (overhead ε), seed budget |
//! | `layout.rs` | interleaved column-major layout; fractional result bits |
//! | `hashing.rs` | key hash + seed → start, coefficients, result bits |
//! | `banding.rs` | on-the-fly Gaussian elimination |
//! | `solution.rs` | back-substitution and the query |
//! | `build.rs` | seeds tried in turn until banding succeeds |
//! | `bloom_cost.rs` | size and FPR of the blocked Bloom fallback |
//! | `builder.rs` | [`RibbonBuilder`]: Ribbon when smaller, else blocked Bloom |
//! | `static_filter.rs` | [`StaticFilter`], either of the two |
//!
//! Encoding body (little-endian), after the common envelope:
//!
//! ```text
//! u32  seed          hashing seed that banded (< MAX_SEEDS)
//! u64  keys          distinct equations solved (the key count)
//! u64  slots         multiple of 128; 0 only for an empty key set
//! u64  segments      128-bit column segments (layout.rs derives the
//!                    columns of every block from slots and segments)
//! u64  words[2 · segments]
//! ```

mod banding;
mod bloom_cost;
mod build;
mod builder;
mod config;
mod hashing;
mod layout;
mod solution;
mod static_filter;

pub use builder::RibbonBuilder;
pub use static_filter::StaticFilter;

pub(crate) use bloom_cost::bits_per_key_for as bloom_bits_per_key_for;
pub(crate) use build::planned_fpr;
pub(crate) use config::slots_per_key;

use crate::codec::{self, FilterKind, Writer};
use crate::error::DecodeError;
use crate::filter::Filter;
use crate::hash::KeyHash;
use hashing::RowHasher;
use layout::Layout;

/// A standard Ribbon filter over 128-bit coefficient rows.
///
/// Built by [`RibbonBuilder`] (which falls back to a blocked Bloom filter
/// where Ribbon would not be smaller). No false negatives; a non-member
/// whose start falls in a block storing `c` result bits passes with
/// probability `2^-c`, which [`estimated_fpr`](Filter::estimated_fpr)
/// averages over the blocks. An empty key set gives a filter that rejects
/// everything.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ribbon {
    seed: u32,
    num_keys: u64,
    layout: Layout,
    hasher: RowHasher,
    words: Vec<u64>,
}

impl Ribbon {
    fn from_parts(seed: u32, num_keys: u64, layout: Layout, words: Vec<u64>) -> Self {
        Self {
            seed,
            num_keys,
            hasher: RowHasher::new(seed, layout.num_starts()),
            layout,
            words,
        }
    }

    /// Reads an encoding made by [`Filter::encode`]. Every parameter is
    /// checked against the others and against the payload length, so a
    /// decoded filter answers every query without panicking.
    pub fn decode(bytes: &[u8]) -> Result<Self, DecodeError> {
        let mut r = codec::open(bytes, FilterKind::Ribbon)?;
        let seed = r.u32()?;
        let num_keys = r.u64()?;
        let num_slots = r.u64()?;
        let num_segments = r.u64()?;
        if seed >= config::MAX_SEEDS {
            return Err(DecodeError::Invalid("Ribbon seed out of range"));
        }
        if num_slots > config::MAX_SLOTS {
            return Err(DecodeError::Invalid("Ribbon slot count too large"));
        }
        let layout = Layout::new(num_slots, num_segments).ok_or(DecodeError::Invalid(
            "Ribbon slots or segments out of range",
        ))?;
        if num_keys > num_slots || (num_keys == 0) != (num_slots == 0) {
            return Err(DecodeError::Invalid(
                "Ribbon key count disagrees with slots",
            ));
        }
        let count = usize::try_from(num_segments)
            .ok()
            .and_then(|s| s.checked_mul(2))
            .ok_or(DecodeError::Invalid("Ribbon segment count too large"))?;
        let words = r.words(count)?;
        r.finish()?;
        Ok(Self::from_parts(seed, num_keys, layout, words))
    }
}

impl Filter for Ribbon {
    #[inline]
    fn may_contain(&self, hash: KeyHash) -> bool {
        if self.layout.num_starts() == 0 {
            return false;
        }
        solution::satisfies(&self.words, &self.layout, self.hasher.equation(hash))
    }

    /// The first line of the start's block; the query reads on from there,
    /// which the hardware prefetcher follows.
    #[inline]
    fn prefetch(&self, hash: KeyHash) {
        let block = self.hasher.start(hash) / layout::WIDTH;
        let word = 2 * self.layout.first_segment(block);
        if let Some(first) = usize::try_from(word).ok().and_then(|w| self.words.get(w)) {
            crate::prefetch::line(first);
        }
    }

    fn size_bytes(&self) -> usize {
        self.words.len() * 8
    }

    /// Keys per slot.
    fn fill_ratio(&self) -> f64 {
        match self.layout.num_slots() {
            0 => 0.0,
            slots => self.num_keys as f64 / slots as f64,
        }
    }

    fn estimated_fpr(&self) -> f64 {
        self.layout.fpr()
    }

    /// Exact up to hash collisions: the number of distinct equations.
    fn estimated_count(&self) -> Option<f64> {
        Some(self.num_keys as f64)
    }

    fn encode(&self) -> Vec<u8> {
        let mut w = Writer::new();
        w.u32(self.seed)
            .u64(self.num_keys)
            .u64(self.layout.num_slots())
            .u64(self.layout.num_segments())
            .words(&self.words);
        codec::seal(FilterKind::Ribbon, w)
    }
}
