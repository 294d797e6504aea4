//! Crash-state exploration, as ALICE does it: a workload of writes,
//! batches, transactions, flushes, WAL rotations, compactions and an index
//! backfill runs on a lying disk, and at every sync point (each file sync
//! and directory sync, before it takes effect) several states a disk may
//! hold after a power cut there are drawn (`FaultInjectionFs::crash_image`)
//! and opened. For every state:
//! - the database opens;
//! - it holds the state after some prefix of the workload's writes, so
//!   nothing that was never written appears, and each batch and each
//!   transaction is whole or absent;
//! - that prefix includes every write acknowledged as durable: a synced
//!   write, or any write before a completed flush, compaction or
//!   `persist`;
//! - searches by value agree with that state, and the database takes a
//!   write and reopens.

#![expect(
    clippy::unwrap_used,
    reason = "test helpers fail the test on any error, like the #[test] fns clippy already exempts"
)]

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use siftdb::fs::{FaultInjectionFs, SyncPoint};
use siftdb::{CompactionStyle, Db, Extractor, IndexDef, PersistMode, WriteBatch, WriteOptions};

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

const DIR: &str = "/db";

/// Crash states drawn at each sync point: the sure one (seed 0) and
/// images that keep more.
const IMAGES_PER_SYNC_POINT: u64 = 4;

/// Colours a value's first field takes: the value index's values.
const COLOURS: [&str; 4] = ["red", "green", "blue", "grey"];

fn builder(fs: &FaultInjectionFs) -> siftdb::DbBuilder {
    Db::builder(DIR)
        .file_system(Arc::new(fs.clone()))
        .memtable_bytes(4096)
        .max_immutable_memtables(1)
        .table_target_bytes(4096)
        .block_bytes(256)
        .compaction_style(CompactionStyle::Leveled {
            l0_trigger: 2,
            size_ratio: 3,
            l1_bytes: 8 << 10,
        })
        .sync_writes(true)
        .background_threads(false)
}

/// One step of the workload.
#[derive(Debug, Clone)]
enum Step {
    /// A write batch (one operation or several), synced or not.
    Write(Vec<(Vec<u8>, Option<Vec<u8>>)>, bool),
    /// A transaction writing these keys (commits are synced).
    Txn(Vec<(Vec<u8>, Option<Vec<u8>>)>),
    Flush,
    Compact,
    Persist,
    AddIndex,
}

/// xorshift64*: the workload is fixed by its seed.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) % n
    }
}

fn workload(seed: u64, steps: usize) -> Vec<Step> {
    let mut rng = Rng(seed | 1);
    let ops = |rng: &mut Rng, n: u64, at: usize| -> Vec<(Vec<u8>, Option<Vec<u8>>)> {
        (0..n)
            .map(|i| {
                let key = format!("key{:03}", rng.below(60)).into_bytes();
                let value = (rng.below(5) > 0).then(|| {
                    let colour = COLOURS[rng.below(4) as usize];
                    format!("{colour},{at}.{i},")
                        .repeat(1 + rng.below(6) as usize)
                        .into_bytes()
                });
                (key, value)
            })
            .collect()
    };
    (0..steps)
        .map(|at| match rng.below(40) {
            0 => Step::Flush,
            1 => Step::Compact,
            2 => Step::Persist,
            3 if at > steps / 3 && at < steps / 2 => Step::AddIndex,
            4..=9 => {
                let n = 1 + rng.below(4);
                Step::Txn(ops(&mut rng, n, at))
            }
            10..=19 => {
                let n = 2 + rng.below(5);
                let sync = rng.below(2) == 0;
                Step::Write(ops(&mut rng, n, at), sync)
            }
            _ => {
                let sync = rng.below(3) == 0;
                Step::Write(ops(&mut rng, 1, at), sync)
            }
        })
        .collect()
}

