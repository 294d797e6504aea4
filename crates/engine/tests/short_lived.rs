//! Processes that open, write a little and close, as `sift put` does:
//! each open writes the WAL it finds as a level-0 table, and level 0 must
//! stay bounded however many there are.

use std::sync::Arc;

use siftdb::Db;
use siftdb::fs::FaultInjectionFs;

#[test]
fn level_0_stays_bounded_under_short_lived_writers() {
    let fs = FaultInjectionFs::new();
    // No compaction thread: the process is gone before one would run.
    let open = || {
        Db::builder("/db")
            .file_system(Arc::new(fs.clone()))
            .background_threads(false)
            .open()
            .unwrap()
    };
    for i in 0..100u32 {
        let db = open();
        db.insert(format!("key{i:03}"), b"v").unwrap();
    }
    let db = open();
    let l0 = &db.stats().levels[0];
    // The default trigger is 4 runs; the open just made adds one.
    assert!(
        l0.runs <= 5,
        "{} level-0 runs after 100 short-lived writers",
        l0.runs
    );
    for i in 0..100u32 {
        assert_eq!(db.get(format!("key{i:03}")).unwrap(), Some(b"v".to_vec()));
    }
}
