//! The standard Bloom filter: `m` bits, `k` probes by enhanced double hashing.

use crate::bits::BitArray;
use crate::codec::{self, FilterKind, Reader, Writer};
use crate::error::{DecodeError, Error, Result};
use crate::filter::Filter;
use crate::hash::{KeyHash, fastrange64};
use crate::math;
use crate::probe::DoubleHashing;

/// Largest probe count accepted. Optimal `k` is `-log2 p`; 64 probes would
/// target an FPR of 5e-20, far past any use.
pub const MAX_PROBES: u32 = 64;

/// What two Bloom filters must share to be OR-ed together: the same bit
/// count, probe count and hash function mean the same key sets the same
/// bits in both.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct BloomShape {
    /// Bits in the array (`m`).
    pub bits: u64,
    /// Probes per key (`k`).
    pub probes: u32,
}

impl BloomShape {
    /// The optimal shape for `n` keys at target FPR `p` (see [`math`]).
    #[must_use]
    pub fn for_fpr(n: u64, p: f64) -> Self {
        let bits = math::optimal_bits(n.max(1), p).max(1);
        Self {
            bits,
            probes: math::optimal_probes(bits, n.max(1)),
        }
    }

    /// `bits_per_key · n` bits (at least 64) with the optimal probe count.
    #[must_use]
    pub fn for_bits_per_key(n: u64, bits_per_key: f64) -> Self {
        let bits = ((n.max(1) as f64) * bits_per_key.max(0.0)).ceil().max(64.0) as u64;
        Self {
            bits,
            probes: math::optimal_probes(bits, n.max(1)),
        }
    }

    /// The bit positions, each in `[0, bits)`, that [`StandardBloom`] of
    /// this shape sets for `hash` and reads back in `may_contain`: `probes`
    /// values (repeats possible), in probe order. Structures that store
    /// Bloom bits in another layout (bit-sliced value indexes) use it so
    /// their answers cannot drift from the filter's.
    #[inline]
    pub fn probe_positions(self, hash: KeyHash) -> impl Iterator<Item = u64> + use<> {
        let m = self.bits;
        DoubleHashing::new(hash)
            .take(self.probes as usize)
            .map(move |g| fastrange64(g, m))
    }

    /// Checks `bits ≥ 1` and `1 ≤ probes ≤ MAX_PROBES`.
    pub(crate) fn validate(self) -> Result<Self> {
        if self.bits == 0 {
            return Err(Error::InvalidParameter(
                "a Bloom filter needs at least one bit".into(),
            ));
        }
        if !(1..=MAX_PROBES).contains(&self.probes) {
            return Err(Error::InvalidParameter(format!(
                "probe count {} outside 1..={MAX_PROBES}",
                self.probes
            )));
        }
        Ok(self)
    }
}

/// A standard Bloom filter (Bloom 1970).
///
/// Key `h` sets bits `fastrange(g_i, m)` for `i < k`, where `g_i` is the
/// enhanced double-hashing sequence of [`KeyHash`] (see `probe.rs`). No
/// false negatives; FPR `(1 - e^{-kn/m})^k` in expectation.
///
/// Filters of one [`BloomShape`] can be OR-ed ([`union`](Self::union)): the
/// result answers exactly as a filter that was given both key sets.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StandardBloom {
    bits: BitArray,
    probes: u32,
}

impl StandardBloom {
    /// An empty filter of the given shape.
    pub fn new(shape: BloomShape) -> Result<Self> {
        let shape = shape.validate()?;
        Ok(Self {
            bits: BitArray::new(shape.bits),
            probes: shape.probes,
        })
    }

    /// An empty filter sized for `n` keys at FPR `p`.
    pub fn with_fpr(n: u64, p: f64) -> Result<Self> {
        if !(p > 0.0 && p < 1.0) {
            return Err(Error::InvalidParameter(format!(
                "target FPR {p} is not in (0, 1)"
            )));
        }
        Self::new(BloomShape::for_fpr(n, p))
    }

