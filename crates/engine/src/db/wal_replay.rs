//! Replaying the WALs the manifest does not cover, under the chosen
//! [`WalRecovery`] mode.
//!
//! Records must continue the sequence numbers without a gap: the first
//! record continues the manifest's last sequence number (it may repeat
//! some, after a crash in the middle of an earlier recovery: replay is
//! idempotent), and each later record continues the one before, across
//! WALs. A gap means a record or a WAL is missing.

use std::path::Path;

use crate::batch::decode_record;
use crate::error::{Error, Result};
use crate::fs::FileSystem;
use crate::key::SeqNo;
use crate::log::{LogKind, RECORD_HEADER_LEN, Tail, read_log_to_damage};
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

/// Replays WALs `numbers` (ascending) of `dir` into `memtable`, after the
/// manifest's `last_seq`. A torn tail of the last WAL is what a crash
/// leaves, never an error; any other damage, or a gap in sequence numbers,
/// is an error under [`WalRecovery::AbsoluteConsistency`] and the point where
/// replay stops under [`WalRecovery::PointInTime`].
pub(super) fn replay_wals(
    fs: &dyn FileSystem,
    dir: &Path,
    numbers: &[u64],
    mut last_seq: SeqNo,
    mode: WalRecovery,
    memtable: &Memtable,
) -> Result<Replayed> {
    for (position, &number) in numbers.iter().enumerate() {
        let path = dir.join(filenames::wal(number));
        let newest = position + 1 == numbers.len();
        let stop = match replay_one(fs, &path, &mut last_seq, memtable) {
            Ok(None) => continue,
            Ok(Some(stop)) if newest && stop.torn => {
                return Ok(Replayed {
                    last_seq,
                    stopped: None,
                });
            }
            Ok(Some(stop)) => stop,
            Err(Error::Corruption {
                path,
                offset,
                detail,
            }) => Stop {
                path,
                offset,
                detail,
                torn: false,
            },
            Err(other) => return Err(other),
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
        });
    }
    Ok(Replayed {
        last_seq,
        stopped: None,
    })
}

/// Replays one WAL; `Some` where it has to stop before the end.
fn replay_one(
    fs: &dyn FileSystem,
    path: &Path,
    last_seq: &mut SeqNo,
    memtable: &Memtable,
) -> Result<Option<Stop>> {
    let contents = read_log_to_damage(fs, path, LogKind::Wal)?;
    let offsets = contents.record_offsets();
    for (record, offset) in contents.records.iter().zip(offsets) {
        let stop = |detail: String| {
            Ok(Some(Stop {
                path: path.to_path_buf(),
                offset,
                detail,
                torn: false,
            }))
        };
        let (first_seq, ops) = match decode_record(record) {
            Ok(decoded) => decoded,
            Err(corrupt) => {
                let err = corrupt.in_file(path, offset + RECORD_HEADER_LEN as u64);
                return stop(err.to_string());
            }
        };
        if first_seq > *last_seq + 1 {
            return stop(format!(
                "the record starts at sequence number {first_seq}, but {} was expected: \
                 a record or a WAL is missing",
                *last_seq + 1
            ));
        }
        for (i, (kind, key, value)) in ops.iter().enumerate() {
            memtable.insert(key, first_seq + i as u64, *kind, value);
        }
        let end = first_seq + ops.len() as u64;
        *last_seq = (*last_seq).max(end.saturating_sub(1));
    }
    Ok(match contents.tail {
        Tail::Clean => None,
        Tail::Torn { detail } => Some(Stop {
            path: path.to_path_buf(),
            offset: contents.valid_len,
            detail: format!("torn tail: {detail}"),
            torn: true,
        }),
        Tail::Damaged { detail } => Some(Stop {
            path: path.to_path_buf(),
            offset: contents.valid_len,
            detail,
            torn: false,
        }),
    })
}
