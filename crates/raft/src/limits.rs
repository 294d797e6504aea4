//! What a node serves at once, and for how long: its connections
//! ([`crate::listener`]), the requests of each kind (clients', peers',
//! administration) and the bytes of their bodies. A request past a limit
//! is refused at once (503), one past its deadline answered 504, so that
//! nothing queues without bound and a client that stalls holds its place
//! only for a while.

use std::sync::Arc;
use std::time::Duration;

use axum::extract::{Request, State};
use axum::http::{StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use tokio::sync::Semaphore;

use crate::command::Command;

/// The most operations (writes and a transaction's checks) one command
/// carries: each is applied in one batch on every node, and decoded into
/// its own allocations (small ones cost more memory than their bytes).
pub const MAX_OPS: usize = 100_000;

/// A node's limits (`NodeOptions::limits`). The defaults suit a cluster of
/// a few nodes and up to a few hundred clients.
#[derive(Clone, Debug)]
pub struct Limits {
    /// The most connections open at once. Past it the node accepts no more
    /// until one closes: a new one waits in the kernel's queue (and is
    /// refused once that is full). Idle connections close after
    /// [`Limits::header_read_timeout`], so they give their place back.
    pub max_connections: usize,
    /// How long a connection may take to send a request's headers, and may
    /// stay idle between requests: a client that sends them byte by byte
    /// (slowloris) holds its connection no longer than this.
    pub header_read_timeout: Duration,
    /// The most client requests (writes and reads) served at once.
    pub max_client_requests: usize,
    /// How long a client request may take, the upload of its body
    /// included: a client that sends slowly or stalls holds its place only
    /// this long.
    pub client_request_timeout: Duration,
    /// The most Raft RPCs (appends, votes, snapshot chunks) served at once:
    /// a leader sends one at a time to each follower, a candidate one vote
    /// request, so a few per peer. Their deadlines come from the Raft
    /// configuration: twice the longest election timeout for an append or
    /// a vote (more than the sender waits), the snapshot install timeout
    /// for a snapshot's chunk.
    pub max_peer_requests: usize,
    /// The most administration requests (`/cluster/...`) served at once.
    pub max_admin_requests: usize,
    /// How long an administration request may take (adding a learner waits
    /// until it has caught up).
    pub admin_request_timeout: Duration,
    /// The most bytes of request bodies held at once, all kinds together;
    /// at least one largest request ([`MAX_REQUEST_BYTES`]). A client request that
    /// finds no room is refused; a peer's waits for room (within its
    /// deadline), so clients cannot starve replication.
    pub max_body_bytes_in_flight: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_connections: 512,
            header_read_timeout: Duration::from_secs(10),
            max_client_requests: 256,
            client_request_timeout: Duration::from_secs(60),
            max_peer_requests: 32,
            max_admin_requests: 16,
            admin_request_timeout: Duration::from_secs(60),
            max_body_bytes_in_flight: 256 << 20,
        }
    }
}

/// The largest request body accepted: an AppendEntries message holds up to
/// `MAX_APPEND_BYTES` of entries and one more (a command of up to
/// `MAX_COMMAND_BYTES`), with room for their framing. Larger requests are
/// answered 413 (which a leader takes as "send fewer entries").
pub const MAX_REQUEST_BYTES: usize =
    crate::command::MAX_COMMAND_BYTES + crate::log_store::MAX_APPEND_BYTES + (8 << 20);

/// The largest body of an administration request (a membership: ids and
/// addresses).
pub(crate) const MAX_ADMIN_BODY: usize = 1 << 20;

/// Body bytes are counted in KiB: a semaphore takes at most `u32` permits
/// at once.
const UNIT: usize = 1024;

impl Limits {
    /// Whether they can serve anything: why not, if not.
    pub(crate) fn validate(&self) -> Result<(), String> {
        let counts = [
            ("max_connections", self.max_connections),
            ("max_client_requests", self.max_client_requests),
            ("max_peer_requests", self.max_peer_requests),
            ("max_admin_requests", self.max_admin_requests),
        ];
        if let Some((name, _)) = counts.iter().find(|(_, n)| *n == 0) {
            return Err(format!("{name} must be at least 1"));
        }
        let times = [
            ("header_read_timeout", self.header_read_timeout),
            ("client_request_timeout", self.client_request_timeout),
            ("admin_request_timeout", self.admin_request_timeout),
        ];
        if let Some((name, _)) = times.iter().find(|(_, t)| t.is_zero()) {
            return Err(format!("{name} must be longer than zero"));
        }
        if self.max_body_bytes_in_flight < MAX_REQUEST_BYTES {
            return Err(format!(
                "max_body_bytes_in_flight ({}) must hold one largest request ({MAX_REQUEST_BYTES} bytes)",
                self.max_body_bytes_in_flight
            ));
        }
        if self.max_body_bytes_in_flight / UNIT > Semaphore::MAX_PERMITS {
            return Err("max_body_bytes_in_flight is too large".into());
        }
        Ok(())
    }
}

