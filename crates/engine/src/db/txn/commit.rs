//! The database's side of transactions: beginning one under the writer
//! lock, and committing one (validation, WAL write, recording its write
//! set) in a single critical section of that lock.

use std::sync::Arc;

use sift_filter::KeyHash;

use crate::batch::WriteBatch;
use crate::error::Result;
use crate::key::SeqNo;
use crate::options::WriteOptions;
use crate::txn::{CommittedSet, Footprint, TxnCounters, TxnStats, ValidationCounts};

use super::Transaction;
use crate::db::{Db, Inner, Snapshot, Writer, lock};

impl Db {
    /// Starts a transaction reading at the current state. See
    /// [`Transaction`] and `docs/transactions.md`.
    #[must_use]
    pub fn transaction(&self) -> Transaction {
        // Under the writer lock, no write can fall between the snapshot
        // and the registration: every commit after `seq` is recorded.
        let mut writer = lock(&self.inner.writer);
        let snapshot = Snapshot::new(Arc::clone(&self.inner));
        writer.txns.begin(snapshot.seq());
        let precheck = writer.txns.precheck();
        drop(writer);
        self.inner.txn_counters.begin();
        let limit = self.inner.options.txn_max_bytes;
        Transaction::new(Arc::clone(&self.inner), snapshot, precheck, limit)
    }

    /// Transaction counters since open: commits, conflicts, and how often
    /// the Bloom pre-checks spared an exact look-up.
    #[must_use]
    pub fn txn_stats(&self) -> TxnStats {
        let retained = lock(&self.inner.writer).txns.retained_sets();
        self.inner.txn_counters.snapshot(retained)
    }
}

impl Inner {
    /// The transaction counters.
    pub(super) fn txn_counters(&self) -> &TxnCounters {
        &self.txn_counters
    }

    /// Unregisters a transaction that read at `snapshot` and ends without
    /// writing.
    pub(super) fn end_txn(&self, snapshot: SeqNo) {
        let pruned = lock(&self.writer).txns.end(snapshot);
        // Freed after the lock is released: writers do not wait for it.
        drop(pruned);
    }

    /// Validates a transaction and, if no commit since its snapshot
    /// conflicts, logs and applies `batch` and records `written` (its keys,
    /// sorted, with their hashes) for the transactions still active. The
    /// transaction is unregistered whatever the outcome. Returns the
    /// sequence number of its last write.
    pub(super) fn commit_txn<V>(
        &self,
        footprint: &Footprint<'_, V>,
        batch: &WriteBatch,
        written: Vec<(Vec<u8>, KeyHash)>,
        counts: &mut ValidationCounts,
    ) -> Result<SeqNo> {
        batch.validate()?;
        let mut writer = lock(&self.writer);
        let applied = writer
            .txns
            .validate(footprint, counts)
            .and_then(|()| self.write_locked(&mut writer, batch, WriteOptions::default()));
        let pruned = writer.txns.end(footprint.snapshot);
        let result = applied.map(|()| {
            let last_seq = writer.last_seq;
            let first_seq = last_seq + 1 - batch.len() as SeqNo;
            let precheck = writer.txns.precheck();
            writer
                .txns
                .record(|| CommittedSet::new(first_seq, written, precheck));
            last_seq
        });
        // Freed after the lock is released: writers do not wait for it.
        drop(writer);
        drop(pruned);
        result
    }

    /// After a plain write (not a transaction's) of `batch`: records its
    /// keys if a transaction is active, so that it conflicts with them.
    pub(in crate::db) fn record_plain_write(&self, writer: &mut Writer, batch: &WriteBatch) {
        if !writer.txns.any_active() {
            return;
        }
        let first_seq = writer.last_seq + 1 - batch.len() as SeqNo;
        let precheck = writer.txns.precheck();
        writer
            .txns
            .record(|| CommittedSet::from_batch(first_seq, batch, precheck));
    }
}
