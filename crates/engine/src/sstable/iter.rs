//! [`TableIter`]: an owning, double-ended iterator over a table's entries
//! within user-key bounds, loading data blocks lazily from either end.

use std::collections::VecDeque;
use std::ops::{Bound, Range};
use std::sync::Arc;

use super::block::Block;
use super::index::Index;
use super::table::Table;
use super::table_index::IndexPart;
use crate::error::{Error, Result};
use crate::key::{Entry, InternalKey, MAX_SEQNO, ParsedKey, ValueKind, encode_internal_key};

/// Lower and upper bound on user keys, shared by the iterators of a scan.
pub(crate) type SharedBounds = Arc<(Bound<Vec<u8>>, Bound<Vec<u8>>)>;

/// Iterator over a table's entries, in internal-key order from the front
/// and reverse from the back; the ends may be interleaved and never yield
/// an entry twice (the source contract of `crate::iter`). It owns an `Arc`
/// of the table and holds one block per end at a time. After an `Err` it
/// ends.
///
/// The front decodes its block one entry at a time, starting with a seek
/// to the lower bound, so a seek that reads one entry decodes a few; the
/// back, which cannot walk prefix-compressed entries backwards, decodes its
/// whole block.
#[derive(Debug)]
pub(crate) struct TableIter {
    table: Arc<Table>,
    /// The parts of the table's index the front and the back are in, held
    /// while they are: a scan of a table whose index is not resident reads
    /// each part once, not once per block.
    front_part: Option<IndexPart<Arc<Index>>>,
    back_part: Option<IndexPart<Arc<Index>>>,
    bounds: SharedBounds,
    /// Blocks `next_front..next_back` have been loaded by neither end.
    next_front: usize,
    next_back: usize,
    /// The front's block before the front first loads one: it seeks there.
    first_front: usize,
    /// The front end's block, decoded as the front advances.
    cursor: Option<Cursor>,
    /// Entries of the front end's block not yet yielded, once the back has
    /// reached that block (`cursor` is then `None`).
    front: VecDeque<Entry>,
    /// Entries of the back end's block not yet yielded.
    back: VecDeque<Entry>,
    /// An error met before the first item (the index could not be read).
    error: Option<Error>,
    failed: bool,
}

/// A position inside a data block.
#[derive(Debug)]
struct Cursor {
    block: Arc<Block>,
    /// The block's offset in the table (errors name it).
    offset: u64,
    /// Offset of the entry after the one whose key is in `key`.
    next: usize,
    /// The key of the entry decoded last (prefix compression needs it).
    key: Vec<u8>,
    /// The value range of the entry in `key` if it has not been consumed.
    ready: Option<Range<usize>>,
}

impl Cursor {
    /// The next entry: its key is left in `self.key`.
    fn advance(&mut self) -> std::result::Result<Option<Range<usize>>, crate::error::Corrupt> {
        if let Some(value) = self.ready.take() {
            return Ok(Some(value));
        }
        Ok(self
            .block
            .entry_at(self.next, &mut self.key)?
            .map(|(next, value)| {
                self.next = next;
                value
            }))
    }
}

