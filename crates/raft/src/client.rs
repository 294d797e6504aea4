//! [`Client`]: talks to any node of a cluster over HTTP; the node forwards
//! writes and reads to the leader. Retries while the cluster has no leader
//! (an election), up to a deadline.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::api::{self, ApiError, KeyValue, Member, Read, ReadAnswer, Status, Written};
use crate::codec::{decode, encode};
use crate::command::{Command, Op};
use crate::types::NodeId;

/// How long a request is retried by default: past an election.
const RETRY_FOR: Duration = Duration::from_secs(10);

/// How long one attempt waits for its answer: past the node's own
/// timeout for a commit, and a forward.
const ATTEMPT_TIMEOUT: Duration = Duration::from_secs(12);

/// Pause between retries.
const RETRY_PAUSE: Duration = Duration::from_millis(50);

/// A client of one node (`host:port`).
#[derive(Clone, Debug)]
pub struct Client {
    http: reqwest::Client,
    addr: String,
    retry_for: Duration,
}

impl Client {
    /// A client of the node at `addr`.
    pub fn new(addr: impl Into<String>) -> Self {
        Self {
            http: reqwest::Client::new(),
            addr: addr.into(),
            retry_for: RETRY_FOR,
        }
    }

    /// Retries for `period` at most (zero: never).
    #[must_use]
    pub fn retry_for(mut self, period: Duration) -> Self {
        self.retry_for = period;
        self
    }

    /// Sends `request` to `path` once, at `addr`.
    async fn send<Req: Serialize, Resp: DeserializeOwned>(
        &self,
        addr: &str,
        path: &str,
        request: &Req,
    ) -> Result<Resp, ApiError> {
        let body = encode(request).map_err(|e| ApiError::Invalid(e.to_string()))?;
        let unavailable = |e: reqwest::Error| ApiError::Unavailable(format!("{addr}: {e}"));
        let response = self
            .http
            .post(format!("http://{addr}{path}"))
            .timeout(ATTEMPT_TIMEOUT)
            .body(body)
            .send()
            .await
            .map_err(unavailable)?;
        let status = response.status();
        let bytes = response.bytes().await.map_err(unavailable)?;
        if !status.is_success() {
            return Err(ApiError::Unavailable(format!(
                "{addr}: {status}: {}",
                String::from_utf8_lossy(&bytes)
            )));
        }
        decode::<Result<Resp, ApiError>>(&bytes)
            .map_err(|e| ApiError::Unavailable(format!("{addr} answered: {e}")))?
    }

    /// Sends `request`, going to the leader a node names and retrying while
    /// there is none or a node is unreachable, until the deadline.
    async fn call<Req: Serialize, Resp: DeserializeOwned>(
        &self,
        path: &str,
        request: &Req,
    ) -> Result<Resp, ApiError> {
        let deadline = Instant::now() + self.retry_for;
        let mut addr = self.addr.clone();
        loop {
            let error = match self.send(&addr, path, request).await {
                Ok(answer) => return Ok(answer),
                Err(ApiError::NotLeader {
                    leader: Some(leader),
                }) if leader.addr != addr => {
                    addr = leader.addr;
                    continue;
                }
                Err(error @ ApiError::Invalid(_)) => return Err(error),
                Err(error) => error,
            };
            if Instant::now() >= deadline {
                return Err(error);
            }
            // The first node may know a newer leader by now.
            addr.clone_from(&self.addr);
            tokio::time::sleep(RETRY_PAUSE).await;
        }
    }

    /// Applies `command` through the leader; returns once it is committed
    /// and applied. A retried write may apply twice (puts and deletes are
    /// idempotent; a transaction then meets its own write as a conflict).
    ///
    /// # Errors
    /// See [`ApiError`].
    pub async fn write(&self, command: &Command) -> Result<Written, ApiError> {
        self.call(api::WRITE, command).await
    }

