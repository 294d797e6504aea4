//! Crash states of a node's storage on the lying disk: at every sync point
//! of log appends, applies, snapshot builds, purges and a snapshot
//! install, a state the disk may hold after a power cut is drawn (ALICE's
//! exploration), and the node is started from it.
//!
//! - Every appended (acknowledged) entry survives, in the log or in a
//!   snapshot, and replaying the log from what the data applied rebuilds
//!   every write.
//! - A follower cut during an install starts again, with its data either as
//!   it was or at the snapshot, and the same snapshot installs on it.

#![expect(
    clippy::unwrap_used,
    clippy::panic,
    reason = "a test fails by panicking, helpers included"
)]

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use openraft::storage::{RaftLogStorage, RaftLogStorageExt, RaftSnapshotBuilder, RaftStateMachine};
use openraft::{CommittedLeaderId, Entry, EntryPayload, LogId, RaftLogReader};
use sift_raft::{Command, LogStore, Op, StateMachine, TypeConfig};
use siftdb::fs::FaultInjectionFs;
use tokio::io::AsyncWriteExt;

const DIR: &str = "/node";

fn key(index: u64) -> Vec<u8> {
    format!("key-{index:03}").into_bytes()
}

fn value(index: u64) -> Vec<u8> {
    format!("value of entry {index}").into_bytes()
}

fn log_id(index: u64) -> LogId<u64> {
    LogId::new(CommittedLeaderId::new(1, 0), index)
}

