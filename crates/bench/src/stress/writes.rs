//! The workers' writes: puts, deletes and write batches, each recorded in
//! the expected-state file before it is made and after it is acknowledged.
//!
//! One write in [`SYNC_ONE_IN`] asks for `sync`; the others are handed to
//! the operating system only. A process kill must lose neither: the engine
//! promises that an acknowledged write "survives a process crash" either
//! way (`WriteOptions::sync`, `WritableFile::flush`).

use siftdb::{WriteBatch, WriteOptions};

use super::counts::Kind;
use super::worker::Worker;

/// One write in this many is synced: enough to exercise the path, few
/// enough that `fsync` does not dominate the run.
const SYNC_ONE_IN: u64 = 16;

/// Largest write batch (distinct keys).
const MAX_BATCH: u64 = 8;

/// Share of a batch's operations that are inserts (the rest removals), in
/// percent.
const BATCH_INSERT_PERCENT: u64 = 80;

impl Worker<'_> {
    /// Whether the next write syncs (and counts it).
    fn sync(&mut self) -> bool {
        let sync = self.rng.below(SYNC_ONE_IN) == 0;
        if sync {
            self.counts.bump(Kind::SyncWrite);
        }
        sync
    }

    /// Sets one key to its next version.
    pub fn put(&mut self) -> anyhow::Result<()> {
        let key = self.pick();
        self.put_key(key)?;
        self.counts.bump(Kind::Put);
        Ok(())
    }

    /// Sets key `index` to its next version, synced or not.
    pub fn put_key(&mut self, index: u32) -> anyhow::Result<()> {
        let entries = self.begin(&[(index, true)])?;
        let key = self.space.key(index);
        let value = self.space.value(index, entries[0].new.version());
        if self.sync() {
            let mut batch = WriteBatch::new();
            batch.insert(&key, &value);
            self.db.write_with(&batch, WriteOptions::sync())?;
        } else {
            self.db.insert(&key, &value)?;
        }
        self.acknowledged(&entries)
    }

    /// Removes one key (a new version that is a deletion).
    pub fn delete(&mut self) -> anyhow::Result<()> {
        let index = self.pick();
        let entries = self.begin(&[(index, false)])?;
        let key = self.space.key(index);
        if self.sync() {
            let mut batch = WriteBatch::new();
            batch.remove(&key);
            self.db.write_with(&batch, WriteOptions::sync())?;
        } else {
            self.db.remove(&key)?;
        }
        self.counts.bump(Kind::Delete);
        self.acknowledged(&entries)
    }

    /// Writes 2 to [`MAX_BATCH`] distinct keys in one atomic batch.
    pub fn batch(&mut self) -> anyhow::Result<()> {
        let n = 2 + self.rng.below(MAX_BATCH - 1) as usize;
        let keys: Vec<(u32, bool)> = self
            .pick_distinct(n)
            .into_iter()
            .map(|k| (k, self.rng.below(100) < BATCH_INSERT_PERCENT))
            .collect();
        let entries = self.begin(&keys)?;
        let mut batch = WriteBatch::new();
        for e in &entries {
            let key = self.space.key(e.key);
            if e.new.present() {
                batch.insert(&key, self.space.value(e.key, e.new.version()));
            } else {
                batch.remove(&key);
            }
        }
        let options = if self.sync() {
            WriteOptions::sync()
        } else {
            WriteOptions::no_sync()
        };
        self.db.write_with(&batch, options)?;
        self.counts.bump(Kind::Batch);
        self.acknowledged(&entries)
    }
}
