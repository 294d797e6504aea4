//! The parent's check after each kill: reopen the database (recovery
//! replays the WAL), compare every key of every thread with the expected
//! state, settle the write that was in flight, close, and run
//! [`siftdb::verify`] on the closed database.
//!
//! Every acknowledged write must be there, synced or not: the engine
//! promises that a write survives a process crash once it returns (it is
//! handed to the operating system before). The one write a thread may have
//! had in flight (its active group) may be there or not, but all of it or
//! none of it.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::Context;
use siftdb::Db;

use super::compare::{self, View};
use super::expected::{self, Entry, ExpectedFile};
use super::model::{self, Divergence, Space, State, TAGS};
use super::report::Sink;

/// What a check looked at.
#[derive(Clone, Copy, Debug, Default)]
pub struct Checked {
    /// Keys compared (point reads).
    pub keys: u64,
    /// Write groups in flight at the kill that were found applied.
    pub applied: u64,
    /// Write groups in flight at the kill that were found not applied.
    pub lost: u64,
    /// Tables of the database as reopened.
    pub tables: u64,
    /// Levels holding tables.
    pub levels: u64,
}

/// Reopens the database in `dir`, checks it against the expected-state
/// files of `threads` threads of `keys` keys, records the outcome of the
/// writes in flight in those files, and verifies the closed database.
/// Divergences go to `sink`.
///
/// # Errors
/// The database cannot be reopened or read, or an expected-state file
/// cannot be read or written.
pub fn after_reopen(dir: &Path, threads: u32, keys: u32, sink: &Sink) -> anyhow::Result<Checked> {
    let path = super::db_path(dir);
    let read_only = read_only_view(&path, sink)?;
    let db = model::open_db(&path).context("cannot reopen the database")?;
    if everything(&db)? != read_only {
        sink.record(
            &Divergence::new(
                "read-only open",
                path.display().to_string(),
                "what the writable reopen reads",
                "other keys or values",
            )
            .to_string(),
        );
    }
    let mut checked = Checked::default();
    for thread in 0..threads {
        let space = Space { thread, keys };
        let file = ExpectedFile::open(&expected::path(dir, thread), keys)?;
        let mut states = file.states()?;
        if let Some(group) = file.group()? {
            match settle(&db, &space, &group)? {
                Ok((settled, applied)) => {
                    for (index, state) in settled {
                        states[index as usize] = state;
                        file.set_state(index, state)?;
                    }
                    file.end_group()?;
                    if applied {
                        checked.applied += 1;
                    } else {
                        checked.lost += 1;
                    }
                }
                Err(divergence) => {
                    // Its keys are reported; the rest is checked as stored.
                    sink.record(&format!("after reopen: {divergence}"));
                    continue;
                }
            }
        }
        check_thread(&db, &space, &states, sink)?;
        checked.keys += u64::from(keys);
    }
    let stats = db.stats();
    checked.tables = stats.levels.iter().map(|l| l.tables as u64).sum();
    checked.levels = stats.levels.iter().filter(|l| l.tables > 0).count() as u64;
    drop(db);
    let report = siftdb::verify(&path, &mut |_| {}).context("cannot verify the database")?;
    for problem in &report.problems {
        sink.record(
            &Divergence::new(
                "siftdb::verify",
                problem.path.display().to_string(),
                "no damage",
                problem.to_string(),
            )
            .to_string(),
        );
    }
    Ok(checked)
}

/// Every key and value of `db`.
fn everything(db: &Db) -> siftdb::Result<BTreeMap<Vec<u8>, Vec<u8>>> {
    db.range::<&[u8], _>(..).collect()
}

/// Every file of the directory and its size.
fn listing(path: &Path) -> anyhow::Result<BTreeMap<std::ffi::OsString, u64>> {
    let mut files = BTreeMap::new();
    for entry in std::fs::read_dir(path).context("cannot list the database")? {
        let entry = entry?;
        files.insert(entry.file_name(), entry.metadata()?.len());
    }
    Ok(files)
}

/// What a read-only open of the killed database reads (it recovers the
/// WAL into memory); a divergence if the open changed the directory.
fn read_only_view(path: &Path, sink: &Sink) -> anyhow::Result<BTreeMap<Vec<u8>, Vec<u8>>> {
    let before = listing(path)?;
    let db = model::builder(path)
        .read_only(true)
        .open()
        .context("cannot open the database read-only")?;
    let all = everything(&db)?;
    drop(db);
    if listing(path)? != before {
        sink.record(
            &Divergence::new(
                "read-only open",
                path.display().to_string(),
                "the directory left as it was",
                "files changed",
            )
            .to_string(),
        );
    }
    Ok(all)
}

/// Every key by point read, the whole key range by scan both ways, and
/// every tag by search.
fn check_thread(db: &Db, space: &Space, states: &[State], sink: &Sink) -> siftdb::Result<()> {
    let view = View::Now(db);
    let report = |found: Option<Divergence>| {
        if let Some(divergence) = found {
            sink.record(&format!("after reopen: {divergence}"));
        }
    };
    for index in 0..space.keys {
        report(compare::check_get("get", view, space, states, index)?);
    }
    report(compare::check_all("scan", view, space, states, false)?);
    report(compare::check_all("scan", view, space, states, true)?);
    for tag in 0..TAGS {
        report(compare::check_find(view, space, states, tag)?);
    }
    Ok(())
}

