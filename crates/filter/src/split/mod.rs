//! The split-block Bloom filter: each key sets one bit in each of `k ≤ 8`
//! 32-bit lanes of one 256-bit block (the layout of Parquet's filters,
//! generalised to any `k` by a rotating window; see `block.rs`). The
//! fastest Bloom query Sift has: no multiply inside the block, one 32-byte
//! load, about 10 instructions on AVX2. The price is memory: at equal FPR
//! it needs 3% more bits than the 512-bit
//! [`BlockedBloom`](crate::BlockedBloom) at 1%, 5% at 0.4% and 9% at 0.1%
//! (whose larger blocks even out the load). So it suits the filters
//! queried most per byte: the hot, small levels.
//!
//! Layout, from a [`KeyHash`]:
//! - block `(hash.lo() >> 32) · num_blocks >> 32`, a 32-bit fastrange
//!   (one multiply; `num_blocks < 2^32` always holds, see `ARRAY`);
//! - inside it, the window and bits from `hash.hi()` (`block.rs`);
//! - `num_blocks = max(1, ceil(n · bits_per_key / 256))`;
//! - `k` minimises [`math::split_block_bloom_fpr_at`] at the filter's real
//!   `m/n`, and is stored in the encoding.
//!
//! [`math::split_block_bloom_fpr_at`]: crate::math::split_block_bloom_fpr_at
#![deny(clippy::indexing_slicing)]

#[cfg(target_arch = "x86_64")]
mod avx2;
mod block;
mod builder;

use block::{BLOCK_BITS, BLOCK_BYTES, Block, LANES, Lanes, WINDOWS, window_start};
pub use builder::SplitBlockBloomBuilder;

use crate::block_array::{BlockArray, QueryPath};
use crate::codec::{self, FilterKind, Writer};
use crate::error::{DecodeError, Result};
use crate::filter::Filter;
use crate::hash::KeyHash;
use crate::math::split_block_bloom_probes;

/// 256-bit blocks, up to 8 probes: at most 134,217,727 blocks (4 GiB), far
/// below the `2^32` the 32-bit block index allows.
const ARRAY: BlockArray = BlockArray {
    block_bytes: BLOCK_BYTES,
    max_probes: block::MAX_PROBES,
};

/// A split-block Bloom filter over 256-bit blocks.
///
/// No false negatives. [`math::split_block_bloom_fpr`] gives its FPR
/// exactly: 1.11% at 10 bits/key, 0.91% at 10.5 and 0.76% at 11 (6
/// probes), 0.52% at 12 (7), 0.13% at 16 (8). Parquet's fixed 8 probes
/// give 0.82% at 11.
///
/// Encoding body (little-endian): probe count `u32` (1 to 8), block count
/// `u64`, then each block's 8 lanes as `u32`.
///
/// [`math::split_block_bloom_fpr`]: crate::math::split_block_bloom_fpr
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SplitBlockBloom {
    /// Never empty, fewer than `2^32`.
    blocks: Vec<Block>,
    probes: u32,
    /// `WINDOWS[probes]`: the window of each start lane.
    windows: &'static [Lanes; LANES],
    path: QueryPath,
}

impl SplitBlockBloom {
    /// The largest probe count: one bit per lane.
    pub const MAX_PROBES: u32 = block::MAX_PROBES;

    /// Builds a filter holding `hashes`, sized for `hashes.len()` keys at
    /// `bits_per_key` (fractional allowed). `Error::InvalidParameter` unless
    /// `bits_per_key` is finite and positive and the size is encodable.
    pub fn from_hashes(hashes: &[KeyHash], bits_per_key: f64) -> Result<Self> {
        ARRAY.check_size(hashes.len() as u64, bits_per_key)?;
        Ok(Self::build(hashes, bits_per_key))
    }

    /// An empty filter sized for `expected_keys` at `bits_per_key`, filled
    /// by [`insert`](Self::insert). More keys than expected raise the FPR,
    /// never lose a key. Errors as [`from_hashes`](Self::from_hashes).
    pub fn with_capacity(expected_keys: u64, bits_per_key: f64) -> Result<Self> {
        ARRAY.check_size(expected_keys, bits_per_key)?;
        Ok(Self::sized(expected_keys, bits_per_key))
    }

    /// Adds `hash`. Adding it again changes nothing.
    #[inline]
    pub fn insert(&mut self, hash: KeyHash) {
        let window = self.window(hash);
        let index = self.block_index(hash);
        if let Some(block) = self.blocks.get_mut(index) {
            block.insert(hash, window);
        }
    }

