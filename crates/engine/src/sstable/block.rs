//! A decoded data block, read in place: binary search over the restart
//! points, then a linear scan that rebuilds prefix-compressed keys.

#![deny(clippy::indexing_slicing)]

use std::cmp::Ordering;
use std::ops::Range;

use crate::encoding::Decoder;
use crate::error::Corrupt;
use crate::key::cmp_internal;

/// The raw bytes of a data block with its restart array checked and decoded.
/// Shared through the block cache as `Arc<Block>`.
#[derive(Debug)]
pub(crate) struct Block {
    data: Vec<u8>,
    /// Where the entries end and the restart array begins.
    entries_end: usize,
    /// Offsets of the restart entries: ascending, the first 0, all below
    /// `entries_end`.
    restarts: Vec<u32>,
}

impl Block {
    /// Checks the restart array of a raw block (see `block_builder.rs` for
    /// the layout). Entries are checked as they are read.
    pub(crate) fn decode(data: Vec<u8>) -> Result<Self, Corrupt> {
        let count_at = data
            .len()
            .checked_sub(4)
            .ok_or_else(|| Corrupt::new(0, "block shorter than its restart count"))?;
        let mut tail = Decoder::new(data.get(count_at..).unwrap_or_default());
        let count = tail.u32("restart count")? as usize;
        let entries_end = count
            .checked_mul(4)
            .and_then(|bytes| count_at.checked_sub(bytes))
            .ok_or_else(|| Corrupt::new(count_at as u64, "restart array larger than the block"))?;
        if count == 0 || entries_end == 0 {
            return Err(Corrupt::new(count_at as u64, "block without entries"));
        }
        let mut array = Decoder::new(data.get(entries_end..count_at).unwrap_or_default());
        let mut restarts = Vec::with_capacity(count);
        for i in 0..count {
            let at = (entries_end + array.position()) as u64;
            let restart = array.u32("restart offset")?;
            let ascending = restarts.last().is_none_or(|&last| restart > last);
            if (i == 0 && restart != 0) || !ascending || restart as usize >= entries_end {
                return Err(Corrupt::new(
                    at,
                    format!("restart offset {restart} out of order"),
                ));
            }
            restarts.push(restart);
        }
        Ok(Self {
            data,
            entries_end,
            restarts,
        })
    }

    /// Bytes held (the cache's weight).
    pub(crate) fn size_bytes(&self) -> usize {
        self.data.len() + 4 * self.restarts.len()
    }

    /// The value bytes at `range` (from [`entry_at`](Self::entry_at)).
    pub(crate) fn value(&self, range: Range<usize>) -> &[u8] {
        self.data.get(range).unwrap_or_default()
    }

    /// Decodes the entry at `pos`: `key` holds the previous key on entry and
    /// this entry's key on return. Returns the next entry's offset and the
    /// value's range; `None` at the end of the entries.
    pub(crate) fn entry_at(
        &self,
        pos: usize,
        key: &mut Vec<u8>,
    ) -> Result<Option<(usize, Range<usize>)>, Corrupt> {
        if pos >= self.entries_end {
            return Ok(None);
        }
        let bytes = self.data.get(pos..self.entries_end).unwrap_or_default();
        let mut d = Decoder::new(bytes);
        let at = |c: Corrupt| Corrupt::new(c.offset + pos as u64, c.detail);
        let shared = d.varint_len(key.len(), "shared key length").map_err(at)?;
        let unshared = d.varint_len(bytes.len(), "key length").map_err(at)?;
        let value_len = d.varint_len(bytes.len(), "value length").map_err(at)?;
        let suffix = d.bytes(unshared, "key").map_err(at)?;
        let value_start = pos + d.position();
        d.bytes(value_len, "value").map_err(at)?;
        key.truncate(shared);
        key.extend_from_slice(suffix);
        Ok(Some((
            pos + d.position(),
            value_start..value_start + value_len,
        )))
    }

    /// The key of restart point `index` into `key`.
    fn restart_key(&self, index: usize, key: &mut Vec<u8>) -> Result<(), Corrupt> {
        key.clear();
        let pos = self.restarts.get(index).copied().unwrap_or_default() as usize;
        // `key` is empty, so a restart entry that claims a shared prefix is
        // refused by `entry_at`.
        self.entry_at(pos, key)?;
        Ok(())
    }

    /// The first entry whose key is `>= target` (internal-key order): its key
    /// is left in `key`, its value range returned. `None` if every key of
    /// the block is smaller.
    pub(crate) fn seek(
        &self,
        target: &[u8],
        key: &mut Vec<u8>,
    ) -> Result<Option<Range<usize>>, Corrupt> {
        // Restarts before `left` have keys < target, from `right` on >= target.
        let (mut left, mut right) = (0, self.restarts.len());
        while left < right {
            let mid = left + (right - left) / 2;
            self.restart_key(mid, key)?;
            if cmp_internal(key, target) == Ordering::Less {
                left = mid + 1;
            } else {
                right = mid;
            }
        }
        // The answer lies after the last restart whose key is < target.
        let start = left.saturating_sub(1);
        key.clear();
        let mut pos = self.restarts.get(start).copied().unwrap_or_default() as usize;
        while let Some((next, value)) = self.entry_at(pos, key)? {
            if cmp_internal(key, target) != Ordering::Less {
                return Ok(Some(value));
            }
            pos = next;
        }
        Ok(None)
    }