/// The model after each prefix of the workload's writes: `states[j]` is
/// the state after its first `j` writes (batches and transactions).
fn states(steps: &[Step]) -> Vec<Model> {
    let mut model = Model::new();
    let mut states = vec![model.clone()];
    for step in steps {
        if let Step::Write(ops, _) | Step::Txn(ops) = step {
            for (key, value) in ops {
                match value {
                    Some(value) => model.insert(key.clone(), value.clone()),
                    None => model.remove(key),
                };
            }
            states.push(model.clone());
        }
    }
    states
}

/// How far the workload has come, for the sync hook.
#[derive(Default)]
struct Progress {
    /// Writes that returned.
    done: AtomicUsize,
    /// Writes a power cut may not lose: every write before the last
    /// completed synced write, flush, compaction or `persist`.
    durable: AtomicUsize,
    /// Whether `add_index` returned: the index must then survive.
    index_added: AtomicUsize,
}

/// Everything the hook checks against, and what it found.
struct Explorer {
    states: Vec<Model>,
    progress: Progress,
    explored: AtomicUsize,
    failures: Mutex<Vec<String>>,
}

impl Explorer {
    /// Opens one crash state and checks it; `Err` says what is wrong.
    fn check(
        &self,
        image: &FaultInjectionFs,
        lowest: usize,
        highest: usize,
        index: bool,
    ) -> Result<(), String> {
        let db = builder(image)
            .open()
            .map_err(|e| format!("does not open: {e}"))?;
        let found: Model = db
            .range::<Vec<u8>, _>(..)
            .collect::<Result<_, _>>()
            .map_err(|e| format!("scan fails: {e}"))?;
        let Some(prefix) = (lowest..=highest).find(|&j| self.states[j] == found) else {
            let any = self.states.iter().position(|s| *s == found);
            let recovery = db.stats().wal_recovery;
            return Err(match any {
                Some(j) => format!(
                    "holds the state after {j} writes, outside {lowest}..={highest} \
                     (WAL recovery: {recovery:?})"
                ),
                None => "holds a state after no prefix of the writes".to_owned(),
            });
        };
        for key in found.keys().take(5) {
            let got = db.get(key).map_err(|e| e.to_string())?;
            if got.as_ref() != found.get(key) {
                return Err(format!("get disagrees with the scan for {key:?}"));
            }
        }
        let has_index = db.indexes().iter().any(|i| i.name == "colour");
        if index && !has_index {
            return Err("the index added before the crash is gone".to_owned());
        }
        if has_index {
            db.wait_for_backfill().map_err(|e| e.to_string())?;
            for colour in COLOURS {
                let mut keys: Vec<Vec<u8>> = db
                    .find_keys("colour", colour)
                    .map_err(|e| e.to_string())?
                    .collect::<Result<_, _>>()
                    .map_err(|e| e.to_string())?;
                keys.sort();
                let expected: Vec<Vec<u8>> = self.states[prefix]
                    .iter()
                    .filter(|(_, v)| v.starts_with(format!("{colour},").as_bytes()))
                    .map(|(k, _)| k.clone())
                    .collect();
                if keys != expected {
                    return Err(format!("find({colour}) disagrees with the state"));
                }
            }
        }
        // One state in ten must also take a synced write and reopen.
        if self.explored.load(Ordering::Relaxed).is_multiple_of(10) {
            db.insert(b"after", b"the crash")
                .map_err(|e| format!("refuses a write: {e}"))?;
            drop(db);
            let db = builder(image)
                .open()
                .map_err(|e| format!("does not reopen: {e}"))?;
            if db.get(b"after").map_err(|e| e.to_string())?.is_none() {
                return Err("lost a write made after recovery".to_owned());
            }
        }
        Ok(())
    }

