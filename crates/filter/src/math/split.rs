//! The split-block Bloom filter's FPR ([`crate::SplitBlockBloom`]): 256-bit
//! blocks of 8 lanes, each key one bit in each of `k` consecutive lanes
//! (cyclically, from a random lane `r`).
//!
//! Fix a non-member's window at lanes `0..k` (every window is alike by
//! symmetry). It passes when, for each of its lanes `j`, the one bit it
//! tests is set. Write `c_j` for the number of the block's keys whose
//! window covers lane `j`; each of them set a uniform bit of the lane, so
//! the bit is clear with probability `a^{c_j}`, `a = 31/32`, independently
//! across lanes. Inclusion-exclusion over the set `S` of lanes found
//! clear gives `P(pass) = Σ_S (-1)^{|S|} a^{Σ_{j∈S} c_j}`. A key covers
//! `|W_r ∩ S|` lanes of `S`, independently of the others, so over the
//! binomial load of the block (each of `n` keys lands in it with
//! probability `q = 1/blocks`):
//!
//! `p = Σ_{S ⊆ 0..k} (-1)^{|S|} (1 - q(1 - g_S))^n`, with
//! `g_S = (1/8) Σ_r a^{|W_r ∩ S|}`.
//!
//! This is exact for the layout: no Poisson or independence
//! approximation, only the uniform hash.

/// Lanes per block, and the most probes.
const LANES: u32 = 8;
/// Bits per lane.
const LANE_BITS: f64 = 32.0;
/// Bits per block.
const BLOCK_BITS: f64 = 256.0;

/// Expected FPR of a split-block Bloom filter of `m` bits (`m/256` blocks,
/// at least one) holding `n` distinct keys with `k` probes each (`k`
/// capped at 8). 1 for `k = 0` (every key passes), 0 for `n = 0`.
#[must_use]
pub fn split_block_bloom_fpr(m: u64, n: u64, k: u32) -> f64 {
    let blocks = (m as f64 / BLOCK_BITS).max(1.0);
    let share = 1.0 / blocks;
    // (1 - q(1-g))^n = exp(n · ln(1 - q(1-g))).
    pass_probability(k, |g| (n as f64 * (-share * (1.0 - g)).ln_1p()).exp())
}

/// [`split_block_bloom_fpr`] for many blocks at `bits_per_key`: the
/// binomial load becomes Poisson with mean `256 / bits_per_key`. What the
/// probe count is chosen by.
#[must_use]
pub fn split_block_bloom_fpr_at(bits_per_key: f64, k: u32) -> f64 {
    let load = BLOCK_BITS / bits_per_key;
    pass_probability(k, |g| (-load * (1.0 - g)).exp())
}

/// The probe count in `1..=8` minimising [`split_block_bloom_fpr_at`]:
/// 6 at 10 bits/key, 7 at 12, 8 at 16.
#[must_use]
pub fn split_block_bloom_probes(bits_per_key: f64) -> u32 {
    (1..=LANES)
        .min_by(|&a, &b| {
            split_block_bloom_fpr_at(bits_per_key, a)
                .total_cmp(&split_block_bloom_fpr_at(bits_per_key, b))
        })
        .unwrap_or(1)
}

/// `Σ_S (-1)^{|S|} pgf(g_S)` over the subsets `S` of lanes `0..k`, where
/// `pgf(g) = E[g^L]` is the probability generating function of the
/// block's load `L`.
fn pass_probability(k: u32, pgf: impl Fn(f64) -> f64) -> f64 {
    let k = k.min(LANES);
    let clear = 1.0 - 1.0 / LANE_BITS;
    (0u32..1 << k)
        .map(|subset| {
            let g = (0..LANES)
                .map(|r| clear.powi(covered(subset, r, k) as i32))
                .sum::<f64>()
                / f64::from(LANES);
            let sign = if subset.count_ones() % 2 == 0 {
                1.0
            } else {
                -1.0
            };
            sign * pgf(g)
        })
        .sum::<f64>()
        .clamp(0.0, 1.0)
}

/// Lanes of `subset` (a bit mask of lanes) inside the window of `k` lanes
/// from lane `r`.
fn covered(subset: u32, r: u32, k: u32) -> u32 {
    let run = if k >= LANES { 0xff } else { (1u32 << k) - 1 };
    let window = ((run << r) | (run >> ((LANES - r) % LANES))) & 0xff;
    (subset & window).count_ones()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_cover_the_right_lanes() {
        assert_eq!(covered(0xff, 0, 3), 3);
        assert_eq!(covered(0b1000_0001, 6, 3), 2); // lanes 6, 7, 0
        assert_eq!(covered(0b0000_0001, 7, 2), 1); // lanes 7, 0
        assert_eq!(covered(0xff, 5, 8), 8);
        assert_eq!(covered(0, 2, 5), 0);
    }

    /// With `k = 8` every key covers every lane, and the formula is the
    /// Parquet split-block one: `E[(1 - a^L)^8]` over the block load `L`.
    #[test]
    fn eight_probes_is_the_parquet_formula() {
        let (blocks, n) = (1_000u64, 25_600u64);
        let q = 1.0 / blocks as f64;
        let a: f64 = 31.0 / 32.0;
        let mut pmf = (n as f64 * (-q).ln_1p()).exp();
        let mut direct = 0.0;
        for load in 0..=400u64 {
            if load > 0 {
                pmf *= (n - load + 1) as f64 / load as f64 * q / (1.0 - q);
            }
            direct += pmf * (1.0 - a.powi(load as i32)).powi(8);
        }
        let formula = split_block_bloom_fpr(blocks * 256, n, 8);
        assert!((formula / direct - 1.0).abs() < 1e-9, "{formula} {direct}");
    }

    /// One probe tests one uniform bit of the block: `1 - (1 - 1/256)^n`
    /// for a single block.
    #[test]
    fn one_probe_one_block() {
        let p = split_block_bloom_fpr(256, 100, 1);
        let direct = 1.0 - (1.0f64 - 1.0 / 256.0).powi(100);
        assert!((p - direct).abs() < 1e-12, "{p} {direct}");
    }

    #[test]
    fn edges_and_probe_choice() {
        assert_eq!(split_block_bloom_fpr(1 << 20, 0, 6), 0.0);
        assert_eq!(split_block_bloom_fpr(1 << 20, 1_000, 0), 1.0);
        assert_eq!(
            split_block_bloom_fpr(1 << 20, 1_000, 9),
            split_block_bloom_fpr(1 << 20, 1_000, 8)
        );
        assert_eq!(split_block_bloom_probes(10.0), 6);
        assert_eq!(split_block_bloom_probes(16.0), 8);
        assert_eq!(split_block_bloom_probes(1.0), 1);
        // The Poisson limit agrees with the binomial formula on a big filter.
        let (m, n) = (256 * 100_000u64, 2_560_000u64);
        let (exact, limit) = (
            split_block_bloom_fpr(m, n, 6),
            split_block_bloom_fpr_at(10.0, 6),
        );
        assert!((exact / limit - 1.0).abs() < 1e-4, "{exact} {limit}");
        // Near 0.9% at 10.5 bits/key, 0.82% at 11 with 8 probes (Parquet's).
        let p = split_block_bloom_fpr_at(10.5, 6);
        assert!((0.0090..0.0094).contains(&p), "{p}");
        let p = split_block_bloom_fpr_at(11.0, 8);
        assert!((0.0080..0.0084).contains(&p), "{p}");
    }
}
