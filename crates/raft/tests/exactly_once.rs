//! Exactly-once requests at the state machine: a retried request (the same
//! session and number, in a later log entry) answers what its first
//! application did and writes nothing, on every node alike. And one
//! client kept through refusals, restarts and many requests in flight.

#![expect(
    clippy::unwrap_used,
    reason = "test code fails the test on any error, like the #[test] fns clippy already exempts"
)]

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use openraft::storage::RaftStateMachine;
use openraft::{CommittedLeaderId, Entry, EntryPayload, LogId};
use sift_raft::api::ApiError;
use sift_raft::{
    Check, Client, Command, MAX_KEY_LEN, Op, Outcome, Request, SESSION_TTL_ENTRIES, Session,
    StateMachine, WriteError,
};
use tempfile::TempDir;

mod common;

use common::{Cluster, PATIENCE};

/// A state machine, and the index of the next entry to apply to it.
struct Applier {
    sm: StateMachine,
    index: u64,
    _dir: TempDir,
}

impl Applier {
    fn new(runtime: &tokio::runtime::Runtime) -> Self {
        let dir = TempDir::new().unwrap();
        let (_log, sm) = runtime
            .block_on(sift_raft::open_storage(
                dir.path(),
                &sift_raft::DataSettings::default(),
            ))
            .unwrap();
        Self {
            sm,
            index: 1,
            _dir: dir,
        }
    }

    /// Applies `request` as the entry at the next index (or at `index`).
    fn apply(&mut self, runtime: &tokio::runtime::Runtime, request: Request) -> Outcome {
        let entry = Entry {
            log_id: LogId::new(CommittedLeaderId::new(1, 0), self.index),
            payload: EntryPayload::Normal(request),
        };
        self.index += 1;
        runtime.block_on(self.sm.apply([entry])).unwrap().remove(0)
    }

