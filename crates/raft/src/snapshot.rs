//! Snapshots: a [`Db::checkpoint`] of the state machine in a directory of
//! its own, with its [`SnapshotMeta`] beside it. openraft streams it to a
//! lagging follower in chunks of one tar stream, packed on the fly
//! ([`PackedDir`]); the follower unpacks the chunks as they arrive into a
//! snapshot directory of its own ([`Unpacker`]), so each byte is written
//! once, and opens a copy of it whose tables are hard links
//! ([`crate::StateMachine`] swaps it in).
//!
//! In `dir`: `snapshot-N/` and `snapshot-N.meta` (JSON), and `CURRENT`
//! naming the live N; `CURRENT` is replaced by a rename, so a crash leaves
//! the old snapshot or the new one, never half of each. A snapshot's
//! directory does not change once `CURRENT` names it. Every file goes
//! through the node's [`FileSystem`](siftdb::fs::FileSystem).
//!
//! A snapshot being read (sent to a follower) holds a [`Lease`] on its
//! directory: its files are opened one at a time as the stream reaches
//! them ([`PackedDir`]), so a snapshot replaced meanwhile is deleted only
//! once its last reader is done.

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use openraft::storage::Snapshot;
use openraft::{
    BasicNode, ErrorSubject, ErrorVerb, LogId, RaftSnapshotBuilder, SnapshotMeta, StorageError,
    StoredMembership,
};
use siftdb::Db;

use crate::codec::decode;
use crate::files::{self, Fs};
use crate::keys;
use crate::log_store::io_error;
use crate::purge_gate::PurgeGate;
use crate::snapshot_file::SnapshotFile;
use crate::snapshot_pack::PackedDir;
use crate::snapshot_unpack::Unpacker;
use crate::state_machine::{DataHandle, DataSettings, open_data_with};
use crate::types::{NodeId, TypeConfig};

type StorageResult<T> = Result<T, StorageError<NodeId>>;

/// The most table files the copy a build reads its applied id from holds
/// open (the engine's least), beside the live database's.
const COPY_OPEN_FILES: usize = 16;

/// What a snapshot's metadata says.
pub(crate) type Meta = SnapshotMeta<NodeId, BasicNode>;

/// The last applied log id and membership a state machine records.
pub(crate) type Applied = (Option<LogId<NodeId>>, StoredMembership<NodeId, BasicNode>);

/// The snapshots of one node.
#[derive(Debug)]
pub(crate) struct Snapshots {
    fs: Fs,
    dir: PathBuf,
    /// Numbers snapshots, builds and received ones alike.
    next: AtomicU64,
    /// Held while `CURRENT` changes.
    saving: tokio::sync::Mutex<()>,
    /// Told what the current snapshot covers, for the log's purges.
    pub(crate) gate: PurgeGate,
    /// Transfers begun since the node started.
    pub(crate) transfers: Arc<AtomicU64>,
    /// The snapshots being read.
    readers: Arc<Mutex<Readers>>,
}

/// How many readers each snapshot being read has, and which of them are to
/// be deleted once their last reader is done.
#[derive(Debug, Default)]
struct Readers {
    count: HashMap<u64, usize>,
    doomed: HashSet<u64>,
}

/// Keeps a snapshot's directory while a stream of it is read: a
/// [`Snapshots::discard`] of it meanwhile waits until the last lease on it
/// is dropped.
#[derive(Debug)]
pub(crate) struct Lease {
    n: u64,
    fs: Fs,
    path: PathBuf,
    readers: Arc<Mutex<Readers>>,
}

impl Drop for Lease {
    fn drop(&mut self) {
        let doomed = {
            let mut readers = self.readers.lock().unwrap_or_else(PoisonError::into_inner);
            let count = readers.count.entry(self.n).or_default();
            *count = count.saturating_sub(1);
            *count == 0 && {
                readers.count.remove(&self.n);
                readers.doomed.remove(&self.n)
            }
        };
        if !doomed {
            return;
        }
        // A failure leaves it to the next open.
        let (fs, path) = (Arc::clone(&self.fs), self.path.clone());
        let remove = move || drop(files::remove(fs.as_ref(), &path));
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => drop(runtime.spawn_blocking(remove)),
            Err(_) => remove(),
        }
    }
}

