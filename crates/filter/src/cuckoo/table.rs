//! The cuckoo filter's table: buckets of [`SLOTS`] fingerprints of `f` bits,
//! bit-packed end to end in `u64` words (no padding between slots or
//! buckets), so the table takes `ceil(buckets · 4 · f / 64)` words.

use crate::codec::{Reader, Writer};
use crate::error::DecodeError;

/// Slots per bucket. Fan et al. (2014, §5.1) find `b = 4` the best space
/// per item for FPRs between about 0.00001 and 0.002, reaching 95% load.
pub(super) const SLOTS: usize = 4;

/// The value of an empty slot; fingerprints are never 0.
pub(super) const EMPTY: u32 = 0;

/// Buckets of bit-packed fingerprint slots. Slot `s` of bucket `i` holds
/// bits `[(4i + s)·f, (4i + s + 1)·f)`; bits past the last slot are zero.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Table {
    words: Vec<u64>,
    buckets: usize,
    bits: u32,
}

impl Table {
    /// An empty table, or `None` if it cannot be addressed or allocated.
    /// `bits` is at most 32 (checked by the caller).
    pub(super) fn new(buckets: usize, bits: u32) -> Option<Self> {
        let count = words_for(buckets, bits)?;
        // Fallible, so an absurd capacity is an error rather than an abort.
        let mut words = Vec::new();
        words.try_reserve_exact(count).ok()?;
        words.resize(count, 0);
        Some(Self {
            words,
            buckets,
            bits,
        })
    }

    pub(super) fn buckets(&self) -> usize {
        self.buckets
    }

    pub(super) fn slots(&self) -> usize {
        self.buckets * SLOTS
    }

    pub(super) fn bits(&self) -> u32 {
        self.bits
    }

    pub(super) fn size_bytes(&self) -> usize {
        self.words.len() * 8
    }

    /// The fingerprint in `slot` of `bucket` (< buckets), [`EMPTY`] if none.
    #[inline]
    #[expect(
        clippy::indexing_slicing,
        reason = "bucket < buckets and slot < SLOTS: the bits lie in the words"
    )]
    pub(super) fn get(&self, bucket: usize, slot: usize) -> u32 {
        let (word, shift) = self.position(bucket, slot);
        let mut v = self.words[word] >> shift;
        if shift + self.bits > 64 {
            v |= self.words[word + 1] << (64 - shift);
        }
        (v & self.mask()) as u32
    }

    /// Stores `fp` (or [`EMPTY`]) in `slot` of `bucket` (< buckets).
    #[inline]
    #[expect(
        clippy::indexing_slicing,
        reason = "bucket < buckets and slot < SLOTS: the bits lie in the words"
    )]
    pub(super) fn set(&mut self, bucket: usize, slot: usize, fp: u32) {
        let (word, shift) = self.position(bucket, slot);
        let (mask, fp) = (self.mask(), u64::from(fp) & self.mask());
        self.words[word] = (self.words[word] & !(mask << shift)) | (fp << shift);
        if shift + self.bits > 64 {
            let high = 64 - shift;
            self.words[word + 1] = (self.words[word + 1] & !(mask >> high)) | (fp >> high);
        }
    }

    /// A slot of `bucket` holding `fp`, if any.
    #[inline]
    pub(super) fn find(&self, bucket: usize, fp: u32) -> Option<usize> {
        (0..SLOTS).find(|&s| self.get(bucket, s) == fp)
    }

    /// Fingerprints stored (non-empty slots).
    pub(super) fn occupied(&self) -> usize {
        (0..self.buckets)
            .map(|b| (0..SLOTS).filter(|&s| self.get(b, s) != EMPTY).count())
            .sum()
    }

    /// Writes the words (the caller writes `bits` and `buckets`).
    pub(super) fn encode(&self, w: &mut Writer) {
        w.words(&self.words);
    }

    /// Reads the words of a table of `buckets` buckets of `bits`-bit slots
    /// (both already validated), rejecting set bits past the last slot.
    pub(super) fn decode(
        r: &mut Reader<'_>,
        buckets: usize,
        bits: u32,
    ) -> Result<Self, DecodeError> {
        let count = words_for(buckets, bits).ok_or(DecodeError::Invalid("table too large"))?;
        let words = r.words(count)?;
        let tail = (buckets * SLOTS * bits as usize) % 64;
        if tail != 0 && words.last().is_some_and(|w| w >> tail != 0) {
            return Err(DecodeError::Invalid("bits set past the last slot"));
        }
        Ok(Self {
            words,
            buckets,
            bits,
        })
    }

    #[inline]
    fn position(&self, bucket: usize, slot: usize) -> (usize, u32) {
        let bit = (bucket * SLOTS + slot) * self.bits as usize;
        (bit / 64, (bit % 64) as u32)
    }

    #[inline]
    fn mask(&self) -> u64 {
        (1 << self.bits) - 1
    }
}

/// Words for `buckets · SLOTS` slots of `bits` bits, if every bit position
/// fits in a `usize` and the allocation in `isize::MAX` bytes.
fn words_for(buckets: usize, bits: u32) -> Option<usize> {
    let total = buckets.checked_mul(SLOTS)?.checked_mul(bits as usize)?;
    Some(total.div_ceil(64)).filter(|&w| w <= isize::MAX as usize / 8)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_hold_their_values_across_word_boundaries() {
        for bits in [4, 7, 12, 13, 16, 31, 32] {
            let mut t = Table::new(9, bits).unwrap();
            let mask = (1u64 << bits) - 1;
            let value =
                |b: usize, s: usize| ((b * 7919 + s * 104_729 + 1) as u64 & mask).max(1) as u32;
            for b in 0..9 {
                for s in 0..SLOTS {
                    t.set(b, s, value(b, s));
                }
            }
            for b in 0..9 {
                for s in 0..SLOTS {
                    assert_eq!(t.get(b, s), value(b, s), "bits {bits} bucket {b} slot {s}");
                }
            }
            assert_eq!(t.occupied(), 36);
            // Clearing one slot leaves its neighbours alone.
            t.set(4, 2, EMPTY);
            assert_eq!(t.get(4, 1), value(4, 1));
            assert_eq!(t.get(4, 3), value(4, 3));
            assert_eq!(t.occupied(), 35);
            assert_eq!(t.find(4, value(4, 3)), Some(3));
            assert_eq!(t.size_bytes(), (36 * bits as usize).div_ceil(64) * 8);
        }
    }

    #[test]
    fn full_slots_do_not_touch_the_padding() {
        let mut t = Table::new(1, 12).unwrap(); // 48 of 64 bits used
        for s in 0..SLOTS {
            t.set(0, s, 0xfff);
        }
        assert_eq!(t.words, [0xffff_ffff_ffff]);
    }

    #[test]
    fn sizes_that_overflow_are_refused() {
        assert!(Table::new(usize::MAX / 2, 16).is_none());
        assert!(
            Table::new(1 << 56, 32).is_none(),
            "2^61 bytes cannot be allocated"
        );
        assert!(words_for(usize::MAX / 64, 32).is_none());
        assert_eq!(words_for(3, 16), Some(3));
    }
}
