//! On-the-fly Gaussian elimination ("banding") of Ribbon equations.
//!
//! Each slot holds at most one equation, whose lowest coefficient (its
//! pivot) is that slot. Adding an equation walks from its start: at a free
//! slot it settles; at a taken slot it is XOR-ed with the settled equation,
//! which cancels the pivot bit, and moves on to its next set coefficient.
//! Rows only ever shift towards later slots inside their original 128-bit
//! window, so the walk stays in bounds. The result is an upper-triangular
//! band matrix ready for back-substitution (Dillinger & Walzer 2021, §3;
//! the walk resembles linear probing in a hash table).
//!
//! Equations are added in order of their start (the key hashes are first
//! counting-sorted into coarse start buckets): the walks then sweep the
//! matrix front to back instead of missing the cache on every key, which
//! makes banding at 1M keys about five times faster. The order changes which
//! slot each row settles in, not whether the system is solvable.
//!
//! Result rows are stored in the narrowest unsigned type that holds the
//! layout's columns ([`ResultRow`]): at the usual 7 columns a slot takes 17
//! bytes instead of 24, which the build pays for in zeroing and cache misses.

use std::ops::BitXor;

use super::hashing::RowHasher;
use super::layout::{Layout, WIDTH, column_mask};
use crate::hash::KeyHash;

/// Buckets of the counting sort: few enough that their write cursors stay
/// in cache (16K cursors, 128 KiB), many enough that one bucket's slots do
/// too (at 50M keys, 3.2K slots or 54 KiB of matrix per bucket). Measured at
/// 1M keys, 2^14 buckets band a few percent faster than 2^10 or 2^12.
const MAX_BUCKETS_LOG2: u32 = 14;

/// An unsigned integer holding one slot's result bits (bit `j` = column
/// `j`).
pub(super) trait ResultRow: Copy + Default + Eq + BitXor<Output = Self> {
    /// Columns the type holds.
    const BITS: u32;
    /// The low bits of `bits` (callers mask to at most [`Self::BITS`]).
    fn truncate(bits: u64) -> Self;
    /// Widens back to `u64`.
    fn widen(self) -> u64;
}

macro_rules! result_row {
    ($($t:ty),*) => {$(
        impl ResultRow for $t {
            const BITS: u32 = <$t>::BITS;
            #[inline]
            fn truncate(bits: u64) -> Self {
                bits as $t
            }
            #[inline]
            fn widen(self) -> u64 {
                u64::from(self)
            }
        }
    )*};
}
result_row!(u8, u16, u32, u64);

/// The banding matrix: per slot, a coefficient row (two 64-bit halves,
/// bit 0 of the low half = the slot itself; all zero = free) and the row's
/// result bits.
#[derive(Debug)]
pub(super) struct Banding<R> {
    coeffs: Vec<[u64; 2]>,
    results: Vec<R>,
    pivots: u64,
    /// Whether any row was written since allocation (which zeroed them).
    dirty: bool,
    /// The hashes in start order, and their buckets, reused across seeds.
    sorted: Vec<KeyHash>,
    buckets: Vec<u16>,
}

/// Why banding failed: an equation reduced to `0 = 1`, a linear dependence
/// the result bits do not satisfy. Another seed gives other equations.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct Inconsistent;

impl<R: ResultRow> Banding<R> {
    /// An empty matrix of `num_slots` rows.
    pub(super) fn new(num_slots: usize) -> Self {
        Self {
            coeffs: vec![[0; 2]; num_slots],
            results: vec![R::default(); num_slots],
            pivots: 0,
            dirty: false,
            sorted: Vec::new(),
            buckets: Vec::new(),
        }
    }

    /// Coefficient rows, slot by slot.
    pub(super) fn coeffs(&self) -> &[[u64; 2]] {
        &self.coeffs
    }

    /// Result bits, slot by slot.
    pub(super) fn results(&self) -> &[R] {
        &self.results
    }

    /// Equations that settled in a slot of their own: those added, less
    /// those that were redundant (duplicates, or sums of others).
    pub(super) fn pivots(&self) -> u64 {
        self.pivots
    }

