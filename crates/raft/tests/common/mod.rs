//! Three nodes in one process, on loopback, for the cluster tests: start,
//! stop and restart nodes, and wait (boundedly) for a leader and for
//! convergence.

#![allow(dead_code, reason = "each test file uses part of it")]
#![expect(
    clippy::unwrap_used,
    clippy::panic,
    reason = "test helpers fail the test on any error, like the #[test] fns clippy already exempts"
)]

use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use sift_raft::api::Status;
use sift_raft::{Client, Node, NodeId, NodeOptions};
use tempfile::TempDir;

/// Far more than an election takes (under 1 s with a 50 ms heartbeat, under
/// 5 s with the default).
pub const PATIENCE: Duration = Duration::from_secs(30);

pub struct Cluster {
    pub _dir: TempDir,
    pub dirs: BTreeMap<NodeId, PathBuf>,
    pub addrs: BTreeMap<NodeId, SocketAddr>,
    pub nodes: BTreeMap<NodeId, Node>,
    pub snapshot_every: u64,
    pub heartbeat_ms: u64,
}

/// A short heartbeat for fast elections: these tests write small values.
pub const FAST_HEARTBEAT_MS: u64 = 50;

impl Cluster {
    /// Three nodes, formed into a cluster, with a leader.
    pub async fn start(snapshot_every: u64) -> Self {
        Self::start_with(snapshot_every, FAST_HEARTBEAT_MS).await
    }

    pub async fn start_with(snapshot_every: u64, heartbeat_ms: u64) -> Self {
        let dir = TempDir::new().unwrap();
        let mut cluster = Self {
            dirs: (1..=3)
                .map(|id| (id, dir.path().join(format!("n{id}"))))
                .collect(),
            _dir: dir,
            addrs: BTreeMap::new(),
            nodes: BTreeMap::new(),
            snapshot_every,
            heartbeat_ms,
        };
        for id in 1..=3 {
            cluster.boot(id, "127.0.0.1:0".parse().unwrap()).await;
        }
        let members = cluster
            .addrs
            .iter()
            .map(|(id, a)| (*id, a.to_string()))
            .collect();
        cluster.client(1).init(&members).await.unwrap();
        cluster.leader().await;
        cluster
    }

    pub async fn boot(&mut self, id: NodeId, listen: SocketAddr) {
        let mut options =
            NodeOptions::new(id, listen, self.dirs[&id].clone()).heartbeat(self.heartbeat_ms);
        options.config.snapshot_policy =
            openraft::SnapshotPolicy::LogsSinceLast(self.snapshot_every);
        options.config.max_in_snapshot_log_to_keep = 0;
        let color = siftdb::Extractor::json_field("/color");
        options.data.indexes = vec![siftdb::IndexDef::new("color", color)];
        // A stopped node's storage closes when the last reader of it is
        // gone (a read or snapshot build may still be under way): until
        // then its databases are locked.
        let start = Instant::now();
        let node = loop {
            match Node::start(options.clone()).await {
                Ok(node) => break node,
                Err(e) if e.to_string().contains("locked") && start.elapsed() < PATIENCE => {
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
                Err(e) => panic!("node {id} does not start: {e}"),
            }
        };
        self.addrs.insert(id, node.addr());
        self.nodes.insert(id, node);
    }

    pub fn client(&self, id: NodeId) -> Client {
        Client::new(self.addrs[&id].to_string())
    }

    pub fn status(&self, id: NodeId) -> Status {
        self.nodes[&id].status()
    }

    /// The leader the running nodes agree on, waiting for one.
    pub async fn leader(&self) -> NodeId {
        let start = Instant::now();
        loop {
            let leaders: BTreeSet<_> = self
                .nodes
                .keys()
                .map(|id| self.status(*id).leader)
                .collect();
            if let [Some(leader)] = leaders.into_iter().collect::<Vec<_>>()[..]
                && self.nodes.contains_key(&leader)
            {
                return leader;
            }
            assert!(start.elapsed() < PATIENCE, "no leader after {PATIENCE:?}");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Waits until node `id`'s status satisfies `done`.
    pub async fn wait_for(&self, id: NodeId, what: &str, done: impl Fn(&Status) -> bool) {
        let start = Instant::now();
        while !done(&self.status(id)) {
            assert!(
                start.elapsed() < PATIENCE,
                "{what} after {PATIENCE:?}: {:?}",
                self.status(id)
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Stops node `id` (its storage stays).
    pub async fn stop(&mut self, id: NodeId) {
        self.nodes.remove(&id).unwrap().shutdown().await;
    }

    /// Waits until every running node has applied the leader's log.
    pub async fn converge(&self) {
        let start = Instant::now();
        loop {
            let applied: BTreeSet<_> = self
                .nodes
                .keys()
                .map(|id| self.status(*id).last_applied)
                .collect();
            if applied.len() == 1 {
                return;
            }
            assert!(
                start.elapsed() < PATIENCE,
                "not converged: {:?}",
                self.nodes
                    .keys()
                    .map(|id| self.status(*id))
                    .collect::<Vec<_>>()
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Every running node holds exactly `model`.
    pub fn assert_holds(&self, model: &BTreeMap<Vec<u8>, Vec<u8>>) {
        for (id, node) in &self.nodes {
            let held: BTreeMap<_, _> = node
                .data()
                .scan(b"", None, usize::MAX)
                .unwrap()
                .into_iter()
                .collect();
            assert_eq!(&held, model, "node {id}");
        }
    }
}
