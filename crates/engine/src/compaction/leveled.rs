//! Leveled compaction: level 0 collects one run per flush, every deeper
//! level is a single sorted run `size_ratio` times larger than the one
//! above it.
//!
//! Rules:
//!
//! 1. **Repair**, first. A level >= 1 holding several runs (a database that
//!    was tiered before) is merged into one new run of the same level.
//!    Every table of the level is an input, so nothing of that level is
//!    left above or below the output, which takes the level's place.
//!
//! Then the level with the highest score, if that is at least 1, as in
//! LevelDB and RocksDB: L0 scores its runs over `l0_trigger`, a level
//! `i >= 1` its size over its target, where `target(1) = l1_bytes` and
//! `target(i + 1) = target(i) * size_ratio`.
//!
//! 2. **Level 0.** Every L0 table and the L1 tables overlapping their
//!    spanning range go into L1's run. Nothing is left in L0 to sit above
//!    the output being older; the L1 tables left out are disjoint from that
//!    range and, as the inputs from L1 are contiguous in the run, from the
//!    output's whole range.
//! 3. **Size.** Level `i >= 1` pushes one table, plus the tables of level
//!    `i + 1` overlapping it, into level `i + 1`'s run (a new level when `i`
//!    is the last). Level `i`'s other tables are disjoint from the picked
//!    one, so any key they share with the output came from level `i + 1`,
//!    which is older.
//!
//! Scoring L0 beside the others matters under a steady load. Were L0
//! always first, it would be over its trigger again by the time each
//! L0 -> L1 merge ends, L1 would never be pushed down, and every merge
//! would rewrite all of an ever larger L1: loading 10M keys grew L1 to four
//! times its target and wrote 7.5 bytes of tables per byte put.
//!
//! Rule 3 picks the table whose overlap with level `i + 1` is smallest
//! relative to its own size (RocksDB's `kMinOverlappingRatio`, its default):
//! it rewrites the fewest bytes below per byte moved down, so write
//! amplification stays low, and it needs no state beyond the shape (a
//! round-robin cursor would have to be stored in the version). Ties go to
//! the smallest key, so the choice is deterministic.

use std::cmp::Ordering;

use super::shape::{Busy, KeyRange, overlapping, single_run_of, task};
use super::{CompactionTask, LevelShape, OutputRun, TableShape};

/// The leveled style's parameters, clamped so that planning terminates
/// even if the builder's validation is bypassed.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Leveled {
    /// L0 runs that trigger an L0 -> L1 compaction (at least 1: an empty
    /// L0 must not trigger).
    pub l0_trigger: usize,
    /// Each level's target over the one above (at least 2: with 1 or 0,
    /// pushing data down could never bring a deeper level under target).
    pub size_ratio: u64,
    /// L1's target size (at least 1 byte, so scores are defined).
    pub l1_bytes: u64,
}

impl Leveled {
    /// The parameters, clamped to workable values.
    pub(crate) fn new(l0_trigger: usize, size_ratio: u64, l1_bytes: u64) -> Self {
        Self {
            l0_trigger: l0_trigger.max(1),
            size_ratio: size_ratio.max(2),
            l1_bytes: l1_bytes.max(1),
        }
    }

    /// The target size of `level >= 1`, saturating at `u64::MAX`.
    pub(crate) fn target(&self, level: usize) -> u64 {
        let mut target = self.l1_bytes;
        for _ in 1..level {
            target = target.saturating_mul(self.size_ratio);
        }
        target
    }

    /// The next compaction, avoiding `busy` tables.
    pub(crate) fn plan(
        &self,
        levels: &[LevelShape],
        busy: &Busy,
        target_table_bytes: u64,
    ) -> Option<CompactionTask> {
        repair(levels, busy, target_table_bytes).or_else(|| {
            // A level whose tables are busy, or whose output level (the
            // next one down, L1 for L0) is, yields to the next score.
            self.due(levels).into_iter().find_map(|level| match level {
                _ if busy.level(level + 1) => None,
                0 => self.level0(levels, busy, target_table_bytes),
                _ => push_down(levels, level, busy, target_table_bytes),
            })
        })
    }

