//! STUB — to be replaced. The compaction planner: a pure function of the version's shape.

use std::collections::BTreeSet;

use crate::options::CompactionStyle;

/// A table as the planner sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TableShape {
    /// File number.
    pub id: u64,
    /// File size.
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
    /// Tables, sorted.
    pub tables: Vec<TableShape>,
}

/// A level: runs newest first.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct LevelShape {
    /// Newest first.
    pub runs: Vec<RunShape>,
}

/// Which run the output joins.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum OutputRun {
    /// A new run, newest of its level.
    New,
    /// The existing run with this id.
    Existing(u64),
}

/// One compaction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CompactionTask {
    /// (level, table ids) of every input.
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

/// The next compaction the style calls for, avoiding `busy` tables.
pub(crate) fn plan(
    levels: &[LevelShape],
    style: &CompactionStyle,
    busy: &BTreeSet<u64>,
    target_table_bytes: u64,
) -> Option<CompactionTask> {
    todo!()
}

/// Compactions that move every table overlapping `range` (all when `None`) into one run of the last level.
pub(crate) fn plan_full(
    levels: &[LevelShape],
    style: &CompactionStyle,
    target_table_bytes: u64,
    range: Option<(&[u8], &[u8])>,
) -> Vec<CompactionTask> {
    todo!()
}
