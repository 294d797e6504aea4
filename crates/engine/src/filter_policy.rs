//! The filter policy: which key filter, and how many bits per key, a table
//! written to a level gets. A pure function of the policy, the level and
//! the projected number of entries on every level ([`FilterPolicy::choose`]),
//! with no I/O and no version, so it is tested here on its own, as the
//! compaction planner is.
//!
//! Flush, compaction, the value-index backfill and the flush at open all
//! ask it through `write_tables` (`db/flush.rs`), which also computes the
//! projection: the level sizes once the write is installed.
//!
//! The kind follows the level: blocked Bloom above
//! [`FilterPolicy::ribbon_from_level`], Ribbon from it down. The bits per
//! key are fixed per level, or Monkey's allocation of a memory budget
//! ([`sift_filter::math::monkey_bits_per_key`]), in which each level is
//! sized on the FPR curve of the kind it gets: [`FprCurve::BLOCKED_BLOOM`]
//! or [`FprCurve::ribbon`].

use sift_filter::math::{FprCurve, monkey_bits_per_key};

use crate::error::{Error, Result};
use crate::options::PerLevel;

/// Most bits per key Monkey gives a level. At 32 bits/key a blocked Bloom
/// filter's FPR is 5.3e-6 (Ribbon's under 1e-9): one wasted read in about
/// 190,000 lookups of missing keys, so more bits save nothing measurable.
/// Monkey spends what the cap leaves on the other levels.
const MAX_MONKEY_BITS_PER_KEY: f64 = 32.0;

/// Largest bits per key a policy may ask for (a fixed per-level value or
/// Monkey's average): FPR below 1e-13 for either kind, far past any use.
const MAX_BITS_PER_KEY: f64 = 64.0;

/// How many filter bits each key gets, per level.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum BitsPerKey {
    /// Fixed bits/key per level (0 means no filter at that level).
    PerLevel(PerLevel<f64>),
    /// Monkey's allocation (Dayan, Athanassoulis, Idreos, SIGMOD 2017): the
    /// memory of `average` bits/key over all keys, spread so that the sum
    /// of the levels' false-positive rates is smallest, each level's FPR
    /// modelled on the curve of the filter kind it gets (blocked Bloom or
    /// Ribbon). This gives deeper, larger levels fewer bits per key, and no
    /// level more than 32. The default, with 10 bits/key.
    Monkey {
        /// Average bits per key over the whole database.
        average: f64,
    },
}

/// Which key filters tables get.
#[derive(Clone, Debug, PartialEq)]
pub struct FilterPolicy {
    /// Bits per key at each level (default: Monkey at 10 bits/key).
    pub bits_per_key: BitsPerKey,
    /// Levels at or below this one get Ribbon filters (about 30% smaller
    /// at the same FPR, slower to build), levels above get blocked Bloom.
    /// `None` means blocked Bloom everywhere. Default: `Some(2)`, so the
    /// short-lived L0 and L1 tables keep the fast-to-build filter.
    pub ribbon_from_level: Option<usize>,
    /// Drops the filter of the last level (RocksDB's
    /// `optimize_filters_for_hits`): right when lookups are nearly always
    /// for present keys, which the last level holds anyway. The other
    /// levels keep the filters they would have without it, so the switch
    /// saves the last level's filter memory. Default `false`.
    pub optimize_filters_for_hits: bool,
    /// Tables with more keys than this get a partitioned filter (one filter
    /// per range of data blocks, found through a small index) instead of a
    /// single one. Default 1,000,000 keys.
    pub partition_keys: u64,
}

impl FilterPolicy {
    /// Blocked Bloom at `bits_per_key` on every level: the fixed policy the
    /// comparisons with other engines use.
    #[must_use]
    pub fn blocked_bloom(bits_per_key: f64) -> Self {
        Self {
            bits_per_key: BitsPerKey::PerLevel(PerLevel::uniform(bits_per_key)),
            ribbon_from_level: None,
            ..Self::default()
        }
    }

