//! The cache-line blocked Bloom filter (Putze, Sanders & Singler 2007), the
//! default SSTable key filter: every key lives in one 512-bit block, so a
//! query reads one cache line.
//!
//! Layout, from a [`KeyHash`]:
//! - block `fastrange64(hash.lo(), num_blocks)`;
//! - inside it, `k` bits derived from `hash.hi()` alone (see `block.rs`);
//! - `num_blocks = max(1, ceil(n · bits_per_key / 512))`, so fractional
//!   bits/key are honoured to within one block;
//! - `k` minimises the blocked FPR formula at the filter's real `m/n` (see
//!   `probes.rs`), and is stored in the encoding.
//!
//! Queries use AVX2 where the CPU has it (`avx2.rs`) and the scalar loop
//! otherwise; both give the same answer for every filter and hash.
#![deny(clippy::indexing_slicing)]

#[cfg(target_arch = "x86_64")]
mod avx2;
mod block;
mod builder;
mod probes;

use block::{BLOCK_BITS, BLOCK_BYTES, Block, probe_seed};
pub use builder::BlockedBloomBuilder;

use crate::block_array::{BlockArray, QueryPath};
use crate::codec::{self, FilterKind, Writer};
use crate::error::{DecodeError, Result};
use crate::filter::Filter;
use crate::hash::{KeyHash, fastrange64};

/// 512-bit blocks, up to 24 probes: at most 67,108,863 blocks (4 GiB,
/// about 3.4 billion keys at 10 bits/key).
const ARRAY: BlockArray = BlockArray {
    block_bytes: BLOCK_BYTES,
    max_probes: probes::MAX_PROBES,
};

/// A blocked Bloom filter over 512-bit, cache-line-aligned blocks.
///
/// No false negatives. The FPR is a little above a standard Bloom filter's
/// of the same size, for one cache miss per query instead of `k`: at 10
/// bits/key, 6 probes and 0.9668% measured (40 filters of 1M keys, 10M
/// probes each; 7 probes gave 0.9679%), against 0.82%.
/// [`math::blocked_bloom_fpr`] predicts 0.9663% (0.9684% for 7 probes).
///
/// Encoding body (little-endian): probe count `u32`, block count `u64`,
/// then each block's 8 words `u64`.
///
/// [`math::blocked_bloom_fpr`]: crate::math::blocked_bloom_fpr
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BlockedBloom {
    blocks: Vec<Block>,
    probes: u32,
    path: QueryPath,
}

impl BlockedBloom {
    /// The largest probe count a filter uses or decodes.
    pub const MAX_PROBES: u32 = probes::MAX_PROBES;

    /// Builds a filter holding `hashes`, sized for `hashes.len()` keys at
    /// `bits_per_key` (fractional allowed). `Error::InvalidParameter` unless
    /// `bits_per_key` is finite and positive and the size is encodable.
    pub fn from_hashes(hashes: &[KeyHash], bits_per_key: f64) -> Result<Self> {
        ARRAY.check_size(hashes.len() as u64, bits_per_key)?;
        Ok(Self::build(hashes, bits_per_key))
    }

    /// An empty filter sized for `expected_keys` at `bits_per_key`, filled by
    /// [`insert`](Self::insert). Inserting more keys than expected keeps
    /// every key but raises the FPR. Errors as [`from_hashes`](Self::from_hashes).
    pub fn with_capacity(expected_keys: u64, bits_per_key: f64) -> Result<Self> {
        ARRAY.check_size(expected_keys, bits_per_key)?;
        Ok(Self::sized(expected_keys, bits_per_key))
    }

    /// Adds `hash`. Adding it again changes nothing.
    #[inline]
    #[expect(clippy::indexing_slicing, reason = "block_index is below blocks.len()")]
    pub fn insert(&mut self, hash: KeyHash) {
        let index = self.block_index(hash);
        self.blocks[index].insert(probe_seed(hash), self.probes);
    }

    /// Probes per key (`k`).
    #[must_use]
    pub fn num_probes(&self) -> u32 {
        self.probes
    }

    /// Number of 512-bit blocks; the filter has `512 · num_blocks()` bits.
    #[must_use]
    pub fn num_blocks(&self) -> usize {
        self.blocks.len()
    }

    /// [`Filter::may_contain`] by the portable scalar loop, which stops at
    /// the first clear bit. Always gives the same answer as `may_contain`,
    /// which uses SIMD where the CPU has it.
    #[inline]
    #[must_use]
    pub fn may_contain_scalar(&self, hash: KeyHash) -> bool {
        match self.blocks.get(self.block_index(hash)) {
            Some(block) => block.contains(probe_seed(hash), self.probes),
            None => true,
        }
    }

    /// Reads an encoding made by [`Filter::encode`], whatever bits/key and
    /// probe count it was built with. Rejects a probe count outside
    /// `1..=MAX_PROBES`, zero blocks, and a block count that disagrees with
    /// the payload length.
    pub fn decode(bytes: &[u8]) -> Result<Self, DecodeError> {
        let mut r = codec::open(bytes, FilterKind::BlockedBloom)?;
        let (probes, bytes) = ARRAY.read(&mut r)?;
        let blocks = bytes
            .chunks_exact(BLOCK_BYTES)
            .map(Block::from_le_bytes)
            .collect();
        r.finish()?;
        Ok(Self {
            blocks,
            probes,
            path: QueryPath::detect(),
        })
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
        Self {
            blocks: vec![Block::default(); blocks],
            probes: probes::for_bits_per_key(actual),
            path: QueryPath::detect(),
        }
    }