    /// Adds `coeff · solution[start..] = result`. An equation that reduces
    /// to `0 = 0` (a duplicate key, or the sum of earlier equations with
    /// matching results) is redundant and accepted without taking a slot.
    #[inline]
    pub(super) fn add(&mut self, start: usize, coeff: u128, result: R) -> Result<(), Inconsistent> {
        debug_assert_eq!(coeff & 1, 1, "the pivot coefficient must be set");
        let (mut slot, mut result) = (start, result);
        let (mut lo, mut hi) = (coeff as u64, (coeff >> 64) as u64);
        // `None` cannot happen (rows stay in their window; see the module
        // comment), but if it did the equation could not be stored.
        while let Some(row) = self.coeffs.get_mut(slot) {
            if row[0] | row[1] == 0 {
                *row = [lo, hi];
                if let Some(r) = self.results.get_mut(slot) {
                    *r = result;
                }
                self.pivots += 1;
                return Ok(());
            }
            lo ^= row[0];
            hi ^= row[1];
            result = result ^ self.results.get(slot).copied().unwrap_or_default();
            // Shift the row down to its new lowest set bit. Split in 64-bit
            // halves, which is faster than `u128` shifts here.
            if lo != 0 {
                let shift = lo.trailing_zeros();
                slot += shift as usize;
                // `(hi << 1) << (63 - shift)` is `hi << (64 - shift)` without
                // overflowing at shift 0.
                lo = (lo >> shift) | ((hi << 1) << (63 - shift));
                hi >>= shift;
            } else if hi != 0 {
                let shift = hi.trailing_zeros();
                slot += 64 + shift as usize;
                lo = hi >> shift;
                hi = 0;
            } else if result == R::default() {
                return Ok(());
            } else {
                return Err(Inconsistent);
            }
        }
        Err(Inconsistent)
    }

    /// Frees every row, then adds the equation of every hash under
    /// `hasher`, each key's result bits masked to the columns of its start's
    /// block, in start order.
    pub(super) fn band(
        &mut self,
        hashes: &[KeyHash],
        hasher: &RowHasher,
        layout: &Layout,
    ) -> Result<(), Inconsistent> {
        debug_assert!(layout.upper_columns() <= R::BITS);
        if self.dirty {
            self.coeffs.fill([0; 2]);
            self.results.fill(R::default());
        }
        self.dirty = true;
        self.pivots = 0;
        let shift = bucket_shift(layout.num_starts());
        let (mut sorted, mut buckets) = (
            std::mem::take(&mut self.sorted),
            std::mem::take(&mut self.buckets),
        );
        sort_by_bucket(hashes, &mut sorted, &mut buckets, |h| {
            (hasher.start(h) >> shift) as u16
        });
        let outcome = sorted.iter().try_for_each(|&h| {
            let eq = hasher.equation(h);
            let mask = column_mask(layout.columns(eq.start / WIDTH));
            self.add(eq.start as usize, eq.coeff, R::truncate(eq.result & mask))
        });
        (self.sorted, self.buckets) = (sorted, buckets);
        outcome
    }
}

/// The shift that maps `[0, num_starts)` onto at most `2^MAX_BUCKETS_LOG2`
/// buckets.
fn bucket_shift(num_starts: u64) -> u32 {
    (64 - num_starts.leading_zeros()).saturating_sub(MAX_BUCKETS_LOG2)
}

