//! Block handles and the 5-byte trailer after every stored block:
//! compression byte, then the checksum of the stored bytes and that byte.

#![deny(clippy::indexing_slicing)]

use std::path::Path;

use crate::encoding::{Decoder, checksum, checksum_matches, put_varint};
use crate::error::{Corrupt, Error, Result};
use crate::fs::ReadableFile;
use crate::options::Compression;

/// Bytes after a block's stored contents: compression byte + `u32` checksum.
pub(crate) const TRAILER_LEN: usize = 5;

/// Compression byte: stored as is.
pub(crate) const NO_COMPRESSION: u8 = 0;

/// Compression byte: varint raw length, then an LZ4 block (`lz4_flex`).
pub(crate) const LZ4: u8 = 1;

/// LZ4 expands a run by at most 255 bytes per input byte (one literal-length
/// byte encodes 255 more output bytes), so a raw length above
/// `255 · stored + 64` cannot be genuine; the bound stops a damaged length
/// from allocating gigabytes.
const LZ4_MAX_RATIO: usize = 255;

/// Where a block is: offset of its first byte and length of its stored
/// contents (without the trailer).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub(crate) struct BlockHandle {
    /// Offset of the block in the file.
    pub offset: u64,
    /// Stored bytes, trailer excluded.
    pub size: u64,
}

impl BlockHandle {
    /// The offset just past the block's trailer (`None` on overflow).
    pub(crate) fn end(self) -> Option<u64> {
        self.offset
            .checked_add(self.size)?
            .checked_add(TRAILER_LEN as u64)
    }

    /// Appends offset and size as varints (index and partition index).
    pub(crate) fn put_varints(self, out: &mut Vec<u8>) {
        put_varint(out, self.offset);
        put_varint(out, self.size);
    }

    /// Reads what [`put_varints`](Self::put_varints) wrote.
    pub(crate) fn read_varints(decoder: &mut Decoder<'_>) -> Result<Self, Corrupt> {
        let offset = decoder.varint("block offset")?;
        let size = decoder.varint("block size")?;
        Ok(Self { offset, size })
    }
}

/// Turns `raw` into stored bytes + trailer, appended to `out`. LZ4 is kept
/// only when it saves at least 1/8 of the block, as RocksDB does: smaller
/// savings do not pay for decompressing on every read. Returns the stored
/// size (what a handle records).
pub(crate) fn seal_block(raw: &[u8], compression: Compression, out: &mut Vec<u8>) -> usize {
    let start = out.len();
    let mut kind = NO_COMPRESSION;
    if compression == Compression::Lz4 {
        let mut compressed = Vec::with_capacity(raw.len() / 2 + 16);
        put_varint(&mut compressed, raw.len() as u64);
        compressed.extend_from_slice(&lz4_flex::block::compress(raw));
        if compressed.len() <= raw.len() - raw.len() / 8 {
            out.extend_from_slice(&compressed);
            kind = LZ4;
        }
    }
    if kind == NO_COMPRESSION {
        out.extend_from_slice(raw);
    }
    let stored = out.len() - start;
    out.push(kind);
    let sum = checksum(out.get(start..).unwrap_or_default());
    out.extend_from_slice(&sum.to_le_bytes());
    stored
}

/// Reads the block at `handle`, which must end at or before `limit`, checks
/// its checksum and returns its raw (decompressed) contents.
pub(crate) fn read_block(
    file: &dyn ReadableFile,
    path: &Path,
    handle: BlockHandle,
    limit: u64,
) -> Result<Vec<u8>> {
    let corrupt = |detail: String| Error::corruption(path, handle.offset, detail);
    let end = handle
        .end()
        .filter(|&end| end <= limit)
        .ok_or_else(|| corrupt(format!("block of {} bytes runs past {limit}", handle.size)))?;
    let len = usize::try_from(end - handle.offset)
        .map_err(|_| corrupt("block larger than memory".into()))?;
    let mut buf = vec![0; len];
    file.read_exact_at(&mut buf, handle.offset)
        .map_err(|e| Error::io(path, e))?;
    unseal(buf).map_err(|c| c.in_file(path, handle.offset))
}

