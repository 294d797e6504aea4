//! Monkey's allocation of filter memory across the levels of an LSM tree
//! (Dayan, Athanassoulis & Idreos, "Monkey: Optimal Navigable Key-Value
//! Store", SIGMOD 2017), with each level on the FPR curve of its own kind
//! of filter.
//!
//! A lookup for a missing key probes one filter per level, and each false
//! positive costs one wasted read, so its expected wasted reads are
//! `R = sum_i p_i`. Level `i` holds `n_i` keys at `b_i` bits per key; the
//! filters share a budget of `M = sum_i n_i b_i` bits. Monkey minimises `R`
//! under that budget. The paper does so for Bloom filters,
//! `p = e^{-b (ln 2)^2}`; here each level brings its own curve of the form
//!
//! `p_i(b) = a_i · e^{-c_i b}`  ([`FprCurve`]: `a` scale, `c` decay)
//!
//! and the same Lagrange argument goes through. Setting the derivative of
//! `R + λ (sum_i n_i b_i - M)` to zero gives `a_i c_i e^{-c_i b_i} = λ n_i`:
//!
//! - `p_i = λ n_i / c_i`: a level's FPR grows with its size (a bit per key
//!   there costs `n_i` bits) and shrinks with what a bit buys (`c_i`);
//! - `b_i = (ln(a_i c_i / n_i) - ln λ) / c_i`;
//! - the budget fixes `λ`:
//!   `ln λ = (sum_i (n_i / c_i) ln(a_i c_i / n_i) - M) / sum_i (n_i / c_i)`.
//!
//! A level whose `b_i` comes out at or below 0 gets no filter, one above
//! the cap gets the cap, and `λ` is solved again over the others with the
//! capped levels' bits taken out of `M` (the Karush–Kuhn–Tucker conditions
//! of the bounded problem). Bits spent as a function of `ln λ` are
//! piecewise linear, with a knot where a level reaches a bound, so the
//! solution finds the piece that spends `M` and is then closed form.
//!
//! On one curve this is the paper's rule: neighbours whose sizes differ by
//! a factor `T` are `ln(T) / c` bits/key apart (4.79 for Bloom at `T = 10`).
//! On Ribbon's steeper curve they are 3.5 apart. Sized on Bloom's curve,
//! Ribbon levels are spread too far: the shallower ones get too many bits
//! and the blocked Bloom levels above them too few. For four levels at
//! size ratio 10 and 10 bits/key, blocked Bloom on the first two, each
//! level's own curve lowers the summed exact FPR by 10% (the engine's
//! `filter_policy` tests).

use std::f64::consts::LN_2;

/// A false-positive rate as a function of bits per key,
/// `p(b) = scale · e^{-decay · b}`: the model [`monkey_bits_per_key`]
/// optimises. A model, not a filter's exact FPR: see each constructor for
/// where it holds.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FprCurve {
    /// `a`: the FPR the curve extrapolates to at 0 bits per key.
    pub scale: f64,
    /// `c`: how fast the FPR falls, in nepers per bit per key.
    pub decay: f64,
}

impl FprCurve {
    /// A standard Bloom filter at its optimal probe count:
    /// `p = e^{-b (ln 2)^2}`, decay 0.4805 (see [`optimal_bits`]).
    ///
    /// [`optimal_bits`]: super::optimal_bits
    pub const BLOOM: Self = Self {
        scale: 1.0,
        decay: LN_2 * LN_2,
    };

