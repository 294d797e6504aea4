//! Exactly-once requests at the state machine: a retried request (the same
//! session and number, in a later log entry) answers what its first
//! application did and writes nothing, on every node alike.

#![expect(
    clippy::unwrap_used,
    reason = "test code fails the test on any error, like the #[test] fns clippy already exempts"
)]

use openraft::storage::RaftStateMachine;
use openraft::{CommittedLeaderId, Entry, EntryPayload, LogId};
use sift_raft::{Check, Command, Op, Outcome, Request, SESSION_TTL_ENTRIES, Session, StateMachine};
use tempfile::TempDir;

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
