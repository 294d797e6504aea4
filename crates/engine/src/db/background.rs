//! The flush and compaction threads, waiting for them, and shutdown.

use std::sync::atomic::Ordering;
use std::sync::{Arc, PoisonError};
use std::thread::JoinHandle;

use crate::error::{Error, Result};
use crate::options::CompactionStyle;

/// Compactions a clean close runs at most to bring level 0 under its
/// trigger (`Inner::settle_level0`): the planner may first pick deeper
/// levels with higher scores.
const MAX_CLOSING_COMPACTIONS: usize = 4;

use super::compact::Compacted;
use super::value::LockWait;
use super::{Inner, State, lock};

/// Which background job a thread runs.
#[derive(Clone, Copy, Debug)]
enum Job {
    /// Frozen memtables -> level-0 tables.
    Flush,
    /// Whatever the planner picks.
    Compact,
}

impl Job {
    /// Runs one unit of work; `false` when there was nothing to do.
    fn step(self, inner: &Inner) -> Result<bool> {
        match self {
            Self::Flush => inner.flush_oldest(),
            // Backfill only when the planner has nothing to do: compaction
            // rewrites tables anyway, leaves included.
            Self::Compact => {
                Ok(inner.compact_once()?.ran() || inner.backfill_once(LockWait::GiveUp)?)
            }
        }
    }
}

/// Starts the flush thread and the compaction threads.
pub(super) fn spawn(inner: &Arc<Inner>) -> Result<Vec<JoinHandle<()>>> {
    let compactors =
        (0..inner.options.compaction_threads).map(|i| (Job::Compact, format!("sift-compact-{i}")));
    std::iter::once((Job::Flush, "sift-flush".to_owned()))
        .chain(compactors)
        .map(|(job, name)| {
            let inner = Arc::clone(inner);
            std::thread::Builder::new()
                .name(name.clone())
                .spawn(move || run(&inner, job))
                .map_err(|e| Error::io(inner_path(&name), e))
        })
        .collect()
}

fn inner_path(name: &str) -> std::path::PathBuf {
    std::path::PathBuf::from(format!("<thread {name}>"))
}

/// A background thread: work while there is work, sleep on `changed`
/// otherwise, stop at shutdown or after a failure (which `fail` records so
/// writers see it).
fn run(inner: &Inner, job: Job) {
    loop {
        let seen = {
            let state = lock(&inner.state);
            if state.shutting_down || state.background_error.is_some() {
                return;
            }
            inner.generation()
        };
        // A panic (in a custom extractor, say) must not leave writers and
        // `Db::flush` waiting for a thread that is gone: it fails the
        // database like an error does.
        match catch_panic(&format!("the {job:?} thread"), || job.step(inner)) {
            Ok(true) => continue,
            Ok(false) => {}
            Err(err) => {
                let mut state = lock(&inner.state);
                if !state.shutting_down {
                    inner.fail_locked(&mut state, &err);
                }
                return;
            }
        }
        // Sleep until something changes. Installs happen under `state` and
        // bump the generation first, so no change slips between the check
        // and the wait.
        let mut state = lock(&inner.state);
        while inner.generation() == seen && !state.shutting_down && state.background_error.is_none()
        {
            state = inner
                .changed
                .wait(state)
                .unwrap_or_else(PoisonError::into_inner);
        }
    }
}

/// Runs `work`; a panic in it comes back as [`Error::Background`] naming
/// `what` panicked.
pub(super) fn catch_panic<T>(what: &str, work: impl FnOnce() -> Result<T>) -> Result<T> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(work))
        .unwrap_or_else(|panic| Err(panicked(what, panic.as_ref())))
}

fn panicked(what: &str, panic: &(dyn std::any::Any + Send)) -> Error {
    Error::Background(format!("{what} panicked: {}", panic_message(panic)))
}

/// What a caught panic said, if it said it in a string.
pub(super) fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_default()
}

impl Inner {
    /// Flushes the oldest frozen memtable on this thread (without
    /// background threads); see [`Inner::inline`].
    pub(super) fn flush_inline(&self) -> Result<bool> {
        self.inline("a flush", || self.flush_oldest())
    }

    /// Runs the compaction the planner picks on this thread (without
    /// background threads); see [`Inner::inline`].
    pub(super) fn compact_inline(&self) -> Result<Compacted> {
        self.inline("a compaction", || self.compact_once())
    }

