//! [`Node`]: one member of a Sift cluster: its Raft, its storage and its
//! HTTP server, and the client API it serves (writes go through the
//! leader; a follower forwards them).

use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use openraft::error::{ChangeMembershipError, ClientWriteError, Fatal, RaftError};
use openraft::{BasicNode, ChangeMembers, Config, ServerState};
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::api::{self, ApiError, KeyValue, Member, Read, ReadAnswer, Status, Written};
use crate::auth::{Token, authorize};
use crate::codec::encode;
use crate::command::{Outcome, Request, Session};
use crate::limits::{Limits, check_ops};
use crate::log_retention::Retention;
use crate::network::{FROM, Network, Partition};
use crate::sessions::MAX_OUTCOMES;
use crate::state_machine::{DataHandle, DataSettings};
use crate::types::{NodeId, Raft};

/// How long a write or read waits to be committed (or confirmed by a
/// quorum) before it is answered with [`ApiError::Unavailable`]: a leader
/// cut off from its quorum cannot commit, and must not hang its clients.
const COMMIT_TIMEOUT: Duration = Duration::from_secs(5);

/// How a node starts.
#[derive(Clone, Debug)]
pub struct NodeOptions {
    /// Its id in the cluster.
    pub id: NodeId,
    /// Where it listens (port 0: any free port; [`Node::addr`] says which).
    pub listen: SocketAddr,
    /// Its directory: the log, the state machine and snapshots.
    pub dir: PathBuf,
    /// openraft's settings (timeouts, snapshot policy).
    pub config: Config,
    /// How the state machine's database is opened: its value indexes
    /// (every node must declare the same) and its memory.
    pub data: DataSettings,
    /// What it serves at once, and for how long.
    pub limits: Limits,
    /// The cluster's shared secret: every request but the health check
    /// must carry it (clients' and peers'), and this node sends it to its
    /// peers. `None`: anyone who can reach the node may do anything.
    pub token: Option<Token>,
    /// The most entries, past those `config.max_in_snapshot_log_to_keep`
    /// keeps behind the snapshot, that a leader keeps for followers
    /// catching up (a far-behind one installing a snapshot needs the log
    /// after it): see `log_retention`.
    pub log_held_for_followers: u64,
}

/// The default heartbeat interval, in milliseconds. openraft gives each
/// AppendEntries message this long, and a follower elects a new leader
/// after about 3 to 4.5 times it without one (see [`NodeOptions::heartbeat`]):
/// at 1,000 ms, failover took 2.4-3.9 s on 2 loaded cores
/// (`tests/failover.rs`). A message holding a value at the engine's limit
/// (64 MiB) took 0.86-1.15 s to send, sync and answer with three nodes on
/// 2 loaded cores: past this interval, so such values need a longer one
/// (1,500 ms: `NodeOptions::heartbeat`, `sift serve --heartbeat-ms`).
pub const DEFAULT_HEARTBEAT_MS: u64 = 1000;

/// How long a leader waits for the answer to a snapshot's chunk (openraft
/// 0.9 gives every chunk the same time). The last one is answered once the
/// follower has installed the whole snapshot: copied, synced, unpacked,
/// synced and opened. openraft's default (200 ms) is shorter than any
/// install of a real store, so a large snapshot was sent again and again;
/// 10 minutes covers tens of GiB. A follower that goes down answers at
/// once (the connection is refused), so only a paused one holds a transfer
/// this long.
const SNAPSHOT_INSTALL_TIMEOUT_MS: u64 = 600_000;

impl NodeOptions {
    /// A node with timeouts that fit the largest command
    /// ([`DEFAULT_HEARTBEAT_MS`]), snapshotting every 10,000 entries.
    pub fn new(id: NodeId, listen: SocketAddr, dir: impl Into<PathBuf>) -> Self {
        let config = Config {
            cluster_name: "sift".into(),
            snapshot_policy: openraft::SnapshotPolicy::LogsSinceLast(10_000),
            install_snapshot_timeout: SNAPSHOT_INSTALL_TIMEOUT_MS,
            ..Config::default()
        };
        Self {
            id,
            listen,
            dir: dir.into(),
            config,
            data: DataSettings::default(),
            limits: Limits::default(),
            token: None,
            log_held_for_followers: 100_000,
        }
        .heartbeat(DEFAULT_HEARTBEAT_MS)
    }

