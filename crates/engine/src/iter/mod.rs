//! The iterator stack of a scan: sorted sources -> [`MergeIter`] (every
//! version, in internal-key order) -> [`VisibleIter`] (the user's view at a
//! snapshot, within user-key bounds). Pure: a source is any double-ended
//! iterator of entries, so memtables, tables and test vectors plug in alike.
//!
//! # The source contract
//!
//! A [`BoxedSource`] yields [`Entry`](crate::key::Entry)s in strictly
//! ascending [`InternalKey`](crate::key::InternalKey) order from the front
//! (user key ascending, sequence number descending) and in the reverse order
//! from the back. Like every `DoubleEndedIterator`, it never yields one entry
//! from both ends: once the ends meet, both return `None`. It yields at most
//! one `Err`, after which the merge stops reading it. A [`Source`] may also
//! offer to skip its front up to a key without reading it.
//!
//! # Keeping sources alive
//!
//! A source borrows whatever it reads for `'a`, and the whole stack carries
//! that lifetime. A caller keeps the data alive in one of two ways:
//!
//! - Owned (`'a = 'static`): each source owns an `Arc` to its memtable or
//!   table (and the `Arc`'d blocks it has decoded) and a cursor into it, so
//!   the stack owns everything it reads and can be returned from `Db::iter`
//!   and outlive the read view it was built from. Memtables and tables
//!   reached this way are not freed until the iterator is dropped.
//! - Scoped: the caller holds the `Arc`s in a local (a pinned version) and
//!   builds sources that borrow them; the stack cannot outlive that scope.
//!
//! Every source is `Send`, so the stacks are too: a scan may move to another
//! thread.

mod bounds;
mod merge;
mod slot;
mod tournament;
mod visible;

#[cfg(test)]
mod testing;

// The read and compaction paths use these; they land in another branch.
#[allow(unused_imports, reason = "used by the db module as it is wired in")]
pub(crate) use {
    bounds::{UserBounds, prefix_bounds},
    merge::{BoxedSource, MergeIter, Source},
    visible::VisibleIter,
};
