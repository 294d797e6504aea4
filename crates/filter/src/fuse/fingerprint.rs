//! Fingerprint widths: the sealed [`Fingerprint`] trait, for `u8` and `u16`.
#![deny(clippy::indexing_slicing)]

use std::fmt::Debug;
use std::ops::BitXor;

use crate::codec::{Reader, Writer};
use crate::error::DecodeError;

mod sealed {
    /// Keeps [`Fingerprint`](super::Fingerprint) to the widths this crate
    /// encodes.
    pub trait Sealed {}
    impl Sealed for u8 {}
    impl Sealed for u16 {}
}

/// The fingerprint type of an XOR-family filter: `u8` (FPR `2^-8`, about
/// 9 bits/key in a binary fuse filter) or `u16` (`2^-16`, about 18).
/// Sealed: the encoding records the width, and only these two exist.
pub trait Fingerprint:
    sealed::Sealed + Copy + Default + Eq + BitXor<Output = Self> + Debug + Send + Sync + 'static
{
    /// Bits per fingerprint, recorded in the encoding.
    const BITS: u8;

    /// The fingerprint of a key whose hash has high half `hi`: its low
    /// `BITS` bits.
    #[doc(hidden)]
    fn of(hi: u64) -> Self;

    /// Appends `values`, little-endian.
    #[doc(hidden)]
    fn write_all(values: &[Self], w: &mut Writer);

    /// Reads `count` values, little-endian; the length is checked against
    /// the input before allocating.
    #[doc(hidden)]
    fn read_all(r: &mut Reader<'_>, count: usize) -> Result<Vec<Self>, DecodeError>;
}

impl Fingerprint for u8 {
    const BITS: u8 = 8;

    #[inline]
    fn of(hi: u64) -> Self {
        hi as u8
    }

    fn write_all(values: &[Self], w: &mut Writer) {
        w.bytes(values);
    }

    fn read_all(r: &mut Reader<'_>, count: usize) -> Result<Vec<Self>, DecodeError> {
        Ok(r.bytes(count)?.to_vec())
    }
}

impl Fingerprint for u16 {
    const BITS: u8 = 16;

    #[inline]
    fn of(hi: u64) -> Self {
        hi as u16
    }

    fn write_all(values: &[Self], w: &mut Writer) {
        let bytes: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
        w.bytes(&bytes);
    }

    fn read_all(r: &mut Reader<'_>, count: usize) -> Result<Vec<Self>, DecodeError> {
        let len = count
            .checked_mul(2)
            .ok_or(DecodeError::Invalid("fingerprint count overflows"))?;
        let (pairs, _) = r.bytes(len)?.as_chunks::<2>();
        Ok(pairs.iter().map(|&pair| u16::from_le_bytes(pair)).collect())
    }
}

/// Bytes per fingerprint.
pub(super) const fn bytes_of<F: Fingerprint>() -> u64 {
    F::BITS as u64 / 8
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip<F: Fingerprint>(values: &[F]) -> Vec<F> {
        let mut w = Writer::new();
        F::write_all(values, &mut w);
        let bytes = w.into_bytes();
        assert_eq!(bytes.len() as u64, values.len() as u64 * bytes_of::<F>());
        let mut r = Reader::new(&bytes);
        let back = F::read_all(&mut r, values.len()).unwrap();
        r.finish().unwrap();
        back
    }

    #[test]
    fn widths_round_trip_little_endian() {
        assert_eq!(round_trip(&[1u8, 0xff, 0]), [1, 0xff, 0]);
        assert_eq!(round_trip(&[0x1234u16, 0xffff, 0]), [0x1234, 0xffff, 0]);
        let mut w = Writer::new();
        u16::write_all(&[0x1234], &mut w);
        assert_eq!(w.into_bytes(), [0x34, 0x12]);
    }

    #[test]
    fn fingerprints_are_the_low_bits() {
        assert_eq!(u8::of(0xabcd_ef01_2345_6789), 0x89);
        assert_eq!(u16::of(0xabcd_ef01_2345_6789), 0x6789);
    }

    #[test]
    fn short_or_forged_input_is_an_error() {
        let mut r = Reader::new(&[1, 2, 3]);
        assert!(u16::read_all(&mut r, 2).is_err());
        assert!(u16::read_all(&mut r, usize::MAX).is_err());
        assert!(u8::read_all(&mut r, 4).is_err());
    }
}
