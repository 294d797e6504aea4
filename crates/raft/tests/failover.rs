//! Failover with the default timeouts: the leader of three nodes stops,
//! and the time until the other two agree on a new one is measured, with
//! a put a client issues right after the stop (through any node, with the
//! client's default retry window), which must succeed.

mod common;

use std::time::{Duration, Instant};

use common::Cluster;
use sift_raft::Client;

/// The failover the defaults are chosen for, on 2 loaded cores.
const FAILOVER: Duration = Duration::from_secs(5);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_default_timeouts_fail_over_in_seconds_and_a_put_waits_it_out() {
    let mut cluster = Cluster::start_with(10_000, sift_raft::DEFAULT_HEARTBEAT_MS).await;
    let rounds: u32 = std::env::var("SIFT_FAILOVERS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(3);
    let mut figures = Vec::new();
    for round in 0..rounds {
        let leader = cluster.leader().await;
        let key = format!("round-{round}").into_bytes();
        cluster.client(leader).put(b"warm", b"up").await.unwrap();
        // Heartbeats as usual before the stop, not a put's replication.
        tokio::time::sleep(Duration::from_millis(500)).await;
        let seeds: Vec<String> = cluster.addrs.values().map(ToString::to_string).collect();
        let client = Client::of_cluster(seeds).unwrap();
        let listen = cluster.addrs[&leader];
        let stopped = Instant::now();
        cluster.stop(leader).await;
        let put = {
            let key = key.clone();
            tokio::spawn(async move {
                let written = client.put(&key, b"after the stop").await;
                (written, stopped.elapsed())
            })
        };
        let elected = cluster.leader().await;
        let elected_after = stopped.elapsed();
        assert_ne!(elected, leader);
        eprintln!(
            "round {round}: node {leader} stopped; node {elected} leads after {elected_after:?}"
        );
        let (written, put_after) = put.await.unwrap();
        written.unwrap_or_else(|e| panic!("the put gave up after {put_after:?}: {e}"));
        eprintln!("round {round}: the put succeeded after {put_after:?}");
        figures.push((elected_after, put_after));
        for id in cluster.nodes.keys() {
            let held = cluster.nodes[id].data().get(&key).unwrap();
            assert!(held.is_none() || held.as_deref() == Some(&b"after the stop"[..]));
        }
        cluster.boot(leader, listen).await;
        cluster.converge().await;
    }
    eprintln!("failovers (election, put): {figures:?}");
    for (elected_after, put_after) in &figures {
        assert!(*elected_after < FAILOVER, "failover took {elected_after:?}");
        assert!(
            *put_after < FAILOVER + Duration::from_secs(2),
            "the put took {put_after:?}"
        );
    }
    // The client's window outlasts a failover several times over.
    assert!(Client::DEFAULT_RETRY_FOR >= FAILOVER * 4);
}
