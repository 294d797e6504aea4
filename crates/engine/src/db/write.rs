//! The write path: a group of writers' WAL records, then their memtable
//! inserts, then the group's sequence numbers published at once (the line
//! and its hand-offs are in `write_group.rs`); memtable rotation and write
//! stalls.

use std::cell::RefCell;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use crate::batch::WriteBatch;
use crate::error::{Error, Result};
use crate::key::SeqNo;
use crate::log::{LogKind, LogWriter};
use crate::manifest::filenames;
use crate::memtable::Memtable;
use crate::options::{PersistMode, WriteOptions};

use super::background::catch_panic;
use super::wakeup::cores;
use super::write_group::{Group, Leadership, Members, Publisher, Role, Slot};
use super::{Inner, State, SuperVersion, Writer, lock};

/// While level 0 is over its slowdown threshold, writers sleep 1 ms per
/// this many bytes written: about 16 MiB/s, RocksDB's default
/// `delayed_write_rate`.
const DELAY_BYTES_PER_MS: u64 = 16 * 1024;

/// One-operation batches up to this size leave their buffer to the next
/// write: room for any ordinary key and value, while a rare huge value's
/// buffer is freed.
const KEPT_BATCH_BYTES: usize = 64 << 10;

thread_local! {
    /// The batch an uncontended one-operation write is built in: no
    /// allocation per write.
    static SCRATCH: RefCell<WriteBatch> = RefCell::new(WriteBatch::new());
}

/// Members' batches of this many bytes or more, in all, insert
/// themselves into the memtable, in parallel. Smaller ones are inserted by
/// their leader unless every member has a core of its own
/// ([`inserts_in_parallel`]): a member without a core must first be
/// scheduled, which costs more than inserting a few small batches.
const PARALLEL_INSERT_BYTES: usize = 64 << 10;

/// How a leader lets its members go once the group is published.
enum Release {
    /// They inserted their own batches and wait for the publication.
    Publisher(Publisher),
    /// The leader inserted their batches: they are done.
    Members(Members),
}

/// A transaction's part in the group it leads, under the writer lock.
pub(super) trait TxnSteps {
    /// Before its sequence numbers are given: validates the transaction
    /// against the commits since its snapshot (an error writes nothing).
    fn validate(&mut self, writer: &mut Writer) -> Result<()>;

    /// After its batch is logged from `first_seq` on: records its write set
    /// for the transactions still active.
    fn logged(&mut self, writer: &mut Writer, first_seq: SeqNo);
}

impl Inner {
    /// Logs and applies `batch` atomically.
    pub(super) fn write(&self, batch: &WriteBatch, options: WriteOptions) -> Result<()> {
        self.writable()?;
        batch.validate()?;
        if batch.is_empty() {
            return Ok(());
        }
        let sync = self.sync_asked(options);
        match self.write_queue.try_lead() {
            Some(leadership) => self.lead(leadership, batch, sync, None),
            // Another thread may log it: the batch is copied into the line.
            None => self.write_in_line(&Slot::member(batch.clone(), sync), None),
        }
        .map(drop)
    }

    /// Logs and applies one operation (a value, or a tombstone when
    /// `value` is `None`) as a one-operation batch.
    pub(super) fn write_one(
        &self,
        key: &[u8],
        value: Option<&[u8]>,
        options: WriteOptions,
    ) -> Result<()> {
        self.writable()?;
        let sync = self.sync_asked(options);
        let fill = |batch: &mut WriteBatch| {
            match value {
                Some(value) => batch.insert(key, value),
                None => batch.remove(key),
            };
        };
        let Some(leadership) = self.write_queue.try_lead() else {
            let mut batch = WriteBatch::new();
            fill(&mut batch);
            batch.validate()?;
            return self
                .write_in_line(&Slot::member(batch, sync), None)
                .map(drop);
        };
        SCRATCH.with_borrow_mut(|batch| {
            fill(batch);
            let written = batch
                .validate()
                .and_then(|()| self.lead(leadership, batch, sync, None));
            // A rare huge write's buffer is not kept around.
            if batch.size_in_bytes() <= KEPT_BATCH_BYTES {
                batch.clear();
            } else {
                *batch = WriteBatch::new();
            }
            written.map(drop)
        })
    }

