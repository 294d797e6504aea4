//! [`LogStream`]: the records of a log file in order, read through a
//! bounded window, and how the log ends.
//!
//! The rule that separates a torn tail (a crash cut or garbled the last,
//! unsynced write: not an error) from damage: the first bad record, at
//! offset `p`, is a **torn tail** when no valid record starts anywhere
//! after `p`. A bad record is one whose 8-byte header is cut by the end of
//! the file, whose payload runs past it, or whose checksum fails.
//!
//! Only the last write can be unsynced, so everything after `p` would be
//! that one write: cut, zero-filled where its pages never reached the disk,
//! or partly written. A valid record after `p` proves an acknowledged record
//! came later, so the bad one was damaged: [`Tail::Damaged`] at `p`. That
//! also catches a damaged length field, whatever it points at.
//!
//! A file shorter than the header, or whose bytes are all zero, was never
//! synced (a sync always follows a complete header), so it is an empty
//! log; a torn tail when non-empty. Any other bad header is corruption.
//!
//! Memory: the window holds [`CHUNK_BYTES`], more only while one larger
//! record is read, so a WAL of any size is replayed in about that much.

// A decoder of on-disk bytes: no indexing that could panic.
#![deny(clippy::indexing_slicing)]

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::{HEADER_LEN, LogKind, RECORD_HEADER_LEN, check_header};
use crate::encoding::checksum_matches;
use crate::error::{Error, Result};
use crate::fs::{FileSystem, ReadableFile};

/// Bytes read from the file at a time.
pub(crate) const CHUNK_BYTES: usize = 256 << 10;

/// Most bytes the search for a valid record after a bad one checksums per
/// byte of the tail it searches: the search is linear on real tails (a
/// garbled length rarely fits the file), and this bound keeps a crafted
/// file from making it quadratic. A search that runs out is read as "a
/// record follows".
const SEARCH_BYTES_PER_TAIL_BYTE: u64 = 64;

/// How a log ends.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Tail {
    /// Every byte belongs to a whole, valid record.
    Clean,
    /// From `valid_len` on, the bytes are an incomplete or garbled last
    /// write: what a crash leaves.
    Torn {
        /// What was wrong.
        detail: String,
    },
    /// The record at `valid_len` is damaged and a valid record follows it
    /// ([`read_log`](super::read_log) makes it an error).
    Damaged {
        /// What was wrong.
        detail: String,
    },
}

/// One step through a log.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Step<'a> {
    /// The next valid record.
    Record {
        /// Where its 8-byte record header starts, for error messages.
        offset: u64,
        payload: &'a [u8],
    },
    /// No record follows; every later call answers the same.
    End {
        /// Bytes up to the end of the last good record (the header's end
        /// if there is none, 0 if the header itself is incomplete).
        valid_len: u64,
        /// Whether anything follows it.
        tail: Tail,
    },
}

/// The records of one log file, read in order.
#[derive(Debug)]
pub(crate) struct LogStream {
    file: Arc<dyn ReadableFile>,
    path: PathBuf,
    size: u64,
    /// Bytes a refill reads at least (tests make it small).
    chunk: usize,
    /// The file's bytes from `window_at` on.
    window: Vec<u8>,
    window_at: u64,
    /// Where the next record starts.
    pos: u64,
    /// Records returned so far.
    records: usize,
    /// `valid_len` and tail, once the end is found.
    end: Option<(u64, Tail)>,
}

impl LogStream {
    /// Opens `path`, a log of `kind`, and checks its header. A missing file
    /// or a failed read is [`Error::Io`]; a damaged header, or a file
    /// longer than any log of `kind`, is [`Error::Corruption`].
    pub(crate) fn open(fs: &dyn FileSystem, path: &Path, kind: LogKind) -> Result<Self> {
        Self::with_chunk(fs, path, kind, CHUNK_BYTES)
    }

