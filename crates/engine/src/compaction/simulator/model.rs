//! The model store: tables with real contents, flushes, a runner's
//! `apply`, and the invariants checked after every step.
//!
//! Each table's contents map a key to the flush that wrote it (the model's
//! sequence number), so the checks see what a read would see: per key, the
//! versions met walking the levels top-down must come from ever older
//! flushes (the ordering rule), and the first one must be the newest write
//! (so no dropped tombstone uncovered an older value).

use std::collections::{BTreeMap, BTreeSet};

use super::super::shape::KeyRange;
use super::super::{CompactionTask, LevelShape, OutputRun, RunShape, TableShape};
use crate::options::CompactionStyle;

/// Model bytes of a value entry and of a tombstone: tombstones are small,
/// so sizes vary the way real ones do.
const VALUE_BYTES: u64 = 100;
/// See [`VALUE_BYTES`].
const TOMBSTONE_BYTES: u64 = 12;
/// Output tables are cut near this size: about ten entries, so compactions
/// produce several tables and runs have many boundaries.
pub(super) const TARGET_TABLE_BYTES: u64 = 1_000;
/// Keys are drawn from `0..KEY_SPACE`: small enough that flushes overlap.
pub(super) const KEY_SPACE: u32 = 2_000;
/// A quiescing loop longer than this means the planner does not converge.
pub(super) const MAX_STEPS: usize = 10_000;

/// One version of a key: the flush that wrote it, and whether it deletes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Version {
    flush: u64,
    tombstone: bool,
}

pub(super) use crate::rng::SplitMix64 as Rng;

pub(super) fn encode(key: u32) -> Vec<u8> {
    key.to_be_bytes().to_vec()
}

/// The store as the planner sees it, plus what its tables hold.
#[derive(Default)]
pub(super) struct Model {
    /// The shape the planner sees.
    pub levels: Vec<LevelShape>,
    /// Every live table's entries, by table id.
    pub contents: BTreeMap<u64, BTreeMap<u32, Version>>,
    /// The newest write of every key: what a read must return.
    latest: BTreeMap<u32, Version>,
    next_id: u64,
    flushes: u64,
    /// Times two or more tasks were planned to run side by side.
    pub side_by_side: usize,
}

impl Model {
    fn new_table(&mut self, entries: BTreeMap<u32, Version>) -> TableShape {
        self.next_id += 1;
        let size = entries
            .values()
            .map(|v| {
                if v.tombstone {
                    TOMBSTONE_BYTES
                } else {
                    VALUE_BYTES
                }
            })
            .sum();
        let (Some(first), Some(last)) = (entries.keys().next(), entries.keys().next_back()) else {
            panic!("tables are never empty")
        };
        let table = TableShape {
            id: self.next_id,
            size,
            smallest: encode(*first),
            largest: encode(*last),
        };
        self.contents.insert(table.id, entries);
        table
    }

    /// Flushes a memtable of random keys from a random window as a new L0 run.
    pub(super) fn flush(&mut self, rng: &mut Rng) {
        self.flushes += 1;
        let width = 1 + rng.below(400) as u32;
        let start = rng.below(u64::from(KEY_SPACE - width)) as u32;
        let mut entries = BTreeMap::new();
        for _ in 0..1 + rng.below(40) {
            let key = start + rng.below(u64::from(width)) as u32;
            entries.insert(
                key,
                Version {
                    flush: self.flushes,
                    tombstone: rng.one_in(5),
                },
            );
        }
        self.latest.extend(entries.iter().map(|(k, v)| (*k, *v)));
        let table = self.new_table(entries);
        if self.levels.is_empty() {
            self.levels.push(LevelShape::default());
        }
        self.levels[0].runs.insert(
            0,
            RunShape {
                id: table.id,
                tables: vec![table],
            },
        );
    }

    fn table(&self, level: usize, id: u64) -> &TableShape {
        let found = self
            .levels
            .get(level)
            .and_then(|l| l.tables().find(|t| t.id == id));
        found.unwrap_or_else(|| panic!("task names table {id}, which level {level} does not hold"))
    }