    /// Sets the heartbeat interval to `ms`, and the election timeout from
    /// `ms` plus a quarter of it (at least 200 ms) to that plus as much
    /// again.
    ///
    /// openraft 0.9 elects only after a follower has heard nothing from
    /// its leader for the leader's lease (the election timeout's maximum)
    /// *and* then its election timeout, and checks that on a timer that
    /// ticks every 1.5 intervals, which also sends the heartbeats. So a
    /// follower waits from `min + max` to 2 maxima of silence, and failover takes,
    /// from the leader's last heartbeat, between `min + max` and
    /// `2 max + 1.5 ms` plus a vote: at the default 1,000 ms, 2.75-4.5 s
    /// (3 to 6 times the interval, as this set before, took 13.5-18 s at
    /// 1.5 s). A follower that hears a heartbeat every 1.5 intervals has
    /// more than 1.8 of those of room before it elects.
    ///
    /// The interval is also how long one AppendEntries message may take:
    /// it must cover sending the largest command to a follower and its
    /// synced write there (1,500 ms for a 64 MiB value). Lower it for
    /// faster failover when commands are small: the fault test runs 1 MiB
    /// values at 200 ms, the other cluster tests small ones at 50 ms.
    #[must_use]
    pub fn heartbeat(mut self, ms: u64) -> Self {
        let margin = (ms / 4).max(200);
        self.config.heartbeat_interval = ms;
        self.config.election_timeout_min = ms.saturating_add(margin);
        self.config.election_timeout_max = ms.saturating_add(margin.saturating_mul(2));
        self
    }

    /// Builds a snapshot every `entries` applied entries and keeps that
    /// many entries of log behind it: a follower further behind than that
    /// catches up by snapshot, and the leader keeps the log after it while
    /// it does (`log_held_for_followers`). (The default: every 10,000,
    /// keeping openraft's 1,000.)
    #[must_use]
    pub fn snapshot_every(mut self, entries: u64) -> Self {
        self.config.snapshot_policy = openraft::SnapshotPolicy::LogsSinceLast(entries);
        self.config.max_in_snapshot_log_to_keep = entries;
        self
    }
}

/// What the server's handlers and the node share.
pub(crate) struct Shared {
    pub(crate) id: NodeId,
    pub(crate) raft: Raft,
    pub(crate) data: DataHandle,
    pub(crate) partition: Partition,
    client: reqwest::Client,
    snapshot_transfers: Arc<AtomicU64>,
    pub(crate) limits: Limits,
    pub(crate) token: Option<Token>,
}

impl std::fmt::Debug for Shared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shared")
            .field("id", &self.id)
            .finish_non_exhaustive()
    }
}

/// A running node.
#[derive(Debug)]
pub struct Node {
    shared: Arc<Shared>,
    addr: SocketAddr,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    server: Option<tokio::task::JoinHandle<()>>,
    /// Purges the log (`log_retention`).
    retention: tokio::task::JoinHandle<()>,
}

impl Node {
    /// Opens the node's storage, starts its Raft and its server.
    ///
    /// # Errors
    /// [`ApiError::Invalid`] for a bad configuration; [`ApiError::Unavailable`]
    /// if the storage cannot be opened or the address bound.
    pub async fn start(options: NodeOptions) -> Result<Self, ApiError> {
        let retention = Retention {
            keep: options.config.max_in_snapshot_log_to_keep,
            hold_limit: options.log_held_for_followers,
            patience: Duration::from_millis(options.config.heartbeat_interval.saturating_mul(5)),
        };
        // The log's purges are `retention`'s, not openraft's.
        let config = Config {
            max_in_snapshot_log_to_keep: u64::MAX,
            ..options.config.clone()
        }
        .validate()
        .map_err(|e| ApiError::Invalid(e.to_string()))?;
        options.limits.validate().map_err(ApiError::Invalid)?;
        let listener = tokio::net::TcpListener::bind(options.listen)
            .await
            .map_err(|e| {
                ApiError::Unavailable(format!("cannot listen on {}: {e}", options.listen))
            })?;
        let addr = listener
            .local_addr()
            .map_err(|e| ApiError::Unavailable(e.to_string()))?;
        let (log, sm) = crate::open_storage(&options.dir, &options.data)
            .await
            .map_err(|e| ApiError::Unavailable(format!("{}: {e}", options.dir.display())))?;
        let (data, snapshot_transfers) = (sm.data(), sm.snapshot_transfers());
        let snapshot_reads = sm.snapshot_reads();
        let client = reqwest::Client::new();
        let partition = Partition::default();
        let network = Network {
            client: client.clone(),
            partition: partition.clone(),
            from: options.id,
            token: options.token.clone(),
        };
        let raft = Raft::new(options.id, Arc::new(config), network, log, sm)
            .await
            .map_err(|e| ApiError::Unavailable(e.to_string()))?;
        let shared = Arc::new(Shared {
            id: options.id,
            raft,
            data,
            partition,
            client,
            snapshot_transfers,
            limits: options.limits.clone(),
            token: options.token,
        });
        let retention = tokio::spawn(retention.run(shared.raft.clone(), snapshot_reads));
        let (stop, stopped) = tokio::sync::oneshot::channel();
        let router = crate::server::router(Arc::clone(&shared));
        let limits = options.limits;
        let server = tokio::spawn(async move {
            let stopped = async {
                let _ = stopped.await;
            };
            crate::listener::serve(listener, router, &limits, stopped).await;
        });
        Ok(Self {
            shared,
            addr,
            stop: Some(stop),
            server: Some(server),
            retention,
        })
    }