    /// A filter over `bits` (at least one bit) with `probes` in
    /// `1..=MAX_PROBES`: the inverse of [`bits`](Self::bits), used by the
    /// concurrent filter's snapshot.
    pub(crate) fn from_bits(bits: BitArray, probes: u32) -> Self {
        debug_assert!(bits.len() > 0 && (1..=MAX_PROBES).contains(&probes));
        Self { bits, probes }
    }

    /// The bit array, for filters that share this layout.
    pub(crate) fn bits(&self) -> &BitArray {
        &self.bits
    }

    /// The bit array as little-endian-numbered words: bit `i` is bit
    /// `i % 64` of word `i / 64`; `ceil(bits / 64)` words, bits past the
    /// end are zero. Read-only access for structures that combine filters
    /// of one shape word by word (value-index hierarchies).
    #[must_use]
    pub fn words(&self) -> &[u64] {
        self.bits.words()
    }

    /// The filter's shape.
    #[must_use]
    pub fn shape(&self) -> BloomShape {
        BloomShape {
            bits: self.bits.len(),
            probes: self.probes,
        }
    }

    /// Adds `hash`.
    #[inline]
    pub fn insert(&mut self, hash: KeyHash) {
        for i in self.shape().probe_positions(hash) {
            self.bits.set(i);
        }
    }

    /// A new filter holding the keys of both, or `ShapeMismatch`.
    pub fn union(&self, other: &Self) -> Result<Self> {
        let mut out = self.clone();
        out.union_with(other)?;
        Ok(out)
    }

    /// ORs `other` into `self`; on `ShapeMismatch` `self` is unchanged.
    pub fn union_with(&mut self, other: &Self) -> Result<()> {
        if self.shape() != other.shape() {
            return Err(Error::ShapeMismatch(format!(
                "{:?} vs {:?}",
                self.shape(),
                other.shape()
            )));
        }
        self.bits.or_assign(&other.bits);
        Ok(())
    }

    /// Reads an encoding made by [`Filter::encode`].
    pub fn decode(bytes: &[u8]) -> Result<Self, DecodeError> {
        let mut r = codec::open(bytes, FilterKind::StandardBloom)?;
        let filter = Self::read_body(&mut r)?;
        r.finish()?;
        Ok(filter)
    }

    /// Writes the body (probes, then the bit array); shared with the
    /// concurrent filter, whose encoding differs only in its kind byte.
    pub(crate) fn write_body(&self, w: &mut Writer) {
        w.u32(self.probes);
        self.bits.encode(w);
    }

    /// Reads and validates what [`write_body`](Self::write_body) wrote.
    pub(crate) fn read_body(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        let probes = r.u32()?;
        let bits = BitArray::decode(r)?;
        if !(1..=MAX_PROBES).contains(&probes) {
            return Err(DecodeError::Invalid("probe count out of range"));
        }
        if bits.len() == 0 {
            return Err(DecodeError::Invalid("empty bit array"));
        }
        Ok(Self { bits, probes })
    }
}

impl Filter for StandardBloom {
    #[inline]
    fn may_contain(&self, hash: KeyHash) -> bool {
        self.shape().probe_positions(hash).all(|i| self.bits.get(i))
    }

    fn size_bytes(&self) -> usize {
        self.bits.size_bytes()
    }

    fn fill_ratio(&self) -> f64 {
        self.bits.fill_ratio()
    }

    fn estimated_fpr(&self) -> f64 {
        math::fpr_from_fill(self.fill_ratio(), self.probes)
    }

    fn estimated_count(&self) -> Option<f64> {
        Some(math::estimate_count(
            self.bits.len(),
            self.probes,
            self.bits.count_ones(),
        ))
    }

