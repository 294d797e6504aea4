//! Snapshots: a [`Db::checkpoint`] of the state machine packed in one tar
//! file, with its [`SnapshotMeta`] beside it. openraft streams the file to
//! a lagging follower in chunks; the follower unpacks it into a fresh
//! database directory ([`crate::StateMachine`] swaps it in).
//!
//! In `dir`: `snapshot-N.tar` and `snapshot-N.meta` (JSON), and `CURRENT`
//! naming the live N; `CURRENT` is replaced by a rename, so a crash leaves
//! the old snapshot or the new one, never half of each.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use openraft::storage::Snapshot;
use openraft::{
    BasicNode, ErrorSubject, ErrorVerb, LogId, RaftSnapshotBuilder, SnapshotMeta, StorageError,
    StoredMembership,
};
use siftdb::Db;

use crate::codec::decode;
use crate::keys;
use crate::log_store::io_error;
use crate::purge_gate::PurgeGate;
use crate::state_machine::{DataHandle, open_data};
use crate::types::{NodeId, TypeConfig};

type StorageResult<T> = Result<T, StorageError<NodeId>>;

/// What a snapshot's metadata says.
pub(crate) type Meta = SnapshotMeta<NodeId, BasicNode>;

/// The last applied log id and membership a state machine records.
pub(crate) type Applied = (Option<LogId<NodeId>>, StoredMembership<NodeId, BasicNode>);

/// The snapshots of one node.
#[derive(Debug)]
pub(crate) struct Snapshots {
    dir: PathBuf,
    /// Numbers snapshots, builds and received ones alike.
    next: AtomicU64,
    /// Held while `CURRENT` changes.
    saving: tokio::sync::Mutex<()>,
    /// Told what the current snapshot covers, for the log's purges.
    pub(crate) gate: PurgeGate,
    /// Transfers begun since the node started.
    pub(crate) transfers: Arc<AtomicU64>,
}

impl Snapshots {
    /// The snapshots in `dir`, created if missing; drops what an
    /// interrupted build or transfer left.
    pub(crate) fn open(dir: PathBuf) -> StorageResult<Self> {
        let fail = |e: std::io::Error| io_error(ErrorSubject::Snapshot(None), ErrorVerb::Read, &e);
        std::fs::create_dir_all(&dir).map_err(fail)?;
        let current = read_current(&dir).map_err(fail)?;
        let mut next = current.map_or(1, |n| n + 1);
        for entry in std::fs::read_dir(&dir).map_err(fail)? {
            let name = entry
                .map_err(fail)?
                .file_name()
                .to_string_lossy()
                .into_owned();
            let number = snapshot_number(&name);
            next = next.max(number.map_or(0, |n| n + 1));
            if name != "CURRENT" && number != current {
                let path = dir.join(&name);
                let _ = std::fs::remove_dir_all(&path).or_else(|_| std::fs::remove_file(&path));
            }
        }
        let mut snapshots = Self {
            dir,
            next: AtomicU64::new(next),
            saving: tokio::sync::Mutex::new(()),
            gate: PurgeGate::new(None),
            transfers: Arc::default(),
        };
        if let Some((_, meta)) = snapshots.current_meta().map_err(fail)? {
            snapshots.gate = PurgeGate::new(meta.last_log_id.map(|id| id.index));
        }
        Ok(snapshots)
    }

    /// The number and metadata of the current snapshot, if there is one.
    pub(crate) fn current_meta(&self) -> std::io::Result<Option<(u64, Meta)>> {
        let Some(n) = read_current(&self.dir)? else {
            return Ok(None);
        };
        Ok(Some((n, self.read_meta(n)?)))
    }

    fn number(&self) -> u64 {
        self.next.fetch_add(1, Ordering::Relaxed)
    }

    /// The file of snapshot `n`.
    pub(crate) fn tar(&self, n: u64) -> PathBuf {
        self.dir.join(format!("snapshot-{n}.tar"))
    }

    fn meta(&self, n: u64) -> PathBuf {
        self.dir.join(format!("snapshot-{n}.meta"))
    }

    /// A new file to receive a snapshot into, and its number.
    pub(crate) async fn receive(&self) -> StorageResult<(u64, tokio::fs::File)> {
        let n = self.number();
        // Read as well as written: the state machine reads it back.
        let file = tokio::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(self.tar(n))
            .await
            .map_err(|e| io_error(ErrorSubject::Snapshot(None), ErrorVerb::Write, &e))?;
        Ok((n, file))
    }