    /// A blocked Bloom filter of 512-bit lines at its best probe count. Its
    /// exact FPR ([`blocked_bloom_fpr`]) is not an exponential: blocks of
    /// varying load cost it more the more bits it has, so its slope falls
    /// from 0.47 per bit/key near 4 bits/key to 0.27 near 30. These
    /// constants are the least-squares line through `ln p` at every whole
    /// bits/key from 4 to 24 (1.5e-1 to 5.3e-5), within a factor 1.32 of
    /// the exact FPR there (the test `blocked_bloom_constants_fit_the_formula`
    /// recomputes both).
    ///
    /// Monkey's result depends on the curve only near the bits/key each
    /// level gets. Measured against the allocation that is optimal under
    /// the exact curve (found numerically, the curve tabulated every 0.05
    /// bits/key; Ribbon levels on [`ribbon`](Self::ribbon)'s curve), these
    /// constants raise the summed FPR by, in %:
    ///
    /// | average bits/key | 2 | 5 | 10 | 16 |
    /// |---|---|---|---|---|
    /// | 3-5 levels, ratio 10, Ribbon from L1 or L2 | ≤ 0.01 | ≤ 0.02 | ≤ 0.05 | 0 |
    /// | 4 levels, ratio 10, blocked Bloom only | 1.2 | 0.8 | 0.2 | 0.2 |
    /// | 4 levels, ratio 4, blocked Bloom only | 3.2 | 1.4 | 0.4 | 0.1 |
    ///
    /// The largest losses are where levels sit at the low end of the fitted
    /// range or below it. Bloom's constant `(ln 2)^2` would do better there
    /// (0.12% or less) but lose up to 6% once Ribbon holds the deep levels,
    /// where the blocked Bloom levels above them get 25 to 32 bits/key.
    ///
    /// [`blocked_bloom_fpr`]: super::blocked_bloom_fpr
    pub const BLOCKED_BLOOM: Self = Self {
        scale: 0.5563,
        decay: 0.396_93,
    };

    /// A split-block Bloom filter (256-bit blocks, at most 8 probes) at its
    /// best probe count: the least-squares line through `ln p` of its
    /// exact FPR ([`split_block_bloom_fpr_at`]) at every whole bits/key from
    /// 4 to 24 (1.5e-1 to 1.6e-4), within a factor 1.53 of it there (the
    /// test `split_block_bloom_constants_fit_the_formula` recomputes both).
    /// Flatter than the blocked Bloom's: smaller blocks, and the probes
    /// stop at 8 from 16 bits/key.
    ///
    /// [`split_block_bloom_fpr_at`]: super::split_block_bloom_fpr_at
    pub const SPLIT_BLOCK_BLOOM: Self = Self {
        scale: 0.390_75,
        decay: 0.341_80,
    };

    /// A Ribbon filter whose filters hold about `keys_per_filter` keys: it
    /// stores `b / (1 + ε)` result bits per slot, `1 + ε` the slots per key
    /// banding needs (1.027 at 16,384 keys, 1.047 at 1,000,000; see
    /// `ribbon/config.rs`), and a non-member passes with probability 2 to
    /// minus that: `p = e^{-b ln 2 / (1 + ε)}`. The layout the builder
    /// plans ([`ribbon_fpr`]) is up to 6% above it between whole numbers of
    /// result bits.
    ///
    /// [`ribbon_fpr`]: super::ribbon_fpr
    #[must_use]
    pub fn ribbon(keys_per_filter: u64) -> Self {
        Self {
            scale: 1.0,
            decay: LN_2 / crate::ribbon::slots_per_key(keys_per_filter),
        }
    }

    /// A binary fuse filter ([`BinaryFuseFilter`](crate::BinaryFuseFilter))
    /// of about `keys_per_filter` keys, as if its fingerprints could have
    /// any width: `s` bits per fingerprint cost `s · f` bits per key, `f`
    /// the slots per key ([`binary_fuse_size_factor`]: 1.125 from a
    /// million keys, 1.235 at 16,384), and pass a non-member with
    /// probability `2^-s`, so `p = e^{-b ln 2 / f}`. Fingerprints are 8 or
    /// 16 bits wide: a table given `b` bits per key takes the widest that
    /// `b` pays for and leaves the rest unspent, so its FPR steps (to
    /// `2^-8` from about 9 bits per key, `2^-16` from about 18) and lies
    /// at or above this curve between the steps.
    ///
    /// [`binary_fuse_size_factor`]: super::binary_fuse_size_factor
    #[must_use]
    pub fn binary_fuse(keys_per_filter: u64) -> Self {
        Self {
            scale: 1.0,
            decay: LN_2 / super::binary_fuse_size_factor(keys_per_filter),
        }
    }