    fn encode(&self) -> Vec<u8> {
        let mut w = Writer::new();
        self.write_body(&mut w);
        codec::seal(FilterKind::StandardBloom, w)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(range: std::ops::Range<u64>) -> impl Iterator<Item = KeyHash> {
        range.map(|i| KeyHash::of(&i.to_le_bytes()))
    }

    #[test]
    fn holds_what_was_inserted_and_round_trips() {
        let mut f = StandardBloom::with_fpr(1_000, 0.01).unwrap();
        keys(0..1_000).for_each(|h| f.insert(h));
        assert!(keys(0..1_000).all(|h| f.may_contain(h)));
        let back = StandardBloom::decode(&f.encode()).unwrap();
        assert_eq!(back, f);
        let est = f.estimated_count().unwrap();
        assert!((est - 1_000.0).abs() < 50.0, "{est}");
    }

    #[test]
    fn union_equals_filter_of_both_sets() {
        let shape = BloomShape::for_fpr(2_000, 0.01);
        let (mut a, mut b, mut both) = (
            StandardBloom::new(shape).unwrap(),
            StandardBloom::new(shape).unwrap(),
            StandardBloom::new(shape).unwrap(),
        );
        keys(0..1_000).for_each(|h| {
            a.insert(h);
            both.insert(h);
        });
        keys(1_000..2_000).for_each(|h| {
            b.insert(h);
            both.insert(h);
        });
        assert_eq!(a.union(&b).unwrap(), both);
    }

    #[test]
    fn union_of_different_shapes_is_an_error() {
        let mut a = StandardBloom::new(BloomShape {
            bits: 1_000,
            probes: 7,
        })
        .unwrap();
        let b = StandardBloom::new(BloomShape {
            bits: 1_000,
            probes: 6,
        })
        .unwrap();
        let c = StandardBloom::new(BloomShape {
            bits: 1_001,
            probes: 7,
        })
        .unwrap();
        let before = a.clone();
        assert!(matches!(a.union_with(&b), Err(Error::ShapeMismatch(_))));
        assert!(matches!(a.union(&c), Err(Error::ShapeMismatch(_))));
        assert_eq!(a, before);
    }

    #[test]
    fn probe_positions_are_exactly_the_bits_insert_sets() {
        let shape = BloomShape {
            bits: 1_000,
            probes: 7,
        };
        for key in 0..200u64 {
            let h = KeyHash::of(&key.to_le_bytes());
            let mut f = StandardBloom::new(shape).unwrap();
            f.insert(h);
            let mut expected: Vec<u64> = shape.probe_positions(h).collect();
            assert_eq!(expected.len(), 7);
            expected.sort_unstable();
            expected.dedup();
            let set: Vec<u64> = (0..shape.bits)
                .filter(|&i| f.words()[(i / 64) as usize] >> (i % 64) & 1 == 1)
                .collect();
            assert_eq!(set, expected, "key {key}");
        }
    }

    #[test]
    fn words_expose_the_bit_array() {
        let shape = BloomShape {
            bits: 130,
            probes: 3,
        };
        let mut f = StandardBloom::new(shape).unwrap();
        assert_eq!(f.words(), &[0, 0, 0]);
        keys(0..50).for_each(|h| f.insert(h));
        let ones: u32 = f.words().iter().map(|w| w.count_ones()).sum();
        assert!((f.fill_ratio() - f64::from(ones) / 130.0).abs() < 1e-12);
        assert_eq!(f.words()[2] >> 2, 0, "bits past the end stay zero");
    }

    #[test]
    fn invalid_shapes_are_rejected() {
        assert!(StandardBloom::new(BloomShape { bits: 0, probes: 7 }).is_err());
        assert!(
            StandardBloom::new(BloomShape {
                bits: 64,
                probes: 0
            })
            .is_err()
        );
        assert!(
            StandardBloom::new(BloomShape {
                bits: 64,
                probes: 65
            })
            .is_err()
        );
        assert!(StandardBloom::with_fpr(10, 0.0).is_err());
        assert!(StandardBloom::with_fpr(10, 1.0).is_err());
    }
}
