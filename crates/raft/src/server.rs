//! A node's HTTP server: Raft's RPCs from its peers, and the client API.
//! Bodies are MessagePack, answers a MessagePack `Result`; the status is
//! also served as JSON.

use std::sync::Arc;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, Request, State};
use axum::http::{HeaderMap, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::api::{self, ApiError, Member};
use crate::codec::{decode, encode};
use crate::network::{self, FROM};
use crate::node::Shared;
use crate::snapshot_chunk::SnapshotChunk;
use crate::types::NodeId;

/// The largest request accepted: an AppendEntries message holds up to
/// `MAX_APPEND_BYTES` of entries and one more (a command of up to
/// `MAX_COMMAND_BYTES`), with room for their framing. Larger requests are
/// answered 413 (which a leader takes as "send fewer entries").
const MAX_BODY: usize =
    crate::command::MAX_COMMAND_BYTES + crate::log_store::MAX_APPEND_BYTES + (8 << 20);

/// Every route of the node.
pub(crate) fn router(node: Arc<Shared>) -> Router {
    // Writes and reads take a permit and have a deadline; Raft's RPCs come
    // from a few peers, which time them out themselves.
    let client = Router::new()
        .route(api::WRITE, post(write))
        .route(api::READ, post(read))
        .route_layer(middleware::from_fn_with_state(Arc::clone(&node), admit));
    Router::new()
        .route(network::APPEND, post(append))
        .route(network::VOTE, post(vote))
        .route(network::SNAPSHOT, post(snapshot))
        .route(api::INIT, post(init))
        .route(api::ADD_LEARNER, post(add_learner))
        .route(api::CHANGE_MEMBERSHIP, post(change_membership))
        .route(api::REMOVE_NODE, post(remove_node))
        .route(api::STATUS, get(status))
        .merge(client)
        .layer(DefaultBodyLimit::max(MAX_BODY))
        .with_state(node)
}

/// Serves a client request if a permit is free, within the deadline;
/// otherwise answers [`ApiError::Refused`] (the client backs off and
/// retries), or past the deadline [`ApiError::Unavailable`] (a write cut
/// short may still take effect, as after any timeout).
async fn admit(State(node): State<Arc<Shared>>, request: Request, next: Next) -> Response {
    let Ok(_permit) = node.client_requests.try_acquire() else {
        let busy = ApiError::Refused("the node is busy: too many requests at once".into());
        return answer(&Err::<(), _>(busy));
    };
    let deadline = node.client_request_timeout;
    match tokio::time::timeout(deadline, next.run(request)).await {
        Ok(response) => response,
        Err(_) => answer(&Err::<(), _>(ApiError::Unavailable(format!(
            "the request took longer than {deadline:?}"
        )))),
    }
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
