//! The index block: the last internal key of each data block and where the
//! block is. Decoded at first use into the raw block plus one flat array
//! locating each entry in it, so that reading an index allocates twice
//! however many blocks the table has (a load's profile was led by one
//! allocation per entry, and by freeing them).

#![deny(clippy::indexing_slicing)]

use std::cmp::Ordering;

use super::trailer::{BlockHandle, TRAILER_LEN as BLOCK_TRAILER};
use crate::encoding::{Decoder, put_bytes, put_varint};
use crate::error::Corrupt;
use crate::fence::Fences;
use crate::key::{ParsedKey, TRAILER_LEN, cmp_internal, user_key_of};

/// Longest key the index decoder accepts: the engine's key limit (64 KiB)
/// plus the 8-byte trailer, rounded up generously.
const MAX_INDEX_KEY: usize = 1 << 20;

/// One data block, as a table builder records it: its last key (a
/// separator: `>=` every key in it, `<` every key of the next block) and
/// its handle.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct IndexEntry {
    /// Encoded internal key of the block's last entry.
    pub last_key: Box<[u8]>,
    /// Where the block is.
    pub handle: BlockHandle,
}

/// Where one entry's key lies in the raw block, and where its block ends
/// (blocks lie back to back from offset 0, so this places the block).
#[derive(Debug, Clone, Copy)]
struct Located {
    key_start: u32,
    key_len: u32,
    block_end: u64,
}

/// Bytes an index holds in memory per data block beyond its stored bytes:
/// its [`Located`] and its fence.
pub(crate) const BYTES_PER_BLOCK: u64 = (std::mem::size_of::<Located>() + 8) as u64;

/// The decoded index: one entry per data block, in key order, searched
/// through the [`Fences`] of its user keys.
#[derive(Debug, Default)]
pub(crate) struct Index {
    /// The block as stored (keys are read from it in place).
    bytes: Box<[u8]>,
    /// Per entry, in strictly ascending key order.
    located: Vec<Located>,
    /// Per entry, the fence of its user key.
    fences: Fences,
}

impl Index {
    /// The raw index block: `varint count`, then per block
    /// `varint key_len | key | varint offset | varint size`.
    pub(crate) fn encode(entries: &[IndexEntry]) -> Vec<u8> {
        let mut out = Vec::new();
        put_varint(&mut out, entries.len() as u64);
        for entry in entries {
            put_bytes(&mut out, &entry.last_key);
            entry.handle.put_varints(&mut out);
        }
        out
    }

    /// Decodes an index block whose data blocks must lie back to back from
    /// offset 0 and end by `data_end`.
    pub(crate) fn decode(bytes: Vec<u8>, data_end: u64) -> Result<Self, Corrupt> {
        let located = Self::locate(&bytes, data_end)?;
        Ok(Self::over(bytes.into_boxed_slice(), located))
    }

    /// Checks the block and finds its entries.
    fn locate(bytes: &[u8], data_end: u64) -> Result<Vec<Located>, Corrupt> {
        // Keys are located by `u32` offsets.
        if u32::try_from(bytes.len()).is_err() {
            return Err(Corrupt::new(0, "index block over 4 GiB"));
        }
        let mut d = Decoder::new(bytes);
        // Each entry takes at least 11 bytes (a key holds its 8-byte
        // trailer): the bound stops a damaged count from allocating much.
        let count = d.varint_len(bytes.len() / 11, "index entry count")?;
        let mut located: Vec<Located> = Vec::with_capacity(count);
        let mut previous: &[u8] = &[];
        let mut expected_offset = 0u64;
        for _ in 0..count {
            let at = d.position() as u64;
            let key = d.length_prefixed(MAX_INDEX_KEY, "index key")?;
            // The key ends where the decoder now stands.
            let key_start = d.position() - key.len();
            let handle = BlockHandle::read_varints(&mut d)?;
            if ParsedKey::parse(key).is_none() {
                return Err(Corrupt::new(at, "index key is not an internal key"));
            }
            if !located.is_empty() && cmp_internal(previous, key) != Ordering::Less {
                return Err(Corrupt::new(at, "index keys out of order"));
            }
            if handle.offset != expected_offset {
                return Err(Corrupt::new(
                    at,
                    format!(
                        "data block at {} should start at {expected_offset}",
                        handle.offset
                    ),
                ));
            }
            expected_offset = handle.end().filter(|&end| end <= data_end).ok_or_else(|| {
                Corrupt::new(
                    at,
                    format!("data block at {} runs past {data_end}", handle.offset),
                )
            })?;
            // Both fit in `u32`: the block does.
            located.push(Located {
                key_start: key_start as u32,
                key_len: key.len() as u32,
                block_end: expected_offset,
            });
            previous = key;
        }
        if !d.is_empty() {
            return Err(d.error("bytes after the last index entry"));
        }
        Ok(located)
    }

    /// An index over `entries` (in strictly ascending key order, blocks
    /// back to back from offset 0).
    #[cfg(test)]
    pub(crate) fn new(entries: &[IndexEntry]) -> Self {
        Self::decode(Self::encode(entries), u64::MAX).expect("a well-formed index")
    }

    fn over(bytes: Box<[u8]>, located: Vec<Located>) -> Self {
        let mut index = Self {
            bytes,
            located,
            fences: Fences::default(),
        };
        let user = |i| user_key_of(index.last_key(i).unwrap_or_default());
        let (low, high) = (user(0), user(index.len().saturating_sub(1)));
        let fences = Fences::new(low, high, (0..index.len()).map(user));
        index.fences = fences;
        index
    }

    /// Number of data blocks.
    pub(crate) fn len(&self) -> usize {
        self.located.len()
    }

