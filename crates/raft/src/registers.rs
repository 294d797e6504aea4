//! The workload of the fault tests: clients that read, write, delete and
//! compare-and-set a few keys through any node, retrying as
//! [`Client`] does, and record each key's history for
//! [`linearizable::check`]. The in-process test (`tests/faults.rs`) and
//! the test of `sift serve` processes in network namespaces share it.
//!
//! A value is its write's id repeated to its length (8 bytes, or 1 MiB
//! for one write in twenty), so a read tells which write it saw and that
//! it saw all of it.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use crate::errors::{ReadError, WriteError};
use crate::linearizable::{self, Answer, Call, Operation};
use crate::{Check, Client, Command, Op, Outcome};

/// A small generator of pseudo-random numbers (splitmix64), for a
/// workload and its faults drawn from one printed seed.
#[derive(Clone, Debug)]
pub struct Rng(pub u64);

impl Rng {
    /// The next number.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number below `n` (which must not be 0).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }
}

/// How long a fault test runs, in seconds (`SIFT_FAULT_SECS`, 20 by
/// default), and the seed its faults and operations are drawn from
/// (`SIFT_FAULT_SEED`, by default from the clock). Prints the seed, so
/// that a failed run can be replayed.
pub fn fault_run_from_env() -> (u64, u64) {
    let var = |name| std::env::var(name).ok().and_then(|s| s.parse().ok());
    let seconds = var("SIFT_FAULT_SECS").unwrap_or(20);
    let seed = var("SIFT_FAULT_SEED").unwrap_or_else(|| {
        let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH);
        now.map_or(1, |d| d.as_nanos() as u64)
    });
    eprintln!("SIFT_FAULT_SEED={seed}");
    (seconds, seed)
}

/// The length of the large values, one write in [`BIG_EVERY`].
pub const BIG_VALUE: usize = 1 << 20;

/// One write in this many is [`BIG_VALUE`] bytes.
pub const BIG_EVERY: u64 = 20;

/// What the clients did, by key, on one clock.
#[derive(Debug)]
pub struct Registers {
    keys: u64,
    retry_for: Duration,
    start: Instant,
    by_key: Mutex<BTreeMap<u64, Vec<Operation<u64>>>>,
    /// What no client may ever be answered: a damaged value, an error
    /// that says the request itself was wrong.
    faults: Mutex<Vec<String>>,
    /// Writes answered "not applied", left out of the histories.
    not_applied: AtomicUsize,
}

/// What [`Registers::check`] found in histories that are linearizable.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Summary {
    /// Operations recorded.
    pub operations: usize,
    /// Those whose outcome is unknown (every retry failed).
    pub unknown: usize,
    /// Writes answered "not applied" (every attempt turned away), left
    /// out of the histories: one that took effect after all would leave a
    /// read unexplained.
    pub not_applied: usize,
}

impl Registers {
    /// Histories of `keys` keys, whose clients retry each operation for
    /// `retry_for`.
    pub fn new(keys: u64, retry_for: Duration) -> Self {
        Self {
            keys,
            retry_for,
            start: Instant::now(),
            by_key: Mutex::default(),
            faults: Mutex::default(),
            not_applied: AtomicUsize::new(0),
        }
    }

    fn now(&self) -> u64 {
        u64::try_from(self.start.elapsed().as_micros()).unwrap_or(u64::MAX)
    }

    fn record(&self, key: u64, operation: Operation<u64>) {
        self.by_key
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .entry(key)
            .or_default()
            .push(operation);
    }

    fn fault(&self, what: String) {
        self.faults
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(what);
    }

