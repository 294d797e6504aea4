//! How large each value filter is. Pure arithmetic, no I/O.
//!
//! - A **leaf** (one per table and index) is sized for the distinct values
//!   its table really holds, at the index's target false-positive rate,
//!   then rounded up to a *size class* `q · 2^e` with `q` in `8..16`.
//!   Leaves of one class share a [`BloomShape`], so the bit-sliced layout
//!   and the hierarchy, which need one shape for all their leaves, are kept
//!   per class (`leaves.rs`). Classes are at most 12.5% apart, so rounding
//!   costs at most 12.5% of the bits (about 10.8 bits per value at 1%
//!   instead of 9.6), while tables of one level, which hold similar
//!   numbers of values, land in a handful of classes.
//! - A **block filter** (one per data block, inside a table) is sized for
//!   the distinct values of its block, at a rate low enough that reading a
//!   positive table costs about [`FALSE_BLOCKS_PER_TABLE`] block read in
//!   vain, whatever the table's size: `p = min(leaf rate, 0.5 / blocks)`.
//!   These filters are probed one at a time, so each has exactly the bits
//!   it needs.

use std::collections::HashMap;
use std::sync::{Mutex, OnceLock, PoisonError};

use sift_filter::BloomShape;
use sift_filter::math;

/// The leaf false-positive rate an index aims at unless told otherwise: one
/// table read in vain per hundred that a search rules out.
pub(crate) const DEFAULT_LEAF_FPR: f64 = 0.01;

/// Most and fewest probes per value a target rate may imply:
/// `sift-filter`'s limit for a standard Bloom filter, and one.
const MAX_PROBES: u32 = 64;

/// Fewest bits a leaf has: one machine word (the bit-sliced layout and the
/// hierarchy work in words).
pub(crate) const MIN_LEAF_BITS: u64 = 64;

/// Most bits a leaf may have: 2^36 bits is 8 GiB per table and index, past
/// any table this engine writes; it keeps a damaged manifest from asking
/// for an absurd allocation per table.
pub(crate) const MAX_LEAF_BITS: u64 = 1 << 36;

/// Mantissa bits of a size class: `2^3 = 8` classes per doubling.
const CLASS_MANTISSA_BITS: u32 = 3;

/// Data blocks a search expects to read in vain per positive table: the
/// block filters' rate is `FALSE_BLOCKS_PER_TABLE / blocks` (or the leaf
/// rate, if lower), so a table of 16 blocks and one of 16,000 both cost
/// about half a wasted read. A table holding a selective value then costs
/// its true blocks plus at most one, while the block filters' bits grow
/// only with the logarithm of the table's size (`log2(blocks)` bits per
/// value, 1.44 times over).
pub(crate) const FALSE_BLOCKS_PER_TABLE: f64 = 0.5;

/// Lowest target rate accepted: 1e-9 needs 30 probes and 43 bits per value;
/// lower rates buy nothing a search can measure.
pub(crate) const MIN_FPR: f64 = 1e-9;

/// Highest target rate accepted: a filter that says "maybe" for half the
/// tables prunes little.
pub(crate) const MAX_FPR: f64 = 0.5;

/// Whether `fpr` is a target rate an index accepts.
pub(crate) fn valid_fpr(fpr: f64) -> bool {
    (MIN_FPR..=MAX_FPR).contains(&fpr)
}

/// Probes per value for target rate `fpr`: `ceil(-log2 fpr)`, the optimum
/// at optimal sizing (7 for 1%).
pub(crate) fn probes_for(fpr: f64) -> u32 {
    math::probes_for_fpr(fpr).clamp(1, MAX_PROBES)
}

/// The fewest bits that hold `n` distinct values with `k` probes at rate
/// at most `fpr` by the standard formula `(1 - e^{-kn/m})^k`:
/// `m = ceil(-k·n / ln(1 - fpr^{1/k}))`. Zero for no value.
pub(crate) fn bits_for(n: u64, k: u32, fpr: f64) -> u64 {
    if n == 0 {
        return 0;
    }
    let k = f64::from(k.max(1));
    let per_value = -k / (1.0 - fpr.clamp(MIN_FPR, MAX_FPR).powf(1.0 / k)).ln();
    (n as f64 * per_value).ceil() as u64
}

