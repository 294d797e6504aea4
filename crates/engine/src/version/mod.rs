//! Versions: which tables make up the database at one moment, arranged in
//! levels of sorted runs.
//!
//! A [`Version`] is immutable; every flush or compaction derives a new one
//! by applying a [`VersionEdit`]. Readers hold an `Arc<Version>` for as
//! long as they read, so the tables they see stay open even when a
//! compaction replaces them.

mod set;

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::compaction::{LevelShape, RunShape, TableShape};
use crate::fs::FileSystem;
use crate::key::user_key_of;
use crate::manifest::{TableMeta, VersionEdit};
use crate::sstable::Table;

pub(crate) use set::{Start, VersionSet};

/// An open table as a version knows it. When the last version holding it
/// is dropped after a compaction replaced it, its file is deleted.
pub(crate) struct LiveTable {
    /// What the manifest records about it.
    pub meta: TableMeta,
    /// The open table.
    pub table: Arc<Table>,
    obsolete: AtomicBool,
    fs: Arc<dyn FileSystem>,
}

impl fmt::Debug for LiveTable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LiveTable")
            .field("id", &self.meta.id)
            .field("level", &self.meta.level)
            .finish()
    }
}

impl LiveTable {
    /// Wraps an open table.
    pub(crate) fn new(meta: TableMeta, table: Arc<Table>, fs: Arc<dyn FileSystem>) -> Self {
        Self {
            meta,
            table,
            obsolete: AtomicBool::new(false),
            fs,
        }
    }

    /// Smallest user key stored.
    pub(crate) fn smallest_user_key(&self) -> &[u8] {
        user_key_of(&self.meta.smallest)
    }

    /// Largest user key stored.
    pub(crate) fn largest_user_key(&self) -> &[u8] {
        user_key_of(&self.meta.largest)
    }

    /// Schedules the file for deletion once no version holds this table.
    pub(crate) fn mark_obsolete(&self) {
        self.obsolete.store(true, Ordering::Release);
    }
}

impl Drop for LiveTable {
    fn drop(&mut self) {
        if self.obsolete.load(Ordering::Acquire) {
            self.table.close();
            // Readers that still iterate hold the open file, which outlives
            // its name. A failed removal leaves an orphan that the next open
            // deletes, so there is nothing better to do with the error.
            let _ = self.fs.remove(self.table.path());
        }
    }
}

/// A sorted run: tables with disjoint key ranges, sorted by key.
#[derive(Debug, Clone)]
pub(crate) struct Run {
    /// Identifies the run in version edits.
    pub id: u64,
    /// Sorted by smallest key, non-overlapping.
    tables: Vec<Arc<LiveTable>>,
    /// The bytes every table's keys begin with (possibly none).
    prefix: Box<[u8]>,
    /// Per table, the [`fence`]s of its smallest and largest user keys:
    /// `table_for` searches these, contiguous in memory, instead of
    /// following a pointer to each table's keys and comparing them (a
    /// fifth of a missing-key lookup, with 16 tables).
    fences: Vec<[u64; 2]>,
}

/// An order-preserving summary of `key` among keys that begin with
/// `prefix`: the 8 bytes after the prefix, big-endian and zero-padded. Keys
/// that do not begin with it sort before or after all that do, and map to
/// 0 or `u64::MAX`. So `a <= b` implies `fence(a) <= fence(b)`, and unequal
/// fences order their keys; equal fences say nothing.
fn fence(prefix: &[u8], key: &[u8]) -> u64 {
    let Some(rest) = key.strip_prefix(prefix) else {
        return if key < prefix { 0 } else { u64::MAX };
    };
    let mut bytes = [0u8; 8];
    let n = rest.len().min(8);
    bytes[..n].copy_from_slice(&rest[..n]);
    u64::from_be_bytes(bytes)
}

/// The longest prefix of both `a` and `b`.
fn common_prefix<'a>(a: &'a [u8], b: &[u8]) -> &'a [u8] {
    let len = a.iter().zip(b).take_while(|(x, y)| x == y).count();
    &a[..len]
}

impl Run {
    /// A run of `tables`, sorted by key and disjoint.
    pub(crate) fn new(id: u64, tables: Vec<Arc<LiveTable>>) -> Self {
        // Sorted: the first and last keys share what every key shares.
        let prefix: Box<[u8]> = match (tables.first(), tables.last()) {
            (Some(first), Some(last)) => {
                common_prefix(first.smallest_user_key(), last.largest_user_key()).into()
            }
            _ => Box::default(),
        };
        let fences = tables
            .iter()
            .map(|t| {
                [
                    fence(&prefix, t.smallest_user_key()),
                    fence(&prefix, t.largest_user_key()),
                ]
            })
            .collect();
        Self {
            id,
            tables,
            prefix,
            fences,
        }
    }

