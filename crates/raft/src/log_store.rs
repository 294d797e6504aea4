//! [`LogStore`]: openraft's log, vote and committed log id in a Sift
//! database. Every change is one synced write batch, made before the call
//! returns (appends: before openraft's callback), so what openraft is told
//! is durable survives a crash, and a crash mid-change leaves all of it or
//! none.

use std::fmt::Debug;
use std::ops::{Bound, RangeBounds};
use std::path::Path;
use std::sync::Arc;

use openraft::storage::{LogFlushed, LogState, RaftLogStorage};
use openraft::{
    AnyError, Entry, ErrorSubject, ErrorVerb, LogId, OptionalSend, RaftLogReader, StorageError,
    StorageIOError, Vote,
};
use serde::Serialize;
use serde::de::DeserializeOwned;
use siftdb::{Db, WalRecovery, WriteBatch, WriteOptions};

use crate::codec::{decode, encode};
use crate::keys;
use crate::purge_gate::PurgeWait;
use crate::types::{NodeId, TypeConfig};

type StorageResult<T> = Result<T, StorageError<NodeId>>;

/// The Raft log of one node. Clones share the database (openraft reads the
/// log from its replication tasks through one).
#[derive(Clone, Debug)]
pub struct LogStore {
    db: Arc<Db>,
    /// Set when the log belongs to a state machine: a purge waits until
    /// it is safe.
    purges: Option<PurgeWait>,
}

impl LogStore {
    /// Opens (or creates) the log in `dir`.
    ///
    /// The log's WAL is recovered with absolute consistency: only a torn
    /// last record (a change never acknowledged) is dropped. Damage before
    /// it fails the open, because dropping the records after it would
    /// forget synced votes and entries, and a node that forgot them could
    /// vote twice in a term or lose a committed entry.
    ///
    /// # Errors
    /// What [`Db::open`] returns; [`siftdb::Error::Corruption`] for a
    /// damaged log.
    pub fn open(dir: &Path) -> StorageResult<Self> {
        let db = Db::builder(dir)
            .wal_recovery(WalRecovery::AbsoluteConsistency)
            .open()
            .map_err(|e| io_error(ErrorSubject::Store, ErrorVerb::Read, &e))?;
        Ok(Self {
            db: Arc::new(db),
            purges: None,
        })
    }

    /// Makes every purge wait on the state machine's snapshots
    /// (`purge_gate`).
    pub(crate) fn gate_purges(&mut self, wait: PurgeWait) {
        self.purges = Some(wait);
    }

    /// The index of the last purged entry.
    pub(crate) fn purged_index(&self) -> StorageResult<Option<u64>> {
        let purged: Option<LogId<NodeId>> = self.get(keys::PURGED, ErrorSubject::Logs)?;
        Ok(purged.map(|id| id.index))
    }

    /// Writes `batch`, synced.
    fn write(&self, batch: &WriteBatch, subject: ErrorSubject<NodeId>) -> StorageResult<()> {
        self.db
            .write_with(batch, WriteOptions::sync())
            .map_err(|e| io_error(subject, ErrorVerb::Write, &e))
    }

    /// Writes one record, synced.
    fn put<T: Serialize>(
        &self,
        key: &[u8],
        value: &T,
        subject: ErrorSubject<NodeId>,
    ) -> StorageResult<()> {
        let bytes = encode(value).map_err(|e| io_error(subject.clone(), ErrorVerb::Write, &e))?;
        let mut batch = WriteBatch::new();
        batch.insert(key, &bytes);
        self.write(&batch, subject)
    }

    /// Reads one record.
    fn get<T: DeserializeOwned>(
        &self,
        key: &[u8],
        subject: ErrorSubject<NodeId>,
    ) -> StorageResult<Option<T>> {
        let read = |e: &dyn std::error::Error| io_error(subject.clone(), ErrorVerb::Read, e);
        match self.db.get(key).map_err(|e| read(&e))? {
            Some(bytes) => Ok(Some(decode(&bytes).map_err(|e| read(&e))?)),
            None => Ok(None),
        }
    }

    /// Deletes the entries with indexes in `range`, and writes `also`, in one
    /// synced batch.
    fn delete_entries(
        &self,
        range: (Bound<u64>, Bound<u64>),
        mut batch: WriteBatch,
    ) -> StorageResult<()> {
        for item in self.db.range(entry_keys(range.0, range.1)) {
            let (key, _) = item.map_err(|e| io_error(ErrorSubject::Logs, ErrorVerb::Read, &e))?;
            batch.remove(&key);
        }
        self.write(&batch, ErrorSubject::Logs)
    }

    /// The last entry's log id, if any entry is left.
    fn last_log_id(&self) -> StorageResult<Option<LogId<NodeId>>> {
        let all = keys::entry(0)..=keys::entry(u64::MAX);
        match self.db.range(all).next_back() {
            Some(item) => {
                let (_, bytes) =
                    item.map_err(|e| io_error(ErrorSubject::Logs, ErrorVerb::Read, &e))?;
                let entry: Entry<TypeConfig> = decode(&bytes)
                    .map_err(|e| io_error(ErrorSubject::Logs, ErrorVerb::Read, &e))?;
                Ok(Some(entry.log_id))
            }
            None => Ok(None),
        }
    }
}

