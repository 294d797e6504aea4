//! A cluster's token: a node started with one refuses every request
//! without it, or with another, but its health check; clients and peers
//! that send it are served, and a cluster of nodes that share it forms and
//! replicates.

#![expect(
    clippy::unwrap_used,
    reason = "test helpers fail the test on any error, like the #[test] fns clippy already exempts"
)]

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use sift_raft::api::ApiError;
use sift_raft::{Client, Node, NodeOptions, ReadError, Token, WriteError};

const PATIENCE: Duration = Duration::from_secs(30);

fn token(secret: &str) -> Token {
    Token::new(secret).unwrap()
}

async fn start(id: u64, dir: &std::path::Path) -> Node {
    let mut options =
        NodeOptions::new(id, "127.0.0.1:0".parse().unwrap(), dir.join(id.to_string()))
            .heartbeat(50);
    options.token = Some(token("s3cret"));
    Node::start(options).await.unwrap()
}

/// Every route that needs the token, with its method.
const ROUTES: [(&str, &str); 10] = [
    ("POST", "/api/write"),
    ("POST", "/api/read"),
    ("POST", "/cluster/init"),
    ("POST", "/cluster/add-learner"),
    ("POST", "/cluster/change-membership"),
    ("POST", "/cluster/remove-node"),
    ("GET", "/cluster/status"),
    ("POST", "/raft/append"),
    ("POST", "/raft/vote"),
    ("POST", "/raft/snapshot"),
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_refuses_every_route_without_its_token_but_the_health_check() {
    let dir = tempfile::TempDir::new().unwrap();
    let node = start(1, dir.path()).await;
    let http = reqwest::Client::new();
    let url = |path: &str| format!("http://{}{path}", node.addr());
    for (method, path) in ROUTES {
        let request = |bearer: Option<&str>| {
            let request = http.request(method.parse().unwrap(), url(path));
            match bearer {
                Some(bearer) => request.bearer_auth(bearer),
                None => request,
            }
        };
        let without = request(None).send().await.unwrap();
        assert_eq!(without.status(), 401, "{method} {path}");
        assert!(without.text().await.unwrap().contains("requires a token"));
        let wrong = request(Some("guess")).send().await.unwrap();
        assert_eq!(wrong.status(), 401, "{method} {path}");
        assert!(wrong.text().await.unwrap().contains("not this node's"));
        // A prefix of the token is not the token.
        let prefix = request(Some("s3cre")).send().await.unwrap();
        assert_eq!(prefix.status(), 401, "{method} {path}");
        // With it, the request is served (an empty body is refused as
        // such; the status answers).
        let with = request(Some("s3cret")).send().await.unwrap();
        assert_ne!(with.status(), 401, "{method} {path}");
    }
    let health = http.get(url("/health")).send().await.unwrap();
    assert_eq!(health.status(), 200);
    assert_eq!(health.text().await.unwrap(), "ok");

    // The client says so at once, without retrying.
    let addr = node.addr().to_string();
    let started = Instant::now();
    let without = Client::new(addr.clone()).retry_for(Duration::from_secs(10));
    let put = without.put(b"k", b"v").await;
    assert!(matches!(put, Err(WriteError::Unauthorized(_))), "{put:?}");
    let get = without.get(b"k").await;
    assert!(matches!(get, Err(ReadError::Unauthorized(_))), "{get:?}");
    let status = without.status().await;
    assert!(
        matches!(status, Err(ApiError::Unauthorized(_))),
        "{status:?}"
    );
    let wrong = without.clone().with_token(token("guess"));
    let members = BTreeMap::from([(1, addr.clone())]);
    let init = wrong.init(&members).await;
    assert!(matches!(init, Err(ApiError::Unauthorized(_))), "{init:?}");
    assert!(started.elapsed() < Duration::from_secs(5));

    // With the token, everything works.
    let client = Client::new(addr).with_token(token("s3cret"));
    client.init(&members).await.unwrap();
    client.put(b"k", b"v").await.unwrap();
    assert_eq!(client.get(b"k").await.unwrap(), Some(b"v".to_vec()));
    assert_eq!(client.status().await.unwrap().id, 1);
    node.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cluster_that_shares_a_token_forms_replicates_and_forwards() {
    let dir = tempfile::TempDir::new().unwrap();
    let mut nodes = Vec::new();
    for id in 1..=3 {
        nodes.push(start(id, dir.path()).await);
    }
    let members: BTreeMap<u64, String> = nodes
        .iter()
        .zip(1..)
        .map(|(node, id)| (id, node.addr().to_string()))
        .collect();
    let client = |i: usize| Client::new(nodes[i].addr().to_string()).with_token(token("s3cret"));
    client(0).init(&members).await.unwrap();
    // Through every node: a follower forwards to the leader, with the
    // token.
    for (i, key) in [b"a", b"b", b"c"].iter().enumerate() {
        client(i).put(*key, b"v").await.unwrap();
    }
    let started = Instant::now();
    for node in &nodes {
        while node.data().get(b"c").unwrap().is_none() {
            assert!(started.elapsed() < PATIENCE, "not replicated");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert_eq!(node.data().get(b"a").unwrap(), Some(b"v".to_vec()));
    }
    for node in nodes {
        node.shutdown().await;
    }
}
