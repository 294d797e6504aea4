//! A [`FileSystem`] in memory that can lose power, and lie.
//!
//! It keeps two views of every file and directory: what a process sees now,
//! and what a disk is sure to hold after a power cut (data up to the last
//! `sync`, names as of the last `sync_dir`), with the directory operations
//! made since. [`FaultInjectionFs::crash`] returns a new file system holding
//! only the sure view: LevelDB's fault-injection model. A real disk may keep
//! more, and [`FaultInjectionFs::crash_image`] draws one such state: each
//! file keeps its synced bytes plus a prefix, or a subset of the pages, of
//! what was written after, and each unsynced directory operation happens or
//! not (`crash.rs`). [`FaultInjectionFs::on_sync`] calls a test at every
//! sync, where it can draw crash states (ALICE's exploration at every
//! persistence point), and [`FaultInjectionFs::inject`] makes chosen
//! operations fail (`inject.rs`).

mod crash;
mod inject;

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

pub use inject::{FaultEffect, FaultOp};

use super::{FileSystem, LockGuard, ReadableFile, WritableFile};

/// Contents of one file: `data` as the process sees it, of which the first
/// `synced` bytes would survive a power cut.
#[derive(Debug, Default)]
struct Inode {
    data: Vec<u8>,
    synced: usize,
}

type InodeRef = Arc<Mutex<Inode>>;

/// A change to a directory's names not yet made durable by `sync_dir`.
#[derive(Debug, Clone)]
enum DirOp {
    /// `path` now names `inode` (a creation).
    Link(PathBuf, InodeRef),
    /// `path` is gone.
    Unlink(PathBuf),
    /// `from` moved to `to`, atomically.
    Rename(PathBuf, PathBuf, InodeRef),
}

impl DirOp {
    /// The directory the operation changes.
    fn dir(&self) -> Option<&Path> {
        match self {
            Self::Link(path, _) | Self::Unlink(path) | Self::Rename(_, path, _) => path.parent(),
        }
    }
}

#[derive(Debug, Default)]
struct State {
    /// Names a process sees now.
    names: BTreeMap<PathBuf, InodeRef>,
    /// Names a disk is sure to hold after a power cut.
    durable_names: BTreeMap<PathBuf, InodeRef>,
    /// Directory operations since the last `sync_dir` of their directory,
    /// oldest first: each may or may not reach the disk.
    pending: Vec<DirOp>,
    dirs: BTreeSet<PathBuf>,
    locks: BTreeSet<PathBuf>,
    faults: inject::Faults,
}

