//! `sift serve`: one node of a replicated cluster, until SIGINT or SIGTERM.

use std::path::Path;

use sift_raft::{Node, NodeOptions};
use siftdb::{Extractor, IndexDef};

use super::import::pointer;
use super::remote::{failure, runtime};
use crate::cli::ServeArgs;
use crate::error::{Failure, Outcome};

/// Starts the node with `--db` as its directory and serves until told to
/// stop.
pub fn run(db: &Path, args: &ServeArgs) -> Outcome {
    if args.id == 0 {
        return Err(Failure::usage("--id must be a positive integer"));
    }
    if args.heartbeat_ms == 0 {
        return Err(Failure::usage("--heartbeat-ms must be a positive integer"));
    }
    if args.snapshot_every == Some(0) {
        return Err(Failure::usage(
            "--snapshot-every must be a positive integer",
        ));
    }
    let value_indexes = args
        .indexes
        .iter()
        .map(|spec| {
            let (name, field) = spec
                .split_once('=')
                .ok_or_else(|| Failure::usage(format!("--index {spec:?}: expected NAME=FIELD")))?;
            Ok(IndexDef::new(name, Extractor::json_field(pointer(field))))
        })
        .collect::<Outcome<Vec<_>>>()?;
    runtime()?.block_on(async {
        let mut options = NodeOptions::new(args.id, args.listen, db).heartbeat(args.heartbeat_ms);
        options.value_indexes = value_indexes;
        if let Some(entries) = args.snapshot_every {
            options = options.snapshot_every(entries);
        }
        let node = Node::start(options).await.map_err(failure)?;
        eprintln!(
            "sift: node {} serving on {} (data in {})",
            args.id,
            node.addr(),
            db.display()
        );
        stopped().await;
        node.shutdown().await;
        Ok(())
    })
}

/// Waits for SIGINT (Ctrl-C) or SIGTERM.
async fn stopped() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        if let Ok(mut term) = signal(SignalKind::terminate()) {
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = term.recv() => {}
            }
            return;
        }
    }
    let _ = tokio::signal::ctrl_c().await;
}
