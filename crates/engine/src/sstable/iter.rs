//! [`TableIter`]: an owning, double-ended iterator over a table's entries
//! within user-key bounds, loading data blocks lazily from either end.

use std::collections::VecDeque;
use std::ops::Bound;
use std::sync::Arc;

use super::table::Table;
use crate::error::{Error, Result};
use crate::key::{Entry, InternalKey, MAX_SEQNO, ParsedKey, ValueKind, encode_internal_key};

/// Iterator over a table's entries, in internal-key order from the front
/// and reverse from the back; the ends may be interleaved and never yield
/// an entry twice (the source contract of `crate::iter`). It owns an `Arc`
/// of the table and decodes one block per end at a time. After an `Err` it
/// ends.
#[derive(Debug)]
pub(crate) struct TableIter {
    table: Arc<Table>,
    lower: Bound<Vec<u8>>,
    upper: Bound<Vec<u8>>,
    /// Blocks `next_front..next_back` have been loaded by neither end.
    next_front: usize,
    next_back: usize,
    /// Entries of the front end's block not yet yielded (by either end).
    front: VecDeque<Entry>,
    /// Entries of the back end's block not yet yielded.
    back: VecDeque<Entry>,
    failed: bool,
}

impl TableIter {
    /// Entries of `table` whose user keys lie within the bounds.
    pub(crate) fn new(table: Arc<Table>, lower: Bound<Vec<u8>>, upper: Bound<Vec<u8>>) -> Self {
        let index = table.index();
        let blocks = index.entries.len();
        let search = |user_key: &[u8], seq, kind| {
            let mut key = Vec::with_capacity(user_key.len() + 8);
            encode_internal_key(&mut key, user_key, seq, kind);
            index.find(&key)
        };
        // The first block that can hold a version of the lower key, and the
        // block holding the last possible version of the upper key.
        let next_front = match &lower {
            Bound::Included(key) | Bound::Excluded(key) => search(key, MAX_SEQNO, ValueKind::MAX),
            Bound::Unbounded => 0,
        };
        let next_back = match &upper {
            Bound::Included(key) | Bound::Excluded(key) => {
                (search(key, 0, ValueKind::Delete) + 1).min(blocks)
            }
            Bound::Unbounded => blocks,
        };
        Self {
            table,
            lower,
            upper,
            next_front,
            next_back: next_back.max(next_front),
            front: VecDeque::new(),
            back: VecDeque::new(),
            failed: false,
        }
    }

    /// Whether `user_key` lies within the bounds.
    fn within(&self, user_key: &[u8]) -> bool {
        let above_lower = match &self.lower {
            Bound::Included(k) => user_key >= k.as_slice(),
            Bound::Excluded(k) => user_key > k.as_slice(),
            Bound::Unbounded => true,
        };
        let below_upper = match &self.upper {
            Bound::Included(k) => user_key <= k.as_slice(),
            Bound::Excluded(k) => user_key < k.as_slice(),
            Bound::Unbounded => true,
        };
        above_lower && below_upper
    }

    /// The in-bounds entries of data block `at`, in order.
    fn load(&self, at: usize) -> Result<VecDeque<Entry>> {
        let block = self.table.data_block(at)?;
        let offset = self.table.block_offset(at);
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

    /// Records an error: it is yielded once, then the iterator ends.
    fn fail(&mut self, error: Error) -> Option<Result<Entry>> {
        self.failed = true;
        self.front.clear();
        self.back.clear();
        Some(Err(error))
    }
}

impl Iterator for TableIter {
    type Item = Result<Entry>;

    fn next(&mut self) -> Option<Self::Item> {
        while !self.failed {
            if let Some(entry) = self.front.pop_front() {
                return Some(Ok(entry));
            }
            if self.next_front >= self.next_back {
                // Every block is loaded: what is left is the back's block.
                return self.back.pop_front().map(Ok);
            }
            match self.load(self.next_front) {
                Ok(entries) => {
                    self.front = entries;
                    self.next_front += 1;
                }
                Err(e) => return self.fail(e),
            }
        }
        None
    }
}

impl DoubleEndedIterator for TableIter {
    fn next_back(&mut self) -> Option<Self::Item> {
        while !self.failed {
            if let Some(entry) = self.back.pop_back() {
                return Some(Ok(entry));
            }
            if self.next_front >= self.next_back {
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