    /// Probes per key (`k`, 1 to 8).
    #[must_use]
    pub fn num_probes(&self) -> u32 {
        self.probes
    }

    /// Number of 256-bit blocks; the filter has `256 · num_blocks()` bits.
    #[must_use]
    pub fn num_blocks(&self) -> usize {
        self.blocks.len()
    }

    /// [`Filter::may_contain`] by the portable loop. Always the same answer
    /// as `may_contain`, which uses AVX2 where the CPU has it.
    #[inline]
    #[must_use]
    pub fn may_contain_scalar(&self, hash: KeyHash) -> bool {
        self.blocks
            .get(self.block_index(hash))
            .is_none_or(|block| block.contains(hash, self.window(hash)))
    }

    /// Reads an encoding made by [`Filter::encode`]. Rejects a probe count
    /// outside `1..=8`, zero blocks, and a block count that disagrees with
    /// the payload length.
    pub fn decode(bytes: &[u8]) -> Result<Self, DecodeError> {
        let mut r = codec::open(bytes, FilterKind::SplitBlockBloom)?;
        let (probes, bytes) = ARRAY.read(&mut r)?;
        let blocks = bytes
            .chunks_exact(BLOCK_BYTES)
            .map(Block::from_le_bytes)
            .collect();
        r.finish()?;
        Ok(Self::with_blocks(blocks, probes))
    }

    /// [`from_hashes`](Self::from_hashes) after validation; a size past
    /// the largest encodable filter is capped there.
    pub(crate) fn build(hashes: &[KeyHash], bits_per_key: f64) -> Self {
        let mut filter = Self::sized(hashes.len() as u64, bits_per_key);
        for &hash in hashes {
            filter.insert(hash);
        }
        filter
    }

    /// An empty filter for `n` keys at `bits_per_key` (blocks capped at
    /// the largest encodable filter); the probe count minimises the FPR at
    /// the resulting `m/n` (at `bits_per_key` when `n` is 0).
    fn sized(n: u64, bits_per_key: f64) -> Self {
        let (blocks, actual) = ARRAY.sized(n, bits_per_key);
        Self::with_blocks(
            vec![Block::default(); blocks],
            split_block_bloom_probes(actual),
        )
    }

    /// A filter of `blocks` (not empty) and `probes` (1 to 8).
    fn with_blocks(blocks: Vec<Block>, probes: u32) -> Self {
        let windows = WINDOWS.0.get(probes as usize).unwrap_or(&WINDOWS.0[LANES]);
        Self {
            blocks,
            probes,
            windows,
            path: QueryPath::detect(),
        }
    }

    /// The key's block: a 32-bit fastrange of the top half of `hash.lo()`,
    /// below `blocks.len()` because that is nonzero and below `2^32`.
    #[inline]
    fn block_index(&self, hash: KeyHash) -> usize {
        (((hash.lo() >> 32) * self.blocks.len() as u64) >> 32) as usize
    }

    /// The lanes the key probes: its window of `probes` lanes.
    #[inline]
    #[expect(clippy::indexing_slicing, reason = "window_start is below 8")]
    fn window(&self, hash: KeyHash) -> &'static Lanes {
        &self.windows[window_start(hash)]
    }

    fn bits(&self) -> u64 {
        self.blocks.len() as u64 * u64::from(BLOCK_BITS)
    }
}

impl Filter for SplitBlockBloom {
    #[inline]
    fn may_contain(&self, hash: KeyHash) -> bool {
        debug_assert!(self.block_index(hash) < self.blocks.len());
        // SAFETY: `blocks` is never empty and has fewer than 2^32 blocks, so
        // the 32-bit fastrange `block_index` is below its length. (A bounds
        // check here measurably slowed this two-instruction-per-probe query.)
        let block = unsafe { self.blocks.get_unchecked(self.block_index(hash)) };
        let window = self.window(hash);
        match self.path {
            QueryPath::Scalar => portable_contains(block, hash, window),
            // SAFETY: `QueryPath::detect` picks `Avx2` only where this CPU
            // executes AVX2.
            #[cfg(target_arch = "x86_64")]
            QueryPath::Avx2 => unsafe { avx2::contains(block, hash.hi(), window) },
        }
    }

    /// The key's block: the one line a query reads.
    #[inline]
    fn prefetch(&self, hash: KeyHash) {
        if let Some(block) = self.blocks.get(self.block_index(hash)) {
            crate::prefetch::line(block);
        }
    }

    fn size_bytes(&self) -> usize {
        self.blocks.len() * BLOCK_BYTES
    }

