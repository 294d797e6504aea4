//! Building a Ribbon: size it, then band under successive seeds.

use super::Ribbon;
use super::banding::{Banding, ResultRow};
use super::config;
use super::hashing::RowHasher;
use super::layout::Layout;
use super::solution::back_substitute;
use crate::hash::KeyHash;

/// How many result bits to spend.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum Sizing {
    /// About this many solution bits per key.
    BitsPerKey(f64),
    /// The fewest bits whose expected FPR is at most this.
    Fpr(f64),
}

/// The expected FPR of the Ribbon that [`RibbonBuilder::new`] plans for `n`
/// keys at `bits_per_key` (before any fallback to Bloom), or `None` past
/// the largest Ribbon.
///
/// [`RibbonBuilder::new`]: super::RibbonBuilder::new
pub(crate) fn planned_fpr(n: u64, bits_per_key: f64) -> Option<f64> {
    Plan::new(n, Sizing::BitsPerKey(bits_per_key)).map(|plan| plan.fpr())
}

/// A Ribbon's shape for a key count, known before any banding: what it
/// would cost and how accurate it would be.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct Plan {
    layout: Layout,
}

impl Plan {
    /// The shape for `n` keys, or `None` past [`config::MAX_SLOTS`] or
    /// [`config::MAX_SEGMENTS`].
    pub(super) fn new(n: u64, sizing: Sizing) -> Option<Self> {
        Self::with_slots(config::num_slots(n)?, sizing, n)
    }

    /// The shape for `n` keys over `slots` slots (a multiple of 128).
    pub(super) fn with_slots(slots: u64, sizing: Sizing, n: u64) -> Option<Self> {
        let layout = match sizing {
            Sizing::BitsPerKey(bits) => Layout::for_bits(slots, bits * n as f64),
            Sizing::Fpr(fpr) => Layout::for_fpr(slots, fpr),
        }?;
        (layout.num_segments() <= config::MAX_SEGMENTS).then_some(Self { layout })
    }

    /// Bytes of solution the filter will hold.
    pub(super) fn size_bytes(&self) -> u64 {
        self.layout.num_segments() * 16
    }

    /// The expected FPR of the filter.
    pub(super) fn fpr(&self) -> f64 {
        self.layout.fpr()
    }

    /// Bands `hashes` under seeds `0, 1, ...` until one succeeds, then
    /// solves. `None` if all [`config::MAX_SEEDS`] seeds failed (each fails
    /// with probability about 5%, see `config.rs`).
    pub(super) fn band(self, hashes: &[KeyHash]) -> Option<Ribbon> {
        match self.layout.upper_columns() {
            0..=8 => self.band_with::<u8>(hashes),
            9..=16 => self.band_with::<u16>(hashes),
            17..=32 => self.band_with::<u32>(hashes),
            _ => self.band_with::<u64>(hashes),
        }
    }

    fn band_with<R: ResultRow>(self, hashes: &[KeyHash]) -> Option<Ribbon> {
        let layout = self.layout;
        let mut banding = Banding::<R>::new(usize::try_from(layout.num_slots()).ok()?);
        for seed in 0..config::MAX_SEEDS {
            let hasher = RowHasher::new(seed, layout.num_starts());
            if banding.band(hashes, &hasher, &layout).is_ok() {
                let words = back_substitute(banding.coeffs(), banding.results(), &layout);
                return Some(Ribbon::from_parts(seed, banding.pivots(), layout, words));
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::filter::Filter;

    fn keys(seed: u64, n: u64) -> Vec<KeyHash> {
        (0..n)
            .map(|i| {
                KeyHash::from_parts(
                    crate::hash::mix64(seed ^ (i << 20) ^ 0x55),
                    crate::hash::mix64(i + seed),
                )
            })
            .collect()
    }

    #[test]
    fn every_key_is_found_at_many_sizes() {
        for n in [1u64, 2, 3, 10, 100, 127, 128, 129, 1_000, 10_000, 100_000] {
            let hashes = keys(n, n);
            let f = Plan::new(n, Sizing::Fpr(0.01))
                .unwrap()
                .band(&hashes)
                .unwrap();
            assert!(hashes.iter().all(|&h| f.may_contain(h)), "n = {n}");
            assert_eq!(f.estimated_count(), Some(n as f64));
        }
    }

    #[test]
    fn duplicates_are_redundant() {
        let mut hashes = keys(7, 5_000);
        hashes.extend_from_within(..);
        let f = Plan::new(10_000, Sizing::BitsPerKey(8.0))
            .unwrap()
            .band(&hashes)
            .unwrap();
        assert!(hashes.iter().all(|&h| f.may_contain(h)));
        assert_eq!(f.estimated_count(), Some(5_000.0));
    }

    #[test]
    fn empty_set_rejects_everything() {
        let f = Plan::new(0, Sizing::Fpr(0.01)).unwrap().band(&[]).unwrap();
        assert!(!f.may_contain(KeyHash::of(b"x")));
        assert_eq!(
            (f.size_bytes(), f.estimated_fpr(), f.fill_ratio()),
            (0, 0.0, 0.0)
        );
    }
}
