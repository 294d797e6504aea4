//! The AVX2 query: the whole block in one register, no multiply, no branch.
//!
//! `vpmovzxbd` spreads the 8 bytes of `hash.hi()` over the 8 lanes, a
//! shift keeps each byte's top 5 bits (the lane's bit, see `block.rs`), a
//! variable shift moves the window row's 1s to those bits, and `vptest`
//! asks whether the block holds the whole mask. About 10 instructions,
//! one load of the block and one of the (L1-resident) window row.

use core::arch::x86_64::{
    __m256i, _mm_cvtsi64_si128, _mm256_cvtepu8_epi32, _mm256_load_si256, _mm256_sllv_epi32,
    _mm256_srli_epi32, _mm256_testc_si256,
};

use super::block::{Block, Lanes};

/// Same answer as [`Block::contains`]. Callable only where
/// `QueryPath::detect` chose `Avx2`.
#[inline]
#[target_feature(enable = "avx2")]
pub(super) fn contains(block: &Block, hi: u64, window: &Lanes) -> bool {
    // SAFETY: `Block` is `repr(C, align(32))` and 32 bytes long, and so is
    // every row of `WINDOWS` (a 32-aligned table of 32-byte rows), as the
    // aligned loads require; any bit pattern is a valid `__m256i`.
    let (bits, ones) = unsafe {
        (
            _mm256_load_si256(block.0.as_ptr().cast::<__m256i>()),
            _mm256_load_si256(window.as_ptr().cast::<__m256i>()),
        )
    };
    let lane_bits = _mm256_srli_epi32::<3>(_mm256_cvtepu8_epi32(_mm_cvtsi64_si128(hi as i64)));
    let mask = _mm256_sllv_epi32(ones, lane_bits);
    // testc: CF = 1 iff `mask & !bits` is zero, that is, every bit is set.
    _mm256_testc_si256(bits, mask) != 0
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::KeyHash;
    use crate::block_array::QueryPath;
    use crate::hash::mix64;
    use crate::split::block::{LANES, WINDOWS, window_start};

    #[test]
    fn agrees_with_scalar_on_every_probe_count() {
        if QueryPath::detect() != QueryPath::Avx2 {
            return;
        }
        let mut state = 7u64;
        let mut next = || {
            state = mix64(state.wrapping_add(0x9e37_79b9_7f4a_7c15));
            state
        };
        let (mut yes, mut no) = (0, 0);
        for round in 0..4_000 {
            // Dense blocks (AND of 0..3 random words) so both answers occur.
            let mut block = Block::default();
            for lane in &mut block.0 {
                *lane = (0..round % 4).fold(u32::MAX, |acc, _| acc & next() as u32);
            }
            for k in 0..=LANES {
                let hash = KeyHash::from_parts(next(), next());
                let window = &WINDOWS.0[k][window_start(hash)];
                // SAFETY: `QueryPath::detect` found AVX2 above.
                let simd = unsafe { contains(&block, hash.hi(), window) };
                assert_eq!(
                    simd,
                    block.contains(hash, window),
                    "k {k} {hash:?} {block:?}"
                );
                if simd { yes += 1 } else { no += 1 }
            }
        }
        assert!(yes > 5_000 && no > 5_000, "{yes} yes, {no} no");
    }
}
