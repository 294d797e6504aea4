//! The index block: the last internal key of each data block and where the
//! block ends.
//!
//! Since table format 5 it is laid out to be searched where it lies:
//! fixed-width arrays of fences, block ends and key ends, then the keys.
//! Reading it checks the arrays (integers only: no key is parsed or
//! compared), so a table's load costs a copy and a checksum, not a walk;
//! `verify` checks the keys. An older table's index (a varint per field)
//! is walked once, checked, and laid out the same way in memory.

#![deny(clippy::indexing_slicing)]

use std::cmp::Ordering;
use std::ops::Range;

use super::trailer::{BlockHandle, TRAILER_LEN as BLOCK_TRAILER};
use crate::encoding::Decoder;
use crate::error::Corrupt;
use crate::fence::{Fences, fence, ties_in};
use crate::key::{ParsedKey, TRAILER_LEN, cmp_internal, user_key_of};

/// The first table format whose index is laid out to be searched in place.
pub(crate) const IN_PLACE_VERSION: u32 = 5;

/// Longest key the index decoder accepts: the engine's key limit (64 KiB)
/// plus the 8-byte trailer, rounded up generously.
const MAX_INDEX_KEY: usize = 1 << 20;

/// Bytes per data block in the fixed-width arrays: fence, block end, key
/// end.
const FIXED_PER_BLOCK: usize = 8 + 8 + 4;

/// Bytes after the keys and the prefix: the prefix length and the count.
const TAIL_LEN: usize = 8;

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

/// Bytes an index of an older table holds in memory per data block beyond
/// its stored bytes: the fixed-width arrays, less the varints they
/// replace (at least 2 bytes). A format 5 index holds its stored bytes.
const OLDER_BYTES_PER_BLOCK: u64 = (FIXED_PER_BLOCK - 2) as u64;

/// Bytes an index of format `version` holds in memory per data block
/// beyond its stored bytes.
pub(crate) fn bytes_per_block(version: u32) -> u64 {
    if version >= IN_PLACE_VERSION {
        0
    } else {
        OLDER_BYTES_PER_BLOCK
    }
}

/// The index, one entry per data block in key order, laid out as stored
/// by format 5 (`docs/format.md`):
///
/// ```text
/// fences     N x u64   the fence of each key's user key (`fence.rs`)
/// block ends N x u64   the offset just past each block's trailer
/// key ends   N x u32   where each key ends within the keys
/// keys                 the blocks' last internal keys, back to back
/// prefix               what the fences read past
/// P          u32       the prefix's length
/// N          u32       the number of blocks
/// ```
#[derive(Debug, Default)]
pub(crate) struct Index {
    bytes: Box<[u8]>,
    len: usize,
    /// Where the keys begin, and where they end (the prefix begins).
    keys_at: usize,
    prefix_at: usize,
}

impl Index {
    /// The stored index block (format 5) of `entries` (in strictly
    /// ascending key order, blocks back to back from offset 0); `None` if
    /// its keys would pass 4 GiB.
    pub(crate) fn encode(entries: &[IndexEntry]) -> Option<Vec<u8>> {
        lay_out(
            entries.len(),
            |at| entries.get(at).map_or(&[][..], |e| &e.last_key),
            |at| entries.get(at).and_then(|e| e.handle.end()).unwrap_or(0),
        )
    }

    /// Decodes the index block of a table of format `version`, whose data
    /// blocks must lie back to back from offset 0 and end by `data_end`.
    pub(crate) fn decode(bytes: Vec<u8>, data_end: u64, version: u32) -> Result<Self, Corrupt> {
        if version >= IN_PLACE_VERSION {
            return Self::in_place(bytes.into_boxed_slice(), data_end);
        }
        let located = walk_older(&bytes, data_end)?;
        let laid_out = lay_out(
            located.len(),
            |at| {
                let key = located.get(at).and_then(|(key, _)| bytes.get(key.clone()));
                key.unwrap_or_default()
            },
            |at| located.get(at).map_or(0, |&(_, end)| end),
        )
        .ok_or_else(|| Corrupt::new(0, "index keys over 4 GiB"))?;
        Self::in_place(laid_out.into_boxed_slice(), data_end)
    }

