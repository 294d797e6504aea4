//! Sizes of the XOR-family filters: XOR filters (Graf & Lemire 2020) and
//! 3-wise binary fuse filters (Graf & Lemire 2022). Both store one
//! fingerprint of `s` bits per slot, and a key not in the set passes with
//! probability `2^-s` whatever the size ([`xor_family_fpr`]); the size is
//! the number of slots peeling needs to succeed with high probability.
//!
//! - XOR filter: `⌈1.23·n⌉ + 32` slots, rounded up to three equal blocks
//!   ([`xor_block_length`], [`xor_array_length`]).
//! - Binary fuse filter: segments of `L = 2^⌊log_{3.33}(n) + 2.25⌋` slots,
//!   at most `2^18` ([`binary_fuse_segment_length`]); a capacity of
//!   `⌈n · max(1.125, 0.875 + 0.25·ln(10^6)/ln(n))⌉` slots
//!   ([`binary_fuse_size_factor`]) becomes `c = max(1, ⌈capacity / L⌉ − 2)`
//!   start segments ([`binary_fuse_segment_count`]), and the array has two
//!   segments more, `(c + 2)·L` slots ([`binary_fuse_array_length`]).
//!
//! The factor 1.125 holds from one million keys on (9.0 bits/key at
//! `s = 8`); smaller sets get more slots per key, as peeling needs them.
//! Every function of `n` returns 0 for `n = 0` (the empty filter has no
//! slots) and saturates at `u64::MAX`.

/// The largest segment length of a binary fuse filter, `2^18`: the paper's
/// cap, past which longer segments stop helping.
pub const BINARY_FUSE_MAX_LOG2_SEGMENT_LENGTH: u32 = 18;

/// Slots per block of an XOR filter of `n` keys:
/// `⌈(⌈1.23·n⌉ + 32) / 3⌉`.
#[must_use]
pub fn xor_block_length(n: u64) -> u64 {
    if n == 0 {
        return 0;
    }
    let capacity = (u128::from(n) * 123).div_ceil(100) + 32;
    u64::try_from(capacity.div_ceil(3)).unwrap_or(u64::MAX)
}

/// Slots of an XOR filter of `n` keys: three blocks of
/// [`xor_block_length`].
#[must_use]
pub fn xor_array_length(n: u64) -> u64 {
    xor_block_length(n).saturating_mul(3)
}

/// Segment length of a binary fuse filter of `n` keys:
/// `2^⌊ln(n)/ln(3.33) + 2.25⌋`, at most
/// `2^`[`BINARY_FUSE_MAX_LOG2_SEGMENT_LENGTH`]. 4 for one key, 8,192 for
/// a million.
#[must_use]
pub fn binary_fuse_segment_length(n: u64) -> u64 {
    if n == 0 {
        return 0;
    }
    let log2 = ((n as f64).ln() / 3.33f64.ln() + 2.25).floor();
    // `log2 ≥ 2.25` for n ≥ 1; the cast saturates, the cap applies after.
    1 << (log2 as u32).min(BINARY_FUSE_MAX_LOG2_SEGMENT_LENGTH)
}

/// Slots per key a binary fuse filter of `n` keys is sized for, before
/// rounding to whole segments: `max(1.125, 0.875 + 0.25·ln(10^6)/ln(n))`
/// (`n` taken as at least 2). 1.125 from a million keys on; 1.375 at
/// 1,000, 5.86 at 2.
#[must_use]
pub fn binary_fuse_size_factor(n: u64) -> f64 {
    let n = n.max(2) as f64;
    (0.875 + 0.25 * 1e6f64.ln() / n.ln()).max(1.125)
}

/// Segments a key's first slot may fall in, for `n` keys:
/// `max(1, ⌈⌈n · factor⌉ / L⌉ − 2)` with `factor` =
/// [`binary_fuse_size_factor`] and `L` = [`binary_fuse_segment_length`].
#[must_use]
pub fn binary_fuse_segment_count(n: u64) -> u64 {
    if n == 0 {
        return 0;
    }
    // The float saturates to u64::MAX for absurd n.
    let capacity = (n as f64 * binary_fuse_size_factor(n)).ceil() as u64;
    capacity
        .div_ceil(binary_fuse_segment_length(n))
        .saturating_sub(2)
        .max(1)
}

/// Slots of a binary fuse filter of `n` keys: `(count + 2) · L`, with
/// [`binary_fuse_segment_count`] and [`binary_fuse_segment_length`].
/// 1,130,496 for a million keys.
#[must_use]
pub fn binary_fuse_array_length(n: u64) -> u64 {
    if n == 0 {
        return 0;
    }
    binary_fuse_segment_count(n)
        .saturating_add(2)
        .saturating_mul(binary_fuse_segment_length(n))
}

/// Bits per key of an XOR filter of `n` keys with `fingerprint_bits`-bit
/// fingerprints (the fingerprint array alone). 0 for `n = 0`.
#[must_use]
pub fn xor_bits_per_key(n: u64, fingerprint_bits: u32) -> f64 {
    per_key(xor_array_length(n), n, fingerprint_bits)
}

