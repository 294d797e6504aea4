//! Running the compactions the planner chooses.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use std::ops::Bound;

use crate::compaction::{
    CompactionTask, LevelShape, OutputRun, piece_count, plan_beside, plan_full, split_points,
};
use crate::error::{Error, Result};
use crate::iter::{BoxedSource, MergeIter, UserBounds};
use crate::key::{Entry, SeqNo, ValueKind};
use crate::manifest::VersionEdit;
use crate::version::{LiveTable, Version};

use super::background::panic_message;
use super::flush::{FilterSizing, Outputs, TableJob, projected_entries};
use super::{Inner, State, SuperVersion, lock, read, write};

/// Uses per table, on average, that a level's tables must have seen before
/// their counts steer the bits per key of the filters compacted into it.
const MIN_USES_PER_TABLE: u64 = 16;

/// What [`Inner::compact_once`] found to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Compacted {
    /// It ran a compaction.
    Ran,
    /// Nothing beside the jobs under way, whose results may call for more.
    Blocked,
    /// Nothing, and no job under way: the shape is at rest.
    Idle,
}

impl Compacted {
    pub(super) fn ran(self) -> bool {
        self == Self::Ran
    }
}

impl Inner {
    /// Runs the compaction the planner picks next beside those under way,
    /// if any.
    pub(super) fn compact_once(&self) -> Result<Compacted> {
        let _beside_others = read(&self.compaction_lock);
        let (version, task, _in_flight) = {
            let mut state = lock(&self.state);
            Self::check_background_error(&state)?;
            // Planned and registered under `state`, which every install
            // holds: the next planner sees this task, and the version it
            // planned on is the current one.
            let version = Arc::clone(&self.current().version);
            let task = plan_beside(
                &version.shape(),
                &self.options.compaction,
                &state.compactions,
                self.options.table_target_bytes,
            );
            let Some(task) = task else {
                return Ok(match state.jobs {
                    0 => Compacted::Idle,
                    _ => Compacted::Blocked,
                });
            };
            let in_flight = self.start_job(&mut state, Some(task.clone()));
            (version, task, in_flight)
        };
        self.merge(&version, &task).map(|()| Compacted::Ran)
    }

    /// Flushes, then compacts every table overlapping `range` (all tables
    /// when `None`) into the last level.
    pub(super) fn compact_range(&self, range: Option<(&[u8], &[u8])>) -> Result<()> {
        self.flush_all()?;
        let _alone = write(&self.compaction_lock);
        // What it compacts is what level 0 held when it began: under
        // steady writes into the range, chasing every newer flush would
        // never end (and hold off every other compaction meanwhile).
        let started: BTreeSet<u64> = (self.current().version.levels.first())
            .into_iter()
            .flat_map(|l0| l0.tables())
            .map(|table| table.meta.id)
            .collect();
        // Each step plans against the version the previous step produced.
        loop {
            let version = Arc::clone(&self.current().version);
            let tasks = plan_full(
                &without_newer_flushes(version.shape(), &started),
                &self.options.compaction,
                self.options.table_target_bytes,
                range,
            );
            let Some(task) = tasks.into_iter().next() else {
                return Ok(());
            };
            // On the caller's thread: a panic fails the database, as it
            // would on a compaction thread.
            self.inline("a range compaction", || self.run(&version, &task))?;
        }
    }

    /// Merges the task's input tables into new tables of its output level
    /// and installs the result.
    fn run(&self, version: &Version, task: &CompactionTask) -> Result<()> {
        let _in_flight = {
            let mut state = lock(&self.state);
            Self::check_background_error(&state)?;
            self.start_job(&mut state, None)
        };
        self.merge(version, task)
    }

