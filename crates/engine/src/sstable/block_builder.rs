//! Builds one data block: prefix-compressed entries, then the restart array.

use std::cmp::Ordering;

use crate::encoding::put_varint;
use crate::key::cmp_internal;

/// Accumulates sorted entries into the raw bytes of a data block.
///
/// Each entry is `varint shared | varint unshared | varint value_len |
/// key[shared..] | value`, where `shared` is the length of the prefix it has
/// in common with the previous key; every `restart_interval`-th entry is a
/// restart point with `shared = 0`. The block ends with the restart offsets
/// (`u32` each) and their count (`u32`).
#[derive(Debug)]
pub(crate) struct BlockBuilder {
    buf: Vec<u8>,
    restarts: Vec<u32>,
    restart_interval: usize,
    /// Entries since the last restart point.
    since_restart: usize,
    last_key: Vec<u8>,
    entries: usize,
}

impl BlockBuilder {
    /// An empty block; `restart_interval` 0 is taken as 1.
    pub(crate) fn new(restart_interval: usize) -> Self {
        Self {
            buf: Vec::new(),
            restarts: Vec::new(),
            restart_interval: restart_interval.max(1),
            since_restart: 0,
            last_key: Vec::new(),
            entries: 0,
        }
    }

    /// Appends an entry; the caller has checked that `key` sorts after the
    /// previous one. Offsets are `u32`: the table builder closes blocks
    /// long before 4 GiB (see `MAX_BLOCK_BYTES` in `builder.rs`).
    pub(crate) fn add(&mut self, key: &[u8], value: &[u8]) {
        debug_assert!(
            self.entries == 0 || cmp_internal(&self.last_key, key) == Ordering::Less,
            "block entries out of order: {key:?} after {:?}",
            self.last_key
        );
        let shared = if self.entries == 0 || self.since_restart >= self.restart_interval {
            self.restarts.push(self.buf.len() as u32);
            self.since_restart = 0;
            0
        } else {
            self.last_key
                .iter()
                .zip(key)
                .take_while(|(a, b)| a == b)
                .count()
        };
        let unshared = key.get(shared..).unwrap_or_default();
        put_varint(&mut self.buf, shared as u64);
        put_varint(&mut self.buf, unshared.len() as u64);
        put_varint(&mut self.buf, value.len() as u64);
        self.buf.extend_from_slice(unshared);
        self.buf.extend_from_slice(value);
        self.last_key.truncate(shared);
        self.last_key.extend_from_slice(unshared);
        self.since_restart += 1;
        self.entries += 1;
    }

    /// Whether no entry was added since the last [`finish`](Self::finish).
    pub(crate) fn is_empty(&self) -> bool {
        self.entries == 0
    }

    /// Raw size of the block if finished now.
    pub(crate) fn estimated_size(&self) -> usize {
        self.buf.len() + 4 * self.restarts.len() + 4
    }

    /// The raw block bytes; the builder is empty again afterwards.
    pub(crate) fn finish(&mut self) -> Vec<u8> {
        let mut out = std::mem::take(&mut self.buf);
        out.reserve(4 * self.restarts.len() + 4);
        for restart in &self.restarts {
            out.extend_from_slice(&restart.to_le_bytes());
        }
        out.extend_from_slice(&(self.restarts.len() as u32).to_le_bytes());
        self.restarts.clear();
        self.since_restart = 0;
        self.last_key.clear();
        self.entries = 0;
        out
    }
}