/// Filters of at most this many bits are sized by their exact rate. The
/// formula of [`bits_for`] raises the expected fill to the `k`-th power,
/// which reads low when the fill spreads widely, as in a filter of a few
/// dozen bits (by Jensen's inequality; measured: 1.6% instead of 1% for one
/// value in 10 bits, 7 probes). The exact rate, over the occupancy
/// distribution of `k·n` probes (`math::blocked_bloom_fpr` with the whole
/// filter as one block), costs `O(bits · k · n)`: about 5 ms for the 60
/// smallest counts at 12 probes, once per process (see [`filter_bits`]),
/// and up to here the gap is worth closing (2.7% of the rate at 30 values
/// in 290 bits; measured with `sstable/filters/value/blocks.rs`'s rate test).
const EXACT_BITS: u64 = 512;

/// Exact sizes kept before the memo is cleared: a store's blocks hold a
/// few hundred different small counts at a few rates.
const MEMO_ENTRIES: usize = 1 << 16;

/// Exact sizes by (values, probes, rate as bits).
type Memo = Mutex<HashMap<(u64, u32, u64), u64>>;

/// The bits a filter of `n` distinct values needs at rate `fpr` with `k`
/// probes: [`bits_for`], raised until the exact rate meets `fpr` for
/// small filters. Exact sizes are remembered for the whole process: the
/// tables of a store have blocks of similar counts and share a rate, so
/// each count is computed once, not once per table.
pub(crate) fn filter_bits(n: u64, k: u32, fpr: f64) -> u64 {
    static MEMO: OnceLock<Memo> = OnceLock::new();
    let formula = bits_for(n, k, fpr);
    if formula == 0 || formula > EXACT_BITS {
        return formula;
    }
    let memo = MEMO.get_or_init(Mutex::default);
    let key = (n, k, fpr.to_bits());
    if let Some(&bits) = memo
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .get(&key)
    {
        return bits;
    }
    let mut bits = formula;
    while bits <= EXACT_BITS && math::blocked_bloom_fpr(bits, n, k, bits as u32) > fpr {
        bits += 1;
    }
    let mut memo = memo.lock().unwrap_or_else(PoisonError::into_inner);
    if memo.len() >= MEMO_ENTRIES {
        memo.clear();
    }
    memo.insert(key, bits);
    bits
}

/// `bits` rounded up to the next size class `q · 2^e`, `8 <= q < 16`, and
/// to at least [`MIN_LEAF_BITS`] (at most [`MAX_LEAF_BITS`]).
pub(crate) fn size_class(bits: u64) -> u64 {
    let bits = bits.clamp(MIN_LEAF_BITS, MAX_LEAF_BITS);
    let shift = (u64::BITS - bits.leading_zeros()).saturating_sub(CLASS_MANTISSA_BITS + 1);
    let mantissa = bits.div_ceil(1 << shift);
    mantissa << shift
}

/// The leaf for a table holding `distinct` values, at rate `fpr`.
pub(crate) fn leaf_shape(distinct: u64, fpr: f64) -> BloomShape {
    let probes = probes_for(fpr);
    BloomShape {
        bits: size_class(filter_bits(distinct, probes, fpr)),
        probes,
    }
}

