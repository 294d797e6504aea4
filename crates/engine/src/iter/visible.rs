//! [`VisibleIter`]: what a reader at one snapshot sees of a merge.

use std::iter::FusedIterator;

use super::bounds::{UserBounds, after_end, before_start};
use super::merge::MergeIter;
use crate::error::Result;
use crate::key::{Entry, SeqNo, ValueKind};

/// The user keys within bounds and their values as of snapshot `seq`:
/// for each user key, the newest version with a sequence number at or below
/// the snapshot, unless that version is a tombstone. Ascending from the
/// front, descending from the back; the ends may be interleaved and never
/// yield a key twice.
///
/// The bounds are applied here even though the sources were built with the
/// same ones, so a source may over-approximate them (whole tables, whole
/// blocks). An `Err` from the merge is yielded once; then both ends return
/// `None`.
pub(crate) struct VisibleIter<'a> {
    inner: MergeIter<'a>,
    snapshot: SeqNo,
    bounds: UserBounds,
    /// The user key the front decided last: it met the newest visible
    /// version first and yielded or dropped it. Older versions of that key,
    /// from either end, are skipped.
    front_key: Option<Vec<u8>>,
    /// The newest visible version the back has read of the key it is
    /// deciding. The back meets versions oldest first, so a key is decided
    /// only once an entry of a smaller key, or the end, shows that no newer
    /// version follows.
    back_candidate: Option<Entry>,
    /// The front has passed the upper bound.
    front_done: bool,
    /// The back has passed the lower bound.
    back_done: bool,
    /// An error has been yielded: the iterator is over.
    failed: bool,
}

/// What the back does with a user key it has decided.
enum Decision {
    Yield(Vec<u8>, Vec<u8>),
    Skip,
    /// Below the lower bound: so is everything after it.
    Stop,
}

impl<'a> VisibleIter<'a> {
    /// The view of `inner` at snapshot `seq` within `bounds` (user keys).
    pub(crate) fn new(inner: MergeIter<'a>, seq: SeqNo, bounds: UserBounds) -> Self {
        Self {
            inner,
            snapshot: seq,
            bounds,
            front_key: None,
            back_candidate: None,
            front_done: false,
            back_done: false,
            failed: false,
        }
    }

    /// Records `key` as the front's decided key, reusing the buffer.
    fn remember_front(&mut self, key: &[u8]) {
        match &mut self.front_key {
            Some(buffer) => {
                buffer.clear();
                buffer.extend_from_slice(key);
            }
            None => self.front_key = Some(key.to_vec()),
        }
    }

    /// Decides `entry`, the newest visible version of its key that the back
    /// has read: no newer one is left in the merge.
    fn decide_back(&self, entry: Entry) -> Decision {
        let key = &entry.key.user_key;
        // The front met a newer version of this key and decided it already.
        if self.front_key.as_ref() == Some(key) || after_end(&self.bounds.1, key) {
            return Decision::Skip;
        }
        if before_start(&self.bounds.0, key) {
            return Decision::Stop;
        }
        match entry.key.kind {
            ValueKind::Value => Decision::Yield(entry.key.user_key, entry.value),
            ValueKind::Delete => Decision::Skip,
        }
    }
}

impl Iterator for VisibleIter<'_> {
    type Item = Result<(Vec<u8>, Vec<u8>)>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed || self.front_done {
            return None;
        }
        loop {
            let entry = match self.inner.next() {
                Some(Ok(entry)) => entry,
                Some(Err(error)) => {
                    self.failed = true;
                    return Some(Err(error));
                }
                // The ends have met; the back may hold the last key, still
                // undecided. It is the front's to yield now, so that one end
                // never ends while the other still has something.
                None => {
                    let last = self.back_candidate.take()?;
                    return match self.decide_back(last) {
                        Decision::Yield(key, value) => Some(Ok((key, value))),
                        Decision::Skip | Decision::Stop => None,
                    };
                }
            };
            let key = &entry.key.user_key;
            if entry.key.seq > self.snapshot || self.front_key.as_ref() == Some(key) {
                continue;
            }
            // The first visible version met is the newest: it decides.
            self.remember_front(&entry.key.user_key);
            if before_start(&self.bounds.0, &entry.key.user_key) {
                continue;
            }
            if after_end(&self.bounds.1, &entry.key.user_key) {
                self.front_done = true;
                return None;
            }
            if entry.key.kind == ValueKind::Value {
                return Some(Ok((entry.key.user_key, entry.value)));
            }
        }
    }
}