/// Entry `index`: a put of `key(index)`.
fn entry(index: u64) -> Entry<TypeConfig> {
    let put = Command::Write(vec![Op::Put {
        key: key(index),
        value: value(index),
    }]);
    Entry {
        log_id: log_id(index),
        payload: EntryPayload::Normal(put.into()),
    }
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

async fn open(fs: &FaultInjectionFs, what: &str) -> (LogStore, StateMachine) {
    sift_raft::open_storage_on(
        Arc::new(fs.clone()),
        Path::new(DIR),
        &sift_raft::DataSettings::default(),
    )
    .await
    .unwrap_or_else(|e| panic!("{what}: the node does not start: {e}"))
}

/// Crash images drawn at sync points, each with the count of entries
/// acknowledged when it was drawn.
#[derive(Default)]
struct Images {
    drawn: Mutex<Vec<(FaultInjectionFs, u64)>>,
    points: AtomicU64,
    acknowledged: AtomicU64,
}

impl Images {
    /// Draws images at every sync point of `fs` from now on: the sure
    /// state (seed 0) and `DRAWS_PER_POINT - 1` others, fresh seeds each.
    fn watch(self: &Arc<Self>, fs: &FaultInjectionFs) {
        const DRAWS_PER_POINT: u64 = 4;
        let images = Arc::clone(self);
        fs.on_sync(Arc::new(move |fs, _point| {
            let point = images.points.fetch_add(1, Ordering::Relaxed);
            let acknowledged = images.acknowledged.load(Ordering::Relaxed);
            let mut drawn = images.drawn.lock().unwrap();
            drawn.push((fs.crash_image(0), acknowledged));
            for draw in 1..DRAWS_PER_POINT {
                let seed = point * DRAWS_PER_POINT + draw;
                drawn.push((fs.crash_image(seed), acknowledged));
            }
        }));
    }

    fn take(&self) -> Vec<(FaultInjectionFs, u64)> {
        std::mem::take(&mut self.drawn.lock().unwrap())
    }
}

/// Checks that a node started from `image` holds every acknowledged entry
/// and that replaying its log onto its data rebuilds every write.
async fn check_recovery(image: &FaultInjectionFs, acknowledged: u64, what: &str) {
    let (mut log, mut sm) = open(image, what).await;
    let state = log.get_log_state().await.unwrap();
    let purged = state.last_purged_log_id.map_or(0, |id| id.index);
    let applied = sm.applied_state().await.unwrap().0.map_or(0, |id| id.index);
    assert!(
        applied >= purged,
        "{what}: the data applied {applied}, the log is purged to {purged}"
    );
    // A log that ends before the data (a follower's, emptied by a
    // snapshot) is purged up to the data when openraft starts.
    let last = state.last_log_id.map_or(0, |id| id.index).max(applied);
    assert!(
        last >= acknowledged,
        "{what}: the log and the data end at {last}, {acknowledged} entries were acknowledged"
    );
    let rest = log.try_get_log_entries(applied + 1..=last).await.unwrap();
    let indexes: Vec<u64> = rest.iter().map(|e| e.log_id.index).collect();
    assert_eq!(
        indexes,
        (applied + 1..=last).collect::<Vec<_>>(),
        "{what}: the log after the data"
    );
    check_current_snapshot(&mut sm, what).await;
    sm.apply(rest).await.unwrap();
    let data = sm.data();
    for index in 1..=last {
        assert_eq!(
            data.get(&key(index)).unwrap(),
            Some(value(index)),
            "{what}: entry {index} of {last} (applied {applied}, purged {purged})"
        );
    }
    assert_eq!(data.get(&key(last + 1)).unwrap(), None, "{what}");
}

/// Checks that the node's current snapshot, if it has one, can be sent:
/// installed on a new node, it holds what its metadata says.
async fn check_current_snapshot(sm: &mut StateMachine, what: &str) {
    let Some(mut snapshot) = sm.get_current_snapshot().await.unwrap() else {
        return;
    };
    let mut tar = Vec::new();
    tokio::io::AsyncReadExt::read_to_end(&mut snapshot.snapshot, &mut tar)
        .await
        .unwrap_or_else(|e| panic!("{what}: the current snapshot cannot be read: {e}"));
    let (mut log, mut fresh) = open(&FaultInjectionFs::new(), what).await;
    receive_and_install(&mut log, &mut fresh, &tar, &snapshot.meta).await;
    let covered = snapshot.meta.last_log_id.map_or(0, |id| id.index);
    for index in 1..=covered + 1 {
        let expected = (index <= covered).then(|| value(index));
        let held = fresh.data().get(&key(index)).unwrap();
        assert_eq!(held, expected, "{what}: the snapshot covering {covered}");
    }
}

/// A leader's storage through its life: entries appended one by one
/// (each synced: acknowledged once `blocking_append` returns), applied in
/// runs, two snapshot builds each followed by a purge of the log up to it.
#[test]
fn every_crash_state_of_append_apply_build_and_purge_keeps_every_acknowledged_entry() {
    const ENTRIES: u64 = 40;
    let fs = FaultInjectionFs::new();
    let images = Arc::new(Images::default());
    runtime().block_on(async {
        let (mut log, mut sm) = open(&fs, "the live node").await;
        images.watch(&fs);
        let mut applied = 0;
        for index in 1..=ENTRIES {
            log.blocking_append([entry(index)]).await.unwrap();
            images.acknowledged.store(index, Ordering::Relaxed);
            if index % 4 == 0 {
                sm.apply((applied + 1..=index).map(entry)).await.unwrap();
                applied = index;
            }
            if index == 14 || index == 31 {
                sm.apply((applied + 1..=index).map(entry)).await.unwrap();
                applied = index;
                let snapshot = sm
                    .get_snapshot_builder()
                    .await
                    .build_snapshot()
                    .await
                    .unwrap();
                log.purge(snapshot.meta.last_log_id.unwrap()).await.unwrap();
            }
        }
    });
    let drawn = images.take();
    assert!(drawn.len() > 2 * ENTRIES as usize, "{} images", drawn.len());
    runtime().block_on(async {
        for (i, (image, acknowledged)) in drawn.iter().enumerate() {
            check_recovery(image, *acknowledged, &format!("image {i}")).await;
        }
    });
}

/// A follower receives a snapshot covering entries 1..=30 while its data
/// has applied 1..=3 of them; openraft purges its log up to the snapshot
/// beside the install. Cut at any sync point, it starts again with its data
/// as it was or at the snapshot, and the snapshot installs on it again.
#[test]
fn every_crash_state_of_a_snapshot_install_restarts_and_catches_up() {
    const COVERED: u64 = 30;
    let (tar, meta) = runtime().block_on(async {
        let leader = FaultInjectionFs::new();
        let (_log, mut sm) = open(&leader, "the leader").await;
        sm.apply((1..=COVERED).map(entry)).await.unwrap();
        let mut snapshot = sm
            .get_snapshot_builder()
            .await
            .build_snapshot()
            .await
            .unwrap();
        let mut tar = Vec::new();
        tokio::io::AsyncReadExt::read_to_end(&mut snapshot.snapshot, &mut tar)
            .await
            .unwrap();
        (tar, snapshot.meta)
    });
    let fs = FaultInjectionFs::new();
    let images = Arc::new(Images::default());
    runtime().block_on(async {
        let (mut log, mut sm) = open(&fs, "the live node").await;
        sm.apply((1..=3).map(entry)).await.unwrap();
        images.watch(&fs);
        receive_and_install(&mut log, &mut sm, &tar, &meta).await;
        assert_eq!(sm.applied_state().await.unwrap().0, Some(log_id(COVERED)));
    });
    let drawn = images.take();
    assert!(drawn.len() > 10, "{} images", drawn.len());
    runtime().block_on(async {
        for (i, (image, _)) in drawn.iter().enumerate() {
            let what = format!("image {i}");
            let (mut log, mut sm) = open(image, &what).await;
            let applied = sm.applied_state().await.unwrap().0.map_or(0, |id| id.index);
            assert!(
                applied <= 3 || applied == COVERED,
                "{what}: applied {applied}"
            );
            let purged = log.get_log_state().await.unwrap().last_purged_log_id;
            assert!(purged.is_none_or(|id| id.index <= applied), "{what}");
            for index in 1..=COVERED {
                let expected = (index <= applied).then(|| value(index));
                assert_eq!(sm.data().get(&key(index)).unwrap(), expected, "{what}");
            }
            // It catches up: the leader sends the snapshot again unless
            // the node holds it (openraft skips a snapshot the node's
            // applied entries cover).
            if applied < COVERED {
                receive_and_install(&mut log, &mut sm, &tar, &meta).await;
            }
            drop((log, sm));
            check_recovery(image, COVERED, &format!("{what}, installed again")).await;
        }
    });
}

/// What openraft does on a follower: receives the snapshot in two chunks,
/// then installs it while it purges the log up to it.
async fn receive_and_install(
    log: &mut LogStore,
    sm: &mut StateMachine,
    tar: &[u8],
    meta: &openraft::SnapshotMeta<u64, openraft::BasicNode>,
) {
    let mut file = sm.begin_receiving_snapshot().await.unwrap();
    let (first, second) = tar.split_at(tar.len() / 2);
    file.write_all(first).await.unwrap();
    file.write_all(second).await.unwrap();
    let (purged, installed) = tokio::join!(
        log.purge(meta.last_log_id.unwrap()),
        sm.install_snapshot(meta, file)
    );
    purged.unwrap();
    installed.unwrap();
    // The purge lands in the background once the snapshot is current, and
    // its task holds the log open: the next change of the log waits for it.
    log.purge(meta.last_log_id.unwrap()).await.unwrap();
    let purged = log.get_log_state().await.unwrap().last_purged_log_id;
    assert_eq!(purged, meta.last_log_id);
}
