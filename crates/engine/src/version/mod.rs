//! Versions: which tables make up the database at one moment, arranged in
//! levels of sorted runs.
//!
//! A [`Version`] is immutable; every flush or compaction derives a new one
//! by applying a [`VersionEdit`]. Readers hold an `Arc<Version>` for as
//! long as they read, so the tables they see stay open even when a
//! compaction replaces them.

mod residency;
mod set;

use std::cmp::Reverse;
use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::compaction::{LevelShape, RunShape, TableShape};
use crate::error::Result;
use crate::fence::Fences;
use crate::fs::FileSystem;
use crate::key::{SeqNo, user_key_of};
use crate::manifest::{TableMeta, VersionEdit};
use crate::read_tier::{Files, ReadTier};
use crate::sstable::{BlockCache, OpenFiles, Table};
use residency::{ResidentGuard, Slot};

pub(crate) use residency::{Residency, Summary};
pub(crate) use set::{Start, VersionSet};

/// Levels whose statistics are kept apart; deeper levels share the last.
pub(crate) const COUNTED_LEVELS: usize = 8;

/// What the tables of a database share: how their files are read, the
/// block cache, and the budget of resident metadata.
#[derive(Debug)]
pub(crate) struct SharedTables {
    pub fs: Arc<dyn FileSystem>,
    pub files: Arc<OpenFiles>,
    pub cache: Arc<BlockCache>,
    pub residency: Arc<Residency>,
}

impl SharedTables {
    /// Opens table `id` of `level`, stored at `path`: its pieces kept
    /// under the budget.
    pub(crate) fn open_table(&self, path: PathBuf, id: u64, level: u32) -> Result<Table> {
        Table::open_shared(
            &self.files,
            path,
            id,
            Arc::clone(&self.cache),
            self.residency.keeper(level),
        )
    }
}

/// A table as a version knows it: what the manifest says of it, and its
/// metadata, read at first use and resident while the budget allows
/// ([`residency`]). When the last version holding it is dropped after a
/// compaction replaced it, its file is deleted.
pub(crate) struct LiveTable {
    /// What the manifest records about it.
    pub meta: TableMeta,
    slot: Arc<Slot>,
    shared: Arc<SharedTables>,
    obsolete: AtomicBool,
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
    /// A table of the manifest stored at `path`, nothing of it read yet.
    pub(crate) fn new(meta: TableMeta, path: PathBuf, shared: &Arc<SharedTables>) -> Self {
        Self {
            slot: Arc::new(Slot::new(meta.id, meta.level, path)),
            meta,
            shared: Arc::clone(shared),
            obsolete: AtomicBool::new(false),
        }
    }

    /// A table just written and opened: resident if the budget has room.
    pub(crate) fn written(meta: TableMeta, table: Arc<Table>, shared: &Arc<SharedTables>) -> Self {
        let live = Self::new(meta, table.path().to_path_buf(), shared);
        shared.residency.offer(&live.slot, table);
        live
    }

    /// The table, its metadata read now if it is not resident: for a
    /// lookup or a scan, whose use counts toward keeping it resident.
    /// Damage found reading it names the file and offset.
    pub(crate) fn table(&self) -> Result<TableRef> {
        self.table_in(Files)
    }

    /// [`LiveTable::table`] within `tier`: from a tier that keeps to
    /// memory, only if the metadata is resident or cached.
    pub(crate) fn table_in<T: ReadTier>(&self, tier: T) -> Result<TableRef, T::Error> {
        if let Some(guard) = self.shared.residency.resident_for_use(&self.slot) {
            return Ok(TableRef(Held::Resident(guard)));
        }
        let table = self.not_resident(true, tier)?;
        Ok(TableRef(Held::Read(table)))
    }

    /// [`LiveTable::table`] as an `Arc`, for a reader that outlives the call.
    pub(crate) fn table_arc(&self) -> Result<Arc<Table>> {
        let resident = self.shared.residency.resident_for_use(&self.slot);
        match resident.and_then(ResidentGuard::into_arc) {
            Some(table) => Ok(table),
            None => self.not_resident(true, Files),
        }
    }

