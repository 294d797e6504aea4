//! A node's HTTP server: Raft's RPCs from its peers, and the client API.
//! Bodies are MessagePack, answers a MessagePack `Result`; the status is
//! also served as JSON.

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{HeaderMap, StatusCode};
use axum::middleware;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::api::{self, Member};
use crate::auth;
use crate::codec::{decode, encode};
use crate::limits::{Gate, MAX_ADMIN_BODY, MAX_REQUEST_BYTES, admit};
use crate::network::{self, FROM};
use crate::node::Shared;
use crate::snapshot_chunk::SnapshotChunk;
use crate::types::NodeId;

/// Every route of the node: all but the health check need the node's token
/// (if it has one), and each kind of request goes through its own
/// [`Gate`].
pub(crate) fn router(node: Arc<Shared>) -> Router {
    let limits = &node.limits;
    let bytes = Gate::byte_budget(limits);
    let config = node.raft.config();
    let client = Gate::new(
        "client",
        limits.max_client_requests,
        limits.client_request_timeout,
        &bytes,
    );
    let admin = Gate::new(
        "administration",
        limits.max_admin_requests,
        limits.admin_request_timeout,
        &bytes,
    );
    // Longer than its sender waits for an append (a heartbeat) or a vote
    // (the shortest election timeout).
    let message = Duration::from_millis(config.election_timeout_max.saturating_mul(2));
    let peer = Gate::new("peer", limits.max_peer_requests, message, &bytes).waiting_for_bytes();
    let chunk = peer.with_deadline(Duration::from_millis(config.install_snapshot_timeout));

    let gated = |gate: Gate| middleware::from_fn_with_state(gate, admit);
    let clients = Router::new()
        .route(api::WRITE, post(write))
        .route(api::READ, post(read))
        .route_layer(gated(client));
    let administration = Router::new()
        .route(api::INIT, post(init))
        .route(api::ADD_LEARNER, post(add_learner))
        .route(api::CHANGE_MEMBERSHIP, post(change_membership))
        .route(api::REMOVE_NODE, post(remove_node))
        .route(api::STATUS, get(status))
        .route_layer(gated(admin))
        .layer(DefaultBodyLimit::max(MAX_ADMIN_BODY));
    let peers = Router::new()
        .route(network::APPEND, post(append))
        .route(network::VOTE, post(vote))
        .route_layer(gated(peer));
    let snapshots = Router::new()
        .route(network::SNAPSHOT, post(snapshot))
        .route_layer(gated(chunk));
    let guarded = clients
        .merge(administration)
        .merge(peers)
        .merge(snapshots)
        .route_layer(middleware::from_fn_with_state(
            node.token.clone(),
            auth::require,
        ));
    Router::new()
        .route(api::HEALTH, get(health))
        .merge(guarded)
        .layer(DefaultBodyLimit::max(MAX_REQUEST_BYTES))
        .with_state(node)
}

/// Liveness, for a load balancer or a supervisor: needs no token, and so
/// tells nothing more than that the node answers.
async fn health() -> &'static str {
    "ok"
}

/// Decodes a request, unless it comes from a node this one is cut off
/// from (then the request is dropped, as a partition would).
fn accept<T: DeserializeOwned>(
    node: &Shared,
    headers: &HeaderMap,
    body: &[u8],
) -> Result<T, Response> {
    let from = headers
        .get(FROM)
        .and_then(|v| v.to_str().ok()?.parse::<NodeId>().ok());
    if from.is_some_and(|peer| node.partition.blocks(peer)) {
        return Err((StatusCode::SERVICE_UNAVAILABLE, "cut off").into_response());
    }
    decode(body).map_err(|e| (StatusCode::BAD_REQUEST, e.to_string()).into_response())
}

/// A MessagePack answer.
fn answer<T: Serialize>(value: &T) -> Response {
    match encode(value) {
        Ok(bytes) => bytes.into_response(),
        Err(e) => (StatusCode::INTERNAL_SERVER_ERROR, e.to_string()).into_response(),
    }
}

fn forwarded(headers: &HeaderMap) -> bool {
    headers.contains_key(api::FORWARDED)
}

/// Decodes a request (see [`accept`]), carries it out with `handle` and
/// answers what that returns.
async fn serve<Req: DeserializeOwned, Resp: Serialize>(
    node: &Shared,
    headers: &HeaderMap,
    body: &[u8],
    handle: impl AsyncFnOnce(Req) -> Resp,
) -> Response {
    match accept(node, headers, body) {
        Ok(request) => answer(&handle(request).await),
        Err(refused) => refused,
    }
}

async fn append(State(node): State<Arc<Shared>>, headers: HeaderMap, body: Bytes) -> Response {
    serve(&node, &headers, &body, async |r| {
        node.raft.append_entries(r).await
    })
    .await
}

async fn vote(State(node): State<Arc<Shared>>, headers: HeaderMap, body: Bytes) -> Response {
    serve(&node, &headers, &body, async |r| node.raft.vote(r).await).await
}

async fn snapshot(State(node): State<Arc<Shared>>, headers: HeaderMap, body: Bytes) -> Response {
    serve(&node, &headers, &body, async |chunk: SnapshotChunk| {
        node.raft.install_snapshot(chunk.into()).await
    })
    .await
}

async fn write(State(node): State<Arc<Shared>>, headers: HeaderMap, body: Bytes) -> Response {
    let forward = !forwarded(&headers);
    serve(&node, &headers, &body, async |request| {
        node.write(request, forward).await
    })
    .await
}

async fn read(State(node): State<Arc<Shared>>, headers: HeaderMap, body: Bytes) -> Response {
    let forward = !forwarded(&headers);
    serve(&node, &headers, &body, async |r| {
        node.read(r, forward).await
    })
    .await
}

async fn init(State(node): State<Arc<Shared>>, headers: HeaderMap, body: Bytes) -> Response {
    serve(&node, &headers, &body, async |members| {
        node.init(members).await
    })
    .await
}

async fn add_learner(State(node): State<Arc<Shared>>, headers: HeaderMap, body: Bytes) -> Response {
    serve(&node, &headers, &body, async |m: Member| {
        node.add_learner(m).await
    })
    .await
}

async fn change_membership(
    State(node): State<Arc<Shared>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    serve(&node, &headers, &body, async |voters| {
        node.change_membership(voters).await
    })
    .await
}

async fn remove_node(State(node): State<Arc<Shared>>, headers: HeaderMap, body: Bytes) -> Response {
    serve(&node, &headers, &body, async |id| {
        node.remove_node(id).await
    })
    .await
}

/// The status as JSON (what `sift cluster status --json` prints).
async fn status(State(node): State<Arc<Shared>>) -> Response {
    match serde_json::to_vec(&node.status()) {
        Ok(json) => ([("content-type", "application/json")], json).into_response(),
        Err(e) => (StatusCode::INTERNAL_SERVER_ERROR, e.to_string()).into_response(),
    }
}
