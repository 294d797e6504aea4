//! [`Client`]: talks to any node of a cluster over HTTP; the node forwards
//! writes and reads to the leader. Retries while the cluster has no leader
//! (an election), up to a deadline.

use std::collections::hash_map::RandomState;
use std::collections::{BTreeMap, BTreeSet};
use std::hash::{BuildHasher, Hash, Hasher};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant, SystemTime};

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::api::{self, ApiError, KeyValue, Member, Read, ReadAnswer, Status, Written};
use crate::auth::{self, Token};
use crate::codec::encode;
use crate::command::{Command, Op, Outcome, Request, Session};
use crate::errors::{ReadError, WriteError};
use crate::types::NodeId;

/// How long a request is retried by default: [`Client::DEFAULT_RETRY_FOR`].
const RETRY_FOR: Duration = Duration::from_secs(30);

/// How long one attempt waits for its answer: past the node's own
/// timeout for a commit, and a forward.
const ATTEMPT_TIMEOUT: Duration = Duration::from_secs(12);

/// Pause between retries.
const RETRY_PAUSE: Duration = Duration::from_millis(50);

/// How many new sessions one write may open: each after the cluster
/// answered that it does not know the session (expired, or never opened),
/// and only while no attempt may have been applied. More than one is
/// needed only when concurrent writes of the new session are refused too.
const MAX_RENEWALS: usize = 3;

/// A client of a cluster, through one node (`host:port`) or several it
/// tries in turn. Its writes carry a session, so a retried write is applied
/// once and answers what the first attempt did (clones share the session,
/// and may write concurrently).
#[derive(Clone, Debug)]
pub struct Client {
    http: reqwest::Client,
    /// The first seed: administration goes to it alone.
    addr: String,
    /// Every node a request may start at; a retry starts at the next.
    seeds: Vec<String>,
    retry_for: Duration,
    /// The cluster's token, sent with every request.
    token: Option<Token>,
    session: Arc<ClientSession>,
}

/// A scan or a find read page by page: [`Client::scan_pages`],
/// [`Client::find_pages`].
#[derive(Debug)]
pub struct Pages<'a> {
    client: &'a Client,
    /// The read of the next page (a scan or a find): its first key and its
    /// limit move on with each page; `None` once it ended.
    read: Option<Read>,
}

impl Pages<'_> {
    /// The next page, or `None` after the last.
    ///
    /// # Errors
    /// See [`ReadError`].
    pub async fn next_page(&mut self) -> Result<Option<Vec<KeyValue>>, ReadError> {
        let Some(read) = &mut self.read else {
            return Ok(None);
        };
        let ReadAnswer::Page { entries, more } = self.client.read(read).await? else {
            return Err(ReadError::Failed(
                "a scan or find was answered otherwise".into(),
            ));
        };
        let Some((first, limit)) = cursor(read) else {
            self.read = None;
            return Ok(None);
        };
        *limit = limit.saturating_sub(entries.len());
        match entries.last() {
            Some(last) if more && *limit > 0 => {
                // The least key after the last one.
                first.clone_from(&last.key);
                first.push(0);
            }
            _ => self.read = None,
        }
        Ok((!entries.is_empty()).then_some(entries))
    }

    /// Every remaining entry, all held in memory.
    async fn collect(mut self) -> Result<Vec<KeyValue>, ReadError> {
        let mut entries = Vec::new();
        while let Some(page) = self.next_page().await? {
            entries.extend(page);
        }
        Ok(entries)
    }
}

/// The last answer of a request the client gave up on, and whether any of
/// its attempts may have taken effect.
struct GaveUp {
    last: ApiError,
    maybe_applied: bool,
}

/// The answer to a request, and whether an attempt before the one answered
/// may have taken effect.
struct Answered<T> {
    answer: T,
    maybe_applied: bool,
}

/// The first key and the limit of a read that pages: a scan or a find.
fn cursor(read: &mut Read) -> Option<(&mut Vec<u8>, &mut usize)> {
    match read {
        Read::Scan { lower, limit, .. } => Some((lower, limit)),
        Read::Find { from, limit, .. } => Some((from, limit)),
        Read::Get { .. } => None,
    }
}

/// A client's session: its id and the numbers of its requests, replaced
/// by a new one when the cluster does not know it.
#[derive(Debug)]
struct ClientSession {
    numbers: Mutex<Numbers>,
}

