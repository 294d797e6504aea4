//! Bit scanning over the words of a bit vector: the next set bit after a
//! position, and the position of the `k`-th clear bit through a table of
//! sampled positions. Bit `i` is bit `i % 64` of word `i / 64`, as in
//! every bit array of the crate.
#![deny(clippy::indexing_slicing)]

/// Clear bits between two samples. Finding the `k`-th clear bit starts at
/// the sample below it and scans up to `SAMPLE_EVERY - 1` clear bits
/// further: in an Elias–Fano high part, where about half the bits are
/// clear, at most about 8 words and 4 on average, for one `u64` of table
/// per 256 clear bits: a quarter of a bit per stored value when `u / m`
/// is a power of two, up to half a bit just below the next one.
pub(super) const SAMPLE_EVERY: u64 = 256;

/// Positions of the clear bits `0, 256, 512, ...` among the first `len`
/// bits of a bit vector; rebuilt from the words, never stored.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct ZeroSamples {
    positions: Vec<u64>,
}

impl ZeroSamples {
    /// Samples the clear bits among the first `len` bits of `words`, which
    /// must hold at least `len` bits.
    pub(super) fn new(words: &[u64], len: u64) -> Self {
        let mut positions = Vec::new();
        let (mut next, mut seen) = (0u64, 0u64);
        for (at, &word) in (0u64..).zip(words) {
            let base = at * 64;
            if base >= len {
                break;
            }
            let clear = !word & low_mask(len - base);
            let count = u64::from(clear.count_ones());
            while next < seen + count {
                let rank = (next - seen) as u32;
                positions.push(base + u64::from(select_in_word(clear, rank)));
                next += SAMPLE_EVERY;
            }
            seen += count;
        }
        Self { positions }
    }

    /// The position of clear bit `k` (from 0) of `words`, the vector these
    /// samples were taken from, or `None` if it has no such bit. Clear
    /// bits past the sampled length are counted too: callers ask only for
    /// bits below it.
    pub(super) fn select(&self, words: &[u64], k: u64) -> Option<u64> {
        let sample = *self.positions.get((k / SAMPLE_EVERY) as usize)?;
        let mut rest = (k % SAMPLE_EVERY) as u32;
        let mut at = sample / 64;
        let mut clear = !*words.get(at as usize)? & (u64::MAX << (sample % 64));
        loop {
            let count = clear.count_ones();
            if rest < count {
                return Some(at * 64 + u64::from(select_in_word(clear, rest)));
            }
            rest -= count;
            at += 1;
            clear = !*words.get(at as usize)?;
        }
    }

    /// Bytes of the table.
    pub(super) fn size_bytes(&self) -> usize {
        self.positions.len() * 8
    }
}

/// The position of the first set bit at or after `pos`, if any.
#[inline]
pub(super) fn next_one(words: &[u64], pos: u64) -> Option<u64> {
    let mut at = pos / 64;
    let mut word = *words.get(at as usize)? & (u64::MAX << (pos % 64));
    while word == 0 {
        at += 1;
        word = *words.get(at as usize)?;
    }
    Some(at * 64 + u64::from(word.trailing_zeros()))
}

/// The position of set bit `rank` (from 0) of `word`; 64 or more if it has
/// no such bit. Halves, quarters and eighths of the word are skipped by
/// their popcount, then at most 7 set bits are cleared.
#[inline]
pub(super) fn select_in_word(mut word: u64, mut rank: u32) -> u32 {
    let mut base = 0;
    for width in [32u32, 16, 8] {
        let low = word & ((1u64 << width) - 1);
        let ones = low.count_ones();
        if rank < ones {
            word = low;
        } else {
            rank -= ones;
            word >>= width;
            base += width;
        }
    }
    for _ in 0..rank {
        word &= word.wrapping_sub(1);
    }
    base + word.trailing_zeros()
}

/// The low `bits` bits set (all 64 for `bits ≥ 64`).
#[inline]
pub(super) fn low_mask(bits: u64) -> u64 {
    if bits >= 64 {
        u64::MAX
    } else {
        (1u64 << bits) - 1
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hash::mix64;

    /// Positions of the clear bits among the first `len` bits, by brute force.
    fn zeros(words: &[u64], len: u64) -> Vec<u64> {
        (0..len)
            .filter(|&i| words[(i / 64) as usize] >> (i % 64) & 1 == 0)
            .collect()
    }

    #[test]
    fn select_in_word_finds_every_set_bit() {
        for seed in 0..200u64 {
            let word = mix64(seed) & mix64(seed + 1_000);
            let ones: Vec<u32> = (0..64).filter(|&i| word >> i & 1 == 1).collect();
            for (rank, &pos) in ones.iter().enumerate() {
                assert_eq!(select_in_word(word, rank as u32), pos, "{word:#x} {rank}");
            }
            assert!(select_in_word(word, ones.len() as u32) >= 64);
        }
        assert_eq!(select_in_word(u64::MAX, 63), 63);
        assert_eq!(select_in_word(1 << 63, 0), 63);
        assert!(select_in_word(0, 0) >= 64);
    }

    #[test]
    fn samples_select_every_clear_bit() {
        // Sparse, dense and balanced vectors, lengths not a multiple of 64.
        for (seed, len) in [(1u64, 70_001u64), (2, 6_400), (3, 63), (4, 1)] {
            let words: Vec<u64> = (0..len.div_ceil(64))
                .map(|i| match seed {
                    1 => mix64(i) & mix64(i ^ 77),
                    2 => mix64(i) | mix64(i ^ 77) | mix64(i ^ 78),
                    _ => mix64(i),
                })
                .collect();
            let mut words = words;
            if len % 64 != 0 {
                *words.last_mut().unwrap() &= low_mask(len % 64);
            }
            let samples = ZeroSamples::new(&words, len);
            let truth = zeros(&words, len);
            assert_eq!(
                samples.positions.len() as u64,
                (truth.len() as u64).div_ceil(SAMPLE_EVERY)
            );
            for (k, &pos) in truth.iter().enumerate() {
                assert_eq!(samples.select(&words, k as u64), Some(pos), "{seed} {k}");
            }
        }
    }

    #[test]
    fn next_one_scans_across_words() {
        let words = [0u64, 0, 1 << 5, 0, 1 << 63];
        assert_eq!(next_one(&words, 0), Some(133));
        assert_eq!(next_one(&words, 133), Some(133));
        assert_eq!(next_one(&words, 134), Some(319));
        assert_eq!(next_one(&words, 320), None);
        assert_eq!(next_one(&[], 0), None);
        assert_eq!(low_mask(0), 0);
        assert_eq!(low_mask(3), 7);
        assert_eq!(low_mask(64), u64::MAX);
    }
}