    /// Logs and applies a transaction's valid, non-empty `batch` if
    /// `steps` validate it. Returns the sequence number of its first write.
    pub(super) fn write_txn(&self, batch: &WriteBatch, steps: &mut dyn TxnSteps) -> Result<SeqNo> {
        self.writable()?;
        let sync = self.sync_asked(WriteOptions::default());
        match self.write_queue.try_lead() {
            Some(leadership) => self.lead(leadership, batch, sync, Some((steps, batch))),
            // Validation reads what only this thread holds: it waits to lead.
            None => self.write_in_line(&Slot::leader_only(sync), Some((steps, batch))),
        }
    }

    fn sync_asked(&self, options: WriteOptions) -> bool {
        options.sync.unwrap_or(self.options.sync_writes)
    }

    /// Waits in line with `slot` and then writes its batch (or, for a
    /// transaction's leader-only slot, `txn`'s) as the group's leader or
    /// member. Returns the sequence number of the batch's first write.
    fn write_in_line(
        &self,
        slot: &Arc<Slot>,
        txn: Option<(&mut dyn TxnSteps, &WriteBatch)>,
    ) -> Result<SeqNo> {
        match self.write_queue.wait_in_line(slot) {
            Role::Lead(leadership) => {
                let own = txn.as_ref().map_or(slot.batch(), |(_, batch)| *batch);
                self.lead(leadership, own, slot.sync(), txn)
            }
            Role::Member(group, first_seq) => group
                .insert_and_wait(slot.batch(), first_seq)
                .map(|()| first_seq),
            Role::Done(first_seq) => Ok(first_seq),
            Role::Failed(err) => Err(err),
        }
    }

    /// Writes a group: `own` first (for a transaction, once its steps
    /// validate it), then the writers in line behind it, with one WAL
    /// write and at most one sync. Returns the sequence number of `own`'s
    /// first write. A failed WAL write or sync fails every member and the
    /// database: the file may end in a partial record now.
    fn lead(
        &self,
        leadership: Leadership<'_>,
        own: &WriteBatch,
        sync: bool,
        mut txn: Option<(&mut dyn TxnSteps, &WriteBatch)>,
    ) -> Result<SeqNo> {
        let mut writer = lock(&self.writer);
        if let Some((steps, _)) = txn.as_mut() {
            steps.validate(&mut writer)?;
        }
        let members = leadership.gather(own.approximate_bytes());
        let sync = sync || members.any_sync();
        let batches: Vec<&WriteBatch> = std::iter::once(own).chain(members.batches()).collect();
        let bytes = batches.iter().map(|b| b.approximate_bytes() as u64).sum();
        if let Err(err) = self.make_room(&mut writer, bytes) {
            members.fail(&err);
            return Err(err);
        }
        // Sequence numbers in line order: batch i starts at first_seqs[i].
        let mut next = writer.last_seq + 1;
        let first_seqs: Vec<SeqNo> = batches
            .iter()
            .map(|batch| {
                let first = next;
                next += batch.len() as SeqNo;
                first
            })
            .collect();
        let last_seq = next - 1;
        // From the first append on, the group's sequence numbers may be in
        // the WAL: unwinding before they are published fails the database,
        // or the next group would reuse them.
        let _logging = FailOnUnwind(self);
        if let Err(err) = Self::log(&mut writer, &batches, &first_seqs, sync) {
            // A partly written record is a torn tail for recovery to cut;
            // appending more after it would hide later writes behind it.
            self.fail(&err);
            members.fail(&err);
            return Err(err);
        }
        match txn.as_mut() {
            Some((steps, _)) => steps.logged(&mut writer, first_seqs[0]),
            None => self.record_plain_write(&mut writer, own, first_seqs[0]),
        }
        for (batch, &first_seq) in batches.iter().zip(&first_seqs).skip(1) {
            self.record_plain_write(&mut writer, batch, first_seq);
        }
        // Holding the writer lock, no rotation can replace the memtable.
        let memtable = Arc::clone(&self.pin().active);
        let grouped = members.len();
        let release = if inserts_in_parallel(members.len(), members.bytes()) {
            let (group, publisher) = Group::new(Arc::clone(&memtable), grouped);
            members.start_inserts(&group, &first_seqs[1..]);
            memtable.insert_batch(own, first_seqs[0]);
            if let Err(err) = publisher.wait_for_inserts() {
                // Part of a batch is in the memtable, unpublished: nothing
                // may be published after it. Reopening replays the WAL.
                self.fail(&err);
                return Err(err);
            }
            Release::Publisher(publisher)
        } else {
            for (batch, &first_seq) in batches.iter().zip(&first_seqs) {
                memtable.insert_batch(batch, first_seq);
            }
            Release::Members(members)
        };
        debug_assert!(
            last_seq >= self.visible_seq(),
            "sequence numbers went back: {last_seq} after {}",
            self.visible_seq()
        );
        writer.last_seq = last_seq;
        self.visible_seq.store(last_seq, Ordering::Release);
        drop(writer);
        // The next group starts while this one's members are woken.
        drop(leadership);
        match release {
            Release::Publisher(publisher) => publisher.published(),
            Release::Members(members) => members.done(&first_seqs[1..]),
        }
        self.counters.with(|c| {
            c.writes.add(1 + grouped as u64);
            c.write_groups.add(1);
            c.wal_syncs.add(u64::from(sync));
        });
        Ok(first_seqs[0])
    }

