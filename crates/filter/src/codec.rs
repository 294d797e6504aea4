//! The envelope every encoded filter shares, and bounds-checked readers and
//! writers for filter bodies. The byte layout is described in
//! `docs/format.md` (section "Filter encoding"); keep the two in step.
//!
//! ```text
//! offset  size  field
//! 0       4     magic b"SFLT"
//! 4       1     format version (1)
//! 5       1     filter kind (FilterKind)
//! 6       1     hash kind (HashKind)
//! 7       1     flags, reserved: 0
//! 8       4     body length, u32 LE
//! 12      len   body: kind-specific parameters then payload, little-endian
//! 12+len  8     xxh3_64 of bytes [0, 12+len), u64 LE
//! ```
#![deny(clippy::indexing_slicing)]

use xxhash_rust::xxh3::xxh3_64;

use crate::error::DecodeError;
use crate::hash::HashKind;

/// Magic bytes that open every encoded filter.
pub const MAGIC: [u8; 4] = *b"SFLT";
/// Envelope format version written by this build.
pub const FORMAT_VERSION: u8 = 1;
pub(crate) const HEADER_LEN: usize = 12;
const TRAILER_LEN: usize = 8;

/// Which filter an encoding holds. The discriminants are on disk: never
/// renumber, only append.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
#[non_exhaustive]
pub enum FilterKind {
    /// [`crate::StandardBloom`].
    StandardBloom = 1,
    /// [`crate::BlockedBloom`].
    BlockedBloom = 2,
    /// [`crate::Ribbon`].
    Ribbon = 3,
    /// [`crate::CountingBloom`].
    CountingBloom = 4,
    /// [`crate::CuckooFilter`].
    Cuckoo = 5,
    /// [`crate::ScalableBloom`].
    ScalableBloom = 6,
    /// [`crate::PartitionedBloom`].
    PartitionedBloom = 7,
    /// [`crate::AtomicBloom`].
    AtomicBloom = 8,
    /// [`crate::RangeFilter`]: answers ranges of `u64` keys, not key hashes.
    RangeFilter = 9,
    /// [`crate::XorFilter`], 8- or 16-bit fingerprints (a body field).
    Xor = 10,
    /// [`crate::BinaryFuseFilter`], 8- or 16-bit fingerprints (a body field).
    BinaryFuse = 11,
    /// [`crate::SplitBlockBloom`].
    SplitBlockBloom = 12,
}

impl FilterKind {
    /// Parses the kind byte of a header.
    pub fn from_u8(byte: u8) -> Result<Self, DecodeError> {
        Ok(match byte {
            1 => Self::StandardBloom,
            2 => Self::BlockedBloom,
            3 => Self::Ribbon,
            4 => Self::CountingBloom,
            5 => Self::Cuckoo,
            6 => Self::ScalableBloom,
            7 => Self::PartitionedBloom,
            8 => Self::AtomicBloom,
            9 => Self::RangeFilter,
            10 => Self::Xor,
            11 => Self::BinaryFuse,
            12 => Self::SplitBlockBloom,
            other => return Err(DecodeError::UnknownKind(other)),
        })
    }
}

/// Wraps `body` in the envelope: header, body, checksum.
#[must_use]
pub fn seal(kind: FilterKind, body: Writer) -> Vec<u8> {
    let body = body.into_bytes();
    let mut out = Vec::with_capacity(HEADER_LEN + body.len() + TRAILER_LEN);
    out.extend_from_slice(&MAGIC);
    out.push(FORMAT_VERSION);
    out.push(kind as u8);
    out.push(HashKind::Xxh3_128 as u8);
    out.push(0);
    // Bodies above 4 GiB would need a wider length field; filters that large
    // (~34 billion bits) are far beyond any table Sift writes.
    let len = u32::try_from(body.len()).unwrap_or(u32::MAX);
    out.extend_from_slice(&len.to_le_bytes());
    out.extend_from_slice(&body);
    let checksum = xxh3_64(&out);
    out.extend_from_slice(&checksum.to_le_bytes());
    out
}

/// Reads the kind named by an envelope's header without checking the rest.
pub fn peek_kind(bytes: &[u8]) -> Result<FilterKind, DecodeError> {
    let mut header = Reader::new(bytes);
    if header.array::<4>()? != MAGIC {
        return Err(DecodeError::BadMagic);
    }
    let _version = header.u8()?;
    FilterKind::from_u8(header.u8()?)
}

