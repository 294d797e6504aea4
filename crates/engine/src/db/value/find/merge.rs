//! Steps 3 and 4 as the caller iterates: the hits of every source, merged
//! in key order, each validated as it comes out. A run's candidate blocks
//! are read one at a time, when the merge reaches them, so a search that
//! is stopped early (`find(..).take(n)`) reads only the blocks before its
//! last result, and memory holds one block's hits per run.

use std::cmp::{Ordering, Reverse};
use std::collections::{BinaryHeap, VecDeque};
use std::sync::Arc;

use super::candidates::{CandidateTable, Candidates};
use super::read::{self, Hit, Query, Source};
use super::validate::shadowed;
use super::whole::ReadWhole;
use super::{FindStats, same_bytes};
use crate::db::SuperVersion;
use crate::db::counters::Counters;
use crate::error::Result;

/// The results of a search that reads candidate blocks.
pub(super) struct Merge {
    /// The version searched, held until the search is dropped.
    current: Arc<SuperVersion>,
    query: Query,
    counters: Counters,
    /// The sources read whole first, if the plan reads some, then one per
    /// memtable not read whole, then one per run with candidate tables.
    sources: Vec<Cursor>,
    /// The key the sources read whole decided last (once `any_decided`):
    /// hits of it from the other sources are older versions, hidden.
    decided: Vec<u8>,
    any_decided: bool,
    /// The next hit of every source that has one, smallest key first.
    fronts: BinaryHeap<Reverse<Front>>,
    /// Reused by validation's lookups.
    scratch: Vec<u8>,
}

impl Merge {
    /// Reads the memtables and the first candidate blocks of every run.
    pub(super) fn new(
        current: Arc<SuperVersion>,
        query: Query,
        counters: Counters,
        candidates: Candidates,
        stats: &mut FindStats,
    ) -> Result<Self> {
        let mut sources: Vec<Cursor> = match query.read_whole {
            Some(first) => {
                let runs = runs_before(&current, first);
                stats.read_whole = true;
                stats.runs_read_whole = runs as u64;
                vec![Cursor::whole(ReadWhole::new(&current, &query, runs))]
            }
            None => read::memtables(&current, &query, stats)?
                .into_iter()
                .map(Cursor::buffered)
                .collect(),
        };
        // Candidates come in read order (level, run, then key order within
        // a run): each run becomes one source.
        for mut table in candidates.tables {
            if query
                .read_whole
                .is_some_and(|first| (table.level, table.run) < first)
            {
                continue;
            }
            // Blocks wholly before `from` hold nothing to return.
            let t = &table.reader;
            table.blocks.retain(|&at| {
                t.block_last_user_key(at)
                    .is_none_or(|last| last[..] >= query.from[..])
            });
            if table.blocks.is_empty() {
                continue;
            }
            match sources.last_mut() {
                Some(run) if run.holds_run_of(&table) => run.tables.push_back(table),
                _ => sources.push(Cursor::run(table)),
            }
        }
        let mut fronts = BinaryHeap::with_capacity(sources.len());
        for (source, cursor) in sources.iter_mut().enumerate() {
            if let Some(hit) = cursor.next(&query, stats)? {
                fronts.push(Reverse(Front { hit, source }));
            }
        }
        Ok(Self {
            current,
            query,
            counters,
            sources,
            fronts,
            decided: Vec::new(),
            any_decided: false,
            scratch: Vec::new(),
        })
    }

    /// The next result in key order: a hit no newer version hides.
    pub(super) fn next(&mut self, stats: &mut FindStats) -> Result<Option<(Vec<u8>, Vec<u8>)>> {
        while let Some(Reverse(Front { hit, source })) = self.fronts.pop() {
            if let Some(next) = self.sources[source].next(&self.query, stats)? {
                self.fronts.push(Reverse(Front { hit: next, source }));
            }
            // Sources read whole come first at a key (source 0).
            if let Source::ReadWhole { matched } = hit.source {
                self.decided.clear();
                self.decided.extend_from_slice(&hit.key);
                self.any_decided = true;
                if matched {
                    return Ok(Some((hit.key, hit.value)));
                }
                continue;
            }
            if self.any_decided && same_bytes(&self.decided, &hit.key) {
                continue;
            }
            stats.entries_validated += 1;
            let (current, scratch) = (&self.current, &mut self.scratch);
            let (seq, read_whole) = (self.query.seq, self.query.read_whole);
            let hidden = self
                .counters
                .with(|counters| shadowed(current, &hit, seq, read_whole, counters, scratch))?;
            if !hidden {
                return Ok(Some((hit.key, hit.value)));
            }
        }
        Ok(None)
    }
}

/// A source's next hit, ordered by key (then source, for a total order).
struct Front {
    hit: Hit,
    source: usize,
}

impl Ord for Front {
    fn cmp(&self, other: &Self) -> Ordering {
        (&self.hit.key, self.source).cmp(&(&other.hit.key, other.source))
    }
}

impl PartialOrd for Front {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for Front {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Front {}

/// One source's hits in key order: a memtable's, all known, or a run's,
/// read block by block.
struct Cursor {
    /// The merged pass over the sources read whole, if this is it.
    whole: Option<Box<ReadWhole>>,
    /// Hits read and not yet handed out.
    buffered: VecDeque<Hit>,
    /// The run's candidate tables not yet read through, in key order.
    tables: VecDeque<CandidateTable>,
    /// The position in the first table's candidate blocks.
    next_block: usize,
    /// Whether a block of the first table matched.
    table_matched: bool,
}

impl Cursor {
    fn buffered(hits: VecDeque<Hit>) -> Self {
        Self {
            whole: None,
            buffered: hits,
            tables: VecDeque::new(),
            next_block: 0,
            table_matched: false,
        }
    }

    fn whole(read: ReadWhole) -> Self {
        let mut cursor = Self::buffered(VecDeque::new());
        cursor.whole = Some(Box::new(read));
        cursor
    }

    fn run(table: CandidateTable) -> Self {
        let mut cursor = Self::buffered(VecDeque::new());
        cursor.tables.push_back(table);
        cursor
    }

    /// Whether `table` belongs to the run this cursor reads.
    fn holds_run_of(&self, table: &CandidateTable) -> bool {
        self.tables
            .back()
            .is_some_and(|last| (last.level, last.run) == (table.level, table.run))
    }

    /// The next hit, reading candidate blocks until one holds a hit.
    fn next(&mut self, query: &Query, stats: &mut FindStats) -> Result<Option<Hit>> {
        if let Some(whole) = &mut self.whole {
            return whole.next(query, stats);
        }
        loop {
            if let Some(hit) = self.buffered.pop_front() {
                return Ok(Some(hit));
            }
            let Some(table) = self.tables.front() else {
                return Ok(None);
            };
            if self.next_block == 0 {
                stats.tables_scanned += 1;
            }
            let at = table.blocks[self.next_block];
            let matched = read::block(table, at, query, &mut self.buffered, stats)?;
            if matched && !self.table_matched {
                stats.tables_matched += 1;
                self.table_matched = true;
            }
            self.next_block += 1;
            if self.next_block == table.blocks.len() {
                self.tables.pop_front();
                self.next_block = 0;
                self.table_matched = false;
            }
        }
    }
}

/// How many runs of `current` come before run `first.1` of level
/// `first.0` in read order.
fn runs_before(current: &SuperVersion, (level, run): (usize, usize)) -> usize {
    let above: usize = current
        .version
        .levels
        .iter()
        .take(level)
        .map(|l| l.runs.len())
        .sum();
    above + run
}
