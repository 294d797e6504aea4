//! Manual compaction of a key range: leave every table overlapping the
//! range in one run of the last level (the deepest non-empty level, and at
//! least level 1).
//!
//! One task does it: every table, at every level, overlapping the range
//! **closed under overlap** (widen the range to the span of the tables it
//! touches and repeat until no other table overlaps it), written into a run
//! of the last level.
//!
//! Why closed: taking only the tables that overlap the requested range can
//! move newer data below older data. Say L0 holds `a..=z` (newest), L2
//! holds `b..=c` and the range is `m..=n`. Moving the L0 table alone into
//! the last level L3 would leave L2's older `b` above its newer `b`. With
//! the closure, no table outside the inputs shares a key with the output,
//! so wherever the output lands it is neither above older nor below newer
//! data; it can join any run of the last level without overlapping the
//! tables already there, and the merge may drop tombstones.
//!
//! The runner re-plans after each task until the list is empty. After one
//! task every table overlapping the requested range is an output, in one
//! run of the last level, which is exactly the condition for an empty
//! list, so the loop ends after one task.

use super::shape::{KeyRange, task};
use super::{CompactionTask, LevelShape, OutputRun, TableShape};

/// The compactions that leave every table overlapping `range` (user keys
/// `from..=to`; `None` for all keys) in one run of the last level: empty
/// when that already holds, otherwise one task.
pub(crate) fn plan(
    levels: &[LevelShape],
    target_table_bytes: u64,
    range: Option<(&[u8], &[u8])>,
) -> Vec<CompactionTask> {
    let requested = match range {
        Some((lo, hi)) if lo > hi => return Vec::new(),
        Some((lo, hi)) => Some(KeyRange { lo, hi }),
        None => None,
    };
    let last = last_level(levels);
    if is_done(levels, requested, last) {
        return Vec::new();
    }
    let inputs = closure(levels, requested);
    // A leveled last level has one run; a tiered one may have several, and
    // the oldest is the natural home for its oldest data.
    let output_run = match levels.get(last).and_then(|level| level.runs.last()) {
        Some(run) => OutputRun::Existing(run.id),
        None => OutputRun::New,
    };
    task(levels, &inputs, last, output_run, target_table_bytes)
        .into_iter()
        .collect()
}

/// The deepest non-empty level, and at least 1 (level 0 is only for flushes).
pub(crate) fn last_level(levels: &[LevelShape]) -> usize {
    levels
        .iter()
        .rposition(|level| level.tables().next().is_some())
        .unwrap_or(0)
        .max(1)
}

/// Whether every table overlapping `range` lies in one run of `last`.
fn is_done(levels: &[LevelShape], range: Option<KeyRange<'_>>, last: usize) -> bool {
    let mut holders = levels.iter().enumerate().flat_map(|(i, level)| {
        level.runs.iter().filter_map(move |run| {
            let touched = run
                .tables
                .iter()
                .any(|t| range.is_none_or(|r| KeyRange::of(t).overlaps(&r)));
            touched.then_some((i, run.id))
        })
    });
    match (holders.next(), holders.next()) {
        (None, _) => true,
        (Some((level, _)), None) => level == last,
        (Some(_), Some(_)) => false,
    }
}

/// Every table overlapping `range` (all tables for `None`), with the range
/// widened to the tables' span until no table outside overlaps it.
fn closure<'s>(
    levels: &'s [LevelShape],
    range: Option<KeyRange<'_>>,
) -> Vec<(usize, &'s TableShape)> {
    let mut all: Vec<(usize, &TableShape)> = levels
        .iter()
        .enumerate()
        .flat_map(|(i, level)| level.tables().map(move |t| (i, t)))
        .collect();
    let Some(mut range) = range else { return all };
    // Each pass either widens the range or ends; it widens at most once per
    // table, so this ends.
    loop {
        let touched = all.iter().filter(|(_, t)| KeyRange::of(t).overlaps(&range));
        let wider = touched.fold(range, |r, (_, t)| r.union(KeyRange::of(t)));
        if wider == range {
            all.retain(|(_, t)| KeyRange::of(t).overlaps(&range));
            return all;
        }
        range = wider;
    }
}

#[cfg(test)]
mod tests {
    use super::super::shape::testkit::*;
    use super::*;

    fn ids(task: &CompactionTask) -> Vec<(usize, Vec<u64>)> {
        task.inputs.clone()
    }

