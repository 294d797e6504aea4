//! One 512-bit block and the bits a key probes inside it.
//!
//! A key's in-block probes depend only on a 32-bit seed taken from
//! `hash.hi()`, never on the block it landed in (chosen from `hash.lo()`).
//! Probe `j` (from 0) is bit `(seed · C^(j+1)) >> 23` of the block: the top
//! 9 bits of a wrapping 32-bit product, 9 bits addressing 512. An odd `C`
//! makes `x ↦ x·C` a permutation of `u32`, so each probe on its own is
//! uniform; powers of the golden-ratio constant keep successive probes
//! apart (the idea behind RocksDB's FastLocalBloom). Because probe `j` is
//! the seed times a fixed constant, every path multiplies the seed by the
//! precomputed powers in [`PROBE_POWERS`]: the products are independent, so
//! the scalar loops are not a chain of dependent multiplies, and a SIMD
//! query computes 8 of them in one instruction (see `avx2.rs`).
#![deny(clippy::indexing_slicing)]

use super::probes::MAX_PROBES;
use crate::hash::KeyHash;

/// Bits per block: one 64-byte cache line, so a query reads one line.
pub(super) const BLOCK_BITS: u32 = 512;
/// Bytes per block, in memory and in the encoding.
pub(super) const BLOCK_BYTES: usize = 64;
/// `u64` words per block.
const BLOCK_WORDS: usize = 8;

/// The probe multiplier: `2^32 / φ` rounded to an odd number (Knuth's
/// multiplicative-hashing constant). Odd, so multiplying by it permutes `u32`.
pub(super) const PROBE_MULTIPLIER: u32 = 0x9e37_79b9;

/// `C^1, C^2, ..., C^MAX_PROBES`: probe `j` (from 0) is located by the
/// product `seed · PROBE_POWERS[j]`.
pub(super) const PROBE_POWERS: [u32; MAX_PROBES as usize] = probe_powers();

/// `C^(j+1)` for every probe `j`.
#[expect(clippy::indexing_slicing, reason = "j < N; evaluated at compile time")]
const fn probe_powers<const N: usize>() -> [u32; N] {
    let mut out = [0; N];
    let mut power = PROBE_MULTIPLIER;
    let mut j = 0;
    while j < N {
        out[j] = power;
        power = power.wrapping_mul(PROBE_MULTIPLIER);
        j += 1;
    }
    out
}

/// Keeps the top `log2(BLOCK_BITS) = 9` bits of a 32-bit product.
pub(super) const POSITION_SHIFT: u32 = 32 - BLOCK_BITS.trailing_zeros();

/// The seed of a key's in-block probes: the low half of `hash.hi()`. The
/// block index reads `hash.lo()`, so the two choices are independent.
#[inline]
pub(super) const fn probe_seed(hash: KeyHash) -> u32 {
    hash.hi() as u32
}

/// 512 bits, aligned to a cache line. Bit `b` is bit `b % 64` of word
/// `b / 64`; on a little-endian machine that is bit `b % 32` of the block's
/// `u32` lane `b / 32`, which the SIMD query relies on.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[repr(C, align(64))]
pub(super) struct Block(pub(super) [u64; BLOCK_WORDS]);

impl Block {
    /// Reads 64 little-endian bytes (8 words).
    pub(super) fn from_le_bytes(bytes: &[u8]) -> Self {
        let mut block = Self::default();
        for (word, chunk) in block.0.iter_mut().zip(bytes.chunks_exact(8)) {
            let mut le = [0; 8];
            le.copy_from_slice(chunk);
            *word = u64::from_le_bytes(le);
        }
        block
    }

    /// Set bits in the block.
    pub(super) fn count_ones(&self) -> u32 {
        self.0.iter().map(|w| w.count_ones()).sum()
    }

