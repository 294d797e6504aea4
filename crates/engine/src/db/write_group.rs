//! Group commit: the line writers wait in, and the hand-offs between a
//! group's leader and its members. What a leader writes is in `write.rs`.
//!
//! A writer that finds nobody writing leads at once, without queueing or
//! allocating. One that arrives while a group is being written waits in
//! line; when that group is done, the writer at the front leads the next
//! one and takes the writers behind it into its group. The leader appends
//! every batch of the group to the WAL with one write and at most one
//! fsync, and gives each batch its sequence numbers in line order; then
//! the members insert their own batches into the memtable in parallel,
//! and the leader publishes the group's sequence numbers once every insert
//! is done. (LevelDB's `DBImpl::Write` groups writers the same way;
//! RocksDB's write groups add the parallel memtable inserts.) Every wait
//! spins briefly before it sleeps ([`Wakeup`]): a hand-off usually comes
//! within microseconds.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use crate::batch::WriteBatch;
use crate::error::{Error, Result};
use crate::key::SeqNo;
use crate::memtable::Memtable;

use super::lock;
use super::wakeup::Wakeup;

/// The most bytes of batches one group holds.
const MAX_GROUP_BYTES: usize = 1 << 20;

/// A leader with a batch up to this size takes at most this many bytes of
/// others' batches: a small synced write does not wait for megabytes of
/// other writers' batches to be written.
const SMALL_BATCH_EXTRA_BYTES: usize = 128 << 10;

/// The line of writers.
#[derive(Debug, Default)]
pub(super) struct WriteQueue {
    line: Mutex<Line>,
}

#[derive(Debug, Default)]
struct Line {
    /// A leader is writing a group (the leader is not in `waiting`).
    leading: bool,
    /// Writers waiting for their turn, oldest first.
    waiting: VecDeque<Arc<Slot>>,
}

/// A writer waiting in line.
#[derive(Debug)]
pub(super) struct Slot {
    /// The writer's batch, owned so that a leader on another thread can
    /// log it.
    batch: WriteBatch,
    /// The writer can only lead its own group: a transaction, whose
    /// validation reads what only its own thread holds (its batch is
    /// there too, and `batch` is empty).
    leads_only: bool,
    /// The writer asked for its batch to be synced.
    sync: bool,
    /// Set once, by the thread that decides what the writer does next.
    turn: Mutex<Option<Turn>>,
    /// `turn` is set.
    told: AtomicBool,
    wakeup: Wakeup,
}

#[derive(Debug)]
enum Turn {
    Lead,
    Member(Arc<Group>, SeqNo),
    Done(SeqNo),
    Failed(Error),
}

/// What a writer that waited in line does next.
#[derive(Debug)]
pub(super) enum Role<'a> {
    /// Lead the next group.
    Lead(Leadership<'a>),
    /// Insert its batch from this sequence number on, then wait for the
    /// group to be published ([`Group::insert_and_wait`]).
    Member(Arc<Group>, SeqNo),
    /// The leader wrote and published its batch, from this sequence
    /// number on.
    Done(SeqNo),
    /// The group it was taken into failed.
    Failed(Error),
}

impl Slot {
    /// A writer of `batch` (owned: it may be logged by another thread).
    pub(super) fn member(batch: WriteBatch, sync: bool) -> Arc<Self> {
        Self::new(batch, false, sync)
    }

    /// A writer that can only lead its own group.
    pub(super) fn leader_only(sync: bool) -> Arc<Self> {
        Self::new(WriteBatch::new(), true, sync)
    }

    fn new(batch: WriteBatch, leads_only: bool, sync: bool) -> Arc<Self> {
        Arc::new(Self {
            batch,
            leads_only,
            sync,
            turn: Mutex::new(None),
            told: AtomicBool::new(false),
            wakeup: Wakeup::default(),
        })
    }

    /// The batch of a [`Slot::member`].
    pub(super) fn batch(&self) -> &WriteBatch {
        &self.batch
    }

    /// The writer asked for its batch to be synced.
    pub(super) fn sync(&self) -> bool {
        self.sync
    }

    /// Tells the waiting writer what to do next.
    fn set(&self, turn: Turn) {
        *lock(&self.turn) = Some(turn);
        self.told.store(true, Ordering::Release);
        self.wakeup.signal();
    }

