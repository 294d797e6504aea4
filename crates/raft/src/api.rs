//! What a client and a node say to each other (MessagePack over HTTP),
//! and the node's status (JSON).

use std::collections::BTreeMap;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::command::Outcome;
use crate::types::NodeId;

/// Paths of the client API.
pub(crate) const WRITE: &str = "/api/write";
pub(crate) const READ: &str = "/api/read";
pub(crate) const INIT: &str = "/cluster/init";
pub(crate) const ADD_LEARNER: &str = "/cluster/add-learner";
pub(crate) const CHANGE_MEMBERSHIP: &str = "/cluster/change-membership";
pub(crate) const REMOVE_NODE: &str = "/cluster/remove-node";
pub(crate) const STATUS: &str = "/cluster/status";
/// Liveness: answers "ok", with no token.
pub(crate) const HEALTH: &str = "/health";

/// The header a node sets on a request it forwards to the leader: the
/// leader answers it itself, never forwarding it again.
pub(crate) const FORWARDED: &str = "x-sift-forwarded";

/// A linearizable read.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Read {
    /// The value of one key.
    Get {
        /// The key.
        #[serde(with = "serde_bytes")]
        key: Vec<u8>,
    },
    /// Up to `limit` entries from `lower` (included) to `upper` (excluded;
    /// `None`: the end), in key order.
    Scan {
        /// The first key.
        #[serde(with = "serde_bytes")]
        lower: Vec<u8>,
        /// The key after the last.
        #[serde(with = "serde_bytes")]
        upper: Option<Vec<u8>>,
        /// The most entries returned.
        limit: usize,
    },
    /// Up to `limit` entries whose value is `value` by value index
    /// `index`, with keys from `from` on, in key order.
    Find {
        /// The value index.
        index: String,
        /// The value searched for.
        #[serde(with = "serde_bytes")]
        value: Vec<u8>,
        /// The most entries returned.
        limit: usize,
        /// The least key.
        #[serde(with = "serde_bytes", default)]
        from: Vec<u8>,
    },
}

/// A key and its value.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct KeyValue {
    /// The key.
    #[serde(with = "serde_bytes")]
    pub key: Vec<u8>,
    /// The value.
    #[serde(with = "serde_bytes")]
    pub value: Vec<u8>,
}

/// The answer to a [`Read`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum ReadAnswer {
    /// The value of a [`Read::Get`] (`None`: absent).
    Value(#[serde(with = "serde_bytes")] Option<Vec<u8>>),
    /// One page of a [`Read::Scan`] or a [`Read::Find`]: entries in key
    /// order, at most [`MAX_PAGE_BYTES`] of keys and values (and at least
    /// one entry when there are any), and whether more follow the last one
    /// (ask again from just past it).
    Page {
        /// The entries.
        entries: Vec<KeyValue>,
        /// Whether entries follow the last one within the range.
        more: bool,
    },
}

/// Most bytes of keys and values in one scan or find answer: bounds what a
/// node holds for it, forwarded or not, whatever the range or the value. A
/// client reads more page by page ([`crate::Client::scan_pages`],
/// [`crate::Client::find_pages`]).
pub const MAX_PAGE_BYTES: usize = 4 << 20;

/// An acknowledged write: committed by a majority and applied.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Written {
    /// What applying it did.
    pub outcome: Outcome,
    /// Its index in the log.
    pub index: u64,
}

/// A member or learner of the cluster.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Member {
    /// Its id.
    pub id: NodeId,
    /// Its address.
    pub addr: String,
}

