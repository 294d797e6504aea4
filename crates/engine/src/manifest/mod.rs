//! STUB — to be replaced. The manifest: a log of version edits, named by the CURRENT pointer file.

pub(crate) mod filenames;

use std::path::Path;

use crate::error::Result;
use crate::fs::FileSystem;
use crate::key::SeqNo;
use crate::log::LogWriter;

/// What the manifest records about one table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TableMeta {
    /// File number.
    pub id: u64,
    /// Level it belongs to.
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
}

/// The manifest file being appended to.
#[derive(Debug)]
pub(crate) struct Manifest {
    log: LogWriter,
    number: u64,
}

impl Manifest {
    /// Writes a new manifest `number` starting with `snapshot`, syncs it, and points CURRENT at it.
    pub(crate) fn create(
        fs: &dyn FileSystem,
        dir: &Path,
        number: u64,
        snapshot: &VersionEdit,
    ) -> Result<Self> {
        todo!()
    }
    /// Appends one edit and syncs.
    pub(crate) fn append(&mut self, edit: &VersionEdit) -> Result<()> {
        todo!()
    }
    /// Bytes written.
    pub(crate) fn size(&self) -> u64 {
        todo!()
    }
    /// File name (no directory).
    pub(crate) fn file_name(&self) -> String {
        todo!()
    }
}

/// Which manifest CURRENT names; `None` when there is no CURRENT (a new database).
pub(crate) fn read_current(fs: &dyn FileSystem, dir: &Path) -> Result<Option<String>> {
    todo!()
}

/// Every edit of manifest `name`.
pub(crate) fn read_manifest(
    fs: &dyn FileSystem,
    dir: &Path,
    name: &str,
) -> Result<Vec<VersionEdit>> {
    todo!()
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
    /// `*.tmp`.
    Temp,
}