    /// A range filter ([`RangeFilter`](crate::RangeFilter)) asked about
    /// empty ranges of `range_len` keys (0 counts as 1): its bound
    /// `ℓ / 2^{b-2}` ([`range_filter_fpr`]) is `4ℓ · e^{-b ln 2}`, exactly,
    /// for every `b`. A bound, not an estimate: on keys spread at random
    /// the FPR is `1 - e^{-ℓ/2^{b-2}}`, a little under it, and ranges that
    /// fall between keys of one block are never false positives, so
    /// clustered keys do better. A range filter needs at least 2 bits per
    /// key; a level given less must go without.
    ///
    /// [`range_filter_fpr`]: super::range_filter_fpr
    #[must_use]
    pub fn range_filter(range_len: u64) -> Self {
        Self {
            scale: 4.0 * range_len.max(1) as f64,
            decay: LN_2,
        }
    }

    /// The modelled FPR at `bits_per_key`: `min(1, a·e^{-c·b})`, and 1 (no
    /// filter) at 0 bits or fewer.
    #[must_use]
    pub fn fpr(&self, bits_per_key: f64) -> f64 {
        if bits_per_key > 0.0 {
            (self.scale * (-self.decay * bits_per_key).exp()).min(1.0)
        } else {
            1.0
        }
    }

    /// Whether the curve can be optimised over: scale and decay finite and
    /// positive.
    fn usable(&self) -> bool {
        [self.scale, self.decay]
            .iter()
            .all(|x| x.is_finite() && *x > 0.0)
    }
}

/// A level in the optimisation: its keys, the decay of its curve, and
/// `t = ln(a c / n)`, so that `b = (t - ln λ) / c` between the bounds.
struct Level {
    at: usize,
    keys: f64,
    decay: f64,
    t: f64,
}

impl Level {
    /// Bits per key at `mu = ln λ`, within `0 ..= cap`.
    fn bits(&self, mu: f64, cap: f64) -> f64 {
        ((self.t - mu) / self.decay).clamp(0.0, cap)
    }
}

/// Bits per key for each level, `levels[i] = (keys, curve)`, spending
/// `total_bits` in all (or `max_bits_per_key` on every level, if that is
/// less) so that the sum of the levels' modelled FPRs is smallest; see the
/// module documentation for the solution.
///
/// No level gets more than `max_bits_per_key` (pass `f64::INFINITY` for no
/// cap). Levels without keys, or whose curve's scale or decay is not finite
/// and positive, get 0 bits per key (no filter); so does every level when
/// the budget or the cap is not positive.
#[must_use]
pub fn monkey_bits_per_key(
    levels: &[(u64, FprCurve)],
    total_bits: f64,
    max_bits_per_key: f64,
) -> Vec<f64> {
    let mut bits = vec![0.0; levels.len()];
    let cap = max_bits_per_key;
    if !(total_bits > 0.0 && total_bits.is_finite() && cap > 0.0) {
        return bits;
    }
    let live: Vec<Level> = levels
        .iter()
        .enumerate()
        .filter(|(_, (n, curve))| *n > 0 && curve.usable())
        .map(|(at, &(n, curve))| {
            let keys = n as f64;
            Level {
                at,
                keys,
                decay: curve.decay,
                t: (curve.scale * curve.decay / keys).ln(),
            }
        })
        .collect();
    let mu = solve_mu(&live, cap, total_bits);
    for level in &live {
        if let Some(b) = bits.get_mut(level.at) {
            *b = mu.map_or(cap, |mu| level.bits(mu, cap));
        }
    }
    bits
}