    fn fill_ratio(&self) -> f64 {
        let ones: u64 = self.blocks.iter().map(|b| u64::from(b.count_ones())).sum();
        ones as f64 / self.bits() as f64
    }

    /// Exact for the block contents: a non-member picks a block and a
    /// window start uniformly, then one uniform bit in each lane of the
    /// window, so it passes with the mean over blocks and starts of the
    /// product of the window lanes' fills `ones / 32`.
    fn estimated_fpr(&self) -> f64 {
        let total: f64 = self
            .blocks
            .iter()
            .map(|block| {
                let fills = block.lane_ones().map(|ones| f64::from(ones) / 32.0);
                self.windows
                    .iter()
                    .map(|window| {
                        window
                            .iter()
                            .zip(fills)
                            .filter(|&(&on, _)| on == 1)
                            .map(|(_, fill)| fill)
                            .product::<f64>()
                    })
                    .sum::<f64>()
                    / LANES as f64
            })
            .sum();
        total / self.blocks.len() as f64
    }

    /// Sum over blocks of the load that explains the block's set bits: a
    /// key sets a given bit of the block with probability `k/256` (its
    /// window covers the lane with probability `k/8`, then one bit of 32),
    /// so `L` keys leave `256 · (1 - (1 - k/256)^L)` ones expected, which
    /// inverts to `L = ln(1 - ones/256) / ln(1 - k/256)`. Infinite for a
    /// full block, which holds no information on its load.
    fn estimated_count(&self) -> Option<f64> {
        let bits = f64::from(BLOCK_BITS);
        let per_key = (-f64::from(self.probes) / bits).ln_1p();
        Some(
            self.blocks
                .iter()
                .map(|b| (-f64::from(b.count_ones()) / bits).ln_1p() / per_key)
                .sum(),
        )
    }

    fn encode(&self) -> Vec<u8> {
        let mut w = Writer::new();
        w.u32(self.probes).u64(self.blocks.len() as u64);
        for block in &self.blocks {
            w.words(&block.words());
        }
        codec::seal(FilterKind::SplitBlockBloom, w)
    }
}

/// [`Block::contains`], out of line on x86-64, where it only serves CPUs
/// without AVX2: inlined there, it made `may_contain` too large for the
/// compiler to inline into a caller's loop, which then paid two calls per
/// query instead of one.
#[cfg_attr(target_arch = "x86_64", inline(never))]
#[cfg_attr(not(target_arch = "x86_64"), inline)]
fn portable_contains(block: &Block, hash: KeyHash, window: &Lanes) -> bool {
    block.contains(hash, window)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_by_fractional_bits_per_key() {
        let f = SplitBlockBloom::with_capacity(1_000_000, 10.0).unwrap();
        assert_eq!(f.num_blocks(), 39_063); // ceil(10^7 / 256)
        assert_eq!(f.num_probes(), 6);
        assert_eq!(
            SplitBlockBloom::with_capacity(0, 10.0)
                .unwrap()
                .num_blocks(),
            1
        );
        // One key in a whole block: m/n = 256, every lane probed.
        assert_eq!(
            SplitBlockBloom::with_capacity(1, 10.0)
                .unwrap()
                .num_probes(),
            SplitBlockBloom::MAX_PROBES
        );
    }

    #[test]
    fn every_block_has_a_32_bit_index() {
        assert!((ARRAY.max_blocks() as u64) < 1 << 32);
    }

    #[test]
    fn block_index_stays_in_range() {
        let f = SplitBlockBloom::with_capacity(10_000, 10.0).unwrap();
        for lo in [0, u64::MAX, 1 << 63, u64::MAX >> 1] {
            assert!(f.block_index(KeyHash::from_parts(lo, 0)) < f.num_blocks());
        }
        assert_eq!(
            f.block_index(KeyHash::from_parts(u64::MAX, 0)),
            f.num_blocks() - 1
        );
    }

    #[test]
    fn statistics_of_an_empty_and_a_full_filter() {
        let mut f = SplitBlockBloom::with_capacity(100, 10.0).unwrap();
        assert_eq!(
            (f.fill_ratio(), f.estimated_fpr(), f.estimated_count()),
            (0.0, 0.0, Some(0.0))
        );
        f.blocks.iter_mut().for_each(|b| b.0 = [u32::MAX; LANES]);
        assert_eq!((f.fill_ratio(), f.estimated_fpr()), (1.0, 1.0));
        assert_eq!(f.estimated_count(), Some(f64::INFINITY));
    }
}
