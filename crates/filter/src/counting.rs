//! The counting Bloom filter: a Bloom filter whose bits are 4-bit saturating
//! counters, so keys can be removed (Fan, Cao, Almeida & Broder 2000,
//! "Summary Cache").

use crate::codec::{self, FilterKind, Writer};
use crate::error::{DecodeError, Error, Result};
use crate::filter::Filter;
use crate::hash::{KeyHash, fastrange64};
use crate::math;
use crate::probe::DoubleHashing;
use crate::standard::{BloomShape, MAX_PROBES};

/// Bits per counter. Fan et al. show that with the optimal `k` a counter
/// reaches 16 with probability below `1.37e-15 · m`, so four bits suffice.
const COUNTER_BITS: u32 = 4;
/// A counter at this value is saturated: it no longer moves (see
/// [`CountingBloom`]).
const SATURATED: u64 = (1 << COUNTER_BITS) - 1;
/// Counters packed in one `u64`.
const PER_WORD: u64 = 64 / COUNTER_BITS as u64;
/// The lowest bit of every counter in a word.
const LOW_BITS: u64 = 0x1111_1111_1111_1111;

/// A counting Bloom filter: `m` 4-bit counters, `k` probes.
///
/// Probes are those of [`crate::StandardBloom`] (enhanced double hashing,
/// mapped by fastrange), so after the same inserts the non-zero counters are
/// exactly the bits a standard filter of the same [`BloomShape`] sets, and
/// [`may_contain`](Filter::may_contain) answers as that filter does.
///
/// - [`insert`](Self::insert) increments each probed counter (once per probe,
///   so a counter probed twice by one key counts twice);
/// - [`remove`](Self::remove) decrements them, after checking that the key
///   can be present: if a probed counter is zero (or smaller than the number
///   of times the key probes it) the key was never inserted, the call
///   returns [`Error::NotPresent`] and nothing changes.
///
/// **Saturation.** A counter that reaches 15 is sticky: inserts leave it at
/// 15 and removes never decrement it, because its true count is unknown and
/// decrementing could reach zero while keys remain, which would be a false
/// negative. A key whose counters all saturated (e.g. one key inserted 15
/// times) therefore stays a (false) positive after every copy is removed.
///
/// **Removing a false positive.** A key that was never inserted but whose
/// counters are all non-zero is indistinguishable from a member: `remove`
/// succeeds and decrements counters that belong to other keys, which can
/// then become false negatives. No counting Bloom filter can detect this;
/// callers must remove only keys they inserted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CountingBloom {
    words: Vec<u64>,
    counters: u64,
    probes: u32,
}

impl CountingBloom {
    /// An empty filter; `shape.bits` is the number of counters (the filter
    /// takes `shape.bits / 2` bytes). Zero counters or probes outside
    /// `1..=64` are [`Error::InvalidParameter`].
    pub fn new(shape: BloomShape) -> Result<Self> {
        if shape.bits == 0 {
            return Err(Error::InvalidParameter(
                "a counting Bloom filter needs at least one counter".into(),
            ));
        }
        if !(1..=MAX_PROBES).contains(&shape.probes) {
            return Err(Error::InvalidParameter(format!(
                "probe count {} outside 1..={MAX_PROBES}",
                shape.probes
            )));
        }
        let too_large =
            || Error::InvalidParameter(format!("{} counters do not fit in memory", shape.bits));
        let count = usize::try_from(shape.bits.div_ceil(PER_WORD)).map_err(|_| too_large())?;
        // Fallible, so an absurd shape is an error rather than an abort.
        let mut words = Vec::new();
        words.try_reserve_exact(count).map_err(|_| too_large())?;
        words.resize(count, 0);
        Ok(Self {
            words,
            counters: shape.bits,
            probes: shape.probes,
        })
    }

    /// An empty filter sized for `n` keys at FPR `p` (the shape a
    /// [`crate::StandardBloom`] would get, counters in place of bits).
    pub fn with_fpr(n: u64, p: f64) -> Result<Self> {
        if !(p > 0.0 && p < 1.0) {
            return Err(Error::InvalidParameter(format!(
                "target FPR {p} is not in (0, 1)"
            )));
        }
        Self::new(BloomShape::for_fpr(n, p))
    }

    /// The filter's shape: `bits` is the number of counters.
    #[must_use]
    pub fn shape(&self) -> BloomShape {
        BloomShape {
            bits: self.counters,
            probes: self.probes,
        }
    }

    /// Adds `hash`: increments each probed counter that is below 15.
    #[inline]
    pub fn insert(&mut self, hash: KeyHash) {
        let m = self.counters;
        for g in DoubleHashing::new(hash).take(self.probes as usize) {
            let i = fastrange64(g, m);
            if self.get(i) != SATURATED {
                self.step(i, true);
            }
        }
    }