/// Whether a snapshot is being read (sent to a follower): the log's
/// retention waits for every follower meanwhile (`log_retention`).
#[derive(Clone, Debug)]
pub(crate) struct SnapshotReads(Arc<Mutex<Readers>>);

impl SnapshotReads {
    /// Whether any stream of a snapshot is open.
    pub(crate) fn any(&self) -> bool {
        !self
            .0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .count
            .is_empty()
    }
}

impl Snapshots {
    /// The snapshots in `dir`, created if missing; drops what an
    /// interrupted build or transfer left.
    pub(crate) fn open(fs: Fs, dir: PathBuf) -> StorageResult<Self> {
        let fail = |e: std::io::Error| io_error(ErrorSubject::Snapshot(None), ErrorVerb::Read, &e);
        fs.create_dir_all(&dir).map_err(fail)?;
        let current = files::read_current(fs.as_ref(), &dir).map_err(fail)?;
        let mut next = current.map_or(1, |n| n + 1);
        for name in fs.list(&dir).map_err(fail)? {
            let number = snapshot_number(&name);
            next = next.max(number.map_or(0, |n| n + 1));
            if name != "CURRENT" && number != current {
                let _ = files::remove(fs.as_ref(), &dir.join(&name));
            }
        }
        let mut snapshots = Self {
            fs,
            dir,
            next: AtomicU64::new(next),
            saving: tokio::sync::Mutex::new(()),
            gate: PurgeGate::new(None),
            transfers: Arc::default(),
            readers: Arc::default(),
        };
        if let Some((n, meta)) = snapshots.current_meta().map_err(fail)? {
            snapshots.unpack_legacy(n).map_err(fail)?;
            snapshots.gate = PurgeGate::new(meta.last_log_id.map(|id| id.index));
        }
        Ok(snapshots)
    }

    /// Unpacks snapshot `n` if it is still the single tar file that nodes
    /// before snapshot directories kept (`snapshot-N.tar`).
    fn unpack_legacy(&self, n: u64) -> std::io::Result<()> {
        let tar = self.dir.join(format!("snapshot-{n}.tar"));
        let file = match self.fs.open(&tar) {
            Ok(file) => file,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(e),
        };
        let dir = self.path(n);
        if files::is_dir(self.fs.as_ref(), &dir) {
            siftdb::fs::remove_dir_all(self.fs.as_ref(), &dir)?;
        }
        let mut unpacker = Unpacker::create(Arc::clone(&self.fs), dir)?;
        let (size, mut offset) = (file.size()?, 0);
        let mut buf = vec![0; 1 << 20];
        while offset < size {
            let len = usize::try_from(size - offset).map_or(buf.len(), |n| n.min(buf.len()));
            file.read_exact_at(&mut buf[..len], offset)?;
            unpacker.write(&buf[..len])?;
            offset += len as u64;
        }
        unpacker.finish()?;
        self.fs.remove(&tar)?;
        self.fs.sync_dir(&self.dir)
    }

    /// The number and metadata of the current snapshot, if there is one.
    pub(crate) fn current_meta(&self) -> std::io::Result<Option<(u64, Meta)>> {
        let Some(n) = files::read_current(self.fs.as_ref(), &self.dir)? else {
            return Ok(None);
        };
        Ok(Some((n, self.read_meta(n)?)))
    }

    fn number(&self) -> u64 {
        self.next.fetch_add(1, Ordering::Relaxed)
    }

    /// The directory of snapshot `n`.
    pub(crate) fn path(&self, n: u64) -> PathBuf {
        self.dir.join(format!("snapshot-{n}"))
    }

    fn meta(&self, n: u64) -> PathBuf {
        self.dir.join(format!("snapshot-{n}.meta"))
    }

    /// A new snapshot to receive.
    pub(crate) fn receive(&self) -> StorageResult<SnapshotFile> {
        let n = self.number();
        let unpacker = Unpacker::create(Arc::clone(&self.fs), self.path(n))
            .map_err(|e| io_error(ErrorSubject::Snapshot(None), ErrorVerb::Write, &e))?;
        Ok(SnapshotFile::receiving(n, unpacker))
    }

