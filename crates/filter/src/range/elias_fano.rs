//! An Elias–Fano sequence (Elias 1974; Fano 1971): `m` strictly increasing
//! values below `u` in `m · (l + 2)` bits or so, with a successor search.
//!
//! - `l = floor(log2(u / m))` low bits per value (0 if `u < 2m`), packed
//!   one value after the other into words: value `i`'s are bits
//!   `[i·l, (i+1)·l)` of the stream;
//! - the high parts `v >> l`, in unary, in a bit vector of `m + buckets`
//!   bits, `buckets = ((u - 1) >> l) + 1`: value `i` sets bit
//!   `(v_i >> l) + i`. Bucket `b`, the values whose high part is `b`, is
//!   the run of set bits ended by clear bit `b`.
//!
//! Since `buckets ≤ u / 2^l + 1 ≤ 2m + 1`, the high part takes at most
//! about `3m` bits, and `2m` when `u / m` is a power of two.
//!
//! The successor of `y` starts at bucket `y >> l`: just past clear bit
//! `(y >> l) - 1`, found through [`ZeroSamples`]; the values there are
//! read in order until one is at least `y`.
#![deny(clippy::indexing_slicing)]

use super::select::{ZeroSamples, low_mask, next_one};
use crate::codec::{Reader, Writer};
use crate::error::DecodeError;

/// Strictly increasing values below a bound, `universe`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct EliasFano {
    len: u64,
    universe: u64,
    low_bits: u32,
    low: Vec<u64>,
    high: Vec<u64>,
    zeros: ZeroSamples,
}

impl EliasFano {
    /// The sequence of `values`, which must be strictly increasing and
    /// below `universe` (`≥ 1`).
    pub(super) fn new(values: &[u64], universe: u64) -> Self {
        debug_assert!(values.windows(2).all(|w| w.first() < w.get(1)));
        debug_assert!(values.last().is_none_or(|&v| v < universe));
        let len = values.len() as u64;
        let low_bits = low_bits_for(len, universe);
        let high_len = len + buckets(universe, low_bits);
        let mut low = vec![0; (len * u64::from(low_bits)).div_ceil(64) as usize];
        let mut high = vec![0; high_len.div_ceil(64) as usize];
        for (i, &v) in (0u64..).zip(values) {
            set_bit(&mut high, (v >> low_bits) + i);
            write_bits(&mut low, i * u64::from(low_bits), low_bits, v);
        }
        Self::from_parts(len, universe, low_bits, low, high)
    }

    fn from_parts(len: u64, universe: u64, low_bits: u32, low: Vec<u64>, high: Vec<u64>) -> Self {
        let zeros = ZeroSamples::new(&high, len + buckets(universe, low_bits));
        Self {
            len,
            universe,
            low_bits,
            low,
            high,
            zeros,
        }
    }

    /// Number of values.
    pub(super) fn len(&self) -> u64 {
        self.len
    }

    /// Low bits per value, `l`.
    #[cfg(test)]
    pub(super) fn low_bits(&self) -> u32 {
        self.low_bits
    }

    /// Whether some value lies in `[a, b]`.
    #[inline]
    pub(super) fn any_in(&self, a: u64, b: u64) -> bool {
        self.successor(a).is_some_and(|v| v <= b)
    }

    /// The smallest value `≥ y`, if any.
    pub(super) fn successor(&self, y: u64) -> Option<u64> {
        if y >= self.universe {
            return None;
        }
        let bucket = y >> self.low_bits;
        let start = match bucket {
            0 => 0,
            b => self.zeros.select(&self.high, b - 1)? + 1,
        };
        // Set bits before `start`: all but the `bucket` clear ones.
        let mut index = start.checked_sub(bucket)?;
        let mut pos = start;
        while index < self.len {
            let one = next_one(&self.high, pos)?;
            // `index` set bits precede set bit `index`: the rest are clear.
            let value = (one.checked_sub(index)? << self.low_bits) | self.low(index);
            if value >= y {
                return Some(value);
            }
            index += 1;
            pos = one + 1;
        }
        None
    }

