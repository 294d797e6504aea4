//! The planner against a model of the store (in the spirit of mini-lsm's
//! compaction simulator): random flushes of random key ranges into L0,
//! planned tasks applied to the shape by a small `apply` that really merges
//! the tables' contents, and every invariant checked after every step.
//!
//! Each table's contents map a key to the flush that wrote it (the model's
//! sequence number), so the checks see what a read would see: per key, the
//! versions met walking the levels top-down must come from ever older
//! flushes (the ordering rule), and the first one must be the newest write
//! (so no dropped tombstone uncovered an older value).

use std::collections::{BTreeMap, BTreeSet};

use super::full::last_level;
use super::leveled::Leveled;
use super::shape::KeyRange;
use super::{CompactionTask, LevelShape, OutputRun, RunShape, TableShape, plan, plan_full};
use crate::options::CompactionStyle;

/// Model bytes of a value entry and of a tombstone: tombstones are small,
/// so sizes vary the way real ones do.
const VALUE_BYTES: u64 = 100;
/// See [`VALUE_BYTES`].
const TOMBSTONE_BYTES: u64 = 12;
/// Output tables are cut near this size: about ten entries, so compactions
/// produce several tables and runs have many boundaries.
const TARGET_TABLE_BYTES: u64 = 1_000;
/// Keys are drawn from `0..KEY_SPACE`: small enough that flushes overlap.
const KEY_SPACE: u32 = 2_000;
/// A quiescing loop longer than this means the planner does not converge.
const MAX_STEPS: usize = 10_000;

/// One version of a key: the flush that wrote it, and whether it deletes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Version {
    flush: u64,
    tombstone: bool,
}

/// SplitMix64: a tiny seeded generator, so every run is reproducible.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (`n > 0`).
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    /// True with probability `1 / n`.
    fn one_in(&mut self, n: u64) -> bool {
        self.below(n) == 0
    }
}

fn encode(key: u32) -> Vec<u8> {
    key.to_be_bytes().to_vec()
}

/// The store as the planner sees it, plus what its tables hold.
#[derive(Default)]
struct Model {
    levels: Vec<LevelShape>,
    contents: BTreeMap<u64, BTreeMap<u32, Version>>,
    /// The newest write of every key: what a read must return.
    latest: BTreeMap<u32, Version>,
    next_id: u64,
    flushes: u64,
}

impl Model {
    fn new_table(&mut self, entries: BTreeMap<u32, Version>) -> TableShape {
        self.next_id += 1;
        let size = entries.values().map(|v| if v.tombstone { TOMBSTONE_BYTES } else { VALUE_BYTES }).sum();
        let (Some(first), Some(last)) = (entries.keys().next(), entries.keys().next_back()) else {
            panic!("tables are never empty")
        };
        let table = TableShape { id: self.next_id, size, smallest: encode(*first), largest: encode(*last) };
        self.contents.insert(table.id, entries);
        table
    }

    /// Flushes a memtable of random keys from a random window as a new L0 run.
    fn flush(&mut self, rng: &mut Rng) {
        self.flushes += 1;
        let width = 1 + rng.below(400) as u32;
        let start = rng.below(u64::from(KEY_SPACE - width)) as u32;
        let mut entries = BTreeMap::new();
        for _ in 0..1 + rng.below(40) {
            let key = start + rng.below(u64::from(width)) as u32;
            entries.insert(key, Version { flush: self.flushes, tombstone: rng.one_in(5) });
        }
        self.latest.extend(entries.iter().map(|(k, v)| (*k, *v)));
        let table = self.new_table(entries);
        if self.levels.is_empty() {
            self.levels.push(LevelShape::default());
        }
        self.levels[0].runs.insert(0, RunShape { id: table.id, tables: vec![table] });
    }

    fn table(&self, level: usize, id: u64) -> &TableShape {
        let found = self.levels.get(level).and_then(|l| l.tables().find(|t| t.id == id));
        found.unwrap_or_else(|| panic!("task names table {id}, which level {level} does not hold"))
    }

