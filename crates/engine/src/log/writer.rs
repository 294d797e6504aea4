//! [`LogWriter`]: appends records to a new log file.

use std::path::{Path, PathBuf};

use super::{HEADER_LEN, LogKind, MAX_RECORD_LEN, encode_header, encode_record};
use crate::error::{Error, Result};
use crate::fs::{FileSystem, WritableFile};

/// Appends records to a new log file.
///
/// Call order: [`create`](Self::create), then any number of
/// [`add_record`](Self::add_record), each followed by
/// [`flush`](Self::flush) or [`sync`](Self::sync) as the caller's
/// durability requires. A record is durable once a `sync` after it returns.
/// After an error the file may end in a partial record: stop appending
/// (recovery cuts it as a torn tail).
#[derive(Debug)]
pub(crate) struct LogWriter {
    file: Box<dyn WritableFile>,
    path: PathBuf,
    size: u64,
}

impl LogWriter {
    /// Creates `path` (truncating) and writes the header. The header is
    /// not synced: the first `sync` makes it durable with the first
    /// records; a reader takes a file that ends inside it for an empty log.
    pub(crate) fn create(fs: &dyn FileSystem, path: &Path, kind: LogKind) -> Result<Self> {
        let mut file = fs.create(path).map_err(|e| Error::io(path, e))?;
        file.append(&encode_header(kind))
            .map_err(|e| Error::io(path, e))?;
        Ok(Self {
            file,
            path: path.to_path_buf(),
            size: HEADER_LEN as u64,
        })
    }

    /// Appends one record (buffered), with a single `append` so that a
    /// crash can cut only the last record. A payload over
    /// [`MAX_RECORD_LEN`] bytes is an [`Error::InvalidArgument`] and writes
    /// nothing.
    pub(crate) fn add_record(&mut self, payload: &[u8]) -> Result<()> {
        if payload.len() > MAX_RECORD_LEN {
            return Err(Error::InvalidArgument(format!(
                "a log record of {} bytes exceeds the limit of {MAX_RECORD_LEN} bytes",
                payload.len()
            )));
        }
        let record = encode_record(payload);
        self.file
            .append(&record)
            .map_err(|e| Error::io(&self.path, e))?;
        self.size += record.len() as u64;
        Ok(())
    }

    /// Hands buffered records to the OS: they survive a crash of the
    /// process, not of the machine.
    pub(crate) fn flush(&mut self) -> Result<()> {
        self.file.flush().map_err(|e| Error::io(&self.path, e))
    }

    /// Makes every record durable.
    pub(crate) fn sync(&mut self) -> Result<()> {
        self.file.sync().map_err(|e| Error::io(&self.path, e))
    }

    /// Bytes written so far, header included.
    pub(crate) fn size(&self) -> u64 {
        self.size
    }

    /// The file.
    #[cfg_attr(
        not(test),
        expect(dead_code, reason = "part of the writer's interface; tests use it")
    )]
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }
}
