//! Statistics counters, one set per thread.
//!
//! A shared atomic counter costs every event a locked add (about 20 cycles
//! on x86), and two threads counting into one cache line bounce it between
//! their cores: four such adds were a tenth of a missing-key lookup, and
//! they would have kept two reading threads from scaling. So each thread
//! counts into its own [`Shard`], which only it writes, with a plain load
//! and store; [`Stats`](super::Stats) sums the shards.
//!
//! A thread claims a shard of a database the first time it counts there
//! and releases it when its thread-locals are dropped at exit; the next
//! thread to arrive reuses a released shard, totals included, so there are
//! about as many shards as threads that counted at the same time.

use std::cell::RefCell;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError, Weak};

pub(super) use crate::version::COUNTED_LEVELS;

/// One statistic in one shard.
#[derive(Debug, Default)]
pub(super) struct Counter(AtomicU64);

impl Counter {
    /// Adds `n`. Only the shard's owning thread adds, so the load and the
    /// store cannot interleave with another add; readers see either value.
    #[inline]
    pub(super) fn add(&self, n: u64) {
        self.0.store(
            self.0.load(Ordering::Relaxed).wrapping_add(n),
            Ordering::Relaxed,
        );
    }

    fn get(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
}

/// Filter counters of one level.
#[derive(Debug, Default)]
pub(super) struct LevelCounters {
    pub probes: Counter,
    pub negatives: Counter,
    pub false_positives: Counter,
    /// Scan filter (prefix and range filter) probes, "empty" answers, and
    /// admitted tables that held nothing in the scan's bounds.
    pub scan_probes: Counter,
    pub scan_empty: Counter,
    pub scan_false_positives: Counter,
    /// Table bytes written into the level: by flushes into L0, by
    /// compactions into deeper levels.
    pub bytes_written: Counter,
    /// Table bytes of the level that compactions read as inputs.
    pub compaction_bytes_read: Counter,
}

/// One thread's counters. Aligned so that two shards never share a cache
/// line (nor the adjacent line the prefetcher pairs with it).
#[derive(Debug, Default)]
#[repr(align(128))]
pub(super) struct Shard {
    pub gets: Counter,
    pub key_hashes: Counter,
    pub data_blocks_read: Counter,
    pub memtable_hits: Counter,
    pub writes: Counter,
    pub write_groups: Counter,
    pub wal_syncs: Counter,
    pub write_stall_micros: Counter,
    pub flushes: Counter,
    pub compactions: Counter,
    pub compaction_bytes_written: Counter,
    levels: [LevelCounters; COUNTED_LEVELS],
    /// A live thread counts into this shard.
    claimed: AtomicBool,
}

impl Shard {
    /// Counters of `level`.
    #[inline]
    pub(super) fn level(&self, level: usize) -> &LevelCounters {
        &self.levels[level.min(COUNTED_LEVELS - 1)]
    }
}

/// Every shard of one database, whether claimed or released.
type Registry = Mutex<Vec<Arc<Shard>>>;

/// The live counters of a database.
#[derive(Clone, Debug, Default)]
pub(super) struct Counters {
    shards: Arc<Registry>,
}

/// A thread's claim on one database's shard; released when the thread
/// exits (or the claim is pruned after the database is gone).
struct Claim {
    registry: Weak<Registry>,
    shard: Arc<Shard>,
}

impl Drop for Claim {
    fn drop(&mut self) {
        self.shard.claimed.store(false, Ordering::Release);
    }
}

thread_local! {
    /// This thread's claims, the most recently used database first.
    static CLAIMS: RefCell<Vec<Claim>> = const { RefCell::new(Vec::new()) };
}

impl Counters {
    /// Runs `f` on this thread's shard, claiming one first if needed.
    /// `f` must not count again (it runs while the claims are borrowed).
    #[inline]
    pub(super) fn with<R>(&self, f: impl FnOnce(&Shard) -> R) -> R {
        let registry = Arc::as_ptr(&self.shards);
        CLAIMS.with(|claims| {
            if let Some(claim) = claims.borrow().first()
                && std::ptr::eq(claim.registry.as_ptr(), registry)
            {
                return f(&claim.shard);
            }
            let shard = self.claim(&mut claims.borrow_mut());
            f(&shard)
        })
    }

