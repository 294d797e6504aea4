//! Snapshots: a [`Db::checkpoint`] of the state machine packed in one tar
//! file, with its [`SnapshotMeta`] beside it. openraft streams the file to
//! a lagging follower in chunks; the follower unpacks it into a fresh
//! database directory ([`crate::StateMachine`] swaps it in).
//!
//! In `dir`: `snapshot-N.tar` and `snapshot-N.meta` (JSON), and `CURRENT`
//! naming the live N; `CURRENT` is replaced by a rename, so a crash leaves
//! the old snapshot or the new one, never half of each. Every file goes
//! through the node's [`FileSystem`](siftdb::fs::FileSystem).

use std::path::{Component, Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use openraft::storage::Snapshot;
use openraft::{
    BasicNode, ErrorSubject, ErrorVerb, LogId, RaftSnapshotBuilder, SnapshotMeta, StorageError,
    StoredMembership,
};
use siftdb::Db;
use siftdb::fs::FileSystem;

use crate::codec::decode;
use crate::files::{self, FileReader, FileWriter, Fs};
use crate::keys;
use crate::log_store::io_error;
use crate::purge_gate::PurgeGate;
use crate::snapshot_file::SnapshotFile;
use crate::state_machine::{DataHandle, DataSettings, open_data};
use crate::types::{NodeId, TypeConfig};

type StorageResult<T> = Result<T, StorageError<NodeId>>;

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
        };
        if let Some((_, meta)) = snapshots.current_meta().map_err(fail)? {
            snapshots.gate = PurgeGate::new(meta.last_log_id.map(|id| id.index));
        }
        Ok(snapshots)
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

    /// The file of snapshot `n`.
    pub(crate) fn tar(&self, n: u64) -> PathBuf {
        self.dir.join(format!("snapshot-{n}.tar"))
    }

    fn meta(&self, n: u64) -> PathBuf {
        self.dir.join(format!("snapshot-{n}.meta"))
    }

    /// A new file to receive a snapshot into.
    pub(crate) fn receive(&self) -> StorageResult<SnapshotFile> {
        let n = self.number();
        let file = self
            .fs
            .create(&self.tar(n))
            .map_err(|e| io_error(ErrorSubject::Snapshot(None), ErrorVerb::Write, &e))?;
        Ok(SnapshotFile::receiving(n, file))
    }

    /// Deletes snapshot `n`'s file (one abandoned or replaced): a failure
    /// leaves it to the next open.
    pub(crate) fn discard(&self, n: u64) {
        let _ = self.fs.remove(&self.tar(n));
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
        // The tar file's and the metadata's names are durable before
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
    pub(crate) async fn current(&self) -> StorageResult<Option<Snapshot<TypeConfig>>> {
        let fail =
            |e: &dyn std::error::Error| io_error(ErrorSubject::Snapshot(None), ErrorVerb::Read, e);
        let _saving = self.saving.lock().await;
        let Some(n) = files::read_current(self.fs.as_ref(), &self.dir).map_err(|e| fail(&e))?
        else {
            return Ok(None);
        };
        self.open_snapshot(n).map(Some)
    }

    /// Snapshot `n`: its metadata and its file.
    fn open_snapshot(&self, n: u64) -> StorageResult<Snapshot<TypeConfig>> {
        let fail =
            |e: &dyn std::error::Error| io_error(ErrorSubject::Snapshot(None), ErrorVerb::Read, e);
        let meta = self.read_meta(n).map_err(|e| fail(&e))?;
        let file = self.fs.open(&self.tar(n)).map_err(|e| fail(&e))?;
        let file = SnapshotFile::reading(n, file).map_err(|e| fail(&e))?;
        Ok(Snapshot {
            meta,
            snapshot: Box::new(file),
        })
    }

    /// Checkpoints `db`, packs the copy, and makes it the current snapshot
    /// (unless a newer one became current meanwhile: then that one is
    /// returned). The copy is opened as `db` is, with `settings`: a custom
    /// extractor's function is needed to open it.
    async fn build(
        self: &Arc<Self>,
        db: Arc<Db>,
        settings: DataSettings,
    ) -> StorageResult<Snapshot<TypeConfig>> {
        let n = self.number();
        let (work, tar) = (self.dir.join(format!("build-{n}")), self.tar(n));
        let fs = Arc::clone(&self.fs);
        let packed = tokio::task::spawn_blocking(move || -> Result<Applied, String> {
            db.checkpoint(&work).map_err(|e| e.to_string())?;
            // What the copy holds, read from the copy: applies go on while
            // it is taken, so the live state machine may be ahead of it.
            let applied = {
                let copy = open_data(&fs, &work, &settings).map_err(|e| e.to_string())?;
                read_applied(&copy)?
            };
            pack(fs.as_ref(), &work, &tar).map_err(|e| e.to_string())?;
            let _ = siftdb::fs::remove_dir_all(fs.as_ref(), &work);
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
        self.open_snapshot(current)
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

/// Packs the files of `dir` (no subdirectories) into the tar file `to`,
/// synced.
fn pack(fs: &dyn FileSystem, dir: &Path, to: &Path) -> std::io::Result<()> {
    let mut builder = tar::Builder::new(FileWriter(fs.create(to)?));
    let mut names = fs.list(dir)?;
    names.sort();
    for name in names {
        let path = dir.join(&name);
        if files::is_dir(fs, &path) {
            continue;
        }
        let file = FileReader::new(fs.open(&path)?)?;
        let mut header = tar::Header::new_gnu();
        header.set_entry_type(tar::EntryType::Regular);
        header.set_size(file.len());
        header.set_mode(0o644);
        builder.append_data(&mut header, &name, file)?;
    }
    builder.into_inner()?.0.sync()
}

/// Unpacks the tar file `from` into the new directory `dir`, every file and
/// the directory synced (`CURRENT` of the state machine names it next). A
/// damaged or hostile archive is an error: only plain files with plain
/// names are unpacked. What they hold is checked again when the database
/// opens.
pub(crate) fn unpack(fs: &dyn FileSystem, from: &Path, dir: &Path) -> std::io::Result<()> {
    fs.create_dir_all(dir)?;
    if let Some(parent) = dir.parent() {
        fs.sync_dir(parent)?;
    }
    let mut archive = tar::Archive::new(FileReader::new(fs.open(from)?)?);
    for entry in archive.entries()? {
        let mut entry = entry?;
        let path = entry.path()?.into_owned();
        let mut components = path.components();
        let (Some(Component::Normal(name)), None) = (components.next(), components.next()) else {
            return Err(bad_entry(&path));
        };
        if entry.header().entry_type() != tar::EntryType::Regular {
            return Err(bad_entry(&path));
        }
        let mut out = FileWriter(fs.create(&dir.join(name))?);
        std::io::copy(&mut entry, &mut out)?;
        out.0.sync()?;
    }
    fs.sync_dir(dir)
}

fn bad_entry(path: &Path) -> std::io::Error {
    std::io::Error::new(
        std::io::ErrorKind::InvalidData,
        format!("a snapshot holds {}, not a plain file", path.display()),
    )
}

/// N of `snapshot-N.tar` or `snapshot-N.meta`.
fn snapshot_number(name: &str) -> Option<u64> {
    let stem = name.strip_prefix("snapshot-")?;
    let n = stem
        .strip_suffix(".tar")
        .or_else(|| stem.strip_suffix(".meta"))?;
    n.parse().ok()
}

#[cfg(test)]
mod tests {
    use openraft::{CommittedLeaderId, LogId};
    use siftdb::fs::FaultInjectionFs;
    use tokio::io::AsyncWriteExt;

    use super::*;

    fn meta(index: u64) -> Meta {
        Meta {
            last_log_id: Some(LogId::new(CommittedLeaderId::new(1, 0), index)),
            last_membership: StoredMembership::default(),
            snapshot_id: format!("1-0-{index}"),
        }
    }

    /// Receives a snapshot file and saves it with `meta(index)`.
    async fn saved(snapshots: &Arc<Snapshots>, index: u64) -> (u64, u64) {
        let mut file = snapshots.receive().unwrap();
        file.write_all(format!("covers {index}").as_bytes())
            .await
            .unwrap();
        let n = file.finish().await.unwrap();
        (n, snapshots.save(n, &meta(index)).await.unwrap())
    }

    #[test]
    fn a_build_that_finishes_after_a_newer_install_leaves_the_newer_current() {
        let fs = FaultInjectionFs::new();
        let exists = |path: PathBuf| fs.contents(&path).is_some();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async {
            let dir = PathBuf::from("/node/snapshots");
            let snapshots = Arc::new(Snapshots::open(Arc::new(fs.clone()), dir).unwrap());
            // The build takes its number first, the install finishes first.
            let mut build_file = snapshots.receive().unwrap();
            let (installed, current) = saved(&snapshots, 10).await;
            assert_eq!(current, installed);
            build_file.write_all(b"covers 5").await.unwrap();
            let build = build_file.finish().await.unwrap();
            assert_eq!(snapshots.save(build, &meta(5)).await.unwrap(), installed);
            let current = snapshots.current().await.unwrap().unwrap();
            assert_eq!(current.meta, meta(10));
            assert!(exists(snapshots.tar(installed)));
            assert!(!exists(snapshots.tar(build)));
            // A newer one still replaces it, durably.
            let (newer, current) = saved(&snapshots, 12).await;
            assert_eq!(current, newer);
            assert!(!exists(snapshots.tar(installed)));
            assert_eq!(snapshots.current().await.unwrap().unwrap().meta, meta(12));
            let after = Snapshots::open(Arc::new(fs.crash()), snapshots.dir.clone()).unwrap();
            assert_eq!(after.current_meta().unwrap().unwrap(), (newer, meta(12)));
        });
    }

    #[test]
    fn unpack_refuses_what_is_not_a_plain_file() {
        let fs = FaultInjectionFs::new();
        let dir = Path::new("/node");
        fs.create_dir_all(dir).unwrap();
        let archive = |path: &str, kind: tar::EntryType| {
            let mut builder = tar::Builder::new(Vec::new());
            let mut header = tar::Header::new_gnu();
            header.set_entry_type(kind);
            header.set_size(1);
            header.set_mode(0o644);
            // `append_data` refuses `..`: the name is written raw.
            header.as_old_mut().name[..path.len()].copy_from_slice(path.as_bytes());
            header.set_cksum();
            builder.append(&header, &b"x"[..]).unwrap();
            builder.into_inner().unwrap()
        };
        let tar = dir.join("in.tar");
        for (path, kind) in [
            ("../escape", tar::EntryType::Regular),
            ("sub/file", tar::EntryType::Regular),
            ("/abs", tar::EntryType::Regular),
            ("link", tar::EntryType::Symlink),
        ] {
            files::write_synced(&fs, &tar, &archive(path, kind)).unwrap();
            let err = unpack(&fs, &tar, &dir.join("out")).unwrap_err();
            assert_eq!(err.kind(), std::io::ErrorKind::InvalidData, "{path}");
        }
        files::write_synced(&fs, &tar, &archive("000001.sst", tar::EntryType::Regular)).unwrap();
        unpack(&fs, &tar, &dir.join("out")).unwrap();
        assert_eq!(
            fs.crash().contents(&dir.join("out/000001.sst")).unwrap(),
            b"x"
        );
    }
}