    /// The tables, sorted by key.
    pub(crate) fn tables(&self) -> &[Arc<LiveTable>] {
        &self.tables
    }

    /// The table whose key range holds `user_key`, if any.
    pub(crate) fn table_for(&self, user_key: &[u8]) -> Option<&Arc<LiveTable>> {
        find_range(&self.tables, &self.prefix, &self.fences, user_key, |t| {
            (t.smallest_user_key(), t.largest_user_key())
        })
    }
}

/// The item of `items` (sorted, with disjoint key ranges given by `range`
/// and summarised by `fences` after `prefix`) whose range holds `key`.
/// Fences settle every comparison but ties, which the keys decide.
fn find_range<'a, T>(
    items: &'a [T],
    prefix: &[u8],
    fences: &[[u64; 2]],
    key: &[u8],
    range: impl Fn(&T) -> (&[u8], &[u8]),
) -> Option<&'a T> {
    let fenced = fence(prefix, key);
    // Ranges whose largest fence is below the key's end before it; among
    // those with an equal fence (rarely any), the keys decide.
    let below = fences.partition_point(|f| f[1] < fenced);
    let ties = match fences.get(below) {
        Some(f) if f[1] == fenced => fences.get(below..)?.partition_point(|f| f[1] == fenced),
        _ => 0,
    };
    let after = below
        + items
            .get(below..below + ties)?
            .partition_point(|t| range(t).1 < key);
    let (item, [smallest, _]) = (items.get(after)?, *fences.get(after)?);
    let starts_before = smallest < fenced || (smallest == fenced && range(item).0 <= key);
    starts_before.then_some(item)
}

/// One level: its runs, newest first.
#[derive(Debug, Clone, Default)]
pub(crate) struct Level {
    /// Newest first: a key's newer versions live in earlier runs.
    pub runs: Vec<Run>,
}

impl Level {
    /// Every table of the level.
    pub(crate) fn tables(&self) -> impl Iterator<Item = &Arc<LiveTable>> {
        self.runs.iter().flat_map(|run| run.tables.iter())
    }
}

/// The tables of the database at one moment.
#[derive(Debug, Clone, Default)]
pub(crate) struct Version {
    /// Level 0 first. Trailing levels may be empty.
    pub levels: Vec<Level>,
}

/// Why an edit does not apply to a version: the manifest contradicts itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct EditMismatch(pub String);

impl Version {
    /// The version after `edit`: removed tables leave their runs, added ones
    /// join the run they name (a new run becomes its level's newest).
    /// `opened` holds the open tables for `edit.added`, by id.
    pub(crate) fn apply(
        &self,
        edit: &VersionEdit,
        opened: &BTreeMap<u64, Arc<LiveTable>>,
    ) -> Result<Self, EditMismatch> {
        let mut next = self.clone();
        for &(level, id) in &edit.removed {
            let level = next.levels.get_mut(level as usize).ok_or_else(|| {
                EditMismatch(format!("removes table {id} from missing level {level}"))
            })?;
            let mut found = false;
            for run in &mut level.runs {
                let before = run.tables.len();
                run.tables.retain(|t| t.meta.id != id);
                found |= run.tables.len() != before;
            }
            if !found {
                return Err(EditMismatch(format!(
                    "removes table {id}, which level {level:?} does not hold"
                )));
            }
            level.runs.retain(|run| !run.tables.is_empty());
        }
        for meta in &edit.added {
            let table = opened.get(&meta.id).ok_or_else(|| {
                EditMismatch(format!("adds table {} that was not opened", meta.id))
            })?;
            let level = meta.level as usize;
            if next.levels.len() <= level {
                next.levels.resize_with(level + 1, Level::default);
            }
            let runs = &mut next.levels[level].runs;
            let run = match runs.iter().position(|run| run.id == meta.run) {
                Some(at) => &mut runs[at],
                None => {
                    // Run ids are file numbers taken when the run is
                    // created, so newer runs have larger ids: placing a run
                    // by id keeps newest first, also for a run whose only
                    // table an edit replaces (the backfill) and when
                    // recovery replays that edit after the run's newer
                    // neighbours.
                    let at = runs.partition_point(|run| run.id > meta.run);
                    runs.insert(at, Run::new(meta.run, Vec::new()));
                    &mut runs[at]
                }
            };
            let at = run
                .tables
                .partition_point(|t| t.smallest_user_key() < table.smallest_user_key());
            run.tables.insert(at, Arc::clone(table));
        }
        // Edits moved tables in and out: recompute every run's fences.
        for run in next.levels.iter_mut().flat_map(|level| &mut level.runs) {
            *run = Run::new(run.id, std::mem::take(&mut run.tables));
        }
        while next
            .levels
            .last()
            .is_some_and(|level| level.runs.is_empty())
        {
            next.levels.pop();
        }
        Ok(next)
    }