    /// Counts a compaction or table rewrite as under way (and lists a
    /// planner's `task` beside the others) until the returned guard drops,
    /// by a panic too.
    pub(super) fn start_job(
        &self,
        state: &mut State,
        task: Option<CompactionTask>,
    ) -> InFlight<'_> {
        state.jobs += 1;
        state.compactions.extend(task.iter().cloned());
        InFlight { inner: self, task }
    }

    /// Bits per key the outputs of a compaction into `level` get beyond
    /// the level's share ([`FilterPolicy::access_shift`]): from the uses of
    /// the inputs already on `level` (their keys' lookups reached it)
    /// against those of every table there. 0 when no input is on `level`,
    /// or until its tables have seen [`MIN_USES_PER_TABLE`] uses each on
    /// average: fewer are noise, and a store read only after its load
    /// would have every filter compacted before the reads shrink.
    ///
    /// [`FilterPolicy::access_shift`]: crate::filter_policy::FilterPolicy::access_shift
    fn access_shift(
        &self,
        version: &Version,
        inputs: &[Arc<LiveTable>],
        level: usize,
        projected: &[u64],
    ) -> f64 {
        let used = |tables: &mut dyn Iterator<Item = &Arc<LiveTable>>| {
            tables.fold((0u64, 0u64, 0u64), |(heat, keys, count), t| {
                (heat + t.heat(), keys + t.meta.entries, count + 1)
            })
        };
        let (in_heat, in_keys, _) =
            used(&mut inputs.iter().filter(|t| t.meta.level as usize == level));
        let Some(on_level) = version.levels.get(level) else {
            return 0.0;
        };
        let (level_heat, level_keys, tables) = used(&mut on_level.tables());
        if in_keys == 0 || level_keys == 0 || level_heat < MIN_USES_PER_TABLE * tables {
            return 0.0;
        }
        self.options.filter_policy.access_shift(
            level,
            projected.get(level).copied().unwrap_or(0),
            in_heat as f64 / in_keys as f64,
            level_heat as f64 / level_keys as f64,
        )
    }

    fn merge(&self, version: &Version, task: &CompactionTask) -> Result<()> {
        let inputs = inputs_of(version, task);
        // Every input leaves its level; about as many entries arrive at the
        // output level (less what the merge drops).
        let incoming = inputs.iter().map(|t| t.meta.entries).sum();
        let removed = inputs
            .iter()
            .map(|t| (t.meta.level as usize, t.meta.entries));
        let projected = projected_entries(version, task.output_level, incoming, removed);
        let sizing = FilterSizing {
            bits_shift: self.access_shift(version, &inputs, task.output_level, &projected),
            projected,
        };
        let input_bytes = inputs.iter().map(|t| t.meta.file_size).sum();
        let pieces = piece_count(
            input_bytes,
            task.target_table_bytes,
            self.options.compaction_threads,
        );
        let starts: Vec<(&[u8], u64)> = inputs
            .iter()
            .map(|t| (t.smallest_user_key(), t.meta.file_size))
            .collect();
        let pieces = key_ranges(split_points(&starts, pieces));
        // Every piece's tables join one run: a new one is named before the
        // pieces start (run ids are file numbers taken when the run is made).
        let run = match task.output_run {
            OutputRun::New if pieces.len() > 1 => OutputRun::Existing(self.new_file_number()),
            run => run,
        };
        let oldest_snapshot = self.oldest_snapshot();
        // Read once for every piece; inputs not resident are not kept.
        let tables = inputs
            .iter()
            .map(|t| t.table_for_pass())
            .collect::<Result<Vec<_>>>()?;
        let merge_piece = |(lower, upper): &UserBounds| {
            // Newest first: levels top-down, runs within a level newest first.
            let sources: Vec<BoxedSource<'static>> = tables
                .iter()
                .map(|t| Box::new(t.iter(lower.clone(), upper.clone())) as BoxedSource<'static>)
                .collect();
            let entries =
                GarbageFilter::new(MergeIter::new(sources), oldest_snapshot, task.bottommost);
            self.write_tables(
                entries,
                task.output_level,
                run,
                None,
                &sizing,
                task.target_table_bytes,
                TableJob::Compaction,
            )
        };
        let merged: Vec<Result<Outputs>> = match pieces.as_slice() {
            [whole] => vec![merge_piece(whole)],
            _ => std::thread::scope(|scope| {
                let threads: Vec<_> = pieces
                    .iter()
                    .map(|piece| scope.spawn(|| merge_piece(piece)))
                    .collect();
                threads
                    .into_iter()
                    .map(|thread| {
                        thread.join().unwrap_or_else(|panic| {
                            // A custom extractor's panic, say: the compaction
                            // fails as a panic on the background thread would.
                            Err(Error::Background(format!(
                                "a compaction piece panicked: {}",
                                panic_message(panic.as_ref())
                            )))
                        })
                    })
                    .collect()
            }),
        };
        let outputs = self.join_pieces(merged)?;
        let written: u64 = outputs.metas.iter().map(|m| m.file_size).sum();
        self.replace_tables(&inputs, outputs)?;
        self.counters.with(|c| {
            c.compactions.add(1);
            c.level(task.output_level).bytes_written.add(written);
            for input in &inputs {
                c.level(input.meta.level as usize)
                    .compaction_bytes_read
                    .add(input.meta.file_size);
            }
        });
        Ok(())
    }

    /// The pieces' outputs in key order, or the first error, with every
    /// table the other pieces wrote deleted.
    fn join_pieces(&self, merged: Vec<Result<Outputs>>) -> Result<Outputs> {
        let mut joined = Outputs {
            metas: Vec::new(),
            opened: BTreeMap::new(),
        };
        let mut failure = None;
        for piece in merged {
            match piece {
                Ok(outputs) => {
                    joined.metas.extend(outputs.metas);
                    joined.opened.extend(outputs.opened);
                }
                Err(err) => {
                    failure.get_or_insert(err);
                }
            }
        }
        match failure {
            Some(err) => {
                self.discard(&joined, None);
                Err(err)
            }
            None => Ok(joined),
        }
    }
}