    /// Deletes snapshot `n`'s directory (one abandoned or replaced), once
    /// no stream of it is read: a failure leaves it to the next open.
    pub(crate) fn discard(&self, n: u64) {
        {
            let mut readers = self.readers.lock().unwrap_or_else(PoisonError::into_inner);
            if readers.count.contains_key(&n) {
                readers.doomed.insert(n);
                return;
            }
        }
        let _ = files::remove(self.fs.as_ref(), &self.path(n));
    }

    /// Whether a snapshot is being read.
    pub(crate) fn reads(&self) -> SnapshotReads {
        SnapshotReads(Arc::clone(&self.readers))
    }

    /// A lease on snapshot `n`'s directory (taken while `n` is current,
    /// under `saving`, so no discard of it has begun).
    fn lease(&self, n: u64) -> Lease {
        let mut readers = self.readers.lock().unwrap_or_else(PoisonError::into_inner);
        *readers.count.entry(n).or_default() += 1;
        Lease {
            n,
            fs: Arc::clone(&self.fs),
            path: self.path(n),
            readers: Arc::clone(&self.readers),
        }
    }

    /// Makes snapshot `n` (its directory written and synced) the current
    /// one, with `meta`, and deletes the one it replaces; unless the
    /// current one covers as much of the log or more (a build that
    /// finished after an install of a newer snapshot): then `n` is deleted
    /// and the current one stays. Returns the number current afterwards.
    pub(crate) async fn save(self: &Arc<Self>, n: u64, meta: &Meta) -> StorageResult<u64> {
        self.save_then(n, meta, |_, current| Ok(current)).await
    }

    /// [`Self::save`], then `then` with the number current afterwards,
    /// with `saving` still held: what `then` opens cannot be deleted
    /// first by a concurrent save.
    async fn save_then<T: Send + 'static>(
        self: &Arc<Self>,
        n: u64,
        meta: &Meta,
        then: impl FnOnce(&Self, u64) -> std::io::Result<T> + Send + 'static,
    ) -> StorageResult<T> {
        let fail = |e: &dyn std::error::Error| {
            io_error(
                ErrorSubject::Snapshot(Some(meta.signature())),
                ErrorVerb::Write,
                e,
            )
        };
        let _saving = self.saving.lock().await;
        // Synced writes: on tokio's blocking pool.
        let (this, saved) = (Arc::clone(self), meta.clone());
        tokio::task::spawn_blocking(move || then(&this, this.save_now(n, &saved)?))
            .await
            .map_err(|e| fail(&e))?
            .map_err(|e| fail(&e))
    }

    /// [`Self::save`], with `saving` held.
    fn save_now(&self, n: u64, meta: &Meta) -> std::io::Result<u64> {
        let fs = self.fs.as_ref();
        let json = serde_json::to_vec(meta).map_err(std::io::Error::other)?;
        let previous = files::read_current(fs, &self.dir)?;
        if let Some(current) = previous.filter(|&current| current != n)
            && self.read_meta(current)?.last_log_id >= meta.last_log_id
        {
            self.discard(n);
            return Ok(current);
        }
        files::write_synced(fs, &self.meta(n), &json)?;
        // The directory's and the metadata's names are durable before
        // `CURRENT` can name them: a disk may persist a directory's
        // changes in any order.
        fs.sync_dir(&self.dir)?;
        files::set_current(fs, &self.dir, n)?;
        self.gate.covered(meta.last_log_id.map(|id| id.index));
        if let Some(old) = previous.filter(|&old| old != n) {
            self.discard(old);
            let _ = fs.remove(&self.meta(old));
        }
        Ok(n)
    }

    /// The metadata of snapshot `n`.
    fn read_meta(&self, n: u64) -> std::io::Result<Meta> {
        let json = files::read_small(self.fs.as_ref(), &self.meta(n))?;
        serde_json::from_slice(&json).map_err(std::io::Error::other)
    }

    /// The current snapshot, if there is one.
    pub(crate) async fn current(self: &Arc<Self>) -> StorageResult<Option<Snapshot<TypeConfig>>> {
        let fail =
            |e: &dyn std::error::Error| io_error(ErrorSubject::Snapshot(None), ErrorVerb::Read, e);
        let _saving = self.saving.lock().await;
        let this = Arc::clone(self);
        tokio::task::spawn_blocking(move || {
            match files::read_current(this.fs.as_ref(), &this.dir)? {
                Some(n) => this.open_snapshot(n).map(Some),
                None => Ok(None),
            }
        })
        .await
        .map_err(|e| fail(&e))?
        .map_err(|e| fail(&e))
    }

    /// Snapshot `n`: its metadata and its files, to send, with a lease on
    /// its directory. Called with `saving` held, while `n` is current.
    fn open_snapshot(&self, n: u64) -> std::io::Result<Snapshot<TypeConfig>> {
        let lease = self.lease(n);
        let meta = self.read_meta(n)?;
        let packed = PackedDir::open(Arc::clone(&self.fs), self.path(n))?.leased(lease);
        Ok(Snapshot {
            meta,
            snapshot: Box::new(SnapshotFile::reading(n, packed)),
        })
    }

    /// Checkpoints `db` into a new snapshot directory and makes it the
    /// current snapshot (unless a newer one became current meanwhile: then
    /// that one is returned). The copy is opened, to read what it holds, as
    /// `db` is, with `settings`: a custom extractor's function is needed to
    /// open it.
    async fn build(
        self: &Arc<Self>,
        db: Arc<Db>,
        settings: DataSettings,
    ) -> StorageResult<Snapshot<TypeConfig>> {
        let (n, fs) = (self.number(), Arc::clone(&self.fs));
        let path = self.path(n);
        let built = tokio::task::spawn_blocking(move || -> Result<Applied, String> {
            db.checkpoint(&path).map_err(|e| e.to_string())?;
            // What the copy holds, read from the copy: applies go on while
            // it is taken, so the live state machine may be ahead of it.
            let copy = open_data_with(&fs, &path, &settings, Some(COPY_OPEN_FILES))
                .map_err(|e| e.to_string())?;
            read_applied(&copy)
        });
        let fail = |e: String| {
            io_error(
                ErrorSubject::Snapshot(None),
                ErrorVerb::Write,
                &std::io::Error::other(e),
            )
        };
        let (last_log_id, last_membership) = built
            .await
            .map_err(|e| fail(e.to_string()))?
            .map_err(fail)?;
        let snapshot_id = match last_log_id {
            Some(id) => format!("{}-{}-{n}", id.leader_id, id.index),
            None => format!("--{n}"),
        };
        let meta = Meta {
            last_log_id,
            last_membership,
            snapshot_id,
        };
        // Opened before `saving` is let go: an install that replaces it
        // next waits for it to be sent before deleting it.
        self.save_then(n, &meta, Self::open_snapshot).await
    }
}

