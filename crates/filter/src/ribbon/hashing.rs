//! From a [`KeyHash`] to one Ribbon equation: a start slot, a 128-bit
//! coefficient row and the expected result bits.
//!
//! The two 64-bit halves of the key hash feed two independent streams:
//!
//! - `x = mix64(lo ^ seed_lo)` gives the start (`fastrange64(x, starts)`,
//!   which reads the high bits of `x`) and the result bits (the low bits of
//!   `x`). `mix64` is a bijection and `lo` is uniform, so `x` is uniform and
//!   its high and low bits are independent: the expected result of a key
//!   says nothing about where it starts.
//! - `y = mix64(hi ^ seed_hi)` is the low half of the coefficient row and
//!   `mix64(y ^ COEFF_SALT)` the high half. The row is independent of the
//!   start and of the result, as a non-member's false-positive rate of
//!   `2^-r` requires (its answer is a fixed function of start and row).
//!
//! The seed is stirred into both halves *before* mixing, so a new seed moves
//! every key to an unrelated start and row; merely XOR-ing a seed into the
//! start would keep colliding keys colliding, and a retry after a failed
//! banding would fail again.

use crate::hash::{KeyHash, fastrange64, mix64};

/// Stirred into the coefficient's low half before deriving its high half, so
/// the two halves are not the same function of `y`. Any odd constant with
/// mixed bits works; this is the fractional part of the golden ratio
/// (Knuth's multiplicative-hashing constant).
const COEFF_SALT: u64 = 0x9e37_79b9_7f4a_7c15;

/// Turns the stored seed number into the two 64-bit values XOR-ed into the
/// key hash halves. Distinct seeds give unrelated values; seed 0 is not the
/// identity (the SplitMix64 increment keeps `mix64` away from its fixed
/// point at 0).
const SEED_STEP: u64 = 0x9e37_79b9_7f4a_7c15;
/// Separates the second seed value from the first: any constant with mixed
/// bits does (this one is an odd 64-bit multiplier from the xoshiro family).
const SEED_SPLIT: u64 = 0xd1b5_4a32_d192_ed03;

/// One key's equation: the solution bits in slots `start..start + 128`,
/// AND-ed with `coeff` (bit `i` is slot `start + i`), must have parity
/// `result` in every stored column.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Equation {
    pub(super) start: u64,
    /// Bit 0 is always set: the equation's pivot is its start slot.
    pub(super) coeff: u128,
    /// Uniform bits; callers mask them to the columns of the start's block.
    pub(super) result: u64,
}

/// Derives equations for one seed and one number of start slots.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct RowHasher {
    seed_lo: u64,
    seed_hi: u64,
    num_starts: u64,
}

impl RowHasher {
    /// A hasher for `seed` mapping starts onto `[0, num_starts)`.
    pub(super) fn new(seed: u32, num_starts: u64) -> Self {
        let seed_lo = mix64(u64::from(seed).wrapping_add(1).wrapping_mul(SEED_STEP));
        Self {
            seed_lo,
            seed_hi: mix64(seed_lo ^ SEED_SPLIT),
            num_starts,
        }
    }

    /// The start slot alone, for ordering keys before banding.
    #[inline]
    pub(super) fn start(&self, hash: KeyHash) -> u64 {
        fastrange64(mix64(hash.lo() ^ self.seed_lo), self.num_starts)
    }

    /// The full equation of `hash`.
    #[inline]
    pub(super) fn equation(&self, hash: KeyHash) -> Equation {
        let x = mix64(hash.lo() ^ self.seed_lo);
        let y = mix64(hash.hi() ^ self.seed_hi);
        let z = mix64(y ^ COEFF_SALT);
        Equation {
            start: fastrange64(x, self.num_starts),
            coeff: (u128::from(z) << 64) | u128::from(y) | 1,
            result: x,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hashes(n: u64) -> impl Iterator<Item = KeyHash> {
        (0..n).map(|i| KeyHash::of(&i.to_le_bytes()))
    }

    #[test]
    fn starts_stay_in_range_and_rows_have_a_pivot() {
        for starts in [1, 2, 129, 1_000_003] {
            let h = RowHasher::new(3, starts);
            for k in hashes(2_000) {
                let e = h.equation(k);
                assert!(e.start < starts);
                assert_eq!(e.start, h.start(k));
                assert_eq!(e.coeff & 1, 1);
            }
        }
    }

    /// Each coefficient bit above the pivot and each result bit is set for
    /// about half the keys: 20,000 keys give σ ≈ 0.0035 per bit, so 0.03 is
    /// over 8σ.
    #[test]
    fn coefficient_and_result_bits_are_balanced() {
        let h = RowHasher::new(0, 1 << 20);
        let n = 20_000;
        let mut coeff_ones = [0u32; 128];
        let mut result_ones = [0u32; 64];
        for k in hashes(n) {
            let e = h.equation(k);
            for (b, c) in coeff_ones.iter_mut().enumerate() {
                *c += ((e.coeff >> b) & 1) as u32;
            }
            for (b, c) in result_ones.iter_mut().enumerate() {
                *c += ((e.result >> b) & 1) as u32;
            }
        }
        for &ones in coeff_ones[1..].iter().chain(&result_ones) {
            let share = f64::from(ones) / n as f64;
            assert!((share - 0.5).abs() < 0.03, "{share}");
        }
    }

    /// A new seed moves keys independently: two keys sharing a start under
    /// one seed rarely share it under another.
    #[test]
    fn seeds_give_unrelated_equations() {
        let (a, b) = (RowHasher::new(0, 1 << 16), RowHasher::new(1, 1 << 16));
        let keys: Vec<_> = hashes(5_000).collect();
        let same_start = keys.iter().filter(|&&k| a.start(k) == b.start(k)).count();
        assert!(same_start < 5, "{same_start}");
        assert!(
            keys.iter()
                .all(|&k| a.equation(k).coeff != b.equation(k).coeff)
        );
    }
}