    fn get(&self, key: &[u8]) -> Option<Vec<u8>> {
        let mut data_key = vec![0x01];
        data_key.extend_from_slice(key);
        self.sm.data().db().get(data_key).unwrap()
    }
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

fn put(key: &[u8], value: &[u8]) -> Command {
    Command::Write(vec![Op::Put {
        key: key.to_vec(),
        value: value.to_vec(),
    }])
}

fn request(id: u64, seq: u64, first_unanswered: u64, command: Command) -> Request {
    Request {
        session: Some(Session {
            id,
            seq,
            first_unanswered,
        }),
        command,
    }
}

/// The history that was not linearizable: a compare-and-set committed on
/// its first attempt, and its retry met its own write as a conflict.
#[test]
fn a_retried_compare_and_set_answers_applied_and_writes_once() {
    let runtime = runtime();
    let mut sm = Applier::new(&runtime);
    let cas = Command::Txn {
        checks: vec![Check {
            key: b"k".to_vec(),
            value: None,
        }],
        ops: vec![Op::Put {
            key: b"k".to_vec(),
            value: b"1".to_vec(),
        }],
    };
    assert_eq!(
        sm.apply(&runtime, request(7, 1, 1, cas.clone())),
        Outcome::Applied
    );
    assert_eq!(sm.apply(&runtime, request(7, 1, 1, cas)), Outcome::Applied);
    assert_eq!(sm.get(b"k").as_deref(), Some(&b"1"[..]));
}

#[test]
fn a_retried_put_does_not_overwrite_a_later_write_of_another_client() {
    let runtime = runtime();
    let mut sm = Applier::new(&runtime);
    assert_eq!(
        sm.apply(&runtime, request(1, 1, 1, put(b"k", b"a"))),
        Outcome::Applied
    );
    assert_eq!(
        sm.apply(&runtime, request(2, 1, 1, put(b"k", b"b"))),
        Outcome::Applied
    );
    // Client 1's retry of its first request, proposed again.
    assert_eq!(
        sm.apply(&runtime, request(1, 1, 1, put(b"k", b"a"))),
        Outcome::Applied
    );
    assert_eq!(sm.get(b"k").as_deref(), Some(&b"b"[..]));
    // Without a session a command is applied every time.
    sm.apply(&runtime, put(b"k", b"a").into());
    assert_eq!(sm.get(b"k").as_deref(), Some(&b"a"[..]));
}

#[test]
fn concurrent_requests_of_one_session_apply_in_any_order_once_each() {
    let runtime = runtime();
    let mut sm = Applier::new(&runtime);
    // Numbers 2 and 3 arrive before 1; all three were unanswered.
    for (seq, key) in [(2, b"b"), (3, b"c"), (1, b"a")] {
        assert_eq!(
            sm.apply(&runtime, request(9, seq, 1, put(key, b"v"))),
            Outcome::Applied
        );
    }
    assert_eq!(
        sm.apply(&runtime, request(9, 2, 1, put(b"b", b"again"))),
        Outcome::Applied
    );
    assert_eq!(sm.get(b"b").as_deref(), Some(&b"v"[..]));
    // Once the client says 1..=3 were answered, a late duplicate of 2 is
    // not applied either.
    assert_eq!(
        sm.apply(&runtime, request(9, 4, 4, put(b"d", b"v"))),
        Outcome::Applied
    );
    assert_eq!(
        sm.apply(&runtime, request(9, 2, 1, put(b"b", b"late"))),
        Outcome::AlreadyAnswered
    );
    assert_eq!(sm.get(b"b").as_deref(), Some(&b"v"[..]));
}

#[test]
fn an_unknown_or_expired_session_is_refused_not_applied() {
    let runtime = runtime();
    let mut sm = Applier::new(&runtime);
    // A request that says earlier ones were answered, of a session the
    // state machine never saw.
    assert_eq!(
        sm.apply(&runtime, request(5, 3, 2, put(b"k", b"v"))),
        Outcome::SessionExpired
    );
    assert_eq!(sm.get(b"k"), None);
    // A session unused for longer than the TTL is swept at a sweep index.
    assert_eq!(
        sm.apply(&runtime, request(6, 1, 1, put(b"k", b"1"))),
        Outcome::Applied
    );
    sm.index = (SESSION_TTL_ENTRIES + 10).next_multiple_of(1 << 16);
    sm.apply(&runtime, put(b"other", b"x").into());
    assert_eq!(
        sm.apply(&runtime, request(6, 2, 2, put(b"k", b"2"))),
        Outcome::SessionExpired
    );
    assert_eq!(sm.get(b"k").as_deref(), Some(&b"1"[..]));
}

/// More requests in flight in one session than it keeps outcomes for
/// (1,024): the oldest was applied and its answer lost, another client
/// then wrote its key, and the oldest's retry must not overwrite that.
#[test]
fn past_1024_unanswered_requests_the_oldest_retry_is_not_applied_twice() {
    let runtime = runtime();
    let mut sm = Applier::new(&runtime);
    assert_eq!(
        sm.apply(&runtime, request(1, 1, 1, put(b"k", b"a"))),
        Outcome::Applied
    );
    assert_eq!(
        sm.apply(&runtime, request(2, 1, 1, put(b"k", b"b"))),
        Outcome::Applied
    );
    // Numbers 2..=1100 of session 1, all sent while 1 was unanswered: the
    // session holds 1,024 outcomes, and refuses the rest, writing nothing.
    for seq in 2..=1100 {
        let key = format!("n{seq}");
        let expected = if seq <= 1024 {
            Outcome::Applied
        } else {
            Outcome::TooManyUnanswered
        };
        assert_eq!(
            sm.apply(&runtime, request(1, seq, 1, put(key.as_bytes(), b"v"))),
            expected,
            "{seq}"
        );
    }
    assert_eq!(sm.get(b"n1024").as_deref(), Some(&b"v"[..]));
    assert_eq!(sm.get(b"n1025"), None);
    assert_eq!(
        sm.apply(&runtime, request(1, 1, 1, put(b"k", b"a"))),
        Outcome::Applied
    );
    assert_eq!(sm.get(b"k").as_deref(), Some(&b"b"[..]), "applied twice");
    // Once the client acknowledges the answers below 1025, a refused
    // request applies when sent again, once.
    for _ in 0..2 {
        assert_eq!(
            sm.apply(&runtime, request(1, 1025, 1025, put(b"n1025", b"v"))),
            Outcome::Applied
        );
    }
    assert_eq!(sm.get(b"n1025").as_deref(), Some(&b"v"[..]));
}

/// The review's case: a client whose first write was refused before it
/// was proposed (a key over the limit), so the cluster never heard of its
/// session, still writes afterwards.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_whose_first_write_was_refused_writes_again() {
    let cluster = Cluster::start(1000).await;
    let client = cluster.client(1);
    let refused = client.put(&vec![b'k'; MAX_KEY_LEN + 1], b"v").await;
    assert!(
        matches!(refused, Err(WriteError::Invalid(_))),
        "{refused:?}"
    );
    for value in [&b"1"[..], b"2"] {
        let written = client.put(b"k", value).await;
        assert_eq!(written.map(|w| w.outcome), Ok(Outcome::Applied));
    }
    assert_eq!(client.get(b"k").await.unwrap().as_deref(), Some(&b"2"[..]));
}

