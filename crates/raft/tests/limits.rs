//! A node's limits on client requests: a client that stalls its upload
//! holds its place only until the deadline, and requests past the most
//! served at once are refused at once rather than queued.

use std::time::Duration;

use sift_raft::ReadError;
use sift_raft::{Client, Node, NodeOptions};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stalled_upload_holds_the_only_permit_until_the_deadline() {
    let dir = tempfile::TempDir::new().unwrap();
    let mut options = NodeOptions::new(1, "127.0.0.1:0".parse().unwrap(), dir.path());
    options.max_client_requests = 1;
    options.client_request_timeout = Duration::from_millis(500);
    let node = Node::start(options).await.unwrap();
    let addr = node.addr();

    // Headers and 10 of the 100 bytes promised, then nothing.
    let mut stalled = tokio::net::TcpStream::connect(addr).await.unwrap();
    let head = "POST /api/write HTTP/1.1\r\nhost: node\r\ncontent-length: 100\r\n\r\n";
    stalled.write_all(head.as_bytes()).await.unwrap();
    stalled.write_all(&[0; 10]).await.unwrap();
    tokio::time::sleep(Duration::from_millis(100)).await;

    let once = Client::new(addr.to_string()).retry_for(Duration::ZERO);
    match once.get(b"k").await {
        Err(ReadError::Unavailable(why)) => {
            assert!(why.contains("refused: the node is busy"), "{why}")
        }
        other => panic!("expected a busy node, got {other:?}"),
    }

    // The stalled request is answered at its deadline, and frees its place.
    let mut answer = Vec::new();
    let read = stalled.read_to_end(&mut answer);
    tokio::time::timeout(Duration::from_secs(5), read)
        .await
        .expect("the stalled request was never answered")
        .unwrap();
    let answer = String::from_utf8_lossy(&answer);
    assert!(answer.contains("longer than"), "{answer}");
    match once.get(b"k").await {
        // Not a member of any cluster yet: no leader to ask.
        Err(ReadError::Unavailable(why)) if why.contains("not the leader") => {}
        other => panic!("expected to be admitted, got {other:?}"),
    }
    node.shutdown().await;
}