impl DoubleEndedIterator for VisibleIter<'_> {
    fn next_back(&mut self) -> Option<Self::Item> {
        if self.failed || self.back_done {
            return None;
        }
        loop {
            let decided = match self.inner.next_back() {
                Some(Ok(entry)) => {
                    if entry.key.seq > self.snapshot {
                        continue;
                    }
                    let same_key = self
                        .back_candidate
                        .as_ref()
                        .is_some_and(|c| c.key.user_key == entry.key.user_key);
                    // A newer visible version of the same key replaces the
                    // candidate; an older key's version decides it.
                    let previous = self.back_candidate.replace(entry);
                    if same_key {
                        continue;
                    }
                    match previous {
                        Some(previous) => previous,
                        None => continue,
                    }
                }
                Some(Err(error)) => {
                    self.failed = true;
                    return Some(Err(error));
                }
                None => self.back_candidate.take()?,
            };
            match self.decide_back(decided) {
                Decision::Yield(key, value) => return Some(Ok((key, value))),
                Decision::Skip => {}
                Decision::Stop => {
                    self.back_done = true;
                    return None;
                }
            }
        }
    }
}

// Each end stays `None` once it returned `None`: the merge is fused, and
// `front_done`, `back_done` and `failed` only ever become true.
impl FusedIterator for VisibleIter<'_> {}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::ops::Bound;

    use proptest::prelude::*;

    use super::*;
    use crate::iter::bounds::prefix_bounds;
    use crate::iter::testing::{bound, boxed, entry, failing, is_boom, source, sources};
    use crate::key::SeqNo;

    type Pair = (Vec<u8>, Vec<u8>);

    const ALL: UserBounds = (Bound::Unbounded, Bound::Unbounded);

    fn visible(sources: &[Vec<Entry>], seq: SeqNo, bounds: UserBounds) -> VisibleIter<'static> {
        VisibleIter::new(MergeIter::new(boxed(sources)), seq, bounds)
    }

    /// Replays every version at or below `seq` in write order (sequence
    /// number, then kind as the internal order ranks it) into a map.
    fn model(sources: &[Vec<Entry>], seq: SeqNo, bounds: &UserBounds) -> Vec<Pair> {
        let mut versions: Vec<&Entry> = sources
            .iter()
            .flatten()
            .filter(|e| e.key.seq <= seq)
            .collect();
        versions.sort_by_key(|e| (e.key.seq, e.key.kind));
        let mut map = BTreeMap::new();
        for version in versions {
            match version.key.kind {
                ValueKind::Value => map.insert(version.key.user_key.clone(), version.value.clone()),
                ValueKind::Delete => map.remove(&version.key.user_key),
            };
        }
        map.into_iter()
            .filter(|(key, _)| !before_start(&bounds.0, key) && !after_end(&bounds.1, key))
            .collect()
    }

    fn pairs(items: impl Iterator<Item = Result<Pair>>) -> Vec<Pair> {
        items.map(Result::unwrap).collect()
    }

    fn pair(key: &[u8], seq: SeqNo) -> Pair {
        let e = entry(key, seq, ValueKind::Value);
        (e.key.user_key, e.value)
    }

    #[test]
    fn the_stack_can_move_to_another_thread() {
        let sources = [vec![entry(b"a", 1, ValueKind::Value)]];
        let iter = visible(&sources, 9, ALL);
        let yielded = std::thread::spawn(move || pairs(iter)).join().unwrap();
        assert_eq!(yielded, vec![pair(b"a", 1)]);
    }

    #[test]
    fn no_sources_yield_nothing() {
        assert!(
            VisibleIter::new(MergeIter::new(Vec::new()), 9, ALL)
                .next()
                .is_none()
        );
        assert!(
            VisibleIter::new(MergeIter::new(Vec::new()), 9, ALL)
                .next_back()
                .is_none()
        );
    }

    #[test]
    fn reverse_looks_ahead_to_the_newest_visible_version() {
        let versions = vec![
            entry(b"k", 9, ValueKind::Value),
            entry(b"k", 5, ValueKind::Value),
            entry(b"k", 3, ValueKind::Value),
            entry(b"k", 1, ValueKind::Delete),
        ];
        let sources = [versions, vec![entry(b"j", 2, ValueKind::Value)]];
        let expected = vec![pair(b"k", 5), pair(b"j", 2)];
        assert_eq!(pairs(visible(&sources, 7, ALL).rev()), expected);
        assert_eq!(pairs(visible(&sources, 2, ALL).rev()), vec![pair(b"j", 2)]);
        assert_eq!(pairs(visible(&sources, 0, ALL)), Vec::<Pair>::new());
    }

    #[test]
    fn tombstones_hide_older_versions_from_both_ends() {
        let sources = [
            vec![
                entry(b"a", 4, ValueKind::Delete),
                entry(b"b", 3, ValueKind::Delete),
            ],
            vec![
                entry(b"a", 2, ValueKind::Value),
                entry(b"b", 1, ValueKind::Value),
            ],
        ];
        assert!(visible(&sources, 9, ALL).next().is_none());
        assert!(visible(&sources, 9, ALL).next_back().is_none());
        assert_eq!(
            pairs(visible(&sources, 2, ALL)),
            vec![pair(b"a", 2), pair(b"b", 1)]
        );
    }

    #[test]
    fn empty_and_ff_keys_and_prefix_bounds() {
        let sources = [vec![
            entry(b"", 1, ValueKind::Value),
            entry(b"\xff", 2, ValueKind::Value),
            entry(b"\xff\xff", 3, ValueKind::Value),
            entry(b"\xff\xff\x00", 4, ValueKind::Value),
        ]];
        let all = vec![
            pair(b"", 1),
            pair(b"\xff", 2),
            pair(b"\xff\xff", 3),
            pair(b"\xff\xff\x00", 4),
        ];
        assert_eq!(pairs(visible(&sources, 9, ALL)), all);
        assert_eq!(
            pairs(visible(&sources, 9, prefix_bounds(b"\xff\xff"))),
            all[2..]
        );
        assert_eq!(
            pairs(visible(&sources, 9, prefix_bounds(b"\xff\xff")).rev()),
            vec![all[3].clone(), all[2].clone()]
        );
        let up_to_empty = (Bound::Unbounded, Bound::Included(Vec::new()));
        assert_eq!(
            pairs(visible(&sources, 9, up_to_empty.clone()).rev()),
            all[..1]
        );
        let after_empty = (Bound::Excluded(Vec::new()), Bound::Unbounded);
        assert_eq!(
            pairs(visible(&sources, 9, after_empty).rev()),
            vec![all[3].clone(), all[2].clone(), all[1].clone()]
        );
    }

    #[test]
    fn the_front_decides_a_key_the_back_holds_undecided() {
        let sources = [vec![
            entry(b"a", 2, ValueKind::Value),
            entry(b"a", 1, ValueKind::Value),
            entry(b"b", 1, ValueKind::Value),
        ]];
        // The back yields b after reading a@1, which it holds undecided.
        // At snapshot 2 the front meets the newer a@2 and yields it; the
        // held a@1 is then dropped.
        let mut iter = visible(&sources, 2, ALL);
        assert_eq!(iter.next_back().unwrap().unwrap(), pair(b"b", 1));
        assert_eq!(iter.next().unwrap().unwrap(), pair(b"a", 2));
        assert!(iter.next().is_none());
        assert!(iter.next_back().is_none());
        // At snapshot 1, a@2 is invisible: the front yields the held a@1,
        // and the back, whose candidate is gone, ends too.
        let mut iter = visible(&sources, 1, ALL);
        assert_eq!(iter.next_back().unwrap().unwrap(), pair(b"b", 1));
        assert_eq!(iter.next().unwrap().unwrap(), pair(b"a", 1));
        assert!(iter.next_back().is_none());
        assert!(iter.next().is_none());
    }

    #[test]
    fn a_merge_error_is_yielded_once_then_both_ends_end() {
        let entries = vec![
            entry(b"a", 1, ValueKind::Value),
            entry(b"b", 1, ValueKind::Value),
            entry(b"c", 1, ValueKind::Value),
        ];
        let mut iter = VisibleIter::new(MergeIter::new(vec![failing(entries.clone(), 1)]), 9, ALL);
        assert_eq!(iter.next().unwrap().unwrap(), pair(b"a", 1));
        assert!(is_boom(&iter.next().unwrap()));
        assert!(iter.next().is_none());
        assert!(iter.next_back().is_none());
        // From the back, c is decided only once b shows no newer c
        // follows; the error in place of a comes after.
        let mut iter = VisibleIter::new(
            MergeIter::new(vec![source(Vec::new()), failing(entries, 0)]),
            9,
            ALL,
        );
        assert_eq!(iter.next_back().unwrap().unwrap(), pair(b"c", 1));
        assert!(is_boom(&iter.next_back().unwrap()));
        assert!(iter.next_back().is_none());
        assert!(iter.next().is_none());
    }

    proptest! {
        #[test]
        fn each_end_alone_matches_the_model(
            sources in sources(5),
            seq in 0..14 as SeqNo,
            start in bound(),
            end in bound(),
        ) {
            let bounds = (start, end);
            let expected = model(&sources, seq, &bounds);
            prop_assert_eq!(&pairs(visible(&sources, seq, bounds.clone())), &expected);
            let mut backward = pairs(visible(&sources, seq, bounds).rev());
            backward.reverse();
            prop_assert_eq!(backward, expected);
        }

        #[test]
        fn interleaved_ends_match_the_model(
            sources in sources(5),
            seq in 0..14 as SeqNo,
            start in bound(),
            end in bound(),
            ends in prop::collection::vec(any::<bool>(), 0..64),
        ) {
            let bounds = (start, end);
            let expected = model(&sources, seq, &bounds);
            let mut iter = visible(&sources, seq, bounds);
            let (mut front, mut back) = (Vec::new(), Vec::new());
            for from_front in ends.into_iter().chain([true, false].into_iter().cycle()) {
                let item = if from_front { iter.next() } else { iter.next_back() };
                match item {
                    Some(item) if from_front => front.push(item.unwrap()),
                    Some(item) => back.push(item.unwrap()),
                    None => break,
                }
            }
            // Once one end has ended, so has the other.
            prop_assert!(iter.next().is_none() && iter.next_back().is_none());
            front.extend(back.into_iter().rev());
            prop_assert_eq!(front, expected);
        }
    }
}
