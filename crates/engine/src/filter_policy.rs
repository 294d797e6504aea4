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
//! [`FilterPolicy::ribbon_from_level`] (split-block Bloom down to
//! [`FilterPolicy::split_block_to_level`]), Ribbon from it down, and Binary
//! Fuse from [`FilterPolicy::fuse_from_level`] down. The bits per key are
//! fixed per level, or Monkey's allocation of a memory budget
//! ([`sift_filter::math::monkey_bits_per_key`]), in which each level is
//! sized on the FPR curve of the kind it gets: [`FprCurve::BLOCKED_BLOOM`],
//! [`FprCurve::SPLIT_BLOCK_BLOOM`], [`FprCurve::ribbon`] or
//! [`FprCurve::binary_fuse`].

use sift_filter::math::{FprCurve, monkey_bits_per_key};

use crate::error::{Error, Result};
use crate::options::PerLevel;
use crate::prefix::PrefixExtractor;

/// Most bits per key Monkey gives a level. At 32 bits/key a blocked Bloom
/// filter's FPR is 5.3e-6 (Ribbon's under 1e-9): one wasted read in about
/// 190,000 lookups of missing keys, so more bits save nothing measurable.
/// Monkey spends what the cap leaves on the other levels.
const MAX_MONKEY_BITS_PER_KEY: f64 = 32.0;

/// Most bits per key the lookups a table's keys see can add to its level's
/// share at compaction ([`FilterPolicy::access_shift`]), and take away. A
/// cold table loses less than a hot one gains: its filter still answers the
/// lookups that do come, and counts that are all zero say little.
const MAX_ACCESS_GAIN: f64 = 4.0;
const MAX_ACCESS_LOSS: f64 = 2.0;

/// Largest bits per key a policy may ask for (a fixed per-level value or
/// Monkey's average): FPR below 1e-13 for either kind, far past any use.
const MAX_BITS_PER_KEY: f64 = 64.0;

/// Default [`FilterPolicy::partition_keys`].
const DEFAULT_PARTITION_KEYS: u64 = 1_000_000;

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
    /// level more than 32. Within a level, a compaction then gives its
    /// output up to 4 bits per key more where the lookups that reached the
    /// level went to the compacted keys more often than to the level's
    /// average, and up to 2 fewer where they went less (Mnemosyne's
    /// allocation by access counts), never adding memory to the level.
    /// The default, with 10 bits/key.
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
    /// Levels at or below this one get Binary Fuse filters (Graf & Lemire,
    /// 2022) in place of their Ribbon or blocked Bloom: three memory reads
    /// a probe, at about 1.13 × the fingerprint's bits per key. Each filter
    /// takes 16-bit fingerprints (FPR `2^-16`) where the level's bits per
    /// key pay for them, else 8-bit ones (`2^-8`, about 9.1 bits per key),
    /// and leaves the bits above that unspent; with fewer bits than 8-bit
    /// fingerprints need, it is Ribbon, the smaller kind at low bits per
    /// key. A construction that fails falls back to blocked Bloom. Default
    /// `None`.
    pub fuse_from_level: Option<usize>,
    /// Levels at or above this one (this level and the shallower ones) get
    /// split-block Bloom filters where they would get blocked Bloom: the
    /// fastest query (one bit per 32-bit lane of a 256-bit block, no
    /// multiply inside it), for 3% more memory at 1% FPR and 9% more at
    /// 0.1%. For the hot levels, whose filters are probed most per byte.
    /// Levels that get Ribbon or Binary Fuse keep them. Default `None`.
    pub split_block_to_level: Option<usize>,
    /// Drops the filter of the last level (RocksDB's
    /// `optimize_filters_for_hits`): right when lookups are nearly always
    /// for present keys, which the last level holds anyway. The other
    /// levels keep the filters they would have without it, so the switch
    /// saves the last level's filter memory. Default `false`.
    pub optimize_filters_for_hits: bool,
    /// Tables with more keys than this get a partitioned filter (one filter
    /// of about 4 KiB per range of data blocks, found through a small
    /// index, each read and kept in memory on its own) instead of a single
    /// one. Default 1,000,000 keys. Where the filters do not fit
    /// `filter_memory_bytes`, 4,096 partitions every table whose filter is
    /// larger than a page, so that a lookup reads one page of filter, not
    /// the whole table's (`sift-bench scale`: up to 1.9× the lookups at a
    /// quarter of the metadata); where they fit, a probe of a resident
    /// partition costs more than one of a whole filter (a 1M-key
    /// `readmissing` at 2.9M lookups/s instead of 5.1M), so RocksDB's
    /// advice holds here too: partition for stores larger than memory.
    pub partition_keys: u64,
    /// Which prefix of each key the tables' prefix filters hold (RocksDB's
    /// `prefix_extractor`): a blocked Bloom filter of the distinct prefixes,
    /// at the level's key-filter bits per key, which prefix scans and
    /// ranges within one prefix probe. Default `None`: no prefix filters.
    pub prefix_extractor: Option<PrefixExtractor>,
    /// Keep the key filters when a prefix extractor is set (RocksDB's
    /// `whole_key_filtering`). `false` saves their memory where point
    /// lookups are rare. Default `true`.
    pub whole_key_filtering: bool,
    /// Range filters: which short ranges every table can tell are empty
    /// without a read. Default: on, Monkey at 12 bits/key sized for ranges
    /// of 16 (see [`RangeFilterPolicy`]). `None` turns them off.
    pub range_filter: Option<RangeFilterPolicy>,
}

