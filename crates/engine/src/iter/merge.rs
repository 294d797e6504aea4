//! [`MergeIter`]: the k-way merge of sorted sources, from either end.

use std::iter::FusedIterator;

use super::slot::{End, Slot, View};
use super::tournament::WinnerTree;
use crate::error::{Error, Result};
use crate::key::Entry;

/// One sorted source of entries (see the [module docs](super) for the
/// contract): a memtable range, a table or run iterator, a test vector.
pub(crate) type BoxedSource<'a> = Box<dyn Source + 'a>;

/// A sorted source of entries that may be able to show, without reading
/// one, that its front holds nothing up to a key: a run asks its range
/// filters. The merge asks before it reads a source's front, with the
/// smallest key the other sources hold, and reads the source only once the
/// iteration has passed that key (a lazy seek).
pub(crate) trait Source: DoubleEndedIterator<Item = Result<Entry>> + Send {
    /// Whether the front's next entry, if any, is known to have a user key
    /// above `key`; asked only while the back end has read nothing. The
    /// default, `false`, has the source read instead.
    fn skip_front_through(&mut self, key: &[u8]) -> bool {
        let _ = key;
        false
    }
}

/// Every entry of every source in [`InternalKey`](crate::key::InternalKey)
/// order from the front, and in reverse from the back; the two ends may be
/// interleaved and together yield each entry exactly once.
///
/// Sources are given newest first. Two sources never hold the same internal
/// key in practice (a sequence number is written once); if they do anyway,
/// the entry of the newer (earlier) source is yielded and the others are
/// dropped, from either end.
///
/// Each end reads lazily: nothing is read from a source until that end is
/// first used, and then one entry ahead per source. The front reads less
/// while the back is unused: sources are started oldest first (the largest
/// run, which most likely holds the next key, is read first), and a source
/// that shows it holds nothing up to the smallest key read so far
/// ([`Source::skip_front_through`]) competes with a floor in place of an
/// entry until the iteration has passed it. An `Err` from a source
/// is yielded once, by whichever end is called next, and then both ends
/// return `None`.
pub(crate) struct MergeIter<'a> {
    slots: Vec<Slot<'a>>,
    /// `trees[end]`: the tournament of that end, built on its first call.
    trees: [Option<WinnerTree>; 2],
    /// A source's error, waiting to be yielded.
    failed: Option<Error>,
    /// The error has been yielded: the iterator is over.
    finished: bool,
}

impl<'a> MergeIter<'a> {
    /// Merges `sources`, newest first.
    pub(crate) fn new(sources: Vec<BoxedSource<'a>>) -> Self {
        let slots = sources.into_iter().map(Slot::new).collect();
        Self {
            slots,
            trees: [None, None],
            failed: None,
            finished: false,
        }
    }

    /// Yields the next entry from `end`.
    fn step(&mut self, end: End) -> Option<Result<Entry>> {
        if self.trees[end as usize].is_none() && self.failed.is_none() && !self.finished {
            self.start(end);
        }
        if end == End::Front {
            self.settle_front();
        }
        if let Some(error) = self.failed.take() {
            self.finished = true;
            return Some(Err(error));
        }
        if self.finished {
            return None;
        }
        let slot = self.winner(end)?;
        let entry = self.slots[slot].take(end)?;
        self.refill(slot);
        // `entry` was the extreme of all that remains, so any copy of it in
        // an older source is now this end's winner: drop those.
        while let Some(slot) = self.winner(end)
            && self.slots[slot].floor().is_none()
            && self.slots[slot]
                .candidate(end)
                .is_some_and(|copy| copy.key == entry.key)
        {
            self.slots[slot].take(end);
            self.refill(slot);
        }
        Some(Ok(entry))
    }

    /// Reads every slot's head for `end` and builds its tournament.
    ///
    /// A source drained here changes no candidate of the other end: while
    /// that end's tree exists, each undrained slot has its head for it.
    fn start(&mut self, end: End) {
        if end == End::Back {
            self.read_floors();
        }
        let lazy = end == End::Front && self.trees[End::Back as usize].is_none();
        // The smallest user key read so far, offered as the lazy bound.
        let mut least: Option<Vec<u8>> = None;
        for slot in self.slots.iter_mut().rev() {
            let filled = if lazy {
                slot.fill_front(least.as_deref())
            } else {
                slot.fill(end)
            };
            if let Err(error) = filled {
                self.failed = Some(error);
                return;
            }
            if lazy
                && let Some(head) = slot.candidate(End::Front)
                && least.as_ref().is_none_or(|l| head.key.user_key < *l)
            {
                least = Some(head.key.user_key.clone());
            }
        }
        let view = View {
            slots: &self.slots,
            end,
        };
        self.trees[end as usize] = Some(WinnerTree::build(self.slots.len(), &view));
    }

