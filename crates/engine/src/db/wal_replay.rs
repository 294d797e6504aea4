//! Replaying the WALs the manifest does not cover, under the chosen
//! [`WalRecovery`] mode.
//!
//! Records must continue the sequence numbers without a gap: the first
//! record continues the manifest's last sequence number (it may repeat
//! some, after a crash in the middle of an earlier recovery: replay is
//! idempotent), and each later record continues the one before, across
//! WALs. A gap means a record or a WAL is missing.
//!
//! Memory is bounded by one memtable, whatever the WALs' size: each WAL is
//! streamed record by record ([`LogStream`]), and the memtable the records
//! go to is written out (by the caller, as a level-0 table) whenever it is
//! full. Those flushes log the tables and their last sequence number, never
//! a log number, so after a crash in the middle of recovery every WAL is
//! replayed again: records already in a table are inserted again with the
//! same sequence numbers, and reads and compactions keep one copy of equal
//! internal keys (`iter/merge.rs`).

use std::path::Path;

use crate::batch::decode_record;
use crate::error::{Error, Result};
use crate::fs::FileSystem;
use crate::key::SeqNo;
use crate::log::{LogKind, LogStream, RECORD_HEADER_LEN, Step, Tail};
use crate::manifest::filenames;
use crate::memtable::Memtable;
use crate::options::WalRecovery;

/// What replay found.
#[derive(Debug)]
pub(super) struct Replayed {
    /// The newest sequence number replayed (or the manifest's).
    pub last_seq: SeqNo,
    /// Where point-in-time recovery stopped early, and why: the records
    /// after it, in that WAL and every later one, were dropped.
    pub stopped: Option<String>,
    /// The WALs whose records were dropped from that point on: the one
    /// replay stopped in and every later one.
    pub dropped: Vec<u64>,
}

/// Where replay stops: a file, an offset and what was wrong.
struct Stop {
    path: std::path::PathBuf,
    offset: u64,
    detail: String,
    /// The log's torn tail (what a crash leaves), not damage.
    torn: bool,
}

impl Stop {
    fn into_error(self) -> Error {
        Error::corruption(self.path, self.offset, self.detail)
    }
}

/// Where replayed writes go: a memtable, handed to `write_out` (which
/// writes it as a level-0 table) and replaced each time it reaches
/// `memtable_bytes`.
pub(super) struct Sink<'a> {
    memtable: Memtable,
    memtable_bytes: usize,
    write_out: &'a mut dyn FnMut(&Memtable) -> Result<()>,
}

impl<'a> Sink<'a> {
    pub(super) fn new(
        memtable_bytes: usize,
        write_out: &'a mut dyn FnMut(&Memtable) -> Result<()>,
    ) -> Self {
        Self {
            memtable: Memtable::new(0),
            memtable_bytes,
            write_out,
        }
    }

    /// After a record: a full memtable is flushed (the size test of the
    /// write path's `make_room`).
    fn make_room(&mut self) -> Result<()> {
        if self.memtable.approximate_bytes() >= self.memtable_bytes {
            self.flush()?;
        }
        Ok(())
    }

    /// Flushes what the memtable holds, if anything, and starts a new one.
    fn flush(&mut self) -> Result<()> {
        if !self.memtable.is_empty() {
            (self.write_out)(&self.memtable)?;
            self.memtable = Memtable::new(0);
        }
        Ok(())
    }
}

/// Replays WALs `numbers` (ascending) of `dir` into `sink`, after the
/// manifest's `last_seq`, and flushes what is left at the end. A torn tail
/// of the last WAL is what a crash leaves, never an error; any other
/// damage, or a gap in sequence numbers, is an error under
/// [`WalRecovery::AbsoluteConsistency`] (the records before it may already
/// be flushed: a later replay repeats them) and the point where replay
/// stops under [`WalRecovery::PointInTime`].
pub(super) fn replay_wals(
    fs: &dyn FileSystem,
    dir: &Path,
    numbers: &[u64],
    last_seq: SeqNo,
    mode: WalRecovery,
    mut sink: Sink<'_>,
) -> Result<Replayed> {
    let replayed = replay_until_stop(fs, dir, numbers, last_seq, mode, &mut sink)?;
    sink.flush()?;
    Ok(replayed)
}

/// [`replay_wals`] but for the last flush.
fn replay_until_stop(
    fs: &dyn FileSystem,
    dir: &Path,
    numbers: &[u64],
    mut last_seq: SeqNo,
    mode: WalRecovery,
    sink: &mut Sink<'_>,
) -> Result<Replayed> {
    for (position, &number) in numbers.iter().enumerate() {
        let path = dir.join(filenames::wal(number));
        let newest = position + 1 == numbers.len();
        let stop = match replay_one(fs, &path, &mut last_seq, sink)? {
            None => continue,
            Some(stop) if newest && stop.torn => {
                return Ok(Replayed {
                    last_seq,
                    stopped: None,
                    dropped: Vec::new(),
                });
            }
            Some(stop) => stop,
        };
        if mode == WalRecovery::AbsoluteConsistency {
            return Err(stop.into_error());
        }
        let later = numbers.len() - position - 1;
        return Ok(Replayed {
            last_seq,
            stopped: Some(format!(
                "{} at offset {}: {}; replay stopped there ({later} later WALs ignored)",
                stop.path.display(),
                stop.offset,
                stop.detail
            )),
            dropped: numbers[position..].to_vec(),
        });
    }
    Ok(Replayed {
        last_seq,
        stopped: None,
        dropped: Vec::new(),
    })
}

/// Replays one WAL, record by record; `Some` where it has to stop before
/// the end. Errors are those of reading and flushing, never damage.
fn replay_one(
    fs: &dyn FileSystem,
    path: &Path,
    last_seq: &mut SeqNo,
    sink: &mut Sink<'_>,
) -> Result<Option<Stop>> {
    let stop = |offset: u64, detail: String, torn: bool| {
        Some(Stop {
            path: path.to_path_buf(),
            offset,
            detail,
            torn,
        })
    };
    let mut log = match LogStream::open(fs, path, LogKind::Wal) {
        Ok(log) => log,
        Err(Error::Corruption { offset, detail, .. }) => return Ok(stop(offset, detail, false)),
        Err(other) => return Err(other),
    };
    loop {
        let (offset, record) = match log.next()? {
            Step::Record { offset, payload } => (offset, payload),
            Step::End { valid_len, tail } => {
                return Ok(match tail {
                    Tail::Clean => None,
                    Tail::Torn { detail } => stop(valid_len, format!("torn tail: {detail}"), true),
                    Tail::Damaged { detail } => stop(valid_len, detail, false),
                });
            }
        };
        let (first_seq, ops) = match decode_record(record) {
            Ok(decoded) => decoded,
            Err(corrupt) => {
                let err = corrupt.in_file(path, offset + RECORD_HEADER_LEN as u64);
                return Ok(stop(offset, err.to_string(), false));
            }
        };
        if first_seq > *last_seq + 1 {
            return Ok(stop(
                offset,
                format!(
                    "the record starts at sequence number {first_seq}, but {} was expected: \
                     a record or a WAL is missing",
                    *last_seq + 1
                ),
                false,
            ));
        }
        for (i, (kind, key, value)) in ops.iter().enumerate() {
            sink.memtable
                .insert(key, first_seq + i as u64, *kind, value);
        }
        let end = first_seq + ops.len() as u64;
        *last_seq = (*last_seq).max(end.saturating_sub(1));
        sink.make_room()?;
    }
}