/// Range filters (after Grafite: Costa, Ferragina & Vinciguerra, SIGMOD
/// 2024), one per table: a short range `[a, b]` that holds no key of the
/// table is found empty without reading it, with probability at least
/// `1 - ℓ / 2^(B-2)` for a range of `ℓ` integers at `B` bits per key,
/// whatever the keys and the query.
///
/// Keys map to integers in order: past the common prefix of the table's
/// smallest and largest keys, the next 8 bytes, big-endian, zero-padded.
/// So `ℓ` counts values of those 8 bytes: keys that are big-endian
/// integers after a shared prefix get the guarantee for ranges of `ℓ`
/// integers.
///
/// The budget is a documented split of the filter memory: the range
/// filters get their own bits per key on top of the key filters', spread
/// over the levels by Monkey on the range filter's curve
/// `p(B) = 4ℓ · e^{-B ln 2}` (or fixed per level), so the key filters'
/// allocation, and point lookups, are unchanged by them.
#[derive(Clone, Debug, PartialEq)]
pub struct RangeFilterPolicy {
    /// Bits per key per level (default: Monkey at 12 bits/key).
    pub bits_per_key: BitsPerKey,
    /// The range length Monkey sizes for (default 16).
    pub range_len: u64,
}

impl Default for RangeFilterPolicy {
    fn default() -> Self {
        Self {
            bits_per_key: BitsPerKey::Monkey { average: 12.0 },
            range_len: 16,
        }
    }
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

    /// Binary Fuse at `bits_per_key` on every level (16-bit fingerprints
    /// from about 18.2 bits per key, 8-bit from about 9.1 at a million
    /// keys a table): the fixed policy for comparing kinds in the engine.
    #[must_use]
    pub fn binary_fuse(bits_per_key: f64) -> Self {
        Self {
            fuse_from_level: Some(0),
            ..Self::blocked_bloom(bits_per_key)
        }
    }

