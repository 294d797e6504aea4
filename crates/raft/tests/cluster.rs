//! Three nodes in one process, on loopback: writes through any node, a
//! leader stopped and restarted, catch-up by log and by snapshot, and a
//! partitioned minority that cannot acknowledge writes. Every wait is
//! bounded.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use sift_raft::api::{ApiError, Status};
use sift_raft::{Client, NodeId, ReadError, WriteError};

mod common;

use common::Cluster;

fn key(i: u32) -> Vec<u8> {
    format!("key{i:05}").into_bytes()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_go_through_any_node_and_survive_a_leader_restart() {
    let mut cluster = Cluster::start(10_000).await;
    let mut model = BTreeMap::new();
    for i in 0..30 {
        let through = 1 + (i % 3) as NodeId;
        let value = format!("v{i}").into_bytes();
        cluster.client(through).put(&key(i), &value).await.unwrap();
        model.insert(key(i), value);
        // Linearizable: any node reads the write just acknowledged.
        let read_at = 1 + ((i + 1) % 3) as NodeId;
        assert_eq!(
            cluster.client(read_at).get(&key(i)).await.unwrap(),
            Some(model[&key(i)].clone())
        );
    }
    let leader = cluster.leader().await;
    let listen = cluster.addrs[&leader];
    let started = Instant::now();
    cluster.stop(leader).await;
    let new_leader = cluster.leader().await;
    assert_ne!(new_leader, leader);
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "failover took {:?}",
        started.elapsed()
    );
    let through = *cluster.nodes.keys().next().unwrap();
    for i in 30..60 {
        cluster
            .client(through)
            .put(&key(i), b"after")
            .await
            .unwrap();
        model.insert(key(i), b"after".to_vec());
    }
    cluster.client(through).delete(&key(3)).await.unwrap();
    model.remove(&key(3));
    // The old leader restarts on its address and catches up by the log.
    cluster.boot(leader, listen).await;
    cluster.converge().await;
    cluster.assert_holds(&model);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_behind_a_purged_log_catches_up_by_snapshot() {
    let mut cluster = Cluster::start(50).await;
    let leader = cluster.leader().await;
    let behind = *cluster.nodes.keys().find(|id| **id != leader).unwrap();
    let listen = cluster.addrs[&behind];
    cluster.stop(behind).await;
    let mut model = BTreeMap::new();
    for i in 0..300 {
        cluster.client(leader).put(&key(i), &key(i)).await.unwrap();
        model.insert(key(i), key(i));
    }
    // Snapshots every 50 entries purge the log up to them.
    let snapshot_at_250 = |s: &Status| s.snapshot.is_some_and(|s| s >= 250);
    cluster
        .wait_for(leader, "no snapshot", snapshot_at_250)
        .await;
    // And the log purged past the stopped node: it is not waited for.
    let purged = |s: &Status| s.purged.is_some_and(|p| p >= 250);
    cluster.wait_for(leader, "no purge", purged).await;
    cluster.boot(behind, listen).await;
    cluster.converge().await;
    assert!(
        cluster.status(behind).snapshot.is_some(),
        "it installed a snapshot"
    );
    cluster.assert_holds(&model);
    // And it keeps up afterwards.
    cluster.client(behind).put(b"late", b"write").await.unwrap();
    model.insert(b"late".to_vec(), b"write".to_vec());
    cluster.converge().await;
    cluster.assert_holds(&model);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_partitioned_minority_cannot_acknowledge_writes() {
    let cluster = Cluster::start(10_000).await;
    let old = cluster.leader().await;
    let others: Vec<NodeId> = cluster
        .nodes
        .keys()
        .copied()
        .filter(|id| *id != old)
        .collect();
    cluster.client(old).put(b"before", b"1").await.unwrap();
    // The leader is cut off from both others: it is a minority of one.
    cluster.nodes[&old].partition().cut_off(others.clone());
    for id in &others {
        cluster.nodes[id].partition().cut_off([old]);
    }
    let lonely = Client::new(cluster.addrs[&old].to_string()).retry_for(Duration::from_secs(2));
    let refused = lonely.put(b"minority", b"lost").await;
    assert!(
        matches!(
            refused,
            Err(WriteError::Unknown(_) | WriteError::NotApplied(_))
        ),
        "{refused:?}"
    );
    // The majority elects a leader of its own and goes on.
    cluster
        .client(others[0])
        .put(b"majority", b"2")
        .await
        .unwrap();
    // Healed: the old leader follows, and drops what it never committed.
    for node in cluster.nodes.values() {
        node.partition().cut_off([]);
    }
    cluster.client(old).put(b"healed", b"3").await.unwrap();
    cluster.converge().await;
    let model: BTreeMap<Vec<u8>, Vec<u8>> = [("before", "1"), ("majority", "2"), ("healed", "3")]
        .into_iter()
        .map(|(k, v)| (k.as_bytes().to_vec(), v.as_bytes().to_vec()))
        .collect();
    cluster.assert_holds(&model);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_transaction_is_one_entry_that_applies_only_if_its_reads_still_hold() {
    use sift_raft::{Check, Command, Op, Outcome};
    let cluster = Cluster::start(10_000).await;
    let client = cluster.client(2);
    client.put(b"balance", b"10").await.unwrap();
    let txn = |read: &[u8], write: &[u8]| Command::Txn {
        checks: vec![Check {
            key: b"balance".to_vec(),
            value: Some(read.to_vec()),
        }],
        ops: vec![
            Op::Put {
                key: b"balance".to_vec(),
                value: write.to_vec(),
            },
            Op::Put {
                key: b"log".to_vec(),
                value: write.to_vec(),
            },
        ],
    };
    let applied = client.write(&txn(b"10", b"7")).await.unwrap();
    assert_eq!(applied.outcome, Outcome::Applied);
    // A transaction that read the old balance: none of its writes apply.
    let stale = client.write(&txn(b"10", b"5")).await.unwrap();
    assert_eq!(
        stale.outcome,
        Outcome::Conflict {
            key: b"balance".to_vec()
        }
    );
    cluster.converge().await;
    let model: BTreeMap<Vec<u8>, Vec<u8>> = [("balance", "7"), ("log", "7")]
        .into_iter()
        .map(|(k, v)| (k.as_bytes().to_vec(), v.as_bytes().to_vec()))
        .collect();
    cluster.assert_holds(&model);
    // Too long a key is refused before it is proposed.
    let long = vec![b'k'; sift_raft::MAX_KEY_LEN + 1];
    assert!(matches!(
        client.put(&long, b"v").await,
        Err(WriteError::Invalid(_))
    ));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_learner_joins_catches_up_becomes_a_voter_and_is_removed() {
    let mut cluster = Cluster::start(10_000).await;
    for i in 0..20 {
        cluster.client(1).put(&key(i), b"v").await.unwrap();
    }
    cluster.dirs.insert(4, cluster._dir.path().join("n4"));
    cluster.boot(4, "127.0.0.1:0".parse().unwrap()).await;
    let addr = cluster.addrs[&4].to_string();
    cluster.client(2).add_learner(4, &addr).await.unwrap();
    let leader = cluster.leader().await;
    assert!(cluster.status(leader).learners.contains_key(&4));
    let voters = (1..=4).collect();
    cluster.client(3).change_membership(&voters).await.unwrap();
    // The leader answered once the change was committed: it knows.
    let status = cluster.status(cluster.leader().await);
    assert_eq!(
        status.members.keys().copied().collect::<BTreeSet<_>>(),
        voters
    );
    assert!(status.learners.is_empty());
    cluster.converge().await;
    assert_eq!(
        cluster.nodes[&4].data().get(&key(19)).unwrap(),
        Some(b"v".to_vec())
    );
    // And it leaves again: removed through another node, and stopped.
    cluster.client(2).remove_node(4).await.unwrap();
    let status = cluster.status(cluster.leader().await);
    assert_eq!(
        status.members.keys().copied().collect::<Vec<_>>(),
        [1, 2, 3]
    );
    assert!(status.learners.is_empty());
    cluster.stop(4).await;
    cluster.client(1).put(b"after", b"removal").await.unwrap();
    let unknown = cluster.client(1).remove_node(9).await;
    assert!(matches!(unknown, Err(ApiError::Invalid(_))), "{unknown:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn find_searches_by_value_through_any_node() {
    let cluster = Cluster::start(10_000).await;
    for (i, color) in ["red", "blue", "red", "green", "red"].iter().enumerate() {
        let value = format!("{{\"color\":\"{color}\",\"n\":{i}}}");
        cluster
            .client(2)
            .put(&key(i as u32), value.as_bytes())
            .await
            .unwrap();
    }
    cluster.client(1).delete(&key(2)).await.unwrap();
    let found = cluster
        .client(3)
        .find("color", b"red", usize::MAX)
        .await
        .unwrap();
    let keys: Vec<Vec<u8>> = found.into_iter().map(|kv| kv.key).collect();
    assert_eq!(keys, vec![key(0), key(4)]);
    // A limit keeps the first matches in key order, whatever order the
    // search meets them in.
    let limited = cluster.client(3).find("color", b"red", 1).await.unwrap();
    assert_eq!(limited.len(), 1);
    assert_eq!(limited[0].key, key(0));
    assert!(
        cluster
            .client(3)
            .find("color", b"pink", 10)
            .await
            .unwrap()
            .is_empty()
    );
    let missing = cluster.client(3).find("size", b"L", 10).await;
    assert!(matches!(missing, Err(ReadError::Invalid(_))), "{missing:?}");
}

/// The keys of `pages`, each page checked against the bound on its bytes;
/// and how many pages there were.
#[expect(
    clippy::unwrap_used,
    reason = "a test helper: any error fails the test"
)]
async fn bounded_pages(mut pages: sift_raft::Pages<'_>, largest: usize) -> (Vec<Vec<u8>>, usize) {
    let (mut seen, mut page_count) = (Vec::new(), 0);
    while let Some(page) = pages.next_page().await.unwrap() {
        let bytes: usize = page.iter().map(|e| e.key.len() + e.value.len()).sum();
        // A page stops at the first entry that reaches the bound.
        assert!(
            bytes < sift_raft::api::MAX_PAGE_BYTES + largest + 64,
            "{bytes}"
        );
        page_count += 1;
        seen.extend(page.into_iter().map(|e| e.key));
    }
    (seen, page_count)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_large_scan_or_find_comes_in_bounded_pages_through_a_follower() {
    let cluster = Cluster::start(10_000).await;
    let leader = cluster.leader().await;
    let follower = (1..=3).find(|&id| id != leader).unwrap();
    let client = cluster.client(follower);
    // 48 values of 256 KiB, 12 MiB in all, written in four batches; the
    // even ones red.
    let value = |i: u32| {
        let color = if i.is_multiple_of(2) { "red" } else { "blue" };
        let head = format!("{{\"color\":\"{color}\",\"p\":\"");
        let mut value = head.into_bytes();
        value.resize((256 << 10) - 2, b'a' + (i % 26) as u8);
        value.extend_from_slice(b"\"}");
        value
    };
    for batch in 0..4u32 {
        let ops = (batch * 12..batch * 12 + 12)
            .map(|i| sift_raft::Op::Put {
                key: key(i),
                value: value(i),
            })
            .collect();
        client.write(&sift_raft::Command::Write(ops)).await.unwrap();
    }
    let pages = client.scan_pages(b"", None, usize::MAX);
    let (seen, page_count) = bounded_pages(pages, 256 << 10).await;
    assert_eq!(seen, (0..48).map(key).collect::<Vec<_>>());
    assert!(page_count >= 3, "{page_count} pages");
    // A limit ends the scan within a page, and `scan` gathers the pages.
    let limited = client.scan(b"", None, 20).await.unwrap();
    assert_eq!(limited.len(), 20);
    assert_eq!(limited[19].value, value(19));
    // A find pages the same way, 6 MiB of red in at least two pages.
    let pages = client.find_pages("color", b"red", usize::MAX);
    let (seen, page_count) = bounded_pages(pages, 256 << 10).await;
    assert_eq!(seen, (0..48).step_by(2).map(key).collect::<Vec<_>>());
    assert!(page_count >= 2, "{page_count} pages");
    let limited = client.find("color", b"red", 13).await.unwrap();
    assert_eq!(limited.len(), 13);
    assert_eq!(limited[12].value, value(24));
}

/// The heartbeat interval that fits a message holding a value at the
/// engine's limit (`docs/replication.md`).
const LARGE_VALUE_HEARTBEAT_MS: u64 = 1500;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_value_at_the_engines_limit_commits_without_an_election() {
    // A message of 64 MiB takes 0.86-1.15 s on 2 loaded cores: past the
    // default interval (1 s, for failover in seconds), so values this
    // large need a longer one.
    let cluster = Cluster::start_with(10_000, LARGE_VALUE_HEARTBEAT_MS).await;
    let leader = cluster.leader().await;
    let term = cluster.status(leader).term;
    let follower = *cluster.nodes.keys().find(|id| **id != leader).unwrap();
    let value = vec![7u8; siftdb::MAX_VALUE_LEN];
    cluster.client(follower).put(b"big", &value).await.unwrap();
    cluster
        .client(leader)
        .put(b"small", b"after")
        .await
        .unwrap();
    cluster.converge().await;
    for (id, node) in &cluster.nodes {
        assert!(
            node.data().get(b"big").unwrap() == Some(value.clone()),
            "node {id}"
        );
    }
    let now = cluster.status(leader);
    assert_eq!((now.term, now.leader), (term, Some(leader)), "an election");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_follower_catches_up_by_a_snapshot_that_takes_long_to_install() {
    // Values of 4 MiB: the default heartbeat, which fits large messages.
    let mut cluster = Cluster::start_with(10, sift_raft::DEFAULT_HEARTBEAT_MS).await;
    let leader = cluster.leader().await;
    let behind = *cluster.nodes.keys().find(|id| **id != leader).unwrap();
    let listen = cluster.addrs[&behind];
    cluster.stop(behind).await;
    let value = vec![3u8; 4 << 20];
    for i in 0..24 {
        cluster.client(leader).put(&key(i), &value).await.unwrap();
    }
    // Until the leader's last snapshot is built (every 10 entries): one
    // built during the transfer would be sent too.
    let settled = |s: &Status| {
        s.snapshot
            .is_some_and(|snap| s.last_applied.unwrap() - snap < 10)
    };
    cluster.wait_for(leader, "no last snapshot", settled).await;
    // And the log purged past the stopped node, once it has been silent
    // long enough not to be waited for.
    let purged = |s: &Status| s.snapshot.is_some() && s.purged == s.snapshot;
    cluster.wait_for(leader, "no purge", purged).await;
    cluster.boot(behind, listen).await;
    cluster.converge().await;
    // Each snapshot sent once: the leader waited for the install (with
    // openraft's 200 ms, the last one was sent again and again). The leader
    // built two while the node was down (at 9 and 19 entries), and may have
    // begun sending the first before the node came back.
    let transfers = cluster.status(behind).snapshot_transfers;
    assert!((1..=2).contains(&transfers), "{transfers} transfers");
    assert_eq!(
        cluster.nodes[&behind].data().get(&key(0)).unwrap(),
        Some(value)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_index_defined_through_the_log_reaches_every_node() {
    let mut cluster = Cluster::start(50).await;
    let leader = cluster.leader().await;
    let behind = *cluster.nodes.keys().find(|id| **id != leader).unwrap();
    let listen = cluster.addrs[&behind];
    cluster.stop(behind).await;
    let other = *cluster.nodes.keys().find(|id| **id != leader).unwrap();
    cluster
        .client(other)
        .define_index("size", "/size")
        .await
        .unwrap();
    let mut large = Vec::new();
    for i in 0..120 {
        let size = if i % 3 == 0 { "L" } else { "M" };
        let value = format!("{{\"size\":\"{size}\"}}");
        cluster
            .client(leader)
            .put(&key(i), value.as_bytes())
            .await
            .unwrap();
        if size == "L" {
            large.push(key(i));
        }
    }
    let found = |answer: Vec<sift_raft::api::KeyValue>| -> Vec<Vec<u8>> {
        answer.into_iter().map(|kv| kv.key).collect()
    };
    let through_other = cluster.client(other).find("size", b"L", usize::MAX).await;
    assert_eq!(found(through_other.unwrap()), large);
    // The node that was down catches up (by snapshot: the log is purged
    // every 50 entries) and has the index too.
    cluster.boot(behind, listen).await;
    cluster.converge().await;
    let local: Vec<Vec<u8>> = cluster.nodes[&behind]
        .data()
        .find_page("size", b"L", b"", usize::MAX, usize::MAX)
        .unwrap()
        .0
        .into_iter()
        .map(|(key, _)| key)
        .collect();
    assert_eq!(local, large);
    assert!(cluster.status(behind).snapshot_transfers >= 1);
    // The same definition again is a no-op; another field under the name
    // is refused, alike on every node.
    cluster
        .client(1)
        .define_index("size", "/size")
        .await
        .unwrap();
    let other_field = cluster.client(1).define_index("size", "/weight").await;
    assert!(
        matches!(other_field, Err(WriteError::Invalid(_))),
        "{other_field:?}"
    );
    cluster.client(2).drop_index("size").await.unwrap();
    let dropped = cluster.client(3).find("size", b"L", 10).await;
    assert!(matches!(dropped, Err(ReadError::Invalid(_))), "{dropped:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_learner_far_behind_catches_up_while_writes_go_on() {
    // A snapshot every 20 entries, with no log kept behind it: while the
    // learner installs one (96 MiB), the writes below make several more.
    // The leader must keep the log the learner needs next, or the learner
    // is sent snapshot after snapshot for as long as the writes go on.
    let mut cluster = Cluster::start_with(20, sift_raft::DEFAULT_HEARTBEAT_MS).await;
    let leader = cluster.leader().await;
    let value = vec![5u8; 4 << 20];
    for i in 0..24 {
        cluster.client(leader).put(&key(i), &value).await.unwrap();
    }
    for i in 24..100 {
        cluster.client(leader).put(&key(i), b"small").await.unwrap();
    }
    let done = Arc::new(AtomicBool::new(false));
    let writer = {
        let (client, done) = (cluster.client(leader), Arc::clone(&done));
        tokio::spawn(async move {
            let mut written = 0;
            while !done.load(Ordering::Relaxed) {
                client.put(&key(1000 + written), b"small").await.unwrap();
                written += 1;
            }
            written
        })
    };
    cluster.dirs.insert(4, cluster._dir.path().join("n4"));
    cluster.boot(4, "127.0.0.1:0".parse().unwrap()).await;
    let addr = cluster.addrs[&4].to_string();
    cluster.client(leader).add_learner(4, &addr).await.unwrap();
    // Caught up while the writes go on: by the log after its snapshot, and
    // within a few entries of the leader.
    let start = Instant::now();
    let lag = || {
        let (leading, learning) = (cluster.status(leader), cluster.status(4));
        let by_log = learning.last_applied > learning.snapshot;
        let behind = leading.last_applied.unwrap_or(0) - learning.last_applied.unwrap_or(0);
        (by_log && behind <= 20, learning)
    };
    while !lag().0 && start.elapsed() < Duration::from_secs(60) {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let (caught_up, learning) = lag();
    done.store(true, Ordering::Relaxed);
    let written = writer.await.unwrap();
    assert!(
        caught_up,
        "not caught up after {:?} and {written} writes: {learning:?}",
        start.elapsed()
    );
    let transfers = learning.snapshot_transfers;
    assert!(transfers <= 2, "{transfers} snapshot transfers");
    cluster.converge().await;
    let last = key(1000 + written - 1);
    assert_eq!(
        cluster.nodes[&4].data().get(&last).unwrap(),
        Some(b"small".to_vec())
    );
    // With every node caught up, the leader purges up to its snapshot again.
    let purged = |s: &Status| s.snapshot.is_some() && s.purged == s.snapshot;
    cluster.wait_for(leader, "no purge", purged).await;
}
