//! The expected-state file of one worker thread, as RocksDB's db_stress
//! keeps with `--expected_values_dir`: what the thread's keys must hold,
//! written so that it survives the process being killed.
//!
//! Every write is recorded as a *group* (one key for a put or a delete,
//! every key of a batch or a transaction):
//!
//! 1. [`ExpectedFile::begin_group`]: each key's old and new [`State`], then
//!    the group's header marked active;
//! 2. the write to the database;
//! 3. once acknowledged, [`ExpectedFile::set_state`] for each key, then
//!    [`ExpectedFile::end_group`] (or only `end_group` when the write is
//!    known not to have happened: a transaction's conflict).
//!
//! After a kill, a key outside the active group must hold its stored
//! state; the keys of the active group must all hold their old state or
//! all their new one (a write batch is atomic).
//!
//! Plain `pwrite`s, no `fsync`: a killed process's writes stay in the page
//! cache, which is all a process kill tests. Writes of one group header or
//! one state are 16 or 8 bytes within a page, so a kill cannot tear them;
//! entries are written before the header that makes them count.
//!
//! Layout (little-endian throughout):
//!
//! | offset | bytes | field |
//! |---|---|---|
//! | 0 | 8 | magic `SIFTXST1` |
//! | 8 | 8 | format version (1) |
//! | 16 | 8 | keys |
//! | 64 | 8 x 32 | counters ([`Counts`]) |
//! | 4096 | 4 | group: key count |
//! | 4100 | 4 | group: 1 if active |
//! | 4104 | 8 | group: sequence number (debugging) |
//! | 4112 | 24 x n | group entries: key, old state, new state (8 bytes each) |
//! | 8192 | 8 x keys | state of each key |

use std::fs::{File, OpenOptions};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};

use super::counts::Counts;
use super::model::State;

const MAGIC: &[u8; 8] = b"SIFTXST1";
const FORMAT_VERSION: u64 = 1;
const KEYS_AT: u64 = 16;
const COUNTERS_AT: u64 = 64;
/// Room for counters: new kinds can be added without a new format.
const MAX_COUNTERS: usize = 32;
const GROUP_AT: u64 = 4096;
const ENTRIES_AT: u64 = GROUP_AT + 16;
const ENTRY_BYTES: u64 = 24;
/// Most keys a group holds: its entries must fit in the group's page.
pub const MAX_GROUP: usize = 128;
const STATES_AT: u64 = 8192;

const _: () = assert!(COUNTERS_AT as usize + 8 * MAX_COUNTERS <= GROUP_AT as usize);
const _: () = assert!(ENTRIES_AT + ENTRY_BYTES * MAX_GROUP as u64 <= STATES_AT);
const _: () = assert!(super::counts::Kind::ALL.len() <= MAX_COUNTERS);

/// One key of a write group.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Entry {
    /// The key's index in its thread's space.
    pub key: u32,
    /// Its state before the write.
    pub old: State,
    /// Its state after the write.
    pub new: State,
}

/// An open expected-state file.
#[derive(Debug)]
pub struct ExpectedFile {
    file: File,
    path: PathBuf,
    keys: u32,
    /// Groups begun through this handle (numbers them in the file).
    groups: u64,
}

/// The file of `thread` in the run's directory.
pub fn path(dir: &Path, thread: u32) -> PathBuf {
    dir.join(format!("expected-{thread:02}.bin"))
}

