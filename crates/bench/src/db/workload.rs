//! The named workloads (db_bench's names) and what one run of one measures.

use std::ops::Range;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::ensure;
use sift_filter::mix64;

use super::engine::{Engine, FilterCounters};
use super::scan;
use super::stores::{Gapped, Prefixed, Store};
use super::threads::together;
use crate::filters::keys::{self, Key};

/// Bytes of every value, as db_bench's default.
pub const VALUE_LEN: usize = 100;

/// Keys per batched read in the `multiread*` workloads.
pub const MULTI_GET_BATCH: usize = 32;

/// A workload of the comparison.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Workload {
    /// Keys inserted in ascending order.
    FillSeq,
    /// Keys inserted in random order.
    FillRandom,
    /// `FillRandom`'s keys and values, unsynced, into a fresh store by
    /// `--threads` writers at once, each a disjoint share of the keys
    /// (see [`super::writes`]).
    FillThreads,
    /// Synced single puts (db_bench's `fillsync`) into a fresh store by
    /// `--threads` writers at once, `--sync-puts` each.
    FillSync,
    /// Point lookups of present keys.
    ReadRandom,
    /// Point lookups of absent keys drawn from the same distribution, so
    /// they fall inside every table's key range: only filters reject them.
    ReadMissing,
    /// `ReadRandom`'s keys in batches of [`MULTI_GET_BATCH`], through the
    /// engine's batched read (db_bench's `multireadrandom`).
    MultiReadRandom,
    /// `ReadMissing`'s keys in batches of [`MULTI_GET_BATCH`].
    MultiReadMissing,
    /// Seek to a random present key and read the entry there (an
    /// unbounded iterator: no upper bound).
    SeekRandom,
    /// `ReadRandom` on its reader threads while one more thread overwrites
    /// random keys.
    ReadWhileWriting,
    /// Seek to a random present key with an upper bound about
    /// [`scan::SEEK_NEXTS`] keys' worth of key space after it (db_bench's
    /// `seekrandom` with `--seek_nexts`, bounded), and read the entries
    /// there, at most [`scan::SEEK_NEXTS`] of them (the key itself and a
    /// Poisson number of others, mean 10: about 9.2 on average).
    SeekRandomBounded,
    /// On the [`Store::Gapped`] store: open an iterator bounded to a range
    /// of 16 integers that holds no key (in a gap between two keys), take
    /// its first item, expect none.
    SeekEmpty16,
    /// `SeekEmpty16` with ranges of 1024 integers.
    SeekEmpty1024,
    /// On the [`Store::Prefixed`] store: a prefix scan of a present prefix,
    /// reading all of its [`super::stores::KEYS_PER_PREFIX`] entries.
    PrefixHit,
    /// On the [`Store::Prefixed`] store: a prefix scan of a prefix that
    /// holds no key (inside the tables' key ranges), expecting none.
    PrefixMissing,
}

