//! A table's index as pieces: one piece (the whole index), or two levels,
//! as RocksDB's two-level index search: index partitions of about 4 KiB,
//! each a piece read at its first use, and a small top level over them
//! that stays resident with the table.
//!
//! A lookup whose index is not resident then reads one partition, not the
//! whole index (about 12 KiB for a 2 MiB table of 16-byte keys). Each level
//! is an [`Index`] block: the top level's "blocks" are the partitions,
//! which lie back to back before it; a partition's blocks are the data
//! blocks it covers, and each but the first starts past offset 0, where
//! its tail says (format 8). Every partition covers the same number of
//! data blocks (the footer's), the last one the rest, so that data block
//! `at` is in partition `at / per_partition`.

#![deny(clippy::indexing_slicing)]

use std::ops::Deref;
use std::path::Path;
use std::sync::Arc;

use super::footer::Footer;
use super::index::{Index, IndexEntry};
use super::piece::{INDEX_PIECE, Piece, PieceRef};
use super::properties::Properties;
use super::trailer::{BlockHandle, read_block};
use crate::error::{Error, Result};
use crate::fs::ReadableFile;

/// About how large an index partition is written (RocksDB's default
/// `metadata_block_size`).
pub(crate) const INDEX_PARTITION_BYTES: usize = 4096;

/// The piece number of index partition 0; filter partitions are numbered
/// from 0, far below.
const FIRST_INDEX_PARTITION: u32 = 1 << 31;

/// How a table's index is stored (the footer says).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum IndexLayout {
    /// One block.
    Whole,
    /// Partitions of `per_partition` data blocks each (the last: the rest),
    /// and a top level over them.
    TwoLevel { per_partition: u16 },
}

impl IndexLayout {
    /// The footer's index layout byte and blocks per partition.
    pub(crate) fn encode(self) -> (u8, u16) {
        match self {
            Self::Whole => (0, 0),
            Self::TwoLevel { per_partition } => (1, per_partition),
        }
    }

    /// The layout the footer's `byte` and `per_partition` describe; `None`
    /// if they describe none.
    pub(crate) fn decode(byte: u8, per_partition: u16) -> Option<Self> {
        match (byte, per_partition) {
            (0, 0) => Some(Self::Whole),
            (1, 1..) => Some(Self::TwoLevel { per_partition }),
            _ => None,
        }
    }

    /// The layout for `blocks` data blocks whose whole index takes
    /// `whole_bytes`: partitions of about `target` bytes, or whole if one
    /// would hold it all.
    pub(crate) fn for_index(blocks: usize, whole_bytes: usize, target: usize) -> Self {
        let per_partition = (blocks * target.max(1) / whole_bytes.max(1)).max(2);
        match u16::try_from(per_partition.min(usize::from(u16::MAX))) {
            Ok(per_partition) if usize::from(per_partition) < blocks => {
                Self::TwoLevel { per_partition }
            }
            _ => Self::Whole,
        }
    }
}

/// The blocks of a two-level index over `entries`, each written by `write`
/// (which appends a block to the table and returns its handle): the
/// partitions, back to back, then the top level, whose handle it returns.
/// `None` if a partition's keys would pass 4 GiB.
pub(crate) fn write_two_level<E>(
    entries: &[IndexEntry],
    user_keys: bool,
    per_partition: u16,
    mut write: impl FnMut(&[u8]) -> Result<BlockHandle, E>,
) -> Result<Option<BlockHandle>, E> {
    let mut top = Vec::new();
    for chunk in entries.chunks(usize::from(per_partition).max(1)) {
        let (Some(first), Some(last)) = (chunk.first(), chunk.last()) else {
            continue;
        };
        let Some(block) = Index::encode_from(chunk, user_keys, Some(first.handle.offset)) else {
            return Ok(None);
        };
        top.push(IndexEntry {
            last_key: last.last_key.clone(),
            handle: write(&block)?,
        });
    }
    let start = top.first().map_or(0, |part| part.handle.offset);
    let Some(block) = Index::encode_from(&top, user_keys, Some(start)) else {
        return Ok(None);
    };
    write(&block).map(Some)
}