    /// Split-block Bloom at `bits_per_key` on every level: the fixed policy
    /// for comparing kinds in the engine.
    #[must_use]
    pub fn split_block_bloom(bits_per_key: f64) -> Self {
        Self {
            split_block_to_level: Some(usize::MAX),
            ..Self::blocked_bloom(bits_per_key)
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
        let dropped = self.optimize_filters_for_hits && level > 0 && level == deepest;
        if dropped || !self.whole_key_filtering {
            return FilterChoice::NONE;
        }
        let bits_per_key = self.key_bits_per_key(level, projected);
        if !(bits_per_key.is_finite() && bits_per_key > 0.0) {
            return FilterChoice::NONE;
        }
        FilterChoice {
            kind: self.kind(level),
            bits_per_key,
        }
    }

    /// The prefix and range filters for a table written to `level` (as
    /// [`choose`](Self::choose)). The prefix filter takes the level's
    /// key-filter bits per key, whether or not the key filter is kept.
    pub(crate) fn choose_scan(&self, level: usize, projected: &[u64]) -> ScanFilterChoice {
        let prefix = self.prefix_extractor.as_ref().and_then(|extractor| {
            let bits = self.key_bits_per_key(level, projected);
            (bits.is_finite() && bits > 0.0).then(|| (extractor.clone(), bits))
        });
        let range_bits_per_key = self.range_filter.as_ref().map_or(0.0, |range| {
            let curve = FprCurve::range_filter(range.range_len);
            level_bits(&range.bits_per_key, level, projected, |_, _| curve)
        });
        ScanFilterChoice {
            prefix,
            range_bits_per_key: if range_bits_per_key.is_finite() {
                range_bits_per_key
            } else {
                0.0
            },
        }
    }

    /// The key filters' bits per key at `level`, before the kind and the
    /// switches.
    fn key_bits_per_key(&self, level: usize, projected: &[u64]) -> f64 {
        level_bits(&self.bits_per_key, level, projected, |at, n| {
            self.curve(at, n)
        })
    }

    /// Bits per key to add to `level`'s share (of `entries` entries) for a
    /// table whose keys were used `density` times per key, on a level
    /// whose keys were used `level_density` times per key on average: the
    /// allocation by access counts of Mnemosyne (2025), on top of Monkey's
    /// by level. 0 for fixed per-level bits, which are kept as set.
    ///
    /// Minimizing the wasted reads `Σ aᵢ·FPRᵢ`, with `FPRᵢ = A·e^(−c·bᵢ)`,
    /// for a fixed memory `Σ nᵢ·bᵢ` gives `bᵢ = λ + ln(aᵢ/nᵢ)/c`: keys
    /// looked up twice as often get `ln 2 / c` more bits (1.44 for blocked
    /// Bloom). Measured from the level's mean density, the shifts weighted
    /// by keys sum to at most zero (Jensen), so a level's filters take no
    /// more memory than Monkey gives them; uniform lookups shift nothing.
    pub(crate) fn access_shift(
        &self,
        level: usize,
        entries: u64,
        density: f64,
        level_density: f64,
    ) -> f64 {
        let monkey = matches!(self.bits_per_key, BitsPerKey::Monkey { .. });
        let decay = self.curve(level, entries).decay;
        if !(monkey && level_density > 0.0 && density >= 0.0 && decay > 0.0) {
            return 0.0;
        }
        ((density / level_density).ln() / decay).clamp(-MAX_ACCESS_LOSS, MAX_ACCESS_GAIN)
    }

    /// The kind a level's filters get when they get one.
    fn kind(&self, level: usize) -> FilterKindChoice {
        if self.fuse_from_level.is_some_and(|from| level >= from) {
            FilterKindChoice::BinaryFuse
        } else if self.ribbon_from_level.is_some_and(|from| level >= from) {
            FilterKindChoice::Ribbon
        } else if self.split_block_to_level.is_some_and(|to| level <= to) {
            FilterKindChoice::SplitBlockBloom
        } else {
            FilterKindChoice::BlockedBloom
        }
    }

    /// The FPR curve Monkey sizes `level`'s filters on, for `entries`
    /// entries there. A Ribbon filter covers at most one table, or one
    /// partition of a table past `partition_keys`: its banding overhead is
    /// taken at `min(entries, partition_keys)` keys, an upper bound on its
    /// key count (the overhead grows with it, by 2% from 16,384 keys to
    /// 1,000,000). A Binary Fuse filter likewise, on its own curve.
    fn curve(&self, level: usize, entries: u64) -> FprCurve {
        let keys_per_filter = entries.min(self.partition_keys);
        match self.kind(level) {
            FilterKindChoice::Ribbon => FprCurve::ribbon(keys_per_filter),
            FilterKindChoice::BinaryFuse => FprCurve::binary_fuse(keys_per_filter),
            FilterKindChoice::SplitBlockBloom => FprCurve::SPLIT_BLOCK_BLOOM,
            FilterKindChoice::BlockedBloom | FilterKindChoice::None => FprCurve::BLOCKED_BLOOM,
        }
    }

    /// Checks the settings a database can be opened with.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for bits per key (fixed or average) not
    /// within `0 ..= 64`, or `partition_keys` of 0.
    pub(crate) fn validate(&self) -> Result<()> {
        check_bits(&self.bits_per_key, "")?;
        if let Some(range) = &self.range_filter {
            check_bits(&range.bits_per_key, "range filter ")?;
            if range.range_len == 0 {
                return Err(Error::InvalidArgument(
                    "range filter range_len must be at least 1".to_owned(),
                ));
            }
        }
        if matches!(self.prefix_extractor, Some(PrefixExtractor::Fixed(0))) {
            return Err(Error::InvalidArgument(
                "a fixed prefix extractor needs a length of at least 1".to_owned(),
            ));
        }
        if self.partition_keys < 1 {
            return Err(Error::InvalidArgument(
                "partition_keys must be at least 1".to_owned(),
            ));
        }
        Ok(())
    }
}

/// [`Error::InvalidArgument`] unless every bits per key (fixed, or Monkey's
/// average) of `bits` is within `0 ..= 64`; `what` names the filter.
fn check_bits(bits: &BitsPerKey, what: &str) -> Result<()> {
    let bits_ok = |b: f64| b.is_finite() && (0.0..=MAX_BITS_PER_KEY).contains(&b);
    let (ok, message) = match bits {
        BitsPerKey::PerLevel(per_level) => (
            per_level.values().iter().all(|&b| bits_ok(b)),
            "bits per key must be within 0 ..= 64",
        ),
        BitsPerKey::Monkey { average } => (
            bits_ok(*average),
            "Monkey average bits per key must be within 0 ..= 64",
        ),
    };
    if ok {
        Ok(())
    } else {
        Err(Error::InvalidArgument(format!("{what}{message}")))
    }
}

/// `bits` at `level`: the fixed value, or Monkey's share for `level` of
/// `average · sum(projected)` bits, each level on `curve(level, entries)`
/// (0 for a level `projected` does not reach).
fn level_bits(
    bits: &BitsPerKey,
    level: usize,
    projected: &[u64],
    curve: impl Fn(usize, u64) -> FprCurve,
) -> f64 {
    match bits {
        BitsPerKey::PerLevel(per_level) => *per_level.get(level),
        BitsPerKey::Monkey { average } => {
            let levels: Vec<(u64, FprCurve)> = projected
                .iter()
                .enumerate()
                .map(|(at, &n)| (n, curve(at, n)))
                .collect();
            let total_bits = average * projected.iter().sum::<u64>() as f64;
            let bits = monkey_bits_per_key(&levels, total_bits, MAX_MONKEY_BITS_PER_KEY);
            bits.get(level).copied().unwrap_or(0.0)
        }
    }
}

impl Default for FilterPolicy {
    fn default() -> Self {
        Self {
            bits_per_key: BitsPerKey::Monkey { average: 10.0 },
            ribbon_from_level: Some(2),
            fuse_from_level: None,
            split_block_to_level: None,
            optimize_filters_for_hits: false,
            partition_keys: DEFAULT_PARTITION_KEYS,
            prefix_extractor: None,
            whole_key_filtering: true,
            range_filter: Some(RangeFilterPolicy::default()),
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
    /// Binary Fuse, 16- or 8-bit fingerprints as the bits pay for (else
    /// Ribbon; blocked Bloom where construction fails).
    BinaryFuse,
    /// Split-block Bloom (256-bit blocks, one bit per lane).
    SplitBlockBloom,
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

    /// This choice with `shift` more bits per key ([`FilterPolicy::access_shift`]),
    /// kept within 1 and Monkey's cap; no filter stays none.
    pub(crate) fn shifted(self, shift: f64) -> Self {
        if !self.enabled() || shift == 0.0 {
            return self;
        }
        let bits = self.bits_per_key;
        Self {
            bits_per_key: (bits + shift).clamp(bits.min(1.0), bits.max(MAX_MONKEY_BITS_PER_KEY)),
            ..self
        }
    }

    /// Whether this choice builds a filter at all.
    pub(crate) fn enabled(&self) -> bool {
        self.kind != FilterKindChoice::None
            && self.bits_per_key.is_finite()
            && self.bits_per_key > 0.0
    }
}

/// The prefix and range filters a new table gets.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ScanFilterChoice {
    /// The extractor and the prefix filter's bits per key, if any.
    pub prefix: Option<(PrefixExtractor, f64)>,
    /// The range filter's bits per key; below 2, no range filter.
    pub range_bits_per_key: f64,
}

impl ScanFilterChoice {
    /// Neither filter.
    #[cfg(test)]
    pub(crate) const NONE: Self = Self {
        prefix: None,
        range_bits_per_key: 0.0,
    };
}

#[cfg(test)]
mod tests;