    /// The address it listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Its Raft.
    pub fn raft(&self) -> &Raft {
        &self.shared.raft
    }

    /// Read access to its state machine's data (not linearizable: what
    /// this node has applied).
    pub fn data(&self) -> &DataHandle {
        &self.shared.data
    }

    /// The peers it is cut off from (for tests of partitions).
    pub fn partition(&self) -> &Partition {
        &self.shared.partition
    }

    /// Proposes `request` (a [`Command`](crate::Command), or one with its
    /// client's [`Session`](crate::Session)) and waits until it is committed
    /// and applied.
    ///
    /// # Errors
    /// See [`ApiError`].
    pub async fn write(&self, request: impl Into<Request>) -> Result<Written, ApiError> {
        self.shared.write(request.into(), true).await
    }

    /// Reads linearizably: on the leader, after confirming it still leads.
    ///
    /// # Errors
    /// See [`ApiError`].
    pub async fn read(&self, read: Read) -> Result<ReadAnswer, ApiError> {
        self.shared.read(read, true).await
    }

    /// What it knows of the cluster.
    pub fn status(&self) -> Status {
        self.shared.status()
    }

    /// Its elections, the leaders it learns of and the memberships it
    /// adopts, as they happen, one line each (what `sift serve` logs).
    pub fn changes(&self) -> crate::Changes {
        crate::Changes::new(self.shared.raft.server_metrics())
    }

    /// Stops the server and Raft; the storage closes when the last reader
    /// of it is gone.
    pub async fn shutdown(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        self.retention.abort();
        let _ = self.shared.raft.shutdown().await;
        if let Some(server) = self.server.take() {
            server.abort();
            let _ = server.await;
        }
    }
}

impl Shared {
    /// [`Node::write`]; `forward`: whether a follower may pass it on to
    /// the leader.
    pub(crate) async fn write(&self, request: Request, forward: bool) -> Result<Written, ApiError> {
        request.command.validate().map_err(ApiError::Invalid)?;
        check_ops(&request.command).map_err(ApiError::Invalid)?;
        let written = tokio::time::timeout(COMMIT_TIMEOUT, self.raft.client_write(request.clone()))
            .await
            .map_err(|_| not_committed())?;
        match written {
            Ok(response) if response.data == Outcome::TooManyUnanswered => {
                Err(too_many_unanswered(request.session))
            }
            Ok(response) => Ok(Written {
                outcome: response.data,
                index: response.log_id.index,
            }),
            Err(RaftError::APIError(ClientWriteError::ForwardToLeader(to))) => {
                let leader = leader(to.leader_id, to.leader_node.as_ref());
                self.forward(api::WRITE, &request, leader, forward).await
            }
            Err(RaftError::Fatal(fatal)) => Err(stopped(&fatal)),
            Err(e) => Err(ApiError::Unavailable(e.to_string())),
        }
    }

    /// [`Node::read`]; `forward` as for [`Shared::write`].
    pub(crate) async fn read(&self, read: Read, forward: bool) -> Result<ReadAnswer, ApiError> {
        let confirmed = tokio::time::timeout(COMMIT_TIMEOUT, self.raft.ensure_linearizable())
            .await
            .map_err(|_| not_committed())?;
        if let Err(e) = confirmed {
            return match (e.forward_to_leader(), &e) {
                (Some(to), _) => {
                    let leader = leader(to.leader_id, to.leader_node.as_ref());
                    self.forward(api::READ, &read, leader, forward).await
                }
                (None, RaftError::Fatal(fatal)) => Err(stopped(fatal)),
                (None, _) => Err(ApiError::Unavailable(e.to_string())),
            };
        }
        // The engine's reads block (a scan page reads up to 4 MiB): on
        // tokio's blocking pool, not the threads that carry heartbeats.
        let data = self.data.clone();
        tokio::task::spawn_blocking(move || answer_read(&data, read))
            .await
            .map_err(|e| ApiError::Unavailable(e.to_string()))?
    }

