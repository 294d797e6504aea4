//! The Raft log never forgets a synced record: damage in the middle of its
//! WAL fails the open instead of dropping the votes and entries after it.

#![expect(
    clippy::unwrap_used,
    reason = "test code fails the test on any error, like the #[test] fns clippy already exempts"
)]

use std::path::Path;

use openraft::Vote;
use openraft::storage::RaftLogStorage;
use sift_raft::LogStore;
use tempfile::TempDir;

const VOTES: u64 = 20;

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// The log's only WAL: no flush ran, so every vote is in it.
fn wal(dir: &Path) -> std::path::PathBuf {
    let mut wals: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "wal"))
        .collect();
    assert_eq!(wals.len(), 1, "{wals:?}");
    wals.remove(0)
}

#[test]
fn a_damaged_log_refuses_to_open_rather_than_forget_a_vote() {
    let dir = TempDir::new().unwrap();
    runtime().block_on(async {
        let mut log = LogStore::open(dir.path()).unwrap();
        for term in 1..=VOTES {
            log.save_vote(&Vote::new(term, 1)).await.unwrap();
        }
    });
    // An intact log reopens with the last vote.
    let last = runtime().block_on(async {
        let mut log = LogStore::open(dir.path()).unwrap();
        log.read_vote().await.unwrap()
    });
    assert_eq!(last, Some(Vote::new(VOTES, 1)));
    runtime().block_on(async {
        let mut log = LogStore::open(dir.path()).unwrap();
        for term in VOTES + 1..=2 * VOTES {
            log.save_vote(&Vote::new(term, 1)).await.unwrap();
        }
    });
    // One flipped byte in the middle of the WAL: the records after it were
    // synced and acknowledged.
    let path = wal(dir.path());
    let mut bytes = std::fs::read(&path).unwrap();
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0x40;
    std::fs::write(&path, &bytes).unwrap();
    match LogStore::open(dir.path()) {
        Err(error) => {
            let message = error.to_string();
            assert!(message.contains("wal"), "{message}");
        }
        Ok(log) => {
            let vote = runtime().block_on(async move {
                let mut log = log;
                log.read_vote().await.unwrap()
            });
            panic!(
                "the damaged log opened, with vote {vote:?} of {}",
                2 * VOTES
            );
        }
    }
}