    /// The filter for a table written to `level` when the levels will hold
    /// `projected[i]` entries (this write included).
    ///
    /// - With [`optimize_filters_for_hits`](Self::optimize_filters_for_hits),
    ///   none for the deepest level that holds entries (or `level`, if
    ///   deeper), unless that is level 0.
    /// - Fixed bits: the level's value. Monkey: the level's share of
    ///   `average · sum(projected)` bits, 0 for a level `projected` does
    ///   not reach.
    /// - No filter at 0 bits per key; else blocked Bloom above
    ///   [`ribbon_from_level`](Self::ribbon_from_level), Ribbon from it on.
    pub(crate) fn choose(&self, level: usize, projected: &[u64]) -> FilterChoice {
        let deepest = projected
            .iter()
            .rposition(|&n| n > 0)
            .unwrap_or(0)
            .max(level);
        if self.optimize_filters_for_hits && level > 0 && level == deepest {
            return FilterChoice::NONE;
        }
        let bits_per_key = match &self.bits_per_key {
            BitsPerKey::PerLevel(per_level) => *per_level.get(level),
            BitsPerKey::Monkey { average } => {
                let levels: Vec<(u64, FprCurve)> = projected
                    .iter()
                    .enumerate()
                    .map(|(at, &n)| (n, self.curve(at, n)))
                    .collect();
                let total_bits = average * projected.iter().sum::<u64>() as f64;
                let bits = monkey_bits_per_key(&levels, total_bits, MAX_MONKEY_BITS_PER_KEY);
                bits.get(level).copied().unwrap_or(0.0)
            }
        };
        if !(bits_per_key.is_finite() && bits_per_key > 0.0) {
            return FilterChoice::NONE;
        }
        FilterChoice {
            kind: self.kind(level),
            bits_per_key,
        }
    }

    /// The kind a level's filters get when they get one.
    fn kind(&self, level: usize) -> FilterKindChoice {
        if self.ribbon_from_level.is_some_and(|from| level >= from) {
            FilterKindChoice::Ribbon
        } else {
            FilterKindChoice::BlockedBloom
        }
    }

    /// The FPR curve Monkey sizes `level`'s filters on, for `entries`
    /// entries there. A Ribbon filter covers at most one table, or one
    /// partition of a table past `partition_keys`: its banding overhead is
    /// taken at `min(entries, partition_keys)` keys, an upper bound on its
    /// key count (the overhead grows with it, by 2% from 16,384 keys to
    /// 1,000,000).
    fn curve(&self, level: usize, entries: u64) -> FprCurve {
        match self.kind(level) {
            FilterKindChoice::Ribbon => FprCurve::ribbon(entries.min(self.partition_keys)),
            FilterKindChoice::BlockedBloom | FilterKindChoice::None => FprCurve::BLOCKED_BLOOM,
        }
    }

    /// Checks the settings a database can be opened with.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for bits per key (fixed or average) not
    /// within `0 ..= 64`, or `partition_keys` of 0.
    pub(crate) fn validate(&self) -> Result<()> {
        let bits_ok = |b: f64| b.is_finite() && (0.0..=MAX_BITS_PER_KEY).contains(&b);
        let (ok, what) = match &self.bits_per_key {
            BitsPerKey::PerLevel(per_level) => (
                per_level.values().iter().all(|&b| bits_ok(b)),
                "bits per key must be within 0 ..= 64",
            ),
            BitsPerKey::Monkey { average } => (
                bits_ok(*average),
                "Monkey average bits per key must be within 0 ..= 64",
            ),
        };
        if !ok {
            return Err(Error::InvalidArgument(what.to_owned()));
        }
        if self.partition_keys < 1 {
            return Err(Error::InvalidArgument(
                "partition_keys must be at least 1".to_owned(),
            ));
        }
        Ok(())
    }
}

impl Default for FilterPolicy {
    fn default() -> Self {
        Self {
            bits_per_key: BitsPerKey::Monkey { average: 10.0 },
            ribbon_from_level: Some(2),
            optimize_filters_for_hits: false,
            partition_keys: 1_000_000,
        }
    }
}

/// Which key filter a new table gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FilterKindChoice {
    /// No filter: every probe answers "maybe".
    None,
    /// Cache-line blocked Bloom.
    BlockedBloom,
    /// Ribbon (falls back to blocked Bloom when not smaller).
    Ribbon,
}

/// A filter kind and its bits per key.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct FilterChoice {
    /// Kind.
    pub kind: FilterKindChoice,
    /// Bits per key; fractional allowed. Zero (or anything not finite and
    /// positive) means no filter, whatever the kind.
    pub bits_per_key: f64,
}

impl FilterChoice {
    /// No filter.
    pub(crate) const NONE: Self = Self {
        kind: FilterKindChoice::None,
        bits_per_key: 0.0,
    };

    /// Whether this choice builds a filter at all.
    pub(crate) fn enabled(&self) -> bool {
        self.kind != FilterKindChoice::None
            && self.bits_per_key.is_finite()
            && self.bits_per_key > 0.0
    }
}

#[cfg(test)]
mod tests;
