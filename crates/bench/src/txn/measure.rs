//! The timed loops of `sift-bench txn`.

use std::hint::black_box;
use std::path::Path;
use std::time::Instant;

use sift_filter::KeyHash;
use siftdb::Db;
use siftdb::txn::KeySet;

use super::report::Row;

/// Look-ups timed per own-set row at least: small sets are looked up in
/// rounds so that every row times about this many (a few milliseconds).
const MIN_LOOKUPS: u64 = 200_000;

/// One look-up in this many is of a key in the set: "mostly distinct
/// keys", as a batch transaction touching each key about once.
const HIT_EVERY: u64 = 10;

/// A validation shape: the victim's read-set size and each commit's size.
#[derive(Clone, Copy, Debug)]
pub struct Shape {
    /// Row label.
    pub name: &'static str,
    /// Keys the validated transaction read.
    pub reads: u64,
    /// Keys each of the other commits wrote.
    pub writes: u64,
}

/// Experiment 3's shapes: a big reader against small commits (the commits'
/// keys probe the reader's filter) and a small reader against big commits
/// (the reader's keys probe each commit's filter).
pub const SHAPES: [Shape; 2] = [
    Shape {
        name: "reads-1000/writes-16",
        reads: 1_000,
        writes: 16,
    },
    Shape {
        name: "reads-16/writes-1000",
        reads: 16,
        writes: 1_000,
    },
];

/// Key `i` of a stream: 16 hex digits of a scrambled `i` behind `prefix`.
/// Streams that must interleave in key order (members and absent keys, a
/// reader's keys and the commits') share the prefix and differ in `i`, so
/// an ordered set's searches spread over the whole tree.
fn key(prefix: &str, i: u64) -> Vec<u8> {
    format!("{prefix}{:016x}", i.wrapping_mul(0x9e37_79b9_7f4a_7c15)).into_bytes()
}

/// Offsets that keep the streams of one experiment disjoint.
const ABSENT: u64 = 1 << 40;
const STREAM: u64 = 1 << 32;

/// Experiment 1: own-set look-ups with and without the pre-check.
pub fn own_set(n: u64, reps: u64) -> Vec<Row> {
    let members: Vec<(Vec<u8>, KeyHash)> = (0..n)
        .map(|i| key("k", i))
        .map(|k| {
            let h = KeyHash::of(&k);
            (k, h)
        })
        .collect();
    // n look-up keys: every HIT_EVERY-th a member, the rest absent.
    let probes: Vec<(Vec<u8>, KeyHash)> = (0..n)
        .map(|i| {
            if i % HIT_EVERY == 0 {
                key("k", i)
            } else {
                key("k", ABSENT + i)
            }
        })
        .map(|k| {
            let h = KeyHash::of(&k);
            (k, h)
        })
        .collect();
    let rounds = MIN_LOOKUPS.div_ceil(n).max(1);
    let mut times = [Vec::new(), Vec::new()];
    let mut exact = [0u64; 2];
    for _ in 0..reps {
        for (slot, precheck) in [true, false].into_iter().enumerate() {
            let mut set = KeySet::new(precheck);
            for (k, h) in &members {
                set.insert(k, *h);
            }
            let (_, exact_before) = set.lookup_counts();
            let start = Instant::now();
            let mut found = 0u64;
            for _ in 0..rounds {
                for (k, h) in &probes {
                    found += u64::from(set.contains(black_box(k), *h));
                }
            }
            let ns = start.elapsed().as_nanos() as f64 / (rounds * n) as f64;
            assert_eq!(found, rounds * n.div_ceil(HIT_EVERY), "wrong answers");
            times[slot].push(ns);
            exact[slot] = set.lookup_counts().1 - exact_before;
        }
    }
    let per_op = |slot: usize| exact[slot] as f64 / (rounds * n) as f64;
    vec![
        Row::new("ownset", "precheck", n, 0, &times[0], per_op(0)),
        Row::new("ownset", "exact", n, 0, &times[1], per_op(1)),
    ]
}

