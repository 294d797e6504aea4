//! [`LogStore`]: openraft's log, vote and committed log id in a Sift
//! database. Every change is one synced write batch, made before the call
//! returns (appends: before openraft's callback), so what openraft is told
//! is durable survives a crash, and a crash mid-change leaves all of it or
//! none.

use std::fmt::Debug;
use std::ops::Bound::{self, Excluded, Included, Unbounded};
use std::ops::RangeBounds;
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

/// The most bytes of one piece of a stored entry: an entry larger than a
/// value may be (a command with a value at the engine's limit, and its
/// framing) is stored in pieces under consecutive keys.
const ENTRY_PIECE_BYTES: usize = 16 << 20;

/// The most bytes of entries a leader reads for one AppendEntries message
/// (and at least one entry, however large): a message stays far below the
/// body limit and is sent well within the RPC timeout.
pub const MAX_APPEND_BYTES: usize = 8 << 20;

/// The log database's memtables and block cache. Entries are written once
/// and read back while they are recent, by replication to a follower that
/// is behind: the engine's defaults (up to three 32 MiB memtables and a
/// 64 MiB cache, sized for a store's reads) would let the log take as much
/// memory as the data. A follower further behind reads from the files and
/// the OS's page cache.
const LOG_MEMTABLE_BYTES: usize = 16 << 20;
const LOG_CACHE_BYTES: u64 = 8 << 20;

