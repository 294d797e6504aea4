//! What the blocked Bloom fallback would cost, to compare with a Ribbon
//! plan before banding. The fallback's size and FPR come from the blocked
//! filter's own sizing rule ([`Plan`]), so the two cannot disagree.

use crate::blocked::Plan;

/// Keys at which [`bits_per_key_for`] evaluates the fallback: large enough
/// that block loads follow their limit distribution, so the answer holds
/// for any table size the engine writes.
const LARGE_N: u64 = 1 << 20;

/// The fallback's plan for `n` keys at `bits_per_key`.
pub(super) fn plan(n: u64, bits_per_key: f64) -> Plan {
    Plan::new(n, bits_per_key)
}

/// Bits/key at which the fallback reaches `target` (in `(0, 1)`), to within
/// 0.1%; at least the standard-Bloom optimum `log2(1/p) / ln 2`, which
/// blocking can only raise. About 20 evaluations of the exact blocked
/// formula, a few milliseconds, once per builder.
pub(super) fn bits_per_key_for(target: f64) -> f64 {
    let ideal = -target.log2() / std::f64::consts::LN_2;
    let at = |bits: f64| plan(LARGE_N, bits).fpr();
    let (mut lo, mut hi) = (ideal, 2.0 * ideal + 8.0);
    while at(hi) > target {
        hi *= 2.0;
    }
    while hi - lo > 1e-3 * lo {
        let mid = 0.5 * (lo + hi);
        if at(mid) > target {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    hi
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{BlockedBloom, Filter, KeyHash};

    #[test]
    fn plan_is_what_the_blocked_filter_builds() {
        let hashes: Vec<_> = (0..5_000u64)
            .map(|i| KeyHash::of(&i.to_le_bytes()))
            .collect();
        for bits in [1.5, 7.0, 10.0, 20.0] {
            let built = BlockedBloom::from_hashes(&hashes, bits).unwrap();
            let planned = plan(hashes.len() as u64, bits);
            assert_eq!(planned.size_bytes(), built.size_bytes() as u64);
            assert_eq!(planned.probes, built.num_probes());
        }
        assert_eq!(plan(0, 10.0).fpr(), 0.0);
    }

    #[test]
    fn bits_per_key_inverts_fpr() {
        for target in [0.5, 0.1, 0.01, 1e-3, 1e-6] {
            let bits = bits_per_key_for(target);
            let at = |b: f64| plan(LARGE_N, b).fpr();
            assert!(at(bits * 1.002) <= target, "{target}: {bits}");
            assert!(at(bits * 0.998) > target, "{target}: {bits}");
        }
        // Blocking costs about 3% at 1%: 9.9 bits/key against 9.59 for a
        // standard Bloom filter.
        let b = bits_per_key_for(0.01);
        assert!((9.85..9.95).contains(&b), "{b}");
    }
}