    /// Sets `key` to `value`.
    ///
    /// # Errors
    /// See [`ApiError`].
    pub async fn put(&self, key: &[u8], value: &[u8]) -> Result<Written, ApiError> {
        let op = Op::Put {
            key: key.to_vec(),
            value: value.to_vec(),
        };
        self.write(&Command::Write(vec![op])).await
    }

    /// Removes `key`.
    ///
    /// # Errors
    /// See [`ApiError`].
    pub async fn delete(&self, key: &[u8]) -> Result<Written, ApiError> {
        self.write(&Command::Write(vec![Op::Delete { key: key.to_vec() }]))
            .await
    }

    /// The value of `key`, read linearizably.
    ///
    /// # Errors
    /// See [`ApiError`].
    pub async fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>, ApiError> {
        match self
            .call(api::READ, &Read::Get { key: key.to_vec() })
            .await?
        {
            ReadAnswer::Value(value) => Ok(value),
            ReadAnswer::Entries(_) => Err(ApiError::Unavailable("a scan answered a get".into())),
        }
    }

    /// Up to `limit` entries in `[lower, upper)`, read linearizably.
    ///
    /// # Errors
    /// See [`ApiError`].
    pub async fn scan(
        &self,
        lower: &[u8],
        upper: Option<&[u8]>,
        limit: usize,
    ) -> Result<Vec<KeyValue>, ApiError> {
        let read = Read::Scan {
            lower: lower.to_vec(),
            upper: upper.map(<[u8]>::to_vec),
            limit,
        };
        self.entries(&read).await
    }

    /// Up to `limit` entries whose value is `value` by value index
    /// `index`, read linearizably, in key order.
    ///
    /// # Errors
    /// [`ApiError::Invalid`] if there is no such index; see [`ApiError`].
    pub async fn find(
        &self,
        index: &str,
        value: &[u8],
        limit: usize,
    ) -> Result<Vec<KeyValue>, ApiError> {
        let read = Read::Find {
            index: index.to_string(),
            value: value.to_vec(),
            limit,
        };
        self.entries(&read).await
    }

    /// The entries `read` (a scan or a find) answers.
    async fn entries(&self, read: &Read) -> Result<Vec<KeyValue>, ApiError> {
        match self.call(api::READ, read).await? {
            ReadAnswer::Entries(entries) => Ok(entries),
            ReadAnswer::Value(_) => Err(ApiError::Unavailable("a get answered a listing".into())),
        }
    }

    /// What the node knows of the cluster (not retried).
    ///
    /// # Errors
    /// [`ApiError::Unavailable`] if the node cannot be reached.
    pub async fn status(&self) -> Result<Status, ApiError> {
        let unavailable = |e: reqwest::Error| ApiError::Unavailable(format!("{}: {e}", self.addr));
        let response = self
            .http
            .get(format!("http://{}{}", self.addr, api::STATUS))
            .timeout(ATTEMPT_TIMEOUT)
            .send()
            .await
            .map_err(unavailable)?;
        let bytes = response.bytes().await.map_err(unavailable)?;
        serde_json::from_slice(&bytes).map_err(|e| ApiError::Unavailable(e.to_string()))
    }

    /// Forms a cluster of `members` (id to address) at this node, which
    /// must be one of them.
    ///
    /// # Errors
    /// [`ApiError::Invalid`] if the node is already part of a cluster.
    pub async fn init(&self, members: &BTreeMap<NodeId, String>) -> Result<(), ApiError> {
        self.send(&self.addr, api::INIT, members).await
    }

    /// Adds node `id` at `addr` as a learner; returns once it caught up.
    ///
    /// # Errors
    /// See [`ApiError`].
    pub async fn add_learner(&self, id: NodeId, addr: &str) -> Result<(), ApiError> {
        let member = Member {
            id,
            addr: addr.to_string(),
        };
        self.call(api::ADD_LEARNER, &member).await
    }

    /// Makes `voters` (members or learners) the voting members.
    ///
    /// # Errors
    /// See [`ApiError`].
    pub async fn change_membership(&self, voters: &BTreeSet<NodeId>) -> Result<(), ApiError> {
        self.call(api::CHANGE_MEMBERSHIP, voters).await
    }
}