/// The Raft log of one node. Clones share the database (openraft reads the
/// log from its replication tasks through one).
#[derive(Clone, Debug)]
pub struct LogStore {
    db: Arc<Db>,
    /// Set when the log belongs to a state machine: says when a purge is
    /// safe.
    purges: Option<PurgeWait>,
    /// A purge that was not safe yet, made in the background once it is;
    /// every later change of the log waits for it first, so the log never
    /// holds entries after a gap.
    deferred: Arc<tokio::sync::Mutex<Option<tokio::task::JoinHandle<StorageResult<()>>>>>,
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
        Self::open_on(Arc::new(siftdb::fs::StdFs), dir)
    }

    /// [`Self::open`] on the file system `fs`.
    ///
    /// # Errors
    /// What [`Db::open`] returns; [`siftdb::Error::Corruption`] for a
    /// damaged log.
    pub fn open_on(fs: Arc<dyn siftdb::fs::FileSystem>, dir: &Path) -> StorageResult<Self> {
        let db = Db::builder(dir)
            .file_system(fs)
            .wal_recovery(WalRecovery::AbsoluteConsistency)
            .memtable_bytes(LOG_MEMTABLE_BYTES)
            .max_immutable_memtables(1)
            .block_cache_bytes(LOG_CACHE_BYTES)
            .open()
            .map_err(|e| io_error(ErrorSubject::Store, ErrorVerb::Read, &e))?;
        Ok(Self {
            db: Arc::new(db),
            purges: None,
            deferred: Arc::default(),
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

    /// Runs `work` on tokio's blocking pool: a synced write or a long read
    /// must not hold up the node's async threads, which carry heartbeats.
    async fn off_thread<T: Send + 'static>(
        &self,
        work: impl FnOnce(&Self) -> StorageResult<T> + Send + 'static,
    ) -> StorageResult<T> {
        let log = self.clone();
        tokio::task::spawn_blocking(move || work(&log))
            .await
            .map_err(|e| io_error(ErrorSubject::Store, ErrorVerb::Write, &e))?
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
        let read = |e: &dyn std::error::Error| io_error(ErrorSubject::Logs, ErrorVerb::Read, e);
        let Some(last) = self.db.range(entry_keys(Unbounded, Unbounded)).next_back() else {
            return Ok(None);
        };
        let (key, _) = last.map_err(|e| read(&e))?;
        let (index, _) = keys::entry_of(&key)
            .ok_or_else(|| read(&std::io::Error::other("a log key that is no entry's")))?;
        let entries = self.read_entries((Included(index), Included(index)), usize::MAX)?;
        Ok(entries.last().map(|entry| entry.log_id))
    }

    /// The entries with indexes in `range`, in order, until they hold
    /// `max_bytes` (at least one entry, if the range holds any).
    fn read_entries(
        &self,
        range: (Bound<u64>, Bound<u64>),
        max_bytes: usize,
    ) -> StorageResult<Vec<Entry<TypeConfig>>> {
        let read = |e: &dyn std::error::Error| io_error(ErrorSubject::Logs, ErrorVerb::Read, e);
        let (mut entries, mut bytes) = (Vec::new(), 0);
        let mut encoded: Vec<u8> = Vec::new();
        for item in self.db.range(entry_keys(range.0, range.1)) {
            let (key, piece) = item.map_err(|e| read(&e))?;
            let (_, first) = keys::entry_of(&key)
                .ok_or_else(|| read(&std::io::Error::other("a log key that is no entry's")))?;
            if first && !encoded.is_empty() {
                entries.push(decode(&encoded).map_err(|e| read(&e))?);
                bytes += encoded.len();
                encoded.clear();
                if bytes >= max_bytes {
                    return Ok(entries);
                }
            }
            encoded.extend_from_slice(&piece);
        }
        if !encoded.is_empty() {
            entries.push(decode(&encoded).map_err(|e| read(&e))?);
        }
        Ok(entries)
    }

    /// Waits for a deferred purge, if there is one.
    async fn settle(&self) -> StorageResult<()> {
        let Some(purge) = self.deferred.lock().await.take() else {
            return Ok(());
        };
        purge
            .await
            .map_err(|e| io_error(ErrorSubject::Logs, ErrorVerb::Delete, &e))?
    }

    /// Deletes the entries up to `log_id` and records it as the last
    /// purged, in one synced batch: a crash never leaves a hole below
    /// entries the state says are there.
    fn purge_now(&self, log_id: LogId<NodeId>) -> StorageResult<()> {
        let mut batch = WriteBatch::new();
        let bytes =
            encode(&log_id).map_err(|e| io_error(ErrorSubject::Logs, ErrorVerb::Write, &e))?;
        batch.insert(keys::PURGED, &bytes);
        self.delete_entries((Unbounded, Included(log_id.index)), batch)
    }

    /// Writes `entries`, each in pieces of [`ENTRY_PIECE_BYTES`], in one
    /// synced batch.
    fn append_now(&self, entries: Vec<Entry<TypeConfig>>) -> StorageResult<()> {
        let mut batch = WriteBatch::new();
        for entry in entries {
            let fail = |e: &dyn std::error::Error| {
                io_error(ErrorSubject::Log(entry.log_id), ErrorVerb::Write, e)
            };
            let bytes = encode(&entry).map_err(|e| fail(&e))?;
            let index = entry.log_id.index;
            for (piece, bytes) in bytes.chunks(ENTRY_PIECE_BYTES).enumerate() {
                let key = match u8::try_from(piece) {
                    Ok(0) => keys::entry(index),
                    Ok(piece) => keys::entry_piece(index, piece),
                    Err(_) => return Err(fail(&std::io::Error::other("an entry over 4 GiB"))),
                };
                batch.insert(key, bytes);
            }
        }
        self.write(&batch, ErrorSubject::Logs)
    }
}

/// The keys of the entries with indexes within the bounds, all their
/// pieces (and no other record of the log).
fn entry_keys(lower: Bound<u64>, upper: Bound<u64>) -> (Bound<Vec<u8>>, Bound<Vec<u8>>) {
    let after = |index: u64| match index.checked_add(1) {
        Some(next) => Excluded(keys::entry(next)),
        None => Excluded(vec![keys::ENTRY + 1]),
    };
    let lower = match lower {
        Unbounded => Included(keys::entry(0)),
        Included(index) => Included(keys::entry(index)),
        Excluded(index) => match after(index) {
            Excluded(key) => Included(key),
            bound => bound,
        },
    };
    let upper = match upper {
        Unbounded => Excluded(vec![keys::ENTRY + 1]),
        Included(index) => after(index),
        Excluded(index) => Excluded(keys::entry(index)),
    };
    (lower, upper)
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
        let range = (range.start_bound().cloned(), range.end_bound().cloned());
        self.off_thread(move |log| log.read_entries(range, usize::MAX))
            .await
    }

    async fn limited_get_log_entries(
        &mut self,
        start: u64,
        end: u64,
    ) -> StorageResult<Vec<Entry<TypeConfig>>> {
        let range = (Included(start), Excluded(end));
        self.off_thread(move |log| log.read_entries(range, MAX_APPEND_BYTES))
            .await
    }
}

