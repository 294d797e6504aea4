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
//! (the two styles), `full.rs` (manual compaction of a range), and
//! `simulator/` (test only: random flushes, tasks applied to a model).

mod full;
mod leveled;
mod shape;
#[cfg(test)]
mod simulator;
mod tiered;

use std::collections::BTreeSet;

use crate::options::CompactionStyle;

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

/// The next compaction the style calls for, avoiding `busy` tables (those
/// some running compaction already reads); `None` when nothing is due.
pub(crate) fn plan(
    levels: &[LevelShape],
    style: &CompactionStyle,
    busy: &BTreeSet<u64>,
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
