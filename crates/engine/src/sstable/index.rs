//! The index block: the last key of each data block and where the block
//! ends.
//!
//! Since table format 5 it is laid out to be searched where it lies:
//! fixed-width arrays of fences, block ends and key ends, then the keys.
//! Reading it checks the arrays (integers only: no key is parsed or
//! compared), so a table's load costs a copy and a checksum, not a walk;
//! `verify` checks the keys. Format 6 makes it smaller: keys are stored
//! past the prefix the fences read past, as user keys where no user key
//! spans two blocks, and block ends take 4 bytes where the data fits in
//! 4 GiB. An older table's index (a varint per field) is walked once,
//! checked, and laid out as format 6 in memory.

#![deny(clippy::indexing_slicing)]

use std::cmp::Ordering;
use std::ops::Range;

use super::trailer::{BlockHandle, TRAILER_LEN as BLOCK_TRAILER};
use crate::encoding::Decoder;
use crate::error::Corrupt;
use crate::fence::{Fences, fence, ties_in};
use crate::key::{
    ParsedKey, TRAILER_LEN, cmp_internal, cmp_internal_split, cmp_split, user_key_of,
};

/// The first table format whose index is laid out to be searched in place.
pub(crate) const IN_PLACE_VERSION: u32 = 5;

/// The first table format whose index keys are stored past their prefix,
/// as user keys where they can be, with block ends as narrow as the data
/// allows.
pub(crate) const COMPACT_VERSION: u32 = 6;

/// The first table format whose index may be split in two levels: index
/// partitions, and a top level over them (`table_index.rs`).
pub(crate) const TWO_LEVEL_VERSION: u32 = 8;

/// Longest key the index decoder accepts: the engine's key limit (64 KiB)
/// plus the 8-byte trailer, rounded up generously.
const MAX_INDEX_KEY: usize = 1 << 20;

/// Bytes after the keys and the prefix in format 6: flags, prefix length,
/// count.
const COMPACT_TAIL_LEN: usize = 12;

/// Layout flag (format 6): block ends are u32.
const NARROW_ENDS: u32 = 1;
/// Layout flag (format 6): the keys are user keys.
const USER_KEYS: u32 = 2;
/// Layout flag (format 8): the first block does not start at offset 0 but
/// where the u64 before the flags says (a block of a two-level index).
const STARTS_AT: u32 = 4;

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
/// its stored bytes, at most: the fixed-width arrays (20 bytes), less the
/// varints they replace (at least 2 bytes). An in-place index holds its
/// stored bytes.
const OLDER_BYTES_PER_BLOCK: u64 = 18;

/// Bytes an index of format `version` holds in memory per data block
/// beyond its stored bytes.
pub(crate) fn bytes_per_block(version: u32) -> u64 {
    if version >= IN_PLACE_VERSION {
        0
    } else {
        OLDER_BYTES_PER_BLOCK
    }
}

/// How an in-place index stores its keys and block ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Layout {
    /// Format 6: keys are stored past the prefix, and the tail holds the
    /// flags below.
    compact: bool,
    /// Block ends are u32 (the data ends by 4 GiB).
    narrow_ends: bool,
    /// Keys are user keys: no user key spans two blocks, so a block's last
    /// user key separates it from the next as well as its internal key.
    user_keys: bool,
    /// Format 8: the tail holds where the first block starts.
    starts_at: bool,
}

impl Layout {
    const FORMAT_5: Self = Self {
        compact: false,
        narrow_ends: false,
        user_keys: false,
        starts_at: false,
    };

    /// The layout of the flags `flags` (format 6, and format 8 if
    /// `two_level`); `None` for unknown ones.
    fn compact(flags: u32, two_level: bool) -> Option<Self> {
        let known = NARROW_ENDS | USER_KEYS | if two_level { STARTS_AT } else { 0 };
        (flags & !known == 0).then_some(Self {
            compact: true,
            narrow_ends: flags & NARROW_ENDS != 0,
            user_keys: flags & USER_KEYS != 0,
            starts_at: flags & STARTS_AT != 0,
        })
    }

    fn flags(self) -> u32 {
        u32::from(self.narrow_ends) * NARROW_ENDS
            + u32::from(self.user_keys) * USER_KEYS
            + u32::from(self.starts_at) * STARTS_AT
    }

    fn end_width(self) -> usize {
        if self.narrow_ends { 4 } else { 8 }
    }

    /// Bytes per data block in the fixed-width arrays: fence, block end,
    /// key end.
    fn fixed_per_block(self) -> usize {
        8 + self.end_width() + 4
    }

