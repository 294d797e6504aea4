//! Transaction statistics: live atomic counters and the public snapshot.

use std::sync::atomic::{AtomicU64, Ordering};

use super::history::ValidationCounts;
use super::keyset::LookupCounts;

/// The live counters; a transaction counts its own-set look-ups locally and
/// adds them here once, when it ends.
#[derive(Debug, Default)]
pub(crate) struct TxnCounters {
    begun: AtomicU64,
    committed: AtomicU64,
    conflicts: AtomicU64,
    rolled_back: AtomicU64,
    lookup_rejections: AtomicU64,
    lookup_exact: AtomicU64,
    validation_rejections: AtomicU64,
    validation_exact: AtomicU64,
}

fn add(counter: &AtomicU64, n: u64) {
    if n > 0 {
        counter.fetch_add(n, Ordering::Relaxed);
    }
}

/// How a transaction ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Outcome {
    Committed,
    Conflict,
    /// Rolled back, dropped, or failed other than by a conflict.
    RolledBack,
}

impl TxnCounters {
    pub(crate) fn begin(&self) {
        add(&self.begun, 1);
    }

    /// Adds what one transaction counted.
    pub(crate) fn end(
        &self,
        outcome: Outcome,
        lookups: LookupCounts,
        validation: ValidationCounts,
    ) {
        add(
            match outcome {
                Outcome::Committed => &self.committed,
                Outcome::Conflict => &self.conflicts,
                Outcome::RolledBack => &self.rolled_back,
            },
            1,
        );
        add(&self.lookup_rejections, lookups.rejections);
        add(&self.lookup_exact, lookups.exact);
        add(&self.validation_rejections, validation.rejections);
        add(&self.validation_exact, validation.exact);
    }

    pub(crate) fn snapshot(&self, retained_sets: usize) -> TxnStats {
        let get = |counter: &AtomicU64| counter.load(Ordering::Relaxed);
        TxnStats {
            begun: get(&self.begun),
            committed: get(&self.committed),
            conflicts: get(&self.conflicts),
            rolled_back: get(&self.rolled_back),
            lookup_rejections: get(&self.lookup_rejections),
            lookup_exact_checks: get(&self.lookup_exact),
            validation_rejections: get(&self.validation_rejections),
            validation_exact_checks: get(&self.validation_exact),
            retained_commits: retained_sets,
        }
    }
}

/// What [`Db::txn_stats`](crate::Db::txn_stats) reports: counters since
/// open, summed over transactions that have ended (a live transaction's
/// look-ups are added when it ends).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct TxnStats {
    /// Transactions started.
    pub begun: u64,
    /// Transactions committed.
    pub committed: u64,
    /// Commits refused with [`Error::Conflict`](crate::Error::Conflict).
    pub conflicts: u64,
    /// Transactions rolled back or dropped without committing.
    pub rolled_back: u64,
    /// Own-set look-ups (read-your-own-writes, repeated reads, inserts)
    /// that the Bloom pre-check answered alone: exact set skipped.
    pub lookup_rejections: u64,
    /// Own-set look-ups that went to the exact set.
    pub lookup_exact_checks: u64,
    /// Validation probes a committed set's (or the transaction's) filter
    /// answered "not here".
    pub validation_rejections: u64,
    /// Validation probes checked exactly (after a "maybe", or for sets too
    /// small to have a filter).
    pub validation_exact_checks: u64,
    /// Committed write sets retained now for active transactions.
    pub retained_commits: usize,
}