    /// Background work run on a writer's or caller's thread: a panic in it
    /// fails the database, as it does on a background thread, and comes
    /// back as the error (or every later write would meet it again).
    pub(super) fn inline<T>(&self, what: &str, work: impl FnOnce() -> Result<T>) -> Result<T> {
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(work)).unwrap_or_else(|panic| {
            let err = panicked(what, panic.as_ref());
            self.fail(&err);
            Err(err)
        })
    }

    /// Blocks until `done` holds, re-checking whenever `current` or `state`
    /// changes; fails as soon as background work has failed (what is waited
    /// for may then never happen).
    pub(super) fn wait_until(&self, done: impl Fn(&Self, &State) -> bool) -> Result<()> {
        let mut state = lock(&self.state);
        loop {
            Self::check_background_error(&state)?;
            if done(self, &state) {
                return Ok(());
            }
            state = self
                .changed
                .wait(state)
                .unwrap_or_else(PoisonError::into_inner);
        }
    }

    /// Blocks until nothing is frozen and the planner finds nothing to do.
    pub(super) fn wait_until_idle(&self) -> Result<()> {
        if !self.options.background_threads {
            while self.flush_inline()? {}
            while self.compact_inline()?.ran() {}
            return Ok(());
        }
        loop {
            self.wait_until(|inner, state| {
                inner.current().immutables.is_empty() && state.jobs == 0
            })?;
            // Idle threads may still have work the planner would pick (they
            // start on the next change): run it here to be sure. A thread
            // may also have started a job since the wait; then nothing is
            // plannable beside it, but its result may be, so wait again.
            if self.compact_inline()? == Compacted::Idle {
                return Ok(());
            }
        }
    }

    /// Before a clean close, compacts while level 0 is at its trigger, a
    /// few compactions at most. A process that opens, writes a little and
    /// closes (a `sift put`) adds a level-0 table at every open (recovery
    /// writes the WAL it finds as one) and used to close before a
    /// compaction thread got to it: 800 such processes left 940 level-0
    /// tables, and every read paid for each. Errors are left to the next
    /// open, which meets the same work.
    fn settle_level0(&self) {
        let trigger = match self.options.compaction {
            CompactionStyle::Leveled { l0_trigger, .. } => l0_trigger,
            CompactionStyle::Tiered { runs_per_level } => runs_per_level,
        };
        for _ in 0..MAX_CLOSING_COMPACTIONS {
            let due = self.current().version.l0_runs() >= trigger.max(1);
            if !due || self.options.read_only || self.failed.load(Ordering::Acquire) {
                return;
            }
            // Beside what the threads run; `Blocked` when they hold level 0,
            // and its compaction ends before they are joined.
            if !matches!(self.compact_inline(), Ok(Compacted::Ran)) {
                return;
            }
        }
    }

    /// Stops the background threads, then syncs the WAL so a clean shutdown
    /// loses nothing.
    pub(super) fn shut_down(&self, threads: &mut Vec<JoinHandle<()>>) {
        self.settle_level0();
        lock(&self.state).shutting_down = true;
        // Writers check this flag on every write: a transaction or a stalled
        // writer that outlives the handle gets `Error::Closed`, and wakes.
        self.failed.store(true, Ordering::Release);
        self.changed.notify_all();
        for thread in threads.drain(..) {
            // A panicked background thread has nothing left to clean up.
            let _ = thread.join();
        }
        // Nothing to report an error to from `drop`; unsynced writes were
        // acknowledged as such.
        let _ = lock(&self.writer).wal.sync();
    }
}

#[cfg(test)]
mod tests {
    use std::panic::{AssertUnwindSafe, catch_unwind};
    use std::sync::Arc;

    use crate::fs::FaultInjectionFs;
    use crate::{Db, Error, Extractor, IndexDef};

    /// Without background threads a writer flushes; a panic there (a
    /// user's extractor) once reached the writer as a panic and left the
    /// database open, so every later write met it again.
    #[test]
    fn a_panic_in_an_inline_flush_fails_the_database_and_the_write() {
        let extractor = Extractor::custom("refuses boom", |value, out| {
            assert!(value != b"boom", "the extractor refuses this value");
            out(value);
        });
        let db = Db::builder("/db")
            .file_system(Arc::new(FaultInjectionFs::new()))
            .background_threads(false)
            .memtable_bytes(4096)
            .value_index(IndexDef::new("whole", extractor))
            .open()
            .unwrap();
        // The write itself succeeds (its postings are given up); the flush
        // of its memtable meets the panic.
        db.insert(b"bad", b"boom").unwrap();
        let mut written = Ok(());
        for i in 0..100_000u32 {
            written = catch_unwind(AssertUnwindSafe(|| db.insert(i.to_be_bytes(), b"v")))
                .expect("a write panicked");
            if written.is_err() {
                break;
            }
        }
        assert!(matches!(written, Err(Error::Background(_))), "{written:?}");
        assert!(
            matches!(db.insert(b"next", b"v"), Err(Error::Background(_))),
            "the database is still open for writes"
        );
    }
}
