//! Little-endian integers, LEB128 varints and the block checksum shared by
//! every on-disk structure (WAL, manifest, SSTable).
//!
//! [`Decoder`] reads untrusted bytes: every read is bounds-checked and
//! reports [`Corrupt`] with the offset where the bytes ran out or made no
//! sense. Nothing here panics.

#![deny(clippy::indexing_slicing)]

use crate::error::Corrupt;

/// Checksum of a block or record: the low 32 bits of XXH3-64 (seed 0).
/// XXH3 is already Sift's hash; 32 bits detect a random corruption with
/// probability 1 - 2^-32, the same strength as LevelDB's masked CRC32C.
#[must_use]
pub(crate) fn checksum(bytes: &[u8]) -> u32 {
    xxhash_rust::xxh3::xxh3_64(bytes) as u32
}

/// Whether `bytes` carry the checksum `expected`. Fuzz builds
/// (`cfg(fuzzing)`, set by cargo-fuzz) accept any checksum, so that random
/// inputs reach the decoders behind it instead of stopping here.
#[must_use]
pub(crate) fn checksum_matches(bytes: &[u8], expected: u32) -> bool {
    cfg!(fuzzing) || checksum(bytes) == expected
}

/// Appends `value` as an unsigned LEB128 varint (at most 10 bytes).
pub(crate) fn put_varint(out: &mut Vec<u8>, mut value: u64) {
    while value >= 0x80 {
        out.push((value as u8) | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

/// Appends a varint length followed by the bytes themselves.
pub(crate) fn put_bytes(out: &mut Vec<u8>, bytes: &[u8]) {
    put_varint(out, bytes.len() as u64);
    out.extend_from_slice(bytes);
}

/// A bounds-checked reader over untrusted bytes.
#[derive(Debug, Clone)]
pub(crate) struct Decoder<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Decoder<'a> {
    /// Reads `bytes` from the start.
    pub(crate) fn new(bytes: &'a [u8]) -> Self {
        Self { bytes, pos: 0 }
    }

    /// Offset of the next unread byte.
    pub(crate) fn position(&self) -> usize {
        self.pos
    }

    /// Bytes not yet read.
    pub(crate) fn remaining(&self) -> usize {
        self.bytes.len() - self.pos
    }

    /// True once every byte has been read.
    pub(crate) fn is_empty(&self) -> bool {
        self.remaining() == 0
    }

    /// A complaint at the current position.
    pub(crate) fn error(&self, detail: impl Into<String>) -> Corrupt {
        Corrupt::new(self.pos as u64, detail)
    }

    /// The next `n` bytes.
    pub(crate) fn bytes(&mut self, n: usize, what: &str) -> Result<&'a [u8], Corrupt> {
        let out = self
            .pos
            .checked_add(n)
            .and_then(|end| self.bytes.get(self.pos..end))
            .ok_or_else(|| {
                self.error(format!(
                    "{what}: needs {n} bytes, {} left",
                    self.remaining()
                ))
            })?;
        self.pos += n;
        Ok(out)
    }

    /// The next `N` bytes as an array.
    fn array<const N: usize>(&mut self, what: &str) -> Result<[u8; N], Corrupt> {
        let mut out = [0; N];
        out.copy_from_slice(self.bytes(N, what)?);
        Ok(out)
    }

    /// A byte.
    pub(crate) fn u8(&mut self, what: &str) -> Result<u8, Corrupt> {
        Ok(self.array::<1>(what)?[0])
    }

    /// A little-endian `u16`.
    pub(crate) fn u16(&mut self, what: &str) -> Result<u16, Corrupt> {
        self.array(what).map(u16::from_le_bytes)
    }

    /// A little-endian `u32`.
    pub(crate) fn u32(&mut self, what: &str) -> Result<u32, Corrupt> {
        self.array(what).map(u32::from_le_bytes)
    }

    /// A little-endian `u64`.
    pub(crate) fn u64(&mut self, what: &str) -> Result<u64, Corrupt> {
        self.array(what).map(u64::from_le_bytes)
    }

    /// An unsigned LEB128 varint of at most 10 bytes that fits in 64 bits.
    #[inline]
    pub(crate) fn varint(&mut self, what: &str) -> Result<u64, Corrupt> {
        // Most varints (block entry lengths) are one byte: no loop for them.
        if let Some(&byte) = self.bytes.get(self.pos)
            && byte < 0x80
        {
            self.pos += 1;
            return Ok(u64::from(byte));
        }
        self.varint_long(what)
    }

    /// [`Decoder::varint`] of more than one byte (or at the end).
    fn varint_long(&mut self, what: &str) -> Result<u64, Corrupt> {
        let rest = self.bytes.get(self.pos..).unwrap_or_default();
        let mut value = 0u64;
        for (i, &byte) in rest.iter().take(10).enumerate() {
            let bits = u64::from(byte & 0x7f);
            if i == 9 && bits > 1 {
                return Err(self.error(format!("{what}: varint overflows 64 bits")));
            }
            value |= bits << (7 * i);
            if byte & 0x80 == 0 {
                self.pos += i + 1;
                return Ok(value);
            }
        }
        if rest.len() < 10 {
            let missing = Corrupt::new(
                self.bytes.len() as u64,
                format!("{what}: needs 1 bytes, 0 left"),
            );
            return Err(missing);
        }
        Err(self.error(format!("{what}: varint longer than 10 bytes")))
    }

    /// A varint that must be at most `max` and fit in `usize`.
    #[inline]
    pub(crate) fn varint_len(&mut self, max: usize, what: &str) -> Result<usize, Corrupt> {
        let start = self.pos;
        let value = self.varint(what)?;
        match usize::try_from(value) {
            Ok(len) if len <= max => Ok(len),
            _ => {
                self.pos = start;
                Err(self.error(format!("{what}: {value} exceeds the limit {max}")))
            }
        }
    }

    /// A varint length (at most `max`) followed by that many bytes.
    pub(crate) fn length_prefixed(&mut self, max: usize, what: &str) -> Result<&'a [u8], Corrupt> {
        let len = self.varint_len(max, what)?;
        self.bytes(len, what)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_round_trip_at_every_width() {
        for value in [
            0,
            1,
            127,
            128,
            300,
            u64::from(u32::MAX),
            u64::MAX - 1,
            u64::MAX,
        ] {
            let mut out = Vec::new();
            put_varint(&mut out, value);
            let mut decoder = Decoder::new(&out);
            assert_eq!(decoder.varint("v"), Ok(value));
            assert!(decoder.is_empty());
        }
    }

    #[test]
    fn varint_golden_bytes() {
        let mut out = Vec::new();
        put_varint(&mut out, 300);
        assert_eq!(out, [0xac, 0x02]);
    }

    #[test]
    fn overlong_and_truncated_varints_are_errors() {
        assert!(Decoder::new(&[0x80; 11]).varint("v").is_err());
        assert!(
            Decoder::new(&[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02])
                .varint("v")
                .is_err()
        );
        assert!(Decoder::new(&[0x80]).varint("v").is_err());
        assert!(Decoder::new(&[]).varint("v").is_err());
    }

    #[test]
    fn reads_past_the_end_report_the_offset() {
        let mut decoder = Decoder::new(&[1, 2, 3]);
        assert_eq!(decoder.u8("a"), Ok(1));
        let err = decoder.u32("b").unwrap_err();
        assert_eq!(err.offset, 1);
        assert!(err.detail.contains("b"));
        assert!(Decoder::new(&[5, 1]).length_prefixed(10, "x").is_err());
        assert!(Decoder::new(&[20, 1]).length_prefixed(10, "x").is_err());
    }

    #[test]
    fn checksum_is_pinned() {
        // Low 32 bits of xxh3_64(b"sift"), from python-xxhash 3.x:
        // `xxhash.xxh3_64_intdigest(b"sift") & 0xffffffff`.
        assert_eq!(checksum(b"sift"), 0x6ff8_0e20);
        assert_ne!(checksum(b"sift"), checksum(b"sifu"));
    }
}