/// Builds a snapshot of the state machine as it is when it runs (openraft
/// runs it beside the applies).
#[derive(Debug)]
pub struct SnapshotBuilder {
    pub(crate) data: DataHandle,
    pub(crate) snapshots: Arc<Snapshots>,
    /// How the state machine opens its data.
    pub(crate) settings: DataSettings,
}

impl RaftSnapshotBuilder<TypeConfig> for SnapshotBuilder {
    async fn build_snapshot(&mut self) -> StorageResult<Snapshot<TypeConfig>> {
        self.snapshots
            .build(self.data.db(), self.settings.clone())
            .await
    }
}

/// The last applied log id and membership recorded in `db`.
pub(crate) fn read_applied(db: &Db) -> Result<Applied, String> {
    let read = |key: &[u8]| db.get(key).map_err(|e| e.to_string());
    let applied = match read(keys::APPLIED)? {
        Some(bytes) => Some(decode(&bytes).map_err(|e| e.to_string())?),
        None => None,
    };
    let membership = match read(keys::MEMBERSHIP)? {
        Some(bytes) => decode(&bytes).map_err(|e| e.to_string())?,
        None => StoredMembership::default(),
    };
    Ok((applied, membership))
}

/// N of `snapshot-N`, `snapshot-N.meta` or `snapshot-N.tar` (what nodes
/// kept before snapshot directories).
fn snapshot_number(name: &str) -> Option<u64> {
    let stem = name.strip_prefix("snapshot-")?;
    let n = [".tar", ".meta"]
        .iter()
        .find_map(|suffix| stem.strip_suffix(suffix))
        .unwrap_or(stem);
    n.parse().ok()
}

#[cfg(test)]
mod tests {
    use openraft::{CommittedLeaderId, LogId};
    use siftdb::fs::{FaultInjectionFs, FileSystem};
    use tokio::io::AsyncWriteExt;

