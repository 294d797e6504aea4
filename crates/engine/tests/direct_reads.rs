//! `DbBuilder::direct_reads`: tables read around the page cache answer as
//! tables read through it, under a tiny block cache and metadata budget,
//! across a reopen; a file system that cannot read so fails the open with
//! an error that says so.

use std::path::Path;

use siftdb::{Db, DbBuilder, Error};

const KEYS: u32 = 20_000;

fn key(i: u32) -> Vec<u8> {
    format!("key{i:08}").into_bytes()
}

fn value(i: u32) -> Vec<u8> {
    format!("value-{i}-{}", "v".repeat((i % 40) as usize)).into_bytes()
}

fn builder(dir: &Path) -> DbBuilder {
    Db::builder(dir)
        .memtable_bytes(64 << 10)
        .table_target_bytes(64 << 10)
        .block_cache_bytes(32 << 10)
        .filter_memory_bytes(16 << 10)
        .direct_reads(true)
}

#[test]
fn direct_reads_answer_as_reads_through_the_page_cache() {
    let dir = tempfile::tempdir().unwrap();
    let db = match builder(dir.path()).open() {
        Ok(db) => db,
        Err(Error::Io { source, .. }) if source.kind() == std::io::ErrorKind::Unsupported => {
            // The temporary directory's file system has no O_DIRECT: the
            // open said so, which is the behaviour under test there.
            assert!(source.to_string().contains("direct reads"), "{source}");
            return;
        }
        Err(other) => panic!("{other}"),
    };
    for i in 0..KEYS {
        let i = i.wrapping_mul(7919) % KEYS;
        db.insert(key(i), value(i)).unwrap();
    }
    db.flush().unwrap();
    db.wait_for_compactions().unwrap();
    drop(db);
    let db = builder(dir.path()).open().unwrap();
    for i in (0..KEYS).step_by(3) {
        assert_eq!(db.get(key(i)).unwrap(), Some(value(i)), "key {i}");
        let missing = format!("key{i:08}-missing").into_bytes();
        assert_eq!(db.get(&missing).unwrap(), None);
    }
    let scanned = db.range::<Vec<u8>, _>(..).count();
    assert_eq!(scanned, KEYS as usize);
    assert!(db.stats().levels.iter().map(|l| l.tables).sum::<usize>() > 10);
}