/// Checks the trailer of `buf` (stored bytes + trailer) and decompresses.
/// Offsets in the error are relative to the block start.
pub(crate) fn unseal(mut buf: Vec<u8>) -> Result<Vec<u8>, Corrupt> {
    let stored = buf
        .len()
        .checked_sub(TRAILER_LEN)
        .ok_or_else(|| Corrupt::new(0, "block shorter than its trailer"))?;
    let mut trailer = Decoder::new(buf.get(stored..).unwrap_or_default());
    let kind = trailer.u8("compression")?;
    let expected = trailer.u32("block checksum")?;
    if !checksum_matches(buf.get(..=stored).unwrap_or_default(), expected) {
        // The checksum covers the whole block: name the block's first byte.
        return Err(Corrupt::new(
            0,
            format!("block checksum mismatch ({stored} stored bytes)"),
        ));
    }
    buf.truncate(stored);
    match kind {
        NO_COMPRESSION => Ok(buf),
        LZ4 => decompress(&buf),
        other => Err(Corrupt::new(
            stored as u64,
            format!("unknown compression {other}"),
        )),
    }
}

/// Reverses the LZ4 branch of [`seal_block`].
fn decompress(stored: &[u8]) -> Result<Vec<u8>, Corrupt> {
    let mut decoder = Decoder::new(stored);
    let max = stored
        .len()
        .saturating_mul(LZ4_MAX_RATIO)
        .saturating_add(64);
    let raw_len = decoder.varint_len(max, "uncompressed length")?;
    let body = decoder.bytes(decoder.remaining(), "lz4 data")?;
    let mut raw = vec![0; raw_len];
    match lz4_flex::block::decompress_into(body, &mut raw) {
        Ok(n) if n == raw_len => Ok(raw),
        Ok(n) => Err(Corrupt::new(
            0,
            format!("lz4 block holds {n} bytes, header says {raw_len}"),
        )),
        Err(e) => Err(Corrupt::new(0, format!("lz4: {e}"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sealed_blocks_round_trip_with_and_without_lz4() {
        let repetitive = vec![7u8; 4000];
        // xorshift64: incompressible bytes.
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let random: Vec<u8> = (0..4000)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                (state >> 32) as u8
            })
            .collect();
        for (raw, compression, expect_kind) in [
            (&repetitive, Compression::None, NO_COMPRESSION),
            (&repetitive, Compression::Lz4, LZ4),
            (&random, Compression::Lz4, NO_COMPRESSION),
        ] {
            let mut out = Vec::new();
            let stored = seal_block(raw, compression, &mut out);
            assert_eq!(out.len(), stored + TRAILER_LEN);
            assert_eq!(out[stored], expect_kind);
            assert_eq!(&unseal(out).unwrap(), raw);
        }
    }

    #[test]
    fn trailer_golden_bytes() {
        let mut out = Vec::new();
        seal_block(b"sif", Compression::None, &mut out);
        let sum = checksum(b"sif\0").to_le_bytes();
        assert_eq!(out, [b's', b'i', b'f', 0, sum[0], sum[1], sum[2], sum[3]]);
    }

    #[test]
    fn damage_is_reported_not_panicked() {
        let mut out = Vec::new();
        seal_block(&vec![1u8; 500], Compression::Lz4, &mut out);
        for i in 0..out.len() {
            let mut bad = out.clone();
            bad[i] ^= 0x10;
            assert!(unseal(bad).is_err(), "flip at {i}");
        }
        assert!(unseal(vec![0; 3]).is_err());
        // A valid trailer over a bogus LZ4 body: the decoder still refuses.
        let mut bogus = vec![0xff, 0xff, 0x03, 0x1f];
        bogus.push(LZ4);
        let sum = checksum(&bogus);
        bogus.extend_from_slice(&sum.to_le_bytes());
        assert!(unseal(bogus).is_err());
    }
}
