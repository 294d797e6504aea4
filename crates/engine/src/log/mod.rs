//! Log files, shared by the WAL and the manifest: a checksummed header
//! naming the log's kind, then length-prefixed, checksummed records.
//!
//! ```text
//! header:  magic "SLOG" | version u8 | kind u8 | reserved u16 = 0 | checksum u32 of [0, 8)
//! record:  checksum u32 of [length | payload] | length u32 | payload
//! ```
//!
//! A record is written with one `append`, so a crash can only cut the last
//! one; [`LogStream`] reports such a torn tail instead of an error, and
//! damage anywhere before it as [`Tail::Damaged`] ([`read_log`] makes it
//! [`Error::Corruption`](crate::Error)). The exact rule is in `stream.rs`
//! and `docs/format-logs.md`.

mod reader;
mod stream;
mod writer;

#[cfg(any(test, feature = "fuzzing"))]
pub(crate) use reader::collect;
pub(crate) use reader::read_log;
pub(crate) use stream::{LogStream, Step, Tail};
pub(crate) use writer::LogWriter;

use crate::encoding::{Decoder, checksum, checksum_matches};
use crate::error::Corrupt;

/// First bytes of every log file: `"SLOG"`.
const MAGIC: [u8; 4] = *b"SLOG";

/// Version of the header and record layout this build writes and reads;
/// a reader refuses any other rather than guessing.
const FORMAT_VERSION: u8 = 1;

/// Bytes of the file header: magic (4), version (1), kind (1), reserved
/// (2), checksum (4).
pub(crate) const HEADER_LEN: usize = 12;

/// Bytes before each record's payload: checksum (4) and length (4).
pub(crate) const RECORD_HEADER_LEN: usize = 8;

/// Largest payload of one record: its length field is a `u32`.
pub(crate) const MAX_RECORD_LEN: usize = u32::MAX as usize;

/// Which log a file is; recorded in its header so one cannot be read as the other.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LogKind {
    /// Write-ahead log of write batches.
    Wal,
    /// Manifest of version edits.
    Manifest,
}

impl LogKind {
    /// The header byte.
    fn tag(self) -> u8 {
        match self {
            Self::Wal => 1,
            Self::Manifest => 2,
        }
    }

    /// The longest file of this kind a reader loads. A manifest is rolled
    /// over at 4 MiB or twice its snapshot: 1 GiB describes millions of
    /// tables. A WAL holds one memtable plus one batch of up to 4 GiB, so
    /// it is bounded only by the record length.
    fn max_file_bytes(self) -> u64 {
        match self {
            Self::Wal => u64::MAX,
            Self::Manifest => 1 << 30,
        }
    }

    /// A name for error messages.
    fn name(self) -> &'static str {
        match self {
            Self::Wal => "WAL",
            Self::Manifest => "manifest",
        }
    }
}

/// The header of a new log of `kind`.
fn encode_header(kind: LogKind) -> [u8; HEADER_LEN] {
    let mut header = [0; HEADER_LEN];
    header[..4].copy_from_slice(&MAGIC);
    header[4] = FORMAT_VERSION;
    header[5] = kind.tag();
    // Bytes 6..8 are reserved and zero.
    let sum = checksum(&header[..8]);
    header[8..].copy_from_slice(&sum.to_le_bytes());
    header
}

