//! [`verify`]: every checksum and every filter of a database checked
//! against its table, for `sift verify`.
//!
//! Verification never writes and never stops at the first damaged file: a
//! database that [`Db::open`](crate::Db::open) refuses (a damaged manifest,
//! a flipped byte in a WAL) still gets every file it holds checked, and
//! each problem is reported with its file and offset. It holds the
//! database's lock throughout, so no compaction deletes a file under it.
//!
//! What is checked, in order: CURRENT and the manifest it names
//! ([`catalog`]); every table, against the manifest's record of it and
//! every value index leaf against the values it holds ([`table`]); every
//! WAL that recovery would replay ([`wal`]).

mod catalog;
mod table;
mod wal;

#[cfg(test)]
mod tests;

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::fs::{FileSystem, StdFs};
use crate::manifest::{FileKind, TableMeta, filenames};

use catalog::Catalog;

/// How far [`verify`] has come, reported after each file.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct VerifyProgress {
    /// Bytes of the files checked so far.
    pub bytes_done: u64,
    /// Bytes of all the files to check.
    pub bytes_total: u64,
    /// The file just checked.
    pub file: PathBuf,
}

/// What [`verify`] found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct VerifyReport {
    /// Table files checked.
    pub tables: u64,
    /// WAL files checked.
    pub logs: u64,
    /// Bytes of the files checked (CURRENT and the manifest included).
    pub bytes: u64,
    /// Damage: each is something the database cannot read back as written.
    pub problems: Vec<Problem>,
    /// Facts worth knowing that are not damage: a torn last write in the
    /// newest WAL (recovery cuts it off), files the next open deletes,
    /// checks that could not be made.
    pub notes: Vec<String>,
}

impl VerifyReport {
    /// Whether no problem was found.
    #[must_use]
    pub fn is_clean(&self) -> bool {
        self.problems.is_empty()
    }
}

/// One damaged spot: the file, the byte offset where the damage was seen
/// (when there is one), and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Problem {
    /// The damaged (or missing) file.
    pub path: PathBuf,
    /// Offset of the damage in that file, if it has one.
    pub offset: Option<u64>,
    /// What is wrong.
    pub detail: String,
}

impl fmt::Display for Problem {
    /// `path at offset N: detail`, or `path: detail` without an offset.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.offset {
            Some(offset) => write!(
                f,
                "{} at offset {offset}: {}",
                self.path.display(),
                self.detail
            ),
            None => write!(f, "{}: {}", self.path.display(), self.detail),
        }
    }
}

impl Problem {
    /// The problem an error names; `path` stands in for errors that name
    /// no file.
    fn from_error(err: Error, path: &Path) -> Self {
        match err {
            Error::Corruption {
                path,
                offset,
                detail,
            } => Self {
                path,
                offset: Some(offset),
                detail,
            },
            Error::Io { path, source } => Self {
                path,
                offset: None,
                detail: format!("I/O error: {source}"),
            },
            other => Self {
                path: path.to_path_buf(),
                offset: None,
                detail: other.to_string(),
            },
        }
    }
}

/// Problems and notes gathered while checking.
#[derive(Debug, Default)]
struct Findings {
    problems: Vec<Problem>,
    notes: Vec<String>,
}

impl Findings {
    /// Records damage in `path`.
    fn problem(&mut self, path: &Path, offset: Option<u64>, detail: impl Into<String>) {
        self.problems.push(Problem {
            path: path.to_path_buf(),
            offset,
            detail: detail.into(),
        });
    }

    /// Records the damage an error names (met while checking `path`).
    fn error(&mut self, err: Error, path: &Path) {
        self.problems.push(Problem::from_error(err, path));
    }

    /// Records a fact that is not damage.
    fn note(&mut self, note: impl Into<String>) {
        self.notes.push(note.into());
    }
}

/// Checks every file of the database at `path` without opening it for
/// writing; `progress` is called after each file. See [`verify_in`].
///
/// # Errors
/// As [`verify_in`].
pub fn verify(path: &Path, progress: &mut dyn FnMut(VerifyProgress)) -> Result<VerifyReport> {
    verify_in(&StdFs, path, progress)
}