    /// Bytes after the keys and the prefix: (the first block's start, the
    /// flags,) the prefix length and the count.
    fn tail_len(self) -> usize {
        match (self.compact, self.starts_at) {
            (false, _) => 8,
            (true, false) => COMPACT_TAIL_LEN,
            (true, true) => COMPACT_TAIL_LEN + 8,
        }
    }

    /// The shortest key stored: an internal key's trailer, past the prefix.
    fn min_key(self) -> usize {
        if self.user_keys { 0 } else { TRAILER_LEN }
    }
}

/// The index, one entry per data block in key order, laid out as stored
/// by format 6 (`docs/format.md`):
///
/// ```text
/// fences     N x u64        the fence of each key's user key (`fence.rs`)
/// block ends N x u32 or u64 the offset just past each block's trailer
/// key ends   N x u32        where each key ends within the keys
/// keys                      the blocks' last keys past the prefix
/// prefix                    what the fences and the keys read past
/// start      u64            where the first block starts (format 8, if
///                           flagged; else 0)
/// flags      u32            narrow block ends, user keys, start
/// P          u32            the prefix's length
/// N          u32            the number of blocks
/// ```
///
/// Format 5 has no flags, wide block ends, and whole internal keys.
#[derive(Debug)]
pub(crate) struct Index {
    bytes: Box<[u8]>,
    len: usize,
    layout: Layout,
    /// Where the keys begin, and where they end (the prefix begins).
    keys_at: usize,
    prefix_at: usize,
    /// Where the first block starts.
    start: u64,
}

impl Default for Index {
    fn default() -> Self {
        Self {
            bytes: Box::default(),
            len: 0,
            layout: Layout::FORMAT_5,
            keys_at: 0,
            prefix_at: 0,
            start: 0,
        }
    }
}

impl Index {
    /// The stored index block (format 6) of `entries` (internal keys in
    /// strictly ascending order, blocks back to back from offset 0), with
    /// user keys if `user_keys` (no user key spans two blocks); `None` if
    /// its keys would pass 4 GiB.
    pub(crate) fn encode(entries: &[IndexEntry], user_keys: bool) -> Option<Vec<u8>> {
        Self::encode_from(entries, user_keys, None)
    }

    /// [`Index::encode`] of blocks that start at `start` if given (a block
    /// of a two-level index, format 8), at 0 if not.
    pub(crate) fn encode_from(
        entries: &[IndexEntry],
        user_keys: bool,
        start: Option<u64>,
    ) -> Option<Vec<u8>> {
        lay_out(
            Form::Compact { user_keys, start },
            entries.len(),
            |at| entries.get(at).map_or(&[][..], |e| &e.last_key),
            |at| entries.get(at).and_then(|e| e.handle.end()).unwrap_or(0),
        )
    }

    /// Decodes the index block of a table of format `version`, whose
    /// blocks must lie back to back from where the block says they start
    /// (0 but in a two-level index) and end by `data_end`.
    pub(crate) fn decode(bytes: Vec<u8>, data_end: u64, version: u32) -> Result<Self, Corrupt> {
        if version >= COMPACT_VERSION {
            let two_level = version >= TWO_LEVEL_VERSION;
            return Self::in_place(bytes.into_boxed_slice(), data_end, Err(two_level));
        }
        if version == IN_PLACE_VERSION {
            return Self::in_place(bytes.into_boxed_slice(), data_end, Ok(Layout::FORMAT_5));
        }
        let located = walk_older(&bytes, data_end)?;
        let laid_out = lay_out(
            Form::Compact {
                user_keys: false,
                start: None,
            },
            located.len(),
            |at| {
                let key = located.get(at).and_then(|(key, _)| bytes.get(key.clone()));
                key.unwrap_or_default()
            },
            |at| located.get(at).map_or(0, |&(_, end)| end),
        )
        .ok_or_else(|| Corrupt::new(0, "index keys over 4 GiB"))?;
        Self::in_place(laid_out.into_boxed_slice(), data_end, Err(false))
    }

