//! The database's side of transactions: beginning one under the writer
//! lock, and committing one (validation, WAL write, recording its write
//! set) in a single critical section of that lock.

use std::sync::Arc;

use sift_filter::KeyHash;

use crate::batch::WriteBatch;
use crate::error::Result;
use crate::key::SeqNo;
use crate::txn::{CommittedSet, Footprint, TxnCounters, TxnStats, ValidationCounts};

use super::Transaction;
use crate::db::write::TxnSteps;
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
        let mut steps = CommitSteps {
            footprint,
            counts,
            written: Some(written),
            pruned: Vec::new(),
        };
        let first_seq = self.write_txn(batch, &mut steps);
        // Freed after the writer lock is released: writers do not wait for it.
        drop(steps);
        first_seq.map(|first| first + batch.len() as SeqNo - 1)
    }

    /// After a plain write (not a transaction's) of `batch` from
    /// `first_seq` on: records its keys if a transaction is active, so that
    /// it conflicts with them.
    pub(in crate::db) fn record_plain_write(
        &self,
        writer: &mut Writer,
        batch: &WriteBatch,
        first_seq: SeqNo,
    ) {
        if !writer.txns.any_active() {
            return;
        }
        let precheck = writer.txns.precheck();
        writer
            .txns
            .record(|| CommittedSet::from_batch(first_seq, batch, precheck));
    }
}

/// A transaction's commit, done under the writer lock by the group's
/// leader (the transaction's own thread: transactions lead their group).
struct CommitSteps<'a, 'f, V> {
    footprint: &'a Footprint<'f, V>,
    counts: &'a mut ValidationCounts,
    /// Its keys, recorded once it is logged.
    written: Option<Vec<(Vec<u8>, KeyHash)>>,
    /// Write sets no active transaction needs any more.
    pruned: Vec<CommittedSet>,
}

impl<V> TxnSteps for CommitSteps<'_, '_, V> {
    fn validate(&mut self, writer: &mut Writer) -> Result<()> {
        let valid = writer.txns.validate(self.footprint, self.counts);
        // Unregistered whatever the outcome, and before its own write set
        // is recorded: with no transaction left active, none is kept.
        self.pruned = writer.txns.end(self.footprint.snapshot);
        valid
    }

    fn logged(&mut self, writer: &mut Writer, first_seq: SeqNo) {
        let written = self.written.take().unwrap_or_default();
        let precheck = writer.txns.precheck();
        writer
            .txns
            .record(|| CommittedSet::new(first_seq, written, precheck));
    }
}