/// One client kept through restarts: its first write finds every node
/// down (not applied), and it writes once they are back, and again after
/// the leader restarts.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_client_writes_through_restarts_after_a_first_write_found_all_down() {
    let mut cluster = Cluster::start(1000).await;
    let addrs: Vec<String> = cluster.addrs.values().map(SocketAddr::to_string).collect();
    let client = Client::of_cluster(addrs).unwrap().retry_for(PATIENCE);
    let ids: Vec<_> = cluster.addrs.keys().copied().collect();
    for id in &ids {
        cluster.stop(*id).await;
    }
    let hasty = client.clone().retry_for(Duration::from_millis(200));
    let refused = hasty.put(b"k", b"0").await;
    assert!(
        matches!(refused, Err(WriteError::NotApplied(_))),
        "{refused:?}"
    );
    for id in &ids {
        let listen = cluster.addrs[id];
        cluster.boot(*id, listen).await;
    }
    let written = client.put(b"k", b"1").await;
    assert_eq!(written.map(|w| w.outcome), Ok(Outcome::Applied));
    let leader = cluster.leader().await;
    cluster.stop(leader).await;
    let listen = cluster.addrs[&leader];
    cluster.boot(leader, listen).await;
    let written = client.put(b"k", b"2").await;
    assert_eq!(written.map(|w| w.outcome), Ok(Outcome::Applied));
    assert_eq!(client.get(b"k").await.unwrap().as_deref(), Some(&b"2"[..]));
}

/// Through a node: a session whose oldest request (1) has no answer yet
/// and 1,024 later ones applied is refused more, retryably, until the
/// client acknowledges; the oldest itself may still apply.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_with_1024_unanswered_requests_is_refused_more_until_it_acknowledges() {
    let cluster = Arc::new(Cluster::start(100_000).await);
    let leader = cluster.leader().await;
    // 2..=1025, by 16 writers.
    let mut writers = tokio::task::JoinSet::new();
    for first in 0..16 {
        let cluster = Arc::clone(&cluster);
        writers.spawn(async move {
            for seq in (2 + first..=1025).step_by(16) {
                let key = format!("n{seq}");
                let written = cluster.nodes[&leader]
                    .write(request(3, seq, 1, put(key.as_bytes(), b"v")))
                    .await;
                assert_eq!(written.map(|w| w.outcome), Ok(Outcome::Applied));
            }
        });
    }
    while let Some(done) = writers.join_next().await {
        done.unwrap();
    }
    let node = &cluster.nodes[&leader];
    let refused = node.write(request(3, 1026, 1, put(b"late", b"v"))).await;
    assert!(
        matches!(&refused, Err(ApiError::Refused(why)) if why.contains("unanswered")),
        "{refused:?}"
    );
    // The oldest may apply: the others wait on its answer.
    let oldest = node.write(request(3, 1, 1, put(b"first", b"v"))).await;
    assert_eq!(oldest.map(|w| w.outcome), Ok(Outcome::Applied));
    // The client had every answer up to 1025: room again.
    let late = node.write(request(3, 1026, 1026, put(b"late", b"v"))).await;
    assert_eq!(late.map(|w| w.outcome), Ok(Outcome::Applied));
    assert_eq!(
        node.data().get(b"late").unwrap().as_deref(),
        Some(&b"v"[..])
    );
}

/// The review's case: 1,024 unanswered transactions of one session, each
/// conflicting on a key at the limit, hold 64 MiB of outcomes. Kept in one
/// record, they passed the engine's value limit and every node stopped on
/// the entry; each outcome is a record of its own.
#[test]
fn a_session_full_of_conflicts_on_the_longest_keys_keeps_applying() {
    let runtime = runtime();
    let mut sm = Applier::new(&runtime);
    let conflict = |seq: u64| {
        let mut key = vec![b'k'; MAX_KEY_LEN];
        key[..8].copy_from_slice(&seq.to_be_bytes());
        let txn = Command::Txn {
            checks: vec![Check {
                key: key.clone(),
                value: Some(b"never".to_vec()),
            }],
            ops: vec![],
        };
        (key, txn)
    };
    for seq in 1..=1024 {
        let (key, txn) = conflict(seq);
        assert_eq!(
            sm.apply(&runtime, request(7, seq, 1, txn)),
            Outcome::Conflict { key },
            "{seq}"
        );
    }
    let (_, txn) = conflict(1025);
    assert_eq!(
        sm.apply(&runtime, request(7, 1025, 1, txn)),
        Outcome::TooManyUnanswered
    );
    // A retry still answers its own outcome.
    let (key, txn) = conflict(3);
    assert_eq!(
        sm.apply(&runtime, request(7, 3, 1, txn)),
        Outcome::Conflict { key }
    );
}