/// The block filters' rate for a table of `blocks` data blocks whose leaf
/// aims at `leaf_fpr`.
pub(crate) fn block_fpr(leaf_fpr: f64, blocks: u64) -> f64 {
    (FALSE_BLOCKS_PER_TABLE / blocks.max(1) as f64)
        .min(leaf_fpr)
        .clamp(MIN_FPR, MAX_FPR)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classes_are_at_most_an_eighth_apart_and_stable() {
        assert_eq!(size_class(0), 64);
        assert_eq!(size_class(64), 64);
        assert_eq!(size_class(65), 72);
        assert_eq!(size_class(121), 128);
        assert_eq!(size_class(129), 144);
        assert_eq!(size_class(1_000_000), 1_048_576);
        assert_eq!(size_class(u64::MAX), MAX_LEAF_BITS);
        let mut previous = 0;
        for bits in (64..200_000).step_by(37) {
            let class = size_class(bits);
            assert!(
                class >= bits && class as f64 <= bits as f64 * 1.125,
                "{bits}"
            );
            assert_eq!(size_class(class), class, "a class is its own class");
            assert!(class >= previous, "monotone");
            previous = class;
        }
    }

    #[test]
    fn leaves_meet_the_rate_at_small_and_large_cardinalities() {
        for fpr in [0.01, 0.001, 0.05] {
            for n in [1, 2, 4, 10, 100, 1_000, 116_000, 2_000_000, 50_000_000] {
                let shape = leaf_shape(n, fpr);
                let rate = math::bloom_fpr(shape.bits, n, shape.probes);
                assert!(rate <= fpr * 1.000_001, "{n} values at {fpr}: {rate}");
                let per_value = shape.bits as f64 / n as f64;
                // The optimum is -log2(fpr) / ln 2 bits per value (9.59 at
                // 1%); integer probes and the class round-up stay within
                // 12.5% plus a rounding bit, except where the 64-bit floor
                // dominates.
                let optimum = -fpr.log2() / std::f64::consts::LN_2;
                // Small leaves are sized by their exact rate, which the
                // formula's optimum underestimates.
                if shape.bits <= EXACT_BITS {
                    let exact =
                        math::blocked_bloom_fpr(shape.bits, n, shape.probes, shape.bits as u32);
                    assert!(exact <= fpr, "{n} values at {fpr}: exactly {exact}");
                } else {
                    assert!(
                        per_value <= optimum * 1.125 * 1.01 + 1.0 / n as f64,
                        "{n}: {per_value}"
                    );
                }
            }
        }
        // 1%: 7 probes and at most 12 bits per distinct value.
        let shape = leaf_shape(135_000, 0.01);
        assert_eq!(shape.probes, 7);
        assert!(shape.bits as f64 / 135_000.0 <= 12.0);
    }

    #[test]
    fn measured_leaf_rates_meet_the_target_at_small_and_large_cardinalities() {
        use sift_filter::{Filter, KeyHash, StandardBloom};
        // Per cardinality, leaves of distinct value sets, each probed with
        // the same absent values. Over P probes in all the binomial
        // standard deviation at 1% is sqrt(0.01 · 0.99 / P): 0.02 points
        // for P = 200,000. The bound allows the target plus 4 of them.
        for (n, leaves, absent) in [
            (1u64, 400u64, 500u64),
            (4, 400, 500),
            (16, 400, 500),
            (100, 200, 1_000),
            (1_000, 40, 5_000),
            (100_000, 2, 100_000),
        ] {
            let shape = leaf_shape(n, 0.01);
            let mut positives = 0;
            for leaf in 0..leaves {
                let mut filter = StandardBloom::new(shape).unwrap();
                for v in 0..n {
                    filter.insert(KeyHash::of(format!("value {leaf} {v}").as_bytes()));
                }
                positives += (0..absent)
                    .filter(|a| filter.may_contain(KeyHash::of(format!("absent {a}").as_bytes())))
                    .count();
            }
            let probes = (leaves * absent) as f64;
            let rate = positives as f64 / probes;
            let bound = 0.01 + 4.0 * (0.01 * 0.99 / probes).sqrt();
            assert!(rate <= bound, "{n} values: {rate} > {bound} ({shape:?})");
        }
    }

    #[test]
    fn bits_for_inverts_the_formula() {
        assert_eq!(bits_for(0, 7, 0.01), 0);
        let m = bits_for(1_000, 7, 0.01);
        assert!(math::bloom_fpr(m, 1_000, 7) <= 0.01);
        assert!(math::bloom_fpr(m - 10, 1_000, 7) > 0.01);
    }

    #[test]
    fn small_block_filters_meet_the_exact_rate() {
        for n in 1..=12 {
            let bits = filter_bits(n, 7, 0.01);
            assert!(bits >= bits_for(n, 7, 0.01));
            assert!(
                math::blocked_bloom_fpr(bits, n, 7, bits as u32) <= 0.01,
                "{n}"
            );
        }
        assert_eq!(filter_bits(0, 7, 0.01), 0);
        assert_eq!(filter_bits(1_000, 7, 0.01), bits_for(1_000, 7, 0.01));
    }

    #[test]
    fn block_rate_keeps_half_a_false_block_per_table() {
        assert_eq!(block_fpr(0.01, 10), 0.01);
        assert_eq!(block_fpr(0.01, 1_000), 0.0005);
        assert_eq!(block_fpr(0.01, 0), 0.01);
        assert_eq!(block_fpr(0.01, u64::MAX), MIN_FPR);
        assert_eq!(probes_for(0.01), 7);
        assert_eq!(probes_for(0.0005), 11);
    }
}
