//! The workers' transactions ([`siftdb::Transaction`]), in three variants:
//!
//! - **own**: reads and writes only the worker's keys (and may scan a
//!   prefix of them). No other thread writes those keys, so the commit
//!   must succeed: a conflict is a divergence.
//! - **foreign**: also reads keys of other threads, which may be written
//!   before the commit: a conflict is an expected outcome, counted.
//! - **forced**: after the transaction read an own key, the worker writes
//!   that key outside the transaction; the commit must then conflict.
//!
//! In every variant, reads at the transaction's snapshot are checked
//! exactly (the snapshot is the expected state when it began), and a read
//! of a key the transaction wrote must return that write.

use siftdb::Error;

use super::compare;
use super::counts::Kind;
use super::model::{Divergence, INDEX_DIGITS, Space, State};
use super::worker::Worker;

/// Most own keys a transaction reads.
const MAX_READS: u64 = 3;
/// Most keys a transaction writes.
const MAX_WRITES: u64 = 3;
/// Digits of the key index a transaction's prefix scan fixes: 100 keys.
const SCAN_DIGITS: usize = 3;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Variant {
    Own,
    Foreign,
    Forced,
}

impl Worker<'_> {
    /// Runs one transaction of a random variant and checks its outcome.
    pub fn transaction(&mut self) -> anyhow::Result<()> {
        let mut variant = match self.rng.below(10) {
            0..5 => Variant::Own,
            5..8 if self.threads > 1 => Variant::Foreign,
            5..8 => Variant::Own,
            _ => Variant::Forced,
        };
        let mut txn = self.db.transaction();
        let read_count = 1 + self.rng.below(MAX_READS) as usize;
        let reads = self.pick_distinct(read_count);
        for &index in &reads {
            let key = self.space.key(index);
            let found = txn.get(&key)?;
            let expected = self.states[index as usize];
            if !self.space.matches(index, expected, found.as_deref()) {
                let found = self.space.describe(index, found.as_deref());
                self.diverge(Divergence::new(
                    "transaction get",
                    &key,
                    expected.to_string(),
                    found,
                ));
            }
        }
        if variant == Variant::Foreign {
            for _ in 0..1 + self.rng.below(MAX_READS) {
                let (space, index) = self.foreign_key();
                let key = space.key(index);
                if let Some(value) = txn.get(&key)?
                    && let Err(why) = space.decode(index, &value)
                {
                    self.diverge(Divergence::new(
                        "transaction get of another thread's key",
                        &key,
                        "absent or a value of this key",
                        why,
                    ));
                }
            }
        }

        // Writes: never to the first key read, which the forced variant
        // writes outside the transaction.
        let wanted = match variant {
            Variant::Forced => 1 + self.rng.below(MAX_WRITES),
            _ => self.rng.below(MAX_WRITES + 1),
        } as usize;
        let mut writes = self.pick_distinct(wanted + 1);
        writes.retain(|&k| k != reads[0]);
        writes.truncate(wanted);
        if writes.is_empty() && variant == Variant::Forced {
            variant = Variant::Own;
        }
        let keys: Vec<(u32, bool)> = writes
            .iter()
            .map(|&k| (k, self.rng.below(100) < 80))
            .collect();
        let mut states = self.states.clone();
        for &(index, present) in &keys {
            let new = states[index as usize].next(present);
            states[index as usize] = new;
            let key = self.space.key(index);
            if present {
                txn.insert(&key, self.space.value(index, new.version()))?;
            } else {
                txn.remove(&key)?;
            }
            let found = txn.get(&key)?;
            if !self.space.matches(index, new, found.as_deref()) {
                let found = self.space.describe(index, found.as_deref());
                self.diverge(Divergence::new(
                    "transaction get of its own write",
                    &key,
                    new.to_string(),
                    found,
                ));
            }
        }
        if self.rng.below(3) == 0 {
            let index = self.pick();
            let divergence = scan_check(
                &mut txn,
                &self.space,
                &states,
                index,
                self.rng.below(2) == 0,
            )?;
            if let Some(divergence) = divergence {
                self.diverge(divergence);
            }
        }

        if variant == Variant::Forced {
            self.put_key(reads[0])?;
            self.counts.bump(Kind::Put);
        }
        let entries = if keys.is_empty() {
            Vec::new()
        } else {
            self.begin(&keys)?
        };
        match txn.commit() {
            Ok(_) => {
                if variant == Variant::Forced {
                    self.diverge(Divergence::new(
                        "transaction commit after its read key was written",
                        self.space.key(reads[0]),
                        "a conflict",
                        "a commit",
                    ));
                }
                self.counts.bump(Kind::TxnCommit);
                if !entries.is_empty() {
                    self.acknowledged(&entries)?;
                }
            }
            Err(Error::Conflict { key, reason }) => {
                if !entries.is_empty() {
                    self.abandoned()?;
                }
                match variant {
                    Variant::Forced => self.counts.bump(Kind::TxnForcedConflict),
                    Variant::Foreign => self.counts.bump(Kind::TxnConflict),
                    Variant::Own => self.diverge(Divergence::new(
                        "transaction on own keys only",
                        key.unwrap_or_default(),
                        "a commit",
                        format!("a conflict: {reason}"),
                    )),
                }
            }
            // The group stays active: the parent accepts either outcome.
            Err(other) => return Err(other.into()),
        }
        Ok(())
    }

    /// A random key of another thread (of which there must be one).
    pub fn foreign_key(&mut self) -> (Space, u32) {
        let other = (self.space.thread + 1 + self.rng.below(u64::from(self.threads) - 1) as u32)
            % self.threads;
        let space = Space {
            thread: other,
            ..self.space
        };
        // Drawn with the same skew as the owner's writes: hot keys are
        // the ones a transaction can conflict on.
        let index = self.pick();
        (space, index)
    }
}

/// Scans, inside the transaction, the 100 own keys around `index` and
/// compares them with `states` (the expected states with the
/// transaction's writes over them).
fn scan_check(
    txn: &mut siftdb::Transaction,
    space: &Space,
    states: &[State],
    index: u32,
    reverse: bool,
) -> siftdb::Result<Option<Divergence>> {
    let step = 10u32.pow((INDEX_DIGITS - SCAN_DIGITS) as u32);
    let from = index / step * step;
    let mut prefix = space.key(index);
    prefix.truncate(prefix.len() - (INDEX_DIGITS - SCAN_DIGITS));
    let iter = txn.prefix(&prefix)?;
    let found: Vec<(Vec<u8>, Vec<u8>)> = if reverse {
        iter.rev().collect::<siftdb::Result<_>>()?
    } else {
        iter.collect::<siftdb::Result<_>>()?
    };
    let mut expected: Vec<u32> = (from..(from + step).min(space.keys))
        .filter(|&i| states[i as usize].present())
        .collect();
    if reverse {
        expected.reverse();
    }
    let what = format!(
        "transaction prefix {:?}{}",
        String::from_utf8_lossy(&prefix),
        if reverse { " reversed" } else { "" }
    );
    Ok(compare::compare_listing(
        &what, space, states, &expected, &found,
    ))
}
