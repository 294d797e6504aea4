//! Search by value: which keys have a value (or an extracted field equal to
//! it) as of a snapshot, without reading every table.
//!
//! One search pins one version (memtables and tables) and reads only it:
//!
//! 1. **Candidates** (`candidates.rs`): the value is hashed once; the
//!    index's leaves say which tables may hold it, and each such table's
//!    block filters which of its data blocks. Tables without a readable
//!    leaf are candidates with every block.
//! 2. **Plan** (`../plan.rs`): reading the candidate blocks, or one merged
//!    scan of the store if that is cheaper (a value in most entries).
//! 3. **Read** (`read.rs`): the candidate blocks and the memtables (the
//!    keys their value postings name) yield the entries whose extracted
//!    values include the searched one, each the newest version of its key
//!    in its source.
//! 4. **Validate** (`validate.rs`, Algorithm 3 of Macyna & Ordonez): a key
//!    is returned only if no newer source holds a version of it visible at
//!    the snapshot. An older version that had the value, or a newer one
//!    hidden by the snapshot, never makes a result.
//!
//! Steps 3 and 4 run as the caller iterates (`merge.rs`): each run's
//! candidate blocks are read when the merge of all sources in key order
//! reaches them, so a search stopped after `n` results has read only the
//! blocks before them. The merged scan (`scan.rs`) is as lazy and needs no
//! validation: it sees only the newest visible versions.

mod candidates;
mod merge;
mod read;
mod scan;
#[cfg(test)]
mod tests;
mod validate;
mod whole;

pub(in crate::db) use read::{Hit, Source};
pub(in crate::db) use validate::shadowed;

use sift_filter::KeyHash;
use sift_value_index::{Method, ProbeStats};

use super::calibrate;
use super::plan::{self, Costs, Way};
use crate::db::{Inner, SuperVersion, lock};
use crate::error::{Error, Result};
use crate::key::SeqNo;
use crate::value_def::IndexRecord;

/// What one search by value did: the `explain` of a query. The probes
/// are counted when the search is made, the reads as it is iterated: the
/// counters are complete once it has returned its last result.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct FindStats {
    /// How the leaves were probed; [`Method::Scan`] when the store was
    /// scanned instead of reading candidate blocks (asked for, or chosen
    /// by the planner after probing).
    pub method: Method,
    /// Whether the planner chose (`Db::find`) rather than the caller.
    pub planned: bool,
    /// Size classes of leaves probed (one search structure each).
    pub leaf_classes: u64,
    /// Inner nodes of the hierarchy probed.
    pub inner_nodes_probed: u64,
    /// Leaf filters probed one by one (bloom-scan, and the hierarchy's
    /// bottom nodes); the flat layout reads rows instead: `words_anded`.
    pub leaves_probed: u64,
    /// Leaves that said "maybe".
    pub leaves_positive: u64,
    /// 64-bit words ANDed by the flat layout.
    pub words_anded: u64,
    /// Block filters probed in the candidate tables.
    pub block_filters_probed: u64,
    /// Candidate data blocks: those no filter ruled out.
    pub blocks_positive: u64,
    /// Tables read (at least one block): candidates, or every table for a
    /// scan (counted when it ends).
    pub tables_scanned: u64,
    /// Candidate tables without a readable leaf of this index (read in
    /// full).
    pub tables_unindexed: u64,
    /// Tables read that really held an entry with the value.
    pub tables_matched: u64,
    /// Data blocks read (for a scan, every one, counted when it ends).
    pub blocks_read: u64,
    /// Read blocks that held an entry with the value: the rest were the
    /// filters' false positives.
    pub blocks_matched: u64,
    /// Table entries decoded and extracted.
    pub entries_examined: u64,
    /// Memtable entries scanned: memtables without postings of the index
    /// (created before it), or where the value is too common for them.
    pub memtable_entries_scanned: u64,
    /// Memtable keys looked up through the value's postings.
    pub memtable_postings_read: u64,
    /// Whether the memtables and the newest runs were read whole, in one
    /// merged pass, and the older runs by their candidate blocks.
    pub read_whole: bool,
    /// How many runs were read whole (0: the memtables only).
    pub runs_read_whole: u64,
    /// Candidate keys checked against newer versions.
    pub entries_validated: u64,
    /// Keys returned.
    pub results: u64,
    /// The planner's estimate for reading the candidate blocks, in
    /// nanoseconds (0 when the caller chose the method).
    pub estimated_filtered_ns: u64,
    /// Its estimate for scanning the store, in nanoseconds.
    pub estimated_scan_ns: u64,
    /// Its estimate for reading the newest runs whole and the others by
    /// their candidate blocks (the cheapest split), in nanoseconds.
    pub estimated_read_whole_ns: u64,
}