    /// The levels at or over their trigger, highest score first, shallower
    /// first on ties.
    fn due(&self, levels: &[LevelShape]) -> Vec<usize> {
        let mut due: Vec<(usize, Score)> = levels
            .iter()
            .enumerate()
            .map(|(i, level)| match i {
                0 => (
                    i,
                    Score::new(level.runs.len() as u64, self.l0_trigger as u64),
                ),
                _ => (i, Score::new(level.size(), self.target(i))),
            })
            .filter(|(_, score)| score.is_due())
            .collect();
        // The sort is stable: ties keep the shallower level first.
        due.sort_by(|(_, a), (_, b)| b.cmp(a));
        due.into_iter().map(|(i, _)| i).collect()
    }

    /// Rule 2: all of L0 and the L1 tables overlapping it, into L1.
    fn level0(
        &self,
        levels: &[LevelShape],
        busy: &Busy,
        target_table_bytes: u64,
    ) -> Option<CompactionTask> {
        let l0 = levels.first()?;
        let range = KeyRange::spanning(l0.tables())?;
        let below = overlapping(levels, 1, range);
        if busy.any(l0.tables().chain(below.iter().copied())) {
            return None;
        }
        let output_run = single_run_of(levels, 1)?;
        let picks: Vec<_> = l0
            .tables()
            .map(|t| (0, t))
            .chain(below.into_iter().map(|t| (1, t)))
            .collect();
        task(levels, &picks, 1, output_run, target_table_bytes)
    }
}

/// How far a level is over its trigger, `amount / trigger`, compared
/// exactly (as products): 3/6 equals 1/2.
#[derive(Debug, Clone, Copy)]
struct Score {
    amount: u64,
    trigger: u64,
}

impl Score {
    /// A trigger of 0 counts as 1, so the score is always defined.
    fn new(amount: u64, trigger: u64) -> Self {
        Self {
            amount,
            trigger: trigger.max(1),
        }
    }

    fn is_due(self) -> bool {
        self.amount >= self.trigger
    }
}

impl Ord for Score {
    fn cmp(&self, other: &Self) -> Ordering {
        (u128::from(self.amount) * u128::from(other.trigger))
            .cmp(&(u128::from(other.amount) * u128::from(self.trigger)))
    }
}

impl PartialOrd for Score {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for Score {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Score {}

/// Rule 1: the first level >= 1 with several runs, merged into one.
fn repair(levels: &[LevelShape], busy: &Busy, target_table_bytes: u64) -> Option<CompactionTask> {
    levels.iter().enumerate().skip(1).find_map(|(i, level)| {
        if level.runs.len() < 2 || busy.any(level.tables()) {
            return None;
        }
        let picks: Vec<_> = level.tables().map(|t| (i, t)).collect();
        task(levels, &picks, i, OutputRun::New, target_table_bytes)
    })
}

/// One table of `level` (the one with the least overlap per byte) and the
/// tables of `level + 1` it overlaps, into `level + 1`.
fn push_down(
    levels: &[LevelShape],
    level: usize,
    busy: &Busy,
    target_table_bytes: u64,
) -> Option<CompactionTask> {
    // One table of a level with several runs may overlap older tables of
    // the same level, which would then sit above its data: repair first.
    if levels.get(level)?.runs.len() != 1 {
        return None;
    }
    let output_run = single_run_of(levels, level + 1)?;
    // At most one run below (`single_run_of`), searched once per table.
    let below_run = levels.get(level + 1).and_then(|below| below.runs.first());
    let below_of = |table| below_run.map_or(&[][..], |run| run.overlapping(KeyRange::of(table)));
    let mut best: Option<(&TableShape, &[TableShape], u64)> = None;
    for table in levels.get(level)?.tables() {
        let below = below_of(table);
        if busy.holds(table.id) || busy.any(below) {
            continue;
        }
        let overlap = below.iter().fold(0u64, |sum, t| sum.saturating_add(t.size));
        let better = match &best {
            None => true,
            Some((chosen, _, chosen_overlap)) => {
                less_overlap_per_byte((overlap, table.size), (*chosen_overlap, chosen.size))
                    == Ordering::Less
            }
        };
        if better {
            best = Some((table, below, overlap));
        }
    }
    let (table, below, _) = best?;
    let picks: Vec<_> = std::iter::once((level, table))
        .chain(below.iter().map(|t| (level + 1, t)))
        .collect();
    task(levels, &picks, level + 1, output_run, target_table_bytes)
}

/// Compares `overlap / size` of two candidates exactly; a table of size 0
/// counts as 1 byte, so the ratio is always defined.
fn less_overlap_per_byte(
    (overlap_a, size_a): (u64, u64),
    (overlap_b, size_b): (u64, u64),
) -> Ordering {
    let a = u128::from(overlap_a) * u128::from(size_b.max(1));
    let b = u128::from(overlap_b) * u128::from(size_a.max(1));
    a.cmp(&b)
}

#[cfg(test)]
mod tests {
    use super::super::shape::testkit::*;
    use super::*;