    /// Every table, any order.
    pub(crate) fn tables(&self) -> impl Iterator<Item = &Arc<LiveTable>> {
        self.levels.iter().flat_map(Level::tables)
    }

    /// Runs in level 0 (what write stalls are measured in).
    pub(crate) fn l0_runs(&self) -> usize {
        self.levels.first().map_or(0, |level| level.runs.len())
    }

    /// Entries per level, level 0 first (for the filter allocation).
    pub(crate) fn entries_per_level(&self) -> Vec<u64> {
        self.levels
            .iter()
            .map(|level| level.tables().map(|t| t.meta.entries).sum())
            .collect()
    }

    /// The description the compaction planner works on.
    pub(crate) fn shape(&self) -> Vec<LevelShape> {
        self.levels
            .iter()
            .map(|level| LevelShape {
                runs: level
                    .runs
                    .iter()
                    .map(|run| RunShape {
                        id: run.id,
                        tables: run
                            .tables
                            .iter()
                            .map(|t| TableShape {
                                id: t.meta.id,
                                size: t.meta.file_size,
                                smallest: t.smallest_user_key().to_vec(),
                                largest: t.largest_user_key().to_vec(),
                            })
                            .collect(),
                    })
                    .collect(),
            })
            .collect()
    }

    /// The snapshot edit that recreates this version from nothing (written
    /// at the head of every new manifest). Runs are listed oldest first:
    /// replaying the edit makes each new run its level's newest.
    pub(crate) fn snapshot_edit(&self) -> VersionEdit {
        VersionEdit {
            added: self
                .levels
                .iter()
                .flat_map(|level| level.runs.iter().rev().flat_map(|run| run.tables.iter()))
                .map(|t| t.meta.clone())
                .collect(),
            ..VersionEdit::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Keys over a 2-letter alphabet with long shared heads, so that many
    /// keys tie on their first 8 bytes, and short keys that pad with zeros.
    fn key() -> impl Strategy<Value = Vec<u8>> {
        prop_oneof![
            proptest::collection::vec(prop_oneof![Just(0u8), Just(b'a')], 0..4),
            proptest::collection::vec(prop_oneof![Just(0u8), Just(b'a')], 0..4).prop_map(|tail| [
                b"aaaaaaaa".as_slice(),
                &tail
            ]
            .concat()),
            proptest::collection::vec(any::<u8>(), 0..12),
        ]
    }

    proptest! {
        #[test]
        fn find_range_agrees_with_a_linear_search(
            mut bounds in proptest::collection::btree_set(key(), 0..24),
            probes in proptest::collection::vec(key(), 1..40),
        ) {
            // Consecutive pairs of distinct sorted keys: disjoint ranges,
            // some of them a single key.
            let sorted: Vec<Vec<u8>> = std::mem::take(&mut bounds).into_iter().collect();
            let ranges: Vec<(Vec<u8>, Vec<u8>)> = sorted
                .chunks(2)
                .map(|pair| (pair[0].clone(), pair.last().cloned().unwrap_or_default()))
                .collect();
            let prefix = match (ranges.first(), ranges.last()) {
                (Some(first), Some(last)) => common_prefix(&first.0, &last.1).to_vec(),
                _ => Vec::new(),
            };
            let fences: Vec<[u64; 2]> =
                ranges.iter().map(|(s, l)| [fence(&prefix, s), fence(&prefix, l)]).collect();
            let all_keys = sorted.iter().chain(&probes);
            for key in all_keys {
                let truth = ranges.iter().find(|(s, l)| s <= key && key <= l);
                let found = find_range(&ranges, &prefix, &fences, key, |(s, l)| {
                    (s.as_slice(), l.as_slice())
                });
                prop_assert_eq!(found, truth, "key {:?}", key);
            }
        }
    }

    #[test]
    fn fences_order_like_keys_and_tie_on_shared_heads() {
        let fence = |key: &[u8]| fence(b"", key);
        assert!(fence(b"a") < fence(b"b"));
        assert!(fence(b"") < fence(b"\0\0\x01"));
        assert_eq!(fence(b"a"), fence(b"a\0"));
        assert_eq!(fence(b"abcdefgh1"), fence(b"abcdefgh2"));
        assert_eq!(fence(b"\xff\xff\xff\xff\xff\xff\xff\xff"), u64::MAX);
    }

    #[test]
    fn fences_read_past_the_common_prefix() {
        let fence = |key: &[u8]| fence(b"user:", key);
        assert!(fence(b"user:12345678a") < fence(b"user:12345679"));
        assert_eq!(fence(b"user"), 0, "before every key with the prefix");
        assert_eq!(fence(b"usera"), u64::MAX, "after every key with the prefix");
        assert_eq!(fence(b"user:"), 0);
        assert_eq!(common_prefix(b"user:1", b"user:2"), b"user:");
    }
}
