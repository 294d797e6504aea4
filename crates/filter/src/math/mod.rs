//! Sizing math, apart from any bit twiddling.
//!
//! Notation: `n` keys, `m` bits, `k` probes, `p` false-positive rate.
//! The classic formulas (Bloom 1970; Broder & Mitzenmacher 2004):
//!
//! - `p = (1 - e^{-kn/m})^k`                    [`bloom_fpr`]
//! - `m = -n ln p / (ln 2)^2`                   [`optimal_bits`]
//! - `k = (m / n) ln 2`                         [`optimal_probes`]
//! - `n = -m (ln 2)^2 / ln p` at optimal `k`,
//!   or `n = -(m / k) ln(1 - p^{1/k})` for a given `k` [`capacity`]
//!
//! The fill ratio `X/m` of a Bloom filter after `n` distinct inserts is
//! `1 - e^{-kn/m}` in expectation, which inverts to the distinct-count
//! estimator of Swamidass & Baldi (2007), [`estimate_count`].
//!
//! A partitioned Bloom filter gives each of its `k` probes its own `m/k`
//! bits, so every key sets exactly one bit per partition:
//! `p = (1 - (1 - k/m)^n)^k` [`partitioned_bloom_fpr`], inverted by
//! [`partitioned_estimate_count`].
//!
//! A blocked Bloom filter keeps each key's `k` bits in one block of `B`
//! bits (Putze, Sanders & Singler 2007). Its FPR [`blocked_bloom_fpr`] is
//! `E[(X/B)^k]` over the binomial load of a block and the occupancy
//! (balls-into-bins) distribution of its set-bit count `X`;
//! [`blocked_bloom_fpr_std_dev`] is one filter's spread around it.
//!
//! A split-block Bloom filter keeps each key's `k ≤ 8` bits in distinct
//! 32-bit lanes of one 256-bit block: [`split_block_bloom_fpr`] is exact
//! for its layout (inclusion-exclusion over the lanes a non-member finds
//! clear), and [`split_block_bloom_probes`] picks `k`.
//!
//! A Ribbon filter of `b` bits/key over `n` keys stores about
//! `b / (1 + ε)` result bits per slot, `ε` its banding overhead, and a
//! non-member matches them with probability `2^{-b/(1+ε)}`: [`ribbon_fpr`]
//! gives the exact figure for the layout the builder plans.
//!
//! An XOR filter or binary fuse filter of `s`-bit fingerprints passes a
//! non-member with probability `2^-s` ([`xor_family_fpr`]) at a size set
//! by peeling: [`xor_array_length`] (`1.23·n + 32` slots),
//! [`binary_fuse_array_length`] (about `1.125·n` from a million keys on,
//! in segments of [`binary_fuse_segment_length`]).
//!
//! A range filter of `B` bits/key (Grafite) answers an empty range of `ℓ`
//! keys falsely with probability at most `ℓ / 2^{B-2}`, for any keys:
//! [`range_filter_fpr`], inverted by [`range_filter_bits_per_key`]; its
//! hash space is [`range_filter_hash_space`].
//!
//! Across the levels of an LSM tree, [`monkey_bits_per_key`] spends a memory
//! budget where it removes the most expected reads (Monkey, SIGMOD 2017),
//! with each level's own [`FprCurve`].

mod fuse;
mod monkey;
mod range;
mod split;

pub use fuse::{
    BINARY_FUSE_MAX_LOG2_SEGMENT_LENGTH, binary_fuse_array_length, binary_fuse_bits_per_key,
    binary_fuse_segment_count, binary_fuse_segment_length, binary_fuse_size_factor,
    xor_array_length, xor_bits_per_key, xor_block_length, xor_family_fpr,
};
pub use monkey::{FprCurve, monkey_bits_per_key};
pub use range::{
    RANGE_FILTER_MAX_HASH_SPACE, range_filter_bits_per_key, range_filter_fpr,
    range_filter_hash_space,
};
pub use split::{split_block_bloom_fpr, split_block_bloom_fpr_at, split_block_bloom_probes};

use std::f64::consts::LN_2;

