//! A Jepsen-style test: clients that retry write, delete, compare-and-set
//! and read a few keys through any node of three, while a nemesis stops and
//! restarts the leader, any node or all of them, and cuts the leader or any
//! node off from the others (each node drops every message to and from the
//! nodes it is cut off from). Some values are 1 MiB, and snapshots every 50
//! entries send restarted nodes a snapshot. Every key's history must be
//! linearizable, and every node must start again and converge.
//!
//! It runs for `SIFT_FAULT_SECS` seconds (20 by default, as in CI), with
//! faults and operations drawn from `SIFT_FAULT_SEED` (by default from the
//! clock; the test prints it, to replay a schedule).

#![expect(
    clippy::unwrap_used,
    clippy::panic,
    reason = "the clients fail the test on anything a client must never see"
)]

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use sift_raft::api::ApiError;
use sift_raft::linearizable::{self, Answer, Call, Operation};
use sift_raft::{Check, Client, Command, NodeId, Op, Outcome};

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

/// A small generator of pseudo-random numbers (splitmix64).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// What every client did, by key.
#[derive(Default)]
struct Histories {
    start: Option<Instant>,
    by_key: Mutex<BTreeMap<u64, Vec<Operation<u64>>>>,
}

impl Histories {
    fn now(&self) -> u64 {
        let start = self.start.unwrap_or_else(Instant::now);
        u64::try_from(start.elapsed().as_micros()).unwrap_or(u64::MAX)
    }

    fn record(&self, key: u64, operation: Operation<u64>) {
        self.by_key
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .entry(key)
            .or_default()
            .push(operation);
    }
}

fn key(k: u64) -> Vec<u8> {
    format!("key{k}").into_bytes()
}

/// Value `id`: its id repeated to `len` bytes, so a read can tell it whole.
fn value(id: u64, len: usize) -> Vec<u8> {
    id.to_be_bytes().iter().copied().cycle().take(len).collect()
}

/// The id of a value read, checking that it is whole.
fn id_of(bytes: &[u8]) -> u64 {
    let id = u64::from_be_bytes(bytes[..8].try_into().unwrap());
    assert_eq!(bytes, value(id, bytes.len()), "a damaged value");
    id
}

/// One client: operations on random keys through random nodes until
/// `until`, each recorded with its call and answer times.
async fn client(
    seed: u64,
    me: u64,
    addrs: Vec<SocketAddr>,
    histories: Arc<Histories>,
    until: Instant,
) -> usize {
    let mut rng = Rng(seed ^ me);
    // What this client last read of each key: the value's id and length.
    let mut last_read: BTreeMap<u64, Option<(u64, usize)>> = BTreeMap::new();
    let mut done = 0;
    let mut next_id = me << 32;
    while Instant::now() < until {
        let addr = addrs[rng.below(addrs.len() as u64) as usize];
        let client = Client::new(addr.to_string()).retry_for(CLIENT_RETRIES);
        let k = rng.below(KEYS);
        next_id += 1;
        let id = next_id;
        let len = if rng.below(20) == 0 { 1 << 20 } else { 8 };
        let called = histories.now();
        let (call, answer) = match rng.below(10) {
            0..=3 => {
                let read = client.get(&key(k)).await;
                let answer = match read {
                    Ok(found) => {
                        last_read.insert(k, found.as_ref().map(|v| (id_of(v), v.len())));
                        Answer::Value(found.as_deref().map(id_of))
                    }
                    Err(e) => unknown(e),
                };
                (Call::Read, answer)
            }
            4..=6 => {
                let answer = match client.put(&key(k), &value(id, len)).await {
                    Ok(written) => answer_of(written.outcome),
                    Err(e) => unknown(e),
                };
                (Call::Write(Some(id)), answer)
            }
            7 => {
                let answer = match client.delete(&key(k)).await {
                    Ok(written) => answer_of(written.outcome),
                    Err(e) => unknown(e),
                };
                (Call::Write(None), answer)
            }
            _ => {
                let expected = last_read.get(&k).copied().flatten();
                let command = Command::Txn {
                    checks: vec![Check {
                        key: key(k),
                        value: expected.map(|(id, len)| value(id, len)),
                    }],
                    ops: vec![Op::Put {
                        key: key(k),
                        value: value(id, 8),
                    }],
                };
                let answer = match client.write(&command).await {
                    Ok(written) => answer_of(written.outcome),
                    Err(e) => unknown(e),
                };
                let call = Call::CompareAndSet {
                    expected: expected.map(|(id, _)| id),
                    new: Some(id),
                };
                (call, answer)
            }
        };
        let answered = histories.now();
        histories.record(
            k,
            Operation {
                call,
                answer,
                called,
                answered,
            },
        );
        done += 1;
    }
    done
}

