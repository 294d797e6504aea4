//! The key filter of an open table: one [`StaticFilter`] for the whole
//! table, read with it, or one per partition, found by binary search over
//! the partitions' last user keys and each read at its first use as a
//! [`Piece`] of its own, so that under a tight budget a lookup reads the
//! one partition it needs.
//!
//! Errors are treated as potential matches: a filter (or partition) whose
//! block fails its checksum or does not decode answers "may contain" for
//! every key, and the first problem is kept for `verify` to report. An I/O
//! error while reading the whole filter or the partition index still fails
//! the open: that is not damage; one while reading a partition only makes
//! that probe answer "may contain".

#![deny(clippy::indexing_slicing)]

use std::path::Path;
use std::sync::{Arc, OnceLock};

use sift_filter::{Filter, KeyHash, StaticFilter};

use crate::encoding::{Decoder, put_bytes, put_varint};
use crate::error::{Corrupt, Error, Result};
use crate::fence::Fences;
use crate::fs::ReadableFile;
use crate::sstable::piece::Piece;
use crate::sstable::trailer::{BlockHandle, read_block};

/// Bytes a resident partition takes beyond its filter data: the `Arc`,
/// the filter's struct and the allocator's rounding.
const PARTITION_OVERHEAD: u64 = 128;

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
    /// Partitions: ascending last user keys (and their fences, searched
    /// first), each one's block, and each one's filter as a piece, read at
    /// its first use.
    Partitioned {
        fences: Fences,
        last_keys: Vec<Box<[u8]>>,
        handles: Vec<BlockHandle>,
        pieces: Vec<Arc<Piece<StaticFilter>>>,
    },
    /// Damaged beyond use: every key may be present.
    Unreadable,
}

/// The key filter of an open table.
#[derive(Debug)]
pub(crate) struct KeyFilter {
    loaded: Loaded,
    /// First damage found: file offset and what was wrong.
    problem: OnceLock<(u64, String)>,
}

/// Where the answer for one key is.
pub(crate) enum Probe<'a> {
    /// Known without reading anything.
    Answer(bool),
    /// In partition `piece`, stored at `handle`.
    Partition {
        piece: &'a Arc<Piece<StaticFilter>>,
        handle: BlockHandle,
    },
}

impl KeyFilter {
    /// Reads the filter at `handle` (laid out as `layout`), whose blocks
    /// end by `limit`: the whole filter, or the partition index of table
    /// `table` (its partitions are read at their first use).
    /// `largest_user_key` is the table's, from its properties: the last
    /// partition must end there.
    pub(crate) fn load(
        file: &dyn ReadableFile,
        path: &Path,
        (layout, handle): (FilterLayout, BlockHandle),
        limit: u64,
        table: u64,
        largest_user_key: &[u8],
    ) -> Result<Self> {
        let problem = OnceLock::new();
        let loaded = match layout {
            FilterLayout::None => Loaded::None,
            FilterLayout::Whole => match read_filter(file, path, handle, limit)? {
                Ok(filter) => Loaded::Whole(filter),
                Err(damage) => {
                    let _ = problem.set(damage);
                    Loaded::Unreadable
                }
            },
            FilterLayout::Partitioned => {
                match load_partition_index(file, path, handle, limit, table, largest_user_key)? {
                    Ok(loaded) => loaded,
                    Err(damage) => {
                        let _ = problem.set(damage);
                        Loaded::Unreadable
                    }
                }
            }
        };
        Ok(Self { loaded, problem })
    }