#[derive(Debug)]
struct Numbers {
    id: u64,
    next: u64,
    /// Requests sent and not answered (nor given up on).
    unanswered: BTreeSet<u64>,
}

impl Numbers {
    /// A session with a random id, numbered from 1: 64 bits make two
    /// clients that pick the same one unlikely enough (1 in 10^7 among a
    /// million sessions).
    fn new() -> Self {
        let mut hasher = RandomState::new().build_hasher();
        SystemTime::now().hash(&mut hasher);
        std::process::id().hash(&mut hasher);
        Self {
            id: hasher.finish(),
            next: 1,
            unanswered: BTreeSet::new(),
        }
    }
}

impl ClientSession {
    fn new() -> Self {
        Self {
            numbers: Mutex::new(Numbers::new()),
        }
    }

    fn numbers(&self) -> std::sync::MutexGuard<'_, Numbers> {
        self.numbers.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Numbers a new request.
    fn begin(&self) -> Session {
        let mut numbers = self.numbers();
        let seq = numbers.next;
        numbers.next += 1;
        numbers.unanswered.insert(seq);
        Session {
            id: numbers.id,
            seq,
            first_unanswered: numbers.unanswered.first().copied().unwrap_or(seq),
        }
    }

    /// Request `session` was answered, or given up on. A request of a
    /// session since replaced counts for nothing: its numbers are not the
    /// new session's.
    fn end(&self, session: Session) {
        let mut numbers = self.numbers();
        if numbers.id == session.id {
            numbers.unanswered.remove(&session.seq);
        }
    }

    /// The cluster does not know session `expired`: replaces it with a new
    /// one, unless a concurrent request did already.
    fn renew(&self, expired: u64) {
        let mut numbers = self.numbers();
        if numbers.id == expired {
            *numbers = Numbers::new();
        }
    }
}

impl Client {
    /// How long a request is retried by default: past a failover (with the
    /// node's default timeouts, 2.4-3.9 s measured on 2 loaded cores;
    /// `tests/failover.rs`) several times over, and a leader's own timeout
    /// for a commit (5 s).
    pub const DEFAULT_RETRY_FOR: Duration = RETRY_FOR;

    /// A client of the node at `addr`.
    pub fn new(addr: impl Into<String>) -> Self {
        let addr = addr.into();
        Self {
            http: reqwest::Client::new(),
            seeds: vec![addr.clone()],
            addr,
            retry_for: RETRY_FOR,
            token: None,
            session: Arc::new(ClientSession::new()),
        }
    }

    /// A client of the cluster whose nodes include `addrs`: a request that
    /// one cannot answer (it is down, or has no leader) is retried at the
    /// next, in turn. `None` if `addrs` is empty.
    pub fn of_cluster<S: Into<String>>(addrs: impl IntoIterator<Item = S>) -> Option<Self> {
        let seeds: Vec<String> = addrs.into_iter().map(Into::into).collect();
        let mut client = Self::new(seeds.first()?.clone());
        client.seeds = seeds;
        Some(client)
    }

    /// Retries for `period` at most (zero: never).
    #[must_use]
    pub fn retry_for(mut self, period: Duration) -> Self {
        self.retry_for = period;
        self
    }

    /// Sends `token` with every request: the cluster's nodes were started
    /// with it (`sift serve --token-file`), and refuse requests without it
    /// ([`WriteError::Unauthorized`], [`ReadError::Unauthorized`],
    /// [`ApiError::Unauthorized`]; not retried).
    #[must_use]
    pub fn with_token(mut self, token: Token) -> Self {
        self.token = Some(token);
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
        let lost = |e: reqwest::Error| ApiError::in_transit(addr, &e);
        let post = self.http.post(format!("http://{addr}{path}"));
        let response = auth::authorize(post, self.token.as_ref())
            .timeout(ATTEMPT_TIMEOUT)
            .body(body)
            .send()
            .await
            .map_err(lost)?;
        let status = response.status();
        let bytes = response.bytes().await.map_err(lost)?;
        api::decode_answer(addr, status, &bytes)
    }