/// The answer a write's outcome gives.
fn answer_of(outcome: Outcome) -> Answer<u64> {
    match outcome {
        Outcome::Applied => Answer::Done,
        Outcome::Conflict { .. } => Answer::Conflict,
        // Expired sessions cannot happen in a test this short; if one did,
        // the write's fate would be unknown.
        Outcome::SessionExpired => Answer::Unknown,
        other => panic!("an answer no client should get: {other:?}"),
    }
}

/// An operation that failed after every retry: it may have taken effect.
fn unknown(e: ApiError) -> Answer<u64> {
    assert!(
        matches!(e, ApiError::Unavailable(_) | ApiError::NotLeader { .. }),
        "{e}"
    );
    Answer::Unknown
}

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
    let seconds: u64 = std::env::var("SIFT_FAULT_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(20);
    let seed = std::env::var("SIFT_FAULT_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH);
            now.map_or(1, |d| d.as_nanos() as u64)
        });
    eprintln!("SIFT_FAULT_SEED={seed}");
    let mut cluster = Cluster::start_with(50, HEARTBEAT_MS).await;
    let addrs: Vec<SocketAddr> = cluster.addrs.values().copied().collect();
    let histories = Arc::new(Histories {
        start: Some(Instant::now()),
        ..Histories::default()
    });
    let until = Instant::now() + Duration::from_secs(seconds);
    let clients: Vec<_> = (1..=CLIENTS)
        .map(|me| {
            tokio::spawn(client(
                seed,
                me,
                addrs.clone(),
                Arc::clone(&histories),
                until,
            ))
        })
        .collect();
    let faults = nemesis(seed, &mut cluster, until).await;
    let mut operations = 0;
    for client in clients {
        operations += client.await.unwrap();
    }
    // Healed and all up: every node converges, and a last read of every
    // key joins its history.
    cluster.leader().await;
    let last = Client::new(addrs[0].to_string());
    for k in 0..KEYS {
        let called = histories.now();
        let found = last.get(&key(k)).await.unwrap();
        let answer = Answer::Value(found.as_deref().map(id_of));
        let answered = histories.now();
        histories.record(
            k,
            Operation {
                call: Call::Read,
                answer,
                called,
                answered,
            },
        );
    }
    cluster.converge().await;
    let by_key = histories
        .by_key
        .lock()
        .unwrap_or_else(PoisonError::into_inner);
    let unknown = by_key
        .values()
        .flatten()
        .filter(|op| op.answer == Answer::Unknown)
        .count();
    eprintln!(
        "{seconds} s: {operations} operations ({unknown} with unknown outcome), faults: {faults:?}"
    );
    // One every 0.5-1.5 s, and longer on a loaded machine (a stop and a
    // restart take a while): at least one per 5 s.
    assert!(
        faults.len() as u64 >= seconds / 5,
        "too few faults: {faults:?}"
    );
    for (k, history) in by_key.iter() {
        if let Err(violation) = linearizable::check(None, history) {
            panic!("key {k}: {violation}; its history: {history:?}");
        }
    }
}
