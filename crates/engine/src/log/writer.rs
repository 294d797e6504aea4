//! [`LogWriter`]: appends records to a new log file.

use std::path::{Path, PathBuf};

use super::{HEADER_LEN, LogKind, MAX_RECORD_LEN, encode_header, encode_record_into};
use crate::error::{Error, Result};
use crate::fs::{FileSystem, WritableFile};

/// Record buffers up to this size are kept for the next record: enough for
/// any small write, while a rare huge batch's buffer is freed.
const KEPT_RECORD_BYTES: usize = 64 << 10;

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
    /// The record being written, kept to reuse its allocation.
    record: Vec<u8>,
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
            record: Vec::new(),
        })
    }

    /// Appends one record (buffered), with a single `append` so that a
    /// crash can cut only the last record. A payload over
    /// [`MAX_RECORD_LEN`] bytes is an [`Error::InvalidArgument`] and writes
    /// nothing.
    pub(crate) fn add_record(&mut self, payload: &[u8]) -> Result<()> {
        self.add_record_parts(&[payload])
    }

    /// [`add_record`](Self::add_record) of the concatenation of `parts`,
    /// without concatenating them first.
    pub(crate) fn add_record_parts(&mut self, parts: &[&[u8]]) -> Result<()> {
        let len: usize = parts.iter().map(|p| p.len()).sum();
        if len > MAX_RECORD_LEN {
            return Err(Error::InvalidArgument(format!(
                "a log record of {len} bytes exceeds the limit of {MAX_RECORD_LEN} bytes"
            )));
        }
        encode_record_into(&mut self.record, parts);
        let appended = self.file.append(&self.record);
        let written = self.record.len() as u64;
        // A rare huge record's buffer is not kept around.
        if self.record.capacity() > KEPT_RECORD_BYTES {
            self.record = Vec::new();
        }
        appended.map_err(|e| Error::io(&self.path, e))?;
        self.size += written;
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