    /// Where the answer for `user_key` is: `Answer(false)` only if no key
    /// hashing to `hash` with user key `user_key` was added. Never
    /// re-hashes the key.
    pub(crate) fn locate(&self, user_key: &[u8], hash: KeyHash) -> Probe<'_> {
        match &self.loaded {
            Loaded::None | Loaded::Unreadable => Probe::Answer(true),
            Loaded::Whole(filter) => Probe::Answer(filter.may_contain(hash)),
            Loaded::Partitioned {
                fences,
                last_keys,
                handles,
                pieces,
            } => {
                let at = partition_of(fences, last_keys, user_key);
                match (pieces.get(at), handles.get(at)) {
                    (Some(piece), Some(&handle)) => Probe::Partition { piece, handle },
                    // Past the last partition, which ends at the table's
                    // largest key (checked at load).
                    _ => Probe::Answer(false),
                }
            }
        }
    }

    /// Reads the partition at `handle` (whose blocks end by `limit`), or
    /// `None` if it is damaged (the damage is kept for `verify`) or cannot
    /// be read now.
    pub(crate) fn read_partition(
        &self,
        file: &dyn ReadableFile,
        path: &Path,
        handle: BlockHandle,
        limit: u64,
    ) -> Option<StaticFilter> {
        match read_filter(file, path, handle, limit) {
            Ok(Ok(filter)) => Some(filter),
            Ok(Err(damage)) => {
                let _ = self.problem.set(damage);
                None
            }
            Err(_) => None,
        }
    }

    /// Bytes every partition would take in memory (from their stored
    /// sizes: each holds its filter's bytes and a small envelope).
    pub(crate) fn partitions_bytes(&self) -> u64 {
        match &self.loaded {
            Loaded::Partitioned { handles, .. } => handles
                .iter()
                .map(|handle| handle.size + PARTITION_OVERHEAD)
                .sum(),
            _ => 0,
        }
    }

    /// Bytes a partition takes in memory.
    pub(crate) fn partition_bytes(filter: &StaticFilter) -> u64 {
        filter.size_bytes() as u64 + PARTITION_OVERHEAD
    }

    /// Starts loading the filter line a probe for `hash` will read (a
    /// hint, for batched lookups), if that filter is in memory.
    pub(crate) fn prefetch(&self, user_key: &[u8], hash: KeyHash) {
        match self.locate_filter(user_key) {
            Some(Located::Whole(filter)) => filter.prefetch(hash),
            Some(Located::Piece(piece)) => {
                if let Some(filter) = piece.resident() {
                    filter.prefetch(hash);
                }
            }
            None => {}
        }
    }

    fn locate_filter(&self, user_key: &[u8]) -> Option<Located<'_>> {
        match &self.loaded {
            Loaded::None | Loaded::Unreadable => None,
            Loaded::Whole(filter) => Some(Located::Whole(filter)),
            Loaded::Partitioned {
                fences,
                last_keys,
                pieces,
                ..
            } => {
                let at = partition_of(fences, last_keys, user_key);
                pieces.get(at).map(Located::Piece)
            }
        }
    }

    /// Reads every partition not read yet, so that [`KeyFilter::problem`]
    /// knows of all damage (for `verify`); I/O errors are returned.
    pub(crate) fn check(&self, file: &dyn ReadableFile, path: &Path, limit: u64) -> Result<()> {
        if let Loaded::Partitioned { handles, .. } = &self.loaded {
            for &handle in handles {
                if let Err(damage) = read_filter(file, path, handle, limit)? {
                    let _ = self.problem.set(damage);
                }
            }
        }
        Ok(())
    }

    /// The first damage found, as the error `verify` reports.
    pub(crate) fn problem(&self, path: &Path) -> Option<Error> {
        self.problem.get().map(|(offset, detail)| {
            Error::corruption(path, *offset, format!("key filter: {detail}"))
        })
    }

    /// Bytes the filter keeps with its table, whatever its pieces hold:
    /// the whole filter, or the partition index.
    pub(crate) fn summary_bytes(&self) -> u64 {
        match &self.loaded {
            Loaded::None | Loaded::Unreadable => 0,
            Loaded::Whole(filter) => filter.size_bytes() as u64 + PARTITION_OVERHEAD,
            Loaded::Partitioned { last_keys, .. } => last_keys
                .iter()
                .map(|key| key.len() as u64 + PARTITION_ENTRY_BYTES)
                .sum(),
        }
    }
}

/// Bytes per partition in memory beyond its last key: the key's box, its
/// fence, its handle and its piece.
const PARTITION_ENTRY_BYTES: u64 = 16 + 8 + 16 + 8 + 96;

/// The first partition whose last key (of `last_keys`, fenced by
/// `fences`) is `>= user_key`: the fences settle every comparison but
/// ties, which the keys decide, so a probe touches a few cache lines, not
/// a key allocation per step.
fn partition_of(fences: &Fences, last_keys: &[Box<[u8]>], user_key: &[u8]) -> usize {
    let ties = fences.ties(fences.of(user_key));
    let tied = last_keys.get(ties.clone()).unwrap_or_default();
    ties.start + tied.partition_point(|k| &**k < user_key)
}

/// A filter in memory, or the piece that may hold one.
enum Located<'a> {
    Whole(&'a StaticFilter),
    Piece(&'a Arc<Piece<StaticFilter>>),
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

/// Reads the partition index of table `table`; its partitions are read at
/// their first use.
fn load_partition_index(
    file: &dyn ReadableFile,
    path: &Path,
    handle: BlockHandle,
    limit: u64,
    table: u64,
    largest_user_key: &[u8],
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
    let pieces = (0u32..)
        .zip(&entries)
        .map(|(at, (_, handle))| Piece::new(table, at, handle.offset))
        .collect();
    let (last_keys, handles): (Vec<Box<[u8]>>, _) = entries.into_iter().unzip();
    let low = last_keys.first().map_or(&[][..], |k| &**k);
    let high = last_keys.last().map_or(&[][..], |k| &**k);
    let fences = Fences::new(low, high, last_keys.iter().map(|k| &**k));
    Ok(Ok(Loaded::Partitioned {
        fences,
        last_keys,
        handles,
        pieces,
    }))
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