/// `ln λ` at which the levels spend `total` bits, or `None` when the cap
/// on every level spends no more than that (every level then gets the cap).
fn solve_mu(live: &[Level], cap: f64, total: f64) -> Option<f64> {
    let spent = |mu: f64| -> f64 { live.iter().map(|l| l.keys * l.bits(mu, cap)).sum() };
    // Spending falls with `mu`, linearly between the knots where a level
    // leaves the cap (`t - c·cap`, none for an infinite cap) or reaches 0
    // (`t`). Past the last knot every level is at 0 and spends nothing, so
    // some knot spends no more than `total`: the first one ends the piece.
    let mut knots: Vec<f64> = live
        .iter()
        .flat_map(|l| [l.t - l.decay * cap, l.t])
        .filter(|k| k.is_finite())
        .collect();
    knots.sort_by(f64::total_cmp);
    let end = knots.iter().position(|&k| spent(k) <= total)?;
    let hi = *knots.get(end)?;
    let inside = match end.checked_sub(1).and_then(|i| knots.get(i)) {
        Some(lo) => 0.5 * (lo + hi),
        None => hi - 1.0,
    };
    // On that piece each level stays free, at the cap or at 0; the budget
    // left to the free ones fixes `mu` in closed form.
    let (mut weight, mut weighted_t, mut fixed) = (0.0, 0.0, 0.0);
    for level in live {
        let b = level.bits(inside, cap);
        if b >= cap {
            fixed += level.keys * cap;
        } else if b > 0.0 {
            weight += level.keys / level.decay;
            weighted_t += level.keys / level.decay * level.t;
        }
    }
    if weight > 0.0 {
        Some((weighted_t - (total - fixed)) / weight)
    } else if end == 0 {
        // Before the first knot, with none free, every level is capped.
        None
    } else {
        Some(hi)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::math::{blocked_bloom_fpr, range_filter_fpr, ribbon_fpr};

    fn on(curve: FprCurve, entries: &[u64]) -> Vec<(u64, FprCurve)> {
        entries.iter().map(|&n| (n, curve)).collect()
    }

    fn sum_fpr(levels: &[(u64, FprCurve)], bits: &[f64]) -> f64 {
        levels
            .iter()
            .zip(bits)
            .filter(|&(&(n, _), _)| n > 0)
            .map(|(&(_, curve), &b)| curve.fpr(b))
            .sum()
    }

    fn spent(levels: &[(u64, FprCurve)], bits: &[f64]) -> f64 {
        levels
            .iter()
            .zip(bits)
            .map(|(&(n, _), &b)| n as f64 * b)
            .sum()
    }

    #[test]
    fn one_curve_gives_the_papers_closed_form() {
        let entries = [1_000u64, 10_000, 100_000, 1_000_000];
        let levels = on(FprCurve::BLOOM, &entries);
        let total = 10.0 * entries.iter().sum::<u64>() as f64;
        let bits = monkey_bits_per_key(&levels, total, f64::INFINITY);
        // b_i = M/N + (sum_j n_j ln n_j / N - ln n_i) / (ln 2)^2.
        let n: f64 = entries.iter().map(|&n| n as f64).sum();
        let n_ln_n: f64 = entries.iter().map(|&n| n as f64 * (n as f64).ln()).sum();
        for (&e, &b) in entries.iter().zip(&bits) {
            let want = total / n + (n_ln_n / n - (e as f64).ln()) / (LN_2 * LN_2);
            assert!((b - want).abs() < 1e-9, "{bits:?}");
        }
        // Size ratio 10 means ln(10) / (ln 2)^2 = 4.79 bits/key between levels.
        let step = 10f64.ln() / (LN_2 * LN_2);
        for pair in bits.windows(2) {
            assert!((pair[0] - pair[1] - step).abs() < 1e-9, "{bits:?}");
        }
        assert!((spent(&levels, &bits) - total).abs() < 1e-9 * total);
    }

    #[test]
    fn mixed_curves_meet_the_lagrange_condition() {
        // Two blocked Bloom levels over three Ribbon levels.
        let ribbon = FprCurve::ribbon(1_000_000);
        let levels = [
            (10_000u64, FprCurve::BLOCKED_BLOOM),
            (100_000, FprCurve::BLOCKED_BLOOM),
            (1_000_000, ribbon),
            (10_000_000, ribbon),
            (100_000_000, ribbon),
        ];
        let total = 8.0 * levels.iter().map(|l| l.0).sum::<u64>() as f64;
        let bits = monkey_bits_per_key(&levels, total, f64::INFINITY);
        assert!((spent(&levels, &bits) - total).abs() < 1e-9 * total);
        // c_i p_i / n_i = λ on every level that got bits.
        let lambda: Vec<f64> = levels
            .iter()
            .zip(&bits)
            .map(|(&(n, curve), &b)| curve.decay * curve.fpr(b) / n as f64)
            .collect();
        for l in &lambda {
            assert!((l / lambda[0] - 1.0).abs() < 1e-9, "{lambda:?}");
        }
        // Ribbon neighbours are ln(10)/c apart, c = ln 2 / 1.047.
        let step = 10f64.ln() / ribbon.decay;
        assert!((3.4..3.5).contains(&step), "{step}");
        assert!((bits[2] - bits[3] - step).abs() < 1e-9, "{bits:?}");
        assert!((bits[3] - bits[4] - step).abs() < 1e-9, "{bits:?}");
    }

    #[test]
    fn beats_the_uniform_allocation_at_the_same_memory() {
        let levels = on(FprCurve::BLOOM, &[4_000, 40_000, 400_000, 4_000_000]);
        let total = 8.0 * levels.iter().map(|l| l.0).sum::<u64>() as f64;
        let monkey = monkey_bits_per_key(&levels, total, f64::INFINITY);
        let uniform = vec![8.0; levels.len()];
        assert!(sum_fpr(&levels, &monkey) < 0.8 * sum_fpr(&levels, &uniform));
    }

    #[test]
    fn a_small_budget_drops_the_largest_level_and_respects_the_budget() {
        let levels = on(FprCurve::BLOOM, &[1_000, 1_000_000]);
        // 0.01 bits/key on average: spread over both levels, the large one
        // would get a negative share.
        let total = 0.01 * 1_001_000.0;
        let bits = monkey_bits_per_key(&levels, total, f64::INFINITY);
        assert_eq!(bits[1], 0.0, "{bits:?}");
        // The lone remaining level takes the whole budget.
        assert!((bits[0] - total / 1_000.0).abs() < 1e-9, "{bits:?}");
    }

    #[test]
    fn the_cap_passes_the_rest_of_the_budget_on() {
        let levels = on(FprCurve::BLOOM, &[100, 1_000_000]);
        // Uncapped, the small level would get 4.79·3 bits/key more than
        // the large one: 23.8 against 9.4.
        let total = 9.5 * 1_000_100.0;
        let free = monkey_bits_per_key(&levels, total, f64::INFINITY);
        assert!(free[0] > 20.0, "{free:?}");
        let capped = monkey_bits_per_key(&levels, total, 16.0);
        assert_eq!(capped[0], 16.0, "{capped:?}");
        assert!(capped[1] > free[1], "{capped:?} vs {free:?}");
        assert!((spent(&levels, &capped) - total).abs() < 1e-9 * total);
        // More than the cap everywhere: every level gets the cap.
        assert_eq!(
            monkey_bits_per_key(&levels, 20.0 * 1_000_100.0, 16.0),
            vec![16.0, 16.0]
        );
    }

    #[test]
    fn empty_levels_no_budget_and_bad_curves_get_nothing() {
        let bloom = FprCurve::BLOOM;
        assert_eq!(
            monkey_bits_per_key(&on(bloom, &[0, 0]), 1_000.0, 32.0),
            vec![0.0, 0.0]
        );
        let bits = monkey_bits_per_key(&on(bloom, &[10, 0, 10]), 100.0, 32.0);
        assert_eq!(bits[1], 0.0);
        assert!((bits[0] - 5.0).abs() < 1e-12 && (bits[2] - 5.0).abs() < 1e-12);
        for total in [0.0, -1.0, f64::NAN, f64::INFINITY] {
            assert_eq!(
                monkey_bits_per_key(&on(bloom, &[10, 20]), total, 32.0),
                vec![0.0, 0.0]
            );
        }
        assert_eq!(
            monkey_bits_per_key(&on(bloom, &[10, 20]), 100.0, 0.0),
            vec![0.0, 0.0]
        );
        let flat = FprCurve {
            scale: 1.0,
            decay: 0.0,
        };
        let bits = monkey_bits_per_key(&[(10, flat), (10, bloom)], 100.0, 32.0);
        assert_eq!(bits[0], 0.0);
        assert!((bits[1] - 10.0).abs() < 1e-12, "{bits:?}");
        assert!(monkey_bits_per_key(&[], 10.0, 32.0).is_empty());
    }

    /// The blocked FPR at its best probe count, for large tables.
    fn blocked_best(bits_per_key: f64) -> f64 {
        let m = 512 * 10_000_000;
        let n = (m as f64 / bits_per_key).round() as u64;
        (1..=24)
            .map(|k| blocked_bloom_fpr(m, n, k, 512))
            .fold(1.0, f64::min)
    }

    #[test]
    fn blocked_bloom_constants_fit_the_formula() {
        let points: Vec<(f64, f64)> = (4..=24)
            .map(|b| (f64::from(b), blocked_best(f64::from(b)).ln()))
            .collect();
        let (decay, scale, worst) = fitted(&points);
        let curve = FprCurve::BLOCKED_BLOOM;
        assert!((decay - curve.decay).abs() < 1e-5, "decay {decay}");
        assert!((scale / curve.scale - 1.0).abs() < 1e-4, "scale {scale}");
        assert!(worst < 1.32, "{worst}");
        // Flatter than Bloom's curve: blocking costs more the more bits.
        assert!(curve.decay < FprCurve::BLOOM.decay);
    }

    /// The least-squares line `(decay, scale)` through `(b, ln p(b))`, and
    /// the largest factor between the line and `p` at those points.
    fn fitted(points: &[(f64, f64)]) -> (f64, f64, f64) {
        let count = points.len() as f64;
        let mean_b = points.iter().map(|p| p.0).sum::<f64>() / count;
        let mean_ln = points.iter().map(|p| p.1).sum::<f64>() / count;
        let cov: f64 = points
            .iter()
            .map(|p| (p.0 - mean_b) * (p.1 - mean_ln))
            .sum();
        let var: f64 = points.iter().map(|p| (p.0 - mean_b).powi(2)).sum();
        let decay = -cov / var;
        let scale = (mean_ln + decay * mean_b).exp();
        let worst = points
            .iter()
            .map(|&(b, ln_p)| (scale.ln() - decay * b - ln_p).abs())
            .fold(0.0, f64::max);
        (decay, scale, worst.exp())
    }

    #[test]
    fn split_block_bloom_constants_fit_the_formula() {
        use super::super::{split_block_bloom_fpr_at, split_block_bloom_probes};
        let points: Vec<(f64, f64)> = (4..=24)
            .map(f64::from)
            .map(|b| {
                (
                    b,
                    split_block_bloom_fpr_at(b, split_block_bloom_probes(b)).ln(),
                )
            })
            .collect();
        let (decay, scale, worst) = fitted(&points);
        let curve = FprCurve::SPLIT_BLOCK_BLOOM;
        assert!((decay - curve.decay).abs() < 1e-5, "decay {decay}");
        assert!((scale / curve.scale - 1.0).abs() < 1e-4, "scale {scale}");
        assert!(worst < 1.53, "{worst}");
        assert!(curve.decay < FprCurve::BLOCKED_BLOOM.decay);
    }

    #[test]
    fn range_filter_curve_is_the_bound() {
        for len in [0u64, 1, 16, 1_024] {
            let curve = FprCurve::range_filter(len);
            for tenth in 1..=400 {
                let b = f64::from(tenth) / 10.0;
                let (model, bound) = (curve.fpr(b), range_filter_fpr(len, b));
                assert!((model - bound).abs() <= 1e-12 * bound, "{len} {b}");
            }
        }
        // Neighbours a size ratio T apart sit log2(T) bits/key apart.
        let curve = FprCurve::range_filter(16);
        let levels = [(10_000u64, curve), (100_000, curve)];
        let bits = monkey_bits_per_key(&levels, 12.0 * 110_000.0, f64::INFINITY);
        assert!((bits[0] - bits[1] - 10f64.log2()).abs() < 1e-9, "{bits:?}");
    }

    #[test]
    fn ribbon_curve_follows_the_planned_layout() {
        let n = 1_000_000;
        let curve = FprCurve::ribbon(n);
        assert!((LN_2 / curve.decay - 1.047).abs() < 1e-3, "{curve:?}");
        for tenth in 20..=200 {
            let b = f64::from(tenth) / 10.0;
            let ratio = ribbon_fpr(n, b) / curve.fpr(b);
            // The layout interpolates between whole result bits (1.5/√2
            // above at the midpoint) and rounds up to whole blocks of slots.
            assert!((0.999..1.065).contains(&ratio), "{b}: {ratio}");
        }
        // Smaller filters band with less overhead: a steeper curve.
        assert!(FprCurve::ribbon(16_384).decay > curve.decay);
    }
}
