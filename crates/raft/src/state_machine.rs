//! [`StateMachine`]: the replicated store. User keys live in a Sift
//! database behind a one-byte prefix, beside the last applied log id and
//! membership, written in the same batch as each entry's writes: the
//! database alone says how far it has applied, and so does every
//! checkpoint of it.
//!
//! Writes are not synced: the log is. After a crash the database may be
//! behind what it had applied (a prefix of it, as its WAL keeps), and
//! openraft applies the rest again from the log.
//!
//! The database lives in `sm/G`, generation `G` named by `sm/CURRENT`; an
//! installed snapshot is copied into the next generation (its tables hard
//! links), which replaces it.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, PoisonError, RwLock};

use openraft::storage::{RaftStateMachine, Snapshot};
use openraft::{
    BasicNode, EntryPayload, ErrorSubject, ErrorVerb, LogId, OptionalSend, RaftTypeConfig,
    StorageError, StoredMembership,
};
use siftdb::{Db, WriteBatch};
use tokio::io::AsyncSeekExt;

use crate::codec::encode;
use crate::command::{Command, Op, Outcome, Request};
use crate::files::{self, Fs};
use crate::keys;
use crate::log_store::io_error;
use crate::purge_gate::PurgeWait;
use crate::sessions::{self, Verdict};
use crate::snapshot::{Meta, SnapshotBuilder, SnapshotReads, Snapshots, read_applied};
use crate::snapshot_file::SnapshotFile;
use crate::types::{NodeId, TypeConfig};

type StorageResult<T> = Result<T, StorageError<NodeId>>;

/// Shared read access to the state machine's current database, which an
/// installed snapshot replaces.
#[derive(Clone, Debug)]
pub struct DataHandle(Arc<RwLock<Arc<Db>>>);

impl DataHandle {
    /// The current database (user keys behind a prefix: use the methods
    /// below to read them).
    pub fn db(&self) -> Arc<Db> {
        Arc::clone(&self.0.read().unwrap_or_else(PoisonError::into_inner))
    }

    fn replace(&self, db: Arc<Db>) -> Arc<Db> {
        std::mem::replace(
            &mut *self.0.write().unwrap_or_else(PoisonError::into_inner),
            db,
        )
    }

    /// The value of user key `key`.
    ///
    /// # Errors
    /// What [`Db::get`] returns.
    pub fn get(&self, key: &[u8]) -> siftdb::Result<Option<Vec<u8>>> {
        self.db().get(keys::data(key))
    }

    /// One page of the user entries whose value is `value` by the value
    /// index `index`, with keys from `from` on, in key order: as
    /// [`DataHandle::scan_page`] pages a range. The search reads its blocks
    /// as the page fills, and stops with it.
    ///
    /// # Errors
    /// [`siftdb::Error::InvalidArgument`] if there is no such index; what
    /// the search reads.
    pub fn find_page(
        &self,
        index: &str,
        value: &[u8],
        from: &[u8],
        limit: usize,
        max_bytes: usize,
    ) -> siftdb::Result<(Vec<Pair>, bool)> {
        let found = self.db().find_from(index, value, keys::data(from))?;
        // The state machine's own records after the user data are not
        // user data: the first ends the answer.
        let data = found.take_while(|item| {
            item.as_ref()
                .map_or(true, |(key, _)| key.first() == Some(&keys::DATA))
        });
        page(data, limit, max_bytes)
    }

    /// One page of user entries with keys in `[lower, upper)` (`upper`
    /// `None`: to the end), in key order: up to `limit` entries and
    /// `max_bytes` of keys and values, but at least one entry if the range
    /// holds any; and whether the range holds more after them.
    ///
    /// # Errors
    /// What the scan yields.
    pub fn scan_page(
        &self,
        lower: &[u8],
        upper: Option<&[u8]>,
        limit: usize,
        max_bytes: usize,
    ) -> siftdb::Result<(Vec<Pair>, bool)> {
        let lower = keys::data(lower);
        let upper = upper.map_or_else(|| vec![keys::DATA + 1], keys::data);
        page(self.db().range(lower..upper), limit, max_bytes)
    }

