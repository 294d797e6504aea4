//! A transaction's range scan: its own writes merged over the snapshot's
//! iterator, in either direction.

use std::cmp::Ordering;

use crate::db::DbIter;
use crate::error::Result;

/// An item of the snapshot (or its error).
type Item = Result<(Vec<u8>, Vec<u8>)>;
/// A write of the transaction: its value, or `None` for a removal.
type Own<'a> = (&'a Vec<u8>, &'a Option<Vec<u8>>);

/// A double-ended iterator with one look-ahead slot per end. An item lives
/// in exactly one place (the iterator or a slot), and an end whose
/// iterator is exhausted takes the other end's slot, so the two ends never
/// yield an item twice.
struct Peek<I: DoubleEndedIterator> {
    iter: I,
    front: Option<I::Item>,
    back: Option<I::Item>,
}

impl<I: DoubleEndedIterator> Peek<I> {
    fn new(iter: I) -> Self {
        Self {
            iter,
            front: None,
            back: None,
        }
    }

    fn peek_front(&mut self) -> Option<&I::Item> {
        if self.front.is_none() {
            self.front = self.iter.next().or_else(|| self.back.take());
        }
        self.front.as_ref()
    }

    fn peek_back(&mut self) -> Option<&I::Item> {
        if self.back.is_none() {
            self.back = self.iter.next_back().or_else(|| self.front.take());
        }
        self.back.as_ref()
    }
}

/// Entries of a transaction's range or prefix scan: the snapshot's, with
/// the transaction's own writes over them (a removal hides the key), in
/// key order; `.rev()` for descending. Yields `Err` if a table cannot be
/// read, then ends.
pub struct TxnIter<'a> {
    snapshot: Peek<DbIter>,
    own: Peek<Box<dyn DoubleEndedIterator<Item = Own<'a>> + 'a>>,
    done: bool,
}

impl std::fmt::Debug for TxnIter<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TxnIter").finish_non_exhaustive()
    }
}

/// Which source the next item comes from.
enum Pick {
    Snapshot,
    Own,
    /// Both hold the key: the transaction's write wins.
    Both,
}

impl<'a> TxnIter<'a> {
    pub(super) fn new(
        snapshot: DbIter,
        own: Box<dyn DoubleEndedIterator<Item = Own<'a>> + 'a>,
    ) -> Self {
        Self {
            snapshot: Peek::new(snapshot),
            own: Peek::new(own),
            done: false,
        }
    }

    /// Picks between the two candidates; `forward` says which key wins.
    fn pick(snapshot: Option<&Item>, own: Option<&Own<'_>>, forward: bool) -> Option<Pick> {
        match (snapshot, own) {
            (None, None) => None,
            (Some(_), None) | (Some(Err(_)), _) => Some(Pick::Snapshot),
            (None, Some(_)) => Some(Pick::Own),
            (Some(Ok((key, _))), Some((own_key, _))) => {
                let order = key.as_slice().cmp(own_key.as_slice());
                Some(match (order, forward) {
                    (Ordering::Equal, _) => Pick::Both,
                    (Ordering::Less, true) | (Ordering::Greater, false) => Pick::Snapshot,
                    _ => Pick::Own,
                })
            }
        }
    }

    fn step(&mut self, forward: bool) -> Option<Item> {
        while !self.done {
            let (snapshot, own) = if forward {
                (self.snapshot.peek_front(), self.own.peek_front())
            } else {
                (self.snapshot.peek_back(), self.own.peek_back())
            };
            let Some(pick) = Self::pick(snapshot, own, forward) else {
                self.done = true;
                return None;
            };
            let take_snapshot = |s: &mut Peek<DbIter>| {
                if forward {
                    s.front.take()
                } else {
                    s.back.take()
                }
            };
            let own = match pick {
                Pick::Snapshot => {
                    let item = take_snapshot(&mut self.snapshot);
                    if matches!(item, Some(Err(_))) {
                        self.done = true;
                    }
                    return item;
                }
                Pick::Both => {
                    take_snapshot(&mut self.snapshot);
                    self.take_own(forward)
                }
                Pick::Own => self.take_own(forward),
            };
            if let Some((key, Some(value))) = own {
                return Some(Ok((key.clone(), value.clone())));
            }
            // A removal by the transaction: the key is hidden; go on.
        }
        None
    }

    fn take_own(&mut self, forward: bool) -> Option<Own<'a>> {
        if forward {
            self.own.front.take()
        } else {
            self.own.back.take()
        }
    }
}

impl Iterator for TxnIter<'_> {
    type Item = Result<(Vec<u8>, Vec<u8>)>;

    fn next(&mut self) -> Option<Self::Item> {
        self.step(true)
    }
}

impl DoubleEndedIterator for TxnIter<'_> {
    fn next_back(&mut self) -> Option<Self::Item> {
        self.step(false)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn peek_never_yields_an_item_twice() {
        let mut peek = Peek::new(1..=4);
        assert_eq!(peek.peek_front(), Some(&1));
        assert_eq!(peek.peek_back(), Some(&4));
        assert_eq!(peek.back.take(), Some(4));
        assert_eq!(peek.peek_back(), Some(&3));
        assert_eq!(peek.back.take(), Some(3));
        assert_eq!(peek.peek_back(), Some(&2));
        assert_eq!(peek.back.take(), Some(2));
        // Only the front's slot is left: the back end takes it.
        assert_eq!(peek.peek_back(), Some(&1));
        // ... and the front end takes it back from there.
        assert_eq!(peek.peek_front(), Some(&1));
        assert_eq!(peek.back, None);
        assert_eq!(peek.front.take(), Some(1));
        assert_eq!(peek.peek_front(), None);
        assert_eq!(peek.peek_back(), None);
    }
}
