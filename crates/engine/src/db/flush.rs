//! Writing tables (flush and compaction share it) and installing the
//! version edits that add them.

use std::collections::BTreeMap;
use std::sync::Arc;

use sift_filter::KeyHash;

use crate::compaction::OutputRun;
use crate::error::{Error, Result};
use crate::key::Entry;
use crate::manifest::{TableMeta, VersionEdit, filenames};
use crate::sstable::{INDEX_PARTITION_BYTES, TableBuilder, TableOptions};
use crate::version::{LiveTable, Version};

use super::{Inner, SuperVersion, lock};

/// Entries per level once tables holding `incoming` entries join `level`
/// and the tables `removed` (their level, entries) leave: the shape the
/// filter policy plans for.
pub(super) fn projected_entries(
    version: &Version,
    level: usize,
    incoming: u64,
    removed: impl IntoIterator<Item = (usize, u64)>,
) -> Vec<u64> {
    let mut entries = version.entries_per_level();
    entries.resize(entries.len().max(level + 1), 0);
    for (at, n) in removed {
        if let Some(slot) = entries.get_mut(at) {
            *slot = slot.saturating_sub(n);
        }
    }
    entries[level] += incoming;
    entries
}

/// How the filters of the tables a write makes are sized.
pub(super) struct FilterSizing {
    /// Entries per level once the write is installed ([`projected_entries`]).
    pub projected: Vec<u64>,
    /// Bits per key added to the policy's share for the level: from the
    /// lookups the written keys saw, for a compaction; 0 otherwise.
    pub bits_shift: f64,
}

impl FilterSizing {
    /// Sized by level alone.
    pub(super) fn by_level(projected: Vec<u64>) -> Self {
        Self {
            projected,
            bits_shift: 0.0,
        }
    }
}

/// Tables written by one flush or compaction, not yet in any version.
/// What [`Inner::write_tables`] writes for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum TableJob {
    /// A memtable's flush: done before shutdown ends.
    Flush,
    /// A compaction: abandoned at shutdown, and its bytes counted in
    /// `compaction_bytes_written` as each table is finished, so a long one
    /// shows its progress (`sift compact`'s bar).
    Compaction,
    /// A backfill's rewrite of one table: abandoned at shutdown.
    Backfill,
}

pub(super) struct Outputs {
    pub metas: Vec<TableMeta>,
    pub opened: BTreeMap<u64, Arc<LiveTable>>,
}

impl Inner {
    /// Flushes the oldest frozen memtable to a level-0 table. `false` when
    /// there was none.
    pub(super) fn flush_oldest(&self) -> Result<bool> {
        let _one_at_a_time = lock(&self.flush_lock);
        let current = self.current();
        let Some(memtable) = current.immutables.last().cloned() else {
            return Ok(false);
        };
        let entries = memtable.entries();
        let id = self.new_file_number();
        let projected = projected_entries(&current.version, 0, memtable.len() as u64, []);
        let outputs = self.write_tables(
            entries,
            0,
            OutputRun::New,
            Some(id),
            &FilterSizing::by_level(projected),
            u64::MAX,
            TableJob::Flush,
        )?;
        let mut state = lock(&self.state);
        let now = self.current();
        // The WAL of the next memtable to flush is the oldest still needed.
        let remaining: Vec<_> = now
            .immutables
            .iter()
            .filter(|m| !Arc::ptr_eq(m, &memtable))
            .cloned()
            .collect();
        let log_number = remaining.last().unwrap_or(&now.active).wal_number();
        let written = outputs.metas.iter().map(|m| m.file_size).sum();
        let edit = VersionEdit {
            log_number: Some(log_number),
            last_seq: Some(memtable.max_seq()),
            added: outputs.metas,
            ..VersionEdit::default()
        };
        let obsolete_wals = state.versions.log_number()..log_number;
        let version = self.log_and_apply(&mut state, edit, &outputs.opened)?;
        self.install(SuperVersion {
            active: Arc::clone(&now.active),
            immutables: remaining,
            version,
        });
        drop(state);
        for number in obsolete_wals {
            // WAL numbers share the file-number space with tables: most of
            // this range names no WAL. A leftover is removed at next open.
            let _ = self.options.fs.remove(&self.file(&filenames::wal(number)));
        }
        self.counters.with(|c| {
            c.flushes.add(1);
            c.level(0).bytes_written.add(written);
        });
        Ok(true)
    }

    /// Freezes the active memtable if it holds anything, then flushes every
    /// frozen memtable.
    pub(super) fn flush_all(&self) -> Result<()> {
        self.writable()?;
        // The WAL number of the newest memtable to flush: it and every
        // older one, not the ones writers freeze meanwhile, which would
        // keep the queue from ever draining under sustained writes.
        let newest = {
            let mut writer = lock(&self.writer);
            Self::check_background_error(&lock(&self.state))?;
            if !self.current().active.is_empty() {
                self.rotate(&mut writer)?;
            }
            self.current().immutables.first().map(|m| m.wal_number())
        };
        let Some(newest) = newest else {
            return Ok(());
        };
        let flushed = |inner: &Self| {
            // Flushed oldest first: done once none of them is left.
            inner
                .current()
                .immutables
                .last()
                .is_none_or(|oldest| oldest.wal_number() > newest)
        };
        if self.options.background_threads {
            self.wait_until(|inner, _| flushed(inner))
        } else {
            while !flushed(self) && self.flush_inline()? {}
            Ok(())
        }
    }