    /// The last internal key of block `at`.
    pub(crate) fn last_key(&self, at: usize) -> Option<&[u8]> {
        let l = self.located.get(at)?;
        let start = l.key_start as usize;
        self.bytes.get(start..start + l.key_len as usize)
    }

    /// Where block `at` is.
    pub(crate) fn handle(&self, at: usize) -> Option<BlockHandle> {
        let end = self.located.get(at)?.block_end;
        let offset = match at.checked_sub(1) {
            Some(before) => self.located.get(before)?.block_end,
            None => 0,
        };
        // The decoder checked that each block ends past its trailer.
        let size = end.checked_sub(offset)?.checked_sub(BLOCK_TRAILER as u64)?;
        Some(BlockHandle { offset, size })
    }

    /// Index of the first block whose last key is `>= key`: the only block
    /// that can hold the first entry `>= key`. `len()` if none.
    pub(crate) fn find(&self, key: &[u8]) -> usize {
        // `lo..hi` is always within the entries (fences have one element
        // per entry); `get` keeps that an invariant, not a panic.
        let full = |lo: usize, hi: usize| {
            lo + self
                .located
                .get(lo..hi)
                .unwrap_or_default()
                .partition_point(|l| {
                    let start = l.key_start as usize;
                    let last = self.bytes.get(start..start + l.key_len as usize);
                    cmp_internal(last.unwrap_or_default(), key) == Ordering::Less
                })
        };
        if key.len() < TRAILER_LEN {
            return full(0, self.len());
        }
        // Entries before the ties hold smaller user keys, hence smaller
        // internal keys; entries after them larger ones.
        let ties = self.fences.ties(self.fences.of(user_key_of(key)));
        full(ties.start, ties.end)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::key::{ValueKind, encode_internal_key};

    fn ikey(user: &[u8], seq: u64) -> Box<[u8]> {
        let mut out = Vec::new();
        encode_internal_key(&mut out, user, seq, ValueKind::Value);
        out.into()
    }

    fn sample() -> Vec<IndexEntry> {
        let mut offset = 0;
        ["b", "d", "f"]
            .iter()
            .map(|k| {
                let handle = BlockHandle { offset, size: 100 };
                offset = handle.end().unwrap();
                IndexEntry {
                    last_key: ikey(k.as_bytes(), 3),
                    handle,
                }
            })
            .collect()
    }

    #[test]
    fn round_trip_and_find() {
        let entries = sample();
        let bytes = Index::encode(&entries);
        let index = Index::decode(bytes, 1000).unwrap();
        assert_eq!(index.len(), entries.len());
        for (at, entry) in entries.iter().enumerate() {
            assert_eq!(index.last_key(at), Some(&*entry.last_key));
            assert_eq!(index.handle(at), Some(entry.handle));
        }
        assert_eq!(index.last_key(3), None);
        assert_eq!(index.find(&ikey(b"a", 1)), 0);
        assert_eq!(index.find(&ikey(b"b", 3)), 0);
        assert_eq!(index.find(&ikey(b"b", 2)), 1);
        assert_eq!(index.find(&ikey(b"e", 9)), 2);
        assert_eq!(index.find(&ikey(b"g", 9)), 3);
    }

    /// Entries over `keys` (sorted, deduplicated by the caller's set).
    fn index_of(keys: &std::collections::BTreeSet<(Vec<u8>, u64)>) -> Index {
        let mut sorted: Vec<Box<[u8]>> = keys.iter().map(|(k, s)| ikey(k, *s)).collect();
        sorted.sort_by(|a, b| cmp_internal(a, b));
        let entries = sorted
            .into_iter()
            .enumerate()
            .map(|(i, last_key)| IndexEntry {
                last_key,
                // Back to back, as the decoder requires.
                handle: BlockHandle {
                    offset: i as u64 * (10 + BLOCK_TRAILER as u64),
                    size: 10,
                },
            })
            .collect::<Vec<_>>();
        Index::new(&entries)
    }

    proptest::proptest! {
        #[test]
        fn find_agrees_with_a_plain_binary_search(
            prefix in proptest::collection::vec(0..3u8, 0..12),
            keys in proptest::collection::btree_set(
                (proptest::collection::vec(0..3u8, 0..14), 0..4u64), 0..40),
            targets in proptest::collection::vec(
                (proptest::collection::vec(0..3u8, 0..20), 0..5u64), 1..20),
        ) {
            let keys = keys
                .into_iter()
                .map(|(k, s)| ([&prefix[..], &k].concat(), s))
                .collect();
            let index = index_of(&keys);
            for (target, seq) in targets {
                for target in [target.clone(), [&prefix[..], &target].concat()] {
                    let key = ikey(&target, seq);
                    let expected = (0..index.len())
                        .take_while(|&i| {
                            cmp_internal(index.last_key(i).unwrap(), &key) == Ordering::Less
                        })
                        .count();
                    proptest::prop_assert_eq!(index.find(&key), expected, "{:?}", target);
                }
            }
            // Malformed (too short) search keys still get an answer.
            let _ = index.find(b"ab");
        }
    }

    #[test]
    fn inconsistent_indexes_are_refused() {
        let bytes = Index::encode(&sample());
        assert!(
            Index::decode(bytes.clone(), 200).is_err(),
            "blocks past the data end"
        );
        let mut swapped = sample();
        swapped.swap(0, 1);
        assert!(Index::decode(Index::encode(&swapped), 1000).is_err());
        let mut gap = sample();
        gap[1].handle.offset += 1;
        assert!(Index::decode(Index::encode(&gap), 1000).is_err());
        let mut trailing = bytes.clone();
        trailing.push(0);
        assert!(Index::decode(trailing, 1000).is_err());
        for cut in 0..bytes.len() {
            assert!(Index::decode(bytes[..cut].to_vec(), 1000).is_err());
        }
    }
}
