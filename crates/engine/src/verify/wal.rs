//! One WAL: its records' checksums and contents, and how it ends, judged
//! as recovery judges them (`db/open.rs`).

use std::path::Path;

use super::Findings;
use crate::batch::decode_record;
use crate::key::SeqNo;
use crate::log::{LogKind, RECORD_HEADER_LEN, Tail, read_log};

/// Checks the WAL at `path`; `newest` tells whether it is the newest WAL,
/// the only one a crash can have cut (every older one was synced before
/// the next was started). A torn last write there is a note, as recovery
/// drops it; anywhere else it is a problem. Damage before the tail, each
/// record that does not decode as a write batch, and a record that skips
/// sequence numbers after `next_seq` (the one expected next, updated) is a
/// problem at its offset.
pub(super) fn check(
    fs: &dyn crate::fs::FileSystem,
    path: &Path,
    newest: bool,
    next_seq: &mut Option<SeqNo>,
    out: &mut Findings,
) {
    let contents = match read_log(fs, path, LogKind::Wal) {
        Ok(contents) => contents,
        Err(err) => return out.error(err, path),
    };
    for (record, offset) in contents.records.iter().zip(contents.record_offsets()) {
        match decode_record(record) {
            Err(damage) => out.error(
                damage.in_file(path, offset + RECORD_HEADER_LEN as u64),
                path,
            ),
            Ok((first_seq, ops)) => {
                if let Some(expected) = *next_seq
                    && first_seq > expected
                {
                    out.problem(
                        path,
                        Some(offset),
                        format!(
                            "the record starts at sequence number {first_seq}, but {expected} \
                             was expected: a record or a WAL is missing"
                        ),
                    );
                }
                let end = first_seq + ops.len() as u64;
                *next_seq = Some(next_seq.map_or(end, |next| next.max(end)));
            }
        }
    }
    if let Tail::Torn { detail } = &contents.tail {
        if newest {
            out.note(format!(
                "{}: ends in a write cut short at offset {} ({detail}), as a crash leaves it; the \
                 next open drops it",
                path.display(),
                contents.valid_len
            ));
        } else {
            out.problem(
                path,
                Some(contents.valid_len),
                format!("{detail}, but only the newest WAL can end in a cut write"),
            );
        }
    }
}