    /// A fresh file number.
    pub(super) fn new_file_number(&self) -> u64 {
        lock(&self.state).versions.new_file_number()
    }

    /// Writes `entries` (sorted, already filtered) as tables of `level`,
    /// cut near `target_bytes` at user-key boundaries. The first table gets
    /// `first_id` if given. `run` names the run they join. `sizing` is
    /// what the filter policy sizes their filters by.
    #[expect(
        clippy::too_many_arguments,
        reason = "one call site each for flush and compaction; a struct would only rename them"
    )]
    pub(super) fn write_tables(
        &self,
        entries: impl Iterator<Item = Result<Entry>>,
        level: usize,
        run: OutputRun,
        first_id: Option<u64>,
        sizing: &FilterSizing,
        target_bytes: u64,
        job: TableJob,
    ) -> Result<Outputs> {
        let mut outputs = Outputs {
            metas: Vec::new(),
            opened: BTreeMap::new(),
        };
        let mut builder: Option<(u64, TableBuilder)> = None;
        let mut run_id = match run {
            OutputRun::Existing(id) => Some(id),
            OutputRun::New => None,
        };
        let mut last_user_key: Option<Vec<u8>> = None;
        let mut hash = KeyHash::of(b"");
        let policy = &self.options.filter_policy;
        let filter = policy
            .choose(level, &sizing.projected)
            .shifted(sizing.bits_shift);
        let scan = policy.choose_scan(level, &sizing.projected);
        let value_indexes: Arc<[_]> = Arc::from(self.indexes.load().as_slice());
        let mut first_id = first_id;
        for (count, entry) in entries.enumerate() {
            let entry = entry?;
            if job != TableJob::Flush && count % 4096 == 0 && lock(&self.state).shutting_down {
                self.discard(&outputs, builder.as_ref().map(|(id, _)| *id));
                return Err(Error::Background("shutting down".into()));
            }
            let new_user_key = last_user_key.as_deref() != Some(&entry.key.user_key[..]);
            if new_user_key {
                hash = KeyHash::of(&entry.key.user_key);
                let full = builder
                    .as_ref()
                    .is_some_and(|(_, b)| b.estimated_size() >= target_bytes);
                if full && let Some((id, done)) = builder.take() {
                    self.finish_table(done, id, level, &mut run_id, &mut outputs)?;
                    self.count_written(job, &outputs);
                }
                last_user_key = Some(entry.key.user_key.clone());
            }
            if builder.is_none() {
                let id = first_id.take().unwrap_or_else(|| self.new_file_number());
                let path = self.file(&filenames::table(id));
                let file = self
                    .options
                    .fs
                    .create(&path)
                    .map_err(|e| Error::io(&path, e))?;
                let options = TableOptions {
                    block_bytes: self.options.block_bytes,
                    restart_interval: self.options.restart_interval,
                    compression: self.options.compression,
                    filter,
                    partition_keys: self.options.filter_policy.partition_keys,
                    index_partition_bytes: INDEX_PARTITION_BYTES,
                    value_indexes: Arc::clone(&value_indexes),
                    scan: scan.clone(),
                };
                builder = Some((id, TableBuilder::new(file, path, options)));
            }
            if let Some((_, current)) = builder.as_mut() {
                current.add(&entry.key, hash, &entry.value)?;
            }
        }
        if let Some((id, done)) = builder {
            self.finish_table(done, id, level, &mut run_id, &mut outputs)?;
            self.count_written(job, &outputs);
        }
        // The edit naming these tables must never reach the manifest before
        // their names are durable.
        let dir = &self.options.path;
        self.options
            .fs
            .sync_dir(dir)
            .map_err(|e| Error::io(dir, e))?;
        Ok(outputs)
    }

    /// Counts the table `job` has just finished, the last of `outputs`.
    fn count_written(&self, job: TableJob, outputs: &Outputs) {
        if let (TableJob::Compaction, Some(meta)) = (job, outputs.metas.last()) {
            let bytes = meta.file_size;
            self.counters
                .with(|c| c.compaction_bytes_written.add(bytes));
        }
    }

    fn finish_table(
        &self,
        builder: TableBuilder,
        id: u64,
        level: usize,
        run_id: &mut Option<u64>,
        outputs: &mut Outputs,
    ) -> Result<()> {
        let props = builder.finish()?;
        let path = self.file(&filenames::table(id));
        let table = Arc::new(self.tables.open_table(path, id, level as u32)?);
        let meta = TableMeta {
            id,
            level: level as u32,
            run: *run_id.get_or_insert(id),
            file_size: props.file_size,
            entries: props.entries,
            smallest: props.smallest.clone(),
            largest: props.largest.clone(),
            min_seq: props.min_seq,
            max_seq: props.max_seq,
        };
        let live = Arc::new(LiveTable::written(meta.clone(), table, &self.tables));
        outputs.opened.insert(id, live);
        outputs.metas.push(meta);
        Ok(())
    }

    /// Deletes tables written by an abandoned flush or compaction.
    pub(super) fn discard(&self, outputs: &Outputs, unfinished: Option<u64>) {
        for id in outputs.metas.iter().map(|m| m.id).chain(unfinished) {
            let _ = self.options.fs.remove(&self.file(&filenames::table(id)));
        }
    }
}
