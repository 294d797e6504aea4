//! Where a key's three slots are: three blocks (XOR filter) or three
//! consecutive segments (binary fuse filter), each a function of the key's
//! placing hash `x` (`hashing.rs`) alone.
#![deny(clippy::indexing_slicing)]

use std::fmt::Debug;

use crate::codec::{FilterKind, Reader, Writer};
use crate::error::DecodeError;
use crate::hash::fastrange64;
use crate::math;

/// Most slots in one filter: slot numbers and key numbers are `u32` while
/// building, and an 8-bit filter's body must fit the envelope's `u32`
/// length anyway.
pub(super) const MAX_SLOTS: u64 = u32::MAX as u64;

/// The shape of one XOR-family filter: how many slots, and which three a
/// key uses. The three are always distinct (they lie in distinct blocks or
/// segments), which peeling relies on.
pub(super) trait Layout: Copy + Debug + Eq + Send + Sync + 'static {
    /// The kind an encoding with this layout is.
    const KIND: FilterKind;
    /// The filter's name in messages.
    const NAME: &'static str;

    /// The layout built for `n ≥ 1` keys, or `None` past [`MAX_SLOTS`].
    fn for_keys(n: u64) -> Option<Self>;

    /// The layout of the empty filter: no slots.
    fn empty() -> Self;

    /// Number of slots (fingerprints).
    fn slots(&self) -> u64;

    /// The three slots of a key placed at `x`: each below
    /// [`slots`](Self::slots) unless the layout is empty.
    fn positions(&self, x: u64) -> [usize; 3];

    /// Appends the layout's body fields.
    fn write(&self, w: &mut Writer);

    /// Reads the layout's body fields, rejecting any out of range.
    fn read(r: &mut Reader<'_>) -> Result<Self, DecodeError>;
}

/// The XOR filter's layout (Graf & Lemire 2020): three blocks of
/// `block_len` slots; a key has one slot in each, at
/// `i·block_len + fastrange(rotl(x, 21·i), block_len)` for `i` in `0..3`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Blocks {
    block_len: u64,
}

impl Blocks {
    /// Slots per block.
    pub(super) fn block_len(&self) -> u64 {
        self.block_len
    }
}

impl Layout for Blocks {
    const KIND: FilterKind = FilterKind::Xor;
    const NAME: &'static str = "XOR filter";

    fn for_keys(n: u64) -> Option<Self> {
        let block_len = math::xor_block_length(n);
        (block_len <= MAX_SLOTS / 3).then_some(Self { block_len })
    }

    fn empty() -> Self {
        Self { block_len: 0 }
    }

    fn slots(&self) -> u64 {
        3 * self.block_len
    }

    #[inline]
    fn positions(&self, x: u64) -> [usize; 3] {
        let len = self.block_len;
        [
            fastrange64(x, len) as usize,
            (len + fastrange64(x.rotate_left(21), len)) as usize,
            (2 * len + fastrange64(x.rotate_left(42), len)) as usize,
        ]
    }

    fn write(&self, w: &mut Writer) {
        w.u64(self.block_len);
    }

    fn read(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        let block_len = r.u64()?;
        if block_len > MAX_SLOTS / 3 {
            return Err(DecodeError::Invalid("XOR filter block length too large"));
        }
        Ok(Self { block_len })
    }
}

/// The binary fuse filter's layout (Graf & Lemire 2022, 3-wise):
/// `count + 2` segments of `2^log2_len` slots. A key picks a start
/// `h0 = fastrange(x, count · len)` in the first `count` segments, and
/// slots in the next two segments at the same offset XOR-ed with bits of
/// `x`: `h1 = (h0 + len) ^ ((x >> 18) & (len − 1))`,
/// `h2 = (h0 + 2·len) ^ (x & (len − 1))`. Adding `len` moves to the next
/// segment (`len` is a power of two), and the XOR changes only the offset
/// inside it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Segments {
    log2_len: u8,
    count: u64,
    /// `2^log2_len`.
    len: u64,
    /// `count · len`: the range of `h0`.
    span: u64,
}

impl Segments {
    /// A layout of `count` start segments of `2^log2_len` slots, or `None`
    /// past [`math::BINARY_FUSE_MAX_LOG2_SEGMENT_LENGTH`] or [`MAX_SLOTS`].
    /// `count = 0` is the empty layout, whose `log2_len` must be 0.
    pub(super) fn new(log2_len: u8, count: u64) -> Option<Self> {
        if u32::from(log2_len) > math::BINARY_FUSE_MAX_LOG2_SEGMENT_LENGTH
            || (count == 0 && log2_len != 0)
        {
            return None;
        }
        let len = 1u64 << log2_len;
        let slots = count.checked_add(2)?.checked_mul(len)?;
        (slots <= MAX_SLOTS).then_some(Self {
            log2_len,
            count,
            len,
            span: count * len,
        })
    }

    /// `log2` of the segment length.
    pub(super) fn log2_len(&self) -> u8 {
        self.log2_len
    }