impl RaftLogStorage<TypeConfig> for LogStore {
    type LogReader = Self;

    async fn get_log_state(&mut self) -> StorageResult<LogState<TypeConfig>> {
        self.off_thread(|log| {
            let last_purged_log_id = log.get(keys::PURGED, ErrorSubject::Logs)?;
            let last_log_id = log.last_log_id()?.or(last_purged_log_id);
            Ok(LogState {
                last_purged_log_id,
                last_log_id,
            })
        })
        .await
    }

    async fn get_log_reader(&mut self) -> Self::LogReader {
        self.clone()
    }

    async fn save_vote(&mut self, vote: &Vote<NodeId>) -> StorageResult<()> {
        let vote = *vote;
        self.off_thread(move |log| log.put(keys::VOTE, &vote, ErrorSubject::Vote))
            .await
    }

    async fn read_vote(&mut self) -> StorageResult<Option<Vote<NodeId>>> {
        self.off_thread(|log| log.get(keys::VOTE, ErrorSubject::Vote))
            .await
    }

    async fn save_committed(&mut self, committed: Option<LogId<NodeId>>) -> StorageResult<()> {
        self.off_thread(move |log| log.put(keys::COMMITTED, &committed, ErrorSubject::Store))
            .await
    }

    async fn read_committed(&mut self) -> StorageResult<Option<LogId<NodeId>>> {
        let committed = self
            .off_thread(|log| {
                log.get::<Option<LogId<NodeId>>>(keys::COMMITTED, ErrorSubject::Store)
            })
            .await?;
        Ok(committed.flatten())
    }

    async fn append<I>(&mut self, entries: I, callback: LogFlushed<TypeConfig>) -> StorageResult<()>
    where
        I: IntoIterator<Item = Entry<TypeConfig>> + OptionalSend,
        I::IntoIter: OptionalSend,
    {
        let entries: Vec<_> = entries.into_iter().collect();
        let written = match self.settle().await {
            Ok(()) => self.off_thread(|log| log.append_now(entries)).await,
            Err(e) => Err(e),
        };
        let reported = written
            .as_ref()
            .map(|_| ())
            .map_err(|e| std::io::Error::other(e.to_string()));
        callback.log_io_completed(reported);
        written
    }

    async fn truncate(&mut self, log_id: LogId<NodeId>) -> StorageResult<()> {
        self.settle().await?;
        self.off_thread(move |log| {
            log.delete_entries((Included(log_id.index), Unbounded), WriteBatch::new())
        })
        .await
    }

    async fn purge(&mut self, log_id: LogId<NodeId>) -> StorageResult<()> {
        self.settle().await?;
        match &self.purges {
            Some(wait) if !wait.purgeable(log_id.index) => {
                // openraft purges as it queues a snapshot's install: the
                // purge lands once the install has saved the snapshot.
                let (log, mut wait) = (self.clone(), wait.clone());
                let purge = tokio::spawn(async move {
                    wait.until_purgeable(log_id.index).await.map_err(|e| {
                        let e = std::io::Error::other(e);
                        io_error(ErrorSubject::Logs, ErrorVerb::Delete, &e)
                    })?;
                    log.off_thread(move |log| log.purge_now(log_id)).await
                });
                *self.deferred.lock().await = Some(purge);
                Ok(())
            }
            _ => self.off_thread(move |log| log.purge_now(log_id)).await,
        }
    }
}

