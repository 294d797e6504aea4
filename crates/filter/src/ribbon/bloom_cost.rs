//! What the blocked Bloom fallback would cost, to compare with a Ribbon
//! plan before banding.
//!
//! The blocked Bloom filter (`blocked/`) uses `max(1, ceil(n·b/512))`
//! blocks of 512 bits for `n` keys at `b` bits/key and the probe count that
//! minimises [`math::blocked_bloom_fpr`] at its real bits/key. That formula
//! costs `O(λ²)` logarithms per call, too slow to invert by bisection on
//! every build, so this module evaluates the same Poisson mixture in
//! `O(λ)` plain arithmetic: the Poisson weights by their ratio recurrence
//! from the mode outwards, normalised by their sum (as `math` does), and
//! `(1 - 1/512)^{k·load}` by repeated multiplication.
//!
//! [`math::blocked_bloom_fpr`]: crate::math::blocked_bloom_fpr

/// Bits per block of the blocked Bloom filter (one cache line).
const BLOCK_BITS: f64 = 512.0;
/// Bytes per block.
pub(super) const BLOCK_BYTES: u64 = 64;
/// Probe counts considered: the blocked filter caps its probes at 24 (the
/// optimum at 95 bits/key).
const MAX_PROBES: u32 = 24;
/// Poisson weights below this fraction of the mode's are dropped: the
/// neglected mass is then far below any FPR compared here.
const NEGLIGIBLE: f64 = 1e-20;

/// Blocks the fallback uses for `n` keys at `bits_per_key`.
pub(super) fn blocks(n: u64, bits_per_key: f64) -> u64 {
    ((n as f64 * bits_per_key) / BLOCK_BITS).ceil().max(1.0) as u64
}

/// Expected FPR of a blocked Bloom filter of `blocks` blocks holding `n`
/// keys, at the best probe count. 0 for an empty filter.
pub(super) fn fpr(n: u64, blocks: u64) -> f64 {
    if n == 0 {
        return 0.0;
    }
    best_fpr(n as f64 / blocks as f64)
}

/// Bits/key at which the fallback reaches `target` (in `(0, 1)`), to within
/// 0.1%; at least the standard-Bloom optimum `log2(1/p) / ln 2`, which
/// blocking can only raise.
pub(crate) fn bits_per_key_for(target: f64) -> f64 {
    let ideal = -target.log2() / std::f64::consts::LN_2;
    let at = |bits: f64| best_fpr(BLOCK_BITS / bits);
    let (mut lo, mut hi) = (ideal, 2.0 * ideal + 8.0);
    while at(hi) > target {
        hi *= 2.0;
    }
    while hi - lo > 1e-3 * lo {
        let mid = 0.5 * (lo + hi);
        if at(mid) > target { lo = mid } else { hi = mid }
    }
    hi
}

/// The FPR at the best probe count for `lambda` keys per block. The FPR
/// falls and then rises with `k` (the blocked filter's probe table relies on
/// the same shape), so the scan stops at the first rise.
fn best_fpr(lambda: f64) -> f64 {
    let mut best = 1.0;
    for k in 1..=MAX_PROBES {
        let fpr = fpr_with_probes(lambda, k);
        if fpr > best {
            break;
        }
        best = fpr;
    }
    best
}

/// FPR when blocks hold Poisson(`lambda`) keys of `k` probes each.
fn fpr_with_probes(lambda: f64, k: u32) -> f64 {
    // A bit of the block stays clear after one probe with probability
    // `1 - 1/512`; after `load` keys, with probability `clear^load`.
    let clear = (1.0 - 1.0 / BLOCK_BITS).powi(k as i32);
    let term = |clear_pow: f64| (1.0 - clear_pow).powi(k as i32);
    let mode = lambda.floor() as u64;
    let at_mode = clear.powf(mode as f64);
    let (mut total, mut mass) = (term(at_mode), 1.0);
    // Upwards: weight(l + 1) = weight(l) · λ / (l + 1).
    let (mut w, mut c, mut load) = (1.0, at_mode, mode);
    loop {
        load += 1;
        w *= lambda / load as f64;
        c *= clear;
        if w < NEGLIGIBLE {
            break;
        }
        total += w * term(c);
        mass += w;
    }
    // Downwards: weight(l - 1) = weight(l) · l / λ.
    let (mut w, mut c, mut load) = (1.0, at_mode, mode);
    while load > 0 {
        w *= load as f64 / lambda;
        c /= clear;
        load -= 1;
        if w < NEGLIGIBLE {
            break;
        }
        total += w * term(c);
        mass += w;
    }
    total / mass
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::math::blocked_bloom_fpr;

    #[test]
    fn matches_the_reference_formula() {
        for (n, blocks) in [
            (1_000u64, 20u64),
            (1_000, 2),
            (100_000, 1_563),
            (50_000, 600),
        ] {
            let reference = (1..=MAX_PROBES)
                .map(|k| blocked_bloom_fpr(blocks * 512, n, k, 512))
                .fold(1.0, f64::min);
            let fast = fpr(n, blocks);
            // This model raises the mean block fill to the k-th power; the
            // exact model averages fill^k, higher by Jensen's inequality:
            // about 1% at 10 bits/key, up to ~4% at 20 (see math.rs tests).
            assert!(
                fast <= reference && reference - fast <= 0.04 * reference,
                "{n} {blocks}: {fast} vs {reference}"
            );
        }
        assert_eq!(fpr(0, 1), 0.0);
    }

    /// The early stop finds the minimum over every probe count, from 0.5 to
    /// 200 bits/key.
    #[test]
    fn scan_stops_at_the_minimum() {
        for i in 1..=400 {
            let lambda = BLOCK_BITS / (f64::from(i) * 0.5);
            let full = (1..=MAX_PROBES)
                .map(|k| fpr_with_probes(lambda, k))
                .fold(1.0, f64::min);
            // Equal up to rounding: where `k` is known at compile time,
            // `powi` may be unrolled into other multiplications than the
            // runtime's, which moved the last bits in one build.
            let (best, bits) = (best_fpr(lambda), f64::from(i) * 0.5);
            assert!(
                (best - full).abs() <= 1e-12 * full,
                "{bits} bits/key: {best} vs {full}"
            );
        }
    }

    #[test]
    fn bits_per_key_inverts_fpr() {
        for target in [0.5, 0.1, 0.01, 1e-3, 1e-6] {
            let bits = bits_per_key_for(target);
            let n = 1_000_000;
            let at = |b: f64| fpr(n, (n as f64 * b / 512.0).round() as u64);
            assert!(at(bits * 1.002) <= target, "{target}: {bits}");
            assert!(at(bits * 0.998) > target, "{target}: {bits}");
        }
        // Blocking costs about 3% at 1%: 9.9 bits/key against 9.59 for a
        // standard Bloom filter (and 0.95% at 10 bits/key, as `math` pins).
        let b = bits_per_key_for(0.01);
        assert!((9.85..9.95).contains(&b), "{b}");
    }
}
