//! Helpers shared by integration tests.

use std::io;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use siftdb::fs::{FaultInjectionFs, FileSystem, LockGuard, ReadableFile, WritableFile};

/// A file system that counts positional reads of table files.
#[derive(Debug)]
pub struct CountingFs {
    pub inner: FaultInjectionFs,
    pub table_reads: Arc<AtomicU64>,
}

#[derive(Debug)]
struct CountingFile {
    inner: Arc<dyn ReadableFile>,
    reads: Arc<AtomicU64>,
}

impl ReadableFile for CountingFile {
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        self.reads.fetch_add(1, Ordering::Relaxed);
        self.inner.read_exact_at(buf, offset)
    }

    fn size(&self) -> io::Result<u64> {
        self.inner.size()
    }
}

impl FileSystem for CountingFs {
    fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        self.inner.create_dir_all(dir)
    }
    fn create(&self, path: &Path) -> io::Result<Box<dyn WritableFile>> {
        self.inner.create(path)
    }
    fn open(&self, path: &Path) -> io::Result<Arc<dyn ReadableFile>> {
        let file = self.inner.open(path)?;
        if path.extension().is_none_or(|e| e != "sst") {
            return Ok(file);
        }
        Ok(Arc::new(CountingFile {
            inner: file,
            reads: Arc::clone(&self.table_reads),
        }))
    }
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        self.inner.rename(from, to)
    }
    fn hard_link(&self, from: &Path, to: &Path) -> io::Result<()> {
        self.inner.hard_link(from, to)
    }
    fn remove(&self, path: &Path) -> io::Result<()> {
        self.inner.remove(path)
    }
    fn remove_dir(&self, dir: &Path) -> io::Result<()> {
        self.inner.remove_dir(dir)
    }
    fn list(&self, dir: &Path) -> io::Result<Vec<String>> {
        self.inner.list(dir)
    }
    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        self.inner.sync_dir(dir)
    }
    fn try_lock(&self, path: &Path) -> io::Result<Option<Box<dyn LockGuard>>> {
        self.inner.try_lock(path)
    }
}
