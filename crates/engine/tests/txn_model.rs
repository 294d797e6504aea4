//! Serializability, checked against a model: threads run random
//! transactions (gets, range scans both ways, inserts, removes) on a small
//! key space and log what each committed one saw and did. Replaying the
//! committed transactions in the order of the sequence numbers their
//! commits return, against a `BTreeMap`, must reproduce every read.

#![expect(
    clippy::unwrap_used,
    reason = "test helpers fail the test on any error, like the #[test] fns clippy already exempts"
)]

use std::collections::BTreeMap;
use std::sync::Arc;

use siftdb::{Db, Error};

type Model = BTreeMap<Vec<u8>, Vec<u8>>;
type Entries = Vec<(Vec<u8>, Vec<u8>)>;

/// One operation as the transaction performed it, with what it saw.
#[derive(Debug, Clone)]
enum Op {
    Get(Vec<u8>, Option<Vec<u8>>),
    Range(Vec<u8>, Vec<u8>, bool, Entries),
    Put(Vec<u8>, Vec<u8>),
    Del(Vec<u8>),
}

/// A committed transaction: where it serializes, and what it did.
#[derive(Debug)]
struct Committed {
    seq: u64,
    read_only: bool,
    ops: Vec<Op>,
}

/// xorshift64*: a reproducible stream per thread without a dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) % n
    }
}

/// Keys 0..12: small enough that transactions collide often.
const KEYS: u64 = 12;

fn key(i: u64) -> Vec<u8> {
    format!("k{i:02}").into_bytes()
}

fn run_thread(db: &Db, thread: u64, txns: u64, precheck_label: &str) -> (Vec<Committed>, u64) {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15 ^ (thread + 1).wrapping_mul(0x1234_5678_9abc));
    let mut committed = Vec::new();
    let mut conflicts = 0;
    for t in 0..txns {
        let mut txn = db.transaction();
        let mut ops = Vec::new();
        for o in 0..1 + rng.next(6) {
            match rng.next(10) {
                0..=3 => {
                    let k = key(rng.next(KEYS));
                    let seen = txn.get(&k).unwrap();
                    ops.push(Op::Get(k, seen));
                }
                4..=5 => {
                    let (a, b) = (rng.next(KEYS), rng.next(KEYS));
                    let (lo, hi) = (key(a.min(b)), key(a.max(b)));
                    let rev = rng.next(2) == 0;
                    let iter = txn.range(lo.clone()..hi.clone()).unwrap();
                    let seen: Entries = if rev {
                        iter.rev().map(Result::unwrap).collect()
                    } else {
                        iter.map(Result::unwrap).collect()
                    };
                    ops.push(Op::Range(lo, hi, rev, seen));
                }
                6..=8 => {
                    let k = key(rng.next(KEYS));
                    let v = format!("{precheck_label}-t{thread}-{t}-{o}").into_bytes();
                    txn.insert(&k, &v).unwrap();
                    ops.push(Op::Put(k, v));
                }
                _ => {
                    let k = key(rng.next(KEYS));
                    txn.remove(&k).unwrap();
                    ops.push(Op::Del(k));
                }
            }
        }
        let read_only = !ops.iter().any(|op| matches!(op, Op::Put(..) | Op::Del(..)));
        // Now and then, give up instead: nothing of it may show.
        if rng.next(20) == 0 {
            txn.rollback();
            continue;
        }
        match txn.commit() {
            Ok(seq) => committed.push(Committed {
                seq,
                read_only,
                ops,
            }),
            Err(Error::Conflict { key, .. }) => {
                assert!(key.is_some(), "a conflict names its key");
                conflicts += 1;
            }
            Err(other) => unreachable!("{other}"),
        }
    }
    (committed, conflicts)
}

/// Replays `history` in serialization order; panics at the first read
/// that the serial order cannot explain. Returns the final state.
fn check_serial(mut history: Vec<Committed>) -> Model {
    // A read-only transaction read the state after every commit up to its
    // snapshot, so it goes after a writing one with the same number.
    history.sort_by_key(|c| (c.seq, c.read_only));
    let mut state = Model::new();
    for (at, txn) in history.iter().enumerate() {
        let mut view = state.clone();
        for op in &txn.ops {
            match op {
                Op::Get(k, seen) => assert_eq!(
                    view.get(k),
                    seen.as_ref(),
                    "transaction #{at} (seq {}) read {k:?}: {txn:?}",
                    txn.seq
                ),
                Op::Range(lo, hi, rev, seen) => {
                    let mut want: Entries = view
                        .range(lo.clone()..hi.clone())
                        .map(|(k, v)| (k.clone(), v.clone()))
                        .collect();
                    if *rev {
                        want.reverse();
                    }
                    assert_eq!(&want, seen, "transaction #{at} scanned: {txn:?}");
                }
                Op::Put(k, v) => {
                    view.insert(k.clone(), v.clone());
                }
                Op::Del(k) => {
                    view.remove(k);
                }
            }
        }
        if !txn.read_only {
            state = view;
        }
    }
    state
}

fn model_run(precheck: bool, threads: u64, txns: u64) {
    let dir = tempfile::tempdir().unwrap();
    let db = Arc::new(
        Db::builder(dir.path())
            .memtable_bytes(16 << 10)
            .txn_precheck(precheck)
            .open()
            .unwrap(),
    );
    let label = if precheck { "p" } else { "x" };
    let handles: Vec<_> = (0..threads)
        .map(|thread| {
            let db = Arc::clone(&db);
            std::thread::spawn(move || run_thread(&db, thread, txns, label))
        })
        .collect();
    let mut history = Vec::new();
    let mut conflicts = 0;
    for handle in handles {
        let (committed, c) = handle.join().unwrap();
        history.extend(committed);
        conflicts += c;
    }
    let writers = history.iter().filter(|c| !c.read_only).count();
    assert!(writers > 100, "too few commits to mean much: {writers}");
    let state = check_serial(history);
    let stored: Model = db.range::<Vec<u8>, _>(..).map(Result::unwrap).collect();
    assert_eq!(stored, state, "the database ends in the replayed state");
    let stats = db.txn_stats();
    assert_eq!(stats.conflicts, conflicts);
    assert_eq!(stats.retained_commits, 0);
    assert!(
        conflicts > 0,
        "{threads} threads on {KEYS} keys should collide"
    );
}

#[test]
fn concurrent_transactions_are_serializable() {
    model_run(true, 4, 400);
}

#[test]
fn concurrent_transactions_are_serializable_without_the_precheck() {
    model_run(false, 3, 300);
}
