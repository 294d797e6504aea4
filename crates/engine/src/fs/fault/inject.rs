//! Injected I/O errors: [`FaultInjectionFs::inject`] makes the next
//! operations of one kind on matching files fail, as a full disk or a
//! dying device would, [`FaultInjectionFs::inject_later`] hits one chosen
//! operation further on, with an error or a panic (a buggy file system,
//! a failed allocation), and [`FaultInjectionFs::limit_open_files`]
//! imposes a descriptor limit, as `ulimit -n` does.

use std::io;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use super::{FaultInjectionFs, lock};

/// An operation an error can be injected into.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FaultOp {
    /// `FileSystem::create`.
    Create,
    /// `FileSystem::open`.
    Open,
    /// `WritableFile::append`.
    Append,
    /// `WritableFile::sync`.
    Sync,
    /// `FileSystem::sync_dir`.
    SyncDir,
    /// `FileSystem::rename` (matched against the new name).
    Rename,
    /// `FileSystem::remove`.
    Remove,
    /// `FileSystem::hard_link` (matched against the new name).
    Link,
    /// `ReadableFile::read_exact_at`.
    Read,
}

/// What an injected fault does to the operation it hits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FaultEffect {
    /// The call returns an I/O error.
    Error,
    /// The call panics, before it has any effect.
    Panic,
}

/// One injected fault: after letting `skip` matching operations through,
/// the next `times` operations `op` on a path whose file name contains
/// `name` fail as `effect` says.
#[derive(Debug, Clone)]
struct Fault {
    op: FaultOp,
    name: String,
    skip: usize,
    times: usize,
    effect: FaultEffect,
}

/// The faults still to fire.
#[derive(Debug, Default)]
pub(super) struct Faults(Vec<Fault>);

impl FaultInjectionFs {
    /// Makes the next `times` operations `op` on files whose name contains
    /// `name` (`""` for any) fail with an I/O error. Faults add up; each
    /// operation consumes the first that matches.
    pub fn inject(&self, op: FaultOp, name: &str, times: usize) {
        self.push(Fault {
            op,
            name: name.to_owned(),
            skip: 0,
            times,
            effect: FaultEffect::Error,
        });
    }

    /// Lets the next `skip` operations `op` on files whose name contains
    /// `name` through, then makes one fail as `effect` says: a sweep over
    /// `skip` hits each such operation of a workload in turn.
    pub fn inject_later(&self, op: FaultOp, name: &str, skip: usize, effect: FaultEffect) {
        self.push(Fault {
            op,
            name: name.to_owned(),
            skip,
            times: 1,
            effect,
        });
    }

    fn push(&self, fault: Fault) {
        lock(&self.state).faults.0.push(fault);
    }

    /// Whether an injected fault has yet to fire.
    #[must_use]
    pub fn armed(&self) -> bool {
        !lock(&self.state).faults.0.is_empty()
    }

    /// Removes every injected fault that has not fired.
    pub fn heal(&self) {
        lock(&self.state).faults.0.clear();
    }

    /// The injected error for `op` on `path`, if one is due; panics if
    /// the fault due is a panic.
    pub(super) fn check(&self, op: FaultOp, path: &Path) -> io::Result<()> {
        let mut state = lock(&self.state);
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let faults = &mut state.faults.0;
        let Some(at) = faults
            .iter()
            .position(|f| f.op == op && name.contains(&f.name))
        else {
            return Ok(());
        };
        let fault = &mut faults[at];
        if fault.skip > 0 {
            fault.skip -= 1;
            return Ok(());
        }
        fault.times -= 1;
        let effect = fault.effect;
        if fault.times == 0 {
            faults.remove(at);
        }
        // Not while holding the state: the rest of the test uses it.
        drop(state);
        assert!(
            effect == FaultEffect::Error,
            "injected {op:?} panic on {}",
            path.display()
        );
        Err(io::Error::other(format!(
            "injected {op:?} error on {}",
            path.display()
        )))
    }
}

/// Open handles and their limit (0: none), shared by the clones of a
/// file system.
#[derive(Debug, Default)]
pub(super) struct Handles {
    open: Arc<AtomicUsize>,
    limit: AtomicUsize,
}

/// One open handle; closes on drop.
#[derive(Debug)]
pub(super) struct Handle(Arc<AtomicUsize>);

impl Drop for Handle {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

impl Handles {
    /// Counts a new handle, or fails as `open(2)` does at the limit.
    pub(super) fn open(&self) -> io::Result<Handle> {
        let limit = self.limit.load(Ordering::Acquire);
        let before = self.open.fetch_add(1, Ordering::AcqRel);
        let handle = Handle(Arc::clone(&self.open));
        if limit > 0 && before >= limit {
            return Err(io::Error::other(format!(
                "too many open files (limit {limit})"
            )));
        }
        Ok(handle)
    }
}

impl FaultInjectionFs {
    /// Fails file creations and opens while `max` handles are open (`None`:
    /// no limit), as a process's descriptor limit does.
    pub fn limit_open_files(&self, max: Option<usize>) {
        self.handles
            .limit
            .store(max.unwrap_or(0), Ordering::Release);
    }

    /// Files and handles open now (readers and writers).
    #[must_use]
    pub fn open_files(&self) -> usize {
        self.handles.open.load(Ordering::Acquire)
    }
}