    /// After `slot` lost an entry: reads its head again for each started
    /// end, then re-plays its matches in both trees (taking the last entry
    /// of a drained source changes the other end's candidate too).
    fn refill(&mut self, slot: usize) {
        for end in End::BOTH {
            if self.trees[end as usize].is_some()
                && self.failed.is_none()
                && let Err(error) = self.slots[slot].fill(end)
            {
                self.failed = Some(error);
            }
        }
        self.replay(slot);
    }

    /// Until the front's winner is an entry: a floor that wins is moved up
    /// to the smallest key of the other slots if its source shows it holds
    /// nothing up to that, or replaced by the source's next entry.
    fn settle_front(&mut self) {
        while self.failed.is_none()
            && let Some(slot) = self.winner(End::Front)
            && let Some(floor) = self.slots[slot].floor()
        {
            // Floors only move up (two floors at one key read one source).
            let next = self
                .least_front_key_except(slot)
                .filter(|next| next.as_slice() > floor);
            if let Err(error) = self.slots[slot].lift_floor(next.as_deref()) {
                self.failed = Some(error);
            }
            self.replay(slot);
        }
    }

    /// Replaces every floor by its source's entry (before the back starts:
    /// a slot's two heads must be entries once both ends read it).
    fn read_floors(&mut self) {
        for slot in 0..self.slots.len() {
            if self.slots[slot].floor().is_some() {
                if let Err(error) = self.slots[slot].lift_floor(None) {
                    self.failed = Some(error);
                }
                self.replay(slot);
            }
        }
    }

    /// The smallest user key among the front candidates of every slot but
    /// `except`.
    fn least_front_key_except(&self, except: usize) -> Option<Vec<u8>> {
        let others = self.slots.iter().enumerate().filter(|&(i, _)| i != except);
        let keys = others.filter_map(|(_, slot)| slot.candidate(End::Front));
        keys.map(|entry| &entry.key.user_key).min().cloned()
    }

    /// Re-plays `slot`'s matches in each started tree.
    fn replay(&mut self, slot: usize) {
        for end in End::BOTH {
            if let Some(tree) = &mut self.trees[end as usize] {
                let view = View {
                    slots: &self.slots,
                    end,
                };
                tree.update(slot, &view);
            }
        }
    }

    /// The slot `end` takes from next.
    fn winner(&self, end: End) -> Option<usize> {
        self.trees[end as usize].as_ref()?.winner()
    }
}

impl Iterator for MergeIter<'_> {
    type Item = Result<Entry>;

    fn next(&mut self) -> Option<Self::Item> {
        self.step(End::Front)
    }
}

impl DoubleEndedIterator for MergeIter<'_> {
    fn next_back(&mut self) -> Option<Self::Item> {
        self.step(End::Back)
    }
}

