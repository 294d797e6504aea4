//! Snapshots of a state machine: one with a custom value index builds (the
//! copy a snapshot is packed from opens with the node's index
//! definitions), a transfer that begins again leaves no partial file, and a
//! crash during an install leaves a node that starts again.

#![expect(clippy::unwrap_used, reason = "a test fails by panicking")]

use openraft::storage::{RaftSnapshotBuilder, RaftStateMachine};
use openraft::{CommittedLeaderId, Entry, EntryPayload, LogId};
use sift_raft::{Command, Op};
use siftdb::{Extractor, IndexDef};
use tempfile::TempDir;

/// Every space-separated word of the value: a function the manifest
/// records by name only.
fn words() -> IndexDef {
    IndexDef::new(
        "words",
        Extractor::custom("words", |value, out| {
            value.split(|&b| b == b' ').for_each(out);
        }),
    )
}

#[test]
fn a_state_machine_with_a_custom_index_builds_a_snapshot() {
    let dir = TempDir::new().unwrap();
    runtime().block_on(async {
        let (_log, mut sm) =
            sift_raft::open_storage(dir.path(), &sift_raft::DataSettings::indexed(vec![words()]))
                .await
                .unwrap();
        let log_id = LogId::new(CommittedLeaderId::new(1, 0), 1);
        let put = Command::Write(vec![Op::Put {
            key: b"k".to_vec(),
            value: b"red apple".to_vec(),
        }]);
        sm.apply([Entry {
            log_id,
            payload: EntryPayload::Normal(put.into()),
        }])
        .await
        .unwrap();
        let mut builder = sm.get_snapshot_builder().await;
        let snapshot = builder.build_snapshot().await.unwrap();
        assert_eq!(snapshot.meta.last_log_id, Some(log_id));
    });
}

#[test]
fn a_restarted_transfer_leaves_no_partial_file_behind() {
    let dir = TempDir::new().unwrap();
    let received = || {
        std::fs::read_dir(dir.path().join("snapshots"))
            .unwrap()
            .filter(|e| e.as_ref().unwrap().file_type().unwrap().is_dir())
            .count()
    };
    runtime().block_on(async {
        let (_log, mut sm) =
            sift_raft::open_storage(dir.path(), &sift_raft::DataSettings::default())
                .await
                .unwrap();
        for _ in 0..3 {
            let _file = sm.begin_receiving_snapshot().await.unwrap();
        }
    });
    assert_eq!(received(), 1);
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// Applies puts of `key-1` .. `key-{count}` at log indexes 1..=count.
async fn apply_puts(sm: &mut sift_raft::StateMachine, count: u64) {
    for index in 1..=count {
        let put = Command::Write(vec![Op::Put {
            key: format!("key-{index}").into_bytes(),
            value: b"v".to_vec(),
        }]);
        sm.apply([Entry {
            log_id: LogId::new(CommittedLeaderId::new(1, 0), index),
            payload: EntryPayload::Normal(put.into()),
        }])
        .await
        .unwrap();
    }
}

/// openraft purges a follower's log up to a snapshot as soon as it queues
/// its install, and runs the two side by side. The node crashes (the
/// install is dropped where it stands) as soon as the purge is on disk: it
/// must start again, with its data at the snapshot.
#[test]
fn a_node_that_crashes_during_an_install_starts_again_at_the_snapshot() {
    use openraft::storage::RaftLogStorage;
    let (leader, follower) = (TempDir::new().unwrap(), TempDir::new().unwrap());
    let snapshot = runtime().block_on(async {
        let (_log, mut sm) =
            sift_raft::open_storage(leader.path(), &sift_raft::DataSettings::default())
                .await
                .unwrap();
        apply_puts(&mut sm, 10).await;
        sm.get_snapshot_builder()
            .await
            .build_snapshot()
            .await
            .unwrap()
    });
    let covered = snapshot.meta.last_log_id.unwrap();
    runtime().block_on(async {
        let (mut log, mut sm) =
            sift_raft::open_storage(follower.path(), &sift_raft::DataSettings::default())
                .await
                .unwrap();
        apply_puts(&mut sm, 3).await;
        let mut received = sm.begin_receiving_snapshot().await.unwrap();
        let mut source = snapshot.snapshot;
        tokio::io::copy(&mut source, &mut received).await.unwrap();
        let mut watcher = log.clone();
        log.purge(covered).await.unwrap();
        let purged = async {
            while watcher.get_log_state().await.unwrap().last_purged_log_id != Some(covered) {
                tokio::time::sleep(std::time::Duration::from_millis(1)).await;
            }
        };
        let install = sm.install_snapshot(&snapshot.meta, received);
        tokio::pin!(install, purged);
        tokio::select! {
            biased;
            () = &mut purged => {}
            installed = &mut install => installed.unwrap(),
        }
        // The crash: whatever the install had left to do is dropped.
    });
    runtime().block_on(async {
        let (mut log, mut sm) =
            sift_raft::open_storage(follower.path(), &sift_raft::DataSettings::default())
                .await
                .unwrap();
        assert_eq!(sm.data().get(b"key-10").unwrap(), Some(b"v".to_vec()));
        let (applied, _) = sm.applied_state().await.unwrap();
        let purged = log.get_log_state().await.unwrap().last_purged_log_id;
        assert!(applied >= purged, "applied {applied:?}, purged {purged:?}");
    });
}