    /// [`open`](Self::open), reading `chunk` bytes (at least 1) at a time.
    pub(crate) fn with_chunk(
        fs: &dyn FileSystem,
        path: &Path,
        kind: LogKind,
        chunk: usize,
    ) -> Result<Self> {
        let file = fs.open(path).map_err(|e| Error::io(path, e))?;
        let size = file.size().map_err(|e| Error::io(path, e))?;
        let max = kind.max_file_bytes();
        if size > max {
            // Before anything is read: a damaged or foreign file must not
            // make recovery read gigabytes.
            return Err(Error::corruption(
                path,
                0,
                format!("{size} bytes, more than the {max} such a file ever holds"),
            ));
        }
        let mut stream = Self {
            file,
            path: path.to_path_buf(),
            size,
            chunk: chunk.max(1),
            window: Vec::new(),
            window_at: 0,
            pos: HEADER_LEN as u64,
            records: 0,
            end: None,
        };
        stream.check_header(kind)?;
        Ok(stream)
    }

    /// The next record, or the end of the log. Only a failed read is an
    /// error.
    pub(crate) fn next(&mut self) -> Result<Step<'_>> {
        let (valid_len, tail) = match self.end.clone() {
            Some(end) => end,
            None => match self.advance()? {
                Ok((offset, len)) => {
                    // Whole in the window already: this reads nothing.
                    let payload = self.read(offset + RECORD_HEADER_LEN as u64, len)?;
                    return Ok(Step::Record { offset, payload });
                }
                Err(end) => self.finish(end),
            },
        };
        Ok(Step::End { valid_len, tail })
    }

    /// The offset and length of the next record, which is then in the
    /// window; or `valid_len` and the tail.
    fn advance(&mut self) -> Result<Result<(u64, usize), (u64, Tail)>> {
        let at = self.pos;
        if at == self.size {
            return Ok(Err((at, Tail::Clean)));
        }
        Ok(match self.record_at(at)? {
            Ok(len) => {
                self.pos = at + (RECORD_HEADER_LEN + len) as u64;
                self.records += 1;
                Ok((at, len))
            }
            Err(detail) => Err((
                at,
                match self.valid_record_after(at)? {
                    Some(next) => Tail::Damaged {
                        detail: format!(
                            "record {}: {detail}, and a valid record follows at offset {next}",
                            self.records
                        ),
                    },
                    None => Tail::Torn { detail },
                },
            )),
        })
    }

    /// Records the end and frees the window.
    fn finish(&mut self, end: (u64, Tail)) -> (u64, Tail) {
        self.window = Vec::new();
        self.end = Some(end.clone());
        end
    }

    /// Checks the header, or ends an empty log (see the module's rule).
    fn check_header(&mut self, kind: LogKind) -> Result<()> {
        if self.size < HEADER_LEN as u64 {
            let tail = if self.size == 0 {
                Tail::Clean
            } else {
                Tail::Torn {
                    detail: format!("the file ends inside the log header ({} bytes)", self.size),
                }
            };
            self.finish((0, tail));
            return Ok(());
        }
        let checked = check_header(self.read(0, HEADER_LEN)?, kind);
        if let Err(corrupt) = checked {
            if !self.all_zero()? {
                return Err(corrupt.in_file(&self.path, 0));
            }
            let detail = format!("the file is {} zero bytes", self.size);
            self.finish((0, Tail::Torn { detail }));
        }
        Ok(())
    }

    /// Whether every byte of the file is zero.
    fn all_zero(&mut self) -> Result<bool> {
        let mut at = 0;
        while at < self.size {
            let len = (self.size - at).min(self.chunk as u64) as usize;
            if self.read(at, len)?.iter().any(|&b| b != 0) {
                return Ok(false);
            }
            at += len as u64;
        }
        Ok(true)
    }

    /// The length of the record at `pos` if it is whole and valid, else why
    /// not.
    fn record_at(&mut self, pos: u64) -> Result<Result<usize, String>> {
        let remaining = self.size - pos;
        if remaining < RECORD_HEADER_LEN as u64 {
            return Ok(Err(format!(
                "the file ends inside a record header ({remaining} bytes)"
            )));
        }
        let header = self.read(pos, RECORD_HEADER_LEN)?;
        let (sum, len) = (u32_at(header, 0), u32_at(header, 4));
        if u64::from(len) > remaining - RECORD_HEADER_LEN as u64 {
            return Ok(Err(format!(
                "a record of {len} bytes runs past the end of the file ({remaining} bytes left)"
            )));
        }
        // The checksum covers the length field and the payload.
        let len = len as usize;
        if !checksum_matches(self.read(pos + 4, 4 + len)?, sum) {
            return Ok(Err(format!("a record of {len} bytes fails its checksum")));
        }
        Ok(Ok(len))
    }

    /// The offset of the first valid record starting after `bad`, if any.
    fn valid_record_after(&mut self, bad: u64) -> Result<Option<u64>> {
        let mut budget = (self.size - bad).saturating_mul(SEARCH_BYTES_PER_TAIL_BYTE);
        let last = self.size.saturating_sub(RECORD_HEADER_LEN as u64 - 1);
        for pos in bad + 1..last {
            let len = u64::from(u32_at(self.read(pos + 4, 4)?, 0));
            if len > self.size - pos - RECORD_HEADER_LEN as u64 {
                continue;
            }
            match budget.checked_sub(len + 4) {
                Some(left) => budget = left,
                // Out of budget: say a record follows, the answer that loses nothing.
                None => return Ok(Some(pos)),
            }
            if self.checksum_matches_at(pos, len)? {
                return Ok(Some(pos));
            }
        }
        Ok(None)
    }

    /// Whether the record at `pos`, whose `len` fits the file, passes its
    /// checksum. A record longer than a chunk is hashed chunk by chunk: a
    /// garbled length found by the search must not grow the window.
    fn checksum_matches_at(&mut self, pos: u64, len: u64) -> Result<bool> {
        let sum = u32_at(self.read(pos, 4)?, 0);
        if len + 4 <= self.chunk as u64 {
            return Ok(checksum_matches(self.read(pos + 4, 4 + len as usize)?, sum));
        }
        // `encoding::checksum`, streamed: the low 32 bits of XXH3-64.
        let mut hasher = xxhash_rust::xxh3::Xxh3::new();
        let (mut at, end) = (pos + 4, pos + RECORD_HEADER_LEN as u64 + len);
        while at < end {
            let n = (end - at).min(self.chunk as u64) as usize;
            hasher.update(self.read(at, n)?);
            at += n as u64;
        }
        Ok(cfg!(fuzzing) || hasher.digest() as u32 == sum)
    }

    /// The `len` bytes at `at`, which the file holds, read into the window
    /// unless already there.
    fn read(&mut self, at: u64, len: usize) -> Result<&[u8]> {
        let window_end = self.window_at + self.window.len() as u64;
        if at < self.window_at || at + len as u64 > window_end {
            self.refill(at, len, window_end)?;
        }
        let from = (at - self.window_at) as usize;
        Ok(self
            .window
            .get(from..)
            .and_then(|rest| rest.get(..len))
            .unwrap_or_default())
    }

    /// Moves the window to start at `at` and hold at least `len` bytes,
    /// keeping what it already holds from `at` on.
    fn refill(&mut self, at: u64, len: usize, window_end: u64) -> Result<()> {
        if (self.window_at..=window_end).contains(&at) {
            self.window.drain(..(at - self.window_at) as usize);
        } else {
            self.window.clear();
        }
        self.window_at = at;
        let want = (len.max(self.chunk) as u64).min(self.size.saturating_sub(at)) as usize;
        // Give back what one large record took.
        self.window.shrink_to(want);
        let kept = self.window.len();
        self.window.resize(want, 0);
        let fresh = self.window.get_mut(kept..).unwrap_or_default();
        self.file
            .read_exact_at(fresh, at + kept as u64)
            .map_err(|e| Error::io(&self.path, e))
    }
}

