//! The compaction planner: which tables to merge next, decided as a pure
//! function of the version's shape (no I/O, no clock, no hidden state), so
//! every decision can be simulated and tested without files.
//!
//! # The shape
//!
//! Levels hold sorted runs, newest first; a run's tables are disjoint and
//! sorted by key. Each flush adds a new run to level 0. A [`CompactionTask`]
//! names input tables; the runner (`db/compact.rs`) merges them (the newest
//! version of a key wins), removes them, and writes the result as new
//! tables of `output_level`, either as that level's newest run
//! ([`OutputRun::New`]) or inserted by key into an existing run
//! ([`OutputRun::Existing`]). In the latter case the output's key range
//! never overlaps a table of that run that is not an input.
//!
//! # The ordering rule
//!
//! A point read walks L0's runs newest first, then each deeper level's runs
//! newest first, and stops at the first version of the key it finds. So
//! position must agree with age: where two tables share a user key, the
//! one above holds the newer version. Every task keeps this. For every user
//! key in the output's range, no version of it is left in a table that will
//! sit above the output while being older than the inputs' version, nor
//! below it while being newer: **newer data never moves below older data**.
//! Each rule's file says why it holds there; the simulator checks it on
//! random histories by tracking, for every key, which flush each version
//! came from.
//!
//! # Tombstones
//!
//! `bottommost` is set only when no table outside the inputs, at the output
//! level or deeper, overlaps the inputs' key range: no older version can
//! then be left for a dropped tombstone to uncover (tables above are newer
//! by the ordering rule).
//!
//! # Files
//!
//! `shape.rs` (ranges, sizes, building tasks), `leveled.rs` and `tiered.rs`
//! (the two styles), `full.rs` (manual compaction of a range), `split.rs`
//! (key-range pieces of one large compaction), and `simulator/` (test
//! only: random flushes, tasks applied to a model, several at once).

mod full;
mod leveled;
mod shape;
#[cfg(test)]
mod simulator;
mod split;
mod tiered;

use shape::Busy;

use crate::options::CompactionStyle;

pub(crate) use split::{piece_count, split_points};

/// A table as the planner sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TableShape {
    /// File number.
    pub id: u64,
    /// File size in bytes.
    pub size: u64,
    /// Smallest user key.
    pub smallest: Vec<u8>,
    /// Largest user key.
    pub largest: Vec<u8>,
}

/// A sorted run: disjoint tables in key order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RunShape {
    /// Run id.
    pub id: u64,
    /// Tables, sorted by key, disjoint.
    pub tables: Vec<TableShape>,
}

/// A level: runs newest first.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct LevelShape {
    /// Newest first: a key's newer versions live in earlier runs.
    pub runs: Vec<RunShape>,
}

/// Which run the output joins.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum OutputRun {
    /// A new run, newest of its level.
    New,
    /// The existing run with this id; the output's key range overlaps none
    /// of its tables but the inputs.
    Existing(u64),
}

/// One compaction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CompactionTask {
    /// (level, table ids) of every input: one entry per level, levels
    /// ascending, ids in the level's order (newest run first, then by key).
    pub inputs: Vec<(usize, Vec<u64>)>,
    /// Where the output goes.
    pub output_level: usize,
    /// Which run of it.
    pub output_run: OutputRun,
    /// Nothing older than the output lies below it: tombstones may go.
    pub bottommost: bool,
    /// Cut output tables near this size.
    pub target_table_bytes: u64,
}

/// The next compaction the style calls for, avoiding what compactions
/// under way hold (`busy`); `None` when nothing is due.
pub(crate) fn plan(
    levels: &[LevelShape],
    style: &CompactionStyle,
    busy: &Busy,
    target_table_bytes: u64,
) -> Option<CompactionTask> {
    match *style {
        CompactionStyle::Leveled {
            l0_trigger,
            size_ratio,
            l1_bytes,
        } => leveled::Leveled::new(l0_trigger, size_ratio, l1_bytes).plan(
            levels,
            busy,
            target_table_bytes,
        ),
        CompactionStyle::Tiered { runs_per_level } => {
            tiered::plan(levels, runs_per_level, busy, target_table_bytes)
        }
    }
}

/// The next compaction that can run beside the `running` ones, if any.
///
/// Tasks run side by side only on disjoint levels (from a task's first
/// input level to its output level). Then they cannot invalidate each
/// other:
/// - a task's output lands only in its own levels, so no other task's
///   inputs or output run change under it;
/// - data only moves down, within each task's levels, so newer data stays
///   above older data (the ordering rule);
/// - a task is `bottommost` only when no table below it holds its keys,
///   and a task below it only moves keys it already holds further down.
///
/// Two tasks sharing a level could both start a new run of it, or one
/// could empty the run the other writes into: the simulator finds both.
/// The planner is told every running task's levels and their tables are
/// busy, so it looks elsewhere: at the next level by score, not only at
/// tables it could read. It once skipped only busy tables, picked a table
/// to push into a gap of a busy level, and, that task having to wait,
/// planned nothing, so that L0 piled up behind one long deep merge.
pub(crate) fn plan_beside(
    levels: &[LevelShape],
    style: &CompactionStyle,
    running: &[CompactionTask],
    target_table_bytes: u64,
) -> Option<CompactionTask> {
    let mut busy = Busy::none();
    for task in running {
        busy.hold(levels, task.first_level(), task.output_level);
    }
    let task = plan(levels, style, &busy, target_table_bytes)?;
    let shares_a_level = running.iter().any(|other| {
        task.first_level() <= other.output_level && other.first_level() <= task.output_level
    });
    debug_assert!(!shares_a_level, "{task:?} shares a level with {running:?}");
    (!shares_a_level).then_some(task)
}

