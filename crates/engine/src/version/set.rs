//! [`VersionSet`]: the one owner of the manifest, file numbers and the log
//! number (LevelDB's VersionSet). Every version edit, from a flush, a
//! compaction, a backfill, an index change or recovery, is logged here.
//!
//! A failed manifest write poisons the set: the file may now end in a
//! partial record, or CURRENT may name a manifest the set no longer
//! appends to, so no later edit may follow it. Memory and disk would
//! diverge; the database must be reopened, which replays what is durable.

use std::panic::{self, AssertUnwindSafe};
use std::path::PathBuf;
use std::sync::Arc;

use crate::error::{Error, Result};
use crate::fs::FileSystem;
use crate::key::SeqNo;
use crate::manifest::{Manifest, VersionEdit};
use crate::value_def::IndexRecord;

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
    /// The least size at which a manifest is rolled over.
    roll_bytes: u64,
    /// Size past which this manifest is rolled over.
    roll_at: u64,
    next_file_number: u64,
    /// Oldest WAL still needed by recovery.
    log_number: u64,
    /// The newest sequence number the manifest records: what its tables
    /// hold, not the writes still only in WALs from `log_number` on.
    /// Recovery replays those WALs from the number after it, and a gap
    /// there is a WAL missing.
    last_seq: SeqNo,
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
            roll_bytes: MANIFEST_ROLL_BYTES,
            roll_at: roll_at(&manifest, MANIFEST_ROLL_BYTES),
            manifest,
            fs,
            dir,
            next_file_number,
            log_number: start.log_number,
            last_seq: start.last_seq,
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
    /// `opened` holds the tables the edit adds; `indexes` are the live
    /// indexes (before the edit), for a snapshot if the manifest rolls over.
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
        // A panic in the file system's calls is a failed write too: the
        // manifest may hold the edit, or part of it, all the same.
        let previous = self.log_number;
        let logged = panic::catch_unwind(AssertUnwindSafe(|| self.write(&version, &edit, indexes)))
            .unwrap_or_else(|_| Err(Error::Background("the manifest write panicked".to_owned())));
        if let Err(err) = logged {
            self.log_number = previous;
            self.poisoned = Some(err.to_string());
            return Err(err);
        }
        if let Some(log_number) = edit.log_number {
            self.log_number = self.log_number.max(log_number);
        }
        self.last_seq = self.last_seq.max(edit.last_seq.unwrap_or(0));
        Ok(version)
    }

    /// Appends `edit`, which makes `version`, or rolls the manifest over
    /// to a snapshot of `version` with the live `indexes` (before `edit`).
    fn write(
        &mut self,
        version: &Version,
        edit: &VersionEdit,
        indexes: &[IndexRecord],
    ) -> Result<()> {
        if self.manifest.size() <= self.roll_at {
            return self.manifest.append(edit);
        }
        let mut after = indexes.to_vec();
        edit.apply_indexes(&mut after);
        let last_seq = edit.last_seq.unwrap_or(0).max(self.last_seq);
        self.log_number = edit.log_number.unwrap_or(self.log_number);
        self.roll(version, &after, last_seq)
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
        self.roll_at = roll_at(&manifest, self.roll_bytes);
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
fn roll_at(manifest: &Manifest, roll_bytes: u64) -> u64 {
    roll_bytes.max(2 * manifest.size())
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::path::Path;

    use super::*;
    use crate::fs::{FaultEffect, FaultInjectionFs};
    use crate::manifest::{read_current, read_manifest, replay};
    use crate::value_def::{Extractor, LeafSizing};

    /// Index records whose snapshot is several KiB.
    fn indexes() -> Vec<IndexRecord> {
        (0..40)
            .map(|id| IndexRecord {
                id,
                name: format!("an index with a long name, number {id:04}"),
                extractor: Extractor::json_field(format!("/a/long/json/pointer/{id}")),
                sizing: LeafSizing::PerTable { fpr: 0.01 },
            })
            .collect()
    }

    fn set(fs: &FaultInjectionFs, version: &Version, indexes: &[IndexRecord]) -> VersionSet {
        fs.create_dir_all(Path::new("/db")).unwrap();
        let start = Start {
            version,
            indexes,
            next_file_number: 2,
            log_number: 1,
            last_seq: 0,
            compaction_style: 0,
        };
        VersionSet::create(Arc::new(fs.clone()), "/db".into(), &start).unwrap()
    }

    /// A manifest whose snapshot alone passes the threshold is rolled once
    /// it doubles, not on every edit.
    #[test]
    fn a_large_snapshot_does_not_make_every_edit_roll_over() {
        let fs = FaultInjectionFs::new();
        let (version, indexes) = (Version::default(), indexes());
        let mut set = set(&fs, &version, &indexes);
        set.roll_bytes = 256;
        set.roll_at = roll_at(&set.manifest, set.roll_bytes);
        assert!(set.manifest.size() > 1024, "{}", set.manifest.size());
        let mut names = std::collections::BTreeSet::new();
        for log_number in 2..200 {
            let edit = VersionEdit {
                log_number: Some(log_number),
                ..VersionEdit::default()
            };
            set.log_and_apply(&version, edit, &BTreeMap::new(), &indexes)
                .unwrap();
            names.insert(set.manifest_name());
        }
        assert!(names.len() <= 3, "{} manifests for 198 edits", names.len());
        // What CURRENT names replays to the state logged last.
        let dir = Path::new("/db");
        let name = read_current(&fs, dir).unwrap().unwrap();
        assert_eq!(name, set.manifest_name());
        let state = replay(read_manifest(&fs, dir, &name).unwrap());
        assert_eq!((state.log_number, state.indexes.len()), (199, 40));
    }

    /// A rolled-over manifest once recorded the newest visible sequence
    /// number, which covers WALs not flushed yet: recovery then could not
    /// tell that a WAL between two others was missing. It records what
    /// the logged edits recorded.
    #[test]
    fn a_rolled_manifest_records_the_flushed_sequence_number() {
        let fs = FaultInjectionFs::new();
        let version = Version::default();
        let mut set = set(&fs, &version, &[]);
        set.roll_bytes = 0;
        for (log_number, last_seq) in [(2, Some(40)), (3, None)] {
            let edit = VersionEdit {
                log_number: Some(log_number),
                last_seq,
                ..VersionEdit::default()
            };
            let before = set.manifest_name();
            set.roll_at = 0;
            set.log_and_apply(&version, edit, &BTreeMap::new(), &[])
                .unwrap();
            assert_ne!(set.manifest_name(), before, "no roll-over");
        }
        let dir = Path::new("/db");
        let state = replay(read_manifest(&fs, dir, &set.manifest_name()).unwrap());
        assert_eq!((state.log_number, state.last_seq), (3, 40));
    }

    /// After a failed manifest write nothing more is logged. A write that
    /// panicked (a file system's bug) once left the set open: the edit
    /// was in the file, not in memory, and later edits followed it, so a
    /// reopen replayed a compaction twice (overlapping tables in level 1).
    #[test]
    fn a_failed_or_panicking_write_poisons_the_set() {
        for effect in [FaultEffect::Error, FaultEffect::Panic] {
            let fs = FaultInjectionFs::new();
            let version = Version::default();
            let mut set = set(&fs, &version, &[]);
            let edit = || VersionEdit {
                log_number: Some(5),
                ..VersionEdit::default()
            };
            fs.inject_later(crate::fs::FaultOp::Sync, "MANIFEST", 0, effect);
            let failed = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                set.log_and_apply(&version, edit(), &BTreeMap::new(), &[])
            }));
            assert!(matches!(failed, Ok(Err(_))), "{effect:?}: {failed:?}");
            assert!(set.poisoned().is_some(), "{effect:?}");
            let refused = set.log_and_apply(&version, edit(), &BTreeMap::new(), &[]);
            assert!(matches!(refused, Err(Error::Background(_))), "{effect:?}");
            assert_eq!(set.log_number(), 1, "{effect:?}");
        }
    }
}