    /// Checks the fixed-width arrays of a format 5 block: every key at
    /// least a trailer long, every block at least its trailer long and
    /// ending by `data_end`, the fences ascending.
    fn in_place(bytes: Box<[u8]>, data_end: u64) -> Result<Self, Corrupt> {
        let total = bytes.len();
        let mut tail = Decoder::new(
            bytes
                .get(total.saturating_sub(TAIL_LEN)..)
                .unwrap_or_default(),
        );
        let prefix_len = tail.u32("index prefix length")? as usize;
        let len = tail.u32("index entry count")? as usize;
        let prefix_at = (total - TAIL_LEN)
            .checked_sub(prefix_len)
            .ok_or_else(|| Corrupt::new(0, "index prefix longer than the block"))?;
        let keys_at = len
            .checked_mul(FIXED_PER_BLOCK)
            .filter(|&fixed| fixed <= prefix_at)
            .ok_or_else(|| Corrupt::new(0, format!("{len} index entries do not fit the block")))?;
        let index = Self {
            bytes,
            len,
            keys_at,
            prefix_at,
        };
        index.check_arrays(data_end)?;
        Ok(index)
    }

    fn check_arrays(&self, data_end: u64) -> Result<(), Corrupt> {
        let keys = self.prefix_at - self.keys_at;
        let mut key_start = 0;
        for (at, end) in self.key_ends().iter().enumerate() {
            let end = u32::from_le_bytes(*end) as usize;
            let fits = end
                .checked_sub(key_start)
                .is_some_and(|len| (TRAILER_LEN..=MAX_INDEX_KEY).contains(&len));
            if !fits || end > keys {
                return Err(Corrupt::new(
                    self.key_ends_at() as u64,
                    format!("index key {at} ends at {end}, after {key_start}"),
                ));
            }
            key_start = end;
        }
        if key_start != keys {
            return Err(Corrupt::new(
                self.keys_at as u64,
                "bytes between the last index key and the prefix",
            ));
        }
        let mut block_start = 0u64;
        for (at, end) in self.block_ends().iter().enumerate() {
            let end = u64::from_le_bytes(*end);
            let fits = end
                .checked_sub(block_start)
                .is_some_and(|len| len >= BLOCK_TRAILER as u64);
            if !fits || end > data_end {
                return Err(Corrupt::new(
                    (8 * self.len) as u64,
                    format!("data block {at} ends at {end}: after {block_start}, by {data_end}"),
                ));
            }
            block_start = end;
        }
        if !self.fences().is_sorted_by_key(|f| u64::from_le_bytes(*f)) {
            return Err(Corrupt::new(0, "index fences out of order"));
        }
        Ok(())
    }

    /// Checks what loading the index does not: that every key is an
    /// internal key, the keys strictly ascend, and each fence is its key's
    /// (`verify` asks; a search over keys out of order answers wrongly).
    pub(crate) fn check_keys(&self) -> Result<(), Corrupt> {
        let mut previous: Option<&[u8]> = None;
        for at in 0..self.len {
            let key = self.last_key(at).unwrap_or_default();
            let corrupt = |detail: &str| {
                Corrupt::new(self.keys_at as u64, format!("index key {at}: {detail}"))
            };
            if ParsedKey::parse(key).is_none() {
                return Err(corrupt("not an internal key"));
            }
            if previous.is_some_and(|p| cmp_internal(p, key) != Ordering::Less) {
                return Err(corrupt("out of order"));
            }
            if self.fence(at) != fence(self.prefix(), user_key_of(key)) {
                return Err(corrupt("its fence differs"));
            }
            previous = Some(key);
        }
        Ok(())
    }

    /// The entries, as a table builder recorded them.
    #[cfg(any(test, feature = "fuzzing"))]
    pub(crate) fn entries(&self) -> Vec<IndexEntry> {
        (0..self.len)
            .map(|at| IndexEntry {
                last_key: self.last_key(at).unwrap_or_default().into(),
                handle: self.handle(at).unwrap_or_default(),
            })
            .collect()
    }

