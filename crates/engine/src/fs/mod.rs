//! The file layer: every byte `siftdb` reads or writes goes through a
//! [`FileSystem`], so tests can swap in one that loses what was not synced
//! (`FaultInjectionFs`) and check what survives a simulated power cut.
//!
//! `FaultInjectionFs` is a test tool, not part of the API: it is compiled
//! for this crate's own tests and with the `fuzzing` feature, which the
//! integration tests (through a dev-dependency on this crate) and `fuzz/`
//! turn on.
//!
//! The contract mirrors POSIX: data appended to a file is durable once
//! [`WritableFile::sync`] returns; a created, renamed or removed *name* is
//! durable once [`FileSystem::sync_dir`] on its directory returns.

mod direct;
#[cfg(any(test, feature = "fuzzing"))]
mod fault;
mod read_only;
mod std_fs;

use std::fmt::Debug;
use std::io;
use std::path::Path;
use std::sync::Arc;

#[cfg(any(test, feature = "fuzzing"))]
pub use fault::{FaultEffect, FaultInjectionFs, FaultOp, SyncHook, SyncPoint};
pub use read_only::ReadOnlyFs;
pub use std_fs::StdFs;

/// A directory tree the database lives in.
pub trait FileSystem: Send + Sync + Debug + 'static {
    /// Creates `dir` and its missing parents.
    fn create_dir_all(&self, dir: &Path) -> io::Result<()>;
    /// Creates `path` empty (truncating an existing file) for appending.
    fn create(&self, path: &Path) -> io::Result<Box<dyn WritableFile>>;
    /// Opens an existing file for positional reads.
    fn open(&self, path: &Path) -> io::Result<Arc<dyn ReadableFile>>;
    /// [`FileSystem::open`] for reads that bypass the operating system's
    /// page cache (`O_DIRECT`), where there is one; tables are opened so
    /// with `DbBuilder::direct_reads`. A file system without a page cache
    /// opens as [`FileSystem::open`] does.
    fn open_direct(&self, path: &Path) -> io::Result<Arc<dyn ReadableFile>> {
        self.open(path)
    }
    /// Atomically replaces `to` with `from`.
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()>;
    /// Makes `to`, a new name, name the file `from` names (a hard link):
    /// both name the same bytes until one is removed. Only for files no
    /// one writes any more. The new name is durable once its directory is
    /// synced.
    fn hard_link(&self, from: &Path, to: &Path) -> io::Result<()>;
    /// Deletes a file.
    fn remove(&self, path: &Path) -> io::Result<()>;
    /// Deletes the empty directory `dir`.
    fn remove_dir(&self, dir: &Path) -> io::Result<()>;
    /// Names of the entries of `dir`, files and directories (names only,
    /// any order).
    fn list(&self, dir: &Path) -> io::Result<Vec<String>>;
    /// Makes the creations, renames and removals in `dir` durable.
    fn sync_dir(&self, dir: &Path) -> io::Result<()>;
    /// Takes the exclusive lock on `path` (creating it), held until the
    /// returned guard is dropped. `Ok(None)` when another holder has it.
    fn try_lock(&self, path: &Path) -> io::Result<Option<Box<dyn LockGuard>>>;
}

/// A file being written from start to end.
pub trait WritableFile: Send + Debug {
    /// Appends `data` (possibly buffered in the process).
    fn append(&mut self, data: &[u8]) -> io::Result<()>;
    /// Hands buffered data to the operating system: it survives a crash of
    /// the process, not of the machine.
    fn flush(&mut self) -> io::Result<()>;
    /// Flushes, then makes everything appended so far durable.
    fn sync(&mut self) -> io::Result<()>;
}

/// A file read at arbitrary offsets, shared between threads.
pub trait ReadableFile: Send + Sync + Debug {
    /// Fills `buf` from `offset`; an error if the file ends first.
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()>;
    /// The file's length in bytes.
    fn size(&self) -> io::Result<u64>;
}

/// Holds a lock until dropped.
pub trait LockGuard: Send + Sync + Debug {}

/// Deletes `dir` and everything under it. An entry that cannot be listed
/// is taken for a file.
///
/// # Errors
/// The first removal that fails.
pub fn remove_dir_all(fs: &dyn FileSystem, dir: &Path) -> io::Result<()> {
    for name in fs.list(dir)? {
        let path = dir.join(name);
        match fs.list(&path) {
            Ok(_) => remove_dir_all(fs, &path)?,
            Err(_) => fs.remove(&path)?,
        }
    }
    fs.remove_dir(dir)
}

/// Bytes copied per read and write by [`copy_file`].
const COPY_CHUNK: usize = 1 << 20;

/// Writes a copy of the file `from` to the new file `to`, and syncs it.
///
/// # Errors
/// What opening, reading, writing or syncing returns.
pub fn copy_file(fs: &dyn FileSystem, from: &Path, to: &Path) -> io::Result<()> {
    let source = fs.open(from)?;
    let size = source.size()?;
    let mut target = fs.create(to)?;
    let mut buf = vec![0; COPY_CHUNK];
    let mut offset = 0;
    while offset < size {
        let len = usize::try_from(size - offset).map_or(COPY_CHUNK, |left| left.min(COPY_CHUNK));
        source.read_exact_at(&mut buf[..len], offset)?;
        target.append(&buf[..len])?;
        offset += len as u64;
    }
    target.sync()
}

/// Gives the file `from`, which no one writes any more, the new name `to`
/// by a hard link; where the file system cannot link it (another device,
/// no support), writes a synced copy instead. Either way `to` is durable
/// once its directory is synced.
///
/// # Errors
/// What copying returns, when linking failed.
pub fn link_or_copy(fs: &dyn FileSystem, from: &Path, to: &Path) -> io::Result<()> {
    match fs.hard_link(from, to) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Err(e),
        Err(_) => copy_file(fs, from, to),
    }
}

/// Reads a whole file into memory; a file longer than `max` bytes is an
/// [`io::ErrorKind::InvalidData`] error before anything is read (a damaged
/// or foreign file must not exhaust memory).
///
/// # Errors
/// What opening or reading the file returns.
pub fn read_all(fs: &dyn FileSystem, path: &Path, max: u64) -> io::Result<Vec<u8>> {
    let file = fs.open(path)?;
    let size = file.size()?;
    if size > max {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("{size} bytes, more than the {max} such a file ever holds"),
        ));
    }
    let len = usize::try_from(size).map_err(|_| io::Error::other("file larger than memory"))?;
    let mut buf = vec![0; len];
    file.read_exact_at(&mut buf, 0)?;
    Ok(buf)
}
