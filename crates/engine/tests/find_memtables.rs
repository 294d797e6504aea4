//! Search by value over fresh writes: the memtables' value postings name
//! the keys that hold a value, so a search after a load reads those keys,
//! not every entry, and answers exactly what a scan answers.

#![expect(
    clippy::unwrap_used,
    reason = "test helpers fail the test on any error, like the #[test] fns clippy already exempts"
)]

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use siftdb::fs::FaultInjectionFs;
use siftdb::{Db, Extractor, FindStats, IndexDef, Method};

/// A database whose writes all stay in its (default, 32 MiB) memtable.
fn open(fs: &FaultInjectionFs) -> Db {
    Db::builder(Path::new("/db"))
        .file_system(Arc::new(fs.clone()))
        .value_index(IndexDef::new("color", Extractor::delimited(1, b',')))
        .background_threads(false)
        .open()
        .unwrap()
}

/// The keys `find_keys` returns, with what the search did.
fn find(db: &Db, color: &str, method: Option<Method>) -> (Vec<Vec<u8>>, FindStats) {
    let mut found = match method {
        Some(method) => db.find_with("color", color, method).unwrap(),
        None => db.find("color", color).unwrap(),
    };
    let keys = found.by_ref().map(|r| r.unwrap().0).collect();
    (keys, *found.stats())
}

/// Loads `n` records, record `i` of color `i % colors`; returns the model.
fn load(db: &Db, n: u32, colors: u32) -> BTreeMap<Vec<u8>, u32> {
    let mut model = BTreeMap::new();
    for i in 0..n {
        let key = format!("key{:06}", (i * 7_919) % n).into_bytes();
        db.insert(&key, format!("{i},c{}", i % colors)).unwrap();
        model.insert(key, i % colors);
    }
    model
}

fn expected(model: &BTreeMap<Vec<u8>, u32>, color: u32) -> Vec<Vec<u8>> {
    model
        .iter()
        .filter(|&(_, &c)| c == color)
        .map(|(k, _)| k.clone())
        .collect()
}

#[test]
fn a_selective_value_reads_only_its_posted_keys() {
    let fs = FaultInjectionFs::new();
    let db = open(&fs);
    let model = load(&db, 20_000, 2_000);
    assert_eq!(db.stats().levels.iter().map(|l| l.tables).sum::<usize>(), 0);
    for color in [0, 7, 1_999] {
        let want = expected(&model, color);
        let (planned, stats) = find(&db, &format!("c{color}"), None);
        assert_eq!(planned, want);
        assert_eq!(stats.memtable_entries_scanned, 0, "{stats:?}");
        assert_eq!(stats.memtable_postings_read, want.len() as u64, "{stats:?}");
        let (scanned, _) = find(&db, &format!("c{color}"), Some(Method::Scan));
        assert_eq!(scanned, want);
    }
    let (absent, stats) = find(&db, "c2000", None);
    assert!(absent.is_empty());
    assert_eq!(
        (stats.memtable_entries_scanned, stats.memtable_postings_read),
        (0, 0)
    );
}

#[test]
fn a_common_value_reads_the_whole_memtable() {
    let fs = FaultInjectionFs::new();
    let db = open(&fs);
    let model = load(&db, 4_000, 3);
    for method in [None, Some(Method::BloomScan), Some(Method::Scan)] {
        let (got, stats) = find(&db, "c1", method);
        assert_eq!(got, expected(&model, 1), "{method:?}");
        // A third of the entries is past the share where postings pay.
        assert_eq!(stats.memtable_postings_read, 0, "{method:?}: {stats:?}");
    }
}

#[test]
fn overwrites_deletes_and_snapshots_are_decided_by_the_newest_version() {
    let fs = FaultInjectionFs::new();
    let db = open(&fs);
    for i in 0..1_000 {
        db.insert(format!("filler{i:04}"), format!("{i},grey{i}"))
            .unwrap();
    }
    db.insert(b"a", b"1,red").unwrap();
    db.insert(b"b", b"2,red").unwrap();
    // Rewritten with the same value: still one posting.
    db.insert(b"b", b"2,red").unwrap();
    let snapshot = db.snapshot();
    db.insert(b"a", b"1,blue").unwrap();
    db.remove(b"b").unwrap();
    db.insert(b"c", b"3,red").unwrap();

    let then: Vec<Vec<u8>> = snapshot
        .find_keys("color", "red")
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(then, [b"a".to_vec(), b"b".to_vec()]);
    let (now, stats) = find(&db, "red", None);
    assert_eq!(now, [b"c".to_vec()]);
    // a (now blue) and b (deleted) were posted under red: looked up and
    // dropped.
    assert_eq!(stats.memtable_postings_read, 3, "{stats:?}");
    assert_eq!(stats.memtable_entries_scanned, 0, "{stats:?}");
    let (blue, _) = find(&db, "blue", None);
    assert_eq!(blue, [b"a".to_vec()]);
    let from: Vec<Vec<u8>> = db
        .find_from("color", "grey5", b"filler0005")
        .unwrap()
        .map(|r| r.unwrap().0)
        .collect();
    assert_eq!(from, [b"filler0005".to_vec()]);
    let past: Vec<Vec<u8>> = db
        .find_from("color", "grey5", b"filler0005\0")
        .unwrap()
        .map(|r| r.unwrap().0)
        .collect();
    assert!(past.is_empty());
}

#[test]
fn an_index_added_while_the_memtable_fills_scans_that_memtable() {
    let fs = FaultInjectionFs::new();
    let db = Db::builder(Path::new("/db"))
        .file_system(Arc::new(fs.clone()))
        .background_threads(false)
        .open()
        .unwrap();
    let model = load(&db, 2_000, 500);
    db.add_index(IndexDef::new("color", Extractor::delimited(1, b',')))
        .unwrap();
    db.wait_for_backfill().unwrap();
    let model = {
        let mut model = model;
        model.extend(load(&db, 2_000, 500));
        model
    };
    let (got, stats) = find(&db, "c42", None);
    assert_eq!(got, expected(&model, 42));
    assert_eq!(stats.memtable_postings_read, 0, "{stats:?}");
    assert!(stats.memtable_entries_scanned > 0, "{stats:?}");
    // The next memtable keeps postings of it.
    db.flush().unwrap();
    for i in 0..100 {
        db.insert(format!("filler{i:03}"), format!("{i},grey{i}"))
            .unwrap();
    }
    db.insert(b"fresh", b"0,c42").unwrap();
    let (got, stats) = find(&db, "c42", None);
    let mut want = expected(&model, 42);
    want.push(b"fresh".to_vec());
    want.sort();
    assert_eq!(got, want);
    assert_eq!(stats.memtable_postings_read, 1, "{stats:?}");
}

#[test]
fn concurrent_writers_leave_complete_postings() {
    let fs = FaultInjectionFs::new();
    let db = Arc::new(open(&fs));
    std::thread::scope(|s| {
        for t in 0..4u32 {
            let db = Arc::clone(&db);
            s.spawn(move || {
                for i in 0..2_000u32 {
                    let key = format!("t{t}-{i:05}");
                    db.insert(key, format!("{i},c{}", i % 400)).unwrap();
                }
            });
        }
    });
    for color in [0, 123, 399] {
        let (got, stats) = find(&db, &format!("c{color}"), None);
        let (scanned, _) = find(&db, &format!("c{color}"), Some(Method::Scan));
        assert_eq!(got, scanned);
        assert_eq!(got.len(), 20);
        assert_eq!(stats.memtable_postings_read, 20, "{stats:?}");
    }
}
