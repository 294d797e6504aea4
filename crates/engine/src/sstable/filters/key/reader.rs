//! The key filter of an open table, decoded once at open and probed in
//! place: one [`StaticFilter`] for the whole table, or one per partition
//! found by binary search over the partitions' last user keys.
//!
//! Errors are treated as potential matches: a filter (or partition) whose
//! block fails its checksum or does not decode answers "may contain" for
//! every key, and the problem is kept for `verify` to report. An I/O error
//! while reading it still fails the open: that is not damage.

#![deny(clippy::indexing_slicing)]

use std::path::Path;

use sift_filter::{Filter, KeyHash, StaticFilter};

use crate::encoding::{Decoder, put_bytes, put_varint};
use crate::error::{Corrupt, Error, Result};
use crate::fs::ReadableFile;
use crate::sstable::trailer::{BlockHandle, read_block};

/// Longest user key in a partition index: the engine's key limit (64 KiB),
/// with room to spare.
const MAX_PARTITION_KEY: usize = 1 << 20;

/// One partition index entry: the partition's last user key and its block.
type PartitionEntry = (Box<[u8]>, BlockHandle);

/// How the footer's filter handle is to be read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub(crate) enum FilterLayout {
    /// No filter; the handle is zero.
    None = 0,
    /// The handle names one filter block.
    Whole = 1,
    /// The handle names the partition index.
    Partitioned = 2,
}

impl FilterLayout {
    /// Parses the footer byte.
    pub(crate) fn from_u8(byte: u8) -> Option<Self> {
        match byte {
            0 => Some(Self::None),
            1 => Some(Self::Whole),
            2 => Some(Self::Partitioned),
            _ => None,
        }
    }
}

/// Encodes the partition index: `varint count`, then per partition
/// `varint key_len | last user key | varint offset | varint size`.
pub(crate) fn encode_partition_index(partitions: &[(Vec<u8>, BlockHandle)]) -> Vec<u8> {
    let mut out = Vec::new();
    put_varint(&mut out, partitions.len() as u64);
    for (last_key, handle) in partitions {
        put_bytes(&mut out, last_key);
        handle.put_varints(&mut out);
    }
    out
}

/// What is in memory.
#[derive(Debug)]
enum Loaded {
    /// The table has no filter.
    None,
    /// One filter.
    Whole(StaticFilter),
    /// Partitions: ascending last user keys, and each one's filter (`None`
    /// if it could not be read).
    Partitioned {
        last_keys: Vec<Box<[u8]>>,
        filters: Vec<Option<StaticFilter>>,
    },
    /// Damaged beyond use: every key may be present.
    Unreadable,
}

/// The key filter of an open table.
#[derive(Debug)]
pub(crate) struct KeyFilter {
    loaded: Loaded,
    /// First damage found: file offset and what was wrong.
    problem: Option<(u64, String)>,
}

impl KeyFilter {
    /// Reads the filter at `handle` (laid out as `layout`), whose blocks
    /// end by `limit`. `largest_user_key` is the table's, from its
    /// properties: the last partition must end there.
    pub(crate) fn load(
        file: &dyn ReadableFile,
        path: &Path,
        layout: FilterLayout,
        handle: BlockHandle,
        limit: u64,
        largest_user_key: &[u8],
    ) -> Result<Self> {
        let mut problem = None;
        let loaded = match layout {
            FilterLayout::None => Loaded::None,
            FilterLayout::Whole => match read_filter(file, path, handle, limit)? {
                Ok(filter) => Loaded::Whole(filter),
                Err(damage) => {
                    problem = Some(damage);
                    Loaded::Unreadable
                }
            },
            FilterLayout::Partitioned => {
                match load_partitions(file, path, handle, limit, largest_user_key, &mut problem)? {
                    Ok(loaded) => loaded,
                    Err(damage) => {
                        problem = Some(damage);
                        Loaded::Unreadable
                    }
                }
            }
        };
        Ok(Self { loaded, problem })
    }

    /// `false` only if no key hashing to `hash` with user key `user_key`
    /// was added. Never re-hashes the key.
    pub(crate) fn may_contain(&self, user_key: &[u8], hash: KeyHash) -> bool {
        match &self.loaded {
            Loaded::None | Loaded::Unreadable => true,
            Loaded::Whole(filter) => filter.may_contain(hash),
            Loaded::Partitioned { last_keys, filters } => {
                let at = last_keys.partition_point(|k| &**k < user_key);
                match filters.get(at) {
                    // Past the last partition, which ends at the table's
                    // largest key (checked at load).
                    None => false,
                    Some(None) => true,
                    Some(Some(filter)) => filter.may_contain(hash),
                }
            }
        }
    }