/// The key ranges between consecutive `splits`, from the first key to the
/// last.
fn key_ranges(splits: Vec<Vec<u8>>) -> Vec<UserBounds> {
    let mut lower = Bound::Unbounded;
    let mut ranges = Vec::with_capacity(splits.len() + 1);
    for split in splits {
        ranges.push((lower, Bound::Excluded(split.clone())));
        lower = Bound::Included(split);
    }
    ranges.push((lower, Bound::Unbounded));
    ranges
}

impl Inner {
    /// Installs a version where `outputs` replace `inputs` (the memtables
    /// unchanged), then schedules the inputs' files for deletion once no
    /// reader holds them: the end of every compaction and table rewrite.
    pub(super) fn replace_tables(&self, inputs: &[Arc<LiveTable>], outputs: Outputs) -> Result<()> {
        let mut state = lock(&self.state);
        let edit = VersionEdit {
            removed: inputs.iter().map(|t| (t.meta.level, t.meta.id)).collect(),
            added: outputs.metas,
            ..VersionEdit::default()
        };
        let next = self.log_and_apply(&mut state, edit, &outputs.opened)?;
        let now = self.current();
        self.install(SuperVersion {
            active: Arc::clone(&now.active),
            immutables: now.immutables.clone(),
            version: next,
        });
        drop(state);
        for table in inputs {
            table.mark_obsolete();
        }
        Ok(())
    }
}

/// A compaction or table rewrite under way (see [`Inner::start_job`]).
pub(super) struct InFlight<'a> {
    inner: &'a Inner,
    /// The planner's task, listed in `State::compactions`.
    task: Option<CompactionTask>,
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        let mut state = lock(&self.inner.state);
        state.jobs -= 1;
        if let Some(task) = &self.task
            && let Some(at) = state.compactions.iter().position(|t| t == task)
        {
            state.compactions.swap_remove(at);
        }
        // Waiters for idleness, and compaction threads that waited for
        // these levels (they sleep until the generation moves).
        self.inner
            .generation
            .fetch_add(1, std::sync::atomic::Ordering::Release);
        self.inner.changed.notify_all();
    }
}

/// The task's input tables, newest first.
fn inputs_of(version: &Version, task: &CompactionTask) -> Vec<Arc<LiveTable>> {
    let wanted: BTreeMap<usize, BTreeSet<u64>> = task
        .inputs
        .iter()
        .map(|(level, ids)| (*level, ids.iter().copied().collect()))
        .collect();
    let mut inputs = Vec::new();
    for (level, ids) in &wanted {
        if let Some(level) = version.levels.get(*level) {
            inputs.extend(level.tables().filter(|t| ids.contains(&t.meta.id)).cloned());
        }
    }
    inputs
}