// Once both ends have met, every slot is drained and empty, and after an
// error `finished` holds: `None` stays `None`.
impl FusedIterator for MergeIter<'_> {}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::iter::testing::{
        VecSource, boom, boxed, entry, failing, is_boom, skipping, source, sources,
    };
    use crate::key::ValueKind;

    fn union(sources: &[Vec<Entry>]) -> Vec<Entry> {
        let mut all: Vec<Entry> = sources.concat();
        all.sort_by(|a, b| a.key.cmp(&b.key));
        all
    }

    /// Drives `merge` with `ends` (`true` = front), then alternately until
    /// both ends are done; returns what each end yielded, in yield order.
    fn drive(merge: &mut MergeIter<'_>, ends: &[bool]) -> (Vec<Result<Entry>>, Vec<Result<Entry>>) {
        let (mut front, mut back) = (Vec::new(), Vec::new());
        for from_front in ends
            .iter()
            .copied()
            .chain([true, false].into_iter().cycle())
        {
            let item = if from_front {
                merge.next()
            } else {
                merge.next_back()
            };
            match item {
                Some(item) if from_front => front.push(item),
                Some(item) => back.push(item),
                None => {
                    if merge.next().is_none() && merge.next_back().is_none() {
                        break;
                    }
                    panic!("one end ended while the other still yields");
                }
            }
        }
        (front, back)
    }

    fn oks(items: Vec<Result<Entry>>) -> Vec<Entry> {
        items.into_iter().map(|item| item.unwrap()).collect()
    }

    #[test]
    fn no_sources_and_empty_sources_yield_nothing() {
        assert!(MergeIter::new(Vec::new()).next().is_none());
        assert!(MergeIter::new(Vec::new()).next_back().is_none());
        let mut merge = MergeIter::new(boxed(&[Vec::new(), Vec::new()]));
        assert!(merge.next_back().is_none());
        assert!(merge.next().is_none());
    }

    #[test]
    fn a_copy_in_an_older_source_is_dropped_from_either_end() {
        let copy = |value: &[u8]| Entry {
            value: value.to_vec(),
            ..entry(b"k", 3, ValueKind::Value)
        };
        let newest = vec![
            entry(b"a", 1, ValueKind::Value),
            copy(b"new"),
            entry(b"z", 1, ValueKind::Value),
        ];
        let sources = [
            newest.clone(),
            vec![copy(b"old")],
            Vec::new(),
            vec![copy(b"older")],
        ];
        // Every pattern of ends for the first four calls.
        for pattern in 0..16u32 {
            let ends: Vec<bool> = (0..4).map(|bit| pattern >> bit & 1 == 1).collect();
            let (front, back) = drive(&mut MergeIter::new(boxed(&sources)), &ends);
            let mut all = oks(front);
            all.extend(oks(back).into_iter().rev());
            assert_eq!(all, newest, "pattern {pattern:04b}");
        }
    }

    #[test]
    fn a_source_error_is_yielded_once_then_both_ends_end() {
        let entries: Vec<Entry> = [b"a", b"b", b"c"]
            .iter()
            .map(|k| entry(*k, 1, ValueKind::Value))
            .collect();
        let mut merge = MergeIter::new(vec![source(Vec::new()), failing(entries.clone(), 1)]);
        assert_eq!(merge.next().unwrap().unwrap(), entries[0]);
        assert!(is_boom(&merge.next().unwrap()));
        assert!(merge.next().is_none());
        assert!(merge.next_back().is_none());
    }

    #[test]
    fn an_error_while_starting_an_end_is_yielded_by_that_call() {
        let mut merge = MergeIter::new(vec![failing(vec![entry(b"a", 1, ValueKind::Value)], 0)]);
        assert!(is_boom(&merge.next_back().unwrap()));
        assert!(merge.next().is_none());
    }

    #[test]
    fn forward_iteration_never_reads_a_source_from_the_back() {
        struct FrontOnly(std::vec::IntoIter<Entry>);
        impl Iterator for FrontOnly {
            type Item = Result<Entry>;
            fn next(&mut self) -> Option<Self::Item> {
                self.0.next().map(Ok)
            }
        }
        impl DoubleEndedIterator for FrontOnly {
            fn next_back(&mut self) -> Option<Self::Item> {
                Some(Err(boom()))
            }
        }
        impl Source for FrontOnly {}
        let entries = vec![
            entry(b"a", 2, ValueKind::Value),
            entry(b"a", 1, ValueKind::Delete),
        ];
        let merge = MergeIter::new(vec![Box::new(FrontOnly(entries.clone().into_iter()))]);
        assert_eq!(merge.map(Result::unwrap).collect::<Vec<_>>(), entries);
    }

    /// Each vector as a source that skips its front on the calls `masks`
    /// (one per source, cycled) set.
    fn skippers(sources: &[Vec<Entry>], masks: &[u64]) -> Vec<BoxedSource<'static>> {
        let masks = masks.iter().copied().cycle();
        sources
            .iter()
            .cloned()
            .zip(masks)
            .map(|(s, m)| skipping(s, m))
            .collect()
    }

    /// A source that counts the entries read from it.
    struct Counted(VecSource, std::sync::Arc<std::sync::atomic::AtomicUsize>);

    impl Iterator for Counted {
        type Item = Result<Entry>;
        fn next(&mut self) -> Option<Self::Item> {
            self.1.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            self.0.next()
        }
    }

    impl DoubleEndedIterator for Counted {
        fn next_back(&mut self) -> Option<Self::Item> {
            self.1.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            self.0.next_back()
        }
    }

    impl Source for Counted {
        fn skip_front_through(&mut self, key: &[u8]) -> bool {
            self.0.skip_front_through(key)
        }
    }

    #[test]
    fn a_source_that_skips_is_read_only_when_the_front_reaches_its_floor() {
        let newer = vec![
            entry(b"a", 5, ValueKind::Value),
            entry(b"b", 5, ValueKind::Value),
            entry(b"y", 5, ValueKind::Value),
        ];
        let older = vec![entry(b"m", 1, ValueKind::Value)];
        let reads = std::sync::Arc::default();
        let lazy = Counted(
            VecSource::new(older.clone(), !0),
            std::sync::Arc::clone(&reads),
        );
        // The older source is started first, then the newer one is asked.
        let mut merge = MergeIter::new(vec![Box::new(lazy), source(newer.clone())]);
        let read = || reads.load(std::sync::atomic::Ordering::Relaxed);
        assert_eq!(merge.next().unwrap().unwrap(), newer[0]);
        assert_eq!(merge.next().unwrap().unwrap(), newer[1]);
        assert_eq!(read(), 0, "nothing of the lazy source was needed yet");
        // Its floor, lifted past a and b, cannot pass y: m is read.
        assert_eq!(merge.next().unwrap().unwrap(), older[0]);
        assert_eq!(read(), 2, "m, then its end (one ahead)");
        assert_eq!(merge.next().unwrap().unwrap(), newer[2]);
        assert!(merge.next().is_none());
    }

    #[test]
    fn the_back_reads_every_floor_before_it_starts() {
        let newer = vec![entry(b"a", 5, ValueKind::Value)];
        let older = vec![entry(b"m", 1, ValueKind::Value)];
        let mut merge = MergeIter::new(vec![skipping(older.clone(), !0), source(newer.clone())]);
        assert_eq!(merge.next().unwrap().unwrap(), newer[0]);
        assert_eq!(merge.next_back().unwrap().unwrap(), older[0]);
        assert!(merge.next().is_none());
        assert!(merge.next_back().is_none());
    }

    proptest! {
        #[test]
        fn sources_that_skip_change_nothing_from_either_end(
            sources in sources(6),
            masks in prop::collection::vec(any::<u64>(), 1..6),
            ends in prop::collection::vec(any::<bool>(), 0..80),
        ) {
            let forward: Vec<Entry> =
                MergeIter::new(skippers(&sources, &masks)).map(Result::unwrap).collect();
            prop_assert_eq!(&forward, &union(&sources));
            let (front, back) = drive(&mut MergeIter::new(skippers(&sources, &masks)), &ends);
            let mut all = oks(front);
            all.extend(oks(back).into_iter().rev());
            prop_assert_eq!(all, union(&sources));
        }

        #[test]
        fn each_end_alone_yields_the_sorted_union(sources in sources(6)) {
            let expected = union(&sources);
            let forward: Vec<Entry> = MergeIter::new(boxed(&sources)).map(Result::unwrap).collect();
            prop_assert_eq!(&forward, &expected);
            let mut backward: Vec<Entry> = MergeIter::new(boxed(&sources)).rev().map(Result::unwrap).collect();
            backward.reverse();
            prop_assert_eq!(backward, expected);
        }

        #[test]
        fn interleaved_ends_yield_each_entry_once_in_order(
            sources in sources(6),
            ends in prop::collection::vec(any::<bool>(), 0..80),
        ) {
            let (front, back) = drive(&mut MergeIter::new(boxed(&sources)), &ends);
            let (front, back) = (oks(front), oks(back));
            prop_assert!(front.windows(2).all(|w| w[0].key < w[1].key));
            prop_assert!(back.windows(2).all(|w| w[0].key > w[1].key));
            let mut all = front;
            all.extend(back.into_iter().rev());
            prop_assert_eq!(all, union(&sources));
        }

        #[test]
        fn an_error_anywhere_is_yielded_once_and_ends_the_merge(
            sources in sources(4),
            which in any::<prop::sample::Index>(),
            at in any::<prop::sample::Index>(),
            ends in prop::collection::vec(any::<bool>(), 0..80),
        ) {
            let which = which.index(sources.len());
            let fail_at = at.index(sources[which].len() + 1);
            let fails = fail_at < sources[which].len();
            let boxed: Vec<BoxedSource<'static>> = sources
                .iter()
                .enumerate()
                .map(|(i, s)| if i == which { failing(s.clone(), fail_at) } else { source(s.clone()) })
                .collect();
            let (front, back) = drive(&mut MergeIter::new(boxed), &ends);
            let errors = front.iter().chain(&back).filter(|item| is_boom(item)).count();
            prop_assert_eq!(errors, usize::from(fails));
            // Nothing follows the error on its own end (`drive` checked
            // that both ends are done once either returns `None`).
            for side in [&front, &back] {
                if let Some(at) = side.iter().position(is_boom) {
                    prop_assert_eq!(at, side.len() - 1);
                }
            }
            let union = union(&sources);
            let front: Vec<Entry> = front.into_iter().filter_map(Result::ok).collect();
            let back: Vec<Entry> = back.into_iter().filter_map(Result::ok).collect();
            // What was yielded is a gap-free start and end of the union.
            prop_assert_eq!(&front[..], &union[..front.len()]);
            let tail: Vec<Entry> = back.into_iter().rev().collect();
            prop_assert_eq!(&tail[..], &union[union.len() - tail.len()..]);
        }
    }
}