    fn is_waiting(&self) -> bool {
        !self.told.load(Ordering::Acquire)
    }

    /// Waits until [`Slot::set`], and takes what it set.
    fn wait_for_turn(&self) -> Turn {
        self.wakeup.wait_for(|| {
            (!self.is_waiting())
                .then(|| lock(&self.turn).take())
                .flatten()
        })
    }
}

impl WriteQueue {
    /// Leadership at once if nobody is writing: the uncontended write.
    pub(super) fn try_lead(&self) -> Option<Leadership<'_>> {
        let mut line = lock(&self.line);
        if line.leading {
            return None;
        }
        line.leading = true;
        Some(Leadership { queue: self })
    }

    /// Waits in line with `slot` until it is this writer's turn.
    pub(super) fn wait_in_line(&self, slot: &Arc<Slot>) -> Role<'_> {
        {
            let mut line = lock(&self.line);
            if !line.leading {
                line.leading = true;
                return Role::Lead(Leadership { queue: self });
            }
            line.waiting.push_back(Arc::clone(slot));
        }
        match slot.wait_for_turn() {
            Turn::Lead => Role::Lead(Leadership { queue: self }),
            Turn::Member(group, first_seq) => Role::Member(group, first_seq),
            Turn::Done(first_seq) => Role::Done(first_seq),
            Turn::Failed(err) => Role::Failed(err),
        }
    }
}

/// The right to write the next group; dropping it hands the right to the
/// writer at the front of the line. Only one exists at a time.
#[derive(Debug)]
pub(super) struct Leadership<'a> {
    queue: &'a WriteQueue,
}

impl Leadership<'_> {
    /// Takes the writers at the front of the line that fit in a group led
    /// by a batch of `own_bytes`, stopping at one that can only lead.
    pub(super) fn gather(&self, own_bytes: usize) -> Members {
        let limit = if own_bytes <= SMALL_BATCH_EXTRA_BYTES {
            own_bytes + SMALL_BATCH_EXTRA_BYTES
        } else {
            MAX_GROUP_BYTES.max(own_bytes)
        };
        let mut bytes = own_bytes;
        let mut taken = Vec::new();
        let mut line = lock(&self.queue.line);
        while let Some(next) = line.waiting.front() {
            bytes += next.batch.approximate_bytes();
            if next.leads_only || bytes > limit {
                break;
            }
            taken.extend(line.waiting.pop_front());
        }
        Members(taken)
    }
}

impl Drop for Leadership<'_> {
    fn drop(&mut self) {
        let mut line = lock(&self.queue.line);
        match line.waiting.pop_front() {
            Some(next) => next.set(Turn::Lead),
            None => line.leading = false,
        }
    }
}

/// The writers a leader took into its group, in line order. Dropped
/// before each was told its part (a leader that panicked), they fail
/// rather than wait forever.
#[derive(Debug)]
pub(super) struct Members(Vec<Arc<Slot>>);

impl Members {
    /// Each member's batch, in line order.
    pub(super) fn batches(&self) -> impl Iterator<Item = &WriteBatch> {
        self.0.iter().map(|slot| slot.batch())
    }

    /// Whether any member asked for a sync.
    pub(super) fn any_sync(&self) -> bool {
        self.0.iter().any(|slot| slot.sync)
    }

    pub(super) fn len(&self) -> usize {
        self.0.len()
    }

    /// Tells every member that the group failed with `err`.
    pub(super) fn fail(mut self, err: &Error) {
        for slot in std::mem::take(&mut self.0) {
            slot.set(Turn::Failed(err.for_another_caller()));
        }
    }

    /// Tells every member that its batch, inserted by the leader from
    /// `first_seqs[i]` on, is published.
    pub(super) fn done(mut self, first_seqs: &[SeqNo]) {
        debug_assert_eq!(first_seqs.len(), self.0.len());
        for (slot, &first_seq) in std::mem::take(&mut self.0).iter().zip(first_seqs) {
            slot.set(Turn::Done(first_seq));
        }
    }

    /// Bytes of the members' batches.
    pub(super) fn bytes(&self) -> usize {
        self.batches().map(WriteBatch::approximate_bytes).sum()
    }