/// A part of a table's index: the whole index, or one partition, with the
/// number (in the table) of its first data block.
#[derive(Debug)]
pub(crate) struct IndexPart<I = PieceRef<Index>> {
    pub index: I,
    pub first: usize,
}

impl<I: Deref<Target = Index>> IndexPart<I> {
    /// Whether it holds data block `at`.
    pub(crate) fn holds(&self, at: usize) -> bool {
        at.checked_sub(self.first)
            .is_some_and(|within| within < self.index.len())
    }

    /// Where data block `at` is, if the part holds it.
    pub(crate) fn handle(&self, at: usize) -> Option<BlockHandle> {
        self.index.handle(at.checked_sub(self.first)?)
    }

    /// Whether data block `at`'s key is the one of `internal_key` (as
    /// [`Index::key_is`]).
    pub(crate) fn key_is(&self, at: usize, internal_key: &[u8]) -> bool {
        at.checked_sub(self.first)
            .is_some_and(|within| self.index.key_is(within, internal_key))
    }

    /// The user key of data block `at`'s last entry.
    pub(crate) fn user_key(&self, at: usize) -> Option<Vec<u8>> {
        self.index.user_key(at.checked_sub(self.first)?)
    }

    /// The first data block of the part whose last key is `>= key` (as
    /// [`Index::find`]); past the part if none.
    pub(crate) fn find(&self, key: &[u8]) -> usize {
        self.first + self.index.find(key)
    }
}

impl IndexPart {
    /// The part with its index behind an `Arc`, to be held.
    pub(crate) fn held(self) -> IndexPart<Arc<Index>> {
        IndexPart {
            index: self.index.into_arc(),
            first: self.first,
        }
    }
}

/// A table's index.
#[derive(Debug)]
pub(crate) enum TableIndex {
    /// One piece, stored at `handle`.
    Whole {
        piece: Arc<Piece<Index>>,
        handle: BlockHandle,
    },
    /// Partitions as pieces, through a resident top level stored at
    /// `handle`.
    TwoLevel {
        handle: BlockHandle,
        top: Index,
        per_partition: usize,
        parts: Box<[Arc<Piece<Index>>]>,
    },
}

/// Which part of the index to read, and what it must hold.
#[derive(Debug)]
pub(crate) struct PartAt<'a> {
    pub piece: &'a Arc<Piece<Index>>,
    pub handle: BlockHandle,
    /// Its number, and the number of its first data block.
    pub part: usize,
    pub first: usize,
}

impl TableIndex {
    /// The index of table `id` whose footer is `footer`: the top level of
    /// a two-level index is read (from `file`, at `path`, blocks ending by
    /// `limit`) and checked against `properties` now.
    pub(crate) fn open(
        file: &dyn ReadableFile,
        path: &Path,
        (id, footer, limit): (u64, &Footer, u64),
        properties: &Properties,
    ) -> Result<Self> {
        let IndexLayout::TwoLevel { per_partition } = footer.index_layout else {
            return Ok(Self::Whole {
                piece: Piece::new(id, INDEX_PIECE, footer.index.offset),
                handle: footer.index,
            });
        };
        let at = footer.index.offset;
        let raw = read_block(file, path, footer.index, limit)?;
        let top = Index::decode(raw, at, footer.version).map_err(|c| c.in_file(path, at))?;
        let per_partition = usize::from(per_partition);
        let blocks = properties.data_blocks as usize;
        let consistent = top.len() == blocks.div_ceil(per_partition)
            && top.start() >= properties.stored_data_bytes
            && top
                .len()
                .checked_sub(1)
                .is_some_and(|last| top.key_is(last, &properties.largest));
        if !consistent {
            return Err(Error::corruption(
                path,
                at,
                "index top level disagrees with the properties (partitions, data end or largest key)",
            ));
        }
        let parts = (0..top.len())
            .map(|part| {
                let offset = top.handle(part).map_or(0, |h| h.offset);
                let number = FIRST_INDEX_PARTITION.saturating_add(part as u32);
                Piece::new(id, number, offset)
            })
            .collect();
        Ok(Self::TwoLevel {
            handle: footer.index,
            top,
            per_partition,
            parts,
        })
    }