/// [`verify`] through the given file layer.
///
/// Checks CURRENT and the manifest it names; every table the manifest
/// names (a missing one is a problem), through
/// [`TableFile::verify`](crate::TableFile::verify), against the manifest's
/// record of its size, entries, key and sequence ranges, and with every
/// leaf of a value index whose extractor is built in asked for every value
/// the table's entries hold; and every WAL the next open would replay. If
/// the manifest cannot be read, every table and WAL in the directory is
/// checked on its own. Damage is reported in
/// [`VerifyReport::problems`], never as an error.
///
/// # Errors
/// Only when verification cannot start: [`Error::InvalidArgument`] if the
/// directory holds no Sift database, [`Error::Io`] if it cannot be listed
/// or locked, [`Error::Locked`] if a process has the database open.
pub fn verify_in(
    fs: &dyn FileSystem,
    path: &Path,
    progress: &mut dyn FnMut(VerifyProgress),
) -> Result<VerifyReport> {
    let names = list(fs, path)?;
    // Look before locking: the lock file would be created in any
    // directory, Sift's or not.
    if !names.iter().any(|name| {
        matches!(
            filenames::parse(name),
            Some(FileKind::Current | FileKind::Manifest(_) | FileKind::Table(_) | FileKind::Wal(_))
        )
    }) {
        return Err(Error::InvalidArgument(format!(
            "{} is not a Sift database: it has no CURRENT, manifest, table or WAL",
            path.display()
        )));
    }
    let lock_path = path.join(filenames::LOCK);
    let _guard = fs
        .try_lock(&lock_path)
        .map_err(|e| Error::io(&lock_path, e))?
        .ok_or_else(|| Error::Locked {
            path: path.to_path_buf(),
        })?;
    // Listed again: only now can nothing change it.
    let names = list(fs, path)?;
    let mut findings = Findings::default();
    let (manifest, catalog) = catalog::read(fs, path, &names, &mut findings);
    let plan = Plan::new(
        path,
        &names,
        manifest.as_deref(),
        catalog.as_ref(),
        &mut findings,
    );

    let sizes: Vec<u64> = plan.tables.iter().map(|(p, _)| size(fs, p)).collect();
    let wal_sizes: Vec<u64> = plan.wals.iter().map(|(p, _)| size(fs, p)).collect();
    let read_bytes: u64 = plan.read.iter().map(|p| size(fs, p)).sum();
    let bytes_total = read_bytes + sizes.iter().sum::<u64>() + wal_sizes.iter().sum::<u64>();
    let mut report = VerifyReport {
        bytes: bytes_total,
        ..VerifyReport::default()
    };
    let mut bytes_done = read_bytes;
    let mut done = |file: &Path, bytes: u64| {
        bytes_done += bytes;
        progress(VerifyProgress {
            bytes_done,
            bytes_total,
            file: file.to_path_buf(),
        });
    };
    if let Some(last) = plan.read.last() {
        done(last, 0);
    }

    let indexes = catalog.as_ref().map_or(&[][..], |c| &c.indexes[..]);
    let mut leaves = table::LeafCheck::new(indexes);
    for ((path, meta), bytes) in plan.tables.iter().zip(sizes) {
        table::check(fs, path, meta.as_ref(), &mut leaves, &mut findings);
        report.tables += 1;
        done(path, bytes);
    }
    leaves.finish(&mut findings);
    // The WALs must continue the manifest's sequence numbers, as recovery
    // requires.
    let mut next_seq = catalog.as_ref().map(|c| c.last_seq + 1);
    for ((path, newest), bytes) in plan.wals.iter().zip(wal_sizes) {
        wal::check(fs, path, *newest, &mut next_seq, &mut findings);
        report.logs += 1;
        done(path, bytes);
    }
    report.problems = findings.problems;
    report.notes = findings.notes;
    Ok(report)
}

