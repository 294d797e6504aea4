//! [`Db::checkpoint`]: the database's table files (hard links, or copies)
//! and a manifest naming them, in a directory of its own, that opens as a
//! database.
//!
//! Tables are immutable, so a copy of the live ones, taken while a pinned
//! version keeps them from being deleted, is consistent: after a flush the
//! tables hold every write up to the newest flushed one, and the WALs are
//! not needed. The copy is a Raft snapshot's payload (`sift-raft`) and a
//! backup; on the database's own file system its tables are links to the
//! same bytes, so a backup that must outlive the disk is copied elsewhere.

use std::path::Path;

use crate::error::{Error, Result};
use crate::fs::{FileSystem, copy_file, link_or_copy};
use crate::log::{LogKind, LogWriter};
use crate::manifest::{FileKind, filenames};
use crate::version::{Start, VersionSet};

use super::open::style_tag;
use super::{Db, Inner, lock};

impl Db {
    /// Flushes the memtables, then writes a copy of every live table and a
    /// manifest naming them into `dir`, which must not hold a database:
    /// [`Db::open`] on `dir` then reads every write that was acknowledged
    /// before this call, and perhaps some made during it (a consistent
    /// prefix of them). The table files are hard links where the file system
    /// can make them (tables are never written again, so the copy and the
    /// database share them safely, as RocksDB's checkpoints do), and copies
    /// elsewhere.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] if `dir` already holds a database; the
    /// flush's errors; [`Error::Io`] for what cannot be copied or written
    /// (the directory may then hold part of a copy, without a `CURRENT`).
    pub fn checkpoint(&self, dir: impl AsRef<Path>) -> Result<()> {
        self.inner.checkpoint(dir.as_ref())
    }
}

impl Inner {
    fn checkpoint(&self, dir: &Path) -> Result<()> {
        // Its file system keeps changes in memory: a checkpoint would too.
        self.writable()?;
        let fs = &self.options.fs;
        fs.create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
        let listed = fs.list(dir).map_err(|e| Error::io(dir, e))?;
        if listed.iter().any(|name| name == "CURRENT") {
            return Err(Error::InvalidArgument(format!(
                "{} already holds a database",
                dir.display()
            )));
        }
        self.flush_all()?;
        // The version, the indexes and two file numbers past every table
        // (an empty WAL's and the manifest's), taken together under the
        // state lock.
        let (version, indexes, wal, manifest) = {
            let mut state = lock(&self.state);
            Self::check_background_error(&state)?;
            let version = std::sync::Arc::clone(&self.current().version);
            let wal = state.versions.new_file_number();
            (
                version,
                self.indexes.load_full(),
                wal,
                state.versions.new_file_number(),
            )
        };
        for table in version.tables() {
            let name = filenames::table(table.meta.id);
            let (from, to) = (self.file(&name), dir.join(&name));
            link_or_copy(fs.as_ref(), &from, &to).map_err(|e| Error::io(&to, e))?;
        }
        let last_seq = version.tables().map(|t| t.meta.max_seq).max().unwrap_or(0);
        // No WAL is copied: the copy starts on an empty one.
        let path = dir.join(filenames::wal(wal));
        LogWriter::create(fs.as_ref(), &path, LogKind::Wal)?.sync()?;
        VersionSet::create(
            std::sync::Arc::clone(fs),
            dir.to_path_buf(),
            &Start {
                version: &version,
                indexes: &indexes,
                next_file_number: manifest,
                log_number: wal,
                last_seq,
                compaction_style: style_tag(&self.options.compaction),
            },
        )?;
        fs.sync_dir(dir).map_err(|e| Error::io(dir, e))
    }
}

/// Makes the new directory `to` a copy of the database in `from`, which no
/// one has open (a checkpoint): its tables hard-linked where the file
/// system can (they are never written again), its manifest and WALs
/// copied (the database opened on either writes them), everything synced.
/// Each then opens and changes on its own. A Raft follower keeps a
/// received snapshot to send on, and opens such a copy of it.
///
/// # Errors
/// [`Error::Io`] for what cannot be listed, linked, copied or synced.
pub fn copy_database(fs: &dyn FileSystem, from: &Path, to: &Path) -> Result<()> {
    fs.create_dir_all(to).map_err(|e| Error::io(to, e))?;
    for name in fs.list(from).map_err(|e| Error::io(from, e))? {
        let (source, target) = (from.join(&name), to.join(&name));
        let copied = match filenames::parse(&name) {
            Some(FileKind::Table(_)) => link_or_copy(fs, &source, &target),
            // The opener takes its own lock; anything else is copied.
            Some(FileKind::Lock) => continue,
            _ if fs.list(&source).is_ok() => continue,
            _ => copy_file(fs, &source, &target),
        };
        copied.map_err(|e| Error::io(&target, e))?;
    }
    fs.sync_dir(to).map_err(|e| Error::io(to, e))?;
    match to.parent() {
        Some(parent) => fs.sync_dir(parent).map_err(|e| Error::io(parent, e)),
        None => Ok(()),
    }
}
