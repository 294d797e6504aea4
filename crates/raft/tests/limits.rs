//! A node's limits (`Limits`): each kind of request has its own permits
//! and deadline, a client that stalls holds its place only until the
//! deadline, request bodies in flight are bounded, connections too, a
//! connection that dawdles over its headers is closed, and a command of
//! too many operations is refused.

#![expect(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "test helpers fail the test on any error, like the #[test] fns clippy already exempts"
)]

use std::time::{Duration, Instant};

use sift_raft::api::ApiError;
use sift_raft::{
    Client, Command, MAX_OPS, MAX_REQUEST_BYTES, Node, NodeOptions, Op, ReadError, WriteError,
};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

async fn start(configure: impl FnOnce(&mut NodeOptions)) -> (Node, tempfile::TempDir) {
    let dir = tempfile::TempDir::new().unwrap();
    let mut options = NodeOptions::new(1, "127.0.0.1:0".parse().unwrap(), dir.path()).heartbeat(50);
    configure(&mut options);
    (Node::start(options).await.unwrap(), dir)
}

/// A connection that sent `path`'s headers, promising a body of `length`
/// bytes, and 10 of them; then nothing.
async fn stalled(node: &Node, path: &str, length: usize) -> TcpStream {
    let mut stream = TcpStream::connect(node.addr()).await.unwrap();
    let head = format!("POST {path} HTTP/1.1\r\nhost: node\r\ncontent-length: {length}\r\n\r\n");
    stream.write_all(head.as_bytes()).await.unwrap();
    stream.write_all(&[0; 10]).await.unwrap();
    // Let the node take it in before what the test sends next.
    tokio::time::sleep(Duration::from_millis(100)).await;
    stream
}

/// What the node answers on `stream` before it closes it (within 5 s).
async fn answer(mut stream: TcpStream) -> String {
    let mut answer = Vec::new();
    tokio::time::timeout(Duration::from_secs(5), stream.read_to_end(&mut answer))
        .await
        .expect("the node never answered")
        .unwrap();
    String::from_utf8_lossy(&answer).into_owned()
}

/// The answer to a request of `path` with an empty body, on a connection
/// of its own.
async fn post(node: &Node, path: &str) -> String {
    let mut stream = TcpStream::connect(node.addr()).await.unwrap();
    let head = format!(
        "POST {path} HTTP/1.1\r\nhost: node\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
    );
    stream.write_all(head.as_bytes()).await.unwrap();
    answer(stream).await
}

fn once(node: &Node) -> Client {
    Client::new(node.addr().to_string()).retry_for(Duration::ZERO)
}