    /// Sets the `probes` bits of `seed`.
    #[inline]
    #[expect(
        clippy::indexing_slicing,
        reason = "locate returns a word index below 8"
    )]
    pub(super) fn insert(&mut self, seed: u32, probes: u32) {
        for &power in PROBE_POWERS.iter().take(probes as usize) {
            let (word, mask) = locate(seed.wrapping_mul(power));
            self.0[word] |= mask;
        }
    }

    /// Whether all `probes` bits of `seed` are set. The portable query
    /// path. Every probe is tested, without a branch on the bits read: an
    /// early exit at the first clear bit mispredicts on about half of the
    /// missing keys, and each misprediction discards the loads of the
    /// queries issued behind it, which costs more than the few L1 reads it
    /// saves (the line is loaded either way).
    #[inline]
    #[expect(
        clippy::indexing_slicing,
        reason = "locate returns a word index below 8"
    )]
    pub(super) fn contains(&self, seed: u32, probes: u32) -> bool {
        PROBE_POWERS
            .iter()
            .take(probes as usize)
            .fold(true, |all, &power| {
                let (word, mask) = locate(seed.wrapping_mul(power));
                all & (self.0[word] & mask != 0)
            })
    }
}

/// The word and bit mask of the probe whose product is `product`. The
/// word index is the top 3 bits of `product`, so it is below 8 and the
/// compiler drops the bounds checks of the callers.
#[inline]
const fn locate(product: u32) -> (usize, u64) {
    let bit = product >> POSITION_SHIFT;
    ((bit >> 6) as usize, 1 << (bit & 63))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `C^1, C^2, ...`: the multipliers of probes 0, 1, ..., computed
    /// afresh so that the table is checked against them.
    fn powers(n: usize) -> Vec<u32> {
        std::iter::successors(Some(PROBE_MULTIPLIER), |p| {
            Some(p.wrapping_mul(PROBE_MULTIPLIER))
        })
        .take(n)
        .collect()
    }

    #[test]
    fn power_table_holds_successive_powers() {
        assert_eq!(PROBE_POWERS.to_vec(), powers(MAX_PROBES as usize));
        assert_eq!(
            PROBE_POWERS[1],
            PROBE_MULTIPLIER.wrapping_mul(PROBE_MULTIPLIER)
        );
    }

    fn bits_of(block: &Block) -> Vec<u32> {
        (0..BLOCK_BITS)
            .filter(|&b| block.0[(b / 64) as usize] >> (b % 64) & 1 == 1)
            .collect()
    }

    #[test]
    fn probes_are_top_bits_of_seed_times_powers() {
        let seed = 0x0123_4567;
        let powers = powers(5);
        let mut block = Block::default();
        block.insert(seed, 5);
        let mut expected: Vec<u32> = powers.iter().map(|&p| seed.wrapping_mul(p) >> 23).collect();
        expected.sort_unstable();
        expected.dedup();
        assert_eq!(bits_of(&block), expected);
        assert!(block.contains(seed, 5));
        assert!(block.contains(seed, 3), "a prefix of the probes is set too");
    }

    #[test]
    fn contains_needs_every_probe() {
        let seed = 0xdead_beef;
        let mut block = Block::default();
        block.insert(seed, 4);
        // Clearing the bit of the last probe breaks membership at k = 4 only.
        let last = seed.wrapping_mul(powers(4)[3]);
        let (word, mask) = locate(last);
        let earlier: Vec<(usize, u64)> = powers(3)
            .iter()
            .map(|&p| locate(seed.wrapping_mul(p)))
            .collect();
        assert!(
            !earlier.contains(&(word, mask)),
            "this seed's 4 probes are distinct"
        );
        block.0[word] &= !mask;
        assert!(!block.contains(seed, 4));
        assert!(block.contains(seed, 3));
        assert!(!Block::default().contains(seed, 1));
        assert!(
            Block::default().contains(seed, 0),
            "no probes: vacuously present"
        );
    }

    #[test]
    fn le_bytes_and_alignment() {
        let bytes: Vec<u8> = (0..64).collect();
        let block = Block::from_le_bytes(&bytes);
        assert_eq!(block.0[0], 0x0706_0504_0302_0100);
        assert_eq!(block.0[7], 0x3f3e_3d3c_3b3a_3938);
        assert_eq!(
            block.count_ones(),
            bytes.iter().map(|b| b.count_ones()).sum()
        );
        assert_eq!(std::mem::align_of::<Block>(), BLOCK_BYTES);
        assert_eq!(std::mem::size_of::<Block>(), BLOCK_BYTES);
    }

    #[test]
    fn seed_reads_low_half_of_hi() {
        assert_eq!(
            probe_seed(KeyHash::from_parts(u64::MAX, 0xaaaa_bbbb_cccc_dddd)),
            0xcccc_dddd
        );
        assert_eq!(POSITION_SHIFT, 23);
    }
}
