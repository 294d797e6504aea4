//! Block value filters: inside one table, one small standard Bloom filter
//! per data block over the values of that block's entries, so a search
//! reads only the blocks of a positive table that may hold the value.
//!
//! All filters of a table share one probe count `k` and one bit array;
//! filter `i` owns bits `[start_i, start_i + m_i)`, with `m_i` sized for
//! the distinct values of block `i` (`sizing.rs`), zero for a block
//! without values (such a filter answers "no"). A value with hash `h`
//! probes, in filter `i`, bits `start_i + fastrange(mix64(g_j), m_i)` for
//! `j < k`, where `g_j` is the enhanced double-hashing sequence of `h`.
//! `mix64` decorrelates the probes of one value, which `fastrange` would
//! otherwise take from the top bits of an arithmetic progression: that
//! raises the rate of filters of a few dozen bits (measured for the
//! partitioned Bloom filter of `sift-filter`, which mixes for the same
//! reason).
//!
//! Encoding (one table block, whose trailer carries the checksum):
//!
//! ```text
//! varint k                     probes per value, 1..=64
//! varint B                     filters: one per data block, in block order
//! B x varint m_i               bits of filter i
//! ceil(sum m_i / 64) x u64     the bits, little-endian words; bit b is bit
//!                              b % 64 of word b / 64; bits past the sum are 0
//! ```

#![deny(clippy::indexing_slicing)]

use sift_filter::{DoubleHashing, KeyHash, fastrange64, mix64};

use crate::encoding::{Decoder, put_varint};
use crate::error::Corrupt;

/// Most probes a filter may use (as for a standard Bloom filter).
const MAX_PROBES: u64 = 64;

/// The block filters of one table and index.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct BlockFilters {
    probes: u32,
    /// `B + 1` bit offsets: filter `i` is `[starts[i], starts[i + 1])`.
    starts: Vec<u64>,
    words: Vec<u64>,
}

impl BlockFilters {
    /// Filters over `blocks`: for each data block in order, the distinct
    /// hashes of its values and the bits its filter gets.
    pub(crate) fn build<'a>(
        probes: u32,
        blocks: impl ExactSizeIterator<Item = (&'a [KeyHash], u64)>,
    ) -> Self {
        let mut starts = Vec::with_capacity(blocks.len() + 1);
        starts.push(0);
        let mut members = Vec::with_capacity(blocks.len());
        for (hashes, bits) in blocks {
            let end = starts.last().copied().unwrap_or(0) + bits;
            starts.push(end);
            members.push(hashes);
        }
        let total = starts.last().copied().unwrap_or(0);
        let mut filters = Self {
            probes: probes.clamp(1, MAX_PROBES as u32),
            starts,
            words: vec![0; total.div_ceil(64) as usize],
        };
        for (i, hashes) in members.into_iter().enumerate() {
            for &hash in hashes {
                filters.insert(i, hash);
            }
        }
        filters
    }

    /// Filter `i`'s bits: `(start, len)`, or `None` past the last filter.
    fn span(&self, i: usize) -> Option<(u64, u64)> {
        let start = *self.starts.get(i)?;
        let end = *self.starts.get(i + 1)?;
        Some((start, end - start))
    }

    fn insert(&mut self, i: usize, hash: KeyHash) {
        let Some((start, bits)) = self.span(i).filter(|&(_, bits)| bits > 0) else {
            return;
        };
        let probes = Probes::of(hash, self.probes);
        for at in probes.positions(start, bits) {
            if let Some(word) = self.words.get_mut((at / 64) as usize) {
                *word |= 1 << (at % 64);
            }
        }
    }

    /// `false` only if data block `i` holds no entry with a value hashing
    /// to `hash`. A block past the last filter answers "maybe".
    pub(crate) fn may_contain(&self, i: usize, hash: KeyHash) -> bool {
        self.may_contain_probes(i, &Probes::of(hash, self.probes))
    }

    /// The data blocks that may hold an entry with a value hashing to
    /// `hash`, ascending: [`may_contain`](Self::may_contain) of every
    /// block, with the value's probes mixed once for all of them.
    pub(crate) fn positive_blocks(&self, hash: KeyHash) -> Vec<usize> {
        let probes = Probes::of(hash, self.probes);
        (0..self.len())
            .filter(|&i| self.may_contain_probes(i, &probes))
            .collect()
    }