impl Workload {
    /// db_bench's name.
    pub fn name(self) -> &'static str {
        match self {
            Self::FillSeq => "fillseq",
            Self::FillRandom => "fillrandom",
            Self::FillThreads => "fillthreads",
            Self::FillSync => "fillsync",
            Self::ReadRandom => "readrandom",
            Self::ReadMissing => "readmissing",
            Self::MultiReadRandom => "multireadrandom",
            Self::MultiReadMissing => "multireadmissing",
            Self::SeekRandom => "seekrandom",
            Self::ReadWhileWriting => "readwhilewriting",
            Self::SeekRandomBounded => "seekrandombounded",
            Self::SeekEmpty16 => "seekempty16",
            Self::SeekEmpty1024 => "seekempty1024",
            Self::PrefixHit => "prefixhit",
            Self::PrefixMissing => "prefixmissing",
        }
    }

    /// Every workload that reads (run in both shapes).
    pub const READS: [Self; 11] = [
        Self::ReadRandom,
        Self::ReadMissing,
        Self::MultiReadRandom,
        Self::MultiReadMissing,
        Self::SeekRandom,
        Self::ReadWhileWriting,
        Self::SeekRandomBounded,
        Self::SeekEmpty16,
        Self::SeekEmpty1024,
        Self::PrefixHit,
        Self::PrefixMissing,
    ];

    /// The write workloads that run at every thread count, each into a
    /// fresh store (the fills before the reads always run on one thread).
    pub const WRITES: [Self; 2] = [Self::FillThreads, Self::FillSync];

    /// Whether the workload is one of [`Workload::WRITES`].
    pub fn threaded_write(self) -> bool {
        Self::WRITES.contains(&self)
    }

    /// The store the workload reads (and loads first).
    pub fn store(self) -> Store {
        match self {
            Self::SeekEmpty16 | Self::SeekEmpty1024 => Store::Gapped,
            Self::PrefixHit | Self::PrefixMissing => Store::Prefixed,
            _ => Store::Random,
        }
    }

    /// Whether the workload runs without `--workloads`: the reads of the
    /// [`Store::Random`] store. The scan workloads each need a store of
    /// their own, loaded and compacted per engine and repetition, which
    /// would add (estimated, not measured at full size) a third or so to
    /// the default run's ten minutes; the threaded writes a fresh store per
    /// engine, thread count and repetition.
    pub fn by_default(self) -> bool {
        self.store() == Store::Random && !self.threaded_write()
    }

    /// Whether the workload's filters are scan filters (prefix and range
    /// filters: [`Engine::scan_filter_counters`]) rather than key filters.
    pub fn scans(self) -> bool {
        matches!(
            self,
            Self::SeekRandomBounded
                | Self::SeekEmpty16
                | Self::SeekEmpty1024
                | Self::PrefixHit
                | Self::PrefixMissing
        )
    }

    /// The length of the `seekempty*` workloads' ranges, in integers.
    pub fn empty_range_len(self) -> Option<u64> {
        match self {
            Self::SeekEmpty16 => Some(16),
            Self::SeekEmpty1024 => Some(1024),
            _ => None,
        }
    }

    /// Whether every operation asks for something absent, so that every
    /// filter "maybe" is a false positive.
    pub fn all_absent(self) -> bool {
        matches!(
            self,
            Self::ReadMissing | Self::SeekEmpty16 | Self::SeekEmpty1024 | Self::PrefixMissing
        )
    }
}

/// What one run of one workload measured.
#[derive(Clone, Copy, Debug, Default)]
pub struct Run {
    /// Operations timed.
    pub ops: u64,
    /// Wall-clock time of the timed operations.
    pub wall: Duration,
    /// CPU time of the whole process (every thread, background work
    /// included) over the same interval.
    pub cpu: Duration,
    /// Filter counters over the run.
    pub filters: FilterCounters,
}

/// The deterministic value of key number `i` (100 bytes, incompressible).
pub fn value(i: u64, version: u64) -> [u8; VALUE_LEN] {
    let mut out = [0u8; VALUE_LEN];
    for (chunk, word) in out.chunks_mut(8).zip(0u64..) {
        let bytes =
            mix64(i ^ (version << 48) ^ word.wrapping_mul(0x9e37_79b9_7f4a_7c15)).to_le_bytes();
        chunk.copy_from_slice(&bytes[..chunk.len()]);
    }
    out
}

/// The `i`-th index of a pseudo-random sequence over `0..n` (fixed seed).
pub fn pick(i: u64, n: u64, seed: u64) -> u64 {
    ((u128::from(mix64(seed ^ i)) * u128::from(n)) >> 64) as u64
}

/// The keys of the workloads: `present` keys were loaded, the next
/// `missing` keys of the same stream never were. Keys are computed from
/// their index, as db_bench does, so picking one costs no memory access.
#[derive(Clone, Copy, Debug)]
pub struct Keys {
    /// Seed of the key stream.
    pub seed: u64,
    /// Keys `0..present` are in the store.
    pub present: u64,
    /// Keys `present..present + missing` are not.
    pub missing: u64,
}

impl Keys {
    /// Present key number `i` (`i < present`).
    pub fn present(&self, i: u64) -> Key {
        keys::key(self.seed, i)
    }

    /// Missing key number `i` (`i < missing`).
    pub fn missing(&self, i: u64) -> Key {
        keys::key(self.seed, self.present + i)
    }
}