    /// Segments a key's first slot can be in (the array has two more).
    pub(super) fn count(&self) -> u64 {
        self.count
    }
}

impl Layout for Segments {
    const KIND: FilterKind = FilterKind::BinaryFuse;
    const NAME: &'static str = "binary fuse filter";

    fn for_keys(n: u64) -> Option<Self> {
        let len = math::binary_fuse_segment_length(n);
        Self::new(
            len.trailing_zeros() as u8,
            math::binary_fuse_segment_count(n),
        )
    }

    fn empty() -> Self {
        Self {
            log2_len: 0,
            count: 0,
            len: 1,
            span: 0,
        }
    }

    fn slots(&self) -> u64 {
        match self.count {
            0 => 0,
            count => (count + 2) * self.len,
        }
    }

    #[inline]
    fn positions(&self, x: u64) -> [usize; 3] {
        let mask = self.len - 1;
        let h0 = fastrange64(x, self.span);
        [
            h0 as usize,
            ((h0 + self.len) ^ ((x >> 18) & mask)) as usize,
            ((h0 + 2 * self.len) ^ (x & mask)) as usize,
        ]
    }

    fn write(&self, w: &mut Writer) {
        w.u8(self.log2_len).u64(self.count);
    }

    fn read(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        let log2_len = r.u8()?;
        let count = r.u64()?;
        Self::new(log2_len, count).ok_or(DecodeError::Invalid(
            "binary fuse segment length or count out of range",
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hash::mix64;

    fn xs(n: u64) -> impl Iterator<Item = u64> {
        (0..n).map(|i| mix64(i.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ 0xa5))
    }

    /// Every position is in range, in its own block or segment, and the
    /// three are distinct.
    #[test]
    fn positions_stay_in_their_block_or_segment() {
        for n in [1u64, 2, 3, 10, 100, 1_000, 100_000] {
            let blocks = Blocks::for_keys(n).unwrap();
            let len = blocks.block_len();
            for x in xs(5_000) {
                let p = blocks.positions(x);
                for (i, &at) in p.iter().enumerate() {
                    assert_eq!(at as u64 / len, i as u64, "n={n}");
                }
            }
            let segments = Segments::for_keys(n).unwrap();
            let len = 1u64 << segments.log2_len();
            for x in xs(5_000) {
                let [a, b, c] = segments.positions(x).map(|p| p as u64);
                assert!(a / len < segments.count(), "n={n}");
                assert_eq!((b / len, c / len), (a / len + 1, a / len + 2), "n={n}");
                assert!(c < segments.slots());
            }
        }
    }

    /// Each slot of the array is used about equally often: starts are
    /// uniform over the first `count` segments, and offsets uniform.
    #[test]
    fn offsets_are_uniform_inside_segments() {
        let s = Segments::new(4, 8).unwrap();
        let mut hits = [[0u32; 16]; 3];
        let trials = 160_000;
        for x in xs(trials) {
            for (j, p) in s.positions(x).into_iter().enumerate() {
                hits[j][p % 16] += 1;
            }
        }
        // 10,000 expected per cell, σ ≈ 97: 600 is over 6σ.
        for row in hits {
            for h in row {
                assert!((f64::from(h) - 10_000.0).abs() < 600.0, "{h}");
            }
        }
    }

    #[test]
    fn layouts_round_trip_and_reject_out_of_range() {
        let read_segments = |log2: u8, count: u64| {
            let mut w = Writer::new();
            w.u8(log2).u64(count);
            let bytes = w.into_bytes();
            Segments::read(&mut Reader::new(&bytes))
        };
        assert_eq!(read_segments(13, 136), Ok(Segments::new(13, 136).unwrap()));
        assert_eq!(read_segments(0, 0), Ok(Segments::empty()));
        assert!(read_segments(19, 1).is_err());
        assert!(read_segments(3, 0).is_err());
        assert!(read_segments(18, u64::MAX).is_err());
        assert!(read_segments(18, (MAX_SLOTS >> 18) - 1).is_err());
        assert!(read_segments(18, (MAX_SLOTS >> 18) - 2).is_ok());

        let read_blocks = |len: u64| {
            let mut w = Writer::new();
            w.u64(len);
            let bytes = w.into_bytes();
            Blocks::read(&mut Reader::new(&bytes))
        };
        assert_eq!(read_blocks(0), Ok(Blocks::empty()));
        assert_eq!(
            read_blocks(MAX_SLOTS / 3).map(|b| b.slots()),
            Ok(MAX_SLOTS / 3 * 3)
        );
        assert!(read_blocks(MAX_SLOTS / 3 + 1).is_err());
    }

    #[test]
    fn empty_layouts_have_no_slots() {
        assert_eq!(Blocks::empty().slots(), 0);
        assert_eq!(Segments::empty().slots(), 0);
        assert_eq!(Segments::empty(), Segments::new(0, 0).unwrap());
    }
}
