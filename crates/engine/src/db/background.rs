//! The flush and compaction threads, waiting for them, and shutdown.

use std::sync::atomic::Ordering;
use std::sync::{Arc, PoisonError};
use std::thread::JoinHandle;

use crate::error::{Error, Result};

use super::compact::Compacted;
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
            Self::Compact => Ok(inner.compact_once()?.ran() || inner.backfill_once()?),
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
        let stepped = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| job.step(inner)))
            .unwrap_or_else(|panic| {
                Err(Error::Background(format!(
                    "the {job:?} thread panicked: {}",
                    panic_message(panic.as_ref())
                )))
            });
        match stepped {
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

/// What a caught panic said, if it said it in a string.
pub(super) fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_default()
}

impl Inner {
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
            while self.flush_oldest()? {}
            while self.compact_once()?.ran() {}
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
            if self.compact_once()? == Compacted::Idle {
                return Ok(());
            }
        }
    }

    /// Stops the background threads, then syncs the WAL so a clean shutdown
    /// loses nothing.
    pub(super) fn shut_down(&self, threads: &mut Vec<JoinHandle<()>>) {
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