    /// Makes snapshot `n` (its tar file written and synced) the current
    /// one, with `meta`, and deletes the one it replaces; unless the
    /// current one covers as much of the log or more (a build that
    /// finished after an install of a newer snapshot): then `n` is deleted
    /// and the current one stays. Returns the number current afterwards.
    pub(crate) async fn save(self: &Arc<Self>, n: u64, meta: &Meta) -> StorageResult<u64> {
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
        tokio::task::spawn_blocking(move || this.save_now(n, &saved))
            .await
            .map_err(|e| fail(&e))?
            .map_err(|e| fail(&e))
    }

    /// [`Self::save`], with `saving` held.
    fn save_now(&self, n: u64, meta: &Meta) -> std::io::Result<u64> {
        let json = serde_json::to_vec(meta).map_err(std::io::Error::other)?;
        let previous = read_current(&self.dir)?;
        if let Some(current) = previous.filter(|&current| current != n)
            && self.read_meta(current)?.last_log_id >= meta.last_log_id
        {
            let _ = std::fs::remove_file(self.tar(n));
            return Ok(current);
        }
        write_synced(&self.meta(n), &json)?;
        let temp = self.dir.join("CURRENT.tmp");
        write_synced(&temp, n.to_string().as_bytes())?;
        std::fs::rename(&temp, self.dir.join("CURRENT"))?;
        sync_dir(&self.dir)?;
        self.gate.covered(meta.last_log_id.map(|id| id.index));
        if let Some(old) = previous.filter(|&old| old != n) {
            let _ = std::fs::remove_file(self.tar(old));
            let _ = std::fs::remove_file(self.meta(old));
        }
        Ok(n)
    }

    /// The metadata of snapshot `n`.
    fn read_meta(&self, n: u64) -> std::io::Result<Meta> {
        let json = std::fs::read(self.meta(n))?;
        serde_json::from_slice(&json).map_err(std::io::Error::other)
    }

    /// The current snapshot, if there is one.
    pub(crate) async fn current(&self) -> StorageResult<Option<Snapshot<TypeConfig>>> {
        let fail =
            |e: &dyn std::error::Error| io_error(ErrorSubject::Snapshot(None), ErrorVerb::Read, e);
        let _saving = self.saving.lock().await;
        let Some(n) = read_current(&self.dir).map_err(|e| fail(&e))? else {
            return Ok(None);
        };
        self.open_snapshot(n).await.map(Some)
    }

    /// Snapshot `n`: its metadata and its file.
    async fn open_snapshot(&self, n: u64) -> StorageResult<Snapshot<TypeConfig>> {
        let fail =
            |e: &dyn std::error::Error| io_error(ErrorSubject::Snapshot(None), ErrorVerb::Read, e);
        let meta = self.read_meta(n).map_err(|e| fail(&e))?;
        let file = tokio::fs::File::open(self.tar(n))
            .await
            .map_err(|e| fail(&e))?;
        Ok(Snapshot {
            meta,
            snapshot: Box::new(file),
        })
    }

    /// Checkpoints `db`, packs the copy, and makes it the current snapshot
    /// (unless a newer one became current meanwhile: then that one is
    /// returned). The copy is opened with `db`'s value indexes, `indexes`:
    /// a custom extractor's function is needed to open it.
    async fn build(
        self: &Arc<Self>,
        db: Arc<Db>,
        indexes: Vec<siftdb::IndexDef>,
    ) -> StorageResult<Snapshot<TypeConfig>> {
        let n = self.number();
        let (work, tar) = (self.dir.join(format!("build-{n}")), self.tar(n));
        let packed = tokio::task::spawn_blocking(move || -> Result<Applied, String> {
            db.checkpoint(&work).map_err(|e| e.to_string())?;
            // What the copy holds, read from the copy: applies go on while
            // it is taken, so the live state machine may be ahead of it.
            let applied = {
                let copy = open_data(&work, &indexes).map_err(|e| e.to_string())?;
                read_applied(&copy)?
            };
            pack(&work, &tar).map_err(|e| e.to_string())?;
            let _ = std::fs::remove_dir_all(&work);
            Ok(applied)
        });
        let fail = |e: String| {
            io_error(
                ErrorSubject::Snapshot(None),
                ErrorVerb::Write,
                &std::io::Error::other(e),
            )
        };
        let (last_log_id, last_membership) = packed
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
        let current = self.save(n, &meta).await?;
        self.open_snapshot(current).await
    }
}

/// Builds a snapshot of the state machine as it is when it runs (openraft
/// runs it beside the applies).
#[derive(Debug)]
pub struct SnapshotBuilder {
    pub(crate) data: DataHandle,
    pub(crate) snapshots: Arc<Snapshots>,
    /// The value indexes the state machine declares.
    pub(crate) indexes: Vec<siftdb::IndexDef>,
}