    /// Up to `limit` user entries with keys in `[lower, upper)` (`upper`
    /// `None`: to the end), in key order.
    ///
    /// # Errors
    /// What the scan yields.
    pub fn scan(
        &self,
        lower: &[u8],
        upper: Option<&[u8]>,
        limit: usize,
    ) -> siftdb::Result<Vec<Pair>> {
        let lower = keys::data(lower);
        let upper = upper.map_or_else(|| vec![keys::DATA + 1], keys::data);
        let db = self.db();
        let strip = |(mut key, value): (Vec<u8>, Vec<u8>)| {
            key.remove(0);
            (key, value)
        };
        db.range(lower..upper)
            .take(limit)
            .map(|item| item.map(strip))
            .collect()
    }
}

/// A user key and its value.
type Pair = (Vec<u8>, Vec<u8>);

/// The first of `entries` (data keys, in key order): up to `limit` and
/// `max_bytes` of keys and values, but at least one if there are any, with
/// the keys' data prefix taken off; and whether more follow.
fn page(
    entries: impl Iterator<Item = siftdb::Result<Pair>>,
    limit: usize,
    max_bytes: usize,
) -> siftdb::Result<(Vec<Pair>, bool)> {
    let mut entries = entries.peekable();
    let (mut page, mut bytes) = (Vec::new(), 0);
    while page.len() < limit && (page.is_empty() || bytes < max_bytes) {
        let Some(item) = entries.next() else {
            return Ok((page, false));
        };
        let (mut key, value) = item?;
        key.remove(0);
        bytes += key.len() + value.len();
        page.push((key, value));
    }
    Ok((page, entries.peek().is_some()))
}

/// The state machine of one node.
#[derive(Debug)]
pub struct StateMachine {
    fs: Fs,
    /// `sm` of the node's directory.
    dir: PathBuf,
    generation: u64,
    data: DataHandle,
    last_applied: Option<LogId<NodeId>>,
    membership: StoredMembership<NodeId, BasicNode>,
    snapshots: Arc<Snapshots>,
    /// The snapshot being received, by number.
    receiving: Option<u64>,
    /// How every generation of the database is opened.
    settings: DataSettings,
}

impl StateMachine {
    /// Opens (or creates) the state machine of the node in `dir`, on the
    /// operating system's files.
    ///
    /// # Errors
    /// What opening its database or snapshots returns.
    pub async fn open(dir: &Path, settings: &DataSettings) -> StorageResult<Self> {
        Self::open_on(Arc::new(siftdb::fs::StdFs), dir, settings).await
    }

    /// [`Self::open`] on the file system `fs`.
    ///
    /// # Errors
    /// What opening its database or snapshots returns.
    pub async fn open_on(
        fs: Arc<dyn siftdb::fs::FileSystem>,
        dir: &Path,
        settings: &DataSettings,
    ) -> StorageResult<Self> {
        let fail =
            |e: &dyn std::error::Error| io_error(ErrorSubject::StateMachine, ErrorVerb::Read, e);
        let sm = dir.join("sm");
        fs.create_dir_all(&sm).map_err(|e| fail(&e))?;
        let generation = match files::read_current(fs.as_ref(), &sm).map_err(|e| fail(&e))? {
            Some(generation) => generation,
            None => {
                files::set_current(fs.as_ref(), &sm, 1).map_err(|e| fail(&e))?;
                1
            }
        };
        // Generations an install replaced, or one it did not finish.
        for name in fs.list(&sm).map_err(|e| fail(&e))? {
            let path = sm.join(&name);
            if name != generation.to_string() && files::is_dir(fs.as_ref(), &path) {
                let _ = siftdb::fs::remove_dir_all(fs.as_ref(), &path);
            }
        }
        let db =
            open_data(&fs, &sm.join(generation.to_string()), settings).map_err(|e| fail(&e))?;
        let (last_applied, membership) =
            read_applied(&db).map_err(|e| fail(&std::io::Error::other(e)))?;
        let snapshots = Snapshots::open(Arc::clone(&fs), dir.join("snapshots"))?;
        Ok(Self {
            fs,
            dir: sm,
            generation,
            data: DataHandle(Arc::new(RwLock::new(Arc::new(db)))),
            last_applied,
            membership,
            snapshots: Arc::new(snapshots),
            receiving: None,
            settings: settings.clone(),
        })
    }

