//! The one error type of `siftdb`.

use std::io;
use std::path::{Path, PathBuf};

/// Everything that can go wrong in a `siftdb` call.
///
/// A caller that matches on it should keep a wildcard arm: new variants may
/// be added without a major version bump.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The operating system refused an operation on `path`.
    #[error("I/O error on {}: {source}", path.display())]
    Io {
        /// The file or directory the operation touched.
        path: PathBuf,
        /// What the operating system reported.
        #[source]
        source: io::Error,
    },
    /// Bytes read back from `path` are not what Sift wrote: a checksum
    /// mismatch, a truncated structure, an impossible field.
    #[error("corruption in {} at offset {offset}: {detail}", path.display())]
    Corruption {
        /// The damaged file.
        path: PathBuf,
        /// Byte offset in that file where the damage was detected.
        offset: u64,
        /// What was wrong.
        detail: String,
    },
    /// The caller passed something Sift cannot accept (a key or value too
    /// large, an option out of range, a mismatched snapshot).
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    /// Another handle (in this or another process) holds the database's
    /// lock file.
    #[error("database {} is locked by another handle", path.display())]
    Locked {
        /// The database directory.
        path: PathBuf,
    },
    /// A background flush or compaction failed; the database refuses writes
    /// from then on so that nothing is acknowledged that cannot be persisted.
    /// Reopen the database to recover from the WAL.
    #[error("background work failed, writes are refused until reopen: {0}")]
    Background(String),
    /// The database was opened read-only
    /// ([`DbBuilder::read_only`](crate::DbBuilder::read_only)): it takes no
    /// writes, flushes, compactions or index changes.
    #[error("database {} is open read-only", path.display())]
    ReadOnly {
        /// The database directory.
        path: PathBuf,
    },
    /// The database was closed (its [`Db`](crate::Db) dropped) while a
    /// transaction, snapshot or iterator still used it: writes and waits
    /// for background work end with this. Reads of what is already
    /// pinned still work.
    #[error("the database is closed")]
    Closed,
    /// A transaction could not commit: a key it read or wrote (or a key in
    /// a range it scanned) was written by another commit after its
    /// snapshot. Nothing of the transaction was applied; run it again.
    #[error("transaction conflict on key {}: {reason}", conflict_key(key.as_deref()))]
    Conflict {
        /// The conflicting key, or `None` when the conflict is that the
        /// commit history the transaction needed was dropped to keep it
        /// within its bound (see `DbBuilder::txn_history_bytes`).
        key: Option<Vec<u8>>,
        /// Why it conflicts (which of its reads, writes or ranges).
        reason: String,
    },
}

/// A key for an error message: text when it is printable, else hex.
fn conflict_key(key: Option<&[u8]>) -> String {
    match key {
        None => "(unknown: history dropped)".to_owned(),
        Some(key) if key.iter().all(|b| b.is_ascii_graphic() || *b == b' ') => {
            format!("{:?}", String::from_utf8_lossy(key))
        }
        Some(key) => key.iter().map(|b| format!("{b:02x}")).collect(),
    }
}

/// `Result` with [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// Wraps an I/O error with the path it concerned.
    pub(crate) fn io(path: impl AsRef<Path>, source: io::Error) -> Self {
        Self::Io {
            path: path.as_ref().to_path_buf(),
            source,
        }
    }

    /// The same error for another caller: every member of a failed write
    /// group gets the error its leader met (`io::Error` is not `Clone`, so
    /// an I/O error keeps its kind and message).
    pub(crate) fn for_another_caller(&self) -> Self {
        match self {
            Self::Io { path, source } => Self::Io {
                path: path.clone(),
                source: io::Error::new(source.kind(), source.to_string()),
            },
            Self::Corruption {
                path,
                offset,
                detail,
            } => Self::Corruption {
                path: path.clone(),
                offset: *offset,
                detail: detail.clone(),
            },
            Self::InvalidArgument(detail) => Self::InvalidArgument(detail.clone()),
            Self::Locked { path } => Self::Locked { path: path.clone() },
            Self::ReadOnly { path } => Self::ReadOnly { path: path.clone() },
            Self::Background(detail) => Self::Background(detail.clone()),
            Self::Closed => Self::Closed,
            Self::Conflict { key, reason } => Self::Conflict {
                key: key.clone(),
                reason: reason.clone(),
            },
        }
    }

    /// A corruption report for `path` at `offset`.
    pub(crate) fn corruption(
        path: impl AsRef<Path>,
        offset: u64,
        detail: impl Into<String>,
    ) -> Self {
        Self::Corruption {
            path: path.as_ref().to_path_buf(),
            offset,
            detail: detail.into(),
        }
    }
}

/// A decoder's complaint about bytes, before it knows which file they came
/// from. [`Corrupt::in_file`] turns it into [`Error::Corruption`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Corrupt {
    /// Offset of the damage, relative to the start of the decoded buffer.
    pub offset: u64,
    /// What was wrong.
    pub detail: String,
}

impl Corrupt {
    /// A complaint at `offset` in the decoded buffer.
    pub(crate) fn new(offset: u64, detail: impl Into<String>) -> Self {
        Self {
            offset,
            detail: detail.into(),
        }
    }

    /// Names the file; `base` is where the decoded buffer starts in it.
    pub(crate) fn in_file(self, path: impl AsRef<Path>, base: u64) -> Error {
        Error::corruption(path, base.saturating_add(self.offset), self.detail)
    }
}
