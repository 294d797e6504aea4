//! How far a point lookup may go for what it needs: to the files, or only
//! as far as memory (RocksDB's read tiers, `kReadAllTier` and
//! `kBlockCacheTier`).
//!
//! A caller that must not block (a Python `get` that holds the interpreter
//! lock) first asks in [`MemoryOnly`], and pays for the release and a full
//! lookup only when that answers [`TierError::NotInMemory`].
//!
//! The tier is a type parameter, so the one lookup code serves both: in
//! [`Files`] the check below compiles to nothing and the errors are the
//! engine's own.

use crate::error::Error;

/// Where a lookup may read from. [`ReadTier::may_read_file`] is called
/// just before each file read the lookup would make (table metadata, an
/// index block, a data block); everything before it is in memory.
pub(crate) trait ReadTier: Copy {
    /// The lookup's error: the engine's, plus whatever the tier adds.
    type Error: From<Error>;

    /// `Ok` if the lookup may read a file now; else the error that ends it.
    fn may_read_file(self) -> Result<(), Self::Error>;
}

/// Every tier: memtables, resident metadata, the block cache and files.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Files;

impl ReadTier for Files {
    type Error = Error;

    #[inline]
    fn may_read_file(self) -> Result<(), Error> {
        Ok(())
    }
}

/// Memtables, resident metadata and the block cache only.
#[derive(Clone, Copy, Debug)]
pub(crate) struct MemoryOnly;

/// Why a [`MemoryOnly`] lookup ended without an answer.
#[derive(Debug)]
pub(crate) enum TierError {
    /// The answer needs a file read.
    NotInMemory,
    /// What the memory it read reported (a damaged block in the cache).
    Engine(Error),
}

impl From<Error> for TierError {
    fn from(error: Error) -> Self {
        Self::Engine(error)
    }
}

impl ReadTier for MemoryOnly {
    type Error = TierError;

    #[inline]
    fn may_read_file(self) -> Result<(), TierError> {
        Err(TierError::NotInMemory)
    }
}

/// What [`Db::get_in_memory`](crate::Db::get_in_memory) and
/// [`Snapshot::get_in_memory`](crate::Snapshot::get_in_memory) found.
#[derive(Clone, Debug, PartialEq, Eq)]
#[must_use]
pub enum InMemory<T> {
    /// The answer, the same that [`Db::get`](crate::Db::get) would give.
    Answer(T),
    /// The answer needs a file read (table metadata, an index or a data
    /// block that memory does not hold): ask [`Db::get`](crate::Db::get).
    NeedsRead,
}

impl<T> InMemory<T> {
    /// The answer of a lookup that ended in the tier (`Ok`), or
    /// [`InMemory::NeedsRead`] in place of [`TierError::NotInMemory`].
    pub(crate) fn of(outcome: Result<T, TierError>) -> Result<Self, Error> {
        match outcome {
            Ok(answer) => Ok(Self::Answer(answer)),
            Err(TierError::NotInMemory) => Ok(Self::NeedsRead),
            Err(TierError::Engine(error)) => Err(error),
        }
    }
}