    const STYLE: Leveled = Leveled {
        l0_trigger: 2,
        size_ratio: 10,
        l1_bytes: 100,
    };

    fn plan(levels: &[LevelShape]) -> Option<CompactionTask> {
        STYLE.plan(levels, &Busy::none(), 64)
    }

    #[test]
    fn targets_grow_by_the_ratio_and_saturate() {
        assert_eq!(STYLE.target(1), 100);
        assert_eq!(STYLE.target(3), 10_000);
        assert_eq!(STYLE.target(40), u64::MAX);
    }

    #[test]
    fn parameters_are_clamped_to_workable_values() {
        let style = Leveled::new(0, 1, 0);
        assert_eq!(
            (style.l0_trigger, style.size_ratio, style.l1_bytes),
            (1, 2, 1)
        );
    }

    #[test]
    fn nothing_to_do_below_every_trigger() {
        assert_eq!(plan(&[]), None);
        let levels = vec![
            one_run(vec![t(1, 10, "a", "z")]),
            one_run(vec![t(2, 99, "a", "z")]),
        ];
        assert_eq!(plan(&levels), None);
    }

    #[test]
    fn level0_takes_all_of_l0_and_the_overlapping_l1_tables() {
        let levels = vec![
            level(vec![
                run(5, vec![t(5, 1, "d", "f")]),
                run(4, vec![t(4, 1, "c", "e")]),
            ]),
            one_run(vec![
                t(1, 1, "a", "b"),
                t(2, 1, "b", "c"),
                t(3, 1, "g", "h"),
            ]),
            one_run(vec![t(9, 1, "a", "z")]),
        ];
        let task = plan(&levels).unwrap();
        assert_eq!(task.inputs, vec![(0, vec![5, 4]), (1, vec![2])]);
        assert_eq!(
            (task.output_level, task.output_run),
            (1, OutputRun::Existing(1))
        );
        assert!(!task.bottommost, "L2 holds older versions of b..=f");
        assert_eq!(task.target_table_bytes, 64);
    }

    #[test]
    fn level0_starts_l1_when_it_is_empty_and_drops_tombstones_there() {
        let levels = vec![level(vec![
            run(2, vec![t(2, 1, "a", "c")]),
            run(1, vec![t(1, 1, "b", "d")]),
        ])];
        let task = plan(&levels).unwrap();
        assert_eq!(task.inputs, vec![(0, vec![2, 1])]);
        assert_eq!((task.output_level, task.output_run), (1, OutputRun::New));
        assert!(task.bottommost);
    }

    #[test]
    fn level0_waits_for_busy_tables_and_yields_to_size_rule() {
        let levels = vec![
            level(vec![
                run(2, vec![t(2, 1, "a", "c")]),
                run(1, vec![t(1, 1, "b", "d")]),
            ]),
            one_run(vec![t(3, 1, "a", "b"), t(4, 500, "x", "y")]),
        ];
        let busy = Busy::tables([3]);
        let task = STYLE.plan(&levels, &busy, 64).unwrap();
        assert_eq!(task.inputs, vec![(1, vec![4])]);
        assert_eq!((task.output_level, task.output_run), (2, OutputRun::New));
        assert_eq!(STYLE.plan(&levels, &Busy::tables([3, 4]), 64), None);
    }

