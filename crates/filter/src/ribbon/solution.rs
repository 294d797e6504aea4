//! Back-substitution into the interleaved layout, and the query.

use super::banding::ResultRow;
use super::hashing::Equation;
use super::layout::{Layout, MAX_COLUMNS, WIDTH, column_mask};

/// A block's worth of zero segments: what a start in the last block (at
/// offset 0, so with no coefficient in the following block) reads in place
/// of the block that does not exist.
const ZEROS: [u64; 2 * MAX_COLUMNS as usize] = [0; 2 * MAX_COLUMNS as usize];

/// Solves the banded system into segments laid out by `layout` (two
/// `u64` halves per segment: slots 0-63, then 64-127).
///
/// Slots are solved from last to first. For column `j`, `state[j]` holds
/// the solution bits of the 128 slots from the current one on (bit 0 = the
/// current slot). A settled row's pivot is its slot, so the slot's bit is
/// whatever makes the row's parity equal its result bit; a free slot is
/// unconstrained and gets 0. When a slot begins a block, `state` holds the
/// whole block: its columns are stored. All columns advance together, slot
/// by slot, so their independent dependency chains overlap in the CPU.
pub(super) fn back_substitute<R: ResultRow>(
    coeffs: &[[u64; 2]],
    results: &[R],
    layout: &Layout,
) -> Vec<u64> {
    let mut words = vec![0u64; 2 * layout.num_segments() as usize];
    let mut state = [[0u64; 2]; MAX_COLUMNS as usize];
    let state = state
        .get_mut(..layout.upper_columns() as usize)
        .unwrap_or_default();
    let width = WIDTH as usize;
    let blocks = coeffs.chunks_exact(width).zip(results.chunks_exact(width));
    for (block, (block_coeffs, block_results)) in blocks.enumerate().rev() {
        for (c, r) in block_coeffs.iter().zip(block_results).rev() {
            let r = r.widen();
            for (j, s) in state.iter_mut().enumerate() {
                let (lo, hi) = (s[0] << 1, (s[1] << 1) | (s[0] >> 63));
                let bit = u64::from(((lo & c[0]) ^ (hi & c[1])).count_ones()) ^ (r >> j);
                *s = [lo | (bit & 1), hi];
            }
        }
        let block = block as u64;
        let first = 2 * layout.first_segment(block) as usize;
        let stored = 2 * layout.columns(block) as usize;
        if let Some(out) = words.get_mut(first..first + stored) {
            for (pair, s) in out.as_chunks_mut::<2>().0.iter_mut().zip(state.iter()) {
                *pair = *s;
            }
        }
    }
    words
}

/// Whether the stored solution satisfies `eq` in the columns of its start's
/// block: `true` for every key the solution was built from.
///
/// The equation's 128 coefficients begin at bit `offset` of the start's
/// block and run into the next block, so the row is split into the part
/// over this block (`coeff << offset`) and the part over the next
/// (`coeff >> (128 - offset)`), each as two 64-bit halves. A column's bit is
/// the parity of its four AND-ed words; all columns are compared at once,
/// with no branch per column.
#[inline]
pub(super) fn satisfies(words: &[u64], layout: &Layout, eq: Equation) -> bool {
    let block = eq.start / WIDTH;
    let offset = (eq.start % WIDTH) as u32;
    let columns = layout.columns(block);
    let first = 2 * layout.first_segment(block) as usize;
    let len = 2 * columns as usize;
    // Only a forged layout could miss here; a filter that cannot answer
    // says "may contain".
    let Some(here) = words.get(first..first + len) else {
        return true;
    };
    let next = words
        .get(first + len..first + 2 * len)
        .or_else(|| ZEROS.get(..len))
        .unwrap_or_default();
    let lo = eq.coeff << offset;
    // Two shifts: a single `>> (128 - offset)` would overflow at offset 0.
    let hi = (eq.coeff >> 1) >> (WIDTH as u32 - 1 - offset);
    let (lo0, lo1, hi0, hi1) = (lo as u64, (lo >> 64) as u64, hi as u64, (hi >> 64) as u64);
    // Last column first, so that column `j` ends in bit `j`; the shifted
    // accumulator also keeps the compiler from vectorising the loop into a
    // slower SIMD popcount.
    let pairs = here.as_chunks::<2>().0.iter().zip(next.as_chunks::<2>().0);
    let got = pairs.rev().fold(0u64, |got, (h, n)| {
        let x = (h[0] & lo0) ^ (h[1] & lo1) ^ (n[0] & hi0) ^ (n[1] & hi1);
        (got << 1) | u64::from(x.count_ones() & 1)
    });
    got == eq.result & column_mask(columns)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hash::mix64;

    fn random_words(seed: u64, n: usize) -> Vec<u64> {
        (0..n as u64)
            .map(|i| mix64(seed ^ (i + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15)))
            .collect()
    }

    /// `satisfies` against the definition: the parity of the solution bits
    /// of slots `start..start + 128` selected by the coefficients, per
    /// column of the start's block, for every column count up to 64.
    #[test]
    fn satisfies_matches_the_definition() {
        for upper in 1..=MAX_COLUMNS {
            let blocks = 3;
            let layout = Layout::new(blocks * WIDTH, blocks * u64::from(upper) - 1).unwrap();
            let words = random_words(u64::from(upper), 2 * layout.num_segments() as usize);
            let bit = |slot: u64, column: u32| {
                let block = slot / WIDTH;
                let word =
                    2 * (layout.first_segment(block) + u64::from(column)) + (slot % WIDTH) / 64;
                (words[word as usize] >> (slot % 64)) & 1
            };
            for i in 0..300u64 {
                let r = random_words(i ^ (u64::from(upper) << 32), 3);
                let start = crate::hash::fastrange64(r[0], layout.num_starts());
                let coeff = (u128::from(r[1]) << 64 | u128::from(r[2])) | 1;
                let columns = layout.columns(start / WIDTH);
                let truth = (0..columns).fold(0u64, |acc, c| {
                    let p = (0..128)
                        .filter(|&k| (coeff >> k) & 1 == 1)
                        .fold(0, |p, k| p ^ bit(start + k, c));
                    acc | (p << c)
                });
                let eq = |result| Equation {
                    start,
                    coeff,
                    result,
                };
                assert!(satisfies(&words, &layout, eq(truth)), "{upper} {i}");
                // Flipping any checked result bit breaks it; unchecked bits
                // (above the block's columns) do not matter.
                if columns > 0 {
                    let flip = 1 << (i % u64::from(columns));
                    assert!(!satisfies(&words, &layout, eq(truth ^ flip)));
                }
                if columns < 64 {
                    assert!(satisfies(&words, &layout, eq(truth | (1 << columns))));
                }
            }
        }
    }
}
