//! What the manifest says: CURRENT and the manifest it names, replayed
//! into the live tables, value indexes and oldest needed WAL by the same
//! [`replay_manifest`] recovery uses (`db/open.rs`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::Findings;
use crate::key::SeqNo;
use crate::manifest::{FileKind, TableMeta, filenames, read_current, replay_manifest};
use crate::value_def::IndexRecord;

/// The live state the manifest records.
#[derive(Debug)]
pub(super) struct Catalog {
    /// The manifest file.
    pub manifest: PathBuf,
    /// Live tables by file number.
    pub tables: BTreeMap<u64, TableMeta>,
    /// Live value indexes.
    pub indexes: Vec<IndexRecord>,
    /// Oldest WAL recovery replays (0: none).
    pub log_number: u64,
    /// Newest sequence number the manifest accounts for: the WALs continue
    /// from it.
    pub last_seq: SeqNo,
}

/// Reads CURRENT and its manifest. Returns the manifest CURRENT names (if
/// CURRENT could be read) and what it records (if it too could be read);
/// damage is reported in `out`.
pub(super) fn read(
    fs: &dyn crate::fs::FileSystem,
    dir: &Path,
    names: &[String],
    out: &mut Findings,
) -> (Option<PathBuf>, Option<Catalog>) {
    let current = dir.join(filenames::CURRENT);
    let name = match read_current(fs, dir) {
        Ok(Some(name)) => name,
        Ok(None) => {
            // As the open decides: tables need the manifest CURRENT names;
            // a manifest alone is a creation cut short before CURRENT.
            let holds_tables = names
                .iter()
                .any(|n| matches!(filenames::parse(n), Some(FileKind::Table(_))));
            if holds_tables {
                out.problem(
                    &current,
                    None,
                    "CURRENT is missing but the directory holds tables",
                );
            } else {
                out.note(
                    "no CURRENT and no table: a database whose creation was interrupted; the \
                     next open starts it again and replays its WAL",
                );
            }
            return (None, None);
        }
        Err(err) => {
            out.error(err, &current);
            return (None, None);
        }
    };
    let path = dir.join(&name);
    let state = match replay_manifest(fs, dir, &name) {
        Ok(state) => state,
        Err(err) => {
            out.error(err, &path);
            return (Some(path), None);
        }
    };
    for overlap in state.overlapping_runs() {
        out.problem(&path, None, overlap);
    }
    let catalog = Catalog {
        manifest: path.clone(),
        tables: state.tables,
        indexes: state.indexes,
        log_number: state.log_number,
        last_seq: state.last_seq,
    };
    (Some(path), Some(catalog))
}
