//! One source of a merge and the entries read from it but not yet yielded,
//! and how the slots compete as seen from either end.

use super::merge::BoxedSource;
use super::tournament::Contest;
use crate::error::Result;
use crate::key::{Entry, InternalKey, ValueKind};

/// An end of the iteration.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum End {
    /// Ascending internal keys.
    Front = 0,
    /// Descending internal keys.
    Back = 1,
}

impl End {
    /// Both ends, front first.
    pub(super) const BOTH: [Self; 2] = [Self::Front, Self::Back];

    /// The opposite end.
    pub(super) fn other(self) -> Self {
        match self {
            Self::Front => Self::Back,
            Self::Back => Self::Front,
        }
    }
}

/// A source and the entries read from it but not yet yielded: at most one
/// per end. Every entry lives in exactly one place (the source, or one head).
pub(super) struct Slot<'a> {
    source: BoxedSource<'a>,
    /// `heads[end]`: the next entry of this source from `end`.
    heads: [Option<Entry>; 2],
    /// The source returned `None` or `Err` from an end: it is never read
    /// again, and what is left of it is in `heads`.
    drained: bool,
    /// The front head is a floor, not an entry: the source showed that
    /// its front holds no user key at or below the floor's. It sorts after
    /// every version of that key and before every greater key.
    floored: bool,
}

impl<'a> Slot<'a> {
    /// A slot that has read nothing yet.
    pub(super) fn new(source: BoxedSource<'a>) -> Self {
        Self {
            source,
            heads: [None, None],
            drained: false,
            floored: false,
        }
    }

    /// The user key of the front's floor, if it holds one.
    pub(super) fn floor(&self) -> Option<&[u8]> {
        let head = self.heads[End::Front as usize].as_ref();
        head.filter(|_| self.floored)
            .map(|h| h.key.user_key.as_slice())
    }

    /// Fills the front head with a floor at `through` if the source shows
    /// it holds nothing up to that key, or else with its next entry.
    pub(super) fn fill_front(&mut self, through: Option<&[u8]>) -> Result<()> {
        if self.drained || self.heads[End::Front as usize].is_some() {
            return Ok(());
        }
        match through {
            Some(key) if self.source.skip_front_through(key) => {
                // The kind and sequence number are never compared.
                let key = InternalKey::new(key, 0, ValueKind::Delete);
                self.heads[End::Front as usize] = Some(Entry {
                    key,
                    value: Vec::new(),
                });
                self.floored = true;
                Ok(())
            }
            _ => self.fill(End::Front),
        }
    }

    /// Replaces the front's floor by a higher one, at `through`, if the
    /// source shows it holds nothing up to that key, or else by its next
    /// entry.
    pub(super) fn lift_floor(&mut self, through: Option<&[u8]>) -> Result<()> {
        if std::mem::take(&mut self.floored) {
            self.heads[End::Front as usize] = None;
        }
        self.fill_front(through)
    }

    /// The entry of this slot that `end` yields next: its own head or, once
    /// the source is drained, the other end's head (the ends have met).
    pub(super) fn candidate(&self, end: End) -> Option<&Entry> {
        let own = self.heads[end as usize].as_ref();
        if self.drained {
            own.or(self.heads[end.other() as usize].as_ref())
        } else {
            own
        }
    }

    /// Removes and returns [`Slot::candidate`].
    pub(super) fn take(&mut self, end: End) -> Option<Entry> {
        let own = self.heads[end as usize].take();
        if self.drained {
            own.or_else(|| self.heads[end.other() as usize].take())
        } else {
            own
        }
    }

    /// Reads this end's head from the source if it is empty.
    pub(super) fn fill(&mut self, end: End) -> Result<()> {
        if self.drained || self.heads[end as usize].is_some() {
            return Ok(());
        }
        let read = match end {
            End::Front => self.source.next(),
            End::Back => self.source.next_back(),
        };
        match read {
            Some(Ok(entry)) => self.heads[end as usize] = Some(entry),
            None => self.drained = true,
            Some(Err(error)) => {
                self.drained = true;
                return Err(error);
            }
        }
        Ok(())
    }
}

/// The slots as seen from one end: the front wants the smallest internal
/// key, the back the largest. Ties go to the lower slot (the newer source).
pub(super) struct View<'s, 'a> {
    /// Every slot of the merge.
    pub(super) slots: &'s [Slot<'a>],
    /// The end whose candidates compete.
    pub(super) end: End,
}

impl Contest for View<'_, '_> {
    fn present(&self, slot: usize) -> bool {
        self.slots[slot].candidate(self.end).is_some()
    }

    fn beats(&self, a_slot: usize, b_slot: usize) -> bool {
        let (Some(a), Some(b)) = (
            self.slots[a_slot].candidate(self.end),
            self.slots[b_slot].candidate(self.end),
        ) else {
            return false;
        };
        match self.end {
            // A floor sorts after every version of its key.
            End::Front => match a.key.user_key.cmp(&b.key.user_key) {
                std::cmp::Ordering::Equal => {
                    match (self.slots[a_slot].floored, self.slots[b_slot].floored) {
                        (false, false) => a.key < b.key,
                        (a_floor, _) => !a_floor,
                    }
                }
                order => order.is_lt(),
            },
            End::Back => a.key > b.key,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::iter::testing::{entry, failing, is_boom, source};
    use crate::key::ValueKind;

    #[test]
    fn once_drained_an_end_takes_what_the_other_end_read() {
        let only = entry(b"k", 1, ValueKind::Value);
        let mut slot = Slot::new(source(vec![only.clone()]));
        slot.fill(End::Back).unwrap();
        assert_eq!(slot.candidate(End::Front), None);
        slot.fill(End::Front).unwrap();
        assert_eq!(slot.candidate(End::Front), Some(&only));
        assert_eq!(slot.candidate(End::Back), Some(&only));
        assert_eq!(slot.take(End::Front), Some(only));
        assert_eq!(slot.candidate(End::Back), None);
    }

    #[test]
    fn an_error_drains_the_source() {
        let entries = vec![
            entry(b"a", 1, ValueKind::Value),
            entry(b"b", 1, ValueKind::Value),
        ];
        let mut slot = Slot::new(failing(entries, 0));
        assert!(is_boom(&slot.fill(End::Front)));
        // Never read again: b, still in the source, is not met.
        slot.fill(End::Back).unwrap();
        assert_eq!(slot.candidate(End::Back), None);
    }
}
