//! One WAL: its records' checksums and contents, and how it ends, judged
//! as recovery judges them (`db/open.rs`).

use std::path::Path;

use super::Findings;
use crate::batch::decode_record;
use crate::log::{LogKind, RECORD_HEADER_LEN, Tail, read_log};

/// Checks the WAL at `path`; `newest` tells whether it is the newest WAL,
/// the only one a crash can have cut (every older one was synced before
/// the next was started). A torn last write there is a note, as recovery
/// cuts it off; anywhere else it is a problem. Damage before the tail, and
/// each record that does not decode as a write batch, is a problem at its
/// offset.
pub(super) fn check(fs: &dyn crate::fs::FileSystem, path: &Path, newest: bool, out: &mut Findings) {
    let contents = match read_log(fs, path, LogKind::Wal) {
        Ok(contents) => contents,
        Err(err) => return out.error(err, path),
    };
    for (record, offset) in contents.records.iter().zip(contents.record_offsets()) {
        if let Err(damage) = decode_record(record) {
            out.error(
                damage.in_file(path, offset + RECORD_HEADER_LEN as u64),
                path,
            );
        }
    }
    if let Tail::Torn { detail } = &contents.tail {
        if newest {
            out.note(format!(
                "{}: ends in a write cut short at offset {} ({detail}), as a crash leaves it; the \
                 next open cuts it off",
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