    #[inline]
    fn block_index(&self, hash: KeyHash) -> usize {
        fastrange64(hash.lo(), self.blocks.len() as u64) as usize
    }

    fn bits(&self) -> u64 {
        self.blocks.len() as u64 * u64::from(BLOCK_BITS)
    }
}

impl Filter for BlockedBloom {
    #[inline]
    fn may_contain(&self, hash: KeyHash) -> bool {
        let Some(block) = self.blocks.get(self.block_index(hash)) else {
            return true;
        };
        let seed = probe_seed(hash);
        match self.path {
            QueryPath::Scalar => block.contains(seed, self.probes),
            // SAFETY: `QueryPath::detect` picks `Avx2` only where this CPU
            // executes AVX2.
            #[cfg(target_arch = "x86_64")]
            QueryPath::Avx2 => unsafe { avx2::contains(block, seed, self.probes) },
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

    /// Mean over blocks of `(ones / 512)^k`: a non-member picks a block
    /// uniformly and then `k` bits of it, each set with probability
    /// `ones / 512`. Exact for this layout, up to the dependence between a
    /// key's probes (`block.rs`), which the tests measure as negligible.
    fn estimated_fpr(&self) -> f64 {
        let k = self.probes as i32;
        let total: f64 = self
            .blocks
            .iter()
            .map(|b| (f64::from(b.count_ones()) / f64::from(BLOCK_BITS)).powi(k))
            .sum();
        total / self.blocks.len() as f64
    }

    /// Sum over blocks of the load that explains the block's set bits. After
    /// `L` keys set `k` bits each (with replacement) a block expects
    /// `512 · (1 - (1 - 1/512)^{kL})` ones, which inverts to
    /// `L = ln(1 - ones/512) / (k · ln(1 - 1/512))`. Inverting per block,
    /// not the global fill, avoids the downward bias of a convex function
    /// (`-ln(1 - x)`) of averaged, unevenly loaded blocks. A full block holds
    /// no information on its load, and the estimate is then infinite.
    fn estimated_count(&self) -> Option<f64> {
        let per_key = f64::from(self.probes) * (-1.0 / f64::from(BLOCK_BITS)).ln_1p();
        Some(
            self.blocks
                .iter()
                .map(|b| (-f64::from(b.count_ones()) / f64::from(BLOCK_BITS)).ln_1p() / per_key)
                .sum(),
        )
    }

    fn encode(&self) -> Vec<u8> {
        let mut w = Writer::new();
        w.u32(self.probes).u64(self.blocks.len() as u64);
        for block in &self.blocks {
            w.words(&block.0);
        }
        codec::seal(FilterKind::BlockedBloom, w)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(range: std::ops::Range<u64>) -> Vec<KeyHash> {
        range.map(|i| KeyHash::of(&i.to_le_bytes())).collect()
    }

    #[test]
    fn sizes_by_fractional_bits_per_key() {
        let f = BlockedBloom::with_capacity(1_000_000, 10.0).unwrap();
        assert_eq!(f.num_blocks(), 19_532); // ceil(10^7 / 512)
        assert_eq!(f.num_probes(), 6);
        let f = BlockedBloom::with_capacity(1_000, 7.5).unwrap();
        assert_eq!(f.num_blocks(), 15); // ceil(14.65)
        assert_eq!(
            BlockedBloom::with_capacity(0, 10.0).unwrap().num_blocks(),
            1
        );
        assert_eq!(
            BlockedBloom::with_capacity(0, 10.0).unwrap().num_probes(),
            6
        );
        // One key in a whole block: m/n = 512, the probe count saturates.
        assert_eq!(
            BlockedBloom::with_capacity(1, 10.0).unwrap().num_probes(),
            BlockedBloom::MAX_PROBES
        );
    }

    #[test]
    fn insert_from_hashes_and_builder_agree() {
        use crate::filter::FilterBuilder;
        let hashes = keys(0..5_000);
        let built = BlockedBloom::from_hashes(&hashes, 9.0).unwrap();
        let mut inserted = BlockedBloom::with_capacity(5_000, 9.0).unwrap();
        let mut builder = BlockedBloomBuilder::new(9.0).unwrap();
        for &h in &hashes {
            inserted.insert(h);
            builder.add(h);
        }
        assert_eq!(builder.len(), 5_000);
        assert_eq!(built, inserted);
        assert_eq!(built, builder.finish());
        assert!(
            hashes
                .iter()
                .all(|&h| built.may_contain(h) && built.may_contain_scalar(h))
        );
        assert_eq!(BlockedBloom::decode(&built.encode()).unwrap(), built);
    }

    #[test]
    fn statistics_of_an_empty_and_a_full_filter() {
        let mut f = BlockedBloom::with_capacity(100, 10.0).unwrap();
        assert_eq!(
            (f.fill_ratio(), f.estimated_fpr(), f.estimated_count()),
            (0.0, 0.0, Some(0.0))
        );
        f.blocks.iter_mut().for_each(|b| b.0 = [u64::MAX; 8]);
        assert_eq!((f.fill_ratio(), f.estimated_fpr()), (1.0, 1.0));
        assert_eq!(f.estimated_count(), Some(f64::INFINITY));
    }
}
