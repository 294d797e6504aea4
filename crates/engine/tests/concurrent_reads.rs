//! Reads racing updates, flushes and compactions: every key is always
//! present (it is only ever overwritten), so a get that finds nothing, or a
//! scan that misses a key, read a version a compaction had already dropped.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use siftdb::Db;
use siftdb::fs::FaultInjectionFs;

const KEYS: u32 = 40;

fn key(i: u32) -> Vec<u8> {
    format!("key{i:03}").into_bytes()
}

#[test]
fn reads_never_miss_a_key_that_is_only_overwritten() {
    let fs = FaultInjectionFs::new();
    let db = Arc::new(
        Db::builder("/db")
            .file_system(Arc::new(fs))
            .memtable_bytes(4096)
            .table_target_bytes(4096)
            .open()
            .unwrap(),
    );
    for i in 0..KEYS {
        db.insert(key(i), b"0").unwrap();
    }
    let stop = Arc::new(AtomicBool::new(false));
    let writer = {
        let (db, stop) = (Arc::clone(&db), Arc::clone(&stop));
        std::thread::spawn(move || {
            let mut round = 0u64;
            while !stop.load(Ordering::Relaxed) {
                round += 1;
                for i in 0..KEYS {
                    db.insert(key(i), round.to_string()).unwrap();
                }
            }
        })
    };
    let compactor = {
        let (db, stop) = (Arc::clone(&db), Arc::clone(&stop));
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                db.compact().unwrap();
            }
        })
    };
    let deadline = Instant::now() + Duration::from_secs(3);
    let mut reads = 0u64;
    let mut i = 0;
    while Instant::now() < deadline {
        i = (i + 7) % KEYS;
        assert!(db.get(key(i)).unwrap().is_some(), "get lost key {i}");
        if reads.is_multiple_of(16) {
            let found = db.range(key(0)..key(KEYS)).count();
            assert_eq!(found, KEYS as usize, "a scan lost keys");
            assert_eq!(db.prefix(b"key").count(), KEYS as usize);
        }
        reads += 1;
    }
    stop.store(true, Ordering::Relaxed);
    writer.join().unwrap();
    compactor.join().unwrap();
    assert!(reads > 1000, "{reads} reads");
}