/// Runs `workload` (a read) on `threads` threads at once against the same
/// `engine`, each for `ops` operations over its own slice of the workload's
/// key stream: thread `t` takes picks `t * ops .. (t + 1) * ops`, so thread 0
/// reads exactly what the single-threaded harness did and no two threads
/// share a position of the stream. Every answer is checked: present keys are
/// found with a value of [`VALUE_LEN`] bytes, missing ones are not, scans
/// find what their store holds (see [`scan`]). `readwhilewriting` adds its
/// one writer beside the readers. The scan workloads' stores hold
/// `keys.present` keys of their own kind (seed `keys.seed`). The run counts
/// `threads * ops` operations; with more than one
/// thread its wall time runs from the threads' release to the last one's end
/// ([`together`]).
pub fn run_read(
    engine: &dyn Engine,
    workload: Workload,
    keys: &Keys,
    ops: u64,
    threads: usize,
) -> anyhow::Result<Run> {
    let slice = |t: u64| t * ops..(t + 1) * ops;
    let n = keys.present;
    let gapped = || Gapped::new(keys.seed, n);
    let prefixed = || Prefixed::new(keys.seed, n);
    if let Some(len) = workload.empty_range_len() {
        // Untimed: the store agrees that the ranges are empty.
        scan::check_empty(engine, &gapped()?, len)?;
    }
    let counters: fn(&dyn Engine) -> FilterCounters = if workload.scans() {
        |e| e.scan_filter_counters()
    } else {
        |e| e.filter_counters()
    };
    timed(engine, counters, ops * threads as u64, || match workload {
        Workload::ReadRandom => together(threads, |t| read_present(engine, keys, slice(t), 1)),
        Workload::ReadMissing => together(threads, |t| read_missing(engine, keys, slice(t))),
        Workload::MultiReadRandom => together(threads, |t| {
            multi_read(
                engine,
                slice(t),
                |i| keys.present(pick(i, keys.present, 1)),
                true,
            )
        }),
        Workload::MultiReadMissing => together(threads, |t| {
            multi_read(
                engine,
                slice(t),
                |i| keys.missing(pick(i, keys.missing, 2)),
                false,
            )
        }),
        Workload::SeekRandom => together(threads, |t| seek_present(engine, keys, slice(t))),
        Workload::SeekRandomBounded => {
            together(threads, |t| scan::seek_bounded(engine, keys, slice(t)))
        }
        Workload::SeekEmpty16 | Workload::SeekEmpty1024 => {
            let (gapped, len) = (gapped()?, workload.empty_range_len().unwrap_or(0));
            together(threads, |t| {
                scan::seek_empty(engine, &gapped, len, slice(t))
            })
        }
        Workload::PrefixHit => {
            let prefixed = prefixed()?;
            together(threads, |t| scan::prefix_hit(engine, &prefixed, slice(t)))
        }
        Workload::PrefixMissing => {
            let prefixed = prefixed()?;
            together(threads, |t| {
                scan::prefix_missing(engine, &prefixed, slice(t))
            })
        }
        Workload::ReadWhileWriting => {
            let done = AtomicBool::new(false);
            std::thread::scope(|scope| {
                let writer = scope.spawn(|| overwrite_until(engine, keys, &done));
                let read = together(threads, |t| read_present(engine, keys, slice(t), 4));
                done.store(true, Ordering::Relaxed);
                let written = writer
                    .join()
                    .map_err(|_| anyhow::anyhow!("writer thread panicked"))?;
                read.and_then(|span| written.map(|()| span))
            })
        }
        Workload::FillSeq | Workload::FillRandom | Workload::FillThreads | Workload::FillSync => {
            anyhow::bail!("{} is not a read", workload.name())
        }
    })
}

/// Inserts `keys` in the given order, each with its first value.
pub fn run_fill(engine: &dyn Engine, keys: &[Key]) -> anyhow::Result<Run> {
    timed(
        engine,
        |e| e.filter_counters(),
        keys.len() as u64,
        || {
            for (i, key) in keys.iter().enumerate() {
                engine.put(key, &value(i as u64, 0))?;
            }
            Ok(None)
        },
    )
}

fn read_present(
    engine: &dyn Engine,
    keys: &Keys,
    picks: Range<u64>,
    seed: u64,
) -> anyhow::Result<()> {
    for i in picks {
        let key = keys.present(pick(i, keys.present, seed));
        ensure!(
            engine.get(&key)? == Some(VALUE_LEN),
            "{}: a present key was not found",
            engine.name()
        );
    }
    Ok(())
}

fn read_missing(engine: &dyn Engine, keys: &Keys, picks: Range<u64>) -> anyhow::Result<()> {
    for i in picks {
        let key = keys.missing(pick(i, keys.missing, 2));
        ensure!(
            engine.get(&key)?.is_none(),
            "{}: a missing key was found",
            engine.name()
        );
    }
    Ok(())
}

