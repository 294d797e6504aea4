//! The manifest: a log of version edits, named by the CURRENT pointer file.
//!
//! A manifest is a log ([`crate::log`], kind manifest) whose first record
//! is a snapshot edit recreating the whole version, followed by one record
//! per later change. Each edit is synced before it is acknowledged, so the
//! only record a crash can damage is an unacknowledged last one, which
//! [`replay_manifest`] ignores. `CURRENT` names the live manifest and is
//! replaced atomically ([`current`]). Bytes: `docs/format-logs.md`.

mod current;
pub(crate) mod edit;
pub(crate) mod filenames;
mod replay;

use std::io;
use std::path::Path;

pub(crate) use current::read_current;
pub(crate) use replay::Replayed;
#[cfg(test)]
pub(crate) use replay::replay;

use crate::error::{Error, Result};
use crate::fs::FileSystem;
use crate::key::SeqNo;
use crate::log::{LogKind, LogStream, LogWriter, RECORD_HEADER_LEN, Step, Tail};
use crate::value_def::IndexRecord;

/// What the manifest records about one table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TableMeta {
    /// File number.
    pub id: u64,
    /// Level it belongs to (at most [`MAX_LEVEL`](edit::MAX_LEVEL)).
    pub level: u32,
    /// Sorted run within the level.
    pub run: u64,
    /// File size in bytes.
    pub file_size: u64,
    /// Entries (versions and tombstones).
    pub entries: u64,
    /// Smallest internal key (encoded).
    pub smallest: Vec<u8>,
    /// Largest internal key (encoded).
    pub largest: Vec<u8>,
    /// Smallest sequence number stored.
    pub min_seq: SeqNo,
    /// Largest sequence number stored.
    pub max_seq: SeqNo,
}

/// One change to the set of tables and counters.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct VersionEdit {
    /// Tables added.
    pub added: Vec<TableMeta>,
    /// Tables removed: (level, id).
    pub removed: Vec<(u32, u64)>,
    /// Next unused file number.
    pub next_file_number: Option<u64>,
    /// Oldest WAL still needed.
    pub log_number: Option<u64>,
    /// Newest sequence number persisted in tables.
    pub last_seq: Option<SeqNo>,
    /// Compaction style tag fixed at creation.
    pub compaction_style: Option<u8>,
    /// Value indexes dropped, by id (applied before `added_indexes`).
    pub dropped_indexes: Vec<u64>,
    /// Value indexes defined (a snapshot edit lists every live one).
    pub added_indexes: Vec<IndexRecord>,
}

impl VersionEdit {
    /// The live indexes once `self` applies to `indexes`: drops first,
    /// then additions (an id added again replaces its record).
    pub(crate) fn apply_indexes(&self, indexes: &mut Vec<IndexRecord>) {
        indexes.retain(|i| !self.dropped_indexes.contains(&i.id));
        for added in &self.added_indexes {
            indexes.retain(|i| i.id != added.id);
            indexes.push(added.clone());
        }
    }
}

/// The manifest file being appended to.
#[derive(Debug)]
pub(crate) struct Manifest {
    log: LogWriter,
    number: u64,
}

impl Manifest {
    /// Writes a new manifest `number` starting with `snapshot`, syncs it,
    /// and points CURRENT at it. On error CURRENT still names the previous
    /// manifest (the new file may remain; it is not live).
    pub(crate) fn create(
        fs: &dyn FileSystem,
        dir: &Path,
        number: u64,
        snapshot: &VersionEdit,
    ) -> Result<Self> {
        let name = filenames::manifest(number);
        let mut log = LogWriter::create(fs, &dir.join(&name), LogKind::Manifest)?;
        log.add_record(&edit::encode_edit(snapshot))?;
        log.sync()?;
        current::write_current(fs, dir, &name)?;
        Ok(Self { log, number })
    }

    /// Appends one edit and syncs: the edit counts only once this returns.
    /// After an error the manifest may end in a partial record; append no
    /// more to it (recovery ignores that record).
    pub(crate) fn append(&mut self, edit: &VersionEdit) -> Result<()> {
        self.log.add_record(&edit::encode_edit(edit))?;
        self.log.sync()
    }

    /// Bytes written.
    pub(crate) fn size(&self) -> u64 {
        self.log.size()
    }

    /// File name (no directory).
    pub(crate) fn file_name(&self) -> String {
        filenames::manifest(self.number)
    }
}

/// What manifest `name` in `dir` records: its edits replayed as they are
/// read, so that memory holds the state and one record, not the file and
/// every edit in it. A torn last record (an edit whose sync never
/// returned) is ignored. A missing manifest, a manifest with no edit
/// (CURRENT names only manifests whose snapshot is durable), damage before
/// the last record, or an edit that does not decode is
/// [`Error::Corruption`] naming the manifest.
pub(crate) fn replay_manifest(fs: &dyn FileSystem, dir: &Path, name: &str) -> Result<Replayed> {
    let mut state = Replayed::empty();
    for_each_edit(fs, dir, name, |edit| state.apply(edit))?;
    Ok(state.finish())
}

/// Every edit of manifest `name` in `dir`, oldest first; errors as
/// [`replay_manifest`].
#[cfg(test)]
pub(crate) fn read_manifest(
    fs: &dyn FileSystem,
    dir: &Path,
    name: &str,
) -> Result<Vec<VersionEdit>> {
    let mut edits = Vec::new();
    for_each_edit(fs, dir, name, |edit| edits.push(edit))?;
    Ok(edits)
}

/// Hands each edit of manifest `name` in `dir` to `apply` as it is read.
fn for_each_edit(
    fs: &dyn FileSystem,
    dir: &Path,
    name: &str,
    mut apply: impl FnMut(VersionEdit),
) -> Result<()> {
    let path = dir.join(name);
    let mut stream = LogStream::open(fs, &path, LogKind::Manifest).map_err(|err| match err {
        Error::Io { source, .. } if source.kind() == io::ErrorKind::NotFound => Error::corruption(
            &path,
            0,
            "CURRENT names this manifest, but it does not exist",
        ),
        other => other,
    })?;
    let mut edits = 0u64;
    loop {
        match stream.next()? {
            Step::Record { offset, payload } => {
                let edit = edit::decode_edit(payload)
                    .map_err(|c| c.in_file(&path, offset + RECORD_HEADER_LEN as u64))?;
                apply(edit);
                edits += 1;
            }
            Step::End { valid_len, tail } => {
                if let Tail::Damaged { detail } = tail {
                    return Err(Error::corruption(&path, valid_len, detail));
                }
                if edits == 0 {
                    return Err(Error::corruption(
                        &path,
                        valid_len,
                        "the manifest holds no edit, not even its snapshot",
                    ));
                }
                return Ok(());
            }
        }
    }
}

/// Kinds of files in a database directory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FileKind {
    /// `NNNNNN.wal`.
    Wal(u64),
    /// `NNNNNN.sst`.
    Table(u64),
    /// `MANIFEST-NNNNNN`.
    Manifest(u64),
    /// `CURRENT`.
    Current,
    /// `LOCK`.
    Lock,
    /// A temporary copy of one of the above, `<name>.tmp` (`CURRENT.tmp`).
    Temp,
}

#[cfg(test)]
mod tests;