    /// Client `me`: operations on random keys through random nodes of
    /// `addrs` until `until`, each recorded with its call and answer
    /// times. Returns how many it made. An odd `me` keeps one [`Client`]
    /// (one session) of every node through the whole run, its faults and
    /// restarts; an even one makes a client, with a new session, per
    /// operation.
    pub async fn client(&self, seed: u64, me: u64, addrs: &[String], until: Instant) -> usize {
        let mut rng = Rng(seed ^ me);
        // What this client last read of each key: the value's id and length.
        let mut last_read: BTreeMap<u64, Option<(u64, usize)>> = BTreeMap::new();
        let mut done = 0;
        let mut next_id = me << 32;
        let kept = (me % 2 == 1)
            .then(|| Client::of_cluster(addrs.iter().cloned()))
            .flatten()
            .map(|client| client.retry_for(self.retry_for));
        while Instant::now() < until {
            let addr = &addrs[rng.below(addrs.len() as u64) as usize];
            let client = kept
                .clone()
                .unwrap_or_else(|| Client::new(addr.clone()).retry_for(self.retry_for));
            let k = rng.below(self.keys);
            next_id += 1;
            let id = next_id;
            let len = if rng.below(BIG_EVERY) == 0 {
                BIG_VALUE
            } else {
                8
            };
            let called = self.now();
            let (call, answer) = match rng.below(10) {
                0..=3 => {
                    let answer = match client.get(&key(k)).await {
                        Ok(found) => match found.as_deref().map(id_of).transpose() {
                            Ok(seen) => {
                                let len = found.as_ref().map_or(0, Vec::len);
                                last_read.insert(k, seen.map(|id| (id, len)));
                                Answer::Value(seen)
                            }
                            Err(damage) => {
                                self.fault(format!("key {k}: {damage}"));
                                Answer::Unknown
                            }
                        },
                        Err(e) => self.read_failed(e),
                    };
                    (Call::Read, Some(answer))
                }
                4..=6 => {
                    let written = client.put(&key(k), &value(id, len)).await;
                    (Call::Write(Some(id)), self.answer_of(written))
                }
                7 => {
                    let written = client.delete(&key(k)).await;
                    (Call::Write(None), self.answer_of(written))
                }
                _ => {
                    let expected = last_read.get(&k).copied().flatten();
                    let command = Command::Txn {
                        checks: vec![Check {
                            key: key(k),
                            value: expected.map(|(id, len)| value(id, len)),
                        }],
                        ops: vec![Op::Put {
                            key: key(k),
                            value: value(id, 8),
                        }],
                    };
                    let written = client.write(&command).await;
                    let call = Call::CompareAndSet {
                        expected: expected.map(|(id, _)| id),
                        new: Some(id),
                    };
                    (call, self.answer_of(written))
                }
            };
            let answered = self.now();
            // A write the client was told had no effect stays out of the
            // history: if it took effect after all, a read of it will not
            // be explained.
            if let Some(answer) = answer {
                self.record(
                    k,
                    Operation {
                        call,
                        answer,
                        called,
                        answered,
                    },
                );
            }
            done += 1;
        }
        done
    }

    /// Reads every key through `addr` (once the faults are over), so that
    /// each history ends with the value every node converged to.
    ///
    /// # Errors
    /// The read's, if it fails after its retries.
    pub async fn read_every_key(&self, addr: &str) -> Result<(), ReadError> {
        let client = Client::new(addr).retry_for(self.retry_for.max(Duration::from_secs(10)));
        for k in 0..self.keys {
            let called = self.now();
            let found = client.get(&key(k)).await?;
            let answer = match found.as_deref().map(id_of).transpose() {
                Ok(seen) => Answer::Value(seen),
                Err(damage) => {
                    self.fault(format!("key {k}: {damage}"));
                    Answer::Unknown
                }
            };
            let answered = self.now();
            self.record(
                k,
                Operation {
                    call: Call::Read,
                    answer,
                    called,
                    answered,
                },
            );
        }
        Ok(())
    }