impl Default for FindStats {
    fn default() -> Self {
        Self {
            method: Method::Scan,
            planned: false,
            leaf_classes: 0,
            inner_nodes_probed: 0,
            leaves_probed: 0,
            leaves_positive: 0,
            words_anded: 0,
            block_filters_probed: 0,
            blocks_positive: 0,
            tables_scanned: 0,
            tables_unindexed: 0,
            tables_matched: 0,
            blocks_read: 0,
            blocks_matched: 0,
            entries_examined: 0,
            memtable_entries_scanned: 0,
            memtable_postings_read: 0,
            read_whole: false,
            runs_read_whole: 0,
            entries_validated: 0,
            results: 0,
            estimated_filtered_ns: 0,
            estimated_scan_ns: 0,
            estimated_read_whole_ns: 0,
        }
    }
}

impl FindStats {
    /// Adds a probe's counters.
    fn add_probes(&mut self, probes: &ProbeStats) {
        self.inner_nodes_probed += probes.inner_nodes_probed;
        self.leaves_probed += probes.leaves_probed;
        self.leaves_positive += probes.leaves_positive;
        self.words_anded += probes.words_anded;
    }
}

/// The result of a search by value: `(key, value)` pairs in key order,
/// each key once, read as they are asked for. It holds the version it
/// searches (memtables and tables) until dropped, as an iterator does, and
/// one data block's entries per sorted run. Yields `Err` if a table cannot
/// be read, then ends.
pub struct Find {
    results: Results,
    stats: FindStats,
}

/// Where a [`Find`]'s next result comes from.
enum Results {
    Merge(Box<merge::Merge>),
    Scan(Box<scan::Scan>),
    /// Every result returned, or an error.
    Done,
}

impl Find {
    /// What the search did so far: complete once it has returned its last
    /// result.
    #[must_use]
    pub fn stats(&self) -> &FindStats {
        &self.stats
    }
}

impl std::fmt::Debug for Find {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Find")
            .field("stats", &self.stats)
            .finish_non_exhaustive()
    }
}

impl Iterator for Find {
    type Item = Result<(Vec<u8>, Vec<u8>)>;

    fn next(&mut self) -> Option<Self::Item> {
        let next = match &mut self.results {
            Results::Merge(merge) => merge.next(&mut self.stats),
            Results::Scan(scan) => scan.next(&mut self.stats),
            Results::Done => return None,
        };
        match next {
            Ok(Some(found)) => {
                self.stats.results += 1;
                Some(Ok(found))
            }
            Ok(None) => {
                self.results = Results::Done;
                None
            }
            Err(error) => {
                self.results = Results::Done;
                Some(Err(error))
            }
        }
    }
}

/// The keys of a [`Find`], without their values.
#[derive(Debug)]
pub struct FindKeys(Find);

impl FindKeys {
    pub(in crate::db) fn new(find: Find) -> Self {
        Self(find)
    }

    /// What the search did.
    #[must_use]
    pub fn stats(&self) -> &FindStats {
        self.0.stats()
    }
}

impl Iterator for FindKeys {
    type Item = Result<Vec<u8>>;

    fn next(&mut self) -> Option<Self::Item> {
        self.0.next().map(|item| item.map(|(key, _)| key))
    }
}

/// Whether `index`'s extractor yields `wanted` from `value`.
pub(super) fn has_value(index: &IndexRecord, value: &[u8], wanted: &[u8]) -> bool {
    let mut found = false;
    index
        .extractor
        .extract(value, &mut |v| found |= same_bytes(v, wanted));
    found
}

/// Whether `a` equals `b`, compared from the last byte. A search compares
/// every entry of a block to its neighbour and every extracted value to
/// the one searched: short slices, where an inline loop costs less than a
/// call to `memcmp` (measured: 8-10% of a selective search), and keys side
/// by side in a block share their first bytes, not their last.
#[inline]
pub(super) fn same_bytes(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().rev().zip(b.iter().rev()).all(|(x, y)| x == y)
}

impl Inner {
    /// Keys from `from` on whose value, by `index`, is `wanted`, as of
    /// `seq` (now, when `None`), found by `method` (the planner's choice,
    /// when `None`).
    pub(in crate::db) fn find_at(
        &self,
        index: &str,
        wanted: &[u8],
        seq: Option<SeqNo>,
        method: Option<Method>,
        from: &[u8],
    ) -> Result<Find> {
        self.find_by(index, wanted, seq, method, from, None)
    }