    /// Starts every member's memtable insert: member i inserts from
    /// `first_seqs[i]` into `group`'s memtable.
    pub(super) fn start_inserts(mut self, group: &Arc<Group>, first_seqs: &[SeqNo]) {
        debug_assert_eq!(first_seqs.len(), self.0.len());
        for (slot, &first_seq) in std::mem::take(&mut self.0).iter().zip(first_seqs) {
            slot.set(Turn::Member(Arc::clone(group), first_seq));
        }
    }
}

impl Drop for Members {
    fn drop(&mut self) {
        for slot in &self.0 {
            if slot.is_waiting() {
                slot.set(Turn::Failed(Error::Background(
                    "the leader of this write's group panicked".to_owned(),
                )));
            }
        }
    }
}

/// A group's memtable inserts, and its publication.
#[derive(Debug)]
pub(super) struct Group {
    memtable: Arc<Memtable>,
    /// Members whose insert has not finished.
    inserting: AtomicUsize,
    /// A member's insert panicked: its batch is in the memtable only in
    /// part.
    torn: AtomicBool,
    /// Set once the leader has published the group (or given up on it).
    outcome: OnceLock<Result<(), String>>,
    /// Where the leader waits for the inserts, and the members for the
    /// outcome.
    wakeup: Wakeup,
}

impl Group {
    /// A group of `members` inserting into `memtable`. The leader holds the
    /// returned [`Publisher`] until it has published the group.
    pub(super) fn new(memtable: Arc<Memtable>, members: usize) -> (Arc<Self>, Publisher) {
        let group = Arc::new(Self {
            memtable,
            inserting: AtomicUsize::new(members),
            torn: AtomicBool::new(false),
            outcome: OnceLock::new(),
            wakeup: Wakeup::default(),
        });
        (Arc::clone(&group), Publisher(group))
    }

    /// A member's part: inserts `batch` from `first_seq` on, then waits
    /// until the leader has published the group, so that the write is
    /// visible when the member's call returns.
    pub(super) fn insert_and_wait(&self, batch: &WriteBatch, first_seq: SeqNo) -> Result<()> {
        {
            let _done = InsertDone(self);
            self.memtable.insert_batch(batch, first_seq);
        }
        match self.wakeup.wait_for(|| self.outcome.get()) {
            Ok(()) => Ok(()),
            Err(detail) => Err(Error::Background(detail.clone())),
        }
    }
}

/// Counts a member's insert as done when dropped, by a panic too (the
/// leader would otherwise wait for it forever), and then marks the group
/// torn.
struct InsertDone<'a>(&'a Group);

impl Drop for InsertDone<'_> {
    fn drop(&mut self) {
        let group = self.0;
        if std::thread::panicking() {
            group.torn.store(true, Ordering::Release);
        }
        if group.inserting.fetch_sub(1, Ordering::AcqRel) == 1 {
            group.wakeup.signal();
        }
    }
}

/// The leader's side of a [`Group`]. Dropped without
/// [`Publisher::published`] (a leader that panicked), it fails the members.
#[derive(Debug)]
pub(super) struct Publisher(Arc<Group>);

impl Publisher {
    /// Waits until every member's insert is done; an error if one
    /// panicked (the group must then not be published).
    pub(super) fn wait_for_inserts(&self) -> Result<()> {
        let group = &self.0;
        group
            .wakeup
            .wait_for(|| (group.inserting.load(Ordering::Acquire) == 0).then_some(()));
        if group.torn.load(Ordering::Acquire) {
            return Err(Error::Background(
                "a write group's memtable insert panicked; reopen the database".to_owned(),
            ));
        }
        Ok(())
    }

    /// Tells the members that their writes are visible.
    pub(super) fn published(self) {
        self.finish(Ok(()));
    }

    fn finish(&self, outcome: Result<(), String>) {
        // Only the first outcome counts: `published`, then the drop.
        let _ = self.0.outcome.set(outcome);
        self.0.wakeup.signal();
    }
}

