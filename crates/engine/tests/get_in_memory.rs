//! `Db::get_in_memory`: answers only from memory, never reads a file, and
//! every answer it gives is the one `Db::get` gives.

use std::collections::BTreeMap;
use std::sync::Arc;

use proptest::prelude::*;
use siftdb::fs::{FaultInjectionFs, FaultOp};
use siftdb::{Db, DbBuilder, InMemory};

fn builder(fs: &FaultInjectionFs) -> DbBuilder {
    Db::builder("/db")
        .file_system(Arc::new(fs.clone()))
        .memtable_bytes(16 << 10)
        .table_target_bytes(16 << 10)
        .background_threads(false)
}

fn key(i: u32) -> Vec<u8> {
    format!("key{i:06}").into_bytes()
}

fn value(i: u32) -> Vec<u8> {
    format!("value of {i}").into_bytes()
}

/// Every file read from here on fails: a lookup that tried one would
/// return an error.
fn fail_every_table_read(fs: &FaultInjectionFs) {
    fs.inject(FaultOp::Read, ".sst", usize::MAX);
}

#[test]
fn memtable_keys_are_answered_and_tables_not_yet_read_need_a_read() {
    let fs = FaultInjectionFs::new();
    let db = builder(&fs).open().unwrap();
    for i in 0..2000 {
        db.insert(key(i), value(i)).unwrap();
    }
    db.flush().unwrap();
    drop(db);
    let db = builder(&fs).open().unwrap();
    db.insert(key(5), b"fresh").unwrap();
    db.remove(key(6)).unwrap();
    fail_every_table_read(&fs);

    let answer = |i| db.get_in_memory(key(i)).unwrap();
    assert_eq!(answer(5), InMemory::Answer(Some(b"fresh".to_vec())));
    assert_eq!(answer(6), InMemory::Answer(None));
    // The open read no table: the others need one, and asking made none.
    assert_eq!(answer(7), InMemory::NeedsRead);
    assert_eq!(answer(1500), InMemory::NeedsRead);
    let snapshot = db.snapshot();
    db.insert(key(5), b"newer").unwrap();
    assert_eq!(
        snapshot.get_in_memory(key(5)).unwrap(),
        InMemory::Answer(Some(b"fresh".to_vec()))
    );
    assert_eq!(snapshot.get_in_memory(key(7)).unwrap(), InMemory::NeedsRead);
    assert!(db.get(key(7)).is_err(), "the reads do fail");
}

#[test]
fn once_read_a_key_and_the_missing_keys_of_its_table_are_answered_from_memory() {
    let fs = FaultInjectionFs::new();
    let db = builder(&fs).open().unwrap();
    for i in 0..2000 {
        db.insert(key(2 * i), value(2 * i)).unwrap();
    }
    db.flush().unwrap();
    drop(db);
    let db = builder(&fs).open().unwrap();
    // Reads the metadata of every table and one block of each.
    for i in (0..2000).step_by(50) {
        assert_eq!(db.get(key(2 * i)).unwrap(), Some(value(2 * i)));
    }
    let gets = db.stats().gets;
    fail_every_table_read(&fs);

    for i in (0..2000).step_by(50) {
        assert_eq!(
            db.get_in_memory(key(2 * i)).unwrap(),
            InMemory::Answer(Some(value(2 * i)))
        );
    }
    // Odd keys are missing: the filters answer, bar false positives whose
    // block is not cached (about 1% at 10 bits per key).
    let mut answered = 0;
    for i in 0..2000 {
        match db.get_in_memory(key(2 * i + 1)).unwrap() {
            InMemory::Answer(found) => {
                assert_eq!(found, None);
                answered += 1;
            }
            InMemory::NeedsRead => {}
        }
    }
    assert!(answered >= 1900, "{answered} of 2000 missing keys answered");
    // A lookup that gave up is not a get; the answered ones are.
    assert_eq!(db.stats().gets, gets + 40 + answered);
}

#[derive(Debug, Clone)]
enum Op {
    Insert(u32, u32),
    Remove(u32),
    Get(u32),
    Flush,
    Compact,
    Reopen,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        10 => (0u32..600, any::<u32>()).prop_map(|(k, v)| Op::Insert(k, v)),
        3 => (0u32..600).prop_map(Op::Remove),
        12 => (0u32..700).prop_map(Op::Get),
        1 => Just(Op::Flush),
        1 => Just(Op::Compact),
        1 => Just(Op::Reopen),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// Against a model, under a small block cache (so blocks come and go)
    /// and reopens (so metadata starts unread): an answer from memory is
    /// the model's, and after `get` has read what was missing, memory
    /// answers the same key (while the cache holds its block).
    #[test]
    fn an_answer_from_memory_is_the_answer_from_the_files(ops in proptest::collection::vec(op(), 1..300)) {
        let fs = FaultInjectionFs::new();
        let open = || builder(&fs).block_cache_bytes(8 << 10).open().unwrap();
        let mut db = open();
        let mut model = BTreeMap::new();
        for op in ops {
            match op {
                Op::Insert(k, v) => {
                    db.insert(key(k), value(v)).unwrap();
                    model.insert(k, value(v));
                }
                Op::Remove(k) => {
                    db.remove(key(k)).unwrap();
                    model.remove(&k);
                }
                Op::Get(k) => {
                    let expected = model.get(&k).cloned();
                    if let InMemory::Answer(found) = db.get_in_memory(key(k)).unwrap() {
                        prop_assert_eq!(&found, &expected, "key {} from memory", k);
                    }
                    prop_assert_eq!(db.get(key(k)).unwrap(), expected.clone(), "key {}", k);
                    if expected.is_some() {
                        // The block just read is the newest in the cache.
                        prop_assert_eq!(db.get_in_memory(key(k)).unwrap(), InMemory::Answer(expected));
                    }
                }
                Op::Flush => db.flush().unwrap(),
                Op::Compact => db.compact().unwrap(),
                Op::Reopen => {
                    drop(db);
                    db = open();
                }
            }
        }
    }
}
