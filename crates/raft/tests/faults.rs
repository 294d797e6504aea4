//! A Jepsen-style test: clients that retry write, delete, compare-and-set
//! and read a few keys through any node of three, while a nemesis stops and
//! restarts the leader, any node or all of them, and cuts the leader or any
//! node off from the others (each node drops every message to and from the
//! nodes it is cut off from). Some values are 1 MiB, and snapshots every 50
//! entries send restarted nodes a snapshot. Every key's history must be
//! linearizable, and every node must start again and converge.
//!
//! The clients and their histories are `sift_raft::registers`, shared with
//! the test of `sift serve` processes in network namespaces
//! (`crates/cli/tests/partitions.rs`).
//!
//! It runs for `SIFT_FAULT_SECS` seconds (20 by default, as in CI), with
//! faults and operations drawn from `SIFT_FAULT_SEED` (by default from the
//! clock; the test prints it, to replay a schedule).

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use sift_raft::NodeId;
use sift_raft::registers::{self, Registers, Rng};

mod common;

use common::Cluster;

const KEYS: u64 = 4;
const CLIENTS: u64 = 5;
/// A heartbeat that fits 1 MiB values on a loaded machine, with elections
/// in 0.6-1.2 s.
const HEARTBEAT_MS: u64 = 200;
/// How long a client retries one operation before it gives up on knowing
/// its outcome.
const CLIENT_RETRIES: Duration = Duration::from_secs(3);

/// The faults, one after another until `until`.
async fn nemesis(seed: u64, cluster: &mut Cluster, until: Instant) -> Vec<&'static str> {
    let mut rng = Rng(seed);
    let mut faults = Vec::new();
    let ids: Vec<NodeId> = cluster.addrs.keys().copied().collect();
    while Instant::now() < until {
        tokio::time::sleep(Duration::from_millis(500 + rng.below(1000))).await;
        let leader = cluster.nodes.keys().copied().find(|id| {
            let status = cluster.nodes[id].status();
            status.leader == Some(*id)
        });
        let any = ids[rng.below(ids.len() as u64) as usize];
        let fault = match rng.below(5) {
            0 => "stop the leader",
            1 => "stop a node",
            2 => "stop all nodes",
            3 => "cut the leader off",
            _ => "cut a node off",
        };
        let victim = match fault {
            "stop the leader" | "cut the leader off" => leader.unwrap_or(any),
            _ => any,
        };
        let down = Duration::from_millis(300 + rng.below(1500));
        match fault {
            "stop all nodes" => {
                for id in &ids {
                    cluster.stop(*id).await;
                }
                tokio::time::sleep(down).await;
                for id in &ids {
                    let listen = cluster.addrs[id];
                    cluster.boot(*id, listen).await;
                }
            }
            "stop the leader" | "stop a node" => {
                cluster.stop(victim).await;
                tokio::time::sleep(down).await;
                let listen = cluster.addrs[&victim];
                cluster.boot(victim, listen).await;
            }
            _ => {
                let others: Vec<NodeId> = ids.iter().copied().filter(|id| *id != victim).collect();
                cluster.nodes[&victim].partition().cut_off(others.clone());
                for id in &others {
                    cluster.nodes[id].partition().cut_off([victim]);
                }
                tokio::time::sleep(down).await;
                for node in cluster.nodes.values() {
                    node.partition().cut_off([]);
                }
            }
        }
        faults.push(fault);
    }
    faults
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn histories_under_kills_and_partitions_are_linearizable() {
    let (seconds, seed) = registers::fault_run_from_env();
    let mut cluster = Cluster::start_with(50, HEARTBEAT_MS).await;
    let addrs: Vec<String> = cluster.addrs.values().map(SocketAddr::to_string).collect();
    let registers = Arc::new(Registers::new(KEYS, CLIENT_RETRIES));
    let until = Instant::now() + Duration::from_secs(seconds);
    let clients: Vec<_> = (1..=CLIENTS)
        .map(|me| {
            let (registers, addrs) = (Arc::clone(&registers), addrs.clone());
            tokio::spawn(async move { registers.client(seed, me, &addrs, until).await })
        })
        .collect();
    let faults = nemesis(seed, &mut cluster, until).await;
    for client in clients {
        client.await.unwrap();
    }
    // Healed and all up: every node converges, and a last read of every
    // key joins its history.
    cluster.leader().await;
    registers.read_every_key(&addrs[0]).await.unwrap();
    cluster.converge().await;
    // One every 0.5-1.5 s, and longer on a loaded machine (a stop and a
    // restart take a while): at least one per 5 s.
    assert!(
        faults.len() as u64 >= seconds / 5,
        "too few faults: {faults:?}"
    );
    match registers.check() {
        Ok(summary) => eprintln!(
            "{seconds} s: {} operations ({} with unknown outcome, {} writes not applied), \
             faults: {faults:?}",
            summary.operations, summary.unknown, summary.not_applied
        ),
        Err(violation) => panic!("{violation}"),
    }
}