    /// Sends `request`, going to the leader a node names and retrying while
    /// a retry can succeed ([`ApiError::is_retryable`]), for the client's
    /// retry period.
    async fn call<Req: Serialize, Resp: DeserializeOwned>(
        &self,
        path: &str,
        request: &Req,
    ) -> Result<Resp, GaveUp> {
        let deadline = Instant::now() + self.retry_for;
        let answered = self.call_until(path, request, deadline).await?;
        Ok(answered.answer)
    }

    /// [`Client::call`] until `deadline` (one attempt at least), telling
    /// whether an attempt before the one answered may have taken effect.
    async fn call_until<Req: Serialize, Resp: DeserializeOwned>(
        &self,
        path: &str,
        request: &Req,
        deadline: Instant,
    ) -> Result<Answered<Resp>, GaveUp> {
        let mut attempts = 0;
        let mut addr = self.addr.clone();
        let mut maybe_applied = false;
        loop {
            let error = match self.send(&addr, path, request).await {
                Ok(answer) => {
                    return Ok(Answered {
                        answer,
                        maybe_applied,
                    });
                }
                Err(ApiError::NotLeader {
                    leader: Some(leader),
                }) if leader.addr != addr => {
                    addr = leader.addr;
                    continue;
                }
                Err(error) => error,
            };
            maybe_applied |= error.may_have_applied();
            if !error.is_retryable() || Instant::now() >= deadline {
                return Err(GaveUp {
                    last: error,
                    maybe_applied,
                });
            }
            // The next seed: it may be up, or know a newer leader by now.
            attempts += 1;
            addr.clone_from(&self.seeds[attempts % self.seeds.len()]);
            tokio::time::sleep(RETRY_PAUSE).await;
        }
    }

    /// Applies `command` through the leader; returns once it is committed
    /// and applied. Every attempt carries the same request number of this
    /// client's session, so the command is applied at most once, and a
    /// retry answers what the first attempt did.
    ///
    /// If the cluster does not know the session (it expired, or its first
    /// requests were all refused) and no attempt may have been applied,
    /// the write is sent again as the first request of a new session.
    ///
    /// # Errors
    /// See [`WriteError`]; [`WriteError::Unknown`] also when the session
    /// expired ([`Outcome::SessionExpired`]) after an attempt that may have
    /// been applied.
    pub async fn write(&self, command: &Command) -> Result<Written, WriteError> {
        let deadline = Instant::now() + self.retry_for;
        for _ in 0..=MAX_RENEWALS {
            if let Some(written) = self.write_in_session(command, deadline).await? {
                return Ok(written);
            }
        }
        Err(WriteError::NotApplied(format!(
            "the cluster knew none of the {} sessions this write was sent in",
            MAX_RENEWALS + 1
        )))
    }

    /// [`Client::write`] as the next request of the current session;
    /// `None` if the cluster did not know the session and the write was
    /// provably not applied (the session is then renewed).
    async fn write_in_session(
        &self,
        command: &Command,
        deadline: Instant,
    ) -> Result<Option<Written>, WriteError> {
        let session = self.session.begin();
        let request = Request {
            session: Some(session),
            command: command.clone(),
        };
        let answered: Result<Answered<Written>, _> =
            self.call_until(api::WRITE, &request, deadline).await;
        self.session.end(session);
        let answered = answered.map_err(|g| g.last.into_write_error(g.maybe_applied))?;
        if answered.answer.outcome != Outcome::SessionExpired {
            return Ok(Some(answered.answer));
        }
        if answered.maybe_applied {
            return Err(WriteError::Unknown(format!(
                "session {:x} expired: whether the write was applied cannot be told",
                session.id
            )));
        }
        // The attempt answered wrote nothing, and no earlier one reached
        // the log: the write can go again, as the first of a new session.
        self.session.renew(session.id);
        Ok(None)
    }

    /// Sends `read` to the leader, retrying as [`Client::call`] does.
    async fn read(&self, read: &Read) -> Result<ReadAnswer, ReadError> {
        self.call(api::READ, read)
            .await
            .map_err(|g| ReadError::from(g.last))
    }

    /// [`Client::call`] for a request of the cluster's administration.
    async fn administer<Req: Serialize, Resp: DeserializeOwned>(
        &self,
        path: &str,
        request: &Req,
    ) -> Result<Resp, ApiError> {
        self.call(path, request).await.map_err(|g| g.last)
    }