    /// The table for a pass over all of it (a compaction, a backfill, a
    /// verification): read and kept nowhere unless it is resident or
    /// cached already, so that a pass does not push out what lookups use.
    pub(crate) fn table_for_pass(&self) -> Result<Arc<Table>> {
        match self.shared.residency.resident(&self.slot) {
            Some(table) => Ok(table),
            None => self.not_resident(false, Files),
        }
    }

    /// The table when its metadata is not resident: from the block cache,
    /// where a table the budget did not keep is cached (and promoted into
    /// the budget once it is hot enough), or read from the file. A use
    /// for a lookup (`for_use`) caches what the budget does not keep.
    fn not_resident<T: ReadTier>(&self, for_use: bool, tier: T) -> Result<Arc<Table>, T::Error> {
        let (cache, residency) = (&self.shared.cache, &self.shared.residency);
        if let Some(table) = cache.table(self.meta.id) {
            residency.served_by_cache(&self.slot);
            if for_use {
                residency.promote(&self.slot, &table);
            }
            return Ok(table);
        }
        tier.may_read_file()?;
        let (table, kept) = residency.read(&self.slot, |slot| self.read(slot), for_use)?;
        if for_use && !kept {
            cache.insert_table(self.meta.id, Arc::clone(&table));
        }
        Ok(table)
    }

    /// Uses of the table by lookups and scans, decayed over time.
    pub(crate) fn heat(&self) -> u64 {
        self.shared.residency.heat(&self.slot)
    }

    /// What is known of the table once its metadata has been read.
    pub(crate) fn summary(&self) -> Option<&Summary> {
        self.slot.summary()
    }

    /// Whether the table has no leaf of value index `index_id` (it was
    /// written before the index was defined). Reads the metadata of a
    /// table not read since open, once.
    pub(crate) fn lacks_value_leaf(&self, index_id: u64) -> Result<bool> {
        if self.summary().is_none() {
            self.table_for_pass()?;
        }
        Ok(self
            .summary()
            .is_some_and(|s| !s.value_indexes.contains(&index_id)))
    }

    fn read(&self, slot: &Slot) -> crate::error::Result<Table> {
        let path = slot.path().to_path_buf();
        self.shared.open_table(path, self.meta.id, self.meta.level)
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
        self.shared.residency.forget(self.meta.id);
        self.shared.cache.forget_table(self.meta.id);
        if self.obsolete.load(Ordering::Acquire) {
            // An open descriptor would keep the deleted file's space in use.
            self.shared.files.forget(self.meta.id);
            // Readers that still iterate hold the open file, which outlives
            // its name. A failed removal leaves an orphan that the next open
            // deletes, so there is nothing better to do with the error. A
            // panicking removal is caught like a failed one: this runs
            // wherever the last holder lets go, a writer midway through its
            // write group say, which must not unwind from here.
            let (fs, path) = (&self.shared.fs, self.slot.path());
            let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| fs.remove(path)));
        }
    }
}

/// A table in use: resident (held without touching its reference count,
/// which sixteen readers of one table would otherwise all write), or read
/// for this use.
pub(crate) struct TableRef(Held);

enum Held {
    Resident(ResidentGuard),
    Read(Arc<Table>),
}

impl std::ops::Deref for TableRef {
    type Target = Table;