    /// The values in order (for validation and tests).
    pub(super) fn iter(&self) -> impl Iterator<Item = u64> + '_ {
        let mut pos = 0;
        (0..self.len).map_while(move |index| {
            let one = next_one(&self.high, pos)?;
            pos = one + 1;
            Some(((one - index) << self.low_bits) | self.low(index))
        })
    }

    /// Words of the two bit streams, as encoded.
    pub(super) fn stream_words(&self) -> usize {
        self.low.len() + self.high.len()
    }

    /// Bytes held: both bit streams and the select samples.
    pub(super) fn size_bytes(&self) -> usize {
        (self.low.len() + self.high.len()) * 8 + self.zeros.size_bytes()
    }

    /// The low bits of value `index`.
    #[inline]
    fn low(&self, index: u64) -> u64 {
        let l = u64::from(self.low_bits);
        if l == 0 {
            return 0;
        }
        let bit = index * l;
        let (at, shift) = ((bit / 64) as usize, bit % 64);
        let word = |i: usize| self.low.get(i).copied().unwrap_or(0);
        let mut value = word(at) >> shift;
        if shift + l > 64 {
            value |= word(at + 1) << (64 - shift);
        }
        value & low_mask(l)
    }

    /// Writes `l` (u8), `m` (u64), the low words, then the high words.
    /// The universe is the caller's to store.
    pub(super) fn encode(&self, w: &mut Writer) {
        w.u8(self.low_bits as u8)
            .u64(self.len)
            .words(&self.low)
            .words(&self.high);
    }

    /// Reads what [`encode`](Self::encode) wrote, for a `universe` in
    /// `1..=2^62` the caller has checked. Rejects a low-bit count other
    /// than the one `m` and `universe` give, word counts the payload does
    /// not hold, bits set past either stream, a high part whose set bits
    /// are not `m`, and values that do not increase or reach the universe:
    /// what is accepted is exactly what `new` builds from its values.
    pub(super) fn decode(r: &mut Reader<'_>, universe: u64) -> Result<Self, DecodeError> {
        let low_bits = u32::from(r.u8()?);
        let len = r.u64()?;
        if len > universe {
            return Err(DecodeError::Invalid("more values than the universe holds"));
        }
        if low_bits != low_bits_for(len, universe) {
            return Err(DecodeError::Invalid("low bit count disagrees with n and r"));
        }
        // len · l ≤ len · 2^l ≤ universe ≤ 2^62: no overflow below.
        let low_len = len * u64::from(low_bits);
        let low = read_stream(r, low_len)?;
        let high_len = len + buckets(universe, low_bits);
        let high = read_stream(r, high_len)?;
        let ones: u64 = high.iter().map(|w| u64::from(w.count_ones())).sum();
        if ones != len {
            return Err(DecodeError::Invalid(
                "high bits disagree with the value count",
            ));
        }
        let seq = Self::from_parts(len, universe, low_bits, low, high);
        let mut previous = None;
        for v in seq.iter() {
            if previous.is_some_and(|p| p >= v) {
                return Err(DecodeError::Invalid("values do not increase"));
            }
            previous = Some(v);
        }
        if previous.is_some_and(|last| last >= universe) {
            return Err(DecodeError::Invalid("value outside the hash space"));
        }
        Ok(seq)
    }
}

/// `l = floor(log2(u / m))`, 0 for no values or `u < 2m`. As `2^l` is a
/// whole number, the floor of `u / m` gives the same `l`.
pub(super) fn low_bits_for(len: u64, universe: u64) -> u32 {
    match universe.checked_div(len) {
        Some(ratio) if ratio > 0 => ratio.ilog2(),
        _ => 0,
    }
}

/// High parts in use: `((u - 1) >> l) + 1`, each ended by a clear bit.
fn buckets(universe: u64, low_bits: u32) -> u64 {
    (universe.saturating_sub(1) >> low_bits) + 1
}

/// Reads a stream of `bits` bits in `ceil(bits / 64)` words, none set past
/// `bits`. `Reader::words` checks the count against the input before it
/// allocates.
fn read_stream(r: &mut Reader<'_>, bits: u64) -> Result<Vec<u64>, DecodeError> {
    let count = usize::try_from(bits.div_ceil(64))
        .map_err(|_| DecodeError::Invalid("bit stream too long"))?;
    let words = r.words(count)?;
    let tail = bits % 64;
    if tail != 0 && words.last().is_some_and(|&w| w >> tail != 0) {
        return Err(DecodeError::Invalid(
            "bits set past the end of a bit stream",
        ));
    }
    Ok(words)
}

#[expect(
    clippy::indexing_slicing,
    reason = "the builder sized `words` to hold every position it sets"
)]
fn set_bit(words: &mut [u64], pos: u64) {
    words[(pos / 64) as usize] |= 1 << (pos % 64);
}