fn open(dir: &Path, name: &str, precheck: bool) -> anyhow::Result<Db> {
    Ok(Db::builder(dir.join(name))
        .memtable_bytes(64 << 20)
        .txn_precheck(precheck)
        .txn_max_bytes(1 << 30)
        // 1,000 commits of 1,000 keys retain about 80 MB of history.
        .txn_history_bytes(1 << 30)
        .open()?)
}

/// Experiment 2: whole transactions, per operation.
pub fn whole_txn(dir: &Path, n: u64, reps: u64) -> anyhow::Result<Vec<Row>> {
    let dbs = [
        open(dir, &format!("txn-{n}-p"), true)?,
        open(dir, &format!("txn-{n}-x"), false)?,
    ];
    let keys: Vec<(Vec<u8>, Vec<u8>)> = (0..n.div_ceil(2))
        .map(|i| (key("k", i), key("k", ABSENT + i)))
        .collect();
    let mut times = [Vec::new(), Vec::new()];
    let mut exact = [0.0; 2];
    for _ in 0..reps {
        for (slot, db) in dbs.iter().enumerate() {
            let before = db.txn_stats();
            let mut txn = db.transaction();
            let start = Instant::now();
            for (w, r) in &keys {
                txn.insert(w, b"v")?;
                black_box(txn.get(r)?);
            }
            let ns = start.elapsed().as_nanos() as f64 / (2 * keys.len()) as f64;
            txn.rollback();
            times[slot].push(ns);
            let after = db.txn_stats();
            exact[slot] = (after.lookup_exact_checks - before.lookup_exact_checks) as f64
                / (2 * keys.len()) as f64;
        }
    }
    Ok(vec![
        Row::new("txn", "precheck", n, 0, &times[0], exact[0]),
        Row::new("txn", "exact", n, 0, &times[1], exact[1]),
    ])
}

/// Experiment 3: one commit validated against `committed` commits made
/// since its snapshot; the time is the victim's `commit()` (validation
/// and its one-key WAL write), in nanoseconds.
pub fn validation(dir: &Path, shape: Shape, committed: u64, reps: u64) -> anyhow::Result<Vec<Row>> {
    let mut times = [Vec::new(), Vec::new()];
    let mut exact = [0.0; 2];
    for rep in 0..reps {
        for (slot, precheck) in [true, false].into_iter().enumerate() {
            let name = format!("val-{}-{committed}-{rep}-{slot}", shape.reads);
            let db = open(dir, &name, precheck)?;
            // An older transaction keeps the history alive, so the victim's
            // commit validates and prunes nothing: it times validation, not
            // the freeing of the sets.
            let holder = db.transaction();
            let mut victim = db.transaction();
            for i in 0..shape.reads {
                black_box(victim.get(key("k", i))?);
            }
            victim.insert("victim", "1")?;
            for c in 0..committed {
                let mut other = db.transaction();
                for i in 0..shape.writes {
                    other.insert(key("k", (c + 1) * STREAM + i), b"v")?;
                }
                other.commit()?;
            }
            let before = db.txn_stats();
            let start = Instant::now();
            victim.commit()?;
            times[slot].push(start.elapsed().as_nanos() as f64);
            let after = db.txn_stats();
            exact[slot] = (after.validation_exact_checks - before.validation_exact_checks) as f64;
            holder.rollback();
            drop(db);
            std::fs::remove_dir_all(dir.join(&name))?;
        }
    }
    let label = |m: &str| format!("{m} {}", shape.name);
    Ok(vec![
        Row::new(
            "validation",
            &label("precheck"),
            shape.reads,
            committed,
            &times[0],
            exact[0],
        ),
        Row::new(
            "validation",
            &label("exact"),
            shape.reads,
            committed,
            &times[1],
            exact[1],
        ),
    ])
}
