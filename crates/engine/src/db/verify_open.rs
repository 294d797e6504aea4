//! [`Db::verify`]: `verify` of a database that stays open, run on a
//! checkpoint of it.
//!
//! The standalone [`verify`](crate::verify()) locks the directory so that no
//! file changes under it. An open database cannot give up its lock, but a
//! checkpoint is a consistent copy whose tables are hard links to the same
//! bytes: verifying it reads every live table as the database would.

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::error::{Error, Result};
use crate::verify::{VerifyReport, verify_in};

use super::Db;

/// Tells apart the checkpoints of concurrent verifications.
static NEXT_CHECK: AtomicU64 = AtomicU64::new(0);

impl Db {
    /// Checks every checksum and filter of the live tables, as
    /// [`verify`](crate::verify()) does for a closed database, while this
    /// one stays open and in use. It flushes the memtables first (so the
    /// check covers every write acknowledged before the call; the WALs then
    /// hold nothing the tables do not), checkpoints the database into a
    /// directory inside its own, verifies that copy and removes it.
    /// Problems name the database's own files. A read-only handle checks
    /// its view of the directory in place.
    ///
    /// # Errors
    /// As [`Db::checkpoint`], and [`Error::Io`] if the copy cannot be
    /// listed or removed. Damage is reported in [`VerifyReport::problems`].
    pub fn verify(&self) -> Result<VerifyReport> {
        let fs = &self.inner.options.fs;
        if self.inner.options.read_only {
            // Nothing changes under a read-only handle: its view of the
            // directory (the files, and what recovery made in memory) is
            // checked in place.
            return verify_in(fs.as_ref(), self.path(), &mut |_| {});
        }
        let number = NEXT_CHECK.fetch_add(1, Ordering::Relaxed);
        let copy = self
            .path()
            .join(format!("verify-{}-{number}", std::process::id()));
        let checked = self
            .checkpoint(&copy)
            .and_then(|()| verify_in(fs.as_ref(), &copy, &mut |_| {}));
        let removed = remove_copy(fs.as_ref(), &copy);
        let mut report = checked?;
        removed?;
        for problem in &mut report.problems {
            if let Ok(name) = problem.path.strip_prefix(&copy) {
                problem.path = self.path().join(name);
            }
        }
        Ok(report)
    }
}

/// Removes the checkpoint `dir` (its files, then itself).
fn remove_copy(fs: &dyn crate::fs::FileSystem, dir: &Path) -> Result<()> {
    let names = match fs.list(dir) {
        Ok(names) => names,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(Error::io(dir, e)),
    };
    for name in names {
        let path = dir.join(name);
        fs.remove(&path).map_err(|e| Error::io(&path, e))?;
    }
    fs.remove_dir(dir).map_err(|e| Error::io(dir, e))
}
