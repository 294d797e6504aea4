//! [`VersionSet`]: the one owner of the manifest, file numbers and the log
//! number (LevelDB's VersionSet). Every version edit, from a flush, a
//! compaction, a backfill, an index change or recovery, is logged here.
//!
//! A failed manifest write poisons the set: the file may now end in a
//! partial record, or CURRENT may name a manifest the set no longer
//! appends to, so no later edit may follow it. Memory and disk would
//! diverge; the database must be reopened, which replays what is durable.

use std::path::PathBuf;
use std::sync::Arc;

use crate::error::{Error, Result};
use crate::fs::FileSystem;
use crate::key::SeqNo;
use crate::manifest::{Manifest, VersionEdit};
use crate::value::IndexRecord;

use super::{LiveTable, Version};

/// A manifest is rewritten as one snapshot edit when it grows past this,
/// or past twice its snapshot if that is larger (a database with many
/// tables would otherwise rewrite it on every edit), so reopening never
/// replays an unbounded history.
const MANIFEST_ROLL_BYTES: u64 = 4 << 20;

/// The manifest being appended to, with the numbers it hands out.
#[derive(Debug)]
pub(crate) struct VersionSet {
    fs: Arc<dyn FileSystem>,
    dir: PathBuf,
    manifest: Manifest,
    /// Size past which the manifest is rolled over.
    roll_at: u64,
    next_file_number: u64,
    /// Oldest WAL still needed by recovery.
    log_number: u64,
    /// The compaction style tag every snapshot edit records.
    compaction_style: u8,
    /// Why no edit may be logged any more.
    poisoned: Option<String>,
}

/// What a new manifest starts from.
pub(crate) struct Start<'a> {
    pub version: &'a Version,
    pub indexes: &'a [IndexRecord],
    pub next_file_number: u64,
    pub log_number: u64,
    pub last_seq: SeqNo,
    pub compaction_style: u8,
}

impl VersionSet {
    /// Writes manifest number `start.next_file_number` recording `start`
    /// and points CURRENT at it.
    pub(crate) fn create(fs: Arc<dyn FileSystem>, dir: PathBuf, start: &Start<'_>) -> Result<Self> {
        let number = start.next_file_number;
        let next_file_number = number + 1;
        let snapshot = snapshot_edit(start, next_file_number);
        let manifest = Manifest::create(fs.as_ref(), &dir, number, &snapshot)?;
        Ok(Self {
            roll_at: roll_at(&manifest),
            manifest,
            fs,
            dir,
            next_file_number,
            log_number: start.log_number,
            compaction_style: start.compaction_style,
            poisoned: None,
        })
    }

    /// A fresh file number (tables, WALs, manifests and index ids share them).
    pub(crate) fn new_file_number(&mut self) -> u64 {
        let number = self.next_file_number;
        self.next_file_number += 1;
        number
    }

    /// Oldest WAL still needed by recovery.
    pub(crate) fn log_number(&self) -> u64 {
        self.log_number
    }

    /// File name of the live manifest.
    pub(crate) fn manifest_name(&self) -> String {
        self.manifest.file_name()
    }

    /// Why edits are refused, if they are.
    pub(crate) fn poisoned(&self) -> Option<&str> {
        self.poisoned.as_deref()
    }

    /// Logs `edit` durably and returns the version it makes of `base`.
    /// `opened` holds the tables the edit adds; `indexes` and `last_seq`
    /// are the live indexes (before the edit) and the newest sequence
    /// number, for a snapshot if the manifest rolls over.
    ///
    /// # Errors
    /// [`Error::Background`] if the set is poisoned or the edit does not
    /// apply; the manifest's write errors, which poison the set.
    pub(crate) fn log_and_apply(
        &mut self,
        base: &Version,
        mut edit: VersionEdit,
        opened: &std::collections::BTreeMap<u64, Arc<LiveTable>>,
        indexes: &[IndexRecord],
        last_seq: SeqNo,
    ) -> Result<Version> {
        if let Some(why) = &self.poisoned {
            return Err(Error::Background(format!(
                "the manifest takes no more edits after an earlier failure: {why}"
            )));
        }
        let version = base.apply(&edit, opened).map_err(|mismatch| {
            Error::Background(format!(
                "internal error: version edit does not apply: {}",
                mismatch.0
            ))
        })?;
        edit.next_file_number = Some(self.next_file_number);
        let logged = if self.manifest.size() > self.roll_at {
            let mut after = indexes.to_vec();
            edit.apply_indexes(&mut after);
            let log_number = edit.log_number.unwrap_or(self.log_number);
            let last_seq = edit.last_seq.unwrap_or(0).max(last_seq);
            let previous = self.log_number;
            self.log_number = log_number;
            let rolled = self.roll(&version, &after, last_seq);
            if rolled.is_err() {
                self.log_number = previous;
            }
            rolled
        } else {
            self.manifest.append(&edit)
        };
        if let Err(err) = logged {
            self.poisoned = Some(err.to_string());
            return Err(err);
        }
        if let Some(log_number) = edit.log_number {
            self.log_number = self.log_number.max(log_number);
        }
        Ok(version)
    }

    /// Replaces the manifest by a new one holding a snapshot of `version`,
    /// then deletes the old one. On error CURRENT may name either; the
    /// caller poisons the set.
    fn roll(&mut self, version: &Version, indexes: &[IndexRecord], last_seq: SeqNo) -> Result<()> {
        let number = self.new_file_number();
        let start = Start {
            version,
            indexes,
            next_file_number: number,
            log_number: self.log_number,
            last_seq,
            compaction_style: self.compaction_style,
        };
        let snapshot = snapshot_edit(&start, self.next_file_number);
        let manifest = Manifest::create(self.fs.as_ref(), &self.dir, number, &snapshot)?;
        self.roll_at = roll_at(&manifest);
        let old = std::mem::replace(&mut self.manifest, manifest);
        // An old manifest left behind is deleted at the next open.
        let _ = self.fs.remove(&self.dir.join(old.file_name()));
        Ok(())
    }
}

/// The first edit of a new manifest: everything `start` records, with
/// `next_file_number` past the manifest's own number.
fn snapshot_edit(start: &Start<'_>, next_file_number: u64) -> VersionEdit {
    let mut snapshot = start.version.snapshot_edit();
    snapshot.next_file_number = Some(next_file_number);
    snapshot.log_number = Some(start.log_number);
    snapshot.last_seq = Some(start.last_seq);
    snapshot.compaction_style = Some(start.compaction_style);
    snapshot.added_indexes = start.indexes.to_vec();
    snapshot
}

/// The size past which `manifest`, just written, is rolled over.
fn roll_at(manifest: &Manifest) -> u64 {
    MANIFEST_ROLL_BYTES.max(2 * manifest.size())
}
