//! What the planner knows about one value index: sizes and fill ratios.

use sift_filter::math::estimate_count;

use crate::hierarchy::InnerLevel;

/// A summary of one index's filters, computed by
/// [`ValueIndex::profile`](crate::ValueIndex::profile). Fields are public so
/// a caller can correct an estimate it knows better (e.g. set
/// `mean_leaf_entries` from the tables' real entry counts) or build
/// synthetic profiles to simulate the planner.
#[derive(Clone, Debug, PartialEq)]
pub struct Profile {
    /// Number of leaves (tables).
    pub leaves: usize,
    /// Bits per filter (`m`).
    pub bits: u64,
    /// Probes per value (`k`).
    pub probes: u32,
    /// Mean fraction of set bits over the leaves.
    pub mean_leaf_fill: f64,
    /// Mean over the leaves of `fill^k`: the chance a leaf falsely matches
    /// a value it does not hold (its FPR).
    pub mean_leaf_match: f64,
    /// Mean distinct values per leaf, estimated from each leaf's fill.
    pub mean_leaf_values: f64,
    /// Mean entries a scan of one leaf's table reads. Estimated as
    /// `mean_leaf_values` (one value per entry, duplicates unseen); the
    /// engine knows the real counts and may overwrite it.
    pub mean_leaf_entries: f64,
    /// Distinct values over all leaves, estimated from the root's fill
    /// (a lower bound once the root saturates).
    pub total_values: f64,
    /// The hierarchy's inner nodes per depth, root first.
    pub inner_levels: Vec<InnerLevel>,
    /// Words per row the flat layout ANDs for each probe.
    pub flat_words_per_row: usize,
}

impl Profile {
    /// Distinct values implied by `set_bits` of `m`, with a saturated array
    /// counted as if one bit were still clear (the exact estimate is then
    /// infinite, and useless to a planner).
    #[must_use]
    pub fn values_from_bits(m: u64, k: u32, set_bits: u64) -> f64 {
        estimate_count(m, k, set_bits.min(m.saturating_sub(1)))
    }

    /// The expected number of leaves that really hold a searched value,
    /// taking a value uniformly from the distinct values: each of the
    /// `total_values` appears in `leaves · mean_leaf_values /
    /// total_values` leaves on average. Unique values give 1; a value
    /// present in every table gives `leaves`.
    #[must_use]
    pub fn leaves_holding_value(&self) -> f64 {
        if self.leaves == 0 {
            return 0.0;
        }
        let n = self.leaves as f64;
        if self.total_values <= 0.0 {
            return 1.0_f64.min(n);
        }
        (n * self.mean_leaf_values / self.total_values).clamp(1.0, n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn profile(leaves: usize, per_leaf: f64, total: f64) -> Profile {
        Profile {
            leaves,
            bits: 1_000,
            probes: 7,
            mean_leaf_fill: 0.5,
            mean_leaf_match: 0.5f64.powi(7),
            mean_leaf_values: per_leaf,
            mean_leaf_entries: per_leaf,
            total_values: total,
            inner_levels: Vec::new(),
            flat_words_per_row: leaves.div_ceil(64),
        }
    }

    #[test]
    fn holders_range_from_one_to_every_leaf() {
        assert_eq!(profile(100, 50.0, 5_000.0).leaves_holding_value(), 1.0);
        assert_eq!(profile(100, 50.0, 50.0).leaves_holding_value(), 100.0);
        assert_eq!(profile(100, 50.0, 500.0).leaves_holding_value(), 10.0);
        assert_eq!(profile(0, 50.0, 500.0).leaves_holding_value(), 0.0);
        assert_eq!(profile(3, 0.0, 0.0).leaves_holding_value(), 1.0);
    }

    #[test]
    fn saturated_arrays_give_a_finite_estimate() {
        let full = Profile::values_from_bits(1_000, 7, 1_000);
        assert!(full.is_finite() && full > 900.0, "{full}");
        assert_eq!(Profile::values_from_bits(1_000, 7, 0), 0.0);
    }
}
