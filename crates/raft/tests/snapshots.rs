//! Snapshots of a state machine: one with a custom value index builds (the
//! copy a snapshot is packed from opens with the node's index
//! definitions), and a transfer that begins again leaves no partial file.

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
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let (_log, mut sm) = sift_raft::open_storage(dir.path(), &[words()])
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
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let tars = || {
        std::fs::read_dir(dir.path().join("snapshots"))
            .unwrap()
            .filter(|e| {
                let name = e.as_ref().unwrap().file_name();
                name.to_string_lossy().ends_with(".tar")
            })
            .count()
    };
    runtime.block_on(async {
        let (_log, mut sm) = sift_raft::open_storage(dir.path(), &[]).await.unwrap();
        for _ in 0..3 {
            let _file = sm.begin_receiving_snapshot().await.unwrap();
        }
    });
    assert_eq!(tars(), 1);
}
