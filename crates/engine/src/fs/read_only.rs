//! [`ReadOnlyFs`]: a view of a file system that never changes it.
//!
//! A read-only open runs the same recovery as any open (replay the WALs,
//! write what they hold as level-0 tables, install a new manifest, retire
//! the old files), but through this view: reads see the underlying files,
//! and every change (a file created, renamed, linked or removed) is kept in
//! memory and seen only through the view. So the open recovers exactly as
//! a writable one would, and the directory is left byte for byte as it
//! was. Its lock is the view's own, so a database another process holds
//! opens too. What recovery writes stays in memory: at most the WALs'
//! contents as tables, and a manifest.

use std::collections::{BTreeMap, BTreeSet};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use super::{FileSystem, LockGuard, ReadableFile, WritableFile, read_all};

/// The most bytes of an underlying file a rename or link copies into
/// memory: recovery renames and links only small files (CURRENT's
/// temporary, a damaged WAL kept aside).
const MAX_COPIED_BYTES: u64 = 1 << 30;

/// Bytes of a file that lives in memory, shared by its writer and readers.
type Bytes = Arc<Mutex<Vec<u8>>>;

fn bytes(file: &Bytes) -> MutexGuard<'_, Vec<u8>> {
    // Plain bytes, whole after any panic.
    file.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The changes made through the view.
#[derive(Debug, Default)]
struct Changes {
    /// Files created (or copied in) through the view.
    created: BTreeMap<PathBuf, Bytes>,
    /// Underlying files removed or renamed away through the view.
    hidden: BTreeSet<PathBuf>,
}

/// A file system whose changes stay in memory (see the module docs).
#[derive(Debug)]
pub struct ReadOnlyFs {
    base: Arc<dyn FileSystem>,
    changes: Mutex<Changes>,
}

impl ReadOnlyFs {
    /// A view of `base` that never changes it.
    #[must_use]
    pub fn new(base: Arc<dyn FileSystem>) -> Self {
        Self {
            base,
            changes: Mutex::default(),
        }
    }

    fn changes(&self) -> MutexGuard<'_, Changes> {
        self.changes.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The bytes of `path` as the view sees it, copied into memory if it
    /// is an underlying file.
    fn read_whole(&self, path: &Path) -> io::Result<Vec<u8>> {
        if let Some(file) = self.changes().created.get(path) {
            return Ok(bytes(file).clone());
        }
        read_all(self, path, MAX_COPIED_BYTES)
    }
}

fn not_found(path: &Path) -> io::Error {
    io::Error::new(
        io::ErrorKind::NotFound,
        format!("{} does not exist", path.display()),
    )
}

impl FileSystem for ReadOnlyFs {
    fn create_dir_all(&self, _dir: &Path) -> io::Result<()> {
        Ok(())
    }

    fn create(&self, path: &Path) -> io::Result<Box<dyn WritableFile>> {
        let file = Bytes::default();
        let mut changes = self.changes();
        changes.hidden.remove(path);
        changes
            .created
            .insert(path.to_path_buf(), Arc::clone(&file));
        Ok(Box::new(MemoryWritable(file)))
    }

    fn open(&self, path: &Path) -> io::Result<Arc<dyn ReadableFile>> {
        let changes = self.changes();
        if let Some(file) = changes.created.get(path) {
            return Ok(Arc::new(MemoryReadable(Arc::clone(file))));
        }
        if changes.hidden.contains(path) {
            return Err(not_found(path));
        }
        drop(changes);
        self.base.open(path)
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        self.hard_link(from, to)?;
        self.remove(from)
    }

    fn hard_link(&self, from: &Path, to: &Path) -> io::Result<()> {
        let data = self.read_whole(from)?;
        let mut changes = self.changes();
        changes.hidden.remove(to);
        changes
            .created
            .insert(to.to_path_buf(), Arc::new(Mutex::new(data)));
        Ok(())
    }

    fn remove(&self, path: &Path) -> io::Result<()> {
        let mut changes = self.changes();
        if changes.created.remove(path).is_none() {
            changes.hidden.insert(path.to_path_buf());
        }
        Ok(())
    }

    fn remove_dir(&self, dir: &Path) -> io::Result<()> {
        self.remove(dir)
    }

    fn list(&self, dir: &Path) -> io::Result<Vec<String>> {
        let changes = self.changes();
        let mut names: BTreeSet<String> = match self.base.list(dir) {
            Ok(names) => names.into_iter().collect(),
            Err(e) if e.kind() == io::ErrorKind::NotFound => BTreeSet::new(),
            Err(e) => return Err(e),
        };
        names.retain(|name| !changes.hidden.contains(&dir.join(name)));
        names.extend(
            changes
                .created
                .keys()
                .filter(|path| path.parent() == Some(dir))
                .filter_map(|path| Some(path.file_name()?.to_string_lossy().into_owned())),
        );
        Ok(names.into_iter().collect())
    }

    fn sync_dir(&self, _dir: &Path) -> io::Result<()> {
        Ok(())
    }

    fn try_lock(&self, _path: &Path) -> io::Result<Option<Box<dyn LockGuard>>> {
        // The view's own lock: one view is opened once, and the
        // underlying directory's lock is left to its writer.
        Ok(Some(Box::new(ViewLock)))
    }
}

#[derive(Debug)]
struct ViewLock;

impl LockGuard for ViewLock {}

#[derive(Debug)]
struct MemoryWritable(Bytes);

impl WritableFile for MemoryWritable {
    fn append(&mut self, data: &[u8]) -> io::Result<()> {
        bytes(&self.0).extend_from_slice(data);
        Ok(())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }

    fn sync(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[derive(Debug)]
struct MemoryReadable(Bytes);

impl ReadableFile for MemoryReadable {
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        let data = bytes(&self.0);
        let start = usize::try_from(offset).unwrap_or(usize::MAX);
        let end = start.checked_add(buf.len());
        match end.and_then(|end| data.get(start..end)) {
            Some(part) => {
                buf.copy_from_slice(part);
                Ok(())
            }
            None => Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "read past the end of a file",
            )),
        }
    }

    fn size(&self) -> io::Result<u64> {
        Ok(bytes(&self.0).len() as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fs::FaultInjectionFs;

    #[test]
    fn changes_are_seen_through_the_view_and_never_reach_the_base() {
        let base = FaultInjectionFs::new();
        let dir = Path::new("/db");
        base.create_dir_all(dir).unwrap();
        let mut file = base.create(&dir.join("kept")).unwrap();
        file.append(b"base bytes").unwrap();
        file.sync().unwrap();
        let view = ReadOnlyFs::new(Arc::new(base.clone()));
        let mut made = view.create(&dir.join("made")).unwrap();
        made.append(b"new").unwrap();
        view.rename(&dir.join("made"), &dir.join("renamed"))
            .unwrap();
        view.hard_link(&dir.join("kept"), &dir.join("linked"))
            .unwrap();
        view.remove(&dir.join("kept")).unwrap();
        assert_eq!(view.list(dir).unwrap(), ["linked", "renamed"]);
        assert!(view.open(&dir.join("kept")).is_err());
        assert_eq!(
            read_all(&view, &dir.join("linked"), 100).unwrap(),
            b"base bytes"
        );
        assert_eq!(read_all(&view, &dir.join("renamed"), 100).unwrap(), b"new");
        assert_eq!(base.list(dir).unwrap(), ["kept"]);
        assert_eq!(base.contents(&dir.join("kept")).unwrap(), b"base bytes");
    }
}