    /// Sets `key` to `value`.
    ///
    /// # Errors
    /// See [`WriteError`].
    pub async fn put(&self, key: &[u8], value: &[u8]) -> Result<Written, WriteError> {
        let op = Op::Put {
            key: key.to_vec(),
            value: value.to_vec(),
        };
        self.write(&Command::Write(vec![op])).await
    }

    /// Removes `key`.
    ///
    /// # Errors
    /// See [`WriteError`].
    pub async fn delete(&self, key: &[u8]) -> Result<Written, WriteError> {
        self.write(&Command::Write(vec![Op::Delete { key: key.to_vec() }]))
            .await
    }

    /// The value of `key`, read linearizably.
    ///
    /// # Errors
    /// See [`ReadError`].
    pub async fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>, ReadError> {
        match self.read(&Read::Get { key: key.to_vec() }).await? {
            ReadAnswer::Value(value) => Ok(value),
            _ => Err(ReadError::Failed("a get was answered otherwise".into())),
        }
    }

    /// Up to `limit` entries in `[lower, upper)`, in key order, all held
    /// in memory: for a large range, [`Client::scan_pages`].
    ///
    /// # Errors
    /// See [`ReadError`].
    pub async fn scan(
        &self,
        lower: &[u8],
        upper: Option<&[u8]>,
        limit: usize,
    ) -> Result<Vec<KeyValue>, ReadError> {
        self.scan_pages(lower, upper, limit).collect().await
    }