    /// Checks the fixed-width arrays of an in-place block (laid out as
    /// `layout`, or `Err(two_level)`: as its flags say, format 8's allowed
    /// if `two_level`): every key at least as long as its layout requires,
    /// every block at least its trailer long and ending by `data_end`, the
    /// fences ascending.
    fn in_place(
        bytes: Box<[u8]>,
        data_end: u64,
        layout: Result<Layout, bool>,
    ) -> Result<Self, Corrupt> {
        let total = bytes.len();
        // Without a given layout, the block is format 6 or 8 and its tail
        // holds flags.
        let fixed_tail = layout.map_or(COMPACT_TAIL_LEN, Layout::tail_len);
        let fixed_at = total.saturating_sub(fixed_tail);
        let mut tail = Decoder::new(bytes.get(fixed_at..).unwrap_or_default());
        let layout = match layout {
            Ok(layout) => layout,
            Err(two_level) => {
                let flags = tail.u32("index layout flags")?;
                Layout::compact(flags, two_level).ok_or_else(|| {
                    Corrupt::new(
                        fixed_at as u64,
                        format!("unknown index layout flags {flags:#x}"),
                    )
                })?
            }
        };
        let prefix_len = tail.u32("index prefix length")? as usize;
        let len = tail.u32("index entry count")? as usize;
        let tail_at = total.saturating_sub(layout.tail_len());
        let start = if layout.starts_at {
            let mut at = Decoder::new(bytes.get(tail_at..fixed_at).unwrap_or_default());
            at.u64("index first block start")?
        } else {
            0
        };
        let prefix_at = tail_at
            .checked_sub(prefix_len)
            .ok_or_else(|| Corrupt::new(0, "index prefix longer than the block"))?;
        let keys_at = len
            .checked_mul(layout.fixed_per_block())
            .filter(|&fixed| fixed <= prefix_at)
            .ok_or_else(|| Corrupt::new(0, format!("{len} index entries do not fit the block")))?;
        let index = Self {
            bytes,
            len,
            layout,
            keys_at,
            prefix_at,
            start,
        };
        index.check_arrays(data_end)?;
        Ok(index)
    }