    /// Sends `request` to the leader's `path`, if known and `forward`.
    async fn forward<Req: Serialize, Resp: DeserializeOwned>(
        &self,
        path: &str,
        request: &Req,
        leader: Option<Member>,
        forward: bool,
    ) -> Result<Resp, ApiError> {
        let Some(to) = leader.clone().filter(|l| forward && l.id != self.id) else {
            return Err(ApiError::NotLeader { leader });
        };
        if self.partition.blocks(to.id) {
            return Err(ApiError::Refused(format!(
                "the leader, node {}, is cut off",
                to.id
            )));
        }
        let body = encode(request).map_err(|e| ApiError::Invalid(e.to_string()))?;
        let post = self.client.post(format!("http://{}{path}", to.addr));
        let response = authorize(post, self.token.as_ref())
            .header(FROM, self.id)
            .header(api::FORWARDED, "1")
            .timeout(COMMIT_TIMEOUT + Duration::from_secs(1))
            .body(body)
            .send()
            .await
            .map_err(|e| ApiError::in_transit(&format!("forwarding to node {}", to.id), &e))?;
        let status = response.status();
        let bytes = response
            .bytes()
            .await
            .map_err(|e| ApiError::in_transit(&format!("forwarding to node {}", to.id), &e))?;
        api::decode_answer(&format!("node {}", to.id), status, &bytes)
    }

    /// Forms a cluster of `members` (id to address), this node among them.
    pub(crate) async fn init(&self, members: BTreeMap<NodeId, String>) -> Result<(), ApiError> {
        let nodes = members
            .into_iter()
            .map(|(id, addr)| (id, BasicNode { addr }))
            .collect::<BTreeMap<_, _>>();
        self.raft
            .initialize(nodes)
            .await
            .map_err(|e| ApiError::Invalid(e.to_string()))
    }

    /// Adds a learner, which receives the log but does not vote; waits
    /// until it has caught up.
    pub(crate) async fn add_learner(&self, member: Member) -> Result<(), ApiError> {
        let node = BasicNode { addr: member.addr };
        match self.raft.add_learner(member.id, node, true).await {
            Ok(_) => Ok(()),
            Err(e) => Err(membership_error(&e)),
        }
    }

    /// Makes `voters` the voting members (learners not listed stay
    /// learners).
    pub(crate) async fn change_membership(&self, voters: BTreeSet<NodeId>) -> Result<(), ApiError> {
        match self.raft.change_membership(voters, true).await {
            Ok(_) => Ok(()),
            Err(e) => Err(membership_error(&e)),
        }
    }

    /// Removes node `id` from the cluster: a voter stops voting and a
    /// learner stops receiving the log; either way the cluster forgets it.
    pub(crate) async fn remove_node(&self, id: NodeId) -> Result<(), ApiError> {
        let membership = self.raft.metrics().borrow().membership_config.clone();
        let membership = membership.membership();
        let change = if membership.voter_ids().any(|voter| voter == id) {
            ChangeMembers::RemoveVoters(BTreeSet::from([id]))
        } else if membership.get_node(&id).is_some() {
            ChangeMembers::RemoveNodes(BTreeSet::from([id]))
        } else {
            return Err(ApiError::Invalid(format!(
                "node {id} is not in the cluster"
            )));
        };
        match self.raft.change_membership(change, false).await {
            Ok(_) => Ok(()),
            Err(e) => Err(membership_error(&e)),
        }
    }

    pub(crate) fn status(&self) -> Status {
        let metrics = self.raft.metrics().borrow().clone();
        let membership = metrics.membership_config.membership();
        let voters: BTreeSet<NodeId> = membership.voter_ids().collect();
        let (mut members, mut learners) = (BTreeMap::new(), BTreeMap::new());
        for (id, node) in membership.nodes() {
            let side = if voters.contains(id) {
                &mut members
            } else {
                &mut learners
            };
            side.insert(*id, node.addr.clone());
        }
        let state = match metrics.state {
            ServerState::Leader => "Leader",
            ServerState::Follower => "Follower",
            ServerState::Candidate => "Candidate",
            ServerState::Learner => "Learner",
            ServerState::Shutdown => "Shutdown",
        };
        Status {
            id: self.id,
            state: state.into(),
            leader: metrics.current_leader,
            term: metrics.current_term,
            members,
            learners,
            last_log_index: metrics.last_log_index,
            last_applied: metrics.last_applied.map(|id| id.index),
            snapshot: metrics.snapshot.map(|id| id.index),
            purged: metrics.purged.map(|id| id.index),
            snapshot_transfers: self.snapshot_transfers.load(Ordering::Relaxed),
        }
    }
}

