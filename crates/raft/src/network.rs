//! The client side of Raft's RPCs: openraft's messages to another node,
//! POSTed over HTTP as MessagePack ([`crate::server`] answers them).

use std::collections::BTreeSet;
use std::sync::{Arc, PoisonError, RwLock};

use openraft::BasicNode;
use openraft::error::{
    InstallSnapshotError, NetworkError, PayloadTooLarge, RPCError, RaftError, RemoteError,
    Unreachable,
};
use openraft::network::{RPCOption, RaftNetwork, RaftNetworkFactory};
use openraft::raft::{
    AppendEntriesRequest, AppendEntriesResponse, InstallSnapshotRequest, InstallSnapshotResponse,
    VoteRequest, VoteResponse,
};
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::auth::{Token, authorize};
use crate::codec::{decode, encode};
use crate::snapshot_chunk::SnapshotChunk;
use crate::types::{NodeId, TypeConfig};

/// Paths of the Raft RPCs.
pub(crate) const APPEND: &str = "/raft/append";
pub(crate) const VOTE: &str = "/raft/vote";
pub(crate) const SNAPSHOT: &str = "/raft/snapshot";

/// Nodes this node sends nothing to, nor accepts anything from: a network
/// partition, made on purpose by tests.
#[derive(Clone, Debug, Default)]
pub struct Partition(Arc<RwLock<BTreeSet<NodeId>>>);

impl Partition {
    /// Cuts this node off from `peers` (and reconnects every other one).
    pub fn cut_off(&self, peers: impl IntoIterator<Item = NodeId>) {
        *self.0.write().unwrap_or_else(PoisonError::into_inner) = peers.into_iter().collect();
    }

    /// Whether `peer` is cut off.
    pub fn blocks(&self, peer: NodeId) -> bool {
        self.0
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .contains(&peer)
    }
}

/// Connections to the other nodes, sharing one HTTP client.
#[derive(Clone, Debug)]
pub(crate) struct Network {
    pub(crate) client: reqwest::Client,
    pub(crate) partition: Partition,
    /// This node, named in the requests so a partition can drop them.
    pub(crate) from: NodeId,
    /// The cluster's token, sent with every request.
    pub(crate) token: Option<Token>,
}

impl RaftNetworkFactory<TypeConfig> for Network {
    type Network = Connection;

    async fn new_client(&mut self, target: NodeId, node: &BasicNode) -> Connection {
        Connection {
            network: self.clone(),
            target,
            addr: node.addr.clone(),
        }
    }
}

/// The connection to one node.
#[derive(Debug)]
pub(crate) struct Connection {
    network: Network,
    target: NodeId,
    addr: String,
}

/// The header naming the sending node.
pub(crate) const FROM: &str = "x-sift-from";

impl Connection {
    async fn send<Req, Resp, E>(
        &self,
        path: &str,
        request: &Req,
        option: &RPCOption,
    ) -> Result<Resp, RPCError<NodeId, BasicNode, RaftError<NodeId, E>>>
    where
        Req: Serialize,
        Resp: DeserializeOwned,
        E: std::error::Error + DeserializeOwned,
    {
        if self.network.partition.blocks(self.target) {
            let cut = std::io::Error::other(format!("node {} is cut off", self.target));
            return Err(RPCError::Unreachable(Unreachable::new(&cut)));
        }
        let body = encode(request).map_err(|e| RPCError::Network(NetworkError::new(&e)))?;
        let post = self
            .network
            .client
            .post(format!("http://{}{path}", self.addr));
        let sent = authorize(post, self.network.token.as_ref())
            .header(FROM, self.network.from)
            .timeout(option.hard_ttl())
            .body(body)
            .send()
            .await;
        let response = sent.map_err(|e| {
            // Refused: the node is down; openraft backs off before retrying.
            if e.is_connect() {
                RPCError::Unreachable(Unreachable::new(&e))
            } else {
                RPCError::Network(NetworkError::new(&e))
            }
        })?;
        let status = response.status();
        let bytes = response
            .bytes()
            .await
            .map_err(|e| RPCError::Network(NetworkError::new(&e)))?;
        if status == reqwest::StatusCode::PAYLOAD_TOO_LARGE {
            // `append_entries` works out how many entries to try next.
            return Err(RPCError::PayloadTooLarge(
                PayloadTooLarge::new_entries_hint(1),
            ));
        }
        if !status.is_success() {
            let refused =
                std::io::Error::other(format!("{status}: {}", String::from_utf8_lossy(&bytes)));
            return Err(RPCError::Unreachable(Unreachable::new(&refused)));
        }
        let answer: Result<Resp, RaftError<NodeId, E>> =
            decode(&bytes).map_err(|e| RPCError::Network(NetworkError::new(&e)))?;
        answer.map_err(|e| RPCError::RemoteError(RemoteError::new(self.target, e)))
    }
}