/// Checks the envelope (magic, version, kind, hash, length, checksum) and
/// returns a reader over the body.
pub fn open(bytes: &[u8], expected: FilterKind) -> Result<Reader<'_>, DecodeError> {
    let mut header = Reader::new(bytes);
    if header.array::<4>()? != MAGIC {
        return Err(DecodeError::BadMagic);
    }
    let version = header.u8()?;
    if version != FORMAT_VERSION {
        return Err(DecodeError::UnsupportedVersion(version));
    }
    let found = FilterKind::from_u8(header.u8()?)?;
    if found != expected {
        return Err(DecodeError::WrongKind { expected, found });
    }
    let hash = header.u8()?;
    if HashKind::from_u8(hash).is_none() {
        return Err(DecodeError::UnsupportedHash(hash));
    }
    if header.u8()? != 0 {
        return Err(DecodeError::Invalid("reserved flags are set"));
    }
    let body_len = header.u32()? as usize;
    let body = header.bytes(body_len)?;
    let stored = header.u64()?;
    header.finish()?;
    let checked_len = HEADER_LEN + body_len;
    let computed = xxh3_64(bytes.get(..checked_len).unwrap_or_default());
    if stored != computed {
        return Err(DecodeError::ChecksumMismatch { stored, computed });
    }
    Ok(Reader::new(body))
}

/// Appends little-endian fields to a filter body.
#[derive(Debug, Default)]
pub struct Writer {
    bytes: Vec<u8>,
}

impl Writer {
    /// An empty body.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Appends one byte.
    pub fn u8(&mut self, v: u8) -> &mut Self {
        self.bytes.push(v);
        self
    }

    /// Appends a `u32`, little-endian.
    pub fn u32(&mut self, v: u32) -> &mut Self {
        self.bytes.extend_from_slice(&v.to_le_bytes());
        self
    }

    /// Appends a `u64`, little-endian.
    pub fn u64(&mut self, v: u64) -> &mut Self {
        self.bytes.extend_from_slice(&v.to_le_bytes());
        self
    }

    /// Appends an `f64` as its IEEE-754 bits, little-endian.
    pub fn f64(&mut self, v: f64) -> &mut Self {
        self.u64(v.to_bits())
    }

    /// Appends each word, little-endian.
    pub fn words(&mut self, words: &[u64]) -> &mut Self {
        self.bytes.reserve(words.len() * 8);
        for w in words {
            self.bytes.extend_from_slice(&w.to_le_bytes());
        }
        self
    }

    /// Appends raw bytes.
    pub fn bytes(&mut self, bytes: &[u8]) -> &mut Self {
        self.bytes.extend_from_slice(bytes);
        self
    }

    /// The body written so far.
    #[must_use]
    pub fn into_bytes(self) -> Vec<u8> {
        self.bytes
    }
}

/// Reads little-endian fields from untrusted bytes. Every method checks
/// bounds and returns [`DecodeError::Truncated`] instead of panicking.
#[derive(Debug, Clone)]
pub struct Reader<'a> {
    bytes: &'a [u8],
    offset: usize,
}

impl<'a> Reader<'a> {
    /// A reader at the start of `bytes`.
    #[must_use]
    pub fn new(bytes: &'a [u8]) -> Self {
        Self { bytes, offset: 0 }
    }

    /// Bytes not yet read.
    #[must_use]
    pub fn remaining(&self) -> usize {
        self.bytes.len() - self.offset
    }