impl ExpectedFile {
    /// Creates the file for `keys` keys, every one never written.
    pub fn create(path: &Path, keys: u32) -> anyhow::Result<Self> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(path)
            .with_context(|| format!("cannot create {}", path.display()))?;
        let this = Self {
            file,
            path: path.to_path_buf(),
            keys,
            groups: 0,
        };
        this.write(0, MAGIC)?;
        this.write(8, &FORMAT_VERSION.to_le_bytes())?;
        this.write(KEYS_AT, &u64::from(keys).to_le_bytes())?;
        this.file
            .set_len(STATES_AT + 8 * u64::from(keys))
            .with_context(|| format!("cannot size {}", path.display()))?;
        Ok(this)
    }

    /// Opens a file made by [`ExpectedFile::create`] for `keys` keys.
    pub fn open(path: &Path, keys: u32) -> anyhow::Result<Self> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .open(path)
            .with_context(|| format!("cannot open {}", path.display()))?;
        let this = Self {
            file,
            path: path.to_path_buf(),
            keys,
            groups: 0,
        };
        let mut header = [0; 24];
        this.read(0, &mut header)?;
        let word =
            |at: usize| u64::from_le_bytes(header[at..at + 8].try_into().unwrap_or_default());
        if &header[..8] != MAGIC || word(8) != FORMAT_VERSION || word(16) != u64::from(keys) {
            bail!(
                "{} is not an expected-state file (format {FORMAT_VERSION}) for {keys} keys",
                path.display()
            );
        }
        Ok(this)
    }

    /// The stored state of every key.
    pub fn states(&self) -> anyhow::Result<Vec<State>> {
        let mut bytes = vec![0; 8 * self.keys as usize];
        self.read(STATES_AT, &mut bytes)?;
        Ok(bytes
            .chunks_exact(8)
            .map(|w| State::from_word(u64::from_le_bytes(w.try_into().unwrap_or_default())))
            .collect())
    }

    /// Stores the state of key `key`.
    pub fn set_state(&self, key: u32, state: State) -> anyhow::Result<()> {
        anyhow::ensure!(key < self.keys, "key {key} out of 0..{}", self.keys);
        self.write(STATES_AT + 8 * u64::from(key), &state.word().to_le_bytes())
    }

    /// Records a write about to be made: its entries, then the active
    /// header.
    pub fn begin_group(&mut self, entries: &[Entry]) -> anyhow::Result<()> {
        anyhow::ensure!(
            entries.len() <= MAX_GROUP,
            "a group of {} keys",
            entries.len()
        );
        let mut bytes = Vec::with_capacity(entries.len() * ENTRY_BYTES as usize);
        for e in entries {
            bytes.extend_from_slice(&u64::from(e.key).to_le_bytes());
            bytes.extend_from_slice(&e.old.word().to_le_bytes());
            bytes.extend_from_slice(&e.new.word().to_le_bytes());
        }
        self.write(ENTRIES_AT, &bytes)?;
        self.groups += 1;
        let mut header = [0; 16];
        header[..4].copy_from_slice(&(entries.len() as u32).to_le_bytes());
        header[4..8].copy_from_slice(&1u32.to_le_bytes());
        header[8..].copy_from_slice(&self.groups.to_le_bytes());
        self.write(GROUP_AT, &header)
    }

    /// Marks the active group done.
    pub fn end_group(&self) -> anyhow::Result<()> {
        self.write(GROUP_AT + 4, &0u32.to_le_bytes())
    }

    /// The active group, if a write was in flight when the writer stopped.
    pub fn group(&self) -> anyhow::Result<Option<Vec<Entry>>> {
        let mut header = [0; 8];
        self.read(GROUP_AT, &mut header)?;
        let count = u32::from_le_bytes([header[0], header[1], header[2], header[3]]) as usize;
        if u32::from_le_bytes([header[4], header[5], header[6], header[7]]) == 0 {
            return Ok(None);
        }
        if count > MAX_GROUP {
            bail!("{}: a group of {count} keys", self.path.display());
        }
        let mut bytes = vec![0; count * ENTRY_BYTES as usize];
        self.read(ENTRIES_AT, &mut bytes)?;
        let word = |chunk: &[u8], at: usize| {
            u64::from_le_bytes(chunk[at..at + 8].try_into().unwrap_or_default())
        };
        let mut entries = Vec::with_capacity(count);
        for chunk in bytes.chunks_exact(ENTRY_BYTES as usize) {
            let key = word(chunk, 0);
            if key >= u64::from(self.keys) {
                bail!("{}: group entry for key {key}", self.path.display());
            }
            entries.push(Entry {
                key: key as u32,
                old: State::from_word(word(chunk, 8)),
                new: State::from_word(word(chunk, 16)),
            });
        }
        Ok(Some(entries))
    }

    /// The stored counters.
    pub fn counts(&self) -> anyhow::Result<Counts> {
        let mut counts = Counts::default();
        let mut bytes = vec![0; 8 * counts.0.len()];
        self.read(COUNTERS_AT, &mut bytes)?;
        for (slot, word) in counts.0.iter_mut().zip(bytes.chunks_exact(8)) {
            *slot = u64::from_le_bytes(word.try_into().unwrap_or_default());
        }
        Ok(counts)
    }

    /// Stores the counters.
    pub fn store_counts(&self, counts: &Counts) -> anyhow::Result<()> {
        let bytes: Vec<u8> = counts.0.iter().flat_map(|c| c.to_le_bytes()).collect();
        self.write(COUNTERS_AT, &bytes)
    }

    fn write(&self, offset: u64, bytes: &[u8]) -> anyhow::Result<()> {
        self.file
            .write_all_at(bytes, offset)
            .with_context(|| format!("cannot write {}", self.path.display()))
    }

    fn read(&self, offset: u64, bytes: &mut [u8]) -> anyhow::Result<()> {
        self.file
            .read_exact_at(bytes, offset)
            .with_context(|| format!("cannot read {}", self.path.display()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stress::counts::Kind;

    #[test]
    fn states_groups_and_counts_round_trip() -> anyhow::Result<()> {
        let dir = tempfile::tempdir()?;
        let at = path(dir.path(), 1);
        let mut file = ExpectedFile::create(&at, 10)?;
        assert!(file.states()?.iter().all(|s| *s == State::default()));
        assert_eq!(file.group()?, None);
        let put = State::default().next(true);
        let entries = [
            Entry {
                key: 3,
                old: State::default(),
                new: put,
            },
            Entry {
                key: 9,
                old: put,
                new: put.next(false),
            },
        ];
        file.begin_group(&entries)?;
        file.set_state(3, put)?;
        let mut counts = Counts::default();
        counts.add(Kind::Batch, 5);
        file.store_counts(&counts)?;
        drop(file);

        let file = ExpectedFile::open(&at, 10)?;
        assert_eq!(file.group()?.as_deref(), Some(&entries[..]));
        assert_eq!(file.states()?[3], put);
        assert_eq!(file.counts()?, counts);
        file.end_group()?;
        assert_eq!(file.group()?, None);
        assert!(ExpectedFile::open(&at, 11).is_err());
        Ok(())
    }
}
