//! Questions every planning rule asks of a shape: key ranges and their
//! overlaps, level sizes, which run an output can join, and how a chosen
//! set of tables becomes a [`CompactionTask`].

use std::collections::{BTreeMap, BTreeSet};

use super::{CompactionTask, LevelShape, OutputRun, RunShape, TableShape};

/// An inclusive range of user keys, `lo..=hi`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct KeyRange<'a> {
    /// Smallest key in the range.
    pub lo: &'a [u8],
    /// Largest key in the range.
    pub hi: &'a [u8],
}

impl<'a> KeyRange<'a> {
    /// The keys a table may hold.
    pub(crate) fn of(table: &'a TableShape) -> Self {
        Self {
            lo: &table.smallest,
            hi: &table.largest,
        }
    }

    /// Whether some key lies in both ranges.
    pub(crate) fn overlaps(&self, other: &KeyRange<'_>) -> bool {
        self.lo <= other.hi && other.lo <= self.hi
    }

    /// The smallest range holding both.
    pub(crate) fn union(self, other: KeyRange<'a>) -> Self {
        Self {
            lo: self.lo.min(other.lo),
            hi: self.hi.max(other.hi),
        }
    }

    /// The smallest range holding every table; `None` for no tables.
    pub(crate) fn spanning<'t: 'a>(
        tables: impl IntoIterator<Item = &'t TableShape>,
    ) -> Option<Self> {
        tables.into_iter().map(KeyRange::of).reduce(KeyRange::union)
    }
}

impl LevelShape {
    /// Every table of the level, newest run first, each run in key order.
    pub(crate) fn tables(&self) -> impl Iterator<Item = &TableShape> {
        self.runs.iter().flat_map(|run| run.tables.iter())
    }

    /// Bytes held by the level.
    pub(crate) fn size(&self) -> u64 {
        self.tables().fold(0, |sum, t| sum.saturating_add(t.size))
    }
}

impl RunShape {
    /// The run's tables whose range overlaps `range`: found by binary
    /// search, as a run's tables are disjoint and in key order (a linear
    /// scan per table of the level above made planning quadratic).
    pub(crate) fn overlapping(&self, range: KeyRange<'_>) -> &[TableShape] {
        let first = self.tables.partition_point(|t| t.largest[..] < *range.lo);
        let after = &self.tables[first..];
        &after[..after.partition_point(|t| t.smallest[..] <= *range.hi)]
    }
}

/// The tables of `level` (all its runs) whose range overlaps `range`.
pub(crate) fn overlapping<'s>(
    levels: &'s [LevelShape],
    level: usize,
    range: KeyRange<'_>,
) -> Vec<&'s TableShape> {
    levels
        .get(level)
        .into_iter()
        .flat_map(|level| &level.runs)
        .flat_map(|run| run.overlapping(range))
        .collect()
}

/// The run an output written into `level` joins when that level must stay
/// a single run: the run itself, a new one when the level is empty, and
/// `None` when the level holds several runs (no single run to join).
pub(crate) fn single_run_of(levels: &[LevelShape], level: usize) -> Option<OutputRun> {
    match levels.get(level).map_or(&[][..], |l| &l.runs[..]) {
        [] => Some(OutputRun::New),
        [run] => Some(OutputRun::Existing(run.id)),
        _ => None,
    }
}

/// What the compactions under way hold: every table of their levels, and
/// the levels themselves (from each one's first input level to its output
/// level). A task may write into a level while reading none of its tables
/// (a table pushed into a gap of the level below), so the tables alone do
/// not say which levels a new task must keep out of.
#[derive(Debug, Default, Clone)]
pub(crate) struct Busy {
    tables: BTreeSet<u64>,
    levels: BTreeSet<usize>,
}

impl Busy {
    /// Nothing under way.
    pub(crate) fn none() -> Self {
        Self::default()
    }

    /// The tables with `ids` busy, and no level (the planner's tests and
    /// the simulator).
    #[cfg(test)]
    pub(crate) fn tables(ids: impl IntoIterator<Item = u64>) -> Self {
        Self {
            tables: ids.into_iter().collect(),
            levels: BTreeSet::new(),
        }
    }

    /// The levels `first..=last` of `levels` busy, with all their tables.
    pub(crate) fn hold(&mut self, levels: &[LevelShape], first: usize, last: usize) {
        for level in levels.iter().take(last + 1).skip(first) {
            self.tables.extend(level.tables().map(|table| table.id));
        }
        self.levels.extend(first..=last);
    }

    /// Whether table `id` is being compacted already.
    pub(crate) fn holds(&self, id: u64) -> bool {
        self.tables.contains(&id)
    }

    /// Whether any of `tables` is being compacted already.
    pub(crate) fn any<'t>(&self, tables: impl IntoIterator<Item = &'t TableShape>) -> bool {
        tables.into_iter().any(|t| self.holds(t.id))
    }

    /// Whether a compaction under way reads or writes `level`: no other
    /// may write into it.
    pub(crate) fn level(&self, level: usize) -> bool {
        self.levels.contains(&level)
    }
}