    /// Starts loading the filter line [`FilterBlock::may_contain`] will
    /// read for `hash` (a hint, for batched lookups).
    pub(crate) fn prefetch(&self, user_key: &[u8], hash: KeyHash) {
        match &self.loaded {
            Loaded::None | Loaded::Unreadable => {}
            Loaded::Whole(filter) => filter.prefetch(hash),
            Loaded::Partitioned { last_keys, filters } => {
                let at = last_keys.partition_point(|k| &**k < user_key);
                if let Some(Some(filter)) = filters.get(at) {
                    filter.prefetch(hash);
                }
            }
        }
    }

    /// The first damage found, as the error `verify` reports.
    pub(crate) fn problem(&self, path: &Path) -> Option<Error> {
        self.problem.as_ref().map(|(offset, detail)| {
            Error::corruption(path, *offset, format!("key filter: {detail}"))
        })
    }

    /// Whether any part of the filter could not be read.
    pub(crate) fn is_damaged(&self) -> bool {
        self.problem.is_some()
    }
}

/// Reads one filter block: `Err(Error)` for I/O, `Ok(Err(damage))` for
/// bytes that are not a filter.
fn read_filter(
    file: &dyn ReadableFile,
    path: &Path,
    handle: BlockHandle,
    limit: u64,
) -> Result<Result<StaticFilter, (u64, String)>> {
    let bytes = match read_block(file, path, handle, limit) {
        Ok(bytes) => bytes,
        Err(Error::Corruption { offset, detail, .. }) => return Ok(Err((offset, detail))),
        Err(other) => return Err(other),
    };
    Ok(StaticFilter::decode(&bytes)
        .map_err(|e| (handle.offset, format!("filter does not decode: {e}"))))
}

/// Reads the partition index and every partition; a damaged partition is
/// recorded in `problem` and answers "may contain".
fn load_partitions(
    file: &dyn ReadableFile,
    path: &Path,
    handle: BlockHandle,
    limit: u64,
    largest_user_key: &[u8],
    problem: &mut Option<(u64, String)>,
) -> Result<Result<Loaded, (u64, String)>> {
    let bytes = match read_block(file, path, handle, limit) {
        Ok(bytes) => bytes,
        Err(Error::Corruption { offset, detail, .. }) => return Ok(Err((offset, detail))),
        Err(other) => return Err(other),
    };
    let entries = match decode_partition_index(&bytes, handle.offset, largest_user_key) {
        Ok(entries) => entries,
        Err(c) => return Ok(Err((handle.offset.saturating_add(c.offset), c.detail))),
    };
    let mut last_keys = Vec::with_capacity(entries.len());
    let mut filters = Vec::with_capacity(entries.len());
    for (last_key, partition) in entries {
        let filter = match read_filter(file, path, partition, handle.offset)? {
            Ok(filter) => Some(filter),
            Err(damage) => {
                problem.get_or_insert(damage);
                None
            }
        };
        last_keys.push(last_key);
        filters.push(filter);
    }
    Ok(Ok(Loaded::Partitioned { last_keys, filters }))
}

/// Decodes the partition index; its last key must be the table's largest
/// user key, so that a key past it is certainly absent.
fn decode_partition_index(
    bytes: &[u8],
    index_offset: u64,
    largest_user_key: &[u8],
) -> Result<Vec<PartitionEntry>, Corrupt> {
    let mut d = Decoder::new(bytes);
    // Each entry takes at least 3 bytes (empty key, offset, size).
    let count = d.varint_len(bytes.len() / 3, "partition count")?;
    let mut out: Vec<PartitionEntry> = Vec::with_capacity(count);
    for _ in 0..count {
        let at = d.position() as u64;
        let key = d.length_prefixed(MAX_PARTITION_KEY, "partition key")?;
        let handle = BlockHandle::read_varints(&mut d)?;
        if out.last().is_some_and(|(last, _)| &**last >= key) {
            return Err(Corrupt::new(at, "partition keys out of order"));
        }
        if handle.end().is_none_or(|end| end > index_offset) {
            return Err(Corrupt::new(at, "partition runs into the partition index"));
        }
        out.push((key.into(), handle));
    }
    if !d.is_empty() {
        return Err(d.error("bytes after the last partition"));
    }
    match out.last() {
        Some((last, _)) if &**last == largest_user_key => Ok(out),
        _ => Err(Corrupt::new(
            0,
            "last partition does not end at the table's largest key",
        )),
    }
}
