//! A Bloom filter that many threads insert into at once, without locks.

use std::sync::atomic::{AtomicU64, Ordering};

use crate::bits::BitArray;
use crate::codec::{self, FilterKind, Writer};
use crate::error::{DecodeError, Result};
use crate::filter::Filter;
use crate::hash::{KeyHash, fastrange64};
use crate::math;
use crate::probe::DoubleHashing;
use crate::standard::{BloomShape, StandardBloom};

/// A standard Bloom filter over atomic words: [`insert`](Self::insert) takes
/// `&self`, so threads share one filter (`Send + Sync`, e.g. in an `Arc`)
/// and insert without locks while others query.
///
/// Bit layout and probe sequence are those of [`StandardBloom`]: key `h`
/// sets bits `fastrange(g_i, m)`, `i < k`. [`to_standard`](Self::to_standard)
/// and `From<StandardBloom>` convert losslessly, and a filter fed any
/// interleaving of inserts ends bit for bit equal to a [`StandardBloom`]
/// fed the same keys in any order (setting bits commutes).
///
/// # Memory ordering
///
/// Bits are set with `fetch_or` and read with loads, all `Relaxed`: a bit
/// once set is never cleared, so the only question is *when* a reader
/// sees it.
///
/// - A query racing an insert of the same key may answer either way.
/// - Once `insert(h)` returns in a thread, later queries of `h` in that
///   thread answer `true` (per-location coherence: a load never sees a value
///   older than one its thread already wrote or read).
/// - Another thread answers `true` for `h` once it has a happens-before edge
///   from the end of that insert (a join, a channel, a mutex, a
///   `Release`/`Acquire` pair the caller provides). The filter adds no
///   ordering of its own: relaxed operations do not order other memory, so
///   finding a key in the filter says nothing about data written beside it.
#[derive(Debug)]
pub struct AtomicBloom {
    words: Box<[AtomicU64]>,
    bits: u64,
    probes: u32,
}

impl AtomicBloom {
    /// An empty filter of `shape`. `InvalidParameter` for zero bits or a
    /// probe count outside `1..=64`, as [`StandardBloom::new`].
    pub fn new(shape: BloomShape) -> Result<Self> {
        Ok(StandardBloom::new(shape)?.into())
    }

    /// An empty filter sized for `n` keys at FPR `p`, as
    /// [`StandardBloom::with_fpr`]. `InvalidParameter` unless `0 < p < 1`.
    pub fn with_fpr(n: u64, p: f64) -> Result<Self> {
        Ok(StandardBloom::with_fpr(n, p)?.into())
    }

    /// The filter's shape.
    #[must_use]
    pub fn shape(&self) -> BloomShape {
        BloomShape {
            bits: self.bits,
            probes: self.probes,
        }
    }

    /// Adds `hash`. Safe to call from many threads at once; see the type's
    /// documentation for when other threads see the key.
    #[inline]
    pub fn insert(&self, hash: KeyHash) {
        for (word, mask) in self.probe_bits(hash) {
            // Test before setting: a read-modify-write takes the cache line
            // exclusively, so skipping it for bits already set keeps threads
            // that share hot lines from bouncing them. A set bit seen by the
            // load is never cleared, so skipping the write loses nothing.
            if word.load(Ordering::Relaxed) & mask == 0 {
                word.fetch_or(mask, Ordering::Relaxed);
            }
        }
    }

    /// A snapshot as a [`StandardBloom`]. It holds every key whose insert
    /// happened before this call, and possibly some bits of inserts running
    /// concurrently with it.
    #[must_use]
    pub fn to_standard(&self) -> StandardBloom {
        let words = self
            .words
            .iter()
            .map(|w| w.load(Ordering::Relaxed))
            .collect();
        StandardBloom::from_bits(BitArray::from_words(words, self.bits), self.probes)
    }

    /// Reads an encoding made by [`Filter::encode`]: the body of a
    /// [`StandardBloom`] under its own kind byte.
    pub fn decode(bytes: &[u8]) -> Result<Self, DecodeError> {
        let mut r = codec::open(bytes, FilterKind::AtomicBloom)?;
        let filter = StandardBloom::read_body(&mut r)?;
        r.finish()?;
        Ok(filter.into())
    }