impl CompactionTask {
    /// The shallowest level the task reads.
    fn first_level(&self) -> usize {
        self.inputs
            .first()
            .map_or(self.output_level, |(level, _)| *level)
    }
}

/// Compactions that move every table overlapping `range` (user keys
/// `from..=to`; all keys when `None`) into one run of the last level (the
/// deepest non-empty one, at least level 1). Run the first, re-plan on the
/// resulting version, and stop when the list is empty: at most one task is
/// ever returned, and after it the list is empty. The same plan serves both
/// styles, so `style` is not consulted.
pub(crate) fn plan_full(
    levels: &[LevelShape],
    style: &CompactionStyle,
    target_table_bytes: u64,
    range: Option<(&[u8], &[u8])>,
) -> Vec<CompactionTask> {
    let _ = style;
    full::plan(levels, target_table_bytes, range)
}

#[cfg(test)]
mod tests {
    use super::shape::testkit::*;
    use super::*;

    const STYLE: CompactionStyle = CompactionStyle::Leveled {
        l0_trigger: 2,
        size_ratio: 10,
        l1_bytes: 100,
    };

    /// L1 over its target with one table, L2 over its target with one
    /// table elsewhere in the key space.
    fn two_levels_over_target() -> Vec<LevelShape> {
        vec![
            LevelShape::default(),
            one_run(vec![t(1, 500, "a", "b")]),
            one_run(vec![t(2, 5_000, "x", "y")]),
        ]
    }

    /// The task pushing L2's table (id 2) into L3.
    fn l2_to_l3() -> CompactionTask {
        CompactionTask {
            inputs: vec![(2, vec![2])],
            output_level: 3,
            output_run: OutputRun::New,
            bottommost: true,
            target_table_bytes: 64,
        }
    }

    /// L0 at its trigger (tables 5 and 4), `l1` alone in L1, and L2's
    /// table 2 far from both.
    fn l0_due_beside(l1: TableShape) -> Vec<LevelShape> {
        vec![
            level(vec![
                run(5, vec![t(5, 1, "c", "d")]),
                run(4, vec![t(4, 1, "c", "e")]),
            ]),
            one_run(vec![l1]),
            one_run(vec![t(2, 5_000, "x", "y")]),
        ]
    }

    #[test]
    fn a_task_beside_a_running_one_uses_other_levels() {
        let levels = two_levels_over_target();
        let first = plan_beside(&levels, &STYLE, &[], 64).unwrap();
        assert_eq!(first.inputs, vec![(1, vec![1])]);
        // L1 -> L2 runs: L2 -> L3 would write into L2 beside it.
        assert_eq!(plan_beside(&levels, &STYLE, &[first], 64), None);
        let deeper = l2_to_l3();
        // L2 -> L3 runs: pushing L1's table into L2 would write into a
        // level it is emptying (L2's only run could vanish under it), even
        // though the table overlaps nothing busy.
        assert_eq!(
            plan_beside(&levels, &STYLE, std::slice::from_ref(&deeper), 64),
            None
        );
        // With L2 -> L3 done elsewhere (L3 and deeper busy), L0 -> L1 work
        // is free to run.
        let levels = l0_due_beside(t(1, 50, "a", "b"));
        let beside = plan_beside(&levels, &STYLE, &[deeper], 64).unwrap();
        assert_eq!(beside.inputs, vec![(0, vec![5, 4])]);
        assert_eq!(beside.output_level, 1);
    }

    #[test]
    fn a_push_into_a_gap_of_a_busy_level_yields_to_the_next_level() {
        // L2 -> L3 runs. L1 is further over its target than L0 is over its
        // trigger, and its table overlaps nothing in L2: pushing it would
        // read no busy table but write into L2, so it must wait, and L0,
        // next by score, must not wait with it.
        let levels = l0_due_beside(t(1, 5_000, "m", "n"));
        let deeper = l2_to_l3();
        let alone = plan_beside(&levels, &STYLE, &[], 64).unwrap();
        assert_eq!(alone.inputs, vec![(1, vec![1])], "L1 scores highest");
        let beside = plan_beside(&levels, &STYLE, &[deeper], 64).unwrap();
        assert_eq!(beside.inputs, vec![(0, vec![5, 4])]);
        assert_eq!(beside.output_level, 1);
    }
}