    /// Read access to the data, shared with the node's API.
    pub fn data(&self) -> DataHandle {
        self.data.clone()
    }

    /// The count of snapshot transfers begun since it opened.
    pub(crate) fn snapshot_transfers(&self) -> Arc<AtomicU64> {
        Arc::clone(&self.snapshots.transfers)
    }

    /// Whether a snapshot is being sent, for the log's retention.
    pub(crate) fn snapshot_reads(&self) -> SnapshotReads {
        self.snapshots.reads()
    }

    /// What the log's purges wait for.
    pub(crate) fn purge_wait(&self) -> PurgeWait {
        self.snapshots.gate.waiter()
    }

    /// The log index applied last.
    pub(crate) fn applied_index(&self) -> Option<u64> {
        self.last_applied.map(|id| id.index)
    }

    /// Brings the data up to the current snapshot if it is behind it: a
    /// snapshot holds only committed entries, so the data may always move
    /// forward to it.
    pub(crate) async fn catch_up_to_snapshot(&mut self) -> StorageResult<()> {
        let current = self
            .snapshots
            .current_meta()
            .map_err(|e| io_error(ErrorSubject::StateMachine, ErrorVerb::Read, &e))?;
        match current {
            Some((n, meta)) if meta.last_log_id > self.last_applied => {
                self.load_snapshot(n, &meta).await
            }
            _ => Ok(()),
        }
    }

    /// Installs a received snapshot: makes its files durable and the
    /// current snapshot before the log may be purged up to it, then
    /// replaces the data.
    async fn install(&mut self, meta: &Meta, received: SnapshotFile) -> StorageResult<()> {
        let fail = |e: &dyn std::error::Error| {
            io_error(
                ErrorSubject::Snapshot(Some(meta.signature())),
                ErrorVerb::Write,
                e,
            )
        };
        let received = if received.is_received() {
            received
        } else {
            // Another node's snapshot, handed over whole (openraft's
            // storage suite does): copied in.
            let mut copy = self.snapshots.receive()?;
            let mut source = received;
            let copied = async {
                source.seek(std::io::SeekFrom::Start(0)).await?;
                tokio::io::copy(&mut source, &mut copy).await
            };
            copied.await.map_err(|e| fail(&e))?;
            copy
        };
        let n = received.finish().await.map_err(|e| fail(&e))?;
        if let Some(other) = self.receiving.take().filter(|&other| other != n) {
            self.snapshots.discard(other);
        }
        let current = self.snapshots.save(n, meta).await?;
        if current != n {
            let newer = format!("snapshot {current}, newer than the one installed, is current");
            return Err(fail(&std::io::Error::other(newer)));
        }
        self.snapshots.gate.installed();
        self.load_snapshot(n, meta).await
    }