    /// The word and bit mask of each probe of `hash`.
    #[inline]
    fn probe_bits(&self, hash: KeyHash) -> impl Iterator<Item = (&AtomicU64, u64)> {
        DoubleHashing::new(hash)
            .take(self.probes as usize)
            .filter_map(|g| {
                let at = fastrange64(g, self.bits);
                // `at < bits`, so the word exists; `get` keeps this panic-free.
                self.words
                    .get((at >> 6) as usize)
                    .map(|w| (w, 1 << (at & 63)))
            })
    }

    fn count_ones(&self) -> u64 {
        self.words
            .iter()
            .map(|w| u64::from(w.load(Ordering::Relaxed).count_ones()))
            .sum()
    }
}

impl From<StandardBloom> for AtomicBloom {
    /// The same bits, now shareable between threads.
    fn from(filter: StandardBloom) -> Self {
        let shape = filter.shape();
        Self {
            words: filter
                .bits()
                .words()
                .iter()
                .map(|&w| AtomicU64::new(w))
                .collect(),
            bits: shape.bits,
            probes: shape.probes,
        }
    }
}

impl Filter for AtomicBloom {
    /// Relaxed loads; see the type's documentation for what a query
    /// concurrent with inserts sees.
    #[inline]
    fn may_contain(&self, hash: KeyHash) -> bool {
        self.probe_bits(hash)
            .all(|(word, mask)| word.load(Ordering::Relaxed) & mask != 0)
    }

    fn size_bytes(&self) -> usize {
        self.words.len() * 8
    }

    fn fill_ratio(&self) -> f64 {
        self.count_ones() as f64 / self.bits as f64
    }

    fn estimated_fpr(&self) -> f64 {
        math::fpr_from_fill(self.fill_ratio(), self.probes)
    }

    fn estimated_count(&self) -> Option<f64> {
        Some(math::estimate_count(
            self.bits,
            self.probes,
            self.count_ones(),
        ))
    }

    /// Encodes a snapshot ([`to_standard`](Self::to_standard)).
    fn encode(&self) -> Vec<u8> {
        let mut w = Writer::new();
        self.to_standard().write_body(&mut w);
        codec::seal(FilterKind::AtomicBloom, w)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(range: std::ops::Range<u64>) -> impl Iterator<Item = KeyHash> {
        range.map(|i| KeyHash::of(&i.to_le_bytes()))
    }

    #[test]
    fn is_send_and_sync() {
        fn shareable<T: Send + Sync>() {}
        shareable::<AtomicBloom>();
    }

    #[test]
    fn converts_losslessly_both_ways() {
        let mut std = StandardBloom::with_fpr(1_000, 0.01).unwrap();
        keys(0..500).for_each(|h| std.insert(h));
        let atomic = AtomicBloom::from(std.clone());
        assert_eq!(atomic.to_standard(), std);
        keys(500..1_000).for_each(|h| {
            atomic.insert(h);
            std.insert(h);
        });
        assert_eq!(atomic.to_standard(), std);
        assert_eq!(atomic.shape(), std.shape());
        assert_eq!(atomic.fill_ratio(), std.fill_ratio());
        assert_eq!(atomic.estimated_fpr(), std.estimated_fpr());
        assert_eq!(atomic.estimated_count(), std.estimated_count());
        assert_eq!(atomic.size_bytes(), std.size_bytes());
        assert!(keys(0..1_000).all(|h| atomic.may_contain(h)));
    }

    #[test]
    fn round_trips_under_its_own_kind() {
        let f = AtomicBloom::with_fpr(100, 0.01).unwrap();
        keys(0..100).for_each(|h| f.insert(h));
        let bytes = f.encode();
        assert_eq!(codec::peek_kind(&bytes), Ok(FilterKind::AtomicBloom));
        assert_eq!(
            AtomicBloom::decode(&bytes).unwrap().to_standard(),
            f.to_standard()
        );
        assert!(matches!(
            StandardBloom::decode(&bytes),
            Err(DecodeError::WrongKind { .. })
        ));
    }
}