/// What a node knows of the cluster.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Status {
    /// The node answering.
    pub id: NodeId,
    /// Its role: "Leader", "Follower", "Candidate" or "Learner".
    pub state: String,
    /// The leader it knows of.
    pub leader: Option<NodeId>,
    /// The current term.
    pub term: u64,
    /// The voting members, by id.
    pub members: BTreeMap<NodeId, String>,
    /// The learners (non-voting), by id.
    pub learners: BTreeMap<NodeId, String>,
    /// Index of the last entry in its log.
    pub last_log_index: Option<u64>,
    /// Index of the last entry applied to its state machine.
    pub last_applied: Option<u64>,
    /// Index of the last entry in its snapshot.
    pub snapshot: Option<u64>,
    /// Index of the last entry purged from its log: a follower behind it
    /// catches up by snapshot.
    #[serde(default)]
    pub purged: Option<u64>,
    /// Snapshot transfers it began receiving since it started (a transfer
    /// the leader gave up on and began again counts again).
    #[serde(default)]
    pub snapshot_transfers: u64,
}

/// Why a request failed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
pub enum ApiError {
    /// This node is not the leader and could not forward the request: the
    /// leader it knows of, if any (retry there, or later).
    #[error("not the leader (leader: {leader:?})")]
    NotLeader {
        /// The leader's id and address, if known.
        leader: Option<Member>,
    },
    /// The request is invalid (a key or value over the limits, a bad
    /// membership).
    #[error("invalid request: {0}")]
    Invalid(String),
    /// The request could not be carried out now (no quorum in time, a
    /// network error once it was sent); it may or may not have taken
    /// effect.
    #[error("unavailable: {0}")]
    Unavailable(String),
    /// The request was turned away before anything was done with it (the
    /// node is busy, or cut off from the leader): it took no effect, and
    /// may be sent again later.
    #[error("refused: {0}")]
    Refused(String),
    /// The node has stopped serving: its Raft stopped after a failure (of
    /// its storage, or a panic). Asking it again will not help until its
    /// operator restarts it; a write it was given may or may not have taken
    /// effect. (A node shutting down answers [`ApiError::Unavailable`].)
    #[error("node stopped: {0}")]
    Stopped(String),
    /// The node refused the request's token (or its lack of one): it took
    /// no effect, and asking again with the same will not help.
    #[error("unauthorized: {0}")]
    Unauthorized(String),
    /// The node's storage failed the request: damaged data or an I/O
    /// error. Asking the same node again will not help: the client does
    /// not retry it, and the node's operator must look.
    #[error("storage failure: {0}")]
    Storage(String),
}

/// What a node's answer to a request (`status`, `bytes`) from `from`
/// means: the `Result` it sent in MessagePack, or the error an HTTP error
/// stands for ([`status_error`]).
pub(crate) fn decode_answer<T: DeserializeOwned>(
    from: &str,
    status: reqwest::StatusCode,
    bytes: &[u8],
) -> Result<T, ApiError> {
    if !status.is_success() {
        return Err(status_error(from, status, bytes));
    }
    crate::codec::decode::<Result<T, ApiError>>(bytes)
        .map_err(|e| ApiError::Unavailable(format!("{from} answered: {e}")))?
}

/// The error an HTTP error status from `from` stands for.
pub(crate) fn status_error(from: &str, status: reqwest::StatusCode, bytes: &[u8]) -> ApiError {
    use reqwest::StatusCode;
    let why = format!("{from}: {status}: {}", String::from_utf8_lossy(bytes));
    match status {
        StatusCode::UNAUTHORIZED => ApiError::Unauthorized(why),
        StatusCode::PAYLOAD_TOO_LARGE => ApiError::Invalid(why),
        // Turned away before it was served: a node busy (`limits`), or cut
        // off from the sender.
        StatusCode::SERVICE_UNAVAILABLE => ApiError::Refused(why),
        _ => ApiError::Unavailable(why),
    }
}

impl From<siftdb::Error> for ApiError {
    /// What an engine error means to a client: bad arguments are
    /// [`ApiError::Invalid`]; damage and I/O errors
    /// [`ApiError::Storage`]; the rest (a closed database, a background
    /// failure, a write stall) [`ApiError::Unavailable`].
    fn from(error: siftdb::Error) -> Self {
        match error {
            siftdb::Error::InvalidArgument(why) => Self::Invalid(why),
            siftdb::Error::Corruption { .. } | siftdb::Error::Io { .. } => {
                Self::Storage(error.to_string())
            }
            error => Self::Unavailable(error.to_string()),
        }
    }
}