    /// [`Inner::find_at`], read the way `forced` says when given (tests).
    fn find_by(
        &self,
        index: &str,
        wanted: &[u8],
        seq: Option<SeqNo>,
        method: Option<Method>,
        from: &[u8],
        forced: Option<Way>,
    ) -> Result<Find> {
        let record = self
            .index_named(index)
            .ok_or_else(|| Error::InvalidArgument(format!("no value index named {index:?}")))?;
        // Pin the version first, then read the sequence number: a
        // compaction installed before the pin dropped only versions
        // shadowed at or below what the sequence number then shows.
        let current = self.current();
        let seq = seq.unwrap_or_else(|| self.visible_seq());
        let hash = KeyHash::of(wanted);
        let mut stats = FindStats {
            planned: method.is_none() && forced.is_none(),
            ..FindStats::default()
        };
        let mut query = read::Query::new(&current, record, wanted, hash, seq, from);
        let record = &query.index;
        let (candidates, way) = match method {
            Some(Method::Scan) => (None, Way::Scan),
            Some(method) => {
                let (candidates, _) =
                    self.candidates(&current, record, Some(method), seq, hash, &mut stats)?;
                (Some(candidates), Way::Filtered)
            }
            None => {
                let (candidates, costs) =
                    self.candidates(&current, record, None, seq, hash, &mut stats)?;
                let way = match forced {
                    Some(way) => way,
                    // Without a candidate block nothing is cheaper than
                    // reading none.
                    None if candidates.tables.is_empty() => Way::Filtered,
                    None => {
                        let work = candidates.workload(&current, &query);
                        let estimate = plan::estimate(&work, &costs);
                        stats.estimated_filtered_ns = estimate.filtered_ns as u64;
                        stats.estimated_scan_ns = estimate.scan_ns as u64;
                        stats.estimated_read_whole_ns =
                            estimate.read_whole.map_or(0, |(ns, _)| ns as u64);
                        estimate.way()
                    }
                };
                (Some(candidates), way)
            }
        };
        let results = match (candidates, way) {
            (Some(candidates), Way::Filtered | Way::ReadWhole { .. }) => {
                if let Way::ReadWhole { runs } = way {
                    query.read_whole = Some(nth_run(&current, runs));
                }
                Results::Merge(Box::new(merge::Merge::new(
                    current,
                    query,
                    self.counters.clone(),
                    candidates,
                    &mut stats,
                )?))
            }
            _ => {
                stats.method = Method::Scan;
                Results::Scan(Box::new(scan::Scan::new(&current, query)))
            }
        };
        Ok(Find { results, stats })
    }

    /// A search planned as usual but read with the memtables and the first
    /// `runs` runs whole.
    #[cfg(test)]
    pub(in crate::db) fn find_reading_whole(
        &self,
        index: &str,
        wanted: &[u8],
        runs: usize,
    ) -> Result<Find> {
        self.find_by(
            index,
            wanted,
            None,
            None,
            &[],
            Some(Way::ReadWhole { runs }),
        )
    }

    /// Step 1: the candidate blocks of `current` for the value hashed to
    /// `hash`, probing the leaves by `method` (by the planner's choice per
    /// leaf class when `None`), with the measured costs of `record`'s
    /// searches (measured now if its tables changed since the last time).
    fn candidates(
        &self,
        current: &SuperVersion,
        record: &IndexRecord,
        method: Option<Method>,
        seq: SeqNo,
        hash: KeyHash,
        stats: &mut FindStats,
    ) -> Result<(candidates::Candidates, Costs)> {
        // Only this index's structures are locked: calibrating them reads
        // blocks, and a search on another index does not wait for that.
        let state = self.value_leaves.of(record);
        let mut state = lock(&state);
        state.sync(&current.version)?;
        let costs = match state.costs {
            Some(costs) => costs,
            None if method.is_some() => Costs::ASSUMED,
            None => {
                let measured = calibrate::measure(current, record, &state, seq);
                state.costs = Some(measured);
                measured
            }
        };
        let found = candidates::probe(
            current,
            record,
            &mut state,
            method,
            &costs.probe,
            hash,
            stats,
        )?;
        Ok((found, costs))
    }
}

/// Run `n` of `current` in read order (newest first: by level, then run),
/// as `(level, run)`; past the last, the first run of a level after the
/// last.
fn nth_run(current: &SuperVersion, mut n: usize) -> (usize, usize) {
    for (level, tables) in current.version.levels.iter().enumerate() {
        if n < tables.runs.len() {
            return (level, n);
        }
        n -= tables.runs.len();
    }
    (current.version.levels.len(), 0)
}