/// Whether `command` is within [`MAX_OPS`]: why not, if not. Checked as a
/// request arrives, not as an entry applies, so that entries already in a
/// log apply as they always did.
pub(crate) fn check_ops(command: &Command) -> Result<(), String> {
    let ops = match command {
        Command::Write(ops) => ops.len(),
        Command::Txn { checks, ops } => checks.len() + ops.len(),
        Command::DefineIndex { .. } | Command::DropIndex { .. } => 0,
    };
    if ops > MAX_OPS {
        return Err(format!(
            "a command of {ops} operations is over the limit of {MAX_OPS}: split it"
        ));
    }
    Ok(())
}

/// One kind of request: at most so many served at once, each within a
/// deadline, its body's bytes counted against the node's.
#[derive(Clone, Debug)]
pub(crate) struct Gate {
    kind: &'static str,
    permits: Arc<Semaphore>,
    deadline: Duration,
    bytes: Arc<Semaphore>,
    /// Whether a request waits for body bytes (within its deadline) rather
    /// than being refused.
    waits_for_bytes: bool,
}

impl Gate {
    /// Bytes of bodies in flight, shared by every gate of a node.
    pub(crate) fn byte_budget(limits: &Limits) -> Arc<Semaphore> {
        Arc::new(Semaphore::new(limits.max_body_bytes_in_flight / UNIT))
    }

    /// A gate for `kind` requests.
    pub(crate) fn new(
        kind: &'static str,
        permits: usize,
        deadline: Duration,
        bytes: &Arc<Semaphore>,
    ) -> Self {
        Self {
            kind,
            permits: Arc::new(Semaphore::new(permits)),
            deadline,
            bytes: Arc::clone(bytes),
            waits_for_bytes: false,
        }
    }

    /// This gate for requests that wait for body bytes.
    #[must_use]
    pub(crate) fn waiting_for_bytes(mut self) -> Self {
        self.waits_for_bytes = true;
        self
    }

    /// The same permits, with `deadline`.
    #[must_use]
    pub(crate) fn with_deadline(&self, deadline: Duration) -> Self {
        Self {
            deadline,
            ..self.clone()
        }
    }
}

/// Serves a request if its gate has a permit free, and room for its body
/// (as long as it says, or the largest if it does not say), within the
/// deadline; otherwise 503 (nothing was done: the sender may try again
/// later), or past the deadline 504 (a write cut short may still take
/// effect, as after any timeout).
pub(crate) async fn admit(State(gate): State<Gate>, request: Request, next: Next) -> Response {
    let Ok(_permit) = gate.permits.try_acquire() else {
        return busy(&format!("too many {} requests at once", gate.kind));
    };
    let declared = request
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok()?.parse::<usize>().ok());
    let units = declared
        .unwrap_or(MAX_REQUEST_BYTES)
        .min(MAX_REQUEST_BYTES)
        .div_ceil(UNIT) as u32;
    let served = async {
        let bytes = if gate.waits_for_bytes {
            gate.bytes.acquire_many(units).await.ok()
        } else {
            gate.bytes.try_acquire_many(units).ok()
        };
        match bytes {
            Some(_bytes) => next.run(request).await,
            None => busy("too many request bytes at once"),
        }
    };
    match tokio::time::timeout(gate.deadline, served).await {
        Ok(response) => response,
        Err(_) => (
            StatusCode::GATEWAY_TIMEOUT,
            format!("the request took longer than {:?}", gate.deadline),
        )
            .into_response(),
    }
}

/// The answer to a request refused for want of room.
fn busy(why: &str) -> Response {
    (
        StatusCode::SERVICE_UNAVAILABLE,
        format!("the node is busy: {why}"),
    )
        .into_response()
}
