//! A range filter over `u64` keys after Grafite (Costa, Ferragina &
//! Vinciguerra, "Grafite: Taming Adversarial Queries with Optimal Range
//! Filters", SIGMOD 2024): "may `[lo, hi]` hold a key?" with a false
//! positive rate bounded for every key set and every range.
//!
//! Layout, for `n` distinct keys at `B` bits per key:
//! - hash space `r = max(1, ceil(n · 2^{B-2}))` ([`math::range_filter_hash_space`]);
//! - blocks of `L` keys, the largest power of two `≤ r`, each moved whole
//!   to a random place of `[0, r)` (`hashing.rs`);
//! - the distinct hash values in an Elias–Fano sequence (`elias_fano.rs`),
//!   about `B` bits each, with a table of select samples rebuilt on decode
//!   (`select.rs`).
//!
//! A query cuts its range at block boundaries, maps each piece to one or
//! two arcs of hash values and asks the sequence for a value in each.
//!
//! [`math::range_filter_hash_space`]: crate::math::range_filter_hash_space
#![deny(clippy::indexing_slicing)]

mod elias_fano;
mod hashing;
mod select;

use elias_fano::EliasFano;
use hashing::{Arc, RangeHash};

use crate::codec::{self, FilterKind, Writer};
use crate::error::{DecodeError, Error, Result};
use crate::math;

/// Body bytes before the two bit streams: `n`, `r`, `log2 L`, seed, `l`,
/// value count (8 + 8 + 1 + 8 + 1 + 8).
const BODY_PREFIX: usize = 34;

/// Most words of bit stream in one filter: the envelope stores the body
/// length as a `u32`. About 3.4 billion keys at 10 bits/key.
const MAX_WORDS: usize = (u32::MAX as usize - BODY_PREFIX) / 8;

/// Blocks a range may touch before the filter answers "maybe" without
/// looking. Touching 5 blocks takes `3L + 2` keys or more, above `1.5r`
/// since `L > r/2`: for such a range the bound `ℓn/r` is past 1 already
/// (`n ≥ 1`), so answering yes loses nothing the bound promised.
const MAX_QUERY_BLOCKS: u64 = 4;

/// An approximate range-emptiness filter over `u64` keys.
///
/// **No false negatives:** for every key `x` given to the builder, every
/// range `lo ≤ x ≤ hi` answers `true`.
///
/// **False positives:** for an empty range of `ℓ = hi - lo + 1` keys,
/// `P(true) ≤ ℓ · n / r ≈ ℓ / 2^{B-2}` ([`expected_fpr`](Self::expected_fpr)),
/// over the choice of the seed, for *any* keys and any range chosen
/// without knowing the seed: keys in the range's own blocks never collide
/// with it, and each other key falls in its `ℓ` hash values with
/// probability `ℓ / r`. Clustered keys and ranges that fall between
/// neighbouring keys therefore cost nothing extra, unlike a Bloom filter
/// over prefixes. An adversary that learns the seed can find false
/// positives: build with a secret seed ([`build_with_seed`](Self::build_with_seed))
/// where queries may be chosen against the filter.
///
/// Size: at most `B` bits per key for the encoded sequence, plus a select
/// table of a quarter to half a bit per key in memory
/// ([`bits_per_key`](Self::bits_per_key)). A query makes at most 8
/// successor searches (4 blocks, 2 arcs each), usually 1, each a jump
/// through the select table and a scan of a few words.
///
/// Not a [`Filter`](crate::Filter): it answers ranges of `u64` keys, not
/// [`KeyHash`](crate::KeyHash)es. Encoding body (little-endian, see
/// `docs/format.md`): `n` u64, `r` u64, `log2 L` u8, seed u64, then the
/// Elias–Fano sequence: low bits `l` u8, value count u64, `⌈m·l/64⌉` low
/// words, `⌈(m + buckets)/64⌉` high words.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RangeFilter {
    keys: u64,
    hash: RangeHash,
    values: EliasFano,
}

impl RangeFilter {
    /// The seed [`build`](Self::build) uses: the first 64 bits of the
    /// fractional part of π, a number chosen for no property at all.
    pub const DEFAULT_SEED: u64 = 0x243f_6a88_85a3_08d3;

    /// Builds a filter holding `keys` (any order, duplicates counted once)
    /// at `bits_per_key` (fractional allowed), seeded with
    /// [`DEFAULT_SEED`](Self::DEFAULT_SEED). `Error::InvalidParameter`
    /// unless `bits_per_key` is finite and at least 2 (below 2 the hash
    /// space would be smaller than the key count), or if the filter would
    /// not fit an encoding (a body over 4 GiB).
    pub fn build(keys: impl IntoIterator<Item = u64>, bits_per_key: f64) -> Result<Self> {
        Self::build_with_seed(keys, bits_per_key, Self::DEFAULT_SEED)
    }

    /// [`build`](Self::build) with another seed, which moves every block
    /// to another place of the hash space. The FPR bound holds for any
    /// seed; a random one, kept secret, also holds it against queries
    /// chosen by someone who has seen the filter's answers for other seeds
    /// or read the default one here.
    pub fn build_with_seed(
        keys: impl IntoIterator<Item = u64>,
        bits_per_key: f64,
        seed: u64,
    ) -> Result<Self> {
        if !(bits_per_key.is_finite() && bits_per_key >= 2.0) {
            return Err(Error::InvalidParameter(format!(
                "bits per key {bits_per_key} is not finite and at least 2"
            )));
        }
        let mut values: Vec<u64> = keys.into_iter().collect();
        values.sort_unstable();
        values.dedup();
        let n = values.len() as u64;
        let hash = RangeHash::new(math::range_filter_hash_space(n, bits_per_key), seed);
        for x in &mut values {
            *x = hash.of(*x);
        }
        values.sort_unstable();
        values.dedup();
        let values = EliasFano::new(&values, hash.space());
        if values.stream_words() > MAX_WORDS {
            return Err(Error::InvalidParameter(format!(
                "{n} keys at {bits_per_key} bits/key need more than the 4 GiB an encoding holds"
            )));
        }
        Ok(Self {
            keys: n,
            hash,
            values,
        })
    }