    /// Moves this database's claim to the front, making one if there is
    /// none; drops claims on databases that are gone.
    #[cold]
    fn claim(&self, claims: &mut Vec<Claim>) -> Arc<Shard> {
        claims.retain(|c| c.registry.strong_count() > 0);
        let registry = Arc::as_ptr(&self.shards);
        let at = match claims
            .iter()
            .position(|c| std::ptr::eq(c.registry.as_ptr(), registry))
        {
            Some(at) => at,
            None => {
                claims.push(Claim {
                    registry: Arc::downgrade(&self.shards),
                    shard: self.free_shard(),
                });
                claims.len() - 1
            }
        };
        claims.swap(0, at);
        Arc::clone(&claims[0].shard)
    }

    /// A released shard, claimed, or a new one.
    fn free_shard(&self) -> Arc<Shard> {
        let mut shards = self.shards.lock().unwrap_or_else(PoisonError::into_inner);
        let free = shards.iter().find(|s| {
            s.claimed
                .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
                .is_ok()
        });
        if let Some(shard) = free {
            return Arc::clone(shard);
        }
        let shard = Arc::new(Shard {
            claimed: AtomicBool::new(true),
            ..Shard::default()
        });
        shards.push(Arc::clone(&shard));
        shard
    }

    /// The sum of one counter over every shard.
    pub(super) fn total(&self, counter: impl Fn(&Shard) -> &Counter) -> u64 {
        let shards = self.shards.lock().unwrap_or_else(PoisonError::into_inner);
        shards
            .iter()
            .fold(0u64, |sum, s| sum.wrapping_add(counter(s).get()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn threads_count_into_their_own_shards_and_totals_add_up() {
        let counters = Counters::default();
        std::thread::scope(|s| {
            for _ in 0..4 {
                s.spawn(|| {
                    for _ in 0..10_000 {
                        counters.with(|c| c.gets.add(1));
                    }
                    counters.with(|c| c.level(99).probes.add(2));
                });
            }
        });
        assert_eq!(counters.total(|s| &s.gets), 40_000);
        assert_eq!(counters.total(|s| &s.level(COUNTED_LEVELS - 1).probes), 8);
        let shards = counters.shards.lock().unwrap().len();
        assert!((1..=4).contains(&shards), "{shards} shards");
    }

    #[test]
    fn an_exited_thread_releases_its_shard_to_the_next() {
        let counters = Arc::new(Counters::default());
        for _ in 0..5 {
            // A plain join returns once the thread has exited, its
            // thread-locals dropped (a scope may end before that).
            let mine = Arc::clone(&counters);
            std::thread::spawn(move || mine.with(|c| c.writes.add(3)))
                .join()
                .unwrap();
        }
        assert_eq!(counters.shards.lock().unwrap().len(), 1);
        assert_eq!(counters.total(|s| &s.writes), 15);
    }

    #[test]
    fn one_thread_keeps_one_claim_per_live_database() {
        let (a, b) = (Counters::default(), Counters::default());
        for _ in 0..3 {
            a.with(|c| c.gets.add(1));
            b.with(|c| c.gets.add(10));
        }
        assert_eq!((a.total(|s| &s.gets), b.total(|s| &s.gets)), (3, 30));
        drop(b);
        let c = Counters::default();
        c.with(|s| s.gets.add(1));
        CLAIMS.with(|claims| {
            assert_eq!(
                claims.borrow().len(),
                2,
                "the dropped database's claim is pruned"
            );
        });
    }
}