/// Expected FPR of a standard Bloom filter: `(1 - e^{-kn/m})^k`.
#[must_use]
pub fn bloom_fpr(m: u64, n: u64, k: u32) -> f64 {
    if m == 0 {
        return 1.0;
    }
    let fill = 1.0 - (-(f64::from(k)) * n as f64 / m as f64).exp();
    fill.powi(k as i32)
}

/// Bits that reach FPR `p` for `n` keys at the optimal probe count:
/// `m = ceil(-n ln p / (ln 2)^2)`. `p` is clamped to `(0, 1)`.
#[must_use]
pub fn optimal_bits(n: u64, p: f64) -> u64 {
    let p = clamp_fpr(p);
    (-(n as f64) * p.ln() / (LN_2 * LN_2)).ceil() as u64
}

/// The probe count that minimises the FPR of `m` bits holding `n` keys:
/// `k = round((m / n) ln 2)`, at least 1. Rounding (not truncating) matches
/// the worked examples users know: 10 bits/key gives 7 (6.93).
#[must_use]
pub fn optimal_probes(m: u64, n: u64) -> u32 {
    if n == 0 {
        return 1;
    }
    ((m as f64 / n as f64) * LN_2).round().clamp(1.0, 64.0) as u32
}

/// The probe count for target FPR `p` at optimal sizing: `k = ceil(-log2 p)`.
/// 1% gives 7, 1e-6 gives 20.
#[must_use]
pub fn probes_for_fpr(p: f64) -> u32 {
    (-clamp_fpr(p).log2()).ceil().clamp(1.0, 64.0) as u32
}

/// How many keys `m` bits with `k` probes hold before the FPR exceeds `p`:
/// `n = -(m / k) ln(1 - p^{1/k})`.
#[must_use]
pub fn capacity(m: u64, k: u32, p: f64) -> u64 {
    let p = clamp_fpr(p);
    let k = f64::from(k.max(1));
    (-(m as f64 / k) * (1.0 - p.powf(1.0 / k)).ln()).floor() as u64
}

/// Distinct keys implied by `set_bits` of `m` bits with `k` probes:
/// `n = -(m / k) ln(1 - X/m)` (Swamidass & Baldi 2007). Infinite when every
/// bit is set: the filter then holds no information.
#[must_use]
pub fn estimate_count(m: u64, k: u32, set_bits: u64) -> f64 {
    if m == 0 {
        return 0.0;
    }
    let fill = set_bits as f64 / m as f64;
    -(m as f64 / f64::from(k.max(1))) * (1.0 - fill).ln()
}

/// FPR of a filter whose probes land independently in bit arrays with the
/// measured fill ratio: `fill^k`.
#[must_use]
pub fn fpr_from_fill(fill: f64, k: u32) -> f64 {
    fill.clamp(0.0, 1.0).powi(k as i32)
}

/// Expected FPR of a blocked Bloom filter (Putze, Sanders & Singler 2007):
/// `m` bits in blocks of `B = block_bits`; each key sets `k` bits of the one
/// block it picks, and a query tests `k` bits of its own block.
///
/// With every block choice and probe independent and uniform:
/// - the block a non-member picks holds `L ~ Binomial(n, B/m)` keys;
/// - those keys throw `kL` probes (with replacement) at its `B` bits, so the
///   number `X` of distinct bits set has the occupancy (balls-into-bins)
///   distribution, built exactly one probe at a time: a probe lands on one
///   of the `x` set bits with probability `x/B`, else it sets a new one;
/// - the query's `k` probes all find set bits with probability `(X/B)^k`.
///
/// So `p = E[(X/B)^k]`, over both the load and the occupancy. Raising the
/// expected fill to the `k`-th power instead,
/// `E_L[(1 - (1 - 1/B)^{kL})^k]`, ignores the spread of `X` and, as
/// `E[f^k] > E[f]^k` (Jensen), reads low: 1.2% at 10 bits/key, 3.3% at
/// 20, enough to prefer 7 probes at 10 bits/key where 6 are better.
///
/// The binomial load is exact at every size, down to one block (`m ≤ B`
/// puts all `n` keys in it); for large tables it is indistinguishable from
/// its Poisson(`nB/m`) limit. If `m` is not a multiple of `B` a key lands
/// in a given block with probability `min(1, B/m)`. The sums stop where
/// what is left is below 1e-15 relative; the result agreed with an
/// inclusion-exclusion evaluation of the same model to 4e-14. A filter
/// whose probes are not independent (e.g. derived from one seed) departs
/// from the model by that dependence.
///
/// Cost: `O(B)` memory and `O(B)` time per probe of a block's keys, for
/// cache-line blocks (`B` in the hundreds) about 0.3 ms at 10 bits/key and
/// under 2 ms at any load (a block that fills ends the sum). 1 if `m`,
/// `block_bits` or `k` is 0.
#[must_use]
pub fn blocked_bloom_fpr(m: u64, n: u64, k: u32, block_bits: u32) -> f64 {
    let [mean] = block_fpr_moments(m, n, k, block_bits, [1]);
    mean
}

