//! Jepsen-style, with processes and a real network: three `sift serve`
//! processes, each in a network namespace of its own, joined to a bridge by
//! a veth pair. Twelve clients in the test's namespace read, write, delete
//! and compare-and-set four keys through any node, with retries
//! (`sift_raft::registers`), while a nemesis, one fault at a time:
//!
//! - parts the leader or any node from its peers, both ways, while the
//!   clients still reach it (a deposed leader that still answers reads
//!   would be caught here);
//! - cuts the leader's or any node's link, from peers and clients alike;
//!   in both, packets are dropped, not refused, so everyone waits for
//!   timeouts;
//! - pauses the leader or any node (SIGSTOP, then SIGCONT);
//! - kills the leader, any node or all three (SIGKILL) and restarts them.
//!
//! One value in twenty is 1 MiB, and the nodes snapshot every 20 entries
//! and keep 20 behind, so a node back from a fault may be sent a snapshot
//! (the test counts them). Then everything is healed, every node must
//! restart and converge, and every key's history must be linearizable.
//!
//! Network namespaces need root (`ip netns`): elsewhere the test says so
//! and passes without running, unless `SIFT_NETNS=require` (CI sets it).
//! It runs for `SIFT_FAULT_SECS` seconds (20 by default), with faults and
//! operations drawn from `SIFT_FAULT_SEED` (by default from the clock; the
//! test prints it).

#![expect(
    clippy::unwrap_used,
    reason = "test helpers fail the test on any error, like the #[test] fns clippy already exempts"
)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use sift_raft::Client;
use sift_raft::api::Status;
use sift_raft::registers::{self, Registers, Rng};

const NODES: u64 = 3;
const KEYS: u64 = 4;
/// Enough that some client reads through a deposed leader while the
/// others write through the new one: with five, a leader that answered
/// reads without confirming its lead passed 2 minutes of faults; with
/// twelve it failed within one.
const CLIENTS: u64 = 12;
const PORT: u16 = 7000;
/// Fits a 1 MiB value on a loaded machine; elections in 0.6-1.2 s.
const HEARTBEAT_MS: &str = "200";
const SNAPSHOT_EVERY: &str = "20";
/// How long a client retries one operation before it gives up on knowing
/// its outcome.
const CLIENT_RETRIES: Duration = Duration::from_secs(3);
/// Far more than an election or a restart takes.
const PATIENCE: Duration = Duration::from_secs(60);