impl Drop for Publisher {
    fn drop(&mut self) {
        self.finish(Err(
            "the leader of this write's group panicked before publishing it".to_owned(),
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn batch(bytes: usize) -> WriteBatch {
        let mut batch = WriteBatch::new();
        batch.insert(b"k", vec![0u8; bytes]);
        batch
    }

    #[test]
    fn a_writer_that_finds_nobody_writing_leads_and_hands_over_to_the_next_in_line() {
        let queue = Arc::new(WriteQueue::default());
        let leader = queue.try_lead().unwrap();
        assert!(queue.try_lead().is_none(), "two leaders at once");
        let slot = Slot::member(batch(10), false);
        let waiter = {
            let queue = Arc::clone(&queue);
            let slot = Arc::clone(&slot);
            std::thread::spawn(move || matches!(queue.wait_in_line(&slot), Role::Lead(_)))
        };
        while lock(&queue.line).waiting.is_empty() {
            std::thread::yield_now();
        }
        drop(leader);
        assert!(waiter.join().unwrap(), "the next in line did not lead");
        assert!(queue.try_lead().is_some(), "leadership was not given back");
    }

    #[test]
    fn a_group_takes_writers_in_line_order_up_to_its_byte_bound_and_stops_at_a_leader_only() {
        let queue = WriteQueue::default();
        let leader = queue.try_lead().unwrap();
        let small = [
            Slot::member(batch(100), false),
            Slot::member(batch(100), true),
        ];
        let big = Slot::member(batch(200 << 10), false);
        let txn = Slot::leader_only(false);
        {
            let mut line = lock(&queue.line);
            line.waiting.extend(small.iter().cloned());
            line.waiting.push_back(Arc::clone(&big));
            line.waiting.push_back(Arc::clone(&txn));
        }
        // A small leader takes the small batches, not the 200 KiB one.
        let members = leader.gather(100);
        assert_eq!(members.len(), 2);
        assert!(members.any_sync());
        members.fail(&Error::Closed);
        for slot in &small {
            assert!(matches!(
                *lock(&slot.turn),
                Some(Turn::Failed(Error::Closed))
            ));
        }
        // A large leader takes the large batch and stops at the transaction.
        let members = leader.gather(512 << 10);
        assert_eq!(members.len(), 1);
        drop(members);
        assert!(
            matches!(*lock(&big.turn), Some(Turn::Failed(Error::Background(_)))),
            "a member dropped untold must fail, not wait forever"
        );
        assert_eq!(lock(&queue.line).waiting.len(), 1);
    }

    #[test]
    fn members_see_the_group_published_only_after_every_insert() {
        let memtable = Arc::new(Memtable::new(1));
        let (group, publisher) = Group::new(Arc::clone(&memtable), 2);
        let members: Vec<_> = (0..2u64)
            .map(|i| {
                let group = Arc::clone(&group);
                std::thread::spawn(move || group.insert_and_wait(&batch(8), 10 + i))
            })
            .collect();
        publisher.wait_for_inserts().unwrap();
        assert_eq!(
            memtable.len(),
            2,
            "the leader published before the inserts ended"
        );
        publisher.published();
        for member in members {
            member.join().unwrap().unwrap();
        }
    }

    /// A member whose insert panicked never counted it as done, and its
    /// leader waited for it forever, holding the writer lock.
    #[test]
    fn a_member_whose_insert_panics_does_not_hang_its_leader() {
        let (group, publisher) = Group::new(Arc::new(Memtable::new(1)), 2);
        let member = |panics: bool, seq: SeqNo| {
            let group = Arc::clone(&group);
            std::thread::spawn(move || {
                if panics {
                    crate::memtable::testing::panic_on_insert();
                }
                group.insert_and_wait(&batch(8), seq)
            })
        };
        let members = [member(true, 10), member(false, 11)];
        let (done, waited) = std::sync::mpsc::channel();
        std::thread::spawn(move || done.send(publisher.wait_for_inserts().is_err()));
        let torn = waited.recv_timeout(std::time::Duration::from_secs(10));
        assert_eq!(torn, Ok(true), "the leader hung, or published a torn group");
        let [panicked, other] = members;
        assert!(panicked.join().is_err());
        assert!(other.join().unwrap().is_err(), "a torn group was published");
    }

    #[test]
    fn members_of_a_group_whose_leader_gave_up_get_an_error() {
        let (group, publisher) = Group::new(Arc::new(Memtable::new(1)), 1);
        drop(publisher);
        assert!(group.insert_and_wait(&batch(8), 1).is_err());
    }
}