    /// Appends `batches` to the WAL, batch i as one record from
    /// `first_seqs[i]` on, then syncs or flushes once. A panic in the file
    /// system's calls comes back as an error, as a failed call does.
    fn log(
        writer: &mut Writer,
        batches: &[&WriteBatch],
        first_seqs: &[SeqNo],
        sync: bool,
    ) -> Result<()> {
        catch_panic("the WAL write", || {
            for (batch, &first_seq) in batches.iter().zip(first_seqs) {
                let header = batch.record_header(first_seq);
                writer
                    .wal
                    .add_record_parts(&[&header, batch.encoded_ops()])?;
            }
            if sync {
                writer.wal.sync()
            } else {
                writer.wal.flush()
            }
        })
    }

    /// Makes the WAL durable as `mode` asks. A failure fails the
    /// database: after a failed `fsync` the kernel may have dropped the
    /// dirty pages, and a later `fsync` could report success for them.
    pub(super) fn persist(&self, mode: PersistMode) -> Result<()> {
        self.writable()?;
        let mut writer = lock(&self.writer);
        if self.failed.load(Ordering::Acquire) {
            Self::check_background_error(&lock(&self.state))?;
        }
        let persisted = match mode {
            PersistMode::SyncAll => writer.wal.sync(),
            PersistMode::Buffer => writer.wal.flush(),
        };
        if let Err(err) = &persisted {
            self.fail(err);
        }
        persisted
    }

    /// Records a failure of background work, of the WAL or of the
    /// manifest: from now on writes and version changes are refused.
    pub(super) fn fail(&self, err: &Error) {
        self.fail_locked(&mut lock(&self.state), err);
    }

    /// [`Inner::fail`] for a caller holding `state`.
    pub(super) fn fail_locked(&self, state: &mut State, err: &Error) {
        if state.background_error.is_none() {
            state.background_error = Some(err.to_string());
        }
        self.failed.store(true, Ordering::Release);
        self.changed.notify_all();
    }

    /// Before a write: delays it while compaction is behind, and freezes a
    /// full memtable, waiting when too many are frozen already.
    fn make_room(&self, writer: &mut Writer, bytes: u64) -> Result<()> {
        let mut delayed = false;
        loop {
            let current = self.pin();
            let l0_runs = current.version.l0_runs();
            if self.failed.load(Ordering::Acquire) {
                Self::check_background_error(&lock(&self.state))?;
            }
            if !delayed && l0_runs >= self.options.l0_slowdown_runs {
                delayed = true;
                writer.delay_debt += bytes;
                if writer.delay_debt >= DELAY_BYTES_PER_MS {
                    writer.delay_debt -= DELAY_BYTES_PER_MS;
                    // Each delay and each wait counts its own time: a write
                    // both delayed and then stopped is stalled once.
                    let delay = Instant::now();
                    std::thread::sleep(Duration::from_millis(1));
                    let slept = delay.elapsed().as_micros() as u64;
                    self.counters.with(|c| c.write_stall_micros.add(slept));
                }
            }
            if current.active.approximate_bytes() < self.options.memtable_bytes {
                return Ok(());
            }
            if current.immutables.len() >= self.options.max_immutable_memtables {
                self.wait_for_flush()?;
                continue;
            }
            if l0_runs >= self.options.l0_stop_runs {
                self.wait_for_compaction_progress(l0_runs)?;
                continue;
            }
            return self.rotate(writer);
        }
    }

