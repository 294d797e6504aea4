//! Transactions: conflicts of every kind, read-your-own-writes in gets and
//! scans both ways, rollback, the size limit, and the statistics.

#![expect(
    clippy::unwrap_used,
    reason = "test helpers fail the test on any error, like the #[test] fns clippy already exempts"
)]

use siftdb::{Db, Error, Transaction};

fn open(dir: &tempfile::TempDir) -> Db {
    Db::builder(dir.path())
        .background_threads(false)
        .open()
        .unwrap()
}

fn conflict_key(txn: Transaction) -> Vec<u8> {
    let result = txn.commit();
    let Err(Error::Conflict { key, .. }) = result else {
        unreachable!("expected a conflict, got {result:?}");
    };
    key.unwrap()
}

fn items(iter: impl Iterator<Item = siftdb::Result<(Vec<u8>, Vec<u8>)>>) -> Vec<(String, String)> {
    iter.map(|item| {
        let (k, v) = item.unwrap();
        (String::from_utf8(k).unwrap(), String::from_utf8(v).unwrap())
    })
    .collect()
}

#[test]
fn write_write_first_committer_wins() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(&dir);
    let mut a = db.transaction();
    let mut b = db.transaction();
    a.insert("k", "a").unwrap();
    b.insert("k", "b").unwrap();
    a.commit().unwrap();
    assert_eq!(conflict_key(b), b"k");
    assert_eq!(db.get("k").unwrap().as_deref(), Some(&b"a"[..]));
}

#[test]
fn read_write_conflict_names_the_key() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(&dir);
    db.insert("x", "1").unwrap();
    let mut a = db.transaction();
    assert_eq!(a.get("x").unwrap().as_deref(), Some(&b"1"[..]));
    a.insert("y", "from a").unwrap();
    let mut b = db.transaction();
    b.insert("x", "2").unwrap();
    b.commit().unwrap();
    // The snapshot still reads the old value...
    assert_eq!(a.get("x").unwrap().as_deref(), Some(&b"1"[..]));
    // ...and the commit fails, applying nothing.
    assert_eq!(conflict_key(a), b"x");
    assert_eq!(db.get("y").unwrap(), None);
}

#[test]
fn a_plain_write_after_the_snapshot_conflicts_too() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(&dir);
    let mut a = db.transaction();
    a.get("p").unwrap();
    a.insert("q", "1").unwrap();
    db.insert("p", "outside").unwrap();
    assert_eq!(conflict_key(a), b"p");
    // A plain write before the snapshot does not.
    db.insert("r", "before").unwrap();
    let mut c = db.transaction();
    c.get("r").unwrap();
    c.insert("s", "1").unwrap();
    c.commit().unwrap();
    // Nor one to a key the transaction never touched, nor a batch.
    let mut d = db.transaction();
    d.get("r").unwrap();
    d.insert("t", "1").unwrap();
    let mut batch = siftdb::WriteBatch::new();
    batch.insert("u", "1").remove("v");
    db.write(&batch).unwrap();
    d.commit().unwrap();
}

#[test]
fn phantom_in_a_scanned_range_conflicts() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(&dir);
    db.insert("item:1", "a").unwrap();
    db.insert("item:5", "b").unwrap();
    let mut a = db.transaction();
    let count = a.prefix("item:").unwrap().count();
    assert_eq!(count, 2);
    a.insert("count", count.to_string()).unwrap();
    let mut b = db.transaction();
    b.insert("item:3", "phantom").unwrap();
    b.commit().unwrap();
    assert_eq!(conflict_key(a), b"item:3");

    // An insert just outside a scanned range does not conflict.
    let mut c = db.transaction();
    assert_eq!(c.range("item:1".."item:5").unwrap().count(), 2);
    c.insert("count", "2").unwrap();
    db.insert("item:5", "changed at the excluded end").unwrap();
    db.insert("item:0", "below").unwrap();
    c.commit().unwrap();

    // A reverse scan claims its range just the same.
    let mut d = db.transaction();
    assert_eq!(d.range("item:1"..="item:5").unwrap().rev().count(), 3);
    d.insert("count", "3").unwrap();
    db.remove("item:5").unwrap();
    assert_eq!(conflict_key(d), b"item:5");
}

