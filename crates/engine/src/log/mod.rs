//! STUB — to be replaced. Log files (WAL and manifest): checksummed, length-prefixed records.

use std::path::{Path, PathBuf};

use crate::error::Result;
use crate::fs::{FileSystem, WritableFile};

/// Which log a file is; recorded in its header so one cannot be read as the other.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LogKind {
    /// Write-ahead log of write batches.
    Wal,
    /// Manifest of version edits.
    Manifest,
}

/// Appends records to a new log file.
#[derive(Debug)]
pub(crate) struct LogWriter {
    file: Box<dyn WritableFile>,
    path: PathBuf,
    size: u64,
}

impl LogWriter {
    /// Creates `path` (truncating) and writes the header.
    pub(crate) fn create(fs: &dyn FileSystem, path: &Path, kind: LogKind) -> Result<Self> {
        todo!()
    }
    /// Appends one record (buffered).
    pub(crate) fn add_record(&mut self, payload: &[u8]) -> Result<()> {
        todo!()
    }
    /// Hands buffered records to the OS.
    pub(crate) fn flush(&mut self) -> Result<()> {
        todo!()
    }
    /// Makes every record durable.
    pub(crate) fn sync(&mut self) -> Result<()> {
        todo!()
    }
    /// Bytes written so far, header included.
    pub(crate) fn size(&self) -> u64 {
        todo!()
    }
    /// The file.
    pub(crate) fn path(&self) -> &Path {
        todo!()
    }
}

/// How a log ends.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Tail {
    /// Every byte belongs to a whole, valid record.
    Clean,
    /// From `valid_len` on, the bytes are an incomplete or damaged record.
    Torn {
        /// What was wrong.
        detail: String,
    },
}

/// Every complete record of a log.
#[derive(Debug)]
pub(crate) struct LogContents {
    /// Payloads in order.
    pub records: Vec<Vec<u8>>,
    /// Bytes up to the end of the last good record.
    pub valid_len: u64,
    /// Whether anything follows it.
    pub tail: Tail,
}

/// Reads every record of `path`.
pub(crate) fn read_log(fs: &dyn FileSystem, path: &Path, kind: LogKind) -> Result<LogContents> {
    todo!()
}
