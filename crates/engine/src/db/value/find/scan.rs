//! The planner's other way: one merged pass over the store, filtering on
//! the value as the caller iterates. It sees only the newest visible
//! version of each key, so nothing needs validating.

use std::ops::Bound;
use std::sync::Arc;

use super::read::Query;
use super::{FindStats, has_value};
use crate::db::{DbIter, Inner, SuperVersion};
use crate::error::Result;
use crate::version::Version;

/// The results of a search that scans the store.
pub(super) struct Scan {
    entries: DbIter,
    query: Query,
    /// The version scanned: its tables and data blocks are counted in the
    /// stats when the scan has read them all (and so knows their blocks).
    version: Arc<Version>,
}

impl Scan {
    pub(super) fn new(current: &SuperVersion, query: Query) -> Self {
        Self {
            entries: Inner::iter_in(
                current,
                (Bound::Included(query.from.clone()), Bound::Unbounded),
                query.seq,
            ),
            query,
            version: Arc::clone(&current.version),
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
        for table in self.version.tables() {
            stats.tables_scanned += 1;
            stats.blocks_read += table.summary().map_or(0, |s| s.data_blocks);
        }
        Ok(None)
    }
}