/// A write in flight at the kill, settled: the states of its keys, and
/// whether it was applied.
type Settled = (Vec<(u32, State)>, bool);

/// The outcome of a write in flight at the kill if the database holds all
/// of it or none of it, else the divergence.
fn settle(db: &Db, space: &Space, group: &[Entry]) -> siftdb::Result<Result<Settled, Divergence>> {
    let found: Vec<Option<Vec<u8>>> = group
        .iter()
        .map(|e| db.get(space.key(e.key)))
        .collect::<siftdb::Result<_>>()?;
    let all = |side: fn(&Entry) -> State| {
        group
            .iter()
            .zip(&found)
            .all(|(e, f)| space.matches(e.key, side(e), f.as_deref()))
    };
    let states = |side: fn(&Entry) -> State| group.iter().map(|e| (e.key, side(e))).collect();
    if all(|e| e.new) {
        return Ok(Ok((states(|e| e.new), true)));
    }
    if all(|e| e.old) {
        return Ok(Ok((states(|e| e.old), false)));
    }
    let list = |side: fn(&Entry) -> State| {
        let states: Vec<String> = group.iter().map(|e| side(e).to_string()).collect();
        format!("[{}]", states.join(", "))
    };
    let keys: Vec<String> = group
        .iter()
        .map(|e| String::from_utf8_lossy(&space.key(e.key)).into_owned())
        .collect();
    let seen: Vec<String> = group
        .iter()
        .zip(&found)
        .map(|(e, f)| space.describe(e.key, f.as_deref()))
        .collect();
    Ok(Err(Divergence::new(
        "the write in flight at the kill",
        keys.join(","),
        format!(
            "all of the old {} or all of the new {}",
            list(|e| e.old),
            list(|e| e.new)
        ),
        format!("[{}]", seen.join(", ")),
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One write of `state` to key `index` of `space`, in the database.
    fn write(db: &Db, space: &Space, index: u32, state: State) -> siftdb::Result<()> {
        if state.present() {
            db.insert(space.key(index), space.value(index, state.version()))
        } else {
            db.remove(space.key(index))
        }
    }

    /// Four threads' files and one database: thread 0 lost an
    /// acknowledged write, thread 1 has half of a batch, thread 2's write
    /// in flight was applied, thread 3's was not.
    #[test]
    fn lost_and_torn_writes_diverge_and_whole_ones_settle() -> anyhow::Result<()> {
        let dir = tempfile::tempdir()?;
        let keys = 16;
        let spaces: Vec<Space> = (0..4).map(|thread| Space { thread, keys }).collect();
        let mut files = spaces
            .iter()
            .map(|s| ExpectedFile::create(&expected::path(dir.path(), s.thread), keys))
            .collect::<anyhow::Result<Vec<_>>>()?;
        let db = model::open_db(&super::super::db_path(dir.path()))?;
        let never = State::default();
        let (v1, gone) = (never.next(true), never.next(true).next(false));
        for (space, file) in spaces.iter().zip(&files) {
            write(&db, space, 1, v1)?;
            file.set_state(1, v1)?;
        }
        // Thread 0: key 2 acknowledged, not in the database.
        files[0].set_state(2, v1)?;
        // Thread 1: a batch of keys 3 and 1 in flight; only key 3 is there.
        write(&db, &spaces[1], 3, v1)?;
        let torn = [
            Entry {
                key: 3,
                old: never,
                new: v1,
            },
            Entry {
                key: 1,
                old: v1,
                new: gone,
            },
        ];
        files[1].begin_group(&torn)?;
        // Thread 2: the same batch, applied, one state already recorded.
        write(&db, &spaces[2], 3, v1)?;
        write(&db, &spaces[2], 1, gone)?;
        files[2].begin_group(&torn)?;
        files[2].set_state(3, v1)?;
        // Thread 3: the same batch, not applied.
        files[3].begin_group(&torn)?;
        drop(db);

        let sink = Sink::default();
        let checked = after_reopen(dir.path(), 4, keys, &sink)?;
        let printed = sink.printed();
        let on = |key: &str| printed.iter().filter(|l| l.contains(key)).count();
        // The lost write: a get, two scans and the search for its tag.
        assert_eq!(
            on("s00:00002: expected v1, found absent"),
            4,
            "{printed:#?}"
        );
        assert_eq!(
            on("the write in flight at the kill: key s01:00003,s01:00001"),
            1
        );
        assert_eq!(sink.count(), 5, "{printed:#?}");
        assert_eq!((checked.applied, checked.lost), (1, 1));
        // Thread 1 is left unsettled; threads 2 and 3 are settled.
        assert!(
            ExpectedFile::open(&expected::path(dir.path(), 1), keys)?
                .group()?
                .is_some()
        );
        for (thread, state) in [(2, gone), (3, v1)] {
            let file = ExpectedFile::open(&expected::path(dir.path(), thread), keys)?;
            assert!(file.group()?.is_none());
            assert_eq!(file.states()?[1], state);
        }
        Ok(())
    }
}