    #[test]
    fn a_level_further_over_its_target_goes_before_level0() {
        // L0 at its trigger (score 1), L1 at three times its target: L1 is
        // pushed down first, or every L0 merge would rewrite a growing L1.
        let l0 = level(vec![
            run(5, vec![t(5, 1, "a", "z")]),
            run(4, vec![t(4, 1, "a", "z")]),
        ]);
        let l1 = one_run(vec![t(1, 150, "a", "m"), t(2, 150, "n", "z")]);
        let task = plan(&[l0.clone(), l1]).unwrap();
        assert_eq!((task.inputs, task.output_level), (vec![(1, vec![1])], 2));
        // L1 at three times its target and L0 at three times its trigger:
        // a tie, which goes to the shallower level, L0.
        let l0 = level(vec![
            run(7, vec![t(7, 1, "a", "z")]),
            run(6, vec![t(6, 1, "a", "z")]),
            run(5, vec![t(5, 1, "a", "z")]),
            run(4, vec![t(4, 1, "a", "z")]),
            run(3, vec![t(3, 1, "a", "z")]),
            run(8, vec![t(8, 1, "a", "z")]),
        ]);
        let l1 = one_run(vec![t(1, 150, "a", "m"), t(2, 150, "n", "z")]);
        let task = plan(&[l0, l1]).unwrap();
        assert_eq!(task.output_level, 1);
        assert_eq!(task.inputs[0].0, 0);
    }

    #[test]
    fn scores_compare_exactly() {
        assert_eq!(Score::new(3, 6), Score::new(1, 2));
        assert!(Score::new(u64::MAX, 1) > Score::new(u64::MAX - 1, 1));
        assert!(Score::new(1, 0).is_due());
        assert!(!Score::new(99, 100).is_due());
    }

    #[test]
    fn size_rule_picks_the_table_with_least_overlap_per_byte() {
        // L1 is at 120/100; L2 holds 300 bytes.
        let levels = vec![
            LevelShape::default(),
            one_run(vec![
                t(1, 40, "a", "c"),
                t(2, 40, "d", "f"),
                t(3, 40, "g", "i"),
            ]),
            one_run(vec![
                t(10, 100, "a", "b"),
                t(11, 10, "e", "e"),
                t(12, 190, "h", "z"),
            ]),
        ];
        let task = plan(&levels).unwrap();
        assert_eq!(task.inputs, vec![(1, vec![2]), (2, vec![11])]);
        assert_eq!(
            (task.output_level, task.output_run),
            (2, OutputRun::Existing(10))
        );
        assert!(task.bottommost);
    }

    #[test]
    fn size_rule_prefers_the_highest_score_then_the_shallower_level() {
        let l1 = one_run(vec![t(1, 150, "a", "b")]);
        let l2 = one_run(vec![t(2, 2000, "c", "d")]);
        // L1 at 1.5, L2 at 2.0: L2 goes first, into a new L3.
        let task = plan(&[LevelShape::default(), l1.clone(), l2]).unwrap();
        assert_eq!((task.inputs, task.output_level), (vec![(2, vec![2])], 3));
        // Equal scores: L1 first.
        let l2 = one_run(vec![t(2, 1500, "c", "d")]);
        let task = plan(&[LevelShape::default(), l1, l2]).unwrap();
        assert_eq!(task.inputs, vec![(1, vec![1])]);
    }

    #[test]
    fn ties_go_to_the_smallest_key() {
        let levels = vec![
            LevelShape::default(),
            one_run(vec![t(1, 60, "a", "b"), t(2, 60, "c", "d")]),
        ];
        assert_eq!(plan(&levels).unwrap().inputs, vec![(1, vec![1])]);
    }

    #[test]
    fn a_level_with_several_runs_is_never_pushed_down_piecemeal() {
        // Repair of L1 is blocked by a busy table: L1's size must wait.
        let levels = vec![
            LevelShape::default(),
            level(vec![
                run(2, vec![t(2, 500, "a", "c")]),
                run(1, vec![t(1, 500, "b", "d")]),
            ]),
        ];
        assert_eq!(STYLE.plan(&levels, &Busy::tables([1]), 64), None);
    }

    #[test]
    fn repair_merges_the_runs_of_a_level_first() {
        let levels = vec![
            level(vec![
                run(8, vec![t(8, 1, "a", "b")]),
                run(7, vec![t(7, 1, "a", "b")]),
            ]),
            one_run(vec![t(1, 1, "a", "b")]),
            level(vec![
                run(3, vec![t(3, 1, "c", "d")]),
                run(2, vec![t(2, 1, "a", "e"), t(4, 1, "f", "g")]),
            ]),
        ];
        let task = plan(&levels).unwrap();
        assert_eq!(task.inputs, vec![(2, vec![3, 2, 4])]);
        assert_eq!((task.output_level, task.output_run), (2, OutputRun::New));
        assert!(task.bottommost);
    }
}