/// The keys of the entries with indexes within the bounds (and no other
/// record of the log).
fn entry_keys(lower: Bound<u64>, upper: Bound<u64>) -> (Bound<[u8; 9]>, Bound<[u8; 9]>) {
    let lower = match lower {
        Bound::Unbounded => Bound::Included(0),
        bound => bound,
    };
    let upper = match upper {
        Bound::Unbounded => Bound::Included(u64::MAX),
        bound => bound,
    };
    (lower.map(keys::entry), upper.map(keys::entry))
}

/// A storage error about `subject`, from any error.
pub(crate) fn io_error(
    subject: ErrorSubject<NodeId>,
    verb: ErrorVerb,
    error: &(impl std::error::Error + ?Sized),
) -> StorageError<NodeId> {
    StorageIOError::new(subject, verb, AnyError::error(error.to_string())).into()
}

impl RaftLogReader<TypeConfig> for LogStore {
    async fn try_get_log_entries<RB: RangeBounds<u64> + Clone + Debug + OptionalSend>(
        &mut self,
        range: RB,
    ) -> StorageResult<Vec<Entry<TypeConfig>>> {
        let range = entry_keys(range.start_bound().cloned(), range.end_bound().cloned());
        self.db
            .range(range)
            .map(|item| {
                let (_, bytes) =
                    item.map_err(|e| io_error(ErrorSubject::Logs, ErrorVerb::Read, &e))?;
                decode(&bytes).map_err(|e| io_error(ErrorSubject::Logs, ErrorVerb::Read, &e))
            })
            .collect()
    }
}

impl RaftLogStorage<TypeConfig> for LogStore {
    type LogReader = Self;

    async fn get_log_state(&mut self) -> StorageResult<LogState<TypeConfig>> {
        let last_purged_log_id = self.get(keys::PURGED, ErrorSubject::Logs)?;
        let last_log_id = self.last_log_id()?.or(last_purged_log_id);
        Ok(LogState {
            last_purged_log_id,
            last_log_id,
        })
    }

    async fn get_log_reader(&mut self) -> Self::LogReader {
        self.clone()
    }

    async fn save_vote(&mut self, vote: &Vote<NodeId>) -> StorageResult<()> {
        self.put(keys::VOTE, vote, ErrorSubject::Vote)
    }

    async fn read_vote(&mut self) -> StorageResult<Option<Vote<NodeId>>> {
        self.get(keys::VOTE, ErrorSubject::Vote)
    }

    async fn save_committed(&mut self, committed: Option<LogId<NodeId>>) -> StorageResult<()> {
        self.put(keys::COMMITTED, &committed, ErrorSubject::Store)
    }

    async fn read_committed(&mut self) -> StorageResult<Option<LogId<NodeId>>> {
        Ok(self
            .get::<Option<LogId<NodeId>>>(keys::COMMITTED, ErrorSubject::Store)?
            .flatten())
    }

    async fn append<I>(&mut self, entries: I, callback: LogFlushed<TypeConfig>) -> StorageResult<()>
    where
        I: IntoIterator<Item = Entry<TypeConfig>> + OptionalSend,
        I::IntoIter: OptionalSend,
    {
        let mut batch = WriteBatch::new();
        for entry in entries {
            let bytes = encode(&entry)
                .map_err(|e| io_error(ErrorSubject::Log(entry.log_id), ErrorVerb::Write, &e))?;
            batch.insert(keys::entry(entry.log_id.index), &bytes);
        }
        let written = self.write(&batch, ErrorSubject::Logs);
        let reported = written
            .as_ref()
            .map(|_| ())
            .map_err(|e| std::io::Error::other(e.to_string()));
        callback.log_io_completed(reported);
        written
    }

    async fn truncate(&mut self, log_id: LogId<NodeId>) -> StorageResult<()> {
        self.delete_entries(
            (Bound::Included(log_id.index), Bound::Unbounded),
            WriteBatch::new(),
        )
    }

    async fn purge(&mut self, log_id: LogId<NodeId>) -> StorageResult<()> {
        if let Some(purges) = &mut self.purges {
            purges.until_purgeable(log_id.index).await.map_err(|e| {
                io_error(
                    ErrorSubject::Logs,
                    ErrorVerb::Delete,
                    &std::io::Error::other(e),
                )
            })?;
        }
        // The purged id and the deletions land together: a crash never
        // leaves a hole below entries the state says are there.
        let mut batch = WriteBatch::new();
        let bytes =
            encode(&log_id).map_err(|e| io_error(ErrorSubject::Logs, ErrorVerb::Write, &e))?;
        batch.insert(keys::PURGED, &bytes);
        self.delete_entries((Bound::Unbounded, Bound::Included(log_id.index)), batch)
    }
}