    use super::*;
    use crate::state_machine::open_data;

    fn meta(index: u64) -> Meta {
        Meta {
            last_log_id: Some(LogId::new(CommittedLeaderId::new(1, 0), index)),
            last_membership: StoredMembership::default(),
            snapshot_id: format!("1-0-{index}"),
        }
    }

    /// The stream of a snapshot holding one file that says `covers {index}`.
    fn stream(fs: &FaultInjectionFs, index: u64) -> Vec<u8> {
        let dir = PathBuf::from(format!("/source-{index}"));
        fs.create_dir_all(&dir).unwrap();
        let text = format!("covers {index}");
        files::write_synced(fs, &dir.join("000001.sst"), text.as_bytes()).unwrap();
        let packed = PackedDir::open(Arc::new(fs.clone()), dir.clone()).unwrap();
        let mut bytes = vec![0; packed.len() as usize];
        packed.read_exact_at(&mut bytes, 0).unwrap();
        bytes
    }

    /// Receives a snapshot and saves it with `meta(index)`.
    async fn saved(fs: &FaultInjectionFs, snapshots: &Arc<Snapshots>, index: u64) -> (u64, u64) {
        let mut file = snapshots.receive().unwrap();
        file.write_all(&stream(fs, index)).await.unwrap();
        let n = file.finish().await.unwrap();
        (n, snapshots.save(n, &meta(index)).await.unwrap())
    }