/// Writes the low `bits` bits of `value` at bit `at` of `words`.
#[expect(
    clippy::indexing_slicing,
    reason = "the builder sized `words` to hold `m · l` bits"
)]
fn write_bits(words: &mut [u64], at: u64, bits: u32, value: u64) {
    if bits == 0 {
        return;
    }
    let value = value & low_mask(u64::from(bits));
    let (i, shift) = ((at / 64) as usize, at % 64);
    words[i] |= value << shift;
    if shift + u64::from(bits) > 64 {
        words[i + 1] |= value >> (64 - shift);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hash::{fastrange64, mix64};

    fn sorted_values(count: u64, universe: u64, seed: u64) -> Vec<u64> {
        let mut v: Vec<u64> = (0..count)
            .map(|i| fastrange64(mix64(i ^ seed.rotate_left(32)), universe))
            .collect();
        v.sort_unstable();
        v.dedup();
        v
    }

    #[test]
    fn successor_matches_a_binary_search() {
        for (count, universe) in [
            (1_000u64, 1u64 << 20),
            (500, 700),
            (3_000, 3_000),
            (64, 1 << 62),
        ] {
            let values = sorted_values(count, universe, universe);
            let seq = EliasFano::new(&values, universe);
            assert_eq!(seq.iter().collect::<Vec<_>>(), values);
            let mut probes: Vec<u64> = values
                .iter()
                .flat_map(|&v| [v.saturating_sub(1), v, v + 1])
                .collect();
            probes.extend((0..2_000).map(|i| fastrange64(mix64(i + 7), universe)));
            probes.extend([0, universe - 1, universe, u64::MAX]);
            for y in probes {
                let want = values.get(values.partition_point(|&v| v < y)).copied();
                assert_eq!(seq.successor(y), want, "u={universe} y={y}");
            }
        }
    }

    #[test]
    fn sizes_follow_the_formula() {
        // u / m = 1024: 10 low bits, and 2m + 1 high bits.
        let values: Vec<u64> = (0..10_000).map(|i| i * 1_024 + 3).collect();
        let seq = EliasFano::new(&values, 10_000 * 1_024);
        assert_eq!(seq.low_bits(), 10);
        assert_eq!(seq.low.len(), (10_000 * 10usize).div_ceil(64));
        assert_eq!(seq.high.len(), 20_000usize.div_ceil(64));
        // Values only at the top: every bucket but the last is empty.
        let seq = EliasFano::new(&[698, 699], 700);
        assert_eq!((seq.low_bits(), seq.successor(0)), (8, Some(698)));
        let empty = EliasFano::new(&[], 1);
        assert_eq!((empty.len(), empty.successor(0)), (0, None));
        assert_eq!(low_bits_for(3, 2), 0);
        assert_eq!(low_bits_for(1, 1 << 62), 62);
    }

    #[test]
    fn decode_accepts_exactly_what_encode_writes() {
        let values = sorted_values(300, 40_000, 9);
        let seq = EliasFano::new(&values, 40_000);
        let mut w = Writer::new();
        seq.encode(&mut w);
        let bytes = w.into_bytes();
        assert_eq!(EliasFano::decode(&mut Reader::new(&bytes), 40_000), Ok(seq));
        // Another universe implies another low-bit count or value bound.
        assert!(EliasFano::decode(&mut Reader::new(&bytes), 80_000).is_err());
        assert!(EliasFano::decode(&mut Reader::new(&bytes), *values.last().unwrap()).is_err());
        // Well-formed streams that no sequence of `new` writes.
        let forged = |l: u8, len: u64, low: u64, high: u64, universe: u64| {
            let mut w = Writer::new();
            w.u8(l).u64(len).words(&[low]).words(&[high]);
            EliasFano::decode(&mut Reader::new(&w.into_bytes()), universe)
        };
        // [5, 5] below 8: l = 2, high parts 1 and 1 at bits 1 and 2.
        assert_eq!(
            forged(2, 2, 0b0101, 0b0110, 8),
            Err(DecodeError::Invalid("values do not increase"))
        );
        // [1, 7] below 7: l = 1, high parts 0 and 3 at bits 0 and 4.
        assert_eq!(
            forged(1, 2, 0b11, 0b1_0001, 7),
            Err(DecodeError::Invalid("value outside the hash space"))
        );
        assert_eq!(
            forged(1, 2, 0b11, 0b0_1001, 7).map(|s| s.iter().collect::<Vec<_>>()),
            Ok(vec![1, 5])
        );
        assert_eq!(
            forged(1, 2, 0b111, 0b0_1001, 7),
            Err(DecodeError::Invalid(
                "bits set past the end of a bit stream"
            ))
        );
        assert_eq!(
            forged(1, 2, 0b11, 0b0_0001, 7),
            Err(DecodeError::Invalid(
                "high bits disagree with the value count"
            ))
        );
        assert_eq!(
            forged(2, 2, 0b11, 0b0_1001, 7),
            Err(DecodeError::Invalid("low bit count disagrees with n and r"))
        );
        assert_eq!(
            forged(0, 8, 0, 0, 7),
            Err(DecodeError::Invalid("more values than the universe holds"))
        );
    }
}