/// Not a member of any cluster yet: admitted, but no leader to ask.
fn admitted(answer: Result<Option<Vec<u8>>, ReadError>) {
    match answer {
        Err(ReadError::Unavailable(why)) if why.contains("not the leader") => {}
        other => panic!("expected to be admitted, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stalled_upload_holds_the_only_permit_until_the_deadline() {
    let (node, _dir) = start(|o| {
        o.limits.max_client_requests = 1;
        o.limits.client_request_timeout = Duration::from_millis(500);
    })
    .await;
    let stalled = stalled(&node, "/api/write", 100).await;
    match once(&node).get(b"k").await {
        Err(ReadError::Unavailable(why)) => {
            assert!(
                why.contains("refused") && why.contains("too many client"),
                "{why}"
            )
        }
        other => panic!("expected a busy node, got {other:?}"),
    }
    // The stalled request is answered at its deadline, and frees its place.
    let answer = answer(stalled).await;
    assert!(
        answer.contains("504") && answer.contains("longer than"),
        "{answer}"
    );
    admitted(once(&node).get(b"k").await);
    node.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn peer_requests_have_their_own_permits_and_a_deadline() {
    // Heartbeat 50 ms: elections within 450 ms, so an append's deadline is
    // 900 ms.
    let (node, _dir) = start(|o| o.limits.max_peer_requests = 1).await;
    let started = Instant::now();
    let stalled = stalled(&node, "/raft/append", 100).await;
    let vote = post(&node, "/raft/vote").await;
    assert!(
        vote.contains("503") && vote.contains("too many peer"),
        "{vote}"
    );
    // Clients have permits of their own.
    admitted(once(&node).get(b"k").await);
    let answer = answer(stalled).await;
    assert!(answer.contains("504"), "{answer}");
    assert!(started.elapsed() < Duration::from_secs(3));
    // Its place is free again: the vote is served (and its empty body
    // refused as such).
    let vote = post(&node, "/raft/vote").await;
    assert!(vote.contains("400"), "{vote}");
    node.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn administration_has_its_own_permits_and_a_deadline() {
    let (node, _dir) = start(|o| {
        o.limits.max_admin_requests = 1;
        o.limits.admin_request_timeout = Duration::from_millis(500);
    })
    .await;
    let stalled = stalled(&node, "/cluster/init", 100).await;
    match once(&node).status().await {
        Err(ApiError::Refused(why)) => assert!(why.contains("too many administration"), "{why}"),
        other => panic!("expected a busy node, got {other:?}"),
    }
    admitted(once(&node).get(b"k").await);
    assert!(answer(stalled).await.contains("504"));
    assert_eq!(once(&node).status().await.unwrap().id, 1);
    node.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn request_bytes_in_flight_are_bounded() {
    let (node, _dir) = start(|o| {
        o.limits.max_body_bytes_in_flight = MAX_REQUEST_BYTES;
        o.limits.client_request_timeout = Duration::from_millis(500);
    })
    .await;
    // One upload that promises nearly all the room there is.
    let stalled = stalled(&node, "/api/write", MAX_REQUEST_BYTES - (64 << 10)).await;
    let put = once(&node).put(b"k", &vec![0; 1 << 20]).await;
    match put {
        Err(WriteError::NotApplied(why)) => assert!(why.contains("request bytes"), "{why}"),
        other => panic!("expected no room, got {other:?}"),
    }
    // A small read still fits.
    admitted(once(&node).get(b"k").await);
    assert!(answer(stalled).await.contains("504"));
    match once(&node).put(b"k", &vec![0; 1 << 20]).await {
        Err(WriteError::NotApplied(why)) => assert!(why.contains("not the leader"), "{why}"),
        other => panic!("expected to be admitted, got {other:?}"),
    }
    // A node with less room than one largest request could never serve it.
    let dir = tempfile::TempDir::new().unwrap();
    let mut options = NodeOptions::new(2, "127.0.0.1:0".parse().unwrap(), dir.path());
    options.limits.max_body_bytes_in_flight = MAX_REQUEST_BYTES - 1;
    let refused = Node::start(options.clone()).await.unwrap_err();
    assert!(
        refused.to_string().contains("max_body_bytes_in_flight"),
        "{refused}"
    );
    // Nor one that closes every connection at once.
    options.limits = sift_raft::Limits::default();
    options.limits.header_read_timeout = Duration::ZERO;
    let refused = Node::start(options).await.unwrap_err();
    assert!(
        refused.to_string().contains("header_read_timeout"),
        "{refused}"
    );
    node.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_past_the_limit_wait_until_one_closes() {
    let (node, _dir) = start(|o| o.limits.max_connections = 1).await;
    let request = b"GET /health HTTP/1.1\r\nhost: node\r\n\r\n";
    let mut first = TcpStream::connect(node.addr()).await.unwrap();
    first.write_all(request).await.unwrap();
    let mut buf = [0; 1024];
    let n = first.read(&mut buf).await.unwrap();
    assert!(String::from_utf8_lossy(&buf[..n]).ends_with("ok"));
    // The first stays open (kept alive): the second is not served...
    let mut second = TcpStream::connect(node.addr()).await.unwrap();
    second.write_all(request).await.unwrap();
    let waited = tokio::time::timeout(Duration::from_millis(500), second.read(&mut buf)).await;
    assert!(waited.is_err(), "served past the limit");
    // ...until the first closes.
    drop(first);
    let n = tokio::time::timeout(Duration::from_secs(5), second.read(&mut buf))
        .await
        .expect("never served")
        .unwrap();
    assert!(String::from_utf8_lossy(&buf[..n]).ends_with("ok"));
    node.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_sends_its_headers_byte_by_byte_is_cut_off() {
    let timeout = Duration::from_millis(500);
    let (node, _dir) = start(|o| o.limits.header_read_timeout = timeout).await;
    let mut slow = TcpStream::connect(node.addr()).await.unwrap();
    let started = Instant::now();
    let mut closed = false;
    // A header that never ends, a byte every 50 ms, for up to 5 s.
    for byte in b"GET /health HTTP/1.1\r\nx-slow: "
        .iter()
        .chain(&[b'a'; 100])
    {
        if slow.write_all(&[*byte]).await.is_err() {
            closed = true;
            break;
        }
        let mut buf = [0; 64];
        match tokio::time::timeout(Duration::from_millis(50), slow.read(&mut buf)).await {
            Ok(Ok(0) | Err(_)) => {
                closed = true;
                break;
            }
            Ok(Ok(_)) => panic!("answered before its headers ended"),
            Err(_) => {}
        }
    }
    let elapsed = started.elapsed();
    assert!(closed, "still open after {elapsed:?}");
    assert!(elapsed >= timeout && elapsed < timeout * 4, "{elapsed:?}");
    // An idle connection is closed alike, giving its place back.
    let mut idle = TcpStream::connect(node.addr()).await.unwrap();
    let mut buf = [0; 64];
    let read = tokio::time::timeout(Duration::from_secs(2), idle.read(&mut buf)).await;
    assert!(matches!(read, Ok(Ok(0) | Err(_))), "{read:?}");
    node.shutdown().await;
}

fn deletes(n: usize) -> Vec<Op> {
    (0..n)
        .map(|i| Op::Delete {
            key: i.to_be_bytes().to_vec(),
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_command_of_too_many_operations_is_refused_as_invalid() {
    let (node, _dir) = start(|_| {}).await;
    let client = Client::new(node.addr().to_string());
    let members = [(1, node.addr().to_string())].into();
    client.init(&members).await.unwrap();
    let written = client.write(&Command::Write(deletes(MAX_OPS))).await;
    assert!(written.is_ok(), "{written:?}");
    let started = Instant::now();
    match client.write(&Command::Write(deletes(MAX_OPS + 1))).await {
        Err(WriteError::Invalid(why)) => assert!(why.contains("operations"), "{why}"),
        other => panic!("expected an invalid write, got {other:?}"),
    }
    // Not retried.
    assert!(started.elapsed() < Duration::from_secs(5));
    // A transaction's checks count too.
    let checks = (0..MAX_OPS)
        .map(|i| sift_raft::Check {
            key: i.to_be_bytes().to_vec(),
            value: None,
        })
        .collect();
    let txn = Command::Txn {
        checks,
        ops: deletes(1),
    };
    assert!(matches!(
        client.write(&txn).await,
        Err(WriteError::Invalid(_))
    ));
    node.shutdown().await;
}