/// Reads the keys of `picks` in batches of [`MULTI_GET_BATCH`], checking
/// that each is found with its value (`present`) or absent.
fn multi_read(
    engine: &dyn Engine,
    picks: Range<u64>,
    key: impl Fn(u64) -> Key,
    present: bool,
) -> anyhow::Result<()> {
    let expected = present.then_some(VALUE_LEN);
    let mut batch = Vec::with_capacity(MULTI_GET_BATCH);
    let mut start = picks.start;
    while start < picks.end {
        let end = (start + MULTI_GET_BATCH as u64).min(picks.end);
        batch.clear();
        batch.extend((start..end).map(&key));
        let found = engine.multi_get(&batch)?;
        ensure!(
            found.len() == batch.len() && found.iter().all(|&f| f == expected),
            "{}: a batched read gave a wrong answer",
            engine.name()
        );
        start = end;
    }
    Ok(())
}

fn seek_present(engine: &dyn Engine, keys: &Keys, picks: Range<u64>) -> anyhow::Result<()> {
    for i in picks {
        let key = keys.present(pick(i, keys.present, 3));
        ensure!(
            engine.seek(&key)? == Some(VALUE_LEN),
            "{}: seek to a present key found nothing",
            engine.name()
        );
    }
    Ok(())
}

fn overwrite_until(engine: &dyn Engine, keys: &Keys, done: &AtomicBool) -> anyhow::Result<()> {
    let mut i = 0u64;
    while !done.load(Ordering::Relaxed) {
        let at = pick(i, keys.present, 5);
        engine.put(&keys.present(at), &value(at, 1 + i))?;
        i += 1;
    }
    Ok(())
}

/// Times `body`, which performs `ops` operations on `engine`: the whole call,
/// or the wall time `body` returns when it measured its operations itself
/// (threads released together, see [`together`]). The filter figures are
/// the change of `counters` over the call.
pub(super) fn timed(
    engine: &dyn Engine,
    counters: fn(&dyn Engine) -> FilterCounters,
    ops: u64,
    body: impl FnOnce() -> anyhow::Result<Option<Duration>>,
) -> anyhow::Result<Run> {
    let filters_before = counters(engine);
    let cpu_before = process_cpu();
    let start = Instant::now();
    let measured = body()?;
    let wall = measured.unwrap_or_else(|| start.elapsed());
    let cpu = process_cpu().saturating_sub(cpu_before);
    let after = counters(engine);
    Ok(Run {
        ops,
        wall,
        cpu,
        filters: FilterCounters {
            probes: after.probes - filters_before.probes,
            negatives: after.negatives - filters_before.negatives,
            false_positives: after
                .false_positives
                .zip(filters_before.false_positives)
                .map(|(a, b)| a - b),
        },
    })
}

/// User + system CPU time of this process, all threads, from
/// `/proc/self/stat` (fields 14 and 15, in clock ticks of 10 ms: Linux's
/// `USER_HZ` is 100 on every mainstream architecture). Zero elsewhere.
fn process_cpu() -> Duration {
    let Ok(stat) = std::fs::read_to_string("/proc/self/stat") else {
        return Duration::ZERO;
    };
    // The command name (field 2) may hold spaces; fields after it do not.
    let Some((_, rest)) = stat.rsplit_once(')') else {
        return Duration::ZERO;
    };
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|f| f.parse::<u64>().ok())
            .unwrap_or(0)
    };
    // `rest` starts at field 3, so fields 14 and 15 are at 11 and 12.
    Duration::from_millis((ticks(11) + ticks(12)) * 10)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn picks_stay_in_range_and_values_differ_by_version() {
        for i in 0..10_000 {
            assert!(pick(i, 7, 1) < 7);
        }
        assert_ne!(value(1, 0), value(1, 1));
        assert_ne!(value(1, 0), value(2, 0));
        assert_eq!(value(3, 4), value(3, 4));
    }

    #[test]
    fn process_cpu_advances_with_work() {
        let before = process_cpu();
        let start = Instant::now();
        let mut x = 0u64;
        while start.elapsed() < Duration::from_millis(100) {
            x = std::hint::black_box(mix64(x));
        }
        assert!(process_cpu() > before);
    }
}