impl RaftSnapshotBuilder<TypeConfig> for SnapshotBuilder {
    async fn build_snapshot(&mut self) -> StorageResult<Snapshot<TypeConfig>> {
        self.snapshots
            .build(self.data.db(), self.indexes.clone())
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

/// Packs the files of `dir` (no subdirectories) into the tar file `to`,
/// synced.
fn pack(dir: &Path, to: &Path) -> std::io::Result<()> {
    let mut builder = tar::Builder::new(std::fs::File::create(to)?);
    let mut names: Vec<_> = std::fs::read_dir(dir)?
        .map(|e| e.map(|e| e.file_name()))
        .collect::<Result<_, _>>()?;
    names.sort();
    for name in names {
        let path = dir.join(&name);
        if path.is_file() {
            builder.append_path_with_name(&path, &name)?;
        }
    }
    builder.into_inner()?.sync_all()
}

/// Unpacks the tar file `from` into the new directory `dir`, every file and
/// the directory synced (`CURRENT` of the state machine names it next). A
/// damaged or hostile archive is an error (tar refuses paths out of `dir`);
/// what it unpacks is checked again when the database opens.
pub(crate) fn unpack(from: &Path, dir: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    tar::Archive::new(std::fs::File::open(from)?).unpack(dir)?;
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        if path.is_file() {
            std::fs::File::open(&path)?.sync_all()?;
        }
    }
    sync_dir(dir)
}

/// The number `CURRENT` in `dir` names, if it exists.
fn read_current(dir: &Path) -> std::io::Result<Option<u64>> {
    match std::fs::read_to_string(dir.join("CURRENT")) {
        Ok(text) => text.trim().parse().map(Some).map_err(|_| {
            std::io::Error::other(format!("{}: CURRENT is not a number", dir.display()))
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

/// N of `snapshot-N.tar` or `snapshot-N.meta`.
fn snapshot_number(name: &str) -> Option<u64> {
    let stem = name.strip_prefix("snapshot-")?;
    let n = stem
        .strip_suffix(".tar")
        .or_else(|| stem.strip_suffix(".meta"))?;
    n.parse().ok()
}

/// Writes `bytes` to `path` and syncs the file.
pub(crate) fn write_synced(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    let mut file = std::fs::File::create(path)?;
    file.write_all(bytes)?;
    file.sync_all()
}

/// Syncs directory `dir`, so the names in it survive a crash.
pub(crate) fn sync_dir(dir: &Path) -> std::io::Result<()> {
    std::fs::File::open(dir)?.sync_all()
}

#[cfg(test)]
mod tests {
    use openraft::{CommittedLeaderId, LogId};
    use tokio::io::AsyncWriteExt;

    use super::*;

    fn meta(index: u64) -> Meta {
        Meta {
            last_log_id: Some(LogId::new(CommittedLeaderId::new(1, 0), index)),
            last_membership: StoredMembership::default(),
            snapshot_id: format!("1-0-{index}"),
        }
    }

    /// Writes a snapshot file and saves it with `meta(index)`.
    async fn saved(snapshots: &Arc<Snapshots>, index: u64) -> (u64, u64) {
        let (n, mut file) = snapshots.receive().await.unwrap();
        file.write_all(format!("covers {index}").as_bytes())
            .await
            .unwrap();
        file.sync_all().await.unwrap();
        (n, snapshots.save(n, &meta(index)).await.unwrap())
    }

    #[test]
    fn a_build_that_finishes_after_a_newer_install_leaves_the_newer_current() {
        let dir = tempfile::TempDir::new().unwrap();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async {
            let snapshots = Arc::new(Snapshots::open(dir.path().to_path_buf()).unwrap());
            // The build takes its number first, the install finishes first.
            let (build, mut build_file) = snapshots.receive().await.unwrap();
            let (installed, current) = saved(&snapshots, 10).await;
            assert_eq!(current, installed);
            build_file.write_all(b"covers 5").await.unwrap();
            build_file.sync_all().await.unwrap();
            assert_eq!(snapshots.save(build, &meta(5)).await.unwrap(), installed);
            let current = snapshots.current().await.unwrap().unwrap();
            assert_eq!(current.meta, meta(10));
            assert!(snapshots.tar(installed).exists());
            assert!(!snapshots.tar(build).exists());
            // A newer one still replaces it.
            let (newer, current) = saved(&snapshots, 12).await;
            assert_eq!(current, newer);
            assert!(!snapshots.tar(installed).exists());
            assert_eq!(snapshots.current().await.unwrap().unwrap().meta, meta(12));
        });
    }
}