/// The task merging `picks` (level, table) into `output_level`, with
/// `bottommost` worked out from the shape; `None` when nothing is picked.
pub(crate) fn task(
    levels: &[LevelShape],
    picks: &[(usize, &TableShape)],
    output_level: usize,
    output_run: OutputRun,
    target_table_bytes: u64,
) -> Option<CompactionTask> {
    let range = KeyRange::spanning(picks.iter().map(|(_, t)| *t))?;
    // One entry per level: the runner looks inputs up by level.
    let mut by_level: BTreeMap<usize, Vec<u64>> = BTreeMap::new();
    for (level, table) in picks {
        by_level.entry(*level).or_default().push(table.id);
    }
    let ids: BTreeSet<u64> = picks.iter().map(|(_, t)| t.id).collect();
    Some(CompactionTask {
        inputs: by_level.into_iter().collect(),
        output_level,
        output_run,
        bottommost: nothing_below(levels, &ids, range, output_level),
        target_table_bytes,
    })
}

/// Whether no table outside `inputs`, at `output_level` or deeper, overlaps
/// `range`: then no older version of a key in `range` survives the merge,
/// and a tombstone has nothing left to hide. Tables above the output level
/// do not matter: the ordering rule makes them newer where they overlap.
pub(crate) fn nothing_below(
    levels: &[LevelShape],
    inputs: &BTreeSet<u64>,
    range: KeyRange<'_>,
    output_level: usize,
) -> bool {
    levels
        .iter()
        .skip(output_level)
        .flat_map(|level| &level.runs)
        .flat_map(|run| run.overlapping(range))
        .all(|t| inputs.contains(&t.id))
}

#[cfg(test)]
pub(crate) mod testkit {
    //! Terse builders for shapes in tests.

    use super::super::{LevelShape, RunShape, TableShape};

    /// Table `id` of `size` bytes over `lo..=hi`.
    pub(crate) fn t(id: u64, size: u64, lo: &str, hi: &str) -> TableShape {
        TableShape {
            id,
            size,
            smallest: lo.into(),
            largest: hi.into(),
        }
    }

    /// Run `id` holding `tables`.
    pub(crate) fn run(id: u64, tables: Vec<TableShape>) -> RunShape {
        RunShape { id, tables }
    }

    /// A level of `runs`, newest first.
    pub(crate) fn level(runs: Vec<RunShape>) -> LevelShape {
        LevelShape { runs }
    }

    /// A level that is one run of `tables`, the run named after its first table.
    pub(crate) fn one_run(tables: Vec<TableShape>) -> LevelShape {
        let id = tables.first().map_or(0, |t| t.id);
        level(vec![run(id, tables)])
    }
}

#[cfg(test)]
mod tests {
    use super::testkit::*;
    use super::*;

    fn r<'a>(lo: &'a str, hi: &'a str) -> KeyRange<'a> {
        KeyRange {
            lo: lo.as_bytes(),
            hi: hi.as_bytes(),
        }
    }

    #[test]
    fn ranges_overlap_when_they_share_a_key_ends_included() {
        assert!(r("a", "c").overlaps(&r("c", "d")));
        assert!(r("c", "d").overlaps(&r("a", "c")));
        assert!(r("a", "z").overlaps(&r("m", "n")));
        assert!(!r("a", "b").overlaps(&r("ba", "c")));
        assert_eq!(r("d", "f").union(r("a", "b")), r("a", "f"));
    }

    #[test]
    fn spanning_covers_every_table() {
        let tables = [t(1, 1, "k", "m"), t(2, 1, "b", "c"), t(3, 1, "x", "y")];
        assert_eq!(KeyRange::spanning(&tables), Some(r("b", "y")));
        assert_eq!(KeyRange::spanning(&[] as &[TableShape]), None);
    }

    #[test]
    fn single_run_of_a_level() {
        let levels = vec![
            one_run(vec![t(1, 1, "a", "b")]),
            level(vec![run(7, vec![]), run(8, vec![])]),
        ];
        assert_eq!(single_run_of(&levels, 0), Some(OutputRun::Existing(1)));
        assert_eq!(single_run_of(&levels, 1), None);
        assert_eq!(single_run_of(&levels, 2), Some(OutputRun::New));
    }

    #[test]
    fn task_groups_inputs_by_level_and_works_out_bottommost() {
        let levels = vec![
            one_run(vec![t(1, 1, "c", "f")]),
            one_run(vec![t(2, 1, "a", "d"), t(3, 1, "e", "g")]),
            one_run(vec![t(4, 1, "x", "z")]),
        ];
        let picks = [
            (1, &levels[1].runs[0].tables[1]),
            (0, &levels[0].runs[0].tables[0]),
        ];
        let task = task(&levels, &picks, 1, OutputRun::Existing(2), 99).unwrap();
        assert_eq!(task.inputs, vec![(0, vec![1]), (1, vec![3])]);
        assert_eq!(task.target_table_bytes, 99);
        // Table 2 (level 1, not an input) overlaps c..=g.
        assert!(!task.bottommost);
        let picks = [(1, &levels[1].runs[0].tables[1])];
        // e..=g: nothing else at level 1 or 2 overlaps; level 0 is above.
        assert!(
            super::task(&levels, &picks, 2, OutputRun::Existing(4), 99)
                .unwrap()
                .bottommost
        );
        assert_eq!(super::task(&levels, &[], 2, OutputRun::New, 1), None);
    }
}