    #[test]
    fn a_build_that_finishes_after_a_newer_install_leaves_the_newer_current() {
        let fs = FaultInjectionFs::new();
        let exists = |path: PathBuf| files::is_dir(&fs, &path);
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async {
            let dir = PathBuf::from("/node/snapshots");
            let snapshots = Arc::new(Snapshots::open(Arc::new(fs.clone()), dir).unwrap());
            // The build takes its number first, the install finishes first.
            let mut build_file = snapshots.receive().unwrap();
            let (installed, current) = saved(&fs, &snapshots, 10).await;
            assert_eq!(current, installed);
            build_file.write_all(&stream(&fs, 5)).await.unwrap();
            let build = build_file.finish().await.unwrap();
            assert_eq!(snapshots.save(build, &meta(5)).await.unwrap(), installed);
            let current = snapshots.current().await.unwrap().unwrap();
            assert_eq!(current.meta, meta(10));
            // (Not sent: a snapshot being sent stays until it is sent.)
            drop(current);
            assert!(exists(snapshots.path(installed)));
            assert!(!exists(snapshots.path(build)));
            // A newer one still replaces it, durably.
            let (newer, current) = saved(&fs, &snapshots, 12).await;
            assert_eq!(current, newer);
            assert!(!exists(snapshots.path(installed)));
            assert_eq!(snapshots.current().await.unwrap().unwrap().meta, meta(12));
            let crashed = fs.crash();
            let after = Snapshots::open(Arc::new(crashed.clone()), snapshots.dir.clone()).unwrap();
            assert_eq!(after.current_meta().unwrap().unwrap(), (newer, meta(12)));
            let table = after.path(newer).join("000001.sst");
            assert_eq!(crashed.contents(&table).unwrap(), b"covers 12");
        });
    }

    fn runtime() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
    }

    /// The stream of a snapshot of `tables` files, each a few bytes.
    fn stream_of(fs: &FaultInjectionFs, tables: usize) -> Vec<u8> {
        let dir = PathBuf::from(format!("/source-of-{tables}"));
        fs.create_dir_all(&dir).unwrap();
        for i in 0..tables {
            let name = dir.join(format!("{i:06}.sst"));
            files::write_synced(fs, &name, format!("table {i}").as_bytes()).unwrap();
        }
        let packed = PackedDir::open(Arc::new(fs.clone()), dir.clone()).unwrap();
        let mut bytes = vec![0; packed.len() as usize];
        packed.read_exact_at(&mut bytes, 0).unwrap();
        bytes
    }

    /// A snapshot read whole, as openraft sends it, in chunks.
    async fn read_whole(snapshot: &mut Snapshot<TypeConfig>, each: impl Fn()) -> Vec<u8> {
        use tokio::io::AsyncReadExt;
        let (mut bytes, mut chunk) = (Vec::new(), vec![0; 4096]);
        loop {
            let n = snapshot.snapshot.read(&mut chunk).await.unwrap();
            if n == 0 {
                return bytes;
            }
            bytes.extend_from_slice(&chunk[..n]);
            each();
        }
    }

    /// Past about 500 tables, a snapshot that opened all its files at once
    /// ran a node out of its 1,024 descriptors: every file is opened only
    /// while it is read.
    #[test]
    fn a_snapshot_of_many_tables_is_sent_with_one_file_open() {
        let fs = FaultInjectionFs::new();
        runtime().block_on(async {
            let dir = PathBuf::from("/node/snapshots");
            let snapshots = Arc::new(Snapshots::open(Arc::new(fs.clone()), dir).unwrap());
            let stream = stream_of(&fs, 600);
            let mut file = snapshots.receive().unwrap();
            file.write_all(&stream).await.unwrap();
            let n = file.finish().await.unwrap();
            snapshots.save(n, &meta(7)).await.unwrap();
            let base = fs.open_files();
            fs.limit_open_files(Some(base + 1));
            let mut current = snapshots.current().await.unwrap().unwrap();
            let most = std::sync::atomic::AtomicUsize::new(0);
            let sent = read_whole(&mut current, || {
                most.fetch_max(fs.open_files() - base, Ordering::Relaxed);
            })
            .await;
            fs.limit_open_files(None);
            assert!(sent == stream, "the snapshot sent is not what was saved");
            assert!(most.into_inner() <= 1);
            drop(current);
            assert_eq!(fs.open_files(), base);
        });
    }

    /// A snapshot that a newer one replaces while it is sent is still sent
    /// whole (its files are opened as they are read), and deleted once the
    /// transfer is done.
    #[test]
    fn a_snapshot_replaced_while_it_is_sent_is_still_sent_whole() {
        let fs = FaultInjectionFs::new();
        let exists = |path: PathBuf| files::is_dir(&fs, &path);
        runtime().block_on(async {
            let dir = PathBuf::from("/node/snapshots");
            let snapshots = Arc::new(Snapshots::open(Arc::new(fs.clone()), dir).unwrap());
            let stream = stream_of(&fs, 20);
            let mut file = snapshots.receive().unwrap();
            file.write_all(&stream).await.unwrap();
            let old = file.finish().await.unwrap();
            snapshots.save(old, &meta(5)).await.unwrap();
            let mut sending = snapshots.current().await.unwrap().unwrap();
            let mut second = snapshots.current().await.unwrap().unwrap();
            let (newer, _) = saved(&fs, &snapshots, 9).await;
            assert_eq!(snapshots.current_meta().unwrap().unwrap().0, newer);
            assert!(read_whole(&mut sending, || {}).await == stream);
            drop(sending);
            assert!(exists(snapshots.path(old)), "deleted under a reader");
            assert!(read_whole(&mut second, || {}).await == stream);
            drop(second);
            let start = std::time::Instant::now();
            while exists(snapshots.path(old)) {
                assert!(start.elapsed() < std::time::Duration::from_secs(10));
                tokio::time::sleep(std::time::Duration::from_millis(5)).await;
            }
        });
    }

    /// A file system that runs a hook once, at the first open of a
    /// snapshot's metadata.
    struct Hooked {
        fs: FaultInjectionFs,
        #[allow(clippy::type_complexity)]
        hook: std::sync::Mutex<Option<Box<dyn FnOnce() + Send>>>,
    }

    impl std::fmt::Debug for Hooked {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("Hooked")
        }
    }

    impl FileSystem for Hooked {
        fn create_dir_all(&self, dir: &std::path::Path) -> std::io::Result<()> {
            self.fs.create_dir_all(dir)
        }
        fn create(
            &self,
            path: &std::path::Path,
        ) -> std::io::Result<Box<dyn siftdb::fs::WritableFile>> {
            self.fs.create(path)
        }
        fn open(
            &self,
            path: &std::path::Path,
        ) -> std::io::Result<Arc<dyn siftdb::fs::ReadableFile>> {
            if path.extension().is_some_and(|e| e == "meta") {
                let hook = self.hook.lock().unwrap().take();
                if let Some(hook) = hook {
                    hook();
                }
            }
            self.fs.open(path)
        }
        fn rename(&self, from: &std::path::Path, to: &std::path::Path) -> std::io::Result<()> {
            self.fs.rename(from, to)
        }
        fn hard_link(&self, from: &std::path::Path, to: &std::path::Path) -> std::io::Result<()> {
            self.fs.hard_link(from, to)
        }
        fn remove(&self, path: &std::path::Path) -> std::io::Result<()> {
            self.fs.remove(path)
        }
        fn remove_dir(&self, dir: &std::path::Path) -> std::io::Result<()> {
            self.fs.remove_dir(dir)
        }
        fn list(&self, dir: &std::path::Path) -> std::io::Result<Vec<String>> {
            self.fs.list(dir)
        }
        fn sync_dir(&self, dir: &std::path::Path) -> std::io::Result<()> {
            self.fs.sync_dir(dir)
        }
        fn try_lock(
            &self,
            path: &std::path::Path,
        ) -> std::io::Result<Option<Box<dyn siftdb::fs::LockGuard>>> {
            self.fs.try_lock(path)
        }
    }

    /// A build saves its snapshot, then opens it to send; an install that
    /// made a newer one current in between deleted it, and the build
    /// failed, which stops a node. The install runs as soon as it can take
    /// the lock `CURRENT` changes under.
    #[test]
    fn an_install_during_a_build_leaves_the_build_its_snapshot() {
        let fs = FaultInjectionFs::new();
        let hooked = Arc::new(Hooked {
            fs: fs.clone(),
            hook: std::sync::Mutex::default(),
        });
        let node_fs: Fs = Arc::clone(&hooked) as Fs;
        runtime().block_on(async {
            let dir = PathBuf::from("/node/snapshots");
            let snapshots = Arc::new(Snapshots::open(Arc::clone(&node_fs), dir).unwrap());
            let settings = DataSettings::default();
            let db = open_data(&node_fs, std::path::Path::new("/node/sm/1"), &settings).unwrap();
            db.insert(b"k", b"v").unwrap();
            // The install: received already, saved when it gets the lock.
            let mut file = snapshots.receive().unwrap();
            file.write_all(&stream(&fs, 100)).await.unwrap();
            let installed = file.finish().await.unwrap();
            let waited = Arc::new(std::sync::atomic::AtomicBool::new(false));
            let (racer, waits) = (Arc::clone(&snapshots), Arc::clone(&waited));
            *hooked.hook.lock().unwrap() = Some(Box::new(move || match racer.saving.try_lock() {
                Ok(_saving) => {
                    assert_eq!(racer.save_now(installed, &meta(100)).unwrap(), installed)
                }
                Err(_) => waits.store(true, Ordering::Relaxed),
            }));
            let built = snapshots.build(Arc::new(db), settings).await;
            let mut built = built.expect("the build fails");
            if waited.load(Ordering::Relaxed) {
                assert_eq!(
                    snapshots.save(installed, &meta(100)).await.unwrap(),
                    installed
                );
            }
            // The build's snapshot is sent whole, replaced or not.
            let bytes = read_whole(&mut built, || {}).await;
            let mut archive = tar::Archive::new(&bytes[..]);
            assert!(archive.entries().unwrap().count() > 0);
            assert_eq!(
                snapshots.current_meta().unwrap().unwrap(),
                (installed, meta(100))
            );
        });
    }

    #[test]
    fn a_snapshot_kept_as_one_tar_file_is_unpacked_at_open() {
        let fs = FaultInjectionFs::new();
        let dir = PathBuf::from("/node/snapshots");
        fs.create_dir_all(&dir).unwrap();
        files::write_synced(&fs, &dir.join("snapshot-4.tar"), &stream(&fs, 9)).unwrap();
        let json = serde_json::to_vec(&meta(9)).unwrap();
        files::write_synced(&fs, &dir.join("snapshot-4.meta"), &json).unwrap();
        files::set_current(&fs, &dir, 4).unwrap();
        let snapshots = Snapshots::open(Arc::new(fs.clone()), dir.clone()).unwrap();
        assert_eq!(snapshots.current_meta().unwrap().unwrap(), (4, meta(9)));
        let crashed = fs.crash();
        let table = snapshots.path(4).join("000001.sst");
        assert_eq!(crashed.contents(&table).unwrap(), b"covers 9");
        assert!(crashed.contents(&dir.join("snapshot-4.tar")).is_none());
    }
}