    /// The sync hook: draws and checks crash states of `fs` now.
    fn explore(&self, fs: &FaultInjectionFs, point: SyncPoint<'_>) {
        for draw in 0..IMAGES_PER_SYNC_POINT {
            let n = self.explored.fetch_add(1, Ordering::Relaxed);
            // Draw 0 is the sure state; the others keep more.
            let seed = if draw == 0 { 0 } else { n as u64 + 1 };
            // What must survive is read before the state is drawn, and what
            // may have been written after it: with background threads the
            // writer goes on meanwhile.
            let lowest = self.progress.durable.load(Ordering::SeqCst);
            let index = self.progress.index_added.load(Ordering::SeqCst) > 0;
            let image = fs.crash_image(seed);
            let done = self.progress.done.load(Ordering::SeqCst);
            let highest = (done + 1).min(self.states.len() - 1);
            if let Err(problem) = self.check(&image, lowest, highest, index) {
                lock(&self.failures)
                    .push(format!("state {n} (at {point:?}, seed {seed}): {problem}"));
            }
        }
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Runs `steps` on a lying disk, exploring crash states at every sync
/// point; returns how many states were explored. With `background`,
/// flushes and compactions run on the database's threads, and their sync
/// points interleave with the writer's.
fn explore(steps: &[Step], background: bool) -> usize {
    let explorer = Arc::new(Explorer {
        states: states(steps),
        progress: Progress::default(),
        explored: AtomicUsize::new(0),
        failures: Mutex::new(Vec::new()),
    });
    let fs = FaultInjectionFs::new();
    let db = builder(&fs).background_threads(background).open().unwrap();
    let hook = Arc::clone(&explorer);
    fs.on_sync(Arc::new(move |fs, point| hook.explore(fs, point)));
    let progress = &explorer.progress;
    let durable_now = || {
        let done = progress.done.load(Ordering::SeqCst);
        progress.durable.store(done, Ordering::SeqCst);
    };
    for step in steps {
        match step {
            Step::Write(ops, sync) => {
                let mut batch = WriteBatch::new();
                for (key, value) in ops {
                    match value {
                        Some(value) => batch.insert(key, value),
                        None => batch.remove(key),
                    };
                }
                let options = if *sync {
                    WriteOptions::sync()
                } else {
                    WriteOptions::no_sync()
                };
                db.write_with(&batch, options).unwrap();
                progress.done.fetch_add(1, Ordering::SeqCst);
                if *sync {
                    durable_now();
                }
            }
            Step::Txn(ops) => {
                let mut txn = db.transaction();
                for (key, value) in ops {
                    match value {
                        Some(value) => txn.insert(key, value).unwrap(),
                        None => txn.remove(key).unwrap(),
                    }
                }
                txn.commit().unwrap();
                progress.done.fetch_add(1, Ordering::SeqCst);
                durable_now();
            }
            Step::Flush => {
                db.flush().unwrap();
                durable_now();
            }
            Step::Compact => {
                db.compact().unwrap();
                durable_now();
            }
            Step::Persist => {
                db.persist(PersistMode::SyncAll).unwrap();
                durable_now();
            }
            Step::AddIndex => {
                let def = IndexDef::new(
                    "colour",
                    Extractor::Delimited {
                        column: 0,
                        separator: b',',
                    },
                );
                db.add_index(def).unwrap();
                progress.index_added.store(1, Ordering::SeqCst);
                db.wait_for_backfill().unwrap();
            }
        }
    }
    // The end state, and the states a clean shutdown leaves.
    explorer.explore(&fs, SyncPoint::Dir(Path::new(DIR)));
    drop(db);
    explorer.explore(&fs, SyncPoint::Dir(Path::new(DIR)));
    let failures = lock(&explorer.failures);
    assert!(
        failures.is_empty(),
        "{} of {} crash states failed; the first:\n{}",
        failures.len(),
        explorer.explored.load(Ordering::Relaxed),
        failures
            .iter()
            .take(10)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    );
    explorer.explored.load(Ordering::Relaxed)
}

#[test]
fn every_crash_state_opens_with_every_durable_write() {
    let mut explored = 0;
    for seed in 1..=8 {
        explored += explore(&workload(seed, 200), false);
    }
    eprintln!("crash states explored: {explored}");
    assert!(explored >= 1000, "only {explored} crash states");
}

#[test]
fn every_crash_state_opens_with_background_flushes_and_compactions() {
    let mut explored = 0;
    for seed in 11..=14 {
        explored += explore(&workload(seed, 200), true);
    }
    eprintln!("crash states explored: {explored}");
    assert!(explored >= 1000, "only {explored} crash states");
}
