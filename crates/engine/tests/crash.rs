//! Crash tests: a file layer that loses everything not synced, and a child
//! process killed at a random moment while it writes.

#![expect(
    clippy::unwrap_used,
    reason = "test helpers fail the test on any error, like the #[test] fns clippy already exempts"
)]

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use proptest::prelude::*;
use siftdb::fs::FaultInjectionFs;
use siftdb::{CompactionStyle, Db, WriteBatch, WriteOptions};

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

fn open(fs: &FaultInjectionFs) -> Db {
    Db::builder(Path::new("/db"))
        .file_system(Arc::new(fs.clone()))
        .memtable_bytes(4096)
        .table_target_bytes(4096)
        .block_bytes(256)
        .compaction_style(CompactionStyle::Leveled {
            l0_trigger: 2,
            size_ratio: 3,
            l1_bytes: 8 << 10,
        })
        .background_threads(false)
        .open()
        .unwrap()
}

fn contents(db: &Db) -> Model {
    db.range::<Vec<u8>, _>(..).map(Result::unwrap).collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// Writes (batches, some synced), flushes and compactions, then a power
    /// cut at a random point. What recovery finds must be the model's state
    /// after some prefix of the writes that includes every synced one: a
    /// synced write survives with everything before it, and nothing that
    /// was never written appears.
    #[test]
    fn power_cut_keeps_a_prefix_that_includes_every_synced_write(
        writes in proptest::collection::vec(
            (proptest::collection::vec((0u8..30, proptest::option::of(0u32..1000)), 1..4), any::<bool>(), 0u8..20),
            1..150,
        ),
        cut_at in any::<prop::sample::Index>(),
    ) {
        let fs = FaultInjectionFs::new();
        let db = open(&fs);
        let cut = cut_at.index(writes.len() + 1);
        let mut model = Model::new();
        let mut states = vec![model.clone()];
        // states[j] is the model after the first j writes; `durable` is the
        // smallest j a recovery may return: every write up to the last
        // synced one before the cut.
        let mut durable = 0;
        let mut crashed = None;
        for (i, (ops, sync, action)) in writes.iter().enumerate() {
            if i == cut {
                crashed = Some(fs.crash());
            }
            let mut batch = WriteBatch::new();
            for (k, v) in ops {
                let key = format!("key{k:02}").into_bytes();
                match v {
                    Some(v) => {
                        let value = format!("value{v}-{i}").repeat(1 + (*v as usize % 7)).into_bytes();
                        batch.insert(&key, &value);
                        model.insert(key, value);
                    }
                    None => {
                        batch.remove(&key);
                        model.remove(&key);
                    }
                }
            }
            let options = if *sync { WriteOptions::sync() } else { WriteOptions::no_sync() };
            db.write_with(&batch, options).unwrap();
            states.push(model.clone());
            if *sync && i < cut {
                durable = i + 1;
            }
            match action {
                0 => db.flush().unwrap(),
                1 => db.compact().unwrap(),
                _ => {}
            }
        }
        let after = crashed.unwrap_or_else(|| fs.crash());
        drop(db);
        let db = open(&after);
        let found = contents(&db);
        let written = cut.min(writes.len());
        let matches: Vec<usize> = (0..=written).filter(|&j| states[j] == found).collect();
        prop_assert!(!matches.is_empty(), "recovered state is no prefix of the writes (cut at {cut})");
        prop_assert!(matches.iter().any(|&j| j >= durable),
            "a synced write was lost: recovered prefixes {matches:?}, synced up to {durable}");
    }
}

/// Environment variable that turns this test binary into the writer child.
const CHILD_DIR: &str = "SIFT_CRASH_CHILD_DIR";

/// The child: writes keys 0, 1, 2, ... with synced writes and reports each
/// acknowledgement on stdout, until killed.
#[test]
fn child_writer() {
    let Ok(dir) = std::env::var(CHILD_DIR) else {
        return;
    };
    let db = Db::builder(&dir)
        .memtable_bytes(64 << 10)
        .table_target_bytes(64 << 10)
        .open()
        .unwrap();
    // Each batch wrote one `key` and one `pair` entry: resume after the last.
    let start = db.prefix(b"key").count();
    for i in start.. {
        let mut batch = WriteBatch::new();
        batch.insert(format!("key{i:08}"), format!("value{i}").repeat(20));
        batch.insert(format!("pair{i:08}"), format!("{i}"));
        db.write_with(&batch, WriteOptions::sync()).unwrap();
        println!("acked {i}");
    }
}

/// Kills the writer child at random moments, then checks that every
/// acknowledged write survived, both halves of every batch are present or
/// absent together, and nothing beyond the last write in flight appeared.
#[test]
fn killed_writer_loses_no_acknowledged_write() {
    if std::env::var(CHILD_DIR).is_ok() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let mut acked: Option<u64> = None;
    // Fixed delays, spread so the kill lands in different phases (WAL
    // append, memtable rotation, flush, compaction).
    for (round, delay_ms) in [40u64, 130, 75, 260, 15, 190].into_iter().enumerate() {
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args(["--exact", "child_writer", "--nocapture", "--test-threads=1"])
            .env(CHILD_DIR, dir.path())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let reader = std::thread::spawn(move || {
            BufReader::new(stdout)
                .lines()
                .map_while(Result::ok)
                .filter_map(|line| {
                    line.strip_prefix("acked ")
                        .and_then(|n| n.parse::<u64>().ok())
                })
                .last()
        });
        std::thread::sleep(Duration::from_millis(delay_ms));
        child.kill().unwrap();
        child.wait().unwrap();
        if let Some(last) = reader.join().unwrap() {
            acked = Some(acked.map_or(last, |a| a.max(last)));
        }
        let db = Db::open(dir.path()).unwrap();
        let all: BTreeMap<Vec<u8>, Vec<u8>> =
            db.range::<Vec<u8>, _>(..).map(Result::unwrap).collect();
        let keys = all.keys().filter(|k| k.starts_with(b"key")).count() as u64;
        let pairs = all.keys().filter(|k| k.starts_with(b"pair")).count() as u64;
        assert_eq!(keys, pairs, "round {round}: a batch was half applied");
        if let Some(acked) = acked {
            assert!(
                keys > acked,
                "round {round}: acknowledged write {acked} lost ({keys} keys)"
            );
        }
        for i in 0..keys {
            assert_eq!(
                all.get(format!("key{i:08}").as_bytes()),
                Some(&format!("value{i}").repeat(20).into_bytes())
            );
            assert_eq!(
                all.get(format!("pair{i:08}").as_bytes()),
                Some(&format!("{i}").into_bytes())
            );
        }
    }
    assert!(
        acked.is_some_and(|a| a > 0),
        "the child never acknowledged a write"
    );
}