    /// Whether every key's history is linearizable and no client was given
    /// what none may be.
    ///
    /// # Errors
    /// The first key whose history no order explains, with that history;
    /// or every answer no client may get.
    pub fn check(&self) -> Result<Summary, String> {
        let faults = self.faults.lock().unwrap_or_else(PoisonError::into_inner);
        if !faults.is_empty() {
            return Err(format!("answers no client may get: {faults:?}"));
        }
        let by_key = self.by_key.lock().unwrap_or_else(PoisonError::into_inner);
        for (k, history) in by_key.iter() {
            linearizable::check(None, history)
                .map_err(|violation| format!("key {k}: {violation}; its history: {history:?}"))?;
        }
        let all = || by_key.values().flatten();
        Ok(Summary {
            operations: all().count(),
            unknown: all().filter(|op| op.answer == Answer::Unknown).count(),
            not_applied: self.not_applied.load(Ordering::Relaxed),
        })
    }

    /// The answer a write's result gives; `None` for a write that was not
    /// applied.
    fn answer_of(&self, written: Result<crate::api::Written, WriteError>) -> Option<Answer<u64>> {
        match written {
            Ok(written) => Some(match written.outcome {
                Outcome::Applied => Answer::Done,
                Outcome::Conflict { .. } => Answer::Conflict,
                // The write's fate cannot be told.
                Outcome::SessionExpired => Answer::Unknown,
                other => {
                    self.fault(format!("a write answered {other:?}"));
                    Answer::Unknown
                }
            }),
            Err(WriteError::NotApplied(_)) => {
                self.not_applied.fetch_add(1, Ordering::Relaxed);
                None
            }
            Err(WriteError::Unknown(_)) => Some(Answer::Unknown),
            // Only an unavailable cluster may fail a valid write.
            Err(
                e @ (WriteError::Invalid(_) | WriteError::Failed(_) | WriteError::Unauthorized(_)),
            ) => {
                self.fault(e.to_string());
                Some(Answer::Unknown)
            }
        }
    }

    /// A read that failed after every retry. Only an unavailable cluster
    /// may fail it.
    fn read_failed(&self, e: ReadError) -> Answer<u64> {
        if !matches!(e, ReadError::Unavailable(_)) {
            self.fault(e.to_string());
        }
        Answer::Unknown
    }
}

/// The name of key `k`.
fn key(k: u64) -> Vec<u8> {
    format!("key{k}").into_bytes()
}

/// Value `id`: its id repeated to `len` bytes.
fn value(id: u64, len: usize) -> Vec<u8> {
    id.to_be_bytes().iter().copied().cycle().take(len).collect()
}

/// The id of a value read, if it is whole.
fn id_of(bytes: &[u8]) -> Result<u64, String> {
    let id = bytes
        .get(..8)
        .and_then(|head| head.try_into().ok())
        .map(u64::from_be_bytes)
        .ok_or_else(|| format!("a value of {} bytes", bytes.len()))?;
    if bytes == value(id, bytes.len()) {
        Ok(id)
    } else {
        Err(format!("a damaged value of write {id}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_value_tells_its_write_and_whether_it_is_whole() {
        let whole = value(7, 100);
        assert_eq!(id_of(&whole), Ok(7));
        let mut torn = whole.clone();
        torn[50] ^= 1;
        assert!(id_of(&torn).is_err());
        assert!(id_of(&whole[..4]).is_err());
    }

    #[test]
    fn a_history_that_goes_back_fails_the_check_and_a_bad_answer_too() {
        let registers = Registers::new(1, Duration::ZERO);
        let op = |call, answer, called, answered| Operation {
            call,
            answer,
            called,
            answered,
        };
        registers.record(0, op(Call::Write(Some(1)), Answer::Done, 0, 1));
        registers.record(0, op(Call::Read, Answer::Value(Some(1)), 2, 3));
        assert_eq!(
            registers.check(),
            Ok(Summary {
                operations: 2,
                unknown: 0,
                not_applied: 0,
            })
        );
        registers.record(0, op(Call::Read, Answer::Value(None), 4, 5));
        assert!(registers.check().unwrap_err().starts_with("key 0:"));

        let registers = Registers::new(1, Duration::ZERO);
        assert_eq!(
            registers.read_failed(ReadError::Failed("damaged".into())),
            Answer::Unknown
        );
        assert!(registers.check().unwrap_err().contains("damaged"));
    }
}