    /// Up to `limit` entries in `[lower, upper)`, in key order, read page
    /// by page (each at most [`api::MAX_PAGE_BYTES`]), so neither the
    /// nodes nor this client hold more than a page. Each page is read
    /// linearizably, on its own: writes between two pages show in the
    /// later one.
    pub fn scan_pages(&self, lower: &[u8], upper: Option<&[u8]>, limit: usize) -> Pages<'_> {
        self.pages(Read::Scan {
            lower: lower.to_vec(),
            upper: upper.map(<[u8]>::to_vec),
            limit,
        })
    }

    /// Up to `limit` entries whose value is `value` by value index
    /// `index`, in key order, all held in memory: for many, [`Client::find_pages`].
    ///
    /// # Errors
    /// [`ReadError::Invalid`] if there is no such index; see [`ReadError`].
    pub async fn find(
        &self,
        index: &str,
        value: &[u8],
        limit: usize,
    ) -> Result<Vec<KeyValue>, ReadError> {
        self.find_pages(index, value, limit).collect().await
    }

    /// Up to `limit` entries whose value is `value` by value index
    /// `index`, in key order, read page by page as [`Client::scan_pages`]
    /// reads a range: each page linearizably, on its own.
    pub fn find_pages(&self, index: &str, value: &[u8], limit: usize) -> Pages<'_> {
        self.pages(Read::Find {
            index: index.to_string(),
            value: value.to_vec(),
            limit,
            from: Vec::new(),
        })
    }

    fn pages(&self, mut read: Read) -> Pages<'_> {
        let has_room = cursor(&mut read).is_some_and(|(_, limit)| *limit > 0);
        Pages {
            client: self,
            read: has_room.then_some(read),
        }
    }

    /// What the node knows of the cluster (not retried).
    ///
    /// # Errors
    /// [`ApiError::Unavailable`] if the node cannot be reached.
    pub async fn status(&self) -> Result<Status, ApiError> {
        let unavailable = |e: reqwest::Error| ApiError::Unavailable(format!("{}: {e}", self.addr));
        let get = self
            .http
            .get(format!("http://{}{}", self.addr, api::STATUS));
        let response = auth::authorize(get, self.token.as_ref())
            .timeout(ATTEMPT_TIMEOUT)
            .send()
            .await
            .map_err(unavailable)?;
        let status = response.status();
        let bytes = response.bytes().await.map_err(unavailable)?;
        if !status.is_success() {
            return Err(api::status_error(&self.addr, status, &bytes));
        }
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
        self.administer(api::ADD_LEARNER, &member).await
    }

    /// Makes `voters` (members or learners) the voting members.
    ///
    /// # Errors
    /// See [`ApiError`].
    pub async fn change_membership(&self, voters: &BTreeSet<NodeId>) -> Result<(), ApiError> {
        self.administer(api::CHANGE_MEMBERSHIP, voters).await
    }

    /// Defines value index `name` on the JSON field at `pointer` (such as
    /// `/user/name`) on every node, through the log.
    ///
    /// # Errors
    /// [`WriteError::Invalid`] if the engine refuses the definition (a bad
    /// pointer, or the name already used for another field); see
    /// [`WriteError`].
    pub async fn define_index(&self, name: &str, pointer: &str) -> Result<(), WriteError> {
        let command = Command::DefineIndex {
            name: name.to_string(),
            pointer: pointer.to_string(),
        };
        self.index_change(&command).await
    }

    /// Drops value index `name` on every node, through the log.
    ///
    /// # Errors
    /// See [`WriteError`].
    pub async fn drop_index(&self, name: &str) -> Result<(), WriteError> {
        let command = Command::DropIndex {
            name: name.to_string(),
        };
        self.index_change(&command).await
    }

    async fn index_change(&self, command: &Command) -> Result<(), WriteError> {
        match self.write(command).await?.outcome {
            Outcome::Applied => Ok(()),
            Outcome::Rejected { reason } => Err(WriteError::Invalid(reason)),
            other => Err(WriteError::Failed(format!("answered {other:?}"))),
        }
    }

    /// Removes node `id` (a voter or a learner) from the cluster; returns
    /// once the change is committed. The node itself goes on running, cut
    /// out: stop it and delete its directory.
    ///
    /// # Errors
    /// See [`ApiError`]; [`ApiError::Invalid`] if it is not a member, or if
    /// removing it would leave no voter.
    pub async fn remove_node(&self, id: NodeId) -> Result<(), ApiError> {
        self.administer(api::REMOVE_NODE, &id).await
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;
    use crate::codec::decode;

    /// A node that answers the `n`-th request (from 0) to `path` with
    /// `answer(n)`, and counts the requests.
    async fn fake_node<R: axum::response::IntoResponse + Send + 'static>(
        path: &str,
        answer: impl Fn(usize) -> R + Clone + Send + Sync + 'static,
    ) -> (String, Arc<AtomicUsize>) {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        let asked = Arc::new(AtomicUsize::new(0));
        let counted = Arc::clone(&asked);
        let handler = move || {
            let response = answer(counted.fetch_add(1, Ordering::Relaxed));
            async move { response }
        };
        let router = axum::Router::new().route(path, axum::routing::post(handler));
        tokio::spawn(async move { axum::serve(listener, router).await });
        (addr, asked)
    }

    /// A node that answers every read with `error`, and counts the reads.
    async fn failing_node(error: ApiError) -> (String, Arc<AtomicUsize>) {
        fake_node(api::READ, move |_| {
            encode(&Err::<(), _>(error.clone())).unwrap()
        })
        .await
    }

    #[tokio::test]
    async fn a_storage_failure_is_not_retried_and_unavailability_is() {
        let (addr, asked) = failing_node(ApiError::Storage("a damaged table".into())).await;
        let client = Client::new(addr).retry_for(Duration::from_secs(10));
        let answer = client.get(b"k").await;
        assert!(matches!(answer, Err(ReadError::Failed(_))), "{answer:?}");
        assert_eq!(asked.load(Ordering::Relaxed), 1);

        let (addr, asked) = failing_node(ApiError::Stopped("Raft stopped".into())).await;
        let client = Client::new(addr).retry_for(Duration::from_secs(10));
        let answer = client.get(b"k").await;
        assert!(matches!(answer, Err(ReadError::Failed(_))), "{answer:?}");
        assert_eq!(asked.load(Ordering::Relaxed), 1);

        let (addr, asked) = failing_node(ApiError::Unavailable("no quorum".into())).await;
        let client = Client::new(addr).retry_for(RETRY_PAUSE * 3);
        let answer = client.get(b"k").await;
        assert!(
            matches!(answer, Err(ReadError::Unavailable(_))),
            "{answer:?}"
        );
        assert!(asked.load(Ordering::Relaxed) > 1);
    }

    /// A node that answers every write with `error`, then (after the first)
    /// with `later`, counting the writes.
    async fn failing_writes(error: ApiError, later: ApiError) -> (String, Arc<AtomicUsize>) {
        fake_node(api::WRITE, move |n| {
            let error = if n == 0 { error.clone() } else { later.clone() };
            encode(&Err::<(), _>(error)).unwrap()
        })
        .await
    }

    #[tokio::test]
    async fn a_write_gives_up_as_not_applied_only_if_no_attempt_may_have_applied_it() {
        let busy = || ApiError::Refused("busy".into());
        let (addr, asked) = failing_writes(busy(), busy()).await;
        let client = Client::new(addr).retry_for(RETRY_PAUSE * 3);
        let answer = client.put(b"k", b"v").await;
        assert!(
            matches!(answer, Err(WriteError::NotApplied(_))),
            "{answer:?}"
        );
        assert!(asked.load(Ordering::Relaxed) > 1);

        // A first attempt lost after it was sent, then refusals.
        let lost = ApiError::Unavailable("no quorum in time".into());
        let (addr, _) = failing_writes(lost, busy()).await;
        let client = Client::new(addr).retry_for(RETRY_PAUSE * 3);
        let answer = client.put(b"k", b"v").await;
        assert!(matches!(answer, Err(WriteError::Unknown(_))), "{answer:?}");

        let (addr, asked) = failing_writes(ApiError::Invalid("too large".into()), busy()).await;
        let client = Client::new(addr).retry_for(Duration::from_secs(10));
        let answer = client.put(b"k", b"v").await;
        assert!(matches!(answer, Err(WriteError::Invalid(_))), "{answer:?}");
        assert_eq!(asked.load(Ordering::Relaxed), 1);
    }

    #[tokio::test]
    async fn a_request_too_large_for_the_node_is_invalid_and_not_retried() {
        let too_large = |_| axum::http::StatusCode::PAYLOAD_TOO_LARGE;
        let (addr, asked) = fake_node(api::WRITE, too_large).await;
        let client = Client::new(addr).retry_for(Duration::from_secs(10));
        let answer = client.put(b"k", b"v").await;
        assert!(matches!(answer, Err(WriteError::Invalid(_))), "{answer:?}");
        assert_eq!(asked.load(Ordering::Relaxed), 1);
    }

    #[tokio::test]
    async fn a_node_that_cannot_be_reached_refuses_nothing_applied() {
        // A port with no listener: every connection is refused.
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        drop(listener);
        let client = Client::new(addr).retry_for(RETRY_PAUSE * 2);
        let answer = client.put(b"k", b"v").await;
        assert!(
            matches!(answer, Err(WriteError::NotApplied(_))),
            "{answer:?}"
        );
    }

    #[tokio::test]
    async fn a_request_moves_on_to_the_next_seed_when_one_cannot_be_reached() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let down = listener.local_addr().unwrap().to_string();
        drop(listener);
        let written = Written {
            outcome: Outcome::Applied,
            index: 7,
        };
        let (up, asked) = fake_node(api::WRITE, move |_| {
            encode(&Ok::<_, ApiError>(written.clone())).unwrap()
        })
        .await;
        let client = Client::of_cluster([down.clone(), up])
            .unwrap()
            .retry_for(Duration::from_secs(10));
        let answer = client.put(b"k", b"v").await;
        assert!(answer.is_ok(), "{answer:?}");
        assert_eq!(asked.load(Ordering::Relaxed), 1);
        // With the one seed that is down, it gives up.
        let alone = Client::new(down).retry_for(RETRY_PAUSE * 2);
        assert!(alone.put(b"k", b"v").await.is_err());
        assert!(Client::of_cluster(Vec::<String>::new()).is_none());
    }

    /// A node that answers each write with `answer(n, session)`, `n` from
    /// 0, and keeps the sessions of the writes it was sent.
    async fn session_node(
        answer: impl Fn(usize, Session) -> Result<Written, ApiError> + Clone + Send + Sync + 'static,
    ) -> (String, Arc<Mutex<Vec<Session>>>) {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let kept = Arc::clone(&seen);
        let handler = move |body: axum::body::Bytes| {
            let session = decode::<Request>(&body).unwrap().session.unwrap();
            let mut sessions = kept.lock().unwrap();
            sessions.push(session);
            let response = encode(&answer(sessions.len() - 1, session)).unwrap();
            async move { response }
        };
        let router = axum::Router::new().route(api::WRITE, axum::routing::post(handler));
        tokio::spawn(async move { axum::serve(listener, router).await });
        (addr, seen)
    }

    fn written(outcome: Outcome) -> Result<Written, ApiError> {
        Ok(Written { outcome, index: 1 })
    }

    #[tokio::test]
    async fn a_session_unknown_to_the_cluster_is_renewed_and_the_write_sent_again() {
        // As the state machine does: a session opens with a request that
        // says nothing was answered yet; this one forgot (expired) the
        // client's first session after its first request.
        let (addr, seen) = session_node(|n, session| {
            let expired = n > 0 && session.seq > 1 && session.first_unanswered > 1;
            written(if expired && n == 1 {
                Outcome::SessionExpired
            } else {
                Outcome::Applied
            })
        })
        .await;
        let client = Client::new(addr).retry_for(Duration::from_secs(10));
        for _ in 0..3 {
            let answer = client.put(b"k", b"v").await;
            assert_eq!(answer.map(|w| w.outcome), Ok(Outcome::Applied));
        }
        let seen = seen.lock().unwrap().clone();
        let numbers: Vec<_> = seen.iter().map(|s| (s.seq, s.first_unanswered)).collect();
        // The second write, refused as of an unknown session, went again
        // as the first of a new one.
        assert_eq!(numbers, [(1, 1), (2, 2), (1, 1), (2, 2)]);
        assert_eq!(seen[0].id, seen[1].id);
        assert_ne!(seen[1].id, seen[2].id);
        assert_eq!(seen[2].id, seen[3].id);
    }

    #[tokio::test]
    async fn a_session_unknown_after_an_attempt_that_may_have_applied_is_an_unknown_outcome() {
        let (addr, seen) = session_node(|n, _| match n {
            0 => Err(ApiError::Unavailable("no quorum in time".into())),
            _ => written(Outcome::SessionExpired),
        })
        .await;
        let client = Client::new(addr).retry_for(Duration::from_secs(10));
        let answer = client.put(b"k", b"v").await;
        assert!(matches!(answer, Err(WriteError::Unknown(_))), "{answer:?}");
        // Not sent again in a new session: the first attempt may have been
        // applied.
        let seen = seen.lock().unwrap().clone();
        assert_eq!(seen.len(), 2);
        assert_eq!(seen[0], seen[1]);
    }

    #[test]
    fn engine_errors_are_told_apart_by_whether_a_retry_can_help() {
        let invalid = siftdb::Error::InvalidArgument("a key too long".into());
        assert!(matches!(ApiError::from(invalid), ApiError::Invalid(_)));
        let damaged = siftdb::Error::Io {
            path: "table-1.sst".into(),
            source: std::io::Error::other("bad sector"),
        };
        assert!(matches!(ApiError::from(damaged), ApiError::Storage(_)));
        let stalled = siftdb::Error::Background("a flush failed".into());
        assert!(matches!(ApiError::from(stalled), ApiError::Unavailable(_)));
    }

    #[test]
    fn requests_are_numbered_and_carry_the_first_unanswered() {
        let session = ClientSession::new();
        let first = session.begin();
        let second = session.begin();
        assert_eq!((first.seq, first.first_unanswered), (1, 1));
        assert_eq!((second.seq, second.first_unanswered), (2, 1));
        session.end(first);
        let third = session.begin();
        assert_eq!((third.seq, third.first_unanswered), (3, 2));
        session.end(second);
        session.end(third);
        assert_eq!(session.begin().first_unanswered, 4);
        assert_eq!(first.id, third.id);
        assert_ne!(ClientSession::new().numbers().id, session.numbers().id);
    }

    #[test]
    fn a_renewed_session_has_a_new_id_and_numbers_from_1() {
        let session = ClientSession::new();
        let old = session.begin();
        let concurrent = session.begin();
        session.renew(old.id);
        let new = session.begin();
        assert_ne!(new.id, old.id);
        assert_eq!((new.seq, new.first_unanswered), (1, 1));
        let second = session.begin();
        // A concurrent request of the old session renews nothing more, and
        // its end does not end the new session's request of its number.
        session.renew(concurrent.id);
        session.end(concurrent);
        session.end(new);
        let next = session.begin();
        assert_eq!(
            (next.id, next.seq, next.first_unanswered),
            (new.id, 3, second.seq)
        );
    }
}