/// The names in `dir`.
fn list(fs: &dyn FileSystem, dir: &Path) -> Result<Vec<String>> {
    let mut names = fs.list(dir).map_err(|e| Error::io(dir, e))?;
    names.sort_unstable();
    Ok(names)
}

/// Size of `path`; 0 when it cannot be opened (checking it reports why).
fn size(fs: &dyn FileSystem, path: &Path) -> u64 {
    fs.open(path).and_then(|f| f.size()).unwrap_or(0)
}

/// Which files to check.
#[derive(Debug, Default)]
struct Plan {
    /// Files already read by [`catalog::read`] (CURRENT, the manifest).
    read: Vec<PathBuf>,
    /// Tables by number, with the manifest's record where there is one.
    tables: Vec<(PathBuf, Option<TableMeta>)>,
    /// WALs by number, with whether each is the newest (the only one a
    /// crash may have cut).
    wals: Vec<(PathBuf, bool)>,
}

impl Plan {
    /// The files of `names` to check, given the manifest CURRENT names and
    /// what it says (if it could be read); notes the files the next open
    /// would delete, and reports the tables and the WAL the manifest needs
    /// that are missing.
    fn new(
        dir: &Path,
        names: &[String],
        manifest: Option<&Path>,
        catalog: Option<&Catalog>,
        out: &mut Findings,
    ) -> Self {
        let mut plan = Self::default();
        if names.iter().any(|n| n == filenames::CURRENT) {
            plan.read.push(dir.join(filenames::CURRENT));
        }
        let mut tables = BTreeMap::new();
        let mut wals = BTreeMap::new();
        for name in names {
            let path = dir.join(name);
            match filenames::parse(name) {
                Some(FileKind::Table(n)) => match catalog {
                    None => {
                        tables.insert(n, (path, None));
                    }
                    Some(c) => match c.tables.get(&n) {
                        Some(meta) => {
                            tables.insert(n, (path, Some(meta.clone())));
                        }
                        None => out.note(format!(
                            "{name}: a table the manifest does not name (an orphan the next open \
                             deletes); not checked"
                        )),
                    },
                },
                Some(FileKind::Wal(n)) => match catalog {
                    Some(c) if n < c.log_number => out.note(format!(
                        "{name}: a WAL older than the manifest's oldest needed WAL ({}); the next \
                         open deletes it; not checked",
                        filenames::wal(c.log_number)
                    )),
                    _ => {
                        wals.insert(n, path);
                    }
                },
                Some(FileKind::Manifest(_)) => match manifest {
                    Some(live) if live == path => plan.read.push(path),
                    Some(live) => out.note(format!(
                        "{name}: not the live manifest ({}); the next open deletes it; not checked",
                        live.display()
                    )),
                    None => out.note(format!(
                        "{name}: a manifest, not checked (CURRENT names none that can be read)"
                    )),
                },
                Some(FileKind::Temp) => out.note(format!(
                    "{name}: a temporary file left by an interrupted write; the next open \
                     deletes it"
                )),
                Some(FileKind::Current | FileKind::Lock) => {}
                None => out.note(format!("{name}: not a Sift file; ignored")),
            }
        }
        if let Some(c) = catalog {
            for (&n, meta) in &c.tables {
                if !tables.contains_key(&n) {
                    let path = dir.join(filenames::table(n));
                    out.problem(
                        &path,
                        None,
                        format!(
                            "the manifest names this level-{} table, but it does not exist",
                            meta.level
                        ),
                    );
                }
            }
            if c.log_number > 0 && !wals.contains_key(&c.log_number) {
                out.problem(
                    &c.manifest,
                    None,
                    format!(
                        "the manifest needs WAL {} which is missing: its newest edits are lost",
                        filenames::wal(c.log_number)
                    ),
                );
            }
        }
        plan.tables = tables.into_values().collect();
        let newest = wals.keys().next_back().copied();
        plan.wals = wals
            .into_iter()
            .map(|(n, path)| (path, Some(n) == newest))
            .collect();
        plan
    }
}
