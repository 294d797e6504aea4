//! Injected I/O errors: [`FaultInjectionFs::inject`] makes the next
//! operations of one kind on matching files fail, as a full disk, a dying
//! device or a descriptor limit would.

use std::io;
use std::path::Path;

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
    /// `ReadableFile::read_exact_at`.
    Read,
}

/// One injected fault: the next `times` operations `op` on a path whose
/// file name contains `name` fail.
#[derive(Debug, Clone)]
struct Fault {
    op: FaultOp,
    name: String,
    times: usize,
}

/// The faults still to fire.
#[derive(Debug, Default)]
pub(super) struct Faults(Vec<Fault>);

impl FaultInjectionFs {
    /// Makes the next `times` operations `op` on files whose name contains
    /// `name` (`""` for any) fail with an I/O error. Faults add up; each
    /// operation consumes the first that matches.
    pub fn inject(&self, op: FaultOp, name: &str, times: usize) {
        lock(&self.state).faults.0.push(Fault {
            op,
            name: name.to_owned(),
            times,
        });
    }

    /// Removes every injected fault that has not fired.
    pub fn heal(&self) {
        lock(&self.state).faults.0.clear();
    }

    /// The injected error for `op` on `path`, if one is due.
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
        faults[at].times -= 1;
        if faults[at].times == 0 {
            faults.remove(at);
        }
        Err(io::Error::other(format!(
            "injected {op:?} error on {}",
            path.display()
        )))
    }
}
