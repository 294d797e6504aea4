//! The interleaved column-major layout (ICML) of a Ribbon solution, which
//! gives any number of bits per key.
//!
//! Slots are grouped in blocks of [`WIDTH`] (= 128). A block stores some
//! number `c` of columns, each as one 128-bit *segment* (bit `i` = slot
//! `128·block + i`), its segments in a row; blocks follow each other.
//! A key whose start lies in block `b` checks `c(b)` result bits, reading
//! block `b` and the block after it (its 128 coefficients straddle both).
//!
//! Fractional bits: with `s` segments over `B` blocks, the first
//! `upper_start_block = u·B - s` blocks hold `u - 1` columns and the rest
//! `u = ceil(s / B)` (the interleaved column-major layout of Dillinger &
//! Walzer 2021, as RocksDB's `SerializableInterleavedSolution` lays it out). Columns never decrease from
//! one block to the next, so every column a key checks in its start block
//! also exists in the following one.

/// Coefficient-row width: bits per row, slots per block.
pub(super) const WIDTH: u64 = 128;

/// Most result bits (columns) a block may store: FPR `2^-64` is far past
/// any use, and the result bits come from one 64-bit hash word.
pub(super) const MAX_COLUMNS: u32 = 64;

/// Where every column of every block lives, derived from the slot and
/// segment counts alone.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Layout {
    num_slots: u64,
    num_segments: u64,
    upper_columns: u32,
    upper_start_block: u64,
}

impl Layout {
    /// The layout of `num_segments` segments over `num_slots` slots, or
    /// `None` if `num_slots` is not a multiple of [`WIDTH`] or the segments
    /// do not fit in [`MAX_COLUMNS`] per block.
    pub(super) fn new(num_slots: u64, num_segments: u64) -> Option<Self> {
        if !num_slots.is_multiple_of(WIDTH) {
            return None;
        }
        let blocks = num_slots / WIDTH;
        if num_segments > blocks.checked_mul(u64::from(MAX_COLUMNS))? {
            return None;
        }
        let (upper_columns, upper_start_block) = match blocks {
            0 => (0, 0),
            _ => {
                let upper = num_segments.div_ceil(blocks);
                (upper as u32, upper * blocks - num_segments)
            }
        };
        Some(Self {
            num_slots,
            num_segments,
            upper_columns,
            upper_start_block,
        })
    }

    /// The fewest segments over `num_slots` slots whose expected FPR is at
    /// most `fpr`, or the most segments allowed if none reaches it.
    pub(super) fn for_fpr(num_slots: u64, fpr: f64) -> Option<Self> {
        let blocks = num_slots / WIDTH;
        // `upper` columns reach `2^-upper ≤ fpr`; then a share of starts in
        // blocks with one column fewer may raise the mixture up to `fpr`:
        // share·2^{1-u} + (1 - share)·2^{-u} ≤ fpr ⇔ share ≤ fpr·2^u - 1.
        let upper = (-fpr.log2()).ceil().clamp(1.0, f64::from(MAX_COLUMNS)) as u32;
        let share = (fpr * 2f64.powi(upper as i32) - 1.0).clamp(0.0, 1.0);
        let starts = num_slots.saturating_sub(WIDTH - 1);
        let lower_blocks = ((share * starts as f64) / WIDTH as f64) as u64;
        let mut layout = Self::new(
            num_slots,
            u64::from(upper) * blocks - lower_blocks.min(blocks),
        )?;
        // Rounding in the float steps above may overshoot by one block.
        while layout.fpr() > fpr && layout.upper_start_block > 0 {
            layout = Self::new(num_slots, layout.num_segments + 1)?;
        }
        Some(layout)
    }

    /// The layout spending about `total_bits` bits (rounded to whole
    /// segments, capped at [`MAX_COLUMNS`] per block).
    pub(super) fn for_bits(num_slots: u64, total_bits: f64) -> Option<Self> {
        let cap = (num_slots / WIDTH) * u64::from(MAX_COLUMNS);
        let segments = (total_bits / WIDTH as f64).round().clamp(0.0, cap as f64) as u64;
        Self::new(num_slots, segments)
    }

    pub(super) fn num_slots(&self) -> u64 {
        self.num_slots
    }

    pub(super) fn num_segments(&self) -> u64 {
        self.num_segments
    }

    /// Slots a key can start at: every start leaves room for 128
    /// coefficients. Zero for an empty layout.
    pub(super) fn num_starts(&self) -> u64 {
        self.num_slots.saturating_sub(WIDTH - 1)
    }

