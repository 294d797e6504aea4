//! How many probes a key sets in its block.
//!
//! The standard-Bloom optimum `k = (m/n)·ln 2` assumes every key sees the
//! same load. In a blocked filter a key's block holds a Poisson number of
//! other keys, and an overloaded block costs more FPR than an underloaded
//! one saves, so the best `k` is the minimiser of the blocked formula
//! [`math::blocked_bloom_fpr`](crate::math::blocked_bloom_fpr), not the
//! classic one: 11 probes at 20 bits/key where `0.69·20` would give 14.
//!
//! That formula is a Poisson sum costing up to milliseconds per `k` at low
//! bits/key, too slow to run for every filter built. It depends on `m` and
//! `n` only through `m/n`, and its minimiser grows with `m/n`, so a table of
//! the bits/key at which each `k + 1` starts to beat `k` gives the minimiser
//! exactly. The test below recomputes the table from the formula.

/// Largest probe count: 3 rounds of the 8-lane SIMD query. The blocked
/// optimum reaches 24 at 95 bits/key (FPR ~1e-12), past any real use.
pub(super) const MAX_PROBES: u32 = 24;

/// `CROSSOVER[i]` is the bits/key from which `i + 2` probes give a lower
/// [`blocked_bloom_fpr`](crate::math::blocked_bloom_fpr) (512-bit blocks)
/// than `i + 1`. Found by bisection on that function (to 1e-9, stored
/// rounded to 1e-6); checked by `table_matches_the_formula`.
const CROSSOVER: [f64; MAX_PROBES as usize - 1] = [
    2.079_494, 3.576_060, 5.086_502, 6.643_335, 8.269_661, 9.987_818, 11.821_337, 13.795_854,
    15.939_821, 18.285_206, 20.868_282, 23.730_524, 26.919_673, 30.490_988, 34.508_753, 39.048_064,
    44.196_998, 50.059_213, 56.757_108, 64.435_651, 73.267_045, 83.456_420, 95.248_799,
];

/// The probe count minimising the blocked FPR at `bits_per_key` (`m/n`),
/// capped at [`MAX_PROBES`]. Below 2.08 bits/key that is 1.
#[must_use]
pub(super) fn for_bits_per_key(bits_per_key: f64) -> u32 {
    1 + CROSSOVER.iter().take_while(|&&t| bits_per_key >= t).count() as u32
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::math::blocked_bloom_fpr;

    /// `m/n = bits_per_key` to 1e-9 relative: a huge `m` and the nearest `n`.
    fn fpr(bits_per_key: f64, k: u32) -> f64 {
        let m = 512 * 1_000_000_000;
        blocked_bloom_fpr(m, (m as f64 / bits_per_key).round() as u64, k, 512)
    }

    fn minimiser(bits_per_key: f64) -> u32 {
        (1..=MAX_PROBES)
            .min_by(|&a, &b| fpr(bits_per_key, a).total_cmp(&fpr(bits_per_key, b)))
            .unwrap_or(0)
    }

    #[test]
    fn table_matches_the_formula() {
        let grid = (1..=80)
            .map(|i| f64::from(i) * 0.5)
            .chain((11..=30).map(|i| f64::from(i) * 4.0));
        for bits_per_key in grid {
            assert_eq!(
                for_bits_per_key(bits_per_key),
                minimiser(bits_per_key),
                "{bits_per_key} bits/key"
            );
        }
        for (i, &t) in CROSSOVER.iter().enumerate() {
            let k = i as u32 + 1;
            let (below, above) = (t * (1.0 - 1e-6), t * (1.0 + 1e-6));
            assert!(
                fpr(below, k) < fpr(below, k + 1),
                "{k} probes still best just below {t}"
            );
            assert!(
                fpr(above, k + 1) < fpr(above, k),
                "{} probes best just above {t}",
                k + 1
            );
            assert_eq!(
                (for_bits_per_key(below), for_bits_per_key(above)),
                (k, k + 1)
            );
        }
    }

    #[test]
    fn edges() {
        assert_eq!(for_bits_per_key(0.1), 1);
        assert_eq!(for_bits_per_key(10.0), 7);
        assert_eq!(for_bits_per_key(1e9), MAX_PROBES);
        assert_eq!(for_bits_per_key(f64::INFINITY), MAX_PROBES);
    }
}