/// Answers `read` from `data`.
fn answer_read(data: &DataHandle, read: Read) -> Result<ReadAnswer, ApiError> {
    let listed = |entries: Vec<(Vec<u8>, Vec<u8>)>| {
        entries
            .into_iter()
            .map(|(key, value)| KeyValue { key, value })
            .collect()
    };
    match read {
        Read::Get { key } => Ok(ReadAnswer::Value(data.get(&key).map_err(ApiError::from)?)),
        Read::Scan {
            lower,
            upper,
            limit,
        } => {
            let (entries, more) = data
                .scan_page(&lower, upper.as_deref(), limit, api::MAX_PAGE_BYTES)
                .map_err(ApiError::from)?;
            Ok(ReadAnswer::Page {
                entries: listed(entries),
                more,
            })
        }
        Read::Find {
            index,
            value,
            limit,
            from,
        } => {
            let (entries, more) = data
                .find_page(&index, &value, &from, limit, api::MAX_PAGE_BYTES)
                .map_err(ApiError::from)?;
            Ok(ReadAnswer::Page {
                entries: listed(entries),
                more,
            })
        }
    }
}

/// The answer to a membership change openraft refused or failed. A change
/// made while another is uncommitted is refused, and may be asked again
/// once that one commits (the client retries it): an `add_learner` retried
/// after a timeout can return before the change it made is committed.
fn membership_error(e: &RaftError<NodeId, ClientWriteError<NodeId, BasicNode>>) -> ApiError {
    match e {
        RaftError::APIError(ClientWriteError::ForwardToLeader(to)) => ApiError::NotLeader {
            leader: leader(to.leader_id, to.leader_node.as_ref()),
        },
        RaftError::APIError(ClientWriteError::ChangeMembershipError(
            ChangeMembershipError::InProgress(e),
        )) => ApiError::Refused(e.to_string()),
        RaftError::APIError(ClientWriteError::ChangeMembershipError(e)) => {
            ApiError::Invalid(e.to_string())
        }
        e => ApiError::Unavailable(e.to_string()),
    }
}

/// The answer to a request that met Raft stopped: a node shutting down
/// may be asked again once it is back, one stopped by a failure not.
fn stopped(fatal: &Fatal<NodeId>) -> ApiError {
    match fatal {
        Fatal::Stopped => ApiError::Unavailable("the node is shutting down".into()),
        failure => ApiError::Stopped(failure.to_string()),
    }
}

/// The answer to a request its session had no room for: not applied, so
/// the client may send it again (it retries a refusal), and it will apply
/// once earlier requests of the session are answered.
fn too_many_unanswered(session: Option<Session>) -> ApiError {
    let id = session.map_or(0, |s| s.id);
    ApiError::Refused(format!(
        "session {id:x} has {MAX_OUTCOMES} requests unanswered: nothing was written; \
         retry once earlier ones are answered"
    ))
}

/// The answer to a request no quorum confirmed in time.
fn not_committed() -> ApiError {
    ApiError::Unavailable(format!(
        "no quorum confirmed it within {COMMIT_TIMEOUT:?}; a write may still take effect"
    ))
}

/// The leader a forward-to-leader error names, if it names one.
fn leader(id: Option<NodeId>, node: Option<&BasicNode>) -> Option<Member> {
    Some(Member {
        id: id?,
        addr: node?.addr.clone(),
    })
}

#[cfg(test)]
mod tests {
    use openraft::error::{EmptyMembership, InProgress};
    use openraft::{CommittedLeaderId, LogId};

    use super::*;

    fn change_error(e: ChangeMembershipError<NodeId>) -> ApiError {
        membership_error(&RaftError::APIError(
            ClientWriteError::ChangeMembershipError(e),
        ))
    }

    #[test]
    fn a_change_while_another_is_uncommitted_is_refused_and_asked_again() {
        let in_progress = InProgress {
            committed: Some(LogId::new(CommittedLeaderId::new(0, 0), 0)),
            membership_log_id: Some(LogId::new(CommittedLeaderId::new(1, 1), 22)),
        };
        let answer = change_error(in_progress.into());
        assert!(matches!(answer, ApiError::Refused(_)), "{answer:?}");
        assert!(answer.is_retryable());
        let empty = change_error(EmptyMembership {}.into());
        assert!(matches!(empty, ApiError::Invalid(_)), "{empty:?}");
        assert!(!empty.is_retryable());
    }
}