    /// Removes one copy of `hash`. Returns [`Error::NotPresent`], and changes
    /// nothing, if some probed counter proves the key absent. Saturated
    /// counters are left at 15. See the type's documentation for what
    /// removing a false positive does.
    pub fn remove(&mut self, hash: KeyHash) -> Result<()> {
        let m = self.counters;
        let mut probed = [0u64; MAX_PROBES as usize];
        let probed = probed.get_mut(..self.probes as usize).unwrap_or_default();
        for (slot, g) in probed.iter_mut().zip(DoubleHashing::new(hash)) {
            *slot = fastrange64(g, m);
        }
        // A key that probes a counter `c` times added `c` to it (unless it
        // saturated), so a smaller unsaturated value proves it absent.
        // Sorting groups repeated probes; everything is checked before
        // anything is decremented.
        probed.sort_unstable();
        for run in probed.chunk_by(|a, b| a == b) {
            let (i, times) = (run.first().copied().unwrap_or_default(), run.len() as u64);
            let count = self.get(i);
            if count == 0 || (count != SATURATED && count < times) {
                return Err(Error::NotPresent);
            }
        }
        for &i in probed.iter() {
            if self.get(i) != SATURATED {
                self.step(i, false);
            }
        }
        Ok(())
    }

    /// Reads an encoding made by [`Filter::encode`].
    pub fn decode(bytes: &[u8]) -> Result<Self, DecodeError> {
        let mut r = codec::open(bytes, FilterKind::CountingBloom)?;
        let probes = r.u32()?;
        let counters = r.u64()?;
        let count = usize::try_from(counters.div_ceil(PER_WORD))
            .map_err(|_| DecodeError::Invalid("counter count too large"))?;
        let words = r.words(count)?;
        r.finish()?;
        if !(1..=MAX_PROBES).contains(&probes) {
            return Err(DecodeError::Invalid("probe count out of range"));
        }
        if counters == 0 {
            return Err(DecodeError::Invalid("no counters"));
        }
        let tail = counters % PER_WORD;
        if tail != 0
            && words
                .last()
                .is_some_and(|w| w >> (tail * u64::from(COUNTER_BITS)) != 0)
        {
            return Err(DecodeError::Invalid(
                "counters set past the end of the array",
            ));
        }
        Ok(Self {
            words,
            counters,
            probes,
        })
    }

    /// Counter `i` (< counters).
    #[inline]
    #[expect(
        clippy::indexing_slicing,
        reason = "probes are mapped into [0, counters) by fastrange"
    )]
    fn get(&self, i: u64) -> u64 {
        (self.words[(i / PER_WORD) as usize] >> ((i % PER_WORD) * u64::from(COUNTER_BITS)))
            & SATURATED
    }

    /// Increments (`up`) or decrements counter `i`. The caller has checked
    /// that it is below 15, or above 0, so no carry or borrow leaves its
    /// nibble.
    #[inline]
    #[expect(
        clippy::indexing_slicing,
        reason = "probes are mapped into [0, counters) by fastrange"
    )]
    fn step(&mut self, i: u64, up: bool) {
        let one = 1 << ((i % PER_WORD) * u64::from(COUNTER_BITS));
        let word = &mut self.words[(i / PER_WORD) as usize];
        *word = if up {
            word.wrapping_add(one)
        } else {
            word.wrapping_sub(one)
        };
    }

    /// Number of non-zero counters.
    fn nonzero(&self) -> u64 {
        self.words
            .iter()
            .map(|&w| {
                // Fold each nibble onto its lowest bit: set iff the nibble is non-zero.
                let folded = w | (w >> 1);
                let folded = folded | (folded >> 2);
                u64::from((folded & LOW_BITS).count_ones())
            })
            .sum()
    }
}

impl Filter for CountingBloom {
    #[inline]
    fn may_contain(&self, hash: KeyHash) -> bool {
        let m = self.counters;
        DoubleHashing::new(hash)
            .take(self.probes as usize)
            .all(|g| self.get(fastrange64(g, m)) != 0)
    }

    fn size_bytes(&self) -> usize {
        self.words.len() * 8
    }

    /// Non-zero counters over counters.
    fn fill_ratio(&self) -> f64 {
        self.nonzero() as f64 / self.counters as f64
    }

    /// `fill^k`: the probes of a non-member land on non-zero counters
    /// independently.
    fn estimated_fpr(&self) -> f64 {
        math::fpr_from_fill(self.fill_ratio(), self.probes)
    }

    /// The Swamidass–Baldi estimate from the non-zero counters: the number
    /// of distinct keys currently held (removed keys no longer count, except
    /// through saturated counters).
    fn estimated_count(&self) -> Option<f64> {
        Some(math::estimate_count(
            self.counters,
            self.probes,
            self.nonzero(),
        ))
    }

