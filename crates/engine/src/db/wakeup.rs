//! Waiting for another thread's signal: spin for a few microseconds,
//! then sleep. A group's hand-offs (a writer's turn, the members'
//! inserts, the publication) usually come within microseconds, less than
//! a sleep and a wake-up cost: a sleeping waiter costs its waker a system
//! call and itself a context switch. The signaller makes that system call
//! only when someone sleeps. (RocksDB's `WriteThread::AwaitState` spins,
//! then yields, then blocks, for the same reason.)
//!
//! Spinning pays only where the thread that signals has a core to run on
//! meanwhile: on a machine of few cores, waiters sleep at once. (With 8
//! writers on 2 cores, spinning cost synced writes a third of their rate.)

use std::sync::atomic::{AtomicUsize, Ordering, fence};
use std::sync::{Condvar, Mutex, OnceLock};
use std::time::{Duration, Instant};

use super::lock;

/// Busy polls before yielding: about a microsecond.
const SPINS: u32 = 128;

/// How long a waiter yields its core between polls before it sleeps. A
/// yield returns at once on an idle core, and runs another thread (the
/// leader it waits for, perhaps) where cores are short.
const YIELD_FOR: Duration = Duration::from_micros(50);

/// Waiters spin on machines of at least this many cores.
const SPIN_CORES: usize = 4;

/// The cores this process may run on.
pub(super) fn cores() -> usize {
    static CORES: OnceLock<usize> = OnceLock::new();
    *CORES.get_or_init(|| std::thread::available_parallelism().map_or(1, usize::from))
}

/// Where threads wait for conditions that other threads make true.
#[derive(Debug, Default)]
pub(super) struct Wakeup {
    /// Threads asleep, or about to sleep, in [`Wakeup::wait_for`].
    sleepers: AtomicUsize,
    lock: Mutex<()>,
    woken: Condvar,
}

impl Wakeup {
    /// Polls `ready` until it gives a value, and returns that. `ready`
    /// must read state that the signaller changed before calling
    /// [`Wakeup::signal`].
    pub(super) fn wait_for<T>(&self, ready: impl FnMut() -> Option<T>) -> T {
        self.wait(cores() >= SPIN_CORES, ready)
    }

    /// [`Wakeup::wait_for`], spinning first or not.
    fn wait<T>(&self, spin: bool, mut ready: impl FnMut() -> Option<T>) -> T {
        if spin && let Some(value) = spin_for(&mut ready) {
            return value;
        }
        let mut guard = lock(&self.lock);
        self.sleepers.fetch_add(1, Ordering::SeqCst);
        // Pairs with the fence in `signal`: either the signaller sees this
        // sleeper, or this sleeper sees the state it changed.
        fence(Ordering::SeqCst);
        loop {
            if let Some(value) = ready() {
                self.sleepers.fetch_sub(1, Ordering::SeqCst);
                return value;
            }
            guard = self
                .woken
                .wait(guard)
                .unwrap_or_else(std::sync::PoisonError::into_inner);
        }
    }

    /// Wakes every sleeper, after the caller made a condition true.
    pub(super) fn signal(&self) {
        fence(Ordering::SeqCst);
        if self.sleepers.load(Ordering::SeqCst) > 0 {
            // A sleeper holds the lock from its last poll until it sleeps:
            // once the lock is taken here, it sleeps and will hear the
            // notification. Notified after the lock is let go, it does
            // not wake to find the lock held.
            drop(lock(&self.lock));
            self.woken.notify_all();
        }
    }
}

/// Polls `ready` for a few microseconds.
fn spin_for<T>(ready: &mut impl FnMut() -> Option<T>) -> Option<T> {
    for _ in 0..SPINS {
        if let Some(value) = ready() {
            return Some(value);
        }
        std::hint::spin_loop();
    }
    let start = Instant::now();
    while start.elapsed() < YIELD_FOR {
        if let Some(value) = ready() {
            return Some(value);
        }
        std::thread::yield_now();
    }
    ready()
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::AtomicBool;

    use super::*;

    #[test]
    fn a_sleeping_waiter_is_woken_by_the_signal_and_a_late_one_returns_at_once() {
        for (spin, delay) in [false, true]
            .into_iter()
            .flat_map(|spin| [(spin, Duration::ZERO), (spin, Duration::from_millis(5))])
        {
            let wakeup = Arc::new(Wakeup::default());
            let flag = Arc::new(AtomicBool::new(false));
            let waiters: Vec<_> = (0..4)
                .map(|_| {
                    let (wakeup, flag) = (Arc::clone(&wakeup), Arc::clone(&flag));
                    std::thread::spawn(move || {
                        wakeup.wait(spin, || flag.load(Ordering::Acquire).then_some(()))
                    })
                })
                .collect();
            std::thread::sleep(delay);
            flag.store(true, Ordering::Release);
            wakeup.signal();
            for waiter in waiters {
                waiter.join().unwrap();
            }
            wakeup.wait(spin, || flag.load(Ordering::Acquire).then_some(()));
            assert_eq!(wakeup.sleepers.load(Ordering::SeqCst), 0);
        }
    }

    #[test]
    fn no_signal_is_lost_between_a_check_and_a_sleep() {
        // Many short rounds: each hands a counter back and forth, so a
        // lost wake-up hangs the test. One side spins, the other sleeps.
        let wakeup = Arc::new(Wakeup::default());
        let turn = Arc::new(AtomicUsize::new(0));
        let rounds = 2_000;
        let other = {
            let (wakeup, turn) = (Arc::clone(&wakeup), Arc::clone(&turn));
            std::thread::spawn(move || {
                for i in 0..rounds {
                    wakeup.wait(true, || {
                        (turn.load(Ordering::Acquire) == 2 * i + 1).then_some(())
                    });
                    turn.store(2 * i + 2, Ordering::Release);
                    wakeup.signal();
                }
            })
        };
        for i in 0..rounds {
            turn.store(2 * i + 1, Ordering::Release);
            wakeup.signal();
            wakeup.wait(false, || {
                (turn.load(Ordering::Acquire) == 2 * i + 2).then_some(())
            });
        }
        other.join().unwrap();
    }
}