/// Checks a complete header (`bytes` holds at least [`HEADER_LEN`] bytes)
/// against `kind`. Checks, in order: magic, checksum, version, kind,
/// reserved bytes.
#[deny(clippy::indexing_slicing, reason = "a decoder of on-disk bytes")]
fn check_header(bytes: &[u8], kind: LogKind) -> Result<(), Corrupt> {
    let mut decoder = Decoder::new(bytes);
    let magic = decoder.bytes(4, "log magic")?;
    if magic != MAGIC {
        return Err(Corrupt::new(
            0,
            format!("not a Sift log: magic {magic:02x?}"),
        ));
    }
    let version = decoder.u8("log format version")?;
    let tag = decoder.u8("log kind")?;
    let reserved = decoder.bytes(2, "reserved header bytes")?;
    let sum = decoder.u32("header checksum")?;
    if !bytes
        .get(..8)
        .is_some_and(|covered| checksum_matches(covered, sum))
    {
        return Err(Corrupt::new(8, "log header checksum mismatch"));
    }
    if version != FORMAT_VERSION {
        return Err(Corrupt::new(
            4,
            format!("log format version {version}; this build reads version {FORMAT_VERSION}"),
        ));
    }
    if tag != kind.tag() {
        let found = [LogKind::Wal, LogKind::Manifest]
            .into_iter()
            .find(|k| k.tag() == tag)
            .map_or_else(|| format!("unknown kind {tag}"), |k| k.name().to_owned());
        return Err(Corrupt::new(
            5,
            format!("a {} was expected, the header says {found}", kind.name()),
        ));
    }
    if reserved != [0, 0] {
        return Err(Corrupt::new(
            6,
            format!("reserved header bytes are {reserved:02x?}, not zero"),
        ));
    }
    Ok(())
}

/// The record bytes for `payload` (at most [`MAX_RECORD_LEN`] bytes).
#[cfg(test)]
fn encode_record(payload: &[u8]) -> Vec<u8> {
    let mut record = Vec::new();
    encode_record_into(&mut record, &[payload]);
    record
}

/// Replaces `record` with the record whose payload is `parts` concatenated
/// (at most [`MAX_RECORD_LEN`] bytes in all).
fn encode_record_into(record: &mut Vec<u8>, parts: &[&[u8]]) {
    let len: usize = parts.iter().map(|p| p.len()).sum();
    record.clear();
    record.reserve(RECORD_HEADER_LEN + len);
    record.extend_from_slice(&[0; 4]);
    record.extend_from_slice(&(len as u32).to_le_bytes());
    for part in parts {
        record.extend_from_slice(part);
    }
    let sum = checksum(&record[4..]);
    record[..4].copy_from_slice(&sum.to_le_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn golden_header_and_record() {
        let header = encode_header(LogKind::Wal);
        assert_eq!(&header[..8], b"SLOG\x01\x01\x00\x00");
        assert_eq!(header[8..], checksum(&header[..8]).to_le_bytes());
        assert_eq!(encode_header(LogKind::Manifest)[5], 2);
        let record = encode_record(b"abc");
        assert_eq!(&record[4..], b"\x03\x00\x00\x00abc");
        assert_eq!(record[..4], checksum(b"\x03\x00\x00\x00abc").to_le_bytes());
        // Pinned so the format cannot drift with the hash implementation.
        assert_eq!(header[8..], [0x64, 0x9e, 0xe2, 0xee]);
    }

    #[test]
    fn header_checks_each_field() {
        let good = encode_header(LogKind::Wal);
        assert_eq!(check_header(&good, LogKind::Wal), Ok(()));
        let err = check_header(&good, LogKind::Manifest).unwrap_err();
        assert!(err.detail.contains("manifest was expected") && err.detail.contains("WAL"));
        let reseal = |mut h: [u8; HEADER_LEN]| {
            let sum = checksum(&h[..8]);
            h[8..].copy_from_slice(&sum.to_le_bytes());
            h
        };
        let mut magic = good;
        magic[0] = b'X';
        assert!(
            check_header(&magic, LogKind::Wal)
                .unwrap_err()
                .detail
                .contains("magic")
        );
        let mut sum = good;
        sum[11] ^= 1;
        assert!(
            check_header(&sum, LogKind::Wal)
                .unwrap_err()
                .detail
                .contains("checksum")
        );
        let mut version = good;
        version[4] = 2;
        let err = check_header(&reseal(version), LogKind::Wal).unwrap_err();
        assert!(err.detail.contains("version 2"));
        let mut kind = good;
        kind[5] = 9;
        let err = check_header(&reseal(kind), LogKind::Wal).unwrap_err();
        assert!(err.detail.contains("unknown kind 9"));
        let mut reserved = good;
        reserved[7] = 1;
        assert!(
            check_header(&reseal(reserved), LogKind::Wal)
                .unwrap_err()
                .detail
                .contains("reserved")
        );
    }
}
