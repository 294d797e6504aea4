//! The tables of one sorted run within a scan's bounds, opened one at a
//! time as the scan reaches them, and skipped when their scan filters
//! (prefix and range filter) rule the scan out. A run's front is also a
//! lazy [`Source`]: its range filters can show it holds nothing up to the
//! next key of the merge, and then the seek reads nothing of it.

use std::ops::{Bound, Range};
use std::sync::Arc;

use crate::error::Result;
use crate::iter::Source;
use crate::key::Entry;
use crate::sstable::{ScanProbe, SharedBounds, Table, TableIter};
use crate::version::{LiveTable, Version};

use super::counters::Counters;

/// How many times a run's front may be skipped on its range filters before
/// its table is read: each skip costs a probe, and a scan that goes on for
/// long reads the table anyway.
const FRONT_SKIPS: u8 = 8;

/// What a scan asks the scan filters, and where it counts the answers.
#[derive(Debug)]
pub(super) struct ScanFiltering {
    pub probe: ScanProbe,
    /// Whether a run's front may be skipped on its range filters.
    pub skips: bool,
    pub counters: Counters,
}

impl ScanFiltering {
    /// Asks `table` (on `level`) and counts the probe if a filter applied:
    /// `false` only if the table holds nothing the scan can see.
    fn admits(&self, level: usize, table: &Table, bounds: &SharedBounds) -> Admitted {
        self.count(level, table.may_hold(&self.probe, bounds))
    }

    /// Counts a filter's answer for a table on `level`, if one applied.
    fn count(&self, level: usize, answer: Option<bool>) -> Admitted {
        match answer {
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

/// An open table of the run, and what its first entry must show for its
/// filter's "may hold" to have been right.
struct Opened {
    iter: TableIter,
    unproven: Option<Claim>,
}

/// A filter's "may hold", to be shown by the first entry read.
enum Claim {
    /// The table holds an entry within the scan's bounds.
    InBounds,
    /// ... at or below this user key.
    Through(Vec<u8>),
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
    /// The front holds no user key at or below this one (it was skipped).
    floor: Option<Vec<u8>>,
    /// Skips the front has left ([`FRONT_SKIPS`]).
    skips_left: u8,
    /// A table the front asked its filters about for the whole scan
    /// before skipping, and their answer (asked once).
    admitted: Option<(usize, Admitted)>,
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
            floor: None,
            skips_left: FRONT_SKIPS,
            admitted: None,
        })
    }

    /// Table `at` of the run.
    fn table(&self, at: usize) -> Option<&LiveTable> {
        table_of(&self.version, self.level, self.run, at)
    }

    /// Opens table `at` of the run, unless its filters rule the scan out.
    fn open(&self, at: usize) -> Result<Option<Box<Opened>>> {
        let Some(live) = self.table(at) else {
            return Ok(None);
        };
        let table = live.table_arc()?;
        let admitted = match (self.admitted, &self.filtering) {
            (Some((asked, admitted)), _) if asked == at => admitted,
            (_, Some(filtering)) => filtering.admits(self.level, &table, &self.bounds),
            (_, None) => Admitted::Unfiltered,
        };
        Ok((admitted != Admitted::No).then(|| {
            Box::new(Opened {
                iter: table.iter_shared(&self.bounds),
                unproven: (admitted == Admitted::ByFilter).then_some(Claim::InBounds),
            })
        }))
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
        if let Some(claim) = opened.unproven.take()
            && let Some(filtering) = filtering
        {
            let refuted = match (&item, claim) {
                (None, _) => true,
                (Some(Ok(entry)), Claim::Through(key)) => entry.key.user_key > key,
                (Some(_), _) => false,
            };
            if refuted {
                filtering.false_positive(level);
            }
        }
        item
    }
}

impl Source for RunIter {
    /// Asks the filters of each table the front reaches: first whether it
    /// holds anything the scan can see (as [`RunIter::open`] would), then
    /// whether its range filter shows it holds no key above the front's
    /// floor and at or below `key`. A table ruled out either way up to its
    /// largest key is passed over, and one ruled out up to `key` leaves the
    /// front unread with its floor at `key`. A "maybe" opens the table.
    fn skip_front_through(&mut self, key: &[u8]) -> bool {
        let Some(filtering) = self.filtering.clone().filter(|f| f.skips) else {
            return false;
        };
        let version = &self.version;
        while self.front.is_none() {
            let at = self.pending.start;
            let Some(table) = table_of(version, self.level, self.run, at) else {
                // No table left: the rest, if any, is in the back's table.
                return false;
            };
            if table.smallest_user_key() > key {
                return true;
            }
            let largest = table.largest_user_key();
            // A table that cannot be read is not skipped: opening it
            // reports the damage.
            let Ok(table) = table.table_arc() else {
                return false;
            };
            let for_scan = match self.admitted {
                Some((asked, admitted)) if asked == at => admitted,
                _ => filtering.admits(self.level, &table, &self.bounds),
            };
            self.admitted = Some((at, for_scan));
            if for_scan == Admitted::No {
                self.pending.start += 1;
                continue;
            }
            if self.skips_left == 0 {
                return false;
            }
            self.skips_left -= 1;
            let lower = match &self.floor {
                Some(floor) => Bound::Excluded(floor.as_slice()),
                None => self.bounds.0.as_ref().map(Vec::as_slice),
            };
            let within = key < largest;
            let upper = if within {
                Bound::Included(key)
            } else {
                self.bounds.1.as_ref().map(Vec::as_slice)
            };
            match filtering.count(self.level, table.range_may_hold(lower, upper)) {
                Admitted::No if within => {
                    self.floor = Some(key.to_vec());
                    return true;
                }
                Admitted::No => self.pending.start += 1,
                Admitted::ByFilter => {
                    let iter = table.iter_shared(&self.bounds);
                    let claim = Claim::Through(key.to_vec());
                    self.front = Some(Box::new(Opened {
                        iter,
                        unproven: Some(claim),
                    }));
                    self.pending.start += 1;
                }
                Admitted::Unfiltered => return false,
            }
        }
        false
    }
}

/// Table `at` of run `run` on `level` of `version`.
fn table_of(version: &Version, level: usize, run: usize, at: usize) -> Option<&LiveTable> {
    let tables = version.levels.get(level)?.runs.get(run)?.tables();
    tables.get(at).map(|table| &**table)
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
                Some(at) => match self.open(at) {
                    Ok(opened) => self.front = opened,
                    Err(e) => return Some(Err(e)),
                },
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
                Some(at) => match self.open(at) {
                    Ok(opened) => self.back = opened,
                    Err(e) => return Some(Err(e)),
                },
                None => return Self::step(filtering, level, &mut self.front, back),
            }
        }
    }
}
