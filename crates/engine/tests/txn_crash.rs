//! Crashes during commits: after recovery every transaction is either
//! fully present or fully absent, and the present ones are a prefix of the
//! commits that includes every durable one.

#![expect(
    clippy::unwrap_used,
    reason = "test helpers fail the test on any error, like the #[test] fns clippy already exempts"
)]

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use proptest::prelude::*;
use siftdb::fs::{FaultInjectionFs, FileSystem};
use siftdb::{Db, Error};

fn open(fs: &FaultInjectionFs, sync: bool) -> Db {
    Db::builder(Path::new("/db"))
        .file_system(Arc::new(fs.clone()))
        .memtable_bytes(4096)
        .table_target_bytes(4096)
        .block_bytes(256)
        .sync_writes(sync)
        .background_threads(false)
        .open()
        .unwrap()
}

/// Commits transaction `i`: `width` keys of its own, and the shared key
/// `last` set to `i` (read first, so the transactions form a chain).
fn commit(db: &Db, i: usize, width: usize) {
    let mut txn = db.transaction();
    let last = txn.get("last").unwrap();
    let expected = i.checked_sub(1).map(|p| p.to_string().into_bytes());
    assert_eq!(last, expected, "transactions run one after another");
    for j in 0..width {
        txn.insert(format!("t{i:03}/{j}"), format!("value {i}.{j}").repeat(9))
            .unwrap();
    }
    if i > 0 {
        // A removal is part of the atomic unit too.
        txn.remove(format!("t{:03}/gone", i - 1)).unwrap();
    }
    txn.insert(format!("t{i:03}/gone"), "removed by the next one")
        .unwrap();
    txn.insert("last", i.to_string()).unwrap();
    txn.commit().unwrap();
}

/// How many transactions recovery kept, after checking each is whole.
fn surviving(db: &Db, widths: &[usize]) -> usize {
    let all: BTreeMap<Vec<u8>, Vec<u8>> = db.range::<Vec<u8>, _>(..).map(Result::unwrap).collect();
    let present = |i: usize| {
        let parts: Vec<bool> = (0..widths[i])
            .map(|j| all.contains_key(format!("t{i:03}/{j}").as_bytes()))
            .collect();
        assert!(
            parts.iter().all(|&p| p) || parts.iter().all(|&p| !p),
            "transaction {i} is half applied: {parts:?}"
        );
        parts.first().copied().unwrap_or(false)
    };
    let count = (0..widths.len()).take_while(|&i| present(i)).count();
    for i in count..widths.len() {
        assert!(!present(i), "transaction {i} survived but {count} did not");
    }
    let last = all
        .get(&b"last"[..])
        .map(|v| String::from_utf8(v.clone()).unwrap());
    assert_eq!(last, count.checked_sub(1).map(|c| c.to_string()));
    // Only the newest surviving transaction's `gone` key is left.
    let gone: Vec<_> = all.keys().filter(|k| k.ends_with(b"/gone")).collect();
    assert_eq!(gone.len(), usize::from(count > 0));
    count
}

fn wal_files(fs: &FaultInjectionFs) -> Vec<String> {
    let mut wals: Vec<String> = fs
        .list(Path::new("/db"))
        .unwrap()
        .into_iter()
        .filter(|name| name.ends_with(".wal"))
        .collect();
    wals.sort();
    wals
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    /// Synced commits, then a power cut that tears the newest WAL at a
    /// random byte, as if it struck in the middle of a commit's record.
    #[test]
    fn a_torn_commit_is_all_or_nothing(
        widths in proptest::collection::vec(1usize..12, 1..30),
        cut in any::<prop::sample::Index>(),
    ) {
        let fs = FaultInjectionFs::new();
        let db = open(&fs, true);
        for (i, &width) in widths.iter().enumerate() {
            commit(&db, i, width);
        }
        let after = fs.crash();
        drop(db);
        let newest = Path::new("/db").join(wal_files(&after).last().unwrap());
        let mut bytes = after.contents(&newest).unwrap();
        bytes.truncate(cut.index(bytes.len() + 1));
        after.set_contents(&newest, bytes).unwrap();
        let db = open(&after, true);
        let kept = surviving(&db, &widths);
        // Only the newest WAL was torn: everything before it survives, so
        // at most the commits in it are lost.
        prop_assert!(kept <= widths.len());
        // The database stays usable for transactions after recovery.
        let mut txn = db.transaction();
        txn.insert("after", "crash").unwrap();
        txn.commit().unwrap();
    }

    /// Unsynced commits with an explicit sync now and then, and a power cut
    /// at a random point: a prefix that includes every synced commit.
    #[test]
    fn a_power_cut_keeps_whole_transactions_up_to_the_last_sync(
        widths in proptest::collection::vec(1usize..12, 1..30),
        syncs in proptest::collection::vec(any::<bool>(), 30),
        cut_at in any::<prop::sample::Index>(),
    ) {
        let fs = FaultInjectionFs::new();
        let db = open(&fs, false);
        let cut = cut_at.index(widths.len() + 1);
        let mut durable = 0;
        let mut crashed = None;
        for (i, &width) in widths.iter().enumerate() {
            if i == cut {
                crashed = Some(fs.crash());
            }
            commit(&db, i, width);
            if syncs[i] {
                db.persist(siftdb::PersistMode::SyncAll).unwrap();
                if i < cut {
                    durable = i + 1;
                }
            }
        }
        let after = crashed.unwrap_or_else(|| fs.crash());
        drop(db);
        let db = open(&after, false);
        let kept = surviving(&db, &widths);
        prop_assert!(kept >= durable, "kept {kept}, but {durable} were synced");
        prop_assert!(kept <= cut.min(widths.len()));
    }
}

/// A conflict refused before anything was logged leaves nothing to recover.
#[test]
fn a_refused_commit_leaves_nothing_after_a_crash() {
    let fs = FaultInjectionFs::new();
    let db = open(&fs, true);
    let mut loser = db.transaction();
    loser.get("k").unwrap();
    loser.insert("loser", "1").unwrap();
    let mut winner = db.transaction();
    winner.insert("k", "winner").unwrap();
    winner.commit().unwrap();
    assert!(matches!(loser.commit(), Err(Error::Conflict { .. })));
    let after = fs.crash();
    drop(db);
    let db = open(&after, true);
    assert_eq!(db.get("k").unwrap().as_deref(), Some(&b"winner"[..]));
    assert_eq!(db.get("loser").unwrap(), None);
}