impl RaftNetwork<TypeConfig> for Connection {
    async fn append_entries(
        &mut self,
        request: AppendEntriesRequest<TypeConfig>,
        option: RPCOption,
    ) -> Result<AppendEntriesResponse<NodeId>, RPCError<NodeId, BasicNode, RaftError<NodeId>>> {
        let entries = request.entries.len() as u64;
        match self.send(APPEND, &request, &option).await {
            // openraft sends fewer entries at once for a while.
            Err(RPCError::PayloadTooLarge(_)) if entries > 1 => Err(RPCError::PayloadTooLarge(
                PayloadTooLarge::new_entries_hint(entries / 2),
            )),
            // One entry the peer refuses: a peer with a smaller body limit.
            // Backing off is all there is to do.
            Err(RPCError::PayloadTooLarge(_)) => {
                let refused = std::io::Error::other(format!(
                    "node {} refuses one entry as too large",
                    self.target
                ));
                Err(RPCError::Unreachable(Unreachable::new(&refused)))
            }
            answer => answer,
        }
    }

    async fn install_snapshot(
        &mut self,
        request: InstallSnapshotRequest<TypeConfig>,
        option: RPCOption,
    ) -> Result<
        InstallSnapshotResponse<NodeId>,
        RPCError<NodeId, BasicNode, RaftError<NodeId, InstallSnapshotError>>,
    > {
        self.send(SNAPSHOT, &SnapshotChunk::from(request), &option)
            .await
    }

    async fn vote(
        &mut self,
        request: VoteRequest<NodeId>,
        option: RPCOption,
    ) -> Result<VoteResponse<NodeId>, RPCError<NodeId, BasicNode, RaftError<NodeId>>> {
        self.send(VOTE, &request, &option).await
    }
}

#[cfg(test)]
mod tests {
    use openraft::{CommittedLeaderId, Entry, EntryPayload, LogId, Vote};

    use super::*;

    /// A peer that answers every AppendEntries with 413, and a connection
    /// to it.
    async fn refusing_peer() -> Connection {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        let router = axum::Router::new().route(
            APPEND,
            axum::routing::post(async || reqwest::StatusCode::PAYLOAD_TOO_LARGE),
        );
        tokio::spawn(async move { axum::serve(listener, router).await });
        let network = Network {
            client: reqwest::Client::new(),
            partition: Partition::default(),
            from: 1,
            token: None,
        };
        Connection {
            network,
            target: 2,
            addr,
        }
    }

    fn append(entries: u64) -> AppendEntriesRequest<TypeConfig> {
        let entry = |index| Entry {
            log_id: LogId::new(CommittedLeaderId::new(1, 1), index),
            payload: EntryPayload::Blank,
        };
        AppendEntriesRequest {
            vote: Vote::new_committed(1, 1),
            prev_log_id: None,
            leader_commit: None,
            entries: (1..=entries).map(entry).collect(),
        }
    }

    #[tokio::test]
    async fn a_413_asks_the_leader_for_half_the_entries_then_backs_off() {
        let mut peer = refusing_peer().await;
        let option = RPCOption::new(std::time::Duration::from_secs(5));
        match peer.append_entries(append(8), option.clone()).await {
            Err(RPCError::PayloadTooLarge(too_large)) => {
                assert_eq!(too_large.entries_hint(), 4);
            }
            other => panic!("expected PayloadTooLarge, got {other:?}"),
        }
        // One entry cannot be split: the leader backs off instead.
        let one = peer.append_entries(append(1), option).await;
        assert!(matches!(one, Err(RPCError::Unreachable(_))), "{one:?}");
    }
}