    /// Columns stored by block `block`.
    #[inline]
    pub(super) fn columns(&self, block: u64) -> u32 {
        self.upper_columns - u32::from(block < self.upper_start_block)
    }

    /// Index of the first segment of block `block`.
    #[inline]
    pub(super) fn first_segment(&self, block: u64) -> u64 {
        block * u64::from(self.upper_columns) - block.min(self.upper_start_block)
    }

    /// The most columns any block stores.
    pub(super) fn upper_columns(&self) -> u32 {
        self.upper_columns
    }

    /// Expected FPR: a query checks the columns of its start's block, so
    /// its FPR is `2^-c` for that block; starts are uniform, so blocks are
    /// weighted by their starts (128 each, but 1 for the last block).
    pub(super) fn fpr(&self) -> f64 {
        let starts = self.num_starts();
        if starts == 0 {
            return 0.0;
        }
        let lower = (self.upper_start_block * WIDTH).min(starts) as f64 / starts as f64;
        let upper = 2f64.powi(-(self.upper_columns as i32));
        lower * 2.0 * upper + (1.0 - lower) * upper
    }
}

/// The low `columns` bits set.
#[inline]
pub(super) fn column_mask(columns: u32) -> u64 {
    ((1u128 << columns) - 1) as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segments_spread_with_fewer_columns_first() {
        // 4 blocks, 10 segments: upper 3 columns, 2 blocks of 2 then 2 of 3.
        let l = Layout::new(512, 10).unwrap();
        assert_eq!((l.upper_columns(), l.upper_start_block), (3, 2));
        let cols: Vec<u32> = (0..4).map(|b| l.columns(b)).collect();
        assert_eq!(cols, [2, 2, 3, 3]);
        let firsts: Vec<u64> = (0..4).map(|b| l.first_segment(b)).collect();
        assert_eq!(firsts, [0, 2, 4, 7]);
        assert_eq!(l.first_segment(3) + u64::from(l.columns(3)), 10);
    }

    #[test]
    fn invalid_shapes_are_rejected() {
        assert!(Layout::new(100, 0).is_none());
        assert!(Layout::new(256, 2 * 64 + 1).is_none());
        assert!(Layout::new(0, 1).is_none());
        assert!(Layout::new(u64::MAX - 127, 0).is_some());
        assert_eq!(Layout::new(0, 0).unwrap().fpr(), 0.0);
    }

    #[test]
    fn fpr_mixes_block_column_counts() {
        // 7 columns everywhere.
        let l = Layout::new(1280, 70).unwrap();
        assert_eq!(l.fpr(), 1.0 / 128.0);
        // Half the blocks at 6: starts 5·128 of 1153 see 2^-6.
        let l = Layout::new(1280, 65).unwrap();
        let lower = 640.0 / 1153.0;
        assert!((l.fpr() - (lower / 64.0 + (1.0 - lower) / 128.0)).abs() < 1e-15);
        // No segments: every query passes.
        assert_eq!(Layout::new(1280, 0).unwrap().fpr(), 1.0);
    }

    #[test]
    fn for_fpr_is_the_cheapest_layout_meeting_the_target() {
        for slots in [128, 256, 12_800, 1 << 20] {
            for fpr in [0.5, 0.3, 0.01, 0.0078125, 1e-3, 1e-9] {
                let l = Layout::for_fpr(slots, fpr).unwrap();
                assert!(l.fpr() <= fpr, "{slots} {fpr}");
                let cheaper = Layout::new(slots, l.num_segments() - 1).unwrap();
                assert!(cheaper.fpr() > fpr, "{slots} {fpr}");
            }
        }
        // A power of two is met exactly with whole columns.
        assert_eq!(
            Layout::for_fpr(1280, 1.0 / 128.0).unwrap().num_segments(),
            70
        );
        // Below 2^-64 the cap applies.
        assert_eq!(
            Layout::for_fpr(256, 1e-30).unwrap().upper_columns(),
            MAX_COLUMNS
        );
    }

    #[test]
    fn for_bits_rounds_to_segments() {
        assert_eq!(
            Layout::for_bits(1280, 7.0 * 1000.0).unwrap().num_segments(),
            55
        );
        assert_eq!(Layout::for_bits(1280, 1e9).unwrap().num_segments(), 640);
        assert_eq!(Layout::for_bits(1280, 10.0).unwrap().num_segments(), 0);
    }

    #[test]
    fn masks() {
        assert_eq!(column_mask(0), 0);
        assert_eq!(column_mask(7), 0x7f);
        assert_eq!(column_mask(64), u64::MAX);
    }
}
