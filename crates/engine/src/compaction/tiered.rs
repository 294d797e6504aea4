//! Tiered compaction: each level collects sorted runs, and the shallowest
//! level holding `runs_per_level` of them merges them all into one new run
//! of the next level.
//!
//! Ordering: every table of the level is an input, so nothing is left at
//! that level; the output becomes the next level's newest run, above the
//! runs that earlier merges of the same level put there, which are older.

use super::shape::{Busy, task};
use super::{CompactionTask, LevelShape, OutputRun};

/// The next compaction, avoiding `busy` levels.
///
/// `runs_per_level` below 2 is taken as 2: with 1, a lone run would be
/// pushed down one level after another forever.
pub(crate) fn plan(
    levels: &[LevelShape],
    runs_per_level: usize,
    busy: &Busy,
    target_table_bytes: u64,
) -> Option<CompactionTask> {
    let trigger = runs_per_level.max(2);
    levels.iter().enumerate().find_map(|(i, level)| {
        if level.runs.len() < trigger || busy.any(level.tables()) || busy.level(i + 1) {
            return None;
        }
        let picks: Vec<_> = level.tables().map(|t| (i, t)).collect();
        task(levels, &picks, i + 1, OutputRun::New, target_table_bytes)
    })
}

#[cfg(test)]
mod tests {
    use super::super::shape::testkit::*;
    use super::*;

    fn l(ids: &[u64]) -> LevelShape {
        level(
            ids.iter()
                .map(|&id| run(id, vec![t(id, 1, "a", "c")]))
                .collect(),
        )
    }

    #[test]
    fn nothing_to_do_below_the_trigger() {
        assert_eq!(plan(&[], 3, &Busy::none(), 1), None);
        assert_eq!(plan(&[l(&[1, 2]), l(&[3, 4])], 3, &Busy::none(), 1), None);
    }

    #[test]
    fn shallowest_full_level_merges_into_a_new_run_below() {
        let levels = [l(&[9, 8]), l(&[7, 6, 5]), l(&[4, 3, 2])];
        let task = plan(&levels, 3, &Busy::none(), 77).unwrap();
        assert_eq!(task.inputs, vec![(1, vec![7, 6, 5])]);
        assert_eq!((task.output_level, task.output_run), (2, OutputRun::New));
        assert!(
            !task.bottommost,
            "level 2 holds older runs over the same keys"
        );
        assert_eq!(task.target_table_bytes, 77);
    }

    #[test]
    fn merging_the_last_level_may_drop_tombstones() {
        let task = plan(&[l(&[2, 1])], 2, &Busy::none(), 1).unwrap();
        assert_eq!((task.inputs, task.output_level), (vec![(0, vec![2, 1])], 1));
        assert!(task.bottommost);
    }

    #[test]
    fn busy_levels_are_skipped() {
        let levels = [l(&[9, 8]), l(&[7, 6])];
        let task = plan(&levels, 2, &Busy::tables([8]), 1).unwrap();
        assert_eq!(task.inputs, vec![(1, vec![7, 6])]);
        assert_eq!(plan(&levels, 2, &Busy::tables([8, 6]), 1), None);
    }

    #[test]
    fn a_trigger_below_two_acts_as_two() {
        assert_eq!(plan(&[l(&[1])], 1, &Busy::none(), 1), None);
        assert_eq!(plan(&[l(&[1])], 0, &Busy::none(), 1), None);
    }
}