    /// Freezes the active memtable and starts a new one with a new WAL.
    pub(super) fn rotate(&self, writer: &mut Writer) -> Result<()> {
        // The old WAL is synced before the new one exists: a power cut must
        // not keep synced writes of the new WAL while losing unsynced ones
        // of the old (replay stops at the first gap, and would drop the
        // synced ones after it). Then the new WAL's name is made durable
        // before a synced write relies on it. A failed sync fails the
        // database (see `persist`). The syncs run outside `state`, which
        // flushes and compactions need meanwhile: the writer lock keeps
        // rotations one at a time, and no flush removes a WAL numbered
        // above the active memtable's.
        let number = self.new_file_number();
        let path = self.file(&filenames::wal(number));
        let fs = self.options.fs.as_ref();
        // A panic in them (a file system's) fails the database as an error
        // does: the old WAL may be half synced, the new one half made.
        let started = super::background::catch_panic("a WAL rotation", || {
            writer.wal.sync()?;
            let wal = LogWriter::create(fs, &path, LogKind::Wal)?;
            fs.sync_dir(&self.options.path)
                .map_err(|e| Error::io(&self.options.path, e))?;
            Ok(wal)
        });
        let wal = match started {
            Ok(wal) => wal,
            Err(err) => {
                self.fail(&err);
                return Err(err);
            }
        };
        let state = lock(&self.state);
        writer.wal = wal;
        let current = self.current();
        let mut immutables = Vec::with_capacity(current.immutables.len() + 1);
        immutables.push(Arc::clone(&current.active));
        immutables.extend(current.immutables.iter().cloned());
        self.install(SuperVersion {
            active: Arc::new(Memtable::with_postings(number, &self.indexes())),
            immutables,
            version: Arc::clone(&current.version),
        });
        drop(state);
        Ok(())
    }

    /// Waits until a frozen memtable has been flushed (or flushes one on
    /// this thread when there are no background threads).
    fn wait_for_flush(&self) -> Result<()> {
        if !self.options.background_threads {
            return self.flush_inline().map(drop);
        }
        // The condition `make_room` waits for, not "fewer than now": the
        // flush thread may have drained the queue since `make_room` looked,
        // and "fewer than zero" would never come.
        let max = self.options.max_immutable_memtables;
        self.stall_until(|inner| inner.current().immutables.len() < max)
    }

    /// Waits until level 0 holds fewer than `l0_runs` runs (or compacts on
    /// this thread when there are no background threads).
    fn wait_for_compaction_progress(&self, l0_runs: usize) -> Result<()> {
        if !self.options.background_threads {
            return self.compact_inline().map(drop);
        }
        self.stall_until(|inner| inner.current().version.l0_runs() < l0_runs)
    }

    /// A writer waits for background work: the time counts as a stall.
    fn stall_until(&self, done: impl Fn(&Self) -> bool) -> Result<()> {
        let stall = Instant::now();
        let waited = self.wait_until(|inner, _| done(inner));
        let stalled = stall.elapsed().as_micros() as u64;
        self.counters.with(|c| c.write_stall_micros.add(stalled));
        waited
    }
}

/// Fails the database if dropped while its thread unwinds: a write group
/// that panics between its WAL append and its publication.
struct FailOnUnwind<'a>(&'a Inner);

impl Drop for FailOnUnwind<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.0.fail(&Error::Background(
                "a write group panicked after its WAL append; reopen the database".to_owned(),
            ));
        }
    }
}