    fn deref(&self) -> &Table {
        match &self.0 {
            Held::Resident(guard) => guard.table(),
            Held::Read(table) => table,
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
    /// Fences of the tables' largest user keys, and of their smallest
    /// (as `largest.of` maps them): `table_for` searches these, contiguous
    /// in memory, instead of following a pointer to each table's keys and
    /// comparing them (a fifth of a missing-key lookup, with 16 tables).
    largest: Fences,
    smallest: Vec<u64>,
}

impl Run {
    /// A run of `tables`, sorted by key and disjoint.
    pub(crate) fn new(id: u64, tables: Vec<Arc<LiveTable>>) -> Self {
        debug_assert!(
            tables
                .windows(2)
                .all(|pair| pair[0].largest_user_key() < pair[1].smallest_user_key()),
            "run {id}: tables not sorted, or their key ranges overlap"
        );
        let (largest, smallest) =
            fence_ranges(&tables, |t| (t.smallest_user_key(), t.largest_user_key()));
        Self {
            id,
            tables,
            largest,
            smallest,
        }
    }

    /// The tables, sorted by key.
    pub(crate) fn tables(&self) -> &[Arc<LiveTable>] {
        &self.tables
    }

    /// The table whose key range holds `user_key`, if any.
    pub(crate) fn table_for(&self, user_key: &[u8]) -> Option<&Arc<LiveTable>> {
        find_range(&self.tables, &self.largest, &self.smallest, user_key, |t| {
            (t.smallest_user_key(), t.largest_user_key())
        })
    }

    /// [`Run::table_for`], if that table holds anything a reader at `seq`
    /// sees (its oldest entry is not newer than `seq`).
    pub(crate) fn table_for_at(&self, user_key: &[u8], seq: SeqNo) -> Option<&Arc<LiveTable>> {
        self.table_for(user_key).filter(|t| t.meta.min_seq <= seq)
    }
}

/// Fences of the largest keys of `items` (sorted, with disjoint key ranges
/// given by `range`), and of their smallest keys by the same map.
fn fence_ranges<T>(items: &[T], range: impl Fn(&T) -> (&[u8], &[u8])) -> (Fences, Vec<u64>) {
    let low = items.first().map_or(&[][..], |t| range(t).0);
    let high = items.last().map_or(&[][..], |t| range(t).1);
    let largest = Fences::new(low, high, items.iter().map(|t| range(t).1));
    let smallest = items.iter().map(|t| largest.of(range(t).0)).collect();
    (largest, smallest)
}

/// The item of `items` whose range holds `key`, given the fences of
/// [`fence_ranges`]. Fences settle every comparison but ties, which the
/// keys themselves decide.
fn find_range<'a, T>(
    items: &'a [T],
    largest: &Fences,
    smallest: &[u64],
    key: &[u8],
    range: impl Fn(&T) -> (&[u8], &[u8]),
) -> Option<&'a T> {
    let fenced = largest.of(key);
    // Items before the ties end before the key; among the ties, the keys
    // decide.
    let ties = largest.ties(fenced);
    let after = ties.start + items.get(ties)?.partition_point(|t| range(t).1 < key);
    let (item, &low) = (items.get(after)?, smallest.get(after)?);
    let starts_before = low < fenced || (low == fenced && range(item).0 <= key);
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
    /// The version of `tables` (a recovered manifest's), each in the level
    /// and run its metadata names. Built in one pass: one edit adding them
    /// all would insert each table into its run's list, a quadratic copy
    /// for a run of thousands of tables in no particular order.
    pub(crate) fn of_tables(tables: impl IntoIterator<Item = Arc<LiveTable>>) -> Self {
        // Runs newest (largest id) first within a level.
        let mut runs: BTreeMap<(u32, Reverse<u64>), Vec<Arc<LiveTable>>> = BTreeMap::new();
        for table in tables {
            let at = (table.meta.level, Reverse(table.meta.run));
            runs.entry(at).or_default().push(table);
        }
        let mut version = Self::default();
        for ((level, Reverse(run)), mut tables) in runs {
            tables.sort_by(|a, b| a.smallest_user_key().cmp(b.smallest_user_key()));
            let level = level as usize;
            if version.levels.len() <= level {
                version.levels.resize_with(level + 1, Level::default);
            }
            version.levels[level].runs.push(Run::new(run, tables));
        }
        version.debug_check();
        version
    }

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
        next.debug_check();
        Ok(next)
    }

    /// Debug builds check what readers of a version rely on: each table in
    /// one place only, none whose file is scheduled for deletion, and runs
    /// newest first (run ids are file numbers, so newer runs have larger
    /// ids). A run checks its own tables (`Run::new`).
    fn debug_check(&self) {
        if cfg!(debug_assertions) {
            let mut ids = std::collections::BTreeSet::new();
            for table in self.tables() {
                debug_assert!(ids.insert(table.meta.id), "table {} twice", table.meta.id);
                debug_assert!(
                    !table.obsolete.load(Ordering::Acquire),
                    "table {} is in a new version after a compaction removed it",
                    table.meta.id
                );
            }
            for (at, level) in self.levels.iter().enumerate() {
                debug_assert!(
                    level.runs.windows(2).all(|pair| pair[0].id > pair[1].id),
                    "level {at}: runs not newest first"
                );
            }
        }
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
    use crate::fence::tests::tying_key;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn find_range_agrees_with_a_linear_search(
            bounds in proptest::collection::btree_set(tying_key(), 0..24),
            probes in proptest::collection::vec(tying_key(), 1..40),
        ) {
            // Consecutive pairs of distinct sorted keys: disjoint ranges,
            // some of them a single key.
            let sorted: Vec<Vec<u8>> = bounds.into_iter().collect();
            let ranges: Vec<(Vec<u8>, Vec<u8>)> = sorted
                .chunks(2)
                .map(|pair| (pair[0].clone(), pair.last().cloned().unwrap_or_default()))
                .collect();
            fn range((s, l): &(Vec<u8>, Vec<u8>)) -> (&[u8], &[u8]) {
                (s, l)
            }
            let (largest, smallest) = fence_ranges(&ranges, range);
            for key in sorted.iter().chain(&probes) {
                let truth = ranges.iter().find(|(s, l)| s <= key && key <= l);
                let found = find_range(&ranges, &largest, &smallest, key, range);
                prop_assert_eq!(found, truth, "key {:?}", key);
            }
        }

        /// A recovered version holds each table where one edit adding
        /// them all puts it, whatever order they come in.
        #[test]
        fn of_tables_places_tables_as_an_edit_does(
            placed in proptest::collection::vec((0..3u32, 0..3u64), 0..40),
            order in any::<proptest::sample::Index>(),
        ) {
            let fs: Arc<dyn FileSystem> = Arc::new(crate::fs::FaultInjectionFs::new());
            let cache = Arc::new(BlockCache::new(1 << 20));
            let shared = Arc::new(SharedTables {
                files: Arc::new(OpenFiles::new(Arc::clone(&fs), 8, false)),
                fs,
                residency: Arc::new(Residency::new(1 << 20, Arc::clone(&cache))),
                cache,
            });
            // Table `i` holds the key range `i`: disjoint within any run.
            let metas: Vec<TableMeta> = placed
                .iter()
                .enumerate()
                .map(|(i, &(level, run))| {
                    let key = |user: String| {
                        let mut out = Vec::new();
                        crate::key::encode_internal_key(
                            &mut out, user.as_bytes(), 1, crate::key::ValueKind::Value,
                        );
                        out
                    };
                    TableMeta {
                        id: 100 + i as u64,
                        level,
                        run: 10 + run,
                        file_size: 1,
                        entries: 1,
                        smallest: key(format!("{i:03}a")),
                        largest: key(format!("{i:03}b")),
                        min_seq: 1,
                        max_seq: 1,
                    }
                })
                .collect();
            let live: Vec<Arc<LiveTable>> = metas
                .iter()
                .map(|m| Arc::new(LiveTable::new(m.clone(), PathBuf::from("t"), &shared)))
                .collect();
            let opened = live.iter().map(|t| (t.meta.id, Arc::clone(t))).collect();
            let edit = VersionEdit { added: metas, ..VersionEdit::default() };
            let applied = Version::default().apply(&edit, &opened).unwrap();
            let mut shuffled = live.clone();
            if !shuffled.is_empty() {
                let turn = order.index(shuffled.len());
                shuffled.rotate_left(turn);
                shuffled.reverse();
            }
            let ids = |v: &Version| -> Vec<Vec<(u64, Vec<u64>)>> {
                v.levels
                    .iter()
                    .map(|level| {
                        level.runs.iter().map(|r| (r.id, r.tables.iter().map(|t| t.meta.id).collect())).collect()
                    })
                    .collect()
            };
            prop_assert_eq!(ids(&Version::of_tables(shuffled)), ids(&applied));
        }
    }
}
