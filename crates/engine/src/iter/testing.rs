//! Strategies and sources shared by the iterator tests.

use std::collections::BTreeSet;
use std::ops::Bound;

use proptest::prelude::*;

use super::{BoxedSource, Source};
use crate::error::{Error, Result};
use crate::key::{Entry, InternalKey, SeqNo, ValueKind};

/// Short user keys over a tiny alphabet, so that keys repeat, share
/// prefixes, and include the empty key and `0x00`/`0xff` bytes.
pub(crate) fn user_key() -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec(
        prop::sample::select(vec![0x00, 0x01, b'a', b'b', 0xfe, 0xff]),
        0..4,
    )
}

/// Any bound over [`user_key`]s.
pub(crate) fn bound() -> impl Strategy<Value = Bound<Vec<u8>>> {
    prop_oneof![
        1 => Just(Bound::Unbounded),
        2 => user_key().prop_map(Bound::Included),
        2 => user_key().prop_map(Bound::Excluded),
    ]
}

/// An entry whose value names its version, so a wrong version is visible.
pub(crate) fn entry(user_key: &[u8], seq: SeqNo, kind: ValueKind) -> Entry {
    let value = match kind {
        ValueKind::Value => format!("{user_key:?}@{seq}").into_bytes(),
        ValueKind::Delete => Vec::new(),
    };
    Entry {
        key: InternalKey::new(user_key, seq, kind),
        value,
    }
}

/// Up to `max_sources` sorted sources (some possibly empty) holding
/// distinct internal keys with random versions and tombstones.
pub(crate) fn sources(max_sources: usize) -> impl Strategy<Value = Vec<Vec<Entry>>> {
    let version = (user_key(), 0..12 as SeqNo, prop::bool::weighted(0.7));
    (
        1..=max_sources,
        prop::collection::vec((version, any::<prop::sample::Index>()), 0..64),
    )
        .prop_map(|(count, versions)| {
            let mut seen = BTreeSet::new();
            let mut sources = vec![Vec::new(); count];
            for ((key, seq, is_value), which) in versions {
                let kind = if is_value {
                    ValueKind::Value
                } else {
                    ValueKind::Delete
                };
                if seen.insert(InternalKey::new(key.clone(), seq, kind)) {
                    sources[which.index(count)].push(entry(&key, seq, kind));
                }
            }
            for source in &mut sources {
                source.sort_by(|a, b| a.key.cmp(&b.key));
            }
            sources
        })
}

/// A source over a sorted vector of items. With `skips`, it answers
/// [`Source::skip_front_through`] exactly (from the entries it holds) on
/// every call whose bit in `skips` is set, taking the calls in turn.
pub(crate) struct VecSource {
    items: std::collections::VecDeque<Result<Entry>>,
    skips: u64,
}

impl Iterator for VecSource {
    type Item = Result<Entry>;

    fn next(&mut self) -> Option<Self::Item> {
        self.items.pop_front()
    }
}

impl DoubleEndedIterator for VecSource {
    fn next_back(&mut self) -> Option<Self::Item> {
        self.items.pop_back()
    }
}

impl Source for VecSource {
    fn skip_front_through(&mut self, key: &[u8]) -> bool {
        let answer = self.skips & 1 == 1;
        self.skips = self.skips.rotate_right(1);
        answer
            && match self.items.front() {
                Some(Ok(entry)) => entry.key.user_key.as_slice() > key,
                Some(Err(_)) => false,
                None => true,
            }
    }
}

impl VecSource {
    /// Over `entries`, skipping on the calls `skips` sets.
    pub(crate) fn new(entries: Vec<Entry>, skips: u64) -> Self {
        Self {
            items: entries.into_iter().map(Ok).collect(),
            skips,
        }
    }
}

/// A source over a sorted vector.
pub(crate) fn source(entries: Vec<Entry>) -> BoxedSource<'static> {
    skipping(entries, 0)
}

/// A source over a sorted vector that skips as [`VecSource`] says.
pub(crate) fn skipping(entries: Vec<Entry>, skips: u64) -> BoxedSource<'static> {
    Box::new(VecSource::new(entries, skips))
}

/// Boxes every vector as a source.
pub(crate) fn boxed(sources: &[Vec<Entry>]) -> Vec<BoxedSource<'static>> {
    sources.iter().cloned().map(source).collect()
}

/// The error the failing sources yield.
pub(crate) fn boom() -> Error {
    Error::corruption("000007.sst", 42, "boom")
}

/// A source over `entries` that yields an `Err` in place of the entry at
/// `fail_at` (an index into `entries`; none if out of range).
pub(crate) fn failing(entries: Vec<Entry>, fail_at: usize) -> BoxedSource<'static> {
    let items = entries
        .into_iter()
        .enumerate()
        .map(|(i, e)| if i == fail_at { Err(boom()) } else { Ok(e) })
        .collect();
    Box::new(VecSource { items, skips: 0 })
}

/// Whether `result` is the error of [`boom`].
pub(crate) fn is_boom<T>(result: &Result<T>) -> bool {
    matches!(result, Err(Error::Corruption { offset: 42, detail, .. }) if detail == "boom")
}
