//! The write workloads that run at every `--threads` count, each into a
//! fresh store: `fillthreads` (the load's keys, unsynced, split among the
//! writers) and `fillsync` (synced single puts, a fixed number per writer),
//! and what they cost the engine beside their time: write stalls, and the
//! bytes written per byte put.

use std::ops::Range;
use std::time::Duration;

use anyhow::bail;

use super::engine::Engine;
use super::threads::together;
use super::workload::{Run, VALUE_LEN, Workload, timed, value};
use crate::filters::keys::{self, Key};

/// Bytes a user put writes: the key and the value.
pub const USER_BYTES_PER_PUT: u64 = (std::mem::size_of::<Key>() + VALUE_LEN) as u64;

/// Writer `t`'s share of `n` items among `threads` writers: contiguous, so
/// each writer keeps the items' (shuffled) order; disjoint and together all
/// of `0..n`; sizes differ by at most one.
pub fn share(n: usize, threads: usize, t: usize) -> Range<usize> {
    let threads = threads.max(1) as u128;
    // u128: `n * t` may not fit in a usize.
    let at = |t: usize| (n as u128 * t.min(threads as usize) as u128 / threads) as usize;
    at(t)..at(t + 1)
}

/// Runs `workload` on `threads` writers at once against `engine` (a fresh
/// store), timed as the reads are ([`together`]: from the writers' release
/// to the last put's return):
///
/// - `fillthreads`: writer `t` puts its [`share`] of `load`, in `load`'s
///   order, key `i` with `load`'s `i`-th value: at one thread, `fillrandom`.
///   The run counts `load.len()` puts whatever the thread count.
/// - `fillsync`: writer `t` puts keys `t * per_writer .. (t + 1) *
///   per_writer` of the key stream of `seed`, each a synced write of its
///   own ([`Engine::put_synced`]). The run counts `threads * per_writer`.
pub fn run(
    engine: &dyn Engine,
    workload: Workload,
    load: &[Key],
    (seed, per_writer): (u64, u64),
    threads: usize,
) -> anyhow::Result<Run> {
    let counters = |e: &dyn Engine| e.filter_counters();
    match workload {
        Workload::FillThreads => timed(engine, counters, load.len() as u64, || {
            together(threads, |t| {
                let mine = share(load.len(), threads, t as usize);
                for (i, key) in mine.clone().zip(&load[mine]) {
                    engine.put(key, &value(i as u64, 0))?;
                }
                Ok(())
            })
        }),
        Workload::FillSync => timed(engine, counters, per_writer * threads as u64, || {
            together(threads, |t| {
                for i in t * per_writer..(t + 1) * per_writer {
                    engine.put_synced(&keys::key(seed, i), &value(i, 0))?;
                }
                Ok(())
            })
        }),
        other => bail!("{} is not a threaded write", other.name()),
    }
}

/// The engine's stall time and the process's bytes written at one moment,
/// to measure a write workload's cost from.
#[derive(Clone, Copy, Debug)]
pub struct Meter {
    stall: Option<Duration>,
    written: Option<u64>,
}

impl Meter {
    /// Reads both now.
    pub fn start(engine: &dyn Engine) -> Self {
        Self {
            stall: engine.write_stall(),
            written: process_written(),
        }
    }

    /// The engine's write stall time since [`Meter::start`], where it
    /// counts one.
    pub fn stall(&self, engine: &dyn Engine) -> Option<Duration> {
        Some(engine.write_stall()?.saturating_sub(self.stall?))
    }

    /// Bytes the process has written since [`Meter::start`] over
    /// `user_bytes`. Each engine runs alone in the process, so these are
    /// the engine's writes: log, flushes, compactions, manifests, small
    /// files (and a progress line or two on stderr).
    pub fn amplification(&self, user_bytes: u64) -> Option<f64> {
        let written = process_written()?.checked_sub(self.written?)?;
        (user_bytes > 0).then(|| written as f64 / user_bytes as f64)
    }
}

/// Bytes this process has handed to `write(2)` and its kin (`pwrite`,
/// `writev`) since it started, every thread, exited ones included: `wchar`
/// of `/proc/self/io`. What the engines write, not what reaches the device
/// (the page cache may absorb a rewrite, or a deleted file's pages).
/// `None` where the file cannot be read.
fn process_written() -> Option<u64> {
    wchar(&std::fs::read_to_string("/proc/self/io").ok()?)
}

/// The `wchar: 123` line of `/proc/<pid>/io`.
fn wchar(io: &str) -> Option<u64> {
    io.lines()
        .find_map(|line| line.strip_prefix("wchar:"))?
        .trim()
        .parse()
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shares_are_disjoint_contiguous_and_cover_everything() {
        for n in [0, 1, 7, 16, 1000, 1001] {
            for threads in 1..=17 {
                let mut next = 0;
                for t in 0..threads {
                    let mine = share(n, threads, t);
                    assert_eq!(mine.start, next, "n {n}, {threads} threads, t {t}");
                    assert!(mine.len() <= n / threads + 1, "{mine:?}");
                    assert!(mine.len() >= n / threads, "{mine:?}");
                    next = mine.end;
                }
                assert_eq!(next, n, "n {n}, {threads} threads");
            }
        }
        assert_eq!(share(10, 1, 0), 0..10);
        assert_eq!(share(10, 4, 3), 7..10);
        // Past the last writer, and zero writers, give nothing out of range.
        assert!(share(10, 4, 4).is_empty());
        assert_eq!(share(10, 0, 0), 0..10);
        assert_eq!(share(usize::MAX, 2, 1).end, usize::MAX);
    }

    #[test]
    fn wchar_is_read_by_exact_name() {
        let io = "rchar: 6976\nwchar: 1234\nsyscr: 10\nsyscw: 3\n\
                  read_bytes: 0\nwrite_bytes: 4096\ncancelled_write_bytes: 0\n";
        assert_eq!(wchar(io), Some(1234));
        assert_eq!(wchar("rchar: 1\n"), None);
    }

    #[test]
    fn the_process_counts_its_writes() -> anyhow::Result<()> {
        let Some(before) = process_written() else {
            return Ok(()); // no /proc here
        };
        let dir = tempfile::tempdir()?;
        std::fs::write(dir.path().join("f"), [0u8; 10_000])?;
        let after = process_written().unwrap_or(0);
        assert!(after >= before + 10_000, "{before} -> {after}");
        Ok(())
    }
}
