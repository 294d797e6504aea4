//! Opening a database: lock, manifest replay, WAL replay, cleanup.
//!
//! Recovery never modifies what it reads until a new, complete state is
//! durable: a new manifest recording the manifest's state is installed
//! through CURRENT; WAL contents are written to level-0 tables as replay
//! goes, a memtable's worth at a time, each logged with its last sequence
//! number but not the log number; only once replay is done does an edit
//! retire the replayed WALs, and only then are old WALs and manifests
//! deleted. A crash at any point leaves a state from which replay repeats
//! (`wal_replay.rs`).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64};
use std::sync::{Arc, Condvar, Mutex, RwLock};

use arc_swap::ArcSwap;

use crate::compaction::OutputRun;
use crate::error::{Error, Result};
use crate::fs::{FileSystem, ReadOnlyFs, link_or_copy};
use crate::key::SeqNo;
use crate::log::{LogKind, LogWriter};
use crate::manifest::{FileKind, VersionEdit, filenames, read_current, replay_manifest};
use crate::memtable::Memtable;
use crate::options::CompactionStyle;
use crate::sstable::{BlockCache, OpenFiles};
use crate::value_def::IndexRecord;
use crate::version::{LiveTable, Residency, SharedTables, Start, Version, VersionSet};

use super::builder::Options;
use super::counters::Counters;
use super::{Db, Inner, State, SuperVersion, Writer, background, wal_replay};

/// The manifest's record of the compaction style a database was created with.
pub(super) fn style_tag(style: &CompactionStyle) -> u8 {
    match style {
        CompactionStyle::Leveled { .. } => 0,
        CompactionStyle::Tiered { .. } => 1,
    }
}

/// What replaying the manifest yields.
struct Recovered {
    version: Version,
    /// The manifest CURRENT named (empty for a new database).
    manifest_name: String,
    next_file_number: u64,
    log_number: u64,
    last_seq: SeqNo,
    /// The live value indexes.
    indexes: Vec<IndexRecord>,
}

impl Db {
    pub(super) fn open_with(mut options: Options) -> Result<Self> {
        if options.read_only {
            options.fs = Arc::new(ReadOnlyFs::new(Arc::clone(&options.fs)));
            options.background_threads = false;
        }
        let fs = Arc::clone(&options.fs);
        let dir = options.path.clone();
        fs.create_dir_all(&dir).map_err(|e| Error::io(&dir, e))?;
        let lock_path = dir.join(filenames::LOCK);
        let guard = fs
            .try_lock(&lock_path)
            .map_err(|e| Error::io(&lock_path, e))?
            .ok_or_else(|| Error::Locked { path: dir.clone() })?;
        if options.direct_reads {
            // The lock file lives where the tables do: a file system that
            // cannot read it directly fails the open, not a later read.
            fs.open_direct(&lock_path)
                .map_err(|e| Error::io(&lock_path, e))?;
        }
        let cache = Arc::new(BlockCache::new(options.block_cache_bytes));
        let tables = Arc::new(SharedTables {
            fs: Arc::clone(&fs),
            files: Arc::new(OpenFiles::new(
                Arc::clone(&fs),
                options.max_open_files,
                options.direct_reads,
            )),
            residency: Arc::new(Residency::new(
                options.filter_memory_bytes,
                Arc::clone(&cache),
            )),
            cache,
        });
        // One listing serves the open: what it finds is what the manifest,
        // the WALs and the obsolete files are checked against (files
        // created later by this open are all live).
        let names = fs.list(&dir).map_err(|e| Error::io(&dir, e))?;
        let mut recovered = recover_version(&options, &tables, &names)?;
        if options.read_only && recovered.manifest_name.is_empty() {
            return Err(Error::InvalidArgument(format!(
                "{} holds no database to open read-only",
                dir.display()
            )));
        }
        recovered.indexes = crate::db::value::resolve(
            &options,
            &recovered.version,
            std::mem::take(&mut recovered.indexes),
            &mut recovered.next_file_number,
        )?;

        // The WALs the manifest does not cover.
        let mut wals: Vec<u64> = names
            .iter()
            .filter_map(|name| match filenames::parse(name) {
                Some(FileKind::Wal(n)) if n >= recovered.log_number => Some(n),
                _ => None,
            })
            .collect();
        wals.sort_unstable();
        if recovered.log_number > 0 && !wals.contains(&recovered.log_number) {
            // The WAL an edit names is deleted only after a later edit
            // supersedes it: the manifest lost its newest edits.
            return Err(Error::corruption(
                dir.join(&recovered.manifest_name),
                0,
                format!(
                    "the manifest needs WAL {} which is missing: its newest edits are lost",
                    filenames::wal(recovered.log_number)
                ),
            ));
        }
        // The new WAL comes after every old one.
        recovered.next_file_number = recovered
            .next_file_number
            .max(wals.last().map_or(0, |n| n + 1));
        let (mode, memtable_bytes) = (options.wal_recovery, options.memtable_bytes);
        let last_seq = recovered.last_seq;

        // Replay them, each full memtable flushed as it fills: recovery
        // holds one memtable, whatever the WALs' size.
        let mut inner = Inner::assemble(options, tables, guard, recovered)?;
        let mut flush = |memtable: &Memtable| inner.flush_recovered(memtable);
        let sink = wal_replay::Sink::new(memtable_bytes, &mut flush);
        let replay = wal_replay::replay_wals(fs.as_ref(), &dir, &wals, last_seq, mode, sink)?;
        keep_damaged_wals(fs.as_ref(), &dir, &replay.dropped)?;
        // What replay found, set before anything else sees `inner`.
        inner.wal_recovery = replay.stopped;
        *inner.visible_seq.get_mut() = replay.last_seq;
        super::lock(&inner.writer).last_seq = replay.last_seq;
        let inner = Arc::new(inner);

        inner.start_fresh_manifest()?;
        inner.delete_obsolete_files(&names)?;
        let threads = if inner.options.background_threads {
            background::spawn(&inner)?
        } else {
            Vec::new()
        };
        Ok(Self { inner, threads })
    }
}