    fn check_arrays(&self, data_end: u64) -> Result<(), Corrupt> {
        let keys = self.prefix_at - self.keys_at;
        let shortest = self.layout.min_key();
        let mut key_start = 0;
        for (at, end) in self.key_ends().iter().enumerate() {
            let end = u32::from_le_bytes(*end) as usize;
            let fits = end
                .checked_sub(key_start)
                .is_some_and(|len| (shortest..=MAX_INDEX_KEY).contains(&len));
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
        let mut block_start = self.start;
        for at in 0..self.len {
            let end = self.block_end(at).unwrap_or(0);
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
    /// internal key (or any user key, in an index of user keys), the keys
    /// strictly ascend, and each fence is its key's (`verify` asks; a
    /// search over keys out of order answers wrongly).
    pub(crate) fn check_keys(&self) -> Result<(), Corrupt> {
        let mut previous: Option<Vec<u8>> = None;
        for at in 0..self.len {
            let key = self.key(at).unwrap_or_default();
            let corrupt = |detail: &str| {
                Corrupt::new(self.keys_at as u64, format!("index key {at}: {detail}"))
            };
            let user_key = if self.layout.user_keys {
                &key[..]
            } else {
                match ParsedKey::parse(&key) {
                    Some(parsed) => parsed.user_key,
                    None => return Err(corrupt("not an internal key")),
                }
            };
            if previous
                .as_deref()
                .is_some_and(|p| self.cmp_keys(p, &key) != Ordering::Less)
            {
                return Err(corrupt("out of order"));
            }
            if self.fence(at) != fence(self.prefix(), user_key) {
                return Err(corrupt("its fence differs"));
            }
            previous = Some(key);
        }
        Ok(())
    }

    /// Whether this index's first key comes after `before`'s last (a
    /// partition and the one before it; `verify` asks).
    pub(crate) fn follows(&self, before: &Self) -> bool {
        let last = before.len.checked_sub(1).and_then(|at| before.key(at));
        match (last, self.key(0)) {
            (Some(last), Some(first)) => self.cmp_keys(&last, &first) == Ordering::Less,
            _ => true,
        }
    }

    /// Bytes of its block.
    pub(crate) fn stored_bytes(&self) -> u64 {
        self.bytes.len() as u64
    }

    /// Orders two whole keys of this index.
    fn cmp_keys(&self, a: &[u8], b: &[u8]) -> Ordering {
        if self.layout.user_keys {
            a.cmp(b)
        } else {
            cmp_internal(a, b)
        }
    }

    /// The entries, as a table builder recorded them; in an index of user
    /// keys, each key is given the trailer of the newest possible version
    /// (what [`Index::encode`] drops again).
    #[cfg(any(test, feature = "fuzzing"))]
    pub(crate) fn entries(&self) -> Vec<IndexEntry> {
        use crate::key::{MAX_SEQNO, ValueKind, encode_internal_key};
        (0..self.len)
            .map(|at| {
                let mut key = self.key(at).unwrap_or_default();
                if self.layout.user_keys {
                    let user_key = std::mem::take(&mut key);
                    encode_internal_key(&mut key, &user_key, MAX_SEQNO, ValueKind::MAX);
                }
                IndexEntry {
                    last_key: key.into(),
                    handle: self.handle(at).unwrap_or_default(),
                }
            })
            .collect()
    }

    /// Number of data blocks.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Whether the keys are user keys (no user key spans two blocks).
    pub(crate) fn holds_user_keys(&self) -> bool {
        self.layout.user_keys
    }

    fn fences(&self) -> &[[u8; 8]] {
        self.bytes
            .get(..8 * self.len)
            .unwrap_or_default()
            .as_chunks()
            .0
    }

    fn key_ends_at(&self) -> usize {
        (8 + self.layout.end_width()) * self.len
    }

    fn key_ends(&self) -> &[[u8; 4]] {
        let at = self.key_ends_at();
        self.bytes
            .get(at..at + 4 * self.len)
            .unwrap_or_default()
            .as_chunks()
            .0
    }

    /// Where the first block starts.
    pub(crate) fn start(&self) -> u64 {
        self.start
    }

    /// Where the last block ends (the start if there is none).
    pub(crate) fn end(&self) -> u64 {
        let last = self.len.checked_sub(1);
        last.and_then(|at| self.block_end(at)).unwrap_or(self.start)
    }

    fn prefix(&self) -> &[u8] {
        let tail_at = self.bytes.len().saturating_sub(self.layout.tail_len());
        self.bytes.get(self.prefix_at..tail_at).unwrap_or_default()
    }

    /// What the stored keys read past: the prefix in format 6, nothing in
    /// format 5.
    fn stripped(&self) -> &[u8] {
        if self.layout.compact {
            self.prefix()
        } else {
            &[]
        }
    }

    fn fence(&self, at: usize) -> u64 {
        self.fences().get(at).map_or(0, |f| u64::from_le_bytes(*f))
    }

    fn key_end(&self, at: usize) -> Option<usize> {
        Some(u32::from_le_bytes(*self.key_ends().get(at)?) as usize)
    }

    fn block_end(&self, at: usize) -> Option<u64> {
        if at >= self.len {
            return None;
        }
        let width = self.layout.end_width();
        let from = 8 * self.len + width * at;
        let bytes = self.bytes.get(from..from + width)?;
        Some(match bytes.as_chunks::<4>().0 {
            [narrow] => u64::from(u32::from_le_bytes(*narrow)),
            _ => u64::from_le_bytes(bytes.try_into().ok()?),
        })
    }

    /// The stored bytes of block `at`'s key: past the prefix in format 6.
    fn stored_key(&self, at: usize) -> Option<&[u8]> {
        let start = match at.checked_sub(1) {
            Some(before) => self.key_end(before)?,
            None => 0,
        };
        let end = self.key_end(at)?;
        self.bytes.get(self.keys_at + start..self.keys_at + end)
    }

    /// The last key of block `at`: an internal key, or a user key in an
    /// index of user keys.
    pub(crate) fn key(&self, at: usize) -> Option<Vec<u8>> {
        Some([self.stripped(), self.stored_key(at)?].concat())
    }

    /// The user key of block `at`'s last entry.
    pub(crate) fn user_key(&self, at: usize) -> Option<Vec<u8>> {
        let mut key = self.key(at)?;
        if !self.layout.user_keys {
            key.truncate(key.len().saturating_sub(TRAILER_LEN));
        }
        Some(key)
    }

    /// Whether block `at`'s key is the one of `internal_key`: the same
    /// internal key, or the same user key in an index of user keys.
    pub(crate) fn key_is(&self, at: usize, internal_key: &[u8]) -> bool {
        at < self.len && self.cmp_at(at, internal_key) == Ordering::Equal
    }

    /// Orders block `at`'s key against the internal key `key`: in an index
    /// of user keys, by user key only (block `at` holds every version of
    /// its last user key).
    fn cmp_at(&self, at: usize, key: &[u8]) -> Ordering {
        let stored = self.stored_key(at).unwrap_or_default();
        if self.layout.user_keys {
            cmp_split(self.stripped(), stored, user_key_of(key))
        } else {
            cmp_internal_split(self.stripped(), stored, key)
        }
    }

    /// Where block `at` is.
    pub(crate) fn handle(&self, at: usize) -> Option<BlockHandle> {
        let end = self.block_end(at)?;
        let offset = match at.checked_sub(1) {
            Some(before) => self.block_end(before)?,
            None => self.start,
        };
        // Loading checked that each block ends past its trailer.
        let size = end.checked_sub(offset)?.checked_sub(BLOCK_TRAILER as u64)?;
        Some(BlockHandle { offset, size })
    }

    /// Index of the first block whose last key is `>= key` (an internal
    /// key; in an index of user keys, whose last user key is `>=` its
    /// user key): the only block that can hold the first entry `>= key`.
    /// `len()` if none.
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
            if self.cmp_at(mid, key) == Ordering::Less {
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

/// The index block of `entries` as format 5 stores it.
#[cfg(test)]
pub(crate) fn encode_format_5(entries: &[IndexEntry]) -> Vec<u8> {
    let laid_out = lay_out(
        Form::Format5,
        entries.len(),
        |at| entries.get(at).map_or(&[][..], |e| &e.last_key),
        |at| entries.get(at).and_then(|e| e.handle.end()).unwrap_or(0),
    );
    laid_out.unwrap_or_default()
}

/// Which in-place layout [`lay_out`] writes.
#[derive(Clone, Copy)]
enum Form {
    #[cfg(test)]
    Format5,
    Compact {
        user_keys: bool,
        /// Where the first block starts, if not at 0 (format 8).
        start: Option<u64>,
    },
}

/// The in-place layout (`form`) of `len` internal keys (`key(at)`,
/// ascending) and block ends (`block_end(at)`); `None` if the keys pass
/// 4 GiB.
fn lay_out<'a>(
    form: Form,
    len: usize,
    key: impl Fn(usize) -> &'a [u8],
    block_end: impl Fn(usize) -> u64,
) -> Option<Vec<u8>> {
    let user = |at| user_key_of(key(at));
    let fences = Fences::new(user(0), user(len.saturating_sub(1)), (0..len).map(user));
    let prefix = fences.prefix();
    let layout = match form {
        #[cfg(test)]
        Form::Format5 => Layout::FORMAT_5,
        Form::Compact { user_keys, start } => Layout {
            compact: true,
            narrow_ends: len == 0 || u32::try_from(block_end(len - 1)).is_ok(),
            user_keys,
            starts_at: start.is_some(),
        },
    };
    let start = match form {
        Form::Compact { start, .. } => start,
        #[cfg(test)]
        Form::Format5 => None,
    };
    // Every key lies between the first and the last, so begins with their
    // prefix.
    let stored = |at| {
        let whole = if layout.user_keys { user(at) } else { key(at) };
        let skip = if layout.compact { prefix.len() } else { 0 };
        whole.get(skip..).unwrap_or_default()
    };
    let keys: usize = (0..len).map(|at| stored(at).len()).sum();
    let mut out = Vec::with_capacity(
        len * layout.fixed_per_block() + keys + prefix.len() + layout.tail_len(),
    );
    for &f in fences.values() {
        out.extend_from_slice(&f.to_le_bytes());
    }
    for at in 0..len {
        let end = block_end(at).to_le_bytes();
        out.extend_from_slice(end.get(..layout.end_width()).unwrap_or_default());
    }
    let mut end = 0u32;
    for at in 0..len {
        end = end.checked_add(u32::try_from(stored(at).len()).ok()?)?;
        out.extend_from_slice(&end.to_le_bytes());
    }
    for at in 0..len {
        out.extend_from_slice(stored(at));
    }
    out.extend_from_slice(prefix);
    if let Some(start) = start {
        out.extend_from_slice(&start.to_le_bytes());
    }
    if layout.compact {
        out.extend_from_slice(&layout.flags().to_le_bytes());
    }
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
    use std::collections::BTreeSet;

    /// The last format version whose index is walked.
    const OLDER: u32 = IN_PLACE_VERSION - 1;

    /// Every way an index is stored: the walked format, format 5, and
    /// format 6 with internal or user keys.
    #[derive(Clone, Copy, Debug)]
    enum Stored {
        Older,
        Format5,
        Compact { user_keys: bool },
    }

    const EVERY: [Stored; 4] = [
        Stored::Older,
        Stored::Format5,
        Stored::Compact { user_keys: false },
        Stored::Compact { user_keys: true },
    ];

    impl Stored {
        fn version(self) -> u32 {
            match self {
                Stored::Older => OLDER,
                Stored::Format5 => IN_PLACE_VERSION,
                Stored::Compact { .. } => COMPACT_VERSION,
            }
        }

        fn bytes(self, entries: &[IndexEntry]) -> Vec<u8> {
            match self {
                Stored::Older => encode_older(entries),
                Stored::Format5 => encode_format_5(entries),
                Stored::Compact { user_keys } => Index::encode(entries, user_keys).unwrap(),
            }
        }

        fn user_keys(self) -> bool {
            matches!(self, Stored::Compact { user_keys: true })
        }

        fn decode(self, entries: &[IndexEntry], data_end: u64) -> Result<Index, Corrupt> {
            Index::decode(self.bytes(entries), data_end, self.version())
        }
    }

    fn ikey(user: &[u8], seq: u64) -> Box<[u8]> {
        let mut out = Vec::new();
        encode_internal_key(&mut out, user, seq, ValueKind::Value);
        out.into()
    }

    /// Blocks of `size` stored bytes, back to back, ending at `keys`.
    fn entries_at(keys: impl IntoIterator<Item = Box<[u8]>>, size: u64) -> Vec<IndexEntry> {
        let mut offset = 0;
        keys.into_iter()
            .map(|last_key| {
                let handle = BlockHandle { offset, size };
                offset = handle.end().unwrap();
                IndexEntry { last_key, handle }
            })
            .collect()
    }

    fn sample() -> Vec<IndexEntry> {
        entries_at(["b", "d", "f"].map(|k| ikey(k.as_bytes(), 3)), 100)
    }

    #[test]
    fn round_trip_and_find() {
        let entries = sample();
        for stored in EVERY {
            let index = stored.decode(&entries, 1000).unwrap();
            assert_eq!(index.len(), entries.len());
            assert_eq!(index.holds_user_keys(), stored.user_keys());
            for (at, entry) in entries.iter().enumerate() {
                let user_key = user_key_of(&entry.last_key);
                let key = if stored.user_keys() {
                    user_key
                } else {
                    &entry.last_key
                };
                assert_eq!(index.key(at).as_deref(), Some(key));
                assert_eq!(index.user_key(at).as_deref(), Some(user_key));
                assert!(index.key_is(at, &entry.last_key));
                assert_eq!(index.handle(at), Some(entry.handle));
            }
            assert_eq!(index.key(3), None);
            assert!(!index.key_is(3, &ikey(b"f", 3)));
            assert_eq!(index.find(&ikey(b"a", 1)), 0);
            assert_eq!(index.find(&ikey(b"b", 3)), 0);
            // Every version of "b" is in block 0 when the index holds user
            // keys; otherwise the index cannot tell.
            let older_b = usize::from(!stored.user_keys());
            assert_eq!(index.find(&ikey(b"b", 2)), older_b);
            assert_eq!(index.find(&ikey(b"e", 9)), 2);
            assert_eq!(index.find(&ikey(b"g", 9)), 3);
            assert!(index.check_keys().is_ok());
            let empty = stored.decode(&[], 0).unwrap();
            assert_eq!((empty.len(), empty.find(&ikey(b"a", 1))), (0, 0));
        }
    }

    /// Blocks of 10 and 20 stored bytes ending at "k1" and "k3" (seq 1,
    /// values): `docs/format.md`'s examples.
    fn golden_entries() -> Vec<IndexEntry> {
        let mut entries = entries_at([ikey(b"k1", 1), ikey(b"k3", 1)], 10);
        entries[1].handle.size = 20;
        entries
    }

    fn hex(bytes: &[u8]) -> String {
        bytes.iter().map(|b| format!("{b:02x}")).collect()
    }

    #[test]
    fn golden_layout_format_5() {
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
        assert_eq!(hex(&encode_format_5(&golden_entries())), expected);
    }

    #[test]
    fn golden_layout_format_6() {
        let fixed = [
            "0000000000000031", // fence of "k1" past "k"
            "0000000000000033", // fence of "k3"
            "0f000000",         // block 0 ends at 15, in 4 bytes
            "28000000",         // block 1 ends at 40
        ]
        .concat();
        let user_keys = [
            &fixed, "01000000", // key 0 ends at 1
            "02000000", // key 1 ends at 2
            "31",       // "1": "k1" past the prefix
            "33",       // "3"
            "6b",       // the prefix "k"
            "03000000", // flags: narrow block ends, user keys
            "01000000", // the prefix's length
            "02000000", // two blocks
        ]
        .concat();
        let internal_keys = [
            &fixed,
            "09000000",
            "12000000",
            "310101000000000000", // "1", seq 1, a value
            "330101000000000000",
            "6b",
            "01000000", // flags: narrow block ends
            "01000000",
            "02000000",
        ]
        .concat();
        let entries = golden_entries();
        assert_eq!(hex(&Index::encode(&entries, true).unwrap()), user_keys);
        assert_eq!(hex(&Index::encode(&entries, false).unwrap()), internal_keys);
    }

    /// A block of a two-level index (format 8): the golden blocks moved
    /// to start at 100, which the tail says before the flags.
    #[test]
    fn golden_layout_format_8_with_a_start() {
        let mut entries = golden_entries();
        for entry in &mut entries {
            entry.handle.offset += 100;
        }
        let expected = [
            "0000000000000031", // fences as in format 6
            "0000000000000033",
            "73000000", // block 0 ends at 115
            "8c000000", // block 1 ends at 140
            "01000000",
            "02000000",
            "31",
            "33",
            "6b",
            "6400000000000000", // the first block starts at 100
            "07000000",         // flags: narrow block ends, user keys, a start
            "01000000",
            "02000000",
        ]
        .concat();
        let bytes = Index::encode_from(&entries, true, Some(100)).unwrap();
        assert_eq!(hex(&bytes), expected);
        let index = Index::decode(bytes.clone(), 140, TWO_LEVEL_VERSION).unwrap();
        assert_eq!((index.start(), index.end()), (100, 140));
        assert_eq!(index.handle(0), Some(entries[0].handle));
        assert_eq!(index.entries()[1].handle, entries[1].handle);
        // Format 6 and 7 know no start, and a start past the first block's
        // end leaves it shorter than its trailer.
        let refused = Index::decode(bytes.clone(), 140, TWO_LEVEL_VERSION - 1);
        assert!(refused.unwrap_err().detail.contains("flags"));
        let late = Index::encode_from(&entries, true, Some(112)).unwrap();
        assert!(Index::decode(late, 140, TWO_LEVEL_VERSION).is_err());
    }

    #[test]
    fn a_partition_follows_the_one_before_only_with_greater_keys() {
        let keys = |names: &[&str]| {
            names
                .iter()
                .map(|k| ikey(k.as_bytes(), 1))
                .collect::<Vec<_>>()
        };
        let decode = |entries: &[IndexEntry]| {
            let bytes = Index::encode(entries, false).unwrap();
            Index::decode(bytes, u64::MAX, TWO_LEVEL_VERSION).unwrap()
        };
        let first = decode(&entries_at(keys(&["a", "c"]), 10));
        let after = decode(&entries_at(keys(&["d", "e"]), 10));
        let overlapping = decode(&entries_at(keys(&["c", "e"]), 10));
        assert!(after.follows(&first));
        assert!(!overlapping.follows(&first));
        assert!(!first.follows(&after));
        assert!(first.follows(&Index::default()));
    }

    #[test]
    fn block_ends_past_4_gib_take_8_bytes() {
        let entries = entries_at([ikey(b"a", 1), ikey(b"b", 1)], 3 << 30);
        let data_end = entries[1].handle.end().unwrap();
        let bytes = Index::encode(&entries, true).unwrap();
        let index = Index::decode(bytes, data_end, COMPACT_VERSION).unwrap();
        assert_eq!(index.handle(1), Some(entries[1].handle));
        assert_eq!(index.find(&ikey(b"b", 9)), 1);
        let narrow = entries_at([ikey(b"a", 1), ikey(b"b", 1)], 100);
        let narrow = Index::encode(&narrow, true).unwrap();
        assert_eq!(
            Index::encode(&entries, true).unwrap().len(),
            narrow.len() + 2 * 4
        );
    }

    /// Entries over `keys`, one per user key if `user_keys` (an index of
    /// user keys is written only where no user key spans blocks).
    fn entries_of(keys: &BTreeSet<(Vec<u8>, u64)>, user_keys: bool) -> Vec<IndexEntry> {
        let mut sorted: Vec<Box<[u8]>> = keys.iter().map(|(k, s)| ikey(k, *s)).collect();
        sorted.sort_by(|a, b| cmp_internal(a, b));
        if user_keys {
            sorted.dedup_by(|a, b| user_key_of(a) == user_key_of(b));
        }
        entries_at(sorted, 10)
    }

    proptest::proptest! {
        #[test]
        fn find_agrees_with_a_plain_binary_search(
            prefix in proptest::collection::vec(0..3u8, 0..12),
            keys in proptest::collection::btree_set(
                (proptest::collection::vec(0..3u8, 0..14), 0..4u64), 0..40),
            targets in proptest::collection::vec(
                (proptest::collection::vec(0..3u8, 0..20), 0..5u64), 1..20),
            stored in proptest::sample::select(EVERY.to_vec()),
        ) {
            let keys = keys
                .into_iter()
                .map(|(k, s)| ([&prefix[..], &k].concat(), s))
                .collect();
            let entries = entries_of(&keys, stored.user_keys());
            let index = stored.decode(&entries, u64::MAX).unwrap();
            proptest::prop_assert!(index.check_keys().is_ok());
            proptest::prop_assert_eq!(index.entries().len(), entries.len());
            for (target, seq) in targets {
                for target in [target.clone(), [&prefix[..], &target].concat()] {
                    let key = ikey(&target, seq);
                    let below = |e: &&IndexEntry| if stored.user_keys() {
                        user_key_of(&e.last_key) < &target[..]
                    } else {
                        cmp_internal(&e.last_key, &key) == Ordering::Less
                    };
                    let expected = entries.iter().take_while(below).count();
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
        for stored in &EVERY[1..] {
            let version = stored.version();
            let layout = match stored {
                Stored::Compact { user_keys } => {
                    Layout::compact(NARROW_ENDS + u32::from(*user_keys) * USER_KEYS, false).unwrap()
                }
                _ => Layout::FORMAT_5,
            };
            let bytes = stored.bytes(&sample());
            let decode = |bytes: Vec<u8>, end| Index::decode(bytes, end, version);
            assert!(decode(bytes.clone(), 1000).is_ok());
            assert!(
                decode(bytes.clone(), 200).is_err(),
                "blocks past the data end"
            );
            for cut in 0..bytes.len() {
                assert!(decode(bytes[..cut].to_vec(), 1000).is_err(), "cut at {cut}");
            }
            let tail = bytes.len() - layout.tail_len();
            let mut trailing = bytes[..tail].to_vec();
            trailing.push(0);
            trailing.extend_from_slice(&bytes[tail..]);
            assert!(
                decode(trailing, 1000).is_err(),
                "a byte between keys and prefix"
            );
            // Fences out of order (the first raised above the second).
            let mut fences = bytes.clone();
            fences[7] = 0xff;
            assert!(decode(fences, 1000).is_err());
            // A block shorter than its trailer (the second ending where the
            // first does).
            let (ends, width) = (3 * 8, layout.end_width());
            let mut short = bytes.clone();
            short.copy_within(ends..ends + width, ends + width);
            assert!(decode(short, 1000).is_err());
            // A key shorter than its layout allows (the first ending past
            // the second).
            let key_ends = ends + 3 * width;
            let mut key = bytes.clone();
            key[key_ends] = 0xff;
            assert!(decode(key, 1000).is_err());
        }
    }

    #[test]
    fn internal_keys_shorter_than_a_trailer_are_refused_at_load() {
        // Key 0 of the internal-key golden block cut to 7 bytes: the next
        // key takes the two bytes, so the key ends stay consistent.
        let mut bytes = Index::encode(&golden_entries(), false).unwrap();
        let key_ends = 2 * 8 + 2 * 4;
        bytes[key_ends] = 7;
        let decoded = Index::decode(bytes, 1000, COMPACT_VERSION);
        assert!(decoded.is_err());
    }

    #[test]
    fn unknown_layout_flags_are_refused() {
        let mut bytes = Index::encode(&sample(), true).unwrap();
        let flags = bytes.len() - COMPACT_TAIL_LEN;
        bytes[flags] |= 4;
        let decoded = Index::decode(bytes, 1000, COMPACT_VERSION);
        assert!(format!("{:?}", decoded.unwrap_err()).contains("layout flags"));
    }

    #[test]
    fn keys_out_of_order_are_found_by_the_full_check() {
        // The first two keys swapped where they lie (all are 9 bytes long).
        let mut swapped = encode_format_5(&sample());
        let keys = 3 * Layout::FORMAT_5.fixed_per_block();
        let first: Vec<u8> = swapped[keys..keys + 9].to_vec();
        swapped.copy_within(keys + 9..keys + 18, keys);
        swapped[keys + 9..keys + 18].copy_from_slice(&first);
        let index = Index::decode(swapped, 1000, IN_PLACE_VERSION).unwrap();
        assert!(index.check_keys().is_err());
        for stored in &EVERY[1..] {
            let mut bytes = stored.bytes(&sample());
            bytes[0] ^= 1;
            let index = Index::decode(bytes, 1000, stored.version()).unwrap();
            assert!(index.check_keys().is_err(), "a fence that is not its key's");
        }
        // User keys out of order: "b" and "d" swapped (one byte each).
        let mut bytes = Index::encode(&sample(), true).unwrap();
        let keys = 3 * (8 + 4 + 4);
        bytes.swap(keys, keys + 1);
        bytes.swap(0, 8);
        bytes.swap(1, 9);
        let index = Index::decode(bytes, 1000, COMPACT_VERSION);
        assert!(index.is_err() || index.is_ok_and(|i| i.check_keys().is_err()));
    }
}