    /// Number of data blocks.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    fn fences(&self) -> &[[u8; 8]] {
        self.bytes
            .get(..8 * self.len)
            .unwrap_or_default()
            .as_chunks()
            .0
    }

    fn block_ends(&self) -> &[[u8; 8]] {
        let at = 8 * self.len;
        self.bytes
            .get(at..at + 8 * self.len)
            .unwrap_or_default()
            .as_chunks()
            .0
    }

    fn key_ends_at(&self) -> usize {
        16 * self.len
    }

    fn key_ends(&self) -> &[[u8; 4]] {
        let at = self.key_ends_at();
        self.bytes
            .get(at..at + 4 * self.len)
            .unwrap_or_default()
            .as_chunks()
            .0
    }

    fn prefix(&self) -> &[u8] {
        self.bytes
            .get(self.prefix_at..self.bytes.len().saturating_sub(TAIL_LEN))
            .unwrap_or_default()
    }

    fn fence(&self, at: usize) -> u64 {
        self.fences().get(at).map_or(0, |f| u64::from_le_bytes(*f))
    }

    fn key_end(&self, at: usize) -> Option<usize> {
        Some(u32::from_le_bytes(*self.key_ends().get(at)?) as usize)
    }

    fn block_end(&self, at: usize) -> Option<u64> {
        Some(u64::from_le_bytes(*self.block_ends().get(at)?))
    }

    /// The last internal key of block `at`.
    pub(crate) fn last_key(&self, at: usize) -> Option<&[u8]> {
        let start = match at.checked_sub(1) {
            Some(before) => self.key_end(before)?,
            None => 0,
        };
        let end = self.key_end(at)?;
        self.bytes.get(self.keys_at + start..self.keys_at + end)
    }

    /// Where block `at` is.
    pub(crate) fn handle(&self, at: usize) -> Option<BlockHandle> {
        let end = self.block_end(at)?;
        let offset = match at.checked_sub(1) {
            Some(before) => self.block_end(before)?,
            None => 0,
        };
        // Loading checked that each block ends past its trailer.
        let size = end.checked_sub(offset)?.checked_sub(BLOCK_TRAILER as u64)?;
        Some(BlockHandle { offset, size })
    }

    /// Index of the first block whose last key is `>= key`: the only block
    /// that can hold the first entry `>= key`. `len()` if none.
    pub(crate) fn find(&self, key: &[u8]) -> usize {
        if key.len() < TRAILER_LEN {
            return self.first_not_below(0, self.len, key);
        }
        // Entries before the ties hold smaller user keys, hence smaller
        // internal keys; entries after them larger ones.
        let target = fence(self.prefix(), user_key_of(key));
        let ties = ties_in(self.fences(), |f| u64::from_le_bytes(*f), target);
        self.first_not_below(ties.start, ties.end, key)
    }

    /// The first position in `lo..hi` whose key is `>= key`, `hi` if none.
    fn first_not_below(&self, mut lo: usize, mut hi: usize, key: &[u8]) -> usize {
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            let last = self.last_key(mid).unwrap_or_default();
            if cmp_internal(last, key) == Ordering::Less {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        lo
    }
}

/// The index block of `entries` as formats 1 to 4 store it: `varint
/// count`, then per block `varint key_len | key | varint offset | varint
/// size` (what [`walk_older`] reads).
#[cfg(test)]
pub(crate) fn encode_older(entries: &[IndexEntry]) -> Vec<u8> {
    use crate::encoding::{put_bytes, put_varint};
    let mut out = Vec::new();
    put_varint(&mut out, entries.len() as u64);
    for entry in entries {
        put_bytes(&mut out, &entry.last_key);
        entry.handle.put_varints(&mut out);
    }
    out
}

/// The format 5 layout of `len` keys (`key(at)`, ascending) and block ends
/// (`block_end(at)`); `None` if the keys pass 4 GiB.
fn lay_out<'a>(
    len: usize,
    key: impl Fn(usize) -> &'a [u8],
    block_end: impl Fn(usize) -> u64,
) -> Option<Vec<u8>> {
    let user = |at| user_key_of(key(at));
    let fences = Fences::new(user(0), user(len.saturating_sub(1)), (0..len).map(user));
    let keys: usize = (0..len).map(|at| key(at).len()).sum();
    let prefix = fences.prefix();
    let mut out = Vec::with_capacity(len * FIXED_PER_BLOCK + keys + prefix.len() + TAIL_LEN);
    for &f in fences.values() {
        out.extend_from_slice(&f.to_le_bytes());
    }
    for at in 0..len {
        out.extend_from_slice(&block_end(at).to_le_bytes());
    }
    let mut end = 0u32;
    for at in 0..len {
        end = end.checked_add(u32::try_from(key(at).len()).ok()?)?;
        out.extend_from_slice(&end.to_le_bytes());
    }
    for at in 0..len {
        out.extend_from_slice(key(at));
    }
    out.extend_from_slice(prefix);
    out.extend_from_slice(&u32::try_from(prefix.len()).ok()?.to_le_bytes());
    out.extend_from_slice(&u32::try_from(len).ok()?.to_le_bytes());
    Some(out)
}