    /// Replaces the data with the contents of snapshot `n`, described by
    /// `meta`: copied into the next generation, which `sm/CURRENT` then
    /// names. The tables are hard links, not copies: the snapshot's bytes
    /// were written once, as they arrived.
    async fn load_snapshot(&mut self, n: u64, meta: &Meta) -> StorageResult<()> {
        let fail = |e: &dyn std::error::Error| {
            io_error(
                ErrorSubject::Snapshot(Some(meta.signature())),
                ErrorVerb::Write,
                e,
            )
        };
        let (snapshot, generation) = (self.snapshots.path(n), self.generation + 1);
        let target = self.dir.join(generation.to_string());
        let (expected, settings) = (meta.last_log_id, self.settings.clone());
        let fs = Arc::clone(&self.fs);
        let opened = tokio::task::spawn_blocking(move || -> Result<Db, String> {
            // What an install that did not finish left.
            if files::is_dir(fs.as_ref(), &target) {
                siftdb::fs::remove_dir_all(fs.as_ref(), &target).map_err(|e| e.to_string())?;
            }
            siftdb::copy_database(fs.as_ref(), &snapshot, &target).map_err(|e| e.to_string())?;
            let db = open_data(&fs, &target, &settings).map_err(|e| e.to_string())?;
            let (applied, _) = read_applied(&db)?;
            if applied != expected {
                return Err(format!(
                    "the snapshot's data applied {applied:?}, its metadata says {expected:?}"
                ));
            }
            Ok(db)
        });
        let db = opened
            .await
            .map_err(|e| fail(&e))?
            .map_err(|e| fail(&std::io::Error::other(e)))?;
        files::set_current(self.fs.as_ref(), &self.dir, generation).map_err(|e| fail(&e))?;
        let old = self.data.replace(Arc::new(db));
        let old_dir = self.dir.join(self.generation.to_string());
        self.generation = generation;
        // Readers may still hold the old database; then its directory goes
        // at the next open.
        if Arc::into_inner(old).is_some() {
            let fs = Arc::clone(&self.fs);
            let _ = tokio::task::spawn_blocking(move || {
                siftdb::fs::remove_dir_all(fs.as_ref(), &old_dir)
            })
            .await;
        }
        self.last_applied = meta.last_log_id;
        self.membership = meta.last_membership.clone();
        Ok(())
    }
}

/// How a node opens its data: the value indexes, and the memory its
/// database may hold for writes and reads.
#[derive(Clone, Debug)]
pub struct DataSettings {
    /// The value indexes (every node declares the same).
    pub indexes: Vec<siftdb::IndexDef>,
    /// The size of a memtable; one more may wait for its flush.
    pub memtable_bytes: usize,
    /// The capacity of the block cache.
    pub cache_bytes: u64,
    /// Read table files around the page cache (`DbBuilder::direct_reads`).
    pub direct_reads: bool,
}

impl Default for DataSettings {
    /// No value index; a 16 MiB memtable (and one frozen) and a 16 MiB
    /// cache. The engine's defaults (up to three 32 MiB memtables and a
    /// 64 MiB cache) would let the data alone take 160 MiB; with these, a
    /// node loaded with 1 GiB peaks at about 160 MiB in all during a full
    /// scan (`docs/benchmarks.md`). A node's writes come one log entry at a
    /// time and its scans in pages, and the OS's page cache holds recent
    /// table data besides.
    fn default() -> Self {
        Self {
            indexes: Vec::new(),
            memtable_bytes: 16 << 20,
            cache_bytes: 16 << 20,
            direct_reads: false,
        }
    }
}

impl DataSettings {
    /// The defaults with the value indexes `indexes`.
    #[must_use]
    pub fn indexed(indexes: Vec<siftdb::IndexDef>) -> Self {
        Self {
            indexes,
            ..Self::default()
        }
    }
}

/// Opens a generation of the database on `fs`, as `settings` say, its
/// sessions in the present layout.
pub(crate) fn open_data(fs: &Fs, dir: &Path, settings: &DataSettings) -> siftdb::Result<Db> {
    let db = open_data_with(fs, dir, settings, None)?;
    sessions::split(&db)?;
    Ok(db)
}

/// [`open_data`], holding at most `max_open_files` table files open (`None`:
/// the engine's default).
pub(crate) fn open_data_with(
    fs: &Fs,
    dir: &Path,
    settings: &DataSettings,
    max_open_files: Option<usize>,
) -> siftdb::Result<Db> {
    let builder = Db::builder(dir).file_system(Arc::clone(fs));
    let builder = match max_open_files {
        Some(files) => builder.max_open_files(files),
        None => builder,
    };
    let builder = builder
        .memtable_bytes(settings.memtable_bytes)
        .max_immutable_memtables(1)
        .block_cache_bytes(settings.cache_bytes)
        .direct_reads(settings.direct_reads);
    let builder = settings
        .indexes
        .iter()
        .fold(builder, |builder, def| builder.value_index(def.clone()));
    builder.open()
}

