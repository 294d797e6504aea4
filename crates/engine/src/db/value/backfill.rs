//! The backfill: gives tables written before an index existed their leaf.
//!
//! It rewrites one table at a time, under the compaction lock, into a table
//! with the same entries, level and run (so read order is unchanged), now
//! with every current index's leaf. It runs on the compaction thread when
//! the planner has nothing to do, and in [`Db::wait_for_backfill`].

use std::ops::Bound;
use std::sync::Arc;

use crate::compaction::OutputRun;
use crate::db::{Db, FilterSizing, Inner, lock, projected_entries, write};
use crate::error::Result;
use crate::value_def::IndexRecord;
use crate::version::{LiveTable, Version};

impl Inner {
    /// Rewrites one table that lacks the leaf of a live index; `false`
    /// when every table has every leaf (or there is no index).
    pub(in crate::db) fn backfill_once(&self) -> Result<bool> {
        let _alone = write(&self.compaction_lock);
        let indexes = self.indexes.load_full();
        let version = Arc::clone(&self.current().version);
        let Some((run, table)) = missing_leaf(&version, &indexes)? else {
            return Ok(false);
        };
        let _in_flight = {
            let mut state = lock(&self.state);
            Self::check_background_error(&state)?;
            self.start_job(&mut state, None)
        };
        self.rewrite(&version, run, &table).map(|()| true)
    }

    /// Writes `table`'s entries, unchanged, as a new table of the same
    /// level and run, and swaps it in.
    fn rewrite(&self, version: &Version, run: u64, table: &Arc<LiveTable>) -> Result<()> {
        let level = table.meta.level as usize;
        let entries = table
            .table_for_pass()?
            .iter(Bound::Unbounded, Bound::Unbounded);
        let projected = projected_entries(
            version,
            level,
            table.meta.entries,
            [(level, table.meta.entries)],
        );
        let outputs = self.write_tables(
            entries,
            level,
            OutputRun::Existing(run),
            None,
            &FilterSizing::by_level(projected),
            u64::MAX,
            true,
        )?;
        self.replace_tables(std::slice::from_ref(table), outputs)
    }
}

/// The first table, and its run, without the leaf of one of `indexes`.
fn missing_leaf(
    version: &Version,
    indexes: &[IndexRecord],
) -> Result<Option<(u64, Arc<LiveTable>)>> {
    for run in version.levels.iter().flat_map(|level| &level.runs) {
        for table in run.tables() {
            for index in indexes {
                if table.lacks_value_leaf(index.id)? {
                    return Ok(Some((run.id, Arc::clone(table))));
                }
            }
        }
    }
    Ok(None)
}

impl Db {
    /// Blocks until flushes and compactions are done and every live table
    /// carries the leaf of every live index, doing the remaining backfill
    /// on this thread.
    ///
    /// # Errors
    /// [`Error::Io`] or [`Error::Corruption`] met while rewriting a table;
    /// [`Error::Background`].
    pub fn wait_for_backfill(&self) -> Result<()> {
        self.inner.wait_until_idle()?;
        while self.inner.backfill_once()? {}
        Ok(())
    }
}