/// Walks and checks an index block of format 1 to 4: `varint count`, then
/// per block `varint key_len | key | varint offset | varint size`, keys
/// strictly ascending, blocks back to back from 0 and ending by
/// `data_end`. Returns, per entry, its key's range in `bytes` and its
/// block's end.
fn walk_older(bytes: &[u8], data_end: u64) -> Result<Vec<(Range<usize>, u64)>, Corrupt> {
    let mut d = Decoder::new(bytes);
    // Each entry takes at least 11 bytes (a key holds its 8-byte
    // trailer): the bound stops a damaged count from allocating much.
    let count = d.varint_len(bytes.len() / 11, "index entry count")?;
    let mut located = Vec::with_capacity(count);
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
        located.push((key_start..key_start + key.len(), expected_offset));
        previous = key;
    }
    if !d.is_empty() {
        return Err(d.error("bytes after the last index entry"));
    }
    Ok(located)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::key::{ValueKind, encode_internal_key};

    /// The last format version whose index is walked.
    const OLDER: u32 = IN_PLACE_VERSION - 1;

    fn ikey(user: &[u8], seq: u64) -> Box<[u8]> {
        let mut out = Vec::new();
        encode_internal_key(&mut out, user, seq, ValueKind::Value);
        out.into()
    }

    /// `entries` stored as format `version` writes them.
    fn stored(entries: &[IndexEntry], version: u32) -> Vec<u8> {
        if version >= IN_PLACE_VERSION {
            Index::encode(entries).unwrap()
        } else {
            encode_older(entries)
        }
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
        for version in [OLDER, IN_PLACE_VERSION] {
            let index = Index::decode(stored(&entries, version), 1000, version).unwrap();
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
            assert!(index.check_keys().is_ok());
        }
        let empty = Index::decode(stored(&[], IN_PLACE_VERSION), 0, IN_PLACE_VERSION).unwrap();
        assert_eq!((empty.len(), empty.find(&ikey(b"a", 1))), (0, 0));
    }

    /// The bytes of `docs/format.md`'s example.
    #[test]
    fn golden_layout() {
        let entries: Vec<IndexEntry> = [("k1", 10), ("k3", 20)]
            .iter()
            .scan(0, |offset, &(key, size)| {
                let handle = BlockHandle {
                    offset: *offset,
                    size,
                };
                *offset = handle.end().unwrap();
                Some(IndexEntry {
                    last_key: ikey(key.as_bytes(), 1),
                    handle,
                })
            })
            .collect();
        let hex: String = Index::encode(&entries)
            .unwrap()
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        let expected = [
            "0000000000000031", // fence of "k1" past "k": "1" (0x31 << 56)
            "0000000000000033", // fence of "k3"
            "0f00000000000000", // block 0 ends at 15 (10 + trailer)
            "2800000000000000", // block 1 ends at 40
            "0a000000",         // key 0 ends at 10
            "14000000",         // key 1 ends at 20
            "6b31",
            "0101000000000000", // "k1", seq 1, a value
            "6b33",
            "0101000000000000", // "k3"
            "6b",               // the prefix "k"
            "01000000",         // its length
            "02000000",         // two blocks
        ]
        .concat();
        assert_eq!(hex, expected);
    }

    /// Entries over `keys` (sorted, deduplicated by the caller's set).
    fn entries_of(keys: &std::collections::BTreeSet<(Vec<u8>, u64)>) -> Vec<IndexEntry> {
        let mut sorted: Vec<Box<[u8]>> = keys.iter().map(|(k, s)| ikey(k, *s)).collect();
        sorted.sort_by(|a, b| cmp_internal(a, b));
        sorted
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
            .collect()
    }

    proptest::proptest! {
        #[test]
        fn find_agrees_with_a_plain_binary_search(
            prefix in proptest::collection::vec(0..3u8, 0..12),
            keys in proptest::collection::btree_set(
                (proptest::collection::vec(0..3u8, 0..14), 0..4u64), 0..40),
            targets in proptest::collection::vec(
                (proptest::collection::vec(0..3u8, 0..20), 0..5u64), 1..20),
            older in proptest::bool::ANY,
        ) {
            let keys = keys
                .into_iter()
                .map(|(k, s)| ([&prefix[..], &k].concat(), s))
                .collect();
            let entries = entries_of(&keys);
            let version = if older { OLDER } else { IN_PLACE_VERSION };
            let index = Index::decode(stored(&entries, version), u64::MAX, version).unwrap();
            proptest::prop_assert!(index.check_keys().is_ok());
            for (target, seq) in targets {
                for target in [target.clone(), [&prefix[..], &target].concat()] {
                    let key = ikey(&target, seq);
                    let expected = entries
                        .iter()
                        .take_while(|e| cmp_internal(&e.last_key, &key) == Ordering::Less)
                        .count();
                    proptest::prop_assert_eq!(index.find(&key), expected, "{:?}", target);
                }
            }
            // Malformed (too short) search keys still get an answer.
            let _ = index.find(b"ab");
        }
    }

    #[test]
    fn inconsistent_older_indexes_are_refused() {
        let bytes = encode_older(&sample());
        let decode = |bytes: Vec<u8>, end| Index::decode(bytes, end, OLDER);
        assert!(
            decode(bytes.clone(), 200).is_err(),
            "blocks past the data end"
        );
        let mut swapped = sample();
        swapped.swap(0, 1);
        assert!(decode(encode_older(&swapped), 1000).is_err());
        let mut gap = sample();
        gap[1].handle.offset += 1;
        assert!(decode(encode_older(&gap), 1000).is_err());
        let mut trailing = bytes.clone();
        trailing.push(0);
        assert!(decode(trailing, 1000).is_err());
        for cut in 0..bytes.len() {
            assert!(decode(bytes[..cut].to_vec(), 1000).is_err());
        }
    }

    #[test]
    fn inconsistent_arrays_are_refused_at_load() {
        let bytes = Index::encode(&sample()).unwrap();
        let decode = |bytes: Vec<u8>, end| Index::decode(bytes, end, IN_PLACE_VERSION);
        assert!(decode(bytes.clone(), 1000).is_ok());
        assert!(
            decode(bytes.clone(), 200).is_err(),
            "blocks past the data end"
        );
        for cut in 0..bytes.len() {
            assert!(decode(bytes[..cut].to_vec(), 1000).is_err(), "cut at {cut}");
        }
        let mut trailing = bytes[..bytes.len() - TAIL_LEN].to_vec();
        trailing.push(0);
        trailing.extend_from_slice(&bytes[bytes.len() - TAIL_LEN..]);
        assert!(
            decode(trailing, 1000).is_err(),
            "a byte between keys and prefix"
        );
        // Fences out of order (the first raised above the second).
        let mut fences = bytes.clone();
        fences[7] = 0xff;
        assert!(decode(fences, 1000).is_err());
        // A block shorter than its trailer (the second ending where the first does).
        let mut short = bytes.clone();
        short.copy_within(24..32, 32);
        assert!(decode(short, 1000).is_err());
        // A key shorter than a trailer (the first ending at 4).
        let mut key = bytes.clone();
        key[48] = 4;
        assert!(decode(key, 1000).is_err());
    }

    #[test]
    fn keys_out_of_order_are_found_by_the_full_check() {
        // The first two keys swapped where they lie (all are 9 bytes long).
        let mut swapped = Index::encode(&sample()).unwrap();
        let keys = 3 * FIXED_PER_BLOCK;
        let first: Vec<u8> = swapped[keys..keys + 9].to_vec();
        swapped.copy_within(keys + 9..keys + 18, keys);
        swapped[keys + 9..keys + 18].copy_from_slice(&first);
        let index = Index::decode(swapped, 1000, IN_PLACE_VERSION).unwrap();
        assert!(index.check_keys().is_err());
        let mut bytes = Index::encode(&sample()).unwrap();
        bytes[0] ^= 1;
        let index = Index::decode(bytes, 1000, IN_PLACE_VERSION).unwrap();
        assert!(index.check_keys().is_err(), "a fence that is not its key's");
    }
}