/// Little-endian `u32` at `at` of `bytes`, 0 past the end (callers read
/// the field whole first).
fn u32_at(bytes: &[u8], at: usize) -> u32 {
    bytes
        .get(at..)
        .and_then(|from| from.first_chunk::<4>())
        .map_or(0, |field| u32::from_le_bytes(*field))
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::super::LogWriter;
    use super::*;
    use crate::encoding::checksum;
    use crate::fs::FaultInjectionFs;

    const PATH: &str = "/db/log";

    /// A file system holding `bytes` at [`PATH`].
    fn holding(bytes: &[u8]) -> FaultInjectionFs {
        let fs = FaultInjectionFs::new();
        fs.create_dir_all(Path::new("/db")).unwrap();
        fs.create(Path::new(PATH)).unwrap().append(bytes).unwrap();
        fs
    }

    /// A WAL of `records`, as the writer writes it.
    fn log_of(records: &[Vec<u8>]) -> Vec<u8> {
        let fs = FaultInjectionFs::new();
        fs.create_dir_all(Path::new("/db")).unwrap();
        let mut writer = LogWriter::create(&fs, Path::new(PATH), LogKind::Wal).unwrap();
        for record in records {
            writer.add_record(record).unwrap();
        }
        writer.flush().unwrap();
        fs.contents(Path::new(PATH)).unwrap()
    }

    /// Each record with its offset, then `valid_len` and the tail; or the
    /// error, as text.
    type Read = Result<(Vec<(u64, Vec<u8>)>, u64, Tail), String>;

    /// Everything a stream with `chunk` yields over `bytes`.
    fn steps(bytes: &[u8], chunk: usize) -> Read {
        let fs = holding(bytes);
        let mut stream = LogStream::with_chunk(&fs, Path::new(PATH), LogKind::Wal, chunk)
            .map_err(|e| e.to_string())?;
        let mut records = Vec::new();
        loop {
            match stream.next().map_err(|e| e.to_string())? {
                Step::Record { offset, payload } => records.push((offset, payload.to_vec())),
                Step::End { valid_len, tail } => {
                    // The end is sticky.
                    let again = stream.next().unwrap();
                    assert_eq!(
                        again,
                        Step::End {
                            valid_len,
                            tail: tail.clone()
                        }
                    );
                    return Ok((records, valid_len, tail));
                }
            }
        }
    }

    /// The answer for `bytes` is the same for every chunk size: the whole
    /// file in one window (how the reader worked before it streamed) or
    /// any number of refills.
    fn same_for_every_chunk(bytes: &[u8]) -> Read {
        let whole = steps(bytes, bytes.len().max(1));
        for chunk in (1..40).chain([100, 511, 4096]) {
            assert_eq!(steps(bytes, chunk), whole, "chunk {chunk}");
        }
        whole
    }

    fn records() -> Vec<Vec<u8>> {
        vec![
            b"first".to_vec(),
            Vec::new(),
            vec![7; 300],
            b"last".to_vec(),
        ]
    }

    #[test]
    fn a_clean_log_yields_each_record_at_its_offset() {
        let bytes = log_of(&records());
        let (got, valid_len, tail) = same_for_every_chunk(&bytes).unwrap();
        assert_eq!(tail, Tail::Clean);
        assert_eq!(valid_len, bytes.len() as u64);
        let payloads: Vec<Vec<u8>> = got.iter().map(|(_, p)| p.clone()).collect();
        assert_eq!(payloads, records());
        let offsets: Vec<u64> = got.iter().map(|(at, _)| *at).collect();
        assert_eq!(offsets, [12, 25, 33, 341]);
    }

    #[test]
    fn a_torn_tail_at_every_cut() {
        let bytes = log_of(&records());
        for cut in 0..bytes.len() {
            let (got, valid_len, tail) = same_for_every_chunk(&bytes[..cut]).unwrap();
            let whole = [12, 25, 33, 341, 353]
                .iter()
                .filter(|&&end| end <= cut)
                .count()
                .saturating_sub(1);
            assert_eq!(got.len(), whole, "cut {cut}");
            assert_eq!(valid_len == cut as u64, tail == Tail::Clean, "cut {cut}");
        }
    }

    #[test]
    fn a_damaged_record_and_a_damaged_header() {
        let bytes = log_of(&records());
        for at in 0..bytes.len() {
            let mut damaged = bytes.clone();
            damaged[at] ^= 0x5a;
            let result = same_for_every_chunk(&damaged);
            match at {
                // The header: corruption, named by file and offset.
                0..12 => assert!(result.unwrap_err().contains(PATH), "flip at {at}"),
                // A middle record: damage at its offset.
                12..341 => {
                    let (_, valid_len, tail) = result.unwrap();
                    assert!(matches!(tail, Tail::Damaged { .. }), "flip at {at}");
                    assert!([12, 25, 33].contains(&valid_len), "flip at {at}");
                }
                // The last record: a torn tail.
                _ => {
                    let (got, valid_len, tail) = result.unwrap();
                    assert_eq!((got.len(), valid_len), (3, 341), "flip at {at}");
                    assert!(matches!(tail, Tail::Torn { .. }), "flip at {at}");
                }
            }
        }
    }

    #[test]
    fn zeros_and_garbage_after_the_last_record() {
        let bytes = log_of(&records());
        for extra in [vec![0; 9], vec![0; 5000], vec![0xab; 40]] {
            let mut more = bytes.clone();
            more.extend_from_slice(&extra);
            let (got, valid_len, tail) = same_for_every_chunk(&more).unwrap();
            assert_eq!((got.len(), valid_len), (4, bytes.len() as u64));
            assert!(matches!(tail, Tail::Torn { .. }));
        }
        let (got, valid_len, tail) = same_for_every_chunk(&[0; 100]).unwrap();
        assert_eq!((got.len(), valid_len), (0, 0));
        assert_eq!(
            tail,
            Tail::Torn {
                detail: "the file is 100 zero bytes".into()
            }
        );
    }

    /// A record longer than a chunk grows the window for that record only;
    /// one damaged before it is found as damage by hashing it in pieces.
    #[test]
    fn a_record_larger_than_the_chunk() {
        let big: Vec<u8> = (0..3000u32).map(|i| (i * 7 % 251) as u8).collect();
        let all = vec![b"small".to_vec(), big.clone(), b"after".to_vec()];
        let bytes = log_of(&all);
        let (got, _, tail) = same_for_every_chunk(&bytes).unwrap();
        assert_eq!(tail, Tail::Clean);
        assert_eq!(got[1].1, big);
        // The window grows to hold the big record, and gives it back after.
        let fs = holding(&bytes);
        let mut stream = LogStream::with_chunk(&fs, Path::new(PATH), LogKind::Wal, 64).unwrap();
        let mut capacities = Vec::new();
        while matches!(stream.next().unwrap(), Step::Record { .. }) {
            capacities.push(stream.window.capacity());
        }
        assert!(capacities[1] >= 3000, "{capacities:?}");
        assert!(capacities[2] <= 64, "{capacities:?}");
        // Damage in the first record: the valid big record after it (longer
        // than the chunk) is what makes it damage rather than a torn tail.
        let mut damaged = bytes.clone();
        damaged[HEADER_LEN + 9] ^= 1;
        let only_big = log_of(&[b"small".to_vec(), big]);
        let mut cut = damaged[..only_big.len()].to_vec();
        assert!(matches!(
            same_for_every_chunk(&cut).unwrap().2,
            Tail::Damaged { .. }
        ));
        // The big record garbled too: nothing valid follows, a torn tail.
        cut[only_big.len() - 1] ^= 1;
        assert!(matches!(
            same_for_every_chunk(&cut).unwrap().2,
            Tail::Torn { .. }
        ));
    }

    #[test]
    fn streamed_checksum_is_the_checksum() {
        let bytes: Vec<u8> = (0..5000u32).map(|i| (i * 31 % 256) as u8).collect();
        for len in [0, 1, 16, 17, 128, 129, 240, 241, 1024, 4999] {
            let mut hasher = xxhash_rust::xxh3::Xxh3::new();
            for piece in bytes[..len].chunks(7) {
                hasher.update(piece);
            }
            assert_eq!(hasher.digest() as u32, checksum(&bytes[..len]), "{len}");
        }
    }

    #[test]
    fn a_missing_file_and_the_wrong_kind() {
        let fs = holding(&log_of(&records()));
        assert!(matches!(
            LogStream::open(&fs, Path::new("/db/missing"), LogKind::Wal),
            Err(Error::Io { .. })
        ));
        assert!(matches!(
            LogStream::open(&fs, Path::new(PATH), LogKind::Manifest),
            Err(Error::Corruption { offset: 5, .. })
        ));
    }

    proptest! {
        /// Any bytes after a valid header (where damage and tails are
        /// decided), any chunk: the same answer as one window over the
        /// whole file, and no panic.
        #[test]
        fn arbitrary_bytes_read_the_same_in_any_chunks(
            tail in proptest::collection::vec(any::<u8>(), 0..300),
            chunk in 1usize..64,
        ) {
            let mut bytes = log_of(&records());
            bytes.extend_from_slice(&tail);
            let whole = steps(&bytes, bytes.len());
            prop_assert_eq!(steps(&bytes, chunk), whole);
            let whole = steps(&tail, tail.len().max(1));
            prop_assert_eq!(steps(&tail, chunk), whole);
        }
    }
}