/// Standard deviation of the FPR of one blocked Bloom filter around
/// [`blocked_bloom_fpr`], over the random choice of its `n` keys. Its FPR
/// is the mean of its `m/B` blocks' FPRs `(X/B)^k`, each of variance
/// `E[(X/B)^{2k}] - p²`, so the deviation is `sqrt(that / (m/B))`. Loads
/// are treated as independent; they sum to `n`, which correlates them
/// slightly negatively, so this overstates the spread a little.
#[must_use]
pub fn blocked_bloom_fpr_std_dev(m: u64, n: u64, k: u32, block_bits: u32) -> f64 {
    let [mean, square] = block_fpr_moments(m, n, k, block_bits, [1, 2]);
    let blocks = (m as f64 / f64::from(block_bits.max(1))).max(1.0);
    ((square - mean * mean).max(0.0) / blocks).sqrt()
}

/// Expected FPR of the Ribbon filter that
/// [`RibbonBuilder::new`](crate::RibbonBuilder::new)`(bits_per_key)` plans
/// for `n` distinct keys, before any fallback to Bloom: `2^{-c}` averaged
/// over the blocks of its layout, where `c` is the whole number of result
/// bits a block stores. Between whole numbers of columns it interpolates
/// linearly, so it lies up to 6% above `2^{-b/(1+ε)}` (`1.5/√2` at the
/// midpoint). 1 past the largest Ribbon (2^40 slots), 0 for no keys.
#[must_use]
pub fn ribbon_fpr(n: u64, bits_per_key: f64) -> f64 {
    crate::ribbon::planned_fpr(n, bits_per_key).unwrap_or(1.0)
}

/// Expected FPR of a partitioned Bloom filter: `m` bits in `k` partitions of
/// `m/k` bits, one probe per partition. A partition's bit stays clear after
/// `n` keys with probability `(1 - k/m)^n`, and the `k` partitions are filled
/// by independent probes, so `p = (1 - (1 - k/m)^n)^k` (Kirsch & Mitzenmacher
/// 2006; Almeida et al. 2007 for the sliced stages of a scalable filter). Never below [`bloom_fpr`] (as `(1 - x)^n ≤ e^{-xn}`); at the
/// optimal load the relative gap is about `ln 2 · k² / 2m`, 0.24% for `k = 7`
/// and partitions of 1,000 bits.
#[must_use]
pub fn partitioned_bloom_fpr(m: u64, n: u64, k: u32) -> f64 {
    if m == 0 {
        return 1.0;
    }
    if n == 0 {
        return 0.0;
    }
    let per_key = (f64::from(k) / m as f64).min(1.0);
    // (1 - q)^n as exp(n·ln(1 - q)), with ln_1p accurate for small q.
    let clear = (n as f64 * (-per_key).ln_1p()).exp();
    (1.0 - clear).powi(k as i32)
}

/// Distinct keys implied by `set_bits` of a partitioned Bloom filter of `m`
/// bits in `k` partitions: the expected fill `1 - (1 - k/m)^n` solved for
/// `n`, i.e. `ln(1 - X/m) / ln(1 - k/m)`. Infinite when every bit is set.
#[must_use]
pub fn partitioned_estimate_count(m: u64, k: u32, set_bits: u64) -> f64 {
    if m == 0 || set_bits == 0 {
        return 0.0;
    }
    if set_bits >= m {
        return f64::INFINITY;
    }
    let fill = set_bits as f64 / m as f64;
    let per_key = (f64::from(k.max(1)) / m as f64).min(1.0);
    // One-bit partitions (k = m) fill on the first key: no count is
    // recoverable from a partial fill, and the ratio below is then 0.
    ((-fill).ln_1p() / (-per_key).ln_1p()).max(0.0)
}