    #[test]
    fn last_level_is_the_deepest_non_empty_one_and_at_least_one() {
        assert_eq!(last_level(&[]), 1);
        assert_eq!(last_level(&[one_run(vec![t(1, 1, "a", "b")])]), 1);
        let levels = [
            LevelShape::default(),
            LevelShape::default(),
            one_run(vec![t(1, 1, "a", "b")]),
            level(vec![]),
        ];
        assert_eq!(last_level(&levels), 2);
    }

    #[test]
    fn empty_and_inverted_ranges_need_nothing() {
        assert!(plan(&[], 1, None).is_empty());
        let levels = [one_run(vec![t(1, 1, "a", "z")])];
        assert!(plan(&levels, 1, Some((b"q", b"b"))).is_empty());
    }

    #[test]
    fn everything_goes_into_the_last_levels_run() {
        let levels = [
            one_run(vec![t(5, 1, "a", "c")]),
            one_run(vec![t(3, 1, "a", "b"), t(4, 1, "x", "y")]),
            one_run(vec![t(1, 1, "m", "n")]),
        ];
        let tasks = plan(&levels, 9, None);
        assert_eq!(tasks.len(), 1);
        assert_eq!(
            ids(&tasks[0]),
            vec![(0, vec![5]), (1, vec![3, 4]), (2, vec![1])]
        );
        assert_eq!(
            (tasks[0].output_level, tasks[0].output_run),
            (2, OutputRun::Existing(1))
        );
        assert!(tasks[0].bottommost);
        assert_eq!(tasks[0].target_table_bytes, 9);
    }

    #[test]
    fn data_only_in_level0_goes_to_a_new_l1_run() {
        let levels = [level(vec![
            run(2, vec![t(2, 1, "a", "c")]),
            run(1, vec![t(1, 1, "b", "d")]),
        ])];
        let tasks = plan(&levels, 1, None);
        assert_eq!(
            (tasks[0].output_level, tasks[0].output_run),
            (1, OutputRun::New)
        );
        // A single L0 run is not done either: L0 is not the last level.
        assert_eq!(plan(&[one_run(vec![t(1, 1, "a", "b")])], 1, None).len(), 1);
    }

    #[test]
    fn a_partial_range_takes_its_closure_under_overlap() {
        // m..=n touches L0's a..=z, which touches L2's b..=c and L3's
        // x..=y; L1's 0..=1 lies outside everything.
        let levels = [
            one_run(vec![t(9, 1, "a", "z")]),
            one_run(vec![t(8, 1, "0", "1")]),
            one_run(vec![t(7, 1, "b", "c")]),
            one_run(vec![t(5, 1, "A", "B"), t(6, 1, "x", "y")]),
        ];
        let tasks = plan(&levels, 1, Some((b"m", b"n")));
        assert_eq!(
            ids(&tasks[0]),
            vec![(0, vec![9]), (2, vec![7]), (3, vec![6])]
        );
        assert_eq!(
            (tasks[0].output_level, tasks[0].output_run),
            (3, OutputRun::Existing(5))
        );
        assert!(tasks[0].bottommost);
    }

    #[test]
    fn closure_follows_chains_across_levels() {
        // e..=e -> L1 d..=f -> L2 f..=h -> L1 h..=j -> done; L2 k..=l stays.
        let levels = [
            LevelShape::default(),
            one_run(vec![t(1, 1, "d", "f"), t(2, 1, "h", "j")]),
            one_run(vec![t(3, 1, "f", "h"), t(4, 1, "k", "l")]),
        ];
        let tasks = plan(&levels, 1, Some((b"e", b"e")));
        assert_eq!(ids(&tasks[0]), vec![(1, vec![1, 2]), (2, vec![3])]);
    }

    #[test]
    fn done_once_the_range_sits_in_one_run_of_the_last_level() {
        let levels = [
            one_run(vec![t(9, 1, "a", "b")]),
            LevelShape::default(),
            one_run(vec![t(1, 1, "a", "c"), t(2, 1, "m", "p")]),
        ];
        assert!(plan(&levels, 1, Some((b"n", b"o"))).is_empty());
        // a..=b is also in L0, above.
        assert_eq!(plan(&levels, 1, Some((b"a", b"a"))).len(), 1);
        // Two runs of the last level (tiered) are not one run.
        let tiered = [
            LevelShape::default(),
            level(vec![
                run(2, vec![t(2, 1, "a", "c")]),
                run(1, vec![t(1, 1, "b", "d")]),
            ]),
        ];
        let tasks = plan(&tiered, 1, Some((b"c", b"c")));
        assert_eq!(
            (tasks[0].output_level, tasks[0].output_run),
            (1, OutputRun::Existing(1))
        );
    }
}