#[cfg(test)]
mod tests {
    use openraft::{CommittedLeaderId, EntryPayload};

    use super::*;
    use crate::command::{Command, Op};

    /// Entry `index`, a put of `len` bytes.
    fn entry(index: u64, len: usize) -> Entry<TypeConfig> {
        let put = Command::Write(vec![Op::Put {
            key: index.to_be_bytes().to_vec(),
            value: vec![index as u8; len],
        }]);
        Entry {
            log_id: LogId::new(CommittedLeaderId::new(1, 0), index),
            payload: EntryPayload::Normal(put.into()),
        }
    }

    #[test]
    fn entries_larger_than_a_piece_read_back_whole() {
        let dir = tempfile::TempDir::new().unwrap();
        let log = LogStore::open(dir.path()).unwrap();
        let big = 2 * ENTRY_PIECE_BYTES + 5;
        let entries = vec![entry(1, 10), entry(2, big), entry(3, 10), entry(4, big)];
        log.append_now(entries.clone()).unwrap();
        let all = log
            .read_entries((Unbounded, Unbounded), usize::MAX)
            .unwrap();
        assert_eq!(all, entries);
        let middle = log
            .read_entries((Excluded(1), Included(3)), usize::MAX)
            .unwrap();
        assert_eq!(middle, entries[1..3]);
        assert_eq!(log.last_log_id().unwrap(), Some(entries[3].log_id));
        log.delete_entries((Included(4), Unbounded), WriteBatch::new())
            .unwrap();
        assert_eq!(log.last_log_id().unwrap(), Some(entries[2].log_id));
        log.delete_entries((Unbounded, Included(2)), WriteBatch::new())
            .unwrap();
        let left = log
            .read_entries((Unbounded, Unbounded), usize::MAX)
            .unwrap();
        assert_eq!(left, entries[2..3]);
    }

    #[test]
    fn a_leader_reads_a_bounded_batch_but_at_least_one_entry() {
        let dir = tempfile::TempDir::new().unwrap();
        let log = LogStore::open(dir.path()).unwrap();
        let third = MAX_APPEND_BYTES / 3 + 1;
        log.append_now((1..=10).map(|i| entry(i, third)).collect())
            .unwrap();
        let batch = log
            .read_entries((Included(1), Excluded(11)), MAX_APPEND_BYTES)
            .unwrap();
        assert_eq!(batch.len(), 3, "stops once the batch holds the limit");
        let one = log.read_entries((Included(5), Excluded(11)), 1).unwrap();
        assert_eq!(one.len(), 1);
    }

    #[test]
    fn a_purge_past_an_arriving_snapshot_lands_once_it_is_saved_and_before_any_later_change() {
        use crate::purge_gate::PurgeGate;
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async {
            let dir = tempfile::TempDir::new().unwrap();
            let mut log = LogStore::open(dir.path()).unwrap();
            log.append_now((1..=6).map(|i| entry(i, 10)).collect())
                .unwrap();
            let gate = PurgeGate::new(None);
            log.gate_purges(gate.waiter());
            gate.arriving();
            let upto = LogId::new(CommittedLeaderId::new(1, 0), 4);
            // Answered at once, but not made: the snapshot is not saved.
            log.purge(upto).await.unwrap();
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
            assert_eq!(log.purged_index().unwrap(), None);
            // A later change waits for it.
            let mut later = log.clone();
            let truncate = tokio::spawn(async move {
                let from = LogId::new(CommittedLeaderId::new(1, 0), 6);
                later.truncate(from).await
            });
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
            assert!(!truncate.is_finished(), "the change did not wait");
            gate.covered(Some(4));
            gate.installed();
            truncate.await.unwrap().unwrap();
            assert_eq!(log.purged_index().unwrap(), Some(4));
            let left = log
                .read_entries((Unbounded, Unbounded), usize::MAX)
                .unwrap();
            let indexes: Vec<u64> = left.iter().map(|e| e.log_id.index).collect();
            assert_eq!(indexes, [5]);
        });
    }
}