fn clamp_fpr(p: f64) -> f64 {
    if p.is_nan() {
        return 0.5;
    }
    p.clamp(1e-300, 1.0 - 1e-12)
}

/// Bytes in `bits` bits rounded up to whole bytes.
#[must_use]
pub const fn bits_to_bytes(bits: u64) -> u64 {
    bits.div_ceil(8)
}

/// Relative size of the load tail left out of [`block_fpr_moments`]: below
/// the rounding error of the sum itself.
const LOAD_TAIL: f64 = 1e-15;

/// Probability below which the least-filled states of an [`Occupancy`] are
/// dropped, which keeps a heavily loaded block's distribution a few states
/// wide. Each state goes at most once, so at most `B · 1e-30` of mass goes,
/// and it would have stayed below the states kept: a moment moves by under
/// 1e-27 relative.
const NEGLIGIBLE: f64 = 1e-30;

/// `E[f^j]` for each `j` in `powers`, where `f = (X/B)^k` is the FPR of the
/// block a non-member lands in (see [`blocked_bloom_fpr`]). Sums over loads
/// `L = 0, 1, ...`, adding `k` probes to one occupancy distribution per
/// step, until the rest of the binomial tail (whose blocks have FPR at most
/// 1) is below `LOAD_TAIL` of the smallest moment, or the block is full.
fn block_fpr_moments<const N: usize>(
    m: u64,
    n: u64,
    k: u32,
    block_bits: u32,
    powers: [u32; N],
) -> [f64; N] {
    if m == 0 || block_bits == 0 || k == 0 {
        return [1.0; N];
    }
    let mut block = Occupancy::new(block_bits, k, powers);
    let share = f64::from(block_bits) / m as f64;
    if share >= 1.0 {
        // One block holds every key.
        for _ in 0..n {
            if block.is_full() {
                break;
            }
            block.add_key();
        }
        return block.moments();
    }
    // Binomial(n, share) pmf in log space, so that a mean load in the
    // hundreds (a fraction of a bit per key) does not underflow `(1-s)^n`.
    let log_odds = share.ln() - (-share).ln_1p();
    let mut log_pmf = n as f64 * (-share).ln_1p();
    let mut totals = [0.0; N];
    let mut mass = 0.0;
    for load in 0..=n {
        let pmf = log_pmf.exp();
        for (total, moment) in totals.iter_mut().zip(block.moments()) {
            *total += pmf * moment;
        }
        mass += pmf;
        if block.is_full() {
            // Every heavier block is full too: its FPR is 1.
            let rest = (1.0 - mass).max(0.0);
            totals.iter_mut().for_each(|total| *total += rest);
            break;
        }
        // Past the mode successive terms shrink by at least `ratio`, so the
        // tail after this load is below `pmf · ratio / (1 - ratio)`.
        let log_ratio = ((n - load) as f64 / (load + 1) as f64).ln() + log_odds;
        if log_ratio < 0.0 {
            let ratio = log_ratio.exp();
            let smallest = totals.iter().copied().fold(f64::INFINITY, f64::min);
            if pmf * ratio / (1.0 - ratio) <= LOAD_TAIL * smallest {
                break;
            }
        }
        log_pmf += log_ratio;
        block.add_key();
    }
    totals
}

/// The distribution of the number of set bits in one block of `B` bits as
/// keys of `k` uniform probes are added, with the weights `(x/B)^{kj}` of
/// the moments it is asked for.
struct Occupancy<const N: usize> {
    /// `probs[x] = P(X = x)`, zero outside `lo..=hi`.
    probs: Vec<f64>,
    lo: usize,
    hi: usize,
    probes: u32,
    /// `weights[i][x] = (x/B)^{k · powers[i]}`.
    weights: [Vec<f64>; N],
}