impl TableIter {
    /// Entries of `table` whose user keys lie within the bounds. An index
    /// that cannot be read is the iterator's one item.
    pub(crate) fn new(table: Arc<Table>, bounds: SharedBounds) -> Self {
        let blocks = table.data_blocks();
        let search = |user_key: &[u8], seq, kind| {
            let mut key = Vec::with_capacity(user_key.len() + 8);
            encode_internal_key(&mut key, user_key, seq, kind);
            let found = table.find_block(crate::read_tier::Files, &key)?;
            Ok::<_, Error>(found.map(|(at, part)| (at, part.held())))
        };
        // The first block that can hold a version of the lower key, and the
        // block holding the last possible version of the upper key.
        let front = match &bounds.0 {
            Bound::Included(key) | Bound::Excluded(key) => search(key, MAX_SEQNO, ValueKind::MAX),
            Bound::Unbounded => Ok(None),
        };
        let back = match &bounds.1 {
            Bound::Included(key) | Bound::Excluded(key) => search(key, 0, ValueKind::Delete),
            Bound::Unbounded => Ok(None),
        };
        let (front, back) = match (front, back) {
            (Ok(front), Ok(back)) => (front, back),
            (Err(e), _) | (_, Err(e)) => {
                let mut iter = Self::over(Arc::clone(&table), bounds, 0..0);
                iter.error = Some(e);
                return iter;
            }
        };
        let next_front = match (&bounds.0, &front) {
            (Bound::Unbounded, _) => 0,
            (_, found) => found.as_ref().map_or(blocks, |(at, _)| *at),
        };
        let next_back = match (&bounds.1, &back) {
            (Bound::Unbounded, _) => blocks,
            (_, found) => found.as_ref().map_or(blocks, |(at, _)| at + 1),
        };
        let mut iter = Self::over(table, bounds, next_front..next_back.max(next_front));
        iter.front_part = front.map(|(_, part)| part);
        iter.back_part = back.map(|(_, part)| part);
        iter
    }

    /// The iterator over data blocks `blocks` of `table`.
    fn over(table: Arc<Table>, bounds: SharedBounds, blocks: Range<usize>) -> Self {
        Self {
            table,
            front_part: None,
            back_part: None,
            bounds,
            next_front: blocks.start,
            next_back: blocks.end,
            first_front: blocks.start,
            cursor: None,
            front: VecDeque::new(),
            back: VecDeque::new(),
            error: None,
            failed: false,
        }
    }

    /// Whether `user_key` lies within the bounds.
    fn within(&self, user_key: &[u8]) -> bool {
        let above_lower = match &self.bounds.0 {
            Bound::Included(k) => user_key >= k.as_slice(),
            Bound::Excluded(k) => user_key > k.as_slice(),
            Bound::Unbounded => true,
        };
        let below_upper = match &self.bounds.1 {
            Bound::Included(k) => user_key <= k.as_slice(),
            Bound::Excluded(k) => user_key < k.as_slice(),
            Bound::Unbounded => true,
        };
        above_lower && below_upper
    }

    /// Data block `at`, through the cache, and its offset: found in the
    /// part of the index the back (`back`) or the front holds, which is
    /// read first if it is not the one holding `at`.
    fn block(&mut self, at: usize, back: bool) -> Result<(Arc<Block>, u64)> {
        let held = if back {
            &mut self.back_part
        } else {
            &mut self.front_part
        };
        let part = match held.take() {
            Some(part) if part.holds(at) => part,
            _ => self.table.index_part(at)?.held(),
        };
        let block = self.table.data_block_at(&part, crate::read_tier::Files, at);
        let offset = part.handle(at).map_or(0, |h| h.offset);
        *held = Some(part);
        Ok((block?, offset))
    }

    /// The in-bounds entries of data block `at`, in order.
    fn load(&mut self, at: usize) -> Result<VecDeque<Entry>> {
        let (block, offset) = self.block(at, true)?;
        let path = self.table.path();
        let mut out = VecDeque::new();
        for item in block.entries() {
            let (key, value) = item.map_err(|c| c.in_file(path, offset))?;
            let parsed = ParsedKey::parse(&key).ok_or_else(|| {
                Error::corruption(path, offset, "stored key is not an internal key")
            })?;
            if self.within(parsed.user_key) {
                out.push_back(Entry {
                    key: InternalKey::new(parsed.user_key, parsed.seq, parsed.kind),
                    value: block.value(value).to_vec(),
                });
            }
        }
        Ok(out)
    }

