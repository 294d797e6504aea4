//! One worker thread of the child: random operations on the keys it owns,
//! each checked against its expected state (the operations themselves are
//! in `writes.rs`, `reads.rs` and `txn.rs`).

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use siftdb::Db;

use super::counts::{Counts, Kind};
use super::expected::{Entry, ExpectedFile};
use super::model::{Divergence, Space, State};
use super::reads::Held;
use crate::value_search::rng::{SplitMix64, Zipf};

/// Zipf exponent of key choice: a skew (of 8,192 keys, the hottest takes
/// 3.9% of the operations, the hottest 1% of keys 30%, the coldest half
/// 15%) that keeps a few keys rewritten in every memtable while the rest
/// age into the deeper levels.
const ZIPF_EXPONENT: f64 = 0.8;

/// Operations between two stores of the counters in the expected-state
/// file: a kill loses at most this many per thread from the counts.
const STORE_EVERY: u64 = 16;

/// Operations between two samples of the engine's flush and compaction
/// counters (thread 0 only: one `stats` call walks every table).
const SAMPLE_EVERY: u64 = 512;

/// Picks a thread's keys with Zipf skew; the popularity rank is shuffled
/// onto the keys so that hot keys are scattered through the key order.
#[derive(Debug)]
pub struct Chooser {
    zipf: Zipf,
    key_of_rank: Vec<u32>,
}

impl Chooser {
    /// A chooser over `keys` keys, its shuffle drawn from `seed`.
    pub fn new(keys: u32, seed: u64) -> Self {
        let mut key_of_rank: Vec<u32> = (0..keys).collect();
        SplitMix64::new(seed, 0x5707).shuffle(&mut key_of_rank);
        Self {
            zipf: Zipf::new(keys as usize, ZIPF_EXPONENT),
            key_of_rank,
        }
    }

    /// One key index.
    pub fn pick(&self, rng: &mut SplitMix64) -> u32 {
        self.key_of_rank[self.zipf.sample(rng) as usize]
    }
}

/// A worker: its keys, their expected states, and its random stream.
pub struct Worker<'a> {
    /// The database.
    pub db: &'a Db,
    /// The keys this worker owns.
    pub space: Space,
    /// Threads of the run (for reads of other threads' keys).
    pub threads: u32,
    /// The expected state of every own key, as acknowledged.
    pub states: Vec<State>,
    /// Randomness of this worker.
    pub rng: SplitMix64,
    /// What happened, by kind.
    pub counts: Counts,
    /// Reads that disagreed with the expected state (the worker stops at
    /// the first).
    pub divergences: Vec<Divergence>,
    /// A snapshot taken earlier, to be read after later writes.
    pub held: Option<Held>,
    chooser: &'a Chooser,
    file: ExpectedFile,
    ops: u64,
    /// Flushes and compactions of the engine at the last sample.
    engine_seen: (u64, u64),
}

impl<'a> Worker<'a> {
    /// A worker for `space`, resuming from its expected-state file.
    pub fn new(
        db: &'a Db,
        space: Space,
        threads: u32,
        file: ExpectedFile,
        chooser: &'a Chooser,
        seed: u64,
    ) -> anyhow::Result<Self> {
        anyhow::ensure!(
            file.group()?.is_none(),
            "a write of thread {} is still unresolved",
            space.thread
        );
        Ok(Self {
            db,
            space,
            threads,
            states: file.states()?,
            rng: SplitMix64::new(seed, u64::from(space.thread)),
            counts: file.counts()?,
            divergences: Vec::new(),
            held: None,
            chooser,
            file,
            ops: 0,
            engine_seen: (0, 0),
        })
    }

    /// Runs operations until `deadline`, until `stop` is set, or until a
    /// divergence (which sets `stop` for the other workers).
    ///
    /// # Errors
    /// An engine error other than an expected transaction conflict, or a
    /// failure to write the expected-state file.
    pub fn run(&mut self, deadline: Instant, stop: &AtomicBool) -> anyhow::Result<()> {
        while !stop.load(Ordering::Relaxed) && Instant::now() < deadline {
            self.step()?;
            self.ops += 1;
            if let Some(held) = &mut self.held {
                held.tick();
            }
            if self.ops.is_multiple_of(STORE_EVERY) {
                self.file.store_counts(&self.counts)?;
            }
            if self.space.thread == 0 && self.ops.is_multiple_of(SAMPLE_EVERY) {
                self.sample_engine();
            }
            if !self.divergences.is_empty() {
                stop.store(true, Ordering::Relaxed);
            }
        }
        self.file.store_counts(&self.counts)
    }

    /// One operation, chosen by weight (out of 100).
    fn step(&mut self) -> anyhow::Result<()> {
        if self.held.as_ref().is_some_and(Held::due) {
            return self.check_held();
        }
        match self.rng.below(100) {
            0..24 => self.put(),
            24..30 => self.delete(),
            30..38 => self.batch(),
            38..58 => self.get(),
            58..63 => self.foreign_get(),
            63..70 => self.range(),
            70..75 => self.prefix(),
            75..80 => self.take_snapshot(),
            80..88 => self.find(),
            _ => self.transaction(),
        }
    }

    /// A key index drawn with the run's skew.
    pub fn pick(&mut self) -> u32 {
        self.chooser.pick(&mut self.rng)
    }

    /// `n` distinct key indexes drawn with the run's skew (fewer if the
    /// skew keeps drawing the same ones).
    pub fn pick_distinct(&mut self, n: usize) -> Vec<u32> {
        let mut keys = Vec::with_capacity(n);
        for _ in 0..4 * n {
            let key = self.pick();
            if !keys.contains(&key) {
                keys.push(key);
                if keys.len() == n {
                    break;
                }
            }
        }
        keys
    }

    /// Records a divergence.
    pub fn diverge(&mut self, divergence: Divergence) {
        self.divergences.push(divergence);
    }

    /// Records a write about to be made to `keys`, each becoming a value
    /// if `present` says so; returns the group's entries.
    pub fn begin(&mut self, keys: &[(u32, bool)]) -> anyhow::Result<Vec<Entry>> {
        let entries: Vec<Entry> = keys
            .iter()
            .map(|&(key, present)| {
                let old = self.states[key as usize];
                Entry {
                    key,
                    old,
                    new: old.next(present),
                }
            })
            .collect();
        self.file.begin_group(&entries)?;
        Ok(entries)
    }

    /// Records the write of `entries` as acknowledged.
    pub fn acknowledged(&mut self, entries: &[Entry]) -> anyhow::Result<()> {
        for e in entries {
            self.states[e.key as usize] = e.new;
            self.file.set_state(e.key, e.new)?;
        }
        self.file.end_group()
    }

    /// Records that the write of the active group did not happen.
    pub fn abandoned(&mut self) -> anyhow::Result<()> {
        self.file.end_group()
    }

    /// Adds the engine's flushes and compactions since the last sample.
    fn sample_engine(&mut self) {
        let stats = self.db.stats();
        let (flushes, compactions) = self.engine_seen;
        self.counts
            .add(Kind::Flush, stats.flushes.saturating_sub(flushes));
        self.counts.add(
            Kind::Compaction,
            stats.compactions.saturating_sub(compactions),
        );
        self.engine_seen = (stats.flushes, stats.compactions);
    }
}
