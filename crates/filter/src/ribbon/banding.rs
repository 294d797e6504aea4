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

use super::hashing::RowHasher;
use super::layout::{Layout, WIDTH, column_mask};
use crate::hash::KeyHash;

/// One settled equation. `coeff == 0` marks a free slot.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Row {
    pub(super) coeff: u128,
    pub(super) result: u64,
}

/// The banding matrix: one row per slot.
#[derive(Debug)]
pub(super) struct Banding {
    rows: Vec<Row>,
    pivots: u64,
}

/// Why [`Banding::add`] rejected an equation: it reduced to `0 = 1`, a
/// linear dependence the result bits do not satisfy. Another seed gives
/// other equations.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct Inconsistent;

impl Banding {
    /// An empty matrix of `num_slots` rows.
    pub(super) fn new(num_slots: usize) -> Self {
        Self {
            rows: vec![Row::default(); num_slots],
            pivots: 0,
        }
    }

    /// Frees every row, for another attempt with another seed.
    pub(super) fn clear(&mut self) {
        self.rows.fill(Row::default());
        self.pivots = 0;
    }

    /// The rows, slot by slot.
    pub(super) fn rows(&self) -> &[Row] {
        &self.rows
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
    pub(super) fn add(
        &mut self,
        start: usize,
        coeff: u128,
        result: u64,
    ) -> Result<(), Inconsistent> {
        debug_assert_eq!(coeff & 1, 1, "the pivot coefficient must be set");
        let (mut slot, mut coeff, mut result) = (start, coeff, result);
        // `None` cannot happen (rows stay in their window; see the module
        // comment), but if it did the equation could not be stored.
        while let Some(row) = self.rows.get_mut(slot) {
            if row.coeff == 0 {
                *row = Row { coeff, result };
                self.pivots += 1;
                return Ok(());
            }
            coeff ^= row.coeff;
            result ^= row.result;
            if coeff == 0 {
                return if result == 0 {
                    Ok(())
                } else {
                    Err(Inconsistent)
                };
            }
            let shift = coeff.trailing_zeros();
            slot += shift as usize;
            coeff >>= shift;
        }
        Err(Inconsistent)
    }

    /// Adds the equation of every hash under `hasher`, each key's result
    /// bits masked to the columns of its start's block.
    pub(super) fn add_all(
        &mut self,
        hashes: &[KeyHash],
        hasher: &RowHasher,
        layout: &Layout,
    ) -> Result<(), Inconsistent> {
        for &h in hashes {
            let eq = hasher.equation(h);
            let mask = column_mask(layout.columns(eq.start / WIDTH));
            self.add(eq.start as usize, eq.coeff, eq.result & mask)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_settle_shift_and_cancel() {
        let mut b = Banding::new(256);
        assert_eq!(b.add(0, 0b1011, 1), Ok(()));
        // Same pivot: XOR gives 0b0110 → shifted to slot 1 as 0b011.
        assert_eq!(b.add(0, 0b1101, 0), Ok(()));
        assert_eq!(b.rows()[1].coeff, 0b11);
        assert_eq!(b.rows()[1].result, 1);
        assert_eq!(b.pivots(), 2);
        // A duplicate is redundant, not a failure.
        assert_eq!(b.add(0, 0b1011, 1), Ok(()));
        assert_eq!(b.pivots(), 2);
        // The same row with another result contradicts it.
        assert_eq!(b.add(0, 0b1011, 0), Err(Inconsistent));
        b.clear();
        assert_eq!(b.pivots(), 0);
        assert!(b.rows().iter().all(|r| r.coeff == 0));
    }

    #[test]
    fn full_width_rows_stay_in_bounds() {
        let mut b = Banding::new(128);
        // 129 equations on 128 slots: at most 128 settle; the rest must
        // be redundant or inconsistent, never out of bounds.
        let mut x = 1u64;
        let mut ok = 0;
        for _ in 0..200 {
            x = crate::hash::mix64(x.wrapping_add(0x9e37_79b9_7f4a_7c15));
            let coeff = (u128::from(x) << 64 | u128::from(crate::hash::mix64(x))) | 1;
            ok += usize::from(b.add(0, coeff, x & 1).is_ok());
        }
        assert!(b.pivots() <= 128);
        assert!(ok >= 128);
    }
}
