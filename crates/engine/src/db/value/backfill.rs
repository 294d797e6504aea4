//! The backfill: gives tables written before an index existed their leaf.
//!
//! It rewrites one table at a time, under the compaction lock, into a table
//! with the same entries, level and run (so read order is unchanged), now
//! with every current index's leaf. It runs on the compaction thread when
//! the planner has nothing to do, and in [`Db::wait_for_backfill`].

use std::ops::Bound;
use std::sync::Arc;

use crate::compaction::OutputRun;
use crate::db::{Db, FilterSizing, Inner, TableJob, lock, projected_entries, try_write, write};
use crate::error::Result;
use crate::value_def::IndexRecord;
use crate::version::{LiveTable, Version};

/// A version, and one of its tables (with its run) to backfill.
type Lacking = (Arc<Version>, u64, Arc<LiveTable>);

/// Whether a backfill may wait for the compaction lock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(in crate::db) enum LockWait {
    /// Wait: a caller that asked for the backfill ([`Db::wait_for_backfill`]).
    Wait,
    /// Give up while compactions run: a background thread, which tries
    /// again when one ends. A thread waiting for the lock alone would hold
    /// off every compaction that has not started yet (`std`'s `RwLock`
    /// makes new readers queue behind a waiting writer).
    GiveUp,
}

impl Inner {
    /// Rewrites one table that lacks the leaf of a live index; `false`
    /// when every table has every leaf (or there is no index), or when
    /// `wait` is [`LockWait::GiveUp`] and compactions are under way.
    pub(in crate::db) fn backfill_once(&self, wait: LockWait) -> Result<bool> {
        // Looked for before the lock: with nothing to do (no index, the
        // usual case) the lock is never asked for.
        if self.table_lacking_a_leaf()?.is_none() {
            return Ok(false);
        }
        let _alone = match wait {
            LockWait::Wait => write(&self.compaction_lock),
            LockWait::GiveUp => match try_write(&self.compaction_lock) {
                Some(alone) => alone,
                None => return Ok(false),
            },
        };
        // Looked for again: compactions may have rewritten the table since.
        let Some((version, run, table)) = self.table_lacking_a_leaf()? else {
            return Ok(false);
        };
        let _in_flight = {
            let mut state = lock(&self.state);
            Self::check_background_error(&state)?;
            self.start_job(&mut state, None)
        };
        self.rewrite(&version, run, &table).map(|()| true)
    }

    /// The current version, and its first table (and that table's run)
    /// without the leaf of a live index.
    fn table_lacking_a_leaf(&self) -> Result<Option<Lacking>> {
        let indexes = self.indexes.load_full();
        if indexes.is_empty() {
            return Ok(None);
        }
        let version = Arc::clone(&self.current().version);
        Ok(missing_leaf(&version, &indexes)?.map(|(run, table)| (version, run, table)))
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
            TableJob::Backfill,
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
        self.inner.writable()?;
        self.inner.wait_until_idle()?;
        while self.inner.backfill_once(LockWait::Wait)? {}
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, mpsc};
    use std::time::Duration;

    use super::LockWait;
    use crate::db::{Inner, read};
    use crate::fs::FaultInjectionFs;
    use crate::value_def::{Extractor, IndexDef};
    use crate::{Db, Result};

    /// What a background backfill returns while a compaction holds the
    /// compaction lock shared, or `None` if it was still waiting after 10 s.
    fn backfill_beside_a_compaction(db: &Db) -> Option<Result<bool>> {
        let inner: Arc<Inner> = Arc::clone(&db.inner);
        let _merging = read(&inner.compaction_lock);
        let (done, outcome) = mpsc::channel();
        let backfill = Arc::clone(&inner);
        std::thread::spawn(move || done.send(backfill.backfill_once(LockWait::GiveUp)));
        outcome.recv_timeout(Duration::from_secs(10)).ok()
    }

    /// A compaction thread looking for backfill work once waited for the
    /// compaction lock alone, with no index at all, and while it waited no
    /// other compaction could start (a waiting writer holds off new
    /// readers): one long merge stopped every other level.
    fn open() -> Db {
        Db::builder("/db")
            .file_system(Arc::new(FaultInjectionFs::new()))
            .background_threads(false)
            .open()
            .unwrap()
    }

    #[test]
    fn a_backfill_with_nothing_to_do_does_not_wait_for_a_compaction() {
        let db = open();
        db.insert(b"k", b"v").unwrap();
        db.flush().unwrap();
        let outcome = backfill_beside_a_compaction(&db);
        assert!(matches!(outcome, Some(Ok(false))), "{outcome:?}");
    }

    /// With work to do, a background backfill gives up while compactions
    /// run and tries again when one ends; only `wait_for_backfill` waits.
    #[test]
    fn a_background_backfill_gives_up_while_compactions_run() {
        let db = open();
        db.insert(b"k", b"a,b").unwrap();
        db.flush().unwrap();
        db.add_index(IndexDef::new("second", Extractor::delimited(1, b',')))
            .unwrap();
        let outcome = backfill_beside_a_compaction(&db);
        assert!(matches!(outcome, Some(Ok(false))), "{outcome:?}");
        assert!(
            db.inner.backfill_once(LockWait::Wait).unwrap(),
            "no backfill to do"
        );
        assert!(!db.inner.backfill_once(LockWait::Wait).unwrap());
    }
}