/// Adds `command`'s writes to `batch`, if its checks hold in `db`.
/// Stages `request`, applied at log index `index`, in `batch`: its
/// command's writes, unless its session shows it was applied already, and
/// its session's record.
fn stage_request(
    db: &Db,
    request: Request,
    index: u64,
    batch: &mut WriteBatch,
) -> Result<Outcome, String> {
    let Some(session) = request.session else {
        return stage(db, request.command, batch).map_err(|e| e.to_string());
    };
    match sessions::check(db, session)? {
        Verdict::Answer(outcome) => Ok(outcome),
        Verdict::Apply(pending) => {
            let outcome = stage(db, request.command, batch).map_err(|e| e.to_string())?;
            sessions::record(pending, &outcome, index, batch)?;
            Ok(outcome)
        }
    }
}

fn stage(db: &Db, command: Command, batch: &mut WriteBatch) -> siftdb::Result<Outcome> {
    if let Err(reason) = command.validate() {
        return Ok(Outcome::Rejected { reason });
    }
    let ops = match command {
        Command::Write(ops) => ops,
        Command::Txn { checks, ops } => {
            for check in checks {
                if db.get(keys::data(&check.key))? != check.value {
                    return Ok(Outcome::Conflict { key: check.key });
                }
            }
            ops
        }
        Command::DefineIndex { name, pointer } => return define_index(db, name, &pointer),
        Command::DropIndex { name } => {
            if !db.indexes().iter().any(|index| index.name == name) {
                // Dropped already (this entry applied again after a crash).
                return Ok(Outcome::Applied);
            }
            return rejected_if_invalid(db.drop_index(&name));
        }
    };
    for op in ops {
        match op {
            Op::Put { key, value } => batch.insert(keys::data(&key), value),
            Op::Delete { key } => batch.remove(keys::data(&key)),
        };
    }
    Ok(Outcome::Applied)
}

/// What applying a run of entries did.
struct Applied {
    outcomes: Vec<Outcome>,
    last_applied: Option<LogId<NodeId>>,
    /// The last membership among them.
    membership: Option<StoredMembership<NodeId, BasicNode>>,
}

/// Applies `entries` to `db`, one write batch each with the applied id.
/// Runs on tokio's blocking pool: a write may wait on the engine's
/// stalls, which must not hold up the node's async threads.
fn apply_entries(db: &Db, entries: Vec<Entry>) -> StorageResult<Applied> {
    let mut applied = Applied {
        outcomes: Vec::with_capacity(entries.len()),
        last_applied: None,
        membership: None,
    };
    for entry in entries {
        let fail = |e: &dyn std::error::Error| {
            io_error(ErrorSubject::Apply(entry.log_id), ErrorVerb::Write, e)
        };
        let mut batch = WriteBatch::new();
        let applying = match &entry.payload {
            EntryPayload::Normal(request) => request.session.map(|s| s.id),
            _ => None,
        };
        let outcome = match entry.payload {
            EntryPayload::Blank => Outcome::Internal,
            EntryPayload::Normal(request) => {
                stage_request(db, request, entry.log_id.index, &mut batch)
                    .map_err(|e| fail(&std::io::Error::other(e)))?
            }
            EntryPayload::Membership(membership) => {
                let stored = StoredMembership::new(Some(entry.log_id), membership);
                batch.insert(keys::MEMBERSHIP, encode(&stored).map_err(|e| fail(&e))?);
                applied.membership = Some(stored);
                Outcome::Internal
            }
        };
        sessions::sweep(db, entry.log_id.index, applying, &mut batch)
            .map_err(|e| fail(&std::io::Error::other(e)))?;
        batch.insert(keys::APPLIED, encode(&entry.log_id).map_err(|e| fail(&e))?);
        db.write(&batch).map_err(|e| fail(&e))?;
        applied.last_applied = Some(entry.log_id);
        applied.outcomes.push(outcome);
    }
    Ok(applied)
}

