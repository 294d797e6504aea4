//! STUB — to be replaced. [`WriteBatch`]: operations applied atomically, and its WAL record encoding.

use crate::error::{Corrupt, Result};
use crate::key::{SeqNo, ValueKind};

/// Longest key accepted (64 KiB).
pub const MAX_KEY_LEN: usize = 64 << 10;
/// Longest value accepted.
pub const MAX_VALUE_LEN: usize = 64 << 20;

/// Operations applied atomically by [`Db::write`](crate::Db::write).
#[derive(Debug, Clone, Default)]
pub struct WriteBatch {}

impl WriteBatch {
    /// An empty batch.
    #[must_use]
    pub fn new() -> Self {
        todo!()
    }
    /// Sets `key` to `value`.
    pub fn insert(&mut self, key: impl AsRef<[u8]>, value: impl AsRef<[u8]>) -> &mut Self {
        todo!()
    }
    /// Removes `key`.
    pub fn remove(&mut self, key: impl AsRef<[u8]>) -> &mut Self {
        todo!()
    }
    /// Number of operations.
    #[must_use]
    pub fn len(&self) -> usize {
        todo!()
    }
    /// Whether the batch holds no operation.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        todo!()
    }
    /// Removes every operation.
    pub fn clear(&mut self) {
        todo!()
    }
    pub(crate) fn validate(&self) -> Result<()> {
        todo!()
    }
    pub(crate) fn approximate_bytes(&self) -> usize {
        todo!()
    }
    /// The WAL record payload; operation i gets sequence number first_seq + i.
    pub(crate) fn encode(&self, first_seq: SeqNo) -> Vec<u8> {
        todo!()
    }
    /// Operations in order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (ValueKind, &[u8], &[u8])> {
        std::iter::empty()
    }
}

/// One decoded operation: kind, key, value (empty for a delete).
pub(crate) type Op = (ValueKind, Vec<u8>, Vec<u8>);

/// Parses a WAL record payload written by [`WriteBatch::encode`]: first sequence number and operations.
pub(crate) fn decode_record(payload: &[u8]) -> Result<(SeqNo, Vec<Op>), Corrupt> {
    todo!()
}