    /// Runs `task` as the runner would, checking what the task promises.
    pub(super) fn apply(&mut self, task: &CompactionTask) {
        let levels: Vec<usize> = task.inputs.iter().map(|(level, _)| *level).collect();
        assert!(
            levels.windows(2).all(|w| w[0] < w[1]),
            "one input entry per level, ascending: {task:?}"
        );
        let inputs: Vec<TableShape> = task
            .inputs
            .iter()
            .flat_map(|(level, ids)| ids.iter().map(|id| self.table(*level, *id).clone()))
            .collect();
        assert!(!inputs.is_empty(), "a task with no inputs: {task:?}");
        let ids: BTreeSet<u64> = inputs.iter().map(|t| t.id).collect();
        let span = KeyRange::spanning(&inputs).unwrap();
        let below_overlaps = |levels: &[LevelShape]| {
            levels
                .iter()
                .skip(task.output_level)
                .flat_map(LevelShape::tables)
                .any(|t| !ids.contains(&t.id) && KeyRange::of(t).overlaps(&span))
        };
        assert!(
            !task.bottommost || !below_overlaps(&self.levels),
            "bottommost with older data below: {task:?}"
        );
        if let OutputRun::Existing(run_id) = task.output_run {
            let runs = &self
                .levels
                .get(task.output_level)
                .expect("existing run's level")
                .runs;
            let run = runs.iter().find(|r| r.id == run_id).expect("existing run");
            for t in &run.tables {
                assert!(
                    ids.contains(&t.id) || !KeyRange::of(t).overlaps(&span),
                    "output overlaps table {} of run {run_id}",
                    t.id
                );
            }
        }
        assert_eq!(task.target_table_bytes, TARGET_TABLE_BYTES);

        // Merge: the newest flush wins; at the bottom, tombstones go.
        let mut merged: BTreeMap<u32, Version> = BTreeMap::new();
        for t in &inputs {
            for (key, version) in self.contents.remove(&t.id).unwrap() {
                let slot = merged.entry(key).or_insert(version);
                if version.flush > slot.flush {
                    *slot = version;
                }
            }
        }
        if task.bottommost {
            merged.retain(|_, v| !v.tombstone);
        }
        let mut outputs = Vec::new();
        let mut current = BTreeMap::new();
        let mut bytes = 0;
        for (key, version) in merged {
            current.insert(key, version);
            bytes += if version.tombstone {
                TOMBSTONE_BYTES
            } else {
                VALUE_BYTES
            };
            if bytes >= TARGET_TABLE_BYTES {
                outputs.push(self.new_table(std::mem::take(&mut current)));
                bytes = 0;
            }
        }
        if !current.is_empty() {
            outputs.push(self.new_table(current));
        }

        // Install, as `Version::apply` does.
        for (level, level_ids) in &task.inputs {
            let runs = &mut self.levels[*level].runs;
            for run in runs.iter_mut() {
                run.tables.retain(|t| !level_ids.contains(&t.id));
            }
            runs.retain(|run| !run.tables.is_empty());
        }
        if let Some(first) = outputs.first() {
            if self.levels.len() <= task.output_level {
                self.levels
                    .resize_with(task.output_level + 1, LevelShape::default);
            }
            let run_id = match task.output_run {
                OutputRun::New => first.id,
                OutputRun::Existing(id) => id,
            };
            let runs = &mut self.levels[task.output_level].runs;
            let at = match runs.iter().position(|r| r.id == run_id) {
                Some(at) => at,
                None => {
                    runs.insert(
                        0,
                        RunShape {
                            id: run_id,
                            tables: Vec::new(),
                        },
                    );
                    0
                }
            };
            for table in outputs {
                let tables = &mut runs[at].tables;
                let pos = tables.partition_point(|t| t.smallest < table.smallest);
                tables.insert(pos, table);
            }
        }
        while self.levels.last().is_some_and(|l| l.runs.is_empty()) {
            self.levels.pop();
        }
    }

    /// Checks what must hold after every step: the ordering rule, reads,
    /// run shapes, and, leveled, a single run per level below L0.
    pub(super) fn check(&self, style: &CompactionStyle) {
        if let CompactionStyle::Leveled { .. } = style {
            for (i, level) in self.levels.iter().enumerate().skip(1) {
                assert!(
                    level.runs.len() <= 1,
                    "level {i} has {} runs",
                    level.runs.len()
                );
            }
        }
        let mut seen: BTreeMap<u32, Vec<Version>> = BTreeMap::new();
        for (i, level) in self.levels.iter().enumerate() {
            for run in &level.runs {
                assert!(!run.tables.is_empty(), "empty run {} at level {i}", run.id);
                for pair in run.tables.windows(2) {
                    assert!(
                        pair[0].largest < pair[1].smallest,
                        "run {} at level {i} not disjoint and sorted",
                        run.id
                    );
                }
                for table in &run.tables {
                    let entries = &self.contents[&table.id];
                    assert_eq!(
                        entries.keys().next().map(|k| encode(*k)),
                        Some(table.smallest.clone())
                    );
                    assert_eq!(
                        entries.keys().next_back().map(|k| encode(*k)),
                        Some(table.largest.clone())
                    );
                    for (key, version) in entries {
                        seen.entry(*key).or_default().push(*version);
                    }
                }
            }
        }
        for (key, versions) in &seen {
            assert!(
                versions.windows(2).all(|w| w[0].flush > w[1].flush),
                "key {key}: newer data below older (flushes top-down {versions:?})"
            );
        }
        let keys: BTreeSet<u32> = seen.keys().chain(self.latest.keys()).copied().collect();
        for key in keys {
            let read = seen
                .get(&key)
                .and_then(|v| v.first())
                .filter(|v| !v.tombstone);
            let expected = self.latest.get(&key).filter(|v| !v.tombstone);
            assert_eq!(read, expected, "key {key} reads wrong");
        }
    }
}
