//! How many slots `n` keys need, and how many seeds to try.
//!
//! Banding `n` equations into `m` slots fails when they turn out linearly
//! dependent with contradicting results. For 128-bit rows this stays rare
//! while `m/n` exceeds a factor that grows slowly with `m`: linearly in
//! `log2(m)` for large `m`, by about 0.0033 per doubling here (RocksDB,
//! whose `ribbon_config.cc` models it the same way, measured 0.0038 for
//! w = 128), while small `m` pay for the under-used slots at both ends of
//! the band.
//!
//! The factors below are this implementation's own measurements, made as
//! RocksDB's `FindOccupancy` test does: add random keys to `2^j` slots
//! under a fresh seed until banding first fails; the 5% quantile of that
//! count over 1,000 (j ≤ 14), 200 (j ≤ 18), 60 (j ≤ 22) or 30 (j ≤ 24)
//! trials is the load at which a seed fails with probability 5%.
//!
//! | log2 slots | 7 | 8 | 9 | 10 | 11 | 12 | 14 | 16 | 18 | 20 | 22 | 24 |
//! |---|---|---|---|---|---|---|---|---|---|---|---|---|
//! | slots / keys | 1.041 | 1.028 | 1.024 | 1.022 | 1.022 | 1.023 | 1.027 | 1.033 | 1.041 | 1.047 | 1.054 | 1.067 |
//!
//! Over `2^12 ..= 2^24` slots the least-squares line `0.9813 +
//! 0.00329·log2(m)` fits every point to ±0.007 (the 2^24 point, from 30
//! trials, is the noisiest); it is used from 2^13 slots on, the measured
//! points below, interpolated in `log2(m)`.

/// Seeds tried before giving up on Ribbon (the builder then falls back to
/// Bloom). Slot counts make each seed fail with probability about 5%, so
/// all fail with probability near `0.05^16 ≈ 2e-21`; even a load that made
/// every seed a coin flip would fall back once in 65,536 builds.
pub(super) const MAX_SEEDS: u32 = 16;

/// Largest slot count built or decoded: 2^40 slots (a 16 TiB banding
/// matrix) is far past any table, and keeps every index product below 2^64.
pub(super) const MAX_SLOTS: u64 = 1 << 40;

/// Most 128-bit segments in one filter: the envelope stores the body length
/// as a `u32`, and the body is 28 bytes of parameters plus 16 per segment
/// (about 2 billion keys at 1% FPR).
pub(super) const MAX_SEGMENTS: u64 = (u32::MAX as u64 - 28) / 16;

/// Measured `slots / keys` at 5% failure for `2^7 ..= 2^12` slots (see the
/// module table); the fitted line takes over from 2^13.
const SMALL_FACTORS: [f64; 6] = [1.041, 1.028, 1.024, 1.022, 1.022, 1.023];
/// First `log2(slots)` of [`SMALL_FACTORS`].
const SMALL_FIRST_LOG2: f64 = 7.0;
/// The fitted line for `log2(slots) ≥ 13`: intercept and slope.
const LARGE_INTERCEPT: f64 = 0.9813;
const LARGE_SLOPE: f64 = 0.00329;

/// `slots / keys` for about `slots` slots (log-linear interpolation of the
/// measured points below 2^12, the fitted line above).
fn factor(slots: f64) -> f64 {
    let line = |log2: f64| LARGE_INTERCEPT + LARGE_SLOPE * log2;
    let log2 = slots.max(1.0).log2();
    let pos = (log2 - SMALL_FIRST_LOG2).max(0.0);
    let i = pos as usize;
    // Point `i` of the table, or of the line just past its end.
    let point = |i: usize| {
        SMALL_FACTORS
            .get(i)
            .copied()
            .unwrap_or_else(|| line(SMALL_FIRST_LOG2 + i as f64))
    };
    if i >= SMALL_FACTORS.len() {
        return line(log2);
    }
    let t = pos - i as f64;
    point(i) + (point(i + 1) - point(i)) * t
}

/// `slots / keys` for `n` keys, `1 + ε` with ε the space overhead of
/// banding, before rounding up to whole blocks: 1.027 at 16,384 keys,
/// 1.047 at 1,000,000.
pub(crate) fn slots_per_key(n: u64) -> f64 {
    // The factor depends on the slot count it determines; one refinement
    // from `n` itself is exact to far below a block.
    let keys = n as f64;
    factor(keys * factor(keys))
}

/// Slots for `n` keys: a multiple of 128 (at least one block) such that
/// banding fails with probability about 5% per seed, or `None` past
/// [`MAX_SLOTS`]. Zero for no keys.
pub(super) fn num_slots(n: u64) -> Option<u64> {
    if n == 0 {
        return Some(0);
    }
    let slots = n as f64 * slots_per_key(n);
    let blocks = (slots / super::layout::WIDTH as f64).ceil().max(1.0) as u64;
    let slots = blocks.checked_mul(super::layout::WIDTH)?;
    (slots <= MAX_SLOTS).then_some(slots)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn factors_follow_the_measurements() {
        assert!((factor(128.0) - 1.041).abs() < 1e-12);
        assert!((factor(1024.0) - 1.022).abs() < 1e-12);
        assert!((factor(4096.0) - 1.023).abs() < 1e-12);
        assert!((factor(8192.0) - (0.9813 + 0.00329 * 13.0)).abs() < 1e-12);
        assert!((factor(1048576.0) - 1.047).abs() < 1e-3);
        // Continuous where the line takes over.
        assert!((factor(8191.9) - factor(8192.0)).abs() < 1e-6);
        assert!((factor(1.0) - 1.041).abs() < 1e-12);
    }

    #[test]
    fn slot_counts() {
        assert_eq!(num_slots(0), Some(0));
        assert_eq!(num_slots(1), Some(128));
        assert_eq!(num_slots(120), Some(128));
        assert_eq!(num_slots(125), Some(256));
        let m = num_slots(1_000_000).unwrap();
        assert_eq!(m % 128, 0);
        assert!((1.046..1.048).contains(&(m as f64 / 1e6)), "{m}");
        assert_eq!(num_slots(u64::MAX), None);
    }

    #[test]
    fn overhead_before_rounding() {
        assert!((slots_per_key(16_384) - 1.027).abs() < 1e-3);
        assert!((slots_per_key(1_000_000) - 1.047).abs() < 1e-3);
        // Whole blocks only add to it.
        let n = 1_000_000;
        let rounded = num_slots(n).unwrap() as f64 / n as f64;
        assert!((0.0..128.0 / n as f64).contains(&(rounded - slots_per_key(n))));
    }
}