    fn may_contain_probes(&self, i: usize, probes: &Probes) -> bool {
        let Some((start, bits)) = self.span(i) else {
            return true;
        };
        bits > 0
            && probes.positions(start, bits).all(|at| {
                self.words
                    .get((at / 64) as usize)
                    .is_some_and(|w| w >> (at % 64) & 1 == 1)
            })
    }

    /// Number of filters (data blocks covered).
    pub(crate) fn len(&self) -> usize {
        self.starts.len().saturating_sub(1)
    }

    /// Bytes of filter bits held in memory.
    pub(crate) fn size_bytes(&self) -> u64 {
        self.words.len() as u64 * 8
    }

    /// Appends the encoding (module docs).
    pub(crate) fn encode(&self, out: &mut Vec<u8>) {
        put_varint(out, u64::from(self.probes));
        put_varint(out, self.len() as u64);
        for pair in self.starts.windows(2) {
            if let [start, end] = pair {
                put_varint(out, end - start);
            }
        }
        for word in &self.words {
            out.extend_from_slice(&word.to_le_bytes());
        }
    }

    /// Reads what [`encode`](Self::encode) wrote, and nothing more.
    pub(crate) fn decode(bytes: &[u8]) -> Result<Self, Corrupt> {
        let mut d = Decoder::new(bytes);
        let at = d.position() as u64;
        let probes = d.varint("block filter probes")?;
        if !(1..=MAX_PROBES).contains(&probes) {
            return Err(Corrupt::new(at, format!("{probes} probes per value")));
        }
        // Each filter's size takes at least one byte.
        let count = d.varint_len(d.remaining(), "block filter count")?;
        let mut starts = Vec::with_capacity(count + 1);
        starts.push(0u64);
        let mut total = 0u64;
        for _ in 0..count {
            let at = d.position() as u64;
            let bits = d.varint("block filter bits")?;
            total = total
                .checked_add(bits)
                .filter(|&t| t.div_ceil(8) <= bytes.len() as u64)
                .ok_or_else(|| Corrupt::new(at, "block filters larger than their block"))?;
            starts.push(total);
        }
        let words_at = d.position() as u64;
        let words = total.div_ceil(64) as usize;
        if d.remaining() != words * 8 {
            return Err(Corrupt::new(
                words_at,
                format!(
                    "{} bytes of block filter bits, {total} bits need {}",
                    d.remaining(),
                    words * 8
                ),
            ));
        }
        let mut out = Vec::with_capacity(words);
        for _ in 0..words {
            out.push(d.u64("block filter word")?);
        }
        if !total.is_multiple_of(64) && out.last().is_some_and(|&w| w >> (total % 64) != 0) {
            return Err(Corrupt::new(words_at, "bits set past the last filter"));
        }
        Ok(Self {
            probes: probes as u32,
            starts,
            words: out,
        })
    }
}

/// A value's probes, `mix64(g_j)` for `j < k`: the same in every block's
/// filter, which only scales them to its own bits.
struct Probes {
    mixed: [u64; MAX_PROBES as usize],
    k: usize,
}

impl Probes {
    fn of(hash: KeyHash, k: u32) -> Self {
        let mut mixed = [0; MAX_PROBES as usize];
        let k = (k as usize).min(mixed.len());
        for (slot, g) in mixed.iter_mut().zip(DoubleHashing::new(hash)).take(k) {
            *slot = mix64(g);
        }
        Self { mixed, k }
    }

    /// The bit positions in a filter of `bits` bits starting at `start`
    /// (`bits > 0`).
    fn positions(&self, start: u64, bits: u64) -> impl Iterator<Item = u64> + '_ {
        self.mixed
            .iter()
            .take(self.k)
            .map(move |&m| start + fastrange64(m, bits))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hashes(range: std::ops::Range<u64>) -> Vec<KeyHash> {
        range.map(|i| KeyHash::of(&i.to_le_bytes())).collect()
    }

    fn sample() -> (BlockFilters, Vec<Vec<KeyHash>>) {
        let blocks = vec![hashes(0..10), Vec::new(), hashes(10..13), hashes(13..200)];
        let sized: Vec<(&[KeyHash], u64)> = blocks
            .iter()
            .map(|b| {
                (
                    b.as_slice(),
                    crate::value_def::sizing::filter_bits(b.len() as u64, 7, 0.01),
                )
            })
            .collect();
        (BlockFilters::build(7, sized.into_iter()), blocks)
    }