/// Keeps WALs `numbers`, whose records point-in-time recovery dropped,
/// under names no open replays or removes ([`filenames::damaged_wal`]),
/// before the new manifest retires them: what could not be replayed is
/// kept for a person (or a better tool) to look at.
fn keep_damaged_wals(fs: &dyn FileSystem, dir: &Path, numbers: &[u64]) -> Result<()> {
    for &number in numbers {
        let kept = dir.join(filenames::damaged_wal(number));
        match link_or_copy(fs, &dir.join(filenames::wal(number)), &kept) {
            // Kept by an earlier open that stopped before retiring it.
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
            linked => linked.map_err(|e| Error::io(&kept, e))?,
        }
    }
    if !numbers.is_empty() {
        fs.sync_dir(dir).map_err(|e| Error::io(dir, e))?;
    }
    Ok(())
}

/// Replays CURRENT's manifest (or starts an empty version for a new
/// database); its tables are read at first use.
fn recover_version(
    options: &Options,
    tables: &Arc<SharedTables>,
    names: &[String],
) -> Result<Recovered> {
    let fs = options.fs.as_ref();
    let dir = &options.path;
    let Some(manifest_name) = read_current(fs, dir)? else {
        // A new database. A manifest without CURRENT is one whose creation
        // was cut short (the first manifest is written before CURRENT names
        // it, and no write is acknowledged before that): it is started
        // again, the stray manifest deleted as obsolete, and any WAL
        // replayed. Tables without CURRENT are data whose manifest is lost.
        if names
            .iter()
            .any(|n| matches!(filenames::parse(n), Some(FileKind::Table(_))))
        {
            return Err(Error::corruption(
                dir.join(filenames::CURRENT),
                0,
                "CURRENT is missing but the directory holds tables",
            ));
        }
        return Ok(Recovered {
            version: Version::default(),
            manifest_name: String::new(),
            next_file_number: 1,
            log_number: 0,
            last_seq: 0,
            indexes: Vec::new(),
        });
    };
    let state = replay_manifest(fs, dir, &manifest_name)?;
    let manifest_path = dir.join(&manifest_name);
    if let Some(tag) = state.compaction_style
        && tag != style_tag(&options.compaction)
    {
        return Err(Error::InvalidArgument(format!(
            "the database was created with {} compaction; open it with the same style",
            if tag == 0 { "leveled" } else { "tiered" }
        )));
    }
    if let Some(overlap) = state.overlapping_runs().into_iter().next() {
        return Err(Error::corruption(&manifest_path, 0, overlap));
    }
    // Tables are read at first use (`version::residency`): open checks
    // only that each file the manifest names exists, in the listing.
    let present: BTreeSet<&str> = names.iter().map(String::as_str).collect();
    let mut live = Vec::with_capacity(state.tables.len());
    for meta in state.tables.into_values() {
        let name = filenames::table(meta.id);
        let path = dir.join(&name);
        if !present.contains(name.as_str()) {
            return Err(Error::corruption(
                &manifest_path,
                0,
                format!("names table {} which is missing", path.display()),
            ));
        }
        live.push(Arc::new(LiveTable::new(meta, path, tables)));
    }
    let version = Version::of_tables(live);
    Ok(Recovered {
        version,
        manifest_name,
        next_file_number: state.next_file_number,
        log_number: state.log_number,
        last_seq: state.last_seq,
        indexes: state.indexes,
    })
}

