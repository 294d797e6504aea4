//! A database with more tables than the process may open files: tables
//! keep their filters and index in memory and open their file on demand,
//! under `max_open_files`.

use std::sync::Arc;

use siftdb::fs::FaultInjectionFs;
use siftdb::{CompactionStyle, Db};

/// The process's descriptor limit, as `ulimit -n` would set it.
const LIMIT: usize = 48;

fn builder(fs: &FaultInjectionFs) -> siftdb::DbBuilder {
    Db::builder("/db")
        .file_system(Arc::new(fs.clone()))
        .memtable_bytes(4096)
        .table_target_bytes(4096)
        .block_bytes(512)
        .block_cache_bytes(0)
        .max_open_files(16)
        .compaction_style(CompactionStyle::Leveled {
            l0_trigger: 2,
            size_ratio: 4,
            l1_bytes: 16 << 10,
        })
        .background_threads(false)
}

fn key(i: u32) -> Vec<u8> {
    format!("key{i:06}").into_bytes()
}

fn value(i: u32) -> Vec<u8> {
    format!("value {i} ").repeat(8).into_bytes()
}

#[test]
fn more_tables_than_the_descriptor_limit() {
    let fs = FaultInjectionFs::new();
    fs.limit_open_files(Some(LIMIT));
    let db = builder(&fs).open().unwrap();
    let n = 6000;
    for i in 0..n {
        db.insert(key(i * 7919 % n), value(i * 7919 % n)).unwrap();
    }
    db.flush().unwrap();
    let tables: usize = db.stats().levels.iter().map(|l| l.tables).sum();
    assert!(tables > 3 * LIMIT, "only {tables} tables");
    for i in (0..n).step_by(7) {
        assert_eq!(db.get(key(i)).unwrap(), Some(value(i)), "key {i}");
    }
    assert_eq!(db.range::<Vec<u8>, _>(..).count(), n as usize);
    assert!(fs.open_files() <= LIMIT, "{} files open", fs.open_files());
    drop(db);

    // Reopening opens every table (to load its filters), one at a time.
    let db = builder(&fs).open().unwrap();
    assert_eq!(db.range::<Vec<u8>, _>(..).count(), n as usize);
    db.compact().unwrap();
    assert_eq!(db.get(key(17)).unwrap(), Some(value(17)));
    assert!(fs.open_files() <= LIMIT, "{} files open", fs.open_files());
}
