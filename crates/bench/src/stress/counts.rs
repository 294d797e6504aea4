//! What the workers count, per kind of operation: kept in each thread's
//! expected-state file so that the counts of a killed child survive it.

/// A counted event. The discriminant is the counter's slot in the file:
/// append new kinds, never reorder.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// Single-key insert.
    Put,
    /// Single-key removal.
    Delete,
    /// Multi-key write batch.
    Batch,
    /// Point read of an own key, checked exactly.
    Get,
    /// Point read of another thread's key, checked to be well formed.
    ForeignGet,
    /// Bounded range scan, checked exactly.
    Range,
    /// Prefix scan, checked exactly.
    Prefix,
    /// Snapshot taken, then read after later writes, checked exactly.
    Snapshot,
    /// Search on the value index, checked exactly.
    Find,
    /// Transaction that committed.
    TxnCommit,
    /// Transaction that read other threads' keys and met a conflict.
    TxnConflict,
    /// Transaction whose read key was written before its commit, which
    /// therefore had to conflict (and did).
    TxnForcedConflict,
    /// Writes (of any kind) made with `sync`.
    SyncWrite,
    /// Memtable flushes (sampled from the engine's statistics).
    Flush,
    /// Compactions (sampled from the engine's statistics).
    Compaction,
}

impl Kind {
    /// Every kind, in slot order.
    pub const ALL: [Self; 15] = [
        Self::Put,
        Self::Delete,
        Self::Batch,
        Self::Get,
        Self::ForeignGet,
        Self::Range,
        Self::Prefix,
        Self::Snapshot,
        Self::Find,
        Self::TxnCommit,
        Self::TxnConflict,
        Self::TxnForcedConflict,
        Self::SyncWrite,
        Self::Flush,
        Self::Compaction,
    ];

    /// Its name in the JSON report.
    pub fn name(self) -> &'static str {
        match self {
            Self::Put => "puts",
            Self::Delete => "deletes",
            Self::Batch => "batches",
            Self::Get => "gets",
            Self::ForeignGet => "foreign_gets",
            Self::Range => "ranges",
            Self::Prefix => "prefixes",
            Self::Snapshot => "snapshots",
            Self::Find => "finds",
            Self::TxnCommit => "txn_commits",
            Self::TxnConflict => "txn_conflicts",
            Self::TxnForcedConflict => "txn_forced_conflicts",
            Self::SyncWrite => "sync_writes",
            Self::Flush => "flushes",
            Self::Compaction => "compactions",
        }
    }

    /// Whether it is an operation of the workload (not a property of one,
    /// nor the engine's own work).
    pub fn is_op(self) -> bool {
        !matches!(self, Self::SyncWrite | Self::Flush | Self::Compaction)
    }
}

/// One counter per [`Kind`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counts(pub [u64; Kind::ALL.len()]);

impl Counts {
    /// Adds `n` to `kind`.
    pub fn add(&mut self, kind: Kind, n: u64) {
        self.0[kind as usize] += n;
    }

    /// Adds one to `kind`.
    pub fn bump(&mut self, kind: Kind) {
        self.add(kind, 1);
    }

    /// The count of `kind`.
    pub fn get(&self, kind: Kind) -> u64 {
        self.0[kind as usize]
    }

    /// Operations of every kind.
    pub fn ops(&self) -> u64 {
        Kind::ALL
            .iter()
            .filter(|k| k.is_op())
            .map(|&k| self.get(k))
            .sum()
    }

    /// The sum of two counts.
    pub fn plus(mut self, other: &Self) -> Self {
        for (a, b) in self.0.iter_mut().zip(other.0) {
            *a += b;
        }
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_follow_the_list() {
        for (slot, kind) in Kind::ALL.iter().enumerate() {
            assert_eq!(*kind as usize, slot, "{}", kind.name());
        }
    }
}