/// What a sync hook is told.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SyncPoint<'a> {
    /// A file's data is about to be made durable.
    File(&'a Path),
    /// A directory's names are about to be made durable.
    Dir(&'a Path),
}

/// A function called at every sync point (see [`FaultInjectionFs::on_sync`]).
pub type SyncHook = Arc<dyn Fn(&FaultInjectionFs, SyncPoint<'_>) + Send + Sync>;

/// An in-memory file system that forgets unsynced writes on [`crash`].
///
/// [`crash`]: FaultInjectionFs::crash
#[derive(Default, Clone)]
pub struct FaultInjectionFs {
    state: Arc<Mutex<State>>,
    hook: Arc<Mutex<Option<SyncHook>>>,
    handles: Arc<inject::Handles>,
}

impl fmt::Debug for FaultInjectionFs {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = lock(&self.state);
        f.debug_struct("FaultInjectionFs")
            .field("files", &state.names.len())
            .field("pending_dir_ops", &state.pending.len())
            .finish_non_exhaustive()
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panicking test thread must not hide the file system from the rest
    // of the test: the state is plain data, still consistent.
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn not_found(path: &Path) -> io::Error {
    io::Error::new(
        io::ErrorKind::NotFound,
        format!("{} does not exist", path.display()),
    )
}

impl FaultInjectionFs {
    /// An empty file system.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// The file system a reboot after a power cut would find now: synced
    /// bytes of the files whose names were synced. `self` is unchanged, and
    /// later writes through it do not reach the returned one.
    #[must_use]
    pub fn crash(&self) -> Self {
        let state = lock(&self.state);
        let names: BTreeMap<PathBuf, InodeRef> = state
            .durable_names
            .iter()
            .map(|(path, inode)| {
                let inode = lock(inode);
                let data = inode.data[..inode.synced].to_vec();
                let synced = data.len();
                (path.clone(), Arc::new(Mutex::new(Inode { data, synced })))
            })
            .collect();
        Self::from_names(names, state.dirs.clone())
    }

    /// A file system holding `names`, all durable, in `dirs` and the
    /// directories of `names` (a file that survives keeps its directory,
    /// whose removal was not durable either).
    fn from_names(names: BTreeMap<PathBuf, InodeRef>, mut dirs: BTreeSet<PathBuf>) -> Self {
        for path in names.keys() {
            dirs.extend(path.ancestors().skip(1).map(Path::to_path_buf));
        }
        let after = State {
            durable_names: names.clone(),
            names,
            dirs,
            ..State::default()
        };
        Self {
            state: Arc::new(Mutex::new(after)),
            hook: Arc::default(),
            handles: Arc::default(),
        }
    }

    /// Calls `hook` at the start of every file `sync` and `sync_dir`, on
    /// the syncing thread, before the sync takes effect: a power cut there
    /// loses what the sync was about to make durable. The hook may read
    /// this file system (draw [`crash_image`](Self::crash_image)s) but not
    /// sync through it.
    pub fn on_sync(&self, hook: SyncHook) {
        *lock(&self.hook) = Some(hook);
    }

    fn sync_point(&self, point: SyncPoint<'_>) {
        let hook = lock(&self.hook).clone();
        if let Some(hook) = hook {
            hook(self, point);
        }
    }

    /// Bytes of `path` as the process sees them now (for tests that damage
    /// files); `None` if there is no such file.
    #[must_use]
    pub fn contents(&self, path: &Path) -> Option<Vec<u8>> {
        let state = lock(&self.state);
        state.names.get(path).map(|inode| lock(inode).data.clone())
    }

    /// Replaces the bytes of `path`, durably (for tests that damage files).
    pub fn set_contents(&self, path: &Path, data: Vec<u8>) -> io::Result<()> {
        let state = lock(&self.state);
        let inode = state.names.get(path).ok_or_else(|| not_found(path))?;
        let mut inode = lock(inode);
        inode.synced = data.len();
        inode.data = data;
        Ok(())
    }

    fn file(&self, inode: InodeRef, path: &Path) -> io::Result<FaultFile> {
        Ok(FaultFile {
            inode,
            fs: self.clone(),
            path: path.to_path_buf(),
            _handle: self.handles.open()?,
        })
    }

    fn inode(&self, path: &Path) -> io::Result<InodeRef> {
        lock(&self.state)
            .names
            .get(path)
            .cloned()
            .ok_or_else(|| not_found(path))
    }
}

/// An open file: its inode, and the file system and name it was opened
/// by (for sync hooks and injected faults).
#[derive(Debug)]
struct FaultFile {
    inode: InodeRef,
    fs: FaultInjectionFs,
    path: PathBuf,
    /// Counts as an open descriptor while it lives.
    _handle: inject::Handle,
}

impl WritableFile for FaultFile {
    fn append(&mut self, data: &[u8]) -> io::Result<()> {
        self.fs.check(FaultOp::Append, &self.path)?;
        lock(&self.inode).data.extend_from_slice(data);
        Ok(())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }

    fn sync(&mut self) -> io::Result<()> {
        self.fs.sync_point(SyncPoint::File(&self.path));
        self.fs.check(FaultOp::Sync, &self.path)?;
        let mut inode = lock(&self.inode);
        inode.synced = inode.data.len();
        Ok(())
    }
}

impl ReadableFile for FaultFile {
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        self.fs.check(FaultOp::Read, &self.path)?;
        let inode = lock(&self.inode);
        let start = usize::try_from(offset).map_err(io::Error::other)?;
        let source = start
            .checked_add(buf.len())
            .and_then(|end| inode.data.get(start..end))
            .ok_or_else(|| {
                io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "read past the end of the file",
                )
            })?;
        buf.copy_from_slice(source);
        Ok(())
    }

    fn size(&self) -> io::Result<u64> {
        Ok(lock(&self.inode).data.len() as u64)
    }
}

#[derive(Debug)]
struct FaultLock {
    state: Arc<Mutex<State>>,
    path: PathBuf,
}

impl LockGuard for FaultLock {}

impl Drop for FaultLock {
    fn drop(&mut self) {
        lock(&self.state).locks.remove(&self.path);
    }
}

impl FileSystem for FaultInjectionFs {
    fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        let mut state = lock(&self.state);
        for ancestor in dir.ancestors() {
            state.dirs.insert(ancestor.to_path_buf());
        }
        Ok(())
    }

    fn create(&self, path: &Path) -> io::Result<Box<dyn WritableFile>> {
        self.check(FaultOp::Create, path)?;
        let mut state = lock(&self.state);
        let parent = path.parent().unwrap_or(Path::new(""));
        if !state.dirs.contains(parent) {
            return Err(not_found(parent));
        }
        let inode = InodeRef::default();
        let file = self.file(Arc::clone(&inode), path)?;
        state.names.insert(path.to_path_buf(), Arc::clone(&inode));
        state.pending.push(DirOp::Link(path.to_path_buf(), inode));
        Ok(Box::new(file))
    }

    fn open(&self, path: &Path) -> io::Result<Arc<dyn ReadableFile>> {
        self.check(FaultOp::Open, path)?;
        Ok(Arc::new(self.file(self.inode(path)?, path)?))
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        self.check(FaultOp::Rename, to)?;
        let mut state = lock(&self.state);
        let inode = state.names.remove(from).ok_or_else(|| not_found(from))?;
        state.names.insert(to.to_path_buf(), Arc::clone(&inode));
        state
            .pending
            .push(DirOp::Rename(from.to_path_buf(), to.to_path_buf(), inode));
        Ok(())
    }

    fn hard_link(&self, from: &Path, to: &Path) -> io::Result<()> {
        self.check(FaultOp::Link, to)?;
        let mut state = lock(&self.state);
        let parent = to.parent().unwrap_or(Path::new(""));
        if !state.dirs.contains(parent) {
            return Err(not_found(parent));
        }
        if state.names.contains_key(to) {
            return Err(io::Error::new(
                io::ErrorKind::AlreadyExists,
                format!("{} exists", to.display()),
            ));
        }
        let inode = Arc::clone(state.names.get(from).ok_or_else(|| not_found(from))?);
        state.names.insert(to.to_path_buf(), Arc::clone(&inode));
        state.pending.push(DirOp::Link(to.to_path_buf(), inode));
        Ok(())
    }

    fn remove(&self, path: &Path) -> io::Result<()> {
        self.check(FaultOp::Remove, path)?;
        let mut state = lock(&self.state);
        state.names.remove(path).ok_or_else(|| not_found(path))?;
        state.pending.push(DirOp::Unlink(path.to_path_buf()));
        Ok(())
    }

    fn remove_dir(&self, dir: &Path) -> io::Result<()> {
        self.check(FaultOp::Remove, dir)?;
        let mut state = lock(&self.state);
        if !state.dirs.contains(dir) {
            return Err(not_found(dir));
        }
        let in_dir = |path: &PathBuf| path.parent() == Some(dir);
        if state.names.keys().any(in_dir) || state.dirs.iter().any(in_dir) {
            return Err(io::Error::new(
                io::ErrorKind::DirectoryNotEmpty,
                format!("{} is not empty", dir.display()),
            ));
        }
        state.dirs.remove(dir);
        Ok(())
    }

    fn list(&self, dir: &Path) -> io::Result<Vec<String>> {
        let state = lock(&self.state);
        if !state.dirs.contains(dir) {
            return Err(not_found(dir));
        }
        Ok(state
            .names
            .keys()
            .chain(state.dirs.iter())
            .filter(|path| path.parent() == Some(dir))
            .filter_map(|path| {
                path.file_name()
                    .map(|name| name.to_string_lossy().into_owned())
            })
            .collect())
    }

    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        self.sync_point(SyncPoint::Dir(dir));
        self.check(FaultOp::SyncDir, dir)?;
        let mut state = lock(&self.state);
        state.pending.retain(|op| op.dir() != Some(dir));
        let in_dir = |path: &PathBuf| path.parent() == Some(dir);
        state.durable_names.retain(|path, _| !in_dir(path));
        let current: Vec<_> = state
            .names
            .iter()
            .filter(|(path, _)| in_dir(path))
            .map(|(path, inode)| (path.clone(), Arc::clone(inode)))
            .collect();
        state.durable_names.extend(current);
        Ok(())
    }

    fn try_lock(&self, path: &Path) -> io::Result<Option<Box<dyn LockGuard>>> {
        let mut state = lock(&self.state);
        if !state.locks.insert(path.to_path_buf()) {
            return Ok(None);
        }
        if !state.names.contains_key(path) {
            state.names.insert(path.to_path_buf(), InodeRef::default());
        }
        Ok(Some(Box::new(FaultLock {
            state: Arc::clone(&self.state),
            path: path.to_path_buf(),
        })))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(fs: &FaultInjectionFs, path: &Path, data: &[u8], sync: bool) {
        let mut file = fs.create(path).unwrap();
        file.append(data).unwrap();
        if sync {
            file.sync().unwrap();
        }
    }

    #[test]
    fn crash_keeps_synced_bytes_of_synced_names_only() {
        let fs = FaultInjectionFs::new();
        let dir = Path::new("/db");
        fs.create_dir_all(dir).unwrap();
        write(&fs, &dir.join("a"), b"synced", true);
        fs.sync_dir(dir).unwrap();
        let mut file = fs.create(&dir.join("c")).unwrap();
        fs.sync_dir(dir).unwrap();
        write(&fs, &dir.join("b"), b"name never synced", true);
        file.append(b"durable").unwrap();
        file.sync().unwrap();
        file.append(b" lost").unwrap();

        let after = fs.crash();
        assert_eq!(after.contents(&dir.join("a")).unwrap(), b"synced");
        assert_eq!(after.contents(&dir.join("b")), None);
        assert_eq!(after.contents(&dir.join("c")).unwrap(), b"durable");
        // Writes through the old handle no longer reach the crashed copy.
        file.append(b" more").unwrap();
        file.sync().unwrap();
        assert_eq!(after.contents(&dir.join("c")).unwrap(), b"durable");
    }

    #[test]
    fn rename_is_durable_only_after_sync_dir() {
        let fs = FaultInjectionFs::new();
        let dir = Path::new("/db");
        fs.create_dir_all(dir).unwrap();
        write(&fs, &dir.join("old"), b"1", true);
        fs.sync_dir(dir).unwrap();
        write(&fs, &dir.join("tmp"), b"2", true);
        fs.rename(&dir.join("tmp"), &dir.join("old")).unwrap();
        assert_eq!(fs.crash().contents(&dir.join("old")).unwrap(), b"1");
        fs.sync_dir(dir).unwrap();
        assert_eq!(fs.crash().contents(&dir.join("old")).unwrap(), b"2");
    }

    #[test]
    fn a_link_names_the_same_bytes_and_is_durable_only_after_sync_dir() {
        let fs = FaultInjectionFs::new();
        let (a, b) = (Path::new("/a"), Path::new("/b"));
        fs.create_dir_all(a).unwrap();
        fs.create_dir_all(b).unwrap();
        write(&fs, &a.join("t"), b"table", true);
        fs.sync_dir(a).unwrap();
        fs.hard_link(&a.join("t"), &b.join("t")).unwrap();
        let err = fs.hard_link(&a.join("t"), &b.join("t")).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::AlreadyExists);
        assert!(fs.hard_link(&a.join("missing"), &b.join("m")).is_err());
        assert_eq!(fs.crash().contents(&b.join("t")), None);
        fs.sync_dir(b).unwrap();
        // Removing one name leaves the other.
        fs.remove(&a.join("t")).unwrap();
        fs.sync_dir(a).unwrap();
        let after = fs.crash();
        assert_eq!(after.contents(&b.join("t")).unwrap(), b"table");
        assert_eq!(after.contents(&a.join("t")), None);
    }

    #[test]
    fn directories_are_listed_and_removed_when_empty() {
        let fs = FaultInjectionFs::new();
        let top = Path::new("/top");
        fs.create_dir_all(&top.join("sub/deeper")).unwrap();
        write(&fs, &top.join("file"), b"1", true);
        write(&fs, &top.join("sub/inner"), b"2", true);
        fs.sync_dir(&top.join("sub")).unwrap();
        let mut names = fs.list(top).unwrap();
        names.sort();
        assert_eq!(names, ["file", "sub"]);
        assert!(fs.remove_dir(&top.join("sub")).is_err());
        crate::fs::remove_dir_all(&fs, &top.join("sub")).unwrap();
        assert_eq!(fs.list(top).unwrap(), ["file"]);
        assert!(fs.list(&top.join("sub")).is_err());
        // The removal of the file was never made durable: after a power cut
        // it is back, and so is its directory.
        assert_eq!(fs.crash().list(&top.join("sub")).unwrap(), ["inner"]);
    }

    #[test]
    fn a_later_fault_lets_the_skipped_operations_through_then_hits_one() {
        let fs = FaultInjectionFs::new();
        fs.create_dir_all(Path::new("/d")).unwrap();
        let mut file = fs.create(Path::new("/d/f.wal")).unwrap();
        fs.inject_later(FaultOp::Append, ".wal", 2, FaultEffect::Panic);
        file.append(b"1").unwrap();
        file.append(b"2").unwrap();
        assert!(fs.armed());
        let hit = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| file.append(b"3")));
        assert!(hit.is_err(), "the third append did not panic");
        assert!(!fs.armed());
        file.append(b"4").unwrap();
        assert_eq!(fs.contents(Path::new("/d/f.wal")).unwrap(), b"124");
        fs.inject_later(FaultOp::Sync, "", 0, FaultEffect::Error);
        assert!(file.sync().is_err());
        file.sync().unwrap();
    }

    #[test]
    fn lock_is_exclusive_until_dropped() {
        let fs = FaultInjectionFs::new();
        let path = Path::new("/LOCK");
        let guard = fs.try_lock(path).unwrap();
        assert!(guard.is_some());
        assert!(fs.try_lock(path).unwrap().is_none());
        drop(guard);
        assert!(fs.try_lock(path).unwrap().is_some());
    }

    #[test]
    fn errors_for_missing_files_and_reads_past_the_end() {
        let fs = FaultInjectionFs::new();
        assert!(fs.open(Path::new("/nope")).is_err());
        assert!(fs.create(Path::new("/nodir/file")).is_err());
        assert!(fs.remove(Path::new("/nope")).is_err());
        fs.create_dir_all(Path::new("/d")).unwrap();
        write(&fs, Path::new("/d/f"), b"abc", false);
        let file = fs.open(Path::new("/d/f")).unwrap();
        let mut buf = [0; 4];
        assert!(file.read_exact_at(&mut buf, 0).is_err());
        assert!(file.read_exact_at(&mut buf[..2], 1).is_ok());
        assert_eq!(&buf[..2], b"bc");
    }
}