    /// Takes the next `n` bytes.
    pub fn bytes(&mut self, n: usize) -> Result<&'a [u8], DecodeError> {
        let truncated = DecodeError::Truncated {
            offset: self.offset,
            needed: n,
            available: self.remaining(),
        };
        let end = self.offset.checked_add(n).ok_or(truncated.clone())?;
        let slice = self.bytes.get(self.offset..end).ok_or(truncated)?;
        self.offset = end;
        Ok(slice)
    }

    /// Takes the next `N` bytes as an array.
    pub fn array<const N: usize>(&mut self) -> Result<[u8; N], DecodeError> {
        let mut out = [0; N];
        out.copy_from_slice(self.bytes(N)?);
        Ok(out)
    }

    /// Reads one byte.
    pub fn u8(&mut self) -> Result<u8, DecodeError> {
        Ok(u8::from_le_bytes(self.array()?))
    }

    /// Reads a little-endian `u32`.
    pub fn u32(&mut self) -> Result<u32, DecodeError> {
        Ok(u32::from_le_bytes(self.array()?))
    }

    /// Reads a little-endian `u64`.
    pub fn u64(&mut self) -> Result<u64, DecodeError> {
        Ok(u64::from_le_bytes(self.array()?))
    }

    /// Reads an `f64`; NaN and infinities are rejected as no encoder writes them.
    pub fn f64(&mut self) -> Result<f64, DecodeError> {
        let v = f64::from_bits(self.u64()?);
        if v.is_finite() {
            Ok(v)
        } else {
            Err(DecodeError::Invalid("non-finite float"))
        }
    }

    /// Reads `count` little-endian words. The length is checked against the
    /// input before allocating, so a forged count cannot exhaust memory.
    pub fn words(&mut self, count: usize) -> Result<Vec<u64>, DecodeError> {
        let len = count
            .checked_mul(8)
            .ok_or(DecodeError::Invalid("word count overflows"))?;
        let raw = self.bytes(len)?;
        Ok(raw
            .chunks_exact(8)
            .map(|c| {
                let mut w = [0; 8];
                w.copy_from_slice(c);
                u64::from_le_bytes(w)
            })
            .collect())
    }

    /// Fails unless every byte was read.
    pub fn finish(self) -> Result<(), DecodeError> {
        match self.remaining() {
            0 => Ok(()),
            extra => Err(DecodeError::TrailingBytes(extra)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Vec<u8> {
        let mut w = Writer::new();
        w.u8(7).u32(0xdead_beef).u64(42).f64(0.5).words(&[1, 2, 3]);
        seal(FilterKind::StandardBloom, w)
    }

    #[test]
    fn round_trip_reads_what_was_written() {
        let bytes = sample();
        assert_eq!(peek_kind(&bytes), Ok(FilterKind::StandardBloom));
        let mut r = open(&bytes, FilterKind::StandardBloom).unwrap();
        assert_eq!(r.u8(), Ok(7));
        assert_eq!(r.u32(), Ok(0xdead_beef));
        assert_eq!(r.u64(), Ok(42));
        assert_eq!(r.f64(), Ok(0.5));
        assert_eq!(r.words(3), Ok(vec![1, 2, 3]));
        assert_eq!(r.finish(), Ok(()));
    }

    #[test]
    fn each_header_fault_has_its_error() {
        let good = sample();
        let with = |i: usize, v: u8| {
            let mut b = good.clone();
            b[i] = v;
            b
        };
        let open_std = |b: &[u8]| open(b, FilterKind::StandardBloom).map(|_| ());
        assert_eq!(open_std(&with(0, b'X')), Err(DecodeError::BadMagic));
        assert_eq!(
            open_std(&with(4, 9)),
            Err(DecodeError::UnsupportedVersion(9))
        );
        assert_eq!(open_std(&with(5, 200)), Err(DecodeError::UnknownKind(200)));
        assert_eq!(
            open_std(&with(5, 2)),
            Err(DecodeError::WrongKind {
                expected: FilterKind::StandardBloom,
                found: FilterKind::BlockedBloom
            })
        );
        assert_eq!(
            open_std(&with(6, 77)),
            Err(DecodeError::UnsupportedHash(77))
        );
        assert_eq!(
            open_std(&with(7, 1)),
            Err(DecodeError::Invalid("reserved flags are set"))
        );
        assert!(matches!(
            open_std(&with(12, 8)),
            Err(DecodeError::ChecksumMismatch { .. })
        ));
        let mut longer = good.clone();
        longer.push(0);
        assert_eq!(open_std(&longer), Err(DecodeError::TrailingBytes(1)));
        for cut in 0..good.len() {
            assert!(
                open_std(&good[..cut]).is_err(),
                "prefix of {cut} bytes accepted"
            );
        }
    }

    #[test]
    fn reader_refuses_to_allocate_for_forged_counts() {
        let mut r = Reader::new(&[0; 16]);
        assert!(r.words(usize::MAX).is_err());
        assert!(matches!(
            r.words(1 << 40),
            Err(DecodeError::Truncated { .. })
        ));
        assert_eq!(r.words(2).map(|w| w.len()), Ok(2));
    }
}