impl<const N: usize> Occupancy<N> {
    /// An empty block: `X = 0`.
    fn new(block_bits: u32, probes: u32, powers: [u32; N]) -> Self {
        let bits = block_bits as usize;
        let mut probs = vec![0.0; bits + 1];
        if let Some(empty) = probs.first_mut() {
            *empty = 1.0;
        }
        let weights = powers.map(|power| {
            let exponent = f64::from(probes) * f64::from(power);
            (0..=bits)
                .map(|x| (x as f64 / bits as f64).powf(exponent))
                .collect()
        });
        Self {
            probs,
            lo: 0,
            hi: 0,
            probes,
            weights,
        }
    }

    /// Whether every bit is set but for a negligible probability.
    fn is_full(&self) -> bool {
        self.lo + 1 == self.probs.len()
    }

    /// Adds one key: `k` probes, each landing on a set bit with probability
    /// `x/B` (no change) or setting a clear one (`x + 1`).
    fn add_key(&mut self) {
        let bits = (self.probs.len() - 1) as f64;
        let last = self.probs.len() - 1;
        for _ in 0..self.probes {
            if self.lo == last {
                break;
            }
            // In place from the top: state x reads the old x and x - 1.
            let top = self.hi;
            if top < last {
                self.probs[top + 1] = self.probs[top] * (bits - top as f64) / bits;
                self.hi = top + 1;
            }
            for x in (self.lo + 1..=top).rev() {
                let (stay, rise) = (x as f64, bits - (x - 1) as f64);
                self.probs[x] = (self.probs[x] * stay + self.probs[x - 1] * rise) / bits;
            }
            self.probs[self.lo] *= self.lo as f64 / bits;
            while self.lo < self.hi && self.probs[self.lo] < NEGLIGIBLE {
                self.probs[self.lo] = 0.0;
                self.lo += 1;
            }
        }
    }

