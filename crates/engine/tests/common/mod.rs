//! Helpers shared by integration tests.
#![allow(dead_code, reason = "each test binary uses a different subset")]

use std::io;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use siftdb::fs::{FaultInjectionFs, FileSystem, LockGuard, ReadableFile, WritableFile};

/// Called with the length of each positional read of a watched file.
pub type ReadObserver = Arc<dyn Fn(usize) + Send + Sync>;

/// A file system that reports every positional read of the files with one
/// extension (`sst`: tables, `wal`: logs) to an observer.
pub struct ObservedFs {
    inner: FaultInjectionFs,
    extension: &'static str,
    observe: ReadObserver,
}

impl ObservedFs {
    /// `inner`, reads of its `*.extension` files reported to `observe`.
    pub fn new(inner: FaultInjectionFs, extension: &'static str, observe: ReadObserver) -> Self {
        Self {
            inner,
            extension,
            observe,
        }
    }

    /// `inner`, counting the reads of its tables into `reads`.
    pub fn counting_table_reads(inner: FaultInjectionFs, reads: &Arc<AtomicU64>) -> Self {
        let reads = Arc::clone(reads);
        Self::new(
            inner,
            "sst",
            Arc::new(move |_| {
                reads.fetch_add(1, Ordering::Relaxed);
            }),
        )
    }
}

impl std::fmt::Debug for ObservedFs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ObservedFs")
            .field("extension", &self.extension)
            .finish_non_exhaustive()
    }
}

struct ObservedFile {
    inner: Arc<dyn ReadableFile>,
    observe: ReadObserver,
}

impl std::fmt::Debug for ObservedFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ObservedFile").finish_non_exhaustive()
    }
}

impl ReadableFile for ObservedFile {
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        (self.observe)(buf.len());
        self.inner.read_exact_at(buf, offset)
    }

    fn size(&self) -> io::Result<u64> {
        self.inner.size()
    }
}

impl FileSystem for ObservedFs {
    fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        self.inner.create_dir_all(dir)
    }
    fn create(&self, path: &Path) -> io::Result<Box<dyn WritableFile>> {
        self.inner.create(path)
    }
    fn open(&self, path: &Path) -> io::Result<Arc<dyn ReadableFile>> {
        let file = self.inner.open(path)?;
        if path.extension().is_none_or(|e| e != self.extension) {
            return Ok(file);
        }
        Ok(Arc::new(ObservedFile {
            inner: file,
            observe: Arc::clone(&self.observe),
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
