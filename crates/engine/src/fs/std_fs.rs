//! [`FileSystem`] on the operating system's files.

use std::fs::{self, File, OpenOptions};
use std::io::{self, BufWriter, Write};
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::Arc;

use super::direct::DirectReadable;
use super::{FileSystem, LockGuard, ReadableFile, WritableFile};

/// The real file system. Appends are buffered in 64 KiB chunks: a WAL
/// record costs one `write` call when it is synced or the buffer fills.
#[derive(Debug, Default, Clone, Copy)]
pub struct StdFs;

/// Appends are gathered into writes of this size: large enough to amortise
/// the system call, small enough to stay in L2.
const WRITE_BUFFER_BYTES: usize = 64 * 1024;

#[derive(Debug)]
struct StdWritable(BufWriter<File>);

impl WritableFile for StdWritable {
    fn append(&mut self, data: &[u8]) -> io::Result<()> {
        self.0.write_all(data)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.0.flush()
    }

    fn sync(&mut self) -> io::Result<()> {
        self.0.flush()?;
        self.0.get_ref().sync_data()
    }
}

#[derive(Debug)]
struct StdReadable(File);

impl ReadableFile for StdReadable {
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        self.0.read_exact_at(buf, offset)
    }

    fn size(&self) -> io::Result<u64> {
        Ok(self.0.metadata()?.len())
    }
}

#[derive(Debug)]
struct StdLock(
    #[expect(dead_code, reason = "held only so that dropping it releases the lock")] File,
);

impl LockGuard for StdLock {}

impl FileSystem for StdFs {
    fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        fs::create_dir_all(dir)
    }

    fn create(&self, path: &Path) -> io::Result<Box<dyn WritableFile>> {
        let file = File::create(path)?;
        Ok(Box::new(StdWritable(BufWriter::with_capacity(
            WRITE_BUFFER_BYTES,
            file,
        ))))
    }

    fn open(&self, path: &Path) -> io::Result<Arc<dyn ReadableFile>> {
        Ok(Arc::new(StdReadable(File::open(path)?)))
    }

    fn open_direct(&self, path: &Path) -> io::Result<Arc<dyn ReadableFile>> {
        Ok(Arc::new(DirectReadable::open(path)?))
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        fs::rename(from, to)
    }

    fn hard_link(&self, from: &Path, to: &Path) -> io::Result<()> {
        fs::hard_link(from, to)
    }

    fn remove(&self, path: &Path) -> io::Result<()> {
        fs::remove_file(path)
    }

    fn remove_dir(&self, dir: &Path) -> io::Result<()> {
        fs::remove_dir(dir)
    }

    fn list(&self, dir: &Path) -> io::Result<Vec<String>> {
        fs::read_dir(dir)?
            .map(|entry| entry.map(|e| e.file_name().to_string_lossy().into_owned()))
            .collect()
    }

    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        File::open(dir)?.sync_all()
    }

    fn try_lock(&self, path: &Path) -> io::Result<Option<Box<dyn LockGuard>>> {
        let file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(path)?;
        match file.try_lock() {
            Ok(()) => Ok(Some(Box::new(StdLock(file)))),
            Err(fs::TryLockError::WouldBlock) => Ok(None),
            Err(fs::TryLockError::Error(err)) => Err(err),
        }
    }
}
