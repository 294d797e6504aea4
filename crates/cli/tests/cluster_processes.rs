//! Three `sift serve` processes on loopback. The leader is SIGKILLed again
//! and again while a client writes; each time a new leader must take over
//! within 3 s, the killed node restarts and catches up. Then the leader is
//! paused (SIGSTOP) twice while writes go on through the others. At the end
//! every acknowledged write is on every node, and nothing that was never
//! written is. `SIFT_KILLS` sets the number of kills (default 6; the
//! replication docs record a run of 50).

#![expect(
    clippy::unwrap_used,
    reason = "test helpers fail the test on any error, like the #[test] fns clippy already exempts"
)]

use std::collections::{BTreeMap, BTreeSet};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use sift_raft::api::Status;
use sift_raft::{Client, StateMachine};

/// Far more than an election takes.
const PATIENCE: Duration = Duration::from_secs(20);

struct Process {
    child: Child,
    addr: String,
    dir: PathBuf,
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn serve(id: u64, addr: &str, dir: &Path) -> Child {
    Command::new(env!("CARGO_BIN_EXE_sift"))
        .args(["serve", "--id", &id.to_string(), "--listen", addr])
        // Small writes only: a short heartbeat for a fast failover.
        .args(["--heartbeat-ms", "100", "--db"])
        .arg(dir)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

async fn status(addr: &str) -> Option<Status> {
    Client::new(addr).status().await.ok()
}

/// The leader all live nodes agree on, waiting for one.
async fn leader(nodes: &BTreeMap<u64, Process>) -> u64 {
    let start = Instant::now();
    loop {
        let mut seen = BTreeSet::new();
        for node in nodes.values() {
            seen.insert(status(&node.addr).await.and_then(|s| s.leader));
        }
        if let [Some(leader)] = seen.into_iter().collect::<Vec<_>>()[..]
            && nodes.contains_key(&leader)
        {
            return leader;
        }
        assert!(start.elapsed() < PATIENCE, "no leader after {PATIENCE:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Waits until every node has applied the same index.
async fn converge(nodes: &BTreeMap<u64, Process>) {
    let start = Instant::now();
    loop {
        let mut applied = BTreeSet::new();
        for node in nodes.values() {
            applied.insert(status(&node.addr).await.and_then(|s| s.last_applied));
        }
        if applied.len() == 1 && !applied.contains(&None) {
            return;
        }
        assert!(start.elapsed() < PATIENCE, "not converged: {applied:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Sends `signal` (`-STOP`, `-CONT`, `-TERM`) to a node's process.
fn signal(node: &Process, signal: &str) {
    let pid = node.child.id().to_string();
    let sent = Command::new("kill").args([signal, &pid]).status().unwrap();
    assert!(sent.success(), "kill {signal} {pid}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acknowledged_writes_survive_repeated_leader_kills() {
    let kills: usize = std::env::var("SIFT_KILLS")
        .ok()
        .and_then(|k| k.parse().ok())
        .unwrap_or(6);
    let root = tempfile::tempdir().unwrap();
    let mut nodes = BTreeMap::new();
    for id in 1..=3u64 {
        let addr = format!("127.0.0.1:{}", free_port());
        let dir = root.path().join(format!("n{id}"));
        let child = serve(id, &addr, &dir);
        nodes.insert(id, Process { child, addr, dir });
    }
    let members: BTreeMap<u64, String> =
        nodes.iter().map(|(id, p)| (*id, p.addr.clone())).collect();
    let first = Client::new(nodes[&1].addr.clone());
    let start = Instant::now();
    while first.init(&members).await.is_err() {
        assert!(start.elapsed() < PATIENCE, "the nodes never came up");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let mut acknowledged = BTreeMap::new();
    let mut attempted = BTreeSet::new();
    let mut failovers = Vec::new();
    let mut n = 0u64;
    for _ in 0..kills {
        let killed = leader(&nodes).await;
        // Writes through a node that stays up, before and after the kill.
        let through = *nodes.keys().find(|id| **id != killed).unwrap();
        let client = Client::new(nodes[&through].addr.clone());
        for _ in 0..5 {
            let (key, value) = (format!("k{n:06}"), format!("v{n}"));
            n += 1;
            attempted.insert(key.clone());
            client.put(key.as_bytes(), value.as_bytes()).await.unwrap();
            acknowledged.insert(key, value);
        }
        let node = nodes.get_mut(&killed).unwrap();
        node.child.kill().unwrap(); // SIGKILL
        node.child.wait().unwrap();
        let killed_at = Instant::now();
        // The first write acknowledged after the kill marks the failover.
        for i in 0..5 {
            let (key, value) = (format!("k{n:06}"), format!("v{n}"));
            n += 1;
            attempted.insert(key.clone());
            client.put(key.as_bytes(), value.as_bytes()).await.unwrap();
            if i == 0 {
                failovers.push(killed_at.elapsed());
            }
            acknowledged.insert(key, value);
        }
        let node = nodes.get_mut(&killed).unwrap();
        node.child = serve(killed, &node.addr, &node.dir);
        converge(&nodes).await;
    }
    // A leader paused (SIGSTOP) for 2 s: the others elect a new one and
    // acknowledge writes meanwhile; resumed, it follows and catches up.
    for _ in 0..2 {
        let paused = leader(&nodes).await;
        let through = *nodes.keys().find(|id| **id != paused).unwrap();
        let client = Client::new(nodes[&through].addr.clone());
        signal(&nodes[&paused], "-STOP");
        let resume_at = Instant::now() + Duration::from_secs(2);
        while Instant::now() < resume_at {
            let (key, value) = (format!("k{n:06}"), format!("v{n}"));
            n += 1;
            attempted.insert(key.clone());
            client.put(key.as_bytes(), value.as_bytes()).await.unwrap();
            acknowledged.insert(key, value);
        }
        signal(&nodes[&paused], "-CONT");
        converge(&nodes).await;
    }
    failovers.sort();
    let worst = failovers.last().copied().unwrap_or_default();
    eprintln!(
        "{kills} leader kills, {} writes acknowledged; failover median {:?}, worst {worst:?}",
        acknowledged.len(),
        failovers
            .get(failovers.len() / 2)
            .copied()
            .unwrap_or_default()
    );
    assert!(worst < Duration::from_secs(3), "failovers: {failovers:?}");
    // The whole cluster crashes at once, restarts and settles; then, stopped
    // cleanly, each node's state machine holds exactly what was
    // acknowledged (every write here was: the client retries past
    // elections).
    for node in nodes.values_mut() {
        node.child.kill().unwrap();
        node.child.wait().unwrap();
    }
    for (id, node) in &mut nodes {
        node.child = serve(*id, &node.addr, &node.dir);
    }
    leader(&nodes).await;
    converge(&nodes).await;
    for node in nodes.values_mut() {
        signal(node, "-TERM");
        node.child.wait().unwrap();
    }
    for (id, node) in &nodes {
        let sm = StateMachine::open(&node.dir, &sift_raft::DataSettings::default())
            .await
            .unwrap();
        let held: BTreeMap<String, String> = sm
            .data()
            .scan(b"", None, usize::MAX)
            .unwrap()
            .into_iter()
            .map(|(k, v)| (String::from_utf8(k).unwrap(), String::from_utf8(v).unwrap()))
            .collect();
        let missing: Vec<_> = acknowledged
            .keys()
            .filter(|k| !held.contains_key(*k))
            .collect();
        assert!(
            missing.is_empty(),
            "node {id} lost {} acknowledged writes: {missing:?}",
            missing.len()
        );
        let unknown: Vec<_> = held.keys().filter(|k| !attempted.contains(*k)).collect();
        assert!(
            unknown.is_empty(),
            "node {id} holds writes never made: {unknown:?}"
        );
        for (key, value) in &held {
            assert_eq!(acknowledged.get(key), Some(value), "node {id}, key {key}");
        }
    }
}