    /// Runs `task` as the runner would, checking what the task promises.
    fn apply(&mut self, task: &CompactionTask) {
        let levels: Vec<usize> = task.inputs.iter().map(|(level, _)| *level).collect();
        assert!(levels.windows(2).all(|w| w[0] < w[1]), "one input entry per level, ascending: {task:?}");
        let inputs: Vec<TableShape> =
            task.inputs.iter().flat_map(|(level, ids)| ids.iter().map(|id| self.table(*level, *id).clone())).collect();
        assert!(!inputs.is_empty(), "a task with no inputs: {task:?}");
        let ids: BTreeSet<u64> = inputs.iter().map(|t| t.id).collect();
        let span = KeyRange::spanning(&inputs).unwrap();
        let below_overlaps = |levels: &[LevelShape]| {
            levels.iter().skip(task.output_level).flat_map(LevelShape::tables).any(|t| {
                !ids.contains(&t.id) && KeyRange::of(t).overlaps(&span)
            })
        };
        assert!(!task.bottommost || !below_overlaps(&self.levels), "bottommost with older data below: {task:?}");
        if let OutputRun::Existing(run_id) = task.output_run {
            let runs = &self.levels.get(task.output_level).expect("existing run's level").runs;
            let run = runs.iter().find(|r| r.id == run_id).expect("existing run");
            for t in &run.tables {
                assert!(ids.contains(&t.id) || !KeyRange::of(t).overlaps(&span), "output overlaps table {} of run {run_id}", t.id);
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
            bytes += if version.tombstone { TOMBSTONE_BYTES } else { VALUE_BYTES };
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
                self.levels.resize_with(task.output_level + 1, LevelShape::default);
            }
            let run_id = match task.output_run {
                OutputRun::New => first.id,
                OutputRun::Existing(id) => id,
            };
            let runs = &mut self.levels[task.output_level].runs;
            let at = match runs.iter().position(|r| r.id == run_id) {
                Some(at) => at,
                None => {
                    runs.insert(0, RunShape { id: run_id, tables: Vec::new() });
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
    fn check(&self, style: &CompactionStyle) {
        if let CompactionStyle::Leveled { .. } = style {
            for (i, level) in self.levels.iter().enumerate().skip(1) {
                assert!(level.runs.len() <= 1, "level {i} has {} runs", level.runs.len());
            }
        }
        let mut seen: BTreeMap<u32, Vec<Version>> = BTreeMap::new();
        for (i, level) in self.levels.iter().enumerate() {
            for run in &level.runs {
                assert!(!run.tables.is_empty(), "empty run {} at level {i}", run.id);
                for pair in run.tables.windows(2) {
                    assert!(pair[0].largest < pair[1].smallest, "run {} at level {i} not disjoint and sorted", run.id);
                }
                for table in &run.tables {
                    let entries = &self.contents[&table.id];
                    assert_eq!(entries.keys().next().map(|k| encode(*k)), Some(table.smallest.clone()));
                    assert_eq!(entries.keys().next_back().map(|k| encode(*k)), Some(table.largest.clone()));
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
            let read = seen.get(&key).and_then(|v| v.first()).filter(|v| !v.tombstone);
            let expected = self.latest.get(&key).filter(|v| !v.tombstone);
            assert_eq!(read, expected, "key {key} reads wrong");
        }
    }

    /// Plans and applies tasks until the planner finds nothing to do.
    fn quiesce(&mut self, style: &CompactionStyle) {
        for _ in 0..MAX_STEPS {
            let Some(task) = plan(&self.levels, style, &BTreeSet::new(), TARGET_TABLE_BYTES) else { return };
            self.apply(&task);
            self.check(style);
        }
        panic!("the planner did not converge in {MAX_STEPS} steps");
    }

    /// Plans once with a random set of tables marked busy, and applies the
    /// task if it leaves them alone (it must).
    fn plan_around_busy(&mut self, style: &CompactionStyle, rng: &mut Rng) {
        let busy: BTreeSet<u64> = self.contents.keys().copied().filter(|_| rng.one_in(4)).collect();
        if let Some(task) = plan(&self.levels, style, &busy, TARGET_TABLE_BYTES) {
            let touched = task.inputs.iter().flat_map(|(_, ids)| ids);
            assert!(touched.clone().all(|id| !busy.contains(id)), "task {task:?} touches busy tables {busy:?}");
            self.apply(&task);
            self.check(style);
        }
    }

    /// Compacts `range` to the last level as the runner does, checking that
    /// it takes one task and leaves the range in one run of the last level.
    fn compact_range(&mut self, style: &CompactionStyle, range: Option<(u32, u32)>) {
        let bytes = range.map(|(lo, hi)| (encode(lo), encode(hi)));
        let borrowed = bytes.as_ref().map(|(lo, hi)| (&lo[..], &hi[..]));
        let mut steps = 0;
        loop {
            let tasks = plan_full(&self.levels, style, TARGET_TABLE_BYTES, borrowed);
            let Some(task) = tasks.first() else { break };
            assert_eq!(tasks.len(), 1);
            assert!(task.bottommost, "a closed range has nothing outside it: {task:?}");
            steps += 1;
            assert!(steps <= 1, "plan_full still has work after its task: {task:?}");
            self.apply(task);
            self.check(style);
        }
        let last = last_level(&self.levels);
        let mut holders = BTreeSet::new();
        for (i, level) in self.levels.iter().enumerate() {
            for run in &level.runs {
                let touched = run.tables.iter().any(|t| {
                    borrowed.is_none_or(|(lo, hi)| KeyRange::of(t).overlaps(&KeyRange { lo, hi }))
                });
                if touched {
                    holders.insert((i, run.id));
                }
            }
        }
        assert!(holders.len() <= 1, "range {range:?} left in runs {holders:?}");
        assert!(holders.iter().all(|(level, _)| *level == last), "range {range:?} not in the last level {last}");
    }
}

/// Runs `flushes` random flushes under `style`, quiescing after each, with
/// occasional busy-table plans and range compactions; returns the model.
fn simulate(style: &CompactionStyle, seed: u64, flushes: usize) -> Model {
    let mut rng = Rng(seed);
    let mut model = Model::default();
    for _ in 0..flushes {
        model.flush(&mut rng);
        model.check(style);
        if rng.one_in(3) {
            model.plan_around_busy(style, &mut rng);
        }
        model.quiesce(style);
        check_quiet(&model, style);
        if rng.one_in(40) {
            let range = if rng.one_in(3) {
                None
            } else {
                let lo = rng.below(u64::from(KEY_SPACE)) as u32;
                Some((lo, lo + rng.below(300) as u32))
            };
            model.compact_range(style, range);
            model.quiesce(style);
        }
    }
    model
}

/// What must hold once the planner has nothing left to do.
fn check_quiet(model: &Model, style: &CompactionStyle) {
    match *style {
        CompactionStyle::Leveled { l0_trigger, size_ratio, l1_bytes } => {
            let leveled = Leveled::new(l0_trigger, size_ratio, l1_bytes);
            assert!(model.levels.first().is_none_or(|l0| l0.runs.len() < l0_trigger), "L0 unbounded");
            for (i, level) in model.levels.iter().enumerate().skip(1) {
                assert!(level.size() < leveled.target(i), "level {i} over target after quiescing");
            }
        }
        CompactionStyle::Tiered { runs_per_level } => {
            for (i, level) in model.levels.iter().enumerate() {
                assert!(level.runs.len() < runs_per_level, "level {i} has {} runs", level.runs.len());
            }
        }
    }
}

const LEVELED: CompactionStyle = CompactionStyle::Leveled { l0_trigger: 4, size_ratio: 4, l1_bytes: 4_000 };
const TIERED: CompactionStyle = CompactionStyle::Tiered { runs_per_level: 3 };

#[test]
fn leveled_keeps_every_invariant_on_random_histories() {
    for seed in 0..12 {
        let model = simulate(&LEVELED, seed, 250);
        // The data outgrew L1: the simulation exercised deeper levels.
        assert!(model.levels.len() >= 3, "seed {seed}: only {} levels", model.levels.len());
    }
}

#[test]
fn tiered_keeps_every_invariant_on_random_histories() {
    for seed in 100..112 {
        let model = simulate(&TIERED, seed, 250);
        assert!(model.levels.len() >= 4, "seed {seed}: only {} levels", model.levels.len());
    }
}

#[test]
fn full_compaction_leaves_one_run_from_any_state() {
    for (seed, style) in (200..216).zip([LEVELED, TIERED].iter().cycle()) {
        let mut rng = Rng(seed);
        let mut model = Model::default();
        // Flushes only, no compaction: as messy as a shape gets.
        for _ in 0..30 {
            model.flush(&mut rng);
        }
        let lo = rng.below(u64::from(KEY_SPACE)) as u32;
        model.compact_range(style, Some((lo, lo + 50)));
        model.compact_range(style, None);
        let last = last_level(&model.levels);
        assert_eq!(model.levels.iter().filter(|l| !l.runs.is_empty()).count(), 1);
        assert_eq!(model.levels[last].runs.len(), 1);
    }
}

#[test]
fn switching_from_tiered_to_leveled_repairs_the_levels() {
    let mut repaired = 0;
    for seed in 300..312 {
        let mut model = simulate(&TIERED, seed, 100);
        if model.levels.iter().skip(1).all(|l| l.runs.len() <= 1) {
            continue;
        }
        repaired += 1;
        let mut steps = 0;
        while let Some(task) = plan(&model.levels, &LEVELED, &BTreeSet::new(), TARGET_TABLE_BYTES) {
            model.apply(&task);
            // Several runs per level are expected until the repair is done.
            model.check(&TIERED);
            steps += 1;
            assert!(steps < MAX_STEPS, "seed {seed}: no convergence");
        }
        check_quiet(&model, &LEVELED);
        model.check(&LEVELED);
    }
    assert!(repaired >= 3, "only {repaired} histories had levels to repair");
}
