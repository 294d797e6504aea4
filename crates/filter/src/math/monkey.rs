//! Monkey's allocation of filter memory across the levels of an LSM tree
//! (Dayan, Athanassoulis & Idreos, SIGMOD 2017).
//!
//! A lookup for a missing key probes one filter per level, so its expected
//! wasted reads are `R = sum_i p_i`. With `b_i` bits per key a Bloom filter
//! has `p_i = e^{-b_i (ln 2)^2}`. Minimising `R` subject to the budget
//! `sum_i n_i b_i = M` (Lagrange) gives `p_i` proportional to `n_i`:
//!
//! `b_i = M/N' + (sum_j n_j ln n_j / N' - ln n_i) / (ln 2)^2`
//!
//! over the levels that get a filter (`N'` is their key count). A level
//! whose optimal `p_i` would reach 1 gets no filter at all, and the budget
//! is re-solved over the others. Larger levels get fewer bits per key: a
//! false positive costs one read wherever it happens, and bits spent on a
//! small level buy the same FPR drop for fewer keys.

use std::f64::consts::LN_2;

/// Bits per key for each level holding `entries[i]` keys, spending at most
/// `total_bits` in all and minimising the sum of the levels' Bloom FPRs.
/// Empty levels get 0 bits per key (they have no filter); so does every
/// level when the budget is not positive.
#[must_use]
pub fn monkey_bits_per_key(entries: &[u64], total_bits: f64) -> Vec<f64> {
    let mut active: Vec<bool> = entries.iter().map(|&n| n > 0).collect();
    let mut bits = vec![0.0; entries.len()];
    if !(total_bits > 0.0 && total_bits.is_finite()) {
        return bits;
    }
    // Each pass drops the levels that would get no bits; at most one pass
    // per level.
    for _ in 0..=entries.len() {
        let (keys, n_ln_n) = entries.iter().zip(&active).filter(|&(_, &on)| on).fold(
            (0.0, 0.0),
            |(keys, sum), (&n, _)| {
                let n = n as f64;
                (keys + n, sum + n * n.ln())
            },
        );
        if keys == 0.0 {
            return vec![0.0; entries.len()];
        }
        let ln2_sq = LN_2 * LN_2;
        let mut dropped = false;
        for ((b, &n), on) in bits.iter_mut().zip(entries).zip(active.iter_mut()) {
            if !*on {
                *b = 0.0;
                continue;
            }
            *b = total_bits / keys + (n_ln_n / keys - (n as f64).ln()) / ln2_sq;
            if *b <= 0.0 {
                *on = false;
                dropped = true;
            }
        }
        if !dropped {
            return bits;
        }
    }
    bits
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sum_fpr(entries: &[u64], bits: &[f64]) -> f64 {
        entries
            .iter()
            .zip(bits)
            .filter(|&(&n, _)| n > 0)
            .map(|(_, &b)| (-b * LN_2 * LN_2).exp())
            .sum()
    }

    fn spent(entries: &[u64], bits: &[f64]) -> f64 {
        entries.iter().zip(bits).map(|(&n, &b)| n as f64 * b).sum()
    }

    #[test]
    fn matches_the_closed_form_when_every_level_gets_bits() {
        let entries = [1_000u64, 10_000, 100_000, 1_000_000];
        let total = 10.0 * entries.iter().sum::<u64>() as f64;
        let bits = monkey_bits_per_key(&entries, total);
        // FPRs proportional to level sizes: p_i / n_i is the same everywhere.
        let ratios: Vec<f64> = entries
            .iter()
            .zip(&bits)
            .map(|(&n, &b)| (-b * LN_2 * LN_2).exp() / n as f64)
            .collect();
        for r in &ratios {
            assert!((r / ratios[0] - 1.0).abs() < 1e-9, "{ratios:?}");
        }
        // Size ratio 10 means ln(10) / (ln 2)^2 = 4.79 bits/key between levels.
        let step = 10f64.ln() / (LN_2 * LN_2);
        for pair in bits.windows(2) {
            assert!((pair[0] - pair[1] - step).abs() < 1e-9, "{bits:?}");
        }
        assert!((spent(&entries, &bits) - total).abs() < 1e-6 * total);
    }

    #[test]
    fn beats_the_uniform_allocation_at_the_same_memory() {
        let entries = [4_000u64, 40_000, 400_000, 4_000_000];
        let total = 8.0 * entries.iter().sum::<u64>() as f64;
        let monkey = monkey_bits_per_key(&entries, total);
        let uniform = vec![8.0; entries.len()];
        assert!(sum_fpr(&entries, &monkey) < 0.8 * sum_fpr(&entries, &uniform));
    }

    #[test]
    fn a_small_budget_drops_the_largest_level_and_respects_the_budget() {
        let entries = [1_000u64, 1_000_000];
        // 0.01 bits/key on average: spread over both levels, the large one
        // would get a negative share.
        let total = 0.01 * entries.iter().sum::<u64>() as f64;
        let bits = monkey_bits_per_key(&entries, total);
        assert_eq!(bits[1], 0.0, "{bits:?}");
        assert!(bits[0] > 0.0);
        assert!(spent(&entries, &bits) <= total * (1.0 + 1e-9));
        // The lone remaining level takes the whole budget.
        assert!((bits[0] - total / 1_000.0).abs() < 1e-9);
    }

    #[test]
    fn empty_levels_and_no_budget_get_nothing() {
        assert_eq!(monkey_bits_per_key(&[0, 0], 1_000.0), vec![0.0, 0.0]);
        assert_eq!(
            monkey_bits_per_key(&[10, 0, 10], 100.0),
            vec![5.0, 0.0, 5.0]
        );
        assert_eq!(monkey_bits_per_key(&[10, 20], 0.0), vec![0.0, 0.0]);
        assert_eq!(monkey_bits_per_key(&[10, 20], f64::NAN), vec![0.0, 0.0]);
        assert!(monkey_bits_per_key(&[], 10.0).is_empty());
    }
}