#[test]
fn disjoint_transactions_all_commit() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(&dir);
    let mut txns: Vec<Transaction> = (0..20).map(|_| db.transaction()).collect();
    for (i, txn) in txns.iter_mut().enumerate() {
        assert_eq!(txn.get(format!("r{i}")).unwrap(), None);
        txn.insert(format!("w{i}"), "v").unwrap();
        assert_eq!(
            txn.range(format!("s{i}")..format!("s{i}~"))
                .unwrap()
                .count(),
            0
        );
    }
    for txn in txns {
        txn.commit().unwrap();
    }
    assert_eq!(db.prefix("w").count(), 20);
    let stats = db.txn_stats();
    assert_eq!((stats.committed, stats.conflicts), (20, 0));
    assert_eq!(
        stats.retained_commits, 0,
        "nothing is kept once all have ended"
    );
}

#[test]
fn reads_see_own_writes_in_get_range_and_prefix_both_ways() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(&dir);
    for key in ["a1", "a3", "a5", "b1"] {
        db.insert(key, format!("db-{key}")).unwrap();
    }
    db.flush().unwrap();
    db.insert("a7", "db-a7").unwrap();
    let mut txn = db.transaction();
    txn.insert("a2", "own-a2").unwrap();
    txn.insert("a3", "own-a3").unwrap();
    txn.remove("a5").unwrap();
    txn.insert("a9", "own-a9").unwrap();
    txn.insert("a0", "own-a0").unwrap();
    assert_eq!(txn.get("a3").unwrap().as_deref(), Some(&b"own-a3"[..]));
    assert_eq!(txn.get("a5").unwrap(), None);
    assert_eq!(txn.get("a1").unwrap().as_deref(), Some(&b"db-a1"[..]));
    assert!(txn.contains_key("a9").unwrap());
    let want: Vec<(String, String)> = [
        ("a0", "own-a0"),
        ("a1", "db-a1"),
        ("a2", "own-a2"),
        ("a3", "own-a3"),
        ("a7", "db-a7"),
        ("a9", "own-a9"),
    ]
    .iter()
    .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
    .collect();
    assert_eq!(items(txn.prefix("a").unwrap()), want);
    let mut reversed = want.clone();
    reversed.reverse();
    assert_eq!(items(txn.prefix("a").unwrap().rev()), reversed);
    assert_eq!(items(txn.range("a2".."a7").unwrap()), want[2..4].to_vec());
    assert_eq!(
        items(txn.range("a2"..="a7").unwrap().rev()),
        reversed[1..4].to_vec()
    );
    // Both ends of one iterator meet without repeating or losing an item.
    let mut both = txn.prefix("a").unwrap();
    let mut met = Vec::new();
    for step in 0.. {
        let item = if step % 2 == 0 {
            both.next()
        } else {
            both.next_back()
        };
        let Some(item) = item else { break };
        met.push(String::from_utf8(item.unwrap().0).unwrap());
    }
    drop(both);
    met.sort();
    assert_eq!(met, want.iter().map(|(k, _)| k.clone()).collect::<Vec<_>>());
    // Nothing is visible outside until commit.
    assert_eq!(db.get("a2").unwrap(), None);
    txn.commit().unwrap();
    assert_eq!(db.get("a5").unwrap(), None);
    assert_eq!(
        items(db.prefix("a")),
        want,
        "the commit applied exactly what the transaction saw"
    );
}

#[test]
fn rollback_and_drop_discard_everything() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(&dir);
    db.insert("k", "kept").unwrap();
    let mut txn = db.transaction();
    txn.insert("k", "lost").unwrap();
    txn.insert("n", "lost").unwrap();
    txn.rollback();
    {
        let mut txn = db.transaction();
        txn.remove("k").unwrap();
    }
    assert_eq!(db.get("k").unwrap().as_deref(), Some(&b"kept"[..]));
    assert_eq!(db.get("n").unwrap(), None);
    let stats = db.txn_stats();
    assert_eq!((stats.begun, stats.rolled_back, stats.committed), (2, 2, 0));
    assert_eq!(stats.retained_commits, 0);
}