/// Copies `items` into `out` ordered by `bucket` (below
/// `2^MAX_BUCKETS_LOG2`; within a bucket, input order): a counting sort,
/// one pass to count (remembering each item's bucket in `buckets`), one to
/// scatter.
fn sort_by_bucket<T: Copy>(
    items: &[T],
    out: &mut Vec<T>,
    buckets: &mut Vec<u16>,
    bucket: impl Fn(T) -> u16,
) {
    let mut cursors = vec![0usize; 1 << MAX_BUCKETS_LOG2];
    buckets.clear();
    buckets.extend(items.iter().map(|&item| bucket(item)));
    for &b in buckets.iter() {
        if let Some(c) = cursors.get_mut(usize::from(b)) {
            *c += 1;
        }
    }
    let mut total = 0;
    for c in &mut cursors {
        (*c, total) = (total, total + *c);
    }
    out.clear();
    let Some(&first) = items.first() else {
        return;
    };
    out.resize(items.len(), first);
    for (&item, &b) in items.iter().zip(buckets.iter()) {
        if let Some(c) = cursors.get_mut(usize::from(b))
            && let Some(place) = out.get_mut(*c)
        {
            *place = item;
            *c += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(b: &Banding<u64>, slot: usize) -> (u128, u64) {
        let [lo, hi] = b.coeffs()[slot];
        (u128::from(hi) << 64 | u128::from(lo), b.results()[slot])
    }

    #[test]
    fn rows_settle_shift_and_cancel() {
        let mut b = Banding::<u64>::new(256);
        assert_eq!(b.add(0, 0b1011, 1), Ok(()));
        // Same pivot: XOR gives 0b0110 → shifted to slot 1 as 0b011.
        assert_eq!(b.add(0, 0b1101, 0), Ok(()));
        assert_eq!(row(&b, 1), (0b11, 1));
        assert_eq!(b.pivots(), 2);
        // A duplicate is redundant, not a failure.
        assert_eq!(b.add(0, 0b1011, 1), Ok(()));
        assert_eq!(b.pivots(), 2);
        // The same row with another result contradicts it.
        assert_eq!(b.add(0, 0b1011, 0), Err(Inconsistent));
    }

    #[test]
    fn shifts_cross_the_halves() {
        let mut b = Banding::<u64>::new(256);
        let wide = (1u128 << 127) | (1 << 70) | (1 << 64) | 1;
        assert_eq!(b.add(3, wide, 5), Ok(()));
        // Cancels bits 0 and 64: the lowest left is 70, in the high half.
        assert_eq!(b.add(3, (1 << 64) | 1, 2), Ok(()));
        assert_eq!(row(&b, 73), ((1 << 57) | 1, 7));
        // Leaves bits 1, 64, 127: moves by one, bit 64 crossing halves.
        assert_eq!(b.add(3, (1 << 70) | 3, 0), Ok(()));
        assert_eq!(row(&b, 4), ((1 << 126) | (1 << 63) | 1, 5));
    }

    #[test]
    fn full_width_rows_stay_in_bounds() {
        let mut b = Banding::<u8>::new(128);
        // 200 equations on 128 slots: at most 128 settle; the rest must
        // be redundant or inconsistent, never out of bounds.
        let mut x = 1u64;
        let mut ok = 0;
        for _ in 0..200 {
            x = crate::hash::mix64(x.wrapping_add(0x9e37_79b9_7f4a_7c15));
            let coeff = (u128::from(x) << 64 | u128::from(crate::hash::mix64(x))) | 1;
            ok += usize::from(b.add(0, coeff, x as u8 & 1).is_ok());
        }
        assert!(b.pivots() <= 128);
        assert!(ok >= 128);
    }

    #[test]
    fn bucket_sort_orders_and_keeps_every_item() {
        for n in [0usize, 1, 5, 10_000] {
            let items: Vec<u64> = (0..n as u64).map(|i| crate::hash::mix64(i + 1)).collect();
            let (mut sorted, mut buckets) = (Vec::new(), Vec::new());
            sort_by_bucket(&items, &mut sorted, &mut buckets, |x| (x >> 50) as u16);
            assert!(sorted.windows(2).all(|w| w[0] >> 50 <= w[1] >> 50));
            let (mut a, mut b) = (items, sorted.clone());
            a.sort_unstable();
            b.sort_unstable();
            assert_eq!(a, b);
        }
        assert_eq!(bucket_shift(0), 0);
        assert_eq!(bucket_shift(1 << MAX_BUCKETS_LOG2), 1);
        assert_eq!(bucket_shift(1 << 40), 41 - MAX_BUCKETS_LOG2);
    }

    #[test]
    fn banding_sorts_and_restarts() {
        let hashes: Vec<KeyHash> = (0..3_000u64)
            .map(|i| KeyHash::of(&i.to_le_bytes()))
            .collect();
        let layout = Layout::new(3_200, 3_200 / 128 * 8).unwrap();
        let hasher = RowHasher::new(0, layout.num_starts());
        let mut b = Banding::<u8>::new(3_200);
        assert_eq!(b.band(&hashes, &hasher, &layout), Ok(()));
        assert!(
            b.sorted
                .windows(2)
                .all(|w| hasher.start(w[0]) <= hasher.start(w[1]))
        );
        assert_eq!(b.pivots(), 3_000);
        // Banding again starts from an empty matrix.
        assert_eq!(b.band(&hashes[..10], &hasher, &layout), Ok(()));
        assert_eq!(b.pivots(), 10);
        assert_eq!(b.coeffs().iter().filter(|c| c[0] | c[1] != 0).count(), 10);
    }
}
