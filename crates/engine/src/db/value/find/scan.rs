//! The planner's other way: one merged pass over the store, filtering on
//! the value as the caller iterates. It sees only the newest visible
//! version of each key, so nothing needs validating.

use std::ops::Bound;

use super::read::Query;
use super::{FindStats, has_value};
use crate::db::{DbIter, Inner, SuperVersion};
use crate::error::Result;

/// The results of a search that scans the store.
pub(super) struct Scan {
    entries: DbIter,
    query: Query,
    /// Tables and data blocks of the version scanned, counted in the
    /// stats when the scan has read them all.
    tables: u64,
    blocks: u64,
}

impl Scan {
    pub(super) fn new(current: &SuperVersion, query: Query) -> Self {
        let (mut tables, mut blocks) = (0, 0);
        for table in current.version.tables() {
            tables += 1;
            blocks += table.table.index().entries.len() as u64;
        }
        Self {
            entries: Inner::iter_in(
                current,
                (Bound::Included(query.from.clone()), Bound::Unbounded),
                query.seq,
            ),
            query,
            tables,
            blocks,
        }
    }

    /// The next entry with the value, in key order.
    pub(super) fn next(&mut self, stats: &mut FindStats) -> Result<Option<(Vec<u8>, Vec<u8>)>> {
        for item in self.entries.by_ref() {
            let (key, value) = item?;
            stats.entries_examined += 1;
            if has_value(&self.query.index, &value, &self.query.value) {
                return Ok(Some((key, value)));
            }
        }
        stats.tables_scanned += self.tables;
        stats.blocks_read += self.blocks;
        Ok(None)
    }
}