/// Drops what no reader can see any more from a merged stream: versions
/// shadowed by a newer version at or below the oldest snapshot, and, when
/// nothing older lies below the output, tombstones no snapshot needs.
struct GarbageFilter<I> {
    inner: I,
    oldest_snapshot: SeqNo,
    bottommost: bool,
    /// User key of the previous entry and the sequence number of the
    /// previous version of it (`SeqNo::MAX` before the first version).
    previous: Option<(Vec<u8>, SeqNo)>,
}

impl<I> GarbageFilter<I> {
    fn new(inner: I, oldest_snapshot: SeqNo, bottommost: bool) -> Self {
        Self {
            inner,
            oldest_snapshot,
            bottommost,
            previous: None,
        }
    }
}

impl<I: Iterator<Item = Result<Entry>>> Iterator for GarbageFilter<I> {
    type Item = Result<Entry>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            let entry = match self.inner.next()? {
                Ok(entry) => entry,
                Err(err) => return Some(Err(err)),
            };
            let newer_seq = match &self.previous {
                Some((key, seq)) if *key == entry.key.user_key => *seq,
                _ => SeqNo::MAX,
            };
            self.previous = Some((entry.key.user_key.clone(), entry.key.seq));
            // A newer version every snapshot sees hides this one.
            if newer_seq <= self.oldest_snapshot {
                continue;
            }
            // The newest version every snapshot sees is a tombstone and no
            // older version can lie below: nothing is left to hide.
            if self.bottommost
                && entry.key.kind == ValueKind::Delete
                && entry.key.seq <= self.oldest_snapshot
            {
                continue;
            }
            return Some(Ok(entry));
        }
    }
}

/// `shape` without the level-0 runs none of whose tables is in `started`:
/// runs flushed since a range compaction began. They are the newest data,
/// above everything it moves, so leaving them keeps the ordering rule.
fn without_newer_flushes(mut shape: Vec<LevelShape>, started: &BTreeSet<u64>) -> Vec<LevelShape> {
    if let Some(l0) = shape.first_mut() {
        l0.runs
            .retain(|run| run.tables.iter().any(|t| started.contains(&t.id)));
    }
    shape
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::key::InternalKey;

    fn entry(key: &str, seq: SeqNo, kind: ValueKind) -> Result<Entry> {
        Ok(Entry {
            key: InternalKey::new(key.as_bytes(), seq, kind),
            value: Vec::new(),
        })
    }

    fn kept(
        entries: Vec<Result<Entry>>,
        oldest_snapshot: SeqNo,
        bottommost: bool,
    ) -> Vec<(String, SeqNo)> {
        GarbageFilter::new(entries.into_iter(), oldest_snapshot, bottommost)
            .map(|e| e.unwrap())
            .map(|e| (String::from_utf8(e.key.user_key).unwrap(), e.key.seq))
            .collect()
    }

    #[test]
    fn shadowed_versions_go_unless_a_snapshot_sees_them() {
        let input = || {
            vec![
                entry("a", 9, ValueKind::Value),
                entry("a", 6, ValueKind::Value),
                entry("a", 3, ValueKind::Value),
                entry("b", 2, ValueKind::Value),
            ]
        };
        assert_eq!(
            kept(input(), 100, false),
            [("a".into(), 9), ("b".into(), 2)]
        );
        // A snapshot at 7 sees a@6: a@3 is hidden from it and from everyone.
        assert_eq!(
            kept(input(), 7, false),
            [("a".into(), 9), ("a".into(), 6), ("b".into(), 2)]
        );
        assert_eq!(kept(input(), 4, false).len(), 4);
    }

    #[test]
    fn tombstones_go_only_at_the_bottom_and_when_every_snapshot_sees_them() {
        let input = || {
            vec![
                entry("a", 5, ValueKind::Delete),
                entry("a", 2, ValueKind::Value),
            ]
        };
        assert_eq!(kept(input(), 100, true), Vec::<(String, SeqNo)>::new());
        assert_eq!(kept(input(), 100, false), [("a".into(), 5)]);
        assert_eq!(kept(input(), 3, true), [("a".into(), 5), ("a".into(), 2)]);
    }
}