    /// Opens data block `at` for the front; the first one is entered at
    /// the lower bound.
    fn open_front(&mut self, at: usize) -> Result<Cursor> {
        let (block, offset) = self.block(at, false)?;
        let mut cursor = Cursor {
            block,
            offset,
            next: 0,
            key: Vec::new(),
            ready: None,
        };
        if at == self.first_front
            && let Bound::Included(lower) | Bound::Excluded(lower) = &self.bounds.0
        {
            let mut target = Vec::with_capacity(lower.len() + 8);
            encode_internal_key(&mut target, lower, MAX_SEQNO, ValueKind::MAX);
            let found = cursor
                .block
                .seek(&target, &mut cursor.key)
                .map_err(|c| c.in_file(self.table.path(), cursor.offset))?;
            match found {
                // A value is the last part of its entry: the next one
                // starts where it ends.
                Some(value) => {
                    cursor.next = value.end;
                    cursor.ready = Some(value);
                }
                None => cursor.next = usize::MAX,
            }
        }
        Ok(cursor)
    }

    /// The next in-bounds entry of the front's block, `None` at its end.
    fn cursor_next(&self, cursor: &mut Cursor) -> Result<Option<Entry>> {
        let offset = cursor.offset;
        while let Some(value) = cursor
            .advance()
            .map_err(|c| c.in_file(self.table.path(), offset))?
        {
            let parsed = ParsedKey::parse(&cursor.key).ok_or_else(|| {
                Error::corruption(
                    self.table.path(),
                    offset,
                    "stored key is not an internal key",
                )
            })?;
            if self.within(parsed.user_key) {
                return Ok(Some(Entry {
                    key: InternalKey::new(parsed.user_key, parsed.seq, parsed.kind),
                    value: cursor.block.value(value).to_vec(),
                }));
            }
        }
        Ok(None)
    }

    /// The next entry from the front's open block, if any.
    fn next_from_cursor(&mut self) -> Option<Result<Entry>> {
        let mut cursor = self.cursor.take()?;
        match self.cursor_next(&mut cursor) {
            Ok(Some(entry)) => {
                self.cursor = Some(cursor);
                Some(Ok(entry))
            }
            Ok(None) => None,
            Err(e) => self.fail(e),
        }
    }

    /// Decodes the rest of the front's block into `front`, for the back
    /// end to take from.
    fn settle_front(&mut self) -> Result<()> {
        if let Some(mut cursor) = self.cursor.take() {
            while let Some(entry) = self.cursor_next(&mut cursor)? {
                self.front.push_back(entry);
            }
        }
        Ok(())
    }

    /// Records an error: it is yielded once, then the iterator ends.
    fn fail(&mut self, error: Error) -> Option<Result<Entry>> {
        self.failed = true;
        self.cursor = None;
        self.front.clear();
        self.back.clear();
        Some(Err(error))
    }
}

impl Iterator for TableIter {
    type Item = Result<Entry>;

    fn next(&mut self) -> Option<Self::Item> {
        if let Some(e) = self.error.take() {
            return self.fail(e);
        }
        while !self.failed {
            if let Some(item) = self.next_from_cursor() {
                return Some(item);
            }
            if let Some(entry) = self.front.pop_front() {
                return Some(Ok(entry));
            }
            if self.next_front >= self.next_back {
                // Every block is loaded: what is left is the back's block.
                return self.back.pop_front().map(Ok);
            }
            match self.open_front(self.next_front) {
                Ok(cursor) => {
                    self.cursor = Some(cursor);
                    self.next_front += 1;
                }
                Err(e) => return self.fail(e),
            }
        }
        None
    }
}

// Compaction reads every entry of a table: nothing to skip.
impl crate::iter::Source for TableIter {}

impl DoubleEndedIterator for TableIter {
    fn next_back(&mut self) -> Option<Self::Item> {
        if let Some(e) = self.error.take() {
            return self.fail(e);
        }
        while !self.failed {
            if let Some(entry) = self.back.pop_back() {
                return Some(Ok(entry));
            }
            if self.next_front >= self.next_back {
                if let Err(e) = self.settle_front() {
                    return self.fail(e);
                }
                return self.front.pop_back().map(Ok);
            }
            match self.load(self.next_back - 1) {
                Ok(entries) => {
                    self.back = entries;
                    self.next_back -= 1;
                }
                Err(e) => return self.fail(e),
            }
        }
        None
    }
}