    /// `false` only if no key lies in `[lo, hi]` (both inclusive). An
    /// empty range (`lo > hi`) holds no key: `false`. A filter without
    /// keys answers `false` to everything.
    #[must_use]
    pub fn may_contain_range(&self, lo: u64, hi: u64) -> bool {
        if lo > hi || self.keys == 0 {
            return false;
        }
        let (first, last) = (self.hash.block(lo), self.hash.block(hi));
        if last - first >= MAX_QUERY_BLOCKS {
            return true;
        }
        let shift = self.hash.block_shift();
        let in_block = self.hash.block_len() - 1;
        (first..=last).any(|block| {
            let a = if block == first { lo } else { block << shift };
            let b = if block == last {
                hi
            } else {
                (block << shift) | in_block
            };
            self.any_in_arc(self.hash.arc(a, b))
        })
    }

    /// `may_contain_range(x, x)`.
    #[inline]
    #[must_use]
    pub fn may_contain(&self, x: u64) -> bool {
        self.may_contain_range(x, x)
    }

    /// Distinct keys held, `n`.
    #[must_use]
    pub fn num_keys(&self) -> u64 {
        self.keys
    }

    /// The hash space `r`.
    #[must_use]
    pub fn hash_space(&self) -> u64 {
        self.hash.space()
    }

    /// The block length `L`: the largest power of two `≤ r`.
    #[must_use]
    pub fn block_len(&self) -> u64 {
        self.hash.block_len()
    }

    /// The seed the blocks were placed with.
    #[must_use]
    pub fn seed(&self) -> u64 {
        self.hash.seed()
    }

    /// Bytes of filter data held in memory: the two Elias–Fano bit streams
    /// (what the encoding stores) and the select table rebuilt from them
    /// (one `u64` per 256 clear bits of the high stream, about
    /// `n/256 · 2^{frac(B)}`); not the struct or the envelope.
    #[must_use]
    pub fn size_bytes(&self) -> usize {
        self.values.size_bytes()
    }

    /// The real bits per key, `size_bytes · 8 / n` (infinite without keys).
    /// At whole `B` about `B + 0.25`: `B - 2` low bits, 2 high bits and the
    /// select table (12.24 at `B = 12` for 100,000 keys).
    #[must_use]
    pub fn bits_per_key(&self) -> f64 {
        self.size_bytes() as f64 * 8.0 / self.keys as f64
    }

    /// The FPR bound for an empty range of `range_len` keys (0 counts as
    /// 1): `min(1, ℓ · n / r)`, with this filter's own `n` and `r`. 0 for a
    /// filter without keys.
    #[must_use]
    pub fn expected_fpr(&self, range_len: u64) -> f64 {
        let per_value = self.keys as f64 / self.hash.space() as f64;
        (range_len.max(1) as f64 * per_value).min(1.0)
    }

    /// The self-describing, checksummed encoding (kind 9); [`decode`](Self::decode)
    /// reads it back into a filter that answers every range identically.
    #[must_use]
    pub fn encode(&self) -> Vec<u8> {
        let mut w = Writer::new();
        w.u64(self.keys)
            .u64(self.hash.space())
            .u8(self.hash.block_shift() as u8)
            .u64(self.hash.seed());
        self.values.encode(&mut w);
        codec::seal(FilterKind::RangeFilter, w)
    }

    /// Reads an encoding made by [`encode`](Self::encode). Every field is
    /// checked: `1 ≤ r ≤ 2^62`, `r = 1` without keys, `n ≤ r`,
    /// `log2 L = floor(log2 r)`, between 1 and `n` values when there are
    /// keys (none otherwise), and the sequence as `EliasFano::decode`
    /// checks it; lengths are checked against the input before anything
    /// is allocated. Never panics.
    pub fn decode(bytes: &[u8]) -> Result<Self, DecodeError> {
        let mut r = codec::open(bytes, FilterKind::RangeFilter)?;
        let keys = r.u64()?;
        let space = r.u64()?;
        let shift = r.u8()?;
        let seed = r.u64()?;
        if !(1..=math::RANGE_FILTER_MAX_HASH_SPACE).contains(&space) {
            return Err(DecodeError::Invalid("hash space out of range"));
        }
        if keys > space || (keys == 0 && space != 1) {
            return Err(DecodeError::Invalid(
                "hash space disagrees with the key count",
            ));
        }
        let hash = RangeHash::new(space, seed);
        if u32::from(shift) != hash.block_shift() {
            return Err(DecodeError::Invalid(
                "block length disagrees with the hash space",
            ));
        }
        let values = EliasFano::decode(&mut r, space)?;
        if values.len() > keys || (values.len() == 0) != (keys == 0) {
            return Err(DecodeError::Invalid(
                "value count disagrees with the key count",
            ));
        }
        r.finish()?;
        Ok(Self { keys, hash, values })
    }

    #[inline]
    fn any_in_arc(&self, arc: Arc) -> bool {
        match arc {
            Arc::Within(a, b) => self.values.any_in(a, b),
            Arc::Wrapped(a, b) => {
                self.values.any_in(a, self.hash.space() - 1) || self.values.any_in(0, b)
            }
        }
    }
}

#[cfg(test)]
mod tests;