    #[test]
    fn no_false_negatives_and_empty_blocks_say_no() {
        let (filters, blocks) = sample();
        assert_eq!(filters.len(), 4);
        for (i, block) in blocks.iter().enumerate() {
            for &h in block {
                assert!(filters.may_contain(i, h), "block {i}");
            }
        }
        assert!(hashes(0..500).iter().all(|&h| !filters.may_contain(1, h)));
        assert!(filters.may_contain(4, KeyHash::of(b"past the end")));
    }

    #[test]
    fn positive_blocks_are_the_blocks_that_may_contain() {
        let (filters, blocks) = sample();
        for h in blocks.iter().flatten().copied().chain(hashes(1_000..1_500)) {
            let each: Vec<usize> = (0..filters.len())
                .filter(|&i| filters.may_contain(i, h))
                .collect();
            assert_eq!(filters.positive_blocks(h), each);
        }
    }

    #[test]
    fn round_trips_and_golden_bytes() {
        let (filters, _) = sample();
        let mut bytes = Vec::new();
        filters.encode(&mut bytes);
        assert_eq!(BlockFilters::decode(&bytes).unwrap(), filters);
        let one = BlockFilters::build(2, [(&[KeyHash::from_parts(0, 0)][..], 8)].into_iter());
        let mut bytes = Vec::new();
        one.encode(&mut bytes);
        // k = 2, one filter of 8 bits; g_0 = 0 and g_1 = 0 mix to 0:
        // fastrange(0, 8) = 0, so bit 0 only.
        assert_eq!(bytes, [2, 1, 8, 1, 0, 0, 0, 0, 0, 0, 0]);
    }

    #[test]
    fn damage_is_refused_never_panics() {
        let (filters, _) = sample();
        let mut bytes = Vec::new();
        filters.encode(&mut bytes);
        for cut in 0..bytes.len() {
            assert!(BlockFilters::decode(&bytes[..cut]).is_err(), "cut at {cut}");
        }
        for i in 0..bytes.len().min(64) {
            let mut bad = bytes.clone();
            bad[i] ^= 0x41;
            let _ = BlockFilters::decode(&bad);
        }
        assert!(BlockFilters::decode(&[0, 0]).is_err(), "zero probes");
        assert!(BlockFilters::decode(&[65, 0]).is_err(), "65 probes");
        assert!(BlockFilters::decode(&[1, 0xff, 0xff, 0xff, 0x0f]).is_err());
        // A bit past the last filter's end.
        assert!(BlockFilters::decode(&[1, 1, 3, 0x08, 0, 0, 0, 0, 0, 0, 0]).is_err());
        assert!(BlockFilters::decode(&[1, 1, 3, 0x04, 0, 0, 0, 0, 0, 0, 0]).is_ok());
    }

    #[test]
    fn measured_rate_stays_near_the_target_for_tiny_and_large_blocks() {
        // 400 filters each of n values at 1%: the measured rate over
        // 400 x 2,000 absent probes has a binomial standard deviation of
        // sqrt(0.01 * 0.99 / 800,000) = 0.011 points (the filters' own
        // spread adds a little: 400 filters, not one); 1.05% is 4.5 of them.
        for n in [1u64, 3, 30, 300] {
            let blocks: Vec<Vec<KeyHash>> =
                (0..400).map(|b| hashes(b * 1_000..b * 1_000 + n)).collect();
            let sized: Vec<(&[KeyHash], u64)> = blocks
                .iter()
                .map(|b| {
                    (
                        b.as_slice(),
                        crate::value_def::sizing::filter_bits(n, 7, 0.01),
                    )
                })
                .collect();
            let filters = BlockFilters::build(7, sized.into_iter());
            let absent = hashes(10_000_000..10_002_000);
            let positives: usize = (0..400)
                .map(|i| {
                    absent
                        .iter()
                        .filter(|&&h| filters.may_contain(i, h))
                        .count()
                })
                .sum();
            let rate = positives as f64 / (400.0 * 2_000.0);
            assert!(rate <= 0.0105, "{n} values per block: {rate}");
        }
    }
}