#[test]
fn the_size_limit_fails_cleanly_and_the_transaction_stays_usable() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::builder(dir.path())
        .txn_max_bytes(8 << 10)
        .open()
        .unwrap();
    let mut txn = db.transaction();
    let mut written = 0;
    let err = loop {
        match txn.insert(format!("key{written:05}"), [7u8; 100]) {
            Ok(()) => written += 1,
            Err(err) => break err,
        }
    };
    assert!(matches!(err, Error::InvalidArgument(_)), "{err}");
    assert!(err.to_string().contains("txn_max_bytes"), "{err}");
    // 8 KiB at 8 + 100 + 64 bytes an entry.
    assert_eq!(written, 8192 / 172);
    // Reads are refused too; a held key can still be read and rewritten
    // once room is made... here, the refused operation left no trace.
    assert!(txn.get(format!("unseen{:0200}", 0)).is_err());
    assert_eq!(
        txn.get("key00000").unwrap().as_deref(),
        Some(&[7u8; 100][..])
    );
    assert_eq!(txn.footprint_len(), (0, written, 0));
    txn.commit().unwrap();
    assert_eq!(db.prefix("key").count(), written);
    assert!(
        Db::builder(dir.path().join("other"))
            .txn_max_bytes(10)
            .open()
            .is_err()
    );
}

#[test]
fn stats_count_rejections_exact_checks_and_conflicts() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(&dir);
    let mut txn = db.transaction();
    for i in 0..1000 {
        txn.insert(format!("w{i}"), "v").unwrap();
    }
    // 1000 gets of keys it never wrote: the write set's filter rejects
    // nearly all of them; each then joins the read set (whose filter
    // answers for the new key on insert).
    for i in 0..1000 {
        assert_eq!(txn.get(format!("r{i}")).unwrap(), None);
    }
    // Own writes: always an exact check.
    for i in 0..100 {
        assert!(txn.get(format!("w{i}")).unwrap().is_some());
    }
    let mut other = db.transaction();
    other.insert("r500", "x").unwrap();
    other.commit().unwrap();
    assert_eq!(conflict_key(txn), b"r500");
    let stats = db.txn_stats();
    assert_eq!((stats.committed, stats.conflicts), (1, 1));
    // Own-set look-ups: 1000 write-set inserts, 1100 write-set probes by
    // gets, and 1000 read-set inserts; only the 100 hits and ~1% false
    // positives reach the exact sets.
    assert!(
        stats.lookup_rejections > 2900,
        "most look-ups of absent keys are answered by the filter: {stats:?}"
    );
    assert!(
        stats.lookup_exact_checks >= 100 && stats.lookup_exact_checks < 600,
        "{stats:?}"
    );
    assert!(stats.validation_exact_checks >= 1, "{stats:?}");

    // With the pre-check off, every look-up is exact.
    let dir = tempfile::tempdir().unwrap();
    let db = Db::builder(dir.path()).txn_precheck(false).open().unwrap();
    let mut txn = db.transaction();
    for i in 0..100 {
        txn.insert(format!("w{i}"), "v").unwrap();
        txn.get(format!("r{i}")).unwrap();
    }
    txn.commit().unwrap();
    let stats = db.txn_stats();
    assert_eq!(stats.lookup_rejections, 0);
    assert_eq!(stats.lookup_exact_checks, 3 * 100);
}

#[test]
fn read_only_transactions_commit_at_their_snapshot() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(&dir);
    db.insert("a", "1").unwrap();
    let mut txn = db.transaction();
    let seq = txn.snapshot_seq();
    assert_eq!(txn.get("a").unwrap().as_deref(), Some(&b"1"[..]));
    db.insert("a", "2").unwrap();
    // Its reads were one consistent snapshot: serializable at `seq`.
    assert_eq!(txn.commit().unwrap(), seq);
}
