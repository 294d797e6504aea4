//! The tables of one sorted run within a scan's bounds, opened one at a
//! time as the scan reaches them, and skipped when their scan filters
//! (prefix and range filter) rule the scan out.

use std::ops::{Bound, Range};
use std::sync::Arc;

use crate::error::Result;
use crate::key::Entry;
use crate::sstable::{ScanProbe, SharedBounds, Table, TableIter};
use crate::version::Version;

use super::counters::Counters;

/// What a scan asks the scan filters, and where it counts the answers.
#[derive(Debug)]
pub(crate) struct ScanFiltering {
    pub probe: ScanProbe,
    pub counters: Counters,
}

impl ScanFiltering {
    /// Asks `table` (on `level`) and counts the probe if a filter applied:
    /// `false` only if the table holds nothing the scan can see.
    fn admits(&self, level: usize, table: &Table, bounds: &SharedBounds) -> Admitted {
        match table.may_hold(&self.probe, bounds) {
            None => Admitted::Unfiltered,
            Some(may_hold) => {
                self.counters.with(|shard| {
                    let counters = shard.level(level);
                    counters.scan_probes.add(1);
                    counters.scan_empty.add(u64::from(!may_hold));
                });
                if may_hold {
                    Admitted::ByFilter
                } else {
                    Admitted::No
                }
            }
        }
    }

    /// Counts a table the filters admitted that held nothing in bounds.
    fn false_positive(&self, level: usize) {
        self.counters
            .with(|shard| shard.level(level).scan_false_positives.add(1));
    }
}

/// Whether a scan reads a table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Admitted {
    /// No scan filter applied.
    Unfiltered,
    /// A filter answered "may hold".
    ByFilter,
    /// A filter answered "holds nothing": skipped.
    No,
}

/// An open table of the run, and whether it must still show that its
/// filter's "may hold" was right (by yielding an entry).
struct Opened {
    iter: TableIter,
    unproven: bool,
}

/// The entries of one sorted run within bounds, opening each table only
/// when the iteration reaches it: a seek costs one table, not the run.
/// Holds the version, which keeps the run's tables open.
pub(super) struct RunIter {
    version: Arc<Version>,
    /// Where the run is in `version`.
    level: usize,
    run: usize,
    /// Tables (indexes into the run) no end has opened yet, in key order.
    pending: Range<usize>,
    bounds: SharedBounds,
    filtering: Option<Arc<ScanFiltering>>,
    /// Boxed: a scan the filters empty opens none, and the iterator stays
    /// small to build and move.
    front: Option<Box<Opened>>,
    back: Option<Box<Opened>>,
}

impl RunIter {
    /// `None` when no table of the run overlaps `bounds`.
    pub(super) fn new(
        version: &Arc<Version>,
        level: usize,
        run: usize,
        bounds: &SharedBounds,
        filtering: Option<&Arc<ScanFiltering>>,
    ) -> Option<Self> {
        let tables = &version.levels.get(level)?.runs.get(run)?.tables();
        // Tables are sorted and disjoint: those overlapping the bounds are
        // the ones after every table that ends below the lower bound and
        // before every table that starts above the upper one.
        let start = tables.partition_point(|t| !above_lower(t.largest_user_key(), &bounds.0));
        let end = tables.partition_point(|t| below_upper(t.smallest_user_key(), &bounds.1));
        (start < end).then(|| Self {
            version: Arc::clone(version),
            level,
            run,
            pending: start..end,
            bounds: Arc::clone(bounds),
            filtering: filtering.map(Arc::clone),
            front: None,
            back: None,
        })
    }

    /// Opens table `at` of the run, unless its filters rule the scan out.
    fn open(&self, at: usize) -> Option<Box<Opened>> {
        let table = &self
            .version
            .levels
            .get(self.level)?
            .runs
            .get(self.run)?
            .tables()
            .get(at)?
            .table;
        let admitted = self.filtering.as_ref().map_or(Admitted::Unfiltered, |f| {
            f.admits(self.level, table, &self.bounds)
        });
        (admitted != Admitted::No).then(|| {
            Box::new(Opened {
                iter: table.iter_shared(&self.bounds),
                unproven: admitted == Admitted::ByFilter,
            })
        })
    }

    /// The next item of `end`'s table, counting a false positive (in
    /// `filtering`, on `level`) when a table the filters admitted turns out
    /// to hold nothing in bounds.
    fn step(
        filtering: Option<&Arc<ScanFiltering>>,
        level: usize,
        end: &mut Option<Box<Opened>>,
        next: impl FnOnce(&mut TableIter) -> Option<Result<Entry>>,
    ) -> Option<Result<Entry>> {
        let opened = end.as_mut()?;
        let item = next(&mut opened.iter);
        if std::mem::take(&mut opened.unproven)
            && item.is_none()
            && let Some(filtering) = filtering
        {
            filtering.false_positive(level);
        }
        item
    }
}

fn below_upper(key: &[u8], upper: &Bound<Vec<u8>>) -> bool {
    match upper {
        Bound::Included(bound) => key <= bound.as_slice(),
        Bound::Excluded(bound) => key < bound.as_slice(),
        Bound::Unbounded => true,
    }
}

fn above_lower(key: &[u8], lower: &Bound<Vec<u8>>) -> bool {
    match lower {
        Bound::Included(bound) => key >= bound.as_slice(),
        Bound::Excluded(bound) => key > bound.as_slice(),
        Bound::Unbounded => true,
    }
}

impl Iterator for RunIter {
    type Item = Result<Entry>;

    fn next(&mut self) -> Option<Self::Item> {
        let (filtering, level) = (self.filtering.as_ref(), self.level);
        loop {
            if let Some(item) = Self::step(filtering, level, &mut self.front, Iterator::next) {
                return Some(item);
            }
            match self.pending.next() {
                Some(at) => self.front = self.open(at),
                // Every table is open: the rest is in the back end's table,
                // which is double-ended and never repeats an entry.
                None => return Self::step(filtering, level, &mut self.back, Iterator::next),
            }
        }
    }
}

impl DoubleEndedIterator for RunIter {
    fn next_back(&mut self) -> Option<Self::Item> {
        let (filtering, level) = (self.filtering.as_ref(), self.level);
        let back = DoubleEndedIterator::next_back;
        loop {
            if let Some(item) = Self::step(filtering, level, &mut self.back, back) {
                return Some(item);
            }
            match self.pending.next_back() {
                Some(at) => self.back = self.open(at),
                None => return Self::step(filtering, level, &mut self.front, back),
            }
        }
    }
}
