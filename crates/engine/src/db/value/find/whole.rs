//! The sources a plan reads whole: the memtables and the newest runs, in
//! one merged pass that yields the newest version of every key visible at
//! the snapshot, deletions included. Merged with the candidate hits of the
//! older runs, each of those versions decides its key: a hit of an older
//! run under the same key is hidden without a lookup.

use std::ops::Bound;
use std::sync::Arc;

use super::read::{Hit, Query, Source};
use super::{FindStats, has_value, same_bytes};
use crate::db::{Inner, SuperVersion};
use crate::error::Result;
use crate::iter::MergeIter;
use crate::key::ValueKind;
use crate::version::Version;

/// The merged pass over the sources read whole.
pub(super) struct ReadWhole {
    entries: MergeIter<'static>,
    /// The user key decided last (once `started`): its older versions
    /// are skipped.
    decided: Vec<u8>,
    started: bool,
    /// The version read, and how many of its runs: their tables and data
    /// blocks are counted in the stats once read through.
    version: Arc<Version>,
    runs: usize,
}

impl ReadWhole {
    /// The memtables of `current` and its first `runs` runs in read order,
    /// from `query.from` on.
    pub(super) fn new(current: &SuperVersion, query: &Query, runs: usize) -> Self {
        let bounds = (Bound::Included(query.from.clone()), Bound::Unbounded);
        Self {
            entries: Inner::merged(current, &bounds, runs, None),
            decided: Vec::new(),
            started: false,
            version: Arc::clone(&current.version),
            runs,
        }
    }

    /// The newest visible version of the next key, as a hit that decides
    /// the key.
    pub(super) fn next(&mut self, query: &Query, stats: &mut FindStats) -> Result<Option<Hit>> {
        for entry in self.entries.by_ref() {
            let entry = entry?;
            let key = &entry.key.user_key;
            if entry.key.seq > query.seq || (self.started && same_bytes(&self.decided, key)) {
                continue;
            }
            self.started = true;
            self.decided.clear();
            self.decided.extend_from_slice(key);
            // Sources may hold a little before their bounds (whole blocks).
            if *key < query.from {
                continue;
            }
            stats.entries_examined += 1;
            let matched = entry.key.kind == ValueKind::Value
                && has_value(&query.index, &entry.value, &query.value);
            return Ok(Some(Hit {
                key: entry.key.user_key,
                value: entry.value,
                seq: entry.key.seq,
                source: Source::ReadWhole { matched },
            }));
        }
        let runs = self.version.levels.iter().flat_map(|level| &level.runs);
        for run in runs.take(std::mem::take(&mut self.runs)) {
            for table in run.tables() {
                stats.tables_scanned += 1;
                stats.blocks_read += table.summary().map_or(0, |s| s.data_blocks);
            }
        }
        Ok(None)
    }
}