    /// Every entry in order, as (encoded internal key, value range).
    pub(crate) fn entries(&self) -> BlockEntries<'_> {
        BlockEntries {
            block: self,
            pos: 0,
            key: Vec::new(),
            failed: false,
        }
    }
}

/// Iterator of [`Block::entries`]; yields one `Err` then ends.
#[derive(Debug)]
pub(crate) struct BlockEntries<'a> {
    block: &'a Block,
    pos: usize,
    key: Vec<u8>,
    failed: bool,
}

impl Iterator for BlockEntries<'_> {
    type Item = Result<(Vec<u8>, Range<usize>), Corrupt>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed {
            return None;
        }
        match self.block.entry_at(self.pos, &mut self.key) {
            Ok(Some((next, value))) => {
                self.pos = next;
                Some(Ok((self.key.clone(), value)))
            }
            Ok(None) => None,
            Err(e) => {
                self.failed = true;
                Some(Err(e))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::key::{ValueKind, encode_internal_key};
    use crate::sstable::block_builder::BlockBuilder;

    fn ikey(user: &[u8], seq: u64) -> Vec<u8> {
        let mut out = Vec::new();
        encode_internal_key(&mut out, user, seq, ValueKind::Value);
        out
    }

    fn built(keys: &[Vec<u8>], interval: usize) -> Block {
        let mut b = BlockBuilder::new(interval);
        for (i, k) in keys.iter().enumerate() {
            b.add(k, format!("v{i}").as_bytes());
        }
        Block::decode(b.finish()).unwrap()
    }

    #[test]
    fn golden_bytes_of_a_small_block() {
        let mut b = BlockBuilder::new(2);
        b.add(&ikey(b"ab", 1), b"x");
        b.add(&ikey(b"ac", 1), b"");
        b.add(&ikey(b"b", 2), b"yz");
        let raw = b.finish();
        #[rustfmt::skip]
        let expected: Vec<u8> = [
            // restart 0: shared 0, unshared 10, value 1, "ab" + trailer, "x"
            &[0, 10, 1, b'a', b'b', 1, 1, 0, 0, 0, 0, 0, 0, b'x'][..],
            // shared 1 ("a"), unshared 9, value 0: "c" + trailer
            &[1, 9, 0, b'c', 1, 1, 0, 0, 0, 0, 0, 0],
            // restart 1 at offset 26: shared 0, unshared 9, value 2
            &[0, 9, 2, b'b', 1, 2, 0, 0, 0, 0, 0, 0, b'y', b'z'],
            // restart offsets 0 and 26, count 2
            &[0, 0, 0, 0, 26, 0, 0, 0, 2, 0, 0, 0],
        ]
        .concat();
        assert_eq!(raw, expected);
    }

    #[test]
    fn seek_finds_the_first_key_at_or_after_the_target() {
        let keys: Vec<Vec<u8>> = (0..50u32)
            .map(|i| ikey(format!("k{:03}", i * 2).as_bytes(), 5))
            .collect();
        for interval in [1, 3, 16, 100] {
            let block = built(&keys, interval);
            let mut key = Vec::new();
            for i in 0..100u32 {
                let target = ikey(format!("k{i:03}").as_bytes(), 5);
                let found = block.seek(&target, &mut key).unwrap();
                let expected = keys
                    .iter()
                    .position(|k| cmp_internal(k, &target) != Ordering::Less);
                match expected {
                    Some(at) => {
                        assert_eq!(key, keys[at]);
                        assert_eq!(block.value(found.unwrap()), format!("v{at}").as_bytes());
                    }
                    None => assert!(found.is_none()),
                }
            }
            let all: Vec<Vec<u8>> = block.entries().map(|e| e.unwrap().0).collect();
            assert_eq!(all, keys);
        }
    }

    #[test]
    fn damaged_blocks_are_errors_at_every_byte() {
        let keys: Vec<Vec<u8>> = (0..20u32)
            .map(|i| ikey(format!("key{i:02}").as_bytes(), 1))
            .collect();
        let mut b = BlockBuilder::new(4);
        for k in &keys {
            b.add(k, b"value");
        }
        let raw = b.finish();
        for cut in 0..raw.len() {
            let _ = Block::decode(raw[..cut].to_vec()).map(|bl| bl.entries().count());
        }
        for i in 0..raw.len() {
            for flip in [0x01, 0x80, 0xff] {
                let mut bad = raw.clone();
                bad[i] ^= flip;
                if let Ok(block) = Block::decode(bad) {
                    let mut key = Vec::new();
                    let _ = block.seek(&keys[7], &mut key);
                    let _ = block.entries().count();
                }
            }
        }
        assert!(Block::decode(vec![0, 0, 0, 0]).is_err());
        assert!(Block::decode(vec![1, 0, 0, 0]).is_err());
    }
}