    fn encode(&self) -> Vec<u8> {
        let mut w = Writer::new();
        w.u32(self.probes).u64(self.counters).words(&self.words);
        codec::seal(FilterKind::CountingBloom, w)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::standard::StandardBloom;

    fn keys(range: std::ops::Range<u64>) -> impl Iterator<Item = KeyHash> {
        range.map(|i| KeyHash::of(&i.to_le_bytes()))
    }

    /// The bits of a standard Bloom filter, read from its encoding
    /// (probes u32, length u64, then the words).
    fn standard_bits(f: &StandardBloom) -> Vec<bool> {
        let bytes = f.encode();
        let mut r = codec::open(&bytes, FilterKind::StandardBloom).unwrap();
        let _probes = r.u32().unwrap();
        let len = r.u64().unwrap();
        let words = r.words(len.div_ceil(64) as usize).unwrap();
        (0..len)
            .map(|i| words[(i / 64) as usize] >> (i % 64) & 1 == 1)
            .collect()
    }

    #[test]
    fn nonzero_counters_are_the_standard_bloom_bits() {
        for shape in [
            BloomShape { bits: 1, probes: 3 },
            BloomShape {
                bits: 37,
                probes: 5,
            },
            BloomShape {
                bits: 1_000,
                probes: 7,
            },
            BloomShape::for_fpr(5_000, 0.001),
        ] {
            let mut counting = CountingBloom::new(shape).unwrap();
            let mut standard = StandardBloom::new(shape).unwrap();
            for h in keys(0..2_000) {
                counting.insert(h);
                standard.insert(h);
            }
            let nonzero: Vec<bool> = (0..shape.bits).map(|i| counting.get(i) != 0).collect();
            assert_eq!(nonzero, standard_bits(&standard), "{shape:?}");
            assert_eq!(counting.fill_ratio(), standard.fill_ratio());
        }
    }

    #[test]
    fn counters_saturate_and_stick() {
        let mut f = CountingBloom::new(BloomShape {
            bits: 16,
            probes: 1,
        })
        .unwrap();
        let h = KeyHash::from_parts(0, 0); // probes counter 0 only
        for expected in (1..=15).chain([15, 15]) {
            f.insert(h);
            assert_eq!(f.get(0), expected);
        }
        f.remove(h).unwrap();
        assert_eq!(f.get(0), 15, "a saturated counter never decrements");
        assert_eq!(f.words, [15], "no carry into the neighbour nibbles");
    }

    #[test]
    fn counters_do_not_leak_into_neighbours() {
        let mut f = CountingBloom::new(BloomShape {
            bits: 32,
            probes: 1,
        })
        .unwrap();
        // fastrange64(i << 59, 32) = i: one key per counter.
        let at = |i: u64| KeyHash::from_parts(i << 59, 0);
        for i in 0..32 {
            for _ in 0..i % 16 {
                f.insert(at(i));
            }
        }
        for i in 0..32 {
            assert_eq!(f.get(i), i % 16, "counter {i}");
        }
        assert_eq!(f.nonzero(), 30);
        for i in (0..32).filter(|i| i % 16 != 0) {
            f.remove(at(i)).unwrap();
            let expected = if i % 16 == 15 { 15 } else { i % 16 - 1 };
            assert_eq!(f.get(i), expected, "counter {i} after remove");
        }
        assert_eq!(f.remove(at(0)), Err(Error::NotPresent));
    }

    #[test]
    fn repeated_probes_are_counted_as_often_as_they_occur() {
        // One counter and three probes: every probe hits counter 0.
        let mut f = CountingBloom::new(BloomShape { bits: 1, probes: 3 }).unwrap();
        let h = KeyHash::of(b"k");
        f.insert(h);
        assert_eq!(f.get(0), 3);
        f.remove(h).unwrap();
        assert_eq!(f.get(0), 0);
        // Counter at 2 < 3 probes: this key cannot be present.
        f.words[0] = 2;
        assert_eq!(f.remove(h), Err(Error::NotPresent));
        assert_eq!(f.get(0), 2);
    }

    #[test]
    fn round_trips_and_counts() {
        let mut f = CountingBloom::with_fpr(1_000, 0.01).unwrap();
        keys(0..1_000).for_each(|h| f.insert(h));
        assert_eq!(CountingBloom::decode(&f.encode()).unwrap(), f);
        let est = f.estimated_count().unwrap();
        assert!((est - 1_000.0).abs() < 50.0, "{est}");
        assert_eq!(f.size_bytes(), f.shape().bits.div_ceil(16) as usize * 8);
    }
}