/// Runs `ip` with `args`; whether it succeeded.
fn ip(args: &[&str]) -> bool {
    Command::new("ip")
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// The namespaces, their links and the bridge, removed on drop.
struct Network {
    /// A prefix unique to this process, for every name made.
    tag: String,
    /// The first three octets of the bridge's /24.
    subnet: String,
}

impl Network {
    /// Builds the network, or `None` where namespaces cannot be made.
    fn create() -> Option<Self> {
        let pid = std::process::id();
        let network = Self {
            tag: format!("sf{}", pid % 100_000),
            subnet: format!("10.{}.{}", 200 + pid % 50, (pid / 50) % 250),
        };
        let bridge = network.bridge();
        let cidr = format!("{}.1/24", network.subnet);
        let mut made = ip(&["link", "add", &bridge, "type", "bridge"])
            && ip(&["addr", "add", &cidr, "dev", &bridge])
            && ip(&["link", "set", &bridge, "up"]);
        for id in 1..=NODES {
            let (ns, link, peer) = (
                network.ns(id),
                network.link(id),
                format!("{}p{id}", network.tag),
            );
            let addr = format!("{}/24", network.ip(id));
            made = made
                && ip(&["netns", "add", &ns])
                && ip(&["link", "add", &link, "type", "veth", "peer", "name", &peer])
                && ip(&["link", "set", &peer, "netns", &ns])
                && ip(&["-n", &ns, "link", "set", &peer, "name", "eth0"])
                && ip(&["-n", &ns, "addr", "add", &addr, "dev", "eth0"])
                && ip(&["-n", &ns, "link", "set", "eth0", "up"])
                && ip(&["-n", &ns, "link", "set", "lo", "up"])
                && ip(&["link", "set", &link, "master", &bridge])
                && ip(&["link", "set", &link, "up"]);
        }
        made.then_some(network)
    }

    fn bridge(&self) -> String {
        format!("{}br", self.tag)
    }

    fn ns(&self, id: u64) -> String {
        format!("{}n{id}", self.tag)
    }

    /// Node `id`'s end of its link on the bridge.
    fn link(&self, id: u64) -> String {
        format!("{}v{id}", self.tag)
    }

    fn ip(&self, id: u64) -> String {
        format!("{}.{}", self.subnet, 10 + id)
    }

    fn addr(&self, id: u64) -> String {
        format!("{}:{PORT}", self.ip(id))
    }

    /// Cuts node `id`'s link (`up: false`: from its peers and the
    /// clients alike) or joins it again.
    fn set_link(&self, id: u64, up: bool) {
        let state = if up { "up" } else { "down" };
        assert!(ip(&["link", "set", &self.link(id), state]), "link {state}");
    }

    /// Parts node `id` from its peers (`parted: true`), both ways, or
    /// heals that: every packet between them is dropped by a blackhole
    /// route, while the clients still reach every node.
    fn set_parted(&self, id: u64, parted: bool) {
        let verb = if parted { "add" } else { "del" };
        for other in (1..=NODES).filter(|&other| other != id) {
            for (from, to) in [(id, other), (other, id)] {
                let to = format!("{}/32", self.ip(to));
                let routed = ip(&["-n", &self.ns(from), "route", verb, "blackhole", &to]);
                assert!(routed, "route {verb} blackhole {to} in node {from}");
            }
        }
    }
}

impl Drop for Network {
    fn drop(&mut self) {
        for id in 1..=NODES {
            ip(&["netns", "del", &self.ns(id)]);
            ip(&["link", "del", &self.link(id)]);
        }
        ip(&["link", "del", &self.bridge()]);
    }
}

/// A node's process and what it is doing.
struct Node {
    child: Option<Child>,
    dir: PathBuf,
}

/// Starts node `id` in its namespace.
fn serve(network: &Network, id: u64, dir: &Path) -> Child {
    let log = std::fs::File::options()
        .create(true)
        .append(true)
        .open(dir.with_extension("log"))
        .unwrap();
    Command::new("nsenter")
        .arg(format!("--net=/run/netns/{}", network.ns(id)))
        .arg("--")
        .arg(env!("CARGO_BIN_EXE_sift"))
        .args([
            "serve",
            "--id",
            &id.to_string(),
            "--listen",
            &network.addr(id),
        ])
        .args([
            "--heartbeat-ms",
            HEARTBEAT_MS,
            "--snapshot-every",
            SNAPSHOT_EVERY,
        ])
        .arg("--db")
        .arg(dir)
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .unwrap()
}

/// Sends `signal` (`-STOP`, `-CONT`) to a node's process.
fn signal(node: &Node, signal: &str) {
    let pid = node.child.as_ref().unwrap().id().to_string();
    let sent = Command::new("kill").args([signal, &pid]).status().unwrap();
    assert!(sent.success(), "kill {signal} {pid}");
}

/// Snapshot transfers node `id` has begun receiving since it started, as
/// it answers now (0 if it does not).
async fn transfers(network: &Network, id: u64) -> u64 {
    status(&network.addr(id))
        .await
        .map_or(0, |s| s.snapshot_transfers)
}

/// Kills a node's process (SIGKILL), paused or not, and reaps it.
fn kill(node: &mut Node) {
    if let Some(mut child) = node.child.take() {
        // Fails only for a process already reaped, which this one is not.
        let _ = child.kill();
        let _ = child.wait();
    }
}

impl Drop for Node {
    /// A failed test leaves no process behind.
    fn drop(&mut self) {
        kill(self);
    }
}

/// A node's status, if it answers within a second (a cut-off or paused
/// node does not).
async fn status(addr: &str) -> Option<Status> {
    let client = Client::new(addr).retry_for(Duration::ZERO);
    tokio::time::timeout(Duration::from_secs(1), client.status())
        .await
        .ok()?
        .ok()
}

/// The leader a majority of the nodes names, if any.
async fn leader(network: &Network) -> Option<u64> {
    let mut named: BTreeMap<u64, u64> = BTreeMap::new();
    for id in 1..=NODES {
        if let Some(leader) = status(&network.addr(id)).await.and_then(|s| s.leader) {
            *named.entry(leader).or_default() += 1;
        }
    }
    named
        .into_iter()
        .find(|(_, votes)| *votes > NODES / 2)
        .map(|(id, _)| id)
}

/// Waits until every node answers with the same applied index.
async fn converge(network: &Network) {
    let start = Instant::now();
    loop {
        let mut applied = Vec::new();
        for id in 1..=NODES {
            applied.push(status(&network.addr(id)).await.and_then(|s| s.last_applied));
        }
        if applied.iter().all(|a| a.is_some() && *a == applied[0]) {
            return;
        }
        assert!(start.elapsed() < PATIENCE, "not converged: {applied:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The faults, one after another until `until`; returns what it did, and
/// the snapshot transfers that killed nodes had received.
async fn nemesis(
    seed: u64,
    network: &Network,
    nodes: &mut BTreeMap<u64, Node>,
    until: Instant,
) -> (Vec<&'static str>, u64) {
    let mut rng = Rng(seed);
    let mut done = Vec::new();
    let mut received = 0;
    while Instant::now() < until {
        tokio::time::sleep(Duration::from_millis(500 + rng.below(1000))).await;
        let any = 1 + rng.below(NODES);
        let fault = match rng.below(9) {
            0 => "part the leader",
            1 => "part a node",
            2 => "cut the leader's link",
            3 => "cut a node's link",
            4 => "pause the leader",
            5 => "pause a node",
            6 => "kill the leader",
            7 => "kill a node",
            _ => "kill all nodes",
        };
        let victim = if fault.contains("the leader") {
            leader(network).await.unwrap_or(any)
        } else {
            any
        };
        let down = Duration::from_millis(500 + rng.below(2500));
        match fault {
            "part the leader" | "part a node" => {
                network.set_parted(victim, true);
                tokio::time::sleep(down).await;
                network.set_parted(victim, false);
            }
            "cut the leader's link" | "cut a node's link" => {
                network.set_link(victim, false);
                tokio::time::sleep(down).await;
                network.set_link(victim, true);
            }
            "pause the leader" | "pause a node" => {
                signal(&nodes[&victim], "-STOP");
                tokio::time::sleep(down).await;
                signal(&nodes[&victim], "-CONT");
            }
            "kill the leader" | "kill a node" => {
                received += transfers(network, victim).await;
                let node = nodes.get_mut(&victim).unwrap();
                kill(node);
                tokio::time::sleep(down).await;
                node.child = Some(serve(network, victim, &node.dir));
            }
            _ => {
                for (id, node) in nodes.iter_mut() {
                    received += transfers(network, *id).await;
                    kill(node);
                }
                tokio::time::sleep(down).await;
                for (id, node) in nodes.iter_mut() {
                    node.child = Some(serve(network, *id, &node.dir));
                }
            }
        }
        done.push(fault);
    }
    (done, received)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn histories_through_real_partitions_pauses_and_kills_are_linearizable() {
    let Some(network) = Network::create() else {
        let required = std::env::var("SIFT_NETNS").is_ok_and(|v| v == "require");
        assert!(
            !required,
            "SIFT_NETNS=require, but `ip netns` failed (root?)"
        );
        eprintln!("skipped: network namespaces need root (`ip netns add` failed)");
        return;
    };
    let (seconds, seed) = registers::fault_run_from_env();
    let root = tempfile::tempdir().unwrap();
    let mut nodes = BTreeMap::new();
    for id in 1..=NODES {
        let dir = root.path().join(format!("n{id}"));
        let child = Some(serve(&network, id, &dir));
        nodes.insert(id, Node { child, dir });
    }
    let members: BTreeMap<u64, String> = (1..=NODES).map(|id| (id, network.addr(id))).collect();
    let start = Instant::now();
    while Client::new(network.addr(1)).init(&members).await.is_err() {
        assert!(start.elapsed() < PATIENCE, "the nodes never came up");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    let addrs: Vec<String> = members.values().cloned().collect();
    let registers = Arc::new(Registers::new(KEYS, CLIENT_RETRIES));
    let until = Instant::now() + Duration::from_secs(seconds);
    let clients: Vec<_> = (1..=CLIENTS)
        .map(|me| {
            let (registers, addrs) = (Arc::clone(&registers), addrs.clone());
            tokio::spawn(async move { registers.client(seed, me, &addrs, until).await })
        })
        .collect();
    let (faults, mut received) = nemesis(seed, &network, &mut nodes, until).await;
    for client in clients {
        client.await.unwrap();
    }

    // Healed, resumed and all up: a leader, a last read of every key, and
    // every node converged.
    let start = Instant::now();
    while leader(&network).await.is_none() {
        assert!(start.elapsed() < PATIENCE, "no leader after the faults");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    registers.read_every_key(&addrs[0]).await.unwrap();
    converge(&network).await;
    for (id, node) in &mut nodes {
        received += transfers(&network, *id).await;
        kill(node);
    }
    assert!(
        faults.len() as u64 >= seconds / 5,
        "too few faults: {faults:?}"
    );
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    for fault in &faults {
        *counts.entry(fault).or_default() += 1;
    }
    match registers.check() {
        Ok(summary) => eprintln!(
            "{seconds} s: {} operations ({} with unknown outcome, {} writes not applied), \
             {received} snapshot transfers, faults: {counts:?}",
            summary.operations, summary.unknown, summary.not_applied
        ),
        Err(violation) => panic!("{violation}"),
    }
}
