//! [`OpenFiles`]: the table files a database holds open, under a budget of
//! file descriptors (RocksDB's table cache, `max_open_files`).
//!
//! Only what is missing from memory needs a table's file: data blocks the
//! block cache misses, and metadata pieces neither resident nor cached.
//! So a table asks for its file on each such read, and the least recently
//! used files are closed when the budget is full. A reader still holding an
//! evicted file keeps it open until it is done, so the budget can be
//! exceeded by the reads in flight, never by the number of tables. With
//! direct reads, files are opened to bypass the page cache.

use std::io;
use std::path::Path;
use std::sync::Arc;

use quick_cache::sync::Cache;

use crate::fs::{FileSystem, ReadableFile};

/// Open table files by table id, at most `capacity` of them.
pub(crate) struct OpenFiles {
    fs: Arc<dyn FileSystem>,
    files: Cache<u64, Arc<dyn ReadableFile>>,
    /// Open with [`FileSystem::open_direct`].
    direct: bool,
}

impl std::fmt::Debug for OpenFiles {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenFiles")
            .field("open", &self.files.len())
            .field("capacity", &self.files.capacity())
            .finish()
    }
}

impl OpenFiles {
    /// Opens files through `fs`, keeping at most `capacity` open; for
    /// reads that bypass the page cache if `direct`.
    pub(crate) fn new(fs: Arc<dyn FileSystem>, capacity: usize, direct: bool) -> Self {
        Self {
            fs,
            files: Cache::new(capacity.max(1)),
            direct,
        }
    }

    /// The open file of table `id` at `path`, opening it if it is not.
    pub(crate) fn get(&self, id: u64, path: &Path) -> io::Result<Arc<dyn ReadableFile>> {
        self.files.get_or_insert_with(&id, || {
            if self.direct {
                self.fs.open_direct(path)
            } else {
                self.fs.open(path)
            }
        })
    }

    /// Closes table `id`'s file (its table is gone).
    pub(crate) fn forget(&self, id: u64) {
        self.files.remove(&id);
    }
}
