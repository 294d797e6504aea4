//! Sizing and false-positive bound of the range filter
//! ([`RangeFilter`](crate::RangeFilter), after Grafite: Costa, Ferragina &
//! Vinciguerra, SIGMOD 2024).
//!
//! `n` keys are hashed into a space of `r = n · 2^{B-2}` values, `B` the
//! bits per key; an Elias–Fano sequence stores them in about `B` bits
//! each: `log2(r/n) = B - 2` low bits and 2 high bits.
//!
//! The hash shifts each block of `L ≤ r` consecutive keys by a random
//! amount, so an empty range of `ℓ` keys maps to `ℓ` hash values (one or
//! two arcs of the hash space) that hold no key of its own blocks. A key of
//! another block lands in them with probability at most `ℓ / r`, so, by the
//! union bound,
//!
//! `p ≤ ℓ · n / r = ℓ / 2^{B-2}`  [`range_filter_fpr`]
//!
//! whatever the keys and the range, as long as neither depends on the
//! hash seed. As a curve of Monkey's form `a · e^{-c·B}` this is
//! `a = 4ℓ`, `c = ln 2` ([`FprCurve::range_filter`](super::FprCurve::range_filter)):
//! each bit per key halves the FPR, against `(ln 2)^2 = 0.48` nepers for a
//! point Bloom filter.

use super::clamp_fpr;

/// The largest hash space a range filter uses, `2^62`: a block's shift
/// (`< r`) plus an offset inside it (`< L ≤ r`) then stays below `2^63`,
/// and at this size even a billion keys have an FPR of `ℓ / 4.6e9`.
pub const RANGE_FILTER_MAX_HASH_SPACE: u64 = 1 << 62;

/// The hash space `r` of a range filter over `n` distinct keys at
/// `bits_per_key` (`B`): `max(1, ceil(n · 2^{B-2}))`, at most
/// [`RANGE_FILTER_MAX_HASH_SPACE`]. A `bits_per_key` of NaN gives 1.
#[must_use]
pub fn range_filter_hash_space(n: u64, bits_per_key: f64) -> u64 {
    let wanted = (n as f64 * (bits_per_key - 2.0).exp2()).ceil();
    // `as` saturates (NaN to 0); the clamp then sets both ends.
    (wanted as u64).clamp(1, RANGE_FILTER_MAX_HASH_SPACE)
}

/// The FPR bound of a range filter at `bits_per_key` (`B`) for an empty
/// range of `range_len` keys (`ℓ = hi - lo + 1`; 0 counts as 1):
/// `min(1, ℓ / 2^{B-2})`. A filter's own bound,
/// [`RangeFilter::expected_fpr`](crate::RangeFilter::expected_fpr), uses
/// its real `n / r`, which rounding makes at most this.
#[must_use]
pub fn range_filter_fpr(range_len: u64, bits_per_key: f64) -> f64 {
    // NaN.min(1.0) is 1.0: an unknown size bounds nothing.
    (range_len.max(1) as f64 * (2.0 - bits_per_key).exp2()).min(1.0)
}

/// The bits per key at which [`range_filter_fpr`] reaches `fpr` for ranges
/// of `range_len` keys: `B = 2 + log2(ℓ / p)`, at least 2 (the smallest
/// filter: `r = n`, where the bound is already 1). `fpr` is clamped into
/// `(0, 1)`. The built filter spends a little more: see
/// [`RangeFilter::bits_per_key`](crate::RangeFilter::bits_per_key).
#[must_use]
pub fn range_filter_bits_per_key(range_len: u64, fpr: f64) -> f64 {
    let len = range_len.max(1) as f64;
    (2.0 + (len / clamp_fpr(fpr)).log2()).max(2.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hash_space_is_n_times_two_to_the_b_minus_two() {
        assert_eq!(range_filter_hash_space(100_000, 10.0), 25_600_000);
        assert_eq!(range_filter_hash_space(100_000, 12.0), 102_400_000);
        // Fractional bits/key round up: 3 · 2^0.5 = 4.24.
        assert_eq!(range_filter_hash_space(3, 2.5), 5);
        assert_eq!(range_filter_hash_space(7, 2.0), 7);
        assert_eq!(range_filter_hash_space(0, 10.0), 1);
        assert_eq!(range_filter_hash_space(5, f64::NAN), 1);
        assert_eq!(
            range_filter_hash_space(u64::MAX, 64.0),
            RANGE_FILTER_MAX_HASH_SPACE
        );
        assert_eq!(
            range_filter_hash_space(1, f64::INFINITY),
            RANGE_FILTER_MAX_HASH_SPACE
        );
    }

    #[test]
    fn fpr_bound_and_its_inverse() {
        assert_eq!(range_filter_fpr(1, 10.0), 1.0 / 256.0);
        assert_eq!(range_filter_fpr(16, 12.0), 16.0 / 1024.0);
        assert_eq!(range_filter_fpr(0, 12.0), 1.0 / 1024.0);
        assert_eq!(range_filter_fpr(1_024, 12.0), 1.0);
        assert_eq!(range_filter_fpr(1, 2.0), 1.0);
        assert_eq!(range_filter_fpr(1, f64::NAN), 1.0);
        for (len, b) in [(1u64, 10.0), (16, 12.5), (1_000, 30.0), (1, 2.0)] {
            let p = range_filter_fpr(len, b);
            assert!(
                (range_filter_bits_per_key(len, p) - b).abs() < 1e-9,
                "{len} {b}"
            );
        }
        // 1% on point queries: 2 + log2(100) = 8.64 bits/key.
        let b = range_filter_bits_per_key(1, 0.01);
        assert!((b - 8.643_856).abs() < 1e-6, "{b}");
        // p = 1 needs no bits past the smallest filter's 2.
        assert!((range_filter_bits_per_key(1, 1.0) - 2.0).abs() < 1e-9);
        assert_eq!(range_filter_bits_per_key(1, f64::NAN), 3.0);
    }
}