/// A log entry.
type Entry = <TypeConfig as RaftTypeConfig>::Entry;

/// Defines value index `name` on the JSON field at `pointer`, at once (the
/// engine writes the definition to its manifest); applied again after a
/// crash, the same definition is already there.
fn define_index(db: &Db, name: String, pointer: &str) -> siftdb::Result<Outcome> {
    let def = siftdb::IndexDef::new(name, siftdb::Extractor::json_field(pointer));
    let wanted = def.extractor().description();
    match db.indexes().iter().find(|index| index.name == def.name()) {
        Some(index) if index.extractor == wanted => Ok(Outcome::Applied),
        Some(index) => Ok(Outcome::Rejected {
            reason: format!("index {:?} is defined on {}", index.name, index.extractor),
        }),
        None => rejected_if_invalid(db.add_index(def)),
    }
}

/// An index change the engine refused as invalid is an outcome, the same
/// on every node; other errors fail the apply.
fn rejected_if_invalid(changed: siftdb::Result<()>) -> siftdb::Result<Outcome> {
    match changed {
        Ok(()) => Ok(Outcome::Applied),
        Err(siftdb::Error::InvalidArgument(reason)) => Ok(Outcome::Rejected { reason }),
        Err(e) => Err(e),
    }
}

impl RaftStateMachine<TypeConfig> for StateMachine {
    type SnapshotBuilder = SnapshotBuilder;

    async fn applied_state(
        &mut self,
    ) -> StorageResult<(Option<LogId<NodeId>>, StoredMembership<NodeId, BasicNode>)> {
        Ok((self.last_applied, self.membership.clone()))
    }

    async fn apply<I>(&mut self, entries: I) -> StorageResult<Vec<Outcome>>
    where
        I: IntoIterator<Item = <TypeConfig as RaftTypeConfig>::Entry> + OptionalSend,
        I::IntoIter: OptionalSend,
    {
        let db = self.data.db();
        let entries: Vec<_> = entries.into_iter().collect();
        let applied = tokio::task::spawn_blocking(move || apply_entries(&db, entries))
            .await
            .map_err(|e| io_error(ErrorSubject::StateMachine, ErrorVerb::Write, &e))??;
        if let Some(last) = applied.last_applied {
            self.last_applied = Some(last);
        }
        if let Some(membership) = applied.membership {
            self.membership = membership;
        }
        Ok(applied.outcomes)
    }

    async fn get_snapshot_builder(&mut self) -> Self::SnapshotBuilder {
        SnapshotBuilder {
            data: self.data.clone(),
            snapshots: Arc::clone(&self.snapshots),
            settings: self.settings.clone(),
        }
    }

    async fn begin_receiving_snapshot(&mut self) -> StorageResult<Box<SnapshotFile>> {
        // A transfer that begins again (the leader restarted it) abandons
        // the file of the one before: it goes now, not at the next open.
        if let Some(abandoned) = self.receiving.take() {
            self.snapshots.discard(abandoned);
        }
        let file = self.snapshots.receive()?;
        self.receiving = Some(file.number());
        self.snapshots.gate.arriving();
        self.snapshots.transfers.fetch_add(1, Ordering::Relaxed);
        Ok(Box::new(file))
    }

    async fn install_snapshot(
        &mut self,
        meta: &Meta,
        snapshot: Box<SnapshotFile>,
    ) -> StorageResult<()> {
        let installed = self.install(meta, *snapshot).await;
        if installed.is_err() {
            self.snapshots.gate.failed();
        }
        installed
    }

    async fn get_current_snapshot(&mut self) -> StorageResult<Option<Snapshot<TypeConfig>>> {
        self.snapshots.current().await
    }
}