/// Whether a group's members, `members` batches of `bytes` in all, insert
/// their own batches: when the batches are large, or when the group's
/// writers all have cores of their own (then they wait for their turn
/// spinning, and a hand-off costs less than an insert). A lone member's
/// small batch is inserted by the leader either way.
fn inserts_in_parallel(members: usize, bytes: usize) -> bool {
    bytes >= PARALLEL_INSERT_BYTES || (members >= 2 && members < cores())
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, mpsc};
    use std::time::Duration;

    use std::panic::{AssertUnwindSafe, catch_unwind};
    use std::sync::atomic::{AtomicBool, Ordering};

    use crate::fs::{FaultInjectionFs, SyncPoint};
    use crate::{Db, Error, WriteOptions};

    /// After a write group panicked past its WAL append, the database is
    /// failed: the next write is refused, and a reopen finds every
    /// sequence number used once.
    fn assert_failed_and_sound(fs: &FaultInjectionFs, db: Db) {
        assert!(
            matches!(db.insert(b"after", b"2"), Err(Error::Background(_))),
            "a write after the panic was accepted (its sequence numbers reused)"
        );
        drop(db);
        let db = Db::builder("/db")
            .file_system(Arc::new(fs.crash()))
            .open()
            .unwrap();
        assert_eq!(db.get(b"after").unwrap(), None);
        assert_eq!(db.get(b"before").unwrap(), Some(b"0".to_vec()));
    }

    fn open(fs: &FaultInjectionFs) -> Db {
        Db::builder("/db")
            .file_system(Arc::new(fs.clone()))
            .open()
            .unwrap()
    }

    /// An fsync that panicked once left the database open with `last_seq`
    /// behind the WAL: the next group reused the numbers.
    #[test]
    fn a_wal_sync_that_panics_fails_the_write_and_the_database() {
        let fs = FaultInjectionFs::new();
        let db = open(&fs);
        db.insert_with(b"before", b"0", WriteOptions::sync())
            .unwrap();
        let armed = Arc::new(AtomicBool::new(true));
        let hook_armed = Arc::clone(&armed);
        fs.on_sync(Arc::new(move |_, point| {
            let wal =
                matches!(point, SyncPoint::File(p) if p.extension().is_some_and(|e| e == "wal"));
            if wal && hook_armed.swap(false, Ordering::AcqRel) {
                panic!("injected fsync panic");
            }
        }));
        let written = catch_unwind(AssertUnwindSafe(|| {
            db.insert_with(b"during", b"1", WriteOptions::sync())
        }));
        assert!(!armed.load(Ordering::Acquire), "the WAL was not synced");
        assert!(
            matches!(written, Ok(Err(Error::Background(_)))),
            "the panic was not turned into the write's error: {written:?}"
        );
        assert_failed_and_sound(&fs, db);
    }

    /// A rotation's three syncs once ran holding `state`, which every
    /// flush, plan and new file number waits for.
    #[test]
    fn a_rotation_syncs_without_holding_state() {
        let fs = FaultInjectionFs::new();
        let db = Arc::new(
            Db::builder("/db")
                .file_system(Arc::new(fs.clone()))
                .background_threads(false)
                .open()
                .unwrap(),
        );
        db.insert(b"k", b"v").unwrap();
        let syncs = Arc::new(std::sync::Mutex::new(Vec::new()));
        let (seen, inner) = (Arc::clone(&syncs), Arc::downgrade(&db.inner));
        fs.on_sync(Arc::new(move |_, _| {
            let held = inner
                .upgrade()
                .is_some_and(|inner| inner.state.try_lock().is_err());
            seen.lock().unwrap().push(held);
        }));
        db.inner.rotate(&mut super::lock(&db.inner.writer)).unwrap();
        let syncs = syncs.lock().unwrap();
        assert!(
            syncs.len() >= 2,
            "no WAL sync and directory sync: {syncs:?}"
        );
        assert!(syncs.iter().all(|held| !held), "synced holding state");
    }

    /// A leader that panics in its memtable insert, after the append.
    #[test]
    fn a_leader_that_panics_after_its_append_fails_the_database() {
        let fs = FaultInjectionFs::new();
        let db = Arc::new(open(&fs));
        db.insert_with(b"before", b"0", WriteOptions::sync())
            .unwrap();
        let leader = Arc::clone(&db);
        let panicked = std::thread::spawn(move || {
            crate::memtable::testing::panic_on_insert();
            leader.insert(b"during", b"1")
        })
        .join();
        assert!(panicked.is_err(), "the injected panic did not happen");
        assert_failed_and_sound(&fs, Arc::into_inner(db).unwrap());
    }

    /// A writer that saw a full queue of frozen memtables waits for room;
    /// if the flush thread emptied the queue before the wait began, the
    /// wait must end at once (it once waited for "fewer than zero").
    #[test]
    fn a_wait_for_flush_that_starts_after_the_queue_drained_returns() {
        let db = Db::builder("/db")
            .file_system(Arc::new(FaultInjectionFs::new()))
            .open()
            .unwrap();
        assert!(db.inner.current().immutables.is_empty());
        let inner = Arc::clone(&db.inner);
        let (done, waited) = mpsc::channel();
        std::thread::spawn(move || done.send(inner.wait_for_flush()));
        let waited = waited.recv_timeout(Duration::from_secs(30));
        assert!(
            matches!(waited, Ok(Ok(()))),
            "the wait did not end: {waited:?}"
        );
    }
}