/// Bits per key of a binary fuse filter of `n` keys with
/// `fingerprint_bits`-bit fingerprints (the fingerprint array alone):
/// 9.04 at 8 bits for a million keys. 0 for `n = 0`.
#[must_use]
pub fn binary_fuse_bits_per_key(n: u64, fingerprint_bits: u32) -> f64 {
    per_key(binary_fuse_array_length(n), n, fingerprint_bits)
}

fn per_key(slots: u64, n: u64, fingerprint_bits: u32) -> f64 {
    if n == 0 {
        return 0.0;
    }
    slots as f64 * f64::from(fingerprint_bits) / n as f64
}

/// FPR of an XOR or binary fuse filter with `fingerprint_bits`-bit
/// fingerprints: `2^-s`. A non-member's fingerprint is uniform and
/// independent of its three slots, so it equals their XOR with exactly
/// this probability, whatever the filter holds.
#[must_use]
pub fn xor_family_fpr(fingerprint_bits: u32) -> f64 {
    0.5f64.powi(fingerprint_bits.min(1_000) as i32)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn xor_sizes() {
        assert_eq!(xor_block_length(0), 0);
        // 1 key: ⌈1.23⌉ + 32 = 34 slots, 12 per block.
        assert_eq!(xor_block_length(1), 12);
        assert_eq!(xor_array_length(1), 36);
        // 100 keys: 123 + 32 = 155, ⌈155/3⌉ = 52.
        assert_eq!(xor_block_length(100), 52);
        // 1M: 1,230,032 slots, 410,011 per block (1,230,033 in all).
        assert_eq!(xor_block_length(1_000_000), 410_011);
        assert!((xor_bits_per_key(1_000_000, 8) - 9.840_264).abs() < 1e-6);
        assert_eq!(xor_array_length(u64::MAX), u64::MAX);
    }

    #[test]
    fn segment_lengths() {
        assert_eq!(binary_fuse_segment_length(0), 0);
        // ⌊0 + 2.25⌋ = 2.
        assert_eq!(binary_fuse_segment_length(1), 4);
        assert_eq!(binary_fuse_segment_length(10), 16);
        assert_eq!(binary_fuse_segment_length(100), 64);
        // ln(1000)/ln(3.33) + 2.25 = 7.992.
        assert_eq!(binary_fuse_segment_length(1_000), 128);
        assert_eq!(binary_fuse_segment_length(1_000_000), 8_192);
        assert_eq!(binary_fuse_segment_length(100_000_000), 1 << 17);
        assert_eq!(binary_fuse_segment_length(u64::MAX), 1 << 18);
        for n in [1u64, 7, 999, 123_456, 1 << 40] {
            assert!(binary_fuse_segment_length(n).is_power_of_two());
        }
    }

    #[test]
    fn size_factors() {
        assert_eq!(binary_fuse_size_factor(1_000_000), 1.125);
        assert_eq!(binary_fuse_size_factor(50_000_000), 1.125);
        assert!((binary_fuse_size_factor(1_000) - 1.375).abs() < 1e-12);
        assert_eq!(binary_fuse_size_factor(1), binary_fuse_size_factor(2));
        assert!((binary_fuse_size_factor(2) - 5.857_892).abs() < 1e-6);
    }

    #[test]
    fn segment_counts_and_array_lengths() {
        assert_eq!(
            (binary_fuse_segment_count(0), binary_fuse_array_length(0)),
            (0, 0)
        );
        // 1 key: capacity 6, one 4-slot start segment, 12 slots.
        assert_eq!(binary_fuse_segment_count(1), 1);
        assert_eq!(binary_fuse_array_length(1), 12);
        // 1,000 keys: capacity 1,375, ⌈1375/128⌉ − 2 = 9, (9 + 2)·128.
        assert_eq!(binary_fuse_segment_count(1_000), 9);
        assert_eq!(binary_fuse_array_length(1_000), 1_408);
        // 1M keys: capacity 1,125,000, ⌈/8192⌉ = 138, 136 start segments.
        assert_eq!(binary_fuse_segment_count(1_000_000), 136);
        assert_eq!(binary_fuse_array_length(1_000_000), 1_130_496);
        assert_eq!(binary_fuse_array_length(u64::MAX), u64::MAX);
    }

    /// The target: BinaryFuse8 at ≤ 9.1 bits/key and ≤ 0.4% FPR at 1M keys.
    #[test]
    fn bits_per_key_and_fpr() {
        let bits = binary_fuse_bits_per_key(1_000_000, 8);
        assert!((bits - 9.043_968).abs() < 1e-6, "{bits}");
        assert!(bits <= 9.1);
        assert!((binary_fuse_bits_per_key(1_000_000, 16) - 2.0 * bits).abs() < 1e-9);
        assert_eq!(xor_family_fpr(8), 1.0 / 256.0);
        assert!(xor_family_fpr(8) <= 0.004);
        assert_eq!(xor_family_fpr(16), 1.0 / 65_536.0);
        assert_eq!(binary_fuse_bits_per_key(0, 8), 0.0);
        // Above 1.125 only by whole-segment rounding from a million keys on.
        for n in [1_000_000u64, 3_000_000, 10_000_000, 100_000_000] {
            let per_key = binary_fuse_array_length(n) as f64 / n as f64;
            let segment = binary_fuse_segment_length(n) as f64 / n as f64;
            assert!(per_key >= 1.125 && per_key <= 1.125 + 2.0 * segment, "{n}");
        }
    }
}