    /// `E[(X/B)^{k · power}]` for each requested power.
    fn moments(&self) -> [f64; N] {
        let live = self.probs.get(self.lo..=self.hi).unwrap_or_default();
        self.weights.each_ref().map(|weights| {
            let weights = weights.get(self.lo..=self.hi).unwrap_or_default();
            live.iter().zip(weights).map(|(p, w)| p * w).sum()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The worked examples users check a Bloom calculator against.
    #[test]
    fn worked_examples() {
        // 1,000,000 keys at 1%: k = 7, 9,585,059 bits ≈ 1.14 MiB.
        let m = optimal_bits(1_000_000, 0.01);
        assert_eq!(m, 9_585_059);
        assert_eq!(probes_for_fpr(0.01), 7);
        assert_eq!(optimal_probes(m, 1_000_000), 7);
        let mib = bits_to_bytes(m) as f64 / (1024.0 * 1024.0);
        assert!((mib - 1.14).abs() < 0.005, "{mib} MiB");

        // 1,000 keys at 1e-6: k = 20, 28,756 bits ≈ 3.51 KiB.
        let m = optimal_bits(1_000, 1e-6);
        assert_eq!(m, 28_756);
        assert_eq!(probes_for_fpr(1e-6), 20);
        assert_eq!(optimal_probes(m, 1_000), 20);
        let kib = bits_to_bytes(m) as f64 / 1024.0;
        assert!((kib - 3.51).abs() < 0.005, "{kib} KiB");

        // 10 bits/key: k = 7, FPR ≈ 0.82%.
        assert_eq!(optimal_probes(10, 1), 7);
        let p = bloom_fpr(10_000, 1_000, 7);
        assert!((p - 0.00819).abs() < 0.00001, "{p}");

        // A 100-bit filter with 10 keys: k = 7.
        assert_eq!(optimal_probes(100, 10), 7);
    }

    #[test]
    fn ribbon_fpr_follows_the_planned_columns() {
        // 1,000,000 keys take 1.047 slots each: 7.33 bits/key buy 7 result
        // bits per slot, 2^-7, and fractional columns mix 2^-7 and 2^-6.
        let n = 1_000_000;
        let p = ribbon_fpr(n, 7.0 * 1.047);
        assert!((p * 128.0 - 1.0).abs() < 0.01, "{p}");
        let half = ribbon_fpr(n, 6.5 * 1.047);
        assert!((half * 128.0 - 1.5).abs() < 0.02, "{half}");
        assert_eq!(ribbon_fpr(0, 8.0), 0.0);
        assert_eq!(ribbon_fpr(n, 0.0), 1.0);
    }

    #[test]
    fn capacity_inverts_fpr() {
        for &(m, k, p) in &[
            (9_585_059u64, 7u32, 0.01f64),
            (28_756, 20, 1e-6),
            (10_000, 7, 0.05),
        ] {
            let n = capacity(m, k, p);
            assert!(bloom_fpr(m, n, k) <= p * (1.0 + 1e-9));
            assert!(bloom_fpr(m, n + 1 + n / 1000, k) > p);
        }
    }

    #[test]
    fn count_estimate_inverts_expected_fill() {
        let (m, k, n) = (100_000u64, 7u32, 8_000u64);
        let expected_set = m as f64 * (1.0 - (-(f64::from(k)) * n as f64 / m as f64).exp());
        let est = estimate_count(m, k, expected_set.round() as u64);
        assert!((est - n as f64).abs() < 2.0, "{est}");
        assert!(estimate_count(m, k, m).is_infinite());
    }

    #[test]
    fn partitioned_fpr_matches_exact_small_cases_and_approaches_standard() {
        // 20 bits, 2 partitions of 10, one key: each partition has 1 of 10
        // bits set, so a non-member hits both with probability 0.1² = 0.01.
        let p = partitioned_bloom_fpr(20, 1, 2);
        assert!((p - 0.01).abs() < 1e-12, "{p}");
        // One partition is a one-probe Bloom filter: 1 - (1 - 1/m)^n.
        let p = partitioned_bloom_fpr(100, 10, 1);
        assert!((p - (1.0 - 0.99f64.powi(10))).abs() < 1e-12, "{p}");
        assert_eq!(partitioned_bloom_fpr(70, 0, 7), 0.0);
        assert_eq!(partitioned_bloom_fpr(0, 5, 7), 1.0);
        assert_eq!(partitioned_bloom_fpr(7, 1, 7), 1.0);
        // Never below the standard formula; indistinguishable at scale.
        for &(m, n, k) in &[
            (100u64, 10u64, 7u32),
            (10_000, 1_000, 7),
            (9_585_059, 1_000_000, 7),
        ] {
            let (part, std) = (partitioned_bloom_fpr(m, n, k), bloom_fpr(m, n, k));
            assert!(part >= std, "m={m}: {part} < {std}");
            if m >= 10_000 {
                assert!((part - std) / std < 0.01, "m={m}: {part} vs {std}");
            }
        }
    }

    #[test]
    fn partitioned_count_estimate_inverts_expected_fill() {
        let (m, k, n) = (70_000u64, 7u32, 8_000u64);
        let expected_set = m as f64 * (1.0 - (1.0 - f64::from(k) / m as f64).powf(n as f64));
        let est = partitioned_estimate_count(m, k, expected_set.round() as u64);
        assert!((est - n as f64).abs() < 2.0, "{est}");
        // Exact on tiny filters where the standard estimator is 5% off:
        // 2 partitions of 10 bits, one key sets 2 of 20 bits.
        assert!((partitioned_estimate_count(20, 2, 2) - 1.0).abs() < 1e-12);
        assert_eq!(partitioned_estimate_count(20, 2, 0), 0.0);
        assert!(partitioned_estimate_count(20, 2, 20).is_infinite());
        assert_eq!(partitioned_estimate_count(7, 7, 3), 0.0);
    }

    #[test]
    fn blocked_fpr_exceeds_standard_and_matches_known_points() {
        // Blocking costs accuracy: at 10 bits/key the best blocked k is 6,
        // at 0.9665% (7 gives 0.9686%), against 0.82% unblocked.
        let n = 1_000_000;
        let m = 10 * n;
        let fpr: Vec<f64> = (1..=12).map(|k| blocked_bloom_fpr(m, n, k, 512)).collect();
        let best = (1..=12u32)
            .zip(&fpr)
            .min_by(|a, b| a.1.total_cmp(b.1))
            .unwrap();
        assert_eq!(best.0, 6);
        assert!((best.1 - 0.009_665).abs() < 0.000_001, "{best:?}");
        assert!((fpr[6] - 0.009_686).abs() < 0.000_001, "{}", fpr[6]);
        assert!(*best.1 > bloom_fpr(m, n, 7));
    }

    /// The mean-fill shortcut `E_L[(1 - (1 - 1/B)^{kL})^k]` over Poisson
    /// loads, which the exact formula replaced.
    fn mean_fill_shortcut(bits_per_key: f64, k: u32) -> f64 {
        let lambda = 512.0 / bits_per_key;
        let mut pmf = (-lambda).exp();
        let mut total = 0.0;
        for load in 0..1_000 {
            let fill = 1.0 - (1.0 - 1.0 / 512.0f64).powi((k * load) as i32);
            total += pmf * fill.powi(k as i32);
            pmf *= lambda / f64::from(load + 1);
        }
        total
    }

    #[test]
    fn blocked_fpr_exceeds_the_mean_fill_shortcut() {
        // Jensen: the spread of a block's fill raises E[fill^k] above the
        // k-th power of its mean, by 1.2% at 10 bits/key and 3.3% at 20.
        for (bits_per_key, k, low, high) in [(10u64, 7, 0.011, 0.013), (20, 11, 0.032, 0.034)] {
            let (m, n) = (bits_per_key * 10_000_000, 10_000_000);
            let gap = blocked_bloom_fpr(m, n, k, 512) / mean_fill_shortcut(bits_per_key as f64, k);
            assert!((low..high).contains(&(gap - 1.0)), "{bits_per_key}: {gap}");
        }
    }

    #[test]
    fn blocked_fpr_of_tiny_filters_by_hand() {
        let b = 512.0f64;
        // One block, one key, one probe: one bit set.
        let p = blocked_bloom_fpr(512, 1, 1, 512);
        assert!((p - 1.0 / b).abs() < 1e-15, "{p}");
        // Two probes land on one bit with probability 1/B, else on two.
        let two = (1.0 / b) * (1.0 / b).powi(2) + (1.0 - 1.0 / b) * (2.0 / b).powi(2);
        let p = blocked_bloom_fpr(512, 1, 2, 512);
        assert!((p - two).abs() < 1e-15 * two, "{p} vs {two}");
        // Two blocks, one key: half the queries meet an empty block.
        let p = blocked_bloom_fpr(1024, 1, 1, 512);
        assert!((p - 0.5 / b).abs() < 1e-15, "{p}");
        // Its blocks' FPRs are 0 and 1/B: variance 1/(4B²) per block,
        // over 2 blocks.
        let sd = blocked_bloom_fpr_std_dev(1024, 1, 1, 512);
        let want = (1.0 / (4.0 * b * b) / 2.0).sqrt();
        assert!((sd - want).abs() < 1e-12 * want, "{sd} vs {want}");
        // One block, one key: the FPR is certain.
        assert!(blocked_bloom_fpr_std_dev(512, 1, 1, 512) < 1e-15);
    }

    #[test]
    fn blocked_fpr_edges() {
        assert_eq!(blocked_bloom_fpr(0, 10, 7, 512), 1.0);
        assert_eq!(blocked_bloom_fpr(5_120, 10, 0, 512), 1.0);
        assert_eq!(blocked_bloom_fpr(5_120, 10, 7, 0), 1.0);
        assert_eq!(blocked_bloom_fpr(5_120, 0, 7, 512), 0.0);
        // Overloaded blocks fill up and the sum stops there, whatever n or k.
        for (m, n, k) in [
            (512, u64::MAX, 1),
            (1_024, u64::MAX, 7),
            (512, 1_000, u32::MAX),
        ] {
            let p = blocked_bloom_fpr(m, n, k, 512);
            assert!((p - 1.0).abs() < 1e-12, "m={m} n={n} k={k}: {p}");
        }
        // The binomial load reaches its Poisson limit: m and n matter only
        // through m/n for large tables.
        let (small, large) = (
            blocked_bloom_fpr(512 * 100_000, 5_120_000, 6, 512),
            blocked_bloom_fpr(512 * 100_000_000, 5_120_000_000, 6, 512),
        );
        assert!((small / large - 1.0).abs() < 1e-4, "{small} vs {large}");
    }
}