    /// The part holding data block `at`; `None` if there is none.
    pub(crate) fn part_of_block(&self, at: usize) -> Option<PartAt<'_>> {
        match self {
            Self::Whole { .. } => self.part(0),
            Self::TwoLevel { per_partition, .. } => self.part(at / per_partition),
        }
    }

    /// The part that holds the first data block whose last key is `>=
    /// key` (an internal key, as [`Index::find`]); `None` if no block's is.
    pub(crate) fn part_for(&self, key: &[u8]) -> Option<PartAt<'_>> {
        match self {
            Self::Whole { .. } => self.part(0),
            Self::TwoLevel { top, .. } => self.part(top.find(key)),
        }
    }

    /// Part number `part`.
    pub(crate) fn part(&self, part: usize) -> Option<PartAt<'_>> {
        match self {
            Self::Whole { piece, handle } => (part == 0).then_some(PartAt {
                piece,
                handle: *handle,
                part,
                first: 0,
            }),
            Self::TwoLevel {
                top,
                per_partition,
                parts,
                ..
            } => Some(PartAt {
                piece: parts.get(part)?,
                handle: top.handle(part)?,
                part,
                first: part * per_partition,
            }),
        }
    }

    /// How many parts there are.
    pub(crate) fn parts(&self) -> usize {
        match self {
            Self::Whole { .. } => 1,
            Self::TwoLevel { parts, .. } => parts.len(),
        }
    }

    /// Checks part `at`, just read as `index` (of a table of `blocks` data
    /// blocks ending at `data_end` with the last key `largest`): its block
    /// count, its last key, its first block's start if it is the first,
    /// its last block's end if it is the last. A partition's start past
    /// the first is checked by [`check_chain`](Self::check_chain) only.
    pub(crate) fn check_part(
        &self,
        at: &PartAt<'_>,
        index: &Index,
        properties: &Properties,
    ) -> std::result::Result<(), &'static str> {
        let blocks = properties.data_blocks as usize;
        let (expected, last_key) = match self {
            Self::Whole { .. } => (blocks, properties.largest.to_vec()),
            Self::TwoLevel {
                top, per_partition, ..
            } => {
                let rest = blocks.saturating_sub(at.first);
                let key = top
                    .key(at.part)
                    .ok_or("no top-level key for the partition")?;
                (rest.min(*per_partition), key)
            }
        };
        let last = index.len().checked_sub(1);
        let is_last = at.first + index.len() == blocks;
        let consistent = index.len() == expected
            && (at.part > 0 || index.start() == 0)
            && (!is_last || index.end() == properties.stored_data_bytes)
            && last.is_none_or(|last| self.key_matches(index, last, &last_key));
        if consistent {
            Ok(())
        } else {
            Err("index disagrees with the properties (block count, data end or largest key)")
        }
    }

    /// Whether block `last`'s key in `index` is `key`: the properties'
    /// largest internal key for a whole index, the top level's key (stored
    /// as the partition stores its keys) for a partition.
    fn key_matches(&self, index: &Index, last: usize, key: &[u8]) -> bool {
        match self {
            Self::Whole { .. } => index.key_is(last, key),
            Self::TwoLevel { top, .. } => {
                index.holds_user_keys() == top.holds_user_keys()
                    && index.key(last).as_deref() == Some(key)
            }
        }
    }

    /// Checks what [`check_part`](Self::check_part) cannot see alone, over
    /// every part in order, each with the file offset of its block
    /// (`verify`): each part's keys and the top level's (as
    /// [`Index::check_keys`]), each partition starting where the one before
    /// ends, and the keys ascending from one partition to the next.
    pub(crate) fn check_chain(&self, path: &Path, parts: &[(Arc<Index>, u64)]) -> Result<()> {
        if let Self::TwoLevel { top, .. } = self {
            let at = self.offset();
            top.check_keys().map_err(|c| c.in_file(path, at))?;
        }
        let mut previous: Option<&Index> = None;
        for (index, offset) in parts {
            index.check_keys().map_err(|c| c.in_file(path, *offset))?;
            if let Some(before) = previous {
                if index.start() != before.end() {
                    let detail = format!(
                        "index partition starts at {}, where the one before ends at {}",
                        index.start(),
                        before.end()
                    );
                    return Err(Error::corruption(path, *offset, detail));
                }
                if !index.follows(before) {
                    let detail = "index partition's keys do not follow the one before";
                    return Err(Error::corruption(path, *offset, detail));
                }
            }
            previous = Some(index);
        }
        Ok(())
    }

    /// Where the index's block is: the whole index, or the top level.
    pub(crate) fn offset(&self) -> u64 {
        match self {
            Self::Whole { handle, .. } | Self::TwoLevel { handle, .. } => handle.offset,
        }
    }

    /// Bytes the index keeps resident with the table: a two-level index's
    /// top level.
    pub(crate) fn summary_bytes(&self) -> u64 {
        match self {
            Self::Whole { .. } => std::mem::size_of::<Piece<Index>>() as u64,
            Self::TwoLevel { top, parts, .. } => {
                top.stored_bytes() + (parts.len() * std::mem::size_of::<Piece<Index>>()) as u64
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::key::{ValueKind, encode_internal_key};

    #[test]
    fn partitions_are_sized_to_the_target_and_a_small_index_stays_whole() {
        // 512 blocks whose index takes 12 KiB: partitions of about 4 KiB.
        let layout = IndexLayout::for_index(512, 12 << 10, INDEX_PARTITION_BYTES);
        assert_eq!(layout, IndexLayout::TwoLevel { per_partition: 170 });
        assert_eq!(
            IndexLayout::for_index(100, 3000, INDEX_PARTITION_BYTES),
            IndexLayout::Whole
        );
        assert_eq!(IndexLayout::for_index(2, 1 << 20, 64), IndexLayout::Whole);
        // Never a partition per block: the top level would be the index.
        let tiny = IndexLayout::for_index(1000, 1 << 20, 1);
        assert_eq!(tiny, IndexLayout::TwoLevel { per_partition: 2 });
        for layout in [
            IndexLayout::Whole,
            IndexLayout::TwoLevel { per_partition: 7 },
        ] {
            let (byte, per) = layout.encode();
            assert_eq!(IndexLayout::decode(byte, per), Some(layout));
        }
        for (byte, per) in [(0, 1), (1, 0), (2, 0), (255, 3)] {
            assert_eq!(IndexLayout::decode(byte, per), None, "{byte} {per}");
        }
    }

    /// Blocks of 10 stored bytes from `start`, ending at `keys`.
    fn part(keys: &[&str], start: u64) -> Arc<Index> {
        let mut offset = start;
        let entries: Vec<IndexEntry> = keys
            .iter()
            .map(|key| {
                let mut last_key = Vec::new();
                encode_internal_key(&mut last_key, key.as_bytes(), 1, ValueKind::Value);
                let handle = BlockHandle { offset, size: 10 };
                offset = handle.end().unwrap();
                IndexEntry {
                    last_key: last_key.into(),
                    handle,
                }
            })
            .collect();
        let bytes = Index::encode_from(&entries, false, Some(start)).unwrap();
        Arc::new(Index::decode(bytes, u64::MAX, crate::sstable::index::TWO_LEVEL_VERSION).unwrap())
    }

    #[test]
    fn verify_refuses_partitions_that_do_not_chain() {
        let index = TableIndex::Whole {
            piece: Piece::new(1, INDEX_PIECE, 0),
            handle: BlockHandle::default(),
        };
        let path = Path::new("/db/1.sst");
        let first = part(&["a", "b"], 0);
        let chain = |second: Arc<Index>| {
            index.check_chain(path, &[(Arc::clone(&first), 500), (second, 600)])
        };
        assert!(chain(part(&["c", "d"], 30)).is_ok());
        let gap = chain(part(&["c", "d"], 31)).unwrap_err();
        assert!(
            matches!(&gap, Error::Corruption { offset: 600, detail, .. } if detail.contains("starts at 31")),
            "{gap}"
        );
        let overlap = chain(part(&["b", "d"], 30)).unwrap_err();
        assert!(
            matches!(&overlap, Error::Corruption { offset: 600, detail, .. } if detail.contains("follow")),
            "{overlap}"
        );
    }
}