impl Inner {
    fn assemble(
        options: Options,
        tables: Arc<SharedTables>,
        guard: Box<dyn crate::fs::LockGuard>,
        recovered: Recovered,
    ) -> Result<Self> {
        let fs = Arc::clone(&options.fs);
        let wal_number = recovered.next_file_number;
        let wal_path = options.path.join(filenames::wal(wal_number));
        let wal = LogWriter::create(fs.as_ref(), &wal_path, LogKind::Wal)?;
        // A new manifest records the recovered state (its CURRENT update
        // also makes the new WAL's name durable); `start_fresh_manifest`
        // then retires the replayed WALs.
        let versions = VersionSet::create(
            Arc::clone(&fs),
            options.path.clone(),
            &Start {
                version: &recovered.version,
                indexes: &recovered.indexes,
                next_file_number: wal_number + 1,
                log_number: recovered.log_number,
                last_seq: recovered.last_seq,
                compaction_style: style_tag(&options.compaction),
            },
        )?;
        Ok(Self {
            tables,
            counters: Counters::default(),
            visible_seq: AtomicU64::new(recovered.last_seq),
            current: ArcSwap::from_pointee(SuperVersion {
                active: Arc::new(Memtable::with_postings(wal_number, &recovered.indexes)),
                immutables: Vec::new(),
                version: Arc::new(recovered.version),
            }),
            write_queue: Default::default(),
            writer: Mutex::new(Writer {
                wal,
                last_seq: recovered.last_seq,
                delay_debt: 0,
                txns: crate::txn::CommitLog::new(options.txn_history_bytes, options.txn_precheck),
            }),
            state: Mutex::new(State {
                versions,
                background_error: None,
                shutting_down: false,
                compactions: Vec::new(),
                jobs: 0,
            }),
            changed: Condvar::new(),
            generation: AtomicU64::new(0),
            snapshots: Mutex::new(BTreeMap::new()),
            compaction_lock: RwLock::new(()),
            flush_lock: Mutex::new(()),
            failed: AtomicBool::new(false),
            indexes: ArcSwap::from_pointee(recovered.indexes),
            value_leaves: crate::db::value::IndexLeaves::new(options.value_index_order),
            txn_counters: crate::txn::TxnCounters::default(),
            // Set once the WALs are replayed.
            wal_recovery: None,
            options,
            _lock: guard,
        })
    }

    /// Writes a memtable of replayed WAL records to a level-0 table. The
    /// edit carries no log number: the WALs stay until replay is done.
    fn flush_recovered(&self, replayed: &Memtable) -> Result<()> {
        let current = self.current();
        let entries = replayed.entries();
        let projected =
            super::flush::projected_entries(&current.version, 0, replayed.len() as u64, []);
        let outputs = self.write_tables(
            entries,
            0,
            OutputRun::New,
            None,
            &super::flush::FilterSizing::by_level(projected),
            u64::MAX,
            super::flush::TableJob::Flush,
        )?;
        let mut state = super::lock(&self.state);
        let edit = VersionEdit {
            added: outputs.metas,
            last_seq: Some(replayed.max_seq()),
            ..VersionEdit::default()
        };
        let version = self.log_and_apply(&mut state, edit, &outputs.opened)?;
        self.install(SuperVersion {
            active: Arc::clone(&current.active),
            immutables: Vec::new(),
            version,
        });
        Ok(())
    }

    /// Records that every WAL before the active one is no longer needed.
    fn start_fresh_manifest(&self) -> Result<()> {
        let mut state = super::lock(&self.state);
        let log_number = self.current().active.wal_number();
        let edit = VersionEdit {
            log_number: Some(log_number),
            last_seq: Some(self.visible_seq()),
            ..VersionEdit::default()
        };
        let version = self.log_and_apply(&mut state, edit, &BTreeMap::new())?;
        let current = self.current();
        self.install(SuperVersion {
            active: Arc::clone(&current.active),
            immutables: Vec::new(),
            version,
        });
        Ok(())
    }

    /// Deletes, among `names` (the directory as the open found it), the
    /// files no version needs: old WALs and manifests, tables left by an
    /// interrupted flush or compaction, temporary files. One gone already
    /// is not an error: a `CURRENT.tmp` left by a cut-short creation is
    /// written again and renamed by the open's new manifest.
    fn delete_obsolete_files(&self, names: &[String]) -> Result<()> {
        let dir = &self.options.path;
        let fs = self.options.fs.as_ref();
        let live: BTreeSet<u64> = self.current().version.tables().map(|t| t.meta.id).collect();
        let state = super::lock(&self.state);
        let manifest = state.versions.manifest_name();
        let log_number = state.versions.log_number();
        drop(state);
        for name in names {
            let obsolete = match filenames::parse(name) {
                Some(FileKind::Wal(n)) => n < log_number,
                Some(FileKind::Table(n)) => !live.contains(&n),
                Some(FileKind::Manifest(_)) => *name != manifest,
                Some(FileKind::Temp) => true,
                _ => false,
            };
            if obsolete {
                let path = dir.join(name);
                match fs.remove(&path) {
                    Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                        return Err(Error::io(&path, e));
                    }
                    _ => {}
                }
            }
        }
        Ok(())
    }
}
