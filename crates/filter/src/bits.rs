//! A fixed-size bit array over `u64` words, shared by the Bloom kinds.

use crate::codec::{Reader, Writer};
use crate::error::DecodeError;

/// `len` bits stored in `ceil(len / 64)` words; bits past `len` stay zero.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct BitArray {
    words: Vec<u64>,
    len: u64,
}

impl BitArray {
    /// `len` zero bits.
    pub(crate) fn new(len: u64) -> Self {
        Self {
            words: vec![0; len.div_ceil(64) as usize],
            len,
        }
    }

    /// Wraps words read from elsewhere (a concurrent filter's snapshot).
    /// `words` must hold `ceil(len / 64)` words with no bit set past `len`.
    pub(crate) fn from_words(words: Vec<u64>, len: u64) -> Self {
        debug_assert_eq!(words.len() as u64, len.div_ceil(64));
        Self { words, len }
    }

    pub(crate) fn len(&self) -> u64 {
        self.len
    }

    /// The backing words; bit `i` is bit `i % 64` of word `i / 64`.
    pub(crate) fn words(&self) -> &[u64] {
        &self.words
    }

    /// Sets bit `i` (< len).
    #[inline]
    #[expect(
        clippy::indexing_slicing,
        reason = "callers map probes into [0, len) by fastrange"
    )]
    pub(crate) fn set(&mut self, i: u64) {
        self.words[(i >> 6) as usize] |= 1 << (i & 63);
    }

    /// Reads bit `i` (< len).
    #[inline]
    #[expect(
        clippy::indexing_slicing,
        reason = "callers map probes into [0, len) by fastrange"
    )]
    pub(crate) fn get(&self, i: u64) -> bool {
        self.words[(i >> 6) as usize] & (1 << (i & 63)) != 0
    }

    pub(crate) fn count_ones(&self) -> u64 {
        self.words.iter().map(|w| u64::from(w.count_ones())).sum()
    }

    /// Set bits among positions `[start, end)`, for filters that split the
    /// array into regions (partitioned Bloom). `end` is clamped to `len`.
    pub(crate) fn count_ones_in(&self, start: u64, end: u64) -> u64 {
        let end = end.min(self.len);
        if start >= end {
            return 0;
        }
        let (first, last) = (start >> 6, (end - 1) >> 6);
        let words = self
            .words
            .iter()
            .skip(first as usize)
            .take((last - first + 1) as usize);
        (first..=last)
            .zip(words)
            .map(|(at, &word)| {
                let low = if at == first { start & 63 } else { 0 };
                let high = if at == last { ((end - 1) & 63) + 1 } else { 64 };
                let below_high = if high == 64 {
                    u64::MAX
                } else {
                    (1 << high) - 1
                };
                u64::from((word & below_high & (u64::MAX << low)).count_ones())
            })
            .sum()
    }

    /// Fraction of bits set.
    pub(crate) fn fill_ratio(&self) -> f64 {
        if self.len == 0 {
            return 0.0;
        }
        self.count_ones() as f64 / self.len as f64
    }

    pub(crate) fn size_bytes(&self) -> usize {
        self.words.len() * 8
    }

    /// ORs `other` (same length) into `self`.
    pub(crate) fn or_assign(&mut self, other: &Self) {
        debug_assert_eq!(self.len, other.len);
        for (a, b) in self.words.iter_mut().zip(&other.words) {
            *a |= b;
        }
    }

    /// Writes the length then the words.
    pub(crate) fn encode(&self, w: &mut Writer) {
        w.u64(self.len).words(&self.words);
    }

    /// Reads what [`encode`](Self::encode) wrote; rejects set bits past `len`.
    pub(crate) fn decode(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        let len = r.u64()?;
        let count = usize::try_from(len.div_ceil(64))
            .map_err(|_| DecodeError::Invalid("bit count too large"))?;
        let words = r.words(count)?;
        let tail = len % 64;
        if tail != 0 && words.last().is_some_and(|w| w >> tail != 0) {
            return Err(DecodeError::Invalid(
                "bits set past the end of the bit array",
            ));
        }
        Ok(Self { words, len })
    }
}
